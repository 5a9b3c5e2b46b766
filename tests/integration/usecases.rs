//! Issue 22: every TSBS use case the products' TSBS targets support. A tiny devops and a tiny
//! iot dataset go through `bench greptimedb all` (generation in the real layout, the load,
//! the row count of every table the use case writes, the use case's own query types, which for
//! iot are the fork's InfluxQL text the server cannot plan); a
//! product whose query generator lacks a use case's queries is refused before anything is
//! written, and so is a use case tsbsctl does not take.

use std::path::Path;

use serde_json::{json, Value};

use crate::util::*;
use crate::world::*;

/// 2 devices × one day at 60 s.
const PER_TABLE: u64 = 2 * 1440;

fn args<'a>(use_case: &'a str, id: &'a str, types: &[&'a str]) -> Vec<&'a str> {
    let mut a = vec![
        "bench",
        "greptimedb",
        "all",
        "--database-id",
        "g1",
        "--stop-timeout",
        "5",
        "--profile",
        "smoke",
        "--scale",
        "2",
        "--log-interval",
        "60s",
        "--use-case",
        use_case,
        "--dataset-id",
        id,
        "--queries",
        "3",
        "--json",
    ];
    for t in types {
        a.extend(["--query-type", t]);
    }
    a
}

fn format_manifest(w: &World, id: &str) -> Value {
    read_json(
        &w.gt
            .env
            .root
            .join(format!("datasets/{id}/formats/influx/manifest.json")),
    )
}

fn query_types(s: &Value) -> Vec<String> {
    s["queries"]
        .as_array()
        .unwrap()
        .iter()
        .inspect(|q| assert_eq!(q["status"], "completed", "{q}"))
        .map(|q| q["query_type"].as_str().unwrap().to_string())
        .collect()
}

#[test]
fn devops_loads_nine_tables_and_runs_its_queries() {
    let w = world();
    let r = w.run(&args(
        "devops",
        "tiny-devops",
        &["high-cpu-1", "lastpoint", "single-groupby-1-1-1"],
    ));
    r.ok();
    let s = summary(&run_dir(&r));
    assert_eq!(s["status"], "completed", "{s}");
    // The generator wrote nine tables of scale x intervals rows each, as the real one.
    let m = format_manifest(&w, "tiny-devops");
    assert_eq!(m["rows"], 9 * PER_TABLE, "{m}");
    let tables = m["tables"].as_object().unwrap();
    let names: Vec<&str> = tables.keys().map(String::as_str).collect();
    assert_eq!(
        names,
        [
            "cpu",
            "disk",
            "diskio",
            "kernel",
            "mem",
            "net",
            "nginx",
            "postgresl",
            "redis"
        ]
    );
    for (t, v) in tables {
        assert_eq!(v["rows"], PER_TABLE, "{t}: {v}");
    }
    // 101 metrics per host and interval, as the loader counts them.
    assert_eq!(m["metrics"], PER_TABLE * 101);
    assert_eq!(tables["redis"]["metrics"], PER_TABLE * 31);
    assert_eq!(s["ingestion"]["rows"], 9 * PER_TABLE);
    assert_eq!(s["ingestion"]["metrics"], PER_TABLE * 101);
    // Every table was counted on the server.
    let rc = &s["row_count"];
    assert_eq!(rc["ok"], true, "{rc}");
    assert_eq!(rc["expected"], 9 * PER_TABLE);
    assert_eq!(rc["actual"], 9 * PER_TABLE);
    let counted = rc["tables"].as_array().unwrap();
    assert_eq!(counted.len(), 9, "{rc}");
    assert_eq!(
        counted[0],
        json!({"table": "cpu", "expected": PER_TABLE, "actual": PER_TABLE, "ok": true})
    );
    assert_eq!(
        query_types(&s),
        ["high-cpu-1", "lastpoint", "single-groupby-1-1-1"]
    );
    let md = std::fs::read_to_string(run_dir(&r).join("summary.md")).unwrap();
    assert!(md.contains("| postgresl | 2,880 | 2,880 | ok |"), "{md}");
    // The workspace's binding records the tables; the check before a later query run counts
    // each of them.
    let b = &w.ws()["binding"];
    assert_eq!(b["tables"]["redis"], PER_TABLE, "{b}");
    let r = w.run(&[
        "bench",
        "greptimedb",
        "query",
        "--database-id",
        "g1",
        "--stop-timeout",
        "5",
        "--query-type",
        "lastpoint",
        "--queries",
        "2",
        "--flush-before-queries",
        "--json",
    ]);
    r.ok();
    let dir = run_dir(&r);
    let s = summary(&dir);
    let check = step_data(&dir, "row-check");
    assert_eq!(check["tables"].as_array().unwrap().len(), 9, "{check}");
    assert_eq!(s["status"], "completed");
    // Seen on a real GreptimeDB with iot: the summary said "FROM readings, diagnostics found
    // the - rows"; each table is named with its count.
    let md = std::fs::read_to_string(dir.join("summary.md")).unwrap();
    assert!(
        md.contains(&format!(
            "one `SELECT count(*)` per table found the rows the workspace is bound to: `cpu` {}",
            fmt_thousands(PER_TABLE)
        )),
        "{md}"
    );
    assert!(!md.contains("found the - rows"), "{md}");
    // The flush and the data location cover every table of the dataset, not `cpu` alone.
    let events = std::fs::read_to_string(dir.join("events.jsonl")).unwrap();
    let flushed: Vec<String> = events
        .lines()
        .map(|l| serde_json::from_str::<Value>(l).unwrap())
        .filter(|e| e["step"] == "flush" && e["status"] == "running")
        .map(|e| e["data"]["sql"].as_str().unwrap_or_default().to_string())
        .collect();
    assert_eq!(flushed.len(), 9, "{events}");
    assert!(
        flushed.contains(&"ADMIN FLUSH_TABLE('redis')".to_string()),
        "{flushed:?}"
    );
    let loc = step_data(&dir, "data-location");
    assert!(loc["table"].as_str().unwrap().starts_with("cpu, "), "{loc}");
    assert_eq!(loc["tables"].as_array().unwrap().len(), 9, "{loc}");
    assert_eq!(loc["region_rows"], 9 * PER_TABLE, "{loc}");
}

fn fmt_thousands(n: u64) -> String {
    let d = n.to_string();
    let mut out = String::new();
    for (i, c) in d.chars().enumerate() {
        if i > 0 && (d.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    out
}

#[test]
fn iot_counts_what_the_file_holds_and_sends_the_forks_own_query_text() {
    let w = world();
    let types = [
        "avg-daily-driving-duration",
        "avg-vs-projected-fuel-consumption",
        "last-loc",
        "long-daily-sessions",
    ];
    let r = w.run(&args("iot", "tiny-iot", &types));
    // The fork's GreptimeDB iot queries are its InfluxQL text (`databases/greptime/iot.go`
    // copies `databases/influx/iot.go`): `"time"`, `GROUP BY time(10m)`, unnamed subqueries
    // on `/v1/sql`. A real v1.0.2 refused 12 of the 13 types and ran
    // `avg-vs-projected-fuel-consumption` (plain `mean()` per fleet); the stand-in must refuse
    // the same ones with the real codes and words, the parser's and the planner's. The load
    // and the counts stand.
    r.code(1)
        .says("Expected: joined table, found: as at Line: 2, Column: 33")
        .says("Expected: identifier, found: * at Line: 2, Column: 21")
        // last-loc parses; the planner refuses `ORDER BY "time"` with the real code and the
        // valid fields in the real order (the SELECT's items, then the table's columns).
        .says(r#"code=400, body={"code":3000,"error":"Failed to plan SQL: No field named time. Valid fields are readings.latitude, readings.longitude, readings.name, readings.fleet"#);
    let dir = run_dir(&r);
    let s = summary(&dir);
    assert_eq!(s["status"], "failed", "{s}");
    for q in s["queries"].as_array().unwrap() {
        let ran = q["query_type"] == "avg-vs-projected-fuel-consumption";
        assert_eq!(q["status"], if ran { "completed" } else { "failed" }, "{q}");
    }
    // Dropped batches and entries: fewer rows than 2 tables x scale x intervals, counted
    // from the file per table.
    let m = format_manifest(&w, "tiny-iot");
    let rows = m["rows"].as_u64().unwrap();
    assert!(rows < 2 * PER_TABLE && rows > PER_TABLE, "{m}");
    let t = &m["tables"];
    let (r1, r2) = (
        t["readings"]["rows"].as_u64().unwrap(),
        t["diagnostics"]["rows"].as_u64().unwrap(),
    );
    assert_eq!(r1 + r2, rows, "{m}");
    let dups = |n: &str| t[n]["duplicates"].as_u64().unwrap_or(0);
    let rc = &s["row_count"];
    assert_eq!(rc["ok"], true, "{rc}");
    assert_eq!(
        rc["tables"],
        json!([
            {"table": "readings", "expected": r1 - dups("readings"), "actual": r1 - dups("readings"), "ok": true},
            {"table": "diagnostics", "expected": r2 - dups("diagnostics"), "actual": r2 - dups("diagnostics"), "ok": true},
        ])
    );
    assert_eq!(s["ingestion"]["rows"], rows);
    assert_eq!(s["ingestion"]["metrics"], m["metrics"]);
    // The iot query types, generated with --use-case=iot.
    let ran: Vec<&str> = s["queries"]
        .as_array()
        .unwrap()
        .iter()
        .map(|q| q["query_type"].as_str().unwrap())
        .collect();
    assert_eq!(ran, types);
    let sets = w.gt.env.root.join("queries/tiny-iot/greptime");
    let set = std::fs::read_dir(&sets)
        .unwrap()
        .next()
        .unwrap()
        .unwrap()
        .path();
    let qm = read_json(&set.join("manifest.json"));
    assert_eq!(qm["spec"]["use_case"], "iot", "{qm}");
    // The timescaledb layout of the same dataset: the same rows per table (a header of the
    // tags schema, one line per table and a blank line; empty columns for cleared values).
    let r = w.run(&[
        "data",
        "generate",
        "--dataset-id",
        "tiny-iot",
        "--format",
        "timescaledb",
        "--json",
    ]);
    r.ok();
    let ts = read_json(
        &w.gt
            .env
            .root
            .join("datasets/tiny-iot/formats/timescaledb/manifest.json"),
    );
    assert_eq!(ts["rows"], rows, "{ts}");
    assert_eq!(ts["layout"]["header_lines"], 4, "{ts}");
    assert_eq!(ts["tables"]["readings"]["rows"], r1);
    // The timescaledb loader counts every value column, cleared or not: 7 per reading.
    assert_eq!(ts["tables"]["readings"]["metrics"], r1 * 7);
    // Only iot's types are offered for an iot dataset: a devops type is bad input.
    let r = w.run(&args("iot", "tiny-iot", &["lastpoint"]));
    r.code(2).says("unsupported query type: lastpoint");
    // The dataset id follows the use case, derived as the reference derives it.
    let r = w.run(&[
        "data",
        "prepare",
        "--profile",
        "smoke",
        "--use-case",
        "iot",
        "--json",
    ]);
    r.ok();
    assert!(
        r.json()["data"]["dataset_id"]
            .as_str()
            .unwrap()
            .starts_with("iot-s10-"),
        "{}",
        r.describe()
    );
}

#[test]
fn use_cases_a_product_or_tsbsctl_cannot_run_are_refused_before_anything_is_written() {
    let w = world();
    // A use case tsbsctl does not take.
    let before = tree(&w.gt.env.root);
    let r = w.run(&args("cpu-single", "x1", &["lastpoint"]));
    r.code(2).says("cpu-single");
    assert_eq!(tree(&w.gt.env.root), before);
    // InfluxDB 3's query generator has no iot queries: all and query are refused, exit 2,
    // naming the products that have them; nothing is written.
    publish_influx3(&w, "core");
    w.prepare_influx3("core1", "core");
    let before = tree(&w.gt.env.root);
    let r = w.run(&[
        "bench",
        "influxdb3",
        "all",
        "--database-id",
        "core1",
        "--profile",
        "smoke",
        "--scale",
        "2",
        "--log-interval",
        "60s",
        "--use-case",
        "iot",
        "--dataset-id",
        "tiny-iot",
        "--json",
    ]);
    r.code(2);
    let e = &r.json()["error"];
    let msg = e["message"].as_str().unwrap();
    assert!(
        msg.contains("InfluxDB 3 cannot run iot queries") && msg.contains("influx3"),
        "{msg}"
    );
    let hint = e["hint"].as_str().unwrap();
    assert!(
        hint.contains("bench influxdb3 load") && hint.contains("greptimedb"),
        "{hint}"
    );
    assert_eq!(tree(&w.gt.env.root), before);
}

/// The data of the last record of `step` in a run's events.
fn step_data(run: &Path, step: &str) -> Value {
    let events = std::fs::read_to_string(run.join("events.jsonl")).unwrap();
    events
        .lines()
        .rev()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .find(|e| e["step"] == step && !e["data"].is_null())
        .map(|e| e["data"].clone())
        .unwrap_or_else(|| panic!("no {step} in {events}"))
}

/// Every path under `root` with its size (what "nothing written" compares).
fn tree(root: &Path) -> Vec<(String, u64)> {
    let mut out = Vec::new();
    let mut stack = vec![root.to_path_buf()];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).into_iter().flatten().flatten() {
            let p = e.path();
            if p.is_dir() {
                stack.push(p.clone());
            }
            let len = e.metadata().map(|m| m.len()).unwrap_or(0);
            out.push((p.display().to_string(), if p.is_dir() { 0 } else { len }));
        }
    }
    out.sort();
    out
}

/// `bench timescaledb all` in postgresql mode with `extra` on the tiny `use_case` dataset.
fn pg_args<'a>(id: &'a str, use_case: &'a str, ds: &'a str, types: &[&'a str]) -> Vec<&'a str> {
    let mut a = vec![
        "bench",
        "timescaledb",
        "all",
        "--database-id",
        id,
        "--stop-timeout",
        "5",
        "--profile",
        "smoke",
        "--scale",
        "2",
        "--log-interval",
        "60s",
        "--use-case",
        use_case,
        "--dataset-id",
        ds,
        "--queries",
        "2",
        "--json",
    ];
    for t in types {
        a.extend(["--query-type", t]);
    }
    a
}

/// Issue 22 on a real PostgreSQL (the judge of the SQL): the loader stand-in creates one table
/// per measurement of the file's header, as `tsbs_load_timescaledb` does, and the query runner
/// sends the fork's SQL to the server. devops fills nine tables and runs its types; iot fills
/// `readings` and `diagnostics` (cleared tags are NULL, a nameless truck's rows get tags_id 0
/// as in the real loader) and runs the fork's `iot.go` SQL; the six iot types that call
/// `time_bucket` are refused in postgresql mode before anything runs.
#[test]
fn devops_and_iot_on_a_real_postgresql() {
    let Some(w) = crate::timescaledb::pg_world("usecases::devops_and_iot_on_a_real_postgresql")
    else {
        return;
    };
    let env = &w.gt.env;
    crate::timescaledb::prepare_pg(env, "pd");
    let types = ["high-cpu-1", "lastpoint", "single-groupby-1-1-1"];
    let r = env.run(&pg_args("pd", "devops", "tiny-devops", &types));
    r.ok();
    let s = summary(&run_dir(&r));
    assert_eq!(s["status"], "completed", "{s}");
    let rc = &s["row_count"];
    assert_eq!(rc["ok"], true, "{rc}");
    assert_eq!(rc["actual"], 9 * PER_TABLE, "{rc}");
    let counted = rc["tables"].as_array().unwrap();
    assert_eq!(counted.len(), 9, "{rc}");
    for t in counted {
        assert_eq!(t["actual"], PER_TABLE, "{t}");
    }
    // The loader's metrics: every value column of every table (101 per host and interval).
    assert_eq!(
        s["ingestion"]["metrics"],
        PER_TABLE * 101,
        "{}",
        s["ingestion"]
    );
    assert_eq!(query_types(&s), types);

    crate::timescaledb::prepare_pg(env, "pi");
    // time_bucket() exists only with the extension: refused, naming why, before any run.
    let runs = env.root.join("timescaledb/runs");
    let before = std::fs::read_dir(&runs).map(|d| d.count()).unwrap_or(0);
    let r = env.run(&pg_args(
        "pi",
        "iot",
        "tiny-iot",
        &["last-loc", "daily-activity"],
    ));
    r.code(2)
        .says("daily-activity")
        .says("time_bucket")
        .says("--query-type last-loc");
    assert_eq!(
        std::fs::read_dir(&runs).map(|d| d.count()).unwrap_or(0),
        before
    );
    let types = [
        "avg-load",
        "last-loc",
        "low-fuel",
        "single-last-loc",
        "stationary-trucks",
    ];
    let r = env.run(&pg_args("pi", "iot", "tiny-iot", &types));
    r.ok();
    let s = summary(&run_dir(&r));
    assert_eq!(s["status"], "completed", "{s}");
    let rc = &s["row_count"];
    assert_eq!(rc["ok"], true, "{rc}");
    let m = read_json(
        &env.root
            .join("datasets/tiny-iot/formats/timescaledb/manifest.json"),
    );
    // PostgreSQL keeps every row the file holds, repeats included.
    assert_eq!(rc["actual"], m["rows"], "{rc} {m}");
    let counted = rc["tables"].as_array().unwrap();
    let names: Vec<&str> = counted
        .iter()
        .map(|t| t["table"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["readings", "diagnostics"], "{rc}");
    for t in counted {
        assert_eq!(
            t["actual"],
            m["tables"][t["table"].as_str().unwrap()]["rows"],
            "{t}"
        );
    }
    assert_eq!(
        s["ingestion"]["metrics"], m["metrics"],
        "{}",
        s["ingestion"]
    );
    assert_eq!(query_types(&s), types);
}

/// Issue 22: devops on InfluxDB 3 (its stand-in keeps the real server's tables and moving
/// counts): nine tables loaded and each counted on the server, devops query types answered;
/// then an iot dataset loads with `bench influxdb3 load` (the fork only lacks iot queries),
/// both of its tables counted.
#[test]
fn influxdb3_loads_and_counts_devops_and_iot_tables() {
    let w = world();
    publish_influx3(&w, "core");
    w.prepare_influx3("core1", "core");
    let common = [
        "--database-id",
        "core1",
        "--stop-timeout",
        "10",
        "--profile",
        "smoke",
        "--scale",
        "2",
        "--log-interval",
        "60s",
        "--json",
    ];
    let mut a = vec!["bench", "influxdb3", "all"];
    a.extend(common);
    a.extend([
        "--use-case",
        "devops",
        "--dataset-id",
        "tiny-devops",
        "--queries",
        "2",
        "--query-type",
        "lastpoint",
        "--query-type",
        "single-groupby-1-1-1",
    ]);
    let r = w.run(&a);
    r.ok();
    let s = summary(&run_dir(&r));
    assert_eq!(s["status"], "completed", "{s}");
    let rc = &s["row_count"];
    assert_eq!(rc["ok"], true, "{rc}");
    assert_eq!(rc["actual"], 9 * PER_TABLE, "{rc}");
    let counted = rc["tables"].as_array().unwrap();
    assert_eq!(counted.len(), 9, "{rc}");
    for t in counted {
        assert_eq!(t["actual"], PER_TABLE, "{t}");
    }
    assert_eq!(query_types(&s), ["lastpoint", "single-groupby-1-1-1"]);

    let mut a = vec!["bench", "influxdb3", "load"];
    a.extend(common);
    a.extend([
        "--use-case",
        "iot",
        "--dataset-id",
        "tiny-iot",
        "--database-mode",
        "reset",
        "--confirm-reset",
        "benchmark",
    ]);
    let r = w.run(&a);
    r.ok();
    let s = summary(&run_dir(&r));
    assert_eq!(s["status"], "completed", "{s}");
    let m = format_manifest(&w, "tiny-iot");
    let rc = &s["row_count"];
    assert_eq!(rc["ok"], true, "{rc}");
    let names: Vec<&str> = rc["tables"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["table"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["readings", "diagnostics"], "{rc}");
    for t in rc["tables"].as_array().unwrap() {
        let f = &m["tables"][t["table"].as_str().unwrap()];
        let want = f["rows"].as_u64().unwrap() - f["duplicates"].as_u64().unwrap_or(0);
        assert_eq!(t["actual"], want, "{t} {f}");
    }
}
