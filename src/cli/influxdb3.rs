//! `tsbsctl influxdb3 install|prepare`: installations and workspaces of InfluxDB 3 Core and
//! Enterprise, over the generic [`crate::cli::dbcmd`] commands. (Licence activation and the
//! other workspace commands extend this file.)

use std::collections::BTreeMap;

use crate::cli::common::LockArgs;
use crate::cli::dbcmd;
use crate::context::Ctx;
use crate::error::Result;
use crate::output::Outcome;
use crate::product::influxdb3::{Edition, InfluxDb3};
use crate::workspace::PrepareRequest;

#[derive(Debug, clap::Subcommand)]
pub enum Influxdb3Cmd {
    /// Install a checksum-verified InfluxDB 3 release (latest without --version).
    #[command(disable_version_flag = true)]
    Install(InstallArgs),
    /// Create (or reuse) a workspace bound to one installed edition and version.
    #[command(disable_version_flag = true)]
    Prepare(PrepareArgs),
}

#[derive(Debug, clap::Args)]
pub struct InstallArgs {
    #[arg(long, value_name = "EDITION", value_parser = ["core", "enterprise"])]
    pub edition: String,
    /// Exact version (3.11.1); default: the latest from InfluxData's installer script.
    #[arg(long, value_name = "V")]
    pub version: Option<String>,
    /// Replace an existing installation of that version (atomically).
    #[arg(long)]
    pub reinstall: bool,
    /// Wait at most SECONDS for a concurrent install of the same version (default: 3600).
    #[arg(long, value_name = "SECONDS")]
    pub wait: Option<u64>,
}

#[derive(Debug, clap::Args)]
pub struct PrepareArgs {
    /// Workspace id.
    #[arg(long, value_name = "ID")]
    pub database_id: String,
    #[arg(long, value_name = "EDITION", value_parser = ["core", "enterprise"])]
    pub edition: String,
    /// Version to bind (installed if needed).
    #[arg(long, value_name = "V")]
    pub version: Option<String>,
    /// SQL database the benchmarks use (default: benchmark).
    #[arg(long, value_name = "NAME")]
    pub database: Option<String>,
    /// HTTP port on 127.0.0.1 (default 8181).
    #[arg(long, value_name = "P")]
    pub http_port: Option<u16>,
    #[command(flatten)]
    pub lock: LockArgs,
}

pub fn run(ctx: &Ctx, cmd: Influxdb3Cmd) -> Result<Outcome> {
    match cmd {
        Influxdb3Cmd::Install(a) => {
            let p = InfluxDb3::new(Edition::parse(&a.edition)?);
            dbcmd::install_cmd(ctx, &p, a.version.as_deref(), a.reinstall, a.wait)
        }
        Influxdb3Cmd::Prepare(a) => {
            let p = InfluxDb3::new(Edition::parse(&a.edition)?);
            let req = PrepareRequest {
                id: a.database_id,
                version: a.version,
                database: a.database,
                http_port: a.http_port,
                ports: BTreeMap::new(),
            };
            dbcmd::prepare_cmd(ctx, &p, req, &a.lock)
        }
    }
}
