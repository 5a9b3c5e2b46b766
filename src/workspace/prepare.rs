//! `prepare`: a new workspace (its version chosen and installed when needed, its ports and
//! config), or the reuse of one that matches the request; a workspace never changes its
//! version, platform, SQL database or ports.

use std::collections::BTreeMap;
use std::fs;
use std::path::Path;

use serde_json::Value;

use crate::context::Ctx;
use crate::error::{Error, Result};
use crate::fsutil;
use crate::hash;
use crate::ids::validate_id;
use crate::install::{self, InstallOutcome};
use crate::lock::LockOptions;
use crate::output::{Event, SharedPort};
use crate::platform::Platform;
use crate::product::{Product, WorkspaceSetup, CONFIG_FILE};

use super::store::{check_identity, lock_workspace, read_manifest, sweep_leftovers};
use super::{workspace_dir, DataState, Workspace, WorkspaceManifest, DEFAULT_DATABASE};

/// What `prepare` was asked for.
#[derive(Debug, Clone, Default)]
pub struct PrepareRequest {
    pub id: String,
    /// Raw `--version` (normalised by the product).
    pub version: Option<String>,
    pub database: Option<String>,
    pub http_port: Option<u16>,
    /// Overrides of other listener ports (`grpc` -> 5001, ...).
    pub ports: BTreeMap<String, u16>,
    /// Product fields of a new workspace, over
    /// [`crate::product::WorkspaceSetup::new_workspace_fields`] (TimescaleDB: its durability).
    /// An existing workspace keeps its own: the product's CLI checks them.
    pub extra: serde_json::Map<String, serde_json::Value>,
}

/// What `prepare` did.
#[derive(Debug)]
pub struct PrepareOutcome {
    pub workspace: Workspace,
    pub reused: bool,
    /// Set when `prepare` had to install the version first.
    pub installed: Option<InstallOutcome>,
}

/// Creates workspace `req.id`, or reuses it when it already matches the request.
///
/// Without `--version`: the workspace's bound version, else the newest installed version, else
/// the latest release (installed now). A version that is not installed is installed.
pub fn prepare(
    ctx: &Ctx,
    product: &dyn Product,
    req: &PrepareRequest,
    lock_opts: &LockOptions,
) -> Result<PrepareOutcome> {
    validate_id("--database-id", &req.id)?;
    if let Some(d) = &req.database {
        crate::ids::validate_sql_identifier("--database", d)?;
    }
    let version = req
        .version
        .as_deref()
        .map(|v| product.normalize_version(v))
        .transpose()?;
    let ports = requested_ports(product, req)?;
    let platform = Platform::host()?;
    product.check_platform(&platform)?;
    let dir = workspace_dir(&ctx.root, product, &req.id);

    // Check before touching anything (the lock creates the directory); again under the lock.
    let existing = read_manifest(&dir)?;
    if let Some(m) = &existing {
        check_identity(product, &dir, m, &req.id)?;
        check_unchanged(product, m, req, version.as_deref(), &ports, &platform)?;
    } else {
        check_adoptable(&dir)?;
        check_prefix_free(product, &req.id, &new_fields(product, req))?;
    }

    // The workspace records how its version was first chosen; an install made now records
    // why it was made (for an existing workspace: because the workspace is bound to it).
    let (version, version_source) = match (&version, &existing) {
        (Some(v), None) => (v.clone(), install::source::EXPLICIT.to_string()),
        (_, Some(m)) => (m.version.clone(), m.version_source.clone()),
        (None, None) => match install::newest_stable_installed(&ctx.root, product, &platform) {
            Some(i) => (
                i.manifest.version.clone(),
                install::source::NEWEST_INSTALLED.to_string(),
            ),
            None => {
                let latest = install::resolve_latest(ctx, product)?;
                ctx.reporter.event(&Event::NoneInstalled {
                    product: product.display_name(),
                    latest: latest.version.to_string(),
                });
                (latest.version, latest.source.to_string())
            }
        },
    };

    let (installation, installed) = match install::open(&ctx.root, product, &version, &platform)? {
        Some(i) => (i, None),
        None => {
            let src = if existing.is_some() {
                install::source::WORKSPACE
            } else {
                version_source.as_str()
            };
            let o = install::install(ctx, product, &version, src, false, &install_lock(lock_opts))?;
            (o.installation.clone(), Some(o))
        }
    };

    ctx.root.ensure()?;
    sweep_leftovers(ctx, product);
    let _guard = lock_workspace(ctx, product, &dir, &req.id, lock_opts)?;
    match read_manifest(&dir)? {
        Some(m) => {
            check_identity(product, &dir, &m, &req.id)?;
            check_unchanged(product, &m, req, Some(&version), &ports, &platform)?;
            if m.binary_sha256 != installation.manifest.binary_sha256 {
                return Err(Error::integrity(format!(
                    "workspace {} is bound to a {} {} binary with sha256 {}, but the installed one has {}",
                    req.id,
                    product.display_name(),
                    m.version,
                    m.binary_sha256,
                    installation.manifest.binary_sha256
                ))
                .with_hint(format!(
                    "the installation was replaced by different bytes; use a new --database-id, or copy the data: `{} copy --source-database-id {} --database-id NEW --version {}`",
                    product.cli(),
                    req.id,
                    m.version
                )));
            }
            let mut ws = Workspace { dir, manifest: m };
            repair_layout(product, &mut ws)?;
            Ok(PrepareOutcome {
                workspace: ws,
                reused: true,
                installed,
            })
        }
        None => {
            check_adoptable(&dir)?;
            let now = crate::manifest::now_rfc3339();
            let m = WorkspaceManifest {
                database_id: req.id.clone(),
                product: product.name().to_string(),
                variant: product.variant().map(str::to_string),
                version: version.clone(),
                version_source,
                platform: platform.dashed(),
                installation_path: installation.dir.clone(),
                binary_sha256: installation.manifest.binary_sha256.clone(),
                database: req
                    .database
                    .clone()
                    .unwrap_or_else(|| DEFAULT_DATABASE.to_string()),
                ports,
                config_sha256: None,
                binding: None,
                data_state: DataState::default(),
                copied_from: None,
                object_store_claimed_at: None,
                created_at: now.clone(),
                updated_at: now,
                tool_version: crate::VERSION.to_string(),
                extra: new_fields(product, req),
            };
            let mut ws = Workspace { dir, manifest: m };
            // Checked empty before anything was written (above); again now, under the lock,
            // so that what the prefix holds from here on is the workspace's own.
            if check_prefix_free(product, &req.id, &ws.manifest.extra)? {
                ws.manifest.object_store_claimed_at = Some(ws.manifest.created_at.clone());
            }
            let at = ws.dir.clone();
            create_layout(product, &mut ws, &at)?;
            crate::manifest::write(&ws.manifest_path(), &ws.manifest)?;
            note_shared_ports(ctx, product.name(), &req.id, &ws.manifest.ports);
            Ok(PrepareOutcome {
                workspace: ws,
                reused: false,
                installed,
            })
        }
    }
}

/// The product fields of a new workspace: the product's, with the request's over them.
fn new_fields(product: &dyn Product, req: &PrepareRequest) -> serde_json::Map<String, Value> {
    let mut extra = product.new_workspace_fields(&req.id);
    extra.extend(req.extra.clone());
    extra
}

/// A new workspace on object storage starts from an empty prefix: objects already there would
/// be taken by the server as its own catalog and data, and counted in its footprint, and
/// `remove` could not tell them from the workspace's. Exit 2 when the prefix holds objects;
/// `true` when the workspace (`id`, its manifest's product fields `extra`) keeps its data in
/// an object store.
fn check_prefix_free(
    product: &dyn Product,
    id: &str,
    extra: &serde_json::Map<String, Value>,
) -> Result<bool> {
    let Some(l) = product.object_location(id, extra)? else {
        return Ok(false);
    };
    if !l.is_empty()? {
        return Err(Error::invalid(format!(
            "bucket {} at {} already holds objects under {}/, where the new workspace {id} would keep its data",
            l.bucket, l.endpoint, l.prefix
        ))
        .with_hint(format!(
            "the server would take them as its own: delete them (e.g. `aws s3 rm --recursive s3://{}/{}/ --endpoint-url {}`), or give the workspace a prefix of its own",
            l.bucket, l.prefix, l.endpoint
        )));
    }
    Ok(true)
}

/// Every port the workspaces of this root (of every product) are bound to.
fn ports_in_use(ctx: &Ctx) -> std::collections::BTreeSet<u16> {
    let mut used = std::collections::BTreeSet::new();
    for product in crate::product::names() {
        let base = ctx.root.databases(product);
        for other in super::workspace_ids(&base) {
            let Some(v) = fs::read(base.join(&other).join("manifest.json"))
                .ok()
                .and_then(|b| serde_json::from_slice::<Value>(&b).ok())
            else {
                continue;
            };
            if let Some(o) = v["ports"].as_object() {
                used.extend(
                    o.values()
                        .filter_map(|p| p.as_u64())
                        .filter_map(|p| u16::try_from(p).ok()),
                );
            }
        }
    }
    used
}

/// An HTTP port for a workspace prepared without `--http-port` by a command that cannot ask
/// (`runs rerun --database-id NEW`): the product's default when all its ports are free, else
/// the first HTTP port above it whose ports no workspace uses and nothing listens on now.
pub fn free_http_port(ctx: &Ctx, product: &dyn Product) -> Result<u16> {
    let used = ports_in_use(ctx);
    let free = |p: u16| !used.contains(&p) && std::net::TcpListener::bind(("127.0.0.1", p)).is_ok();
    let start = product.default_http_port();
    for http in start..=u16::MAX {
        let Ok(ports) = product.default_ports(http) else {
            break;
        };
        if ports.values().all(|p| free(*p)) {
            return Ok(http);
        }
    }
    Err(Error::invalid(format!(
        "no free HTTP port from {start} up for a new {} workspace",
        product.display_name()
    ))
    .with_hint("free a port, or prepare the workspace yourself with --http-port P"))
}

/// Tells the person when a new workspace listens on a port another workspace (of either
/// product) uses: both cannot serve at once (trial-run #30). Only a note: running them one
/// after the other is fine.
fn note_shared_ports(ctx: &Ctx, me: &str, id: &str, ports: &BTreeMap<String, u16>) {
    let mut shared = Vec::new();
    for product in crate::product::names() {
        let base = ctx.root.databases(product);
        for other in super::workspace_ids(&base) {
            if other == id && product == me {
                continue;
            }
            let Some(v) = fs::read(base.join(&other).join("manifest.json"))
                .ok()
                .and_then(|b| serde_json::from_slice::<Value>(&b).ok())
            else {
                continue;
            };
            for port in ports.values() {
                if v["ports"]
                    .as_object()
                    .is_some_and(|o| o.values().any(|p| p.as_u64() == Some(u64::from(*port))))
                {
                    shared.push(SharedPort {
                        port: *port,
                        product: product.to_string(),
                        workspace: other.to_string(),
                    });
                }
            }
        }
    }
    if !shared.is_empty() {
        ctx.reporter.event(&Event::PortShared {
            id: id.to_string(),
            shared,
        });
    }
}

/// Install locks wait for a concurrent install of the same version (it will finish) unless
/// the user set `--wait`.
fn install_lock(opts: &LockOptions) -> LockOptions {
    LockOptions {
        wait: Some(opts.wait.unwrap_or(std::time::Duration::from_secs(3600))),
        hold_token: None,
    }
}

/// The ports of a new workspace: the product's defaults for the HTTP port, with overrides.
/// Invalid ports are bad input, said before anything is written.
pub fn requested_ports(
    product: &dyn WorkspaceSetup,
    req: &PrepareRequest,
) -> Result<BTreeMap<String, u16>> {
    let http = req.http_port.unwrap_or(product.default_http_port());
    if http == 0 {
        return Err(Error::invalid("--http-port must be between 1 and 65535")
            .with_hint("pick a free port, e.g. --http-port 4000"));
    }
    let mut ports = product.default_ports(http)?;
    for (k, v) in &req.ports {
        if *v == 0 {
            return Err(
                Error::invalid(format!("--{k}-port must be between 1 and 65535"))
                    .with_hint("pick a free port"),
            );
        }
        ports.insert(k.clone(), *v);
    }
    let mut seen = BTreeMap::new();
    for (k, v) in &ports {
        if let Some(other) = seen.insert(*v, k.clone()) {
            return Err(Error::invalid(format!(
                "the {other} and {k} listeners would both use port {v}"
            ))
            .with_hint("give every listener its own port"));
        }
    }
    Ok(ports)
}

/// A workspace is immutable in version, platform and SQL database (and its ports): asking for
/// another is invalid input that names the way out.
fn check_unchanged(
    product: &dyn Product,
    m: &WorkspaceManifest,
    req: &PrepareRequest,
    version: Option<&str>,
    ports: &BTreeMap<String, u16>,
    platform: &Platform,
) -> Result<()> {
    let id = &req.id;
    if m.variant.as_deref() != product.variant() {
        return Err(Error::invalid(format!(
            "workspace {id} is bound to {} {}; it cannot become {}",
            m.product,
            m.variant.as_deref().unwrap_or("-"),
            product.display_name()
        ))
        .with_hint(format!(
            "a workspace never changes its {}: prepare a new one (`{} prepare --database-id NEW ...`)",
            crate::product::variants::noun(product),
            product.cli()
        )));
    }
    let new_id_hint = |what: &str| {
        format!(
            "a workspace never changes its {what}: prepare a new one (`{} prepare --database-id NEW ...`){}",
            product.cli(),
            if what == "version" {
                format!(
                    ", or copy this one's data to it: `{} copy --source-database-id {id} --database-id NEW --version {}`",
                    product.cli(),
                    version.unwrap_or("V")
                )
            } else {
                String::new()
            }
        )
    };
    if let Some(v) = version {
        if v != m.version {
            return Err(Error::invalid(format!(
                "workspace {id} is bound to {} {}; it cannot use {v}",
                product.display_name(),
                m.version
            ))
            .with_hint(new_id_hint("version")));
        }
    }
    if m.platform != platform.dashed() {
        return Err(Error::invalid(format!(
            "workspace {id} was prepared for {}; this machine is {}",
            m.platform,
            platform.dashed()
        ))
        .with_hint(new_id_hint("platform")));
    }
    if let Some(d) = &req.database {
        if *d != m.database {
            return Err(Error::invalid(format!(
                "workspace {id} is bound to SQL database {:?}; it cannot use {d:?}",
                m.database
            ))
            .with_hint(new_id_hint("SQL database")));
        }
    }
    let asked_ports = req.http_port.is_some() || !req.ports.is_empty();
    if asked_ports && *ports != m.ports {
        return Err(Error::invalid(format!(
            "workspace {id} uses ports {}; it cannot change to {}",
            fmt_ports(&m.ports),
            fmt_ports(ports)
        ))
        .with_hint(new_id_hint("ports")));
    }
    Ok(())
}

fn fmt_ports(p: &BTreeMap<String, u16>) -> String {
    p.iter()
        .map(|(k, v)| format!("{k}={v}"))
        .collect::<Vec<_>>()
        .join(",")
}

/// Entries a directory may hold and still be adopted as a new workspace: lock records and the
/// skeleton of a prepare that was interrupted before its manifest was written.
fn check_adoptable(dir: &Path) -> Result<()> {
    let Ok(rd) = fs::read_dir(dir) else {
        return Ok(());
    };
    for e in rd.flatten() {
        let name = e.file_name().to_string_lossy().into_owned();
        let p = e.path();
        let ok = match name.as_str() {
            ".lock" | ".hold.json" => true,
            CONFIG_FILE => p.is_file(),
            "data" | "logs" => {
                p.is_dir()
                    && fs::read_dir(&p)
                        .map(|mut r| r.next().is_none())
                        .unwrap_or(false)
            }
            _ => false,
        };
        if !ok {
            return Err(Error::invalid(format!(
                "{} exists and holds {name:?} but no workspace manifest; it is not adopted",
                dir.display()
            ))
            .with_hint("choose another --database-id, or move that directory away"));
        }
    }
    Ok(())
}

/// Creates `data/`, `logs/` and the config in `at` (the workspace or its staging directory)
/// and records the config checksum in the manifest. Paths in the config point at `ws.dir`.
pub(super) fn create_layout(
    product: &dyn WorkspaceSetup,
    ws: &mut Workspace,
    at: &Path,
) -> Result<()> {
    for sub in ["data", "logs"] {
        let p = at.join(sub);
        fs_err::create_dir_all(&p)?;
    }
    write_config(product, ws, at)?;
    product.init_data_dir(&ws.manifest, at)
}

fn write_config(product: &dyn WorkspaceSetup, ws: &mut Workspace, at: &Path) -> Result<()> {
    match product.render_config(&ws.manifest, &ws.dir)? {
        Some(text) => {
            fsutil::write_atomic(&at.join(CONFIG_FILE), text.as_bytes())?;
            ws.manifest.config_sha256 = Some(hash::sha256_hex(text.as_bytes()));
        }
        None => ws.manifest.config_sha256 = None,
    }
    Ok(())
}

/// On reuse: recreate a missing `logs/` or config (a deleted config is regenerated from the
/// manifest); a changed config or a missing `data/` is an integrity error.
fn repair_layout(product: &dyn Product, ws: &mut Workspace) -> Result<()> {
    let logs = ws.logs_dir();
    fs_err::create_dir_all(&logs)?;
    if !ws.data_dir().is_dir() {
        return Err(Error::integrity(format!(
            "{} is missing; the workspace lost its data",
            ws.data_dir().display()
        ))
        .with_hint(format!(
            "remove the workspace (`{} remove --database-id {id} --confirm {id}`) and prepare it again",
            product.cli(),
            id = ws.id()
        )));
    }
    if let Some(expected) = ws.manifest.config_sha256.clone() {
        let path = ws.config_path();
        if !path.exists() {
            let dir = ws.dir.clone();
            write_config(product, ws, &dir)?;
            if ws.manifest.config_sha256.as_deref() != Some(expected.as_str()) {
                ws.save()?;
            }
        } else {
            check_config(ws)?;
        }
    }
    Ok(())
}

pub(super) fn check_config(ws: &Workspace) -> Result<()> {
    let Some(expected) = &ws.manifest.config_sha256 else {
        return Ok(());
    };
    let path = ws.config_path();
    let bytes = fs::read(&path).map_err(|e| {
        Error::integrity(format!("cannot read {}: {e}", path.display()))
            .with_hint("run `prepare` with the same --database-id to regenerate it")
    })?;
    let actual = hash::sha256_hex(&bytes);
    if &actual != expected {
        return Err(Error::integrity(format!(
            "{} was changed by hand (sha256 {actual}, recorded {expected})",
            path.display()
        ))
        .with_hint("delete it and run `prepare` with the same --database-id to regenerate it"));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn adoptable_directories() {
        let d = tempfile::tempdir().unwrap();
        let w = d.path().join("w");
        check_adoptable(&w).unwrap();
        fs::create_dir_all(w.join("data")).unwrap();
        fs::create_dir_all(w.join("logs")).unwrap();
        fs::write(w.join(".lock"), "").unwrap();
        fs::write(w.join(CONFIG_FILE), "").unwrap();
        check_adoptable(&w).unwrap();
        fs::write(w.join("data/x"), "").unwrap();
        assert_eq!(check_adoptable(&w).unwrap_err().exit_code(), 2);
    }
}
