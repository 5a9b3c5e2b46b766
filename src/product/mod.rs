//! The products tsbsctl manages. A [`Product`] is what differs between GreptimeDB and
//! InfluxDB 3 (and a future third database); everything else (the installation store in
//! [`crate::install`], workspaces in [`crate::workspace`], the supervisor in [`crate::server`])
//! is generic and asks the product only these questions:
//!
//! * releases: how "latest" is found, where the archive and its checksum live, the archive's
//!   top directory, what `--version` must print;
//! * installation layout: the binary's name, where installations of this product (edition)
//!   live;
//! * workspaces: default ports, the config file (a template in `templates/`), the server's
//!   command line and readiness probe, product-specific manifest fields;
//! * admin SQL: list/create/drop databases and count rows on a running server.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde_json::{Map, Value};

use crate::download::Downloader;
use crate::error::{Error, Result};
use crate::paths::Root;
use crate::platform::Platform;
use crate::server::{Probe, Timing};
use crate::sources::Sources;
use crate::workspace::WorkspaceManifest;

pub mod greptimedb;
pub mod influxdb3;
pub mod timescaledb;

/// Where one release archive and its checksum file live.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ReleaseAsset {
    pub url: String,
    pub checksum_url: String,
    /// The archive's file name (the download cache keeps it under this name).
    pub file_name: String,
    /// The single top directory the vendor puts everything under, when there is one.
    pub top_dir: Option<String>,
}

/// A version found by "latest" resolution, and how (recorded as `version_source`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Latest {
    pub version: String,
    pub source: &'static str,
}

/// How to run a workspace's server (the supervisor adds ports, probe and logging).
#[derive(Debug, Clone)]
pub struct ServerCommand {
    pub program: PathBuf,
    pub args: Vec<String>,
    pub env: Vec<(String, String)>,
    pub env_remove: Vec<String>,
}

/// A database product (and edition).
pub trait Product: Send + Sync {
    /// `greptimedb`, `influxdb3`: the directory under the state root and the CLI area.
    fn name(&self) -> &'static str;
    /// "GreptimeDB", "InfluxDB 3 Enterprise": for messages.
    fn display_name(&self) -> String;
    /// `core` / `enterprise` for InfluxDB 3; `None` for single-edition products.
    fn edition(&self) -> Option<&str> {
        None
    }
    /// The server binary inside an installation (`greptime`, `influxdb3`).
    fn binary_name(&self) -> &'static str;

    /// Refuses platforms the vendor does not ship (exit 2).
    fn check_platform(&self, platform: &Platform) -> Result<()>;
    /// Validates and normalises a user-given version (GreptimeDB strips one leading `v`).
    fn normalize_version(&self, raw: &str) -> Result<String>;
    /// Resolves the newest stable version from the vendor (never a guess, never a cache).
    fn resolve_latest(&self, downloader: &Downloader, sources: &Sources) -> Result<Latest>;
    /// The archive and checksum locations of `version` for `platform`.
    fn release_asset(&self, sources: &Sources, version: &str, platform: &Platform) -> ReleaseAsset;
    /// Extracts the expected SHA-256 (lowercase hex) from the vendor's checksum file.
    fn parse_checksum(&self, text: &str, asset: &ReleaseAsset) -> Result<String> {
        crate::download::parse_checksum_file(text, &asset.file_name)
    }
    /// Checks the output of `<binary> --version` names `version` (and the edition).
    fn check_version_output(&self, version: &str, output: &str) -> Result<()>;
    /// The distribution root inside an extracted archive (`extracted` is the archive's root,
    /// or the contents of [`ReleaseAsset::top_dir`] when the product names one). Products
    /// whose archives have a top directory of unknown name find it here.
    fn distribution_root(&self, extracted: &Path) -> Result<PathBuf> {
        Ok(extracted.to_path_buf())
    }

    /// Directory holding `<version>/<platform>/` installations of this product (edition).
    fn installations_dir(&self, root: &Root) -> PathBuf {
        root.installations(self.name())
    }
    /// The command that (re)installs `version`, for hints.
    fn install_command(&self, version: &str, reinstall: bool) -> String {
        let mut s = format!("tsbsctl {} install", self.name());
        if let Some(e) = self.edition() {
            s.push_str(&format!(" --edition {e}"));
        }
        s.push_str(&format!(" --version {version}"));
        if reinstall {
            s.push_str(" --reinstall");
        }
        s
    }
    /// `tsbsctl greptimedb` (plus `--edition E` where the product needs it in commands that
    /// create things), for hints.
    fn cli(&self) -> String {
        format!("tsbsctl {}", self.name())
    }

    /// The HTTP port of a new workspace unless the user picks one.
    fn default_http_port(&self) -> u16;
    /// Every listener a workspace's server opens, given its HTTP port: name -> port. Recorded
    /// in the workspace manifest and probed before each start.
    fn default_ports(&self, http_port: u16) -> Result<BTreeMap<String, u16>>;
    /// Product-specific manifest fields of a new workspace (InfluxDB 3: node id, licence).
    fn new_workspace_fields(&self, _id: &str) -> Map<String, Value> {
        Map::new()
    }
    /// The workspace's config file name and content, when the product uses one.
    fn render_config(&self, ws: &WorkspaceManifest, dir: &Path) -> Result<Option<String>>;
    /// How to start the server of the workspace in `dir` whose installation is `install_dir`.
    fn server_command(
        &self,
        ws: &WorkspaceManifest,
        dir: &Path,
        install_dir: &Path,
    ) -> Result<ServerCommand>;
    /// Refuses to start a workspace's server for product reasons (InfluxDB 3 Enterprise without
    /// an active licence), with the command that fixes it.
    fn check_can_serve(&self, _ws: &WorkspaceManifest) -> Result<()> {
        Ok(())
    }
    /// A line filter for the server's output on its way to the log (secrets a server may
    /// print: InfluxDB 3 licence e-mails and tokens). `None`: the log gets the output as is.
    fn output_filter(&self) -> Option<crate::server::OutputFilter> {
        None
    }
    /// The readiness probe against `endpoint` (`http://127.0.0.1:PORT`).
    fn readiness_probe(&self, endpoint: &str) -> Probe;
    /// Default startup timeout, grace period and port wait.
    fn default_timing(&self) -> Timing {
        Timing::default()
    }

    /// Names of the databases on a running server.
    fn list_databases(&self, endpoint: &str) -> Result<Vec<String>>;
    /// Creates `database` on a running server (an existing one is an error).
    fn create_database(&self, endpoint: &str, database: &str) -> Result<()>;
    /// Drops `database` on a running server.
    fn drop_database(&self, endpoint: &str, database: &str) -> Result<()>;
    /// `SELECT count(*) FROM table` in `database`.
    fn count_rows(&self, endpoint: &str, database: &str, table: &str) -> Result<u64>;
}

/// The config file of a workspace (when the product has one).
pub const CONFIG_FILE: &str = "config.toml";

/// Checks `MAJOR.MINOR.PATCH[-pre][+build]` by SemVer 2.0 (no leading zeros, no `v`; after any
/// prefix the product strips). Returns the version unchanged.
pub fn check_semver(flag: &str, raw: &str, example: &str) -> Result<String> {
    match semver::Version::parse(raw) {
        Ok(_) => Ok(raw.to_string()),
        Err(_) => Err(
            Error::invalid(format!("{flag} {raw:?} is not an exact version"))
                .with_hint(format!("give an exact version such as {example}")),
        ),
    }
}

/// Orders versions by SemVer precedence (§11: numeric identifiers compare as numbers, so
/// `1.2.0-beta.10` is above `beta.2`; build metadata is ignored). Unparseable versions sort
/// first.
pub fn compare_versions(a: &str, b: &str) -> std::cmp::Ordering {
    match (semver::Version::parse(a), semver::Version::parse(b)) {
        (Ok(a), Ok(b)) => a.cmp_precedence(&b),
        (Ok(_), Err(_)) => std::cmp::Ordering::Greater,
        (Err(_), Ok(_)) => std::cmp::Ordering::Less,
        (Err(_), Err(_)) => std::cmp::Ordering::Equal,
    }
}

/// The environment variable that bounds one admin request (listing, creating and dropping
/// databases, probes, table statistics). Maintenance statements have no such bound and row
/// counts have their own (`--count-timeout`).
pub const ADMIN_TIMEOUT_ENV: &str = "TSBSCTL_ADMIN_TIMEOUT_SECS";

/// The admin request limit: `TSBSCTL_ADMIN_TIMEOUT_SECS` (whole seconds, 1 to 86400), else
/// 300 s.
pub fn admin_timeout() -> Result<std::time::Duration> {
    let Ok(raw) = std::env::var(ADMIN_TIMEOUT_ENV) else {
        return Ok(std::time::Duration::from_secs(300));
    };
    match raw.trim().parse::<u64>() {
        Ok(s) if (1..=86_400).contains(&s) => Ok(std::time::Duration::from_secs(s)),
        _ => Err(Error::invalid(format!(
            "{ADMIN_TIMEOUT_ENV}={raw:?} must be a whole number of seconds from 1 to 86400"
        ))
        .with_hint(format!(
            "set {ADMIN_TIMEOUT_ENV} to e.g. 300, or unset it (default 300 s)"
        ))),
    }
}

/// A blocking HTTP client for admin requests to a local server (no proxy, bounded by
/// [`admin_timeout`]).
/// Built once per process: every blocking client starts its own runtime thread, and the admin
/// statements of one command share the same policy. A clone shares the connection pool.
pub fn admin_client() -> Result<reqwest::blocking::Client> {
    static CLIENT: std::sync::OnceLock<reqwest::blocking::Client> = std::sync::OnceLock::new();
    if let Some(c) = CLIENT.get() {
        return Ok(c.clone());
    }
    let c = reqwest::blocking::Client::builder()
        .no_proxy()
        .timeout(admin_timeout()?)
        .connect_timeout(std::time::Duration::from_secs(5))
        .build()
        .map_err(|e| Error::failed(format!("could not build an HTTP client: {e}")))?;
    Ok(CLIENT.get_or_init(|| c).clone())
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::cmp::Ordering;

    #[test]
    fn semver_grammar() {
        for good in [
            "1.1.4",
            "1.2.0-beta.1",
            "1.2.0+build",
            "0.17.2",
            "1.2.0-rc.1+b.2",
        ] {
            assert!(check_semver("--version", good, "1.1.4").is_ok(), "{good}");
        }
        for bad in ["1.2", "01.2.3", "latest", "v1.1.4", "1.1.4\n", "1.1.4-", ""] {
            assert_eq!(
                check_semver("--version", bad, "1.1.4")
                    .unwrap_err()
                    .exit_code(),
                2,
                "{bad}"
            );
        }
    }

    #[test]
    fn version_order() {
        assert_eq!(compare_versions("1.10.0", "1.9.9"), Ordering::Greater);
        assert_eq!(compare_versions("1.2.0", "1.2.0-beta.2"), Ordering::Greater);
        assert_eq!(
            compare_versions("1.2.0-beta.1", "1.2.0-beta.2"),
            Ordering::Less
        );
        assert_eq!(compare_versions("0.17.2", "1.0.0"), Ordering::Less);
        // SemVer §11: numeric pre-release identifiers compare as numbers.
        assert_eq!(
            compare_versions("1.2.0-beta.10", "1.2.0-beta.2"),
            Ordering::Greater
        );
        assert_eq!(
            compare_versions("1.2.0-alpha", "1.2.0-alpha.1"),
            Ordering::Less
        );
        assert_eq!(compare_versions("1.2.0+a", "1.2.0+b"), Ordering::Equal);
        assert_eq!(compare_versions("nonsense", "0.0.1"), Ordering::Less);
    }
}
