//! `tsbsctl greptimedb install|prepare|copy|list|inspect|verify|remove|serve`: a thin layer over
//! [`crate::install`], [`crate::workspace`] and [`crate::server`] with the GreptimeDB product.

use std::collections::BTreeMap;
use std::time::Duration;

use serde_json::json;

use crate::cli::common::LockArgs;
use crate::context::Ctx;
use crate::error::{Error, Result};
use crate::install;
use crate::lock::LockOptions;
use crate::output::Outcome;
use crate::product::greptimedb::GreptimeDb;
use crate::product::Product;
use crate::server::Server;
use crate::workspace::{self, CopyRequest, PrepareRequest};

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
    /// Replace an existing installation of that version (atomically).
    #[arg(long)]
    pub reinstall: bool,
    /// Wait at most SECONDS for a concurrent install of the same version (default: 3600).
    #[arg(long, value_name = "SECONDS")]
    pub wait: Option<u64>,
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
pub struct IdArgs {
    #[arg(long, value_name = "ID")]
    pub database_id: String,
}

#[derive(Debug, clap::Args)]
pub struct RemoveArgs {
    #[arg(long, value_name = "ID")]
    pub database_id: String,
    /// Repeat the id to confirm the deletion.
    #[arg(long, value_name = "ID")]
    pub confirm: String,
    #[command(flatten)]
    pub lock: LockArgs,
}

#[derive(Debug, clap::Args)]
pub struct ServeArgs {
    #[arg(long, value_name = "ID")]
    pub database_id: String,
    /// Stop a server an earlier, killed tsbsctl left running on this workspace.
    #[arg(long)]
    pub kill_orphan: bool,
    /// Seconds to wait for the server to answer (default 60).
    #[arg(long, value_name = "SECONDS", default_value = "60")]
    pub startup_timeout: f64,
    /// Seconds between SIGTERM and SIGKILL when stopping (default 15).
    #[arg(long, value_name = "SECONDS", default_value = "15")]
    pub stop_timeout: f64,
    #[command(flatten)]
    pub lock: LockArgs,
}

pub fn run(ctx: &Ctx, cmd: GreptimedbCmd) -> Result<Outcome> {
    let p = GreptimeDb;
    match cmd {
        GreptimedbCmd::Install(a) => install_cmd(ctx, &p, a),
        GreptimedbCmd::Prepare(a) => prepare_cmd(ctx, &p, a),
        GreptimedbCmd::Copy(a) => copy_cmd(ctx, &p, a),
        GreptimedbCmd::List => list_cmd(ctx, &p),
        GreptimedbCmd::Inspect(a) => inspect_cmd(ctx, &p, a),
        GreptimedbCmd::Verify(a) => verify_cmd(ctx, &p, a),
        GreptimedbCmd::Remove(a) => remove_cmd(ctx, &p, a),
        GreptimedbCmd::Serve(a) => serve_cmd(ctx, &p, a),
    }
}

fn install_cmd(ctx: &Ctx, p: &dyn Product, a: InstallArgs) -> Result<Outcome> {
    let (version, source) = match &a.version {
        Some(v) => (
            p.normalize_version(v)?,
            install::source::EXPLICIT.to_string(),
        ),
        None => {
            let l = install::resolve_latest(ctx, p)?;
            ctx.reporter.info(&format!(
                "the latest stable {} release is {}",
                p.display_name(),
                l.version
            ));
            (l.version, l.source.to_string())
        }
    };
    let opts = LockOptions {
        wait: Some(Duration::from_secs(a.wait.unwrap_or(3600))),
        hold_token: None,
    };
    let o = install::install(ctx, p, &version, &source, a.reinstall, &opts)?;
    let i = &o.installation;
    let verb = if o.reused {
        "already installed"
    } else if o.replaced {
        "reinstalled"
    } else {
        "installed"
    };
    let human = format!(
        "{} {} {verb} at {}\n  binary sha256 {}\n",
        p.display_name(),
        i.manifest.version,
        i.dir.display(),
        i.manifest.binary_sha256
    );
    Ok(Outcome::new(
        json!({
            "installation_path": i.dir,
            "reused": o.reused,
            "replaced": o.replaced,
            "manifest": i.manifest,
        }),
        human,
    ))
}

fn prepare_cmd(ctx: &Ctx, p: &dyn Product, a: PrepareArgs) -> Result<Outcome> {
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
    };
    let o = workspace::prepare(ctx, p, &req, &(&a.lock).into())?;
    let ws = &o.workspace;
    let human = format!(
        "workspace {} {} ({} {}, database {}, {})\n  {}\n",
        ws.id(),
        if o.reused { "reused" } else { "prepared" },
        p.display_name(),
        ws.manifest.version,
        ws.manifest.database,
        ws.endpoint(),
        ws.dir.display()
    );
    Ok(Outcome::new(
        json!({
            "database_path": ws.dir,
            "reused": o.reused,
            "installed": o.installed.as_ref().map(|i| !i.reused).unwrap_or(false),
            "manifest": ws.manifest,
        }),
        human,
    ))
}

fn copy_cmd(ctx: &Ctx, p: &dyn Product, a: CopyArgs) -> Result<Outcome> {
    let req = CopyRequest {
        source_id: a.source_database_id,
        id: a.database_id,
        version: a.version,
        http_port: a.http_port,
    };
    let ws = workspace::copy(ctx, p, &req, &(&a.lock).into())?;
    let prov = ws.manifest.copied_from.as_ref();
    let human = format!(
        "workspace {} copied from {} ({} files, {} bytes, verified); bound to {} {}\n  {}\n",
        ws.id(),
        req.source_id,
        prov.map(|c| c.files).unwrap_or(0),
        prov.map(|c| c.bytes).unwrap_or(0),
        p.display_name(),
        ws.manifest.version,
        ws.dir.display()
    );
    Ok(Outcome::new(
        json!({"database_path": ws.dir, "reused": false, "manifest": ws.manifest}),
        human,
    ))
}

fn list_cmd(ctx: &Ctx, p: &dyn Product) -> Result<Outcome> {
    let all = workspace::list(&ctx.root, p);
    let mut human = String::new();
    if all.is_empty() {
        human.push_str(&format!(
            "no {} workspaces (create one with `{} prepare --database-id ID`)\n",
            p.display_name(),
            p.cli()
        ));
    }
    for i in &all {
        let m = i.manifest.as_ref();
        let field = |k: &str| {
            m.and_then(|m| m.get(k))
                .and_then(|v| v.as_str())
                .unwrap_or("-")
                .to_string()
        };
        human.push_str(&format!(
            "{:<24} {:<10} {:<14} {:<12}\n",
            i.database_id,
            i.state,
            field("version"),
            field("database")
        ));
        for pr in &i.problems {
            human.push_str(&format!("    {} (fix: {})\n", pr.problem, pr.fix));
        }
    }
    Ok(Outcome::new(json!({ "workspaces": all }), human))
}

fn inspect_cmd(ctx: &Ctx, p: &dyn Product, a: IdArgs) -> Result<Outcome> {
    let i = workspace::inspect(&ctx.root, p, &a.database_id)?;
    let mut human = format!(
        "workspace {}: {}\n  {}\n",
        i.database_id,
        i.state,
        i.path.display()
    );
    if let Some(m) = &i.manifest {
        for k in ["version", "platform", "database", "binary_sha256"] {
            human.push_str(&format!("  {k}: {}\n", m[k].as_str().unwrap_or("-")));
        }
        human.push_str(&format!("  ports: {}\n", m["ports"]));
        human.push_str(&format!("  binding: {}\n", m["binding"]));
    }
    if let Some(s) = &i.server {
        human.push_str(&format!(
            "  server: pid {} alive {}\n",
            s["pid"], s["alive"]
        ));
    }
    for pr in &i.problems {
        human.push_str(&format!("  problem: {}\n    fix: {}\n", pr.problem, pr.fix));
    }
    Ok(Outcome::new(serde_json::to_value(&i)?, human))
}

fn verify_cmd(ctx: &Ctx, p: &dyn Product, a: IdArgs) -> Result<Outcome> {
    let v = workspace::verify(ctx, p, &a.database_id)?;
    let human = format!(
        "workspace {} verified: installation, binary and config match their records\n",
        a.database_id
    );
    Ok(Outcome::new(v, human))
}

fn remove_cmd(ctx: &Ctx, p: &dyn Product, a: RemoveArgs) -> Result<Outcome> {
    let dir = workspace::remove(ctx, p, &a.database_id, &a.confirm, &(&a.lock).into())?;
    Ok(Outcome::new(
        json!({"database_id": a.database_id, "removed": dir}),
        format!("workspace {} removed ({})\n", a.database_id, dir.display()),
    ))
}

fn seconds(flag: &str, v: f64) -> Result<Duration> {
    if v.is_finite() && v > 0.0 && v < 1e7 {
        Ok(Duration::from_secs_f64(v))
    } else {
        Err(
            Error::invalid(format!("{flag} must be a positive number of seconds"))
                .with_hint(format!("e.g. {flag} 60")),
        )
    }
}

fn serve_cmd(ctx: &Ctx, p: &dyn Product, a: ServeArgs) -> Result<Outcome> {
    let mut timing = p.default_timing();
    timing.startup_timeout = seconds("--startup-timeout", a.startup_timeout)?;
    timing.grace = seconds("--stop-timeout", a.stop_timeout)?;
    let ws = workspace::load(&ctx.root, p, &a.database_id)?;
    let _guard = workspace::lock_workspace(ctx, p, &ws.dir, &a.database_id, &(&a.lock).into())?;
    let ws = workspace::load(&ctx.root, p, &a.database_id)?;
    let log = ws.logs_dir().join("server.log");
    let spec = workspace::server_spec(&ctx.root, p, &ws, log, timing, a.kill_orphan)?;
    ctx.reporter.info(&format!(
        "starting {} {} for workspace {} (log: {})",
        p.display_name(),
        ws.manifest.version,
        ws.id(),
        spec.log_path.display()
    ));
    let mut server = Server::start(spec, ctx.reporter.as_ref())?;
    server.wait_ready()?;
    ctx.reporter.info(&format!(
        "{} is serving workspace {} at {} (SQL database {}, pid {}); press Ctrl-C to stop it",
        server.label(),
        ws.id(),
        server.endpoint(),
        ws.manifest.database,
        server.pid()
    ));
    // Only ends with an error: Ctrl-C (exit 130, server stopped) or an unexpected exit.
    let err = match server.serve_until_interrupted() {
        Err(e) => e,
        Ok(()) => Error::failed("the server stopped"),
    };
    server.stop();
    Err(err)
}
