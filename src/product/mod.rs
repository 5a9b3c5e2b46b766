//! The products tsbsctl manages. A [`Product`] is what differs between GreptimeDB and
//! InfluxDB 3 (and a third database); everything else (the installation store in
//! [`crate::install`], workspaces in [`crate::workspace`], the supervisor in [`crate::server`],
//! the benchmarks in [`crate::bench`]) is generic and asks the product:
//!
//! * releases: how "latest" is found, where the archive and its checksum live, the archive's
//!   top directory, what `--version` must print (optional: the defaults refuse, for products
//!   installed from a local directory);
//! * installation layout: the binary's name, where installations of this product (edition)
//!   live;
//! * workspaces: default ports, the config file (a template in `templates/`), the data-dir
//!   initialisation, the server's command line and readiness probe (HTTP or a command),
//!   product-specific manifest fields;
//! * benchmarks: the TSBS loader and runner and their arguments, the query format, default
//!   write parameters, the tokens it reads, probing an external server, counting rows, server
//!   settings, the footprint and log-severity classifiers; capabilities (SQL maintenance for
//!   compaction, a licence) where a product has them.
//!
//! [`all`] is the one list of products (the registry): a new product is one module here, its
//! templates and one line in [`all`].

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde::Serialize;
use serde_json::{Map, Value};

use crate::dataset::{DataFormat, RowLayout, RowLine};
use crate::download::Downloader;
use crate::error::{Error, Result};
use crate::paths::Root;
use crate::platform::Platform;
use crate::server::{Probe, Timing};
use crate::sources::Sources;
use crate::workspace_manifest::WorkspaceManifest;

// A skeleton third product, compiled only in tests (its module says why).
#[cfg(any(test, feature = "exampledb"))]
pub mod exampledb;
pub mod ext;
pub mod greptimedb;
pub mod influxdb2;
pub mod influxdb3;
pub mod op;
pub mod phase;
pub mod timescaledb;
pub mod variants;
pub mod ws_op;

pub use op::{OpCtx, StepEnd};
pub use ws_op::{ServerStart, WorkspaceOpCtx};

/// Where one release archive and its checksum file live.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ReleaseAsset {
    pub url: String,
    pub checksum_url: String,
    /// The archive's file name (the download cache keeps it under this name).
    pub file_name: String,
    /// The single top directory the vendor puts everything under, when there is one.
    pub top_dir: Option<String>,
}

/// A version found by "latest" resolution, and how (recorded as `version_source`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Latest {
    pub version: String,
    pub source: &'static str,
}

/// How to run a workspace's server (the supervisor adds ports, probe and logging).
#[derive(Debug, Clone)]
pub struct ServerCommand {
    pub program: PathBuf,
    pub args: Vec<String>,
    pub env: Vec<(String, String)>,
    pub env_remove: Vec<String>,
}

/// A database product (and edition).
pub trait Product: Send + Sync {
    /// `greptimedb`, `influxdb3`: the directory under the state root and the CLI area.
    fn name(&self) -> &'static str;
    /// "GreptimeDB", "InfluxDB 3 Enterprise": for messages.
    fn display_name(&self) -> String;
    /// `core` / `enterprise` for InfluxDB 3; `None` for single-edition products.
    fn edition(&self) -> Option<&str> {
        None
    }
    /// The edition its installations are recorded under (default: [`Product::edition`]).
    /// Products whose variants share installations (PostgreSQL's modes) return `None`.
    fn installation_edition(&self) -> Option<&str> {
        self.edition()
    }
    /// Product checks of an installation beyond the server binary (the other pinned binaries
    /// of a local installation); run by `verify`. Default: none.
    fn verify_installation(&self, _install_dir: &Path) -> Result<()> {
        Ok(())
    }
    /// Settings a workspace's server reads from files tsbsctl did not write (PostgreSQL:
    /// `postgresql.auto.conf`, lines after the include): shown by `verify`. Default: none.
    fn outside_settings(&self, _ws_dir: &Path) -> Result<Vec<OutsideSetting>> {
        Ok(Vec::new())
    }
    /// The server binary inside an installation (`greptime`, `influxdb3`).
    fn binary_name(&self) -> &'static str;

    /// Refuses platforms the vendor does not ship (exit 2).
    fn check_platform(&self, platform: &Platform) -> Result<()>;
    /// Validates and normalises a user-given version (GreptimeDB strips one leading `v`).
    fn normalize_version(&self, raw: &str) -> Result<String>;
    /// Resolves the newest stable version from the vendor (never a guess, never a cache).
    /// Products without release archives (a local installation pinned by path) keep the
    /// default: a refusal naming the product.
    fn resolve_latest(&self, _downloader: &Downloader, _sources: &Sources) -> Result<Latest> {
        Err(no_releases(self.display_name()))
    }
    /// The archive and checksum locations of `version` for `platform` (default: none).
    fn release_asset(
        &self,
        _sources: &Sources,
        _version: &str,
        _platform: &Platform,
    ) -> Result<ReleaseAsset> {
        Err(no_releases(self.display_name()))
    }
    /// Extracts the expected SHA-256 (lowercase hex) from the vendor's checksum file.
    fn parse_checksum(&self, text: &str, asset: &ReleaseAsset) -> Result<String> {
        crate::download::parse_checksum_file(text, &asset.file_name)
    }
    /// Checks the output of `<binary> --version` names `version` (and the edition).
    fn check_version_output(&self, version: &str, output: &str) -> Result<()>;
    /// The arguments that make the binary print its version (`influxd` has no `--version`).
    fn version_args(&self) -> &'static [&'static str] {
        &["--version"]
    }
    /// The distribution root inside an extracted archive (`extracted` is the archive's root,
    /// or the contents of [`ReleaseAsset::top_dir`] when the product names one). Products
    /// whose archives have a top directory of unknown name find it here.
    fn distribution_root(&self, extracted: &Path) -> Result<PathBuf> {
        Ok(extracted.to_path_buf())
    }

    /// Directory holding `<version>/<platform>/` installations of this product (edition).
    fn installations_dir(&self, root: &Root) -> PathBuf {
        root.installations(self.name())
    }
    /// Whether `tsbsctl <product> copy` exists (a workspace's data copied to a new workspace
    /// bound to another version), for hints. Default: no.
    fn has_copy(&self) -> bool {
        false
    }
    /// What picked the version `install` takes without `--version` (after "<Product> <V>: ").
    fn latest_words(&self) -> &'static str {
        "the latest stable release"
    }
    /// The command that (re)installs `version`, for hints.
    fn install_command(&self, version: &str, reinstall: bool) -> String {
        let mut s = format!("tsbsctl {} install", self.name());
        if let Some(e) = self.edition() {
            s.push_str(&format!(" --edition {e}"));
        }
        s.push_str(&format!(" --version {version}"));
        if reinstall {
            s.push_str(" --reinstall");
        }
        s
    }
    /// `tsbsctl greptimedb` (plus `--edition E` where the product needs it in commands that
    /// create things), for hints.
    fn cli(&self) -> String {
        format!("tsbsctl {}", self.name())
    }

    /// Initialises a new workspace's data directory `dir/data` once its layout and config
    /// exist (PostgreSQL: `initdb`). Default: nothing to do.
    fn init_data_dir(&self, _ws: &WorkspaceManifest, _dir: &Path) -> Result<()> {
        Ok(())
    }

    /// The HTTP port of a new workspace unless the user picks one.
    fn default_http_port(&self) -> u16;
    /// How a managed server on 127.0.0.1:`port` serving SQL database `database` is reached,
    /// as messages, the server's ready line and run manifests show it (and the product's own
    /// hooks read it back). Default: `http://127.0.0.1:PORT`.
    fn local_endpoint(&self, port: u16, _database: &str) -> String {
        format!("http://127.0.0.1:{port}")
    }
    /// Every listener a workspace's server opens, given its HTTP port: name -> port. Recorded
    /// in the workspace manifest and probed before each start.
    fn default_ports(&self, http_port: u16) -> Result<BTreeMap<String, u16>>;
    /// Product-specific manifest fields of a new workspace (InfluxDB 3: node id, licence).
    fn new_workspace_fields(&self, _id: &str) -> Map<String, Value> {
        Map::new()
    }
    /// The manifest fields a workspace made for `runs rerun --database-id NEW` takes from the
    /// recorded run's `server_settings`, so the rerun measures the same server setup
    /// (TimescaleDB: its durability).
    fn rerun_workspace_fields(&self, _server_settings: Option<&Value>) -> Map<String, Value> {
        Map::new()
    }
    /// The workspace's config file name and content, when the product uses one.
    fn render_config(&self, ws: &WorkspaceManifest, dir: &Path) -> Result<Option<String>>;
    /// How to start the server of the workspace in `dir` whose installation is `install_dir`.
    fn server_command(
        &self,
        ws: &WorkspaceManifest,
        dir: &Path,
        install_dir: &Path,
    ) -> Result<ServerCommand>;
    /// How its runs differ beyond their version: editions and the limits a server ran under
    /// (`runs report` and `runs compare` word them); `None`: they cannot.
    fn run_variants(&self) -> Option<&'static variants::RunVariants> {
        None
    }
    /// A warning to show before a workspace's server is started (a licence about to expire).
    fn serve_warning(&self, _ws: &WorkspaceManifest) -> Option<String> {
        None
    }
    /// Refuses to start a workspace's server for product reasons (InfluxDB 3 Enterprise without
    /// an active licence), with the command that fixes it.
    fn check_can_serve(&self, _ws: &WorkspaceManifest) -> Result<()> {
        Ok(())
    }
    /// How this product's server log is read: the severity of a line, which severities fail a
    /// run, and what the counts mean (default: tracing-style level fields and Rust panics,
    /// where FATAL and panics fail, [`crate::logscan::LogRules::TRACING`]).
    fn log_rules(&self) -> crate::logscan::LogRules {
        crate::logscan::LogRules::TRACING
    }
    /// A line filter for the server's output on its way to the log (secrets a server may
    /// print: InfluxDB 3 licence e-mails and tokens). `None`: the log gets the output as is.
    fn output_filter(&self) -> Option<crate::server::OutputFilter> {
        None
    }
    /// Picks the lines of the server log that explain a failed start, for the error message
    /// (PostgreSQL: its `FATAL` lines). `None`: the message names the log only.
    fn failure_lines(&self) -> Option<fn(&str) -> Vec<String>> {
        None
    }
    /// The URLs the TSBS tools get for a managed workspace served at `endpoint` (a GreptimeDB
    /// cluster: every frontend). Default: the endpoint alone.
    fn managed_urls(&self, _ws: &WorkspaceManifest, endpoint: &str) -> Vec<String> {
        vec![endpoint.to_string()]
    }
    /// The readiness probe against `endpoint` (`http://127.0.0.1:PORT`).
    fn readiness_probe(&self, endpoint: &str) -> Probe;
    /// The readiness probe of a managed server whose installation is `install_dir` and whose
    /// workspace is `workspace_dir` (a probe by a command of the installation, e.g.
    /// `pg_isready`, gated by a status file of the data directory). Default:
    /// [`Product::readiness_probe`].
    fn readiness_probe_for(
        &self,
        endpoint: &str,
        _install_dir: &Path,
        _workspace_dir: &Path,
    ) -> Probe {
        self.readiness_probe(endpoint)
    }
    /// Checks a managed server once it answers, before anything is measured, returning what
    /// it found for the run's `server_settings` (PostgreSQL: the settings in force, read from
    /// the server, and the addresses the postmaster listens on). An error stops the run.
    fn check_serving(
        &self,
        _ws: &WorkspaceManifest,
        _ws_dir: &Path,
        _endpoint: &str,
        _pid: u32,
    ) -> Result<Option<Value>> {
        Ok(None)
    }
    /// Default startup timeout, grace period and port wait.
    fn default_timing(&self) -> Timing {
        Timing::default()
    }

    /// `SELECT count(*) FROM table` in `database`.
    fn count_rows(&self, endpoint: &str, database: &str, table: &str) -> Result<u64>;

    // ---- What the benchmarks ask (bench/, tsbs/, queryset, summary) ----

    /// The product without its variant ("GreptimeDB", "InfluxDB 3"): for messages that hold
    /// for every variant.
    fn family_display(&self) -> &'static str {
        entry(self.name())
            .map(|e| e.display)
            .unwrap_or("the product")
    }
    /// The TSBS loader and query runner of this product (`<tsbs>/bin/<name>`).
    fn tsbs_loader(&self) -> &'static str;
    fn tsbs_runner(&self) -> &'static str;
    /// The data format the loader reads (`tsbs_generate_data --format`) and its row layout.
    fn data_format(&self) -> DataFormat {
        DataFormat::Influx
    }
    /// The query format its runner reads.
    fn query_format(&self) -> crate::queryset::QueryFormat;
    /// Default loader workers and batch size for a profile (DESIGN.md, Benchmark runs).
    fn default_write(&self, profile: crate::dataset::Profile) -> (u32, u32);
    /// The most `--url`s a benchmark of this product takes (`None`: any number).
    fn max_urls(&self) -> Option<usize> {
        None
    }
    /// The default environment variables of the auth and admin tokens (`None`: the product
    /// reads no token; a `None` inside: that token is read only from a variable the command
    /// names, or not at all).
    fn token_env_defaults(&self) -> Option<(Option<&'static str>, Option<&'static str>)> {
        None
    }
    /// What the auth secret is called in messages ("token"; PostgreSQL: "password").
    fn secret_word(&self) -> &'static str {
        "token"
    }
    /// Whether an external server of this product takes `--user NAME --password-env VAR`
    /// (HTTP basic auth; the password is then the auth secret of the token seam, and the
    /// credentials reach tsbsctl's requests and the TSBS tools through
    /// [`crate::tsbs::credentials`]).
    fn takes_basic_auth(&self) -> bool {
        false
    }
    /// Refuses `bench <product>` while the product's benchmark phases are not built (exit 2,
    /// before anything is written), rather than a run that is bound to fail.
    fn check_benchmarkable(&self) -> Result<()> {
        Ok(())
    }
    /// Refuses (exit 2) resolved values of its own bench flags ([`ext::BenchExt::resolve`])
    /// that this variant cannot take (a managed workspace's variant is known only from its
    /// manifest, so this is asked once the target is known, before it is locked).
    fn check_bench_values(&self, _values: &ext::Values) -> Result<()> {
        Ok(())
    }
    /// The loader's product-specific part.
    fn load_target(&self, o: &ToolOptions) -> crate::tsbs::LoadTarget;
    /// The query runner's product-specific part.
    fn query_target(&self, o: &ToolOptions) -> crate::tsbs::QueryTarget;
    /// The run label for server version `version` and the recorded `server_settings`
    /// (`None`: `<display name> <version>`).
    fn run_label(&self, _version: &str, _settings: Option<&Value>) -> Option<String> {
        None
    }
    /// Before a load, on the running server (PostgreSQL: no other session on the database).
    /// `Some`: what was done, recorded as step `before-load` and passed to [`Product::after_load`].
    fn before_load(&self, _endpoint: &str, _database: &str) -> Result<Option<Value>> {
        Ok(None)
    }
    /// Before the loader, managed or external: the database work of `mode` its loader cannot
    /// do (InfluxDB 2's buckets). `true`: done; the loader only writes (`--do-create-db=false`).
    fn prepare_database(
        &self,
        _endpoint: &str,
        _db: &str,
        _mode: crate::tsbs::DatabaseMode,
        _token: Option<&str>,
    ) -> Result<bool> {
        Ok(false)
    }
    /// `--partitions`/`--partition-column` against the dataset's use case and scale, before
    /// anything is made (exit 2). Only products whose [`ext::BenchExt::partitioning`] asks for one are asked.
    fn check_partitioning(&self, _p: &Partitioning, _use_case: &str, _scale: u64) -> Result<()> {
        Err(Error::invalid(format!(
            "{} has no partitioned tables",
            self.display_name()
        )))
    }
    /// Before the loader, managed or external: the database by `mode`, then the table split
    /// into regions, with exactly the schema the loader would have made. Returns what was
    /// done (recorded as step `create-table`); the loader then only writes (`--do-create-db=false`).
    fn create_partitioned(&self, _req: &PartitionedLoad) -> Result<Value> {
        Err(Error::invalid(format!(
            "{} has no partitioned tables",
            self.display_name()
        )))
    }
    /// After a load's row count: where each region of `table` is and how many rows it holds
    /// (`None`: nothing to say), read until the regions hold the `loaded` rows where the
    /// server's statistics lag. Recorded as step `regions`.
    fn region_report(
        &self,
        _endpoint: &str,
        _database: &str,
        _table: &str,
        _loaded: u64,
    ) -> Result<Option<Value>> {
        Ok(None)
    }
    /// After a load's row count, on the running server (PostgreSQL: the tags count, ANALYZE,
    /// the SQL footprint). `Some`: recorded as step `after-load`; its `footprint` object goes
    /// into the footprint step (the run's storage) where the data-directory walk has nothing.
    fn after_load(&self, _req: &AfterLoad) -> Result<Option<Value>> {
        Ok(None)
    }
    /// Checks a query file is one this product's runner executes as meant, before it runs
    /// (`Some`: what was found, recorded in the step). Default: nothing to check.
    fn check_query_file(&self, _path: &Path) -> Result<Option<Value>> {
        Ok(None)
    }
    /// The loader's own connection flags for `urls` (set as [`crate::tsbs::LoadTarget::connection`]).
    /// `None`: the HTTP loaders' `--urls=` and `--gzip=false`.
    fn load_connection(&self, _urls: &[String]) -> Result<Option<Vec<crate::tsbs::ToolArg>>> {
        Ok(None)
    }
    /// The runner's own connection flags for `urls`, for a query file of `queries` queries
    /// run by `workers` workers (set as [`crate::tsbs::QueryTarget::connection`]). `None`:
    /// `--urls=`.
    fn query_connection(
        &self,
        _urls: &[String],
        _queries: Option<u64>,
        _workers: u32,
    ) -> Result<Option<Vec<crate::tsbs::ToolArg>>> {
        Ok(None)
    }
    /// What the recorded server version is the version of, when it is not the product's own
    /// (TimescaleDB: the server is PostgreSQL, the extension has its own version).
    fn version_name(&self) -> Option<&'static str> {
        None
    }
    /// What the runner leaves out of a query type's statistics, and why, for summary.md.
    fn statistics_exclusion(&self) -> &'static str {
        "Nothing: every query in the file is in these statistics, the first query of each worker included (it also sets up the worker's HTTP connection; this runner has no burn-in)."
    }
    /// The row count of a table after a load of `expected` rows into it. Default: one count
    /// decides. A product whose count moves after a load (InfluxDB 3) counts until it can
    /// trust the reading, and says what it waited for and, when the count differs, why.
    fn count_after_load(
        &self,
        req: &CountRequest,
        expected: u64,
        load: LoadRun<'_>,
    ) -> std::result::Result<LoadCount, CountFailed> {
        let _ = (expected, load);
        self.count_rows_detailed(req)
            .map(|(rows, method)| LoadCount {
                rows,
                method,
                wait: None,
                mismatch: None,
            })
            .map_err(|e| Box::new((e, None)))
    }
    /// Checks an external target's `--url` before anything is touched (exit 2 when it is not
    /// one this product takes) and returns the SQL database it names, if it names one
    /// (PostgreSQL URLs do). Default: an absolute HTTP(S) URL with a host, naming none.
    fn check_external_url(&self, url: &str) -> Result<Option<String>> {
        check_http_url(url).map(|()| None)
    }
    /// The HTTP path an external server answers when healthy, asked before
    /// [`Product::probe_version`] (`None`: the product's probe is its own health check, e.g. a
    /// SQL connection). Default: `/health`.
    fn external_health_path(&self) -> Option<&'static str> {
        Some("/health")
    }
    /// Asks an external server at `url` (already healthy, when the product has a
    /// [`Product::external_health_path`]) for its version: the version as
    /// the product names it (`None`: the server is not this product) and the details to record.
    fn probe_version(
        &self,
        client: &reqwest::blocking::Client,
        url: &str,
        token: Option<&crate::tsbs::Secret>,
        variant: Option<&str>,
    ) -> Result<(Option<String>, Value)>;
    /// What the external servers at `urls` (already probed) say about the deployment they
    /// belong to, recorded with the run (`None`: the product has nothing to say). A product
    /// refuses URLs that reach different deployments (exit 2).
    fn probe_topology(
        &self,
        _client: &reqwest::blocking::Client,
        _urls: &[String],
    ) -> Result<Option<Value>> {
        Ok(None)
    }
    /// How the probe tells this product (for the refusal of a server that is not it) and
    /// its default HTTP port.
    fn probe_identity(&self) -> (&'static str, u16);
    /// Row count of `table` and, where the product counts in pieces, how it was obtained.
    fn count_rows_detailed(&self, req: &CountRequest) -> Result<(u64, Option<Value>)> {
        self.count_rows(req.endpoint, req.database, req.table)
            .map(|n| (n, None))
    }
    /// Product server settings recorded with the target (InfluxDB 3: durability, engine).
    fn server_settings(
        &self,
        _ws: Option<&WorkspaceManifest>,
        _data_dir: Option<&Path>,
        _runtime_version: Option<&str>,
    ) -> Option<Value> {
        None
    }
    /// Which part of a footprint split a file (path relative to the data directory) is.
    fn classify_file(&self, rel: &Path) -> FilePart {
        classify_generic(rel)
    }
    /// The name of a product-specific footprint layout (index and metadata counted on their
    /// own); `None`: the generic WAL/data/other split.
    fn footprint_layout(&self) -> Option<&'static str> {
        None
    }
    /// What the WAL, data and other parts of the data-directory split hold, in the product's
    /// own words (the headings of `summary.md` and the notes of `runs report`).
    fn footprint_parts(&self) -> FootprintParts {
        FootprintParts::GENERIC
    }
    /// A managed workspace whose data lives in an object store: what a footprint adds to the
    /// data directory's, measured now: `object_store` (a listing of the bucket under the
    /// workspace's prefix, by part) and, when the server keeps a local cache of it, `cache`
    /// (measured on disk). `None`: the data is in the data directory.
    fn object_store_footprint(
        &self,
        _ws: &WorkspaceManifest,
        _ws_dir: &Path,
    ) -> Result<Option<(Value, Option<Value>)>> {
        Ok(None)
    }
    /// The storage engine the files on disk show, when the product has several.
    fn detect_engine(&self, _dir: &Path) -> Option<&'static str> {
        None
    }
    /// Whether the server is told a durability policy the summary shows (InfluxDB 3).
    fn records_durability(&self) -> bool {
        false
    }
    /// SQL maintenance (flush, compaction, table state) for the compact phase and the data
    /// location before queries; `None`: the product has none.
    fn maintenance(&self) -> Option<Box<dyn Maintenance>> {
        None
    }
    /// The product's own bench flags and operations (`bench <product> --flag`, `bench
    /// <product> <operation>`), served by the generic CLI and bench code; `None`: none.
    fn bench_ext(&self) -> Option<&'static ext::BenchExt> {
        None
    }
    /// Where the server serves Prometheus metrics with its process series
    /// (`process_resident_memory_bytes`, `process_cpu_seconds_total`): how an external
    /// server's resources are sampled. `None`: unknown for external servers.
    fn metrics_path(&self) -> Option<&'static str> {
        None
    }
}

/// A product's SQL maintenance capability (GreptimeDB: `/v1/sql`).
pub trait Maintenance: Send + Sync {
    /// One statement, bounded by the admin timeout; the first output object.
    fn sql(&self, endpoint: &str, db: Option<&str>, sql: &str) -> Result<Value>;
    /// A maintenance statement the server answers once the work is done (no timeout).
    fn maintenance_sql(&self, endpoint: &str, db: Option<&str>, sql: &str) -> Result<Value>;
    /// When the server throws away the work of maintenance statement `sql` if it is stopped
    /// while running it, why (said when a Ctrl-C stops it; the stop then does not wait for
    /// that work). `None`: a stop keeps what it does.
    fn discarded_on_stop(&self, _sql: &str) -> Option<&'static str> {
        None
    }
}

/// Where a file of a stopped server's data directory belongs in the footprint split.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FilePart {
    /// InfluxDB 3 Enterprise's upgraded engine: WAL and data in one format.
    Pt,
    Wal,
    Data,
    Index,
    Metadata,
    Other,
}

/// The names of the parts of a data-directory footprint ([`FilePart`]) as a product's files
/// make them up, and what the total is not, when that needs saying.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
pub struct FootprintParts {
    pub wal: &'static str,
    pub data: &'static str,
    pub other: &'static str,
    /// Said beside the total (PostgreSQL: the directory holds the whole cluster).
    pub total_note: Option<&'static str>,
}

impl FootprintParts {
    /// The generic split's parts ([`classify_generic`]).
    pub const GENERIC: FootprintParts = FootprintParts {
        wal: "WAL",
        data: "Data files (Parquet/SST)",
        other: "Other (index, manifest, metadata)",
        total_note: None,
    };
}

/// [`Product::footprint_parts`] of `name` in `variant` (an unknown product: the generic parts).
pub fn footprint_parts(name: &str, variant: Option<&str>) -> FootprintParts {
    resolve(name, variant)
        .map(|p| p.footprint_parts())
        .unwrap_or(FootprintParts::GENERIC)
}

/// The generic split: anything under a `wal` directory or named `*.wal` / `*.raftlog` is WAL,
/// Parquet and SST files are data, `.pt` files are their own part, the rest is other.
pub fn classify_generic(rel: &Path) -> FilePart {
    let ext = rel
        .extension()
        .map(|e| e.to_string_lossy().to_ascii_lowercase())
        .unwrap_or_default();
    let in_wal = rel
        .parent()
        .into_iter()
        .flat_map(|p| p.components())
        .any(|c| c.as_os_str().eq_ignore_ascii_case("wal"));
    if ext == "pt" {
        FilePart::Pt
    } else if in_wal || ext == "wal" || ext == "raftlog" {
        FilePart::Wal
    } else if ext == "parquet" || ext == "sst" {
        FilePart::Data
    } else {
        FilePart::Other
    }
}

/// An absolute `http`/`https` URL with a host (exit 2 otherwise): the external targets of the
/// HTTP products.
pub fn check_http_url(u: &str) -> Result<()> {
    match url::Url::parse(u) {
        Ok(p) if matches!(p.scheme(), "http" | "https") && p.host_str().is_some() => Ok(()),
        _ => Err(
            Error::invalid(format!("--url {u:?} is not an absolute HTTP or HTTPS URL"))
                .with_hint("e.g. --url http://10.0.0.5:4000"),
        ),
    }
}

/// `--partitions N --partition-column C`: a table created before the load, split into N
/// regions on column C (products whose [`ext::BenchExt::partitioning`] asks for one).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Partitioning {
    pub partitions: u32,
    pub column: String,
}

/// What [`Product::create_partitioned`] gets: where, how, and the dataset the table is for.
#[derive(Debug, Clone)]
pub struct PartitionedLoad<'a> {
    pub endpoint: &'a str,
    pub database: &'a str,
    pub mode: crate::tsbs::DatabaseMode,
    pub partitioning: &'a Partitioning,
    /// The dataset's scale (hosts) and its first line, exactly as the loader sends it (the
    /// line that makes the server auto-create the table the loader would have had).
    pub scale: u64,
    pub sample_line: &'a str,
}

/// What the TSBS tools get beyond the generic flags (the product picks what it uses).
#[derive(Debug, Clone, Default)]
pub struct ToolOptions {
    pub auth_token: Option<crate::tsbs::Secret>,
    pub admin_token: Option<crate::tsbs::Secret>,
    /// The product's own bench flag values, resolved ([`ext::BenchExt::resolve`]): what of
    /// them reaches its tools is the product's to say.
    pub values: ext::Values,
}

/// What [`Product::after_load`] gets.
#[derive(Debug, Clone)]
pub struct AfterLoad<'a> {
    pub endpoint: &'a str,
    pub database: &'a str,
    /// The dataset's scale (hosts).
    pub scale: u64,
    /// Whether every device keeps its tags: false for iot, which clears tags at random, so a
    /// loader can store more tag sets than devices.
    pub exact_tags: bool,
    /// What [`Product::before_load`] returned.
    pub before: Option<&'a Value>,
    /// The auth token (PostgreSQL: the password; external servers only).
    pub token: Option<&'a str>,
}

/// One row count on a running server.
#[derive(Debug, Clone)]
pub struct CountRequest<'a> {
    pub endpoint: &'a str,
    pub database: &'a str,
    pub table: &'a str,
    /// The dataset's `[start, end)` in ns (products that count in time slices stay in it).
    pub window: Option<(i64, i64)>,
    /// The auth token (external servers only).
    pub token: Option<&'a str>,
    pub timeout: std::time::Duration,
}

/// How the load that is counted ran (see [`Product::count_after_load`]).
#[derive(Debug, Clone, Copy)]
pub struct LoadRun<'a> {
    /// The product's own bench flag values the load ran with, resolved.
    pub values: &'a ext::Values,
    /// The server is one tsbsctl started (its settings are known).
    pub managed: bool,
}

/// A row count after a load (see [`Product::count_after_load`]).
#[derive(Debug, Clone)]
pub struct LoadCount {
    pub rows: u64,
    /// How it was obtained, where the product counts in pieces (the record's `method`).
    pub method: Option<Value>,
    /// The readings, where one count was not enough to decide (the record's `wait`; its
    /// `polls` is how many counts were taken).
    pub wait: Option<Value>,
    /// The product's own words for a difference from the expected rows: the step's failure
    /// reason and the hint. `None`: the plain "row count mismatch".
    pub mismatch: Option<(String, &'static str)>,
}

/// The hint of a post-load count that differs from the dataset's rows, read as rows not stored.
pub const NOT_STORED_HINT: &str = "the load did not store every row; look at the load and server logs, then load again with --database-mode reset --confirm-reset NAME";

/// A count after a load that failed: the error, and the readings so far (the record's
/// `wait`) where there were several.
pub type CountFailed = Box<(Error, Option<Value>)>;

/// One product in the registry: its name (CLI area, state directory), display name, the
/// variants it comes in (editions, modes) and how to build it.
pub struct Entry {
    pub name: &'static str,
    pub display: &'static str,
    /// The flag naming the variant (`--edition`), when the product has variants.
    pub variant_flag: Option<&'static str>,
    /// The variants, default first (empty: one variant).
    pub variants: &'static [&'static str],
    /// Builds the product of a variant (`None`: the default).
    pub make: fn(Option<&str>) -> Result<Box<dyn Product>>,
}

/// Every product tsbsctl knows, in the order commands list them. The only list of products.
pub fn all() -> &'static [Entry] {
    static ALL: &[Entry] = &[
        greptimedb::ENTRY,
        influxdb3::ENTRY,
        timescaledb::ENTRY,
        influxdb2::ENTRY,
        #[cfg(any(test, feature = "exampledb"))]
        exampledb::ENTRY,
    ];
    ALL
}

/// The data formats the products' loaders read, each once, in registry order: the formats
/// `data generate` may write.
pub fn data_formats() -> Vec<DataFormat> {
    let mut out: Vec<DataFormat> = Vec::new();
    for f in all()
        .iter()
        .filter_map(|e| (e.make)(None).ok())
        .map(|p| p.data_format())
    {
        if !out.iter().any(|o| o.name == f.name) {
            out.push(f);
        }
    }
    out
}

#[allow(non_upper_case_globals)]
impl DataFormat {
    /// TSBS's `influx` format, InfluxDB line protocol: one row a line. Most products load it
    /// (hence the default of [`Product::data_format`]).
    pub const Influx: DataFormat = DataFormat {
        name: "influx",
        layout: RowLayout {
            header_lines: 0,
            lines_per_row: 1,
            row_line: RowLine::Every,
        },
    };
}

/// The label of `name` in `variant` for summaries and reports ("InfluxDB 3 Core"; without a
/// variant the product's display name). Unknown products keep their name.
/// A setting in a file of the workspace that tsbsctl did not write, and whether tsbsctl's own
/// value replaces it when the server runs.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct OutsideSetting {
    pub file: String,
    pub name: String,
    pub value: String,
    pub overridden: bool,
}

pub fn label(name: &str, variant: Option<&str>) -> String {
    match (entry(name), variant) {
        (Ok(e), None) => e.display.to_string(),
        (Ok(e), Some(v)) => (e.make)(Some(v))
            .map(|p| p.display_name())
            .unwrap_or_else(|_| e.display.to_string()),
        (Err(_), _) => name.to_string(),
    }
}

/// A run's label from the product, its variant, the server's version and recorded settings,
/// when the product words it itself (`None`: `<display name> <version>`).
pub fn run_label(
    name: &str,
    variant: Option<&str>,
    version: Option<&str>,
    settings: Option<&Value>,
) -> Option<String> {
    let e = entry(name).ok()?;
    (e.make)(variant).ok()?.run_label(version?, settings)
}

/// The query formats of every product (each product's default variant), once each.
pub fn query_formats() -> Vec<&'static str> {
    let mut out: Vec<&'static str> = Vec::new();
    for e in all() {
        if let Ok(p) = (e.make)(None) {
            let f = p.query_format().name;
            if !out.contains(&f) {
                out.push(f);
            }
        }
    }
    out
}

/// The TSBS tools `env prepare` builds: the two generators, then every product's loader and
/// query runner (each product's default variant), once each.
pub fn tsbs_tools() -> Vec<&'static str> {
    let mut out = vec!["tsbs_generate_data", "tsbs_generate_queries"];
    for e in all() {
        if let Ok(p) = (e.make)(None) {
            for t in [p.tsbs_loader(), p.tsbs_runner()] {
                if !out.contains(&t) {
                    out.push(t);
                }
            }
        }
    }
    out
}

/// The product `tsbsctl quickstart` benchmarks: the registry's first.
pub fn quickstart() -> &'static Entry {
    &all()[0]
}

/// The names of every product.
pub fn names() -> Vec<&'static str> {
    all().iter().map(|e| e.name).collect()
}

/// The registry entry of `name`.
pub fn entry(name: &str) -> Result<&'static Entry> {
    all().iter().find(|e| e.name == name).ok_or_else(|| {
        Error::invalid(format!("unknown product {name:?}"))
            .with_hint(format!("use one of: {}", names().join(", ")))
    })
}

/// The product `name` in `variant` (`None`: its default variant).
pub fn resolve(name: &str, variant: Option<&str>) -> Result<Box<dyn Product>> {
    (entry(name)?.make)(variant)
}

/// The product of managed workspace `id` of `name`: the variant its manifest names.
pub fn for_workspace(root: &Root, name: &str, id: &str) -> Result<Box<dyn Product>> {
    let e = entry(name)?;
    let Some(flag) = e.variant_flag else {
        return (e.make)(None);
    };
    crate::ids::validate_id("--database-id", id)?;
    let dir = root.database(name, id);
    let path = dir.join("manifest.json");
    // No workspace: no variant to name either (trial-run #23).
    if !path.exists() {
        return Err(Error::invalid(format!(
            "there is no {} workspace {id:?} (looked in {})",
            e.display,
            dir.display()
        ))
        .with_hint(format!(
            "create it with `tsbsctl {name} prepare --database-id {id} {flag} {}`, or see `tsbsctl {name} list`",
            e.variants.join("|")
        )));
    }
    let variant = workspace_variant(root, name, id)?;
    (e.make)(variant.as_deref())
}

/// The variant (`edition` field) the manifest of workspace `id` of `name` names, if it reads:
/// the one place that reads it before the product is known.
pub fn workspace_variant(root: &Root, name: &str, id: &str) -> Result<Option<String>> {
    crate::ids::validate_id("--database-id", id)?;
    let path = root.database(name, id).join("manifest.json");
    Ok(std::fs::read(&path)
        .ok()
        .and_then(|b| serde_json::from_slice::<Value>(&b).ok())
        .and_then(|v| v["edition"].as_str().map(str::to_string)))
}

/// The refusal of a release method by a product that publishes no release archives.
fn no_releases(display: String) -> Error {
    Error::invalid(format!("{display} has no release archives to download"))
        .with_hint("install it from a local directory as its install command describes")
}

/// Default limit of one row-count request: a `count(*)` over ~100 M rows of the published
/// scale on a remote server can take minutes (`--count-timeout` overrides it).
pub const DEFAULT_COUNT_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(1800);

/// `[start, end)` of an RFC 3339 pair (a dataset's spec) in ns; `None` when either is unreadable.
pub fn window_ns(start: &str, end: &str) -> Option<(i64, i64)> {
    influxdb3::window_ns(start, end)
}

/// The config file of a workspace (when the product has one).
pub const CONFIG_FILE: &str = "config.toml";

/// Checks `MAJOR.MINOR.PATCH[-pre][+build]` by SemVer 2.0 (no leading zeros, no `v`; after any
/// prefix the product strips). Returns the version unchanged.
pub fn check_semver(flag: &str, raw: &str, example: &str) -> Result<String> {
    match semver::Version::parse(raw) {
        Ok(_) => Ok(raw.to_string()),
        Err(_) => Err(
            Error::invalid(format!("{flag} {raw:?} is not an exact version"))
                .with_hint(format!("give an exact version such as {example}")),
        ),
    }
}

/// Orders versions by SemVer precedence (§11: numeric identifiers compare as numbers, so
/// `1.2.0-beta.10` is above `beta.2`; build metadata is ignored). Unparseable versions sort
/// first.
pub fn compare_versions(a: &str, b: &str) -> std::cmp::Ordering {
    match (semver::Version::parse(a), semver::Version::parse(b)) {
        (Ok(a), Ok(b)) => a.cmp_precedence(&b),
        (Ok(_), Err(_)) => std::cmp::Ordering::Greater,
        (Err(_), Ok(_)) => std::cmp::Ordering::Less,
        (Err(_), Err(_)) => std::cmp::Ordering::Equal,
    }
}

/// The environment variable that bounds one admin request (listing, creating and dropping
/// databases, probes, table statistics). Maintenance statements have no such bound and row
/// counts have their own (`--count-timeout`).
pub const ADMIN_TIMEOUT_ENV: &str = "TSBSCTL_ADMIN_TIMEOUT_SECS";

/// The admin request limit: `TSBSCTL_ADMIN_TIMEOUT_SECS` (whole seconds, 1 to 86400), else
/// 300 s.
pub fn admin_timeout() -> Result<std::time::Duration> {
    let Ok(raw) = std::env::var(ADMIN_TIMEOUT_ENV) else {
        return Ok(std::time::Duration::from_secs(300));
    };
    match raw.trim().parse::<u64>() {
        Ok(s) if (1..=86_400).contains(&s) => Ok(std::time::Duration::from_secs(s)),
        _ => Err(Error::invalid(format!(
            "{ADMIN_TIMEOUT_ENV}={raw:?} must be a whole number of seconds from 1 to 86400"
        ))
        .with_hint(format!(
            "set {ADMIN_TIMEOUT_ENV} to e.g. 300, or unset it (default 300 s)"
        ))),
    }
}

/// A blocking HTTP client for admin requests to a local server (no proxy, bounded by
/// [`admin_timeout`]).
/// Built once per process: every blocking client starts its own runtime thread, and the admin
/// statements of one command share the same policy. A clone shares the connection pool.
pub fn admin_client() -> Result<reqwest::blocking::Client> {
    static CLIENT: std::sync::OnceLock<reqwest::blocking::Client> = std::sync::OnceLock::new();
    crate::http::local_shared(&CLIENT, admin_timeout()?)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::cmp::Ordering;

    #[test]
    fn semver_grammar() {
        for good in [
            "1.1.4",
            "1.2.0-beta.1",
            "1.2.0+build",
            "0.17.2",
            "1.2.0-rc.1+b.2",
        ] {
            assert!(check_semver("--version", good, "1.1.4").is_ok(), "{good}");
        }
        for bad in ["1.2", "01.2.3", "latest", "v1.1.4", "1.1.4\n", "1.1.4-", ""] {
            assert_eq!(
                check_semver("--version", bad, "1.1.4")
                    .unwrap_err()
                    .exit_code(),
                2,
                "{bad}"
            );
        }
    }

    #[test]
    fn the_tools_env_prepare_builds_come_from_the_registry() {
        let t = tsbs_tools();
        assert_eq!(&t[..2], ["tsbs_generate_data", "tsbs_generate_queries"]);
        for tool in [
            "tsbs_load_greptime",
            "tsbs_run_queries_influx",
            "tsbs_load_influx3",
            "tsbs_run_queries_influx3",
            "tsbs_load_timescaledb",
            "tsbs_run_queries_timescaledb",
        ] {
            assert_eq!(t.iter().filter(|x| **x == tool).count(), 1, "{tool}: {t:?}");
        }
    }

    #[test]
    fn version_order() {
        assert_eq!(compare_versions("1.10.0", "1.9.9"), Ordering::Greater);
        assert_eq!(compare_versions("1.2.0", "1.2.0-beta.2"), Ordering::Greater);
        assert_eq!(
            compare_versions("1.2.0-beta.1", "1.2.0-beta.2"),
            Ordering::Less
        );
        assert_eq!(compare_versions("0.17.2", "1.0.0"), Ordering::Less);
        // SemVer §11: numeric pre-release identifiers compare as numbers.
        assert_eq!(
            compare_versions("1.2.0-beta.10", "1.2.0-beta.2"),
            Ordering::Greater
        );
        assert_eq!(
            compare_versions("1.2.0-alpha", "1.2.0-alpha.1"),
            Ordering::Less
        );
        assert_eq!(compare_versions("1.2.0+a", "1.2.0+b"), Ordering::Equal);
        assert_eq!(compare_versions("nonsense", "0.0.1"), Ordering::Less);
    }
}
