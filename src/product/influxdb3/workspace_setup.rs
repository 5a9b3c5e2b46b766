//! InfluxDB 3's [`WorkspaceSetup`]: what its workspaces are made of.

use std::collections::BTreeMap;
use std::path::Path;

use serde_json::{json, Map, Value};

use super::{license, object_store, Edition, InfluxDb3};
use crate::error::Result;
use crate::product::WorkspaceSetup;
use crate::workspace_manifest::WorkspaceManifest;

impl WorkspaceSetup for InfluxDb3 {
    fn default_http_port(&self) -> u16 {
        8181
    }

    fn default_ports(&self, http_port: u16) -> Result<BTreeMap<String, u16>> {
        Ok(BTreeMap::from([("http".to_string(), http_port)]))
    }

    fn new_workspace_fields(&self, id: &str) -> Map<String, Value> {
        let mut m = Map::new();
        m.insert("node_id".into(), json!(Self::node_id(id)));
        match self.edition {
            Edition::Core => {
                m.insert("cluster_id".into(), Value::Null);
                m.insert(
                    "license".into(),
                    json!({"status": license::NOT_REQUIRED, "source": null, "path": null}),
                );
            }
            Edition::Enterprise => {
                let stem = Self::node_id(id);
                let stem = stem.trim_end_matches("-node");
                m.insert("cluster_id".into(), json!(format!("{stem}-cluster")));
                m.insert(
                    "license".into(),
                    json!({"status": license::UNCONFIGURED, "source": null, "path": null}),
                );
            }
        }
        m
    }

    fn render_config(&self, _ws: &WorkspaceManifest, _dir: &Path) -> Result<Option<String>> {
        Ok(None)
    }
    /// A rerun of a run on S3 measures the same store (endpoint, bucket, region, key
    /// variables); the new workspace's node id is its own, so are its objects.
    fn rerun_workspace_fields(&self, server_settings: Option<&Value>) -> Map<String, Value> {
        match server_settings.and_then(|v| v.get("object_storage")) {
            Some(v) if v.get("type").and_then(Value::as_str) == Some("s3") => {
                let mut v = v.clone();
                if let Some(o) = v.as_object_mut() {
                    // The node id decides it (see `object_store::of`).
                    o.remove("prefix");
                }
                [(object_store::FIELD.to_string(), v)].into_iter().collect()
            }
            _ => Map::new(),
        }
    }
}
