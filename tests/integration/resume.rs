//! `runs resume`: a run killed with kill -9 in its query phase is continued in its own
//! directory (the types not done), recorded as resumed, and then read by `runs summarize` and
//! `runs report` like a finished run; a finished run is extended with another query type (its
//! query set extended); a run killed during its load (or before it, while its dataset was
//! generated), and a `load` run cut in its load, are loaded again from the start and finished
//! (issue 22); and every refusal (complete, held, data changed, an unconfirmed reset, another
//! dataset loaded since) changes nothing.

use std::path::{Path, PathBuf};
use std::time::Duration;

use serde_json::{json, Value};

use crate::util::*;
use crate::world::*;

fn p(d: &Path) -> &str {
    d.to_str().unwrap()
}

fn runs_of(w: &World) -> Vec<PathBuf> {
    std::fs::read_dir(w.gt.env.root.join("greptimedb/runs"))
        .map(|rd| rd.flatten().map(|e| e.path()).collect())
        .unwrap_or_default()
}

fn events(dir: &Path) -> Vec<Value> {
    std::fs::read_to_string(dir.join("events.jsonl"))
        .unwrap()
        .lines()
        .filter_map(|l| serde_json::from_str(l).ok())
        .collect()
}

pub(crate) fn query_types(s: &Value) -> Vec<(String, String)> {
    s["queries"]
        .as_array()
        .unwrap()
        .iter()
        .map(|q| {
            (
                q["query_type"].as_str().unwrap().to_string(),
                q["status"].as_str().unwrap().to_string(),
            )
        })
        .collect()
}

/// Every type of [`TYPES`], completed (a summary's [`query_types`] of a finished run).
pub(crate) fn every_type_completed() -> Vec<(String, String)> {
    TYPES
        .iter()
        .map(|t| (t.to_string(), "completed".to_string()))
        .collect()
}

/// A real server's run `dir` (id `id`), killed with kill -9 in its load: the first look
/// records it interrupted; `runs resume` without the confirmation exits 2 and changes
/// nothing; with it, the database is reset, loaded again, counted by the server at exactly
/// the dataset's rows, and every type runs.
pub(crate) fn resume_cut_load(env: &TestEnv, id: &str, dir: &Path) {
    let show = env.run_json(&["runs", "show", id]);
    assert_eq!(show.ok().json()["data"]["summary"]["status"], "interrupted");
    let before = std::fs::read(dir.join("manifest.json")).unwrap();
    env.run(&["runs", "resume", p(dir)])
        .code(2)
        .says("--confirm-reset benchmark");
    assert_eq!(std::fs::read(dir.join("manifest.json")).unwrap(), before);
    let r = env.run(&[
        "runs",
        "resume",
        p(dir),
        "--confirm-reset",
        "benchmark",
        "--json",
    ]);
    r.ok();
    assert_eq!(r.json()["data"]["resumed"]["load_mode"], "reset");
    let s = summary(dir);
    assert_eq!(s["status"], "completed", "{:#}", s["failures"]);
    assert_eq!(
        s["row_count"]["actual"], ROWS,
        "the server's own count after the reset and reload: {:#}",
        s["row_count"]
    );
    assert_eq!(query_types(&s), every_type_completed());
}

/// Kills the background query run `bg` (its directory `dir`, the [`TYPES`] in order) once its
/// second type has started, calls `after_kill` (the slow knobs are taken back there), then
/// resumes it: only the two types not done run, in the same directory, and the run completes.
pub(crate) fn kill_in_queries_and_resume(
    env: &TestEnv,
    mut bg: Bg,
    dir: &Path,
    after_kill: impl FnOnce(),
) {
    let second = dir.join("logs/query-lastpoint-001.log");
    assert!(
        wait_until(Duration::from_secs(90), || second.exists()),
        "the second type never started\n{}",
        bg.stderr()
    );
    bg.signal(libc::SIGKILL);
    bg.wait();
    after_kill();
    let r = env.run(&["runs", "resume", p(dir), "--json"]);
    r.ok();
    assert_eq!(
        r.json()["data"]["resumed"]["query_types"],
        json!(["lastpoint", "single-groupby-1-1-1"])
    );
    let s = summary(dir);
    assert_eq!(s["status"], "completed", "{:#}", s["failures"]);
    assert_eq!(query_types(&s), every_type_completed());
    assert!(!dir.join("logs/query-high-cpu-1-002.log").exists());
    assert!(dir.join("logs/query-lastpoint-002.log").exists());
}

/// A whole `phase` run (`all`: of [`TYPES`], 3 queries each) in the background, killed with
/// SIGKILL once `ready` holds of its directory (bounded wait); returns that directory.
fn killed_when(w: &World, phase: &str, extra: &[&str], ready: impl Fn(&Path) -> bool) -> PathBuf {
    let mut args = vec![
        "bench",
        "greptimedb",
        phase,
        "--database-id",
        "g1",
        "--stop-timeout",
        "5",
    ];
    args.extend(tiny());
    args.extend_from_slice(extra);
    if phase == "all" {
        args.extend(["--queries", "3"]);
        for t in TYPES {
            args.extend(["--query-type", t]);
        }
    }
    let known = runs_of(w);
    let mut c = w.gt.env.cmd(&args);
    c.stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null());
    let mut child = c.spawn().unwrap();
    let mut dir = None;
    let reached = wait_until(Duration::from_secs(120), || {
        dir = runs_of(w).into_iter().find(|d| !known.contains(d));
        dir.as_deref().is_some_and(&ready)
    });
    // SAFETY: signalling the tsbsctl child this test started.
    unsafe { libc::kill(child.id() as i32, libc::SIGKILL) };
    let _ = child.wait();
    assert!(reached, "the run never reached the point to kill it at");
    dir.unwrap()
}

/// The run killed once its second query type has started (the queries stay slow).
fn killed_in_the_query_phase(w: &World) -> PathBuf {
    // Slow queries (3 per type, one worker): a type takes a few seconds.
    w.tool_knobs("tsbs_run_queries_influx", json!({"query_delay_ms": 800}));
    killed_when(w, "all", &[], |d| {
        d.join("logs/query-lastpoint-001.log").exists()
    })
}

/// Rows the loader has reported written in `log` (its CSV progress lines' row total).
fn rows_written(log: &Path) -> f64 {
    std::fs::read_to_string(log)
        .unwrap_or_default()
        .lines()
        .filter_map(|l| {
            let f: Vec<&str> = l.split(',').collect();
            (f.len() == 7).then(|| f[5].parse::<f64>().ok()).flatten()
        })
        .fold(0.0, f64::max)
}

#[test]
fn a_run_killed_mid_queries_is_resumed_in_place_then_extended() {
    let w = world();
    let dir = killed_in_the_query_phase(&w);
    // Before: the run is interrupted, with one type done.
    let r = w.run(&["runs", "summarize", p(&dir), "--json"]);
    r.ok();
    assert_eq!(r.json()["data"]["status"], "interrupted");

    // A resume killed in its turn: while it works, the run is busy (exit 3, naming it).
    let mut c = w.gt.env.cmd(&["runs", "resume", p(&dir)]);
    c.stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null());
    let mut child = c.spawn().unwrap();
    let started = wait_until(Duration::from_secs(120), || {
        dir.join("logs/query-lastpoint-002.log").exists()
    });
    let busy = w.run(&["runs", "resume", p(&dir)]);
    // SAFETY: signalling the tsbsctl child this test started.
    unsafe { libc::kill(child.id() as i32, libc::SIGKILL) };
    let _ = child.wait();
    assert!(started, "the first resume never reached lastpoint");
    busy.code(3).says(&format!("held by pid {}", child.id()));
    w.tool_knobs("tsbs_run_queries_influx", json!({}));

    // Given as a path relative to the current directory: the runner, which works in a
    // directory of its own, still finds where to write its results.
    let rel = dir.strip_prefix(&w.gt.env.root).unwrap();
    let args = ["runs", "resume", rel.to_str().unwrap(), "--json"];
    let mut c = w.gt.env.cmd(&args);
    c.current_dir(&w.gt.env.root);
    let r = crate::util::run_command(c, &args, Duration::from_secs(300));
    r.ok();
    assert_eq!(
        PathBuf::from(r.json()["data"]["run_dir"].as_str().unwrap()),
        dir
    );
    assert_eq!(
        r.json()["data"]["resumed"]["query_types"],
        json!(["lastpoint", "single-groupby-1-1-1"])
    );
    let s = summary(&dir);
    assert_eq!(s["status"], "completed", "{}", s["failures"]);
    assert_eq!(s["failures"], json!([]));
    assert_eq!(query_types(&s), every_type_completed());
    // The done type was not run again; the interrupted one ran as attempt 3 (after the killed
    // resume's 2), the earlier logs kept.
    assert!(!dir.join("logs/query-high-cpu-1-002.log").exists());
    for n in 1..=3 {
        assert!(dir.join(format!("logs/query-lastpoint-00{n}.log")).exists());
    }
    // Recorded: manifest, events and summary say what was resumed, when, by which tsbsctl.
    let m = read_json(&dir.join("manifest.json"));
    assert_eq!(m["status"], "completed");
    assert_eq!(m["resumes"].as_array().unwrap().len(), 2);
    for (i, res) in m["resumes"].as_array().unwrap().iter().enumerate() {
        assert_eq!(res["previous_status"], "interrupted");
        assert_eq!(
            res["query_types"],
            json!(["lastpoint", "single-groupby-1-1-1"])
        );
        assert!(res["tool"]["version"].is_string() && res["at"].is_string());
        let sup = res["superseded"].as_array().unwrap();
        assert!(
            sup.contains(&json!({"step": "query:lastpoint", "attempt": i + 1})),
            "{sup:?}"
        );
        assert!(sup
            .iter()
            .all(|s| s["step"] != "query:high-cpu-1" && s["step"] != "load"));
    }
    assert_eq!(s["resumes"], m["resumes"]);
    assert!(events(&dir)
        .iter()
        .any(|e| e["step"] == "resume" && e["status"] == "completed"));
    let md = std::fs::read_to_string(dir.join("summary.md")).unwrap();
    assert!(md.contains("- Resumed "), "{md}");
    assert!(md.contains("after it was interrupted: ran lastpoint, single-groupby-1-1-1"));

    // Summarize and report treat it as a finished run.
    let r = w.run(&["runs", "summarize", p(&dir), "--json"]);
    r.ok();
    assert_eq!(r.json()["data"]["status"], "completed");
    let out = w.gt.env.path().join("report");
    w.run(&["runs", "report", p(&dir), "--out", p(&out)]).ok();
    let rep = std::fs::read_to_string(out.join("summary.md")).unwrap();
    assert!(rep.contains("lastpoint"), "{rep}");

    // Complete: nothing to resume, nothing changed.
    let before = std::fs::read(dir.join("manifest.json")).unwrap();
    let ev_before = std::fs::read(dir.join("events.jsonl")).unwrap();
    w.run(&["runs", "resume", p(&dir)])
        .code(2)
        .says("is completed: every query type is done");
    assert_eq!(std::fs::read(dir.join("manifest.json")).unwrap(), before);
    assert_eq!(std::fs::read(dir.join("events.jsonl")).unwrap(), ev_before);

    // Extended with one more type: the query set grows (a new set made from the old one's
    // files), only the new type runs.
    let old_set = m["query_set"].clone();
    let r = w.run(&[
        "runs",
        "resume",
        p(&dir),
        "--query-type",
        "double-groupby-1",
        "--json",
    ]);
    r.ok();
    let m = read_json(&dir.join("manifest.json"));
    let s = summary(&dir);
    assert_eq!(s["status"], "completed", "{}", s["failures"]);
    assert_eq!(query_types(&s).len(), 4);
    assert!(query_types(&s).iter().all(|(_, st)| st == "completed"));
    let ext = &m["resumes"][2];
    assert_eq!(ext["added_query_types"], json!(["double-groupby-1"]));
    assert_eq!(ext["query_types"], json!(["double-groupby-1"]));
    assert_eq!(ext["previous_status"], "completed");
    assert_eq!(
        ext["previous_query_set"]["query_set_id"],
        old_set["query_set_id"]
    );
    assert_ne!(m["query_set"]["query_set_id"], old_set["query_set_id"]);
    assert_eq!(m["workload"]["query_counts"]["double-groupby-1"], 10);
    assert_eq!(m["query_set"]["query_counts"]["double-groupby-1"], 10);
    assert!(!dir.join("logs/query-lastpoint-004.log").exists());
    let set_dir = PathBuf::from(m["query_set"]["query_set_path"].as_str().unwrap());
    let qm = read_json(&set_dir.join("manifest.json"));
    assert_eq!(qm["extended_from"]["query_set_id"], old_set["query_set_id"]);
    assert_eq!(qm["extended_from"]["reused_types"], json!(TYPES));
    assert_eq!(
        qm["extended_from"]["generated_types"],
        json!(["double-groupby-1"])
    );
    for t in TYPES {
        assert_eq!(
            qm["files"][t]["sha256"],
            read_json(
                &PathBuf::from(old_set["query_set_path"].as_str().unwrap()).join("manifest.json")
            )["files"][t]["sha256"]
        );
    }
    // The run's own earlier set stays as it was (other runs pin it).
    assert!(PathBuf::from(old_set["query_set_path"].as_str().unwrap())
        .join("manifest.json")
        .is_file());
}

#[test]
fn resume_refuses_a_held_a_changed_and_an_unloaded_run() {
    let w = world();
    let dir = w.bench_ok("all", &[]);
    let add = ["--query-type", "high-cpu-all", "--queries", "2"];
    let manifest = || std::fs::read(dir.join("manifest.json")).unwrap();
    let before = manifest();
    let resume = |extra: &[&str]| {
        let mut a = vec!["runs", "resume", p(&dir)];
        a.extend_from_slice(extra);
        w.run(&a)
    };

    // A type the run has: exit 2.
    resume(&["--query-type", "lastpoint"])
        .code(2)
        .says("already has query type(s) lastpoint");
    // --queries without a type to add: exit 2.
    resume(&["--queries", "4"]).code(2);

    // Held by a person's manual hold on its workspace: exit 3, naming the holder.
    w.run(&["workspace", "lock", "g1", "--reason", "resizing the disk"])
        .ok();
    resume(&add).code(3).says("resizing the disk");
    w.run(&["workspace", "unlock", "g1", "--force"]).ok();
    // Held by another process working in the run itself: exit 3.
    {
        use std::os::fd::AsRawFd;
        // (A finished run's lock file is gone: a held one is made as a process would.)
        let f = std::fs::OpenOptions::new()
            .create(true)
            .truncate(false)
            .write(true)
            .open(dir.join(".lock"))
            .unwrap();
        // SAFETY: an advisory lock on a file this test opened.
        assert_eq!(
            unsafe { libc::flock(f.as_raw_fd(), libc::LOCK_EX | libc::LOCK_NB) },
            0
        );
        resume(&add).code(3).says("busy");
    }
    assert_eq!(manifest(), before, "the refusals changed nothing");

    // The dataset's stored spec was edited under the run: exit 4.
    let ds_json = w.gt.env.root.join("datasets/tiny/dataset.json");
    let original = std::fs::read(&ds_json).unwrap();
    let mut edited: Value = serde_json::from_slice(&original).unwrap();
    edited["spec"]["seed"] = json!(124);
    std::fs::write(&ds_json, edited.to_string()).unwrap();
    resume(&add).code(4).says("dataset.json");
    std::fs::write(&ds_json, &original).unwrap();
    assert_eq!(manifest(), before);

    // The workspace was loaded again since: the data the run measured is gone (exit 4).
    w.bench(
        "load",
        &["--database-mode", "reset", "--confirm-reset", "benchmark"],
    )
    .ok();
    resume(&add).code(4).says("changed after run");
    assert_eq!(manifest(), before);

    // A run whose load did not finish, in a workspace that holds the run's dataset loaded since
    // (the `load` above): a resume reloads it only with a confirmed reset (exit 2).
    let copy = dir.with_file_name("copy-unloaded");
    std::fs::create_dir(&copy).unwrap();
    for name in ["manifest.json", "events.jsonl"] {
        std::fs::copy(dir.join(name), copy.join(name)).unwrap();
    }
    let text = std::fs::read_to_string(copy.join("events.jsonl")).unwrap();
    let cut: String = text
        .lines()
        .take_while(|l| !(l.contains("\"step\":\"load\"") && l.contains("\"completed\"")))
        .map(|l| format!("{l}\n"))
        .collect();
    std::fs::write(copy.join("events.jsonl"), cut).unwrap();
    let mut m: Value = read_json(&copy.join("manifest.json"));
    m["status"] = json!("interrupted");
    std::fs::write(copy.join("manifest.json"), m.to_string()).unwrap();
    w.run(&["runs", "resume", p(&copy)])
        .code(2)
        .says("did not finish");
}

#[test]
fn a_run_killed_during_its_load_is_loaded_again_and_finished_issue_22() {
    let w = world();
    // A slow load (29 batches of 100 rows, one worker) reporting its rows every 100 ms.
    w.tool_knobs(
        "tsbs_load_greptime",
        json!({"reporting_period_ms": 100, "batch_delay_ms": 400}),
    );
    let slow = ["--load-workers", "1", "--batch-size", "100"];
    let loading = |d: &Path| rows_written(&d.join("logs/load-001.log")) > 0.0;
    let dir = killed_when(&w, "all", &slow, loading);
    w.tool_knobs("tsbs_load_greptime", json!({}));
    let partial = rows_written(&dir.join("logs/load-001.log"));
    assert!(partial > 0.0 && partial < ROWS as f64, "{partial}");
    let r = w.run(&["runs", "summarize", p(&dir), "--json"]);
    r.ok();
    assert_eq!(r.json()["data"]["status"], "interrupted");
    // A copy of the cut run, for the refusal once the workspace holds other data.
    let copy = dir.with_file_name("copy-cut-load");
    std::fs::create_dir(&copy).unwrap();
    for name in ["manifest.json", "events.jsonl"] {
        std::fs::copy(dir.join(name), copy.join(name)).unwrap();
    }

    // Refused before anything is written: no confirmation of the reset, a wrong one, types
    // added to a run whose load is redone.
    let before = std::fs::read(dir.join("manifest.json")).unwrap();
    let ev_before = std::fs::read(dir.join("events.jsonl")).unwrap();
    w.run(&["runs", "resume", p(&dir)])
        .code(2)
        .says("did not finish")
        .says("--confirm-reset benchmark");
    w.run(&["runs", "resume", p(&dir), "--confirm-reset", "other"])
        .code(2)
        .says("does not name the SQL database");
    w.run(&[
        "runs",
        "resume",
        p(&dir),
        "--confirm-reset",
        "benchmark",
        "--query-type",
        "high-cpu-all",
    ])
    .code(2)
    .says("without --query-type");
    assert_eq!(std::fs::read(dir.join("manifest.json")).unwrap(), before);
    assert_eq!(std::fs::read(dir.join("events.jsonl")).unwrap(), ev_before);

    // Resumed: the load again from the start (reset), then every query type.
    let r = w.run(&[
        "runs",
        "resume",
        p(&dir),
        "--confirm-reset",
        "benchmark",
        "--json",
    ]);
    r.ok();
    assert_eq!(
        PathBuf::from(r.json()["data"]["run_dir"].as_str().unwrap()),
        dir
    );
    assert_eq!(r.json()["data"]["resumed"]["load_mode"], "reset");
    let s = summary(&dir);
    assert_eq!(s["status"], "completed", "{}", s["failures"]);
    assert_eq!(
        s["row_count"]["actual"], ROWS,
        "the partial load was replaced: {}",
        s["row_count"]
    );
    assert_eq!(s["row_count"]["expected"], ROWS);
    assert_eq!(s["ingestion"]["rows"], ROWS);
    assert_eq!(query_types(&s), every_type_completed());
    assert!(dir.join("logs/load-002.log").is_file());
    assert!(
        dir.join("logs/load-001.log").is_file(),
        "the cut load's log stays"
    );
    assert_eq!(w.ws()["binding"]["dataset_id"], "tiny");
    assert_eq!(w.ws()["binding"]["rows"], ROWS);
    // Recorded: manifest, events, summary.
    let m = read_json(&dir.join("manifest.json"));
    assert_eq!(m["status"], "completed");
    let res = m["resumes"].as_array().unwrap();
    assert_eq!(res.len(), 1);
    assert_eq!(res[0]["previous_status"], "interrupted");
    assert_eq!(res[0]["load_mode"], "reset");
    assert_eq!(res[0]["query_types"], json!(TYPES));
    assert!(res[0]["superseded"]
        .as_array()
        .unwrap()
        .contains(&json!({"step": "load", "attempt": 1})));
    assert_eq!(s["resumes"], m["resumes"]);
    assert!(events(&dir)
        .iter()
        .any(|e| e["step"] == "resume" && e["status"] == "completed"));
    let md = std::fs::read_to_string(dir.join("summary.md")).unwrap();
    assert!(
        md.contains("loaded again from the start (database mode reset), then ran"),
        "{md}"
    );
    // `runs show` and `runs list` agree.
    let show = w.run(&["runs", "show", p(&dir), "--json"]);
    show.ok();
    assert_eq!(show.json()["data"]["summary"]["status"], "completed");
    assert_eq!(show.json()["data"]["summary"]["resumes"], m["resumes"]);
    let l = w.run(&["runs", "list", "--json"]);
    l.ok();
    let runs = l.json()["data"]["runs"].as_array().unwrap().clone();
    let listed = runs
        .iter()
        .find(|r| r["run_dir"] == p(&dir))
        .expect("the run is listed");
    assert_eq!(listed["status"], "completed");
    assert_eq!(listed["data_state"], "as loaded");

    // A `load` run (a reset) cut in its load the same way: loaded again, whole.
    w.tool_knobs(
        "tsbs_load_greptime",
        json!({"reporting_period_ms": 100, "batch_delay_ms": 400}),
    );
    let mut args = slow.to_vec();
    args.extend(["--database-mode", "reset", "--confirm-reset", "benchmark"]);
    let load = killed_when(&w, "load", &args, loading);
    w.tool_knobs("tsbs_load_greptime", json!({}));
    assert!(rows_written(&load.join("logs/load-001.log")) < ROWS as f64);
    assert!(w.ws()["binding"].is_null(), "{}", w.ws()["binding"]);
    w.run(&["runs", "resume", p(&load)])
        .code(2)
        .says("--confirm-reset benchmark");
    w.run(&["runs", "resume", p(&load), "--confirm-reset", "benchmark"])
        .ok();
    let s = summary(&load);
    assert_eq!(s["status"], "completed", "{}", s["failures"]);
    assert_eq!(s["row_count"]["actual"], ROWS);
    assert_eq!(w.ws()["binding"]["rows"], ROWS);
    // Done: nothing left to continue.
    w.run(&["runs", "resume", p(&load), "--confirm-reset", "benchmark"])
        .code(2)
        .says("load and row count are done");

    // The cut run (its copy) once the workspace holds another dataset: not the resume's to
    // replace (exit 2, nothing written).
    w.bench(
        "load",
        &[
            "--profile",
            "smoke",
            "--scale",
            "1",
            "--log-interval",
            "60s",
            "--dataset-id",
            "other",
            "--database-mode",
            "reset",
            "--confirm-reset",
            "benchmark",
        ],
    )
    .ok();
    let before = std::fs::read(copy.join("manifest.json")).unwrap();
    w.run(&["runs", "resume", p(&copy), "--confirm-reset", "benchmark"])
        .code(2)
        .says("now holds dataset other");
    assert_eq!(std::fs::read(copy.join("manifest.json")).unwrap(), before);
}

#[test]
fn a_run_killed_while_its_dataset_is_generated_is_resumed_from_its_inputs_issue_22() {
    let w = world();
    // The generator waits before it writes: the run is cut in its dataset step.
    w.tool_knobs("tsbs_generate_data", json!({"delay_ms": 60_000}));
    let dir = killed_when(&w, "all", &[], |d| {
        std::fs::read_to_string(d.join("events.jsonl"))
            .is_ok_and(|t| t.contains("\"step\":\"dataset\""))
    });
    w.tool_knobs("tsbs_generate_data", json!({}));
    assert!(!dir.join("logs/load-001.log").exists());
    // The load never began and the run asked for no reset: nothing to confirm.
    w.run(&["runs", "resume", p(&dir), "--confirm-reset", "benchmark"])
        .code(2)
        .says("no reset to confirm");
    let r = w.run(&["runs", "resume", p(&dir), "--json"]);
    r.ok();
    assert_eq!(r.json()["data"]["resumed"]["load_mode"], "create");
    let s = summary(&dir);
    assert_eq!(s["status"], "completed", "{}", s["failures"]);
    assert_eq!(s["row_count"]["actual"], ROWS);
    assert_eq!(s["dataset"]["rows"], ROWS);
    assert_eq!(query_types(&s), every_type_completed());
    let m = read_json(&dir.join("manifest.json"));
    assert_eq!(m["status"], "completed");
    assert_eq!(m["resumes"][0]["load_mode"], "create");
    assert_eq!(m["dataset"]["dataset_id"], "tiny");
    assert_eq!(w.ws()["binding"]["rows"], ROWS);
    let show = w.run(&["runs", "show", p(&dir), "--json"]);
    show.ok();
    assert_eq!(show.json()["data"]["summary"]["status"], "completed");
}
