//! The query phase: every query type of the query set once per pass (`--passes`, default 1:
//! the types in the same order each pass, on the same server), its file re-hashed against the
//! set's manifest first. One type failing does not stop the others. Each pass of a type is an
//! attempt of its step `query:<type>`, so a summary aggregates the passes as it always
//! aggregated attempts, and older summaries read the same. With `--cold`, each type starts on
//! a restarted server with the OS page cache dropped (`coldstart`).

use std::path::{Path, PathBuf};

use serde_json::{json, Value};

use crate::dataset::Dataset;
use crate::environment::TsbsEnv;
use crate::error::{Error, Result};
use crate::output::{UrlUser, Warning};
use crate::precision::{Pooled, MAX_BATCHES};
use crate::product::ToolOptions;
use crate::queryset::{self, QuerySet};
use crate::run::data::{self, QueryBatchData, QueryData, QueryEnded};
use crate::run::Status;
use crate::tsbs;

use super::super::conclude::same_cause;
use super::super::exec::{Input, ToolEnd, ToolRun};
use super::super::inputfile::WatchedFile;
use super::super::plan::{Sampling, Workload};
use super::super::{integrity, watch, Bench};

impl Bench<'_> {
    pub(in crate::bench) fn query(
        &mut self,
        env: &TsbsEnv,
        w: &Workload,
        ds: &Dataset,
        set: &QuerySet,
    ) -> Result<()> {
        // Before the server starts: a changed runner stops the run with nothing started.
        let binary =
            integrity::verified_binary(env, self.target.product.tsbs_runner(), &mut self.run)?;
        self.start_server()?;
        self.check_loaded_rows()?;
        // What the product does on the started server before its queries, given its resolved
        // flag values (GreptimeDB: the flush when asked, the compaction it starts, where the
        // data is).
        if let Some(op) = self
            .target
            .product
            .bench_ext()
            .and_then(|x| x.before_queries)
        {
            let plan = self.plan;
            (op.run)(self, &plan.product)?;
        }
        let workers = w.query_workers;
        let total_types = set.files.len();
        let urls_in_use = self.target.urls_in_use(workers);
        if let Some(used) = &urls_in_use {
            let n = self.target.urls_with(&self.endpoint()).len();
            if used.len() < n {
                self.reporter().warning(&Warning::UrlsUnused {
                    tool: UrlUser::QueryRunner,
                    workers,
                    used: used.len(),
                    urls: n,
                });
            }
        }
        self.machine_check("the queries")?;
        // The first type that failed with the cause the latest failure had (said once).
        let mut last_failure: Option<(String, String)> = None;
        let passes = self.plan.queries.passes;
        let precision = match self.plan.queries.sampling {
            Sampling::Fixed => None,
            Sampling::UntilPrecise(p) => Some(p),
        };
        for pass in 1..=passes {
            for (i, (qt, file)) in set.files.iter().enumerate() {
                crate::interrupt::check()?;
                if self.plan.queries.cold {
                    self.cold_start(qt, pass)?;
                }
                // The bytes the runner is about to read are the ones the set's manifest records (#7),
                // and stay so while it reads them: watched from before the hash until it is done.
                let watched = WatchedFile::open(&file.path)?;
                let sha = verify_query_file(qt, file)?;
                let file_check = self.target.product.check_query_file(&file.path)?;
                let stall = self.stall_policy().to_json();
                if let Some(reason) = self.server_gone() {
                    return Err(Error::failed(format!("the server died: {reason}")));
                }
                let file_path = file.path.clone();
                let mut label = format!("query type {}/{total_types} {qt}", i + 1);
                if passes > 1 {
                    label = format!("pass {pass}/{passes}, {label}");
                }
                let queries = set.counts().get(qt).copied();
                let type_started = std::time::Instant::now();
                let ooms_before = self.query_engine_ooms();
                let mut q = self.run_query_file(
                    QueryFileRun {
                        kind: "query",
                        stem: format!("query-{qt}"),
                        qt,
                        binary: &binary,
                        file: &file.path,
                        watched,
                        queries,
                        workers,
                        per_query_latencies: true,
                        extra: Vec::new(),
                        label,
                    },
                    |cmd| {
                        data::value(&QueryData {
                            query_type: Some(qt.clone()),
                            file: Some(file.path.clone()),
                            file_bytes: Some(file.bytes),
                            file_sha256: Some(sha),
                            file_sha256_verified: Some(true),
                            queries: Some(queries),
                            workers: Some(workers.into()),
                            command: Some(cmd.redacted()),
                            stall: Some(stall),
                            file_check,
                            urls_in_use: urls_in_use.clone(),
                            pass: (passes > 1).then_some(pass),
                            passes: (passes > 1).then_some(passes),
                            end: QueryEnded::default(),
                        })
                    },
                )?;
                let (step, attempt) = (q.step.clone(), q.attempt);
                let judged = self.judge_query_file(qt, &file_path, &mut q)?;
                let ooms = ooms_before.and_then(|before| {
                    let after = self.query_engine_ooms()?;
                    Some(EngineOoms { before, after })
                });
                match judged {
                    QueryFileEnd::ServerDied => continue,
                    QueryFileEnd::Done(r) => {
                        self.run.end(
                            &step,
                            attempt,
                            Status::Completed,
                            None,
                            Some(data::value(&QueryEnded {
                                count: Some(r.all.count),
                                mean_ms: Some(r.all.mean_ms),
                                usage: Some(json!(q.ran.usage)),
                                machine: Some(q.machine.clone()),
                                query_engine_ooms: ooms.as_ref().map(EngineOoms::record),
                                ..QueryEnded::default()
                            })),
                        )?;
                        if let Some(p) = precision {
                            let first = Batch {
                                qt,
                                pass,
                                binary: &binary,
                                workers,
                                started: type_started,
                            };
                            self.more_batches(env, ds, set, &first, &r.all, p)?;
                        }
                    }
                    // One type failing (e.g. a non-200) does not stop the others.
                    QueryFileEnd::Failed(mut f) => {
                        // The server's query engine ran out of its memory pool
                        // while the type failed: that is why, whatever the runner saw.
                        if let Some(o) = ooms.as_ref().filter(|o| o.after > o.before) {
                            f.reason = format!(
                                "out of memory: the server's query engine ran out of its memory pool {} time(s) during this type ({} {} -> {}); the runner: {}",
                                o.after - o.before,
                                self.target.product.query_oom_series().unwrap_or("its OOM counter"),
                                o.before,
                                o.after,
                                f.reason
                            );
                        }
                        let cause = same_cause(&f.reason);
                        match &last_failure {
                            Some((first, c)) if *c == cause => {
                                self.reporter().warning(&Warning::QueryTypeFailedAsBefore {
                                    query_type: qt.clone(),
                                    first: first.clone(),
                                })
                            }
                            _ => {
                                self.reporter().warning(&Warning::QueryTypeFailed {
                                    query_type: qt.clone(),
                                    reason: f.reason.clone(),
                                });
                                last_failure = Some((qt.clone(), cause));
                            }
                        }
                        let mut end = failed(&f);
                        if let Some(o) = &ooms {
                            end["query_engine_ooms"] = o.record();
                        }
                        self.run.end(
                            &step,
                            attempt,
                            Status::Failed,
                            Some(f.reason.clone()),
                            Some(end),
                        )?
                    }
                }
            }
        }
        if self.plan.queries.check_answers {
            self.check_answers(&binary, set)?;
        }
        Ok(())
    }
}

/// The server's count of the times its query engine ran out of its memory pool, before and
/// after one query type.
struct EngineOoms {
    before: u64,
    after: u64,
}

impl EngineOoms {
    fn record(&self) -> serde_json::Value {
        json!({"before": self.before, "after": self.after, "refused": self.after.saturating_sub(self.before)})
    }
}

impl Bench<'_> {
    /// The server's own count of the times its query engine ran out of memory, where its
    /// product serves one ([`crate::product::ExternalServer::query_oom_series`]); managed or
    /// external, through its metrics. `None`: no such counter, or no answer.
    fn query_engine_ooms(&self) -> Option<u64> {
        let series = self.target.product.query_oom_series()?;
        let path = self.target.product.metrics_path()?;
        let url = format!("{}{path}", self.endpoint().trim_end_matches('/'));
        let token = self.target.external_token().map(str::to_string);
        crate::sampler::read_metric(
            &url,
            &token,
            series,
            None,
            std::time::Duration::from_secs(5),
        )
    }
}

/// What differs between the runner's three uses (the timed passes, the `--target-precision`
/// batches, the `--check-answers` pass): everything else about starting it is
/// [`Bench::run_query_file`].
pub(super) struct QueryFileRun<'a> {
    /// The step is `<kind>:<type>`: `query`, `query-batch`, `answers`.
    pub kind: &'a str,
    /// The log and results files are `<stem>-<attempt>.log|json` (`query-<type>`, ...).
    pub stem: String,
    pub qt: &'a str,
    pub binary: &'a Path,
    pub file: &'a Path,
    /// Opened by the caller before it hashed the file, so the bytes it checked are the ones read.
    pub watched: WatchedFile,
    pub queries: Option<u64>,
    pub workers: u32,
    /// Ask the runner for each query's latency when it can give them in file order.
    pub per_query_latencies: bool,
    /// More runner flags (`--print-responses`).
    pub extra: Vec<tsbs::ToolArg>,
    pub label: String,
}

/// A runner that ran as step `step`, attempt `attempt`.
pub(super) struct QueryFileRan {
    pub step: String,
    pub attempt: u32,
    pub log: PathBuf,
    pub results: PathBuf,
    pub tool: String,
    pub ran: ToolRun,
    /// What other processes did while it ran.
    pub machine: crate::run::data::MachineRecord,
}

/// How a timed runner ended, once judged.
pub(super) enum QueryFileEnd {
    Done(Box<tsbs::QueryRunResult>),
    Failed(tsbs::ToolFailure),
    /// The managed server died under it: recorded as the type's result (OOM or crash) and
    /// started again.
    ServerDied,
}

impl Bench<'_> {
    /// Starts the query runner over one query file as a step: names the step, its attempt,
    /// log and results, builds the target with the token, the connection, the command, records
    /// the step's start with `data` (given the redacted command, so each caller keeps its
    /// record's fields in their order) and runs it watched.
    pub(super) fn run_query_file(
        &mut self,
        r: QueryFileRun,
        data: impl FnOnce(&tsbs::TsbsCommand) -> Value,
    ) -> Result<QueryFileRan> {
        let step = format!("{}:{}", r.kind, r.qt);
        let attempt = self.run.next_attempt(&step)?;
        let (log, log_rel) = self.run.log(&format!("{}-{attempt:03}.log", r.stem));
        let (results, results_rel) = self.run.result(&format!("{}-{attempt:03}.json", r.stem));
        let (auth, _) = self.target.tokens();
        let urls = self.target.urls_with(&self.endpoint());
        let mut target = self.target.product.query_target(&ToolOptions {
            auth_token: auth,
            admin_token: None,
            values: self.plan.product.clone(),
        });
        target.connection = self
            .target
            .product
            .query_connection(&urls, r.queries, r.workers)?;
        // Each query's latency, for `runs compare` to pair queries by index: with one
        // worker the runner's debug lines come in file order.
        if r.per_query_latencies && target.per_query_latencies && r.workers == 1 {
            target.args.push(tsbs::ToolArg::Flag("debug", "1".into()));
        }
        target.args.extend(r.extra);
        let spec = tsbs::QuerySpec {
            binary: r.binary.to_path_buf(),
            target,
            file: r.file.to_path_buf(),
            database: self.target.database().to_string(),
            urls,
            workers: r.workers,
            results_file: results.clone(),
        };
        let mut cmd = tsbs::query_command(&spec)?;
        // About 100 progress blocks per run (on stderr, before the final report).
        cmd.set_print_interval(r.queries.map_or(1, |n| n.div_ceil(100).max(1)));
        self.run.begin(
            &step,
            attempt,
            Some(&log_rel),
            Some(&results_rel),
            Some(data(&cmd)),
        )?;
        self.reporter().info(&r.label);
        let machine = super::super::quiet::Reading::now(self.server.as_ref().map(|s| s.pid()));
        let ran = self.run_watched(
            &cmd,
            &log,
            Input::File(r.watched),
            &step,
            attempt,
            watch::Counting::Queries,
            &r.label,
            r.queries,
        )?;
        let machine = self.machine_since(&machine);
        Ok(QueryFileRan {
            step,
            attempt,
            log,
            results,
            tool: cmd.tool(),
            ran,
            machine,
        })
    }

    /// Judges a timed runner's end: a query file changed under it is an integrity error, a
    /// managed server that died under it is the type's result, any other end that was not an
    /// exit is propagated, and an exit is read with [`tsbs::query_outcome`]. The step is left
    /// open for `Done` and `Failed`, for the caller's record.
    fn judge_query_file(
        &mut self,
        qt: &str,
        file: &Path,
        q: &mut QueryFileRan,
    ) -> Result<QueryFileEnd> {
        let (step, attempt) = (q.step.clone(), q.attempt);
        if let Some(change) = q
            .ran
            .file
            .take()
            .map(|mut f| f.check())
            .transpose()?
            .flatten()
        {
            let r = format!(
                "query file {} (type {qt}) changed while the runner read it: {change}",
                file.display()
            );
            self.run
                .end(&step, attempt, Status::Failed, Some(r.clone()), None)?;
            return Err(Error::integrity(r).with_hint(
                "nothing may write to a query set while a run reads it; remove the query set and run again to generate it anew",
            ));
        }
        // A managed server that died under one query type is that type's result (OOM when
        // the evidence says so, else a crash), as in the published tables; it is started
        // again for the types still to run.
        let died = match &q.ran.end {
            ToolEnd::ServerGone(reason) => Some(reason.clone()),
            // The runner may notice first (the real one panics on a refused connection).
            ToolEnd::Exited(s) if !s.success() => self.server_gone_soon(),
            _ => None,
        };
        if let (Some(reason), true) = (died, self.target.is_managed()) {
            self.server_died_under(qt, &step, attempt, &reason)?;
            return Ok(QueryFileEnd::ServerDied);
        }
        let end = std::mem::replace(&mut q.ran.end, ToolEnd::Interrupted);
        let status = self.tool_exit(&step, attempt, end, &format!("query type {qt}"), &q.log)?;
        let text = crate::fsutil::read_log(&q.log);
        Ok(
            match tsbs::query_outcome(&q.tool, status, &text, &q.results) {
                Ok(r) => QueryFileEnd::Done(Box::new(r)),
                Err(f) => QueryFileEnd::Failed(f),
            },
        )
    }
}

/// The query type whose batches `--target-precision` adds, in one pass.
struct Batch<'a> {
    qt: &'a str,
    pass: u32,
    binary: &'a Path,
    workers: u32,
    /// When the type's first batch started: the budget counts from there.
    started: std::time::Instant,
}

impl Bench<'_> {
    /// `--target-precision`: batches of fresh queries of type `b.qt` after its first (the
    /// query set's file, whose statistics are `first`), until the 95% interval of the mean
    /// over all of them is narrow enough, the budget would be overrun by the next batch, or
    /// [`MAX_BATCHES`] ran. Each batch is a step `query-batch:<type>`; how it ended is a step
    /// `precision:<type>` (one per pass) that summary.md reports.
    fn more_batches(
        &mut self,
        env: &TsbsEnv,
        ds: &Dataset,
        set: &QuerySet,
        b: &Batch,
        first: &tsbs::LatencyStats,
        p: super::super::request::Precision,
    ) -> Result<()> {
        let qt = b.qt;
        let mut pooled = Pooled::default();
        pooled.add(
            first.count,
            first.mean_ms,
            first.stddev_ms.unwrap_or(f64::NAN),
        );
        let min = first.count;
        let mut batches = 1u32;
        let mut batch_sets = Vec::new();
        let stop = loop {
            if pooled.stddev_ms().is_none_or(f64::is_nan) {
                break "the runner reported no spread to judge the interval by";
            }
            if pooled.reached(p.target) {
                break "reached";
            }
            if batches >= MAX_BATCHES {
                break "batch limit";
            }
            // What one query has cost so far (runner starts included) says whether the next
            // batch fits in what is left of the budget.
            let spent = b.started.elapsed().as_secs_f64();
            let per_query = spent / pooled.count.max(1) as f64;
            let left = p.budget.as_secs_f64() - spent;
            let fits = if per_query > 0.0 {
                (left / per_query).floor().max(0.0) as u64
            } else {
                u64::MAX
            };
            let n = pooled.next_batch(p.target, min).min(fits);
            if n < 2 || n < min.min(10) {
                break "budget";
            }
            batches += 1;
            let extra = self.batch_set(env, ds, set, qt, n, batches)?;
            let file = extra.files[qt].clone();
            batch_sets.push(json!({"batch": batches, "query_set_id": extra.id, "queries": n}));
            match self.run_batch(b, &file, n, batches)? {
                Some(stats) => pooled.add(
                    stats.count,
                    stats.mean_ms,
                    stats.stddev_ms.unwrap_or(f64::NAN),
                ),
                None => break "a batch failed",
            }
        };
        let half = pooled.half_width();
        let reached = stop == "reached";
        self.reporter().event(&crate::output::Event::Precision {
            query_type: qt.to_string(),
            target_pct: p.target * 100.0,
            reached,
            stop: stop.to_string(),
            half_width: half,
            queries: pooled.count,
            batches,
        });
        let attempt = self.run.next_attempt(&format!("precision:{qt}"))?;
        self.run.instant(
            &format!("precision:{qt}"),
            attempt,
            Status::Completed,
            None,
            Some(json!({
                "pass": b.pass,
                "target_percent": p.target * 100.0,
                "budget_seconds": p.budget.as_secs_f64(),
                "batches": batches,
                "queries": pooled.count,
                "mean_ms": pooled.mean_ms,
                "stddev_ms": pooled.stddev_ms(),
                "half_width_percent": half.map(|h| h * 100.0),
                "reached": reached,
                "stop": stop,
                "seconds": b.started.elapsed().as_secs_f64(),
                "batch_sets": batch_sets,
            })),
        )
    }

    /// The query set of extra batch `batch` of type `qt` with `n` queries (generated the
    /// first time, reused after; see [`queryset::batch_spec`]).
    fn batch_set(
        &mut self,
        env: &TsbsEnv,
        ds: &Dataset,
        set: &QuerySet,
        qt: &str,
        n: u64,
        batch: u32,
    ) -> Result<QuerySet> {
        let qenv = env.clone();
        let mut q_gen = move || integrity::verified_generator(&qenv, "tsbs_generate_queries");
        let counts = std::collections::BTreeMap::from([(qt.to_string(), n)]);
        let log_dir = self.run.dir.join("logs");
        queryset::ensure_query_set(
            &self.root,
            &queryset::QuerySetRequest {
                dataset: ds,
                format: set.format,
                counts: &counts,
                log_dir: &log_dir,
                pinned_manifest_sha256: None,
                full_verify: false,
                batch: Some(batch),
            },
            &mut q_gen,
            self.ctx.reporter.as_ref(),
        )
    }

    /// Runs one extra batch as step `query-batch:<type>`; its statistics, or `None` when it
    /// failed (recorded; a server that died under it is the type's result, as for a first
    /// batch, and is started again).
    fn run_batch(
        &mut self,
        b: &Batch,
        file: &queryset::QueryFile,
        n: u64,
        batch: u32,
    ) -> Result<Option<tsbs::LatencyStats>> {
        let qt = b.qt;
        let watched = WatchedFile::open(&file.path)?;
        let sha = verify_query_file(qt, file)?;
        if let Some(reason) = self.server_gone() {
            return Err(Error::failed(format!("the server died: {reason}")));
        }
        let mut q = self.run_query_file(
            QueryFileRun {
                kind: "query-batch",
                stem: format!("query-{qt}-batch"),
                qt,
                binary: b.binary,
                file: &file.path,
                watched,
                queries: Some(n),
                workers: b.workers,
                per_query_latencies: false,
                extra: Vec::new(),
                label: format!("query type {qt}, batch {batch} ({n} queries)"),
            },
            |cmd| {
                data::value(&QueryBatchData {
                    query_type: Some(qt.to_string()),
                    pass: Some(b.pass),
                    batch: Some(batch),
                    file: Some(file.path.clone()),
                    file_sha256: Some(sha),
                    queries: Some(n),
                    workers: Some(b.workers.into()),
                    command: Some(cmd.redacted()),
                    end: QueryEnded::default(),
                })
            },
        )?;
        let (step, attempt) = (q.step.clone(), q.attempt);
        match self.judge_query_file(qt, &file.path, &mut q)? {
            QueryFileEnd::ServerDied => Ok(None),
            QueryFileEnd::Done(r) => {
                self.run.end(
                    &step,
                    attempt,
                    Status::Completed,
                    None,
                    Some(data::value(&QueryEnded {
                        count: Some(r.all.count),
                        mean_ms: Some(r.all.mean_ms),
                        stddev_ms: Some(r.all.stddev_ms),
                        min_ms: Some(r.all.min_ms),
                        max_ms: Some(r.all.max_ms),
                        usage: Some(json!(q.ran.usage)),
                        machine: Some(q.machine.clone()),
                        ..QueryEnded::default()
                    })),
                )?;
                Ok(Some(r.all))
            }
            QueryFileEnd::Failed(f) => {
                self.reporter().warning(&Warning::QueryBatchFailed {
                    query_type: qt.to_string(),
                    batch,
                    reason: f.reason.clone(),
                });
                self.run.end(
                    &step,
                    attempt,
                    Status::Failed,
                    Some(f.reason.clone()),
                    Some(failed(&f)),
                )?;
                Ok(None)
            }
        }
    }

    /// `Some(reason)` when the managed server is gone or goes within a second (a process the
    /// kernel is killing may not be reapable yet when the runner already failed).
    fn server_gone_soon(&mut self) -> Option<String> {
        for _ in 0..10 {
            if let Some(r) = self.server_gone() {
                return Some(r);
            }
            std::thread::sleep(std::time::Duration::from_millis(100));
        }
        None
    }

    /// Records query type `qt` as ended by the server's death (`reason`: its exit, with the
    /// OOM evidence when there is some), then starts the server again, timing the restart.
    fn server_died_under(
        &mut self,
        qt: &str,
        step: &str,
        attempt: u32,
        reason: &str,
    ) -> Result<()> {
        let oom = reason.contains("out of memory");
        let what = if oom { "OOM" } else { "server crashed" };
        let r = format!("the server died during query type {qt} ({what}): {reason}");
        self.run.end(
            step,
            attempt,
            Status::Failed,
            Some(r.clone()),
            Some(data::value(&QueryEnded {
                server_died: Some(json!({"result": what, "evidence": reason})),
                ..QueryEnded::default()
            })),
        )?;
        self.reporter().warning(&Warning::ServerDiedUnder {
            query_type: qt.to_string(),
            what: what.to_string(),
        });
        // Records the dead server's end (its events, the OOM evidence) as its own step.
        self.stop_server()?;
        let started = std::time::Instant::now();
        self.start_server()?;
        let attempt = self.run.next_attempt("server-restart")?;
        self.run.instant(
            "server-restart",
            attempt,
            Status::Completed,
            None,
            Some(json!({
                "after_query_type": qt,
                "seconds": started.elapsed().as_secs_f64(),
            })),
        )?;
        Ok(())
    }
}

/// The end of a query runner's step that failed: why.
fn failed(f: &tsbs::ToolFailure) -> Value {
    data::value(&QueryEnded {
        failure: Some(json!(f)),
        ..QueryEnded::default()
    })
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
