//! Workspace locks, manual holds and atomic manifests, across real processes: the `tsbsctl`
//! binary, and helper processes (this test binary re-run as [`helper_child_process`]) that
//! hold a lock or write manifests until they are killed.

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use serde::{Deserialize, Serialize};
use tsbsctl::lock::{self, LockOptions};
use tsbsctl::manifest::{self, Manifest};
use tsbsctl::output::SilentReporter;

use crate::util::*;

const HELPER_ENV: &str = "TSBSCTL_TEST_HELPER";

/// Not a test: the body of a helper process, ignored in a normal run so it is not counted as
/// one. [`Helper::start`] runs this binary with `--ignored --exact` and `TSBSCTL_TEST_HELPER`
/// set; this function then does what the variable says and runs until killed (bounded to two
/// minutes). Run by hand without the variable, it fails rather than pass doing nothing.
#[test]
#[ignore = "the body of a helper process the lock tests start; not a test"]
fn helper_child_process() {
    let task = std::env::var(HELPER_ENV)
        .unwrap_or_else(|_| panic!("not a test: run only as a helper, with {HELPER_ENV} set"));
    let (what, arg) = task.split_once(':').expect("task:arg");
    let deadline = std::time::Instant::now() + Duration::from_secs(120);
    match what {
        "hold-lock" => {
            let _g = lock::lock_dir(
                Path::new(arg),
                "workspace helper",
                "helper-process --hold",
                Some("integration test helper"),
                &LockOptions::default(),
                &SilentReporter,
            )
            .expect("helper takes the lock");
            println!("READY {}", std::process::id());
            while std::time::Instant::now() < deadline {
                std::thread::sleep(Duration::from_millis(50));
            }
        }
        "write-manifests" => {
            let path = Path::new(arg);
            let mut i: u64 = 0;
            while std::time::Instant::now() < deadline {
                i += 1;
                manifest::write(path, &Demo::version(i)).expect("write");
                if i == 3 {
                    println!("READY {}", std::process::id());
                }
            }
        }
        other => panic!("unknown helper task {other}"),
    }
}

/// A manifest large enough that a kill often lands mid-write.
#[derive(Debug, Serialize, Deserialize, PartialEq)]
struct Demo {
    version: u64,
    body: String,
    check: String,
}

impl Manifest for Demo {
    const KIND: &'static str = "test-demo";
}

impl Demo {
    fn version(v: u64) -> Demo {
        let body = format!("{v:08}").repeat(128 * 1024);
        Demo {
            version: v,
            check: format!("end-of-{v}"),
            body,
        }
    }
    fn is_whole(&self) -> bool {
        *self == Demo::version(self.version)
    }
}

/// A helper process; killed (and reaped) on drop.
struct Helper {
    child: Child,
    pid: i32,
}

impl Helper {
    fn start(task: &str) -> Helper {
        let mut child = Command::new(std::env::current_exe().unwrap())
            .args([
                "locks::helper_child_process",
                "--ignored",
                "--exact",
                "--nocapture",
                "--test-threads=1",
            ])
            .env(HELPER_ENV, task)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .expect("spawn helper");
        let stdout = child.stdout.take().unwrap();
        let (tx, rx) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines().map_while(|l| l.ok()) {
                // The harness may print "test ... " before our output on the same line.
                if let Some((_, pid)) = line.split_once("READY ") {
                    let _ = tx.send(pid.trim().parse::<i32>().unwrap());
                }
            }
        });
        let pid = match rx.recv_timeout(Duration::from_secs(60)) {
            Ok(p) => p,
            Err(_) => {
                let _ = child.kill();
                panic!("helper {task} did not get ready");
            }
        };
        assert_eq!(pid, child.id() as i32);
        Helper { child, pid }
    }

    fn kill(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Drop for Helper {
    fn drop(&mut self) {
        self.kill();
    }
}

fn workspace(env: &TestEnv, product: &str, id: &str) -> PathBuf {
    let dir = env.root.join(product).join("databases").join(id);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

#[test]
fn another_process_holding_the_lock_makes_workspace_lock_exit_3_naming_it() {
    let env = TestEnv::new();
    let dir = workspace(&env, "greptimedb", "ws1");
    let mut helper = Helper::start(&format!("hold-lock:{}", dir.display()));

    let r = env.run(&["workspace", "lock", "ws1", "--reason", "mine"]);
    r.code(3)
        .says(&format!("held by pid {}", helper.pid))
        .says("helper-process --hold")
        .says("--wait");
    assert!(!dir.join(".hold.json").exists(), "no hold on refusal");

    let s = env.run_json(&["workspace", "status", "ws1"]);
    s.ok();
    let ws = &s.json()["data"]["workspaces"][0];
    assert_eq!(ws["lock"]["state"], "live");
    assert_eq!(ws["lock"]["holder"]["pid"], helper.pid);
    assert_eq!(ws["lock"]["holder"]["reason"], "integration test helper");

    // Killed without cleaning up: the lock file still names it, but nobody holds the lock.
    helper.kill();
    let s = env.run(&["workspace", "status", "ws1"]);
    s.ok()
        .says("stale lock file")
        .says(&format!("pid {} is gone", helper.pid));
    let s = env.run_json(&["workspace", "status"]);
    let ws = &s.json()["data"]["workspaces"][0];
    assert_eq!(ws["lock"]["state"], "stale");
    assert_eq!(ws["lock"]["pid_alive"], false);
    // And it is harmless: the lock can be taken.
    env.run(&["workspace", "lock", "ws1"]).ok();
}

#[test]
fn wait_waits_for_the_holder_with_one_message() {
    let env = TestEnv::new();
    let dir = workspace(&env, "influxdb3", "ws2");
    let guard = lock::lock_dir(
        &dir,
        "workspace influxdb3/ws2",
        "test process",
        None,
        &LockOptions::default(),
        &SilentReporter,
    )
    .unwrap();
    let releaser = std::thread::spawn(move || {
        std::thread::sleep(Duration::from_millis(500));
        drop(guard);
    });
    let r = env.run_json(&["workspace", "lock", "ws2", "--wait", "60"]);
    releaser.join().unwrap();
    r.ok();
    assert_eq!(r.stderr.matches("waiting").count(), 1, "{}", r.describe());
    assert!(r.json()["data"]["token"].as_str().unwrap().len() > 20);
}

#[test]
fn manual_hold_token_wrong_token_and_force_unlock() {
    let env = TestEnv::new();
    let dir = workspace(&env, "greptimedb", "manual-1");

    // Trial 2 N17: a reason with a newline or an escape sequence was echoed raw.
    for bad in ["two\nlines", "\u{1b}[31mRED\u{1b}[0m"] {
        env.run(&["workspace", "lock", "manual-1", "--reason", bad])
            .code(2)
            .says("control character");
        assert!(!dir.join(".hold.json").exists());
    }

    let r = env.run_json(&[
        "workspace",
        "lock",
        "manual-1",
        "--reason",
        "tuning SST size",
    ]);
    r.ok();
    let token = r.json()["data"]["token"].as_str().unwrap().to_string();
    let human = env.run(&["workspace", "status", "manual-1"]);
    human.ok().says("tuning SST size").says("held by");

    // The token is shown once and stored nowhere (only its digest is).
    assert_no_secret(&env.root, &token, &[&human]);

    // Every lock on the workspace refuses without the token, naming who, since when, why.
    let e = lock::lock_dir(
        &dir,
        "workspace greptimedb/manual-1",
        "some command",
        None,
        &LockOptions::default(),
        &SilentReporter,
    )
    .unwrap_err();
    assert_eq!(e.exit_code(), 3);
    assert!(e.message.contains("tuning SST size"), "{}", e.message);
    // Trial 2 N9: the hint told people to put the token on the command line.
    let hint = e.hint.clone().unwrap_or_default();
    assert!(
        hint.contains("--hold-token-env TSBSCTL_HOLD_TOKEN")
            && !hint.contains("--hold-token TOKEN"),
        "{hint}"
    );
    let with_token = LockOptions {
        wait: None,
        hold_token: Some(lock::HoldToken::Given(token.clone())),
    };
    drop(
        lock::lock_dir(
            &dir,
            "workspace greptimedb/manual-1",
            "some command",
            None,
            &with_token,
            &SilentReporter,
        )
        .unwrap(),
    );

    // A second hold is refused while the first stands.
    env.run(&["workspace", "lock", "manual-1"])
        .code(3)
        .says("already held")
        .says("tuning SST size");

    // Unlock: neither token nor --force is a usage error; a wrong token is refused.
    env.run(&["workspace", "unlock", "manual-1"]).code(2);
    env.run(&[
        "workspace",
        "unlock",
        "manual-1",
        "--hold-token",
        "hold-0000",
    ])
    .code(3)
    .says("does not match");
    assert!(dir.join(".hold.json").exists());

    let r = env.run_json(&["workspace", "unlock", "manual-1", "--hold-token", &token]);
    r.ok();
    assert_eq!(r.json()["data"]["released"]["reason"], "tuning SST size");
    assert!(!dir.join(".hold.json").exists());
    env.run(&["workspace", "unlock", "manual-1", "--force"])
        .code(2)
        .says("no manual hold");

    // Trial 2 N9: the lock's output shows the token once but never tells anyone to put it
    // on a command line; what it says to do works.
    let r = env.run(&["workspace", "lock", "manual-1"]);
    r.ok().says("--hold-token-env TSBSCTL_HOLD_TOKEN");
    let token = r
        .stdout
        .lines()
        .find_map(|l| l.strip_prefix("Token: "))
        .unwrap_or_else(|| panic!("no token\n{}", r.describe()))
        .to_string();
    for l in r.stdout.lines().filter(|l| l.contains(&token)) {
        assert!(!l.contains("--hold-token "), "{l}");
    }
    let mut with_var = TestEnv::new();
    with_var.root = env.root.clone();
    with_var.env("TSBSCTL_HOLD_TOKEN", &token);
    with_var
        .run(&[
            "workspace",
            "unlock",
            "manual-1",
            "--hold-token-env",
            "TSBSCTL_HOLD_TOKEN",
        ])
        .ok();
    assert!(!dir.join(".hold.json").exists());

    // A lost token: --force releases.
    env.run(&["workspace", "lock", "manual-1"]).ok();
    env.run(&["workspace", "unlock", "manual-1", "--force"])
        .ok()
        .says("forced");
    let s = env.run_json(&["workspace", "status", "manual-1"]);
    assert!(s.json()["data"]["workspaces"][0]["hold"].is_null());
}

#[test]
fn ids_present_under_both_products_need_product() {
    let env = TestEnv::new();
    workspace(&env, "greptimedb", "same");
    let influx = workspace(&env, "influxdb3", "same");
    env.run(&["workspace", "lock", "same"])
        .code(2)
        .says("--product");
    let r = env.run(&["workspace", "lock", "same", "--product", "influxdb3"]);
    r.ok().says("--product influxdb3");
    assert!(influx.join(".hold.json").exists());
    let s = env.run_json(&["workspace", "status"]);
    let items = s.json()["data"]["workspaces"].as_array().unwrap().clone();
    assert_eq!(items.len(), 2);
    assert!(items[0]["hold"].is_null());
    assert_eq!(items[1]["product"], "influxdb3");
    assert!(!items[1]["hold"].is_null());
}

#[test]
fn bad_or_unknown_ids_exit_2_and_create_nothing() {
    let env = TestEnv::new();
    for args in [
        vec!["workspace", "lock", "../x"],
        vec!["workspace", "lock", ".hidden"],
        vec!["workspace", "lock", "a/b", "--reason", "r"],
        vec!["workspace", "unlock", "a b", "--force"],
        vec!["workspace", "status", "x/y"],
        vec!["workspace", "lock", "does-not-exist"],
        vec!["workspace", "status", "does-not-exist"],
    ] {
        let r = env.run(&args);
        r.code(2);
        assert!(r.stderr.contains("hint:"), "{}", r.describe());
        assert!(!env.root.exists(), "{}", r.describe());
    }
    env.run(&["workspace", "lock", "does-not-exist"])
        .says("workspace status");
    let r = env.run_json(&["workspace", "status"]);
    r.ok();
    assert_eq!(r.json()["data"]["workspaces"], serde_json::json!([]));
    assert!(!env.root.exists());
}

#[test]
fn a_killed_manifest_writer_leaves_a_whole_manifest() {
    let env = TestEnv::new();
    let path = env.path().join("state").join("manifest.json");
    manifest::write(&path, &Demo::version(0)).unwrap();
    for _ in 0..3 {
        let mut helper = Helper::start(&format!("write-manifests:{}", path.display()));
        // Let it run a little, then kill it wherever it is.
        std::thread::sleep(Duration::from_millis(30));
        helper.kill();
        let m: Demo = manifest::read(&path).unwrap();
        assert!(m.is_whole(), "manifest version {} is torn", m.version);
        assert!(
            m.version >= 3,
            "the writer had published version 3 before READY"
        );
    }
    // Whatever temp files the kills left beside it are not the manifest and do not disturb
    // reading or the next write.
    for e in std::fs::read_dir(path.parent().unwrap()).unwrap() {
        let name = e.unwrap().file_name().to_string_lossy().into_owned();
        assert!(
            name == "manifest.json"
                || (name.starts_with(".manifest.json.") && name.ends_with(".tmp")),
            "unexpected {name}"
        );
    }
    // A torn temp file from a writer killed mid-write, in the naming the writer uses.
    let torn = path.with_file_name(".manifest.json.XyZ123.tmp");
    std::fs::write(&torn, &std::fs::read(&path).unwrap()[..100]).unwrap();
    assert!(manifest::read::<Demo>(&path).unwrap().is_whole());
    manifest::write(&path, &Demo::version(7)).unwrap();
    assert_eq!(manifest::read::<Demo>(&path).unwrap(), Demo::version(7));
}
