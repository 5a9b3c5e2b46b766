//! TimescaleDB / PostgreSQL against this machine's REAL PostgreSQL (`.ci/run` installs
//! Debian's when missing; every test here skips, saying why, when there is none): pinning an
//! installation, a managed workspace in postgresql mode (initdb, rendered config, pg_isready,
//! SIGINT stop), the refusal of TimescaleDB mode without the extension, no postgres surviving
//! a killed tsbsctl (serving, and mid-load), `bench timescaledb all` with compare, rerun and a
//! report beside GreptimeDB and InfluxDB 3, and (ignored: minutes) the same flow with the real
//! upstream TSBS tools built by the real Go.

use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::time::Duration;

use serde_json::json;

use crate::util::*;

/// The bin directory of this machine's PostgreSQL, or `None` (the caller prints the skip).
pub(crate) fn pg_bin() -> Option<PathBuf> {
    let mut dirs: Vec<PathBuf> = std::fs::read_dir("/usr/lib/postgresql")
        .ok()?
        .flatten()
        .map(|e| e.path().join("bin"))
        .filter(|d| d.join("initdb").is_file() && d.join("postgres").is_file())
        .collect();
    dirs.sort();
    dirs.pop()
}

/// A test env whose directories the server's unprivileged user can traverse (tempdirs are
/// 0700; PostgreSQL refuses to run as root, so tsbsctl runs it as `postgres`/`nobody`).
pub(crate) fn pg_env(test: &str) -> Option<(TestEnv, PathBuf)> {
    let Some(bin) = pg_bin() else {
        skip(
            test,
            "no PostgreSQL under /usr/lib/postgresql (.ci/run installs it)",
        );
        return None;
    };
    let env = TestEnv::new();
    std::fs::set_permissions(env.path(), std::fs::Permissions::from_mode(0o755)).unwrap();
    Some((env, bin))
}

pub(crate) fn ws_dir(env: &TestEnv, id: &str) -> PathBuf {
    env.root.join("timescaledb/databases").join(id)
}

/// The pids of the processes whose parent is `pid` (a postmaster's backends).
fn children_of(pid: u32) -> Vec<u32> {
    let mut out = Vec::new();
    for e in std::fs::read_dir("/proc").unwrap().flatten() {
        let Ok(child) = e.file_name().to_string_lossy().parse::<u32>() else {
            continue;
        };
        let Ok(stat) = std::fs::read_to_string(e.path().join("stat")) else {
            continue;
        };
        let ppid = stat
            .rsplit_once(')')
            .and_then(|(_, r)| r.split_whitespace().nth(1))
            .and_then(|p| p.parse::<u32>().ok());
        if ppid == Some(pid) {
            out.push(child);
        }
    }
    out
}

/// The pids of running `postgres` processes whose data directory is under `dir`.
fn postgres_under(dir: &Path) -> Vec<u32> {
    let needle = dir.to_string_lossy().into_owned();
    let mut out = Vec::new();
    for e in std::fs::read_dir("/proc").unwrap().flatten() {
        let Ok(pid) = e.file_name().to_string_lossy().parse::<u32>() else {
            continue;
        };
        let Ok(cmd) = std::fs::read(e.path().join("cmdline")) else {
            continue;
        };
        let cmd = String::from_utf8_lossy(&cmd).replace('\0', " ");
        if cmd.contains("postgres") && cmd.contains(&needle) {
            out.push(pid);
        }
    }
    out
}

pub(crate) fn prepare_pg(env: &TestEnv, id: &str) -> serde_json::Value {
    let port = free_port_block(1).to_string();
    env.run_json(&[
        "timescaledb",
        "prepare",
        "--database-id",
        id,
        "--mode",
        "postgresql",
        "--port",
        &port,
    ])
    .ok()
    .json()
}

#[test]
fn install_pins_the_real_postgresql_and_verify_notices_a_changed_binary() {
    let Some((env, bin)) = pg_env("install_pins_the_real_postgresql") else {
        return;
    };
    let r = env.run_json(&["timescaledb", "install"]);
    let d = r.ok().json()["data"].clone();
    let version = d["postgresql"]["version"]["version"]
        .as_str()
        .unwrap()
        .to_string();
    let dir = PathBuf::from(d["installation_path"].as_str().unwrap());
    assert_eq!(
        dir,
        env.root
            .join("timescaledb/installations")
            .join(&version)
            .join(crate::world::host_platform())
    );
    assert_eq!(d["reused"], false);
    assert_eq!(
        d["manifest"]["binary"].as_str().unwrap(),
        std::fs::canonicalize(&bin)
            .unwrap()
            .join("postgres")
            .to_str()
            .unwrap()
    );
    for b in ["initdb", "postgres", "pg_isready"] {
        assert_eq!(
            d["postgresql"]["binaries"][b]["sha256"]
                .as_str()
                .unwrap()
                .len(),
            64,
            "{b}"
        );
    }
    // Pinned again: reused after re-hashing.
    let again = env.run_json(&["timescaledb", "install"]);
    assert_eq!(again.ok().json()["data"]["reused"], true);

    // A copy of the bin directory whose psql changes after the pin: exit 4 with the fix.
    let copy = env.path().join("pgbin");
    std::fs::create_dir_all(&copy).unwrap();
    for b in ["initdb", "pg_ctl", "postgres", "pg_isready", "psql"] {
        std::fs::copy(bin.join(b), copy.join(b)).unwrap();
    }
    let env2 = TestEnv::new();
    let pin = env2.run_json(&["timescaledb", "install", "--pg-bin", copy.to_str().unwrap()]);
    pin.ok();
    let mut f = std::fs::OpenOptions::new()
        .append(true)
        .open(copy.join("psql"))
        .unwrap();
    std::io::Write::write_all(&mut f, b"x").unwrap();
    drop(f);
    env2.run(&["timescaledb", "install", "--pg-bin", copy.to_str().unwrap()])
        .code(4)
        .says("psql")
        .says("tsbsctl timescaledb install --reinstall");
    env2.run(&[
        "timescaledb",
        "install",
        "--pg-bin",
        copy.to_str().unwrap(),
        "--reinstall",
    ])
    .ok();
}

#[test]
fn timescaledb_mode_without_the_extension_is_refused_and_nothing_is_created() {
    let Some((env, _)) = pg_env("timescaledb_mode_without_the_extension") else {
        return;
    };
    let d = env.run_json(&["timescaledb", "install"]).ok().json()["data"].clone();
    if !d["postgresql"]["timescaledb"].is_null() {
        skip(
            "timescaledb_mode_without_the_extension",
            "the extension is installed here",
        );
        return;
    }
    let r = env.run(&["timescaledb", "prepare", "--database-id", "t1"]);
    r.code(2)
        .says("timescaledb extension is not available")
        .says("--mode postgresql");
    assert!(!ws_dir(&env, "t1").exists(), "nothing is created");
}

#[test]
fn a_postgresql_workspace_serves_stops_cleanly_and_dies_with_a_killed_tsbsctl() {
    let Some((env, _)) = pg_env("a_postgresql_workspace_serves") else {
        return;
    };
    let m = prepare_pg(&env, "p1")["data"]["manifest"].clone();
    assert_eq!(m["edition"], "postgresql");
    let port = m["ports"]["postgres"].as_u64().unwrap();
    let dir = ws_dir(&env, "p1");
    // initdb ran; the rendered settings are the workspace config and are included.
    assert!(dir.join("data/PG_VERSION").is_file());
    let cfg = std::fs::read_to_string(dir.join("config.toml")).unwrap();
    assert!(cfg.contains("listen_addresses = '127.0.0.1'"), "{cfg}");
    assert!(cfg.contains(&format!("port = {port}")), "{cfg}");
    assert!(
        cfg.contains("PostgreSQL") && cfg.contains("(no TimescaleDB)"),
        "{cfg}"
    );
    assert!(!cfg.contains("shared_preload_libraries"), "{cfg}");
    let main = std::fs::read_to_string(dir.join("data/postgresql.conf")).unwrap();
    assert!(main.contains("include 'tsbsctl.conf'"));
    // Reuse: the same request again.
    assert_eq!(prepare_pg_same(&env, "p1", port)["data"]["reused"], true);
    env.run(&["timescaledb", "verify", "--database-id", "p1"])
        .ok();
    env.run(&["timescaledb", "inspect", "--database-id", "p1"])
        .ok()
        .says("mode: postgresql");
    // The mode is bound for good.
    env.run(&[
        "timescaledb",
        "prepare",
        "--database-id",
        "p1",
        "--mode",
        "timescaledb",
    ])
    .code(2);

    // A start that fails says why: the server log's FATAL lines are in the message.
    let conf = dir.join("data/postgresql.conf");
    let orig = std::fs::read_to_string(&conf).unwrap();
    std::fs::write(&conf, format!("no_such_setting = 1\n{orig}")).unwrap();
    env.run(&["timescaledb", "serve", "--database-id", "p1"])
        .code(1)
        .says("FATAL")
        .says("contains errors");
    std::fs::write(&conf, orig).unwrap();

    // Serve, then kill -9 tsbsctl: the postmaster goes with it (parent-death signal).
    let mut bg = Bg::spawn(&env, &["timescaledb", "serve", "--database-id", "p1"]);
    bg.wait_serving(|| !postgres_under(&dir).is_empty());
    assert!(
        bg.stderr().contains("PostgreSQL (no TimescaleDB)"),
        "{}",
        bg.stderr()
    );
    let postmaster = postgres_under(&dir)[0];
    let mut all = children_of(postmaster);
    all.push(postmaster);
    assert!(all.len() > 1, "the postmaster has its background processes");
    bg.signal(libc::SIGKILL);
    let _ = bg.wait();
    assert!(
        wait_until(Duration::from_secs(15), || all.iter().all(|p| !alive(*p))),
        "postgres survived a killed tsbsctl: {:?}",
        all.iter().filter(|p| alive(**p)).collect::<Vec<_>>()
    );
    // The stale postmaster.pid does not stop the next start; Ctrl-C stops it (SIGINT).
    assert!(dir.join("data/postmaster.pid").exists());
    let mut bg = Bg::spawn(&env, &["timescaledb", "serve", "--database-id", "p1"]);
    bg.wait_serving(|| !postgres_under(&dir).is_empty());
    let r = bg.interrupt();
    r.code(130);
    assert!(postgres_under(&dir).is_empty());
    assert!(!dir.join("data/postmaster.pid").exists(), "a clean stop");
    let log = std::fs::read_to_string(dir.join("logs/server.log")).unwrap();
    assert!(log.contains("fast shutdown request"), "{log}");

    env.run(&[
        "timescaledb",
        "remove",
        "--database-id",
        "p1",
        "--confirm",
        "p1",
    ])
    .ok();
    assert!(!dir.exists());
}

fn prepare_pg_same(env: &TestEnv, id: &str, port: u64) -> serde_json::Value {
    env.run_json(&[
        "timescaledb",
        "prepare",
        "--database-id",
        id,
        "--mode",
        "postgresql",
        "--port",
        &port.to_string(),
    ])
    .ok()
    .json()
}

/// `bench timescaledb all` in postgresql mode on the real server, with the TSBS stand-ins
/// built by `env prepare`: the rows loaded and counted, the SQL footprint split into table and
/// index bytes, the label naming PostgreSQL's version, the data directory headed with
/// PostgreSQL's own parts. `runs compare` refuses it beside a GreptimeDB run, naming why and
/// pointing at `runs report`; the report over GreptimeDB, InfluxDB 3 Core and PostgreSQL runs
/// labels each run, names the differing write parameters at the top, and gives PostgreSQL's
/// database size beside the data directories.
#[test]
fn bench_postgresql_all_then_report_beside_greptimedb_and_influxdb3() {
    let Some(w) = pg_world("bench_postgresql_all") else {
        return;
    };
    let env = &w.gt.env;
    prepare_pg(env, "pg1");
    // The published comparison's write parameters for TimescaleDB.
    let r = env.run(&pg_all_args(
        "pg1",
        &["--load-workers", "8", "--batch-size", "10000"],
    ));
    r.ok();
    let dir = crate::world::run_dir(&r);
    let s = crate::world::summary(&dir);
    assert_eq!(s["status"], "completed", "{s:#}");
    let rows = s["dataset"]["rows"].as_u64().unwrap();
    assert!(rows > 0);
    assert_eq!(s["row_count"]["actual"], rows, "{:#}", s["row_count"]);
    let st = &s["storage"];
    assert!(st["database_bytes"].as_u64().unwrap() > 0, "{st:#}");
    assert!(st["table_bytes"].as_u64().unwrap() > 0, "{st:#}");
    assert!(st["index_bytes"].as_u64().unwrap() > 0, "{st:#}");
    assert!(st["load_wal_bytes"].as_u64().unwrap() > 0, "{st:#}");
    // The data directory holds the whole cluster: more than the database alone.
    assert!(
        st["total_bytes"].as_u64().unwrap() > st["database_bytes"].as_u64().unwrap(),
        "{st:#}"
    );
    assert!(
        st["wal_bytes"].as_u64().unwrap() > 0,
        "pg_wal/ has segments: {st:#}"
    );
    assert!(
        st["data_bytes"].as_u64().unwrap() > 0,
        "base/ has databases: {st:#}"
    );
    assert_eq!(
        st["parts"]["data"],
        "Databases (`base/`: all of the cluster's)"
    );
    // summary.md leads with the database's size, then the cluster's data directory by part.
    let md = std::fs::read_to_string(dir.join("summary.md")).unwrap();
    assert!(md.contains("| Database (`pg_database_size`) |"), "{md}");
    assert!(md.contains("| WAL segments (`pg_wal/`) | Databases (`base/`: all of the cluster's) | Other (`global/`, `pg_xact/`, configuration) | Total | Files |"), "{md}");
    assert!(!md.contains("Parquet"), "{md}");
    assert!(md.contains("its total is not the database's size"), "{md}");
    // Each type's first query is a burn-in: the count below the file's is said, per type.
    let n = s["queries"].as_array().unwrap().len();
    assert!(
        md.contains(&format!(
            "For {n} of the query types it is below the queries the file held"
        )),
        "{md}"
    );
    let v = s["target"]["version"].as_str().unwrap();
    let pg_label = format!("PostgreSQL {v} (no TimescaleDB)");
    assert_eq!(s["label"], pg_label);
    // The server answers with PostgreSQL's version, and summary.md says whose it is.
    assert!(md.contains(&format!("- PostgreSQL version: `{v}`")), "{md}");
    assert!(!md.contains("TimescaleDB version:"), "{md}");
    for q in s["queries"].as_array().unwrap() {
        assert_eq!(q["status"], "completed", "{q:#}");
    }

    let g = w.bench_ok("all", &[]);
    // GreptimeDB's runner measures every query in the file: no burn-in note there.
    let gmd = std::fs::read_to_string(g.join("summary.md")).unwrap();
    assert!(gmd.contains("| Query type | Status |"), "{gmd}");
    // Each summary says what its statistics leave out, and why.
    assert!(
        gmd.contains("Left out of these statistics: Nothing: every query in the file"),
        "{gmd}"
    );
    assert!(
        md.contains("Left out of these statistics: The first query of each query worker"),
        "{md}"
    );
    assert!(!gmd.contains("ran the rest uncounted"), "{gmd}");
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
    ];
    a.extend(crate::world::tiny());
    for t in crate::world::TYPES {
        a.extend(["--query-type", t]);
    }
    a.extend(["--queries", "3", "--json"]);
    let r = env.run(&a);
    r.ok();
    let i = crate::world::run_dir(&r);

    // compare is for runs of one product: refused, saying why and what to use instead.
    let r = env.run(&[
        "runs",
        "compare",
        "--baseline",
        dir.to_str().unwrap(),
        "--candidate",
        g.to_str().unwrap(),
    ]);
    r.code(2)
        .says("product: baseline timescaledb vs candidate greptimedb")
        .says("query-set id")
        .says("tsbsctl runs report");

    let rep = env.run(&[
        "runs",
        "report",
        dir.to_str().unwrap(),
        g.to_str().unwrap(),
        i.to_str().unwrap(),
        "--json",
    ]);
    rep.ok();
    let data = rep.json()["data"].clone();
    let s = data["summary"].clone();
    let labels: Vec<&str> = s["runs"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["label"].as_str().unwrap())
        .collect();
    let g_label = format!("GreptimeDB {}", crate::world::STABLE);
    assert_eq!(
        labels,
        [
            pg_label.as_str(),
            g_label.as_str(),
            "InfluxDB 3 Core 3.11.1"
        ]
    );
    assert_eq!(s["baseline_label"], pg_label.as_str());
    // One dataset (PostgreSQL reads its timescaledb file), and no InfluxDB 3 WAL settings
    // read into PostgreSQL's: the write parameters are the one difference, said at the top
    // naming each run's.
    assert_eq!(
        s["warnings"].as_array().unwrap().len(),
        1,
        "{:#}",
        s["warnings"]
    );
    let ing = s["ingestion"].as_array().unwrap();
    let write: Vec<(u64, u64)> = ing
        .iter()
        .map(|c| {
            (
                c["workers"].as_u64().unwrap(),
                c["batch_size"].as_u64().unwrap(),
            )
        })
        .collect();
    assert_eq!(write, [(8, 10000), (2, 3000), (2, 3000)]);
    let warn = s["warnings"]
        .as_array()
        .unwrap()
        .iter()
        .map(|w| w.as_str().unwrap())
        .find(|w| w.contains("write parameters"))
        .unwrap_or_else(|| panic!("{:#}", s["warnings"]));
    for each in [
        format!("{g_label}, InfluxDB 3 Core 3.11.1 (2 workers x 3000 rows)"),
        format!("{pg_label} (8 workers x 10000 rows)"),
    ] {
        assert!(warn.contains(&each), "{each:?} in {warn}");
    }
    // Storage: PostgreSQL's database measured over SQL, the data directories under neutral
    // headings, each run's parts named.
    let st = s["storage"].as_array().unwrap();
    assert!(st[0]["database_bytes"].as_u64().unwrap() > 0, "{:#}", st[0]);
    assert!(st[1]["database_bytes"].is_null() && st[2]["database_bytes"].is_null());
    assert_eq!(s["storage_parts"]["data"], "Data files");
    let md = std::fs::read_to_string(data["summary_md"].as_str().unwrap()).unwrap();
    assert!(md.contains("> **Not strictly comparable.**"), "{md}");
    assert!(md.contains(warn), "{md}");
    assert!(md.contains("| Database size (measured over SQL) |"), "{md}");
    assert!(md.contains("| Total (data directory) |"), "{md}");
    assert!(
        md.contains(&format!(
            "> {pg_label}: the rows WAL / Data files / Other are its WAL segments (`pg_wal/`)"
        )),
        "{md}"
    );
    assert!(
        md.contains(&format!(
            "> {pg_label}: The data directory holds the whole cluster"
        )),
        "{md}"
    );
    for l in [&pg_label, &g_label] {
        assert!(md.contains(&format!("| {l} |")), "{l} in {md}");
    }
    eprintln!("REPORTMD\n{md}");
    eprintln!(
        "SUMMARYMD\n{}",
        std::fs::read_to_string(dir.join("summary.md")).unwrap()
    );
    let html = std::fs::read_to_string(data["report_html"].as_str().unwrap()).unwrap();
    assert!(html.contains("Database size (measured over SQL)"), "{html}");
}

/// design-2 §3.4: one dataset id stored in two formats (the influx file GreptimeDB loads, here
/// gzip, beside the timescaledb file PostgreSQL loads, plain) is the normal three-product
/// comparison. The preflight checks judge the format the product loads: a second load into
/// the PostgreSQL workspace that holds the dataset is skipped (not refused as "holds dataset
/// tiny, not tiny"), and `--compression` is judged by the timescaledb file, not the influx one.
#[test]
fn a_postgresql_workspace_reloads_a_dataset_stored_in_two_formats() {
    let Some(w) = pg_world("a_postgresql_workspace_reloads_a_dataset_stored_in_two_formats") else {
        return;
    };
    let env = &w.gt.env;
    prepare_pg(env, "pg1");
    let load = |extra: &[&str]| {
        let mut a = vec![
            "bench",
            "timescaledb",
            "load",
            "--database-id",
            "pg1",
            "--stop-timeout",
            "5",
        ];
        a.extend(crate::world::tiny());
        a.extend_from_slice(extra);
        a.push("--json");
        env.run(&a)
    };
    let r = load(&[]);
    r.ok();
    let bound = read_json(&ws_dir(env, "pg1").join("manifest.json"))["binding"].clone();
    assert_eq!(
        (&bound["dataset_id"], &bound["format"]),
        (&json!("tiny"), &json!("timescaledb")),
        "{bound:#}"
    );
    let mut g = vec![
        "data",
        "generate",
        "--format",
        "influx",
        "--compression",
        "gzip",
    ];
    g.extend(crate::world::tiny());
    env.run_json(&g).ok();

    let r = load(&[]);
    r.ok()
        .says("workspace pg1 already holds dataset tiny: load skipped");
    let s = crate::world::summary(&crate::world::run_dir(&r));
    assert_eq!(s["status"], "completed", "{s:#}");
    assert_eq!(
        read_json(&ws_dir(env, "pg1").join("manifest.json"))["binding"],
        bound
    );
    // The timescaledb file is plain: `--compression none` agrees with it, gzip does not.
    load(&["--compression", "none"]).ok().says("load skipped");
    load(&["--compression", "gzip"])
        .code(2)
        .says("dataset tiny stores timescaledb as none, not gzip");
}

/// The bench world (Go, the TSBS stand-ins built by `env prepare`, GreptimeDB workspace `g1`)
/// on this machine's PostgreSQL, pinned; `None` after printing the skip.
pub(crate) fn pg_world(test: &str) -> Option<crate::world::World> {
    if pg_bin().is_none() {
        skip(
            test,
            "no PostgreSQL under /usr/lib/postgresql (.ci/run installs it)",
        );
        return None;
    }
    let mut w = crate::world::world();
    // The server runs as an unprivileged user through runuser (/usr/sbin).
    w.gt.env.env(
        "PATH",
        format!("{}:/bin:/usr/bin:/usr/sbin:/sbin", crate::world::git_dir()),
    );
    std::fs::set_permissions(w.gt.env.path(), std::fs::Permissions::from_mode(0o755)).unwrap();
    w.gt.env.run_json(&["timescaledb", "install"]).ok();
    Some(w)
}

/// `bench timescaledb all --database-id ID` with the tiny workload and `extra`, as `--json`.
fn pg_all_args<'a>(id: &'a str, extra: &[&'a str]) -> Vec<&'a str> {
    let mut a = vec![
        "bench",
        "timescaledb",
        "all",
        "--database-id",
        id,
        "--stop-timeout",
        "5",
    ];
    a.extend(crate::world::tiny());
    for t in crate::world::TYPES {
        a.extend(["--query-type", t]);
    }
    a.extend(["--queries", "3"]);
    a.extend_from_slice(extra);
    a.push("--json");
    a
}

/// `runs resume` on the real PostgreSQL (issue 22: resume had been checked on one real server
/// only). A run killed mid-load, while the loader had committed part of the rows, is resumed
/// in place: the half-written database reset (only when confirmed), loaded again and counted
/// by the server at exactly the dataset's rows, then queried. A run killed in its query phase
/// goes on in place with the types not done, the done one not run again.
#[test]
fn runs_resume_on_the_real_postgresql_reloads_a_cut_load_and_finishes_cut_queries() {
    let Some(w) = pg_world("runs_resume_on_the_real_postgresql") else {
        return;
    };
    let env = &w.gt.env;
    let m = prepare_pg(env, "pr")["data"]["manifest"].clone();
    let port = m["ports"]["postgres"].as_u64().unwrap();
    let runs = env.root.join("timescaledb/runs");

    // Killed once the server holds some of the rows (batches of 100, 500 ms apart).
    w.tool_knobs("tsbs_load_timescaledb", json!({"batch_delay_ms": 500}));
    let mut bg = Bg::spawn(
        env,
        &pg_all_args("pr", &["--batch-size", "100", "--run-id", "cut-load"]),
    );
    let mut partial = 0u64;
    bg.wait_for_load(|| {
        partial = psql(port, "benchmark", "SELECT count(*) FROM cpu")
            .stdout
            .iter()
            .map(|b| *b as char)
            .collect::<String>()
            .trim()
            .parse()
            .unwrap_or(0);
        partial > 0
    });
    bg.signal(libc::SIGKILL);
    bg.wait();
    w.tool_knobs("tsbs_load_timescaledb", json!({}));
    assert!(partial < crate::world::ROWS, "{partial}");
    // The first look records the dead run as interrupted (its one label everywhere).
    crate::resume::resume_cut_load(env, "cut-load", &runs.join("cut-load"));

    // Killed in its query phase, once its second type has started (slow queries).
    w.tool_knobs(
        "tsbs_run_queries_timescaledb",
        json!({"query_delay_ms": 800}),
    );
    let mut args = vec![
        "bench",
        "timescaledb",
        "query",
        "--database-id",
        "pr",
        "--dataset-id",
        "tiny",
        "--queries",
        "3",
        "--stop-timeout",
        "5",
        "--run-id",
        "cut-queries",
    ];
    for t in crate::world::TYPES {
        args.extend(["--query-type", t]);
    }
    let bg = Bg::spawn(env, &args);
    crate::resume::kill_in_queries_and_resume(env, bg, &runs.join("cut-queries"), || {
        w.tool_knobs("tsbs_run_queries_timescaledb", json!({}))
    });
}

/// `psql -Atc SQL` as `postgres` on database `db` of the server at 127.0.0.1:`port` (no
/// password: the workspace's server trusts local connections).
fn psql(port: u64, db: &str, sql: &str) -> std::process::Output {
    let bin = pg_bin().expect("PostgreSQL (the caller checked)");
    std::process::Command::new(bin.join("psql"))
        .args(["-h", "127.0.0.1", "-p", &port.to_string(), "-U", "postgres"])
        .args(["-d", db, "-Atc", sql])
        .env_remove("PGPASSWORD")
        .output()
        .unwrap()
}

/// Whether database `db` exists on the server at 127.0.0.1:`port`.
fn database_exists(port: u64, db: &str) -> bool {
    let sql = format!("SELECT 1 FROM pg_database WHERE datname = '{db}'");
    String::from_utf8_lossy(&psql(port, "postgres", &sql).stdout).trim() == "1"
}

/// The pids of running processes whose command line satisfies `f` (arguments joined by spaces).
fn procs_where(f: impl Fn(&str) -> bool) -> Vec<u32> {
    let mut out = Vec::new();
    for e in std::fs::read_dir("/proc").unwrap().flatten() {
        let Ok(pid) = e.file_name().to_string_lossy().parse::<u32>() else {
            continue;
        };
        let Ok(cmd) = std::fs::read(e.path().join("cmdline")) else {
            continue;
        };
        if f(&String::from_utf8_lossy(&cmd).replace('\0', " ")) && alive(pid) {
            out.push(pid);
        }
    }
    out
}

/// The TSBS loader stand-ins (`testbed emulate tsbs_load_timescaledb`) loading into `port`.
fn loaders_on(port: u64) -> Vec<u32> {
    let flag = format!("--port={port}");
    procs_where(|c| c.contains("emulate tsbs_load_timescaledb") && c.contains(&flag))
}

/// N1: what a person puts in `postgresql.auto.conf` (`ALTER SYSTEM`) or after the include in
/// `postgresql.conf` does not change what runs: tsbsctl's settings are on the command line,
/// the summary shows them as read from the server (durable by default), and the postmaster
/// listens on 127.0.0.1 only. An `ALTER ROLE ... SET` that would change a setting for the
/// benchmark's sessions stops the run with exit 4 naming it.
#[test]
fn the_settings_in_force_are_the_workspaces_or_the_run_stops() {
    let Some(w) = pg_world("the_settings_in_force") else {
        return;
    };
    let env = &w.gt.env;
    let m = prepare_pg(env, "ps")["data"]["manifest"].clone();
    assert_eq!(m["durability"], "durable", "{m:#}");
    let port = m["ports"]["postgres"].as_u64().unwrap();
    let data = ws_dir(env, "ps").join("data");
    let append = |file: &str, text: &str| {
        let p = data.join(file);
        let mut t = std::fs::read_to_string(&p).unwrap();
        t.push_str(text);
        std::fs::write(&p, t).unwrap();
    };
    append(
        "postgresql.auto.conf",
        "listen_addresses = '*'\nsynchronous_commit = off\nwork_mem = '1MB'\nseq_page_cost = 2\n",
    );
    append("postgresql.conf", "\nfsync = off\nmax_connections = 20\n");
    // `verify` names each of them and what it does when the server runs.
    let v = env.run(&["timescaledb", "verify", "--database-id", "ps"]);
    v.ok()
        .says("postgresql.auto.conf sets listen_addresses = '*': tsbsctl's value replaces it")
        .says("postgresql.conf sets fsync = 'off': tsbsctl's value replaces it")
        .says("postgresql.auto.conf sets seq_page_cost = '2': in force when the server runs");
    let r = env.run(&pg_all_args("ps", &[]));
    r.ok();
    let dir = crate::world::run_dir(&r);
    let s = crate::world::summary(&dir);
    assert_eq!(s["status"], "completed", "{s:#}");
    let st = &s["server_settings"];
    assert_eq!(
        st["listening"],
        json!([format!("127.0.0.1:{port}")]),
        "{st:#}"
    );
    for (name, value) in [
        ("synchronous_commit", "on"),
        ("listen_addresses", "127.0.0.1"),
        ("work_mem", "64MB"),
        ("fsync", "on"),
        ("max_connections", "100"),
        ("wal_level", "replica"),
    ] {
        assert_eq!(st["effective"][name]["value"], value, "{name}: {st:#}");
        assert_eq!(st["effective"][name]["source"], "command line", "{name}");
    }
    // A setting tsbsctl does not make is recorded as it is in force, with its source.
    assert_eq!(st["effective"]["seq_page_cost"]["value"], "2", "{st:#}");
    assert_eq!(
        st["effective"]["seq_page_cost"]["source"],
        "configuration file"
    );
    let md = std::fs::read_to_string(dir.join("summary.md")).unwrap();
    assert!(md.contains("- Durability: **durable**"), "{md}");
    assert!(md.contains("`synchronous_commit = on`"), "{md}");
    assert!(md.contains("`listen_addresses = 127.0.0.1`"), "{md}");
    assert!(
        md.contains(&format!("listening on 127.0.0.1:{port}")),
        "{md}"
    );

    // A role setting that applies to the benchmark's sessions: exit 4, named.
    let mut bg = Bg::spawn(env, &["timescaledb", "serve", "--database-id", "ps"]);
    let alter = |sql: &str| psql(port, "postgres", sql);
    bg.wait_serving(|| alter("SELECT 1").status.success());
    assert!(alter("ALTER ROLE postgres SET work_mem = '1MB'")
        .status
        .success());
    bg.interrupt().code(130);
    let mut q = pg_all_args("ps", &[]);
    q[2] = "query";
    let r = env.run(&q);
    r.code(4)
        .says("runs with settings that are not the workspace's")
        .says("work_mem=1MB (role postgres: ALTER ROLE ... SET)");
}

/// Issue 23 §4: a workspace whose `cpu` table was dropped (SQLSTATE 42P01), or whose database
/// was (3D000), no longer holds what its binding claims: `bench timescaledb query` stops with
/// exit 4, the integrity message and the reload command, no query runs, and the workspace's
/// manifest (its binding) is left as it was. Decided by the SQLSTATE, not by the words.
#[test]
fn a_dropped_table_or_database_is_an_integrity_error_with_the_reload_hint() {
    let Some(w) = pg_world("a_dropped_table_or_database_is_an_integrity_error") else {
        return;
    };
    let env = &w.gt.env;
    let m = prepare_pg(env, "pd")["data"]["manifest"].clone();
    let port = m["ports"]["postgres"].as_u64().unwrap();
    env.run(&pg_all_args("pd", &[])).ok();
    let manifest = ws_dir(env, "pd").join("manifest.json");
    let before = std::fs::read(&manifest).unwrap();
    let mut query = pg_all_args("pd", &[]);
    query[2] = "query";
    for (drop, db, missing) in [
        ("DROP TABLE cpu", "benchmark", "(no table cpu)"),
        (
            "DROP DATABASE benchmark",
            "postgres",
            "(no database benchmark)",
        ),
    ] {
        let mut bg = Bg::spawn(env, &["timescaledb", "serve", "--database-id", "pd"]);
        bg.wait_serving(|| psql(port, "postgres", "SELECT 1").status.success());
        let out = psql(port, db, drop);
        assert!(out.status.success(), "{drop}: {out:?}");
        bg.interrupt().code(130);
        let r = env.run(&query);
        r.code(4)
            .says("is bound to dataset")
            .says("its server does not have them")
            .says(missing)
            .says("--database-mode reset --confirm-reset benchmark");
        let events =
            std::fs::read_to_string(crate::world::run_dir(&r).join("events.jsonl")).unwrap();
        assert!(!events.contains("\"step\":\"query:"), "{drop}: {events}");
        assert_eq!(
            std::fs::read(&manifest).unwrap(),
            before,
            "{drop}: the workspace manifest changed"
        );
    }
}

/// PostgreSQL's FATAL ends one client session, not the server: 20 `psql` connections to a
/// missing database while `bench timescaledb all` loads leave the run `completed`, with the
/// FATAL lines counted and explained in summary.md. The readiness probe itself adds none: it
/// waits for `postmaster.pid` to say `ready` before `pg_isready` connects, so the log has no
/// "the database system is starting up" line however slow the start.
#[test]
fn client_fatal_lines_are_counted_and_never_fail_a_run() {
    let Some(w) = pg_world("client_fatal_lines_are_counted") else {
        return;
    };
    let env = &w.gt.env;
    let m = prepare_pg(env, "pf")["data"]["manifest"].clone();
    let port = m["ports"]["postgres"].as_u64().unwrap();
    // About 7 s of load (see the mid-load kill test): time for 20 refused connections.
    w.tool_knobs("tsbs_load_timescaledb", json!({"batch_delay_ms": 500}));
    let args = pg_all_args("pf", &["--batch-size", "100", "--run-id", "fatal-sessions"]);
    let mut bg = Bg::spawn(env, &args);
    bg.wait_for_load(|| !loaders_on(port).is_empty());
    for _ in 0..20 {
        let out = psql(port, "nosuchdb", "select 1");
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(
            err.contains("database \"nosuchdb\" does not exist"),
            "{err}"
        );
    }
    w.tool_knobs("tsbs_load_timescaledb", json!({}));
    let r = bg.wait();
    assert_eq!(r.code, 0, "{}", r.describe());
    let dir = crate::world::run_dir(&r);
    let s = crate::world::summary(&dir);
    assert_eq!(s["status"], "completed", "{s:#}");
    assert_eq!(s["failures"], json!([]), "{s:#}");
    let d = &s["server_diagnostics"];
    assert!(d["fatal_count"].as_u64().unwrap() >= 20, "{d:#}");
    assert_eq!(d["panic_count"], 0, "{d:#}");
    // Left out of summary.json when zero (summaries of earlier versions stay byte-identical).
    assert!(d["crash_count"].is_null(), "{d:#}");
    let md = std::fs::read_to_string(dir.join("summary.md")).unwrap();
    let fatals = d["fatal_count"].as_u64().unwrap();
    assert!(
        md.contains(&format!("fatal errors: {fatals}; panics: 0.")),
        "{md}"
    );
    assert!(md.contains("a FATAL line ends one client session"), "{md}");
    assert!(
        md.contains("FATAL:  database \"nosuchdb\" does not exist"),
        "{md}"
    );
    // No probe connected while the server was starting.
    let mut log = String::new();
    for e in std::fs::read_dir(dir.join("logs")).unwrap().flatten() {
        if e.file_name().to_string_lossy().starts_with("server") {
            log.push_str(&std::fs::read_to_string(e.path()).unwrap());
        }
    }
    assert!(
        log.contains("database system is ready to accept connections"),
        "{log}"
    );
    assert!(!log.contains("the database system is starting up"), "{log}");
    assert!(!log.contains("not yet accepting connections"), "{log}");
}

/// kill -9 of tsbsctl while the loader is writing: no postgres process and no loader
/// survives it, and the next commands see what happened: the lock free (its file stale), the
/// run interrupted, no binding (the load was never verified), the stale `postmaster.pid`
/// cleared by the next start; the next `bench timescaledb all` loads and succeeds. That run
/// then serves `runs rerun` (same flags, dataset, query set and mode) and `runs compare` of
/// two PostgreSQL runs.
#[test]
fn a_tsbsctl_killed_mid_load_leaves_no_postgres_and_the_next_all_recovers() {
    let Some(w) = pg_world("a_tsbsctl_killed_mid_load") else {
        return;
    };
    let env = &w.gt.env;
    let m = prepare_pg(env, "pk")["data"]["manifest"].clone();
    let port = m["ports"]["postgres"].as_u64().unwrap();
    let dir = ws_dir(env, "pk");
    // 2,880 rows in batches of 100, each of the 2 workers pausing 500 ms after each batch:
    // about 7 s of load, far longer than the test needs to act.
    w.tool_knobs("tsbs_load_timescaledb", json!({"batch_delay_ms": 500}));
    let args = pg_all_args(
        "pk",
        &["--batch-size", "100", "--run-id", "killed-mid-load"],
    );
    let mut bg = Bg::spawn(env, &args);
    // Mid-load: the loader has created the database (with durable commits and
    // wal_level=replica, CREATE DATABASE copies the template through the WAL: it takes a
    // while after the loader starts).
    bg.wait_for_load(|| {
        !loaders_on(port).is_empty()
            && !postgres_under(&dir).is_empty()
            && database_exists(port, "benchmark")
    });
    let killed = bg.pid() as u32;
    let loaders = loaders_on(port);
    let postmaster = postgres_under(&dir)[0];
    let mut all = children_of(postmaster);
    all.push(postmaster);
    assert!(all.len() > 1, "the postmaster has its background processes");
    all.extend(&loaders);
    bg.signal(libc::SIGKILL);
    let r = bg.wait();
    assert_eq!(r.code, 128 + libc::SIGKILL, "{}", r.describe());
    assert!(
        wait_until(Duration::from_secs(15), || all.iter().all(|p| !alive(*p))),
        "survived a killed tsbsctl: {:?} (postmaster {postmaster}, loaders {loaders:?})",
        all.iter().filter(|p| alive(**p)).collect::<Vec<_>>()
    );
    assert!(postgres_under(&dir).is_empty() && loaders_on(port).is_empty());

    // The lock: nobody holds it; its file still names the killed process.
    let st = env.run_json(&["workspace", "status", "pk"]);
    let lock = st.ok().json()["data"]["workspaces"][0]["lock"].clone();
    assert_eq!(lock["state"], "stale", "{lock:#}");
    assert_eq!(lock["holder"]["pid"], killed, "{lock:#}");
    assert_eq!(lock["pid_alive"], false, "{lock:#}");
    // The run: interrupted in its load, once somebody looks.
    let show = env.run_json(&["runs", "show", "killed-mid-load"]);
    let shown = show.ok().json()["data"].clone();
    assert_eq!(shown["summary"]["status"], "interrupted", "{shown:#}");
    assert_eq!(
        shown["summary"]["ingestion"]["status"], "interrupted",
        "{shown:#}"
    );
    // The workspace: no load was verified, so none is claimed.
    let ins = env.run_json(&["timescaledb", "inspect", "--database-id", "pk"]);
    let ins = ins.ok().json()["data"].clone();
    assert!(ins["manifest"]["binding"].is_null(), "{ins:#}");
    assert_eq!(ins["manifest"]["data_state"]["loads"], json!([]), "{ins:#}");
    // A query is refused before anything starts, naming the unfinished load and the reset.
    let r = env.run(&[
        "bench",
        "timescaledb",
        "query",
        "--database-id",
        "pk",
        "--dataset-id",
        "tiny",
        "--query-type",
        "lastpoint",
    ]);
    r.code(2)
        .says("run killed-mid-load began loading this workspace and no verified load followed")
        .says("--database-mode reset --confirm-reset benchmark");
    assert!(postgres_under(&dir).is_empty(), "nothing started");
    assert!(ins["locked_by"].is_null(), "{ins:#}");
    assert!(
        dir.join("data/postmaster.pid").exists(),
        "a stale postmaster.pid"
    );

    // The next all says what it found: the server tsbsctl did not stop (PostgreSQL recovers
    // from the unclean stop), and the half-loaded database the loader refuses to replace
    // unless told to (exit 1 with the command that does it).
    w.tool_knobs("tsbs_load_timescaledb", json!({}));
    let r = env.run(&pg_all_args("pk", &[]));
    r.code(1)
        .says("was not stopped by tsbsctl; it is no longer running")
        .says("database \"benchmark\" exists")
        .says("--database-mode reset --confirm-reset benchmark");
    assert!(postgres_under(&dir).is_empty(), "stopped after the failure");
    // Followed as printed, it loads everything and queries.
    let r = env.run(&pg_all_args(
        "pk",
        &["--database-mode", "reset", "--confirm-reset", "benchmark"],
    ));
    r.ok();
    let a = crate::world::run_dir(&r);
    let sa = crate::world::summary(&a);
    assert_eq!(sa["status"], "completed", "{sa:#}");
    let rows = sa["dataset"]["rows"].as_u64().unwrap();
    assert_eq!(rows, crate::world::ROWS);
    assert_eq!(sa["row_count"]["actual"], rows, "{:#}", sa["row_count"]);
    assert_eq!(sa["data_state"]["label"], "as loaded");
    let ws = read_json(&dir.join("manifest.json"));
    assert_eq!(ws["binding"]["rows"], rows);
    assert_eq!(ws["binding"]["run_id"], sa["run_id"]);
    assert!(!dir.join("data/postmaster.pid").exists(), "a clean stop");
    let st = env.run_json(&["workspace", "status", "pk"]);
    let lock = st.ok().json()["data"]["workspaces"][0]["lock"].clone();
    assert_ne!(lock["state"], "live", "{lock:#}");

    // runs rerun: the same flags (the reset included), dataset, query set and mode.
    let r = env.run(&["runs", "rerun", a.to_str().unwrap(), "--json"]);
    r.ok();
    assert_eq!(r.json()["data"]["rerun_of"], sa["run_id"]);
    let b = crate::world::run_dir(&r);
    let sb = crate::world::summary(&b);
    assert_eq!(sb["status"], "completed", "{sb:#}");
    for k in ["label", "edition", "product", "workload"] {
        assert_eq!(sb[k], sa[k], "{k}");
    }
    assert_eq!(sb["edition"], "postgresql");
    assert_eq!(sb["dataset"]["dataset_id"], "tiny");
    assert_eq!(sb["dataset"]["sha256"], sa["dataset"]["sha256"]);
    assert_eq!(sb["query_set"], sa["query_set"]);
    assert_eq!(
        sb["ingestion"]["status"], "completed",
        "the reset loads again"
    );
    assert_eq!(sb["ingestion"]["database_mode"], "reset");
    let mb = read_json(&b.join("manifest.json"));
    assert_eq!(mb["flags"]["rerun_of"], sa["run_id"]);
    let ma = read_json(&a.join("manifest.json"));
    for k in [
        "batch_size",
        "load_workers",
        "query_types",
        "queries",
        "database_mode",
    ] {
        assert_eq!(mb["flags"][k], ma["flags"][k], "{k}");
    }

    // runs compare of the two PostgreSQL runs: both loads compared (same write parameters),
    // every query type judged, the runs named by their PostgreSQL labels.
    let r = env.run(&[
        "runs",
        "compare",
        "--baseline",
        a.to_str().unwrap(),
        "--candidate",
        b.to_str().unwrap(),
        "--json",
    ]);
    r.ok();
    let c = r.json()["data"]["summary"].clone();
    let label = sa["label"].as_str().unwrap();
    assert!(label.ends_with("(no TimescaleDB)"), "{label}");
    assert_eq!(c["baseline"]["label"], label, "{c:#}");
    let cand = &c["candidates"][0];
    assert_eq!(cand["label"], label, "{c:#}");
    assert_ne!(cand["ingestion"]["classification"], "not compared", "{c:#}");
    assert_ne!(
        cand["ingestion"]["classification"], "not comparable",
        "{c:#}"
    );
    assert_eq!(cand["ingestion"]["workers"], json!([2, 2]), "{c:#}");
    assert_eq!(
        cand["ingestion"]["batch_size"],
        json!([3000, 3000]),
        "{c:#}"
    );
    assert_eq!(cand["queries"].as_array().unwrap().len(), 3, "{c:#}");
    let md = std::fs::read_to_string(
        PathBuf::from(r.json()["data"]["comparison_dir"].as_str().unwrap()).join("summary.md"),
    )
    .unwrap();
    assert!(
        md.starts_with("# PostgreSQL (no TimescaleDB) comparison"),
        "{md}"
    );
    assert!(md.contains(&format!("Baseline: **{label}**")), "{md}");
}

/// The upstream TSBS module and the commit the real-tools test builds (its master on
/// 2023-09-21, "Fix panic in timescale target with `iot` use case").
const UPSTREAM_TSBS: &str = "github.com/timescale/tsbs";
const UPSTREAM_TSBS_REV: &str = "37fced794d56d3b33fbf40e55a0f1d3d78d05802";

/// Go's network settings, passed from the test's environment to `go` and tsbsctl (whose
/// builds pass them on), so both reach the module proxy the same way.
const GO_NETWORK: [&str; 10] = [
    "GOPROXY",
    "GONOPROXY",
    "GOPRIVATE",
    "GOSUMDB",
    "GONOSUMDB",
    "GOINSECURE",
    "HTTPS_PROXY",
    "HTTP_PROXY",
    "NO_PROXY",
    "SSL_CERT_FILE",
];

/// A `go` command of the machine's real Go: a private module cache, the network settings of
/// the test's environment, nothing else of the developer's.
fn real_go(go: &Path, tmp: &Path, args: &[&str]) -> std::process::Command {
    let mut c = std::process::Command::new(go);
    c.args(args)
        .env_clear()
        .env("PATH", "/bin:/usr/bin")
        .env("HOME", tmp.join("home"))
        .env("GOPATH", tmp.join("gopath"))
        .env("GOMODCACHE", tmp.join("gomodcache"))
        .env("GOCACHE", tmp.join("gocache"))
        .env("GOFLAGS", "-modcacherw")
        .env("GOTOOLCHAIN", "local")
        .current_dir(tmp)
        .stdin(std::process::Stdio::null());
    for k in GO_NETWORK {
        if let Ok(v) = std::env::var(k) {
            c.env(k, v);
        }
    }
    c
}

/// Copies the tree `from` to `to`, every copy writable (the module cache is read-only).
fn copy_tree(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for e in std::fs::read_dir(from).unwrap().flatten() {
        let (src, dst) = (e.path(), to.join(e.file_name()));
        let t = e.file_type().unwrap();
        if t.is_dir() {
            copy_tree(&src, &dst);
        } else if t.is_file() {
            std::fs::copy(&src, &dst).unwrap();
            let mode = std::fs::metadata(&dst).unwrap().permissions().mode() | 0o200;
            std::fs::set_permissions(&dst, std::fs::Permissions::from_mode(mode)).unwrap();
        }
    }
}

/// The upstream TSBS source at [`UPSTREAM_TSBS_REV`], fetched as the module `go install`
/// fetches (`go mod download`), or taken from `TSBSCTL_TEST_UPSTREAM_TSBS_SRC` (a clone at
/// that commit, for machines whose proxy refuses the module). `Err`: why not (the skip).
fn upstream_source(go: &Path, tmp: &Path) -> Result<PathBuf, String> {
    if let Some(dir) = std::env::var_os("TSBSCTL_TEST_UPSTREAM_TSBS_SRC") {
        return Ok(PathBuf::from(dir));
    }
    let module = format!("{UPSTREAM_TSBS}@{UPSTREAM_TSBS_REV}");
    // Fast first: a proxy that refuses the module answers at once (403 here).
    let pre = wait_bounded(
        real_go(go, tmp, &["list", "-m", "-json", &module])
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .unwrap(),
        Duration::from_secs(30),
    );
    if !pre.status.success() {
        let err = String::from_utf8_lossy(&pre.stderr);
        return Err(format!(
            "`go list -m {module}` failed ({}): {}",
            pre.status,
            err.lines().next().unwrap_or("no output")
        ));
    }
    let dl = wait_bounded(
        real_go(go, tmp, &["mod", "download", "-json", &module])
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .unwrap(),
        Duration::from_secs(600),
    );
    let v: serde_json::Value = serde_json::from_slice(&dl.stdout).unwrap_or_default();
    match v["Dir"].as_str() {
        Some(d) if dl.status.success() => Ok(PathBuf::from(d)),
        _ => Err(format!(
            "`go mod download {module}` failed ({}): {}{}",
            dl.status,
            v["Error"].as_str().unwrap_or_default(),
            String::from_utf8_lossy(&dl.stderr)
        )),
    }
}

/// The same flow with the REAL upstream TSBS tools, where the machine can fetch the module:
/// its source at [`UPSTREAM_TSBS_REV`] as a git checkout (with stand-in main packages for the
/// tools of the other products, which upstream does not have: GreptimeDB's and InfluxDB 3's
/// loaders; and its go.sum completed, see below), built by `tsbsctl env prepare --go <the real go> --tsbs-dir` with the real Go
/// (tsbsctl records and re-hashes every binary it runs, so it runs only what it built), then
/// `bench timescaledb all` on the real PostgreSQL with the upstream generators, loader and
/// runner. Runs in the normal suite wherever its inputs exist (the build takes minutes there);
/// where PostgreSQL, Go or the module is missing (the Go module proxy refuses the TSBS
/// repositories on our CI machines) it says SKIP with the reason within seconds.
/// `TSBSCTL_TEST_UPSTREAM_TSBS_SRC=DIR` points it at a checkout instead of the proxy.
#[test]
fn real_upstream_tsbs_tools_run_the_postgresql_flow() {
    const TEST: &str = "real_upstream_tsbs_tools_run_the_postgresql_flow";
    if pg_bin().is_none() {
        skip(
            TEST,
            "no PostgreSQL under /usr/lib/postgresql (.ci/run installs it)",
        );
        return;
    }
    let which = std::process::Command::new("sh")
        .args(["-c", "command -v go"])
        .output()
        .unwrap();
    let go = PathBuf::from(String::from_utf8_lossy(&which.stdout).trim());
    if !which.status.success() || !go.is_file() {
        skip(TEST, "no go on PATH");
        return;
    }
    let mut env = TestEnv::new();
    std::fs::set_permissions(env.path(), std::fs::Permissions::from_mode(0o755)).unwrap();
    let tmp = env.path().join("go-tmp");
    std::fs::create_dir_all(tmp.join("home")).unwrap();
    let src = match upstream_source(&go, &tmp) {
        Ok(s) => s,
        Err(why) => {
            skip(
                TEST,
                &format!("the upstream TSBS module cannot be had here: {why}"),
            );
            return;
        }
    };

    // The checkout: upstream's tree, plus stand-ins for the tools upstream lacks.
    let checkout = env.path().join("upstream-tsbs");
    copy_tree(&src, &checkout);
    let _ = std::fs::remove_dir_all(checkout.join(".git"));
    let (standins, _) = testbed::tsbs_repo::create(&env.path().join("standins")).unwrap();
    let mut stood_in = Vec::new();
    for tool in testbed::tsbs_repo::TOOLS {
        if !checkout.join("cmd").join(tool).is_dir() {
            copy_tree(
                &standins.join("cmd").join(tool),
                &checkout.join("cmd").join(tool),
            );
            stood_in.push(tool);
        }
    }
    let real = [
        "tsbs_generate_data",
        "tsbs_generate_queries",
        "tsbs_load_timescaledb",
        "tsbs_run_queries_timescaledb",
    ];
    assert!(
        real.iter().all(|t| !stood_in.contains(t)),
        "upstream has the four tools: {stood_in:?}"
    );
    // Upstream's go.sum lacks a line Go 1.16 and later insist on (github.com/tklauser/numcpus,
    // "missing go.sum entry"): completed from the checksum database, as `go install
    // pkg@version` completes it, and said in the commit.
    let mut tidy = vec!["list", "-mod=mod", "-deps"];
    let pkgs: Vec<String> = real.iter().map(|t| format!("./cmd/{t}")).collect();
    tidy.extend(pkgs.iter().map(String::as_str));
    let mut c = real_go(&go, &tmp, &tidy);
    c.current_dir(&checkout)
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped());
    let out = wait_bounded(c.spawn().unwrap(), Duration::from_secs(600));
    assert!(
        out.status.success(),
        "go list -mod=mod: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let git = |args: &[&str]| testbed::tsbs_repo::git(&checkout, args).unwrap();
    git(&["init", "-q"]);
    git(&["add", "-A"]);
    git(&[
        "commit",
        "-q",
        "-m",
        &format!(
            "{UPSTREAM_TSBS} {UPSTREAM_TSBS_REV}, go.sum completed, stand-ins for {stood_in:?}"
        ),
    ]);

    // tsbsctl builds it with the real Go (its PATH has git, the server's runuser).
    env.env("PATH", "/bin:/usr/bin:/usr/sbin:/sbin");
    for k in GO_NETWORK {
        if let Ok(v) = std::env::var(k) {
            env.env(k, v);
        }
    }
    let args = [
        "env",
        "prepare",
        "--go",
        go.to_str().unwrap(),
        "--tsbs-dir",
        checkout.to_str().unwrap(),
        "--json",
    ];
    let r = run_command(env.cmd(&args), &args, Duration::from_secs(600));
    if r.code != 0 {
        // The build log says why (it goes with the temp directory).
        let logs: Vec<String> = all_files(&env.root.join("environment/tsbs"))
            .into_iter()
            .filter(|p| p.ends_with("build.log"))
            .map(|p| std::fs::read_to_string(p).unwrap_or_default())
            .collect();
        let log = logs.join("\n");
        let tail: Vec<&str> = log.lines().rev().take(60).collect();
        panic!(
            "{}\n--- build.log (last lines) ---\n{}",
            r.describe(),
            tail.into_iter().rev().collect::<Vec<_>>().join("\n")
        );
    }
    let bins = std::fs::read_dir(env.root.join("environment/tsbs"))
        .unwrap()
        .flatten()
        .map(|e| e.path().join("bin"))
        .find(|b| b.is_dir())
        .expect("a TSBS build directory");
    for tool in real {
        // The upstream tool: its build info names upstream's dependencies (a stand-in has none).
        let out = real_go(
            &go,
            &tmp,
            &["version", "-m", bins.join(tool).to_str().unwrap()],
        )
        .output()
        .unwrap();
        let info = String::from_utf8_lossy(&out.stdout);
        assert!(info.contains(UPSTREAM_TSBS), "{tool}: {info}");
        assert!(info.contains("github.com/spf13/pflag"), "{tool}: {info}");
    }

    // The flow of the stand-in test, with the real tools.
    env.run_json(&["timescaledb", "install"]).ok();
    prepare_pg(&env, "up1");
    let r = env.run(&pg_all_args("up1", &[]));
    r.ok();
    let dir = crate::world::run_dir(&r);
    let s = crate::world::summary(&dir);
    assert_eq!(s["status"], "completed", "{s:#}");
    assert_eq!(s["dataset"]["rows"], crate::world::ROWS);
    assert_eq!(
        s["row_count"]["actual"],
        crate::world::ROWS,
        "{:#}",
        s["row_count"]
    );
    let st = &s["storage"];
    for k in [
        "database_bytes",
        "table_bytes",
        "index_bytes",
        "load_wal_bytes",
    ] {
        assert!(st[k].as_u64().unwrap() > 0, "{k}: {st:#}");
    }
    let v = s["target"]["version"].as_str().unwrap();
    assert_eq!(s["label"], format!("PostgreSQL {v} (no TimescaleDB)"));
    assert_eq!(s["environment"]["tsbs_commit"], git(&["rev-parse", "HEAD"]));
    assert_eq!(
        s["queries"].as_array().unwrap().len(),
        crate::world::TYPES.len()
    );
    for q in s["queries"].as_array().unwrap() {
        assert_eq!(q["status"], "completed", "{q:#}");
        // --burn-in=1 --max-queries=3: the first query (the connection setup) uncounted.
        assert_eq!(q["query_count"], 2, "{q:#}");
    }
    let md = std::fs::read_to_string(dir.join("summary.md")).unwrap();
    assert!(md.contains("| Database (`pg_database_size`) |"), "{md}");
    assert!(md.contains("| WAL segments (`pg_wal/`) |"), "{md}");
}

/// Whether PostgreSQL lists `timescaledb` in `pg_available_extensions`: its control file is in
/// the installation's extension directory (what that view reads).
fn timescaledb_available() -> Option<PathBuf> {
    let bin = pg_bin()?;
    let version = bin.parent()?.file_name()?.to_string_lossy().into_owned();
    let control = PathBuf::from(format!(
        "/usr/share/postgresql/{version}/extension/timescaledb.control"
    ));
    control.is_file().then_some(control)
}

/// The published TimescaleDB numbers come from hypertables: `bench timescaledb all` in
/// timescaledb mode with `--chunk-time` and `--partitions` on a real TimescaleDB extension
/// (where one is installed: `.ci/run` uses it when present, else this says SKIP). The loader
/// makes `cpu` a hypertable with the chunk interval and space partitions asked for, every row
/// is counted, the label names both versions, and the queries (with `time_bucket`) complete.
#[test]
fn hypertables_on_a_real_timescaledb() {
    const TEST: &str = "hypertables_on_a_real_timescaledb";
    if timescaledb_available().is_none() {
        skip(
            TEST,
            "timescaledb is not in pg_available_extensions (no timescaledb.control in the PostgreSQL installation; TimescaleDB is not packaged for Debian 12: build it from source, see README)",
        );
        return;
    }
    let Some(w) = pg_world(TEST) else {
        return;
    };
    let env = &w.gt.env;
    let port = free_port_block(1).to_string();
    let p = env.run_json(&[
        "timescaledb",
        "prepare",
        "--database-id",
        "ht",
        "--mode",
        "timescaledb",
        "--port",
        &port,
    ]);
    let label = p.ok().json()["data"]["label"].as_str().unwrap().to_string();
    assert!(label.starts_with("TimescaleDB 2."), "{label}");
    let r = env.run(&pg_all_args(
        "ht",
        &["--chunk-time", "2h", "--partitions", "2"],
    ));
    r.ok();
    let dir = crate::world::run_dir(&r);
    let s = crate::world::summary(&dir);
    assert_eq!(s["status"], "completed", "{s:#}");
    assert_eq!(s["label"], label);
    let rows = s["dataset"]["rows"].as_u64().unwrap();
    assert_eq!(s["row_count"]["actual"], rows, "{:#}", s["row_count"]);
    for q in s["queries"].as_array().unwrap() {
        assert_eq!(q["status"], "completed", "{q:#}");
    }
    let st = &s["server_settings"];
    assert_eq!(
        st["effective"]["shared_preload_libraries"]["value"], "timescaledb",
        "{st:#}"
    );

    // The table the loader made is a hypertable with 2h chunks over 2 host partitions.
    let mut bg = Bg::spawn(env, &["timescaledb", "serve", "--database-id", "ht"]);
    let port_n: u64 = port.parse().unwrap();
    let ask = |sql: &str| {
        let o = psql(port_n, "benchmark", sql);
        String::from_utf8_lossy(&o.stdout).trim().to_string()
    };
    bg.wait_serving(|| !ask("SELECT 1").is_empty());
    assert_eq!(
        ask("SELECT num_dimensions FROM timescaledb_information.hypertables WHERE hypertable_name = 'cpu'"),
        "2"
    );
    assert_eq!(
        ask("SELECT time_interval FROM timescaledb_information.dimensions WHERE hypertable_name = 'cpu' AND dimension_type = 'Time'"),
        "02:00:00"
    );
    assert_eq!(
        ask("SELECT num_partitions FROM timescaledb_information.dimensions WHERE hypertable_name = 'cpu' AND dimension_type = 'Space'"),
        "2"
    );
    let chunks: u64 = ask("SELECT count(*) FROM show_chunks('cpu')")
        .parse()
        .unwrap();
    assert!(chunks > 1, "{chunks} chunks");
    bg.interrupt().code(130);
}
