//! `runs list` and `runs show`: what runs exist, across products, read from their manifests
//! (list) or rebuilt from disk (show), and the loading of one run's summary for `compare`,
//! `report` and `rerun`.

use std::path::{Path, PathBuf};

use serde_json::{json, Value};

use crate::error::{Error, Result};
use crate::output::Reporter;
use crate::paths::Root;
use crate::run::{self, RunDir, RunManifest};

/// One line of `runs list`.
pub fn entry(dir: &Path, m: &RunManifest) -> Value {
    let target = &m.target;
    let database = target["database_id"]
        .as_str()
        .map(str::to_string)
        .or_else(|| {
            target["urls"].as_array().map(|u| {
                u.iter()
                    .filter_map(Value::as_str)
                    .collect::<Vec<_>>()
                    .join(",")
            })
        });
    json!({
        "run_id": m.run_id,
        "run_dir": dir,
        "kind": m.run_kind,
        "phase": m.phase,
        "product": m.product,
        "edition": m.edition,
        "version": target["version"],
        "mode": target["mode"],
        "database_id": target["database_id"],
        "target": database,
        "database": target["database"],
        "dataset_id": m.dataset.as_ref().map(|d| d["dataset_id"].clone()),
        "data_state": m.data_state.as_ref().map(|d| d["label"].clone()),
        "status": status_of(m),
        "created_at": m.created_at,
        "finished_at": m.finished_at,
        "rerun_of": m.rerun_of,
    })
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
pub fn list(root: &Root) -> Vec<Value> {
    let mut out: Vec<Value> = Vec::new();
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
                Ok(m) => out.push(entry(&dir, &m)),
                Err(err) => out.push(json!({
                    "run_id": name,
                    "run_dir": dir,
                    "product": product,
                    "status": "unreadable",
                    "error": err.message,
                    "created_at": "",
                })),
            }
        }
    }
    out.sort_by(|a, b| {
        let key = |v: &Value| {
            (
                v["created_at"].as_str().unwrap_or("").to_string(),
                v["run_id"].as_str().unwrap_or("").to_string(),
            )
        };
        key(b).cmp(&key(a))
    });
    out
}

/// A human table of [`list`].
pub fn table(entries: &[Value]) -> String {
    if entries.is_empty() {
        let starts: Vec<String> = crate::product::names()
            .iter()
            .map(|n| format!("`tsbsctl bench {n} all ...`"))
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
    let s = |v: &Value| match v {
        Value::String(s) => s.clone(),
        Value::Null => "-".into(),
        v => v.to_string(),
    };
    for e in entries {
        let kind = match (e["kind"].as_str(), e["phase"].as_str()) {
            (Some(k), Some(p)) => format!("{k}/{p}"),
            (Some(k), None) => k.to_string(),
            _ => "-".into(),
        };
        let product = match e["edition"].as_str() {
            Some(ed) => format!("{} {ed}", s(&e["product"])),
            None => s(&e["product"]),
        };
        rows.push(vec![
            s(&e["run_id"]),
            kind,
            product,
            s(&e["version"]),
            s(&e["target"]),
            s(&e["dataset_id"]),
            s(&e["data_state"]),
            s(&e["status"]),
            s(&e["created_at"]),
        ]);
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
pub struct Loaded {
    pub dir: PathBuf,
    pub manifest: RunManifest,
    pub summary: Value,
    /// SHA-256 of `manifest.json` as it is now.
    pub manifest_sha256: String,
}

/// Resolves `RUN` (path or id) and builds its summary.
pub fn load(root: &Root, run: &str, reporter: &dyn Reporter) -> Result<Loaded> {
    let dir = run::resolve(root, run)?;
    let r = RunDir::open(&dir, reporter)?;
    let summary = crate::summary::build(&r)?;
    let path = dir.join("manifest.json");
    let bytes = std::fs::read(&path).map_err(|e| Error::io("read", &path, e))?;
    Ok(Loaded {
        dir: r.dir.clone(),
        manifest: r.manifest.clone(),
        summary,
        manifest_sha256: crate::hash::sha256_hex(&bytes),
    })
}
