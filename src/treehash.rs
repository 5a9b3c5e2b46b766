//! The distribution hash of an extracted install tree (setup.md §0.5): a local tamper-detection
//! fingerprint over kinds, paths, permission bits and contents, skipping the top-level
//! `manifest.json`.

use std::path::Path;

use crate::error::Result;

/// Lowercase hex distribution hash of the tree at `root`. FIFOs, sockets and devices are an
/// integrity error.
pub fn tree_digest(_root: &Path) -> Result<String> {
    todo!("foundation: treehash")
}
