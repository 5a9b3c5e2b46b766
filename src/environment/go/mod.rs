//! The Go toolchain (setup.md §1): probing a system Go, and installing, checking and reusing a
//! managed Go under `environment/go/<version>/<platform>/` (that directory is GOROOT).
//!
//! The parts: `version.rs` (the Go version grammar, the default version and its compiled-in
//! archive pins), `vouch.rs` (the go.dev download index and which source vouches for an
//! archive's digest), `install.rs` (probing a system or given Go, checking and installing the
//! managed one).

use std::path::PathBuf;

use serde::{Deserialize, Serialize};

mod install;
mod version;
mod vouch;

pub use install::{
    check_managed, describe_unmanaged, ensure_managed, explicit, is_executable, probe,
    probe_acceptable, repair_hint, system_candidates, GoInstallManifest, InstallCtx, Probe,
};
pub use version::{
    archive_name, default_version, pinned_sha256, GoVersion, DEFAULT_VERSION, MINIMUM,
    PINNED_1_21_13, VERSION_ENV,
};
pub use vouch::{find_in_index, vouch, IndexEntry, Vouched};

/// Where the chosen Go came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum GoSource {
    /// Found on PATH or in $GOROOT/bin.
    System,
    /// Given with `--go PATH`.
    Explicit,
    /// Installed by tsbsctl.
    Managed,
}

impl GoSource {
    pub fn as_str(self) -> &'static str {
        match self {
            GoSource::System => "system",
            GoSource::Explicit => "explicit",
            GoSource::Managed => "managed",
        }
    }
}

/// The Go toolchain an environment uses, as recorded and reported.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Eq)]
pub struct GoToolchain {
    pub source: GoSource,
    /// `1.21.13`
    pub version: String,
    /// Host platform, `linux-amd64`.
    pub platform: String,
    /// Absolute path, symlinks resolved.
    pub binary: PathBuf,
    pub binary_sha256: String,
    /// What `go version` printed.
    pub version_output: String,
    /// Managed only: the install directory (GOROOT).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub goroot: Option<PathBuf>,
    /// Managed only: who vouched for the archive digest (`pinned+index`, `pinned`, `index`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub checksum_source: Option<String>,
}
