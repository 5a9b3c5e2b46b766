//! How a bench command ends: the server stopped, the run's status decided from what the
//! summary counts as a failure, `summary.json` / `summary.md` written, and the error (if any)
//! shaped into the command's, with the run's id and where its logs are.

use serde_json::json;

use crate::error::{Error, ErrorKind, Result};
use crate::output::Outcome;
use crate::run::{RunDir, Status};

use super::Bench;

/// What a finished command reports.
fn outcome(run: &RunDir, summary: &crate::summary::RunSummary) -> Outcome {
    let md = run.dir.join("summary.md");
    let human = format!(
        "Run {}: {}\nRun directory: {}\nSummary: {}\n",
        run.id(),
        run.manifest.status.as_str(),
        run.dir.display(),
        md.display()
    );
    Outcome::new(
        json!({
            "run_id": run.id(),
            "run_dir": run.dir,
            "status": run.manifest.status,
            "summary_json": run.dir.join("summary.json"),
            "summary_md": md,
            "summary": summary,
        }),
        human,
    )
}

impl Bench<'_> {
    /// Stops the server, records the end state, writes the summary, and turns failures into
    /// the command's error.
    pub(super) fn conclude(mut self, result: Result<()>) -> Result<Outcome> {
        let _ = self.stop_server();
        // Everything the summary counts as a failure (failed steps, unreadable results, panics
        // in the server log) fails the run.
        let failed_steps: Vec<(String, String)> = crate::summary::build(&self.run)
            .map(|sum| {
                sum.failures
                    .into_iter()
                    .map(|f| (f.step.unwrap_or_else(|| "run".into()), f.reason))
                    .collect()
            })
            .unwrap_or_default();
        let (status, err) = match result {
            Err(e) if e.kind == ErrorKind::Interrupted => (Status::Interrupted, Some(e)),
            Err(e) => (Status::Failed, Some(e)),
            Ok(()) if !failed_steps.is_empty() => (
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
                    format!("run {} {}: {}", self.run.id(), status.as_str(), e.message),
                )
                .with_hint(hint))
            }
        }
    }
}

/// A failure reason without what differs between two failures of one cause (the server's
/// per-request execution time).
pub(super) fn same_cause(reason: &str) -> String {
    static RE: std::sync::OnceLock<regex::Regex> = std::sync::OnceLock::new();
    RE.get_or_init(|| regex::Regex::new(r#""?execution_time_ms"?\s*:\s*\d+"#).expect("regex"))
        .replace_all(reason, "execution_time_ms")
        .into_owned()
}

/// Failures with one cause said once, with the steps it hit (#22): `cause (steps: a, b)`.
fn group_failures(failures: &[(String, String)]) -> String {
    let mut groups: Vec<(String, &str, Vec<&str>)> = Vec::new();
    for (step, reason) in failures {
        let cause = same_cause(reason);
        match groups.iter_mut().find(|(c, _, _)| *c == cause) {
            Some((_, _, steps)) => steps.push(step),
            None => groups.push((cause, reason, vec![step])),
        }
    }
    groups
        .iter()
        .map(|(_, reason, steps)| {
            if steps.len() == 1 {
                format!("{}: {reason}", steps[0])
            } else {
                format!(
                    "{reason} (the same cause in {} steps: {})",
                    steps.len(),
                    steps.join(", ")
                )
            }
        })
        .collect::<Vec<_>>()
        .join("; ")
}
