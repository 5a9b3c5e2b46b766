//! Object storage of a managed GreptimeDB workspace (issue 25 §4): fixed at `prepare`, recorded
//! in the workspace manifest as `storage` (the bucket, prefix, endpoint, region, cache size and
//! the NAMES of the variables holding the credentials, never their values). The config file
//! gets `[storage] type = "S3"` with everything but the credentials; those reach the server
//! only through its environment (`GREPTIMEDB_STANDALONE__STORAGE__ACCESS_KEY_ID`, ...: the
//! real config layers CLI > file > env > defaults, and the file names no key, so env wins).

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use crate::error::{Error, Result};
use crate::s3;

/// The manifest field.
pub const FIELD: &str = "storage";
/// What the server reads its S3 credentials from (its env prefix is `GREPTIMEDB_STANDALONE`).
pub const ENV_ACCESS_KEY: &str = "GREPTIMEDB_STANDALONE__STORAGE__ACCESS_KEY_ID";
pub const ENV_SECRET_KEY: &str = "GREPTIMEDB_STANDALONE__STORAGE__SECRET_ACCESS_KEY";
/// `write_cache_*` keys exist from v0.12.0 (before: `experimental_write_cache_*`).
pub const MIN_VERSION: &str = "0.12.0";
/// The local cache directory, in the workspace (beside `data/`).
pub const CACHE_DIR: &str = "cache";

/// `storage` of a workspace on S3.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ObjectStorage {
    /// `s3`.
    #[serde(rename = "type")]
    pub kind: String,
    pub endpoint: String,
    pub bucket: String,
    /// GreptimeDB's `root`: every object's key starts with `<prefix>/`.
    pub prefix: String,
    pub region: String,
    /// The local write cache (`[region_engine.mito] write_cache_size`), in bytes.
    pub cache_size_bytes: u64,
    /// What the user typed for `--cache-size`.
    pub cache_size: String,
    /// The variables tsbsctl reads the credentials from (names only).
    pub access_key_env: String,
    pub secret_key_env: String,
}

/// The `--storage` flags of `greptimedb prepare`, as given.
#[derive(Debug, Clone, Default)]
pub struct Flags {
    pub storage: Option<String>,
    pub endpoint: Option<String>,
    pub bucket: Option<String>,
    pub prefix: Option<String>,
    pub region: Option<String>,
    pub cache_size: Option<String>,
    pub access_key_env: Option<String>,
    pub secret_key_env: Option<String>,
}

impl Flags {
    fn any_s3(&self) -> bool {
        self.endpoint.is_some()
            || self.bucket.is_some()
            || self.prefix.is_some()
            || self.region.is_some()
            || self.cache_size.is_some()
            || self.access_key_env.is_some()
            || self.secret_key_env.is_some()
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
                        Error::invalid(format!("--storage s3 needs {flag}")).with_hint(
                            "--storage s3 --s3-endpoint URL --s3-bucket B --s3-prefix P --cache-size SIZE",
                        )
                    })
                };
                let endpoint = need(&self.endpoint, "--s3-endpoint")?;
                let bucket = need(&self.bucket, "--s3-bucket")?;
                let prefix = need(&self.prefix, "--s3-prefix")?;
                let cache_size = need(&self.cache_size, "--cache-size")?;
                let region = self.region.clone().unwrap_or_else(|| "us-east-1".into());
                let t = s3::Target::new(&endpoint, &bucket, &prefix, &region)?;
                if t.prefix.is_empty() {
                    // The bucket's other contents would be counted as this workspace's.
                    return Err(Error::invalid(
                        "--s3-prefix must name a key prefix of its own (e.g. tsbs/g1)",
                    ));
                }
                let bytes = crate::fsutil::parse_size(&cache_size)
                    .map_err(|e| Error::invalid(format!("--cache-size: {e}")))?;
                Ok(Some(ObjectStorage {
                    kind: "s3".into(),
                    endpoint: t.endpoint.as_str().trim_end_matches('/').to_string(),
                    bucket: t.bucket,
                    prefix: t.prefix,
                    region: t.region,
                    cache_size_bytes: bytes,
                    cache_size,
                    access_key_env: self
                        .access_key_env
                        .clone()
                        .unwrap_or_else(|| "AWS_ACCESS_KEY_ID".into()),
                    secret_key_env: self
                        .secret_key_env
                        .clone()
                        .unwrap_or_else(|| "AWS_SECRET_ACCESS_KEY".into()),
                }))
            }
            Some(other) => Err(Error::invalid(format!(
                "--storage {other:?} is not known: use file (the default) or s3"
            ))),
        }
    }
}

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

    pub fn target(&self) -> Result<s3::Target> {
        s3::Target::new(&self.endpoint, &self.bucket, &self.prefix, &self.region)
    }

    /// The credentials, from the named variables of tsbsctl's environment (exit 2 if unset).
    pub fn credentials(&self) -> Result<s3::Credentials> {
        s3::Credentials::from_env(&self.access_key_env, &self.secret_key_env)
    }

    /// One signed listing of the prefix: the endpoint answers, the bucket exists, the keys
    /// may read it. Exit 2 otherwise, naming the variables (never their values).
    pub fn probe(&self) -> Result<()> {
        let creds = self.credentials()?;
        s3::probe(&client()?, &self.target()?, &creds).map_err(|e| {
            e.with_hint(format!(
                "check that {} serves bucket {:?}, and the keys in ${} and ${}",
                self.endpoint, self.bucket, self.access_key_env, self.secret_key_env
            ))
        })
    }

    /// The bucket's objects under the prefix, in the parts of GreptimeDB's object layout.
    pub fn footprint(&self) -> Result<s3::BucketFootprint> {
        let creds = self.credentials()?;
        let t = self.target()?;
        let objects = s3::list(&client()?, &t, &creds, 1000)?;
        Ok(s3::footprint(&objects, &t, category))
    }

    /// What a footprint records: the bucket's objects under the prefix by part
    /// (`object_store`), and the local cache measured on disk (`cache`).
    pub fn record(&self, cache_dir: &std::path::Path) -> Result<(Value, Value)> {
        let b = self.footprint()?;
        let mut o = serde_json::json!({
            "type": self.kind, "endpoint": self.endpoint, "bucket": self.bucket,
            "prefix": self.prefix, "region": self.region,
            "objects": b.objects, "bytes": b.bytes,
        });
        for k in ["data", "index", "manifest", "other"] {
            let (n, bytes) = b.by_category.get(k).copied().unwrap_or((0, 0));
            o[format!("{k}_objects")] = n.into();
            o[format!("{k}_bytes")] = bytes.into();
        }
        let (files, bytes, apparent) = crate::fsutil::tree_usage(cache_dir)?;
        let cache = serde_json::json!({
            "dir": cache_dir, "bytes": bytes, "apparent_bytes": apparent,
            "files": files, "capacity_bytes": self.cache_size_bytes,
        });
        Ok((o, cache))
    }

    /// The server's environment: the credentials under GreptimeDB's own variable names.
    pub fn server_env(&self) -> Result<Vec<(String, String)>> {
        let creds = self.credentials()?;
        let (ak, sk) = creds.values();
        Ok(vec![
            (ENV_ACCESS_KEY.into(), ak.into()),
            (ENV_SECRET_KEY.into(), sk.into()),
        ])
    }

    /// One line for humans.
    pub fn describe(&self) -> String {
        format!(
            "S3 bucket {} at {} under {}/ (region {}), local cache {} (credentials from ${} and ${})",
            self.bucket,
            self.endpoint,
            self.prefix,
            self.region,
            self.cache_size,
            self.access_key_env,
            self.secret_key_env
        )
    }
}

fn client() -> Result<reqwest::blocking::Client> {
    reqwest::blocking::Client::builder()
        .timeout(std::time::Duration::from_secs(60))
        .connect_timeout(std::time::Duration::from_secs(10))
        .build()
        .map_err(|e| Error::failed(format!("HTTP client: {e}")))
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
            endpoint: Some("http://127.0.0.1:7070".into()),
            bucket: Some("tsbs".into()),
            prefix: Some("/runs/g1/".into()),
            cache_size: Some("64MiB".into()),
            ..Default::default()
        }
    }

    #[test]
    fn flags_parse_and_refuse() {
        let s = s3_flags().parse().unwrap().unwrap();
        assert_eq!(s.prefix, "runs/g1");
        assert_eq!(s.endpoint, "http://127.0.0.1:7070");
        assert_eq!(s.region, "us-east-1");
        assert_eq!(s.cache_size_bytes, 64 << 20);
        assert_eq!(
            (s.access_key_env.as_str(), s.secret_key_env.as_str()),
            ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY")
        );
        assert_eq!(Flags::default().parse().unwrap(), None);
        let bad = [
            Flags {
                bucket: None,
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
