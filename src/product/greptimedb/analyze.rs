//! The analyze phase (GreptimeDB): EXPLAIN ANALYZE VERBOSE per query type, each type on a
//! fresh (cold) server, then its hot runs. Registered as the product's
//! [`crate::product::ext::BenchExt::analyze`]; runs in a [`PhaseCtx`].

use serde_json::json;

use super::explain;
use crate::error::{Error, Result};
use crate::product::ext::Values;
use crate::product::op::StepEnd;
use crate::product::phase::{PhaseCtx, QueryPhase};
use crate::queryset::QuerySet;
use crate::tsbs;

pub static ANALYZE: QueryPhase = QueryPhase {
    about: "EXPLAIN ANALYZE VERBOSE per query type, cold then hot",
    run: analyze,
    check_counts: super::flags::check_analyze_counts,
};

fn analyze(ctx: &mut dyn PhaseCtx, set: &QuerySet, values: &Values) -> Result<()> {
    let hot = super::flags::hot_runs(values);
    let binary = ctx.verified_tool(super::RUN_QUERIES_GREPTIME)?;
    // The rows first, on a server of its own: every type below still starts cold.
    ctx.start_server()?;
    ctx.check_loaded_rows()?;
    let run_dir = ctx.run_dir();
    for (qt, file) in &set.files {
        crate::interrupt::check()?;
        let step = format!("analyze:{qt}");
        let attempt = ctx.next_attempt(&step)?;
        let dir_rel = format!("results/analyze/{qt}/run-{attempt:03}");
        let results_dir = run_dir.join(&dir_rel);
        let log_rel = format!("logs/analyze/{qt}/run-{attempt:03}/runner.log");
        let log = run_dir.join(&log_rel);
        // Cold: a fresh server per type.
        ctx.stop_server()?;
        ctx.start_server()?;
        let spec = tsbs::ExplainSpec {
            binary: binary.clone(),
            file: file.path.clone(),
            database: ctx.database(),
            url: ctx.endpoint(),
            hot_runs: hot,
            results_dir: results_dir.clone(),
        };
        let cmd = tsbs::explain_command(&spec)?;
        if let Some(parent) = results_dir.parent() {
            std::fs::create_dir_all(parent).map_err(|e| Error::io("create", parent, e))?;
        }
        // Attempt directories are immutable: a new one per attempt, never overwritten.
        std::fs::create_dir(&results_dir).map_err(|e| Error::io("create", &results_dir, e))?;
        ctx.begin(&step, attempt, Some(&log_rel), Some(&dir_rel), Some(json!({
                "query_type": qt,
                "hot_runs": hot,
                "file": file.path,
                "file_sha256": file.sha256,
                "cold_result": format!("{dir_rel}/cold.json"),
                "hot_results": (1..=hot).map(|i| format!("{dir_rel}/hot-{i:03}.json")).collect::<Vec<_>>(),
                "metrics": format!("{dir_rel}/metrics.json"),
                "server_log": ctx.server_log_rel(),
                "command": cmd.redacted(),
            })))?;
        let status = ctx.run_tool(&step, attempt, &cmd, &log, &format!("analysis of {qt}"))?;
        let text = crate::fsutil::read_log(&log);
        match explain::outcome(&cmd.tool(), status, &text, &spec) {
            Ok(r) => ctx.end(
                &step,
                attempt,
                StepEnd::Completed,
                None,
                Some(json!({
                    "metrics_mean_ms": r.metrics.all.mean_ms,
                    // The hot runs are the file's next queries; say whether they repeat it.
                    "hot_same_sql_as_cold": r.hot.iter().all(|h| h.sql == r.cold.sql),
                })),
            )?,
            Err(f) => ctx.end(
                &step,
                attempt,
                StepEnd::Failed,
                Some(f.reason.clone()),
                Some(json!({"failure": f})),
            )?,
        }
    }
    Ok(())
}
