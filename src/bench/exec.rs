//! Running one TSBS tool: its own process group (dies with tsbsctl; see [`crate::proc`]), stdout and stderr merged
//! into one log that starts with the redacted command line, its input (a file it reads itself,
//! watched so a run can prove the bytes it read, or a compressed dataset streamed to stdin and
//! hashed on its way; see [`Input`]), and a watch loop that stops the tool on Ctrl-C, when the
//! server it talks to dies, or when its input file changes. An [`Observer`] sees the log's
//! new lines as the tool writes them (progress, stalls) without sitting in the tool's output
//! path: the tool writes straight to the log file, tsbsctl only tails it.

use std::fs::{File, OpenOptions};
use std::io::{Read, Write};
use std::path::Path;
use std::process::{ExitStatus, Stdio};
use std::time::{Duration, Instant};

use crate::error::{Error, Result};
use crate::proc::Waited;
use crate::tsbs::TsbsCommand;

use super::inputfile::WatchedFile;

/// SIGTERM to a stopped tool's group, then this long before SIGKILL.
const STOP_GRACE: Duration = Duration::from_secs(2);

/// How a tool run ended.
#[derive(Debug)]
pub enum ToolEnd {
    /// The tool exited by itself.
    Exited(ExitStatus),
    /// Ctrl-C: the tool was stopped.
    Interrupted,
    /// The watch said the server is gone (the reason); the tool was stopped.
    ServerGone(String),
    /// The observer asked to stop the tool (e.g. a stall with `--on-stall stop`).
    Stopped(String),
    /// The file the tool was reading changed (in words); the tool was stopped.
    InputChanged(String),
}

/// What a tool reads besides its flags.
pub enum Input {
    /// Nothing: stdin is /dev/null.
    None,
    /// A stream copied into its stdin and hashed on the way (a compressed dataset, which
    /// must be decompressed between the file and the tool).
    Stream(Box<dyn Read + Send>),
    /// A file the tool opens itself (`--file`), watched while it runs; handed back in
    /// [`ToolRun::file`] for the proof of what it read.
    File(WatchedFile),
}

/// What a tool read: a stream tsbsctl fed to its stdin, or a file it read itself.
#[derive(Debug, Clone, Default, serde::Serialize)]
pub struct Fed {
    /// How the bytes reached the tool: "stdin" (streamed and hashed by tsbsctl) or "file"
    /// (the tool read the file itself; watched, hashed after).
    pub read_by: &'static str,
    /// Bytes written to the tool (a file: its size).
    pub bytes: u64,
    /// SHA-256 of every byte the source yielded, when it was read to its end.
    pub sha256: Option<String>,
    /// The source was read to its end and every byte reached the tool.
    pub complete: bool,
    /// Why the stream ended early (a read error, or the tool closed its stdin).
    pub error: Option<String>,
    /// The file changed while the tool read it (in words): what it read is unknown.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub changed: Option<String>,
    /// A file: how it was watched and what identified it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub watch: Option<serde_json::Value>,
}

impl Fed {
    /// The record of a file the tool read itself.
    pub fn from_proof(p: super::inputfile::Proof) -> Fed {
        Fed {
            read_by: "file",
            bytes: p.bytes,
            complete: p.changed.is_none() && p.sha256.is_some(),
            sha256: p.sha256,
            error: None,
            watch: Some(serde_json::json!({
                "how": p.watch,
                "identity": p.identity,
                "hash_seconds": p.hash_seconds,
            })),
            changed: p.changed,
        }
    }
}

/// Sees a tool's log as it grows.
pub trait Observer {
    /// One new complete line of the log (the tool's stdout and stderr, merged).
    fn line(&mut self, line: &str);
    /// Called about every 200 ms; `Some(reason)` stops the tool.
    fn tick(&mut self) -> Option<String>;
    /// The tool ended (clears any progress display).
    fn done(&mut self) {}
    /// Whether the log is worth tailing for this observer.
    fn wants_lines(&self) -> bool {
        true
    }
}

/// An observer that ignores everything.
pub struct NoObserver;

impl Observer for NoObserver {
    fn line(&mut self, _: &str) {}
    fn tick(&mut self) -> Option<String> {
        None
    }
    fn wants_lines(&self) -> bool {
        false
    }
}

/// How one tool run went.
#[derive(Debug)]
pub struct ToolRun {
    pub end: ToolEnd,
    pub usage: Usage,
    /// What reached the tool's stdin, when a stream was given.
    pub fed: Option<Fed>,
    /// The watched file it read, when one was given.
    pub file: Option<WatchedFile>,
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

/// Runs `cmd` from a private directory under `cwd` with its output in `log`, reading `input`.
/// `watch` is called about every 200 ms; `Some(reason)` stops the tool.
pub fn run_tool(
    cmd: &TsbsCommand,
    cwd: &Path,
    log: &Path,
    input: Input,
    watch: &mut dyn FnMut() -> Option<String>,
) -> Result<(ToolEnd, Usage)> {
    let r = run_tool_observed(cmd, cwd, log, input, watch, &mut NoObserver)?;
    Ok((r.end, r.usage))
}

/// Bytes per write to the tool's stdin, and the pipe size asked for: big enough that the
/// loader never waits for tsbsctl between two of its reads.
const FEED_CHUNK: usize = 1 << 20;

/// Copies `src` into the tool's stdin and hashes it on a helper thread at the same time.
fn feed(mut src: Box<dyn Read + Send>, mut dst: std::process::ChildStdin) -> Fed {
    use std::os::fd::AsRawFd;
    // SAFETY: F_SETPIPE_SZ on a pipe we own; failure only leaves the default size.
    unsafe {
        libc::fcntl(
            dst.as_raw_fd(),
            libc::F_SETPIPE_SZ,
            FEED_CHUNK as libc::c_int,
        )
    };
    let mut pipe = crate::hash::HashPipe::new(crate::hash::Sha256::new());
    let mut fed = Fed {
        read_by: "stdin",
        ..Fed::default()
    };
    loop {
        let mut buf = pipe.buffer(FEED_CHUNK);
        let n = match src.read(&mut buf) {
            Ok(0) => {
                fed.complete = true;
                break;
            }
            Ok(n) => n,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
            Err(e) => {
                fed.error = Some(format!("reading the dataset: {e}"));
                break;
            }
        };
        // A closed pipe (the tool exited) ends the copy; the tool's exit says why.
        if let Err(e) = dst.write_all(&buf[..n]) {
            fed.error = Some(format!("the tool stopped reading its input: {e}"));
            break;
        }
        fed.bytes += n as u64;
        buf.truncate(n);
        pipe.push(buf);
    }
    drop(dst);
    let digest = pipe.finish().finish_hex();
    if fed.complete {
        fed.sha256 = Some(digest);
    }
    fed
}

/// Reads what was appended to a log since the last call and hands complete lines on.
struct Tail {
    file: Option<File>,
    partial: Vec<u8>,
}

impl Tail {
    fn new(log: &Path, wanted: bool) -> Tail {
        Tail {
            file: wanted.then(|| File::open(log).ok()).flatten(),
            partial: Vec::new(),
        }
    }

    fn poll(&mut self, observer: &mut dyn Observer) {
        let Some(f) = self.file.as_mut() else {
            return;
        };
        let mut buf = [0u8; 64 * 1024];
        // Bounded per poll so a chatty tool cannot keep the watch loop from its other work.
        for _ in 0..64 {
            match f.read(&mut buf) {
                Ok(0) | Err(_) => break,
                Ok(n) => self.partial.extend_from_slice(&buf[..n]),
            }
        }
        let mut start = 0;
        while let Some(i) = self.partial[start..].iter().position(|&b| b == b'\n') {
            let line = String::from_utf8_lossy(&self.partial[start..start + i]);
            observer.line(line.trim_end_matches('\r'));
            start += i + 1;
        }
        self.partial.drain(..start);
    }
}

/// [`run_tool`] with an observer of the log and the record of what was fed to stdin.
pub fn run_tool_observed(
    cmd: &TsbsCommand,
    cwd: &Path,
    log: &Path,
    input: Input,
    watch: &mut dyn FnMut() -> Option<String>,
    observer: &mut dyn Observer,
) -> Result<ToolRun> {
    let (stdin, mut watched) = match input {
        Input::None => (None, None),
        Input::Stream(s) => (Some(s), None),
        Input::File(f) => (None, Some(f)),
    };
    let (self0, _) = rusage(libc::RUSAGE_SELF);
    let (child0, _) = rusage(libc::RUSAGE_CHILDREN);
    let started = Instant::now();
    if let Some(parent) = log.parent() {
        fs_err::create_dir_all(parent)?;
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
    crate::proc::configure(&mut c);
    let mut child = c.spawn().map_err(|e| {
        Error::failed(format!("could not start {}: {e}", cmd.program.display()))
            .with_hint("check the TSBS build with `tsbsctl env verify`")
    })?;
    let feeder = match (stdin, child.stdin.take()) {
        (Some(src), Some(dst)) => Some(std::thread::spawn(move || feed(src, dst))),
        _ => None,
    };
    let mut tail = Tail::new(log, observer.wants_lines());
    enum Why {
        ServerGone(String),
        Observer(String),
        InputChanged(String),
    }
    let waited = crate::proc::wait(
        &mut child,
        &crate::proc::WaitFor {
            limit: None,
            grace: STOP_GRACE,
            tick_every: Duration::from_millis(200),
        },
        &mut || {
            if let Some(reason) = watch() {
                return Some(Why::ServerGone(reason));
            }
            if let Some(change) = watched.as_mut().and_then(WatchedFile::poll) {
                return Some(Why::InputChanged(change));
            }
            tail.poll(observer);
            observer.tick().map(Why::Observer)
        },
    )
    .map_err(|e| Error::failed(format!("waiting for {}: {e}", cmd.tool())))?;
    let end = match waited {
        Waited::Exited(status) => ToolEnd::Exited(status),
        Waited::Interrupted => ToolEnd::Interrupted,
        // No limit was set, so only a tick can stop the tool.
        Waited::TimedOut => ToolEnd::Stopped("timed out".into()),
        Waited::Stopped(Why::ServerGone(r)) => ToolEnd::ServerGone(r),
        Waited::Stopped(Why::Observer(r)) => ToolEnd::Stopped(r),
        Waited::Stopped(Why::InputChanged(r)) => ToolEnd::InputChanged(r),
    };
    tail.poll(observer);
    observer.done();
    let fed = feeder.map(|f| {
        f.join().unwrap_or_else(|_| Fed {
            error: Some("the feeding thread panicked".into()),
            ..Fed::default()
        })
    });
    let (self1, rss) = rusage(libc::RUSAGE_SELF);
    let (child1, _) = rusage(libc::RUSAGE_CHILDREN);
    let usage = Usage {
        tsbsctl_cpu_seconds: self1 - self0,
        tool_cpu_seconds: child1 - child0,
        tsbsctl_max_rss_kib: rss,
        wall_seconds: started.elapsed().as_secs_f64(),
    };
    Ok(ToolRun {
        end,
        usage,
        fed,
        file: watched,
    })
}
