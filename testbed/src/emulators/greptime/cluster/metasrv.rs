//! `greptime metasrv start`: the cluster's metadata (nodes, table ids, table routes) in etcd or PostgreSQL.

use std::net::SocketAddr;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use serde_json::{json, Value};
use tiny_http::{Header, Request, Response};

use super::kv::Kv;
use super::{now_ms, LEASE};
use crate::emulators::greptime::logging;
use crate::emulators::greptime::version::Version;

pub struct Args {
    pub grpc_bind_addr: SocketAddr,
    pub grpc_server_addr: String,
    pub http_addr: SocketAddr,
    pub store_addrs: Vec<String>,
    pub backend: String,
    pub data_home: std::path::PathBuf,
    pub log_dir: Option<std::path::PathBuf>,
    pub command_line: String,
    /// `enable_telemetry` (default true: the real metasrv reports for the cluster).
    pub telemetry: bool,
}

const NODE_PREFIX: &str = "__meta_cluster_node_info-0-";
const ROUTE_PREFIX: &str = "__table_route/";
const TABLE_ID_SEQ: &str = "__table_id_seq";

struct Meta {
    kv: Kv,
    /// One metasrv: sequences are read-modify-write under this lock.
    seq: Mutex<()>,
    self_node: Value,
    /// The round-robin selector's turn (in memory: it starts again at 0 with the metasrv).
    selector: AtomicUsize,
    /// Heartbeats per node since its region statistics were last published.
    stat_beats: Mutex<std::collections::HashMap<String, usize>>,
}

/// The real metasrv publishes a datanode's statistics (what `region_statistics` shows) at its
/// first heartbeat and then once every third (`collect_stats_handler.rs`,
/// `DEFAULT_FLUSH_STATS_FACTOR`): what a query sees is up to three heartbeats old.
const FLUSH_STATS_FACTOR: usize = 3;

type Resp = Response<std::io::Cursor<Vec<u8>>>;

fn json_resp(status: u16, v: &Value) -> Resp {
    Response::from_data(serde_json::to_vec(v).unwrap_or_default())
        .with_status_code(status)
        .with_header(Header::from_bytes("content-type", "application/json").expect("static header"))
}

pub fn run(a: Args, version: &Version) -> i32 {
    super::super::sql::mark_started();
    let log_dir = a.log_dir.clone().or(Some(a.data_home.join("logs")));
    if let Err(e) = logging::init(log_dir) {
        eprintln!("Error: failed to create log dir: {e}");
        return 1;
    }
    let term = Arc::new(AtomicBool::new(false));
    for sig in [signal_hook::consts::SIGTERM, signal_hook::consts::SIGINT] {
        let _ = signal_hook::flag::register(sig, Arc::clone(&term));
    }
    logging::info(
        "cmd",
        &format!(
            "short_version: {}, full_version: greptimedb-{}",
            version.text(),
            version.commit()
        ),
    );
    logging::info(
        "cmd::metasrv",
        &format!("Metasrv start command: {}", a.command_line),
    );
    let kv = match a.backend.as_str() {
        "etcd-store" | "etcd_store" => Kv::etcd(&a.store_addrs),
        "postgres-store" | "postgres_store" => Kv::postgres(&a.store_addrs),
        "memory-store" | "memory_store" => {
            logging::log(
                "WARN",
                "meta_srv::metasrv",
                "Ensure only one instance of Metasrv is running, as there is no election service.",
            );
            Kv::memory()
        }
        other => {
            eprintln!("error: --backend {other} is not emulated by the testbed greptime (etcd-store, postgres-store, memory-store)");
            return 2;
        }
    };
    // The real metasrv cannot start without its store; it gives up after its connect retries.
    let deadline = Instant::now() + Duration::from_secs(5);
    loop {
        match kv.check() {
            Ok(v) => {
                logging::info(
                    "meta_srv::bootstrap",
                    &format!("Metadata store {} is ready ({v})", a.store_addrs.join(",")),
                );
                break;
            }
            Err(e) if Instant::now() >= deadline => {
                // The real texts: "Failed to connect to Etcd", "Failed to get Postgres
                // connection from pool: <reason>" (common/meta/src/error.rs).
                let what = if matches!(kv, Kv::Postgres { .. }) {
                    format!("Failed to get Postgres connection from pool: {e}")
                } else {
                    format!("Failed to connect to Etcd: {e}")
                };
                logging::error("greptime", &format!("Fatal error occurs! err.msg={what}"));
                return 1;
            }
            Err(_) => {
                if term.load(Ordering::SeqCst) {
                    return 0;
                }
                std::thread::sleep(Duration::from_millis(200));
            }
        }
    }
    let bind = |what: &str, addr: SocketAddr| match tiny_http::Server::http(addr) {
        Ok(s) => Ok(Arc::new(s)),
        Err(e) => {
            logging::error(
                "greptime",
                &format!("Fatal error occurs! err.msg=Failed to bind {what} server at {addr}: {e}"),
            );
            Err(1)
        }
    };
    let grpc = match bind("gRPC", a.grpc_bind_addr) {
        Ok(s) => s,
        Err(c) => return c,
    };
    let http = match bind("HTTP", a.http_addr) {
        Ok(s) => s,
        Err(c) => return c,
    };
    let meta = Arc::new(Meta {
        kv,
        seq: Mutex::new(()),
        selector: AtomicUsize::new(0),
        stat_beats: Mutex::new(Default::default()),
        self_node: json!({
            "peer_id": 0,
            "peer_type": "METASRV",
            "peer_addr": a.grpc_server_addr,
            // The real cluster_info lists the metasrv's version as "unknown" (sqlness).
            "version": "unknown",
            "git_commit": "unknown",
            "start_time": now_ms(),
        }),
    });
    logging::info(
        "servers::grpc",
        &format!("gRPC server is bound to {}", a.grpc_bind_addr),
    );
    logging::info(
        "servers::http",
        &format!("HTTP server is bound to {}", a.http_addr),
    );
    if a.telemetry {
        logging::info(
            "common_greptimedb_telemetry",
            "Attempt to report telemetry to telemetry.greptimestats.com (testbed: not sent)",
        );
    }
    logging::info("meta_srv::metasrv", "Metasrv started");
    let stop = Arc::new(AtomicBool::new(false));
    let mut workers = Vec::new();
    for i in 0..6 {
        let server = if i < 4 {
            Arc::clone(&grpc)
        } else {
            Arc::clone(&http)
        };
        let (meta, stop) = (Arc::clone(&meta), Arc::clone(&stop));
        workers.push(std::thread::spawn(move || {
            while !stop.load(Ordering::SeqCst) {
                match server.recv_timeout(Duration::from_millis(50)) {
                    Ok(Some(req)) => handle(&meta, req),
                    Ok(None) => {}
                    Err(_) => break,
                }
            }
        }));
    }
    while !term.load(Ordering::SeqCst) {
        std::thread::sleep(Duration::from_millis(20));
    }
    logging::info("cmd", "Received SIGTERM, shutting down");
    stop.store(true, Ordering::SeqCst);
    for w in workers {
        let _ = w.join();
    }
    logging::info("cmd::metasrv", "Metasrv instance stopped");
    logging::info("cmd", "Goodbye!");
    0
}

fn handle(meta: &Meta, mut req: Request) {
    let url = req.url().to_string();
    let (path, query) = url.split_once('?').unwrap_or((url.as_str(), ""));
    let mut body = Vec::new();
    let _ = std::io::Read::read_to_end(req.as_reader(), &mut body);
    let input: Value = serde_json::from_slice(&body).unwrap_or(Value::Null);
    let resp = match path {
        "/health" | "/admin/health" => json_resp(200, &json!({})),
        "/testbed/heartbeat" => match heartbeat(meta, &input) {
            Ok(()) => json_resp(200, &json!({"ok": true})),
            Err(e) => json_resp(503, &json!({"error": e})),
        },
        "/testbed/nodes" => match nodes(meta) {
            Ok(n) => json_resp(200, &Value::Array(n)),
            Err(e) => json_resp(503, &json!({"error": e})),
        },
        "/testbed/table-id" => match next_table_id(meta) {
            Ok(id) => json_resp(200, &json!({"table_id": id})),
            Err(e) => json_resp(503, &json!({"error": e})),
        },
        "/testbed/route" => match route(meta, &input) {
            Ok(r) => json_resp(200, &r),
            Err(e) => json_resp(503, &json!({"error": e})),
        },
        "/testbed/drop-database" => {
            let db = input["db"].as_str().unwrap_or_default();
            match meta.kv.delete_prefix(&format!("{ROUTE_PREFIX}{db}/")) {
                Ok(()) => json_resp(200, &json!({"ok": true})),
                Err(e) => json_resp(503, &json!({"error": e})),
            }
        }
        _ => {
            let _ = query;
            json_resp(404, &json!({"error": "not found"}))
        }
    };
    let _ = req.respond(resp);
}

fn node_key(n: &Value) -> String {
    let ty = n["peer_type"].as_str().unwrap_or("UNKNOWN");
    // Frontends have no node id (-1): their address tells them apart.
    let id = match n["peer_id"].as_i64() {
        Some(id) if id >= 0 => id.to_string(),
        _ => n["peer_addr"].as_str().unwrap_or_default().to_string(),
    };
    format!("{NODE_PREFIX}{ty}-{id}")
}

fn heartbeat(meta: &Meta, node: &Value) -> Result<(), String> {
    let mut n = node.clone();
    let key = node_key(&n);
    let before = meta.kv.get(&key)?;
    let first = before.is_none();
    if n.get("region_statistics").is_some() {
        let mut beats = meta.stat_beats.lock().unwrap_or_else(|e| e.into_inner());
        // The first heartbeat this metasrv hears from a node publishes at once.
        let new_here = !beats.contains_key(&key);
        let b = beats.entry(key.clone()).or_insert(0);
        *b += 1;
        if new_here || *b >= FLUSH_STATS_FACTOR {
            *b = 0;
        } else if let Some(old) = before.and_then(|v| serde_json::from_str::<Value>(&v).ok()) {
            // Not published yet: the statistics shown stay the last published ones.
            n["region_statistics"] = old["region_statistics"].clone();
        }
    }
    n["last_activity_ms"] = json!(now_ms());
    meta.kv.put(&key, &n.to_string())?;
    if first {
        logging::info(
            "meta_srv::handler::collect_cluster_info_handler",
            &format!(
                "Registered {} node {} at {}",
                n["peer_type"].as_str().unwrap_or_default(),
                n["peer_id"],
                n["peer_addr"].as_str().unwrap_or_default()
            ),
        );
    }
    Ok(())
}

/// The metasrv itself first, then every node heard from within the lease.
fn nodes(meta: &Meta) -> Result<Vec<Value>, String> {
    let now = now_ms();
    let mut out = vec![meta.self_node.clone()];
    for (_, v) in meta.kv.prefix(NODE_PREFIX)? {
        let Ok(mut n) = serde_json::from_str::<Value>(&v) else {
            continue;
        };
        let last = n["last_activity_ms"].as_i64().unwrap_or(0);
        if now - last > LEASE.as_millis() as i64 {
            continue;
        }
        n["active_ms_ago"] = json!(now - last);
        out.push(n);
    }
    Ok(out)
}

fn alive_datanodes(meta: &Meta) -> Result<Vec<Value>, String> {
    let mut d: Vec<Value> = nodes(meta)?
        .into_iter()
        .filter(|n| n["peer_type"] == "DATANODE")
        .collect();
    d.sort_by_key(|n| n["peer_id"].as_i64().unwrap_or(0));
    Ok(d)
}

/// Table ids are global in a cluster (the real metasrv's table metadata manager), from 1024.
fn next_table_id(meta: &Meta) -> Result<u64, String> {
    let _g = meta.seq.lock().unwrap_or_else(|e| e.into_inner());
    let id = meta
        .kv
        .get(TABLE_ID_SEQ)?
        .and_then(|v| v.parse::<u64>().ok())
        .unwrap_or(1024);
    meta.kv.put(TABLE_ID_SEQ, &(id + 1).to_string())?;
    Ok(id)
}

/// Where the regions of `db.table` are: one peer per region number. With `create`, a new
/// table's `regions` (default 1) are placed one after the other on the alive datanodes in
/// node-id order, each region taking the selector's next turn (the real `round_robin`
/// selector: an in-memory counter of the metasrv, from 0 at its start, one turn per region;
/// a real v1.0.2 put a one-region table on peer 1 and the next table's 8 regions on peers
/// 2,3,1,2,3,1,2,3). The partition rules given at creation are kept with the route, for the
/// frontends' writes. Answers `{"found": false}` for an unknown table without `create`.
fn route(meta: &Meta, input: &Value) -> Result<Value, String> {
    let db = input["db"].as_str().unwrap_or_default();
    let table = input["table"].as_str().unwrap_or_default();
    let key = format!("{ROUTE_PREFIX}{db}/{table}");
    let _g = meta.seq.lock().unwrap_or_else(|e| e.into_inner());
    let datanodes = alive_datanodes(meta)?;
    let answer = |stored: &Value, created: bool| -> Result<Value, String> {
        // Routes written before regions were spread name one datanode for the whole table.
        let ids: Vec<i64> = match stored["peers"].as_array() {
            Some(p) => p.iter().filter_map(Value::as_i64).collect(),
            None => stored["datanode"].as_i64().into_iter().collect(),
        };
        if ids.is_empty() {
            return Err("bad route".into());
        }
        let peers = ids
            .iter()
            .map(|id| {
                let n = datanodes
                    .iter()
                    .find(|n| n["peer_id"].as_i64() == Some(*id))
                    .ok_or_else(|| format!("Datanode {id} holding {db}.{table} is not available"))?;
                Ok(json!({"datanode": id, "http_addr": n["http_addr"], "peer_addr": n["peer_addr"]}))
            })
            .collect::<Result<Vec<Value>, String>>()?;
        Ok(json!({
            "found": true,
            "created": created,
            "http_addr": peers[0]["http_addr"],
            "peers": peers,
            "partition": stored["partition"],
        }))
    };
    if let Some(v) = meta.kv.get(&key)? {
        let stored = serde_json::from_str::<Value>(&v).map_err(|_| "bad route")?;
        return answer(&stored, false);
    }
    if input["create"].as_bool() != Some(true) {
        return Ok(json!({"found": false}));
    }
    if datanodes.is_empty() {
        return Err("Failed to allocate regions: no available Datanode".into());
    }
    let regions = input["regions"].as_u64().unwrap_or(1).max(1);
    let peers: Vec<Value> = (0..regions)
        .map(|_| {
            let turn = meta.selector.fetch_add(1, Ordering::SeqCst);
            datanodes[turn % datanodes.len()]["peer_id"].clone()
        })
        .collect();
    let stored = json!({ "peers": peers, "partition": input["partition"] });
    meta.kv.put(&key, &stored.to_string())?;
    answer(&stored, true)
}

/// Every datanode alive now (for broadcasts and gathers).
pub fn datanodes_of(list: &[Value]) -> Vec<Value> {
    let mut d: Vec<Value> = list
        .iter()
        .filter(|n| n["peer_type"] == "DATANODE")
        .cloned()
        .collect();
    d.sort_by_key(|n| n["peer_id"].as_i64().unwrap_or(0));
    d
}

#[cfg(test)]
mod tests {
    use super::*;

    fn meta_with_datanodes(ids: &[i64]) -> Meta {
        let meta = Meta {
            kv: Kv::memory(),
            seq: Mutex::new(()),
            selector: AtomicUsize::new(0),
            self_node: json!({"peer_id": 0, "peer_type": "METASRV"}),
            stat_beats: Mutex::new(Default::default()),
        };
        for id in ids {
            let node = json!({
                "peer_id": id,
                "peer_type": "DATANODE",
                "peer_addr": format!("127.0.0.1:{}", 4100 + id),
                "http_addr": format!("127.0.0.1:{}", 4200 + id),
            });
            heartbeat(&meta, &node).unwrap();
        }
        meta
    }

    fn peer_ids(r: &Value) -> Vec<i64> {
        r["peers"]
            .as_array()
            .unwrap()
            .iter()
            .map(|p| p["datanode"].as_i64().unwrap())
            .collect()
    }

    /// A real v1.0.2 cluster of 3 datanodes put the schema probe's one-region table on peer 1
    /// and the next table's 8 regions on peers 2,3,1,2,3,1,2,3 (2 datanodes, 4 regions:
    /// 2,1,2,1): one selector turn per region, datanodes in node-id order.
    #[test]
    fn regions_are_spread_round_robin_one_turn_per_region() {
        let meta = meta_with_datanodes(&[3, 1, 2]);
        let ask = |table: &str, create: bool, regions: u64| {
            route(
                &meta,
                &json!({"db": "benchmark", "table": table, "create": create, "regions": regions,
                        "partition": {"columns": ["hostname"], "rules": ["hostname < 'b'"]}}),
            )
            .unwrap()
        };
        let probe = ask("probe", true, 1);
        assert_eq!(peer_ids(&probe), [1]);
        let cpu = ask("cpu", true, 8);
        assert_eq!(peer_ids(&cpu), [2, 3, 1, 2, 3, 1, 2, 3]);
        assert_eq!(cpu["created"], true);
        assert_eq!(cpu["http_addr"], "127.0.0.1:4202");
        // Asked again (a write, a query): the same placement, and the rules kept with it.
        let again = ask("cpu", true, 1);
        assert_eq!(peer_ids(&again), [2, 3, 1, 2, 3, 1, 2, 3]);
        assert_eq!(again["created"], false);
        assert_eq!(again["partition"]["columns"], json!(["hostname"]));
        assert_eq!(ask("other", false, 1), json!({"found": false}));

        let two = meta_with_datanodes(&[1, 2]);
        route(&two, &json!({"db": "b", "table": "probe", "create": true})).unwrap();
        let t = route(
            &two,
            &json!({"db": "b", "table": "cpu", "create": true, "regions": 4}),
        )
        .unwrap();
        assert_eq!(peer_ids(&t), [2, 1, 2, 1]);
    }
}
