//! What an external GreptimeDB is made of, from `information_schema.cluster_info` asked through
//! every `--url`: one `STANDALONE` peer, or a cluster's `METASRV`, `DATANODE` and `FRONTEND`
//! peers (GreptimeDB's sqlness cases `standalone|distributed/information_schema/cluster_info`).
//! tsbsctl cannot see the hosts behind the URLs, so this answer is all it records about them,
//! and URLs whose answers differ are not one deployment (refused before anything is written).

use std::collections::BTreeMap;

use serde_json::{json, Value};

use super::GreptimeDb;
use crate::error::{Error, Result};

/// The columns every version since 0.6 has (later ones add hardware and status columns, and
/// `uptime`/`active_time` change with every answer, so they take no part in the comparison).
const SQL: &str =
    "SELECT peer_id, peer_type, peer_addr, version, start_time FROM information_schema.cluster_info";

/// One peer as `cluster_info` lists it.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
struct Peer {
    peer_type: String,
    peer_id: i64,
    peer_addr: String,
    version: String,
    /// Milliseconds since the epoch; `None` where the server does not know it (a metasrv).
    start_time: Option<i64>,
}

fn peers_of(out: &Value) -> Result<Vec<Peer>> {
    let names: Vec<&str> = out
        .pointer("/records/schema/column_schemas")
        .and_then(Value::as_array)
        .map(|c| c.iter().filter_map(|c| c["name"].as_str()).collect())
        .unwrap_or_default();
    let col = |row: &Value, name: &str| -> Value {
        names
            .iter()
            .position(|n| *n == name)
            .and_then(|i| row.get(i))
            .cloned()
            .unwrap_or(Value::Null)
    };
    let rows = out
        .pointer("/records/rows")
        .and_then(Value::as_array)
        .ok_or_else(|| Error::failed("information_schema.cluster_info answered without rows"))?;
    let mut peers: Vec<Peer> = rows
        .iter()
        .map(|r| Peer {
            peer_type: col(r, "peer_type").as_str().unwrap_or_default().to_string(),
            peer_id: col(r, "peer_id").as_i64().unwrap_or(-1),
            peer_addr: col(r, "peer_addr").as_str().unwrap_or_default().to_string(),
            version: col(r, "version").as_str().unwrap_or_default().to_string(),
            start_time: col(r, "start_time").as_i64(),
        })
        .collect();
    peers.sort();
    Ok(peers)
}

/// The topology record: the peers, how many of each type, and whether the URLs are a
/// standalone server or a cluster's frontends. A server without `cluster_info` (or that
/// refuses it) gives `{"known": false, "reason": ..}`: unknown, not guessed.
pub fn probe(c: &reqwest::blocking::Client, urls: &[String]) -> Result<Value> {
    let mut first: Option<(String, Vec<Peer>)> = None;
    for u in urls {
        let out = match GreptimeDb::sql_with(c, u, None, SQL) {
            Ok(o) => o,
            Err(e) => {
                return Ok(json!({
                    "known": false,
                    "source": "information_schema.cluster_info",
                    "reason": format!("{u}: {}", e.message),
                }))
            }
        };
        let peers = peers_of(&out)?;
        match &first {
            None => first = Some((u.clone(), peers)),
            Some((u0, p0)) if *p0 != peers => {
                return Err(Error::invalid(format!(
                    "the --url servers are not one GreptimeDB: {u0} lists {} in information_schema.cluster_info, {u} lists {}",
                    describe(p0),
                    describe(&peers)
                ))
                .with_hint("pass the frontends of one cluster (or one standalone server) as --url"))
            }
            Some(_) => {}
        }
    }
    let (_, peers) = first.ok_or_else(|| Error::invalid("no --url to probe"))?;
    let mut counts: BTreeMap<String, usize> = BTreeMap::new();
    for p in &peers {
        *counts.entry(p.peer_type.clone()).or_default() += 1;
    }
    let mode = if counts.contains_key("STANDALONE") {
        "standalone"
    } else {
        "cluster"
    };
    let frontends = counts.get("FRONTEND").copied().unwrap_or(0);
    Ok(json!({
        "known": true,
        "source": "information_schema.cluster_info",
        "mode": mode,
        "counts": counts,
        "summary": describe(&peers),
        "urls": urls.len(),
        // A cluster's frontends that no --url reaches take no part in the load or the queries
        // (the URLs are HTTP endpoints and `peer_addr` is gRPC, so which ones is unknown).
        "frontends_unused": frontends.saturating_sub(urls.len()),
        "peers": peers.iter().map(|p| json!({
            "peer_type": p.peer_type,
            "peer_id": p.peer_id,
            "peer_addr": p.peer_addr,
            "version": p.version,
            "start_time_ms": p.start_time,
        })).collect::<Vec<_>>(),
    }))
}

/// "1 METASRV, 3 DATANODE, 2 FRONTEND" in a fixed order.
fn describe(peers: &[Peer]) -> String {
    let order = ["STANDALONE", "METASRV", "DATANODE", "FLOWNODE", "FRONTEND"];
    let mut counts: BTreeMap<&str, usize> = BTreeMap::new();
    for p in peers {
        *counts.entry(p.peer_type.as_str()).or_default() += 1;
    }
    let mut parts: Vec<String> = order
        .iter()
        .filter_map(|t| counts.get(t).map(|n| format!("{n} {t}")))
        .collect();
    parts.extend(
        counts
            .iter()
            .filter(|(t, _)| !order.contains(t))
            .map(|(t, n)| format!("{n} {t}")),
    );
    if parts.is_empty() {
        "no peers".into()
    } else {
        parts.join(", ")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn answer(rows: Value) -> Value {
        json!({"records": {"schema": {"column_schemas": [
            {"name": "peer_id", "data_type": "Int64"},
            {"name": "peer_type", "data_type": "String"},
            {"name": "peer_addr", "data_type": "String"},
            {"name": "version", "data_type": "String"},
            {"name": "start_time", "data_type": "TimestampMillisecond"}]},
            "rows": rows}})
    }

    #[test]
    fn a_cluster_answer_is_described_in_role_order() {
        // The rows of GreptimeDB's distributed sqlness case (peer_addr is the gRPC address).
        let out = answer(json!([
            [1, "DATANODE", "127.0.0.1:4101", "1.0.2", 1],
            [2, "DATANODE", "127.0.0.1:4102", "1.0.2", 1],
            [3, "DATANODE", "127.0.0.1:4103", "1.0.2", 1],
            [-1, "FRONTEND", "127.0.0.1:4001", "1.0.2", 2],
            [0, "METASRV", "127.0.0.1:3002", "unknown", null]
        ]));
        let p = peers_of(&out).unwrap();
        assert_eq!(describe(&p), "1 METASRV, 3 DATANODE, 1 FRONTEND");
        assert_eq!(p[0].peer_type, "DATANODE");
        assert_eq!(
            p.iter()
                .find(|p| p.peer_type == "METASRV")
                .unwrap()
                .start_time,
            None
        );
    }

    #[test]
    fn a_standalone_answer_is_one_peer() {
        let out = answer(json!([[0, "STANDALONE", "", "1.0.2", 1733000000000i64]]));
        assert_eq!(describe(&peers_of(&out).unwrap()), "1 STANDALONE");
        assert!(peers_of(&json!({"affectedrows": 0})).is_err());
    }
}
