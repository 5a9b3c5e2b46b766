//! The run's resource timeline ([`crate::sampler`]) wired to a bench command: a sampler runs
//! while the managed server runs (started after its readiness, stopped before it is told to
//! stop), or, for an external server whose product serves `/metrics`, from its first phase to
//! the run's end. Every step event of the run is a boundary: the samples carry the step
//! that runs (`idle` between steps; the `server` step, which spans the others, is no phase).

use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::Instant;

use crate::output::Warning;
use crate::run::{Status, StepObserver};
use crate::sampler::{self, Sampler, Source, Spec};

use super::Bench;

/// The label of samples taken while no step runs.
pub const IDLE: &str = "idle";

pub struct Timeline {
    out: PathBuf,
    epoch: Instant,
    inner: Mutex<Inner>,
}

#[derive(Default)]
struct Inner {
    /// Steps running now, innermost last.
    running: Vec<String>,
    sampler: Option<Sampler>,
    sessions: u32,
}

impl Inner {
    fn phase(&self) -> String {
        self.running
            .last()
            .cloned()
            .unwrap_or_else(|| IDLE.to_string())
    }
}

impl Timeline {
    pub fn new(run_dir: &std::path::Path) -> Arc<Timeline> {
        Arc::new(Timeline {
            out: run_dir.join(sampler::TIMELINE_FILE),
            epoch: Instant::now(),
            inner: Mutex::new(Inner::default()),
        })
    }

    /// Starts sampling `source` (a sampler already running is kept). A sampler that cannot
    /// start costs the run its timeline, not its measurement: said as a warning.
    pub fn start(&self, source: Source, data_dir: Option<PathBuf>) -> Option<Warning> {
        let mut g = self.inner.lock().unwrap_or_else(|e| e.into_inner());
        if g.sampler.is_some() {
            return None;
        }
        g.sessions += 1;
        let spec = Spec {
            source,
            data_dir,
            out: self.out.clone(),
            session: g.sessions,
            epoch: self.epoch,
            phase: g.phase(),
            interval: sampler::INTERVAL,
        };
        match Sampler::start(spec) {
            Ok(s) => {
                g.sampler = Some(s);
                None
            }
            Err(e) => Some(Warning::NoTimeline { error: e.message }),
        }
    }

    /// Stops sampling after a last sample.
    pub fn stop(&self) {
        let s = self
            .inner
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .sampler
            .take();
        if let Some(s) = s {
            s.stop();
        }
    }
}

impl StepObserver for Timeline {
    fn step_event(&self, step: &str, status: Status) {
        if step == "server" {
            return;
        }
        let mut g = self.inner.lock().unwrap_or_else(|e| e.into_inner());
        // A step's start or end is a boundary; an event within a running step (a stall) is not.
        let changed = if status.finished() {
            match g.running.iter().rposition(|s| s == step) {
                Some(i) => {
                    g.running.remove(i);
                    true
                }
                None => false,
            }
        } else if g.running.iter().any(|s| s == step) {
            false
        } else {
            g.running.push(step.to_string());
            true
        };
        if let (true, Some(s)) = (changed, &g.sampler) {
            s.boundary(&g.phase());
        }
    }
}

impl Bench<'_> {
    /// Samples the managed server that just became ready.
    pub(super) fn start_timeline(&mut self, pid: u32) {
        let warning = self
            .timeline
            .start(Source::Proc { pid }, self.target.data_dir());
        if let Some(w) = warning {
            self.reporter().warning(&w);
        }
    }

    /// Samples an external server through its `/metrics`, when its product serves them.
    pub(super) fn start_external_timeline(&mut self) {
        let Some(path) = self.target.product.metrics_path() else {
            return;
        };
        let url = format!("{}{path}", self.target.endpoint().trim_end_matches('/'));
        let token = self.target.external_token().map(str::to_string);
        let names = self.target.product.process_series();
        if let Some(w) = self
            .timeline
            .start(Source::Metrics { url, token, names }, None)
        {
            self.reporter().warning(&w);
        }
    }
}
