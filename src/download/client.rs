//! The HTTP client: one GET with redirects followed by hand (so `GITHUB_TOKEN` only ever goes
//! to the GitHub API source), error statuses turned into failures with hints, retries with
//! backoff for network errors and 5xx, small text and JSON documents, and URL redaction for
//! every message.

use std::io::Read;
use std::path::Path;
use std::time::Duration;

use reqwest::blocking::{Client, Response};
use reqwest::header::{HeaderMap, HeaderValue, ACCEPT, AUTHORIZATION, LOCATION, RANGE};
use reqwest::StatusCode;

use crate::error::{Error, Result};
use crate::output::{Event, SharedReporter, Warning};
use crate::paths::Root;
use crate::sources::{file_url_path, under, SourceKey, Sources};

use super::{Downloader, DEFAULT_ATTEMPTS, RETRY_BASE_ENV, TIMEOUT_ENV};

const DEFAULT_RETRY_BASE: Duration = Duration::from_millis(500);
const DEFAULT_TIMEOUT: Duration = Duration::from_secs(30);
const MAX_REDIRECTS: usize = 10;
/// Small documents (checksums, JSON indexes, installer scripts) larger than this are refused.
const MAX_TEXT: u64 = 64 << 20;

/// Why one attempt failed: worth retrying (network, 5xx) or not (disk, interrupt), or an
/// error status (4xx) that makes any partial download of that URL useless.
pub(super) enum Failure {
    Retry(Error),
    Fatal(Error),
    Status(Error),
}

impl From<Error> for Failure {
    fn from(e: Error) -> Self {
        Failure::Fatal(e)
    }
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

    /// Sends a GET, following redirects by hand so that the token is attached only to URLs
    /// under the GitHub API source, whatever the redirect chain. Returns 2xx and (for a Range
    /// request) 416 responses; every other status becomes a failure.
    pub(super) fn send(
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
    /// Every such failure carries the status as its [`Detail::HttpStatus`](crate::error::Detail).
    fn status_failure(&self, url: &str, current: &str, resp: Response) -> Failure {
        let status = resp.status();
        let code = status.as_u16();
        let shown = redact(current);
        if status.is_server_error() {
            return Failure::Retry(
                Error::failed(format!("HTTP {status} from {shown}")).with_http_status(code),
            );
        }
        if status == StatusCode::NOT_FOUND {
            return Failure::Status(not_found(current, self.hint_for(url)).with_http_status(code));
        }
        let from_api = under(current, self.sources.get(SourceKey::GITHUB_API));
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
                        .with_hint("set GITHUB_TOKEN or pass --version (an exact version needs no GitHub API call)")
                        .with_http_status(code),
                );
            }
        }
        Failure::Status(
            Error::failed(format!("HTTP {status} from {shown}"))
                .with_hint(self.hint_for(url))
                .with_http_status(code),
        )
    }

    /// The Authorization header for `url`, only when it lies under the GitHub API source.
    fn token_for(&self, url: &str) -> Option<&HeaderValue> {
        let token = self.token.as_ref()?;
        under(url, self.sources.get(SourceKey::GITHUB_API)).then_some(token)
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
                    self.reporter.event(&Event::Retrying {
                        error: e.message.clone(),
                        delay,
                        from_byte: None,
                    });
                    sleep_interruptible(delay)?;
                }
            }
        }
    }

    /// `base * 2^(n-1)`, capped at 30 s.
    pub(super) fn backoff(&self, n: u32) -> Duration {
        let factor = 1u32 << (n.saturating_sub(1)).min(10);
        (self.retry_base * factor).min(Duration::from_secs(30))
    }

    /// What to check when `url` fails: the source setting it came from.
    pub(super) fn hint_for(&self, url: &str) -> String {
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
}

/// Appends the attempt count to a failure's message.
pub(super) fn after_attempts(mut e: Error, n: u32) -> Error {
    e.message = format!("{} (gave up after {n} attempts)", e.message);
    e
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
            reporter.warning(&Warning::GithubTokenUnusable);
            None
        }
    }
}

fn build_client(timeout: Duration) -> Result<Client> {
    crate::http::download(timeout)
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

pub(super) fn sleep_interruptible(total: Duration) -> Result<()> {
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

fn read_snippet(resp: Response) -> String {
    let mut buf = Vec::new();
    let _ = resp.take(16 << 10).read_to_end(&mut buf);
    String::from_utf8_lossy(&buf).into_owned()
}

fn read_local_text(path: &Path, url: &str, hint: String) -> Result<Vec<u8>> {
    match fs_err::metadata(path) {
        Ok(m) if m.len() > MAX_TEXT => return Err(too_big(url)),
        Ok(m) if m.is_dir() => {
            return Err(Error::failed(format!("{} is a directory", path.display())).with_hint(hint))
        }
        Ok(_) => {}
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Err(not_found(url, hint)),
        Err(e) => return Err(e.into()),
    }
    Ok(fs_err::read(path)?)
}

pub(super) fn not_found(url: &str, hint: String) -> Error {
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
pub(super) fn net_error(url: &str, err: &(dyn std::error::Error + 'static)) -> Error {
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn redaction() {
        assert_eq!(
            redact("https://u:secret@mirror.example/x"),
            "https://mirror.example/x"
        );
        assert_eq!(
            redact("https://mirror.example/x"),
            "https://mirror.example/x"
        );
    }
}
