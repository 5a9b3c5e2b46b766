//! The object store under the emulated write buffer, as the real server's
//! `influxdb3_clap_blocks::object_store` builds it: `--object-store file` (a directory,
//! `--data-dir`) or `--object-store s3` (a bucket on a real S3 server, signed requests through
//! the testbed's own client). Either way the keys are the same (`<node-id>/wal/...`,
//! `<node-id>/dbs/...`, `<catalog prefix>/catalog/...`): the real server has no key prefix
//! option, the node id is the top directory.

use std::path::{Path, PathBuf};

use crate::s3::Client;

/// Where the objects go.
#[derive(Debug, Clone)]
pub enum Objects {
    /// `--object-store file --data-dir D`: key `k` is the file `D/k`.
    Dir(PathBuf),
    /// `--object-store s3 --bucket B`: key `k` is the object `B/k`.
    S3 { client: Client, bucket: String },
}

/// The `--object-store s3` options, as given (the keys from the flags or `AWS_*`).
#[derive(Clone)]
pub struct S3Config {
    pub bucket: Option<String>,
    pub endpoint: Option<String>,
    pub region: String,
    pub allow_http: bool,
    pub access_key_id: Option<String>,
    pub secret_access_key: Option<String>,
}

impl std::fmt::Debug for S3Config {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // Never the keys.
        write!(
            f,
            "S3Config {{ bucket: {:?}, endpoint: {:?}, region: {:?}, allow_http: {} }}",
            self.bucket, self.endpoint, self.region, self.allow_http
        )
    }
}

fn io_ctx(what: &str, path: &Path, e: std::io::Error) -> String {
    format!("{what} {}: {e}", path.display())
}

/// The real `object_store` error text of a failed S3 request, as `{:?}` prints it in
/// `failed to initialize catalog: object store error: ObjectStore(Generic { store: "S3", ... })`.
fn s3_error(method: &str, url: &str, e: &crate::s3::S3Error) -> String {
    format!(
        "Generic {{ store: \"S3\", source: RetryError {{ method: {method}, uri: Some({url}), retries: 0, inner: Status {{ status: {}, body: Some(\"<Error><Code>{}</Code></Error>\") }} }} }}",
        e.status, e.code
    )
}

impl Objects {
    /// `--object-store s3`: checks what the real builder and its first request would refuse,
    /// in the real words. `Err((parse, message))`: `parse` = a config error (`Cannot parse
    /// object store config: ...`), else a request error at catalog load.
    pub fn s3(c: &S3Config) -> Result<Objects, (bool, String)> {
        let Some(bucket) = c.bucket.clone().filter(|b| !b.is_empty()) else {
            return Err((
                true,
                "Error configuring Amazon S3: Generic S3 error: Missing bucket name".into(),
            ));
        };
        let endpoint = c
            .endpoint
            .clone()
            .unwrap_or_else(|| format!("https://s3.{}.amazonaws.com", c.region));
        if endpoint.starts_with("http://") && !c.allow_http {
            // reqwest with https_only: the first request fails.
            return Err((
                false,
                format!("ObjectStore(Generic {{ store: \"S3\", source: Reqwest {{ source: reqwest::Error {{ kind: Builder, url: \"{endpoint}/{bucket}\", source: \"URL scheme is not allowed\" }} }} }})"),
            ));
        }
        let (Some(ak), Some(sk)) = (
            c.access_key_id.clone().filter(|k| !k.is_empty()),
            c.secret_access_key.clone().filter(|k| !k.is_empty()),
        ) else {
            // Without keys the real builder falls back to the instance metadata service.
            return Err((
                false,
                "ObjectStore(Generic { store: \"S3\", source: Metadata { source: \"Error fetching token from instance metadata (testbed: no access key id and secret access key were given)\" } })".into(),
            ));
        };
        Ok(Objects::S3 {
            client: Client::new(&endpoint, &c.region, &ak, &sk),
            bucket,
        })
    }

    /// One listing of the whole store: the endpoint answers, the bucket exists, the keys are
    /// accepted (the real server's first catalog request fails otherwise).
    pub fn check(&self, first_key: &str) -> Result<(), String> {
        match self {
            Objects::Dir(d) => {
                std::fs::create_dir_all(d).map_err(|e| io_ctx("cannot create", d, e))
            }
            Objects::S3 { client, bucket } => match client.get(bucket, first_key) {
                Ok(_) => Ok(()),
                Err(e) if e.status == 404 && e.code == "NoSuchKey" => Ok(()),
                Err(e) => Err(format!(
                    "ObjectStore({})",
                    s3_error(
                        "GET",
                        &format!("{}/{bucket}/{first_key}", client.endpoint),
                        &e
                    )
                )),
            },
        }
    }

    /// `file` or `s3`, and where, for the log.
    pub fn describe(&self) -> Vec<(&'static str, String)> {
        match self {
            Objects::Dir(d) => vec![
                ("object_store_type", "Directory".into()),
                ("db_dir", d.display().to_string()),
            ],
            Objects::S3 { client, bucket } => vec![
                ("object_store_type", "S3".into()),
                ("bucket", format!("Some({bucket:?})")),
                ("endpoint", format!("Some({:?})", client.endpoint)),
            ],
        }
    }

    pub fn put(&self, key: &str, bytes: &[u8]) -> Result<(), String> {
        match self {
            Objects::Dir(d) => write_atomic(&d.join(key), bytes),
            Objects::S3 { client, bucket } => client
                .put(bucket, key, bytes)
                .map_err(|e| format!("cannot write object {key}: {e}")),
        }
    }

    /// `None` when there is no such object.
    pub fn get(&self, key: &str) -> Result<Option<Vec<u8>>, String> {
        match self {
            Objects::Dir(d) => {
                let p = d.join(key);
                match std::fs::read(&p) {
                    Ok(b) => Ok(Some(b)),
                    Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
                    Err(e) => Err(io_ctx("cannot read", &p, e)),
                }
            }
            Objects::S3 { client, bucket } => match client.get(bucket, key) {
                Ok(b) => Ok(Some(b)),
                Err(e) if e.status == 404 => Ok(None),
                Err(e) => Err(format!("cannot read object {key}: {e}")),
            },
        }
    }

    /// The keys under `dir` (a key prefix ending in `/`) ending in `suffix`, sorted.
    pub fn list(&self, dir: &str, suffix: &str) -> Result<Vec<String>, String> {
        let mut keys: Vec<String> = match self {
            Objects::Dir(d) => std::fs::read_dir(d.join(dir))
                .into_iter()
                .flatten()
                .flatten()
                .filter(|e| e.file_type().is_ok_and(|t| t.is_file()))
                .map(|e| format!("{dir}{}", e.file_name().to_string_lossy()))
                .collect(),
            Objects::S3 { client, bucket } => client
                .list(bucket, dir)
                .map_err(|e| format!("cannot list {dir}: {e}"))?
                .into_iter()
                .map(|(k, _)| k)
                // Only this level, as a directory listing.
                .filter(|k| !k[dir.len()..].contains('/'))
                .collect(),
        };
        keys.retain(|k| k.ends_with(suffix));
        keys.sort();
        Ok(keys)
    }

    /// Deletes one object (a missing one is no error).
    pub fn delete(&self, key: &str) {
        match self {
            Objects::Dir(d) => {
                let _ = std::fs::remove_file(d.join(key));
            }
            Objects::S3 { client, bucket } => {
                let _ = client.delete(bucket, key);
            }
        }
    }

    /// Deletes every object under `dir` (a key prefix ending in `/`).
    pub fn delete_all(&self, dir: &str) {
        match self {
            Objects::Dir(d) => {
                let _ = std::fs::remove_dir_all(d.join(dir));
            }
            Objects::S3 { client, bucket } => {
                for (k, _) in client.list(bucket, dir).unwrap_or_default() {
                    let _ = client.delete(bucket, &k);
                }
            }
        }
    }
}

fn write_atomic(path: &Path, bytes: &[u8]) -> Result<(), String> {
    use std::io::Write;
    let dir = path.parent().expect("parent");
    std::fs::create_dir_all(dir).map_err(|e| io_ctx("cannot create", dir, e))?;
    let tmp = dir.join(format!(
        ".{}.tmp",
        path.file_name().unwrap_or_default().to_string_lossy()
    ));
    let mut f = std::fs::File::create(&tmp).map_err(|e| io_ctx("cannot create", &tmp, e))?;
    f.write_all(bytes)
        .and_then(|_| f.sync_all())
        .map_err(|e| io_ctx("cannot write", &tmp, e))?;
    std::fs::rename(&tmp, path).map_err(|e| io_ctx("cannot rename", path, e))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_directory_store_lists_one_level_sorted() {
        let d = std::env::temp_dir().join(format!("tb-objects-{}", std::process::id()));
        let o = Objects::Dir(d.clone());
        o.put("n/wal/00000000002.wal", b"b").unwrap();
        o.put("n/wal/00000000001.wal", b"a").unwrap();
        o.put("n/wal/sub/x.wal", b"c").unwrap();
        assert_eq!(
            o.list("n/wal/", ".wal").unwrap(),
            vec!["n/wal/00000000001.wal", "n/wal/00000000002.wal"]
        );
        assert_eq!(o.get("n/wal/00000000001.wal").unwrap(), Some(b"a".to_vec()));
        assert_eq!(o.get("n/none").unwrap(), None);
        o.delete("n/wal/00000000001.wal");
        o.delete_all("n/wal/");
        assert!(o.list("n/wal/", "").unwrap().is_empty());
        let _ = std::fs::remove_dir_all(d);
    }

    #[test]
    fn s3_config_refusals_are_the_real_ones() {
        let base = S3Config {
            bucket: Some("b".into()),
            endpoint: Some("http://127.0.0.1:1".into()),
            region: "us-east-1".into(),
            allow_http: true,
            access_key_id: Some("AKID".into()),
            secret_access_key: Some("SECRETVALUE".into()),
        };
        assert!(Objects::s3(&base).is_ok());
        let e = Objects::s3(&S3Config {
            bucket: None,
            ..base.clone()
        })
        .unwrap_err();
        assert!(e.0 && e.1.contains("Missing bucket name"));
        let e = Objects::s3(&S3Config {
            allow_http: false,
            ..base.clone()
        })
        .unwrap_err();
        assert!(!e.0 && e.1.contains("URL scheme is not allowed"));
        let shown = format!("{base:?}");
        assert!(
            shown.contains("allow_http")
                && !shown.contains("AKID")
                && !shown.contains("SECRETVALUE")
        );
    }
}
