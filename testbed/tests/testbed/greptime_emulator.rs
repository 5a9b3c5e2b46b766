//! The greptime emulator as a process: CLI, HTTP, storage on disk, signals and knobs.

use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus};
use std::time::{Duration, Instant};

use nix::sys::signal::{kill, Signal};
use nix::unistd::Pid;
use serde_json::{json, Value};

fn bin() -> &'static str {
    env!("CARGO_BIN_EXE_testbed")
}

/// `n` distinct free ports (all held while choosing, so none is handed out twice).
fn free_ports(n: usize) -> Vec<u16> {
    let n = u16::try_from(n).unwrap();
    let p = testbed::ports::free_port_block(n);
    (p..p + n).collect()
}

fn greptime(version: &str, knobs: Option<&Path>) -> Command {
    let mut c = Command::new(bin());
    c.arg("emulate").arg("greptime");
    c.env_clear();
    c.env("TESTBED_EMULATED_VERSION", version);
    if let Some(k) = knobs {
        c.env("TESTBED_KNOBS", k);
    }
    c
}

pub(crate) struct Server {
    child: Child,
    port: u16,
    dir: PathBuf,
    out: PathBuf,
    err: PathBuf,
}

pub(crate) struct Opts<'a> {
    pub(crate) version: &'a str,
    pub(crate) knobs: Option<Value>,
    pub(crate) data: Option<PathBuf>,
    pub(crate) extra: Vec<String>,
    pub(crate) http_port: Option<u16>,
}

impl Default for Opts<'_> {
    fn default() -> Self {
        Opts {
            version: "1.2.0",
            knobs: None,
            data: None,
            extra: Vec::new(),
            http_port: None,
        }
    }
}

/// Starts `standalone start` in `dir` (data under `dir/data` unless `data` is given).
pub(crate) fn start(dir: &Path, o: Opts) -> Server {
    std::fs::create_dir_all(dir).unwrap();
    let knobs = dir.join("knobs.json");
    if let Some(k) = &o.knobs {
        std::fs::write(&knobs, k.to_string()).unwrap();
    } else {
        let _ = std::fs::remove_file(&knobs);
    }
    let ports = free_ports(4);
    let port = o.http_port.unwrap_or(ports[0]);
    let data = o.data.clone().unwrap_or_else(|| dir.join("data"));
    let n = std::fs::read_dir(dir).unwrap().count();
    let out = dir.join(format!("stdout-{n}.log"));
    let err = dir.join(format!("stderr-{n}.log"));
    let child = greptime(o.version, Some(&knobs))
        .args(["standalone", "start", "--http-addr"])
        .arg(format!("127.0.0.1:{port}"))
        .arg("--grpc-bind-addr")
        .arg(format!("127.0.0.1:{}", ports[1]))
        .arg("--mysql-addr")
        .arg(format!("127.0.0.1:{}", ports[2]))
        .arg("--postgres-addr")
        .arg(format!("127.0.0.1:{}", ports[3]))
        .arg("--influxdb-enable")
        .arg("--data-home")
        .arg(&data)
        .arg("--log-dir")
        .arg(dir.join("logs"))
        .args(&o.extra)
        .current_dir(dir)
        .stdout(std::fs::File::create(&out).unwrap())
        .stderr(std::fs::File::create(&err).unwrap())
        .spawn()
        .unwrap();
    Server {
        child,
        port,
        dir: dir.to_path_buf(),
        out,
        err,
    }
}

fn agent() -> ureq::Agent {
    ureq::AgentBuilder::new()
        .timeout(Duration::from_secs(10))
        .build()
}

/// (status, body)
fn call(req: ureq::Request, body: Option<&str>) -> (u16, String) {
    let r = match body {
        Some(b) => req.send_string(b),
        None => req.call(),
    };
    match r {
        Ok(resp) => (resp.status(), resp.into_string().unwrap_or_default()),
        Err(ureq::Error::Status(code, resp)) => (code, resp.into_string().unwrap_or_default()),
        Err(e) => panic!("transport error: {e}"),
    }
}

impl Server {
    pub(crate) fn url(&self, path: &str) -> String {
        format!("http://127.0.0.1:{}{path}", self.port)
    }

    /// POST /v1/sql like TSBS and the readiness probe (form body).
    fn sql(&self, db: Option<&str>, sql: &str) -> (u16, Value) {
        let mut url = self.url("/v1/sql");
        if let Some(d) = db {
            url.push_str(&format!("?db={d}"));
        }
        let body: String = url::form_urlencoded::Serializer::new(String::new())
            .append_pair("sql", sql)
            .finish();
        let (code, text) = call(
            agent()
                .post(&url)
                .set("Content-Type", "application/x-www-form-urlencoded"),
            Some(&body),
        );
        (
            code,
            serde_json::from_str(&text).unwrap_or_else(|_| json!({ "raw": text })),
        )
    }

    pub(crate) fn ok_sql(&self, db: Option<&str>, sql: &str) -> Value {
        let (code, v) = self.sql(db, sql);
        assert_eq!(code, 200, "{sql}: {v}");
        v
    }

    fn count(&self, db: &str, table: &str) -> u64 {
        self.ok_sql(Some(db), &format!("SELECT count(*) FROM {table}"))["output"][0]["records"]
            ["rows"][0][0]
            .as_u64()
            .unwrap()
    }

    pub(crate) fn write(&self, db: &str, body: &str) -> (u16, String) {
        call(
            agent()
                .post(&self.url(&format!("/v1/influxdb/write?consistency=all&db={db}")))
                .set("Content-Type", "text/plain"),
            Some(body),
        )
    }

    /// Waits (bounded) until `/health` answers 200.
    pub(crate) fn ready(&mut self) {
        let deadline = Instant::now() + Duration::from_secs(15);
        let a = ureq::AgentBuilder::new()
            .timeout(Duration::from_millis(500))
            .build();
        while Instant::now() < deadline {
            if let Some(st) = self.child.try_wait().unwrap() {
                panic!("exited during startup: {st}; {}", self.logs());
            }
            if let Ok(r) = a.get(&self.url("/health")).call() {
                if r.status() == 200 {
                    return;
                }
            }
            std::thread::sleep(Duration::from_millis(25));
        }
        panic!("not ready; {}", self.logs());
    }

    pub(crate) fn logs(&self) -> String {
        format!(
            "stdout:\n{}\nstderr:\n{}",
            std::fs::read_to_string(&self.out).unwrap_or_default(),
            std::fs::read_to_string(&self.err).unwrap_or_default()
        )
    }

    pub(crate) fn signal(&self, s: Signal) {
        kill(Pid::from_raw(self.child.id() as i32), s).unwrap();
    }

    pub(crate) fn wait_exit(&mut self, within: Duration) -> Option<ExitStatus> {
        let deadline = Instant::now() + within;
        while Instant::now() < deadline {
            if let Some(st) = self.child.try_wait().unwrap() {
                return Some(st);
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        None
    }

    pub(crate) fn stop(mut self) -> String {
        self.signal(Signal::SIGTERM);
        let st = self
            .wait_exit(Duration::from_secs(10))
            .expect("exits on SIGTERM");
        assert_eq!(st.code(), Some(0), "{}", self.logs());
        self.logs()
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// `n` cpu rows per host for `hosts` hosts, 10 s apart from `start_s`.
pub(crate) fn cpu_lines(hosts: usize, n: usize, start_s: i64) -> String {
    let mut s = String::new();
    for i in 0..n {
        for h in 0..hosts {
            s.push_str(&format!(
                "cpu,hostname=host_{h},region=eu-west-1 usage_user={}i,usage_system=2.5 {}\n",
                i % 100,
                (start_s + i as i64 * 10) * 1_000_000_000
            ));
        }
    }
    s
}

fn files_with_ext(dir: &Path, ext: &str) -> Vec<PathBuf> {
    let mut out = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).into_iter().flatten().flatten() {
            let p = e.path();
            if p.is_dir() {
                stack.push(p);
            } else if p.extension().is_some_and(|x| x == ext) {
                out.push(p);
            }
        }
    }
    out.sort();
    out
}

fn copy_dir(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for e in std::fs::read_dir(from).unwrap().flatten() {
        let p = e.path();
        let t = to.join(e.file_name());
        if p.is_dir() {
            copy_dir(&p, &t);
        } else {
            std::fs::copy(&p, &t).unwrap();
        }
    }
}

#[test]
fn version_output_has_the_real_shape() {
    let out = greptime("1.2.0", None).arg("--version").output().unwrap();
    assert_eq!(out.status.code(), Some(0));
    let text = String::from_utf8(out.stdout).unwrap();
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(lines[0], "GreptimeDB ");
    assert_eq!(lines[1], "branch: ");
    assert!(
        lines[2].starts_with("commit: ") && lines[2].len() == 48,
        "{text}"
    );
    assert_eq!(lines[3], "clean: true");
    assert_eq!(lines[4], "version: 1.2.0");
    let short = greptime("1.2.0", None).arg("-V").output().unwrap();
    assert_eq!(
        String::from_utf8(short.stdout).unwrap(),
        "GreptimeDB 1.2.0\n"
    );
    let old = greptime("v0.17.1", None).arg("--version").output().unwrap();
    let text = String::from_utf8(old.stdout).unwrap();
    assert!(text.starts_with("greptime \n"), "{text}");
    assert!(text.ends_with("version: 0.17.1\n"), "{text}");
    // No version in the environment: the wrapper is broken, say so.
    let mut c = Command::new(bin());
    c.args(["emulate", "greptime", "--version"]).env_clear();
    assert_eq!(c.output().unwrap().status.code(), Some(2));
}

#[test]
fn unknown_flags_and_config_keys_are_refused() {
    let out = greptime("1.2.0", None)
        .args(["standalone", "start", "--config", "x.toml"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8(out.stderr).unwrap();
    assert!(err.contains("unexpected argument '--config'"), "{err}");
    let dir = tempfile::tempdir().unwrap();
    let cfg = dir.path().join("c.toml");
    std::fs::write(&cfg, "[http]\naddr = \"127.0.0.1:1\"\nbogus = 1\n").unwrap();
    let out = greptime("1.2.0", None)
        .args(["standalone", "start", "-c"])
        .arg(&cfg)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8(out.stderr)
        .unwrap()
        .contains("unknown key `http.bogus`"));
    let out = greptime("1.2.0", None)
        .args(["standalone", "start", "--tls-mode", "require"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(!dir.path().join("greptimedb_data").exists());
}

#[test]
fn write_count_flush_compact_restart_and_copy() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("a");
    let mut s = start(&dir, Opts::default());
    s.ready();
    let dbs = s.ok_sql(None, "SHOW DATABASES");
    assert_eq!(
        dbs["output"][0]["records"]["rows"],
        json!([["greptime_private"], ["information_schema"], ["public"]])
    );
    assert_eq!(
        s.ok_sql(None, "CREATE DATABASE benchmark")["output"][0]["affectedrows"],
        1
    );
    // 3 hours of data for 5 hosts in two batches, the second overlapping the first by one
    // row per host (duplicates are not counted twice).
    let first = cpu_lines(5, 600, 1_451_606_400);
    assert_eq!(s.write("benchmark", &first).0, 204);
    assert_eq!(s.count("benchmark", "cpu"), 3000);
    let (code, _) = s.write("benchmark", &cpu_lines(5, 481, 1_451_606_400 + 5990));
    assert_eq!(code, 204);
    assert_eq!(s.count("benchmark", "cpu"), 3000 + 5 * 480);
    let data = dir.join("data");
    assert!(files_with_ext(&data, "parquet").is_empty());
    assert!(files_with_ext(&data.join("wal"), "raftlog").len() == 1);

    let flush = s.ok_sql(Some("benchmark"), "ADMIN flush_table('cpu')");
    assert_eq!(
        flush["output"][0]["records"]["schema"]["column_schemas"][0]["name"],
        "ADMIN flush_table('cpu')"
    );
    assert_eq!(flush["output"][0]["records"]["rows"], json!([[0]]));
    assert_eq!(files_with_ext(&data, "parquet").len(), 1);
    // No compaction has run: the real server has no in-flight gauge on /metrics yet.
    let metrics = || call(agent().get(&s.url("/metrics")), None).1;
    assert!(!metrics().contains("greptime_mito_inflight_compaction_count"));
    // A later batch that overlaps the first file in time (5 s off its rows: no duplicates).
    assert!(
        s.write("benchmark", &cpu_lines(5, 10, 1_451_606_400 + 5005))
            .0
            == 204
    );
    s.ok_sql(Some("benchmark"), "admin FLUSH_TABLE('cpu');");
    // The flush schedules an automatic TWCS, which merges the two overlapping files of its
    // window (two files that do not overlap stay: the real picker waits for 4).
    let deadline = Instant::now() + Duration::from_secs(10);
    while !s.logs().contains("Successfully compacted region") {
        assert!(Instant::now() < deadline, "{}", s.logs());
        std::thread::sleep(Duration::from_millis(20));
    }
    assert!(s.logs().contains("waiter_num: 0"), "{}", s.logs());
    assert!(
        s.logs().contains("inferring from files: 43200"),
        "{}",
        s.logs()
    );
    assert_eq!(files_with_ext(&data, "parquet").len(), 1);
    assert!(
        metrics().contains("\ngreptime_mito_inflight_compaction_count 0\n"),
        "{}",
        metrics()
    );

    let stats_sql = "SELECT sst_num, sst_size, region_rows, memtable_size FROM information_schema.region_statistics WHERE table_id = 1024";
    let st = s.ok_sql(Some("benchmark"), stats_sql);
    let row = &st["output"][0]["records"]["rows"][0];
    assert_eq!(row[0], 1);
    assert_eq!(row[2], 5450);
    assert_eq!(row[3], 0);
    let tid = s.ok_sql(
        None,
        "SELECT table_id FROM information_schema.tables WHERE table_schema = 'benchmark' AND table_name = 'cpu'",
    );
    assert_eq!(tid["output"][0]["records"]["rows"], json!([[1024]]));

    let c = s.ok_sql(
        Some("benchmark"),
        "ADMIN COMPACT_TABLE('cpu', 'swcs', 'window=7200')",
    );
    assert_eq!(c["output"][0]["records"]["rows"], json!([[0]]));
    // 1451606400 is 2016-01-01T00:00Z; 10800 s of data → windows [0,2h) and [2h,4h).
    let ssts = files_with_ext(&data, "parquet");
    assert_eq!(ssts.len(), 2, "{ssts:?}");
    let st = s.ok_sql(Some("benchmark"), stats_sql);
    assert_eq!(st["output"][0]["records"]["rows"][0][0], 2);
    assert_eq!(s.count("benchmark", "cpu"), 5450);
    let logs = s.stop();
    assert!(
        logs.contains("HTTP server is bound to 127.0.0.1:"),
        "{logs}"
    );
    assert!(
        logs.contains(
            "INFO mito2::compaction::task: Compacted SST files, region_id: 4398046511104(1024, 0)"
        ) && logs.contains("window: Some(7200)"),
        "{logs}"
    );
    assert!(rolled_logs(&dir.join("logs"), "greptimedb.").contains("Compacted SST files"));

    // Restart on the same data, then on a copy of it.
    let mut s = start(&dir, Opts::default());
    s.ready();
    assert_eq!(s.count("benchmark", "cpu"), 5450);
    assert!(
        s.write("benchmark", &cpu_lines(1, 1, 1_451_606_400 + 20000))
            .0
            == 204
    );
    drop(s); // SIGKILL: the unflushed row survives in the WAL
    let copy = tmp.path().join("b");
    copy_dir(&data, &copy.join("data"));
    let mut s = start(&copy, Opts::default());
    s.ready();
    assert_eq!(s.count("benchmark", "cpu"), 5451);
    let tables = s.ok_sql(Some("benchmark"), "SHOW TABLES");
    assert_eq!(tables["output"][0]["records"]["rows"], json!([["cpu"]]));
    assert_eq!(
        s.ok_sql(None, "DROP DATABASE benchmark")["output"][0]["affectedrows"],
        0
    );
    assert!(files_with_ext(&copy.join("data"), "parquet").is_empty());
    s.stop();
}

#[test]
fn compaction_window_option_depends_on_version() {
    let tmp = tempfile::tempdir().unwrap();
    let mut s = start(
        tmp.path(),
        Opts {
            version: "0.17.1",
            ..Default::default()
        },
    );
    s.ready();
    s.ok_sql(None, "CREATE DATABASE benchmark");
    assert_eq!(s.write("benchmark", &cpu_lines(2, 3, 1_451_606_400)).0, 204);
    let (code, v) = s.sql(
        Some("benchmark"),
        "ADMIN compact_table('cpu', 'swcs', 'window=7200')",
    );
    assert_eq!(code, 400);
    assert_eq!(v["code"], 1004);
    assert_eq!(
        v["error"],
        "Compact window is expected to be a valid number, provided: window=7200"
    );
    s.ok_sql(
        Some("benchmark"),
        "ADMIN compact_table('cpu', 'swcs', '7200')",
    );
    let (code, v) = s.sql(
        Some("benchmark"),
        "SELECT * FROM information_schema.region_statistics",
    );
    assert_eq!(code, 200);
    let cols = v["output"][0]["records"]["schema"]["column_schemas"]
        .as_array()
        .unwrap()
        .clone();
    assert_eq!(cols.len(), 11, "0.x has no sst_num: {v}");
    s.stop();

    let tmp = tempfile::tempdir().unwrap();
    let mut s = start(tmp.path(), Opts::default());
    s.ready();
    s.ok_sql(None, "CREATE DATABASE benchmark");
    assert_eq!(s.write("benchmark", &cpu_lines(2, 3, 1_451_606_400)).0, 204);
    for (opt, msg) in [
        ("window=7200,foo=1", "Unknown parameter: foo"),
        ("window", "Invalid key-value pair: window"),
    ] {
        let (code, v) = s.sql(
            Some("benchmark"),
            &format!("ADMIN compact_table('cpu', 'swcs', '{opt}')"),
        );
        assert_eq!((code, v["error"].as_str().unwrap()), (400, msg));
    }
    s.ok_sql(
        Some("benchmark"),
        "ADMIN compact_table('cpu', 'swcs', 'window=7200,parallelism=2')",
    );
    let (code, v) = s.sql(Some("benchmark"), "ADMIN compact_table('nope')");
    assert_eq!((code, v["code"].clone()), (400, json!(4001)));
    s.stop();
}

#[test]
fn http_errors_have_the_real_shapes() {
    let tmp = tempfile::tempdir().unwrap();
    let cfg = tmp.path().join("c.toml");
    std::fs::write(&cfg, "[http]\nbody_limit = \"1KB\"\n").unwrap();
    let mut s = start(
        tmp.path(),
        Opts {
            extra: vec!["-c".into(), cfg.to_string_lossy().into()],
            ..Default::default()
        },
    );
    s.ready();
    let (code, v) = s.sql(Some("nosuch"), "SHOW DATABASES");
    assert_eq!(code, 400);
    assert_eq!(v["code"], 4004);
    assert_eq!(v["error"], "Database not found: nosuch");
    let (code, v) = s.sql(None, "SELEC 1");
    assert_eq!((code, v["code"].clone()), (400, json!(2000)));
    let (code, v) = s.sql(None, "SELECT count(*) FROM cpu");
    assert_eq!((code, v["code"].clone()), (400, json!(4001)));
    let (code, v) = s.sql(None, "CREATE DATABASE public");
    assert_eq!((code, v["code"].clone()), (400, json!(1004)));
    let (code, v) = s.sql(None, "DROP DATABASE nosuch");
    assert_eq!((code, v["code"].clone()), (400, json!(4004)));
    let (code, body) = call(
        agent()
            .post(&s.url("/v1/sql"))
            .set("Content-Type", "application/x-www-form-urlencoded"),
        Some(""),
    );
    assert_eq!(code, 400);
    let v: Value = serde_json::from_str(&body).unwrap();
    assert_eq!(
        (v["code"].clone(), v["error"].clone()),
        (json!(1004), json!("sql parameter is required."))
    );
    let (code, _) = call(
        agent()
            .post(&s.url("/v1/sql"))
            .set("Content-Type", "application/json"),
        Some("{}"),
    );
    assert_eq!(code, 415);
    // TSBS query runner: GET-style query string on a POST with an empty form body.
    let (code, body) = call(
        agent()
            .post(&s.url("/v1/sql?sql=SHOW+DATABASES&db=public"))
            .set("Content-Type", "application/x-www-form-urlencoded"),
        Some(""),
    );
    assert_eq!(code, 200, "{body}");
    // Writes: no auto-created database, malformed lines, body limit, precision.
    let (code, body) = s.write("nosuch", "cpu,h=a x=1 1\n");
    assert_eq!(code, 400);
    assert_eq!(
        serde_json::from_str::<Value>(&body).unwrap()["error"],
        "Failed to find schema, schema info: nosuch"
    );
    assert_eq!(s.write("public", "cpu x=abc 1\n").0, 400);
    assert_eq!(s.write("public", &"cpu,h=a x=1 1\n".repeat(100)).0, 413);
    let (code, _) = call(
        agent().post(&s.url("/v1/influxdb/write?db=public&precision=ms")),
        Some("cpu,h=a x=1 1\n"),
    );
    assert_eq!(code, 204);
    let (code, _) = call(
        agent().post(&s.url("/v1/influxdb/api/v2/write?bucket=public&precision=s")),
        Some("cpu,h=b x=1 1\n"),
    );
    assert_eq!(code, 204);
    let (code, _) = call(
        agent().post(&s.url("/v1/influxdb/write?db=public&precision=x")),
        Some("cpu,h=a x=1 1\n"),
    );
    assert_eq!(code, 400);
    assert_eq!(s.count("public", "cpu"), 2);
    // Column types are fixed by the first write, within a batch and across batches.
    assert_eq!(s.write("public", "cpu,h=c x=1i 5\n").0, 400);
    assert_eq!(
        s.write("public", "mem,h=c y=1i 5\nmem,h=c y=1.5 6\n").0,
        400
    );
    let (code, _) = call(agent().get(&s.url("/nope")), None);
    assert_eq!(code, 404);
    s.stop();
}

#[test]
fn port_taken_and_locked_data_home_fail_fast() {
    let tmp = tempfile::tempdir().unwrap();
    let taken = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = taken.local_addr().unwrap().port();
    let mut s = start(
        &tmp.path().join("a"),
        Opts {
            http_port: Some(port),
            ..Default::default()
        },
    );
    let st = s.wait_exit(Duration::from_secs(10)).expect("exits");
    assert_eq!(st.code(), Some(1));
    assert!(s.logs().contains("Address already in use"), "{}", s.logs());
    drop(taken);

    let data = tmp.path().join("shared-data");
    let mut first = start(
        &tmp.path().join("b"),
        Opts {
            data: Some(data.clone()),
            ..Default::default()
        },
    );
    first.ready();
    let mut second = start(
        &tmp.path().join("c"),
        Opts {
            data: Some(data),
            ..Default::default()
        },
    );
    let st = second.wait_exit(Duration::from_secs(10)).expect("exits");
    assert_eq!(st.code(), Some(1));
    assert!(second.logs().contains("held by another process"));
    first.stop();
}

#[test]
fn startup_knobs() {
    let tmp = tempfile::tempdir().unwrap();
    // Slow start: nothing listens during the delay, then it serves.
    let mut s = start(
        &tmp.path().join("slow"),
        Opts {
            knobs: Some(json!({"start_delay_ms": 600})),
            ..Default::default()
        },
    );
    std::thread::sleep(Duration::from_millis(100));
    assert!(std::net::TcpStream::connect(("127.0.0.1", s.port)).is_err());
    s.ready();
    s.stop();
    // Exit during start.
    let mut s = start(
        &tmp.path().join("exit"),
        Opts {
            knobs: Some(json!({"exit_during_start": 7})),
            ..Default::default()
        },
    );
    assert_eq!(
        s.wait_exit(Duration::from_secs(10)).unwrap().code(),
        Some(7)
    );
    // Never ready: 503, or no answer at all.
    let s = start(
        &tmp.path().join("503"),
        Opts {
            knobs: Some(json!({"never_ready": "503"})),
            ..Default::default()
        },
    );
    let deadline = Instant::now() + Duration::from_secs(10);
    let code = loop {
        match ureq::get(&s.url("/health")).call() {
            Err(ureq::Error::Status(c, _)) => break c,
            Ok(r) => break r.status(),
            Err(_) if Instant::now() < deadline => std::thread::sleep(Duration::from_millis(25)),
            Err(e) => panic!("{e}"),
        }
    };
    assert_eq!(code, 503);
    assert_eq!(s.sql(None, "SHOW DATABASES").0, 503);
    s.stop();
    let s = start(
        &tmp.path().join("silent"),
        Opts {
            knobs: Some(json!({"never_ready": "no_answer"})),
            ..Default::default()
        },
    );
    let deadline = Instant::now() + Duration::from_secs(10);
    while std::net::TcpStream::connect(("127.0.0.1", s.port)).is_err() {
        assert!(Instant::now() < deadline);
        std::thread::sleep(Duration::from_millis(25));
    }
    let quick = ureq::AgentBuilder::new()
        .timeout(Duration::from_millis(300))
        .build();
    assert!(matches!(
        quick.get(&s.url("/health")).call(),
        Err(ureq::Error::Transport(_))
    ));
    s.stop();
    // Wrong version and a failing --version.
    let knobs = tmp.path().join("v.json");
    std::fs::write(&knobs, r#"{"wrong_version":"9.9.9","version_exit_code":3}"#).unwrap();
    let out = greptime("1.2.0", Some(&knobs)).arg("-V").output().unwrap();
    assert_eq!(out.status.code(), Some(3));
    assert_eq!(String::from_utf8(out.stdout).unwrap(), "GreptimeDB 9.9.9\n");
    std::fs::write(&knobs, r#"{"no_such_knob":1}"#).unwrap();
    let out = greptime("1.2.0", Some(&knobs)).arg("-V").output().unwrap();
    assert_eq!(out.status.code(), Some(2));
}

#[test]
fn serving_knobs_crash_hang_and_logs() {
    let tmp = tempfile::tempdir().unwrap();
    // Crash after N requests (readiness probes count).
    let mut s = start(
        &tmp.path().join("crash"),
        Opts {
            knobs: Some(json!({"crash_after_requests": 3, "crash_exit_code": 42})),
            ..Default::default()
        },
    );
    s.ready();
    let before = s.child.try_wait().unwrap();
    assert!(before.is_none());
    let _ = ureq::get(&s.url("/health")).call();
    let _ = ureq::get(&s.url("/health")).call();
    let _ = ureq::get(&s.url("/health")).call();
    let st = s.wait_exit(Duration::from_secs(10)).expect("crashed");
    assert_eq!(st.code(), Some(42));
    assert!(s.logs().contains("panicked"));
    // Crash after a time.
    let mut s = start(
        &tmp.path().join("crash-ms"),
        Opts {
            knobs: Some(json!({"crash_after_ms": 200})),
            ..Default::default()
        },
    );
    let st = s.wait_exit(Duration::from_secs(10)).expect("crashed");
    assert_eq!(st.code(), Some(101));
    // SIGTERM ignored: still alive, SIGKILL needed.
    let mut s = start(
        &tmp.path().join("hang"),
        Opts {
            knobs: Some(json!({
                "ignore_sigterm": true,
                "inject_logs": [
                    {"level": "WARN", "message": "injected warning"},
                    {"level": "ERROR", "message": "injected error"},
                    {"level": "PANIC", "message": "injected panic"}
                ]
            })),
            ..Default::default()
        },
    );
    s.ready();
    s.signal(Signal::SIGTERM);
    assert!(s.wait_exit(Duration::from_millis(400)).is_none());
    s.signal(Signal::SIGKILL);
    assert!(s.wait_exit(Duration::from_secs(10)).is_some());
    let logs = s.logs();
    assert!(
        logs.contains(" WARN testbed::injected: injected warning"),
        "{logs}"
    );
    assert!(
        logs.contains("ERROR testbed::injected: injected error"),
        "{logs}"
    );
    assert!(logs.contains("panicked at") && logs.contains("injected panic"));
    let text = rolled_logs(&s.dir.join("logs"), "greptimedb-err.");
    assert!(text.contains("injected error") && !text.contains("HTTP server is bound"));
}

#[test]
fn sql_and_write_knobs() {
    let tmp = tempfile::tempdir().unwrap();
    let mut s = start(
        tmp.path(),
        Opts {
            knobs: Some(json!({
                "fail_sql": [{"contains": "compact_table", "code": 1003, "error": "compaction failed: disk full"}],
                "fail_writes_after_rows": 10,
                "drop_rows": 2,
                "query_delay_ms": 150
            })),
            ..Default::default()
        },
    );
    s.ready();
    s.ok_sql(None, "CREATE DATABASE benchmark");
    assert_eq!(s.write("benchmark", &cpu_lines(4, 3, 1_451_606_400)).0, 204);
    assert_eq!(s.count("benchmark", "cpu"), 10);
    let (code, body) = s.write("benchmark", &cpu_lines(1, 1, 1_451_700_000));
    assert_eq!(code, 500, "{body}");
    let (code, v) = s.sql(
        Some("benchmark"),
        "ADMIN compact_table('cpu', 'swcs', 'window=7200')",
    );
    assert_eq!(code, 500);
    assert_eq!(v["code"], 1003);
    assert_eq!(v["error"], "compaction failed: disk full");
    let t = Instant::now();
    s.ok_sql(
        Some("benchmark"),
        "SELECT max(usage_user) FROM cpu WHERE hostname = 'host_1'",
    );
    assert!(t.elapsed() >= Duration::from_millis(150));
    s.stop();
}

/// Loads `n` flushed files (one per call) of 2 hosts × 720 rows (2 h) each into `benchmark`.
pub(crate) fn flushed_files(s: &Server, n: usize) {
    s.ok_sql(None, "CREATE DATABASE benchmark");
    for i in 0..n {
        s.write(
            "benchmark",
            &cpu_lines(2, 720, 1_451_606_400 + i as i64 * 7200),
        );
        s.ok_sql(Some("benchmark"), "ADMIN flush_table('cpu')");
    }
}

#[test]
fn compaction_blocks_in_proportion_and_nothing_to_compact_answers_at_once() {
    let tmp = tempfile::tempdir().unwrap();
    let mut s = start(
        tmp.path(),
        Opts {
            knobs: Some(json!({"compaction_ms_per_mib": 60000.0})),
            ..Default::default()
        },
    );
    s.ready();
    flushed_files(&s, 1);
    let bytes: u64 = files_with_ext(&tmp.path().join("data"), "parquet")
        .iter()
        .map(|p| std::fs::metadata(p).unwrap().len())
        .sum();
    // One file of one window: TWCS has no plan: 0 at once, and no completion line.
    let t = Instant::now();
    let v = s.ok_sql(Some("benchmark"), "ADMIN COMPACT_TABLE('cpu', 'twcs')");
    assert_eq!(v["output"][0]["records"]["rows"], json!([[0]]));
    assert!(t.elapsed() < Duration::from_secs(2));
    let logs = s.logs();
    assert!(
        logs.contains("Successfully scheduled compaction task for region: 4398046511104(1024, 0)"),
        "{logs}"
    );
    assert!(
        !logs.contains("Compacted SST files") && !logs.contains("No files to compact"),
        "{logs}"
    );
    // SWCS always rewrites: it blocks for the input size × windows × the knob.
    let expect = Duration::from_secs_f64(bytes as f64 / (1 << 20) as f64 * 60.0);
    let t = Instant::now();
    s.ok_sql(
        Some("benchmark"),
        "ADMIN COMPACT_TABLE('cpu', 'swcs', 'window=3600')",
    );
    let took = t.elapsed();
    assert!(took >= expect.mul_f64(0.9), "{took:?} < {expect:?}");
    let logs = s.logs();
    let done = logs.find("Compacted SST files").expect("completion line");
    assert!(
        logs[done..].contains("window: Some(3600), waiter_num: 1"),
        "{logs}"
    );
    assert!(
        logs.contains("compact_options: StrictWindow { window_seconds: 3600 }, parallelism: 1"),
        "{logs}"
    );
    assert_eq!(
        logs.matches("mito2::compaction::compactor").count(),
        2,
        "{logs}"
    );
    // parallelism=2 halves it; twcs with a window is refused as the real server does.
    let t = Instant::now();
    s.ok_sql(
        Some("benchmark"),
        "ADMIN COMPACT_TABLE('cpu', 'swcs', 'window=3600,parallelism=2')",
    );
    assert!(
        t.elapsed() < took.mul_f64(0.8),
        "{:?} vs {took:?}",
        t.elapsed()
    );
    let (code, v) = s.sql(
        Some("benchmark"),
        "ADMIN COMPACT_TABLE('cpu', 'twcs', 'window=7200')",
    );
    assert_eq!((code, v["code"].clone()), (500, json!(1002)), "{v}");
    // Real layout: the metadata store is a raftlog, not a JSON file.
    let meta = files_with_ext(&tmp.path().join("data/metadata"), "raftlog");
    assert_eq!(meta.len(), 1);
    assert!(!tmp.path().join("data/metadata/catalog.json").exists());
    s.stop();
}

#[test]
fn sigterm_drains_a_running_compaction_then_fails_it_and_leaves_orphans() {
    let tmp = tempfile::tempdir().unwrap();
    let mut s = start(
        tmp.path(),
        Opts {
            knobs: Some(json!({"compaction_ms_per_mib": 6000.0})),
            ..Default::default()
        },
    );
    s.ready();
    flushed_files(&s, 2);
    let deadline = Instant::now() + Duration::from_secs(20);
    let url = s.url("/v1/sql?db=benchmark");
    let client = std::thread::spawn(move || {
        let t = Instant::now();
        let r = call(
            agent()
                .post(&url)
                .set("Content-Type", "application/x-www-form-urlencoded"),
            Some("sql=ADMIN%20COMPACT_TABLE('cpu',%20'swcs',%20'window=3600')"),
        );
        (r, t.elapsed())
    });
    while !s
        .logs()
        .contains("Compaction window for region: 4398046511104(1024, 0) is 3600")
    {
        assert!(Instant::now() < deadline, "{}", s.logs());
        std::thread::sleep(Duration::from_millis(10));
    }
    let t = Instant::now();
    s.signal(Signal::SIGTERM);
    let st = s
        .wait_exit(Duration::from_secs(30))
        .expect("exits by itself");
    let drained = t.elapsed();
    assert_eq!(st.code(), Some(0));
    assert!(drained > Duration::from_millis(300), "{drained:?}");
    let ((code, body), _) = client.join().unwrap();
    assert_eq!(code, 500, "{body}");
    assert!(body.contains("is stopped"), "{body}");
    let logs = s.logs();
    let line = logs.find("waiter_num: 1").expect("merge finished");
    assert!(logs[line..].contains("Failed to update manifest"), "{logs}");
    // The outputs stay on disk, the manifest does not list them.
    let mut s = start(tmp.path(), Opts::default());
    s.ready();
    let st = s.ok_sql(
        Some("benchmark"),
        "SELECT sst_num FROM information_schema.region_statistics WHERE table_id = 1024",
    );
    let listed = st["output"][0]["records"]["rows"][0][0].as_u64().unwrap();
    let on_disk = files_with_ext(&tmp.path().join("data/data"), "parquet").len() as u64;
    assert!(on_disk > listed, "{on_disk} files, {listed} listed");
    s.stop();
}

#[test]
fn startup_replays_the_wal_in_proportion() {
    let tmp = tempfile::tempdir().unwrap();
    let knobs = json!({"wal_replay_ms_per_mib": 4000.0});
    let mut s = start(
        tmp.path(),
        Opts {
            knobs: Some(knobs.clone()),
            ..Default::default()
        },
    );
    s.ready();
    s.ok_sql(None, "CREATE DATABASE benchmark");
    s.write("benchmark", &cpu_lines(10, 2000, 1_451_606_400));
    s.stop();
    let wal: u64 = files_with_ext(&tmp.path().join("data/wal"), "raftlog")
        .iter()
        .map(|p| std::fs::metadata(p).unwrap().len())
        .sum();
    let expect = Duration::from_secs_f64(wal as f64 / (1 << 20) as f64 * 4.0);
    let t = Instant::now();
    let mut s = start(
        tmp.path(),
        Opts {
            knobs: Some(knobs),
            ..Default::default()
        },
    );
    s.ready();
    assert!(
        t.elapsed() >= expect.mul_f64(0.9),
        "{:?} < {expect:?}",
        t.elapsed()
    );
    assert_eq!(s.count("benchmark", "cpu"), 20000);
    s.stop();
}

#[test]
fn explain_analyze_and_tsbs_queries() {
    let tmp = tempfile::tempdir().unwrap();
    let mut s = start(tmp.path(), Opts::default());
    s.ready();
    s.ok_sql(None, "CREATE DATABASE benchmark");
    s.write("benchmark", &cpu_lines(3, 5, 1_451_606_400));
    let q = "SELECT max(usage_user), date_trunc('minute', greptime_timestamp) from cpu where (hostname = 'host_1') and greptime_timestamp >= '2016-01-01T00:00:00Z' and greptime_timestamp < '2016-01-01T01:00:00Z' group by date_trunc('minute', greptime_timestamp)";
    let v = s.ok_sql(Some("benchmark"), q);
    let cols = &v["output"][0]["records"]["schema"]["column_schemas"];
    assert_eq!(cols[0]["data_type"], "Int64");
    assert_eq!(cols[0]["name"], "max(cpu.usage_user)");
    assert_eq!(
        cols[1]["name"],
        "date_trunc(Utf8(\"minute\"),cpu.greptime_timestamp)"
    );
    assert_eq!(cols[1]["data_type"], "TimestampNanosecond");
    let v = s.ok_sql(Some("benchmark"), &format!("EXPLAIN ANALYZE VERBOSE {q}"));
    let rec = &v["output"][0]["records"];
    let names: Vec<&str> = rec["schema"]["column_schemas"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["name"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["stage", "node", "plan"]);
    assert!(rec["rows"][1][2]
        .as_str()
        .unwrap()
        .contains("output_rows: 15"));
    let (code, v) = s.sql(
        Some("benchmark"),
        "EXPLAIN ANALYZE VERBOSE SELECT * FROM nope",
    );
    assert_eq!((code, v["code"].clone()), (400, json!(4001)));
    // One query of each TSBS greptime shape (tsbs_generate_queries --format=greptime).
    let window = "greptime_timestamp >= '2016-01-01T00:00:00Z' and greptime_timestamp < '2016-01-01T12:00:00Z'";
    for q in [
        format!("SELECT max(usage_user), max(usage_system), date_trunc('minute', greptime_timestamp) from cpu where (hostname = 'host_1' or hostname = 'host_2') and {window} group by date_trunc('minute', greptime_timestamp)"),
        "SELECT max(usage_user), date_trunc('minute', greptime_timestamp) from cpu WHERE greptime_timestamp < '2016-01-01T01:00:00Z' group by date_trunc('minute', greptime_timestamp) order by date_trunc('minute', greptime_timestamp) desc limit 5".to_string(),
        format!("SELECT avg(usage_user), avg(usage_system), date_trunc('hour', greptime_timestamp) from cpu where {window} group by date_trunc('hour', greptime_timestamp),hostname"),
        format!("SELECT * from cpu where usage_user > 90.0 and (hostname = 'host_0') and {window}"),
        format!("SELECT * from cpu where usage_user > 90.0  and {window}"),
        "select last_value(hostname order by greptime_timestamp), last_value(region order by greptime_timestamp), last_value(usage_user order by greptime_timestamp) from cpu group by hostname".to_string(),
    ] {
        let v = s.ok_sql(Some("benchmark"), &q);
        assert!(v["output"][0]["records"]["schema"]["column_schemas"].as_array().unwrap().len() >= 2, "{q}: {v}");
        s.ok_sql(Some("benchmark"), &format!("EXPLAIN ANALYZE VERBOSE {q}"));
    }
    let v = s.ok_sql(
        Some("benchmark"),
        "SELECT * from cpu where usage_user > 90.0",
    );
    let names: Vec<&str> = v["output"][0]["records"]["schema"]["column_schemas"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["name"].as_str().unwrap())
        .collect();
    assert_eq!(
        names,
        [
            "hostname",
            "region",
            "greptime_timestamp",
            "usage_user",
            "usage_system"
        ]
    );
    // Answers are computed from the stored rows (5 rows per host, 10 s apart, usage_user
    // 0..4): the real names and types, timestamps as integer nanoseconds.
    let v = s.ok_sql(
        Some("benchmark"),
        "SELECT count(*) FROM cpu WHERE hostname = 'host_1'",
    );
    assert_eq!(v["output"][0]["records"]["rows"], json!([[5]]));
    let v = s.ok_sql(Some("benchmark"), q);
    assert_eq!(
        v["output"][0]["records"]["rows"],
        json!([[4, 1_451_606_400_000_000_000i64]])
    );
    let v = s.ok_sql(
        Some("benchmark"),
        "select last_value(hostname order by greptime_timestamp), last_value(region order by greptime_timestamp), last_value(usage_user order by greptime_timestamp) from cpu group by hostname",
    );
    let rec = &v["output"][0]["records"];
    assert_eq!(
        rec["schema"]["column_schemas"][1],
        json!({"name": "last_value(cpu.region) ORDER BY [cpu.greptime_timestamp ASC NULLS LAST]", "data_type": "String"})
    );
    let mut rows: Vec<Value> = rec["rows"].as_array().unwrap().clone();
    rows.sort_by_key(|r| r[0].as_str().unwrap().to_string());
    assert_eq!(
        rows,
        [
            json!(["host_0", "eu-west-1", 4]),
            json!(["host_1", "eu-west-1", 4]),
            json!(["host_2", "eu-west-1", 4])
        ]
    );
    let (code, v) = s.sql(
        Some("benchmark"),
        "SELECT max(usage_user) FROM cpu WHERE usage_nope > 90.0",
    );
    assert_eq!((code, v["code"].clone()), (400, json!(3000)));
    s.stop();
}

#[test]
fn auto_flush_and_wal_purge_keep_every_row() {
    let tmp = tempfile::tempdir().unwrap();
    let knobs = json!({"auto_flush_bytes": 2000, "wal_purge_threshold_bytes": 1});
    let mut s = start(
        tmp.path(),
        Opts {
            knobs: Some(knobs.clone()),
            ..Default::default()
        },
    );
    s.ready();
    s.ok_sql(None, "CREATE DATABASE benchmark");
    for i in 0..3 {
        let (code, _) = s.write("benchmark", &cpu_lines(4, 10, 1_451_606_400 + i * 1000));
        assert_eq!(code, 204);
    }
    assert_eq!(s.count("benchmark", "cpu"), 120);
    let data = tmp.path().join("data");
    // Three engine-full flushes (their automatic compactions may merge the files).
    assert_eq!(
        s.logs().matches("reason: EngineFull").count(),
        3,
        "{}",
        s.logs()
    );
    assert!(!files_with_ext(&data, "parquet").is_empty());
    let wal = files_with_ext(&data.join("wal"), "raftlog");
    assert_eq!(std::fs::metadata(&wal[0]).unwrap().len(), 0, "purged");
    s.stop();
    let mut s = start(
        tmp.path(),
        Opts {
            knobs: Some(knobs),
            ..Default::default()
        },
    );
    s.ready();
    assert_eq!(s.count("benchmark", "cpu"), 120);
    // Writing the same rows again adds nothing.
    assert_eq!(
        s.write("benchmark", &cpu_lines(4, 10, 1_451_606_400)).0,
        204
    );
    assert_eq!(s.count("benchmark", "cpu"), 120);
    s.stop();
}

/// The text of every hourly file a log was rolled into (`<prefix><YYYY-MM-DD-HH>`), oldest
/// first: a test that crosses an hour boundary finds its lines in two files, as on the real
/// server.
fn rolled_logs(dir: &std::path::Path, prefix: &str) -> String {
    let mut files: Vec<_> = std::fs::read_dir(dir)
        .unwrap()
        .flatten()
        .filter(|e| e.file_name().to_string_lossy().starts_with(prefix))
        .map(|e| e.path())
        .collect();
    assert!(!files.is_empty(), "no {prefix}* file in {}", dir.display());
    files.sort();
    files
        .iter()
        .map(|f| std::fs::read_to_string(f).unwrap())
        .collect()
}

/// A table created with `PARTITION ON COLUMNS`: rows go to the region of their rule, each
/// region counts, flushes and compacts on its own, and the catalog keeps the rules across a
/// restart. Rules that leave a gap or overlap are refused with the real checker's words.
#[test]
fn partitioned_table_regions_rows_and_show_create() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("p");
    let mut s = start(&dir, Opts::default());
    s.ready();
    s.ok_sql(None, "CREATE DATABASE scratch");
    assert_eq!(s.write("scratch", &cpu_lines(1, 1, 1_451_606_400)).0, 204);
    let auto = s.ok_sql(Some("scratch"), "SHOW CREATE TABLE cpu");
    let auto = auto["output"][0]["records"]["rows"][0][1]
        .as_str()
        .unwrap()
        .to_string();
    assert_eq!(
        auto,
        "CREATE TABLE IF NOT EXISTS \"cpu\" (\n  \"hostname\" STRING NULL,\n  \"region\" STRING NULL,\n  \"usage_user\" BIGINT NULL,\n  \"usage_system\" DOUBLE NULL,\n  \"greptime_timestamp\" TIMESTAMP(9) NOT NULL,\n  TIME INDEX (\"greptime_timestamp\"),\n  PRIMARY KEY (\"hostname\", \"region\")\n)\n\nENGINE=mito\nWITH(\n  'comment' = 'Created on insertion',\n  merge_mode = 'last_non_null'\n)"
    );
    s.ok_sql(None, "CREATE DATABASE benchmark");
    let gap = auto.replacen(
        ")\n\nENGINE",
        ")\nPARTITION ON COLUMNS (\"hostname\") (\n  hostname < 'host_2',\n  hostname > 'host_2'\n)\nENGINE",
        1,
    );
    let (code, v) = s.sql(Some("benchmark"), &gap);
    assert_eq!((code, &v["code"]), (400, &json!(1004)), "{v}");
    assert_eq!(v["error"], "Checkpoint `hostname=host_2` is not covered");
    let ddl = auto.replacen(
        ")\n\nENGINE",
        ")\nPARTITION ON COLUMNS (\"hostname\") (\n  hostname < 'host_2',\n  hostname >= 'host_2' AND hostname < 'host_4',\n  hostname >= 'host_4'\n)\nENGINE",
        1,
    );
    s.ok_sql(Some("benchmark"), &ddl.replacen(" IF NOT EXISTS", "", 1));
    let (code, v) = s.sql(Some("benchmark"), &ddl.replacen(" IF NOT EXISTS", "", 1));
    assert_eq!(code, 400, "an existing table is refused: {v}");
    let shown = s.ok_sql(Some("benchmark"), "SHOW CREATE TABLE cpu");
    // Its option keys print bare, however they were written (a real v1.0.2 does so).
    assert_eq!(
        shown["output"][0]["records"]["rows"][0][1],
        json!(ddl.replace("  'comment' =", "  comment ="))
    );
    // 6 hosts (host_0 .. host_5), 10 rows each: regions hold 2 (host_0, host_1),
    // 2 (host_2, host_3) and 2 (host_4, host_5) hosts.
    assert_eq!(
        s.write("benchmark", &cpu_lines(6, 10, 1_451_606_400)).0,
        204
    );
    assert_eq!(s.count("benchmark", "cpu"), 60);
    let table_id = s.ok_sql(
        None,
        "SELECT table_id FROM information_schema.tables WHERE table_schema = 'benchmark' AND table_name = 'cpu'",
    )["output"][0]["records"]["rows"][0][0]
        .as_u64()
        .unwrap();
    let per_region = |s: &Server| {
        s.ok_sql(
            None,
            &format!("SELECT region_number, region_id, region_rows, sst_num FROM information_schema.region_statistics WHERE table_id = {table_id} ORDER BY region_number"),
        )["output"][0]["records"]["rows"]
            .clone()
    };
    let rid = |n: u64| (table_id << 32) | n;
    assert_eq!(
        per_region(&s),
        json!([[0, rid(0), 20, 0], [1, rid(1), 20, 0], [2, rid(2), 20, 0]])
    );
    let peers = s.ok_sql(
        None,
        "SELECT region_id, peer_id, is_leader, status FROM information_schema.region_peers WHERE table_schema = 'benchmark' AND table_name = 'cpu' ORDER BY region_id",
    );
    assert_eq!(
        peers["output"][0]["records"]["rows"],
        json!([
            [rid(0), 0, "Yes", "ALIVE"],
            [rid(1), 0, "Yes", "ALIVE"],
            [rid(2), 0, "Yes", "ALIVE"]
        ])
    );
    let parts = s.ok_sql(
        None,
        "SELECT partition_name, partition_expression, partition_description, greptime_partition_id FROM information_schema.partitions WHERE table_schema = 'benchmark' AND table_name = 'cpu' ORDER BY partition_name",
    );
    // The real v1.0.2: the columns in the expression, the rule unquoted in the description.
    assert_eq!(
        parts["output"][0]["records"]["rows"][1],
        json!([
            "p1",
            "hostname",
            "hostname >= host_2 AND hostname < host_4",
            rid(1)
        ])
    );
    // A query reads every region.
    let hosts = s.ok_sql(
        Some("benchmark"),
        "SELECT count(*) FROM cpu WHERE hostname = 'host_5'",
    );
    assert_eq!(hosts["output"][0]["records"]["rows"][0][0], 10);
    // Flush and compaction: one file and one completion line per region.
    s.ok_sql(Some("benchmark"), "ADMIN FLUSH_TABLE('cpu')");
    assert_eq!(files_with_ext(&dir.join("data"), "parquet").len(), 3);
    s.ok_sql(
        Some("benchmark"),
        "ADMIN COMPACT_TABLE('cpu', 'swcs', 'window=3600')",
    );
    for n in 0..3 {
        let line = format!(
            "Compacted SST files, region_id: {}({table_id}, {n})",
            rid(n)
        );
        assert!(s.logs().contains(&line), "{line}: {}", s.logs());
    }
    s.stop();
    // The rules survive a restart: new rows still go to their region.
    let mut s = start(&dir, Opts::default());
    s.ready();
    assert_eq!(s.write("benchmark", &cpu_lines(6, 1, 1_451_700_000)).0, 204);
    let after = per_region(&s);
    assert_eq!(
        after
            .as_array()
            .unwrap()
            .iter()
            .map(|r| r[2].as_u64().unwrap())
            .collect::<Vec<_>>(),
        [22, 22, 22]
    );
    s.stop();
}

/// `ALTER TABLE ... ADD COLUMN` on a standalone: the column is at the end of the table and
/// NULL in the rows before it (a query right after reads it, though no row changed), with the
/// real errors; a column a write adds to a created table is at its end too.
#[test]
fn alter_table_adds_a_nullable_column_at_the_end() {
    let tmp = tempfile::tempdir().unwrap();
    let mut s = start(&tmp.path().join("a"), Opts::default());
    s.ready();
    s.ok_sql(
        None,
        "CREATE TABLE m (host STRING NULL, v DOUBLE NULL, ts TIMESTAMP(9) NOT NULL, TIME INDEX (ts), PRIMARY KEY (host))",
    );
    assert_eq!(s.write("public", "m,host=a v=1 1000\n").0, 204);
    let rows = |s: &Server, sql: &str| s.ok_sql(None, sql)["output"][0]["records"]["rows"].clone();
    assert_eq!(rows(&s, "SELECT host, v FROM m"), json!([["a", 1.0]]));
    assert_eq!(
        s.ok_sql(None, "ALTER TABLE m ADD COLUMN w BIGINT")["output"][0],
        json!({"affectedrows": 0})
    );
    assert_eq!(rows(&s, "SELECT host, w FROM m"), json!([["a", null]]));
    let (code, v) = s.sql(None, "ALTER TABLE m ADD COLUMN v DOUBLE");
    assert_eq!((code, &v["code"]), (400, &json!(4003)), "{v}");
    assert_eq!(v["error"], "Column v already exists in table m");
    s.ok_sql(None, "ALTER TABLE m ADD COLUMN IF NOT EXISTS v DOUBLE");
    let (code, v) = s.sql(None, "ALTER TABLE nope ADD COLUMN x DOUBLE");
    assert_eq!((code, &v["code"]), (400, &json!(4001)), "{v}");
    assert_eq!(v["error"], "Table not found: greptime.public.nope");
    assert_eq!(
        s.write("public", "m,host=b,zone=z v=2,flag=t 2000\n").0,
        204
    );
    let shown = rows(&s, "SHOW CREATE TABLE m");
    assert!(
        shown[0][1].as_str().unwrap().starts_with(
            "CREATE TABLE IF NOT EXISTS \"m\" (\n  \"host\" STRING NULL,\n  \"v\" DOUBLE NULL,\n  \"ts\" TIMESTAMP(9) NOT NULL,\n  \"w\" BIGINT NULL,\n  \"zone\" STRING NULL,\n  \"flag\" BOOLEAN NULL,\n  TIME INDEX (\"ts\"),\n  PRIMARY KEY (\"host\", \"zone\")\n)"
        ),
        "{shown}"
    );
}
