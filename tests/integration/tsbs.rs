//! `tsbsctl::tsbs` end to end against the TSBS stand-ins: the command lines it builds run the
//! stand-ins (through the same wrapper scripts an installed environment holds), and its parsers
//! and failure detection read what they print and write.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use serde_json::json;
use testbed::queryfile::{self, Query};
use testbed::stubserver::{StubRequest, StubResponse, StubServer};
use tsbsctl::tsbs::{
    self, DatabaseMode, ExplainSpec, FailureKind, LoadInput, LoadSpec, QuerySpec, ResultSource,
    Secret, ToolFailure, TsbsCommand,
};

use crate::util::testbed_bin;
use tsbsctl::product::greptimedb::{explain, GreptimeDb};
use tsbsctl::product::influxdb3::{Edition, InfluxDb3};
use tsbsctl::product::{Driver, ToolOptions};

struct World {
    dir: tempfile::TempDir,
    knobs: PathBuf,
}

impl World {
    fn new() -> World {
        let dir = tempfile::tempdir().unwrap();
        let knobs = dir.path().join("knobs.json");
        let bin = dir.path().join("tsbs/bin");
        std::fs::create_dir_all(&bin).unwrap();
        std::fs::create_dir_all(dir.path().join("cwd")).unwrap();
        // built beside tsbsctl; testbed::wrapper_script finds it there too
        let _ = testbed_bin();
        for tool in [
            "tsbs_load_greptime",
            "tsbs_load_influx3",
            "tsbs_run_queries_influx",
            "tsbs_run_queries_influx3",
        ] {
            let p = bin.join(tool);
            let script =
                testbed::wrapper_script(tool, &[("TESTBED_KNOBS", knobs.to_str().unwrap())]);
            std::fs::write(&p, script).unwrap();
            use std::os::unix::fs::PermissionsExt;
            std::fs::set_permissions(&p, std::fs::Permissions::from_mode(0o755)).unwrap();
        }
        World { dir, knobs }
    }

    fn bin(&self, tool: &str) -> PathBuf {
        self.dir.path().join("tsbs/bin").join(tool)
    }

    fn path(&self, p: &str) -> PathBuf {
        self.dir.path().join(p)
    }

    fn knob(&self, v: serde_json::Value) {
        std::fs::write(&self.knobs, v.to_string()).unwrap();
    }

    /// Runs a command as a benchmark phase would: `$ <redacted>` first, then stdout and stderr
    /// merged into the log; stdin streamed when the loader reads it. Bounded to 30 s.
    fn run(
        &self,
        cmd: &TsbsCommand,
        log: &Path,
        stdin: Option<&[u8]>,
    ) -> (Option<ToolFailure>, String) {
        let (status, text) = self.run_raw(cmd, log, stdin);
        (tsbs::detect(&cmd.tool(), status, &text), text)
    }

    fn run_raw(
        &self,
        cmd: &TsbsCommand,
        log: &Path,
        stdin: Option<&[u8]>,
    ) -> (std::process::ExitStatus, String) {
        std::fs::write(log, format!("{}\n", cmd.log_line())).unwrap();
        let out = std::fs::OpenOptions::new().append(true).open(log).unwrap();
        // `_dir`: the tool's private cwd (its tokens' config.json), kept until it exits.
        let (mut c, _dir) = cmd.command(&self.path("cwd")).unwrap();
        c.stdout(out.try_clone().unwrap())
            .stderr(out)
            .stdin(if stdin.is_some() {
                Stdio::piped()
            } else {
                Stdio::null()
            });
        let mut child = c.spawn().unwrap();
        if let Some(data) = stdin {
            use std::io::Write;
            let mut w = child.stdin.take().unwrap();
            let data = data.to_vec();
            std::thread::spawn(move || {
                let _ = w.write_all(&data);
            });
        }
        let deadline = Instant::now() + Duration::from_secs(30);
        let status = loop {
            if let Some(s) = child.try_wait().unwrap() {
                break s;
            }
            if Instant::now() > deadline {
                let _ = child.kill();
                panic!("{} did not finish", cmd.redacted());
            }
            std::thread::sleep(Duration::from_millis(5));
        };
        (status, std::fs::read_to_string(log).unwrap())
    }
}

fn data(n: usize) -> String {
    (0..n)
        .map(|i| {
            format!(
                "cpu,hostname=host_{} usage_user=1i,usage_system=2i,usage_idle=3i {}\n",
                i % 4,
                1_000_000_000u64 * (i as u64 / 4)
            )
        })
        .collect()
}

/// A GreptimeDB as the tools see it; queries whose SQL contains `fail` answer 500.
fn greptime(fail: Option<&'static str>) -> (StubServer, Arc<Mutex<BTreeSet<String>>>) {
    let dbs = Arc::new(Mutex::new(BTreeSet::new()));
    let d = dbs.clone();
    let srv = StubServer::start(move |r: &StubRequest| {
        let mut dbs = d.lock().unwrap();
        match r.path() {
            "/v1/sql" if r.query().is_none() => {
                let sql = r.form("sql").unwrap_or_default();
                if sql == "SHOW DATABASES" {
                    let rows: Vec<_> = dbs.iter().map(|n| json!([n])).collect();
                    StubResponse::json(200, &json!({"code":0,"output":[{"records":{"rows":rows}}]}))
                } else if let Some(db) = sql.strip_prefix("CREATE DATABASE ") {
                    dbs.insert(db.into());
                    StubResponse::json(200, &json!({"code":0,"output":[{"affectedrows":1}]}))
                } else if let Some(db) = sql.strip_prefix("DROP DATABASE ") {
                    dbs.remove(db);
                    StubResponse::json(200, &json!({"code":0,"output":[{"affectedrows":0}]}))
                } else {
                    StubResponse::json(400, &json!({"code":1001,"error":"?"}))
                }
            }
            "/v1/sql" => {
                let sql = r.param("sql").unwrap_or_default();
                if fail.is_some_and(|f| sql.contains(f)) {
                    StubResponse::json(500, &json!({"code":1003,"error":"boom"}))
                } else {
                    StubResponse::json(200, &json!({"code":0,"output":[{"records":{"rows":[["x"]]}}],"execution_time_ms":1}))
                }
            }
            "/v1/influxdb/write" => StubResponse::new(204, ""),
            "/api/v3/write_lp" => StubResponse::new(204, ""),
            "/api/v3/query_sql" => StubResponse::json(200, &json!([])),
            _ => StubResponse::new(404, "Not found"),
        }
    })
    .unwrap();
    (srv, dbs)
}

fn load_spec(w: &World, url: &str, mode: DatabaseMode, results: &str) -> LoadSpec {
    LoadSpec {
        binary: w.bin("tsbs_load_greptime"),
        target: GreptimeDb.load_target(&ToolOptions::default()),
        urls: vec![url.into()],
        input: LoadInput::File(w.path("data")),
        database: "benchmark".into(),
        batch_size: 7,
        workers: 2,
        results_file: w.path(results),
        mode,
        confirm_reset: None,
    }
}

#[test]
fn load_results_file_log_fallback_and_malformed() {
    let w = World::new();
    std::fs::write(w.path("data"), data(30)).unwrap();
    let (srv, _dbs) = greptime(None);

    let spec = load_spec(&w, &srv.url(), DatabaseMode::Create, "load-run-001.json");
    let cmd = tsbs::load_command(&spec).unwrap();
    let (status, log) = w.run_raw(&cmd, &w.path("load-1.log"), None);
    assert!(log.starts_with("$ "), "{log}");
    let r = tsbs::load_outcome(&cmd.tool(), status, &log, &spec.results_file).unwrap();
    assert_eq!(r.source, ResultSource::ResultsFile);
    assert_eq!((r.metrics, r.rows), (90, Some(30)));
    assert_eq!((r.workers, r.batch_size), (Some(2), Some(7)));
    assert!(r.metrics_per_second > 0.0 && r.duration_seconds >= 0.0);
    assert_eq!(r.worker_backoffs.len(), 2);
    assert_eq!(
        srv.requests()
            .iter()
            .filter(|r| r.path() == "/v1/influxdb/write")
            .count(),
        5
    );

    // format 0.1 → the log; malformed → a failure that names the file; no file → the log
    let mut reuse = load_spec(&w, &srv.url(), DatabaseMode::Reuse, "load-run-002.json");
    w.knob(json!({"tsbs_load": {"results": "v0.1"}}));
    let (failure, log) = w.run(
        &tsbs::load_command(&reuse).unwrap(),
        &w.path("load-2.log"),
        None,
    );
    assert_eq!(failure, None);
    let r = tsbs::load_result(&reuse.results_file, &log).unwrap();
    assert_eq!(r.source, ResultSource::Log);
    assert_eq!((r.metrics, r.rows, r.workers), (90, Some(30), Some(2)));

    reuse.results_file = w.path("load-run-003.json");
    w.knob(json!({"tsbs_load": {"results": "malformed"}}));
    let (failure, log) = w.run(
        &tsbs::load_command(&reuse).unwrap(),
        &w.path("load-3.log"),
        None,
    );
    assert_eq!(failure, None);
    let e = tsbs::load_result(&reuse.results_file, &log).unwrap_err();
    assert!(
        e.message.starts_with(&format!(
            "malformed result JSON {}",
            reuse.results_file.display()
        )),
        "{}",
        e.message
    );

    reuse.results_file = w.path("load-run-004.json");
    w.knob(json!({"tsbs_load": {"results": "skip"}}));
    let (failure, log) = w.run(
        &tsbs::load_command(&reuse).unwrap(),
        &w.path("load-4.log"),
        None,
    );
    assert_eq!(failure, None);
    assert_eq!(
        tsbs::load_result(&reuse.results_file, &log).unwrap().source,
        ResultSource::Log
    );

    // create on the now existing database: the abort is recognised
    w.knob(json!({}));
    let spec = load_spec(&w, &srv.url(), DatabaseMode::Create, "load-run-005.json");
    let (failure, _) = w.run(
        &tsbs::load_command(&spec).unwrap(),
        &w.path("load-5.log"),
        None,
    );
    let f = failure.expect("abort");
    assert_eq!(
        (f.kind, f.exit_code),
        (FailureKind::DatabaseExists, Some(2))
    );

    // a load that dies mid-way is a failure with the tool's own words
    w.knob(json!({"tsbs_load": {"fail_after_rows": 10}}));
    let spec = load_spec(&w, &srv.url(), DatabaseMode::Reuse, "load-run-006.json");
    let (failure, log) = w.run(
        &tsbs::load_command(&spec).unwrap(),
        &w.path("load-6.log"),
        None,
    );
    let f = failure.expect("fatal");
    assert_eq!(
        (f.kind, f.exit_code, f.http_status),
        (FailureKind::HttpStatus, Some(1), Some(500))
    );
    assert!(tsbs::load_result(&spec.results_file, &log).is_err());
}

#[test]
fn influx3_load_streams_stdin_and_keeps_tokens_out_of_logs() {
    let w = World::new();
    let (srv, _) = greptime(None);
    let spec = LoadSpec {
        binary: w.bin("tsbs_load_influx3"),
        target: InfluxDb3::new(Edition::Core).load_target(&ToolOptions {
            auth_token: Some(Secret::new("tok-Sekrit-1")),
            admin_token: None,
            values: serde_json::json!({"no_sync": true, "accept_partial": false})
                .as_object()
                .cloned()
                .unwrap(),
        }),
        urls: vec![srv.url()],
        input: LoadInput::Stdin,
        database: "benchmark".into(),
        batch_size: 5,
        workers: 1,
        results_file: w.path("load-run-001.json"),
        mode: DatabaseMode::Reuse,
        confirm_reset: None,
    };
    let cmd = tsbs::load_command(&spec).unwrap();
    let (failure, log) = w.run(&cmd, &w.path("load.log"), Some(data(12).as_bytes()));
    assert_eq!(failure, None, "{log}");
    let r = tsbs::load_result(&spec.results_file, &log).unwrap();
    assert_eq!((r.metrics, r.rows), (36, Some(12)));
    let reqs = srv.requests();
    assert_eq!(
        reqs.len(),
        3,
        "reuse makes no admin call; 12 rows in batches of 5"
    );
    assert!(reqs
        .iter()
        .all(|r| r.header("authorization") == Some("Bearer tok-Sekrit-1")));
    assert!(reqs[0].url.contains("no_sync=true"));
    // issue 16 #4: the tokens went through config.json, not argv
    assert!(!log.contains("--auth-token"), "{log}");
    assert!(log.contains("# config.json: auth-token=<redacted> admin-token=<redacted>"));
    for f in [w.path("load.log"), spec.results_file.clone()] {
        assert!(
            !std::fs::read_to_string(&f).unwrap().contains("Sekrit"),
            "{}",
            f.display()
        );
    }

    // the InfluxDB 3 runner, with its token
    let qs: Vec<Query> = (0..3)
        .map(|i| {
            Query::influx3(
                "InfluxDB 3 last row per host",
                "d",
                &format!("SELECT {i}"),
                0,
                0,
            )
        })
        .collect();
    let file = w.path("lastpoint.dat");
    queryfile::write(&mut std::fs::File::create(&file).unwrap(), &qs).unwrap();
    let q = QuerySpec {
        binary: w.bin("tsbs_run_queries_influx3"),
        target: InfluxDb3::new(Edition::Core).query_target(&ToolOptions {
            auth_token: Some(Secret::new("tok-Sekrit-1")),
            ..ToolOptions::default()
        }),
        file,
        database: "benchmark".into(),
        urls: vec![srv.url()],
        workers: 2,
        results_file: w.path("query-lastpoint-run-001.json"),
    };
    let cmd = tsbs::query_command(&q).unwrap();
    let (status, log) = w.run_raw(&cmd, &w.path("query.log"), None);
    let r = tsbs::query_outcome(&cmd.tool(), status, &log, &q.results_file).unwrap();
    assert_eq!((r.all.count, r.workers), (3, Some(2)));
    let asked: Vec<StubRequest> = srv
        .requests()
        .into_iter()
        .filter(|r| r.path() == "/api/v3/query_sql")
        .collect();
    assert_eq!(asked.len(), 3);
    assert!(asked
        .iter()
        .all(|r| r.header("authorization") == Some("Bearer tok-Sekrit-1")));
    for f in [w.path("query.log"), q.results_file.clone()] {
        assert!(
            !std::fs::read_to_string(&f).unwrap().contains("Sekrit"),
            "{}",
            f.display()
        );
    }
}

fn queries(w: &World, n: usize) -> PathBuf {
    let qs: Vec<Query> = (0..n)
        .map(|i| {
            Query::greptime(
                "Influx CPU over threshold, 1 host(s)",
                "d",
                &format!("SELECT * FROM cpu WHERE usage_user > 90.0 AND hostname = 'host_{i}'"),
                0,
                0,
            )
        })
        .collect();
    let p = w.path("high-cpu-1.dat");
    queryfile::write(&mut std::fs::File::create(&p).unwrap(), &qs).unwrap();
    p
}

#[test]
fn query_results_parse_aggregate_and_fail() {
    let w = World::new();
    let file = queries(&w, 6);
    let (srv, _) = greptime(Some("host_4"));
    let spec = |n: u32| QuerySpec {
        binary: w.bin("tsbs_run_queries_influx"),
        target: GreptimeDb.query_target(&ToolOptions::default()),
        file: file.clone(),
        database: "benchmark".into(),
        urls: vec![srv.url()],
        workers: 1,
        results_file: w.path(&format!("query-high-cpu-1-run-{n:03}.json")),
    };
    // queries 0..3 only (the 5th fails): use a smaller file for the passing runs
    let ok_file = {
        let qs =
            queryfile::read(std::io::BufReader::new(std::fs::File::open(&file).unwrap())).unwrap();
        let p = w.path("ok.dat");
        queryfile::write(&mut std::fs::File::create(&p).unwrap(), &qs[..4]).unwrap();
        p
    };
    let mut attempts = Vec::new();
    for (n, knob) in [
        (1, json!({})),
        (2, json!({"tsbs_run": {"results": "v0.1"}})),
    ] {
        w.knob(knob);
        let mut s = spec(n);
        s.file = ok_file.clone();
        let (failure, log) = w.run(
            &tsbs::query_command(&s).unwrap(),
            &w.path(&format!("q{n}.log")),
            None,
        );
        assert_eq!(failure, None, "{log}");
        let r = tsbs::query_result(&s.results_file, &log).unwrap();
        assert_eq!(r.all.count, 4);
        assert!(r.all.min_ms.is_some() && r.all.median_ms.is_some() && r.all.max_ms.is_some());
        assert!(r.all.stddev_ms.is_some() && r.all.sum_seconds.is_some());
        let l = &r.labels["Influx_CPU_over_threshold_1_host_s_"];
        assert_eq!(
            l.label.as_deref(),
            Some("Influx CPU over threshold, 1 host(s)")
        );
        if n == 1 {
            assert_eq!(r.source, ResultSource::ResultsFile);
            assert!(r.all.quantiles.is_some() && r.duration_millis.is_some());
        } else {
            assert_eq!(r.source, ResultSource::Log);
        }
        attempts.push(tsbs::QueryAttempt {
            database: "benchmark".into(),
            query_type: "high-cpu-1".into(),
            attempt: n,
            result: r,
        });
    }
    let agg = tsbs::aggregate(&attempts);
    assert_eq!(
        (agg.len(), agg[0].repetitions, agg[0].query_count),
        (1, 2, 8)
    );
    let expect = (attempts[0].result.all.mean_ms + attempts[1].result.all.mean_ms) / 2.0;
    assert!((agg[0].weighted_mean_ms - expect).abs() < 1e-9);

    // the whole file: query 4 answers 500 → the runner panics, recognised with the status
    w.knob(json!({}));
    let s = spec(3);
    let (failure, log) = w.run(&tsbs::query_command(&s).unwrap(), &w.path("q3.log"), None);
    let f = failure.expect("non-200");
    assert_eq!(
        (f.kind, f.http_status, f.exit_code),
        (FailureKind::HttpStatus, Some(500), Some(2))
    );
    assert!(
        f.reason.contains("did not return status 200 OK, code=500"),
        "{}",
        f.reason
    );
    let e = tsbs::query_result(&s.results_file, &log).unwrap_err();
    assert_eq!(e.message, "query log has no final run marker");

    // malformed results file: a failure, not a zero
    w.knob(json!({"tsbs_run": {"results": "malformed"}}));
    let mut s = spec(4);
    s.file = ok_file;
    let cmd = tsbs::query_command(&s).unwrap();
    let (status, log) = w.run_raw(&cmd, &w.path("q4.log"), None);
    let f = tsbs::query_outcome(&cmd.tool(), status, &log, &s.results_file).unwrap_err();
    assert_eq!((f.kind, f.exit_code), (FailureKind::Results, Some(0)));
    assert!(f.reason.contains("malformed result JSON"), "{}", f.reason);
}

#[test]
fn explain_command_produces_the_expected_files() {
    let w = World::new();
    let file = queries(&w, 4);
    let (srv, _) = greptime(None);
    let spec = ExplainSpec {
        binary: w.bin("tsbs_run_queries_influx"),
        file,
        database: "benchmark".into(),
        url: srv.url(),
        hot_runs: 2,
        results_dir: w.path("results/analyze/high-cpu-1/run-001"),
    };
    let cmd = tsbs::explain_command(&spec).unwrap();
    let (status, log) = w.run_raw(&cmd, &w.path("runner.log"), None);
    let checked = explain::outcome(&cmd.tool(), status, &log, &spec).unwrap();
    assert_eq!((checked.hot.len(), checked.metrics.all.count), (2, 3));
    assert_eq!(srv.requests().len(), 3);
    for (i, p) in std::iter::once(spec.cold_result())
        .chain(spec.hot_results())
        .enumerate()
    {
        let v: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(&p).unwrap()).unwrap();
        assert_eq!(v["query_index"], i);
        assert_eq!(
            v["executed_sql"],
            format!(
                "{}{}",
                tsbs::command::EXPLAIN_PREFIX,
                v["sql"].as_str().unwrap()
            )
        );
        assert!(v["response"].is_object());
    }
    let r = tsbs::query_result(&spec.metrics_file(), &log).unwrap();
    assert_eq!(r.all.count, 3);
}
