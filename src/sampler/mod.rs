//! The server's resource timeline (issue 24): a thread of tsbsctl samples the server once a
//! second, and at every step boundary, into the run's `timeline.jsonl`.
//!
//! * A managed server: its whole process tree from `/proc` ([`procfs`]): CPU user and system
//!   seconds (cumulative, reaped children included), resident memory, bytes read from and
//!   written to storage, and the number of processes; the data directory's size at
//!   boundaries and at most every [`DIR_INTERVAL`] (walking a large data directory every
//!   second would cost more than the target allows).
//! * An external server: the process series of its Prometheus `/metrics` ([`metrics`]);
//!   what it does not serve is unknown (`null`), never 0.
//!
//! Each sample is one line written as it is taken (no buffering: a killed run keeps every
//! sample it took); [`read`] skips a line a kill cut short. The sampler's CPU counts in
//! tsbsctl's own (`usage.tsbsctl_cpu_seconds` of each step), so it reuses its buffers and
//! walks no directory per second.

pub mod metrics;
pub mod phases;
pub mod procfs;

use std::fs::File;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::mpsc::{self, RecvTimeoutError, Sender};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use serde::{Deserialize, Serialize};

use crate::error::{Error, Result};

/// The file in a run directory.
pub const TIMELINE_FILE: &str = "timeline.jsonl";
/// Seconds between two samples.
pub const INTERVAL: Duration = Duration::from_secs(1);
/// The least time between two walks of the data directory outside boundaries (longer when a
/// walk is slow: at most 0.5 % of the time is spent walking).
pub const DIR_INTERVAL: Duration = Duration::from_secs(10);

/// One line of `timeline.jsonl`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Sample {
    /// UTC, RFC 3339 with microseconds.
    pub t: String,
    /// Seconds since the run's first sample.
    pub elapsed_s: f64,
    /// The step running when the sample was taken (`load`, `query:<type>`, `flush`,
    /// `compact`, ...), or `idle` between steps.
    pub phase: String,
    /// Taken at a step's start or end (or the sampler's start or stop), not on the clock.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub boundary: bool,
    /// Which start of the server (its counters start again at every start).
    pub session: u32,
    /// `proc` (the managed server's process tree) or `metrics` (the server's `/metrics`).
    pub source: String,
    pub pid: Option<u32>,
    /// Processes in the tree.
    pub processes: Option<u32>,
    /// Cumulative CPU seconds of the tree (`null` from `/metrics`, which has only the sum).
    pub cpu_user_s: Option<f64>,
    pub cpu_system_s: Option<f64>,
    /// User plus system.
    pub cpu_s: Option<f64>,
    pub rss_bytes: Option<u64>,
    /// Cumulative bytes the tree read from and wrote to storage (`/proc/<pid>/io`).
    pub read_bytes: Option<u64>,
    pub write_bytes: Option<u64>,
    /// The data directory's size (bytes of its files), when measured in this sample.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub data_dir_bytes: Option<u64>,
    /// The `/metrics` series read (on the boundary samples of a `metrics` source).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub series: Option<String>,
}

/// What the sampler reads.
#[derive(Debug, Clone)]
pub enum Source {
    /// The process tree of a managed server.
    Proc { pid: u32 },
    /// The `/metrics` URL of a server, with the bearer token its API needs (if any).
    Metrics {
        url: String,
        token: Option<String>,
        names: metrics::ProcessSeriesNames,
    },
}

/// What a sampler thread needs.
pub struct Spec {
    pub source: Source,
    pub data_dir: Option<PathBuf>,
    pub out: PathBuf,
    pub session: u32,
    /// The run's first sample (elapsed seconds are counted from it).
    pub epoch: Instant,
    /// The step running when the sampler starts.
    pub phase: String,
    pub interval: Duration,
}

enum Msg {
    Boundary(String),
    Stop,
}

/// A running sampler thread; dropping it stops it (after a last sample).
pub struct Sampler {
    tx: Sender<Msg>,
    handle: Option<JoinHandle<()>>,
}

impl Sampler {
    /// Opens the timeline for appending and starts sampling (the first sample at once).
    pub fn start(spec: Spec) -> Result<Sampler> {
        let file = fs_err::OpenOptions::new()
            .create(true)
            .append(true)
            .open(&spec.out)?
            .into_file();
        let (tx, rx) = mpsc::channel();
        let handle = std::thread::Builder::new()
            .name("tsbsctl-sampler".into())
            .spawn(move || {
                let mut w = Worker::new(spec, file);
                w.take(true);
                let mut next = Instant::now() + w.spec.interval;
                loop {
                    let wait = next.saturating_duration_since(Instant::now());
                    match rx.recv_timeout(wait) {
                        Ok(Msg::Boundary(p)) => {
                            w.spec.phase = p;
                            w.take(true);
                        }
                        Ok(Msg::Stop) | Err(RecvTimeoutError::Disconnected) => {
                            w.take(true);
                            break;
                        }
                        Err(RecvTimeoutError::Timeout) => {
                            w.take(false);
                            next += w.spec.interval;
                            // After a stall (a suspended machine), no burst of catch-up samples.
                            let now = Instant::now();
                            if next < now {
                                next = now + w.spec.interval;
                            }
                        }
                    }
                }
            })
            .map_err(|e| Error::failed(format!("could not start the sampler thread: {e}")))?;
        Ok(Sampler {
            tx,
            handle: Some(handle),
        })
    }

    /// A step started or ended: `phase` runs from now on; sampled at once.
    pub fn boundary(&self, phase: &str) {
        let _ = self.tx.send(Msg::Boundary(phase.to_string()));
    }

    /// Takes a last sample and waits for the thread.
    pub fn stop(mut self) {
        self.finish();
    }

    fn finish(&mut self) {
        if let Some(h) = self.handle.take() {
            let _ = self.tx.send(Msg::Stop);
            let _ = h.join();
        }
    }
}

impl Drop for Sampler {
    fn drop(&mut self) {
        self.finish();
    }
}

/// The sampler thread's state, reused from sample to sample.
struct Worker {
    spec: Spec,
    file: File,
    line: Vec<u8>,
    tree: procfs::TreeReader,
    last_dir: Option<Instant>,
    dir_every: Duration,
    client: Option<reqwest::blocking::Client>,
}

impl Worker {
    fn new(spec: Spec, file: File) -> Worker {
        let client = matches!(spec.source, Source::Metrics { .. })
            .then(crate::http::external)
            .and_then(|c| c.ok());
        Worker {
            spec,
            file,
            line: Vec::with_capacity(512),
            tree: procfs::TreeReader::default(),
            last_dir: None,
            dir_every: DIR_INTERVAL,
            client,
        }
    }

    fn take(&mut self, boundary: bool) {
        let mut s = Sample {
            t: crate::manifest::now_rfc3339(),
            elapsed_s: round3(self.spec.epoch.elapsed().as_secs_f64()),
            phase: self.spec.phase.clone(),
            boundary,
            session: self.spec.session,
            source: String::new(),
            pid: None,
            processes: None,
            cpu_user_s: None,
            cpu_system_s: None,
            cpu_s: None,
            rss_bytes: None,
            read_bytes: None,
            write_bytes: None,
            data_dir_bytes: None,
            series: None,
        };
        match &self.spec.source {
            Source::Proc { pid } => {
                s.source = "proc".into();
                s.pid = Some(*pid);
                if let Some(u) = self.tree.usage(*pid) {
                    s.processes = Some(u.processes);
                    s.cpu_user_s = Some(round3(u.user_seconds));
                    s.cpu_system_s = Some(round3(u.system_seconds));
                    s.cpu_s = Some(round3(u.user_seconds + u.system_seconds));
                    s.rss_bytes = Some(u.rss_bytes);
                    s.read_bytes = u.read_bytes;
                    s.write_bytes = u.write_bytes;
                }
            }
            Source::Metrics { url, token, names } => {
                s.source = "metrics".into();
                if let Some(text) = self
                    .client
                    .as_ref()
                    .and_then(|c| get(c, url, token, Duration::from_secs(5)))
                {
                    let m = metrics::parse(&text, names);
                    s.cpu_s = m.cpu_seconds.map(round3);
                    s.rss_bytes = m.rss_bytes;
                    if boundary {
                        let names: Vec<&str> =
                            [m.rss_series, m.cpu_series].into_iter().flatten().collect();
                        s.series = Some(names.join(", "));
                    }
                }
            }
        }
        let due = self.last_dir.is_none_or(|t| t.elapsed() >= self.dir_every);
        if let (Some(dir), true) = (&self.spec.data_dir, boundary || due) {
            let started = Instant::now();
            s.data_dir_bytes = dir_bytes(dir);
            let took = started.elapsed();
            self.last_dir = Some(Instant::now());
            self.dir_every = DIR_INTERVAL.max(took * 200);
        }
        self.line.clear();
        if serde_json::to_writer(&mut self.line, &s).is_ok() {
            self.line.push(b'\n');
            // One write per line: a kill leaves whole lines, or one cut short at the end.
            let _ = self.file.write_all(&self.line);
        }
    }
}

/// The body of a successful `GET url` (with its bearer token if any) within `timeout`;
/// `None` when the server does not answer it.
pub fn read_text(url: &str, token: &Option<String>, timeout: Duration) -> Option<String> {
    let c = crate::http::local(Some(timeout)).ok()?;
    get(&c, url, token, timeout)
}

/// One read of series `series` (with the label `key="value"` when `label` is given) of a
/// server's metrics at `url`, with its bearer token if any, within `timeout`; `None` when the
/// server does not answer it or has no such series.
pub fn read_metric(
    url: &str,
    token: &Option<String>,
    series: &str,
    label: Option<(&str, &str)>,
    timeout: Duration,
) -> Option<u64> {
    let text = read_text(url, token, timeout)?;
    metrics::sample(&text, series, label).map(|v| v as u64)
}

fn get(
    c: &reqwest::blocking::Client,
    url: &str,
    token: &Option<String>,
    timeout: Duration,
) -> Option<String> {
    let mut req = c.get(url).timeout(timeout);
    if let Some(t) = token {
        req = req.bearer_auth(t);
    }
    let resp = req.send().ok()?;
    if !resp.status().is_success() {
        return None;
    }
    resp.text().ok()
}

fn round3(x: f64) -> f64 {
    (x * 1000.0).round() / 1000.0
}

/// The bytes of the files under `dir` (symbolic links not followed); `None` when it cannot
/// be read at all. Files that vanish during the walk (a compaction removing its inputs) are
/// skipped.
pub fn dir_bytes(dir: &Path) -> Option<u64> {
    std::fs::symlink_metadata(dir).ok()?;
    let mut total = 0u64;
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        let Ok(rd) = std::fs::read_dir(&d) else {
            continue;
        };
        for e in rd.flatten() {
            let Ok(ft) = e.file_type() else { continue };
            if ft.is_dir() {
                stack.push(e.path());
            } else if ft.is_file() {
                total += e.metadata().map(|m| m.len()).unwrap_or(0);
            }
        }
    }
    Some(total)
}

/// The samples of a timeline file; a line that does not parse (the last one, cut by a kill)
/// is skipped. No file: no samples.
pub fn read(path: &Path) -> Vec<Sample> {
    let Ok(text) = std::fs::read_to_string(path) else {
        return Vec::new();
    };
    text.lines()
        .filter_map(|l| serde_json::from_str(l).ok())
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_sampler_writes_lines_as_it_samples_and_a_cut_line_is_skipped() {
        use std::os::unix::process::CommandExt;
        let d = tempfile::tempdir().unwrap();
        let data = d.path().join("data");
        std::fs::create_dir_all(data.join("sub")).unwrap();
        std::fs::write(data.join("sub/f"), vec![0u8; 1000]).unwrap();
        let out = d.path().join(TIMELINE_FILE);
        let mut child = std::process::Command::new("sleep")
            .arg("30")
            .process_group(0)
            .spawn()
            .unwrap();
        let s = Sampler::start(Spec {
            source: Source::Proc { pid: child.id() },
            data_dir: Some(data.clone()),
            out: out.clone(),
            session: 1,
            epoch: Instant::now(),
            phase: "load".into(),
            interval: Duration::from_millis(50),
        })
        .unwrap();
        std::thread::sleep(Duration::from_millis(180));
        s.boundary("query:x");
        std::thread::sleep(Duration::from_millis(120));
        s.stop();
        let _ = child.kill();
        let _ = child.wait();
        // A line cut by a kill at the end.
        let mut f = std::fs::OpenOptions::new().append(true).open(&out).unwrap();
        f.write_all(b"{\"t\":\"2026").unwrap();
        let samples = read(&out);
        assert!(samples.len() >= 5, "{samples:?}");
        let first = &samples[0];
        assert!(first.boundary && first.phase == "load");
        assert_eq!(first.data_dir_bytes, Some(1000));
        assert_eq!(first.processes, Some(1));
        assert!(first.rss_bytes.unwrap() > 0);
        assert_eq!(first.pid, Some(child.id()));
        // Clock samples between boundaries skip the walk (due every 10 s).
        assert!(samples
            .iter()
            .any(|s| !s.boundary && s.data_dir_bytes.is_none()));
        let b = samples.iter().position(|s| s.phase == "query:x").unwrap();
        assert!(samples[b].boundary && samples[b].data_dir_bytes.is_some());
        assert!(samples[..b].iter().all(|s| s.phase == "load"));
        let last = samples.last().unwrap();
        assert!(last.boundary && last.phase == "query:x");
        assert!(samples.windows(2).all(|w| w[0].elapsed_s <= w[1].elapsed_s));
    }
}
