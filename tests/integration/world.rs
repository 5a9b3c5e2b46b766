//! The worlds tests set up: the GreptimeDB release mirror ([`Gt`]), the bench world on top of
//! it ([`World`]: Go, the TSBS tools and a prepared workspace), InfluxDB 3 on the same mirror,
//! the fake TSBS repository, and the HTTP calls tests make to a running GreptimeDB. The generic
//! harness (commands, processes, ports, waits) is in `util.rs`.

use std::path::{Path, PathBuf};
use std::time::Duration;

use serde_json::{json, Value};
use testbed::mirror::Mirror;
use testbed::releases::go as go_release;
use testbed::releases::greptime::{self as rel, GreptimeRelease};
use testbed::tsbs_repo;

use crate::util::*;

/// The directory holding `git`, so a test's PATH can keep git while leaving out other tools.
pub(crate) fn git_dir() -> String {
    let out = std::process::Command::new("sh")
        .args(["-c", "command -v git"])
        .output()
        .expect("sh");
    let p = PathBuf::from(String::from_utf8_lossy(&out.stdout).trim());
    p.parent().expect("git dir").display().to_string()
}

/// Creates a fake TSBS repository under the test's directory and points `env prepare` at it.
pub(crate) fn use_tsbs_repo(env: &mut TestEnv) {
    let (repo, commit) = tsbs_repo::create(env.path()).expect("fake tsbs repo");
    env.env("TSBSCTL_TSBS_REPO", tsbs_repo::url(&repo));
    env.env("TSBSCTL_TSBS_REV", commit);
}

/// [`use_tsbs_repo`], plus the Go version to take from the mirror and a PATH of only git and the base system.
pub(crate) fn use_tsbs_repo_and_mirror_go(env: &mut TestEnv, go: &str) {
    use_tsbs_repo(env);
    env.env("TSBSCTL_GO_VERSION", go);
    env.env("PATH", format!("{}:/bin:/usr/bin", git_dir()));
}

// ---------------------------------------------------------------------------------------------
// GreptimeDB on the release mirror

pub const STABLE: &str = "1.1.4";
pub const OLD: &str = "0.17.2";
pub const BETA: &str = "1.2.0-beta.1";

/// One test's world: a state root, a release mirror with GreptimeDB releases, a knob file.
pub struct Gt {
    pub env: TestEnv,
    pub mirror: Mirror,
    pub knobs: PathBuf,
}

impl Gt {
    /// A mirror publishing [`OLD`], [`STABLE`] (GitHub's latest) and [`BETA`].
    pub fn new() -> Gt {
        let mut env = TestEnv::new();
        let mirror = Mirror::start().expect("mirror");
        let knobs = env.path().join("knobs.json");
        for v in [OLD, STABLE, BETA] {
            rel::publish(&mirror, &GreptimeRelease::new(v).with_knobs(&knobs));
        }
        rel::publish_latest(&mirror, &format!("v{STABLE}"), false, false);
        for (k, v) in mirror.env() {
            env.env(k, v);
        }
        Gt { env, mirror, knobs }
    }

    pub fn set_knobs(&self, v: Value) {
        std::fs::write(&self.knobs, v.to_string()).unwrap();
    }

    pub fn run(&self, args: &[&str]) -> Run {
        self.env.run(args)
    }

    pub fn run_json(&self, args: &[&str]) -> Run {
        self.env.run_json(args)
    }

    pub fn install_dir(&self, version: &str) -> PathBuf {
        self.env
            .root
            .join("greptimedb/installations")
            .join(version)
            .join(host_platform())
    }

    pub fn ws_dir(&self, id: &str) -> PathBuf {
        self.env.root.join("greptimedb/databases").join(id)
    }

    pub fn manifest(&self, id: &str) -> Value {
        read_json(&self.ws_dir(id).join("manifest.json"))
    }

    /// Prepares workspace `id` on a free block of ports; returns its manifest.
    pub fn prepare(&self, id: &str, version: &str) -> Value {
        let port = free_port_block(4).to_string();
        let r = self.run_json(&[
            "greptimedb",
            "prepare",
            "--database-id",
            id,
            "--version",
            version,
            "--http-port",
            &port,
        ]);
        r.ok();
        r.json()["data"]["manifest"].clone()
    }

    /// Starts `tsbsctl greptimedb serve` in the background (short timeouts).
    pub fn serve_bg(&self, id: &str, extra: &[&str]) -> Bg {
        let mut args = vec!["greptimedb", "serve", "--database-id", id];
        for (flag, default) in [("--startup-timeout", "20"), ("--stop-timeout", "2")] {
            if !extra.contains(&flag) {
                args.extend([flag, default]);
            }
        }
        args.extend_from_slice(extra);
        Bg::spawn(&self.env, &args)
    }

    /// Serves `id` until ready, runs `f` against its endpoint, then stops it with Ctrl-C.
    pub fn with_server<T>(&self, id: &str, f: impl FnOnce(&str) -> T) -> T {
        let endpoint = endpoint_of(&self.manifest(id));
        let mut bg = self.serve_bg(id, &[]);
        bg.wait_ready(&endpoint);
        let t = f(&endpoint);
        // Ctrl-C is the normal way to stop it: exit 130, a plain line, no error.
        let r = bg.interrupt();
        r.code(130).says("stopped GreptimeDB");
        assert!(!r.stderr.contains("error:"), "{}", r.describe());
        t
    }
}

/// `linux-amd64`, ... as the state root spells it.
pub fn host_platform() -> String {
    rel::host_platform()
}

pub fn endpoint_of(manifest: &Value) -> String {
    format!("http://127.0.0.1:{}", manifest["ports"]["http"])
}

impl Bg {
    /// Waits (at most 30 s) until `greptimedb serve` says it serves and GreptimeDB answers
    /// `SHOW DATABASES`.
    pub fn wait_ready(&mut self, endpoint: &str) {
        self.wait_serving(|| sql_status(endpoint, "SHOW DATABASES") == Some(200));
    }
}

fn http() -> reqwest::blocking::Client {
    reqwest::blocking::Client::builder()
        .no_proxy()
        .timeout(Duration::from_secs(10))
        .build()
        .unwrap()
}

/// HTTP status of one `/v1/sql` statement, or None when nothing answers.
pub fn sql_status(endpoint: &str, sql: &str) -> Option<u16> {
    sql_status_in(endpoint, "public", sql)
}

/// HTTP status of one `/v1/sql` statement in database `db`.
pub fn sql_status_in(endpoint: &str, db: &str, sql: &str) -> Option<u16> {
    http()
        .post(format!("{endpoint}/v1/sql"))
        .form(&[("sql", sql), ("db", db)])
        .send()
        .ok()
        .map(|r| r.status().as_u16())
}

/// Writes line protocol to `db`; asserts 204.
pub fn write_lines(endpoint: &str, db: &str, lines: &str) {
    let r = http()
        .post(format!("{endpoint}/v1/influxdb/write?db={db}&precision=ns"))
        .body(lines.to_string())
        .send()
        .unwrap();
    assert_eq!(r.status().as_u16(), 204, "{}", r.text().unwrap_or_default());
}

// ---------------------------------------------------------------------------------------------
// The bench world: Go and the TSBS tools from the mirror, workspace `g1` prepared

pub(crate) const GO: &str = "1.22.5";
/// 2 hosts × one day at 60 s.
pub(crate) const ROWS: u64 = 2 * 1440;
pub(crate) const TYPES: [&str; 3] = ["high-cpu-1", "lastpoint", "single-groupby-1-1-1"];

pub(crate) struct World {
    pub(crate) gt: Gt,
    /// Directory of the built TSBS tools' knob files (`<tool>.knobs.json`).
    pub(crate) knobs_dir: PathBuf,
}

/// Mirror with GreptimeDB and Go (knob files in the returned directory), a fake TSBS
/// repository; nothing prepared yet.
pub(crate) fn unprepared() -> (Gt, PathBuf) {
    testbed_bin();
    let mut gt = Gt::new();
    let knobs_dir = gt.env.path().join("knobs");
    std::fs::create_dir_all(&knobs_dir).unwrap();
    go_release::publish(
        &gt.mirror,
        GO,
        &go_release::host_platform(),
        &knobs_dir.join("go.knobs.json"),
    );
    use_tsbs_repo_and_mirror_go(&mut gt.env, GO);
    (gt, knobs_dir)
}

/// Mirror with GreptimeDB and Go, a fake TSBS repository, `env prepare` done, workspace `g1`
/// prepared on free ports.
pub(crate) fn world() -> World {
    let (gt, knobs_dir) = unprepared();
    gt.run(&["env", "prepare"]).ok();
    gt.prepare("g1", STABLE);
    World { gt, knobs_dir }
}

impl World {
    pub(crate) fn run(&self, args: &[&str]) -> Run {
        self.gt.run(args)
    }

    /// [`World::bench`], expected to succeed; returns the run directory.
    pub(crate) fn bench_ok(&self, phase: &str, extra: &[&str]) -> PathBuf {
        let r = self.bench(phase, extra);
        r.ok();
        run_dir(&r)
    }

    /// `influxdb3 prepare` of workspace `id` of `edition` on a free port.
    pub(crate) fn prepare_influx3(&self, id: &str, edition: &str) {
        let port = free_port_block(1).to_string();
        self.run(&[
            "influxdb3",
            "prepare",
            "--database-id",
            id,
            "--edition",
            edition,
            "--http-port",
            &port,
        ])
        .ok();
    }

    /// `bench greptimedb <phase> --database-id g1` with the tiny workload.
    pub(crate) fn bench(&self, phase: &str, extra: &[&str]) -> Run {
        let mut a = vec![
            "bench",
            "greptimedb",
            phase,
            "--database-id",
            "g1",
            "--stop-timeout",
            "5",
        ];
        a.extend_from_slice(extra);
        if !extra.contains(&"--dataset-id") && phase != "compact" {
            a.extend(tiny());
        }
        if matches!(phase, "all" | "query" | "analyze") && !extra.contains(&"--query-type") {
            for t in TYPES {
                a.extend(["--query-type", t]);
            }
            if !extra.contains(&"--queries") {
                a.extend(["--queries", "3"]);
            }
        }
        a.push("--json");
        self.gt.run(&a)
    }

    /// Sets the section of one built TSBS tool in the shared knob file (`go build` bakes that
    /// file into every tool it writes).
    /// `runs report RUNS... --out <test dir>/NAME`, which must succeed; the report's directory.
    pub(crate) fn report(&self, name: &str, runs: &[&Path]) -> PathBuf {
        let out = self.gt.env.path().join(name);
        let mut args = vec!["runs", "report"];
        args.extend(runs.iter().map(|r| r.to_str().unwrap()));
        args.extend(["--out", out.to_str().unwrap()]);
        self.run(&args).ok();
        out
    }

    pub(crate) fn tool_knobs(&self, tool: &str, v: Value) {
        let path = self.knobs_dir.join("go.knobs.json");
        let mut all: Value = std::fs::read(&path)
            .ok()
            .and_then(|b| serde_json::from_slice(&b).ok())
            .unwrap_or_else(|| json!({}));
        all[tool] = v;
        std::fs::write(&path, all.to_string()).unwrap();
    }

    pub(crate) fn ws(&self) -> Value {
        self.gt.manifest("g1")
    }
}

pub(crate) fn tiny() -> [&'static str; 8] {
    [
        "--profile",
        "smoke",
        "--scale",
        "2",
        "--log-interval",
        "60s",
        "--dataset-id",
        "tiny",
    ]
}

pub(crate) fn run_dir(r: &Run) -> PathBuf {
    let v = r.json();
    let d = v["data"]["run_dir"]
        .as_str()
        .map(PathBuf::from)
        .unwrap_or_else(|| {
            // Errors name the summary in the hint.
            let hint = v["error"]["hint"].as_str().unwrap_or_default();
            let i = hint
                .find("summary: ")
                .unwrap_or_else(|| panic!("no run dir\n{}", r.describe()));
            PathBuf::from(hint[i + 9..].trim())
                .parent()
                .unwrap()
                .to_path_buf()
        });
    d
}

pub(crate) fn summary(dir: &Path) -> Value {
    read_json(&dir.join("summary.json"))
}

/// Publishes InfluxDB 3 `edition` 3.11.1 on the mirror (and the installer script naming it).
pub(crate) fn publish_influx3(w: &World, edition: &str) -> PathBuf {
    publish_influx3_version(w, edition, "3.11.1")
}

/// [`publish_influx3`] of `version` (the installer script still names 3.11.1 as the latest).
pub(crate) fn publish_influx3_version(w: &World, edition: &str, version: &str) -> PathBuf {
    use testbed::releases::influxdb3::{installer_script, Installer, Release};
    let knobs =
        w.gt.env
            .path()
            .join(format!("influxdb3-{edition}.knobs.json"));
    std::fs::write(&knobs, json!({"wal_flush_interval_ms": 20}).to_string()).unwrap();
    let r = Release::new(edition, version, &knobs);
    let archive = r.archive();
    let sum = r.checksum_file(&archive).unwrap();
    let base = testbed::mirror::INFLUXDATA_DL;
    w.gt.mirror
        .put_bytes(&format!("{base}{}.sha256", r.path()), sum.into_bytes());
    w.gt.mirror
        .put_bytes(&format!("{base}{}", r.path()), archive);
    w.gt.mirror.put_bytes(
        testbed::mirror::INSTALLER,
        installer_script("3.11.1", "3.11.1", Installer::Good).into_bytes(),
    );
    knobs
}

/// An external InfluxDB 3 Enterprise emulator on a free port, without authentication.
pub(crate) fn enterprise_server(w: &World) -> (std::process::Child, String) {
    let port = free_port_block(1);
    let knobs = w.gt.env.path().join("ent.knobs.json");
    std::fs::write(
        &knobs,
        json!({"wal_flush_interval_ms": 20, "verification_delay_ms": 0}).to_string(),
    )
    .unwrap();
    let data = w.gt.env.path().join("ent-data");
    let child = std::process::Command::new(testbed_bin())
        .args(["emulate", "influxdb3", "serve", "--object-store", "file"])
        .args(["--node-id", "n1", "--cluster-id", "c1"])
        .args([
            "--license-email",
            "someone@example.invalid",
            "--license-type",
            "trial",
        ])
        .arg(format!("--data-dir={}", data.display()))
        .arg(format!("--http-bind=127.0.0.1:{port}"))
        .arg("--without-auth")
        .env("TESTBED_EMULATED_EDITION", "enterprise")
        .env("TESTBED_EMULATED_VERSION", "3.11.1")
        .env("TESTBED_KNOBS", &knobs)
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    assert!(wait_until(Duration::from_secs(20), || {
        std::net::TcpStream::connect(("127.0.0.1", port)).is_ok()
    }));
    (child, format!("http://127.0.0.1:{port}"))
}
