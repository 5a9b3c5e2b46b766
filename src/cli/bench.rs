//! `tsbsctl bench greptimedb|influxdb3 PHASE [target] [workload flags]` (thin: the logic is in
//! [`crate::bench`]).

use crate::bench::flags::{Flags, GreptimeFlags, Influx3Flags, ProductFlags, REDACTED};
use crate::bench::{self, Phase, Request};
use crate::cli::common::{DatasetRootArgs, LockArgs, ServerTimingArgs};
use crate::cli::data::SpecArgs;
use crate::context::Ctx;
use crate::dataset::Compression;
use crate::error::Result;
use crate::output::Outcome;
use crate::tsbs::DatabaseMode;

#[derive(Debug, clap::Subcommand)]
pub enum BenchCmd {
    /// Benchmark GreptimeDB: all | load | query | compact | analyze.
    Greptimedb(Box<GreptimeArgs>),
    /// Benchmark InfluxDB 3 (Core or Enterprise): all | load | query.
    Influxdb3(Box<Influx3Args>),
}

/// The InfluxDB 3 phases.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Influx3Phase {
    /// Dataset and query set, then load, verify, query.
    All,
    /// Load (or reuse loaded data) and verify the row count.
    Load,
    /// Run every query type of the query set once.
    Query,
}

#[derive(Debug, clap::Args)]
pub struct Influx3Args {
    #[arg(value_enum)]
    pub phase: Influx3Phase,
    #[command(flatten)]
    pub common: CommonArgs,
    /// External targets: the edition the servers run.
    #[arg(long, value_name = "EDITION", value_enum)]
    pub edition: Option<crate::product::influxdb3::Edition>,
    /// Acknowledge writes before the WAL is persisted (default: durable acknowledgement).
    #[arg(long)]
    pub no_sync: bool,
    /// Accept the valid lines of a batch with invalid ones (default: reject the whole batch).
    #[arg(long)]
    pub accept_partial: bool,
    /// Environment variable holding the auth token (default INFLUXDB3_AUTH_TOKEN, if set).
    #[arg(long, value_name = "VAR")]
    pub auth_token_env: Option<String>,
    /// Environment variable holding the admin token (default INFLUXDB3_ADMIN_TOKEN, if set;
    /// else the auth token).
    #[arg(long, value_name = "VAR")]
    pub admin_token_env: Option<String>,
    /// Seconds one row-count request may take (default 1800: a count over the published
    /// 103.7 M rows can take minutes; Core's counts may be split into time slices).
    #[arg(long, value_name = "SECONDS")]
    pub count_timeout: Option<f64>,
}

/// Target and workload flags both products share.
#[derive(Debug, Clone, clap::Args)]
pub struct CommonArgs {
    /// Managed workspace to benchmark (its server is started and stopped by tsbsctl).
    #[arg(long, value_name = "ID")]
    pub database_id: Option<String>,
    /// External server instead of a managed workspace.
    #[arg(long = "url", value_name = "URL")]
    pub urls: Vec<String>,
    /// SQL database (managed: the workspace's; external: default benchmark).
    #[arg(long, value_name = "NAME")]
    pub database: Option<String>,
    /// What the loader does with an existing database (managed default: create).
    #[arg(long, value_name = "MODE", value_enum)]
    pub database_mode: Option<DatabaseMode>,
    /// Confirms a reset: the SQL database name, exactly.
    #[arg(long, value_name = "NAME")]
    pub confirm_reset: Option<String>,
    #[command(flatten)]
    pub spec: SpecArgs,
    /// The dataset to load (default: the profile's; query phases: the workspace's loaded one).
    #[arg(long, value_name = "ID")]
    pub dataset_id: Option<String>,
    /// Store a newly generated dataset compressed (streamed to the loader's stdin).
    #[arg(long, value_enum)]
    pub compression: Option<Compression>,
    #[command(flatten)]
    pub dataset_root: DatasetRootArgs,
    /// Only these query types (repeatable).
    #[arg(long = "query-type", value_name = "T")]
    pub query_types: Vec<String>,
    /// Queries per type (default: the profile's counts).
    #[arg(long, value_name = "N", allow_negative_numbers = true)]
    pub queries: Option<i64>,
    /// Count for one type, TYPE=N (repeatable).
    #[arg(long = "query-count", value_name = "T=N")]
    pub query_counts: Vec<String>,
    /// Loader workers (default: the product's for the profile).
    #[arg(long, value_name = "N")]
    pub load_workers: Option<u32>,
    /// Rows per write request (default: the product's for the profile).
    #[arg(long, value_name = "N")]
    pub batch_size: Option<u32>,
    /// Query-runner workers (default 1).
    #[arg(long, value_name = "N")]
    pub query_workers: Option<u32>,
    /// Name of the run directory (default: UTC time, YYYYMMDDTHHMMSSZ).
    #[arg(long, value_name = "ID")]
    pub run_id: Option<String>,
    #[command(flatten)]
    pub timing: ServerTimingArgs,
    /// Seconds a loader or query runner may go without progress in its periodic reports
    /// before it counts as stalled (default 300; the loader reports every 10 s).
    #[arg(long, value_name = "SECONDS", allow_negative_numbers = true)]
    pub stall_timeout: Option<f64>,
    /// On a stall: warn (terminal and events) and go on, or stop the tool (the run fails).
    #[arg(long, value_enum, value_name = "ACTION")]
    pub on_stall: Option<crate::bench::watch::OnStall>,
    #[command(flatten)]
    pub lock: LockArgs,
}

#[derive(Debug, clap::Args)]
pub struct GreptimeArgs {
    #[arg(value_enum)]
    pub phase: Phase,
    #[command(flatten)]
    pub common: CommonArgs,
    /// compact: table to compact.
    #[arg(long, value_name = "TABLE")]
    pub table: Option<String>,
    /// compact: strategy (swcs = strict window compaction).
    #[arg(long, value_name = "S")]
    pub strategy: Option<String>,
    /// compact: the window of swcs, in seconds of data (default 7200).
    #[arg(long, value_name = "SECONDS")]
    pub window: Option<u64>,
    /// compact: seconds to wait, after GreptimeDB answered, for the server log line that
    /// corroborates the compaction (default 5; the answer itself is the completion signal).
    #[arg(long, value_name = "SECONDS")]
    pub confirm_timeout: Option<f64>,
    /// compact: server-side parallelism of the compaction (`parallelism=N`, GreptimeDB
    /// 1.0.0-beta.1 and later; the server's default is 1).
    #[arg(long, value_name = "N")]
    pub parallelism: Option<u32>,
    /// query/all: run `ADMIN FLUSH_TABLE` before the queries, so they read SST files rather
    /// than memtables replayed from the WAL (recorded; off by default: the published flow
    /// does not flush).
    #[arg(long)]
    pub flush_before_queries: bool,
    /// analyze: how many more queries of the file run after the first, cold one (default 2).
    /// They are the file's next queries of the same type, on the warmed server: other random
    /// hosts and time windows, not repetitions of the first (only lastpoint's SQL is fixed).
    #[arg(long, value_name = "N")]
    pub hot_runs: Option<u32>,
    /// query/analyze: run this installed version on the workspace's data.
    #[arg(long, value_name = "V")]
    pub greptime_version: Option<String>,
    /// Confirms --greptime-version: the workspace id, exactly.
    #[arg(long, value_name = "ID")]
    pub confirm_version_override: Option<String>,
}

/// The recorded flags of the common arguments (the product's are added by the caller).
fn flags(c: &CommonArgs, phase: Phase) -> Flags {
    let spec = c.spec.overrides();
    Flags {
        phase: Some(phase.as_str().to_string()),
        database_id: c.database_id.clone(),
        urls: c.urls.clone(),
        database: c.database.clone(),
        database_mode: c.database_mode,
        confirm_reset: c.confirm_reset.clone(),
        profile: spec.profile,
        use_case: spec.use_case,
        start: spec.start,
        end: spec.end,
        scale: spec.scale,
        seed: spec.seed,
        log_interval: spec.log_interval,
        dataset_id: c.dataset_id.clone(),
        dataset_root: c.dataset_root.dataset_root.clone(),
        compression: c.compression,
        query_types: c.query_types.clone(),
        queries: c.queries,
        query_counts: c.query_counts.clone(),
        load_workers: c.load_workers,
        batch_size: c.batch_size,
        query_workers: c.query_workers,
        run_id: c.run_id.clone(),
        startup_timeout: c.timing.startup_timeout,
        stop_timeout: c.timing.stop_timeout,
        // What the run uses: the defaults applied.
        stall_timeout: Some(
            c.stall_timeout
                .unwrap_or(crate::bench::watch::DEFAULT_STALL_SECS),
        ),
        on_stall: Some(c.on_stall.unwrap_or_default().as_str().to_string()),
        wait: c.lock.wait,
        hold_token: c.lock.hold_token.as_ref().map(|_| REDACTED.to_string()),
        hold_token_env: c.lock.hold_token_env.clone(),
        hold_token_stdin: c.lock.hold_token_stdin,
        product: ProductFlags::default(),
    }
}

/// The request of recorded flags `f` (built from the record, as `runs rerun` does), with the
/// lock options of `c`.
fn request(c: &CommonArgs, f: Flags, phase: Phase) -> Result<Request> {
    let mut req = f.request(phase)?;
    req.lock = (&c.lock).into();
    req.flags = f.to_value();
    Ok(req)
}

pub fn run(ctx: &Ctx, cmd: BenchCmd) -> Result<Outcome> {
    match cmd {
        BenchCmd::Greptimedb(a) => {
            let a = *a;
            let mut f = flags(&a.common, a.phase);
            f.product.greptimedb = Some(GreptimeFlags {
                table: a.table,
                strategy: a.strategy,
                window: a.window,
                confirm_timeout: a.confirm_timeout,
                parallelism: a.parallelism,
                flush_before_queries: a.flush_before_queries,
                hot_runs: a.hot_runs,
                greptime_version: a.greptime_version,
                confirm_version_override: a.confirm_version_override,
            });
            let req = request(&a.common, f, a.phase)?;
            bench::run(ctx, &crate::product::greptimedb::ENTRY, &req)
        }
        BenchCmd::Influxdb3(a) => {
            let a = *a;
            let phase = match a.phase {
                Influx3Phase::All => Phase::All,
                Influx3Phase::Load => Phase::Load,
                Influx3Phase::Query => Phase::Query,
            };
            if let Some(t) = a.count_timeout {
                if !(t.is_finite() && t > 0.0 && t <= 86_400.0) {
                    return Err(crate::error::Error::invalid(format!(
                        "--count-timeout {t} is not a number of seconds in (0, 86400]"
                    ))
                    .with_hint("e.g. --count-timeout 3600"));
                }
            }
            let mut f = flags(&a.common, phase);
            f.product.influxdb3 = Some(Influx3Flags {
                edition: a.edition.map(|e| e.as_str().to_string()),
                no_sync: a.no_sync,
                accept_partial: a.accept_partial,
                // Variable names only: the values never leave the environment.
                auth_token_env: a.auth_token_env,
                admin_token_env: a.admin_token_env,
                count_timeout: a.count_timeout,
            });
            let req = request(&a.common, f, phase)?;
            bench::run(ctx, &crate::product::influxdb3::ENTRY, &req)
        }
    }
}
