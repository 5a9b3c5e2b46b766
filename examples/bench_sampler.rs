//! The resource sampler's own CPU (issue 24): samples a process tree like a database
//! server's for a while, as a bench run does, and prints tsbsctl's CPU per second of sampling.
//!
//!   bench_sampler PID DATA_DIR SECONDS [INTERVAL_MS]
//!
//! The process is otherwise idle, so `getrusage(RUSAGE_SELF)` is the sampler thread's CPU
//! (plus this example's start). Run by `scripts/bench-sampler.sh`.

use std::path::PathBuf;
use std::time::{Duration, Instant};

use tsbsctl::sampler::{Sampler, Source, Spec};

fn cpu_seconds() -> f64 {
    // SAFETY: getrusage fills the struct passed.
    let mut u: libc::rusage = unsafe { std::mem::zeroed() };
    unsafe { libc::getrusage(libc::RUSAGE_SELF, &mut u) };
    let t = |tv: libc::timeval| tv.tv_sec as f64 + tv.tv_usec as f64 / 1e6;
    t(u.ru_utime) + t(u.ru_stime)
}

fn main() {
    let a: Vec<String> = std::env::args().collect();
    let pid: u32 = a[1].parse().expect("PID");
    let data_dir = PathBuf::from(&a[2]);
    let seconds: u64 = a[3].parse().expect("SECONDS");
    let interval = Duration::from_millis(a.get(4).map_or(1000, |s| s.parse().expect("ms")));
    let out = std::env::temp_dir().join(format!("bench-sampler-{}.jsonl", std::process::id()));
    let cpu0 = cpu_seconds();
    let started = Instant::now();
    let s = Sampler::start(Spec {
        source: Source::Proc { pid },
        data_dir: Some(data_dir),
        out: out.clone(),
        session: 1,
        epoch: started,
        phase: "query:bench".into(),
        interval,
    })
    .expect("sampler");
    std::thread::sleep(Duration::from_secs(seconds));
    s.stop();
    let wall = started.elapsed().as_secs_f64();
    let cpu = cpu_seconds() - cpu0;
    let samples = tsbsctl::sampler::read(&out);
    let procs = samples.last().and_then(|s| s.processes).unwrap_or(0);
    let _ = std::fs::remove_file(&out);
    println!(
        "samples={} processes={} wall_s={:.1} cpu_s={:.4} cpu_per_sample_ms={:.3} share_of_one_core_pct={:.3}",
        samples.len(),
        procs,
        wall,
        cpu,
        cpu * 1000.0 / samples.len().max(1) as f64,
        cpu / wall * 100.0
    );
}
