//! What a bench command asks for ([`Request`], filled by the CLI or rebuilt by `runs rerun`)
//! and the checks of its flag combinations ([`validate`]: pure, no file or network access,
//! so every rule is unit-tested here).

use std::path::PathBuf;

use serde_json::Value;

use super::{target, watch, Phase};
use crate::bounds;
use crate::dataset;
use crate::dataset::{Compression, Profile, SpecOverrides};
use crate::error::{Error, Result};
use crate::lock::LockOptions;
use crate::product::{ext, Driver, Entry, Product};
use crate::queryset;
use crate::tsbs::DatabaseMode;

/// Everything a bench command asks for (the CLI fills it).
#[derive(Debug, Clone, Default)]
pub struct Request {
    pub phase: Option<Phase>,
    pub database_id: Option<String>,
    pub urls: Vec<String>,
    /// The product's variant (its `variant_flag`'s value).
    pub variant: Option<String>,
    pub database: Option<String>,
    pub mode: Option<DatabaseMode>,
    pub confirm_reset: Option<String>,
    pub dataset_id: Option<String>,
    pub dataset_root: Option<PathBuf>,
    pub spec: SpecOverrides,
    pub compression: Option<Compression>,
    pub query_types: Vec<String>,
    pub queries: Option<i64>,
    pub query_counts: Vec<String>,
    pub load_workers: Option<u32>,
    pub batch_size: Option<u32>,
    pub query_workers: Option<u32>,
    /// `--passes`: how many times the query phase runs (default 1).
    pub passes: Option<i64>,
    /// `--cold`: restart the server and drop the OS page cache before each query type.
    pub cold: bool,
    /// `--target-precision` (`2%`) and `--precision-budget` (a Go duration), as given.
    pub target_precision: Option<String>,
    pub precision_budget: Option<String>,
    /// `--check-answers`: a verification pass after the timed ones (issue 24 §5).
    pub check_answers: bool,
    pub run_id: Option<String>,
    /// The product's `--no-sync` as parsed (the record tests read it; the phases read the
    /// product's resolved values in [`super::Plan::product`]).
    pub no_sync: bool,
    /// The variable holding the auth token (PostgreSQL and GreptimeDB: the password,
    /// `--password-env`; a product without flags of its own: the generic `--token-env`).
    pub auth_token_env: Option<String>,
    /// The user of HTTP basic auth against external servers (a product's
    /// [`crate::product::ext::BasicAuth`] flags).
    pub user: Option<String>,
    pub admin_token_env: Option<String>,
    /// Another installed version to run on a managed workspace's data, and its confirmation
    /// (the product's [`crate::product::ext::VersionOverride`] flags).
    pub runtime_version: Option<String>,
    pub confirm_runtime: Option<String>,
    pub startup_timeout: Option<f64>,
    pub stop_timeout: Option<f64>,
    /// `--cpus` / `--memory`: the managed server's own cgroup.
    pub shape: Option<crate::server::cgroup::Shape>,
    /// `--require-quiet`: a busy machine before a measured phase fails the run.
    pub require_quiet: bool,
    /// InfluxDB 3: the limit of one row-count request (default 30 min).
    pub count_timeout: Option<std::time::Duration>,
    /// Seconds a tool may go without progress before it counts as stalled.
    pub stall_timeout: Option<f64>,
    pub on_stall: Option<watch::OnStall>,
    pub lock: LockOptions,
    /// Every flag, as recorded in the run manifest (no secrets: only variable names).
    pub flags: Value,
    /// The product's own flags ([`crate::product::ext`]), resolved: checks and defaults applied.
    pub product_values: serde_json::Map<String, Value>,
    /// The product's own flags as given (typed): [`validate`] checks that the phase takes them.
    pub product_given: serde_json::Map<String, Value>,
    /// `runs rerun`: the run this one reproduces, and the pins it must meet.
    pub rerun: Option<RerunPins>,
    /// `runs resume`: what the resumed run still has to do.
    pub resume: Option<ResumePlan>,
}

/// What `runs resume` continues in an existing run directory (the phase is `query`, or the
/// run's own `all`/`load` when its load did not finish and is done again from the start).
#[derive(Debug, Clone, Default)]
pub struct ResumePlan {
    /// The query types to run now: those not done, and the added ones.
    pub query_types: std::collections::BTreeSet<String>,
    /// The run's query workload after the resume (its own, plus added types).
    pub counts: std::collections::BTreeMap<String, u64>,
    /// Extending: the directory of the query set the run had; the larger set reuses its files
    /// of the types whose count did not change.
    pub base_query_set: Option<PathBuf>,
    /// The query file SHA-256 each done type ran with (its steps recorded it): the query set
    /// of a resume must hold the same files for them (exit 4 otherwise).
    pub done_files: std::collections::BTreeMap<String, String>,
    /// What the run's manifest and events get.
    pub record: Option<crate::run::ResumeRecord>,
}

/// What `runs rerun` pins beyond the flags: a different artifact is an integrity error.
#[derive(Debug, Clone, Default)]
pub struct RerunPins {
    pub rerun_of: String,
    /// TSBS build key (`<commit>[-dirty]`) instead of the current environment.
    pub tsbs_key: String,
    pub dataset_sha256: Option<String>,
    pub query_set_manifest_sha256: Option<String>,
}

/// Default write parameters per product and profile (DESIGN.md, Benchmark runs).
pub fn default_write(product: &dyn Driver, profile: Profile) -> (u32, u32) {
    product.default_write(profile)
}

impl Request {
    /// The product's write settings for the run's workload (and so the summary's write
    /// parameters): its resolved values, which the workload records after the common keys.
    pub fn write_settings(&self) -> serde_json::Map<String, Value> {
        self.product_values.clone()
    }
}

fn positive(flag: &str, v: Option<u32>) -> Result<()> {
    if v == Some(0) {
        return Err(Error::invalid(format!("{flag} must be positive"))
            .with_hint(format!("pass {flag} N with N >= 1")));
    }
    Ok(())
}

/// The most passes of the query phase one run may make (a typo such as 1000 would hold a
/// machine for days).
pub const MAX_PASSES: i64 = 100;

/// `--passes`: 1 to [`MAX_PASSES`], and only where there is a query phase.
fn check_passes(phase: Phase, passes: Option<i64>) -> Result<()> {
    let Some(n) = passes else { return Ok(()) };
    if !matches!(phase, Phase::All | Phase::Query) {
        return Err(
            Error::invalid("--passes applies to the query and all phases only")
                .with_hint("drop --passes"),
        );
    }
    if !(1..=MAX_PASSES).contains(&n) {
        return Err(Error::invalid(format!(
            "--passes {n} is not between 1 and {MAX_PASSES}"
        ))
        .with_hint("e.g. --passes 3 (the query phase three times: the spread between passes is measured)"));
    }
    Ok(())
}

/// `--cold`: only where there is a query phase, only on a managed server (tsbsctl can neither
/// restart an external server nor empty the page cache of the machine it runs on), and only
/// where this process may drop the page cache.
fn check_cold(phase: Phase, req: &Request) -> Result<()> {
    if !req.cold {
        return Ok(());
    }
    if !matches!(phase, Phase::All | Phase::Query) {
        return Err(
            Error::invalid("--cold applies to the query and all phases only")
                .with_hint("drop --cold"),
        );
    }
    if !req.urls.is_empty() {
        return Err(Error::invalid(
            "--cold restarts the server and drops the page cache of the machine it runs on; tsbsctl can do neither for an external server (--url)",
        )
        .with_hint("run cold queries on a managed workspace (--database-id), or drop --cold"));
    }
    super::coldstart::check_allowed(std::path::Path::new(super::coldstart::DROP_CACHES))
}

/// The wall time one query type may take per pass with `--target-precision`.
pub const DEFAULT_PRECISION_BUDGET: &str = "5m";

/// What `--target-precision` asks for: the interval's half-width as a fraction of the mean,
/// and the budget per type and pass.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Precision {
    pub target: f64,
    pub budget: std::time::Duration,
}

/// `--target-precision PCT` (above 0% and below 100%) and `--precision-budget DURATION`
/// (a positive Go duration), for the query and all phases only.
pub fn precision(phase: Phase, req: &Request) -> Result<Option<Precision>> {
    let Some(raw) = &req.target_precision else {
        if req.precision_budget.is_some() {
            return Err(
                Error::invalid("--precision-budget needs --target-precision")
                    .with_hint("add --target-precision 2% or drop --precision-budget"),
            );
        }
        return Ok(None);
    };
    if !matches!(phase, Phase::All | Phase::Query) {
        return Err(
            Error::invalid("--target-precision applies to the query and all phases only")
                .with_hint("drop --target-precision and --precision-budget"),
        );
    }
    let hint = "give the half-width of the 95% interval of a type's mean, e.g. --target-precision 2% (above 0% and below 100%)";
    let pct: f64 = raw
        .trim()
        .trim_end_matches('%')
        .trim()
        .parse()
        .map_err(|_| {
            Error::invalid(format!("--target-precision {raw:?} is not a percentage"))
                .with_hint(hint)
        })?;
    if !(pct > 0.0 && pct < 100.0) {
        return Err(Error::invalid(format!(
            "--target-precision {raw:?} is not above 0% and below 100%"
        ))
        .with_hint(hint));
    }
    let b = req
        .precision_budget
        .as_deref()
        .unwrap_or(DEFAULT_PRECISION_BUDGET);
    let ns = crate::dataset::parse_go_duration(b)
        .filter(|ns| *ns > 0)
        .ok_or_else(|| {
            Error::invalid(format!(
                "--precision-budget {b:?} is not a positive Go duration"
            ))
            .with_hint("e.g. --precision-budget 5m (the default), 90s or 1h")
        })?;
    Ok(Some(Precision {
        target: pct / 100.0,
        budget: std::time::Duration::from_nanos(ns as u64),
    }))
}

/// The number of passes a request asks for (checked by [`validate`]).
pub fn passes(req: &Request) -> u32 {
    req.passes.map_or(1, |n| n.clamp(1, MAX_PASSES) as u32)
}

/// A product's basic-auth flags ([`crate::product::ext::BasicAuth`], GreptimeDB's `--user` and
/// `--password-env`): together, for an external server only, a user name HTTP basic auth can
/// carry.
fn check_basic_auth(entry: &Entry, product: &dyn Product, req: &Request) -> Result<()> {
    let Some(b) = product.bench_ext().and_then(|x| x.basic_auth) else {
        return Ok(());
    };
    let (user_flag, password_flag) = (b.user.long, b.password_env.long);
    let Some(user) = &req.user else {
        if req.auth_token_env.is_some() {
            return Err(
                Error::invalid(format!("--{password_flag} needs --{user_flag}")).with_hint(
                    format!("pass --{user_flag} NAME with --{password_flag} VAR"),
                ),
            );
        }
        return Ok(());
    };
    if req.database_id.is_some() {
        return Err(Error::invalid(format!(
            "--{user_flag} applies to an external {} (--url): a managed workspace's server runs without authentication",
            entry.display
        ))
        .with_hint(format!(
            "drop --{user_flag} and --{password_flag}, or benchmark the server with --url"
        )));
    }
    if req.auth_token_env.is_none() {
        return Err(Error::invalid(format!("--{user_flag} needs --{password_flag} VAR"))
            .with_hint(format!("put the password in an environment variable and name it with --{password_flag} (never on the command line)")));
    }
    // Basic auth splits `user:password` at the first colon (the server does too).
    if user.is_empty() || user.contains(':') || user.chars().any(char::is_control) {
        return Err(Error::invalid(format!(
            "--{user_flag} {user:?} is not a user name HTTP basic auth can carry"
        ))
        .with_hint("give a non-empty name without ':' or control characters"));
    }
    Ok(())
}

/// Flag bounds (#1).
fn check_bounds(req: &Request) -> Result<()> {
    bounds::at_most(
        "--load-workers",
        req.load_workers.map(u64::from),
        bounds::MAX_WORKERS,
    )?;
    bounds::at_most(
        "--query-workers",
        req.query_workers.map(u64::from),
        bounds::MAX_WORKERS,
    )?;
    bounds::at_most(
        "--batch-size",
        req.batch_size.map(u64::from),
        bounds::MAX_BATCH_SIZE,
    )?;
    bounds::scale(req.spec.scale)?;
    bounds::queries(req.queries, &req.query_counts)?;
    bounds::wait_seconds("--startup-timeout", req.startup_timeout)?;
    bounds::wait_seconds("--stop-timeout", req.stop_timeout)?;
    Ok(())
}

/// The query flags' syntax and types, before the workspace is even opened (#17: an unloaded
/// workspace must not mask a bad flag). The profile only decides default counts, so any
/// profile checks the same things.
fn check_query_flags(req: &Request) -> Result<()> {
    // Any use case's types: which one the dataset has is known later.
    let all: Vec<&str> = dataset::USE_CASES
        .iter()
        .flat_map(|u| u.query_types.iter().copied())
        .collect();
    queryset::resolve_counts_in(
        &all,
        dataset::Profile::Smoke,
        None,
        &req.query_types,
        req.queries,
        &req.query_counts,
    )?;
    Ok(())
}

/// Checks flag combinations before anything is touched (exit 2).
pub fn validate(entry: &Entry, req: &Request) -> Result<Phase> {
    // Rules that hold for every variant: asked of the default one.
    let product = (entry.make)(None)?;
    product.check_benchmarkable()?;
    let phase = req.phase.unwrap_or(Phase::All);
    phase_only_flags(phase, req)?;
    if let Some(x) = product.bench_ext() {
        ext::check_phases(entry.name, x, phase.as_str(), &req.product_given)?;
    }
    positive("--load-workers", req.load_workers)?;
    positive("--batch-size", req.batch_size)?;
    positive("--query-workers", req.query_workers)?;
    check_passes(phase, req.passes)?;
    check_cold(phase, req)?;
    precision(phase, req)?;
    check_bounds(req)?;
    check_query_flags(req)?;
    watch::StallPolicy::new(req.stall_timeout, req.on_stall)?;
    match (&req.database_id, req.urls.is_empty()) {
        (Some(_), false) => {
            return Err(
                Error::invalid("--database-id and --url exclude each other").with_hint(
                    "benchmark a managed workspace (--database-id) or an external server (--url)",
                ),
            )
        }
        (None, true) => {
            return Err(
                Error::invalid("no target: pass --database-id ID or --url URL").with_hint(format!(
                    "`tsbsctl {} list` names the workspaces",
                    entry.name
                )),
            )
        }
        _ => {}
    }
    if let Some(id) = &req.database_id {
        crate::ids::validate_id("--database-id", id)?;
    }
    if let Some(d) = &req.database {
        crate::ids::validate_sql_identifier("--database", d)?;
    }
    if let Some(id) = &req.dataset_id {
        crate::ids::validate_id("--dataset-id", id)?;
    }
    let external = req.database_id.is_none();
    check_basic_auth(entry, product.as_ref(), req)?;
    if product.max_urls() == Some(1) && req.urls.len() > 1 {
        return Err(Error::invalid(format!(
            "{} takes one --url: its TSBS loader ({}) connects to one server",
            entry.display,
            product.tsbs_loader()
        ))
        .with_hint(format!(
            "pass a single endpoint, e.g. --url http://10.0.0.5:{}",
            product.probe_identity().1
        )));
    }
    for u in &req.urls {
        let named = target::check_url(product.as_ref(), u)?;
        if let (Some(n), Some(d)) = (&named, &req.database) {
            if n != d {
                return Err(Error::invalid(format!(
                    "--url names database {n:?}, --database {d:?}"
                ))
                .with_hint("name the database once: in the --url or with --database"));
            }
        }
    }
    if let Some(flag) = entry.variant_flag {
        if external && req.variant.is_none() {
            let choices: Vec<String> = entry
                .variants
                .iter()
                .map(|v| format!("{flag} {v}"))
                .collect();
            return Err(Error::invalid(format!(
                "external {} targets need {flag} {}",
                entry.display,
                entry.variants.join("|")
            ))
            .with_hint(format!("add {}", choices.join(" or "))));
        }
        if !external && req.variant.is_some() {
            return Err(Error::invalid(format!(
                "a managed workspace's {} comes from its manifest; omit {flag}",
                flag.trim_start_matches('-')
            ))
            .with_hint(format!("drop {flag}")));
        }
    }
    if phase.loads() {
        if external && req.mode.is_none() {
            return Err(Error::invalid(
                "loads into an external server need --database-mode create|reuse|reset",
            )
            .with_hint("say what happens to an existing database: --database-mode create (abort if it exists), reuse, or reset --confirm-reset NAME"));
        }
        if let Some(mode) = req.mode {
            let db = req.database.clone().unwrap_or_else(|| "benchmark".into());
            // Managed: the workspace's database is checked again once known.
            if external || req.database.is_some() {
                mode.check_confirmation(&db, req.confirm_reset.as_deref())?;
            } else if mode == DatabaseMode::Reset && req.confirm_reset.is_none() {
                mode.check_confirmation(&db, None)?;
            }
        }
    } else if req.mode.is_some() || req.confirm_reset.is_some() {
        return Err(Error::invalid(format!(
            "--database-mode and --confirm-reset apply to load and all, not {}",
            phase.as_str()
        ))
        .with_hint("drop them, or run the load phase"));
    }
    check_version_override(entry, product.as_ref(), phase, req)?;
    if matches!(phase, Phase::Operation(_) | Phase::Analyze) && external {
        return Err(Error::invalid(format!(
            "{} needs a managed workspace (tsbsctl restarts and inspects its server)",
            phase.as_str()
        ))
        .with_hint("pass --database-id ID"));
    }
    Ok(phase)
}

/// The product's flags that run another installed version: a managed workspace, the phases
/// that take them, the version with its confirmation.
fn check_version_override(
    entry: &Entry,
    product: &dyn Product,
    phase: Phase,
    req: &Request,
) -> Result<()> {
    if req.runtime_version.is_none() && req.confirm_runtime.is_none() {
        return Ok(());
    }
    let Some(o) = product.bench_ext().and_then(|x| x.version_override) else {
        return Err(Error::invalid(format!(
            "{} runs no other version on a workspace's data",
            entry.display
        )));
    };
    let (version, confirm) = (o.version.long, o.confirm.long);
    if !o.phases.contains(&phase.as_str()) || req.database_id.is_none() {
        return Err(Error::invalid(format!(
            "--{version} runs another installed version on a managed workspace's data, for {} only",
            o.phases.join(" and ")
        ))
        .with_hint(format!(
            "use it with `bench {} {} --database-id ID`",
            entry.name,
            o.phases.join("|")
        )));
    }
    if req.runtime_version.is_none() {
        return Err(Error::invalid(format!("--{confirm} requires --{version}"))
            .with_hint(format!("add --{version} {}", o.version.value_name)));
    }
    Ok(())
}

/// Flags that belong to one phase used with another (exit 2). A product's own flags declare
/// their phases ([`crate::product::ext::check_phases`]).
fn phase_only_flags(phase: Phase, req: &Request) -> Result<()> {
    if !matches!(phase, Phase::All | Phase::Query) && req.check_answers {
        return Err(
            Error::invalid("--check-answers applies to the query and all phases only")
                .with_hint("drop --check-answers"),
        );
    }
    Ok(())
}

#[cfg(test)]
pub(super) mod tests {
    use super::*;
    use crate::product::{greptimedb, influxdb3};

    /// A request for `phase` on the managed workspace `ws1`.
    pub(in crate::bench) fn managed(phase: Phase) -> Request {
        Request {
            phase: Some(phase),
            database_id: Some("ws1".into()),
            ..Request::default()
        }
    }

    fn external(phase: Phase, urls: &[&str]) -> Request {
        Request {
            phase: Some(phase),
            urls: urls.iter().map(|u| u.to_string()).collect(),
            mode: phase.loads().then_some(DatabaseMode::Create),
            ..Request::default()
        }
    }

    #[test]
    fn target_precision_is_a_share_above_0_and_below_100_with_a_positive_budget() {
        let req = |p: Option<&str>, b: Option<&str>| Request {
            target_precision: p.map(String::from),
            precision_budget: b.map(String::from),
            ..managed(Phase::Query)
        };
        let p = precision(Phase::Query, &req(Some("2%"), None))
            .unwrap()
            .unwrap();
        assert_eq!(p.target, 0.02);
        assert_eq!(p.budget, std::time::Duration::from_secs(300));
        let p = precision(Phase::All, &req(Some(" 0.5 % "), Some("90s")))
            .unwrap()
            .unwrap();
        assert_eq!((p.target, p.budget.as_secs()), (0.005, 90));
        assert_eq!(precision(Phase::Query, &req(None, None)).unwrap(), None);
        for (r, phase, says) in [
            (
                req(Some("0%"), None),
                Phase::Query,
                "not above 0% and below 100%",
            ),
            (
                req(Some("150%"), None),
                Phase::Query,
                "not above 0% and below 100%",
            ),
            (
                req(Some("100"), None),
                Phase::Query,
                "not above 0% and below 100%",
            ),
            (
                req(Some("NaN%"), None),
                Phase::Query,
                "not above 0% and below 100%",
            ),
            (req(Some("abc"), None), Phase::Query, "is not a percentage"),
            (
                req(Some("2%"), Some("0s")),
                Phase::Query,
                "not a positive Go duration",
            ),
            (
                req(Some("2%"), Some("5")),
                Phase::Query,
                "not a positive Go duration",
            ),
            (
                req(None, Some("5m")),
                Phase::Query,
                "needs --target-precision",
            ),
            (
                req(Some("2%"), None),
                Phase::Load,
                "query and all phases only",
            ),
        ] {
            let e = precision(phase, &r).unwrap_err();
            assert_eq!(e.exit_code(), 2);
            assert!(e.message.contains(says), "{}", e.message);
        }
    }

    /// Every rule: the request, and `None` (accepted) or a part of the refusal's message.
    #[test]
    fn flag_rules() {
        let g = &greptimedb::ENTRY;
        let i = &influxdb3::ENTRY;
        let t = &crate::product::timescaledb::ENTRY;
        let pg = "postgres://bench@10.0.0.5:5432/tsbs";
        let url = "http://10.0.0.5:4000";
        type Case = (&'static str, &'static Entry, Request, Option<&'static str>);
        let passes = |phase, n| Request {
            passes: Some(n),
            ..managed(phase)
        };
        let cases: Vec<Case> = vec![
            ("managed all", g, managed(Phase::All), None),
            ("three passes", g, passes(Phase::Query, 3), None),
            ("a hundred passes", i, passes(Phase::All, 100), None),
            (
                "no pass",
                g,
                passes(Phase::Query, 0),
                Some("--passes 0 is not between 1 and 100"),
            ),
            (
                "negative passes",
                g,
                passes(Phase::All, -2),
                Some("--passes -2 is not between 1"),
            ),
            (
                "too many passes",
                t,
                passes(Phase::All, 101),
                Some("--passes 101 is not between"),
            ),
            (
                "passes of a load",
                g,
                passes(Phase::Load, 2),
                Some("--passes applies to the query and all phases only"),
            ),
            (
                "no target",
                g,
                Request::default(),
                Some("no target: pass --database-id ID or --url URL"),
            ),
            (
                "both targets",
                g,
                Request {
                    urls: vec![url.into()],
                    ..managed(Phase::All)
                },
                Some("--database-id and --url exclude each other"),
            ),
            (
                "zero workers",
                g,
                Request {
                    load_workers: Some(0),
                    ..managed(Phase::All)
                },
                Some("--load-workers must be positive"),
            ),
            (
                "huge batch",
                g,
                Request {
                    batch_size: Some(2_000_000),
                    ..managed(Phase::All)
                },
                Some("--batch-size 2000000 is above the limit"),
            ),
            (
                "bad id",
                g,
                Request {
                    database_id: Some("../x".into()),
                    ..managed(Phase::All)
                },
                Some("--database-id"),
            ),
            (
                "startup timeout 1e300",
                g,
                Request {
                    startup_timeout: Some(1e300),
                    ..managed(Phase::Query)
                },
                Some("--startup-timeout must be a positive number of seconds"),
            ),
            (
                "negative stop timeout",
                g,
                Request {
                    stop_timeout: Some(-5.0),
                    ..managed(Phase::Query)
                },
                Some("--stop-timeout must be a positive number of seconds"),
            ),
            // Issue 22: its loader and runner take a comma list, worker i using URL i mod n.
            (
                "greptimedb takes several urls",
                g,
                external(Phase::Query, &[url, "http://10.0.0.6:4000"]),
                None,
            ),
            (
                "timescaledb takes one url, and says why",
                t,
                Request {
                    variant: Some("postgresql".into()),
                    ..external(Phase::Query, &[pg, "postgres://bench@10.0.0.6:5432/tsbs"])
                },
                Some("TimescaleDB takes one --url: its TSBS loader (tsbs_load_timescaledb) connects to one server"),
            ),
            (
                "greptimedb --user with its password variable",
                g,
                Request {
                    user: Some("bench".into()),
                    auth_token_env: Some("GT_PW".into()),
                    ..external(Phase::Query, &[url])
                },
                None,
            ),
            (
                "greptimedb --user without --password-env",
                g,
                Request {
                    user: Some("bench".into()),
                    ..external(Phase::Query, &[url])
                },
                Some("--user needs --password-env VAR"),
            ),
            (
                "greptimedb --password-env without --user",
                g,
                Request {
                    auth_token_env: Some("GT_PW".into()),
                    ..external(Phase::Query, &[url])
                },
                Some("--password-env needs --user"),
            ),
            (
                "greptimedb --user on a managed workspace",
                g,
                Request {
                    user: Some("bench".into()),
                    auth_token_env: Some("GT_PW".into()),
                    ..managed(Phase::Query)
                },
                Some("a managed workspace's server runs without authentication"),
            ),
            (
                "greptimedb --user with a colon",
                g,
                Request {
                    user: Some("a:b".into()),
                    auth_token_env: Some("GT_PW".into()),
                    ..external(Phase::Query, &[url])
                },
                Some("is not a user name HTTP basic auth can carry"),
            ),
            (
                "not a url",
                g,
                external(Phase::Query, &["ftp://x"]),
                Some("is not an absolute HTTP or HTTPS URL"),
            ),
            (
                "influxdb3 takes several urls",
                i,
                Request {
                    variant: Some("core".into()),
                    ..external(Phase::Query, &[url, "http://10.0.0.6:4000"])
                },
                None,
            ),
            (
                "external influxdb3 needs an edition",
                i,
                external(Phase::Query, &[url]),
                Some("external InfluxDB 3 targets need --edition core|enterprise"),
            ),
            (
                "managed influxdb3 takes no edition",
                i,
                Request {
                    variant: Some("core".into()),
                    ..managed(Phase::All)
                },
                Some("a managed workspace's edition comes from its manifest; omit --edition"),
            ),
            (
                "external load needs a mode",
                g,
                Request {
                    mode: None,
                    ..external(Phase::Load, &[url])
                },
                Some("need --database-mode create|reuse|reset"),
            ),
            (
                "reset needs its confirmation",
                g,
                Request {
                    mode: Some(DatabaseMode::Reset),
                    ..managed(Phase::Load)
                },
                Some("reset"),
            ),
            (
                "mode on a query",
                g,
                Request {
                    mode: Some(DatabaseMode::Create),
                    ..managed(Phase::Query)
                },
                Some("--database-mode and --confirm-reset apply to load and all, not query"),
            ),
            (
                "version override on a load",
                g,
                Request {
                    runtime_version: Some("1.0.0".into()),
                    ..managed(Phase::Load)
                },
                Some("--greptime-version runs another installed version"),
            ),
            (
                "version override confirmation alone",
                g,
                Request {
                    confirm_runtime: Some("ws1".into()),
                    ..managed(Phase::Query)
                },
                Some("--confirm-version-override requires --greptime-version"),
            ),
            (
                "version override on a query",
                g,
                Request {
                    runtime_version: Some("1.0.0".into()),
                    ..managed(Phase::Query)
                },
                None,
            ),
            (
                "compact of an external server",
                g,
                external(Phase::Operation("compact"), &[url]),
                Some("compact needs a managed workspace"),
            ),
            (
                "analyze of an external server",
                g,
                external(Phase::Analyze, &[url]),
                Some("analyze needs a managed workspace"),
            ),
            (
                "external postgresql",
                t,
                Request {
                    variant: Some("postgresql".into()),
                    auth_token_env: Some("PGPASS".into()),
                    ..external(Phase::All, &[pg])
                },
                None,
            ),
            (
                "external timescaledb needs a mode",
                t,
                external(Phase::Query, &[pg]),
                Some("external TimescaleDB targets need --mode timescaledb|postgresql"),
            ),
            (
                "postgresql takes a postgres url",
                t,
                Request {
                    variant: Some("postgresql".into()),
                    ..external(Phase::Query, &[url])
                },
                Some("invalid --url"),
            ),
            (
                "a password in the url",
                t,
                Request {
                    variant: Some("postgresql".into()),
                    ..external(Phase::Query, &["postgres://bench:hunter2@h/tsbs"])
                },
                Some("--url must not hold a password"),
            ),
            (
                "url and --database name different databases",
                t,
                Request {
                    variant: Some("postgresql".into()),
                    database: Some("other".into()),
                    ..external(Phase::Query, &[pg])
                },
                Some("--url names database \"tsbs\", --database \"other\""),
            ),
            (
                "url and --database agree",
                t,
                Request {
                    variant: Some("postgresql".into()),
                    database: Some("tsbs".into()),
                    ..external(Phase::Query, &[pg])
                },
                None,
            ),
            (
                "unknown query type",
                g,
                Request {
                    query_types: vec!["nope".into()],
                    ..managed(Phase::Query)
                },
                Some("unsupported query type: nope"),
            ),
        ];
        for (name, entry, req, want) in cases {
            let got = validate(entry, &req);
            match (want, got) {
                (None, Ok(p)) => assert_eq!(p, req.phase.unwrap(), "{name}"),
                (None, Err(e)) => panic!("{name}: refused: {}", e.message),
                (Some(w), Ok(_)) => panic!("{name}: accepted, wanted {w:?}"),
                (Some(w), Err(e)) => {
                    assert_eq!(e.exit_code(), 2, "{name}: {}", e.message);
                    assert!(e.message.contains(w), "{name}: {:?} lacks {w:?}", e.message);
                }
            }
        }
    }

    #[test]
    fn default_write_is_the_products() {
        assert_eq!(
            default_write(&greptimedb::GreptimeDb, Profile::Manual),
            (6, 3000)
        );
        let ent = influxdb3::InfluxDb3::new(influxdb3::Edition::Enterprise);
        assert_eq!(default_write(&ent, Profile::Manual), (16, 25000));
        assert_eq!(default_write(&ent, Profile::Smoke), (2, 3000));
    }
}
