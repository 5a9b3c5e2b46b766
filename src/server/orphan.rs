//! The `server.pid` record a managed server leaves beside its data while it runs, and what a
//! start does with a record left by an earlier tsbsctl: a dead one is reported and removed, a
//! live orphan is refused (exit 3) or, when asked, stopped.

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use nix::sys::signal::Signal;
use serde::{Deserialize, Serialize};

use crate::error::{Error, Result};
use crate::fsutil;
use crate::output::{Reporter, Warning};
use crate::proc::{is_zombie, process_start_time, signal_group};

use super::{event, Event, EventKind, ServerSpec};

/// The `server.pid` record written beside the data while a managed server runs, and removed
/// when it is stopped. A record whose process still runs on the next start is an orphan.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PidRecord {
    pub pid: u32,
    /// The process group (equal to `pid`: the server leads its own group).
    pub pgid: u32,
    /// The kernel's start time of the process (Linux: clock ticks since boot, field 22 of
    /// `/proc/<pid>/stat`), so a recycled pid is not mistaken for the server.
    pub start_time: Option<u64>,
    pub program: PathBuf,
    pub log: PathBuf,
    pub started_at: String,
    /// The tsbsctl process that started it.
    pub tsbsctl_pid: u32,
}

/// Reads the `server.pid` record, if any.
pub fn read_pid_record(path: &Path) -> Result<Option<PidRecord>> {
    match fs_err::read(path) {
        Ok(bytes) => serde_json::from_slice(&bytes).map(Some).map_err(|e| {
            Error::integrity(format!(
                "{} is not a server pid record: {e}",
                path.display()
            ))
            .with_hint("remove the file once you made sure no server of this workspace runs")
        }),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
        Err(e) => Err(e.into()),
    }
}

/// True when the process of `rec` still runs (same pid and, where known, same start time).
pub fn record_alive(rec: &PidRecord) -> bool {
    if !fsutil::process_alive(rec.pid as i32) || is_zombie(rec.pid) {
        return false;
    }
    match (rec.start_time, process_start_time(rec.pid)) {
        (Some(a), Some(b)) => a == b,
        _ => true,
    }
}

/// Looks at the workspace's `server.pid`: a dead record is reported and removed; a live orphan
/// is refused (exit 3, naming the pid) unless `spec.kill_orphan`, which stops it.
pub(super) fn handle_orphan(
    spec: &ServerSpec,
    reporter: &dyn Reporter,
    events: &mut Vec<Event>,
) -> Result<()> {
    let Some(rec) = read_pid_record(&spec.pid_file)? else {
        return Ok(());
    };
    let alive = record_alive(&rec);
    events.push(event(EventKind::OrphanFound {
        pid: rec.pid,
        alive,
    }));
    if !alive {
        reporter.warning(&Warning::OrphanGone {
            pid: rec.pid,
            started_at: rec.started_at.clone(),
            tsbsctl_pid: rec.tsbsctl_pid,
            log: rec.log.clone(),
        });
        let _ = std::fs::remove_file(&spec.pid_file);
        return Ok(());
    }
    if !spec.kill_orphan {
        return Err(Error::busy(format!(
            "an orphaned server (pid {}, {}) started at {} by tsbsctl pid {} still runs on this workspace",
            rec.pid,
            rec.program.display(),
            rec.started_at,
            rec.tsbsctl_pid
        ))
        .with_hint(format!(
            "stop it by rerunning with {}, or `kill -TERM -{}` yourself",
            spec.kill_orphan_flag, rec.pgid
        )));
    }
    reporter.warning(&Warning::StoppingOrphan {
        pid: rec.pid,
        grace: spec.timing.grace,
    });
    let forced = stop_orphan(&rec, spec.timing.grace);
    events.push(event(EventKind::OrphanStopped {
        pid: rec.pid,
        forced,
    }));
    if record_alive(&rec) {
        return Err(
            Error::failed(format!("orphaned server pid {} did not stop", rec.pid))
                .with_hint("stop it by hand, then run the command again"),
        );
    }
    let _ = std::fs::remove_file(&spec.pid_file);
    Ok(())
}

/// SIGTERM to the orphan's group, wait, SIGKILL. Returns true when SIGKILL was needed.
fn stop_orphan(rec: &PidRecord, grace: Duration) -> bool {
    signal_group(rec.pgid, Signal::SIGTERM);
    if wait_gone(rec, grace) {
        return false;
    }
    signal_group(rec.pgid, Signal::SIGKILL);
    wait_gone(rec, Duration::from_secs(10));
    true
}

fn wait_gone(rec: &PidRecord, limit: Duration) -> bool {
    let deadline = Instant::now() + limit;
    loop {
        if !record_alive(rec) {
            return true;
        }
        if Instant::now() >= deadline {
            return false;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

pub(super) fn remove_pid_record(path: &Path, pid: u32) {
    if let Ok(Some(rec)) = read_pid_record(path) {
        if rec.pid == pid {
            let _ = std::fs::remove_file(path);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::super::testkit::{free_port, kinds, spec};
    use super::super::Server;
    use super::*;
    use crate::output::SilentReporter;

    #[test]
    fn pid_record_is_written_while_running_and_removed_on_drop() {
        let dir = tempfile::tempdir().unwrap();
        let s = Server::start(
            spec(dir.path(), "exec sleep 30", free_port()),
            &SilentReporter,
        )
        .unwrap();
        let pid = s.pid();
        let rec = read_pid_record(&dir.path().join("server.pid"))
            .unwrap()
            .unwrap();
        assert_eq!(rec.pid, pid);
        assert!(record_alive(&rec));
        drop(s);
        assert!(!fsutil::process_alive(pid as i32));
        assert!(!dir.path().join("server.pid").exists());
    }

    #[test]
    fn live_orphan_is_refused_then_stopped_on_request() {
        let dir = tempfile::tempdir().unwrap();
        let port = free_port();
        let first =
            Server::start(spec(dir.path(), "exec sleep 30", port), &SilentReporter).unwrap();
        let orphan = first.pid();
        // Simulate a tsbsctl that died without stopping its server.
        std::mem::forget(first);
        let err =
            Server::start(spec(dir.path(), "exec sleep 30", port), &SilentReporter).unwrap_err();
        assert_eq!(err.exit_code(), 3);
        assert!(err.message.contains(&orphan.to_string()));
        let mut sp = spec(dir.path(), "exec sleep 30", port);
        sp.kill_orphan = true;
        let s = Server::start(sp, &SilentReporter).unwrap();
        assert!(kinds(&s).starts_with(&["orphan_found".into(), "orphan_stopped".into()]));
        // The forgotten Child is never reaped by us, so it stays a zombie in this test process.
        assert!(!fsutil::process_alive(orphan as i32) || is_zombie(orphan));
    }
}
