//! The analyze phase: the product's own phase over the query set
//! ([`crate::product::ext::BenchExt::analyze`]), run in a [`PhaseCtx`] this module implements.

use std::path::{Path, PathBuf};
use std::process::ExitStatus;

use serde_json::Value;

use crate::environment::TsbsEnv;
use crate::error::{Error, Result};
use crate::product::op::{StepCtx, StepEnd};
use crate::product::phase::PhaseCtx;
use crate::queryset::QuerySet;
use crate::tsbs::TsbsCommand;

use super::super::{exec, integrity, Bench};

impl Bench<'_> {
    pub(in crate::bench) fn analyze(&mut self, env: &TsbsEnv, set: &QuerySet) -> Result<()> {
        let phase = self
            .target
            .product
            .bench_ext()
            .and_then(|x| x.analyze)
            .ok_or_else(|| {
                Error::invalid(format!(
                    "{} has no analyze phase",
                    self.target.entry.display
                ))
            })?;
        let values = self.plan.product.clone();
        (phase.run)(&mut Ctx { b: self, env }, set, &values)
    }
}

/// The bench run as a product phase sees it.
struct Ctx<'a, 'b> {
    b: &'a mut Bench<'b>,
    env: &'a TsbsEnv,
}

/// The steps and the server are the bench run's own ([`StepCtx`] for [`Bench`]).
impl StepCtx for Ctx<'_, '_> {
    fn run_dir(&self) -> PathBuf {
        StepCtx::run_dir(self.b)
    }
    fn next_attempt(&mut self, step: &str) -> Result<u32> {
        StepCtx::next_attempt(self.b, step)
    }
    fn begin(
        &mut self,
        step: &str,
        attempt: u32,
        log: Option<&str>,
        results: Option<&str>,
        data: Option<Value>,
    ) -> Result<()> {
        StepCtx::begin(self.b, step, attempt, log, results, data)
    }
    fn end(
        &mut self,
        step: &str,
        attempt: u32,
        how: StepEnd,
        reason: Option<String>,
        data: Option<Value>,
    ) -> Result<()> {
        StepCtx::end(self.b, step, attempt, how, reason, data)
    }
    fn start_server(&mut self) -> Result<()> {
        self.b.start_server()
    }
    fn stop_server(&mut self) -> Result<()> {
        self.b.stop_server()
    }
}

impl PhaseCtx for Ctx<'_, '_> {
    fn database(&self) -> String {
        self.b.target.database().to_string()
    }
    fn endpoint(&self) -> String {
        self.b.endpoint()
    }
    fn verified_tool(&mut self, name: &str) -> Result<PathBuf> {
        integrity::verified_binary(self.env, name, &mut self.b.run)
    }
    fn server_log_rel(&self) -> String {
        format!("logs/server-{:03}.log", self.b.server_attempt)
    }
    fn check_loaded_rows(&mut self) -> Result<()> {
        self.b.check_loaded_rows()
    }
    fn run_tool(
        &mut self,
        step: &str,
        attempt: u32,
        cmd: &TsbsCommand,
        log: &Path,
        during: &str,
    ) -> Result<ExitStatus> {
        let cwd = self.b.cwd.clone();
        let (end, _) = exec::run_tool(cmd, &cwd, log, exec::Input::None, &mut || {
            self.b.server_gone()
        })?;
        self.b.tool_exit(step, attempt, end, during, log)
    }
}
