//! The server's resource timeline (issue 24 part 1): a managed GreptimeDB run samples the
//! server's process tree into `timeline.jsonl` through load and queries, and summary.json /
//! summary.md show peak RSS and mean CPU per phase; an external server is read through its
//! `/metrics`, with the series named.

use std::path::Path;

use serde_json::Value;

use crate::util::read_json;
use crate::world::{endpoint_of, run_dir, summary, tiny, world, STABLE, TYPES};

fn timeline(dir: &Path) -> Vec<Value> {
    let text = std::fs::read_to_string(dir.join("timeline.jsonl")).unwrap();
    text.lines()
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("{e}: {l}")))
        .collect()
}

fn phase<'a>(s: &'a Value, name: &str) -> &'a Value {
    s["resources"]["phases"]
        .as_array()
        .unwrap()
        .iter()
        .find(|p| p["phase"] == name)
        .unwrap_or_else(|| panic!("no phase {name}: {}", s["resources"]))
}

#[test]
fn issue_24_a_managed_run_samples_the_server_through_load_and_queries() {
    let w = world();
    let dir = w.bench_ok("all", &[]);
    let samples = timeline(&dir);
    let m = read_json(&dir.join("manifest.json"));
    let phases: Vec<&str> = samples.iter().filter_map(|s| s["phase"].as_str()).collect();
    assert!(phases.contains(&"load"), "{phases:?}");
    for t in TYPES {
        let q = format!("query:{t}");
        assert!(phases.contains(&q.as_str()), "{q} in {phases:?}");
    }
    // Two server starts (load, queries), each sampled from its own process.
    let sessions: std::collections::BTreeSet<u64> = samples
        .iter()
        .filter_map(|s| s["session"].as_u64())
        .collect();
    assert_eq!(sessions.len(), 2, "{samples:?}");
    for s in &samples {
        assert_eq!(s["source"], "proc");
        assert!(s["pid"].as_u64().unwrap() > 0);
        assert!(s["rss_bytes"].as_u64().unwrap() > 0, "{s}");
        assert!(s["processes"].as_u64().unwrap() >= 1, "{s}");
        assert!(s["cpu_s"].as_f64().is_some() && s["cpu_user_s"].as_f64().is_some());
        // The emulator is our child: its io file is readable.
        assert!(s["write_bytes"].as_u64().is_some(), "{s}");
    }
    // The data directory is measured at boundaries.
    let load_start = samples.iter().find(|s| s["phase"] == "load").unwrap();
    assert_eq!(load_start["boundary"], true);
    assert!(
        load_start["data_dir_bytes"].as_u64().is_some(),
        "{load_start}"
    );

    let s = summary(&dir);
    let r = &s["resources"];
    assert!(r["source"].as_str().unwrap().starts_with("/proc"), "{r}");
    assert_eq!(r["file"], "timeline.jsonl");
    assert_eq!(r["samples"].as_u64().unwrap(), samples.len() as u64);
    let load = phase(&s, "load");
    assert!(load["peak_rss_bytes"].as_u64().unwrap() > 0, "{load}");
    assert!(load["mean_cpu_cores"].as_f64().is_some(), "{load}");
    assert!(load["data_dir_growth_bytes"].as_i64().is_some(), "{load}");
    assert!(r["load_data_dir_growth_bytes"].as_i64().is_some(), "{r}");
    assert!(r["load_bytes_written_per_row"].as_f64().is_some(), "{r}");
    for t in TYPES {
        let q = phase(&s, &format!("query:{t}"));
        assert!(q["peak_rss_bytes"].as_u64().unwrap() > 0, "{q}");
        assert!(q["mean_cpu_cores"].as_f64().is_some(), "{q}");
    }
    // The host names the data directory's mount and filesystem.
    assert!(s["host"]["data_mount"].is_string(), "{}", s["host"]);
    assert_eq!(s["host"]["data_filesystem"], m["host"]["data_filesystem"]);

    let md = std::fs::read_to_string(dir.join("summary.md")).unwrap();
    assert!(md.contains("## Server resources"), "{md}");
    assert!(
        md.contains("| Phase | Wall (s) | Mean CPU (cores) |"),
        "{md}"
    );
    let row = md
        .lines()
        .find(|l| l.starts_with("| query:lastpoint |"))
        .unwrap_or_else(|| panic!("{md}"));
    let cells: Vec<&str> = row.split('|').map(str::trim).collect();
    // Mean CPU and peak RSS are measured, not unknown.
    assert!(cells[3].parse::<f64>().is_ok(), "{row}");
    assert!(
        cells[5].ends_with("MiB") || cells[5].ends_with("KiB"),
        "{row}"
    );
    assert!(
        md.contains("bytes written to storage per row loaded"),
        "{md}"
    );
    assert!(md.contains("- Data disk: "), "{md}");
}

#[test]
fn issue_24_an_external_server_is_read_through_its_metrics() {
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
        "--database-mode",
        "create",
        "--json",
    ];
    args.extend(tiny());
    for t in TYPES {
        args.extend(["--query-type", t]);
    }
    let r = w.run(&args);
    r.ok();
    let dir = run_dir(&r);
    let samples = timeline(&dir);
    assert!(samples.iter().any(|s| s["phase"] == "load"), "{samples:?}");
    for s in &samples {
        assert_eq!(s["source"], "metrics");
        assert!(s["rss_bytes"].as_u64().unwrap() > 0, "{s}");
        assert!(s["cpu_s"].as_f64().is_some(), "{s}");
        // /metrics has no split and no I/O: unknown, never 0.
        assert!(
            s["cpu_user_s"].is_null() && s["write_bytes"].is_null(),
            "{s}"
        );
    }
    let s = summary(&dir);
    assert_eq!(
        s["resources"]["source"],
        "/metrics: process_cpu_seconds_total, process_resident_memory_bytes"
    );
    let load = phase(&s, "load");
    assert!(load["peak_rss_bytes"].as_u64().unwrap() > 0, "{load}");
    assert!(load["write_bytes"].is_null(), "{load}");
    let md = std::fs::read_to_string(dir.join("summary.md")).unwrap();
    let row = md
        .lines()
        .find(|l| l.starts_with("| load |"))
        .unwrap_or_else(|| panic!("{md}"));
    assert!(row.contains("unknown"), "{row}");
    assert!(md.contains("bytes written per row loaded unknown"), "{md}");
    bg.interrupt().code(130);
}
