//! Object storage of a managed GreptimeDB workspace (issue 25 §4): fixed at `prepare`, recorded
//! in the workspace manifest as `storage` (the bucket, prefix, endpoint, region, cache size and
//! the NAMES of the variables holding the credentials, never their values). The config file
//! gets `[storage] type = "S3"` with everything but the credentials; those reach the server
//! only through its environment (`GREPTIMEDB_STANDALONE__STORAGE__ACCESS_KEY_ID`, ...: the
//! real config layers CLI > file > env > defaults, and the file names no key, so env wins).

use std::path::Path;

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use crate::error::{Error, Result};
use crate::s3;

/// The manifest field.
pub const FIELD: &str = "storage";
/// What a role reads its S3 credentials from: `<env prefix>` plus these
/// (`GREPTIMEDB_STANDALONE__STORAGE__ACCESS_KEY_ID`, `GREPTIMEDB_DATANODE__...`).
pub const ENV_ACCESS_KEY_SUFFIX: &str = "__STORAGE__ACCESS_KEY_ID";
pub const ENV_SECRET_KEY_SUFFIX: &str = "__STORAGE__SECRET_ACCESS_KEY";
/// The env prefixes of the roles that hold data (the real binary's `--env-prefix` defaults).
pub const STANDALONE_ENV: &str = "GREPTIMEDB_STANDALONE";
pub const DATANODE_ENV: &str = "GREPTIMEDB_DATANODE";
/// `write_cache_*` keys exist from v0.12.0 (before: `experimental_write_cache_*`).
pub const MIN_VERSION: &str = "0.12.0";
/// The local cache directory, in the workspace (beside `data/`); a cluster's datanodes each
/// have `cache/datanode-<i>`.
pub const CACHE_DIR: &str = "cache";

/// `storage` of a workspace on S3: where (shared with every product's object storage) and
/// the local cache.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ObjectStorage {
    /// The bucket and GreptimeDB's `root` (`prefix`: every object's key starts with `<prefix>/`).
    #[serde(flatten)]
    pub location: s3::Location,
    /// The local write cache (`[region_engine.mito] write_cache_size`), in bytes; a cluster's
    /// every datanode has one of this size.
    pub cache_size_bytes: u64,
    /// What the user typed for `--cache-size`.
    pub cache_size: String,
}

/// The `--storage` flags of `greptimedb prepare`, as given.
#[derive(Debug, Clone, Default)]
pub struct Flags {
    pub storage: Option<String>,
    pub s3: s3::LocationFlags,
    pub prefix: Option<String>,
    pub cache_size: Option<String>,
}

const USAGE: &str = "--storage s3 --s3-endpoint URL --s3-bucket B --s3-prefix P --cache-size SIZE";

impl Flags {
    fn any_s3(&self) -> bool {
        self.s3.any() || self.prefix.is_some() || self.cache_size.is_some()
    }

    /// `None`: local files. Checks every value; reads nothing from the network.
    pub fn parse(&self) -> Result<Option<ObjectStorage>> {
        match self.storage.as_deref() {
            None | Some("file") => {
                if self.any_s3() {
                    return Err(Error::invalid(
                        "the --s3-* and --cache-size flags need --storage s3",
                    ));
                }
                Ok(None)
            }
            Some("s3") => {
                let need = |v: &Option<String>, flag: &str| {
                    v.clone().ok_or_else(|| {
                        Error::invalid(format!("--storage s3 needs {flag}")).with_hint(USAGE)
                    })
                };
                let prefix = need(&self.prefix, "--s3-prefix")?;
                let location = self.s3.parse(&prefix, "--storage s3", USAGE)?;
                let cache_size = need(&self.cache_size, "--cache-size")?;
                if location.prefix.is_empty() {
                    // The bucket's other contents would be counted as this workspace's.
                    return Err(Error::invalid(
                        "--s3-prefix must name a key prefix of its own (e.g. tsbs/g1)",
                    ));
                }
                let bytes = crate::fsutil::parse_size(&cache_size)
                    .map_err(|e| Error::invalid(format!("--cache-size: {e}")))?;
                Ok(Some(ObjectStorage {
                    location,
                    cache_size_bytes: bytes,
                    cache_size,
                }))
            }
            Some(other) => Err(Error::invalid(format!(
                "--storage {other:?} is not known: use file (the default) or s3"
            ))),
        }
    }
}

/// The parts of GreptimeDB's object layout, as a footprint names them.
const PARTS: [(&str, &str); 4] = [
    ("data", "SST data files"),
    ("index", "Index"),
    ("manifest", "Manifests"),
    ("other", "Other"),
];

impl ObjectStorage {
    /// The workspace's storage: `None` for local files (no field, or `type` = `file`).
    pub fn of(extra: &Map<String, Value>) -> Result<Option<ObjectStorage>> {
        match extra.get(FIELD) {
            None | Some(Value::Null) => Ok(None),
            Some(v) if v.get("type").and_then(Value::as_str) == Some("file") => Ok(None),
            Some(v) => serde_json::from_value(v.clone()).map(Some).map_err(|e| {
                Error::integrity(format!("the workspace's `storage` record is damaged: {e}"))
            }),
        }
    }

    /// The manifest field.
    pub fn field(this: Option<&ObjectStorage>) -> Value {
        match this {
            Some(s) => serde_json::to_value(s).expect("storage serializes"),
            None => serde_json::json!({"type": "file"}),
        }
    }

    /// One signed listing of the prefix (see [`s3::Location::probe`]).
    pub fn probe(&self) -> Result<()> {
        self.location.probe()
    }

    /// What a footprint records: the bucket's objects under the prefix by part
    /// (`object_store`), and the local caches measured on disk (`cache`): the one under
    /// `cache_dir`, or with `datanodes` = N one per datanode (`cache_dir/datanode-<i>`, summed,
    /// and each in `per_datanode`).
    pub fn record(&self, cache_dir: &Path, datanodes: Option<u32>) -> Result<(Value, Value)> {
        let mut o = self.location.record(category, &PARTS)?;
        o["local_note"] = "what stays on the local disk (WAL, metadata)".into();
        let (files, bytes, apparent) = crate::fsutil::tree_usage(cache_dir)?;
        let mut cache = serde_json::json!({
            "dir": cache_dir, "bytes": bytes, "apparent_bytes": apparent,
            "files": files, "capacity_bytes": self.cache_size_bytes,
        });
        if let Some(n) = datanodes {
            let mut per = Vec::new();
            for d in 1..=n {
                let dir = cache_dir.join(format!("datanode-{d}"));
                let (files, bytes, _) = crate::fsutil::tree_usage(&dir)?;
                per.push(serde_json::json!({
                    "datanode": d, "dir": dir, "bytes": bytes, "files": files,
                }));
            }
            cache["per_datanode"] = per.into();
            cache["capacity_bytes"] = (self.cache_size_bytes * u64::from(n)).into();
            cache["capacity_each_bytes"] = self.cache_size_bytes.into();
        }
        Ok((o, cache))
    }

    /// The server's environment: the credentials under GreptimeDB's own variable names for a
    /// role's env prefix (`GREPTIMEDB_STANDALONE`, `GREPTIMEDB_DATANODE`).
    pub fn server_env(&self, env_prefix: &str) -> Result<Vec<(String, String)>> {
        let creds = self.location.credentials()?;
        let (ak, sk) = creds.values();
        Ok(vec![
            (format!("{env_prefix}{ENV_ACCESS_KEY_SUFFIX}"), ak.into()),
            (format!("{env_prefix}{ENV_SECRET_KEY_SUFFIX}"), sk.into()),
        ])
    }

    /// One line for humans.
    pub fn describe(&self) -> String {
        format!(
            "{}, local cache {} ({})",
            self.location.describe(),
            self.cache_size,
            self.location.keys_from()
        )
    }
}

/// The part of GreptimeDB's object layout a key (relative to the prefix) belongs to:
/// `data/<catalog>/<schema>/<table>/<region>/<file>.parquet` are SSTs, `.../index/*.puffin`
/// index files, `.../manifest/*` region manifests, anything else other.
pub fn category(rel: &str) -> String {
    let in_data = rel.starts_with("data/");
    let part = if in_data && rel.ends_with(".parquet") {
        "data"
    } else if rel.ends_with(".puffin") {
        "index"
    } else if in_data && rel.contains("/manifest/") {
        "manifest"
    } else {
        "other"
    };
    part.into()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn s3_flags() -> Flags {
        Flags {
            storage: Some("s3".into()),
            s3: s3::LocationFlags {
                endpoint: Some("http://127.0.0.1:7070".into()),
                bucket: Some("tsbs".into()),
                ..Default::default()
            },
            prefix: Some("/runs/g1/".into()),
            cache_size: Some("64MiB".into()),
        }
    }

    #[test]
    fn flags_parse_and_refuse() {
        let s = s3_flags().parse().unwrap().unwrap();
        let l = &s.location;
        assert_eq!(l.prefix, "runs/g1");
        assert_eq!(l.endpoint, "http://127.0.0.1:7070");
        assert_eq!(l.region, "us-east-1");
        assert_eq!(s.cache_size_bytes, 64 << 20);
        assert_eq!(
            (l.access_key_env.as_str(), l.secret_key_env.as_str()),
            ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY")
        );
        // The manifest field keeps its flat shape.
        let f = ObjectStorage::field(Some(&s));
        assert_eq!(f["type"], "s3");
        assert_eq!(f["bucket"], "tsbs");
        assert_eq!(f["cache_size_bytes"], 64 << 20);
        assert_eq!(Flags::default().parse().unwrap(), None);
        let bad = [
            Flags {
                s3: s3::LocationFlags {
                    bucket: None,
                    ..s3_flags().s3
                },
                ..s3_flags()
            },
            Flags {
                cache_size: Some("lots".into()),
                ..s3_flags()
            },
            Flags {
                prefix: Some("/".into()),
                ..s3_flags()
            },
            Flags {
                storage: Some("gcs".into()),
                ..s3_flags()
            },
            Flags {
                storage: None,
                ..s3_flags()
            },
        ];
        for f in bad {
            assert_eq!(f.parse().unwrap_err().exit_code(), 2, "{f:?}");
        }
        // Round trip through the manifest field.
        let mut m = Map::new();
        m.insert(FIELD.into(), ObjectStorage::field(Some(&s)));
        assert_eq!(ObjectStorage::of(&m).unwrap(), Some(s));
        m.insert(FIELD.into(), ObjectStorage::field(None));
        assert_eq!(ObjectStorage::of(&m).unwrap(), None);
    }

    #[test]
    fn object_layout_categories() {
        let r = "data/greptime/public/1024/1024_0000000000";
        assert_eq!(category(&format!("{r}/0a1b.parquet")), "data");
        assert_eq!(category(&format!("{r}/index/0a1b.puffin")), "index");
        assert_eq!(
            category(&format!("{r}/manifest/00000000000000000001.json")),
            "manifest"
        );
        assert_eq!(category("somewhere/else.parquet"), "other");
    }
}
