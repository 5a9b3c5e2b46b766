//! Issue 16, "measure only what you checked, and keep secrets off every command line": the
//! tokens' channel to the TSBS tools, re-hashed binaries, row counts before queries, `data
//! verify` recounts, rerun data states, stable-only version picks and probes in every phase.

use std::collections::BTreeSet;
use std::path::PathBuf;
use std::process::Stdio;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use crate::util::*;
use crate::world::*;

/// Scans `/proc/*/cmdline` every few milliseconds while a command runs (bounded: 5 minutes),
/// recording every argv holding `secret`, and the processes whose argv names one of `watch`
/// and holds `marker` (a path of this test: other tests run at the same time).
pub(crate) struct ProcScan {
    stop: Arc<AtomicBool>,
    thread: Option<std::thread::JoinHandle<()>>,
    seen: Arc<Mutex<BTreeSet<String>>>,
    leaks: Arc<Mutex<Vec<String>>>,
    cwds: Arc<Mutex<BTreeSet<PathBuf>>>,
}

impl ProcScan {
    pub(crate) fn start(secret: &str, marker: &str, watch: &[&str]) -> ProcScan {
        let stop = Arc::new(AtomicBool::new(false));
        let seen = Arc::new(Mutex::new(BTreeSet::new()));
        let leaks = Arc::new(Mutex::new(Vec::new()));
        let cwds = Arc::new(Mutex::new(BTreeSet::new()));
        let (s, se, le, cw) = (stop.clone(), seen.clone(), leaks.clone(), cwds.clone());
        let secret = secret.as_bytes().to_vec();
        let marker = marker.to_string();
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
                    if !text.contains(marker.as_str()) {
                        continue;
                    }
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
    let w = world();
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
    let original = std::fs::read(&runner).unwrap();
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
    let failed = run_dir(&r);
    let events = std::fs::read_to_string(failed.join("events.jsonl")).unwrap();
    assert!(
        !events.contains("\"step\":\"server\""),
        "no server start: {events}"
    );
    assert!(
        !events.contains("\"step\":\"query:"),
        "no query ran: {events}"
    );
    std::fs::write(&runner, original).unwrap();

    // a generator the run needs (a new query set) is re-hashed as well
    let gen = path.with_file_name("tsbs_generate_queries");
    let mut f = std::fs::OpenOptions::new().append(true).open(&gen).unwrap();
    std::io::Write::write_all(&mut f, b"# tampered\n").unwrap();
    drop(f);
    w.bench("query", &["--queries", "4"])
        .code(4)
        .says("tsbs_generate_queries")
        .says("changed since it was built");
}

/// Issue 16 #6: before queries (and analyses) on a managed workspace the rows are counted
/// against the binding. A shortfall (a damaged WAL) and a wiped `data/` both stop the run with
/// exit 4 and the reload command, before any query type runs.
#[test]
fn rows_are_counted_before_queries_defect_6() {
    let w = world();
    let dir = w.bench_ok("all", &[]);
    let events = std::fs::read_to_string(dir.join("events.jsonl")).unwrap();
    assert!(
        events.contains("\"step\":\"row-check\""),
        "the query phase of all counts too: {events}"
    );
    let data = w.gt.env.root.join("greptimedb/databases/g1/data");
    // The emulator's WAL is one file per region; cut it in half.
    let wal = crate::util::all_files(&data)
        .into_iter()
        .filter(|p| p.to_string_lossy().contains("wal"))
        .max_by_key(|p| std::fs::metadata(p).map(|m| m.len()).unwrap_or(0))
        .expect("a WAL file");
    let len = std::fs::metadata(&wal).unwrap().len();
    std::fs::OpenOptions::new()
        .write(true)
        .open(&wal)
        .unwrap()
        .set_len(len / 2)
        .unwrap();
    for phase in ["query", "analyze"] {
        let r = w.bench(phase, &["--query-type", "lastpoint"]);
        r.code(4)
            .says("the loaded data is incomplete")
            .says("--database-mode reset --confirm-reset benchmark");
        let events = std::fs::read_to_string(run_dir(&r).join("events.jsonl")).unwrap();
        assert!(!events.contains("\"step\":\"query:"), "{events}");
        assert!(!events.contains("\"step\":\"analyze:"), "{events}");
    }
    // data/ wiped: one clear integrity error, not a failure per query type
    std::fs::remove_dir_all(&data).unwrap();
    std::fs::create_dir_all(&data).unwrap();
    let r = w.bench("query", &[]);
    r.code(4)
        .says("its server does not have them")
        .says("--database-mode reset");
    assert!(!r.stderr.contains("lastpoint"), "{}", r.describe());
}

/// Issue 16 #13: the probe that runs before every phase on an external server checks the
/// product, so a GreptimeDB query run against an InfluxDB 3 port (or the other way round) is
/// refused at once (exit 2, no run directory), and a right one records the version.
#[test]
fn external_servers_are_probed_for_product_and_version_defect_13() {
    let w = world();
    // An InfluxDB 3 without auth (as in the report), so only the product can tell them apart.
    let port = free_port_block(1);
    let mut influx = std::process::Command::new(crate::util::testbed_bin())
        .args([
            "emulate",
            "influxdb3",
            "serve",
            "--object-store",
            "file",
            "--node-id",
            "n1",
            "--without-auth",
        ])
        .arg(format!(
            "--data-dir={}",
            w.gt.env.path().join("influx-data").display()
        ))
        .arg(format!("--http-bind=127.0.0.1:{port}"))
        .env("TESTBED_EMULATED_EDITION", "core")
        .env("TESTBED_EMULATED_VERSION", "3.11.1")
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let influx_url = format!("http://127.0.0.1:{port}");
    assert!(wait_until(Duration::from_secs(20), || {
        std::net::TcpStream::connect(("127.0.0.1", port)).is_ok()
    }));
    let runs = w.gt.env.root.join("greptimedb/runs");
    let before = std::fs::read_dir(&runs).map(|d| d.count()).unwrap_or(0);
    let mut args = vec!["bench", "greptimedb", "query", "--url", &influx_url];
    args.extend(tiny());
    args.extend(["--query-type", "lastpoint", "--queries", "3"]);
    w.run(&args)
        .code(2)
        .says("does not identify as GreptimeDB")
        .says("check --url");
    assert_eq!(
        std::fs::read_dir(&runs).map(|d| d.count()).unwrap_or(0),
        before,
        "no run directory"
    );
    let _ = influx.kill();
    let _ = influx.wait();

    w.gt.prepare("ext", STABLE);
    let endpoint = endpoint_of(&w.gt.manifest("ext"));
    let mut bg = w.gt.serve_bg("ext", &[]);
    bg.wait_ready(&endpoint);
    let mut args = vec![
        "bench",
        "influxdb3",
        "query",
        "--url",
        &endpoint,
        "--edition",
        "core",
    ];
    args.extend(tiny());
    args.extend(["--query-type", "lastpoint", "--queries", "3"]);
    w.run(&args).code(2).says("does not identify as InfluxDB 3");
    // the right product: the query phase records what the probe found
    let mut args = vec!["bench", "greptimedb", "all", "--url", &endpoint];
    args.extend(tiny());
    args.extend([
        "--query-type",
        "lastpoint",
        "--queries",
        "3",
        "--database-mode",
        "create",
    ]);
    w.run(&args).ok();
    let mut args = vec!["bench", "greptimedb", "query", "--url", &endpoint];
    args.extend(tiny());
    args.extend(["--query-type", "lastpoint", "--queries", "3", "--json"]);
    let r = w.run(&args);
    r.ok();
    let s = summary(&run_dir(&r));
    assert_eq!(s["target"]["version"], STABLE);
    bg.interrupt().code(130);
}

/// Issue 16 #8: `data verify` recounts the rows (a manifest with a wrong count is caught, not
/// blamed on the database after a load) and checks the stored spec against the id and the
/// recorded generator command, naming what differs.
#[test]
fn data_verify_recounts_rows_and_checks_the_spec_defect_8() {
    let w = world();
    let gen = [
        "data",
        "generate",
        "--format",
        "influx",
        "--profile",
        "smoke",
        "--scale",
        "2",
        "--end",
        "2023-06-11T00:10:00Z",
        "--json",
    ];
    let r = w.run(&gen);
    r.ok();
    let id = r.json()["data"]["dataset_id"].as_str().unwrap().to_string();
    assert!(id.starts_with("cpu-only-s2-"), "{id}");
    let dir = w.gt.env.root.join("datasets").join(&id);
    let verify = ["data", "verify", "--dataset-id", id.as_str()];
    w.run(&verify).ok();

    let manifest = dir.join("formats/influx/manifest.json");
    let good = std::fs::read_to_string(&manifest).unwrap();
    let mut m: serde_json::Value = serde_json::from_str(&good).unwrap();
    let rows = m["rows"].as_u64().unwrap();
    m["rows"] = serde_json::json!(rows + 1);
    std::fs::write(&manifest, m.to_string()).unwrap();
    w.run(&verify).code(4).says(&format!(
        "holds {rows} rows, its manifest records {}",
        rows + 1
    ));
    std::fs::write(&manifest, &good).unwrap();
    w.run(&verify).ok();

    let spec_file = dir.join("dataset.json");
    let good = std::fs::read_to_string(&spec_file).unwrap();
    let mut d: serde_json::Value = serde_json::from_str(&good).unwrap();
    let seed = d["spec"]["seed"].as_i64().unwrap();
    d["spec"]["seed"] = serde_json::json!(seed + 1);
    std::fs::write(&spec_file, d.to_string()).unwrap();
    w.run(&verify)
        .code(4)
        .says("does not match its stored spec")
        .says(&format!(
            "dataset.json has --seed={}, format influx was generated with --seed={seed}",
            seed + 1
        ))
        .says("the spec's own id is");
    std::fs::write(&spec_file, &good).unwrap();
    w.run(&verify).ok();
}

/// Issue 16 #12: without `--version`, `prepare` and `quickstart` never pick a prerelease,
/// even when it is the newest (or the only) version installed.
#[test]
fn no_prerelease_is_picked_without_a_version_defect_12() {
    let (gt, _knobs) = unprepared();
    gt.run(&["greptimedb", "install", "--version", BETA]).ok();
    let prepare = |id: &str| {
        let port = free_port_block(4).to_string();
        gt.run(&[
            "greptimedb",
            "prepare",
            "--database-id",
            id,
            "--http-port",
            &port,
        ])
        .ok();
        gt.manifest(id)
    };
    // only the beta installed: the latest stable release is installed and used
    let m = prepare("p1");
    assert_eq!(m["version"], STABLE);
    assert_eq!(m["version_source"], "github-latest-stable");
    // both installed, the beta newer: the stable one
    let m = prepare("p2");
    assert_eq!(m["version"], STABLE);
    assert_eq!(m["version_source"], "newest-installed");
    let port = free_port_block(4).to_string();
    let r = gt.run_json(&["quickstart", "--http-port", &port]);
    r.ok();
    assert_eq!(gt.manifest("quickstart")["version"], STABLE);
}

/// Issue 16 #10: `runs rerun` refuses (exit 4) when the workspace's data is no longer in the
/// state the run measured, unless `--accept-data-state` names the state it will measure; a
/// rerun into a new workspace loads afresh and matches an "as loaded" run.
#[test]
fn rerun_refuses_another_data_state_defect_10() {
    let w = world();
    let dir = w.bench_ok("all", &[]);
    let run_id = dir.file_name().unwrap().to_string_lossy().into_owned();
    w.bench("compact", &[]).ok();
    let r = w.run(&["runs", "rerun", &run_id]);
    r.code(4)
        .says("measured data as loaded, but workspace g1 holds data after manual compaction")
        .says("--accept-data-state \"after manual compaction\"");
    w.run(&["runs", "rerun", &run_id, "--accept-data-state", "as loaded"])
        .code(2)
        .says("does not name the state");
    let r = w.run(&[
        "runs",
        "rerun",
        &run_id,
        "--accept-data-state",
        "after-manual-compaction",
        "--json",
    ]);
    r.ok().says("accepted with --accept-data-state");
    let s = summary(&run_dir(&r));
    assert_eq!(s["status"], "completed");
    let m = read_json(&run_dir(&r).join("manifest.json"));
    assert_eq!(m["flags"]["accept_data_state"], "after-manual-compaction");
    assert_eq!(m["data_state"]["label"], "after manual compaction");
    // a new workspace is loaded afresh: the same state as the original.
    // Trial 2 N10: it was always prepared on port 4000; it gets ports no workspace uses and
    // nothing listens on (here 4000 is taken, by this listener or by whoever holds it).
    let _busy = std::net::TcpListener::bind(("127.0.0.1", 4000));
    w.run(&["runs", "rerun", &run_id, "--database-id", "fresh"])
        .ok();
    let fresh = w.gt.manifest("fresh");
    let g1 = w.gt.manifest("g1");
    let fresh_ports: Vec<u64> = fresh["ports"]
        .as_object()
        .unwrap()
        .values()
        .map(|p| p.as_u64().unwrap())
        .collect();
    assert!(!fresh_ports.contains(&4000), "{fresh}");
    for p in g1["ports"].as_object().unwrap().values() {
        assert!(!fresh_ports.contains(&p.as_u64().unwrap()), "{fresh} {g1}");
    }
}

/// Found on a real GreptimeDB v1.0.2: a run of `all --flush-before-queries` measured data "as
/// loaded, flushed"; `runs rerun RUN --database-id NEW`, the hint's own advice, was refused
/// (exit 4: "workspace NEW holds data as loaded"), though the rerun repeats the load and the
/// flush. A rerun that loads afresh measures what the run's own load and flags made.
#[test]
fn rerun_into_a_new_workspace_reproduces_a_flushed_run() {
    let w = world();
    let dir = w.bench_ok("all", &["--flush-before-queries"]);
    let m = read_json(&dir.join("manifest.json"));
    assert_eq!(m["data_state"]["label"], "as loaded, flushed", "{m}");
    let run_id = dir.file_name().unwrap().to_string_lossy().into_owned();
    let r = w.run(&["runs", "rerun", &run_id, "--database-id", "fresh", "--json"]);
    r.ok();
    let m = read_json(&run_dir(&r).join("manifest.json"));
    assert_eq!(m["data_state"]["label"], "as loaded, flushed", "{m}");
    assert_eq!(m["flags"]["flush_before_queries"], true, "{m}");
    // A partitioned run again on its own workspace: refused (its table is made), with advice
    // `runs rerun` takes (it has no --database-mode).
    w.gt.prepare("p1", crate::world::STABLE);
    let r = w.gt.run_json(&[
        "bench",
        "greptimedb",
        "all",
        "--database-id",
        "p1",
        "--partitions",
        "2",
        "--partition-column",
        "hostname",
        "--queries",
        "1",
        "--query-type",
        "lastpoint",
        "--dataset-id",
        "tiny",
    ]);
    r.ok();
    let run_id = run_dir(&r)
        .file_name()
        .unwrap()
        .to_string_lossy()
        .into_owned();
    w.run(&["runs", "rerun", &run_id])
        .code(2)
        .says("--partitions needs a new load")
        .says(&format!("tsbsctl runs rerun {run_id} --database-id NEW"));
}

/// Issue 16 #4: the hold token and the licence e-mail cannot both come from stdin.
#[test]
fn hold_token_stdin_and_license_email_stdin_exclude_each_other_defect_4() {
    let env = TestEnv::new();
    env.run(&[
        "influxdb3",
        "activate",
        "--database-id",
        "e1",
        "--license-type",
        "trial",
        "--license-email-stdin",
        "--hold-token-stdin",
    ])
    .code(2)
    .says("cannot both read stdin");
}

/// Trial 2 N4 (#8): an edited seed in dataset.json made a query set from the wrong spec with
/// exit 0; `bench` refuses it as `data verify` does (exit 4), before a run or a query set
/// exists.
#[test]
fn bench_checks_dataset_json_like_data_verify_n4() {
    let w = world();
    w.bench_ok("load", &[]);
    let file = w.gt.env.root.join("datasets/tiny/dataset.json");
    let original = std::fs::read_to_string(&file).unwrap();
    let mut v: serde_json::Value = serde_json::from_str(&original).unwrap();
    let seed = v["spec"]["seed"].as_i64().unwrap();
    v["spec"]["seed"] = serde_json::json!(seed + 1);
    std::fs::write(&file, serde_json::to_string_pretty(&v).unwrap()).unwrap();
    let runs = w.gt.env.root.join("greptimedb/runs");
    let sets = w.gt.env.root.join("queries/tiny");
    let count = |d: &std::path::Path| std::fs::read_dir(d).map(|r| r.count()).unwrap_or(0);
    let (runs_before, sets_before) = (count(&runs), all_files(&sets).len());
    let r = w.run(&[
        "bench",
        "greptimedb",
        "query",
        "--database-id",
        "g1",
        "--query-type",
        "lastpoint",
    ]);
    r.code(4)
        .says("does not match its stored spec")
        .says(&format!("seed={}", seed + 1));
    assert_eq!(count(&runs), runs_before);
    assert_eq!(all_files(&sets).len(), sets_before);
    std::fs::write(&file, original).unwrap();
    w.bench("query", &["--query-type", "lastpoint"]).ok();
}

/// Trial 2 N2: each state root builds its own TSBS, and a build embeds its paths, so another
/// root's generator never had the same checksum: a dataset shared with `--dataset-root` was
/// refused (exit 4). The same TSBS commit reuses it, with a note, and nothing is regenerated.
#[test]
fn a_dataset_root_is_shared_by_roots_with_their_own_tsbs_builds_n2() {
    let w = world();
    w.bench_ok("load", &[]);
    let shared = w.gt.env.root.join("datasets");
    let data = shared.join("tiny/formats/influx/manifest.json");
    let before = std::fs::read(&data).unwrap();
    // Builds name their checkout, as the real go's do without -trimpath.
    w.tool_knobs("go", serde_json::json!({"embed_source_path": true}));
    let mut b = TestEnv::new();
    b.envs = w.gt.env.envs.clone();
    b.run(&["env", "prepare"]).ok();
    let sha = |root: &std::path::Path| {
        let cur = read_json(&root.join("environment/current.json"));
        let key = cur["key"].as_str().unwrap().to_string();
        read_json(
            &root
                .join("environment/tsbs")
                .join(key)
                .join("manifest.json"),
        )["binaries"]["tsbs_generate_data"]["sha256"]
            .clone()
    };
    assert_ne!(
        sha(&w.gt.env.root),
        sha(&b.root),
        "two builds, two checksums"
    );
    let mut args = vec!["data", "generate", "--format", "influx"];
    args.extend(tiny());
    args.extend(["--dataset-root", shared.to_str().unwrap()]);
    let r = b.run(&args);
    r.ok().says("another build of TSBS commit");
    assert_eq!(
        std::fs::read(&data).unwrap(),
        before,
        "reused, not regenerated"
    );
}
