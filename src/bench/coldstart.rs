//! Cold queries (`--cold`): before each query type the managed server is stopped, the OS page
//! cache emptied and the server started again, so a type reads from disk what it reads, not
//! what the type before it left in memory (ClickBench's rule for cold runs). A restart alone
//! would leave the page cache warm; dropping the cache alone would leave the server's own
//! caches warm; both are needed.

use std::io::Write;
use std::path::Path;
use std::time::Instant;

use crate::error::{Error, Result};
use crate::run::data::{self, ColdStartData};
use crate::run::Status;

use super::Bench;

/// Writing 3 here frees the page cache, dentries and inodes (clean pages only: hence `sync`).
pub const DROP_CACHES: &str = "/proc/sys/vm/drop_caches";

/// Whether this process may drop the page cache through `path`: opening it for writing is the
/// permission check (nothing is dropped until something is written). Refused with the reason
/// (exit 2) before anything is touched.
pub fn check_allowed(path: &Path) -> Result<()> {
    let Err(e) = std::fs::OpenOptions::new().write(true).open(path) else {
        return Ok(());
    };
    let why = match e.raw_os_error() {
        Some(libc::EACCES) | Some(libc::EPERM) => {
            "only root may drop the OS page cache".to_string()
        }
        Some(libc::EROFS) => {
            "/proc/sys is mounted read-only here (a container without that privilege)".to_string()
        }
        Some(libc::ENOENT) => "this system has no /proc/sys/vm/drop_caches (not Linux?)".into(),
        _ => e.to_string(),
    };
    Err(Error::invalid(format!(
        "--cold drops the OS page cache through {}, which this process cannot do: {why}",
        path.display()
    ))
    .with_hint("run as root on the benchmark host, or drop --cold (a warm run)"))
}

/// Flushes dirty pages, then drops the clean ones. Returns the seconds it took.
pub fn drop_page_cache(path: &Path) -> Result<f64> {
    let started = Instant::now();
    // SAFETY: sync(2) takes no arguments and cannot fail.
    unsafe { libc::sync() };
    std::fs::OpenOptions::new()
        .write(true)
        .open(path)
        .and_then(|mut f| f.write_all(b"3\n"))
        .map_err(|e| Error::io("drop the page cache through", path, e))?;
    Ok(started.elapsed().as_secs_f64())
}

impl Bench<'_> {
    /// The cold start before query type `qt`: stop, drop the page cache, start (each start is
    /// a server step with its ready time; this step says why it happened).
    pub(super) fn cold_start(&mut self, qt: &str, pass: u32) -> Result<()> {
        let started = Instant::now();
        self.stop_server()?;
        let drop_seconds = drop_page_cache(Path::new(DROP_CACHES))?;
        self.start_server()?;
        let attempt = self.run.next_attempt("cold-start")?;
        self.run.instant(
            "cold-start",
            attempt,
            Status::Completed,
            None,
            Some(data::value(&ColdStartData {
                before_query_type: Some(qt.to_string()),
                pass: Some(pass),
                server_attempt: Some(self.server_attempt),
                page_cache_dropped: Some(true),
                drop_seconds: Some(drop_seconds),
                seconds: Some(started.elapsed().as_secs_f64()),
            })),
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_file_that_cannot_be_written_is_refused_with_the_reason() {
        let d = tempfile::tempdir().unwrap();
        let missing = d.path().join("nope/drop_caches");
        let e = check_allowed(&missing).unwrap_err();
        assert_eq!(e.exit_code(), 2);
        assert!(e.to_string().contains("no /proc/sys/vm/drop_caches"), "{e}");
        let writable = d.path().join("drop_caches");
        std::fs::write(&writable, "").unwrap();
        check_allowed(&writable).unwrap();
        drop_page_cache(&writable).unwrap();
        assert_eq!(std::fs::read_to_string(&writable).unwrap(), "3\n");
    }
}
