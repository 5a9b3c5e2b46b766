//! Exclusive locks on workspaces, installs and datasets, and manual holds.
//!
//! A lock is an fs2 exclusive lock on a lock file (for a directory: `<dir>/.lock`). The file
//! records holder pid, host, command line, start time and reason, so a busy error names who
//! holds it. Non-blocking by default (exit 3); `--wait SECONDS` waits with a message. A manual
//! hold (`tsbsctl workspace lock`) is a persistent record in `<dir>/.hold.json`: every lock on
//! that directory is refused (exit 3, naming who, since when, why) unless the caller presents
//! the hold token. Callers re-check the state they are about to change after taking a lock.

use std::path::{Path, PathBuf};
use std::time::Duration;

use crate::cli::common::LockArgs;
use crate::error::Result;
use crate::output::Reporter;

/// How to take a lock.
#[derive(Debug, Clone, Default)]
pub struct LockOptions {
    /// Wait this long for a busy lock; `None` fails at once.
    pub wait: Option<Duration>,
    /// The token of a manual hold the caller works inside.
    pub hold_token: Option<String>,
}

impl From<&LockArgs> for LockOptions {
    fn from(a: &LockArgs) -> Self {
        LockOptions {
            wait: a.wait.map(Duration::from_secs),
            hold_token: a.hold_token.clone(),
        }
    }
}

/// A held lock; released on drop.
#[derive(Debug)]
pub struct LockGuard {
    _private: (),
}

impl LockGuard {
    /// The lock file.
    pub fn path(&self) -> &Path {
        todo!("foundation: lock")
    }
}

/// Locks directory `dir` (creating it if missing) through `<dir>/.lock`, honouring a manual
/// hold in `dir`. `label` names the thing in messages ("workspace greptimedb/greptime-120-manual").
/// `command` is recorded as the holder's command line; `reason` is optional.
pub fn lock_dir(
    _dir: &Path,
    _label: &str,
    _command: &str,
    _reason: Option<&str>,
    _opts: &LockOptions,
    _reporter: &dyn Reporter,
) -> Result<LockGuard> {
    todo!("foundation: lock")
}

/// Locks an explicit lock file (install locks such as `<installations>/<version>.lock`),
/// creating its parent if missing. No hold check.
pub fn lock_file(
    _lock_path: &Path,
    _label: &str,
    _command: &str,
    _opts: &LockOptions,
    _reporter: &dyn Reporter,
) -> Result<LockGuard> {
    todo!("foundation: lock")
}

/// The lock file of a directory.
pub fn lock_path_of(dir: &Path) -> PathBuf {
    dir.join(".lock")
}
