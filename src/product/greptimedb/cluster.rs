//! A managed local GreptimeDB cluster (issue 25 §1): one metasrv, N datanodes and M frontends
//! of the workspace's `greptime` binary, with their metadata in a real store found on the
//! machine (pinned by path, version and SHA-256 at `prepare`): etcd, or a PostgreSQL cluster of
//! the workspace's own (the metasrv's `postgres-store`, its `greptime_metakv` table). Facts:
//! reference/real/greptimedb-cluster.md §1-§4.
//!
//! The supervisor manages one process; for a cluster that process is tsbsctl's own launcher
//! (`tsbsctl greptimedb cluster-run`, hidden), which starts the roles in order (store, metasrv,
//! datanodes, frontends), each in its own process group and killed with it (parent-death
//! signal), waits for each to answer, then for `information_schema.cluster_info` to list every
//! node through every frontend, and only then says `ready` in `cluster.status` (the readiness
//! gate). On SIGTERM or SIGINT it stops them in reverse order, each with its draining stop; a
//! role that exits on its own is a failure naming the role and its log. Every address is
//! loopback and explicit: the real binary advertises the first network interface otherwise.
//!
//! Layout under the workspace: `data/etcd` or `data/postgres` (the store), `data/metasrv`,
//! `data/datanode-<i>` (each a
//! datanode's data home: `wal/`, `data/`, `metadata/` as standalone), `logs/<role>/`, and
//! `config.toml` (the datanodes' config). On S3 (`--storage s3`) the datanodes share one
//! bucket and root, each has its own write cache (`cache/datanode-<i>`, in the
//! `datanode-<i>.toml` the launcher derives from `config.toml` at every start), and only the
//! datanodes get the keys, in their environment.

use std::collections::BTreeMap;
use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::storage::{self, ObjectStorage};
use crate::error::{Error, Result};
use crate::workspace_manifest::WorkspaceManifest;

/// Most datanodes and frontends a local cluster may have (each is a process on this machine).
pub const MAX_DATANODES: u32 = 16;
pub const MAX_FRONTENDS: u32 = 8;

/// The metasrv's config (written by the launcher at every start, from nothing but constants):
/// the metasrv is the role that reports telemetry in a cluster, and a benchmark does not.
pub const METASRV_CONFIG: &str = "metasrv.toml";
const METASRV_TOML: &str =
    "# Written by tsbsctl at every cluster start.\nenable_telemetry = false\n";

/// The readiness gate the launcher writes: its pid, then `starting`, `ready` or `stopping`.
pub const STATUS_FILE: &str = "cluster.status";

/// The metadata store of a workspace, as pinned at `prepare`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct MetadataStore {
    /// `etcd` or `postgres`.
    pub kind: String,
    /// The server binary: `etcd`, or PostgreSQL's `postgres` (its `initdb` is beside it).
    pub path: PathBuf,
    /// The version it printed (`3.4.23`; `15.18`).
    pub version: String,
    pub sha256: String,
}

/// The metadata stores a managed cluster can use.
pub const STORE_KINDS: &[&str] = &["etcd", "postgres"];

/// The metasrv's table in a PostgreSQL store (GreptimeDB's default `meta_table_name`).
pub const PG_META_TABLE: &str = "greptime_metakv";

impl MetadataStore {
    /// The store's listener ports, named in the workspace.
    fn port_names(kind: &str) -> &'static [&'static str] {
        match kind {
            "postgres" => &["metadata-postgres"],
            _ => &["etcd-client", "etcd-peer"],
        }
    }
}

/// `extra.topology` of a cluster workspace.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Topology {
    /// `cluster` (a standalone workspace has no topology field).
    pub mode: String,
    pub datanodes: u32,
    pub frontends: u32,
    pub metadata_store: MetadataStore,
}

impl Topology {
    pub fn of(ws: &WorkspaceManifest) -> Option<Topology> {
        ws.extra
            .get("topology")
            .and_then(|v| serde_json::from_value(v.clone()).ok())
            .filter(|t: &Topology| t.mode == "cluster")
    }

    /// `1 METASRV, 3 DATANODE, 2 FRONTEND` (as the external probe words a deployment).
    pub fn summary(&self) -> String {
        format!(
            "1 METASRV, {} DATANODE, {} FRONTEND",
            self.datanodes, self.frontends
        )
    }
}

/// Checks `--datanodes`/`--frontends` (exit 2 with the bounds).
pub fn check_counts(datanodes: u32, frontends: u32) -> Result<()> {
    if !(1..=MAX_DATANODES).contains(&datanodes) {
        return Err(
            Error::invalid(format!("--datanodes {datanodes} is out of range")).with_hint(format!(
                "a local cluster has 1 to {MAX_DATANODES} datanodes"
            )),
        );
    }
    if !(1..=MAX_FRONTENDS).contains(&frontends) {
        return Err(
            Error::invalid(format!("--frontends {frontends} is out of range")).with_hint(format!(
                "a local cluster has 1 to {MAX_FRONTENDS} frontends"
            )),
        );
    }
    Ok(())
}

/// The listener ports of a cluster beyond frontend 0's (which keep the standalone names:
/// `http`, `grpc`, `mysql`, `postgres` = P..P+3): the other frontends, the metasrv, the
/// datanodes and the metadata store, on consecutive ports from P+4.
pub fn extra_ports(
    http: u16,
    datanodes: u32,
    frontends: u32,
    store: &str,
) -> Result<BTreeMap<String, u16>> {
    let mut names = Vec::new();
    for f in 1..frontends {
        for k in ["http", "grpc", "mysql", "postgres"] {
            names.push(format!("frontend-{f}-{k}"));
        }
    }
    names.push("metasrv-grpc".into());
    names.push("metasrv-http".into());
    for d in 1..=datanodes {
        names.push(format!("datanode-{d}-grpc"));
        names.push(format!("datanode-{d}-http"));
    }
    names.extend(
        MetadataStore::port_names(store)
            .iter()
            .map(|n| n.to_string()),
    );
    let last = u32::from(http) + 3 + names.len() as u32;
    if last > u32::from(u16::MAX) {
        return Err(Error::invalid(format!(
            "--http-port {http} leaves no room for the cluster's {} ports above it",
            names.len() + 4
        ))
        .with_hint(format!(
            "pick an HTTP port of at most {}",
            u32::from(u16::MAX) - 3 - names.len() as u32
        )));
    }
    Ok(names
        .into_iter()
        .enumerate()
        .map(|(i, n)| (n, http + 4 + i as u16))
        .collect())
}

/// Finds etcd (`--etcd PATH`, else `etcd` on `PATH`, else Debian's `/usr/bin/etcd`) and pins it.
pub fn find_etcd(given: Option<&Path>) -> Result<MetadataStore> {
    let path = match given {
        Some(p) => p.to_path_buf(),
        None => std::env::var_os("PATH")
            .into_iter()
            .flat_map(|p| std::env::split_paths(&p).collect::<Vec<_>>())
            .map(|d| d.join("etcd"))
            .chain(std::iter::once(PathBuf::from("/usr/bin/etcd")))
            .find(|p| p.is_file())
            .ok_or_else(|| {
                Error::invalid("no etcd found on PATH or at /usr/bin/etcd").with_hint(
                    "a cluster keeps its metadata in etcd: install it (Debian: `apt-get install etcd-server`) or pass --etcd PATH",
                )
            })?,
    };
    let path = std::fs::canonicalize(&path).map_err(|e| {
        Error::invalid(format!("--etcd {}: {e}", path.display()))
            .with_hint("pass the path of an etcd server binary")
    })?;
    let out = Command::new(&path)
        .arg("--version")
        .stdin(Stdio::null())
        .output()
        .map_err(|e| {
            Error::invalid(format!("could not run {} --version: {e}", path.display()))
                .with_hint("pass the path of an etcd server binary with --etcd")
        })?;
    let text = String::from_utf8_lossy(&out.stdout);
    let version = text
        .lines()
        .find_map(|l| l.strip_prefix("etcd Version:"))
        .map(|v| v.trim().to_string())
        .filter(|v| !v.is_empty())
        .ok_or_else(|| {
            Error::invalid(format!(
                "{} --version does not print an etcd version: {:?}",
                path.display(),
                text.trim()
            ))
            .with_hint("pass the path of an etcd server binary with --etcd")
        })?;
    let sha256 = crate::hash::sha256_file(&path, &crate::output::NoProgress)?.0;
    Ok(MetadataStore {
        kind: "etcd".into(),
        path,
        version,
        sha256,
    })
}

/// Finds a PostgreSQL installation as the TimescaleDB product does (`--pg-bin DIR`, else
/// `pg_config`, Debian's and Homebrew's directories) and pins its `postgres`: the cluster's
/// own PostgreSQL server, made by its `initdb` at the first start.
pub fn find_postgres(pg_bin: Option<&Path>) -> Result<MetadataStore> {
    use crate::product::timescaledb::install;
    let inst = install::find(pg_bin, &install::SearchPaths::default()).map_err(|e| {
        let hint = "a cluster with --metadata-store postgres runs its own PostgreSQL server: install PostgreSQL (Debian: `apt-get install postgresql`) or pass --pg-bin DIR";
        Error::invalid(e.message).with_hint(hint)
    })?;
    let bin = inst.binaries.get("postgres").ok_or_else(|| {
        Error::invalid(format!("no postgres binary in {}", inst.bin_dir.display()))
            .with_hint("pass --pg-bin DIR of a PostgreSQL installation")
    })?;
    Ok(MetadataStore {
        kind: "postgres".into(),
        path: bin.path.clone(),
        version: inst.version.version.clone(),
        sha256: bin.sha256.clone(),
    })
}

/// Before every start: the pinned store binary is still the same bytes (exit 4 otherwise).
pub fn check_store(t: &Topology) -> Result<()> {
    let s = &t.metadata_store;
    let now = crate::hash::sha256_file(&s.path, &crate::output::NoProgress)
        .map(|(h, _)| h)
        .map_err(|e| {
            Error::integrity(format!(
                "the workspace's {} {} is gone: {}",
                s.kind,
                s.path.display(),
                e.message
            ))
        })?;
    if now != s.sha256 {
        return Err(Error::integrity(format!(
            "the workspace's {kind} {} has changed (sha256 {now}, pinned {} of {kind} {})",
            s.path.display(),
            s.sha256,
            s.version,
            kind = s.kind
        ))
        .with_hint("the cluster's metadata store is part of what was measured: prepare a new workspace (`tsbsctl greptimedb prepare --database-id NEW --topology cluster ...`)"));
    }
    Ok(())
}

/// The datanodes' `config.toml` (addresses, data homes and log dirs go on their command
/// lines; CLI wins over the file). On S3 every datanode has the same `[storage]` (one bucket
/// and root: region directories are distinct by region id) and a write cache of the same
/// size; its cache directory is its own, set in the `datanode-<i>.toml` the launcher derives
/// from this file at every start ([`datanode_file`]). The keys are in no file: each datanode
/// reads them from its environment (`GREPTIMEDB_DATANODE__STORAGE__ACCESS_KEY_ID`, ...).
pub fn datanode_config(ws: &WorkspaceManifest, s3: Option<&ObjectStorage>) -> String {
    let q = |v: &str| toml::Value::String(v.to_string()).to_string();
    let storage = match s3 {
        None => "[storage]\ntype = \"File\"\n".to_string(),
        Some(s) => format!(
            "[storage]\n\
             # Object storage, fixed at prepare, shared by every datanode. The credentials are not\n\
             # here: tsbsctl passes them to the datanodes only, in their environment\n\
             # (GREPTIMEDB_DATANODE__STORAGE__ACCESS_KEY_ID and ..._SECRET_ACCESS_KEY, from the\n\
             # variables the workspace manifest names).\n\
             type = \"S3\"\n\
             bucket = {bucket}\n\
             root = {root}\n\
             endpoint = {endpoint}\n\
             region = {region}\n\
             \n\
             # Each datanode's local cache of the object store; its directory (write_cache_path,\n\
             # <workspace>/cache/datanode-<i>) is set in the datanode-<i>.toml tsbsctl writes from\n\
             # this file at every start.\n\
             [[region_engine]]\n\
             [region_engine.mito]\n\
             enable_write_cache = true\n\
             write_cache_size = {size}\n\
             # Listing one engine replaces the default list: keep the file engine too.\n\
             [[region_engine]]\n\
             [region_engine.file]\n",
            bucket = q(&s.location.bucket),
            root = q(&s.location.prefix),
            endpoint = q(&s.location.endpoint),
            region = q(&s.location.region),
            // Bytes, unambiguous: GreptimeDB reads "MB" as MiB.
            size = q(&format!("{}B", s.cache_size_bytes)),
        ),
    };
    format!(
        "# GreptimeDB datanode config of tsbsctl workspace {id} (GreptimeDB {v}, tsbsctl {t}).\n\
         # Every datanode of the cluster reads it; their addresses, data homes and log\n\
         # directories are on their command lines.\n\
         \n\
         [http]\n\
         # No server-side cut of long statements (ADMIN COMPACT_TABLE waits for the merge).\n\
         timeout = \"0s\"\n\
         \n\
         [wal]\n\
         provider = \"raft_engine\"\n\
         \n\
         {storage}",
        id = ws.database_id,
        v = ws.version,
        t = crate::VERSION
    )
}

/// The config file of datanode `d`: the workspace's `config.toml` itself, or, when the
/// datanodes need their own (on object storage, under `--memory`), `datanode-<d>.toml`
/// (written by [`write_datanode_files`]).
pub fn datanode_file(dir: &Path, d: u32, own: bool) -> PathBuf {
    if own {
        dir.join(format!("datanode-{d}.toml"))
    } else {
        dir.join(super::super::CONFIG_FILE)
    }
}

/// The local cache directory of datanode `d`.
pub fn datanode_cache(dir: &Path, d: u32) -> PathBuf {
    dir.join(super::storage::CACHE_DIR)
        .join(format!("datanode-{d}"))
}

/// `datanode-<i>.toml` for every datanode: the workspace's `config.toml` (checked by
/// `verify`) with, on object storage, the datanode's own `write_cache_path`, and under a
/// `--memory` shape of `memory` bytes the sizes of a machine of its share of the shape
/// ([`memshape`]: the datanodes divide it). Written at every start, from nothing but that
/// file, the workspace directory and the shape.
pub fn write_datanode_files(
    dir: &Path,
    datanodes: u32,
    on_s3: bool,
    memory: Option<u64>,
) -> Result<()> {
    let (path, base) = super::workspace_setup::read_config(dir)?;
    for d in 1..=datanodes {
        let mut t = base.clone();
        let mut why = Vec::new();
        if on_s3 {
            let cache = datanode_cache(dir, d);
            let mito = t
                .get_mut("region_engine")
                .and_then(toml::Value::as_array_mut)
                .and_then(|a| super::workspace_setup::mito_table(a))
                .ok_or_else(|| {
                    Error::integrity(format!(
                        "{} has no [region_engine.mito] for the write cache",
                        path.display()
                    ))
                })?;
            mito.insert(
                "write_cache_path".into(),
                toml::Value::String(cache.to_string_lossy().into_owned()),
            );
            why.push(format!("datanode {d}'s own cache directory"));
        }
        if let Some(m) = memory {
            let share = m / u64::from(datanodes.max(1));
            super::memshape::shape_config(&mut t, &path, share)?;
            why.push(format!(
                "the buffers, caches and index-build thresholds of a machine of {} (--memory {} \
                 over {datanodes} datanodes)",
                crate::render::bytes(minijinja::Value::from(share)),
                crate::render::bytes(minijinja::Value::from(m)),
            ));
        }
        let body =
            toml::to_string(&t).map_err(|e| Error::failed(format!("datanode-{d}.toml: {e}")))?;
        let out = format!(
            "# Written by tsbsctl at every cluster start: config.toml with {}.\n\
             # Edit config.toml, not this file.\n{body}",
            why.join(" and ")
        );
        crate::fsutil::write_atomic(&datanode_file(dir, d, true), out.as_bytes())?;
    }
    Ok(())
}

/// The datanodes' HTTP URLs, datanode 1 first.
pub fn datanode_urls(ws: &WorkspaceManifest, t: &Topology) -> Vec<String> {
    (1..=t.datanodes)
        .filter_map(|d| {
            ws.ports
                .get(&format!("datanode-{d}-http"))
                .map(|p| format!("http://{}", addr(*p)))
        })
        .collect()
}

/// One process of the cluster.
#[derive(Debug, Clone)]
pub struct Role {
    pub name: String,
    pub program: PathBuf,
    pub args: Vec<String>,
    /// Set in the role's environment (nothing secret: the command line is logged).
    pub env: Vec<(String, String)>,
    pub log_dir: PathBuf,
    pub health: Health,
    /// What stops it with its draining stop.
    pub stop_signal: nix::sys::signal::Signal,
    /// Variables of the launcher's environment this role must not get (the object store's
    /// keys reach the datanodes only).
    pub env_remove: Vec<String>,
}

/// How the launcher knows a role is up.
#[derive(Debug, Clone)]
pub enum Health {
    /// Answers 200.
    Http(String),
    /// A PostgreSQL server on 127.0.0.1 that answers `SELECT 1` as its superuser.
    Postgres(u16),
}

impl Health {
    fn up(&self, client: Option<&reqwest::blocking::Client>) -> bool {
        match self {
            Health::Http(url) => {
                client.is_some_and(|c| c.get(url).send().is_ok_and(|r| r.status().is_success()))
            }
            Health::Postgres(port) => pg_client(*port)
                .and_then(|mut c| c.simple_query("SELECT 1"))
                .is_ok(),
        }
    }
}

/// The superuser's connection to the store's PostgreSQL (trust on loopback, as initdb made it).
fn pg_client(port: u16) -> std::result::Result<postgres::Client, postgres::Error> {
    postgres::Config::new()
        .host("127.0.0.1")
        .port(port)
        .user(crate::product::timescaledb::server::SUPERUSER)
        .dbname("postgres")
        .connect_timeout(Duration::from_secs(2))
        .connect(postgres::NoTls)
}

/// The PostgreSQL store's cluster directories: `data/postgres/{data,sock}`.
fn pg_layout(dir: &Path) -> crate::product::timescaledb::server::Layout {
    crate::product::timescaledb::server::Layout::in_dir(&dir.join("data").join("postgres"))
}

/// The `--store-addrs` of the metasrv for the workspace's store.
fn store_addrs(ws: &WorkspaceManifest, t: &Topology) -> Result<(String, String)> {
    Ok(match t.metadata_store.kind.as_str() {
        "postgres" => (
            "postgres-store".into(),
            format!(
                "postgresql://{}@{}/postgres",
                crate::product::timescaledb::server::SUPERUSER,
                addr(port(ws, "metadata-postgres")?)
            ),
        ),
        _ => ("etcd-store".into(), addr(port(ws, "etcd-client")?)),
    })
}

/// The store's process: etcd, or the workspace's PostgreSQL server (as an unprivileged user
/// when tsbsctl is root, as the TimescaleDB product runs it).
fn store_role(ws: &WorkspaceManifest, t: &Topology, dir: &Path, keys: &[String]) -> Result<Role> {
    let data = dir.join("data");
    let logs = dir.join("logs");
    let s = |p: &Path| p.to_string_lossy().into_owned();
    if t.metadata_store.kind == "postgres" {
        use crate::product::timescaledb::server;
        let p = port(ws, "metadata-postgres")?;
        let layout = pg_layout(dir);
        let args: Vec<String> = [
            "-D".to_string(),
            s(&layout.data_dir),
            "-c".into(),
            "listen_addresses=127.0.0.1".into(),
            "-c".into(),
            format!("port={p}"),
            "-c".into(),
            format!("unix_socket_directories={}", s(&layout.socket_dir)),
        ]
        .into();
        let cmd = server::RunAs::detect().wrap_exec(&t.metadata_store.path, &args);
        return Ok(Role {
            name: "postgres".into(),
            program: server::resolve_system_tool(&cmd.program),
            args: cmd.args,
            // Its messages in English, whatever the caller's locale.
            env: vec![("LC_MESSAGES".into(), "C".into())],
            log_dir: logs.join("postgres"),
            health: Health::Postgres(p),
            // A fast shutdown: SIGTERM would wait for every client to disconnect.
            stop_signal: nix::sys::signal::Signal::SIGINT,
            env_remove: keys.to_vec(),
        });
    }
    let (client, peer) = (port(ws, "etcd-client")?, port(ws, "etcd-peer")?);
    Ok(Role {
        name: "etcd".into(),
        program: t.metadata_store.path.clone(),
        args: vec![
            "--name".into(),
            "tsbsctl".into(),
            "--data-dir".into(),
            s(&data.join("etcd")),
            "--listen-client-urls".into(),
            format!("http://{}", addr(client)),
            "--advertise-client-urls".into(),
            format!("http://{}", addr(client)),
            "--listen-peer-urls".into(),
            format!("http://{}", addr(peer)),
            "--initial-advertise-peer-urls".into(),
            format!("http://{}", addr(peer)),
            "--initial-cluster".into(),
            format!("tsbsctl=http://{}", addr(peer)),
            "--initial-cluster-state".into(),
            "new".into(),
        ],
        env: Vec::new(),
        log_dir: logs.join("etcd"),
        health: Health::Http(format!("http://{}/health", addr(client))),
        stop_signal: nix::sys::signal::Signal::SIGTERM,
        env_remove: keys.to_vec(),
    })
}

/// Before the store starts: a PostgreSQL store's cluster is made by `initdb` the first time
/// (as the server's user), and a `postmaster.pid` left by a killed server is cleared.
/// Returns what was done, for the server log.
fn prepare_store(t: &Topology, dir: &Path) -> Result<Vec<String>> {
    if t.metadata_store.kind != "postgres" {
        return Ok(Vec::new());
    }
    use crate::product::timescaledb::{install, server};
    let layout = pg_layout(dir);
    let run_as = server::RunAs::detect();
    let mut said = Vec::new();
    if !layout.data_dir.join("PG_VERSION").is_file() {
        let bin_dir = t.metadata_store.path.parent().unwrap_or(Path::new("/"));
        let inst = install::find(Some(bin_dir), &install::SearchPaths::default())?;
        let _ = std::fs::remove_dir_all(&layout.data_dir);
        server::initdb(&inst, &layout, &run_as)?;
        said.push(format!(
            "initdb made the metadata store's PostgreSQL cluster in {} (as {})",
            layout.data_dir.display(),
            run_as.describe()
        ));
    }
    server::prepare_dirs(&layout, &run_as)?;
    if let Some(m) = server::clear_stale_pid(&layout.data_dir)? {
        said.push(m);
    }
    for p in server::clear_stale_socket_locks(&layout.socket_dir)? {
        said.push(format!("removed the stale socket lock {}", p.display()));
    }
    Ok(said)
}

fn port(ws: &WorkspaceManifest, name: &str) -> Result<u16> {
    ws.ports.get(name).copied().ok_or_else(|| {
        Error::integrity(format!(
            "cluster workspace {} has no {name} port",
            ws.database_id
        ))
    })
}

fn addr(p: u16) -> String {
    format!("127.0.0.1:{p}")
}

/// The frontends' HTTP URLs, frontend 0 first.
pub fn frontend_urls(ws: &WorkspaceManifest, t: &Topology) -> Vec<String> {
    (0..t.frontends)
        .filter_map(|f| {
            let name = if f == 0 {
                "http".to_string()
            } else {
                format!("frontend-{f}-http")
            };
            ws.ports.get(&name).map(|p| format!("http://{}", addr(*p)))
        })
        .collect()
}

/// The processes in start order.
/// `memory`: the `--memory` shape the cluster runs in, if any.
pub fn roles(
    ws: &WorkspaceManifest,
    dir: &Path,
    greptime: &Path,
    memory: Option<u64>,
) -> Result<Vec<Role>> {
    let t = Topology::of(ws)
        .ok_or_else(|| Error::integrity(format!("workspace {} is no cluster", ws.database_id)))?;
    let data = dir.join("data");
    let logs = dir.join("logs");
    let s = |p: &Path| p.to_string_lossy().into_owned();
    let own_files = ObjectStorage::of(&ws.extra)?.is_some() || memory.is_some();
    let keys: Vec<String> = [
        storage::ENV_ACCESS_KEY_SUFFIX,
        storage::ENV_SECRET_KEY_SUFFIX,
    ]
    .iter()
    .map(|k| format!("{}{k}", storage::DATANODE_ENV))
    .collect();
    let mut out = Vec::new();
    out.push(store_role(ws, &t, dir, &keys)?);
    let (mgrpc, mhttp) = (port(ws, "metasrv-grpc")?, port(ws, "metasrv-http")?);
    let (backend, store_addr) = store_addrs(ws, &t)?;
    let log_flag = |role: &str| format!("--log-dir={}", s(&logs.join(role)));
    out.push(Role {
        name: "metasrv".into(),
        program: greptime.to_path_buf(),
        args: vec![
            log_flag("metasrv"),
            "metasrv".into(),
            "start".into(),
            "--rpc-bind-addr".into(),
            addr(mgrpc),
            "--rpc-server-addr".into(),
            addr(mgrpc),
            "--http-addr".into(),
            addr(mhttp),
            "--store-addrs".into(),
            store_addr,
            "--backend".into(),
            backend,
            "--data-home".into(),
            s(&data.join("metasrv")),
            "-c".into(),
            s(&dir.join(METASRV_CONFIG)),
        ],
        env: Vec::new(),
        log_dir: logs.join("metasrv"),
        health: Health::Http(format!("http://{}/health", addr(mhttp))),
        stop_signal: nix::sys::signal::Signal::SIGTERM,
        env_remove: keys.clone(),
    });
    for d in 1..=t.datanodes {
        let name = format!("datanode-{d}");
        let (g, h) = (
            port(ws, &format!("{name}-grpc"))?,
            port(ws, &format!("{name}-http"))?,
        );
        let home = data.join(&name);
        out.push(Role {
            name: name.clone(),
            program: greptime.to_path_buf(),
            args: vec![
                log_flag(&name),
                "datanode".into(),
                "start".into(),
                "--node-id".into(),
                d.to_string(),
                "--rpc-bind-addr".into(),
                addr(g),
                "--rpc-server-addr".into(),
                addr(g),
                "--http-addr".into(),
                addr(h),
                "--metasrv-addrs".into(),
                addr(mgrpc),
                "--data-home".into(),
                s(&home),
                "--wal-dir".into(),
                s(&home.join("wal")),
                "-c".into(),
                s(&datanode_file(dir, d, own_files)),
            ],
            env: Vec::new(),
            log_dir: logs.join(&name),
            health: Health::Http(format!("http://{}/health", addr(h))),
            stop_signal: nix::sys::signal::Signal::SIGTERM,
            env_remove: vec![],
        });
    }
    for f in 0..t.frontends {
        let name = format!("frontend-{f}");
        let p = |k: &str| {
            if f == 0 {
                port(ws, k)
            } else {
                port(ws, &format!("frontend-{f}-{k}"))
            }
        };
        let (h, g, my, pg) = (p("http")?, p("grpc")?, p("mysql")?, p("postgres")?);
        out.push(Role {
            name: name.clone(),
            program: greptime.to_path_buf(),
            args: vec![
                log_flag(&name),
                "frontend".into(),
                "start".into(),
                "--metasrv-addrs".into(),
                addr(mgrpc),
                "--http-addr".into(),
                addr(h),
                "--rpc-bind-addr".into(),
                addr(g),
                "--rpc-server-addr".into(),
                addr(g),
                "--mysql-addr".into(),
                addr(my),
                "--postgres-addr".into(),
                addr(pg),
            ],
            env: Vec::new(),
            log_dir: logs.join(&name),
            health: Health::Http(format!("http://{}/health", addr(h))),
            stop_signal: nix::sys::signal::Signal::SIGTERM,
            env_remove: keys.clone(),
        });
    }
    Ok(out)
}

/// The cluster as `cluster_info` shows it through `url`: (metasrv, datanodes, frontends).
fn counts_through(client: &reqwest::blocking::Client, url: &str) -> Option<(u32, u32, u32)> {
    let v: Value = client
        .post(format!("{url}/v1/sql"))
        .form(&[(
            "sql",
            "SELECT peer_type FROM information_schema.cluster_info",
        )])
        .send()
        .ok()
        .filter(|r| r.status().is_success())?
        .json()
        .ok()?;
    let mut c = (0, 0, 0);
    for r in v.pointer("/output/0/records/rows")?.as_array()? {
        match r.get(0).and_then(Value::as_str) {
            Some("METASRV") => c.0 += 1,
            Some("DATANODE") => c.1 += 1,
            Some("FRONTEND") => c.2 += 1,
            _ => {}
        }
    }
    Some(c)
}

/// True when every frontend's `cluster_info` lists the whole cluster.
pub fn complete(ws: &WorkspaceManifest, t: &Topology) -> bool {
    let Ok(client) = crate::http::local(Some(Duration::from_secs(2))) else {
        return false;
    };
    frontend_urls(ws, t)
        .iter()
        .all(|u| counts_through(&client, u) == Some((1, t.datanodes, t.frontends)))
}

fn read_manifest(dir: &Path) -> Result<WorkspaceManifest> {
    let p = dir.join("manifest.json");
    let text = std::fs::read(&p).map_err(|e| Error::io("read", &p, e))?;
    Ok(serde_json::from_slice(&text)?)
}

/// `tsbsctl greptimedb cluster-ready`: exit 0 when the launcher is ready and `cluster_info`
/// lists every node through every frontend.
pub fn ready_command(dir: &Path) -> i32 {
    match read_manifest(dir) {
        Ok(ws) => match Topology::of(&ws) {
            Some(t) if complete(&ws, &t) => 0,
            _ => 1,
        },
        Err(_) => 1,
    }
}

fn write_status(dir: &Path, state: &str) {
    let text = format!("{}\n{state}\n", std::process::id());
    let _ = crate::fsutil::write_atomic(&dir.join(STATUS_FILE), text.as_bytes());
}

/// Where the launcher writes: its stdout (the server log), one whole line at a time.
fn say(out: &Mutex<std::io::Stdout>, line: &str) {
    let mut o = out.lock().unwrap_or_else(|e| e.into_inner());
    let _ = writeln!(o, "tsbsctl cluster: {line}");
    let _ = o.flush();
}

struct Running {
    role: Role,
    child: Child,
    started: Instant,
}

/// `tsbsctl greptimedb cluster-run`: the launcher (see the module comment). Exit 0 after a
/// clean stop, 1 when a role failed. `memory`: the `--memory` shape it runs in, if any.
pub fn launch(dir: &Path, greptime: &Path, memory: Option<u64>) -> i32 {
    let out = Arc::new(Mutex::new(std::io::stdout()));
    let ws = match read_manifest(dir) {
        Ok(ws) => ws,
        Err(e) => {
            say(&out, &format!("cannot read the workspace: {}", e.message));
            return 1;
        }
    };
    let roles = match roles(&ws, dir, greptime, memory) {
        Ok(r) => r,
        Err(e) => {
            say(&out, &e.message);
            return 1;
        }
    };
    let t = Topology::of(&ws).expect("roles() checked the topology");
    let term = Arc::new(AtomicBool::new(false));
    for sig in [signal_hook::consts::SIGTERM, signal_hook::consts::SIGINT] {
        let _ = signal_hook::flag::register(sig, Arc::clone(&term));
    }
    write_status(dir, "starting");
    if let Err(e) = crate::fsutil::write_atomic(&dir.join(METASRV_CONFIG), METASRV_TOML.as_bytes())
    {
        say(
            &out,
            &format!("cannot write {METASRV_CONFIG}: {}", e.message),
        );
        return 1;
    }
    match prepare_store(&t, dir) {
        Ok(said) => said.iter().for_each(|l| say(&out, l)),
        Err(e) => {
            say(
                &out,
                &format!(
                    "FAILED: the metadata store's {} could not be prepared: {}",
                    t.metadata_store.kind, e.message
                ),
            );
            let _ = std::fs::remove_file(dir.join(STATUS_FILE));
            return 1;
        }
    }
    let on_s3 = matches!(ObjectStorage::of(&ws.extra), Ok(Some(_)));
    if on_s3 || memory.is_some() {
        if let Err(e) = write_datanode_files(dir, t.datanodes, on_s3, memory) {
            say(
                &out,
                &format!("cannot write the datanodes' configs: {}", e.message),
            );
            return 1;
        }
    }
    let client = crate::http::local(Some(Duration::from_secs(2))).ok();
    let mut running: Vec<Running> = Vec::new();
    let mut failed: Option<String> = None;
    'start: for role in roles {
        if let Err(e) = std::fs::create_dir_all(&role.log_dir) {
            failed = Some(format!("cannot create {}: {e}", role.log_dir.display()));
            break;
        }
        let mut cmd = Command::new(&role.program);
        for k in &role.env_remove {
            cmd.env_remove(k);
        }
        cmd.args(&role.args)
            .envs(role.env.iter().map(|(k, v)| (k, v)))
            .current_dir(dir)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        crate::proc::configure(&mut cmd);
        say(
            &out,
            &format!(
                "starting {}: {}",
                role.name,
                crate::proc::command_line(&role.program.to_string_lossy(), &role.args)
            ),
        );
        let mut child = match cmd.spawn() {
            Ok(c) => c,
            Err(e) => {
                failed = Some(format!(
                    "could not start {} ({}): {e}",
                    role.name,
                    role.program.display()
                ));
                break;
            }
        };
        for stream in [
            child
                .stdout
                .take()
                .map(|s| Box::new(s) as Box<dyn std::io::Read + Send>),
            child
                .stderr
                .take()
                .map(|s| Box::new(s) as Box<dyn std::io::Read + Send>),
        ]
        .into_iter()
        .flatten()
        {
            let (out, log) = (Arc::clone(&out), role.log_dir.join("output.log"));
            std::thread::spawn(move || pump(stream, &out, &log));
        }
        running.push(Running {
            role: role.clone(),
            child,
            started: Instant::now(),
        });
        // Up when its health URL answers; a role that exits first has failed.
        loop {
            if term.load(Ordering::SeqCst) {
                break 'start;
            }
            if let Some(f) = exited(&mut running) {
                failed = Some(f);
                break 'start;
            }
            if role.health.up(client.as_ref()) {
                let r = running.last().expect("just pushed");
                say(
                    &out,
                    &format!(
                        "{} is up (pid {}, {:.1} s)",
                        role.name,
                        r.child.id(),
                        r.started.elapsed().as_secs_f64()
                    ),
                );
                break;
            }
            std::thread::sleep(Duration::from_millis(100));
        }
    }
    if failed.is_none() && !term.load(Ordering::SeqCst) {
        // Ready only when every frontend sees every node (datanodes register by heartbeat).
        let since = Instant::now();
        loop {
            if term.load(Ordering::SeqCst) {
                break;
            }
            if let Some(f) = exited(&mut running) {
                failed = Some(f);
                break;
            }
            if complete(&ws, &t) {
                say(
                    &out,
                    &format!(
                        "ready: information_schema.cluster_info lists {} through every frontend ({:.1} s)",
                        t.summary(),
                        since.elapsed().as_secs_f64()
                    ),
                );
                write_status(dir, "ready");
                break;
            }
            std::thread::sleep(Duration::from_millis(200));
        }
    }
    // Serving: until a signal, or until a role exits on its own.
    while failed.is_none() && !term.load(Ordering::SeqCst) {
        if let Some(f) = exited(&mut running) {
            failed = Some(f);
            break;
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    write_status(dir, "stopping");
    if let Some(f) = &failed {
        say(&out, &format!("FAILED: {f}"));
    }
    let clean = stop_all(&mut running, &out);
    let _ = std::fs::remove_file(dir.join(STATUS_FILE));
    if failed.is_some() || !clean {
        1
    } else {
        0
    }
}

/// The first role that has exited, described with its log; it is removed from `running`.
fn exited(running: &mut Vec<Running>) -> Option<String> {
    for i in 0..running.len() {
        if let Ok(Some(status)) = running[i].child.try_wait() {
            let r = running.remove(i);
            return Some(format!(
                "{} (pid {}) exited on its own with {status} after {:.1} s; its log: {}",
                r.role.name,
                r.child.id(),
                r.started.elapsed().as_secs_f64(),
                r.role.log_dir.display()
            ));
        }
    }
    None
}

/// Stops the roles in reverse start order, each given the time it needs (the supervisor
/// bounds the whole stop); true when every one exited with 0.
fn stop_all(running: &mut Vec<Running>, out: &Mutex<std::io::Stdout>) -> bool {
    let mut clean = true;
    while let Some(mut r) = running.pop() {
        let t0 = Instant::now();
        crate::proc::signal_group(r.child.id(), r.role.stop_signal);
        let status = r.child.wait();
        // etcd ends its graceful stop by re-raising the SIGTERM it was sent: a clean stop too.
        let ok = matches!(&status, Ok(s) if s.success()
            || std::os::unix::process::ExitStatusExt::signal(s) == Some(libc::SIGTERM));
        clean &= ok;
        say(
            out,
            &format!(
                "{} stopped ({}) in {:.1} s",
                r.role.name,
                match &status {
                    Ok(s) => s.to_string(),
                    Err(e) => e.to_string(),
                },
                t0.elapsed().as_secs_f64()
            ),
        );
    }
    clean
}

/// Copies a role's output, line by line, to the launcher's stdout (the workspace's server
/// log, where tsbsctl's log scan and compaction checks read it) and to the role's own file.
fn pump(stream: Box<dyn std::io::Read + Send>, out: &Mutex<std::io::Stdout>, log: &Path) {
    let mut file = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(log)
        .ok();
    for line in BufReader::new(stream).lines() {
        let Ok(line) = line else { break };
        if let Some(f) = file.as_mut() {
            let _ = writeln!(f, "{line}");
        }
        let mut o = out.lock().unwrap_or_else(|e| e.into_inner());
        let _ = writeln!(o, "{line}");
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ports_follow_frontend_zero_and_fit_below_65536() {
        let p = extra_ports(4000, 3, 2, "etcd").unwrap();
        assert_eq!(p["frontend-1-http"], 4004);
        assert_eq!(p["frontend-1-postgres"], 4007);
        assert_eq!(p["metasrv-grpc"], 4008);
        assert_eq!(p["datanode-1-grpc"], 4010);
        assert_eq!(p["datanode-3-http"], 4015);
        assert_eq!(p["etcd-peer"], 4017);
        assert_eq!(p.len(), 14);
        assert_eq!(extra_ports(65530, 1, 1, "etcd").unwrap_err().exit_code(), 2);
        let p = extra_ports(4000, 3, 2, "postgres").unwrap();
        assert_eq!(p["metadata-postgres"], 4016);
        assert_eq!(p.len(), 13);
        assert!(check_counts(0, 1).is_err());
        assert!(check_counts(3, 9).is_err());
        assert!(check_counts(3, 2).is_ok());
    }

    #[test]
    fn datanodes_on_s3_share_the_store_and_each_get_a_cache_of_their_own() {
        let ws: WorkspaceManifest = serde_json::from_value(serde_json::json!({
            "database_id": "c1", "product": "greptimedb", "version": "1.1.4",
            "version_source": "explicit", "platform": "linux-amd64",
            "installation_path": "/i", "binary_sha256": "x", "database": "benchmark",
            "ports": {}, "config_sha256": null, "binding": null, "created_at": "t",
            "updated_at": "t", "tool_version": "0"
        }))
        .unwrap();
        let s = storage::Flags {
            storage: Some("s3".into()),
            s3: crate::s3::LocationFlags {
                endpoint: Some("http://127.0.0.1:7070".into()),
                bucket: Some("tsbs".into()),
                ..Default::default()
            },
            prefix: Some("tsbs/c1".into()),
            cache_size: Some("32MiB".into()),
        }
        .parse()
        .unwrap()
        .unwrap();
        let text = datanode_config(&ws, Some(&s));
        let v: toml::Value = toml::from_str(&text).unwrap();
        assert_eq!(v["storage"]["type"].as_str(), Some("S3"));
        assert_eq!(v["storage"]["root"].as_str(), Some("tsbs/c1"));
        assert!(v["storage"].get("access_key_id").is_none());
        let dir = std::env::temp_dir().join(format!("tsbsctl-dn-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(dir.join(super::super::super::CONFIG_FILE), &text).unwrap();
        write_datanode_files(&dir, 2, true, None).unwrap();
        for d in 1..=2 {
            let f = std::fs::read_to_string(datanode_file(&dir, d, true)).unwrap();
            let t: toml::Value = toml::from_str(&f).unwrap();
            let mito = &t["region_engine"][0]["mito"];
            assert_eq!(
                mito["write_cache_path"].as_str(),
                Some(datanode_cache(&dir, d).to_string_lossy().as_ref())
            );
            assert_eq!(mito["write_cache_size"].as_str(), Some("33554432B"));
            assert_eq!(t["storage"], v["storage"]);
        }
        // Under --memory 4GiB on S3: each of the two gets a 2 GiB machine's sizes and keeps
        // its own cache directory.
        write_datanode_files(&dir, 2, true, Some(4 << 30)).unwrap();
        let f = std::fs::read_to_string(datanode_file(&dir, 2, true)).unwrap();
        let t: toml::Value = toml::from_str(&f).unwrap();
        let mito = &t["region_engine"][0]["mito"];
        assert_eq!(mito["page_cache_size"].as_str(), Some("268435456B"));
        assert_eq!(mito["write_cache_size"].as_str(), Some("33554432B"));
        assert_eq!(
            mito["write_cache_path"].as_str(),
            Some(datanode_cache(&dir, 2).to_string_lossy().as_ref())
        );
        assert!(f.contains("over 2 datanodes"), "{f}");
        // File storage under --memory 3GiB over three: a 1 GiB machine each, the file engine
        // kept, no cache directory.
        std::fs::write(
            dir.join(super::super::super::CONFIG_FILE),
            datanode_config(&ws, None),
        )
        .unwrap();
        write_datanode_files(&dir, 3, false, Some(3 << 30)).unwrap();
        let f = std::fs::read_to_string(datanode_file(&dir, 3, true)).unwrap();
        let t: toml::Value = toml::from_str(&f).unwrap();
        let engines = t["region_engine"].as_array().unwrap();
        assert_eq!(engines.len(), 2);
        assert!(engines[1].get("file").is_some());
        let mito = &engines[0]["mito"];
        assert_eq!(mito["page_cache_size"].as_str(), Some("134217728B"));
        assert_eq!(
            mito["index"]["metadata_cache_size"].as_str(),
            Some("33554432B")
        );
        assert!(mito.get("write_cache_path").is_none());
        assert_eq!(t["storage"]["type"].as_str(), Some("File"));
        let _ = std::fs::remove_dir_all(&dir);
        // File storage: the datanodes read config.toml itself.
        assert!(datanode_config(&ws, None).contains("type = \"File\""));
        assert_eq!(
            datanode_file(&dir, 1, false),
            dir.join(super::super::super::CONFIG_FILE)
        );
    }
}
