//! ExampleDB: a skeleton third product, compiled only in tests (the `exampledb` feature, which
//! the test builds turn on; see Cargo.toml). It exists to show (and to keep showing) that a
//! product is one module, its templates and one registry line: nothing else in `src/` names
//! it, and it still goes through `install`, `prepare`, `bench exampledb all` and `runs report`
//! (tests/integration/exampledb.rs runs that and scans the sources).
//!
//! The imagined server (the testbed's `exampledb` stand-in) has its own admin API:
//! `GET /health`, `GET /version` (`{"version": "..."}`), `GET /count?db=D&table=T`
//! (`{"rows": N}`). For data and queries it speaks GreptimeDB's HTTP dialect (`/v1/sql`,
//! `/v1/influxdb/write`), as a new database often speaks an existing one's protocol: so TSBS's
//! `tsbs_load_greptime` loads it and `tsbs_run_queries_influx` queries it from the `greptime`
//! query files, and no new TSBS tool is needed. Releases are published like GitHub ones:
//! `<github>/exampledb/exampledb/releases/download/v<V>/exampledb-<V>-<platform>.tar.gz`
//! beside a `.sha256`, the latest named by `<github_api>/repos/exampledb/exampledb/releases/latest`.

use std::collections::BTreeMap;
use std::path::Path;

use serde_json::{json, Value};

use super::ext::{self, BenchExt, BenchFlag, FlagKind, Operation, Values};
use super::op::{OpCtx, StepEnd};
use super::{
    check_semver, Distribution, Driver, ExternalServer, FilePart, Latest, Loading, ManagedServer,
    Product, ReleaseAsset, Reporting, ServerCommand, StorageFootprint, ToolOptions, WorkspaceSetup,
    CONFIG_FILE,
};
use crate::dataset::Profile;
use crate::download::Downloader;
use crate::error::{Error, Missing, Result};
use crate::platform::Platform;
use crate::queryset::QueryFormat;
use crate::server::Probe;
use crate::sources::Sources;
use crate::tsbs::{LoadTarget, QueryTarget};
use crate::workspace_manifest::{MaintenanceRecord, MaintenanceStatus, WorkspaceManifest};

/// The GitHub repository its releases are published under.
const REPO: &str = "exampledb/exampledb";

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
    sources: &[],
};

impl Product for ExampleDb {
    fn name(&self) -> &'static str {
        "exampledb"
    }
    fn display_name(&self) -> String {
        "ExampleDB".into()
    }
    /// Its own bench flag (`--example-replicas`) and operation (`vacuum`).
    fn bench_ext(&self) -> Option<&'static BenchExt> {
        Some(&BENCH_EXT)
    }
}

impl Distribution for ExampleDb {
    fn binary_name(&self) -> &'static str {
        "exampledb"
    }
    fn check_platform(&self, _platform: &Platform) -> Result<()> {
        Ok(())
    }
    fn normalize_version(&self, raw: &str) -> Result<String> {
        check_semver("--version", raw, "1.0.0")
    }
    fn resolve_latest(&self, dl: &Downloader, sources: &Sources) -> Result<Latest> {
        let doc = super::release::github_latest(dl, sources, REPO)
            .map_err(|e| e.context("resolving the latest ExampleDB release"))?;
        let tag = doc["tag_name"].as_str().unwrap_or_default();
        if doc["draft"].as_bool() != Some(false) || doc["prerelease"].as_bool() != Some(false) {
            return Err(Error::failed(format!(
                "the latest ExampleDB release {tag:?} is not marked a stable release"
            ))
            .with_hint("pass an exact --version"));
        }
        let version = self
            .normalize_version(tag.strip_prefix('v').unwrap_or(tag))
            .map_err(|e| e.context("the latest ExampleDB release's tag"))?;
        Ok(Latest {
            version,
            source: "github-latest-stable",
        })
    }
    fn release_asset(
        &self,
        sources: &Sources,
        version: &str,
        platform: &Platform,
    ) -> Result<ReleaseAsset> {
        let stem = format!("exampledb-{version}-{}", platform.dashed());
        Ok(super::release::github_tarball(
            sources,
            REPO,
            version,
            stem,
            ".tar.gz.sha256",
        ))
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
}

impl WorkspaceSetup for ExampleDb {
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
}

impl ManagedServer for ExampleDb {
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
}

impl Driver for ExampleDb {
    /// Its writes and SQL are GreptimeDB's, so GreptimeDB's loader and runner drive it.
    fn tsbs_loader(&self) -> &'static str {
        super::greptimedb::LOAD_GREPTIME
    }
    fn tsbs_runner(&self) -> &'static str {
        super::greptimedb::RUN_QUERIES_GREPTIME
    }
    /// The queries TSBS generates for GreptimeDB (`--format greptime`): the same files.
    fn query_format(&self) -> QueryFormat {
        QueryFormat::Greptime
    }
    fn default_write(&self, profile: Profile) -> (u32, u32) {
        match profile {
            Profile::Manual => (4, 5000),
            Profile::Smoke => (1, 1000),
        }
    }
    /// `tsbs_load_greptime --urls=<endpoints>` (round-robin), plain requests.
    fn load_target(&self, _o: &ToolOptions) -> LoadTarget {
        LoadTarget {
            basic_auth: None,
            single_url: None,
            args: vec![crate::tsbs::ToolArg::Flag("gzip", "false".into())],
            connection: None,
        }
    }
    fn query_target(&self, _o: &ToolOptions) -> QueryTarget {
        QueryTarget::default()
    }
}

impl Loading for ExampleDb {
    /// Its 404 says it does not hold the database or the table: [`Missing::Table`].
    fn count_rows(&self, endpoint: &str, database: &str, table: &str) -> Result<u64> {
        let failed = |e: reqwest::Error| {
            let err = Error::failed(format!("ExampleDB did not count {table}: {e}"));
            match e.status() {
                Some(reqwest::StatusCode::NOT_FOUND) => {
                    err.not_found(Missing::Table(format!("{database}.{table}")))
                }
                _ => err,
            }
        };
        let body: Value = super::admin_client()?
            .get(format!("{endpoint}/count"))
            .query(&[("db", database), ("table", table)])
            .send()
            .and_then(|r| r.error_for_status())
            .and_then(|r| r.json())
            .map_err(failed)?;
        body["rows"]
            .as_u64()
            .ok_or_else(|| Error::failed(format!("ExampleDB counted {table} without a number")))
    }
}

impl ExternalServer for ExampleDb {
    fn probe_version(
        &self,
        c: &reqwest::blocking::Client,
        url: &str,
        _token: Option<&crate::tsbs::Secret>,
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
}

impl StorageFootprint for ExampleDb {
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

/// Its runs are labelled and summarised as the defaults word them.
impl Reporting for ExampleDb {}

/// `--example-replicas N`: how many copies of each write the server keeps (the loader's
/// `--replication-factor`), for the load and all phases.
const REPLICAS: BenchFlag = BenchFlag {
    long: "example-replicas",
    help:
        "load/all: copies of each write ExampleDB keeps, 1-16 (the loader's --replication-factor)",
    value_name: "N",
    kind: FlagKind::Number,
    default: Some("1"),
    phases: &["load", "all"],
    requires: None,
    always_recorded: false,
};

static BENCH_EXT: BenchExt = BenchExt {
    flags: &[REPLICAS],
    record: ext::Record::Nested,
    resolve: resolve_flags,
    load_args: |v| {
        v.get(&REPLICAS.key())
            .and_then(Value::as_u64)
            .map(|n| crate::tsbs::ToolArg::Flag("replication-factor", n.to_string()))
            .into_iter()
            .collect()
    },
    summary_lines: |v| {
        v.get(&REPLICAS.key())
            .and_then(Value::as_u64)
            .map(|n| format!("Write replicas (`--example-replicas`): **{n}** (the loader's `--replication-factor`)"))
            .into_iter()
            .collect()
    },
    operations: &[Operation {
        name: "vacuum",
        about: "Rewrite the managed workspace's segments without deleted rows (a maintenance run).",
        run: vacuum,
        ..Operation::NONE
    }],
    ..BenchExt::NONE
};

/// The loading phases take `--example-replicas` (default 1; the others are refused it by
/// its declared phases).
fn resolve_flags(phase: &str, given: &Values) -> Result<Values> {
    let n = ext::number(given, &REPLICAS, 1..=16)?;
    let mut out = Values::new();
    if REPLICAS.phases.contains(&phase) {
        out.insert(REPLICAS.key(), n.unwrap_or(1).into());
    }
    Ok(out)
}

/// `bench exampledb vacuum`: the intent in the workspace's maintenance record, the server
/// started, its `/vacuum` asked as step `vacuum`, the server stopped, the outcome recorded.
fn vacuum(ctx: &mut dyn OpCtx, _values: &Values) -> Result<()> {
    let (run_id, run_dir) = (ctx.run_id(), ctx.run_dir());
    let record = |status| MaintenanceRecord {
        operation: "vacuum".into(),
        status,
        at: crate::manifest::now_rfc3339(),
        run_id: run_id.clone(),
        run_dir: run_dir.clone(),
        table: "cpu".into(),
        extra: Default::default(),
    };
    let intent = record(MaintenanceStatus::Started);
    ctx.push_maintenance(intent)?;
    ctx.start_server()?;
    ctx.begin("vacuum", 1, None, None, None)?;
    let path = format!("/vacuum?db={}&table=cpu", ctx.database());
    let answer = ctx.http_get(&path).and_then(|b| {
        serde_json::from_str::<Value>(&b)
            .map_err(|e| Error::failed(format!("ExampleDB's /vacuum answered {b:?}: {e}")))
    });
    let outcome = match answer {
        Ok(v) => {
            ctx.end("vacuum", 1, StepEnd::Completed, None, Some(v))?;
            MaintenanceStatus::Completed
        }
        Err(e) => {
            ctx.end("vacuum", 1, StepEnd::Failed, Some(e.message.clone()), None)?;
            let _ = ctx.stop_server();
            let _ = ctx.update_last_maintenance(record(MaintenanceStatus::Failed));
            return Err(e);
        }
    };
    ctx.stop_server()?;
    ctx.update_last_maintenance(record(outcome))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::bench::{self, Phase, Request};

    /// Issue 23 §4: its 404 is "not there" (the database or the table); another refusal is
    /// not.
    #[test]
    fn a_count_refused_with_404_is_missing_the_table() {
        let count = |status| {
            let ep = crate::http::answers_in_turn(vec![(status, r#"{"error":"no"}"#)]);
            ExampleDb.count_rows(&ep, "benchmark", "cpu").unwrap_err()
        };
        let e = count("404 Not Found");
        assert_eq!(
            e.missing(),
            Some(&crate::error::Missing::Table("benchmark.cpu".into()))
        );
        assert_eq!(count("500 Internal Server Error").missing(), None);
    }

    /// The generic code paths find ExampleDB through the registry alone.
    #[test]
    fn the_registry_is_the_only_list() {
        assert!(crate::product::names().contains(&"exampledb"));
        let p = crate::product::resolve("exampledb", None).unwrap();
        assert_eq!(p.display_name(), "ExampleDB");
        assert_eq!(crate::product::label("exampledb", None), "ExampleDB");
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
    fn its_releases_are_github_shaped() {
        let sources = crate::product::default_sources();
        let platform = Platform::host().unwrap();
        let a = ExampleDb
            .release_asset(&sources, "1.0.0", &platform)
            .unwrap();
        let stem = format!("exampledb-1.0.0-{}", platform.dashed());
        assert_eq!(
            a.url,
            format!(
                "https://github.com/exampledb/exampledb/releases/download/v1.0.0/{stem}.tar.gz"
            )
        );
        assert_eq!(a.checksum_url, format!("{}.sha256", a.url));
        assert_eq!(a.top_dir.as_deref(), Some(stem.as_str()));
        assert_eq!(
            ExampleDb
                .normalize_version("v1.0.0")
                .unwrap_err()
                .exit_code(),
            2
        );
    }

    #[test]
    fn its_loader_and_runner_flags_come_from_the_product() {
        let o = ToolOptions::default();
        let spec = crate::tsbs::LoadSpec {
            binary: "/t/bin/tsbs_load_greptime".into(),
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
        assert!(line.contains("--gzip=false"), "{line}");
        assert!(
            line.contains("--urls=http://127.0.0.1:7700,http://127.0.0.1:7701"),
            "{line}"
        );
        assert!(c.secret_keys().is_empty());
        let q = crate::tsbs::query_command(&crate::tsbs::QuerySpec {
            binary: "/t/bin/tsbs_run_queries_influx".into(),
            target: ExampleDb.query_target(&o),
            file: "/q/lastpoint.dat".into(),
            database: "benchmark".into(),
            urls: vec!["http://127.0.0.1:7700".into()],
            workers: 1,
            results_file: "/r/q.json".into(),
        })
        .unwrap();
        assert!(q.secret_keys().is_empty());
    }

    #[test]
    fn its_footprint_is_its_own() {
        let d = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(d.path().join("journal")).unwrap();
        std::fs::write(d.path().join("journal/1.log"), vec![1u8; 5000]).unwrap();
        std::fs::write(d.path().join("a.seg"), vec![1u8; 9000]).unwrap();
        std::fs::write(d.path().join("meta"), vec![1u8; 10]).unwrap();
        let f = crate::bench::footprint::measure_for(&ExampleDb, d.path()).unwrap();
        assert_eq!((f.wal_files, f.data_files, f.files), (1, 1, 3));
        assert!(f.layout.is_none());
    }
}
