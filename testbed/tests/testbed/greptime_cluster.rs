//! The greptime emulator's distributed roles as processes: one metasrv (`--backend
//! memory-store`, no etcd), two datanodes and a frontend, on 127.0.0.1.

use std::path::{Path, PathBuf};
use std::process::{Child, Command};
use std::time::{Duration, Instant};

use serde_json::{json, Value};

/// The release tsbsctl's clusters run (its flags: `--rpc-bind-addr`, `--rpc-server-addr`).
const VERSION: &str = "1.0.2";

struct Role {
    name: String,
    child: Child,
    out: PathBuf,
    err: PathBuf,
}

/// The running roles; every one is killed when this goes, a failed assertion included.
struct Cluster {
    roles: Vec<Role>,
    frontend_http: u16,
}

impl Drop for Cluster {
    fn drop(&mut self) {
        for r in self.roles.iter_mut().rev() {
            let _ = r.child.kill();
            let _ = r.child.wait();
        }
    }
}

fn addr(port: u16) -> String {
    format!("127.0.0.1:{port}")
}

impl Cluster {
    fn spawn(&mut self, dir: &Path, name: &str, args: &[String]) {
        let out = dir.join(format!("{name}.stdout"));
        let err = dir.join(format!("{name}.stderr"));
        let child = Command::new(env!("CARGO_BIN_EXE_testbed"))
            .args(["emulate", "greptime"])
            .arg(format!(
                "--log-dir={}",
                dir.join("logs").join(name).display()
            ))
            .args(args)
            .env_clear()
            .env("TESTBED_EMULATED_VERSION", VERSION)
            .current_dir(dir)
            .stdout(std::fs::File::create(&out).unwrap())
            .stderr(std::fs::File::create(&err).unwrap())
            .spawn()
            .unwrap();
        self.roles.push(Role {
            name: name.to_string(),
            child,
            out,
            err,
        });
    }

    /// Every role's output, for a failure's message.
    fn logs(&self) -> String {
        self.roles
            .iter()
            .map(|r| {
                format!(
                    "--- {} stdout:\n{}\n--- {} stderr:\n{}\n",
                    r.name,
                    std::fs::read_to_string(&r.out).unwrap_or_default(),
                    r.name,
                    std::fs::read_to_string(&r.err).unwrap_or_default()
                )
            })
            .collect()
    }

    fn all_running(&mut self) {
        let mut exited = None;
        for r in &mut self.roles {
            if let Some(st) = r.child.try_wait().unwrap() {
                exited = Some(format!("{} exited: {st}", r.name));
                break;
            }
        }
        if let Some(e) = exited {
            panic!("{e}\n{}", self.logs());
        }
    }

    /// Waits (at most 30 s, 600 tries) until `ok` holds.
    fn wait_for(&mut self, what: &str, mut ok: impl FnMut(&Cluster) -> bool) {
        let deadline = Instant::now() + Duration::from_secs(30);
        for _ in 0..600 {
            self.all_running();
            if ok(self) {
                return;
            }
            if Instant::now() > deadline {
                break;
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        panic!("{what}: not within 30 s\n{}", self.logs());
    }

    fn url(&self, path: &str) -> String {
        format!("http://127.0.0.1:{}{path}", self.frontend_http)
    }

    /// `/v1/sql` through the frontend: (HTTP status, body).
    fn sql(&self, sql: &str) -> (u16, Value) {
        let r = agent()
            .post(&self.url("/v1/sql?db=public"))
            .send_form(&[("sql", sql)]);
        match r {
            Ok(r) => (r.status(), r.into_json().unwrap_or(Value::Null)),
            Err(ureq::Error::Status(code, r)) => (code, r.into_json().unwrap_or(Value::Null)),
            Err(e) => panic!("{sql}: {e}\n{}", self.logs()),
        }
    }

    fn ok_sql(&self, sql: &str) -> Value {
        let (code, v) = self.sql(sql);
        assert_eq!(code, 200, "{sql}: {v}\n{}", self.logs());
        v["output"][0].clone()
    }

    fn rows(&self, sql: &str) -> Value {
        self.ok_sql(sql)["records"]["rows"].clone()
    }

    fn write(&self, lines: &str) -> (u16, String) {
        let r = agent()
            .post(&self.url("/v1/influxdb/write?db=public&precision=ns"))
            .send_string(lines);
        match r {
            Ok(r) => (r.status(), r.into_string().unwrap_or_default()),
            Err(ureq::Error::Status(code, r)) => (code, r.into_string().unwrap_or_default()),
            Err(e) => panic!("write: {e}\n{}", self.logs()),
        }
    }
}

fn agent() -> ureq::Agent {
    ureq::AgentBuilder::new()
        .timeout_connect(Duration::from_secs(2))
        .timeout(Duration::from_secs(20))
        .build()
}

/// A metasrv on memory, datanodes 1 and 2 and one frontend, all registered.
fn start(dir: &Path) -> Cluster {
    // metasrv: grpc, http; datanode d: grpc, http; frontend: http, grpc, mysql, postgres.
    let p = testbed::ports::free_port_block(10);
    let s = |p: &Path| p.display().to_string();
    let mut c = Cluster {
        roles: Vec::new(),
        frontend_http: p + 6,
    };
    let metasrv = addr(p);
    c.spawn(
        dir,
        "metasrv",
        &[
            "metasrv".into(),
            "start".into(),
            "--rpc-bind-addr".into(),
            metasrv.clone(),
            "--rpc-server-addr".into(),
            metasrv.clone(),
            "--http-addr".into(),
            addr(p + 1),
            "--backend".into(),
            "memory-store".into(),
            "--data-home".into(),
            s(&dir.join("metasrv")),
        ],
    );
    for d in 1..=2u16 {
        let (grpc, http) = (addr(p + 2 * d), addr(p + 2 * d + 1));
        let home = dir.join(format!("datanode-{d}"));
        c.spawn(
            dir,
            &format!("datanode-{d}"),
            &[
                "datanode".into(),
                "start".into(),
                "--node-id".into(),
                d.to_string(),
                "--rpc-bind-addr".into(),
                grpc.clone(),
                "--rpc-server-addr".into(),
                grpc,
                "--http-addr".into(),
                http,
                "--metasrv-addrs".into(),
                metasrv.clone(),
                "--data-home".into(),
                s(&home),
                "--wal-dir".into(),
                s(&home.join("wal")),
            ],
        );
    }
    c.spawn(
        dir,
        "frontend",
        &[
            "frontend".into(),
            "start".into(),
            "--metasrv-addrs".into(),
            metasrv,
            "--http-addr".into(),
            addr(p + 6),
            "--rpc-bind-addr".into(),
            addr(p + 7),
            "--rpc-server-addr".into(),
            addr(p + 7),
            "--mysql-addr".into(),
            addr(p + 8),
            "--postgres-addr".into(),
            addr(p + 9),
        ],
    );
    let quick = ureq::AgentBuilder::new()
        .timeout(Duration::from_millis(500))
        .build();
    c.wait_for("the frontend's /health", |c| {
        quick
            .get(&c.url("/health"))
            .call()
            .is_ok_and(|r| r.status() == 200)
    });
    c.wait_for("both datanodes in cluster_info", |c| {
        let r = quick.post(&c.url("/v1/sql")).send_form(&[(
            "sql",
            "SELECT peer_type FROM information_schema.cluster_info",
        )]);
        let Ok(r) = r else { return false };
        let v: Value = r.into_json().unwrap_or(Value::Null);
        v["output"][0]["records"]["rows"]
            .as_array()
            .into_iter()
            .flatten()
            .filter(|r| r[0] == "DATANODE")
            .count()
            == 2
    });
    c
}

/// A write that brings a field and a tag the table lacks, in rows of one region only, adds
/// them to the whole table before the rows are written (the real frontend's
/// `create_or_alter_tables_on_demand`): `DESC TABLE` through the frontend lists them, and a
/// SELECT over every region reads NULL in the other region's rows. `ALTER TABLE ADD COLUMN`
/// through the frontend goes to every datanode of the table, with the real errors. A real
/// v1.0.2 cluster (2 datanodes, etcd, a 2-region `cpu`) answered the same way on 2026-12-06:
/// the new tag, then the fields, at the end of `DESC TABLE`, NULL in the other rows,
/// `PRIMARY KEY ("hostname", "rack")`, and 4003 "Column temp already exists in table cpu".
#[test]
fn a_column_a_write_brings_to_a_spread_table_is_known_to_the_whole_table() {
    let tmp = tempfile::tempdir().unwrap();
    let c = start(tmp.path());
    c.ok_sql(
        "CREATE TABLE cpu (hostname STRING NULL, usage_user DOUBLE NULL, ts TIMESTAMP(9) NOT NULL, \
         TIME INDEX (ts), PRIMARY KEY (hostname)) \
         PARTITION ON COLUMNS (hostname) (hostname < 'host_1', hostname >= 'host_1')",
    );
    // Region 0 (host_0) and region 1 (host_1) are on different datanodes.
    let peers = c.rows(
        "SELECT region_id, peer_id FROM information_schema.region_peers \
         WHERE table_name = 'cpu' ORDER BY region_id",
    );
    let peers = peers.as_array().unwrap();
    assert_eq!(peers.len(), 2, "{peers:?}");
    assert_ne!(peers[0][1], peers[1][1], "{peers:?}");

    let (code, body) = c.write(
        "cpu,hostname=host_0 usage_user=1.5 1000\ncpu,hostname=host_1 usage_user=2.5 1000\n",
    );
    assert_eq!(code, 204, "{body}");
    // New: the field `temp`, the string field `mode` and the tag `rack`, on host_1's region.
    let (code, body) =
        c.write("cpu,hostname=host_1,rack=r1 usage_user=3.5,temp=20.5,mode=\"on\" 2000\n");
    assert_eq!(code, 204, "{body}");

    let desc = c.rows("DESC TABLE cpu");
    let col = |name: &str| {
        desc.as_array()
            .unwrap()
            .iter()
            .find(|r| r[0] == name)
            .cloned()
            .unwrap_or_else(|| panic!("DESC TABLE cpu lacks {name}: {desc}"))
    };
    assert_eq!(
        col("temp"),
        json!(["temp", "Float64", "", "YES", "", "FIELD"])
    );
    assert_eq!(
        col("mode"),
        json!(["mode", "String", "", "YES", "", "FIELD"])
    );
    assert_eq!(
        col("rack"),
        json!(["rack", "String", "PRI", "YES", "", "TAG"])
    );
    assert_eq!(
        c.rows("SELECT ts, hostname, rack, temp, mode FROM cpu ORDER BY ts, hostname"),
        json!([
            [1000, "host_0", null, null, null],
            [1000, "host_1", null, null, null],
            [2000, "host_1", "r1", 20.5, "on"]
        ])
    );
    assert_eq!(
        c.rows("SELECT count(*) FROM cpu"),
        json!([[3]]),
        "every region is read"
    );

    // ALTER through the frontend: an existing column is the real error, on no datanode a
    // change; IF NOT EXISTS is no change; a new column reaches every datanode of the table.
    let (code, v) = c.sql("ALTER TABLE cpu ADD COLUMN temp DOUBLE");
    assert_eq!((code, &v["code"]), (400, &json!(4003)), "{v}");
    assert_eq!(v["error"], "Column temp already exists in table cpu");
    assert_eq!(
        c.ok_sql("ALTER TABLE cpu ADD COLUMN IF NOT EXISTS temp DOUBLE"),
        json!({"affectedrows": 0})
    );
    c.ok_sql("ALTER TABLE cpu ADD COLUMN load BIGINT");
    assert_eq!(
        c.rows("SELECT ts, hostname, load FROM cpu ORDER BY ts, hostname"),
        json!([
            [1000, "host_0", null],
            [1000, "host_1", null],
            [2000, "host_1", null]
        ])
    );
    let (code, body) = c.write("cpu,hostname=host_0 load=7i 3000\n");
    assert_eq!(code, 204, "{body}");
    assert_eq!(
        c.rows("SELECT ts, hostname, load FROM cpu ORDER BY ts, hostname"),
        json!([
            [1000, "host_0", null],
            [1000, "host_1", null],
            [2000, "host_1", null],
            [3000, "host_0", 7]
        ])
    );
    let shown = c.rows("SHOW CREATE TABLE cpu");
    let shown = shown[0][1].as_str().unwrap();
    assert!(
        shown.contains("  \"ts\" TIMESTAMP(9) NOT NULL,\n  \"rack\" STRING NULL,\n  \"temp\" DOUBLE NULL,\n  \"mode\" STRING NULL,\n  \"load\" BIGINT NULL,\n  TIME INDEX (\"ts\"),\n  PRIMARY KEY (\"hostname\", \"rack\")"),
        "{shown}"
    );
}
