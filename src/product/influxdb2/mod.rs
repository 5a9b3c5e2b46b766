//! InfluxDB v2 (2.7.x; 2.9.x accepted), the database of the 2024 "GreptimeDB vs. InfluxDB"
//! report (reference influxdb2.md): release archives from InfluxData's download host, a
//! workspace set up at `prepare` with tsbsctl's own operator token ([`setup`]), `influxd` on
//! 127.0.0.1 configured through `INFLUXD_CONFIG_PATH`, loads by `tsbs_load_influx2` into a
//! bucket tsbsctl creates, drops and recreates over `/api/v2/buckets` (the loader's database
//! creator is a no-op), queries by `tsbs_run_queries_influx --is-v2` over the v1-compatible
//! `/query`, row counts by InfluxQL, and a footprint split into TSM data, WAL, index and other.
//!
//! Tokens. A managed workspace's operator token lives in its `secrets/operator-token` (0600);
//! an external server's comes from `$INFLUXDB2_TOKEN` (the variable's name is what a run
//! records). Either reaches the TSBS tools only as the `auth-token` key of their in-memory
//! `config.json` ([`crate::tsbs::ToolArg::Secret`]), like InfluxDB 3's: never argv, never a
//! named file that outlives the command. The product keeps the token of the server it talks to
//! for the length of one command ([`Session`]): the generic phases hand managed servers no
//! token, and the product finds its workspace's when the server starts
//! ([`super::ManagedServer::check_serving`]).

pub mod api;
mod distribution;
mod driver;
mod external;
mod loading;
mod managed_server;
pub mod setup;
mod workspace_setup;

use std::path::Path;
use std::sync::Mutex;

use serde_json::{json, Value};

use super::{FilePart, FootprintParts, Product, Reporting, StorageFootprint};
use crate::error::{Error, Result};
use crate::queryset::QueryFormat;
use crate::tsbs::Secret;
use crate::workspace_manifest::WorkspaceManifest;

/// The version `install` takes without `--version`: the 2024 report's (its manual installs
/// `influxdb2-2.7.7_linux_amd64.tar.gz`). 2.7.12 (the newest 2.7, what CI builds from source
/// and the tests run) is installed with `--version 2.7.12`.
pub const DEFAULT_VERSION: &str = "2.7.7";
/// `version_source` of [`DEFAULT_VERSION`].
pub const DEFAULT_SOURCE: &str = "report-2024";
/// The environment variable holding an external server's token.
pub const TOKEN_ENV: &str = "INFLUXDB2_TOKEN";
/// The organisation and user a managed workspace is set up with.
pub const ORG: &str = "tsbs";
pub const USER: &str = "tsbsctl";
/// The loader (exists only in GreptimeTeam's TSBS fork).
pub const LOAD_INFLUX2: &str = "tsbs_load_influx2";

const TEMPLATE: &str = include_str!("../../../templates/influxdb2/config.toml.j2");

/// SHA-256 of release archives from a second source, which the published checksum file must
/// agree with: 2.7.7 from its GitHub release notes, 2.7.11 linux_amd64 from InfluxData's
/// install docs (reference influxdb2.md §2, "Checksums and signatures").
const PINNED: &[(&str, &str, &str)] = &[
    (
        "2.7.7",
        "linux_amd64",
        "27b1d1b1f98f332aba6d294f9edae7143655a5d9c460b0103fd989f2f858f8b9",
    ),
    (
        "2.7.7",
        "linux_arm64",
        "0867b365293ec0f14990fed4b71f5b2b13a83a26f80b46d027c8b28bc842aad7",
    ),
    (
        "2.7.7",
        "darwin_amd64",
        "a1e18cfbc73e18141bc97fafeb2bb5bf440d5bd2b3a9475bfb75221129c197c4",
    ),
    (
        "2.7.11",
        "linux_amd64",
        "8d7872013cad3524fb728ca8483d0adc30125ad1af262ab826dcf5d1801159cf",
    ),
];

/// What the product knows about the server of the current command: its token and the
/// organisation the loader writes to.
#[derive(Debug, Default, Clone)]
struct Session {
    token: Option<Secret>,
    org: Option<String>,
}

/// InfluxDB v2.
#[derive(Debug, Default)]
pub struct InfluxDb2 {
    session: Mutex<Session>,
}

/// The registry line of InfluxDB 2.
pub const ENTRY: super::Entry = super::Entry {
    name: "influxdb2",
    display: "InfluxDB 2",
    variant_flag: None,
    variants: &[],
    make: |_| Ok(Box::new(InfluxDb2::default())),
    sources: &[super::release::INFLUXDATA_DL],
};

impl InfluxDb2 {
    fn session(&self) -> Session {
        self.session
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .clone()
    }
    fn remember_token(&self, t: Option<&Secret>) {
        if let Some(t) = t.filter(|t| !t.is_empty()) {
            self.session.lock().unwrap_or_else(|e| e.into_inner()).token = Some(t.clone());
        }
    }
    fn token_for(&self, given: Option<&str>) -> Result<Secret> {
        if let Some(t) = given.filter(|t| !t.is_empty()) {
            return Ok(Secret::new(t));
        }
        self.session().token.ok_or_else(|| {
            Error::invalid("InfluxDB 2 checks a token on every request, and none was given")
                .with_hint(format!(
                    "export {TOKEN_ENV} with an all-access token of the server's organisation"
                ))
        })
    }
}

/// The directory under InfluxData's `influxdb/releases/` that holds `version`: 2.7.12 and the
/// 2.8 releases moved into `v<V>/`, the others are flat (reference influxdb2.md §2).
pub fn release_dir(version: &str) -> String {
    if version == "2.7.12" || version.starts_with("2.8.") {
        format!("influxdb/releases/v{version}")
    } else {
        "influxdb/releases".to_string()
    }
}

/// The pinned digest of `version` on `platform` (InfluxData's spelling), if any.
pub fn pinned(version: &str, platform: &str) -> Option<&'static str> {
    PINNED
        .iter()
        .find(|(v, p, _)| *v == version && *p == platform)
        .map(|(_, _, d)| *d)
}

/// Severity of an `influxd` log line (zap's logfmt: `ts=... lvl=error msg=...`), and Go panics.
fn classify_log(line: &str) -> Option<crate::logscan::Severity> {
    use crate::logscan::Severity;
    if line.starts_with("panic: ") || line.starts_with("fatal error: ") {
        return Some(Severity::Panic);
    }
    let lvl = line
        .split_whitespace()
        .find_map(|w| w.strip_prefix("lvl="))?;
    match lvl {
        "warn" => Some(Severity::Warning),
        "error" => Some(Severity::Error),
        "dpanic" | "panic" => Some(Severity::Panic),
        "fatal" => Some(Severity::Fatal),
        _ => None,
    }
}

/// The footprint split of `<workspace>/data` (reference influxdb2.md §6): `engine/wal/...` is
/// WAL, `*.tsm` data, the TSI index (`index/` of a shard, `_series/`, `fields.idx`) index,
/// the bolt and SQLite metadata files metadata, the rest other.
pub fn classify(rel: &Path) -> FilePart {
    let parts: Vec<String> = rel
        .components()
        .map(|c| c.as_os_str().to_string_lossy().into_owned())
        .collect();
    let name = parts.last().map(String::as_str).unwrap_or_default();
    let ext = rel
        .extension()
        .map(|e| e.to_string_lossy().to_ascii_lowercase())
        .unwrap_or_default();
    let dirs = &parts[..parts.len().saturating_sub(1)];
    if dirs.iter().any(|d| d == "wal") || ext == "wal" {
        FilePart::Wal
    } else if ext == "tsm" {
        FilePart::Data
    } else if dirs.iter().any(|d| d == "index" || d == "_series")
        || name == "fields.idx"
        || ext == "tsi"
        || ext == "tsl"
    {
        FilePart::Index
    } else if name.starts_with("influxd.bolt") || name.starts_with("influxd.sqlite") {
        FilePart::Metadata
    } else {
        FilePart::Other
    }
}

impl Product for InfluxDb2 {
    fn name(&self) -> &'static str {
        "influxdb2"
    }
    fn display_name(&self) -> String {
        "InfluxDB 2".into()
    }
}

impl StorageFootprint for InfluxDb2 {
    fn classify_file(&self, rel: &Path) -> FilePart {
        classify(rel)
    }
    fn footprint_layout(&self) -> Option<&'static str> {
        Some("influxdb2")
    }
    fn footprint_parts(&self) -> FootprintParts {
        FootprintParts {
            wal: "WAL (engine/wal)",
            data: "TSM files",
            other: "Other (TSI index, series files, bolt and SQLite metadata)",
            total_note: None,
        }
    }
}

impl Reporting for InfluxDb2 {
    fn templates(&self) -> &'static [(&'static str, &'static str)] {
        &[
            (
                "summary/storage",
                include_str!("../../../templates/influxdb2/summary-storage.md.j2"),
            ),
            (
                "summary/never_flushed",
                include_str!("../../../templates/influxdb2/summary-never-flushed.md.j2"),
            ),
        ]
    }
    fn server_settings(
        &self,
        ws: Option<&WorkspaceManifest>,
        _data_dir: Option<&Path>,
        _runtime_version: Option<&str>,
    ) -> Option<Value> {
        ws.map(|_| {
            json!({
                "source": "the workspace's config.toml (tsbsctl's)",
                "storage_engine": "tsm1 + tsi1",
                // influxd's defaults, which tsbsctl leaves alone (reference influxdb2.md §3).
                "storage-wal-fsync-delay": "0s",
                "storage-cache-max-memory-size": "1 GiB",
                "storage-wal-flush-on-shutdown": false,
                "reporting-disabled": true,
            })
        })
    }
}

#[allow(non_upper_case_globals)]
impl QueryFormat {
    /// InfluxQL (`tsbs_generate_queries --format influx`): POST `/query?q=...`.
    pub const Influx: QueryFormat = QueryFormat {
        name: "influx",
        manifest_kind: "influxdb2-query-set",
        bytes_per_query: 1024,
        generator_flags: &[],
        use_cases: &["devops", "iot"],
        refused_types: &[],
        answers: Some(crate::answers::PrintFormat::JsonEnvelope),
    };
}

#[cfg(test)]
mod tests;
