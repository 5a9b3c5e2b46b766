//! Emulators of `tsbs_run_queries_influx` (used against GreptimeDB) and
//! `tsbs_run_queries_influx3` (protocols.md §1.6-1.8, benchmark.md §3.4, §8.1): the real flags
//! (pflag, strict), queries read from a [`crate::queryfile`] file (`--file` or stdin) and sent
//! by `--workers` threads over real HTTP, a panic (exit 2) on any non-200 answer, latencies
//! measured from send to body fully read, and the exact final report on stdout plus the results
//! JSON (format 0.2) computed from them. The GreptimeDB runner's explain mode writes `cold.json`
//! and `hot-NNN.json` (refusing to overwrite, failing on GreptimeDB error payloads).
//! `--urls` is a comma list, worker i using URL i mod n; URL userinfo (`http://U:P@host`) is
//! sent as `Authorization: Basic` and shown as `U:***` in errors, as Go's net/http does.
//!
//! Statistics follow TSBS's HDR histogram of microseconds (values truncated to µs); quantiles
//! are computed exactly over those values (the real histogram keeps 4 significant digits, so
//! the two agree below ~32 ms and differ by at most 0.01% above).
//!
//! Knobs (`$TESTBED_KNOBS`, object `tsbs_run`, overridden by an object named after the tool):
//! * `results: "v0.1" | "malformed" | "skip"` — results file in format 0.1, truncated, or none;
//! * `query_delay_ms: N` — each worker sleeps N ms before each query (slow runs);
//! * `fail_after_queries: N` — after N answered queries, the next one fails as if the server
//!   answered 500 (the runner's panic, exit 2).
//!
//! Not emulated (refused with exit 2 and a `testbed:` message): `--memprofile`,
//! `--hdr-latencies`.
//!
//! Flags also come from a `config.json`/`config.toml` in the working directory, like viper
//! merges them; `--auth-token` on the command line is refused on purpose (stricter than the
//! real tool, see [`crate::gotool::parse_tool`]).

use std::collections::BTreeMap;
use std::io::{BufReader, Read, Write};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{mpsc, Arc, Mutex};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use super::tsbs_load::{go_open_error, go_transport_error};
use crate::gotool::{self, fatal, flag, go_panic, FlagDef, GoJson, Kind};
use crate::queryfile::{self, form_encode, Query};

const COMMON: &[FlagDef] = &[
    flag(
        "db-name",
        Kind::Str,
        "benchmark",
        "Name of database to use for queries",
    ),
    flag(
        "burn-in",
        Kind::Uint64,
        "0",
        "Number of queries to ignore before collecting statistics.",
    ),
    flag(
        "max-queries",
        Kind::Uint64,
        "0",
        "Limit the number of queries to send, 0 = no limit",
    ),
    flag(
        "max-rps",
        Kind::Uint64,
        "0",
        "Limit the rate of queries per second, 0 = no limit",
    ),
    flag(
        "print-interval",
        Kind::Uint64,
        "100",
        "Print timing stats to stderr after this many queries (0 to disable)",
    ),
    flag(
        "memprofile",
        Kind::Str,
        "",
        "Write a memory profile to this file.",
    ),
    flag(
        "hdr-latencies",
        Kind::Str,
        "",
        "Write the High Dynamic Range (HDR) Histogram of Response Latencies to this file.",
    ),
    flag(
        "workers",
        Kind::Uint,
        "1",
        "Number of concurrent requests to make.",
    ),
    flag(
        "prewarm-queries",
        Kind::Bool,
        "false",
        "Run each query twice in a row so the warm query is guaranteed to be a cache hit",
    ),
    flag(
        "print-responses",
        Kind::Bool,
        "false",
        "Pretty print response bodies for correctness checking (default false).",
    ),
    flag("debug", Kind::Int, "0", "Whether to print debug messages."),
    flag("file", Kind::Str, "", "File name to read queries from"),
    flag(
        "results-file",
        Kind::Str,
        "",
        "Write the test results summary json to this file",
    ),
];

const INFLUX: &[FlagDef] = &[
    flag(
        "urls",
        Kind::Str,
        "http://localhost:8086",
        "Daemon URLs, comma-separated. Will be used in a round-robin fashion.",
    ),
    flag(
        "chunk-response-size",
        Kind::Uint64,
        "0",
        "Number of series to chunk results into. 0 means no chunking.",
    ),
    flag(
        "is-v2",
        Kind::Bool,
        "false",
        "Is querying InfluxDB v2. false means querying InfluxDB v1.",
    ),
    flag(
        "auth-token",
        Kind::Str,
        "tsbs-token",
        "InfluxDB v2 auth token.",
    ),
    flag(
        "explain-analyze-verbose",
        Kind::Bool,
        "false",
        "Run GreptimeDB queries with EXPLAIN ANALYZE VERBOSE.",
    ),
    flag(
        "explain-results-dir",
        Kind::Str,
        "",
        "Write GreptimeDB EXPLAIN ANALYZE VERBOSE responses to this directory.",
    ),
];

const INFLUX3: &[FlagDef] = &[
    flag(
        "urls",
        Kind::Str,
        "http://localhost:8181",
        "InfluxDB 3 URLs, comma-separated. Will be used in a round-robin fashion.",
    ),
    flag(
        "auth-token",
        Kind::Str,
        "",
        "InfluxDB 3 token used for queries.",
    ),
];

const EXPLAIN_PREFIX: &str = "EXPLAIN ANALYZE VERBOSE ";
const ALL_QUERIES: &str = "all queries";
const COLD_QUERIES: &str = "cold queries";
const WARM_QUERIES: &str = "warm queries";

pub fn influx_main(args: Vec<String>) -> i32 {
    run("tsbs_run_queries_influx", args, false)
}

pub fn influx3_main(args: Vec<String>) -> i32 {
    run("tsbs_run_queries_influx3", args, true)
}

#[derive(Clone)]
struct Opts {
    tool: String,
    influx3: bool,
    db: String,
    debug: i64,
    print_responses: bool,
    chunk: u64,
    is_v2: bool,
    token: String,
    explain: bool,
    explain_dir: Option<String>,
    prewarm: bool,
}

/// One latency measurement.
pub(crate) struct Stat {
    pub(crate) label: String,
    pub(crate) ms: f64,
    pub(crate) warm: bool,
}

fn run(tool: &str, args: Vec<String>, influx3: bool) -> i32 {
    let extra = if influx3 { INFLUX3 } else { INFLUX };
    let flags = match gotool::parse_tool(tool, &[COMMON, extra], &args) {
        Ok(f) => f,
        Err(code) => return code,
    };
    let workers = flags.u64("workers");
    let prewarm = flags.bool("prewarm-queries");
    let (explain, explain_dir) = if influx3 {
        (false, String::new())
    } else {
        (
            flags.bool("explain-analyze-verbose"),
            flags.str("explain-results-dir"),
        )
    };
    if !explain_dir.is_empty() && !explain {
        fatal("--explain-results-dir requires --explain-analyze-verbose");
    }
    if !explain_dir.is_empty() && prewarm {
        fatal("--explain-results-dir cannot be combined with --prewarm-queries");
    }
    if explain && workers != 1 {
        fatal("--explain-analyze-verbose requires --workers=1 so cold and hot query order is deterministic");
    }
    let urls: Vec<String> = if influx3 {
        let u: Vec<String> = flags
            .str("urls")
            .split(',')
            .map(|u| u.trim().trim_end_matches('/').to_string())
            .filter(|u| !u.is_empty())
            .collect();
        if u.is_empty() {
            fatal("missing 'urls' flag");
        }
        u
    } else {
        flags.str("urls").split(',').map(str::to_string).collect()
    };
    for f in ["memprofile", "hdr-latencies"] {
        if !flags.str(f).is_empty() {
            eprintln!("testbed: {tool}: --{f} is not emulated");
            return 2;
        }
    }
    let knobs = gotool::knobs(tool, "tsbs_run");
    let knob_u64 = |k: &str| knobs.get(k).and_then(|v| v.as_u64());
    let results_knob = knobs
        .get("results")
        .and_then(|v| v.as_str())
        .unwrap_or("normal")
        .to_string();
    let query_delay = Duration::from_millis(knob_u64("query_delay_ms").unwrap_or(0));
    let fail_after = knob_u64("fail_after_queries");

    let opts = Opts {
        tool: tool.to_string(),
        influx3,
        db: flags.str("db-name"),
        debug: flags.i64("debug"),
        print_responses: flags.bool("print-responses"),
        chunk: if influx3 {
            0
        } else {
            flags.u64("chunk-response-size")
        },
        is_v2: !influx3 && flags.bool("is-v2"),
        token: flags.str("auth-token"),
        explain,
        explain_dir: (!explain_dir.is_empty()).then_some(explain_dir),
        prewarm,
    };
    let limit = flags.u64("max-queries");
    let burn_in = flags.u64("burn-in");
    let print_interval = flags.u64("print-interval");
    let max_rps = flags.u64("max-rps");

    if workers == 0 {
        go_panic(tool, "must have at least one worker");
    }

    // The stat processor: collects, optionally prints interim blocks, prints the final report.
    let (stat_tx, stat_rx) = mpsc::sync_channel::<Stat>(workers as usize);
    let stats_thread = std::thread::spawn(move || {
        process_stats(stat_rx, workers, burn_in, limit, print_interval, prewarm)
    });

    let (q_tx, q_rx) = mpsc::sync_channel::<(u64, Query)>(workers as usize);
    let q_rx = Arc::new(Mutex::new(q_rx));
    let answered = Arc::new(AtomicU64::new(0));
    let limiter = Arc::new(Mutex::new(Instant::now()));
    let agent = ureq::AgentBuilder::new()
        .timeout_connect(Duration::from_secs(10))
        .timeout(Duration::from_secs(300))
        .build();
    let mut handles = Vec::new();
    for w in 0..workers {
        let url = urls[(w as usize) % urls.len()].clone();
        let (opts, rx, tx) = (opts.clone(), q_rx.clone(), stat_tx.clone());
        let (agent, answered, limiter) = (agent.clone(), answered.clone(), limiter.clone());
        handles.push(std::thread::spawn(move || loop {
            let next = rx.lock().unwrap().recv();
            let Ok((id, q)) = next else { break };
            if max_rps > 0 {
                let wait = {
                    let mut next_at = limiter.lock().unwrap();
                    let now = Instant::now();
                    let at = (*next_at).max(now);
                    *next_at = at + Duration::from_secs_f64(1.0 / max_rps as f64);
                    at - now
                };
                std::thread::sleep(wait);
            }
            let runs: &[bool] = if opts.prewarm { &[false, true] } else { &[false] };
            for &warm in runs {
                if !query_delay.is_zero() {
                    std::thread::sleep(query_delay);
                }
                if let Some(n) = fail_after {
                    if answered.load(Ordering::SeqCst) >= n {
                        let msg = if opts.influx3 {
                            format!("InfluxDB 3 query failed (status 500): testbed knob fail_after_queries={n}")
                        } else {
                            format!("http request did not return status 200 OK, code=500, body=testbed knob fail_after_queries={n}")
                        };
                        go_panic(&opts.tool, &msg);
                    }
                }
                let ms = match do_query(&agent, &url, &q, id, &opts) {
                    Ok(ms) => ms,
                    Err(e) => go_panic(&opts.tool, &e),
                };
                answered.fetch_add(1, Ordering::SeqCst);
                let _ = tx.send(Stat {
                    label: q.human_label.clone(),
                    ms,
                    warm,
                });
            }
        }));
    }
    drop(stat_tx);

    let wall_start = Instant::now();
    let start_unix = SystemTime::now();
    let file = flags.str("file");
    let input: Box<dyn Read + Send> = if file.is_empty() {
        Box::new(std::io::stdin())
    } else {
        match std::fs::File::open(&file) {
            Ok(f) => Box::new(f),
            Err(e) => go_panic(
                tool,
                &format!(
                    "cannot open file for read {file}: {}",
                    go_open_error(&file, &e)
                ),
            ),
        }
    };
    let reader = queryfile::Reader::new(BufReader::with_capacity(4 << 20, input));
    for (n, item) in (0u64..).zip(reader) {
        if limit > 0 && n >= limit {
            break;
        }
        match item {
            Ok(q) => {
                if q_tx.send((n, q)).is_err() {
                    break;
                }
            }
            Err(e) => fatal(&e),
        }
    }
    drop(q_tx);
    for h in handles {
        let _ = h.join();
    }
    let totals = stats_thread.join().expect("stat processor");
    let wall = wall_start.elapsed();
    let end_unix = SystemTime::now();
    println!("wall clock time: {:.6}sec", wall.as_nanos() as f64 / 1e9);

    let results_file = flags.str("results-file");
    if !results_file.is_empty() && results_knob != "skip" {
        let ms = |t: SystemTime| {
            t.duration_since(UNIX_EPOCH)
                .map(|d| d.as_secs() as i64 * 1000)
                .unwrap_or(0)
        };
        let config = GoJson::obj(vec![
            ("DBName", GoJson::Str(opts.db.clone())),
            ("Limit", GoJson::Uint(limit)),
            ("LimitRPS", GoJson::Uint(max_rps)),
            ("MemProfile", GoJson::Str(String::new())),
            ("HDRLatenciesFile", GoJson::Str(String::new())),
            ("Workers", GoJson::Uint(workers)),
            ("PrintResponses", GoJson::Bool(opts.print_responses)),
            ("Debug", GoJson::Int(opts.debug)),
            ("FileName", GoJson::Str(file.clone())),
            ("BurnIn", GoJson::Uint(burn_in)),
            ("PrintInterval", GoJson::Uint(print_interval)),
            ("PrewarmQueries", GoJson::Bool(prewarm)),
            ("ResultsFile", GoJson::Str(results_file.clone())),
        ]);
        let version = if results_knob == "v0.1" { "0.1" } else { "0.2" };
        let result = GoJson::obj(vec![
            ("ResultFormatVersion", GoJson::Str(version.into())),
            ("RunnerConfig", config),
            ("StartTime", GoJson::Int(ms(start_unix))),
            ("EndTime", GoJson::Int(ms(end_unix))),
            ("DurationMillis", GoJson::Int(wall.as_millis() as i64)),
            ("Totals", totals),
        ]);
        println!("Saving results json file to {results_file}");
        let mut text = match result.indented(" ") {
            Ok(t) => t,
            Err(e) => fatal(&e),
        };
        if results_knob == "malformed" {
            text.truncate(text.len() / 2);
        }
        if let Err(e) = std::fs::write(&results_file, text) {
            fatal(&go_open_error(&results_file, &e));
        }
    }
    0
}

/// Latencies of one label, in microseconds as TSBS's histogram records them.
#[derive(Default)]
struct Group {
    micros: Vec<i64>,
    sum_ms: f64,
}

impl Group {
    fn push(&mut self, ms: f64) {
        self.micros.push((ms * 1e3) as i64);
        self.sum_ms += ms;
    }
    fn count(&self) -> usize {
        self.micros.len()
    }
    fn sorted(&self) -> Vec<i64> {
        let mut v = self.micros.clone();
        v.sort_unstable();
        v
    }
    /// The value at a percentile (0-100), as hdrhistogram's ValueAtQuantile picks it, in ms.
    fn quantile(sorted: &[i64], q: f64) -> f64 {
        if sorted.is_empty() {
            return 0.0;
        }
        let at = ((q / 100.0) * sorted.len() as f64 + 0.5) as usize;
        sorted[at.clamp(1, sorted.len()) - 1] as f64 / 1e3
    }
    fn mean(&self) -> f64 {
        if self.micros.is_empty() {
            return 0.0;
        }
        self.micros.iter().sum::<i64>() as f64 / self.micros.len() as f64 / 1e3
    }
    fn stddev(&self) -> f64 {
        if self.micros.is_empty() {
            return 0.0;
        }
        let mean = self.micros.iter().sum::<i64>() as f64 / self.micros.len() as f64;
        let var = self
            .micros
            .iter()
            .map(|&v| (v as f64 - mean).powi(2))
            .sum::<f64>()
            / self.micros.len() as f64;
        var.sqrt() / 1e3
    }
    fn line(&self) -> String {
        let s = self.sorted();
        let (min, max) = (
            s.first().map(|&v| v as f64 / 1e3).unwrap_or(0.0),
            s.last().map(|&v| v as f64 / 1e3).unwrap_or(0.0),
        );
        format!(
            "min: {min:8.2}ms, med: {:8.2}ms, mean: {:8.2}ms, max: {max:7.2}ms, stddev: {:8.2}ms, sum: {:5.1}sec, count: {}",
            Self::quantile(&s, 50.0),
            self.mean(),
            self.stddev(),
            self.sum_ms / 1e3,
            self.count()
        )
    }
}

/// `writeStatGroupMap`: labels byte-sorted, padded to the longest, each followed by its line.
fn stat_blocks(groups: &BTreeMap<String, Group>) -> String {
    let width = groups.keys().map(|k| k.len()).max().unwrap_or(0);
    let mut out = String::new();
    for (k, g) in groups {
        out.push_str(&format!("{k:<width$}:\n{}\n", g.line()));
    }
    out
}

/// Every run of non-alphanumerics becomes `_` (TSBS's results-file keys).
fn strip(label: &str) -> String {
    let mut out = String::new();
    let mut run = false;
    for c in label.chars() {
        if c.is_ascii_alphanumeric() {
            out.push(c);
            run = false;
        } else if !run {
            out.push('_');
            run = true;
        }
    }
    out
}

/// The stat processor (pkg/query stat_processor.go): returns the results file's `Totals`.
pub(crate) fn process_stats(
    rx: mpsc::Receiver<Stat>,
    workers: u64,
    burn_in: u64,
    limit: u64,
    print_interval: u64,
    prewarm: bool,
) -> GoJson {
    let start = Instant::now();
    let mut groups: BTreeMap<String, Group> = BTreeMap::new();
    groups.insert(ALL_QUERIES.into(), Group::default());
    if prewarm {
        groups.insert(COLD_QUERIES.into(), Group::default());
        groups.insert(WARM_QUERIES.into(), Group::default());
    }
    let (mut i, mut ops) = (0u64, 0u64);
    let (mut prev_time, mut prev_ops) = (start, 0u64);
    for stat in rx {
        ops += 1;
        if i < burn_in {
            i += 1;
            continue;
        } else if i == burn_in && burn_in > 0 {
            eprintln!("burn-in complete after {burn_in} queries with {workers} workers");
        }
        groups.entry(stat.label.clone()).or_default().push(stat.ms);
        groups.get_mut(ALL_QUERIES).unwrap().push(stat.ms);
        if prewarm {
            let k = if stat.warm {
                WARM_QUERIES
            } else {
                COLD_QUERIES
            };
            groups.get_mut(k).unwrap().push(stat.ms);
        }
        if !prewarm || !stat.warm {
            i += 1;
        }
        if print_interval > 0 && i > 0 && i % print_interval == 0 && (i < limit || limit == 0) {
            let now = Instant::now();
            let interval = (ops - prev_ops) as f64 / now.duration_since(prev_time).as_secs_f64();
            let overall = ops as f64 / now.duration_since(start).as_secs_f64();
            eprint!(
                "After {} queries with {workers} workers:\nInterval query rate: {interval:.2} queries/sec\tOverall query rate: {overall:.2} queries/sec\n{}\n",
                i - burn_in,
                stat_blocks(&groups)
            );
            (prev_time, prev_ops) = (now, ops);
        }
    }
    let since = start.elapsed().as_secs_f64();
    let mut out = std::io::stdout().lock();
    let _ = write!(
        out,
        "Run complete after {} queries with {workers} workers (Overall query rate {:.2} queries/sec):\n{}",
        i.saturating_sub(burn_in),
        ops as f64 / since,
        stat_blocks(&groups)
    );
    let _ = out.flush();
    drop(out);

    // Totals: Go map keys come out sorted.
    let by_key: BTreeMap<String, &Group> = groups.iter().map(|(k, g)| (strip(k), g)).collect();
    let mut quantiles = Vec::new();
    let mut rates = Vec::new();
    let mut stats = Vec::new();
    for (k, g) in &by_key {
        let s = g.sorted();
        let q = |p: f64| GoJson::Float(Group::quantile(&s, p));
        quantiles.push((
            k.clone(),
            GoJson::obj(vec![
                // The real runner asks hdrhistogram for ValueAtQuantile(0), which is always 0.
                ("q0", GoJson::Float(0.0)),
                ("q100", q(100.0)),
                ("q50", q(50.0)),
                ("q95", q(95.0)),
                ("q99", q(99.0)),
                ("q999", q(99.9)),
            ]),
        ));
        rates.push((k.clone(), GoJson::Float(g.count() as f64 / since)));
        stats.push((
            k.clone(),
            GoJson::obj(vec![
                ("count", GoJson::Uint(g.count() as u64)),
                ("meanMilliseconds", GoJson::Float(g.mean())),
            ]),
        ));
    }
    GoJson::obj(vec![
        ("burnIn", GoJson::Uint(burn_in)),
        ("limit", GoJson::Uint(limit)),
        ("overallQuantiles", GoJson::Obj(quantiles)),
        ("overallQueryRates", GoJson::Obj(rates)),
        ("overallStats", GoJson::Obj(stats)),
        ("prewarmQueries", GoJson::Bool(prewarm)),
    ])
}

/// Sends one query; returns its latency in ms, or the error the worker panics with.
fn do_query(agent: &ureq::Agent, host: &str, q: &Query, id: u64, o: &Opts) -> Result<f64, String> {
    if o.influx3 {
        return do_influx3(agent, host, q, id, o);
    }
    let mut executed = q.raw_query.clone();
    let mut path = q.path.clone();
    if o.explain {
        executed = format!("{EXPLAIN_PREFIX}{executed}");
        path = format!("/v1/sql?sql={}", form_encode(&executed));
    }
    let mut url = format!("{host}{path}&db={}", form_encode(&o.db));
    if o.chunk > 0 {
        url.push_str(&format!("&chunked=true&chunk_size={}", o.chunk));
    }
    let (url, basic, shown) = go_userinfo(&url);
    match o.debug {
        1 => eprintln!("debug: {}", q.human_label),
        2 | 3 => eprintln!("debug: {} -- {}", q.human_label, q.human_description),
        _ => {}
    }
    let mut req = agent
        .request(&q.method, &url)
        .set("Content-Type", "application/x-www-form-urlencoded")
        .set("User-Agent", "Go-http-client/1.1");
    if o.is_v2 {
        req = req.set("Authorization", &format!("Token {}", o.token));
    } else if let Some(b) = &basic {
        req = req.set("Authorization", b);
    }
    let start = Instant::now();
    let resp = match req.send_bytes(&[]) {
        Ok(r) => r,
        Err(ureq::Error::Status(_, r)) => r,
        Err(ureq::Error::Transport(t)) => return Err(go_transport_error(&q.method, &shown, &t)),
    };
    let status = resp.status();
    let mut body = Vec::new();
    let read = resp.into_reader().take(1 << 30).read_to_end(&mut body);
    if status != 200 {
        panic_msg_non200(o, status, &body);
    }
    read.map_err(|e| e.to_string())?;
    let lag = start.elapsed().as_nanos() as f64 / 1e6;
    if let Some(dir) = &o.explain_dir {
        write_explain(dir, id, &q.raw_query, &executed, &body)?;
    }
    match o.debug {
        1 => eprintln!("debug: {} in {lag:7.2}ms", q.human_label),
        2..=4 => eprintln!(
            "debug: {} in {lag:7.2}ms -- {}",
            q.human_label, q.human_description
        ),
        _ => {}
    }
    if o.print_responses {
        let v: serde_json::Value = serde_json::from_slice(&body).unwrap_or(serde_json::Value::Null);
        let full = GoJson::obj(vec![
            ("influxql", GoJson::Str(executed.clone())),
            ("response", GoJson::Raw(v.to_string())),
        ]);
        if let Ok(c) = full.compact() {
            println!("{}\n", gotool::indent_json(&c, &format!("ID {id}: "), "  "));
        }
    }
    Ok(lag)
}

/// What Go's net/http does with `http://USER:PASS@host/...` (the GreptimeDB runner has no auth
/// flag of its own, so this is how a password reaches it): the userinfo is not sent on the
/// request line but as `Authorization: Basic` (percent-decoded, unless one is set), and errors
/// show the password as `***` (`client.go` `stripPassword`). Returns (wire URL, header, shown).
fn go_userinfo(url: &str) -> (String, Option<String>, String) {
    let Some((scheme, rest)) = url.split_once("://") else {
        return (url.to_string(), None, url.to_string());
    };
    let auth_end = rest.find(['/', '?']).unwrap_or(rest.len());
    let Some(at) = rest[..auth_end].rfind('@') else {
        return (url.to_string(), None, url.to_string());
    };
    let (info, host) = (&rest[..at], &rest[at + 1..]);
    let wire = format!("{scheme}://{host}");
    let (user, pass) = match info.split_once(':') {
        Some((u, p)) => (pct_decode(u), Some(pct_decode(p))),
        None => (pct_decode(info), None),
    };
    let shown = match &pass {
        Some(_) => format!(
            "{scheme}://{}:***@{host}",
            info.split(':').next().unwrap_or("")
        ),
        None => url.to_string(),
    };
    let mut raw = user.into_bytes();
    raw.push(b':');
    raw.extend(pass.unwrap_or_default().into_bytes());
    (wire, Some(format!("Basic {}", b64(&raw))), shown)
}

fn pct_decode(s: &str) -> String {
    let b = s.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        if b[i] == b'%' && i + 2 < b.len() {
            if let Ok(v) = u8::from_str_radix(&s[i + 1..i + 3], 16) {
                out.push(v);
                i += 3;
                continue;
            }
        }
        out.push(b[i]);
        i += 1;
    }
    String::from_utf8_lossy(&out).into_owned()
}

fn b64(raw: &[u8]) -> String {
    const T: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    let mut s = String::new();
    for chunk in raw.chunks(3) {
        let n = chunk.iter().fold(0u32, |a, &b| (a << 8) | b as u32) << (8 * (3 - chunk.len()));
        for i in 0..4 {
            if i <= chunk.len() {
                s.push(T[((n >> (18 - 6 * i)) & 63) as usize] as char);
            } else {
                s.push('=');
            }
        }
    }
    s
}

fn panic_msg_non200(o: &Opts, status: u16, body: &[u8]) -> ! {
    go_panic(
        &o.tool,
        &format!(
            "http request did not return status 200 OK, code={status}, body={}",
            String::from_utf8_lossy(body)
        ),
    )
}

fn do_influx3(
    agent: &ureq::Agent,
    host: &str,
    q: &Query,
    id: u64,
    o: &Opts,
) -> Result<f64, String> {
    let payload = GoJson::obj(vec![
        ("db", GoJson::Str(o.db.clone())),
        ("q", GoJson::Str(q.raw_query.clone())),
        ("format", GoJson::Str("json".into())),
    ])
    .compact()?;
    let url = format!("{host}{}", q.path);
    let mut req = agent
        .post(&url)
        .set("Content-Type", "application/json")
        .set("Accept", "application/json")
        .set("User-Agent", "Go-http-client/1.1");
    if !o.token.is_empty() {
        req = req.set("Authorization", &format!("Bearer {}", o.token));
    }
    if o.debug > 0 {
        eprintln!("debug: {} -- {}", q.human_label, q.human_description);
        if o.debug >= 3 {
            eprintln!("debug:   SQL: {}", q.raw_query);
        }
    }
    let start = Instant::now();
    let resp = match req.send_bytes(payload.as_bytes()) {
        Ok(r) => r,
        Err(ureq::Error::Status(_, r)) => r,
        Err(ureq::Error::Transport(t)) => return Err(go_transport_error("POST", &url, &t)),
    };
    let status = resp.status();
    let cut = resp
        .header(crate::emulators::influxdb3::http::CUT_SHORT_HEADER)
        .is_some();
    let mut body = Vec::new();
    resp.into_reader()
        .take(1 << 30)
        .read_to_end(&mut body)
        .map_err(|e| e.to_string())?;
    // The real server cut the answer mid-body (its query pool ran out while it streamed):
    // the Go runner's read of the body ends in io.ErrUnexpectedEOF, which it panics with.
    if cut {
        return Err("unexpected EOF".into());
    }
    let lag = start.elapsed().as_nanos() as f64 / 1e6;
    if status != 200 {
        return Err(format!(
            "InfluxDB 3 query failed (status {status}): {}",
            String::from_utf8_lossy(&body)
        ));
    }
    if o.debug > 0 {
        eprintln!("debug: {} in {lag:7.2}ms", q.human_label);
        if o.debug >= 4 {
            eprintln!("debug:   response: {}", String::from_utf8_lossy(&body));
        }
    }
    if o.print_responses {
        let text = String::from_utf8_lossy(&body).into_owned();
        let pretty = serde_json::from_str::<serde_json::Value>(&text)
            .map(|_| gotool::indent_json(&text, "", "  "))
            .unwrap_or(text);
        println!("ID {id} SQL: {}\n{pretty}", q.raw_query);
    }
    Ok(lag)
}

/// The explain-results writer of the GreptimeDB runner: validates the response, then writes
/// `cold.json` (index 0) or `hot-%03d.json` through a temporary file, never overwriting.
fn write_explain(
    dir: &str,
    index: u64,
    sql: &str,
    executed: &str,
    body: &[u8],
) -> Result<(), String> {
    let text = std::str::from_utf8(body).ok();
    let value: Option<serde_json::Value> = text.and_then(|t| serde_json::from_str(t).ok());
    let Some(value) = value else {
        return Err(format!(
            "GreptimeDB explain response for query {index} is not valid JSON"
        ));
    };
    let error = value.get("error").and_then(|e| e.as_str()).unwrap_or("");
    if let Some(code) = value.get("code").and_then(|c| c.as_i64()) {
        if code != 0 {
            return Err(format!(
                "GreptimeDB explain query {index} failed with code {code}: {error}"
            ));
        }
    }
    if !error.is_empty() {
        return Err(format!("GreptimeDB explain query {index} failed: {error}"));
    }
    std::fs::create_dir_all(dir).map_err(|e| format!("mkdir {dir}: {e}"))?;
    let (phase, name) = if index == 0 {
        ("cold", "cold.json".to_string())
    } else {
        ("hot", format!("hot-{index:03}.json"))
    };
    let dest = std::path::Path::new(dir).join(name);
    if dest.exists() {
        return Err(format!("explain result already exists: {}", dest.display()));
    }
    let doc = GoJson::obj(vec![
        ("phase", GoJson::Str(phase.into())),
        ("query_index", GoJson::Uint(index)),
        ("sql", GoJson::Str(sql.into())),
        ("executed_sql", GoJson::Str(executed.into())),
        (
            "response",
            GoJson::Raw(text.unwrap_or_default().to_string()),
        ),
    ]);
    let mut encoded = doc.indented("  ")?;
    encoded.push('\n');
    let mut tmp = tempfile::Builder::new()
        .prefix(".explain-result-")
        .tempfile_in(dir)
        .map_err(|e| e.to_string())?;
    tmp.write_all(encoded.as_bytes())
        .map_err(|e| e.to_string())?;
    {
        use std::os::unix::fs::PermissionsExt;
        let _ = tmp
            .as_file()
            .set_permissions(std::fs::Permissions::from_mode(0o644));
    }
    tmp.persist(&dest).map_err(|e| e.to_string())?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn go_userinfo_becomes_basic_auth() {
        let (wire, basic, shown) =
            super::go_userinfo("http://bench:p%40ss@127.0.0.1:4000/v1/sql?sql=x&db=b");
        assert_eq!(wire, "http://127.0.0.1:4000/v1/sql?sql=x&db=b");
        // base64("bench:p@ss")
        assert_eq!(basic.as_deref(), Some("Basic YmVuY2g6cEBzcw=="));
        assert_eq!(shown, "http://bench:***@127.0.0.1:4000/v1/sql?sql=x&db=b");
        let (wire, basic, _) = super::go_userinfo("http://127.0.0.1:4000/v1/sql?sql=a@b");
        assert_eq!(wire, "http://127.0.0.1:4000/v1/sql?sql=a@b");
        assert!(basic.is_none());
    }

    #[test]
    fn stat_line_and_padding() {
        let mut groups = BTreeMap::new();
        let mut g = Group::default();
        for ms in [19.86, 22.93, 31.48] {
            g.push(ms);
        }
        groups.insert("all queries".to_string(), g);
        groups.insert("Influx last row per host".to_string(), Group::default());
        let text = stat_blocks(&groups);
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(lines[0], "Influx last row per host:");
        assert_eq!(lines[2], "all queries             :");
        assert_eq!(
            lines[3],
            "min:    19.86ms, med:    22.93ms, mean:    24.76ms, max:   31.48ms, stddev:     4.92ms, sum:   0.1sec, count: 3"
        );
        assert_eq!(
            strip("Influx CPU over threshold, 1 host(s)"),
            "Influx_CPU_over_threshold_1_host_s_"
        );
    }
}
