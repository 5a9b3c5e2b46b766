//! `manifest.json` of a workspace (`workspace::manifest`), its dataset binding and its data state, and the
//! transitions the benchmarks make on them. A leaf module (serde, std, `manifest`): products
//! read a workspace manifest without depending on the workspace operations.

use std::collections::BTreeMap;
use std::path::PathBuf;

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use crate::manifest::Manifest;

/// `manifest.json` of a workspace.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct WorkspaceManifest {
    pub database_id: String,
    /// `greptimedb`, `influxdb3`.
    pub product: String,
    /// The product's variant (an edition, a mode), recorded as `edition`.
    #[serde(default, rename = "edition", skip_serializing_if = "Option::is_none")]
    pub variant: Option<String>,
    pub version: String,
    /// How the version was chosen (`explicit`, `github-latest-stable`, `newest-installed`, ...).
    pub version_source: String,
    pub platform: String,
    /// The installation directory at prepare time (informative; the store path is derived
    /// from product, version and platform).
    pub installation_path: PathBuf,
    pub binary_sha256: String,
    /// The SQL database the benchmarks use.
    pub database: String,
    /// Every listener of the server: name -> port on 127.0.0.1 (`http` always present).
    pub ports: BTreeMap<String, u16>,
    /// SHA-256 of the rendered config file, when the product has one.
    pub config_sha256: Option<String>,
    /// The loaded dataset (`null` until a load); set by the benchmarks.
    pub binding: Option<Binding>,
    /// Loads and maintenance (flush, compaction) history; appended by the benchmarks.
    #[serde(default)]
    pub data_state: DataState,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub copied_from: Option<Provenance>,
    /// When `prepare` found the workspace's object-store prefix empty (a workspace on object
    /// storage; `None` for one prepared before tsbsctl checked it): everything under the prefix
    /// is then the workspace's own, which `remove` deletes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub object_store_claimed_at: Option<String>,
    pub created_at: String,
    pub updated_at: String,
    pub tool_version: String,
    /// Product-specific fields (e.g. a node id, a cluster id, what an operation recorded).
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

impl Manifest for WorkspaceManifest {
    const KIND: &'static str = "database-workspace";
}

/// The dataset a workspace holds, recorded after a verified load.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Binding {
    pub dataset_id: String,
    /// The dataset's canonical spec (see `dataset::Spec`).
    pub spec: Value,
    pub format: String,
    pub compression: String,
    pub rows: u64,
    pub metrics: u64,
    /// Size and SHA-256 of the stored (maybe compressed) file.
    pub bytes: u64,
    pub sha256: String,
    /// SHA-256 of the line protocol itself: what identifies the loaded content.
    pub uncompressed_sha256: String,
    /// Set when the binding is recorded (absent in a binding a load would record).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub loaded_at: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub run_id: Option<String>,
    /// Fields a later version may add.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

impl Binding {
    /// The same dataset with the same content.
    pub fn same_data(&self, other: &Binding) -> bool {
        self.dataset_id == other.dataset_id && self.uncompressed_sha256 == other.uncompressed_sha256
    }
}

/// What was done to the data of a workspace.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct DataState {
    #[serde(default)]
    pub loads: Vec<LoadRecord>,
    #[serde(default)]
    pub maintenance: Vec<MaintenanceRecord>,
}

/// One verified load.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct LoadRecord {
    pub at: String,
    pub run_id: String,
    pub run_dir: PathBuf,
    pub dataset_id: String,
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

/// The state of a maintenance operation. `Started` is the intent, written before anything is
/// done, so a process that dies mid-way leaves the data state unknown, never "as loaded".
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum MaintenanceStatus {
    Started,
    Completed,
    Interrupted,
    Failed,
}

/// One maintenance operation of the product (its `operation`: what the product calls it) on
/// the loaded data.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct MaintenanceRecord {
    /// What the product calls it ([`MaintenanceWords::operation`]).
    pub operation: String,
    pub status: MaintenanceStatus,
    pub at: String,
    pub run_id: String,
    pub run_dir: PathBuf,
    pub table: String,
    /// Operation-specific fields (statements, strategy, SST counts, outcome ...).
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

/// How a product's maintenance records of one `operation` change the data-state label: the
/// product declares them (`crate::product::ext::BenchExt::maintenance`), the label applies
/// them. A record no declaration names leaves the label as it was.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct MaintenanceWords {
    /// The records' `operation`.
    pub operation: &'static str,
    /// The label once one completed.
    pub completed: &'static str,
    /// It rewrites the data: a completed one labels the data whatever it was, one that never
    /// recorded its outcome (its process died: the intent is written first) or was
    /// interrupted leaves the state unknown, as does one that failed. `false`: a completed
    /// one labels only data as loaded, and an unfinished one changes nothing.
    pub rewrites: bool,
}

impl DataState {
    /// The data state in words, by the product's maintenance `words`: "not loaded", "as
    /// loaded", or what its last maintenance made of it (a completed one's own label;
    /// "maintenance interrupted: state unknown" when one that rewrites the data never recorded
    /// its outcome or was interrupted, "maintenance failed: state unknown" when it failed
    /// after it had started). The last one decides; maintenance is reset by a new load.
    pub fn label(&self, words: &[MaintenanceWords]) -> String {
        let mut label = if self.loads.is_empty() {
            "not loaded"
        } else {
            "as loaded"
        };
        for m in &self.maintenance {
            let Some(w) = words.iter().find(|w| w.operation == m.operation) else {
                continue;
            };
            match (w.rewrites, m.status) {
                (true, MaintenanceStatus::Completed) => label = w.completed,
                (true, MaintenanceStatus::Started | MaintenanceStatus::Interrupted) => {
                    label = "maintenance interrupted: state unknown"
                }
                (true, MaintenanceStatus::Failed) => label = "maintenance failed: state unknown",
                (false, MaintenanceStatus::Completed) if label == "as loaded" => {
                    label = w.completed
                }
                _ => {}
            }
        }
        label.into()
    }

    /// Whether a data state label says the data may be anything (interrupted or failed
    /// maintenance, see [`DataState::label`]).
    pub fn label_unknown(label: &Value) -> bool {
        label.as_str().is_some_and(|l| l.contains("unknown"))
    }
}

/// Where a copied workspace came from.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Provenance {
    pub database_id: String,
    pub database_path: PathBuf,
    pub version: String,
    pub binary_sha256: String,
    /// SHA-256 of the source `manifest.json` at copy time.
    pub manifest_sha256: String,
    pub copied_at: String,
    /// Always `full` (an independent byte copy).
    pub method: String,
    pub files: u64,
    pub bytes: u64,
    /// `DataDigest` content digest of `data/`, equal in source and copy.
    pub content_sha256: String,
}

impl WorkspaceManifest {
    /// The workspace holds exactly this data (same dataset, same content).
    pub fn bound_to(&self, binding: &Binding) -> bool {
        self.binding.as_ref().is_some_and(|b| b.same_data(binding))
    }

    /// Forgets the binding and the data state (before a reset drops the database). Returns
    /// whether anything changed (the manifest then needs saving).
    pub fn clear_binding(&mut self) -> bool {
        if self.binding.is_none() && self.data_state.loads.is_empty() {
            return false;
        }
        self.binding = None;
        self.data_state = DataState::default();
        true
    }

    /// Records a verified load by run `run_id` (in `run_dir`) at `now`.
    pub fn set_binding(&mut self, mut binding: Binding, run_id: &str, run_dir: PathBuf, now: &str) {
        binding.loaded_at = Some(now.to_string());
        binding.run_id = Some(run_id.to_string());
        // A new load replaces whatever maintenance applied to earlier data.
        if self.binding.is_none() {
            self.data_state = DataState::default();
        }
        self.data_state.loads.push(LoadRecord {
            at: now.to_string(),
            run_id: run_id.to_string(),
            run_dir,
            dataset_id: binding.dataset_id.clone(),
            extra: Map::new(),
        });
        self.binding = Some(binding);
    }

    /// Appends a maintenance record.
    pub fn push_maintenance(&mut self, rec: MaintenanceRecord) {
        self.data_state.maintenance.push(rec);
    }

    /// Replaces the last maintenance record (the intent a compaction recorded) by its outcome.
    pub fn update_last_maintenance(&mut self, rec: MaintenanceRecord) {
        match self.data_state.maintenance.last_mut() {
            Some(last) => *last = rec,
            None => self.data_state.maintenance.push(rec),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Workspace manifests written by the previous version.
    const FIXTURES: &[(&str, &str)] = &[
        (
            "workspace-greptimedb-compacted.json",
            include_str!("../tests/fixtures/run-data-v1/workspace-greptimedb-compacted.json"),
        ),
        (
            "workspace-greptimedb-unloaded.json",
            include_str!("../tests/fixtures/run-data-v1/workspace-greptimedb-unloaded.json"),
        ),
        (
            "workspace-influxdb3-core-loaded.json",
            include_str!("../tests/fixtures/run-data-v1/workspace-influxdb3-core-loaded.json"),
        ),
    ];

    /// GreptimeDB's maintenance words (its compaction and its flush before the queries).
    fn words() -> &'static [MaintenanceWords] {
        crate::product::ext::maintenance_words("greptimedb")
    }

    fn read(n: &str) -> WorkspaceManifest {
        let (_, t) = FIXTURES.iter().find(|(f, _)| f.contains(n)).unwrap();
        serde_json::from_str(t).unwrap()
    }

    #[test]
    fn workspace_manifests_of_the_previous_version_round_trip_byte_for_byte() {
        for (name, text) in FIXTURES {
            let m: WorkspaceManifest =
                serde_json::from_str(text).unwrap_or_else(|e| panic!("{name}: {e}"));
            assert_eq!(crate::manifest::to_text(&m).unwrap(), *text, "{name}");
        }
    }

    #[test]
    fn data_state_labels_follow_the_last_maintenance() {
        assert_eq!(
            read("greptimedb-compacted").data_state.label(words()),
            "after manual compaction"
        );
        assert_eq!(
            read("greptimedb-unloaded").data_state.label(words()),
            "not loaded"
        );
        let mut m = read("influxdb3-core-loaded");
        assert_eq!(m.data_state.label(words()), "as loaded");
        let rec = |op: &str, status| MaintenanceRecord {
            operation: op.into(),
            status,
            at: "t".into(),
            run_id: "r".into(),
            run_dir: "/r".into(),
            table: "cpu".into(),
            extra: Map::new(),
        };
        m.push_maintenance(rec("flush", MaintenanceStatus::Completed));
        assert_eq!(m.data_state.label(words()), "as loaded, flushed");
        m.push_maintenance(rec("compaction", MaintenanceStatus::Started));
        assert_eq!(
            m.data_state.label(words()),
            "maintenance interrupted: state unknown"
        );
        assert!(DataState::label_unknown(
            &m.data_state.label(words()).into()
        ));
        m.update_last_maintenance(rec("compaction", MaintenanceStatus::Failed));
        assert_eq!(
            m.data_state.label(words()),
            "maintenance failed: state unknown"
        );
        assert!(DataState::label_unknown(
            &m.data_state.label(words()).into()
        ));
        assert!(!DataState::label_unknown(&"as loaded".into()));
        m.update_last_maintenance(rec("compaction", MaintenanceStatus::Completed));
        assert_eq!(m.data_state.label(words()), "after manual compaction");
    }

    #[test]
    fn binding_transitions() {
        let mut m = read("greptimedb-compacted");
        let b = m.binding.clone().unwrap();
        assert!(m.bound_to(&b));
        let mut other = b.clone();
        other.uncompressed_sha256 = "0".repeat(64);
        assert!(!m.bound_to(&other));
        // A load on top of bound data keeps the history; after a reset it starts afresh.
        let loads = m.data_state.loads.len();
        m.set_binding(b.clone(), "r2", "/runs/r2".into(), "t2");
        assert_eq!(m.data_state.loads.len(), loads + 1);
        assert!(!m.data_state.maintenance.is_empty());
        assert_eq!(m.binding.as_ref().unwrap().run_id.as_deref(), Some("r2"));
        assert!(m.clear_binding());
        assert!(!m.clear_binding(), "nothing left to clear");
        m.set_binding(b, "r3", "/runs/r3".into(), "t3");
        assert_eq!(m.data_state.loads.len(), 1);
        assert!(m.data_state.maintenance.is_empty());
        assert_eq!(m.data_state.label(words()), "as loaded");
    }
}
