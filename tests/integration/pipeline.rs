//! The run pipeline as a person and an auditor see it (issue 16, part "pipeline"): the bytes
//! the tools read are the bytes the run records (#7), progress on a terminal and nowhere else
//! (#21), stalls of a tool (C2). Each test names the defect of the trial-run report it covers.

use std::io::{Read, Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::{Duration, Instant};

use serde_json::{json, Value};

use crate::util::{read_json, run_command, tsbsctl_bin, wait_until, Run};
use crate::world::{run_dir, summary, tiny, world, Gt, World, ROWS, STABLE, TYPES};

/// Replaces one ASCII digit at or after `offset` with another digit, keeping the file's size,
/// inode and modification time (what bit rot does): the data stays valid line protocol.
fn rot_one_digit(path: &Path, offset: u64) {
    let mtime = std::fs::metadata(path).unwrap().modified().unwrap();
    let mut f = std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .open(path)
        .unwrap();
    let mut buf = vec![0u8; 4096];
    f.seek(SeekFrom::Start(offset)).unwrap();
    let n = f.read(&mut buf).unwrap();
    let i = buf[..n]
        .iter()
        .position(|b| b.is_ascii_digit())
        .expect("a digit to rot");
    let new = if buf[i] == b'1' { b'2' } else { b'1' };
    f.seek(SeekFrom::Start(offset + i as u64)).unwrap();
    f.write_all(&[new]).unwrap();
    f.set_modified(mtime).unwrap();
    drop(f);
    assert_eq!(std::fs::metadata(path).unwrap().modified().unwrap(), mtime);
}

/// A run's `events.jsonl`, parsed.
pub(crate) fn events(dir: &Path) -> Vec<Value> {
    std::fs::read_to_string(dir.join("events.jsonl"))
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

#[test]
fn defect_7_a_dataset_rotted_in_place_is_caught_on_its_way_to_the_loader() {
    let w = world();
    let dir = w.bench_ok("load", &[]);
    let s = summary(&dir);
    let data = PathBuf::from(s["dataset"]["data_path"].as_str().unwrap());
    let m = read_json(&dir.join("manifest.json"));
    assert_eq!(
        m["dataset"]["loaded_sha256"], s["dataset"]["sha256"],
        "the run records the hash of the bytes the loader read"
    );
    let load = events(&dir)
        .into_iter()
        .find(|e| e["step"] == "load" && e["status"] == "completed")
        .unwrap();
    assert_eq!(load["data"]["input"]["matches_manifest"], true);
    assert_eq!(
        load["data"]["input"]["bytes"],
        std::fs::metadata(&data).unwrap().len()
    );

    rot_one_digit(&data, 2000);
    let r = w.bench(
        "load",
        &["--database-mode", "reset", "--confirm-reset", "benchmark"],
    );
    r.code(4).says("SHA-256").says("changed on disk");
    assert!(
        w.ws()["binding"].is_null(),
        "nothing is bound to rotted data: {}",
        w.ws()
    );
    let dir2 = run_dir(&r);
    assert_eq!(summary(&dir2)["status"], "failed");
}

/// Issue 27: the loader reads an uncompressed dataset itself (`--file`: nothing of tsbsctl in
/// the path whose throughput is measured), the run still records the hash of what it read,
/// and a write to the file while it reads stops the load: exit 4, nothing bound.
#[test]
fn issue_27_the_loader_reads_the_file_itself_and_a_write_during_the_load_stops_it() {
    let w = world();
    let dir = w.bench_ok("load", &[]);
    let data = PathBuf::from(summary(&dir)["dataset"]["data_path"].as_str().unwrap());
    let evs = events(&dir);
    let begun = evs
        .iter()
        .find(|e| e["step"] == "load" && e["status"] == "running")
        .unwrap();
    assert_eq!(begun["data"]["input"], "file", "{begun}");
    let file_flag = format!("--file={}", data.display());
    assert!(
        begun["data"]["command"]
            .as_str()
            .unwrap()
            .contains(&file_flag),
        "the loader is given the file: {begun}"
    );
    let done = evs
        .iter()
        .find(|e| e["step"] == "load" && e["status"] == "completed")
        .unwrap();
    let input = &done["data"]["input"];
    assert_eq!(input["read_by"], "file", "{input}");
    assert_eq!(input["matches_manifest"], true, "{input}");
    assert!(
        input["identity"].is_null(),
        "the identity sits under watch: {input}"
    );
    assert_eq!(
        input["watch"]["identity"]["size"],
        std::fs::metadata(&data).unwrap().len()
    );

    // A slow load, and a write to the dataset while the loader reads it.
    w.tool_knobs("tsbs_load_greptime", json!({"batch_delay_ms": 30000}));
    let runs = w.gt.env.root.join("greptimedb/runs");
    let known: Vec<PathBuf> = std::fs::read_dir(&runs)
        .unwrap()
        .flatten()
        .map(|e| e.path())
        .collect();
    let mut args = vec![
        "bench",
        "greptimedb",
        "load",
        "--database-id",
        "g1",
        "--stop-timeout",
        "5",
        "--database-mode",
        "reset",
        "--confirm-reset",
        "benchmark",
        "--batch-size",
        "10",
    ];
    args.extend(tiny());
    let mut c = w.gt.env.cmd(&args);
    c.stdout(Stdio::null()).stderr(Stdio::piped());
    let child = c.spawn().unwrap();
    let mut run = None;
    assert!(wait_until(Duration::from_secs(60), || {
        run = std::fs::read_dir(&runs)
            .unwrap()
            .flatten()
            .map(|e| e.path())
            .find(|d| !known.contains(d));
        run.as_ref()
            .is_some_and(|d| d.join("logs/load-001.log").exists())
    }));
    let run = run.unwrap();
    let started = Instant::now();
    rot_one_digit(&data, 100);
    let out = crate::util::wait_bounded(child, Duration::from_secs(60));
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(4), "{err}");
    assert!(err.contains("changed while the loader read it"), "{err}");
    assert!(err.contains("it was written to"), "{err}");
    // Stopped at once, not after its 30 s batches.
    assert!(
        started.elapsed() < Duration::from_secs(25),
        "{:?}",
        started.elapsed()
    );
    let failed = events(&run)
        .into_iter()
        .find(|e| e["step"] == "load" && e["status"] == "failed")
        .unwrap();
    assert!(
        failed["reason"].as_str().unwrap().contains("changed while"),
        "{failed}"
    );
    assert!(w.ws()["binding"].is_null(), "{}", w.ws());
}

#[test]
fn defect_7_a_query_file_rotted_in_place_is_caught_before_its_run() {
    let w = world();
    let dir = w.bench_ok("all", &[]);
    let m = read_json(&dir.join("manifest.json"));
    let set = PathBuf::from(m["query_set"]["query_set_path"].as_str().unwrap());
    let file = set.join("queries/lastpoint.dat");
    let before = events(&dir)
        .into_iter()
        .find(|e| e["step"] == "query:lastpoint" && e["status"] == "running")
        .unwrap();
    assert_eq!(before["data"]["file_sha256_verified"], true);

    rot_one_digit(&file, 20);
    let r = w.bench("query", &[]);
    r.code(4).says("lastpoint.dat");
    let s = summary(&run_dir(&r));
    assert_eq!(s["status"], "failed");
    // The type before it ran; the rotted one never started.
    let started: Vec<String> = events(&run_dir(&r))
        .into_iter()
        .filter(|e| e["status"] == "running")
        .filter_map(|e| e["step"].as_str().map(str::to_string))
        .filter(|s| s.starts_with("query:"))
        .collect();
    assert_eq!(started, ["query:high-cpu-1"]);
}

/// A pseudo-terminal of 120 × 40 characters: (master, slave).
fn open_pty() -> (std::fs::File, std::fs::File) {
    use std::os::fd::FromRawFd;
    let (mut master, mut slave) = (0, 0);
    let ws = libc::winsize {
        ws_row: 40,
        ws_col: 120,
        ws_xpixel: 0,
        ws_ypixel: 0,
    };
    // SAFETY: openpty fills two fresh descriptors we own from here on.
    let rc = unsafe {
        libc::openpty(
            &mut master,
            &mut slave,
            std::ptr::null_mut(),
            std::ptr::null(),
            &ws,
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

/// Runs `tsbsctl args` with stdout and stderr on a terminal; returns (exit code, screen text).
fn on_terminal(env: &crate::util::TestEnv, args: &[&str]) -> (i32, String) {
    let (master, slave) = open_pty();
    let mut c = env.cmd(args);
    c.stdin(Stdio::null())
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
    let deadline = Instant::now() + Duration::from_secs(120);
    let status = loop {
        if let Some(s) = child.try_wait().unwrap() {
            break s;
        }
        if Instant::now() > deadline {
            let _ = child.kill();
            panic!("tsbsctl did not finish on the terminal");
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    drop(master);
    let _ = t.join();
    let out = String::from_utf8_lossy(&seen.lock().unwrap()).into_owned();
    (status.code().unwrap_or(-1), out)
}

#[test]
fn defect_21_load_and_query_progress_on_a_terminal_only() {
    let w = world();
    // A slow load (29 batches of 100 rows) reporting every 100 ms, and slow queries.
    w.tool_knobs(
        "tsbs_load_greptime",
        json!({"reporting_period_ms": 100, "batch_delay_ms": 80}),
    );
    w.gt.set_knobs(json!({"query_delay_ms": 250}));
    let mut args = vec![
        "bench",
        "greptimedb",
        "all",
        "--database-id",
        "g1",
        "--stop-timeout",
        "5",
        "--load-workers",
        "1",
        "--batch-size",
        "100",
    ];
    args.extend(tiny());
    for t in TYPES {
        args.extend(["--query-type", t]);
    }
    args.extend(["--queries", "4"]);
    let (code, screen) = on_terminal(&w.gt.env, &args);
    assert_eq!(code, 0, "{screen}");
    // Rows loaded of rows expected, the loader's rate and an ETA.
    assert!(screen.contains(&format!("/{} rows", "2,880")), "{screen}");
    assert!(screen.contains("rows/s, eta "), "{screen}");
    // Types done of total, queries within the type.
    assert!(screen.contains("query type 2/3 lastpoint"), "{screen}");
    assert!(screen.contains("/4 queries"), "{screen}");

    // The same run without a terminal (and with --json): no progress of any kind.
    let mut json_args = args.clone();
    json_args.push("--json");
    let r = w.run(&json_args);
    r.ok();
    for needle in ["rows/s", "/4 queries", "eta "] {
        assert!(!r.stderr.contains(needle), "{needle}: {}", r.stderr);
        assert!(!r.stdout.contains(needle), "{needle}: {}", r.stdout);
    }
    let _ = ROWS;
}

/// The load's stall events (`data.stall.event`) of a run.
fn stall_events(dir: &Path) -> Vec<String> {
    events(dir)
        .into_iter()
        .filter(|e| e["step"] == "load")
        .filter_map(|e| e["data"]["stall"]["event"].as_str().map(str::to_string))
        .collect()
}

#[test]
fn c2_a_load_retrying_a_timeout_forever_is_warned_about_then_resumes() {
    let w = world();
    w.tool_knobs(
        "tsbs_load_greptime",
        json!({"reporting_period_ms": 100, "backoff_ms": 200, "batch_delay_ms": 40}),
    );
    // After the first batch, ten answers of 500 "timeout" (about 2 s of retries).
    w.gt.set_knobs(json!({"write_timeouts_after_rows": 100, "write_timeouts": 10}));
    let r = w.bench(
        "load",
        &[
            "--load-workers",
            "1",
            "--batch-size",
            "100",
            "--stall-timeout",
            "1",
        ],
    );
    r.ok();
    assert!(r.stderr.contains("made no progress for"), "{}", r.stderr);
    let dir = run_dir(&r);
    assert_eq!(stall_events(&dir), ["stalled", "resumed"]);
    assert_eq!(summary(&dir)["status"], "completed");
    let m = read_json(&dir.join("manifest.json"));
    assert_eq!(m["flags"]["stall_timeout"], 1.0);
    assert_eq!(m["flags"]["on_stall"], "warn");
}

#[test]
fn c2_a_load_retrying_a_timeout_forever_is_stopped_when_asked() {
    let w = world();
    w.tool_knobs(
        "tsbs_load_greptime",
        json!({"reporting_period_ms": 100, "backoff_ms": 100}),
    );
    w.gt.set_knobs(json!({"write_timeouts_after_rows": 100}));
    let t0 = Instant::now();
    let r = w.bench(
        "load",
        &[
            "--load-workers",
            "1",
            "--batch-size",
            "100",
            "--stall-timeout",
            "1.5",
            "--on-stall",
            "stop",
        ],
    );
    r.code(1).says("no progress for").says("--on-stall stop");
    assert!(t0.elapsed() < Duration::from_secs(60));
    let dir = run_dir(&r);
    let s = summary(&dir);
    assert_eq!(s["status"], "failed");
    assert_eq!(stall_events(&dir), ["stalled"]);
    assert!(w.ws()["binding"].is_null());
    assert!(!w.gt.ws_dir("g1").join("server.pid").exists());
    let m = read_json(&dir.join("manifest.json"));
    assert_eq!(m["flags"]["on_stall"], "stop");
}

#[test]
fn c2_stall_timeout_is_validated_before_anything_is_written() {
    let w = world();
    for bad in ["0", "-1", "nan", "1e12"] {
        let r = w.bench("load", &["--stall-timeout", bad]);
        r.code(2).says("--stall-timeout");
    }
    assert!(
        !w.gt.env.root.join("greptimedb/runs").exists()
            || std::fs::read_dir(w.gt.env.root.join("greptimedb/runs"))
                .unwrap()
                .next()
                .is_none()
    );
}

#[test]
fn defect_9_ingestion_with_other_write_parameters_is_not_comparable() {
    let w = world();
    let d1 = w.bench_ok("load", &[]);
    let d2 = w.bench_ok(
        "load",
        &[
            "--database-mode",
            "reset",
            "--confirm-reset",
            "benchmark",
            "--load-workers",
            "1",
            "--batch-size",
            "500",
        ],
    );
    let r = w.run(&[
        "runs",
        "compare",
        "--baseline",
        d1.to_str().unwrap(),
        "--candidate",
        d2.to_str().unwrap(),
        "--json",
    ]);
    r.ok();
    let data = r.json()["data"].clone();
    let ing = &data["summary"]["candidates"][0]["ingestion"];
    assert_eq!(ing["classification"], "not comparable", "{ing}");
    let reason = ing["reason"].as_str().unwrap();
    assert!(
        reason.contains("2 workers x 3000 rows") && reason.contains("1 worker x 500 rows"),
        "{reason}"
    );
    let md = std::fs::read_to_string(data["summary_md"].as_str().unwrap()).unwrap();
    assert!(md.contains("**not comparable**"), "{md}");
    assert!(md.contains("Welch"), "{md}");
}

#[test]
fn defect_22_one_cause_for_every_query_type_is_said_once() {
    let w = world();
    w.bench_ok("load", &[]);
    w.gt.set_knobs(
        json!({"fail_sql": [{"contains": "hostname", "code": 1003, "error": "disk quota canary"}]}),
    );
    let r = w.bench("query", &[]);
    r.code(1);
    let msg = r.json()["error"]["message"].as_str().unwrap().to_string();
    assert_eq!(msg.matches("disk quota canary").count(), 1, "{msg}");
    assert!(
        msg.contains(
            "the same cause in 3 steps: query:high-cpu-1, query:lastpoint, query:single-groupby-1-1-1"
        ),
        "{msg}"
    );
    // Once in the first warning, once in the error line.
    assert_eq!(
        r.stderr.matches("disk quota canary").count(),
        2,
        "{}",
        r.stderr
    );
    assert!(
        r.stderr
            .contains("query type lastpoint failed: the same cause as high-cpu-1"),
        "{}",
        r.stderr
    );
}

/// Starts `bench greptimedb query` in the background with a runner that sleeps in its first
/// query; returns the child and its run directory once the first type is running.
fn query_run_in_background(w: &World) -> (std::process::Child, PathBuf) {
    w.tool_knobs("tsbs_run_queries_influx", json!({"query_delay_ms": 20000}));
    let mut args = vec![
        "bench",
        "greptimedb",
        "query",
        "--database-id",
        "g1",
        "--queries",
        "3",
        "--stop-timeout",
        "5",
    ];
    for t in TYPES {
        args.extend(["--query-type", t]);
    }
    let runs = w.gt.env.root.join("greptimedb/runs");
    let known: Vec<PathBuf> = std::fs::read_dir(&runs)
        .map(|rd| rd.flatten().map(|e| e.path()).collect())
        .unwrap_or_default();
    let mut c = w.gt.env.cmd(&args);
    c.stdout(Stdio::null()).stderr(Stdio::null());
    let child = c.spawn().unwrap();
    let mut dir = None;
    assert!(wait_until(Duration::from_secs(60), || {
        dir = std::fs::read_dir(&runs)
            .map(|rd| rd.flatten().map(|e| e.path()).collect::<Vec<_>>())
            .unwrap_or_default()
            .into_iter()
            .find(|d| !known.contains(d));
        dir.as_ref()
            .is_some_and(|d| d.join("logs/query-high-cpu-1-001.log").exists())
    }));
    (child, dir.unwrap())
}

/// When the last step line was written (event lines, `{"ts", "event"}`, are not steps).
fn last_event_at(dir: &Path) -> String {
    events(dir)
        .into_iter()
        .rev()
        .find(|e| e.get("step").is_some())
        .unwrap()["at"]
        .as_str()
        .unwrap()
        .to_string()
}

#[test]
fn defect_28_killed_runs_end_when_they_died_and_list_what_never_started() {
    let w = world();
    let done = w.bench_ok("load", &[]);
    let (mut child, dir) = query_run_in_background(&w);
    // A report over a run still running says so at the top.
    let out = w.gt.env.path().join("rep-running");
    let r = w.run(&[
        "runs",
        "report",
        done.to_str().unwrap(),
        dir.to_str().unwrap(),
        "--out",
        out.to_str().unwrap(),
    ]);
    r.ok().says("Incomplete: run").says("is still running");
    let md = std::fs::read_to_string(out.join("summary.md")).unwrap();
    assert!(md.contains("**Incomplete.**"), "{md}");

    let died = last_event_at(&dir);
    child.kill().unwrap();
    child.wait().unwrap();
    // Noticed later than it died.
    std::thread::sleep(Duration::from_millis(1200));
    let r = w.run(&["runs", "show", dir.to_str().unwrap(), "--json"]);
    r.ok();
    let v = r.json();
    let s = &v["data"]["summary"];
    assert_eq!(s["status"], "interrupted");
    assert_eq!(s["finished_at"], died, "the end is the last event");
    assert_eq!(
        s["not_started"],
        json!(["lastpoint", "single-groupby-1-1-1"]),
        "{s}"
    );
    let r = w.run(&["runs", "show", dir.to_str().unwrap()]);
    r.ok()
        .says("Never started (the run ended first): lastpoint, single-groupby-1-1-1");
}

/// Whether any process has `path` open (its `/proc/<pid>/fd` links).
fn held_by_anyone(path: &Path) -> bool {
    let Ok(procs) = std::fs::read_dir("/proc") else {
        return false;
    };
    procs.flatten().any(|p| {
        std::fs::read_dir(p.path().join("fd"))
            .map(|fds| {
                fds.flatten()
                    .any(|fd| std::fs::read_link(fd.path()).is_ok_and(|t| t == path))
            })
            .unwrap_or(false)
    })
}

/// Runs `tsbsctl args` in a private mount namespace where the state root is read-only; `None`
/// when this host cannot make one (no `unshare`, or no privilege to mount).
fn on_read_only_root(w: &World, args: &[&str]) -> Option<Run> {
    let probe = std::process::Command::new("unshare")
        .args(["-m", "true"])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status();
    if !probe.is_ok_and(|s| s.success()) {
        eprintln!("SKIPPED: cannot create a mount namespace here (unshare -m)");
        return None;
    }
    let env = &w.gt.env;
    let root = env.root.to_str().unwrap();
    let script = format!(
        "mount --bind '{root}' '{root}' && mount -o remount,bind,ro '{root}' && exec \"$0\" \"$@\""
    );
    let mut c = std::process::Command::new("unshare");
    c.args(["-m", "sh", "-c", &script])
        .arg(tsbsctl_bin())
        .args(args)
        .env_clear()
        .env("PATH", std::env::var("PATH").unwrap_or_default())
        .env("HOME", env.path().join("home"))
        .env("TSBSCTL_ROOT", &env.root)
        .current_dir(env.path().join("cwd"))
        .stdin(Stdio::null());
    for (k, v) in &env.envs {
        c.env(k, v);
    }
    Some(run_command(c, args, Duration::from_secs(120)))
}

#[test]
fn defect_19_runs_on_read_only_media_can_be_shown_compared_and_reported() {
    let w = world();
    let a = w.bench_ok("all", &[]);
    let b = w.bench_ok("query", &[]);
    // A run whose process was killed: still "running" on disk, as in the trial.
    let (mut child, dead) = query_run_in_background(&w);
    child.kill().unwrap();
    child.wait().unwrap();
    // The lock goes when the last process holding it does (bounded: the test is about what a
    // reader does once the owner is gone, not about how fast a busy machine reaps it).
    let lock = dead.join(".lock");
    assert!(
        wait_until(Duration::from_secs(20), || !held_by_anyone(&lock)),
        "the killed run's lock is still open somewhere"
    );
    let before = std::fs::read(dead.join("manifest.json")).unwrap();

    let Some(r) = on_read_only_root(&w, &["runs", "show", dead.to_str().unwrap(), "--json"]) else {
        return;
    };
    r.ok().says("read-only media");
    assert_eq!(r.json()["data"]["summary"]["status"], "interrupted");
    // Nothing was (or could be) written.
    assert_eq!(std::fs::read(dead.join("manifest.json")).unwrap(), before);

    let out = w.gt.env.path().join("rep-ro");
    let r = on_read_only_root(
        &w,
        &[
            "runs",
            "report",
            a.to_str().unwrap(),
            b.to_str().unwrap(),
            "--out",
            out.to_str().unwrap(),
        ],
    )
    .unwrap();
    r.ok();
    assert!(out.join("report.html").is_file());
    // Trial 2 N17: without --out the OS error came with no hint.
    let r = on_read_only_root(&w, &["runs", "report", a.to_str().unwrap()]).unwrap();
    r.code(1).says("pass --out DIR");

    let r = on_read_only_root(
        &w,
        &[
            "runs",
            "compare",
            "--baseline",
            a.to_str().unwrap(),
            "--candidate",
            b.to_str().unwrap(),
        ],
    )
    .unwrap();
    r.ok().says("not saved").says("Welch");
    assert!(!w.gt.env.root.join("comparisons").exists());
}

#[test]
fn defect_18_a_full_disk_during_a_load_names_the_disk_and_fails_the_run() {
    let w = world();
    let probe = std::process::Command::new("unshare")
        .args(["-m", "sh", "-c", "mount -t tmpfs -o size=1m tmpfs /mnt"])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status();
    if !probe.is_ok_and(|s| s.success()) {
        eprintln!("SKIPPED: cannot mount a tmpfs in a mount namespace here");
        return;
    }
    let env = &w.gt.env;
    let product = env.root.join("greptimedb");
    let stash = env.path().join("stash");
    let keep = env.path().join("kept-runs");
    // 28,800 rows: about 9 MiB of WAL, on a 4 MiB disk holding the workspace and its runs.
    let args = [
        "bench",
        "greptimedb",
        "load",
        "--database-id",
        "g1",
        "--stop-timeout",
        "5",
        "--profile",
        "smoke",
        "--scale",
        "20",
        "--log-interval",
        "60s",
        "--dataset-id",
        "big20",
        "--json",
    ];
    // The dataset is generated first, on the roomy disk.
    w.run(&[
        "data",
        "generate",
        "--profile",
        "smoke",
        "--scale",
        "20",
        "--log-interval",
        "60s",
        "--dataset-id",
        "big20",
        "--format",
        "influx",
    ])
    .ok();
    let script = format!(
        "set -e; P='{p}'; cp -a \"$P\" '{stash}'; mount -t tmpfs -o size=4m tmpfs \"$P\"; cp -a '{stash}/.' \"$P/\"; \
         set +e; \"$0\" \"$@\"; rc=$?; mkdir -p '{keep}'; cp -a \"$P/runs\" '{keep}/' 2>/dev/null; exit $rc",
        p = product.display(),
        stash = stash.display(),
        keep = keep.display()
    );
    let mut c = std::process::Command::new("unshare");
    c.args(["-m", "sh", "-c", &script])
        .arg(tsbsctl_bin())
        .args(args)
        .env_clear()
        .env("PATH", std::env::var("PATH").unwrap_or_default())
        .env("HOME", env.path().join("home"))
        .env("TSBSCTL_ROOT", &env.root)
        .current_dir(env.path().join("cwd"))
        .stdin(Stdio::null());
    for (k, v) in &env.envs {
        c.env(k, v);
    }
    let r = run_command(c, &args, Duration::from_secs(180));
    r.code(1);
    let err = r.json()["error"].clone();
    let msg = err["message"].as_str().unwrap();
    assert!(msg.contains("is full"), "{msg}");
    assert!(msg.contains("tmpfs"), "the disk is named: {msg}");
    assert!(msg.contains("refused writes"), "{msg}");
    assert!(!msg.contains(".manifest.json"), "{msg}");
    // The run was recorded to its end: failed, with a summary.
    let runs: Vec<PathBuf> = std::fs::read_dir(keep.join("runs"))
        .unwrap()
        .flatten()
        .map(|e| e.path())
        .collect();
    assert_eq!(runs.len(), 1, "{runs:?}");
    let m = read_json(&runs[0].join("manifest.json"));
    assert_eq!(m["status"], "failed", "{m}");
    assert!(runs[0].join("summary.md").is_file());
    assert!(!runs[0].join(".space-reserve").exists());
}

#[test]
fn defect_24_a_download_of_known_length_shows_size_percent_and_eta() {
    let gt = Gt::new();
    use testbed::releases::greptime as rel;
    let platform = rel::host_platform();
    let archive = rel::archive_path(STABLE, &platform);
    let bytes = rel::archive(
        &rel::GreptimeRelease::new(STABLE).with_knobs(&gt.knobs),
        &platform,
    )
    .len() as u64;
    // About 3 s for the whole archive, whatever its size.
    gt.mirror.fault(
        &archive,
        testbed::mirror::Fault::Slow {
            bytes_per_sec: (bytes / 3).max(1),
        },
    );
    let (code, screen) = on_terminal(&gt.env, &["greptimedb", "install", "--version", STABLE]);
    assert_eq!(code, 0, "{screen}");
    assert!(screen.contains("% "), "percent: {screen}");
    assert!(screen.contains(" eta "), "eta: {screen}");
    // The bytes so far of the archive's total size (it is tiny in the testbed).
    assert!(
        screen.contains(&format!(" B/{bytes} B ")),
        "size of a total: {screen}"
    );
}

#[test]
fn defect_26_rows_per_second_and_duration_agree() {
    let w = world();
    // Slow enough that whole milliseconds matter less than the agreement we check.
    w.tool_knobs("tsbs_load_greptime", json!({"batch_delay_ms": 7}));
    let dir = w.bench_ok("load", &["--batch-size", "100", "--load-workers", "1"]);
    let ing = summary(&dir)["ingestion"].clone();
    let rows = ing["rows"].as_f64().unwrap();
    let rate = ing["rows_per_second"].as_f64().unwrap();
    let dur = ing["duration_seconds"].as_f64().unwrap();
    assert!(
        (rows / rate - dur).abs() <= 1e-9 * dur,
        "rows {rows} / rate {rate} = {} but duration {dur}",
        rows / rate
    );
    assert!(ing["duration_source"]
        .as_str()
        .unwrap()
        .contains("rows per second"));
    // What the loader reported is kept beside it, truncated to whole milliseconds.
    let reported = ing["reported_duration_seconds"].as_f64().unwrap();
    assert!((reported * 1000.0).fract().abs() < 1e-6, "{reported}");
    assert!((reported - dur).abs() < 0.002, "{reported} vs {dur}");
}

#[test]
fn c2_a_query_runner_without_progress_is_stopped_when_asked() {
    let w = world();
    w.bench_ok("load", &[]);
    // The first query never answers within the test: no "After N queries" block appears.
    w.tool_knobs("tsbs_run_queries_influx", json!({"query_delay_ms": 60000}));
    let t0 = Instant::now();
    let r = w.bench(
        "query",
        &[
            "--query-type",
            "lastpoint",
            "--stall-timeout",
            "1",
            "--on-stall",
            "stop",
        ],
    );
    r.code(1).says("made no progress for").says("0 queries");
    assert!(t0.elapsed() < Duration::from_secs(45));
    let dir = run_dir(&r);
    let stalled: Vec<Value> = events(&dir)
        .into_iter()
        .filter(|e| e["step"] == "query:lastpoint" && e["data"]["stall"]["event"] == "stalled")
        .collect();
    assert_eq!(stalled.len(), 1, "{stalled:?}");
    assert_eq!(stalled[0]["data"]["stall"]["policy"]["on_stall"], "stop");
    assert_eq!(summary(&dir)["status"], "failed");
}
