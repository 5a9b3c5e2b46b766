//! `--check-answers` (issue 24 §5): after the timed passes, every query of every type runs
//! once more with the runner's `--print-responses`, one worker (the PostgreSQL runner prints
//! no query id, so file order is the id) and its own results file, as step `answers:<type>`.
//! It is a separate pass because printing costs: the PostgreSQL runner prints inside its
//! timer (`cmd/tsbs_run_queries_timescaledb/main.go` `ProcessQuery`: marshalling and printing
//! every row before `took`), and the Influx runners print after their timer but in the worker,
//! so the next query waits. The pass's latencies are recorded but never counted in the query
//! statistics (only `query:<type>` steps are).

use std::path::Path;

use serde_json::json;

use crate::answers::{self, PrintFormat};
use crate::error::Result;
use crate::product::ToolOptions;
use crate::queryset::QuerySet;
use crate::run::Status;
use crate::tsbs;

use super::super::exec::{Input, ToolEnd};
use super::super::inputfile::WatchedFile;
use super::super::{watch, Bench};

impl Bench<'_> {
    pub(in crate::bench) fn check_answers(&mut self, binary: &Path, set: &QuerySet) -> Result<()> {
        let runner = self.target.product.tsbs_runner();
        let Some(format) = PrintFormat::of_runner(runner) else {
            self.reporter().warn(&format!(
                "--check-answers: {runner} prints no responses tsbsctl can read; answers not checked"
            ));
            return Ok(());
        };
        let (auth, _) = self.target.tokens();
        for (qt, file) in set.files.iter() {
            crate::interrupt::check()?;
            if self.server_gone().is_some() {
                break;
            }
            let step = format!("answers:{qt}");
            let attempt = self.run.next_attempt(&step)?;
            let (log, log_rel) = self.run.log(&format!("answers-{qt}-{attempt:03}.log"));
            let (results, results_rel) =
                self.run.result(&format!("answers-{qt}-{attempt:03}.json"));
            let queries = set.counts().get(qt).copied();
            let urls = self.target.urls_with(&self.endpoint());
            let mut target = self.target.product.query_target(&ToolOptions {
                auth_token: auth.clone(),
                ..ToolOptions::default()
            });
            target.connection = self.target.product.query_connection(&urls, queries, 1)?;
            target
                .args
                .push(tsbs::ToolArg::Flag("print-responses", "true".into()));
            let spec = tsbs::QuerySpec {
                binary: binary.to_path_buf(),
                target,
                file: file.path.clone(),
                database: self.target.database().to_string(),
                urls,
                workers: 1,
                results_file: results,
            };
            let mut cmd = tsbs::query_command(&spec)?;
            cmd.set_print_interval(queries.map_or(1, |n| n.div_ceil(100).max(1)));
            self.run.begin(
                &step,
                attempt,
                Some(&log_rel),
                Some(&results_rel),
                Some(json!({
                    "query_type": qt,
                    "queries": queries,
                    "workers": 1,
                    "command": cmd.redacted(),
                    "purpose": "verification pass (not timed): the answers printed with --print-responses",
                })),
            )?;
            let label = format!("checking the answers of {qt}");
            self.reporter().info(&label);
            let watched = WatchedFile::open(&file.path)?;
            let ran = self.run_watched(
                &cmd,
                &log,
                Input::File(watched),
                &step,
                attempt,
                watch::Counting::Queries,
                &label,
                queries,
            )?;
            let ok = matches!(&ran.end, ToolEnd::Exited(s) if s.success());
            let text = crate::fsutil::read_log(&log);
            let raw = answers::parse(format, &text);
            let records: Vec<answers::AnswerRecord> =
                raw.iter().map(|a| answers::normalise(qt, a)).collect();
            answers::append(&self.run.dir, &records)?;
            let summary = answers::summarise_type(qt, &records, queries);
            let (status, reason) = if ok {
                (Status::Completed, None)
            } else {
                (
                    Status::Failed,
                    Some(format!(
                        "the answer check of {qt} ended early: {} of {} answers read",
                        records.len(),
                        queries.map_or("?".into(), |n| n.to_string())
                    )),
                )
            };
            self.run.end(
                &step,
                attempt,
                status,
                reason,
                Some(json!({"answers": summary})),
            )?;
        }
        Ok(())
    }
}
