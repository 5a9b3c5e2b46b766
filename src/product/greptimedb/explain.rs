//! What the GreptimeDB runner's explain mode leaves behind (reference benchmark.md §8.1,
//! protocols.md §1.6): `cold.json` for query 0, `hot-NNN.json` for queries 1..N of the file
//! (the "hot" runs: other queries of the type on a warm server, not repetitions), and the
//! runner's own results file `metrics.json`. Plans stay opaque (kept verbatim on disk); this
//! module checks that the files are the ones the run asked for and, unlike the reference,
//! also reads the latencies of `metrics.json`.

use std::path::{Path, PathBuf};
use std::process::ExitStatus;

use serde::{Deserialize, Serialize};

use crate::error::Result;
use crate::tsbs::command::{ExplainSpec, EXPLAIN_PREFIX};
use crate::tsbs::parse_failure;
use crate::tsbs::query::{query_result, QueryRunResult};
use crate::tsbs::{detect, ToolFailure};

/// One checked explain file.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ExplainEntry {
    /// `cold` or `hot`.
    pub phase: String,
    pub query_index: u64,
    pub path: PathBuf,
    /// The original SQL (without the `EXPLAIN ANALYZE VERBOSE ` prefix).
    pub sql: String,
}

/// A checked analysis attempt of one query type.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ExplainResult {
    pub cold: ExplainEntry,
    pub hot: Vec<ExplainEntry>,
    /// The latencies of the 1 + N explain queries (`metrics.json`).
    pub metrics: QueryRunResult,
}

/// One analysis step (one type, one attempt), as [`crate::tsbs::load_outcome`]: the runner's
/// failure, else the checked files.
pub fn outcome(
    tool: &str,
    status: ExitStatus,
    log_text: &str,
    spec: &ExplainSpec,
) -> std::result::Result<ExplainResult, ToolFailure> {
    if let Some(f) = detect(tool, status, log_text) {
        return Err(f);
    }
    explain_result(spec, log_text).map_err(|e| ToolFailure::unreadable(tool, &e))
}

/// Checks an analysis attempt after its runner exited 0: every expected file exists, each
/// explain file is an object with the expected `phase` and `query_index`, `executed_sql` is
/// the prefixed `sql`, and `response` is an object; then reads `metrics.json`.
pub fn explain_result(spec: &ExplainSpec, log_text: &str) -> Result<ExplainResult> {
    let expected: Vec<PathBuf> = std::iter::once(spec.cold_result())
        .chain(spec.hot_results())
        .chain(std::iter::once(spec.metrics_file()))
        .collect();
    let missing: Vec<String> = expected
        .iter()
        .filter(|p| !p.is_file())
        .map(|p| p.display().to_string())
        .collect();
    if !missing.is_empty() {
        return Err(parse_failure(format!(
            "analyze command did not produce expected results: {}",
            missing.join(", ")
        )));
    }
    let cold = check_entry(&spec.cold_result(), "cold", 0)?;
    let hot = spec
        .hot_results()
        .iter()
        .enumerate()
        .map(|(i, p)| check_entry(p, "hot", i as u64 + 1))
        .collect::<Result<Vec<_>>>()?;
    let metrics = query_result(&spec.metrics_file(), log_text)?;
    Ok(ExplainResult { cold, hot, metrics })
}

fn check_entry(path: &Path, phase: &str, index: u64) -> Result<ExplainEntry> {
    let bad = |what: String| parse_failure(format!("explain result {}: {what}", path.display()));
    let text = std::fs::read_to_string(path).map_err(|e| bad(e.to_string()))?;
    let v: serde_json::Value =
        serde_json::from_str(&text).map_err(|e| bad(format!("malformed JSON: {e}")))?;
    let obj = v
        .as_object()
        .ok_or_else(|| bad("must be an object".into()))?;
    for key in ["phase", "query_index", "sql", "executed_sql", "response"] {
        if !obj.contains_key(key) {
            return Err(bad(format!("field {key} is missing")));
        }
    }
    if obj["phase"].as_str() != Some(phase) {
        return Err(bad(format!(
            "phase is {}, expected {phase:?}",
            obj["phase"]
        )));
    }
    if obj["query_index"].as_u64() != Some(index) {
        return Err(bad(format!(
            "query_index is {}, expected {index}",
            obj["query_index"]
        )));
    }
    let (Some(sql), Some(executed)) = (obj["sql"].as_str(), obj["executed_sql"].as_str()) else {
        return Err(bad("sql and executed_sql must be strings".into()));
    };
    if executed != format!("{EXPLAIN_PREFIX}{sql}") {
        return Err(bad(format!(
            "executed_sql is not {EXPLAIN_PREFIX:?} followed by sql"
        )));
    }
    if !obj["response"].is_object() {
        return Err(bad("response must be an object".into()));
    }
    Ok(ExplainEntry {
        phase: phase.into(),
        query_index: index,
        path: path.to_path_buf(),
        sql: sql.into(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    const METRICS_LOG: &str = "Run complete after 3 queries with 1 workers (Overall query rate 10.00 queries/sec):
all queries:
min:     1.00ms, med:     2.00ms, mean:     2.00ms, max:    3.00ms, stddev:     0.82ms, sum:   0.0sec, count: 3
wall clock time: 0.300000sec
";

    fn write(p: &Path, phase: &str, index: u64, sql: &str, executed: &str) {
        let v = serde_json::json!({"phase": phase, "query_index": index, "sql": sql,
            "executed_sql": executed, "response": {"output": [{"records": {"rows": [["plan"]]}}]}});
        std::fs::write(p, serde_json::to_string_pretty(&v).unwrap() + "\n").unwrap();
    }

    fn spec(dir: &Path) -> ExplainSpec {
        ExplainSpec {
            binary: "/b".into(),
            file: "/q".into(),
            database: "benchmark".into(),
            url: "http://127.0.0.1:4000".into(),
            hot_runs: 2,
            results_dir: dir.to_path_buf(),
        }
    }

    #[test]
    fn complete_attempt() {
        let d = tempfile::tempdir().unwrap();
        let s = spec(d.path());
        write(
            &s.cold_result(),
            "cold",
            0,
            "SELECT 1",
            "EXPLAIN ANALYZE VERBOSE SELECT 1",
        );
        for (i, p) in s.hot_results().iter().enumerate() {
            write(
                p,
                "hot",
                i as u64 + 1,
                "SELECT 1",
                "EXPLAIN ANALYZE VERBOSE SELECT 1",
            );
        }
        std::fs::write(s.metrics_file(), r#"{"ResultFormatVersion":"0.1"}"#).unwrap();
        let r = explain_result(&s, METRICS_LOG).unwrap();
        assert_eq!(r.hot.len(), 2);
        assert_eq!(r.hot[1].query_index, 2);
        assert_eq!(r.metrics.all.count, 3);
        assert_eq!(r.metrics.all.median_ms, Some(2.0));

        // a wrong index, a wrong prefix, a missing file: failures naming the file
        write(
            &s.hot_results()[1],
            "hot",
            1,
            "SELECT 1",
            "EXPLAIN ANALYZE VERBOSE SELECT 1",
        );
        let e = explain_result(&s, METRICS_LOG).unwrap_err();
        assert!(
            e.message
                .contains("hot-002.json: query_index is 1, expected 2"),
            "{}",
            e.message
        );
        write(
            &s.hot_results()[1],
            "hot",
            2,
            "SELECT 1",
            "EXPLAIN SELECT 1",
        );
        let e = explain_result(&s, METRICS_LOG).unwrap_err();
        assert!(e.message.contains("executed_sql is not"), "{}", e.message);
        std::fs::remove_file(s.cold_result()).unwrap();
        let e = explain_result(&s, METRICS_LOG).unwrap_err();
        assert!(e
            .message
            .starts_with("analyze command did not produce expected results: "));
        assert!(e.message.contains("cold.json"));
    }
}
