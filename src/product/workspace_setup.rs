//! What a managed workspace is made of: the part of [`Product`](super::Product) that
//! `prepare`, `copy`, `verify` (`src/workspace/`) and `runs rerun --database-id`
//! (`src/rerun.rs`) ask.

use std::collections::BTreeMap;
use std::path::Path;

use serde_json::{Map, Value};

use super::OutsideSetting;
use crate::error::Result;
use crate::workspace_manifest::WorkspaceManifest;

/// A new workspace's ports, config file, data directory and manifest fields.
pub trait WorkspaceSetup {
    /// Initialises a new workspace's data directory `dir/data` once its layout and config
    /// exist (PostgreSQL: `initdb`). Default: nothing to do.
    fn init_data_dir(&self, _ws: &WorkspaceManifest, _dir: &Path) -> Result<()> {
        Ok(())
    }
    /// The HTTP port of a new workspace unless the user picks one.
    fn default_http_port(&self) -> u16;
    /// Every listener a workspace's server opens, given its HTTP port: name -> port. Recorded
    /// in the workspace manifest and probed before each start.
    fn default_ports(&self, http_port: u16) -> Result<BTreeMap<String, u16>>;
    /// Product-specific manifest fields of a new workspace (InfluxDB 3: node id, licence).
    fn new_workspace_fields(&self, _id: &str) -> Map<String, Value> {
        Map::new()
    }
    /// The manifest fields a workspace made for `runs rerun --database-id NEW` takes from the
    /// recorded run's `server_settings`, so the rerun measures the same server setup
    /// (TimescaleDB: its durability).
    fn rerun_workspace_fields(&self, _server_settings: Option<&Value>) -> Map<String, Value> {
        Map::new()
    }
    /// The workspace's config file name and content, when the product uses one.
    fn render_config(&self, ws: &WorkspaceManifest, dir: &Path) -> Result<Option<String>>;
    /// Settings a workspace's server reads from files tsbsctl did not write (PostgreSQL:
    /// `postgresql.auto.conf`, lines after the include): shown by `verify`. Default: none.
    fn outside_settings(&self, _ws_dir: &Path) -> Result<Vec<OutsideSetting>> {
        Ok(Vec::new())
    }
}
