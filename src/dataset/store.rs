//! The logical dataset store: `<dataset-root>/<id>/dataset.json`, resolving a dataset from an
//! id and the spec flags (no writes), storing it under the dataset lock, opening and listing.

use std::io;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};
use serde_json::{json, Value};

use crate::error::{Error, Result};
use crate::lock::{self, LockOptions};
use crate::manifest::{self, Manifest};
use crate::output::Reporter;
use crate::paths::Root;

use super::spec::{DatasetSpec, Profile, SpecOverrides};
use super::GENERATION_WAIT;

/// `dataset.json`.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct DatasetManifest {
    pub dataset_id: String,
    pub created_at: String,
    pub spec: DatasetSpec,
    /// The tsbsctl version that created it.
    #[serde(default)]
    pub created_by: String,
}

impl Manifest for DatasetManifest {
    const KIND: &'static str = "dataset";
}

/// A resolved logical dataset.
#[derive(Debug, Clone)]
pub struct Dataset {
    pub id: String,
    pub dir: PathBuf,
    pub spec: DatasetSpec,
    /// `dataset.json` existed when this was resolved.
    pub stored: bool,
    /// From `dataset.json` when stored.
    pub created_at: Option<String>,
}

impl Dataset {
    /// Resolves the dataset a command asks for, without writing anything.
    ///
    /// With `id` naming an existing dataset, its stored spec is the base (unless `--profile`
    /// is given) and any explicit flag that disagrees with it is invalid input naming the
    /// difference. Otherwise the spec is the profile (default manual) plus the flags, and the
    /// id is `id` or the automatic id.
    pub fn resolve(root: &Root, id: Option<&str>, o: &SpecOverrides) -> Result<Dataset> {
        if let Some(id) = id {
            crate::ids::validate_id("--dataset-id", id)?;
            let dir = root.datasets().join(id);
            if let Some(stored) = read_dataset_json(&dir)? {
                let base = match o.profile {
                    Some(p) => p.spec(),
                    None => stored.spec.clone(),
                };
                let requested = o.apply(base)?;
                // Spelling differences are no conflict: compare what the data will be.
                if requested.canonical() != stored.spec.canonical() {
                    let diff = stored.spec.differences(&requested).join("; ");
                    return Err(Error::invalid(format!(
                        "dataset {id} was created with other settings ({diff})"
                    ))
                    .with_hint(format!(
                        "drop the conflicting flags to use dataset {id} as stored, or choose another --dataset-id"
                    )));
                }
                return Ok(Dataset {
                    id: id.to_string(),
                    dir,
                    spec: stored.spec,
                    stored: true,
                    created_at: Some(stored.created_at),
                });
            }
            let spec = o.apply(o.profile.unwrap_or(Profile::Manual).spec())?;
            spec.validate()?;
            let spec = spec.canonical();
            return Ok(Dataset {
                id: id.to_string(),
                dir,
                spec,
                stored: false,
                created_at: None,
            });
        }
        let spec = o.apply(o.profile.unwrap_or(Profile::Manual).spec())?;
        spec.validate()?;
        let spec = spec.canonical();
        let id = spec.auto_id();
        let dir = root.datasets().join(&id);
        let stored = read_dataset_json(&dir)?;
        if let Some(s) = &stored {
            if s.spec != spec || s.dataset_id != id {
                return Err(Error::integrity(format!(
                    "{} does not hold the spec its id was derived from",
                    dir.join("dataset.json").display()
                ))
                .with_hint("move the directory aside; the next command recreates it"));
            }
        }
        Ok(Dataset {
            id,
            dir,
            spec,
            stored: stored.is_some(),
            created_at: stored.map(|s| s.created_at),
        })
    }

    /// An existing dataset by id (inspect, verify). Missing: invalid input.
    pub fn open(root: &Root, id: &str) -> Result<Dataset> {
        crate::ids::validate_id("--dataset-id", id)?;
        let dir = root.datasets().join(id);
        match read_dataset_json(&dir)? {
            Some(m) => Ok(Dataset {
                id: id.to_string(),
                dir,
                spec: m.spec,
                stored: true,
                created_at: Some(m.created_at),
            }),
            None => Err(Error::invalid(format!(
                "dataset {id} does not exist under {}",
                root.datasets().display()
            ))
            .with_hint("list datasets with `tsbsctl data list`, or check --dataset-root")),
        }
    }

    /// Resolves and, when new, writes `dataset.json`. Returns the dataset (now stored) and
    /// whether it existed before.
    pub fn prepare(
        root: &Root,
        id: Option<&str>,
        o: &SpecOverrides,
        command: &str,
        reporter: &dyn Reporter,
    ) -> Result<(Dataset, bool)> {
        Self::resolve(root, id, o)?.ensure_stored(command, reporter)
    }

    /// Writes `dataset.json` when it is missing, under the dataset lock so two processes
    /// cannot store different specs under one id. Returns the stored dataset and whether it
    /// existed before.
    pub fn ensure_stored(&self, command: &str, reporter: &dyn Reporter) -> Result<(Dataset, bool)> {
        if self.stored {
            return Ok((self.clone(), true));
        }
        let _guard = lock::lock_dir(
            &self.dir,
            &format!("dataset {}", self.id),
            command,
            Some("creating dataset.json"),
            &LockOptions {
                wait: Some(GENERATION_WAIT),
                hold_token: None,
            },
            reporter,
        )?;
        // Someone may have created it while we waited: honour theirs if it agrees.
        if let Some(theirs) = read_dataset_json(&self.dir)? {
            if theirs.spec.canonical() != self.spec.canonical() {
                let diff = theirs.spec.differences(&self.spec).join("; ");
                return Err(Error::invalid(format!(
                    "dataset {} was just created by another command with other settings ({diff})",
                    self.id
                ))
                .with_hint(
                    "run the command again to use it as stored, or choose another --dataset-id",
                ));
            }
            let mut ds = self.clone();
            ds.stored = true;
            ds.created_at = Some(theirs.created_at);
            return Ok((ds, true));
        }
        let m = DatasetManifest {
            dataset_id: self.id.clone(),
            created_at: manifest::now_rfc3339(),
            spec: self.spec.clone(),
            created_by: format!("tsbsctl {}", crate::VERSION),
        };
        manifest::write(&self.dir.join("dataset.json"), &m)?;
        let mut ds = self.clone();
        ds.stored = true;
        ds.created_at = Some(m.created_at);
        Ok((ds, false))
    }

    pub fn formats_dir(&self) -> PathBuf {
        self.dir.join("formats")
    }

    pub fn format_dir(&self, format: &str) -> PathBuf {
        self.formats_dir().join(format)
    }

    /// The format names that have a directory (sorted).
    pub fn format_names(&self) -> Result<Vec<String>> {
        let dir = self.formats_dir();
        let mut names = Vec::new();
        match fs_err::read_dir(&dir) {
            Ok(rd) => {
                for e in rd.flatten() {
                    if e.file_type().map(|t| t.is_dir()).unwrap_or(false) {
                        let n = e.file_name().to_string_lossy().into_owned();
                        if !n.starts_with('.') {
                            names.push(n);
                        }
                    }
                }
            }
            Err(e) if e.kind() == io::ErrorKind::NotFound => {}
            Err(e) => return Err(e.into()),
        }
        names.sort();
        Ok(names)
    }

    /// The JSON shape of a logical dataset in command results.
    pub fn to_json(&self) -> Value {
        json!({
            "dataset_id": self.id,
            "dataset_path": self.dir,
            "spec": self.spec.to_value(),
            "created_at": self.created_at,
        })
    }
}

fn read_dataset_json(dir: &Path) -> Result<Option<DatasetManifest>> {
    let path = dir.join("dataset.json");
    let m: Option<DatasetManifest> = manifest::read_optional(&path)?;
    if let Some(m) = &m {
        let expected = dir.file_name().map(|n| n.to_string_lossy().into_owned());
        if expected.as_deref() != Some(m.dataset_id.as_str()) {
            return Err(Error::integrity(format!(
                "{} records dataset id {:?}, not the directory name",
                path.display(),
                m.dataset_id
            ))
            .with_hint("restore the directory name, or remove the directory"));
        }
    }
    Ok(m)
}

/// Every valid dataset under the dataset root, sorted by id (invalid ones are skipped and
/// returned as warnings).
pub fn list(root: &Root) -> Result<(Vec<Dataset>, Vec<String>)> {
    let dir = root.datasets();
    let mut out = Vec::new();
    let mut warnings = Vec::new();
    let rd = match fs_err::read_dir(&dir) {
        Ok(rd) => rd,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok((out, warnings)),
        Err(e) => return Err(e.into()),
    };
    let mut names: Vec<String> = rd
        .flatten()
        .filter(|e| e.file_type().map(|t| t.is_dir()).unwrap_or(false))
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|n| !n.starts_with('.'))
        .collect();
    names.sort();
    for n in names {
        let d = dir.join(&n);
        match read_dataset_json(&d) {
            Ok(Some(m)) => out.push(Dataset {
                id: n,
                dir: d,
                spec: m.spec,
                stored: true,
                created_at: Some(m.created_at),
            }),
            Ok(None) => {}
            Err(e) => warnings.push(format!("skipping {}: {}", d.display(), e.message)),
        }
    }
    Ok((out, warnings))
}
