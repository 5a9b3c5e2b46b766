//! `tsbsctl greptimedb install|prepare|copy|list|inspect|verify|remove|serve`: a thin layer over
//! [`crate::install`], [`crate::workspace`] and [`crate::server`] with the GreptimeDB product.

use std::collections::BTreeMap;

use serde_json::json;

use crate::cli::bench as bench_cli;
use crate::cli::common::LockArgs;
use crate::cli::dbcmd::{self, IdArgs, RemoveArgs, ServeArgs};
use crate::context::Ctx;
use crate::error::Result;
use crate::output::Outcome;
use crate::product::greptimedb::storage::{self, ObjectStorage};
use crate::product::greptimedb::GreptimeDb;
use crate::workspace::{CopyRequest, PrepareRequest};

// Parsed once per process; boxing the prepare flags would buy nothing.
#[allow(clippy::large_enum_variant)]
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
    /// List the SST files on disk that no manifest lists (outputs of compactions a stop threw
    /// away), as the workspace's server reports them; --remove deletes them once it stopped.
    Orphans(OrphansArgs),
    /// (internal) Run a cluster workspace's roles; the server process tsbsctl supervises.
    #[command(hide = true)]
    ClusterRun(ClusterRunArgs),
    /// (internal) Exit 0 when a cluster workspace's cluster_info lists every node.
    #[command(hide = true)]
    ClusterReady(ClusterReadyArgs),
}

#[derive(Debug, clap::Args)]
pub struct ClusterRunArgs {
    #[arg(long, value_name = "DIR")]
    pub workspace_dir: std::path::PathBuf,
    #[arg(long, value_name = "PATH")]
    pub greptime: std::path::PathBuf,
    /// The `--memory` shape the cluster runs in, in bytes: the datanodes' configs are sized
    /// for their share of it.
    #[arg(long, value_name = "BYTES")]
    pub memory_bytes: Option<u64>,
}

#[derive(Debug, clap::Args)]
pub struct ClusterReadyArgs {
    #[arg(long, value_name = "DIR")]
    pub workspace_dir: std::path::PathBuf,
}

#[derive(Debug, clap::Args)]
pub struct OrphansArgs {
    /// Workspace id.
    #[arg(long, value_name = "ID")]
    pub database_id: String,
    /// Delete the listed files after the server has stopped cleanly (under the workspace lock;
    /// the queries never read them).
    #[arg(long)]
    pub remove: bool,
    #[command(flatten)]
    pub timing: crate::cli::common::ServerTimingArgs,
    #[command(flatten)]
    pub lock: LockArgs,
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
    /// `standalone` (default) or `cluster`: one metasrv, --datanodes datanodes and --frontends
    /// frontends of the same binary, their metadata in etcd or PostgreSQL. The HTTP/gRPC/MySQL/PostgreSQL
    /// ports are frontend 0's; the other roles take the ports after them. Fixed at creation.
    #[arg(long, value_name = "MODE")]
    pub topology: Option<String>,
    /// Datanodes of a cluster (default 3).
    #[arg(long, value_name = "N")]
    pub datanodes: Option<u32>,
    /// Frontends of a cluster (default 1); the loader spreads its workers over them.
    #[arg(long, value_name = "N")]
    pub frontends: Option<u32>,
    /// Where a cluster keeps its metadata: `etcd` (default) or `postgres` (a PostgreSQL
    /// server of the workspace's own, made with this machine's PostgreSQL).
    #[arg(long, value_name = "STORE")]
    pub metadata_store: Option<String>,
    /// With --metadata-store etcd: the etcd server binary (default: `etcd` on PATH, else
    /// /usr/bin/etcd); pinned by its SHA-256.
    #[arg(long, value_name = "PATH")]
    pub etcd: Option<std::path::PathBuf>,
    /// With --metadata-store postgres: PostgreSQL's bin directory (default: found as
    /// `timescaledb install` finds it); its `postgres` is pinned by its SHA-256.
    #[arg(long, value_name = "DIR")]
    pub pg_bin: Option<std::path::PathBuf>,
    #[command(flatten)]
    pub storage: StorageArgs,
    #[command(flatten)]
    pub lock: LockArgs,
}

/// Where the workspace's server keeps its data: fixed when the workspace is made.
#[derive(Debug, clap::Args)]
pub struct StorageArgs {
    /// file (the default: everything under the workspace) or s3 (SSTs, indexes and manifests
    /// in an S3 bucket, with a local cache; WAL and metadata stay local). A cluster's
    /// datanodes share the bucket and prefix, each with a cache of its own.
    #[arg(long, value_name = "KIND")]
    pub storage: Option<String>,
    #[command(flatten)]
    pub s3: crate::cli::common::S3Args,
    /// With --storage s3: the key prefix (GreptimeDB's `root`) of this workspace's objects.
    #[arg(long, value_name = "P")]
    pub s3_prefix: Option<String>,
    /// With --storage s3: the local cache's size (`write_cache_size`; each datanode's in a
    /// cluster), e.g. 1GiB.
    #[arg(long, value_name = "SIZE")]
    pub cache_size: Option<String>,
}

impl StorageArgs {
    fn flags(&self) -> storage::Flags {
        storage::Flags {
            storage: self.storage.clone(),
            s3: (&self.s3).into(),
            prefix: self.s3_prefix.clone(),
            cache_size: self.cache_size.clone(),
        }
    }
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
pub struct BenchFlags {
    // all | load | query, or a phase of the product's own: the values are set per product
    // (`generic::phase_values`).
    #[arg(value_name = "PHASE")]
    pub phase: String,
    #[command(flatten)]
    pub common: bench_cli::CommonArgs,
}

impl super::generic::OwnFlagsOf for BenchFlags {
    fn entry() -> &'static crate::product::Entry {
        &crate::product::greptimedb::ENTRY
    }
}

/// `tsbsctl bench greptimedb PHASE ...`: the flags above, then the flags GreptimeDB declares
/// itself.
pub type BenchArgs = super::generic::WithOwnFlags<BenchFlags>;

/// The request of `tsbsctl bench greptimedb` (its checks done), with its recorded flags.
pub(super) fn bench_request(a: BenchArgs) -> Result<crate::bench::Request> {
    let product = a.product_flags(None);
    let phase = super::generic::phase_of(&crate::product::greptimedb::ENTRY, &a.flags.phase)?;
    bench_cli::request(a.flags.common, product, phase)
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
            let wanted = a.storage.flags().parse()?;
            let existing = crate::workspace::load(&ctx.root, &p, &a.database_id).ok();
            let cluster = cluster_request(ctx, &a, &mut ports)?;
            let mut extra = prepare_storage(&a, wanted.as_ref(), existing.as_ref())?;
            extra.extend(cluster);
            let req = PrepareRequest {
                id: a.database_id,
                version: a.version,
                database: a.database,
                http_port: a.http_port,
                ports,
                extra,
            };
            let mut o = dbcmd::prepare_cmd(ctx, &p, req, &a.lock)?;
            let kept = o.data["manifest"]
                .as_object()
                .map(ObjectStorage::of)
                .transpose()?
                .flatten();
            if let Some(s) = &kept {
                o.push_line(&format!("  storage: {}\n", s.describe()));
            }
            o.data["storage"] = ObjectStorage::field(kept.as_ref());
            Ok(o)
        }
        GreptimedbCmd::ClusterRun(a) => {
            std::process::exit(crate::product::greptimedb::cluster::launch(
                &a.workspace_dir,
                &a.greptime,
                a.memory_bytes,
            ))
        }
        GreptimedbCmd::ClusterReady(a) => std::process::exit(
            crate::product::greptimedb::cluster::ready_command(&a.workspace_dir),
        ),
        GreptimedbCmd::Copy(a) => {
            if let Ok(src) = crate::workspace::load(&ctx.root, &p, &a.source_database_id) {
                if crate::product::greptimedb::cluster::Topology::of(&src.manifest).is_some() {
                    return Err(crate::error::Error::invalid(format!(
                        "workspace {} is a cluster; copying a cluster is not supported yet",
                        a.source_database_id
                    ))
                    .with_hint("prepare a new cluster workspace and load it (`tsbsctl greptimedb prepare --database-id NEW --topology cluster ...`)"));
                }
            }
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
        GreptimedbCmd::Verify(a) => {
            let id = a.database_id.clone();
            let mut out = dbcmd::verify_cmd(ctx, &p, a)?;
            // verify starts no server: what the last query run saw, and how to look now.
            if let Some((run, n, bytes)) = last_orphans(ctx, &id) {
                out.data["orphans_last_seen"] =
                    json!({"run_id": run, "sst_files": n, "bytes": bytes});
                if n > 0 {
                    out.push_line(&format!(
                        "the last query run ({run}) found {n} SST file(s){} on storage that no manifest lists (outputs of compactions a stop threw away); `tsbsctl greptimedb orphans --database-id {id}` lists them now and removes them with --remove\n",
                        bytes.map_or(String::new(), |b| format!(
                            " ({})",
                            crate::render::bytes(minijinja::Value::from(b))
                        ))
                    ));
                }
            }
            Ok(out)
        }
        GreptimedbCmd::Remove(a) => dbcmd::remove_cmd(ctx, &p, a),
        GreptimedbCmd::Serve(a) => dbcmd::serve_cmd(ctx, &p, a),
        GreptimedbCmd::Orphans(a) => orphans_cmd(ctx, a),
    }
}

/// `--topology cluster ...` of `prepare`: checked against an existing workspace (a topology
/// never changes), the etcd pinned and the cluster's ports added for a new one. Returns the
/// new workspace's `topology` field.
fn cluster_request(
    ctx: &Ctx,
    a: &PrepareArgs,
    ports: &mut BTreeMap<String, u16>,
) -> Result<serde_json::Map<String, serde_json::Value>> {
    use crate::error::Error;
    use crate::product::greptimedb::cluster::{self, Topology};
    let existing = crate::workspace::load(&ctx.root, &GreptimeDb, &a.database_id).ok();
    let had = existing.as_ref().map(|w| Topology::of(&w.manifest));
    let want_cluster = match a.topology.as_deref() {
        None => matches!(had, Some(Some(_))),
        Some("standalone") => false,
        Some("cluster") => true,
        Some(other) => {
            return Err(Error::invalid(format!("--topology {other:?} is not known"))
                .with_hint("use --topology standalone or --topology cluster"))
        }
    };
    if !want_cluster {
        for (flag, given) in [
            ("--datanodes", a.datanodes.is_some()),
            ("--frontends", a.frontends.is_some()),
            ("--metadata-store", a.metadata_store.is_some()),
            ("--etcd", a.etcd.is_some()),
            ("--pg-bin", a.pg_bin.is_some()),
        ] {
            if given {
                return Err(Error::invalid(format!("{flag} applies to a cluster only"))
                    .with_hint("add --topology cluster (a new workspace), or leave the flag out"));
            }
        }
    }
    if let Some(had) = &had {
        if had.is_some() != want_cluster {
            let (is, asked) = if had.is_some() {
                ("a cluster", "standalone")
            } else {
                ("standalone", "a cluster")
            };
            return Err(Error::invalid(format!(
                "workspace {} is {is}; it cannot become {asked}",
                a.database_id
            ))
            .with_hint("a workspace never changes its topology: prepare a new one (`tsbsctl greptimedb prepare --database-id NEW ...`)"));
        }
    }
    if !want_cluster {
        return Ok(Default::default());
    }
    let kind = match a.metadata_store.as_deref() {
        None => None,
        Some(k) if cluster::STORE_KINDS.contains(&k) => Some(k),
        Some(other) => {
            return Err(
                Error::invalid(format!("--metadata-store {other:?} is not known")).with_hint(
                    format!("use --metadata-store {}", cluster::STORE_KINDS.join(" or ")),
                ),
            )
        }
    };
    // The store's own flag goes with its store only.
    let effective = kind
        .map(str::to_string)
        .or_else(|| {
            had.as_ref()
                .and_then(|t| t.as_ref().map(|t| t.metadata_store.kind.clone()))
        })
        .unwrap_or_else(|| "etcd".into());
    for (flag, given, store) in [
        ("--etcd", a.etcd.is_some(), "etcd"),
        ("--pg-bin", a.pg_bin.is_some(), "postgres"),
    ] {
        if given && effective != store {
            return Err(Error::invalid(format!(
                "{flag} applies to --metadata-store {store} only; this cluster's store is {effective}"
            ))
            .with_hint(format!("leave {flag} out, or use --metadata-store {store}")));
        }
    }
    if let Some(Some(t)) = &had {
        // Reuse: what was asked must be what the workspace is.
        if let Some(k) = kind.filter(|k| *k != t.metadata_store.kind) {
            return Err(Error::invalid(format!(
                "workspace {} keeps its metadata in {}; it cannot change to --metadata-store {k}",
                a.database_id, t.metadata_store.kind
            ))
            .with_hint("a workspace never changes its topology: prepare a new one (`tsbsctl greptimedb prepare --database-id NEW ...`)"));
        }
        for (flag, asked, has) in [
            ("--datanodes", a.datanodes, t.datanodes),
            ("--frontends", a.frontends, t.frontends),
        ] {
            if asked.is_some_and(|n| n != has) {
                return Err(Error::invalid(format!(
                    "workspace {} has {has} {}; it cannot change to {flag} {}",
                    a.database_id,
                    &flag[2..],
                    asked.unwrap_or_default()
                ))
                .with_hint("a workspace never changes its topology: prepare a new one (`tsbsctl greptimedb prepare --database-id NEW ...`)"));
            }
        }
        if a.http_port.is_some() {
            ports.extend(cluster::extra_ports(
                a.http_port.unwrap_or(4000),
                t.datanodes,
                t.frontends,
                &t.metadata_store.kind,
            )?);
        }
        return Ok(Default::default());
    }
    let (datanodes, frontends) = (a.datanodes.unwrap_or(3), a.frontends.unwrap_or(1));
    cluster::check_counts(datanodes, frontends)?;
    ports.extend(cluster::extra_ports(
        a.http_port.unwrap_or(4000),
        datanodes,
        frontends,
        &effective,
    )?);
    let store = match effective.as_str() {
        "postgres" => cluster::find_postgres(a.pg_bin.as_deref())?,
        _ => cluster::find_etcd(a.etcd.as_deref())?,
    };
    let t = Topology {
        mode: "cluster".into(),
        datanodes,
        frontends,
        metadata_store: store,
    };
    let mut extra = serde_json::Map::new();
    extra.insert("topology".into(), serde_json::to_value(&t)?);
    Ok(extra)
}

/// The orphan SST files the newest query run of workspace `id` recorded: (run id, files,
/// bytes). `None`: no run of it recorded them (older versions cannot say).
fn last_orphans(ctx: &Ctx, id: &str) -> Option<(String, u64, Option<u64>)> {
    crate::runlist::list(&ctx.root).into_iter().find_map(|e| {
        let crate::runlist::ListEntry::Run(r) = e else {
            return None;
        };
        if r.product != "greptimedb" || r.database_id.as_deref() != Some(id) {
            return None;
        }
        let text = std::fs::read_to_string(r.run_dir.join("summary.json")).ok()?;
        let s: serde_json::Value = serde_json::from_str(&text).ok()?;
        let loc = &s["data_location"];
        Some((
            r.run_id.clone(),
            loc["orphan_files"].as_u64()?,
            loc["orphan_bytes"].as_u64(),
        ))
    })
}

/// `orphans [--remove]`: the server's own list (its manifests against its storage), taken
/// while it is idle; files are removed only with the server stopped, so none can be in use.
fn orphans_cmd(ctx: &Ctx, a: OrphansArgs) -> Result<Outcome> {
    use crate::product::ManagedServer;
    let p = GreptimeDb;
    let timing = a.timing.apply(p.default_timing());
    let ws = crate::workspace::load(&ctx.root, &p, &a.database_id)?;
    if a.remove && ObjectStorage::of(&ws.manifest.extra)?.is_some() {
        // Its files are objects in the bucket; the workspace holds cached copies only.
        return Err(crate::error::Error::invalid(format!(
            "workspace {} keeps its SSTs in S3: --remove deletes local files only, so it is refused (list them without it)",
            a.database_id
        )));
    }
    let _guard =
        crate::workspace::lock_workspace(ctx, &p, &ws.dir, &a.database_id, &(&a.lock).into())?;
    let ws = crate::workspace::load(&ctx.root, &p, &a.database_id)?;
    let data = ws.data_dir();
    let log = ws.logs_dir().join("server.log");
    let spec = crate::workspace::server_spec(&ctx.root, &p, &ws, log, timing, false)?;
    ctx.reporter.info(&format!(
        "starting GreptimeDB {} to ask it which files its manifests list",
        ws.manifest.version
    ));
    let mut server = crate::server::Server::start(spec, ctx.reporter.as_ref())?;
    let listed = server.wait_ready().and_then(|()| {
        crate::product::greptimedb::ssts::list_orphans(
            server.endpoint(),
            &data,
            std::time::Duration::from_secs(600),
        )
    });
    let stop = server.stop();
    let orphans = listed?;
    let bytes: u64 = orphans.iter().filter_map(|(_, b)| *b).sum();
    let parquet = orphans
        .iter()
        .filter(|(p, _)| p.ends_with(".parquet"))
        .count();
    let mut removed = 0usize;
    if a.remove && !orphans.is_empty() {
        if stop.forced || stop.unexpected || stop.killed {
            return Err(crate::error::Error::failed(
                "the server did not stop cleanly: no file was removed",
            )
            .with_hint(format!(
                "check its log ({}), then run this again",
                ws.logs_dir().join("server.log").display()
            )));
        }
        for (rel, _) in &orphans {
            // Paths come from the server: only plain relative paths inside the data home.
            let rel_path = std::path::Path::new(rel);
            if rel_path
                .components()
                .any(|c| !matches!(c, std::path::Component::Normal(_)))
            {
                continue;
            }
            let full = data.join(rel_path);
            if full.is_file() {
                std::fs::remove_file(&full)
                    .map_err(|e| crate::error::Error::io("remove", &full, e))?;
                removed += 1;
            }
        }
    }
    let mut human = format!(
        "{} SST file(s) and {} index file(s), {}, of workspace {} are on disk but in no manifest\n",
        parquet,
        orphans.len() - parquet,
        crate::render::bytes(minijinja::Value::from(bytes)),
        a.database_id
    );
    for (rel, _) in orphans.iter().take(20) {
        human.push_str(&format!("  {}\n", data.join(rel).display()));
    }
    if orphans.len() > 20 {
        human.push_str(&format!(
            "  ... and {} more (--json lists them all)\n",
            orphans.len() - 20
        ));
    }
    if a.remove {
        human.push_str(&format!(
            "removed {removed} file(s) with the server stopped\n"
        ));
    } else if !orphans.is_empty() {
        human.push_str(&format!(
            "remove them with `tsbsctl greptimedb orphans --database-id {} --remove` (the queries never read them)\n",
            a.database_id
        ));
    }
    Ok(Outcome::new(
        json!({
            "database_id": a.database_id,
            "data_dir": data,
            "orphans": orphans.iter().map(|(p, b)| json!({"path": p, "bytes": b})).collect::<Vec<_>>(),
            "sst_files": parquet,
            "bytes": bytes,
            "removed": removed,
        }),
        human,
    ))
}

/// The storage part of `prepare`: an existing workspace keeps its storage (asking for another is
/// bad input); a new one on S3 is checked against the bucket before anything is created.
fn prepare_storage(
    a: &PrepareArgs,
    wanted: Option<&ObjectStorage>,
    existing: Option<&crate::workspace::Workspace>,
) -> Result<serde_json::Map<String, serde_json::Value>> {
    use crate::error::Error;
    let asked = a.storage.storage.is_some();
    if let Some(w) = existing {
        let have = ObjectStorage::of(&w.manifest.extra)?;
        if asked && have.as_ref() != wanted {
            let say =
                |s: Option<&ObjectStorage>| s.map_or("local files".to_string(), |s| s.describe());
            return Err(Error::invalid(format!(
                "workspace {} was prepared with storage {}; it cannot become {}",
                a.database_id,
                say(have.as_ref()),
                say(wanted)
            ))
            .with_hint("a workspace never changes its storage: prepare a new one (`tsbsctl greptimedb prepare --database-id NEW --storage ...`)"));
        }
        return Ok(Default::default());
    }
    let Some(s) = wanted else {
        return Ok(Default::default());
    };
    if let Some(v) = &a.version {
        let v = crate::product::Distribution::normalize_version(&GreptimeDb, v)?;
        if crate::product::compare_versions(&v, storage::MIN_VERSION).is_lt() {
            return Err(Error::invalid(format!(
                "--storage s3 needs GreptimeDB {} or later (its write cache keys); {v} is older",
                storage::MIN_VERSION
            )));
        }
    }
    // Before anything is written: the variables are set, the bucket answers to them.
    s.probe()?;
    Ok(
        [(storage::FIELD.to_string(), ObjectStorage::field(Some(s)))]
            .into_iter()
            .collect(),
    )
}
