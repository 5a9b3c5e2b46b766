//! The Go toolchain and the TSBS build (`tsbsctl env ...`).

use std::collections::BTreeMap;
use std::path::PathBuf;

use crate::error::Result;
use crate::paths::Root;

/// One built TSBS tool.
#[derive(Debug, Clone)]
pub struct BuiltBinary {
    pub path: PathBuf,
    pub sha256: String,
}

/// A prepared TSBS environment, as later phases (data generation, benchmarks) consume it.
#[derive(Debug, Clone)]
pub struct TsbsEnv {
    pub repo: String,
    pub commit: String,
    /// True when built from a dirty `--tsbs-dir` checkout.
    pub dirty: bool,
    /// `go version` of the toolchain that built the binaries, e.g. `go1.21.13`.
    pub go_version: String,
    /// Keyed by tool name (`tsbs_generate_data`, ...).
    pub binaries: BTreeMap<String, BuiltBinary>,
}

impl TsbsEnv {
    /// Loads the environment recorded by the last successful `env prepare` (or `commit`), from
    /// manifests only: no network, no hashing. Missing: a failure whose hint is
    /// `tsbsctl env prepare`.
    pub fn load(_root: &Root, _commit: Option<&str>) -> Result<TsbsEnv> {
        todo!("environment issue")
    }

    /// The built tool `name`, or a failure naming `env prepare --rebuild`.
    pub fn binary(&self, _name: &str) -> Result<&BuiltBinary> {
        todo!("environment issue")
    }
}
