//! The TSBS loader and runner stand-ins, run as processes (`testbed emulate <tool> ...`)
//! against scripted servers that record every request: flags, request shapes, batches,
//! database modes, the exact output lines and results files, failures and knobs.

use std::collections::BTreeSet;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use regex::Regex;
use serde_json::{json, Value};
use testbed::queryfile::{self, Query};
use testbed::stubserver::{StubRequest, StubResponse, StubServer};

// ---------------------------------------------------------------- harness

struct Run {
    out: Output,
}

impl Run {
    fn code(&self) -> i32 {
        self.out.status.code().unwrap_or(-1)
    }
    fn stdout(&self) -> String {
        String::from_utf8_lossy(&self.out.stdout).into_owned()
    }
    fn stderr(&self) -> String {
        String::from_utf8_lossy(&self.out.stderr).into_owned()
    }
    fn expect(&self, code: i32) -> &Run {
        assert_eq!(
            self.code(),
            code,
            "stdout:\n{}\nstderr:\n{}",
            self.stdout(),
            self.stderr()
        );
        self
    }
}

/// Runs `testbed emulate <tool> args...` in `cwd`, bounded to 30 s.
fn emulate(
    tool: &str,
    args: &[String],
    cwd: &Path,
    stdin: Option<&[u8]>,
    knobs: Option<&Path>,
) -> Run {
    let mut c = Command::new(env!("CARGO_BIN_EXE_testbed"));
    c.arg("emulate")
        .arg(tool)
        .args(args)
        .current_dir(cwd)
        .env_remove("TESTBED_KNOBS")
        .stdin(if stdin.is_some() {
            Stdio::piped()
        } else {
            Stdio::null()
        })
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    if let Some(k) = knobs {
        c.env("TESTBED_KNOBS", k);
    }
    let mut child = c.spawn().expect("spawn testbed");
    if let Some(data) = stdin {
        let mut w = child.stdin.take().unwrap();
        let data = data.to_vec();
        std::thread::spawn(move || {
            let _ = w.write_all(&data);
        });
    }
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        if child.try_wait().unwrap().is_some() {
            break;
        }
        if Instant::now() > deadline {
            let _ = child.kill();
            panic!("{tool} did not finish within 30 s");
        }
        std::thread::sleep(Duration::from_millis(5));
    }
    Run {
        out: child.wait_with_output().unwrap(),
    }
}

fn args(a: &[&str]) -> Vec<String> {
    a.iter().map(|s| s.to_string()).collect()
}

/// `n` cpu-only rows, 10 fields each, in the generator's shape.
fn data(n: usize) -> String {
    (0..n)
        .map(|i| {
            format!(
                "cpu,hostname=host_{},region=eu-central-1,datacenter=eu-central-1b,rack=21,os=Ubuntu15.10,arch=x86,team=SF,service=6,service_version=0,service_environment=test usage_user=58i,usage_system=2i,usage_idle=24i,usage_nice=61i,usage_iowait=22i,usage_irq=63i,usage_softirq=6i,usage_steal=44i,usage_guest=80i,usage_guest_nice=38i {}\n",
                i % 10,
                1686441600000000000u64 + (i as u64 / 10) * 10_000_000_000
            )
        })
        .collect()
}

fn lines(body: &[u8]) -> usize {
    String::from_utf8_lossy(body).lines().count()
}

// ---------------------------------------------------------------- fake servers

/// A GreptimeDB as far as the TSBS tools see it.
#[derive(Default)]
struct Greptime {
    dbs: Mutex<BTreeSet<String>>,
    rows: AtomicU64,
    /// Scripted answers for the next writes (then 204).
    write_script: Mutex<Vec<StubResponse>>,
    /// Queries whose SQL contains this answer 500.
    fail_sql: Mutex<Option<String>>,
    /// Explain answers carry this error payload.
    explain_error: Mutex<bool>,
}

fn greptime(state: Arc<Greptime>) -> StubServer {
    StubServer::start(move |r: &StubRequest| {
        match (r.method.as_str(), r.path()) {
            ("POST", "/v1/sql") if r.query().is_none() => {
                let sql = r.form("sql").unwrap_or_default();
                let mut dbs = state.dbs.lock().unwrap();
                if sql == "SHOW DATABASES" {
                    let mut rows = vec![json!(["greptime_private"]), json!(["information_schema"]), json!(["public"])];
                    rows.extend(dbs.iter().map(|d| json!([d])));
                    StubResponse::json(200, &json!({"code":0,"output":[{"records":{"schema":{"column_schemas":[{"name":"Database","data_type":"String"}]},"rows":rows}}],"execution_time_ms":0}))
                } else if let Some(db) = sql.strip_prefix("CREATE DATABASE ") {
                    if !dbs.insert(db.to_string()) {
                        return StubResponse::json(400, &json!({"code":1004,"error":format!("Schema {db} already exists")}));
                    }
                    StubResponse::json(200, &json!({"code":0,"output":[{"affectedrows":1}],"execution_time_ms":1}))
                } else if let Some(db) = sql.strip_prefix("DROP DATABASE ") {
                    dbs.remove(db);
                    StubResponse::json(200, &json!({"code":0,"output":[{"affectedrows":0}],"execution_time_ms":1}))
                } else {
                    StubResponse::json(400, &json!({"code":1001,"error":"unexpected"}))
                }
            }
            ("POST", "/v1/sql") => {
                let sql = r.param("sql").unwrap_or_default();
                if let Some(f) = state.fail_sql.lock().unwrap().as_deref() {
                    if sql.contains(f) {
                        return StubResponse::json(500, &json!({"code":1003,"error":"boom"}));
                    }
                }
                if sql.starts_with("EXPLAIN ANALYZE VERBOSE ") && *state.explain_error.lock().unwrap() {
                    return StubResponse::json(200, &json!({"code":3000,"error":"plan failed"}));
                }
                StubResponse::json(200, &json!({"code":0,"output":[{"records":{"rows":[["plan < 1 & ok"]]}}],"execution_time_ms":1}))
            }
            ("POST", "/v1/influxdb/write") => {
                let scripted = {
                    let mut s = state.write_script.lock().unwrap();
                    (!s.is_empty()).then(|| s.remove(0))
                };
                if let Some(resp) = scripted {
                    return resp;
                }
                state.rows.fetch_add(lines(&r.body) as u64, Ordering::SeqCst);
                StubResponse::new(204, "")
            }
            _ => StubResponse::new(404, "not found"),
        }
    })
    .unwrap()
}

/// An InfluxDB 3 as far as the TSBS tools see it.
#[derive(Default)]
struct Influx3 {
    dbs: Mutex<BTreeSet<String>>,
    rows: AtomicU64,
    write_script: Mutex<Vec<StubResponse>>,
}

fn influx3(state: Arc<Influx3>) -> StubServer {
    StubServer::start(move |r: &StubRequest| {
        let mut dbs = state.dbs.lock().unwrap();
        match (r.method.as_str(), r.path()) {
            ("GET", "/api/v3/configure/database") => {
                let mut list = vec![json!({"iox::database": "_internal"})];
                list.extend(dbs.iter().map(|d| json!({"iox::database": d})));
                StubResponse::json(200, &Value::Array(list))
            }
            ("POST", "/api/v3/configure/database") => {
                let v: Value = serde_json::from_slice(&r.body).unwrap_or(Value::Null);
                let db = v["db"].as_str().unwrap_or_default().to_string();
                if !dbs.insert(db) {
                    return StubResponse::new(
                        409,
                        "attempted to create a resource that already exists",
                    );
                }
                StubResponse::new(200, "")
            }
            ("DELETE", "/api/v3/configure/database") => {
                if dbs.remove(&r.param("db").unwrap_or_default()) {
                    StubResponse::new(200, "")
                } else {
                    StubResponse::new(404, "not found")
                }
            }
            ("POST", "/api/v3/write_lp") => {
                let scripted = {
                    let mut s = state.write_script.lock().unwrap();
                    (!s.is_empty()).then(|| s.remove(0))
                };
                if let Some(resp) = scripted {
                    return resp;
                }
                dbs.insert(r.param("db").unwrap_or_default());
                state
                    .rows
                    .fetch_add(lines(&r.body) as u64, Ordering::SeqCst);
                StubResponse::new(204, "")
            }
            ("POST", "/api/v3/query_sql") => {
                let v: Value = serde_json::from_slice(&r.body).unwrap_or(Value::Null);
                let db = v["db"].as_str().unwrap_or_default();
                if !dbs.contains(db) {
                    return StubResponse::json(
                        404,
                        &json!({"error": format!("query error: database not found: {db}")}),
                    );
                }
                StubResponse::json(200, &json!([{"hostname":"host_0","max_usage_user":97}]))
            }
            _ => StubResponse::new(404, "Not found"),
        }
    })
    .unwrap()
}

fn writes(s: &StubServer) -> Vec<StubRequest> {
    s.requests()
        .into_iter()
        .filter(|r| r.path().contains("write"))
        .collect()
}

fn ddl(s: &StubServer) -> Vec<String> {
    s.requests()
        .iter()
        .filter(|r| r.path() == "/v1/sql" && r.query().is_none())
        .map(|r| r.form("sql").unwrap_or_default())
        .collect()
}

fn load_args(url: &str, file: Option<&Path>, results: &Path, extra: &[&str]) -> Vec<String> {
    let mut a = vec![format!("--urls={url}")];
    if let Some(f) = file {
        a.push(format!("--file={}", f.display()));
    }
    a.extend(args(&[
        "--db-name=benchmark",
        "--batch-size=10",
        "--gzip=false",
        "--workers=2",
        "--reporting-period=10s",
    ]));
    a.push(format!("--results-file={}", results.display()));
    a.extend(args(extra));
    a
}

// ---------------------------------------------------------------- loaders

#[test]
fn greptime_load_create_mode_batches_output_and_results() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("data");
    std::fs::write(&file, data(25)).unwrap();
    let results = dir.path().join("load-run-001.json");
    let state = Arc::new(Greptime::default());
    let srv = greptime(state.clone());
    let run = emulate(
        "tsbs_load_greptime",
        &load_args(
            &srv.url(),
            Some(&file),
            &results,
            &["--do-create-db=true", "--do-abort-on-exist=true"],
        ),
        dir.path(),
        None,
        None,
    );
    run.expect(0);
    assert_eq!(ddl(&srv), ["SHOW DATABASES", "CREATE DATABASE benchmark"]);
    let ddl_req = &srv.requests()[0];
    assert_eq!(
        ddl_req.header("content-type"),
        Some("application/x-www-form-urlencoded")
    );
    assert_eq!(ddl_req.body_text(), "sql=SHOW+DATABASES");
    let w = writes(&srv);
    assert_eq!(w.len(), 3, "25 rows in batches of 10");
    let mut sizes: Vec<usize> = w.iter().map(|r| lines(&r.body)).collect();
    sizes.sort();
    assert_eq!(sizes, [5, 10, 10]);
    for r in &w {
        assert_eq!(r.method, "POST");
        assert_eq!(r.url, "/v1/influxdb/write?consistency=all&db=benchmark");
        assert_eq!(r.header("content-type"), Some("text/plain"));
        assert_eq!(r.header("user-agent"), Some("tsbs_load_influx"));
        assert!(!r.gzip);
        assert!(
            r.body_text().ends_with("38i 1686441600000000000\n")
                || r.body_text().ends_with("0000000\n")
        );
    }
    assert_eq!(state.rows.load(Ordering::SeqCst), 25);

    let out = run.stdout();
    let l: Vec<&str> = out.lines().collect();
    assert_eq!(
        l[0],
        "time,per. metric/s,metric total,overall metric/s,per. row/s,row total,overall row/s"
    );
    let mut workers: Vec<&str> = l
        .iter()
        .copied()
        .filter(|x| x.starts_with("[worker"))
        .collect();
    workers.sort();
    assert_eq!(
        workers,
        [
            "[worker 0] backoffs took a total of 0.000000sec of runtime",
            "[worker 1] backoffs took a total of 0.000000sec of runtime"
        ]
    );
    let s = l.iter().position(|x| *x == "Summary:").expect("Summary:");
    assert_eq!(l[s - 1], "");
    assert!(Regex::new(r"^loaded 250 metrics in \d+\.\d{3}sec with 2 workers \(mean rate \d+\.\d{2} metrics/sec\)$").unwrap().is_match(l[s + 1]), "{}", l[s + 1]);
    assert!(
        Regex::new(
            r"^loaded 25 rows in \d+\.\d{3}sec with 2 workers \(mean rate \d+\.\d{2} rows/sec\)$"
        )
        .unwrap()
        .is_match(l[s + 2]),
        "{}",
        l[s + 2]
    );
    assert_eq!(
        l[s + 3],
        format!("Saving results json file to {}", results.display())
    );
    assert_eq!(l.len(), s + 4);

    let text = std::fs::read_to_string(&results).unwrap();
    assert!(text.starts_with("{\n \"ResultFormatVersion\": \"0.2\",\n \"RunnerConfig\": {\n  \"db-name\": \"benchmark\",\n  \"batch-size\": 10,\n  \"workers\": 2,"), "{text}");
    let v: Value = serde_json::from_str(&text).unwrap();
    assert_eq!(v["Totals"]["metricCount"], 250);
    assert_eq!(v["Totals"]["rowCount"], 25);
    assert_eq!(v["RunnerConfig"]["reporting-period"], 10_000_000_000u64);
    assert_eq!(v["RunnerConfig"]["do-abort-on-exist"], true);
    assert_eq!(v["RunnerConfig"]["file"], file.display().to_string());
    // The real loader's results file (fixtures/tsbs-real/load-001.json): the same keys in the
    // same order, and no flow-control change (finding C4).
    let real: Value = serde_json::from_str(include_str!(
        "../../../tests/fixtures/tsbs-real/load-001.json"
    ))
    .unwrap();
    let keys = |v: &Value| -> Vec<String> { v.as_object().unwrap().keys().cloned().collect() };
    let key_order = |t: &str, name: &str| -> Vec<String> {
        let re = Regex::new(&format!(r#"(?s)"{name}": \{{(.*?)\}}"#)).unwrap();
        let body = re.captures(t).unwrap()[1].to_string();
        Regex::new(r#""([^"]+)":"#)
            .unwrap()
            .captures_iter(&body)
            .map(|c| c[1].to_string())
            .collect()
    };
    assert_eq!(keys(&v), keys(&real));
    assert_eq!(
        key_order(&text, "RunnerConfig"),
        key_order(
            include_str!("../../../tests/fixtures/tsbs-real/load-001.json"),
            "RunnerConfig"
        )
    );
    assert_eq!(keys(&v["Totals"]), keys(&real["Totals"]));
    assert_eq!(v["RunnerConfig"]["no-flow-control"], false);
    assert_eq!(v["RunnerConfig"]["channel-capacity"], 0);
    let rate = v["Totals"]["metricRate"].as_f64().unwrap();
    let ms = v["DurationMillis"].as_u64().unwrap();
    assert!(rate > 0.0 && v["EndTime"].as_i64() >= v["StartTime"].as_i64());
    // the rate is computed from the measured duration (ms is truncated)
    assert!(250.0 / rate * 1000.0 >= ms as f64 && 250.0 / rate * 1000.0 < ms as f64 + 1.0);
}

#[test]
fn greptime_load_modes() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("data");
    std::fs::write(&file, data(3)).unwrap();
    let results = dir.path().join("r.json");
    let state = Arc::new(Greptime::default());
    state.dbs.lock().unwrap().insert("benchmark".into());
    let srv = greptime(state.clone());

    // create on an existing database: the abort panic, exit 2, nothing written
    let run = emulate(
        "tsbs_load_greptime",
        &load_args(
            &srv.url(),
            Some(&file),
            &results,
            &["--do-create-db=true", "--do-abort-on-exist=true"],
        ),
        dir.path(),
        None,
        None,
    );
    run.expect(2);
    assert!(
        run.stderr()
            .starts_with("panic: database \"benchmark\" exists: aborting.\n\ngoroutine "),
        "{}",
        run.stderr()
    );
    assert_eq!(ddl(&srv), ["SHOW DATABASES"]);
    assert!(writes(&srv).is_empty());
    assert!(!results.exists());

    // reuse: still lists databases, never drops or creates
    emulate(
        "tsbs_load_greptime",
        &load_args(&srv.url(), Some(&file), &results, &["--do-create-db=false"]),
        dir.path(),
        None,
        None,
    )
    .expect(0);
    assert_eq!(ddl(&srv), ["SHOW DATABASES", "SHOW DATABASES"]);
    assert_eq!(state.rows.load(Ordering::SeqCst), 3);

    // reset: drop then create
    emulate(
        "tsbs_load_greptime",
        &load_args(&srv.url(), Some(&file), &results, &["--do-create-db=true"]),
        dir.path(),
        None,
        None,
    )
    .expect(0);
    assert_eq!(
        ddl(&srv)[2..],
        [
            "SHOW DATABASES",
            "DROP DATABASE benchmark",
            "CREATE DATABASE benchmark"
        ]
    );

    // a failed create panics with the status line and body
    let fresh = Arc::new(Greptime::default());
    let srv2 = StubServer::start(|r: &StubRequest| {
        if r.form("sql").as_deref() == Some("SHOW DATABASES") {
            StubResponse::json(200, &json!({"code":0,"output":[{"records":{"rows":[]}}]}))
        } else {
            StubResponse::json(400, &json!({"code":1004,"error":"no"}))
        }
    })
    .unwrap();
    drop(fresh);
    let run = emulate(
        "tsbs_load_greptime",
        &load_args(&srv2.url(), Some(&file), &results, &[]),
        dir.path(),
        None,
        None,
    );
    run.expect(2);
    assert!(run.stderr().starts_with("panic: execute SQL \"CREATE DATABASE benchmark\" returned 400 Bad Request: {\"code\":1004,\"error\":\"no\"}"), "{}", run.stderr());
}

#[test]
fn loader_reads_stdin_and_gzips() {
    let dir = tempfile::tempdir().unwrap();
    let results = dir.path().join("r.json");
    let state = Arc::new(Greptime::default());
    let srv = greptime(state.clone());
    let mut a = load_args(&srv.url(), None, &results, &[]);
    a.retain(|x| x != "--gzip=false");
    let run = emulate(
        "tsbs_load_greptime",
        &a,
        dir.path(),
        Some(data(12).as_bytes()),
        None,
    );
    run.expect(0);
    let w = writes(&srv);
    assert_eq!(w.len(), 2);
    assert!(w
        .iter()
        .all(|r| r.gzip && r.header("content-encoding") == Some("gzip")));
    assert_eq!(state.rows.load(Ordering::SeqCst), 12);
    let v: Value = serde_json::from_str(&std::fs::read_to_string(&results).unwrap()).unwrap();
    assert_eq!(v["RunnerConfig"]["file"], "");
}

#[test]
fn loader_write_failures_and_backpressure() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("data");
    std::fs::write(&file, data(10)).unwrap();
    let results = dir.path().join("r.json");
    let state = Arc::new(Greptime::default());
    let srv = greptime(state.clone());
    // one back-pressure answer, then success
    state
        .write_script
        .lock()
        .unwrap()
        .push(StubResponse::json(500, &json!({"error":"request timeout"})));
    let mut a = load_args(&srv.url(), Some(&file), &results, &["--backoff=20ms"]);
    a.retain(|x| x != "--workers=2");
    let run = emulate("tsbs_load_greptime", &a, dir.path(), None, None);
    run.expect(0);
    let out = run.stdout();
    assert!(
        Regex::new(r"(?m)^\[worker 0\] backoff took 0\.\d\dsec$")
            .unwrap()
            .is_match(&out),
        "{out}"
    );
    assert!(
        Regex::new(r"(?m)^\[worker 0\] backoffs took a total of 0\.0[2-9]\d{4}sec of runtime$")
            .unwrap()
            .is_match(&out),
        "{out}"
    );
    assert_eq!(writes(&srv).len(), 2);

    // any other answer is fatal: log.Fatal shape, exit 1
    state
        .write_script
        .lock()
        .unwrap()
        .push(StubResponse::json(400, &json!({"error":"bad line"})));
    let run = emulate("tsbs_load_greptime", &a, dir.path(), None, None);
    run.expect(1);
    let err = run.stderr();
    assert!(
        Regex::new(&format!(
            r#"^\d{{4}}/\d\d/\d\d \d\d:\d\d:\d\d Error writing: \[DebugInfo: worker #0, dest url: {}\] Invalid write response \(status 400\): \{{"error":"bad line"\}}\n$"#,
            regex::escape(&srv.url())
        ))
        .unwrap()
        .is_match(&err),
        "{err}"
    );

    // a malformed line
    std::fs::write(&file, "cpu,host=a usage=1i\n").unwrap();
    let run = emulate("tsbs_load_greptime", &a, dir.path(), None, None);
    run.expect(1);
    assert!(
        run.stderr()
            .ends_with(" parse error: line does not have 3 tuples, has 2\n"),
        "{}",
        run.stderr()
    );

    // a missing data file (after the database was created, as the real loader does)
    let run = emulate(
        "tsbs_load_greptime",
        &load_args(&srv.url(), Some(&dir.path().join("nope")), &results, &[]),
        dir.path(),
        None,
        None,
    );
    run.expect(1);
    assert!(run.stderr().contains(&format!(
        "cannot open file for read {0}: open {0}: no such file or directory",
        dir.path().join("nope").display()
    )));
}

#[test]
fn influx3_loader_modes_tokens_and_retry() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("data");
    std::fs::write(&file, data(20)).unwrap();
    let results = dir.path().join("r.json");
    let s1 = Arc::new(Influx3::default());
    let s2 = Arc::new(Influx3::default());
    let (a, b) = (influx3(s1.clone()), influx3(s2.clone()));
    let urls = format!(" {}/ ,{},", a.url(), b.url());

    // issue 16 #4: a token on the command line (visible in ps) is refused by the stand-in
    let run = emulate(
        "tsbs_load_influx3",
        &load_args(
            &urls,
            Some(&file),
            &results,
            &["--auth-token=wtok", "--do-create-db=false"],
        ),
        dir.path(),
        None,
        None,
    );
    run.expect(2);
    assert!(
        run.stderr()
            .starts_with("testbed: --auth-token was given on the command line"),
        "{}",
        run.stderr()
    );
    assert!(a.requests().is_empty() && b.requests().is_empty());
    // reuse: no admin call at all; writes round-robin over the two URLs, with the auth token
    // read from config.json in the working directory (viper)
    std::fs::write(dir.path().join("config.json"), r#"{"auth-token": "wtok"}"#).unwrap();
    // Workers take batches from one shared channel (as the real loader does), so with two
    // batches one worker could take both; a pause after each batch lets the other take the
    // second, making "both URLs get writes" deterministic.
    let knobs = dir.path().join("knobs.json");
    std::fs::write(&knobs, r#"{"tsbs_load": {"batch_delay_ms": 300}}"#).unwrap();
    let run = emulate(
        "tsbs_load_influx3",
        &load_args(
            &urls,
            Some(&file),
            &results,
            &[
                "--no-sync=true",
                "--accept-partial=false",
                "--do-create-db=false",
            ],
        ),
        dir.path(),
        None,
        Some(&knobs),
    );
    run.expect(0);
    for s in [&a, &b] {
        let reqs = s.requests();
        assert!(!reqs.is_empty(), "both URLs get writes");
        for r in reqs {
            assert_eq!(r.url, "/api/v3/write_lp?accept_partial=false&db=benchmark&no_sync=true&precision=nanosecond");
            assert_eq!(r.header("authorization"), Some("Bearer wtok"));
            assert_eq!(r.header("user-agent"), Some("tsbs_load_influx3"));
        }
    }
    assert_eq!(
        s1.rows.load(Ordering::SeqCst) + s2.rows.load(Ordering::SeqCst),
        20
    );

    // reset with an admin token against the first URL: list, delete, create (viper keys are
    // case-insensitive)
    std::fs::write(
        dir.path().join("config.json"),
        r#"{"auth-token": "wtok", "Admin-Token": "atok", "unknown-key": 1}"#,
    )
    .unwrap();
    let before = a.requests().len();
    let run = emulate(
        "tsbs_load_influx3",
        &load_args(&a.url(), Some(&file), &results, &["--do-create-db=true"]),
        dir.path(),
        None,
        None,
    );
    run.expect(0);
    let admin: Vec<StubRequest> = a.requests()[before..]
        .iter()
        .filter(|r| r.path().contains("configure"))
        .cloned()
        .collect();
    assert_eq!(
        admin
            .iter()
            .map(|r| format!("{} {}", r.method, r.url))
            .collect::<Vec<_>>(),
        [
            "GET /api/v3/configure/database?format=json",
            "DELETE /api/v3/configure/database?db=benchmark&hard_delete_at=now",
            "POST /api/v3/configure/database"
        ]
    );
    assert!(admin
        .iter()
        .all(|r| r.header("authorization") == Some("Bearer atok")));
    assert_eq!(admin[2].body_text(), "{\"db\":\"benchmark\"}");
    assert_eq!(admin[2].header("content-type"), Some("application/json"));

    // create on an existing database aborts
    let run = emulate(
        "tsbs_load_influx3",
        &load_args(
            &a.url(),
            Some(&file),
            &results,
            &["--do-create-db=true", "--do-abort-on-exist=true"],
        ),
        dir.path(),
        None,
        None,
    );
    run.expect(2);
    assert!(run
        .stderr()
        .starts_with("panic: database \"benchmark\" exists: aborting."));

    // 429 is retried (Retry-After 0 → --backoff), 413 is fatal with InfluxDB 3's wording
    s1.write_script.lock().unwrap().push(
        StubResponse::new(429, "this service is overloaded, please try again later")
            .header("Retry-After", "0"),
    );
    let mut one = load_args(
        &a.url(),
        Some(&file),
        &results,
        &["--do-create-db=false", "--backoff=10ms"],
    );
    one.retain(|x| x != "--workers=2");
    let run = emulate("tsbs_load_influx3", &one, dir.path(), None, None);
    run.expect(0);
    assert!(run.stdout().contains("[worker 0] backoff took "));
    s1.write_script.lock().unwrap().push(StubResponse::new(
        413,
        "max request size (10485760 bytes) exceeded",
    ));
    let run = emulate("tsbs_load_influx3", &one, dir.path(), None, None);
    run.expect(1);
    assert!(run.stderr().contains("invalid InfluxDB 3 write response (status 413): max request size (10485760 bytes) exceeded"), "{}", run.stderr());

    // no usable URL
    let run = emulate(
        "tsbs_load_influx3",
        &args(&["--urls= , /"]),
        dir.path(),
        None,
        None,
    );
    run.expect(1);
    assert!(run.stderr().ends_with(" missing 'urls' flag\n"));
}

#[test]
fn loader_flags_are_strict() {
    let dir = tempfile::tempdir().unwrap();
    let run = emulate(
        "tsbs_load_greptime",
        &args(&["--bogus=1"]),
        dir.path(),
        None,
        None,
    );
    run.expect(2);
    let err = run.stderr();
    assert!(
        err.starts_with("unknown flag: --bogus\nUsage of tsbs_load_greptime:\n"),
        "{err}"
    );
    assert!(err.contains("      --batch-size uint "));
    assert!(err.contains("(default \"http://localhost:8086\")"));
    let run = emulate(
        "tsbs_load_influx3",
        &args(&["--workers=two"]),
        dir.path(),
        None,
        None,
    );
    run.expect(2);
    assert!(run.stderr().starts_with("invalid argument \"two\" for \"--workers\" flag: strconv.ParseUint: parsing \"two\": invalid syntax\n"));
    let run = emulate(
        "tsbs_load_influx3",
        &args(&["-workers=2"]),
        dir.path(),
        None,
        None,
    );
    run.expect(2);
    assert!(run
        .stderr()
        .starts_with("unknown shorthand flag: 'w' in -workers=2\n"));
    // --consistency is validated before any request
    let run = emulate(
        "tsbs_load_greptime",
        &args(&["--consistency=most", "--urls=http://127.0.0.1:1"]),
        dir.path(),
        None,
        None,
    );
    run.expect(1);
    assert!(run.stderr().ends_with(" invalid consistency settings\n"));
    // viper merges config.json under the flags: a bad value there fails like a bad flag, a
    // flag on the command line wins over the file, and a malformed file panics
    std::fs::write(dir.path().join("config.json"), r#"{"consistency": "most"}"#).unwrap();
    let run = emulate(
        "tsbs_load_greptime",
        &args(&["--urls=http://127.0.0.1:1"]),
        dir.path(),
        None,
        None,
    );
    run.expect(1);
    assert!(run.stderr().ends_with(" invalid consistency settings\n"));
    std::fs::write(dir.path().join("config.json"), "{not json").unwrap();
    let run = emulate(
        "tsbs_load_greptime",
        &args(&["--urls=http://127.0.0.1:1"]),
        dir.path(),
        None,
        None,
    );
    run.expect(2);
    assert!(run
        .stderr()
        .starts_with("panic: fatal error config file: While parsing config: "));
    std::fs::remove_file(dir.path().join("config.json")).unwrap();
    // a format the stand-in does not emulate is refused loudly
    std::fs::write(dir.path().join("config.yaml"), "workers: 9\n").unwrap();
    let run = emulate(
        "tsbs_load_greptime",
        &args(&["--urls=http://127.0.0.1:1"]),
        dir.path(),
        None,
        None,
    );
    run.expect(2);
    assert!(run.stderr().starts_with("panic: fatal error config file: "));
}

#[test]
fn loader_knobs() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("data");
    std::fs::write(&file, data(40)).unwrap();
    let results = dir.path().join("r.json");
    let knobs = dir.path().join("knobs.json");
    let state = Arc::new(Greptime::default());
    let srv = greptime(state.clone());
    let a = load_args(&srv.url(), Some(&file), &results, &["--do-create-db=false"]);

    std::fs::write(&knobs, r#"{"tsbs_load": {"fail_after_rows": 20}}"#).unwrap();
    let run = emulate("tsbs_load_greptime", &a, dir.path(), None, Some(&knobs));
    run.expect(1);
    assert!(run.stderr().contains("Error writing: [DebugInfo: worker #"));
    let written = state.rows.load(Ordering::SeqCst);
    assert!((20..40).contains(&written), "partial load: {written}");
    assert!(!run.stdout().contains("Summary:"));

    for (knob, check) in [
        ("v0.1", "\"ResultFormatVersion\": \"0.1\""),
        ("malformed", ""),
        ("skip", ""),
    ] {
        let _ = std::fs::remove_file(&results);
        std::fs::write(
            &knobs,
            json!({"tsbs_load_greptime": {"results": knob}}).to_string(),
        )
        .unwrap();
        let run = emulate("tsbs_load_greptime", &a, dir.path(), None, Some(&knobs));
        run.expect(0);
        assert!(run.stdout().contains("\nSummary:\nloaded 400 metrics in "));
        match knob {
            "skip" => assert!(!results.exists()),
            "malformed" => assert!(serde_json::from_str::<Value>(
                &std::fs::read_to_string(&results).unwrap()
            )
            .is_err()),
            _ => assert!(std::fs::read_to_string(&results).unwrap().contains(check)),
        }
    }
    // A knob file that is not JSON is a test bug: exit 2 before anything is loaded.
    std::fs::write(&knobs, "{\"tsbs_load\": ").unwrap();
    let before = state.rows.load(Ordering::SeqCst);
    let run = emulate("tsbs_load_greptime", &a, dir.path(), None, Some(&knobs));
    run.expect(2);
    assert!(run.stderr().contains("bad knob file"), "{}", run.stderr());
    assert_eq!(state.rows.load(Ordering::SeqCst), before);
}

// ---------------------------------------------------------------- runners

fn query_file(dir: &Path, name: &str, queries: &[Query]) -> PathBuf {
    let p = dir.join(name);
    let mut f = std::fs::File::create(&p).unwrap();
    queryfile::write(&mut f, queries).unwrap();
    p
}

fn lastpoint(n: usize) -> Vec<Query> {
    (0..n)
        .map(|i| {
            Query::greptime(
                "Influx last row per host",
                "Influx last row per host: cpu",
                &format!("SELECT last_value(usage_user order by greptime_timestamp) FROM cpu WHERE usage_user > {i}"),
                0,
                0,
            )
        })
        .collect()
}

#[test]
fn greptime_runner_requests_report_and_results() {
    let dir = tempfile::tempdir().unwrap();
    let qf = query_file(dir.path(), "lastpoint.dat", &lastpoint(5));
    let results = dir.path().join("query-lastpoint-run-001.json");
    let state = Arc::new(Greptime::default());
    let srv = greptime(state);
    let run = emulate(
        "tsbs_run_queries_influx",
        &[
            format!("--file={}", qf.display()),
            "--db-name=benchmark".into(),
            format!("--urls={}", srv.url()),
            "--workers=2".into(),
            "--print-interval=0".into(),
            format!("--results-file={}", results.display()),
        ],
        dir.path(),
        None,
        None,
    );
    run.expect(0);
    let reqs = srv.requests();
    assert_eq!(reqs.len(), 5);
    for r in &reqs {
        assert_eq!(r.method, "POST");
        assert!(r.url.starts_with("/v1/sql?sql=SELECT+last_value%28usage_user+order+by+greptime_timestamp%29+FROM+cpu+WHERE+usage_user+%3E+"), "{}", r.url);
        assert!(r.url.ends_with("&db=benchmark"));
        assert_eq!(
            r.header("content-type"),
            Some("application/x-www-form-urlencoded")
        );
        assert!(r.body.is_empty());
    }
    let out = run.stdout();
    let l: Vec<&str> = out.lines().collect();
    assert!(Regex::new(r"^Run complete after 5 queries with 2 workers \(Overall query rate \d+\.\d\d queries/sec\):$").unwrap().is_match(l[0]), "{out}");
    let stat = Regex::new(r"^min: +\d+\.\d\dms, med: +\d+\.\d\dms, mean: +\d+\.\d\dms, max: +\d+\.\d\dms, stddev: +\d+\.\d\dms, sum: +\d+\.\dsec, count: 5$").unwrap();
    assert_eq!(l[1], "Influx last row per host:");
    assert!(stat.is_match(l[2]), "{}", l[2]);
    assert_eq!(l[3], "all queries             :");
    assert!(stat.is_match(l[4]), "{}", l[4]);
    assert!(
        Regex::new(r"^wall clock time: \d+\.\d{6}sec$")
            .unwrap()
            .is_match(l[5]),
        "{}",
        l[5]
    );
    assert_eq!(
        l[6],
        format!("Saving results json file to {}", results.display())
    );
    assert_eq!(l.len(), 7);
    let v: Value = serde_json::from_str(&std::fs::read_to_string(&results).unwrap()).unwrap();
    assert_eq!(v["ResultFormatVersion"], "0.2");
    assert_eq!(v["RunnerConfig"]["Workers"], 2);
    assert_eq!(v["RunnerConfig"]["FileName"], qf.display().to_string());
    assert_eq!(v["Totals"]["overallStats"]["all_queries"]["count"], 5);
    assert_eq!(
        v["Totals"]["overallStats"]["Influx_last_row_per_host"]["count"],
        5
    );
    let q = &v["Totals"]["overallQuantiles"]["all_queries"];
    // like the real runner (fixtures/tsbs-real/lastpoint.json): q0 is always 0
    assert_eq!(q["q0"].as_f64(), Some(0.0));
    assert!(q["q50"].as_f64() > Some(0.0) && q["q50"].as_f64() <= q["q100"].as_f64());
    assert_eq!(v["StartTime"].as_i64().unwrap() % 1000, 0);
}

#[test]
fn greptime_runner_panics_on_non_200_and_honours_limits() {
    let dir = tempfile::tempdir().unwrap();
    let qf = query_file(dir.path(), "q.dat", &lastpoint(6));
    let state = Arc::new(Greptime::default());
    *state.fail_sql.lock().unwrap() = Some("usage_user > 3".into());
    let srv = greptime(state.clone());
    let base = [
        format!("--file={}", qf.display()),
        format!("--urls={}", srv.url()),
        "--print-interval=0".into(),
    ];
    let run = emulate("tsbs_run_queries_influx", &base, dir.path(), None, None);
    run.expect(2);
    assert!(run.stderr().starts_with("panic: http request did not return status 200 OK, code=500, body={\"code\":1003,\"error\":\"boom\"}\n"), "{}", run.stderr());
    assert!(!run.stdout().contains("Run complete"));

    // --max-queries stops before the failing query
    let mut a = base.to_vec();
    a.push("--max-queries=3".into());
    let run = emulate("tsbs_run_queries_influx", &a, dir.path(), None, None);
    run.expect(0);
    assert!(run
        .stdout()
        .starts_with("Run complete after 3 queries with 1 workers"));

    // a file that is not a query file: log.Fatal, exit 1
    std::fs::write(&qf, data(2)).unwrap();
    let run = emulate("tsbs_run_queries_influx", &base, dir.path(), None, None);
    run.expect(1);
    // (line protocol read as gob: the first byte is a length, the next a type id never defined)
    assert!(
        run.stderr().contains(" gob: unknown type id "),
        "{}",
        run.stderr()
    );
}

#[test]
fn influx3_runner_requests_and_failures() {
    let dir = tempfile::tempdir().unwrap();
    let qs: Vec<Query> = (0..4)
        .map(|i| {
            Query::influx3(
                "InfluxDB 3 last row per host",
                "d",
                &format!("SELECT *\nFROM cpu WHERE usage_user > {i}"),
                0,
                0,
            )
        })
        .collect();
    let qf = query_file(dir.path(), "q.dat", &qs);
    let results = dir.path().join("r.json");
    let state = Arc::new(Influx3::default());
    state.dbs.lock().unwrap().insert("benchmark".into());
    let srv = influx3(state);
    let a = [
        format!("--file={}", qf.display()),
        "--db-name=benchmark".into(),
        format!("--urls={}/", srv.url()),
        "--workers=1".into(),
        "--print-interval=0".into(),
        format!("--results-file={}", results.display()),
    ];
    // issue 16 #4: the token comes from config.json, never from argv
    let mut on_argv = a.to_vec();
    on_argv.push("--auth-token=qtok".into());
    let run = emulate("tsbs_run_queries_influx3", &on_argv, dir.path(), None, None);
    run.expect(2);
    assert!(run
        .stderr()
        .contains("--auth-token was given on the command line"));
    std::fs::write(dir.path().join("config.json"), r#"{"auth-token": "qtok"}"#).unwrap();
    let run = emulate("tsbs_run_queries_influx3", &a, dir.path(), None, None);
    run.expect(0);
    let reqs = srv.requests();
    assert_eq!(reqs.len(), 4);
    let r = &reqs[0];
    assert_eq!(
        (r.method.as_str(), r.url.as_str()),
        ("POST", "/api/v3/query_sql")
    );
    assert_eq!(r.header("authorization"), Some("Bearer qtok"));
    assert_eq!(r.header("accept"), Some("application/json"));
    assert_eq!(r.header("content-type"), Some("application/json"));
    assert_eq!(r.body_text(), "{\"db\":\"benchmark\",\"q\":\"SELECT *\\nFROM cpu WHERE usage_user \\u003e 0\",\"format\":\"json\"}");
    assert!(run.stdout().contains("\nInfluxDB 3 last row per host:\n"));
    assert!(run.stdout().contains("\nall queries                 :\n"));

    let mut wrong = a.to_vec();
    wrong[1] = "--db-name=nope".into();
    let run = emulate("tsbs_run_queries_influx3", &wrong, dir.path(), None, None);
    run.expect(2);
    assert!(run.stderr().starts_with("panic: InfluxDB 3 query failed (status 404): {\"error\":\"query error: database not found: nope\"}"), "{}", run.stderr());
}

#[test]
fn explain_mode_writes_cold_and_hot_results() {
    let dir = tempfile::tempdir().unwrap();
    let qf = query_file(dir.path(), "q.dat", &lastpoint(5));
    let state = Arc::new(Greptime::default());
    let srv = greptime(state.clone());
    let out_dir = dir.path().join("analyze/lastpoint/run-001");
    let a = [
        format!("--file={}", qf.display()),
        "--db-name=benchmark".into(),
        format!("--urls={}", srv.url()),
        "--workers=1".into(),
        "--max-queries=3".into(),
        "--print-interval=0".into(),
        "--explain-analyze-verbose".into(),
        format!("--explain-results-dir={}", out_dir.display()),
        format!("--results-file={}", out_dir.join("metrics.json").display()),
    ];
    let run = emulate("tsbs_run_queries_influx", &a, dir.path(), None, None);
    run.expect(0);
    let reqs = srv.requests();
    assert_eq!(reqs.len(), 3);
    assert!(reqs[0]
        .param("sql")
        .unwrap()
        .starts_with("EXPLAIN ANALYZE VERBOSE SELECT last_value"));
    let mut names: Vec<String> = std::fs::read_dir(&out_dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .collect();
    names.sort();
    assert_eq!(
        names,
        ["cold.json", "hot-001.json", "hot-002.json", "metrics.json"]
    );
    let cold = std::fs::read_to_string(out_dir.join("cold.json")).unwrap();
    assert!(
        cold.starts_with(
            "{\n  \"phase\": \"cold\",\n  \"query_index\": 0,\n  \"sql\": \"SELECT last_value"
        ),
        "{cold}"
    );
    assert!(cold.ends_with("}\n"));
    let v: Value = serde_json::from_str(&cold).unwrap();
    assert_eq!(
        v["executed_sql"],
        format!("EXPLAIN ANALYZE VERBOSE {}", v["sql"].as_str().unwrap())
    );
    assert_eq!(
        v["response"]["output"][0]["records"]["rows"][0][0],
        "plan < 1 & ok"
    );
    assert!(
        cold.contains("plan \\u003c 1 \\u0026 ok"),
        "Go escapes HTML in RawMessage: {cold}"
    );
    let hot: Value =
        serde_json::from_str(&std::fs::read_to_string(out_dir.join("hot-002.json")).unwrap())
            .unwrap();
    assert_eq!(
        (hot["phase"].as_str(), hot["query_index"].as_u64()),
        (Some("hot"), Some(2))
    );

    // never overwritten
    let run = emulate("tsbs_run_queries_influx", &a, dir.path(), None, None);
    run.expect(2);
    assert!(
        run.stderr().starts_with(&format!(
            "panic: explain result already exists: {}",
            out_dir.join("cold.json").display()
        )),
        "{}",
        run.stderr()
    );

    // a GreptimeDB error payload (HTTP 200) fails the query
    *state.explain_error.lock().unwrap() = true;
    let mut b = a.to_vec();
    b[7] = format!(
        "--explain-results-dir={}",
        dir.path().join("other").display()
    );
    let run = emulate("tsbs_run_queries_influx", &b, dir.path(), None, None);
    run.expect(2);
    assert!(run
        .stderr()
        .starts_with("panic: GreptimeDB explain query 0 failed with code 3000: plan failed"));

    // the option checks
    let mut c = a.to_vec();
    c[3] = "--workers=2".into();
    let run = emulate("tsbs_run_queries_influx", &c, dir.path(), None, None);
    run.expect(1);
    assert!(run.stderr().ends_with(" --explain-analyze-verbose requires --workers=1 so cold and hot query order is deterministic\n"));
    let run = emulate(
        "tsbs_run_queries_influx",
        &[format!("--explain-results-dir={}", out_dir.display())],
        dir.path(),
        None,
        None,
    );
    run.expect(1);
    assert!(run
        .stderr()
        .ends_with(" --explain-results-dir requires --explain-analyze-verbose\n"));
}

#[test]
fn runner_knobs() {
    let dir = tempfile::tempdir().unwrap();
    let qf = query_file(dir.path(), "q.dat", &lastpoint(4));
    let results = dir.path().join("r.json");
    let knobs = dir.path().join("knobs.json");
    let srv = greptime(Arc::new(Greptime::default()));
    let a = [
        format!("--file={}", qf.display()),
        format!("--urls={}", srv.url()),
        "--print-interval=0".into(),
        format!("--results-file={}", results.display()),
    ];
    std::fs::write(&knobs, r#"{"tsbs_run": {"fail_after_queries": 2}}"#).unwrap();
    let run = emulate(
        "tsbs_run_queries_influx",
        &a,
        dir.path(),
        None,
        Some(&knobs),
    );
    run.expect(2);
    assert!(run
        .stderr()
        .starts_with("panic: http request did not return status 200 OK, code=500"));
    assert_eq!(srv.requests().len(), 2);
    for knob in ["v0.1", "malformed", "skip"] {
        let _ = std::fs::remove_file(&results);
        std::fs::write(&knobs, json!({"tsbs_run": {"results": knob}}).to_string()).unwrap();
        emulate(
            "tsbs_run_queries_influx",
            &a,
            dir.path(),
            None,
            Some(&knobs),
        )
        .expect(0);
        match knob {
            "skip" => assert!(!results.exists()),
            "malformed" => assert!(serde_json::from_str::<Value>(
                &std::fs::read_to_string(&results).unwrap()
            )
            .is_err()),
            _ => assert!(std::fs::read_to_string(&results)
                .unwrap()
                .contains("\"ResultFormatVersion\": \"0.1\"")),
        }
    }
}

#[test]
fn runner_flags_are_strict() {
    let dir = tempfile::tempdir().unwrap();
    let run = emulate(
        "tsbs_run_queries_influx3",
        &args(&["--explain-analyze-verbose"]),
        dir.path(),
        None,
        None,
    );
    run.expect(2);
    assert!(run.stderr().starts_with(
        "unknown flag: --explain-analyze-verbose\nUsage of tsbs_run_queries_influx3:\n"
    ));
    let run = emulate(
        "tsbs_run_queries_influx",
        &args(&["--workers=0", "--file=/nonexistent"]),
        dir.path(),
        None,
        None,
    );
    run.expect(2);
    assert!(run
        .stderr()
        .starts_with("panic: must have at least one worker"));
    let run = emulate(
        "tsbs_run_queries_influx",
        &args(&["--file=/nonexistent/q.dat"]),
        dir.path(),
        None,
        None,
    );
    run.expect(2);
    assert!(run.stderr().starts_with("panic: cannot open file for read /nonexistent/q.dat: open /nonexistent/q.dat: no such file or directory"));
}

#[test]
fn runner_burn_in_prewarm_and_interim_reports() {
    let dir = tempfile::tempdir().unwrap();
    let qf = query_file(dir.path(), "q.dat", &lastpoint(3));
    let results = dir.path().join("r.json");
    let srv = greptime(Arc::new(Greptime::default()));
    let run = emulate(
        "tsbs_run_queries_influx",
        &[
            format!("--file={}", qf.display()),
            format!("--urls={}", srv.url()),
            "--prewarm-queries".into(),
            "--burn-in=1".into(),
            "--print-interval=2".into(),
            "--debug=1".into(),
            format!("--results-file={}", results.display()),
        ],
        dir.path(),
        None,
        None,
    );
    run.expect(0);
    assert_eq!(srv.requests().len(), 6, "each query twice");
    let (out, err) = (run.stdout(), run.stderr());
    assert!(
        out.starts_with("Run complete after 2 queries with 1 workers"),
        "{out}"
    );
    let labels: Vec<&str> = out
        .lines()
        .filter(|l| l.ends_with(':') && !l.starts_with("Run"))
        .collect();
    assert_eq!(
        labels,
        [
            "Influx last row per host:",
            "all queries             :",
            "cold queries            :",
            "warm queries            :"
        ]
    );
    assert!(
        out.contains("count: 5\n"),
        "burn-in drops the first measurement: {out}"
    );
    assert!(
        err.contains("burn-in complete after 1 queries with 1 workers\n"),
        "{err}"
    );
    assert!(
        err.contains("After 1 queries with 1 workers:\nInterval query rate: "),
        "{err}"
    );
    assert!(err.contains("debug: Influx last row per host\n"), "{err}");
    let v: Value = serde_json::from_str(&std::fs::read_to_string(&results).unwrap()).unwrap();
    assert_eq!(v["Totals"]["overallStats"]["warm_queries"]["count"], 3);
    assert_eq!(v["Totals"]["overallStats"]["cold_queries"]["count"], 2);
    assert_eq!(v["Totals"]["prewarmQueries"], true);
    assert_eq!(v["Totals"]["burnIn"], 1);
}

// ---------------------------------------------------------------- generators

fn gen_data(extra: &[&str]) -> Run {
    let dir = tempfile::tempdir().unwrap();
    let mut a = vec![
        "--use-case=cpu-only",
        "--seed=123",
        "--scale=2",
        "--timestamp-start=2023-06-11T00:00:00Z",
        "--timestamp-end=2023-06-11T00:01:00Z",
        "--log-interval=10s",
        "--format=influx",
    ];
    a.extend_from_slice(extra);
    emulate("tsbs_generate_data", &args(&a), dir.path(), None, None)
}

fn gen_queries(extra: &[&str]) -> Run {
    let dir = tempfile::tempdir().unwrap();
    let mut a = vec![
        "--use-case=cpu-only",
        "--seed=123",
        "--scale=2",
        "--timestamp-start=2023-06-11T00:00:00Z",
        "--timestamp-end=2023-06-11T01:00:00Z",
        "--queries=2",
        "--query-type=single-groupby-1-1-1",
        "--format=greptime",
    ];
    a.extend_from_slice(extra);
    emulate("tsbs_generate_queries", &args(&a), dir.path(), None, None)
}

/// Timestamps Go's RFC 3339 refuses, in the real tools' words: the data generator prints the
/// error on stdout and exits 0 (finding C1), the query generator on stderr with exit 1.
#[test]
fn generators_refuse_what_go_refuses_in_the_real_words() {
    let r = gen_data(&["--timestamp-start=2023-06-11 00:00:00z"]);
    r.expect(0);
    assert_eq!(
        r.stdout(),
        "error: cannot parse time from string '2023-06-11 00:00:00z': parsing time \"2023-06-11 00:00:00z\" as \"2006-01-02T15:04:05Z07:00\": cannot parse \" 00:00:00z\" as \"T\"\n"
    );
    for bad in [
        "2023-06-11T00:01:00z",
        "2023-06-11t00:01:00Z",
        "2016-12-31T23:59:60Z",
    ] {
        let r = gen_data(&[&format!("--timestamp-end={bad}")]);
        r.expect(0);
        assert!(
            r.stdout().starts_with(&format!(
                "error: cannot parse time from string '{bad}': parsing time \"{bad}\""
            )),
            "{}",
            r.stdout()
        );
        assert_eq!(r.stdout().lines().count(), 1);
    }
    let r = gen_data(&["--scale=0", "--use-case=nope"]);
    r.expect(0);
    assert_eq!(r.stdout(), "error: scale cannot be 0\n");
    let r = gen_data(&["--use-case=nope"]);
    assert_eq!(r.stdout(), "error: invalid use case specified: 'nope'\n");
    // An offset is valid RFC 3339: 12 rows (2 hosts × 6 intervals).
    let r = gen_data(&["--timestamp-start=2023-06-11T02:00:00+02:00"]);
    r.expect(0);
    assert_eq!(r.stdout().lines().count(), 12);

    let r = gen_queries(&["--timestamp-end=2023-06-11T01:00:00z"]);
    r.expect(1);
    assert_eq!(
        r.stderr(),
        "error: cannot parse time from string '2023-06-11T01:00:00z': parsing time \"2023-06-11T01:00:00z\" as \"2006-01-02T15:04:05Z07:00\": cannot parse \"z\" as \"Z07:00\"\n"
    );
    let r = gen_queries(&["--scale=0"]);
    r.expect(1);
    assert_eq!(r.stderr(), "error: scale cannot be 0\n");
    let r = gen_queries(&["--format="]);
    r.expect(1);
    assert_eq!(r.stderr(), "error: invalid format specified: ''\n");
    let r = gen_queries(&["--use-case=nope"]);
    assert_eq!(r.stderr(), "error: invalid use case specified: 'nope'\n");
}

/// The real generator panics when the random window is not shorter than the interval
/// (`upper <= lower`): a one-hour type on exactly one hour panics, one second more works.
#[test]
fn query_generator_needs_a_span_longer_than_the_window() {
    let r = gen_queries(&[]);
    r.expect(2);
    assert!(
        r.stderr().contains("panic: random window equal to or larger than TimeInterval: window 1h0m0s, interval 1h0m0s"),
        "{}",
        r.stderr()
    );
    let r = gen_queries(&["--timestamp-end=2023-06-11T01:00:01Z"]);
    r.expect(0);
    assert!(r.stderr().ends_with(": 2 points\n"), "{}", r.stderr());
    let r = gen_queries(&[
        "--query-type=groupby-orderby-limit",
        "--timestamp-end=2023-06-11T00:30:00Z",
    ]);
    r.expect(2);
}

/// The stand-in runners read the real generator's gob files (fixtures/tsbs-real), and send
/// what they hold: the greptime file's SQL to /v1/sql, the influx3 file's to query_sql.
#[test]
fn runners_read_the_real_generators_files() {
    let fixtures = Path::new(env!("CARGO_MANIFEST_DIR")).join("../tests/fixtures/tsbs-real");
    let dir = tempfile::tempdir().unwrap();
    let srv = greptime(Arc::new(Greptime::default()));
    let gf = fixtures.join("queries-greptime-lastpoint.gob");
    let run = emulate(
        "tsbs_run_queries_influx",
        &[
            format!("--file={}", gf.display()),
            format!("--urls={}", srv.url()),
            "--print-interval=0".into(),
        ],
        dir.path(),
        None,
        None,
    );
    run.expect(0);
    assert!(run
        .stdout()
        .starts_with("Run complete after 10 queries with 1 workers"));
    let reqs = srv.requests();
    assert_eq!(reqs.len(), 10);
    assert!(reqs[0]
        .url
        .starts_with("/v1/sql?sql=select+last_value%28hostname+order+by+greptime_timestamp%29"));

    let state = Arc::new(Influx3::default());
    state.dbs.lock().unwrap().insert("benchmark".into());
    let srv = influx3(state);
    let f3 = fixtures.join("queries-influx3-single-groupby-1-1-1.gob");
    let run = emulate(
        "tsbs_run_queries_influx3",
        &[
            format!("--file={}", f3.display()),
            format!("--urls={}", srv.url()),
            "--print-interval=0".into(),
        ],
        dir.path(),
        None,
        None,
    );
    run.expect(0);
    let reqs = srv.requests();
    assert_eq!(reqs.len(), 10);
    let body: Value = serde_json::from_slice(&reqs[0].body).unwrap();
    assert!(body["q"]
        .as_str()
        .unwrap()
        .starts_with("SELECT date_bin(INTERVAL '1 minute', time) AS minute"));
}

/// The generators parse flags like the other stand-ins (strict pflag, the real flag set with
/// the real types): real DB-specific flags are accepted (finding C8), bad values exit 2.
#[test]
fn generator_flags_are_the_real_ones_and_strict() {
    let r = gen_queries(&[
        "--timestamp-end=2023-06-11T01:00:01Z",
        "--clickhouse-use-tags=false",
        "--mongo-use-naive",
        "--timescale-use-json=true",
        "--timescale-use-tags=false",
        "--timescale-use-time-bucket=false",
    ]);
    r.expect(0);
    let r = gen_queries(&["--scale=ten"]);
    r.expect(2);
    assert!(
        r.stderr()
            .starts_with("invalid argument \"ten\" for \"--scale\" flag"),
        "{}",
        r.stderr()
    );
    let r = gen_queries(&["--no-such-flag=1"]);
    r.expect(2);
    assert!(
        r.stderr().starts_with("unknown flag: --no-such-flag"),
        "{}",
        r.stderr()
    );
    let r = gen_data(&["--log-interval=10"]);
    r.expect(2);
    assert!(r.stderr().contains("--log-interval"), "{}", r.stderr());
    let r = gen_data(&["--clickhouse-use-tags=false"]);
    r.expect(2);
}

/// What the real pflag (v1.0.5) does with a single-dash flag and a bad value: the message and
/// the usage on stderr, the message again on stdout, exit 2 (the real `-help`,
/// tsbs-real-postgresql/help: usage on stderr, `pflag: help requested` on stdout, exit 2).
#[test]
fn generators_refuse_single_dash_flags_and_bad_values_like_pflag() {
    for (tool, run) in [
        ("tsbs_generate_data", gen_data as fn(&[&str]) -> Run),
        ("tsbs_generate_queries", gen_queries),
    ] {
        let r = run(&["-seed=1"]);
        r.expect(2);
        assert_eq!(r.stdout(), "unknown shorthand flag: 's' in -seed=1\n");
        assert!(
            r.stderr().starts_with(&format!(
                "unknown shorthand flag: 's' in -seed=1\nUsage of {tool}:\n"
            )),
            "{}",
            r.stderr()
        );
        let r = run(&["--scale=1.5"]);
        r.expect(2);
        let msg = "invalid argument \"1.5\" for \"--scale\" flag: strconv.ParseUint: parsing \"1.5\": invalid syntax";
        assert_eq!(r.stdout(), format!("{msg}\n"));
        assert!(
            r.stderr().starts_with(&format!("{msg}\n")),
            "{}",
            r.stderr()
        );
        let r = run(&["-help"]);
        r.expect(2);
        assert_eq!(r.stdout(), "pflag: help requested\n");
        // The real help's lines for the flags tsbsctl sets (pflag prints uint64 as `uint`).
        for line in [
            "      --scale uint ",
            "      --seed int ",
            "      --format string ",
            "Format to generate. (choices: cassandra, clickhouse, influx, mongo, siridb, timescaledb, akumuli, cratedb, prometheus, victoriametrics, timestream, questdb, influx2, influx3, greptime)",
        ] {
            assert!(r.stderr().contains(line), "{line:?} not in\n{}", r.stderr());
        }
    }
}

/// A misspelt or ill-typed generator knob fails the run (exit 2, naming the key) instead of
/// being ignored, which would let a fault-injection test pass on the happy path.
#[test]
fn generator_knobs_are_strict() {
    let dir = tempfile::tempdir().unwrap();
    let knobs = dir.path().join("knobs.json");
    let data_args = [
        "--use-case=cpu-only",
        "--seed=123",
        "--scale=2",
        "--timestamp-end=2016-01-01T00:01:00Z",
        "--format=influx",
    ];
    let run = |tool: &str, k: Value| {
        std::fs::write(&knobs, k.to_string()).unwrap();
        let mut a = args(&data_args);
        if tool == "tsbs_generate_queries" {
            a = args(&[
                "--use-case=cpu-only",
                "--seed=123",
                "--scale=2",
                "--queries=1",
                "--query-type=lastpoint",
                "--format=greptime",
            ]);
        }
        emulate(tool, &a, dir.path(), None, Some(&knobs))
    };
    // The knob works when spelt right, so the refusals below are about the spelling.
    let r = run(
        "tsbs_generate_data",
        json!({"tsbs_generate_data": {"exit_code": 3}}),
    );
    r.expect(3);
    let r = run(
        "tsbs_generate_data",
        json!({"tsbs_generate_data": {"exit_cod": 3}}),
    );
    r.expect(2);
    assert!(
        r.stderr().contains("unknown field `exit_cod`"),
        "{}",
        r.stderr()
    );
    let r = run(
        "tsbs_generate_data",
        json!({"tsbs_generate_data": {"exit_code": "3"}}),
    );
    r.expect(2);
    assert!(r.stderr().contains("tsbs_generate_data"), "{}", r.stderr());
    let r = run(
        "tsbs_generate_queries",
        json!({"tsbs_generate_queries": {"fail_type": ["lastpoint"]}}),
    );
    r.expect(2);
    assert!(
        r.stderr().contains("unknown field `fail_type`"),
        "{}",
        r.stderr()
    );
    // Not JSON at all: refused too.
    std::fs::write(&knobs, "{not json").unwrap();
    emulate(
        "tsbs_generate_data",
        &args(&data_args),
        dir.path(),
        None,
        Some(&knobs),
    )
    .expect(2);
    // Other tools' sections are theirs: no section of our own means no knobs.
    let r = run("tsbs_generate_data", json!({"tsbs_load": {"anything": 1}}));
    r.expect(0);
    assert_eq!(r.stdout().lines().count(), 12, "{}", r.stdout());
}
