//! Benchmark phases (`tsbsctl bench <product> all|load|query|compact|analyze`).
//!
//! One command = one run directory ([`crate::run`]). The order of work in `all` keeps the
//! server from idling: TSBS binaries, dataset and query set first; then start the server,
//! load (or reuse loaded data), check the row count, stop the server and measure the storage
//! footprint at rest; start it again, run every query type (sorted), stop it. Every step is an
//! event in the run; `summary.json` / `summary.md` are rebuilt from disk at the end
//! ([`crate::summary`]), also after a failure or Ctrl-C.
//!
//! Managed targets hold the workspace lock for the whole command. The workspace's dataset
//! binding is cleared before a reset drops data and set only after a load was verified, so it
//! never claims data that is not there.
//!
//! This file is the path of a run top to bottom ([`run`], then `Bench::work`); the phases are
//! in `phases/` (inputs, load, query, analyze), the managed server's steps in `serving.rs`,
//! the end of a run in `conclude.rs`.

mod coldstart;
mod conclude;
pub mod exec;
pub mod flags;
pub mod footprint;
pub mod inputfile;
pub mod integrity;
pub mod maintenance;
pub mod operation;
mod phases;
pub mod plan;
pub mod preflight;
pub mod quickstart;
pub mod quiet;
pub mod request;
mod serving;
pub mod target;
pub mod timeline;
mod tokens;
pub mod watch;

use std::path::{Path, PathBuf};

use serde_json::{json, Value};

use crate::context::Ctx;
use crate::environment::TsbsEnv;
use crate::error::{Error, Result};
use crate::output::{Event, Outcome};
use crate::paths::Root;
use crate::product::Entry;
use crate::queryset;
use crate::run::{NewRun, RunDir, RunKind, Workload};
use crate::server::Server;
use crate::tsbs;

use target::Target;

/// The phases: the ones every product has, the analysis of the query types a product may
/// declare, and a product's own operations (by their names). The command line offers a
/// product the ones it has (`cli::generic::phase_of`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Phase {
    /// Dataset and query set, then load, verify, query.
    All,
    /// Load (or reuse loaded data) and verify the row count.
    Load,
    /// Run every query type of the query set once.
    Query,
    /// Each query type through the product's own analysis, cold then hot
    /// ([`crate::product::ext::BenchExt::analyze`]).
    Analyze,
    /// A product's own operation, by its name ([`crate::product::ext::Operation`]): the
    /// run's phase.
    Operation(&'static str),
}

impl Phase {
    pub fn as_str(self) -> &'static str {
        match self {
            Phase::All => "all",
            Phase::Load => "load",
            Phase::Query => "query",
            Phase::Analyze => "analyze",
            Phase::Operation(name) => name,
        }
    }
    pub fn loads(self) -> bool {
        matches!(self, Phase::All | Phase::Load)
    }
}

pub use plan::Plan;
pub use request::{default_write, validate, Request, RerunPins, ResumePlan};
pub use tokens::token_from_env;

/// The default table TSBS cpu-only writes.
pub const TABLE: &str = "cpu";

/// State of one bench command.
pub struct Bench<'a> {
    pub ctx: &'a Ctx,
    pub root: Root,
    pub entry: &'static Entry,
    pub phase: Phase,
    /// The resolved plan: every value the phases read.
    pub plan: &'a Plan,
    pub target: Target,
    pub run: RunDir,
    pub server: Option<Server>,
    server_attempt: u32,
    /// The last stop needed SIGKILL (footprints after it say so).
    forced_stop: bool,
    /// The product's own footprint of the load (`Loading::after_load`), for the footprint step.
    load_footprint: Option<Value>,
    /// Where each TSBS tool gets its private working directory (its tokens' `config.json`).
    cwd: PathBuf,
    /// A maintenance statement whose wait was interrupted: the server may still answer it
    /// while it stops (a real v1.0.2 sent HTTP 500 "Region … is stopped"), and that answer is
    /// recorded with the statement's step.
    late_answer: Option<maintenance::LateAnswer>,
    /// The server's resource timeline, told of every step by the run.
    timeline: std::sync::Arc<timeline::Timeline>,
}

impl<'a> Bench<'a> {
    /// The bench of a maintenance run (a compaction, a product's operation): the timeline
    /// observes the run, the tools' working directories are under the run's, no server yet.
    fn maintenance(ctx: &'a Ctx, plan: &'a Plan, target: Target, mut run: RunDir) -> Bench<'a> {
        let cwd = run.dir.clone();
        let timeline = timeline::Timeline::new(&run.dir);
        run.set_observer(timeline.clone());
        Bench {
            ctx,
            root: plan.root.clone(),
            entry: target.entry,
            phase: plan.phase,
            plan,
            target,
            run,
            server: None,
            server_attempt: 0,
            forced_stop: false,
            load_footprint: None,
            late_answer: None,
            cwd,
            timeline,
        }
    }
}

/// Runs a bench command end to end.
pub fn run(ctx: &Ctx, entry: &'static Entry, req: &Request) -> Result<Outcome> {
    run_in(ctx, entry, req, None)
}

/// Continues `run` (`runs resume`, locked by the caller) with `req`, whose `resume` says what
/// is left: the same checks as a bench command, then the query types not done, in the same
/// run directory.
pub fn resume(ctx: &Ctx, entry: &'static Entry, req: &Request, run: RunDir) -> Result<Outcome> {
    run_in(ctx, entry, req, Some(run))
}

/// A resume's query set must hold, for every type already done, the file that type ran with
/// (its steps recorded the SHA-256): otherwise the run would mix two workloads (exit 4).
pub fn resume_files_unchanged(plan: &ResumePlan, set: &queryset::QuerySet) -> Result<()> {
    for (qt, sha) in &plan.done_files {
        match set.files.get(qt) {
            Some(f) if &f.sha256 == sha => {}
            other => return Err(Error::integrity(format!(
                "query type {qt} of the run ran a file with SHA-256 {sha}; query set {} has {}",
                set.id,
                other.map_or("no such type".to_string(), |f| f.sha256.clone())
            ))
            .with_hint(
                "restore the query set the run used, or start a new run (`tsbsctl runs rerun RUN`)",
            )),
        }
    }
    Ok(())
}

fn run_in(
    ctx: &Ctx,
    entry: &'static Entry,
    req: &Request,
    resumed: Option<RunDir>,
) -> Result<Outcome> {
    // What is told before the run directory exists is held, and written into it once it does.
    let early = std::sync::Arc::new(crate::run::EarlyEvents::new(ctx.reporter.clone()));
    let early_ctx = &ctx.with_reporter(early.clone());
    // Every rule and default, the target opened (managed: locked for the whole command).
    let (plan, target) = plan::resolve(early_ctx, entry, req)?;
    let w = match &plan.work {
        plan::Work::Operation(op) => return operation::run(early_ctx, &plan, op, target, &early),
        plan::Work::Benchmark(w) => w,
    };
    let phase = plan.phase;
    let mut workload = json!({
        "profile": w.profile.as_str(),
        "load_workers": w.load_workers,
        "batch_size": w.batch_size,
        "query_workers": w.query_workers,
        "database_mode": phase.loads().then(|| plan.mode.as_str()),
        "query_counts": w.counts,
    });
    if let Some(o) = workload.as_object_mut() {
        // Keys every record has in this place (`null` but for the product whose resolved
        // values have them), then `hot_runs` (analyze) and the product's other settings:
        // its resolved values.
        for k in crate::product::ext::WORKLOAD_KEYS {
            o.insert(k.to_string(), Value::Null);
        }
        o.extend(plan.product.clone());
    }
    if phase.loads() {
        preflight::check_compression(&target, &w.dataset, &plan)?;
        preflight::check_binding_content(&target, &w.dataset, &plan)?;
    }
    // Without built TSBS tools nothing can run: say so before a run directory exists, and
    // before the disk estimate (a workload that would not fit is the second thing to fix).
    TsbsEnv::load(&ctx.root, plan.rerun.as_ref().map(|p| p.tsbs_key.as_str()))?;
    preflight::check_disk(&target, &plan, w)?;
    let run = match resumed {
        Some(mut run) => {
            if let Some(mut record) = plan.resume.as_ref().and_then(|p| p.record.clone()) {
                if !record.added_query_types.is_empty() {
                    record.previous_query_set = run.manifest.query_set.clone();
                    if let Workload::Benchmark(rw) = &mut run.manifest.workload {
                        rw.query_counts = w.counts.clone();
                    }
                }
                run.record_resume(record)?;
            }
            run
        }
        None => RunDir::create(
            &plan.root,
            NewRun {
                product: entry.name,
                variant: target.variant(),
                kind: RunKind::Benchmark,
                phase: phase.as_str(),
                run_id: plan.run_id.as_deref(),
                command: ctx.command_line(),
                flags: plan.flags.clone(),
                target: target.to_run_target()?,
                workload: serde_json::from_value(workload)?,
                host_data_dir: target.data_dir(),
            },
            early_ctx.reporter.as_ref(),
        )?,
    };
    let mut run = run;
    if let Some(p) = plan.rerun.as_ref().filter(|_| plan.resume.is_none()) {
        run.manifest.rerun_of = Some(p.rerun_of.clone());
        run.save()?;
    }
    // From here every event and warning is recorded in the run's events.jsonl too.
    let ctx = &recording(ctx, &run, &target, &early);
    ctx.reporter.event(&Event::RunIn {
        operation: None,
        run: run.id().to_string(),
        dir: run.dir.clone(),
    });
    let cwd = tsbs::command::tool_dir_parent();
    let timeline = timeline::Timeline::new(&run.dir);
    run.set_observer(timeline.clone());
    // A resumed run's server attempts go on from its last (their logs stay).
    let server_attempt = run
        .all_steps()?
        .iter()
        .filter(|s| s.step == "server")
        .map(|s| s.attempt)
        .max()
        .unwrap_or(0);
    let mut b = Bench {
        ctx,
        root: plan.root.clone(),
        entry,
        phase,
        plan: &plan,
        target,
        run,
        server: None,
        server_attempt,
        forced_stop: false,
        load_footprint: None,
        late_answer: None,
        cwd,
        timeline,
    };
    let result = b.work(w);
    b.conclude(result)
}

/// `ctx` with a reporter that also records every event and warning in `run`'s
/// `events.jsonl`, redacted (the target's tokens included), first what `early` held from
/// before the run existed.
pub(super) fn recording(
    ctx: &Ctx,
    run: &RunDir,
    target: &Target,
    early: &crate::run::EarlyEvents,
) -> Ctx {
    let (auth, admin) = target.tokens();
    let redactor = [auth, admin]
        .into_iter()
        .flatten()
        .fold(crate::redact::Redactor::new(), |r, t| {
            r.with_token(t.expose())
        });
    let events = crate::run::RunEvents::new(run, ctx.reporter.clone(), redactor);
    events.replay(early);
    ctx.with_reporter(std::sync::Arc::new(events))
}

impl Bench<'_> {
    fn reporter(&self) -> &dyn crate::output::Reporter {
        self.ctx.reporter.as_ref()
    }

    /// The phases in their order: inputs first, so the server never idles while they are
    /// made; then the load, then the queries (or the analysis), each starting its server.
    fn work(&mut self, w: &plan::Workload) -> Result<()> {
        let env = self.env()?;
        // 1. Dataset (materialised for loads, logical otherwise).
        let (ds, stored) = self.dataset(&env, &w.dataset)?;
        // 2. Query set.
        let set = if self.phase == Phase::Load {
            None
        } else {
            Some(self.query_set(&env, &ds, &w.counts)?)
        };

        // 3. Server pins and the data state this run starts from.
        self.run.manifest.server = self.target.server_pin();
        self.run.manifest.data_state = self.target.data_state();
        self.run.save()?;

        // 4. Load.
        if let (true, Some(sf)) = (self.phase.loads(), &stored) {
            self.load(&env, w, &ds, sf)?;
        }
        // A resume runs only the types not done (and the added ones).
        let set = match (set, &self.plan.resume) {
            (Some(mut set), Some(plan)) => {
                set.files.retain(|t, _| plan.query_types.contains(t));
                Some(set)
            }
            (set, _) => set,
        };
        // 5. Queries / analysis.
        if let Some(set) = &set {
            match self.phase {
                Phase::Analyze => self.analyze(&env, set)?,
                _ => self.query(&env, w, &ds, set)?,
            }
        }
        self.stop_server()?;
        Ok(())
    }
}

/// The path of a file relative to a run directory (for summaries).
pub fn rel(run: &Path, p: &Path) -> String {
    p.strip_prefix(run)
        .map(|r| r.display().to_string())
        .unwrap_or_else(|_| p.display().to_string())
}
