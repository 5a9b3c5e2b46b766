//! What a run records of its server and how summaries word it: the part of
//! [`Product`](super::Product) that `src/summary.rs`, the run labels of `runs report` and the
//! bench target's record ask.

use std::path::Path;

use serde_json::Value;

use crate::workspace_manifest::WorkspaceManifest;

/// The run label, the recorded server settings and what summaries say about them.
pub trait Reporting {
    /// The run label for server version `version` and the recorded `server_settings`
    /// (`None`: `<display name> <version>`).
    fn run_label(&self, _version: &str, _settings: Option<&Value>) -> Option<String> {
        None
    }
    /// What the recorded server version is the version of, when it is not the product's own
    /// (TimescaleDB: the server is PostgreSQL, the extension has its own version).
    fn version_name(&self) -> Option<&'static str> {
        None
    }
    /// What the runner leaves out of a query type's statistics, and why, for summary.md.
    fn statistics_exclusion(&self) -> &'static str {
        "Nothing: every query in the file is in these statistics, the first query of each worker included (it also sets up the worker's HTTP connection; this runner has no burn-in)."
    }
    /// The product's own sections of `summary.md`: (slot, minijinja source), rendered with the
    /// whole summary as context where `templates/summary.md.j2` includes `<product>/<slot>`:
    /// `settings` (lines of the run's list), `partitions`, `storage` (the footprint table of
    /// a run whose `storage.layout` is the product's name), `never_flushed`, `data_location`,
    /// `operations` (the sections of its operations' runs).
    fn summary_templates(&self) -> &'static [(&'static str, &'static str)] {
        &[]
    }
    /// Product server settings recorded with the target (InfluxDB 3: durability, engine).
    fn server_settings(
        &self,
        _ws: Option<&WorkspaceManifest>,
        _data_dir: Option<&Path>,
        _runtime_version: Option<&str>,
    ) -> Option<Value> {
        None
    }
}
