//! `--check-answers` (issue 24 §5): after the timed passes, every query of every type runs
//! once more with the runner's `--print-responses`, one worker (the PostgreSQL runner prints
//! no query id, so file order is the id) and its own results file, as step `answers:<type>`.
//! It is a separate pass because printing costs: the PostgreSQL runner prints inside its
//! timer (`cmd/tsbs_run_queries_timescaledb/main.go` `ProcessQuery`: marshalling and printing
//! every row before `took`), and the Influx runners print after their timer but in the worker,
//! so the next query waits. The pass's latencies are recorded but never counted in the query
//! statistics (only `query:<type>` steps are).

use std::path::Path;

use crate::answers;
use crate::error::Result;
use crate::output::Warning;
use crate::queryset::QuerySet;
use crate::run::data::{self, AnswersData};
use crate::run::Status;
use crate::tsbs;

use super::super::exec::ToolEnd;
use super::super::inputfile::WatchedFile;
use super::super::Bench;
use super::query::QueryFileRun;

impl Bench<'_> {
    pub(in crate::bench) fn check_answers(&mut self, binary: &Path, set: &QuerySet) -> Result<()> {
        let runner = self.target.product.tsbs_runner();
        let Some(format) = self.target.product.query_format().answers else {
            self.reporter().warning(&Warning::AnswersNotChecked {
                runner: runner.to_string(),
            });
            return Ok(());
        };
        for (qt, file) in set.files.iter() {
            crate::interrupt::check()?;
            if self.server_gone().is_some() {
                break;
            }
            let queries = set.counts().get(qt).copied();
            let watched = WatchedFile::open(&file.path)?;
            let q = self.run_query_file(
                QueryFileRun {
                    kind: "answers",
                    stem: format!("answers-{qt}"),
                    qt,
                    binary,
                    file: &file.path,
                    watched,
                    queries,
                    workers: 1,
                    per_query_latencies: false,
                    extra: vec![tsbs::ToolArg::Flag("print-responses", "true".into())],
                    label: format!("checking the answers of {qt}"),
                },
                |cmd| {
                    data::value(&AnswersData {
                        query_type: Some(qt.clone()),
                        queries: Some(queries),
                        workers: Some(1),
                        command: Some(cmd.redacted()),
                        purpose: Some(
                            "verification pass (not timed): the answers printed with --print-responses"
                                .into(),
                        ),
                        answers: None,
                    })
                },
            )?;
            let (step, attempt, log, ran) = (q.step, q.attempt, q.log, q.ran);
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
                Some(data::value(&AnswersData {
                    answers: Some(data::value(&summary)),
                    ..AnswersData::default()
                })),
            )?;
        }
        Ok(())
    }
}
