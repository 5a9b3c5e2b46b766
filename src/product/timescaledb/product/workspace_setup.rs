//! TimescaleDB's [`WorkspaceSetup`]: what its workspaces are made of.

use std::collections::BTreeMap;
use std::path::Path;

use serde_json::{Map, Value};

use super::{read_record, TimescaleDb};
use crate::error::Result;
use crate::product::timescaledb::server::{Layout, RunAs};
use crate::product::timescaledb::{server as pg, Durability};
use crate::product::{WorkspaceSetup, CONFIG_FILE};
use crate::workspace_manifest::WorkspaceManifest;

impl WorkspaceSetup for TimescaleDb {
    /// initdb into `dir/data` as the server's user, then the rendered settings included.
    /// TimescaleDB mode on an installation without the extension is refused first.
    fn init_data_dir(&self, ws: &WorkspaceManifest, dir: &Path) -> Result<()> {
        let inst = read_record(&ws.installation_path)?;
        self.mode.require_available(
            inst.extension_version(),
            &inst.bin_dir.display().to_string(),
        )?;
        let run_as = RunAs::detect();
        let layout = Layout::in_dir(dir);
        pg::initdb(&inst, &layout, &run_as)?;
        let cfg = dir.join(CONFIG_FILE);
        let text = fs_err::read_to_string(&cfg)?;
        pg::install_config(&layout.data_dir, &text, &run_as)?;
        Ok(())
    }

    fn default_http_port(&self) -> u16 {
        15432
    }
    fn default_ports(&self, port: u16) -> Result<BTreeMap<String, u16>> {
        Ok(BTreeMap::from([("postgres".to_string(), port)]))
    }
    fn render_config(&self, ws: &WorkspaceManifest, dir: &Path) -> Result<Option<String>> {
        let inst = read_record(&ws.installation_path).ok();
        let label = self.mode.label(
            inst.as_ref()
                .map(|i| i.version.version.as_str())
                .unwrap_or(&ws.version),
            inst.as_ref().and_then(|i| i.extension_version()),
        );
        pg::render_config(
            &self.settings(ws, dir),
            &ws.database_id,
            &label,
            crate::VERSION,
        )
        .map(Some)
    }
    /// `postgresql.auto.conf` and what follows the include in `postgresql.conf`.
    fn outside_settings(&self, ws_dir: &Path) -> Result<Vec<crate::product::OutsideSetting>> {
        let cfg = ws_dir.join(CONFIG_FILE);
        let text = fs_err::read_to_string(&cfg)?;
        pg::outside_settings(
            &pg::Layout::in_dir(ws_dir).data_dir,
            &pg::config_assignments(&text),
        )
    }
    /// The recorded run's durability (a run of a workspace made before the choice: relaxed).
    fn rerun_workspace_fields(&self, server_settings: Option<&Value>) -> Map<String, Value> {
        let d = server_settings
            .and_then(|s| s["settings"]["durability"].as_str())
            .map_or(Ok(Durability::Relaxed), Durability::parse)
            .unwrap_or(Durability::Relaxed);
        [(Durability::FIELD.to_string(), d.as_str().into())]
            .into_iter()
            .collect()
    }
}
