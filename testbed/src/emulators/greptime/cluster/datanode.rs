//! `greptime datanode start`: the standalone engine on its own data home, registered with the
//! metasrv by heartbeats, taking its table ids from it.

use std::net::{SocketAddr, TcpStream};
use std::time::Duration;

use serde_json::json;

use super::{agent, call_metasrv, heartbeat, metasrv_url, now_ms, HEARTBEAT};
use crate::emulators::greptime::config::Options;
use crate::emulators::greptime::knobs::Knobs;
use crate::emulators::greptime::version::Version;
use crate::emulators::greptime::{logging, server};

pub struct Args {
    pub node_id: u64,
    pub metasrv_addrs: String,
    /// Advertised gRPC address (`--grpc-server-addr`, else the bind address).
    pub grpc_server_addr: String,
}

pub fn run(
    mut opts: Options,
    a: Args,
    version: Version,
    knobs: Knobs,
    command_line: String,
) -> i32 {
    let Some(base) = metasrv_url(&a.metasrv_addrs) else {
        eprintln!("error: a datanode needs --metasrv-addrs");
        return 2;
    };
    // A datanode serves no MySQL or PostgreSQL protocol.
    opts.mysql_addr = None;
    opts.postgres_addr = None;
    let _ = server::ROLE.set("Datanode");
    let _ = crate::emulators::greptime::sql::PEER.set((a.node_id, a.grpc_server_addr.clone()));
    let http: SocketAddr = opts.http_addr;
    let ids_agent = agent();
    let ids_base = base.clone();
    let _ = crate::emulators::greptime::store::TABLE_IDS.set(Box::new(move || {
        let v = call_metasrv(&ids_agent, &ids_base, "/testbed/table-id", Some(json!({})))?;
        v["table_id"]
            .as_u64()
            .map(|n| n as u32)
            .ok_or_else(|| "metasrv answered no table id".to_string())
    }));
    let node = json!({
        "peer_id": a.node_id,
        "peer_type": "DATANODE",
        "peer_addr": a.grpc_server_addr,
        "http_addr": http.to_string(),
        "version": version.text(),
        "git_commit": version.commit(),
        "start_time": now_ms(),
    });
    std::thread::spawn(move || {
        // Registered once its HTTP port answers (it has opened its regions by then).
        for _ in 0..60_000 {
            if TcpStream::connect_timeout(&http, Duration::from_millis(200)).is_ok() {
                break;
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        let agent = agent();
        let mut failing = false;
        let mut node = node;
        loop {
            // The region statistics ride on the heartbeat, as the real datanode's do
            // (`heartbeat.rs` load_region_stats): the metasrv and so information_schema know
            // them as of the last heartbeat, up to 3 s late.
            node["region_statistics"] = own_region_statistics(&agent, &http);
            match heartbeat(&agent, &base, &node) {
                Ok(()) if failing => {
                    failing = false;
                    logging::info("datanode::heartbeat", "Heartbeat to metasrv restored");
                }
                Ok(()) => {}
                Err(e) if !failing => {
                    failing = true;
                    logging::log(
                        "WARN",
                        "datanode::heartbeat",
                        &format!("Failed to send heartbeat to metasrv: {e}"),
                    );
                }
                Err(_) => {}
            }
            std::thread::sleep(HEARTBEAT);
        }
    });
    server::run(opts, version, knobs, command_line, None)
}

/// This datanode's `information_schema.region_statistics` (schema and rows), read from its
/// own HTTP port; null when it does not answer.
fn own_region_statistics(agent: &ureq::Agent, http: &SocketAddr) -> serde_json::Value {
    agent
        .get(&format!("http://{http}/v1/sql"))
        .query("sql", "SELECT * FROM information_schema.region_statistics")
        .call()
        .ok()
        .and_then(|r| r.into_json::<serde_json::Value>().ok())
        .map(|v| v["output"][0]["records"].clone())
        .unwrap_or(serde_json::Value::Null)
}
