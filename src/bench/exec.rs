//! Running one TSBS tool: its own process group (dies with tsbsctl), stdout and stderr merged
//! into one log that starts with the redacted command line, a dataset streamed to stdin when
//! asked, and a watch loop that stops the tool on Ctrl-C or when the server it talks to dies.

use std::fs::{File, OpenOptions};
use std::io::{Read, Write};
use std::path::Path;
use std::process::{ExitStatus, Stdio};
use std::time::{Duration, Instant};

use crate::error::{Error, Result};
use crate::interrupt;
use crate::tsbs::TsbsCommand;

/// How a tool run ended.
#[derive(Debug)]
pub enum ToolEnd {
    /// The tool exited by itself.
    Exited(ExitStatus),
    /// Ctrl-C: the tool was stopped.
    Interrupted,
    /// The watch said the server is gone (the reason); the tool was stopped.
    ServerGone(String),
}

/// CPU time tsbsctl itself and the tool used while the tool ran (so overhead can be checked
/// against the tool's own work), and tsbsctl's peak RSS.
#[derive(Debug, Clone, Copy, Default, serde::Serialize)]
pub struct Usage {
    pub tsbsctl_cpu_seconds: f64,
    pub tool_cpu_seconds: f64,
    pub tsbsctl_max_rss_kib: i64,
    pub wall_seconds: f64,
}

fn rusage(who: libc::c_int) -> (f64, i64) {
    // SAFETY: getrusage fills the struct we pass; both `who` values are valid.
    let mut u: libc::rusage = unsafe { std::mem::zeroed() };
    unsafe { libc::getrusage(who, &mut u) };
    let t = |tv: libc::timeval| tv.tv_sec as f64 + tv.tv_usec as f64 / 1e6;
    (t(u.ru_utime) + t(u.ru_stime), u.ru_maxrss)
}

/// Runs `cmd` from a private directory under `cwd` with its output in `log`. `stdin` is streamed to the tool when given.
/// `watch` is called about every 200 ms; `Some(reason)` stops the tool.
pub fn run_tool(
    cmd: &TsbsCommand,
    cwd: &Path,
    log: &Path,
    stdin: Option<Box<dyn Read + Send>>,
    watch: &mut dyn FnMut() -> Option<String>,
) -> Result<(ToolEnd, Usage)> {
    let (self0, _) = rusage(libc::RUSAGE_SELF);
    let (child0, _) = rusage(libc::RUSAGE_CHILDREN);
    let started = Instant::now();
    if let Some(parent) = log.parent() {
        std::fs::create_dir_all(parent).map_err(|e| Error::io("create", parent, e))?;
    }
    let mut file = OpenOptions::new()
        .create(true)
        .truncate(true)
        .write(true)
        .open(log)
        .map_err(|e| Error::io("create the log", log, e))?;
    writeln!(file, "{}", cmd.log_line()).map_err(|e| Error::io("write", log, e))?;
    let err = file
        .try_clone()
        .map_err(|e| Error::io("open the log", log, e))?;
    // `_tool_dir` (the private cwd with the tokens) lives until the tool has exited.
    let (mut c, _tool_dir) = cmd.command(cwd)?;
    c.stdout(Stdio::from(file)).stderr(Stdio::from(err));
    c.stdin(if stdin.is_some() {
        Stdio::piped()
    } else {
        Stdio::null()
    });
    crate::server::configure_child(&mut c);
    let mut child = c.spawn().map_err(|e| {
        Error::failed(format!("could not start {}: {e}", cmd.program.display()))
            .with_hint("check the TSBS build with `tsbsctl env verify`")
    })?;
    let feeder = match (stdin, child.stdin.take()) {
        (Some(mut src), Some(mut dst)) => Some(std::thread::spawn(move || {
            // A closed pipe (the tool exited) ends the copy; the tool's exit says why.
            let _ = std::io::copy(&mut src, &mut dst);
        })),
        _ => None,
    };
    let pid = child.id() as libc::pid_t;
    let mut last_watch = Instant::now();
    let end = loop {
        match child.try_wait() {
            Ok(Some(status)) => break ToolEnd::Exited(status),
            Ok(None) => {}
            Err(e) => return Err(Error::failed(format!("waiting for {}: {e}", cmd.tool()))),
        }
        if interrupt::requested() {
            stop_group(pid, &mut child);
            break ToolEnd::Interrupted;
        }
        if last_watch.elapsed() >= Duration::from_millis(200) {
            last_watch = Instant::now();
            if let Some(reason) = watch() {
                stop_group(pid, &mut child);
                break ToolEnd::ServerGone(reason);
            }
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    if let Some(f) = feeder {
        let _ = f.join();
    }
    let (self1, rss) = rusage(libc::RUSAGE_SELF);
    let (child1, _) = rusage(libc::RUSAGE_CHILDREN);
    let usage = Usage {
        tsbsctl_cpu_seconds: self1 - self0,
        tool_cpu_seconds: child1 - child0,
        tsbsctl_max_rss_kib: rss,
        wall_seconds: started.elapsed().as_secs_f64(),
    };
    Ok((end, usage))
}

/// SIGTERM to the tool's group, 2 s, then SIGKILL; always reaps.
fn stop_group(pid: libc::pid_t, child: &mut std::process::Child) {
    // SAFETY: signalling the process group of a child we spawned.
    unsafe { libc::kill(-pid, libc::SIGTERM) };
    let deadline = Instant::now() + Duration::from_secs(2);
    while Instant::now() < deadline {
        if let Ok(Some(_)) = child.try_wait() {
            return;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    // SAFETY: as above.
    unsafe { libc::kill(-pid, libc::SIGKILL) };
    let _ = child.wait();
}

/// Reads a log as text (lossy), for the parsers.
pub fn read_log(path: &Path) -> String {
    let mut s = Vec::new();
    if let Ok(mut f) = File::open(path) {
        let _ = f.read_to_end(&mut s);
    }
    String::from_utf8_lossy(&s).into_owned()
}
