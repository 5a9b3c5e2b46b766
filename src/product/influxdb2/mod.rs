//! InfluxDB v2 (2.7.x; 2.9.x accepted), the database of the 2024 "GreptimeDB vs. InfluxDB"
//! report (reference influxdb2.md): release archives from InfluxData's download host, a
//! workspace set up at `prepare` with tsbsctl's own operator token ([`setup`]), `influxd` on
//! 127.0.0.1 configured through `INFLUXD_CONFIG_PATH`, loads by `tsbs_load_influx2` into a
//! bucket tsbsctl creates, drops and recreates over `/api/v2/buckets` (the loader's database
//! creator is a no-op), queries by `tsbs_run_queries_influx --is-v2` over the v1-compatible
//! `/query`, row counts by InfluxQL, and a footprint split into TSM data, WAL, index and other.
//!
//! Tokens. A managed workspace's operator token lives in its `secrets/operator-token` (0600);
//! an external server's comes from `$INFLUXDB2_TOKEN` (the variable's name is what a run
//! records). Either reaches the TSBS tools only as the `auth-token` key of their in-memory
//! `config.json` ([`crate::tsbs::ToolArg::Secret`]), like InfluxDB 3's: never argv, never a
//! named file that outlives the command. The product keeps the token of the server it talks to
//! for the length of one command ([`Session`]): the generic phases hand managed servers no
//! token, and the product finds its workspace's when the server starts
//! ([`Product::check_serving`]).

pub mod api;
pub mod setup;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Mutex;

use serde_json::{json, Map, Value};

use super::{
    check_semver, CountRequest, FilePart, FootprintParts, Latest, Product, ReleaseAsset,
    ServerCommand, ToolOptions, CONFIG_FILE,
};
use crate::dataset::Profile;
use crate::download::Downloader;
use crate::error::{Error, Result};
use crate::platform::Platform;
use crate::queryset::QueryFormat;
use crate::server::{Probe, Timing};
use crate::sources::{SourceKey, Sources};
use crate::tsbs::{LoadTarget, QueryTarget, Secret, ToolArg};
use crate::workspace_manifest::WorkspaceManifest;

/// The version `install` takes without `--version`: the 2024 report's (its manual installs
/// `influxdb2-2.7.7_linux_amd64.tar.gz`). 2.7.12 (the newest 2.7, what CI builds from source
/// and the tests run) is installed with `--version 2.7.12`.
pub const DEFAULT_VERSION: &str = "2.7.7";
/// `version_source` of [`DEFAULT_VERSION`].
pub const DEFAULT_SOURCE: &str = "report-2024";
/// The environment variable holding an external server's token.
pub const TOKEN_ENV: &str = "INFLUXDB2_TOKEN";
/// The organisation and user a managed workspace is set up with.
pub const ORG: &str = "tsbs";
pub const USER: &str = "tsbsctl";
/// The loader (exists only in GreptimeTeam's TSBS fork).
pub const LOAD_INFLUX2: &str = "tsbs_load_influx2";

const TEMPLATE: &str = include_str!("../../../templates/influxdb2/config.toml.j2");

/// SHA-256 of release archives from a second source, which the published checksum file must
/// agree with: 2.7.7 from its GitHub release notes, 2.7.11 linux_amd64 from InfluxData's
/// install docs (reference influxdb2.md §2, "Checksums and signatures").
const PINNED: &[(&str, &str, &str)] = &[
    (
        "2.7.7",
        "linux_amd64",
        "27b1d1b1f98f332aba6d294f9edae7143655a5d9c460b0103fd989f2f858f8b9",
    ),
    (
        "2.7.7",
        "linux_arm64",
        "0867b365293ec0f14990fed4b71f5b2b13a83a26f80b46d027c8b28bc842aad7",
    ),
    (
        "2.7.7",
        "darwin_amd64",
        "a1e18cfbc73e18141bc97fafeb2bb5bf440d5bd2b3a9475bfb75221129c197c4",
    ),
    (
        "2.7.11",
        "linux_amd64",
        "8d7872013cad3524fb728ca8483d0adc30125ad1af262ab826dcf5d1801159cf",
    ),
];

/// What the product knows about the server of the current command: its token and the
/// organisation the loader writes to.
#[derive(Debug, Default, Clone)]
struct Session {
    token: Option<Secret>,
    org: Option<String>,
}

/// InfluxDB v2.
#[derive(Debug, Default)]
pub struct InfluxDb2 {
    session: Mutex<Session>,
}

/// The registry line of InfluxDB 2.
pub const ENTRY: super::Entry = super::Entry {
    name: "influxdb2",
    display: "InfluxDB 2",
    variant_flag: None,
    variants: &[],
    make: |_| Ok(Box::new(InfluxDb2::default())),
};

impl InfluxDb2 {
    fn session(&self) -> Session {
        self.session
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .clone()
    }
    fn remember_token(&self, t: Option<&Secret>) {
        if let Some(t) = t.filter(|t| !t.is_empty()) {
            self.session.lock().unwrap_or_else(|e| e.into_inner()).token = Some(t.clone());
        }
    }
    fn token_for(&self, given: Option<&str>) -> Result<Secret> {
        if let Some(t) = given.filter(|t| !t.is_empty()) {
            return Ok(Secret::new(t));
        }
        self.session().token.ok_or_else(|| {
            Error::invalid("InfluxDB 2 checks a token on every request, and none was given")
                .with_hint(format!(
                    "export {TOKEN_ENV} with an all-access token of the server's organisation"
                ))
        })
    }
}

/// The directory under InfluxData's `influxdb/releases/` that holds `version`: 2.7.12 and the
/// 2.8 releases moved into `v<V>/`, the others are flat (reference influxdb2.md §2).
pub fn release_dir(version: &str) -> String {
    if version == "2.7.12" || version.starts_with("2.8.") {
        format!("influxdb/releases/v{version}")
    } else {
        "influxdb/releases".to_string()
    }
}

/// The pinned digest of `version` on `platform` (InfluxData's spelling), if any.
pub fn pinned(version: &str, platform: &str) -> Option<&'static str> {
    PINNED
        .iter()
        .find(|(v, p, _)| *v == version && *p == platform)
        .map(|(_, _, d)| *d)
}

/// Severity of an `influxd` log line (zap's logfmt: `ts=... lvl=error msg=...`), and Go panics.
fn classify_log(line: &str) -> Option<crate::logscan::Severity> {
    use crate::logscan::Severity;
    if line.starts_with("panic: ") || line.starts_with("fatal error: ") {
        return Some(Severity::Panic);
    }
    let lvl = line
        .split_whitespace()
        .find_map(|w| w.strip_prefix("lvl="))?;
    match lvl {
        "warn" => Some(Severity::Warning),
        "error" => Some(Severity::Error),
        "dpanic" | "panic" => Some(Severity::Panic),
        "fatal" => Some(Severity::Fatal),
        _ => None,
    }
}

/// The footprint split of `<workspace>/data` (reference influxdb2.md §6): `engine/wal/...` is
/// WAL, `*.tsm` data, the TSI index (`index/` of a shard, `_series/`, `fields.idx`) index,
/// the bolt and SQLite metadata files metadata, the rest other.
pub fn classify(rel: &Path) -> FilePart {
    let parts: Vec<String> = rel
        .components()
        .map(|c| c.as_os_str().to_string_lossy().into_owned())
        .collect();
    let name = parts.last().map(String::as_str).unwrap_or_default();
    let ext = rel
        .extension()
        .map(|e| e.to_string_lossy().to_ascii_lowercase())
        .unwrap_or_default();
    let dirs = &parts[..parts.len().saturating_sub(1)];
    if dirs.iter().any(|d| d == "wal") || ext == "wal" {
        FilePart::Wal
    } else if ext == "tsm" {
        FilePart::Data
    } else if dirs.iter().any(|d| d == "index" || d == "_series")
        || name == "fields.idx"
        || ext == "tsi"
        || ext == "tsl"
    {
        FilePart::Index
    } else if name.starts_with("influxd.bolt") || name.starts_with("influxd.sqlite") {
        FilePart::Metadata
    } else {
        FilePart::Other
    }
}

impl Product for InfluxDb2 {
    fn name(&self) -> &'static str {
        "influxdb2"
    }
    fn display_name(&self) -> String {
        "InfluxDB 2".into()
    }
    fn binary_name(&self) -> &'static str {
        "influxd"
    }
    fn check_platform(&self, platform: &Platform) -> Result<()> {
        match platform.dashed().as_str() {
            "linux-amd64" | "linux-arm64" | "darwin-amd64" => Ok(()),
            other => Err(Error::invalid(format!(
                "InfluxData publishes no InfluxDB 2 build for {other}"
            ))
            .with_hint("use linux-amd64, linux-arm64 or darwin-amd64 (Rosetta), or benchmark an external server with --url")),
        }
    }
    /// 2.7.x and 2.9.x: the releases whose download paths and layouts are known. 2.8.0's file
    /// names carry a build suffix tsbsctl cannot derive; 1.x and 3.x are other products.
    fn normalize_version(&self, raw: &str) -> Result<String> {
        let v = check_semver("--version", raw, DEFAULT_VERSION)?;
        let p = semver::Version::parse(&v).expect("checked");
        if p.major == 2 && (p.minor == 7 || p.minor == 9) && p.pre.is_empty() {
            return Ok(v);
        }
        Err(Error::invalid(format!(
            "InfluxDB 2 {v} is not a version tsbsctl installs: it takes 2.7.x (the report's 2.7.7 by default) and 2.9.x"
        ))
        .with_hint(if p.major == 3 {
            "InfluxDB 3 is its own product: tsbsctl influxdb3 install".to_string()
        } else {
            format!("pass e.g. --version {DEFAULT_VERSION} or --version 2.7.12")
        }))
    }
    /// No network: the report's version, pinned.
    fn resolve_latest(&self, _dl: &Downloader, _sources: &Sources) -> Result<Latest> {
        Ok(Latest {
            version: DEFAULT_VERSION.into(),
            source: DEFAULT_SOURCE,
        })
    }
    fn latest_words(&self) -> &'static str {
        "the version of the 2024 GreptimeDB vs. InfluxDB report"
    }
    /// `influxdb2-<V>_<os>_<arch>.tar.gz` beside InfluxData's aggregate checksum file
    /// `influxdb.<V>.sha256` (`sha256sum *` over the release's files, uploaded with them by
    /// the 2.7 pipeline; the per-file `.sha256` is not).
    fn release_asset(
        &self,
        sources: &Sources,
        version: &str,
        platform: &Platform,
    ) -> Result<ReleaseAsset> {
        let file = format!("influxdb2-{version}_{}.tar.gz", platform.underscored());
        let dir = release_dir(version);
        Ok(ReleaseAsset {
            url: sources.url(SourceKey::InfluxdataDl, &format!("{dir}/{file}")),
            checksum_url: sources.url(
                SourceKey::InfluxdataDl,
                &format!("{dir}/influxdb.{version}.sha256"),
            ),
            file_name: file,
            // Found by [`Self::distribution_root`]: `influxdb2-<V>/` (2.7 linux: `usr/bin/`).
            top_dir: None,
        })
    }
    /// The published line for the archive; where tsbsctl pins a digest, both must agree.
    fn parse_checksum(&self, text: &str, asset: &ReleaseAsset) -> Result<String> {
        let published = crate::download::parse_checksum_file(text, &asset.file_name)?;
        let pin = asset
            .file_name
            .strip_prefix("influxdb2-")
            .and_then(|r| r.strip_suffix(".tar.gz"))
            .and_then(|r| r.split_once('_'))
            .and_then(|(v, p)| pinned(v, p));
        match pin {
            Some(p) if p != published => Err(Error::integrity(format!(
                "the published SHA-256 of {} is {published}, but tsbsctl pins {p} (InfluxData's release notes)",
                asset.file_name
            ))
            .with_hint("nothing was downloaded; check the mirror (TSBSCTL_INFLUXDATA_DL_URL), or report it")),
            _ => Ok(published),
        }
    }
    /// `influxd version` prints `InfluxDB v2.7.12 (git: ...) build_date: ...`.
    fn check_version_output(&self, version: &str, output: &str) -> Result<()> {
        let want = format!("InfluxDB v{version}");
        let ok = output.lines().any(|l| {
            l.find(&want).is_some_and(|i| {
                let rest = &l[i + want.len()..];
                rest.is_empty() || rest.starts_with(char::is_whitespace)
            })
        });
        if ok {
            Ok(())
        } else {
            Err(Error::integrity(format!(
                "`influxd version` does not report {want}: {}",
                output.trim()
            ))
            .with_hint(self.install_command(version, true)))
        }
    }
    fn version_args(&self) -> &'static [&'static str] {
        &["version"]
    }
    /// The archive's one `influxdb2-*` directory; the binary is at its `usr/bin/influxd`
    /// (2.7 linux) or its root (2.9 linux, darwin). The installation is the directory that
    /// holds it.
    fn distribution_root(&self, extracted: &Path) -> Result<PathBuf> {
        let mut entries: Vec<PathBuf> = fs_err::read_dir(extracted)?
            .flatten()
            .map(|e| e.path())
            .collect();
        entries.sort();
        let is_file = |p: &Path| p.symlink_metadata().is_ok_and(|m| m.is_file());
        if let [only] = entries.as_slice() {
            let named = only
                .file_name()
                .is_some_and(|n| n.to_string_lossy().starts_with("influxdb2-"));
            if named && only.is_dir() {
                for sub in ["usr/bin", ""] {
                    let d = if sub.is_empty() {
                        only.clone()
                    } else {
                        only.join(sub)
                    };
                    if is_file(&d.join("influxd")) {
                        return Ok(d);
                    }
                }
            }
        }
        let names: Vec<String> = entries
            .iter()
            .filter_map(|p| p.file_name().map(|n| n.to_string_lossy().into_owned()))
            .collect();
        Err(Error::integrity(format!(
            "the InfluxDB 2 archive has no influxdb2-<V>/usr/bin/influxd or influxdb2-<V>/influxd (its top level: {})",
            if names.is_empty() { "empty".into() } else { names.join(", ") }
        ))
        .with_hint("nothing was installed; check that the file is the InfluxDB 2 release archive you asked for"))
    }

    fn default_http_port(&self) -> u16 {
        8086
    }
    fn default_ports(&self, http: u16) -> Result<BTreeMap<String, u16>> {
        Ok(BTreeMap::from([("http".to_string(), http)]))
    }
    fn new_workspace_fields(&self, _id: &str) -> Map<String, Value> {
        let mut m = Map::new();
        m.insert("org".into(), json!(ORG));
        m.insert("user".into(), json!(USER));
        m.insert("token_file".into(), json!(setup::TOKEN_FILE));
        m
    }
    fn render_config(&self, ws: &WorkspaceManifest, dir: &Path) -> Result<Option<String>> {
        let mut env = minijinja::Environment::new();
        env.set_undefined_behavior(minijinja::UndefinedBehavior::Strict);
        env.add_filter("toml", |s: String| toml::Value::String(s).to_string());
        env.add_template("config.toml", TEMPLATE)
            .map_err(|e| Error::failed(format!("InfluxDB 2 config template: {e}")))?;
        let http = ws.ports.get("http").copied().unwrap_or(8086);
        let data = dir.join("data");
        let s = |p: PathBuf| p.to_string_lossy().into_owned();
        let ctx = minijinja::context! {
            database_id => ws.database_id,
            version => ws.version,
            tool_version => crate::VERSION,
            http_addr => format!("127.0.0.1:{http}"),
            bolt_path => s(data.join("influxd.bolt")),
            sqlite_path => s(data.join("influxd.sqlite")),
            engine_path => s(data.join("engine")),
        };
        env.get_template("config.toml")
            .and_then(|t| t.render(ctx))
            .map(Some)
            .map_err(|e| Error::failed(format!("rendering the InfluxDB 2 config: {e}")))
    }
    fn init_data_dir(&self, ws: &WorkspaceManifest, dir: &Path) -> Result<()> {
        let org = ws.extra["org"].as_str().unwrap_or(ORG);
        setup::onboard(
            &ws.installation_path.join(self.binary_name()),
            dir,
            org,
            USER,
        )
    }
    fn server_command(
        &self,
        _ws: &WorkspaceManifest,
        dir: &Path,
        install_dir: &Path,
    ) -> Result<ServerCommand> {
        Ok(ServerCommand {
            program: install_dir.join(self.binary_name()),
            args: vec![],
            env: vec![(
                "INFLUXD_CONFIG_PATH".into(),
                dir.join(CONFIG_FILE).to_string_lossy().into_owned(),
            )],
            // The workspace's config decides: no INFLUXD_* from the caller's shell.
            env_remove: std::env::vars()
                .map(|(k, _)| k)
                .filter(|k| k.starts_with("INFLUXD_") && k != "INFLUXD_CONFIG_PATH")
                .collect(),
        })
    }
    fn log_rules(&self) -> crate::logscan::LogRules {
        crate::logscan::LogRules {
            classify: classify_log,
            fails_run: |s| {
                use crate::logscan::Severity;
                matches!(s, Severity::Fatal | Severity::Panic | Severity::Crash)
            },
            note: None,
        }
    }
    /// A token the server logs is redacted on its way to the log.
    fn output_filter(&self) -> Option<crate::server::OutputFilter> {
        let r = crate::redact::Redactor::new();
        let token = self.session().token;
        Some(crate::server::OutputFilter(std::sync::Arc::new(
            move |line: &str| {
                let l = r.redact(line);
                match &token {
                    Some(t) => l.replace(t.expose(), "<redacted>"),
                    None => l,
                }
            },
        )))
    }
    fn readiness_probe(&self, endpoint: &str) -> Probe {
        Probe::Get {
            url: format!("{endpoint}/health"),
        }
    }
    /// The workspace was set up at prepare: its token opens it (checked here, once).
    fn check_serving(
        &self,
        ws: &WorkspaceManifest,
        ws_dir: &Path,
        endpoint: &str,
        _pid: u32,
    ) -> Result<Option<Value>> {
        let token = setup::read_token(ws_dir)?;
        let org = ws.extra["org"].as_str().unwrap_or(ORG).to_string();
        let api = api::Api::new(endpoint, Some(token.expose()))?;
        if api.setup_allowed()? {
            return Err(Error::integrity(format!(
                "InfluxDB 2 workspace {} is not set up (its server allows onboarding)",
                ws.database_id
            ))
            .with_hint("remove the workspace and prepare it again"));
        }
        api.org_id(&org)?;
        *self.session.lock().unwrap_or_else(|e| e.into_inner()) = Session {
            token: Some(token),
            org: Some(org.clone()),
        };
        Ok(Some(json!({
            "org": org,
            "auth": "the workspace's operator token (secrets/operator-token)",
            "retention": "infinite",
            "storage_engine": "tsm1 + tsi1",
        })))
    }
    fn default_timing(&self) -> Timing {
        Timing {
            startup_timeout: std::time::Duration::from_secs(600),
            grace: std::time::Duration::from_secs(60),
            startup_wait: Some("it opens its TSM shards and TSI index"),
            // influxd 2.7 handles only os.Interrupt (kit/signals.WithStandardSignals): SIGTERM
            // ends it at once, without closing its engine (seen on a real 2.7.12: exit 143 in
            // 0.01 s, no shutdown lines); SIGINT stops its subsystems and exits 0.
            stop_signal: nix::sys::signal::Signal::SIGINT,
            ..Timing::default()
        }
    }

    fn count_rows(&self, endpoint: &str, database: &str, table: &str) -> Result<u64> {
        self.count_rows_detailed(&CountRequest {
            endpoint,
            database,
            table,
            window: None,
            token: None,
            timeout: super::DEFAULT_COUNT_TIMEOUT,
        })
        .map(|(n, _)| n)
    }
    fn count_rows_detailed(&self, req: &CountRequest) -> Result<(u64, Option<Value>)> {
        let token = self.token_for(req.token)?;
        let a = api::Api::new(req.endpoint, Some(token.expose()))?;
        let (n, how) = api::count_rows(&a, req.database, req.table, req.window, req.timeout)?;
        Ok((n, Some(how)))
    }

    fn tsbs_loader(&self) -> &'static str {
        LOAD_INFLUX2
    }
    fn tsbs_runner(&self) -> &'static str {
        super::greptimedb::RUN_QUERIES_GREPTIME
    }
    fn query_format(&self) -> QueryFormat {
        QueryFormat::Influx
    }
    /// The report's 8 workers x 3,000 rows (its manual, `tsbs_load_influx2`).
    fn default_write(&self, profile: Profile) -> (u32, u32) {
        match profile {
            Profile::Manual => (8, 3000),
            Profile::Smoke => (2, 3000),
        }
    }
    fn token_env_defaults(&self) -> Option<(Option<&'static str>, Option<&'static str>)> {
        Some((Some(TOKEN_ENV), None))
    }
    fn load_target(&self, o: &ToolOptions) -> LoadTarget {
        self.remember_token(o.auth_token.as_ref());
        LoadTarget::default()
    }
    /// `--urls`, gzip on (the report's), the organisation and the token (in `config.json`).
    fn load_connection(&self, urls: &[String]) -> Result<Option<Vec<ToolArg>>> {
        let s = self.session();
        let token = self.token_for(None)?;
        let org = s.org.ok_or_else(|| {
            Error::failed("the InfluxDB 2 organisation to load into is not known yet")
        })?;
        Ok(Some(vec![
            ToolArg::Flag("urls", urls.join(",")),
            ToolArg::Flag("gzip", "true".into()),
            ToolArg::Flag("org-id", org),
            ToolArg::Secret("auth-token", token),
        ]))
    }
    fn query_target(&self, o: &ToolOptions) -> QueryTarget {
        self.remember_token(o.auth_token.as_ref());
        QueryTarget {
            basic_auth: None,
            args: vec![ToolArg::Flag("is-v2", "true".into())],
            connection: None,
            per_query_latencies: true,
        }
    }
    fn query_connection(
        &self,
        urls: &[String],
        _queries: Option<u64>,
        _workers: u32,
    ) -> Result<Option<Vec<ToolArg>>> {
        let token = self.token_for(None)?;
        Ok(Some(vec![
            ToolArg::Flag("urls", urls.join(",")),
            ToolArg::Secret("auth-token", token),
        ]))
    }
    /// The bucket by `mode`, over `/api/v2/buckets` (the loader's creator does nothing):
    /// create (refused when it exists, as TSBS's create mode is), reuse (created when
    /// missing), reset (deleted, then created). The loader then only writes.
    fn prepare_database(
        &self,
        endpoint: &str,
        database: &str,
        mode: crate::tsbs::DatabaseMode,
        token: Option<&str>,
    ) -> Result<bool> {
        use crate::tsbs::DatabaseMode;
        let token = self.token_for(token)?;
        self.remember_token(Some(&token));
        let a = api::Api::new(endpoint, Some(token.expose()))?;
        let existing = a.bucket(database)?;
        let org_id = match (&existing, self.session().org) {
            (Some((_, org)), _) => org.clone(),
            (None, Some(name)) => a.org_id(&name)?,
            (None, None) => match a.orgs()?.as_slice() {
                [(id, _)] => id.clone(),
                many => {
                    return Err(Error::invalid(format!(
                        "the token sees {} organisations, so the one to create bucket {database:?} in is unclear",
                        many.len()
                    ))
                    .with_hint(format!("create the bucket first (then --database-mode reuse), or use a token of one organisation in {TOKEN_ENV}")))
                }
            },
        };
        match (mode, &existing) {
            (DatabaseMode::Create, Some(_)) => {
                return Err(Error::failed(format!(
                    "bucket {database:?} exists: aborting (--database-mode create)"
                ))
                .with_hint(format!(
                    "load into it with --database-mode reuse, or drop it with --database-mode reset --confirm-reset {database}"
                )))
            }
            (DatabaseMode::Reset, Some((id, _))) => {
                a.delete_bucket(id)?;
                a.create_bucket(&org_id, database)?;
            }
            (DatabaseMode::Reuse, Some(_)) => {}
            (_, None) => a.create_bucket(&org_id, database)?,
        }
        // The loader names the organisation by id (`org=` is not escaped by it).
        self.session.lock().unwrap_or_else(|e| e.into_inner()).org = Some(org_id);
        Ok(true)
    }
    fn probe_version(
        &self,
        c: &reqwest::blocking::Client,
        url: &str,
        token: Option<&Secret>,
        _variant: Option<&str>,
    ) -> Result<(Option<String>, Value)> {
        let body: Option<Value> = c
            .get(format!("{}/health", url.trim_end_matches('/')))
            .send()
            .ok()
            .and_then(|r| r.json().ok());
        let version = body
            .as_ref()
            .filter(|b| b["name"] == "influxdb")
            .and_then(|b| b["version"].as_str())
            .map(|v| v.trim_start_matches('v').to_string())
            .filter(|v| v.starts_with("2."));
        // A version tells the product; the token must open it before anything is written.
        if version.is_some() {
            let t = token.ok_or_else(|| {
                Error::invalid(format!(
                    "InfluxDB 2 at {url} needs a token, and ${TOKEN_ENV} is not set"
                ))
                .with_hint(format!(
                    "export {TOKEN_ENV} with an all-access token of the server's organisation"
                ))
            })?;
            api::Api::new(url, Some(t.expose()))?.orgs()?;
            self.remember_token(Some(t));
        }
        Ok((version, json!({ "health": body })))
    }
    fn probe_identity(&self) -> (&'static str, u16) {
        ("its /health does not report an InfluxDB 2 version", 8086)
    }
    fn classify_file(&self, rel: &Path) -> FilePart {
        classify(rel)
    }
    fn footprint_layout(&self) -> Option<&'static str> {
        Some("influxdb2")
    }
    fn footprint_parts(&self) -> FootprintParts {
        FootprintParts {
            wal: "WAL (engine/wal)",
            data: "TSM files",
            other: "Other (TSI index, series files, bolt and SQLite metadata)",
            total_note: None,
        }
    }
    fn server_settings(
        &self,
        ws: Option<&WorkspaceManifest>,
        _data_dir: Option<&Path>,
        _runtime_version: Option<&str>,
    ) -> Option<Value> {
        ws.map(|_| {
            json!({
                "source": "the workspace's config.toml (tsbsctl's)",
                "storage_engine": "tsm1 + tsi1",
                // influxd's defaults, which tsbsctl leaves alone (reference influxdb2.md §3).
                "storage-wal-fsync-delay": "0s",
                "storage-cache-max-memory-size": "1 GiB",
                "storage-wal-flush-on-shutdown": false,
                "reporting-disabled": true,
            })
        })
    }
    fn metrics_path(&self) -> Option<&'static str> {
        Some("/metrics")
    }
}

/// Manifest of an InfluxDB 2 query set (kind `influxdb2-query-set`).
#[derive(Debug, Clone, serde::Serialize, serde::Deserialize)]
#[serde(transparent)]
pub struct Influx2QuerySetManifest(pub crate::queryset::QuerySetManifest);
impl crate::manifest::Manifest for Influx2QuerySetManifest {
    const KIND: &'static str = "influxdb2-query-set";
}
impl From<crate::queryset::QuerySetManifest> for Influx2QuerySetManifest {
    fn from(m: crate::queryset::QuerySetManifest) -> Influx2QuerySetManifest {
        Influx2QuerySetManifest(m)
    }
}
impl From<Influx2QuerySetManifest> for crate::queryset::QuerySetManifest {
    fn from(m: Influx2QuerySetManifest) -> crate::queryset::QuerySetManifest {
        m.0
    }
}

#[allow(non_upper_case_globals)]
impl QueryFormat {
    /// InfluxQL (`tsbs_generate_queries --format influx`): POST `/query?q=...`.
    pub const Influx: QueryFormat = QueryFormat {
        name: "influx",
        manifest_kind: "influxdb2-query-set",
        write: crate::queryset::write_as::<Influx2QuerySetManifest>,
        read: crate::queryset::read_as::<Influx2QuerySetManifest>,
        bytes_per_query: 1024,
        generator_flags: &[],
        use_cases: &["devops", "iot"],
        refused_types: &[],
        answers: Some(crate::answers::PrintFormat::JsonEnvelope),
    };
}

#[cfg(test)]
mod tests;
