//! `tsbsctl bench influxdb2 all|load|query`: the shared bench flags plus `--token-env VAR`,
//! the environment variable holding an external server's token (default `INFLUXDB2_TOKEN`).
//! Only the variable's name is recorded (as `auth_token_env`, the field InfluxDB 3's token
//! variable has, so `runs rerun` reads it back through the same request); the token itself
//! never reaches an argv, a file with a name or a record.

use crate::bench::flags::{CommonFlags, Flags, Influx3Flags, ProductFlags};
use crate::bench::{Phase, Request};
use crate::context::Ctx;
use crate::error::Result;
use crate::output::Outcome;

/// The InfluxDB 2 phases (compaction and analysis are GreptimeDB's).
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Influx2Phase {
    /// Dataset and query set, then load, verify, query.
    All,
    /// Load (or reuse loaded data) and verify the row count.
    Load,
    /// Run every query type of the query set once.
    Query,
}

#[derive(Debug, clap::Args)]
// `tsbsctl bench influxdb2 PHASE ...` (no doc comment: clap would make it the help text).
pub struct BenchArgs {
    #[arg(value_enum)]
    pub phase: Influx2Phase,
    #[command(flatten)]
    pub common: CommonFlags,
    /// External servers: the environment variable holding the token (default
    /// INFLUXDB2_TOKEN). Managed workspaces use their own operator token.
    #[arg(long, value_name = "VAR")]
    pub token_env: Option<String>,
}

/// The request of `tsbsctl bench influxdb2`, with its recorded flags.
pub fn bench_request(a: BenchArgs) -> Result<Request> {
    let phase = match a.phase {
        Influx2Phase::All => Phase::All,
        Influx2Phase::Load => Phase::Load,
        Influx2Phase::Query => Phase::Query,
    };
    let lock = (&a.common.lock).into();
    let product = ProductFlags {
        influxdb3: a.token_env.map(|v| Influx3Flags {
            auth_token_env: Some(v),
            ..Influx3Flags::default()
        }),
        ..ProductFlags::default()
    };
    let f = Flags::record(phase, a.common, product);
    let mut req = f.request(phase)?;
    req.lock = lock;
    req.flags = f.to_value();
    Ok(req)
}

/// `tsbsctl bench influxdb2 PHASE`.
pub fn bench(ctx: &Ctx, a: BenchArgs) -> Result<Outcome> {
    let req = bench_request(a)?;
    crate::bench::run(ctx, &super::ENTRY, &req)
}
