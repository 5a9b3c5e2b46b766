//! How a managed workspace's server is started, watched and reached: the part of
//! [`Product`](super::Product) that the workspace's server start (`src/workspace/mod.rs`), the
//! bench target (`src/bench/target.rs`, `serving.rs`) and the run summary's log reading ask.

use std::path::Path;

use serde_json::Value;

use super::ServerCommand;
use crate::error::Result;
use crate::server::{Probe, Timing};
use crate::workspace_manifest::WorkspaceManifest;

/// A managed server: its command line, output and log, readiness, the checks before it is
/// started and before it is measured, and the URLs the TSBS tools get.
pub trait ManagedServer {
    /// How a managed server on 127.0.0.1:`port` serving SQL database `database` is reached,
    /// as messages, the server's ready line and run manifests show it (and the product's own
    /// hooks read it back). Default: `http://127.0.0.1:PORT`.
    fn local_endpoint(&self, port: u16, _database: &str) -> String {
        format!("http://127.0.0.1:{port}")
    }
    /// How to start the server of the workspace in `dir` whose installation is `install_dir`.
    fn server_command(
        &self,
        ws: &WorkspaceManifest,
        dir: &Path,
        install_dir: &Path,
    ) -> Result<ServerCommand>;
    /// A warning to show before a workspace's server is started (a licence about to expire).
    fn serve_warning(&self, _ws: &WorkspaceManifest) -> Option<String> {
        None
    }
    /// Refuses to start a workspace's server for product reasons (InfluxDB 3 Enterprise without
    /// an active licence), with the command that fixes it.
    fn check_can_serve(&self, _ws: &WorkspaceManifest) -> Result<()> {
        Ok(())
    }
    /// How this product's server log is read: the severity of a line, which severities fail a
    /// run, and what the counts mean (default: tracing-style level fields and Rust panics,
    /// where FATAL and panics fail, [`crate::logscan::LogRules::TRACING`]).
    fn log_rules(&self) -> crate::logscan::LogRules {
        crate::logscan::LogRules::TRACING
    }
    /// A line filter for the server's output on its way to the log (secrets a server may
    /// print: InfluxDB 3 licence e-mails and tokens). `None`: the log gets the output as is.
    fn output_filter(&self) -> Option<crate::server::OutputFilter> {
        None
    }
    /// Picks the lines of the server log that explain a failed start, for the error message
    /// (PostgreSQL: its `FATAL` lines). `None`: the message names the log only.
    fn failure_lines(&self) -> Option<fn(&str) -> Vec<String>> {
        None
    }
    /// The URLs the TSBS tools get for a managed workspace served at `endpoint` (a GreptimeDB
    /// cluster: every frontend). Default: the endpoint alone.
    fn managed_urls(&self, _ws: &WorkspaceManifest, endpoint: &str) -> Vec<String> {
        vec![endpoint.to_string()]
    }
    /// The readiness probe against `endpoint` (`http://127.0.0.1:PORT`).
    fn readiness_probe(&self, endpoint: &str) -> Probe;
    /// The readiness probe of a managed server whose installation is `install_dir` and whose
    /// workspace is `workspace_dir` (a probe by a command of the installation, e.g.
    /// `pg_isready`, gated by a status file of the data directory). Default:
    /// [`ManagedServer::readiness_probe`].
    fn readiness_probe_for(
        &self,
        endpoint: &str,
        _install_dir: &Path,
        _workspace_dir: &Path,
    ) -> Probe {
        self.readiness_probe(endpoint)
    }
    /// Checks a managed server once it answers, before anything is measured, returning what
    /// it found for the run's `server_settings` (PostgreSQL: the settings in force, read from
    /// the server, and the addresses the postmaster listens on). An error stops the run.
    fn check_serving(
        &self,
        _ws: &WorkspaceManifest,
        _ws_dir: &Path,
        _endpoint: &str,
        _pid: u32,
    ) -> Result<Option<Value>> {
        Ok(None)
    }
    /// Gives the server, for what it would size from the machine's memory, the share it would
    /// take of a machine of `memory_bytes` (the `--memory` shape), by adding to its `args`
    /// (InfluxDB 3's flags) or by pointing them at a config written in workspace `ws_dir` for
    /// the shape (GreptimeDB's caches, which have no flags). A server in a cgroup of its own
    /// below the root reads the host's memory (the root's limit, then `/proc/meminfo`), so
    /// without this it sizes itself from the host. Default: nothing to size, or the product's
    /// version takes no such setting tsbsctl knows.
    fn shape_memory(
        &self,
        _ws: &WorkspaceManifest,
        _ws_dir: &Path,
        _memory_bytes: u64,
        _args: &mut Vec<String>,
    ) -> Result<()> {
        Ok(())
    }
    /// Default startup timeout, grace period and port wait.
    fn default_timing(&self) -> Timing {
        Timing::default()
    }
}
