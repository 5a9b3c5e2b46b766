//! The life of one managed server: [`Server::start`] (orphan check, port probe, spawn with
//! its log), the readiness wait, the watch of a running server, and the stop (the stop signal
//! to the group, a fixed grace or a drain while the server makes progress, then SIGKILL),
//! each step recorded as an [`Event`].

use std::fs::{File, OpenOptions};
use std::io::{Read, Write};
use std::net::TcpListener;
use std::path::Path;
use std::process::{Child, Command, ExitStatus, Stdio};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use nix::sys::signal::Signal;

use crate::error::{Error, Result};
use crate::fsutil;
use crate::interrupt;
use crate::output::{self, Reporter};
use crate::proc::{process_cpu_ticks, process_start_time, signal_group};

use super::orphan::{handle_orphan, remove_pid_record};
use super::{
    event, now, Event, EventKind, Listener, OutputFilter, PidRecord, Probe, ServerSpec, StopOutcome,
};

/// The longest a draining stop waits after Ctrl-C.
const INTERRUPTED_DRAIN: Duration = Duration::from_secs(60);
/// The stop of a server whose running work is thrown away on stop anyway: SIGTERM, then
/// SIGKILL after this (its WAL keeps every acknowledged write).
const DISCARDED_WORK_GRACE: Duration = Duration::from_secs(5);

/// A running (or finished) managed server. Dropping it stops it.
pub struct Server {
    spec: ServerSpec,
    child: Option<Child>,
    pid: u32,
    events: Vec<Event>,
    started: Instant,
    stopping: bool,
    /// The readiness probe answered: only a server that served has work of ours to drain.
    ready: bool,
    outcome: Option<StopOutcome>,
    /// Set when the work the server runs is lost on stop (a compaction after Ctrl-C): the
    /// stop does not drain, and says why.
    discard: Option<&'static str>,
    http: Option<reqwest::blocking::Client>,
    /// Threads copying filtered output into the log (with [`ServerSpec::output_filter`]).
    pumps: Vec<JoinHandle<()>>,
    /// Its own cgroup, with [`ServerSpec::shape`]; removed once the server is gone.
    cgroup: Option<super::cgroup::Cgroup>,
    /// The kernel's OOM-kill count (`/proc/vmstat`) at the start: a rise while the server ran
    /// is evidence when it dies by SIGKILL without a cgroup of its own.
    oom_kills_at_start: Option<u64>,
}

impl std::fmt::Debug for Server {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Server")
            .field("label", &self.spec.label)
            .field("pid", &self.pid)
            .field("endpoint", &self.spec.endpoint)
            .finish()
    }
}

impl Server {
    /// Handles an orphan, probes the ports and spawns the server (no readiness wait). A failure
    /// here started nothing.
    pub fn start(spec: ServerSpec, reporter: &dyn Reporter) -> Result<Server> {
        let mut events = Vec::new();
        handle_orphan(&spec, reporter, &mut events)?;
        // Groups a killed tsbsctl left behind go first, whatever this start asks for.
        super::cgroup::sweep();
        probe_ports(&spec.label, &spec.listeners, spec.timing.port_wait)?;
        interrupt::check()?;

        if let Some(parent) = spec.log_path.parent() {
            std::fs::create_dir_all(parent)
                .map_err(|e| Error::io("create the log directory", parent, e))?;
        }
        let mut log = OpenOptions::new()
            .create(true)
            .append(true)
            .open(&spec.log_path)
            .map_err(|e| Error::io("open the server log", &spec.log_path, e))?;
        let command = crate::proc::command_line(&spec.program.to_string_lossy(), &spec.args);
        let shown = match &spec.output_filter {
            Some(f) => (f.0)(&command),
            None => command.clone(),
        };
        writeln!(log, "# {} tsbsctl starts {}", now(), spec.label)
            .and_then(|_| writeln!(log, "$ {shown}"))
            .map_err(|e| Error::io("write", &spec.log_path, e))?;
        let mut cmd = Command::new(&spec.program);
        cmd.args(&spec.args)
            .current_dir(&spec.cwd)
            .stdin(Stdio::null());
        let shared_log = if spec.output_filter.is_some() {
            cmd.stdout(Stdio::piped()).stderr(Stdio::piped());
            Some(Arc::new(Mutex::new(log)))
        } else {
            let err_log = log
                .try_clone()
                .map_err(|e| Error::io("open the server log", &spec.log_path, e))?;
            cmd.stdout(Stdio::from(log)).stderr(Stdio::from(err_log));
            None
        };
        for k in &spec.env_remove {
            cmd.env_remove(k);
        }
        for (k, v) in &spec.env {
            cmd.env(k, v);
        }
        crate::proc::configure(&mut cmd);
        let cgroup = match spec.shape.filter(|s| !s.is_empty()) {
            Some(shape) => {
                static STARTS: std::sync::atomic::AtomicU32 = std::sync::atomic::AtomicU32::new(0);
                let n = STARTS.fetch_add(1, std::sync::atomic::Ordering::Relaxed) + 1;
                let cg = super::cgroup::Cgroup::create(&shape, n)?;
                let join = cg.joiner();
                // SAFETY: the joiner makes only async-signal-safe calls (open, write, close).
                unsafe {
                    use std::os::unix::process::CommandExt;
                    cmd.pre_exec(join);
                }
                Some(cg)
            }
            None => None,
        };
        let oom_kills_at_start = vmstat_oom_kills();
        let mut child = cmd.spawn().map_err(|e| {
            Error::failed(format!(
                "could not start {} ({}): {e}",
                spec.label,
                spec.program.display()
            ))
            .with_hint("check the installation with the product's `verify` command")
        })?;
        let mut pumps = Vec::new();
        if let (Some(filter), Some(log)) = (&spec.output_filter, &shared_log) {
            if let Some(out) = child.stdout.take() {
                pumps.push(pump(out, filter, log));
            }
            if let Some(err) = child.stderr.take() {
                pumps.push(pump(err, filter, log));
            }
        }
        let pid = child.id();
        let record = PidRecord {
            pid,
            pgid: pid,
            start_time: process_start_time(pid),
            program: spec.program.clone(),
            log: spec.log_path.clone(),
            started_at: now(),
            tsbsctl_pid: std::process::id(),
        };
        events.push(event(EventKind::Started {
            pid,
            command: shown,
            log: spec.log_path.clone(),
        }));
        if let Some(cg) = &cgroup {
            events.push(event(EventKind::Shaped {
                cgroup: serde_json::to_string(&cg.record).unwrap_or_default(),
            }));
        }
        let server = Server {
            spec,
            child: Some(child),
            pid,
            events,
            started: Instant::now(),
            stopping: false,
            ready: false,
            outcome: None,
            discard: None,
            http: None,
            pumps,
            cgroup,
            oom_kills_at_start,
        };
        // The server is already running: a failure to record it must still stop it (Drop).
        let bytes = serde_json::to_vec_pretty(&record)?;
        fsutil::write_atomic(&server.spec.pid_file, &bytes)?;
        Ok(server)
    }

    /// Waits until the readiness probe answers 200. Fails early when the process exits, after
    /// the startup timeout, or on Ctrl-C (exit 130); the server is stopped in every failure.
    pub fn wait_ready(&mut self) -> Result<()> {
        self.wait_ready_with(None)
    }

    /// [`Server::wait_ready`], saying on a terminal what a slow start waits for.
    pub fn wait_ready_reporting(&mut self, reporter: &dyn Reporter) -> Result<()> {
        self.wait_ready_with(Some(reporter))
    }

    fn wait_ready_with(&mut self, reporter: Option<&dyn Reporter>) -> Result<()> {
        let deadline = self.started + self.spec.timing.startup_timeout;
        let mut bar: Option<Box<dyn crate::output::Progress>> = None;
        let res = self.wait_ready_loop(deadline, reporter, &mut bar);
        if let Some(b) = &bar {
            b.finish();
        }
        res
    }

    fn wait_ready_loop(
        &mut self,
        deadline: Instant,
        reporter: Option<&dyn Reporter>,
        bar: &mut Option<Box<dyn crate::output::Progress>>,
    ) -> Result<()> {
        loop {
            if let (Some(r), None) = (reporter, bar.as_ref()) {
                if self.started.elapsed() >= Duration::from_secs(3) {
                    r.event(&output::Event::WaitingForServer {
                        label: self.spec.label.to_string(),
                        until: self.spec.timing.startup_wait.map(|w| w.to_string()),
                        timeout: self.spec.timing.startup_timeout,
                    });
                    *bar = Some(r.progress("starting", None, crate::output::Unit::Items));
                }
            }
            if let Some(b) = bar.as_ref() {
                b.set_message(format!("{:.0} s", self.started.elapsed().as_secs_f64()));
            }
            if let Some(status) = self.try_wait()? {
                let (code, signal) = split_status(status);
                // A start can need more memory than a run (a WAL replayed into memory): the
                // OOM killer ending it is said as such, as it is during a run.
                let (oom, how) = self.how_it_died(code, signal);
                let reason = format!("exited during startup ({how})");
                self.push(EventKind::StartupFailed {
                    reason: reason.clone(),
                });
                self.stop();
                let why = self.failure_why();
                let hint = if oom {
                    "the server needs more memory to start than its limit (a replay of unflushed data is held in memory): raise --memory, or run without it"
                } else {
                    "read the log; `verify` checks the installation and the config"
                };
                return Err(Error::failed(format!(
                    "{} {reason}{why}; see {}",
                    self.spec.label,
                    self.spec.log_path.display()
                ))
                .with_hint(hint));
            }
            if interrupt::requested() {
                self.push(EventKind::StartupFailed {
                    reason: "interrupted".into(),
                });
                self.stop();
                return Err(Error::interrupted(format!(
                    "interrupted while {} was starting; the server was stopped",
                    self.spec.label
                ))
                .with_hint("run the command again"));
            }
            if self.probe_once() {
                let after_ms = self.started.elapsed().as_millis() as u64;
                self.push(EventKind::Ready { after_ms });
                self.ready = true;
                return Ok(());
            }
            if Instant::now() >= deadline {
                let secs = self.spec.timing.startup_timeout.as_secs_f64();
                self.push(EventKind::StartupFailed {
                    reason: format!("not ready within {secs}s"),
                });
                self.stop();
                return Err(Error::failed(format!(
                    "{} was not ready within {secs}s; see {}",
                    self.spec.label,
                    self.spec.log_path.display()
                ))
                .with_hint("read the log; raise --startup-timeout if the server is just slow"));
            }
            let left = deadline.saturating_duration_since(Instant::now());
            std::thread::sleep(self.spec.timing.poll_interval.min(left));
        }
    }

    /// Fails (and records an unexpected exit) when the server has exited by itself.
    pub fn check_running(&mut self) -> Result<()> {
        if self.outcome.is_some() {
            return Err(Error::failed(format!("{} is not running", self.spec.label)));
        }
        match self.try_wait()? {
            None => Ok(()),
            Some(status) => {
                let (code, signal) = split_status(status);
                let (_, how) = self.how_it_died(code, signal);
                self.finish(code, signal, false, true, 0);
                Err(Error::failed(format!(
                    "{} exited unexpectedly ({how}){}; see {}",
                    self.spec.label,
                    self.failure_why(),
                    self.spec.log_path.display()
                ))
                .with_hint("read the log for the cause; the workspace data is kept"))
            }
        }
    }

    /// `: <the lines of this start's log that explain the failure>`, when the product picks
    /// any (PostgreSQL's FATAL lines, the GreptimeDB cluster launcher's FAILED line).
    fn failure_why(&self) -> String {
        self.spec
            .failure_lines
            .and_then(|f| {
                let log = std::fs::read_to_string(&self.spec.log_path).ok()?;
                // Only this start's part of the log (it is appended to).
                let this = log.rsplit_once(" tsbsctl starts ").map_or(&*log, |x| x.1);
                let lines = f(this);
                (!lines.is_empty()).then(|| format!(": {}", lines.join(" | ")))
            })
            .unwrap_or_default()
    }

    /// Runs until Ctrl-C (then stops the server and returns `Interrupted`, exit 130) or until
    /// the server exits by itself (a failure).
    pub fn serve_until_interrupted(&mut self) -> Result<()> {
        loop {
            if interrupt::requested() {
                self.stop();
                // Ctrl-C is how a foreground server is stopped: exit 130, no error.
                return Err(Error::interrupted(format!("stopped {}", self.spec.label)).plain());
            }
            self.check_running()?;
            std::thread::sleep(Duration::from_millis(100));
        }
    }

    /// Stops the server: SIGTERM to its group, the grace period, then SIGKILL. Idempotent; also
    /// records an unexpected exit when the process was already gone.
    pub fn stop(&mut self) -> StopOutcome {
        self.stop_with(None)
    }

    /// The work the server is running is thrown away if it stops (`why`): the next stop
    /// gives SIGTERM [`DISCARDED_WORK_GRACE`], not a drain, and says why.
    pub fn discard_running_work(&mut self, why: &'static str) {
        self.discard = Some(why);
    }

    /// [`Server::stop`], saying on a terminal what a long stop waits for.
    pub fn stop_reporting(&mut self, reporter: &dyn Reporter) -> StopOutcome {
        self.stop_with(Some(reporter))
    }

    fn stop_with(&mut self, reporter: Option<&dyn Reporter>) -> StopOutcome {
        if let Some(o) = self.outcome {
            return o;
        }
        if let Ok(Some(status)) = self.try_wait() {
            let (code, signal) = split_status(status);
            return self.finish(code, signal, false, !self.stopping, 0);
        }
        self.stopping = true;
        let grace = self.spec.timing.grace;
        self.push(EventKind::Stopping {
            grace_ms: grace.as_millis() as u64,
        });
        let sent = Instant::now();
        signal_group(self.pid, self.spec.timing.stop_signal);
        // A start that failed (timeout, Ctrl-C) is not drained: it holds no work of ours.
        let exited = match (
            self.discard,
            self.spec.timing.drain_limit.filter(|_| self.ready),
        ) {
            (Some(why), _) => {
                let bound = grace.min(DISCARDED_WORK_GRACE);
                if let Some(r) = reporter {
                    r.event(&output::Event::StoppingDiscarded {
                        label: self.spec.label.to_string(),
                        why: why.to_string(),
                        kill_after: bound,
                    });
                }
                self.wait_for(bound)
            }
            (None, None) => self.wait_for(grace),
            (None, Some(limit)) => self.wait_draining(grace, limit.max(grace), reporter),
        };
        if let Some(status) = exited {
            let (code, signal) = split_status(status);
            return self.finish(
                code,
                signal,
                false,
                false,
                sent.elapsed().as_millis() as u64,
            );
        }
        self.push(EventKind::ForcedKill);
        signal_group(self.pid, Signal::SIGKILL);
        let status = self.wait_for(Duration::from_secs(10));
        let (code, signal) = status
            .map(split_status)
            .unwrap_or((None, Some(libc::SIGKILL)));
        self.finish(code, signal, true, false, sent.elapsed().as_millis() as u64)
    }

    /// Waits for the exit while the server shows progress (its log grows or its CPU time
    /// does): at most `grace` after the last progress and `limit` in all.
    fn wait_draining(
        &mut self,
        grace: Duration,
        limit: Duration,
        reporter: Option<&dyn Reporter>,
    ) -> Option<ExitStatus> {
        let start = Instant::now();
        let mut last_progress = start;
        let mut mark = self.progress_mark();
        let mut bar: Option<Box<dyn crate::output::Progress>> = None;
        loop {
            if let Ok(Some(s)) = self.try_wait() {
                if let Some(b) = &bar {
                    b.finish();
                }
                return Some(s);
            }
            let now = Instant::now();
            let m = self.progress_mark();
            if m != mark {
                mark = m;
                last_progress = now;
            }
            // After Ctrl-C the person wants out: the drain gets a short bound (what the server
            // had not committed is lost either way; its WAL keeps every acknowledged write).
            let limit = if interrupt::requested() {
                limit.min(INTERRUPTED_DRAIN)
            } else {
                limit
            };
            if now.duration_since(last_progress) >= grace || now.duration_since(start) >= limit {
                if let Some(b) = &bar {
                    b.finish();
                }
                return None;
            }
            // Say what is going on once the stop is no longer instant.
            if let (Some(r), None) = (reporter, &bar) {
                if now.duration_since(start) >= Duration::from_secs(2) {
                    r.event(&output::Event::StoppingDraining {
                        label: self.spec.label.to_string(),
                        stall: grace,
                        limit,
                    });
                    bar = Some(r.progress("stopping", None, crate::output::Unit::Items));
                }
            }
            if let Some(b) = &bar {
                b.set_message(format!(
                    "{:.0} s since SIGTERM, last progress {:.0} s ago",
                    now.duration_since(start).as_secs_f64(),
                    now.duration_since(last_progress).as_secs_f64()
                ));
            }
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    /// (log length, CPU ticks) of the server: either changing is progress.
    fn progress_mark(&self) -> (u64, u64) {
        let log = std::fs::metadata(&self.spec.log_path)
            .map(|m| m.len())
            .unwrap_or(0);
        (log, process_cpu_ticks(self.pid).unwrap_or(0))
    }

    pub fn pid(&self) -> u32 {
        self.pid
    }
    pub fn endpoint(&self) -> &str {
        &self.spec.endpoint
    }
    pub fn label(&self) -> &str {
        &self.spec.label
    }
    pub fn log_path(&self) -> &Path {
        &self.spec.log_path
    }
    pub fn events(&self) -> &[Event] {
        &self.events
    }
    /// How the server ended, once it has.
    pub fn outcome(&self) -> Option<StopOutcome> {
        self.outcome
    }

    fn push(&mut self, kind: EventKind) {
        self.events.push(event(kind));
    }

    fn try_wait(&mut self) -> Result<Option<ExitStatus>> {
        match self.child.as_mut() {
            None => Ok(None),
            Some(c) => c
                .try_wait()
                .map_err(|e| Error::failed(format!("could not watch {}: {e}", self.spec.label))),
        }
    }

    /// Waits up to `limit` for the process to exit (polling; a stop is not interruptible).
    fn wait_for(&mut self, limit: Duration) -> Option<ExitStatus> {
        let deadline = Instant::now() + limit;
        loop {
            if let Ok(Some(s)) = self.try_wait() {
                return Some(s);
            }
            if Instant::now() >= deadline {
                return None;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    fn finish(
        &mut self,
        code: Option<i32>,
        signal: Option<i32>,
        forced: bool,
        unexpected: bool,
        stop_ms: u64,
    ) -> StopOutcome {
        if unexpected {
            self.push(EventKind::UnexpectedExit { code, signal });
        }
        self.push(EventKind::Exited { code, signal });
        // Helpers the server may have left in its group go too.
        signal_group(self.pid, Signal::SIGKILL);
        self.child = None;
        // The pipes close once the group is gone; wait briefly so the log is complete.
        let deadline = Instant::now() + Duration::from_secs(2);
        for p in std::mem::take(&mut self.pumps) {
            while !p.is_finished() && Instant::now() < deadline {
                std::thread::sleep(Duration::from_millis(10));
            }
            if p.is_finished() {
                let _ = p.join();
            }
        }
        remove_pid_record(&self.spec.pid_file, self.pid);
        if let Some(cg) = self.cgroup.as_mut() {
            cg.remove();
        }
        let stop_signal = self.spec.timing.stop_signal as i32;
        let o = StopOutcome {
            code,
            signal,
            forced,
            unexpected,
            stop_ms,
            killed: !forced && !unexpected && signal.is_some_and(|s| s != stop_signal),
        };
        self.outcome = Some(o);
        if let Ok(mut log) = OpenOptions::new().append(true).open(&self.spec.log_path) {
            let _ = writeln!(
                log,
                "# {} tsbsctl: {} {}{}",
                now(),
                self.spec.label,
                describe_exit(code, signal),
                if forced {
                    " (killed after the grace period)"
                } else {
                    ""
                }
            );
        }
        o
    }

    fn probe_once(&mut self) -> bool {
        if let Probe::Command {
            program,
            args,
            gate,
        } = &self.spec.probe
        {
            if gate.as_ref().is_some_and(|g| !g.open(self.pid)) {
                return false;
            }
            return command_ready(program, args, Duration::from_secs(2));
        }
        if self.http.is_none() {
            self.http = crate::http::local(Some(Duration::from_secs(2))).ok();
        }
        let Some(http) = self.http.as_ref() else {
            return false;
        };
        let req = match &self.spec.probe {
            Probe::Command { .. } => return false,
            Probe::Get { url } => http.get(url),
            Probe::PostForm { url, body } => http
                .post(url)
                .header("content-type", "application/x-www-form-urlencoded")
                .body(body.clone()),
        };
        matches!(req.send(), Ok(r) if r.status().as_u16() == 200)
    }
}

/// Runs a readiness command, silenced; ready when it exits 0 within `limit` (a hung one is
/// killed and counts as not ready).
fn command_ready(program: &std::path::Path, args: &[String], limit: Duration) -> bool {
    let Ok(mut child) = std::process::Command::new(program)
        .args(args)
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
    else {
        return false;
    };
    let deadline = std::time::Instant::now() + limit;
    loop {
        match child.try_wait() {
            Ok(Some(status)) => return status.success(),
            Ok(None) if std::time::Instant::now() < deadline => {
                std::thread::sleep(Duration::from_millis(20))
            }
            _ => {
                let _ = child.kill();
                let _ = child.wait();
                return false;
            }
        }
    }
}

#[cfg(test)]
mod probe_command_tests {
    use super::*;

    #[test]
    fn a_command_probe_is_ready_on_exit_0_only_and_bounded() {
        let sh = std::path::Path::new("/bin/sh");
        let arg = |s: &str| vec!["-c".to_string(), s.to_string()];
        assert!(command_ready(sh, &arg("exit 0"), Duration::from_secs(2)));
        assert!(!command_ready(sh, &arg("exit 2"), Duration::from_secs(2)));
        assert!(!command_ready(
            std::path::Path::new("/nonexistent/pg_isready"),
            &[],
            Duration::from_secs(2)
        ));
        let t = std::time::Instant::now();
        assert!(!command_ready(
            sh,
            &arg("sleep 5"),
            Duration::from_millis(200)
        ));
        assert!(t.elapsed() < Duration::from_secs(3), "{:?}", t.elapsed());
    }
}

impl Server {
    /// The cgroup the server runs in, as recorded.
    pub fn shape_record(&self) -> Option<&super::cgroup::Record> {
        self.cgroup.as_ref().map(|c| &c.record)
    }

    /// How an exit tsbsctl did not ask for (`code`, `signal`) is told: the OOM evidence, when
    /// there is some (recorded as an [`EventKind::OutOfMemory`] event), and the words.
    fn how_it_died(&mut self, code: Option<i32>, signal: Option<i32>) -> (bool, String) {
        match self.oom_evidence(signal) {
            Some(evidence) => {
                let how = format!("out of memory: {evidence}");
                self.push(EventKind::OutOfMemory { evidence });
                (true, how)
            }
            None => (false, describe_exit(code, signal)),
        }
    }

    /// Why a death by `signal` was the OOM killer, when the evidence says so (see
    /// [`oom_verdict`]). `None`: no such evidence.
    fn oom_evidence(&self, signal: Option<i32>) -> Option<String> {
        if signal != Some(libc::SIGKILL) {
            return None;
        }
        let group = self.cgroup.as_ref().map(|cg| OomGroup {
            kills: cg.oom_kills(),
            limit: cg.record.memory_limit_bytes,
            peak: cg.peak_memory(),
        });
        oom_verdict(signal, group, self.oom_kills_at_start, vmstat_oom_kills())
    }
}

/// What the server's own cgroup says of its memory when it died.
#[derive(Debug, Clone, Copy, Default)]
struct OomGroup {
    /// The group's OOM-kill counter; `None` when the group has no memory controller
    /// (`--cpus` without `--memory`) or the kernel does not count.
    kills: Option<u64>,
    limit: Option<u64>,
    peak: Option<u64>,
}

/// The OOM decision from the counters: a death by SIGKILL is an OOM kill when the group's
/// counter (which counts kills by any OOM killer, the host's included) is above 0; when the
/// group has no counter (no group, or a group without a memory controller), when the host's
/// count (`/proc/vmstat oom_kill`) rose while the server ran. A group counter that reads 0
/// says no OOM killer touched the group.
fn oom_verdict(
    signal: Option<i32>,
    group: Option<OomGroup>,
    host_before: Option<u64>,
    host_now: Option<u64>,
) -> Option<String> {
    if signal != Some(libc::SIGKILL) {
        return None;
    }
    if let Some(kills) = group.and_then(|g| g.kills) {
        let g = group.unwrap_or_default();
        return (kills > 0).then(|| {
            format!(
                "killed by SIGKILL with {kills} OOM kill(s) in its cgroup (memory limit {}, peak {})",
                g.limit.map_or("unknown".into(), crate::diskspace::human),
                g.peak.map_or("unknown".into(), crate::diskspace::human)
            )
        });
    }
    let (before, now) = (host_before?, host_now?);
    (now > before).then(|| {
        format!(
            "killed by SIGKILL while the kernel's OOM killer killed {} process(es) on this host (/proc/vmstat oom_kill)",
            now - before
        )
    })
}

#[cfg(test)]
mod oom_tests {
    use super::*;

    #[test]
    fn a_group_without_memory_falls_back_to_the_hosts_counter() {
        let kill = Some(libc::SIGKILL);
        // --cpus without --memory: a group, but no memory directory and so no counter.
        let cpu_only = Some(OomGroup::default());
        let v = oom_verdict(kill, cpu_only, Some(3), Some(4)).expect("host OOM kill");
        assert!(v.contains("/proc/vmstat oom_kill"), "{v}");
        assert!(oom_verdict(kill, cpu_only, Some(3), Some(3)).is_none());
        // No group at all: the same fallback.
        assert!(oom_verdict(kill, None, Some(0), Some(2))
            .unwrap()
            .contains("killed 2 process(es)"));
        // The group's counter decides when there is one.
        let mem = |k| {
            Some(OomGroup {
                kills: Some(k),
                limit: Some(160 << 20),
                peak: None,
            })
        };
        let v = oom_verdict(kill, mem(1), Some(3), Some(3)).unwrap();
        assert!(
            v.contains("1 OOM kill(s) in its cgroup (memory limit 160.0 MiB, peak unknown)"),
            "{v}"
        );
        assert!(oom_verdict(kill, mem(0), Some(3), Some(9)).is_none());
        // Not SIGKILL, or no counters: no evidence.
        assert!(oom_verdict(Some(libc::SIGSEGV), mem(1), Some(0), Some(1)).is_none());
        assert!(oom_verdict(kill, None, None, Some(1)).is_none());
        assert!(oom_verdict(None, None, Some(0), Some(1)).is_none());
    }
}

/// The kernel's count of OOM kills since boot (Linux 4.13+).
fn vmstat_oom_kills() -> Option<u64> {
    let s = std::fs::read_to_string("/proc/vmstat").ok()?;
    s.lines()
        .find_map(|l| l.strip_prefix("oom_kill "))
        .and_then(|v| v.trim().parse().ok())
}

impl Drop for Server {
    fn drop(&mut self) {
        self.stop();
    }
}

/// Copies a server's output through its redacting filter into the shared log.
fn pump(
    from: impl Read + Send + 'static,
    filter: &OutputFilter,
    log: &Arc<Mutex<File>>,
) -> JoinHandle<()> {
    let f = Arc::clone(&filter.0);
    crate::proc::pump(from, move |line| f(line), Arc::clone(log))
}

/// Checks every listener port on 127.0.0.1, retrying a busy one for up to `wait`.
pub fn probe_ports(label: &str, listeners: &[Listener], wait: Duration) -> Result<()> {
    for l in listeners {
        let deadline = Instant::now() + wait;
        loop {
            // std sets SO_REUSEADDR, so TIME_WAIT leftovers of a stopped server do not count.
            match TcpListener::bind(("127.0.0.1", l.port)) {
                Ok(sock) => {
                    drop(sock);
                    break;
                }
                Err(e) if Instant::now() >= deadline => {
                    return Err(Error::failed(format!(
                        "{label} cannot start: its {} port 127.0.0.1:{} is unavailable ({e})",
                        l.name, l.port
                    ))
                    .with_hint(format!(
                        "stop what listens there (see `ss -ltnp 'sport = :{}'`), or use a workspace with other ports",
                        l.port
                    )));
                }
                Err(_) => {
                    interrupt::check()?;
                    std::thread::sleep(Duration::from_millis(100));
                }
            }
        }
    }
    Ok(())
}

fn split_status(s: ExitStatus) -> (Option<i32>, Option<i32>) {
    use std::os::unix::process::ExitStatusExt;
    (s.code(), s.signal())
}

fn describe_exit(code: Option<i32>, signal: Option<i32>) -> String {
    match (code, signal) {
        (Some(c), _) => format!("exit code {c}"),
        (None, Some(s)) => format!("killed by signal {s}"),
        _ => "exit status unknown".into(),
    }
}

#[cfg(test)]
mod tests {
    use super::super::log_tail;
    use super::super::testkit::{free_port, kinds, spec};
    use super::*;
    use crate::output::SilentReporter;

    #[test]
    fn busy_port_is_refused_before_anything_starts() {
        let dir = tempfile::tempdir().unwrap();
        let holder = TcpListener::bind("127.0.0.1:0").unwrap();
        let port = holder.local_addr().unwrap().port();
        let err = Server::start(spec(dir.path(), "sleep 5", port), &SilentReporter).unwrap_err();
        assert!(err.message.contains("unavailable"), "{}", err.message);
        assert!(!dir.path().join("server.pid").exists());
        assert!(!dir.path().join("logs/server.log").exists());
    }

    #[test]
    fn exit_during_start_fails_early_with_the_exit_code() {
        let dir = tempfile::tempdir().unwrap();
        let mut s = Server::start(
            spec(dir.path(), "echo boom; exit 3", free_port()),
            &SilentReporter,
        )
        .unwrap();
        let err = s.wait_ready().unwrap_err();
        assert!(err.message.contains("exit code 3"), "{}", err.message);
        assert_eq!(
            kinds(&s),
            ["started", "startup_failed", "unexpected_exit", "exited"]
        );
        assert!(!dir.path().join("server.pid").exists());
        assert!(log_tail(s.log_path(), 1000).contains("boom"));
    }

    /// On SIGTERM it works (logs every 0.25 s) for ~3 s, then exits 0. It says `armed` on a
    /// line of its own once its trap is set.
    const DRAINING: &str = "trap 'for i in 1 2 3 4 5 6 7 8 9 10 11 12; do echo draining $i; sleep 0.25; done; exit 0' TERM; echo armed; while :; do sleep 0.05; done";

    /// Waits (bounded) until the script has set its trap: a TERM that arrives before would end
    /// the shell at once. The log's `$ command` header holds the script text, `echo armed`
    /// included, so only a line that is exactly `armed` counts.
    fn wait_armed(s: &Server) {
        let t = Instant::now();
        while !log_tail(s.log_path(), 4000).lines().any(|l| l == "armed") {
            assert!(
                t.elapsed() < Duration::from_secs(10),
                "the script never set its trap"
            );
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    #[test]
    fn the_log_header_names_the_command_so_a_readiness_line_must_be_matched_whole() {
        let dir = tempfile::tempdir().unwrap();
        // A script that never gets to say `armed` on its own line (it waits first).
        let s = Server::start(
            spec(dir.path(), "sleep 30; echo armed", free_port()),
            &SilentReporter,
        )
        .unwrap();
        let log = log_tail(s.log_path(), 4000);
        assert!(log.contains("armed"), "{log}");
        assert!(!log.lines().any(|l| l == "armed"), "{log}");
    }

    #[test]
    fn term_ignored_means_sigkill_is_recorded() {
        let dir = tempfile::tempdir().unwrap();
        let mut sp = spec(
            dir.path(),
            "trap '' TERM; echo armed; while :; do sleep 0.05; done",
            free_port(),
        );
        sp.timing.startup_timeout = Duration::from_millis(200);
        let mut s = Server::start(sp, &SilentReporter).unwrap();
        let pid = s.pid();
        wait_armed(&s);
        let err = s.wait_ready().unwrap_err();
        assert!(err.message.contains("not ready"), "{}", err.message);
        let o = s.outcome().unwrap();
        assert!(o.forced);
        assert_eq!(o.signal, Some(libc::SIGKILL));
        assert!(kinds(&s).contains(&"forced_kill".to_string()));
        assert!(!fsutil::process_alive(pid as i32));
    }

    /// A server killed by another process during its shutdown (N16: kill -9 of the
    /// postmaster while tsbsctl stopped it) is not a clean stop.
    #[test]
    fn a_server_killed_during_its_shutdown_is_recorded_as_killed() {
        let dir = tempfile::tempdir().unwrap();
        let sp = spec(
            dir.path(),
            "trap 'kill -KILL $$' TERM; echo armed; while :; do sleep 0.05; done",
            free_port(),
        );
        let mut s = Server::start(sp, &SilentReporter).unwrap();
        wait_armed(&s);
        let o = s.stop();
        assert!(!o.forced && !o.unexpected, "{o:?}");
        assert_eq!(o.signal, Some(libc::SIGKILL), "{o:?}");
        assert!(o.killed, "{o:?}");
        // Ended by the stop signal itself: a clean stop.
        let dir = tempfile::tempdir().unwrap();
        let sp = spec(
            dir.path(),
            "trap 'trap - TERM; kill -TERM $$' TERM; echo armed; while :; do sleep 0.05; done",
            free_port(),
        );
        let mut s = Server::start(sp, &SilentReporter).unwrap();
        wait_armed(&s);
        let o = s.stop();
        assert_eq!(o.signal, Some(libc::SIGTERM), "{o:?}");
        assert!(!o.killed && !o.forced, "{o:?}");
    }

    #[test]
    fn a_draining_server_is_waited_for_while_it_makes_progress() {
        let dir = tempfile::tempdir().unwrap();
        // The drain lasts three times the grace; the grace (1 s) is four log intervals, so a
        // busy machine does not read a slow log line as a stall.
        let mut sp = spec(dir.path(), DRAINING, free_port());
        sp.timing.grace = Duration::from_secs(1);
        sp.timing.drain_limit = Some(Duration::from_secs(20));
        let mut s = Server::start(sp, &SilentReporter).unwrap();
        // As if the probe had answered (this script serves no HTTP).
        s.ready = true;
        wait_armed(&s);
        let o = s.stop();
        assert!(!o.forced, "{o:?}");
        assert_eq!(o.code, Some(0), "{o:?}");
        assert!(o.stop_ms >= 2000, "{o:?}");
        assert!(log_tail(s.log_path(), 1000).contains("draining 12"));
    }

    #[test]
    fn only_a_ready_draining_server_is_waited_for_and_a_silent_one_is_killed() {
        // A server that never became ready is not drained.
        let dir = tempfile::tempdir().unwrap();
        let mut sp = spec(dir.path(), DRAINING, free_port());
        sp.timing.drain_limit = Some(Duration::from_secs(20));
        sp.timing.startup_timeout = Duration::from_millis(300);
        let mut s = Server::start(sp, &SilentReporter).unwrap();
        wait_armed(&s);
        assert!(s.wait_ready().is_err());
        assert!(s.outcome().unwrap().forced);
        // Without the drain limit the same server is killed after the grace.
        let dir = tempfile::tempdir().unwrap();
        let mut s =
            Server::start(spec(dir.path(), DRAINING, free_port()), &SilentReporter).unwrap();
        wait_armed(&s);
        assert!(s.stop().forced);
        // A silent, idle server is killed after the grace even with a drain limit.
        let dir = tempfile::tempdir().unwrap();
        let mut sp = spec(
            dir.path(),
            "trap '' TERM; echo armed; exec sleep 30",
            free_port(),
        );
        sp.timing.drain_limit = Some(Duration::from_secs(20));
        let mut s = Server::start(sp, &SilentReporter).unwrap();
        s.ready = true;
        wait_armed(&s);
        let t = Instant::now();
        assert!(s.stop().forced);
        assert!(t.elapsed() < Duration::from_secs(10));
    }

    #[test]
    fn output_filter_rewrites_every_line_before_it_reaches_the_log() {
        let dir = tempfile::tempdir().unwrap();
        let mut sp = spec(
            dir.path(),
            "echo 'mail me at a@b.example'; echo 'err a@b.example' >&2; printf 'no newline'; exit 0",
            free_port(),
        );
        sp.output_filter = Some(OutputFilter(Arc::new(|l: &str| {
            l.replace("a@b.example", "<redacted>")
        })));
        let mut s = Server::start(sp, &SilentReporter).unwrap();
        assert!(s.wait_ready().is_err());
        let log = std::fs::read_to_string(s.log_path()).unwrap();
        assert!(!log.contains("a@b.example"), "{log}");
        assert!(log.contains("mail me at <redacted>"), "{log}");
        assert!(log.contains("err <redacted>"), "{log}");
        assert!(log.contains("no newline"), "{log}");
    }
}
