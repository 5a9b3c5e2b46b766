//! ExampleDB: a skeleton third product, compiled only in tests. It exists to show (and to
//! keep showing) that a product is one module, its templates and one registry line: nothing
//! outside `src/product/` names it (tests/integration/exampledb.rs scans the sources for that).
//!
//! The imagined server speaks HTTP: `GET /health`, `GET /version` (`{"version": "..."}`),
//! `GET /count?db=D&table=T` (`{"rows": N}`); the imagined loader `tsbs_load_exampledb` takes
//! `--compression` and a secret `--api-key`. It has no release feed (like a PostgreSQL pinned
//! from a local directory): the release methods keep their refusing defaults.

use std::collections::BTreeMap;
use std::path::Path;

use serde_json::{json, Value};

use super::{check_semver, BenchCaps, FilePart, Product, ServerCommand, ToolOptions, CONFIG_FILE};
use crate::dataset::Profile;
use crate::error::{Error, Result};
use crate::platform::Platform;
use crate::queryset::QueryFormat;
use crate::server::Probe;
use crate::tsbs::{LoadTarget, QueryTarget, Secret, ToolArg};
use crate::workspace_manifest::WorkspaceManifest;

const TEMPLATE: &str = include_str!("../../templates/exampledb/exampledb.toml.j2");

/// The ExampleDB product.
#[derive(Debug, Clone, Copy, Default)]
pub struct ExampleDb;

/// The registry line of ExampleDB.
pub const ENTRY: super::Entry = super::Entry {
    name: "exampledb",
    display: "ExampleDB",
    variant_flag: None,
    variants: &[],
    make: |_| Ok(Box::new(ExampleDb)),
};

/// Manifest of an ExampleDB query set (kind `exampledb-query-set`).
#[derive(Debug, Clone, serde::Serialize, serde::Deserialize)]
#[serde(transparent)]
pub struct ExampleQuerySetManifest(pub crate::queryset::QuerySetManifest);
impl crate::manifest::Manifest for ExampleQuerySetManifest {
    const KIND: &'static str = "exampledb-query-set";
}
impl From<crate::queryset::QuerySetManifest> for ExampleQuerySetManifest {
    fn from(m: crate::queryset::QuerySetManifest) -> ExampleQuerySetManifest {
        ExampleQuerySetManifest(m)
    }
}
impl From<ExampleQuerySetManifest> for crate::queryset::QuerySetManifest {
    fn from(m: ExampleQuerySetManifest) -> crate::queryset::QuerySetManifest {
        m.0
    }
}

/// ExampleDB's query format.
const FORMAT: QueryFormat = QueryFormat {
    name: "example",
    manifest_kind: "exampledb-query-set",
    write: crate::queryset::write_as::<ExampleQuerySetManifest>,
    read: crate::queryset::read_as::<ExampleQuerySetManifest>,
    bytes_per_query: 1024,
};

impl Product for ExampleDb {
    fn name(&self) -> &'static str {
        "exampledb"
    }
    fn display_name(&self) -> String {
        "ExampleDB".into()
    }
    fn binary_name(&self) -> &'static str {
        "exampledb"
    }
    fn check_platform(&self, _platform: &Platform) -> Result<()> {
        Ok(())
    }
    fn normalize_version(&self, raw: &str) -> Result<String> {
        check_semver("--version", raw, "1.0.0")
    }
    fn check_version_output(&self, version: &str, output: &str) -> Result<()> {
        if output.split_whitespace().any(|w| w == version) {
            Ok(())
        } else {
            Err(Error::integrity(format!(
                "`exampledb --version` does not report {version}"
            )))
        }
    }
    fn default_http_port(&self) -> u16 {
        7700
    }
    fn default_ports(&self, http: u16) -> Result<BTreeMap<String, u16>> {
        Ok(BTreeMap::from([("http".to_string(), http)]))
    }
    fn render_config(&self, ws: &WorkspaceManifest, dir: &Path) -> Result<Option<String>> {
        let mut env = minijinja::Environment::new();
        env.set_undefined_behavior(minijinja::UndefinedBehavior::Strict);
        env.add_filter("toml", |s: String| toml::Value::String(s).to_string());
        env.add_template("exampledb.toml", TEMPLATE)
            .map_err(|e| Error::failed(format!("ExampleDB config template: {e}")))?;
        let http = ws.ports.get("http").copied().unwrap_or(7700);
        let ctx = minijinja::context! {
            database_id => ws.database_id,
            version => ws.version,
            tool_version => crate::VERSION,
            http_addr => format!("127.0.0.1:{http}"),
            data_dir => dir.join("data").to_string_lossy().into_owned(),
        };
        env.get_template("exampledb.toml")
            .and_then(|t| t.render(ctx))
            .map(Some)
            .map_err(|e| Error::failed(format!("rendering the ExampleDB config: {e}")))
    }
    fn server_command(
        &self,
        _ws: &WorkspaceManifest,
        dir: &Path,
        install_dir: &Path,
    ) -> Result<ServerCommand> {
        Ok(ServerCommand {
            program: install_dir.join(self.binary_name()),
            args: vec![
                "--config".into(),
                dir.join(CONFIG_FILE).to_string_lossy().into_owned(),
            ],
            env: vec![],
            env_remove: vec![],
        })
    }
    fn readiness_probe(&self, endpoint: &str) -> Probe {
        Probe::Get {
            url: format!("{endpoint}/health"),
        }
    }
    fn count_rows(&self, endpoint: &str, database: &str, table: &str) -> Result<u64> {
        let body: Value = super::admin_client()?
            .get(format!("{endpoint}/count"))
            .query(&[("db", database), ("table", table)])
            .send()
            .and_then(|r| r.error_for_status())
            .and_then(|r| r.json())
            .map_err(|e| Error::failed(format!("ExampleDB did not count {table}: {e}")))?;
        body["rows"]
            .as_u64()
            .ok_or_else(|| Error::failed(format!("ExampleDB counted {table} without a number")))
    }

    fn tsbs_loader(&self) -> &'static str {
        "tsbs_load_exampledb"
    }
    fn tsbs_runner(&self) -> &'static str {
        "tsbs_run_queries_exampledb"
    }
    fn query_format(&self) -> QueryFormat {
        FORMAT
    }
    fn default_write(&self, profile: Profile) -> (u32, u32) {
        match profile {
            Profile::Manual => (4, 5000),
            Profile::Smoke => (1, 1000),
        }
    }
    fn token_env_defaults(&self) -> Option<(&'static str, &'static str)> {
        Some(("EXAMPLEDB_API_KEY", "EXAMPLEDB_ADMIN_KEY"))
    }
    fn bench_caps(&self) -> BenchCaps {
        BenchCaps::default()
    }
    fn load_target(&self, o: &ToolOptions) -> LoadTarget {
        let mut args = vec![ToolArg::Flag("compression", "none".into())];
        if let Some(k) = &o.auth_token {
            args.push(ToolArg::Secret("api-key", k.clone()));
        }
        LoadTarget {
            single_url: None,
            args,
        }
    }
    fn query_target(&self, o: &ToolOptions) -> QueryTarget {
        QueryTarget {
            args: o
                .auth_token
                .iter()
                .map(|k: &Secret| ToolArg::Secret("api-key", k.clone()))
                .collect(),
        }
    }
    fn probe_version(
        &self,
        c: &reqwest::blocking::Client,
        url: &str,
        _token: Option<&Secret>,
        _variant: Option<&str>,
    ) -> Result<(Option<String>, Value)> {
        let body: Option<Value> = c
            .get(format!("{url}/version"))
            .send()
            .ok()
            .and_then(|r| r.json().ok());
        let version = body
            .as_ref()
            .and_then(|b| b["version"].as_str().map(str::to_string));
        Ok((version, json!({ "version": body })))
    }
    fn probe_identity(&self) -> (&'static str, u16) {
        ("its /version does not report an ExampleDB version", 7700)
    }
    /// Its own layout: `journal/` is the WAL, `*.seg` the data.
    fn classify_file(&self, rel: &Path) -> FilePart {
        if rel.starts_with("journal") {
            FilePart::Wal
        } else if rel.extension().is_some_and(|e| e == "seg") {
            FilePart::Data
        } else {
            FilePart::Other
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::bench::{self, Phase, Request};

    /// The generic code paths find ExampleDB through the registry alone.
    #[test]
    fn the_registry_is_the_only_list() {
        assert!(crate::product::names().contains(&"exampledb"));
        let p = crate::product::resolve("exampledb", None).unwrap();
        assert_eq!(p.display_name(), "ExampleDB");
        assert_eq!(crate::product::label("exampledb", None), "ExampleDB");
        assert!(crate::product::query_formats().contains(&"example"));
        assert!(crate::runlist::table(&[]).contains("`tsbsctl bench exampledb all ...`"));
        // Benchmarks: validate, default write, run directory under its name.
        let req = Request {
            phase: Some(Phase::All),
            database_id: Some("ex1".into()),
            ..Request::default()
        };
        assert_eq!(bench::validate(&ENTRY, &req).unwrap(), Phase::All);
        let two = Request {
            phase: Some(Phase::Query),
            urls: vec!["http://a:1".into(), "http://b:1".into()],
            ..Request::default()
        };
        assert!(bench::validate(&ENTRY, &two).is_ok(), "any number of URLs");
        assert_eq!(bench::default_write(p.as_ref(), Profile::Manual), (4, 5000));
    }

    #[test]
    fn its_loader_and_runner_flags_come_from_the_product() {
        let o = ToolOptions {
            auth_token: Some(Secret::new("k-123")),
            ..ToolOptions::default()
        };
        let spec = crate::tsbs::LoadSpec {
            binary: "/t/bin/tsbs_load_exampledb".into(),
            target: ExampleDb.load_target(&o),
            urls: vec![
                "http://127.0.0.1:7700".into(),
                "http://127.0.0.1:7701".into(),
            ],
            input: crate::tsbs::LoadInput::Stdin,
            database: "benchmark".into(),
            batch_size: 1000,
            workers: 1,
            results_file: "/r/load.json".into(),
            mode: crate::tsbs::DatabaseMode::Create,
            confirm_reset: None,
        };
        let c = crate::tsbs::load_command(&spec).unwrap();
        let line = c.redacted();
        assert!(line.contains("--compression=none"), "{line}");
        assert!(!line.contains("k-123"), "the key stays out of argv: {line}");
        assert_eq!(c.secret_keys(), ["api-key"]);
        let q = crate::tsbs::query_command(&crate::tsbs::QuerySpec {
            binary: "/t/bin/tsbs_run_queries_exampledb".into(),
            target: ExampleDb.query_target(&o),
            file: "/q/lastpoint.dat".into(),
            database: "benchmark".into(),
            urls: vec!["http://127.0.0.1:7700".into()],
            workers: 1,
            results_file: "/r/q.json".into(),
        })
        .unwrap();
        assert_eq!(q.secret_keys(), ["api-key"]);
    }

    #[test]
    fn its_footprint_and_query_set_manifests_are_its_own() {
        let d = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(d.path().join("journal")).unwrap();
        std::fs::write(d.path().join("journal/1.log"), vec![1u8; 5000]).unwrap();
        std::fs::write(d.path().join("a.seg"), vec![1u8; 9000]).unwrap();
        std::fs::write(d.path().join("meta"), vec![1u8; 10]).unwrap();
        let f = crate::bench::footprint::measure_for(&ExampleDb, d.path()).unwrap();
        assert_eq!((f.wal_files, f.data_files, f.files), (1, 1, 3));
        assert!(f.layout.is_none());

        let m = crate::queryset::QuerySetManifest {
            query_set_id: "example-0123".into(),
            created_at: "2026-01-01T00:00:00Z".into(),
            spec: json!({}),
            generator: crate::dataset::GeneratorRecord {
                binary: "/t/bin/tsbs_generate_queries".into(),
                binary_sha256: "0".repeat(64),
                tsbs_repo: "r".into(),
                tsbs_commit: "c".into(),
                go_version: "g".into(),
            },
            files: BTreeMap::new(),
            tool_version: "t".into(),
        };
        let path = d.path().join("manifest.json");
        (FORMAT.write)(&path, &m).unwrap();
        let text = std::fs::read_to_string(&path).unwrap();
        assert!(text.contains("\"kind\": \"exampledb-query-set\""), "{text}");
        assert_eq!((FORMAT.read)(&path).unwrap().query_set_id, "example-0123");
    }
}
