//! `runs list` and `runs show`: what runs exist, across products, read from their manifests
//! (list) or rebuilt from disk (show), and the loading of one run's summary for `compare`,
//! `report` and `rerun`.

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use crate::run::{RunKind, TargetMode};
use crate::summary::RunSummary;

use crate::error::Result;
use crate::output::Reporter;
use crate::paths::Root;
use crate::run::{self, RunDir, RunManifest};

/// One line of `runs list`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RunEntry {
    pub run_id: String,
    pub run_dir: PathBuf,
    pub kind: RunKind,
    pub phase: String,
    pub product: String,
    #[serde(rename = "edition")]
    pub variant: Option<String>,
    pub version: Option<String>,
    pub mode: TargetMode,
    pub database_id: Option<String>,
    /// The workspace id, or the external URLs joined by commas.
    pub target: Option<String>,
    pub database: String,
    pub dataset_id: Option<String>,
    pub data_state: Option<String>,
    pub status: String,
    pub created_at: String,
    pub finished_at: Option<String>,
    pub rerun_of: Option<String>,
}

/// A run directory whose manifest cannot be read: listed, never skipped silently.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct UnreadableEntry {
    pub run_id: String,
    pub run_dir: PathBuf,
    pub product: String,
    /// Always `unreadable`.
    pub status: String,
    pub error: String,
    /// Empty: sorts after every readable run.
    pub created_at: String,
}

/// One line of `runs list`: a run, or a directory that is not readable as one.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum ListEntry {
    Run(Box<RunEntry>),
    Unreadable(UnreadableEntry),
}

impl ListEntry {
    fn sort_key(&self) -> (&str, &str) {
        match self {
            ListEntry::Run(e) => (&e.created_at, &e.run_id),
            ListEntry::Unreadable(e) => (&e.created_at, &e.run_id),
        }
    }
}

/// The `runs list` line of a run.
pub fn entry(dir: &Path, m: &RunManifest) -> RunEntry {
    let target = &m.target;
    let database = target
        .database_id
        .clone()
        .or_else(|| target.urls.as_ref().map(|u| u.join(",")));
    RunEntry {
        run_id: m.run_id.clone(),
        run_dir: dir.to_path_buf(),
        kind: m.run_kind,
        phase: m.phase.clone(),
        product: m.product.clone(),
        variant: m.variant.clone(),
        version: target.version.clone(),
        mode: target.mode,
        database_id: target.database_id.clone(),
        target: database,
        database: target.database.clone(),
        dataset_id: m.dataset.as_ref().map(|d| d.dataset_id.clone()),
        data_state: m.data_state.as_ref().map(|d| {
            // A dead run not yet recorded as interrupted: labelled as it will be.
            let dead = m.status == crate::run::Status::Running && status_of(m) == "interrupted";
            dead.then(|| crate::run::read_events(dir).ok())
                .flatten()
                .and_then(|ev| {
                    crate::run::unfinished_change_label(
                        m.run_kind,
                        m.changes_data(),
                        crate::run::Status::Interrupted,
                        &crate::run::fold_steps(&ev),
                    )
                })
                .map(str::to_string)
                .unwrap_or_else(|| d.label.clone())
        }),
        status: status_of(m),
        created_at: m.created_at.clone(),
        finished_at: m.finished_at.clone(),
        rerun_of: m.rerun_of.clone(),
    }
}

/// The recorded status, except that a `running` run whose process is gone on this host is
/// shown as `interrupted` (the next `show`/`summarize` records it so).
fn status_of(m: &RunManifest) -> String {
    let recorded = m.status.as_str().to_string();
    if m.status == crate::run::Status::Running
        && m.owner.host == crate::lock::hostname()
        && !crate::fsutil::process_alive(m.owner.pid as i32)
    {
        return "interrupted".into();
    }
    recorded
}

/// Every run under the root, newest first. Unreadable manifests are listed as such, never
/// skipped silently.
pub fn list(root: &Root) -> Vec<ListEntry> {
    let mut out: Vec<ListEntry> = Vec::new();
    for product in crate::product::names() {
        let Ok(rd) = std::fs::read_dir(root.runs(product)) else {
            continue;
        };
        for e in rd.flatten() {
            let name = e.file_name().to_string_lossy().into_owned();
            let dir = e.path();
            if name.starts_with('.') || !dir.is_dir() {
                continue;
            }
            match crate::manifest::read::<RunManifest>(&dir.join("manifest.json")) {
                Ok(m) => out.push(ListEntry::Run(Box::new(entry(&dir, &m)))),
                Err(err) => out.push(ListEntry::Unreadable(UnreadableEntry {
                    run_id: name,
                    run_dir: dir,
                    product: product.to_string(),
                    status: "unreadable".into(),
                    error: err.message,
                    created_at: String::new(),
                })),
            }
        }
    }
    out.sort_by(|a, b| b.sort_key().cmp(&a.sort_key()));
    out
}

/// A human table of [`list`].
pub fn table(entries: &[ListEntry]) -> String {
    if entries.is_empty() {
        // Only products whose benchmarks can run are offered.
        let starts: Vec<String> = crate::product::all()
            .iter()
            .filter(|e| (e.make)(None).is_ok_and(|p| p.check_benchmarkable().is_ok()))
            .map(|e| format!("`tsbsctl bench {} all ...`", e.name))
            .collect();
        return format!("No runs yet. Start one with {}.\n", starts.join(" or "));
    }
    let mut rows: Vec<Vec<String>> = vec![vec![
        "RUN",
        "KIND",
        "PRODUCT",
        "VERSION",
        "TARGET",
        "DATASET",
        "DATA STATE",
        "STATUS",
        "CREATED",
    ]
    .into_iter()
    .map(String::from)
    .collect()];
    let s = |v: &Option<String>| v.clone().unwrap_or_else(|| "-".into());
    for e in entries {
        let row = match e {
            ListEntry::Run(e) => {
                let kind = format!("{}/{}", e.kind.as_str(), e.phase);
                let product = match &e.variant {
                    Some(ed) => format!("{} {ed}", e.product),
                    None => e.product.clone(),
                };
                vec![
                    e.run_id.clone(),
                    kind,
                    product,
                    s(&e.version),
                    s(&e.target),
                    s(&e.dataset_id),
                    s(&e.data_state),
                    // `completed_with_failures` in words (the JSON keeps the name).
                    e.status.replace('_', " "),
                    e.created_at.clone(),
                ]
            }
            ListEntry::Unreadable(e) => vec![
                e.run_id.clone(),
                "-".into(),
                e.product.clone(),
                "-".into(),
                "-".into(),
                "-".into(),
                "-".into(),
                e.status.clone(),
                e.created_at.clone(),
            ],
        };
        rows.push(row);
    }
    aligned(&rows)
}

/// Left-aligned columns separated by two spaces.
pub fn aligned(rows: &[Vec<String>]) -> String {
    let cols = rows.iter().map(Vec::len).max().unwrap_or(0);
    let widths: Vec<usize> = (0..cols)
        .map(|c| {
            rows.iter()
                .map(|r| r.get(c).map(|s| s.chars().count()).unwrap_or(0))
                .max()
                .unwrap_or(0)
        })
        .collect();
    let mut out = String::new();
    for r in rows {
        let mut line = String::new();
        for (c, cell) in r.iter().enumerate() {
            if c + 1 == r.len() {
                line.push_str(cell);
            } else {
                line.push_str(&format!("{cell:<w$}  ", w = widths[c]));
            }
        }
        out.push_str(line.trim_end());
        out.push('\n');
    }
    out
}

/// A run resolved, opened (a dead owner's run is marked interrupted), and summarised from disk.
pub struct RecordedRun {
    pub dir: PathBuf,
    pub manifest: RunManifest,
    pub summary: RunSummary,
    /// SHA-256 of `manifest.json` as it is now.
    pub manifest_sha256: String,
}

impl RecordedRun {
    /// What identifies this run in comparisons and reports.
    pub fn identity(&self) -> crate::summary::RunIdentity {
        self.summary
            .identity(&self.manifest.run_id, &self.dir, &self.manifest_sha256)
    }
}

/// Resolves `RUN` (path or id) and builds its summary.
pub fn load(root: &Root, run: &str, reporter: &dyn Reporter) -> Result<RecordedRun> {
    let dir = run::resolve(root, run)?;
    let r = RunDir::open(&dir, reporter)?;
    let summary = crate::summary::build(&r)?;
    let path = dir.join("manifest.json");
    let bytes = fs_err::read(&path)?;
    Ok(RecordedRun {
        dir: r.dir.clone(),
        manifest: r.manifest.clone(),
        summary,
        manifest_sha256: crate::hash::sha256_hex(&bytes),
    })
}
