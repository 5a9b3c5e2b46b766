//! TimescaleDB / PostgreSQL, the third product (issue 15): [`TimescaleDb`] implements the
//! `Product` seam over the building blocks below. Everything here follows the real run of
//! `shared/reference/real/postgresql.md` (§8 is the list of what a tool must do):
//!
//! * [`install`]: find a PostgreSQL installation on this machine (they are found, not
//!   downloaded), its binaries and their checksums, its version, and the `timescaledb`
//!   extension if it is there;
//! * [`server`]: a managed cluster in a workspace: initdb as an unprivileged user, the rendered
//!   benchmark settings, the foreground server command line, stale `postmaster.pid`, the
//!   server log's `FATAL` lines, and the `pg_isready` readiness command;
//! * [`sql`]: what tsbsctl asks a running server over the PostgreSQL protocol (version and
//!   extension probe, counts, `ANALYZE`, other sessions, footprint, WAL);
//! * [`tsbs`]: the TSBS loader, runner and generator command lines per mode, the query-file
//!   format check, and the loader/runner output parsers checked on the real outputs.

pub mod flags;
pub mod install;
pub mod log;
pub mod server;
pub mod sql;
pub mod tsbs;

#[cfg(test)]
mod lifecycle_test;
pub mod product;

pub use product::{TimescaleDb, ENTRY, INSTALL_RECORD};

use serde::{Deserialize, Serialize};

use crate::error::{Error, Result};

/// How a managed server commits, bound at `prepare --durability` (default `durable`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Durability {
    /// As the published GreptimeDB-vs-TimescaleDB comparison ran TimescaleDB
    /// (`timescaledb-tune` defaults): `synchronous_commit = on`, `wal_level = replica`.
    Durable,
    /// Faster loads, not comparable with published numbers: `synchronous_commit = off`,
    /// `wal_level = minimal` (fsync stays on). Workspaces made before the choice existed
    /// have these settings.
    Relaxed,
}

impl Durability {
    /// The manifest field a workspace records it in.
    pub const FIELD: &'static str = "durability";

    pub fn as_str(self) -> &'static str {
        match self {
            Durability::Durable => "durable",
            Durability::Relaxed => "relaxed",
        }
    }

    pub fn parse(s: &str) -> Result<Durability> {
        match s {
            "durable" => Ok(Durability::Durable),
            "relaxed" => Ok(Durability::Relaxed),
            other => Err(Error::invalid(format!(
                "unknown durability {other:?}: expected durable or relaxed"
            ))
            .with_hint(
                "use --durability durable (the published settings) or --durability relaxed",
            )),
        }
    }

    /// A workspace's: recorded, else `relaxed` (what every workspace had before the field).
    pub fn of(extra: &serde_json::Map<String, serde_json::Value>) -> Durability {
        match extra.get(Self::FIELD).and_then(|v| v.as_str()) {
            Some("durable") => Durability::Durable,
            _ => Durability::Relaxed,
        }
    }
}

/// Which server a workspace benchmarks, bound at `prepare --mode` (default `timescaledb`).
/// Named honestly: plain PostgreSQL is never reported as TimescaleDB.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Mode {
    /// The extension preloaded, `cpu` a hypertable.
    Timescaledb,
    /// Plain PostgreSQL tables, queries without `time_bucket`.
    Postgresql,
}

impl Mode {
    pub fn as_str(self) -> &'static str {
        match self {
            Mode::Timescaledb => "timescaledb",
            Mode::Postgresql => "postgresql",
        }
    }

    pub fn parse(s: &str) -> Result<Mode> {
        match s {
            "timescaledb" => Ok(Mode::Timescaledb),
            "postgresql" => Ok(Mode::Postgresql),
            other => Err(Error::invalid(format!(
                "unknown mode {other:?}: expected timescaledb or postgresql"
            ))),
        }
    }

    /// The label every summary and report shows for a server of this mode.
    /// `pg_version` is PostgreSQL's (`15.18`); `ext_version` the extension's, when loaded.
    pub fn label(self, pg_version: &str, ext_version: Option<&str>) -> String {
        match (self, ext_version) {
            (Mode::Timescaledb, Some(v)) => {
                format!("TimescaleDB {v} (PostgreSQL {pg_version})")
            }
            (Mode::Timescaledb, None) => format!("TimescaleDB (PostgreSQL {pg_version})"),
            (Mode::Postgresql, _) => format!("PostgreSQL {pg_version} (no TimescaleDB)"),
        }
    }

    /// Refuses TimescaleDB mode on an installation or server without the extension (exit 2
    /// with the hint), so it is never silently downgraded to plain PostgreSQL.
    pub fn require_available(self, ext_version: Option<&str>, where_: &str) -> Result<()> {
        if self == Mode::Timescaledb && ext_version.is_none() {
            return Err(Error::invalid(format!(
                "the timescaledb extension is not available on {where_}"
            ))
            .with_hint(
                "install the TimescaleDB package for this PostgreSQL version, or benchmark plain PostgreSQL with --mode postgresql",
            ));
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn modes_are_named_honestly() {
        assert_eq!(Mode::parse("postgresql").unwrap(), Mode::Postgresql);
        assert_eq!(Mode::parse("timescaledb").unwrap(), Mode::Timescaledb);
        assert_eq!(Mode::parse("timescale").unwrap_err().exit_code(), 2);
        assert_eq!(
            Mode::Postgresql.label("15.18", Some("2.14.2")),
            "PostgreSQL 15.18 (no TimescaleDB)"
        );
        assert_eq!(
            Mode::Timescaledb.label("15.18", Some("2.14.2")),
            "TimescaleDB 2.14.2 (PostgreSQL 15.18)"
        );
        let e = Mode::Timescaledb
            .require_available(None, "/usr/lib/postgresql/15/bin")
            .unwrap_err();
        assert_eq!(e.exit_code(), 2);
        assert!(e.message.contains("not available"), "{}", e.message);
        assert!(e.hint.unwrap().contains("--mode postgresql"));
        Mode::Timescaledb
            .require_available(Some("2.14.2"), "x")
            .unwrap();
        Mode::Postgresql.require_available(None, "x").unwrap();
    }
}
