//! `tsbsctl bench <product> PHASE [target] [workload flags]` (thin: the logic is in
//! [`crate::bench`]): the flags every product shares, their record and the request built from
//! it. Each product's own bench flags live in its CLI module (`cli/<product>.rs`).

use crate::bench::flags::{Flags, ProductFlags, REDACTED};
use crate::bench::{Phase, Request};
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
    Greptimedb(Box<super::greptimedb::BenchArgs>),
    /// Benchmark InfluxDB 3 (Core or Enterprise): all | load | query.
    Influxdb3(Box<super::influxdb3::BenchArgs>),
    /// Benchmark TimescaleDB or plain PostgreSQL: all | load | query.
    Timescaledb(Box<super::timescaledb::BenchArgs>),
    // Every registry product without a CLI module (generic.rs); last, like `Command::Product`.
    #[command(flatten)]
    Product(Box<super::generic::BenchProducts>),
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

/// The recorded flags of the common arguments (the product's are added by the caller).
pub(super) fn flags(c: &CommonArgs, phase: Phase) -> Flags {
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
pub(super) fn request(c: &CommonArgs, f: Flags, phase: Phase) -> Result<Request> {
    let mut req = f.request(phase)?;
    req.lock = (&c.lock).into();
    req.flags = f.to_value();
    Ok(req)
}

pub fn run(ctx: &Ctx, cmd: BenchCmd) -> Result<Outcome> {
    match cmd {
        BenchCmd::Greptimedb(a) => super::greptimedb::bench(ctx, *a),
        BenchCmd::Influxdb3(a) => super::influxdb3::bench(ctx, *a),
        BenchCmd::Timescaledb(a) => super::timescaledb::bench(ctx, *a),
        BenchCmd::Product(b) => super::generic::bench(ctx, *b),
    }
}
