//! GreptimeDB (standalone): GitHub releases, `greptime standalone start -c config.toml`,
//! readiness by `POST /v1/sql` `SHOW DATABASES`, admin SQL over `/v1/sql`.

mod analyze;
mod before_queries;
pub mod cluster;
mod compact;
pub mod datalocation;
mod distribution;
mod driver;
pub mod explain;
mod external;
mod flags;
mod loading;
mod managed_server;
pub mod memshape;
pub mod partition;
mod partitioned;
pub mod ssts;
pub mod storage;
mod topology;
mod workspace_setup;

use std::path::Path;

use serde_json::Value;

use super::{admin_client, Distribution, FilePart, Latest, Product, Reporting, StorageFootprint};
use crate::error::{Error, Result};
use crate::queryset::QueryFormat;
use crate::workspace_manifest::WorkspaceManifest;

const TEMPLATE: &str = include_str!("../../templates/greptimedb/standalone.toml.j2");
/// `version_source` of a version found through GitHub's `releases/latest`.
pub const LATEST_SOURCE: &str = "github-latest-stable";
/// Its TSBS loader.
pub const LOAD_GREPTIME: &str = "tsbs_load_greptime";
/// Its TSBS query runner: the InfluxDB v1 runner (GreptimeDB's `/v1/sql` query paths). Other
/// products whose servers answer the same paths borrow it.
pub const RUN_QUERIES_GREPTIME: &str = "tsbs_run_queries_influx";
const REPO: &str = "GreptimeTeam/greptimedb";

/// The GreptimeDB product.
#[derive(Debug, Clone, Copy, Default)]
pub struct GreptimeDb;

impl GreptimeDb {
    fn sql_url(endpoint: &str) -> String {
        format!("{endpoint}/v1/sql")
    }

    /// Runs one statement through `/v1/sql`; returns the first output object.
    pub fn sql(&self, endpoint: &str, db: Option<&str>, sql: &str) -> Result<Value> {
        Self::sql_with(&admin_client()?, endpoint, db, sql)
    }

    /// A maintenance statement (`ADMIN FLUSH_TABLE`, `ADMIN COMPACT_TABLE`): synchronous on
    /// the server, which answers only once the merge and the manifest update are done, so no
    /// client timeout cuts it short (only the connect has one). Callers run it on a thread and
    /// watch Ctrl-C.
    pub fn maintenance_sql(&self, endpoint: &str, db: Option<&str>, sql: &str) -> Result<Value> {
        Self::sql_with(&crate::http::local(None)?, endpoint, db, sql)
    }

    fn sql_with(
        client: &reqwest::blocking::Client,
        endpoint: &str,
        db: Option<&str>,
        sql: &str,
    ) -> Result<Value> {
        Self::sql_coded(client, endpoint, db, sql).map_err(|(e, _)| e)
    }

    /// As [`Self::sql_with`]; a refusal comes with GreptimeDB's own status code (the JSON
    /// `code` of its error answer, e.g. [`TABLE_NOT_FOUND`]) when it gave one.
    fn sql_coded(
        client: &reqwest::blocking::Client,
        endpoint: &str,
        db: Option<&str>,
        sql: &str,
    ) -> std::result::Result<Value, (Error, Option<u64>)> {
        let mut form = vec![("sql", sql)];
        if let Some(db) = db {
            form.push(("db", db));
        }
        let mut req = client.post(Self::sql_url(endpoint)).form(&form);
        // An external server's credentials (`--user`/`--password-env`), as HTTP basic auth.
        let auth = crate::tsbs::credentials::for_url(endpoint);
        if let Some(a) = &auth {
            req = req.basic_auth(&a.user, Some(a.password.expose()));
        }
        let what = format!("{sql:?}");
        let uncoded = |e: Error| (e, None);
        let a = crate::http::send(&format!("GreptimeDB at {endpoint}"), &what, req, None)
            .map_err(uncoded)?;
        let body = a.json("GreptimeDB", &what).map_err(uncoded)?;
        if a.status == reqwest::StatusCode::UNAUTHORIZED {
            return Err(uncoded(unauthorized(
                endpoint,
                auth.as_ref(),
                &a.said("error"),
            )));
        }
        if !a.is_success() {
            let code = body.get("code").and_then(Value::as_u64);
            return Err((a.refused("GreptimeDB", &what, &a.said("error")), code));
        }
        body.get("output")
            .and_then(|o| o.get(0))
            .cloned()
            .ok_or_else(|| {
                uncoded(Error::failed(format!(
                    "GreptimeDB answered {sql:?} without output"
                )))
            })
    }
}

/// GreptimeDB's status code (`common_error::status_code::StatusCode`, the `code` of its JSON
/// error answer, HTTP 400) for a table that is not there: a real v1.0.2 answers `SELECT
/// count(*) FROM cpu` with no such table `{"code":4001,"error":"Failed to plan SQL: Table not
/// found: greptime.benchmark.cpu",..}`.
pub const TABLE_NOT_FOUND: u64 = 4001;
/// Its code for a database that is not there (`Database not found: benchmark`).
pub const DATABASE_NOT_FOUND: u64 = 4004;

/// GreptimeDB's 401 (its static user provider refused the request): exit 2, the server's own
/// words (`Username and password does not match, username: U`) and what to pass.
fn unauthorized(
    endpoint: &str,
    auth: Option<&crate::tsbs::credentials::BasicAuth>,
    said: &str,
) -> Error {
    match auth {
        Some(a) => Error::invalid(format!(
            "GreptimeDB at {endpoint} refused user {:?}: {said} (HTTP 401)",
            a.user
        ))
        .with_hint("check --user and the password in the variable --password-env names"),
        None => Error::invalid(format!(
            "GreptimeDB at {endpoint} needs authentication: {said} (HTTP 401)"
        ))
        .with_hint("pass --user NAME --password-env VAR (the variable holding the password)"),
    }
    .with_http_status(401)
}

impl Product for GreptimeDb {
    fn name(&self) -> &'static str {
        "greptimedb"
    }
    fn display_name(&self) -> String {
        "GreptimeDB".into()
    }
    fn has_copy(&self) -> bool {
        true
    }
    fn maintenance(&self) -> Option<Box<dyn super::Maintenance>> {
        Some(Box::new(GreptimeDb))
    }
    /// Its own flags (compaction, analyze, the query run's flush and version override:
    /// `greptimedb/flags.rs`, recorded flat as they always were), its manual compaction (the
    /// operation `compact`), where its data was (`data_location`), its analyze phase and
    /// what it does before the queries.
    fn bench_ext(&self) -> Option<&'static super::ext::BenchExt> {
        Some(&BENCH_EXT)
    }
}

impl StorageFootprint for GreptimeDb {
    /// On S3: the bucket under the prefix (SSTs, indexes, manifests), and the local write
    /// cache (a cluster: each datanode's, `cache/datanode-<i>`).
    fn object_store_footprint(
        &self,
        ws: &WorkspaceManifest,
        ws_dir: &Path,
    ) -> Result<Option<(Value, Option<Value>)>> {
        let Some(s) = storage::ObjectStorage::of(&ws.extra)? else {
            return Ok(None);
        };
        let datanodes = cluster::Topology::of(ws).map(|t| t.datanodes);
        let (o, cache) = s.record(&ws_dir.join(storage::CACHE_DIR), datanodes)?;
        Ok(Some((o, Some(cache))))
    }
    /// `--storage s3`: the bucket and prefix (`root`) of the workspace's storage.
    fn object_location(
        &self,
        _database_id: &str,
        extra: &serde_json::Map<String, Value>,
    ) -> Result<Option<crate::s3::Location>> {
        Ok(storage::ObjectStorage::of(extra)?.map(|s| s.location))
    }
    fn classify_file(&self, rel: &Path) -> FilePart {
        classify(rel)
    }
    fn footprint_layout(&self) -> Option<&'static str> {
        Some("greptimedb")
    }
}

impl Reporting for GreptimeDb {
    fn templates(&self) -> &'static [(&'static str, &'static str)] {
        &[
            (
                "summary/partitions",
                include_str!("../../templates/greptimedb/summary-partitions.md.j2"),
            ),
            (
                "summary/storage",
                include_str!("../../templates/greptimedb/summary-storage.md.j2"),
            ),
            (
                "summary/never_flushed",
                include_str!("../../templates/greptimedb/summary-never-flushed.md.j2"),
            ),
            (
                "summary/data_location",
                include_str!("../../templates/greptimedb/summary-data-location.md.j2"),
            ),
            (
                "summary/operations",
                include_str!("../../templates/greptimedb/summary-operations.md.j2"),
            ),
            (
                "report.md/settings",
                include_str!("../../templates/greptimedb/report-settings.md.j2"),
            ),
            (
                "report.html/settings",
                include_str!("../../templates/greptimedb/report-settings.html.j2"),
            ),
            (
                "report.md/storage",
                include_str!("../../templates/greptimedb/report-storage.md.j2"),
            ),
            (
                "report.md/storage_note",
                include_str!("../../templates/greptimedb/report-storage-note.md.j2"),
            ),
            (
                "report.html/storage",
                include_str!("../../templates/greptimedb/report-storage.html.j2"),
            ),
            (
                "report.html/storage_note",
                include_str!("../../templates/greptimedb/report-storage-note.html.j2"),
            ),
        ]
    }
    /// A workspace on object storage records where (the variables' names, not the keys).
    fn server_settings(
        &self,
        ws: Option<&WorkspaceManifest>,
        _data_dir: Option<&Path>,
        _runtime_version: Option<&str>,
    ) -> Option<Value> {
        let s = storage::ObjectStorage::of(&ws?.extra).ok()??;
        Some(serde_json::json!({
            "source": "the workspace manifest, fixed at prepare",
            "object_storage": storage::ObjectStorage::field(Some(&s)),
        }))
    }
}

static BENCH_EXT: super::ext::BenchExt = super::ext::BenchExt {
    flags: flags::FLAGS,
    record: super::ext::Record::Flat,
    resolve: flags::resolve,
    data_location: Some(&datalocation::DATA_LOCATION),
    analyze: Some(&analyze::ANALYZE),
    before_queries: Some(&before_queries::BEFORE_QUERIES),
    version_override: Some(&flags::VERSION_OVERRIDE),
    basic_auth: Some(&flags::BASIC_AUTH),
    partitioning: flags::partitioning,
    operations: &[compact::COMPACT],
    maintenance: &[compact::COMPACTION_WORDS, before_queries::FLUSH_WORDS],
    ..super::ext::BenchExt::NONE
};

impl super::Maintenance for GreptimeDb {
    /// A real v1.0.2 stopped during a compaction finishes its window passes, then fails the
    /// manifest update ("Region ... is stopped") and keeps none of it: waiting buys nothing.
    fn discarded_on_stop(&self, sql: &str) -> Option<&'static str> {
        sql.to_ascii_uppercase().contains("COMPACT_TABLE").then_some(
            "a compaction running when GreptimeDB stops is thrown away (its manifest update fails on the stopping region), so the stop does not wait for it",
        )
    }
    fn sql(&self, endpoint: &str, db: Option<&str>, sql: &str) -> Result<Value> {
        GreptimeDb::sql(self, endpoint, db, sql)
    }
    fn maintenance_sql(&self, endpoint: &str, db: Option<&str>, sql: &str) -> Result<Value> {
        GreptimeDb::maintenance_sql(self, endpoint, db, sql)
    }
}

/// The registry line of GreptimeDB.
pub const ENTRY: super::Entry = super::Entry {
    name: "greptimedb",
    display: "GreptimeDB",
    variant_flag: None,
    variants: &[],
    make: |_| Ok(Box::new(GreptimeDb)),
    sources: &[],
};

#[allow(non_upper_case_globals)]
impl QueryFormat {
    pub const Greptime: QueryFormat = QueryFormat {
        name: "greptime",
        manifest_kind: "greptimedb-query-set",
        bytes_per_query: 4096,
        generator_flags: &[],
        use_cases: &["devops", "iot"],
        refused_types: &[],
        answers: Some(crate::answers::PrintFormat::JsonEnvelope),
    };
}

/// GreptimeDB standalone's data home (reference/real/greptimedb.md §6): `wal/` (raft-engine
/// WAL of all regions) is WAL; `metadata/` (the raft-engine metadata store, also `*.raftlog`)
/// is metadata; `*.puffin` are index files; `data/**.parquet` are the SSTs; manifests,
/// `index_intermediate/`, `tmp/` and the rest are other. Only the top-level directory decides
/// WAL and metadata, so a database named `wal` (`data/greptime/wal/...`) keeps its SSTs.
pub fn classify(rel: &Path) -> FilePart {
    // A cluster's data dir: `etcd/`, `postgres/` (the metadata store) and `metasrv/` hold
    // metadata; `datanode-<i>/` is a
    // datanode's data home, laid out as a standalone's.
    let first = rel
        .components()
        .next()
        .map(|c| c.as_os_str().to_string_lossy().into_owned())
        .unwrap_or_default();
    if rel.components().count() > 1 {
        if matches!(first.as_str(), "etcd" | "postgres" | "metasrv") {
            return FilePart::Metadata;
        }
        if first
            .strip_prefix("datanode-")
            .is_some_and(|n| !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit()))
        {
            return classify(rel.strip_prefix(&first).unwrap_or(rel));
        }
    }
    let mut comps = rel.components().map(|c| c.as_os_str().to_string_lossy());
    let top = comps.next().unwrap_or_default();
    let is_file_at_top = rel.components().count() == 1;
    let ext = rel
        .extension()
        .map(|e| e.to_string_lossy().to_ascii_lowercase())
        .unwrap_or_default();
    if is_file_at_top {
        FilePart::Other
    } else if top == "wal" {
        FilePart::Wal
    } else if top == "metadata" {
        FilePart::Metadata
    } else if ext == "puffin" {
        FilePart::Index
    } else if top == "data" && ext == "parquet" {
        FilePart::Data
    } else {
        FilePart::Other
    }
}

/// The Cargo version a nightly or hash build reports: `1.2.0` for `1.2.0-nightly-20260706`
/// and `1.2.0-d1e61a4ad-20260706`; `None` for stable and beta versions.
fn nightly_cargo_version(version: &str) -> Option<&str> {
    let (core, pre) = version.split_once('-')?;
    let first = pre.split('-').next().unwrap_or("");
    let hash = first.len() >= 7 && first.bytes().all(|b| b.is_ascii_hexdigit());
    (first == "nightly" || hash).then_some(core)
}

/// Checks GitHub's `releases/latest` answer: an object, not a draft, not a prerelease, with a
/// `tag_name` that is an exact version (one leading `v` stripped).
pub fn parse_latest(doc: &Value) -> Result<Latest> {
    let hint = "pass an exact --version (e.g. --version 1.1.4)";
    let obj = doc.as_object().ok_or_else(|| {
        Error::failed("GitHub's latest GreptimeDB release answer is not a JSON object")
            .with_hint(hint)
    })?;
    let tag = obj.get("tag_name").and_then(Value::as_str).unwrap_or("");
    for flag in ["draft", "prerelease"] {
        if obj.get(flag).and_then(Value::as_bool).unwrap_or(false) {
            return Err(Error::failed(format!(
                "GitHub's latest GreptimeDB release {tag:?} is marked {flag}; tsbsctl installs only stable releases without --version"
            ))
            .with_hint(format!(
                "to install it anyway, name it: --version {}",
                tag.strip_prefix('v').unwrap_or(tag)
            )));
        }
    }
    if tag.is_empty() {
        return Err(
            Error::failed("GitHub's latest GreptimeDB release has no tag_name").with_hint(hint),
        );
    }
    let version = GreptimeDb.normalize_version(tag).map_err(|_| {
        Error::failed(format!(
            "GitHub's latest GreptimeDB release has an invalid tag {tag:?}"
        ))
        .with_hint(hint)
    })?;
    Ok(Latest {
        version,
        source: LATEST_SOURCE,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::error::Missing;
    use crate::product::{Loading, WorkspaceSetup};
    use serde_json::json;

    /// Issue 23 §4: a count of a table or database that is not there is GreptimeDB's own
    /// code (4001, 4004, as a real v1.0.2 answers), as [`Missing`] with the name asked for;
    /// another refusal is not, whatever its words.
    #[test]
    fn a_count_of_what_is_not_there_is_told_by_the_status_code() {
        let count = |status, body| {
            let ep = crate::http::answers_in_turn(vec![(status, body)]);
            GreptimeDb.count_rows(&ep, "benchmark", "cpu").unwrap_err()
        };
        let e = count(
            "400 Bad Request",
            r#"{"code":4001,"error":"Failed to plan SQL: Table not found: greptime.benchmark.cpu","execution_time_ms":0}"#,
        );
        assert_eq!(e.missing(), Some(&Missing::Table("cpu".into())), "{e:?}");
        assert!(e.message.contains("Table not found"), "{}", e.message);
        let e = count(
            "400 Bad Request",
            r#"{"code":4004,"error":"Database not found: benchmark","execution_time_ms":0}"#,
        );
        assert_eq!(e.missing(), Some(&Missing::Database("benchmark".into())));
        let e = count(
            "400 Bad Request",
            r#"{"code":1004,"error":"Column not found, or whatever not found","execution_time_ms":0}"#,
        );
        assert_eq!((e.missing(), e.http_status()), (None, Some(400)));
    }

    #[test]
    fn latest_answers() {
        let ok =
            parse_latest(&json!({"tag_name":"v1.1.4","draft":false,"prerelease":false})).unwrap();
        assert_eq!(ok.version, "1.1.4");
        assert_eq!(ok.source, "github-latest-stable");
        let pre =
            parse_latest(&json!({"tag_name":"v1.2.0-beta.1","draft":false,"prerelease":true}))
                .unwrap_err();
        assert!(pre.message.contains("prerelease"), "{}", pre.message);
        assert!(parse_latest(&json!({"tag_name":"v1.2.0","draft":true})).is_err());
        assert!(parse_latest(&json!({"tag_name":"bad"})).is_err());
        assert!(parse_latest(&json!([])).is_err());
    }

    #[test]
    fn versions_and_output() {
        let g = GreptimeDb;
        assert_eq!(g.normalize_version("v1.1.4").unwrap(), "1.1.4");
        assert_eq!(g.normalize_version("1.2.0-beta.1").unwrap(), "1.2.0-beta.1");
        assert_eq!(g.normalize_version("vv1.1.4").unwrap_err().exit_code(), 2);
        let out = "GreptimeDB \nbranch: main\ncommit: abc\nclean: true\nversion: 1.1.4\n";
        assert!(g.check_version_output("1.1.4", out).is_ok());
        assert!(g.check_version_output("1.1.3", out).is_err());
        assert!(g.check_version_output("1.1", out).is_err());
        assert!(g
            .check_version_output("1.1.4", "version: 1.1.4-nightly")
            .is_err());
        // Nightly and hash builds print the Cargo version.
        let nightly = "GreptimeDB \nbranch: main\ncommit: d1e61a4ad\nclean: true\nversion: 1.2.0\n";
        assert!(g
            .check_version_output("1.2.0-nightly-20260706", nightly)
            .is_ok());
        assert!(g
            .check_version_output("1.2.0-d1e61a4ad-20260706", nightly)
            .is_ok());
        assert!(g
            .check_version_output("1.3.0-nightly-20260706", nightly)
            .is_err());
        assert!(g.check_version_output("1.2.0-beta.1", nightly).is_err());
    }

    #[test]
    fn ports_and_assets() {
        let g = GreptimeDb;
        let p = g.default_ports(4000).unwrap();
        assert_eq!(p["grpc"], 4001);
        assert_eq!(p["postgres"], 4003);
        assert_eq!(g.default_ports(65534).unwrap_err().exit_code(), 2);
    }

    #[test]
    fn config_uses_loopback_ports_and_workspace_paths() {
        let g = GreptimeDb;
        let ws: WorkspaceManifest = serde_json::from_value(json!({
            "database_id": "w1", "product": "greptimedb", "version": "0.11.0",
            "version_source": "explicit", "platform": "linux-amd64",
            "installation_path": "/i", "binary_sha256": "x", "database": "benchmark",
            "ports": {"http": 4100, "grpc": 4101, "mysql": 4102, "postgres": 4103},
            "config_sha256": null, "binding": null, "created_at": "t", "updated_at": "t",
            "tool_version": "0"
        }))
        .unwrap();
        let dir = Path::new("/tmp/a \"quoted\" dir");
        let text = g.render_config(&ws, dir).unwrap().unwrap();
        assert!(text.ends_with("\n"));
        let v: toml::Value = toml::from_str(&text).unwrap();
        assert_eq!(v["http"]["addr"].as_str(), Some("127.0.0.1:4100"));
        assert_eq!(v["grpc"]["addr"].as_str(), Some("127.0.0.1:4101"));
        assert_eq!(v["mysql"]["addr"].as_str(), Some("127.0.0.1:4102"));
        assert_eq!(
            v["storage"]["data_home"].as_str(),
            Some("/tmp/a \"quoted\" dir/data")
        );
        assert_eq!(
            v["logging"]["dir"].as_str(),
            Some("/tmp/a \"quoted\" dir/logs")
        );
        let mut ws2 = ws.clone();
        ws2.version = "1.1.4".into();
        let v: toml::Value = toml::from_str(&g.render_config(&ws2, dir).unwrap().unwrap()).unwrap();
        assert_eq!(v["grpc"]["bind_addr"].as_str(), Some("127.0.0.1:4101"));
        assert!(v["grpc"].get("addr").is_none());
        // Every rendered config: no telemetry, no server-side cut of long statements ("0s"
        // only where it means "none": from 0.9).
        for (ver, timeout) in [
            ("0.8.2", "24h"),
            ("0.9.0", "0s"),
            ("0.11.0", "0s"),
            ("1.2.0", "0s"),
        ] {
            let mut w = ws.clone();
            w.version = ver.into();
            let v: toml::Value =
                toml::from_str(&g.render_config(&w, dir).unwrap().unwrap()).unwrap();
            assert_eq!(v["enable_telemetry"].as_bool(), Some(false), "{ver}");
            assert_eq!(v["http"]["timeout"].as_str(), Some(timeout), "{ver}");
        }
    }

    #[test]
    fn s3_config_has_the_store_and_the_cache_but_no_key() {
        let g = GreptimeDb;
        let mut ws: WorkspaceManifest = serde_json::from_value(json!({
            "database_id": "s1", "product": "greptimedb", "version": "1.1.4",
            "version_source": "explicit", "platform": "linux-amd64",
            "installation_path": "/i", "binary_sha256": "x", "database": "benchmark",
            "ports": {"http": 4100, "grpc": 4101, "mysql": 4102, "postgres": 4103},
            "config_sha256": null, "binding": null, "created_at": "t", "updated_at": "t",
            "tool_version": "0"
        }))
        .unwrap();
        let dir = Path::new("/w/s1");
        let file = g.render_config(&ws, dir).unwrap().unwrap();
        let flags = storage::Flags {
            storage: Some("s3".into()),
            s3: crate::s3::LocationFlags {
                endpoint: Some("http://127.0.0.1:7070/".into()),
                bucket: Some("tsbs".into()),
                ..Default::default()
            },
            prefix: Some("runs/s1".into()),
            cache_size: Some("1GB".into()),
        };
        let s = flags.parse().unwrap().unwrap();
        ws.extra.insert(
            storage::FIELD.into(),
            storage::ObjectStorage::field(Some(&s)),
        );
        let text = g.render_config(&ws, dir).unwrap().unwrap();
        let v: toml::Value = toml::from_str(&text).unwrap();
        let st = &v["storage"];
        assert_eq!(st["type"].as_str(), Some("S3"));
        assert_eq!(st["bucket"].as_str(), Some("tsbs"));
        assert_eq!(st["root"].as_str(), Some("runs/s1"));
        assert_eq!(st["endpoint"].as_str(), Some("http://127.0.0.1:7070"));
        assert_eq!(st["region"].as_str(), Some("us-east-1"));
        assert_eq!(st["data_home"].as_str(), Some("/w/s1/data"));
        assert!(st.get("access_key_id").is_none() && st.get("secret_access_key").is_none());
        let mito = &v["region_engine"][0]["mito"];
        assert_eq!(mito["enable_write_cache"].as_bool(), Some(true));
        assert_eq!(mito["write_cache_path"].as_str(), Some("/w/s1/cache"));
        // 1GB is 10^9 bytes to tsbsctl; GreptimeDB would read "1GB" as GiB: bytes it is.
        assert_eq!(mito["write_cache_size"].as_str(), Some("1000000000B"));
        assert!(v["region_engine"][1].get("file").is_some());
        // The file-storage config is unchanged by the S3 branch of the template.
        assert!(
            file.contains("[storage]\ntype = \"File\"\ndata_home = \"/w/s1/data\"\n\n[logging]"),
            "{file}"
        );
        // A rerun gets the same store under a prefix of its own; a file run gets no field.
        let settings = g.server_settings(Some(&ws), None, None).unwrap();
        let f = g.rerun_workspace_fields(Some(&settings));
        let r = storage::ObjectStorage::of(&f).unwrap().unwrap();
        assert!(
            r.location.prefix.starts_with("runs/s1-rerun-"),
            "{}",
            r.location.prefix
        );
        assert_eq!(
            (r.location.bucket, r.cache_size_bytes),
            (s.location.bucket.clone(), s.cache_size_bytes)
        );
        assert!(g.rerun_workspace_fields(None).is_empty());
        // Before 0.12 the write cache keys had other names: refused.
        ws.version = "0.11.0".into();
        assert_eq!(g.render_config(&ws, dir).unwrap_err().exit_code(), 2);
    }
}
