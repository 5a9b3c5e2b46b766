//! `tsbsctl greptimedb install|prepare|copy|list|inspect|verify|remove|serve`: a thin layer over
//! [`crate::install`], [`crate::workspace`] and [`crate::server`] with the GreptimeDB product.

use std::collections::BTreeMap;

use crate::cli::bench as bench_cli;
use crate::cli::common::LockArgs;
use crate::cli::dbcmd::{self, IdArgs, RemoveArgs, ServeArgs};
use crate::context::Ctx;
use crate::error::Result;
use crate::output::Outcome;
use crate::product::greptimedb::GreptimeDb;
use crate::workspace::{CopyRequest, PrepareRequest};

#[derive(Debug, clap::Subcommand)]
pub enum GreptimedbCmd {
    /// Install a checksum-verified GreptimeDB release (latest stable without --version).
    #[command(disable_version_flag = true)]
    Install(InstallArgs),
    /// Create (or reuse) a workspace bound to one installed version and one SQL database.
    #[command(disable_version_flag = true)]
    Prepare(PrepareArgs),
    /// Copy a workspace's data to a new workspace bound to another installed version.
    #[command(disable_version_flag = true)]
    Copy(CopyArgs),
    /// List the workspaces, broken ones with their reasons (cheap: no hashing, no server).
    List,
    /// Show one workspace and why it is broken, if it is (cheap).
    Inspect(IdArgs),
    /// Re-hash the installation, run it, and check the workspace's config (exit 4 on damage).
    Verify(IdArgs),
    /// Delete a workspace and its data, under its lock.
    Remove(RemoveArgs),
    /// Run the workspace's server in the foreground until Ctrl-C.
    Serve(ServeArgs),
}

#[derive(Debug, clap::Args)]
pub struct InstallArgs {
    /// Exact version (1.1.4 or v1.1.4); default: the latest stable release on GitHub.
    #[arg(long, value_name = "V")]
    pub version: Option<String>,
    #[command(flatten)]
    pub install: dbcmd::ReinstallArgs,
}

#[derive(Debug, clap::Args)]
pub struct PrepareArgs {
    /// Workspace id: a letter or digit, then letters, digits, '.', '_' or '-' (at most 64).
    #[arg(long, value_name = "ID")]
    pub database_id: String,
    /// Version to bind (installed if needed); default: the workspace's version, else the newest
    /// installed, else the latest stable release.
    #[arg(long, value_name = "V")]
    pub version: Option<String>,
    /// SQL database the benchmarks use (default: benchmark).
    #[arg(long, value_name = "NAME")]
    pub database: Option<String>,
    /// HTTP port on 127.0.0.1 (default 4000); gRPC, MySQL and PostgreSQL use the next three.
    #[arg(long, value_name = "P")]
    pub http_port: Option<u16>,
    /// gRPC port (default: HTTP port + 1).
    #[arg(long, value_name = "P")]
    pub grpc_port: Option<u16>,
    /// MySQL port (default: HTTP port + 2).
    #[arg(long, value_name = "P")]
    pub mysql_port: Option<u16>,
    /// PostgreSQL port (default: HTTP port + 3).
    #[arg(long, value_name = "P")]
    pub postgres_port: Option<u16>,
    #[command(flatten)]
    pub lock: LockArgs,
}

#[derive(Debug, clap::Args)]
pub struct CopyArgs {
    /// The workspace to copy (locked while copying).
    #[arg(long, value_name = "ID")]
    pub source_database_id: String,
    /// The new workspace.
    #[arg(long, value_name = "ID")]
    pub database_id: String,
    /// The installed version the copy is bound to.
    #[arg(long, value_name = "V")]
    pub version: String,
    /// HTTP port of the copy (default: the source's ports).
    #[arg(long, value_name = "P")]
    pub http_port: Option<u16>,
    #[command(flatten)]
    pub lock: LockArgs,
}

#[derive(Debug, clap::Args)]
// `tsbsctl bench greptimedb PHASE ...` (no doc comment: clap would make it the help text).
pub struct BenchArgs {
    #[arg(value_enum)]
    pub phase: crate::bench::Phase,
    #[command(flatten)]
    pub common: bench_cli::CommonArgs,
    #[command(flatten)]
    pub product: crate::bench::flags::GreptimeFlags,
}

/// `tsbsctl bench greptimedb`: the shared flags plus GreptimeDB's own.
pub fn bench(ctx: &Ctx, a: BenchArgs) -> Result<Outcome> {
    let req = bench_request(a)?;
    crate::bench::run(ctx, &crate::product::greptimedb::ENTRY, &req)
}

/// The request of `tsbsctl bench greptimedb` (its checks done), with its recorded flags.
pub(super) fn bench_request(a: BenchArgs) -> Result<crate::bench::Request> {
    let product = crate::bench::flags::ProductFlags {
        greptimedb: Some(a.product),
        ..Default::default()
    };
    bench_cli::request(a.common, product, a.phase)
}

pub fn run(ctx: &Ctx, cmd: GreptimedbCmd) -> Result<Outcome> {
    let p = GreptimeDb;
    match cmd {
        GreptimedbCmd::Install(a) => dbcmd::install_cmd(
            ctx,
            &p,
            a.version.as_deref(),
            a.install.reinstall,
            a.install.wait,
        ),
        GreptimedbCmd::Prepare(a) => {
            let mut ports = BTreeMap::new();
            for (k, v) in [
                ("grpc", a.grpc_port),
                ("mysql", a.mysql_port),
                ("postgres", a.postgres_port),
            ] {
                if let Some(v) = v {
                    ports.insert(k.to_string(), v);
                }
            }
            let req = PrepareRequest {
                id: a.database_id,
                version: a.version,
                database: a.database,
                http_port: a.http_port,
                ports,
                extra: Default::default(),
            };
            dbcmd::prepare_cmd(ctx, &p, req, &a.lock)
        }
        GreptimedbCmd::Copy(a) => {
            let req = CopyRequest {
                source_id: a.source_database_id,
                id: a.database_id,
                version: a.version,
                http_port: a.http_port,
            };
            dbcmd::copy_cmd(ctx, &p, req, &a.lock)
        }
        GreptimedbCmd::List => dbcmd::list_cmd(ctx, &p),
        GreptimedbCmd::Inspect(a) => dbcmd::inspect_cmd(ctx, &p, a),
        GreptimedbCmd::Verify(a) => dbcmd::verify_cmd(ctx, &p, a),
        GreptimedbCmd::Remove(a) => dbcmd::remove_cmd(ctx, &p, a),
        GreptimedbCmd::Serve(a) => dbcmd::serve_cmd(ctx, &p, a),
    }
}
