//! How a bench command ends: the server stopped, the run's status decided from what the
//! summary counts as a failure, `summary.json` / `summary.md` written, and the error (if any)
//! shaped into the command's, with the run's id and where its logs are.

use serde_json::json;

use crate::error::{Error, ErrorKind, Result};
use crate::output::{BenchOutcome, FailureGroup, FailureGroups, Outcome, Warning, Words};
use crate::run::{RunDir, Status};

use super::Bench;

/// What a finished command reports: the data, and the outcome the CLI words
/// ([`BenchOutcome`]).
fn outcome(run: &RunDir, summary: &crate::summary::RunSummary) -> Outcome {
    let md = run.dir.join("summary.md");
    let ended = BenchOutcome {
        run_id: run.id().to_string(),
        status: run.manifest.status.words().to_string(),
        run_dir: run.dir.clone(),
        summary_md: md.clone(),
        // The cells that are results of the server's death, named as the report names them.
        failed_types: summary
            .queries
            .iter()
            .filter(|q| q.status != "completed")
            .map(|q| {
                let reason = q.reason.clone().flatten().unwrap_or_default();
                (
                    q.query_type.clone(),
                    crate::failurekind::failure_kind(&reason).to_string(),
                )
            })
            .collect(),
    };
    Outcome::typed(
        json!({
            "run_id": run.id(),
            "run_dir": run.dir,
            "status": run.manifest.status,
            "summary_json": run.dir.join("summary.json"),
            "summary_md": md,
            "summary": summary,
        }),
        Words::Bench(ended),
    )
}

impl Bench<'_> {
    /// Stops the server, records the end state, writes the summary, and turns failures into
    /// the command's error.
    pub(super) fn conclude(mut self, result: Result<()>) -> Result<Outcome> {
        let _ = self.stop_server();
        // Everything the summary counts as a failure (failed steps, unreadable results, panics
        // in the server log) fails the run, except a managed server's death under a query
        // type (OOM or a crash): that is the type's result, and the run, which went on with
        // the other types, ends "completed with failures" (issue 24 §2).
        let failures: Vec<crate::summary::Failure> = crate::summary::build(&self.run)
            .map(|sum| sum.failures)
            .unwrap_or_default();
        let died = died_under_queries(&self.run);
        let failed_steps: Vec<(String, String)> = failures
            .iter()
            .map(|f| {
                (
                    f.step.clone().unwrap_or_else(|| "run".into()),
                    f.reason.clone(),
                )
            })
            .collect();
        let (status, err) = match result {
            Err(e) if e.kind == ErrorKind::Interrupted => (Status::Interrupted, Some(e)),
            Err(e) => (Status::Failed, Some(e)),
            Ok(()) if !failures.is_empty() && results_only(&failures, &died) => {
                self.reporter().warning(&Warning::DiedUnderQueries {
                    failures: failures.len(),
                    groups: group_failures(&failed_steps),
                });
                (Status::CompletedWithFailures, None)
            }
            Ok(()) if !failures.is_empty() => (
                Status::Failed,
                Some(Error::failed(format!(
                    "{} failure(s): {}",
                    failed_steps.len(),
                    group_failures(&failed_steps)
                ))),
            ),
            Ok(()) => (Status::Completed, None),
        };
        self.run.finish(status, err.as_ref())?;
        let summary = crate::summary::write(&self.run)?;
        let md = self.run.dir.join("summary.md");
        match err {
            None => Ok(outcome(&self.run, &summary)),
            Some(e) => {
                let hint = match &e.hint {
                    Some(h) => format!("{h}; summary: {}", md.display()),
                    None => format!("logs and summary: {}", md.display()),
                };
                Err(Error::new(
                    e.kind,
                    format!("run {} {}: {}", self.run.id(), status.words(), e.message),
                )
                .with_hint(hint))
            }
        }
    }
}

/// The `(step, attempt)` of every query step whose failure is a result of memory or a crash:
/// the managed server died under it (its end records `server_died`), or the server's query
/// engine ran out of its memory pool during it (`query_engine_ooms`), managed or
/// external: the published tables' "OOM" cells.
fn died_under_queries(run: &RunDir) -> Vec<(String, u32)> {
    run.steps()
        .unwrap_or_default()
        .into_iter()
        .filter(|s| {
            let end = s.data_as::<crate::run::data::QueryEnded>();
            let refused = end
                .query_engine_ooms
                .as_ref()
                .and_then(|o| o["refused"].as_u64())
                .is_some_and(|n| n > 0);
            s.step.starts_with("query") && (end.server_died.is_some() || refused)
        })
        .map(|s| (s.step, s.attempt))
        .collect()
}

/// Whether every failure is a result of the server dying under a query type: those query
/// steps, and the server's own record of the death (its failed attempt, the crash in its
/// log). Anything else (a failed load, a type that failed on a live server) fails the run.
fn results_only(failures: &[crate::summary::Failure], died: &[(String, u32)]) -> bool {
    !died.is_empty()
        && failures.iter().all(|f| match (&f.step, f.attempt) {
            (Some(step), Some(a)) if step.starts_with("query") => {
                died.iter().any(|(s, n)| s == step && *n == a)
            }
            _ => f.stage == "server",
        })
}

/// A failure reason without what differs between two failures of one cause (the server's
/// per-request execution time; how many times, by its counter, the server's query engine ran
/// out of memory during a type).
pub(super) fn same_cause(reason: &str) -> String {
    static TIME: std::sync::OnceLock<regex::Regex> = std::sync::OnceLock::new();
    static OOMS: std::sync::OnceLock<regex::Regex> = std::sync::OnceLock::new();
    let r = TIME
        .get_or_init(|| regex::Regex::new(r#""?execution_time_ms"?\s*:\s*\d+"#).expect("regex"))
        .replace_all(reason, "execution_time_ms");
    OOMS.get_or_init(|| {
        regex::Regex::new(r"memory pool \d+ time\(s\) during this type \([^)]*\)").expect("regex")
    })
    .replace_all(&r, "memory pool during this type")
    .into_owned()
}

/// Failures grouped by cause, each with the steps it hit (#22); worded by the CLI as
/// `cause (steps: a, b)`.
fn group_failures(failures: &[(String, String)]) -> FailureGroups {
    let mut groups: Vec<(String, FailureGroup)> = Vec::new();
    for (step, reason) in failures {
        let cause = same_cause(reason);
        match groups.iter_mut().find(|(c, _)| *c == cause) {
            Some((_, g)) => g.steps.push(step.clone()),
            None => groups.push((
                cause,
                FailureGroup {
                    reason: reason.clone(),
                    steps: vec![step.clone()],
                },
            )),
        }
    }
    FailureGroups(groups.into_iter().map(|(_, g)| g).collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Eight types a real 3.10.1 refused for memory, each with its own count, are one cause.
    #[test]
    fn query_engine_ooms_of_different_counts_are_one_cause() {
        let r = |n: u32, a: u32, b: u32| {
            format!("out of memory: the server's query engine ran out of its memory pool {n} time(s) during this type (query_datafusion_query_execution_ooms_total {a} -> {b}); the runner: tsbs_run_queries_influx3 exited with code 2: panic: unexpected EOF")
        };
        let g = group_failures(&[
            ("query:a".into(), r(1, 170, 171)),
            ("query:b".into(), r(32, 171, 203)),
            ("load".into(), "other".into()),
        ]);
        assert_eq!(g.0.len(), 2, "{g:?}");
        assert_eq!(g.0[0].steps, vec!["query:a", "query:b"]);
        assert_eq!(g.0[0].reason, r(1, 170, 171));
        assert_ne!(same_cause("a 1 b"), same_cause("a 2 b"));
    }
}
