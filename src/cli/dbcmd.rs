//! Commands every database product has (`install`, `prepare`, `copy`, `list`, `inspect`,
//! `verify`, `remove`, `serve`), written once over [`Product`]. Each product's CLI file defines
//! its own flags (editions, ports) and calls these.

use std::time::Duration;

use serde_json::json;

use crate::cli::common::LockArgs;
use crate::context::Ctx;
use crate::error::{Error, Result};
use crate::install;
use crate::lock::LockOptions;
use crate::output::Outcome;
use crate::product::Product;
use crate::server::Server;
use crate::workspace::{self, CopyRequest, PrepareRequest};

/// Flags `install` shares across products (the version flag differs in its help).
#[derive(Debug, clap::Args)]
pub struct ReinstallArgs {
    /// Replace an existing installation of that version (atomically).
    #[arg(long)]
    pub reinstall: bool,
    /// Wait at most SECONDS for a concurrent install of the same version (default: 3600).
    // At most a week (trial-run #1): a huge wait overflowed the deadline.
    #[arg(long, value_name = "SECONDS", value_parser = clap::value_parser!(u64).range(..=crate::bounds::MAX_WAIT_SECS))]
    pub wait: Option<u64>,
}

#[derive(Debug, clap::Args)]
pub struct ServeArgs {
    /// Workspace id.
    #[arg(long, value_name = "ID")]
    pub database_id: String,
    /// Stop a server an earlier, killed tsbsctl left running on this workspace.
    #[arg(long)]
    pub kill_orphan: bool,
    #[command(flatten)]
    pub timing: crate::cli::common::ServerTimingArgs,
    #[command(flatten)]
    pub shape: crate::bench::flags::ServerShapeArgs,
    #[command(flatten)]
    pub lock: LockArgs,
}

#[derive(Debug, clap::Args)]
pub struct RemoveArgs {
    /// Workspace id.
    #[arg(long, value_name = "ID")]
    pub database_id: String,
    /// Repeat the id to confirm the deletion.
    #[arg(long, value_name = "ID")]
    pub confirm: String,
    /// A workspace on object storage: leave its objects in the bucket (by default they are
    /// deleted with it, when `prepare` found its prefix empty).
    #[arg(long)]
    pub keep_objects: bool,
    #[command(flatten)]
    pub lock: LockArgs,
}

#[derive(Debug, clap::Args)]
pub struct IdArgs {
    /// Workspace id.
    #[arg(long, value_name = "ID")]
    pub database_id: String,
}

/// `install [--version V] [--reinstall] [--wait S]`.
pub fn install_cmd(
    ctx: &Ctx,
    p: &dyn Product,
    version: Option<&str>,
    reinstall: bool,
    wait: Option<u64>,
) -> Result<Outcome> {
    let (version, source) = match version {
        Some(v) => (
            p.normalize_version(v)?,
            install::source::EXPLICIT.to_string(),
        ),
        None => {
            let l = install::resolve_latest(ctx, p)?;
            ctx.reporter.info(&format!(
                "{} {}: {}",
                p.display_name(),
                l.version,
                p.latest_words()
            ));
            (l.version, l.source.to_string())
        }
    };
    // Workspaces bound to the binary a reinstall replaces: said now, not at their next run.
    let before = reinstall
        .then(|| {
            let platform = crate::platform::Platform::host().ok()?;
            install::installed(&ctx.root, p, &platform)
                .into_iter()
                .find(|i| i.manifest.version == version)
                .map(|i| i.manifest.binary_sha256)
        })
        .flatten();
    let opts = LockOptions {
        wait: Some(Duration::from_secs(wait.unwrap_or(3600))),
        hold_token: None,
    };
    let o = install::install(ctx, p, &version, &source, reinstall, &opts)?;
    let i = &o.installation;
    if let Some(old) = before.filter(|b| o.replaced && *b != i.manifest.binary_sha256) {
        let stranded: Vec<String> = workspace::list(&ctx.root, p)
            .into_iter()
            .filter(|w| {
                w.manifest.as_ref().is_some_and(|m| {
                    m["version"] == version.as_str() && m["binary_sha256"] == old.as_str()
                })
            })
            .map(|w| w.database_id)
            .collect();
        if !stranded.is_empty() {
            let copy = if p.has_copy() {
                format!(", or copy their data to new ones (`{} copy`)", p.cli())
            } else {
                String::new()
            };
            ctx.reporter.warn(&format!(
                "the reinstalled {} {version} is another binary (sha256 {}) than the one workspace(s) {} are bound to ({old}); they no longer verify or run: prepare new workspaces{copy}",
                p.display_name(),
                i.manifest.binary_sha256,
                stranded.join(", ")
            ));
        }
    }
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

/// `prepare`: creates or reuses a workspace.
pub fn prepare_cmd(
    ctx: &Ctx,
    p: &dyn Product,
    req: PrepareRequest,
    lock: &LockArgs,
) -> Result<Outcome> {
    let o = workspace::prepare(ctx, p, &req, &lock.into())?;
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

/// `copy`: a verified, independent copy bound to another installed version.
pub fn copy_cmd(ctx: &Ctx, p: &dyn Product, req: CopyRequest, lock: &LockArgs) -> Result<Outcome> {
    let ws = workspace::copy(ctx, p, &req, &lock.into())?;
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

/// `list`
pub fn list_cmd(ctx: &Ctx, p: &dyn Product) -> Result<Outcome> {
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

/// `inspect`
pub fn inspect_cmd(ctx: &Ctx, p: &dyn Product, a: IdArgs) -> Result<Outcome> {
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
    if let Some(h) = &i.held_by {
        human.push_str(&format!("  held by: {h}\n"));
    }
    if let Some(l) = &i.locked_by {
        human.push_str(&format!("  locked by: {l}\n"));
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

/// `verify`
pub fn verify_cmd(ctx: &Ctx, p: &dyn Product, a: IdArgs) -> Result<Outcome> {
    let v = workspace::verify(ctx, p, &a.database_id)?;
    let human = format!(
        "workspace {} verified: installation, binary and config match their records\n",
        a.database_id
    );
    Ok(Outcome::new(v, human))
}

/// `remove`
pub fn remove_cmd(ctx: &Ctx, p: &dyn Product, a: RemoveArgs) -> Result<Outcome> {
    use workspace::RemovedObjects;
    let id = &a.database_id;
    // What will be left is listed before the removal (the manifest names where it is), so the
    // person learns what stays and where.
    let left = workspace::load(&ctx.root, p, id)
        .ok()
        .filter(|ws| a.keep_objects || ws.manifest.object_store_claimed_at.is_none())
        .map(|ws| p.object_store_footprint(&ws.manifest, &ws.dir));
    let (dir, objects) =
        workspace::remove(ctx, p, id, &a.confirm, a.keep_objects, &(&a.lock).into())?;
    let mut text = format!("workspace {id} removed ({})\n", dir.display());
    let mut data = json!({"database_id": id, "removed": dir});
    let size = |b: u64| crate::render::bytes(minijinja::Value::from(b));
    match objects {
        RemovedObjects::None => {}
        RemovedObjects::Deleted {
            location,
            objects,
            bytes,
        } => {
            text.push_str(&format!(
                "deleted its {objects} object(s), {}, in {}\n",
                size(bytes),
                location.describe()
            ));
            data["object_store_deleted"] = json!({
                "endpoint": location.endpoint, "bucket": location.bucket,
                "prefix": location.prefix, "objects": objects, "bytes": bytes,
            });
        }
        RemovedObjects::Left { location, asked } => {
            let why = if asked {
                "--keep-objects"
            } else {
                "it was prepared before tsbsctl checked its prefix empty, so the prefix may hold what is not only its own"
            };
            let (bucket, prefix, endpoint) =
                (&location.bucket, &location.prefix, &location.endpoint);
            match left {
                Some(Ok(Some((o, _)))) => {
                    text.push_str(&format!(
                        "left in object storage ({why}): {} object(s), {} in bucket {bucket} at {endpoint} under {prefix}/ (to delete them: `aws s3 rm --recursive s3://{bucket}/{prefix}/ --endpoint-url {endpoint}`)\n",
                        o["objects"].as_u64().unwrap_or(0),
                        crate::render::bytes(minijinja::Value::from_serialize(&o["bytes"])),
                    ));
                    data["object_store_left"] = json!({
                        "endpoint": endpoint, "bucket": bucket, "prefix": prefix,
                        "objects": o["objects"], "bytes": o["bytes"], "why": why,
                    });
                }
                Some(Err(e)) => {
                    text.push_str(&format!(
                        "its objects in {} were left ({why}) and not listed: {}\n",
                        location.describe(),
                        e.message
                    ));
                    data["object_store_left"] = json!({
                        "endpoint": endpoint, "bucket": bucket, "prefix": prefix,
                        "listed": false, "reason": e.message, "why": why,
                    });
                }
                _ => {
                    text.push_str(&format!(
                        "its objects in {} were left ({why})\n",
                        location.describe()
                    ));
                    data["object_store_left"] = json!({
                        "endpoint": endpoint, "bucket": bucket, "prefix": prefix,
                        "listed": false, "why": why,
                    });
                }
            }
        }
        RemovedObjects::Unknown => {
            text.push_str(
                "its manifest did not read, so any objects it kept in an object store were left where they are\n",
            );
        }
    }
    Ok(Outcome::new(data, text))
}

/// `serve`: the workspace's server in the foreground until Ctrl-C (exit 130).
pub fn serve_cmd(ctx: &Ctx, p: &dyn Product, a: ServeArgs) -> Result<Outcome> {
    let timing = a.timing.apply(p.default_timing());
    let shape = a.shape.shape();
    if let Some(s) = &shape {
        crate::server::cgroup::check(s)?;
    }
    let ws = workspace::load(&ctx.root, p, &a.database_id)?;
    let _guard = workspace::lock_workspace(ctx, p, &ws.dir, &a.database_id, &(&a.lock).into())?;
    let ws = workspace::load(&ctx.root, p, &a.database_id)?;
    let log = ws.logs_dir().join("server.log");
    let mut spec = workspace::server_spec(&ctx.root, p, &ws, log, timing, a.kill_orphan)?;
    workspace::shape_spec(p, &ws, &mut spec, shape)?;
    ctx.reporter.info(&format!(
        "starting {} {} for workspace {} (log: {})",
        p.display_name(),
        ws.manifest.version,
        ws.id(),
        spec.log_path.display()
    ));
    let mut server = Server::start(spec, ctx.reporter.as_ref())?;
    server.wait_ready()?;
    let shaped = server
        .shape_record()
        .map(|r| format!(", held to {}", r.words()))
        .unwrap_or_default();
    ctx.reporter.info(&format!(
        "{} is serving workspace {} at {} (SQL database {}, pid {}{shaped}); press Ctrl-C to stop it",
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
