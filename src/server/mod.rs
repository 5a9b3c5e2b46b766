//! The server supervisor shared by every product and by the benchmarks.
//!
//! One [`Server`] is one managed database process:
//!
//! 1. [`Server::start`] looks for an orphan left by an earlier tsbsctl (the `server.pid` record
//!    in the workspace), probes every listener port the server will open, then spawns the
//!    program in its own process group with stdout/stderr appended to a log file. On Linux the
//!    child also gets `PR_SET_PDEATHSIG(SIGKILL)`, so it dies with tsbsctl even after a SIGKILL.
//! 2. [`Server::wait_ready`] polls the readiness probe until it answers 200, the process exits
//!    (early failure), the startup timeout passes, or Ctrl-C arrives (the server is stopped and
//!    the error is `Interrupted`, exit 130).
//! 3. [`Server::check_running`] / [`Server::serve_until_interrupted`] watch a ready server.
//! 4. [`Server::stop`] sends SIGTERM to the group, waits the grace period, then SIGKILLs the
//!    group. Dropping a `Server` stops it too.
//!
//! Every step is recorded as an [`Event`] with a UTC timestamp; callers copy
//! [`Server::events`] into their manifests (run directories, a product's workspace operation records).
//!
//! Spawning, signals and log pumps go through [`crate::proc`].
//!
//! Caveat: the parent-death signal fires when the *thread* that spawned the child exits, so
//! call [`Server::start`] from a thread that lives as long as the server (the main thread).
//!
//! `supervisor.rs` is the life of one server; `orphan.rs` the `server.pid` record and what a
//! start does with one left behind; `cgroup.rs` the machine shape (`--cpus`, `--memory`) a
//! server can be held to.

pub mod cgroup;
mod orphan;
mod supervisor;

use std::fs::File;
use std::io::{Read, Seek, SeekFrom};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use nix::sys::signal::Signal;
use serde::{Deserialize, Serialize};

pub use crate::proc::process_start_time;
pub use orphan::{read_pid_record, record_alive, PidRecord};
pub use supervisor::{probe_ports, Server};

/// How readiness is probed (one HTTP request, HTTP 200 means ready; or one command, exit 0
/// means ready).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Probe {
    /// A readiness command for servers that speak no HTTP (PostgreSQL: `pg_isready -h ... -p
    /// ...`), given at most the probe's 2 s.
    Command {
        program: std::path::PathBuf,
        args: Vec<String>,
        /// Run the command only once the server's status file says it is ready, so that the
        /// probe never connects while it would be refused (PostgreSQL logs a FATAL line for
        /// every connection during startup or recovery).
        gate: Option<StatusGate>,
    },
    /// `GET url` (InfluxDB 3: `/health`).
    Get { url: String },
    /// `POST url` with an `application/x-www-form-urlencoded` body (GreptimeDB: `/v1/sql` with
    /// `sql=SHOW DATABASES`).
    PostForm { url: String, body: String },
}

/// A file in which the server states its own condition (PostgreSQL's `postmaster.pid`: its
/// first line the postmaster's pid, its eighth `starting`, `ready`, `standby` or `stopping`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StatusGate {
    pub path: std::path::PathBuf,
    /// The 1-based line that must hold the supervised process's pid (a file left by another
    /// process does not count), if any.
    pub pid_line: Option<usize>,
    /// The 1-based line that must read [`StatusGate::ready`] (trimmed).
    pub status_line: usize,
    pub ready: String,
}

impl StatusGate {
    /// True when the file says the process `pid` is ready.
    pub fn open(&self, pid: u32) -> bool {
        let Ok(text) = std::fs::read_to_string(&self.path) else {
            return false;
        };
        let lines: Vec<&str> = text.lines().collect();
        let line = |n: usize| lines.get(n.wrapping_sub(1)).map(|l| l.trim());
        if let Some(n) = self.pid_line {
            if line(n) != Some(pid.to_string().as_str()) {
                return false;
            }
        }
        line(self.status_line) == Some(self.ready.as_str())
    }
}

/// One TCP listener the server will open on 127.0.0.1 (probed before the start).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Listener {
    /// `http`, `grpc`, `mysql`, `postgres`, ...
    pub name: String,
    pub port: u16,
}

/// Timeouts of one server session. Every wait polls Ctrl-C.
#[derive(Debug, Clone, Copy)]
pub struct Timing {
    /// From spawn to the first successful probe.
    pub startup_timeout: Duration,
    /// From SIGTERM to SIGKILL; with [`Timing::drain_limit`], from the server's last sign of
    /// progress to SIGKILL.
    pub grace: Duration,
    /// Servers that drain on SIGTERM (GreptimeDB finishes every queued flush and compaction
    /// first): the stop waits while the process makes progress (its log grows or it uses
    /// CPU), up to this limit; `None`: `grace` is a fixed bound.
    pub drain_limit: Option<Duration>,
    /// What a slow start is waiting for, shown on a terminal ("replaying its WAL").
    pub startup_wait: Option<&'static str>,
    /// How long a busy port is retried before the start fails (a server that just stopped may
    /// still be releasing it).
    pub port_wait: Duration,
    /// Pause between readiness probes.
    pub poll_interval: Duration,
    /// The signal that asks the server to stop (PostgreSQL: SIGINT, its fast shutdown;
    /// SIGTERM would wait for every client). SIGKILL still follows the grace period.
    pub stop_signal: Signal,
}

impl Default for Timing {
    fn default() -> Self {
        Timing {
            startup_timeout: Duration::from_secs(60),
            grace: Duration::from_secs(15),
            drain_limit: None,
            startup_wait: None,
            port_wait: Duration::from_secs(5),
            poll_interval: Duration::from_millis(250),
            stop_signal: Signal::SIGTERM,
        }
    }
}

/// Everything needed to run one server process.
#[derive(Debug, Clone)]
pub struct ServerSpec {
    /// Names the server in messages: "GreptimeDB 1.2.0".
    pub label: String,
    pub program: PathBuf,
    pub args: Vec<String>,
    pub cwd: PathBuf,
    /// Variables added to the inherited environment.
    pub env: Vec<(String, String)>,
    /// Variables removed from the inherited environment (secrets the server must not see).
    pub env_remove: Vec<String>,
    /// stdout and stderr are appended here, after a `$ command` header line.
    pub log_path: PathBuf,
    /// Every listener the server opens; all are probed before the start.
    pub listeners: Vec<Listener>,
    /// The base URL clients use: `http://127.0.0.1:4000`.
    pub endpoint: String,
    pub probe: Probe,
    /// The workspace's `server.pid` record (see [`PidRecord`]).
    pub pid_file: PathBuf,
    /// Stop a live orphan found in `pid_file` instead of refusing to start.
    pub kill_orphan: bool,
    /// What the user passes to get `kill_orphan` (named in the refusal): `--kill-orphan`.
    pub kill_orphan_flag: String,
    pub timing: Timing,
    /// When set, the server's stdout and stderr go through this line filter on their way to
    /// the log (a product's operation redacts the secrets it passes to the server this way).
    /// Without it the log file is the process's stdout/stderr directly.
    pub output_filter: Option<OutputFilter>,
    /// Picks the lines of the server log that explain a failed start (PostgreSQL's `FATAL`
    /// lines); they go into the error message. `None`: the message points at the log only.
    pub failure_lines: Option<fn(&str) -> Vec<String>>,
    /// The machine shape to hold the server to (its own cgroup); `None`: the whole host.
    pub shape: Option<cgroup::Shape>,
}

/// A line filter for server output: gets one line (without its newline, lossily decoded),
/// returns what is written to the log instead.
#[derive(Clone)]
pub struct OutputFilter(pub Arc<dyn Fn(&str) -> String + Send + Sync>);

impl std::fmt::Debug for OutputFilter {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("OutputFilter(..)")
    }
}

/// One step of a server's life, with its UTC time.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Event {
    pub at: String,
    #[serde(flatten)]
    pub kind: EventKind,
}

/// What happened.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "event", rename_all = "snake_case")]
pub enum EventKind {
    /// A `server.pid` record from an earlier tsbsctl was found.
    OrphanFound { pid: u32, alive: bool },
    /// A live orphan was stopped (`--kill-orphan`).
    OrphanStopped { pid: u32, forced: bool },
    /// The process was spawned.
    Started {
        pid: u32,
        command: String,
        log: PathBuf,
    },
    /// The readiness probe answered 200.
    Ready { after_ms: u64 },
    /// The start failed (exit during start, timeout, interrupt); `reason` says which.
    StartupFailed { reason: String },
    /// SIGTERM was sent to the process group.
    Stopping { grace_ms: u64 },
    /// The grace period passed; SIGKILL was sent to the group.
    ForcedKill,
    /// The process was started in its own cgroup of this shape.
    Shaped { cgroup: String },
    /// Why an unexpected exit was the kernel's OOM killer (the evidence, in words).
    OutOfMemory { evidence: String },
    /// The process exited without being asked to.
    UnexpectedExit {
        code: Option<i32>,
        signal: Option<i32>,
    },
    /// The process is gone (always the last event).
    Exited {
        code: Option<i32>,
        signal: Option<i32>,
    },
}

/// How a stop went.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct StopOutcome {
    pub code: Option<i32>,
    pub signal: Option<i32>,
    /// SIGKILL was needed.
    pub forced: bool,
    /// The process had exited before anyone asked it to.
    pub unexpected: bool,
    /// Asked to stop, it ended by a signal that was neither the stop signal nor tsbsctl's
    /// SIGKILL (another process killed it during its shutdown, or the kernel's OOM killer):
    /// not a clean stop, whatever the exit looked like.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub killed: bool,
    /// From SIGTERM to the exit (0 when no stop was needed).
    #[serde(default)]
    pub stop_ms: u64,
}

fn event(kind: EventKind) -> Event {
    Event { at: now(), kind }
}

/// UTC now, RFC 3339 with microseconds and `Z`.
fn now() -> String {
    let t = time::OffsetDateTime::now_utc();
    let fmt = time::macros::format_description!(
        "[year]-[month]-[day]T[hour]:[minute]:[second].[subsecond digits:6]Z"
    );
    t.format(&fmt).unwrap_or_default()
}

/// The last `max_bytes` of a log, for error messages and diagnostics.
pub fn log_tail(path: &Path, max_bytes: u64) -> String {
    let Ok(mut f) = File::open(path) else {
        return String::new();
    };
    let len = f.metadata().map(|m| m.len()).unwrap_or(0);
    let _ = f.seek(SeekFrom::Start(len.saturating_sub(max_bytes)));
    let mut buf = Vec::new();
    let _ = f.read_to_end(&mut buf);
    String::from_utf8_lossy(&buf).into_owned()
}

#[cfg(test)]
mod testkit {
    use std::path::Path;
    use std::time::Duration;

    use nix::sys::signal::Signal;

    use super::*;

    pub(super) fn free_port() -> u16 {
        testbed::ports::free_port_block(1)
    }

    pub(super) fn spec(dir: &Path, script: &str, port: u16) -> ServerSpec {
        ServerSpec {
            label: "test server".into(),
            program: "/bin/sh".into(),
            args: vec!["-c".into(), script.into()],
            cwd: dir.to_path_buf(),
            env: vec![],
            env_remove: vec![],
            log_path: dir.join("logs/server.log"),
            listeners: vec![Listener {
                name: "http".into(),
                port,
            }],
            endpoint: format!("http://127.0.0.1:{port}"),
            probe: Probe::Get {
                url: format!("http://127.0.0.1:{port}/health"),
            },
            pid_file: dir.join("server.pid"),
            kill_orphan: false,
            kill_orphan_flag: "--kill-orphan".into(),
            timing: Timing {
                startup_timeout: Duration::from_secs(2),
                grace: Duration::from_millis(300),
                port_wait: Duration::from_millis(200),
                poll_interval: Duration::from_millis(50),
                drain_limit: None,
                startup_wait: None,
                stop_signal: Signal::SIGTERM,
            },
            output_filter: None,
            failure_lines: None,
            shape: None,
        }
    }

    pub(super) fn kinds(s: &Server) -> Vec<String> {
        s.events()
            .iter()
            .map(|e| {
                serde_json::to_value(&e.kind).unwrap()["event"]
                    .as_str()
                    .unwrap()
                    .to_string()
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The gate opens only on the supervised pid's own file saying `ready` (PostgreSQL's
    /// `postmaster.pid`: pid, data dir, start time, port, socket dir, listen address, shared
    /// memory key, status).
    #[test]
    fn the_status_gate_opens_on_the_servers_own_ready_line() {
        let dir = tempfile::tempdir().unwrap();
        let gate = StatusGate {
            path: dir.path().join("postmaster.pid"),
            pid_line: Some(1),
            status_line: 8,
            ready: "ready".into(),
        };
        assert!(!gate.open(4242), "no file yet");
        let file = |status: &str| {
            format!("4242\n/d\n1764758579\n25999\n/s\n127.0.0.1\n  1234567   1\n{status}\n")
        };
        std::fs::write(&gate.path, file("starting")).unwrap();
        assert!(!gate.open(4242));
        // PostgreSQL pads the status to 8 characters.
        std::fs::write(&gate.path, file("ready   ")).unwrap();
        assert!(gate.open(4242));
        assert!(!gate.open(4243), "another process's file");
        std::fs::write(&gate.path, file("stopping")).unwrap();
        assert!(!gate.open(4242));
        std::fs::write(&gate.path, "4242\n/d\n").unwrap();
        assert!(!gate.open(4242), "status line not written yet");
    }
}
