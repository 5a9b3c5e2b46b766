//! The emulated programs. `testbed emulate <tool> args...` lands in [`run`]; every emulator
//! takes its own arguments (without the tool name) and returns its exit code.

pub mod exampledb;
pub mod go;
pub mod greptime;
pub mod influxdb3;
pub mod tsbs_generate;
pub mod tsbs_load;
pub mod tsbs_run;
pub mod tsbs_sql;
pub mod tsbs_timescaledb;
pub mod tsbs_usecases;

/// Runs emulator `tool` with `args`; returns the exit code.
pub fn run(tool: &str, args: Vec<String>) -> i32 {
    match tool {
        "exampledb" => exampledb::main(args),
        "go" => go::main(args),
        "greptime" => greptime::main(args),
        "influxdb3" => influxdb3::main(args),
        "tsbs_generate_data" => tsbs_generate::data_main(args),
        "tsbs_generate_queries" => tsbs_generate::queries_main(args),
        "tsbs_load_greptime" => tsbs_load::greptime_main(args),
        "tsbs_load_influx3" => tsbs_load::influx3_main(args),
        "tsbs_load_influx2" => tsbs_load::influx2_main(args),
        "tsbs_run_queries_influx" => tsbs_run::influx_main(args),
        "tsbs_run_queries_influx3" => tsbs_run::influx3_main(args),
        "tsbs_load_timescaledb" => tsbs_timescaledb::load::main(args),
        "tsbs_run_queries_timescaledb" => tsbs_timescaledb::run::main(args),
        other => {
            eprintln!("testbed: no emulator named {other:?}");
            2
        }
    }
}

/// What an emulator not built yet answers.
#[allow(dead_code)] // kept for emulators still being written
pub(crate) fn not_emulated(tool: &str) -> i32 {
    eprintln!("testbed: the {tool} emulator is not built yet");
    2
}

/// The Prometheus process collector's series, as the real servers serve them on `/metrics`,
/// with this emulator process's own values from `/proc/self` (so a sampler reading them sees
/// a live process, not constants).
/// The process's resident bytes (`VmRSS`), 0 when unreadable.
fn rss_bytes() -> u64 {
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    let rss_kib: u64 = status
        .lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))
        .and_then(|v| v.split_whitespace().next()?.parse().ok())
        .unwrap_or(0);
    rss_kib * 1024
}

/// `bytes` allocated and written page by page, so they are resident (counted by a cgroup's
/// memory limit), not merely reserved: a stand-in's working memory that can get it
/// OOM-killed where the real server is.
pub(crate) fn touched_bytes(bytes: usize) -> Vec<u8> {
    let mut v = vec![0u8; bytes];
    for i in (0..v.len()).step_by(4096) {
        v[i] = 1;
    }
    std::hint::black_box(&mut v);
    v
}

/// What InfluxDB 3's `/metrics` says of its memory: no process collector (no CPU series, no
/// `process_resident_memory_bytes`), only jemalloc's statistics as one gauge with a `stat`
/// label (`influxdb3/src/commands/serve/jemalloc.rs`, encoded by `metric_exporters`'
/// Prometheus text encoder). The emulator's own resident bytes stand for jemalloc's.
pub(crate) fn jemalloc_metrics() -> String {
    let rss = rss_bytes();
    let mut s = String::from("# HELP jemalloc_memstats_bytes jemalloc metrics - http://jemalloc.net/jemalloc.3.html#stats.active\n# TYPE jemalloc_memstats_bytes gauge\n");
    for (stat, v) in [
        ("active", rss / 10 * 8),
        ("alloc", rss / 10 * 7),
        ("metadata", rss / 100),
        ("mapped", rss / 10 * 9),
        ("resident", rss / 10 * 9),
        ("retained", rss / 10),
    ] {
        s.push_str(&format!("jemalloc_memstats_bytes{{stat=\"{stat}\"}} {v}\n"));
    }
    s
}

pub(crate) fn process_metrics() -> String {
    let stat = std::fs::read_to_string("/proc/self/stat").unwrap_or_default();
    // After the command name (which may hold spaces): utime and stime are fields 14 and 15.
    let ticks: u64 = stat
        .rfind(')')
        .map(|i| {
            stat[i + 1..]
                .split_whitespace()
                .skip(11)
                .take(2)
                .filter_map(|v| v.parse::<u64>().ok())
                .sum()
        })
        .unwrap_or(0);
    // SAFETY: sysconf only reads a configuration value.
    let hz = unsafe { libc::sysconf(libc::_SC_CLK_TCK) }.max(1) as f64;
    format!(
        "# HELP process_cpu_seconds_total Total user and system CPU time spent in seconds.\n# TYPE process_cpu_seconds_total counter\nprocess_cpu_seconds_total {}\n# HELP process_resident_memory_bytes Resident memory size in bytes.\n# TYPE process_resident_memory_bytes gauge\nprocess_resident_memory_bytes {}\n",
        ticks as f64 / hz,
        rss_bytes()
    )
}
