//! Manifests: typed serde structs written as pretty JSON with `schema_version` and `kind`
//! first, published atomically (temp file beside the target, fsync, rename, fsync the
//! directory). Reading rejects an unknown schema version, a wrong kind or invalid JSON as an
//! integrity error (exit 4) that names the file.

use std::path::Path;

use serde::{de::DeserializeOwned, Serialize};

use crate::error::Result;

/// A manifest type. The struct itself does not carry `schema_version` or `kind`: they are
/// added on write and checked on read.
pub trait Manifest: Serialize + DeserializeOwned {
    /// e.g. `greptimedb-installation`, `greptimedb-workspace`, `dataset`, `run`.
    const KIND: &'static str;
    /// Bumped when the shape changes incompatibly.
    const SCHEMA_VERSION: u32 = 1;
}

/// Writes `m` to `path` atomically.
pub fn write<M: Manifest>(_path: &Path, _m: &M) -> Result<()> {
    todo!("foundation: manifest")
}

/// Reads and checks a manifest. Missing file: a failure naming the path; invalid JSON, an
/// unknown schema version or another kind: integrity (exit 4).
pub fn read<M: Manifest>(_path: &Path) -> Result<M> {
    todo!("foundation: manifest")
}

/// Like [`read`], but a missing file is `Ok(None)`.
pub fn read_optional<M: Manifest>(_path: &Path) -> Result<Option<M>> {
    todo!("foundation: manifest")
}

/// UTC now as RFC 3339 with a `Z` suffix (`2026-11-29T18:37:22.880743Z`).
pub fn now_rfc3339() -> String {
    todo!("foundation: manifest")
}
