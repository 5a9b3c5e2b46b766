//! The narrow context a product's own operation on one of its workspaces runs in, outside any
//! benchmark run (the sibling of [`super::op::OpCtx`], which serves operations inside a run):
//! the workspace lock, its manifest's product fields, its directories, and the command line of
//! its managed server with what the operation adds (environment, output filter, timing). The
//! workspace side implements it (`workspace/opctx.rs`), so the operation lives with its product
//! without naming `workspace` internals and without an import circle (products sit below).

use std::path::{Path, PathBuf};

use serde_json::Value;

use crate::error::Result;
use crate::output::SharedReporter;
use crate::server::{OutputFilter, ServerSpec, Timing};
use crate::workspace_manifest::WorkspaceManifest;

/// How the operation wants the workspace's server started.
pub struct ServerStart {
    /// Product fields the server is started as if the manifest held them (not recorded).
    pub fields: Vec<(String, Value)>,
    /// Where the server's output goes (appended to).
    pub log: PathBuf,
    pub timing: Timing,
    pub kill_orphan: bool,
    /// Extra environment of the server process (never on a command line or in a record).
    pub env: Vec<(String, String)>,
    /// Applied to every line of the server's output before it reaches the log.
    pub output_filter: OutputFilter,
}

/// What an operation may ask of the workspace it runs on.
pub trait WorkspaceOpCtx {
    fn reporter(&self) -> SharedReporter;
    /// Takes the workspace lock (a manual hold is honoured) for the rest of the context's life
    /// and reads the manifest again under it.
    fn lock(&mut self) -> Result<()>;
    fn manifest(&self) -> &WorkspaceManifest;
    /// The workspace's directory.
    fn dir(&self) -> &Path;
    fn logs_dir(&self) -> PathBuf;
    fn data_dir(&self) -> PathBuf;
    /// Sets the manifest's product field `key` to `value` and saves the manifest.
    fn record(&mut self, key: &str, value: Value) -> Result<()>;
    /// The workspace's managed server as `start` asks, checked (can it serve, is the installed
    /// binary the recorded one) but not started: the operation starts it with the supervisor
    /// (`Server::start`) and stops it.
    fn server_spec(&self, start: ServerStart) -> Result<ServerSpec>;
}
