//! Fetching and verifying remote files (DESIGN.md, Sources): SHA-256 computed while writing,
//! `.partial` resume with `Range`, retries with backoff for network errors and 5xx (never
//! 4xx), connect and idle timeouts, a progress bar on a terminal, and a cache of verified
//! archives under `<root>/downloads/` reused without downloading. `GITHUB_TOKEN` goes to the
//! GitHub API host only. `file://` URLs and plain paths are read from disk.
//!
//! Knobs (read once in [`Downloader::new`], also settable with the `with_*` methods):
//! `TSBSCTL_RETRY_BASE_MS` (first backoff delay, default 500 ms; doubles per retry) and
//! `TSBSCTL_HTTP_TIMEOUT_SECS` (connect and idle-read timeout, default 30 s).

use std::fs::{self, File, OpenOptions};
use std::io::{Read, Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};
use std::time::Duration;

use reqwest::blocking::{Client, Response};
use reqwest::header::{HeaderMap, HeaderValue, ACCEPT, AUTHORIZATION, LOCATION, RANGE};
use reqwest::StatusCode;

use crate::error::{Error, Result};
use crate::hash::Sha256;
use crate::output::{NoProgress, Progress, SharedReporter, Unit};
use crate::paths::Root;
use crate::sources::{file_url_path, under, SourceKey, Sources};

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
/// Resumes allowed after failures that did make progress (a long download on a bad link).
const MAX_RESUMES: u32 = 16;
const DEFAULT_RETRY_BASE: Duration = Duration::from_millis(500);
const DEFAULT_TIMEOUT: Duration = Duration::from_secs(30);
const MAX_REDIRECTS: usize = 10;
/// Small documents (checksums, JSON indexes, installer scripts) larger than this are refused.
const MAX_TEXT: u64 = 64 << 20;
/// Bytes gathered from the socket before one write + hash step.
const CHUNK: usize = 1 << 20;

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

/// This invocation for the holder record of a download lock (secret flag values redacted).
fn invocation() -> String {
    let argv: Vec<String> = std::env::args().skip(1).collect();
    let mut s = String::from("tsbsctl");
    for a in crate::context::redact_args(&argv) {
        s.push(' ');
        s.push_str(&a);
    }
    s
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

/// Why one attempt failed: worth retrying (network, 5xx) or not (disk, interrupt), or an
/// error status (4xx) that makes any partial download of that URL useless.
enum Failure {
    Retry(Error),
    Fatal(Error),
    Status(Error),
}

impl From<Error> for Failure {
    fn from(e: Error) -> Self {
        Failure::Fatal(e)
    }
}

/// How one HTTP transfer of an archive ended.
enum Step {
    Done,
    /// 416 to our Range: the partial may already be whole; `total` from `Content-Range`.
    RangeNotSatisfiable {
        total: Option<u64>,
    },
}

impl Downloader {
    pub fn new(root: &Root, sources: &Sources, reporter: SharedReporter) -> Result<Downloader> {
        let retry_base = env_number(RETRY_BASE_ENV)?
            .map(Duration::from_millis)
            .unwrap_or(DEFAULT_RETRY_BASE);
        let timeout = match env_number(TIMEOUT_ENV)? {
            // 0 would mean "no timeout" to some and "fail at once" to others (#30).
            Some(0) => {
                return Err(Error::invalid(format!(
                    "{TIMEOUT_ENV}=0 has no meaning: it must be a positive number of seconds"
                ))
                .with_hint(format!(
                    "set {TIMEOUT_ENV} to e.g. 30, or unset it (default 30 s)"
                )))
            }
            Some(s) => Duration::from_secs(s),
            None => DEFAULT_TIMEOUT,
        };
        let token = std::env::var("GITHUB_TOKEN")
            .ok()
            .and_then(|t| bearer(&t, reporter.as_ref()));
        Ok(Downloader {
            client: build_client(timeout)?,
            downloads: root.downloads(),
            sources: sources.clone(),
            token,
            reporter,
            attempts: DEFAULT_ATTEMPTS,
            retry_base,
            timeout,
        })
    }

    /// Sets the first retry delay (it doubles per retry).
    pub fn with_retry_base(mut self, base: Duration) -> Self {
        self.retry_base = base;
        self
    }

    /// Sets how many attempts a URL gets when attempts make no progress (at least 1).
    pub fn with_attempts(mut self, attempts: u32) -> Self {
        self.attempts = attempts.max(1);
        self
    }

    /// Replaces the token read from `GITHUB_TOKEN` (None: send no token).
    pub fn with_github_token(mut self, token: Option<&str>) -> Self {
        self.token = token.and_then(|t| bearer(t, self.reporter.as_ref()));
        self
    }

    /// Sets the connect and idle-read timeout.
    pub fn with_timeout(mut self, timeout: Duration) -> Result<Self> {
        self.timeout = timeout;
        self.client = build_client(timeout)?;
        Ok(self)
    }

    /// Fetches a small text document (checksum files, installer scripts, JSON indexes) with
    /// retries. 404/403 and other 4xx fail at once with a message that names the URL and what
    /// to do (403 from the GitHub API: set GITHUB_TOKEN or pass --version).
    pub fn fetch_text(&self, url: &str, accept: &str) -> Result<String> {
        let bytes = if let Some(path) = file_url_path(url) {
            read_local_text(&path, url, self.hint_for(url))?
        } else {
            self.with_retries(url, |_| {
                let resp = self.send(url, accept, None)?;
                if !resp.status().is_success() {
                    return Err(Failure::Fatal(Error::failed(format!(
                        "unexpected HTTP {} from {}",
                        resp.status(),
                        redact(url)
                    ))));
                }
                if resp.content_length().is_some_and(|n| n > MAX_TEXT) {
                    return Err(Failure::Fatal(too_big(url)));
                }
                let mut buf = Vec::new();
                resp.take(MAX_TEXT + 1)
                    .read_to_end(&mut buf)
                    .map_err(|e| Failure::Retry(net_error(url, &e)))?;
                if buf.len() as u64 > MAX_TEXT {
                    return Err(Failure::Fatal(too_big(url)));
                }
                Ok(buf)
            })?
        };
        String::from_utf8(bytes)
            .map_err(|_| Error::failed(format!("{} is not UTF-8 text", redact(url))))
    }

    /// Fetches and parses JSON.
    pub fn fetch_json(&self, url: &str, accept: &str) -> Result<serde_json::Value> {
        let text = self.fetch_text(url, accept)?;
        serde_json::from_str(&text).map_err(|e| {
            Error::failed(format!("{} did not return valid JSON: {e}", redact(url)))
                .with_hint(self.hint_for(url))
        })
    }

    /// Downloads `url` into the cache as `file_name`, verifying `expected_sha256` (lowercase
    /// hex) while streaming; resumes a `.partial` after a network error. A mismatch publishes
    /// nothing, removes the partial and is an integrity error (exit 4). A verified cache entry
    /// is reused without a request.
    pub fn fetch_verified(
        &self,
        url: &str,
        expected_sha256: &str,
        file_name: &str,
    ) -> Result<Verified> {
        let expected = normalize_digest(expected_sha256).ok_or_else(|| {
            Error::invalid(format!(
                "{expected_sha256:?} is not a SHA-256 digest (64 hex digits)"
            ))
            .with_hint("pass the archive's SHA-256 as 64 hexadecimal digits")
        })?;
        validate_file_name(file_name)?;
        let dir = self.downloads.join(&expected);
        let final_path = dir.join(file_name);
        if let Some(v) = self.reuse(&final_path, &expected, url)? {
            return Ok(v);
        }
        fs::create_dir_all(&dir).map_err(|e| Error::io("create directory", &dir, e))?;

        // One process per cache entry: a second one waits, then finds the published file.
        let lock_path = dir.join(format!(".{file_name}.lock"));
        // Through `lock`: the wait polls Ctrl-C (a blocking flock would not see it) and names
        // the holder. Bounded only by the longest `--wait` (a download can take that long).
        let _lock = crate::lock::lock_file(
            &lock_path,
            &format!("the download of {file_name}"),
            &invocation(),
            &crate::lock::LockOptions {
                wait: Some(Duration::from_secs(crate::bounds::MAX_WAIT_SECS)),
                hold_token: None,
            },
            self.reporter.as_ref(),
        )?;
        if let Some(v) = self.reuse(&final_path, &expected, url)? {
            return Ok(v);
        }

        let partial = dir.join(format!("{file_name}.partial"));
        self.reporter
            .info(&format!("downloading {file_name} from {}", redact(url)));
        let progress = self.reporter.progress(file_name, None, Unit::Bytes);
        let result = match file_url_path(url) {
            Some(src) => self.copy_local(&src, url, &partial, &expected, progress.as_ref()),
            None => self.download_http(url, &partial, &expected, progress.as_ref()),
        };
        progress.finish();
        let size = result?;
        crate::fsutil::rename_durable(&partial, &final_path)?;
        Ok(Verified {
            path: final_path,
            sha256: expected,
            size,
            url: url.to_string(),
            cached: false,
        })
    }

    /// A published cache entry that still hashes to its name; a damaged one is removed.
    fn reuse(&self, path: &Path, expected: &str, url: &str) -> Result<Option<Verified>> {
        if !path.is_file() {
            return Ok(None);
        }
        let (actual, size) = crate::hash::sha256_file(path, &NoProgress)?;
        if actual == expected {
            self.reporter
                .info(&format!("using the verified download {}", path.display()));
            return Ok(Some(Verified {
                path: path.to_path_buf(),
                sha256: actual,
                size,
                url: url.to_string(),
                cached: true,
            }));
        }
        self.reporter.warn(&format!(
            "{} is damaged (sha256 {actual}); downloading it again",
            path.display()
        ));
        fs::remove_file(path).map_err(|e| Error::io("remove", path, e))?;
        Ok(None)
    }

    /// Copies a local file (a `file://` source) into the partial, hashing on the way.
    fn copy_local(
        &self,
        src: &Path,
        url: &str,
        partial: &Path,
        expected: &str,
        progress: &dyn Progress,
    ) -> Result<u64> {
        let mut input = match File::open(src) {
            Ok(f) => f,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                return Err(not_found(url, self.hint_for(url)))
            }
            Err(e) => return Err(Error::io("open", src, e)),
        };
        if let Ok(m) = input.metadata() {
            progress.set_total(m.len());
        }
        let mut out = File::create(partial).map_err(|e| Error::io("create", partial, e))?;
        let mut hasher = Sha256::new();
        let mut buf = vec![0u8; CHUNK];
        let mut size = 0u64;
        loop {
            crate::interrupt::check()?;
            let n = match input.read(&mut buf) {
                Ok(0) => break,
                Ok(n) => n,
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
                Err(e) => return Err(Error::io("read", src, e)),
            };
            out.write_all(&buf[..n])
                .map_err(|e| Error::io("write", partial, e))?;
            hasher.update(&buf[..n]);
            size += n as u64;
            progress.inc(n as u64);
        }
        let actual = hasher.finish_hex();
        if actual != expected {
            drop(out);
            let _ = fs::remove_file(partial);
            return Err(self.mismatch(url, expected, &actual));
        }
        out.sync_all().map_err(|e| Error::io("sync", partial, e))?;
        Ok(size)
    }

    /// Downloads over HTTP into the partial with resume, retries and verification.
    fn download_http(
        &self,
        url: &str,
        partial: &Path,
        expected: &str,
        progress: &dyn Progress,
    ) -> Result<u64> {
        let mut file = OpenOptions::new()
            .create(true)
            .truncate(false)
            .read(true)
            .write(true)
            .open(partial)
            .map_err(|e| Error::io("open", partial, e))?;
        // A partial left by an earlier attempt or run: its bytes go through the hasher once,
        // so the final digest covers the whole file.
        let mut hasher = Sha256::new();
        let mut have = crate::hash::hash_reader(&mut file, &mut hasher, &NoProgress)
            .map_err(|e| Error::io("read", partial, e))?;
        // True when the bytes came from more than one response: a mismatch may then be a
        // stale partial, so one fresh download is tried before giving up.
        let mut mixed = have > 0;
        let mut fresh_retry_used = false;
        let mut failures = 0u32;
        let mut resumes = 0u32;
        loop {
            crate::interrupt::check()?;
            let before = have;
            let step = self.transfer(
                url,
                &mut file,
                partial,
                &mut hasher,
                &mut have,
                &mut mixed,
                progress,
            );
            let outcome = match step {
                Ok(Step::Done) => None,
                Ok(Step::RangeNotSatisfiable { total }) => {
                    if total.is_none_or(|t| t == have) && hasher.clone().finish_hex() == expected {
                        None
                    } else {
                        // The partial is longer than the file or wrong: start over.
                        reset(&mut file, partial, &mut hasher, &mut have)?;
                        mixed = false;
                        Some(Error::failed(format!(
                            "{} refused to resume the partial download",
                            redact(url)
                        )))
                    }
                }
                Err(Failure::Fatal(e)) => return Err(e),
                Err(Failure::Status(e)) => {
                    // A 4xx: what we have is of no use for a URL that is not there.
                    drop(file);
                    let _ = fs::remove_file(partial);
                    return Err(e);
                }
                Err(Failure::Retry(e)) => Some(e),
            };
            match outcome {
                None => {
                    let actual = hasher.clone().finish_hex();
                    if actual == expected {
                        file.sync_all().map_err(|e| Error::io("sync", partial, e))?;
                        return Ok(have);
                    }
                    if mixed && !fresh_retry_used {
                        fresh_retry_used = true;
                        self.reporter.warn(&format!(
                            "the resumed download of {} does not verify; downloading it again from the start",
                            redact(url)
                        ));
                        reset(&mut file, partial, &mut hasher, &mut have)?;
                        mixed = false;
                        continue;
                    }
                    drop(file);
                    let _ = fs::remove_file(partial);
                    return Err(self.mismatch(url, expected, &actual));
                }
                Some(err) => {
                    if have > before {
                        resumes += 1;
                    } else {
                        failures += 1;
                    }
                    if failures >= self.attempts || resumes > MAX_RESUMES {
                        let tries = failures + resumes;
                        return Err(after_attempts(err, tries)
                            .with_hint(format!(
                                "{} The partial download ({have} bytes) is kept; run the command again to resume.",
                                self.hint_for(url)
                            )));
                    }
                    let delay = self.backoff(failures.max(1));
                    self.reporter.info(&format!(
                        "{}; retrying in {:.1}s{}",
                        err.message,
                        delay.as_secs_f64(),
                        if have > 0 {
                            format!(" from byte {have}")
                        } else {
                            String::new()
                        }
                    ));
                    sleep_interruptible(delay)?;
                }
            }
        }
    }

    /// One HTTP request for the archive, appending to the partial.
    #[allow(clippy::too_many_arguments)]
    fn transfer(
        &self,
        url: &str,
        file: &mut File,
        partial: &Path,
        hasher: &mut Sha256,
        have: &mut u64,
        mixed: &mut bool,
        progress: &dyn Progress,
    ) -> std::result::Result<Step, Failure> {
        let range = (*have > 0).then_some(*have);
        let mut resp = self.send(url, ACCEPT_ARTIFACT, range)?;
        match resp.status() {
            StatusCode::PARTIAL_CONTENT if range.is_some() => {
                let start = content_range(resp.headers()).map(|(s, _)| s);
                if start == Some(0) {
                    reset(file, partial, hasher, have)?;
                } else if start != Some(*have) {
                    return Err(Failure::Retry(Error::failed(format!(
                        "{} answered a different byte range than asked for",
                        redact(url)
                    ))));
                } else {
                    *mixed = true;
                }
            }
            StatusCode::OK => {
                if *have > 0 {
                    // The server ignored the Range header: start over.
                    self.reporter.info(&format!(
                        "{} does not support resuming; starting over",
                        redact(url)
                    ));
                    reset(file, partial, hasher, have)?;
                    *mixed = false;
                }
            }
            StatusCode::RANGE_NOT_SATISFIABLE if range.is_some() => {
                let total = content_range_total(resp.headers());
                return Ok(Step::RangeNotSatisfiable { total });
            }
            s => {
                return Err(Failure::Fatal(Error::failed(format!(
                    "unexpected HTTP {s} from {}",
                    redact(url)
                ))))
            }
        }
        let expected_end = resp.content_length().map(|n| n + *have);
        if let Some(total) = expected_end {
            progress.set_total(total);
        }
        progress.set_position(*have);

        // Writing and hashing overlap: the hash runs on a helper thread, and its state comes
        // back (covering exactly the bytes written) however this response ends.
        let mut pipe = crate::hash::HashPipe::new(std::mem::take(hasher));
        let streamed = stream_body(&mut resp, file, partial, &mut pipe, have, progress, url);
        *hasher = pipe.finish();
        streamed?;
        if let Some(end) = expected_end {
            if *have != end {
                return Err(Failure::Retry(Error::failed(format!(
                    "the connection to {} closed after {} of {end} bytes",
                    redact(url),
                    *have
                ))));
            }
        }
        Ok(Step::Done)
    }

    /// Sends a GET, following redirects by hand so that the token is attached only to URLs
    /// under the GitHub API source, whatever the redirect chain. Returns 2xx and (for a Range
    /// request) 416 responses; every other status becomes a failure.
    fn send(
        &self,
        url: &str,
        accept: &str,
        range_from: Option<u64>,
    ) -> std::result::Result<Response, Failure> {
        let mut current = url.to_string();
        for _ in 0..=MAX_REDIRECTS {
            let mut headers = HeaderMap::new();
            headers.insert(
                ACCEPT,
                HeaderValue::from_str(accept).unwrap_or(HeaderValue::from_static("*/*")),
            );
            if let Some(n) = range_from {
                headers.insert(
                    RANGE,
                    HeaderValue::from_str(&format!("bytes={n}-")).expect("ascii"),
                );
            }
            if let Some(token) = self.token_for(&current) {
                headers.insert(AUTHORIZATION, token.clone());
            }
            let resp = self
                .client
                .get(&current)
                .headers(headers)
                .send()
                .map_err(|e| Failure::Retry(net_error(&current, &e)))?;
            let status = resp.status();
            if status.is_redirection() {
                let next = resp
                    .headers()
                    .get(LOCATION)
                    .and_then(|v| v.to_str().ok())
                    .and_then(|loc| url::Url::parse(&current).ok()?.join(loc).ok());
                match next {
                    Some(next) if matches!(next.scheme(), "http" | "https") => {
                        current = next.to_string();
                        continue;
                    }
                    _ => {
                        return Err(Failure::Fatal(Error::failed(format!(
                            "{} redirected without a usable Location",
                            redact(&current)
                        ))))
                    }
                }
            }
            if status.is_success()
                || (status == StatusCode::RANGE_NOT_SATISFIABLE && range_from.is_some())
            {
                return Ok(resp);
            }
            return Err(self.status_failure(url, &current, resp));
        }
        Err(Failure::Fatal(Error::failed(format!(
            "too many redirects from {}",
            redact(url)
        ))))
    }

    /// Turns an error status into a failure with a message and a hint.
    fn status_failure(&self, url: &str, current: &str, resp: Response) -> Failure {
        let status = resp.status();
        let shown = redact(current);
        if status.is_server_error() {
            return Failure::Retry(Error::failed(format!("HTTP {status} from {shown}")));
        }
        if status == StatusCode::NOT_FOUND {
            return Failure::Status(not_found(current, self.hint_for(url)));
        }
        let from_api = under(current, self.sources.get(SourceKey::GithubApi));
        if from_api && (status == StatusCode::FORBIDDEN || status == StatusCode::TOO_MANY_REQUESTS)
        {
            let remaining_zero = resp
                .headers()
                .get("x-ratelimit-remaining")
                .and_then(|v| v.to_str().ok())
                .is_some_and(|v| v.trim() == "0");
            let body = read_snippet(resp);
            if remaining_zero || body.to_ascii_lowercase().contains("rate limit") {
                return Failure::Status(
                    Error::failed(format!("the GitHub API rate limit is exhausted ({status} from {shown})"))
                        .with_hint("set GITHUB_TOKEN or pass --version (an exact version needs no GitHub API call)"),
                );
            }
        }
        Failure::Status(
            Error::failed(format!("HTTP {status} from {shown}")).with_hint(self.hint_for(url)),
        )
    }

    /// The Authorization header for `url`, only when it lies under the GitHub API source.
    fn token_for(&self, url: &str) -> Option<&HeaderValue> {
        let token = self.token.as_ref()?;
        under(url, self.sources.get(SourceKey::GithubApi)).then_some(token)
    }

    /// Runs `attempt` until it succeeds, fails fatally, or has failed `attempts` times.
    fn with_retries<T>(
        &self,
        url: &str,
        mut attempt: impl FnMut(u32) -> std::result::Result<T, Failure>,
    ) -> Result<T> {
        let mut n = 0;
        loop {
            crate::interrupt::check()?;
            n += 1;
            match attempt(n) {
                Ok(v) => return Ok(v),
                Err(Failure::Fatal(e) | Failure::Status(e)) => return Err(e),
                Err(Failure::Retry(e)) if n >= self.attempts => {
                    return Err(after_attempts(e, n).with_hint(self.hint_for(url)))
                }
                Err(Failure::Retry(e)) => {
                    let delay = self.backoff(n);
                    self.reporter.info(&format!(
                        "{}; retrying in {:.1}s",
                        e.message,
                        delay.as_secs_f64()
                    ));
                    sleep_interruptible(delay)?;
                }
            }
        }
    }

    /// `base * 2^(n-1)`, capped at 30 s.
    fn backoff(&self, n: u32) -> Duration {
        let factor = 1u32 << (n.saturating_sub(1)).min(10);
        (self.retry_base * factor).min(Duration::from_secs(30))
    }

    /// What to check when `url` fails: the source setting it came from.
    fn hint_for(&self, url: &str) -> String {
        match self.sources.key_for_url(url) {
            Some(key) => format!(
                "check the version and the `{}` source ({} or [sources] {} in config.toml; now {})",
                key.config_key(),
                key.env_var(),
                key.config_key(),
                redact(self.sources.get(key))
            ),
            None => "check the URL and your network connection".to_string(),
        }
    }

    fn mismatch(&self, url: &str, expected: &str, actual: &str) -> Error {
        Error::integrity(format!(
            "checksum mismatch for {}: expected sha256 {expected}, got {actual}",
            redact(url)
        ))
        .with_hint(format!(
            "nothing was kept. Run the command again; if it persists the mirror or the published checksum is wrong: {}",
            self.hint_for(url)
        ))
    }
}

/// Appends the attempt count to a failure's message.
fn after_attempts(mut e: Error, n: u32) -> Error {
    e.message = format!("{} (gave up after {n} attempts)", e.message);
    e
}

/// Copies the response body to the partial file in CHUNK-sized writes, hashing through
/// `pipe`; `have` counts what is on disk.
fn stream_body(
    resp: &mut Response,
    file: &mut File,
    partial: &Path,
    pipe: &mut crate::hash::HashPipe,
    have: &mut u64,
    progress: &dyn Progress,
    url: &str,
) -> std::result::Result<(), Failure> {
    loop {
        // Gather up to CHUNK bytes so that writes and hash calls are large; a slow body must
        // not delay Ctrl-C until the chunk is full, so the flag is checked between reads.
        let mut buf = pipe.buffer(CHUNK);
        let mut filled = 0;
        let mut read_err = None;
        let mut eof = false;
        while filled < CHUNK && !crate::interrupt::requested() {
            match resp.read(&mut buf[filled..]) {
                Ok(0) => {
                    eof = true;
                    break;
                }
                Ok(n) => {
                    filled += n;
                    // Per read, not per chunk: a slow small download still shows its bytes.
                    progress.inc(n as u64);
                }
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
                Err(e) => {
                    read_err = Some(e);
                    break;
                }
            }
        }
        if filled > 0 {
            file.write_all(&buf[..filled])
                .map_err(|e| Failure::Fatal(Error::io("write", partial, e)))?;
            buf.truncate(filled);
            pipe.push(buf);
            *have += filled as u64;
        }
        if crate::interrupt::requested() {
            return Err(Failure::Fatal(
                crate::interrupt::check().expect_err("interrupt requested"),
            ));
        }
        if let Some(e) = read_err {
            return Err(Failure::Retry(net_error(url, &e)));
        }
        if eof {
            return Ok(());
        }
    }
}

/// `Bearer <token>` marked sensitive (never printed by Debug); None for an empty token.
fn bearer(token: &str, reporter: &dyn crate::output::Reporter) -> Option<HeaderValue> {
    let t = token.trim();
    if t.is_empty() {
        return None;
    }
    match HeaderValue::from_str(&format!("Bearer {t}")) {
        Ok(mut v) => {
            v.set_sensitive(true);
            Some(v)
        }
        Err(_) => {
            reporter.warn(
                "GITHUB_TOKEN holds characters not allowed in an HTTP header; it is not used",
            );
            None
        }
    }
}

fn build_client(timeout: Duration) -> Result<Client> {
    Client::builder()
        .user_agent(format!("tsbsctl/{}", crate::VERSION))
        .connect_timeout(timeout)
        // The blocking client applies this to the wait for headers and to every read: an
        // idle timeout, not a limit on the whole transfer.
        .timeout(timeout)
        .redirect(reqwest::redirect::Policy::none())
        .build()
        .map_err(|e| Error::failed(format!("could not set up the HTTP client: {e}")))
}

fn env_number(name: &str) -> Result<Option<u64>> {
    match std::env::var(name) {
        Ok(v) => v.trim().parse::<u64>().map(Some).map_err(|_| {
            Error::invalid(format!("{name}={v:?} is not a whole number"))
                .with_hint(format!("set {name} to a number, or unset it"))
        }),
        Err(_) => Ok(None),
    }
}

fn reset(file: &mut File, partial: &Path, hasher: &mut Sha256, have: &mut u64) -> Result<()> {
    file.set_len(0)
        .and_then(|_| file.seek(SeekFrom::Start(0)).map(|_| ()))
        .map_err(|e| Error::io("truncate", partial, e))?;
    *hasher = Sha256::new();
    *have = 0;
    Ok(())
}

fn sleep_interruptible(total: Duration) -> Result<()> {
    let step = Duration::from_millis(50);
    let deadline = std::time::Instant::now() + total;
    loop {
        crate::interrupt::check()?;
        let now = std::time::Instant::now();
        if now >= deadline {
            return Ok(());
        }
        std::thread::sleep(step.min(deadline - now));
    }
}

/// `Content-Range: bytes S-E/T` → (S, T).
fn content_range(h: &HeaderMap) -> Option<(u64, Option<u64>)> {
    let v = h.get(reqwest::header::CONTENT_RANGE)?.to_str().ok()?;
    let rest = v.trim().strip_prefix("bytes ")?;
    let (span, total) = rest.split_once('/')?;
    let (start, _) = span.split_once('-')?;
    Some((start.trim().parse().ok()?, total.trim().parse().ok()))
}

/// `Content-Range: bytes */T` (or any form) → T.
fn content_range_total(h: &HeaderMap) -> Option<u64> {
    let v = h.get(reqwest::header::CONTENT_RANGE)?.to_str().ok()?;
    v.rsplit_once('/')?.1.trim().parse().ok()
}

fn read_snippet(resp: Response) -> String {
    let mut buf = Vec::new();
    let _ = resp.take(16 << 10).read_to_end(&mut buf);
    String::from_utf8_lossy(&buf).into_owned()
}

fn read_local_text(path: &Path, url: &str, hint: String) -> Result<Vec<u8>> {
    match fs::metadata(path) {
        Ok(m) if m.len() > MAX_TEXT => return Err(too_big(url)),
        Ok(m) if m.is_dir() => {
            return Err(Error::failed(format!("{} is a directory", path.display())).with_hint(hint))
        }
        Ok(_) => {}
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Err(not_found(url, hint)),
        Err(e) => return Err(Error::io("read", path, e)),
    }
    fs::read(path).map_err(|e| Error::io("read", path, e))
}

fn not_found(url: &str, hint: String) -> Error {
    Error::failed(format!("not found at {}", redact(url))).with_hint(hint)
}

fn too_big(url: &str) -> Error {
    Error::failed(format!(
        "{} is larger than {} MiB, too large for a metadata document",
        redact(url),
        MAX_TEXT >> 20
    ))
    .with_hint("check the URL: it should name a checksum, JSON or script file")
}

/// A network error described with its causes but without repeating the URL's credentials.
fn net_error(url: &str, err: &(dyn std::error::Error + 'static)) -> Error {
    let mut parts = Vec::new();
    let mut cur: Option<&(dyn std::error::Error + 'static)> = Some(err);
    while let Some(e) = cur {
        let s = e.to_string();
        // reqwest's top level names the URL; we name it once, redacted.
        let s = match s.find(" for url (") {
            Some(i) => s[..i].to_string(),
            None => s,
        };
        if !parts.contains(&s) {
            parts.push(s);
        }
        cur = e.source();
    }
    Error::failed(format!(
        "could not download {}: {}",
        redact(url),
        parts.join(": ")
    ))
}

/// The URL with any `user:password@` removed, for messages.
pub fn redact(url: &str) -> String {
    match url::Url::parse(url) {
        Ok(mut u) if !u.username().is_empty() || u.password().is_some() => {
            let _ = u.set_username("");
            let _ = u.set_password(None);
            u.to_string()
        }
        _ => url.to_string(),
    }
}

fn normalize_digest(s: &str) -> Option<String> {
    let s = s.trim();
    (s.len() == 64 && s.bytes().all(|b| b.is_ascii_hexdigit())).then(|| s.to_ascii_lowercase())
}

fn validate_file_name(name: &str) -> Result<()> {
    if name.is_empty()
        || name == "."
        || name == ".."
        || name.contains('/')
        || name.contains('\0')
        || name.ends_with(".partial")
        || name.starts_with('.')
    {
        return Err(
            Error::invalid(format!("{name:?} is not a usable download file name"))
                .with_hint("use the archive's plain file name, without directories"),
        );
    }
    Ok(())
}

/// Parses a checksum file: a bare hex digest, or `digest  filename` lines (the line naming
/// `file_name` when there are several). Returns lowercase hex.
pub fn parse_checksum_file(text: &str, file_name: &str) -> Result<String> {
    let bad = |why: String| {
        Error::integrity(format!("checksum file for {file_name}: {why}")).with_hint(
            "the published checksum file is not usable; check the mirror, or try again later",
        )
    };
    let lines: Vec<&str> = text
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty() && !l.starts_with('#'))
        .collect();
    if lines.is_empty() {
        return Err(bad("it is empty".into()));
    }
    let mut bare = Vec::new();
    let mut named = Vec::new();
    for line in &lines {
        if let Some((digest, name)) = parse_bsd_line(line) {
            named.push((digest, name));
            continue;
        }
        let mut it = line.splitn(2, char::is_whitespace);
        let first = it.next().unwrap_or_default();
        let rest = it.next().map(str::trim).unwrap_or_default();
        let Some(digest) = normalize_digest(first) else {
            return Err(bad(format!(
                "{:?} is not a SHA-256 digest line",
                truncate(line, 80)
            )));
        };
        if rest.is_empty() {
            bare.push(digest);
        } else {
            // `sha256sum -b` marks binary mode with `*`.
            named.push((digest, rest.trim_start_matches('*').to_string()));
        }
    }
    if !bare.is_empty() {
        if bare.len() == 1 && named.is_empty() {
            return Ok(bare.remove(0));
        }
        return Err(bad(
            "it mixes bare digests with other lines, so the one for this file is unknown".into(),
        ));
    }
    let base = |n: &str| n.rsplit('/').next().unwrap_or(n).to_string();
    let mut matching: Vec<&String> = named
        .iter()
        .filter(|(_, n)| n == file_name || base(n) == file_name)
        .map(|(d, _)| d)
        .collect();
    matching.dedup();
    match matching.len() {
        1 => Ok(matching[0].clone()),
        0 => {
            let names: Vec<String> = named.iter().take(5).map(|(_, n)| n.clone()).collect();
            Err(bad(format!(
                "no line names {file_name} (it names {})",
                names.join(", ")
            )))
        }
        _ => Err(bad(format!(
            "several different digests are given for {file_name}"
        ))),
    }
}

/// BSD style: `SHA256 (file) = digest`.
fn parse_bsd_line(line: &str) -> Option<(String, String)> {
    let rest = line.strip_prefix("SHA256 (")?;
    let (name, digest) = rest.rsplit_once(") = ")?;
    Some((normalize_digest(digest)?, name.to_string()))
}

fn truncate(s: &str, n: usize) -> String {
    s.chars().take(n).collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::error::ErrorKind;

    const D: &str = "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef";
    const E: &str = "fedcba9876543210fedcba9876543210fedcba9876543210fedcba9876543210";

    #[test]
    fn checksum_bare_digest_any_case() {
        assert_eq!(
            parse_checksum_file(&format!("{D}\n"), "x.tar.gz").unwrap(),
            D
        );
        assert_eq!(
            parse_checksum_file(&D.to_uppercase(), "x.tar.gz").unwrap(),
            D
        );
        assert_eq!(
            parse_checksum_file(&format!("  {D}  \r\n\n"), "x").unwrap(),
            D
        );
    }

    #[test]
    fn checksum_named_lines_pick_our_file() {
        let one = format!("{D}  influxdb3-core-3.11.1_linux_amd64.tar.gz\n");
        assert_eq!(
            parse_checksum_file(&one, "influxdb3-core-3.11.1_linux_amd64.tar.gz").unwrap(),
            D
        );
        let many = format!("{E}  a.tar.gz\n{D} *dist/b.tar.gz\n{E}  c.tar.gz\n");
        assert_eq!(parse_checksum_file(&many, "b.tar.gz").unwrap(), D);
        assert_eq!(parse_checksum_file(&many, "a.tar.gz").unwrap(), E);
        let bsd = format!("SHA256 (b.tar.gz) = {D}\n");
        assert_eq!(parse_checksum_file(&bsd, "b.tar.gz").unwrap(), D);
    }

    #[test]
    fn checksum_garbage_or_no_match_is_integrity() {
        for (text, name) in [
            ("", "a"),
            ("\n\n", "a"),
            ("<html>Not Found</html>", "a"),
            ("abc123", "a"),
            (&format!("{D}  other.tar.gz\n") as &str, "a.tar.gz"),
            (&format!("{D}\n{E}\n"), "a"),
            (&format!("{D}  a\n{E}  a\n"), "a"),
            (&format!("{D}0\n"), "a"),
        ] {
            let e = parse_checksum_file(text, name).unwrap_err();
            assert_eq!(e.kind, ErrorKind::Integrity, "{text:?}");
            assert!(e.message.contains(name), "{}", e.message);
        }
    }

    #[test]
    fn content_range_parsing() {
        let mut h = HeaderMap::new();
        h.insert(
            reqwest::header::CONTENT_RANGE,
            HeaderValue::from_static("bytes 100-199/200"),
        );
        assert_eq!(content_range(&h), Some((100, Some(200))));
        h.insert(
            reqwest::header::CONTENT_RANGE,
            HeaderValue::from_static("bytes */200"),
        );
        assert_eq!(content_range_total(&h), Some(200));
    }

    #[test]
    fn redaction_and_names() {
        assert_eq!(
            redact("https://u:secret@mirror.example/x"),
            "https://mirror.example/x"
        );
        assert_eq!(
            redact("https://mirror.example/x"),
            "https://mirror.example/x"
        );
        assert!(validate_file_name("go1.21.13.linux-amd64.tar.gz").is_ok());
        for bad in ["", "..", "a/b", ".hidden", "x.partial"] {
            assert_eq!(validate_file_name(bad).unwrap_err().exit_code(), 2);
        }
        assert_eq!(normalize_digest(&D.to_uppercase()).as_deref(), Some(D));
        assert_eq!(normalize_digest("abc"), None);
    }
}
