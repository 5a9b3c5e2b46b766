//! What the loaders (`tsbs_load_greptime`, `tsbs_load_influx3`) report: the results file
//! (format 0.2, protocols.md §1.5) and the stdout text (periodic CSV progress, per-worker
//! backoff lines, the `Summary:` block). Reference benchmark.md §4.1-§4.2.

use std::path::Path;
use std::sync::LazyLock;

use regex::Regex;
use serde::{Deserialize, Serialize};

use super::{as_count, as_rate, field, go_float, parse_failure, read_results_file, ResultSource};
use crate::error::Result;

/// One load's measured outcome, as it goes into `summary.json`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct LoadResult {
    pub source: ResultSource,
    pub metrics: u64,
    pub metrics_per_second: f64,
    /// Present when the loader counted rows (> 0).
    pub rows: Option<u64>,
    pub rows_per_second: Option<f64>,
    /// Wall time from after database creation to the end of the last worker.
    pub duration_seconds: f64,
    pub workers: Option<u64>,
    pub batch_size: Option<u64>,
    /// Unix seconds (results file only).
    pub start_time: Option<i64>,
    pub end_time: Option<i64>,
    /// Per worker: total time spent backing off (server back-pressure), from the log.
    pub worker_backoffs: Vec<WorkerBackoff>,
    /// The periodic progress reports (every `--reporting-period`), from the log.
    pub progress: Vec<LoadProgress>,
}

impl LoadResult {
    /// Total back-off time over all workers, when the log reported it.
    pub fn backoff_seconds(&self) -> Option<f64> {
        if self.worker_backoffs.is_empty() {
            None
        } else {
            Some(self.worker_backoffs.iter().map(|w| w.total_seconds).sum())
        }
    }
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct WorkerBackoff {
    pub worker: u64,
    pub total_seconds: f64,
    /// How many separate back-off episodes the worker reported.
    pub episodes: u64,
}

/// One periodic line: `<unix-s>,<per. metric/s>,<metric total>,<overall metric/s>,<per. row/s>,
/// <row total>,<overall row/s>` (the row columns are `-` before the first row).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct LoadProgress {
    pub time: i64,
    pub metrics_per_second: f64,
    pub metrics_total: f64,
    pub overall_metrics_per_second: f64,
    pub rows_per_second: Option<f64>,
    pub rows_total: Option<f64>,
    pub overall_rows_per_second: Option<f64>,
}

/// The header line the loader prints before its first progress report.
pub const PROGRESS_HEADER: &str =
    "time,per. metric/s,metric total,overall metric/s,per. row/s,row total,overall row/s";

/// Parses one progress line; `None` for anything else (the header included). Usable live, on
/// each line as the loader prints it.
pub fn parse_progress_line(line: &str) -> Option<LoadProgress> {
    let parts: Vec<&str> = line.trim_end().split(',').collect();
    if parts.len() != 7 {
        return None;
    }
    let time = parts[0].parse().ok()?;
    let num = |s: &str| go_float(s).filter(|f| f.is_finite());
    let opt = |s: &str| -> Option<Option<f64>> {
        if s == "-" {
            Some(None)
        } else {
            num(s).map(Some)
        }
    };
    Some(LoadProgress {
        time,
        metrics_per_second: num(parts[1])?,
        metrics_total: num(parts[2])?,
        overall_metrics_per_second: num(parts[3])?,
        rows_per_second: opt(parts[4])?,
        rows_total: opt(parts[5])?,
        overall_rows_per_second: opt(parts[6])?,
    })
}

/// The `Summary:` lines of a log (the last of each kind wins).
#[derive(Debug, Clone, PartialEq)]
pub struct LoadSummary {
    pub metrics: u64,
    pub metric_seconds: f64,
    pub workers: u64,
    pub metrics_per_second: f64,
    pub rows: Option<(u64, f64, f64)>,
}

/// Everything a loader log says.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct LoadLog {
    pub summary: Option<LoadSummary>,
    pub worker_backoffs: Vec<WorkerBackoff>,
    pub progress: Vec<LoadProgress>,
    /// The path from `Saving results json file to <path>`, if printed.
    pub results_file: Option<String>,
}

const FLOAT: &str = r"([-+]?(?:[0-9]*\.?[0-9]+(?:[eE][-+]?[0-9]+)?|Inf|NaN))";

static SUMMARY_RE: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(&format!(
        r"loaded\s+(\d+)\s+(metrics|rows)\s+in\s+{FLOAT}sec\s+with\s+(\d+)\s+workers.*?mean rate\s+{FLOAT}\s+(metrics|rows)/sec"
    ))
    .unwrap()
});
static BACKOFF_TOTAL_RE: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(&format!(
        r"^\[worker (\d+)\] backoffs took a total of {FLOAT}sec of runtime"
    ))
    .unwrap()
});
static BACKOFF_RE: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(&format!(r"^\[worker (\d+)\] backoff took {FLOAT}sec")).unwrap());

/// Parses a loader log (stdout and stderr merged). Never fails: what is not there is `None`.
pub fn parse_load_log(text: &str) -> LoadLog {
    let mut log = LoadLog::default();
    let mut metrics: Option<(u64, f64, u64, f64)> = None;
    let mut rows: Option<(u64, f64, f64)> = None;
    let mut episodes = std::collections::BTreeMap::<u64, u64>::new();
    let mut totals = std::collections::BTreeMap::<u64, f64>::new();
    for line in text.lines() {
        let line = line.trim_end_matches('\r');
        if let Some(p) = parse_progress_line(line) {
            log.progress.push(p);
        } else if let Some(c) = BACKOFF_TOTAL_RE.captures(line) {
            if let (Ok(w), Some(s)) = (c[1].parse(), go_float(&c[2])) {
                totals.insert(w, s);
            }
        } else if let Some(c) = BACKOFF_RE.captures(line) {
            if let Ok(w) = c[1].parse() {
                *episodes.entry(w).or_default() += 1;
            }
        } else if let Some(rest) = line.strip_prefix("Saving results json file to ") {
            log.results_file = Some(rest.to_string());
        } else {
            for c in SUMMARY_RE.captures_iter(line) {
                if c[2] != c[6] {
                    continue;
                }
                let (Ok(n), Some(secs), Ok(w), Some(rate)) = (
                    c[1].parse::<u64>(),
                    go_float(&c[3]),
                    c[4].parse::<u64>(),
                    go_float(&c[5]),
                ) else {
                    continue;
                };
                if &c[2] == "metrics" {
                    metrics = Some((n, secs, w, rate));
                    rows = None; // a rows line belongs to the metrics line before it
                } else {
                    rows = Some((n, secs, rate));
                }
            }
        }
    }
    log.summary = metrics.map(|(m, secs, w, rate)| LoadSummary {
        metrics: m,
        metric_seconds: secs,
        workers: w,
        metrics_per_second: rate,
        rows,
    });
    log.worker_backoffs = totals
        .into_iter()
        .map(|(worker, total_seconds)| WorkerBackoff {
            worker,
            total_seconds,
            episodes: episodes.get(&worker).copied().unwrap_or(0),
        })
        .collect();
    log
}

/// The load's result: the 0.2 results file when present (completed by the log's back-offs and
/// progress), else the log's `Summary:` block. A malformed file or a log without a summary is a
/// failure whose message names the file or says what is missing.
pub fn load_result(results_file: &Path, log_text: &str) -> Result<LoadResult> {
    let log = parse_load_log(log_text);
    match read_results_file(results_file)? {
        super::ResultsFile::Current(map) => {
            let f = results_file;
            let metrics = as_count(
                field(&map, &["Totals", "metricCount"], f)?,
                "Totals.metricCount",
                f,
            )?;
            let metric_rate = as_rate(
                field(&map, &["Totals", "metricRate"], f)?,
                "Totals.metricRate",
                f,
            )?;
            let rows = as_count(
                field(&map, &["Totals", "rowCount"], f)?,
                "Totals.rowCount",
                f,
            )?;
            let row_rate = as_rate(field(&map, &["Totals", "rowRate"], f)?, "Totals.rowRate", f)?;
            let millis = as_count(field(&map, &["DurationMillis"], f)?, "DurationMillis", f)?;
            let config = |k: &str| {
                map.get("RunnerConfig")
                    .and_then(|c| c.get(k))
                    .and_then(|v| v.as_u64())
            };
            if let Some(s) = &log.summary {
                // Same process, same counters: a mismatch means the file is not this run's.
                if s.metrics != metrics {
                    return Err(parse_failure(format!(
                        "{} reports {metrics} metrics but the log's summary says {}",
                        f.display(),
                        s.metrics
                    )));
                }
            }
            Ok(LoadResult {
                source: ResultSource::ResultsFile,
                metrics,
                metrics_per_second: metric_rate,
                rows: (rows > 0).then_some(rows),
                rows_per_second: (rows > 0).then_some(row_rate),
                duration_seconds: millis as f64 / 1000.0,
                workers: config("workers").or(log.summary.as_ref().map(|s| s.workers)),
                batch_size: config("batch-size"),
                start_time: map.get("StartTime").and_then(|v| v.as_i64()),
                end_time: map.get("EndTime").and_then(|v| v.as_i64()),
                worker_backoffs: log.worker_backoffs,
                progress: log.progress,
            })
        }
        super::ResultsFile::Fallback => {
            let Some(s) = log.summary else {
                return Err(parse_failure("load log has no final metric summary".into()));
            };
            if !(s.metric_seconds.is_finite() && s.metrics_per_second.is_finite()) {
                return Err(parse_failure(format!(
                    "load log reports a non-finite duration or rate ({}sec, {} metrics/sec)",
                    s.metric_seconds, s.metrics_per_second
                )));
            }
            Ok(LoadResult {
                source: ResultSource::Log,
                metrics: s.metrics,
                metrics_per_second: s.metrics_per_second,
                rows: s.rows.map(|r| r.0),
                rows_per_second: s.rows.map(|r| r.2),
                duration_seconds: s.metric_seconds,
                workers: Some(s.workers),
                batch_size: None,
                start_time: None,
                end_time: None,
                worker_backoffs: log.worker_backoffs,
                progress: log.progress,
            })
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The example tail of protocols.md §1.5, with the progress lines of its step 1.
    const LOG: &str =
        "time,per. metric/s,metric total,overall metric/s,per. row/s,row total,overall row/s
1718000010,92400.00,9.240000E+05,92400.00,9240.00,9.240000E+04,9240.00
[worker 1] backoffs took a total of 0.000000sec of runtime
[worker 0] backoffs took a total of 0.000000sec of runtime

Summary:
loaded 864000 metrics in 9.321sec with 2 workers (mean rate 92693.92 metrics/sec)
loaded 86400 rows in 9.321sec with 2 workers (mean rate 9269.39 rows/sec)
Saving results json file to /abs/run/results/load-run-001.json
";

    const RESULTS: &str = r#"{
 "ResultFormatVersion": "0.2",
 "RunnerConfig": {
  "db-name": "benchmark",
  "batch-size": 3000,
  "workers": 2,
  "limit": 0,
  "do-load": true,
  "do-create-db": true,
  "do-abort-on-exist": true,
  "reporting-period": 10000000000,
  "hash-workers": false,
  "no-flow-control": false,
  "channel-capacity": 0,
  "insert-intervals": "",
  "results-file": "/abs/run/results/load-run-001.json",
  "file": "/abs/data",
  "seed": 0
 },
 "StartTime": 1718000000,
 "EndTime": 1718000009,
 "DurationMillis": 9321,
 "Totals": {
  "metricCount": 864000,
  "metricRate": 92693.92,
  "rowCount": 86400,
  "rowRate": 9269.39
 }
}"#;

    fn with_file(contents: Option<&str>, log: &str) -> Result<LoadResult> {
        let d = tempfile::tempdir().unwrap();
        let p = d.path().join("load-run-001.json");
        if let Some(c) = contents {
            std::fs::write(&p, c).unwrap();
        }
        load_result(&p, log)
    }

    #[test]
    fn results_file_is_preferred_and_completed_by_the_log() {
        let r = with_file(Some(RESULTS), LOG).unwrap();
        assert_eq!(r.source, ResultSource::ResultsFile);
        assert_eq!(r.metrics, 864000);
        assert_eq!(r.metrics_per_second, 92693.92);
        assert_eq!(r.rows, Some(86400));
        assert_eq!(r.rows_per_second, Some(9269.39));
        assert_eq!(r.duration_seconds, 9.321);
        assert_eq!(r.workers, Some(2));
        assert_eq!(r.batch_size, Some(3000));
        assert_eq!(
            (r.start_time, r.end_time),
            (Some(1718000000), Some(1718000009))
        );
        assert_eq!(r.worker_backoffs.len(), 2);
        assert_eq!(r.backoff_seconds(), Some(0.0));
        assert_eq!(r.progress.len(), 1);
        assert_eq!(r.progress[0].metrics_total, 924000.0);
        assert_eq!(r.progress[0].rows_total, Some(92400.0));
    }

    /// The real loader's files (fixtures/tsbs-real). Its ticker never stops, so a progress
    /// line may follow the summary; that changes nothing.
    #[test]
    fn real_loader_output_parses() {
        let json = include_str!("../../tests/fixtures/tsbs-real/load-001.json");
        let log = include_str!("../../tests/fixtures/tsbs-real/load-001.log");
        let late = format!("{log}1796150414,0.00,2.160000E+05,0.00,0.00,2.160000E+04,0.00\n");
        for text in [log, late.as_str()] {
            let r = with_file(Some(json), text).unwrap();
            assert_eq!(r.source, ResultSource::ResultsFile);
            assert_eq!((r.metrics, r.rows), (216_000, Some(21_600)));
            assert_eq!(r.metrics_per_second, 4700749.5236301785);
            assert_eq!(r.duration_seconds, 0.045);
            assert_eq!((r.workers, r.batch_size), (Some(2), Some(3000)));
            assert_eq!(r.start_time, Some(1796150412));
            assert_eq!(r.worker_backoffs.len(), 2);
        }
        let r = with_file(None, &late).unwrap();
        assert_eq!(r.source, ResultSource::Log);
        assert_eq!((r.metrics, r.rows), (216_000, Some(21_600)));
    }

    #[test]
    fn log_fallback_when_missing_or_legacy() {
        for file in [
            None,
            Some(r#"{"ResultFormatVersion": "0.1", "Totals": {}}"#),
        ] {
            let r = with_file(file, LOG).unwrap();
            assert_eq!(r.source, ResultSource::Log);
            assert_eq!(r.metrics, 864000);
            assert_eq!(r.metrics_per_second, 92693.92);
            assert_eq!(r.duration_seconds, 9.321);
            assert_eq!(r.rows, Some(86400));
            assert_eq!(r.rows_per_second, Some(9269.39));
            assert_eq!(r.workers, Some(2));
        }
    }

    #[test]
    fn zero_rows_are_not_reported() {
        let file = RESULTS
            .replace("\"rowCount\": 86400", "\"rowCount\": 0")
            .replace("\"rowRate\": 9269.39", "\"rowRate\": 0");
        let r = with_file(Some(&file), "").unwrap();
        assert_eq!((r.rows, r.rows_per_second), (None, None));
        let log = "\nSummary:\nloaded 10 metrics in 0.500sec with 1 workers (mean rate 20.00 metrics/sec)\n";
        let r = with_file(None, log).unwrap();
        assert_eq!((r.metrics, r.rows), (10, None));
    }

    #[test]
    fn the_last_summary_wins() {
        let log = format!(
            "{LOG}\nSummary:\nloaded 5 metrics in 1.000sec with 3 workers (mean rate 5.00 metrics/sec)\n"
        );
        let r = with_file(None, &log).unwrap();
        assert_eq!((r.metrics, r.workers, r.rows), (5, Some(3), None));
    }

    #[test]
    fn failures_are_explicit() {
        let e = with_file(
            None,
            "[worker 0] backoffs took a total of 0.000000sec of runtime\n",
        )
        .unwrap_err();
        assert_eq!(e.message, "load log has no final metric summary");
        assert_eq!(e.exit_code(), 1);
        let e = with_file(Some("{\"ResultFormatVersion\": \"0.2\", \"Totals"), LOG).unwrap_err();
        assert!(
            e.message.starts_with("malformed result JSON "),
            "{}",
            e.message
        );
        let e = with_file(
            Some(&RESULTS.replace("\"metricCount\": 864000", "\"metricCount\": true")),
            LOG,
        )
        .unwrap_err();
        assert!(
            e.message
                .contains("Totals.metricCount must be a non-negative integer"),
            "{}",
            e.message
        );
        let e = with_file(
            Some(&RESULTS.replace("\"metricRate\": 92693.92", "\"metricRate\": -1")),
            LOG,
        )
        .unwrap_err();
        assert!(
            e.message.contains("Totals.metricRate must be a finite"),
            "{}",
            e.message
        );
        let e = with_file(Some(r#"{"ResultFormatVersion": "0.2", "Totals": 3}"#), LOG).unwrap_err();
        assert!(
            e.message.contains("result field Totals must be an object"),
            "{}",
            e.message
        );
        let e =
            with_file(Some(r#"{"ResultFormatVersion": "0.2", "Totals": {}}"#), LOG).unwrap_err();
        assert!(
            e.message
                .contains("result field Totals.metricCount is missing"),
            "{}",
            e.message
        );
        let e = with_file(Some(&RESULTS.replace("864000", "864001")), LOG).unwrap_err();
        assert!(
            e.message.contains("the log's summary says 864000"),
            "{}",
            e.message
        );
        let e = with_file(
            None,
            "loaded 0 metrics in 0.000sec with 1 workers (mean rate NaN metrics/sec)\n",
        )
        .unwrap_err();
        assert!(e.message.contains("non-finite"), "{}", e.message);
    }

    #[test]
    fn backoffs_and_progress_lines() {
        let log = "[worker 0] backoff took 1.02sec\n[worker 0] backoff took 2.00sec\n\
                   [worker 0] backoffs took a total of 3.020000sec of runtime\n\
                   [worker 1] backoffs took a total of 0.000000sec of runtime\n";
        let l = parse_load_log(log);
        assert_eq!(
            l.worker_backoffs,
            [
                WorkerBackoff {
                    worker: 0,
                    total_seconds: 3.02,
                    episodes: 2
                },
                WorkerBackoff {
                    worker: 1,
                    total_seconds: 0.0,
                    episodes: 0
                }
            ]
        );
        assert_eq!(parse_progress_line(PROGRESS_HEADER), None);
        let p = parse_progress_line("1718000010,100.00,1.000000E+03,100.00,-,-,-").unwrap();
        assert_eq!((p.metrics_total, p.rows_total), (1000.0, None));
        assert_eq!(parse_progress_line("a,b,c,d,e,f,g"), None);
    }
}
