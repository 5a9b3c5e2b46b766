//! Is the machine quiet? What else ran on the host before and during a measurement (issue 24
//! §4): a number measured beside another build or benchmark is not the database's number.
//!
//! The host's CPU time comes from `/proc/stat` (all CPUs, in clock ticks); what the run itself
//! used (tsbsctl, the TSBS tool it waited for, the managed server's whole process tree) is
//! subtracted, and the rest is "other processes". Swap activity is `/proc/vmstat` `pswpin` +
//! `pswpout`, the frequency policy each CPU's `cpufreq/scaling_governor` (absent in most VMs:
//! unknown). Two readings of a few small files: nothing that costs the measurement anything.

use std::time::{Duration, Instant};

/// Other processes above this share of the host's CPU make a measurement "not quiet".
pub const OTHERS_LIMIT: f64 = 0.10;
/// How long the check before a measured phase watches the host, unless
/// `TSBSCTL_MACHINE_CHECK_MS` says otherwise (1 to 60000; the test suite shortens it).
pub const BEFORE: Duration = Duration::from_secs(2);

const CHECK_ENV: &str = "TSBSCTL_MACHINE_CHECK_MS";

/// The check's length; a bad `TSBSCTL_MACHINE_CHECK_MS` is bad input (exit 2).
pub fn before() -> crate::error::Result<Duration> {
    match std::env::var(CHECK_ENV) {
        Err(_) => Ok(BEFORE),
        Ok(v) => v
            .parse::<u64>()
            .ok()
            .filter(|ms| (1..=60_000).contains(ms))
            .map(Duration::from_millis)
            .ok_or_else(|| {
                crate::error::Error::invalid(format!(
                    "{CHECK_ENV}={v:?} is not a number of milliseconds from 1 to 60000"
                ))
                .with_hint(format!("fix or unset {CHECK_ENV} (default 2000)"))
            }),
    }
}

/// One reading of the host and of the run's own processes.
#[derive(Debug, Clone, Copy)]
pub struct Reading {
    at: Instant,
    /// All CPUs: busy and total ticks since boot.
    busy: u64,
    total: u64,
    /// tsbsctl and its reaped children (the TSBS tools), in seconds.
    ours_s: f64,
    /// The managed server's whole process tree (the root, its threads, every descendant and
    /// what they reaped), in seconds.
    server_s: Option<f64>,
    swapped: Option<u64>,
}

/// What the host did between two readings (recorded with the steps it was read around).
pub use crate::run::data::Quiet;

fn host_ticks() -> Option<(u64, u64)> {
    let s = std::fs::read_to_string("/proc/stat").ok()?;
    let line = s.lines().find(|l| l.starts_with("cpu "))?;
    let v: Vec<u64> = line
        .split_whitespace()
        .skip(1)
        .filter_map(|x| x.parse().ok())
        .collect();
    // user nice system idle iowait irq softirq steal (guest time is inside user already).
    let total: u64 = v.iter().take(8).sum();
    let idle = v.get(3).copied().unwrap_or(0) + v.get(4).copied().unwrap_or(0);
    Some((total - idle, total))
}

fn swapped() -> Option<u64> {
    let s = std::fs::read_to_string("/proc/vmstat").ok()?;
    let get = |k: &str| {
        s.lines().find_map(|l| {
            l.strip_prefix(k)?
                .strip_prefix(' ')?
                .trim()
                .parse::<u64>()
                .ok()
        })
    };
    Some(get("pswpin")? + get("pswpout")?)
}

fn ours_seconds() -> f64 {
    let t = |who| {
        // SAFETY: getrusage fills the struct we pass.
        let mut u: libc::rusage = unsafe { std::mem::zeroed() };
        unsafe { libc::getrusage(who, &mut u) };
        let s = |tv: libc::timeval| tv.tv_sec as f64 + tv.tv_usec as f64 / 1e6;
        s(u.ru_utime) + s(u.ru_stime)
    };
    t(libc::RUSAGE_SELF) + t(libc::RUSAGE_CHILDREN)
}

/// The CPU time of the managed server's whole tree (PostgreSQL's backends under the
/// postmaster, the GreptimeDB cluster's roles under tsbsctl's launcher), read by the
/// sampler's tree walk.
fn server_tree_seconds(pid: u32) -> Option<f64> {
    let u = crate::sampler::procfs::TreeReader::default().usage(pid)?;
    Some(u.user_seconds + u.system_seconds)
}

fn ticks_per_second() -> f64 {
    // SAFETY: sysconf has no preconditions.
    let t = unsafe { libc::sysconf(libc::_SC_CLK_TCK) };
    if t > 0 {
        t as f64
    } else {
        100.0
    }
}

fn governor() -> Option<String> {
    std::fs::read_to_string("/sys/devices/system/cpu/cpu0/cpufreq/scaling_governor")
        .ok()
        .map(|s| s.trim().to_string())
}

fn load_average() -> Option<f64> {
    std::fs::read_to_string("/proc/loadavg")
        .ok()?
        .split_whitespace()
        .next()?
        .parse()
        .ok()
}

impl Reading {
    /// Now, with the managed server's pid when one runs.
    pub fn now(server: Option<u32>) -> Reading {
        let (busy, total) = host_ticks().unwrap_or((0, 0));
        Reading {
            at: Instant::now(),
            busy,
            total,
            ours_s: ours_seconds(),
            server_s: server.and_then(server_tree_seconds),
            swapped: swapped(),
        }
    }

    /// What happened since `self`. The tool must have been reaped by now (its CPU then
    /// counts in tsbsctl's children).
    pub fn since(&self, server: Option<u32>) -> Quiet {
        self.until(&Reading::now(server))
    }

    /// What happened between `self` and a later reading `end`.
    fn until(&self, end: &Reading) -> Quiet {
        let seconds = end.at.duration_since(self.at).as_secs_f64();
        let total = end.total.saturating_sub(self.total);
        let hz = ticks_per_second();
        let server_ticks = match (self.server_s, end.server_s) {
            (Some(a), Some(b)) => Some((b - a).max(0.0) * hz),
            _ => None,
        };
        let (host_busy_share, others_cpu_share, server_cpu_share) = if total > 0 && self.total > 0 {
            let busy = end.busy.saturating_sub(self.busy) as f64;
            let ours = (end.ours_s - self.ours_s).max(0.0) * hz + server_ticks.unwrap_or(0.0);
            (
                Some(busy / total as f64),
                Some(((busy - ours) / total as f64).clamp(0.0, 1.0)),
                server_ticks.map(|t| (t / total as f64).clamp(0.0, 1.0)),
            )
        } else {
            (None, None, None)
        };
        let swap = match (self.swapped, end.swapped) {
            (Some(a), Some(b)) if seconds > 0.0 => Some(b.saturating_sub(a) as f64 / seconds),
            _ => None,
        };
        let quiet = others_cpu_share.map(|o| o <= OTHERS_LIMIT && swap.is_none_or(|s| s == 0.0));
        Quiet {
            seconds,
            host_busy_share,
            others_cpu_share,
            server_cpu_share,
            swap_pages_per_second: swap,
            load_average_1m: load_average(),
            cpu_governor: governor(),
            threshold: OTHERS_LIMIT,
            quiet,
        }
    }
}

impl Quiet {
    /// "other processes used 35% of the CPU" (or swapping), for messages.
    pub fn words(&self) -> String {
        let mut parts = Vec::new();
        if let Some(o) = self.others_cpu_share {
            parts.push(format!(
                "other processes used {:.0}% of the host's CPU over {:.1} s",
                o * 100.0,
                self.seconds
            ));
        }
        if let Some(s) = self.swap_pages_per_second.filter(|s| *s > 0.0) {
            parts.push(format!("{s:.0} pages/s were swapped"));
        }
        parts.join(", ")
    }
}

/// Watches the host for [`BEFORE`] while nothing of the run measures.
pub fn check_before(server: Option<u32>) -> Quiet {
    let r = Reading::now(server);
    std::thread::sleep(before().unwrap_or(BEFORE));
    r.since(server)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_busy_loop_of_our_own_is_not_another_process() {
        let r = Reading::now(None);
        // Burn CPU in tsbsctl's own process: counted as ours.
        let t = Instant::now();
        let mut x = 0u64;
        while t.elapsed() < Duration::from_millis(400) {
            x = x.wrapping_mul(6364136223846793005).wrapping_add(1);
        }
        std::hint::black_box(x);
        let q = r.since(None);
        let (busy, others) = (q.host_busy_share.unwrap(), q.others_cpu_share.unwrap());
        assert!(busy > 0.0, "{q:?}");
        assert!(others <= busy, "{q:?}");
        assert_eq!(q.threshold, OTHERS_LIMIT);
    }

    #[test]
    fn another_process_burning_a_cpu_is_seen() {
        let r = Reading::now(None);
        // A busy process that is not ours in rusage terms until reaped: still running at the
        // second reading, so its time is "other".
        let mut c = std::process::Command::new("sh")
            .args(["-c", "while :; do :; done"])
            .spawn()
            .unwrap();
        std::thread::sleep(Duration::from_millis(600));
        let q = r.since(None);
        let _ = c.kill();
        let _ = c.wait();
        let cpus = std::thread::available_parallelism().map_or(1, |n| n.get()) as f64;
        // One busy CPU of `cpus`, less what a crowded machine takes from it.
        assert!(
            q.others_cpu_share.unwrap() > 0.2 / cpus,
            "{q:?} on {cpus} CPUs"
        );
        assert!(q.words().contains("other processes used"), "{}", q.words());
    }

    /// Kills the fake server's process group and reaps it, also when an assertion fails.
    struct Reap(std::process::Child);
    impl Drop for Reap {
        fn drop(&mut self) {
            let pid = nix::unistd::Pid::from_raw(self.0.id() as i32);
            let _ = nix::sys::signal::killpg(pid, nix::sys::signal::Signal::SIGKILL);
            let _ = self.0.wait();
        }
    }

    #[test]
    fn a_servers_busy_child_is_the_servers_not_another_process() {
        use std::os::unix::process::CommandExt;
        // A server whose work is done by a child (a PostgreSQL backend under the
        // postmaster): the root only waits.
        let server = Reap(
            std::process::Command::new("sh")
                .args(["-c", "(while :; do :; done) & wait"])
                .process_group(0)
                .spawn()
                .unwrap(),
        );
        let pid = server.0.id();
        let root_ticks = || crate::proc::process_cpu_ticks(pid).unwrap_or(0);
        let (root_before, first) = (root_ticks(), Reading::now(Some(pid)));
        // Until the child has burnt a tenth of a second (bounded: a crowded host gives it
        // less of a CPU, never none for 30 s).
        let deadline = Instant::now() + Duration::from_secs(30);
        let mut last = Reading::now(Some(pid));
        while Instant::now() < deadline
            && last.server_s.unwrap_or(0.0) - first.server_s.unwrap_or(0.0) < 0.1
        {
            std::thread::sleep(Duration::from_millis(100));
            last = Reading::now(Some(pid));
        }
        let tree = last.server_s.unwrap() - first.server_s.unwrap();
        assert!(tree >= 0.1, "the tree's CPU: {tree} s");
        // The root itself did next to nothing: the old single-pid count missed the work.
        let root = (root_ticks() - root_before) as f64 / ticks_per_second();
        assert!(root < tree / 2.0, "root {root} s, tree {tree} s");
        let with = first.until(&last);
        let without = Reading {
            server_s: None,
            ..first
        }
        .until(&Reading {
            server_s: None,
            ..last
        });
        let (w, wo) = (
            with.others_cpu_share.unwrap(),
            without.others_cpu_share.unwrap(),
        );
        let share = with.server_cpu_share.unwrap();
        assert!(share > 0.0, "{with:?}");
        assert!(without.server_cpu_share.is_none(), "{without:?}");
        // What the tree did is taken off "other processes" (up to the clamp at 0).
        assert!(
            (w - (wo - share).max(0.0)).abs() < 1e-9,
            "with {with:?} without {without:?}"
        );
    }
}
