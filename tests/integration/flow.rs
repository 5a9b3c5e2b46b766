//! The published five-step flow (shared/reference/user-flows.md) end to end, as the commands the
//! skills in `.agents/skills/` tell an agent to run, against the release mirror and the
//! emulators: environment; three workspaces (GreptimeDB 1.2.0, InfluxDB 3 Core and Enterprise
//! 3.11.1, the Enterprise one activated through the licence flow); one shared dataset generated
//! once and verified; `all` on each workspace in turn with each product's default write
//! parameters, durable writes and one query worker; manual SWCS compaction of the GreptimeDB
//! workspace and its query phase again in a new run directory; a report over the four query runs.
//!
//! Differences from the skills' command lines, all for a small, parallel-safe test: every
//! `prepare` gets `--http-port` on a free port (the defaults 4000/8181 would collide with other
//! tests), the dataset is shrunk with spec flags, and each query type runs a few queries
//! (`--queries`) instead of the manual profile's counts.

use std::path::{Path, PathBuf};

use serde_json::{json, Value};
use testbed::mirror::Mirror;
use testbed::releases::go as go_release;
use testbed::releases::greptime::{self as grel, GreptimeRelease};
use testbed::releases::influxdb3 as irel;

use crate::util::*;

/// The stand-in Go the mirror vouches for through its index.
const GO: &str = "1.22.5";
const GREPTIME: &str = "1.2.0";
const INFLUX: &str = "3.11.1";
const GT_WS: &str = "greptime-120-manual";
const CORE_WS: &str = "core-3111-manual";
const ENT_WS: &str = "enterprise-3111-manual";
/// The licence e-mail: a secret that must appear nowhere.
const EMAIL: &str = "flow.benchmarker@example.invalid";
/// The manual profile shrunk: 8 hosts (the most any devops query type asks for, so the full
/// query set generates) over 13 hours (more than the longest query window, 12 h) at 10 s.
const SCALE: &str = "8";
const END: &str = "2023-06-11T13:00:00Z";
const ROWS: u64 = 8 * 13 * 360;
/// Queries per type: the full set of 15 types, 3 queries each (the manual profile's counts
/// would make four query runs against the emulators take minutes).
const QUERIES: &str = "3";
const QUERY_TYPES: usize = 15;

struct World {
    env: TestEnv,
    _mirror: Mirror,
    /// Where the data generator stand-in appends one line per invocation.
    generations: PathBuf,
    /// Every command's output, for the final no-secret check.
    runs: std::cell::RefCell<Vec<Run>>,
}

/// The outside world: a mirror with Go, GreptimeDB 1.2.0 and InfluxDB 3 Core/Enterprise 3.11.1
/// (and the installer script naming them), a fake TSBS repository, and knob files that keep the
/// emulators quick (a short WAL flush for durable writes, a short licence verification).
fn world() -> World {
    testbed_bin();
    let mut env = TestEnv::new();
    let mirror = Mirror::start().expect("mirror");
    for (k, v) in mirror.env() {
        env.env(k, v);
    }
    let knobs = env.path().join("knobs");
    std::fs::create_dir_all(&knobs).unwrap();
    let generations = knobs.join("generate-data.log");
    let go_knobs = knobs.join("go.json");
    std::fs::write(
        &go_knobs,
        json!({"tsbs_generate_data": {"invocations_log": generations}}).to_string(),
    )
    .unwrap();
    go_release::publish(&mirror, GO, &go_release::host_platform(), &go_knobs);
    let gt_knobs = knobs.join("greptime.json");
    std::fs::write(&gt_knobs, "{}").unwrap();
    grel::publish(
        &mirror,
        &GreptimeRelease::new(GREPTIME).with_knobs(&gt_knobs),
    );
    for edition in ["core", "enterprise"] {
        let k = knobs.join(format!("influxdb3-{edition}.json"));
        std::fs::write(
            &k,
            // A second of "waiting for the click": long enough for the reminder to show.
            json!({"wal_flush_interval_ms": 20, "verification_delay_ms": 1000}).to_string(),
        )
        .unwrap();
        irel::publish(&mirror, &irel::Release::new(edition, INFLUX, &k));
    }
    irel::publish_installer(&mirror, INFLUX, INFLUX);
    crate::world::use_tsbs_repo_and_mirror_go(&mut env, GO);
    World {
        env,
        _mirror: mirror,
        generations,
        runs: Default::default(),
    }
}

impl World {
    /// `tsbsctl <args> --json`, expected to succeed; returns the envelope's `data`.
    #[track_caller]
    fn ok(&self, args: &[&str]) -> Value {
        let r = self.env.run_json(args);
        r.ok();
        let v = r.json();
        assert_eq!(v["ok"], true, "{}", r.describe());
        self.runs.borrow_mut().push(r);
        v["data"].clone()
    }

    fn generator_runs(&self) -> usize {
        std::fs::read_to_string(&self.generations)
            .map(|s| s.lines().count())
            .unwrap_or(0)
    }

    fn runs_of(&self, product: &str) -> Vec<PathBuf> {
        let mut v: Vec<PathBuf> = std::fs::read_dir(self.env.root.join(product).join("runs"))
            .map(|rd| rd.flatten().map(|e| e.path()).collect())
            .unwrap_or_default();
        v.sort();
        v
    }
}

fn summary(dir: &Path) -> Value {
    read_json(&dir.join("summary.json"))
}

/// What a person checks in one `all` run: it succeeded, loaded the shared dataset with the
/// product's default write parameters, checked the row count and ran the whole query set.
#[track_caller]
fn check_all_run(dir: &Path, label: &str, dataset: &Value, workers: u64, batch: u64) -> Value {
    let s = summary(dir);
    assert_eq!(s["status"], "completed", "{s}");
    assert_eq!(s["run_kind"], "benchmark");
    assert_eq!(s["phase"], "all");
    assert_eq!(s["label"], label);
    assert_eq!(s["dataset"]["dataset_id"], dataset["dataset_id"]);
    assert_eq!(s["dataset"]["sha256"], dataset["sha256"]);
    assert_eq!(s["dataset"]["rows"], ROWS);
    assert_eq!(s["workload"]["profile"], "manual");
    assert_eq!(s["workload"]["load_workers"], workers);
    assert_eq!(s["workload"]["batch_size"], batch);
    assert_eq!(s["workload"]["query_workers"], 1);
    let ing = &s["ingestion"];
    assert_eq!(ing["status"], "completed", "a real load: {ing}");
    assert_eq!(ing["rows"], ROWS);
    assert_eq!(ing["workers"], workers);
    assert_eq!(ing["batch_size"], batch);
    assert_eq!(s["row_count"]["ok"], true);
    assert_eq!(s["row_count"]["actual"], ROWS);
    assert!(s["storage"]["total_bytes"].as_u64().unwrap() > 0);
    // The loader really ran with those parameters: its command line heads its log.
    let log = std::fs::read_to_string(dir.join(ing["log"].as_str().unwrap())).unwrap();
    let cmd = log.lines().next().unwrap_or_default();
    for flag in [
        format!("--workers={workers}"),
        format!("--batch-size={batch}"),
    ] {
        assert!(cmd.contains(&flag), "{flag} not in {cmd}");
    }
    check_queries(&s);
    s
}

#[track_caller]
fn check_queries(s: &Value) {
    let q = s["queries"].as_array().unwrap();
    assert_eq!(q.len(), QUERY_TYPES, "{s}");
    for q in q {
        assert_eq!(q["status"], "completed", "{q}");
        assert_eq!(q["query_count"].to_string(), QUERIES);
        assert!(q["mean_ms"].as_f64().is_some(), "{q}");
    }
    assert_eq!(s["failures"], json!([]));
}

/// What a reader checks in the report: four labelled columns, the three published tables
/// filled, and the one honest caveat (the products' write parameters differ).
#[track_caller]
fn check_report(report: &Value) {
    let dir = PathBuf::from(report["report_dir"].as_str().unwrap());
    for f in ["summary.md", "summary.json", "report.html"] {
        assert!(dir.join(f).is_file(), "{f} in {}", dir.display());
    }
    let r = read_json(&dir.join("summary.json"));
    let labels: Vec<&str> = r["runs"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["label"].as_str().unwrap())
        .collect();
    assert_eq!(
        labels,
        [
            "GreptimeDB 1.2.0",
            "InfluxDB 3 Core 3.11.1",
            "InfluxDB 3 Enterprise 3.11.1",
            "GreptimeDB 1.2.0 (after manual compaction)"
        ]
    );
    // Ingestion: three loads with their write parameters and durability; none after compaction.
    let ing = r["ingestion"].as_array().unwrap();
    let params: Vec<(Value, Value, Value)> = ing
        .iter()
        .map(|i| {
            (
                i["status"].clone(),
                json!([i["workers"], i["batch_size"]]),
                i["durable_write_acknowledgement"].clone(),
            )
        })
        .collect();
    assert_eq!(
        params,
        [
            (json!("completed"), json!([6, 3000]), Value::Null),
            (json!("completed"), json!([16, 25000]), json!(true)),
            (json!("completed"), json!([16, 25000]), json!(true)),
            (json!("none"), json!([null, null]), Value::Null),
        ]
    );
    // Per-query latency before and after compaction: all 15 types, a number in every cell.
    let q = r["queries"].as_array().unwrap();
    assert_eq!(q.len(), QUERY_TYPES);
    for row in q {
        let cells = row["cells"].as_array().unwrap();
        assert_eq!(cells.len(), 4);
        assert!(
            cells
                .iter()
                .all(|c| c["status"] == "completed" && c["mean_ms"].is_number()),
            "{row}"
        );
    }
    // Storage after ingestion for the three loads.
    let st: Vec<bool> = r["storage"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["measured"].as_bool().unwrap())
        .collect();
    assert_eq!(st, [true, true, true, false]);
    // Same dataset, query counts, host, TSBS build: the caveats are the write parameters and
    // (issue 16) that the "as loaded" GreptimeDB run read memtables, the compacted one SSTs.
    let warnings = r["warnings"].as_array().unwrap();
    assert_eq!(warnings.len(), 2, "{warnings:?}");
    let w1 = warnings[1].as_str().unwrap();
    assert!(
        w1.contains("GreptimeDB 1.2.0 (as loaded: memtables only")
            && w1.contains("GreptimeDB 1.2.0 (after manual compaction) (SST files only")
            && w1.contains("--flush-before-queries"),
        "{w1}"
    );
    let w0 = warnings[0].as_str().unwrap();
    assert!(
        w0.contains("write parameters")
            && w0.contains("6 workers x 3000 rows")
            && w0.contains("16 workers x 25000 rows"),
        "{w0}"
    );
    let md = std::fs::read_to_string(dir.join("summary.md")).unwrap();
    for l in labels {
        assert!(md.contains(l), "{l} in the report's summary.md:\n{md}");
    }
}

#[test]
fn the_published_five_step_flow() {
    let mut w = world();

    // 1. Environment ($setup-tsbs-environment).
    let prep = w.ok(&["env", "prepare"]);
    assert_eq!(prep["go"]["version"], GO);
    let verify = w.ok(&["env", "verify"]);
    assert_eq!(verify["go"]["version"], GO, "{verify}");

    // 2. Three workspaces ($setup-greptimedb, $setup-influxdb3).
    let inst = w.ok(&["greptimedb", "install", "--version", GREPTIME]);
    assert_eq!(inst["manifest"]["version"], GREPTIME, "{inst}");
    let port = free_port_block(4).to_string();
    let gt = w.ok(&[
        "greptimedb",
        "prepare",
        "--database-id",
        GT_WS,
        "--version",
        GREPTIME,
        "--http-port",
        &port,
    ]);
    assert_eq!(gt["manifest"]["version"], GREPTIME);
    assert_eq!(gt["manifest"]["database"], "benchmark");
    for (edition, ws) in [("core", CORE_WS), ("enterprise", ENT_WS)] {
        w.ok(&[
            "influxdb3",
            "install",
            "--edition",
            edition,
            "--version",
            INFLUX,
        ]);
        let port = free_port_block(1).to_string();
        let m = w.ok(&[
            "influxdb3",
            "prepare",
            "--database-id",
            ws,
            "--edition",
            edition,
            "--version",
            INFLUX,
            "--http-port",
            &port,
        ]);
        assert_eq!(m["manifest"]["edition"], edition);
        assert_eq!(m["manifest"]["version"], INFLUX);
    }
    // The person exports the e-mail in their own terminal and runs the second form.
    w.env.env("INFLUXDB3_LICENSE_EMAIL", EMAIL);
    w.ok(&[
        "influxdb3",
        "activate",
        "--database-id",
        ENT_WS,
        "--license-type",
        "trial",
        "--license-email-env",
        "INFLUXDB3_LICENSE_EMAIL",
    ]);
    // The person is told when to confirm the e-mail.
    w.runs
        .borrow()
        .last()
        .unwrap()
        .says("verification e-mail")
        .says("click the link");
    let ent = w.ok(&["influxdb3", "inspect", "--database-id", ENT_WS]);
    assert_eq!(ent["manifest"]["license"]["status"], "active", "{ent}");

    // 3. One shared dataset ($generate-tsbs-data): none yet, generated, reused, verified.
    let list = w.ok(&["data", "list"]);
    assert_eq!(list["datasets"], json!([]));
    let spec = [
        "--profile",
        "manual",
        "--format",
        "influx",
        "--compression",
        "none",
        "--scale",
        SCALE,
        "--end",
        END,
    ];
    let gen = w.ok(&[&["data", "generate"][..], &spec].concat());
    assert_eq!(gen["reused"], false);
    assert_eq!(gen["rows"], ROWS);
    let ds_id = gen["dataset_id"].as_str().unwrap().to_string();
    let again = w.ok(&[&["data", "generate"][..], &spec].concat());
    assert_eq!(again["reused"], true);
    let ver = w.ok(&[
        "data",
        "verify",
        "--dataset-id",
        &ds_id,
        "--format",
        "influx",
    ]);
    assert_eq!(ver["variants"][0]["verified"], true, "{ver}");
    assert_eq!(ver["variants"][0]["sha256"], gen["sha256"]);
    let dataset = json!({"dataset_id": ds_id, "sha256": gen["sha256"]});

    // 4. The benchmarks, one database at a time ($benchmark-greptimedb, $benchmark-influxdb3):
    // the skills' command lines, each product's default write parameters (no --load-workers,
    // --batch-size), durable InfluxDB writes (no --no-sync, --accept-partial), one query
    // worker; `--queries` keeps the 15 types but makes each run only a few queries.
    let bench = |product: &str, phase: &str, ws: &str| -> Value {
        w.ok(&[
            "bench",
            product,
            phase,
            "--database-id",
            ws,
            "--dataset-id",
            &ds_id,
            "--profile",
            "manual",
            "--compression",
            "none",
            // The spec flags that shrank the dataset: with `--profile manual` alone the
            // requested spec would be the full manual one, which the stored dataset refuses.
            "--scale",
            SCALE,
            "--end",
            END,
            "--query-workers",
            "1",
            "--queries",
            QUERIES,
        ])
    };
    let gt_all = bench("greptimedb", "all", GT_WS);
    let core_all = bench("influxdb3", "all", CORE_WS);
    let ent_all = bench("influxdb3", "all", ENT_WS);
    let dir_of = |d: &Value| PathBuf::from(d["run_dir"].as_str().unwrap());
    check_all_run(&dir_of(&gt_all), "GreptimeDB 1.2.0", &dataset, 6, 3000);
    for (d, label) in [
        (&core_all, "InfluxDB 3 Core 3.11.1"),
        (&ent_all, "InfluxDB 3 Enterprise 3.11.1"),
    ] {
        let s = check_all_run(&dir_of(d), label, &dataset, 16, 25000);
        let log = std::fs::read_to_string(dir_of(d).join(s["ingestion"]["log"].as_str().unwrap()))
            .unwrap();
        assert!(
            log.lines()
                .next()
                .unwrap()
                .contains("--no-sync=false --accept-partial=false"),
            "durable writes, whole-batch rejection: {log}"
        );
        assert_eq!(
            s["durability"],
            json!({"no_sync": false, "accept_partial": false, "durable_write_acknowledgement": true, "whole_batch_rejection": true})
        );
    }

    // 5. Manual compaction, then the query phase again ($benchmark-greptimedb).
    let compact = w.ok(&[
        "bench",
        "greptimedb",
        "compact",
        "--database-id",
        GT_WS,
        "--strategy",
        "swcs",
        "--window",
        "7200",
    ]);
    let compact_dir = dir_of(&compact);
    let c = summary(&compact_dir);
    assert_eq!(c["run_kind"], "compaction");
    assert_eq!(c["status"], "completed", "{c}");
    let cc = &c["compaction"];
    assert_eq!(cc["flush"]["sql"], "ADMIN FLUSH_TABLE('cpu')");
    assert_eq!(
        cc["compact"]["sql"],
        "ADMIN COMPACT_TABLE('cpu', 'swcs', 'window=7200')"
    );
    assert!(
        !cc["confirmation"]["log_lines"]
            .as_array()
            .unwrap()
            .is_empty(),
        "completion confirmed from the server log: {cc}"
    );
    // 13 hours of data in strict 2-hour windows: seven SST files.
    assert_eq!(cc["after"]["sst_num"], 7, "{cc}");
    let gt_ws = read_json(
        &w.env
            .root
            .join(format!("greptimedb/databases/{GT_WS}/manifest.json")),
    );
    let mt = gt_ws["data_state"]["maintenance"].as_array().unwrap();
    assert_eq!(mt.len(), 1, "{gt_ws}");
    assert_eq!(mt[0]["operation"], "compaction");
    assert_eq!(mt[0]["status"], "completed");
    assert_eq!(mt[0]["strategy"], "swcs");
    assert_eq!(mt[0]["window_seconds"], 7200);
    assert_eq!(mt[0]["run_dir"], compact["run_dir"]);
    assert!(!w
        .env
        .root
        .join(format!("greptimedb/databases/{GT_WS}/server.pid"))
        .exists());
    let gt_after = bench("greptimedb", "query", GT_WS);
    let after_dir = dir_of(&gt_after);
    let s = summary(&after_dir);
    assert_eq!(s["status"], "completed", "{s}");
    assert_eq!(s["run_kind"], "benchmark");
    assert_eq!(s["phase"], "query");
    assert_eq!(s["label"], "GreptimeDB 1.2.0 (after manual compaction)");
    assert_eq!(s["data_state"]["label"], "after manual compaction");
    assert_eq!(s["dataset"]["dataset_id"], dataset["dataset_id"]);
    assert!(s["ingestion"].is_null(), "no reload: {s}");
    check_queries(&s);
    // The same workspace, still bound to the one dataset; nothing was reset.
    let gt_ws2 = read_json(
        &w.env
            .root
            .join(format!("greptimedb/databases/{GT_WS}/manifest.json")),
    );
    assert_eq!(gt_ws2["binding"], gt_ws["binding"]);
    assert_eq!(gt_ws2["binding"]["dataset_id"], dataset["dataset_id"]);

    // What a person checks over the whole flow: one generation, three loads, four query runs
    // in four run directories (the pre-compaction results kept), one compaction run.
    assert_eq!(w.generator_runs(), 1, "the dataset was generated once");
    let all_runs: Vec<PathBuf> = [w.runs_of("greptimedb"), w.runs_of("influxdb3")].concat();
    assert_eq!(all_runs.len(), 5, "{all_runs:?}");
    let summaries: Vec<Value> = all_runs.iter().map(|d| summary(d)).collect();
    assert!(summaries.iter().all(|s| s["status"] == "completed"));
    assert!(all_runs.iter().all(|d| d.join("summary.md").is_file()));
    let loads = summaries
        .iter()
        .filter(|s| s["ingestion"]["status"] == "completed")
        .count();
    assert_eq!(loads, 3);
    let query_runs: Vec<&PathBuf> = all_runs
        .iter()
        .zip(&summaries)
        .filter(|(_, s)| s["queries"].as_array().is_some_and(|q| !q.is_empty()))
        .map(|(d, _)| d)
        .collect();
    let mut expected = vec![
        dir_of(&gt_all),
        dir_of(&core_all),
        dir_of(&ent_all),
        after_dir.clone(),
    ];
    expected.sort();
    let mut got: Vec<PathBuf> = query_runs.into_iter().cloned().collect();
    got.sort();
    assert_eq!(got, expected);
    assert_eq!(
        summaries
            .iter()
            .filter(|s| s["run_kind"] == "compaction")
            .count(),
        1
    );
    for ws in [CORE_WS, ENT_WS] {
        let m = read_json(
            &w.env
                .root
                .join(format!("influxdb3/databases/{ws}/manifest.json")),
        );
        assert_eq!(m["binding"]["dataset_id"], dataset["dataset_id"]);
    }

    // Then the report over the four query runs ($report-tsbs-results), by run directory (run
    // ids are unique per product only).
    let four: Vec<String> = [&gt_all, &core_all, &ent_all, &gt_after]
        .iter()
        .map(|d| d["run_dir"].as_str().unwrap().to_string())
        .collect();
    let report = w.ok(&[
        &["runs", "report"][..],
        &four.iter().map(String::as_str).collect::<Vec<_>>(),
    ]
    .concat());
    check_report(&report);

    // No secret anywhere: not in any file under the test's directory, not in any output.
    let runs = w.runs.borrow();
    let refs: Vec<&Run> = runs.iter().collect();
    assert_no_secret(w.env.path(), EMAIL, &refs);
}

/// The README's "For people" block is the same flow as commands: every line of it parses with
/// the real CLI (`$T` is the binary, `$D` the dataset id), and it shows every step.
#[test]
fn the_readme_flow_commands_parse() {
    use clap::Parser;
    let readme =
        std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("README.md")).unwrap();
    let start = readme
        .find("## For people: the same flow as commands")
        .expect("README has the For people section");
    let block = &readme[start..];
    let block = &block[block.find("```sh").unwrap()..];
    let block = &block[..block[5..].find("```").unwrap() + 5];
    let mut shown = Vec::new();
    for line in block.lines() {
        let Some(rest) = line.trim().strip_prefix("$T ") else {
            continue;
        };
        let rest = rest.replace("$D", "cpu-only-s4000-57964a838c71");
        let mut words = shlex::split(&rest).unwrap_or_else(|| panic!("cannot split {line:?}"));
        words.insert(0, "tsbsctl".into());
        if let Err(e) = tsbsctl::cli::Cli::try_parse_from(&words) {
            panic!("README command does not parse: {line}\n{e}");
        }
        shown.push(words[1..3.min(words.len())].join(" "));
    }
    for step in [
        "env prepare",
        "env verify",
        "greptimedb prepare",
        "influxdb3 prepare",
        "influxdb3 activate",
        "data generate",
        "data verify",
        "bench greptimedb",
        "bench influxdb3",
        "runs report",
    ] {
        assert!(shown.iter().any(|s| s == step), "{step} missing: {shown:?}");
    }
    assert_eq!(shown.iter().filter(|s| *s == "bench greptimedb").count(), 3);
    assert_eq!(shown.iter().filter(|s| *s == "bench influxdb3").count(), 2);
}

/// Trial 2, README problem 8: the smoke variant of the "For people" block sits right under it,
/// one line per step; every command in it parses, it has every step, and its dataset id comes
/// from a command (run here as written), not pasted.
#[test]
fn the_readme_smoke_block_parses_and_gets_its_dataset_id_by_a_command() {
    use clap::Parser;
    let readme =
        std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("README.md")).unwrap();
    let people = readme
        .find("## For people: the same flow as commands")
        .expect("README has the For people section");
    let next = people + readme[people + 3..].find("\n## ").unwrap() + 3;
    let section = &readme[people..next];
    let start = section
        .find("### The same flow on the smoke dataset")
        .expect("the smoke block is in the For people section");
    let block = &section[start..];
    let block = &block[block.find("```sh").unwrap() + 5..];
    let block = &block[..block.find("```").unwrap()];
    let mut shown = Vec::new();
    let mut id_line = None;
    for line in block.lines().filter(|l| !l.trim().is_empty()) {
        if line.starts_with("D=$(") {
            id_line = Some(line.split(" && ").next().unwrap().to_string());
        }
        for part in line.split(" && ") {
            let part = part.trim();
            let part = part
                .strip_prefix("D=$(")
                .map(|p| p.split(" | ").next().unwrap())
                .unwrap_or(part);
            let Some(rest) = part.strip_prefix("$T ") else {
                continue;
            };
            let rest = rest.replace("$D", "cpu-only-s10-c3a7d38f3a2a");
            let mut words = shlex::split(&rest).unwrap_or_else(|| panic!("cannot split {part:?}"));
            words.insert(0, "tsbsctl".into());
            if let Err(e) = tsbsctl::cli::Cli::try_parse_from(&words) {
                panic!("README command does not parse: {part}\n{e}");
            }
            shown.push(words[1..3.min(words.len())].join(" "));
        }
    }
    for step in [
        "env prepare",
        "greptimedb prepare",
        "influxdb3 prepare",
        "influxdb3 activate",
        "data prepare",
        "data generate",
        "data verify",
        "bench greptimedb",
        "bench influxdb3",
        "runs report",
    ] {
        assert!(shown.iter().any(|s| s == step), "{step} missing: {shown:?}");
    }
    assert_eq!(shown.iter().filter(|s| *s == "bench greptimedb").count(), 3);
    // The id line, run as written with the real binary on an empty root.
    let id_line = id_line.expect("D is set by a command");
    let env = TestEnv::new();
    let out = std::process::Command::new("sh")
        .arg("-c")
        .arg(format!("{id_line} && printf %s \"$D\""))
        .env("T", tsbsctl_bin())
        .env("TSBSCTL_ROOT", &env.root)
        .output()
        .unwrap();
    assert_eq!(
        String::from_utf8_lossy(&out.stdout),
        "cpu-only-s10-c3a7d38f3a2a",
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}
