//! Per-phase figures from a timeline: consecutive samples of one step and one server start
//! form a stretch, which runs from its first sample to the next stretch's first sample (the
//! boundary sample both share). A phase sums its stretches.

use serde::{Deserialize, Serialize};

use super::Sample;

/// The resources one phase used. A figure nobody measured is `None` ("unknown"), never 0.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PhaseResources {
    pub phase: String,
    pub samples: u64,
    /// Seconds covered by samples.
    pub wall_seconds: f64,
    pub cpu_seconds: Option<f64>,
    pub cpu_user_seconds: Option<f64>,
    pub cpu_system_seconds: Option<f64>,
    /// CPU seconds per wall second: 1.0 is one core busy.
    pub mean_cpu_cores: Option<f64>,
    pub peak_rss_bytes: Option<u64>,
    pub read_bytes: Option<u64>,
    pub write_bytes: Option<u64>,
    /// The data directory's size at the first and last measurement of the phase (its
    /// boundaries), and what grew while the phase ran (summed over its stretches).
    pub data_dir_start_bytes: Option<u64>,
    pub data_dir_end_bytes: Option<u64>,
    pub data_dir_growth_bytes: Option<i64>,
}

#[derive(Default)]
struct Acc {
    samples: u64,
    wall: f64,
    cpu: Option<f64>,
    user: Option<f64>,
    system: Option<f64>,
    /// Wall seconds the CPU sums cover (a stretch without both ends has none).
    cpu_wall: f64,
    peak: Option<u64>,
    read: Option<u64>,
    write: Option<u64>,
    dir_start: Option<u64>,
    dir_end: Option<u64>,
    /// What grew within the stretches that measured the directory twice or more.
    dir_growth: Option<i64>,
}

fn add_f(acc: &mut Option<f64>, a: Option<f64>, b: Option<f64>) -> bool {
    match (a, b) {
        (Some(a), Some(b)) if b >= a => {
            *acc = Some(acc.unwrap_or(0.0) + (b - a));
            true
        }
        _ => false,
    }
}

fn add_u(acc: &mut Option<u64>, a: Option<u64>, b: Option<u64>) {
    if let (Some(a), Some(b)) = (a, b) {
        *acc = Some(acc.unwrap_or(0) + b.saturating_sub(a));
    }
}

/// The phases of `samples` in the order they first ran.
pub fn summarise(samples: &[Sample]) -> Vec<PhaseResources> {
    let mut order: Vec<String> = Vec::new();
    let mut accs: Vec<Acc> = Vec::new();
    let mut i = 0;
    while i < samples.len() {
        let first = &samples[i];
        let mut j = i + 1;
        while j < samples.len()
            && samples[j].phase == first.phase
            && samples[j].session == first.session
        {
            j += 1;
        }
        // The stretch ends at the next stretch's first sample when the server is the same.
        let end = match samples.get(j) {
            Some(n) if n.session == first.session => n,
            _ => &samples[j - 1],
        };
        let k = match order.iter().position(|p| *p == first.phase) {
            Some(k) => k,
            None => {
                order.push(first.phase.clone());
                accs.push(Acc::default());
                accs.len() - 1
            }
        };
        let a = &mut accs[k];
        let wall = (end.elapsed_s - first.elapsed_s).max(0.0);
        a.samples += (j - i) as u64;
        a.wall += wall;
        if add_f(&mut a.cpu, first.cpu_s, end.cpu_s) {
            a.cpu_wall += wall;
        }
        add_f(&mut a.user, first.cpu_user_s, end.cpu_user_s);
        add_f(&mut a.system, first.cpu_system_s, end.cpu_system_s);
        add_u(&mut a.read, first.read_bytes, end.read_bytes);
        add_u(&mut a.write, first.write_bytes, end.write_bytes);
        let stretch = samples[i..j].iter().chain(std::iter::once(end));
        for s in stretch.clone() {
            if let Some(r) = s.rss_bytes {
                a.peak = Some(a.peak.map_or(r, |p| p.max(r)));
            }
        }
        let dirs: Vec<u64> = stretch.filter_map(|s| s.data_dir_bytes).collect();
        if a.dir_start.is_none() {
            a.dir_start = dirs.first().copied();
        }
        if let Some(d) = dirs.last() {
            a.dir_end = Some(*d);
        }
        // Growth is what grew while the phase ran: a phase that runs again later (a machine
        // check before the load and before the queries) must not count what grew in between.
        if let [first, .., last] = dirs[..] {
            a.dir_growth = Some(a.dir_growth.unwrap_or(0) + (last as i64 - first as i64));
        }
        i = j;
    }
    order
        .into_iter()
        .zip(accs)
        .map(|(phase, a)| PhaseResources {
            phase,
            samples: a.samples,
            wall_seconds: round3(a.wall),
            mean_cpu_cores: a
                .cpu
                .filter(|_| a.cpu_wall > 0.0)
                .map(|c| round3(c / a.cpu_wall)),
            cpu_seconds: a.cpu.map(round3),
            cpu_user_seconds: a.user.map(round3),
            cpu_system_seconds: a.system.map(round3),
            peak_rss_bytes: a.peak,
            read_bytes: a.read,
            write_bytes: a.write,
            data_dir_start_bytes: a.dir_start,
            data_dir_end_bytes: a.dir_end,
            // One measurement is a size, not a growth.
            data_dir_growth_bytes: a.dir_growth,
        })
        .collect()
}

fn round3(x: f64) -> f64 {
    (x * 1000.0).round() / 1000.0
}

#[cfg(test)]
mod tests {
    use super::*;

    fn s(elapsed: f64, phase: &str, session: u32, cpu: f64, rss: u64, w: u64) -> Sample {
        Sample {
            t: "t".into(),
            elapsed_s: elapsed,
            phase: phase.into(),
            boundary: false,
            session,
            source: "proc".into(),
            pid: Some(1),
            processes: Some(1),
            cpu_user_s: Some(cpu * 0.75),
            cpu_system_s: Some(cpu * 0.25),
            cpu_s: Some(cpu),
            rss_bytes: Some(rss),
            read_bytes: Some(0),
            write_bytes: Some(w),
            data_dir_bytes: None,
            series: None,
        }
    }

    #[test]
    fn phases_are_summed_from_boundary_to_boundary() {
        let mut v = vec![
            s(0.0, "load", 1, 0.0, 100, 0),
            s(1.0, "load", 1, 1.5, 900, 1000),
            s(2.0, "load", 1, 3.0, 500, 2000),
            // The boundary: load ends here, row-count starts.
            s(4.0, "row-count", 1, 4.0, 300, 3000),
            s(5.0, "row-count", 1, 4.1, 300, 3000),
            // A new server start: counters from 0 again.
            s(10.0, "query:a", 2, 0.0, 50, 0),
            s(12.0, "idle", 2, 1.0, 70, 0),
            s(13.0, "query:b", 2, 1.0, 60, 0),
            s(14.0, "query:b", 2, 1.2, 80, 0),
            s(15.0, "idle", 2, 1.2, 10, 0),
            s(16.0, "query:a", 2, 1.2, 40, 0),
            s(16.5, "idle", 2, 1.7, 45, 0),
        ];
        v[0].data_dir_bytes = Some(1000);
        v[3].data_dir_bytes = Some(5000);
        let p = summarise(&v);
        let names: Vec<&str> = p.iter().map(|x| x.phase.as_str()).collect();
        assert_eq!(names, ["load", "row-count", "query:a", "idle", "query:b"]);
        let load = &p[0];
        assert_eq!(load.samples, 3);
        assert_eq!(load.wall_seconds, 4.0);
        assert_eq!(load.cpu_seconds, Some(4.0));
        assert_eq!(load.cpu_user_seconds, Some(3.0));
        assert_eq!(load.mean_cpu_cores, Some(1.0));
        // The closing boundary's RSS counts too; the peak is the highest sample.
        assert_eq!(load.peak_rss_bytes, Some(900));
        assert_eq!(load.write_bytes, Some(3000));
        assert_eq!(load.data_dir_growth_bytes, Some(4000));
        // The last stretch of a session ends at its own last sample.
        let rc = &p[1];
        assert_eq!((rc.wall_seconds, rc.cpu_seconds), (1.0, Some(0.1)));
        assert_eq!(rc.data_dir_growth_bytes, None);
        // query:a ran twice: 2 s at 0.5 cores, then 0.5 s at 1 core.
        let qa = &p[2];
        assert_eq!(qa.wall_seconds, 2.5);
        assert_eq!(qa.cpu_seconds, Some(1.5));
        assert_eq!(qa.mean_cpu_cores, Some(0.6));
        assert_eq!(qa.peak_rss_bytes, Some(70));
        let qb = &p[4];
        assert_eq!((qb.wall_seconds, qb.cpu_seconds), (2.0, Some(0.2)));
        assert_eq!(qb.peak_rss_bytes, Some(80));
    }

    /// A real InfluxDB 3 run: the machine check ran before the load and again before the
    /// queries; its growth read +9.51 MiB, the load's, from its first stretch's size to its
    /// last. A phase that ran several times grows by what grew while it ran.
    #[test]
    fn a_phase_run_twice_grows_by_its_stretches_not_by_what_lay_between() {
        let mut v = vec![
            s(0.0, "machine-check", 1, 0.0, 1, 0),
            s(2.0, "load", 1, 0.0, 1, 0),
            s(20.0, "machine-check", 1, 0.0, 1, 0),
            s(22.0, "query:a", 1, 0.0, 1, 0),
        ];
        for (x, d) in v.iter_mut().zip([1000, 1000, 9000, 9100]) {
            x.data_dir_bytes = Some(d);
        }
        let p = summarise(&v);
        let check = p.iter().find(|x| x.phase == "machine-check").unwrap();
        assert_eq!(check.data_dir_growth_bytes, Some(100));
        let load = p.iter().find(|x| x.phase == "load").unwrap();
        assert_eq!(load.data_dir_growth_bytes, Some(8000));
    }

    #[test]
    fn what_was_not_measured_stays_unknown() {
        let mut a = s(0.0, "load", 1, 0.0, 1, 0);
        let mut b = s(1.0, "load", 1, 0.0, 1, 0);
        for x in [&mut a, &mut b] {
            x.cpu_s = None;
            x.cpu_user_s = None;
            x.cpu_system_s = None;
            x.rss_bytes = None;
            x.write_bytes = None;
        }
        let p = summarise(&[a, b]);
        assert_eq!(p[0].cpu_seconds, None);
        assert_eq!(p[0].mean_cpu_cores, None);
        assert_eq!(p[0].peak_rss_bytes, None);
        assert_eq!(p[0].write_bytes, None);
        assert_eq!(p[0].data_dir_growth_bytes, None);
        assert!(summarise(&[]).is_empty());
    }
}
