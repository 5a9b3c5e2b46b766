//! `tsbsctl data adopt`: take in the datasets the reference tool left in `.benchmarks/datasets`
//! (benchmark.md §1.4), read-only, so a 36 GB dataset generated there is not generated again.
//!
//! The reference derives dataset ids as tsbsctl does and keeps the same layout
//! (`<id>/dataset.json`, `formats/<format>/{data, manifest.json, generate.log}`), but its
//! variant manifest has no row count, no fingerprint and names the generator by the git
//! revision of its TSBS checkout. Adoption checks everything a generation would have given
//! (the spec derives the id, the file's size and SHA-256 are the recorded ones, its rows are
//! the ones the spec makes), then publishes a tsbsctl variant beside the reference's: the data
//! hard-linked when both sit on one filesystem (no copy, the source untouched), else copied;
//! staged under a hidden name, then renamed, as generation does.

use std::fs;
use std::io::{self, Read, Write};
use std::path::{Path, PathBuf};

use serde::Serialize;
use serde_json::Value;

use crate::error::{Error, Result};
use crate::hash::Sha256;
use crate::lock::{self, LockOptions};
use crate::manifest;
use crate::output::{Event, Progress, Reporter, Unit};
use crate::paths::Root;

use super::format::read_format_manifest;
use super::rows::{DataFormat, RowCounter};
use super::spec::{DatasetSpec, ExpectedRows, SpecOverrides};
use super::store::Dataset;
use super::usecase::UseCase;
use super::{
    Compression, Digest, Fingerprint, FormatManifest, GeneratorRecord, VariantStatus,
    GENERATION_WAIT,
};

/// The staging tag of an adoption (swept with the generation's leftovers).
pub(super) const STAGING_TAG: &str = "adopt";

/// How the data reaches tsbsctl's dataset root.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum AdoptMethod {
    /// A hard link: no copy, the reference's file is not changed (only its link count).
    Link,
    Copy,
}

/// One variant taken in.
#[derive(Debug, Clone, Serialize)]
pub struct Adopted {
    pub dataset_id: String,
    pub format: String,
    pub source: PathBuf,
    pub path: PathBuf,
    pub rows: u64,
    pub bytes: u64,
    pub sha256: String,
    pub tsbs_commit: String,
    pub method: AdoptMethod,
}

/// Something found and left where it was, with the reason.
#[derive(Debug, Clone, Serialize)]
pub struct Skipped {
    pub source: PathBuf,
    pub reason: String,
    /// The data differs from what its manifest says (the command then exits 4).
    pub integrity: bool,
}

#[derive(Debug, Default, Serialize)]
pub struct AdoptReport {
    pub adopted: Vec<Adopted>,
    /// Already in tsbsctl's root with the same SHA-256.
    pub present: Vec<Adopted>,
    pub skipped: Vec<Skipped>,
}

/// The dataset directories under `source`: a `.benchmarks` directory, its `datasets`
/// directory, or one dataset (a directory holding `dataset.json`). Bad input when none.
pub fn find_datasets(source: &Path) -> Result<Vec<PathBuf>> {
    let meta = fs::metadata(source).map_err(|e| {
        Error::invalid(format!("cannot read {}: {e}", source.display())).with_hint(
            "give the reference's .benchmarks directory, its datasets directory, or one dataset's directory",
        )
    })?;
    if !meta.is_dir() {
        return Err(Error::invalid(format!("{} is not a directory", source.display()))
            .with_hint("give the reference's .benchmarks directory, its datasets directory, or one dataset's directory"));
    }
    if source.join("dataset.json").is_file() {
        return Ok(vec![source.to_path_buf()]);
    }
    let root = if source.join("datasets").is_dir() {
        source.join("datasets")
    } else {
        source.to_path_buf()
    };
    let mut found: Vec<PathBuf> = fs_err::read_dir(&root)?
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.join("dataset.json").is_file())
        .collect();
    found.sort();
    if found.is_empty() {
        return Err(Error::invalid(format!(
            "no dataset (a directory with dataset.json) under {}",
            root.display()
        ))
        .with_hint("give the reference's .benchmarks directory, its datasets directory, or one dataset's directory"));
    }
    Ok(found)
}

/// Adopts every dataset under `source` into `root` (see the module documentation).
pub fn adopt(
    root: &Root,
    source: &Path,
    copy: bool,
    known: &[DataFormat],
    command: &str,
    reporter: &dyn Reporter,
) -> Result<AdoptReport> {
    let datasets = find_datasets(source)?;
    let target_root = root.datasets();
    // The reference's own directory is not a place to write into: refuse to adopt into it.
    if let (Ok(a), Ok(b)) = (
        fs::canonicalize(&target_root),
        fs::canonicalize(datasets[0].parent().unwrap_or(source)),
    ) {
        if a == b {
            return Err(Error::invalid(format!(
                "{} is already tsbsctl's dataset root; nothing to adopt",
                a.display()
            ))
            .with_hint("use it as it is (--dataset-root), or adopt into another root"));
        }
    }
    let mut report = AdoptReport::default();
    for dir in datasets {
        // What is wrong with a source is a skip with its reason (inside); an error here is
        // tsbsctl's own root failing (a held lock, a full disk) and stops everything.
        adopt_dataset(root, &dir, copy, known, command, reporter, &mut report)?;
    }
    Ok(report)
}

/// `dataset.json` of the reference: `schema_version` 1, `dataset_id`, the six-field `spec`.
fn read_reference_dataset(dir: &Path) -> std::result::Result<(String, DatasetSpec), String> {
    let path = dir.join("dataset.json");
    let text =
        fs::read_to_string(&path).map_err(|e| format!("cannot read {}: {e}", path.display()))?;
    let v: Value =
        serde_json::from_str(&text).map_err(|e| format!("{} is not JSON: {e}", path.display()))?;
    if v.get("schema_version").and_then(Value::as_u64) != Some(1) {
        return Err(format!("{} has no schema_version 1", path.display()));
    }
    let id = v
        .get("dataset_id")
        .and_then(Value::as_str)
        .ok_or_else(|| format!("{} has no dataset_id", path.display()))?
        .to_string();
    let spec: DatasetSpec = serde_json::from_value(v.get("spec").cloned().unwrap_or(Value::Null))
        .map_err(|e| format!("{} has no valid spec: {e}", path.display()))?;
    Ok((id, spec))
}

#[allow(clippy::too_many_arguments)]
fn adopt_dataset(
    root: &Root,
    dir: &Path,
    copy: bool,
    known: &[DataFormat],
    command: &str,
    reporter: &dyn Reporter,
    report: &mut AdoptReport,
) -> Result<()> {
    let skip = |report: &mut AdoptReport, source: &Path, reason: String, integrity: bool| {
        report.skipped.push(Skipped {
            source: source.to_path_buf(),
            reason,
            integrity,
        })
    };
    let (id, spec) = match read_reference_dataset(dir) {
        Ok(x) => x,
        Err(reason) => {
            skip(report, dir, reason, false);
            return Ok(());
        }
    };
    if let Err(e) = crate::ids::validate_id("dataset_id", &id).and_then(|_| spec.validate()) {
        skip(report, dir, e.message, false);
        return Ok(());
    }
    // An automatic id must be the spec's own: the ids derive the same way in both tools.
    let auto = spec.auto_id();
    if looks_auto(&id) && id != auto {
        skip(
            report,
            dir,
            format!("its id {id} does not derive from its spec (the spec's own id is {auto})"),
            true,
        );
        return Ok(());
    }
    let (Ok(expected), Ok(use_case)) = (spec.expected_rows(), spec.use_case()) else {
        skip(
            report,
            dir,
            format!(
                "use case {}: tsbsctl cannot tell how many rows its data must hold",
                spec.use_case
            ),
            false,
        );
        return Ok(());
    };
    // The spec as tsbsctl stores it; a dataset of that id with another spec is not this one.
    let overrides = SpecOverrides {
        profile: None,
        use_case: Some(spec.use_case.clone()),
        start: Some(spec.start.clone()),
        end: Some(spec.end.clone()),
        scale: Some(spec.scale as i64),
        seed: Some(spec.seed),
        log_interval: Some(spec.log_interval.clone()),
    };
    let ours = match Dataset::resolve(root, Some(&id), &overrides) {
        Ok(d) => d,
        Err(e) => {
            skip(
                report,
                dir,
                format!(
                    "tsbsctl already has a dataset {id} with other settings: {}",
                    e.message
                ),
                false,
            );
            return Ok(());
        }
    };
    let formats_dir = dir.join("formats");
    let mut names: Vec<String> = match fs::read_dir(&formats_dir) {
        Ok(rd) => rd
            .flatten()
            .filter(|e| e.path().is_dir())
            .map(|e| e.file_name().to_string_lossy().into_owned())
            .collect(),
        Err(_) => Vec::new(),
    };
    names.sort();
    if names.is_empty() {
        skip(
            report,
            dir,
            "it has no generated format (only dataset.json)".into(),
            false,
        );
        return Ok(());
    }
    let mut ours = Some(ours);
    for name in names {
        let src_dir = formats_dir.join(&name);
        let Some(fmt) = known.iter().find(|f| f.name == name) else {
            let names: Vec<&str> = known.iter().map(|f| f.name).collect();
            skip(
                report,
                &src_dir,
                format!(
                    "format {name} is not one a tsbsctl product loads ({})",
                    names.join(", ")
                ),
                false,
            );
            continue;
        };
        let refm = match ReferenceVariant::read(&src_dir, &name) {
            Ok(m) => m,
            Err(reason) => {
                skip(report, &src_dir, reason, false);
                continue;
            }
        };
        // dataset.json first (a dataset without a variant is a valid state), then the variant.
        let (ds, _) = ours
            .take()
            .expect("kept")
            .ensure_stored(command, reporter)?;
        let result = adopt_variant(
            &ds, &refm, fmt, &expected, use_case, copy, command, reporter,
        );
        ours = Some(ds);
        match result? {
            VariantOutcome::Adopted(a) => {
                reporter.event(&Event::Adopted {
                    dataset: a.dataset_id.to_string(),
                    format: a.format.to_string(),
                    rows: a.rows,
                    bytes: a.bytes,
                    hard_link: a.method == AdoptMethod::Link,
                });
                report.adopted.push(a)
            }
            VariantOutcome::Present(a) => report.present.push(a),
            VariantOutcome::Skipped(s) => report.skipped.push(s),
        }
    }
    Ok(())
}

/// `<slug>-s<digits>-<12 hex>`: the shape of an automatic id.
fn looks_auto(id: &str) -> bool {
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

/// The reference's completed variant manifest (benchmark.md §1.4).
struct ReferenceVariant {
    dir: PathBuf,
    data: PathBuf,
    bytes: u64,
    sha256: String,
    started_at: String,
    finished_at: String,
    generator: GeneratorRecord,
    /// The generator command, from the `$ ...` line that heads `generate.log`.
    command: Vec<String>,
}

impl ReferenceVariant {
    fn read(dir: &Path, format: &str) -> std::result::Result<ReferenceVariant, String> {
        let path = dir.join("manifest.json");
        let text = fs::read_to_string(&path)
            .map_err(|e| format!("cannot read {}: {e}", path.display()))?;
        let v: Value = serde_json::from_str(&text)
            .map_err(|e| format!("{} is not JSON: {e}", path.display()))?;
        let s = |k: &str| v.get(k).and_then(Value::as_str);
        if s("status") != Some("completed") {
            return Err(format!(
                "the reference did not complete it (status {})",
                s("status").unwrap_or("missing")
            ));
        }
        if s("format") != Some(format) {
            return Err(format!("{} names another format", path.display()));
        }
        let artifact = s("artifact").unwrap_or("data");
        if artifact.contains('/') || artifact.starts_with('.') {
            return Err(format!(
                "{} names an artifact outside its directory",
                path.display()
            ));
        }
        let bytes = v
            .get("bytes")
            .and_then(Value::as_u64)
            .ok_or_else(|| format!("{} has no byte count", path.display()))?;
        let sha256 = s("sha256")
            .filter(|h| {
                h.len() == 64
                    && h.bytes()
                        .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b))
            })
            .ok_or_else(|| format!("{} has no SHA-256", path.display()))?
            .to_string();
        let g = v.get("generator").cloned().unwrap_or(Value::Null);
        let gs = |k: &str| g.get(k).and_then(Value::as_str);
        // Without the commit nobody can say which TSBS wrote the data, and tsbsctl reuses
        // data only from the commit it runs (trial 2 N2).
        let commit = gs("git_revision")
            .filter(|c| c.len() == 40 && c.bytes().all(|b| b.is_ascii_hexdigit()))
            .ok_or_else(|| {
                "its manifest does not say which TSBS commit generated it (generator.git_revision)"
                    .to_string()
            })?
            .to_lowercase();
        let go_version = match g.get("go_toolchain") {
            Some(Value::String(t)) => t.clone(),
            Some(Value::Object(o)) => o
                .get("version")
                .and_then(Value::as_str)
                .unwrap_or("unknown")
                .to_string(),
            _ => "unknown".to_string(),
        };
        // As recorded: relative to the reference's checkout, wherever that was.
        let binary = PathBuf::from(gs("binary").unwrap_or("bin/tsbs_generate_data"));
        let command = fs::read_to_string(dir.join("generate.log"))
            .ok()
            .and_then(|log| {
                log.lines().find_map(|l| {
                    l.strip_prefix("$ ")
                        .map(|c| c.split_whitespace().map(String::from).collect())
                })
            })
            .unwrap_or_default();
        Ok(ReferenceVariant {
            dir: dir.to_path_buf(),
            data: dir.join(artifact),
            bytes,
            sha256,
            started_at: s("started_at").unwrap_or("").to_string(),
            finished_at: s("finished_at").unwrap_or("").to_string(),
            generator: GeneratorRecord {
                binary,
                binary_sha256: gs("binary_sha256").unwrap_or("unknown").to_string(),
                tsbs_repo: format!(
                    "{} (the reference tool's checkout)",
                    crate::sources::SourceKey::TSBS_REPO.default_value()
                ),
                tsbs_commit: commit,
                go_version,
                dirty: false,
            },
            command,
        })
    }
}

enum VariantOutcome {
    Adopted(Adopted),
    Present(Adopted),
    Skipped(Skipped),
}

#[allow(clippy::too_many_arguments)]
fn adopt_variant(
    ds: &Dataset,
    refm: &ReferenceVariant,
    fmt: &DataFormat,
    expected: &ExpectedRows,
    use_case: &'static UseCase,
    copy: bool,
    command: &str,
    reporter: &dyn Reporter,
) -> Result<VariantOutcome> {
    let integrity = |reason: String| {
        Ok(VariantOutcome::Skipped(Skipped {
            source: refm.dir.clone(),
            reason,
            integrity: true,
        }))
    };
    let size = match fs::metadata(&refm.data) {
        Ok(m) => m.len(),
        Err(e) => {
            return integrity(format!(
                "its data {} cannot be read: {e}",
                refm.data.display()
            ))
        }
    };
    if size != refm.bytes {
        return integrity(format!(
            "its data has {size} bytes, its manifest records {}",
            refm.bytes
        ));
    }
    let dir = ds.format_dir(fmt.name);
    super::format::sweep_leftovers(&dir, reporter);
    fs_err::create_dir_all(&dir)?;
    let _guard = lock::lock_dir(
        &dir,
        &format!("dataset {}/{}", ds.id, fmt.name),
        command,
        Some("adopting data"),
        &LockOptions {
            wait: Some(GENERATION_WAIT),
            hold_token: None,
        },
        reporter,
    )?;
    let adopted = |method: AdoptMethod, rows: u64| Adopted {
        dataset_id: ds.id.clone(),
        format: fmt.name.to_string(),
        source: refm.data.clone(),
        path: dir.join(Compression::None.file_name()),
        rows,
        bytes: refm.bytes,
        sha256: refm.sha256.clone(),
        tsbs_commit: refm.generator.tsbs_commit.clone(),
        method,
    };
    if let Some(m) = read_format_manifest(&dir)?.filter(|m| m.status == VariantStatus::Completed) {
        let same = m.uncompressed.as_ref().map(|d| d.sha256.as_str()) == Some(refm.sha256.as_str());
        if same {
            return Ok(VariantOutcome::Present(adopted(
                AdoptMethod::Link,
                m.rows.unwrap_or(0),
            )));
        }
        return Ok(VariantOutcome::Skipped(Skipped {
            source: refm.dir.clone(),
            reason: format!(
                "tsbsctl already holds dataset {}/{} with other data (SHA-256 {}); it is left as it is",
                ds.id,
                fmt.name,
                m.uncompressed.map(|d| d.sha256).unwrap_or_default()
            ),
            integrity: false,
        }));
    }
    let target = dir.join(Compression::None.file_name());
    let staging = crate::fsutil::staging_path(&target, STAGING_TAG)?;
    let started_at = manifest::now_rfc3339();
    let t0 = std::time::Instant::now();
    let progress = reporter.progress(
        &format!("adopting {}/{}", ds.id, fmt.name),
        Some(refm.bytes),
        Unit::Bytes,
    );
    // A hard link costs nothing and leaves the source's bytes alone; the data is still read
    // once, to check it is what its manifest says.
    let method = if !copy && fs::hard_link(&refm.data, &staging).is_ok() {
        AdoptMethod::Link
    } else {
        AdoptMethod::Copy
    };
    // Several tables, or rows only the file knows: count each table as generation does.
    let counter = if use_case.tables.len() > 1 || !use_case.fixed_rows {
        RowCounter::with_tables(fmt.layout, use_case.device_tag)
    } else {
        RowCounter::new(fmt.layout)
    };
    let checked = match method {
        AdoptMethod::Link => read_counting(&staging, None, counter, progress.as_ref()),
        AdoptMethod::Copy => read_counting(&refm.data, Some(&staging), counter, progress.as_ref()),
    };
    progress.finish();
    let (sha, bytes, counter) = match checked {
        Ok(x) => x,
        Err(e) => {
            let _ = fs::remove_file(&staging);
            return Err(e);
        }
    };
    let bad = if bytes != refm.bytes || sha != refm.sha256 {
        Some(format!(
            "its data does not match its manifest (SHA-256 {sha}, the manifest records {})",
            refm.sha256
        ))
    } else if expected.exact && counter.rows() != expected.rows {
        Some(format!(
            "its data holds {} rows; its spec makes {}",
            counter.rows(),
            expected.rows
        ))
    } else if counter.rows() > expected.rows {
        Some(format!(
            "its data holds {} rows; its spec makes at most {}",
            counter.rows(),
            expected.rows
        ))
    } else {
        None
    };
    if let Some(reason) = bad {
        let _ = fs::remove_file(&staging);
        return integrity(reason);
    }
    let rows = counter.rows();
    let tables = counter.table_rows();
    crate::fsutil::rename_durable(&staging, &target)?;
    let fp = Fingerprint::of(&target)?;
    let digest = Digest { bytes, sha256: sha };
    // The reference's generate.log goes along (its header is the command it ran).
    let log = dir.join("generate.log");
    let mut text = fs::read(refm.dir.join("generate.log")).unwrap_or_default();
    text.extend_from_slice(
        format!(
            "# adopted by tsbsctl {} on {} from {} ({})\n",
            crate::VERSION,
            manifest::now_rfc3339(),
            refm.dir.display(),
            if method == AdoptMethod::Link {
                "hard link"
            } else {
                "copy"
            }
        )
        .as_bytes(),
    );
    crate::fsutil::write_atomic(&log, &text)?;
    let m = FormatManifest {
        dataset_id: ds.id.clone(),
        format: fmt.name.to_string(),
        status: VariantStatus::Completed,
        compression: Some(Compression::None),
        file: Some(Compression::None.file_name().to_string()),
        rows: Some(rows),
        metrics: Some(match &tables {
            Some(t) => t.values().map(|r| r.metrics).sum(),
            None => rows * use_case.tables[0].metrics,
        }),
        tables,
        layout: Some(fmt.layout),
        uncompressed: Some(digest.clone()),
        stored: Some(digest),
        fingerprint: Some(fp),
        generator: refm.generator.clone(),
        command: refm.command.clone(),
        started_at: refm.started_at.clone(),
        finished_at: refm.finished_at.clone(),
        generate_seconds: 0.0,
        verified_at: Some(started_at),
        log: "generate.log".into(),
        error: None,
        tool_version: crate::VERSION.to_string(),
        adopted_from: Some(super::format::AdoptedFrom {
            path: refm.dir.clone(),
            method: match method {
                AdoptMethod::Link => "link".into(),
                AdoptMethod::Copy => "copy".into(),
            },
            adopted_at: manifest::now_rfc3339(),
            seconds: t0.elapsed().as_secs_f64(),
        }),
    };
    manifest::write(&dir.join("manifest.json"), &m)?;
    Ok(VariantOutcome::Adopted(adopted(method, rows)))
}

/// Reads `src` once, hashing and counting rows, and copies it to `dst` (created new) when
/// one is given.
fn read_counting(
    src: &Path,
    dst: Option<&Path>,
    mut counter: RowCounter,
    progress: &dyn Progress,
) -> Result<(String, u64, RowCounter)> {
    let mut input = fs_err::File::open(src)?;
    let mut out = match dst {
        Some(dst) => Some(
            fs_err::OpenOptions::new()
                .write(true)
                .create_new(true)
                .open(dst)?,
        ),
        None => None,
    };
    let mut hash = Sha256::new();
    let mut buf = vec![0u8; crate::hash::READ_BUF];
    let mut size = 0u64;
    loop {
        crate::interrupt::check()?;
        let n = match input.read(&mut buf) {
            Ok(0) => break,
            Ok(n) => n,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(e.into()),
        };
        hash.update(&buf[..n]);
        counter.feed(&buf[..n]);
        if let Some(out) = out.as_mut() {
            out.write_all(&buf[..n])?;
        }
        size += n as u64;
        progress.inc(n as u64);
    }
    if let Some(out) = out {
        out.sync_all()?;
    }
    Ok((hash.finish_hex(), size, counter))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn automatic_ids_are_recognised() {
        assert!(looks_auto("cpu-only-s10-c3a7d38f3a2a"));
        assert!(!looks_auto("tiny"));
        assert!(!looks_auto("cpu-only-s10-c3a7d38f3a2"));
    }
}
