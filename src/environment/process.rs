//! Running the outside programs this area needs (`go`, `git`) with a time bound, an explicit
//! environment and interrupt handling, on [`crate::proc`]: each runs in its own process group,
//! so a timeout or Ctrl-C stops the compilers and helpers it started too.

use std::io::Read;
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use crate::error::Error;

/// What a finished child printed.
#[derive(Debug)]
pub struct Captured {
    pub status: std::process::ExitStatus,
    pub stdout: String,
    pub stderr: String,
}

impl Captured {
    /// stderr, or stdout when stderr is empty, trimmed (for error messages).
    pub fn diagnostic(&self) -> String {
        let e = self.stderr.trim();
        if e.is_empty() {
            self.stdout.trim().to_string()
        } else {
            e.to_string()
        }
    }
}

/// Why [`run_capture`] gave up.
#[derive(Debug)]
pub enum RunError {
    /// The program could not be started.
    Spawn(std::io::Error),
    /// It did not finish within the bound and was killed.
    TimedOut,
    /// Ctrl-C / SIGTERM arrived; the child was killed.
    Interrupted,
}

/// Runs `cmd` to completion with stdin closed, capturing both streams, killing it after
/// `limit` or on an interrupt.
pub fn run_capture(mut cmd: Command, limit: Duration) -> std::result::Result<Captured, RunError> {
    cmd.stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    crate::proc::configure(&mut cmd);
    let mut child = cmd.spawn().map_err(RunError::Spawn)?;
    let out = reader(child.stdout.take());
    let err = reader(child.stderr.take());
    let status = wait_bounded(&mut child, Some(limit))?;
    Ok(Captured {
        status,
        stdout: out.join().unwrap_or_default(),
        stderr: err.join().unwrap_or_default(),
    })
}

fn reader<R: Read + Send + 'static>(r: Option<R>) -> std::thread::JoinHandle<String> {
    std::thread::spawn(move || {
        let mut buf = Vec::new();
        if let Some(mut r) = r {
            let _ = r.read_to_end(&mut buf);
        }
        String::from_utf8_lossy(&buf).into_owned()
    })
}

/// Waits for `child` (spawned with [`crate::proc::configure`]), polling for interrupts; stops
/// its group on timeout or interrupt.
pub fn wait_bounded(
    child: &mut Child,
    limit: Option<Duration>,
) -> std::result::Result<std::process::ExitStatus, RunError> {
    let w = crate::proc::WaitFor {
        limit,
        grace: Duration::from_secs(2),
        ..Default::default()
    };
    match crate::proc::wait(child, &w, &mut || None::<()>).map_err(RunError::Spawn)? {
        crate::proc::Waited::Exited(st) => Ok(st),
        crate::proc::Waited::Interrupted => Err(RunError::Interrupted),
        crate::proc::Waited::TimedOut | crate::proc::Waited::Stopped(()) => Err(RunError::TimedOut),
    }
}

impl RunError {
    /// As a tool error about running `what` (e.g. "Go binary /usr/bin/go").
    pub fn into_error(self, what: &str) -> Error {
        match self {
            RunError::Spawn(e) => Error::failed(format!("could not execute {what}: {e}")),
            RunError::TimedOut => Error::failed(format!("{what} did not finish in time")),
            RunError::Interrupted => {
                Error::interrupted(format!("interrupted while running {what}"))
                    .with_hint("run the command again to continue")
            }
        }
    }
}

/// Environment variables passed through to `git` and `go` because they configure the network
/// (proxies, module proxy, CA certificates). Their values are never recorded: a proxy URL can
/// carry credentials.
pub const NETWORK_PASSTHROUGH: &[&str] = &[
    "http_proxy",
    "https_proxy",
    "no_proxy",
    "HTTP_PROXY",
    "HTTPS_PROXY",
    "NO_PROXY",
    "ALL_PROXY",
    "all_proxy",
    "SSL_CERT_FILE",
    "SSL_CERT_DIR",
    "GOPROXY",
    "GOSUMDB",
    "GONOSUMDB",
    "GOPRIVATE",
    "GONOPROXY",
    "GOINSECURE",
];
