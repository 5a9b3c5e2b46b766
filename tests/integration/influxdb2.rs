//! InfluxDB 2, the fourth product (issue 23, "InfluxDB v2 proves it"), against a REAL
//! `influxd`: CI builds 2.7.12 from the Go module proxy and names it in
//! `TSBSCTL_TEST_INFLUXD`. The test packages that binary as InfluxData's release archive on the
//! mirror, so `influxdb2 install` downloads and verifies it; `prepare` sets the workspace up
//! with the real server; `bench influxdb2 all` loads with the stand-in `tsbs_load_influx2`
//! (real line protocol, gzip, the token) and queries with the stand-in
//! `tsbs_run_queries_influx --is-v2` (real InfluxQL) against it. Without the binary the
//! real-server tests print SKIP and why.
//!
//! The other tests need no server: the versions it accepts, the pinned checksum of the
//! report's 2.7.7, bad input (exit 2, nothing changed).

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use serde_json::{json, Value};

use crate::util::*;
use crate::world::*;

const V: &str = "2.7.12";
/// Where a development copy of the CI-built binary may be (the CI sets the variable).
const DEV_COPY: &str = "/work/influxd2-bin/influxd";

/// The real `influxd`, or why there is none.
fn real_influxd() -> Result<PathBuf, String> {
    if let Ok(p) = std::env::var("TSBSCTL_TEST_INFLUXD") {
        let p = PathBuf::from(p);
        return if p.is_file() {
            Ok(p)
        } else {
            Err(format!(
                "TSBSCTL_TEST_INFLUXD={} is not a file",
                p.display()
            ))
        };
    }
    let dev = PathBuf::from(DEV_COPY);
    if dev.is_file() {
        return Ok(dev);
    }
    Err(format!(
        "no real influxd: TSBSCTL_TEST_INFLUXD is unset and {DEV_COPY} does not exist (.ci/run builds it)"
    ))
}

/// Every process's argv that holds `needle`, while `stop` is false (the children of a bench).
fn watch_argv(needle: String, stop: Arc<AtomicBool>) -> std::thread::JoinHandle<Vec<String>> {
    std::thread::spawn(move || {
        let mut seen = Vec::new();
        let mut scans = 0u64;
        while !stop.load(Ordering::SeqCst) && scans < 100_000 {
            scans += 1;
            for e in std::fs::read_dir("/proc").into_iter().flatten().flatten() {
                if let Ok(b) = std::fs::read(e.path().join("cmdline")) {
                    let s = String::from_utf8_lossy(&b).replace('\0', " ");
                    if s.contains(&needle) {
                        seen.push(s);
                    }
                }
            }
            std::thread::sleep(std::time::Duration::from_millis(20));
        }
        seen
    })
}

/// Files under `dir` holding `secret`, but the workspace's own token file and the server's
/// own metadata store (influxd 2.7 keeps its tokens in `influxd.bolt` in the clear: the
/// server's storage, not a copy tsbsctl made).
fn files_with(dir: &Path, secret: &str) -> Vec<PathBuf> {
    all_files(dir)
        .into_iter()
        .filter(|f| !f.ends_with("secrets/operator-token") && !f.ends_with("data/influxd.bolt"))
        .filter(|f| {
            std::fs::read(f)
                .map(|b| String::from_utf8_lossy(&b).contains(secret))
                .unwrap_or(false)
        })
        .collect()
}

fn bench_args<'a>(extra: &[&'a str]) -> Vec<&'a str> {
    let mut a = vec!["bench", "influxdb2"];
    a.extend_from_slice(extra);
    a.extend(tiny());
    for t in TYPES {
        a.extend(["--query-type", t]);
    }
    a.extend(["--queries", "3", "--stop-timeout", "30", "--json"]);
    a
}

#[test]
fn a_real_influxd_installs_prepares_and_answers_bench_all() {
    let influxd = match real_influxd() {
        Ok(p) => p,
        Err(why) => {
            return skip(
                "influxdb2::a_real_influxd_installs_prepares_and_answers_bench_all",
                &why,
            )
        }
    };
    let w = world();
    let binary = std::fs::read(&influxd).unwrap();
    testbed::releases::influxdb2::publish(&w.gt.mirror, V, &binary);

    // Install: the archive under v2.7.12/, checked against the aggregate checksum file.
    let r = w.run(&["influxdb2", "install", "--version", V, "--json"]);
    r.ok();
    let m = &r.json()["data"]["manifest"];
    assert_eq!(m["product"], "influxdb2", "{}", r.describe());
    assert_eq!(m["version"], V);
    assert_eq!(m["binary"], "influxd");
    let asked: Vec<String> = w.gt.mirror.requests().iter().map(|q| q.target()).collect();
    assert!(
        asked
            .iter()
            .any(|p| p.ends_with(&format!("/influxdb/releases/v{V}/influxdb.{V}.sha256"))),
        "{asked:?}"
    );

    // Prepare: the real server set up once, with tsbsctl's own token.
    let port = free_port_block(1).to_string();
    let r = w.run(&[
        "influxdb2",
        "prepare",
        "--database-id",
        "i2",
        "--version",
        V,
        "--http-port",
        &port,
        "--json",
    ]);
    r.ok();
    let ws = r.json()["data"]["manifest"].clone();
    assert_eq!(ws["org"], "tsbs", "{}", r.describe());
    let ws_dir = w.gt.env.root.join("influxdb2/databases/i2");
    let token_file = ws_dir.join("secrets/operator-token");
    use std::os::unix::fs::PermissionsExt;
    let mode = std::fs::metadata(&token_file).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode, 0o600);
    let token = std::fs::read_to_string(&token_file)
        .unwrap()
        .trim()
        .to_string();
    assert_eq!(token.len(), 64);
    w.run(&["influxdb2", "list"]).ok().says("i2");
    w.run(&["influxdb2", "verify", "--database-id", "i2"]).ok();

    // bench all, with every process's argv watched for the token.
    let stop = Arc::new(AtomicBool::new(false));
    let watcher = watch_argv(token.clone(), stop.clone());
    let r = w.run(&bench_args(&["all", "--database-id", "i2"]));
    stop.store(true, Ordering::SeqCst);
    let argv_hits = watcher.join().unwrap();
    r.ok();
    assert!(
        argv_hits.is_empty(),
        "the token was on a command line: {argv_hits:?}"
    );
    let run = run_dir(&r);
    let s = summary(&run);
    assert_eq!(s["status"], "completed", "{s}");
    assert_eq!(s["label"], format!("InfluxDB 2 {V}"));
    // The row count the real server gives after the load.
    assert_eq!(s["row_count"]["expected"], ROWS, "{}", s["row_count"]);
    assert_eq!(s["row_count"]["actual"], ROWS, "{}", s["row_count"]);
    assert_eq!(s["row_count"]["ok"], true);
    assert_eq!(s["ingestion"]["rows"], ROWS);
    // The smoke profile's 2 workers x 3,000 rows.
    assert_eq!(s["workload"]["load_workers"], 2);
    assert_eq!(s["workload"]["batch_size"], 3000);
    for q in s["queries"].as_array().unwrap() {
        assert_eq!(
            (&q["status"], &q["queries"]),
            (&json!("completed"), &json!(3)),
            "{q}"
        );
    }
    // Footprint: the real engine's TSM/WAL/index split.
    let st = &s["storage"];
    assert_eq!(st["layout"], "influxdb2", "{st}");
    assert!(st["total_bytes"].as_u64().unwrap() > 0, "{st}");
    assert!(
        st["wal_bytes"].as_u64().unwrap() + st["data_bytes"].as_u64().unwrap() > 0,
        "{st}"
    );
    // influxd 2.7 closes its engine only on SIGINT (SIGTERM ends it at once): every stop of
    // the run was clean and logged influxd's own shutdown.
    for a in s["server_diagnostics"]["attempts"].as_array().unwrap() {
        assert_eq!(a["status"], "completed", "{a}");
        assert_eq!(a["outcome"]["forced"], false, "{a}");
        // SIGINT: influxd closes its engine and exits 0 (SIGTERM would leave signal 15).
        assert_eq!(a["outcome"]["code"], 0, "{a}");
    }
    let md = std::fs::read_to_string(run.join("summary.md")).unwrap();
    assert!(
        md.contains("| WAL (engine/wal) | TSM files | Index (TSI, series) | Metadata (bolt, SQLite) | Other | Total | Files |"),
        "{md}"
    );
    assert!(!md.contains("Parquet"), "{md}");
    // The loader got gzip, the org and the reuse flags; the token only in its config.json.
    let text = std::fs::read_to_string(run.join("events.jsonl")).unwrap();
    assert!(text.contains("--gzip=true"), "{text}");
    assert!(text.contains("--org-id="), "{text}");
    assert!(text.contains("--do-create-db=false"), "{text}");
    assert!(text.contains("--is-v2=true"), "{text}");
    assert!(
        files_with(&w.gt.env.root, &token).is_empty(),
        "{:?}",
        files_with(&w.gt.env.root, &token)
    );
    assert!(!r.stdout.contains(&token) && !r.stderr.contains(&token));

    // A second all: the workspace holds the dataset, the load is skipped, queries run again.
    let r2 = w.run(&bench_args(&["query", "--database-id", "i2"]));
    r2.ok();

    // The report: beside a GreptimeDB run.
    let g = w.bench_ok("all", &[]);
    let p = |d: &Path| d.to_string_lossy().into_owned();
    let r = w.run(&["runs", "report", &p(&run), &p(&g), "--json"]);
    r.ok();
    let dir = PathBuf::from(r.json()["data"]["report_dir"].as_str().unwrap());
    let rmd = std::fs::read_to_string(dir.join("summary.md")).unwrap();
    assert!(rmd.contains(&format!("InfluxDB 2 {V}")), "{rmd}");

    // External: the same server, served by `influxdb2 serve`, the token from $INFLUXDB2_TOKEN.
    let mut bg = Bg::spawn(
        &w.gt.env,
        &[
            "influxdb2",
            "serve",
            "--database-id",
            "i2",
            "--stop-timeout",
            "30",
        ],
    );
    let url = format!("http://127.0.0.1:{port}");
    // influxd opens its shards before it answers: on a busy 2-core host that takes a while.
    let serving = wait_until(std::time::Duration::from_secs(300), || {
        reqwest::blocking::get(format!("{url}/health"))
            .map(|r| r.status().is_success())
            .unwrap_or(false)
    });
    if !serving {
        bg.interrupt();
        panic!(
            "influxdb2 serve did not answer within 300 s:\n{}",
            bg.stderr()
        );
    }
    let ext = |extra: &[&str], token: Option<&str>| {
        let mut args = vec![
            "bench",
            "influxdb2",
            "load",
            "--url",
            &url,
            "--database",
            "ext1",
        ];
        args.extend_from_slice(extra);
        args.extend(tiny());
        args.push("--json");
        let mut c = w.gt.env.cmd(&args);
        c.env_remove("INFLUXDB2_TOKEN");
        // The token in the variable `--token-env` names (I2_TOK), else in INFLUXDB2_TOKEN.
        if let Some(t) = token {
            let var = if extra.contains(&"--token-env") {
                "I2_TOK"
            } else {
                "INFLUXDB2_TOKEN"
            };
            c.env(var, t);
        }
        run_command(c, &args, std::time::Duration::from_secs(600))
    };
    let runs_before = all_files(&w.gt.env.root.join("influxdb2/runs")).len();
    // A refused token: exit 2 before anything is written.
    ext(&["--database-mode", "create"], Some("not-the-token")).code(2);
    // No token at all: exit 2.
    ext(&["--database-mode", "create"], None).code(2);
    assert_eq!(
        all_files(&w.gt.env.root.join("influxdb2/runs")).len(),
        runs_before,
        "a refused external run wrote nothing"
    );
    let r = ext(
        &["--database-mode", "create", "--token-env", "I2_TOK"],
        Some(&token),
    );
    r.ok();
    // Issue 23 §3: the run's events.jsonl records its status lines (the external server's
    // run, the loader's start), and the token --token-env names is in none of them.
    let events = std::fs::read_to_string(run_dir(&r).join("events.jsonl")).unwrap();
    assert!(events.contains(r#""event":"loading""#), "{events}");
    assert!(!events.contains(token.as_str()), "{events}");
    let m = read_json(&run_dir(&r).join("manifest.json"));
    assert_eq!(m["flags"]["auth_token_env"], "I2_TOK", "{}", m["flags"]);
    // Recorded as a field of the shared flags: no other product's keys come with it.
    for k in ["edition", "no_sync", "accept_partial", "admin_token_env"] {
        assert!(m["flags"].get(k).is_none(), "{k}: {}", m["flags"]);
    }
    let s = summary(&run_dir(&r));
    assert_eq!(s["row_count"]["actual"], ROWS, "{}", s["row_count"]);
    assert_eq!(s["target"]["mode"], "external", "{}", s["target"]);
    // Issue 24: the real influxd's /metrics has only Go runtime series, no process
    // collector: the external timeline's memory and CPU are unknown, and say so.
    assert_eq!(
        s["resources"]["source"], "unknown (/metrics has no process series)",
        "{}",
        s["resources"]
    );
    // create again: the bucket exists; reset replaces it (the count is the dataset's again).
    let again = ext(&["--database-mode", "create"], Some(&token));
    assert_ne!(again.code, 0, "{}", again.describe());
    let r = ext(
        &["--database-mode", "reset", "--confirm-reset", "ext1"],
        Some(&token),
    );
    r.ok();
    assert_eq!(summary(&run_dir(&r))["row_count"]["actual"], ROWS);
    bg.interrupt();
    assert!(files_with(&w.gt.env.root, &token).is_empty());
}

#[test]
fn the_default_is_the_reports_2_7_7_and_its_pinned_checksum_is_enforced() {
    let w = Gt::new();
    // A 2.7.7 whose published checksum is its own, but not what InfluxData's notes say.
    testbed::releases::influxdb2::publish(
        &w.mirror,
        "2.7.7",
        b"#!/bin/sh\necho 'InfluxDB v2.7.7 (git: e9e0f744fa) build_date: 2024-07-11T18:45:02Z'\n",
    );
    let r = w.run(&["influxdb2", "install", "--json"]);
    r.code(4).says("pins");
    let asked: Vec<String> = w.mirror.requests().iter().map(|q| q.target()).collect();
    // The report's version, from the flat 2.7.7 path, and no archive fetched.
    assert!(
        asked
            .iter()
            .any(|p| p.ends_with("/influxdb/releases/influxdb.2.7.7.sha256")),
        "{asked:?}"
    );
    assert!(!asked.iter().any(|p| p.ends_with(".tar.gz")), "{asked:?}");
    assert!(!w.env.root.join("influxdb2/installations/2.7.7").exists());
}

#[test]
fn bad_input_exits_2_and_changes_nothing() {
    let w = Gt::new();
    let before = all_files(&w.env.root);
    for (args, says) in [
        (
            vec!["influxdb2", "install", "--version", "3.0.0"],
            "InfluxDB 3",
        ),
        (vec!["influxdb2", "install", "--version", "2.8.0"], "2.7.x"),
        (vec!["influxdb2", "install", "--version", "2.6.1"], "2.7.x"),
        (
            vec!["influxdb2", "install", "--version", "v2.7.7"],
            "exact version",
        ),
        (
            vec!["influxdb2", "prepare", "--database-id", "../x"],
            "database-id",
        ),
        (
            vec![
                "bench",
                "influxdb2",
                "load",
                "--url",
                "ftp://x",
                "--database-mode",
                "create",
            ],
            "URL",
        ),
        (
            vec![
                "bench",
                "influxdb2",
                "load",
                "--url",
                "http://127.0.0.1:1",
                "--database-mode",
                "reset",
            ],
            "confirm-reset",
        ),
    ] {
        let r = w.run(&args);
        r.code(2).says(says);
    }
    assert_eq!(all_files(&w.env.root), before);
}

/// The release archive is checked as the real one is laid out; the stand-in's tools and
/// query formats know InfluxDB 2 (no real server needed).
#[test]
fn the_influx_query_format_is_influxql_over_query() {
    let d = tempfile::tempdir().unwrap();
    let out = d.path().join("q.dat");
    let r = run_command(
        {
            let mut c = std::process::Command::new(testbed_bin());
            c.current_dir(d.path());
            c.args([
                "emulate",
                "tsbs_generate_queries",
                "--use-case=devops",
                "--seed=1",
                "--scale=4",
                "--timestamp-start=2023-06-11T00:00:00Z",
                "--timestamp-end=2023-06-12T00:00:01Z",
                "--queries=2",
                "--query-type=single-groupby-1-1-1",
                "--format=influx",
                &format!("--file={}", out.display()),
            ]);
            c
        },
        &["tsbs_generate_queries"],
        std::time::Duration::from_secs(60),
    );
    r.ok();
    let f = std::fs::File::open(&out).unwrap();
    let qs = testbed::queryfile::read(std::io::BufReader::new(f)).unwrap();
    assert_eq!(qs.len(), 2);
    assert!(
        qs[0]
            .path
            .starts_with("/query?q=SELECT+max%28usage_user%29"),
        "{}",
        qs[0].path
    );
    assert!(
        qs[0].raw_query.contains("group by time(1m)"),
        "{}",
        qs[0].raw_query
    );
}

/// Issue 23, "How we will know": outside its own files, `src/` names InfluxDB 2 only in the
/// registry (its CLI is the generic one). Its generic seams (`Loading::prepare_database`,
/// `Distribution::version_args`, the generic bench's `--token-env`) name no product.
#[test]
fn outside_its_module_src_names_influxdb2_only_in_the_registry() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut lines = Vec::new();
    for f in all_files(&root.join("src")) {
        let rel = f.strip_prefix(root).unwrap().display().to_string();
        if rel.starts_with("src/product/influxdb2/") {
            continue;
        }
        let Ok(text) = std::fs::read_to_string(&f) else {
            continue;
        };
        for l in text.lines() {
            let low = l.to_ascii_lowercase();
            if low.contains("influxdb2") || low.contains("influx2") {
                lines.push(format!("{rel}: {}", l.trim()));
            }
        }
    }
    lines.sort();
    assert_eq!(
        lines,
        [
            "src/product/mod.rs: influxdb2::ENTRY,",
            "src/product/mod.rs: pub mod influxdb2;",
        ]
    );
}

/// The stand-in loader hurts as the real one does: its database creator says every bucket
/// exists, so create mode's `--do-abort-on-exist=true` panics (exit 2) before any write, and a
/// token on its command line is refused.
#[test]
fn the_stand_in_influx2_loader_panics_in_create_mode_and_refuses_an_argv_token() {
    let d = tempfile::tempdir().unwrap();
    let run = |args: &[&str]| {
        let mut c = std::process::Command::new(testbed_bin());
        c.current_dir(d.path());
        c.args(["emulate", "tsbs_load_influx2"]).args(args);
        run_command(c, args, std::time::Duration::from_secs(60))
    };
    let r = run(&[
        "--urls=http://127.0.0.1:1",
        "--file=/dev/null",
        "--db-name=b1",
        "--do-create-db=true",
        "--do-abort-on-exist=true",
    ]);
    r.code(2).says("database \"b1\" exists: aborting");
    run(&[
        "--urls=http://127.0.0.1:1",
        "--auth-token=x",
        "--file=/dev/null",
    ])
    .code(2)
    .says("command line");
    // Reuse: nothing to create, an empty file loads nothing and succeeds.
    run(&[
        "--urls=http://127.0.0.1:1",
        "--file=/dev/null",
        "--do-create-db=false",
        "--workers=1",
    ])
    .ok()
    .says("loaded 0 metrics");
}

/// Issue 22: the iot use case on the real influxd (the judge of the line protocol and of the
/// InfluxQL): `readings` and `diagnostics` loaded, each counted by the server as the file's
/// rows less the series-and-time repeats a line-protocol store keeps once, and iot query types
/// answered by `/query`.
#[test]
fn iot_loads_both_tables_and_runs_its_queries_on_a_real_influxd() {
    let name = "influxdb2::iot_loads_both_tables_and_runs_its_queries_on_a_real_influxd";
    let types = ["last-loc", "low-fuel", "stationary-trucks"];
    let Some(s) = use_case_on_a_real_influxd(name, "iot", "tiny-iot", &types) else {
        return;
    };
    let rc = &s["row_count"];
    let names: Vec<&str> = rc["tables"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["table"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["readings", "diagnostics"], "{rc}");
    // IoT clears fields at random: no field is in every row, so the count is Flux's.
    let how = serde_json::to_string(rc).unwrap();
    assert!(how.contains("pivot"), "{rc}");
}

/// Issue 22: the devops use case on the real influxd: nine measurements loaded, each counted by
/// the server as the file's rows (less any series-and-time repeats), and devops query types
/// answered by `/query`.
#[test]
fn devops_loads_nine_tables_and_runs_its_queries_on_a_real_influxd() {
    let name = "influxdb2::devops_loads_nine_tables_and_runs_its_queries_on_a_real_influxd";
    let types = ["high-cpu-1", "lastpoint", "single-groupby-1-1-1"];
    let Some(s) = use_case_on_a_real_influxd(name, "devops", "tiny-devops", &types) else {
        return;
    };
    let rc = &s["row_count"];
    assert_eq!(rc["tables"].as_array().unwrap().len(), 9, "{rc}");
}

/// A world with the real influxd installed from the mirror and workspace `id` prepared on
/// it; its HTTP port. `None`: no real influxd (SKIP said for `test`).
fn real_influxd_workspace(test: &str, id: &str) -> Option<(World, String)> {
    let influxd = match real_influxd() {
        Ok(p) => p,
        Err(why) => {
            skip(test, &why);
            return None;
        }
    };
    let w = world();
    let binary = std::fs::read(&influxd).unwrap();
    testbed::releases::influxdb2::publish(&w.gt.mirror, V, &binary);
    w.run(&["influxdb2", "install", "--version", V, "--json"])
        .ok();
    let port = free_port_block(1).to_string();
    w.run(&[
        "influxdb2",
        "prepare",
        "--database-id",
        id,
        "--version",
        V,
        "--http-port",
        &port,
        "--json",
    ])
    .ok();
    Some((w, port))
}

/// `bench influxdb2 all` of `use_case` (workspace and dataset `dataset`) on the real influxd
/// (`None`: SKIP, said by `test`): completed, every table counted by the server as the file's
/// rows less the series-and-time repeats a line-protocol store keeps once, and `types`
/// answered. The run's summary.
fn use_case_on_a_real_influxd(
    test: &str,
    use_case: &str,
    dataset: &str,
    types: &[&str],
) -> Option<Value> {
    let (w, _) = real_influxd_workspace(test, use_case)?;
    let mut args = vec![
        "bench",
        "influxdb2",
        "all",
        "--database-id",
        use_case,
        "--profile",
        "smoke",
        "--scale",
        "2",
        "--log-interval",
        "60s",
        "--use-case",
        use_case,
        "--dataset-id",
        dataset,
        "--queries",
        "2",
        "--stop-timeout",
        "30",
        "--json",
    ];
    for t in types {
        args.extend(["--query-type", t]);
    }
    let r = w.run(&args);
    r.ok();
    let s = summary(&run_dir(&r));
    assert_eq!(s["status"], "completed", "{s}");
    let m = read_json(
        &w.gt
            .env
            .root
            .join(format!("datasets/{dataset}/formats/influx/manifest.json")),
    );
    let rc = &s["row_count"];
    assert_eq!(rc["ok"], true, "{rc}");
    for t in rc["tables"].as_array().unwrap() {
        let f = &m["tables"][t["table"].as_str().unwrap()];
        let want = f["rows"].as_u64().unwrap() - f["duplicates"].as_u64().unwrap_or(0);
        assert_eq!(t["actual"], want, "{t} {f}");
    }
    let ran: Vec<&str> = s["queries"]
        .as_array()
        .unwrap()
        .iter()
        .inspect(|q| assert_eq!(q["status"], "completed", "{q}"))
        .map(|q| q["query_type"].as_str().unwrap())
        .collect();
    assert_eq!(ran, types);
    Some(s)
}

/// `runs resume` on the real influxd (issue 22: resume is checked on real servers, not only
/// on stand-ins). A run killed mid-load, once the real server holds part of the rows, is
/// resumed in place: the half-written bucket reset (only when confirmed), loaded again and
/// counted by the server at exactly the dataset's rows, then queried. A run killed in its
/// query phase goes on in place with the types not done, the done ones not run again.
#[test]
fn runs_resume_on_a_real_influxd_reloads_a_cut_load_and_finishes_cut_queries() {
    let test =
        "influxdb2::runs_resume_on_a_real_influxd_reloads_a_cut_load_and_finishes_cut_queries";
    let Some((w, port)) = real_influxd_workspace(test, "rs") else {
        return;
    };
    let env = &w.gt.env;
    let token = std::fs::read_to_string(
        env.root
            .join("influxdb2/databases/rs/secrets/operator-token"),
    )
    .unwrap()
    .trim()
    .to_string();
    let runs = env.root.join("influxdb2/runs");
    // The rows the real server holds now (its own v1 count; nothing while it is down).
    let held = || -> u64 {
        let v: Value = match reqwest::blocking::Client::new()
            .get(format!("http://127.0.0.1:{port}/query"))
            .query(&[
                ("db", "benchmark"),
                ("q", "SELECT count(usage_user) FROM cpu"),
            ])
            .header("Authorization", format!("Token {token}"))
            .timeout(std::time::Duration::from_secs(5))
            .send()
            .and_then(|r| r.json())
        {
            Ok(v) => v,
            Err(_) => return 0,
        };
        v["results"][0]["series"][0]["values"][0][1]
            .as_u64()
            .unwrap_or(0)
    };

    // Killed once the server holds some of the rows (batches of 100, 500 ms apart).
    w.tool_knobs("tsbs_load_influx2", json!({"batch_delay_ms": 500}));
    let mut args = bench_args(&["all", "--database-id", "rs", "--batch-size", "100"]);
    args.extend(["--run-id", "cut-load"]);
    let mut bg = Bg::spawn(env, &args);
    let mut partial = 0;
    bg.wait_for_load(|| {
        partial = held();
        partial > 0
    });
    bg.signal(libc::SIGKILL);
    bg.wait();
    w.tool_knobs("tsbs_load_influx2", json!({}));
    assert!(partial < ROWS, "{partial}");
    crate::resume::resume_cut_load(env, "cut-load", &runs.join("cut-load"));

    // Killed in its query phase, once its second type has started (slow queries).
    w.tool_knobs("tsbs_run_queries_influx", json!({"query_delay_ms": 800}));
    let mut args = vec!["bench", "influxdb2", "query", "--database-id", "rs"];
    args.extend(tiny());
    for t in TYPES {
        args.extend(["--query-type", t]);
    }
    args.extend([
        "--queries",
        "3",
        "--stop-timeout",
        "30",
        "--run-id",
        "cut-queries",
    ]);
    let bg = Bg::spawn(env, &args);
    crate::resume::kill_in_queries_and_resume(env, bg, &runs.join("cut-queries"), || {
        w.tool_knobs("tsbs_run_queries_influx", json!({}))
    });
    // The resumed server leaves nothing behind, and the token is in no file but its own.
    assert!(files_with(&env.root, &token).is_empty());
}
