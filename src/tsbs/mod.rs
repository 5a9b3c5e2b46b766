//! The TSBS tools as tsbsctl drives them: command lines ([`command`]), what the loaders print
//! and write ([`load`]), what the query runners print and write plus the per-type aggregation
//! ([`query`]), and how a failed tool is recognised and explained ([`failure`]).
//!
//! Pure library code: nothing here starts a process or touches a run directory. A benchmark
//! phase builds a [`command::TsbsCommand`], runs it with its output teed into a log, then calls
//! [`failure::detect`] and [`load::load_result`] / [`query::query_result`] on what is on disk.
//! Facts: reference benchmark.md §3.3-§4.4, protocols.md §1.3-§1.8.

pub mod command;
pub mod credentials;
pub mod failure;
pub mod load;
pub mod query;

use std::path::Path;
use std::process::ExitStatus;

use crate::error::Error;

pub use command::{
    explain_command, load_command, query_command, DatabaseMode, ExplainSpec, LoadInput, LoadSpec,
    LoadTarget, QuerySpec, QueryTarget, Secret, ToolArg, TsbsCommand,
};
pub use failure::{detect, FailureKind, ToolFailure};
pub use load::{load_result, LoadResult};
pub use query::{
    aggregate, query_result, LatencyStats, QueryAttempt, QueryRunResult, QueryTypeResult,
};

/// One load step, start to end: a non-zero exit is a failure in the tool's words (§4.4); an
/// exit 0 whose results cannot be read is a failure too ([`FailureKind::Results`]).
pub fn load_outcome(
    tool: &str,
    status: ExitStatus,
    log_text: &str,
    results_file: &Path,
) -> std::result::Result<LoadResult, ToolFailure> {
    if let Some(f) = detect(tool, status, log_text) {
        return Err(f);
    }
    load_result(results_file, log_text).map_err(|e| ToolFailure::unreadable(tool, &e))
}

/// One query-runner step (one type, one attempt), as [`load_outcome`].
pub fn query_outcome(
    tool: &str,
    status: ExitStatus,
    log_text: &str,
    results_file: &Path,
) -> std::result::Result<QueryRunResult, ToolFailure> {
    if let Some(f) = detect(tool, status, log_text) {
        return Err(f);
    }
    query_result(results_file, log_text).map_err(|e| ToolFailure::unreadable(tool, &e))
}

/// The `ResultFormatVersion` the parsers read structurally.
pub const RESULT_FORMAT_VERSION: &str = "0.2";

/// Where a parsed result came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ResultSource {
    /// The `--results-file` JSON (format 0.2), completed by the log where it adds detail.
    ResultsFile,
    /// The log text, because the results file was missing or in format 0.1.
    Log,
}

/// What reading a results file gave.
pub(crate) enum ResultsFile {
    /// Format 0.2: the parsed object.
    Current(serde_json::Map<String, serde_json::Value>),
    /// Format 0.1, or no file at all: parse the log instead.
    Fallback,
}

/// Reads a results file: missing or format "0.1" → [`ResultsFile::Fallback`]; unreadable,
/// malformed, not an object or another version → a failure naming the path (never a silent
/// zero).
pub(crate) fn read_results_file(path: &Path) -> crate::error::Result<ResultsFile> {
    let bytes = match std::fs::read(path) {
        Ok(b) => b,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(ResultsFile::Fallback),
        Err(e) => return Err(Error::io("read the TSBS results file", path, e)),
    };
    let value: serde_json::Value = serde_json::from_slice(&bytes)
        .map_err(|e| parse_failure(format!("malformed result JSON {}: {e}", path.display())))?;
    let serde_json::Value::Object(map) = value else {
        return Err(parse_failure(format!(
            "result field {} must be an object",
            path.display()
        )));
    };
    match map.get("ResultFormatVersion") {
        Some(serde_json::Value::String(v)) if v == RESULT_FORMAT_VERSION => {
            Ok(ResultsFile::Current(map))
        }
        Some(serde_json::Value::String(v)) if v == "0.1" => Ok(ResultsFile::Fallback),
        Some(v) => Err(parse_failure(format!(
            "unsupported result format version '{}' in {}",
            v.as_str()
                .map(str::to_string)
                .unwrap_or_else(|| v.to_string()),
            path.display()
        ))),
        None => Err(parse_failure(format!(
            "result field ResultFormatVersion is missing in {}",
            path.display()
        ))),
    }
}

/// A result that cannot be read: the step failed, and the message names what is wrong.
pub(crate) fn parse_failure(message: String) -> Error {
    Error::failed(message)
        .with_hint("look at the step's log and results file; rerun the phase to measure again")
}

/// Looks up a dotted field path in a JSON object, naming the path when it is missing.
pub(crate) fn field<'a>(
    root: &'a serde_json::Map<String, serde_json::Value>,
    path: &[&str],
    file: &Path,
) -> crate::error::Result<&'a serde_json::Value> {
    let mut cur = root;
    for (i, key) in path.iter().enumerate() {
        let v = cur.get(*key).ok_or_else(|| {
            parse_failure(format!(
                "result field {} is missing in {}",
                path[..=i].join("."),
                file.display()
            ))
        })?;
        if i + 1 == path.len() {
            return Ok(v);
        }
        cur = v.as_object().ok_or_else(|| {
            parse_failure(format!(
                "result field {} must be an object in {}",
                path[..=i].join("."),
                file.display()
            ))
        })?;
    }
    unreachable!("field() needs a non-empty path")
}

/// A non-negative integer (not a bool, not a float).
pub(crate) fn as_count(
    v: &serde_json::Value,
    name: &str,
    file: &Path,
) -> crate::error::Result<u64> {
    v.as_u64().ok_or_else(|| {
        parse_failure(format!(
            "result field {name} must be a non-negative integer in {}, found {v}",
            file.display()
        ))
    })
}

/// A finite, non-negative number.
pub(crate) fn as_rate(v: &serde_json::Value, name: &str, file: &Path) -> crate::error::Result<f64> {
    match v.as_f64() {
        Some(f) if f.is_finite() && f >= 0.0 && !v.is_boolean() => Ok(f),
        _ => Err(parse_failure(format!(
            "result field {name} must be a finite non-negative number in {}, found {v}",
            file.display()
        ))),
    }
}

/// The key TSBS uses for a human label in results files: every run of non-alphanumerics
/// becomes one `_` (`all queries` → `all_queries`).
pub fn label_key(label: &str) -> String {
    let mut out = String::with_capacity(label.len());
    let mut in_run = false;
    for c in label.chars() {
        if c.is_ascii_alphanumeric() {
            out.push(c);
            in_run = false;
        } else if !in_run {
            out.push('_');
            in_run = true;
        }
    }
    out
}

/// Parses a number as Go's `%f`/`%E` print it (including `+Inf`, `NaN`).
pub(crate) fn go_float(s: &str) -> Option<f64> {
    match s {
        "+Inf" | "Inf" => Some(f64::INFINITY),
        "-Inf" => Some(f64::NEG_INFINITY),
        "NaN" => Some(f64::NAN),
        _ => s.parse().ok(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn label_keys_match_tsbs() {
        assert_eq!(label_key("all queries"), "all_queries");
        assert_eq!(
            label_key("Influx last row per host"),
            "Influx_last_row_per_host"
        );
        assert_eq!(
            label_key("Influx CPU over threshold, 1 host(s)"),
            "Influx_CPU_over_threshold_1_host_s_"
        );
        assert_eq!(
            label_key("Influx 1 cpu metric(s), random    1 hosts, random 1h0m0s by 1m"),
            "Influx_1_cpu_metric_s_random_1_hosts_random_1h0m0s_by_1m"
        );
    }

    #[test]
    fn summary_types_round_trip_through_json() {
        let d = tempfile::tempdir().unwrap();
        let p = d.path().join("r.json");
        let log = "Run complete after 2 queries with 1 workers (Overall query rate 5.00 queries/sec):\n\
                   Influx last row per host:\nmin: 1.00ms, med: 1.00ms, mean: 1.50ms, max: 2.00ms, stddev: 0.50ms, sum: 0.0sec, count: 2\n\
                   all queries             :\nmin: 1.00ms, med: 1.00ms, mean: 1.50ms, max: 2.00ms, stddev: 0.50ms, sum: 0.0sec, count: 2\n";
        let r = query_result(&p, log).unwrap();
        let attempt = QueryAttempt {
            database: "benchmark".into(),
            query_type: "lastpoint".into(),
            attempt: 1,
            result: r,
        };
        let agg = aggregate(std::slice::from_ref(&attempt));
        let text = serde_json::to_string(&(&attempt, &agg)).unwrap();
        let back: (QueryAttempt, Vec<QueryTypeResult>) = serde_json::from_str(&text).unwrap();
        assert_eq!((back.0, back.1), (attempt, agg));
        let v: serde_json::Value = serde_json::from_str(&text).unwrap();
        assert_eq!(
            v[0]["result"]["labels"]["all_queries"]["label"],
            "all queries"
        );
        assert_eq!(v[0]["result"]["labels"]["all_queries"]["mean_ms"], 1.5);
        assert_eq!(v[1][0]["attempts"][0]["median_ms"], 1.0);
        assert_eq!(v[0]["result"]["source"], "log");
        let load = load_result(
            &p,
            "\nSummary:\nloaded 10 metrics in 1.000sec with 1 workers (mean rate 10.00 metrics/sec)\n",
        )
        .unwrap();
        let back: LoadResult =
            serde_json::from_str(&serde_json::to_string(&load).unwrap()).unwrap();
        assert_eq!(back, load);
    }

    #[test]
    fn results_file_versions() {
        let d = tempfile::tempdir().unwrap();
        let p = d.path().join("r.json");
        assert!(matches!(
            read_results_file(&p).unwrap(),
            ResultsFile::Fallback
        ));
        std::fs::write(&p, r#"{"ResultFormatVersion": "0.1"}"#).unwrap();
        assert!(matches!(
            read_results_file(&p).unwrap(),
            ResultsFile::Fallback
        ));
        std::fs::write(&p, r#"{"ResultFormatVersion": "0.2"}"#).unwrap();
        assert!(matches!(
            read_results_file(&p).unwrap(),
            ResultsFile::Current(_)
        ));
        std::fs::write(&p, r#"{"ResultFormatVersion": "0.3"}"#).unwrap();
        let e = read_results_file(&p).err().unwrap();
        assert!(e
            .message
            .starts_with("unsupported result format version '0.3' in "));
        std::fs::write(&p, r#"{"ResultFormatVersion": "0.2", "Tot"#).unwrap();
        let e = read_results_file(&p).err().unwrap();
        assert!(
            e.message.starts_with("malformed result JSON "),
            "{}",
            e.message
        );
        assert_eq!(e.exit_code(), 1);
        std::fs::write(&p, "[1]").unwrap();
        let e = read_results_file(&p).err().unwrap();
        assert!(e.message.contains("must be an object"));
        std::fs::write(&p, "{}").unwrap();
        let e = read_results_file(&p).err().unwrap();
        assert!(e.message.contains("ResultFormatVersion is missing"));
    }
}
