//! Checks a run makes on what it is about to measure (issue 16, "measure only what you
//! checked"): the TSBS binary a phase starts is re-hashed against its build record first, so
//! the manifest records the checksum of what ran, not of what was once built (#5).

use std::path::PathBuf;

use serde_json::json;

use crate::environment::TsbsEnv;
use crate::error::{Error, Result};
use crate::output::NoProgress;
use crate::run::RunDir;

/// Re-hashes the built tool `name` (a few tens of MB: well under a second) and returns its
/// path. A checksum other than the build's is an integrity error (exit 4) whose hint is the
/// rebuild. The run manifest gets `environment.binaries.<name>.ran_sha256` (and
/// `verified_at`) once the file is known good.
pub fn verified_binary(env: &TsbsEnv, name: &str, run: &mut RunDir) -> Result<PathBuf> {
    let b = env.binary(name)?;
    let (sha, _) = crate::hash::sha256_file(&b.path, &NoProgress)?;
    if sha != b.sha256 {
        return Err(Error::integrity(format!(
            "the TSBS tool {name} at {} changed since it was built: SHA-256 {sha}, the build recorded {}",
            b.path.display(),
            b.sha256
        ))
        .with_hint("run `tsbsctl env prepare --rebuild` (nothing was started)"));
    }
    if let Some(env_json) = run.manifest.environment.as_mut() {
        let entry = &mut env_json["binaries"][name];
        if !entry.is_object() {
            *entry = json!({"path": b.path});
        }
        entry["ran_sha256"] = json!(sha);
        entry["verified_at"] = json!(crate::manifest::now_rfc3339());
        run.save()?;
    }
    Ok(b.path.clone())
}
