//! The influxdb3 emulator, driven as a real process: `testbed emulate influxdb3 ...` with the
//! emulated edition/version in its environment, listening on 127.0.0.1 ports chosen here.
//! Every wait is bounded.

use std::collections::HashMap;
use std::io::{BufRead, BufReader, Read, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

const EMAIL: &str = "secret.person+tsbs@example.com";

/// A port below the ephemeral range (the activation test leaves it unbound for a while).
fn free_port() -> u16 {
    testbed::ports::free_port_block(1)
}

pub(crate) struct Emu {
    child: Child,
    out: Arc<Mutex<String>>,
    addr: Option<String>,
}

pub(crate) struct Opts<'a> {
    edition: &'a str,
    pub(crate) version: &'a str,
    knobs: Option<serde_json::Value>,
    env: Vec<(&'a str, String)>,
}

impl<'a> Opts<'a> {
    pub(crate) fn core() -> Opts<'a> {
        Opts {
            edition: "core",
            version: "3.11.1",
            knobs: None,
            env: vec![],
        }
    }
    fn enterprise(version: &'a str) -> Opts<'a> {
        Opts {
            edition: "enterprise",
            version,
            knobs: None,
            env: vec![],
        }
    }
    pub(crate) fn knobs(mut self, k: serde_json::Value) -> Self {
        self.knobs = Some(k);
        self
    }
    fn env(mut self, k: &'a str, v: &str) -> Self {
        self.env.push((k, v.to_string()));
        self
    }
}

fn command(dir: &Path, o: &Opts, args: &[String]) -> Command {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_testbed"));
    cmd.arg("emulate").arg("influxdb3").args(args);
    cmd.env_clear()
        .env("PATH", std::env::var("PATH").unwrap_or_default())
        .env("TESTBED_EMULATED_EDITION", o.edition)
        .env("TESTBED_EMULATED_VERSION", o.version);
    if let Some(k) = &o.knobs {
        let p = dir.join(format!("knobs-{}.json", rand_suffix()));
        std::fs::write(&p, k.to_string()).unwrap();
        cmd.env("TESTBED_KNOBS", p);
    }
    for (k, v) in &o.env {
        cmd.env(k, v);
    }
    cmd.current_dir(dir).stdin(Stdio::null());
    cmd
}

fn rand_suffix() -> u128 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_nanos()
}

/// Runs to completion (bounded): (exit code, stdout, stderr).
fn run_once(dir: &Path, o: &Opts, args: &[&str]) -> (i32, String, String) {
    let args: Vec<String> = args.iter().map(|s| s.to_string()).collect();
    let mut child = command(dir, o, &args)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let deadline = Instant::now() + Duration::from_secs(15);
    loop {
        if let Some(status) = child.try_wait().unwrap() {
            let mut out = String::new();
            let mut err = String::new();
            child
                .stdout
                .take()
                .unwrap()
                .read_to_string(&mut out)
                .unwrap();
            child
                .stderr
                .take()
                .unwrap()
                .read_to_string(&mut err)
                .unwrap();
            return (status.code().unwrap_or(-1), out, err);
        }
        if Instant::now() > deadline {
            let _ = child.kill();
            panic!("emulator did not exit in time");
        }
        std::thread::sleep(Duration::from_millis(10));
    }
}

pub(crate) fn serve_args(data: &Path, bind: &str, extra: &[&str]) -> Vec<String> {
    let mut v: Vec<String> = vec![
        "serve".into(),
        "--object-store=file".into(),
        format!("--data-dir={}", data.display()),
        "--node-id=ws-node".into(),
        format!("--http-bind={bind}"),
    ];
    v.extend(extra.iter().map(|s| s.to_string()));
    v
}

impl Emu {
    /// Starts the emulator; stdout and stderr are collected together.
    fn spawn(dir: &Path, o: &Opts, args: Vec<String>) -> Emu {
        let mut child = command(dir, o, &args)
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let out = Arc::new(Mutex::new(String::new()));
        for stream in [
            Box::new(child.stdout.take().unwrap()) as Box<dyn Read + Send>,
            Box::new(child.stderr.take().unwrap()),
        ] {
            let out = out.clone();
            std::thread::spawn(move || {
                for line in BufReader::new(stream).lines().map_while(Result::ok) {
                    out.lock().unwrap().push_str(&(line + "\n"));
                }
            });
        }
        Emu {
            child,
            out,
            addr: None,
        }
    }

    /// Starts and waits for the `startup time` line (the bound address).
    pub(crate) fn start(dir: &Path, o: &Opts, args: Vec<String>) -> Emu {
        let mut e = Emu::spawn(dir, o, args);
        e.wait_ready();
        e
    }

    fn wait_ready(&mut self) {
        let found = self.wait_for("startup time: ", Duration::from_secs(10));
        assert!(found, "emulator not ready:\n{}", self.output());
        let out = self.output();
        let line = out.lines().find(|l| l.contains("startup time: ")).unwrap();
        self.addr = Some(line.rsplit("address=").next().unwrap().trim().to_string());
    }

    fn wait_for(&self, needle: &str, limit: Duration) -> bool {
        let deadline = Instant::now() + limit;
        while Instant::now() < deadline {
            if self.output().contains(needle) {
                return true;
            }
            std::thread::sleep(Duration::from_millis(10));
        }
        false
    }

    pub(crate) fn output(&self) -> String {
        self.out.lock().unwrap().clone()
    }

    pub(crate) fn url(&self, path: &str) -> String {
        format!("http://{}{path}", self.addr.as_ref().expect("ready"))
    }

    fn signal(&self, sig: i32) {
        unsafe { libc::kill(self.child.id() as i32, sig) };
    }

    /// Waits (bounded) for the exit; returns the exit code, or -signal.
    fn wait_exit(&mut self, limit: Duration) -> Option<i32> {
        use std::os::unix::process::ExitStatusExt;
        let deadline = Instant::now() + limit;
        while Instant::now() < deadline {
            if let Some(s) = self.child.try_wait().unwrap() {
                std::thread::sleep(Duration::from_millis(30)); // let the readers drain
                return Some(s.code().unwrap_or_else(|| -s.signal().unwrap_or(0)));
            }
            std::thread::sleep(Duration::from_millis(10));
        }
        None
    }

    pub(crate) fn stop(&mut self) -> i32 {
        self.signal(libc::SIGTERM);
        self.wait_exit(Duration::from_secs(10))
            .expect("exit after SIGTERM")
    }
}

impl Drop for Emu {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

pub(crate) struct Resp {
    pub(crate) status: u16,
    pub(crate) headers: HashMap<String, String>,
    pub(crate) body: String,
}

impl Resp {
    fn json(&self) -> serde_json::Value {
        serde_json::from_str(&self.body).unwrap_or_else(|e| panic!("not JSON ({e}): {}", self.body))
    }
}

fn http(method: &str, url: &str, headers: &[(&str, &str)], body: Option<&[u8]>) -> Resp {
    let agent = ureq::AgentBuilder::new()
        .timeout(Duration::from_secs(5))
        .build();
    let mut req = agent.request(method, url);
    for (k, v) in headers {
        req = req.set(k, v);
    }
    let res = match body {
        Some(b) => req.send_bytes(b),
        None => req.call(),
    };
    let resp = match res {
        Ok(r) => r,
        Err(ureq::Error::Status(_, r)) => r,
        Err(e) => panic!("{method} {url}: {e}"),
    };
    let status = resp.status();
    let headers = resp
        .headers_names()
        .into_iter()
        .map(|n| {
            (
                n.to_ascii_lowercase(),
                resp.header(&n).unwrap_or("").to_string(),
            )
        })
        .collect();
    let body = resp.into_string().unwrap_or_default();
    Resp {
        status,
        headers,
        body,
    }
}

fn get(url: &str) -> Resp {
    http("GET", url, &[], None)
}

fn post(url: &str, body: &str) -> Resp {
    http("POST", url, &[], Some(body.as_bytes()))
}

fn sql(e: &Emu, db: &str, q: &str) -> Resp {
    post(
        &e.url("/api/v3/query_sql"),
        &serde_json::json!({"db": db, "q": q, "format": "json"}).to_string(),
    )
}

fn count(e: &Emu, db: &str) -> i64 {
    let r = sql(e, db, "SELECT count(*) FROM cpu");
    assert_eq!(r.status, 200, "{}", r.body);
    r.json()[0]["count(*)"].as_i64().unwrap()
}

fn lines(n: usize, start_s: i64) -> String {
    (0..n)
        .map(|i| {
            format!(
                "cpu,hostname=host_{},region=eu usage_user={}i,usage_system={}.5 {}\n",
                i % 3,
                i % 100,
                i % 7,
                (start_s + i as i64) * 1_000_000_000
            )
        })
        .collect()
}

pub(crate) fn write(e: &Emu, db: &str, body: &str, params: &str) -> Resp {
    post(
        &e.url(&format!(
            "/api/v3/write_lp?db={db}&precision=nanosecond{params}"
        )),
        body,
    )
}

fn files_under(dir: &Path) -> Vec<PathBuf> {
    let mut v = vec![];
    if let Ok(rd) = std::fs::read_dir(dir) {
        for e in rd.flatten() {
            let p = e.path();
            if p.is_dir() {
                v.extend(files_under(&p));
            } else {
                v.push(p);
            }
        }
    }
    v
}

pub(crate) fn with_ext(dir: &Path, ext: &str) -> usize {
    files_under(dir)
        .iter()
        .filter(|p| p.to_string_lossy().ends_with(ext))
        .count()
}

// ---------------------------------------------------------------------------------------------

#[test]
fn version_per_edition_and_wrong_version_knob() {
    let t = tempfile::tempdir().unwrap();
    let (code, out, _) = run_once(t.path(), &Opts::core(), &["--version"]);
    assert_eq!(code, 0);
    let re = regex::Regex::new(r"^influxdb3 InfluxDB 3 Core, 3\.11\.1, revision [0-9a-f]{40}\n$")
        .unwrap();
    assert!(re.is_match(&out), "{out:?}");
    let (code, out, _) = run_once(t.path(), &Opts::enterprise("3.10.2"), &["-V"]);
    assert_eq!(code, 0);
    assert!(
        out.starts_with("influxdb3 InfluxDB 3 Enterprise, 3.10.2, revision "),
        "{out}"
    );
    let o = Opts::core().knobs(serde_json::json!({"version_output": "influxdb3 InfluxDB 3 Core, 9.9.9, revision x", "version_exit_code": 3}));
    let (code, out, _) = run_once(t.path(), &o, &["--version"]);
    assert_eq!(
        (code, out.as_str()),
        (3, "influxdb3 InfluxDB 3 Core, 9.9.9, revision x\n")
    );
    // No edition in the environment: the emulator refuses rather than guessing.
    let out = Command::new(env!("CARGO_BIN_EXE_testbed"))
        .args(["emulate", "influxdb3", "--version"])
        .env_remove("TESTBED_EMULATED_EDITION")
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(70));
}

#[test]
fn flag_rules_per_edition() {
    let t = tempfile::tempdir().unwrap();
    let data = t.path().join("data");
    let base = |extra: &[&str]| {
        let mut v = vec![
            "serve",
            "--object-store=file",
            "--node-id=a-node",
            "--http-bind=127.0.0.1:1",
        ];
        v.extend_from_slice(extra);
        v.into_iter().map(String::from).collect::<Vec<_>>()
    };
    let dd = format!("--data-dir={}", data.display());
    let run = |o: &Opts, extra: &[&str]| {
        let args = base(extra);
        let refs: Vec<&str> = args.iter().map(String::as_str).collect();
        run_once(t.path(), o, &refs)
    };
    let (code, _, err) = run(&Opts::core(), &[&dd, "--cluster-id=a-cluster"]);
    assert_eq!(code, 2);
    assert!(
        err.contains("You've incorrectly specified a cluster-id for InfluxDB 3 Core OSS."),
        "{err}"
    );
    let (code, _, err) = run(&Opts::core(), &[&dd, "--frobnicate"]);
    assert_eq!(code, 2);
    assert!(err.contains("unexpected argument '--frobnicate'"), "{err}");
    let (code, _, err) = run(&Opts::core(), &[&dd, "--license-email=x@y.zz"]);
    assert_eq!(code, 2, "Core has no licence flags: {err}");
    let (code, _, err) = run(&Opts::core(), &[]);
    assert_eq!(code, 2, "file store needs --data-dir: {err}");
    assert!(err.contains("--data-dir"));
    let (code, _, err) = run(&Opts::enterprise("3.11.1"), &[&dd]);
    assert_eq!(code, 2);
    assert!(err.contains("--cluster-id"), "{err}");
    let (code, _, err) = run(
        &Opts::enterprise("3.11.1"),
        &[
            &dd,
            "--cluster-id=c",
            "--license-email=x@y.zz",
            "--license-file=/nonexistent",
        ],
    );
    assert_eq!(code, 2);
    assert!(
        err.contains(
            "the argument '--license-email <EMAIL>' cannot be used with '--license-file <FILE>'"
        ),
        "{err}"
    );
    let (code, _, err) = run(&Opts::enterprise("3.11.1"), &[&dd, "--cluster-id=a-node"]);
    assert_eq!(code, 1, "{err}");
    let (code, _, err) = run(&Opts::enterprise("3.11.1"), &[&dd, "--cluster-id=a_b"]);
    assert_eq!(code, 2, "{err}");
    // --shutdown-timeout and unit sizes exist from 3.11 only.
    let (code, _, err) = run(
        &Opts::enterprise("3.10.0"),
        &[&dd, "--cluster-id=c", "--shutdown-timeout=5s"],
    );
    assert_eq!(code, 2, "{err}");
    let (code, _, _) = run(
        &Opts::core(),
        &[&dd, "--max-http-request-size=10mb", "--gen1-duration=2m"],
    );
    assert_eq!(code, 2, "2m is not a gen1 duration");
    // Nothing was written by refused starts.
    assert!(!data.exists());
}

#[test]
fn enterprise_without_licence_or_terminal_fails() {
    let t = tempfile::tempdir().unwrap();
    let data = t.path().join("data");
    let args = serve_args(
        &data,
        "127.0.0.1:1",
        &["--cluster-id=ws-cluster", "--without-auth"],
    );
    let refs: Vec<&str> = args.iter().map(String::as_str).collect();
    let (code, _, err) = run_once(t.path(), &Opts::enterprise("3.11.1"), &refs);
    assert_eq!(code, 1);
    assert!(err.contains("Serve command failed: License management error: No interactive TTY detected. Cannot prompt for email."), "{err}");
    // 3.10 does not read the 3.11 names: the e-mail is not seen.
    let o = Opts::enterprise("3.10.0")
        .env("INFLUXDB3_LICENSE_EMAIL", EMAIL)
        .env("INFLUXDB3_LICENSE_TYPE", "trial");
    let (code, _, err) = run_once(t.path(), &o, &refs);
    assert_eq!(code, 1);
    assert!(err.contains("No interactive TTY detected"), "{err}");
    // An expired trial (licence server 402) fails start-up.
    let o = Opts::enterprise("3.11.1")
        .env("INFLUXDB3_LICENSE_EMAIL", EMAIL)
        .env("INFLUXDB3_LICENSE_TYPE", "trial")
        .knobs(serde_json::json!({"license_server_status": 402}));
    let (code, _, err) = run_once(t.path(), &o, &refs);
    assert_eq!(code, 1);
    assert!(err.contains("402"), "{err}");
    assert!(!data
        .join("ws-cluster")
        .join("trial_or_home_license")
        .exists());
}

fn activation(version: &str, email_var: &str, type_var: &str) {
    let t = tempfile::tempdir().unwrap();
    let data = t.path().join("data");
    let port = free_port();
    let bind = format!("127.0.0.1:{port}");
    let args = serve_args(&data, &bind, &["--cluster-id=ws-cluster", "--without-auth"]);
    let o = Opts::enterprise(version)
        .env(email_var, EMAIL)
        .env(type_var, "home")
        .knobs(serde_json::json!({"verification_delay_ms": 800}));
    let mut e = Emu::spawn(t.path(), &o, args.clone());
    assert!(
        e.wait_for("Waiting for verification...", Duration::from_secs(10)),
        "{}",
        e.output()
    );
    assert!(e
        .output()
        .contains("Email sent. Please check your inbox to verify your email address and proceed."));
    assert!(
        e.output().contains(&format!("email={EMAIL}")),
        "the vendor logs the address"
    );
    // Not listening while waiting for the click.
    assert!(std::net::TcpStream::connect(&bind).is_err());
    e.wait_ready();
    assert!(e
        .output()
        .contains("valid license found, happy data crunching"));
    assert_eq!(get(&e.url("/health")).status, 200);
    let lic = data.join("ws-cluster").join("trial_or_home_license");
    let text = std::fs::read_to_string(&lic).unwrap();
    assert!(
        !text.contains(EMAIL),
        "licence holds the e-mail only encoded"
    );
    assert_eq!(text.split('.').count(), 3);
    assert_eq!(e.stop(), 0);
    // Later starts need no e-mail, and say which licence serves.
    let mut e = Emu::start(t.path(), &Opts::enterprise(version), args);
    assert!(!e.output().contains("Email sent"));
    assert!(e.output().contains("license_type=home"), "{}", e.output());
    assert!(e.output().contains("At-Home license: limited to 2 cores"));
    assert_eq!(e.stop(), 0);
}

#[test]
fn a_trial_licence_expires_on_the_licence_clock_and_3_11_clusters_write_pt_files() {
    let t = tempfile::tempdir().unwrap();
    for (version, wal, data_ext) in [("3.11.1", ".pt", ".pt"), ("3.10.0", ".wal", ".parquet")] {
        let data = t.path().join(format!("data-{version}"));
        let cluster = data.join("ws-cluster");
        std::fs::create_dir_all(&cluster).unwrap();
        std::fs::write(
            cluster.join("trial_or_home_license"),
            testbed::emulators::influxdb3::make_license(EMAIL, "trial", "ws-cluster"),
        )
        .unwrap();
        let args = serve_args(
            &data,
            "127.0.0.1:0",
            &["--cluster-id=ws-cluster", "--without-auth"],
        );
        // 29 days on: still valid. A snapshot at every flush shows the data files too.
        let o = Opts::enterprise(version).knobs(serde_json::json!({
            "license_clock_offset_days": 29,
            "wal_flush_interval_ms": 50,
            "snapshot_after_wal_files": 2,
        }));
        let mut e = Emu::start(t.path(), &o, args.clone());
        assert!(e.output().contains("license_type=trial"), "{}", e.output());
        for k in 0..3 {
            assert_eq!(
                write(&e, "db", &lines(5, 1_686_441_600 + k * 600), "").status,
                204
            );
        }
        assert_eq!(e.stop(), 0);
        assert!(with_ext(&data, wal) >= 1, "{version}: no {wal} WAL");
        assert!(
            with_ext(&data, data_ext) >= 1,
            "{version}: no {data_ext} data"
        );
        if version == "3.11.1" {
            assert_eq!(with_ext(&data, ".wal") + with_ext(&data, ".parquet"), 0);
        }
        // Data written by either engine comes back after a restart.
        let mut e = Emu::start(t.path(), &o, args.clone());
        assert_eq!(count(&e, "db"), 15, "{version}");
        assert_eq!(e.stop(), 0);
        // 31 days on: a trial does not start any more.
        let o =
            Opts::enterprise(version).knobs(serde_json::json!({"license_clock_offset_days": 31}));
        let refs: Vec<&str> = args.iter().map(String::as_str).collect();
        let (code, _, err) = run_once(t.path(), &o, &refs);
        assert_eq!(code, 1, "{err}");
        assert!(err.contains("the license has expired"), "{err}");
    }
}

#[test]
fn activation_311_reads_new_names() {
    activation(
        "3.11.1",
        "INFLUXDB3_LICENSE_EMAIL",
        "INFLUXDB3_LICENSE_TYPE",
    );
}

#[test]
fn activation_310_reads_legacy_names() {
    activation(
        "3.10.0",
        "INFLUXDB3_ENTERPRISE_LICENSE_EMAIL",
        "INFLUXDB3_ENTERPRISE_LICENSE_TYPE",
    );
}

#[test]
fn activation_311_accepts_legacy_names_with_warning_and_never_verify_blocks() {
    let t = tempfile::tempdir().unwrap();
    let data = t.path().join("data");
    let bind = format!("127.0.0.1:{}", free_port());
    let args = serve_args(&data, &bind, &["--cluster-id=ws-cluster", "--without-auth"]);
    let o = Opts::enterprise("3.11.1")
        .env("INFLUXDB3_ENTERPRISE_LICENSE_EMAIL", EMAIL)
        .env("INFLUXDB3_ENTERPRISE_LICENSE_TYPE", "trial")
        .knobs(serde_json::json!({"never_verify": true}));
    let mut e = Emu::spawn(t.path(), &o, args);
    assert!(e.wait_for("Waiting for verification...", Duration::from_secs(10)));
    assert!(e
        .output()
        .contains(" WARN influxdb3::commands::serve: deprecated environment variable"));
    std::thread::sleep(Duration::from_millis(300));
    assert!(std::net::TcpStream::connect(&bind).is_err());
    assert!(e.child.try_wait().unwrap().is_none(), "still waiting");
    // No handler yet: SIGTERM ends it by the signal.
    e.signal(libc::SIGTERM);
    assert_eq!(e.wait_exit(Duration::from_secs(5)), Some(-libc::SIGTERM));
    assert!(!data
        .join("ws-cluster")
        .join("trial_or_home_license")
        .exists());
}

#[test]
fn licence_file_flag_and_variable() {
    let t = tempfile::tempdir().unwrap();
    let data = t.path().join("data");
    let lic = t.path().join("licence.jwt");
    std::fs::write(
        &lic,
        testbed::emulators::influxdb3::make_license(EMAIL, "trial", "ws-cluster"),
    )
    .unwrap();
    let flag = format!("--license-file={}", lic.display());
    let args = serve_args(
        &data,
        "127.0.0.1:0",
        &["--cluster-id=ws-cluster", "--without-auth", &flag],
    );
    let mut e = Emu::start(t.path(), &Opts::enterprise("3.11.1"), args);
    assert_eq!(
        get(&e.url("/ping")).headers["x-influxdb-build"],
        "Enterprise"
    );
    assert_eq!(e.stop(), 0);
    assert!(!data
        .join("ws-cluster")
        .join("trial_or_home_license")
        .exists());
    // Via the variable.
    let args = serve_args(
        &data,
        "127.0.0.1:0",
        &["--cluster-id=ws-cluster", "--without-auth"],
    );
    let o = Opts::enterprise("3.11.1").env("INFLUXDB3_LICENSE_FILE", &lic.display().to_string());
    let mut e = Emu::start(t.path(), &o, args.clone());
    assert_eq!(e.stop(), 0);
    // A licence for another cluster, or a missing file, is refused.
    let mut other = serve_args(
        &data,
        "127.0.0.1:0",
        &["--cluster-id=other-cluster", "--without-auth", &flag],
    );
    let refs: Vec<&str> = other.iter().map(String::as_str).collect();
    let (code, _, err) = run_once(t.path(), &Opts::enterprise("3.11.1"), &refs);
    assert_eq!(code, 1);
    assert!(err.contains("not valid for cluster other-cluster"), "{err}");
    other.pop();
    other.push(format!(
        "--license-file={}",
        t.path().join("missing").display()
    ));
    let refs: Vec<&str> = other.iter().map(String::as_str).collect();
    let (code, _, err) = run_once(t.path(), &Opts::enterprise("3.11.1"), &refs);
    assert_eq!(code, 1);
    assert!(err.contains("License management error"), "{err}");
}

#[test]
fn health_ping_cors_and_routes() {
    let t = tempfile::tempdir().unwrap();
    let mut e = Emu::start(
        t.path(),
        &Opts::core(),
        serve_args(&t.path().join("d"), "127.0.0.1:0", &["--without-auth"]),
    );
    assert!(e.output().contains(
        " INFO influxdb3::commands::serve: server starting node_id=ws-node version=3.11.1"
    ));
    let h = get(&e.url("/health"));
    assert_eq!((h.status, h.body.as_str()), (200, "OK"));
    assert!(h.headers["content-type"].starts_with("text/plain"));
    assert_eq!(h.headers["access-control-allow-origin"], "*");
    let uuid = h.headers["cluster-uuid"].clone();
    assert_eq!(uuid.len(), 36);
    let p = get(&e.url("/ping"));
    assert_eq!(p.status, 200);
    assert_eq!(p.headers["x-influxdb-version"], "3.11.1");
    assert_eq!(p.headers["x-influxdb-build"], "Core");
    assert_eq!(p.headers["cluster-uuid"], uuid);
    let j = p.json();
    assert_eq!(j["version"], "3.11.1");
    assert_eq!(j["product_name"], "InfluxDB 3 Core");
    assert!(j["revision"].as_str().unwrap().len() >= 7);
    assert_eq!(j["process_id"].as_str().unwrap().len(), 36);
    assert_eq!(post(&e.url("/ping"), "").status, 200);
    assert_eq!(http("HEAD", &e.url("/ping"), &[], None).status, 404);
    let nf = get(&e.url("/nope"));
    assert_eq!((nf.status, nf.body.as_str()), (404, "Not found"));
    assert_eq!(
        http(
            "PUT",
            &e.url("/api/v3/write_lp?db=x"),
            &[],
            Some(b"cpu f=1")
        )
        .status,
        404
    );
    assert_eq!(
        http("OPTIONS", &e.url("/api/v3/write_lp"), &[], None).status,
        204
    );
    let m = get(&e.url("/metrics"));
    assert!(m.body.trim_end().ends_with("# EOF"));
    assert_eq!(e.stop(), 0);
    assert!(e.output().contains("shutdown complete"));
}

#[test]
fn auth_required_unless_without_auth() {
    let t = tempfile::tempdir().unwrap();
    let o = Opts::core().knobs(serde_json::json!({"admin_token": "apiv3_secret"}));
    let mut e = Emu::start(
        t.path(),
        &o,
        serve_args(&t.path().join("d"), "127.0.0.1:0", &[]),
    );
    for path in ["/health", "/ping", "/api/v3/configure/database?format=json"] {
        let r = get(&e.url(path));
        assert_eq!(r.status, 401, "{path}");
        assert_eq!(
            r.body, r#"{"error": "the request was not authenticated"}"#,
            "{path}"
        );
        let r = http(
            "GET",
            &e.url(path),
            &[("Authorization", "Bearer wrong")],
            None,
        );
        assert_eq!(r.status, 401);
        let r = http(
            "GET",
            &e.url(path),
            &[("Authorization", "Bearer apiv3_secret")],
            None,
        );
        assert_eq!(r.status, 200, "{path}");
        let r = http(
            "GET",
            &e.url(path),
            &[("Authorization", "Token apiv3_secret")],
            None,
        );
        assert_eq!(r.status, 200, "{path}");
    }
    assert_eq!(
        http(
            "GET",
            &e.url("/health"),
            &[("Authorization", "Weird x")],
            None
        )
        .status,
        400
    );
    assert_eq!(e.stop(), 0);
    let mut e = Emu::start(
        t.path(),
        &o,
        serve_args(
            &t.path().join("d"),
            "127.0.0.1:0",
            &["--disable-authz=health,ping"],
        ),
    );
    assert_eq!(get(&e.url("/health")).status, 200);
    assert_eq!(get(&e.url("/ping")).status, 200);
    assert_eq!(write(&e, "db", "cpu f=1", "").status, 401);
    assert_eq!(e.stop(), 0);
}

#[test]
fn database_lifecycle() {
    let t = tempfile::tempdir().unwrap();
    let mut e = Emu::start(
        t.path(),
        &Opts::core().knobs(serde_json::json!({"wal_flush_interval_ms": 20})),
        serve_args(&t.path().join("d"), "127.0.0.1:0", &["--without-auth"]),
    );
    let list = |show: bool| {
        let r = get(&e.url(&format!(
            "/api/v3/configure/database?format=json{}",
            if show { "&show_deleted=true" } else { "" }
        )));
        assert_eq!(r.status, 200);
        r.json()
    };
    assert_eq!(
        get(&e.url("/api/v3/configure/database")).status,
        400,
        "format is required"
    );
    assert_eq!(
        list(false),
        serde_json::json!([{"iox::database": "_internal"}])
    );
    let db_url = e.url("/api/v3/configure/database");
    assert_eq!(post(&db_url, r#"{"db":"benchmark"}"#).status, 200);
    let dup = post(&db_url, r#"{"db":"benchmark"}"#);
    assert_eq!(
        (dup.status, dup.body.as_str()),
        (409, "attempted to create a resource that already exists")
    );
    let bad = post(&db_url, r#"{"db":"_bad name"}"#);
    assert_eq!(bad.status, 400);
    assert!(bad.json()["error"]
        .as_str()
        .unwrap()
        .starts_with("invalid character in database or rp name"));
    assert_eq!(post(&db_url, "not json").status, 400);
    assert_eq!(
        list(false),
        serde_json::json!([{"iox::database": "_internal"}, {"iox::database": "benchmark"}])
    );
    assert_eq!(
        write(&e, "benchmark", &lines(10, 1_686_441_600), "").status,
        204
    );
    // TSBS reset: hard delete now, then create again at once.
    let del = |q: &str| {
        http(
            "DELETE",
            &e.url(&format!("/api/v3/configure/database{q}")),
            &[],
            None,
        )
        .status
    };
    assert_eq!(del("?db=benchmark&hard_delete_at=now"), 200);
    assert_eq!(del("?db=benchmark&hard_delete_at=now"), 404);
    assert_eq!(del("?db=_internal"), 400);
    assert_eq!(del(""), 400);
    assert_eq!(post(&db_url, r#"{"db":"benchmark"}"#).status, 200);
    let r = sql(&e, "benchmark", "SELECT count(*) FROM cpu");
    assert_eq!(r.status, 400, "the new database is empty: {}", r.body);
    assert!(r.body.contains("table 'public.iox.cpu' not found"));
    // Soft delete: writes to the name fail until it is created again.
    assert_eq!(
        write(&e, "benchmark", &lines(5, 1_686_441_600), "").status,
        204
    );
    assert_eq!(del("?db=benchmark"), 200);
    assert_eq!(list(false).as_array().unwrap().len(), 1);
    assert!(list(true)
        .as_array()
        .unwrap()
        .iter()
        .any(|d| d["deleted"] == true));
    let w = write(&e, "benchmark", "cpu f=1", "");
    assert_eq!(w.status, 400);
    assert!(w.json()["error"].is_string());
    assert_eq!(sql(&e, "benchmark", "SELECT count(*) FROM cpu").status, 404);
    assert_eq!(post(&db_url, r#"{"db":"benchmark"}"#).status, 200);
    assert_eq!(write(&e, "benchmark", "cpu f=1", "").status, 204);
    // Writes auto-create, valid names only.
    let bad = post(&e.url("/api/v3/write_lp?db=_x"), "cpu f=1");
    assert_eq!(bad.status, 400);
    assert!(bad.json()["error"]
        .as_str()
        .unwrap()
        .starts_with("invalid character"));
    assert_eq!(write(&e, "fresh", &lines(3, 1_686_441_600), "").status, 204);
    assert_eq!(count(&e, "fresh"), 3);
    assert_eq!(e.stop(), 0);
}

#[test]
fn write_lp_modes_and_errors() {
    let t = tempfile::tempdir().unwrap();
    let data = t.path().join("d");
    let o = Opts::core().knobs(serde_json::json!({"wal_flush_interval_ms": 100}));
    let mut e = Emu::start(
        t.path(),
        &o,
        serve_args(
            &data,
            "127.0.0.1:0",
            &["--without-auth", "--max-http-request-size=4096"],
        ),
    );
    let r = post(&e.url("/api/v3/write_lp"), "cpu f=1");
    assert_eq!(
        (r.status, r.body.as_str()),
        (400, "missing query parameter 'db'")
    );
    // Durable: once answered, the WAL file is on disk.
    assert_eq!(
        write(&e, "db1", &lines(20, 1_686_441_600), "&no_sync=false").status,
        204
    );
    assert!(with_ext(&data.join("ws-node").join("wal"), ".wal") >= 1);
    // accept_partial=false: nothing written, first error.
    let body = format!(
        "{}cpu,hostname=x usage_user=oops 1\n",
        lines(3, 1_686_442_000)
    );
    let r = write(&e, "db1", &body, "&accept_partial=false");
    assert_eq!(r.status, 400);
    let j = r.json();
    assert_eq!(j["error"], "line protocol parsing error");
    assert_eq!(j["data"]["line_number"], 4);
    assert_eq!(
        j["data"]["original_line"],
        "cpu,hostname=x usage_user=oops 1"
    );
    assert!(j["data"]["error_message"].is_string());
    assert_eq!(count(&e, "db1"), 20);
    // Default accept_partial=true: good lines written, all errors listed.
    let body = format!(
        "bad\n{}cpu,hostname=x usage_user=1.5 1\n",
        lines(3, 1_686_442_000)
    );
    let r = write(&e, "db1", &body, "");
    assert_eq!(r.status, 400);
    let j = r.json();
    assert_eq!(j["error"], "partial write of line protocol occurred");
    let errs = j["data"].as_array().unwrap();
    assert_eq!(errs.len(), 2, "{j}");
    assert_eq!(errs[0]["line_number"], 1);
    assert!(errs[1]["error_message"]
        .as_str()
        .unwrap()
        .contains("invalid column type for column 'usage_user'"));
    assert_eq!(count(&e, "db1"), 23);
    // Precision.
    assert_eq!(
        post(
            &e.url("/api/v3/write_lp?db=p&precision=second"),
            "cpu f=1 1686441600"
        )
        .status,
        204
    );
    let r = sql(&e, "p", "SELECT time FROM cpu");
    assert_eq!(r.json()[0]["time"], "2023-06-11T00:00:00");
    assert_eq!(
        post(
            &e.url("/api/v3/write_lp?db=p&precision=fortnight"),
            "cpu f=1"
        )
        .status,
        400
    );
    // Size limit on the decoded body, plain and gzip.
    let big = "cpu f=1\n".repeat(600);
    let r = write(&e, "db1", &big, "");
    assert_eq!(
        (r.status, r.body.as_str()),
        (413, "max request size (4096 bytes) exceeded")
    );
    let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
    gz.write_all(big.as_bytes()).unwrap();
    let gz = gz.finish().unwrap();
    assert!(gz.len() < 4096);
    let url = e.url("/api/v3/write_lp?db=db1");
    assert_eq!(
        http("POST", &url, &[("Content-Encoding", "gzip")], Some(&gz)).status,
        413
    );
    let mut small = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
    small.write_all(lines(5, 1_686_443_000).as_bytes()).unwrap();
    let small = small.finish().unwrap();
    assert_eq!(
        http("POST", &url, &[("Content-Encoding", "gzip")], Some(&small)).status,
        204
    );
    let r = http(
        "POST",
        &url,
        &[("Content-Encoding", "br")],
        Some(b"cpu f=1"),
    );
    assert_eq!(
        (r.status, r.body.as_str()),
        (400, "unacceptable content-encoding: br")
    );
    assert_eq!(http("POST", &url, &[], Some(&[0xff, 0xfe])).status, 400);
    assert_eq!(http("POST", &url, &[], Some(b"")).status, 400);
    assert_eq!(count(&e, "db1"), 28);
    assert!(e
        .output()
        .contains("ERROR influxdb3_server::http: Error while handling request error="));
    assert_eq!(e.stop(), 0);
}

#[test]
fn durable_writes_wait_for_the_wal_flush_and_sigterm_flushes() {
    let t = tempfile::tempdir().unwrap();
    let data = t.path().join("d");
    let o = Opts::core().knobs(serde_json::json!({"wal_flush_interval_ms": 600_000}));
    let mut e = Emu::start(
        t.path(),
        &o,
        serve_args(&data, "127.0.0.1:0", &["--without-auth"]),
    );
    // no_sync answers at once, before any WAL file exists.
    assert_eq!(
        write(&e, "db", &lines(4, 1_686_441_600), "&no_sync=true").status,
        204
    );
    assert_eq!(with_ext(&data, ".wal"), 0);
    // ...and its rows are not queryable before the WAL flush (real Core: the queryable buffer
    // is fed only once the WAL file is persisted).
    assert_eq!(
        sql(&e, "db", "SELECT count(*) AS n FROM cpu").json()[0]["n"],
        0,
        "no_sync rows visible before the flush"
    );
    // A durable write waits for the flush; SIGTERM flushes and releases it.
    let url = e.url("/api/v3/write_lp?db=db&precision=nanosecond");
    let body = lines(2, 1_686_441_700);
    let pending = std::thread::spawn(move || {
        let agent = ureq::AgentBuilder::new()
            .timeout(Duration::from_secs(20))
            .build();
        agent
            .post(&url)
            .send_string(&body)
            .map(|r| r.status())
            .unwrap_or(0)
    });
    std::thread::sleep(Duration::from_millis(400));
    assert!(
        !pending.is_finished(),
        "durable write answered before the flush"
    );
    assert_eq!(e.stop(), 0);
    assert_eq!(pending.join().unwrap(), 204);
    // A graceful stop only flushes the WAL buffer (no snapshot is due): WAL files, no
    // Parquet, and the data comes back after a restart by WAL replay.
    assert_eq!(with_ext(&data, ".parquet"), 0);
    assert!(with_ext(&data, ".wal") >= 1);
    // The --wal-flush-interval flag beats the knob (still 10 minutes here).
    let mut e = Emu::start(
        t.path(),
        &o,
        serve_args(
            &data,
            "127.0.0.1:0",
            &["--without-auth", "--wal-flush-interval=50ms"],
        ),
    );
    assert_eq!(count(&e, "db"), 6);
    assert_eq!(write(&e, "db", &lines(1, 1_686_441_800), "").status, 204);
    assert_eq!(e.stop(), 0);
}

#[test]
fn data_survives_kill_restart_and_copy() {
    let t = tempfile::tempdir().unwrap();
    let data = t.path().join("d");
    let o = Opts::core()
        .knobs(serde_json::json!({"wal_flush_interval_ms": 50, "snapshot_after_wal_files": 3}));
    let args = serve_args(&data, "127.0.0.1:0", &["--without-auth"]);
    let e = Emu::start(t.path(), &o, args.clone());
    for i in 0..5 {
        assert_eq!(
            write(&e, "db", &lines(10, 1_686_441_600 + i * 10), "").status,
            204
        );
    }
    // Three WAL files made a snapshot; the rest are still WAL.
    assert!(with_ext(&data, ".parquet") >= 1);
    assert!(with_ext(&data.join("ws-node").join("snapshots"), ".info.json") >= 1);
    assert!(with_ext(&data, ".wal") >= 1);
    drop(e); // SIGKILL: no shutdown snapshot, WAL replay must restore the rest.
    let mut e = Emu::start(t.path(), &o, args);
    assert_eq!(count(&e, "db"), 50);
    assert_eq!(e.stop(), 0);
    // A copy of data/ elsewhere holds the same data.
    let copy = t.path().join("copy");
    copy_tree(&data, &copy);
    let mut e = Emu::start(
        t.path(),
        &Opts::core(),
        serve_args(&copy, "127.0.0.1:0", &["--without-auth"]),
    );
    assert_eq!(count(&e, "db"), 50);
    let uuid = get(&e.url("/health")).headers["cluster-uuid"].clone();
    assert_eq!(e.stop(), 0);
    assert!(files_under(t.path()).iter().all(|p| p.starts_with(&data)
        || p.starts_with(&copy)
        || p.file_name()
            .unwrap()
            .to_string_lossy()
            .starts_with("knobs-")));
    assert_eq!(uuid.len(), 36);
}

fn copy_tree(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for e in std::fs::read_dir(from).unwrap().flatten() {
        let p = e.path();
        let dest = to.join(e.file_name());
        if p.is_dir() {
            copy_tree(&p, &dest);
        } else {
            std::fs::copy(&p, &dest).unwrap();
        }
    }
}

#[test]
fn query_sql_shapes_errors_and_knobs() {
    let t = tempfile::tempdir().unwrap();
    let o = Opts::core().knobs(serde_json::json!({
        "query_failures": [{"contains": "GROUP BY hostname"}],
        "query_delay_ms": 200,
    }));
    let mut e = Emu::start(
        t.path(),
        &o,
        serve_args(&t.path().join("d"), "127.0.0.1:0", &["--without-auth"]),
    );
    assert_eq!(
        write(&e, "benchmark", &lines(120, 1_686_441_600), "").status,
        204
    );
    let asked = Instant::now();
    assert_eq!(count(&e, "benchmark"), 120);
    assert!(
        asked.elapsed() >= Duration::from_millis(200),
        "knob: slow queries"
    );
    let r = sql(&e, "benchmark", "SELECT date_bin(INTERVAL '1 minute', time) AS minute, max(usage_user) AS max_usage_user FROM cpu WHERE hostname IN ('host_1') AND time >= '2023-06-11T00:00:00Z' AND time < '2023-06-11T00:02:00Z' GROUP BY minute ORDER BY minute");
    assert_eq!(r.status, 200);
    assert_eq!(r.headers["content-type"], "application/json");
    let j = r.json();
    assert_eq!(j.as_array().unwrap().len(), 2);
    assert_eq!(j[0]["minute"], "2023-06-11T00:00:00");
    assert_eq!(j[0]["max_usage_user"], 58);
    let r = sql(&e, "missing", "SELECT 1");
    assert_eq!(
        (r.status, r.json()["error"].as_str().unwrap()),
        (404, "query error: database not found: missing")
    );
    let r = sql(&e, "benchmark", "SELECT * FROM nope");
    assert_eq!(r.status, 400);
    let r = sql(
        &e,
        "benchmark",
        "SELECT hostname, last_value(usage_user ORDER BY time) FROM cpu GROUP BY hostname",
    );
    assert_eq!(r.status, 500, "knob: resources exhausted");
    assert!(r.json()["error"]
        .as_str()
        .unwrap()
        .contains("Resources exhausted"));
    let r = get(&e.url("/api/v3/query_sql?db=benchmark&q=SELECT+count(*)+FROM+cpu&format=csv"));
    assert_eq!((r.status, r.body.as_str()), (200, "count(*)\n120\n"));
    let r = post(&e.url("/api/v3/query_sql"), "{");
    assert_eq!(r.status, 400);
    assert!(r.body.starts_with("serde json error"));
    assert_eq!(e.stop(), 0);
}

#[test]
fn write_throttling_knob() {
    let t = tempfile::tempdir().unwrap();
    let o = Opts::core().knobs(serde_json::json!({"write_reject_first": 2, "write_reject_status": 503, "write_retry_after": "1"}));
    let mut e = Emu::start(
        t.path(),
        &o,
        serve_args(&t.path().join("d"), "127.0.0.1:0", &["--without-auth"]),
    );
    for _ in 0..2 {
        let r = write(&e, "db", "cpu f=1", "&no_sync=true");
        assert_eq!(r.status, 503);
        assert_eq!(r.headers["retry-after"], "1");
    }
    assert_eq!(write(&e, "db", "cpu f=1", "&no_sync=true").status, 204);
    assert_eq!(e.stop(), 0);
    let o = Opts::core().knobs(serde_json::json!({"write_reject_first": 1}));
    let mut e = Emu::start(
        t.path(),
        &o,
        serve_args(&t.path().join("d"), "127.0.0.1:0", &["--without-auth"]),
    );
    let r = write(&e, "db", "cpu f=1", "&no_sync=true");
    assert_eq!(
        (r.status, r.body.as_str()),
        (429, "this service is overloaded, please try again later")
    );
    assert_eq!(e.stop(), 0);
}

#[test]
fn lifecycle_knobs() {
    let t = tempfile::tempdir().unwrap();
    let d = t.path().join("d");
    let args = || serve_args(&d, "127.0.0.1:0", &["--without-auth"]);
    // exit during start
    let o = Opts::core().knobs(serde_json::json!({"exit_during_start": 3}));
    let mut e = Emu::spawn(t.path(), &o, args());
    assert_eq!(e.wait_exit(Duration::from_secs(10)), Some(3));
    assert!(!e.output().contains("startup time"));
    // never ready: never listens, SIGTERM exits 0
    let o = Opts::core().knobs(serde_json::json!({"never_ready": true}));
    let mut e = Emu::spawn(t.path(), &o, args());
    assert!(e.wait_for("catalog loading", Duration::from_secs(10)));
    assert!(!e.wait_for("startup time", Duration::from_millis(300)));
    assert_eq!(e.stop(), 0);
    // slow start: the startup time reflects the delay
    let o = Opts::core().knobs(serde_json::json!({"start_delay_ms": 300}));
    let mut e = Emu::start(t.path(), &o, args());
    let out = e.output();
    let ms: u64 = out
        .split("startup time: ")
        .nth(1)
        .unwrap()
        .split("ms")
        .next()
        .unwrap()
        .parse()
        .unwrap();
    assert!(ms >= 300, "{out}");
    assert_eq!(e.stop(), 0);
    // crash while serving, with a chosen exit code
    let o = Opts::core().knobs(serde_json::json!({"crash_after_ms": 100, "crash_exit_code": 9}));
    let mut e = Emu::start(t.path(), &o, args());
    assert_eq!(e.wait_exit(Duration::from_secs(10)), Some(9));
    assert!(e.output().contains("panicked at"));
    // slow graceful shutdown
    let o = Opts::core().knobs(serde_json::json!({"shutdown_delay_ms": 300}));
    let mut e = Emu::start(t.path(), &o, args());
    let asked = Instant::now();
    assert_eq!(e.stop(), 0);
    assert!(asked.elapsed() >= Duration::from_millis(300));
    // hang on SIGTERM: only SIGKILL ends it
    let o = Opts::core().knobs(serde_json::json!({"hang_on_sigterm": true}));
    let mut e = Emu::start(t.path(), &o, args());
    e.signal(libc::SIGTERM);
    assert_eq!(e.wait_exit(Duration::from_millis(500)), None);
    e.signal(libc::SIGKILL);
    assert_eq!(e.wait_exit(Duration::from_secs(5)), Some(-libc::SIGKILL));
    // injected log lines, in the real format
    let o = Opts::core().knobs(serde_json::json!({"log_lines": [
        {"level": "WARN", "message": "injected warning"},
        {"level": "ERROR", "message": "injected error", "at": "start"},
        {"level": "PANIC", "message": "injected panic", "at": "shutdown"},
        {"level": "FATAL", "message": "injected fatal", "at": "shutdown"},
    ]}));
    let mut e = Emu::start(t.path(), &o, args());
    assert_eq!(e.stop(), 0);
    let out = e.output();
    let re = regex::Regex::new(
        r"(?m)^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{6}Z  WARN influxdb3_server: injected warning$",
    )
    .unwrap();
    assert!(re.is_match(&out), "{out}");
    assert!(out.contains("Z ERROR influxdb3_server: injected error"));
    assert!(out.contains("panicked at") && out.contains("injected panic"));
    assert!(out.contains("fatal runtime error: injected fatal"));
    // a knob file shared with other stand-ins: our section applies, theirs are ignored
    let shared = serde_json::json!({
        "influxdb3": {"version_exit_code": 4},
        "tsbs_load": {"batch_delay_ms": 1},
    });
    let (code, _, _) = run_once(t.path(), &Opts::core().knobs(shared), &["--version"]);
    assert_eq!(code, 4);
    let flat_with_sections = serde_json::json!({"version_exit_code": 6, "go": {"devel": true}});
    let (code, _, _) = run_once(
        t.path(),
        &Opts::core().knobs(flat_with_sections),
        &["--version"],
    );
    assert_eq!(code, 6);
    // bad knob file: loud failure
    let o = Opts::core().knobs(serde_json::json!({"no_such_knob": 1}));
    let (code, _, err) = run_once(t.path(), &o, &["--version"]);
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("unknown field `no_such_knob`"), "{err}");
}

#[test]
fn address_in_use_fails_fast() {
    let t = tempfile::tempdir().unwrap();
    let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let bind = l.local_addr().unwrap().to_string();
    let args = serve_args(&t.path().join("d"), &bind, &["--without-auth"]);
    let refs: Vec<&str> = args.iter().map(String::as_str).collect();
    let (code, out, err) = run_once(t.path(), &Opts::core(), &refs);
    assert_eq!(code, 1);
    assert!(
        err.contains("Serve command failed: Failed to bind address"),
        "{out}{err}"
    );
    assert!(out.contains("ERROR"));
}

#[test]
fn release_archive_runs_and_needs_its_python() {
    use testbed::releases::influxdb3::Release;
    let t = tempfile::tempdir().unwrap();
    let knobs = t.path().join("knobs.json");
    let rel = Release::new("enterprise", "3.11.1", &knobs);
    let gz = rel.archive();
    tar::Archive::new(flate2::read::GzDecoder::new(&gz[..]))
        .unpack(t.path().join("install"))
        .unwrap();
    let root = t.path().join("install").join(rel.root());
    let run = |cwd: &Path| {
        let out = Command::new(root.join("influxdb3"))
            .arg("--version")
            .current_dir(cwd)
            .output()
            .unwrap();
        (
            out.status.code(),
            String::from_utf8_lossy(&out.stdout).into_owned(),
            String::from_utf8_lossy(&out.stderr).into_owned(),
        )
    };
    let (code, out, err) = run(t.path());
    assert_eq!(code, Some(0), "{err}");
    assert!(
        out.starts_with("influxdb3 InfluxDB 3 Enterprise, 3.11.1, revision "),
        "{out}"
    );
    // The knob file the wrapper names is honoured.
    std::fs::write(&knobs, r#"{"version_exit_code": 5}"#).unwrap();
    assert_eq!(run(t.path()).0, Some(5));
    std::fs::remove_file(&knobs).unwrap();
    // Without the bundled Python, not even --version runs.
    std::fs::remove_file(root.join("python/lib/libpython3.so")).unwrap();
    let (code, _, err) = run(&root);
    assert_eq!(code, Some(127));
    assert!(
        err.contains("error while loading shared libraries"),
        "{err}"
    );
}

#[test]
fn releases_on_the_mirror() {
    use sha2::Digest;
    use testbed::mirror::{Mirror, INFLUXDATA_DL, INSTALLER};
    use testbed::releases::influxdb3::{self, Installer, Release, Variant};
    let t = tempfile::tempdir().unwrap();
    let mirror = Mirror::start().unwrap();
    influxdb3::publish_all(&mirror, t.path());
    let fetch = |path: &str| {
        let r = http("GET", &format!("{}{path}", mirror.base_url()), &[], None);
        (r.status, r.body)
    };
    let bytes = |path: &str| {
        ureq::get(&format!("{}{path}", mirror.base_url()))
            .call()
            .map(|r| {
                let mut v = vec![];
                r.into_reader().read_to_end(&mut v).unwrap();
                v
            })
            .unwrap()
    };
    let (status, script) = fetch(INSTALLER);
    assert_eq!(status, 200);
    assert_eq!(
        script
            .matches("\nINFLUXDB_OSS_VERSION=\"3.11.1\"\n")
            .count(),
        1
    );
    assert_eq!(
        script
            .matches("\nINFLUXDB_ENT_VERSION=\"3.11.1\"\n")
            .count(),
        1
    );
    for edition in ["core", "enterprise"] {
        let rel = Release::new(edition, "3.11.1", "/unused");
        let path = format!("{INFLUXDATA_DL}/influxdb/releases/{}", rel.file_name());
        let archive = bytes(&path);
        let (status, sum) = fetch(&format!("{path}.sha256"));
        assert_eq!(status, 200);
        assert_eq!(
            sum,
            format!(
                "{}  {}\n",
                hex::encode(sha2::Sha256::digest(&archive)),
                rel.file_name()
            )
        );
        assert!(t
            .path()
            .join(format!("knobs/influxdb3-{edition}-3.11.1.json"))
            .is_file());
    }
    // Variants.
    let rel =
        Release::new("core", "3.10.0", t.path().join("k.json")).variant(Variant::MissingChecksum);
    influxdb3::publish(&mirror, &rel);
    let path = format!("{INFLUXDATA_DL}{}", rel.path());
    assert_eq!(fetch(&path).0, 200);
    assert_eq!(fetch(&format!("{path}.sha256")).0, 404);
    influxdb3::publish_installer_variant(&mirror, "3.11.1", "3.11.1", Installer::UnquotedCore);
    assert!(fetch(INSTALLER)
        .1
        .contains("\nINFLUXDB_OSS_VERSION=3.11.1\n"));
}

#[test]
fn licence_flags_and_memory_store() {
    let t = tempfile::tempdir().unwrap();
    let o = Opts::enterprise("3.11.1")
        .knobs(serde_json::json!({"verification_delay_ms": 50, "wal_flush_interval_ms": 20}));
    let args: Vec<String> = [
        "serve",
        "--object-store=memory",
        "--node-id=m-node",
        "--cluster-id=m-cluster",
        "--http-bind=127.0.0.1:0",
        "--without-auth",
        "--license-email",
        EMAIL,
        "--license-type",
        "trial",
    ]
    .iter()
    .map(|s| s.to_string())
    .collect();
    let mut e = Emu::start(t.path(), &o, args);
    assert!(e.output().contains("Waiting for verification..."));
    assert_eq!(write(&e, "db", "cpu f=1", "").status, 204);
    assert_eq!(count(&e, "db"), 1);
    assert_eq!(e.stop(), 0);
    // The memory store writes nothing anywhere.
    assert!(files_under(t.path()).iter().all(|p| p
        .file_name()
        .unwrap()
        .to_string_lossy()
        .starts_with("knobs-")));
}

#[test]
fn core_refuses_a_query_over_its_parquet_file_limit() {
    let t = tempfile::tempdir().unwrap();
    let data = t.path().join("d");
    let o = Opts::core().knobs(serde_json::json!({
        "wal_flush_interval_ms": 50,
        "snapshot_after_wal_files": 1,
        "query_file_limit": 2,
    }));
    let mut e = Emu::start(
        t.path(),
        &o,
        serve_args(&data, "127.0.0.1:0", &["--without-auth"]),
    );
    // Four batches in four 10-minute windows: four snapshot files.
    for k in 0..4 {
        assert_eq!(
            write(&e, "db", &lines(5, 1_686_441_600 + k * 600), "").status,
            204
        );
    }
    assert_eq!(with_ext(&data, ".parquet"), 4);
    let r = sql(&e, "db", "SELECT count(*) AS n FROM cpu");
    // As real 3.10.1: plain text that names the limit (2), not the 4 files it would scan.
    assert_eq!(r.status, 500, "{}", r.body);
    // Plain text, and the number is the limit (2), not the 4 files: as 3.10.1 answers.
    assert!(
        r.body.starts_with(
            "External error: Query would scan 2 Parquet files, exceeding the file limit."
        ),
        "{}",
        r.body
    );
    assert!(
        e.wait_for(
            "ERROR influxdb3_server::http: Error while handling request error=query error: error while planning query: External error: Query would scan 2 Parquet files",
            Duration::from_secs(2)
        ),
        "{}",
        e.output()
    );
    assert!(!r.headers.contains_key("content-type"), "{:?}", r.headers);
    // A time range over two windows scans two files: answered.
    let r = sql(
        &e,
        "db",
        "SELECT count(*) AS n FROM cpu WHERE time >= '2023-06-11T00:00:00Z' AND time < '2023-06-11T00:20:00Z'",
    );
    assert_eq!(
        (r.status, r.json()[0]["n"].as_i64()),
        (200, Some(10)),
        "{}",
        r.body
    );
    assert_eq!(e.stop(), 0);
}

/// Real 3.10.1 hides acknowledged durable rows from `count(*)` while a snapshot persists: the
/// first landed file clears every snapshotting chunk of the table, the others come back as
/// their files land. `system.parquet_files` lists the landed files meanwhile, the log says
/// what persists, and the count is as slow as the knob says.
#[test]
fn a_slow_snapshot_hides_rows_until_its_files_land_and_counts_take_their_time() {
    let t = tempfile::tempdir().unwrap();
    let data = t.path().join("d");
    let o = Opts::core().knobs(serde_json::json!({
        "wal_flush_interval_ms": 50,
        "snapshot_after_wal_files": 4,
        "snapshot_persist_ms_per_file": 400,
        "count_ms_per_1000_rows": 100,
    }));
    let mut e = Emu::start(
        t.path(),
        &o,
        serve_args(&data, "127.0.0.1:0", &["--without-auth"]),
    );
    // Four durable writes in four 10-minute windows: the fourth WAL file starts a snapshot of
    // four files, 400 ms each.
    for k in 0..4 {
        assert_eq!(
            write(&e, "db", &lines(500, 1_686_441_600 + k * 600), "").status,
            204
        );
    }
    let started = Instant::now();
    assert!(e.wait_for(
        "persisting 4 chunks for wal number 4",
        Duration::from_secs(5)
    ));
    assert!(e.wait_for("Persisted parquet file: ", Duration::from_secs(5)));
    // One file landed (500 rows visible again from it), three windows hidden: 500 of 2000.
    let files = |e: &Emu| {
        let r = sql(
            e,
            "db",
            "SELECT path, row_count FROM system.parquet_files WHERE table_name = 'cpu'",
        );
        assert_eq!(r.status, 200, "{}", r.body);
        r.json().as_array().unwrap().len()
    };
    let (landed, n) = (files(&e), count(&e, "db"));
    assert!(n < 2000, "no dip: {n} with {landed} files landed");
    assert_eq!(n, 500 * landed as i64, "{}", e.output());
    // The count took its time: 100 ms per 1000 visible rows.
    let t0 = Instant::now();
    let all = loop {
        let n = count(&e, "db");
        if n == 2000 || started.elapsed() > Duration::from_secs(10) {
            break n;
        }
        std::thread::sleep(Duration::from_millis(50));
    };
    assert_eq!(all, 2000, "{}", e.output());
    assert!(t0.elapsed() >= Duration::from_millis(200));
    assert_eq!(files(&e), 4);
    let r = sql(
        &e,
        "db",
        "SELECT table_name, path, size_bytes, row_count, min_time, max_time FROM system.parquet_files",
    );
    let first = &r.json()[0];
    assert_eq!(first["table_name"], "cpu");
    assert_eq!(first["row_count"], 500);
    // The real layout: ids only, the snapshot's last WAL sequence number as the file name.
    assert!(
        first["path"]
            .as_str()
            .unwrap()
            .ends_with("/0000000004.parquet")
            && first["path"]
                .as_str()
                .unwrap()
                .contains("/dbs/1/0/2023-06-1"),
        "{first}"
    );
    // The snapshot landed: its info file exists and the snapshotted WAL files are kept.
    assert!(e.wait_for("Persisted parquet file: ", Duration::from_secs(1)));
    let deadline = Instant::now() + Duration::from_secs(5);
    while with_ext(&data, ".info.json") == 0 && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(20));
    }
    assert_eq!(with_ext(&data, ".info.json"), 1);
    assert_eq!(with_ext(&data, ".wal"), 4);
    assert_eq!(e.stop(), 0);
}

/// Start-up replays the WAL in proportion to its size (knob), between the real log lines.
#[test]
fn startup_replays_the_wal_in_proportion() {
    let t = tempfile::tempdir().unwrap();
    let data = t.path().join("d");
    let o = Opts::core().knobs(serde_json::json!({"wal_replay_ms_per_mib": 4000}));
    let mut e = Emu::start(
        t.path(),
        &o,
        serve_args(&data, "127.0.0.1:0", &["--without-auth"]),
    );
    // About 0.5 MiB of WAL.
    for k in 0..5 {
        assert_eq!(
            write(&e, "db", &lines(1500, 1_686_441_600 + k * 1500), "").status,
            204
        );
    }
    assert_eq!(e.stop(), 0);
    let wal: u64 = files_under(&data)
        .iter()
        .filter(|p| p.to_string_lossy().ends_with(".wal"))
        .map(|p| std::fs::metadata(p).unwrap().len())
        .sum();
    let want = Duration::from_millis(4000 * wal / (1024 * 1024));
    assert!(want >= Duration::from_millis(500), "{wal} bytes of WAL");
    let t0 = Instant::now();
    let mut e = Emu::start(
        t.path(),
        &o,
        serve_args(&data, "127.0.0.1:0", &["--without-auth"]),
    );
    assert!(t0.elapsed() >= want, "{:?} < {want:?}", t0.elapsed());
    let out = e.output();
    let replay = out.find("replaying WAL files").expect("replay line");
    let done = out
        .find("completed replaying wal files time_taken=")
        .expect("done line");
    assert!(replay < done && done < out.find("startup time: ").unwrap());
    assert_eq!(count(&e, "db"), 7500);
    assert_eq!(e.stop(), 0);
}
