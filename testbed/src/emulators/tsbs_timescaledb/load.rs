//! `tsbs_load_timescaledb` against a real PostgreSQL (reference §5): the header of the
//! timescaledb data format first (`ended too soon, no tags or cols read`, exit 1, for anything
//! else), then through `--admin-db-name` the database lifecycle (exists? abort, or `DROP
//! DATABASE IF EXISTS` and `CREATE DATABASE`), the `tags` table and one table per measurement of
//! the header (`cpu` alone for cpu-only; nine for devops; `readings`, `diagnostics` for iot) with
//! the indexes of `load/schema-after-plain-load.txt` (the five of cpu-only), the hypertable
//! with `--use-hypertable`
//! (`CREATE EXTENSION IF NOT EXISTS timescaledb CASCADE`, which fails without the extension
//! as the real one does), then `--workers` threads inserting `--batch-size` rows per batch
//! (new tag sets with `INSERT ... ON CONFLICT DO NOTHING`, rows with `COPY`, or batched
//! `INSERT` with `--use-insert`). One tag cache for all workers keyed by the first tag's value,
//! as the real `globalSyncCSI`: a row whose first tag is empty (iot's nameless trucks) is NULL
//! in `tags` and gets tags_id 0. The metric count is every value column, empty or not.
//! Statement failures print `could not execute sql: <sql>`
//! without a newline and panic with pgx's text (exit 2), as `MustExec` does.
//!
//! Not emulated (exit 2 with a `testbed:` message): `--insert-intervals`, `--hash-workers`,
//! `--log-batches`, `--use-jsonb-tags`, `--in-table-partition-tag`, `--field-index-count`,
//! `--time-partition-index`, `--replication-factor`, `--write-profile`,
//! `--write-replication-stats`.
//!
//! Knobs (`$TESTBED_KNOBS`, the object named after the tool; an unknown key is exit 2):
//! * `batch_delay_ms: N` — each worker sleeps N ms after each batch it wrote (a load that is
//!   still running when a test acts on it, as a large real dataset would be).

use std::collections::HashMap;
use std::io::{BufRead, BufReader, Read, Write};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{mpsc, Arc, Mutex};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use super::{connect, must_exec_failed, password, pg_error};
use crate::emulators::tsbs_load::{go_open_error, report};
use crate::gotool::{self, fatal, flag, go_panic, FlagDef, GoJson, Kind};

const TOOL: &str = "tsbs_load_timescaledb";

/// The flags exactly as the real `-help` lists them (fixture `help/tsbs_load_timescaledb.help.txt`).
pub const FLAGS: &[FlagDef] = &[
    flag("admin-db-name", Kind::Str, "postgres", "Database to connect to in order to create additional benchmark databases."),
    flag("batch-size", Kind::Uint, "10000", "Number of items to batch together in a single insert"),
    flag("chunk-time", Kind::Duration, "12h0m0s", "Duration that each chunk should represent, e.g., 12h"),
    flag("create-metrics-table", Kind::Bool, "true", "Drops existing and creates new metrics table. Can be used for both regular and hypertable"),
    flag("db-name", Kind::Str, "benchmark", "Name of database"),
    flag("do-abort-on-exist", Kind::Bool, "false", "Whether to abort if a database with the given name already exists."),
    flag("do-create-db", Kind::Bool, "true", "Whether to create the database. Disable on all but one client if running on a multi client setup."),
    flag("do-load", Kind::Bool, "true", "Whether to write data. Set this flag to false to check input read speed."),
    flag("field-index", Kind::Str, "VALUE-TIME", "index types for tags (comma delimited)"),
    flag("field-index-count", Kind::Int, "0", "Number of indexed fields (-1 for all)"),
    flag("file", Kind::Str, "", "File name to read data from"),
    flag("force-text-format", Kind::Bool, "false", "Send/receive data in text format"),
    flag("hash-workers", Kind::Bool, "false", "Whether to consistently hash insert data to the same workers (i.e., the data for a particular host always goes to the same worker)"),
    flag("host", Kind::Str, "localhost", "Hostname of TimescaleDB (PostgreSQL) instance"),
    flag("in-table-partition-tag", Kind::Bool, "false", "Whether the partition key (e.g. hostname) should also be in the metrics hypertable"),
    flag("insert-intervals", Kind::Str, "", "Time to wait between each insert, default '' => all workers insert ASAP. '1,2' = worker 1 waits 1s between inserts, worker 2 and others wait 2s"),
    flag("limit", Kind::Uint, "0", "Number of items to insert (0 = all of them)."),
    flag("log-batches", Kind::Bool, "false", "Whether to time individual batches."),
    flag("partition-index", Kind::Bool, "true", "Whether to build an index on the partition key"),
    flag("partitions", Kind::Int, "0", "Number of partitions"),
    flag("pass", Kind::Str, "", "Password for user connecting to PostgreSQL (leave blank if not password protected)"),
    flag("port", Kind::Str, "5432", "Which port to connect to on the database host"),
    flag("postgres", Kind::Str, "sslmode=disable", "PostgreSQL connection string"),
    flag("replication-factor", Kind::Int, "0", "Setting replication factor >= 1 will create a distributed hypertable"),
    flag("reporting-period", Kind::Duration, "10s", "Period to report write stats"),
    flag("results-file", Kind::Str, "", "Write the test results summary json to this file"),
    flag("seed", Kind::Int, "0", "PRNG seed (default: 0, which uses the current timestamp)"),
    flag("time-index", Kind::Bool, "true", "Whether to build an index on the time dimension"),
    flag("time-partition-index", Kind::Bool, "false", "Whether to build an index on the time dimension, compounded with partition"),
    flag("use-hypertable", Kind::Bool, "true", "Whether to make the table a hypertable. Set this flag to false to check input write speed against regular PostgreSQL."),
    flag("use-insert", Kind::Bool, "false", "Provides the option to test data inserts with batched INSERT commands rather than the preferred COPY function"),
    flag("use-jsonb-tags", Kind::Bool, "false", "Whether tags should be stored as JSONB (instead of a separate table with schema)"),
    flag("user", Kind::Str, "postgres", "User to connect to PostgreSQL as"),
    flag("workers", Kind::Uint, "1", "Number of parallel clients inserting"),
    flag("write-profile", Kind::Str, "", "File to output CPU/memory profile to"),
    flag("write-replication-stats", Kind::Str, "", "File to output replication stats to"),
];

/// The knobs of this stand-in (see the module docs).
#[derive(Debug, Default, serde::Deserialize)]
#[serde(deny_unknown_fields)]
struct Knobs {
    #[serde(default)]
    batch_delay_ms: u64,
}

/// The data file's header (`file_data_source.go` `Headers`): the tag columns with their
/// types, then one line per table with its value columns, up to a blank line.
struct Header {
    tag_cols: Vec<String>,
    tag_types: Vec<String>,
    /// Table and value columns, in the header's order.
    tables: Vec<(String, Vec<String>)>,
}

impl Header {
    fn columns(&self, table: &str) -> Option<&[String]> {
        self.tables
            .iter()
            .find(|(t, _)| t == table)
            .map(|(_, c)| c.as_slice())
    }
}

/// Reads the header lines; anything else is the real loader's `log.Fatal`.
fn read_header(input: &mut impl BufRead) -> Header {
    let mut lines = Vec::new();
    loop {
        let mut l = String::new();
        match input.read_line(&mut l) {
            Ok(0) | Err(_) => fatal("ended too soon, no tags or cols read"),
            Ok(_) => {}
        }
        let l = l.trim().to_string();
        if l.is_empty() {
            break;
        }
        lines.push(l);
    }
    let Some(first) = lines.first() else {
        fatal("ended too soon, no tags or cols read");
    };
    let mut tags = first.split(',');
    if tags.next() != Some("tags") {
        fatal(&format!(
            "input header in wrong format. got '{}', expected 'tags'",
            first.chars().next().unwrap_or(' ')
        ));
    }
    let (mut tag_cols, mut tag_types) = (Vec::new(), Vec::new());
    for t in tags {
        let parts: Vec<&str> = t.split(' ').collect();
        if parts.len() != 2 {
            go_panic(TOOL, "tag header has invalid format");
        }
        tag_cols.push(parts[0].to_string());
        tag_types.push(parts[1].to_string());
    }
    let tables = lines[1..]
        .iter()
        .map(|l| {
            let mut cols = l.split(',').map(str::to_string);
            let table = cols.next().unwrap_or_default();
            (table, cols.collect())
        })
        .collect();
    Header {
        tag_cols,
        tag_types,
        tables,
    }
}

/// `serializedTypeToPgType`: an unknown type panics, as the real one does.
fn pg_type(t: &str) -> &'static str {
    match t {
        "string" => "TEXT",
        "float32" => "FLOAT",
        "float64" => "DOUBLE PRECISION",
        "int64" => "BIGINT",
        "int32" => "INTEGER",
        other => go_panic(TOOL, &format!("unrecognized type {other}")),
    }
}

/// Ends the process like `MustExec` when `r` failed.
fn must<T>(sql: &str, r: Result<T, postgres::Error>) -> T {
    r.unwrap_or_else(|e| must_exec_failed(TOOL, sql, &pg_error(&e)))
}

fn quote_lit(s: &str) -> String {
    format!("'{}'", s.replace('\'', "''"))
}

/// Unix nanoseconds as a timestamptz literal, microseconds as PostgreSQL keeps them.
fn ts_literal(ns: i128) -> String {
    let t = time::OffsetDateTime::from_unix_timestamp_nanos(ns)
        .unwrap_or(time::OffsetDateTime::UNIX_EPOCH);
    format!(
        "{:04}-{:02}-{:02} {:02}:{:02}:{:02}.{:06}+00",
        t.year(),
        t.month() as u8,
        t.day(),
        t.hour(),
        t.minute(),
        t.second(),
        t.microsecond()
    )
}

pub fn main(args: Vec<String>) -> i32 {
    super::record_call(TOOL, &args);
    let flags = match gotool::parse_tool(TOOL, &[FLAGS], &args) {
        Ok(f) => f,
        Err(code) => return code,
    };
    let pass = match password(TOOL, &flags) {
        Ok(p) => p,
        Err(code) => return code,
    };
    let knobs: Knobs = gotool::knobs_or_exit(TOOL);
    let batch_delay = Duration::from_millis(knobs.batch_delay_ms);
    for (name, emulated_value) in [
        ("insert-intervals", ""),
        ("hash-workers", "false"),
        ("log-batches", "false"),
        ("use-jsonb-tags", "false"),
        ("in-table-partition-tag", "false"),
        ("field-index-count", "0"),
        ("time-partition-index", "false"),
        ("replication-factor", "0"),
        ("write-profile", ""),
        ("write-replication-stats", ""),
    ] {
        let v = flags.str(name);
        let same = v == emulated_value
            || gotool::parse_bool(&v)
                .is_some_and(|b| Some(b) == gotool::parse_bool(emulated_value));
        if !same {
            eprintln!("testbed: {TOOL}: --{name}={v} is not emulated");
            return 2;
        }
    }
    let host = flags.str("host");
    let port = flags.str("port");
    let user = flags.str("user");
    let db = flags.str("db-name");
    let admin_db = flags.str("admin-db-name");
    let batch_size = flags.u64("batch-size").max(1);
    let workers = flags.u64("workers");
    let limit = flags.u64("limit");
    let do_load = flags.bool("do-load");
    let do_create = flags.bool("do-create-db");
    let abort_on_exist = flags.bool("do-abort-on-exist");
    let hypertable = flags.bool("use-hypertable");
    let use_insert = flags.bool("use-insert");

    let file = flags.str("file");
    let raw: Box<dyn Read + Send> = if file.is_empty() {
        Box::new(std::io::stdin())
    } else {
        match std::fs::File::open(&file) {
            Ok(f) => Box::new(f),
            Err(e) => fatal(&format!(
                "cannot open file for read {file}: {}",
                go_open_error(&file, &e)
            )),
        }
    };
    let mut input = BufReader::with_capacity(4 << 20, raw);
    // The creator's Init reads the header before any database work.
    let header = read_header(&mut input);

    if do_load && (do_create || abort_on_exist) {
        let mut admin = match connect(&host, &port, &user, &admin_db, pass.as_deref()) {
            Ok(c) => c,
            Err(e) => go_panic(TOOL, &e),
        };
        let exists = match admin.query_opt("SELECT 1 from pg_database WHERE datname = $1", &[&db]) {
            Ok(r) => r.is_some(),
            Err(e) => go_panic(TOOL, &pg_error(&e)),
        };
        if exists && abort_on_exist {
            go_panic(TOOL, &format!("database \"{db}\" exists: aborting."));
        }
        if do_create {
            let drop = format!("DROP DATABASE IF EXISTS {db}");
            if exists {
                must(&drop, admin.batch_execute(&drop));
            }
            let create = format!("CREATE DATABASE {db}");
            must(&create, admin.batch_execute(&create));
        }
    }

    let mut conn: Option<postgres::Client> = None;
    let mut exec = |sql: &str| {
        if conn.is_none() {
            // database/sql connects lazily: a missing database fails on the first statement.
            match connect(&host, &port, &user, &db, pass.as_deref()) {
                Ok(c) => conn = Some(c),
                Err(e) => must_exec_failed(TOOL, sql, &e),
            }
        }
        let r = conn.as_mut().unwrap().batch_execute(sql);
        must(sql, r);
    };
    if do_load && flags.bool("create-metrics-table") {
        exec("DROP TABLE IF EXISTS tags");
        exec(&format!(
            "CREATE TABLE tags(id SERIAL PRIMARY KEY, {})",
            header
                .tag_cols
                .iter()
                .zip(&header.tag_types)
                .map(|(c, t)| format!("{c} {}", pg_type(t)))
                .collect::<Vec<_>>()
                .join(", ")
        ));
        exec(&format!(
            "CREATE UNIQUE INDEX uniq1 ON tags({})",
            header.tag_cols.join(",")
        ));
        exec(&format!("CREATE INDEX ON tags({})", header.tag_cols[0]));
        // One table per header line (`PostCreateDB` ranges over a Go map: any order).
        for (table, fields) in &header.tables {
            exec(&format!("DROP TABLE IF EXISTS {table}"));
            exec(&format!(
                "CREATE TABLE {table} (time timestamptz, tags_id integer, {}, additional_tags JSONB DEFAULT NULL)",
                fields
                    .iter()
                    .filter(|f| !f.is_empty())
                    .map(|f| format!("{f} DOUBLE PRECISION"))
                    .collect::<Vec<_>>()
                    .join(",")
            ));
            if flags.bool("partition-index") {
                exec(&format!("CREATE INDEX ON {table}(tags_id, \"time\" DESC)"));
            }
            if flags.bool("time-index") {
                exec(&format!("CREATE INDEX ON {table}(\"time\" DESC)"));
            }
            // No field indexes: --field-index-count is 0 (other values are refused above).
            if hypertable {
                exec("CREATE EXTENSION IF NOT EXISTS timescaledb CASCADE");
                let chunk_us = flags.duration_ns("chunk-time") / 1000;
                let partitions = flags.i64("partitions");
                let options = if partitions > 0 {
                    format!("partitioning_column => 'tags_id'::name, number_partitions => {partitions}::smallint, chunk_time_interval => {chunk_us}, create_default_indexes => FALSE")
                } else {
                    format!("chunk_time_interval => {chunk_us}, create_default_indexes => FALSE")
                };
                exec(&format!(
                    "SELECT create_hypertable('{table}'::regclass, 'time'::name, {options})"
                ));
            }
        }
    }
    drop(conn);

    let metric_cnt = Arc::new(AtomicU64::new(0));
    let row_cnt = Arc::new(AtomicU64::new(0));
    let done = Arc::new((Mutex::new(false), std::sync::Condvar::new()));
    let period = flags.duration("reporting-period");
    let reporter = (period > Duration::ZERO).then(|| {
        println!(
            "time,per. metric/s,metric total,overall metric/s,per. row/s,row total,overall row/s"
        );
        let (m, r, done) = (metric_cnt.clone(), row_cnt.clone(), done.clone());
        std::thread::spawn(move || report(period, &m, &r, &done))
    });
    let start = Instant::now();
    let start_wall = SystemTime::now();

    if workers == 0 {
        eprintln!("fatal error: all goroutines are asleep - deadlock!");
        return 2;
    }
    let (tx, rx) = mpsc::sync_channel::<Vec<(String, String)>>(workers as usize);
    let rx = Arc::new(Mutex::new(rx));
    let header = Arc::new(header);
    // `globalSyncCSI`: one tag cache for every worker, keyed by the first tag's value.
    let tag_ids: Arc<Mutex<HashMap<String, i32>>> = Arc::default();
    let mut handles = Vec::new();
    for _ in 0..workers {
        let (rx, tag_ids) = (rx.clone(), tag_ids.clone());
        let (header, metric_cnt, row_cnt) = (header.clone(), metric_cnt.clone(), row_cnt.clone());
        let (host, port, user, db, pass) = (
            host.clone(),
            port.clone(),
            user.clone(),
            db.clone(),
            pass.clone(),
        );
        handles.push(std::thread::spawn(move || {
            let mut client: Option<postgres::Client> = None;
            loop {
                let next = rx.lock().unwrap().recv();
                let Ok(batch) = next else { break };
                if !do_load {
                    row_cnt.fetch_add(batch.len() as u64, Ordering::SeqCst);
                    continue;
                }
                if client.is_none() {
                    match connect(&host, &port, &user, &db, pass.as_deref()) {
                        Ok(c) => client = Some(c),
                        Err(e) => go_panic(TOOL, &e),
                    }
                }
                let c = client.as_mut().unwrap();
                let metrics = insert_batch(c, &header, &batch, &tag_ids, use_insert);
                metric_cnt.fetch_add(metrics, Ordering::SeqCst);
                row_cnt.fetch_add(batch.len() as u64, Ordering::SeqCst);
                if !batch_delay.is_zero() {
                    std::thread::sleep(batch_delay);
                }
            }
        }));
    }

    // Rows are line pairs (`NextItem`): a `tags,...` line, then its `<table>,<ns>,...` line.
    let mut batch = Vec::with_capacity(batch_size as usize);
    let mut lines = input.lines();
    let mut rows = 0u64;
    while let Some(Ok(tags)) = lines.next() {
        if limit > 0 && rows >= limit {
            break;
        }
        if !tags.starts_with("tags,") {
            let prefix = tags.split(',').next().unwrap_or("");
            fatal(&format!(
                "data file in invalid format; got {prefix} expected tags"
            ));
        }
        let Some(Ok(values)) = lines.next() else {
            fatal("scan error: <nil>");
        };
        batch.push((tags, values));
        rows += 1;
        if batch.len() as u64 >= batch_size && tx.send(std::mem::take(&mut batch)).is_err() {
            break;
        }
    }
    if !batch.is_empty() {
        let _ = tx.send(batch);
    }
    drop(tx);
    for h in handles {
        let _ = h.join();
    }
    let took = start.elapsed();
    let end_wall = SystemTime::now();
    {
        let (lock, cv) = &*done;
        *lock.lock().unwrap() = true;
        cv.notify_all();
    }
    if let Some(r) = reporter {
        let _ = r.join();
    }

    let metrics = metric_cnt.load(Ordering::SeqCst);
    let rows = row_cnt.load(Ordering::SeqCst);
    let secs = took.as_secs_f64();
    let mut out = std::io::stdout().lock();
    let _ = write!(
        out,
        "\nSummary:\nloaded {metrics} metrics in {secs:.3}sec with {workers} workers (mean rate {:.2} metrics/sec)\n",
        metrics as f64 / secs
    );
    if rows > 0 {
        let _ = writeln!(
            out,
            "loaded {rows} rows in {secs:.3}sec with {workers} workers (mean rate {:.2} rows/sec)",
            rows as f64 / secs
        );
    }
    let _ = out.flush();
    drop(out);

    let results_file = flags.str("results-file");
    if !results_file.is_empty() {
        let unix = |t: SystemTime| {
            t.duration_since(UNIX_EPOCH)
                .map(|d| d.as_secs() as i64)
                .unwrap_or(0)
        };
        let config = GoJson::obj(vec![
            ("db-name", GoJson::Str(db.clone())),
            ("batch-size", GoJson::Uint(batch_size)),
            ("workers", GoJson::Uint(workers)),
            ("limit", GoJson::Uint(limit)),
            ("do-load", GoJson::Bool(do_load)),
            ("do-create-db", GoJson::Bool(do_create)),
            ("do-abort-on-exist", GoJson::Bool(abort_on_exist)),
            (
                "reporting-period",
                GoJson::Int(flags.duration_ns("reporting-period")),
            ),
            ("hash-workers", GoJson::Bool(false)),
            ("no-flow-control", GoJson::Bool(false)),
            ("channel-capacity", GoJson::Uint(0)),
            (
                "insert-intervals",
                GoJson::Str(flags.str("insert-intervals")),
            ),
            ("results-file", GoJson::Str(results_file.clone())),
            ("file", GoJson::Str(file.clone())),
            ("seed", GoJson::Int(flags.i64("seed"))),
        ]);
        let result = GoJson::obj(vec![
            ("ResultFormatVersion", GoJson::Str("0.2".into())),
            ("RunnerConfig", config),
            ("StartTime", GoJson::Int(unix(start_wall))),
            ("EndTime", GoJson::Int(unix(end_wall))),
            ("DurationMillis", GoJson::Int(took.as_millis() as i64)),
            (
                "Totals",
                GoJson::obj(vec![
                    ("metricCount", GoJson::Uint(metrics)),
                    ("metricRate", GoJson::Float(metrics as f64 / secs)),
                    ("rowCount", GoJson::Uint(rows)),
                    ("rowRate", GoJson::Float(rows as f64 / secs)),
                ]),
            ),
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

/// `convertValsToSQLBasedOnType`: empty is NULL, strings are quoted (the real loader does not
/// escape them either), other types as written.
fn sql_value(v: &str, t: &str) -> String {
    match (v, t) {
        ("", _) => "NULL".into(),
        (v, "string") => format!("'{v}'"),
        (v, _) => v.to_string(),
    }
}

/// Inserts one batch (`ProcessBatch`: per table, new tag sets first); returns its metric count,
/// every value column of every row as the real `splitTagsAndMetrics` counts, empty or not.
fn insert_batch(
    c: &mut postgres::Client,
    header: &Header,
    batch: &[(String, String)],
    tag_ids: &Mutex<HashMap<String, i32>>,
    use_insert: bool,
) -> u64 {
    let common = header.tag_cols.len();
    let mut by_table: Vec<(&str, Vec<Row>)> = Vec::new();
    for (tags, values) in batch {
        // The first `common` tags lose their keys; any further ones become additional_tags.
        let mut parts = tags["tags,".len()..].splitn(common + 1, ',');
        let vals: Vec<String> = (0..common)
            .map(|_| {
                let kv = parts.next().unwrap_or("");
                match kv.split_once('=') {
                    Some((_, v)) => v.to_string(),
                    None => go_panic(TOOL, "runtime error: index out of range [1] with length 1"),
                }
            })
            .collect();
        let extra = parts.next().map(|rest| {
            let o: serde_json::Map<String, serde_json::Value> = rest
                .split(',')
                .filter_map(|kv| kv.split_once('='))
                .map(|(k, v)| (k.to_string(), serde_json::Value::String(v.to_string())))
                .collect();
            serde_json::Value::Object(o).to_string()
        });
        let table = values.split(',').next().unwrap_or("");
        let row = (vals, extra, &values[table.len().min(values.len())..]);
        match by_table.iter_mut().find(|(t, _)| *t == table) {
            Some((_, rows)) => rows.push(row),
            None => by_table.push((table, vec![row])),
        }
    }
    let mut metrics = 0u64;
    for (table, rows) in by_table {
        metrics += insert_table(c, header, table, &rows, tag_ids, use_insert);
    }
    metrics
}

type Row<'a> = (Vec<String>, Option<String>, &'a str);

/// `processCSI` for one table.
fn insert_table(
    c: &mut postgres::Client,
    header: &Header,
    table: &str,
    rows: &[Row],
    tag_ids: &Mutex<HashMap<String, i32>>,
    use_insert: bool,
) -> u64 {
    let mut cache = tag_ids.lock().unwrap();
    let new_tags: Vec<&Vec<String>> = rows
        .iter()
        .map(|r| &r.0)
        .filter(|v| !cache.contains_key(&v[0]))
        .collect();
    if !new_tags.is_empty() {
        let sql = format!(
            "INSERT INTO tags({}) VALUES {} ON CONFLICT DO NOTHING RETURNING *",
            header.tag_cols.join(","),
            new_tags
                .iter()
                .map(|v| format!(
                    "({})",
                    v.iter()
                        .zip(&header.tag_types)
                        .map(|(x, t)| sql_value(x, t))
                        .collect::<Vec<_>>()
                        .join(",")
                ))
                .collect::<Vec<_>>()
                .join(",")
        );
        let returned = c
            .simple_query(&sql)
            .unwrap_or_else(|e| go_panic(TOOL, &pg_error(&e)));
        // `sqlTagsToCacheLine` keys by `fmt.Sprintf("%v", first tag)`: a NULL one is `<nil>`,
        // which no row's (empty) key finds, so such rows get tags_id 0 (Go's zero value).
        for m in returned {
            if let postgres::SimpleQueryMessage::Row(r) = m {
                let id: i32 = r.get(0).and_then(|x| x.parse().ok()).unwrap_or(0);
                cache.insert(r.get(1).unwrap_or("<nil>").to_string(), id);
            }
        }
    }
    let ids: Vec<i32> = rows
        .iter()
        .map(|r| cache.get(&r.0[0]).copied().unwrap_or(0))
        .collect();
    drop(cache);
    let fields = header.columns(table).unwrap_or(&[]);
    let mut metrics = 0u64;
    let mut lines = Vec::with_capacity(rows.len());
    for ((_, extra, values), id) in rows.iter().zip(ids) {
        let mut parts = values.trim_start_matches(',').split(',');
        let ns: i128 = parts
            .next()
            .and_then(|t| t.parse().ok())
            .unwrap_or_else(|| {
                go_panic(
                    TOOL,
                    &format!("strconv.ParseInt: parsing {values:?}: invalid syntax"),
                )
            });
        let vals: Vec<&str> = parts.collect();
        metrics += vals.len() as u64;
        lines.push((ts_literal(ns), id, extra.clone(), vals));
    }
    let cols = format!("time,tags_id,additional_tags,{}", fields.join(","));
    if use_insert {
        let sql = format!(
            "INSERT INTO {table}({cols}) VALUES {}",
            lines
                .iter()
                .map(|(t, id, extra, vals)| format!(
                    "('{t}',{id},{},{})",
                    extra
                        .as_deref()
                        .map(quote_lit)
                        .unwrap_or_else(|| "NULL".into()),
                    vals.iter()
                        .map(|v| if v.is_empty() { "NULL" } else { v })
                        .collect::<Vec<_>>()
                        .join(",")
                ))
                .collect::<Vec<_>>()
                .join(",")
        );
        if let Err(e) = c.batch_execute(&sql) {
            go_panic(TOOL, &pg_error(&e));
        }
    } else {
        let mut text = String::with_capacity(lines.len() * 96);
        for (t, id, extra, vals) in &lines {
            text.push_str(t);
            text.push('\t');
            text.push_str(&id.to_string());
            text.push('\t');
            text.push_str(extra.as_deref().unwrap_or("\\N"));
            for v in vals {
                text.push('\t');
                text.push_str(if v.is_empty() { "\\N" } else { v });
            }
            text.push('\n');
        }
        let mut w = c
            .copy_in(&format!("COPY {table}({cols}) FROM STDIN"))
            .unwrap_or_else(|e| go_panic(TOOL, &pg_error(&e)));
        if let Err(e) = w.write_all(text.as_bytes()) {
            go_panic(TOOL, &format!("COPY failed: {e}"));
        }
        if let Err(e) = w.finish() {
            go_panic(TOOL, &pg_error(&e));
        }
    }
    metrics
}
