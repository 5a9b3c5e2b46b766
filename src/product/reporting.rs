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
    /// The product's own sections of the rendered files: (slot, minijinja source), rendered
    /// where the core's templates include `<product>/<slot>`, with their context. Slots of
    /// `summary.md` (`templates/summary.md.j2`, the run's summary): `summary/settings` (lines
    /// of the run's list), `summary/partitions`, `summary/storage` (the footprint table of a
    /// run whose `storage.layout` is the product's name), `summary/never_flushed`,
    /// `summary/data_location`, `summary/operations` (its operations' runs). Of the reports
    /// (`report.md.j2`, `report.html.j2`, once for each product among the runs):
    /// `report.md/settings`, `report.md/storage` (rows of the footprint table),
    /// `report.md/storage_note` (under it, per run: `st` its storage, `c` its column) and the
    /// same three of `report.html`.
    fn templates(&self) -> &'static [(&'static str, &'static str)] {
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

/// Adds every product's own sections ([`Reporting::templates`]) to `env`, as
/// `<product>/<slot>`: the core's templates include the ones of the products they show, and
/// leave out what a product does not word.
pub fn add_product_templates(
    env: &mut minijinja::Environment<'static>,
) -> crate::error::Result<()> {
    for (name, source) in product_templates() {
        env.add_template(name, source)
            .map_err(|e| crate::error::Error::failed(format!("template {name}: {e}")))?;
    }
    Ok(())
}

/// Every product's templates by their names in an environment, made once per process (a
/// report renders three environments).
fn product_templates() -> &'static [(String, String)] {
    static TEMPLATES: std::sync::OnceLock<Vec<(String, String)>> = std::sync::OnceLock::new();
    TEMPLATES.get_or_init(|| {
        let mut out = Vec::new();
        for entry in super::all() {
            let Ok(p) = (entry.make)(None) else { continue };
            for (slot, source) in p.templates() {
                // A template loses its last newline when rendered; one more keeps each
                // section's text as it would be where the include stands.
                out.push((format!("{}/{slot}", entry.name), format!("{source}\n")));
            }
        }
        out
    })
}
