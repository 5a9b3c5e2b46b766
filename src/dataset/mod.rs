//! Logical datasets and their stored formats (`tsbsctl data ...`; benchmark.md §1).
//!
//! A logical dataset is the six-field [`DatasetSpec`]; its id is derived from the spec exactly
//! as the reference derives it (or given with `--dataset-id`). It lives in
//! `<dataset-root>/<id>/dataset.json`; each serialization in `formats/<format>/` holds one
//! stored file (`data`, `data.gz` or `data.xz`), its `manifest.json` and `generate.log`.
//!
//! Generation is one pass: the generator's stdout flows through tsbsctl, which counts lines,
//! hashes the uncompressed stream, optionally compresses, hashes the stored bytes and writes a
//! temp file beside the target, then publishes by rename and writes the manifest. Reuse checks
//! the manifest, the size and a recorded fingerprint (size, mtime, inode) without reading the
//! data; a changed fingerprint triggers a full verify first.
//!
//! API for the benchmark phases:
//! * [`Dataset::resolve`] (no writes) / [`Dataset::prepare`] (writes `dataset.json` if new) /
//!   [`Dataset::open`] (must exist);
//! * [`ensure_generated`] → [`StoredFormat`] (path, compression, rows, checksums, `reused`);
//!   [`StoredFormat::open_uncompressed`] streams the line protocol whatever the compression;
//! * [`verify`] recomputes every checksum.

use std::collections::BTreeMap;
use std::fs::{self, File};
use std::io::{self, BufRead, BufReader, Read, Write};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use serde::{Deserialize, Serialize};
use serde_json::{json, Value};

use crate::environment::TsbsEnv;
use crate::error::{Error, Result};
use crate::hash::Sha256;
use crate::lock::{self, LockOptions};
use crate::manifest::{self, Manifest};
use crate::output::{Progress, Reporter, Unit};
use crate::paths::Root;

/// How long a second process waits for another one generating the same variant.
const GENERATION_WAIT: Duration = Duration::from_secs(24 * 3600);
/// Size of one pipeline buffer; a handful are in flight, so memory stays flat.
const CHUNK: usize = 1 << 20;
/// Buffers in flight between the reader and the writer.
const IN_FLIGHT: usize = 6;

// ---------------------------------------------------------------------------------------------
// Spec, profiles and ids

/// The workload profiles (benchmark.md §1.1, §2.2).
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Profile {
    Manual,
    Smoke,
}

impl Profile {
    pub fn as_str(self) -> &'static str {
        match self {
            Profile::Manual => "manual",
            Profile::Smoke => "smoke",
        }
    }

    /// The profile's dataset spec.
    pub fn spec(self) -> DatasetSpec {
        let (end, scale) = match self {
            Profile::Manual => ("2023-06-14T00:00:00Z", 4000),
            Profile::Smoke => ("2023-06-12T00:00:00Z", 10),
        };
        DatasetSpec {
            use_case: "cpu-only".into(),
            start: "2023-06-11T00:00:00Z".into(),
            end: end.into(),
            scale,
            seed: 123,
            log_interval: "10s".into(),
        }
    }
}

/// The six fields that define a logical dataset (benchmark.md §1.1). The serialization format
/// is deliberately not part of it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct DatasetSpec {
    pub use_case: String,
    pub start: String,
    pub end: String,
    pub scale: u64,
    pub seed: i64,
    pub log_interval: String,
}

impl DatasetSpec {
    pub fn to_value(&self) -> Value {
        serde_json::to_value(self).expect("a spec serializes")
    }

    /// The automatic id: `<use-case slug>-s<scale>-<12 hex of the spec digest>` (§1.2).
    pub fn auto_id(&self) -> String {
        let digest = crate::canonical::spec_digest(&self.to_value());
        let mut slug = String::new();
        for c in self.use_case.to_lowercase().chars() {
            if c.is_ascii_lowercase() || c.is_ascii_digit() {
                slug.push(c);
            } else if !slug.ends_with('-') {
                slug.push('-');
            }
        }
        let slug = slug.trim_matches('-');
        let slug = if slug.is_empty() { "data" } else { slug };
        format!("{slug}-s{}-{}", self.scale, &digest[..12])
    }

    /// Checks what TSBS would otherwise misread silently (exit 2).
    pub fn validate(&self) -> Result<()> {
        if self.use_case.trim().is_empty() {
            return Err(Error::invalid("--use-case must not be empty")
                .with_hint("use cpu-only (the use case the benchmarks load)"));
        }
        if self.scale == 0 {
            return Err(
                Error::invalid("--scale must be positive").with_hint("give a host count ≥ 1")
            );
        }
        if self.seed == 0 {
            return Err(Error::invalid(
                "--seed 0 asks TSBS for a time-based seed, which makes the dataset unreproducible",
            )
            .with_hint("give a non-zero seed (the profiles use 123)"));
        }
        let start = parse_rfc3339(&self.start, "--start")?;
        let end = parse_rfc3339(&self.end, "--end")?;
        if end <= start {
            return Err(Error::invalid(format!(
                "--end {} is not after --start {}",
                self.end, self.start
            ))
            .with_hint("give an end time later than the start time"));
        }
        match parse_go_duration(&self.log_interval) {
            Some(d) if d > 0 => {}
            _ => {
                return Err(Error::invalid(format!(
                    "--log-interval {:?} is not a positive Go duration",
                    self.log_interval
                ))
                .with_hint("use a duration such as 10s, 1m or 1h30m"))
            }
        }
        Ok(())
    }

    /// The same spec with its one canonical spelling: timestamps in UTC with `Z` and no
    /// redundant fraction, the interval in its shortest unit form. Equal data then gets one
    /// id (trial-run #29); a canonically spelled spec is returned unchanged. Invalid fields
    /// are left as they are (validation reports them).
    pub fn canonical(&self) -> DatasetSpec {
        let mut c = self.clone();
        if let Some(n) = crate::gotime::parse_rfc3339(&c.start) {
            c.start = crate::gotime::format_rfc3339(n);
        }
        if let Some(n) = crate::gotime::parse_rfc3339(&c.end) {
            c.end = crate::gotime::format_rfc3339(n);
        }
        if let Some(n) = parse_go_duration(&c.log_interval).filter(|n| *n > 0) {
            c.log_interval = crate::gotime::format_duration(n);
        }
        c
    }

    /// floor((end - start) / interval) (the number of timestamps TSBS generates).
    pub fn intervals(&self) -> Result<u64> {
        let start = parse_rfc3339(&self.start, "--start")?;
        let end = parse_rfc3339(&self.end, "--end")?;
        let step = parse_go_duration(&self.log_interval)
            .filter(|d| *d > 0)
            .ok_or_else(|| {
                Error::invalid(format!("--log-interval {:?} is invalid", self.log_interval))
            })?;
        Ok(((end - start).max(0) / step) as u64)
    }

    /// Rows TSBS writes for this spec, when the use case has a fixed shape (one row per host
    /// and timestamp, ten metrics per row for cpu-only).
    pub fn expected_rows(&self) -> Result<Option<(u64, u64)>> {
        if self.use_case != "cpu-only" {
            return Ok(None);
        }
        let rows = self.scale.checked_mul(self.intervals()?).ok_or_else(|| {
            Error::invalid("scale × intervals overflows")
                .with_hint("use a smaller --scale or time range")
        })?;
        Ok(Some((rows, 10)))
    }

    /// `field=value` differences against `other`, for conflict messages.
    pub fn differences(&self, other: &DatasetSpec) -> Vec<String> {
        let a = self.to_value();
        let b = other.to_value();
        let mut out = Vec::new();
        for key in ["use_case", "start", "end", "scale", "seed", "log_interval"] {
            if a[key] != b[key] {
                out.push(format!("{key}: stored {} vs requested {}", a[key], b[key]));
            }
        }
        out
    }
}

/// RFC 3339 as Go's `time.RFC3339` reads it, to unix nanoseconds. The real generator prints an
/// error and exits 0 on anything else, so this refuses it first (see [`crate::gotime`]).
pub fn parse_rfc3339(s: &str, flag: &str) -> Result<i128> {
    crate::gotime::parse_rfc3339(s).ok_or_else(|| {
        Error::invalid(format!(
            "{flag} {s:?} is not an RFC 3339 timestamp as TSBS (Go) reads it: \
             YYYY-MM-DDThh:mm:ss with an upper-case T, seconds 00-59, then Z or ±hh:mm"
        ))
        .with_hint("use a timestamp such as 2023-06-11T00:00:00Z")
    })
}

/// Go's `time.ParseDuration`, in nanoseconds.
pub fn parse_go_duration(s: &str) -> Option<i128> {
    let (neg, mut rest) = match s.strip_prefix('-') {
        Some(r) => (true, r),
        None => (false, s.strip_prefix('+').unwrap_or(s)),
    };
    if rest == "0" {
        return Some(0);
    }
    if rest.is_empty() {
        return None;
    }
    let mut total: i128 = 0;
    while !rest.is_empty() {
        let end = rest
            .find(|c: char| !(c.is_ascii_digit() || c == '.'))
            .unwrap_or(rest.len());
        let num = &rest[..end];
        if num.is_empty() || num == "." || num.matches('.').count() > 1 {
            return None;
        }
        rest = &rest[end..];
        let uend = rest
            .find(|c: char| c.is_ascii_digit() || c == '.')
            .unwrap_or(rest.len());
        let unit: i128 = match &rest[..uend] {
            "ns" => 1,
            "us" | "µs" | "μs" => 1_000,
            "ms" => 1_000_000,
            "s" => 1_000_000_000,
            "m" => 60_000_000_000,
            "h" => 3_600_000_000_000,
            _ => return None,
        };
        rest = &rest[uend..];
        let (int, frac) = num.split_once('.').unwrap_or((num, ""));
        let int: i128 = if int.is_empty() { 0 } else { int.parse().ok()? };
        let mut value = int.checked_mul(unit)?;
        let mut scale = unit;
        for d in frac.bytes() {
            scale /= 10;
            value += (d - b'0') as i128 * scale;
        }
        total = total.checked_add(value)?;
    }
    Some(if neg { -total } else { total })
}

/// Explicit spec flags (`--use-case --start --end --scale --seed --log-interval`) and the
/// profile; `None` means "not given".
#[derive(Debug, Clone, Default)]
pub struct SpecOverrides {
    pub profile: Option<Profile>,
    pub use_case: Option<String>,
    pub start: Option<String>,
    pub end: Option<String>,
    pub scale: Option<i64>,
    pub seed: Option<i64>,
    pub log_interval: Option<String>,
}

impl SpecOverrides {
    /// Applies the explicit flags on top of `base`.
    pub fn apply(&self, mut base: DatasetSpec) -> Result<DatasetSpec> {
        if let Some(v) = &self.use_case {
            base.use_case = v.clone();
        }
        if let Some(v) = &self.start {
            base.start = v.clone();
        }
        if let Some(v) = &self.end {
            base.end = v.clone();
        }
        if let Some(v) = self.scale {
            if v <= 0 {
                return Err(
                    Error::invalid("--scale must be positive").with_hint("give a host count ≥ 1")
                );
            }
            base.scale = v as u64;
        }
        if let Some(v) = self.seed {
            base.seed = v;
        }
        if let Some(v) = &self.log_interval {
            base.log_interval = v.clone();
        }
        Ok(base)
    }

    /// True when any spec field (or the profile) was given.
    pub fn any(&self) -> bool {
        self.profile.is_some()
            || self.use_case.is_some()
            || self.start.is_some()
            || self.end.is_some()
            || self.scale.is_some()
            || self.seed.is_some()
            || self.log_interval.is_some()
    }
}

// ---------------------------------------------------------------------------------------------
// Logical datasets

/// `dataset.json`.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct DatasetManifest {
    pub dataset_id: String,
    pub created_at: String,
    pub spec: DatasetSpec,
    /// The tsbsctl version that created it.
    #[serde(default)]
    pub created_by: String,
}

impl Manifest for DatasetManifest {
    const KIND: &'static str = "dataset";
}

/// A resolved logical dataset.
#[derive(Debug, Clone)]
pub struct Dataset {
    pub id: String,
    pub dir: PathBuf,
    pub spec: DatasetSpec,
    /// `dataset.json` existed when this was resolved.
    pub stored: bool,
    /// From `dataset.json` when stored.
    pub created_at: Option<String>,
}

impl Dataset {
    /// Resolves the dataset a command asks for, without writing anything.
    ///
    /// With `id` naming an existing dataset, its stored spec is the base (unless `--profile`
    /// is given) and any explicit flag that disagrees with it is invalid input naming the
    /// difference. Otherwise the spec is the profile (default manual) plus the flags, and the
    /// id is `id` or the automatic id.
    pub fn resolve(root: &Root, id: Option<&str>, o: &SpecOverrides) -> Result<Dataset> {
        if let Some(id) = id {
            crate::ids::validate_id("--dataset-id", id)?;
            let dir = root.datasets().join(id);
            if let Some(stored) = read_dataset_json(&dir)? {
                let base = match o.profile {
                    Some(p) => p.spec(),
                    None => stored.spec.clone(),
                };
                let requested = o.apply(base)?;
                // Spelling differences are no conflict: compare what the data will be.
                if requested.canonical() != stored.spec.canonical() {
                    let diff = stored.spec.differences(&requested).join("; ");
                    return Err(Error::invalid(format!(
                        "dataset {id} was created with other settings ({diff})"
                    ))
                    .with_hint(format!(
                        "drop the conflicting flags to use dataset {id} as stored, or choose another --dataset-id"
                    )));
                }
                return Ok(Dataset {
                    id: id.to_string(),
                    dir,
                    spec: stored.spec,
                    stored: true,
                    created_at: Some(stored.created_at),
                });
            }
            let spec = o.apply(o.profile.unwrap_or(Profile::Manual).spec())?;
            spec.validate()?;
            let spec = spec.canonical();
            return Ok(Dataset {
                id: id.to_string(),
                dir,
                spec,
                stored: false,
                created_at: None,
            });
        }
        let spec = o.apply(o.profile.unwrap_or(Profile::Manual).spec())?;
        spec.validate()?;
        let spec = spec.canonical();
        let id = spec.auto_id();
        let dir = root.datasets().join(&id);
        let stored = read_dataset_json(&dir)?;
        if let Some(s) = &stored {
            if s.spec != spec || s.dataset_id != id {
                return Err(Error::integrity(format!(
                    "{} does not hold the spec its id was derived from",
                    dir.join("dataset.json").display()
                ))
                .with_hint("move the directory aside; the next command recreates it"));
            }
        }
        Ok(Dataset {
            id,
            dir,
            spec,
            stored: stored.is_some(),
            created_at: stored.map(|s| s.created_at),
        })
    }

    /// An existing dataset by id (inspect, verify). Missing: invalid input.
    pub fn open(root: &Root, id: &str) -> Result<Dataset> {
        crate::ids::validate_id("--dataset-id", id)?;
        let dir = root.datasets().join(id);
        match read_dataset_json(&dir)? {
            Some(m) => Ok(Dataset {
                id: id.to_string(),
                dir,
                spec: m.spec,
                stored: true,
                created_at: Some(m.created_at),
            }),
            None => Err(Error::invalid(format!(
                "dataset {id} does not exist under {}",
                root.datasets().display()
            ))
            .with_hint("list datasets with `tsbsctl data list`, or check --dataset-root")),
        }
    }

    /// Resolves and, when new, writes `dataset.json`. Returns the dataset (now stored) and
    /// whether it existed before.
    pub fn prepare(
        root: &Root,
        id: Option<&str>,
        o: &SpecOverrides,
        command: &str,
        reporter: &dyn Reporter,
    ) -> Result<(Dataset, bool)> {
        Self::resolve(root, id, o)?.ensure_stored(command, reporter)
    }

    /// Writes `dataset.json` when it is missing, under the dataset lock so two processes
    /// cannot store different specs under one id. Returns the stored dataset and whether it
    /// existed before.
    pub fn ensure_stored(&self, command: &str, reporter: &dyn Reporter) -> Result<(Dataset, bool)> {
        if self.stored {
            return Ok((self.clone(), true));
        }
        let _guard = lock::lock_dir(
            &self.dir,
            &format!("dataset {}", self.id),
            command,
            Some("creating dataset.json"),
            &LockOptions {
                wait: Some(GENERATION_WAIT),
                hold_token: None,
            },
            reporter,
        )?;
        // Someone may have created it while we waited: honour theirs if it agrees.
        if let Some(theirs) = read_dataset_json(&self.dir)? {
            if theirs.spec.canonical() != self.spec.canonical() {
                let diff = theirs.spec.differences(&self.spec).join("; ");
                return Err(Error::invalid(format!(
                    "dataset {} was just created by another command with other settings ({diff})",
                    self.id
                ))
                .with_hint(
                    "run the command again to use it as stored, or choose another --dataset-id",
                ));
            }
            let mut ds = self.clone();
            ds.stored = true;
            ds.created_at = Some(theirs.created_at);
            return Ok((ds, true));
        }
        let m = DatasetManifest {
            dataset_id: self.id.clone(),
            created_at: manifest::now_rfc3339(),
            spec: self.spec.clone(),
            created_by: format!("tsbsctl {}", crate::VERSION),
        };
        manifest::write(&self.dir.join("dataset.json"), &m)?;
        let mut ds = self.clone();
        ds.stored = true;
        ds.created_at = Some(m.created_at);
        Ok((ds, false))
    }

    pub fn formats_dir(&self) -> PathBuf {
        self.dir.join("formats")
    }

    pub fn format_dir(&self, format: &str) -> PathBuf {
        self.formats_dir().join(format)
    }

    /// The format names that have a directory (sorted).
    pub fn format_names(&self) -> Result<Vec<String>> {
        let dir = self.formats_dir();
        let mut names = Vec::new();
        match fs::read_dir(&dir) {
            Ok(rd) => {
                for e in rd.flatten() {
                    if e.file_type().map(|t| t.is_dir()).unwrap_or(false) {
                        let n = e.file_name().to_string_lossy().into_owned();
                        if !n.starts_with('.') {
                            names.push(n);
                        }
                    }
                }
            }
            Err(e) if e.kind() == io::ErrorKind::NotFound => {}
            Err(e) => return Err(Error::io("list", &dir, e)),
        }
        names.sort();
        Ok(names)
    }

    /// The JSON shape of a logical dataset in command results.
    pub fn to_json(&self) -> Value {
        json!({
            "dataset_id": self.id,
            "dataset_path": self.dir,
            "spec": self.spec.to_value(),
            "created_at": self.created_at,
        })
    }
}

fn read_dataset_json(dir: &Path) -> Result<Option<DatasetManifest>> {
    let path = dir.join("dataset.json");
    let m: Option<DatasetManifest> = manifest::read_optional(&path)?;
    if let Some(m) = &m {
        let expected = dir.file_name().map(|n| n.to_string_lossy().into_owned());
        if expected.as_deref() != Some(m.dataset_id.as_str()) {
            return Err(Error::integrity(format!(
                "{} records dataset id {:?}, not the directory name",
                path.display(),
                m.dataset_id
            ))
            .with_hint("restore the directory name, or remove the directory"));
        }
    }
    Ok(m)
}

/// Every valid dataset under the dataset root, sorted by id (invalid ones are skipped and
/// returned as warnings).
pub fn list(root: &Root) -> Result<(Vec<Dataset>, Vec<String>)> {
    let dir = root.datasets();
    let mut out = Vec::new();
    let mut warnings = Vec::new();
    let rd = match fs::read_dir(&dir) {
        Ok(rd) => rd,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok((out, warnings)),
        Err(e) => return Err(Error::io("list", &dir, e)),
    };
    let mut names: Vec<String> = rd
        .flatten()
        .filter(|e| e.file_type().map(|t| t.is_dir()).unwrap_or(false))
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|n| !n.starts_with('.'))
        .collect();
    names.sort();
    for n in names {
        let d = dir.join(&n);
        match read_dataset_json(&d) {
            Ok(Some(m)) => out.push(Dataset {
                id: n,
                dir: d,
                spec: m.spec,
                stored: true,
                created_at: Some(m.created_at),
            }),
            Ok(None) => {}
            Err(e) => warnings.push(format!("skipping {}: {}", d.display(), e.message)),
        }
    }
    Ok((out, warnings))
}

// ---------------------------------------------------------------------------------------------
// Stored formats

/// How a format's file is stored.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Compression {
    None,
    Gzip,
    Xz,
}

impl Compression {
    pub fn as_str(self) -> &'static str {
        match self {
            Compression::None => "none",
            Compression::Gzip => "gzip",
            Compression::Xz => "xz",
        }
    }
    /// The stored file's name.
    pub fn file_name(self) -> &'static str {
        match self {
            Compression::None => "data",
            Compression::Gzip => "data.gz",
            Compression::Xz => "data.xz",
        }
    }
}

/// Status of a format variant.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum VariantStatus {
    Completed,
    Failed,
}

/// Bytes and SHA-256 of a stream.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Digest {
    pub bytes: u64,
    pub sha256: String,
}

/// What reuse compares without reading the data.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Fingerprint {
    pub size: u64,
    pub mtime_ns: i128,
    pub inode: u64,
}

impl Fingerprint {
    pub fn of(path: &Path) -> io::Result<Fingerprint> {
        use std::os::unix::fs::MetadataExt;
        let m = fs::metadata(path)?;
        Ok(Fingerprint {
            size: m.len(),
            mtime_ns: m.mtime() as i128 * 1_000_000_000 + m.mtime_nsec() as i128,
            inode: m.ino(),
        })
    }
}

/// The generator that wrote a variant.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct GeneratorRecord {
    pub binary: PathBuf,
    pub binary_sha256: String,
    pub tsbs_repo: String,
    pub tsbs_commit: String,
    pub go_version: String,
}

/// `formats/<format>/manifest.json`.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct FormatManifest {
    pub dataset_id: String,
    pub format: String,
    pub status: VariantStatus,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub compression: Option<Compression>,
    /// The stored file name (`data`, `data.gz`, `data.xz`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub file: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rows: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub metrics: Option<u64>,
    /// How `rows` was counted from the lines (absent in older manifests: the format's own).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub layout: Option<RowLayout>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub uncompressed: Option<Digest>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stored: Option<Digest>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub fingerprint: Option<Fingerprint>,
    pub generator: GeneratorRecord,
    pub command: Vec<String>,
    pub started_at: String,
    pub finished_at: String,
    pub generate_seconds: f64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub verified_at: Option<String>,
    pub log: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    pub tool_version: String,
}

impl Manifest for FormatManifest {
    const KIND: &'static str = "dataset-format";
}

/// A completed, checked variant: what the benchmark phases load.
#[derive(Debug, Clone)]
pub struct StoredFormat {
    pub dataset_id: String,
    pub format: String,
    pub path: PathBuf,
    pub compression: Compression,
    pub rows: u64,
    pub metrics: u64,
    /// Size and SHA-256 of the stored file.
    pub bytes: u64,
    pub sha256: String,
    /// Size and SHA-256 of the line protocol itself.
    pub uncompressed_bytes: u64,
    pub uncompressed_sha256: String,
    pub manifest_path: PathBuf,
    /// Reused without generating.
    pub reused: bool,
    /// The data was read and hashed by this call (verify, or a changed fingerprint).
    pub verified: bool,
    pub generator: GeneratorRecord,
}

impl StoredFormat {
    fn from_manifest(dir: &Path, m: &FormatManifest, reused: bool, verified: bool) -> Result<Self> {
        let bad = || {
            Error::integrity(format!(
                "{} is marked completed but misses fields",
                dir.join("manifest.json").display()
            ))
            .with_hint("regenerate with `tsbsctl data generate --regenerate`")
        };
        let file = m.file.clone().ok_or_else(bad)?;
        let stored = m.stored.clone().ok_or_else(bad)?;
        let unc = m.uncompressed.clone().ok_or_else(bad)?;
        if file.contains('/') || file.starts_with('.') {
            return Err(bad());
        }
        Ok(StoredFormat {
            dataset_id: m.dataset_id.clone(),
            format: m.format.clone(),
            path: dir.join(file),
            compression: m.compression.ok_or_else(bad)?,
            rows: m.rows.ok_or_else(bad)?,
            metrics: m.metrics.ok_or_else(bad)?,
            bytes: stored.bytes,
            sha256: stored.sha256,
            uncompressed_bytes: unc.bytes,
            uncompressed_sha256: unc.sha256,
            manifest_path: dir.join("manifest.json"),
            reused,
            verified,
            generator: m.generator.clone(),
        })
    }

    /// The uncompressed line protocol, streamed (decompressing on the fly).
    pub fn open_uncompressed(&self) -> Result<Box<dyn Read + Send>> {
        let f = File::open(&self.path).map_err(|e| Error::io("open", &self.path, e))?;
        let r = BufReader::with_capacity(CHUNK, f);
        Ok(match self.compression {
            Compression::None => Box::new(r),
            Compression::Gzip => Box::new(flate2::read::MultiGzDecoder::new(r)),
            Compression::Xz => Box::new(crate::xz::decoder(r)),
        })
    }

    pub fn to_json(&self) -> Value {
        json!({
            "dataset_id": self.dataset_id,
            "format": self.format,
            "data_path": self.path,
            "compression": self.compression.as_str(),
            "rows": self.rows,
            "metrics": self.metrics,
            "bytes": self.bytes,
            "sha256": self.sha256,
            "uncompressed_bytes": self.uncompressed_bytes,
            "uncompressed_sha256": self.uncompressed_sha256,
            "manifest_path": self.manifest_path,
            "reused": self.reused,
            "verified": self.verified,
        })
    }
}

/// The generator binary and where it came from.
#[derive(Debug, Clone)]
pub struct Generator {
    pub path: PathBuf,
    pub sha256: String,
    pub tsbs_repo: String,
    pub tsbs_commit: String,
    pub go_version: String,
}

impl Generator {
    /// `tool` (e.g. `tsbs_generate_data`) from a prepared TSBS environment.
    pub fn from_env(env: &TsbsEnv, tool: &str) -> Result<Generator> {
        let b = env.binary(tool)?;
        Ok(Generator {
            path: b.path.clone(),
            sha256: b.sha256.clone(),
            tsbs_repo: env.repo.clone(),
            tsbs_commit: env.commit.clone(),
            go_version: env.go_version.clone(),
        })
    }

    fn record(&self) -> GeneratorRecord {
        GeneratorRecord {
            binary: self.path.clone(),
            binary_sha256: self.sha256.clone(),
            tsbs_repo: self.tsbs_repo.clone(),
            tsbs_commit: self.tsbs_commit.clone(),
            go_version: self.go_version.clone(),
        }
    }
}

impl GeneratorRecord {
    /// Made by `gen`: the same TSBS commit and the same binary (real finding C5: a stand-in's
    /// or another commit's artifacts must not reach the real tools unnoticed).
    pub fn same_as(&self, gen: &Generator) -> bool {
        self.tsbs_commit == gen.tsbs_commit && self.binary_sha256 == gen.sha256
    }
}

/// Exit 4 when `recorded` is not the prepared generator `gen`; `what` names the artifact.
pub fn check_generator(
    what: &str,
    recorded: &GeneratorRecord,
    gen: &Generator,
    hint: String,
) -> Result<()> {
    if recorded.same_as(gen) {
        return Ok(());
    }
    Err(Error::integrity(format!(
        "{what} was made by another generator (TSBS commit {}, binary SHA-256 {}) than the \
         prepared one (TSBS commit {}, binary SHA-256 {})",
        recorded.tsbs_commit, recorded.binary_sha256, gen.tsbs_commit, gen.sha256
    ))
    .with_hint(hint))
}

/// On reuse: the variant's generator must be the prepared one. Without a prepared
/// environment there is nothing to compare with (and no TSBS tool will read the data).
fn check_reuse_generator(
    dataset_id: &str,
    m: &FormatManifest,
    generator: &mut dyn FnMut() -> Result<Generator>,
) -> Result<()> {
    match generator() {
        Ok(gen) => check_generator(
            &format!("dataset {dataset_id} ({})", m.format),
            &m.generator,
            &gen,
            format!(
                "regenerate it with the prepared tools: `tsbsctl data generate --format {} --dataset-id {dataset_id} --regenerate`",
                m.format
            ),
        ),
        Err(_) => Ok(()),
    }
}

/// What `data generate` asks for.
#[derive(Debug, Clone)]
pub struct GenerateRequest {
    pub format: String,
    /// `None`: keep whatever is stored, `none` for a new variant.
    pub compression: Option<Compression>,
    pub regenerate: bool,
    /// The formats the products' loaders read (`crate::product::data_formats()`): the ones
    /// that may be generated. Passed in, as dataset sits below product in the layering.
    pub generatable: Vec<&'static str>,
}

/// Checks a format name (§1.4 grammar).
pub fn validate_format(format: &str) -> Result<()> {
    let ok = format
        .bytes()
        .next()
        .is_some_and(|b| b.is_ascii_lowercase() || b.is_ascii_digit())
        && format
            .bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'_' || b == b'-');
    if !ok {
        return Err(Error::invalid(
            "--format must contain only lowercase letters, digits, '_' and '-'",
        )
        .with_hint("use --format influx or --format timescaledb"));
    }
    Ok(())
}

/// The row layout a variant's manifest records, or its format's for older manifests. A
/// recorded layout other than the format's own (an edited manifest) is an integrity error, so
/// the recount cannot be steered.
fn manifest_layout(m: &FormatManifest) -> Result<RowLayout> {
    let bad = |what: String| {
        Error::integrity(format!(
            "format {} of dataset {} {what}",
            m.format, m.dataset_id
        ))
        .with_hint(format!(
            "regenerate it with `tsbsctl data generate --format {} --dataset-id {} --regenerate`",
            m.format, m.dataset_id
        ))
    };
    match (m.layout, RowLayout::of(&m.format)) {
        (Some(l), Some(known)) if l != known => Err(bad(format!(
            "records the row layout {l:?}, but the format is laid out as {known:?}"
        ))),
        (l, known) => l
            .or(known)
            .ok_or_else(|| bad("records no row layout and tsbsctl knows none for it".into())),
    }
}

/// Reads a variant's manifest (None when absent).
pub fn read_format_manifest(dir: &Path) -> Result<Option<FormatManifest>> {
    manifest::read_optional(&dir.join("manifest.json"))
}

/// Makes sure `dataset` holds `req.format`: reuses a completed variant (without reading the
/// data when its fingerprint is unchanged), else generates it under the variant lock. A second
/// process asking for the same variant waits for the first and reuses its result.
///
/// `generator` gives the prepared generator. Reuse works without one (its error is ignored
/// then); with one, a variant another generator made is an integrity error (exit 4). The dataset's `dataset.json` is written when new.
pub fn ensure_generated(
    dataset: &Dataset,
    req: &GenerateRequest,
    generator: &mut dyn FnMut() -> Result<Generator>,
    command: &str,
    reporter: &dyn Reporter,
) -> Result<StoredFormat> {
    validate_format(&req.format)?;
    let layout =
        RowLayout::of(&req.format).filter(|_| req.generatable.contains(&req.format.as_str()));
    let Some(layout) = layout else {
        return Err(Error::invalid(format!(
            "--format {} cannot be generated: tsbsctl generates the formats the products load ({})",
            req.format,
            req.generatable.join(", ")
        ))
        .with_hint(format!(
            "use --format {}",
            req.generatable.join(" or --format ")
        )));
    };
    let Some((expected_rows, metrics_per_row)) = dataset.spec.expected_rows()? else {
        return Err(Error::invalid(format!(
            "use case {:?} has no fixed row count, so tsbsctl cannot check its output",
            dataset.spec.use_case
        ))
        .with_hint("use --use-case cpu-only (what the benchmarks load)"));
    };
    let dir = dataset.format_dir(&req.format);
    sweep_leftovers(&dir, reporter);

    // Fast path, no lock: a completed manifest whose fingerprint still matches.
    let mut completed_seen = false;
    if dataset.stored {
        if let Some(m) = read_format_manifest(&dir)? {
            if m.status == VariantStatus::Completed {
                completed_seen = true;
                if !req.regenerate && compression_ok(&m, req) {
                    if let Some(sf) = reuse_fast(&dir, &m)? {
                        check_reuse_generator(&dataset.id, &m, generator)?;
                        return Ok(sf);
                    }
                }
            }
        }
    }
    // Generation is certainly needed: find the generator before writing anything, so a
    // missing TSBS environment changes nothing on disk.
    let mut gen_cache: Option<Generator> = None;
    if req.regenerate || !completed_seen {
        gen_cache = Some(generator()?);
        // Room for the whole file before anything is written (trial-run #1).
        crate::diskspace::ensure_room(&[generation_need(dataset, req, expected_rows)?])?;
    }
    let (dataset, _) = dataset.ensure_stored(command, reporter)?;
    fs::create_dir_all(&dir).map_err(|e| Error::io("create", &dir, e))?;
    let _guard = lock::lock_dir(
        &dir,
        &format!("dataset {}/{}", dataset.id, req.format),
        command,
        Some("generating data"),
        &LockOptions {
            wait: Some(GENERATION_WAIT),
            hold_token: None,
        },
        reporter,
    )?;
    let existing = read_format_manifest(&dir)?;
    let completed = existing
        .as_ref()
        .filter(|m| m.status == VariantStatus::Completed);
    if let Some(m) = completed {
        if !compression_ok(m, req) && !req.regenerate {
            return Err(Error::invalid(format!(
                "dataset {} stores {} as {}, not {}",
                dataset.id,
                req.format,
                m.compression.map(|c| c.as_str()).unwrap_or("?"),
                req.compression.map(|c| c.as_str()).unwrap_or("?"),
            ))
            .with_hint(
                "add --regenerate to store it with the new compression, or drop --compression",
            ));
        }
        if !req.regenerate {
            // Generated by someone else while we waited, or the fingerprint changed.
            let sf = reuse_checked(&dir, m, reporter)?;
            match &gen_cache {
                Some(gen) => check_generator(
                    &format!("dataset {} ({})", dataset.id, m.format),
                    &m.generator,
                    gen,
                    format!(
                        "regenerate it with the prepared tools: `tsbsctl data generate --format {} --dataset-id {} --regenerate`",
                        m.format, dataset.id
                    ),
                )?,
                None => check_reuse_generator(&dataset.id, m, generator)?,
            }
            return Ok(sf);
        }
    }
    for t in ["gen", "cwd"] {
        for f in [Compression::None, Compression::Gzip, Compression::Xz] {
            fsutil_clean(&dir.join(f.file_name()), t);
        }
        fsutil_clean(&dir.join("work"), t);
        fsutil_clean(&dir.join("generate.log"), t);
    }
    let compression = req
        .compression
        .or(completed.and_then(|m| m.compression))
        .unwrap_or(Compression::None);
    let gen = match gen_cache {
        Some(g) => g,
        None => generator()?,
    };
    generate(
        &dataset,
        &dir,
        &req.format,
        compression,
        expected_rows,
        metrics_per_row,
        layout,
        &gen,
        completed,
        reporter,
    )
}

/// What generating `req.format` of `dataset` will write, for the free-space check.
pub fn generation_need(
    dataset: &Dataset,
    req: &GenerateRequest,
    rows: u64,
) -> Result<crate::diskspace::Need> {
    let dir = dataset.format_dir(&req.format);
    let compression = match req.compression {
        Some(c) => c,
        None => read_format_manifest(&dir)
            .ok()
            .flatten()
            .and_then(|m| m.compression)
            .unwrap_or(Compression::None),
    };
    Ok(crate::diskspace::Need {
        what: format!("dataset {} ({rows} rows)", dataset.id),
        bytes: estimated_bytes(rows, compression),
        dir,
    })
}

/// Removes what a killed generation left in a format directory (the staged data file, its
/// log, the generator's working directory), whenever a command touches it (trial-run #15).
pub fn sweep_leftovers(dir: &Path, reporter: &dyn Reporter) {
    for p in crate::fsutil::sweep_staging(dir, &["gen", "cwd"]) {
        reporter.info(&format!(
            "removed {}, left by an interrupted generation",
            p.display()
        ));
    }
}

/// [`sweep_leftovers`] in every format directory of `dataset` (`data list`, `data verify`).
pub fn sweep_dataset_leftovers(dataset: &Dataset, reporter: &dyn Reporter) {
    for f in dataset.format_names().unwrap_or_default() {
        sweep_leftovers(&dataset.format_dir(&f), reporter);
    }
}

fn fsutil_clean(target: &Path, tag: &str) {
    let _ = crate::fsutil::clean_staging(target, tag);
}

fn compression_ok(m: &FormatManifest, req: &GenerateRequest) -> bool {
    req.compression.is_none() || req.compression == m.compression
}

/// Reuse without reading: status, file presence, size and fingerprint. `None` when the
/// fingerprint changed (the caller verifies under the lock). Size mismatch is integrity.
fn reuse_fast(dir: &Path, m: &FormatManifest) -> Result<Option<StoredFormat>> {
    let sf = StoredFormat::from_manifest(dir, m, true, false)?;
    let fp = match Fingerprint::of(&sf.path) {
        Ok(fp) => fp,
        Err(e) if e.kind() == io::ErrorKind::NotFound => {
            return Err(Error::integrity(format!(
                "dataset artifact {} is missing",
                sf.path.display()
            ))
            .with_hint("regenerate it with `tsbsctl data generate --regenerate`"))
        }
        Err(e) => return Err(Error::io("stat", &sf.path, e)),
    };
    if fp.size != sf.bytes {
        return Err(Error::integrity(format!(
            "dataset artifact size mismatch: {} has {} bytes, the manifest records {}",
            sf.path.display(),
            fp.size,
            sf.bytes
        ))
        .with_hint("regenerate it with `tsbsctl data generate --regenerate`"));
    }
    if m.fingerprint.as_ref() == Some(&fp) {
        Ok(Some(sf))
    } else {
        Ok(None)
    }
}

/// Reuse under the lock: fast when the fingerprint matches, else a full verify that records
/// the new fingerprint when the data is intact.
fn reuse_checked(dir: &Path, m: &FormatManifest, reporter: &dyn Reporter) -> Result<StoredFormat> {
    if let Some(sf) = reuse_fast(dir, m)? {
        return Ok(sf);
    }
    reporter.info(&format!(
        "{} changed on disk since it was recorded (size, mtime or inode); verifying it before reuse",
        dir.join(m.file.as_deref().unwrap_or("data")).display()
    ));
    let mut sf = verify_variant(dir, m, reporter)?;
    sf.reused = true;
    Ok(sf)
}

/// Recomputes every checksum of a completed variant (stored bytes; for a compressed file also
/// the uncompressed stream and its row count). On success the fingerprint is refreshed.
/// Must be called under the variant lock.
fn verify_variant(dir: &Path, m: &FormatManifest, reporter: &dyn Reporter) -> Result<StoredFormat> {
    let mut sf = StoredFormat::from_manifest(dir, m, true, true)?;
    let layout = manifest_layout(m)?;
    let before = Fingerprint::of(&sf.path).map_err(|e| Error::io("stat", &sf.path, e))?;
    if before.size != sf.bytes {
        return Err(Error::integrity(format!(
            "dataset artifact size mismatch: {} has {} bytes, the manifest records {}",
            sf.path.display(),
            before.size,
            sf.bytes
        ))
        .with_hint("regenerate it with `tsbsctl data generate --regenerate`"));
    }
    let progress = reporter.progress(
        &format!("verifying {}/{}", sf.dataset_id, sf.format),
        Some(sf.bytes),
        Unit::Bytes,
    );
    let result = match sf.compression {
        // The rows are recounted in the same read (issue 16 #8): a manifest whose row count
        // was changed is caught here, not blamed on the database after a load.
        Compression::None => {
            let (sha, bytes, rows) = sha256_and_rows(&sf.path, layout, progress.as_ref())?;
            (sha.clone(), bytes, sha, bytes, Some(rows))
        }
        _ => verify_compressed(&sf, layout, progress.as_ref())?,
    };
    progress.finish();
    let (stored_sha, stored_bytes, unc_sha, unc_bytes, rows) = result;
    let mismatch = |what: &str| {
        Error::integrity(format!(
            "dataset artifact checksum mismatch: {} ({what} differs from the manifest)",
            sf.path.display()
        ))
        .with_hint("the data is corrupted; regenerate it with `tsbsctl data generate --regenerate`")
    };
    if stored_bytes != sf.bytes || stored_sha != sf.sha256 {
        return Err(mismatch("sha256 of the stored file"));
    }
    if unc_bytes != sf.uncompressed_bytes || unc_sha != sf.uncompressed_sha256 {
        return Err(mismatch("sha256 of the uncompressed data"));
    }
    if let Some(r) = rows.filter(|r| *r != sf.rows) {
        return Err(Error::integrity(format!(
            "dataset artifact row count mismatch: {} holds {r} rows, its manifest records {}",
            sf.path.display(),
            sf.rows
        ))
        .with_hint(format!(
            "the manifest {} is wrong; regenerate the dataset with `tsbsctl data generate --regenerate`",
            dir.join("manifest.json").display()
        )));
    }
    // The data is intact: record the current fingerprint so reuse is fast again.
    let mut updated = m.clone();
    updated.fingerprint = Some(before);
    updated.verified_at = Some(manifest::now_rfc3339());
    manifest::write(&dir.join("manifest.json"), &updated)?;
    sf.verified = true;
    Ok(sf)
}

/// SHA-256, size and line count of an uncompressed dataset file in one read: lines are
/// counted on this thread while the hash runs on a helper ([`crate::hash::HashPipe`]).
fn sha256_and_rows(
    path: &Path,
    layout: RowLayout,
    progress: &dyn Progress,
) -> Result<(String, u64, u64)> {
    let mut file = File::open(path).map_err(|e| Error::io("open", path, e))?;
    let mut pipe = crate::hash::HashPipe::new(Sha256::new());
    let mut size = 0u64;
    let mut counter = RowCounter::new(layout);
    loop {
        crate::interrupt::check()?;
        let mut buf = pipe.buffer(crate::hash::READ_BUF);
        let n = loop {
            match file.read(&mut buf) {
                Ok(n) => break n,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                Err(e) => return Err(Error::io("read", path, e)),
            }
        };
        if n == 0 {
            break;
        }
        buf.truncate(n);
        counter.feed(&buf);
        pipe.push(buf);
        size += n as u64;
        progress.inc(n as u64);
    }
    Ok((pipe.finish().finish_hex(), size, counter.rows()))
}

/// Issue 16 #8: the stored spec must be the one the dataset's id and data came from. An
/// automatic id (`<use-case>-s<scale>-<12 hex>`) must be the spec's own; every format's
/// recorded generator command must carry the spec's values. Names what differs (exit 4).
fn check_spec_identity(dataset: &Dataset, f: &str, m: &FormatManifest) -> Result<()> {
    let path = dataset.dir.join("dataset.json");
    let hint = format!(
        "{} was changed after the data was generated; restore it, or regenerate the dataset with `tsbsctl data generate --regenerate`",
        path.display()
    );
    let mut differs = Vec::new();
    let flag = |a: &str| {
        a.split_once('=')
            .map(|(k, v)| (k.to_string(), v.to_string()))
    };
    for (k, v) in generator_args(&dataset.spec, f)
        .iter()
        .filter_map(|a| flag(a))
    {
        let had = m
            .command
            .iter()
            .skip(1)
            .filter_map(|a| flag(a))
            .find(|(hk, _)| *hk == k)
            .map(|(_, hv)| hv);
        if let Some(had) = had.filter(|h| *h != v) {
            differs.push(format!(
                "dataset.json has {k}={v}, format {f} was generated with {k}={had}"
            ));
        }
    }
    if looks_auto_id(&dataset.id) && dataset.spec.auto_id() != dataset.id {
        differs.push(format!(
            "the spec's own id is {}, not {}",
            dataset.spec.auto_id(),
            dataset.id
        ));
    }
    if differs.is_empty() {
        return Ok(());
    }
    Err(Error::integrity(format!(
        "dataset {} does not match its stored spec: {}",
        dataset.id,
        differs.join("; ")
    ))
    .with_hint(hint))
}

/// `<slug>-s<digits>-<12 lowercase hex>`: the shape of [`DatasetSpec::auto_id`] (a chosen
/// `--dataset-id` such as `tiny` is not derived from the spec).
fn looks_auto_id(id: &str) -> bool {
    let Some((head, digest)) = id.rsplit_once('-') else {
        return false;
    };
    let Some((_, scale)) = head.rsplit_once("-s") else {
        return false;
    };
    digest.len() == 12
        && digest
            .bytes()
            .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b))
        && !scale.is_empty()
        && scale.bytes().all(|b| b.is_ascii_digit())
}

/// One read of a compressed file: hash the stored bytes while decompressing, hash and count
/// the decompressed stream.
fn verify_compressed(
    sf: &StoredFormat,
    layout: RowLayout,
    progress: &dyn Progress,
) -> Result<(String, u64, String, u64, Option<u64>)> {
    struct Tee<'a, R> {
        inner: R,
        hash: Sha256,
        bytes: u64,
        progress: &'a dyn Progress,
    }
    impl<R: Read> Read for Tee<'_, R> {
        fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
            let n = self.inner.read(buf)?;
            self.hash.update(&buf[..n]);
            self.bytes += n as u64;
            self.progress.inc(n as u64);
            Ok(n)
        }
    }
    let f = File::open(&sf.path).map_err(|e| Error::io("open", &sf.path, e))?;
    let mut tee = Tee {
        inner: f,
        hash: Sha256::new(),
        bytes: 0,
        progress,
    };
    let corrupt = |e: io::Error| {
        Error::integrity(format!(
            "dataset artifact checksum mismatch: {} does not decompress ({e})",
            sf.path.display()
        ))
        .with_hint("the data is corrupted; regenerate it with `tsbsctl data generate --regenerate`")
    };
    let mut unc = Sha256::new();
    let mut unc_bytes = 0u64;
    let mut counter = RowCounter::new(layout);
    {
        let mut dec: Box<dyn Read> = match sf.compression {
            Compression::Gzip => Box::new(flate2::read::MultiGzDecoder::new(
                BufReader::with_capacity(CHUNK, &mut tee),
            )),
            _ => Box::new(crate::xz::decoder(BufReader::with_capacity(
                CHUNK, &mut tee,
            ))),
        };
        let mut buf = vec![0u8; CHUNK];
        loop {
            crate::interrupt::check()?;
            let n = match dec.read(&mut buf) {
                Ok(0) => break,
                Ok(n) => n,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                Err(e) => return Err(corrupt(e)),
            };
            unc.update(&buf[..n]);
            unc_bytes += n as u64;
            counter.feed(&buf[..n]);
        }
    }
    // Trailing bytes after the compressed stream are part of the stored file's hash.
    io::copy(&mut tee, &mut io::sink()).map_err(|e| Error::io("read", &sf.path, e))?;
    Ok((
        tee.hash.finish_hex(),
        tee.bytes,
        unc.finish_hex(),
        unc_bytes,
        Some(counter.rows()),
    ))
}

/// Verifies the variants of a dataset (`format` or all), returning one result per variant.
pub fn verify(
    dataset: &Dataset,
    format: Option<&str>,
    command: &str,
    reporter: &dyn Reporter,
) -> Result<Vec<StoredFormat>> {
    let formats = match format {
        Some(f) => {
            validate_format(f)?;
            vec![f.to_string()]
        }
        None => dataset.format_names()?,
    };
    if formats.is_empty() {
        return Err(
            Error::invalid(format!("dataset {} has no format variants", dataset.id)).with_hint(
                "generate one with `tsbsctl data generate --format influx` (or timescaledb)",
            ),
        );
    }
    let mut out = Vec::new();
    for f in formats {
        let dir = dataset.format_dir(&f);
        sweep_leftovers(&dir, reporter);
        let _guard = lock::lock_dir(
            &dir,
            &format!("dataset {}/{f}", dataset.id),
            command,
            Some("verifying data"),
            &LockOptions {
                wait: Some(GENERATION_WAIT),
                hold_token: None,
            },
            reporter,
        )?;
        let m = read_format_manifest(&dir)?.ok_or_else(|| {
            Error::invalid(format!("dataset {} has no format {f}", dataset.id)).with_hint(format!(
                "generate it with `tsbsctl data generate --format {f}`"
            ))
        })?;
        if m.status != VariantStatus::Completed {
            return Err(Error::failed(format!(
                "format {f} of dataset {} is not complete (its last generation failed; see {})",
                dataset.id,
                dir.join(&m.log).display()
            ))
            .with_hint("generate it again with `tsbsctl data generate`"));
        }
        check_spec_identity(dataset, &f, &m)?;
        let mut sf = verify_variant(&dir, &m, reporter)?;
        sf.reused = true;
        out.push(sf);
    }
    Ok(out)
}

// ---------------------------------------------------------------------------------------------
// One-pass generation

/// Counts `\n` bytes, eight at a time (SWAR: a byte of `x ^ 0x0a..` is zero exactly where
/// `x` holds a newline; the high bit of each byte of the expression below is set for
/// non-zero bytes, without carries between bytes).
fn count_newlines(buf: &[u8]) -> u64 {
    const LOW7: u64 = 0x7f7f_7f7f_7f7f_7f7f;
    const NL: u64 = 0x0a0a_0a0a_0a0a_0a0a;
    let mut words = buf.chunks_exact(8);
    let mut total = 0u64;
    for w in &mut words {
        let t = u64::from_le_bytes(w.try_into().expect("8 bytes")) ^ NL;
        let nonzero = ((t & LOW7) + LOW7) | t;
        total += (!nonzero & !LOW7).count_ones() as u64;
    }
    total + words.remainder().iter().filter(|&&b| b == b'\n').count() as u64
}

/// How a format's file holds its rows (recorded in the variant's manifest, so `rows` is
/// derived the same way at generation and at every verify).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct RowLayout {
    /// Lines before the first row (the timescaledb format's tag schema, columns, blank).
    pub header_lines: u64,
    /// Lines each row takes (timescaledb: a `tags,...` line and its `cpu,<ns>,...` line).
    pub lines_per_row: u64,
    pub row_line: RowLine,
}

/// How a row is recognised.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum RowLine {
    /// Every line after the header is one row (influx line protocol).
    #[serde(rename = "every line")]
    Every,
    /// A line `<measurement>,<digit>...` (not `tags,`): the values line of a timescaledb row.
    #[serde(rename = "<measurement>,<digit>")]
    MeasurementDigit,
}

impl RowLayout {
    pub const INFLUX: RowLayout = RowLayout {
        header_lines: 0,
        lines_per_row: 1,
        row_line: RowLine::Every,
    };
    pub const TIMESCALEDB: RowLayout = RowLayout {
        header_lines: 3,
        lines_per_row: 2,
        row_line: RowLine::MeasurementDigit,
    };

    /// The layout of a format tsbsctl can generate and count (`None`: unknown).
    pub fn of(format: &str) -> Option<RowLayout> {
        match format {
            "influx" => Some(RowLayout::INFLUX),
            "timescaledb" => Some(RowLayout::TIMESCALEDB),
            _ => None,
        }
    }

    /// The line count a file of `rows` rows has.
    pub fn lines_for(&self, rows: u64) -> u64 {
        self.header_lines + self.lines_per_row * rows
    }
}

/// Counts lines and rows of a stream fed in arbitrary chunks (a line may span chunks).
#[derive(Debug, Clone)]
struct RowCounter {
    layout: RowLayout,
    lines: u64,
    rows: u64,
    state: LineState,
    /// Whether the first field read so far is still a prefix of `tags`.
    first: u8,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum LineState {
    Start,
    FirstField,
    AfterComma,
    Rest,
}

impl RowCounter {
    fn new(layout: RowLayout) -> RowCounter {
        RowCounter {
            layout,
            lines: 0,
            rows: 0,
            state: LineState::Start,
            first: 0,
        }
    }

    /// Feeds a chunk; returns the rows it completed.
    fn feed(&mut self, buf: &[u8]) -> u64 {
        let before = self.rows();
        match self.layout.row_line {
            RowLine::Every => self.lines += count_newlines(buf),
            RowLine::MeasurementDigit => self.feed_recognising(buf),
        }
        self.rows() - before
    }

    fn feed_recognising(&mut self, buf: &[u8]) {
        const TAGS: &[u8] = b"tags";
        let mut i = 0;
        while i < buf.len() {
            let b = buf[i];
            if b == b'\n' {
                self.lines += 1;
                self.state = LineState::Start;
                i += 1;
                continue;
            }
            match self.state {
                LineState::Start => {
                    // `first` counts matched bytes of `tags`; u8::MAX once it cannot match.
                    self.first = if b == TAGS[0] { 1 } else { u8::MAX };
                    // A line starting with ',' has no measurement: not a row.
                    self.state = if b == b',' {
                        LineState::Rest
                    } else {
                        LineState::FirstField
                    };
                }
                LineState::FirstField => {
                    if b == b',' {
                        self.state = LineState::AfterComma;
                    } else {
                        let k = self.first as usize;
                        self.first = if k < TAGS.len() && TAGS[k] == b {
                            k as u8 + 1
                        } else {
                            u8::MAX
                        };
                    }
                }
                LineState::AfterComma => {
                    if b.is_ascii_digit() && self.first as usize != TAGS.len() {
                        self.rows += 1;
                    }
                    self.state = LineState::Rest;
                }
                LineState::Rest => {
                    // Skip to the end of the line in one scan.
                    match buf[i..].iter().position(|&c| c == b'\n') {
                        Some(p) => i += p,
                        None => i = buf.len(),
                    }
                    continue;
                }
            }
            i += 1;
        }
    }

    /// Rows seen so far.
    fn rows(&self) -> u64 {
        match self.layout.row_line {
            RowLine::Every => {
                self.lines.saturating_sub(self.layout.header_lines)
                    / self.layout.lines_per_row.max(1)
            }
            RowLine::MeasurementDigit => self.rows,
        }
    }
}

/// A writer that hashes what passes through.
struct HashWriter<W> {
    inner: W,
    hash: Sha256,
    bytes: u64,
}

impl<W: Write> Write for HashWriter<W> {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        let n = self.inner.write(buf)?;
        self.hash.update(&buf[..n]);
        self.bytes += n as u64;
        Ok(n)
    }
    fn flush(&mut self) -> io::Result<()> {
        self.inner.flush()
    }
}

enum Sink {
    Plain(File),
    Gzip(flate2::write::GzEncoder<HashWriter<io::BufWriter<File>>>),
    Xz(crate::xz::Encoder<HashWriter<io::BufWriter<File>>>),
}

impl Sink {
    fn new(file: File, c: Compression) -> Sink {
        let hw = || HashWriter {
            inner: io::BufWriter::with_capacity(CHUNK, file.try_clone().expect("dup file")),
            hash: Sha256::new(),
            bytes: 0,
        };
        match c {
            Compression::None => Sink::Plain(file),
            Compression::Gzip => Sink::Gzip(flate2::write::GzEncoder::new(
                hw(),
                flate2::Compression::default(),
            )),
            // Preset 3 keeps the encoder's memory near 32 MiB.
            Compression::Xz => Sink::Xz(crate::xz::encoder(hw(), 3)),
        }
    }

    fn write_all(&mut self, buf: &[u8]) -> io::Result<()> {
        match self {
            Sink::Plain(f) => f.write_all(buf),
            Sink::Gzip(e) => e.write_all(buf),
            Sink::Xz(e) => e.write_all(buf),
        }
    }

    /// Finishes the stream and fsyncs; returns the stored digest when it differs from the
    /// uncompressed one.
    fn finish(self) -> io::Result<Option<(String, u64)>> {
        let (file, digest) = match self {
            Sink::Plain(f) => (f, None),
            Sink::Gzip(e) => {
                let mut hw = e.finish()?;
                hw.flush()?;
                let f = hw.inner.into_inner().map_err(|e| e.into_error())?;
                (f, Some((hw.hash.finish_hex(), hw.bytes)))
            }
            Sink::Xz(e) => {
                let mut hw = e.finish()?;
                hw.flush()?;
                let f = hw.inner.into_inner().map_err(|e| e.into_error())?;
                (f, Some((hw.hash.finish_hex(), hw.bytes)))
            }
        };
        file.sync_all()?;
        Ok(digest)
    }
}

/// What the worker thread hands back.
struct StreamResult {
    rows: u64,
    lines: u64,
    sha256: String,
    bytes: u64,
    stored: Option<(String, u64)>,
    tail: Vec<u8>,
}

/// The generator command line (benchmark.md §3.1).
pub fn generator_args(spec: &DatasetSpec, format: &str) -> Vec<String> {
    vec![
        format!("--use-case={}", spec.use_case),
        format!("--seed={}", spec.seed),
        format!("--scale={}", spec.scale),
        format!("--timestamp-start={}", spec.start),
        format!("--timestamp-end={}", spec.end),
        format!("--log-interval={}", spec.log_interval),
        format!("--format={format}"),
    ]
}

#[allow(clippy::too_many_arguments)]
fn generate(
    dataset: &Dataset,
    dir: &Path,
    format: &str,
    compression: Compression,
    expected_rows: u64,
    metrics_per_row: u64,
    layout: RowLayout,
    gen: &Generator,
    completed: Option<&FormatManifest>,
    reporter: &dyn Reporter,
) -> Result<StoredFormat> {
    let target = dir.join(compression.file_name());
    let staging = crate::fsutil::staging_path(&target, "gen")?;
    let log_staging = crate::fsutil::staging_path(&dir.join("generate.log"), "gen")?;
    let cwd = crate::fsutil::staging_path(&dir.join("work"), "cwd")?;
    let args = generator_args(&dataset.spec, format);
    let mut command = vec![gen.path.to_string_lossy().into_owned()];
    command.extend(args.iter().cloned());
    let started_at = manifest::now_rfc3339();
    let t0 = Instant::now();
    reporter.info(&format!(
        "generating {} ({format}, {}): {} rows",
        dataset.id,
        compression.as_str(),
        expected_rows
    ));

    let outcome = (|| -> Result<StreamResult> {
        // TSBS reads a config.* from its working directory: give it an empty one.
        fs::create_dir(&cwd).map_err(|e| Error::io("create", &cwd, e))?;
        let mut log =
            File::create(&log_staging).map_err(|e| Error::io("create", &log_staging, e))?;
        writeln!(
            log,
            "$ {}",
            crate::proc::command_line(&command[0], &command[1..])
        )
        .map_err(|e| Error::io("write", &log_staging, e))?;
        let file = fs::OpenOptions::new()
            .read(true)
            .write(true)
            .create_new(true)
            .open(&staging)
            .map_err(|e| Error::io("create", &staging, e))?;
        let mut cmd = Command::new(&gen.path);
        cmd.args(&args)
            .current_dir(&cwd)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        crate::proc::configure(&mut cmd);
        let mut child = cmd.spawn().map_err(|e| {
            Error::failed(format!("could not run {}: {e}", gen.path.display()))
                .with_hint("rebuild the TSBS tools with `tsbsctl env prepare --rebuild`")
        })?;
        let stderr = child.stderr.take().expect("piped stderr");
        let log_thread = std::thread::spawn(move || -> Vec<String> {
            let mut tail = Vec::new();
            for line in BufReader::new(stderr).lines().map_while(|l| l.ok()) {
                let _ = writeln!(log, "{line}");
                tail.push(line);
                if tail.len() > 20 {
                    tail.remove(0);
                }
            }
            let _ = log.sync_all();
            tail
        });
        let stdout = child.stdout.take().expect("piped stdout");
        let progress = reporter.progress(
            &format!("generating {}/{format}", dataset.id),
            Some(expected_rows),
            Unit::Items,
        );
        let direct = open_direct(&staging);
        // On Ctrl-C/SIGTERM stop the generator even while it writes nothing (the read would
        // otherwise wait for it); its pipe then closes and the pipeline unwinds.
        let watch = crate::proc::InterruptWatch::start(&child, Duration::from_secs(2));
        let streamed = stream(stdout, file, direct, compression, layout, progress.as_ref());
        progress.finish();
        watch.finish();
        if streamed.is_err() {
            crate::proc::stop_group(&mut child, Duration::ZERO);
        }
        let status = child
            .wait()
            .map_err(|e| Error::failed(format!("wait for the generator: {e}")))?;
        let stderr_tail = log_thread.join().unwrap_or_default();
        let streamed = streamed?;
        if !status.success() {
            let code = status
                .code()
                .map(|c| format!("exit code {c}"))
                .unwrap_or_else(|| "a signal".to_string());
            let last = stderr_tail.last().cloned().unwrap_or_default();
            return Err(Error::failed(format!(
                "tsbs_generate_data failed with {code}{}",
                if last.is_empty() {
                    String::new()
                } else {
                    format!(": {last}")
                }
            )));
        }
        let lines_ok = streamed.lines == layout.lines_for(streamed.rows);
        if streamed.rows != expected_rows
            || !lines_ok
            || !streamed.tail.ends_with(b"\n") && streamed.bytes > 0
        {
            let tail = String::from_utf8_lossy(&streamed.tail);
            let last_line = tail
                .trim_end()
                .rsplit('\n')
                .next()
                .unwrap_or("")
                .to_string();
            return Err(Error::failed(format!(
                "tsbs_generate_data exited 0 but wrote {} rows, expected {expected_rows} (scale × intervals){}; its output ends with: {last_line:?}",
                streamed.rows,
                if lines_ok {
                    String::new()
                } else {
                    format!(
                        ", in {} lines where the {format} layout has {}",
                        streamed.lines,
                        layout.lines_for(streamed.rows)
                    )
                }
            )));
        }
        Ok(streamed)
    })();
    let _ = fs::remove_dir_all(&cwd);
    let finished_at = manifest::now_rfc3339();
    let seconds = t0.elapsed().as_secs_f64();
    let base = FormatManifest {
        dataset_id: dataset.id.clone(),
        format: format.to_string(),
        status: VariantStatus::Failed,
        compression: None,
        file: None,
        rows: None,
        layout: None,
        metrics: None,
        uncompressed: None,
        stored: None,
        fingerprint: None,
        generator: gen.record(),
        command: command.clone(),
        started_at,
        finished_at,
        generate_seconds: seconds,
        verified_at: None,
        log: "generate.log".into(),
        error: None,
        tool_version: crate::VERSION.to_string(),
    };
    let streamed = match outcome {
        Ok(s) => s,
        Err(mut err) => {
            let _ = fs::remove_file(&staging);
            // Ctrl-C reaches the generator too; what it leaves behind is an interruption.
            if crate::interrupt::requested() && err.kind != crate::error::ErrorKind::Interrupted {
                err = Error::interrupted(format!("interrupted while generating ({})", err.message))
                    .with_hint("run the command again to generate the data");
            }
            let log_name = if completed.is_some() {
                // Keep the completed variant's log; the failed attempt's goes beside it.
                "generate.failed.log"
            } else {
                "generate.log"
            };
            let log_path = dir.join(log_name);
            let _ = crate::fsutil::rename_durable(&log_staging, &log_path);
            if completed.is_none() {
                let failed = FormatManifest {
                    error: Some(err.message.clone()),
                    ..base
                };
                manifest::write(&dir.join("manifest.json"), &failed)?;
            }
            err.message = format!("{}; see {}", err.message, log_path.display());
            if err.hint.is_none() {
                err = err.with_hint(if completed.is_some() {
                    "the previously generated data is untouched; check the log and try again"
                } else {
                    "check the log; `tsbsctl data generate` retries"
                });
            }
            return Err(err);
        }
    };
    crate::fsutil::rename_durable(&staging, &target)?;
    let fp = Fingerprint::of(&target).map_err(|e| Error::io("stat", &target, e))?;
    let (stored_sha, stored_bytes) = streamed
        .stored
        .clone()
        .unwrap_or_else(|| (streamed.sha256.clone(), streamed.bytes));
    let m = FormatManifest {
        status: VariantStatus::Completed,
        compression: Some(compression),
        file: Some(compression.file_name().to_string()),
        rows: Some(streamed.rows),
        metrics: Some(streamed.rows * metrics_per_row),
        layout: Some(layout),
        uncompressed: Some(Digest {
            bytes: streamed.bytes,
            sha256: streamed.sha256.clone(),
        }),
        stored: Some(Digest {
            bytes: stored_bytes,
            sha256: stored_sha,
        }),
        fingerprint: Some(fp),
        ..base
    };
    manifest::write(&dir.join("manifest.json"), &m)?;
    crate::fsutil::rename_durable(&log_staging, &dir.join("generate.log"))?;
    let _ = fs::remove_file(dir.join("generate.failed.log"));
    // A regeneration with another compression leaves the old file behind: remove it.
    for c in [Compression::None, Compression::Gzip, Compression::Xz] {
        if c != compression {
            let _ = fs::remove_file(dir.join(c.file_name()));
        }
    }
    reporter.info(&format!(
        "generated {} rows ({} bytes) in {:.1}s",
        streamed.rows, streamed.bytes, seconds
    ));
    StoredFormat::from_manifest(dir, &m, false, false)
}

/// Alignment of pipeline buffers (what `O_DIRECT` writes need).
const ALIGN: usize = 4096;

/// A heap buffer aligned for direct I/O; `len` bytes of `CHUNK` are valid.
struct AlignedBuf {
    ptr: std::ptr::NonNull<u8>,
    len: usize,
}

// SAFETY: the buffer is plain owned memory; it moves between threads, never aliased mutably.
unsafe impl Send for AlignedBuf {}
unsafe impl Sync for AlignedBuf {}

impl AlignedBuf {
    fn layout() -> std::alloc::Layout {
        std::alloc::Layout::from_size_align(CHUNK, ALIGN).expect("valid layout")
    }
    fn new() -> AlignedBuf {
        // SAFETY: non-zero size; zeroed so every byte is initialised.
        let raw = unsafe { std::alloc::alloc_zeroed(Self::layout()) };
        let ptr = std::ptr::NonNull::new(raw)
            .unwrap_or_else(|| std::alloc::handle_alloc_error(Self::layout()));
        AlignedBuf { ptr, len: 0 }
    }
    fn data(&self) -> &[u8] {
        // SAFETY: `len <= CHUNK` bytes of an allocation we own.
        unsafe { std::slice::from_raw_parts(self.ptr.as_ptr(), self.len) }
    }
    fn space(&mut self) -> &mut [u8] {
        // SAFETY: the whole allocation, exclusively borrowed.
        unsafe { std::slice::from_raw_parts_mut(self.ptr.as_ptr(), CHUNK) }
    }
}

impl Drop for AlignedBuf {
    fn drop(&mut self) {
        // SAFETY: allocated in `new` with the same layout.
        unsafe { std::alloc::dealloc(self.ptr.as_ptr(), Self::layout()) }
    }
}

/// The pipeline: this thread reads the generator's stdout into a few recycled aligned
/// buffers; one worker counts lines and hashes, another compresses and writes, both on the
/// same buffer (shared, not copied). Uncompressed data is written with `O_DIRECT` when the
/// filesystem allows it (`direct`): no copy into the page cache, which on virtual machines is
/// often slower than the disk itself. Memory stays at a few MiB whatever the dataset size.
fn stream(
    mut stdout: std::process::ChildStdout,
    file: File,
    direct: Option<File>,
    compression: Compression,
    layout: RowLayout,
    progress: &dyn Progress,
) -> Result<StreamResult> {
    use std::os::unix::fs::FileExt;
    use std::sync::Arc;
    enlarge_pipe(&stdout);
    let direct = direct.filter(|_| compression == Compression::None);
    let (hash_tx, hash_rx) = mpsc::sync_channel::<Arc<AlignedBuf>>(IN_FLIGHT);
    let (write_tx, write_rx) = mpsc::sync_channel::<Arc<AlignedBuf>>(IN_FLIGHT);
    let (free_tx, free_rx) = mpsc::sync_channel::<AlignedBuf>(IN_FLIGHT + 2);
    for _ in 0..IN_FLIGHT {
        free_tx.send(AlignedBuf::new()).expect("fresh channel");
    }
    // The last stage done with a buffer hands it back to the reader.
    let recycle = |buf: Arc<AlignedBuf>, free: &mpsc::SyncSender<AlignedBuf>| {
        if let Some(v) = Arc::into_inner(buf) {
            let _ = free.send(v);
        }
    };
    std::thread::scope(|scope| {
        let free_h = free_tx.clone();
        let hasher = scope.spawn(move || {
            let mut hash = Sha256::new();
            let mut counter = RowCounter::new(layout);
            let mut bytes = 0u64;
            let mut tail = Vec::new();
            for buf in hash_rx {
                let data = buf.data();
                let n = counter.feed(data);
                hash.update(data);
                bytes += data.len() as u64;
                progress.inc(n);
                progress.set_message(human_bytes(bytes));
                let keep = data.len().min(512);
                tail.clear();
                tail.extend_from_slice(&data[data.len() - keep..]);
                recycle(buf, &free_h);
            }
            (counter, hash.finish_hex(), bytes, tail)
        });
        let free_w = free_tx;
        let writer = scope.spawn(move || -> io::Result<Option<(String, u64)>> {
            let mut offset = 0u64;
            let mut sink = match &direct {
                Some(_) => None,
                None => Some(Sink::new(file.try_clone()?, compression)),
            };
            let mut failed = None;
            for buf in write_rx {
                // After an error keep draining, so the reader never blocks on a full channel.
                if failed.is_none() {
                    let data = buf.data();
                    let r = match (&direct, sink.as_mut()) {
                        (Some(d), _) => {
                            // Only the last buffer can be short: its unaligned tail goes
                            // through the page cache.
                            let aligned = data.len() / ALIGN * ALIGN;
                            d.write_all_at(&data[..aligned], offset).and_then(|_| {
                                file.write_all_at(&data[aligned..], offset + aligned as u64)
                            })
                        }
                        (None, Some(s)) => s.write_all(data),
                        (None, None) => unreachable!("a sink exists without direct I/O"),
                    };
                    offset += data.len() as u64;
                    if let Err(e) = r {
                        failed = Some(e);
                    }
                }
                recycle(buf, &free_w);
            }
            if let Some(e) = failed {
                return Err(e);
            }
            match sink {
                Some(s) => s.finish(),
                None => {
                    file.sync_all()?;
                    Ok(None)
                }
            }
        });
        let read_result = (|| -> Result<()> {
            loop {
                crate::interrupt::check()?;
                let Ok(mut buf) = free_rx.recv() else {
                    return Ok(());
                };
                let mut filled = 0;
                // Fill the buffer so the workers get big, aligned chunks.
                {
                    let space = buf.space();
                    while filled < CHUNK {
                        match stdout.read(&mut space[filled..]) {
                            Ok(0) => break,
                            Ok(n) => filled += n,
                            Err(e) if e.kind() == io::ErrorKind::Interrupted => {
                                crate::interrupt::check()?;
                            }
                            Err(e) => {
                                return Err(Error::failed(format!(
                                    "read the generator output: {e}"
                                )))
                            }
                        }
                    }
                }
                if filled == 0 {
                    return Ok(());
                }
                buf.len = filled;
                let buf = Arc::new(buf);
                if hash_tx.send(Arc::clone(&buf)).is_err() || write_tx.send(buf).is_err() {
                    return Ok(());
                }
                if filled < CHUNK {
                    return Ok(()); // end of stream
                }
            }
        })();
        drop(hash_tx);
        drop(write_tx);
        let (counter, sha256, bytes, tail) = hasher
            .join()
            .map_err(|_| Error::failed("the hashing thread panicked"))?;
        let stored = writer
            .join()
            .map_err(|_| Error::failed("the data writer thread panicked"))?;
        read_result?;
        let stored = stored.map_err(|e| Error::failed(format!("write the dataset: {e}")))?;
        Ok(StreamResult {
            rows: counter.rows(),
            lines: counter.lines,
            sha256,
            bytes,
            stored,
            tail,
        })
    })
}

/// Opens `path` a second time for direct I/O, when the filesystem supports it.
fn open_direct(path: &Path) -> Option<File> {
    #[cfg(target_os = "linux")]
    {
        use std::os::unix::fs::OpenOptionsExt;
        fs::OpenOptions::new()
            .write(true)
            .custom_flags(libc::O_DIRECT)
            .open(path)
            .ok()
    }
    #[cfg(not(target_os = "linux"))]
    {
        let _ = path;
        None
    }
}

/// Asks for a 1 MiB pipe (the default is 64 KiB) so the generator and the reader wake each
/// other 16 times less often. Best effort: the limit may be lower.
fn enlarge_pipe(stdout: &std::process::ChildStdout) {
    #[cfg(target_os = "linux")]
    {
        use std::os::fd::AsRawFd;
        // SAFETY: F_SETPIPE_SZ on a pipe fd we own; failure leaves the pipe as it was.
        unsafe {
            libc::fcntl(
                stdout.as_raw_fd(),
                libc::F_SETPIPE_SZ,
                (1 << 20) as libc::c_int,
            );
        }
    }
    #[cfg(not(target_os = "linux"))]
    let _ = stdout;
}

fn human_bytes(n: u64) -> String {
    const UNITS: [&str; 5] = ["B", "KiB", "MiB", "GiB", "TiB"];
    let mut v = n as f64;
    let mut u = 0;
    while v >= 1024.0 && u < UNITS.len() - 1 {
        v /= 1024.0;
        u += 1;
    }
    format!("{v:.1} {}", UNITS[u])
}

/// JSON of one variant for `inspect` (manifest fields, never the data).
pub fn variant_json(dir: &Path) -> Result<Value> {
    match read_format_manifest(dir)? {
        Some(m) => {
            let mut v = serde_json::to_value(&m)?;
            if let Some(obj) = v.as_object_mut() {
                obj.insert("path".into(), json!(dir));
            }
            Ok(v)
        }
        None => Ok(json!({"path": dir, "status": "missing-manifest"})),
    }
}

/// The completed formats of a dataset (manifests only).
pub fn completed_formats(ds: &Dataset) -> BTreeMap<String, FormatManifest> {
    let mut out = BTreeMap::new();
    for f in ds.format_names().unwrap_or_default() {
        if let Ok(Some(m)) = read_format_manifest(&ds.format_dir(&f)) {
            if m.status == VariantStatus::Completed {
                out.insert(f, m);
            }
        }
    }
    out
}

/// Estimated bytes of a cpu-only influx dataset of `rows` rows stored with `compression` (the
/// disk-space check before generation).
pub fn estimated_bytes(rows: u64, compression: Compression) -> u64 {
    let per_row = match compression {
        Compression::None => 360,
        Compression::Gzip => 90,
        Compression::Xz => 72,
    };
    rows.saturating_mul(per_row)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_size_estimate_scales_with_rows_and_compression() {
        assert_eq!(estimated_bytes(86_400, Compression::None), 86_400 * 360);
        assert!(estimated_bytes(10, Compression::Gzip) < estimated_bytes(10, Compression::None));
        assert_eq!(estimated_bytes(u64::MAX, Compression::None), u64::MAX);
    }

    #[test]
    fn go_durations() {
        assert_eq!(parse_go_duration("10s"), Some(10_000_000_000));
        assert_eq!(parse_go_duration("1m30s"), Some(90_000_000_000));
        assert_eq!(parse_go_duration("1.5h"), Some(5_400_000_000_000));
        assert_eq!(parse_go_duration("100ms"), Some(100_000_000));
        assert_eq!(parse_go_duration("10"), None);
        assert_eq!(parse_go_duration("1.2.3s"), None);
        assert_eq!(parse_go_duration(""), None);
    }

    #[test]
    fn profile_specs_and_rows() {
        let s = Profile::Smoke.spec();
        assert_eq!(s.expected_rows().unwrap(), Some((86_400, 10)));
        let m = Profile::Manual.spec();
        assert_eq!(m.expected_rows().unwrap(), Some((103_680_000, 10)));
    }

    /// Both write paths (page cache and `O_DIRECT` with an unaligned tail) store exactly the
    /// generator's bytes, with the right digest and row count.
    #[test]
    fn stream_paths_store_the_exact_bytes() {
        let dir = tempfile::tempdir().unwrap();
        // 3 MiB + a bit: several full buffers and an unaligned tail.
        let line = "cpu,hostname=host_0 usage_user=1i 1686441600000000000\n";
        let reps = (3 * CHUNK + 777) / line.len() + 1;
        let expected: Vec<u8> = line.repeat(reps).into_bytes();
        let script = format!("yes '{}' | head -n {reps}", line.trim_end());
        for (i, use_direct) in [false, true].into_iter().enumerate() {
            let path = dir.path().join(format!("out{i}"));
            let file = fs::OpenOptions::new()
                .read(true)
                .write(true)
                .create_new(true)
                .open(&path)
                .unwrap();
            let direct = if use_direct { open_direct(&path) } else { None };
            let mut child = Command::new("sh")
                .args(["-c", &script])
                .stdout(Stdio::piped())
                .spawn()
                .unwrap();
            let out = child.stdout.take().unwrap();
            let r = stream(
                out,
                file,
                direct,
                Compression::None,
                RowLayout::INFLUX,
                &crate::output::NoProgress,
            )
            .unwrap();
            assert!(child.wait().unwrap().success());
            assert_eq!(r.rows, reps as u64);
            assert_eq!(r.bytes, expected.len() as u64);
            assert_eq!(r.sha256, crate::hash::sha256_hex(&expected));
            assert!(r.stored.is_none());
            assert_eq!(fs::read(&path).unwrap(), expected, "direct: {use_direct}");
        }
    }

    #[test]
    fn newline_count() {
        assert_eq!(count_newlines(b"a\nb\n\n"), 3);
        assert_eq!(count_newlines(&vec![b'\n'; 200_000]), 200_000);
        for len in [0usize, 1, 31, 32, 8159, 8160, 8161, 100_003] {
            let buf: Vec<u8> = (0..len)
                .map(|i| if i % 7 == 3 { b'\n' } else { b'x' })
                .collect();
            let naive = buf.iter().filter(|&&b| b == b'\n').count() as u64;
            assert_eq!(count_newlines(&buf), naive, "{len}");
        }
    }

    /// The real generator's timescaledb output (head of 30 lines: the 3 header lines, 13
    /// tags/values pairs and a trailing tags line) holds 13 rows, whatever the chunking.
    #[test]
    fn timescaledb_rows_are_counted_on_the_real_fixture() {
        let head = include_bytes!(
            "../../tests/fixtures/tsbs-real-postgresql/data/cpu-timescaledb.head30.txt"
        );
        let text = std::str::from_utf8(head).unwrap();
        assert_eq!(text.lines().count(), 30);
        // Independent of the counter: lines `cpu,` + digit.
        let naive = text
            .lines()
            .filter(|l| {
                l.strip_prefix("cpu,")
                    .is_some_and(|r| r.starts_with(|c: char| c.is_ascii_digit()))
            })
            .count() as u64;
        assert_eq!(naive, 13);
        for chunk in [1usize, 2, 3, 5, 7, 64, 4096, head.len()] {
            let mut c = RowCounter::new(RowLayout::TIMESCALEDB);
            let mut fed = 0;
            for part in head.chunks(chunk) {
                fed += c.feed(part);
            }
            assert_eq!((c.rows(), c.lines, fed), (13, 30, 13), "chunk {chunk}");
        }
        // A complete file has 3 + 2 x rows lines; this head is cut after a tags line.
        assert_eq!(RowLayout::TIMESCALEDB.lines_for(13), 29);
        // The header lines and tags lines are never rows.
        let mut c = RowCounter::new(RowLayout::TIMESCALEDB);
        c.feed(
            b"tags,hostname string\ncpu,usage_user\n\ntags,hostname=host_0\ntags,1\n,1\ncpu,1\n",
        );
        assert_eq!((c.rows(), c.lines), (1, 7));
    }

    #[test]
    fn influx_rows_are_lines() {
        let head =
            include_bytes!("../../tests/fixtures/tsbs-real-postgresql/data/cpu-influx.head30.txt");
        let mut c = RowCounter::new(RowLayout::INFLUX);
        c.feed(head);
        assert_eq!((c.rows(), c.lines), (30, 30));
        assert_eq!(RowLayout::of("influx"), Some(RowLayout::INFLUX));
        assert_eq!(RowLayout::of("timescaledb"), Some(RowLayout::TIMESCALEDB));
        assert_eq!(RowLayout::of("csv"), None);
    }

    /// The layout is recorded in the manifest in words, and read back.
    #[test]
    fn layout_round_trips_through_json() {
        let v = serde_json::to_value(RowLayout::TIMESCALEDB).unwrap();
        assert_eq!(
            v,
            json!({"header_lines": 3, "lines_per_row": 2, "row_line": "<measurement>,<digit>"})
        );
        let back: RowLayout = serde_json::from_value(v).unwrap();
        assert_eq!(back, RowLayout::TIMESCALEDB);
    }
}
