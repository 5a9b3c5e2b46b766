//! `summary.json` (the source of truth of a run's results) and `summary.md` (rendered from it
//! by `templates/summary.md.j2`). Both are rebuilt from what is on disk: the run manifest, the
//! step events, and the TSBS results files and logs (re-parsed, so `runs summarize` after a
//! crash gives the same numbers as the command that ran).

use std::collections::BTreeMap;
use std::path::Path;

use serde_json::{json, Value};

use crate::error::{Error, Result};
use crate::run::{RunDir, RunKind, Status, Step};
use crate::tsbs::{self, QueryAttempt};

/// Bumped when the shape of `summary.json` changes incompatibly.
pub const SCHEMA_VERSION: u32 = 1;

const TEMPLATE: &str = include_str!("../templates/summary.md.j2");

/// Builds the summary of a run from disk.
pub fn build(run: &RunDir) -> Result<Value> {
    let m = &run.manifest;
    let steps = run.steps()?;
    let dir = &run.dir;
    let mut failures: Vec<Value> = Vec::new();
    let fail = |failures: &mut Vec<Value>, stage: &str, s: &Step, reason: Option<String>| {
        failures.push(json!({
            "stage": stage,
            "step": s.step,
            "attempt": s.attempt,
            "status": s.status,
            "log": s.log,
            "reason": reason.or_else(|| s.reason.clone()).unwrap_or_else(|| s.status.as_str().to_string()),
        }));
    };

    // Ingestion: the last load attempt (completed, reused or failed).
    let mut ingestion = Value::Null;
    for s in steps.iter().filter(|s| s.step == "load") {
        let mut v = json!({
            "attempt": s.attempt,
            "status": s.status,
            "database": s.data["database"],
            "database_mode": s.data["database_mode"],
            "dataset_id": s.data["dataset_id"],
            "workers": s.data["workers"],
            "batch_size": s.data["batch_size"],
            "log": s.log,
            "results_file": s.results,
            "started_at": s.started_at,
            "finished_at": s.finished_at,
        });
        match s.status {
            Status::Completed => {
                let log_text = read(dir, s.log.as_deref());
                let results = dir.join(s.results.as_deref().unwrap_or("-"));
                match tsbs::load_result(&results, &log_text) {
                    Ok(r) => {
                        v["rows"] = json!(r.rows);
                        v["metrics"] = json!(r.metrics);
                        v["rows_per_second"] = json!(r.rows_per_second);
                        v["metrics_per_second"] = json!(r.metrics_per_second);
                        v["duration_seconds"] = json!(r.duration_seconds);
                        v["duration_source"] = json!("the loader's DurationMillis (whole ms)");
                        // The loader's rate is rows / its own elapsed time at full precision,
                        // while DurationMillis is truncated to whole ms: derive the duration
                        // from the rate so that Rows/s and Duration agree (#26).
                        if let (Some(rows), Some(rate)) =
                            (r.rows, r.rows_per_second.filter(|x| *x > 0.0))
                        {
                            v["reported_duration_seconds"] = json!(r.duration_seconds);
                            v["duration_seconds"] = json!(rows as f64 / rate);
                            v["duration_source"] =
                                json!("rows / the loader's rows per second (its own full-precision elapsed time)");
                        }
                        v["backoff_seconds"] = json!(r.backoff_seconds());
                        v["source"] = json!(r.source);
                        if let Some(w) = r.workers {
                            v["workers"] = json!(w);
                        }
                        if let Some(b) = r.batch_size {
                            v["batch_size"] = json!(b);
                        }
                    }
                    Err(e) => {
                        v["status"] = json!(Status::Failed);
                        fail(&mut failures, "load", s, Some(e.message));
                    }
                }
            }
            Status::Reused => {
                v["database_mode"] = json!("reuse");
                v["dataset_id"] = s.data["dataset_id"].clone();
            }
            _ => fail(&mut failures, "load", s, None),
        }
        ingestion = v;
    }

    let last = |name: &str| steps.iter().rev().find(|s| s.step == name);
    let row_count = last("row-count").map(|s| {
        if s.status != Status::Completed {
            fail(&mut failures, "verify", s, None);
        }
        let mut v = s.data.clone();
        v["status"] = json!(s.status);
        v
    });
    let storage = last("footprint").map(|s| s.data.clone());
    // GreptimeDB: where the data was when the queries started (SSTs or memtables).
    let data_location = last("data-location").map(|s| s.data.clone());

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
        for s in list {
            if s.status == Status::Completed {
                let log_text = read(dir, s.log.as_deref());
                let results = dir.join(s.results.as_deref().unwrap_or("-"));
                match tsbs::query_result(&results, &log_text) {
                    Ok(r) => {
                        attempts.push(QueryAttempt {
                            database: m.target["database"].as_str().unwrap_or("").to_string(),
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
        let mut v = json!({
            "query_type": qt,
            "status": if last_ok.is_some() { "completed" } else { list.last().map(|s| s.status.as_str()).unwrap_or("failed") },
            "queries": list.last().map(|s| s.data["queries"].clone()),
        });
        if let (Some((s, r)), Some(a)) = (&last_ok, agg.first()) {
            let q = r.all.quantiles.as_ref();
            v["repetitions"] = json!(a.repetitions);
            v["query_count"] = json!(a.query_count);
            v["mean_ms"] = json!(a.weighted_mean_ms);
            v["min_ms"] = json!(a.min_ms);
            v["max_ms"] = json!(a.max_ms);
            v["median_ms"] = json!(r.all.median_ms.or(q.map(|q| q.q50)));
            v["stddev_ms"] = json!(r.all.stddev_ms);
            v["p95_ms"] = json!(q.map(|q| q.q95));
            v["p99_ms"] = json!(q.map(|q| q.q99));
            v["p999_ms"] = json!(q.map(|q| q.q999));
            v["queries_per_second"] =
                json!(r.overall_queries_per_second.or(r.all.queries_per_second));
            v["source"] = json!(r.source);
            v["log"] = json!(s.log);
            v["results_file"] = json!(s.results);
            v["attempts"] = json!(a.attempts);
        } else if let Some(s) = last_failed {
            v["log"] = json!(s.log);
            v["reason"] = json!(s.reason);
        }
        queries.push(v);
    }

    // Analyses (GreptimeDB).
    let mut analyses = Vec::new();
    for s in steps.iter().filter(|s| s.step.starts_with("analyze:")) {
        let mut v = s.data.clone();
        v["attempt"] = json!(s.attempt);
        v["status"] = json!(s.status);
        v["log"] = json!(s.log);
        v["result_dir"] = json!(s.results);
        // What "hot" measured (real finding W2): the next queries of the file, not repetitions.
        v["hot_queries"] = json!(
            "queries 2..N+1 of the query file, run after the first on the warmed server: the same type with other random hosts and time windows, unless hot_same_sql_as_cold"
        );
        if v.get("hot_same_sql_as_cold").is_none() {
            v["hot_same_sql_as_cold"] = Value::Null;
        }
        if s.status != Status::Completed {
            fail(&mut failures, "analyze", s, None);
        }
        analyses.push(v);
    }

    // Compaction (its own run kind).
    let compaction = (m.run_kind == RunKind::Compaction).then(|| {
        let get = |n: &str| last(n).map(|s| s.data.clone()).unwrap_or(Value::Null);
        json!({
            "table": m.workload["table"],
            "strategy": m.workload["strategy"],
            "window_seconds": m.workload["window_seconds"],
            "flush": get("flush"),
            "compact": get("compact"),
            "confirmation": get("confirm"),
            "before": get("state-before"),
            "after_flush": get("state-after-flush"),
            "after": get("state-after"),
            "parallelism": m.workload["parallelism"],
        })
    });

    // Server attempts and diagnostics from their logs.
    let mut warnings: Vec<Value> = Vec::new();
    let mut server_attempts = Vec::new();
    let mut diag = crate::logscan::Diagnostics::default();
    let redactor = crate::redact::Redactor::new();
    // The product reads its own log lines (an unknown product: the generic classifier).
    let product = crate::product::resolve(&m.product, m.edition.as_deref()).ok();
    let severity = |line: &str| match &product {
        Some(p) => p.log_severity(line),
        None => crate::logscan::classify(line),
    };
    for s in steps.iter().filter(|s| s.step == "server") {
        server_attempts.push(json!({
            "attempt": s.attempt,
            "status": s.status,
            "log": s.log,
            "started_at": s.started_at,
            "finished_at": s.finished_at,
            "reason": s.reason,
            "events": s.data["events"],
            "outcome": s.data["outcome"],
            "stop_seconds": s.data["stop_seconds"],
        }));
        if s.status == Status::Failed || s.status == Status::Interrupted {
            fail(&mut failures, "server", s, None);
        }
        if let Some(w) = s.data["warning"].as_str() {
            warnings
                .push(json!({"stage": "server", "attempt": s.attempt, "log": s.log, "message": w}));
        }
        if let Some(l) = &s.log {
            diag.scan_text_with(l, &read(dir, Some(l)), &redactor, &severity);
        }
    }
    // A panic in a server log makes the run's numbers suspect: it is a failure, naming the log.
    if let Some(first) = &diag.first_fatal {
        failures.push(json!({
            "stage": "server", "step": "server", "attempt": null, "status": "failed",
            "log": first.log,
            "reason": format!("the server log reports a panic: {}", first.message),
        }));
    }
    // Other steps that failed (environment, dataset, table checks, compaction ...).
    for s in &steps {
        let known = s.step == "load"
            || s.step == "row-count"
            || s.step == "server"
            || s.step.starts_with("query:")
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
            failures.push(json!({
                "stage": "run", "step": null, "attempt": null, "status": m.status,
                "log": null, "reason": e["message"],
            }));
        }
    }

    let edition = m.edition.clone();
    let product_label = crate::product::label(&m.product, edition.as_deref());
    let version = m.target["version"].as_str().map(str::to_string);
    let data_state_label = m
        .data_state
        .as_ref()
        .and_then(|d| d["label"].as_str())
        .map(str::to_string);
    let mut label = match &version {
        Some(v) => format!("{product_label} {v}"),
        None => product_label.clone(),
    };
    if let (Some(l), RunKind::Benchmark) = (data_state_label.as_deref(), m.run_kind) {
        if l != "as loaded" && l != "not loaded" {
            label.push_str(&format!(" ({l})"));
        }
    }
    let durability = crate::product::resolve(&m.product, None)
        .is_ok_and(|p| p.records_durability())
        .then(|| {
            let no_sync = m.workload["no_sync"].as_bool().unwrap_or(false);
            let accept_partial = m.workload["accept_partial"].as_bool().unwrap_or(false);
            json!({
                "no_sync": no_sync,
                "accept_partial": accept_partial,
                "durable_write_acknowledgement": !no_sync,
                "whole_batch_rejection": !accept_partial,
            })
        });
    let env = m.environment.clone().unwrap_or(Value::Null);
    let dataset = m.dataset.clone().map(|d| {
        json!({
            "dataset_id": d["dataset_id"],
            "spec": d["spec"],
            "format": d["format"],
            "compression": d["compression"],
            "rows": d["rows"],
            "metrics": d["metrics"],
            "bytes": d["bytes"],
            "sha256": d["sha256"],
            "uncompressed_sha256": d["uncompressed_sha256"],
            "data_path": d["data_path"],
        })
    });
    let query_set = m.query_set.clone().map(|q| {
        json!({
            "query_set_id": q["query_set_id"],
            "manifest_sha256": q["manifest_sha256"],
            "format": q["format"],
            "query_counts": q["query_counts"],
            "path": q["query_set_path"],
        })
    });
    Ok(json!({
        "schema_version": SCHEMA_VERSION,
        "kind": "run-summary",
        "run_id": m.run_id,
        "run_kind": m.run_kind,
        "run_dir": run.dir,
        "product": m.product,
        "product_label": product_label,
        "edition": edition,
        "label": label,
        "phase": m.phase,
        "status": m.status,
        "created_at": m.created_at,
        "finished_at": m.finished_at,
        "command": m.command,
        "tool": m.tool,
        "host": m.host,
        "target": m.target,
        "server": m.server.as_ref().map(|s| json!({
            "version": s["runtime"]["version"],
            "binary_sha256": s["runtime"]["binary_sha256"],
            "workspace_version": s["workspace_version"],
            "workspace_binary_sha256": s["workspace_binary_sha256"],
            "version_override": s["version_override"],
            "config_sha256": s["config_sha256"],
        })),
        "durability": durability,
        // InfluxDB 3: licence, WAL/snapshot settings, storage engine, telemetry.
        "server_settings": m.target.get("server_settings").cloned().unwrap_or(Value::Null),
        "environment": {
            "go_version": env["go_version"],
            "tsbs_repo": env["tsbs_repo"],
            "tsbs_commit": env["tsbs_commit"],
            "tsbs_dirty": env["tsbs_dirty"],
        },
        "dataset": dataset,
        "query_set": query_set,
        "workload": m.workload,
        "data_state": m.data_state.as_ref().map(|d| json!({
            "label": d["label"],
            "loads": d["loads"].as_array().map(|a| a.len()).unwrap_or(0),
            "maintenance": d["maintenance"],
        })),
        "ingestion": ingestion,
        "row_count": row_count,
        "storage": storage,
        "data_location": data_location,
        "queries": queries,
        "analyses": analyses,
        "compaction": compaction,
        "server_diagnostics": {
            "attempts": server_attempts,
            "warning_count": diag.warnings,
            "error_count": diag.errors,
            "panic_count": diag.panics,
            "fatal_count": diag.fatals,
            "samples": diag.samples,
        },
        "failures": failures,
        "warnings": warnings,
        "not_started": not_started(m, &steps),
        "error": m.error,
    }))
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
    m.workload["query_counts"]
        .as_object()
        .map(|c| {
            c.keys()
                .filter(|t| !steps.iter().any(|s| s.step == format!("{prefix}{t}")))
                .cloned()
                .collect()
        })
        .unwrap_or_default()
}

/// Builds the summary and writes `summary.json` and `summary.md` atomically.
pub fn write(run: &RunDir) -> Result<Value> {
    let s = build(run)?;
    let mut text = serde_json::to_string_pretty(&s)?;
    text.push('\n');
    crate::fsutil::write_atomic(&run.dir.join("summary.json"), text.as_bytes())?;
    let md = render_md(&s)?;
    crate::fsutil::write_atomic(&run.dir.join("summary.md"), md.as_bytes())?;
    Ok(s)
}

/// Renders `summary.md` from a summary value.
pub fn render_md(summary: &Value) -> Result<String> {
    let env = crate::render::template_env("summary.md", TEMPLATE)?;
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

#[cfg(test)]
mod tests {
    use super::*;

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
}
