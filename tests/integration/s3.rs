//! Issue 25 §4, object storage: a GreptimeDB workspace on a REAL S3 server. CI builds
//! versitygw (an S3 gateway over a directory, `.ci/versitygw.sh`) and names it in
//! `TSBSCTL_TEST_VERSITYGW`; without it these tests print SKIP and why. The test starts it on
//! a port of its own with the root keys in its environment (never in an argv), creates the
//! bucket with the testbed's own S3 client, and lists the bucket itself to check what tsbsctl
//! recorded.

use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use serde_json::json;
use testbed::s3::Client;

use crate::integrity::ProcScan;
use crate::util::*;
use crate::world::*;

/// The real versitygw, or why there is none.
fn versitygw() -> Result<PathBuf, String> {
    match std::env::var("TSBSCTL_TEST_VERSITYGW") {
        Ok(p) if PathBuf::from(&p).is_file() => Ok(PathBuf::from(p)),
        Ok(p) => Err(format!("TSBSCTL_TEST_VERSITYGW={p} is not a file")),
        Err(_) => Err(
            "no real S3 server: TSBSCTL_TEST_VERSITYGW is unset (.ci/run builds versitygw)".into(),
        ),
    }
}

/// versitygw's posix backend over a directory of the test, on 127.0.0.1:<port>.
struct Gateway {
    child: Child,
    endpoint: String,
    log: PathBuf,
}

impl Gateway {
    fn start(bin: &PathBuf, dir: &std::path::Path, access: &str, secret: &str) -> Gateway {
        let port = free_port_block(1);
        let data = dir.join("s3-data");
        std::fs::create_dir_all(&data).unwrap();
        let log = dir.join("versitygw.log");
        let out = std::fs::File::create(&log).unwrap();
        let child = Command::new(bin)
            .arg("--port")
            .arg(format!("127.0.0.1:{port}"))
            .arg("posix")
            .arg(&data)
            // The root account from the environment: no key in the gateway's argv either.
            .env("ROOT_ACCESS_KEY_ID", access)
            .env("ROOT_SECRET_ACCESS_KEY", secret)
            .stdin(Stdio::null())
            .stdout(out.try_clone().unwrap())
            .stderr(out)
            .spawn()
            .unwrap();
        let endpoint = format!("http://127.0.0.1:{port}");
        let up = wait_until(Duration::from_secs(30), || {
            std::net::TcpStream::connect(("127.0.0.1", port)).is_ok()
        });
        let g = Gateway {
            child,
            endpoint,
            log,
        };
        assert!(up, "versitygw did not listen: {}", g.log_text());
        g
    }

    fn log_text(&self) -> String {
        std::fs::read_to_string(&self.log).unwrap_or_default()
    }
}

impl Drop for Gateway {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// A test's S3 side: the real versitygw with its root keys, one bucket, the testbed's client.
struct S3Side {
    gw: Gateway,
    s3: Client,
    access: String,
    secret: String,
}

/// An unprepared world (env prepared) with versitygw serving `bucket` under fresh keys.
fn s3_world(bin: &PathBuf, tag: &str, bucket: &str) -> (Gt, PathBuf, S3Side) {
    let (gt, knobs_dir) = unprepared();
    let access = format!("tsbs{tag}{}", std::process::id());
    let secret = format!("S3cret-{tag}-{}-{}", std::process::id(), unique());
    let gw = Gateway::start(bin, gt.env.path(), &access, &secret);
    let s3 = Client::new(&gw.endpoint, "us-east-1", &access, &secret);
    s3.create_bucket(bucket)
        .unwrap_or_else(|e| panic!("create bucket: {e}\n{}", gw.log_text()));
    gt.run(&["env", "prepare"]).ok();
    let side = S3Side {
        gw,
        s3,
        access,
        secret,
    };
    (gt, knobs_dir, side)
}

/// Runs `args` with every argv on the machine watched for `secret`; the run must complete.
/// Returns the run, its directory and its summary.
fn run_watched(w: &World, secret: &str, args: &[&str]) -> (Run, PathBuf, serde_json::Value) {
    let scan = ProcScan::start(secret, "\u{0}", &[]);
    let r = w.run(args);
    let (_, leaks, _) = scan.finish();
    r.ok();
    assert!(leaks.is_empty(), "the secret was in an argv: {leaks:?}");
    let dir = run_dir(&r);
    let s = summary(&dir);
    assert_eq!(s["status"], "completed", "{}", s["failures"]);
    (r, dir, s)
}

/// Checks a GreptimeDB footprint against a listing of our own of `bucket` under `prefix/`:
/// SSTs under `sst_dir`, objects, bytes and SST bytes as recorded, no SST in the data home.
/// Returns the listing.
fn check_greptime_bucket(
    s3: &Client,
    bucket: &str,
    prefix: &str,
    sst_dir: &str,
    s: &serde_json::Value,
) -> Vec<(String, u64)> {
    let objects = s3.list(bucket, &format!("{prefix}/")).unwrap();
    let bytes: u64 = objects.iter().map(|(_, n)| n).sum();
    assert!(!objects.is_empty() && bytes > 0, "{objects:?}");
    assert!(
        objects
            .iter()
            .any(|(k, _)| k.starts_with(&format!("{prefix}/{sst_dir}")) && k.ends_with(".parquet")),
        "no SST in the object layout: {objects:?}"
    );
    let os = &s["storage"]["object_store"];
    assert_eq!(os["objects"].as_u64(), Some(objects.len() as u64), "{os}");
    assert_eq!(os["bytes"].as_u64(), Some(bytes), "{os}");
    let sst: u64 = objects
        .iter()
        .filter(|(k, _)| k.ends_with(".parquet"))
        .map(|(_, n)| n)
        .sum();
    assert_eq!(os["data_bytes"].as_u64(), Some(sst), "{os}");
    assert_eq!(s["storage"]["never_flushed"], false);
    // The SSTs are not in the data home (only WAL and metadata are local).
    assert_eq!(s["storage"]["data_files"], 0, "{}", s["storage"]);
    objects
}

/// The key variables of every test here (their names only reach tsbsctl), and `--json`.
const KEY_FLAGS: [&str; 5] = [
    "--s3-access-key-env",
    "TSBS_TEST_S3_KEY_ID",
    "--s3-secret-key-env",
    "TSBS_TEST_S3_SECRET",
    "--json",
];

/// Runs a server that must refuse to start (exit 1, bounded); its stdout and stderr.
fn refused_start(cmd: &mut Command) -> String {
    let child = cmd
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let out = wait_bounded(child, Duration::from_secs(60));
    let text =
        String::from_utf8_lossy(&out.stdout).into_owned() + &String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{text}");
    text
}

fn prepare_args<'a>(
    id: &'a str,
    port: &'a str,
    endpoint: &'a str,
    bucket: &'a str,
) -> Vec<&'a str> {
    vec![
        "greptimedb",
        "prepare",
        "--database-id",
        id,
        "--version",
        STABLE,
        "--http-port",
        port,
        "--storage",
        "s3",
        "--s3-endpoint",
        endpoint,
        "--s3-bucket",
        bucket,
        "--s3-prefix",
        "tsbs/s1",
        "--cache-size",
        "64MiB",
    ]
    .into_iter()
    .chain(KEY_FLAGS)
    .collect()
}

#[test]
fn greptimedb_on_s3_records_the_bucket_and_no_credential_leaks() {
    let bin = match versitygw() {
        Ok(b) => b,
        Err(why) => {
            return skip(
                "greptimedb_on_s3_records_the_bucket_and_no_credential_leaks",
                &why,
            )
        }
    };
    let (mut gt, knobs_dir, side) = s3_world(&bin, "ak", "tsbs-bench");
    let S3Side {
        gw,
        s3,
        access,
        secret,
    } = side;
    let port = free_port_block(4).to_string();
    let ws = gt.ws_dir("s1");

    // Bad input: nothing is created. The variables unset; then a wrong secret; then a
    // bucket that does not exist.
    let r = gt.run(&prepare_args("s1", &port, &gw.endpoint, "tsbs-bench"));
    r.code(2).says("$TSBS_TEST_S3_KEY_ID");
    assert!(!ws.exists(), "prepare left {}", ws.display());
    gt.env.env("TSBS_TEST_S3_KEY_ID", &access);
    gt.env.env("TSBS_TEST_S3_SECRET", "not-the-secret");
    let r = gt.run(&prepare_args("s1", &port, &gw.endpoint, "tsbs-bench"));
    r.code(2).says("refused");
    assert!(!ws.exists());
    gt.env.envs.retain(|(k, _)| k != "TSBS_TEST_S3_SECRET");
    gt.env.env("TSBS_TEST_S3_SECRET", &secret);
    let r = gt.run(&prepare_args("s1", &port, &gw.endpoint, "no-such-bucket"));
    r.code(2).says("does not exist");
    assert!(!ws.exists());

    let prep = gt.run(&prepare_args("s1", &port, &gw.endpoint, "tsbs-bench"));
    prep.ok();
    let st = &prep.json()["data"]["manifest"]["storage"];
    assert_eq!(st["type"], "s3", "{st}");
    assert_eq!(st["bucket"], "tsbs-bench");
    assert_eq!(st["prefix"], "tsbs/s1");
    assert_eq!(st["access_key_env"], "TSBS_TEST_S3_KEY_ID");
    assert_eq!(st["cache_size_bytes"], 64 << 20);
    // The prefix was empty: what it holds from now on is the workspace's own.
    assert!(
        prep.json()["data"]["manifest"]["object_store_claimed_at"].is_string(),
        "{}",
        prep.json()
    );
    let config = std::fs::read_to_string(ws.join("config.toml")).unwrap();
    let c: toml::Value = toml::from_str(&config).unwrap();
    assert_eq!(c["storage"]["type"].as_str(), Some("S3"), "{config}");
    assert_eq!(c["storage"]["root"].as_str(), Some("tsbs/s1"));
    assert!(c["storage"].get("access_key_id").is_none(), "{config}");
    assert!(c["storage"].get("secret_access_key").is_none(), "{config}");
    // A workspace never changes its storage.
    let r = gt.run(&[
        "greptimedb",
        "prepare",
        "--database-id",
        "s1",
        "--storage",
        "file",
    ]);
    r.code(2).says("cannot become");

    // The whole flow, every argv watched for the secret while it runs. Small memtables: the
    // load flushes SSTs into the bucket before the footprint is taken (after the load).
    let w = World { gt, knobs_dir };
    w.gt.set_knobs(json!({"auto_flush_bytes": 50000}));
    let mut a = vec![
        "bench",
        "greptimedb",
        "all",
        "--database-id",
        "s1",
        "--stop-timeout",
        "5",
        "--query-type",
        "lastpoint",
        "--queries",
        "3",
        "--json",
    ];
    a.extend(tiny());
    let (r, dir, s) = run_watched(&w, &secret, &a);

    // What tsbsctl recorded is what the bucket holds, by a listing of our own.
    let objects = check_greptime_bucket(
        &s3,
        "tsbs-bench",
        "tsbs/s1",
        "data/greptime/benchmark/1024/1024_0000000000/",
        &s,
    );
    // The cache is measured on disk.
    let cache = &s["storage"]["cache"];
    assert!(cache["bytes"].as_u64().unwrap() > 0, "{cache}");
    assert_eq!(cache["capacity_bytes"], 64 << 20);
    // The run records where the data was (names of the key variables, not the keys).
    let ost = &read_json(&dir.join("manifest.json"))["target"]["server_settings"]["object_storage"];
    assert_eq!(ost["bucket"], "tsbs-bench", "{ost}");
    assert_eq!(ost["secret_key_env"], "TSBS_TEST_S3_SECRET", "{ost}");
    let md = std::fs::read_to_string(dir.join("summary.md")).unwrap();
    assert!(
        md.contains("- Storage: **S3**, bucket `tsbs-bench`"),
        "{md}"
    );
    assert!(
        md.contains("Object storage (S3): bucket `tsbs-bench`"),
        "{md}"
    );
    assert!(md.contains(&format!("**{} objects", objects.len())), "{md}");

    // A rerun into a new workspace measures the same store under a prefix of its own: the
    // first workspace's objects are neither written nor counted by it.
    let run_id = dir.file_name().unwrap().to_string_lossy().into_owned();
    let rr = w.run(&["runs", "rerun", &run_id, "--database-id", "s2", "--json"]);
    rr.ok();
    let st2 = &w.gt.manifest("s2")["storage"];
    let p2 = st2["prefix"].as_str().unwrap().to_string();
    assert!(p2.starts_with("tsbs/s1-rerun-"), "{st2}");
    assert_eq!(st2["bucket"], "tsbs-bench");
    assert_eq!(s3.list("tsbs-bench", "tsbs/s1/").unwrap(), objects);
    let os2 = &summary(&run_dir(&rr))["storage"]["object_store"];
    let own = s3.list("tsbs-bench", &format!("{p2}/")).unwrap();
    assert!(!own.is_empty(), "{os2}");
    assert_eq!(os2["objects"].as_u64(), Some(own.len() as u64), "{os2}");

    // A compaction rewrites SSTs in the bucket: its table states count the objects.
    let c = w.run(&[
        "bench",
        "greptimedb",
        "compact",
        "--database-id",
        "s1",
        "--stop-timeout",
        "5",
        "--json",
    ]);
    c.ok();
    let events = std::fs::read_to_string(run_dir(&c).join("events.jsonl")).unwrap();
    let counted: Vec<u64> = events
        .lines()
        .filter_map(|l| serde_json::from_str::<serde_json::Value>(l).ok())
        .filter_map(|e| e["data"]["footprint"]["object_store"]["data_objects"].as_u64())
        .collect();
    assert!(
        !counted.is_empty() && counted.iter().all(|n| *n > 0),
        "{events}"
    );

    // No credential in any file under the state root or the test's directory (logs, manifests,
    // config), nor in any output.
    assert_no_secret(w.gt.env.path(), &secret, &[&prep, &r, &rr, &c]);

    // The server itself refuses to start on keys the bucket refuses (exit 1, before it binds).
    let greptime = w.gt.install_dir(STABLE).join("greptime");
    let text = refused_start(
        Command::new(&greptime)
            .args(["standalone", "start", "-c"])
            .arg(ws.join("config.toml"))
            .env_clear()
            .env("PATH", std::env::var("PATH").unwrap_or_default())
            .env("GREPTIMEDB_STANDALONE__STORAGE__ACCESS_KEY_ID", &access)
            .env("GREPTIMEDB_STANDALONE__STORAGE__SECRET_ACCESS_KEY", "wrong"),
    );
    assert!(
        text.contains("Fatal error occurs!") && text.contains("SignatureDoesNotMatch"),
        "{text}"
    );

    // tsbsctl probes before every start: keys changed since prepare, then a store that is
    // gone, are bad input (exit 2) and no server starts.
    let mut w = w;
    w.gt.env.envs.retain(|(k, _)| k != "TSBS_TEST_S3_SECRET");
    w.gt.env.env("TSBS_TEST_S3_SECRET", "changed");
    let q = [
        "bench",
        "greptimedb",
        "query",
        "--database-id",
        "s1",
        "--dataset-id",
        "tiny",
        "--query-type",
        "lastpoint",
        "--queries",
        "3",
        "--json",
    ];
    w.run(&q).code(2).says("refused");
    w.gt.env.envs.retain(|(k, _)| k != "TSBS_TEST_S3_SECRET");
    w.gt.env.env("TSBS_TEST_S3_SECRET", &secret);
    // A new workspace on a prefix that holds objects is refused before anything is written:
    // the server would take them as its own, and `remove` could not tell them apart.
    let mut a = prepare_args("s9", "0", &gw.endpoint, "tsbs-bench");
    a.retain(|x| *x != "--http-port" && *x != "0");
    w.run(&a)
        .code(2)
        .says("already holds objects under tsbs/s1/");
    assert!(!w.gt.ws_dir("s9").exists());
    // A copy would be a workspace without its data (that is in the bucket): refused.
    w.run(&[
        "greptimedb",
        "copy",
        "--source-database-id",
        "s1",
        "--database-id",
        "s1c",
        "--version",
        STABLE,
    ])
    .code(2)
    .says("copy works on local storage only");
    // Removing a workspace that found its prefix empty deletes its objects, and only them.
    let before = s3.list("tsbs-bench", &format!("{p2}/")).unwrap();
    assert!(!before.is_empty());
    let s1_objects = s3.list("tsbs-bench", "tsbs/s1/").unwrap();
    let rm = remove(&w, "greptimedb", "s2", &["--json"]);
    rm.ok();
    let gone = &rm.json()["data"]["object_store_deleted"];
    assert_eq!(gone["bucket"], "tsbs-bench", "{gone}");
    assert_eq!(gone["prefix"], p2.as_str(), "{gone}");
    assert_eq!(
        gone["objects"].as_u64(),
        Some(before.len() as u64),
        "{gone}"
    );
    assert_eq!(
        gone["bytes"].as_u64(),
        Some(before.iter().map(|(_, n)| n).sum::<u64>()),
        "{gone}"
    );
    assert!(s3.list("tsbs-bench", &format!("{p2}/")).unwrap().is_empty());
    assert_eq!(s3.list("tsbs-bench", "tsbs/s1/").unwrap(), s1_objects);
    drop(gw);
    w.run(&q).code(2).says("did not answer");
    assert!(!ws.join("server.pid").exists());
    // Its SSTs are objects: removing local copies would remove nothing, so it is refused.
    w.run(&["greptimedb", "orphans", "--database-id", "s1", "--remove"])
        .code(2)
        .says("keeps its SSTs in S3");
    // With the store gone its objects cannot be deleted: the workspace stays (no longer
    // loaded), and the hint names the way to leave them.
    let rm = remove(&w, "greptimedb", "s1", &[]);
    rm.code(1).says("did not answer").says("--keep-objects");
    assert!(ws.exists());
    assert!(w.gt.manifest("s1")["binding"].is_null());
    let rm = remove(&w, "greptimedb", "s1", &["--keep-objects"]);
    rm.ok().says("were left (--keep-objects) and not listed");
    assert!(!ws.exists());
}

/// The reason to skip a test that needs etcd too, if there is one.
fn etcd_or_why() -> Result<PathBuf, String> {
    crate::cluster::etcd().ok_or_else(|| {
        "no etcd on PATH or at /usr/bin/etcd (Debian: apt-get install etcd-server)".to_string()
    })
}

/// The environment of process `pid` (NUL-separated `K=V`), or nothing once it is gone.
fn environ_of(pid: u32) -> String {
    std::fs::read(format!("/proc/{pid}/environ"))
        .map(|b| String::from_utf8_lossy(&b).into_owned())
        .unwrap_or_default()
}

/// Issue 25 §4 for a cluster: two datanodes on one bucket and root, each with its own cache,
/// against the real versitygw and a real etcd. The datanodes write their regions' objects
/// under the shared prefix; the footprint is the bucket's listing plus each datanode's cache;
/// only the datanodes get the keys, and only in their environment.
#[test]
fn a_cluster_on_s3_shares_one_bucket_with_a_cache_per_datanode() {
    const NAME: &str = "a_cluster_on_s3_shares_one_bucket_with_a_cache_per_datanode";
    let (bin, etcd) = match (versitygw(), etcd_or_why()) {
        (Ok(b), Ok(e)) => (b, e),
        (Err(why), _) | (_, Err(why)) => return skip(NAME, &why),
    };
    let (mut gt, knobs_dir, side) = s3_world(&bin, "ck", "tsbs-cluster");
    let S3Side {
        gw,
        s3,
        access,
        secret,
    } = side;
    gt.env.env("TSBS_TEST_S3_KEY_ID", &access);
    gt.env.env("TSBS_TEST_S3_SECRET", &secret);
    // Frontend 0 (4) + metasrv (2) + 2 datanodes (4) + etcd (2).
    let port = free_port_block(12).to_string();
    let e = etcd.to_string_lossy().into_owned();
    let prepare = [
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
        "2",
        "--etcd",
        &e,
        "--storage",
        "s3",
        "--s3-endpoint",
        &gw.endpoint,
        "--s3-bucket",
        "tsbs-cluster",
        "--s3-prefix",
        "tsbs/c1",
        "--cache-size",
        "32MiB",
    ];
    let prep = gt.run(&[&prepare[..], &KEY_FLAGS[..]].concat());
    prep.ok();
    let m = &prep.json()["data"]["manifest"];
    assert_eq!(m["topology"]["datanodes"], 2, "{m}");
    assert_eq!(m["storage"]["type"], "s3", "{m}");
    assert_eq!(m["storage"]["prefix"], "tsbs/c1");
    assert_eq!(m["storage"]["secret_key_env"], "TSBS_TEST_S3_SECRET");
    let ws = gt.ws_dir("c1");
    // One [storage] for every datanode, no key in it.
    let config = std::fs::read_to_string(ws.join("config.toml")).unwrap();
    let c: toml::Value = toml::from_str(&config).unwrap();
    assert_eq!(c["storage"]["type"].as_str(), Some("S3"), "{config}");
    assert_eq!(c["storage"]["root"].as_str(), Some("tsbs/c1"));
    assert_eq!(c["storage"]["bucket"].as_str(), Some("tsbs-cluster"));
    assert!(c["storage"].get("access_key_id").is_none(), "{config}");
    assert_eq!(
        c["region_engine"][0]["mito"]["write_cache_size"].as_str(),
        Some(format!("{}B", 32u64 << 20).as_str())
    );

    let w = World { gt, knobs_dir };
    // Small memtables: the load flushes SSTs into the bucket.
    w.gt.set_knobs(json!({"auto_flush_bytes": 50000}));
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
        "--query-type",
        "lastpoint",
        "--queries",
        "2",
        "--json",
    ];
    a.extend(tiny());
    let (r, dir, s) = run_watched(&w, &secret, &a);
    assert_eq!(s["row_count"]["actual"], ROWS);

    // The datanodes wrote their regions under the shared prefix; tsbsctl counted what the
    // bucket holds. Each datanode has a cache directory of its own, measured from disk.
    let objects = check_greptime_bucket(
        &s3,
        "tsbs-cluster",
        "tsbs/c1",
        "data/greptime/benchmark/",
        &s,
    );
    let cache = &s["storage"]["cache"];
    let per = cache["per_datanode"].as_array().unwrap();
    assert_eq!(per.len(), 2, "{cache}");
    let sum: u64 = per.iter().map(|c| c["bytes"].as_u64().unwrap()).sum();
    assert_eq!(cache["bytes"].as_u64(), Some(sum), "{cache}");
    assert!(sum > 0, "{cache}");
    assert_eq!(cache["capacity_bytes"], 2 * (32u64 << 20));
    let mut paths = Vec::new();
    for d in 1..=2 {
        let f = std::fs::read_to_string(ws.join(format!("datanode-{d}.toml"))).unwrap();
        let t: toml::Value = toml::from_str(&f).unwrap();
        let p = t["region_engine"][0]["mito"]["write_cache_path"]
            .as_str()
            .unwrap()
            .to_string();
        assert_eq!(
            PathBuf::from(&p),
            ws.join(format!("cache/datanode-{d}")),
            "{f}"
        );
        assert!(t["storage"].get("secret_access_key").is_none(), "{f}");
        paths.push(p);
    }
    let md = std::fs::read_to_string(dir.join("summary.md")).unwrap();
    assert!(
        md.contains("Object storage (S3): bucket `tsbs-cluster`")
            && md.contains(&format!("**{} objects", objects.len()))
            && md.contains("for each of 2 datanodes"),
        "{md}"
    );
    assert!(
        md.contains("- Storage: **S3**, bucket `tsbs-cluster`"),
        "{md}"
    );

    // Serving: only the datanodes have the keys, in their environment.
    let mut bg = w.gt.serve_bg(
        "c1",
        &["--startup-timeout", CLUSTER_STARTUP, "--stop-timeout", "20"],
    );
    let f0 = endpoint_of(&w.gt.manifest("c1"));
    bg.wait_serving(|| sql_status(&f0, "SELECT 1") == Some(200));
    let roles = crate::cluster::processes_mentioning(&ws.to_string_lossy());
    let mut seen = (0, 0);
    for (pid, cmd) in &roles {
        let env = environ_of(*pid);
        let is_datanode = cmd.contains(" datanode start");
        if is_datanode {
            seen.0 += 1;
            assert!(env.contains(&secret), "datanode {pid} has no key: {cmd}");
        } else if cmd.contains(" start") || cmd.contains("--data-dir") {
            seen.1 += 1;
            assert!(!env.contains(&secret), "{pid} holds the key: {cmd}");
        }
    }
    assert_eq!(seen.0, 2, "{roles:?}");
    assert!(seen.1 >= 3, "etcd, metasrv and the frontend: {roles:?}");
    bg.interrupt();
    assert!(crate::cluster::gone_within(&ws, Duration::from_secs(10)).is_empty());

    assert_no_secret(w.gt.env.path(), &secret, &[&prep, &r]);
    drop(gw);
}

/// `influxdb3 prepare ... --object-store s3` (issue 25 §4): a Core workspace whose WAL,
/// Parquet files and catalog are objects on the real versitygw, under the node id.
fn influx_prepare_args<'a>(id: &'a str, port: &'a str, endpoint: &'a str) -> Vec<&'a str> {
    vec![
        "influxdb3",
        "prepare",
        "--database-id",
        id,
        "--edition",
        "core",
        "--http-port",
        port,
        "--object-store",
        "s3",
        "--s3-endpoint",
        endpoint,
        "--s3-bucket",
        "tsbs-influx",
    ]
    .into_iter()
    .chain(KEY_FLAGS)
    .collect()
}

#[test]
fn influxdb3_core_on_s3_keeps_wal_parquet_and_catalog_in_the_bucket() {
    const NAME: &str = "influxdb3_core_on_s3_keeps_wal_parquet_and_catalog_in_the_bucket";
    let bin = match versitygw() {
        Ok(b) => b,
        Err(why) => return skip(NAME, &why),
    };
    let (mut gt, knobs_dir, side) = s3_world(&bin, "ik", "tsbs-influx");
    let S3Side {
        gw,
        s3,
        access,
        secret,
    } = side;
    let port = free_port_block(1).to_string();
    let ws_dir = gt.env.root.join("influxdb3/databases/core-s3");

    // Bad input, nothing created: the variables unset; a wrong secret; a prefix (the real
    // server has none); Enterprise; objects already under the new node id.
    let r = gt.run(&influx_prepare_args("core-s3", &port, &gw.endpoint));
    r.code(2).says("$TSBS_TEST_S3_KEY_ID");
    gt.env.env("TSBS_TEST_S3_KEY_ID", &access);
    gt.env.env("TSBS_TEST_S3_SECRET", "not-the-secret");
    gt.run(&influx_prepare_args("core-s3", &port, &gw.endpoint))
        .code(2)
        .says("refused");
    gt.env.envs.retain(|(k, _)| k != "TSBS_TEST_S3_SECRET");
    gt.env.env("TSBS_TEST_S3_SECRET", &secret);
    let mut a = influx_prepare_args("core-s3", &port, &gw.endpoint);
    a.extend(["--s3-prefix", "p"]);
    gt.run(&a).code(2).says("no key prefix option");
    let mut a = influx_prepare_args("ent-s3", &port, &gw.endpoint);
    a[5] = "enterprise";
    gt.run(&a).code(2).says("Core only");
    s3.put("tsbs-influx", "used-s3-node/catalog/checkpoint", b"{}")
        .unwrap();
    gt.run(&influx_prepare_args("used-s3", &port, &gw.endpoint))
        .code(2)
        .says("already holds objects under used-s3-node/");
    assert!(!ws_dir.exists() && !gt.env.root.join("influxdb3/databases/used-s3").exists());

    let w = World { gt, knobs_dir };
    let knobs = publish_influx3(&w, "core");
    // Snapshots after three WAL files: Parquet objects land under dbs/ during the load.
    std::fs::write(
        &knobs,
        json!({"wal_flush_interval_ms": 20, "snapshot_after_wal_files": 3}).to_string(),
    )
    .unwrap();
    let prep = w.run(&influx_prepare_args("core-s3", &port, &gw.endpoint));
    prep.ok();
    let os = &prep.json()["data"]["manifest"]["object_store"];
    assert_eq!(os["type"], "s3", "{os}");
    assert_eq!(os["bucket"], "tsbs-influx");
    assert_eq!(os["prefix"], "core-s3-node", "{os}");
    assert_eq!(os["access_key_env"], "TSBS_TEST_S3_KEY_ID");
    // A workspace never changes its object store.
    w.run(&[
        "influxdb3",
        "prepare",
        "--database-id",
        "core-s3",
        "--edition",
        "core",
        "--object-store",
        "file",
    ])
    .code(2)
    .says("cannot become");

    let mut a = vec![
        "bench",
        "influxdb3",
        "all",
        "--database-id",
        "core-s3",
        "--queries",
        "3",
        "--stop-timeout",
        "10",
        // Many small batches: many WAL files, so snapshots land Parquet in the bucket.
        "--batch-size",
        "200",
        "--json",
    ];
    a.extend(tiny());
    for t in TYPES {
        a.extend(["--query-type", t]);
    }
    let (r, dir, s) = run_watched(&w, &secret, &a);
    assert_eq!(s["row_count"]["actual"], ROWS);

    // The real key layout under the node id, counted by tsbsctl as the bucket holds it.
    let objects = s3.list("tsbs-influx", "core-s3-node/").unwrap();
    let count = |f: &dyn Fn(&str) -> bool| objects.iter().filter(|(k, _)| f(k)).count() as u64;
    let wal = count(&|k| k.starts_with("core-s3-node/wal/") && k.ends_with(".wal"));
    let parquet = count(&|k| k.starts_with("core-s3-node/dbs/") && k.ends_with(".parquet"));
    assert!(wal > 0 && parquet > 0, "{objects:?}");
    assert!(
        objects
            .iter()
            .any(|(k, _)| k.starts_with("core-s3-node/catalog/")),
        "{objects:?}"
    );
    let st = &s["storage"];
    let os = &st["object_store"];
    let bytes: u64 = objects.iter().map(|(_, n)| n).sum();
    assert_eq!(os["objects"].as_u64(), Some(objects.len() as u64), "{os}");
    assert_eq!(os["bytes"].as_u64(), Some(bytes), "{os}");
    assert_eq!(os["wal_objects"].as_u64(), Some(wal), "{os}");
    assert_eq!(os["data_objects"].as_u64(), Some(parquet), "{os}");
    assert_eq!(st["never_flushed"], false, "{st}");
    // Nothing of the server's data on the local disk.
    assert_eq!(st["wal_bytes"], 0, "{st}");
    assert_eq!(st["data_bytes"], 0, "{st}");
    // The run records where the data was (names of the key variables, not the keys).
    let ost = &read_json(&dir.join("manifest.json"))["target"]["server_settings"]["object_storage"];
    assert_eq!(ost["bucket"], "tsbs-influx", "{ost}");
    assert_eq!(ost["secret_key_env"], "TSBS_TEST_S3_SECRET", "{ost}");
    let md = std::fs::read_to_string(dir.join("summary.md")).unwrap();
    assert!(
        md.contains("- Storage: **S3**, bucket `tsbs-influx`"),
        "{md}"
    );
    assert!(md.contains("| WAL (wal/) | Parquet files (dbs/) |"), "{md}");

    // A restart reads everything back from the bucket: the query phase counts every row.
    let query = [
        "bench",
        "influxdb3",
        "query",
        "--database-id",
        "core-s3",
        "--dataset-id",
        "tiny",
        "--query-type",
        "lastpoint",
        "--queries",
        "3",
        "--stop-timeout",
        "10",
        "--json",
    ];
    let q = w.run(&query);
    q.ok();
    assert_eq!(summary(&run_dir(&q))["row_check"]["actual"], ROWS);

    assert_no_secret(w.gt.env.path(), &secret, &[&prep, &r, &q]);

    // The server itself refuses keys the bucket refuses (exit 1, before it listens), in the
    // real words.
    let m = read_json(&ws_dir.join("manifest.json"));
    let influxdb3 = PathBuf::from(m["installation_path"].as_str().unwrap()).join("influxdb3");
    let text = refused_start(
        Command::new(&influxdb3)
            .args([
                "serve",
                "--object-store=s3",
                "--bucket=tsbs-influx",
                &format!("--aws-endpoint={}", gw.endpoint),
                "--aws-allow-http",
                "--node-id=core-s3-node",
                "--http-bind=127.0.0.1:0",
                "--without-auth",
            ])
            .env("AWS_ACCESS_KEY_ID", &access)
            .env("AWS_SECRET_ACCESS_KEY", "wrong"),
    );
    assert!(
        text.contains("Serve command failed: failed to initialize catalog: object store error:")
            && text.contains("SignatureDoesNotMatch"),
        "{text}"
    );

    // tsbsctl probes before every start: changed keys are bad input, no server starts.
    let mut w = w;
    w.gt.env.envs.retain(|(k, _)| k != "TSBS_TEST_S3_SECRET");
    w.gt.env.env("TSBS_TEST_S3_SECRET", "changed");
    w.run(&query).code(2).says("refused");
    assert!(!ws_dir.join("server.pid").exists());

    // Removing the workspace deletes its node's objects, and nothing else of the bucket.
    w.gt.env.envs.retain(|(k, _)| k != "TSBS_TEST_S3_SECRET");
    w.gt.env.env("TSBS_TEST_S3_SECRET", &secret);
    let now = s3.list("tsbs-influx", "core-s3-node/").unwrap();
    let rm = remove(&w, "influxdb3", "core-s3", &["--json"]);
    rm.ok();
    let gone = &rm.json()["data"]["object_store_deleted"];
    assert_eq!(gone["objects"].as_u64(), Some(now.len() as u64), "{gone}");
    assert!(s3.list("tsbs-influx", "core-s3-node/").unwrap().is_empty());
    assert_eq!(
        s3.list("tsbs-influx", "used-s3-node/").unwrap().len(),
        1,
        "another prefix's object was touched"
    );
    assert!(!ws_dir.exists());
}

/// `<product> remove --database-id ID --confirm ID` with `extra`.
fn remove(w: &World, product: &str, id: &str, extra: &[&str]) -> Run {
    let mut a = vec![product, "remove", "--database-id", id, "--confirm", id];
    a.extend_from_slice(extra);
    w.run(&a)
}
