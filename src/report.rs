//! `runs report`: the cross-database comparison in one command. Columns are runs (labelled by
//! product, edition, version and data state); the tables are the ones published comparisons
//! show: ingestion, query latency per type (fastest marked, ratio to the baseline), storage
//! footprint, and failures (a type that failed shows why, never a number).
//!
//! Runs that are not strictly comparable (other dataset, query counts, host, write parameters,
//! or, for one product, data state or data location: memtables vs SST files) are still shown,
//! but the report says so at the top and in each affected table. ★ needs a lead beyond the
//! margin and outside the noise (the test `runs compare` uses).
//! `summary.json` is the source of truth; `summary.md` and the self-contained `report.html`
//! (inline SVG, no script, no external asset) are rendered from it by templates.

mod stars;
pub mod timeline;

use std::collections::{BTreeMap, BTreeSet};
use std::path::PathBuf;

use serde::{Deserialize, Serialize};
use serde_json::{json, Value};

use crate::context::Ctx;
use crate::error::{Error, Result};
use crate::run::present;
use crate::run::{Host, RunKind, Status, TargetMode, ToolInfo, Workload};
use crate::runlist::{self, RecordedRun};
use crate::summary::{DatasetSummary, Durability, EnvironmentSummary, Present, QuerySetSummary};
use crate::workspace_manifest::DataState;

/// Bumped when the shape of a report's `summary.json` changes incompatibly.
pub const SCHEMA_VERSION: u32 = 1;

const MD_TEMPLATE: &str = include_str!("../templates/report.md.j2");
const HTML_TEMPLATE: &str = include_str!("../templates/report.html.j2");

/// Series colours (colour-blind friendly, Okabe-Ito).
const COLORS: [&str; 8] = [
    "#0072B2", "#E69F00", "#009E73", "#CC79A7", "#56B4E9", "#D55E00", "#F0E442", "#000000",
];

/// What `runs report` was asked for.
pub struct Request {
    pub runs: Vec<String>,
    pub baseline: Option<String>,
    pub out: Option<PathBuf>,
}

pub use crate::failurekind::failure_kind;

/// One column of a report: the run's identity and what the tables need of it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ReportColumn {
    pub run_id: String,
    pub path: PathBuf,
    /// Unique among the columns.
    pub label: String,
    pub color: String,
    pub product: String,
    pub product_label: String,
    #[serde(rename = "edition")]
    pub variant: Option<String>,
    pub version: Option<String>,
    pub mode: TargetMode,
    pub database_id: Option<String>,
    pub urls: Option<Vec<String>>,
    pub database: String,
    pub binary_sha256: Option<String>,
    pub data_state: Option<String>,
    pub data_location: Option<Value>,
    pub phase: String,
    pub status: Status,
    pub created_at: String,
    pub dataset: Option<DatasetSummary>,
    pub query_set: Option<QuerySetSummary>,
    pub workload: Workload,
    pub durability: Option<Durability>,
    pub server_settings: Value,
    pub environment: EnvironmentSummary,
    pub host: Host,
    pub tool: ToolInfo,
    pub manifest_sha256: String,
    /// The run's queries were cold (`--cold`: a restart and a dropped page cache before each
    /// type).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub cold: bool,
}

fn column(l: &RecordedRun, label: String, color: &str) -> ReportColumn {
    let s = &l.summary;
    let id = l.identity();
    ReportColumn {
        run_id: id.run_id,
        path: id.path,
        label,
        color: color.to_string(),
        product: id.product,
        product_label: s.product_label.clone(),
        variant: id.variant,
        version: id.version,
        mode: id.mode,
        database_id: id.database_id,
        urls: id.urls,
        database: s.target.database.clone(),
        binary_sha256: id.binary_sha256,
        data_state: id.data_state,
        data_location: s.data_location.clone(),
        phase: s.phase.clone(),
        status: s.status,
        created_at: s.created_at.clone(),
        dataset: s.dataset.clone(),
        query_set: s.query_set.clone(),
        workload: s.workload.clone(),
        durability: s.durability.clone(),
        server_settings: s.server_settings.clone(),
        environment: s.environment.clone(),
        host: s.host.clone(),
        tool: s.tool.clone(),
        manifest_sha256: id.manifest_sha256,
        cold: s.cold.is_some(),
    }
}

/// The ingestion table's cell of one run.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct IngestionCell {
    /// completed, reused, failed ..., or `none` (no load in the run).
    pub status: String,
    pub rows: Option<u64>,
    pub metrics: Option<u64>,
    pub rows_per_second: Option<f64>,
    pub metrics_per_second: Option<f64>,
    pub duration_seconds: Option<f64>,
    pub workers: Option<u64>,
    pub batch_size: Option<u64>,
    pub durable_write_acknowledgement: Option<bool>,
    pub whole_batch_rejection: Option<bool>,
    /// Why there is no number.
    pub note: Option<String>,
    /// Highest rows/s with a clear lead.
    pub fastest: bool,
}

/// The latency table's cell of one run for one query type.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct QueryCell {
    /// completed, failed or absent (the run did not run this type).
    pub status: String,
    /// `null` unless completed.
    pub mean_ms: Option<f64>,
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "present"
    )]
    pub median_ms: Present<f64>,
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "present"
    )]
    pub p95_ms: Present<f64>,
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "present"
    )]
    pub query_count: Present<u64>,
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "present"
    )]
    pub stddev_ms: Present<f64>,
    /// Failed: see [`failure_kind`].
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub failure: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "present"
    )]
    pub log: Present<String>,
    /// Lowest mean with a lead beyond the margin and outside the noise.
    pub fastest: bool,
    /// A lead beyond the margin but inside the noise.
    pub lead_within_noise: bool,
    /// mean / the baseline's mean.
    pub ratio: Option<f64>,
    /// The 95% interval of the mean, ms (the latency chart's whiskers).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub interval_ms: Option<[f64; 2]>,
    /// What the interval was computed from: `passes`, `queries` or `summary`
    /// ([`stars::mean_interval`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub interval_source: Option<String>,
    /// The leader's tests against every other run ([`stars::decide`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub lead: Option<Value>,
}

impl QueryCell {
    /// The mean, when it is a number JSON can hold.
    fn mean(&self) -> Option<f64> {
        self.mean_ms.filter(|v| v.is_finite())
    }
}

/// One row of the latency table.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct QueryRow {
    pub query_type: String,
    pub cells: Vec<QueryCell>,
}

/// One failure of a run in the failures table.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct FailureRow {
    /// The column label.
    pub run: String,
    pub run_id: String,
    pub stage: String,
    pub step: Option<String>,
    /// See [`failure_kind`].
    pub kind: String,
    pub reason: String,
    pub log: Option<PathBuf>,
}

/// A difference between runs that makes tables not strictly comparable.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Note {
    pub aspect: String,
    /// ingestion, queries, storage.
    pub tables: Vec<String>,
    pub detail: String,
}

/// The notes of each table.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TableNotes {
    pub ingestion: Vec<Note>,
    pub queries: Vec<Note>,
    pub storage: Vec<Note>,
}

/// `summary.json` of a report.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Report {
    pub schema_version: u32,
    /// Always `report`.
    pub kind: String,
    pub report_id: Option<String>,
    pub created_at: String,
    pub tool: ToolInfo,
    /// The baseline's run id.
    pub baseline: String,
    pub baseline_index: usize,
    pub baseline_label: String,
    pub runs: Vec<ReportColumn>,
    pub comparable: bool,
    pub warnings: Vec<String>,
    /// Runs whose numbers are still to come (running, or ended early).
    pub incomplete: Vec<String>,
    pub notes: TableNotes,
    pub ingestion: Vec<IngestionCell>,
    pub queries: Vec<QueryRow>,
    /// Queries per type, per run ("3", "2–5"; "-" without completed types): a mean of 3
    /// queries is not one of 1,000.
    pub query_counts: Vec<String>,
    /// Footprint records (step data, product-specific fields).
    pub storage: Vec<Value>,
    /// The row headings of the data-directory parts in the storage table.
    #[serde(default)]
    pub storage_parts: StorageParts,
    pub failures: Vec<FailureRow>,
    /// Per run, in the order of `runs`: the server's resource timeline for the charts.
    #[serde(default)]
    pub timelines: Vec<timeline::RunTimeline>,
    /// Per query type, whether the runs that checked their answers agree (issue 24 §5).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub answers: Vec<crate::answers::AnswerRow>,
    #[serde(default)]
    pub answer_digits: usize,
}

/// The answer check across the report's runs, labelled as the columns are.
fn answer_rows(loaded: &[RecordedRun], cols: &[ReportColumn]) -> Vec<crate::answers::AnswerRow> {
    let runs: Vec<(String, Option<crate::answers::RunAnswers>)> = loaded
        .iter()
        .zip(cols)
        .map(|(l, c)| (c.label.clone(), crate::answers::read(&l.dir)))
        .collect();
    if runs.iter().all(|(_, a)| a.is_none()) {
        return Vec::new();
    }
    crate::answers::compare(&runs)
}

/// The sizes a product measured over SQL after a load (PostgreSQL: `pg_database_size`, the
/// table and index split, the load's WAL), as the footprint step records them.
#[derive(Debug, Default, Deserialize)]
struct SqlFootprint {
    database_bytes: Option<u64>,
    table_bytes: Option<u64>,
    index_bytes: Option<u64>,
    load_wal_bytes: Option<u64>,
}

/// The headings of the data-directory rows of the storage table: the products' own names
/// when every run's product names its parts alike, neutral ones otherwise (each run's cell
/// then says what its parts hold).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct StorageParts {
    pub wal: String,
    pub data: String,
    pub other: String,
}

impl Default for StorageParts {
    fn default() -> Self {
        StorageParts::of(&crate::product::FootprintParts::GENERIC)
    }
}

impl StorageParts {
    fn of(p: &crate::product::FootprintParts) -> StorageParts {
        StorageParts {
            wal: p.wal.into(),
            data: p.data.into(),
            other: p.other.into(),
        }
    }

    /// The headings for runs whose products name their parts `parts`.
    fn for_runs(parts: &[crate::product::FootprintParts]) -> StorageParts {
        match parts.split_first() {
            Some((first, rest)) if rest.iter().all(|p| p == first) => StorageParts::of(first),
            None => StorageParts::default(),
            Some(_) => StorageParts {
                wal: "WAL".into(),
                data: "Data files".into(),
                other: "Other".into(),
            },
        }
    }
}

/// Differences between runs that make a table not strictly comparable.
struct Notes {
    all: Vec<Note>,
}

impl Notes {
    fn add(&mut self, aspect: &str, tables: &[&str], detail: String) {
        self.all.push(Note {
            aspect: aspect.to_string(),
            tables: tables.iter().map(|t| t.to_string()).collect(),
            detail,
        });
    }
    fn for_table(&self, t: &str) -> Vec<Note> {
        self.all
            .iter()
            .filter(|n| n.tables.iter().any(|x| x == t))
            .cloned()
            .collect()
    }
}

/// Groups columns by a key; more than one group is a difference, described per column.
fn differ<C: AsRef<ReportColumn>>(
    cols: &[C],
    applies: impl Fn(&C) -> bool,
    key: impl Fn(&C) -> Option<String>,
) -> Option<String> {
    let mut groups: BTreeMap<String, Vec<String>> = BTreeMap::new();
    for c in cols.iter().filter(|c| applies(c)) {
        let k = key(c).unwrap_or_else(|| "unknown".into());
        groups.entry(k).or_default().push(c.as_ref().label.clone());
    }
    (groups.len() > 1).then(|| {
        groups
            .iter()
            // A label that already says the value ("GreptimeDB 1.0.2 (as loaded)") is not
            // followed by it again.
            .map(|(k, labels)| {
                if labels.iter().all(|l| l.contains(&format!("({k})"))) {
                    labels.join(", ")
                } else {
                    format!("{} ({k})", labels.join(", "))
                }
            })
            .collect::<Vec<_>>()
            .join(" vs ")
    })
}

fn s(v: &Value) -> String {
    match v {
        Value::String(s) => s.clone(),
        Value::Null => "-".into(),
        v => v.to_string(),
    }
}

impl AsRef<ReportColumn> for ReportColumn {
    fn as_ref(&self) -> &ReportColumn {
        self
    }
}

/// A column whose run completed a load, with that load.
struct LoadedColumn<'a> {
    col: &'a ReportColumn,
    load: &'a crate::summary::Ingestion,
}

impl AsRef<ReportColumn> for LoadedColumn<'_> {
    fn as_ref(&self) -> &ReportColumn {
        self.col
    }
}

/// The first 12 characters of a checksum.
fn short_sha(x: &str) -> &str {
    &x[..x.len().min(12)]
}

fn opt(v: Option<impl ToString>) -> String {
    v.map_or_else(|| "-".into(), |x| x.to_string())
}

fn comparability(cols: &[ReportColumn], loaded: &[RecordedRun]) -> Notes {
    let mut n = Notes { all: Vec::new() };
    let all = |_: &ReportColumn| true;
    // A dataset is its id and spec; products read it in their own formats (PostgreSQL the
    // timescaledb file of the dataset the others read as influx), so the files' checksums are
    // compared between runs of one format.
    if let Some(d) = differ(cols, all, |c| {
        c.dataset.as_ref().map(|ds| {
            format!(
                "dataset {}, spec SHA-256 {}",
                ds.dataset_id,
                short_sha(&crate::canonical::spec_digest(&ds.spec))
            )
        })
    }) {
        n.add(
            "dataset",
            &["ingestion", "queries", "storage"],
            format!("the runs used different datasets: {d}"),
        );
    } else {
        let format_of = |c: &ReportColumn| c.dataset.as_ref().and_then(|d| d.format.clone());
        let formats: BTreeSet<String> = cols.iter().filter_map(format_of).collect();
        for fmt in formats {
            if let Some(d) = differ(
                cols,
                |c| format_of(c).as_deref() == Some(fmt.as_str()),
                |c| {
                    let sha = c.dataset.as_ref().and_then(|d| d.sha256.as_deref());
                    Some(format!(
                        "SHA-256 {}",
                        sha.map(short_sha).unwrap_or("unknown")
                    ))
                },
            ) {
                n.add(
                    "dataset",
                    &["ingestion", "queries", "storage"],
                    format!("the runs read different {fmt} files of the dataset: {d}"),
                );
            }
        }
    }
    let queried = |c: &ReportColumn| c.query_set.is_some();
    if let Some(d) = differ(cols, queried, |c| {
        Some(if c.cold { "cold" } else { "warm" }.to_string())
    }) {
        n.add(
            "cold queries",
            &["queries"],
            format!("some runs restarted the server and dropped the page cache before each query type (--cold) and some did not: {d}; a cold latency includes reading from disk"),
        );
    }
    if let Some(d) = differ(cols, queried, |c| {
        Some(json!(c.query_set.as_ref().map(|q| &q.query_counts)).to_string())
    }) {
        n.add(
            "query set",
            &["queries"],
            format!("the runs ran different query types or counts: {d}"),
        );
    } else {
        // Same counts: runs of one query format must also share the generated queries.
        for fmt in crate::product::query_formats() {
            let same_fmt = |c: &ReportColumn| c.query_set.as_ref().is_some_and(|q| q.format == fmt);
            if let Some(d) = differ(cols, same_fmt, |c| {
                c.query_set
                    .as_ref()
                    .map(|q| short_sha(&q.manifest_sha256).to_string())
            }) {
                n.add(
                    "query set",
                    &["queries"],
                    format!("the runs used different {fmt} query sets: {d}"),
                );
            }
        }
    }
    if let Some(d) = differ(cols, all, |c| {
        let h = &c.host;
        Some(format!(
            "{}, {} CPUs, {} memory",
            h.cpu_model.as_deref().unwrap_or("unknown CPU"),
            h.cpus,
            crate::render::bytes(minijinja::Value::from_serialize(h.memory_bytes))
        ))
    }) {
        n.add(
            "host",
            &["ingestion", "queries", "storage"],
            format!("the runs ran on different hardware: {d}"),
        );
    } else if let Some(d) = differ(cols, all, |c| Some(c.host.hostname.clone())) {
        n.add(
            "host",
            &["ingestion", "queries", "storage"],
            format!("the runs ran on different hosts: {d}"),
        );
    }
    let loaded_cols: Vec<LoadedColumn> = cols
        .iter()
        .zip(loaded)
        .filter_map(|(col, l)| {
            let load = l.summary.ingestion.as_ref()?;
            (load.status == Status::Completed).then_some(LoadedColumn { col, load })
        })
        .collect();
    let all_loaded = |_: &LoadedColumn| true;
    if let Some(d) = differ(&loaded_cols, all_loaded, |c| {
        Some(format!(
            "{} x {} rows",
            crate::output::count_of(opt(c.load.workers), "worker"),
            opt(c.load.batch_size)
        ))
    }) {
        n.add(
            "write parameters",
            &["ingestion", "storage"],
            format!("the loads used different write parameters: {d}"),
        );
    }
    if let Some(d) = differ(
        &loaded_cols,
        |c| c.col.durability.is_some(),
        |c| {
            let d = c.col.durability.as_ref()?;
            Some(format!(
                "durable WAL acknowledgement {}, whole-batch rejection {}",
                yes(&json!(d.durable_write_acknowledgement)),
                yes(&json!(d.whole_batch_rejection))
            ))
        },
    ) {
        n.add(
            "durability",
            &["ingestion", "storage"],
            format!("the loads used different durability settings: {d}; ingestion is not ranked"),
        );
    }
    // PostgreSQL's commit durability (`prepare --durability`): durable commits and relaxed
    // ones are different measurements, never ranked against each other.
    if let Some(d) = differ(
        &loaded_cols,
        |c| c.col.server_settings["settings"]["durability"].is_string(),
        |c| {
            c.col.server_settings["settings"]["durability"]
                .as_str()
                .map(String::from)
        },
    ) {
        n.add(
            "durability",
            &["ingestion", "storage"],
            format!("the loads used different durability settings: {d}; ingestion is not ranked"),
        );
    }
    // Runs under limits their product declares (a licence), compared among the runs they
    // apply to; `server_settings` is product-specific: read as recorded.
    let limits = |c: &ReportColumn| {
        crate::product::resolve(&c.product, c.variant.as_deref())
            .ok()
            .and_then(|p| p.run_variants())
            .and_then(|v| v.limits.as_ref())
            .filter(|l| (l.applies)(c.variant.as_deref()))
    };
    if let Some(first) = cols.iter().find_map(limits) {
        if let Some(d) = differ(
            cols,
            |c| limits(c).is_some(),
            |c| (first.label)(&c.server_settings),
        ) {
            n.add(
                first.note_key,
                &["ingestion", "queries", "storage"],
                (first.report_note)(&d),
            );
        }
    }
    // Settings are product-specific: compared between runs of one product only (PostgreSQL
    // records its settings too, and has no such WAL knobs).
    let with_settings: BTreeSet<&str> = cols
        .iter()
        .filter(|c| c.server_settings.is_object())
        .map(|c| c.product.as_str())
        .collect();
    for product in with_settings {
        if let Some(d) = differ(
            cols,
            |c| c.server_settings.is_object() && c.product == product,
            |c| {
                let st = &c.server_settings;
                Some(format!(
                    "WAL flush {}, gen1 {}, snapshot after {} flushes",
                    s(&st["wal_flush_interval"]),
                    s(&st["gen1_duration"]),
                    s(&st["snapshot_after_wal_flushes"])
                ))
            },
        ) {
            n.add(
                "WAL settings",
                &["ingestion", "storage"],
                format!(
                    "the {} runs used different WAL settings: {d}",
                    crate::product::label(product, None)
                ),
            );
        }
    }
    if let Some(d) = differ(cols, queried, |c| {
        Some(crate::output::count_of(
            opt(c.workload.benchmark().map(|w| w.query_workers)),
            "query worker",
        ))
    }) {
        n.add(
            "query workers",
            &["queries"],
            format!("the runs used different query concurrency: {d}"),
        );
    }
    if let Some(d) = differ(cols, all, |c| c.environment.tsbs_commit.clone()) {
        n.add(
            "TSBS",
            &["ingestion", "queries"],
            format!("the runs used different TSBS builds: {d}"),
        );
    }
    data_notes(cols, &mut n);
    n
}

/// Runs of one product that queried data in different states or places (memtables vs SST
/// files): a caveat that says what differs, not a refusal (a before/after compaction view of
/// one workspace is what a report is for).
fn data_notes(cols: &[ReportColumn], n: &mut Notes) {
    use crate::product::ext::data_location;
    // An external server's run records no data state: nothing to compare it by.
    let queried = |c: &ReportColumn| c.query_set.is_some() && c.data_state.is_some();
    let product = |c: &ReportColumn| format!("{} {}", c.product, opt(c.variant.as_ref()));
    let state = |c: &ReportColumn| opt(c.data_state.as_ref());
    let loc = |c: &ReportColumn| c.data_location.clone().unwrap_or(Value::Null);
    let products: BTreeSet<String> = cols.iter().filter(|c| queried(c)).map(product).collect();
    for p in products {
        let runs: Vec<&ReportColumn> = cols
            .iter()
            .filter(|c| queried(c) && product(c) == p)
            .collect();
        let name = runs[0].product_label.clone();
        // Where the product says its data was (a product that records no place has none).
        let dl = data_location(&runs[0].product);
        let place = |c: &ReportColumn| dl.and_then(|dl| (dl.place)(&loc(c)));
        let places: BTreeSet<(u8, &str)> = runs.iter().filter_map(|c| place(c)).collect();
        let unknown = if runs
            .iter()
            .any(|c| DataState::label_unknown(&json!(c.data_state)))
        {
            " (a state unknown after interrupted or failed maintenance may be anything)"
        } else {
            ""
        };
        if places.len() > 1 {
            let each: Vec<String> = runs
                .iter()
                .filter(|c| place(c).is_some())
                .map(|c| {
                    let state = state(c);
                    // A label that already names the state ("... (after manual compaction)").
                    let state = if c.label.ends_with(&format!("({state})")) {
                        String::new()
                    } else {
                        format!("{state}: ")
                    };
                    format!(
                        "{} ({state}{}, {})",
                        c.label,
                        place(c).map_or("", |x| x.1),
                        dl.map_or(String::new(), |dl| (dl.describe)(&loc(c)))
                    )
                })
                .collect();
            n.add(
                "data location",
                &["queries"],
                format!(
                    "the {name} runs read their data from different places when the queries started: {}; {}{unknown}",
                    each.join(" vs "),
                    dl.map_or("", |dl| dl.report_why)
                ),
            );
        } else if let Some(d) = differ(cols, |c| queried(c) && product(c) == p, |c| Some(state(c)))
        {
            n.add(
                "data state",
                &["queries", "storage"],
                format!(
                    "the {name} runs measured different data states: {d}; their latencies show what the maintenance changed as well as the server{unknown}"
                ),
            );
        }
    }
}

fn yes(v: &Value) -> &'static str {
    match v.as_bool() {
        Some(true) => "yes",
        Some(false) => "no",
        None => "n/a",
    }
}

/// The storage cells of a run's product operations that declare them: for each, from its
/// section of the summary of the last completed run of it in the run's data state (its
/// maintenance record names it as messages do, [`crate::product::ext::Operation::noun`]),
/// when that run directory is still readable.
fn operation_storage(summary: &crate::summary::RunSummary) -> Vec<(&'static str, Value)> {
    let Some(state) = summary.data_state.as_ref() else {
        return Vec::new();
    };
    let Some(ext) = crate::product::resolve(&summary.product, None)
        .ok()
        .and_then(|p| p.bench_ext())
    else {
        return Vec::new();
    };
    let mut out = Vec::new();
    for op in ext.operations {
        let Some(own) = op.summary else {
            continue;
        };
        let Some(last) = state.maintenance.iter().rev().find(|r| {
            r.operation == op.noun() && r.status == crate::workspace::MaintenanceStatus::Completed
        }) else {
            continue;
        };
        // Another run's summary, maybe of an older version: only the section is needed.
        let Some(s) = std::fs::read(last.run_dir.join("summary.json"))
            .ok()
            .and_then(|t| serde_json::from_slice::<Value>(&t).ok())
        else {
            continue;
        };
        let section = &s[own.key];
        if !section.is_null() {
            out.extend((own.report_storage)(section));
        }
    }
    out
}

/// Unique column labels: a repeated label gets the run id.
fn labels(loaded: &[RecordedRun]) -> Vec<String> {
    let base: Vec<String> = loaded.iter().map(|l| l.summary.label.clone()).collect();
    base.iter()
        .zip(loaded)
        .map(|(b, l)| {
            if base.iter().filter(|x| *x == b).count() > 1 {
                format!("{b} [{}]", l.manifest.run_id)
            } else {
                b.clone()
            }
        })
        .collect()
}

/// Builds the report's `summary.json` (without its id) from loaded runs; `baseline` indexes
/// `loaded`.
pub fn build(loaded: &[RecordedRun], baseline: usize) -> Value {
    json!(build_report(loaded, baseline))
}

/// [`build`], typed.
pub fn build_report(loaded: &[RecordedRun], baseline: usize) -> Report {
    let names = labels(loaded);
    let cols: Vec<ReportColumn> = loaded
        .iter()
        .zip(&names)
        .enumerate()
        .map(|(i, (l, n))| column(l, n.clone(), COLORS[i % COLORS.len()]))
        .collect();
    let notes = comparability(&cols, loaded);

    // Ingestion, one cell per run.
    let mut ingestion: Vec<IngestionCell> = loaded
        .iter()
        .map(|l| {
            let i = l.summary.ingestion.as_ref();
            let d = l.summary.durability.as_ref();
            let status = i.map_or("none", |i| i.status.as_str());
            let note = match status {
                "completed" => None,
                "reused" => Some(format!(
                    "no load in this run: data of dataset {} loaded earlier",
                    i.and_then(|i| i.dataset_id.as_deref()).unwrap_or("-")
                )),
                "none" => Some("no load in this run".to_string()),
                other => Some(format!("load {other}")),
            };
            IngestionCell {
                status: status.to_string(),
                rows: i.and_then(|i| i.rows.flatten()),
                metrics: i.and_then(|i| i.metrics),
                rows_per_second: i.and_then(|i| i.rows_per_second.flatten()),
                metrics_per_second: i.and_then(|i| i.metrics_per_second),
                duration_seconds: i.and_then(|i| i.duration_seconds),
                workers: i.and_then(|i| i.workers),
                batch_size: i.and_then(|i| i.batch_size),
                durable_write_acknowledgement: d.map(|d| d.durable_write_acknowledgement),
                whole_batch_rejection: d.map(|d| d.whole_batch_rejection),
                note,
                fastest: false,
            }
        })
        .collect();
    // JSON has no NaN or infinity (they are written as null): neither can lead.
    let rate = |i: &IngestionCell| i.rows_per_second.filter(|v| v.is_finite());
    let best_rows = ingestion
        .iter()
        .filter_map(rate)
        .fold(None::<f64>, |m, v| Some(m.map_or(v, |m| m.max(v))));
    let rates: Vec<f64> = ingestion.iter().filter_map(rate).collect();
    // Loads of different durability measure different things: no ★ between them.
    let unranked = notes.all.iter().any(|n| n.aspect == "durability");
    for i in &mut ingestion {
        let v = rate(i);
        i.fastest = !unranked
            && v.is_some()
            && v == best_rows
            && rates.len() > 1
            && clear_lead(&rates, v.unwrap_or(0.0), |x, best| {
                best >= x * (1.0 + FASTEST_MARGIN)
            });
    }

    // Query latency: the union of types as rows.
    let mut types: BTreeSet<String> = BTreeSet::new();
    for l in loaded {
        for q in &l.summary.queries {
            types.insert(q.query_type.clone());
        }
    }
    let mut query_rows: Vec<QueryRow> = Vec::new();
    for t in &types {
        let mut cells: Vec<QueryCell> = loaded
            .iter()
            .map(|l| {
                let q = l.summary.queries.iter().find(|q| &q.query_type == t);
                let cell = |status: &str, mean_ms| QueryCell {
                    status: status.to_string(),
                    mean_ms,
                    median_ms: None,
                    p95_ms: None,
                    query_count: None,
                    stddev_ms: None,
                    failure: None,
                    reason: None,
                    log: None,
                    fastest: false,
                    lead_within_noise: false,
                    ratio: None,
                    interval_ms: None,
                    interval_source: None,
                    lead: None,
                };
                match q {
                    None => cell("absent", None),
                    Some(q) if q.status == "completed" && q.measured() => {
                        let (interval_ms, interval_source) =
                            stars::interval_json(stars::mean_interval(l, q));
                        QueryCell {
                            interval_ms,
                            interval_source,
                            median_ms: Some(q.median_ms.flatten()),
                            p95_ms: Some(q.p95_ms.flatten()),
                            query_count: Some(q.query_count),
                            stddev_ms: Some(q.stddev_ms.flatten()),
                            ..cell("completed", q.mean_ms)
                        }
                    }
                    Some(q) => {
                        let reason = q
                            .reason
                            .clone()
                            .flatten()
                            .unwrap_or_else(|| q.status.clone());
                        QueryCell {
                            failure: Some(failure_kind(&reason).to_string()),
                            reason: Some(reason),
                            log: Some(q.log.clone().flatten()),
                            ..cell("failed", None)
                        }
                    }
                }
            })
            .collect();
        let base = cells[baseline].mean();
        for c in cells.iter_mut() {
            let v = c.mean();
            c.ratio = match (v, base) {
                (Some(v), Some(b)) if b > 0.0 => Some(v / b),
                (Some(v), Some(b)) if b == 0.0 && v == 0.0 => Some(1.0),
                _ => None,
            };
        }
        query_rows.push(QueryRow {
            query_type: t.clone(),
            cells,
        });
    }

    // ★: the model of `runs compare`, Holm over the table's leads.
    stars::decide(loaded, &mut query_rows);

    // Storage footprint. The data-directory parts as each product names them; a product
    // that measures its database over SQL (PostgreSQL) has that size beside them.
    let parts: Vec<crate::product::FootprintParts> = loaded
        .iter()
        .map(|l| crate::product::footprint_parts(&l.summary.product, l.summary.variant.as_deref()))
        .collect();
    let measured_parts: Vec<crate::product::FootprintParts> = loaded
        .iter()
        .zip(&parts)
        .filter(|(l, _)| l.summary.storage.as_ref().is_some_and(Value::is_object))
        .map(|(_, p)| *p)
        .collect();
    let storage_parts = StorageParts::for_runs(&measured_parts);
    let storage: Vec<Value> = loaded
        .iter()
        .zip(&parts)
        .map(|(l, parts)| {
            let st = l.summary.storage.as_ref().unwrap_or(&Value::Null);
            let mut v = if st.is_null() {
                let why = if l.summary.target.mode == TargetMode::External {
                    "not measured: external server"
                } else {
                    "not measured in this run (measured after a load)"
                };
                json!({"measured": false, "note": why})
            } else {
                json!({
                    "measured": true,
                    "when": st["when"],
                    "wal_bytes": st["wal_bytes"],
                    "data_bytes": st["data_bytes"],
                    "other_bytes": st["other_bytes"],
                    "total_bytes": st["total_bytes"],
                    "files": st["files"],
                    "index_bytes": st["index_bytes"],
                    "metadata_bytes": st["metadata_bytes"],
                    "metadata_used_bytes": st["metadata_used_bytes"],
                    "metadata_preallocated_bytes": st["metadata_preallocated_bytes"],
                    "misc_bytes": st["misc_bytes"],
                    "never_flushed": st["never_flushed"],
                    "after_forced_stop": st["after_forced_stop"],
                    "note": null,
                    // `.pt` footprints (InfluxDB 3 Enterprise 3.11): a total, not a split.
                    "split_note": st["split_note"],
                })
            };
            if let (Value::Object(cell), Ok(sql)) =
                (&mut v, serde_json::from_value::<SqlFootprint>(st.clone()))
            {
                // The headings are neutral when the products name their parts differently:
                // this run's cell says what its parts are.
                let own = StorageParts::of(parts);
                let parts_note = (own != storage_parts).then(|| {
                    format!(
                        "the rows {} / {} / {} are its {} / {} / {}",
                        storage_parts.wal,
                        storage_parts.data,
                        storage_parts.other,
                        own.wal,
                        own.data,
                        own.other
                    )
                });
                // Measured over SQL (the product's after-load footprint): rows of its own.
                let measured_sql = sql.database_bytes.is_some();
                let extra = json!({
                    "database_bytes": sql.database_bytes,
                    "table_bytes": sql.table_bytes.filter(|_| measured_sql),
                    "table_index_bytes": sql.index_bytes.filter(|_| measured_sql),
                    "load_wal_bytes": sql.load_wal_bytes.filter(|_| measured_sql),
                    "parts": parts,
                    "parts_note": parts_note,
                });
                if let Value::Object(extra) = extra {
                    cell.extend(extra);
                }
            }
            // What the product's operation that produced this state measured of it
            // (GreptimeDB: SST bytes after the flush and after its compaction).
            for (k, x) in operation_storage(&l.summary) {
                v[k] = x;
            }
            v["data_location"] = json!(l.summary.data_location);
            // Data files on disk the product's own record does not hold (GreptimeDB: SSTs a
            // stop threw away), as the product counts them from where its data was and the
            // footprint: counted in the data files, said beside them as summary.md does.
            let loc = l.summary.data_location.clone().unwrap_or(Value::Null);
            if let Some(n) = crate::product::ext::data_location(&l.summary.product)
                .and_then(|dl| (dl.orphan_files)(&loc, st))
            {
                v["orphan_files"] = json!(n);
                v["data_files"] = json!(st["data_files"].as_u64());
            }
            // What the data left behind costs at the next start (InfluxDB 3 Core: its WAL
            // replay), beside what it takes on disk.
            v["restart_seconds"] = json!(l
                .summary
                .server_diagnostics
                .attempts
                .iter()
                .find(|a| a.after_load.is_some())
                .and_then(|a| a.ready_seconds));
            v
        })
        .collect();

    // Failures.
    let mut failures: Vec<FailureRow> = Vec::new();
    for (l, name) in loaded.iter().zip(&names) {
        for f in &l.summary.failures {
            failures.push(FailureRow {
                run: name.clone(),
                run_id: l.manifest.run_id.clone(),
                stage: f.stage.clone(),
                step: f.step.clone(),
                kind: failure_kind(&f.reason).to_string(),
                reason: f.reason.clone(),
                log: f.log.as_ref().map(|p| l.dir.join(p)),
            });
        }
    }

    let warnings: Vec<String> = notes.all.iter().map(|n| n.detail.clone()).collect();
    // A run still running (or that never finished) has numbers still to come (#28).
    let incomplete = cols
        .iter()
        .filter(|c| c.status != Status::Completed)
        .map(|c| {
            format!(
                "run {} is {}: its numbers are incomplete",
                c.run_id,
                if c.status == Status::Running {
                    "still running"
                } else {
                    c.status.words()
                }
            )
        })
        .collect();
    let timelines = timelines(loaded, &query_rows);
    let answers = answer_rows(loaded, &cols);
    Report {
        answers,
        answer_digits: crate::answers::SIGNIFICANT_DIGITS,
        schema_version: SCHEMA_VERSION,
        kind: "report".into(),
        report_id: None,
        created_at: crate::manifest::now_rfc3339(),
        tool: ToolInfo::current(),
        baseline: cols[baseline].run_id.clone(),
        baseline_index: baseline,
        baseline_label: cols[baseline].label.clone(),
        comparable: warnings.is_empty(),
        warnings,
        incomplete,
        notes: TableNotes {
            ingestion: notes.for_table("ingestion"),
            queries: notes.for_table("queries"),
            storage: notes.for_table("storage"),
        },
        runs: cols,
        ingestion,
        query_counts: (0..loaded.len())
            .map(|i| {
                let n: Vec<u64> = query_rows
                    .iter()
                    .filter_map(|r| r.cells.get(i)?.query_count.flatten())
                    .collect();
                match (n.iter().min(), n.iter().max()) {
                    (Some(a), Some(b)) if a == b => a.to_string(),
                    (Some(a), Some(b)) => format!("{a}–{b}"),
                    _ => "-".into(),
                }
            })
            .collect(),
        queries: query_rows,
        storage,
        storage_parts,
        failures,
        timelines,
    }
}

/// Each run's resource timeline, its failed query types marked.
fn timelines(loaded: &[RecordedRun], rows: &[QueryRow]) -> Vec<timeline::RunTimeline> {
    loaded
        .iter()
        .enumerate()
        .map(|(i, l)| {
            let failed: Vec<(String, String)> = rows
                .iter()
                .filter_map(|r| {
                    let c = r.cells.get(i)?;
                    Some((r.query_type.clone(), c.failure.clone()?))
                })
                .collect();
            timeline::of(l, &failed)
        })
        .collect()
}

/// Chart geometry derived from a report summary (the HTML draws it; nothing else).
pub fn charts(summary: &Report) -> Value {
    let runs = &summary.runs;
    let n = runs.len().max(1) as f64;
    let (width, bar_h, gap) = (560.0, 14.0, 12.0);
    // Room for the longest label (11 px text is about 6.3 px per character).
    let left_for = |labels: Vec<usize>| {
        (labels.into_iter().max().unwrap_or(10) as f64 * 6.3 + 14.0).clamp(80.0, 420.0)
    };
    let left = left_for(
        summary
            .queries
            .iter()
            .map(|r| r.query_type.chars().count())
            .collect(),
    );
    // Latency: log10 scale over whole decades around the values.
    let mut vals: Vec<f64> = Vec::new();
    for r in &summary.queries {
        for c in &r.cells {
            if let Some(v) = c.mean().filter(|v| *v > 0.0) {
                vals.push(v);
                // The whiskers are on the scale too (a low end at or below 0 is cut).
                if let Some([a, b]) = c.interval_ms {
                    vals.extend([a, b].into_iter().filter(|x| *x > 0.0 && x.is_finite()));
                }
            }
        }
    }
    let lo = vals
        .iter()
        .cloned()
        .fold(f64::INFINITY, f64::min)
        .log10()
        .floor();
    let hi = vals
        .iter()
        .cloned()
        .fold(f64::NEG_INFINITY, f64::max)
        .log10()
        .ceil();
    let (lo, hi) = if vals.is_empty() {
        (0.0, 1.0)
    } else if hi <= lo {
        (lo, lo + 1.0)
    } else {
        (lo, hi)
    };
    let x = |v: f64| ((v.log10() - lo) / (hi - lo) * width).max(2.0);
    let top = 30.0;
    let mut groups = Vec::new();
    let mut y = top;
    for r in &summary.queries {
        let mut bars = Vec::new();
        let gy = y;
        for (i, c) in r.cells.iter().enumerate() {
            let by = y + i as f64 * bar_h;
            let color = runs.get(i).map_or("#888", |r| r.color.as_str());
            match c.mean() {
                Some(v) if v > 0.0 => {
                    // The whisker: the 95% interval of the mean, cut at the scale's ends.
                    let whisker = c.interval_ms.map(|[a, b]| {
                        let lo = if a > 0.0 {
                            x(a.max(10f64.powf(lo)))
                        } else {
                            0.0
                        };
                        json!({"x1": left + lo, "x2": left + x(b), "y": by + (bar_h - 2.0) / 2.0,
                               "y1": by + 2.0, "y2": by + bar_h - 4.0})
                    });
                    let end = c.interval_ms.map_or(x(v), |[_, b]| x(b).max(x(v)));
                    let iv = c.interval_ms.map_or(String::new(), |[a, b]| {
                        format!(
                            ", 95% interval {a:.2}–{b:.2} ms ({})",
                            c.interval_source.as_deref().unwrap_or("-")
                        )
                    });
                    bars.push(json!({
                        "x": left, "y": by, "w": x(v), "h": bar_h - 2.0, "color": color,
                        "text": format!("{v:.2} ms{}", if c.fastest { " ★" } else { "" }),
                        "title": format!("{v:.2} ms{iv}"),
                        "tx": left + end + 4.0, "ty": by + bar_h - 4.0, "failed": false,
                        "whisker": whisker,
                    }))
                }
                // A failed type is drawn as such: a hatched box that says why.
                _ if c.status == "failed" => {
                    let kind = c.failure.as_deref().unwrap_or("failed");
                    let w = (kind.chars().count() as f64 * 7.0 + 14.0).max(40.0);
                    bars.push(json!({
                        "x": left, "y": by, "w": w, "h": bar_h - 2.0, "color": color,
                        "text": if kind == "OOM" { "OOM".to_string() } else { kind.to_string() },
                        "title": c.reason.clone().unwrap_or_default(),
                        "tx": left + 5.0, "ty": by + bar_h - 4.0, "failed": true,
                    }))
                }
                _ => {}
            }
        }
        y += n * bar_h + gap;
        groups.push(json!({
            "label": r.query_type,
            "ly": gy + n * bar_h / 2.0 + 4.0,
            "bars": bars,
        }));
    }
    let ticks: Vec<Value> = (lo as i64..=hi as i64)
        .map(|e| {
            let v = 10f64.powi(e as i32);
            let label = if v >= 1.0 {
                format!("{v:.0}")
            } else {
                format!("{v}")
            };
            json!({"x": left + (e as f64 - lo) / (hi - lo) * width, "label": format!("{label} ms")})
        })
        .collect();
    // What each run's whiskers were computed from.
    let intervals: Vec<Value> = runs
        .iter()
        .enumerate()
        .map(|(i, r)| {
            let src: Vec<Option<String>> = summary
                .queries
                .iter()
                .map(|q| q.cells.get(i).and_then(|c| c.interval_source.clone()))
                .collect();
            json!({"label": r.label, "color": r.color, "from": stars::sources_legend(&src)})
        })
        .collect();
    let latency = json!({
        "intervals": intervals,
        "width": left + width + 170.0,
        "height": y + 10.0,
        "left": left,
        "top": top,
        "bottom": y - gap,
        "ticks": ticks,
        "groups": groups,
    });

    // Ingestion: linear rows/s.
    let ing = &summary.ingestion;
    let left = left_for(runs.iter().map(|r| r.label.chars().count()).collect());
    // JSON has no NaN or infinity: such a rate draws nothing, as `null` did.
    let rate = |c: &IngestionCell| c.rows_per_second.filter(|v| v.is_finite());
    let max = ing.iter().filter_map(rate).fold(0.0, f64::max);
    let mut ibars = Vec::new();
    for (i, c) in ing.iter().enumerate() {
        let by = top + i as f64 * (bar_h + 8.0);
        let run = runs.get(i);
        let text = match rate(c) {
            Some(v) => format!("{} rows/s", thousands(v)),
            None => c.note.clone().unwrap_or_else(|| "no load".into()),
        };
        let w = match rate(c) {
            Some(v) if max > 0.0 => (v / max * width).max(2.0),
            _ => 0.0,
        };
        ibars.push(json!({
            "label": run.map(|r| &r.label), "x": left, "y": by, "w": w, "h": bar_h,
            "color": run.map(|r| &r.color), "text": text, "tx": left + w + 4.0, "ty": by + bar_h - 3.0,
            "ly": by + bar_h - 3.0,
        }));
    }
    let ingestion = json!({
        "width": left + width + 200.0,
        "height": top + ing.len() as f64 * (bar_h + 8.0) + 10.0,
        "left": left,
        "bars": ibars,
        "any": max > 0.0,
    });
    json!({"latency": latency, "ingestion": ingestion})
}

fn thousands(v: f64) -> String {
    crate::render::num(minijinja::Value::from(v), Some(0))
}

/// Renders `summary.md` and `report.html` of a report summary.
pub fn render(summary: &Report) -> Result<(String, String)> {
    // Each product words its own sections (`<product>/report.md/<slot>`, `.../report.html/...`).
    let mut md_env = crate::render::template_env("report.md", MD_TEMPLATE)?;
    crate::product::add_product_templates(&mut md_env)?;
    let md = md_env
        .get_template("report.md")
        .and_then(|t| t.render(minijinja::Value::from_serialize(summary)))
        .map_err(|e| Error::failed(format!("rendering report.md: {e}")))?;
    let mut html_env = crate::render::template_env("report.html", HTML_TEMPLATE)?;
    crate::product::add_product_templates(&mut html_env)?;
    let ctx = minijinja::context! {
        r => minijinja::Value::from_serialize(summary),
        charts => minijinja::Value::from_serialize(charts(summary)),
        timelines => minijinja::Value::from_serialize(
            summary.timelines.iter().map(timeline::geometry).collect::<Vec<_>>()
        ),
    };
    let html = html_env
        .get_template("report.html")
        .and_then(|t| t.render(ctx))
        .map_err(|e| Error::failed(format!("rendering report.html: {e}")))?;
    Ok((md, html))
}

/// Runs `runs report`.
/// What `runs report` wrote; the CLI words it for a person (`src/cli/runs.rs`).
#[derive(Debug, Clone)]
pub struct Reported {
    pub id: String,
    pub dir: PathBuf,
    /// How many runs the report covers.
    pub runs: usize,
    pub summary: Report,
}

impl Reported {
    /// The `data` object of the JSON envelope.
    pub fn data(&self) -> Value {
        let (dir, summary) = (&self.dir, &self.summary);
        json!({
            "report_id": self.id,
            "report_dir": dir,
            "report_html": dir.join("report.html"),
            "summary_md": dir.join("summary.md"),
            "summary_json": dir.join("summary.json"),
            "comparable": summary.comparable,
            "warnings": summary.warnings,
            "summary": summary,
        })
    }
}

pub fn run(ctx: &Ctx, req: &Request) -> Result<Reported> {
    if req.runs.is_empty() {
        return Err(Error::invalid("no run to report on")
            .with_hint("pass one or more runs: tsbsctl runs report RUN [RUN ...]"));
    }
    let rep = ctx.reporter.as_ref();
    let mut loaded: Vec<RecordedRun> = Vec::new();
    for r in &req.runs {
        let l = runlist::load(&ctx.root, r, rep)?;
        if loaded.iter().any(|x| x.dir == l.dir) {
            return Err(
                Error::invalid(format!("run {} is named twice", l.manifest.run_id))
                    .with_hint("name each run once"),
            );
        }
        loaded.push(l);
    }
    let baseline = match &req.baseline {
        None => 0,
        Some(b) => {
            let l = runlist::load(&ctx.root, b, rep)?;
            match loaded.iter().position(|x| x.dir == l.dir) {
                Some(i) => i,
                None => {
                    loaded.insert(0, l);
                    0
                }
            }
        }
    };
    for l in &loaded {
        if l.summary.run_kind != RunKind::Benchmark {
            return Err(Error::invalid(format!(
                "run {} is a {} run, not a benchmark",
                l.manifest.run_id,
                l.summary.run_kind.as_str()
            ))
            .with_hint(format!(
                "report on benchmark runs; a {} shows in the data state of the query runs after it",
                l.manifest
                    .operation()
                    .map_or("maintenance run", |o| o.noun())
            )));
        }
    }
    let mut summary = build_report(&loaded, baseline);
    let files = |summary: &mut Report, id: &str| -> Result<Vec<(String, Vec<u8>)>> {
        summary.report_id = Some(id.to_string());
        let (md, html) = render(summary)?;
        let mut files = vec![
            (
                "summary.json".into(),
                crate::publish::pretty(&json!(summary))?,
            ),
            ("summary.md".into(), md.into_bytes()),
            ("report.html".into(), html.into_bytes()),
        ];
        files.push(crate::userpath::report_digests(&files)?);
        Ok(files)
    };
    let (id, dir) = match &req.out {
        None => crate::publish::publish(&ctx.root.reports(), |id| files(&mut summary, id))
            .map_err(|e| {
                // A read-only or full root (an archive, a mounted copy) can still report.
                if e.kind == crate::error::ErrorKind::Failed && e.hint.is_none() {
                    e.with_hint(format!(
                        "the reports directory {} cannot be written; pass --out DIR to write the report elsewhere",
                        ctx.root.reports().display()
                    ))
                } else {
                    e
                }
            })?,
        Some(out) => {
            // Never over a user's files or tsbsctl's state (trial-run #2).
            crate::userpath::check_report_out(&ctx.root, out)?;
            let id = out
                .file_name()
                .map(|n| n.to_string_lossy().into_owned())
                .unwrap_or_else(|| "report".into());
            let fs = files(&mut summary, &id)?;
            if out.exists() {
                if !out.is_dir() {
                    return Err(Error::invalid(format!(
                        "--out {} exists and is not a directory",
                        out.display()
                    ))
                    .with_hint("pass a directory (created when missing)"));
                }
                // The record first accepts both the old and the new bytes, so a crash between
                // two renames leaves files the next --out still knows as its own (N11).
                let interim = crate::userpath::interim_report_digests(out, &fs)?;
                crate::fsutil::write_atomic_in_place(&out.join(&interim.0), &interim.1)?;
                for (name, bytes) in &fs {
                    crate::fsutil::write_atomic_in_place(&out.join(name), bytes)?;
                }
            } else {
                if let Some(p) = out.parent().filter(|p| !p.as_os_str().is_empty()) {
                    fs_err::create_dir_all(p)?;
                }
                let staging = crate::fsutil::staging_path(out, "stage")?;
                crate::publish::write_dir(&staging, &fs)?;
                if let Err(e) = crate::fsutil::rename_durable(&staging, out) {
                    let _ = std::fs::remove_dir_all(&staging);
                    return Err(e);
                }
            }
            (id, out.clone())
        }
    };
    Ok(Reported {
        id,
        dir,
        runs: loaded.len(),
        summary,
    })
}

/// ★ "fastest" only for a lead larger than this fraction: a 0.3% difference is noise, not a
/// winner (trial-run #30).
pub const FASTEST_MARGIN: f64 = 0.05;

/// True when only `best` itself is within the margin of `best`: `beats(other, best)` says
/// that `other` trails `best` by more than the margin.
fn clear_lead(values: &[f64], best: f64, beats: impl Fn(f64, f64) -> bool) -> bool {
    values.iter().filter(|v| !beats(**v, best)).count() == 1
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn defect_30_no_fastest_mark_within_the_margin() {
        let lower_is_better = |x: f64, best: f64| x >= best * (1.0 + FASTEST_MARGIN);
        assert!(!clear_lead(&[10.0, 10.03], 10.0, lower_is_better));
        assert!(clear_lead(&[10.0, 12.0], 10.0, lower_is_better));
        assert!(!clear_lead(&[10.0, 10.0, 20.0], 10.0, lower_is_better));
        let higher_is_better = |x: f64, best: f64| best >= x * (1.0 + FASTEST_MARGIN);
        assert!(!clear_lead(&[1000.0, 997.0], 1000.0, higher_is_better));
        assert!(clear_lead(&[1000.0, 500.0], 1000.0, higher_is_better));
    }

    use crate::compare::tests::loaded_with;

    fn run(
        label: &str,
        product: &str,
        state: &str,
        location: Value,
        queries: Value,
    ) -> RecordedRun {
        loaded_with(
            label,
            json!({
                "label": label, "product": product, "product_label": product,
                "status": "completed", "run_kind": "benchmark",
                "data_state": {"label": state}, "data_location": location,
                "query_set": {"query_counts": {"q": 10}, "format": "x", "manifest_sha256": "abc"},
                "dataset": {"dataset_id": "d", "sha256": "s"},
                "ingestion": {"status": "reused"},
                "queries": queries,
            }),
        )
    }

    /// PostgreSQL loads of different durability (`prepare --durability`) are said at the top
    /// and never ranked; of the same durability, the faster is.
    #[test]
    fn loads_of_different_durability_are_not_ranked() {
        let pg = |label: &str, durability: &str, rate: f64| {
            let mut r = run(label, "timescaledb", "as loaded", Value::Null, q(3.0, 0.1));
            r.summary.server_settings =
                json!({"mode": "postgresql", "settings": {"durability": durability}});
            r.summary.ingestion = serde_json::from_value(json!({
                "attempt": 1, "status": "completed", "database": "benchmark",
                "database_mode": null, "dataset_id": "d", "workers": 8, "batch_size": 10000,
                "log": null, "results_file": null, "started_at": "t", "finished_at": "t",
                "rows": 1000, "rows_per_second": rate,
            }))
            .unwrap();
            r
        };
        let r = build_report(&[pg("A", "durable", 100.0), pg("B", "relaxed", 300.0)], 0);
        assert!(
            r.warnings.iter().any(|w| w.contains(
                "different durability settings: A durable, B relaxed; ingestion is not ranked"
            ) || (w.contains("different durability settings")
                && w.contains("not ranked"))),
            "{:?}",
            r.warnings
        );
        assert!(r.ingestion.iter().all(|i| !i.fastest), "{:?}", r.ingestion);
        let r = build_report(&[pg("A", "durable", 100.0), pg("B", "durable", 300.0)], 0);
        assert!(r.ingestion[1].fastest, "{:?}", r.ingestion);
        // One load beside a run without one: nothing to rank it against.
        let mut no_load = pg("B", "durable", 0.0);
        no_load.summary.ingestion = None;
        let r = build_report(&[pg("A", "durable", 100.0), no_load], 0);
        assert!(r.ingestion.iter().all(|i| !i.fastest), "{:?}", r.ingestion);
    }

    /// A PostgreSQL run's storage is its database size over SQL, with its data directory
    /// named for what it is; beside a GreptimeDB run the data-directory headings are neutral
    /// and each run says what its parts are.
    #[test]
    fn storage_names_each_products_parts_and_the_sql_size_of_postgresql() {
        let dir = json!({"when": "at-rest", "wal_bytes": 50339840, "data_bytes": 48139988,
            "other_bytes": 695569, "total_bytes": 99175397, "files": 9});
        let postgres = || {
            let mut pg = run(
                "PostgreSQL 15.18 (no TimescaleDB)",
                "timescaledb",
                "as loaded",
                Value::Null,
                q(3.0, 0.1),
            );
            pg.summary.variant = Some("postgresql".into());
            let mut st = dir.clone();
            for (k, v) in [
                ("database_bytes", 25533799u64),
                ("table_bytes", 11534336),
                ("index_bytes", 6111232),
                ("load_wal_bytes", 32426736),
            ] {
                st[k] = json!(v);
            }
            pg.summary.storage = Some(st);
            pg
        };
        let mut g = run(
            "GreptimeDB",
            "greptimedb",
            "as loaded",
            Value::Null,
            q(2.0, 0.1),
        );
        g.summary.storage = Some(dir.clone());
        let r = build_report(&[postgres(), g], 0);
        assert_eq!(r.storage_parts.data, "Data files");
        assert_eq!(r.storage[0]["database_bytes"], 25533799);
        assert_eq!(r.storage[0]["table_index_bytes"], 6111232);
        assert!(r.storage[1]["database_bytes"].is_null());
        let note = r.storage[0]["parts_note"].as_str().unwrap();
        assert!(
            note.contains("`base/`") && note.contains("`pg_wal/`"),
            "{note}"
        );
        assert!(r.storage[1]["parts_note"]
            .as_str()
            .unwrap()
            .contains("Parquet/SST"));
        let (md, html) = render(&r).unwrap();
        assert!(
            md.contains("| Database size (measured over SQL) | 24.35 MiB | - |"),
            "{md}"
        );
        assert!(md.contains("| Total (data directory) |"), "{md}");
        assert!(md.contains("its total is not the database's size"), "{md}");
        assert!(!md.contains("| Data files (Parquet/SST) |"), "{md}");
        assert!(html.contains("Database size (measured over SQL)"), "{html}");
        assert!(
            html.contains("(pg_wal&#x2f;)") && !html.contains("`pg_wal"),
            "{html}"
        );
        // PostgreSQL alone: its own headings, no note to translate them.
        let r = build_report(&[postgres(), postgres()], 0);
        assert_eq!(
            r.storage_parts.data,
            "Databases (`base/`: all of the cluster's)"
        );
        assert!(r.storage[0]["parts_note"].is_null());
        // GreptimeDB and InfluxDB 3 keep the headings they had, without a SQL row.
        let mut i = run("Core", "influxdb3", "as loaded", Value::Null, q(2.0, 0.1));
        i.summary.variant = Some("core".into());
        i.summary.storage = Some(dir.clone());
        let mut g = run(
            "GreptimeDB",
            "greptimedb",
            "as loaded",
            Value::Null,
            q(2.0, 0.1),
        );
        g.summary.storage = Some(dir);
        let (md, _) = render(&build_report(&[g, i], 0)).unwrap();
        assert!(md.contains("| Data files (Parquet/SST) |"), "{md}");
        assert!(
            !md.contains("measured over SQL") && !md.contains("(data directory)"),
            "{md}"
        );
    }

    /// One logical dataset read in two formats is one dataset (issue 15: PostgreSQL reads the
    /// timescaledb file, the others the influx one); two files of one format that differ are
    /// said; PostgreSQL's recorded settings are not compared as InfluxDB 3 WAL settings.
    #[test]
    fn formats_of_one_dataset_and_settings_of_another_product_are_not_differences() {
        let ds = |fmt: &str, sha: &str| json!({"dataset_id": "tiny", "spec": {"scale": 2}, "format": fmt, "sha256": sha});
        let mut pg = run(
            "PostgreSQL",
            "timescaledb",
            "as loaded",
            Value::Null,
            q(3.0, 0.1),
        );
        pg.summary.dataset = serde_json::from_value(ds("timescaledb", "f5e8")).ok();
        pg.summary.server_settings = json!({"mode": "postgresql", "settings": {"port": 1}});
        let mut core = run("Core", "influxdb3", "as loaded", Value::Null, q(3.0, 0.1));
        core.summary.dataset = serde_json::from_value(ds("influx", "d9b6")).ok();
        core.summary.server_settings = json!({"wal_flush_interval": "1s",
            "gen1_duration": "10m", "snapshot_after_wal_flushes": 900});
        let mut g = run(
            "GreptimeDB",
            "greptimedb",
            "as loaded",
            Value::Null,
            q(3.0, 0.1),
        );
        g.summary.dataset = serde_json::from_value(ds("influx", "d9b6")).ok();
        let r = build_report(&[pg, core, g], 0);
        assert!(r.warnings.is_empty(), "{:?}", r.warnings);
        // The influx file of another generation: said, for that format.
        let mut other = run(
            "GreptimeDB again",
            "greptimedb",
            "as loaded",
            Value::Null,
            q(3.0, 0.1),
        );
        other.summary.dataset = serde_json::from_value(ds("influx", "0000")).ok();
        let mut g = run(
            "GreptimeDB",
            "greptimedb",
            "as loaded",
            Value::Null,
            q(3.0, 0.1),
        );
        g.summary.dataset = serde_json::from_value(ds("influx", "d9b6")).ok();
        let r = build_report(&[g, other], 0);
        assert!(
            r.warnings
                .iter()
                .any(|w| w.contains("different influx files of the dataset")),
            "{:?}",
            r.warnings
        );
        // Another spec under the same id is another dataset.
        let mut a = run("A", "greptimedb", "as loaded", Value::Null, q(3.0, 0.1));
        a.summary.dataset = serde_json::from_value(ds("influx", "d9b6")).ok();
        let mut b = run("B", "greptimedb", "as loaded", Value::Null, q(3.0, 0.1));
        let mut d = ds("influx", "d9b6");
        d["spec"]["scale"] = json!(4);
        b.summary.dataset = serde_json::from_value(d).ok();
        let r = build_report(&[a, b], 0);
        assert!(
            r.warnings.iter().any(|w| w.contains("different datasets")),
            "{:?}",
            r.warnings
        );
    }

    fn q(mean: f64, sd: f64) -> Value {
        json!([{"query_type": "single-groupby-5-1-1", "status": "completed", "query_count": 10,
                "mean_ms": mean, "median_ms": mean, "p95_ms": mean, "stddev_ms": sd}])
    }

    fn loc(sst: u64, mem: u64) -> Value {
        json!({"information_schema": true, "sst_num": sst, "sst_size": sst * 2_500_000, "memtable_size": mem})
    }

    #[test]
    fn issue_16_memtables_vs_sst_of_one_product_is_a_caveat_at_the_top_and_on_latency() {
        // The README's four runs: GreptimeDB as loaded read 0 SSTs, after compaction 12.
        let mut core = run("Core", "influxdb3", "as loaded", Value::Null, q(40.0, 0.1));
        core.summary.variant = Some("core".into());
        // External: no data state recorded, nothing to compare it by.
        let mut ent = run("Enterprise", "influxdb3", "-", Value::Null, q(45.0, 0.1));
        ent.summary.variant = Some("enterprise".into());
        ent.summary.data_state = None;
        let runs = vec![
            run(
                "GreptimeDB",
                "greptimedb",
                "as loaded",
                loc(0, 28 << 20),
                q(30.0, 0.1),
            ),
            core,
            ent,
            run(
                "GreptimeDB (after manual compaction)",
                "greptimedb",
                "after manual compaction",
                loc(12, 0),
                q(20.0, 0.1),
            ),
        ];
        let s = build(&runs, 0);
        assert_eq!(s["comparable"], false);
        let w = s["warnings"].to_string();
        assert!(
            w.contains("GreptimeDB (as loaded: memtables only, 0 SST files"),
            "{w}"
        );
        assert!(
            w.contains("GreptimeDB (after manual compaction) (SST files only, 12 SST files"),
            "{w}"
        );
        assert!(w.contains("--flush-before-queries"), "{w}");
        let qn = s["notes"]["queries"].as_array().unwrap();
        assert_eq!(qn.len(), 1, "only the GreptimeDB pair differs: {qn:?}");
        assert_eq!(qn[0]["aspect"], "data location");
        assert!(qn[0]["detail"]
            .as_str()
            .unwrap()
            .contains("different places"));
        // Both read SST files: a different state is still said, but no location caveat.
        let runs = vec![
            run(
                "a",
                "greptimedb",
                "as loaded, flushed",
                loc(3, 0),
                q(30.0, 0.1),
            ),
            run(
                "b",
                "greptimedb",
                "after manual compaction",
                loc(1, 0),
                q(20.0, 0.1),
            ),
        ];
        let s = build(&runs, 0);
        let w = s["warnings"].to_string();
        assert!(!w.contains("different places"), "{w}");
        assert!(w.contains("different data states: "), "{w}");
        assert!(!w.contains("may be anything"), "{w}");
        assert!(
            w.contains("a (as loaded, flushed)") && w.contains("b (after manual compaction)"),
            "{w}"
        );
        // Labels that already say the state do not get it twice (as on the real 5.2 M run).
        let labelled = vec![
            run(
                "g (as loaded, flushed)",
                "greptimedb",
                "as loaded, flushed",
                loc(3, 0),
                q(30.0, 0.1),
            ),
            run(
                "g (after manual compaction)",
                "greptimedb",
                "after manual compaction",
                loc(1, 0),
                q(20.0, 0.1),
            ),
        ];
        let w = build(&labelled, 0)["warnings"].to_string();
        assert!(
            w.contains("g (after manual compaction) vs g (as loaded, flushed);"),
            "{w}"
        );
        let runs = vec![
            run(
                "a",
                "greptimedb",
                "as loaded, flushed",
                loc(3, 0),
                q(30.0, 0.1),
            ),
            run(
                "b",
                "greptimedb",
                "maintenance interrupted: state unknown",
                loc(1, 0),
                q(20.0, 0.1),
            ),
        ];
        let w = build(&runs, 0)["warnings"].to_string();
        assert!(w.contains("may be anything"), "{w}");
        // Like with like: nothing.
        let runs = vec![
            run(
                "a",
                "greptimedb",
                "as loaded, flushed",
                loc(3, 0),
                q(30.0, 0.1),
            ),
            run(
                "b",
                "greptimedb",
                "as loaded, flushed",
                loc(3, 0),
                q(20.0, 0.1),
            ),
        ];
        assert_eq!(build(&runs, 0)["warnings"], json!([]));
    }

    #[test]
    fn issue_16_no_fastest_mark_inside_the_noise() {
        // The trial: 26.91 ms (sd 0.52) vs 28.31 ms (sd 3.27), n 10 each: t ≈ 1.34.
        let runs = vec![
            run("a", "greptimedb", "as loaded", Value::Null, q(26.91, 0.52)),
            run("b", "greptimedb", "as loaded", Value::Null, q(28.31, 3.27)),
        ];
        let s = build(&runs, 0);
        let cells = &s["queries"][0]["cells"];
        assert_eq!(cells[0]["fastest"], false, "{cells}");
        assert_eq!(cells[0]["lead_within_noise"], true, "{cells}");
        // The same 5% lead with tight spreads is still inside the run-to-run drift the model
        // assumes (one run per side cannot measure it); twice as fast with tight spreads is a lead.
        let runs = vec![
            run("a", "greptimedb", "as loaded", Value::Null, q(26.91, 0.52)),
            run("b", "greptimedb", "as loaded", Value::Null, q(28.31, 0.52)),
        ];
        let s = build(&runs, 0);
        assert_eq!(s["queries"][0]["cells"][0]["fastest"], false);
        let runs = vec![
            run("a", "greptimedb", "as loaded", Value::Null, q(26.91, 0.52)),
            run("b", "greptimedb", "as loaded", Value::Null, q(56.31, 0.52)),
        ];
        let s = build(&runs, 0);
        assert_eq!(s["queries"][0]["cells"][0]["fastest"], true);
        // No spread known: the margin alone decides.
        let runs = vec![
            run("a", "greptimedb", "as loaded", Value::Null, q(26.91, 0.52)),
            run(
                "b",
                "greptimedb",
                "as loaded",
                Value::Null,
                json!([{"query_type": "single-groupby-5-1-1", "status": "completed", "query_count": 10, "mean_ms": 28.31}]),
            ),
        ];
        assert_eq!(build(&runs, 0)["queries"][0]["cells"][0]["fastest"], true);
    }

    /// Issue 24 §7: a type the server died under is drawn as "server crashed" (or OOM) in the
    /// chart and the table, never as a number or a blank; a run without a timeline says why.
    #[test]
    fn a_crashed_type_is_drawn_as_such_and_a_run_without_samples_says_why() {
        let crashed = json!([{"query_type": "single-groupby-5-1-1", "status": "failed",
            "reason": "the server died during query type single-groupby-5-1-1 (server crashed): exited with code 101"}]);
        let runs = vec![
            run("a", "greptimedb", "as loaded", Value::Null, q(3.0, 0.1)),
            run("b", "greptimedb", "as loaded", Value::Null, crashed),
        ];
        let r = build_report(&runs, 0);
        assert_eq!(
            r.queries[0].cells[1].failure.as_deref(),
            Some("server crashed")
        );
        assert!(r.timelines[1]
            .note
            .as_deref()
            .unwrap()
            .starts_with("no samples"));
        let (_, html) = render(&r).unwrap();
        let at = html
            .find("<g class=\"failed-cell\">")
            .expect("a failed cell");
        assert!(
            html[at..at + 600].contains(">server crashed</text>"),
            "{html}"
        );
        assert!(html.contains(">SERVER CRASHED</td>"), "{html}");
        assert!(html.contains("class=\"timeline-none\""), "{html}");
    }

    #[test]
    fn failure_kinds() {
        assert_eq!(
            failure_kind("query error: Resources exhausted: Failed to allocate"),
            "OOM"
        );
        assert_eq!(failure_kind("request timed out"), "timed out");
        assert_eq!(failure_kind("killed (OOM) at 15.9 GiB"), "OOM");
        assert_eq!(failure_kind("no room left in the zoom table"), "failed");
        assert_eq!(failure_kind("exit code 2"), "failed");
        assert_eq!(
            failure_kind(
                "External error: Query would scan 500 Parquet files, exceeding the file limit."
            ),
            "query file limit"
        );
    }
}
