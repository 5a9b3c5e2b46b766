//! `tsbsctl bench ...` and `runs summarize` end to end: a stand-in Go and TSBS build (`env
//! prepare` against the mirror), GreptimeDB installed from the mirror, the `greptime` emulator
//! as the server, and the TSBS loader/runner stand-ins talking to it over HTTP. Datasets are
//! tiny (2 hosts, one day at 60 s) and only three query types run, to keep the file fast.

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use serde_json::{json, Value};

use crate::util::*;
use crate::world::*;

#[test]
fn smoke_all_then_reuse_then_query_only() {
    let w = world();
    let dir = w.bench_ok("all", &[]);
    let s = summary(&dir);
    assert_eq!(s["schema_version"], 1);
    assert_eq!(s["status"], "completed");
    assert_eq!(s["product"], "greptimedb");
    assert_eq!(s["label"], format!("GreptimeDB {STABLE}"));
    assert_eq!(s["target"]["mode"], "managed");
    assert_eq!(s["target"]["database_id"], "g1");
    assert_eq!(s["target"]["database"], "benchmark");
    assert_eq!(s["target"]["version"], STABLE);
    assert_eq!(s["server"]["binary_sha256"], w.ws()["binary_sha256"]);
    assert_eq!(s["server"]["config_sha256"], w.ws()["config_sha256"]);
    assert_eq!(s["dataset"]["dataset_id"], "tiny");
    assert_eq!(s["dataset"]["rows"], ROWS);
    assert_eq!(s["dataset"]["sha256"].as_str().unwrap().len(), 64);
    assert_eq!(
        s["query_set"]["query_counts"],
        json!({"high-cpu-1": 3, "lastpoint": 3, "single-groupby-1-1-1": 3})
    );
    assert_eq!(
        s["query_set"]["manifest_sha256"].as_str().unwrap().len(),
        64
    );
    assert!(s["query_set"]["query_set_id"]
        .as_str()
        .unwrap()
        .starts_with("greptime-"));
    assert_eq!(s["environment"]["go_version"], format!("go{GO}"));
    assert_eq!(s["workload"]["load_workers"], 2);
    assert_eq!(s["workload"]["batch_size"], 3000);
    assert_eq!(s["workload"]["database_mode"], "create");
    // Ingestion as the loader reported it.
    let ing = &s["ingestion"];
    assert_eq!(ing["status"], "completed");
    assert_eq!(ing["rows"], ROWS);
    assert_eq!(ing["metrics"], ROWS * 10);
    assert!(ing["rows_per_second"].as_f64().unwrap() > 0.0);
    assert!(ing["metrics_per_second"].as_f64().unwrap() > 0.0);
    assert!(ing["duration_seconds"].as_f64().unwrap() > 0.0);
    assert_eq!(ing["workers"], 2);
    assert_eq!(ing["batch_size"], 3000);
    assert_eq!(ing["source"], "results_file");
    assert!(dir.join(ing["log"].as_str().unwrap()).is_file());
    // Row count and storage.
    assert_eq!(
        s["row_count"],
        json!({"table": "cpu", "expected": ROWS, "actual": ROWS, "ok": true, "status": "completed"})
    );
    let st = &s["storage"];
    assert_eq!(st["when"], "after-load");
    assert_eq!(st["server_stopped"], true);
    assert!(st["wal_bytes"].as_u64().unwrap() > 0);
    assert_eq!(
        st["total_bytes"].as_u64().unwrap(),
        st["wal_bytes"].as_u64().unwrap()
            + st["data_bytes"].as_u64().unwrap()
            + st["other_bytes"].as_u64().unwrap()
    );
    // Queries: every selected type, sorted, all statistics.
    let q = s["queries"].as_array().unwrap();
    let types: Vec<&str> = q
        .iter()
        .map(|q| q["query_type"].as_str().unwrap())
        .collect();
    assert_eq!(types, TYPES);
    for q in q {
        assert_eq!(q["status"], "completed", "{q}");
        assert_eq!(q["query_count"], 3);
        assert_eq!(q["repetitions"], 1);
        for k in [
            "mean_ms",
            "median_ms",
            "min_ms",
            "max_ms",
            "stddev_ms",
            "p95_ms",
            "p99_ms",
        ] {
            assert!(q[k].as_f64().is_some(), "{k} in {q}");
        }
        assert!(q["min_ms"].as_f64() <= q["max_ms"].as_f64());
        assert!(dir.join(q["results_file"].as_str().unwrap()).is_file());
    }
    assert_eq!(s["failures"], json!([]));
    assert_eq!(s["data_state"]["label"], "as loaded");
    // Two server sessions (load, then queries), both stopped normally.
    let att = s["server_diagnostics"]["attempts"].as_array().unwrap();
    assert_eq!(att.len(), 2);
    assert!(att.iter().all(|a| a["status"] == "completed"));
    // Host, tool and the run manifest pins.
    assert!(s["host"]["cpus"].as_u64().unwrap() >= 1);
    assert!(s["tool"]["git_revision"].as_str().is_some());
    let m = read_json(&dir.join("manifest.json"));
    assert_eq!(m["kind"], "run");
    assert_eq!(m["flags"]["database_id"], "g1");
    assert!(m["environment"]["binaries"]["tsbs_load_greptime"]["sha256"].is_string());
    assert!(m["server"]["config"].as_str().unwrap().contains("[http]"));
    assert_eq!(
        m["server"]["installation"]["archive_sha256"]
            .as_str()
            .unwrap()
            .len(),
        64
    );
    assert!(m["server"]["installation"]["source_url"]
        .as_str()
        .unwrap()
        .ends_with(".tar.gz"));
    let md = std::fs::read_to_string(dir.join("summary.md")).unwrap();
    assert!(
        md.contains("## Ingestion") && md.contains("## Queries") && md.contains("lastpoint"),
        "{md}"
    );
    // The workspace is bound only now, to exactly this data.
    let ws = w.ws();
    assert_eq!(ws["binding"]["dataset_id"], "tiny");
    assert_eq!(ws["binding"]["rows"], ROWS);
    // No server left behind.
    assert!(!w.gt.ws_dir("g1").join("server.pid").exists());

    // Second all: loaded data reused, queries run again in a new run directory.
    let dir2 = w.bench_ok("all", &[]);
    assert_ne!(dir, dir2);
    let s2 = summary(&dir2);
    assert_eq!(s2["ingestion"]["status"], "reused");
    assert_eq!(s2["storage"]["when"], "at-rest");
    assert_eq!(s2["queries"].as_array().unwrap().len(), 3);
    assert!(s2["row_count"].is_null());
    assert_eq!(
        s2["server_diagnostics"]["attempts"]
            .as_array()
            .unwrap()
            .len(),
        1
    );
    // Query-only without naming the dataset: the bound one.
    let r3 = w.gt.run(&[
        "bench",
        "greptimedb",
        "query",
        "--database-id",
        "g1",
        "--query-type",
        "lastpoint",
        "--queries",
        "3",
        "--json",
    ]);
    r3.ok();
    let s3 = summary(&run_dir(&r3));
    assert_eq!(s3["dataset"]["dataset_id"], "tiny");
    assert_eq!(s3["dataset"]["rows"], ROWS);
    assert!(s3["ingestion"].is_null());
    // runs summarize rebuilds the same numbers from disk.
    let again = w.run(&["runs", "summarize", dir.to_str().unwrap(), "--json"]);
    again.ok();
    let s_again = summary(&dir);
    assert_eq!(s_again["queries"], s["queries"]);
    assert_eq!(s_again["ingestion"], s["ingestion"]);
}

fn runs_of(w: &World) -> Vec<PathBuf> {
    let mut v: Vec<PathBuf> = std::fs::read_dir(w.gt.env.root.join("greptimedb/runs"))
        .map(|rd| rd.flatten().map(|e| e.path()).collect())
        .unwrap_or_default();
    v.sort();
    v
}

#[test]
fn reset_needs_confirmation_and_a_failed_reset_leaves_no_binding() {
    let w = world();
    w.bench("load", &[]).ok();
    let before = w.ws();
    assert_eq!(before["binding"]["dataset_id"], "tiny");
    let runs = runs_of(&w);
    // Another dataset without a confirmed reset: exit 2, nothing touched.
    let other = [
        "--profile",
        "smoke",
        "--scale",
        "3",
        "--log-interval",
        "60s",
        "--dataset-id",
        "tiny3",
    ];
    let r = w.bench("load", &other);
    r.code(2).says("holds dataset tiny");
    let r = w.bench(
        "load",
        &[&other[..], &["--database-mode", "reset"]].concat(),
    );
    r.code(2).says("--confirm-reset benchmark");
    let r = w.bench(
        "load",
        &[
            &other[..],
            &["--database-mode", "reset", "--confirm-reset", "other"],
        ]
        .concat(),
    );
    r.code(2);
    assert_eq!(w.ws(), before);
    assert_eq!(runs_of(&w), runs);
    assert!(!w.gt.env.root.join("datasets/tiny3").exists());
    // A confirmed reset whose load fails: the binding is empty, not wrong.
    w.tool_knobs("tsbs_load_greptime", json!({"fail_after_rows": 100}));
    let r = w.bench(
        "load",
        &[
            &other[..],
            &[
                "--database-mode",
                "reset",
                "--confirm-reset",
                "benchmark",
                "--batch-size",
                "50",
            ],
        ]
        .concat(),
    );
    r.code(1).says("load failed");
    let ws = w.ws();
    assert!(ws["binding"].is_null(), "{ws}");
    let s = summary(&run_dir(&r));
    assert_eq!(s["status"], "failed");
    assert_eq!(s["ingestion"]["status"], "failed");
    assert_eq!(s["failures"][0]["stage"], "load");
    assert!(s["failures"][0]["log"]
        .as_str()
        .unwrap()
        .starts_with("logs/load-"));
    assert!(!w.gt.ws_dir("g1").join("server.pid").exists());
    // A plain load now meets the partial database: refused by the loader, with the way out.
    w.tool_knobs("tsbs_load_greptime", json!({}));
    w.bench("load", &other)
        .code(1)
        .says("exists")
        .says("--database-mode reset --confirm-reset benchmark");
    assert!(w.ws()["binding"].is_null());
    // Retrying the reset with a working loader binds the new dataset.
    w.bench(
        "load",
        &[
            &other[..],
            &["--database-mode", "reset", "--confirm-reset", "benchmark"],
        ]
        .concat(),
    )
    .ok();
    assert_eq!(w.ws()["binding"]["dataset_id"], "tiny3");
    assert_eq!(w.ws()["binding"]["rows"], 3 * 1440);
}

#[test]
fn row_count_shortfall_fails_the_run_and_binds_nothing() {
    let w = world();
    w.gt.set_knobs(json!({"drop_rows": 7}));
    let r = w.bench("all", &[]);
    r.code(1)
        .says(&format!("holds {} rows, the dataset has {ROWS}", ROWS - 7));
    let s = summary(&run_dir(&r));
    assert_eq!(s["status"], "failed");
    assert_eq!(s["row_count"]["expected"], ROWS);
    assert_eq!(s["row_count"]["actual"], ROWS - 7);
    assert_eq!(s["row_count"]["ok"], false);
    assert_eq!(s["queries"], json!([]), "nothing runs after a failed check");
    assert!(w.ws()["binding"].is_null());
    assert!(!w.gt.ws_dir("g1").join("server.pid").exists());
}

#[test]
fn server_crash_during_load_fails_the_run_and_keeps_logs() {
    let w = world();
    w.gt.set_knobs(json!({"crash_after_requests": 8}));
    let r = w.bench("all", &["--batch-size", "100"]);
    r.code(1);
    let dir = run_dir(&r);
    let s = summary(&dir);
    assert_eq!(s["status"], "failed");
    let stages: Vec<&str> = s["failures"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| f["stage"].as_str().unwrap())
        .collect();
    assert!(
        stages.contains(&"load") && stages.contains(&"server"),
        "{stages:?}"
    );
    for f in s["failures"].as_array().unwrap() {
        assert!(dir.join(f["log"].as_str().unwrap()).is_file(), "{f}");
    }
    assert!(w.ws()["binding"].is_null());
    assert!(!w.gt.ws_dir("g1").join("server.pid").exists());
}

/// Trial: after a load died midway, the "holds no loaded data" hint dropped the dataset (so
/// followed literally it generated the manual dataset) and the reset a half-created database
/// needs. The hint now works when followed as printed.
#[test]
fn a_query_after_an_unfinished_load_hints_a_load_that_works() {
    let w = world();
    let query = |w: &World| {
        w.run(&[
            "bench",
            "greptimedb",
            "query",
            "--database-id",
            "g1",
            "--dataset-id",
            "tiny",
            "--query-type",
            "lastpoint",
        ])
    };
    // Nothing loaded yet: load the dataset asked for, no reset.
    let r = query(&w);
    r.code(2).says("holds no loaded data");
    r.says("tsbsctl bench greptimedb load --database-id g1 --dataset-id tiny");
    assert!(
        !r.stderr.contains("--database-mode reset"),
        "{}",
        r.describe()
    );
    w.gt.set_knobs(json!({"crash_after_requests": 8}));
    let failed = w.bench("load", &["--batch-size", "100"]);
    failed.code(1);
    // Trial 2 N15: a load that did not finish leaves the data in an unknown state.
    let s = summary(&run_dir(&failed));
    assert_eq!(s["data_state"]["label"], "load failed: state unknown");
    w.gt.set_knobs(json!({}));
    let r = query(&w);
    r.code(2).says("holds no loaded data");
    let hint = r
        .stderr
        .lines()
        .find_map(|l| l.split_once(": tsbsctl ").map(|(_, c)| c.to_string()))
        .unwrap_or_else(|| panic!("no command in the hint\n{}", r.describe()));
    assert!(
        hint.contains("--dataset-id tiny --database-mode reset --confirm-reset benchmark"),
        "{hint}"
    );
    // Trial 2 N5: a query naming no dataset got the manual dataset in the hint; it names the
    // dataset the unfinished load was loading.
    let r = w.run(&[
        "bench",
        "greptimedb",
        "query",
        "--database-id",
        "g1",
        "--query-type",
        "lastpoint",
    ]);
    r.code(2)
        .says("--dataset-id tiny --database-mode reset --confirm-reset benchmark");
    assert!(!r.stderr.contains("cpu-only-s4000"), "{}", r.describe());
    // Followed as printed, it loads; then the query runs.
    let args: Vec<&str> = hint.split_whitespace().collect();
    w.run(&args).ok();
    query(&w).ok();
}

#[test]
fn a_failing_query_type_does_not_stop_the_others() {
    let w = world();
    // lastpoint's SQL uses last_value: the server answers 500 to it.
    w.gt.set_knobs(
        json!({"fail_sql": [{"contains": "last_value", "code": 1003, "error": "boom"}]}),
    );
    let r = w.bench("all", &[]);
    r.code(1).says("query:lastpoint");
    let dir = run_dir(&r);
    let s = summary(&dir);
    let q = s["queries"].as_array().unwrap();
    assert_eq!(q.len(), 3);
    assert_eq!(q[0]["status"], "completed");
    assert_eq!(q[1]["query_type"], "lastpoint");
    assert_eq!(q[1]["status"], "failed");
    assert_eq!(q[2]["status"], "completed");
    let f = &s["failures"].as_array().unwrap()[0];
    assert_eq!(f["stage"], "query");
    assert_eq!(f["step"], "query:lastpoint");
    assert!(f["reason"].as_str().unwrap().contains("500"), "{f}");
    assert!(dir.join(f["log"].as_str().unwrap()).is_file());
    let md = std::fs::read_to_string(dir.join("summary.md")).unwrap();
    assert!(md.contains("## Failures"));
    // The load was verified, so the binding is set even though a query failed.
    assert_eq!(w.ws()["binding"]["dataset_id"], "tiny");
}

#[test]
fn ctrl_c_during_queries_stops_everything_and_marks_the_run_interrupted() {
    let mut w = world();
    // Issue 16 #4: the runner's private directory (its config.json) goes on Ctrl-C too.
    let tmp = w.gt.env.path().join("tmp");
    std::fs::create_dir_all(&tmp).unwrap();
    w.gt.env.env("TMPDIR", tmp.display().to_string());
    w.bench("load", &[]).ok();
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
    // The runs that exist before the child starts: taken after the spawn, a fast child's own run
    // directory could already be among them and never be found.
    let known = runs_of(&w);
    let mut c = w.gt.env.cmd(&args);
    c.stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped());
    let child = c.spawn().unwrap();
    let pid = child.id() as i32;
    let mut dir = None;
    assert!(wait_until(Duration::from_secs(60), || {
        dir = runs_of(&w).into_iter().find(|d| !known.contains(d));
        dir.as_ref()
            .is_some_and(|d| d.join("logs/query-high-cpu-1-001.log").exists())
    }));
    let dir = dir.unwrap();
    assert!(wait_until(Duration::from_secs(20), || std::fs::read_dir(
        &tmp
    )
    .unwrap()
    .any(|e| e
        .unwrap()
        .file_name()
        .to_string_lossy()
        .starts_with("tsbsctl-tool-"))));
    let server_pid = read_json(&w.gt.ws_dir("g1").join("server.pid"))["pid"]
        .as_u64()
        .unwrap() as u32;
    // SAFETY: signalling the tsbsctl child this test started.
    unsafe { libc::kill(pid, libc::SIGINT) };
    let out = child.wait_with_output().unwrap();
    let r = Run::from_output(&args, out);
    r.code(130);
    assert_eq!(
        std::fs::read_dir(&tmp).unwrap().count(),
        0,
        "tool dirs removed"
    );
    assert!(!w.gt.ws_dir("g1").join("server.pid").exists());
    assert!(gone_within(server_pid, 5), "the server outlived Ctrl-C");
    let m = read_json(&dir.join("manifest.json"));
    assert_eq!(m["status"], "interrupted");
    let s = summary(&dir);
    assert_eq!(s["status"], "interrupted");
    assert_eq!(s["queries"][0]["status"], "interrupted");
    // The step lines (the recorded status lines and warnings beside them have no step).
    let events: Vec<Value> = std::fs::read_to_string(dir.join("events.jsonl"))
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str::<Value>(l).unwrap())
        .filter(|e| e.get("step").is_some())
        .collect();
    // The query running at Ctrl-C ended as interrupted, and no step was left running.
    assert!(
        events
            .iter()
            .any(|e| e["step"] == "query:high-cpu-1" && e["status"] == "interrupted"),
        "{events:#?}"
    );
    let mut last_of_step = std::collections::BTreeMap::new();
    for e in &events {
        last_of_step.insert(e["step"].as_str().unwrap(), e["status"].clone());
    }
    assert!(
        last_of_step.values().all(|st| st != "running"),
        "{last_of_step:?}"
    );
    // The last thing recorded is the server's orderly stop after the interruption: it exited
    // on the stop request, not killed.
    let last = events.last().unwrap();
    assert_eq!(last["step"], "server", "{last}");
    assert_eq!(last["status"], "completed", "{last}");
    assert_eq!(last["data"]["outcome"]["forced"], false, "{last}");
    assert_eq!(
        last["data"]["events"].as_array().unwrap().last().unwrap()["event"],
        "exited",
        "{last}"
    );
    // A run left "running" by a killed process is repaired by the next command that opens it.
    let mut m2 = m.clone();
    m2["status"] = json!("running");
    std::fs::write(
        dir.join("manifest.json"),
        serde_json::to_string_pretty(&m2).unwrap(),
    )
    .unwrap();
    std::fs::write(
        dir.join("events.jsonl"),
        std::fs::read_to_string(dir.join("events.jsonl")).unwrap()
            + "{\"seq\":999,\"step\":\"query:x\",\"attempt\":1,\"status\":\"running\",\"at\":\"t\"}\n",
    )
    .unwrap();
    w.run(&["runs", "summarize", dir.to_str().unwrap()]).ok();
    assert_eq!(
        read_json(&dir.join("manifest.json"))["status"],
        "interrupted"
    );
    let s = summary(&dir);
    assert!(s["failures"]
        .as_array()
        .unwrap()
        .iter()
        .any(|f| f["step"] == "query:x" && f["status"] == "interrupted"));
}

#[test]
fn compaction_then_queries_are_labelled_and_refusals_are_clear() {
    let w = world();
    w.bench("all", &[]).ok();
    let r = w.bench(
        "compact",
        &[
            "--strategy",
            "swcs",
            "--window",
            "7200",
            "--confirm-timeout",
            "20",
        ],
    );
    r.ok();
    let dir = run_dir(&r);
    let s = summary(&dir);
    assert_eq!(s["run_kind"], "compaction");
    assert_eq!(s["status"], "completed");
    let c = &s["compaction"];
    assert_eq!(c["flush"]["sql"], "ADMIN FLUSH_TABLE('cpu')");
    assert_eq!(
        c["compact"]["sql"],
        "ADMIN COMPACT_TABLE('cpu', 'swcs', 'window=7200')"
    );
    // The answer decided; the log corroborates with this manual compaction's own line.
    let line = c["confirmation"]["log_lines"][0].as_str().unwrap();
    assert!(line.contains("Compacted SST files"), "{line}");
    assert!(line.contains("window: Some(7200), waiter_num: 1"), "{line}");
    assert_eq!(c["confirmation"]["outcome"], "compacted");
    assert!(c["after_flush"]["sst_num"].is_u64(), "{c}");
    assert!(c["compact"]["elapsed_seconds"].is_f64(), "{c}");
    assert!(
        c["before"]["sst_num"].is_u64() && c["after"]["sst_num"].is_u64(),
        "{c}"
    );
    // One day of data in 2-hour windows: twelve SST files.
    assert_eq!(c["after"]["sst_num"], 12);
    let ws = w.ws();
    let mt = &ws["data_state"]["maintenance"][0];
    assert_eq!(mt["operation"], "compaction");
    assert_eq!(mt["status"], "completed");
    assert!(!w.gt.ws_dir("g1").join("server.pid").exists());
    // Queries after it carry the data state.
    let q = w.bench("query", &[]);
    q.ok();
    let s = summary(&run_dir(&q));
    assert_eq!(s["data_state"]["label"], "after manual compaction");
    assert_eq!(
        s["label"],
        format!("GreptimeDB {STABLE} (after manual compaction)")
    );
    // A server error on compact_table: exit 1, nothing recorded as compacted.
    w.gt.set_knobs(json!({"fail_sql": [{"contains": "compact_table", "code": 1003, "error": "compaction exploded"}]}));
    let r = w.bench("compact", &["--confirm-timeout", "5"]);
    r.code(1).says("compaction exploded");
    // The flush had run: the data state is unknown, never "as loaded" or "compacted".
    let mt = w.ws()["data_state"]["maintenance"].clone();
    assert_eq!(mt.as_array().unwrap().len(), 2);
    assert_eq!(mt[1]["status"], "failed");
    assert_eq!(mt[1]["data_state"], "unknown");
    assert_eq!(summary(&run_dir(&r))["status"], "failed");
    // Nothing to compact (TWCS after SWCS): 0 at once, no completion line, said plainly.
    w.gt.set_knobs(json!({}));
    let t = Instant::now();
    let dir = w.bench_ok("compact", &["--strategy", "twcs"]);
    assert!(t.elapsed() < Duration::from_secs(60));
    let c = &summary(&dir)["compaction"];
    assert_eq!(c["confirmation"]["outcome"], "nothing to compact", "{c}");
    assert_eq!(c["confirmation"]["corroborated"], false);
    assert!(std::fs::read_to_string(dir.join("summary.md"))
        .unwrap()
        .contains("**nothing to compact**"));
    assert_eq!(
        w.ws()["data_state"]["maintenance"][2]["status"],
        "completed"
    );
    // A workspace without the cpu table is refused.
    w.gt.set_knobs(json!({}));
    w.gt.prepare("g2", STABLE);
    let r = w.run(&[
        "bench",
        "greptimedb",
        "compact",
        "--database-id",
        "g2",
        "--json",
    ]);
    r.code(2).says("cpu does not exist");
}

#[test]
fn external_greptimedb_is_probed_and_loaded_with_an_explicit_mode() {
    let w = world();
    w.gt.prepare("ext", STABLE);
    let endpoint = endpoint_of(&w.gt.manifest("ext"));
    let mut bg = w.gt.serve_bg("ext", &[]);
    bg.wait_ready(&endpoint);
    let mut args = vec![
        "bench",
        "greptimedb",
        "all",
        "--url",
        &endpoint,
        "--queries",
        "3",
    ];
    args.extend(tiny());
    for t in TYPES {
        args.extend(["--query-type", t]);
    }
    // A load into someone else's server needs an explicit mode.
    w.run(&args).code(2).says("--database-mode");
    args.extend(["--database-mode", "create", "--json"]);
    let r = w.run(&args);
    r.ok();
    let s = summary(&run_dir(&r));
    assert_eq!(s["target"]["mode"], "external");
    assert_eq!(
        s["target"]["version"], STABLE,
        "the /status probe names the version"
    );
    assert_eq!(s["target"]["urls"], json!([endpoint]));
    assert_eq!(s["ingestion"]["rows"], ROWS);
    assert_eq!(s["row_count"]["actual"], ROWS);
    assert!(
        s["storage"].is_null(),
        "an external data directory is not measured"
    );
    assert_eq!(s["queries"].as_array().unwrap().len(), 3);
    bg.interrupt().code(130);
}

/// Issue 25 §3: `--url`s that reach two different GreptimeDB deployments (here two
/// standalone servers; their `information_schema.cluster_info` peers differ) are refused
/// before anything is written: they cannot be the frontends of one cluster.
#[test]
fn external_greptimedb_urls_of_two_deployments_are_refused() {
    let w = world();
    w.gt.prepare("e1", STABLE);
    w.gt.prepare("e2", STABLE);
    let (a, b) = (
        endpoint_of(&w.gt.manifest("e1")),
        endpoint_of(&w.gt.manifest("e2")),
    );
    let mut bg1 = w.gt.serve_bg("e1", &[]);
    bg1.wait_ready(&a);
    let mut bg2 = w.gt.serve_bg("e2", &[]);
    bg2.wait_ready(&b);
    let runs = w.gt.env.root.join("greptimedb/runs");
    let count = || std::fs::read_dir(&runs).map(|d| d.count()).unwrap_or(0);
    let before = count();
    let mut args = vec!["bench", "greptimedb", "load", "--url", &a, "--url", &b];
    args.extend(["--database-mode", "create"]);
    args.extend(tiny());
    w.run(&args)
        .code(2)
        .says("are not one GreptimeDB")
        .says("lists 1 STANDALONE in information_schema.cluster_info")
        .says("pass the frontends of one cluster");
    assert_eq!(count(), before, "no run directory");
    // One of them alone is fine, and recorded as a standalone server.
    let mut one = vec!["bench", "greptimedb", "load", "--url", &a];
    one.extend(["--database-mode", "create", "--json"]);
    one.extend(tiny());
    let r = w.run(&one);
    r.ok();
    let s = summary(&run_dir(&r));
    assert_eq!(s["target"]["probe"]["topology"]["summary"], "1 STANDALONE");
    assert_eq!(s["target"]["probe"]["topology"]["peers"][0]["peer_id"], 0);
    bg1.interrupt().code(130);
    bg2.interrupt().code(130);
}

/// An InfluxDB 3 emulator with authentication, started directly (an external server).
/// An external server the test started: killed when the test ends, also when it fails.
struct KillOnDrop(std::process::Child);

impl Drop for KillOnDrop {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

fn influx3_server(w: &World, edition: &str, token: &str) -> (KillOnDrop, String) {
    let port = free_port_block(1);
    let knobs = w.gt.env.path().join(format!("influx-{edition}.knobs.json"));
    std::fs::write(
        &knobs,
        json!({"admin_token": token, "wal_flush_interval_ms": 20}).to_string(),
    )
    .unwrap();
    let data = w.gt.env.path().join(format!("influx-{edition}-data"));
    let mut c = std::process::Command::new(testbed_bin());
    c.args([
        "emulate",
        "influxdb3",
        "serve",
        "--object-store",
        "file",
        "--node-id",
        "n1",
    ])
    .arg(format!("--data-dir={}", data.display()))
    .arg(format!("--http-bind=127.0.0.1:{port}"))
    .env("TESTBED_EMULATED_EDITION", edition)
    .env("TESTBED_EMULATED_VERSION", "3.11.1")
    .env("TESTBED_KNOBS", &knobs)
    .stdout(std::process::Stdio::null())
    .stderr(std::process::Stdio::null());
    let child = KillOnDrop(c.spawn().unwrap());
    let url = format!("http://127.0.0.1:{port}");
    let ok = wait_until(Duration::from_secs(20), || {
        std::net::TcpStream::connect(("127.0.0.1", port)).is_ok()
    });
    assert!(ok, "influxdb3 emulator did not listen");
    (child, url)
}

/// Trial 2 N8: a kill -9 of tsbsctl while a TSBS tool ran left the token in the tool's
/// `config.json` until a later run swept it. Killed the moment the tool has started, nothing
/// with a name holds it: `config.json` is a link to a memfd, gone with the processes.
#[test]
fn a_kill_9_while_a_tool_runs_leaves_no_token_in_any_file() {
    let mut w = world();
    let token = "apiv3_KILLED-token-8d2f61";
    let (_server, url) = influx3_server(&w, "core", token);
    w.gt.env.env("MY_TOKEN", token);
    let tmp = w.gt.env.path().join("tmp");
    std::fs::create_dir_all(&tmp).unwrap();
    w.gt.env.env("TMPDIR", tmp.display().to_string());
    w.tool_knobs("tsbs_load_influx3", json!({"batch_delay_ms": 300}));
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
        "--auth-token-env",
        "MY_TOKEN",
        "--admin-token-env",
        "MY_TOKEN",
    ];
    args.extend(tiny());
    let mut c = w.gt.env.cmd(&args);
    c.stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null());
    let mut child = c.spawn().unwrap();
    let config = || -> Option<PathBuf> {
        std::fs::read_dir(&tmp)
            .ok()?
            .flatten()
            .map(|e| e.path().join("config.json"))
            .find(|p| std::fs::symlink_metadata(p).is_ok())
    };
    let started = wait_until(Duration::from_secs(120), || config().is_some());
    // SAFETY: signalling the tsbsctl child this test started.
    unsafe { libc::kill(child.id() as i32, libc::SIGKILL) };
    let _ = child.wait();
    assert!(started, "the loader never started");
    let link = config().expect("the tool's config.json is left (swept by a later run)");
    assert!(
        std::fs::symlink_metadata(&link)
            .unwrap()
            .file_type()
            .is_symlink(),
        "{}",
        link.display()
    );
    // Every file with a name (links are not followed: this process's /proc/self/fd/N is
    // not the tool's), in $TMPDIR and in the state root.
    for dir in [&tmp, &w.gt.env.root] {
        for e in walkdir::WalkDir::new(dir).follow_links(false) {
            let e = e.unwrap();
            if e.file_type().is_file() {
                let bytes = std::fs::read(e.path()).unwrap_or_default();
                assert!(
                    !String::from_utf8_lossy(&bytes).contains(token),
                    "token in {}",
                    e.path().display()
                );
            }
        }
    }
}

#[test]
fn external_influxdb3_with_tokens_leaks_no_token() {
    let mut w = world();
    let token = "apiv3_SECRET-token-4c7e9d1b";
    let (_server, url) = influx3_server(&w, "core", token);
    w.gt.env.env("MY_TOKEN", token);
    let mut args = vec![
        "bench",
        "influxdb3",
        "all",
        "--url",
        &url,
        "--edition",
        "core",
        "--database-mode",
        "create",
        "--auth-token-env",
        "MY_TOKEN",
        "--admin-token-env",
        "MY_TOKEN",
        "--queries",
        "3",
    ];
    args.extend(tiny());
    for t in TYPES {
        args.extend(["--query-type", t]);
    }
    // A named variable that is not set is refused before anything happens.
    let missing: Vec<&str> = args
        .iter()
        .map(|a| if *a == "MY_TOKEN" { "NOT_SET_VAR" } else { a })
        .collect();
    w.run(&missing).code(2).says("NOT_SET_VAR is not set");
    args.push("--json");
    // Issue 16 #4: slow tools, so a scan of every process's argv sees them while they run.
    w.tool_knobs("tsbs_load_influx3", json!({"batch_delay_ms": 300}));
    w.tool_knobs("tsbs_run_queries_influx3", json!({"query_delay_ms": 100}));
    let tmp = w.gt.env.path().join("tmp");
    std::fs::create_dir_all(&tmp).unwrap();
    w.gt.env.env("TMPDIR", tmp.display().to_string());
    let marker = w.gt.env.path().display().to_string();
    let scan = crate::integrity::ProcScan::start(
        token,
        &marker,
        &["tsbs_load_influx3", "tsbs_run_queries_influx3"],
    );
    let r = w.run(&args);
    let (seen, leaks, cwds) = scan.finish();
    r.ok();
    assert_eq!(
        seen.iter().map(String::as_str).collect::<Vec<_>>(),
        ["tsbs_load_influx3", "tsbs_run_queries_influx3"],
        "the scan saw both tools run"
    );
    assert!(leaks.is_empty(), "token in an argv: {leaks:?}");
    // Each tool ran from its own private directory under $TMPDIR, removed afterwards.
    assert!(cwds.len() >= 2, "{cwds:?}");
    assert!(cwds.iter().all(|c| c.starts_with(&tmp)), "{cwds:?}");
    assert_eq!(
        std::fs::read_dir(&tmp).unwrap().count(),
        0,
        "tool dirs removed"
    );
    let dir = run_dir(&r);
    let s = summary(&dir);
    assert_eq!(s["product_label"], "InfluxDB 3 Core");
    assert_eq!(s["label"], "InfluxDB 3 Core 3.11.1");
    assert_eq!(s["target"]["version"], "3.11.1");
    assert_eq!(s["target"]["auth_token"], true);
    assert_eq!(
        s["durability"],
        json!({"no_sync": false, "accept_partial": false, "durable_write_acknowledgement": true, "whole_batch_rejection": true})
    );
    assert_eq!(s["workload"]["load_workers"], 2);
    assert_eq!(s["ingestion"]["rows"], ROWS);
    assert_eq!(s["row_count"]["actual"], ROWS);
    assert!(s["query_set"]["query_set_id"]
        .as_str()
        .unwrap()
        .starts_with("influx3-"));
    for q in s["queries"].as_array().unwrap() {
        assert_eq!(q["status"], "completed", "{q}");
    }
    let md = std::fs::read_to_string(dir.join("summary.md")).unwrap();
    // Real Core never fsyncs its WAL on local file storage (F9): said, never "synced".
    assert!(
        md.contains("- Write acknowledgement: **after the WAL flush** (the WAL file is written before the server answers; with a local file object store it is not fsynced"),
        "{md}"
    );
    assert!(!md.contains("synced before answering"), "{md}");
    // Every bullet on its own line (a trimmed newline once merged two).
    assert!(
        md.contains("not of the machine)\n- Whole-batch rejection of invalid lines: **yes**"),
        "{md}"
    );
    assert!(!md.lines().any(|l| l.contains(")- ")), "{md}");
    // Issue 24: the real server's /metrics has no process collector, only jemalloc's gauge
    // (influxdb3/src/commands/serve/jemalloc.rs): its resident bytes are the memory the
    // timeline shows, named as such; CPU is unknown, never 0.
    let text = std::fs::read_to_string(dir.join("timeline.jsonl")).unwrap();
    let samples: Vec<Value> = text
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert!(samples.iter().any(|s| s["phase"] == "load"), "{text}");
    for x in &samples {
        assert_eq!(x["source"], "metrics", "{x}");
        assert!(x["rss_bytes"].as_u64().unwrap() > 0, "{x}");
        assert!(x["cpu_s"].is_null(), "{x}");
    }
    let source = s["resources"]["source"].as_str().unwrap();
    assert!(
        source.starts_with("/metrics: jemalloc_memstats_bytes{stat=\"resident\"}")
            && source.contains("not the whole process"),
        "{source}"
    );
    let load_row = md
        .lines()
        .find(|l| l.starts_with("| load |"))
        .unwrap_or_else(|| panic!("{md}"));
    assert!(load_row.contains("| unknown |"), "{load_row}");
    // The logged command lines show <redacted>, and the token is nowhere.
    let load_log =
        std::fs::read_to_string(dir.join(s["ingestion"]["log"].as_str().unwrap())).unwrap();
    let first = load_log.lines().next().unwrap();
    assert!(!first.contains("--auth-token"), "{first}");
    assert!(
        first.ends_with("# config.json: auth-token=<redacted> admin-token=<redacted>"),
        "{first}"
    );
    assert_no_secret(w.gt.env.path().join("root").as_path(), token, &[&r]);
    // Issue 23 §3: the run's status lines are typed lines of its events.jsonl too (the
    // loader's start with its workers), none of them with the token; --json stdout has none.
    let events = std::fs::read_to_string(dir.join("events.jsonl")).unwrap();
    let recorded: Vec<Value> = events
        .lines()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .filter(|e| e.get("event").is_some())
        .collect();
    assert!(recorded.iter().any(|e| e["event"] == "run_in"), "{events}");
    // What was told before the run directory existed (the external server's probe) is in it
    // too, first, at the time it was told.
    assert_eq!(recorded[0]["event"], "external_version", "{events}");
    assert_eq!(recorded[0]["urls"], json!([url]), "{events}");
    let run_in = recorded
        .iter()
        .position(|e| e["event"] == "run_in")
        .unwrap();
    assert!(run_in > 0, "{events}");
    assert!(
        recorded[0]["ts"].as_str() <= recorded[run_in]["ts"].as_str(),
        "{events}"
    );
    let loading = recorded
        .iter()
        .find(|e| e["event"] == "loading")
        .unwrap_or_else(|| panic!("{events}"));
    assert_eq!(loading["workers"], 2, "{loading}");
    assert!(
        loading["message"].as_str().unwrap().starts_with("loading "),
        "{loading}"
    );
    assert!(recorded.iter().all(|e| e.get("step").is_none()), "{events}");
    assert!(!events.contains(token));
    assert!(!r.stdout.contains("\"event\""), "{}", r.stdout);
    // A query-only run: the dataset is what its queries were generated for, said as such
    // (F8: it showed "(-, -), - rows, SHA-256 `-`").
    let mut q = vec![
        "bench",
        "influxdb3",
        "query",
        "--url",
        &url,
        "--edition",
        "core",
        "--auth-token-env",
        "MY_TOKEN",
        "--queries",
        "3",
    ];
    q.extend(tiny());
    for t in TYPES {
        q.extend(["--query-type", t]);
    }
    q.push("--json");
    let r = w.run(&q);
    r.ok();
    let md = std::fs::read_to_string(run_dir(&r).join("summary.md")).unwrap();
    assert!(
        md.contains("(what the queries were generated for; this run loaded none of it): 2 hosts, "),
        "{md}"
    );
    assert!(!md.contains("(-, -)"), "{md}");
}

#[test]
fn analyze_keeps_every_attempt_and_a_version_override_records_both_identities() {
    let w = world();
    w.bench("load", &[]).ok();
    let r = w.bench(
        "analyze",
        &[
            "--query-type",
            "lastpoint",
            "--queries",
            "3",
            "--hot-runs",
            "2",
        ],
    );
    r.ok();
    let dir = run_dir(&r);
    let s = summary(&dir);
    let a = &s["analyses"][0];
    assert_eq!(a["query_type"], "lastpoint");
    assert_eq!(a["status"], "completed");
    for f in ["cold_result", "metrics"] {
        assert!(dir.join(a[f].as_str().unwrap()).is_file(), "{f}");
    }
    assert_eq!(a["hot_results"].as_array().unwrap().len(), 2);
    // lastpoint's SQL is fixed, so its "hot" runs do repeat the cold query (W2).
    assert_eq!(a["hot_same_sql_as_cold"], true);
    assert!(a["hot_queries"]
        .as_str()
        .unwrap()
        .contains("other random hosts"));
    let cold = read_json(&dir.join(a["cold_result"].as_str().unwrap()));
    assert_eq!(cold["phase"], "cold");
    assert!(cold["executed_sql"]
        .as_str()
        .unwrap()
        .starts_with("EXPLAIN ANALYZE VERBOSE "));
    // Too few queries for the hot runs: refused before anything runs.
    w.bench("analyze", &["--query-type", "lastpoint", "--queries", "2"])
        .code(2)
        .says("at least 3");
    // A type the dataset is too small for (2 hosts): refused before a run directory exists.
    let before = runs_of(&w);
    w.bench(
        "query",
        &["--query-type", "cpu-max-all-8", "--queries", "3"],
    )
    .code(2)
    .says("cpu-max-all-8 needs at least 8 hosts");
    assert_eq!(runs_of(&w), before);

    // Another installed version on the same data, confirmed.
    w.run(&["greptimedb", "install", "--version", BETA]).ok();
    let beta = BETA;
    w.bench("query", &["--greptime-version", beta])
        .code(2)
        .says("--confirm-version-override g1");
    let r = w.bench(
        "query",
        &[
            "--greptime-version",
            beta,
            "--confirm-version-override",
            "g1",
        ],
    );
    r.ok();
    let s = summary(&run_dir(&r));
    assert_eq!(s["target"]["version"], beta);
    assert_eq!(s["target"]["workspace_version"], STABLE);
    assert_eq!(s["target"]["version_override"], true);
    assert_ne!(
        s["target"]["binary_sha256"],
        s["target"]["workspace_binary_sha256"]
    );
    assert_eq!(w.ws()["version"], STABLE, "the workspace is not changed");
    // Load phases refuse the override.
    w.bench(
        "load",
        &[
            "--greptime-version",
            beta,
            "--confirm-version-override",
            "g1",
        ],
    )
    .code(2);
}

#[test]
fn managed_influxdb3_core_all_and_reuse() {
    let w = world();
    let knobs = publish_influx3(&w, "core");
    // The restart before the queries replays the WAL, in proportion to it (real 3.10.1: 92.6 s
    // for 305 MB); this small WAL (about 0.5 MiB) takes about 1.5 s.
    std::fs::write(&knobs, json!({"wal_replay_ms_per_mib": 3000}).to_string()).unwrap();
    w.prepare_influx3("core1", "core");
    let mut args = vec![
        "bench",
        "influxdb3",
        "all",
        "--database-id",
        "core1",
        "--queries",
        "3",
        "--stop-timeout",
        "10",
        // A compressed dataset: tsbsctl streams it, decompressed, to the loader's stdin.
        "--compression",
        "gzip",
    ];
    args.extend(tiny());
    for t in TYPES {
        args.extend(["--query-type", t]);
    }
    args.push("--json");
    let r = w.run(&args);
    r.ok();
    let dir = run_dir(&r);
    let s = summary(&dir);
    assert_eq!(s["label"], "InfluxDB 3 Core 3.11.1");
    assert_eq!(s["edition"], "core");
    assert_eq!(s["target"]["mode"], "managed");
    assert_eq!(s["durability"]["durable_write_acknowledgement"], true);
    assert_eq!(s["durability"]["whole_batch_rejection"], true);
    assert_eq!(s["workload"]["load_workers"], 2);
    assert_eq!(s["ingestion"]["rows"], ROWS);
    assert_eq!(s["row_count"]["actual"], ROWS);
    let st = &s["storage"];
    assert_eq!(st["server_stopped"], true);
    assert!(st["total_bytes"].as_u64().unwrap() > 0);
    // Real Core snapshots to Parquet only after 900 WAL flushes and a graceful stop only
    // flushes the WAL buffer: a short load is WAL (the published "Core mainly 12 GB of WAL").
    assert_eq!(st["data_bytes"], 0, "no snapshot on a graceful stop: {st}");
    assert!(st["wal_bytes"].as_u64().unwrap() > 0, "{st}");
    // Said for InfluxDB 3 too (it showed "-"), in its own terms.
    assert_eq!(st["never_flushed"], true, "{st}");
    // The WAL defaults were read in the v3.10.1 source: not claimed for 3.11.1.
    let src = s["server_settings"]["source"].as_str().unwrap();
    assert!(src.contains("not confirmed for 3.11.1"), "{src}");
    let md = std::fs::read_to_string(dir.join("summary.md")).unwrap();
    assert!(md.contains("not confirmed for 3.11.1"), "{md}");
    assert!(md.contains("**No data files yet:**"), "{md}");
    assert!(md.contains("no Parquet file yet"), "{md}");
    // One count that reached the rows: how long it took is said (12 min at 2.6 M rows on the
    // real server).
    assert!(md.contains("expected — **ok** (one count, "), "{md}");
    // F4: the WAL replay of the restart after the load is part of the result.
    let attempts = s["server_diagnostics"]["attempts"].as_array().unwrap();
    let restart: Vec<&Value> = attempts
        .iter()
        .filter(|a| a["after_load"].is_string())
        .collect();
    assert_eq!(restart.len(), 1, "{attempts:#?}");
    assert_eq!(restart[0]["attempt"], 2);
    let ready = restart[0]["ready_seconds"].as_f64().unwrap();
    assert!(ready >= 1.0, "{ready}");
    assert!(
        md.contains("| 2 (first start after the load: it replays its WAL, where Core keeps all data no snapshot has persisted) | completed | "),
        "{md}"
    );
    assert!(md.contains("| Server start | Status | Ready after (s) | Stop took (s) | Log |"));
    let p = dir.to_string_lossy().into_owned();
    let rep = w.run(&["runs", "report", &p, "--json"]);
    rep.ok();
    let rdir = PathBuf::from(rep.json()["data"]["report_dir"].as_str().unwrap());
    let rmd = std::fs::read_to_string(rdir.join("summary.md")).unwrap();
    assert!(
        rmd.contains(&format!(
            "| First start after the load: ready after (s) | {:.1} |",
            ready
        )),
        "{rmd}"
    );
    for q in s["queries"].as_array().unwrap() {
        assert_eq!(q["status"], "completed", "{q}");
    }
    let load_log =
        std::fs::read_to_string(dir.join(s["ingestion"]["log"].as_str().unwrap())).unwrap();
    let first = load_log.lines().next().unwrap();
    assert!(first.contains("--no-sync=false --accept-partial=false"));
    assert!(
        !first.contains("--file="),
        "gzip data goes through stdin: {first}"
    );
    assert_eq!(s["dataset"]["compression"], "gzip");
    let ws = read_json(
        &w.gt
            .env
            .root
            .join("influxdb3/databases/core1/manifest.json"),
    );
    assert_eq!(ws["binding"]["dataset_id"], "tiny");
    // Again: reused.
    let r = w.run(&args);
    r.ok();
    assert_eq!(summary(&run_dir(&r))["ingestion"]["status"], "reused");
    // Editions come from the workspace, not a flag.
    let mut bad = args.clone();
    bad.extend(["--edition", "core"]);
    w.run(&bad).code(2).says("omit --edition");
}

#[test]
fn external_influxdb3_enterprise_all() {
    let w = world();
    let (mut child, url) = enterprise_server(&w);
    let mut args = vec![
        "bench",
        "influxdb3",
        "all",
        "--url",
        &url,
        "--edition",
        "enterprise",
        "--database-mode",
        "reset",
        "--confirm-reset",
        "benchmark",
        "--queries",
        "3",
        "--no-sync",
        "--json",
    ];
    args.extend(tiny());
    for t in TYPES {
        args.extend(["--query-type", t]);
    }
    let r = w.run(&args);
    r.ok();
    let s = summary(&run_dir(&r));
    assert_eq!(s["label"], "InfluxDB 3 Enterprise 3.11.1");
    assert_eq!(s["durability"]["durable_write_acknowledgement"], false);
    assert_eq!(s["ingestion"]["rows"], ROWS);
    assert_eq!(s["row_count"]["ok"], true);
    assert_eq!(s["queries"].as_array().unwrap().len(), 3);
    let _ = child.kill();
    let _ = child.wait();
}

#[test]
fn quickstart_runs_once_then_only_queries_and_fails_fast_offline() {
    let (gt, _knobs_dir) = unprepared();
    let port = free_port_block(4).to_string();
    let r = gt.run(&["quickstart", "--http-port", &port]);
    r.ok().says("summary.md");
    let r = gt.run_json(&["quickstart"]);
    r.ok();
    let s = summary(&run_dir(&r));
    assert_eq!(s["status"], "completed");
    assert_eq!(s["target"]["database_id"], "quickstart");
    assert_eq!(
        s["ingestion"]["status"], "reused",
        "the second call only queries"
    );
    assert_eq!(s["workload"]["profile"], "smoke");
    assert_eq!(s["queries"].as_array().unwrap().len(), 15);
    assert_eq!(s["dataset"]["rows"], 86400);
    let first_runs = gt.mirror.requests().len();
    // The second call needed no download at all.
    let r = gt.run(&["quickstart"]);
    r.ok();
    assert_eq!(gt.mirror.requests().len(), first_runs);
    // Trial 2 N7: another port on the existing workspace was silently ignored; it is refused
    // at once, naming the port in use. The same port is fine.
    let other = free_port_block(4).to_string();
    let r = gt.run(&["quickstart", "--http-port", &other]);
    r.code(2)
        .says(&format!("already uses HTTP port {port}"))
        .says("greptimedb remove --database-id quickstart");
    assert_eq!(gt.mirror.requests().len(), first_runs);

    // A machine that cannot reach the download hosts fails at once, naming host and setting.
    let mut off = TestEnv::new();
    for k in [
        "TSBSCTL_GITHUB_URL",
        "TSBSCTL_GITHUB_API_URL",
        "TSBSCTL_GO_DL_URL",
        "TSBSCTL_INFLUXDATA_DL_URL",
        "TSBSCTL_INFLUXDB3_INSTALLER_URL",
    ] {
        off.env(k, "http://127.0.0.1:1/x");
    }
    off.env("TSBSCTL_TSBS_REPO", "http://127.0.0.1:1/tsbs.git");
    // Trial 2 N6: a bad port is refused before any work (here: before the hosts are probed),
    // and nothing is written.
    for (bad, why) in [("0", "between 1 and 65535"), ("65534", "at most 65532")] {
        let t = Instant::now();
        off.run(&["quickstart", "--http-port", bad])
            .code(2)
            .says(why);
        assert!(t.elapsed() < Duration::from_secs(10));
        assert!(
            all_files(&off.root).is_empty(),
            "{:?}",
            all_files(&off.root)
        );
    }
    let t = Instant::now();
    let r = off.run(&["quickstart"]);
    r.code(1)
        .says("cannot reach 127.0.0.1:1")
        .says("TSBSCTL_TSBS_REPO")
        .says("cargo run --release -p testbed -- serve");
    assert!(t.elapsed() < Duration::from_secs(30));
}

#[test]
fn refusals_before_anything_is_written() {
    let w = Gt::new();
    // No workspace: exit 2 with the prepare command.
    w.run(&["bench", "greptimedb", "all", "--database-id", "nope"])
        .code(2)
        .says("greptimedb prepare --database-id nope");
    // Both or neither target.
    w.run(&["bench", "greptimedb", "all"])
        .code(2)
        .says("--database-id");
    w.run(&[
        "bench",
        "greptimedb",
        "all",
        "--database-id",
        "a",
        "--url",
        "http://127.0.0.1:1",
    ])
    .code(2);
    w.run(&["bench", "greptimedb", "query", "--url", "ftp://x"])
        .code(2)
        .says("HTTP");
    w.run(&[
        "bench",
        "greptimedb",
        "compact",
        "--url",
        "http://127.0.0.1:1",
    ])
    .code(2)
    .says("managed workspace");
    w.run(&[
        "bench",
        "influxdb3",
        "all",
        "--url",
        "http://127.0.0.1:1",
        "--database-mode",
        "create",
    ])
    .code(2)
    .says("--edition");
    w.run(&[
        "bench",
        "greptimedb",
        "query",
        "--database-id",
        "a",
        "--database-mode",
        "reset",
    ])
    .code(2);
    w.run(&[
        "bench",
        "greptimedb",
        "all",
        "--database-id",
        "a",
        "--load-workers",
        "0",
    ])
    .code(2)
    .says("must be positive");
    w.run(&[
        "bench",
        "greptimedb",
        "all",
        "--database-id",
        "a",
        "--query-count",
        "nope=3",
    ])
    .code(2);
    // Nothing was written for any of them.
    assert!(!w.env.root.join("greptimedb/runs").exists());
    assert!(!w.env.root.join("datasets").exists());
    // A prepared workspace but no TSBS build: a failure naming `env prepare`, still no run.
    w.prepare("g1", STABLE);
    // (Exit 2 since trial-run #23: a step run before `env prepare`.)
    w.run(&["bench", "greptimedb", "all", "--database-id", "g1"])
        .code(2)
        .says("tsbsctl env prepare");
    assert!(!w.env.root.join("greptimedb/runs").exists());
    // A manual hold keeps the benchmark out (exit 3, naming the reason) unless its token is given.
    let hold = w.run_json(&["workspace", "lock", "g1", "--reason", "tuning by hand"]);
    hold.ok();
    let token = hold.json()["data"]["token"]
        .as_str()
        .unwrap_or_else(|| panic!("{}", hold.describe()))
        .to_string();
    w.run(&["bench", "greptimedb", "all", "--database-id", "g1"])
        .code(3)
        .says("tuning by hand");
    w.run(&[
        "bench",
        "greptimedb",
        "all",
        "--database-id",
        "g1",
        "--hold-token",
        &token,
    ])
    .code(2)
    .says("tsbsctl env prepare");
    let runs = w.run(&[
        "bench",
        "greptimedb",
        "all",
        "--database-id",
        "g1",
        "--hold-token",
        &token,
    ]);
    assert_no_secret(&w.env.root, &token, &[&runs]);
}

#[test]
fn old_greptimedb_gets_a_bare_window_and_a_server_panic_fails_the_run() {
    let w = world();
    let old = OLD;
    w.gt.prepare("old", old);
    let mut args = vec![
        "bench",
        "greptimedb",
        "load",
        "--database-id",
        "old",
        "--stop-timeout",
        "5",
    ];
    args.extend(tiny());
    w.run(&args).ok();
    let r = w.run(&[
        "bench",
        "greptimedb",
        "compact",
        "--database-id",
        "old",
        "--confirm-timeout",
        "20",
        "--json",
    ]);
    r.ok();
    let s = summary(&run_dir(&r));
    assert_eq!(
        s["compaction"]["compact"]["sql"],
        "ADMIN COMPACT_TABLE('cpu', 'swcs', '7200')"
    );
    assert_eq!(s["status"], "completed");
    // A panic in the server log while the queries ran: the run fails and names the log.
    w.gt.set_knobs(json!({"inject_logs": [{"level": "PANIC", "message": "index out of bounds"}]}));
    let r = w.run(&[
        "bench",
        "greptimedb",
        "query",
        "--database-id",
        "old",
        "--query-type",
        "lastpoint",
        "--queries",
        "3",
        "--stop-timeout",
        "5",
        "--json",
    ]);
    r.code(1).says("panic");
    let s = summary(&run_dir(&r));
    let f = s["failures"]
        .as_array()
        .unwrap()
        .iter()
        .find(|f| f["stage"] == "server")
        .unwrap()
        .clone();
    assert!(
        f["log"].as_str().unwrap().starts_with("logs/server-"),
        "{f}"
    );
    assert_eq!(s["server_diagnostics"]["panic_count"], 1);
    assert!(s["queries"]
        .as_array()
        .unwrap()
        .iter()
        .all(|q| q["status"] == "completed"));
}

#[test]
fn managed_influxdb3_enterprise_all_after_activation() {
    let mut w = world();
    let knobs = publish_influx3(&w, "enterprise");
    std::fs::write(
        &knobs,
        json!({"wal_flush_interval_ms": 20, "verification_delay_ms": 100}).to_string(),
    )
    .unwrap();
    w.prepare_influx3("ent1", "enterprise");
    let mut args = vec![
        "bench",
        "influxdb3",
        "all",
        "--database-id",
        "ent1",
        "--queries",
        "3",
        "--stop-timeout",
        "10",
    ];
    args.extend(tiny());
    for t in TYPES {
        args.extend(["--query-type", t]);
    }
    // Without an active licence the benchmark is refused with the command that fixes it.
    w.run(&args).code(2).says("influxdb3 activate");
    let email = "benchmarker@example.invalid";
    w.gt.env.env("MY_MAIL", email);
    w.run(&[
        "influxdb3",
        "activate",
        "--database-id",
        "ent1",
        "--license-type",
        "trial",
        "--license-email-env",
        "MY_MAIL",
        "--timeout",
        "20",
    ])
    .ok();
    args.push("--json");
    let r = w.run(&args);
    r.ok();
    let s = summary(&run_dir(&r));
    assert_eq!(s["label"], "InfluxDB 3 Enterprise 3.11.1");
    assert_eq!(s["edition"], "enterprise");
    assert_eq!(s["target"]["mode"], "managed");
    assert_eq!(s["ingestion"]["rows"], ROWS);
    assert_eq!(s["row_count"]["ok"], true);
    assert!(s["storage"]["total_bytes"].as_u64().unwrap() > 0);
    assert!(s["queries"]
        .as_array()
        .unwrap()
        .iter()
        .all(|q| q["status"] == "completed"));
    assert_no_secret(&w.gt.env.root.join("influxdb3/runs"), email, &[&r]);
}

/// Live processes whose program lies under `dir` and whose command line names `tool`.
fn processes_of(dir: &Path, tool: &str) -> Vec<String> {
    std::fs::read_dir("/proc")
        .unwrap()
        .flatten()
        .filter_map(|e| {
            let stat = std::fs::read_to_string(e.path().join("stat")).ok()?;
            let state = stat[stat.rfind(')')? + 1..].split_whitespace().next()?;
            if state == "Z" || state == "X" {
                return None;
            }
            let argv = std::fs::read(e.path().join("cmdline")).ok()?;
            let argv = String::from_utf8_lossy(&argv).replace('\0', " ");
            (argv.starts_with(&*dir.to_string_lossy()) && argv.contains(tool)).then_some(argv)
        })
        .collect()
}

#[test]
fn ctrl_c_during_query_generation_stops_the_generator_and_exits_130() {
    let w = world();
    w.bench("load", &[]).ok();
    let calls = w.gt.env.path().join("query-generator-calls.log");
    w.tool_knobs(
        "tsbs_generate_queries",
        json!({"delay_ms": 60_000, "invocations_log": calls}),
    );
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
    args.extend(tiny());
    for t in TYPES {
        args.extend(["--query-type", t]);
    }
    let mut c = w.gt.env.cmd(&args);
    c.stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped());
    let child = c.spawn().unwrap();
    assert!(
        wait_until(Duration::from_secs(60), || calls.exists()),
        "the query generator never started"
    );
    let t0 = Instant::now();
    // SAFETY: signalling the tsbsctl child this test started (not its generators).
    unsafe { libc::kill(child.id() as i32, libc::SIGINT) };
    let r = Run::from_output(&args, child.wait_with_output().unwrap());
    r.code(130);
    // The generator sleeps 60 s before it writes: only a stop ends the run this soon.
    assert!(t0.elapsed() < Duration::from_secs(30), "{:?}", t0.elapsed());
    let left = processes_of(w.gt.env.path(), "tsbs_generate_queries");
    assert!(left.is_empty(), "generators left running: {left:?}");
}

/// Anchors-2 §1 "cold runs": `--cold` restarts the managed server and drops the OS page cache
/// before each query type, records each start and says so in the summary; a cold run is not
/// compared with a warm one. Refused before anything is written where it cannot work.
#[test]
fn cold_queries_restart_the_server_and_drop_the_page_cache_before_each_type() {
    let w = world();
    let runs = || std::fs::read_dir(w.gt.env.root.join("greptimedb/runs")).map_or(0, |d| d.count());
    w.bench("load", &["--cold"])
        .code(2)
        .says("--cold applies to the query and all phases only");
    w.bench("query", &["--cold", "--url", "http://127.0.0.1:9"])
        .code(2)
        .says("external server");
    assert_eq!(runs(), 0, "a refused --cold wrote a run");
    if let Err(e) = std::fs::OpenOptions::new()
        .write(true)
        .open("/proc/sys/vm/drop_caches")
    {
        // Not root here: the refusal is the behaviour to check.
        eprintln!("SKIP the cold run itself: /proc/sys/vm/drop_caches is not writable ({e})");
        w.bench("all", &["--cold"])
            .code(2)
            .says("--cold drops the OS page cache");
        assert_eq!(runs(), 0);
        return;
    }
    let warm = w.bench_ok("all", &[]);
    let cold = w.bench_ok("query", &["--cold"]);
    let ev = crate::pipeline::events(&cold);
    let colds: Vec<&Value> = ev
        .iter()
        .filter(|e| e["step"] == "cold-start" && e["status"] == "completed")
        .collect();
    let types: Vec<&str> = colds
        .iter()
        .map(|e| e["data"]["before_query_type"].as_str().unwrap())
        .collect();
    assert_eq!(
        types,
        ["high-cpu-1", "lastpoint", "single-groupby-1-1-1"],
        "{colds:?}"
    );
    // Each cold start is its own server start, ready before its type ran.
    let mut starts: Vec<u64> = colds
        .iter()
        .map(|e| e["data"]["server_attempt"].as_u64().unwrap())
        .collect();
    starts.dedup();
    assert_eq!(starts.len(), 3, "{colds:?}");
    assert!(colds
        .iter()
        .all(|e| e["data"]["page_cache_dropped"] == true));
    let s = summary(&cold);
    assert_eq!(s["status"], "completed");
    assert_eq!(s["cold"]["starts"], 3, "{}", s["cold"]);
    assert_eq!(
        read_json(&cold.join("manifest.json"))["flags"]["cold"],
        true
    );
    assert!(summary(&warm).get("cold").is_none());
    let md = std::fs::read_to_string(cold.join("summary.md")).unwrap();
    assert!(md.contains("Cold queries (--cold)"), "{md}");
    assert!(md.contains("cold start before lastpoint"), "{md}");
    // A cold run against a warm one: the latencies measure the cache, not the server.
    let r = w.run(&[
        "runs",
        "compare",
        "--baseline",
        warm.to_str().unwrap(),
        "--candidate",
        cold.to_str().unwrap(),
        "--json",
    ]);
    r.ok();
    let c = &r.json()["data"]["summary"]["candidates"][0];
    assert_eq!(c["verdict"], "not comparable", "{c}");
}

/// A GreptimeDB stand-in with a static user provider (`bench` and `password`, from a file so
/// the password is in no argv), started directly: an external server.
fn greptime_server_with_user(w: &World, password: &str) -> (KillOnDrop, u16) {
    let port = free_port_block(4);
    let users = w.gt.env.path().join("greptime-users.txt");
    std::fs::write(&users, format!("bench={password}\n")).unwrap();
    let mut c = std::process::Command::new(testbed_bin());
    c.args(["emulate", "greptime", "standalone", "start"])
        .arg(format!("--http-addr=127.0.0.1:{port}"))
        .arg(format!("--grpc-bind-addr=127.0.0.1:{}", port + 1))
        .arg(format!("--mysql-addr=127.0.0.1:{}", port + 2))
        .arg(format!("--postgres-addr=127.0.0.1:{}", port + 3))
        .arg(format!(
            "--data-home={}",
            w.gt.env.path().join("gt-auth-data").display()
        ))
        .arg(format!(
            "--user-provider=static_user_provider:file:{}",
            users.display()
        ))
        .env("TESTBED_EMULATED_VERSION", STABLE)
        .env_remove("TESTBED_KNOBS")
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null());
    let child = KillOnDrop(c.spawn().unwrap());
    let ok = wait_until(Duration::from_secs(20), || {
        std::net::TcpStream::connect(("127.0.0.1", port)).is_ok()
    });
    assert!(ok, "greptime emulator did not listen");
    (child, port)
}

/// Issue 22: an external GreptimeDB with a user and password, reached by two URLs (two
/// spellings of one server, as two frontends of one cluster). The password reaches
/// tsbsctl's requests, the loader (its `user`/`password` keys) and the runner (URL userinfo)
/// through the nameless config.json only: in no argv, log, manifest, summary or named file.
/// No or a wrong password fails at once with the server's words, exit 2, no run directory.
#[test]
fn external_greptimedb_with_a_user_and_two_urls_leaks_no_password() {
    let mut w = world();
    let password = "gt-SECRET-pw:4f1@x";
    let (_server, port) = greptime_server_with_user(&w, password);
    let (u1, u2) = (
        format!("http://127.0.0.1:{port}"),
        format!("http://localhost:{port}"),
    );
    let runs = w.gt.env.root.join("greptimedb/runs");
    let count = || std::fs::read_dir(&runs).map(|d| d.count()).unwrap_or(0);
    let mut base = vec!["bench", "greptimedb", "all", "--url", &u1, "--url", &u2];
    base.extend(["--database-mode", "create", "--queries", "3"]);
    base.extend(tiny());
    for t in TYPES {
        base.extend(["--query-type", t]);
    }
    // No credentials: the server's 401 in its own words, before anything is written.
    let before = count();
    w.run(&base)
        .code(2)
        .says("needs authentication: Not found http or grpc authorization header (HTTP 401)")
        .says("--password-env");
    w.gt.env.env("GT_PW", "wrong-one");
    let mut args = base.clone();
    args.extend(["--user", "bench", "--password-env", "GT_PW"]);
    let t0 = Instant::now();
    w.run(&args).code(2).says(
        "refused user \"bench\": Username and password does not match, username: bench (HTTP 401)",
    );
    assert!(
        t0.elapsed() < Duration::from_secs(30),
        "a wrong password fails fast"
    );
    assert_eq!(count(), before, "no run directory");
    // A managed workspace runs without auth: --user is refused there.
    let r = w.run(&[
        "bench",
        "greptimedb",
        "query",
        "--database-id",
        "g1",
        "--user",
        "bench",
        "--password-env",
        "GT_PW",
    ]);
    r.code(2)
        .says("a managed workspace's server runs without authentication");
    // The right password, the tools slow enough for the argv scan to see them.
    w.gt.env.env("GT_PW", password);
    w.tool_knobs("tsbs_load_greptime", json!({"batch_delay_ms": 300}));
    w.tool_knobs("tsbs_run_queries_influx", json!({"query_delay_ms": 100}));
    let tmp = w.gt.env.path().join("tmp");
    std::fs::create_dir_all(&tmp).unwrap();
    w.gt.env.env("TMPDIR", tmp.display().to_string());
    args.push("--json");
    let marker = w.gt.env.path().display().to_string();
    let scan = crate::integrity::ProcScan::start(
        password,
        &marker,
        &["tsbs_load_greptime", "tsbs_run_queries_influx"],
    );
    let r = w.run(&args);
    let (seen, leaks, _) = scan.finish();
    r.ok();
    assert_eq!(
        seen.iter().map(String::as_str).collect::<Vec<_>>(),
        ["tsbs_load_greptime", "tsbs_run_queries_influx"],
        "the scan saw both tools run"
    );
    assert!(leaks.is_empty(), "password in an argv: {leaks:?}");
    let dir = run_dir(&r);
    let s = summary(&dir);
    assert_eq!(s["target"]["urls"], json!([u1, u2]));
    assert_eq!(s["target"]["user"], "bench");
    assert_eq!(s["ingestion"]["rows"], ROWS);
    assert_eq!(s["row_count"]["actual"], ROWS);
    for q in s["queries"].as_array().unwrap() {
        assert_eq!(q["status"], "completed", "{q}");
    }
    let md = std::fs::read_to_string(dir.join("summary.md")).unwrap();
    assert!(
        md.contains(&format!("`{u1}, {u2}` as user `bench` (HTTP basic auth)")),
        "{md}"
    );
    assert!(
        md.contains("- 2 URLs: the loader's and the query runner's workers take them in turn"),
        "{md}"
    );
    // Issue 25 §3: what the URLs reach (both spell one standalone server), and which of them
    // each tool's workers used (2 loader workers, 1 query worker).
    let topo = &s["target"]["probe"]["topology"];
    assert_eq!(topo["mode"], "standalone", "{topo}");
    assert_eq!(topo["summary"], "1 STANDALONE", "{topo}");
    assert!(
        md.contains("the load wrote through 2 of them (2 worker(s)), the queries went through 1 (1 worker(s))"),
        "{md}"
    );
    assert!(
        md.contains("- Deployment (`information_schema.cluster_info`, the same through every URL): standalone, 1 STANDALONE"),
        "{md}"
    );
    // The loader got both URLs and its keys; the runner both URLs with the user shown.
    let load_log =
        std::fs::read_to_string(dir.join(s["ingestion"]["log"].as_str().unwrap())).unwrap();
    let first = load_log.lines().next().unwrap();
    assert!(first.contains(&format!("--urls={u1},{u2}")), "{first}");
    assert!(
        first.ends_with(" # config.json: user=bench password=<redacted>"),
        "{first}"
    );
    let logs: Vec<PathBuf> = std::fs::read_dir(dir.join("logs"))
        .unwrap()
        .flatten()
        .map(|e| e.path())
        .filter(|p| {
            p.file_name()
                .unwrap()
                .to_string_lossy()
                .starts_with("query-")
        })
        .collect();
    assert!(!logs.is_empty());
    for l in logs {
        let text = std::fs::read_to_string(&l).unwrap();
        let first = text.lines().next().unwrap();
        assert!(!first.contains("--urls"), "{first}");
        assert!(
            first.ends_with(&format!(
                " # config.json: urls=http://bench:<redacted>@127.0.0.1:{port},http://bench:<redacted>@localhost:{port}"
            )),
            "{first}"
        );
    }
    assert_eq!(
        std::fs::read_dir(&tmp).unwrap().count(),
        0,
        "tool dirs removed"
    );
    assert_no_secret(w.gt.env.path().join("root").as_path(), password, &[&r]);
}

/// Trial 2 N8 for the GreptimeDB password: tsbsctl killed with -9 the moment the loader has
/// started leaves it in no file with a name (the loader's `config.json` is a link to a memfd).
#[test]
fn a_kill_9_while_the_greptime_loader_runs_leaves_no_password_in_any_file() {
    let mut w = world();
    let password = "gt-KILLED-pw-71c3";
    let (_server, port) = greptime_server_with_user(&w, password);
    let url = format!("http://127.0.0.1:{port}");
    w.gt.env.env("GT_PW", password);
    let tmp = w.gt.env.path().join("tmp");
    std::fs::create_dir_all(&tmp).unwrap();
    w.gt.env.env("TMPDIR", tmp.display().to_string());
    w.tool_knobs("tsbs_load_greptime", json!({"batch_delay_ms": 300}));
    let mut args = vec!["bench", "greptimedb", "load", "--url", &url];
    args.extend(["--database-mode", "create", "--user", "bench"]);
    args.extend(["--password-env", "GT_PW"]);
    args.extend(tiny());
    let mut c = w.gt.env.cmd(&args);
    c.stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null());
    let mut child = c.spawn().unwrap();
    let config = || -> Option<PathBuf> {
        std::fs::read_dir(&tmp)
            .ok()?
            .flatten()
            .map(|e| e.path().join("config.json"))
            .find(|p| std::fs::symlink_metadata(p).is_ok())
    };
    let started = wait_until(Duration::from_secs(120), || config().is_some());
    // SAFETY: signalling the tsbsctl child this test started.
    unsafe { libc::kill(child.id() as i32, libc::SIGKILL) };
    let _ = child.wait();
    assert!(started, "the loader never started");
    let link = config().expect("the tool's config.json is left (swept by a later run)");
    assert!(std::fs::symlink_metadata(&link)
        .unwrap()
        .file_type()
        .is_symlink());
    // Files with a name only (links are not followed), in $TMPDIR and the state root.
    for dir in [&tmp, &w.gt.env.root] {
        for e in walkdir::WalkDir::new(dir).follow_links(false) {
            let e = e.unwrap();
            if e.file_type().is_file() {
                let bytes = std::fs::read(e.path()).unwrap_or_default();
                assert!(
                    !String::from_utf8_lossy(&bytes).contains(password),
                    "password in {}",
                    e.path().display()
                );
            }
        }
    }
}

/// Issue 25 §2: `bench greptimedb all --partitions 8 --partition-column hostname` on a managed
/// standalone server. The `cpu` table is made before the load from the schema the server
/// auto-creates for the dataset's first line, split into 8 regions of equal host shares
/// (lexicographic ranges over the dataset's 16 host names); the loader only writes; after the
/// load every region holds rows and their sum is the loaded rows; a compaction is confirmed
/// per region. Bad combinations are refused before a run directory exists.
#[test]
fn greptimedb_partitioned_table_is_made_before_the_load_and_counted_per_region() {
    let w = world();
    let spec = |id: &'static str| {
        [
            "--profile",
            "smoke",
            "--scale",
            "16",
            "--log-interval",
            "60s",
            "--dataset-id",
            id,
        ]
    };
    let runs = w.gt.env.root.join("greptimedb/runs");
    let count = || std::fs::read_dir(&runs).map(|d| d.count()).unwrap_or(0);
    let before = count();
    let with = |extra: &[&'static str], id: &'static str| {
        let mut a: Vec<&str> = extra.to_vec();
        a.extend(spec(id));
        a
    };
    w.bench(
        "load",
        &with(
            &["--partitions", "32", "--partition-column", "hostname"],
            "h16",
        ),
    )
    .code(2)
    .says("exceeds the dataset's 16 hosts");
    w.bench(
        "load",
        &with(
            &["--partitions", "8", "--partition-column", "region"],
            "h16",
        ),
    )
    .code(2)
    .says("only hostname ranges");
    w.bench("load", &with(&["--partitions", "8"], "h16"))
        .code(2)
        .says("--partition-column");
    w.bench(
        "load",
        &with(
            &[
                "--partitions",
                "8",
                "--partition-column",
                "hostname",
                "--use-case",
                "devops",
            ],
            "d16",
        ),
    )
    .code(2)
    .says("cpu-only");
    assert_eq!(count(), before, "no run directory for bad input");

    let dir = w.bench_ok(
        "all",
        &with(
            &["--partitions", "8", "--partition-column", "hostname"],
            "h16",
        ),
    );
    let s = summary(&dir);
    assert_eq!(s["status"], "completed");
    let loaded = s["ingestion"]["rows"].as_u64().unwrap();
    assert_eq!(loaded, 16 * 1440);
    assert_eq!(s["row_count"]["ok"], true);
    // The flags and the workload record the layout.
    let m = read_json(&dir.join("manifest.json"));
    assert_eq!(m["flags"]["partitions"], 8, "{}", m["flags"]);
    assert_eq!(m["flags"]["partition_column"], "hostname");
    assert_eq!(s["workload"]["partitions"], 8);
    assert_eq!(s["workload"]["partition_column"], "hostname");
    // The table: made from the auto-created schema, both texts kept.
    let t = &s["partitions"]["table"];
    assert_eq!(t["schema_matches"], true, "{t}");
    let auto = std::fs::read_to_string(dir.join(t["auto_created_file"].as_str().unwrap())).unwrap();
    let made = std::fs::read_to_string(dir.join(t["created_file"].as_str().unwrap())).unwrap();
    assert!(
        auto.starts_with("CREATE TABLE IF NOT EXISTS \"cpu\" (\n  \"hostname\" STRING NULL,"),
        "{auto}"
    );
    assert!(!auto.contains("PARTITION"), "{auto}");
    assert!(made.contains("PARTITION ON COLUMNS (\"hostname\") (\n  hostname < 'host_10',\n  hostname >= 'host_10' AND hostname < 'host_12',"), "{made}");
    assert!(
        made.contains("  hostname >= 'host_8'\n)\nENGINE=mito"),
        "{made}"
    );
    assert_eq!(t["regions"].as_array().unwrap().len(), 8);
    // The loader only wrote: it did not create (or drop) the database.
    let load = crate::pipeline::events(&dir)
        .into_iter()
        .find(|e| e["step"] == "load" && e["data"]["command"].is_string())
        .unwrap();
    let cmd = load["data"]["command"].to_string();
    assert!(cmd.contains("--do-create-db=false"), "{cmd}");
    // Per region after the load: 8 regions, 2 hosts each, on the one standalone peer.
    let rg = &s["partitions"]["regions"];
    let regions = rg["regions"].as_array().unwrap();
    assert_eq!(regions.len(), 8, "{rg}");
    let rows: Vec<u64> = regions
        .iter()
        .map(|r| r["rows"].as_u64().unwrap())
        .collect();
    assert_eq!(rows.iter().sum::<u64>(), loaded, "{rg}");
    assert!(rows.iter().all(|n| *n > 0), "{rg}");
    assert_eq!(
        rows,
        vec![2 * 1440; 8],
        "equal host shares are equal row shares"
    );
    for (i, r) in regions.iter().enumerate() {
        assert_eq!(r["region_number"], i as u64);
        assert_eq!(r["peer_id"], 0);
        // The server shows the rule as its PartitionExpr prints it: values unquoted (real v1.0.2).
        assert_eq!(
            r["rule"].as_str().unwrap(),
            t["regions"][i]["rule"].as_str().unwrap().replace('\'', "")
        );
    }
    assert_eq!(rg["rows_match"], true);
    let md = std::fs::read_to_string(dir.join("summary.md")).unwrap();
    assert!(md.contains("### Partitioned table"), "{md}");
    assert!(
        md.contains(&format!(
            "{} in all, the load wrote {} — **ok**",
            fmt_num(loaded),
            fmt_num(loaded)
        )),
        "{md}"
    );
    assert!(md.contains("| 7 | "), "{md}");

    // A compaction of the partitioned table: every region confirmed by its own log line.
    let dir = w.bench_ok("compact", &["--strategy", "swcs", "--window", "3600"]);
    let c = &summary(&dir)["compaction"];
    assert_eq!(
        c["confirmation"]["regions_confirmed"],
        json!([0, 1, 2, 3, 4, 5, 6, 7]),
        "{c}"
    );
    assert_eq!(c["confirmation"]["regions_unconfirmed"], json!([]));

    // The workspace now holds the dataset: a second partitioned load is refused (it would be
    // skipped), unless it resets.
    let before = count();
    w.bench(
        "load",
        &with(
            &["--partitions", "4", "--partition-column", "hostname"],
            "h16",
        ),
    )
    .code(2)
    .says("already holds dataset h16");
    assert_eq!(count(), before);
}

/// `23040` → `23,040`, as summary.md writes counts.
fn fmt_num(n: u64) -> String {
    let s = n.to_string();
    let mut out = String::new();
    for (i, c) in s.chars().enumerate() {
        if i > 0 && (s.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    out
}

/// Issue 25 §2 on an external standalone server (`--url`): the partitioned table is made
/// through the URL, the scratch database of the schema probe is gone afterwards, and a second
/// partitioned load into the existing table (reuse) fails without touching it; reset makes
/// it anew.
#[test]
fn external_greptimedb_partitioned_load_and_its_database_modes() {
    let w = world();
    w.gt.prepare("ext", STABLE);
    let endpoint = endpoint_of(&w.gt.manifest("ext"));
    let mut bg = w.gt.serve_bg("ext", &[]);
    bg.wait_ready(&endpoint);
    let load = |mode: &[&'static str]| {
        let mut a = vec!["bench", "greptimedb", "load", "--url", &endpoint];
        a.extend([
            "--partitions",
            "2",
            "--partition-column",
            "hostname",
            "--json",
        ]);
        a.extend_from_slice(mode);
        a.extend(tiny());
        w.run(&a)
    };
    let r = load(&["--database-mode", "create"]);
    r.ok();
    let s = summary(&run_dir(&r));
    assert_eq!(s["target"]["mode"], "external");
    let rg = &s["partitions"]["regions"];
    let rows: Vec<u64> = rg["regions"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["rows"].as_u64().unwrap())
        .collect();
    assert_eq!(rows, vec![ROWS / 2, ROWS / 2], "{rg}");
    assert_eq!(
        s["partitions"]["table"]["regions"][0]["rule"],
        "hostname < 'host_1'"
    );
    // The probe's scratch database is dropped again.
    let sql = |db: &str, q: &str| {
        reqwest::blocking::Client::new()
            .post(format!("{endpoint}/v1/sql?db={db}"))
            .form(&[("sql", q)])
            .send()
            .unwrap()
            .text()
            .unwrap()
    };
    let dbs = sql("public", "SHOW DATABASES");
    assert!(dbs.contains("\"benchmark\""), "{dbs}");
    assert!(!dbs.contains("schema_probe"), "{dbs}");
    // Reuse would load into a table it did not make: refused, the table kept.
    load(&["--database-mode", "reuse"])
        .code(1)
        .says("table cpu exists in database benchmark")
        .says("--database-mode reset");
    let count = sql("benchmark", "SELECT count(*) FROM cpu");
    assert!(count.contains(&format!("[[{ROWS}]]")), "{count}");
    let r = load(&["--database-mode", "reset", "--confirm-reset", "benchmark"]);
    r.ok();
    let s = summary(&run_dir(&r));
    assert_eq!(s["partitions"]["table"]["database_existed"], true);
    assert_eq!(s["partitions"]["regions"]["rows"], ROWS);
    bg.interrupt().code(130);
}
