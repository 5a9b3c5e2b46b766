//! Safe extraction of `.tar.gz` and `.tar.xz` archives into a staging directory beside the
//! target, published with one rename. Absolute paths, `..`, links pointing outside the tree,
//! hard links to outside, devices and FIFOs are refused (integrity, exit 4). Executable bits
//! are kept.

use std::path::{Path, PathBuf};

use crate::error::Result;

/// What the caller requires of the archive's shape.
#[derive(Debug, Clone, Default)]
pub struct ExtractOptions {
    /// Every entry must live under this single top directory (e.g. `go`,
    /// `greptime-linux-amd64-v1.2.0`). `None`: any layout.
    pub top_dir: Option<String>,
    /// Refuse symbolic links altogether (the Go archive has none).
    pub forbid_symlinks: bool,
}

/// An extracted tree in a staging directory beside its target. Dropping it without
/// [`Staged::publish`] removes the staging directory.
#[derive(Debug)]
pub struct Staged {
    _private: (),
}

impl Staged {
    /// The staging directory (the extracted archive's root: the contents of the top directory
    /// when `top_dir` was given).
    pub fn path(&self) -> &Path {
        todo!("foundation: archive")
    }

    /// Renames the staged tree to `target` (which must not exist) and fsyncs the parent.
    pub fn publish(self, _target: &Path) -> Result<PathBuf> {
        todo!("foundation: archive")
    }
}

/// Extracts `archive` (gzip or xz, detected from the bytes) into a staging directory beside
/// `target`.
pub fn extract_staged(_archive: &Path, _target: &Path, _opts: &ExtractOptions) -> Result<Staged> {
    todo!("foundation: archive")
}
