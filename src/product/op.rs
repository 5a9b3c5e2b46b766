//! The narrow context a product's own maintenance operation runs in (design-2 §5 point 3):
//! what it may do to the run (steps), the server (start, stop, SQL), and the workspace's
//! bookkeeping (the maintenance record and the data state). The benchmark side implements it,
//! so an operation can live with its product without naming `bench`, `run` or `workspace`
//! internals, and without an import circle (products sit below both).

use std::path::PathBuf;

use serde_json::Value;

use crate::error::Result;
use crate::output::Reporter;
use crate::workspace_manifest::MaintenanceRecord;

/// How a step of an operation ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StepEnd {
    Completed,
    Failed,
    Interrupted,
}

/// The steps of the run a product's code runs in (an operation, its own bench phase, its work
/// before the queries) and the managed server they start and stop: what [`OpCtx`] and
/// [`super::phase::PhaseCtx`] both offer, declared once.
pub trait StepCtx {
    /// The run's directory (steps name their files relative to it).
    fn run_dir(&self) -> PathBuf;
    /// The next attempt number of `step`.
    fn next_attempt(&mut self, step: &str) -> Result<u32>;
    /// A step of the run: a begin/end pair of events (`log` and `results`: relative to the
    /// run directory).
    fn begin(
        &mut self,
        step: &str,
        attempt: u32,
        log: Option<&str>,
        results: Option<&str>,
        data: Option<Value>,
    ) -> Result<()>;
    fn end(
        &mut self,
        step: &str,
        attempt: u32,
        how: StepEnd,
        reason: Option<String>,
        data: Option<Value>,
    ) -> Result<()>;
    fn start_server(&mut self) -> Result<()>;
    /// Stops the managed server; a slow stop only warns (the work before it was final).
    fn stop_server(&mut self) -> Result<()>;
}

/// What an operation may ask of the run it is part of, beyond its steps.
pub trait OpCtx: StepCtx {
    fn reporter(&self) -> &dyn Reporter;
    /// The SQL database the benchmarks use.
    fn database(&self) -> &str;
    /// The managed workspace's id and installed version (operations need a managed target).
    fn database_id(&self) -> String;
    fn version(&self) -> String;
    fn run_id(&self) -> String;
    /// The tables of the run's dataset, in the generator's order (`cpu` for cpu-only; nine
    /// for devops; two for iot). Empty when the run has no dataset (a maintenance run).
    fn tables(&self) -> Vec<String>;

    /// The running server's log: its path and its name relative to the run directory.
    fn server_log(&self) -> Option<(PathBuf, String)>;
    /// One read-only statement (bounded by the admin timeout); `db: None` asks outside the
    /// database.
    fn sql(&self, db: Option<&str>, sql: &str) -> Result<Value>;
    /// One maintenance statement as its own step, waited for without a client timeout
    /// (Ctrl-C and a dead server end the wait).
    fn maintenance_step(&mut self, step: &str, sql: &str) -> Result<Value>;
    /// The data directory's footprint split, measured now (`None`: no data directory here).
    fn footprint(&self) -> Result<Option<Value>>;
    /// The managed server's data directory (`None`: an external server).
    fn data_dir(&self) -> Option<PathBuf>;
    /// A GET on the server's HTTP endpoint (`path` from `/`), bounded by the admin timeout:
    /// the body of a 2xx answer.
    fn http_get(&self, path: &str) -> Result<String>;
    /// `Some(reason)` when the managed server has died.
    fn server_gone(&mut self) -> Option<String>;

    /// Appends to the workspace's maintenance record (the intent, before the work).
    fn push_maintenance(&mut self, rec: MaintenanceRecord) -> Result<()>;
    /// Replaces the last maintenance record (the outcome) and copies the workspace's data
    /// state into the run's manifest.
    fn update_last_maintenance(&mut self, rec: MaintenanceRecord) -> Result<()>;
}

/// What a product does before its queries run, on a started server, given its resolved flag
/// values ([`super::ext::BenchExt::resolve`]): GreptimeDB's optional flush
/// (`--flush-before-queries`), the wait for the compaction that flush starts, and where the
/// data is.
pub struct BeforeQueries {
    pub run: fn(ctx: &mut dyn OpCtx, values: &super::ext::Values) -> Result<()>,
}
