//! The metasrv's metadata store: a real etcd through its v3 JSON gateway (`POST /v3/kv/put`,
//! `/v3/kv/range`, keys and values base64), or `memory-store` (gone when the metasrv stops, as
//! the real `MemoryKvBackend` is).

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
    Memory(Mutex<BTreeMap<String, String>>),
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
                Ok(v["version"].as_str().unwrap_or("unknown").to_string())
            }
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
            Kv::Etcd { .. } => {
                let mut end = prefix.as_bytes().to_vec();
                if let Some(last) = end.last_mut() {
                    *last += 1;
                }
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
            Kv::Etcd { .. } => {
                let mut end = prefix.as_bytes().to_vec();
                if let Some(last) = end.last_mut() {
                    *last += 1;
                }
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
