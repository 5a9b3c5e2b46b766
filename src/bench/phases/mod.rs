//! The phases of a bench run after its inputs: [`load`], [`query`] and [`analyze`], and what
//! they share: a TSBS tool run as a step, with its progress drawn, stalls watched, and an end
//! that was not an exit (Ctrl-C, the server dying, a stall) recorded on the step.

mod analyze;
mod answers;
mod inputs;
mod load;
mod query;

use std::path::Path;

use crate::error::{Error, Result};
use crate::output::Warning;
use crate::run::data::MachineRecord;
use crate::run::Status;
use crate::tsbs;

use super::exec::{self, ToolEnd};
use super::{watch, Bench};

impl Bench<'_> {
    /// Ends `step` when its tool did not exit by itself (Ctrl-C, or the server died under it)
    /// and returns the error to propagate; an exit status passes through for the caller to
    /// judge.
    pub(super) fn tool_exit(
        &mut self,
        step: &str,
        attempt: u32,
        end: ToolEnd,
        during: &str,
        log: &Path,
    ) -> Result<std::process::ExitStatus> {
        match end {
            ToolEnd::Exited(status) => Ok(status),
            ToolEnd::Interrupted => {
                self.run.end(
                    step,
                    attempt,
                    Status::Interrupted,
                    Some("interrupted".into()),
                    None,
                )?;
                Err(Error::interrupted(format!("interrupted during {during}")))
            }
            ToolEnd::ServerGone(reason) => {
                let r = format!("the server died during {during}: {reason}");
                self.run
                    .end(step, attempt, Status::Failed, Some(r.clone()), None)?;
                Err(Error::failed(r).with_hint(format!("see {}", log.display())))
            }
            ToolEnd::InputChanged(change) => {
                let r = format!("the file {during} was reading changed under it: {change}");
                self.run
                    .end(step, attempt, Status::Failed, Some(r.clone()), None)?;
                Err(Error::integrity(r).with_hint(
                    "nothing may write to a dataset or query set while a run reads it; run `tsbsctl data verify` and, if it fails, generate the data again",
                ))
            }
            ToolEnd::Stopped(reason) => {
                self.run
                    .end(step, attempt, Status::Failed, Some(reason.clone()), None)?;
                Err(Error::failed(reason).with_hint(format!(
                    "see {} and the server log; raise --stall-timeout if the tool is just slow",
                    log.display()
                )))
            }
        }
    }

    /// The host watched for a moment before a measured phase (`before`: "the load", "the
    /// queries"), recorded as a `machine-check` step; with `--require-quiet` a busy machine
    /// fails the run here, before anything is measured.
    pub(super) fn machine_check(&mut self, before: &str) -> Result<()> {
        let pid = self.server.as_ref().map(|s| s.pid());
        let q = super::quiet::check_before(pid);
        let attempt = self.run.next_attempt("machine-check")?;
        let record = MachineRecord {
            words: Some(q.words()),
            before: Some(before.to_string()),
            reading: q,
        };
        let data = crate::run::data::value(&record);
        let busy = record.busy();
        if busy && self.plan.require_quiet {
            let r = format!(
                "the machine is not quiet before {before}: {}",
                record.reading.words()
            );
            self.run.instant(
                "machine-check",
                attempt,
                crate::run::Status::Failed,
                Some(r.clone()),
                Some(data),
            )?;
            return Err(Error::failed(r).with_hint(
                "stop what else runs on this host (see `top`) and run again, or leave out --require-quiet to measure anyway (summary.md then warns)",
            ));
        }
        if busy {
            self.reporter().warning(&Warning::NotQuiet {
                before: before.to_string(),
                reading: record.reading.words(),
            });
        }
        self.run.instant(
            "machine-check",
            attempt,
            crate::run::Status::Completed,
            None,
            Some(data),
        )
    }

    /// What other processes did while a tool ran, from a reading taken just before it.
    pub(super) fn machine_since(&self, r: &super::quiet::Reading) -> MachineRecord {
        let q = r.since(self.server.as_ref().map(|s| s.pid()));
        MachineRecord {
            words: Some(q.words()),
            before: None,
            reading: q,
        }
    }

    pub(super) fn stall_policy(&self) -> watch::StallPolicy {
        self.plan.stall
    }

    /// Runs a tool with its progress drawn and stalls watched; the server check runs as with
    /// [`exec::run_tool`].
    #[allow(clippy::too_many_arguments)]
    pub(super) fn run_watched(
        &mut self,
        cmd: &tsbs::TsbsCommand,
        log: &Path,
        input: exec::Input,
        step: &str,
        attempt: u32,
        counting: watch::Counting,
        label: &str,
        expected: Option<u64>,
    ) -> Result<exec::ToolRun> {
        let policy = self.stall_policy();
        let cwd = self.cwd.clone();
        let reporter = self.ctx.reporter.as_ref();
        // The server is checked by the watch closure while the observer writes events.
        let mut server = self.server.take();
        let mut gone = || {
            let s = server.as_mut()?;
            s.check_running().err().map(|e| e.message)
        };
        let mut obs = watch::ToolWatch::new(
            &mut self.run,
            reporter,
            step,
            attempt,
            &cmd.tool(),
            counting,
            label,
            expected,
            policy,
        );
        let res = exec::run_tool_observed(cmd, &cwd, log, input, &mut gone, &mut obs);
        let event_error = obs.event_error.take();
        drop(obs);
        self.server = server;
        if let Some(e) = event_error {
            return Err(e);
        }
        res
    }
}
