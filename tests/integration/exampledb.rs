//! Issue 14, "How we will know": a third product is one module, its templates and one
//! registry line. ExampleDB (`src/product/exampledb.rs`) is that product, compiled only in
//! tests: the `exampledb` cargo feature compiles it and its registry line, and this package's
//! dev-dependency on itself with that feature turns it on for every test build (`cargo test
//! --workspace --locked` as is), so the `tsbsctl` binary these tests run knows it while a
//! release build (no dev-dependencies) does not. It has no CLI module: the generic product
//! commands (`src/cli/generic.rs`) built from the registry serve it. Its stand-in server and
//! release are `testbed/src/emulators/exampledb.rs`; its data and queries go through GreptimeDB's
//! TSBS loader and runner stand-ins.
//!
//! The first test takes it through `install`, `prepare`, `bench exampledb all` and `runs
//! report` (beside a GreptimeDB run), with its own bench flag (`--example-replicas`, to the
//! loader's argv, the record, the summary and back through `runs rerun`) and its own
//! operation (`bench exampledb vacuum`: a run whose step is in events.jsonl and the summary)
//! (issue 23 §1); the second keeps the list of what it needed, and fails when anything else
//! in the sources names it, its flag or its operation.

use std::path::{Path, PathBuf};

use serde_json::json;

use crate::util::*;
use crate::world::*;

/// Every file ExampleDB needed, and the only lines outside them that name it.
const ITS_FILES: [&str; 3] = [
    "src/product/exampledb.rs",
    "templates/exampledb/exampledb.toml.j2",
    "testbed/src/emulators/exampledb.rs",
];
const ITS_LINES: [&str; 6] = [
    "src/product/mod.rs: #[cfg(any(test, feature = \"exampledb\"))]",
    "src/product/mod.rs: #[cfg(any(test, feature = \"exampledb\"))]",
    "src/product/mod.rs: exampledb::ENTRY,",
    "src/product/mod.rs: pub mod exampledb;",
    "testbed/src/emulators/mod.rs: \"exampledb\" => exampledb::main(args),",
    "testbed/src/emulators/mod.rs: pub mod exampledb;",
];

/// What names ExampleDB or its own bench flag and operation.
const OWN_WORDS: [&str; 4] = [
    "exampledb",
    "example-replicas",
    "example_replicas",
    "bench exampledb vacuum",
];

const VERSION: &str = "1.0.0";

#[test]
fn install_prepare_bench_all_and_report_through_the_registry_alone() {
    let w = world();
    testbed::emulators::exampledb::publish(&w.gt.mirror, VERSION, true);

    // Install: the latest release, checksum-verified, from the GitHub-shaped mirror.
    let r = w.run(&["exampledb", "install", "--json"]);
    r.ok();
    let m = &r.json()["data"]["manifest"];
    assert_eq!(m["product"], "exampledb", "{}", r.describe());
    assert_eq!(m["version"], VERSION);
    assert_eq!(m["version_source"], "github-latest-stable");
    assert_eq!(m["binary"], "exampledb");

    // Prepare: a workspace with the product's rendered config.
    let port = free_port_block(1).to_string();
    let r = w.run(&[
        "exampledb",
        "prepare",
        "--database-id",
        "e1",
        "--http-port",
        &port,
        "--json",
    ]);
    r.ok();
    let ws = r.json()["data"]["manifest"].clone();
    assert_eq!(ws["version"], VERSION, "{}", r.describe());
    assert_eq!(ws["database"], "benchmark");
    assert_eq!(ws["ports"], json!({ "http": port.parse::<u16>().unwrap() }));
    let ws_dir = w.gt.env.root.join("exampledb/databases/e1");
    let config = std::fs::read_to_string(ws_dir.join("config.toml")).unwrap();
    assert!(
        config.contains(&format!("addr = \"127.0.0.1:{port}\"")),
        "{config}"
    );
    let r = w.run(&["exampledb", "list"]);
    r.ok().says("e1");
    // The commands on one workspace find the product through the registry too.
    w.run(&["exampledb", "verify", "--database-id", "e1"])
        .ok()
        .says("workspace e1 verified");
    w.run(&["exampledb", "inspect", "--database-id", "e1"])
        .ok()
        .says(&format!("version: {VERSION}"));
    // The phases that need a product's own flags are not offered (exit 2, nothing run).
    w.run(&["bench", "exampledb", "compact", "--database-id", "e1"])
        .code(2);
    // A product that reads no token refuses --token-env before anything runs.
    w.run(&[
        "bench",
        "exampledb",
        "query",
        "--database-id",
        "e1",
        "--token-env",
        "SOME_TOKEN",
    ])
    .code(2)
    .says("reads no token");
    // Its own flag (`--example-replicas`, declared by the product) is checked by the product:
    // a bad value or a phase it does not apply to is exit 2 with its message, nothing run.
    for (phase, value, says) in [
        (
            "all",
            "0",
            "--example-replicas \"0\" must be a whole number from 1 to 16",
        ),
        (
            "load",
            "many",
            "--example-replicas \"many\" must be a whole number from 1 to 16",
        ),
        (
            "query",
            "2",
            "--example-replicas applies to the load and all phases only",
        ),
        (
            "vacuum",
            "2",
            "--example-replicas applies to the load and all phases only",
        ),
    ] {
        w.run(&[
            "bench",
            "exampledb",
            phase,
            "--database-id",
            "e1",
            "--example-replicas",
            value,
        ])
        .code(2)
        .says(says);
    }
    // Its help shows the flag and the operation.
    w.run(&["bench", "exampledb", "--help"])
        .ok()
        .says("--example-replicas <N>")
        .says("vacuum");
    assert!(!w.gt.env.root.join("exampledb/runs").exists());

    // bench all: dataset, query set, load, row count, queries, summary.
    let mut a = vec![
        "bench",
        "exampledb",
        "all",
        "--database-id",
        "e1",
        "--stop-timeout",
        "5",
        "--example-replicas",
        "3",
    ];
    a.extend(tiny());
    for t in TYPES {
        a.extend(["--query-type", t]);
    }
    a.extend(["--queries", "3", "--json"]);
    let r = w.run(&a);
    r.ok();
    let ex = run_dir(&r);
    assert!(
        ex.starts_with(w.gt.env.root.join("exampledb/runs")),
        "{ex:?}"
    );
    let s = summary(&ex);
    assert_eq!(s["status"], "completed", "{s}");
    assert_eq!(s["product"], "exampledb");
    assert_eq!(s["label"], format!("ExampleDB {VERSION}"));
    assert_eq!(s["target"]["database_id"], "e1");
    assert_eq!(s["target"]["version"], VERSION);
    assert_eq!(s["dataset"]["rows"], ROWS);
    // The product's smoke defaults, not GreptimeDB's.
    assert_eq!(s["workload"]["load_workers"], 1);
    assert_eq!(s["workload"]["batch_size"], 1000);
    assert_eq!(s["ingestion"]["rows"], ROWS);
    assert_eq!(
        s["row_count"],
        json!({"table": "cpu", "expected": ROWS, "actual": ROWS, "ok": true, "status": "completed"})
    );
    // Its footprint classifier: the stand-in's `*.seg` files are data.
    assert!(
        s["storage"]["data_bytes"].as_u64().unwrap() > 0,
        "{}",
        s["storage"]
    );
    let q = s["queries"].as_array().unwrap();
    let types: Vec<&str> = q
        .iter()
        .map(|q| q["query_type"].as_str().unwrap())
        .collect();
    assert_eq!(types, TYPES);
    for q in q {
        assert_eq!(
            (&q["status"], &q["queries"]),
            (&json!("completed"), &json!(3)),
            "{q}"
        );
    }
    // The rows are in the stand-in's store.
    let seg = std::fs::read_to_string(ws_dir.join("data/benchmark/cpu.seg")).unwrap();
    assert_eq!(seg.lines().count() as u64, ROWS);
    let md = std::fs::read_to_string(ex.join("summary.md")).unwrap();
    assert!(md.contains(&format!("ExampleDB {VERSION}")), "{md}");
    // The product's own flag reached the loader's argv, the record (under the product's key,
    // resolved), the workload and the summary.
    let replicas = "--replication-factor=3";
    let load_cmd = load_command(&ex);
    assert!(load_cmd.contains(replicas), "{load_cmd}");
    let m = read_json(&ex.join("manifest.json"));
    assert_eq!(
        m["flags"]["exampledb"],
        json!({"example_replicas": 3}),
        "{}",
        m["flags"]
    );
    assert_eq!(m["workload"]["example_replicas"], 3);
    assert_eq!(s["workload"]["example_replicas"], 3);
    assert!(
        md.contains("Write replicas (`--example-replicas`): **3**"),
        "{md}"
    );

    // Its operation: a run of its own, the step in events.jsonl and the summary, the
    // workspace's maintenance record.
    let r = w.run(&[
        "bench",
        "exampledb",
        "vacuum",
        "--database-id",
        "e1",
        "--json",
    ]);
    r.ok();
    let vac = run_dir(&r);
    let vm = read_json(&vac.join("manifest.json"));
    assert_eq!(vm["run_kind"], "operation", "{vm}");
    assert_eq!(vm["phase"], "vacuum");
    assert_eq!(vm["flags"]["phase"], "vacuum", "{vm}");
    assert_eq!(vm["workload"], json!({"operation": "vacuum"}));
    let events = std::fs::read_to_string(vac.join("events.jsonl")).unwrap();
    assert!(
        events
            .lines()
            .any(|l| l.contains(r#""step":"vacuum""#) && l.contains(r#""rows_kept":"#)),
        "{events}"
    );
    let vs = summary(&vac);
    assert_eq!(vs["status"], "completed", "{vs}");
    let steps = vs["operation"]["steps"].as_array().unwrap();
    assert_eq!(vs["operation"]["name"], "vacuum");
    assert!(
        steps.iter().any(|st| st["step"] == "vacuum"
            && st["status"] == "completed"
            && st["data"]["rows_kept"] == ROWS),
        "{}",
        vs["operation"]
    );
    let vmd = std::fs::read_to_string(vac.join("summary.md")).unwrap();
    assert!(vmd.contains("## Operation `vacuum`"), "{vmd}");
    assert!(vmd.contains("- Step `vacuum`: **completed**"), "{vmd}");
    let wsm = read_json(&ws_dir.join("manifest.json"));
    let last = wsm["data_state"]["maintenance"]
        .as_array()
        .and_then(|a| a.last())
        .cloned()
        .unwrap_or_default();
    assert_eq!(
        (&last["operation"], &last["status"]),
        (&json!("vacuum"), &json!("completed")),
        "{wsm}"
    );

    // `runs rerun` reads the product's flag back through the same resolution: a fresh
    // workspace's load gets it again.
    let r = w.run(&[
        "exampledb",
        "prepare",
        "--database-id",
        "e2",
        "--http-port",
        &free_port_block(1).to_string(),
    ]);
    r.ok();
    let r = w.run(&[
        "runs",
        "rerun",
        &ex.to_string_lossy(),
        "--database-id",
        "e2",
        "--json",
    ]);
    r.ok();
    let re = run_dir(&r);
    let load_cmd = load_command(&re);
    assert!(load_cmd.contains(replicas), "{load_cmd}");
    let rm = read_json(&re.join("manifest.json"));
    assert_eq!(rm["flags"]["exampledb"], m["flags"]["exampledb"]);
    assert_eq!(rm["workload"], m["workload"]);

    // runs report over it and a GreptimeDB run.
    let g = w.bench_ok("all", &[]);
    let p = |d: &Path| d.to_string_lossy().into_owned();
    let r = w.run(&["runs", "report", &p(&ex), &p(&g), "--json"]);
    r.ok();
    let dir = PathBuf::from(r.json()["data"]["report_dir"].as_str().unwrap());
    let rs = read_json(&dir.join("summary.json"));
    let labels: Vec<&str> = rs["runs"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["label"].as_str().unwrap())
        .collect();
    let ex_label = format!("ExampleDB {VERSION}");
    let g_label = format!("GreptimeDB {STABLE}");
    assert_eq!(labels, [ex_label.as_str(), g_label.as_str()], "{rs}");
    assert_eq!(rs["baseline_label"], ex_label.as_str());
    let rmd = std::fs::read_to_string(dir.join("summary.md")).unwrap();
    assert!(rmd.contains(&ex_label) && rmd.contains(&g_label), "{rmd}");
    let runs = w.run(&["runs", "list", "--json"]);
    runs.ok();
    assert!(runs.json()["data"]["runs"]
        .as_array()
        .unwrap()
        .iter()
        .any(|r| r["product"] == "exampledb"));
}

/// The loader's command line the run's first load step recorded.
fn load_command(run: &Path) -> String {
    std::fs::read_to_string(run.join("events.jsonl"))
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str::<serde_json::Value>(l).unwrap())
        .find_map(|e| {
            (e["step"] == "load")
                .then(|| e["data"]["command"].as_str().map(str::to_string))
                .flatten()
        })
        .unwrap_or_default()
}

fn sources(root: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    let mut stack: Vec<PathBuf> = ["src", "testbed/src", "templates", "tests"]
        .iter()
        .map(|d| root.join(d))
        .collect();
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).into_iter().flatten().flatten() {
            let p = e.path();
            if p.is_dir() {
                stack.push(p);
            } else {
                out.push(p);
            }
        }
    }
    out.sort();
    out
}

#[test]
fn a_third_product_is_one_module_its_templates_and_one_registry_line() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    for f in ITS_FILES {
        assert!(root.join(f).is_file(), "{f} is missing");
    }
    let module = std::fs::read_to_string(root.join(ITS_FILES[0])).unwrap();
    for own in ["\"example-replicas\"", "name: \"vacuum\""] {
        assert!(module.contains(own), "the product declares {own}");
    }
    // This test itself (its file and its `mod` line) is not something the product needed.
    let this = root.join("tests/integration/exampledb.rs");
    let registration = "tests/integration/main.rs: mod exampledb;";
    let mut lines = Vec::new();
    for p in sources(root) {
        let rel = p.strip_prefix(root).unwrap().display().to_string();
        if p == this || ITS_FILES.contains(&rel.as_str()) {
            continue;
        }
        // Binary fixtures hold no source to read.
        let Ok(text) = std::fs::read_to_string(&p) else {
            continue;
        };
        for l in text.lines() {
            let line = format!("{rel}: {}", l.trim());
            // The product's name, and its own flag and operation (issue 23: they need no
            // core edit either).
            let lower = l.to_ascii_lowercase();
            if OWN_WORDS.iter().any(|w| lower.contains(w)) && line != registration {
                lines.push(line);
            }
        }
    }
    lines.sort();
    assert_eq!(
        lines, ITS_LINES,
        "ExampleDB must need nothing but {ITS_FILES:?} and its registry lines"
    );
    // The test-only wiring: the feature, and the dev-dependency that turns it on in tests.
    let cargo: toml::Value = std::fs::read_to_string(root.join("Cargo.toml"))
        .unwrap()
        .parse()
        .unwrap();
    assert!(cargo["features"]["exampledb"].is_array());
    assert!(
        !cargo["features"]
            .get("default")
            .and_then(|d| d.as_array())
            .is_some_and(|d| d.iter().any(|f| f.as_str() == Some("exampledb"))),
        "never in a release build"
    );
    assert_eq!(
        cargo["dev-dependencies"]["tsbsctl"]["features"],
        toml::Value::Array(vec!["exampledb".into()])
    );
}
