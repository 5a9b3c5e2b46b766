//! Managed database workspaces: `<product>/databases/<id>/{manifest.json, config.toml, data/,
//! logs/}`. Generic over [`Product`]; the product supplies ports, config and server command.
//!
//! * A workspace binds one installed version (platform, binary checksum) and one SQL database
//!   for life ([`prepare`] refuses a change with exit 2 and names the way out: a new id or
//!   [`copy`]). The dataset binding and the data state are changed by the benchmarks only.
//! * Every command that changes a workspace or starts its server holds its lock
//!   ([`lock_workspace`], `<dir>/.lock`, honouring a manual hold).
//! * [`inspect`] and [`list`] are cheap (manifests and small files only) and say why a broken
//!   workspace is broken; [`verify`] re-hashes the installation and checks the config.
//! * [`copy`] makes a full, independent copy of `data/` (no links, no reflinks, special files
//!   refused), verified by file count, byte count and content digest, staged then published.
//! * [`remove`] renames the workspace aside under its lock, then deletes it.

use std::collections::BTreeMap;
use std::fs::{self, File};
use std::io::{Read, Write};
use std::path::{Path, PathBuf};

use serde::Serialize;
use serde_json::{json, Map, Value};

use crate::context::Ctx;
use crate::error::{Error, Result};
use crate::fsutil;
use crate::hash;
use crate::ids::validate_id;
use crate::install::{self, InstallOutcome, Installation};
use crate::lock::{self, LockGuard, LockOptions};
use crate::platform::Platform;
use crate::product::{Product, CONFIG_FILE};
use crate::publish;
use crate::server::{self, Listener, ServerSpec, Timing};

pub use crate::workspace_manifest as manifest;
pub mod repair;
pub use manifest::{
    Binding, DataState, LoadRecord, MaintenanceRecord, MaintenanceStatus, Provenance,
    WorkspaceManifest,
};

/// The SQL database of a new workspace unless `--database` says otherwise.
pub const DEFAULT_DATABASE: &str = "benchmark";
/// The supervisor's pid record inside a workspace.
pub const PID_FILE: &str = "server.pid";

/// The binding a verified load of `sf` (a stored format of `ds`) records.
pub fn binding_for(ds: &crate::dataset::Dataset, sf: &crate::dataset::StoredFormat) -> Binding {
    Binding {
        dataset_id: ds.id.clone(),
        spec: ds.spec.to_value(),
        format: sf.format.clone(),
        compression: sf.compression.as_str().to_string(),
        rows: sf.rows,
        metrics: sf.metrics,
        bytes: sf.bytes,
        sha256: sf.sha256.clone(),
        uncompressed_sha256: sf.uncompressed_sha256.clone(),
        loaded_at: None,
        run_id: None,
        extra: Map::new(),
    }
}

/// A workspace on disk with its manifest.
#[derive(Debug, Clone)]
pub struct Workspace {
    pub dir: PathBuf,
    pub manifest: WorkspaceManifest,
}

impl Workspace {
    pub fn id(&self) -> &str {
        &self.manifest.database_id
    }
    pub fn manifest_path(&self) -> PathBuf {
        self.dir.join("manifest.json")
    }
    pub fn data_dir(&self) -> PathBuf {
        self.dir.join("data")
    }
    pub fn logs_dir(&self) -> PathBuf {
        self.dir.join("logs")
    }
    pub fn config_path(&self) -> PathBuf {
        self.dir.join(CONFIG_FILE)
    }
    pub fn pid_file(&self) -> PathBuf {
        self.dir.join(PID_FILE)
    }
    /// The main port: `http`, else the only listener (a PostgreSQL server's).
    pub fn http_port(&self) -> u16 {
        let p = &self.manifest.ports;
        p.get("http")
            .or_else(|| p.values().next().filter(|_| p.len() == 1))
            .copied()
            .unwrap_or(0)
    }
    /// Where the server is reached, as its product words it ([`Product::local_endpoint`]:
    /// `http://127.0.0.1:PORT`, PostgreSQL's `postgres://postgres@127.0.0.1:PORT/DB`).
    pub fn endpoint(&self) -> String {
        let m = &self.manifest;
        match crate::product::resolve(&m.product, m.edition.as_deref()) {
            Ok(p) => p.local_endpoint(self.http_port(), &m.database),
            Err(_) => format!("http://127.0.0.1:{}", self.http_port()),
        }
    }
    pub fn listeners(&self) -> Vec<Listener> {
        self.manifest
            .ports
            .iter()
            .map(|(name, port)| Listener {
                name: name.clone(),
                port: *port,
            })
            .collect()
    }
    /// The workspace's installation (cheap); missing is a failure naming the install command.
    pub fn installation(
        &self,
        root: &crate::paths::Root,
        product: &dyn Product,
    ) -> Result<Installation> {
        let platform = platform_of(&self.manifest.platform)?;
        install::open(root, product, &self.manifest.version, &platform)?.ok_or_else(|| {
            Error::failed(format!(
                "{} {} of workspace {} is not installed",
                product.display_name(),
                self.manifest.version,
                self.id()
            ))
            .with_hint(product.install_command(&self.manifest.version, false))
        })
    }
    /// Writes the manifest (with a new `updated_at`). Call under the workspace lock.
    pub fn save(&mut self) -> Result<()> {
        self.manifest.updated_at = crate::manifest::now_rfc3339();
        crate::manifest::write(&self.manifest_path(), &self.manifest)
    }
}

/// Parses a recorded `linux-amd64` platform.
fn platform_of(dashed: &str) -> Result<Platform> {
    let (os, arch) = dashed.split_once('-').unwrap_or((dashed, ""));
    Platform::from_parts(os, arch)
}

/// `<root>/<product>/databases/<id>`.
pub fn workspace_dir(root: &crate::paths::Root, product: &dyn Product, id: &str) -> PathBuf {
    root.database(product.name(), id)
}

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

fn read_manifest(dir: &Path) -> Result<Option<WorkspaceManifest>> {
    crate::manifest::read_optional(&dir.join("manifest.json")).map_err(|e| {
        e.with_hint(format!(
            "inspect {} by hand; if it is beyond repair, remove it with `remove --confirm`",
            dir.display()
        ))
    })
}

fn check_identity(
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
                ctx.reporter.info(&format!(
                    "no {} installed; the latest release is {}",
                    product.display_name(),
                    latest.version
                ));
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
                edition: product.edition().map(str::to_string),
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
                created_at: now.clone(),
                updated_at: now,
                tool_version: crate::VERSION.to_string(),
                extra: product.new_workspace_fields(&req.id),
            };
            let mut ws = Workspace { dir, manifest: m };
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

/// Tells the person when a new workspace listens on a port another workspace (of either
/// product) uses: both cannot serve at once (trial-run #30). Only a note: running them one
/// after the other is fine.
fn note_shared_ports(ctx: &Ctx, me: &str, id: &str, ports: &BTreeMap<String, u16>) {
    let mut shared = Vec::new();
    for product in crate::product::names() {
        let Ok(rd) = fs::read_dir(ctx.root.databases(product)) else {
            continue;
        };
        let mut others: Vec<_> = rd.flatten().collect();
        others.sort_by_key(|e| e.file_name());
        for e in others {
            let other = e.file_name().to_string_lossy().into_owned();
            if other.starts_with('.') || (other == id && product == me) {
                continue;
            }
            let Some(v) = fs::read(e.path().join("manifest.json"))
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
                    shared.push(format!("{port} ({product} workspace {other})"));
                }
            }
        }
    }
    if !shared.is_empty() {
        ctx.reporter.info(&format!(
            "note: workspace {id} listens on a port another workspace uses: {}; they cannot serve at the same time (pick another with --http-port)",
            shared.join(", ")
        ));
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
fn requested_ports(product: &dyn Product, req: &PrepareRequest) -> Result<BTreeMap<String, u16>> {
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
    if m.edition.as_deref() != product.edition() {
        return Err(Error::invalid(format!(
            "workspace {id} is bound to {} {}; it cannot become {}",
            m.product,
            m.edition.as_deref().unwrap_or("-"),
            product.display_name()
        ))
        .with_hint(format!(
            "a workspace never changes its edition: prepare a new one (`{} prepare --database-id NEW ...`)",
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
fn create_layout(product: &dyn Product, ws: &mut Workspace, at: &Path) -> Result<()> {
    for sub in ["data", "logs"] {
        let p = at.join(sub);
        fs::create_dir_all(&p).map_err(|e| Error::io("create directory", &p, e))?;
    }
    write_config(product, ws, at)?;
    product.init_data_dir(&ws.manifest, at)
}

fn write_config(product: &dyn Product, ws: &mut Workspace, at: &Path) -> Result<()> {
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
    fs::create_dir_all(&logs).map_err(|e| Error::io("create directory", &logs, e))?;
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

fn check_config(ws: &Workspace) -> Result<()> {
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

/// Every workspace of `product` (sorted by id), broken ones included with their reasons.
pub fn list(root: &crate::paths::Root, product: &dyn Product) -> Vec<Inspection> {
    let base = root.databases(product.name());
    let mut ids: Vec<String> = fs::read_dir(&base)
        .map(|rd| {
            rd.flatten()
                .filter(|e| e.path().is_dir())
                .map(|e| e.file_name().to_string_lossy().into_owned())
                .filter(|n| !n.starts_with('.'))
                .collect()
        })
        .unwrap_or_default();
    ids.sort();
    ids.iter()
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
                ctx.reporter.warn(&format!(
                    "{} differs from what this tsbsctl would write today (it was written by tsbsctl {})",
                    ws.config_path().display(),
                    ws.manifest.tool_version
                ));
            }
        }
    }
    if !problems.is_empty() {
        let msg = problems
            .iter()
            .map(|p| p.problem.as_str())
            .collect::<Vec<_>>()
            .join("; ");
        let fixes = problems
            .iter()
            .map(|p| p.fix.as_str())
            .filter(|f| !f.is_empty())
            .collect::<Vec<_>>()
            .join("; then ");
        return Err(
            Error::integrity(format!("workspace {id} does not verify: {msg}")).with_hint(fixes),
        );
    }
    Ok(json!({
        "database_id": id,
        "path": ws.dir,
        "manifest": ws.manifest,
        "installation": report,
    }))
}

/// Deletes workspace `id` under its lock; `confirm` must repeat the id.
pub fn remove(
    ctx: &Ctx,
    product: &dyn Product,
    id: &str,
    confirm: &str,
    lock_opts: &LockOptions,
) -> Result<PathBuf> {
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
    let aside = fsutil::staging_path(&dir, "removing")?;
    fsutil::rename_durable(&dir, &aside)?;
    fs::remove_dir_all(&aside).map_err(|e| Error::io("remove", &aside, e))?;
    sweep_leftovers(ctx, product);
    Ok(dir)
}

fn refuse_live_server(dir: &Path) -> Result<()> {
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
fn sweep_leftovers(ctx: &Ctx, product: &dyn Product) {
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
                    ctx.reporter.info(&format!(
                        "removed leftover {} of an interrupted {tag}",
                        p.display()
                    ));
                }
            }
        }
    }
}

/// What `copy` was asked for.
#[derive(Debug, Clone)]
pub struct CopyRequest {
    pub source_id: String,
    pub id: String,
    /// Raw `--version` of the copy (must be installed).
    pub version: String,
    /// Ports of the copy (default: the source's).
    pub http_port: Option<u16>,
}

/// Copies workspace `source_id` to a new workspace bound to another installed version.
pub fn copy(
    ctx: &Ctx,
    product: &dyn Product,
    req: &CopyRequest,
    lock_opts: &LockOptions,
) -> Result<Workspace> {
    validate_id("--source-database-id", &req.source_id)?;
    validate_id("--database-id", &req.id)?;
    if req.source_id == req.id {
        return Err(
            Error::invalid("--source-database-id and --database-id must differ")
                .with_hint("name the new workspace with --database-id"),
        );
    }
    let version = product.normalize_version(&req.version)?;
    let dest = workspace_dir(&ctx.root, product, &req.id);
    if fs::symlink_metadata(&dest).is_ok() {
        return Err(Error::invalid(format!(
            "workspace {} already exists ({})",
            req.id,
            dest.display()
        ))
        .with_hint("choose a new --database-id for the copy"));
    }
    let source = load(&ctx.root, product, &req.source_id)?;
    let platform = Platform::host()?;
    let inst = install::open(&ctx.root, product, &version, &platform)?.ok_or_else(|| {
        Error::invalid(format!(
            "{} {version} is not installed",
            product.display_name()
        ))
        .with_hint(product.install_command(&version, false))
    })?;
    if inst.manifest.platform != source.manifest.platform {
        return Err(Error::invalid(format!(
            "workspace {} is for {}, the {version} installation for {}",
            req.source_id, source.manifest.platform, inst.manifest.platform
        ))
        .with_hint("copy on a machine of the source's platform"));
    }
    if let Some(p) = req.http_port {
        if p == 0 {
            return Err(Error::invalid("--http-port must be between 1 and 65535")
                .with_hint("pick a free port"));
        }
    }
    install::verify(product, &inst)?;

    let _guard = lock_workspace(ctx, product, &source.dir, &req.source_id, lock_opts)?;
    let source = load(&ctx.root, product, &req.source_id)?;
    refuse_live_server(&source.dir)?;
    let manifest_bytes = fs::read(source.manifest_path())
        .map_err(|e| Error::io("read", &source.manifest_path(), e))?;
    sweep_leftovers(ctx, product);
    let staging = fsutil::staging_path(&dest, "copy")?;
    fs::create_dir_all(&staging).map_err(|e| Error::io("create directory", &staging, e))?;
    let r = copy_into(
        ctx,
        product,
        req,
        &source,
        &inst,
        &version,
        &manifest_bytes,
        &staging,
        &dest,
    );
    if r.is_err() {
        let _ = fs::remove_dir_all(&staging);
    }
    r
}

#[allow(clippy::too_many_arguments)]
fn copy_into(
    ctx: &Ctx,
    product: &dyn Product,
    req: &CopyRequest,
    source: &Workspace,
    inst: &Installation,
    version: &str,
    source_manifest: &[u8],
    staging: &Path,
    dest: &Path,
) -> Result<Workspace> {
    let src_data = source.data_dir();
    if !src_data.is_dir() {
        return Err(
            Error::integrity(format!("{} is missing", src_data.display()))
                .with_hint("the source lost its data; nothing to copy"),
        );
    }
    ctx.reporter.info(&format!(
        "copying {} to workspace {}",
        src_data.display(),
        req.id
    ));
    let copied = copy_tree(&src_data, &staging.join("data"))?;
    let check = data_digest(&staging.join("data"))?;
    if check != copied {
        return Err(Error::integrity(format!(
            "the copy of {} does not match its source ({} files, {} bytes, digest {} vs {} files, {} bytes, digest {})",
            src_data.display(),
            check.files,
            check.bytes,
            check.content_sha256,
            copied.files,
            copied.bytes,
            copied.content_sha256
        ))
        .with_hint("nothing was published; check the disk and run the copy again"));
    }
    let now = crate::manifest::now_rfc3339();
    let ports = match req.http_port {
        Some(p) => product.default_ports(p)?,
        None => source.manifest.ports.clone(),
    };
    let mut extra = source.manifest.extra.clone();
    for (k, v) in product.new_workspace_fields(&req.id) {
        extra.insert(k, v);
    }
    let m = WorkspaceManifest {
        database_id: req.id.clone(),
        product: product.name().to_string(),
        edition: product.edition().map(str::to_string),
        version: version.to_string(),
        version_source: install::source::EXPLICIT.to_string(),
        platform: inst.manifest.platform.clone(),
        installation_path: inst.dir.clone(),
        binary_sha256: inst.manifest.binary_sha256.clone(),
        database: source.manifest.database.clone(),
        ports,
        config_sha256: None,
        binding: source.manifest.binding.clone(),
        data_state: source.manifest.data_state.clone(),
        copied_from: Some(Provenance {
            database_id: source.id().to_string(),
            database_path: source.dir.clone(),
            version: source.manifest.version.clone(),
            binary_sha256: source.manifest.binary_sha256.clone(),
            manifest_sha256: hash::sha256_hex(source_manifest),
            copied_at: now.clone(),
            method: "full".into(),
            files: copied.files,
            bytes: copied.bytes,
            content_sha256: copied.content_sha256.clone(),
        }),
        created_at: now.clone(),
        updated_at: now,
        tool_version: crate::VERSION.to_string(),
        extra,
    };
    let mut ws = Workspace {
        dir: dest.to_path_buf(),
        manifest: m,
    };
    create_layout(product, &mut ws, staging)?;
    crate::manifest::write(&staging.join("manifest.json"), &ws.manifest)?;
    crate::interrupt::check()?;
    publish::rename_noreplace(staging, dest)?;
    Ok(ws)
}

/// File count, byte count and content digest of a `data/` tree (directories included in the
/// digest by path; symlinks and special files refused).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct DataDigest {
    pub files: u64,
    pub dirs: u64,
    pub bytes: u64,
    pub content_sha256: String,
}

/// Sorted relative paths of every entry under `root`; refuses links and special files.
fn walk(root: &Path) -> Result<Vec<(String, fs::Metadata)>> {
    let mut out = Vec::new();
    for e in walkdir::WalkDir::new(root).min_depth(1) {
        let e = e.map_err(|err| {
            let at = err.path().unwrap_or(root).to_path_buf();
            Error::io("list", &at, err.into())
        })?;
        let meta =
            fs::symlink_metadata(e.path()).map_err(|err| Error::io("stat", e.path(), err))?;
        let ft = meta.file_type();
        if ft.is_symlink() || !(ft.is_file() || ft.is_dir()) {
            return Err(Error::integrity(format!(
                "{} is a {}; a workspace's data holds only files and directories",
                e.path().display(),
                if ft.is_symlink() {
                    "symbolic link"
                } else {
                    "special file"
                }
            ))
            .with_hint("remove it from the source workspace's data/ and copy again"));
        }
        let rel = e.path().strip_prefix(root).unwrap_or(e.path());
        let name = rel.to_str().ok_or_else(|| {
            Error::integrity(format!("{} has a non-UTF-8 name", e.path().display()))
        })?;
        out.push((name.to_string(), meta));
    }
    out.sort_by(|a, b| a.0.cmp(&b.0));
    Ok(out)
}

fn digest_entry(h: &mut hash::Sha256, rel: &str, kind: &str, size: u64, sha: &str) {
    h.update(kind.as_bytes());
    h.update(b"\0");
    h.update(rel.as_bytes());
    h.update(b"\0");
    h.update(size.to_string().as_bytes());
    h.update(b"\0");
    h.update(sha.as_bytes());
    h.update(b"\n");
}

/// The [`DataDigest`] of a tree, reading every file.
pub fn data_digest(root: &Path) -> Result<DataDigest> {
    let mut h = hash::Sha256::new();
    let (mut files, mut dirs, mut bytes) = (0, 0, 0);
    for (rel, meta) in walk(root)? {
        if meta.is_dir() {
            dirs += 1;
            digest_entry(&mut h, &rel, "dir", 0, "");
        } else {
            let (sha, size) = hash::sha256_file(&root.join(&rel), &crate::output::NoProgress)?;
            files += 1;
            bytes += size;
            digest_entry(&mut h, &rel, "file", size, &sha);
        }
    }
    Ok(DataDigest {
        files,
        dirs,
        bytes,
        content_sha256: h.finish_hex(),
    })
}

/// Copies `src` to the new directory `dst` byte by byte (explicit reads and writes: no hard
/// links, no reflinks, no copy offload), keeping permission bits, fsyncing every file and
/// directory. Returns the digest of what was read.
fn copy_tree(src: &Path, dst: &Path) -> Result<DataDigest> {
    use std::os::unix::fs::PermissionsExt;
    fs::create_dir(dst).map_err(|e| Error::io("create directory", dst, e))?;
    let entries = walk(src)?;
    let mut h = hash::Sha256::new();
    let (mut files, mut dirs, mut bytes) = (0, 0, 0);
    let mut buf = vec![0u8; 1 << 20];
    let mut made_dirs = vec![dst.to_path_buf()];
    for (rel, meta) in &entries {
        crate::interrupt::check()?;
        let to = dst.join(rel);
        if meta.is_dir() {
            fs::create_dir(&to).map_err(|e| Error::io("create directory", &to, e))?;
            dirs += 1;
            digest_entry(&mut h, rel, "dir", 0, "");
            made_dirs.push(to);
            continue;
        }
        let from = src.join(rel);
        let mut r = File::open(&from).map_err(|e| Error::io("open", &from, e))?;
        let mut w = fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .open(&to)
            .map_err(|e| Error::io("create", &to, e))?;
        let mut fh = hash::Sha256::new();
        let mut size = 0u64;
        loop {
            let n = r.read(&mut buf).map_err(|e| Error::io("read", &from, e))?;
            if n == 0 {
                break;
            }
            fh.update(&buf[..n]);
            w.write_all(&buf[..n])
                .map_err(|e| Error::io("write", &to, e))?;
            size += n as u64;
        }
        w.sync_all().map_err(|e| Error::io("sync", &to, e))?;
        fs::set_permissions(
            &to,
            fs::Permissions::from_mode(meta.permissions().mode() & 0o7777),
        )
        .map_err(|e| Error::io("set permissions of", &to, e))?;
        files += 1;
        bytes += size;
        digest_entry(&mut h, rel, "file", size, &fh.finish_hex());
    }
    for (rel, meta) in entries.iter().filter(|(_, m)| m.is_dir()) {
        let to = dst.join(rel);
        let _ = fs::set_permissions(
            &to,
            fs::Permissions::from_mode(meta.permissions().mode() & 0o7777),
        );
    }
    for d in made_dirs {
        fsutil::sync_dir(&d)?;
    }
    Ok(DataDigest {
        files,
        dirs,
        bytes,
        content_sha256: h.finish_hex(),
    })
}

/// The supervisor spec for the workspace's server. Checks first that the installed binary is
/// still the one the workspace is bound to (hashing the binary only) and that the config is
/// unchanged.
pub fn server_spec(
    root: &crate::paths::Root,
    product: &dyn Product,
    ws: &Workspace,
    log_path: PathBuf,
    timing: Timing,
    kill_orphan: bool,
) -> Result<ServerSpec> {
    product.check_can_serve(&ws.manifest)?;
    let inst = ws.installation(root, product)?;
    let (sha, _) = hash::sha256_file(&inst.binary(), &crate::output::NoProgress)?;
    if sha != ws.manifest.binary_sha256 {
        return Err(Error::integrity(format!(
            "{} (sha256 {sha}) is not the binary workspace {} is bound to ({})",
            inst.binary().display(),
            ws.id(),
            ws.manifest.binary_sha256
        ))
        .with_hint(format!(
            "see `{} verify --database-id {}`; {}",
            product.cli(),
            ws.id(),
            repair::binary_mismatch(root, product, ws, Some(&sha))
        )));
    }
    check_config(ws)?;
    if !ws.data_dir().is_dir() {
        return Err(
            Error::integrity(format!("{} is missing", ws.data_dir().display())).with_hint(format!(
                "see `{} inspect --database-id {}`",
                product.cli(),
                ws.id()
            )),
        );
    }
    let cmd = product.server_command(&ws.manifest, &ws.dir, &inst.dir)?;
    let endpoint = ws.endpoint();
    Ok(ServerSpec {
        label: format!("{} {}", product.display_name(), ws.manifest.version),
        program: cmd.program,
        args: cmd.args,
        cwd: ws.dir.clone(),
        env: cmd.env,
        env_remove: cmd.env_remove,
        log_path,
        listeners: ws.listeners(),
        probe: product.readiness_probe_for(&endpoint, &inst.dir),
        endpoint,
        pid_file: ws.pid_file(),
        kill_orphan,
        kill_orphan_flag: "--kill-orphan".into(),
        timing,
        output_filter: product.output_filter(),
        failure_lines: product.failure_lines(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::{MetadataExt, PermissionsExt};

    #[test]
    fn copy_tree_is_an_independent_byte_copy_with_the_same_digest() {
        let d = tempfile::tempdir().unwrap();
        let src = d.path().join("src");
        fs::create_dir_all(src.join("a/b")).unwrap();
        fs::create_dir_all(src.join("empty")).unwrap();
        fs::write(src.join("a/b/f"), vec![7u8; 3 << 20]).unwrap();
        fs::write(src.join("top"), "x").unwrap();
        fs::set_permissions(src.join("top"), fs::Permissions::from_mode(0o600)).unwrap();
        let dst = d.path().join("dst");
        let copied = copy_tree(&src, &dst).unwrap();
        assert_eq!(copied.files, 2);
        assert_eq!(copied.dirs, 3);
        assert_eq!(copied.bytes, (3 << 20) + 1);
        assert_eq!(data_digest(&dst).unwrap(), copied);
        assert_eq!(data_digest(&src).unwrap(), copied);
        let (a, b) = (
            fs::metadata(src.join("top")).unwrap(),
            fs::metadata(dst.join("top")).unwrap(),
        );
        assert_ne!(a.ino(), b.ino());
        assert_eq!(b.mode() & 0o777, 0o600);
        // Content matters, not just sizes.
        fs::write(dst.join("top"), "y").unwrap();
        assert_ne!(
            data_digest(&dst).unwrap().content_sha256,
            copied.content_sha256
        );
    }

    #[test]
    fn special_files_are_refused() {
        let d = tempfile::tempdir().unwrap();
        let src = d.path().join("src");
        fs::create_dir_all(&src).unwrap();
        nix::unistd::mkfifo(&src.join("fifo"), nix::sys::stat::Mode::S_IRWXU).unwrap();
        let e = copy_tree(&src, &d.path().join("dst")).unwrap_err();
        assert_eq!(e.exit_code(), 4);
        assert!(e.message.contains("special file"), "{}", e.message);
    }

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
