//! Stored formats: one serialization of a dataset in `formats/<format>/` (its data file,
//! `manifest.json` and `generate.log`), the generator that made it, reuse by fingerprint
//! (size, mtime, inode) without reading the data, and verify, which recomputes every checksum
//! and the row count.

use std::collections::BTreeMap;
use std::io::{self, BufReader, Read};
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};
use serde_json::{json, Value};

use crate::environment::TsbsEnv;
use crate::error::{Error, Result};
use crate::hash::Sha256;
use crate::lock::{self, LockOptions};
use crate::manifest::{self, Manifest};
use crate::output::{Event, LeftBy, Progress, Reporter, Unit};

use super::rows::{DataFormat, RowCounter, RowLayout};
use super::spec::generator_args;
use super::store::Dataset;
use super::{CHUNK, GENERATION_WAIT};

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
    /// The error names the path (fs-err).
    pub fn of(path: &Path) -> io::Result<Fingerprint> {
        use std::os::unix::fs::MetadataExt;
        let m = fs_err::metadata(path)?;
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
    /// Built from a dirty checkout: the commit does not say what its source was.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub dirty: bool,
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
    /// Rows, metrics and repeated series per table (absent for cpu-only and in older
    /// manifests: the one table `cpu` holds every row).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tables: Option<std::collections::BTreeMap<String, super::rows::TableRows>>,
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
    /// Taken in from the reference tool's `.benchmarks/` by `data adopt`, not generated here.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub adopted_from: Option<AdoptedFrom>,
}

/// Where an adopted variant came from (`data adopt`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct AdoptedFrom {
    /// The reference's format directory.
    pub path: PathBuf,
    /// `link` (a hard link to the reference's file) or `copy`.
    pub method: String,
    pub adopted_at: String,
    /// Linking or copying plus the full read that checked it.
    pub seconds: f64,
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
    /// Per table, when the manifest records them (see [`StoredFormat::table_rows`]).
    pub tables: Option<std::collections::BTreeMap<String, super::rows::TableRows>>,
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
    /// The rows each table of `uc` holds after a complete load of this file, in the use
    /// case's table order: the recorded per-table rows less the repeated series a
    /// line-protocol server keeps once; without a per-table record, the use case's one table
    /// holds every row.
    pub fn table_rows(&self, uc: &super::UseCase) -> Vec<(String, u64)> {
        match &self.tables {
            Some(t) => {
                let mut out: Vec<(String, u64)> = uc
                    .tables
                    .iter()
                    .map(|x| {
                        (
                            x.name.to_string(),
                            t.get(x.name).map(|r| r.stored()).unwrap_or(0),
                        )
                    })
                    .collect();
                for (name, r) in t {
                    if !out.iter().any(|(n, _)| n == name) {
                        out.push((name.clone(), r.stored()));
                    }
                }
                out
            }
            None => vec![(uc.first_table().to_string(), self.rows)],
        }
    }

    pub(super) fn from_manifest(
        dir: &Path,
        m: &FormatManifest,
        reused: bool,
        verified: bool,
    ) -> Result<Self> {
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
            tables: m.tables.clone(),
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
        let f = fs_err::File::open(&self.path)?;
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
            // Provenance: which build wrote the data (maybe not the one prepared now).
            "generator": {
                "tsbs_commit": self.generator.tsbs_commit,
                "binary_sha256": self.generator.binary_sha256,
                "go_version": self.generator.go_version,
            },
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
    pub dirty: bool,
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
            dirty: env.dirty,
        })
    }

    pub(super) fn record(&self) -> GeneratorRecord {
        GeneratorRecord {
            binary: self.path.clone(),
            binary_sha256: self.sha256.clone(),
            tsbs_repo: self.tsbs_repo.clone(),
            tsbs_commit: self.tsbs_commit.clone(),
            go_version: self.go_version.clone(),
            dirty: self.dirty,
        }
    }
}

impl GeneratorRecord {
    /// Made by `gen`: the same TSBS commit and the same binary (real finding C5: a stand-in's
    /// or another commit's artifacts must not reach the real tools unnoticed).
    pub fn same_as(&self, gen: &Generator) -> bool {
        self.tsbs_commit == gen.tsbs_commit && self.binary_sha256 == gen.sha256
    }

    /// Generated from the same source as `gen` would: the same TSBS commit, from clean
    /// checkouts. Another build of it (another Go, another state root, which embeds its
    /// paths) generates the same data (trial 2 N2).
    pub fn same_source(&self, gen: &Generator) -> bool {
        self.tsbs_commit == gen.tsbs_commit
            && (self.binary_sha256 == gen.sha256 || (!self.dirty && !gen.dirty))
    }
}

/// Exit 4 when `recorded` is not from the source of the prepared generator `gen` (another TSBS
/// commit, or a dirty checkout's build that is not this binary); `what` names the artifact.
/// Another build of the same commit is reused, and the difference said: a dataset is what it
/// contains, and its manifest keeps the generator that wrote it as provenance.
pub fn check_generator(
    what: &str,
    recorded: &GeneratorRecord,
    gen: &Generator,
    hint: String,
    reporter: &dyn Reporter,
) -> Result<()> {
    if recorded.same_as(gen) {
        return Ok(());
    }
    let dirty = |d: bool| if d { ", dirty checkout" } else { "" };
    if recorded.same_source(gen) {
        reporter.event(&Event::OtherBuildSameCommit {
            what: what.to_string(),
            commit: recorded.tsbs_commit.to_string(),
            recorded_sha256: recorded.binary_sha256.to_string(),
            recorded_go: recorded.go_version.to_string(),
            prepared_sha256: gen.sha256.to_string(),
            prepared_go: gen.go_version.to_string(),
        });
        return Ok(());
    }
    Err(Error::integrity(format!(
        "{what} was made by another generator (TSBS commit {}{}, binary SHA-256 {}) than the \
         prepared one (TSBS commit {}{}, binary SHA-256 {})",
        recorded.tsbs_commit,
        dirty(recorded.dirty),
        recorded.binary_sha256,
        gen.tsbs_commit,
        dirty(gen.dirty),
        gen.sha256
    ))
    .with_hint(hint))
}

/// "use --format a or --format b": the formats the products declare (`known`).
pub(super) fn use_formats(known: &[DataFormat]) -> String {
    let names: Vec<&str> = known.iter().map(|f| f.name).collect();
    format!("use --format {}", names.join(" or --format "))
}

/// Checks a format name (§1.4 grammar); `known` names the good ones in the hint.
pub fn validate_format(format: &str, known: &[DataFormat]) -> Result<()> {
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
        .with_hint(use_formats(known)));
    }
    Ok(())
}

/// The row layout a variant's manifest records, or its format's (`known`: what the product
/// that loads it declares) for older manifests. A recorded layout other than the format's own
/// (an edited manifest) is an integrity error, so the recount cannot be steered.
fn manifest_layout(m: &FormatManifest, known: Option<RowLayout>) -> Result<RowLayout> {
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
    match (m.layout, known) {
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

/// Removes what a killed generation left in a format directory (the staged data file, its
/// log, the generator's working directory), whenever a command touches it (trial-run #15).
pub fn sweep_leftovers(dir: &Path, reporter: &dyn Reporter) {
    for p in crate::fsutil::sweep_staging(dir, &["gen", "cwd", super::adopt::STAGING_TAG]) {
        reporter.event(&Event::RemovedLeftover {
            path: p,
            left_by: LeftBy::Generation,
        });
    }
}

/// [`sweep_leftovers`] in every format directory of `dataset` (`data list`, `data verify`).
pub fn sweep_dataset_leftovers(dataset: &Dataset, reporter: &dyn Reporter) {
    for f in dataset.format_names().unwrap_or_default() {
        sweep_leftovers(&dataset.format_dir(&f), reporter);
    }
}

/// Reuse without reading: status, file presence, size and fingerprint. `None` when the
/// fingerprint changed (the caller verifies under the lock). Size mismatch is integrity.
pub(super) fn reuse_fast(dir: &Path, m: &FormatManifest) -> Result<Option<StoredFormat>> {
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
        Err(e) => return Err(e.into()),
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
pub(super) fn reuse_checked(
    dir: &Path,
    m: &FormatManifest,
    layout: RowLayout,
    reporter: &dyn Reporter,
) -> Result<StoredFormat> {
    if let Some(sf) = reuse_fast(dir, m)? {
        return Ok(sf);
    }
    reporter.event(&Event::VerifyingChanged {
        path: dir.join(m.file.as_deref().unwrap_or("data")),
    });
    let mut sf = verify_variant(dir, m, Some(layout), reporter)?;
    sf.reused = true;
    Ok(sf)
}

/// Recomputes every checksum of a completed variant (stored bytes; for a compressed file also
/// the uncompressed stream and its row count). On success the fingerprint is refreshed.
/// Must be called under the variant lock.
fn verify_variant(
    dir: &Path,
    m: &FormatManifest,
    known: Option<RowLayout>,
    reporter: &dyn Reporter,
) -> Result<StoredFormat> {
    let mut sf = StoredFormat::from_manifest(dir, m, true, true)?;
    let layout = manifest_layout(m, known)?;
    let before = Fingerprint::of(&sf.path)?;
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
pub(super) fn sha256_and_rows(
    path: &Path,
    layout: RowLayout,
    progress: &dyn Progress,
) -> Result<(String, u64, u64)> {
    let mut file = fs_err::File::open(path)?;
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
                Err(e) => return Err(e.into()),
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
/// What `data verify` checks of `dataset.json` without reading the data: the spec derives the
/// id (an automatic one), and every completed variant was generated from it. A bench run
/// checks this first, so an edited spec never makes a query set (trial 2 N4, #8).
pub fn check_stored_spec(dataset: &Dataset) -> Result<()> {
    if !dataset.stored {
        return Ok(());
    }
    for (f, m) in completed_formats(dataset) {
        check_spec_identity(dataset, &f, &m)?;
    }
    if looks_auto_id(&dataset.id) && dataset.spec.auto_id() != dataset.id {
        check_spec_identity_id_only(dataset)?;
    }
    Ok(())
}

/// The id half of [`check_spec_identity`], for a dataset without a completed variant.
fn check_spec_identity_id_only(dataset: &Dataset) -> Result<()> {
    Err(Error::integrity(format!(
        "dataset {} does not match its stored spec: the spec's own id is {}, not {}",
        dataset.id,
        dataset.spec.auto_id(),
        dataset.id
    ))
    .with_hint(format!(
        "{} was changed after the dataset was created; restore it, or regenerate the dataset with `tsbsctl data generate --regenerate`",
        dataset.dir.join("dataset.json").display()
    )))
}

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

/// `<slug>-s<digits>-<12 lowercase hex>`: the shape of
/// [`DatasetSpec::auto_id`](super::DatasetSpec::auto_id) (a chosen `--dataset-id` such as
/// `tiny` is not derived from the spec).
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
    let f = fs_err::File::open(&sf.path)?;
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
    io::copy(&mut tee, &mut io::sink())?;
    Ok((
        tee.hash.finish_hex(),
        tee.bytes,
        unc.finish_hex(),
        unc_bytes,
        Some(counter.rows()),
    ))
}

/// Verifies the variants of a dataset (`format` or all), returning one result per variant.
/// `known`: the formats the products declare (their row layouts judge the recorded ones).
pub fn verify(
    dataset: &Dataset,
    format: Option<&str>,
    known: &[DataFormat],
    command: &str,
    reporter: &dyn Reporter,
) -> Result<Vec<StoredFormat>> {
    let formats = match format {
        Some(f) => {
            validate_format(f, known)?;
            vec![f.to_string()]
        }
        None => dataset.format_names()?,
    };
    if formats.is_empty() {
        let mut names = known.iter().map(|k| k.name);
        let first = names.next().unwrap_or("<format>");
        let rest: Vec<&str> = names.collect();
        let others = if rest.is_empty() {
            String::new()
        } else {
            format!(" (or {})", rest.join(", "))
        };
        return Err(
            Error::invalid(format!("dataset {} has no format variants", dataset.id)).with_hint(
                format!("generate one with `tsbsctl data generate --format {first}`{others}"),
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
        let layout = known.iter().find(|k| k.name == f).map(|k| k.layout);
        let mut sf = verify_variant(&dir, &m, layout, reporter)?;
        sf.reused = true;
        out.push(sf);
    }
    Ok(out)
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
