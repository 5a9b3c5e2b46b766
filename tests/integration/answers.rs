//! Issue 24 §5, the same answers: one dataset loaded into the GreptimeDB and InfluxDB 3
//! stand-ins (which answer the real generator's SQL from the rows they stored, in their real
//! names, types and orders) and the real PostgreSQL, each run with `--check-answers`; `runs
//! report` says per type whether they agree, and names the first difference when one database
//! answers wrongly.

use std::path::{Path, PathBuf};
use std::time::Instant;

use serde_json::{json, Value};

use crate::util::*;

/// A groupby with a bucket and hosts, one without the host column (GreptimeDB's), the rows
/// themselves, and the last row per host (tags included).
const TYPES: [&str; 4] = [
    "double-groupby-1",
    "high-cpu-1",
    "lastpoint",
    "single-groupby-1-1-1",
];

fn with_types<'a>(mut a: Vec<&'a str>, types: &[&'a str]) -> Vec<&'a str> {
    for t in types {
        a.extend(["--query-type", t]);
    }
    a.extend(["--queries", "2", "--check-answers"]);
    a
}

/// The run's answers were all read: 2 per type of `types`, no errors.
fn checked(dir: &Path, types: &[&str]) {
    let s = crate::world::summary(dir);
    assert_eq!(s["status"], "completed", "{s:#}");
    let got: Vec<&str> = s["answers"]["types"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["query_type"].as_str().unwrap())
        .collect();
    assert_eq!(got.len(), types.len(), "{:#}", s["answers"]);
    for t in s["answers"]["types"].as_array().unwrap() {
        assert_eq!(t["queries"], 2, "{t:#}");
        assert_eq!(t["errors"], 0, "{t:#}");
        assert!(t["rows"].as_u64().unwrap() > 0, "{t:#}");
    }
}

fn report(env: &TestEnv, runs: &[&PathBuf]) -> Vec<Value> {
    let mut a = vec!["runs", "report"];
    a.extend(runs.iter().map(|p| p.to_str().unwrap()));
    a.push("--json");
    let r = env.run(&a);
    r.ok();
    r.json()["data"]["summary"]["answers"]
        .as_array()
        .unwrap()
        .clone()
}

#[test]
fn greptimedb_influxdb3_and_postgresql_agree_and_a_wrong_answer_is_named() {
    const TEST: &str = "greptimedb_influxdb3_and_postgresql_agree";
    let started = Instant::now();
    // Without PostgreSQL (pg_world prints the SKIP), the two stand-ins are still compared.
    let (w, pg) = match crate::timescaledb::pg_world(TEST) {
        Some(w) => (w, true),
        None => (crate::world::world(), false),
    };
    let env = &w.gt.env;

    let greptime = w.bench_ok("all", &with_types(vec![], &TYPES));
    checked(&greptime, &TYPES);

    crate::world::publish_influx3(&w, "core");
    w.prepare_influx3("core1", "core");
    let mut a = vec![
        "bench",
        "influxdb3",
        "all",
        "--database-id",
        "core1",
        "--stop-timeout",
        "10",
        "--json",
    ];
    a.extend(crate::world::tiny());
    let r = env.run(&with_types(a, &TYPES));
    r.ok();
    let influx = crate::world::run_dir(&r);
    checked(&influx, &TYPES);

    let mut runs = vec![&greptime, &influx];
    let postgres;
    if pg {
        crate::timescaledb::prepare_pg(env, "pg1");
        let mut a = vec![
            "bench",
            "timescaledb",
            "all",
            "--database-id",
            "pg1",
            "--stop-timeout",
            "5",
            "--json",
        ];
        a.extend(crate::world::tiny());
        let r = env.run(&with_types(a, &TYPES));
        r.ok();
        postgres = crate::world::run_dir(&r);
        checked(&postgres, &TYPES);
        runs.push(&postgres);
    }

    let rows = report(env, &runs);
    assert_eq!(rows.len(), TYPES.len(), "{rows:#?}");
    for row in &rows {
        assert_eq!(row["verdict"], "same", "{row:#}");
        assert_eq!(row["queries"], 2, "{row:#}");
        assert_eq!(row["runs"].as_array().unwrap().len(), runs.len(), "{row:#}");
    }

    // GreptimeDB now answers lastpoint (`last_value(`) wrongly: one of its two rows.
    w.gt.set_knobs(json!({"wrong_answers": ["last_value("]}));
    let few = ["high-cpu-1", "lastpoint"];
    let wrong = w.bench_ok("query", &with_types(vec!["--run-id", "wrong"], &few));
    checked(&wrong, &few);
    let mut runs2 = runs.clone();
    runs2[0] = &wrong;
    let rows = report(env, &runs2);
    let row = |t: &str| rows.iter().find(|r| r["query_type"] == t).unwrap().clone();
    let lp = row("lastpoint");
    assert_eq!(lp["verdict"], "different", "{lp:#}");
    let d = lp["first_difference"].as_str().unwrap();
    assert!(d.starts_with("query 0: sorted row "), "{d}");
    assert!(d.contains(", column usage_user: GreptimeDB"), "{d}");
    assert_eq!(row("high-cpu-1")["verdict"], "same");
    // The types the wrong run did not check are still compared across the others.
    assert_eq!(
        row("double-groupby-1")["runs"].as_array().unwrap().len(),
        runs.len() - 1
    );
    eprintln!("{TEST}: {:.1} s", started.elapsed().as_secs_f64());
}
