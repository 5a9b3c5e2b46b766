//! GreptimeDB's distributed roles, emulated: `greptime metasrv start`, `greptime datanode start`
//! and `greptime frontend start` with the real flags (reference/real/greptimedb-cluster.md §1).
//!
//! * metasrv: keeps the cluster's metadata in a real store (`--backend etcd-store`, the
//!   default: etcd's v3 JSON API at `--store-addrs`; `memory-store`: gone when it stops, as the
//!   real `MemoryKvBackend`). It exits 1 when etcd does not answer within 5 s. It serves
//!   `/health` on `--http-addr` and, on `--grpc-bind-addr`, the calls the other roles make of it
//!   (an HTTP stand-in for the real gRPC): heartbeats, node lists, table ids and table routes.
//! * datanode: the standalone engine of this emulator (store, WAL, flush, compaction, logs) on
//!   its own data home, without MySQL/PostgreSQL listeners; it heartbeats to the metasrv every
//!   3 s (the real base interval) and takes its table ids from the metasrv (ids are global).
//!   With `[storage] type = "S3"` it writes its regions' objects to the bucket as a standalone
//!   does (`objstore.rs`), under the root every datanode shares, and copies back at start only
//!   the regions of the tables it holds.
//!   Its HTTP port serves what a standalone serves (the frontends reach it there; the real
//!   datanode is reached over gRPC, which nothing of tsbsctl's speaks).
//! * frontend: stores nothing. The metasrv places a new table's regions on the datanodes
//!   round-robin, one selector turn per region, as the default `round_robin` selector does
//!   (an in-memory counter from 0 at the metasrv's start; 8 regions after a one-region table on
//!   3 datanodes: peers 2,3,1,2,3,1,2,3, as a real v1.0.2 placed them). `CREATE TABLE` goes to
//!   each datanode holding a region, with the table id (one, from the metasrv) and its region
//!   numbers; each opens and stores only its own regions. Written rows go to the datanode of
//!   their region (the table's partition rule, kept with the route). Before that, a write that
//!   brings tags or fields a table spread over several datanodes lacks (`DESC TABLE` of region
//!   0's datanode) adds them on every datanode of the table (`ALTER TABLE ... ADD COLUMN IF NOT
//!   EXISTS`, nullable, a tag as `STRING PRIMARY KEY`, in the order the lines bring them), as
//!   the real frontend alters the table once for all its regions before it writes
//!   (`operator/src/insert.rs` `create_or_alter_tables_on_demand`); a table on one datanode
//!   adds them as a standalone does. A query on a table goes to the datanode of region 0,
//!   which reads the other holders' rows (`/testbed/lines`, `/testbed/count`) with its own; flush, compaction, `ALTER TABLE` and `DROP TABLE` go to
//!   every holder (the first refusal stops an `ALTER`: an existing column changes nothing);
//!   database DDL goes to every datanode; `information_schema` is gathered from every
//!   datanode (a row every datanode lists, once; `region_peers` in region order), except
//!   `region_statistics`, which is what each datanode sent the metasrv in its last heartbeat
//!   (up to 3 s late, as on a real cluster), and
//!   `cluster_info`, which is the metasrv's node list (METASRV peer 0, DATANODE their node id,
//!   FRONTEND -1, as the real table).
//!
//! Not emulated: region failover and migration, election, flownodes, TLS, `-c` for metasrv
//! and frontend.

pub mod datanode;
pub mod frontend;
pub mod kv;
pub mod metasrv;

use std::time::Duration;

use serde_json::Value;

/// Heartbeat base interval of the real cluster (`config/metasrv.example.toml:78-83`).
pub const HEARTBEAT: Duration = Duration::from_secs(3);

/// A node not heard from for this long is no longer listed as alive.
pub const LEASE: Duration = Duration::from_secs(10);

pub fn agent() -> ureq::Agent {
    ureq::AgentBuilder::new()
        .timeout_connect(Duration::from_secs(2))
        .timeout(Duration::from_secs(24 * 3600))
        .build()
}

/// `http://addr` of the first `--metasrv-addrs` entry.
pub fn metasrv_url(addrs: &str) -> Option<String> {
    addrs
        .split(',')
        .map(str::trim)
        .find(|a| !a.is_empty())
        .map(|a| format!("http://{}", a.trim_start_matches("http://")))
}

/// Calls the metasrv (POST with a JSON body, or GET without).
pub fn call_metasrv(
    agent: &ureq::Agent,
    base: &str,
    path: &str,
    body: Option<Value>,
) -> Result<Value, String> {
    let url = format!("{base}{path}");
    let r = match body {
        Some(b) => agent.post(&url).send_json(b),
        None => agent.get(&url).call(),
    };
    match r {
        Ok(r) => r.into_json::<Value>().map_err(|e| e.to_string()),
        Err(ureq::Error::Status(code, r)) => Err(format!(
            "metasrv answered {code}: {}",
            r.into_string().unwrap_or_default()
        )),
        Err(e) => Err(format!("metasrv {base} unreachable: {e}")),
    }
}

pub fn now_ms() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as i64)
}

/// One heartbeat of a datanode or frontend; retried by the caller's loop.
pub fn heartbeat(agent: &ureq::Agent, base: &str, node: &Value) -> Result<(), String> {
    call_metasrv(agent, base, "/testbed/heartbeat", Some(node.clone())).map(|_| ())
}
