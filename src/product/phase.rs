//! The narrow context a product's own bench phase runs in (design-2 §5 point 3), as
//! [`super::op::OpCtx`] is for an operation: a phase inside a bench run, on its query set, that
//! runs a TSBS tool once per step (GreptimeDB's analyze). The benchmark side implements it, so
//! the phase lives with its product without naming `bench` or `run` internals, and without an
//! import circle.

use std::path::{Path, PathBuf};
use std::process::ExitStatus;

use super::op::StepCtx;
use crate::error::Result;
use crate::tsbs::TsbsCommand;

/// What a product's bench phase may ask of its run, beyond its steps.
pub trait PhaseCtx: StepCtx {
    /// The SQL database the benchmarks use.
    fn database(&self) -> String;
    /// The server's endpoint (the running one's, when started).
    fn endpoint(&self) -> String;
    /// The pinned TSBS tool `name`, its checksum checked again and recorded in the run.
    fn verified_tool(&mut self, name: &str) -> Result<PathBuf>;
    /// The running server's log, relative to the run directory.
    fn server_log_rel(&self) -> String;
    /// Refuses (exit 4) a server whose row count is not the one its workspace was loaded with.
    fn check_loaded_rows(&mut self) -> Result<()>;
    /// Runs `cmd` as step `step`'s tool, its output in `log`, watched for a dead server. An
    /// end that was not an exit (Ctrl-C, the server dying) ends the step and is the error
    /// (`during` words what was under way); an exit status is for the caller to judge.
    fn run_tool(
        &mut self,
        step: &str,
        attempt: u32,
        cmd: &TsbsCommand,
        log: &Path,
        during: &str,
    ) -> Result<ExitStatus>;
}

/// A product's own bench phase over the query set (`bench <product> analyze`).
pub struct QueryPhase {
    /// One line for `--help` (the phase's value `analyze`).
    pub about: &'static str,
    /// Runs it for every query type of `set`, with the product's resolved flag values.
    pub run: fn(
        ctx: &mut dyn PhaseCtx,
        set: &crate::queryset::QuerySet,
        values: &super::ext::Values,
    ) -> Result<()>,
    /// Refuses (exit 2, before a run exists) query counts too small for it.
    pub check_counts: fn(
        values: &super::ext::Values,
        counts: &std::collections::BTreeMap<String, u64>,
    ) -> Result<()>,
}
