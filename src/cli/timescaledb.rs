//! `tsbsctl timescaledb install|prepare|list|inspect|verify|remove|serve`: PostgreSQL is found
//! on this machine and pinned (not downloaded); a workspace binds one pinned installation and
//! one mode (`--mode timescaledb|postgresql`) for good. The generic commands of
//! [`crate::cli::dbcmd`] do the rest. `tsbsctl bench timescaledb`: the shared bench flags plus
//! this product's own (`--mode` and `--password-env` for external servers, the hypertable's
//! `--chunk-time` and `--partitions`).

use std::path::PathBuf;
use std::time::Duration;

use serde_json::json;

use crate::cli::bench as bench_cli;
use crate::cli::common::LockArgs;
use crate::cli::dbcmd::{self, IdArgs, RemoveArgs, ServeArgs};
use crate::context::Ctx;
use crate::error::{Error, Result};
use crate::install::{self, LocalPin};
use crate::lock::LockOptions;
use crate::output::Outcome;
use crate::platform::Platform;
use crate::product::timescaledb::install::{self as pginstall, SearchPaths};
use crate::product::timescaledb::{product as tsp, Durability, Mode, TimescaleDb, INSTALL_RECORD};
use crate::product::{Distribution, Product};
use crate::workspace::PrepareRequest;

#[derive(Debug, clap::Subcommand)]
pub enum TimescaledbCmd {
    /// Pin this machine's PostgreSQL installation (binaries' SHA-256, version, extension).
    #[command(disable_version_flag = true)]
    Install(InstallArgs),
    /// Create (or reuse) a workspace: initdb, bound to one installation and one mode.
    #[command(disable_version_flag = true)]
    Prepare(PrepareArgs),
    /// List the workspaces, broken ones with their reasons (cheap: no hashing, no server).
    List,
    /// Show one workspace and why it is broken, if it is (cheap).
    Inspect(IdArgs),
    /// Re-hash the pinned binaries, run postgres --version, check the config (exit 4 on damage).
    Verify(IdArgs),
    /// Delete a workspace and its cluster, under its lock.
    Remove(RemoveArgs),
    /// Run the workspace's server in the foreground until Ctrl-C.
    Serve(ServeArgs),
}

#[derive(Debug, clap::Args)]
pub struct InstallArgs {
    /// The PostgreSQL bin directory (default: `pg_config --bindir`, else the highest
    /// /usr/lib/postgresql/<ver>/bin, else Homebrew's postgresql@<ver>).
    #[arg(long, value_name = "DIR")]
    pub pg_bin: Option<PathBuf>,
    #[command(flatten)]
    pub install: dbcmd::ReinstallArgs,
}

#[derive(Debug, clap::Args)]
pub struct PrepareArgs {
    /// Workspace id: a letter or digit, then letters, digits, '.', '_' or '-' (at most 64).
    #[arg(long, value_name = "ID")]
    pub database_id: String,
    /// timescaledb (hypertables; needs the extension) or postgresql (plain tables).
    #[arg(long, value_name = "MODE", default_value = "timescaledb")]
    pub mode: String,
    /// Pinned PostgreSQL version to bind (default: the workspace's, else the newest pinned,
    /// else the installation found now, pinned).
    #[arg(long, value_name = "V")]
    pub version: Option<String>,
    /// SQL database the benchmarks use (default: benchmark).
    #[arg(long, value_name = "NAME")]
    pub database: Option<String>,
    /// Port on 127.0.0.1 (default 15432).
    #[arg(long, value_name = "P")]
    pub port: Option<u16>,
    /// durable (default for a new workspace: synchronous_commit = on, wal_level = replica, as
    /// the published comparison ran TimescaleDB) or relaxed (synchronous_commit = off,
    /// wal_level = minimal: faster loads, not comparable with published numbers). Bound for
    /// good; an existing workspace keeps its own.
    #[arg(long, value_name = "D")]
    pub durability: Option<String>,
    #[command(flatten)]
    pub lock: LockArgs,
}

#[derive(Debug, clap::Args)]
// `tsbsctl bench timescaledb PHASE ...` (no doc comment: clap would make it the help text).
pub struct BenchFlags {
    // all | load | query, or a phase of the product's own: the values are set per product
    // (`generic::phase_values`).
    #[arg(value_name = "PHASE")]
    pub phase: String,
    #[command(flatten)]
    pub common: bench_cli::CommonArgs,
    /// External targets: what the server is benchmarked as: timescaledb (hypertables; the
    /// extension must be installed and preloaded) or postgresql (plain tables).
    // Declared by the product (`timescaledb/flags.rs`) and given to it as text; parsed here
    // so `--help` lists the modes.
    #[arg(long, value_name = "MODE", value_parser = ["timescaledb", "postgresql"])]
    pub mode: Option<String>,
}

impl super::generic::OwnFlagsOf for BenchFlags {
    fn entry() -> &'static crate::product::Entry {
        &crate::product::timescaledb::ENTRY
    }
}

/// `tsbsctl bench timescaledb PHASE ...`: the flags above, then the flags TimescaleDB
/// declares itself (`password_env`: a variable's name).
pub type BenchArgs = super::generic::WithOwnFlags<BenchFlags>;

/// The request of `tsbsctl bench timescaledb` (its checks done), with its recorded flags.
/// `--password-env` with a managed workspace is refused: its server trusts local connections
/// (initdb `--auth=trust`), a password would mean nothing.
pub(super) fn bench_request(a: BenchArgs) -> Result<crate::bench::Request> {
    let phase = super::generic::phase_of(&crate::product::timescaledb::ENTRY, &a.flags.phase)?;
    let password_env = a
        .own
        .get(&crate::product::timescaledb::flags::PASSWORD_ENV.key())
        .and_then(serde_json::Value::as_str);
    if let (Some(var), Some(id)) = (password_env, &a.flags.common.database_id) {
        return Err(Error::invalid(format!(
            "--password-env {var} applies to external servers (--url); workspace {id}'s server trusts local connections and takes no password"
        ))
        .with_hint("drop --password-env, or benchmark an external server with --url postgres://USER@HOST:PORT/DB --password-env VAR"));
    }
    // `password_env` is the variable's name only: the value never leaves the environment.
    let mode = a.flags.mode.as_deref();
    let product = a.product_flags(mode.map(|m| (&crate::product::timescaledb::flags::MODE, m)));
    bench_cli::request(a.flags.common, product, phase)
}

fn found_by(f: pginstall::FoundBy) -> &'static str {
    match f {
        pginstall::FoundBy::Flag => "pg-bin",
        pginstall::FoundBy::PgConfig => "pg-config",
        pginstall::FoundBy::Debian => "debian-path",
        pginstall::FoundBy::Homebrew => "homebrew-path",
    }
}

/// Finds and pins an installation (the store keeps it at `<pg-version>/<platform>`).
fn pin(
    ctx: &Ctx,
    pg_bin: Option<&std::path::Path>,
    reinstall: bool,
    wait: Option<u64>,
) -> Result<(install::InstallOutcome, pginstall::PgInstallation)> {
    let found = pginstall::find(pg_bin, &SearchPaths::default())?;
    let record = serde_json::to_vec_pretty(&found).map_err(|e| Error::failed(e.to_string()))?;
    let p = TimescaleDb {
        mode: Mode::Postgresql,
    };
    let lp = LocalPin {
        version: found.version.version.clone(),
        version_source: found_by(found.found_by).to_string(),
        source_url: format!("file://{}", found.bin_dir.display()),
        binary: found.binary("postgres"),
        files: vec![(INSTALL_RECORD.to_string(), record)],
    };
    let opts = LockOptions {
        wait: Some(Duration::from_secs(wait.unwrap_or(3600))),
        hold_token: None,
    };
    let o = install::pin_local(ctx, &p, &lp, reinstall, &opts)?;
    let rec = tsp::read_record(&o.installation.dir)?;
    Ok((o, rec))
}

fn install_cmd(ctx: &Ctx, a: InstallArgs) -> Result<Outcome> {
    let (o, rec) = pin(
        ctx,
        a.pg_bin.as_deref(),
        a.install.reinstall,
        a.install.wait,
    )?;
    let i = &o.installation;
    let verb = if o.reused {
        "already pinned"
    } else if o.replaced {
        "pinned again"
    } else {
        "pinned"
    };
    let ext = match rec.extension_version() {
        Some(v) => format!("timescaledb extension {v} available"),
        None => "no timescaledb extension: only --mode postgresql".to_string(),
    };
    let human = format!(
        "PostgreSQL {} ({}) {verb} at {}\n  {}\n  {ext}\n",
        rec.version.version,
        rec.bin_dir.display(),
        i.dir.display(),
        rec.version.text,
    );
    Ok(Outcome::new(
        json!({
            "installation_path": i.dir,
            "reused": o.reused,
            "replaced": o.replaced,
            "manifest": i.manifest,
            "postgresql": rec,
        }),
        human,
    ))
}

fn prepare_cmd(ctx: &Ctx, a: PrepareArgs) -> Result<Outcome> {
    let mode = Mode::parse(&a.mode)
        .map_err(|e| e.with_hint("use --mode timescaledb or --mode postgresql"))?;
    let p = TimescaleDb { mode };
    let platform = Platform::host()?;
    // The installation first: TimescaleDB mode without the extension is refused before
    // anything is created.
    let durability = a.durability.as_deref().map(Durability::parse).transpose()?;
    let existing_ws = crate::workspace::load(&ctx.root, &p, &a.database_id).ok();
    // A workspace's durability is part of what it measures: never changed in place.
    if let (Some(want), Some(w)) = (durability, &existing_ws) {
        let have = Durability::of(&w.manifest.extra);
        if want != have {
            return Err(Error::invalid(format!(
                "workspace {} was prepared with --durability {}; it cannot become {}",
                a.database_id,
                have.as_str(),
                want.as_str()
            ))
            .with_hint(format!(
                "a workspace never changes its durability: prepare a new one (`tsbsctl timescaledb prepare --database-id NEW --durability {}`)",
                want.as_str()
            )));
        }
    }
    let existing = existing_ws.map(|w| w.manifest.version);
    let version = match a
        .version
        .as_deref()
        .map(|v| p.normalize_version(v))
        .transpose()?
    {
        Some(v) => Some(v),
        None => existing,
    };
    let inst = match &version {
        Some(v) => install::open(&ctx.root, &p, v, &platform)?.ok_or_else(|| {
            Error::invalid(format!("PostgreSQL {v} is not pinned"))
                .with_hint("pin it with `tsbsctl timescaledb install [--pg-bin DIR]`")
        })?,
        None => match install::newest_stable_installed(&ctx.root, &p, &platform) {
            Some(i) => i,
            None => {
                let (o, _) = pin(ctx, None, false, a.lock.wait)?;
                o.installation
            }
        },
    };
    let rec = tsp::read_record(&inst.dir)?;
    mode.require_available(rec.extension_version(), &rec.bin_dir.display().to_string())?;
    let req = PrepareRequest {
        id: a.database_id,
        version: Some(inst.manifest.version.clone()),
        database: a.database,
        http_port: a.port,
        ports: Default::default(),
        extra: [(
            Durability::FIELD.to_string(),
            durability.unwrap_or(Durability::Durable).as_str().into(),
        )]
        .into_iter()
        .collect(),
    };
    let mut o = dbcmd::prepare_cmd(ctx, &p, req, &a.lock)?;
    let label = mode.label(&rec.version.version, rec.extension_version());
    // The manifest's product fields are flattened into it.
    let kept = Durability::of(&o.data["manifest"].as_object().cloned().unwrap_or_default());
    o.push_line(&format!(
        "  {label}\n  durability: {}{}\n",
        kept.as_str(),
        match kept {
            Durability::Durable => " (synchronous_commit = on, wal_level = replica, as published)",
            Durability::Relaxed => " (synchronous_commit = off, wal_level = minimal: not comparable with published numbers)",
        }
    ));
    if let Some(obj) = o.data.as_object_mut() {
        obj.insert("label".into(), label.into());
        obj.insert("durability".into(), kept.as_str().into());
    }
    Ok(o)
}

/// The product of an existing workspace (its mode from its manifest).
fn existing(ctx: &Ctx, id: &str) -> Result<Box<dyn Product>> {
    crate::product::for_workspace(&ctx.root, "timescaledb", id)
}

pub fn run(ctx: &Ctx, cmd: TimescaledbCmd) -> Result<Outcome> {
    match cmd {
        TimescaledbCmd::Install(a) => install_cmd(ctx, a),
        TimescaledbCmd::Prepare(a) => prepare_cmd(ctx, a),
        TimescaledbCmd::List => dbcmd::list_cmd(
            ctx,
            &TimescaleDb {
                mode: Mode::Timescaledb,
            },
        ),
        TimescaledbCmd::Inspect(a) => {
            let p = existing(ctx, &a.database_id)?;
            let mut o = dbcmd::inspect_cmd(ctx, p.as_ref(), a)?;
            if let Some(mode) = o.data["manifest"]["edition"].as_str() {
                o.push_line(&format!("  mode: {mode}\n"));
            }
            Ok(o)
        }
        TimescaledbCmd::Verify(a) => {
            let p = existing(ctx, &a.database_id)?;
            dbcmd::verify_cmd(ctx, p.as_ref(), a)
        }
        TimescaledbCmd::Remove(a) => {
            let p = existing(ctx, &a.database_id)?;
            dbcmd::remove_cmd(ctx, p.as_ref(), a)
        }
        TimescaledbCmd::Serve(a) => {
            let p = existing(ctx, &a.database_id)?;
            dbcmd::serve_cmd(ctx, p.as_ref(), a)
        }
    }
}
