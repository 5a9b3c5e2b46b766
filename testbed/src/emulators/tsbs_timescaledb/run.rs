//! `tsbs_run_queries_timescaledb` against a real PostgreSQL (reference §7): `--burn-in`
//! without a large enough `--max-queries` panics before anything else (`burn-in is larger than
//! limit`); the gob file is decoded into `TimescaleDB` values by field name, as Go's gob does,
//! so an influx file runs as empty SQL and exits 0 (the hazard tsbsctl must catch); each worker
//! connects lazily, inside the first query's timer (the real runner's connection cost); a
//! failing statement panics with pgx's text (exit 2, stdout empty); the final report and the
//! results JSON are the other runners' (shared stat processor).
//!
//! `--print-responses` prints each answer as the real runner does (`prettyPrintResponse`:
//! `json.MarshalIndent` of `{"query", "results": [{column: value}]}`, keys sorted, then an
//! empty line), inside the query's timer as the real one, with the values pgx's `database/sql`
//! driver gives (`timestamptz` as RFC 3339 in UTC, numbers, text; other types as their text).
//!
//! Not emulated (exit 2 with a `testbed:` message): `--hdr-latencies`, `--memprofile`,
//! `--show-explain`, `--debug`, `--max-rps`.
//!
//! Knobs (`$TESTBED_KNOBS`, the object named after the tool; an unknown key is exit 2):
//! * `query_delay_ms: N` — each worker sleeps N ms before each query, outside its timer (a
//!   query phase that is still running when a test acts on it, as a large real one would be).

use std::io::Read;
use std::sync::{mpsc, Arc, Mutex};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use super::{connect, password, pg_error, read_queries, TsQuery};
use crate::emulators::tsbs_load::go_open_error;
use crate::emulators::tsbs_run::{process_stats, Stat};
use crate::gotool::{self, fatal, flag, go_panic, FlagDef, GoJson, Kind};

const TOOL: &str = "tsbs_run_queries_timescaledb";

/// The knobs of this stand-in (see the module docs).
#[derive(Debug, Default, serde::Deserialize)]
#[serde(deny_unknown_fields)]
struct Knobs {
    #[serde(default)]
    query_delay_ms: u64,
}

/// The flags exactly as the real `-help` lists them.
pub const FLAGS: &[FlagDef] = &[
    flag("burn-in", Kind::Uint, "0", "Number of queries to ignore before collecting statistics."),
    flag("db-name", Kind::Str, "benchmark", "Name of database to use for queries"),
    flag("debug", Kind::Int, "0", "Whether to print debug messages."),
    flag("file", Kind::Str, "", "File name to read queries from"),
    flag("force-text-format", Kind::Bool, "false", "Send/receive data in text format"),
    flag("hdr-latencies", Kind::Str, "", "Write the High Dynamic Range (HDR) Histogram of Response Latencies to this file."),
    flag("hosts", Kind::Str, "localhost", "Comma separated list of PostgreSQL hosts (pass multiple values for sharding reads on a multi-node setup)"),
    flag("max-queries", Kind::Uint, "0", "Limit the number of queries to send, 0 = no limit"),
    flag("max-rps", Kind::Uint, "0", "Limit the rate of queries per second, 0 = no limit"),
    flag("memprofile", Kind::Str, "", "Write a memory profile to this file."),
    flag("pass", Kind::Str, "", "Password for the user connecting to PostgreSQL (leave blank if not password protected)"),
    flag("port", Kind::Str, "5432", "Which port to connect to on the database host"),
    flag("postgres", Kind::Str, "host=postgres user=postgres sslmode=disable", "String of additional PostgreSQL connection parameters, e.g., 'sslmode=disable'. Parameters for host and database will be ignored."),
    flag("prewarm-queries", Kind::Bool, "false", "Run each query twice in a row so the warm query is guaranteed to be a cache hit"),
    flag("print-interval", Kind::Uint, "100", "Print timing stats to stderr after this many queries (0 to disable)"),
    flag("print-responses", Kind::Bool, "false", "Pretty print response bodies for correctness checking (default false)."),
    flag("results-file", Kind::Str, "", "Write the test results summary json to this file"),
    flag("show-explain", Kind::Bool, "false", "Print out the EXPLAIN output for sample query"),
    flag("user", Kind::Str, "postgres", "User to connect to PostgreSQL as"),
    flag("workers", Kind::Uint, "1", "Number of concurrent requests to make."),
];

pub fn main(args: Vec<String>) -> i32 {
    super::record_call(TOOL, &args);
    let knobs: Knobs = gotool::knobs_or_exit(TOOL);
    let query_delay = Duration::from_millis(knobs.query_delay_ms);
    let flags = match gotool::parse_tool(TOOL, &[FLAGS], &args) {
        Ok(f) => f,
        Err(code) => return code,
    };
    let limit = flags.u64("max-queries");
    let burn_in = flags.u64("burn-in");
    // benchmark_runner.go checks this first, comparing with limit even when it is 0 (no limit).
    if burn_in > limit {
        go_panic(TOOL, "burn-in is larger than limit");
    }
    let pass = match password(TOOL, &flags) {
        Ok(p) => p,
        Err(code) => return code,
    };
    for (name, zero) in [
        ("hdr-latencies", ""),
        ("memprofile", ""),
        ("show-explain", "false"),
        ("debug", "0"),
        ("max-rps", "0"),
    ] {
        let v = flags.str(name);
        let same = v == zero
            || gotool::parse_bool(&v).is_some_and(|b| Some(b) == gotool::parse_bool(zero));
        if !same {
            eprintln!("testbed: {TOOL}: --{name}={v} is not emulated");
            return 2;
        }
    }
    let workers = flags.u64("workers");
    let prewarm = flags.bool("prewarm-queries");
    let print_responses = flags.bool("print-responses");
    let print_interval = flags.u64("print-interval");
    let db = flags.str("db-name");
    let port = flags.str("port");
    let user = flags.str("user");
    let hosts: Vec<String> = flags
        .str("hosts")
        .split(',')
        .map(|h| h.trim().to_string())
        .filter(|h| !h.is_empty())
        .collect();
    if hosts.is_empty() {
        go_panic(TOOL, "no hosts given");
    }
    if workers == 0 {
        go_panic(TOOL, "must have at least one worker");
    }

    let file = flags.str("file");
    let mut bytes = Vec::new();
    let read = if file.is_empty() {
        std::io::stdin().read_to_end(&mut bytes).map(|_| ())
    } else {
        match std::fs::File::open(&file) {
            Ok(mut f) => f.read_to_end(&mut bytes).map(|_| ()),
            Err(e) => go_panic(
                TOOL,
                &format!(
                    "cannot open file for read {file}: {}",
                    go_open_error(&file, &e)
                ),
            ),
        }
    };
    if let Err(e) = read {
        fatal(&format!("read error: {e}"));
    }
    let queries = match read_queries(&bytes) {
        Ok(q) => q,
        Err(e) => fatal(&e),
    };

    let (stat_tx, stat_rx) = mpsc::sync_channel::<Stat>(workers as usize);
    let stats_thread = std::thread::spawn(move || {
        process_stats(stat_rx, workers, burn_in, limit, print_interval, prewarm)
    });
    let (q_tx, q_rx) = mpsc::sync_channel::<TsQuery>(workers as usize);
    let q_rx = Arc::new(Mutex::new(q_rx));
    let mut handles = Vec::new();
    for w in 0..workers {
        let host = hosts[(w as usize) % hosts.len()].clone();
        let (rx, tx) = (q_rx.clone(), stat_tx.clone());
        let (port, user, db, pass) = (port.clone(), user.clone(), db.clone(), pass.clone());
        handles.push(std::thread::spawn(move || {
            let mut client: Option<postgres::Client> = None;
            loop {
                let next = rx.lock().unwrap().recv();
                let Ok(q) = next else { break };
                let runs: &[bool] = if prewarm { &[false, true] } else { &[false] };
                for &warm in runs {
                    if !query_delay.is_zero() {
                        std::thread::sleep(query_delay);
                    }
                    // The timer starts before the (lazy) connection, as the real runner's.
                    let start = Instant::now();
                    if client.is_none() {
                        match connect(&host, &port, &user, &db, pass.as_deref()) {
                            Ok(c) => client = Some(c),
                            Err(e) => go_panic(TOOL, &e),
                        }
                    }
                    let c = client.as_mut().unwrap();
                    if print_responses {
                        match c.query(q.sql_query.as_str(), &[]) {
                            Ok(rows) => print_response(&q.sql_query, &rows),
                            Err(e) => go_panic(TOOL, &pg_error(&e)),
                        }
                    } else if let Err(e) = c.simple_query(&q.sql_query) {
                        go_panic(TOOL, &pg_error(&e));
                    }
                    let ms = start.elapsed().as_nanos() as f64 / 1e6;
                    let _ = tx.send(Stat {
                        label: q.human_label.clone(),
                        ms,
                        warm,
                    });
                }
            }
        }));
    }
    drop(stat_tx);

    let wall_start = Instant::now();
    let start_unix = SystemTime::now();
    for (n, q) in (0u64..).zip(queries) {
        if limit > 0 && n >= limit {
            break;
        }
        if q_tx.send(q).is_err() {
            break;
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
    if !results_file.is_empty() {
        // Unix seconds x 1000: milliseconds with second resolution, as the real file has.
        let ms = |t: SystemTime| {
            t.duration_since(UNIX_EPOCH)
                .map(|d| d.as_secs() as i64 * 1000)
                .unwrap_or(0)
        };
        let config = GoJson::obj(vec![
            ("DBName", GoJson::Str(db.clone())),
            ("Limit", GoJson::Uint(limit)),
            ("LimitRPS", GoJson::Uint(0)),
            ("MemProfile", GoJson::Str(String::new())),
            ("HDRLatenciesFile", GoJson::Str(String::new())),
            ("Workers", GoJson::Uint(workers)),
            ("PrintResponses", GoJson::Bool(print_responses)),
            ("Debug", GoJson::Int(0)),
            ("FileName", GoJson::Str(file.clone())),
            ("BurnIn", GoJson::Uint(burn_in)),
            ("PrintInterval", GoJson::Uint(print_interval)),
            ("PrewarmQueries", GoJson::Bool(prewarm)),
            ("ResultsFile", GoJson::Str(results_file.clone())),
        ]);
        let result = GoJson::obj(vec![
            ("ResultFormatVersion", GoJson::Str("0.2".into())),
            ("RunnerConfig", config),
            ("StartTime", GoJson::Int(ms(start_unix))),
            ("EndTime", GoJson::Int(ms(end_unix))),
            ("DurationMillis", GoJson::Int(wall.as_millis() as i64)),
            ("Totals", totals),
        ]);
        println!("Saving results json file to {results_file}");
        let text = match result.indented(" ") {
            Ok(t) => t,
            Err(e) => fatal(&e),
        };
        if let Err(e) = std::fs::write(&results_file, text) {
            fatal(&go_open_error(&results_file, &e));
        }
    }
    0
}

/// Any value's bytes as the server sent them (binary format).
struct RawValue(Vec<u8>);

impl<'a> postgres::types::FromSql<'a> for RawValue {
    fn from_sql(
        _: &postgres::types::Type,
        raw: &'a [u8],
    ) -> Result<Self, Box<dyn std::error::Error + Sync + Send>> {
        Ok(RawValue(raw.to_vec()))
    }
    fn accepts(_: &postgres::types::Type) -> bool {
        true
    }
}

/// One value as pgx's `database/sql` driver hands it to `json.Marshal`.
fn go_value(row: &postgres::Row, i: usize) -> GoJson {
    use postgres::types::Type;
    let ty = row.columns()[i].type_().clone();
    let opt = |r: Option<GoJson>| r.unwrap_or(GoJson::Null);
    match ty {
        Type::FLOAT8 => opt(row.get::<_, Option<f64>>(i).map(GoJson::Float)),
        Type::FLOAT4 => opt(row
            .get::<_, Option<f32>>(i)
            .map(|x| GoJson::Float(x as f64))),
        Type::INT8 => opt(row.get::<_, Option<i64>>(i).map(GoJson::Int)),
        Type::INT4 => opt(row.get::<_, Option<i32>>(i).map(|x| GoJson::Int(x as i64))),
        Type::INT2 => opt(row.get::<_, Option<i16>>(i).map(|x| GoJson::Int(x as i64))),
        Type::BOOL => opt(row.get::<_, Option<bool>>(i).map(GoJson::Bool)),
        Type::TIMESTAMPTZ | Type::TIMESTAMP => opt(row
            .get::<_, Option<SystemTime>>(i)
            .map(|t| GoJson::Str(rfc3339_nano(t)))),
        Type::TEXT | Type::VARCHAR | Type::NAME | Type::BPCHAR => {
            opt(row.get::<_, Option<String>>(i).map(GoJson::Str))
        }
        // jsonb: a version byte, then the text.
        Type::JSONB => opt(row.get::<_, Option<RawValue>>(i).map(|r| {
            GoJson::Str(String::from_utf8_lossy(r.0.get(1..).unwrap_or_default()).into_owned())
        })),
        _ => opt(row
            .get::<_, Option<RawValue>>(i)
            .map(|r| GoJson::Str(String::from_utf8_lossy(&r.0).into_owned()))),
    }
}

/// Go's `time.Time` JSON: RFC 3339 with the fraction's trailing zeros dropped, UTC as `Z`.
fn rfc3339_nano(t: SystemTime) -> String {
    let (secs, nanos) = match t.duration_since(UNIX_EPOCH) {
        Ok(d) => (d.as_secs() as i64, d.subsec_nanos()),
        Err(e) => {
            let d = e.duration();
            let n = d.subsec_nanos();
            if n == 0 {
                (-(d.as_secs() as i64), 0)
            } else {
                (-(d.as_secs() as i64) - 1, 1_000_000_000 - n)
            }
        }
    };
    let dt =
        time::OffsetDateTime::from_unix_timestamp(secs).unwrap_or(time::OffsetDateTime::UNIX_EPOCH);
    let f = time::macros::format_description!("[year]-[month]-[day]T[hour]:[minute]:[second]");
    let mut s = dt.format(&f).unwrap_or_default();
    if nanos > 0 {
        let frac = format!("{nanos:09}");
        s.push('.');
        s.push_str(frac.trim_end_matches('0'));
    }
    s.push('Z');
    s
}

/// `prettyPrintResponse`: the query and its rows, keys sorted as Go marshals a map.
fn print_response(sql: &str, rows: &[postgres::Row]) {
    let mut items = Vec::new();
    for row in rows {
        let mut fields: Vec<(String, GoJson)> = (0..row.len())
            .map(|i| (row.columns()[i].name().to_string(), go_value(row, i)))
            .collect();
        fields.sort_by(|a, b| a.0.cmp(&b.0));
        // A map keeps one value per name: the last column of that name wins.
        fields.reverse();
        fields.dedup_by(|a, b| a.0 == b.0);
        fields.reverse();
        match GoJson::Obj(fields).compact() {
            Ok(c) => items.push(c),
            Err(e) => go_panic(TOOL, &e),
        }
    }
    let doc = GoJson::obj(vec![
        ("query", GoJson::Str(sql.to_string())),
        ("results", GoJson::Raw(format!("[{}]", items.join(",")))),
    ]);
    match doc.indented("  ") {
        Ok(text) => {
            use std::io::Write;
            let mut out = std::io::stdout().lock();
            let _ = write!(out, "{text}\n\n");
        }
        Err(e) => go_panic(TOOL, &e),
    }
}
