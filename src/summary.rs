//! `summary.json` (the source of truth of a run's results) and `summary.md` (rendered from it
//! by `templates/summary.md.j2`). Both are rebuilt from what is on disk: the run manifest, the
//! step events, and the TSBS results files and logs (re-parsed, so `runs summarize` after a
//! crash gives the same numbers as the command that ran).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};
use serde_json::{json, Value};

use crate::error::{Error, Result};
use crate::logscan::Severity;
use crate::run::data::{
    self, AnswersData, ColdStartData, LoadData, MachineRecord, QueryBatchData, QueryData,
    RowCountData, ServerData,
};
// `Present` is the run records' (a key present as `null` told apart from an absent one).
pub use crate::run::data::Present;
use crate::run::{
    present, Host, RunDir, RunError, RunKind, RunTarget, Status, Step, TargetMode, ToolInfo,
    Workload,
};
use crate::tsbs::query::AttemptStats;
use crate::tsbs::{self, QueryAttempt, ResultSource};
use crate::workspace::manifest::MaintenanceRecord;

/// Bumped when the shape of `summary.json` changes incompatibly.
pub const SCHEMA_VERSION: u32 = 1;

const TEMPLATE: &str = include_str!("../templates/summary.md.j2");
/// What summary.md says of a load that left no data file, for a product that does not say it
/// in its own terms.
const NEVER_FLUSHED: &str = "\n**No data files yet:** all the loaded data is in the WAL only.\n";

/// `summary.json` of a run. Field order is the JSON key order.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RunSummary {
    pub schema_version: u32,
    /// Always `run-summary`.
    pub kind: String,
    pub run_id: String,
    pub run_kind: RunKind,
    pub run_dir: PathBuf,
    pub product: String,
    pub product_label: String,
    /// What `target.version` is the version of, when not the product (TimescaleDB: PostgreSQL).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub version_label: Option<String>,
    #[serde(rename = "edition")]
    pub variant: Option<String>,
    /// Product label, version and (when not as loaded) the data state.
    pub label: String,
    pub phase: String,
    pub status: Status,
    pub created_at: String,
    pub finished_at: Option<String>,
    pub command: String,
    pub tool: ToolInfo,
    pub host: Host,
    /// The shape the managed server was held to (`--cpus`, `--memory`), in words; "the whole
    /// host" for a managed server without one; `None` for an external server.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub server_shape: Option<String>,
    pub target: RunTarget,
    pub server: Option<ServerSummary>,
    pub durability: Option<Durability>,
    /// What the product says its server runs with (settings, engine, telemetry).
    pub server_settings: Value,
    pub environment: EnvironmentSummary,
    pub dataset: Option<DatasetSummary>,
    pub query_set: Option<QuerySetSummary>,
    pub workload: Workload,
    /// The product's own bench flags in its words ([`crate::product::ext`]); only for a
    /// product that has them.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub product_settings: Vec<String>,
    pub data_state: Option<DataStateSummary>,
    pub ingestion: Option<Ingestion>,
    /// The data of the last `row-count` step, with its status.
    pub row_count: Option<Value>,
    /// The data of the last `footprint` step.
    pub storage: Option<Value>,
    /// GreptimeDB: where the data was when the queries started (SSTs or memtables).
    pub data_location: Option<Value>,
    /// GreptimeDB `--partitions`: the table made before the load (`create-table` step data)
    /// and its regions after it (`regions` step data).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub partitions: Option<Value>,
    /// The count before the queries that the bound rows are there (`row-check` step data).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub row_check: Option<Value>,
    pub queries: Vec<QuerySummary>,
    /// One per `analyze:<type>` step: its data plus attempt, status, log and result dir.
    pub analyses: Vec<Value>,
    /// The product operations' own sections ([`crate::product::ext::OpSummary`]): each
    /// declared key in every summary, `null` but in a run of its operation; read back with
    /// any key this version does not know.
    #[serde(flatten)]
    pub sections: serde_json::Map<String, Value>,
    /// A product operation's run (`bench <product> <operation>`): its name and its steps
    /// (the server's excepted), each with its status, reason and data.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub operation: Option<Value>,
    /// The server's resources per phase, from `timeline.jsonl` (absent in summaries written
    /// before it was sampled).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub resources: Option<Resources>,
    /// `--check-answers`: the answers of the verification pass, per type (issue 24 §5).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub answers: Option<crate::answers::AnswersSummary>,
    pub server_diagnostics: ServerDiagnostics,
    pub failures: Vec<Failure>,
    pub warnings: Vec<Warning>,
    /// Measurements taken while other processes were busy on the host (issue 24 §4).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub busy_machine: Vec<Warning>,
    /// `--cold`: the restarts with the page cache dropped before the query types.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cold: Option<ColdRuns>,
    pub not_started: Vec<String>,
    /// What the product's runner leaves out of each query type's statistics, and why (absent
    /// in summaries written before it was said, and in runs without queries).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub excluded_from_statistics: Option<String>,
    pub error: Option<RunError>,
    /// Each `runs resume` of the run (when, by which tsbsctl, which types, which earlier
    /// attempts it superseded: those are left out of every other part of the summary).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub resumes: Vec<crate::run::ResumeRecord>,
}

/// The cold starts of a `--cold` run (`cold-start` steps).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ColdRuns {
    /// How many query types (passes included) started cold.
    pub starts: usize,
    /// The longest `sync` plus page-cache drop, in seconds.
    pub max_drop_seconds: f64,
    /// The mean of stop, drop and start together, in seconds.
    pub mean_seconds: f64,
}

/// The server pins a summary shows.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ServerSummary {
    pub version: String,
    pub binary_sha256: String,
    pub workspace_version: String,
    pub workspace_binary_sha256: String,
    pub version_override: bool,
    pub config_sha256: Option<String>,
}

/// How writes were acknowledged (by a product's write settings).
pub use crate::product::ext::Durability;

/// The TSBS build (all `null` when the run ended before it was recorded).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct EnvironmentSummary {
    pub go_version: Option<String>,
    pub tsbs_repo: Option<String>,
    pub tsbs_commit: Option<String>,
    pub tsbs_dirty: Option<bool>,
}

/// The dataset a summary shows.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct DatasetSummary {
    pub dataset_id: String,
    pub spec: Value,
    pub format: Option<String>,
    pub compression: Option<String>,
    pub rows: Option<u64>,
    pub metrics: Option<u64>,
    pub bytes: Option<u64>,
    pub sha256: Option<String>,
    pub uncompressed_sha256: Option<String>,
    pub data_path: Option<PathBuf>,
}

/// The query set a summary shows.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct QuerySetSummary {
    pub query_set_id: String,
    pub manifest_sha256: String,
    pub format: String,
    pub query_counts: BTreeMap<String, u64>,
    pub path: PathBuf,
}

/// The data state a summary shows: its label, how many loads, the maintenance records.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct DataStateSummary {
    pub label: String,
    pub loads: usize,
    pub maintenance: Vec<MaintenanceRecord>,
}

/// The server's resources during the run, from its timeline ([`crate::sampler`]).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Resources {
    /// What was read: the managed server's process tree in `/proc`, the named series of the
    /// server's `/metrics`, or `unknown`.
    pub source: String,
    /// The timeline, relative to the run directory (`null` when nothing was sampled).
    pub file: Option<String>,
    pub interval_seconds: f64,
    pub samples: u64,
    /// How often the data directory was measured.
    pub data_dir_measured: Option<String>,
    /// One per step that ran while the server was sampled, in the order they first ran.
    pub phases: Vec<crate::sampler::phases::PhaseResources>,
    /// Bytes the server wrote to storage during the load per row loaded.
    pub load_bytes_written_per_row: Option<f64>,
    /// How much the data directory grew during the load.
    pub load_data_dir_growth_bytes: Option<i64>,
}

/// The last load attempt. The measured fields are present only when its results were read.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Ingestion {
    pub attempt: u32,
    pub status: Status,
    pub database: Option<String>,
    pub database_mode: Option<String>,
    pub dataset_id: Option<String>,
    pub workers: Option<u64>,
    pub batch_size: Option<u64>,
    pub log: Option<String>,
    pub results_file: Option<String>,
    pub started_at: String,
    pub finished_at: Option<String>,
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "present"
    )]
    pub rows: Present<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub metrics: Option<u64>,
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "present"
    )]
    pub rows_per_second: Present<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub metrics_per_second: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub duration_seconds: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub duration_source: Option<String>,
    /// The loader's whole-ms duration, when `duration_seconds` is derived from its rate.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reported_duration_seconds: Option<f64>,
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "present"
    )]
    pub backoff_seconds: Present<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub source: Option<ResultSource>,
}

impl Ingestion {
    /// Whether the load's results were read (rows, rates, duration present).
    pub fn measured(&self) -> bool {
        self.duration_seconds.is_some()
    }
}

/// One query type: the aggregate of its completed attempts, or why it has none.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct QuerySummary {
    #[serde(default)]
    pub query_type: String,
    /// `completed`, or the status of the last attempt.
    #[serde(default)]
    pub status: String,
    /// The queries the last attempt was to run.
    #[serde(default)]
    pub queries: Value,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub repetitions: Option<u32>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub query_count: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mean_ms: Option<f64>,
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "present"
    )]
    pub min_ms: Present<f64>,
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "present"
    )]
    pub max_ms: Present<f64>,
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
    pub stddev_ms: Present<f64>,
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
    pub p99_ms: Present<f64>,
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "present"
    )]
    pub p999_ms: Present<f64>,
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "present"
    )]
    pub queries_per_second: Present<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub source: Option<ResultSource>,
    /// The log of the measured attempt, or of the last failed one.
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "present"
    )]
    pub log: Present<String>,
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "present"
    )]
    pub results_file: Present<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub attempts: Option<Vec<AttemptStats>>,
    /// With two completed passes (attempts) or more: the spread of their means.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub passes: Option<PassSpread>,
    /// `--target-precision`: per pass, how many queries in how many batches the type took and
    /// the interval reached (the `precision:<type>` steps); the headline count, mean, spread,
    /// min and max then cover every batch, the percentiles (first batch only) are unknown.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub precision: Option<Vec<Value>>,
    /// Why the last attempt failed (present only when none completed).
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "present"
    )]
    pub reason: Present<String>,
}

/// The pass-to-pass spread of one query type: how far run-to-run variance reaches within a
/// run (`--passes`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PassSpread {
    pub count: u32,
    /// The mean of the passes' means.
    pub mean_ms: f64,
    /// The sample standard deviation of the passes' means.
    pub stddev_ms: f64,
    /// The lowest and highest pass mean.
    pub min_ms: f64,
    pub max_ms: f64,
    /// `stddev_ms / mean_ms`, in percent.
    pub cv_percent: Option<f64>,
    /// Each completed pass's log (run-relative), in pass order: what `runs compare` reads
    /// per-query latencies from.
    pub logs: Vec<Option<String>>,
}

impl PassSpread {
    /// The spread of `means` (two or more), with their logs.
    pub fn of(means: &[f64], logs: Vec<Option<String>>) -> Option<PassSpread> {
        if means.len() < 2 {
            return None;
        }
        let n = means.len() as f64;
        let mean = means.iter().sum::<f64>() / n;
        let var = means.iter().map(|m| (m - mean).powi(2)).sum::<f64>() / (n - 1.0);
        Some(PassSpread {
            count: means.len() as u32,
            mean_ms: mean,
            stddev_ms: var.sqrt(),
            min_ms: means.iter().copied().fold(f64::INFINITY, f64::min),
            max_ms: means.iter().copied().fold(f64::NEG_INFINITY, f64::max),
            cv_percent: (mean > 0.0).then(|| var.sqrt() / mean * 100.0),
            logs,
        })
    }
}

impl QuerySummary {
    /// The aggregate mean, when a completed attempt was read.
    pub fn measured(&self) -> bool {
        self.mean_ms.is_some()
    }

    /// Count, mean and spread for the noise test; `None` when one is unknown.
    pub fn noise_sample(&self) -> Option<crate::noise::Sample> {
        crate::noise::Sample::new(self.query_count?, self.mean_ms?, self.stddev_ms.flatten()?)
    }
}

/// Server attempts and what their logs report.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct ServerDiagnostics {
    pub attempts: Vec<ServerAttempt>,
    pub warning_count: u64,
    pub error_count: u64,
    pub panic_count: u64,
    pub fatal_count: u64,
    /// Lines that say a server process died or the server restarted (PostgreSQL).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub crash_count: u64,
    /// What the counts mean for this product (PostgreSQL: a FATAL ends one client session).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub note: Option<String>,
    /// The first counted lines (redacted).
    pub samples: Vec<Value>,
}

fn is_zero(n: &u64) -> bool {
    *n == 0
}

/// One `server` step attempt.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ServerAttempt {
    pub attempt: u32,
    pub status: Status,
    pub log: Option<String>,
    pub started_at: String,
    pub finished_at: Option<String>,
    pub reason: Option<String>,
    pub events: Value,
    pub outcome: Value,
    pub stop_seconds: Value,
    /// From start to the first readiness answer.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ready_seconds: Option<f64>,
    /// The first start after the run's load, and what such a start does (the product's words):
    /// its time is the cost of what the load left behind (InfluxDB 3 Core replays its WAL).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub after_load: Option<String>,
}

/// Something that makes the run's numbers incomplete or suspect.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Failure {
    /// `load`, `query`, `server`, `verify`, `run`, or the step's name.
    pub stage: String,
    pub step: Option<String>,
    pub attempt: Option<u32>,
    pub status: Status,
    pub log: Option<String>,
    pub reason: String,
}

/// A warning of a step (e.g. a slow server stop).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Warning {
    pub stage: String,
    pub attempt: u32,
    pub log: Option<String>,
    pub message: String,
}

/// What identifies a run in `runs compare` and `runs report` (`identity` of a compared run,
/// the head of a report column).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RunIdentity {
    pub run_id: String,
    pub path: PathBuf,
    pub label: String,
    pub product: String,
    #[serde(rename = "edition")]
    pub variant: Option<String>,
    pub mode: TargetMode,
    pub database_id: Option<String>,
    pub urls: Option<Vec<String>>,
    pub version: Option<String>,
    pub binary_sha256: Option<String>,
    pub data_state: Option<String>,
    pub manifest_sha256: String,
}

impl RunSummary {
    /// The identity of this run (`manifest_sha256`: of its `manifest.json` as it is now).
    pub fn identity(&self, run_id: &str, dir: &Path, manifest_sha256: &str) -> RunIdentity {
        RunIdentity {
            run_id: run_id.to_string(),
            path: dir.to_path_buf(),
            label: self.label.clone(),
            product: self.product.clone(),
            variant: self.variant.clone(),
            mode: self.target.mode,
            database_id: self.target.database_id.clone(),
            urls: self.target.urls.clone(),
            version: self.target.version.clone(),
            binary_sha256: self.target.binary_sha256.clone(),
            data_state: self.data_state.as_ref().map(|d| d.label.clone()),
            manifest_sha256: manifest_sha256.to_string(),
        }
    }
}

/// Builds the summary of a run from disk.
pub fn build(run: &RunDir) -> Result<RunSummary> {
    let m = &run.manifest;
    let steps = run.steps()?;
    // The run's product, resolved once for the parts of the summary it words (`None`: a
    // product this tsbsctl does not know).
    let product = crate::product::resolve(&m.product, m.variant.as_deref()).ok();
    let dir = &run.dir;
    let mut failures: Vec<Failure> = Vec::new();
    let ingestion = ingestion(dir, &steps, &mut failures);

    let last = |name: &str| steps.iter().rev().find(|s| s.step == name);
    let row_count = last("row-count").map(|s| {
        if s.status != Status::Completed {
            fail(&mut failures, "verify", s, None);
        }
        data::value(&RowCountSummary {
            count: s.data_as(),
            status: s.status,
        })
    });
    // With what the product's parts hold, for the headings (the product words its own files).
    let storage = last("footprint").map(|s| {
        let mut v = s.data.clone();
        if let Value::Object(o) = &mut v {
            let parts = crate::product::footprint_parts(&m.product, m.variant.as_deref());
            o.insert("parts".into(), json!(parts));
        }
        v
    });
    // Where the data was when the queries started, as the product records it from its steps.
    let data_location = product
        .as_ref()
        .and_then(|p| p.bench_ext())
        .and_then(|x| x.data_location)
        .and_then(|dl| (dl.record)(&|name| last(name).map(|s| s.data.clone())));

    // Queries: per type, completed attempts aggregated; failed attempts are failures.
    let mut attempts: Vec<QueryAttempt> = Vec::new();
    let mut per_type: BTreeMap<String, Vec<&Step>> = BTreeMap::new();
    for s in steps.iter().filter(|s| s.step.starts_with("query:")) {
        per_type
            .entry(s.step["query:".len()..].to_string())
            .or_default()
            .push(s);
    }
    let mut queries = Vec::new();
    for (qt, list) in &per_type {
        let mut last_ok: Option<(&Step, tsbs::QueryRunResult)> = None;
        let mut last_failed: Option<&Step> = None;
        let mut pass_logs = Vec::new();
        for s in list {
            if s.status == Status::Completed {
                let log_text = read(dir, s.log.as_deref());
                let results = dir.join(s.results.as_deref().unwrap_or("-"));
                match tsbs::query_result(&results, &log_text) {
                    Ok(r) => {
                        pass_logs.push(s.log.clone());
                        attempts.push(QueryAttempt {
                            database: m.target.database.clone(),
                            query_type: qt.clone(),
                            attempt: s.attempt,
                            result: r.clone(),
                        });
                        last_ok = Some((s, r));
                    }
                    Err(e) => {
                        fail(&mut failures, "query", s, Some(e.message));
                        last_failed = Some(s);
                    }
                }
            } else {
                fail(&mut failures, "query", s, None);
                last_failed = Some(s);
            }
        }
        let agg = tsbs::aggregate(
            &attempts
                .iter()
                .filter(|a| &a.query_type == qt)
                .cloned()
                .collect::<Vec<_>>(),
        );
        let mut v = QuerySummary {
            query_type: qt.clone(),
            status: if last_ok.is_some() {
                "completed".into()
            } else {
                list.last()
                    .map(|s| s.status.as_str())
                    .unwrap_or("failed")
                    .into()
            },
            queries: list
                .last()
                .and_then(|s| s.data_as::<QueryData>().queries.flatten())
                .map_or(Value::Null, Value::from),
            repetitions: None,
            query_count: None,
            mean_ms: None,
            min_ms: None,
            max_ms: None,
            median_ms: None,
            stddev_ms: None,
            p95_ms: None,
            p99_ms: None,
            p999_ms: None,
            queries_per_second: None,
            source: None,
            log: None,
            results_file: None,
            attempts: None,
            passes: None,
            precision: None,
            reason: None,
        };
        if let (Some((s, r)), Some(a)) = (&last_ok, agg.first()) {
            let q = r.all.quantiles.as_ref();
            v.repetitions = Some(a.repetitions);
            v.query_count = Some(a.query_count);
            v.mean_ms = Some(a.weighted_mean_ms);
            v.min_ms = Some(a.min_ms);
            v.max_ms = Some(a.max_ms);
            v.median_ms = Some(r.all.median_ms.or(q.map(|q| q.q50)));
            v.stddev_ms = Some(r.all.stddev_ms);
            v.p95_ms = Some(q.map(|q| q.q95));
            v.p99_ms = Some(q.map(|q| q.q99));
            v.p999_ms = Some(q.map(|q| q.q999));
            v.queries_per_second = Some(r.overall_queries_per_second.or(r.all.queries_per_second));
            v.source = Some(r.source);
            v.log = Some(s.log.clone());
            v.results_file = Some(s.results.clone());
            v.attempts = Some(a.attempts.clone());
            let means: Vec<f64> = a.attempts.iter().map(|x| x.stats.mean_ms).collect();
            v.passes = PassSpread::of(&means, pass_logs);
            pool_batches(&mut v, &steps, qt, &mut failures);
        } else if let Some(s) = last_failed {
            v.log = Some(s.log.clone());
            v.reason = Some(s.reason.clone());
        }
        queries.push(v);
    }

    let analyses = analyses(&steps, &mut failures);

    // A product operation's own section, from its workload and steps; every declared key is
    // in every summary (`null` but in a run of its operation).
    let op = m.operation();
    let mut sections: serde_json::Map<String, Value> = crate::product::ext::summary_keys()
        .into_iter()
        .map(|k| (k.to_string(), Value::Null))
        .collect();
    if let Some(own) = op.and_then(|o| o.summary) {
        let step = |n: &str| {
            last(n).map(|s| json!({"status": s.status, "reason": s.reason, "data": s.data}))
        };
        sections.insert(own.key.to_string(), (own.build)(m.workload.fields(), &step));
    }

    // A product operation without a section of its own: the steps it took, in order.
    let generic_operation =
        matches!(m.run_kind, RunKind::Operation(_)) && op.is_none_or(|o| o.summary.is_none());
    let operation = generic_operation.then(|| {
        let steps: Vec<Value> = steps
            .iter()
            .filter(|s| s.step != "server")
            .map(|s| {
                json!({
                    "step": s.step,
                    "attempt": s.attempt,
                    "status": s.status,
                    "reason": s.reason,
                    "data": s.data,
                })
            })
            .collect();
        json!({"name": m.phase, "steps": steps})
    });

    // Server attempts and diagnostics from their logs. The product reads its own log lines
    // (an unknown product: the tracing rules).
    let rules = product
        .as_ref()
        .map(|p| p.log_rules())
        .unwrap_or(crate::logscan::LogRules::TRACING);
    let restart_words = product
        .as_ref()
        .and_then(|p| p.default_timing().startup_wait);
    let (server_attempts, warnings, diag) =
        server_attempts(dir, &steps, restart_words, &rules, &mut failures);
    let busy_machine = busy_machine(&steps);
    // A server that failed by its own log (a panic, a FATAL of a tracing log, a PostgreSQL
    // process that died) makes the run's numbers suspect: a failure, naming the log. What the
    // product counts but does not call a failure (PostgreSQL's FATAL: one client session) is
    // only listed.
    if let Some(first) = &diag.first_failure {
        let what = match first.severity {
            Severity::Panic => "a panic",
            Severity::Crash => "a server process that died or a restart",
            _ => "a fatal error",
        };
        failures.push(Failure {
            stage: "server".into(),
            step: Some("server".into()),
            attempt: None,
            status: Status::Failed,
            log: Some(first.log.clone()),
            reason: format!("the server log reports {what}: {}", first.message),
        });
    }
    // Other steps that failed (environment, dataset, table checks, compaction ...).
    for s in &steps {
        let known = s.step == "load"
            || s.step == "row-count"
            || s.step == "server"
            || s.step.starts_with("query:")
            || s.step.starts_with("query-batch:")
            || s.step.starts_with("analyze:");
        if !known
            && matches!(
                s.status,
                Status::Failed | Status::Interrupted | Status::Running
            )
        {
            fail(&mut failures, &s.step, s, None);
        }
    }
    if let Some(e) = &m.error {
        if failures.is_empty() && m.status != Status::Completed {
            failures.push(Failure {
                stage: "run".into(),
                step: None,
                attempt: None,
                status: m.status,
                log: None,
                reason: e.message.clone(),
            });
        }
    }

    let variant = m.variant.clone();
    let product_label = crate::product::label(&m.product, variant.as_deref());
    let version = m.target.version.clone();
    let data_state_label = m.data_state.as_ref().map(|d| d.label.clone());
    let own = crate::product::run_label(
        &m.product,
        variant.as_deref(),
        version.as_deref(),
        m.target.extra.get("server_settings"),
    );
    let mut label = match (own, &version) {
        (Some(l), _) => l,
        (None, Some(v)) => format!("{product_label} {v}"),
        (None, None) => product_label.clone(),
    };
    if let (Some(l), RunKind::Benchmark) = (data_state_label.as_deref(), m.run_kind) {
        if l != "as loaded" && l != "not loaded" {
            label.push_str(&format!(" ({l})"));
        }
    }
    // How the writes were acknowledged, as the product reads its write settings.
    let durability = crate::product::ext::write_settings(&m.product)
        .map(|w| (w.durability)(m.workload.fields()));
    let environment = m
        .environment
        .as_ref()
        .map(|e| EnvironmentSummary {
            go_version: Some(e.go_version.clone()),
            tsbs_repo: Some(e.tsbs_repo.clone()),
            tsbs_commit: Some(e.tsbs_commit.clone()),
            tsbs_dirty: Some(e.tsbs_dirty),
        })
        .unwrap_or_default();
    let dataset = m.dataset.as_ref().map(|d| DatasetSummary {
        dataset_id: d.dataset_id.clone(),
        spec: d.spec.clone(),
        format: d.format.clone(),
        compression: d.compression.clone(),
        rows: d.rows,
        metrics: d.metrics,
        bytes: d.bytes,
        sha256: d.sha256.clone(),
        uncompressed_sha256: d.uncompressed_sha256.clone(),
        data_path: d.data_path.clone(),
    });
    let query_set = m.query_set.as_ref().map(|q| QuerySetSummary {
        query_set_id: q.query_set_id.clone(),
        manifest_sha256: q.manifest_sha256.clone(),
        format: q.format.clone(),
        query_counts: q.query_counts.clone(),
        path: q.query_set_path.clone(),
    });
    let product_settings = match (
        product.as_ref().and_then(|p| p.bench_ext()),
        m.flags.get(&m.product).and_then(Value::as_object),
    ) {
        (Some(x), Some(values)) => (x.summary_lines)(values),
        _ => Vec::new(),
    };
    let excluded_from_statistics = product
        .as_ref()
        .filter(|_| !queries.is_empty())
        .map(|p| p.statistics_exclusion().to_string());
    Ok(RunSummary {
        schema_version: SCHEMA_VERSION,
        kind: "run-summary".into(),
        run_id: m.run_id.clone(),
        run_kind: m.run_kind,
        run_dir: run.dir.clone(),
        product: m.product.clone(),
        product_label,
        version_label: product
            .as_ref()
            .and_then(|p| p.version_name())
            .map(String::from),
        variant,
        label,
        phase: m.phase.clone(),
        status: m.status,
        created_at: m.created_at.clone(),
        finished_at: m.finished_at.clone(),
        command: m.command.clone(),
        tool: m.tool.clone(),
        host: m.host.clone(),
        server_shape: server_shape(m),
        target: m.target.clone(),
        server: m.server.as_ref().map(|s| ServerSummary {
            version: s.runtime.version.clone(),
            binary_sha256: s.runtime.binary_sha256.clone(),
            workspace_version: s.workspace_version.clone(),
            workspace_binary_sha256: s.workspace_binary_sha256.clone(),
            version_override: s.version_override,
            config_sha256: s.config_sha256.clone(),
        }),
        durability,
        server_settings: m
            .target
            .extra
            .get("server_settings")
            .cloned()
            .unwrap_or(Value::Null),
        environment,
        dataset,
        query_set,
        workload: m.workload.clone(),
        product_settings,
        data_state: m.data_state.as_ref().map(|d| DataStateSummary {
            label: d.label.clone(),
            loads: d.state.loads.len(),
            maintenance: d.state.maintenance.clone(),
        }),
        resources: resources(run, product.as_deref(), ingestion.as_ref()),
        answers: answers_summary(&steps),
        ingestion,
        row_count,
        storage,
        data_location,
        partitions: last("create-table").map(|c| {
            json!({
                "status": c.status,
                "reason": c.reason,
                "table": c.data,
                "regions": last("regions").map(|r| r.data.clone()),
            })
        }),
        row_check: last("row-check")
            .map(|s| s.data.clone())
            .filter(|d| !d.is_null()),
        queries,
        analyses,
        sections,
        operation,
        server_diagnostics: ServerDiagnostics {
            attempts: server_attempts,
            warning_count: diag.warnings,
            error_count: diag.errors,
            panic_count: diag.panics,
            fatal_count: diag.fatals,
            crash_count: diag.crashes,
            note: rules.note.map(str::to_string),
            samples: diag
                .samples
                .iter()
                .map(|x| serde_json::to_value(x).unwrap_or(Value::Null))
                .collect(),
        },
        failures,
        warnings,
        busy_machine,
        cold: cold_runs(&steps),
        not_started: not_started(m, &steps),
        excluded_from_statistics,
        error: m.error.clone(),
        resumes: m.resumes.clone(),
    })
}

/// Step `load`: the last attempt (completed, reused or failed), measured from its results when
/// it completed; a load that failed, or whose results do not read, is a failure.
fn ingestion(dir: &Path, steps: &[Step], failures: &mut Vec<Failure>) -> Option<Ingestion> {
    let mut ingestion = None;
    for s in steps.iter().filter(|s| s.step == "load") {
        let d: LoadData = s.data_as();
        let mut v = Ingestion {
            attempt: s.attempt,
            status: s.status,
            database: d.database,
            database_mode: d.database_mode,
            dataset_id: d.dataset_id,
            workers: d.workers,
            batch_size: d.batch_size,
            log: s.log.clone(),
            results_file: s.results.clone(),
            started_at: s.started_at.clone(),
            finished_at: s.finished_at.clone(),
            rows: None,
            metrics: None,
            rows_per_second: None,
            metrics_per_second: None,
            duration_seconds: None,
            duration_source: None,
            reported_duration_seconds: None,
            backoff_seconds: None,
            source: None,
        };
        match s.status {
            Status::Completed => {
                let log_text = read(dir, s.log.as_deref());
                let results = dir.join(s.results.as_deref().unwrap_or("-"));
                match tsbs::load_result(&results, &log_text) {
                    Ok(r) => {
                        v.rows = Some(r.rows);
                        v.metrics = Some(r.metrics);
                        v.rows_per_second = Some(r.rows_per_second);
                        v.metrics_per_second = Some(r.metrics_per_second);
                        v.duration_seconds = Some(r.duration_seconds);
                        v.duration_source = Some("the loader's DurationMillis (whole ms)".into());
                        // The loader's rate is rows / its own elapsed time at full precision,
                        // while DurationMillis is truncated to whole ms: derive the duration
                        // from the rate so that Rows/s and Duration agree (#26).
                        if let (Some(rows), Some(rate)) =
                            (r.rows, r.rows_per_second.filter(|x| *x > 0.0))
                        {
                            v.reported_duration_seconds = Some(r.duration_seconds);
                            v.duration_seconds = Some(rows as f64 / rate);
                            v.duration_source = Some(
                                "rows / the loader's rows per second (its own full-precision elapsed time)"
                                    .into(),
                            );
                        }
                        v.backoff_seconds = Some(r.backoff_seconds());
                        v.source = Some(r.source);
                        if let Some(w) = r.workers {
                            v.workers = Some(w);
                        }
                        if let Some(b) = r.batch_size {
                            v.batch_size = Some(b);
                        }
                    }
                    Err(e) => {
                        v.status = Status::Failed;
                        fail(failures, "load", s, Some(e.message));
                    }
                }
            }
            Status::Reused => {
                v.database_mode = Some("reuse".into());
            }
            _ => fail(failures, "load", s, None),
        }
        ingestion = Some(v);
    }
    ingestion
}

/// Records step `s` as a failure of `stage`: `reason`, else the step's own, else its status.
fn fail(failures: &mut Vec<Failure>, stage: &str, s: &Step, reason: Option<String>) {
    failures.push(Failure {
        stage: stage.to_string(),
        step: Some(s.step.clone()),
        attempt: Some(s.attempt),
        status: s.status,
        log: s.log.clone(),
        reason: reason
            .or_else(|| s.reason.clone())
            .unwrap_or_else(|| s.status.as_str().to_string()),
    });
}

/// Step `server`: each attempt with its ready time, what its start followed (the load, data an
/// earlier run left, a cold restart) and how it stopped; a failed attempt is a failure, a slow
/// or killed stop a warning, and each attempt's log is scanned.
fn server_attempts(
    dir: &Path,
    steps: &[Step],
    restart_words: Option<&str>,
    rules: &crate::logscan::LogRules,
    failures: &mut Vec<Failure>,
) -> (
    Vec<ServerAttempt>,
    Vec<Warning>,
    crate::logscan::Diagnostics,
) {
    let mut warnings: Vec<Warning> = Vec::new();
    let mut attempts = Vec::new();
    let mut diag = crate::logscan::Diagnostics::default();
    let redactor = crate::redact::Redactor::new();
    let load_done = steps
        .iter()
        .find(|s| s.step == "load" && s.status == Status::Completed)
        .and_then(|s| s.finished_at.clone());
    // A run without a load (queries, compaction) starts on data an earlier run left: its
    // first start replays that, and is named so.
    let had_load = steps.iter().any(|s| s.step == "load");
    let mut restart_named = false;
    for s in steps.iter().filter(|s| s.step == "server") {
        let d: ServerData = s.data_as();
        // Timestamps are RFC 3339 UTC of one format: they order as strings.
        let after_load = match &load_done {
            Some(done) if !restart_named && s.started_at.as_str() > done.as_str() => {
                restart_named = true;
                Some(match restart_words {
                    Some(w) => format!("first start after the load: {w}"),
                    None => "first start after the load".to_string(),
                })
            }
            None if !had_load && !restart_named => {
                restart_named = true;
                Some(match restart_words {
                    Some(w) => format!("first start of this run, on loaded data: {w}"),
                    None => "first start of this run, on loaded data".to_string(),
                })
            }
            _ => None,
        };
        // A start a cold run made says before which type (and pass) it came.
        let after_load = after_load.or_else(|| cold_start_before(steps, s.attempt));
        attempts.push(ServerAttempt {
            ready_seconds: d.ready_seconds(),
            after_load,
            attempt: s.attempt,
            status: s.status,
            log: s.log.clone(),
            started_at: s.started_at.clone(),
            finished_at: s.finished_at.clone(),
            reason: s.reason.clone(),
            events: d.end.events.unwrap_or(Value::Null),
            outcome: d.end.outcome.unwrap_or(Value::Null),
            stop_seconds: d.end.stop_seconds.map_or(Value::Null, Value::from),
        });
        if s.status == Status::Failed || s.status == Status::Interrupted {
            fail(failures, "server", s, None);
        }
        if let Some(w) = d.end.warning {
            warnings.push(Warning {
                stage: "server".into(),
                attempt: s.attempt,
                log: s.log.clone(),
                message: w,
            });
        }
        if let Some(l) = &s.log {
            diag.scan_text_with(l, &read(dir, Some(l)), &redactor, rules);
        }
    }
    (attempts, warnings, diag)
}

/// Step `cold-start`: the one that started server attempt `server_attempt`, in words.
fn cold_start_before(steps: &[Step], server_attempt: u32) -> Option<String> {
    let c = steps
        .iter()
        .filter(|c| c.step == "cold-start")
        .map(Step::data_as::<ColdStartData>)
        .find(|c| c.server_attempt == Some(server_attempt))?;
    let before = c.before_query_type.as_deref().unwrap_or("?");
    Some(match c.pass {
        Some(p) if p > 1 => format!("cold start before {before}, pass {p}"),
        _ => format!("cold start before {before}"),
    })
}

/// A `row-count` step as the summary shows it: the count and how the step ended.
#[derive(Serialize)]
struct RowCountSummary {
    #[serde(flatten)]
    count: RowCountData,
    status: Status,
}

/// One `analyze:<type>` step as the summary shows it: the product's record of it, then how it
/// ran and what "hot" measured.
#[derive(Serialize)]
struct Analysis {
    #[serde(flatten)]
    record: serde_json::Map<String, Value>,
    attempt: u32,
    status: Status,
    log: Option<String>,
    result_dir: Option<String>,
    hot_queries: &'static str,
    /// `null` when the record does not say (it ended before the answers were compared).
    #[serde(skip_serializing_if = "Option::is_none")]
    hot_same_sql_as_cold: Option<Value>,
}

/// The `analyze:<type>` steps (a product's `analyze` phase); one that did not complete is a
/// failure.
fn analyses(steps: &[Step], failures: &mut Vec<Failure>) -> Vec<Value> {
    let mut analyses = Vec::new();
    for s in steps.iter().filter(|s| s.step.starts_with("analyze:")) {
        let record = s.data.as_object().cloned().unwrap_or_default();
        let said = record.contains_key("hot_same_sql_as_cold");
        analyses.push(data::value(&Analysis {
            record,
            attempt: s.attempt,
            status: s.status,
            log: s.log.clone(),
            result_dir: s.results.clone(),
            // What "hot" measured (real finding W2): the next queries of the file, not repetitions.
            hot_queries: "queries 2..N+1 of the query file, run after the first on the warmed server: the same type with other random hosts and time windows, unless hot_same_sql_as_cold",
            hot_same_sql_as_cold: (!said).then_some(Value::Null),
        }));
        if s.status != Status::Completed {
            fail(failures, "analyze", s, None);
        }
    }
    analyses
}

/// A busy machine before a measurement (`machine-check` steps) or during one (the `machine`
/// of a load, query or batch step; issue 24 §4), said with when it was.
fn busy_machine(steps: &[Step]) -> Vec<Warning> {
    let mut busy = Vec::new();
    for s in steps {
        let (q, when) = if s.step == "machine-check" {
            let q: MachineRecord = s.data_as();
            let when = format!("before {}", q.before.as_deref().unwrap_or("a phase"));
            (Some(q), when)
        } else if s.step == "load" {
            (s.data_as::<LoadData>().end.machine, during(s))
        } else if s.step.starts_with("query:") {
            (s.data_as::<QueryData>().end.machine, during(s))
        } else if s.step.starts_with("query-batch:") {
            (s.data_as::<QueryBatchData>().end.machine, during(s))
        } else {
            continue;
        };
        if q.as_ref().is_some_and(MachineRecord::busy) {
            busy.push(Warning {
                stage: s.step.clone(),
                attempt: s.attempt,
                log: s.log.clone(),
                message: format!(
                    "not quiet {when}: {}; the measurement shares the host with them",
                    q.and_then(|q| q.words)
                        .as_deref()
                        .unwrap_or("other processes were busy")
                ),
            });
        }
    }
    busy
}

/// "during <step> (<start> → <end>)".
fn during(s: &Step) -> String {
    format!(
        "during {} ({} → {})",
        s.step,
        s.started_at,
        s.finished_at.as_deref().unwrap_or("?")
    )
}

/// The cold starts, when the run made any.
fn cold_runs(steps: &[crate::run::Step]) -> Option<ColdRuns> {
    let cold: Vec<&crate::run::Step> = steps.iter().filter(|s| s.step == "cold-start").collect();
    if cold.is_empty() {
        return None;
    }
    let cold: Vec<ColdStartData> = cold.iter().map(|s| s.data_as()).collect();
    Some(ColdRuns {
        starts: cold.len(),
        max_drop_seconds: cold
            .iter()
            .map(|c| c.drop_seconds.unwrap_or(0.0))
            .fold(0.0, f64::max),
        mean_seconds: cold.iter().map(|c| c.seconds.unwrap_or(0.0)).sum::<f64>()
            / cold.len() as f64,
    })
}

/// The query types a run that ended early planned but never started (#28), sorted.
fn not_started(m: &crate::run::RunManifest, steps: &[crate::run::Step]) -> Vec<String> {
    if matches!(m.status, Status::Completed | Status::Running) {
        return Vec::new();
    }
    let prefix = match m.phase.as_str() {
        "all" | "query" => "query:",
        "analyze" => "analyze:",
        _ => return Vec::new(),
    };
    m.workload
        .benchmark()
        .map(|w| {
            w.query_counts
                .keys()
                .filter(|t| !steps.iter().any(|s| s.step == format!("{prefix}{t}")))
                .cloned()
                .collect()
        })
        .unwrap_or_default()
}

/// Builds the summary and writes `summary.json` and `summary.md` atomically.
/// The answer check's types, from the `answers:<type>` steps (the last attempt of each).
fn answers_summary(steps: &[Step]) -> Option<crate::answers::AnswersSummary> {
    let mut types: BTreeMap<String, crate::answers::TypeAnswers> = BTreeMap::new();
    for s in steps.iter().filter(|s| s.step.starts_with("answers:")) {
        let qt = s.step["answers:".len()..].to_string();
        let recorded = s.data_as::<AnswersData>().answers;
        let mut t: crate::answers::TypeAnswers = recorded
            .and_then(|a| serde_json::from_value(a).ok())
            .unwrap_or_else(|| crate::answers::TypeAnswers {
                query_type: qt.clone(),
                ..Default::default()
            });
        if s.status != Status::Completed {
            t.note = Some(
                s.reason
                    .clone()
                    .unwrap_or_else(|| format!("the check {}", s.status.as_str())),
            );
        }
        types.insert(qt, t);
    }
    (!types.is_empty()).then(|| crate::answers::AnswersSummary {
        file: crate::answers::FILE.into(),
        method: "a verification pass after the timed passes: every query once more, one worker, --print-responses; not timed".into(),
        significant_digits: crate::answers::SIGNIFICANT_DIGITS,
        types: types.into_values().collect(),
    })
}

pub fn write(run: &RunDir) -> Result<RunSummary> {
    let s = build(run)?;
    let mut text = serde_json::to_string_pretty(&s)?;
    text.push('\n');
    crate::fsutil::write_atomic(&run.dir.join("summary.json"), text.as_bytes())?;
    let md = render_md(&s)?;
    crate::fsutil::write_atomic(&run.dir.join("summary.md"), md.as_bytes())?;
    Ok(s)
}

/// Renders `summary.md` from a summary (a [`RunSummary`], or a value of its shape).
pub fn render_md<S: Serialize>(summary: &S) -> Result<String> {
    let mut env = crate::render::template_env("summary.md", TEMPLATE)?;
    // Each product words its own sections (`<product>/<slot>`); what a product does not
    // word falls back to the core's words or is left out.
    env.add_template_owned("never_flushed", format!("{NEVER_FLUSHED}\n"))
        .map_err(|e| Error::failed(format!("summary template never_flushed: {e}")))?;
    crate::product::add_product_templates(&mut env)?;
    let t = env
        .get_template("summary.md")
        .map_err(|e| Error::failed(format!("summary template: {e}")))?;
    t.render(minijinja::Value::from_serialize(summary))
        .map_err(|e| Error::failed(format!("rendering summary.md: {e}")))
}

fn read(dir: &Path, rel: Option<&str>) -> String {
    match rel {
        Some(r) => crate::fsutil::read_log(&dir.join(r)),
        None => String::new(),
    }
}

/// What the managed server ran in: its recorded cgroup, or the whole host.
fn server_shape(m: &crate::run::RunManifest) -> Option<String> {
    m.target.database_id.as_ref()?;
    Some(
        match m
            .target
            .extra
            .get("server_shape")
            .and_then(|v| serde_json::from_value::<crate::server::cgroup::Record>(v.clone()).ok())
        {
            Some(r) => r.words(),
            None => "the whole host (no --cpus or --memory)".into(),
        },
    )
}

/// The `resources` of a summary, from the run's timeline. An external server whose product
/// serves no process metrics is said to be unknown; a run without a timeline (written before
/// it existed, or whose server never started) has none.
fn resources(
    run: &RunDir,
    product: Option<&dyn crate::product::Product>,
    ingestion: Option<&Ingestion>,
) -> Option<Resources> {
    use crate::sampler::{self, phases};
    let samples = sampler::read(&run.dir.join(sampler::TIMELINE_FILE));
    let external = !run.manifest.target.is_managed();
    if samples.is_empty() {
        let no_metrics = product.is_some_and(|p| p.metrics_path().is_none());
        return (external && no_metrics).then(|| Resources {
            source: "unknown".into(),
            file: None,
            interval_seconds: sampler::INTERVAL.as_secs_f64(),
            samples: 0,
            data_dir_measured: None,
            phases: Vec::new(),
            load_bytes_written_per_row: None,
            load_data_dir_growth_bytes: None,
        });
    }
    let from_proc = samples.iter().any(|s| s.source == "proc");
    let source = if from_proc {
        "/proc: the server's process tree (the server and its descendants: stat, status, io)"
            .to_string()
    } else {
        let mut names: Vec<&str> = samples
            .iter()
            .filter_map(|s| s.series.as_deref())
            .flat_map(|x| x.split(", "))
            .filter(|x| !x.is_empty())
            .collect();
        names.sort();
        names.dedup();
        if names.is_empty() {
            "unknown (/metrics has no process series)".to_string()
        } else {
            let mut text = format!("/metrics: {}", names.join(", "));
            let fallback = product.and_then(|p| p.process_series().rss_fallback);
            if let Some(f) = fallback.filter(|f| names.contains(&f.shown)) {
                text.push_str(&format!(" ({})", f.note));
            }
            if samples.iter().all(|s| s.cpu_s.is_none()) {
                text.push_str("; no CPU series: CPU unknown");
            }
            text
        }
    };
    let phases = phases::summarise(&samples);
    let load = phases.iter().find(|p| p.phase == "load");
    let rows = ingestion
        .filter(|i| i.status == Status::Completed)
        .and_then(|i| i.rows.flatten())
        .filter(|r| *r > 0);
    Some(Resources {
        source,
        file: Some(sampler::TIMELINE_FILE.to_string()),
        interval_seconds: sampler::INTERVAL.as_secs_f64(),
        samples: samples.len() as u64,
        data_dir_measured: from_proc.then(|| {
            format!(
                "at every step boundary and at most every {} s between them (a walk of a large data directory every second would cost too much)",
                sampler::DIR_INTERVAL.as_secs()
            )
        }),
        load_bytes_written_per_row: load
            .and_then(|l| l.write_bytes)
            .zip(rows)
            .map(|(w, r)| (w as f64 / r as f64 * 100.0).round() / 100.0),
        load_data_dir_growth_bytes: load.and_then(|l| l.data_dir_growth_bytes),
        phases,
    })
}

/// `--target-precision`: the type's extra batches (`query-batch:<type>` steps) pooled into its
/// headline figures, and its `precision:<type>` records; a failed batch is a failure.
fn pool_batches(v: &mut QuerySummary, steps: &[Step], qt: &str, failures: &mut Vec<Failure>) {
    let batch_step = format!("query-batch:{qt}");
    let batches: Vec<&Step> = steps.iter().filter(|s| s.step == batch_step).collect();
    let records: Vec<Value> = steps
        .iter()
        .filter(|s| s.step == format!("precision:{qt}"))
        .map(|s| s.data.clone())
        .collect();
    if records.is_empty() && batches.is_empty() {
        return;
    }
    for s in batches.iter().filter(|s| s.status != Status::Completed) {
        fail(failures, "query", s, None);
    }
    let done: Vec<&&Step> = batches
        .iter()
        .filter(|s| s.status == Status::Completed)
        .collect();
    if !done.is_empty() {
        let mut pooled = crate::precision::Pooled::default();
        for a in v.attempts.iter().flatten() {
            pooled.add(
                a.stats.count,
                a.stats.mean_ms,
                a.stats.stddev_ms.unwrap_or(0.0),
            );
        }
        let (mut lo, mut hi) = (v.min_ms.flatten(), v.max_ms.flatten());
        for s in &done {
            let b = s.data_as::<QueryBatchData>().end;
            pooled.add(
                b.count.unwrap_or(0),
                b.mean_ms.unwrap_or(0.0),
                b.stddev_ms.flatten().unwrap_or(0.0),
            );
            lo = lo.zip(b.min_ms.flatten()).map(|(a, b)| a.min(b));
            hi = hi.zip(b.max_ms.flatten()).map(|(a, b)| a.max(b));
        }
        v.query_count = Some(pooled.count);
        v.mean_ms = Some(pooled.mean_ms);
        v.stddev_ms = Some(pooled.stddev_ms());
        v.min_ms = Some(lo);
        v.max_ms = Some(hi);
        v.median_ms = Some(None);
        v.p95_ms = Some(None);
        v.p99_ms = Some(None);
        v.p999_ms = Some(None);
    }
    v.precision = Some(records);
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    /// The `target` of an external run, for summaries built by hand.
    pub(crate) fn fixture_target() -> RunTarget {
        serde_json::from_value(json!({"mode": "external", "product": "greptimedb",
            "edition": null, "database_id": null, "urls": ["http://127.0.0.1:1"],
            "endpoint": "http://127.0.0.1:1", "database": "benchmark", "version": "v",
            "binary_sha256": null}))
        .unwrap()
    }

    pub(crate) fn fixture_workload() -> Workload {
        serde_json::from_value(
            json!({"profile": "smoke", "load_workers": 1, "batch_size": 3000,
            "query_workers": 1, "database_mode": null, "query_counts": {}, "hot_runs": null}),
        )
        .unwrap()
    }

    /// Replaces the leaves of `base` by those of `over` (objects merged key by key).
    fn merge(base: &mut Value, over: Value) {
        match (base, over) {
            (Value::Object(b), Value::Object(o)) => {
                for (k, v) in o {
                    match b.get_mut(&k) {
                        Some(slot) if slot.is_object() && v.is_object() => merge(slot, v),
                        _ => {
                            b.insert(k, v);
                        }
                    }
                }
            }
            (b, o) => *b = o,
        }
    }

    /// A summary of an external benchmark run with what a test sets merged in.
    pub(crate) fn summary_from(over: Value) -> RunSummary {
        let mut base = json!({
            "schema_version": SCHEMA_VERSION, "kind": "run-summary", "run_id": "r",
            "run_kind": "benchmark", "run_dir": "/nonexistent/r", "product": "greptimedb",
            "product_label": "GreptimeDB", "edition": null, "label": "GreptimeDB", "phase": "query",
            "status": "completed", "created_at": "t", "finished_at": "t", "command": "tsbsctl",
            "tool": {"version": "v", "git_revision": "g"},
            "host": {"hostname": "h", "cpu_model": null, "cpus": 1, "memory_bytes": null,
                "os": "linux", "os_release": null, "kernel": null, "arch": "x86_64",
                "data_dir": null, "data_filesystem": null},
            "target": fixture_target(), "server": null, "durability": null,
            "server_settings": null, "environment": {}, "dataset": null, "query_set": null,
            "workload": fixture_workload(), "data_state": null, "ingestion": null,
            "row_count": null, "storage": null, "data_location": null, "queries": [],
            "analyses": [], "compaction": null, "server_diagnostics": {"attempts": [],
                "warning_count": 0, "error_count": 0, "panic_count": 0, "fatal_count": 0,
                "samples": []},
            "failures": [], "warnings": [], "not_started": [], "error": null,
        });
        // Partial parts a test names get the fields their types require.
        let parts = [
            ("dataset", json!({"dataset_id": "d", "spec": null})),
            (
                "query_set",
                json!({"query_set_id": "q", "manifest_sha256": "m", "format": "f",
                "query_counts": {}, "path": "/q"}),
            ),
            (
                "data_state",
                json!({"label": "as loaded", "loads": 1, "maintenance": []}),
            ),
            (
                "ingestion",
                json!({"attempt": 1, "status": "completed", "started_at": "t"}),
            ),
        ];
        for (k, filler) in parts {
            if over.get(k).is_some_and(Value::is_object) {
                base[k] = filler;
            }
        }
        merge(&mut base, over);
        serde_json::from_value(base).unwrap()
    }

    /// The smallest summary of an external run that `summary.md` renders.
    fn minimal_summary(phase: &str) -> Value {
        json!({"run_kind": "benchmark", "label": "GreptimeDB", "run_id": "r",
            "status": "completed", "phase": phase, "created_at": "t", "finished_at": "t",
            "target": {"mode": "external", "urls": ["http://127.0.0.1:1"], "database": "b",
                "version": "v"},
            "product_label": "GreptimeDB", "environment": {"tsbs_commit": "c", "go_version": "g"},
            "host": {"cpu_model": "c", "cpus": 2, "memory_bytes": 1, "os_release": "o",
                "kernel": "k", "data_filesystem": "f"},
            "tool": {"version": "v", "git_revision": "g"}, "server_diagnostics": {},
            "queries": []})
    }

    /// Peak RSS and mean CPU per phase, bytes written per row and the data directory's
    /// growth are shown; what was not measured reads "unknown", never 0.
    #[test]
    fn server_resources_and_the_host_are_shown() {
        let mut s = minimal_summary("all");
        s["host"]["data_dir"] = json!("/ws/data");
        s["host"]["data_device"] = json!("/dev/vda1");
        s["host"]["data_mount"] = json!("/");
        s["host"]["data_block_device"] = json!("vda");
        s["host"]["data_rotational"] = json!(false);
        let phase = |name: &str, cores: Value, rss: Value, growth: Value| {
            json!({"phase": name, "samples": 3, "wall_seconds": 10.0, "cpu_seconds": 5.0,
                "cpu_user_seconds": 4.0, "cpu_system_seconds": 1.0, "mean_cpu_cores": cores,
                "peak_rss_bytes": rss, "read_bytes": null, "write_bytes": 3145728,
                "data_dir_start_bytes": 0, "data_dir_end_bytes": 1, "data_dir_growth_bytes": growth})
        };
        s["resources"] = json!({"source": "/proc: the server's process tree", "file": "timeline.jsonl",
            "interval_seconds": 1.0, "samples": 12, "data_dir_measured": "at every step boundary",
            "phases": [phase("load", json!(0.5), json!(209715200), json!(2097152)),
                phase("query:cpu-max-all-1", json!(1.25), json!(104857600), json!(-1024)),
                phase("compact", json!(null), json!(null), json!(null))],
            "load_bytes_written_per_row": 36.4, "load_data_dir_growth_bytes": 2097152});
        let md = render_md(&s).unwrap();
        assert!(
            md.contains("| load | 10.0 | 0.50 | 4.00 / 1.00 | 200.00 MiB | unknown | 3.00 MiB | +2.00 MiB |"),
            "{md}"
        );
        assert!(
            md.contains("| query:cpu-max-all-1 | 10.0 | 1.25 | 4.00 / 1.00 | 100.00 MiB | unknown | 3.00 MiB | -1.0 KiB |"),
            "{md}"
        );
        assert!(
            md.contains("| compact | 10.0 | unknown | 4.00 / 1.00 | unknown | unknown | 3.00 MiB | unknown |"),
            "{md}"
        );
        assert!(
            md.contains("Load: 36.4 bytes written to storage per row loaded; data directory growth +2.00 MiB."),
            "{md}"
        );
        assert!(
            md.contains(
                "Source: /proc: the server's process tree; timeline `timeline.jsonl`, 12 samples"
            ),
            "{md}"
        );
        assert!(
            md.contains("- Data disk: `/ws/data` on f (`/dev/vda1` mounted at `/`), block device `vda`, not rotational"),
            "{md}"
        );
        // The round trip keeps every field; a summary without them still reads and renders.
        let typed: RunSummary = summary_from(json!({"resources": s["resources"].clone()}));
        let back = serde_json::to_value(&typed).unwrap();
        assert_eq!(back["resources"], s["resources"]);
        let old = summary_from(json!({}));
        assert!(old.resources.is_none());
        assert!(serde_json::to_value(&old)
            .unwrap()
            .get("resources")
            .is_none());
        let md = render_md(&minimal_summary("all")).unwrap();
        assert!(!md.contains("## Server resources"), "{md}");
        assert!(md.contains("rotational: unknown"), "{md}");
        // An external server without process metrics: unknown.
        s["resources"] = json!({"source": "unknown", "file": null, "interval_seconds": 1.0,
            "samples": 0, "data_dir_measured": null, "phases": [],
            "load_bytes_written_per_row": null, "load_data_dir_growth_bytes": null});
        let md = render_md(&s).unwrap();
        assert!(
            md.contains("Source: unknown.\nNo sample: peak RSS and CPU per phase unknown."),
            "{md}"
        );
    }

    /// The data-directory table is headed with what the product's files are: PostgreSQL's
    /// `pg_wal/` and `base/`, not Parquet/SST; the generic headings without recorded parts.
    #[test]
    fn the_footprint_table_names_the_products_own_parts() {
        let mut s = minimal_summary("all");
        s["storage"] = json!({"when": "at-rest", "data_dir": "/d", "wal_bytes": 50339840,
            "data_bytes": 48139988, "other_bytes": 695569, "total_bytes": 99175397, "files": 9,
            "database_bytes": 25533799, "table_bytes": 11534336, "index_bytes": 6111232,
            "load_wal_bytes": 32426736,
            "parts": crate::product::footprint_parts("timescaledb", Some("postgresql"))});
        let md = render_md(&s).unwrap();
        assert!(md.contains("| Database (`pg_database_size`) |"), "{md}");
        assert!(
            md.contains("| WAL segments (`pg_wal/`) | Databases (`base/`: all of the cluster's) | Other (`global/`, `pg_xact/`, configuration) | Total | Files |"),
            "{md}"
        );
        assert!(!md.contains("Parquet"), "{md}");
        assert!(md.contains("its total is not the database's size"), "{md}");
        // A summary written before parts were recorded keeps the generic headings.
        s["storage"].as_object_mut().unwrap().remove("parts");
        let md = render_md(&s).unwrap();
        assert!(
            md.contains("| WAL | Data files (Parquet/SST) | Other (index, manifest, metadata) |"),
            "{md}"
        );
        assert_eq!(
            crate::product::footprint_parts("greptimedb", None),
            crate::product::FootprintParts::GENERIC
        );
    }

    /// A minimum the runner did not report is "unknown" in Markdown (null in JSON), never 0.
    #[test]
    fn an_unknown_minimum_reads_unknown() {
        let q = |min: Value| {
            let mut s = minimal_summary("query");
            s["queries"] = json!([{
                "query_type": "lastpoint", "status": "completed", "query_count": 10,
                "mean_ms": 3.0, "min_ms": min, "max_ms": 5.0, "log": "logs/q.log"}]);
            let md = render_md(&s).unwrap();
            md.lines()
                .find(|l| l.starts_with("| lastpoint"))
                .unwrap()
                .to_string()
        };
        assert!(
            q(Value::Null).contains("| unknown | 5.00 |"),
            "{}",
            q(Value::Null)
        );
        assert!(
            q(json!(1.5)).contains("| 1.50 | 5.00 |"),
            "{}",
            q(json!(1.5))
        );
    }

    /// Each resume is a bullet of its own, after the version line (the real reload of a
    /// 2.5M-row run on GreptimeDB printed "binary SHA-256 `…`- Resumed …" on one line), and
    /// names the step attempts it superseded.
    #[test]
    fn each_resume_is_its_own_bullet() {
        let resume = |status: &str, load_mode: Value, superseded: Value| {
            json!({"at": "t1", "tool": {"version": "v", "git_revision": "g"}, "command": "c",
                "pid": 1, "previous_status": status, "query_types": ["lastpoint"],
                "superseded": superseded, "load_mode": load_mode})
        };
        for sha in [json!("abc"), Value::Null] {
            let mut s = minimal_summary("all");
            s["target"]["binary_sha256"] = sha.clone();
            s["resumes"] = json!([
                resume(
                    "interrupted",
                    json!("reset"),
                    json!([{"step": "dataset", "attempt": 1}, {"step": "load", "attempt": 1}])
                ),
                resume(
                    "failed",
                    Value::Null,
                    json!([{"step": "query-lastpoint", "attempt": 2}])
                ),
            ]);
            let md = render_md(&s).unwrap();
            let lines: Vec<&str> = md.lines().collect();
            let at = lines
                .iter()
                .position(|l| l.starts_with("- GreptimeDB version: `v`"))
                .unwrap_or_else(|| panic!("{md}"));
            assert!(!lines[at].contains("Resumed"), "{md}");
            assert!(
                lines[at + 1].starts_with("- Resumed t1 ")
                    && lines[at + 1].contains("loaded again from the start (database mode reset), then ran lastpoint; superseded earlier step attempt(s), kept in `events.jsonl`: dataset, load"),
                "{md}"
            );
            assert!(
                lines[at + 2].starts_with("- Resumed t1 ")
                    && lines[at + 2].ends_with("superseded unfinished step attempt(s), kept in `events.jsonl`: query-lastpoint (attempt 2)"),
                "{md}"
            );
            assert!(lines[at + 3].starts_with("- "), "{md}");
        }
    }

    /// The analysis table says whether the "hot" runs repeated the cold query (W2).
    #[test]
    fn analyses_say_what_hot_measured() {
        let row = |same: Value| {
            let mut s = minimal_summary("analyze");
            s["analyses"] = json!([{"query_type": "high-cpu-1", "attempt": 1, "status": "completed",
                    "hot_runs": 2, "hot_same_sql_as_cold": same, "result_dir": "r", "log": "l"}]);
            let md = render_md(&s).unwrap();
            assert!(
                md.contains("not repetitions") || md.contains("next queries"),
                "{md}"
            );
            md.lines()
                .find(|l| l.starts_with("| high-cpu-1"))
                .unwrap()
                .to_string()
        };
        assert!(
            row(json!(false)).contains("| 2 | no |"),
            "{}",
            row(json!(false))
        );
        assert!(row(json!(true)).contains("| 2 | yes |"));
        assert!(row(Value::Null).contains("| 2 | unknown |"));
    }

    /// `summary.json` files written by the previous version (the runs of `RUN_FIXTURES`).
    const SUMMARY_FIXTURES: &[(&str, &str)] = &[
        (
            "summary-greptimedb-all-failed.json",
            include_str!("../tests/fixtures/run-data-v1/summary-greptimedb-all-failed.json"),
        ),
        (
            "summary-greptimedb-analyze.json",
            include_str!("../tests/fixtures/run-data-v1/summary-greptimedb-analyze.json"),
        ),
        (
            "summary-greptimedb-compaction-completed.json",
            include_str!(
                "../tests/fixtures/run-data-v1/summary-greptimedb-compaction-completed.json"
            ),
        ),
        (
            "summary-greptimedb-compaction-failed.json",
            include_str!("../tests/fixtures/run-data-v1/summary-greptimedb-compaction-failed.json"),
        ),
        (
            "summary-greptimedb-external-all.json",
            include_str!("../tests/fixtures/run-data-v1/summary-greptimedb-external-all.json"),
        ),
        (
            "summary-greptimedb-query-after-compaction.json",
            include_str!(
                "../tests/fixtures/run-data-v1/summary-greptimedb-query-after-compaction.json"
            ),
        ),
        (
            "summary-greptimedb-query-interrupted.json",
            include_str!("../tests/fixtures/run-data-v1/summary-greptimedb-query-interrupted.json"),
        ),
        (
            "summary-greptimedb-query-version-override.json",
            include_str!(
                "../tests/fixtures/run-data-v1/summary-greptimedb-query-version-override.json"
            ),
        ),
        (
            "summary-influxdb3-core-all.json",
            include_str!("../tests/fixtures/run-data-v1/summary-influxdb3-core-all.json"),
        ),
        (
            "summary-influxdb3-external-enterprise-all.json",
            include_str!(
                "../tests/fixtures/run-data-v1/summary-influxdb3-external-enterprise-all.json"
            ),
        ),
    ];

    #[test]
    fn summaries_of_the_previous_version_round_trip_byte_for_byte() {
        for (name, text) in SUMMARY_FIXTURES {
            let s: RunSummary =
                serde_json::from_str(text).unwrap_or_else(|e| panic!("{name}: {e}"));
            // Through the same parser as the text: serde_json's float parsing may miss the
            // last digit of a long fraction, for `Value` and structs alike. `runs summarize`
            // (no parsing) rewrote these files byte for byte.
            let same_parse: Value = serde_json::from_str(text).unwrap();
            let want = serde_json::to_string_pretty(&same_parse).unwrap() + "\n";
            let mut out = serde_json::to_string_pretty(&s).unwrap();
            out.push('\n');
            assert_eq!(out, want, "{name}");
        }
    }

    /// summary.md of each fixture, as this version renders it: pins the wording byte for byte
    /// (each product's sections included), so that a change of the template or of where a
    /// section is worded shows here. `BLESS=1` writes the files from the current rendering.
    #[test]
    fn the_summary_md_of_each_fixture_is_rendered_byte_for_byte() {
        let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/run-data-v1");
        for (name, text) in SUMMARY_FIXTURES {
            let s: RunSummary = serde_json::from_str(text).unwrap();
            let md = render_md(&s).unwrap();
            let path = dir.join(name.replace(".json", ".md"));
            if std::env::var_os("BLESS").is_some() {
                std::fs::write(&path, &md).unwrap();
            }
            let want = std::fs::read_to_string(&path)
                .unwrap_or_else(|e| panic!("{}: {e} (BLESS=1 writes it)", path.display()));
            assert!(
                md == want,
                "{name}: summary.md differs from {}",
                path.display()
            );
        }
    }

    #[test]
    fn absent_and_null_measurements_stay_apart() {
        let read = |n: &str| -> RunSummary {
            let (_, t) = SUMMARY_FIXTURES
                .iter()
                .find(|(f, _)| f.contains(n))
                .unwrap();
            serde_json::from_str(t).unwrap()
        };
        let s = read("greptimedb-query-after-compaction");
        assert!(s
            .queries
            .iter()
            .all(|q| q.measured() && q.attempts.is_some()));
        assert!(s.queries.iter().all(|q| q.reason.is_none()));
        let i = read("greptimedb-all-failed").ingestion.unwrap();
        assert!(i.measured());
        assert!(i.reported_duration_seconds.is_some() && i.backoff_seconds.is_some());
        assert!(read("influxdb3-core-all").durability.is_some());
        // A type that never completed: its log may be `null`, its reason is present.
        let broken = read("greptimedb-query-interrupted");
        let x = broken.queries.iter().find(|q| q.query_type == "x").unwrap();
        assert!(!x.measured());
        assert_eq!(x.log, Some(None));
        assert!(matches!(&x.reason, Some(Some(r)) if r.contains("ended without finishing")));
        assert!(broken.ingestion.is_none());
    }
}
