//! `runs resume`: a run killed with kill -9 in its query phase is continued in its own
//! directory (the types not done), recorded as resumed, and then read by `runs summarize` and
//! `runs report` like a finished run; a finished run is extended with another query type (its
//! query set extended); and every refusal (complete, held, data changed, unfinished load)
//! changes nothing.

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

fn query_types(s: &Value) -> Vec<(String, String)> {
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

/// The whole `all` run in the background, killed with SIGKILL once its second query type has
/// started; returns its directory (the queries stay slow).
fn killed_in_the_query_phase(w: &World) -> PathBuf {
    // Slow queries (3 per type, one worker): a type takes a few seconds.
    w.tool_knobs("tsbs_run_queries_influx", json!({"query_delay_ms": 800}));
    let mut args = vec![
        "bench",
        "greptimedb",
        "all",
        "--database-id",
        "g1",
        "--stop-timeout",
        "5",
        "--queries",
        "3",
    ];
    args.extend(tiny());
    for t in TYPES {
        args.extend(["--query-type", t]);
    }
    let known = runs_of(w);
    let mut c = w.gt.env.cmd(&args);
    c.stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null());
    let mut child = c.spawn().unwrap();
    let mut dir = None;
    let second = wait_until(Duration::from_secs(120), || {
        dir = runs_of(w).into_iter().find(|d| !known.contains(d));
        dir.as_ref()
            .is_some_and(|d| d.join("logs/query-lastpoint-001.log").exists())
    });
    // SAFETY: signalling the tsbsctl child this test started.
    unsafe { libc::kill(child.id() as i32, libc::SIGKILL) };
    let _ = child.wait();
    assert!(second, "the second query type never started");
    dir.unwrap()
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

    let r = w.run(&["runs", "resume", p(&dir), "--json"]);
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
    assert_eq!(
        query_types(&s),
        TYPES
            .iter()
            .map(|t| (t.to_string(), "completed".to_string()))
            .collect::<Vec<_>>()
    );
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

    // A run whose load did not finish: a resume never loads (exit 2).
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
