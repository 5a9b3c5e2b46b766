//! InfluxDB 2's [`WorkspaceSetup`]: what its workspaces are made of.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde_json::{json, Map, Value};

use super::{setup, InfluxDb2, ORG, TEMPLATE, USER};
use crate::error::{Error, Result};
use crate::product::{Distribution, WorkspaceSetup};
use crate::workspace_manifest::WorkspaceManifest;

impl WorkspaceSetup for InfluxDb2 {
    fn default_http_port(&self) -> u16 {
        8086
    }
    fn default_ports(&self, http: u16) -> Result<BTreeMap<String, u16>> {
        Ok(BTreeMap::from([("http".to_string(), http)]))
    }
    fn new_workspace_fields(&self, _id: &str) -> Map<String, Value> {
        let mut m = Map::new();
        m.insert("org".into(), json!(ORG));
        m.insert("user".into(), json!(USER));
        m.insert("token_file".into(), json!(setup::TOKEN_FILE));
        m
    }
    fn render_config(&self, ws: &WorkspaceManifest, dir: &Path) -> Result<Option<String>> {
        let mut env = minijinja::Environment::new();
        env.set_undefined_behavior(minijinja::UndefinedBehavior::Strict);
        env.add_filter("toml", |s: String| toml::Value::String(s).to_string());
        env.add_template("config.toml", TEMPLATE)
            .map_err(|e| Error::failed(format!("InfluxDB 2 config template: {e}")))?;
        let http = ws.ports.get("http").copied().unwrap_or(8086);
        let data = dir.join("data");
        let s = |p: PathBuf| p.to_string_lossy().into_owned();
        let ctx = minijinja::context! {
            database_id => ws.database_id,
            version => ws.version,
            tool_version => crate::VERSION,
            http_addr => format!("127.0.0.1:{http}"),
            bolt_path => s(data.join("influxd.bolt")),
            sqlite_path => s(data.join("influxd.sqlite")),
            engine_path => s(data.join("engine")),
        };
        env.get_template("config.toml")
            .and_then(|t| t.render(ctx))
            .map(Some)
            .map_err(|e| Error::failed(format!("rendering the InfluxDB 2 config: {e}")))
    }
    fn init_data_dir(&self, ws: &WorkspaceManifest, dir: &Path) -> Result<()> {
        let org = ws.extra["org"].as_str().unwrap_or(ORG);
        setup::onboard(
            &ws.installation_path.join(self.binary_name()),
            dir,
            org,
            USER,
        )
    }
}
