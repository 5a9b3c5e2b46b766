//! Object storage of a managed InfluxDB 3 workspace (`--object-store s3`, issue 25 §4): fixed
//! at `prepare`, recorded in the workspace manifest as `object_store` (endpoint, bucket,
//! region and the NAMES of the variables holding the keys, never their values). The server is
//! started with the real flags (`influxdb3_clap_blocks/src/object_store.rs`, v3.10.1):
//! `--object-store s3 --bucket B --aws-endpoint URL [--aws-allow-http]
//! --aws-default-region R`, and the keys only in its environment (`AWS_ACCESS_KEY_ID`,
//! `AWS_SECRET_ACCESS_KEY`, which those flags read; never an argv).
//!
//! The real server has no key prefix option: every object's key starts with the node id
//! (`<node>/wal/...`, `<node>/dbs/...`, `<node>/catalog/...`; Core's catalog prefix is the node
//! id too), so the workspace's prefix is its node id, and `--s3-prefix` is not offered.

use serde_json::{Map, Value};

use crate::error::{Error, Result};
use crate::s3::{Location, LocationFlags};
use crate::workspace_manifest::WorkspaceManifest;

/// The manifest field.
pub const FIELD: &str = "object_store";

/// What the record says of the prefix.
pub const PREFIX_SOURCE: &str =
    "the node id: InfluxDB 3 has no key prefix option, its objects go under <node-id>/";

const USAGE: &str =
    "--object-store s3 --s3-endpoint URL --s3-bucket B [--s3-region R] --s3-access-key-env VAR --s3-secret-key-env VAR";

/// The `--object-store` flags of `influxdb3 prepare`, as given.
#[derive(Debug, Clone, Default)]
pub struct Flags {
    pub object_store: Option<String>,
    pub s3: LocationFlags,
    /// Refused: the real server has no prefix option.
    pub prefix: Option<String>,
}

impl Flags {
    /// `None`: local files (`--object-store file`, the default). `node_id`: the workspace's,
    /// the top directory of its objects.
    pub fn parse(&self, node_id: &str) -> Result<Option<Location>> {
        if self.prefix.is_some() {
            return Err(Error::invalid(
                "--s3-prefix is not offered for InfluxDB 3: the server has no key prefix option",
            )
            .with_hint(format!(
                "leave it out: the workspace's objects go under its node id ({node_id}/); use a bucket or a --database-id of its own to keep runs apart"
            )));
        }
        match self.object_store.as_deref() {
            None | Some("file") => {
                if self.s3.any() {
                    return Err(Error::invalid("the --s3-* flags need --object-store s3"));
                }
                Ok(None)
            }
            Some("s3") => self.s3.parse(node_id, "--object-store s3", USAGE).map(Some),
            Some(other) => Err(Error::invalid(format!(
                "--object-store {other:?} is not supported: use file (the default) or s3"
            ))),
        }
    }
}

/// The node id of a workspace (its manifest's, else the one derived from its id).
fn node_id(ws: &WorkspaceManifest) -> String {
    node_id_of(&ws.database_id, &ws.extra)
}

/// [`node_id`] from a workspace's id and product fields.
pub fn node_id_of(database_id: &str, extra: &Map<String, Value>) -> String {
    extra
        .get("node_id")
        .and_then(Value::as_str)
        .map(str::to_string)
        .unwrap_or_else(|| super::InfluxDb3::node_id(database_id))
}

/// The workspace's object store: `None` for local files (no field, or `type` = `file`). The
/// prefix is always the workspace's node id.
pub fn of(ws: &WorkspaceManifest) -> Result<Option<Location>> {
    of_extra(&ws.extra, &node_id(ws))
}

/// [`of`] over a manifest's fields.
pub fn of_extra(extra: &Map<String, Value>, node_id: &str) -> Result<Option<Location>> {
    match extra.get(FIELD) {
        None | Some(Value::Null) => Ok(None),
        Some(v) if v.get("type").and_then(Value::as_str) == Some("file") => Ok(None),
        Some(v) => {
            let mut v = v.clone();
            v["prefix"] = node_id.into();
            serde_json::from_value(v).map(Some).map_err(|e| {
                Error::integrity(format!(
                    "the workspace's `object_store` record is damaged: {e}"
                ))
            })
        }
    }
}

/// The manifest field.
pub fn field(this: Option<&Location>) -> Value {
    match this {
        Some(l) => {
            let mut v = serde_json::to_value(l).expect("location serializes");
            v["prefix_source"] = PREFIX_SOURCE.into();
            v
        }
        None => serde_json::json!({"type": "file"}),
    }
}

/// The server's object-store flags (no key among them).
pub fn server_args(l: &Location) -> Vec<String> {
    let mut a = vec![
        "--object-store=s3".to_string(),
        format!("--bucket={}", l.bucket),
        format!("--aws-endpoint={}", l.endpoint),
        format!("--aws-default-region={}", l.region),
    ];
    if l.endpoint.starts_with("http://") {
        // The real client refuses plain HTTP otherwise ("URL scheme is not allowed").
        a.push("--aws-allow-http".into());
    }
    a
}

/// The server's environment: the keys under the names its flags read.
pub fn server_env(l: &Location) -> Result<Vec<(String, String)>> {
    let creds = l.credentials()?;
    let (ak, sk) = creds.values();
    Ok(vec![
        ("AWS_ACCESS_KEY_ID".into(), ak.into()),
        ("AWS_SECRET_ACCESS_KEY".into(), sk.into()),
    ])
}

/// The part of the real key layout a key (relative to `<node>/`) belongs to: `wal/*` is the
/// WAL, `dbs/**.parquet` the Parquet files, anything else (catalog, snapshot files, indexes)
/// other.
pub fn category(rel: &str) -> String {
    if rel.starts_with("wal/") {
        "wal"
    } else if rel.starts_with("dbs/") && rel.ends_with(".parquet") {
        "data"
    } else {
        "other"
    }
    .into()
}

const PARTS: [(&str, &str); 3] = [
    ("wal", "WAL (wal/)"),
    ("data", "Parquet files (dbs/)"),
    ("other", "Other (catalog, snapshots, indexes)"),
];

/// The bucket's objects under the node id, by part.
pub fn record(l: &Location) -> Result<Value> {
    let mut o = l.record(category, &PARTS)?;
    o["prefix_source"] = PREFIX_SOURCE.into();
    o["local_note"] =
        "the workspace's local data directory: with an S3 object store the server keeps its WAL, Parquet files and catalog in the bucket".into();
    Ok(o)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn flags() -> Flags {
        Flags {
            object_store: Some("s3".into()),
            s3: LocationFlags {
                endpoint: Some("http://127.0.0.1:7070/".into()),
                bucket: Some("tsbs".into()),
                ..Default::default()
            },
            prefix: None,
        }
    }

    #[test]
    fn flags_parse_and_refuse() {
        let l = flags().parse("core1-node").unwrap().unwrap();
        assert_eq!(l.prefix, "core1-node");
        assert_eq!(l.endpoint, "http://127.0.0.1:7070");
        assert_eq!(l.access_key_env, "AWS_ACCESS_KEY_ID");
        assert_eq!(Flags::default().parse("n").unwrap(), None);
        for bad in [
            Flags {
                prefix: Some("p".into()),
                ..flags()
            },
            Flags {
                object_store: Some("google".into()),
                ..flags()
            },
            Flags {
                object_store: None,
                ..flags()
            },
            Flags {
                s3: LocationFlags {
                    bucket: None,
                    ..flags().s3
                },
                ..flags()
            },
        ] {
            assert_eq!(bad.parse("n").unwrap_err().exit_code(), 2, "{bad:?}");
        }
        let args = server_args(&l);
        assert!(args.contains(&"--aws-allow-http".to_string()), "{args:?}");
        assert!(args.contains(&"--bucket=tsbs".to_string()), "{args:?}");
        // The record round-trips; the prefix is always the node id.
        let mut m = Map::new();
        m.insert(FIELD.into(), field(Some(&l)));
        assert_eq!(of_extra(&m, "core1-node").unwrap(), Some(l.clone()));
        assert_eq!(
            of_extra(&m, "other-node").unwrap().unwrap().prefix,
            "other-node"
        );
        m.insert(FIELD.into(), field(None));
        assert_eq!(of_extra(&m, "n").unwrap(), None);
    }

    #[test]
    fn key_layout_parts() {
        assert_eq!(category("wal/00000000001.wal"), "wal");
        assert_eq!(
            category("dbs/1/0/2023-06-11/00-00/0000000003.parquet"),
            "data"
        );
        assert_eq!(
            category("catalog/v3/logs/00000000000000000001.catalog"),
            "other"
        );
        assert_eq!(
            category("snapshots/00000000000000000001.info.json"),
            "other"
        );
    }
}
