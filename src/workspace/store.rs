//! The workspaces on disk: loading one (with its identity checked), its lock, the cheap
//! inspection and listing, the full verification, removal, and the sweeping of what
//! interrupted copies and removals left.

use std::fs;
use std::path::{Path, PathBuf};

use serde::Serialize;
use serde_json::{json, Value};

use crate::context::Ctx;
use crate::error::{Error, Result};
use crate::fsutil;
use crate::hash;
use crate::ids::validate_id;
use crate::install;
use crate::lock::{self, LockGuard, LockOptions};
use crate::output::{Event, LeftBy, Warning};
use crate::platform::Platform;
use crate::product::{Product, CONFIG_FILE};
use crate::server;

use super::prepare::check_config;
use super::{repair, workspace_dir, Workspace, WorkspaceManifest, PID_FILE};

/// Loads workspace `id`: a bad id or a missing workspace is invalid input (exit 2, with the
/// prepare command); an unreadable manifest is an integrity error (exit 4).
pub fn load(root: &crate::paths::Root, product: &dyn Product, id: &str) -> Result<Workspace> {
    validate_id("--database-id", id)?;
    let dir = workspace_dir(root, product, id);
    let m = read_manifest(&dir)?.ok_or_else(|| {
        Error::invalid(format!(
            "there is no {} workspace {id:?} (looked in {})",
            product.display_name(),
            dir.display()
        ))
        .with_hint(format!(
            "create it with `{} prepare --database-id {id}`, or see `{} list`",
            product.cli(),
            product.cli()
        ))
    })?;
    check_identity(product, &dir, &m, id)?;
    Ok(Workspace { dir, manifest: m })
}

pub(super) fn read_manifest(dir: &Path) -> Result<Option<WorkspaceManifest>> {
    crate::manifest::read_optional(&dir.join("manifest.json")).map_err(|e| {
        e.with_hint(format!(
            "inspect {} by hand; if it is beyond repair, remove it with `remove --confirm`",
            dir.display()
        ))
    })
}

pub(super) fn check_identity(
    product: &dyn Product,
    dir: &Path,
    m: &WorkspaceManifest,
    id: &str,
) -> Result<()> {
    if m.database_id != id || m.product != product.name() {
        return Err(Error::integrity(format!(
            "{} belongs to {} workspace {:?}, not {} workspace {id:?}",
            dir.join("manifest.json").display(),
            m.product,
            m.database_id,
            product.name()
        ))
        .with_hint("the directory was moved or renamed; move it back or prepare a new workspace"));
    }
    Ok(())
}

/// Takes the workspace lock (honouring a manual hold; exit 3 naming the holder when busy).
pub fn lock_workspace(
    ctx: &Ctx,
    product: &dyn Product,
    dir: &Path,
    id: &str,
    opts: &LockOptions,
) -> Result<LockGuard> {
    lock::lock_dir(
        dir,
        &format!("workspace {}/{id}", product.name()),
        &ctx.command_line(),
        None,
        opts,
        ctx.reporter.as_ref(),
    )
}

/// One problem [`inspect`] found, with what to do.
#[derive(Debug, Clone, Serialize)]
pub struct Problem {
    pub problem: String,
    pub fix: String,
}

/// What [`inspect`] reports (no hashing of big files, no server).
#[derive(Debug, Clone, Serialize)]
pub struct Inspection {
    pub database_id: String,
    pub path: PathBuf,
    /// `ok`, `broken`, or `unprepared` (a directory without a manifest).
    pub state: String,
    pub problems: Vec<Problem>,
    pub manifest: Option<Value>,
    /// The pid record of a server started by tsbsctl, and whether it still runs (a record
    /// whose process is gone was left by a killed tsbsctl; the next start reports and clears
    /// it, so it is not a problem).
    pub server: Option<Value>,
    /// Who holds the workspace lock right now (a running command), if anyone.
    pub locked_by: Option<String>,
    /// The manual hold on the workspace (`tsbsctl workspace lock`), if any.
    pub held_by: Option<String>,
}

/// Cheap inspection of workspace `id` (which must exist as a directory).
pub fn inspect(root: &crate::paths::Root, product: &dyn Product, id: &str) -> Result<Inspection> {
    validate_id("--database-id", id)?;
    let dir = workspace_dir(root, product, id);
    if !dir.is_dir() {
        return Err(Error::invalid(format!(
            "there is no {} workspace {id:?}",
            product.display_name()
        ))
        .with_hint(format!("see `{} list`", product.cli())));
    }
    Ok(inspect_dir(root, product, &dir, id))
}

/// [`inspect`] of the directory `dir` (for listings whose product depends on the manifest).
pub fn inspect_dir(
    root: &crate::paths::Root,
    product: &dyn Product,
    dir: &Path,
    id: &str,
) -> Inspection {
    let locked_by = match lock::probe(&lock::lock_path_of(dir)) {
        Ok(lock::LockState::Live(info)) => Some(
            info.map(|i| i.describe())
                .unwrap_or_else(|| "another process".into()),
        ),
        _ => None,
    };
    let held_by = lock::read_hold(dir).ok().flatten().map(|h| h.describe());
    let mut problems = Vec::new();
    let mut p = |problem: String, fix: String| problems.push(Problem { problem, fix });
    let cli = product.cli();
    let remove = format!("{cli} remove --database-id {id} --confirm {id}");
    let server = match server::read_pid_record(&dir.join(PID_FILE)) {
        Ok(Some(rec)) => {
            let alive = server::record_alive(&rec);
            Some(
                json!({"pid": rec.pid, "alive": alive, "started_at": rec.started_at, "log": rec.log}),
            )
        }
        Ok(None) => None,
        Err(e) => {
            p(
                e.message,
                "remove server.pid once no server of this workspace runs".into(),
            );
            None
        }
    };
    let m = match read_manifest(dir) {
        Ok(Some(m)) => m,
        Ok(None) => {
            return Inspection {
                database_id: id.to_string(),
                path: dir.to_path_buf(),
                state: "unprepared".into(),
                problems: vec![Problem {
                    problem: "no manifest.json (never prepared, or a prepare was interrupted)"
                        .into(),
                    fix: format!("{cli} prepare --database-id {id}"),
                }],
                manifest: None,
                server,
                locked_by,
                held_by,
            }
        }
        Err(e) => {
            p(e.message, repair::unreadable_manifest(dir));
            return Inspection {
                database_id: id.to_string(),
                path: dir.to_path_buf(),
                state: "broken".into(),
                problems,
                manifest: None,
                server,
                locked_by,
                held_by,
            };
        }
    };
    if let Err(e) = check_identity(product, dir, &m, id) {
        p(e.message, e.hint.unwrap_or_default());
    }
    let ws = Workspace {
        dir: dir.to_path_buf(),
        manifest: m.clone(),
    };
    match Platform::host() {
        Ok(h) if h.dashed() != m.platform => p(
            format!(
                "prepared for {}, this machine is {}",
                m.platform,
                h.dashed()
            ),
            "use it on a machine of that platform".into(),
        ),
        _ => {}
    }
    match ws.installation(root, product) {
        Ok(inst) => {
            if inst.manifest.binary_sha256 != m.binary_sha256 {
                // Rare: hashing the binary tells a changed record from a rebound workspace.
                let file_sha = crate::hash::sha256_file(&inst.binary(), &crate::output::NoProgress)
                    .ok()
                    .map(|(h, _)| h);
                p(
                    format!(
                        "bound to binary sha256 {}, but the installed {} {} has {}",
                        m.binary_sha256,
                        product.display_name(),
                        m.version,
                        inst.manifest.binary_sha256
                    ),
                    repair::binary_mismatch(root, product, &ws, file_sha.as_deref()),
                );
            }
        }
        Err(e) => p(e.message, e.hint.unwrap_or_default()),
    }
    if !ws.data_dir().is_dir() {
        p("data/ is missing".into(), remove.clone());
    }
    if m.config_sha256.is_some() {
        if !ws.config_path().exists() {
            p(
                format!("{CONFIG_FILE} is missing"),
                format!("{cli} prepare --database-id {id}"),
            );
        } else if let Err(e) = check_config(&ws) {
            p(e.message, e.hint.unwrap_or_default());
        }
    }
    let state = if problems.is_empty() { "ok" } else { "broken" };
    Inspection {
        database_id: id.to_string(),
        path: dir.to_path_buf(),
        state: state.into(),
        problems,
        manifest: serde_json::to_value(&m).ok(),
        server,
        locked_by,
        held_by,
    }
}

/// The ids of the workspace directories in `base` (a product's `databases/`), sorted
/// (dot-named staging and leftovers excluded; broken workspaces included).
pub fn workspace_ids(base: &Path) -> Vec<String> {
    let mut ids: Vec<String> = fs::read_dir(base)
        .map(|rd| {
            rd.flatten()
                .filter(|e| e.path().is_dir())
                .map(|e| e.file_name().to_string_lossy().into_owned())
                .filter(|n| !n.starts_with('.'))
                .collect()
        })
        .unwrap_or_default();
    ids.sort();
    ids
}

/// Every workspace of `product` (sorted by id), broken ones included with their reasons.
pub fn list(root: &crate::paths::Root, product: &dyn Product) -> Vec<Inspection> {
    let base = root.databases(product.name());
    workspace_ids(&base)
        .iter()
        .map(|id| inspect_dir(root, product, &base.join(id), id))
        .collect()
}

/// Full check: the cheap checks, then the installation re-hashed and run, the binary bound to
/// the workspace, the config as this tool renders it. A problem is an integrity error (exit 4)
/// listing what is wrong and the repair commands.
pub fn verify(ctx: &Ctx, product: &dyn Product, id: &str) -> Result<Value> {
    let ws = load(&ctx.root, product, id)?;
    let insp = inspect_dir(&ctx.root, product, &ws.dir, id);
    let mut problems = insp.problems;
    let mut report = Value::Null;
    if let Ok(inst) = ws.installation(&ctx.root, product) {
        match install::verify(product, &inst) {
            Ok(r) => {
                if r.binary_sha256 != ws.manifest.binary_sha256 {
                    problems.push(Problem {
                        problem: format!(
                            "the installed binary (sha256 {}) is not the one the workspace is bound to ({})",
                            r.binary_sha256, ws.manifest.binary_sha256
                        ),
                        fix: repair::binary_mismatch(&ctx.root, product, &ws, Some(&r.binary_sha256)),
                    });
                }
                report = serde_json::to_value(&r)?;
            }
            Err(e) => problems.push(Problem {
                problem: e.message,
                fix: e.hint.unwrap_or_default(),
            }),
        }
    }
    if ws.manifest.config_sha256.is_some() {
        if let Ok(Some(text)) = product.render_config(&ws.manifest, &ws.dir) {
            let now = hash::sha256_hex(text.as_bytes());
            if ws.manifest.config_sha256.as_deref() != Some(now.as_str()) {
                ctx.reporter.warning(&Warning::ConfigDiffers {
                    path: ws.config_path(),
                    written_by: ws.manifest.tool_version.clone(),
                });
            }
        }
    }
    // Not problems: the server runs with tsbsctl's value of each setting it names, and
    // records the others as in force. Said here so nobody is surprised by them.
    let outside = product.outside_settings(&ws.dir).unwrap_or_default();
    for s in &outside {
        ctx.reporter.warning(&Warning::OutsideSetting {
            file: s.file.to_string(),
            name: s.name.to_string(),
            value: s.value.to_string(),
            overridden: s.overridden,
        });
    }
    if !problems.is_empty() {
        let msg = problems
            .iter()
            .map(|p| p.problem.as_str())
            .collect::<Vec<_>>()
            .join("; ");
        // Two problems can share a fix (a binary mismatch is seen twice): said once.
        // One fix that spells out another (the same reinstall with why) replaces it (#20 b:
        // the reinstall was said twice).
        let mut fixes: Vec<&str> = Vec::new();
        for f in problems.iter().map(|p| p.fix.as_str()) {
            if f.is_empty() || fixes.iter().any(|e| e.contains(f)) {
                continue;
            }
            fixes.retain(|e| !f.contains(e));
            fixes.push(f);
        }
        let fixes = fixes.join("; then ");
        return Err(
            Error::integrity(format!("workspace {id} does not verify: {msg}")).with_hint(fixes),
        );
    }
    Ok(json!({
        "database_id": id,
        "path": ws.dir,
        "manifest": ws.manifest,
        "installation": report,
        "outside_settings": outside,
    }))
}

/// What `remove` did about a workspace's objects in an object store.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum RemovedObjects {
    /// The workspace keeps its data in its directory.
    None,
    /// Deleted: every object under the workspace's prefix (it found the prefix empty at
    /// `prepare`, so they were its own).
    Deleted {
        location: crate::s3::Location,
        objects: u64,
        bytes: u64,
    },
    /// Left in place: `--keep-objects`, or the workspace was prepared before tsbsctl checked
    /// its prefix empty (so the prefix may hold what is not only its own).
    Left {
        location: crate::s3::Location,
        asked: bool,
    },
    /// The manifest does not read, so where its objects are is unknown.
    Unknown,
}

/// Deletes workspace `id` under its lock; `confirm` must repeat the id. A workspace on object
/// storage that claimed its prefix at `prepare` has its objects deleted first, unless
/// `keep_objects`; if that fails part-way the workspace is kept, no longer bound to a dataset
/// (its data is incomplete), and the error says so.
pub fn remove(
    ctx: &Ctx,
    product: &dyn Product,
    id: &str,
    confirm: &str,
    keep_objects: bool,
    lock_opts: &LockOptions,
) -> Result<(PathBuf, RemovedObjects)> {
    validate_id("--database-id", id)?;
    if confirm != id {
        return Err(Error::invalid(format!(
            "--confirm {confirm:?} does not repeat --database-id {id:?}"
        ))
        .with_hint(format!("to delete it and all its data: --confirm {id}")));
    }
    let dir = workspace_dir(&ctx.root, product, id);
    if !dir.is_dir() {
        return Err(Error::invalid(format!(
            "there is no {} workspace {id:?}",
            product.display_name()
        ))
        .with_hint(format!("see `{} list`", product.cli())));
    }
    let _guard = lock_workspace(ctx, product, &dir, id, lock_opts)?;
    refuse_live_server(&dir)?;
    let objects = remove_objects(ctx, product, id, &dir, keep_objects)?;
    let aside = fsutil::staging_path(&dir, "removing")?;
    fsutil::rename_durable(&dir, &aside)?;
    fs_err::remove_dir_all(&aside)?;
    sweep_leftovers(ctx, product);
    Ok((dir, objects))
}

/// The object-store part of [`remove`], under the workspace's lock.
fn remove_objects(
    ctx: &Ctx,
    product: &dyn Product,
    id: &str,
    dir: &Path,
    keep_objects: bool,
) -> Result<RemovedObjects> {
    let Ok(Some(mut m)) = read_manifest(dir) else {
        return Ok(RemovedObjects::Unknown);
    };
    let location = match product.object_location(id, &m.extra) {
        Ok(Some(l)) => l,
        Ok(None) => return Ok(RemovedObjects::None),
        Err(_) => return Ok(RemovedObjects::Unknown),
    };
    if keep_objects || m.object_store_claimed_at.is_none() {
        return Ok(RemovedObjects::Left {
            location,
            asked: keep_objects,
        });
    }
    // The data goes first: should the deletion stop part-way (an error, kill -9), the
    // workspace that stays is no longer loaded, so no benchmark measures what is left of it.
    if m.binding.is_some() {
        m.binding = None;
        m.updated_at = crate::manifest::now_rfc3339();
        crate::manifest::write(&dir.join("manifest.json"), &m)?;
    }
    ctx.reporter.event(&Event::DeletingObjects {
        location: location.describe(),
    });
    let bar = ctx
        .reporter
        .progress("deleting objects", None, crate::output::Unit::Items);
    let done = location.delete_all(&mut |n| bar.set_position(n));
    bar.finish();
    let (objects, bytes) = done.map_err(|e| {
        e.with_hint(format!(
            "workspace {id} is kept, no longer loaded; remove it again to delete the rest, or leave the objects with `{} remove --database-id {id} --confirm {id} --keep-objects`",
            product.cli()
        ))
    })?;
    Ok(RemovedObjects::Deleted {
        location,
        objects,
        bytes,
    })
}

pub(super) fn refuse_live_server(dir: &Path) -> Result<()> {
    if let Some(rec) = server::read_pid_record(&dir.join(PID_FILE))? {
        if server::record_alive(&rec) {
            return Err(Error::busy(format!(
                "a server (pid {}) started by tsbsctl pid {} still runs on {}",
                rec.pid,
                rec.tsbsctl_pid,
                dir.display()
            ))
            .with_hint(format!("stop it first (`kill -TERM -{}`), or start `serve --kill-orphan` and stop it with Ctrl-C", rec.pgid)));
        }
    }
    Ok(())
}

/// Removes what interrupted copies and removals left in the databases directory
/// (`.<id>.copy-<pid>-<n>`, `.<id>.removing-<pid>-<n>` of processes that are gone).
pub(super) fn sweep_leftovers(ctx: &Ctx, product: &dyn Product) {
    let base = ctx.root.databases(product.name());
    let Ok(rd) = fs::read_dir(&base) else {
        return;
    };
    for e in rd.flatten() {
        let name = e.file_name().to_string_lossy().into_owned();
        let Some(rest) = name.strip_prefix('.') else {
            continue;
        };
        for tag in ["copy", "removing"] {
            let marker = format!(".{tag}-");
            if let Some(i) = rest.rfind(&marker) {
                let id = &rest[..i];
                for p in fsutil::clean_staging(&base.join(id), tag).unwrap_or_default() {
                    ctx.reporter.event(&Event::RemovedLeftover {
                        path: p,
                        left_by: LeftBy::Interrupted(tag.to_string()),
                    });
                }
            }
        }
    }
}
