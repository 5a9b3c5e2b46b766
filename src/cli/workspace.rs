//! `tsbsctl workspace lock|unlock|status`.

use crate::context::Ctx;
use crate::error::{Error, Result};
use crate::output::Outcome;

#[derive(Debug, clap::Subcommand)]
pub enum WorkspaceCmd {
    /// Show holds and live locks.
    Status {
        /// Workspace id (all workspaces when omitted).
        id: Option<String>,
    },
}

pub fn run(_ctx: &Ctx, cmd: WorkspaceCmd) -> Result<Outcome> {
    match cmd {
        WorkspaceCmd::Status { .. } => Err(Error::failed("workspace status is not built yet")),
    }
}
