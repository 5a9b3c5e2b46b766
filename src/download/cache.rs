//! The cache of verified downloads under `<root>/downloads/<sha256>/`: a published entry that
//! still hashes to its name is reused without a request; otherwise one process per entry (the
//! cache lock) streams the file into a `.partial`, hashing on the way, resumes it with `Range`
//! after a network error, and publishes it by rename only when the digest matches.

use std::fs;

use fs_err::{File, OpenOptions};
use std::io::{Read, Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};
use std::time::Duration;

use reqwest::blocking::Response;
use reqwest::header::HeaderMap;
use reqwest::StatusCode;

use crate::error::{Error, Result};
use crate::hash::Sha256;
use crate::output::{Event, NoProgress, Progress, Unit, Warning};
use crate::sources::file_url_path;

use super::checksum::normalize_digest;
use super::client::{after_attempts, net_error, not_found, redact, sleep_interruptible, Failure};
use super::{Downloader, ACCEPT_ARTIFACT};

/// Resumes allowed after failures that did make progress (a long download on a bad link).
const MAX_RESUMES: u32 = 16;
/// Bytes gathered from the socket before one write + hash step.
const CHUNK: usize = 1 << 20;

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

/// How one HTTP transfer of an archive ended.
enum Step {
    Done,
    /// 416 to our Range: the partial may already be whole; `total` from `Content-Range`.
    RangeNotSatisfiable {
        total: Option<u64>,
    },
}

impl Downloader {
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
        fs_err::create_dir_all(&dir)?;

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
        self.reporter.event(&Event::Downloading {
            file: file_name.to_string(),
            url: redact(url),
        });
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
            self.reporter.event(&Event::UsingVerifiedDownload {
                path: path.to_path_buf(),
            });
            return Ok(Some(Verified {
                path: path.to_path_buf(),
                sha256: actual,
                size,
                url: url.to_string(),
                cached: true,
            }));
        }
        self.reporter.warning(&Warning::DamagedDownload {
            path: path.to_path_buf(),
            sha256: actual.to_string(),
        });
        fs_err::remove_file(path)?;
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
        let mut input = match fs_err::File::open(src) {
            Ok(f) => f,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                return Err(not_found(url, self.hint_for(url)))
            }
            Err(e) => return Err(e.into()),
        };
        if let Ok(m) = input.metadata() {
            progress.set_total(m.len());
        }
        let mut out = fs_err::File::create(partial)?;
        let mut hasher = Sha256::new();
        let mut buf = vec![0u8; CHUNK];
        let mut size = 0u64;
        loop {
            crate::interrupt::check()?;
            let n = match input.read(&mut buf) {
                Ok(0) => break,
                Ok(n) => n,
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
                Err(e) => return Err(e.into()),
            };
            out.write_all(&buf[..n])?;
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
        out.sync_all()?;
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
            .open(partial)?;
        // A partial left by an earlier attempt or run: its bytes go through the hasher once,
        // so the final digest covers the whole file.
        let mut hasher = Sha256::new();
        let mut have = crate::hash::hash_reader(&mut file, &mut hasher, &NoProgress)?;
        // True when the bytes came from more than one response: a mismatch may then be a
        // stale partial, so one fresh download is tried before giving up.
        let mut mixed = have > 0;
        let mut fresh_retry_used = false;
        let mut failures = 0u32;
        let mut resumes = 0u32;
        loop {
            crate::interrupt::check()?;
            let before = have;
            let step = self.transfer(url, &mut file, &mut hasher, &mut have, &mut mixed, progress);
            let outcome = match step {
                Ok(Step::Done) => None,
                Ok(Step::RangeNotSatisfiable { total }) => {
                    if total.is_none_or(|t| t == have) && hasher.clone().finish_hex() == expected {
                        None
                    } else {
                        // The partial is longer than the file or wrong: start over.
                        reset(&mut file, &mut hasher, &mut have)?;
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
                        file.sync_all()?;
                        return Ok(have);
                    }
                    if mixed && !fresh_retry_used {
                        fresh_retry_used = true;
                        self.reporter.warning(&Warning::ResumedDownloadBad {
                            url: redact(url).to_string(),
                        });
                        reset(&mut file, &mut hasher, &mut have)?;
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
                    self.reporter.event(&Event::Retrying {
                        error: err.message.clone(),
                        delay,
                        from_byte: (have > 0).then_some(have),
                    });
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
                    reset(file, hasher, have)?;
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
                    self.reporter.event(&Event::NoResume { url: redact(url) });
                    reset(file, hasher, have)?;
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
        let streamed = stream_body(&mut resp, file, &mut pipe, have, progress, url);
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

/// Copies the response body to the partial file in CHUNK-sized writes, hashing through
/// `pipe`; `have` counts what is on disk.
fn stream_body(
    resp: &mut Response,
    file: &mut File,
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
                .map_err(|e| Failure::Fatal(e.into()))?;
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

fn reset(file: &mut File, hasher: &mut Sha256, have: &mut u64) -> Result<()> {
    file.set_len(0)?;
    file.seek(SeekFrom::Start(0))?;
    *hasher = Sha256::new();
    *have = 0;
    Ok(())
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

#[cfg(test)]
mod tests {
    use super::*;
    use reqwest::header::HeaderValue;

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
    fn file_names() {
        assert!(validate_file_name("go1.21.13.linux-amd64.tar.gz").is_ok());
        for bad in ["", "..", "a/b", ".hidden", "x.partial"] {
            assert_eq!(validate_file_name(bad).unwrap_err().exit_code(), 2);
        }
    }
}
