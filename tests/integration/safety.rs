//! Issue 16, "safety" part: exit 2 changes nothing, bounds and disk space, users' files,
//! temp-file sweeping and repair hints. Each test names the trial-run defect it covers
//! (`shared/reviews/trial-run.md`).

use std::path::{Path, PathBuf};

use serde_json::json;

use crate::util::*;
use crate::world::*;

/// Every run directory of both products.
fn all_runs(root: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    for p in ["greptimedb", "influxdb3"] {
        if let Ok(rd) = std::fs::read_dir(root.join(p).join("runs")) {
            out.extend(rd.flatten().map(|e| e.path()).filter(|p| p.is_dir()));
        }
    }
    out.sort();
    out
}

/// `bench greptimedb PHASE --database-id g1 EXTRA...` without the helper's defaults.
fn bench_raw(w: &World, phase: &str, extra: &[&str]) -> Run {
    let mut a = vec!["bench", "greptimedb", phase, "--database-id", "g1"];
    a.extend_from_slice(extra);
    w.run(&a)
}

/// Loads the tiny dataset into g1 (three query types, three queries each).
fn load_tiny(w: &World) {
    w.bench("load", &[]).ok();
}

#[test]
fn defect_17_flags_are_checked_before_the_workspace_state() {
    let w = Gt::new();
    w.prepare("g1", STABLE);
    // g1 is prepared but holds no data: each bad flag still gives its own error.
    for (flags, says) in [
        (vec!["--queries", "0"], "--queries must be positive"),
        (vec!["--queries", "-5"], "--queries must be positive"),
        (
            vec!["--query-type", "nosuchtype"],
            "unsupported query type: nosuchtype",
        ),
        (
            vec!["--query-count", "lastpoint=abc"],
            "query count for lastpoint must be an integer",
        ),
        (vec!["--run-id", "a/b"], "--run-id"),
    ] {
        let mut a = vec!["bench", "greptimedb", "query", "--database-id", "g1"];
        a.extend_from_slice(&flags);
        let r = w.run(&a);
        r.code(2).says(says);
        assert!(
            !r.stderr.contains("holds no loaded data"),
            "{}",
            r.describe()
        );
    }
    assert!(all_runs(&w.env.root).is_empty());
    assert!(!w.env.root.join("greptimedb/runs").exists());
}

#[test]
fn defect_1_absurd_numbers_get_a_bound_and_generation_must_fit_the_disk() {
    let w = world();
    let before = all_runs(&w.gt.env.root);
    for (flags, says) in [
        (
            vec!["--queries", "99999999999"],
            "--queries 99999999999 is above the limit of 1000000",
        ),
        (
            vec!["--query-count", "lastpoint=5000000"],
            "above the limit of 1000000",
        ),
        (
            vec!["--scale", "99999999999999"],
            "--scale 99999999999999 is above the limit",
        ),
        (
            vec!["--load-workers", "4294967295"],
            "--load-workers 4294967295 is above the limit of 1024",
        ),
        (vec!["--query-workers", "5000"], "above the limit of 1024"),
        (
            vec!["--batch-size", "4000000000"],
            "--batch-size 4000000000 is above the limit",
        ),
    ] {
        let phase = if flags[0] == "--load-workers" || flags[0] == "--batch-size" {
            "load"
        } else {
            "query"
        };
        bench_raw(&w, phase, &flags).code(2).says(says);
    }
    w.run(&[
        "data", "generate", "--format", "influx", "--scale", "2000000",
    ])
    .code(2)
    .says("above the limit of 1000000");
    // Ten years of 100,000 hosts: petabytes. Refused with both numbers, nothing written.
    let huge = [
        "--profile",
        "smoke",
        "--scale",
        "100000",
        "--end",
        "2033-06-11T00:00:00Z",
        "--dataset-id",
        "huge",
    ];
    let r = bench_raw(&w, "all", &huge);
    r.code(2)
        .says("not enough disk space")
        .says("dataset huge")
        .says("bytes) free");
    let mut gen = vec!["data", "generate", "--format", "influx"];
    gen.extend(huge);
    w.run(&gen).code(2).says("not enough disk space");
    assert!(!w.gt.env.root.join("datasets/huge/formats").exists());
    assert_eq!(all_runs(&w.gt.env.root), before);

    // The query set is estimated too (forced here with a margin no disk has).
    load_tiny(&w);
    let before = all_runs(&w.gt.env.root);
    let mut args = vec![
        "bench",
        "greptimedb",
        "query",
        "--database-id",
        "g1",
        "--queries",
        "7",
    ];
    for t in TYPES {
        args.extend(["--query-type", t]);
    }
    let mut c = w.gt.env.cmd(&args);
    c.env("TSBSCTL_DISK_MARGIN_BYTES", "1000000000000000000");
    let r = run_command(c, &args, std::time::Duration::from_secs(120));
    r.code(2).says("not enough disk space").says("query set");
    assert_eq!(all_runs(&w.gt.env.root), before);
    // Without the margin the same command runs.
    w.run(&args).ok();
}

#[test]
fn defect_16_refusals_leave_no_run_directory_and_start_no_server() {
    let w = world();
    load_tiny(&w);
    let before = all_runs(&w.gt.env.root);
    // compact --table nosuch: decided from the workspace's binding, before any server.
    bench_raw(&w, "compact", &["--table", "nosuch"])
        .code(2)
        .says("table nosuch does not exist");
    // --compression gzip on a dataset stored uncompressed.
    let mut a = vec!["--compression", "gzip", "--database-mode", "reset"];
    a.extend(["--confirm-reset", "benchmark"]);
    a.extend(tiny());
    bench_raw(&w, "load", &a)
        .code(2)
        .says("stores influx as none, not gzip");
    // Zero waits have no meaning (#30).
    bench_raw(&w, "query", &["--startup-timeout", "0"])
        .code(2)
        .says("--startup-timeout must be a positive number");
    bench_raw(&w, "query", &["--stop-timeout", "0"])
        .code(2)
        .says("--stop-timeout must be a positive number");
    assert_eq!(all_runs(&w.gt.env.root), before);
    assert!(!w.gt.ws_dir("g1").join("server.pid").exists());
    // The binding survived the refused reset.
    assert_eq!(w.ws()["binding"]["dataset_id"], "tiny");
    // Loaded from an earlier generation of the same id: a reset is needed, said before the run.
    let wsm = w.gt.ws_dir("g1").join("manifest.json");
    let saved = std::fs::read(&wsm).unwrap();
    let mut m = read_json(&wsm);
    m["binding"]["uncompressed_sha256"] = json!("0".repeat(64));
    std::fs::write(&wsm, serde_json::to_vec_pretty(&m).unwrap()).unwrap();
    w.bench("load", &[])
        .code(2)
        .says("holds dataset tiny, not tiny");
    assert_eq!(all_runs(&w.gt.env.root), before);
    std::fs::write(&wsm, saved).unwrap();

    // #2: `runs report --out` never writes over a user's files or into the state root.
    let load_run = before
        .last()
        .unwrap()
        .file_name()
        .unwrap()
        .to_str()
        .unwrap()
        .to_string();
    let precious = w.gt.env.path().join("precious");
    std::fs::create_dir(&precious).unwrap();
    std::fs::write(precious.join("summary.md"), "my notes").unwrap();
    let p = precious.to_str().unwrap();
    w.run(&["runs", "report", &load_run, "--out", p])
        .code(2)
        .says("did not write");
    assert_eq!(
        std::fs::read_to_string(precious.join("summary.md")).unwrap(),
        "my notes"
    );
    let ws = w.gt.ws_dir("g1");
    w.run(&["runs", "report", &load_run, "--out", ws.to_str().unwrap()])
        .code(2)
        .says("not a report directory");
    assert!(!ws.join("report.html").exists());
    // A new directory, then the same one again (it holds only a report).
    let out = w.gt.env.path().join("out/rep");
    w.run(&["runs", "report", &load_run, "--out", out.to_str().unwrap()])
        .ok();
    w.run(&["runs", "report", &load_run, "--out", out.to_str().unwrap()])
        .ok();
    assert!(out.join("report.html").is_file());

    // Enterprise without an active licence: refused before any run exists.
    publish_influx3(&w, "enterprise");
    w.prepare_influx3("ent1", "enterprise");
    let mut a = vec!["bench", "influxdb3", "all", "--database-id", "ent1"];
    a.extend(tiny());
    w.run(&a).code(2).says("influxdb3 activate");
    assert_eq!(all_runs(&w.gt.env.root), before);
}

#[test]
fn defect_3_result_file_never_replaces_state_and_an_unwritable_one_fails() {
    let w = Gt::new();
    w.prepare("victim", STABLE);
    let m = w.ws_dir("victim").join("manifest.json");
    let before = std::fs::read(&m).unwrap();
    w.run(&["greptimedb", "list", "--result-file", m.to_str().unwrap()])
        .code(2)
        .says("inside tsbsctl's state directory");
    assert_eq!(std::fs::read(&m).unwrap(), before);
    w.run(&["greptimedb", "list", "--json"]).ok();
    // A directory is refused before the command runs (#23).
    let dir = w.env.path().join("cwd");
    w.run(&["greptimedb", "list", "--result-file", dir.to_str().unwrap()])
        .code(2)
        .says("is a directory");
    // One that cannot be written is an error, not a warning with exit 0 (#23).
    w.run(&["greptimedb", "list", "--result-file", "/proc/result.json"])
        .code(1)
        .says("could not write --result-file");
    // Trial 2 N12: a missing directory is refused (exit 2), not created.
    let missing = w.env.path().join("no/such/dir/x.json");
    w.run(&[
        "greptimedb",
        "list",
        "--result-file",
        missing.to_str().unwrap(),
    ])
    .code(2)
    .says("does not exist");
    assert!(!w.env.path().join("no").exists());
    // A good one is written.
    let good = w.env.path().join("result.json");
    w.run(&[
        "greptimedb",
        "list",
        "--result-file",
        good.to_str().unwrap(),
    ])
    .ok();
    let v = read_json(&good);
    assert_eq!(v["ok"], true);
}

/// Trial 2 N12: `--result-file` never creates a directory and never replaces tsbsctl's state,
/// also when the state root cannot be used (`--root` a file, `TSBSCTL_ROOT=` empty, a root
/// inside a file): the guards ran only once the root resolved, and the writer made the
/// missing directories.
#[test]
fn result_file_guards_hold_when_the_root_is_bad() {
    let w = Gt::new();
    w.prepare("victim", STABLE);
    let m = w.ws_dir("victim").join("manifest.json");
    let before = std::fs::read(&m).unwrap();
    let a_file = w.env.path().join("a-file");
    std::fs::write(&a_file, "not a directory").unwrap();
    let inside_file = a_file.join("root");
    let missing = w.env.path().join("no/such/x.json");
    let bad_roots: [(&str, Option<&Path>); 3] = [
        ("--root", Some(a_file.as_path())),
        ("--root", Some(inside_file.as_path())),
        ("TSBSCTL_ROOT=", None),
    ];
    let run_bad = |bad: &(&str, Option<&Path>), result: &Path| -> Run {
        let mut args = vec![
            "greptimedb",
            "list",
            "--result-file",
            result.to_str().unwrap(),
        ];
        if let Some(r) = bad.1 {
            args.extend(["--root", r.to_str().unwrap()]);
        }
        let mut c = w.env.cmd(&args);
        if bad.1.is_none() {
            c.env("TSBSCTL_ROOT", "");
        }
        run_command(c, &args, std::time::Duration::from_secs(120))
    };
    for bad in &bad_roots {
        // A missing directory: exit 2 naming it, nothing created.
        let r = run_bad(bad, &missing);
        r.code(2).says("does not exist");
        assert!(!w.env.path().join("no").exists(), "{}", r.describe());
        // A workspace manifest, and a new file beside it: never written.
        run_bad(bad, &m).code(2).says("database-workspace manifest");
        assert_eq!(std::fs::read(&m).unwrap(), before);
        let beside = w.ws_dir("victim").join("result.json");
        run_bad(bad, &beside).code(2);
        assert!(!beside.exists());
        // An ordinary place gets the error, for the agent that reads it.
        let good = w.env.path().join("result.json");
        let _ = std::fs::remove_file(&good);
        run_bad(bad, &good).code(2);
        let v = read_json(&good);
        assert_eq!(v["ok"], false, "{v}");
        assert_eq!(v["error"]["kind"], "invalid_input", "{v}");
    }
}

/// Leaves what `kill -9` of a generation leaves: staged data, its log, the generator's
/// working directory, with the pid of a process that is gone.
fn plant_leftovers(dir: &Path) -> Vec<PathBuf> {
    let files = [
        dir.join(".data.gen-999999999-185686937"),
        dir.join(".generate.log.gen-999999999-185686938"),
    ];
    for f in &files {
        std::fs::write(f, "partial").unwrap();
    }
    let cwd = dir.join(".work.cwd-999999999-185686939");
    std::fs::create_dir_all(&cwd).unwrap();
    let mut all = files.to_vec();
    all.push(cwd);
    all
}

#[test]
fn defect_15_leftovers_of_a_killed_generation_are_swept_by_the_next_command() {
    let w = world();
    load_tiny(&w);
    let fdir = w.gt.env.root.join("datasets/tiny/formats/influx");
    let data_before = std::fs::read(fdir.join("data")).unwrap();
    // Reuse by `data generate`.
    let left = plant_leftovers(&fdir);
    // A live owner's staging file is kept (this test's own pid).
    let live = fdir.join(format!(".data.gen-{}-1", std::process::id()));
    std::fs::write(&live, "being written").unwrap();
    w.run(&[
        "data",
        "generate",
        "--dataset-id",
        "tiny",
        "--format",
        "influx",
    ])
    .ok()
    .says("left by an interrupted generation");
    assert!(left.iter().all(|p| !p.exists()), "{left:?}");
    assert!(live.exists());
    std::fs::remove_file(&live).unwrap();
    // `data verify`.
    let left = plant_leftovers(&fdir);
    w.run(&["data", "verify", "--dataset-id", "tiny"]).ok();
    assert!(left.iter().all(|p| !p.exists()), "{left:?}");
    // A load that reuses the loaded data, and a killed query-set generation.
    let left = plant_leftovers(&fdir);
    let qdir = w.gt.env.root.join("queries/tiny/greptime");
    let stage = qdir.join(".0123456789ab.stage-999999999-5");
    std::fs::create_dir_all(stage.join("queries")).unwrap();
    w.bench("all", &[]).ok();
    assert!(left.iter().all(|p| !p.exists()), "{left:?}");
    assert!(!stage.exists());
    assert_eq!(std::fs::read(fdir.join("data")).unwrap(), data_before);
}

#[test]
fn defect_23_codes_and_wording_match_what_happened() {
    let mut w = Gt::new();
    // A step before `env prepare` is a usage error: exit 2.
    for args in [vec!["env", "show"], vec!["env", "verify"]] {
        w.run(&args).code(2).says("tsbsctl env prepare");
    }
    // No edition was given, so none is named.
    let r = w.run(&["bench", "influxdb3", "query", "--database-id", "g1"]);
    r.code(2).says("there is no InfluxDB 3 workspace \"g1\"");
    assert!(!r.stderr.contains("Core"), "{}", r.describe());
    // Set but empty is "empty", not "not set".
    w.env.env("MY_EMPTY", "");
    let q = [
        "bench",
        "influxdb3",
        "query",
        "--url",
        "http://127.0.0.1:1",
        "--edition",
        "core",
        "--auth-token-env",
    ];
    let mut a = q.to_vec();
    a.push("MY_EMPTY");
    w.run(&a)
        .code(2)
        .says("environment variable MY_EMPTY is empty");
    let mut a = q.to_vec();
    a.push("MY_UNSET");
    w.run(&a)
        .code(2)
        .says("environment variable MY_UNSET is not set");
}

/// Sets `key` of a JSON file to `value`.
fn edit_json(path: &Path, key: &str, value: serde_json::Value) {
    let mut v = read_json(path);
    v[key] = value;
    std::fs::write(path, serde_json::to_vec_pretty(&v).unwrap()).unwrap();
}

/// The fixes `greptimedb list --json` gives for workspace `id`.
fn fixes(w: &Gt, id: &str) -> String {
    let r = w.run_json(&["greptimedb", "list"]);
    let v = r.json();
    let ws = v["data"]["workspaces"]
        .as_array()
        .or_else(|| v["data"].as_array())
        .unwrap_or_else(|| panic!("{}", r.describe()))
        .iter()
        .find(|x| x["database_id"] == id)
        .unwrap_or_else(|| panic!("{}", r.describe()))
        .clone();
    ws["problems"].to_string()
}

#[test]
fn defect_20_repair_hints_point_at_the_repair_that_works() {
    let w = Gt::new();
    w.prepare("a", STABLE);
    w.prepare("b", STABLE);
    w.prepare("c", STABLE);
    w.run(&["greptimedb", "install", "--version", BETA]).ok();
    // (a) The workspace's version edited: reinstalling that version cannot help.
    edit_json(&w.ws_dir("a").join("manifest.json"), "version", json!(BETA));
    let f = fixes(&w, "a");
    assert!(
        f.contains(&format!("set \\\"version\\\" back to \\\"{STABLE}\\\"")),
        "{f}"
    );
    assert!(!f.contains("--reinstall"), "{f}");
    // (b) The installation's record edited: `install --reinstall` is the fix.
    let inst = w.install_dir(STABLE).join("manifest.json");
    let saved = std::fs::read(&inst).unwrap();
    edit_json(&inst, "binary_sha256", json!("0".repeat(64)));
    let r = w.run(&["greptimedb", "verify", "--database-id", "b"]);
    r.code(4)
        .says(&format!("install --version {STABLE} --reinstall"));
    // Trial 2 #20 b: the hint said the reinstall twice.
    assert_eq!(
        r.stderr.matches("--reinstall").count(),
        1,
        "{}",
        r.describe()
    );
    assert!(
        !r.stderr.contains("prepare a new workspace"),
        "{}",
        r.describe()
    );
    // Trial 2 #20 b: the same edit let a run start; the server is refused (exit 4).
    let r = w.run(&["greptimedb", "serve", "--database-id", "b"]);
    r.code(4)
        .says("installation record")
        .says(&format!("install --version {STABLE} --reinstall"));
    std::fs::write(&inst, saved).unwrap();
    // Trial 2 #20 a: a version edited to one that is not installed was "not installed"
    // (exit 1, hint: install it); it is the integrity error naming the version to restore.
    edit_json(
        &w.ws_dir("b").join("manifest.json"),
        "version",
        json!("9.9.9"),
    );
    let r = w.run(&["greptimedb", "serve", "--database-id", "b"]);
    r.code(4)
        .says("9.9.9, which is not installed")
        .says(&format!("set \"version\" back to \"{STABLE}\""));
    assert!(
        !r.stderr.contains("install --version 9.9.9"),
        "{}",
        r.describe()
    );
    edit_json(
        &w.ws_dir("b").join("manifest.json"),
        "version",
        json!(STABLE),
    );
    // Trial 2 N3: a file beside the binary changed: refused before the server starts.
    let lib = w.install_dir(STABLE).join("extra.txt");
    std::fs::write(&lib, "evil").unwrap();
    w.run(&["greptimedb", "serve", "--database-id", "b"])
        .code(4)
        .says("changed since it was installed")
        .says("nothing was started");
    std::fs::remove_file(&lib).unwrap();
    // (c) An unreadable workspace manifest: never `remove` (it deletes the data).
    let m = w.ws_dir("c").join("manifest.json");
    let mut bytes = std::fs::read(&m).unwrap();
    bytes[0] = 0xff;
    std::fs::write(&m, bytes).unwrap();
    let f = fixes(&w, "c");
    assert!(f.contains("restore") && !f.contains("remove"), "{f}");
}

#[test]
fn defect_20d_a_corrupt_query_file_is_named() {
    let w = world();
    w.bench("all", &[]).ok();
    let sets = w.gt.env.root.join("queries/tiny/greptime");
    let set = std::fs::read_dir(&sets)
        .unwrap()
        .flatten()
        .next()
        .unwrap()
        .path();
    let file = set.join("queries/lastpoint.dat");
    let mut bytes = std::fs::read(&file).unwrap();
    bytes[10] ^= 0x01;
    std::fs::write(&file, bytes).unwrap();
    w.bench("query", &[])
        .code(4)
        .says(&format!("checksum mismatch in {}", file.display()));
}

#[test]
fn defect_30_wording_and_flag_nits() {
    let mut w = Gt::new();
    // What was typed is quoted.
    w.run(&["greptimedb", "install", "--version", "v1"])
        .code(2)
        .says("--version \"v1\" is not an exact version");
    // A cached archive never claims to come from the URL.
    w.run(&["greptimedb", "install", "--version", STABLE]).ok();
    let r = w.run(&["greptimedb", "install", "--version", STABLE, "--reinstall"]);
    r.ok().says("using the verified download");
    assert!(
        !r.stderr
            .lines()
            .any(|l| l.starts_with("installing") && l.contains(" from ")),
        "{}",
        r.describe()
    );
    // Two workspaces on one port: a note says so.
    let port = free_port_block(4).to_string();
    let prep = |id: &str| {
        w.run(&[
            "greptimedb",
            "prepare",
            "--database-id",
            id,
            "--version",
            STABLE,
            "--http-port",
            &port,
        ])
    };
    let first = prep("p1");
    first.ok();
    assert!(
        !first.stderr.contains("another workspace uses"),
        "{}",
        first.describe()
    );
    prep("p2")
        .ok()
        .says(&format!("{port} (greptimedb workspace p1)"));
    // A lock wait past the bound (it overflowed the deadline, #1).
    w.run(&[
        "greptimedb",
        "serve",
        "--database-id",
        "nope",
        "--wait",
        "18446744073709551615",
    ])
    .code(2)
    .says("is not in 0..=604800");
    // A zero HTTP timeout has no meaning.
    w.env.env("TSBSCTL_HTTP_TIMEOUT_SECS", "0");
    // Trial 2 N14: it left the install's lock file behind; an exit 2 changes nothing.
    let before = all_files(&w.env.root);
    w.run(&["greptimedb", "install", "--version", OLD])
        .code(2)
        .says("TSBSCTL_HTTP_TIMEOUT_SECS=0 has no meaning");
    assert_eq!(all_files(&w.env.root), before);
}
