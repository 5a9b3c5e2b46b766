//! Issue 16, "measure only what you checked, and keep secrets off every command line": the
//! tokens' channel to the TSBS tools, re-hashed binaries, row counts before queries, `data
//! verify` recounts, rerun data states, stable-only version picks and probes in every phase.

use std::collections::BTreeSet;
use std::path::PathBuf;
use std::process::Stdio;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use crate::util::{Run, TestEnv};

/// Scans `/proc/*/cmdline` every few milliseconds while a command runs (bounded: 5 minutes),
/// recording every process whose argv names one of `watch` and every argv holding `secret`.
pub(crate) struct ProcScan {
    stop: Arc<AtomicBool>,
    thread: Option<std::thread::JoinHandle<()>>,
    seen: Arc<Mutex<BTreeSet<String>>>,
    leaks: Arc<Mutex<Vec<String>>>,
    cwds: Arc<Mutex<BTreeSet<PathBuf>>>,
}

impl ProcScan {
    pub(crate) fn start(secret: &str, watch: &[&str]) -> ProcScan {
        let stop = Arc::new(AtomicBool::new(false));
        let seen = Arc::new(Mutex::new(BTreeSet::new()));
        let leaks = Arc::new(Mutex::new(Vec::new()));
        let cwds = Arc::new(Mutex::new(BTreeSet::new()));
        let (s, se, le, cw) = (stop.clone(), seen.clone(), leaks.clone(), cwds.clone());
        let secret = secret.as_bytes().to_vec();
        let watch: Vec<String> = watch.iter().map(|w| w.to_string()).collect();
        let thread = std::thread::spawn(move || {
            let deadline = Instant::now() + Duration::from_secs(300);
            while !s.load(Ordering::SeqCst) && Instant::now() < deadline {
                let Ok(dir) = std::fs::read_dir("/proc") else {
                    return;
                };
                for e in dir.flatten() {
                    let Ok(argv) = std::fs::read(e.path().join("cmdline")) else {
                        continue;
                    };
                    if argv.windows(secret.len()).any(|w| w == secret.as_slice()) {
                        le.lock()
                            .unwrap()
                            .push(String::from_utf8_lossy(&argv).replace('\0', " "));
                    }
                    let text = String::from_utf8_lossy(&argv);
                    for w in &watch {
                        // the program, or the tool a testbed wrapper execs (`testbed emulate T`)
                        if text.split('\0').take(3).any(|p| p.ends_with(w.as_str())) {
                            se.lock().unwrap().insert(w.clone());
                            if let Ok(cwd) = std::fs::read_link(e.path().join("cwd")) {
                                cw.lock().unwrap().insert(cwd);
                            }
                        }
                    }
                }
                std::thread::sleep(Duration::from_millis(3));
            }
        });
        ProcScan {
            stop,
            thread: Some(thread),
            seen,
            leaks,
            cwds,
        }
    }

    /// Stops the scan; returns the watched programs seen, the leaking argvs and the watched
    /// processes' working directories.
    pub(crate) fn finish(mut self) -> (BTreeSet<String>, Vec<String>, BTreeSet<PathBuf>) {
        self.stop.store(true, Ordering::SeqCst);
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
        let seen = self.seen.lock().unwrap().clone();
        let leaks = self.leaks.lock().unwrap().clone();
        let cwds = self.cwds.lock().unwrap().clone();
        (seen, leaks, cwds)
    }
}

/// Runs `tsbsctl args...` with `input` on stdin.
fn run_with_stdin(env: &TestEnv, args: &[&str], input: &str) -> Run {
    use std::io::Write;
    let mut c = env.cmd(args);
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
    Run::from_output(args, child.wait_with_output().unwrap())
}

/// Issue 16 #4: a hold token can come from an environment variable or stdin, so it is in no
/// process's argv; the old flag keeps working.
#[test]
fn hold_token_from_env_or_stdin_defect_4() {
    let mut env = TestEnv::new();
    let dir = env.root.join("greptimedb/databases/h1");
    std::fs::create_dir_all(&dir).unwrap();
    let lock = |env: &TestEnv| -> String {
        let r = env.run_json(&["workspace", "lock", "h1"]);
        r.ok();
        r.json()["data"]["token"].as_str().unwrap().to_string()
    };
    let token = lock(&env);
    // stdin: a wrong token is refused (exit 3), the right one releases the hold
    let unlock = ["workspace", "unlock", "h1", "--hold-token-stdin"];
    run_with_stdin(&env, &unlock, "hold-0000\n")
        .code(3)
        .says("does not match");
    run_with_stdin(&env, &unlock, "\n").code(2).says("empty");
    run_with_stdin(&env, &unlock, &format!("{token}\n")).ok();
    assert!(!dir.join(".hold.json").exists());

    // env: a variable that is not set is invalid input and changes nothing
    let token = lock(&env);
    let remove = [
        "greptimedb",
        "remove",
        "--database-id",
        "h1",
        "--confirm",
        "h1",
        "--hold-token-env",
        "MY_HOLD",
    ];
    env.run(&remove).code(2).says("MY_HOLD is not set");
    assert!(dir.join(".hold.json").exists());
    // both spellings at once are a usage error
    let mut both = remove.to_vec();
    both.extend(["--hold-token", "x"]);
    env.run(&both).code(2);
    env.env("MY_HOLD", token.clone());
    let r = env.run(&remove);
    r.ok();
    assert!(!dir.exists());
    assert!(!r.stdout.contains(&token) && !r.stderr.contains(&token));
}

fn read_json(p: &std::path::Path) -> serde_json::Value {
    serde_json::from_slice(&std::fs::read(p).unwrap()).unwrap()
}

fn sha256_hex(p: &std::path::Path) -> String {
    use sha2::Digest;
    hex::encode(sha2::Sha256::digest(std::fs::read(p).unwrap()))
}

/// Issue 16 #5: the TSBS binary a phase starts is re-hashed first; the manifest records what
/// ran, and a changed binary stops the run with exit 4 before the server starts.
#[test]
fn tsbs_binaries_are_rehashed_before_a_run_defect_5() {
    let w = crate::bench::world();
    let dir = w.bench_ok("load", &[]);
    let m = read_json(&dir.join("manifest.json"));
    let loader = &m["environment"]["binaries"]["tsbs_load_greptime"];
    let path = std::path::PathBuf::from(loader["path"].as_str().unwrap());
    assert_eq!(loader["ran_sha256"].as_str().unwrap(), sha256_hex(&path));
    assert_eq!(loader["ran_sha256"], loader["sha256"]);

    let runner = std::path::PathBuf::from(
        m["environment"]["binaries"]["tsbs_run_queries_influx"]["path"]
            .as_str()
            .unwrap(),
    );
    let mut f = std::fs::OpenOptions::new()
        .append(true)
        .open(&runner)
        .unwrap();
    std::io::Write::write_all(&mut f, b"# tampered\n").unwrap();
    drop(f);
    let r = w.bench("query", &[]);
    r.code(4)
        .says("changed since it was built")
        .says("env prepare --rebuild");
    let failed = crate::bench::run_dir(&r);
    let events = std::fs::read_to_string(failed.join("events.jsonl")).unwrap();
    assert!(
        !events.contains("\"step\":\"server\""),
        "no server start: {events}"
    );
    assert!(
        !events.contains("\"step\":\"query:"),
        "no query ran: {events}"
    );
}
