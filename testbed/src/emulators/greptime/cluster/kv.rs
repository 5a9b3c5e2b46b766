//! The metasrv's metadata store: a real etcd through its v3 JSON gateway (`POST /v3/kv/put`,
//! `/v3/kv/range`, keys and values base64), a real PostgreSQL (`postgres-store`: the real
//! backend's table `greptime_metakv(k bytea PRIMARY KEY, v bytea)` and its statements, from
//! `common/meta/src/kv_backend/rds/postgres.rs` of v1.0.2), or `memory-store` (gone when the
//! metasrv stops, as the real `MemoryKvBackend` is).

use std::collections::BTreeMap;
use std::sync::Mutex;
use std::time::Duration;

use serde_json::{json, Value};

pub enum Kv {
    Etcd {
        agent: ureq::Agent,
        /// `http://host:port` of each `--store-addrs` entry; the first that answers is used.
        endpoints: Vec<String>,
    },
    Postgres {
        /// The `--store-addrs` URL (`postgresql://user@host:port/db`).
        url: String,
        /// Connected on first use, again after an error.
        client: Box<Mutex<Option<postgres::Client>>>,
    },
    Memory(Mutex<BTreeMap<String, String>>),
}

/// The real backend's default `meta_table_name`.
const PG_TABLE: &str = "greptime_metakv";

/// The key after every key starting with `prefix` (etcd's `range_end`).
fn prefix_end(prefix: &str) -> Vec<u8> {
    let mut end = prefix.as_bytes().to_vec();
    if let Some(last) = end.last_mut() {
        *last += 1;
    }
    end
}

impl Kv {
    pub fn etcd(addrs: &[String]) -> Kv {
        let agent = ureq::AgentBuilder::new()
            .timeout_connect(Duration::from_secs(2))
            .timeout(Duration::from_secs(10))
            .build();
        let endpoints = addrs
            .iter()
            .map(|a| {
                if a.starts_with("http://") {
                    a.trim_end_matches('/').to_string()
                } else {
                    format!("http://{a}")
                }
            })
            .collect();
        Kv::Etcd { agent, endpoints }
    }

    pub fn postgres(addrs: &[String]) -> Kv {
        Kv::Postgres {
            url: addrs.first().cloned().unwrap_or_default(),
            client: Box::new(Mutex::new(None)),
        }
    }

    /// Runs `f` on the PostgreSQL connection (made, and the table created as the real backend
    /// does, on first use); a failed call drops the connection for the next one to remake.
    fn pg<T>(
        &self,
        f: impl FnOnce(&mut postgres::Client) -> Result<T, postgres::Error>,
    ) -> Result<T, String> {
        let Kv::Postgres { url, client } = self else {
            return Err("not postgres".into());
        };
        let mut guard = client.lock().unwrap_or_else(|p| p.into_inner());
        if guard.is_none() {
            let mut c = postgres::Client::connect(url, postgres::NoTls)
                .map_err(|e| format!("{url}: {e}"))?;
            c.batch_execute(&format!(
                "CREATE TABLE IF NOT EXISTS \"{PG_TABLE}\"(k bytea PRIMARY KEY, v bytea)"
            ))
            .map_err(|e| e.to_string())?;
            *guard = Some(c);
        }
        let r = f(guard.as_mut().expect("connected above"));
        if r.is_err() {
            *guard = None;
        }
        r.map_err(|e| e.to_string())
    }

    pub fn memory() -> Kv {
        Kv::Memory(Mutex::new(BTreeMap::new()))
    }

    fn call(&self, path: &str, body: Value) -> Result<Value, String> {
        let Kv::Etcd { agent, endpoints } = self else {
            return Err("not etcd".into());
        };
        let mut last = String::from("no --store-addrs");
        for e in endpoints {
            match agent.post(&format!("{e}{path}")).send_json(body.clone()) {
                Ok(r) => return r.into_json::<Value>().map_err(|e| e.to_string()),
                Err(err) => last = format!("{e}: {err}"),
            }
        }
        Err(last)
    }

    /// Checks the store answers (etcd: its `/v3/maintenance/status`).
    pub fn check(&self) -> Result<String, String> {
        match self {
            Kv::Memory(_) => Ok("memory".into()),
            Kv::Etcd { .. } => {
                let v = self.call("/v3/maintenance/status", json!({}))?;
                Ok(format!(
                    "etcd {}",
                    v["version"].as_str().unwrap_or("unknown")
                ))
            }
            Kv::Postgres { .. } => self.pg(|c| {
                let row = c.query_one("SHOW server_version", &[])?;
                Ok(format!("PostgreSQL {}", row.get::<_, String>(0)))
            }),
        }
    }

    pub fn put(&self, key: &str, value: &str) -> Result<(), String> {
        match self {
            Kv::Memory(m) => {
                m.lock()
                    .unwrap_or_else(|p| p.into_inner())
                    .insert(key.into(), value.into());
                Ok(())
            }
            Kv::Etcd { .. } => self
                .call(
                    "/v3/kv/put",
                    json!({"key": b64(key.as_bytes()), "value": b64(value.as_bytes())}),
                )
                .map(|_| ()),
            Kv::Postgres { .. } => self.pg(|c| {
                c.execute(
                    &format!("INSERT INTO \"{PG_TABLE}\" (k, v) VALUES ($1, $2) ON CONFLICT (k) DO UPDATE SET v = excluded.v"),
                    &[&key.as_bytes(), &value.as_bytes()],
                )
                .map(|_| ())
            }),
        }
    }

    /// Every key starting with `prefix`, with its value.
    pub fn prefix(&self, prefix: &str) -> Result<Vec<(String, String)>, String> {
        match self {
            Kv::Memory(m) => Ok(m
                .lock()
                .unwrap_or_else(|p| p.into_inner())
                .range(prefix.to_string()..)
                .take_while(|(k, _)| k.starts_with(prefix))
                .map(|(k, v)| (k.clone(), v.clone()))
                .collect()),
            Kv::Postgres { .. } => self.pg(|c| {
                let rows = c.query(
                    &format!("SELECT k, v FROM \"{PG_TABLE}\" WHERE k >= $1 AND k < $2 ORDER BY k"),
                    &[&prefix.as_bytes(), &prefix_end(prefix).as_slice()],
                )?;
                Ok(rows
                    .iter()
                    .map(|r| {
                        let (k, v): (Vec<u8>, Vec<u8>) = (r.get(0), r.get(1));
                        (
                            String::from_utf8_lossy(&k).into_owned(),
                            String::from_utf8_lossy(&v).into_owned(),
                        )
                    })
                    .collect())
            }),
            Kv::Etcd { .. } => {
                let end = prefix_end(prefix);
                let v = self.call(
                    "/v3/kv/range",
                    json!({"key": b64(prefix.as_bytes()), "range_end": b64(&end)}),
                )?;
                let mut out = Vec::new();
                for kv in v["kvs"].as_array().into_iter().flatten() {
                    let k = unb64(kv["key"].as_str().unwrap_or_default())?;
                    let val = unb64(kv["value"].as_str().unwrap_or_default())?;
                    out.push((
                        String::from_utf8_lossy(&k).into_owned(),
                        String::from_utf8_lossy(&val).into_owned(),
                    ));
                }
                Ok(out)
            }
        }
    }

    /// Deletes every key starting with `prefix`.
    pub fn delete_prefix(&self, prefix: &str) -> Result<(), String> {
        match self {
            Kv::Memory(m) => {
                m.lock()
                    .unwrap_or_else(|p| p.into_inner())
                    .retain(|k, _| !k.starts_with(prefix));
                Ok(())
            }
            Kv::Postgres { .. } => self.pg(|c| {
                c.execute(
                    &format!("DELETE FROM \"{PG_TABLE}\" WHERE k >= $1 AND k < $2"),
                    &[&prefix.as_bytes(), &prefix_end(prefix).as_slice()],
                )
                .map(|_| ())
            }),
            Kv::Etcd { .. } => {
                let end = prefix_end(prefix);
                self.call(
                    "/v3/kv/deleterange",
                    json!({"key": b64(prefix.as_bytes()), "range_end": b64(&end)}),
                )
                .map(|_| ())
            }
        }
    }

    pub fn get(&self, key: &str) -> Result<Option<String>, String> {
        Ok(self
            .prefix(key)?
            .into_iter()
            .find(|(k, _)| k == key)
            .map(|(_, v)| v))
    }
}

const ALPHABET: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

fn b64(data: &[u8]) -> String {
    let mut out = String::new();
    for chunk in data.chunks(3) {
        let b = [
            chunk[0],
            *chunk.get(1).unwrap_or(&0),
            *chunk.get(2).unwrap_or(&0),
        ];
        let n = (u32::from(b[0]) << 16) | (u32::from(b[1]) << 8) | u32::from(b[2]);
        for i in 0..4 {
            if i <= chunk.len() {
                out.push(ALPHABET[((n >> (18 - 6 * i)) & 63) as usize] as char);
            } else {
                out.push('=');
            }
        }
    }
    out
}

fn unb64(s: &str) -> Result<Vec<u8>, String> {
    let mut out = Vec::new();
    let mut acc = 0u32;
    let mut bits = 0;
    for c in s.bytes().filter(|c| *c != b'=') {
        let v = ALPHABET
            .iter()
            .position(|a| *a == c)
            .ok_or_else(|| format!("bad base64 from etcd: {s:?}"))? as u32;
        acc = (acc << 6) | v;
        bits += 6;
        if bits >= 8 {
            bits -= 8;
            out.push((acc >> bits) as u8);
            acc &= (1 << bits) - 1;
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn base64_round_trips() {
        for s in [
            "",
            "a",
            "ab",
            "abc",
            "__meta_cluster_node_info-0-DATANODE-1",
        ] {
            assert_eq!(unb64(&b64(s.as_bytes())).unwrap(), s.as_bytes());
        }
        assert_eq!(b64(b"ab"), "YWI=");
    }

    #[test]
    fn memory_prefix_lists_only_the_prefix() {
        let kv = Kv::memory();
        kv.put("a/1", "x").unwrap();
        kv.put("a/2", "y").unwrap();
        kv.put("b/1", "z").unwrap();
        assert_eq!(kv.prefix("a/").unwrap().len(), 2);
        assert_eq!(kv.get("b/1").unwrap().as_deref(), Some("z"));
    }
}
