//! GreptimeDB's [`ManagedServer`]: how its managed server is started, watched and reached.

use std::path::Path;

use super::{cluster, memshape, storage, GreptimeDb};
use crate::error::{Error, Result};
use crate::product::{Distribution, ManagedServer, ServerCommand, CONFIG_FILE};
use crate::server::{Probe, Timing};
use crate::workspace_manifest::WorkspaceManifest;

impl ManagedServer for GreptimeDb {
    fn server_command(
        &self,
        ws: &WorkspaceManifest,
        dir: &Path,
        install_dir: &Path,
    ) -> Result<ServerCommand> {
        // Object storage: the bucket must answer before the server starts (the real one
        // would start and fail its first flush), and the keys go in its environment only:
        // a standalone's, or (through the launcher, which hands them to no other role) the
        // datanodes'.
        let s3 = storage::ObjectStorage::of(&ws.extra)?;
        if let Some(s) = &s3 {
            s.probe()?;
        }
        if cluster::Topology::of(ws).is_some() {
            // tsbsctl's own launcher runs the roles (cluster.rs).
            let me = std::env::current_exe()
                .map_err(|e| Error::failed(format!("cannot find tsbsctl's own binary: {e}")))?;
            return Ok(ServerCommand {
                program: me,
                args: vec![
                    "greptimedb".into(),
                    "cluster-run".into(),
                    "--workspace-dir".into(),
                    dir.to_string_lossy().into_owned(),
                    "--greptime".into(),
                    install_dir
                        .join(self.binary_name())
                        .to_string_lossy()
                        .into_owned(),
                ],
                env: match &s3 {
                    Some(s) => s.server_env(storage::DATANODE_ENV)?,
                    None => vec![],
                },
                // GREPTIMEDB_<ROLE>__* would override the roles' flags and config; the
                // variables the keys come from stay with tsbsctl.
                env_remove: std::env::vars()
                    .map(|(k, _)| k)
                    .filter(|k| k.starts_with("GREPTIMEDB_"))
                    .chain(s3.iter().flat_map(|s| s.location.source_vars()))
                    .collect(),
            });
        }
        let env = match &s3 {
            Some(s) => s.server_env(storage::STANDALONE_ENV)?,
            None => vec![],
        };
        Ok(ServerCommand {
            program: install_dir.join(self.binary_name()),
            args: vec![
                "standalone".into(),
                "start".into(),
                "-c".into(),
                dir.join(CONFIG_FILE).to_string_lossy().into_owned(),
            ],
            env,
            // GREPTIMEDB_STANDALONE__* would override the config; the workspace decides. The
            // variables the keys come from stay with tsbsctl.
            env_remove: std::env::vars()
                .map(|(k, _)| k)
                .filter(|k| k.starts_with("GREPTIMEDB_STANDALONE"))
                .chain(s3.iter().flat_map(|s| s.location.source_vars()))
                .collect(),
        })
    }

    /// A cluster launcher's `FAILED:` line names the role that failed and its log.
    fn failure_lines(&self) -> Option<fn(&str) -> Vec<String>> {
        Some(|log| {
            log.lines()
                .filter_map(|l| l.strip_prefix("tsbsctl cluster: FAILED: "))
                .map(str::to_string)
                .collect()
        })
    }

    fn managed_urls(&self, ws: &WorkspaceManifest, endpoint: &str) -> Vec<String> {
        match cluster::Topology::of(ws) {
            Some(t) => cluster::frontend_urls(ws, &t),
            None => vec![endpoint.to_string()],
        }
    }

    /// A cluster is ready when its launcher says so (every role answered and
    /// `cluster_info` lists every node through every frontend) and `cluster_info` still does.
    fn readiness_probe_for(&self, endpoint: &str, _install_dir: &Path, ws_dir: &Path) -> Probe {
        let cluster = crate::manifest::read::<WorkspaceManifest>(&ws_dir.join("manifest.json"))
            .ok()
            .filter(|m| cluster::Topology::of(m).is_some());
        match (cluster, std::env::current_exe()) {
            (Some(_), Ok(me)) => Probe::Command {
                program: me,
                args: vec![
                    "greptimedb".into(),
                    "cluster-ready".into(),
                    "--workspace-dir".into(),
                    ws_dir.to_string_lossy().into_owned(),
                ],
                gate: Some(crate::server::StatusGate {
                    path: ws_dir.join(cluster::STATUS_FILE),
                    pid_line: Some(1),
                    status_line: 2,
                    ready: "ready".into(),
                }),
            },
            _ => self.readiness_probe(endpoint),
        }
    }

    fn check_can_serve(&self, ws: &WorkspaceManifest) -> Result<()> {
        match cluster::Topology::of(ws) {
            Some(t) => cluster::check_store(&t),
            None => Ok(()),
        }
    }

    /// The buffers, caches and index-build thresholds GreptimeDB sizes from the memory it
    /// sees (no flags: configs written for the shape, [`memshape`]): a standalone's in
    /// `config.shaped.toml`; a cluster's datanodes' in the files their launcher writes, told
    /// the shape by `--memory-bytes`.
    fn shape_memory(
        &self,
        ws: &WorkspaceManifest,
        ws_dir: &Path,
        memory_bytes: u64,
        args: &mut Vec<String>,
    ) -> Result<()> {
        if cluster::Topology::of(ws).is_some() {
            args.extend(["--memory-bytes".into(), memory_bytes.to_string()]);
            return Ok(());
        }
        let shaped = memshape::write_config(ws_dir, memory_bytes)?;
        let Some(at) = args.iter().position(|a| a == "-c") else {
            return Err(Error::failed(
                "the standalone's command line names no config file to size for the shape",
            ));
        };
        args[at + 1] = shaped.to_string_lossy().into_owned();
        Ok(())
    }

    /// What the server says it sized from the memory (its `/config`), recorded with the run:
    /// a standalone's, or a cluster's datanodes' (the frontend answers without a storage
    /// engine).
    fn check_serving(
        &self,
        ws: &WorkspaceManifest,
        _ws_dir: &Path,
        endpoint: &str,
        pid: u32,
    ) -> Result<Option<serde_json::Value>> {
        let argv = crate::proc::argv(pid);
        Ok(match cluster::Topology::of(ws) {
            Some(t) => memshape::reported(
                &cluster::datanode_urls(ws, &t),
                argv.iter().any(|a| a == "--memory-bytes"),
            ),
            None => memshape::reported(
                &[endpoint.to_string()],
                argv.iter().any(|a| a.ends_with(memshape::SHAPED_CONFIG)),
            ),
        })
    }

    fn readiness_probe(&self, endpoint: &str) -> Probe {
        Probe::PostForm {
            url: Self::sql_url(endpoint),
            body: "sql=SHOW%20DATABASES".into(),
        }
    }

    /// GreptimeDB answers only after every region is open and its WAL replayed (slow after a
    /// large load: nothing is flushed on shutdown), and on SIGTERM it finishes every queued
    /// and running flush and compaction first (minutes after a large load or during a
    /// compaction): the stop waits while it makes progress.
    fn default_timing(&self) -> Timing {
        Timing {
            startup_timeout: std::time::Duration::from_secs(600),
            grace: std::time::Duration::from_secs(600),
            drain_limit: Some(std::time::Duration::from_secs(6 * 3600)),
            startup_wait: Some("it opens its regions and replays unflushed WAL first"),
            ..Timing::default()
        }
    }
}
