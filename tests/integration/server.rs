//! The server supervisor through `tsbsctl greptimedb serve`: port taken, exit during start,
//! never ready, SIGTERM ignored, crash while serving, tsbsctl killed, orphans, Ctrl-C, holds.

use std::net::TcpListener;
use std::os::unix::process::CommandExt;
use std::process::{Command, Stdio};
use std::time::Duration;

use serde_json::json;

use crate::util::*;
use crate::world::*;

fn pid_record(gt: &Gt, id: &str) -> Option<serde_json::Value> {
    let p = gt.ws_dir(id).join("server.pid");
    p.exists().then(|| read_json(&p))
}

fn server_log(gt: &Gt, id: &str) -> String {
    std::fs::read_to_string(gt.ws_dir(id).join("logs/server.log")).unwrap_or_default()
}

#[test]
fn serve_until_ctrl_c_then_stopped_with_exit_130() {
    let gt = Gt::new();
    let m = gt.prepare("w1", STABLE);
    let ep = endpoint_of(&m);
    let mut bg = gt.serve_bg("w1", &[]);
    bg.wait_ready(&ep);
    let rec = pid_record(&gt, "w1").expect("server.pid while serving");
    let pid = rec["pid"].as_u64().unwrap() as u32;
    assert!(alive(pid));
    assert!(bg.stderr().contains(&ep), "{}", bg.stderr());
    // The workspace is locked while it serves.
    gt.run(&[
        "greptimedb",
        "remove",
        "--database-id",
        "w1",
        "--confirm",
        "w1",
    ])
    .code(3);
    let i = gt
        .run_json(&["greptimedb", "inspect", "--database-id", "w1"])
        .json();
    let by = i["data"]["locked_by"].as_str().unwrap_or_default();
    assert!(by.contains("greptimedb serve"), "{i}");
    assert_eq!(i["data"]["server"]["alive"], true);
    let r = bg.interrupt();
    r.code(130).says("stopped");
    assert!(gone_within(pid, 5), "server survived Ctrl-C");
    assert!(pid_record(&gt, "w1").is_none());
    assert!(server_log(&gt, "w1").contains("$ "));
}

#[test]
fn port_taken_is_refused_and_nothing_starts() {
    let gt = Gt::new();
    let m = gt.prepare("w1", STABLE);
    let port = m["ports"]["grpc"].as_u64().unwrap() as u16;
    let _holder = TcpListener::bind(("127.0.0.1", port)).unwrap();
    gt.run(&["greptimedb", "serve", "--database-id", "w1"])
        .code(1)
        .says(&format!("grpc port 127.0.0.1:{port} is unavailable"));
    assert!(pid_record(&gt, "w1").is_none());
}

#[test]
fn exit_during_start_fails_early() {
    let gt = Gt::new();
    gt.prepare("w1", STABLE);
    gt.set_knobs(json!({"exit_during_start": 7}));
    gt.run(&[
        "greptimedb",
        "serve",
        "--database-id",
        "w1",
        "--startup-timeout",
        "60",
    ])
    .code(1)
    .says("exited during startup (exit code 7)")
    .says("server.log");
    assert!(pid_record(&gt, "w1").is_none());
}

#[test]
fn never_ready_times_out_and_stops_the_server() {
    let gt = Gt::new();
    gt.prepare("w1", STABLE);
    gt.set_knobs(json!({"never_ready": "503"}));
    let r = gt.run(&[
        "greptimedb",
        "serve",
        "--database-id",
        "w1",
        "--startup-timeout",
        "1.5",
        "--stop-timeout",
        "2",
    ]);
    r.code(1).says("was not ready within 1.5s");
    assert!(pid_record(&gt, "w1").is_none());
    let log = server_log(&gt, "w1");
    assert!(log.contains("tsbsctl: GreptimeDB"), "{log}");
}

#[test]
fn sigterm_ignored_means_sigkill_after_the_grace_period() {
    let gt = Gt::new();
    let m = gt.prepare("w1", STABLE);
    gt.set_knobs(json!({"ignore_sigterm": true}));
    let mut bg = gt.serve_bg("w1", &["--stop-timeout", "0.5"]);
    bg.wait_ready(&endpoint_of(&m));
    let pid = pid_record(&gt, "w1").unwrap()["pid"].as_u64().unwrap() as u32;
    bg.interrupt().code(130);
    assert!(gone_within(pid, 5));
    assert!(
        server_log(&gt, "w1").contains("killed after the grace period"),
        "{}",
        server_log(&gt, "w1")
    );
}

#[test]
fn crash_while_serving_is_an_unexpected_exit() {
    let gt = Gt::new();
    let m = gt.prepare("w1", STABLE);
    gt.set_knobs(json!({"crash_after_ms": 1500, "crash_exit_code": 101}));
    let mut bg = gt.serve_bg("w1", &[]);
    bg.wait_ready(&endpoint_of(&m));
    bg.wait()
        .code(1)
        .says("exited unexpectedly (exit code 101)");
    assert!(pid_record(&gt, "w1").is_none());
}

#[test]
fn killed_tsbsctl_leaves_no_server_and_the_next_start_reports_it() {
    let gt = Gt::new();
    let m = gt.prepare("w1", STABLE);
    let ep = endpoint_of(&m);
    let mut bg = gt.serve_bg("w1", &[]);
    bg.wait_ready(&ep);
    let pid = pid_record(&gt, "w1").unwrap()["pid"].as_u64().unwrap() as u32;
    bg.signal(libc::SIGKILL);
    bg.wait();
    assert!(
        gone_within(pid, 5),
        "server {pid} outlived a SIGKILLed tsbsctl"
    );
    // The stale record is reported and cleared by the next start.
    assert!(pid_record(&gt, "w1").is_some());
    let r = gt.run_json(&["greptimedb", "inspect", "--database-id", "w1"]);
    assert_eq!(r.json()["data"]["server"]["alive"], false);
    let mut bg = gt.serve_bg("w1", &[]);
    bg.wait_ready(&ep);
    assert!(
        bg.stderr().contains("was not stopped by tsbsctl"),
        "{}",
        bg.stderr()
    );
    bg.interrupt().code(130);
}

#[test]
fn live_orphan_is_refused_then_stopped_with_kill_orphan() {
    let gt = Gt::new();
    let m = gt.prepare("w1", STABLE);
    let ws = gt.ws_dir("w1");
    // An orphan as a killed tsbsctl on a system without parent-death signals leaves it: the
    // server runs in its own group and its pid record stays in the workspace.
    let mut orphan = Command::new(gt.install_dir(STABLE).join("greptime"))
        .args(["standalone", "start", "-c"])
        .arg(ws.join("config.toml"))
        .current_dir(&ws)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .process_group(0)
        .spawn()
        .unwrap();
    let pid = orphan.id();
    let ep = endpoint_of(&m);
    let deadline = std::time::Instant::now() + Duration::from_secs(20);
    while sql_status(&ep, "SHOW DATABASES") != Some(200) {
        assert!(std::time::Instant::now() < deadline, "orphan not ready");
        std::thread::sleep(Duration::from_millis(50));
    }
    let start = crate::util::proc_start_time(pid);
    std::fs::write(
        ws.join("server.pid"),
        json!({
            "pid": pid, "pgid": pid, "start_time": start,
            "program": gt.install_dir(STABLE).join("greptime"), "log": ws.join("logs/server.log"),
            "started_at": "2026-11-29T00:00:00.000000Z", "tsbsctl_pid": 999999999u32
        })
        .to_string(),
    )
    .unwrap();

    gt.run(&["greptimedb", "serve", "--database-id", "w1"])
        .code(3)
        .says(&format!("pid {pid}"))
        .says("--kill-orphan");
    assert!(alive(pid));

    let mut bg = gt.serve_bg("w1", &["--kill-orphan"]);
    // Reap the orphan (it is this test's child) so it does not linger as a zombie.
    let reaper = std::thread::spawn(move || orphan.wait());
    bg.wait_ready(&ep);
    reaper.join().unwrap().unwrap();
    let new_pid = pid_record(&gt, "w1").unwrap()["pid"].as_u64().unwrap() as u32;
    assert_ne!(new_pid, pid);
    bg.interrupt().code(130);
    assert!(gone_within(new_pid, 5));
}

#[test]
fn manual_hold_is_respected_by_serve() {
    let gt = Gt::new();
    let m = gt.prepare("w1", STABLE);
    let r = gt.run_json(&["workspace", "lock", "w1", "--reason", "manual checks"]);
    r.ok();
    let token = r.json()["data"]["token"]
        .as_str()
        .expect("hold token")
        .to_string();
    gt.run(&["greptimedb", "serve", "--database-id", "w1"])
        .code(3)
        .says("manual checks");
    let i = gt
        .run_json(&["greptimedb", "inspect", "--database-id", "w1"])
        .json();
    let by = i["data"]["held_by"].as_str().unwrap_or_default();
    assert!(by.contains("manual checks"), "{i}");
    let mut bg = gt.serve_bg("w1", &["--hold-token", &token]);
    bg.wait_ready(&endpoint_of(&m));
    bg.interrupt().code(130);
}

#[test]
fn ctrl_c_during_startup_stops_the_server_and_exits_130() {
    let gt = Gt::new();
    gt.prepare("w1", STABLE);
    gt.set_knobs(json!({"start_delay_ms": 10000}));
    let mut bg = gt.serve_bg("w1", &[]);
    let deadline = std::time::Instant::now() + Duration::from_secs(20);
    let pid = loop {
        if let Some(r) = pid_record(&gt, "w1") {
            break r["pid"].as_u64().unwrap() as u32;
        }
        assert!(std::time::Instant::now() < deadline, "server never started");
        std::thread::sleep(Duration::from_millis(20));
    };
    bg.interrupt()
        .code(130)
        .says("interrupted while GreptimeDB 1.1.4 was starting");
    assert!(gone_within(pid, 5));
    assert!(pid_record(&gt, "w1").is_none());
}
