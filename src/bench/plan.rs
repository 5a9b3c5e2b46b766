//! The resolved plan of a bench command (issue 23 §2; ripgrep's `HiArgs::from_low_args` is
//! the model): [`resolve`] is the one step from a [`Request`] (the flags as parsed, or as a
//! run recorded them for `runs rerun` and `runs resume`) to a [`Plan`] in which every rule
//! and default is applied: numbers with the product's and the profile's defaults, timeouts as
//! durations, the database mode, the query set's counts, the server's timing, the product's
//! resolved flag values (opaque to the core: the product's own code reads them). The phases,
//! the target and the preflight checks read the plan only; nothing downstream applies a
//! default.
//!
//! Resolution needs a few facts beyond the flags, and gets them here: the product's variant
//! (a managed workspace's manifest, so the target is opened, and locked, by this step), and
//! the dataset (its profile decides the write defaults, its use case the query types).
//!
//! What stays optional is optional in meaning, and says so: a phase that names no dataset
//! uses the workspace's, no `--confirm-reset` means none was given, no `--run-id` a time-based
//! id, no partitioning the loader's own table.

use std::collections::BTreeMap;
use std::time::Duration;

use super::target::{PlacePlan, Target, TargetPlan};
use super::{watch, Phase, Request, RerunPins, ResumePlan};
use crate::context::Ctx;
use crate::dataset::{Compression, Dataset, Profile};
use crate::error::{Error, Result};
use crate::paths::Root;
use crate::product::ext::{Operation, Values};
use crate::product::{Entry, Partitioning};
use crate::queryset;
use crate::server::cgroup::Shape;
use crate::server::Timing;
use crate::tsbs::{DatabaseMode, Secret};

/// Everything a bench command does, decided.
#[derive(Debug)]
pub struct Plan {
    pub phase: Phase,
    /// The state root, with the command's dataset root.
    pub root: Root,
    /// What the load does with an existing database (`create` unless given; a phase that
    /// does not load never uses it).
    pub mode: DatabaseMode,
    /// `--confirm-reset` as given (checked against the database by resolution).
    pub confirm_reset: Option<String>,
    /// How a newly generated dataset is stored (`None`: as stored already, else uncompressed).
    pub compression: Option<Compression>,
    pub queries: QueryPlan,
    pub stall: watch::StallPolicy,
    /// A busy machine before a measured phase fails the run.
    pub require_quiet: bool,
    pub server: ServerPlan,
    /// `--run-id` (`None`: a time-based id).
    pub run_id: Option<String>,
    /// The product's own flag values, resolved by the product (checks and defaults applied):
    /// read by the product's code only (its tool arguments, write settings, operations).
    pub product: Values,
    /// Every flag, as recorded in the run manifest.
    pub flags: serde_json::Value,
    /// `runs rerun`: the run this one reproduces, and the pins it must meet.
    pub rerun: Option<RerunPins>,
    /// `runs resume`: what the resumed run still has to do.
    pub resume: Option<ResumePlan>,
    /// What the phase works on.
    pub work: Work,
}

/// The query phase, decided.
#[derive(Debug, Clone, PartialEq)]
pub struct QueryPlan {
    /// How many times the query phase runs (1 unless `--passes`).
    pub passes: u32,
    /// Restart the server and drop the page cache before each query type.
    pub cold: bool,
    /// A verification pass after the timed ones.
    pub check_answers: bool,
    pub sampling: Sampling,
}

/// How many queries of a type run.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Sampling {
    /// The query set's count.
    Fixed,
    /// More batches until the mean is this precise, or the budget is spent
    /// (`--target-precision`, `--precision-budget`).
    UntilPrecise(super::request::Precision),
}

/// The managed server's timing and shape, decided.
#[derive(Debug, Clone, Copy)]
pub struct ServerPlan {
    /// The product's timing with `--startup-timeout` and `--stop-timeout` applied.
    pub timing: Timing,
    /// `--cpus` / `--memory` (`None`: the server runs in the host's shape).
    pub shape: Option<Shape>,
}

/// What the phase works on.
#[derive(Debug)]
pub enum Work {
    /// Load, query or analyze a dataset.
    Benchmark(Box<Workload>),
    /// The product's operation.
    Operation(&'static Operation),
}

/// The dataset and the numbers of a load/query/analyze run, decided.
#[derive(Debug)]
pub struct Workload {
    pub dataset: Dataset,
    pub profile: Profile,
    /// Query type -> queries (a resume: the run's own workload, plus the types it adds).
    pub counts: BTreeMap<String, u64>,
    /// The product's default for the profile unless given.
    pub load_workers: u32,
    pub batch_size: u32,
    /// 1 unless given.
    pub query_workers: u32,
    /// The table split into regions the product's values ask the load to create (`None`:
    /// the loader makes its own table).
    pub partitioning: Option<Partitioning>,
}

impl Plan {
    /// The benchmark workload (`None` for a maintenance run).
    pub fn workload(&self) -> Option<&Workload> {
        match &self.work {
            Work::Benchmark(w) => Some(w),
            Work::Operation(_) => None,
        }
    }
}

/// The target part of `req` (checked by [`super::validate`]).
fn target_plan(entry: &Entry, phase: Phase, req: &Request) -> Result<TargetPlan> {
    // The tokens are read before any variant is known: every variant reads the same ones.
    let any = (entry.make)(None)?;
    let (auth_token, admin_token) = match any.token_env_defaults() {
        Some((auth, admin)) => (
            read_token(req.auth_token_env.as_deref(), auth, any.secret_word())?,
            read_token(req.admin_token_env.as_deref(), admin, "token")?,
        ),
        None => (None, None),
    };
    let place = match &req.database_id {
        Some(id) => PlacePlan::Managed {
            database_id: id.clone(),
            database: req.database.clone(),
            runtime: req
                .runtime_version
                .clone()
                .map(|v| (v, req.confirm_runtime.clone())),
        },
        None => {
            let product = (entry.make)(req.variant.as_deref())?;
            // The database the --url names (PostgreSQL), else --database, else `benchmark`
            // (validation refused the two naming different ones).
            let mut named = None;
            for u in &req.urls {
                named = named.or(super::target::check_url(product.as_ref(), u)?);
            }
            PlacePlan::External {
                urls: req
                    .urls
                    .iter()
                    .map(|u| u.trim_end_matches('/').to_string())
                    .collect(),
                database: req
                    .database
                    .clone()
                    .or(named)
                    .unwrap_or_else(|| "benchmark".into()),
                variant: req.variant.clone(),
                user: req.user.clone().filter(|_| product.takes_basic_auth()),
            }
        }
    };
    Ok(TargetPlan {
        place,
        auth_token,
        admin_token,
        lock: req.lock.clone(),
        count_timeout: req
            .count_timeout
            .unwrap_or(crate::product::DEFAULT_COUNT_TIMEOUT),
        load_mode: phase
            .loads()
            .then(|| (resolved_mode(req), req.confirm_reset.clone())),
        product_values: req.product_values.clone(),
    })
}

/// A token from the variable `var` names, else from the product's default variable (none:
/// no token unless `var` names one).
fn read_token(var: Option<&str>, default: Option<&str>, word: &str) -> Result<Option<Secret>> {
    match (var, default) {
        (None, None) => Ok(None),
        (v, d) => super::token_from_env(v, d.unwrap_or_default(), word),
    }
}

/// `--database-mode`, else `create` (an external load without one was refused).
fn resolved_mode(req: &Request) -> DatabaseMode {
    req.mode.unwrap_or(DatabaseMode::Create)
}

/// The one resolution step: the flags' rules ([`super::validate`]), the target opened (a
/// managed workspace locked for the whole command), the dataset and every default decided.
/// Exit 2 for anything the flags, the workspace or the dataset refuse, before a run exists.
pub fn resolve(ctx: &Ctx, entry: &'static Entry, req: &Request) -> Result<(Plan, Target)> {
    let phase = super::validate(entry, req)?;
    // A bad TSBSCTL_ADMIN_TIMEOUT_SECS is bad input: said before anything exists.
    crate::product::admin_timeout()?;
    super::quiet::before()?;
    let root = ctx
        .root
        .clone()
        .with_dataset_root(req.dataset_root.as_deref())?;
    check_run_id(&root, entry, req)?;
    let stall = watch::StallPolicy::new(req.stall_timeout, req.on_stall)?;
    let queries = query_plan(phase, req)?;
    // Managed: workspace loaded and locked for the whole command; external: probed.
    let mut target = Target::open(ctx, &root, entry, &target_plan(entry, phase, req)?)?;
    target.check_can_serve(req.shape.as_ref())?;
    let timing = server_timing(target.default_timing(), req);
    let mode = resolved_mode(req);
    let work = match phase {
        Phase::Operation(name) => Work::Operation(operation_of(&target, name)?),
        _ => Work::Benchmark(Box::new(workload(&root, &mut target, phase, mode, req)?)),
    };
    let plan = Plan {
        phase,
        root,
        mode,
        confirm_reset: req.confirm_reset.clone(),
        compression: req.compression,
        queries,
        stall,
        require_quiet: req.require_quiet,
        server: ServerPlan {
            timing,
            shape: req.shape,
        },
        run_id: req.run_id.clone(),
        product: req.product_values.clone(),
        flags: req.flags.clone(),
        rerun: req.rerun.clone(),
        resume: req.resume.clone(),
        work,
    };
    Ok((plan, target))
}

/// The query phase's settings (checked by [`super::validate`]): one pass, the query set's
/// counts, unless asked otherwise.
fn query_plan(phase: Phase, req: &Request) -> Result<QueryPlan> {
    Ok(QueryPlan {
        passes: super::request::passes(req),
        cold: req.cold,
        check_answers: req.check_answers,
        sampling: super::request::precision(phase, req)?
            .map_or(Sampling::Fixed, Sampling::UntilPrecise),
    })
}

/// The product's server timing (`base`) with `--startup-timeout` and `--stop-timeout` in
/// place of its defaults (bounded and positive: checked by [`super::validate`], also for a
/// rerun's recorded flags, which no CLI parser saw).
fn server_timing(mut base: Timing, req: &Request) -> Timing {
    if let Some(s) = req.startup_timeout {
        base.startup_timeout = Duration::from_secs_f64(s);
    }
    if let Some(s) = req.stop_timeout {
        base.grace = Duration::from_secs_f64(s);
    }
    base
}

/// `--run-id`, and that no run of that name exists, before the runs directory is created.
fn check_run_id(root: &Root, entry: &Entry, req: &Request) -> Result<()> {
    let Some(id) = &req.run_id else {
        return Ok(());
    };
    crate::ids::validate_id("--run-id", id)?;
    let dir = root.runs(entry.name).join(id);
    if dir.exists() {
        return Err(
            Error::invalid(format!("run {id} already exists at {}", dir.display()))
                .with_hint("choose another --run-id, or omit it to get a fresh time-based id"),
        );
    }
    Ok(())
}

/// The operation `name` of the target's product (exit 2 when it has none).
fn operation_of(target: &Target, name: &str) -> Result<&'static Operation> {
    target
        .product
        .bench_ext()
        .and_then(|x| x.operation(name))
        .ok_or_else(|| {
            Error::invalid(format!(
                "{} has no operation {name:?}",
                target.entry.display
            ))
            .with_hint(format!("see `tsbsctl bench {} --help`", target.entry.name))
        })
}

/// The dataset, its counts and the write numbers of a load/query/analyze run, with the
/// checks they allow before anything is written.
fn workload(
    root: &Root,
    target: &mut Target,
    phase: Phase,
    mode: DatabaseMode,
    req: &Request,
) -> Result<Workload> {
    let (dataset, profile) = resolve_dataset(root, target, phase, req)?;
    // An edited dataset.json is refused as `data verify` refuses it, before anything is made
    // from its spec.
    crate::dataset::check_stored_spec(&dataset)?;
    target.set_dataset(&dataset);
    // The table split into regions the product's resolved values ask for (a load's only).
    let partitioning = target
        .product
        .bench_ext()
        .and_then(|x| (x.partitioning)(&req.product_values))
        .filter(|_| phase.loads());
    // A workspace holding another dataset is refused before anything is written.
    if phase.loads() {
        target.check_binding_id(&dataset, mode)?;
        if let Some(p) = &partitioning {
            check_partitioning(target, mode, &dataset, p, req.rerun.as_ref())?;
        }
    } else {
        let named = req.dataset_id.is_some() || req.spec.any();
        target.require_binding(root, &dataset, named)?;
    }
    let (workers, batch) = target.product.default_write(profile);
    // A resume keeps the run's workload (plus the types it adds).
    let counts = match &req.resume {
        Some(plan) => plan.counts.clone(),
        None => queryset::resolve_counts_in(
            dataset.spec.use_case()?.query_types,
            profile,
            None,
            &req.query_types,
            req.queries,
            &req.query_counts,
        )?,
    };
    if phase == Phase::Analyze {
        // The product's analyze phase says how many queries of a type it needs.
        if let Some(a) = target.product.bench_ext().and_then(|x| x.analyze) {
            (a.check_counts)(&req.product_values, &counts)?;
        }
    }
    // A query type the dataset is too small for would panic in the generator: refuse first.
    if matches!(phase, Phase::All | Phase::Query | Phase::Analyze) {
        queryset::check_query_needs(&dataset, &counts)?;
        queryset::check_runnable_types(
            &target.product.query_format(),
            target.product.family_display(),
            &counts,
        )?;
    }
    Ok(Workload {
        dataset,
        profile,
        counts,
        load_workers: req.load_workers.unwrap_or(workers),
        batch_size: req.batch_size.unwrap_or(batch),
        query_workers: req.query_workers.unwrap_or(1),
        partitioning,
    })
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
    check_use_case(target, phase, &ds)?;
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

/// `--partitions`/`--partition-column` for this dataset (exit 2): the product's rules, and no
/// workspace already holding it (its load would be skipped, its table left as it is).
fn check_partitioning(
    target: &Target,
    mode: DatabaseMode,
    ds: &Dataset,
    p: &Partitioning,
    rerun: Option<&RerunPins>,
) -> Result<()> {
    target
        .product
        .check_partitioning(p, ds.spec.use_case()?.name, ds.spec.scale)?;
    if mode != DatabaseMode::Reset && target.binding().is_some_and(|b| b.dataset_id == ds.id) {
        // `runs rerun` takes no --database-mode: its way to a new load is a new workspace.
        let hint = match rerun {
            Some(r) => format!(
                "rerun it into a new workspace: tsbsctl runs rerun {} --database-id NEW",
                r.rerun_of
            ),
            None => format!(
                "load again with --database-mode reset --confirm-reset {}",
                target.database()
            ),
        };
        return Err(Error::invalid(format!(
            "workspace {} already holds dataset {} in the table its load made; --partitions needs a new load",
            target.database_id().unwrap_or_default(),
            ds.id
        ))
        .with_hint(hint));
    }
    Ok(())
}

/// Refuses (exit 2) a dataset whose use case the product's TSBS tools cannot run in `phase`:
/// every loader loads every use case, but not every query generator has its queries
/// (`cmd/tsbs_generate_queries/databases/influx3` has no iot).
fn check_use_case(target: &Target, phase: Phase, ds: &Dataset) -> Result<()> {
    let uc = ds.spec.use_case()?;
    if phase.loads() && phase != Phase::All {
        return Ok(());
    }
    let format = target.product.query_format();
    if matches!(phase, Phase::All | Phase::Query | Phase::Analyze)
        && !format.use_cases.contains(&uc.query_use_case)
    {
        let others: Vec<&str> = crate::product::all()
            .iter()
            .filter(|e| {
                (e.make)(None)
                    .map(|p| p.query_format().use_cases.contains(&uc.query_use_case))
                    .unwrap_or(false)
            })
            .map(|e| e.name)
            .collect();
        return Err(Error::invalid(format!(
            "{} cannot run {} queries: the fork's query generator has no {} queries for its format {} (it has: {}); dataset {} is {}",
            target.product.family_display(),
            uc.name,
            uc.query_use_case,
            format.name,
            format.use_cases.join(", "),
            ds.id,
            uc.name
        ))
        .with_hint(format!(
            "load it without queries (`tsbsctl bench {} load`), or benchmark {} on {}",
            target.entry.name,
            uc.name,
            others.join(", ")
        )));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::super::request::tests::managed;
    use super::*;
    use crate::product::{greptimedb, timescaledb, ManagedServer};

    /// Nothing given: every default decided here, not by the phases.
    #[test]
    fn the_query_plan_has_its_defaults_applied() {
        assert_eq!(
            query_plan(Phase::Query, &managed(Phase::Query)).unwrap(),
            QueryPlan {
                passes: 1,
                cold: false,
                check_answers: false,
                sampling: Sampling::Fixed,
            }
        );
        let req = Request {
            passes: Some(3),
            target_precision: Some("2%".into()),
            check_answers: true,
            ..managed(Phase::All)
        };
        let q = query_plan(Phase::All, &req).unwrap();
        assert_eq!((q.passes, q.check_answers), (3, true));
        assert_eq!(
            q.sampling,
            Sampling::UntilPrecise(super::super::request::Precision {
                target: 0.02,
                budget: Duration::from_secs(300),
            })
        );
    }

    #[test]
    fn the_server_timing_is_the_products_with_the_given_waits() {
        let base = greptimedb::GreptimeDb.default_timing();
        let t = server_timing(base, &managed(Phase::Query));
        assert_eq!(
            (t.startup_timeout, t.grace),
            (base.startup_timeout, base.grace)
        );
        let req = Request {
            startup_timeout: Some(2.5),
            stop_timeout: Some(7.0),
            ..managed(Phase::Query)
        };
        let t = server_timing(base, &req);
        assert_eq!(t.startup_timeout, Duration::from_millis(2500));
        assert_eq!(t.grace, Duration::from_secs(7));
        assert_eq!(t.drain_limit, base.drain_limit);
    }

    /// The target's part: an external server's URLs without a trailing `/`, its database
    /// decided (`--database`, else the one the URL names, else `benchmark`), the load's mode
    /// `create` unless given, and the count timeout's default.
    #[test]
    fn the_target_plan_decides_the_database_mode_and_count_timeout() {
        let g = &greptimedb::ENTRY;
        let req = Request {
            phase: Some(Phase::Load),
            urls: vec!["http://10.0.0.5:4000/".into()],
            mode: Some(DatabaseMode::Reuse),
            ..Request::default()
        };
        let t = target_plan(g, Phase::Load, &req).unwrap();
        match &t.place {
            PlacePlan::External {
                urls,
                database,
                variant,
                user,
            } => {
                assert_eq!(urls, &["http://10.0.0.5:4000"]);
                assert_eq!(database, "benchmark");
                assert!(variant.is_none() && user.is_none());
            }
            other => panic!("{other:?}"),
        }
        assert_eq!(t.load_mode, Some((DatabaseMode::Reuse, None)));
        assert_eq!(t.count_timeout, crate::product::DEFAULT_COUNT_TIMEOUT);
        // A query loads nothing: no mode to check.
        assert_eq!(
            target_plan(g, Phase::Query, &Request { mode: None, ..req })
                .unwrap()
                .load_mode,
            None
        );
        // PostgreSQL: the database the URL names.
        let pg = Request {
            phase: Some(Phase::Query),
            urls: vec!["postgres://bench@10.0.0.5:5432/tsbs".into()],
            variant: Some("postgresql".into()),
            ..Request::default()
        };
        let t = target_plan(&timescaledb::ENTRY, Phase::Query, &pg).unwrap();
        assert!(
            matches!(&t.place, PlacePlan::External { database, .. } if database == "tsbs"),
            "{t:?}"
        );
        // Managed: the workspace, a version override with its confirmation, a load's
        // default mode.
        let req = Request {
            runtime_version: Some("1.0.0".into()),
            confirm_runtime: Some("ws1".into()),
            count_timeout: Some(Duration::from_secs(60)),
            ..managed(Phase::Load)
        };
        let t = target_plan(g, Phase::Load, &req).unwrap();
        match &t.place {
            PlacePlan::Managed {
                database_id,
                database,
                runtime,
            } => {
                assert_eq!(database_id, "ws1");
                assert!(database.is_none());
                assert_eq!(
                    runtime.as_ref(),
                    Some(&("1.0.0".to_string(), Some("ws1".to_string())))
                );
            }
            other => panic!("{other:?}"),
        }
        assert_eq!(t.load_mode, Some((DatabaseMode::Create, None)));
        assert_eq!(t.count_timeout, Duration::from_secs(60));
    }
}
