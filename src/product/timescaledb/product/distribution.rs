//! TimescaleDB's [`Distribution`]: releases and installations.

use std::path::Path;

use super::{read_record, TimescaleDb};
use crate::error::{Error, Result};
use crate::platform::Platform;
use crate::product::timescaledb::install;
use crate::product::Distribution;

impl Distribution for TimescaleDb {
    fn verify_installation(&self, install_dir: &Path) -> Result<()> {
        let rec = read_record(install_dir)?;
        let changed = rec.changed_binaries();
        if changed.is_empty() {
            return Ok(());
        }
        Err(Error::integrity(format!(
            "the pinned PostgreSQL binaries changed since `install`: {}",
            changed.join("; ")
        )))
    }
    fn binary_name(&self) -> &'static str {
        "postgres"
    }
    fn check_platform(&self, _platform: &Platform) -> Result<()> {
        Ok(())
    }
    /// PostgreSQL versions are `MAJOR.MINOR` (`15.18`).
    fn normalize_version(&self, raw: &str) -> Result<String> {
        let parts: Vec<&str> = raw.split('.').collect();
        let ok = (1..=2).contains(&parts.len())
            && parts
                .iter()
                .all(|p| !p.is_empty() && p.len() <= 4 && p.bytes().all(|b| b.is_ascii_digit()));
        if ok {
            Ok(raw.to_string())
        } else {
            Err(
                Error::invalid(format!("--version {raw:?} is not a PostgreSQL version"))
                    .with_hint("give the version `postgres --version` prints, e.g. 15.18"),
            )
        }
    }
    fn check_version_output(&self, version: &str, output: &str) -> Result<()> {
        let v = install::parse_version(output.trim())?;
        if v.version == version {
            Ok(())
        } else {
            Err(Error::integrity(format!(
                "`postgres --version` reports {}, not {version}",
                v.version
            )))
        }
    }
}
