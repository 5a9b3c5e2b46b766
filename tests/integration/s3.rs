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
        "--s3-access-key-env",
        "TSBS_TEST_S3_KEY_ID",
        "--s3-secret-key-env",
        "TSBS_TEST_S3_SECRET",
        "--json",
    ]
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
    let (mut gt, knobs_dir) = unprepared();
    let access = format!("tsbsak{}", std::process::id());
    let secret = format!("S3cret-{}-{}", std::process::id(), unique());
    let gw = Gateway::start(&bin, gt.env.path(), &access, &secret);
    let s3 = Client::new(&gw.endpoint, "us-east-1", &access, &secret);
    s3.create_bucket("tsbs-bench")
        .unwrap_or_else(|e| panic!("create bucket: {e}\n{}", gw.log_text()));
    gt.run(&["env", "prepare"]).ok();
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
    let scan = ProcScan::start(&secret, "\u{0}", &[]);
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
    let r = w.run(&a);
    let (_, leaks, _) = scan.finish();
    r.ok();
    assert!(leaks.is_empty(), "the secret was in an argv: {leaks:?}");
    let dir = run_dir(&r);
    let s = summary(&dir);
    assert_eq!(s["status"], "completed", "{}", s["failures"]);

    // What tsbsctl recorded is what the bucket holds, by a listing of our own.
    let objects = s3.list("tsbs-bench", "tsbs/s1/").unwrap();
    let bytes: u64 = objects.iter().map(|(_, n)| n).sum();
    assert!(!objects.is_empty() && bytes > 0, "{objects:?}");
    assert!(
        objects.iter().any(|(k, _)| k
            .starts_with("tsbs/s1/data/greptime/benchmark/1024/1024_0000000000/")
            && k.ends_with(".parquet")),
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
    // The SSTs are not in the data home (only WAL and metadata are local); the cache is.
    assert_eq!(s["storage"]["data_files"], 0, "{}", s["storage"]);
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
    let child = Command::new(&greptime)
        .args(["standalone", "start", "-c"])
        .arg(ws.join("config.toml"))
        .env_clear()
        .env("PATH", std::env::var("PATH").unwrap_or_default())
        .env("GREPTIMEDB_STANDALONE__STORAGE__ACCESS_KEY_ID", &access)
        .env("GREPTIMEDB_STANDALONE__STORAGE__SECRET_ACCESS_KEY", "wrong")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let out = wait_bounded(child, Duration::from_secs(60));
    let text =
        String::from_utf8_lossy(&out.stdout).into_owned() + &String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{text}");
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
    drop(gw);
    w.run(&q).code(2).says("did not answer");
    assert!(!ws.join("server.pid").exists());
    // Its SSTs are objects: removing local copies would remove nothing, so it is refused.
    w.run(&["greptimedb", "orphans", "--database-id", "s1", "--remove"])
        .code(2)
        .says("keeps its SSTs in S3");
}
