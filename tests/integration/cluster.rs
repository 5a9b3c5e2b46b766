//! Issue 25 §1: a managed local GreptimeDB cluster (the emulator's metasrv, datanodes and
//! frontends) with its metadata in a real etcd (Debian's `etcd-server`, installed by
//! `.ci/run`). SKIP when no etcd is on this machine.

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use serde_json::{json, Value};

use crate::util::*;
use crate::world::*;

/// Rows of the cluster test's dataset: 8 hosts × one day at 60 s.
const CROWS: u64 = 8 * 1440;

pub(crate) fn etcd() -> Option<PathBuf> {
    std::env::var_os("PATH")
        .into_iter()
        .flat_map(|p| std::env::split_paths(&p).collect::<Vec<_>>())
        .map(|d| d.join("etcd"))
        .chain(std::iter::once(PathBuf::from("/usr/bin/etcd")))
        .find(|p| p.is_file())
}

/// A bench world with cluster workspace `c1` (3 datanodes, 2 frontends) prepared.
pub(crate) fn cluster_world() -> Option<(World, PathBuf)> {
    let Some(etcd) = etcd() else {
        eprintln!(
            "SKIP: no etcd on PATH or at /usr/bin/etcd (Debian: apt-get install etcd-server)"
        );
        return None;
    };
    let (gt, knobs_dir) = unprepared();
    gt.run(&["env", "prepare"]).ok();
    // Frontend 0 (4) + frontend 1 (4) + metasrv (2) + 3 datanodes (6) + etcd (2).
    let port = free_port_block(18).to_string();
    let e = etcd.to_string_lossy().into_owned();
    let r = gt.run_json(&[
        "greptimedb",
        "prepare",
        "--database-id",
        "c1",
        "--version",
        STABLE,
        "--http-port",
        &port,
        "--topology",
        "cluster",
        "--datanodes",
        "3",
        "--frontends",
        "2",
        "--etcd",
        &e,
    ]);
    r.ok();
    Some((World { gt, knobs_dir }, etcd))
}

/// Processes whose command line mentions `needle` (the workspace directory).
pub(crate) fn processes_mentioning(needle: &str) -> Vec<(u32, String)> {
    let mut out = Vec::new();
    for e in std::fs::read_dir("/proc").unwrap().flatten() {
        let Ok(pid) = e.file_name().to_string_lossy().parse::<u32>() else {
            continue;
        };
        let Ok(raw) = std::fs::read(e.path().join("cmdline")) else {
            continue;
        };
        let cmd = String::from_utf8_lossy(&raw).replace('\0', " ");
        if cmd.contains(needle) && pid != std::process::id() {
            out.push((pid, cmd));
        }
    }
    out
}

/// Waits (bounded) until no process mentions `dir`; the leftovers otherwise.
pub(crate) fn gone_within(dir: &Path, limit: Duration) -> Vec<(u32, String)> {
    let needle = dir.to_string_lossy().into_owned();
    let until = Instant::now() + limit;
    loop {
        let left = processes_mentioning(&needle);
        if left.is_empty() || Instant::now() > until {
            return left;
        }
        std::thread::sleep(Duration::from_millis(100));
    }
}

fn cluster_info(endpoint: &str) -> Vec<Value> {
    let r = reqwest::blocking::Client::builder()
        .no_proxy()
        .timeout(Duration::from_secs(10))
        .build()
        .unwrap()
        .post(format!("{endpoint}/v1/sql"))
        .form(&[(
            "sql",
            "SELECT peer_id, peer_type, peer_addr FROM information_schema.cluster_info ORDER BY peer_id",
        )])
        .send()
        .unwrap();
    let v: Value = r.json().unwrap();
    v["output"][0]["records"]["rows"]
        .as_array()
        .cloned()
        .unwrap_or_default()
}

#[test]
fn a_managed_cluster_prepares_serves_benchmarks_and_leaves_nothing_behind() {
    let Some((w, etcd)) = cluster_world() else {
        return;
    };
    let ws = w.gt.ws_dir("c1");
    let m = w.gt.manifest("c1");
    let t = &m["topology"];
    assert_eq!(t["mode"], "cluster");
    assert_eq!(t["datanodes"], 3);
    assert_eq!(t["frontends"], 2);
    assert_eq!(t["metadata_store"]["kind"], "etcd");
    assert_eq!(
        t["metadata_store"]["path"],
        std::fs::canonicalize(&etcd)
            .unwrap()
            .to_string_lossy()
            .as_ref()
    );
    assert!(t["metadata_store"]["version"]
        .as_str()
        .unwrap()
        .starts_with('3'));
    assert_eq!(t["metadata_store"]["sha256"].as_str().unwrap().len(), 64);
    let ports = m["ports"].as_object().unwrap();
    assert_eq!(ports.len(), 18, "{ports:?}");
    // A second prepare reuses it; another topology is refused with nothing changed.
    w.run(&["greptimedb", "prepare", "--database-id", "c1"])
        .ok();
    w.run(&[
        "greptimedb",
        "prepare",
        "--database-id",
        "c1",
        "--datanodes",
        "2",
    ])
    .code(2)
    .says("it cannot change to --datanodes 2");
    w.run(&[
        "greptimedb",
        "prepare",
        "--database-id",
        "c1",
        "--topology",
        "standalone",
    ])
    .code(2)
    .says("cannot become standalone");
    w.run(&[
        "greptimedb",
        "prepare",
        "--database-id",
        "s9",
        "--datanodes",
        "2",
    ])
    .code(2)
    .says("--datanodes applies to a cluster only");
    assert!(!w.gt.ws_dir("s9").exists());
    assert_eq!(w.gt.manifest("c1"), m);

    // The whole benchmark through the cluster: the loader's two workers write through both
    // frontends.
    let mut a = vec![
        "bench",
        "greptimedb",
        "all",
        "--database-id",
        "c1",
        "--stop-timeout",
        "20",
        "--startup-timeout",
        CLUSTER_STARTUP,
        "--load-workers",
        "2",
        "--queries",
        "2",
        "--json",
    ];
    // 8 hosts, and the cpu table split into 8 regions by hostname before the load.
    a.extend([
        "--profile",
        "smoke",
        "--scale",
        "8",
        "--log-interval",
        "60s",
        "--dataset-id",
        "h8",
        "--partitions",
        "8",
        "--partition-column",
        "hostname",
    ]);
    for q in TYPES {
        a.extend(["--query-type", q]);
    }
    let r = w.run(&a);
    r.ok();
    let dir = run_dir(&r);
    let s: Value =
        serde_json::from_slice(&std::fs::read(dir.join("summary.json")).unwrap()).unwrap();
    assert_eq!(s["status"], "completed", "{s:#}");
    assert_eq!(s["row_count"]["actual"], CROWS);
    // Eight regions, counted after the load.
    let rg = &s["partitions"]["regions"];
    let regions = rg["regions"].as_array().unwrap();
    assert_eq!(regions.len(), 8, "{rg}");
    let rows: Vec<u64> = regions
        .iter()
        .map(|r| r["rows"].as_u64().unwrap())
        .collect();
    assert_eq!(rows, vec![1440; 8], "{rg}");
    assert_eq!(rg["rows_match"], true);
    // The statistics come from the datanodes' heartbeats (late, as on a real cluster): read
    // until they added up, every reading recorded.
    let readings = rg["readings"].as_array().unwrap();
    assert_eq!(readings.last().unwrap(), &json!(8 * 1440), "{rg}");
    assert!(rg["waited_s"].as_f64().unwrap() < 30.0, "{rg}");
    // Spread over the datanodes (node ids 1-3) round-robin, one selector turn per region, as
    // a real v1.0.2 cluster placed them: the schema probe's one-region table took the first
    // turn (peer 1), so the 8 regions are on peers 2,3,1,2,3,1,2,3; each datanode stores its
    // own regions' rows.
    let peers: Vec<u64> = regions
        .iter()
        .map(|r| r["peer_id"].as_u64().unwrap())
        .collect();
    assert_eq!(peers, [2, 3, 1, 2, 3, 1, 2, 3], "{rg}");
    assert_eq!(s["row_count"]["ok"], true);
    // The load step recorded the frontends its two workers wrote through: both.
    let events = std::fs::read_to_string(dir.join("events.jsonl")).unwrap();
    let used = events
        .lines()
        .map(|l| serde_json::from_str::<Value>(l).unwrap())
        .find(|e| e["step"] == "load" && e["data"]["urls_in_use"].is_array())
        .unwrap_or_else(|| panic!("no load step with urls_in_use:\n{events}"));
    let fronts: Vec<String> = (0..2)
        .map(|f| {
            let key = if f == 0 {
                "http".to_string()
            } else {
                format!("frontend-{f}-http")
            };
            format!("http://127.0.0.1:{}", m["ports"][&key])
        })
        .collect();
    assert_eq!(used["data"]["urls_in_use"], serde_json::json!(fronts));
    assert_eq!(s["target"]["urls"], serde_json::json!(fronts));
    assert_eq!(s["target"]["topology"], m["topology"]);
    let md = std::fs::read_to_string(dir.join("summary.md")).unwrap();
    assert!(
        md.contains("Deployment (managed local cluster): 1 METASRV, 3 DATANODE, 2 FRONTEND")
            && md.contains("the load wrote through 2 of them"),
        "{md}"
    );
    // Each its own bullet, and the region table its own block (both ran together once).
    assert!(md.contains("worker(s))\n- Deployment"), "{md}");
    assert!(md.contains("\n\n| Region | Region id |"), "{md}");
    // The roles' data homes and logs, and etcd's data counted as metadata.
    for d in ["etcd", "datanode-1", "datanode-2", "datanode-3"] {
        assert!(ws.join("data").join(d).is_dir(), "{d}");
    }
    for l in ["etcd", "metasrv", "datanode-1", "frontend-0", "frontend-1"] {
        assert!(ws.join("logs").join(l).is_dir(), "{l}");
    }
    let st = &s["storage"];
    assert!(st["metadata_bytes"].as_u64().unwrap_or(0) > 0, "{st:#}");
    assert!(st["wal_bytes"].as_u64().unwrap() > 0, "{st:#}");
    // The run's server logs (one per start: load, footprint restart, queries).
    let mut logs: Vec<PathBuf> = std::fs::read_dir(dir.join("logs"))
        .unwrap()
        .flatten()
        .map(|e| e.path())
        .filter(|p| {
            p.file_name()
                .unwrap()
                .to_string_lossy()
                .starts_with("server-")
        })
        .collect();
    logs.sort();
    assert!(!logs.is_empty());
    let log = std::fs::read_to_string(logs.last().unwrap()).unwrap();
    assert!(log.contains("tsbsctl cluster: ready"), "{log}");
    assert!(log.contains("tsbsctl cluster: etcd stopped"), "{log}");
    // Stopped in reverse order: frontends first, etcd last.
    let pos = |s: &str| log.rfind(s).unwrap_or_else(|| panic!("{s} in\n{log}"));
    assert!(pos("frontend-1 stopped") < pos("datanode-3 stopped"));
    assert!(pos("datanode-1 stopped") < pos("metasrv stopped"));
    assert!(pos("metasrv stopped") < pos("etcd stopped"));
    assert!(gone_within(&ws, Duration::from_secs(5)).is_empty());
    // A cluster is neither copied nor rerun into a standalone workspace.
    w.run(&[
        "greptimedb",
        "copy",
        "--source-database-id",
        "c1",
        "--database-id",
        "c2",
        "--version",
        STABLE,
    ])
    .code(2)
    .says("copying a cluster is not supported yet");
    let run_id = s["run_id"].as_str().unwrap().to_string();
    w.run(&["runs", "rerun", &run_id, "--database-id", "c3"])
        .code(2)
        .says("--topology cluster --datanodes 3 --frontends 2");
    assert!(!w.gt.ws_dir("c2").exists() && !w.gt.ws_dir("c3").exists());

    // Flush and compaction in a cluster: the table states come from region statistics the
    // datanodes send with their heartbeats, so they are read until a heartbeat changes nothing
    // (read at once after the flush, a real v1.0.2 cluster still showed its memtables).
    let c = w.run(&[
        "bench",
        "greptimedb",
        "compact",
        "--database-id",
        "c1",
        "--stop-timeout",
        "20",
        "--json",
    ]);
    c.ok();
    let cdir = run_dir(&c);
    let events = std::fs::read_to_string(cdir.join("events.jsonl")).unwrap();
    let state = |step: &str| -> Value {
        events
            .lines()
            .map(|l| serde_json::from_str::<Value>(l).unwrap())
            .rfind(|e| e["step"] == step && e["data"]["regions"].is_array())
            .unwrap_or_else(|| panic!("no {step} in\n{events}"))["data"]
            .clone()
    };
    let flushed = state("state-after-flush");
    assert_eq!(flushed["region_count"], 8, "{flushed:#}");
    assert_eq!(flushed["memtable_size"], 0, "{flushed:#}");
    assert!(flushed["sst_num"].as_u64().unwrap() >= 8, "{flushed:#}");
    assert!(
        flushed["statistics_waited_s"].as_f64().unwrap() > 0.0,
        "{flushed:#}"
    );
    let cmd = std::fs::read_to_string(cdir.join("summary.md")).unwrap();
    assert!(!cmd.contains("wrote through  of them"), "{cmd}");

    // Serving: cluster_info lists every node through every frontend.
    let f0 = endpoint_of(&w.gt.manifest("c1"));
    let mut bg = w.gt.serve_bg(
        "c1",
        &["--startup-timeout", CLUSTER_STARTUP, "--stop-timeout", "20"],
    );
    bg.wait_serving(|| cluster_info(&f0).len() == 6);
    let rows = cluster_info(&f0);
    let types: Vec<&str> = rows.iter().map(|r| r[1].as_str().unwrap()).collect();
    assert_eq!(types.iter().filter(|t| **t == "DATANODE").count(), 3);
    assert_eq!(types.iter().filter(|t| **t == "FRONTEND").count(), 2);
    assert_eq!(types.iter().filter(|t| **t == "METASRV").count(), 1);
    assert!(
        rows.iter()
            .all(|r| r[2].as_str().unwrap().starts_with("127.0.0.1:")),
        "{rows:?}"
    );

    // kill -9 of tsbsctl: every role goes with it (parent-death signals down the chain).
    bg.signal(libc::SIGKILL);
    let _ = bg.wait();
    let left = gone_within(&ws, Duration::from_secs(10));
    assert!(left.is_empty(), "left behind: {left:?}");

    // And the next start finds the same data (etcd's metadata, the datanodes' regions).
    let mut bg = w.gt.serve_bg(
        "c1",
        &["--startup-timeout", CLUSTER_STARTUP, "--stop-timeout", "20"],
    );
    bg.wait_serving(|| cluster_info(&f0).len() == 6);
    assert_eq!(count_rows(&f0), CROWS);
    // EXPLAIN ANALYZE shows the MergeScan's sub-stages as v1.0.2 does: stage 1 has one row per
    // region (node 0..7), each region's own scan, wherever its datanode is.
    let plan = sql_rows(&f0, "EXPLAIN ANALYZE VERBOSE SELECT * FROM cpu");
    let stage1: Vec<&Value> = plan.iter().filter(|r| r[0] == 1).collect();
    assert_eq!(stage1.len(), 8, "{plan:#?}");
    let nodes: Vec<u64> = stage1.iter().map(|r| r[1].as_u64().unwrap()).collect();
    assert_eq!(nodes, (0..8).collect::<Vec<u64>>(), "{plan:#?}");
    let scanned: u64 = stage1
        .iter()
        .map(|r| {
            let p = r[2].as_str().unwrap();
            assert!(p.starts_with("SeqScan: region="), "{p}");
            let n = p.split("output_rows: ").nth(1).unwrap();
            n[..n.find(',').unwrap()].parse::<u64>().unwrap()
        })
        .sum();
    assert_eq!(scanned, CROWS, "{plan:#?}");
    // A role that dies is a failure naming it and its log.
    let victim = processes_mentioning(&ws.join("data/datanode-2").to_string_lossy())
        .into_iter()
        .find(|(_, c)| c.contains("datanode") && c.contains("start"))
        .expect("datanode-2 runs");
    // SAFETY: a process of this test's cluster.
    unsafe { libc::kill(victim.0 as i32, libc::SIGKILL) };
    let r = bg.wait();
    assert_ne!(r.code, 0);
    assert!(
        r.stderr.contains("datanode-2 (pid") && r.stderr.contains("its log:"),
        "the error names the role and its log: {}",
        r.stderr
    );
    let log = std::fs::read_to_string(ws.join("logs/server.log")).unwrap();
    assert!(
        log.contains("FAILED: datanode-2") && log.contains("logs/datanode-2"),
        "{log}"
    );
    assert!(gone_within(&ws, Duration::from_secs(10)).is_empty());
}

/// The rows of `sql`'s answer in the benchmark database.
fn sql_rows(endpoint: &str, sql: &str) -> Vec<Value> {
    let v: Value = reqwest::blocking::Client::builder()
        .no_proxy()
        .timeout(Duration::from_secs(10))
        .build()
        .unwrap()
        .post(format!("{endpoint}/v1/sql"))
        .form(&[("sql", sql), ("db", "benchmark")])
        .send()
        .unwrap()
        .json()
        .unwrap();
    v["output"][0]["records"]["rows"]
        .as_array()
        .cloned()
        .unwrap_or_else(|| panic!("{v}"))
}

fn count_rows(endpoint: &str) -> u64 {
    let rows = sql_rows(endpoint, "SELECT count(*) FROM cpu");
    rows[0][0].as_u64().unwrap_or_else(|| panic!("{rows:?}"))
}

/// The metasrv's `postgres-store`: a cluster whose metadata lives in a PostgreSQL server of the
/// workspace's own, made by this machine's `initdb` (Debian's PostgreSQL, as `.ci/run` installs
/// it) and run as PostgreSQL's unprivileged user when the tests run as root.
#[test]
fn a_cluster_keeps_its_metadata_in_a_postgresql_of_its_own() {
    let Some(pg_bin) = crate::timescaledb::pg_bin() else {
        skip(
            "a_cluster_keeps_its_metadata_in_a_postgresql_of_its_own",
            "no PostgreSQL under /usr/lib/postgresql (.ci/run installs it)",
        );
        return;
    };
    let (gt, knobs_dir) = unprepared();
    // PostgreSQL may run as another user: it must reach its directories under the test root.
    {
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(gt.env.path(), std::fs::Permissions::from_mode(0o755)).unwrap();
    }
    gt.run(&["env", "prepare"]).ok();
    let w = World { gt, knobs_dir };
    // Frontend 0 (4) + metasrv (2) + 2 datanodes (4) + PostgreSQL (1).
    let port = free_port_block(11).to_string();
    let pg = pg_bin.to_string_lossy().into_owned();
    let prepare = |id: &str, extra: &[&str]| {
        let mut a = vec![
            "greptimedb",
            "prepare",
            "--database-id",
            id,
            "--version",
            STABLE,
            "--http-port",
            &port,
            "--topology",
            "cluster",
            "--datanodes",
            "2",
        ];
        a.extend_from_slice(extra);
        w.run(&a)
    };
    // Each store's flag goes with its store only.
    prepare(
        "p9",
        &["--metadata-store", "postgres", "--etcd", "/usr/bin/etcd"],
    )
    .code(2)
    .says("--etcd applies to --metadata-store etcd only");
    prepare("p9", &["--metadata-store", "mysql"])
        .code(2)
        .says("use --metadata-store etcd or postgres");
    assert!(!w.gt.ws_dir("p9").exists());
    prepare("p1", &["--metadata-store", "postgres", "--pg-bin", &pg]).ok();
    let ws = w.gt.ws_dir("p1");
    let m = w.gt.manifest("p1");
    let store = &m["topology"]["metadata_store"];
    assert_eq!(store["kind"], "postgres");
    assert_eq!(
        store["path"],
        std::fs::canonicalize(pg_bin.join("postgres"))
            .unwrap()
            .to_string_lossy()
            .as_ref()
    );
    assert!(store["version"]
        .as_str()
        .unwrap()
        .starts_with(|c: char| c.is_ascii_digit()));
    let ports = m["ports"].as_object().unwrap();
    assert_eq!(ports.len(), 11, "{ports:?}");
    let pg_port = ports["metadata-postgres"].as_u64().unwrap() as u16;
    w.run(&[
        "greptimedb",
        "prepare",
        "--database-id",
        "p1",
        "--metadata-store",
        "etcd",
    ])
    .code(2)
    .says("it cannot change to --metadata-store etcd");
    assert_eq!(w.gt.manifest("p1"), m);

    let mut a = vec![
        "bench",
        "greptimedb",
        "all",
        "--database-id",
        "p1",
        "--stop-timeout",
        "20",
        "--startup-timeout",
        CLUSTER_STARTUP,
        "--queries",
        "2",
        "--json",
    ];
    a.extend(tiny());
    for q in TYPES {
        a.extend(["--query-type", q]);
    }
    let r = w.run(&a);
    r.ok();
    let dir = run_dir(&r);
    let s: Value =
        serde_json::from_slice(&std::fs::read(dir.join("summary.json")).unwrap()).unwrap();
    assert_eq!(s["status"], "completed", "{s:#}");
    assert_eq!(s["row_count"]["ok"], true, "{s:#}");
    let rows = s["row_count"]["actual"].as_u64().unwrap();
    assert!(rows > 0);
    let md = std::fs::read_to_string(dir.join("summary.md")).unwrap();
    assert!(md.contains("metadata in postgres "), "{md}");
    // initdb made the store's cluster once; its data is metadata in the footprint.
    assert!(ws.join("data/postgres/data/PG_VERSION").is_file());
    assert!(s["storage"]["metadata_bytes"].as_u64().unwrap_or(0) > 1_000_000);
    let all_logs: String = std::fs::read_dir(dir.join("logs"))
        .unwrap()
        .flatten()
        .filter(|e| e.file_name().to_string_lossy().starts_with("server-"))
        .map(|e| std::fs::read_to_string(e.path()).unwrap())
        .collect();
    assert_eq!(
        all_logs
            .matches("initdb made the metadata store's PostgreSQL cluster")
            .count(),
        1,
        "{all_logs}"
    );
    assert!(
        all_logs.contains(&format!(
            "Metadata store postgresql://postgres@127.0.0.1:{pg_port}/postgres is ready (PostgreSQL"
        )),
        "{all_logs}"
    );
    let pos = |s: &str| {
        all_logs
            .rfind(s)
            .unwrap_or_else(|| panic!("{s} in\n{all_logs}"))
    };
    assert!(pos("metasrv stopped") < pos("postgres stopped"));
    // The fast shutdown: postgres exits 0 on SIGINT.
    assert!(
        all_logs.contains("postgres stopped (exit status: 0)"),
        "{all_logs}"
    );
    assert!(gone_within(&ws, Duration::from_secs(5)).is_empty());

    // Serving: the routes and nodes are rows of the metasrv's table in that PostgreSQL.
    let f0 = endpoint_of(&w.gt.manifest("p1"));
    let mut bg = w.gt.serve_bg(
        "p1",
        &["--startup-timeout", CLUSTER_STARTUP, "--stop-timeout", "20"],
    );
    bg.wait_serving(|| cluster_info(&f0).len() == 4);
    let mut c = postgres::Config::new()
        .host("127.0.0.1")
        .port(pg_port)
        .user("postgres")
        .dbname("postgres")
        .connect(postgres::NoTls)
        .expect("the store's PostgreSQL answers on its port");
    let keys: Vec<String> = c
        .query("SELECT k FROM greptime_metakv ORDER BY k", &[])
        .unwrap()
        .iter()
        .map(|r| String::from_utf8_lossy(&r.get::<_, Vec<u8>>(0)).into_owned())
        .collect();
    assert!(
        keys.iter()
            .any(|k| k.starts_with("__table_route/benchmark/cpu")),
        "{keys:?}"
    );
    assert!(
        keys.iter()
            .filter(|k| k.starts_with("__meta_cluster_node_info"))
            .count()
            >= 3,
        "{keys:?}"
    );
    drop(c);
    // kill -9 of tsbsctl: the postmaster goes too, and the next start clears what it left.
    bg.signal(libc::SIGKILL);
    let _ = bg.wait();
    let left = gone_within(&ws, Duration::from_secs(10));
    assert!(left.is_empty(), "left behind: {left:?}");
    let mut bg = w.gt.serve_bg(
        "p1",
        &["--startup-timeout", CLUSTER_STARTUP, "--stop-timeout", "20"],
    );
    bg.wait_serving(|| cluster_info(&f0).len() == 4);
    assert_eq!(count_rows(&f0), rows);
    bg.interrupt().code(130);
    let log = std::fs::read_to_string(ws.join("logs/server.log")).unwrap();
    assert!(
        log.contains("postgres stopped (exit status: 0)"),
        "the store stops cleanly after a restart from a kill -9:\n{log}"
    );
    assert!(gone_within(&ws, Duration::from_secs(10)).is_empty());
}
