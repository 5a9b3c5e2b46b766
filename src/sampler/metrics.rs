//! The process series of a server's Prometheus `/metrics` text: what tsbsctl can know of an
//! external server's CPU and memory. The standard names come from the Prometheus client
//! libraries' process collector; GreptimeDB releases before the switch to it (2023) prefixed
//! them with `greptime_`.

/// Names of the resident memory gauge, in the order they are looked for.
pub const RSS_SERIES: &[&str] = &[
    "process_resident_memory_bytes",
    "greptime_process_resident_memory_bytes",
];
/// InfluxDB 3 registers no process collector: its memory is jemalloc's statistics, one gauge
/// with a `stat` label (`influxdb3/src/commands/serve/jemalloc.rs`). Its `resident` pages are
/// the allocator's memory, read when no process series is there.
pub const JEMALLOC_RESIDENT: &str = "jemalloc_memstats_bytes{stat=\"resident\"}";
const JEMALLOC_NAME: &str = "jemalloc_memstats_bytes";

/// Names of the CPU counter (user plus system seconds).
pub const CPU_SERIES: &[&str] = &[
    "process_cpu_seconds_total",
    "greptime_process_cpu_seconds_total",
];

/// What one `/metrics` text says of the process.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct ProcessSeries {
    pub rss_bytes: Option<u64>,
    /// Which of [`RSS_SERIES`] it was.
    pub rss_series: Option<&'static str>,
    pub cpu_seconds: Option<f64>,
    pub cpu_series: Option<&'static str>,
}

/// Reads the process series of a Prometheus (or OpenMetrics) text; a series that is absent
/// stays `None`. The first sample of a name counts (the process collector has no labels).
pub fn parse(text: &str) -> ProcessSeries {
    let mut out = ProcessSeries::default();
    let mut jemalloc = None;
    for line in text.lines() {
        if line.starts_with('#') || out.rss_bytes.is_some() && out.cpu_seconds.is_some() {
            continue;
        }
        let name_end = line.find(['{', ' ']).unwrap_or(line.len());
        let name = &line[..name_end];
        // The value follows the labels; an optional timestamp may follow it.
        let after = match line[name_end..].rfind('}') {
            Some(i) if line[name_end..].starts_with('{') => &line[name_end + i + 1..],
            _ => &line[name_end..],
        };
        let Some(value) = after
            .split_whitespace()
            .next()
            .and_then(|v| v.parse::<f64>().ok())
        else {
            continue;
        };
        if name == JEMALLOC_NAME
            && jemalloc.is_none()
            && line[name_end..].starts_with('{')
            && label_is(&line[name_end..], "stat", "resident")
            && value.is_finite()
            && value >= 0.0
        {
            jemalloc = Some(value as u64);
        }
        if out.rss_bytes.is_none() {
            if let Some(n) = RSS_SERIES.iter().find(|n| **n == name) {
                if value.is_finite() && value >= 0.0 {
                    out.rss_bytes = Some(value as u64);
                    out.rss_series = Some(n);
                }
            }
        }
        if out.cpu_seconds.is_none() {
            if let Some(n) = CPU_SERIES.iter().find(|n| **n == name) {
                if value.is_finite() && value >= 0.0 {
                    out.cpu_seconds = Some(value);
                    out.cpu_series = Some(n);
                }
            }
        }
    }
    if out.rss_bytes.is_none() && jemalloc.is_some() {
        out.rss_bytes = jemalloc;
        out.rss_series = Some(JEMALLOC_RESIDENT);
    }
    out
}

/// The first sample of series `name` (with the label `key="value"` when `label` is given), as
/// a number; `None` when the text has none.
pub fn sample(text: &str, name: &str, label: Option<(&str, &str)>) -> Option<f64> {
    text.lines()
        .filter(|l| !l.starts_with('#'))
        .find_map(|line| {
            let rest = line.strip_prefix(name)?;
            let after = match (rest.strip_prefix('{'), label) {
                (Some(_), Some((k, v))) if label_is(rest, k, v) => &rest[rest.find('}')? + 1..],
                (Some(_), _) => return None,
                (None, None) if rest.starts_with(' ') => rest,
                (None, _) => return None,
            };
            after.split_whitespace().next()?.parse::<f64>().ok()
        })
}

/// Whether the label set `{…}` at the start of `labels` has `name="value"`.
fn label_is(labels: &str, name: &str, value: &str) -> bool {
    let Some(end) = labels.find('}') else {
        return false;
    };
    labels[1..end]
        .split(',')
        .any(|p| p.trim() == format!("{name}=\"{value}\""))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// What a running InfluxDB 3 Core 3.10.1 (built from source here) served at `/metrics`,
    /// cut to the families named in the fixture's README: jemalloc's resident pages are its
    /// memory; `process_start_time_seconds` is there without any process CPU or RSS series.
    #[test]
    fn a_real_influxdb3_answer_gives_jemalloc_resident_and_no_cpu() {
        let real = include_str!("../../tests/fixtures/influxdb3-real/metrics-3.10.1.txt");
        let p = parse(real);
        assert_eq!(p.rss_bytes, Some(9_216_000));
        assert_eq!(p.rss_series, Some(JEMALLOC_RESIDENT));
        assert_eq!((p.cpu_seconds, p.cpu_series), (None, None));
    }

    /// The query engine's pool as a real 3.10.1 served it: 20% of the host without a shape,
    /// 20% of the shape with the size tsbsctl passes under `--memory 2G`.
    #[test]
    fn a_labelled_sample_is_read_by_name_and_label() {
        let real = include_str!("../../tests/fixtures/influxdb3-real/metrics-3.10.1.txt");
        assert_eq!(
            sample(real, "query_datafusion_query_execution_ooms_total", None),
            Some(0.0)
        );
        let host = include_str!("../../tests/fixtures/influxdb3-real/mem-pool-3.10.1-host.txt");
        let shaped = include_str!("../../tests/fixtures/influxdb3-real/mem-pool-3.10.1-shaped.txt");
        let pool = |text, state| sample(text, "datafusion_mem_pool_bytes", Some(("state", state)));
        assert_eq!(pool(host, "limit"), Some(5_055_240_602.0));
        assert_eq!(pool(shaped, "limit"), Some(429_496_720.0));
        assert_eq!(pool(shaped, "reserved"), Some(0.0));
        assert_eq!(pool(shaped, "other"), None);
        // A labelled series is not read without its label, nor a longer name as it.
        assert_eq!(sample(shaped, "datafusion_mem_pool_bytes", None), None);
        assert_eq!(
            sample(
                "datafusion_mem_pool_bytes_x 3\n",
                "datafusion_mem_pool_bytes",
                None
            ),
            None
        );
    }

    #[test]
    fn process_series_are_read_with_or_without_labels_and_timestamps() {
        let text = "# HELP process_cpu_seconds_total Total user and system CPU time spent in seconds.\n# TYPE process_cpu_seconds_total counter\nprocess_cpu_seconds_total 12.5\n# TYPE process_resident_memory_bytes gauge\nprocess_resident_memory_bytes{instance=\"a b\"} 1.234e+08 1700000000000\nprocess_resident_memory_bytes 5\n";
        let s = parse(text);
        assert_eq!(s.cpu_seconds, Some(12.5));
        assert_eq!(s.cpu_series, Some("process_cpu_seconds_total"));
        assert_eq!(s.rss_bytes, Some(123_400_000));
        assert_eq!(s.rss_series, Some("process_resident_memory_bytes"));
        // The older GreptimeDB names.
        let old = "greptime_process_cpu_seconds_total 0.86\ngreptime_process_resident_memory_bytes 4096\n";
        let s = parse(old);
        assert_eq!(
            (s.cpu_seconds, s.rss_bytes, s.cpu_series),
            (
                Some(0.86),
                Some(4096),
                Some("greptime_process_cpu_seconds_total")
            )
        );
        // InfluxDB 3: jemalloc's resident pages, no CPU; a process series wins over it.
        let influx = "# HELP jemalloc_memstats_bytes jemalloc metrics - http://jemalloc.net/jemalloc.3.html#stats.active\n# TYPE jemalloc_memstats_bytes gauge\njemalloc_memstats_bytes{stat=\"active\"} 100\njemalloc_memstats_bytes{stat=\"resident\"} 4096\n# EOF\n";
        let s = parse(influx);
        assert_eq!(
            (s.rss_bytes, s.rss_series, s.cpu_seconds),
            (Some(4096), Some(JEMALLOC_RESIDENT), None)
        );
        let s = parse(&format!("{influx}process_resident_memory_bytes 7\n"));
        assert_eq!(
            (s.rss_bytes, s.rss_series),
            (Some(7), Some("process_resident_memory_bytes"))
        );
        // A text without them: unknown, never 0.
        let none = parse(
            "greptime_app_version{version=\"1\"} 1\nprocess_resident_memory_bytes_x 3\n# EOF\n",
        );
        assert_eq!(none, ProcessSeries::default());
    }
}
