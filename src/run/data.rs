//! The typed data of the steps tsbsctl records, one struct per step kind (issue 23 §3).
//!
//! A step's data is what its start and end events carry in `events.jsonl`, folded into one
//! object by [`super::fold_steps`] (the end's keys after the start's; a key of both keeps the
//! start's place and the end's value). Each struct here serialises to exactly the bytes the
//! writers recorded before it existed: fields in the recorded key order, a field that a writer
//! leaves out skipped, a recorded `null` kept (`Present`). Reading is as forgiving as the
//! look-ups it replaces: a missing key is `None`, an unknown key is ignored, and a known key of
//! another type reads as `None` ([`lenient`]; where a recorded `null` must be told apart from an
//! absent key, such a record reads as empty: [`super::Step::data_as`]).
//!
//! Parts that other modules own and no summary reads by field (a tool's resource usage, the
//! stall policy, a load's binding, a failure) stay JSON values here: the writer converts at
//! its edge.

use std::path::PathBuf;

use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::present;

/// A present key that may be `null`, told apart from an absent key (`None`).
pub type Present<T> = Option<Option<T>>;

/// The value of a record, as [`serde_json::to_value`] makes it (field order kept).
pub fn value<T: Serialize>(data: &T) -> Value {
    serde_json::to_value(data).unwrap_or(Value::Null)
}

/// A field read as forgivingly as a look-up of it: a value of another type reads as `None`
/// (`#[serde(default, deserialize_with = "lenient")]` on an `Option` field), so one odd key
/// does not empty the rest of the record.
pub fn lenient<'de, D, T>(d: D) -> Result<Option<T>, D::Error>
where
    D: serde::Deserializer<'de>,
    T: serde::de::DeserializeOwned,
{
    let v = Value::deserialize(d)?;
    Ok(T::deserialize(v).ok())
}

/// What the host did between two readings: the `machine` of a load, query or batch step and
/// the data of a `machine-check` step (issue 24 §4).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Quiet {
    #[serde(default)]
    pub seconds: f64,
    /// The host's CPUs (all of them) busy, as a share of their time.
    #[serde(default)]
    pub host_busy_share: Option<f64>,
    /// The part of that spent by processes other than the run's (tsbsctl, its tool, the
    /// managed server), as a share of all CPU time.
    #[serde(default)]
    pub others_cpu_share: Option<f64>,
    /// The managed server's whole process tree, as a share of all CPU time (not "other").
    #[serde(default)]
    pub server_cpu_share: Option<f64>,
    /// Pages swapped in or out per second.
    #[serde(default)]
    pub swap_pages_per_second: Option<f64>,
    /// The 1-minute load average at the end.
    #[serde(default)]
    pub load_average_1m: Option<f64>,
    /// The CPU frequency policy ("performance", "powersave", ...), unknown in most VMs.
    #[serde(default)]
    pub cpu_governor: Option<String>,
    #[serde(default)]
    pub threshold: f64,
    /// Other processes stayed below the threshold and nothing swapped.
    #[serde(default)]
    pub quiet: Option<bool>,
}

/// A [`Quiet`] as recorded: the reading, before which phase (a `machine-check` step) and in
/// words.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct MachineRecord {
    #[serde(flatten)]
    pub reading: Quiet,
    /// `machine-check`: before which phase ("the load", "the queries").
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "lenient"
    )]
    pub before: Option<String>,
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "lenient"
    )]
    pub words: Option<String>,
}

impl MachineRecord {
    /// Other processes were busy (a reading that could not tell is not busy).
    pub fn busy(&self) -> bool {
        self.reading.quiet == Some(false)
    }
}

/// Step `load`: its start (what was loaded, how), folded with its end (what the loader
/// did). A reused load is `dataset_id`, `database_mode` and `binding` only.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct LoadData {
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "lenient"
    )]
    pub dataset_id: Option<String>,
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "lenient"
    )]
    pub database: Option<String>,
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "lenient"
    )]
    pub database_mode: Option<String>,
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "lenient"
    )]
    pub workers: Option<u64>,
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "lenient"
    )]
    pub batch_size: Option<u64>,
    /// At the start `stdin` or `file`; after the end what the loader read (its bytes and hash).
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "present"
    )]
    pub input: Option<Value>,
    /// The loader's command line, secrets redacted.
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "lenient"
    )]
    pub command: Option<String>,
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "present"
    )]
    pub stall: Option<Value>,
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "lenient"
    )]
    pub urls_in_use: Option<Vec<String>>,
    /// A reused load: the workspace's binding that made it unneeded.
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "present"
    )]
    pub binding: Option<Value>,
    #[serde(flatten)]
    pub end: LoadEnded,
}

/// The end of a `load` step: the loader's counts, its usage and what it read (completed, or
/// failed on what it read), or why it failed.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct LoadEnded {
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "present"
    )]
    pub rows: Present<u64>,
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "present"
    )]
    pub metrics: Present<u64>,
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "present"
    )]
    pub usage: Option<Value>,
    /// Written here by an end; folded, it keeps the start's place ([`LoadData::input`]).
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "present"
    )]
    pub input: Option<Value>,
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "lenient"
    )]
    pub machine: Option<MachineRecord>,
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "present"
    )]
    pub failure: Option<Value>,
    /// The full disk that made the server refuse writes, when that was the cause.
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "present"
    )]
    pub disk_full: Present<String>,
}

/// The end of a query runner's step (`query:<type>`, `query-batch:<type>`): its statistics,
/// usage and the machine, or why it failed.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct QueryEnded {
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "lenient"
    )]
    pub count: Option<u64>,
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "lenient"
    )]
    pub mean_ms: Option<f64>,
    /// A batch only (a timed pass's are read from its results file).
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
    pub usage: Option<Value>,
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "lenient"
    )]
    pub machine: Option<MachineRecord>,
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "present"
    )]
    pub failure: Option<Value>,
    /// The managed server died under the runner (`result`: OOM or crash, `evidence`).
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "present"
    )]
    pub server_died: Option<Value>,
    /// How many times the server's query engine ran out of its memory pool during
    /// the type, by its own counter (InfluxDB 3's
    /// `query_datafusion_query_execution_ooms_total`, before and after).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub query_engine_ooms: Option<Value>,
}

/// Step `query:<type>`: one timed pass of a query type, folded with its end.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct QueryData {
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "lenient"
    )]
    pub query_type: Option<String>,
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "lenient"
    )]
    pub file: Option<PathBuf>,
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "lenient"
    )]
    pub file_bytes: Option<u64>,
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "lenient"
    )]
    pub file_sha256: Option<String>,
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "lenient"
    )]
    pub file_sha256_verified: Option<bool>,
    /// The queries the file holds (`null`: not known).
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "present"
    )]
    pub queries: Present<u64>,
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "lenient"
    )]
    pub workers: Option<u64>,
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "lenient"
    )]
    pub command: Option<String>,
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "present"
    )]
    pub stall: Option<Value>,
    /// The product's check of the query file (GreptimeDB: the SQL dialect).
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "present"
    )]
    pub file_check: Option<Value>,
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "lenient"
    )]
    pub urls_in_use: Option<Vec<String>>,
    /// With `--passes` above 1: which pass of how many.
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "lenient"
    )]
    pub pass: Option<u32>,
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "lenient"
    )]
    pub passes: Option<u32>,
    #[serde(flatten)]
    pub end: QueryEnded,
}

/// Step `query-batch:<type>`: one extra batch of `--target-precision`, folded with its end.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct QueryBatchData {
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "lenient"
    )]
    pub query_type: Option<String>,
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "lenient"
    )]
    pub pass: Option<u32>,
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "lenient"
    )]
    pub batch: Option<u32>,
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "lenient"
    )]
    pub file: Option<PathBuf>,
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "lenient"
    )]
    pub file_sha256: Option<String>,
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "lenient"
    )]
    pub queries: Option<u64>,
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "lenient"
    )]
    pub workers: Option<u64>,
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "lenient"
    )]
    pub command: Option<String>,
    #[serde(flatten)]
    pub end: QueryEnded,
}

/// Step `answers:<type>` (`--check-answers`): the verification pass, folded with the answers
/// it read.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct AnswersData {
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "lenient"
    )]
    pub query_type: Option<String>,
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "present"
    )]
    pub queries: Present<u64>,
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "lenient"
    )]
    pub workers: Option<u64>,
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "lenient"
    )]
    pub command: Option<String>,
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "lenient"
    )]
    pub purpose: Option<String>,
    /// The type's answers (a [`crate::answers::TypeAnswers`]; kept as recorded, read by the
    /// summary).
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "present"
    )]
    pub answers: Option<Value>,
}

/// Step `server`: the started server (pid, endpoint, cgroup), folded with how it stopped.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct ServerData {
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "lenient"
    )]
    pub pid: Option<u32>,
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "lenient"
    )]
    pub endpoint: Option<String>,
    /// The cgroup the kernel holds the server to (`null`: none).
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "present"
    )]
    pub cgroup: Option<Value>,
    #[serde(flatten)]
    pub end: ServerEnded,
}

/// The end of a `server` step: its events, the stop's outcome and time, and a warning.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct ServerEnded {
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "present"
    )]
    pub events: Option<Value>,
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "present"
    )]
    pub outcome: Option<Value>,
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "lenient"
    )]
    pub stop_seconds: Option<f64>,
    /// A slow or killed stop, in words.
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "lenient"
    )]
    pub warning: Option<String>,
}

/// One of a server's recorded events, as much of it as a summary reads.
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
pub struct ServerEventMark {
    #[serde(default)]
    pub event: String,
    #[serde(default)]
    pub after_ms: Option<f64>,
}

impl ServerData {
    /// Seconds from the start to the first readiness answer.
    pub fn ready_seconds(&self) -> Option<f64> {
        let events: Vec<ServerEventMark> =
            Vec::deserialize(self.end.events.as_ref()?).unwrap_or_default();
        events
            .iter()
            .find(|e| e.event == "ready")
            .and_then(|e| e.after_ms)
            .map(|ms| ms / 1000.0)
    }
}

/// Step `cold-start` (`--cold`): the restart with the page cache dropped before a type.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct ColdStartData {
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "lenient"
    )]
    pub before_query_type: Option<String>,
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "lenient"
    )]
    pub pass: Option<u32>,
    /// The `server` step attempt it started.
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "lenient"
    )]
    pub server_attempt: Option<u32>,
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "lenient"
    )]
    pub page_cache_dropped: Option<bool>,
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "lenient"
    )]
    pub drop_seconds: Option<f64>,
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "lenient"
    )]
    pub seconds: Option<f64>,
}

/// Steps `row-count` and `row-check`: a table counted after the load (or before the queries)
/// against the rows the dataset holds for it; with several tables (`devops`, `iot`) their sum,
/// with each table's count in `tables`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct RowCountData {
    /// The table, or the tables' names joined with ", ".
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "lenient"
    )]
    pub table: Option<String>,
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "lenient"
    )]
    pub expected: Option<u64>,
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "lenient"
    )]
    pub actual: Option<u64>,
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "lenient"
    )]
    pub ok: Option<bool>,
    /// `row-check` (the count before the queries): how long the count took, in seconds.
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "lenient"
    )]
    pub took_s: Option<f64>,
    /// How the product counted (its own words and figures).
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "present"
    )]
    pub method: Option<Value>,
    /// How long the product waited for its count to settle (its own record).
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "present"
    )]
    pub wait: Option<Value>,
    /// The count failed (no number was read).
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "lenient"
    )]
    pub error: Option<String>,
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "lenient"
    )]
    pub tables: Option<Vec<RowCountData>>,
    /// Keys of a record this tsbsctl does not know (an older one's), kept as they were.
    #[serde(flatten)]
    pub other: serde_json::Map<String, Value>,
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::run::{fold_steps, Status, Step, StepEvent};
    use serde::de::DeserializeOwned;

    /// Steps recorded by a real GreptimeDB run (`bench greptimedb all`, 2026-12-05) and a
    /// server step with a stop warning (2026-12-03), as `events.jsonl` lines.
    const RECORDED: &str = include_str!("../../tests/fixtures/steps-v1/greptimedb-all.jsonl");
    /// Lines as the writers before the typed records wrote them for the cases no recorded run
    /// above has (a reused and a failed load, `--passes`, `--target-precision`, `--cold`,
    /// `--check-answers`, a failed query type).
    const WRITTEN: &str = include_str!("../../tests/fixtures/steps-v1/more.jsonl");

    /// `data` read as `T` and written back gives the same bytes.
    fn same_bytes<T: Serialize + DeserializeOwned>(data: &Value) {
        let typed = T::deserialize(data).unwrap_or_else(|e| panic!("{e}: {data}"));
        assert_eq!(
            serde_json::to_string(&value(&typed)).unwrap(),
            serde_json::to_string(data).unwrap()
        );
    }

    /// Every event's data reads into its kind's start or end record and writes back byte for
    /// byte, and so does the line around it.
    fn events_round_trip(lines: &str) -> Vec<StepEvent> {
        let mut events = Vec::new();
        let mut started = std::collections::BTreeSet::new();
        for line in lines.lines() {
            let e: StepEvent = serde_json::from_str(line).unwrap();
            // The line as any reader of `events.jsonl` reads it (serde_json's float parsing
            // may differ from the writer in a 17th digit, as it always did).
            let recorded = serde_json::to_string(&serde_json::from_str::<Value>(line).unwrap());
            assert_eq!(serde_json::to_string(&e).unwrap(), recorded.unwrap());
            let first = e.status == Status::Running && e.data.is_some() && {
                started.insert((e.step.clone(), e.attempt))
            };
            if let Some(d) = &e.data {
                let kind = e.step.split(':').next().unwrap();
                match (kind, first) {
                    // A reused load is one record, at its end.
                    ("load", _) if first || e.status == Status::Reused => same_bytes::<LoadData>(d),
                    ("load", false) => same_bytes::<LoadEnded>(d),
                    ("query", true) => same_bytes::<QueryData>(d),
                    ("query-batch", true) => same_bytes::<QueryBatchData>(d),
                    ("query" | "query-batch", false) => same_bytes::<QueryEnded>(d),
                    ("server", true) => same_bytes::<ServerData>(d),
                    ("server", false) => same_bytes::<ServerEnded>(d),
                    ("answers", _) => same_bytes::<AnswersData>(d),
                    ("machine-check", _) => same_bytes::<MachineRecord>(d),
                    ("cold-start", _) => same_bytes::<ColdStartData>(d),
                    ("row-count" | "row-check", _) => same_bytes::<RowCountData>(d),
                    (other, _) => panic!("no record for step {other}"),
                }
            }
            events.push(e);
        }
        events
    }

    /// Every folded step's data reads into its kind's record and writes back byte for byte.
    fn steps_round_trip(steps: &[Step]) {
        for s in steps {
            match s.step.split(':').next().unwrap() {
                "load" => same_bytes::<LoadData>(&s.data),
                "query" => same_bytes::<QueryData>(&s.data),
                "query-batch" => same_bytes::<QueryBatchData>(&s.data),
                "server" => same_bytes::<ServerData>(&s.data),
                "answers" => same_bytes::<AnswersData>(&s.data),
                "machine-check" => same_bytes::<MachineRecord>(&s.data),
                "cold-start" => same_bytes::<ColdStartData>(&s.data),
                "row-count" | "row-check" => same_bytes::<RowCountData>(&s.data),
                other => panic!("no record for step {other}"),
            }
        }
    }

    #[test]
    fn recorded_steps_read_typed_and_write_back_byte_for_byte() {
        let events = events_round_trip(RECORDED);
        let steps = fold_steps(&events);
        steps_round_trip(&steps);
        let load: LoadData = steps.iter().find(|s| s.step == "load").unwrap().data_as();
        assert_eq!(
            load.dataset_id.as_deref(),
            Some("cpu-only-s10-c3a7d38f3a2a")
        );
        assert_eq!((load.workers, load.batch_size), (Some(2), Some(3000)));
        assert_eq!(load.end.rows, Some(Some(86400)));
        // Folded, the loader's input is what it read, in the start's place.
        assert!(load.input.as_ref().is_some_and(Value::is_object));
        assert!(load.end.input.is_none());
        assert!(load.end.machine.is_some());
        let server: ServerData = steps.iter().find(|s| s.step == "server").unwrap().data_as();
        assert!(server.pid.is_some() && server.ready_seconds().is_some());
        let warned = steps.iter().filter(|s| s.step == "server").any(|s| {
            s.data_as::<ServerData>()
                .end
                .warning
                .is_some_and(|w| w.contains("SIGKILL"))
        });
        assert!(warned);
    }

    #[test]
    fn written_steps_of_every_kind_read_typed_and_write_back_byte_for_byte() {
        let events = events_round_trip(WRITTEN);
        steps_round_trip(&fold_steps(&events));
    }

    #[test]
    fn an_old_record_with_a_key_missing_or_added_still_reads() {
        let step = |data: Value| Step {
            step: "load".into(),
            attempt: 1,
            status: Status::Completed,
            started_at: String::new(),
            finished_at: None,
            log: None,
            results: None,
            reason: None,
            data,
        };
        let d: LoadData =
            step(serde_json::json!({"dataset_id": "d", "a_later_key": [1]})).data_as();
        assert_eq!(d.dataset_id.as_deref(), Some("d"));
        assert_eq!(d.workers, None);
        // A known key of another type: read as nothing, as a look-up of it read null; the
        // rest of the record still reads.
        let d: LoadData = step(serde_json::json!({"dataset_id": "d", "workers": "four"})).data_as();
        assert_eq!((d.dataset_id.as_deref(), d.workers), (Some("d"), None));
        let d: LoadData = step(Value::Null).data_as();
        assert_eq!(d, LoadData::default());
    }
}
