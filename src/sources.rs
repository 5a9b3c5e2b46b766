//! Where each remote thing lives (DESIGN.md, Sources): environment > `[sources]` in
//! `<root>/config.toml` > default. Values may be `http(s)://` URLs, `file://` URLs or plain
//! directory paths (an offline mirror directory laid out like the real hosts).

use crate::error::Result;
use crate::paths::Root;

/// One configurable remote location.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum SourceKey {
    /// `github` / `TSBSCTL_GITHUB_URL`, default `https://github.com`.
    Github,
    /// `github_api` / `TSBSCTL_GITHUB_API_URL`, default `https://api.github.com`.
    GithubApi,
    /// `influxdata_dl` / `TSBSCTL_INFLUXDATA_DL_URL`, default `https://dl.influxdata.com`.
    InfluxdataDl,
    /// `influxdb3_installer` / `TSBSCTL_INFLUXDB3_INSTALLER_URL`, default
    /// `https://www.influxdata.com/d/install_influxdb3.sh` (a full URL, not a base).
    Influxdb3Installer,
    /// `go_dl` / `TSBSCTL_GO_DL_URL`, default `https://go.dev/dl`.
    GoDl,
    /// `tsbs_repo` / `TSBSCTL_TSBS_REPO`, default `https://github.com/GreptimeTeam/tsbs.git`.
    TsbsRepo,
}

/// Where a value came from, for `env show` and error messages.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Origin {
    Environment(&'static str),
    ConfigFile,
    Default,
}

/// The resolved sources.
#[derive(Debug, Clone)]
pub struct Sources {
    _private: (),
}

impl Sources {
    /// Resolves every key: environment > config.toml `[sources]` > default. An unknown key in
    /// `[sources]`, or a value that is neither a URL nor a path, is invalid input (exit 2).
    pub fn load(_root: &Root) -> Result<Sources> {
        todo!("foundation: sources")
    }

    /// The value for `key`, without a trailing slash.
    pub fn get(&self, _key: SourceKey) -> &str {
        todo!("foundation: sources")
    }

    /// Where the value came from.
    pub fn origin(&self, _key: SourceKey) -> Origin {
        todo!("foundation: sources")
    }

    /// `base + "/" + path` for a base key (all but `Influxdb3Installer` and `TsbsRepo`).
    pub fn url(&self, _key: SourceKey, _path: &str) -> String {
        todo!("foundation: sources")
    }
}
