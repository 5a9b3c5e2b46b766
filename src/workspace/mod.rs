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
//!
//! `store.rs` loads, locks, lists, inspects, verifies and removes workspaces; `prepare.rs`
//! creates or reuses one (install, port and config rules); `copy.rs` copies one's data to a
//! new workspace; `repair.rs` picks the repair a problem offers.

use std::path::PathBuf;

use serde_json::Map;

use crate::error::{Error, Result};
use crate::hash;
use crate::install::{self, Installation};
use crate::platform::Platform;
use crate::product::{Product, CONFIG_FILE};
use crate::server::{Listener, ServerSpec, Timing};

mod copy;
mod opctx;
mod prepare;
pub mod repair;
mod store;

pub use crate::workspace_manifest as manifest;
pub use copy::{copy, data_digest, CopyRequest, DataDigest};
pub use manifest::{
    Binding, DataState, LoadRecord, MaintenanceRecord, MaintenanceStatus, Provenance,
    WorkspaceManifest,
};
pub use opctx::OpContext;
pub use prepare::{free_http_port, prepare, requested_ports, PrepareOutcome, PrepareRequest};
pub use store::{
    inspect, inspect_dir, list, load, lock_workspace, remove, verify, workspace_ids, Inspection,
    Problem, RemovedObjects,
};

use prepare::check_config;

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
        extra: binding_tables(ds, sf),
    }
}

/// `tables`: the rows each table holds after the load, for use cases of several tables (the
/// check before queries counts each); cpu-only bindings keep their old shape.
fn binding_tables(
    ds: &crate::dataset::Dataset,
    sf: &crate::dataset::StoredFormat,
) -> Map<String, serde_json::Value> {
    let mut extra = Map::new();
    if let (Some(_), Ok(uc)) = (&sf.tables, ds.spec.use_case()) {
        let t: Map<String, serde_json::Value> = sf
            .table_rows(uc)
            .into_iter()
            .map(|(n, r)| (n, serde_json::json!(r)))
            .collect();
        extra.insert("tables".into(), serde_json::Value::Object(t));
    }
    extra
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
    /// Where the server is reached, as its product words it
    /// ([`crate::product::ManagedServer::local_endpoint`]: `http://127.0.0.1:PORT`,
    /// PostgreSQL's `postgres://postgres@127.0.0.1:PORT/DB`).
    pub fn endpoint(&self) -> String {
        let m = &self.manifest;
        match crate::product::resolve(&m.product, m.variant.as_deref()) {
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
        let found = install::open(root, product, &self.manifest.version, &platform)?;
        // #20 a: a `version` edited in the workspace manifest is an integrity error naming the
        // version whose binary it is bound to, not "install the edited version".
        if found.is_none() {
            if let Some(other) = install::installed(root, product, &platform)
                .into_iter()
                .find(|i| i.manifest.binary_sha256 == self.manifest.binary_sha256)
            {
                return Err(Error::integrity(format!(
                    "workspace {} says {} {}, which is not installed, but it is bound to the binary of the installed {}",
                    self.id(),
                    product.display_name(),
                    self.manifest.version,
                    other.manifest.version
                ))
                .with_hint(repair::binary_mismatch(root, product, self, None)));
            }
        }
        found.ok_or_else(|| {
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

/// Holds the server of `spec` to `shape` (its own cgroup), with what the product gives it
/// for what it would otherwise size from the host's memory
/// ([`crate::product::ManagedServer::shape_memory`]).
pub fn shape_spec(
    product: &dyn Product,
    ws: &Workspace,
    spec: &mut ServerSpec,
    shape: Option<crate::server::cgroup::Shape>,
) -> Result<()> {
    if let Some(mem) = shape.and_then(|s| s.memory_bytes) {
        product.shape_memory(&ws.manifest, &ws.dir, mem, &mut spec.args)?;
    }
    spec.shape = shape;
    Ok(())
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
    // The installation's record must agree (#20 b: an edited record benched unnoticed), and
    // its other files (InfluxDB 3's Python runtime and libraries) are what was installed
    // (trial 2 N3): checked like the binary, before the server starts.
    if inst.manifest.binary_sha256 != ws.manifest.binary_sha256 {
        return Err(Error::integrity(format!(
            "the installation record of {} {} says binary sha256 {}, but workspace {} is bound to {}",
            product.display_name(),
            ws.manifest.version,
            inst.manifest.binary_sha256,
            ws.id(),
            ws.manifest.binary_sha256
        ))
        .with_hint(repair::binary_mismatch(root, product, ws, Some(&sha))));
    }
    let tree = crate::treehash::tree_digest(&inst.dir)?;
    if tree != inst.manifest.tree_digest {
        return Err(Error::integrity(format!(
            "files under {} changed since it was installed (tree digest {tree}, recorded {}); nothing was started",
            inst.dir.display(),
            inst.manifest.tree_digest
        ))
        .with_hint(product.install_command(&ws.manifest.version, true)));
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
        probe: product.readiness_probe_for(&endpoint, &inst.dir, &ws.dir),
        endpoint,
        pid_file: ws.pid_file(),
        kill_orphan,
        kill_orphan_flag: "--kill-orphan".into(),
        timing,
        output_filter: product.output_filter(),
        failure_lines: product.failure_lines(),
        shape: None,
    })
}
