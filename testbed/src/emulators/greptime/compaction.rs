//! The compaction scheduler: one background worker per process, as the real region worker's
//! compaction pool with its default of one job at a time.
//!
//! * `ADMIN COMPACT_TABLE` is synchronous: the statement waits for its job (queued behind a
//!   running one: "Region … is compacting, manually compaction will be re-scheduled.").
//! * Every flush schedules an automatic TWCS job (`waiter_num: 0`); it picks a time window
//!   whose files overlap, or that holds `trigger_file_num` (4) files or more (v1.0.2
//!   `compaction/twcs.rs`: overlapping files form several sorted runs, which are reduced;
//!   otherwise small files are merged from 4 on). While a job runs, `/metrics` reads
//!   `greptime_mito_inflight_compaction_count 1` (observed on v1.0.2: 1 within 10 ms of the
//!   FLUSH answer that scheduled it, 0 again right after its "Compacted SST files" line).
//! * A job takes time in proportion to the bytes it rewrites, partly on the CPU as a merge
//!   does (a draining stop sees that as progress) (knob `compaction_ms_per_mib`, per
//!   MiB of input, and per output window for SWCS, which re-reads the whole input for every
//!   window), logging
//!   one `mito2::compaction::compactor` line per window, then writes its outputs and the real
//!   "Compacted SST files" line, then commits the manifest.
//! * No plan: the waiter gets 0 and nothing is logged after "Successfully scheduled".
//! * SIGTERM ([`Scheduler::drain`]): the running job and every queued one still run to the end of
//!   their merge, then fail the manifest update ("Region … is stopped"): their outputs stay on
//!   disk as orphans and a waiting statement gets HTTP 500 (code 1002), as observed on v1.0.2.
//!
//! Guessed (not observed): the exact timing model; the log texts are the observed ones.

use std::collections::VecDeque;
use std::sync::mpsc;
use std::sync::{Arc, Condvar, Mutex};
use std::time::{Duration, Instant};

use super::logging;
use super::store::{region_display, GtError, Store};

struct Job {
    region_id: u64,
    strict: bool,
    window: Option<u64>,
    parallelism: u32,
    waiter: Option<mpsc::Sender<Result<(), GtError>>>,
}

#[derive(Default)]
struct State {
    queue: VecDeque<Job>,
    running: Option<u64>,
    stopping: bool,
    /// A job has run: the real gauge is registered on first use, so `/metrics` has no
    /// `greptime_mito_inflight_compaction_count` line before the first compaction.
    ever_ran: bool,
    /// A job with a plan is merging (a job whose picker finds nothing is never submitted on
    /// the real server, so it never shows on the gauge).
    merging: bool,
}

pub struct Scheduler {
    store: Arc<Mutex<Store>>,
    state: Mutex<State>,
    cv: Condvar,
    ms_per_mib: f64,
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

impl Scheduler {
    /// Starts the worker thread.
    pub fn start(store: Arc<Mutex<Store>>, ms_per_mib: f64) -> Arc<Scheduler> {
        let s = Arc::new(Scheduler {
            store,
            state: Mutex::new(State::default()),
            cv: Condvar::new(),
            ms_per_mib,
        });
        let w = Arc::clone(&s);
        std::thread::spawn(move || w.work());
        s
    }

    fn submit(&self, job: Job) {
        let mut st = lock(&self.state);
        let busy = st.running == Some(job.region_id)
            || st.queue.iter().any(|j| j.region_id == job.region_id);
        if job.waiter.is_some() && busy {
            logging::info(
                "mito2::compaction",
                &format!(
                    "Region {} is compacting, manually compaction will be re-scheduled.",
                    region_display(job.region_id)
                ),
            );
        }
        if job.waiter.is_none() && st.queue.iter().any(|j| j.region_id == job.region_id) {
            // An automatic job already waits for this region.
            return;
        }
        st.queue.push_back(job);
        self.cv.notify_all();
    }

    /// The `greptime_mito_inflight_compaction_count` gauge (1 while a job runs; `None` before
    /// the first job, when the real server has no such line on `/metrics`). A queued job does
    /// not count, as on the real server (the gauge goes up when the job starts).
    pub fn inflight(&self) -> Option<u32> {
        let st = lock(&self.state);
        st.ever_ran.then(|| u32::from(st.merging))
    }

    /// Schedules the automatic compaction of every region flushed since the last call.
    pub fn after_flush(&self) {
        let ids = lock(&self.store).take_flushed();
        for region_id in ids {
            self.submit(Job {
                region_id,
                strict: false,
                window: None,
                parallelism: 1,
                waiter: None,
            });
        }
    }

    /// A manual compaction of every region of a table (one request per region, as the
    /// real frontend sends them): waits until each has run; the first failure is the answer.
    pub fn manual(
        &self,
        table_id: u32,
        strict: bool,
        window: Option<u64>,
        parallelism: u32,
    ) -> Result<(), GtError> {
        let regions = lock(&self.store).region_ids(table_id);
        let mut waits = Vec::new();
        for region_id in regions {
            let (tx, rx) = mpsc::channel();
            self.submit(Job {
                region_id,
                strict,
                window,
                parallelism,
                waiter: Some(tx),
            });
            logging::info(
                "mito2::worker::handle_compaction",
                &format!(
                    "Successfully scheduled compaction task for region: {}",
                    region_display(region_id)
                ),
            );
            waits.push(rx);
        }
        let mut result = Ok(());
        for rx in waits {
            let r = rx
                .recv()
                .unwrap_or_else(|_| Err(GtError::new(1003, "compaction worker is gone")));
            if result.is_ok() {
                result = r;
            }
        }
        result
    }

    /// SIGTERM: lets the running and the queued jobs finish (each then fails its manifest
    /// update), and returns once the queue is empty.
    pub fn drain(&self) {
        let mut st = lock(&self.state);
        st.stopping = true;
        self.cv.notify_all();
        while st.running.is_some() || !st.queue.is_empty() {
            st = self.cv.wait(st).unwrap_or_else(|e| e.into_inner());
        }
    }

    fn work(&self) {
        loop {
            let job = {
                let mut st = lock(&self.state);
                loop {
                    if let Some(j) = st.queue.pop_front() {
                        st.running = Some(j.region_id);
                        break j;
                    }
                    st = self.cv.wait(st).unwrap_or_else(|e| e.into_inner());
                }
            };
            let res = self.run(&job);
            lock(&self.state).merging = false;
            if let Some(w) = &job.waiter {
                let _ = w.send(res);
            }
            let mut st = lock(&self.state);
            st.running = None;
            self.cv.notify_all();
        }
    }

    fn run(&self, job: &Job) -> Result<(), GtError> {
        let rid = region_display(job.region_id);
        let plan = {
            let store = lock(&self.store);
            let plan = store.plan(job.region_id, job.window, job.strict);
            if let Some(p) = &plan {
                if job.strict {
                    logging::info(
                        "mito2::compaction::window",
                        &format!(
                            "Compaction window for region: {rid} is {} seconds",
                            p.window
                        ),
                    );
                } else if job.window.is_none() {
                    logging::info(
                        "mito2::compaction::twcs",
                        &format!(
                            "Compaction window for region {rid} is not present, inferring from files: {}",
                            p.window
                        ),
                    );
                }
            }
            plan
        };
        let Some(plan) = plan else {
            return Ok(());
        };
        {
            let mut st = lock(&self.state);
            st.ever_ran = true;
            st.merging = true;
        }
        let start = Instant::now();
        // Proportional to what is rewritten: a strict window (SWCS) re-reads the whole input
        // for every output window; TWCS merges each window's own files once.
        let mib = plan.input_bytes as f64 / (1 << 20) as f64;
        let lanes = job.parallelism.max(1).min(plan.windows as u32) as f64;
        let reads = if job.strict { plan.windows as f64 } else { 1.0 };
        let per_window = Duration::from_secs_f64(
            (mib * self.ms_per_mib / 1000.0).max(0.0) * reads / lanes / plan.windows as f64,
        );
        let inputs = plan
            .inputs
            .iter()
            .map(|f| f.file_id.as_str())
            .collect::<Vec<_>>()
            .join(", ");
        for _ in 0..plan.windows {
            merge_work(per_window);
            logging::info(
                "mito2::compaction::compactor",
                &format!("Region {rid} compaction inputs: [{inputs}], outputs: [1 file]"),
            );
        }
        let outputs = lock(&self.store).merge(&plan)?;
        let waiter_num = u32::from(job.waiter.is_some());
        logging::info(
            "mito2::compaction::task",
            &plan.compacted_line(&outputs, waiter_num, start.elapsed().as_secs_f64()),
        );
        if lock(&self.state).stopping {
            let why = format!("Region {rid} is stopped");
            logging::error(
                "mito2::region",
                &format!("Failed to update manifest, region_id: {rid} err=0: {why}"),
            );
            logging::error(
                "mito2::compaction::task",
                &format!("Failed to compact region, region id: {rid} err=0: {why}"),
            );
            return Err(GtError::new(
                1002,
                format!("Failed to execute admin function compact_table: Execution error: {why}"),
            ));
        }
        lock(&self.store).commit(&plan, outputs)?;
        logging::info(
            "mito2::request",
            &format!("Successfully compacted region: {rid}"),
        );
        Ok(())
    }
}

/// A merge's time, spent as a merge spends it: on the CPU, in part (a real merge keeps a core
/// busy, which is the progress a draining stop sees; a pure sleep would show none). 15 ms of
/// spinning in every 150 ms: enough for the CPU clock (10 ms ticks), cheap on a shared CI box.
fn merge_work(d: Duration) {
    let end = Instant::now() + d;
    loop {
        let now = Instant::now();
        if now >= end {
            return;
        }
        let spin = now + Duration::from_millis(15).min(end - now);
        let mut x = 0u64;
        while Instant::now() < spin {
            x = std::hint::black_box(x.wrapping_add(1));
        }
        std::thread::sleep(
            Duration::from_millis(135).min(end.saturating_duration_since(Instant::now())),
        );
    }
}
