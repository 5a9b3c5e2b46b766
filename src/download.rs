//! Fetching and verifying remote files (DESIGN.md, Sources): SHA-256 computed while writing,
//! `.partial` resume with `Range`, retries with backoff for network errors and 5xx (never
//! 4xx), connect and idle timeouts, a progress bar on a terminal, and a cache of verified
//! archives under `<root>/downloads/` reused without downloading. `GITHUB_TOKEN` goes to the
//! GitHub API host only. `file://` URLs and plain paths are read from disk.

use std::path::PathBuf;

use crate::error::Result;
use crate::output::SharedReporter;
use crate::paths::Root;
use crate::sources::Sources;

/// `Accept` header for artifacts.
pub const ACCEPT_ARTIFACT: &str = "application/octet-stream,*/*";
/// `Accept` header for the GitHub API.
pub const ACCEPT_GITHUB_JSON: &str = "application/vnd.github+json";

/// The download client for one invocation.
pub struct Downloader {
    _private: (),
}

/// A verified file in the download cache.
#[derive(Debug, Clone)]
pub struct Verified {
    /// `<root>/downloads/<sha256>/<file_name>`; never modified after publication.
    pub path: PathBuf,
    pub sha256: String,
    pub size: u64,
    /// The URL it came from (or the cache hit's original URL).
    pub url: String,
    /// True when it was already in the cache and nothing was downloaded.
    pub cached: bool,
}

impl Downloader {
    pub fn new(_root: &Root, _sources: &Sources, _reporter: SharedReporter) -> Result<Downloader> {
        todo!("foundation: download")
    }

    /// Fetches a small text document (checksum files, installer scripts, JSON indexes) with
    /// retries. 404/403 and other 4xx fail at once with a message that names the URL and what
    /// to do (403 from the GitHub API: set GITHUB_TOKEN or pass --version).
    pub fn fetch_text(&self, _url: &str, _accept: &str) -> Result<String> {
        todo!("foundation: download")
    }

    /// Fetches and parses JSON.
    pub fn fetch_json(&self, _url: &str, _accept: &str) -> Result<serde_json::Value> {
        todo!("foundation: download")
    }

    /// Downloads `url` into the cache as `file_name`, verifying `expected_sha256` (lowercase
    /// hex) while streaming; resumes a `.partial` after a network error. A mismatch publishes
    /// nothing, removes the partial and is an integrity error (exit 4). A verified cache entry
    /// is reused without a request.
    pub fn fetch_verified(
        &self,
        _url: &str,
        _expected_sha256: &str,
        _file_name: &str,
    ) -> Result<Verified> {
        todo!("foundation: download")
    }
}

/// Parses a checksum file: a bare hex digest, or `digest  filename` lines (the line naming
/// `file_name` when there are several). Returns lowercase hex.
pub fn parse_checksum_file(_text: &str, _file_name: &str) -> Result<String> {
    todo!("foundation: download")
}
