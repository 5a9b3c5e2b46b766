//! Conformance with the recordings of the real servers (issue 26, item 7): the requests of
//! `tests/fixtures/conformance/` (copied from `shared/fixtures/greptimedb-real*/` and
//! `shared/fixtures/influxdb3-real/`, one exchange per file, format in that directory's README)
//! are replayed against the emulators, in the state the real server was in, and the answers are
//! compared with what the real servers answered: status, content type, the recorded headers,
//! and the body (JSON: keys and value types recursively, values exactly except where a fixture
//! says `vary:`; text: exactly). Run-specific parts (uuids, region ids, times, ports, paths,
//! durations, the build's short revision) are replaced by placeholders on both sides first.
//! A difference is the emulator's fault: fix the emulator, or say in the fixture why it cannot
//! matter.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use nix::sys::signal::Signal;
use regex::Regex;
use serde_json::Value;

use super::greptime_emulator as gt;
use super::influxdb3_emulator as ix;

fn fixtures() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/conformance")
}

/// The fixtures each test replays, in order (every file of the directory is in one list).
const GT_FRESH: &[&str] = &[
    "08-health.txt",
    "01-show-databases.txt",
    "02-create-database.txt",
    "03-create-database-again.txt",
    "04-select-1.txt",
    "05-count-missing-table.txt",
    "06-count-missing-table-default-db.txt",
    "07-post-without-form-content-type.txt",
];
const GT_LOADED: &[&str] = &[
    "10-count-after-load.txt",
    "11-flush-table.txt",
    "12-compact-swcs.txt",
    "13-compact-twcs-nothing-to-do.txt",
    "14-compact-default.txt",
    "15-compact-twcs-with-window.txt",
    "16-compact-unknown-type.txt",
    "17-compact-swcs-again.txt",
    "18-region-statistics.txt",
];
const GT_SIGTERM: &str = "20-compact-during-sigterm.txt";
/// The fork's iot query texts over `greptimedb-iot-lines.lp` in `iot`.
const GT_IOT: &[&str] = &[
    "21-iot-high-load.txt",
    "22-iot-last-loc.txt",
    "23-iot-low-fuel.txt",
    "24-iot-single-last-loc.txt",
    "25-iot-avg-load.txt",
    "26-iot-avg-vs-projected-fuel-consumption.txt",
];
const IX_FILE_LIMIT: &[&str] = &[
    "05-count-over-file-limit.txt",
    "06-count-in-a-narrow-range.txt",
    "01-ping.txt",
    "02-health.txt",
    "03-database-list.txt",
    "04-database-list-without-format.txt",
];
const IX_FRESH: &[&str] = &["08-durable-write.txt", "07-count-whole-table.txt"];

#[derive(Debug, PartialEq)]
enum ContentType {
    /// The recording does not show the headers.
    NotRecorded,
    /// The real answer had no `content-type`.
    Absent,
    Is(String),
}

#[derive(Debug, PartialEq)]
enum Compare {
    Json,
    Text,
    /// Column names and rows as a Python script printed them: names exact, row count, and
    /// per value integer or string.
    PythonRows,
}

#[derive(Debug)]
struct Exchange {
    name: String,
    method: String,
    target: String,
    request_headers: Vec<(String, String)>,
    request_body: Option<Vec<u8>>,
    status: u16,
    content_type: ContentType,
    headers: Vec<(String, String)>,
    compare: Compare,
    vary: Vec<String>,
    body: String,
}

fn split_header(s: &str) -> (String, String) {
    let (k, v) = s
        .split_once(':')
        .unwrap_or_else(|| panic!("not `name: value`: {s}"));
    (k.trim().to_string(), v.trim().to_string())
}

/// Reads `<server>/<name>` (format: the directory's README).
fn load(server: &str, name: &str) -> Exchange {
    let path = fixtures().join(server).join(name);
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    let (head, body) = text
        .split_once("\n--- body\n")
        .unwrap_or_else(|| panic!("{name}: no `--- body` line"));
    let mut ex = Exchange {
        name: format!("{server}/{name}"),
        method: String::new(),
        target: String::new(),
        request_headers: Vec::new(),
        request_body: None,
        status: 0,
        content_type: ContentType::NotRecorded,
        headers: Vec::new(),
        compare: Compare::Text,
        vary: Vec::new(),
        body: body.to_string(),
    };
    let mut form = url::form_urlencoded::Serializer::new(String::new());
    let mut has_form = false;
    for line in head.lines() {
        if line.starts_with('#') || line.trim().is_empty() {
            continue;
        }
        let (key, value) = line
            .split_once(": ")
            .unwrap_or_else(|| panic!("{name}: cannot read {line:?}"));
        match key {
            "request" => {
                let (m, t) = value.split_once(' ').expect("request: METHOD TARGET");
                ex.method = m.to_string();
                ex.target = t.to_string();
            }
            "request-header" => ex.request_headers.push(split_header(value)),
            "request-form" => {
                let (k, v) = value.split_once('=').expect("request-form: key=value");
                form.append_pair(k, v);
                has_form = true;
            }
            "request-body" => ex.request_body = Some(value.as_bytes().to_vec()),
            "status" => ex.status = value.parse().expect("status"),
            "content-type" => {
                ex.content_type = match value {
                    "not recorded" => ContentType::NotRecorded,
                    "none" => ContentType::Absent,
                    v => ContentType::Is(v.to_string()),
                }
            }
            "header" => ex.headers.push(split_header(value)),
            "compare" => {
                ex.compare = match value {
                    "json" => Compare::Json,
                    "text" => Compare::Text,
                    "python-rows" => Compare::PythonRows,
                    other => panic!("{name}: unknown compare {other}"),
                }
            }
            "vary" => ex.vary.push(value.to_string()),
            other => panic!("{name}: unknown key {other}"),
        }
    }
    if has_form {
        ex.request_headers.push((
            "Content-Type".into(),
            "application/x-www-form-urlencoded".into(),
        ));
        ex.request_body = Some(form.finish().into_bytes());
    }
    assert!(
        !ex.method.is_empty() && ex.status != 0,
        "{name}: request and status are required"
    );
    ex
}

struct Answer {
    status: u16,
    /// Lower-case names.
    headers: HashMap<String, String>,
    body: String,
}

/// Sends the fixture's request to `base` (`http://127.0.0.1:PORT`).
fn send(base: &str, ex: &Exchange, timeout: Duration) -> Answer {
    let agent = ureq::AgentBuilder::new().timeout(timeout).build();
    let mut req = agent.request(&ex.method, &format!("{base}{}", ex.target));
    for (k, v) in &ex.request_headers {
        req = req.set(k, v);
    }
    let res = match &ex.request_body {
        Some(b) => req.send_bytes(b),
        None => req.call(),
    };
    let resp = match res {
        Ok(r) => r,
        Err(ureq::Error::Status(_, r)) => r,
        Err(e) => panic!("{}: {} {}: {e}", ex.name, ex.method, ex.target),
    };
    let status = resp.status();
    let headers = resp
        .headers_names()
        .into_iter()
        .map(|n| {
            let v = resp.header(&n).unwrap_or("").to_string();
            (n.to_ascii_lowercase(), v)
        })
        .collect();
    Answer {
        status,
        headers,
        body: resp.into_string().unwrap_or_default(),
    }
}

/// Run-specific parts → placeholders (applied to the recording and the answer alike).
fn placeholders(s: &str) -> String {
    let rules = [
        (
            r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}",
            "<uuid>",
        ),
        // GreptimeDB region ids: `4398046511104(1024, 0)`.
        (r"\b\d+\(\d+, \d+\)", "<region>"),
        (
            r"\b\d{4}-\d{2}-\d{2}[T ]\d{2}:\d{2}:\d{2}(\.\d+)?(Z|[+-]\d{2}:?\d{2})?",
            "<time>",
        ),
        (
            r"\b[A-Z][a-z]{2}, \d{2} [A-Z][a-z]{2} \d{4} \d{2}:\d{2}:\d{2} GMT",
            "<http-date>",
        ),
        (r"\b(127\.0\.0\.1|localhost|0\.0\.0\.0):\d+", "$1:<port>"),
        (r"(/srv/bench|/tmp|/work)/\S*", "<path>"),
        (r"\b\d+(\.\d+)?(ns|us|µs|ms|s)\b", "<duration>"),
        // InfluxDB 3's `/ping` revision: the build's 7-character git hash.
        (r"^[0-9a-f]{7}$", "<short-revision>"),
    ];
    let mut out = s.to_string();
    for (re, to) in rules {
        out = Regex::new(re).unwrap().replace_all(&out, to).into_owned();
    }
    out
}

/// A path pattern of `vary:` (`a.*.b`; `*` is any one key or index) matches `path`.
fn varies(path: &str, vary: &[String]) -> bool {
    let p: Vec<&str> = path.split('.').collect();
    vary.iter().any(|v| {
        let q: Vec<&str> = v.split('.').collect();
        q.len() == p.len() && q.iter().zip(&p).all(|(a, b)| *a == "*" || a == b)
    })
}

fn kind(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "bool",
        Value::Number(n) if n.is_i64() || n.is_u64() => "integer",
        Value::Number(_) => "float",
        Value::String(_) => "string",
        Value::Array(_) => "array",
        Value::Object(_) => "object",
    }
}

/// Differences between the recorded JSON and the answer's: same keys, same array lengths,
/// same value kinds everywhere; same values where the path does not vary (strings after
/// placeholders).
fn json_diff(path: &str, rec: &Value, got: &Value, vary: &[String], out: &mut Vec<String>) {
    let at = if path.is_empty() { "(top)" } else { path };
    let child = |k: &str| {
        if path.is_empty() {
            k.to_string()
        } else {
            format!("{path}.{k}")
        }
    };
    match (rec, got) {
        (Value::Object(a), Value::Object(b)) => {
            for k in a.keys().filter(|k| !b.contains_key(*k)) {
                out.push(format!("{at}: key {k:?} missing (recorded {})", a[k]));
            }
            for k in b.keys().filter(|k| !a.contains_key(*k)) {
                out.push(format!("{at}: key {k:?} not in the recording ({})", b[k]));
            }
            for (k, v) in a {
                if let Some(w) = b.get(k) {
                    json_diff(&child(k), v, w, vary, out);
                }
            }
        }
        (Value::Array(a), Value::Array(b)) => {
            if a.len() != b.len() {
                out.push(format!(
                    "{at}: {} elements, recorded {} ({got} vs {rec})",
                    b.len(),
                    a.len()
                ));
            }
            for (i, (v, w)) in a.iter().zip(b).enumerate() {
                json_diff(&child(&i.to_string()), v, w, vary, out);
            }
        }
        _ if kind(rec) != kind(got) => out.push(format!(
            "{at}: {} {got}, recorded {} {rec}",
            kind(got),
            kind(rec)
        )),
        (Value::String(a), Value::String(b))
            if !varies(path, vary) && placeholders(a) != placeholders(b) =>
        {
            out.push(format!("{at}: {b:?}, recorded {a:?}"));
        }
        (Value::String(_), Value::String(_)) => {}
        _ if !varies(path, vary) && rec != got => out.push(format!("{at}: {got}, recorded {rec}")),
        _ => {}
    }
}

/// `['a', 'b']` / `[[1, 'x']]` (Python's repr of plain lists, ints and quote-free strings).
fn python_list(s: &str) -> Value {
    serde_json::from_str(&s.replace('\'', "\"")).unwrap_or_else(|e| panic!("{s}: {e}"))
}

/// Response headers that belong to the transport, not to the answer: hyper and tiny_http
/// frame and date responses in their own ways, and no client of these servers reads them.
const FRAMING: &[&str] = &["content-length", "transfer-encoding", "date", "connection"];

/// Everything in which the answer differs from the recording, one line each.
fn differences(ex: &Exchange, got: &Answer) -> Vec<String> {
    let mut d = Vec::new();
    if got.status != ex.status {
        d.push(format!("status {}, recorded {}", got.status, ex.status));
    }
    let ct = got.headers.get("content-type");
    match &ex.content_type {
        ContentType::NotRecorded => {}
        ContentType::Absent => {
            if let Some(c) = ct {
                d.push(format!("content-type {c:?}, recorded none"));
            }
        }
        ContentType::Is(want) => {
            if ct != Some(want) {
                d.push(format!("content-type {ct:?}, recorded {want:?}"));
            }
        }
    }
    for (k, v) in &ex.headers {
        let k = k.to_ascii_lowercase();
        if FRAMING.contains(&k.as_str()) {
            continue;
        }
        match got.headers.get(&k) {
            None => d.push(format!("header {k} missing (recorded {v:?})")),
            Some(g) if placeholders(g) != placeholders(v) => {
                d.push(format!("header {k}: {g:?}, recorded {v:?}"))
            }
            Some(_) => {}
        }
    }
    match ex.compare {
        Compare::Text => {
            if placeholders(&got.body) != placeholders(&ex.body) {
                d.push(format!("body {:?}, recorded {:?}", got.body, ex.body));
            }
        }
        Compare::Json => {
            let rec: Value = serde_json::from_str(&ex.body)
                .unwrap_or_else(|e| panic!("{}: recorded body is not JSON: {e}", ex.name));
            match serde_json::from_str::<Value>(&got.body) {
                Ok(v) => json_diff("", &rec, &v, &ex.vary, &mut d),
                Err(e) => d.push(format!("body is not JSON ({e}): {:?}", got.body)),
            }
        }
        Compare::PythonRows => {
            let mut lines = ex.body.lines();
            let names = python_list(lines.next().expect("names line"));
            let rows = python_list(lines.next().expect("rows line"));
            let v: Value = serde_json::from_str(&got.body).unwrap_or(Value::Null);
            let records = &v["output"][0]["records"];
            let got_names: Vec<Value> = records["schema"]["column_schemas"]
                .as_array()
                .map(|c| c.iter().map(|c| c["name"].clone()).collect())
                .unwrap_or_default();
            if Value::Array(got_names.clone()) != names {
                d.push(format!(
                    "columns {}, recorded {names}",
                    Value::Array(got_names)
                ));
            }
            let kinds = |rows: &Value| -> Vec<Vec<&'static str>> {
                rows.as_array()
                    .map(|r| {
                        r.iter()
                            .map(|r| r.as_array().into_iter().flatten().map(kind).collect())
                            .collect()
                    })
                    .unwrap_or_default()
            };
            let (want, have) = (kinds(&rows), kinds(&records["rows"]));
            if want != have {
                d.push(format!(
                    "row value kinds {have:?}, recorded {want:?} ({})",
                    records["rows"]
                ));
            }
        }
    }
    d.into_iter().map(|l| format!("{}: {l}", ex.name)).collect()
}

/// Replays one fixture against `base` and returns its differences.
fn replay(base: &str, server: &str, name: &str) -> Vec<String> {
    let ex = load(server, name);
    let got = send(base, &ex, Duration::from_secs(30));
    differences(&ex, &got)
}

fn assert_conforms(diffs: Vec<String>) {
    assert!(
        diffs.is_empty(),
        "the emulator answers differently from the real server:\n{}",
        diffs.join("\n")
    );
}

/// The emulated GreptimeDB v1.0.2 on a fresh data home under `dir`, ready.
fn gt_v102(dir: &Path) -> gt::Server {
    let mut s = gt::start(
        dir,
        gt::Opts {
            version: "1.0.2",
            ..Default::default()
        },
    );
    s.ready();
    s
}

fn gt_base(s: &gt::Server) -> String {
    s.url("")
}

#[test]
fn every_fixture_is_replayed_and_readable() {
    let mut listed: Vec<String> = GT_FRESH
        .iter()
        .chain(GT_LOADED)
        .chain([&GT_SIGTERM])
        .chain(GT_IOT)
        .map(|n| format!("greptimedb/{n}"))
        .chain(
            IX_FILE_LIMIT
                .iter()
                .chain(IX_FRESH)
                .map(|n| format!("influxdb3/{n}")),
        )
        .collect();
    listed.sort();
    let mut on_disk = Vec::new();
    for server in ["greptimedb", "influxdb3"] {
        for e in std::fs::read_dir(fixtures().join(server)).unwrap() {
            let name = e.unwrap().file_name().to_string_lossy().into_owned();
            load(server, &name);
            on_disk.push(format!("{server}/{name}"));
        }
    }
    on_disk.sort();
    assert_eq!(
        listed, on_disk,
        "a fixture no test replays, or a listed one missing"
    );
}

#[test]
fn the_comparison_sees_what_matters_and_ignores_what_is_run_specific() {
    let rec = serde_json::json!({"output":[{"records":{"rows":[[86400]]}}],"execution_time_ms":3,"error":"Region 4402341478400(1025, 0) is stopped"});
    let vary = vec!["execution_time_ms".to_string()];
    let mut d = Vec::new();
    let same = serde_json::json!({"output":[{"records":{"rows":[[86400]]}}],"execution_time_ms":90,"error":"Region 4398046511104(1024, 0) is stopped"});
    json_diff("", &rec, &same, &vary, &mut d);
    assert!(d.is_empty(), "{d:?}");
    for (changed, why) in [
        (
            serde_json::json!({"output":[{"records":{"rows":[[86401]]}}],"execution_time_ms":3,"error":"Region 1(1, 0) is stopped"}),
            "output.0.records.rows.0.0",
        ),
        (
            serde_json::json!({"output":[{"records":{"rows":[[86400]]}}],"execution_time_ms":3.5,"error":"Region 1(1, 0) is stopped"}),
            "execution_time_ms: float",
        ),
        (
            serde_json::json!({"output":[{"records":{"rows":[[86400]]}}],"execution_time_ms":3,"error":"Region 1(1, 0) was stopped"}),
            "error",
        ),
        (
            serde_json::json!({"output":[{"records":{"rows":[[86400], [1]]}}],"execution_time_ms":3,"error":"Region 1(1, 0) is stopped"}),
            "2 elements, recorded 1",
        ),
        (
            serde_json::json!({"output":[{"records":{"rows":[[86400]]}}],"execution_time_ms":3}),
            "key \"error\" missing",
        ),
    ] {
        let mut d = Vec::new();
        json_diff("", &rec, &changed, &vary, &mut d);
        assert!(d.iter().any(|l| l.contains(why)), "{why}: {d:?}");
    }
    assert_eq!(
        placeholders("at 127.0.0.1:25020 took 0.95s, id 01a23b1a-3aa4-7f22-9ef6-faafc36624f4"),
        "at 127.0.0.1:<port> took <duration>, id <uuid>"
    );
    assert_eq!(placeholders("ff6872a"), placeholders("0123abc"));
}

/// GreptimeDB v1.0.2 from a fresh data home through a load, a flush and the compaction
/// variants (greptimedb-real/server/sql-shapes.txt, flush.resp, compact-*.resp,
/// scale/direct.txt, greptimedb-real-2/region-statistics-*.txt).
#[test]
fn greptimedb_answers_as_the_real_server_recorded() {
    let tmp = tempfile::tempdir().unwrap();
    let s = gt_v102(tmp.path());
    let base = gt_base(&s);
    let mut diffs = Vec::new();
    for name in GT_FRESH {
        diffs.extend(replay(&base, "greptimedb", name));
    }
    // The load: 2 hosts, 6 h at 10 s in `benchmark` (the recordings had the TSBS cpu table).
    let (code, body) = s.write("benchmark", &gt::cpu_lines(2, 2160, 1_686_441_600));
    assert_eq!(code, 204, "{body}");
    for name in GT_LOADED {
        diffs.extend(replay(&base, "greptimedb", name));
    }
    assert_conforms(diffs);
    s.stop();
}

/// The fork's iot queries (InfluxQL text on `/v1/sql`) over a few iot lines: the planner's
/// refusals of `ORDER BY "time"` (no such column; the valid fields in the real order) and of
/// a column outside `GROUP BY` (avg-load), and the one type that runs (issue 22).
#[test]
fn greptimedb_answers_the_forks_iot_queries_as_recorded() {
    let tmp = tempfile::tempdir().unwrap();
    let s = gt_v102(tmp.path());
    s.ok_sql(None, "CREATE DATABASE iot");
    let lines = std::fs::read_to_string(fixtures().join("greptimedb-iot-lines.lp")).unwrap();
    let (code, body) = s.write("iot", &lines);
    assert_eq!(code, 204, "{body}");
    let base = gt_base(&s);
    let mut diffs = Vec::new();
    for name in GT_IOT {
        diffs.extend(replay(&base, "greptimedb", name));
    }
    assert_conforms(diffs);
    s.stop();
}

/// The answer of an SWCS compaction during which the server gets SIGTERM
/// (greptimedb-real/server/compact-during-sigterm.resp): the merge finishes, the manifest
/// update fails, the waiting statement gets 500.
#[test]
fn greptimedb_answers_a_compaction_stopped_by_sigterm_as_recorded() {
    let tmp = tempfile::tempdir().unwrap();
    let mut s = gt::start(
        tmp.path(),
        gt::Opts {
            version: "1.0.2",
            knobs: Some(serde_json::json!({"compaction_ms_per_mib": 6000.0})),
            ..Default::default()
        },
    );
    s.ready();
    gt::flushed_files(&s, 2);
    let ex = load("greptimedb", GT_SIGTERM);
    let base = gt_base(&s);
    let client = std::thread::spawn(move || {
        let got = send(&base, &ex, Duration::from_secs(60));
        differences(&ex, &got)
    });
    let deadline = Instant::now() + Duration::from_secs(30);
    while !s.logs().contains("is 7200 seconds") {
        assert!(
            Instant::now() < deadline,
            "no compaction started: {}",
            s.logs()
        );
        std::thread::sleep(Duration::from_millis(10));
    }
    s.signal(Signal::SIGTERM);
    let st = s
        .wait_exit(Duration::from_secs(60))
        .expect("exits once the compaction is drained");
    assert_eq!(st.code(), Some(0), "{}", s.logs());
    assert_conforms(client.join().unwrap());
}

fn ix_opts<'a>(knobs: serde_json::Value) -> ix::Opts<'a> {
    let mut o = ix::Opts::core().knobs(knobs);
    o.version = "3.10.1";
    o
}

/// `hosts` hosts every 10 s over `[start_s, start_s + secs)`, nanosecond timestamps.
fn influx_lines(hosts: usize, start_s: i64, secs: i64) -> String {
    let mut s = String::new();
    for t in (start_s..start_s + secs).step_by(10) {
        for h in 0..hosts {
            s.push_str(&format!(
                "cpu,hostname=host_{h},region=eu-west-1 usage_user={}i,usage_system=2.5 {}\n",
                t % 100,
                t * 1_000_000_000
            ));
        }
    }
    s
}

/// InfluxDB 3 Core 3.10.1 with more Parquet files than its query file limit (20), as the
/// external server of influxdb3-real/11-ext-count-whole.txt and 14-ext-ping.txt.
#[test]
fn influxdb3_answers_as_the_real_server_recorded_over_the_file_limit() {
    let tmp = tempfile::tempdir().unwrap();
    let data = tmp.path().join("data");
    let o = ix_opts(serde_json::json!({
        "wal_flush_interval_ms": 20,
        "snapshot_after_wal_files": 1,
        "query_file_limit": 20,
    }));
    let mut e = ix::Emu::start(
        tmp.path(),
        &o,
        ix::serve_args(
            &data,
            "127.0.0.1:0",
            &["--without-auth", "--gen1-duration=1m"],
        ),
    );
    // The smoke data's first 30 minutes (10 hosts every 10 s), one write per minute: with a
    // snapshot after every WAL flush and 1-minute gen1 windows, one Parquet file each.
    for m in 0..30 {
        let r = ix::write(
            &e,
            "benchmark",
            &influx_lines(10, 1_686_441_600 + m * 60, 60),
            "",
        );
        assert_eq!(r.status, 204, "{}", r.body);
    }
    assert!(ix::with_ext(&data, ".parquet") > 20, "{}", e.output());
    let base = e.url("");
    let mut diffs = Vec::new();
    for name in IX_FILE_LIMIT {
        diffs.extend(replay(&base, "influxdb3", name));
    }
    assert_conforms(diffs);
    assert_eq!(e.stop(), 0);
}

/// InfluxDB 3 Core 3.10.1 on a fresh data directory: the durable writes of
/// influxdb3-real/70-strace-durable-write-no-fsync.txt, the whole-table count of
/// 31-ext5-count-whole.txt.
#[test]
fn influxdb3_answers_as_the_real_server_recorded_on_a_fresh_server() {
    let tmp = tempfile::tempdir().unwrap();
    // A short WAL flush interval only makes the durable writes answer sooner.
    let o = ix_opts(serde_json::json!({"wal_flush_interval_ms": 20}));
    let mut e = ix::Emu::start(
        tmp.path(),
        &o,
        ix::serve_args(&tmp.path().join("data"), "127.0.0.1:0", &["--without-auth"]),
    );
    let base = e.url("");
    let mut diffs = Vec::new();
    // The recorded curl ran three times.
    for _ in 0..3 {
        diffs.extend(replay(&base, "influxdb3", IX_FRESH[0]));
    }
    let r = ix::write(&e, "benchmark", &influx_lines(10, 1_686_441_600, 600), "");
    assert_eq!(r.status, 204, "{}", r.body);
    for name in &IX_FRESH[1..] {
        diffs.extend(replay(&base, "influxdb3", name));
    }
    assert_conforms(diffs);
    assert_eq!(e.stop(), 0);
}
