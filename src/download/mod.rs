//! Fetching and verifying remote files (DESIGN.md, Sources): SHA-256 computed while writing,
//! `.partial` resume with `Range`, retries with backoff for network errors and 5xx (never
//! 4xx), connect and idle timeouts, a progress bar on a terminal, and a cache of verified
//! archives under `<root>/downloads/` reused without downloading. `GITHUB_TOKEN` goes to the
//! GitHub API host only. `file://` URLs and plain paths are read from disk.
//!
//! Knobs (read once in [`Downloader::new`], also settable with the `with_*` methods):
//! `TSBSCTL_RETRY_BASE_MS` (first backoff delay, default 500 ms; doubles per retry) and
//! `TSBSCTL_HTTP_TIMEOUT_SECS` (connect and idle-read timeout, default 30 s).
//!
//! The parts: `client.rs` (the HTTP client: sending with redirects followed by hand, token
//! scoping, retries with backoff, small documents, URL redaction), `cache.rs` (the verified
//! download cache: reuse, `.partial` resume, the cache lock) and `checksum.rs` (checksum-file
//! parsing).

use std::path::PathBuf;
use std::time::Duration;

use reqwest::blocking::Client;
use reqwest::header::HeaderValue;

use crate::output::SharedReporter;
use crate::sources::Sources;

mod cache;
mod checksum;
mod client;

pub use cache::Verified;
pub use checksum::parse_checksum_file;
pub use client::redact;

/// `Accept` header for artifacts.
pub const ACCEPT_ARTIFACT: &str = "application/octet-stream,*/*";
/// `Accept` header for the GitHub API.
pub const ACCEPT_GITHUB_JSON: &str = "application/vnd.github+json";

/// Environment variable: the first retry delay in milliseconds (doubles per retry).
pub const RETRY_BASE_ENV: &str = "TSBSCTL_RETRY_BASE_MS";
/// Environment variable: connect and idle-read timeout in seconds.
pub const TIMEOUT_ENV: &str = "TSBSCTL_HTTP_TIMEOUT_SECS";

/// Attempts per URL that fail without making progress (network errors, 5xx).
pub const DEFAULT_ATTEMPTS: u32 = 4;

/// The download client for one invocation.
pub struct Downloader {
    client: Client,
    downloads: PathBuf,
    sources: Sources,
    token: Option<HeaderValue>,
    reporter: SharedReporter,
    attempts: u32,
    retry_base: Duration,
    timeout: Duration,
}
