//! `tsbsctl influxdb3 ...`: latest from the installer script, installs per edition, workspaces
//! (Core vs Enterprise identities and flags), licence activation (stdin, environment, licence
//! file, timeout and resume, failures) without a secret anywhere, and the supervisor paths of
//! `serve`, against the release mirror and the `influxdb3` emulator.

use std::io::Write;
use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::{Duration, Instant};

use serde_json::{json, Value};
use testbed::mirror::Mirror;
use testbed::releases::influxdb3::{self as rel, Installer, Release};

use crate::util::*;
use crate::world::{
    enterprise_server, host_platform, publish_influx3, run_dir, summary, tiny, world, World, ROWS,
    TYPES,
};

const V: &str = "3.11.1";
/// Before 3.11: the `INFLUXDB3_ENTERPRISE_LICENSE_*` variable names.
const OLD: &str = "3.10.0";
const EMAIL: &str = "Jane.Doe+bench@secret-corp.example";

struct Ix {
    env: TestEnv,
    mirror: Mirror,
}

impl Ix {
    /// Core and Enterprise [`V`], Enterprise [`OLD`], and the installer naming [`V`] for both.
    fn new() -> Ix {
        let mut env = TestEnv::new();
        let mirror = Mirror::start().expect("mirror");
        for (edition, version) in [("core", V), ("enterprise", V), ("enterprise", OLD)] {
            let ix_knobs = env.path().join(format!("knobs-{edition}-{version}.json"));
            std::fs::write(
                &ix_knobs,
                json!({"wal_flush_interval_ms": 20, "verification_delay_ms": 300}).to_string(),
            )
            .unwrap();
            rel::publish(&mirror, &Release::new(edition, version, &ix_knobs));
        }
        rel::publish_installer(&mirror, V, V);
        for (k, v) in mirror.env() {
            env.env(k, v);
        }
        Ix { env, mirror }
    }

    fn knobs(&self, edition: &str, version: &str, v: Value) {
        let p = self
            .env
            .path()
            .join(format!("knobs-{edition}-{version}.json"));
        let mut base = json!({"wal_flush_interval_ms": 20, "verification_delay_ms": 300});
        for (k, val) in v.as_object().unwrap() {
            base[k] = val.clone();
        }
        std::fs::write(p, base.to_string()).unwrap();
    }

    fn run(&self, args: &[&str]) -> Run {
        self.env.run(args)
    }

    fn run_json(&self, args: &[&str]) -> Run {
        self.env.run_json(args)
    }

    /// Runs with `input` on standard input (a pipe, not a terminal).
    fn run_stdin(&self, args: &[&str], input: &str) -> Run {
        let mut c = self.env.cmd(args);
        c.stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        let mut child = c.spawn().unwrap();
        child
            .stdin
            .take()
            .unwrap()
            .write_all(input.as_bytes())
            .unwrap();
        let out = child.wait_with_output().unwrap();
        Run::from_output(args, out)
    }

    fn ws_dir(&self, id: &str) -> PathBuf {
        self.env.root.join("influxdb3/databases").join(id)
    }

    fn manifest(&self, id: &str) -> Value {
        read_json(&self.ws_dir(id).join("manifest.json"))
    }

    fn install_dir(&self, edition: &str, version: &str) -> PathBuf {
        self.env
            .root
            .join("influxdb3/installations")
            .join(edition)
            .join(version)
            .join(host_platform())
    }

    /// Prepares `id` on a free port; returns the manifest.
    fn prepare(&self, id: &str, edition: &str, version: &str) -> Value {
        let port = free_port_block(1).to_string();
        let r = self.run_json(&[
            "influxdb3",
            "prepare",
            "--database-id",
            id,
            "--edition",
            edition,
            "--version",
            version,
            "--http-port",
            &port,
        ]);
        r.ok();
        r.json()["data"]["manifest"].clone()
    }

    fn activate(&self, id: &str, extra: &[&str]) -> Run {
        let mut a = vec!["influxdb3", "activate", "--database-id", id];
        a.extend_from_slice(extra);
        self.run(&a)
    }

    /// `tsbsctl influxdb3 serve` in the background (short timeouts).
    fn serve_bg(&self, id: &str, extra: &[&str]) -> Bg {
        let mut args = vec!["influxdb3", "serve", "--database-id", id];
        for (flag, default) in [("--startup-timeout", "20"), ("--stop-timeout", "5")] {
            if !extra.contains(&flag) {
                args.extend([flag, default]);
            }
        }
        args.extend_from_slice(extra);
        Bg::spawn(&self.env, &args)
    }

    fn pid_of(&self, id: &str) -> Option<u32> {
        let p = self.ws_dir(id).join("server.pid");
        p.exists()
            .then(|| read_json(&p)["pid"].as_u64().unwrap() as u32)
    }

    fn server_log(&self, id: &str) -> String {
        std::fs::read_to_string(self.ws_dir(id).join("logs/server.log")).unwrap_or_default()
    }
}

fn endpoint(m: &Value) -> String {
    format!("http://127.0.0.1:{}", m["ports"]["http"])
}

fn health(ep: &str) -> Option<u16> {
    reqwest::blocking::Client::builder()
        .no_proxy()
        .timeout(Duration::from_secs(2))
        .build()
        .unwrap()
        .get(format!("{ep}/health"))
        .send()
        .ok()
        .map(|r| r.status().as_u16())
}

/// Waits (at most 30 s) until `serve` says it serves and `/health` answers 200.
fn wait_serving(bg: &mut Bg, ep: &str) {
    bg.wait_serving(|| health(ep) == Some(200));
}

/// The claims of the JWT-shaped licence the emulator stored (read by the test, never by
/// tsbsctl).
fn licence_claims(path: &Path) -> Value {
    let text = std::fs::read_to_string(path).unwrap();
    let payload = text.trim().split('.').nth(1).unwrap();
    let mut bits = 0u32;
    let mut n = 0;
    let mut out = Vec::new();
    for c in payload.bytes() {
        let v = match c {
            b'A'..=b'Z' => c - b'A',
            b'a'..=b'z' => c - b'a' + 26,
            b'0'..=b'9' => c - b'0' + 52,
            b'-' => 62,
            b'_' => 63,
            _ => continue,
        } as u32;
        bits = (bits << 6) | v;
        n += 6;
        if n >= 8 {
            n -= 8;
            out.push((bits >> n) as u8);
            bits &= (1 << n) - 1;
        }
    }
    serde_json::from_slice(&out).unwrap()
}

fn trial_licence(ix: &Ix, id: &str) -> PathBuf {
    let m = ix.manifest(id);
    ix.ws_dir(id)
        .join("data")
        .join(m["cluster_id"].as_str().unwrap())
        .join("trial_or_home_license")
}

// ---------------------------------------------------------------------------------------------

#[test]
fn latest_comes_from_the_installer_script_or_fails_clearly() {
    let mut ix = Ix::new();
    let r = ix.run_json(&["influxdb3", "install", "--edition", "enterprise"]);
    r.ok()
        .says("InfluxDB 3 Enterprise 3.11.1: the version InfluxData's installer script names");
    let m = &r.json()["data"]["manifest"];
    assert_eq!(m["version_source"], "installer-script");
    assert_eq!(m["edition"], "enterprise");
    let installed = all_files(&ix.env.root.join("influxdb3/installations")).len();

    for (variant, var) in [
        (Installer::MissingCore, "does not set INFLUXDB_OSS_VERSION"),
        (
            Installer::DuplicateCore,
            "sets INFLUXDB_OSS_VERSION 2 times",
        ),
        (
            Installer::UnquotedCore,
            "assigns INFLUXDB_OSS_VERSION without quotes",
        ),
        (
            Installer::OldSingleVersion,
            "does not set INFLUXDB_OSS_VERSION",
        ),
        (
            Installer::DuplicateEnterprise,
            "sets INFLUXDB_ENT_VERSION 2 times",
        ),
        (
            Installer::UnquotedEnterprise,
            "assigns INFLUXDB_ENT_VERSION without quotes",
        ),
    ] {
        rel::publish_installer_variant(&ix.mirror, V, V, variant);
        let edition = if var.contains("ENT") {
            "enterprise"
        } else {
            "core"
        };
        ix.run(&["influxdb3", "install", "--edition", edition, "--reinstall"])
            .code(1)
            .says(var)
            .says("pass an exact --version");
        // Another assignment's problems do not matter to this edition.
        if variant == Installer::UnquotedCore {
            ix.run(&["influxdb3", "install", "--edition", "enterprise"])
                .ok();
        }
    }
    assert_eq!(
        all_files(&ix.env.root.join("influxdb3/installations")).len(),
        installed,
        "a failed resolution changed the installations"
    );
    for bad in ["latest", "v3.11.1", "3.11"] {
        ix.run(&[
            "influxdb3",
            "install",
            "--edition",
            "core",
            "--version",
            bad,
        ])
        .code(2)
        .says("not an exact version");
    }
    ix.run(&["influxdb3", "install", "--edition", "cloud"])
        .code(2);
    // Unreachable installer: a clear failure naming what to do.
    ix.env.env(
        "TSBSCTL_INFLUXDB3_INSTALLER_URL",
        format!("{}/nothing-here.sh", ix.mirror.base_url()),
    );
    ix.run(&["influxdb3", "install", "--edition", "core"])
        .code(1)
        .says("installer script");
}

#[test]
fn installs_per_edition_are_verified_and_reused() {
    let ix = Ix::new();
    let r = ix.run_json(&["influxdb3", "install", "--edition", "core", "--version", V]);
    r.ok();
    assert_eq!(r.json()["data"]["reused"], false);
    assert_eq!(r.json()["data"]["manifest"]["version_source"], "explicit");
    let core = ix.install_dir("core", V);
    assert!(core.join("influxdb3").is_file());
    let link = core.join("python/lib/libpython.so");
    assert!(std::fs::symlink_metadata(&link)
        .unwrap()
        .file_type()
        .is_symlink());
    let archives = |m: &Mirror| {
        m.requests()
            .iter()
            .filter(|r| r.path.ends_with(".tar.gz"))
            .count()
    };
    let before = archives(&ix.mirror);
    let r = ix.run_json(&["influxdb3", "install", "--edition", "core", "--version", V]);
    assert_eq!(r.json()["data"]["reused"], true);
    assert_eq!(archives(&ix.mirror), before, "a reuse downloaded again");
    // The other edition of the same version is its own installation.
    ix.run(&[
        "influxdb3",
        "install",
        "--edition",
        "enterprise",
        "--version",
        V,
    ])
    .ok();
    assert!(ix.install_dir("enterprise", V).join("influxdb3").is_file());
    // A binary that reports the wrong edition is not installed.
    ix.knobs(
        "enterprise",
        OLD,
        json!({"version_output": format!("influxdb3 InfluxDB 3 Core, {OLD}, revision x")}),
    );
    ix.run(&[
        "influxdb3",
        "install",
        "--edition",
        "enterprise",
        "--version",
        OLD,
    ])
    .code(4)
    .says("InfluxDB 3 Enterprise, 3.10.0");
    assert!(!ix.install_dir("enterprise", OLD).exists());
    // A missing release is a clear failure.
    ix.run(&[
        "influxdb3",
        "install",
        "--edition",
        "core",
        "--version",
        "3.9.9",
    ])
    .code(1);
}

/// F7: a reinstall that brings another binary says at once which workspaces it strands, and
/// `verify` then names a repair that exists, once (there is no `influxdb3 copy`).
#[test]
fn a_reinstall_that_strands_workspaces_says_so_and_the_hint_names_real_commands() {
    let ix = Ix::new();
    ix.prepare("s1", "core", V);
    // The same version republished as another binary (its wrapper names other knobs).
    let other = ix.env.path().join("knobs-other.json");
    std::fs::write(&other, json!({"wal_flush_interval_ms": 20}).to_string()).unwrap();
    rel::publish(&ix.mirror, &Release::new("core", V, &other));
    let r = ix.run(&[
        "influxdb3",
        "install",
        "--edition",
        "core",
        "--version",
        V,
        "--reinstall",
    ]);
    r.ok()
        .says("workspace(s) s1 are bound to")
        .says("they no longer verify or run: prepare new workspaces");
    assert!(!r.stderr.contains("copy"), "{}", r.stderr);
    let v = ix.run(&["influxdb3", "verify", "--database-id", "s1"]);
    v.code(4).says("no installed version has");
    let hint = v
        .stderr
        .lines()
        .find(|l| l.starts_with("hint:"))
        .expect("a hint");
    assert_eq!(
        hint.matches("no installed version has").count(),
        1,
        "{hint}"
    );
    assert!(!hint.contains("copy"), "{hint}");
    // An install that is not a reinstall, or reinstalls the same binary, says nothing of it.
    let r = ix.run(&[
        "influxdb3",
        "install",
        "--edition",
        "core",
        "--version",
        V,
        "--reinstall",
    ]);
    r.ok();
    assert!(!r.stderr.contains("no longer verify"), "{}", r.stderr);
}

#[test]
fn core_and_enterprise_workspaces_have_their_own_identities() {
    let ix = Ix::new();
    // Default port 8181 (not served here).
    let r = ix.run_json(&[
        "influxdb3",
        "prepare",
        "--database-id",
        "core_1.a",
        "--edition",
        "core",
        "--version",
        V,
    ]);
    r.ok();
    let c = r.json()["data"]["manifest"].clone();
    assert_eq!(c["ports"]["http"], 8181);
    assert_eq!(c["edition"], "core");
    assert_eq!(c["node_id"], "core-1-a-node");
    assert_eq!(c["cluster_id"], Value::Null);
    assert_eq!(c["license"]["status"], "not-required");
    assert_eq!(c["license"]["source"], Value::Null);
    assert_eq!(c["database"], "benchmark");
    assert!(ix.ws_dir("core_1.a").join("data").is_dir());
    assert!(ix.ws_dir("core_1.a").join("logs").is_dir());

    let e = ix.prepare("ent.1", "enterprise", V);
    assert_eq!(e["node_id"], "ent-1-node");
    assert_eq!(e["cluster_id"], "ent-1-cluster");
    assert_eq!(e["license"]["status"], "unconfigured");
    let again = ix.run_json(&[
        "influxdb3",
        "prepare",
        "--database-id",
        "ent.1",
        "--edition",
        "enterprise",
    ]);
    again.ok();
    assert_eq!(again.json()["data"]["reused"], true);

    // Immutable edition; a stray directory is not adopted.
    ix.run(&[
        "influxdb3",
        "prepare",
        "--database-id",
        "ent.1",
        "--edition",
        "core",
        "--version",
        V,
    ])
    .code(2)
    .says("cannot become InfluxDB 3 Core");
    let stray = ix.ws_dir("stray");
    std::fs::create_dir_all(&stray).unwrap();
    std::fs::write(stray.join("notes.txt"), "mine").unwrap();
    ix.run(&[
        "influxdb3",
        "prepare",
        "--database-id",
        "stray",
        "--edition",
        "core",
        "--version",
        V,
    ])
    .code(2)
    .says("not adopted");
    assert!(!stray.join("manifest.json").exists());

    // A manifest naming no known edition is damage, not a guess.
    let odd = ix.ws_dir("odd");
    std::fs::create_dir_all(&odd).unwrap();
    let mut om = ix.manifest("ent.1");
    om["edition"] = json!("cloud");
    om["database_id"] = json!("odd");
    std::fs::write(odd.join("manifest.json"), om.to_string()).unwrap();
    ix.run(&["influxdb3", "serve", "--database-id", "odd"])
        .code(4)
        .says("names no InfluxDB 3 edition");
    ix.run(&["influxdb3", "inspect", "--database-id", "odd"])
        .ok();
    std::fs::remove_dir_all(&odd).unwrap();

    // list, inspect, verify: both editions, with their licences.
    let l = ix.run_json(&["influxdb3", "list"]);
    let ws = l.json()["data"]["workspaces"].as_array().unwrap().clone();
    let state = |id: &str| {
        ws.iter()
            .find(|w| w["database_id"] == id)
            .map(|w| w["state"].as_str().unwrap().to_string())
    };
    assert_eq!(state("core_1.a").as_deref(), Some("ok"));
    assert_eq!(state("ent.1").as_deref(), Some("ok"), "{ws:?}");
    assert_eq!(state("stray").as_deref(), Some("unprepared"));
    ix.run(&["influxdb3", "list"])
        .ok()
        .says("enterprise")
        .says("unconfigured");
    ix.run(&["influxdb3", "inspect", "--database-id", "ent.1"])
        .ok()
        .says("cluster id: ent-1-cluster")
        .says("licence: unconfigured");
    ix.run(&["influxdb3", "verify", "--database-id", "ent.1"])
        .ok();
    ix.run(&["influxdb3", "verify", "--database-id", "core_1.a"])
        .ok();
    ix.run(&["influxdb3", "verify", "--database-id", "nope"])
        .code(2)
        .says("--edition core|enterprise");

    // An Enterprise workspace without an active licence refuses to start, naming the fix.
    ix.run(&["influxdb3", "serve", "--database-id", "ent.1"])
        .code(2)
        .says("no active licence (licence status: unconfigured)")
        .says("tsbsctl influxdb3 activate --database-id ent.1");
    assert!(ix.pid_of("ent.1").is_none());
    // Core needs no licence: activation is refused.
    ix.activate("core_1.a", &["--license-type", "trial"])
        .code(2)
        .says("needs no licence");
    ix.run(&[
        "influxdb3",
        "remove",
        "--database-id",
        "ent.1",
        "--confirm",
        "ent.1",
    ])
    .ok();
    assert!(!ix.ws_dir("ent.1").exists());
}

#[test]
fn activation_from_the_environment_then_serve_with_enterprise_flags() {
    let mut ix = Ix::new();
    let m = ix.prepare("ent", "enterprise", V);
    ix.knobs(
        "enterprise",
        V,
        json!({"verification_delay_ms": 2500, "log_lines": [
            {"at": "start", "level": "WARN", "message": "licence for colleague@partner.example about to expire"}
        ]}),
    );
    ix.env.env("PRIVATE_MAIL", EMAIL);
    // The default variable is empty: a clear error naming it, before anything starts.
    let unset = ix.activate("ent", &["--license-type", "trial"]);
    unset.code(2).says("$INFLUXDB3_LICENSE_EMAIL");
    let r = ix.run_json(&[
        "influxdb3",
        "activate",
        "--database-id",
        "ent",
        "--license-type",
        "trial",
        "--license-email-env",
        "PRIVATE_MAIL",
        "--timeout",
        "10",
    ]);
    r.ok()
        .says("open it and click the link")
        .says("still waiting for the e-mail confirmation");
    let d = &r.json()["data"];
    assert_eq!(d["license"]["status"], "active");
    assert_eq!(d["license"]["source"], "trial");
    assert_eq!(d["license"]["path"], Value::Null);
    assert_eq!(d["license"]["last_attempt"]["result"], "active");
    assert_eq!(d["diagnostics"]["warnings"], 1, "{d}");
    let sample = d["diagnostics"]["samples"][0]["message"].as_str().unwrap();
    assert!(sample.contains("<redacted-email>"), "{sample}");
    // The e-mail reached the server (the licence it stored names it), and nothing else.
    let claims = licence_claims(&trial_licence(&ix, "ent"));
    assert_eq!(claims["email"], EMAIL);
    assert_eq!(claims["license_type"], "trial");
    let log =
        std::fs::read_to_string(ix.ws_dir("ent").join("logs/license-activation.log")).unwrap();
    assert!(
        log.contains("requesting license email=<redacted-email>"),
        "{log}"
    );
    assert!(log.contains("valid license found"), "{log}");
    assert_eq!(ix.manifest("ent")["license"]["status"], "active");
    assert!(
        ix.pid_of("ent").is_none(),
        "the activation server was stopped"
    );

    // Again: already active, nothing started.
    let again = ix.run_json(&[
        "influxdb3",
        "activate",
        "--database-id",
        "ent",
        "--license-type",
        "trial",
        "--license-email-env",
        "PRIVATE_MAIL",
    ]);
    again.ok();
    assert_eq!(again.json()["data"]["reused"], true);

    // Serving finds the stored licence; Enterprise flags on the command line, no e-mail.
    let ep = endpoint(&m);
    let mut bg = ix.serve_bg("ent", &[]);
    wait_serving(&mut bg, &ep);
    let served = bg.interrupt();
    served.code(130);
    let slog = ix.server_log("ent");
    assert!(slog.contains("--cluster-id=ent-cluster"), "{slog}");
    assert!(slog.contains("--node-id=ent-node"), "{slog}");
    assert!(!slog.contains("--license-file"), "{slog}");
    assert_no_secret(ix.env.path(), EMAIL, &[&unset, &r, &again, &served]);
    // Anything e-mail shaped the server printed is redacted too.
    assert_no_secret(&ix.env.root, "colleague@partner.example", &[&r]);
    assert_no_secret(
        ix.env.path(),
        &EMAIL.to_lowercase(),
        &[&unset, &r, &again, &served],
    );
}

#[test]
fn activation_from_stdin_times_out_pending_then_resumes() {
    let mut ix = Ix::new();
    ix.prepare("ent", "enterprise", V);
    // stdin wins over the environment variable.
    ix.env
        .env("INFLUXDB3_LICENSE_EMAIL", "someone.else@other.example");
    ix.knobs("enterprise", V, json!({"never_verify": true}));
    let args = [
        "influxdb3",
        "activate",
        "--database-id",
        "ent",
        "--license-type",
        "home",
        "--license-email-stdin",
        "--timeout",
        "3",
        "--stop-timeout",
        "2",
    ];
    let t = ix.run_stdin(&args, &format!("{EMAIL}\n"));
    t.code(1)
        .says("not confirmed within 3s")
        .says("licence is pending")
        .says("again to resume")
        .says("still waiting for the e-mail confirmation");
    let lic = &ix.manifest("ent")["license"];
    assert_eq!(lic["status"], "pending");
    assert_eq!(lic["source"], "home");
    assert_eq!(lic["last_attempt"]["result"], "timeout");
    assert!(ix.pid_of("ent").is_none());
    let log_path = ix.ws_dir("ent").join("logs/license-activation.log");
    assert!(std::fs::read_to_string(&log_path)
        .unwrap()
        .contains("Waiting for verification"));
    ix.run(&["influxdb3", "serve", "--database-id", "ent"])
        .code(2)
        .says("licence status: pending");

    // The person confirmed the e-mail; running activate again completes it.
    ix.knobs("enterprise", V, json!({"verification_delay_ms": 200}));
    let ok = ix.run_stdin(&args[..9], &format!("{EMAIL}\r\nignored second line\n"));
    ok.ok();
    let lic = &ix.manifest("ent")["license"];
    assert_eq!(lic["status"], "active");
    assert_eq!(lic["source"], "home");
    assert_eq!(licence_claims(&trial_licence(&ix, "ent"))["email"], EMAIL);
    let log = std::fs::read_to_string(&log_path).unwrap();
    assert_eq!(
        log.matches("licence activation attempt").count(),
        2,
        "{log}"
    );
    assert_no_secret(ix.env.path(), EMAIL, &[&t, &ok]);

    // Bad input from stdin: nothing echoed, nothing changed.
    let bad = ix.run_stdin(&args, "not an address\n");
    bad.code(2).says("does not look like an e-mail address");
    assert!(!bad.stderr.contains("not an address"));
    ix.run_stdin(&args, "").code(2).says("standard input");
}

#[test]
fn failing_activation_leaks_nothing_and_changes_no_licence() {
    let mut ix = Ix::new();
    ix.prepare("ent", "enterprise", V);
    ix.env.env("INFLUXDB3_LICENSE_EMAIL", EMAIL);
    ix.knobs("enterprise", V, json!({"license_server_status": 402}));
    let r = ix.activate("ent", &["--license-type", "trial", "--timeout", "20"]);
    r.code(1)
        .says("stopped during activation")
        .says("trial license has already been used");
    let lic = &ix.manifest("ent")["license"];
    assert_eq!(lic["status"], "unconfigured");
    assert_eq!(lic["last_attempt"]["result"], "server-exited");
    let log =
        std::fs::read_to_string(ix.ws_dir("ent").join("logs/license-activation.log")).unwrap();
    assert!(log.contains("<redacted-email>"), "{log}");
    assert_no_secret(ix.env.path(), EMAIL, &[&r]);
}

#[test]
fn legacy_versions_get_the_old_variable_names_under_the_workspace_lock() {
    let mut ix = Ix::new();
    ix.prepare("old", "enterprise", OLD);
    ix.env.env("INFLUXDB3_LICENSE_EMAIL", EMAIL);
    // A manual hold is respected; its token lets the activation in.
    let h = ix.run_json(&["workspace", "lock", "old", "--reason", "licence work"]);
    h.ok();
    let token = h.json()["data"]["token"].as_str().unwrap().to_string();
    ix.activate("old", &["--license-type", "trial"])
        .code(3)
        .says("licence work");
    let r = ix.activate(
        "old",
        &[
            "--license-type",
            "trial",
            "--timeout",
            "20",
            "--hold-token",
            &token,
        ],
    );
    r.ok();
    let log =
        std::fs::read_to_string(ix.ws_dir("old").join("logs/license-activation.log")).unwrap();
    // 3.10 reads only INFLUXDB3_ENTERPRISE_LICENSE_*: no deprecation warning, a licence stored.
    assert!(!log.contains("deprecated environment variable"), "{log}");
    assert_eq!(licence_claims(&trial_licence(&ix, "old"))["email"], EMAIL);
    assert_eq!(ix.manifest("old")["license"]["status"], "active");
    assert_no_secret(ix.env.path(), EMAIL, &[&r, &h]);
}

#[test]
fn licence_file_is_recorded_by_path_and_never_opened() {
    let ix = Ix::new();
    let m = ix.prepare("ent", "enterprise", V);
    let jwt = testbed::emulators::influxdb3::make_license(EMAIL, "trial", "ent-cluster");
    let file = ix.env.path().join("cwd/licence.jwt");
    std::fs::write(&file, &jwt).unwrap();
    // Unreadable: tsbsctl must not need to open it (only the server reads it).
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(&file, std::fs::Permissions::from_mode(0o000)).unwrap();
    let root_user = unsafe { libc::geteuid() } == 0;

    // Usage errors first: exactly one source; e-mail flags need a licence type.
    ix.activate("ent", &[]).code(2);
    ix.activate(
        "ent",
        &["--license-type", "trial", "--license-file", "licence.jwt"],
    )
    .code(2);
    ix.activate(
        "ent",
        &["--license-file", "licence.jwt", "--license-email-stdin"],
    )
    .code(2);
    ix.activate("ent", &["--license-file", "missing.jwt"])
        .code(2)
        .says("missing.jwt");

    // A relative path is recorded absolute.
    let r = ix.run_json(&[
        "influxdb3",
        "activate",
        "--database-id",
        "ent",
        "--license-file",
        "licence.jwt",
        "--timeout",
        "20",
    ]);
    if root_user {
        // The server (as root) can read it; tsbsctl never looked inside.
        r.ok();
        let lic = &r.json()["data"]["license"];
        assert_eq!(lic["status"], "active");
        assert_eq!(lic["source"], "file");
        assert_eq!(lic["path"], file.to_str().unwrap());
        std::fs::set_permissions(&file, std::fs::Permissions::from_mode(0o600)).unwrap();
        let ep = endpoint(&m);
        let mut bg = ix.serve_bg("ent", &[]);
        wait_serving(&mut bg, &ep);
        bg.interrupt().code(130);
        assert!(ix
            .server_log("ent")
            .contains(&format!("--license-file={}", file.display())));
    } else {
        // The server could not read it: the failure is the server's, not tsbsctl's.
        r.code(1).says("unable to read license file");
    }
    // The licence's contents (and the e-mail inside them) appear nowhere tsbsctl writes.
    std::fs::remove_file(&file).unwrap();
    let sig = jwt.rsplit('.').next().unwrap();
    assert_no_secret(&ix.env.root, sig, &[&r]);
    assert_no_secret(&ix.env.root, &jwt[..40], &[&r]);
    assert_no_secret(ix.env.path(), EMAIL, &[&r]);
}

#[test]
fn serve_supervisor_paths() {
    let ix = Ix::new();
    let m = ix.prepare("c", "core", V);
    let ep = endpoint(&m);
    let port = m["ports"]["http"].as_u64().unwrap() as u16;

    // Port taken: nothing starts.
    {
        let _holder = TcpListener::bind(("127.0.0.1", port)).unwrap();
        ix.run(&["influxdb3", "serve", "--database-id", "c"])
            .code(1)
            .says(&format!("http port 127.0.0.1:{port} is unavailable"));
        assert!(ix.pid_of("c").is_none());
    }
    // Exit during start.
    ix.knobs("core", V, json!({"exit_during_start": 7}));
    ix.run(&["influxdb3", "serve", "--database-id", "c"])
        .code(1)
        .says("exited during startup (exit code 7)");
    // Never ready: the startup timeout stops it.
    ix.knobs("core", V, json!({"never_ready": true}));
    ix.run(&[
        "influxdb3",
        "serve",
        "--database-id",
        "c",
        "--startup-timeout",
        "1",
        "--stop-timeout",
        "2",
    ])
    .code(1)
    .says("was not ready within 1s");
    assert!(ix.pid_of("c").is_none());
    // SIGTERM ignored: SIGKILL after the grace period.
    ix.knobs("core", V, json!({"hang_on_sigterm": true}));
    let mut bg = ix.serve_bg("c", &["--stop-timeout", "0.5"]);
    wait_serving(&mut bg, &ep);
    let pid = ix.pid_of("c").unwrap();
    bg.interrupt().code(130);
    assert!(gone_within(pid, 5));
    assert!(ix.server_log("c").contains("killed after the grace period"));
    // Core gets no --cluster-id.
    assert!(!ix.server_log("c").contains("--cluster-id"));
    assert!(ix.server_log("c").contains("--node-id=c-node"));

    // tsbsctl killed: the server dies with it; the next start reports the stale record.
    ix.knobs("core", V, json!({}));
    let mut bg = ix.serve_bg("c", &[]);
    wait_serving(&mut bg, &ep);
    let pid = ix.pid_of("c").unwrap();
    bg.signal(libc::SIGKILL);
    bg.wait();
    assert!(
        gone_within(pid, 5),
        "server {pid} outlived a SIGKILLed tsbsctl"
    );
    assert!(ix.pid_of("c").is_some());
    let mut bg = ix.serve_bg("c", &[]);
    wait_serving(&mut bg, &ep);
    assert!(
        bg.stderr().contains("was not stopped by tsbsctl"),
        "{}",
        bg.stderr()
    );
    let pid = ix.pid_of("c").unwrap();

    bg.interrupt().code(130);
    assert!(gone_within(pid, 5));

    // A live orphan (a server of this workspace whose tsbsctl is gone, as on a system without
    // parent-death signals) is refused, then stopped with --kill-orphan.
    let rec_path = ix.ws_dir("c").join("server.pid");
    let mut orphan = std::process::Command::new(ix.install_dir("core", V).join("influxdb3"))
        .args(["serve", "--object-store=file"])
        .arg(format!(
            "--data-dir={}",
            ix.ws_dir("c").join("data").display()
        ))
        .args([
            "--node-id=c-node",
            &format!("--http-bind=127.0.0.1:{port}"),
            "--without-auth",
        ])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .process_group(0)
        .spawn()
        .unwrap();
    let opid = orphan.id();
    let deadline = Instant::now() + Duration::from_secs(20);
    while health(&ep) != Some(200) {
        assert!(Instant::now() < deadline, "orphan not ready");
        std::thread::sleep(Duration::from_millis(50));
    }
    let start = proc_start_time(opid);
    let mut rec = json!({
        "program": ix.install_dir("core", V).join("influxdb3"),
        "log": ix.ws_dir("c").join("logs/server.log"),
        "started_at": "2026-11-29T00:00:00.000000Z",
        "tsbsctl_pid": 999_999_999u32,
    });
    rec["pid"] = json!(opid);
    rec["pgid"] = json!(opid);
    rec["start_time"] = json!(start);
    std::fs::write(&rec_path, rec.to_string()).unwrap();
    ix.run(&["influxdb3", "serve", "--database-id", "c"])
        .code(3)
        .says(&format!("pid {opid}"))
        .says("--kill-orphan");
    let mut bg = ix.serve_bg("c", &["--kill-orphan"]);
    let reaper = std::thread::spawn(move || orphan.wait());
    wait_serving(&mut bg, &ep);
    reaper.join().unwrap().unwrap();
    assert!(!alive(opid));
    let new_pid = ix.pid_of("c").unwrap();
    // Ctrl-C is the normal way to stop it: exit 130, a plain line, no error.
    let r = bg.interrupt();
    r.code(130).says("stopped InfluxDB 3");
    assert!(!r.stderr.contains("error:"), "{}", r.describe());
    assert!(gone_within(new_pid, 5));
}

use std::os::unix::process::CommandExt;

/// A fresh pseudo-terminal: (master, slave).
fn open_pty() -> (std::fs::File, std::fs::File) {
    use std::os::fd::FromRawFd;
    let (mut master, mut slave) = (0, 0);
    // SAFETY: openpty fills two fresh descriptors we own from here on.
    let rc = unsafe {
        libc::openpty(
            &mut master,
            &mut slave,
            std::ptr::null_mut(),
            std::ptr::null(),
            std::ptr::null(),
        )
    };
    assert_eq!(rc, 0, "openpty");
    // SAFETY: both descriptors were just opened and are owned by these Files.
    unsafe {
        (
            std::fs::File::from_raw_fd(master),
            std::fs::File::from_raw_fd(slave),
        )
    }
}

#[test]
fn email_typed_on_a_terminal_is_not_echoed() {
    use std::io::Read;
    let ix = Ix::new();
    ix.prepare("ent", "enterprise", V);
    let (master, slave) = open_pty();
    let args = [
        "influxdb3",
        "activate",
        "--database-id",
        "ent",
        "--license-type",
        "trial",
        "--license-email-stdin",
        "--timeout",
        "20",
    ];
    let mut c = ix.env.cmd(&args);
    c.stdin(Stdio::from(slave.try_clone().unwrap()))
        .stdout(Stdio::from(slave.try_clone().unwrap()))
        .stderr(Stdio::from(slave));
    let mut child = c.spawn().unwrap();
    drop(c);
    let mut reader = master.try_clone().unwrap();
    let seen = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
    let sink = std::sync::Arc::clone(&seen);
    let t = std::thread::spawn(move || {
        let mut buf = [0u8; 4096];
        while let Ok(n) = reader.read(&mut buf) {
            if n == 0 {
                break;
            }
            sink.lock().unwrap().extend_from_slice(&buf[..n]);
        }
    });
    let deadline = Instant::now() + Duration::from_secs(20);
    while !String::from_utf8_lossy(&seen.lock().unwrap()).contains("(not echoed)") {
        assert!(Instant::now() < deadline, "no prompt");
        std::thread::sleep(Duration::from_millis(20));
    }
    (&master)
        .write_all(format!("{EMAIL}\n").as_bytes())
        .unwrap();
    let deadline = Instant::now() + Duration::from_secs(30);
    let status = loop {
        if let Some(s) = child.try_wait().unwrap() {
            break s;
        }
        assert!(Instant::now() < deadline, "activate did not finish");
        std::thread::sleep(Duration::from_millis(20));
    };
    drop(master);
    let _ = t.join();
    let out = String::from_utf8_lossy(&seen.lock().unwrap()).into_owned();
    assert!(status.success(), "{out}");
    assert!(!out.contains(EMAIL), "the e-mail was echoed:\n{out}");
    assert_eq!(ix.manifest("ent")["license"]["status"], "active");
    assert_eq!(licence_claims(&trial_licence(&ix, "ent"))["email"], EMAIL);
    assert_no_secret(&ix.env.root, EMAIL, &[]);
}

#[test]
fn ctrl_c_while_waiting_for_the_confirmation_stops_the_server_and_leaves_it_pending() {
    let mut ix = Ix::new();
    ix.prepare("ent", "enterprise", V);
    ix.env.env("INFLUXDB3_LICENSE_EMAIL", EMAIL);
    ix.knobs("enterprise", V, json!({"never_verify": true}));
    let args = [
        "influxdb3",
        "activate",
        "--database-id",
        "ent",
        "--license-type",
        "trial",
        "--stop-timeout",
        "2",
    ];
    let mut bg = Bg::spawn(&ix.env, &args);
    let deadline = Instant::now() + Duration::from_secs(20);
    while !bg.stderr().contains("click the link") {
        assert!(Instant::now() < deadline, "no instruction\n{}", bg.stderr());
        std::thread::sleep(Duration::from_millis(20));
    }
    let pid = ix.pid_of("ent").expect("the activation server runs");
    let r = bg.interrupt();
    r.code(130).says("again to resume");
    assert!(gone_within(pid, 5));
    assert!(ix.pid_of("ent").is_none());
    let lic = &ix.manifest("ent")["license"];
    assert_eq!(lic["status"], "pending");
    assert_eq!(lic["last_attempt"]["result"], "interrupted");
    assert_no_secret(ix.env.path(), EMAIL, &[&r]);
}

#[test]
fn ctrl_c_at_the_email_prompt_exits_130_and_restores_the_terminal() {
    use std::os::fd::AsRawFd;
    let ix = Ix::new();
    ix.prepare("ent", "enterprise", V);
    let (_master, slave) = open_pty();
    let args = [
        "influxdb3",
        "activate",
        "--database-id",
        "ent",
        "--license-type",
        "trial",
        "--license-email-stdin",
    ];
    let err = ix.env.path().join("prompt.err");
    let mut c = ix.env.cmd(&args);
    c.stdin(Stdio::from(slave.try_clone().unwrap()))
        .stdout(Stdio::null())
        .stderr(Stdio::from(std::fs::File::create(&err).unwrap()));
    let mut bg = Bg {
        child: Some(c.spawn().unwrap()),
        args: args.iter().map(|s| s.to_string()).collect(),
        out: ix.env.path().join("prompt.out"),
        err,
    };
    let echo_on = |f: &std::fs::File| {
        // SAFETY: tcgetattr on a terminal descriptor we own, into a zeroed struct.
        let mut t: libc::termios = unsafe { std::mem::zeroed() };
        assert_eq!(unsafe { libc::tcgetattr(f.as_raw_fd(), &mut t) }, 0);
        t.c_lflag & libc::ECHO != 0
    };
    let deadline = Instant::now() + Duration::from_secs(20);
    while echo_on(&slave) {
        assert!(
            Instant::now() < deadline,
            "echo never turned off\n{}",
            bg.stderr()
        );
        std::thread::sleep(Duration::from_millis(20));
    }
    let r = bg.interrupt();
    r.code(130);
    assert!(echo_on(&slave), "the terminal was left without echo");
    assert_eq!(ix.manifest("ent")["license"]["status"], "unconfigured");
}

/// `bench influxdb3 <phase>` of managed workspace `id` with the tiny workload.
pub(crate) fn bench_influx3(w: &World, id: &str, phase: &str, extra: &[&str]) -> Run {
    let mut args = vec![
        "bench",
        "influxdb3",
        phase,
        "--database-id",
        id,
        "--stop-timeout",
        "10",
    ];
    args.extend_from_slice(extra);
    args.extend(tiny());
    if phase != "load" {
        for t in TYPES {
            args.extend(["--query-type", t]);
        }
        args.extend(["--queries", "3"]);
    }
    args.push("--json");
    w.run(&args)
}

/// F1 of the first real run: a `--no-sync` count slower than the old wait bound (one 61 s
/// count at 2.6 M rows used it all up, then "did not store every row"). The bound is in
/// counts now, not in the time the counts take: each count here takes about 10 s (the knob
/// makes the count as slow, per row, as that real one, scaled to this table), the first
/// comes up short, and the second finds every row.
/// Loads workspace `id` (with `extra`) until the first post-load count comes up short, at
/// most five times: whether it does depends on the server's clock, and a load whose first
/// count already had every row proves nothing about the recount. Returns the last load.
fn load_until_the_first_count_is_short(w: &World, id: &str, extra: &[&str]) -> Run {
    let mut r = bench_influx3(w, id, "load", extra);
    for _ in 0..4 {
        r.ok();
        let first = summary(&run_dir(&r))["row_count"]["wait"]["counts"][0].as_u64();
        if first.is_some_and(|n| n < ROWS) {
            break;
        }
        let mut again = extra.to_vec();
        again.extend(["--database-mode", "reset", "--confirm-reset", "benchmark"]);
        r = bench_influx3(w, id, "load", &again);
    }
    r.ok();
    r
}

#[test]
fn no_sync_rows_that_appear_after_the_loader_exits_are_counted_after_a_wait() {
    let w = world();
    let knobs = publish_influx3(&w, "core");
    // No-sync writes become queryable only at the next flush, after the loader exits.
    std::fs::write(
        &knobs,
        json!({"wal_flush_interval_ms": 1000, "count_ms_per_1000_rows": 3500}).to_string(),
    )
    .unwrap();
    w.prepare_influx3("ns1", "core");
    // The flush ticks on the server's own clock: about one load in fifty ends just before a
    // tick, so every row is visible at the first count and there is no wait to check. Such a
    // load proves nothing; reload (bounded) until the first count comes up short.
    let r = load_until_the_first_count_is_short(&w, "ns1", &["--no-sync"]);
    let s = summary(&run_dir(&r));
    let rc = &s["row_count"];
    assert_eq!(rc["actual"], ROWS, "{rc}");
    assert_eq!(rc["ok"], true);
    let wait = &rc["wait"];
    assert_eq!(wait["outcome"], "reached the dataset's rows", "{wait}");
    assert!(wait["polls"].as_u64().unwrap() > 1, "{wait}");
    assert!(wait["waited_s"].as_f64().unwrap() > 0.0, "{wait}");
    assert!(wait["counts"][0].as_u64().unwrap() < ROWS, "{wait}");
    assert_eq!(rc["method"]["method"], "whole-table");
    // Each count took its time, more than the old 10 s bound in all.
    let took: f64 = wait["readings"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["took_s"].as_f64().unwrap())
        .sum();
    assert!(took > 10.0, "{wait}");
    let md = std::fs::read_to_string(run_dir(&r).join("summary.md")).unwrap();
    assert!(
        md.contains("Counted 2 times (reached the dataset's rows) because --no-sync"),
        "{md}"
    );
    assert!(
        md.contains("| Count | Started at (s) | Took (s) | Rows |"),
        "{md}"
    );
}

/// F2 of the first real run: a real Core hid acknowledged durable rows from `count(*)` while
/// a WAL snapshot persisted (2,412,000 of 2,592,000). Here every WAL flush starts a snapshot
/// whose files land 10 ms apart (a day of 10-minute windows: about 1.4 s), so the load ends
/// with one persisting: the first count comes up short, the count waits for the files to stop
/// landing, and the next finds every row.
#[test]
fn a_durable_count_that_dips_while_a_snapshot_persists_is_counted_until_stable() {
    let w = world();
    let knobs = publish_influx3(&w, "core");
    std::fs::write(
        &knobs,
        json!({"wal_flush_interval_ms": 50, "snapshot_after_wal_files": 1,
               "snapshot_persist_ms_per_file": 10})
        .to_string(),
    )
    .unwrap();
    w.prepare_influx3("dip1", "core");
    // Whether the count lands inside the dip depends on the server's clock; reload (bounded)
    // until it does, since a load that misses it proves nothing.
    let r = load_until_the_first_count_is_short(&w, "dip1", &[]);
    let s = summary(&run_dir(&r));
    let rc = &s["row_count"];
    assert_eq!(
        (rc["actual"].as_u64(), &rc["ok"]),
        (Some(ROWS), &json!(true)),
        "{rc}"
    );
    let wait = &rc["wait"];
    assert!(wait["counts"][0].as_u64().unwrap() < ROWS, "{wait}");
    assert!(
        wait["reason"]
            .as_str()
            .unwrap()
            .contains("WAL snapshot hides"),
        "{wait}"
    );
    // The server's list of persisted files grew while the first count came up short.
    let first = &wait["readings"][0];
    assert!(first["persisted_before"]["files"].is_u64(), "{wait}");
    let last = &wait["readings"][wait["polls"].as_u64().unwrap() as usize - 1];
    assert!(
        last["persisted_after"]["files"].as_u64() > first["persisted_before"]["files"].as_u64(),
        "{wait}"
    );
    let md = std::fs::read_to_string(run_dir(&r).join("summary.md")).unwrap();
    assert!(md.contains("because a WAL snapshot hides"), "{md}");
}

/// F5: a count that fails is said as a failed count, with the server's words and the table,
/// never as a mismatch of rows nobody counted.
#[test]
fn a_failed_count_is_said_as_such_not_as_a_mismatch() {
    let w = world();
    let knobs = publish_influx3(&w, "core");
    std::fs::write(
        &knobs,
        json!({"wal_flush_interval_ms": 50,
               "query_failures": [{"contains": "count(", "status": 500, "error": "Internal error: injected"}]})
        .to_string(),
    )
    .unwrap();
    w.prepare_influx3("cf1", "core");
    let r = bench_influx3(&w, "cf1", "load", &[]);
    r.code(1).says("Internal error: injected");
    assert!(!r.stderr.contains("row count mismatch"), "{}", r.stderr);
    let dir = run_dir(&r);
    let rc = &summary(&dir)["row_count"];
    assert_eq!(rc["table"], "cpu", "{rc}");
    assert!(rc["error"].as_str().unwrap().contains("injected"), "{rc}");
    let md = std::fs::read_to_string(dir.join("summary.md")).unwrap();
    assert!(
        md.contains("Row count check (`SELECT count(*) FROM cpu`): **count failed**:"),
        "{md}"
    );
    assert!(!md.contains("MISMATCH"), "{md}");
}

/// Issue 24 §2 as a real InfluxDB 3 Core 3.10.1 showed it (2 MiB query pool, 2026-12-06): its
/// pool ran out while it streamed answers, it cut them short (its runner panicked "unexpected
/// EOF", no word of memory), logged `ResourcesExhausted` and counted 170 in
/// `query_datafusion_query_execution_ooms_total`. The type that failed while the counter rose
/// is "OOM" with that evidence, the other types run, and the run ends "completed with
/// failures"; a query that fits the pool runs.
#[test]
fn a_query_cut_short_when_the_pool_runs_out_is_oom_by_the_servers_own_count() {
    let w = world();
    let knobs = publish_influx3(&w, "core");
    std::fs::write(
        &knobs,
        json!({"wal_flush_interval_ms": 20,
               "query_failures": [
                   {"contains": "max(", "needs_bytes": 1u64 << 50},
                   {"contains": "usage_user > 90", "needs_bytes": 1024}]})
        .to_string(),
    )
    .unwrap();
    w.prepare_influx3("oom1", "core");
    let r = bench_influx3(&w, "oom1", "all", &[]);
    r.ok();
    let dir = run_dir(&r);
    let s = summary(&dir);
    assert_eq!(s["status"], "completed_with_failures", "{}", s["failures"]);
    let q = |t: &str| query_of(&s, t);
    let oom = q("single-groupby-1-1-1");
    assert_eq!(oom["status"], "failed", "{oom}");
    let reason = oom["reason"].as_str().unwrap();
    assert!(
        reason.starts_with("out of memory: the server's query engine ran out of its memory pool 1 time(s) during this type (query_datafusion_query_execution_ooms_total 0 -> 1); the runner: ")
            && reason.contains("unexpected EOF"),
        "{reason}"
    );
    // high-cpu-1 needs less than the pool: it runs; so does lastpoint.
    assert_eq!(q("high-cpu-1")["status"], "completed");
    assert_eq!(q("lastpoint")["status"], "completed");
    let log = std::fs::read_to_string(dir.join("logs/query-single-groupby-1-1-1-001.log")).unwrap();
    assert!(log.contains("panic: unexpected EOF"), "{log}");
    // The report's cell says it as the published table does.
    let out = w.report("oom-report", &[&dir]);
    let md = std::fs::read_to_string(out.join("summary.md")).unwrap();
    assert!(md.contains("OOM"), "{md}");
}

/// Issue 23 §4: before the queries, a count the server refuses with the words "Table not
/// found" of a table it still lists is a failed count (exit 1), not data that is gone; a
/// workspace whose `data/` was wiped is told by the server's 404 for the database: exit 4 with
/// the reload command, no query run.
#[test]
fn before_queries_a_missing_database_is_told_by_the_404_not_by_the_words() {
    let w = world();
    let knobs = publish_influx3(&w, "core");
    w.prepare_influx3("nf1", "core");
    bench_influx3(&w, "nf1", "load", &[]).ok();
    let plain = std::fs::read_to_string(&knobs).unwrap();
    std::fs::write(
        &knobs,
        json!({"wal_flush_interval_ms": 20,
               "query_failures": [{"contains": "count(", "status": 500, "error": "Table not found (injected)"}]})
        .to_string(),
    )
    .unwrap();
    let r = bench_influx3(&w, "nf1", "query", &[]);
    r.code(1).says("Table not found (injected)");
    assert!(!r.stderr.contains("does not have them"), "{}", r.stderr);
    std::fs::write(&knobs, plain).unwrap();
    let data = w.gt.env.root.join("influxdb3/databases/nf1/data");
    std::fs::remove_dir_all(&data).unwrap();
    std::fs::create_dir_all(&data).unwrap();
    let r = bench_influx3(&w, "nf1", "query", &[]);
    r.code(4)
        .says("its server does not have them (no database benchmark)")
        .says("--database-mode reset --confirm-reset benchmark");
    let events = std::fs::read_to_string(run_dir(&r).join("events.jsonl")).unwrap();
    assert!(!events.contains("\"step\":\"query:"), "{events}");
}

#[test]
fn core_table_over_the_query_file_limit_is_counted_in_time_slices() {
    let w = world();
    let knobs = publish_influx3(&w, "core");
    // A snapshot at every WAL flush: one Parquet file per 10-minute window of the day, far
    // more than this server lets one query scan.
    std::fs::write(
        &knobs,
        json!({"wal_flush_interval_ms": 20, "snapshot_after_wal_files": 1, "query_file_limit": 24})
            .to_string(),
    )
    .unwrap();
    w.prepare_influx3("fl1", "core");
    let r = bench_influx3(&w, "fl1", "load", &[]);
    r.ok();
    let s = summary(&run_dir(&r));
    let rc = &s["row_count"];
    assert_eq!(rc["actual"], ROWS, "{rc}");
    let how = &rc["method"];
    assert_eq!(how["method"], "time-slices", "{how}");
    assert!(how["slices"].as_u64().unwrap() > 1, "{how}");
    assert!(
        how["reason"]
            .as_str()
            .unwrap()
            .contains("over the server's query file limit (24): the table has "),
        "{how}"
    );
    assert_eq!(how["window"]["start"], "2023-06-11T00:00:00Z", "{how}");
    assert!(s["storage"]["data_bytes"].as_u64().unwrap() > 0);
    assert_eq!(s["storage"]["never_flushed"], false, "{}", s["storage"]);
    let md = std::fs::read_to_string(run_dir(&r).join("summary.md")).unwrap();
    assert!(md.contains("time slices of at most"), "{md}");
    assert!(!md.contains("No data files yet"), "{md}");
    // Even a one-second slice over the limit: named as the file limit, never missing rows.
    std::fs::write(
        &knobs,
        json!({"wal_flush_interval_ms": 20, "snapshot_after_wal_files": 1, "query_file_limit": 0})
            .to_string(),
    )
    .unwrap();
    let db = read_json(&w.gt.env.root.join("influxdb3/databases/fl1/manifest.json"))["database"]
        .as_str()
        .unwrap()
        .to_string();
    let r = bench_influx3(
        &w,
        "fl1",
        "load",
        &["--database-mode", "reset", "--confirm-reset", &db],
    );
    r.code(1)
        .says("over the server's query file limit (0): the table has ");
    assert!(!r.stderr.contains("row count mismatch"), "{}", r.stderr);
}

#[test]
fn archives_with_any_single_top_directory_or_none_install_and_others_are_refused() {
    let ix = Ix::new();
    let k = ix.env.path().join("knobs-variants.json");
    std::fs::write(&k, json!({"wal_flush_interval_ms": 20}).to_string()).unwrap();
    // Another root name, and no root at all: installed like the vendor's installer does.
    // F6: a top directory named `influxdb3` is descended into, not taken for the binary.
    for (version, variant) in [
        ("3.12.0", rel::Variant::PlatformRootName),
        ("3.12.1", rel::Variant::NoRoot),
        ("3.12.4", rel::Variant::RootNamedLikeTheBinary),
    ] {
        rel::publish(
            &ix.mirror,
            &Release::new("core", version, &k).variant(variant),
        );
        let r = ix.run_json(&[
            "influxdb3",
            "install",
            "--edition",
            "core",
            "--version",
            version,
        ]);
        r.ok();
        let dir = ix.install_dir("core", version);
        assert!(dir.join("influxdb3").is_file(), "{variant:?}");
        assert!(
            dir.join("python/lib/libpython3.so").is_file(),
            "{variant:?}"
        );
        assert!(r.json()["data"]["manifest"]["version_output"]
            .as_str()
            .unwrap()
            .contains(&format!("InfluxDB 3 Core, {version}")));
    }
    // Strict about what we need: a second top-level entry, or no binary, is refused.
    for (version, variant, says) in [
        ("3.12.2", rel::Variant::ExtraTopLevel, "README.md"),
        ("3.12.3", rel::Variant::NoBinary, "no `influxdb3`"),
    ] {
        rel::publish(
            &ix.mirror,
            &Release::new("core", version, &k).variant(variant),
        );
        ix.run(&[
            "influxdb3",
            "install",
            "--edition",
            "core",
            "--version",
            version,
        ])
        .code(4)
        .says(says);
        assert!(!ix.install_dir("core", version).exists(), "{variant:?}");
    }
}

/// Activates Enterprise workspace `id` with a `kind` (trial or home) licence from the e-mail
/// in `$MY_MAIL`.
fn activate_influx3(w: &World, id: &str, kind: &str) {
    w.run(&[
        "influxdb3",
        "activate",
        "--database-id",
        id,
        "--license-type",
        kind,
        "--license-email-env",
        "MY_MAIL",
        "--timeout",
        "20",
    ])
    .ok();
}

#[test]
fn enterprise_3_11_records_licence_wal_settings_engine_and_a_pt_footprint_total() {
    let mut w = world();
    let knobs = publish_influx3(&w, "enterprise");
    std::fs::write(
        &knobs,
        json!({"wal_flush_interval_ms": 20, "verification_delay_ms": 0}).to_string(),
    )
    .unwrap();
    w.gt.env.env("MY_MAIL", "benchmarker@example.invalid");
    w.prepare_influx3("trial1", "enterprise");
    w.prepare_influx3("home1", "enterprise");
    activate_influx3(&w, "trial1", "trial");
    activate_influx3(&w, "home1", "home");
    let trial = run_dir(&{
        let r = bench_influx3(&w, "trial1", "load", &[]);
        r.ok();
        r
    });
    let home = run_dir(&{
        let r = bench_influx3(&w, "home1", "load", &[]);
        r.ok();
        r
    });
    let s = summary(&trial);
    let st = &s["server_settings"];
    assert_eq!(st["license"]["type"], "trial", "{st}");
    assert!(st["license"]["expires_at"].is_string(), "{st}");
    assert_eq!(st["wal_flush_interval"], "1s");
    assert_eq!(st["gen1_duration"], "10m");
    assert_eq!(st["snapshot_after_wal_flushes"], 900);
    assert_eq!(st["wal_snapshot_size_flag"], "--wal-files-per-snapshot");
    assert_eq!(st["storage_engine"], "upgraded (.pt files)", "{st}");
    assert_eq!(st["storage_engine_source"], "data directory layout");
    assert!(st["telemetry_upload"]
        .as_str()
        .unwrap()
        .starts_with("disabled"));
    // The 3.11 engine keeps WAL and data in `.pt` files: a total with its reason.
    let fp = &s["storage"];
    assert_eq!(fp["split"], false, "{fp}");
    assert!(
        fp["wal_bytes"].is_null() && fp["data_bytes"].is_null(),
        "{fp}"
    );
    assert!(fp["pt_files"].as_u64().unwrap() > 0, "{fp}");
    assert!(fp["total_bytes"].as_u64().unwrap() > 0);
    let md = std::fs::read_to_string(trial.join("summary.md")).unwrap();
    for want in [
        "Licence: **trial**",
        "flush interval 1s",
        "Storage engine: upgraded (.pt files)",
        "WAL and data files share one format",
    ] {
        assert!(md.contains(want), "{want} missing from:\n{md}");
    }
    // The managed server ran with telemetry upload off.
    let manifest = std::fs::read_to_string(trial.join("manifest.json")).unwrap();
    assert!(
        manifest.contains("--disable-telemetry-upload"),
        "{manifest}"
    );
    let h = summary(&home);
    assert_eq!(h["server_settings"]["license"]["type"], "home");
    assert!(h["server_settings"]["license"]["limits"]
        .as_str()
        .unwrap()
        .contains("2 cores"));
    let hmd = std::fs::read_to_string(home.join("summary.md")).unwrap();
    assert!(hmd.contains("Licence: **home** (At-Home licence"), "{hmd}");

    // The report: a home-licence run is flagged as not comparable with a trial one.
    let p = |d: &Path| d.to_string_lossy().into_owned();
    let r = w.run(&["runs", "report", &p(&trial), &p(&home), "--json"]);
    r.ok();
    let dir = PathBuf::from(r.json()["data"]["report_dir"].as_str().unwrap());
    let rs = read_json(&dir.join("summary.json"));
    assert_eq!(rs["comparable"], false);
    assert!(
        rs["warnings"]
            .as_array()
            .unwrap()
            .iter()
            .any(|w| w.as_str().unwrap().contains("different licences")),
        "{}",
        rs["warnings"]
    );
    assert_eq!(rs["runs"][1]["server_settings"]["license"]["type"], "home");
    assert_eq!(rs["storage"][0]["split_note"], fp["split_note"]);
    let rmd = std::fs::read_to_string(dir.join("summary.md")).unwrap();
    assert!(rmd.contains("InfluxDB 3 server settings"), "{rmd}");
    assert!(
        rmd.contains("| trial |") && rmd.contains("| home (At-Home"),
        "{rmd}"
    );
    assert!(rmd.contains("WAL and data files share one format"), "{rmd}");
}

/// Sets the recorded activation time of workspace `id` to `days_ago` days before now.
fn age_activation(w: &World, id: &str, days_ago: i64) {
    let path =
        w.gt.env
            .root
            .join("influxdb3/databases")
            .join(id)
            .join("manifest.json");
    let mut m = read_json(&path);
    let at = time::OffsetDateTime::now_utc() - time::Duration::days(days_ago);
    m["license"]["activated_at"] = json!(at
        .format(&time::format_description::well_known::Rfc3339)
        .unwrap());
    std::fs::write(&path, serde_json::to_vec_pretty(&m).unwrap()).unwrap();
}

#[test]
fn an_expired_trial_is_refused_before_any_server_starts_with_the_renewal_command() {
    let mut w = world();
    let knobs = publish_influx3(&w, "enterprise");
    std::fs::write(
        &knobs,
        json!({"wal_flush_interval_ms": 20, "verification_delay_ms": 0}).to_string(),
    )
    .unwrap();
    w.gt.env.env("MY_MAIL", "benchmarker@example.invalid");
    w.prepare_influx3("exp1", "enterprise");
    activate_influx3(&w, "exp1", "trial");
    let runs = w.gt.env.root.join("influxdb3/runs");
    let count_runs = || std::fs::read_dir(&runs).map(|d| d.count()).unwrap_or(0);
    // Close to its 30 days: warned (a long run may outlive it), then run.
    age_activation(&w, "exp1", 29);
    let r = bench_influx3(&w, "exp1", "load", &[]);
    r.ok();
    assert!(r.stderr.contains("expires at"), "{}", r.stderr);
    assert!(r.stderr.contains("--license-file"), "{}", r.stderr);
    let before = count_runs();
    // Past its 30 days: refused before a run directory or a server exists.
    age_activation(&w, "exp1", 31);
    // The server would refuse to start too (its licence clock made 31 days later).
    std::fs::write(
        &knobs,
        json!({"wal_flush_interval_ms": 20, "license_clock_offset_days": 31}).to_string(),
    )
    .unwrap();
    let log =
        w.gt.env
            .root
            .join("influxdb3/databases/exp1/logs/server.log");
    let log_before = std::fs::read_to_string(&log).unwrap_or_default();
    for args in [
        vec!["bench", "influxdb3", "query", "--database-id", "exp1"],
        vec!["influxdb3", "serve", "--database-id", "exp1"],
    ] {
        let r = w.run(&args);
        r.code(2)
            .says("trial licence of InfluxDB 3 Enterprise workspace exp1 expired")
            .says("tsbsctl influxdb3 activate --database-id exp1 --license-file PATH");
    }
    assert_eq!(count_runs(), before, "a refused run left a run directory");
    // Another e-mail activation does not renew an expired trial; a licence file would.
    w.run(&[
        "influxdb3",
        "activate",
        "--database-id",
        "exp1",
        "--license-type",
        "trial",
        "--license-email-env",
        "MY_MAIL",
    ])
    .code(2)
    .says("does not renew it")
    .says("--license-file PATH");
    assert_eq!(
        std::fs::read_to_string(&log).unwrap_or_default(),
        log_before,
        "a server was started"
    );
}

#[test]
fn an_external_server_of_another_edition_is_an_integrity_error() {
    let w = world();
    let (mut child, url) = enterprise_server(&w);
    let mut args = vec![
        "bench",
        "influxdb3",
        "load",
        "--url",
        &url,
        "--edition",
        "core",
        "--database-mode",
        "create",
    ];
    args.extend(tiny());
    let r = w.run(&args);
    let _ = child.kill();
    let _ = child.wait();
    r.code(4)
        .says("X-Influxdb-Build: Enterprise, not the --edition core")
        .says("--edition enterprise");
    assert!(
        !w.gt.env.root.join("influxdb3/runs").exists()
            || std::fs::read_dir(w.gt.env.root.join("influxdb3/runs"))
                .unwrap()
                .next()
                .is_none(),
        "a run directory was created"
    );
}

#[test]
fn the_count_timeout_is_configurable_and_named_when_reached() {
    let w = world();
    let knobs = publish_influx3(&w, "core");
    // A slow count(*), as over ~100 M rows of the published scale.
    std::fs::write(
        &knobs,
        json!({"wal_flush_interval_ms": 20, "query_delay_ms": 1500}).to_string(),
    )
    .unwrap();
    w.prepare_influx3("ct1", "core");
    bench_influx3(&w, "ct1", "load", &["--count-timeout", "0"])
        .code(2)
        .says("--count-timeout");
    bench_influx3(&w, "ct1", "load", &["--count-timeout", "1"])
        .code(1)
        .says("no answer within 1 s")
        .says("raise --count-timeout");
}

#[test]
fn an_external_server_records_its_settings_as_unknown_and_waits_after_no_sync() {
    let w = world();
    let (mut child, url) = enterprise_server(&w);
    let mut args = vec![
        "bench",
        "influxdb3",
        "load",
        "--url",
        &url,
        "--edition",
        "enterprise",
        "--database-mode",
        "create",
        "--no-sync",
        "--json",
    ];
    args.extend(tiny());
    let r = w.run(&args);
    let _ = child.kill();
    let _ = child.wait();
    r.ok();
    let dir = run_dir(&r);
    let s = summary(&dir);
    let st = &s["server_settings"];
    assert!(
        st["source"].as_str().unwrap().starts_with("unknown"),
        "{st}"
    );
    assert!(st["wal_flush_interval"].is_null());
    assert_eq!(st["license"]["type"], "unknown");
    assert!(s["row_count"]["wait"]["flush_interval_source"]
        .as_str()
        .unwrap()
        .starts_with("assumed"));
    let md = std::fs::read_to_string(dir.join("summary.md")).unwrap();
    // F8: said once, not once per setting.
    assert!(md.contains("- WAL and snapshots: unknown ("), "{md}");
    assert!(!md.contains("flush interval unknown"), "{md}");
    assert!(md.contains("Licence: **unknown**"), "{md}");
    // Its resources through /metrics: InfluxDB 3 has no process collector, so its memory is
    // jemalloc's resident pages, said as such, and its CPU is unknown.
    assert_eq!(
        s["resources"]["source"],
        "/metrics: jemalloc_memstats_bytes{stat=\"resident\"} (the memory allocator's resident \
         pages, not the whole process's RSS); no CPU series: CPU unknown",
        "{:#}",
        s["resources"]
    );
}
