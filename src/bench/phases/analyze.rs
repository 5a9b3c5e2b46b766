//! The analyze phase (GreptimeDB): EXPLAIN ANALYZE VERBOSE per query type, each type on a
//! fresh (cold) server, then its hot runs.

use serde_json::json;

use crate::environment::TsbsEnv;
use crate::error::{Error, Result};
use crate::queryset::QuerySet;
use crate::run::Status;
use crate::tsbs;

use super::super::{exec, integrity, Bench};

impl Bench<'_> {
    pub(in crate::bench) fn analyze(&mut self, env: &TsbsEnv, set: &QuerySet) -> Result<()> {
        let hot = self.req.hot_runs.unwrap_or(2);
        let binary =
            integrity::verified_binary(env, tsbs::command::RUN_QUERIES_GREPTIME, &mut self.run)?;
        // The rows first, on a server of its own: every type below still starts cold.
        self.start_server()?;
        self.check_loaded_rows()?;
        for (qt, file) in &set.files {
            crate::interrupt::check()?;
            let step = format!("analyze:{qt}");
            let attempt = self.run.next_attempt(&step)?;
            let dir_rel = format!("results/analyze/{qt}/run-{attempt:03}");
            let results_dir = self.run.dir.join(&dir_rel);
            let log_rel = format!("logs/analyze/{qt}/run-{attempt:03}/runner.log");
            let log = self.run.dir.join(&log_rel);
            // Cold: a fresh server per type.
            self.stop_server()?;
            self.start_server()?;
            let spec = tsbs::ExplainSpec {
                binary: binary.clone(),
                file: file.path.clone(),
                database: self.target.database().to_string(),
                url: self.endpoint(),
                hot_runs: hot,
                results_dir: results_dir.clone(),
            };
            let cmd = tsbs::explain_command(&spec)?;
            if let Some(parent) = results_dir.parent() {
                std::fs::create_dir_all(parent).map_err(|e| Error::io("create", parent, e))?;
            }
            // Attempt directories are immutable: a new one per attempt, never overwritten.
            std::fs::create_dir(&results_dir).map_err(|e| Error::io("create", &results_dir, e))?;
            self.run.begin(
                &step,
                attempt,
                Some(&log_rel),
                Some(&dir_rel),
                Some(json!({
                    "query_type": qt,
                    "hot_runs": hot,
                    "file": file.path,
                    "file_sha256": file.sha256,
                    "cold_result": format!("{dir_rel}/cold.json"),
                    "hot_results": (1..=hot).map(|i| format!("{dir_rel}/hot-{i:03}.json")).collect::<Vec<_>>(),
                    "metrics": format!("{dir_rel}/metrics.json"),
                    "server_log": format!("logs/server-{:03}.log", self.server_attempt),
                    "command": cmd.redacted(),
                })),
            )?;
            let cwd = self.cwd.clone();
            let (end, _) = exec::run_tool(&cmd, &cwd, &log, exec::Input::None, &mut || {
                self.server_gone()
            })?;
            let status = self.tool_exit(&step, attempt, end, &format!("analysis of {qt}"), &log)?;
            let text = crate::fsutil::read_log(&log);
            match tsbs::explain_outcome(&cmd.tool(), status, &text, &spec) {
                Ok(r) => self.run.end(
                    &step,
                    attempt,
                    Status::Completed,
                    None,
                    Some(json!({
                        "metrics_mean_ms": r.metrics.all.mean_ms,
                        // The hot runs are the file's next queries; say whether they repeat it.
                        "hot_same_sql_as_cold": r.hot.iter().all(|h| h.sql == r.cold.sql),
                    })),
                )?,
                Err(f) => self.run.end(
                    &step,
                    attempt,
                    Status::Failed,
                    Some(f.reason.clone()),
                    Some(json!({"failure": f})),
                )?,
            }
        }
        Ok(())
    }
}
