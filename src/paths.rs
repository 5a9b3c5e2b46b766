//! The state root and the layout under it (DESIGN.md, State root). Every path the tool writes
//! is derived here, so the layout lives in one place.

use std::path::{Path, PathBuf};

use crate::error::{Error, Result};

/// Environment variable that overrides the default state root.
pub const ROOT_ENV: &str = "TSBSCTL_ROOT";
/// Environment variable that overrides where datasets live.
pub const DATASET_ROOT_ENV: &str = "TSBS_DATASET_ROOT";

/// The resolved state root. Resolution never creates anything; writers call [`Root::ensure`].
#[derive(Debug, Clone)]
pub struct Root {
    path: PathBuf,
    dataset_root: Option<PathBuf>,
}

impl Root {
    /// `--root` > `TSBSCTL_ROOT` > `./workspaces`. The result is absolute. A root that exists
    /// but is not a directory, or an empty value, is invalid input (exit 2).
    pub fn resolve(flag: Option<&Path>) -> Result<Root> {
        let (raw, origin) = match flag {
            Some(p) => (p.to_path_buf(), "--root"),
            None => match std::env::var_os(ROOT_ENV) {
                Some(v) => (PathBuf::from(v), ROOT_ENV),
                None => (PathBuf::from("workspaces"), "the default root"),
            },
        };
        let path = absolute_dir(&raw, origin)?;
        Ok(Root {
            path,
            dataset_root: None,
        })
    }

    /// Uses a root directly (tests and library callers).
    pub fn at(path: impl Into<PathBuf>) -> Root {
        Root {
            path: path.into(),
            dataset_root: None,
        }
    }

    /// `--dataset-root` > `TSBS_DATASET_ROOT` > `<root>/datasets`.
    pub fn with_dataset_root(mut self, flag: Option<&Path>) -> Result<Root> {
        let chosen = match flag {
            Some(p) => Some((p.to_path_buf(), "--dataset-root")),
            None => {
                std::env::var_os(DATASET_ROOT_ENV).map(|v| (PathBuf::from(v), DATASET_ROOT_ENV))
            }
        };
        if let Some((raw, origin)) = chosen {
            self.dataset_root = Some(absolute_dir(&raw, origin)?);
        }
        Ok(self)
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Creates the root directory if needed (only commands that write call this).
    pub fn ensure(&self) -> Result<()> {
        std::fs::create_dir_all(&self.path)
            .map_err(|e| Error::io("create the state root", &self.path, e))
    }

    pub fn config_file(&self) -> PathBuf {
        self.path.join("config.toml")
    }
    pub fn downloads(&self) -> PathBuf {
        self.path.join("downloads")
    }
    /// `environment/go/<version>/<platform>` (this directory is GOROOT).
    pub fn go_dir(&self, version: &str, platform: &str) -> PathBuf {
        self.path
            .join("environment")
            .join("go")
            .join(version)
            .join(platform)
    }
    /// `environment/tsbs/<commit>`.
    pub fn tsbs_dir(&self, commit: &str) -> PathBuf {
        self.path.join("environment").join("tsbs").join(commit)
    }
    pub fn datasets(&self) -> PathBuf {
        self.dataset_root
            .clone()
            .unwrap_or_else(|| self.path.join("datasets"))
    }
    pub fn queries(&self) -> PathBuf {
        self.path.join("queries")
    }
    /// `<product>/` where product is `greptimedb` or `influxdb3`.
    pub fn product(&self, product: &str) -> PathBuf {
        self.path.join(product)
    }
    pub fn installations(&self, product: &str) -> PathBuf {
        self.product(product).join("installations")
    }
    pub fn databases(&self, product: &str) -> PathBuf {
        self.product(product).join("databases")
    }
    pub fn database(&self, product: &str, id: &str) -> PathBuf {
        self.databases(product).join(id)
    }
    pub fn runs(&self, product: &str) -> PathBuf {
        self.product(product).join("runs")
    }
    pub fn comparisons(&self) -> PathBuf {
        self.path.join("comparisons")
    }
    pub fn reports(&self) -> PathBuf {
        self.path.join("reports")
    }
}

fn absolute_dir(raw: &Path, origin: &str) -> Result<PathBuf> {
    if raw.as_os_str().is_empty() {
        return Err(Error::invalid(format!("{origin} is empty"))
            .with_hint("give a directory path, or unset it to use ./workspaces"));
    }
    let expanded = expand_tilde(raw);
    let abs = if expanded.is_absolute() {
        expanded
    } else {
        std::env::current_dir()
            .map_err(|e| Error::failed(format!("could not read the current directory: {e}")))?
            .join(expanded)
    };
    let abs = normalize(&abs);
    match std::fs::metadata(&abs) {
        Ok(m) if !m.is_dir() => Err(Error::invalid(format!(
            "{origin} {} exists and is not a directory",
            abs.display()
        ))
        .with_hint("point it at a directory (it is created when first needed)")),
        _ => {
            // A root whose nearest existing ancestor is a file can never be created.
            let mut anc = abs.parent();
            while let Some(a) = anc {
                if let Ok(m) = std::fs::metadata(a) {
                    if !m.is_dir() {
                        return Err(Error::invalid(format!(
                            "{origin} {} is inside {}, which is not a directory",
                            abs.display(),
                            a.display()
                        ))
                        .with_hint("choose a path under a directory"));
                    }
                    break;
                }
                anc = a.parent();
            }
            Ok(abs)
        }
    }
}

/// `~/x` -> `$HOME/x`; anything else unchanged.
pub(crate) fn expand_tilde(p: &Path) -> PathBuf {
    if let Ok(rest) = p.strip_prefix("~") {
        if let Some(home) = std::env::var_os("HOME") {
            return PathBuf::from(home).join(rest);
        }
    }
    p.to_path_buf()
}

/// Removes `.` and resolves `..` lexically, so recorded paths are clean.
pub(crate) fn normalize(p: &Path) -> PathBuf {
    use std::path::Component;
    let mut out = PathBuf::new();
    for c in p.components() {
        match c {
            Component::CurDir => {}
            Component::ParentDir => {
                out.pop();
            }
            other => out.push(other.as_os_str()),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn root_that_is_a_file_is_invalid_input() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("f");
        std::fs::write(&file, "x").unwrap();
        let err = Root::resolve(Some(&file)).unwrap_err();
        assert_eq!(err.exit_code(), 2);
        let err = Root::resolve(Some(&file.join("sub"))).unwrap_err();
        assert_eq!(err.exit_code(), 2);
    }

    #[test]
    fn relative_roots_become_absolute_and_clean() {
        let root = Root::resolve(Some(Path::new("a/./b/../c"))).unwrap();
        assert!(root.path().is_absolute());
        assert!(root.path().ends_with("a/c"));
    }
}
