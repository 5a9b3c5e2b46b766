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

pub mod compact;
pub mod exec;
pub mod flags;
pub mod footprint;
pub mod integrity;
pub mod preflight;
pub mod quickstart;
pub mod request;
pub mod settle;
pub mod target;
pub mod watch;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::Duration;

use serde_json::{json, Value};

use crate::context::Ctx;
use crate::dataset::{self, Dataset, GenerateRequest, Profile, StoredFormat};
use crate::environment::TsbsEnv;
use crate::error::{Error, ErrorKind, Result};
use crate::output::Outcome;
use crate::paths::Root;
use crate::queryset::{self, QuerySet, QuerySetRequest};
use crate::run::{NewRun, RunDir, RunKind, Status};
use crate::server::{Server, Timing};
use crate::tsbs::{self, DatabaseMode, Secret};

use crate::product::{Entry, ToolOptions};
use exec::ToolEnd;
use target::Target;

/// The phases.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Phase {
    /// Dataset and query set, then load, verify, query.
    All,
    /// Load (or reuse loaded data) and verify the row count.
    Load,
    /// Run every query type of the query set once.
    Query,
    /// GreptimeDB: flush, then compact a table (manual compaction).
    Compact,
    /// GreptimeDB: EXPLAIN ANALYZE VERBOSE per query type, cold then hot.
    Analyze,
}

impl Phase {
    pub fn as_str(self) -> &'static str {
        match self {
            Phase::All => "all",
            Phase::Load => "load",
            Phase::Query => "query",
            Phase::Compact => "compact",
            Phase::Analyze => "analyze",
        }
    }
    fn loads(self) -> bool {
        matches!(self, Phase::All | Phase::Load)
    }
}

pub use request::{default_write, validate, Request, RerunPins};

/// The default table TSBS cpu-only writes.
pub const TABLE: &str = "cpu";

/// State of one bench command.
pub struct Bench<'a> {
    pub ctx: &'a Ctx,
    pub root: Root,
    pub entry: &'static Entry,
    pub phase: Phase,
    pub req: &'a Request,
    pub target: Target,
    pub run: RunDir,
    pub server: Option<Server>,
    server_attempt: u32,
    /// The last stop needed SIGKILL (footprints after it say so).
    forced_stop: bool,
    /// The product's own footprint of the load (`Product::after_load`), for the footprint step.
    load_footprint: Option<Value>,
    /// Where each TSBS tool gets its private working directory (its tokens' `config.json`).
    cwd: PathBuf,
}

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

/// Runs a bench command end to end.
pub fn run(ctx: &Ctx, entry: &'static Entry, req: &Request) -> Result<Outcome> {
    let phase = validate(entry, req)?;
    // A bad TSBSCTL_ADMIN_TIMEOUT_SECS is bad input: said before anything exists.
    crate::product::admin_timeout()?;
    let root = ctx
        .root
        .clone()
        .with_dataset_root(req.dataset_root.as_deref())?;
    preflight::check_run_id(&root, entry, req)?;
    // Managed: workspace loaded and locked for the whole command; external: probed.
    let mut target = Target::open(ctx, &root, entry, phase, req)?;
    preflight::check_can_serve(&target)?;
    if phase == Phase::Compact {
        return compact::run(ctx, root, target, req);
    }
    let (dataset, profile) = resolve_dataset(&root, &target, phase, req)?;
    target.set_count_window(&dataset);
    // A workspace holding another dataset is refused before anything is written.
    if phase.loads() {
        target.check_binding_id(&dataset, req.mode)?;
    } else {
        target.require_binding(&root, &dataset)?;
    }
    let (workers, batch) = default_write(target.product.as_ref(), profile);
    let counts = queryset::resolve_counts(
        profile,
        None,
        &req.query_types,
        req.queries,
        &req.query_counts,
    )?;
    if phase == Phase::Analyze {
        let need = 1 + req.hot_runs.unwrap_or(2) as u64;
        let short: Vec<String> = counts
            .iter()
            .filter(|(_, c)| **c < need)
            .map(|(t, c)| format!("{t}={c}"))
            .collect();
        if !short.is_empty() {
            return Err(Error::invalid(format!(
                "analyze needs at least {need} queries per type; too few: {}",
                short.join(", ")
            ))
            .with_hint(format!("pass --queries {need} (or lower --hot-runs)")));
        }
    }
    // A query type the dataset is too small for would panic in the generator: refuse first.
    if matches!(phase, Phase::All | Phase::Query | Phase::Analyze) {
        queryset::check_query_needs(&dataset, &counts)?;
    }
    let caps = target.product.bench_caps();
    let mut workload = json!({
        "profile": profile.as_str(),
        "load_workers": req.load_workers.unwrap_or(workers),
        "batch_size": req.batch_size.unwrap_or(batch),
        "query_workers": req.query_workers.unwrap_or(1),
        "database_mode": phase.loads().then(|| target.mode(req).as_str()),
        "query_counts": counts,
        "hot_runs": (phase == Phase::Analyze).then(|| req.hot_runs.unwrap_or(2)),
        "no_sync": caps.durability.then_some(req.no_sync),
        "accept_partial": caps.durability.then_some(req.accept_partial),
        "flush_before_queries": caps.flush_before_queries.then_some(req.flush_before_queries),
    });
    if let Some(w) = workload.as_object_mut() {
        w.extend(req.write_settings());
    }
    if phase.loads() {
        preflight::check_compression(&dataset, req)?;
        preflight::check_binding_content(&target, &dataset, req)?;
    }
    // Without built TSBS tools nothing can run: say so before a run directory exists, and
    // before the disk estimate (a workload that would not fit is the second thing to fix).
    TsbsEnv::load(&ctx.root, req.rerun.as_ref().map(|p| p.tsbs_key.as_str()))?;
    preflight::check_disk(&root, &target, phase, &dataset, req, &counts)?;
    let run = RunDir::create(
        &root,
        NewRun {
            product: entry.name,
            edition: target.edition(),
            kind: RunKind::Benchmark,
            phase: phase.as_str(),
            run_id: req.run_id.as_deref(),
            command: ctx.command_line(),
            flags: req.flags.clone(),
            target: target.to_run_target()?,
            workload: serde_json::from_value(workload)?,
            host_data_dir: target.data_dir(),
        },
        ctx.reporter.as_ref(),
    )?;
    let mut run = run;
    if let Some(p) = &req.rerun {
        run.manifest.rerun_of = Some(p.rerun_of.clone());
        run.save()?;
    }
    ctx.reporter
        .info(&format!("run {} in {}", run.id(), run.dir.display()));
    let cwd = tsbs::command::tool_dir_parent();
    let mut b = Bench {
        ctx,
        root,
        entry,
        phase,
        req,
        target,
        run,
        server: None,
        server_attempt: 0,
        forced_stop: false,
        load_footprint: None,
        cwd,
    };
    let result = b.work(&dataset, &counts);
    b.conclude(result)
}

/// Picks the dataset: `--dataset-id` / spec flags; for query and analyze on a bound
/// workspace without them, the bound dataset. Returns the workload profile too.
fn resolve_dataset(
    root: &Root,
    target: &Target,
    phase: Phase,
    req: &Request,
) -> Result<(Dataset, Profile)> {
    let mut id = req.dataset_id.clone();
    if id.is_none() && !req.spec.any() && !phase.loads() {
        if let Some(b) = target.binding() {
            id = Some(b.dataset_id.clone());
        }
    }
    let ds = Dataset::resolve(root, id.as_deref(), &req.spec)?;
    if ds.spec.use_case != "cpu-only" {
        return Err(Error::invalid(format!(
            "the benchmarks load cpu-only data; dataset {} is {:?}",
            ds.id, ds.spec.use_case
        ))
        .with_hint("use a cpu-only dataset (the profiles' default)"));
    }
    let profile = req
        .spec
        .profile
        .unwrap_or(if ds.spec == Profile::Smoke.spec() {
            Profile::Smoke
        } else {
            Profile::Manual
        });
    Ok((ds, profile))
}

impl Bench<'_> {
    /// Ends `step` when its tool did not exit by itself (Ctrl-C, or the server died under it)
    /// and returns the error to propagate; an exit status passes through for the caller to
    /// judge.
    fn tool_exit(
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

    fn stall_policy(&self) -> watch::StallPolicy {
        watch::StallPolicy::new(self.req.stall_timeout, self.req.on_stall)
            .expect("validated before the run started")
    }

    /// Runs a tool with its progress drawn and stalls watched; the server check runs as with
    /// [`exec::run_tool`].
    #[allow(clippy::too_many_arguments)]
    fn run_watched(
        &mut self,
        cmd: &tsbs::TsbsCommand,
        log: &Path,
        stdin: Option<Box<dyn std::io::Read + Send>>,
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
        let res = exec::run_tool_observed(cmd, &cwd, log, stdin, &mut gone, &mut obs);
        let event_error = obs.event_error.take();
        drop(obs);
        self.server = server;
        if let Some(e) = event_error {
            return Err(e);
        }
        res
    }

    fn reporter(&self) -> &dyn crate::output::Reporter {
        self.ctx.reporter.as_ref()
    }

    fn env(&mut self) -> Result<TsbsEnv> {
        self.run.begin("tsbs-env", 1, None, None, None)?;
        let key = self.req.rerun.as_ref().map(|p| p.tsbs_key.as_str());
        let env = TsbsEnv::load(&self.ctx.root, key)?;
        let binaries: BTreeMap<String, Value> = env
            .binaries
            .iter()
            .map(|(k, v)| (k.clone(), json!({"path": v.path, "sha256": v.sha256})))
            .collect();
        let v = json!({
            "go_version": env.go_version,
            "tsbs_repo": env.repo,
            "tsbs_commit": env.commit,
            "tsbs_dirty": env.dirty,
            "binaries": binaries,
        });
        self.run.manifest.environment = Some(serde_json::from_value(v.clone())?);
        self.run.save()?;
        self.run
            .end("tsbs-env", 1, Status::Completed, None, Some(v))?;
        Ok(env)
    }

    fn work(&mut self, ds: &Dataset, counts: &BTreeMap<String, u64>) -> Result<()> {
        let env = self.env()?;
        let gen_env = env.clone();
        let mut data_gen = move || integrity::verified_generator(&gen_env, "tsbs_generate_data");
        let command = self.ctx.command_line();

        // 1. Dataset (materialised for loads, logical otherwise).
        self.run.begin("dataset", 1, None, None, None)?;
        let (ds, stored) = if self.phase.loads() {
            let sf = dataset::ensure_generated(
                ds,
                &GenerateRequest {
                    format: self.target.product.data_format().into(),
                    compression: self.req.compression,
                    regenerate: false,
                    generatable: crate::product::data_formats(),
                },
                &mut data_gen,
                &command,
                self.reporter(),
            )?;
            let (ds, _) = ds.ensure_stored(&command, self.reporter())?;
            (ds, Some(sf))
        } else {
            let (ds, _) = ds.ensure_stored(&command, self.reporter())?;
            (ds, None)
        };
        let mut dv = ds.to_json();
        if let Some(pinned) = self
            .req
            .rerun
            .as_ref()
            .and_then(|p| p.dataset_sha256.as_ref())
        {
            let have = match &stored {
                Some(sf) => Some(sf.sha256.clone()),
                None => self.target.binding().map(|b| b.sha256.clone()),
            };
            if have.as_ref() != Some(pinned) {
                return Err(Error::integrity(format!(
                    "dataset {} has SHA-256 {}, the run being reproduced used {pinned}",
                    ds.id,
                    have.as_deref().unwrap_or("unknown")
                ))
                .with_hint("restore the dataset the run used (a rerun never substitutes data)"));
            }
        }
        if let Some(sf) = &stored {
            if let Value::Object(m) = sf.to_json() {
                for (k, v) in m {
                    dv[k] = v;
                }
            }
        } else if let Some(b) = self
            .target
            .binding()
            .and_then(|b| serde_json::to_value(b).ok())
        {
            // Query-only runs record what the workspace holds (format, rows, checksums).
            for k in [
                "format",
                "compression",
                "rows",
                "metrics",
                "bytes",
                "sha256",
                "uncompressed_sha256",
            ] {
                if let Some(v) = b.get(k) {
                    dv[k] = v.clone();
                }
            }
        }
        self.run.manifest.dataset = Some(serde_json::from_value(dv.clone())?);
        self.run.save()?;
        self.run
            .end("dataset", 1, Status::Completed, None, Some(dv))?;

        // 2. Query set.
        let set = if self.phase == Phase::Load {
            None
        } else {
            self.run.begin("query-set", 1, None, None, None)?;
            let qenv = env.clone();
            let mut q_gen = move || integrity::verified_generator(&qenv, "tsbs_generate_queries");
            let log_dir = self.run.dir.join("logs");
            let set = queryset::ensure_query_set(
                &self
                    .ctx
                    .root
                    .clone()
                    .with_dataset_root(self.req.dataset_root.as_deref())?,
                &QuerySetRequest {
                    dataset: &ds,
                    format: self.target.product.query_format(),
                    counts,
                    log_dir: &log_dir,
                    pinned_manifest_sha256: self
                        .req
                        .rerun
                        .as_ref()
                        .and_then(|p| p.query_set_manifest_sha256.as_deref()),
                    full_verify: false,
                },
                &mut q_gen,
                self.reporter(),
            )?;
            let qv = json!({
                "query_set_id": set.id,
                "query_set_path": set.path,
                "manifest_sha256": set.manifest_sha256,
                "format": set.format.as_str(),
                "query_counts": set.counts(),
                "spec": set.spec,
                "reused": set.reused,
            });
            self.run.manifest.query_set = Some(serde_json::from_value(qv.clone())?);
            self.run.save()?;
            self.run
                .end("query-set", 1, Status::Completed, None, Some(qv))?;
            Some(set)
        };

        // 3. Server pins and the data state this run starts from.
        self.run.manifest.server = self.target.server_pin();
        self.run.manifest.data_state = self.target.data_state();
        self.run.save()?;

        // 4. Load.
        if let (true, Some(sf)) = (self.phase.loads(), &stored) {
            self.load(&env, &ds, sf)?;
        }
        // 5. Queries / analysis.
        if let Some(set) = &set {
            match self.phase {
                Phase::Analyze => self.analyze(&env, set)?,
                _ => self.query(&env, set)?,
            }
        }
        self.stop_server()?;
        Ok(())
    }

    fn start_server(&mut self) -> Result<()> {
        if self.server.is_some() || !self.target.is_managed() {
            return Ok(());
        }
        self.server_attempt += 1;
        let n = self.server_attempt;
        let (log, rel) = self.run.log(&format!("server-{n:03}.log"));
        self.run.begin("server", n, Some(&rel), None, None)?;
        let timing = self.timing();
        let res = (|| -> Result<Server> {
            let spec = self.target.server_spec(&self.root, log, timing)?;
            let mut s = Server::start(spec, self.reporter())?;
            s.wait_ready_reporting(self.reporter())?;
            Ok(s)
        })();
        match res {
            Ok(s) => {
                self.reporter()
                    .info(&format!("{} ready at {}", s.label(), s.endpoint()));
                self.run.event(crate::run::StepEvent {
                    seq: 0,
                    step: "server".into(),
                    attempt: n,
                    status: Status::Running,
                    at: crate::manifest::now_rfc3339(),
                    log: None,
                    results: None,
                    reason: None,
                    data: Some(json!({"pid": s.pid(), "endpoint": s.endpoint()})),
                })?;
                self.server = Some(s);
                Ok(())
            }
            Err(e) => {
                let status = if e.kind == ErrorKind::Interrupted {
                    Status::Interrupted
                } else {
                    Status::Failed
                };
                self.run
                    .end("server", n, status, Some(e.message.clone()), None)?;
                Err(e)
            }
        }
    }

    fn timing(&self) -> Timing {
        let mut t = self.target.default_timing();
        // Bounded and positive: checked by `preflight::check_bounds` (also for a rerun's
        // recorded flags, which no CLI parser saw).
        if let Some(s) = self.req.startup_timeout {
            t.startup_timeout = Duration::from_secs_f64(s);
        }
        if let Some(s) = self.req.stop_timeout {
            t.grace = Duration::from_secs_f64(s);
        }
        t
    }

    /// Stops the managed server (normally), recording how it ended.
    fn stop_server(&mut self) -> Result<()> {
        let Some(mut s) = self.server.take() else {
            return Ok(());
        };
        let out = s.stop_reporting(self.ctx.reporter.as_ref());
        let n = self.server_attempt;
        let unexpected = out.unexpected;
        // A slow stop does not undo what completed before it: a forced kill is a warning on
        // the run (and marks later footprints), an unexpected exit a failure.
        let status = if unexpected {
            Status::Failed
        } else {
            Status::Completed
        };
        let reason = if unexpected {
            Some(format!(
                "the server exited unexpectedly ({}); see its log",
                describe(out.code, out.signal)
            ))
        } else {
            None
        };
        let mut data = json!({"events": s.events(), "outcome": out, "stop_seconds": out.stop_ms as f64 / 1000.0});
        if out.forced {
            let w = format!(
                "the server did not stop within the grace period and was killed (SIGKILL after {:.1} s); work it still had queued was lost",
                out.stop_ms as f64 / 1000.0
            );
            self.reporter().warn(&w);
            data["warning"] = json!(w);
            self.forced_stop = true;
        }
        self.run.end("server", n, status, reason, Some(data))?;
        Ok(())
    }

    /// `Some(reason)` when the managed server has died.
    fn server_gone(&mut self) -> Option<String> {
        let s = self.server.as_mut()?;
        s.check_running().err().map(|e| e.message)
    }

    fn endpoint(&self) -> String {
        match &self.server {
            Some(s) => s.endpoint().to_string(),
            None => self.target.endpoint(),
        }
    }

    fn load(&mut self, env: &TsbsEnv, ds: &Dataset, sf: &StoredFormat) -> Result<()> {
        let mode = self.target.mode(self.req);
        let binding = self.target.binding_for(ds, sf);
        if self.target.is_managed() && mode != DatabaseMode::Reset && self.target.bound_to(&binding)
        {
            self.reporter().info(&format!(
                "workspace {} already holds dataset {}: load skipped",
                self.target.database_id().unwrap_or_default(),
                ds.id
            ));
            self.run.instant(
                "load",
                1,
                Status::Reused,
                None,
                Some(json!({"dataset_id": ds.id, "database_mode": "reuse", "binding": binding})),
            )?;
            // The footprint of the loaded data, at rest.
            self.footprint("at-rest")?;
            return Ok(());
        }
        if self.target.is_managed() {
            self.target.check_binding_data(
                &binding.dataset_id,
                &binding.uncompressed_sha256,
                mode,
            )?;
        }
        // The binding is cleared before a reset drops anything.
        // Before anything is dropped or started: a changed loader stops the run here.
        let loader =
            integrity::verified_binary(env, self.target.product.tsbs_loader(), &mut self.run)?;
        if mode == DatabaseMode::Reset {
            self.target.clear_binding()?;
        }
        self.start_server()?;
        // Other people's sessions are ended only on a server tsbsctl manages.
        let before_load = if self.target.is_managed() {
            self.product_step("before-load", |b| {
                b.target
                    .product
                    .before_load(&b.endpoint(), b.target.database())
            })?
        } else {
            None
        };
        let w = self.run.manifest.workload.benchmark();
        let workers = w.map_or(1, |w| w.load_workers) as u32;
        let batch = w.map_or(3000, |w| w.batch_size) as u32;
        let attempt = self.run.next_attempt("load")?;
        let (log, log_rel) = self.run.log(&format!("load-{attempt:03}.log"));
        let (results, results_rel) = self.run.result(&format!("load-{attempt:03}.json"));
        // Always streamed through tsbsctl, so the bytes the loader reads are hashed (#7).
        let input = tsbs::LoadInput::Stdin;
        let (auth, admin) = self.target.tokens();
        let urls = self.target.urls_with(&self.endpoint());
        let mut target = self.target.product.load_target(&ToolOptions {
            no_sync: self.req.no_sync,
            accept_partial: self.req.accept_partial,
            auth_token: auth,
            admin_token: admin,
            chunk_time: self.req.chunk_time.clone(),
            partitions: self.req.partitions,
        });
        target.connection = self.target.product.load_connection(&urls)?;
        let spec = tsbs::LoadSpec {
            binary: loader,
            target,
            urls,
            input,
            database: self.target.database().to_string(),
            batch_size: batch,
            workers,
            results_file: results,
            mode,
            confirm_reset: self.req.confirm_reset.clone().or_else(|| {
                (mode == DatabaseMode::Reset).then(|| self.target.database().to_string())
            }),
        };
        let cmd = tsbs::load_command(&spec)?;
        self.run.begin(
            "load",
            attempt,
            Some(&log_rel),
            Some(&results_rel),
            Some(json!({
                "dataset_id": ds.id,
                "database": self.target.database(),
                "database_mode": mode.as_str(),
                "workers": workers,
                "batch_size": batch,
                "input": if cmd.stdin_data { "stdin" } else { "file" },
                "command": cmd.redacted(),
                "stall": self.stall_policy().to_json(),
            })),
        )?;
        self.reporter().info(&format!(
            "loading {} rows of {} with {} ({} x {batch} rows); its reports every 10 s go to {}",
            sf.rows,
            ds.id,
            cmd.tool(),
            crate::output::count_of(workers, "worker"),
            log.display()
        ));
        let stdin = if cmd.stdin_data {
            Some(sf.open_uncompressed()?)
        } else {
            None
        };
        let ran = self.run_watched(
            &cmd,
            &log,
            stdin,
            "load",
            attempt,
            watch::Counting::Rows,
            "load",
            Some(sf.rows),
        )?;
        let (end, usage) = (ran.end, ran.usage);
        let log_text = crate::fsutil::read_log(&log);
        let status = self.tool_exit("load", attempt, end, "the load", &log)?;
        match tsbs::load_outcome(&cmd.tool(), status, &log_text, &spec.results_file) {
            Ok(r) => {
                let fed = ran.fed.unwrap_or_default();
                let input = json!({
                    "bytes": fed.bytes,
                    "sha256": fed.sha256,
                    "expected_sha256": sf.uncompressed_sha256,
                    "matches_manifest": fed.sha256.as_deref() == Some(sf.uncompressed_sha256.as_str()),
                });
                if let Err(e) = check_fed(&fed, sf) {
                    self.run.end(
                        "load",
                        attempt,
                        Status::Failed,
                        Some(e.message.clone()),
                        Some(json!({"rows": r.rows, "metrics": r.metrics, "usage": usage, "input": input})),
                    )?;
                    return Err(e);
                }
                if let Some(d) = self.run.manifest.dataset.as_mut() {
                    d.loaded_sha256 = Some(fed.sha256.clone());
                }
                self.run.save()?;
                self.run.end(
                    "load",
                    attempt,
                    Status::Completed,
                    None,
                    Some(json!({"rows": r.rows, "metrics": r.metrics, "usage": usage, "input": input})),
                )?;
            }
            Err(f) => {
                let gone = self.server_gone();
                let mut reason = match gone {
                    Some(g) => format!("{}; the server is gone: {g}", f.reason),
                    None => f.reason.clone(),
                };
                // A full disk under the server is the root cause of its refusals: name it (#18).
                let full = [self.target.data_dir(), Some(self.run.dir.clone())]
                    .into_iter()
                    .flatten()
                    .find_map(|d| crate::media::full_disk_note(&d));
                if let Some(note) = &full {
                    reason = format!(
                        "{note}; the loader stopped because the server refused writes: {reason}"
                    );
                }
                // On a full disk this record may not fit; the run's end records the step.
                let _ = self.run.end(
                    "load",
                    attempt,
                    Status::Failed,
                    Some(reason.clone()),
                    Some(json!({"failure": f, "disk_full": full})),
                );
                if full.is_some() {
                    return Err(Error::failed(format!("load failed: {reason}")).with_hint(format!(
                        "free space on that disk (or move the workspace to a larger one), then load again with --database-mode reset --confirm-reset {}; see {}",
                        self.target.database(),
                        log.display()
                    )));
                }
                let hint = if f.kind == tsbs::FailureKind::DatabaseExists {
                    format!(
                        "the SQL database already exists (an earlier, unfinished load?); load with --database-mode reset --confirm-reset {} to replace it; see {}",
                        self.target.database(),
                        log.display()
                    )
                } else {
                    format!("see {}", log.display())
                };
                return Err(Error::failed(format!("load failed: {reason}")).with_hint(hint));
            }
        }

        // Row count: the database must hold the dataset.
        self.row_count(sf)?;
        let scale = ds.spec.scale;
        let after = self.product_step("after-load", |b| {
            b.target.product.after_load(&crate::product::AfterLoad {
                endpoint: &b.endpoint(),
                database: b.target.database(),
                scale,
                before: before_load.as_ref(),
                token: b.target.external_token(),
            })
        })?;
        self.load_footprint = after.and_then(|v| v.get("footprint").cloned());
        // Footprint at rest after ingestion: stop first.
        if self.target.is_managed() {
            self.stop_server()?;
            self.footprint("after-load")?;
            self.target.set_binding(binding, &self.run)?;
            // Later phases of this run see the data as just loaded.
            self.run.manifest.data_state = self.target.data_state();
            self.run.save()?;
        } else {
            // External: the product's SQL measure is the footprint (no data directory here).
            self.footprint("after-load")?;
        }
        Ok(())
    }

    /// Runs a product hook as step `name` when it has something to do (`Some`), recording
    /// what it returns; `None` records nothing.
    fn product_step(
        &mut self,
        name: &str,
        f: impl FnOnce(&Self) -> Result<Option<Value>>,
    ) -> Result<Option<Value>> {
        match f(self) {
            Ok(None) => Ok(None),
            Ok(Some(v)) => {
                let attempt = self.run.next_attempt(name)?;
                self.run.begin(name, attempt, None, None, None)?;
                self.run
                    .end(name, attempt, Status::Completed, None, Some(v.clone()))?;
                Ok(Some(v))
            }
            Err(e) => {
                let attempt = self.run.next_attempt(name)?;
                self.run.begin(name, attempt, None, None, None)?;
                self.run
                    .end(name, attempt, Status::Failed, Some(e.message.clone()), None)?;
                Err(e)
            }
        }
    }

    fn row_count(&mut self, sf: &StoredFormat) -> Result<()> {
        let attempt = self.run.next_attempt("row-count")?;
        self.run.begin("row-count", attempt, None, None, None)?;
        let endpoint = self.endpoint();
        // `--no-sync`: the last acknowledged rows show only after the next WAL flush.
        let unsynced = self
            .req
            .no_sync
            .then(|| self.target.product.unsynced_flush_interval())
            .flatten();
        let counted = if let Some(interval) = unsynced {
            let bound = settle::Bound::for_flush(interval);
            let target = &self.target;
            settle::count_settled(
                sf.rows,
                bound,
                &mut || target.count_rows_detailed(&endpoint, TABLE),
                &mut std::thread::sleep,
            )
            .map(|(n, how, mut wait)| {
                wait["flush_interval_source"] = json!(if target.is_managed() {
                    "the server's default: tsbsctl passes no --wal-flush-interval"
                } else {
                    "assumed: the server's default (an external server's setting is unknown)"
                });
                (n, how, Some(wait))
            })
        } else {
            self.target
                .count_rows_detailed(&endpoint, TABLE)
                .map(|(n, how)| (n, how, None))
        };
        match counted {
            Ok((actual, how, wait)) => {
                let ok = actual == sf.rows;
                let mut data =
                    json!({"table": TABLE, "expected": sf.rows, "actual": actual, "ok": ok});
                if let Some(h) = how {
                    data["method"] = h;
                }
                if let Some(w) = wait {
                    data["wait"] = w;
                }
                if ok {
                    self.run
                        .end("row-count", attempt, Status::Completed, None, Some(data))?;
                    Ok(())
                } else {
                    let r = format!(
                        "row count mismatch: table {TABLE} holds {actual} rows, the dataset has {}",
                        sf.rows
                    );
                    self.run.end(
                        "row-count",
                        attempt,
                        Status::Failed,
                        Some(r.clone()),
                        Some(data),
                    )?;
                    Err(Error::failed(r).with_hint(
                        "the load did not store every row; look at the load and server logs, then load again with --database-mode reset --confirm-reset NAME",
                    ))
                }
            }
            Err(e) => {
                self.run.end(
                    "row-count",
                    attempt,
                    Status::Failed,
                    Some(e.message.clone()),
                    None,
                )?;
                Err(e)
            }
        }
    }

    fn footprint(&mut self, when: &str) -> Result<()> {
        let Some(dir) = self.target.data_dir() else {
            // An external server: only what the product measured over SQL, if anything.
            let Some(Value::Object(mut m)) = self.load_footprint.clone() else {
                return Ok(());
            };
            let attempt = self.run.next_attempt("footprint")?;
            self.run.begin("footprint", attempt, None, None, None)?;
            m.insert("when".into(), json!(when));
            m.insert("data_dir".into(), Value::Null);
            m.insert("server_stopped".into(), json!(false));
            return self.run.end(
                "footprint",
                attempt,
                Status::Completed,
                None,
                Some(Value::Object(m)),
            );
        };
        let attempt = self.run.next_attempt("footprint")?;
        self.run.begin("footprint", attempt, None, None, None)?;
        let f = footprint::measure_for(self.target.product.as_ref(), &dir)?;
        let mut v = f.record();
        // InfluxDB 3: the files on disk say which storage engine the server used.
        if self
            .run
            .manifest
            .target
            .extra
            .get("server_settings")
            .is_some_and(Value::is_object)
        {
            let engine = if f.pt_files > 0 {
                Some("upgraded (.pt files)")
            } else if f.wal_files + f.data_files > 0 {
                Some("parquet")
            } else {
                None
            };
            if let Some(e) = engine {
                let st = &mut self.run.manifest.target.extra["server_settings"];
                st["storage_engine"] = json!(e);
                st["storage_engine_source"] = json!("data directory layout");
                self.run.save()?;
            }
        }
        v["when"] = json!(when);
        v["data_dir"] = json!(dir);
        v["server_stopped"] = json!(self.server.is_none());
        v["after_forced_stop"] = json!(self.forced_stop);
        // Neither product flushes the WAL to data files on shutdown: say when it never did.
        v["never_flushed"] = footprint::never_flushed(&f);
        // The product's own measure (PostgreSQL: database size, table/index split, load WAL).
        if let Some(Value::Object(m)) = self.load_footprint.clone() {
            for (k, x) in m {
                if v.get(&k).is_none_or(Value::is_null) {
                    v[k] = x;
                }
            }
        }
        self.run
            .end("footprint", attempt, Status::Completed, None, Some(v))?;
        Ok(())
    }

    fn query(&mut self, env: &TsbsEnv, set: &QuerySet) -> Result<()> {
        // Before the server starts: a changed runner stops the run with nothing started.
        let binary =
            integrity::verified_binary(env, self.target.product.tsbs_runner(), &mut self.run)?;
        self.start_server()?;
        self.check_loaded_rows()?;
        // Products with SQL maintenance say where the data is (and flush when asked).
        if self.target.product.maintenance().is_some() {
            self.flush_then_locate()?;
        }
        let w = self.run.manifest.workload.benchmark();
        let workers = w.map_or(1, |w| w.query_workers) as u32;
        let (auth, _) = self.target.tokens();
        let total_types = set.files.len();
        // The first type that failed with the cause the latest failure had (said once).
        let mut last_failure: Option<(String, String)> = None;
        for (i, (qt, file)) in set.files.iter().enumerate() {
            crate::interrupt::check()?;
            // The bytes the runner is about to read are the ones the set's manifest records (#7).
            let sha = verify_query_file(qt, file)?;
            let file_check = self.target.product.check_query_file(&file.path)?;
            if let Some(reason) = self.server_gone() {
                return Err(Error::failed(format!("the server died: {reason}")));
            }
            let step = format!("query:{qt}");
            let attempt = self.run.next_attempt(&step)?;
            let (log, log_rel) = self.run.log(&format!("query-{qt}-{attempt:03}.log"));
            let (results, results_rel) = self.run.result(&format!("query-{qt}-{attempt:03}.json"));
            let queries = set.counts().get(qt).copied();
            let urls = self.target.urls_with(&self.endpoint());
            let mut target = self.target.product.query_target(&ToolOptions {
                auth_token: auth.clone(),
                ..ToolOptions::default()
            });
            target.connection = self.target.product.query_connection(&urls, queries)?;
            let spec = tsbs::QuerySpec {
                binary: binary.clone(),
                target,
                file: file.path.clone(),
                database: self.target.database().to_string(),
                urls,
                workers,
                results_file: results,
            };
            let mut cmd = tsbs::query_command(&spec)?;
            // About 100 progress blocks per type (on stderr, before the final report).
            cmd.set_print_interval(queries.map_or(1, |n| n.div_ceil(100).max(1)));
            let mut data = json!({
                "query_type": qt,
                "file": file.path,
                "file_bytes": file.bytes,
                "file_sha256": sha,
                "file_sha256_verified": true,
                "queries": queries,
                "workers": workers,
                "command": cmd.redacted(),
                "stall": self.stall_policy().to_json(),
            });
            if let Some(c) = file_check {
                data["file_check"] = c;
            }
            self.run.begin(
                &step,
                attempt,
                Some(&log_rel),
                Some(&results_rel),
                Some(data),
            )?;
            let label = format!("query type {}/{total_types} {qt}", i + 1);
            self.reporter().info(&label);
            let ran = self.run_watched(
                &cmd,
                &log,
                None,
                &step,
                attempt,
                watch::Counting::Queries,
                &label,
                queries,
            )?;
            let (end, usage) = (ran.end, ran.usage);
            let status = self.tool_exit(&step, attempt, end, &format!("query type {qt}"), &log)?;
            let text = crate::fsutil::read_log(&log);
            match tsbs::query_outcome(&cmd.tool(), status, &text, &spec.results_file) {
                Ok(r) => self.run.end(
                    &step,
                    attempt,
                    Status::Completed,
                    None,
                    Some(json!({"count": r.all.count, "mean_ms": r.all.mean_ms, "usage": usage})),
                )?,
                // One type failing (e.g. a non-200) does not stop the others.
                Err(f) => {
                    let cause = same_cause(&f.reason);
                    match &last_failure {
                        Some((first, c)) if *c == cause => self.reporter().warn(&format!(
                            "query type {qt} failed: the same cause as {first}"
                        )),
                        _ => {
                            self.reporter()
                                .warn(&format!("query type {qt} failed: {}", f.reason));
                            last_failure = Some((qt.clone(), cause));
                        }
                    }
                    self.run.end(
                        &step,
                        attempt,
                        Status::Failed,
                        Some(f.reason.clone()),
                        Some(json!({"failure": f})),
                    )?
                }
            }
        }
        Ok(())
    }

    fn analyze(&mut self, env: &TsbsEnv, set: &QuerySet) -> Result<()> {
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
            let (end, _) = exec::run_tool(&cmd, &cwd, &log, None, &mut || self.server_gone())?;
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

    /// Stops the server, records the end state, writes the summary, and turns failures into
    /// the command's error.
    fn conclude(mut self, result: Result<()>) -> Result<Outcome> {
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

/// The stream the loader read must be the dataset the manifest describes, all of it.
fn check_fed(fed: &exec::Fed, sf: &StoredFormat) -> Result<()> {
    let hint = format!(
        "regenerate the dataset with `tsbsctl data generate --dataset-id {} --format {} --regenerate`, then load again with --database-mode reset",
        sf.dataset_id, sf.format
    );
    match &fed.sha256 {
        Some(got) if *got == sf.uncompressed_sha256 => Ok(()),
        Some(got) => Err(Error::integrity(format!(
            "the dataset streamed to the loader ({}, {} bytes) has SHA-256 {got}, its manifest says {}: the file changed on disk",
            sf.path.display(),
            fed.bytes,
            sf.uncompressed_sha256
        ))
        .with_hint(hint)),
        None => Err(Error::integrity(format!(
            "the loader ended without reading all of {} ({} bytes read{}), so what it loaded is not known",
            sf.path.display(),
            fed.bytes,
            fed.error.as_deref().map(|e| format!(": {e}")).unwrap_or_default()
        ))
        .with_hint(hint)),
    }
}

/// Hashes one query file and compares it with the query set's manifest.
fn verify_query_file(qt: &str, file: &queryset::QueryFile) -> Result<String> {
    let (sha, bytes) = crate::hash::sha256_file(&file.path, &crate::output::NoProgress)?;
    if sha != file.sha256 || bytes != file.bytes {
        let set_dir = file
            .path
            .parent()
            .and_then(Path::parent)
            .unwrap_or(&file.path);
        return Err(Error::integrity(format!(
            "query file {} (type {qt}) has SHA-256 {sha} ({bytes} bytes), the query set's manifest says {} ({} bytes)",
            file.path.display(),
            file.sha256,
            file.bytes
        ))
        .with_hint(format!(
            "remove {} and run again to generate the query set anew",
            set_dir.display()
        )));
    }
    Ok(sha)
}

/// A failure reason without what differs between two failures of one cause (the server's
/// per-request execution time).
fn same_cause(reason: &str) -> String {
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

fn describe(code: Option<i32>, signal: Option<i32>) -> String {
    match (code, signal) {
        (Some(c), _) => format!("exit code {c}"),
        (None, Some(s)) => format!("signal {s}"),
        _ => "unknown status".into(),
    }
}

/// Token values from the environment variables the flags name (never from flags).
pub fn token_from_env(var: Option<&str>, default: &str) -> Result<Option<Secret>> {
    let name = var.unwrap_or(default);
    match std::env::var(name) {
        Ok(v) if !v.is_empty() => Ok(Some(Secret::new(v))),
        Ok(_) | Err(std::env::VarError::NotPresent) => {
            if var.is_some() {
                // Say which: set but empty is a different mistake (trial-run #23).
                let state = if std::env::var_os(name).is_some() {
                    "is empty"
                } else {
                    "is not set"
                };
                Err(
                    Error::invalid(format!("environment variable {name} {state}"))
                        .with_hint(format!("export {name}=<token>, or drop the flag naming it")),
                )
            } else {
                Ok(None)
            }
        }
        Err(_) => Err(
            Error::invalid(format!("environment variable {name} is not valid UTF-8"))
                .with_hint("set it to the token text"),
        ),
    }
}

/// The path of a file relative to a run directory (for summaries).
pub fn rel(run: &Path, p: &Path) -> String {
    p.strip_prefix(run)
        .map(|r| r.display().to_string())
        .unwrap_or_else(|_| p.display().to_string())
}
