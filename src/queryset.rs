//! Query sets shared by both benchmarks (benchmark.md §2.3-2.6).
//!
//! A query set is one `tsbs_generate_queries` file per query type for one logical dataset and
//! one query format (`greptime` or `influx3`). Its id is derived from its spec exactly as the
//! reference derives it, and it lives in
//! `<root>/queries/<dataset-id>/<format>/<query-set-id>/{manifest.json, queries/<type>.dat}`.
//!
//! API for the benchmark phases:
//! * [`resolve_counts`]: `--query-type` / `--queries` / `--query-count` → the sorted
//!   type → count map, with the reference's exact validation messages;
//! * [`ensure_query_set`] → [`QuerySet`]: reuses a published set (manifest, membership, sizes
//!   and fingerprints; full hashing only when something looks off or on request) or generates
//!   one (one generator per type, in parallel up to the core count) and publishes it with one
//!   directory rename; the loser of a publish race validates and reuses the winner's set.
//! * [`verify_query_set`]: full hashing of every file.

use std::collections::{BTreeMap, BTreeSet};
use std::fs;
use std::io::{self, BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::Mutex;

use serde::{Deserialize, Serialize};
use serde_json::{json, Value};

use crate::dataset::{Dataset, Fingerprint, Generator, GeneratorRecord, Profile};
use crate::error::{Detail, Error, Result};
use crate::manifest;
use crate::output::{Event, LeftBy, Reporter};
use crate::paths::Root;

/// The fifteen devops query types, sorted (the use case's list).
pub const QUERY_TYPES: [&str; 15] = crate::dataset::DEVOPS_QUERY_TYPES;

/// The query format a benchmark uses. Each product names its own (`QueryFormat::Greptime`
/// is defined in `product/greptimedb.rs`): this module knows none of them.
#[derive(Debug, Clone, Copy)]
pub struct QueryFormat {
    /// `tsbs_generate_queries --format` and the directory under the dataset's query sets.
    pub name: &'static str,
    /// The manifest kind (§2.5), e.g. `greptimedb-query-set`.
    pub manifest_kind: &'static str,
    /// Estimated bytes of one generated query (disk-space checks).
    pub bytes_per_query: u64,
    /// `tsbs_generate_queries` flags after `--format` (part of the set's identity when any).
    pub generator_flags: &'static [&'static str],
    /// The query use cases (`--use-case`) the fork's generator implements for this format
    /// (`cmd/tsbs_generate_queries/databases/<format>`: `NewDevops`, `NewIoT`).
    pub use_cases: &'static [&'static str],
    /// Query types the format's generator writes but the target cannot run, with the reason
    /// (refused before anything is generated or run).
    pub refused_types: &'static [(&'static str, &'static str)],
    /// How the runner that reads this format prints the answers (`--print-responses`), for
    /// `--check-answers`; `None`: tsbsctl cannot read them (answers not checked).
    pub answers: Option<crate::answers::PrintFormat>,
}

impl PartialEq for QueryFormat {
    fn eq(&self, other: &QueryFormat) -> bool {
        self.name == other.name
    }
}
impl Eq for QueryFormat {}

impl Serialize for QueryFormat {
    fn serialize<S: serde::Serializer>(&self, s: S) -> std::result::Result<S::Ok, S::Error> {
        s.serialize_str(self.name)
    }
}

impl QueryFormat {
    pub fn as_str(self) -> &'static str {
        self.name
    }
    /// The manifest kind (§2.5).
    pub fn kind(self) -> &'static str {
        self.manifest_kind
    }
}

/// The profile's default count for a type (§2.1).
pub fn profile_count(profile: Profile, query_type: &str) -> u64 {
    match profile {
        Profile::Smoke => 10,
        Profile::Manual => match query_type {
            "lastpoint" => 10,
            "double-groupby-1"
            | "double-groupby-5"
            | "double-groupby-all"
            | "groupby-orderby-limit"
            | "high-cpu-all" => 50,
            _ => 100,
        },
    }
}

/// The profile's whole query workload.
pub fn profile_counts(profile: Profile) -> BTreeMap<String, u64> {
    QUERY_TYPES
        .iter()
        .map(|t| (t.to_string(), profile_count(profile, t)))
        .collect()
}

/// Combines `--query-type T` (repeatable), `--queries N` and `--query-count T=N` (repeatable)
/// as the reference does (§2.3). `base` is the workload being reopened (a run's stored counts);
/// `None` means the profile's full workload.
pub fn resolve_counts(
    profile: Profile,
    base: Option<&BTreeMap<String, u64>>,
    query_types: &[String],
    queries: Option<i64>,
    query_counts: &[String],
) -> Result<BTreeMap<String, u64>> {
    resolve_counts_in(
        &QUERY_TYPES,
        profile,
        base,
        query_types,
        queries,
        query_counts,
    )
}

/// [`resolve_counts`] for a use case's query types (`use_case`'s `query_types`; the
/// profile's full workload is all of them).
pub fn resolve_counts_in(
    types: &[&str],
    profile: Profile,
    base: Option<&BTreeMap<String, u64>>,
    query_types: &[String],
    queries: Option<i64>,
    query_counts: &[String],
) -> Result<BTreeMap<String, u64>> {
    let bad = |msg: String| {
        Error::invalid(msg).with_hint(format!(
            "query types: {}; counts are positive integers (--query-count {}=10)",
            types.join(", "),
            types.first().copied().unwrap_or("lastpoint")
        ))
    };
    if let Some(q) = queries {
        if q <= 0 {
            return Err(Error::invalid("--queries must be positive")
                .with_hint("give the number of queries per type, e.g. --queries 10"));
        }
    }
    let mut overrides: BTreeMap<String, u64> = BTreeMap::new();
    for raw in query_counts {
        let (t, c) = match raw.split_once('=') {
            Some((t, c)) if !t.trim().is_empty() && !c.trim().is_empty() => (t.trim(), c.trim()),
            _ => return Err(bad("query count must use QUERY_TYPE=COUNT syntax".into())),
        };
        if !types.contains(&t) {
            return Err(bad(format!("unsupported query type: {t}")));
        }
        let n: i64 = c
            .parse()
            .map_err(|_| bad(format!("query count for {t} must be an integer")))?;
        if n <= 0 {
            return Err(bad(format!("query count for {t} must be positive")));
        }
        if overrides.insert(t.to_string(), n as u64).is_some() {
            return Err(bad(format!("duplicate --query-count for {t}")));
        }
    }
    let mut selected: BTreeSet<String> = BTreeSet::new();
    for t in query_types {
        if !types.contains(&t.as_str()) {
            return Err(bad(format!("unsupported query type: {t}")));
        }
        selected.insert(t.clone());
    }
    let membership: BTreeSet<String> = if !selected.is_empty() {
        let outside: Vec<&str> = overrides
            .keys()
            .filter(|t| !selected.contains(*t))
            .map(String::as_str)
            .collect();
        if !outside.is_empty() {
            return Err(bad(format!(
                "--query-count targets query types not selected by --query-type: {}",
                outside.join(", ")
            )));
        }
        selected
    } else if !overrides.is_empty() {
        overrides.keys().cloned().collect()
    } else {
        match base {
            Some(b) => b.keys().cloned().collect(),
            None => types.iter().map(|t| t.to_string()).collect(),
        }
    };
    Ok(membership
        .into_iter()
        .map(|t| {
            let n = overrides
                .get(&t)
                .copied()
                .or(queries.map(|q| q as u64))
                .or_else(|| base.and_then(|b| b.get(&t).copied()))
                .unwrap_or_else(|| profile_count(profile, &t));
            (t, n)
        })
        .collect())
}

/// What a query type needs of its dataset: hosts (`--scale`) and the time window the real
/// generator draws at random (`MustRandWindow` panics, exit 2, when the span is too short:
/// `internal/utils/time_interval.go`; more hosts than `--scale` panic in
/// `uses/devops/common.go`).
pub fn query_type_needs(query_type: &str) -> (u64, i128) {
    const HOUR: i128 = 3_600_000_000_000;
    match query_type {
        // iot (`uses/iot/common.go`): three types draw a window, one picks a truck.
        "stationary-trucks" => (1, HOUR / 6),
        "long-driving-sessions" => (1, 4 * HOUR),
        "long-daily-sessions" => (1, 24 * HOUR),
        t if crate::dataset::IOT_QUERY_TYPES.contains(&t) => (1, 0),
        "cpu-max-all-1" => (1, 8 * HOUR),
        "cpu-max-all-8" => (8, 8 * HOUR),
        "double-groupby-1" | "double-groupby-5" | "double-groupby-all" => (1, 12 * HOUR),
        "groupby-orderby-limit" => (1, HOUR),
        "high-cpu-1" | "high-cpu-all" => (1, 12 * HOUR),
        "lastpoint" => (1, 0),
        t => {
            // single-groupby-<metrics>-<hosts>-<hours>
            let mut parts = t.rsplit('-');
            let hours: i128 = parts.next().and_then(|p| p.parse().ok()).unwrap_or(0);
            let hosts: u64 = parts.next().and_then(|p| p.parse().ok()).unwrap_or(1);
            (hosts, hours * HOUR)
        }
    }
}

/// Refuses (exit 2) the query types the dataset cannot serve, naming each with its need,
/// so nothing is created for a generation that would panic. The window may equal the span:
/// the generator gets `end + 1 s`.
/// Refuses (exit 2) the query types `format` declares it cannot run.
pub fn check_runnable_types(
    format: &QueryFormat,
    product: &str,
    counts: &BTreeMap<String, u64>,
) -> Result<()> {
    let refused: Vec<(&str, &str)> = format
        .refused_types
        .iter()
        .filter(|(t, _)| counts.contains_key(*t))
        .copied()
        .collect();
    let Some((_, why)) = refused.first() else {
        return Ok(());
    };
    let names: Vec<&str> = refused.iter().map(|(t, _)| *t).collect();
    let runnable: Vec<&str> = counts
        .keys()
        .map(String::as_str)
        .filter(|t| !names.contains(t))
        .collect();
    Err(Error::invalid(format!(
        "{product} cannot run query type(s) {}: {why}",
        names.join(", ")
    ))
    .with_hint(if runnable.is_empty() {
        "choose other --query-type values".to_string()
    } else {
        format!(
            "run the others: --query-type {}",
            runnable.join(" --query-type ")
        )
    }))
}

pub fn check_query_needs(dataset: &Dataset, counts: &BTreeMap<String, u64>) -> Result<()> {
    let spec = &dataset.spec;
    let span = crate::dataset::parse_rfc3339(&spec.end, "--end")?
        - crate::dataset::parse_rfc3339(&spec.start, "--start")?;
    let mut short = Vec::new();
    for t in counts.keys() {
        let (hosts, window) = query_type_needs(t);
        let mut need = Vec::new();
        if window > span {
            need.push(format!(
                "a span of at least {}",
                crate::gotime::format_duration(window)
            ));
        }
        if hosts > spec.scale {
            need.push(format!("at least {hosts} hosts (--scale {hosts})"));
        }
        if !need.is_empty() {
            short.push(format!("{t} needs {}", need.join(" and ")));
        }
    }
    if short.is_empty() {
        return Ok(());
    }
    Err(Error::invalid(format!(
        "dataset {} (span {}, scale {}) is too small for these query types: {}",
        dataset.id,
        crate::gotime::format_duration(span),
        spec.scale,
        short.join("; ")
    ))
    .with_hint("leave those types out (select others with --query-type), or use a dataset with a longer --start/--end span or a larger --scale"))
}

/// `end + 1 s`, rendered as the reference renders it (Python `isoformat`, `+00:00` → `Z`).
pub fn end_plus_one_second(end: &str) -> Result<String> {
    use time::format_description::well_known::Rfc3339;
    let t = time::OffsetDateTime::parse(end, &Rfc3339).map_err(|_| {
        Error::invalid(format!("--end {end:?} is not an RFC 3339 timestamp"))
            .with_hint("use a timestamp such as 2023-06-14T00:00:00Z")
    })?;
    let t = t + time::Duration::seconds(1);
    let mut s = format!(
        "{:04}-{:02}-{:02}T{:02}:{:02}:{:02}",
        t.year(),
        t.month() as u8,
        t.day(),
        t.hour(),
        t.minute(),
        t.second()
    );
    if t.microsecond() != 0 {
        s.push_str(&format!(".{:06}", t.microsecond()));
    }
    let off = t.offset();
    if off.is_utc() {
        s.push('Z');
    } else {
        let (h, m, _) = off.as_hms();
        let sign = if off.is_negative() { '-' } else { '+' };
        s.push_str(&format!("{sign}{:02}:{:02}", h.abs(), m.abs()));
    }
    Ok(s)
}

/// The query-set spec hashed for identity (§2.4).
pub fn query_set_spec(
    dataset: &Dataset,
    format: QueryFormat,
    counts: &BTreeMap<String, u64>,
) -> Result<Value> {
    if counts.is_empty() {
        return Err(Error::invalid("a query set needs at least one query type")
            .with_hint("select query types with --query-type or --query-count"));
    }
    let mut spec = json!({
        "dataset": {"dataset_id": dataset.id, "spec": dataset.spec.to_value()},
        "format": format.as_str(),
        // The generator's use case: cpu-only and devops datasets share the devops queries
        // (the reference's sets say "devops"); iot has its own.
        "use_case": dataset.spec.use_case()?.query_use_case,
        "seed": dataset.spec.seed,
        "scale": dataset.spec.scale,
        "timestamp_start": dataset.spec.start,
        "timestamp_end": end_plus_one_second(&dataset.spec.end)?,
        "query_counts": counts,
    });
    // Only when present, so the formats without flags keep their identities.
    if !format.generator_flags.is_empty() {
        spec["generator_flags"] = json!(format.generator_flags);
    }
    Ok(spec)
}

/// The spec of an extra batch `batch` (2, 3, ...) of `--target-precision`: the set's spec
/// with the seed `seed + batch - 1` and the batch named, so its identity differs from every
/// set of the dataset's own seed; the first batch is the run's query set itself.
pub fn batch_spec(mut spec: Value, batch: u32) -> Value {
    let seed = spec["seed"].as_i64().unwrap_or(0);
    spec["seed"] = json!(seed + i64::from(batch) - 1);
    spec["precision_batch"] = json!(batch);
    spec
}

fn request_spec(req: &QuerySetRequest) -> Result<Value> {
    let spec = query_set_spec(req.dataset, req.format, req.counts)?;
    Ok(match req.batch {
        Some(b) => batch_spec(spec, b),
        None => spec,
    })
}

/// `<format>-<16 hex of the spec digest>`.
pub fn query_set_id(format: QueryFormat, spec: &Value) -> String {
    let digest = crate::canonical::spec_digest(spec);
    format!("{}-{}", format.as_str(), &digest[..16])
}

/// One query file in the manifest.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct QueryFileRecord {
    /// Relative to the set directory: `queries/<type>.dat`.
    pub path: String,
    pub bytes: u64,
    pub sha256: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub fingerprint: Option<Fingerprint>,
    /// When this file was generated (a set extended from another keeps the time its reused
    /// files were generated); absent in sets written before it was recorded.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub generated_at: Option<String>,
}

/// The set a query set was extended from (`data generate --only queries --extend`, or a run
/// extended with more query types): its files of the types whose count did not change were
/// copied (and re-hashed), the others generated.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ExtendedFrom {
    pub query_set_id: String,
    pub manifest_sha256: String,
    /// The types whose files were copied from it.
    pub reused_types: Vec<String>,
    /// The types generated for the extension.
    pub generated_types: Vec<String>,
}

/// The body of a query-set manifest (§2.5).
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct QuerySetManifest {
    pub query_set_id: String,
    pub created_at: String,
    pub spec: Value,
    pub generator: GeneratorRecord,
    pub files: BTreeMap<String, QueryFileRecord>,
    pub tool_version: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub extended_from: Option<ExtendedFrom>,
}

fn write_manifest(path: &Path, format: QueryFormat, m: &QuerySetManifest) -> Result<()> {
    manifest::write_kind(path, format.manifest_kind, m)
}

/// A query set's manifest, of `format`'s kind (another kind: integrity, exit 4).
pub fn read_manifest(path: &Path, format: QueryFormat) -> Result<QuerySetManifest> {
    manifest::read_kind(path, format.manifest_kind)
}

/// A query file ready to run.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct QueryFile {
    pub path: PathBuf,
    pub bytes: u64,
    pub sha256: String,
}

/// A validated, published query set.
#[derive(Debug, Clone)]
pub struct QuerySet {
    pub id: String,
    pub format: QueryFormat,
    pub path: PathBuf,
    pub manifest_path: PathBuf,
    /// SHA-256 of `manifest.json` (what a run pins).
    pub manifest_sha256: String,
    pub spec: Value,
    /// Keyed by query type, sorted.
    pub files: BTreeMap<String, QueryFile>,
    /// Found published (by an earlier command or a concurrent winner).
    pub reused: bool,
    /// Every file was hashed by this call.
    pub verified: bool,
    pub generator: GeneratorRecord,
}

impl QuerySet {
    pub fn counts(&self) -> BTreeMap<String, u64> {
        self.spec["query_counts"]
            .as_object()
            .map(|o| {
                o.iter()
                    .map(|(k, v)| (k.clone(), v.as_u64().unwrap_or(0)))
                    .collect()
            })
            .unwrap_or_default()
    }

    pub fn to_json(&self) -> Value {
        json!({
            "query_set_id": self.id,
            "query_set_path": self.path,
            "manifest_sha256": self.manifest_sha256,
            "spec": self.spec,
            "files": self.files.iter().map(|(t, f)| (t.clone(), json!({
                "path": f.path, "bytes": f.bytes, "sha256": f.sha256,
            }))).collect::<serde_json::Map<String, Value>>(),
            "reused": self.reused,
        })
    }
}

/// The directory of a query set.
pub fn query_set_dir(root: &Root, dataset_id: &str, format: QueryFormat, id: &str) -> PathBuf {
    root.queries()
        .join(dataset_id)
        .join(format.as_str())
        .join(id)
}

/// What [`ensure_query_set`] needs.
pub struct QuerySetRequest<'a> {
    pub dataset: &'a Dataset,
    pub format: QueryFormat,
    /// From [`resolve_counts`].
    pub counts: &'a BTreeMap<String, u64>,
    /// Where each generator's stderr goes (`generate-query-<type>.log`): the run's `logs/`,
    /// never the shared query root.
    pub log_dir: &'a Path,
    /// The manifest SHA-256 a run already pinned; a different set is an integrity error.
    pub pinned_manifest_sha256: Option<&'a str>,
    /// Hash every file even when sizes and fingerprints match.
    pub full_verify: bool,
    /// `--target-precision`'s extra batch `b` (2, 3, ...): the same generator and dataset,
    /// seed `seed + b - 1`, so fresh queries, never the first batch's again (see
    /// [`batch_spec`]). `None`: the run's query set.
    pub batch: Option<u32>,
}

/// Reuses or generates the query set for `req` (see the module doc). `generator` gives the
/// prepared generator: a published set it did not make is an integrity error (exit 4).
pub fn ensure_query_set(
    root: &Root,
    req: &QuerySetRequest,
    generator: &mut dyn FnMut() -> Result<Generator>,
    reporter: &dyn Reporter,
) -> Result<QuerySet> {
    let spec = request_spec(req)?;
    let id = query_set_id(req.format, &spec);
    let dir = query_set_dir(root, &req.dataset.id, req.format, &id);
    // Staging sets of killed generations, of any query set of this format (trial-run #15).
    if let Some(parent) = dir.parent() {
        for p in crate::fsutil::sweep_staging(parent, &["stage"]) {
            reporter.event(&Event::RemovedLeftover {
                path: p,
                left_by: LeftBy::QuerySetGeneration,
            });
        }
    }
    if dir.exists() {
        let set = validate(&dir, req, &spec, &id, true)?;
        // A set from another TSBS source (a stand-in's, another commit's) is never reused: the
        // real runner cannot read a stand-in's file (finding C5). Another build of the same
        // commit generates the same queries (trial 2 N2).
        crate::dataset::check_generator(
            &format!("query set {id}"),
            &set.generator,
            &generator()?,
            format!(
                "remove {} and run the command again to regenerate it with the prepared tools",
                dir.display()
            ),
            reporter,
        )?;
        return Ok(set);
    }
    check_query_needs(req.dataset, req.counts)?;
    // Find the generator before writing anything (a missing environment changes nothing).
    let gen = generator()?;
    crate::diskspace::ensure_room(&[generation_need(root, req)?])?;
    publish(req, &spec, &id, &dir, &gen, &Reuse::default(), reporter)
}

/// Files of an earlier set a new set copies instead of generating them again.
#[derive(Default)]
struct Reuse {
    /// Type -> (the earlier file, its record).
    files: BTreeMap<String, (PathBuf, QueryFileRecord)>,
    from: Option<ExtendedFrom>,
}

/// Generates the set `id` (spec `spec`) in a staging directory beside `dir` and publishes it
/// with one rename (the loser of a race reuses the winner's set).
fn publish(
    req: &QuerySetRequest,
    spec: &Value,
    id: &str,
    dir: &Path,
    gen: &Generator,
    reuse: &Reuse,
    reporter: &dyn Reporter,
) -> Result<QuerySet> {
    let (spec, id) = (spec.clone(), id.to_string());
    let parent = dir.parent().expect("a set dir has a parent").to_path_buf();
    fs_err::create_dir_all(&parent)?;
    let _ = crate::fsutil::clean_staging(dir, "stage");
    let staging = crate::fsutil::staging_path(dir, "stage")?;
    let result = (|| -> Result<bool> {
        generate_into(&staging, req, &spec, &id, gen, reuse, reporter)?;
        // One rename publishes the whole set; if another process won, use theirs.
        match fs::rename(&staging, dir) {
            Ok(()) => {
                crate::fsutil::sync_dir(&parent)?;
                Ok(true)
            }
            Err(e) if dir.exists() => {
                let _ = e;
                Ok(false)
            }
            Err(e) => Err(Error::failed(format!(
                "could not publish the query set {}: {e}",
                dir.display()
            ))),
        }
    })();
    if staging.exists() {
        let _ = fs::remove_dir_all(&staging);
    }
    let published = result?;
    let mut set = validate(dir, req, &spec, &id, !published)?;
    set.reused = !published;
    if published {
        reporter.event(&Event::QuerySetPublished {
            id: id.to_string(),
            dir: dir.to_path_buf(),
        });
    }
    Ok(set)
}

/// The query set of `req` made from the published set in `base_dir` (same dataset, format and
/// generator spec; other types or counts): its files of the types whose count is unchanged are
/// copied and re-hashed, the rest generated, and the new set is staged beside its place and
/// published with one rename, under the id the reference derives from the new spec. The base
/// set is left as it is (runs pin it). A set already published for the new spec is reused.
pub fn extend_query_set(
    root: &Root,
    req: &QuerySetRequest,
    base_dir: &Path,
    generator: &mut dyn FnMut() -> Result<Generator>,
    reporter: &dyn Reporter,
) -> Result<QuerySet> {
    let spec = request_spec(req)?;
    let id = query_set_id(req.format, &spec);
    let dir = query_set_dir(root, &req.dataset.id, req.format, &id);
    if dir.exists() {
        return ensure_query_set(root, req, generator, reporter);
    }
    let base_manifest = base_dir.join("manifest.json");
    let bytes = fs_err::read(&base_manifest).map_err(|e| match e.kind() {
        io::ErrorKind::NotFound => {
            Error::invalid(format!("no query set at {} to extend", base_dir.display()))
                .with_hint("`tsbsctl data inspect --dataset-id ID` lists the dataset's query sets")
        }
        _ => e.into(),
    })?;
    let base = read_manifest(&base_manifest, req.format)?;
    // Everything but the workload must be the same: the files of one generator spec only.
    let without_counts = |v: &Value| {
        let mut v = v.clone();
        if let Some(o) = v.as_object_mut() {
            o.remove("query_counts");
        }
        v
    };
    if without_counts(&base.spec) != without_counts(&spec) {
        return Err(Error::invalid(format!(
            "query set {} was generated for another dataset, format or generator spec",
            base.query_set_id
        ))
        .with_hint("extend a query set of the same dataset and query format"));
    }
    let base_counts: BTreeMap<String, u64> = base.spec["query_counts"]
        .as_object()
        .map(|o| {
            o.iter()
                .map(|(k, v)| (k.clone(), v.as_u64().unwrap_or(0)))
                .collect()
        })
        .unwrap_or_default();
    check_query_needs(req.dataset, req.counts)?;
    let gen = generator()?;
    // Files of another TSBS source are not mixed with this generator's.
    crate::dataset::check_generator(
        &format!("query set {}", base.query_set_id),
        &base.generator,
        &gen,
        format!(
            "generate the whole set anew: remove {} first",
            base_dir.display()
        ),
        reporter,
    )?;
    let mut reuse = Reuse::default();
    for (t, n) in req.counts {
        if let (Some(b), Some(rec)) = (base_counts.get(t), base.files.get(t)) {
            if b == n {
                let mut rec = rec.clone();
                rec.generated_at = rec.generated_at.or_else(|| Some(base.created_at.clone()));
                reuse
                    .files
                    .insert(t.clone(), (base_dir.join(&rec.path), rec));
            }
        }
    }
    reuse.from = Some(ExtendedFrom {
        query_set_id: base.query_set_id.clone(),
        manifest_sha256: crate::hash::sha256_hex(&bytes),
        reused_types: reuse.files.keys().cloned().collect(),
        generated_types: req
            .counts
            .keys()
            .filter(|t| !reuse.files.contains_key(*t))
            .cloned()
            .collect(),
    });
    crate::diskspace::ensure_room(&[generation_need(root, req)?])?;
    publish(req, &spec, &id, &dir, &gen, &reuse, reporter)
}

/// The published query sets of a dataset, every format, with what was generated when (the
/// set's creation, each file's generation, the set it was extended from), for `data inspect`.
/// Staging directories and unreadable manifests are left out.
pub fn list_sets(root: &Root, dataset_id: &str) -> Vec<Value> {
    let mut out = Vec::new();
    let base = root.queries().join(dataset_id);
    let dirs = |d: &Path| -> Vec<PathBuf> {
        let mut v: Vec<PathBuf> = fs::read_dir(d)
            .map(|rd| {
                rd.flatten()
                    .map(|e| e.path())
                    .filter(|p| p.is_dir())
                    .collect()
            })
            .unwrap_or_default();
        v.sort();
        v
    };
    for fdir in dirs(&base) {
        for sdir in dirs(&fdir) {
            let Ok(bytes) = fs::read(sdir.join("manifest.json")) else {
                continue;
            };
            let Ok(m) = serde_json::from_slice::<Value>(&bytes) else {
                continue;
            };
            let generated: serde_json::Map<String, Value> = m["files"]
                .as_object()
                .map(|o| {
                    o.iter()
                        .map(|(t, f)| (t.clone(), f["generated_at"].clone()))
                        .collect()
                })
                .unwrap_or_default();
            out.push(json!({
                "query_set_id": m["query_set_id"],
                "format": fdir.file_name().map(|n| n.to_string_lossy().into_owned()),
                "path": sdir,
                "created_at": m["created_at"],
                "query_counts": m["spec"]["query_counts"],
                "generated_at": generated,
                "extended_from": m.get("extended_from").cloned().unwrap_or(Value::Null),
            }));
        }
    }
    out
}

/// What generating the query set of `req` writes (nothing when it is published), for the
/// free-space check.
pub fn generation_need(root: &Root, req: &QuerySetRequest) -> Result<crate::diskspace::Need> {
    let spec = request_spec(req)?;
    let id = query_set_id(req.format, &spec);
    let dir = query_set_dir(root, &req.dataset.id, req.format, &id);
    let total = req.counts.values().fold(0u64, |a, c| a.saturating_add(*c));
    Ok(crate::diskspace::Need {
        what: format!("query set {id} ({total} queries)"),
        bytes: if dir.exists() {
            0
        } else {
            total.saturating_mul(req.format.bytes_per_query)
        },
        dir,
    })
}

/// Hashes every file of a published set (and checks everything else).
pub fn verify_query_set(root: &Root, req: &QuerySetRequest) -> Result<QuerySet> {
    let spec = request_spec(req)?;
    let id = query_set_id(req.format, &spec);
    let dir = query_set_dir(root, &req.dataset.id, req.format, &id);
    if !dir.exists() {
        return Err(Error::invalid(format!("query set {id} does not exist"))
            .with_hint("it is generated by the benchmark's query phase"));
    }
    let full = QuerySetRequest {
        full_verify: true,
        ..*req
    };
    validate(&dir, &full, &spec, &id, true)
}

fn integrity(dir: &Path, msg: &str) -> Error {
    Error::integrity(format!("{msg}: {}", dir.display())).with_hint(format!(
        "remove {} and run the command again to regenerate the query set",
        dir.display()
    ))
}

/// Validates a published set (§2.6), cheaply unless something looks off.
fn validate(
    dir: &Path,
    req: &QuerySetRequest,
    spec: &Value,
    id: &str,
    reused: bool,
) -> Result<QuerySet> {
    let manifest_path = dir.join("manifest.json");
    let bytes = fs_err::read(&manifest_path).map_err(|e| match e.kind() {
        io::ErrorKind::NotFound => integrity(dir, "query set has no manifest"),
        _ => e.into(),
    })?;
    let manifest_sha256 = crate::hash::sha256_hex(&bytes);
    if let Some(pinned) = req.pinned_manifest_sha256 {
        if pinned != manifest_sha256 {
            return Err(Error::integrity(format!(
                "query set conflicts with the query set pinned by this run: {}",
                dir.display()
            ))
            .with_hint("start a new run, or restore the query set this run used"));
        }
    }
    let m = read_manifest(&manifest_path, req.format)?;
    if &m.spec != spec || m.query_set_id != id {
        return Err(integrity(dir, "query-set specification mismatch"));
    }
    let membership: BTreeSet<&str> = req.counts.keys().map(String::as_str).collect();
    let recorded: BTreeSet<&str> = m.files.keys().map(String::as_str).collect();
    if membership != recorded {
        return Err(integrity(dir, "query-set membership mismatch"));
    }
    let qdir = dir.join("queries");
    let mut stems = BTreeSet::new();
    let rd = fs_err::read_dir(&qdir)?;
    for e in rd.flatten() {
        let name = e.file_name().to_string_lossy().into_owned();
        if let Some(stem) = name.strip_suffix(".dat") {
            stems.insert(stem.to_string());
        }
    }
    if stems.iter().map(String::as_str).collect::<BTreeSet<_>>() != membership {
        return Err(integrity(
            dir,
            "query-set artifacts do not match membership",
        ));
    }
    let mut files = BTreeMap::new();
    let mut verified = true;
    for (t, rec) in &m.files {
        if rec.path != format!("queries/{t}.dat") || rec.sha256.len() != 64 {
            return Err(integrity(dir, "malformed query artifact metadata"));
        }
        let path = dir.join(&rec.path);
        let fp = Fingerprint::of(&path)?;
        if fp.size != rec.bytes {
            return Err(integrity(
                dir,
                &format!("query artifact size mismatch in {}", path.display()),
            ));
        }
        if req.full_verify || rec.fingerprint.as_ref() != Some(&fp) {
            let (sha, n) = crate::hash::sha256_file(&path, &crate::output::NoProgress)?;
            if sha != rec.sha256 || n != rec.bytes {
                // Name the file, not only the set (trial-run #20 d).
                return Err(integrity(
                    dir,
                    &format!("query artifact checksum mismatch in {}", path.display()),
                ));
            }
        } else {
            verified = false;
        }
        files.insert(
            t.clone(),
            QueryFile {
                path,
                bytes: rec.bytes,
                sha256: rec.sha256.clone(),
            },
        );
    }
    Ok(QuerySet {
        id: id.to_string(),
        format: req.format,
        path: dir.to_path_buf(),
        manifest_path,
        manifest_sha256,
        spec: spec.clone(),
        files,
        reused,
        verified,
        generator: m.generator,
    })
}

/// The generator command line for one type (benchmark.md §3.2).
pub fn generator_args(spec: &Value, query_type: &str, count: u64) -> Vec<String> {
    let s = |k: &str| match &spec[k] {
        Value::String(v) => v.clone(),
        other => other.to_string(),
    };
    let mut a = vec![
        format!("--use-case={}", s("use_case")),
        format!("--seed={}", s("seed")),
        format!("--scale={}", s("scale")),
        format!("--timestamp-start={}", s("timestamp_start")),
        format!("--timestamp-end={}", s("timestamp_end")),
        format!("--queries={count}"),
        format!("--query-type={query_type}"),
        format!("--format={}", s("format")),
    ];
    if let Some(flags) = spec["generator_flags"].as_array() {
        a.extend(flags.iter().filter_map(|f| f.as_str().map(String::from)));
    }
    a
}

fn generate_into(
    staging: &Path,
    req: &QuerySetRequest,
    spec: &Value,
    id: &str,
    gen: &Generator,
    reuse: &Reuse,
    reporter: &dyn Reporter,
) -> Result<()> {
    let qdir = staging.join("queries");
    let work = staging.join("work");
    fs_err::create_dir_all(&qdir)?;
    // TSBS reads a config.* from its working directory: give it an empty one.
    fs_err::create_dir_all(&work)?;
    fs_err::create_dir_all(req.log_dir)?;
    // Reused files first: copied and hashed on the way, so a changed earlier file is never
    // carried into the new set.
    let mut files = BTreeMap::new();
    for (t, (src, rec)) in &reuse.files {
        let out = qdir.join(format!("{t}.dat"));
        fs_err::copy(src, &out)?;
        let (sha, n) = crate::hash::sha256_file(&out, &crate::output::NoProgress)?;
        if sha != rec.sha256 || n != rec.bytes {
            return Err(Error::integrity(format!(
                "query file {} no longer has the SHA-256 its set records",
                src.display()
            ))
            .with_hint("remove that query set; the extension then generates every type"));
        }
        let fingerprint = Fingerprint::of(&out)?;
        files.insert(
            t.clone(),
            QueryFileRecord {
                fingerprint: Some(fingerprint),
                ..rec.clone()
            },
        );
    }
    let todo: Vec<(String, u64)> = req
        .counts
        .iter()
        .filter(|(t, _)| !reuse.files.contains_key(*t))
        .rev()
        .map(|(t, n)| (t.clone(), *n))
        .collect();
    let parallel = std::thread::available_parallelism()
        .map(|n| n.get())
        .unwrap_or(1)
        .min(todo.len())
        .max(1);
    match &reuse.from {
        Some(f) => reporter.event(&Event::ExtendingQuerySet {
            from: f.query_set_id.to_string(),
            id: id.to_string(),
            copied: reuse.files.len(),
            generated: todo.len(),
            parallel,
        }),
        None => reporter.event(&Event::GeneratingQuerySet {
            id: id.to_string(),
            types: req.counts.len(),
            parallel,
        }),
    }
    let queue: Mutex<Vec<(String, u64)>> = Mutex::new(todo);
    let results: Mutex<BTreeMap<String, Result<QueryFileRecord>>> = Mutex::new(BTreeMap::new());
    std::thread::scope(|scope| {
        for _ in 0..parallel {
            scope.spawn(|| loop {
                let next = queue.lock().expect("queue").pop();
                let Some((t, n)) = next else { break };
                let failed_before = results
                    .lock()
                    .expect("results")
                    .values()
                    .any(|r| r.is_err());
                let r = if failed_before || crate::interrupt::requested() {
                    Err(Error::failed("skipped after an earlier failure")
                        .with_detail(Detail::Skipped))
                } else {
                    generate_type(&qdir, &work, req.log_dir, spec, &t, n, gen)
                };
                results.lock().expect("results").insert(t, r);
            });
        }
    });
    crate::interrupt::check()?;
    let results = results.into_inner().expect("results");
    files.extend(generated_or_first_failure(results)?);
    fs_err::remove_dir_all(&work)?;
    for f in fs_err::read_dir(&qdir)?.flatten() {
        fs_err::File::open(f.path())?.sync_all()?;
    }
    crate::fsutil::sync_dir(&qdir)?;
    let m = QuerySetManifest {
        query_set_id: id.to_string(),
        created_at: manifest::now_rfc3339(),
        spec: spec.clone(),
        generator: GeneratorRecord {
            binary: gen.path.clone(),
            binary_sha256: gen.sha256.clone(),
            tsbs_repo: gen.tsbs_repo.clone(),
            tsbs_commit: gen.tsbs_commit.clone(),
            go_version: gen.go_version.clone(),
            dirty: gen.dirty,
        },
        files,
        tool_version: crate::VERSION.to_string(),
        extended_from: reuse.from.clone(),
    };
    write_manifest(&staging.join("manifest.json"), req.format, &m)
}

/// The generated files, or the first real failure: a type skipped because another failed
/// ([`Detail::Skipped`]) is never the one reported.
fn generated_or_first_failure(
    results: BTreeMap<String, Result<QueryFileRecord>>,
) -> Result<BTreeMap<String, QueryFileRecord>> {
    let mut files = BTreeMap::new();
    let mut first_err = None;
    for (t, r) in results {
        match r {
            Ok(rec) => {
                files.insert(t, rec);
            }
            Err(e) if first_err.is_none() && !e.is(Detail::Skipped) => first_err = Some(e),
            Err(_) => {}
        }
    }
    match first_err {
        Some(e) => Err(e),
        None => Ok(files),
    }
}

fn generate_type(
    qdir: &Path,
    work: &Path,
    log_dir: &Path,
    spec: &Value,
    query_type: &str,
    count: u64,
    gen: &Generator,
) -> Result<QueryFileRecord> {
    let args = generator_args(spec, query_type, count);
    let out_path = qdir.join(format!("{query_type}.dat"));
    let log_path = match spec["precision_batch"].as_u64() {
        Some(b) => log_dir.join(format!("generate-query-{query_type}-batch{b:03}.log")),
        None => log_dir.join(format!("generate-query-{query_type}.log")),
    };
    let mut log = fs_err::File::create(&log_path)?;
    let line = crate::proc::command_line(&gen.path.to_string_lossy(), &args);
    writeln!(log, "$ {line}")?;
    let out = fs_err::File::create(&out_path)?.into_file();
    let mut cmd = Command::new(&gen.path);
    cmd.args(&args)
        .current_dir(work)
        .stdin(Stdio::null())
        .stdout(out)
        .stderr(Stdio::piped());
    // Its own group, and stopped on Ctrl-C even while it prints nothing.
    crate::proc::configure(&mut cmd);
    let mut child = cmd.spawn().map_err(|e| {
        Error::failed(format!("could not run {}: {e}", gen.path.display()))
            .with_hint("rebuild the TSBS tools with `tsbsctl env prepare --rebuild`")
    })?;
    let watch = crate::proc::InterruptWatch::start(&child, std::time::Duration::from_secs(2));
    let mut last = String::new();
    if let Some(stderr) = child.stderr.take() {
        for l in BufReader::new(stderr).lines().map_while(|l| l.ok()) {
            let _ = writeln!(log, "{l}");
            if !l.trim().is_empty() {
                last = l;
            }
        }
    }
    let interrupted = watch.finish();
    let status = child
        .wait()
        .map_err(|e| Error::failed(format!("wait for the query generator: {e}")))?;
    if interrupted {
        return Err(Error::interrupted(format!(
            "interrupted while generating {query_type} queries"
        ))
        .with_hint("run the command again to continue"));
    }
    if !status.success() {
        let code = status
            .code()
            .map(|c| format!("exit code {c}"))
            .unwrap_or_else(|| "a signal".into());
        return Err(Error::failed(format!(
            "tsbs_generate_queries failed for {query_type} with {code}; see {}",
            log_path.display()
        ))
        .with_hint("check the log; nothing was published, so running again retries"));
    }
    // The tool ends with `<label>: <n> points`; anything else means it did not finish.
    if !last.ends_with(&format!(": {count} points")) {
        return Err(Error::failed(format!(
            "tsbs_generate_queries for {query_type} did not report {count} points (last line: {last:?}); see {}",
            log_path.display()
        ))
        .with_hint("check the log; nothing was published, so running again retries"));
    }
    let (sha256, bytes) = crate::hash::sha256_file(&out_path, &crate::output::NoProgress)?;
    let fingerprint = Fingerprint::of(&out_path)?;
    Ok(QueryFileRecord {
        path: format!("queries/{query_type}.dat"),
        bytes,
        sha256,
        fingerprint: Some(fingerprint),
        generated_at: Some(manifest::now_rfc3339()),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The detail, not the words, decides which failure is reported: a skipped type worded
    /// any way is passed over, and a real failure whose words begin "skipped" is reported.
    #[test]
    fn a_skipped_type_is_never_the_failure_reported() {
        let rec = QueryFileRecord {
            path: "queries/a.dat".into(),
            bytes: 1,
            sha256: "00".into(),
            fingerprint: None,
            generated_at: None,
        };
        let mut results = BTreeMap::new();
        results.insert(
            "a-skipped".to_string(),
            Err(Error::failed("not run: another type failed").with_detail(Detail::Skipped)),
        );
        results.insert(
            "b-real".to_string(),
            Err(Error::failed(
                "skipped rows: tsbs_generate_queries exited 1",
            )),
        );
        results.insert("c-ok".to_string(), Ok(rec.clone()));
        let e = generated_or_first_failure(results).unwrap_err();
        assert_eq!(e.message, "skipped rows: tsbs_generate_queries exited 1");

        let mut results = BTreeMap::new();
        results.insert("a".to_string(), Ok(rec));
        let files = generated_or_first_failure(results).unwrap();
        assert_eq!(files.keys().collect::<Vec<_>>(), ["a"]);
    }

    fn s(v: &[&str]) -> Vec<String> {
        v.iter().map(|x| x.to_string()).collect()
    }

    #[test]
    fn end_plus_one_second_renders_like_python() {
        assert_eq!(
            end_plus_one_second("2023-06-14T00:00:00Z").unwrap(),
            "2023-06-14T00:00:01Z"
        );
        assert_eq!(
            end_plus_one_second("2023-06-14T23:59:59+02:00").unwrap(),
            "2023-06-15T00:00:00+02:00"
        );
        assert_eq!(
            end_plus_one_second("2023-06-14T00:00:00.5Z").unwrap(),
            "2023-06-14T00:00:01.500000Z"
        );
    }

    #[test]
    fn counts_follow_the_reference_rules() {
        let all = resolve_counts(Profile::Manual, None, &[], None, &[]).unwrap();
        assert_eq!(all.len(), 15);
        assert_eq!(all["lastpoint"], 10);
        assert_eq!(all["cpu-max-all-1"], 100);
        assert_eq!(all["high-cpu-all"], 50);
        let two = resolve_counts(
            Profile::Smoke,
            None,
            &[],
            Some(3),
            &s(&["lastpoint=7", "high-cpu-1=2"]),
        )
        .unwrap();
        assert_eq!(
            two.into_iter().collect::<Vec<_>>(),
            vec![("high-cpu-1".to_string(), 2), ("lastpoint".to_string(), 7)]
        );
        let typed = resolve_counts(
            Profile::Manual,
            None,
            &s(&["lastpoint", "cpu-max-all-8", "lastpoint"]),
            Some(4),
            &s(&["lastpoint=9"]),
        )
        .unwrap();
        assert_eq!(typed.len(), 2);
        assert_eq!(typed["lastpoint"], 9);
        assert_eq!(typed["cpu-max-all-8"], 4);
    }

    #[test]
    fn count_validation_messages_are_exact() {
        let msg = |types: &[&str], q: Option<i64>, c: &[&str]| {
            resolve_counts(Profile::Smoke, None, &s(types), q, &s(c))
                .unwrap_err()
                .message
        };
        assert_eq!(
            msg(&[], None, &["lastpoint"]),
            "query count must use QUERY_TYPE=COUNT syntax"
        );
        assert_eq!(
            msg(&[], None, &["=3"]),
            "query count must use QUERY_TYPE=COUNT syntax"
        );
        assert_eq!(
            msg(&[], None, &["lastpoint="]),
            "query count must use QUERY_TYPE=COUNT syntax"
        );
        assert_eq!(msg(&[], None, &["nope=3"]), "unsupported query type: nope");
        assert_eq!(msg(&["nope"], None, &[]), "unsupported query type: nope");
        assert_eq!(
            msg(&[], None, &["lastpoint=x"]),
            "query count for lastpoint must be an integer"
        );
        assert_eq!(
            msg(&[], None, &["lastpoint=0"]),
            "query count for lastpoint must be positive"
        );
        assert_eq!(
            msg(&[], None, &["lastpoint=-2"]),
            "query count for lastpoint must be positive"
        );
        assert_eq!(
            msg(&[], None, &["lastpoint=1", "lastpoint=2"]),
            "duplicate --query-count for lastpoint"
        );
        assert_eq!(
            msg(&["lastpoint"], None, &["high-cpu-all=1", "cpu-max-all-1=2"]),
            "--query-count targets query types not selected by --query-type: cpu-max-all-1, high-cpu-all"
        );
        assert_eq!(msg(&[], Some(0), &[]), "--queries must be positive");
        let e = resolve_counts(Profile::Smoke, None, &[], None, &s(&["x"])).unwrap_err();
        assert_eq!(e.exit_code(), 2);
    }
}
