//! TimescaleDB's [`Reporting`]: what its runs record and how summaries word it.

use std::path::Path;

use serde_json::{json, Value};

use super::{read_record, TimescaleDb};
use crate::product::timescaledb::server as pg;
use crate::product::{Reporting, CONFIG_FILE};
use crate::workspace_manifest::WorkspaceManifest;

impl Reporting for TimescaleDb {
    fn templates(&self) -> &'static [(&'static str, &'static str)] {
        &[(
            "summary/settings",
            include_str!("../../../../templates/timescaledb/summary-settings.md.j2"),
        )]
    }
    /// "PostgreSQL 17.2 (no TimescaleDB)", "TimescaleDB 2.17.2 (PostgreSQL 17.2)".
    fn run_label(&self, version: &str, settings: Option<&Value>) -> Option<String> {
        let ext = settings.and_then(|s| s["extension_version"].as_str());
        Some(self.mode.label(version, ext))
    }
    /// The version a server answers with is PostgreSQL's (`SHOW server_version`).
    fn version_name(&self) -> Option<&'static str> {
        Some("PostgreSQL")
    }
    fn statistics_exclusion(&self) -> &'static str {
        "The first query of each query worker (`--burn-in` = the query workers, on the runner's command line in each query log): it pays the worker's connection setup (3-7 ms), which would otherwise land in sub-millisecond latencies. A type whose file has no more queries than workers runs without a burn-in, its setup included."
    }
    /// The benchmark settings and the mode, recorded with every run.
    fn server_settings(
        &self,
        ws: Option<&WorkspaceManifest>,
        data_dir: Option<&Path>,
        _runtime_version: Option<&str>,
    ) -> Option<Value> {
        let ws = ws?;
        let dir = data_dir.and_then(Path::parent)?;
        let rendered = std::fs::read_to_string(dir.join(CONFIG_FILE)).ok();
        Some(json!({
            "mode": self.mode.as_str(),
            "settings": self.settings(ws, dir),
            "config_file": pg::CONFIG_NAME,
            "config": rendered,
            "extension_version": read_record(&ws.installation_path)
                .ok()
                .and_then(|i| i.extension_version().map(String::from)),
        }))
    }
}
