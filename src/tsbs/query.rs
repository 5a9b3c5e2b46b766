//! What the query runners (`tsbs_run_queries_influx`, `tsbs_run_queries_influx3`) report, and
//! the per-type aggregation over attempts. Unlike the reference (which keeps mean and count
//! only), every statistic the tools print or write is kept: count, min, median, mean, max,
//! stddev, sum, the quantiles q0..q100 and the query rate, overall and per label.
//! Reference benchmark.md §4.1-§4.3, protocols.md §1.8.

use std::collections::BTreeMap;
use std::path::Path;
use std::sync::LazyLock;

use regex::Regex;
use serde::{Deserialize, Serialize};

use super::{
    as_count, as_rate, field, go_float, label_key, parse_failure, read_results_file, ResultSource,
    ResultsFile,
};
use crate::error::Result;

/// The label of the block that covers every query of a run.
pub const ALL_QUERIES: &str = "all queries";

/// The latency quantiles of a results file, in milliseconds.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Quantiles {
    /// Always unknown (`null`): the runner writes `ValueAtQuantile(0)`, which hdrhistogram
    /// answers with 0 whatever was measured, so the file's `q0` is no minimum.
    #[serde(default)]
    pub q0: Option<f64>,
    pub q50: f64,
    pub q95: f64,
    pub q99: f64,
    pub q999: f64,
    pub q100: f64,
}

/// Latency statistics of one label of one run. Milliseconds unless named otherwise.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct LatencyStats {
    pub count: u64,
    pub mean_ms: f64,
    pub min_ms: Option<f64>,
    pub median_ms: Option<f64>,
    pub max_ms: Option<f64>,
    pub stddev_ms: Option<f64>,
    /// Sum of all latencies, as printed (`sum: %5.1fsec`, so 0.1 s resolution).
    pub sum_seconds: Option<f64>,
    pub quantiles: Option<Quantiles>,
    pub queries_per_second: Option<f64>,
}

/// One label's statistics, with the human label when the log named it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct LabelStats {
    pub label: Option<String>,
    #[serde(flatten)]
    pub stats: LatencyStats,
}

/// One runner invocation (one query type, one attempt).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct QueryRunResult {
    pub source: ResultSource,
    /// The `all queries` statistics.
    pub all: LatencyStats,
    /// Every label, keyed as TSBS keys results files (`all_queries`, `Influx_last_row_per_host`).
    pub labels: BTreeMap<String, LabelStats>,
    pub workers: Option<u64>,
    /// `Run complete after N queries` (after burn-in).
    pub completed_queries: Option<u64>,
    /// `Overall query rate R queries/sec`.
    pub overall_queries_per_second: Option<f64>,
    pub wall_clock_seconds: Option<f64>,
    pub duration_millis: Option<u64>,
}

/// What a runner log says after its last `Run complete after` marker.
#[derive(Debug, Clone, PartialEq)]
pub struct QueryLog {
    pub completed_queries: u64,
    pub workers: u64,
    pub overall_queries_per_second: Option<f64>,
    /// Human label → statistics, in printed order.
    pub blocks: Vec<(String, LatencyStats)>,
    pub wall_clock_seconds: Option<f64>,
}

static MARKER_RE: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"Run complete after (\d+) queries with (\d+) workers \(Overall query rate (\S+) queries/sec\):")
        .unwrap()
});
static STAT_RE: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"([a-z0-9]+):\s*([-+]?(?:[0-9]*\.?[0-9]+(?:[eE][-+]?[0-9]+)?|Inf|NaN))(ms|sec)?")
        .unwrap()
});

/// Parses a stat line: `min: %8.2fms, med: %8.2fms, mean: %8.2fms, max: %7.2fms, stddev:
/// %8.2fms, sum: %5.1fsec, count: %d` (extra percentiles of other TSBS versions are skipped).
fn parse_stat_line(line: &str) -> Option<LatencyStats> {
    let line = line.trim();
    if !line.starts_with("min:") {
        return None;
    }
    let mut kv = BTreeMap::new();
    for c in STAT_RE.captures_iter(line) {
        kv.insert(c[1].to_string(), c[2].to_string());
    }
    let f = |k: &str| {
        kv.get(k)
            .and_then(|v| go_float(v))
            .filter(|f| f.is_finite())
    };
    Some(LatencyStats {
        count: kv.get("count")?.parse().ok()?,
        mean_ms: f("mean")?,
        min_ms: f("min"),
        median_ms: f("med"),
        max_ms: f("max"),
        stddev_ms: f("stddev"),
        sum_seconds: f("sum"),
        quantiles: None,
        queries_per_second: None,
    })
}

/// Parses the final report of a runner log. `Err` says what is missing, in the reference's
/// words ("query log has no final run marker", "... no final all-queries summary").
pub fn parse_query_log(text: &str) -> std::result::Result<QueryLog, String> {
    let Some(m) = MARKER_RE.captures_iter(text).last() else {
        return Err(if text.contains("Run complete after") {
            "query log has an unreadable final run marker".into()
        } else {
            "query log has no final run marker".into()
        });
    };
    let after = &text[m.get(0).unwrap().end()..];
    let lines: Vec<&str> = after.lines().map(|l| l.trim_end_matches('\r')).collect();
    let mut blocks = Vec::new();
    let mut wall = None;
    let mut i = 0;
    while i < lines.len() {
        let line = lines[i];
        if let Some(rest) = line.strip_prefix("wall clock time: ") {
            wall = rest
                .strip_suffix("sec")
                .and_then(go_float)
                .filter(|f| f.is_finite());
        } else if let Some(label) = line.strip_suffix(':') {
            if let Some(stats) = lines.get(i + 1).and_then(|l| parse_stat_line(l)) {
                blocks.push((label.trim_end().to_string(), stats));
                i += 1;
            }
        }
        i += 1;
    }
    if !blocks.iter().any(|(l, _)| l == ALL_QUERIES) {
        return Err("query log has no final all-queries summary".into());
    }
    Ok(QueryLog {
        completed_queries: m[1].parse().map_err(|_| "bad query count in run marker")?,
        workers: m[2].parse().map_err(|_| "bad worker count in run marker")?,
        overall_queries_per_second: go_float(&m[3]).filter(|f| f.is_finite()),
        blocks,
        wall_clock_seconds: wall,
    })
}

/// One run's result: the 0.2 results file when present (completed by the log's min, median,
/// max, stddev, sum and human labels), else the log's final report. A malformed file, a file
/// that disagrees with the log, or a log without a final report is a failure.
pub fn query_result(results_file: &Path, log_text: &str) -> Result<QueryRunResult> {
    let log = parse_query_log(log_text);
    match read_results_file(results_file)? {
        ResultsFile::Fallback => {
            let log = log.map_err(parse_failure)?;
            let mut labels = BTreeMap::new();
            for (label, stats) in &log.blocks {
                labels.insert(
                    label_key(label),
                    LabelStats {
                        label: Some(label.clone()),
                        stats: stats.clone(),
                    },
                );
            }
            let all = labels[&label_key(ALL_QUERIES)].stats.clone();
            Ok(QueryRunResult {
                source: ResultSource::Log,
                all,
                labels,
                workers: Some(log.workers),
                completed_queries: Some(log.completed_queries),
                overall_queries_per_second: log.overall_queries_per_second,
                wall_clock_seconds: log.wall_clock_seconds,
                duration_millis: None,
            })
        }
        ResultsFile::Current(map) => {
            let f = results_file;
            let stats = field(&map, &["Totals", "overallStats"], f)?
                .as_object()
                .ok_or_else(|| {
                    parse_failure(format!(
                        "result field Totals.overallStats must be an object in {}",
                        f.display()
                    ))
                })?;
            let all_key = label_key(ALL_QUERIES);
            if !stats.get(&all_key).is_some_and(|v| v.is_object()) {
                return Err(parse_failure(format!(
                    "result field Totals.overallStats.all_queries must be an object in {}",
                    f.display()
                )));
            }
            let quantiles = map
                .get("Totals")
                .and_then(|t| t.get("overallQuantiles"))
                .and_then(|q| q.as_object());
            let rates = map
                .get("Totals")
                .and_then(|t| t.get("overallQueryRates"))
                .and_then(|q| q.as_object());
            let log_blocks: BTreeMap<String, (String, LatencyStats)> = log
                .as_ref()
                .map(|l| {
                    l.blocks
                        .iter()
                        .map(|(label, s)| (label_key(label), (label.clone(), s.clone())))
                        .collect()
                })
                .unwrap_or_default();
            let mut labels = BTreeMap::new();
            for (key, v) in stats {
                let name = format!("Totals.overallStats.{key}");
                let obj = v.as_object().ok_or_else(|| {
                    parse_failure(format!(
                        "result field {name} must be an object in {}",
                        f.display()
                    ))
                })?;
                let count = as_count(
                    obj.get("count")
                        .ok_or_else(|| missing(&format!("{name}.count"), f))?,
                    &format!("{name}.count"),
                    f,
                )?;
                let mean = as_rate(
                    obj.get("meanMilliseconds")
                        .ok_or_else(|| missing(&format!("{name}.meanMilliseconds"), f))?,
                    &format!("{name}.meanMilliseconds"),
                    f,
                )?;
                let q = quantiles
                    .and_then(|q| q.get(key))
                    .map(|q| parse_quantiles(q, key, f))
                    .transpose()?;
                let from_log = log_blocks.get(key);
                if let Some((_, s)) = from_log {
                    if s.count != count {
                        return Err(parse_failure(format!(
                            "{} reports {count} queries for {key} but the log says {}",
                            f.display(),
                            s.count
                        )));
                    }
                }
                let l = from_log.map(|(_, s)| s);
                labels.insert(
                    key.clone(),
                    LabelStats {
                        label: from_log.map(|(label, _)| label.clone()),
                        stats: LatencyStats {
                            count,
                            mean_ms: mean,
                            // Only the log's stat line knows the minimum (see `Quantiles::q0`).
                            min_ms: l.and_then(|s| s.min_ms),
                            median_ms: l.and_then(|s| s.median_ms).or(q.as_ref().map(|q| q.q50)),
                            max_ms: l.and_then(|s| s.max_ms).or(q.as_ref().map(|q| q.q100)),
                            stddev_ms: l.and_then(|s| s.stddev_ms),
                            sum_seconds: l.and_then(|s| s.sum_seconds),
                            quantiles: q,
                            queries_per_second: rates
                                .and_then(|r| r.get(key))
                                .and_then(|v| v.as_f64())
                                .filter(|r| r.is_finite()),
                        },
                    },
                );
            }
            let all = labels[&all_key].stats.clone();
            let log = log.ok();
            Ok(QueryRunResult {
                source: ResultSource::ResultsFile,
                all,
                labels,
                workers: map
                    .get("RunnerConfig")
                    .and_then(|c| c.get("Workers"))
                    .and_then(|v| v.as_u64())
                    .or(log.as_ref().map(|l| l.workers)),
                completed_queries: log.as_ref().map(|l| l.completed_queries),
                overall_queries_per_second: log.as_ref().and_then(|l| l.overall_queries_per_second),
                wall_clock_seconds: log.as_ref().and_then(|l| l.wall_clock_seconds),
                duration_millis: map.get("DurationMillis").and_then(|v| v.as_u64()),
            })
        }
    }
}

static DEBUG_LAG_RE: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(r"^debug: .* in\s*([0-9]+(?:\.[0-9]+)?)ms$").unwrap());

/// Each query's latency (ms) from a runner log written with `--debug=1` (`debug: <label> in
/// %7.2fms`, the influx and influx3 runners): the last `count` such lines before the final
/// report (a burn-in's queries come first). In file order with one worker only. `None` when
/// the log holds fewer than `count`.
pub fn per_query_latencies(log: &str, count: u64) -> Option<Vec<f64>> {
    let end = MARKER_RE
        .find_iter(log)
        .last()
        .map_or(log.len(), |m| m.start());
    let lags: Vec<f64> = log[..end]
        .lines()
        .filter_map(|l| DEBUG_LAG_RE.captures(l.trim_end_matches('\r')))
        .filter_map(|c| c[1].parse().ok())
        .collect();
    let n = usize::try_from(count).ok()?;
    (n > 0 && lags.len() >= n).then(|| lags[lags.len() - n..].to_vec())
}

fn missing(name: &str, f: &Path) -> crate::error::Error {
    parse_failure(format!("result field {name} is missing in {}", f.display()))
}

fn parse_quantiles(v: &serde_json::Value, key: &str, f: &Path) -> Result<Quantiles> {
    let get = |q: &str| -> Result<f64> {
        let name = format!("Totals.overallQuantiles.{key}.{q}");
        as_rate(v.get(q).ok_or_else(|| missing(&name, f))?, &name, f)
    };
    // Still required, so a file without it is malformed as before; its value is meaningless.
    get("q0")?;
    Ok(Quantiles {
        q0: None,
        q50: get("q50")?,
        q95: get("q95")?,
        q99: get("q99")?,
        q999: get("q999")?,
        q100: get("q100")?,
    })
}

/// One completed attempt of one query type, as the run records it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct QueryAttempt {
    pub database: String,
    pub query_type: String,
    pub attempt: u32,
    pub result: QueryRunResult,
}

/// Per attempt, the `all queries` statistics (kept whole: no statistic is thrown away).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct AttemptStats {
    pub attempt: u32,
    #[serde(flatten)]
    pub stats: LatencyStats,
}

/// One (database, query type) over its completed attempts (§4.3), for `summary.json`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct QueryTypeResult {
    pub database: String,
    pub query_type: String,
    /// Number of completed attempts.
    pub repetitions: u32,
    /// Σ count over attempts.
    pub query_count: u64,
    /// Σ(mean × count) / Σ count; 0 when no query was counted.
    pub weighted_mean_ms: f64,
    /// The smallest min and largest max over attempts; unknown when any attempt's is.
    pub min_ms: Option<f64>,
    pub max_ms: Option<f64>,
    pub attempts: Vec<AttemptStats>,
}

/// Groups completed attempts by (database, query type), groups sorted, attempts in order.
pub fn aggregate(attempts: &[QueryAttempt]) -> Vec<QueryTypeResult> {
    let mut groups: BTreeMap<(String, String), Vec<&QueryAttempt>> = BTreeMap::new();
    for a in attempts {
        groups
            .entry((a.database.clone(), a.query_type.clone()))
            .or_default()
            .push(a);
    }
    groups
        .into_iter()
        .map(|((database, query_type), mut runs)| {
            runs.sort_by_key(|a| a.attempt);
            let count: u64 = runs.iter().map(|a| a.result.all.count).sum();
            let weighted: f64 = runs
                .iter()
                .map(|a| a.result.all.mean_ms * a.result.all.count as f64)
                .sum();
            // An attempt without the value could hold the extreme, so the extreme is unknown.
            let fold = |pick: fn(&LatencyStats) -> Option<f64>, min: bool| {
                runs.iter()
                    .map(|a| pick(&a.result.all))
                    .collect::<Option<Vec<f64>>>()?
                    .into_iter()
                    .reduce(|x, y| if min { x.min(y) } else { x.max(y) })
            };
            QueryTypeResult {
                database,
                query_type,
                repetitions: runs.len() as u32,
                query_count: count,
                weighted_mean_ms: if count == 0 {
                    0.0
                } else {
                    weighted / count as f64
                },
                min_ms: fold(|s| s.min_ms, true),
                max_ms: fold(|s| s.max_ms, false),
                attempts: runs
                    .iter()
                    .map(|a| AttemptStats {
                        attempt: a.attempt,
                        stats: a.result.all.clone(),
                    })
                    .collect(),
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// protocols.md §1.8 example (10 lastpoint queries, greptime label).
    const LOG: &str = "Run complete after 10 queries with 1 workers (Overall query rate 41.37 queries/sec):
Influx last row per host:
min:    19.86ms, med:    22.93ms, mean:    23.70ms, max:   31.48ms, stddev:     3.26ms, sum:   0.2sec, count: 10
all queries             :
min:    19.86ms, med:    22.93ms, mean:    23.70ms, max:   31.48ms, stddev:     3.26ms, sum:   0.2sec, count: 10
wall clock time: 0.244512sec
Saving results json file to /abs/run/results/query-lastpoint-run-001.json
";

    const RESULTS: &str = r#"{
 "ResultFormatVersion": "0.2",
 "RunnerConfig": {"DBName": "benchmark", "Limit": 0, "LimitRPS": 0, "MemProfile": "",
   "HDRLatenciesFile": "", "Workers": 1, "PrintResponses": false, "Debug": 0,
   "FileName": "/abs/queries/lastpoint.dat", "BurnIn": 0, "PrintInterval": 0,
   "PrewarmQueries": false, "ResultsFile": "/abs/run/results/query-lastpoint-run-001.json"},
 "StartTime": 1718000000000, "EndTime": 1718000000000, "DurationMillis": 244,
 "Totals": {
   "burnIn": 0, "limit": 0,
   "overallQuantiles": {"Influx_last_row_per_host": {"q0": 19.86, "q50": 22.93, "q95": 31.48, "q99": 31.48, "q999": 31.48, "q100": 31.48},
                        "all_queries": {"q0": 19.86, "q50": 22.93, "q95": 31.48, "q99": 31.48, "q999": 31.48, "q100": 31.48}},
   "overallQueryRates": {"Influx_last_row_per_host": 41.2, "all_queries": 41.2},
   "overallStats": {"Influx_last_row_per_host": {"count": 10, "meanMilliseconds": 23.7},
                    "all_queries": {"count": 10, "meanMilliseconds": 23.7}},
   "prewarmQueries": false
 }
}"#;

    fn with_file(contents: Option<&str>, log: &str) -> Result<QueryRunResult> {
        let d = tempfile::tempdir().unwrap();
        let p = d.path().join("query-lastpoint-run-001.json");
        if let Some(c) = contents {
            std::fs::write(&p, c).unwrap();
        }
        query_result(&p, log)
    }

    #[test]
    fn results_file_keeps_everything() {
        let r = with_file(Some(RESULTS), LOG).unwrap();
        assert_eq!(r.source, ResultSource::ResultsFile);
        assert_eq!(r.all.count, 10);
        assert_eq!(r.all.mean_ms, 23.7);
        assert_eq!(r.all.min_ms, Some(19.86));
        assert_eq!(r.all.median_ms, Some(22.93));
        assert_eq!(r.all.max_ms, Some(31.48));
        assert_eq!(r.all.stddev_ms, Some(3.26));
        assert_eq!(r.all.sum_seconds, Some(0.2));
        assert_eq!(r.all.quantiles.as_ref().unwrap().q95, 31.48);
        assert_eq!(r.all.queries_per_second, Some(41.2));
        assert_eq!(r.workers, Some(1));
        assert_eq!(r.duration_millis, Some(244));
        assert_eq!(r.wall_clock_seconds, Some(0.244512));
        assert_eq!(r.overall_queries_per_second, Some(41.37));
        let l = &r.labels["Influx_last_row_per_host"];
        assert_eq!(l.label.as_deref(), Some("Influx last row per host"));
        assert_eq!(l.stats.count, 10);
        // without a usable log, the quantiles still give median/max; the minimum is unknown
        let r = with_file(Some(RESULTS), "").unwrap();
        assert_eq!(r.all.min_ms, None);
        assert_eq!(r.all.median_ms, Some(22.93));
        assert_eq!(r.all.max_ms, Some(31.48));
        assert_eq!(r.all.quantiles.as_ref().unwrap().q0, None);
        assert_eq!(r.all.stddev_ms, None);
        assert_eq!(r.labels["all_queries"].label, None);
    }

    /// The real runner's files (fixtures/tsbs-real): `q0` is 0 while the log says 17.70 ms.
    #[test]
    fn real_results_take_the_minimum_from_the_log_only() {
        let json = include_str!("../../tests/fixtures/tsbs-real/lastpoint.json");
        let log = include_str!("../../tests/fixtures/tsbs-real/lastpoint.log");
        let r = with_file(Some(json), log).unwrap();
        assert_eq!(r.source, ResultSource::ResultsFile);
        assert_eq!(r.all.count, 10);
        assert_eq!(r.all.min_ms, Some(17.70));
        assert_eq!(r.all.max_ms, Some(55.98));
        assert_eq!(r.all.quantiles.as_ref().unwrap().q0, None);
        assert_eq!(r.all.quantiles.as_ref().unwrap().q50, 51.967);
        assert_eq!(
            r.labels["Influx_last_row_per_host"].stats.min_ms,
            Some(17.70)
        );
        // the log's stat line is missing: the minimum is unknown, never the file's 0
        let r = with_file(Some(json), "").unwrap();
        assert_eq!(r.all.min_ms, None);
        assert_eq!(r.all.max_ms, Some(55.975));
        let a = QueryAttempt {
            database: "benchmark".into(),
            query_type: "lastpoint".into(),
            attempt: 1,
            result: r,
        };
        let known = attempt("benchmark", "lastpoint", 2, 10, 4.0);
        assert_eq!(aggregate(&[a, known])[0].min_ms, None);
    }

    #[test]
    fn log_fallback_keeps_every_printed_statistic() {
        for file in [None, Some(r#"{"ResultFormatVersion": "0.1"}"#)] {
            let r = with_file(file, LOG).unwrap();
            assert_eq!(r.source, ResultSource::Log);
            assert_eq!(r.all.count, 10);
            assert_eq!(r.all.mean_ms, 23.70);
            assert_eq!(r.all.min_ms, Some(19.86));
            assert_eq!(r.all.median_ms, Some(22.93));
            assert_eq!(r.all.max_ms, Some(31.48));
            assert_eq!(r.all.stddev_ms, Some(3.26));
            assert_eq!(r.all.sum_seconds, Some(0.2));
            assert_eq!(r.completed_queries, Some(10));
            assert_eq!(r.labels.len(), 2);
        }
    }

    #[test]
    fn the_last_marker_wins_and_interleaved_lines_are_tolerated() {
        let earlier = LOG.replace("count: 10", "count: 99");
        let log = format!("{earlier}debug: something\n{LOG}");
        let r = with_file(None, &log).unwrap();
        assert_eq!(r.all.count, 10);
        // large values print wider than the format's width
        let big = "Run complete after 2 queries with 2 workers (Overall query rate 0.50 queries/sec):\n\
                   all queries:\nmin: 12345.67ms, med: 12345.67ms, mean: 23456.78ms, max: 34567.89ms, stddev: 11111.11ms, sum:  46.9sec, count: 2\n";
        let r = with_file(None, big).unwrap();
        assert_eq!(
            (r.all.count, r.all.mean_ms, r.workers),
            (2, 23456.78, Some(2))
        );
    }

    #[test]
    fn failures_are_explicit() {
        let e = with_file(None, "panic: boom\n").unwrap_err();
        assert_eq!(e.message, "query log has no final run marker");
        let e = with_file(
            None,
            "Run complete after 1 queries with 1 workers (Overall query rate 1.00 queries/sec):\nwall clock time: 1.0sec\n",
        )
        .unwrap_err();
        assert_eq!(e.message, "query log has no final all-queries summary");
        let e = with_file(
            Some(r#"{"ResultFormatVersion":"0.2","Totals":{"overallStats":{}}}"#),
            LOG,
        )
        .unwrap_err();
        assert!(
            e.message
                .starts_with("result field Totals.overallStats.all_queries must be an object"),
            "{}",
            e.message
        );
        let e = with_file(
            Some(&RESULTS.replace(
                "\"count\": 10, \"meanMilliseconds\": 23.7}}",
                "\"count\": 10}}",
            )),
            LOG,
        )
        .unwrap_err();
        assert!(
            e.message
                .contains("all_queries.meanMilliseconds is missing"),
            "{}",
            e.message
        );
        let e = with_file(
            Some(&RESULTS.replace(
                "{\"count\": 10, \"meanMilliseconds\": 23.7}}",
                "{\"count\": 11, \"meanMilliseconds\": 23.7}}",
            )),
            LOG,
        )
        .unwrap_err();
        assert!(e.message.contains("but the log says 10"), "{}", e.message);
        let e = with_file(Some("{"), LOG).unwrap_err();
        assert!(e.message.starts_with("malformed result JSON"));
    }

    fn attempt(db: &str, ty: &str, n: u32, count: u64, mean: f64) -> QueryAttempt {
        QueryAttempt {
            database: db.into(),
            query_type: ty.into(),
            attempt: n,
            result: QueryRunResult {
                source: ResultSource::Log,
                all: LatencyStats {
                    count,
                    mean_ms: mean,
                    min_ms: Some(mean / 2.0),
                    median_ms: None,
                    max_ms: Some(mean * 2.0),
                    stddev_ms: None,
                    sum_seconds: None,
                    quantiles: None,
                    queries_per_second: None,
                },
                labels: BTreeMap::new(),
                workers: None,
                completed_queries: None,
                overall_queries_per_second: None,
                wall_clock_seconds: None,
                duration_millis: None,
            },
        }
    }

    #[test]
    fn per_query_latencies_come_from_the_debug_lines() {
        // influx3 at --debug=1 also says each query before sending it (no latency there).
        let log = format!(
            "debug: Influx last row per host in    0.70ms\n\
             debug: Influx last row per host -- InfluxDB last row per host: abc\n\
             debug: Influx last row per host in   12.34ms\n\
             debug: Influx last row per host in 1234.50ms\n{LOG}"
        );
        assert_eq!(per_query_latencies(&log, 2), Some(vec![12.34, 1234.5]));
        assert_eq!(per_query_latencies(&log, 3).unwrap().len(), 3);
        assert_eq!(per_query_latencies(&log, 4), None);
        assert_eq!(per_query_latencies(LOG, 10), None);
    }

    #[test]
    fn weighted_means_over_attempts() {
        let groups = aggregate(&[
            attempt("benchmark", "lastpoint", 2, 30, 4.0),
            attempt("benchmark", "cpu-max-all-1", 1, 0, 0.0),
            attempt("benchmark", "lastpoint", 1, 10, 2.0),
        ]);
        assert_eq!(groups.len(), 2);
        assert_eq!(groups[0].query_type, "cpu-max-all-1");
        assert_eq!(groups[0].weighted_mean_ms, 0.0);
        let g = &groups[1];
        assert_eq!((g.repetitions, g.query_count), (2, 40));
        assert_eq!(g.weighted_mean_ms, 3.5);
        assert_eq!((g.min_ms, g.max_ms), (Some(1.0), Some(8.0)));
        assert_eq!(
            g.attempts.iter().map(|a| a.attempt).collect::<Vec<_>>(),
            [1, 2]
        );
    }
}
