//! The process series of a server's Prometheus `/metrics` text: what tsbsctl can know of an
//! external server's CPU and memory. Which series those are is the product's to say
//! ([`ProcessSeriesNames`], through `ExternalServer::process_series`); the standard names come
//! from the Prometheus client libraries' process collector.

/// The series of a server's `/metrics` that say its process's memory and CPU.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct ProcessSeriesNames {
    /// Names of the resident memory gauge, in the order they are looked for.
    pub rss: &'static [&'static str],
    /// Names of the CPU counter (user plus system seconds).
    pub cpu: &'static [&'static str],
    /// A labelled gauge read as the memory when none of `rss` is there.
    pub rss_fallback: Option<LabelledGauge>,
}

/// One sample of a labelled gauge (`name{key="value"}`), and what it is, for summary.md.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct LabelledGauge {
    pub name: &'static str,
    pub label: (&'static str, &'static str),
    /// How the timeline and summary.md name it (`name{key="value"}`).
    pub shown: &'static str,
    /// What it measures, where that is not the process's RSS.
    pub note: &'static str,
}

impl ProcessSeriesNames {
    /// The Prometheus client libraries' process collector.
    pub const PROCESS_COLLECTOR: ProcessSeriesNames = ProcessSeriesNames {
        rss: &["process_resident_memory_bytes"],
        cpu: &["process_cpu_seconds_total"],
        rss_fallback: None,
    };
}

/// What one `/metrics` text says of the process.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct ProcessSeries {
    pub rss_bytes: Option<u64>,
    /// Which series it was.
    pub rss_series: Option<&'static str>,
    pub cpu_seconds: Option<f64>,
    pub cpu_series: Option<&'static str>,
}

/// Reads the process series of a Prometheus (or OpenMetrics) text; a series that is absent
/// stays `None`. The first sample of a name counts (the process collector has no labels).
pub fn parse(text: &str, names: &ProcessSeriesNames) -> ProcessSeries {
    let mut out = ProcessSeries::default();
    let mut fallback = None;
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
        if let Some(f) = names.rss_fallback.filter(|f| {
            name == f.name
                && fallback.is_none()
                && line[name_end..].starts_with('{')
                && label_is(&line[name_end..], f.label.0, f.label.1)
                && value.is_finite()
                && value >= 0.0
        }) {
            fallback = Some((value as u64, f.shown));
        }
        if out.rss_bytes.is_none() {
            if let Some(n) = names.rss.iter().find(|n| **n == name) {
                if value.is_finite() && value >= 0.0 {
                    out.rss_bytes = Some(value as u64);
                    out.rss_series = Some(n);
                }
            }
        }
        if out.cpu_seconds.is_none() {
            if let Some(n) = names.cpu.iter().find(|n| **n == name) {
                if value.is_finite() && value >= 0.0 {
                    out.cpu_seconds = Some(value);
                    out.cpu_series = Some(n);
                }
            }
        }
    }
    if let (None, Some((bytes, shown))) = (out.rss_bytes, fallback) {
        out.rss_bytes = Some(bytes);
        out.rss_series = Some(shown);
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
    use crate::product::ExternalServer;

    fn influxdb3() -> ProcessSeriesNames {
        crate::product::influxdb3::InfluxDb3::new(crate::product::influxdb3::Edition::Core)
            .process_series()
    }
    const JEMALLOC_RESIDENT: &str = "jemalloc_memstats_bytes{stat=\"resident\"}";

    /// What a running InfluxDB 3 Core 3.10.1 (built from source here) served at `/metrics`,
    /// cut to the families named in the fixture's README: jemalloc's resident pages are its
    /// memory; `process_start_time_seconds` is there without any process CPU or RSS series.
    #[test]
    fn a_real_influxdb3_answer_gives_jemalloc_resident_and_no_cpu() {
        let real = include_str!("../../tests/fixtures/influxdb3-real/metrics-3.10.1.txt");
        let p = parse(real, &influxdb3());
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
        let standard = ProcessSeriesNames::PROCESS_COLLECTOR;
        let s = parse(text, &standard);
        assert_eq!(s.cpu_seconds, Some(12.5));
        assert_eq!(s.cpu_series, Some("process_cpu_seconds_total"));
        assert_eq!(s.rss_bytes, Some(123_400_000));
        assert_eq!(s.rss_series, Some("process_resident_memory_bytes"));
        // The older GreptimeDB names, which only GreptimeDB's names know.
        let old = "greptime_process_cpu_seconds_total 0.86\ngreptime_process_resident_memory_bytes 4096\n";
        assert_eq!(parse(old, &standard), ProcessSeries::default());
        let s = parse(
            old,
            &crate::product::greptimedb::GreptimeDb.process_series(),
        );
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
        let s = parse(influx, &influxdb3());
        assert_eq!(
            (s.rss_bytes, s.rss_series, s.cpu_seconds),
            (Some(4096), Some(JEMALLOC_RESIDENT), None)
        );
        let s = parse(
            &format!("{influx}process_resident_memory_bytes 7\n"),
            &influxdb3(),
        );
        assert_eq!(
            (s.rss_bytes, s.rss_series),
            (Some(7), Some("process_resident_memory_bytes"))
        );
        // A text without them: unknown, never 0.
        let none = parse(
            "greptime_app_version{version=\"1\"} 1\nprocess_resident_memory_bytes_x 3\n# EOF\n",
            &standard,
        );
        assert_eq!(none, ProcessSeries::default());
    }
}
