//! The products tsbsctl manages. A [`Product`] is what differs between GreptimeDB and
//! InfluxDB 3 (and a third database); everything else (the installation store in
//! [`crate::install`], workspaces in [`crate::workspace`], the supervisor in [`crate::server`],
//! the benchmarks in [`crate::bench`]) is generic and asks the product, through the part of it
//! that caller needs:
//!
//! * [`Distribution`]: releases (how "latest" is found, where the archive and its checksum
//!   live, the archive's top directory, what `--version` must print; the defaults refuse, for
//!   products installed from a local directory) and the installation layout (the binary's
//!   name, where installations of this product (edition) live);
//! * [`WorkspaceSetup`]: a workspace's default ports, config file (a template in
//!   `templates/`), data-dir initialisation and product-specific manifest fields;
//! * [`ManagedServer`]: the server's command line, output filter, log rules and readiness
//!   probe (HTTP or a command), and the checks before it is started and measured;
//! * [`Driver`]: the TSBS loader and runner, their formats, default write parameters and
//!   arguments;
//! * [`Loading`]: the database work around a load, and counting rows;
//! * [`ExternalServer`]: checking and probing an external server, the tokens it reads;
//! * [`StorageFootprint`]: the footprint classifier and where the data lives;
//! * [`Reporting`]: the server settings a run records and how summaries word its runs;
//! * [`Product`] itself: names and editions, the hints' commands, and capabilities (SQL
//!   maintenance for compaction, the product's own bench flags) where a product has them.
//!
//! [`all`] is the one list of products (the registry): a new product is one module here, its
//! templates and one line in [`all`].

use std::path::{Path, PathBuf};

use serde::Serialize;
use serde_json::Value;

use crate::dataset::{DataFormat, RowLayout, RowLine};
use crate::error::{Error, Result};
use crate::paths::Root;

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

mod distribution;
mod driver;
mod external;
mod footprint;
mod loading;
mod managed_server;
mod release;
mod reporting;
mod workspace_setup;

pub use distribution::Distribution;
pub use driver::Driver;
pub use external::ExternalServer;
pub use footprint::StorageFootprint;
pub use loading::Loading;
pub use managed_server::ManagedServer;
pub use op::{OpCtx, StepEnd};
pub use reporting::{add_product_templates, Reporting};
pub use workspace_setup::WorkspaceSetup;
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

/// A database product (and edition): the parts its callers ask for, and what no one caller
/// group asks (its names and editions, the commands hints name, its capabilities).
pub trait Product:
    Distribution
    + WorkspaceSetup
    + ManagedServer
    + Driver
    + Loading
    + ExternalServer
    + StorageFootprint
    + Reporting
    + Send
    + Sync
{
    /// `greptimedb`, `influxdb3`: the directory under the state root and the CLI area.
    fn name(&self) -> &'static str;
    /// "GreptimeDB", "InfluxDB 3 Enterprise": for messages.
    fn display_name(&self) -> String;
    /// The variant: `core` / `enterprise` for InfluxDB 3 (records call it `edition`); `None`
    /// for single-variant products.
    fn variant(&self) -> Option<&str> {
        None
    }
    /// The variant its installations are recorded under (default: [`Product::variant`]).
    /// Products whose variants share installations (PostgreSQL's modes) return `None`.
    fn installation_variant(&self) -> Option<&str> {
        self.variant()
    }
    /// Whether `tsbsctl <product> copy` exists (a workspace's data copied to a new workspace
    /// bound to another version), for hints. Default: no.
    fn has_copy(&self) -> bool {
        false
    }
    /// The command that (re)installs `version`, for hints.
    fn install_command(&self, version: &str, reinstall: bool) -> String {
        let mut s = format!("tsbsctl {} install", self.name());
        if let Some(e) = self.variant() {
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
    /// How its runs differ beyond their version: editions and the limits a server ran under
    /// (`runs report` and `runs compare` word them); `None`: they cannot.
    fn run_variants(&self) -> Option<&'static variants::RunVariants> {
        None
    }
    /// The product without its variant ("GreptimeDB", "InfluxDB 3"): for messages that hold
    /// for every variant.
    fn family_display(&self) -> &'static str {
        entry(self.name())
            .map(|e| e.display)
            .unwrap_or("the product")
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
}

/// A product's names, for the default bodies of the parts that word them (the parts cannot
/// name [`Product`], which extends them): every product has them, from [`Product::name`] and
/// [`Product::display_name`].
pub trait Named {
    fn product_name(&self) -> &'static str;
    fn product_display_name(&self) -> String;
}

impl<P: Product> Named for P {
    fn product_name(&self) -> &'static str {
        self.name()
    }
    fn product_display_name(&self) -> String {
        self.display_name()
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
    /// A file that holds WAL and data in one format (InfluxDB 3 Enterprise's upgraded engine
    /// writes `.pt` files): the split is unknown.
    WalAndData,
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

/// [`StorageFootprint::footprint_parts`] of `name` in `variant` (an unknown product: the
/// generic parts).
pub fn footprint_parts(name: &str, variant: Option<&str>) -> FootprintParts {
    resolve(name, variant)
        .map(|p| p.footprint_parts())
        .unwrap_or(FootprintParts::GENERIC)
}

/// The generic split: anything under a `wal` directory or named `*.wal` / `*.raftlog` is WAL,
/// Parquet and SST files are data, the rest is other.
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
    if in_wal || ext == "wal" || ext == "raftlog" {
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

/// What [`Loading::create_partitioned`] gets: where, how, and the dataset the table is for.
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

/// What [`Loading::after_load`] gets.
#[derive(Debug, Clone)]
pub struct AfterLoad<'a> {
    pub endpoint: &'a str,
    pub database: &'a str,
    /// The dataset's scale (hosts).
    pub scale: u64,
    /// Whether every device keeps its tags: false for iot, which clears tags at random, so a
    /// loader can store more tag sets than devices.
    pub exact_tags: bool,
    /// What [`Loading::before_load`] returned.
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

/// How the load that is counted ran (see [`Loading::count_after_load`]).
#[derive(Debug, Clone, Copy)]
pub struct LoadRun<'a> {
    /// The product's own bench flag values the load ran with, resolved.
    pub values: &'a ext::Values,
    /// The server is one tsbsctl started (its settings are known).
    pub managed: bool,
}

/// A row count after a load (see [`Loading::count_after_load`]).
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
    /// The remote locations of the product's vendor (a download host, an installer script)
    /// beside the core's, configurable as they are (`[sources]`, `TSBSCTL_*`).
    pub sources: &'static [crate::sources::SourceKey],
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

/// Every remote location tsbsctl may reach: the core's, then the products' own, each once.
pub fn source_keys() -> Vec<crate::sources::SourceKey> {
    let mut out = crate::sources::SourceKey::CORE.to_vec();
    for k in all().iter().flat_map(|e| e.sources) {
        if !out.contains(k) {
            out.push(*k);
        }
    }
    out
}

/// The sources of `root` for every key ([`source_keys`]): environment > `[sources]` >
/// default.
pub fn load_sources(root: &crate::paths::Root) -> Result<crate::sources::Sources> {
    crate::sources::Sources::load(root, &source_keys())
}

/// Every key's built-in value (library callers and tests).
pub fn default_sources() -> crate::sources::Sources {
    crate::sources::Sources::defaults(&source_keys())
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
    /// (hence the default of [`Driver::data_format`]).
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

/// The manifest kinds of every product's query sets (each variant's query format), once each;
/// worked out once per process, as a path check asks it for every file it reads.
pub fn query_set_kinds() -> &'static [&'static str] {
    static KINDS: std::sync::OnceLock<Vec<&'static str>> = std::sync::OnceLock::new();
    KINDS.get_or_init(collect_query_set_kinds)
}

fn collect_query_set_kinds() -> Vec<&'static str> {
    let mut out: Vec<&'static str> = Vec::new();
    for e in all() {
        let variants: Vec<Option<&str>> = if e.variants.is_empty() {
            vec![None]
        } else {
            e.variants.iter().map(|v| Some(*v)).collect()
        };
        for v in variants {
            if let Ok(p) = (e.make)(v) {
                let k = p.query_format().manifest_kind;
                if !out.contains(&k) {
                    out.push(k);
                }
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

    /// The core's sources and the products' are one list: every key and variable once, the
    /// variables DESIGN names (`TSBSCTL_*`), and a `[sources]` key a product registers is
    /// read from config.toml like the core's (an unknown one is still exit 2).
    #[test]
    fn the_products_sources_join_the_cores() {
        let keys = source_keys();
        let names: Vec<&str> = keys.iter().map(|k| k.config_key()).collect();
        for k in [
            "github",
            "github_api",
            "go_dl",
            "tsbs_repo",
            "influxdata_dl",
            "influxdb3_installer",
        ] {
            assert_eq!(names.iter().filter(|n| **n == k).count(), 1, "{names:?}");
        }
        let mut vars: Vec<&str> = keys.iter().map(|k| k.env_var()).collect();
        assert!(vars.iter().all(|v| v.starts_with("TSBSCTL_")), "{vars:?}");
        vars.sort_unstable();
        vars.dedup();
        assert_eq!(vars.len(), keys.len());
        let t = tempfile::tempdir().unwrap();
        let root = crate::paths::Root::at(t.path());
        std::fs::write(
            root.config_file(),
            "[sources]\ninfluxdata_dl = \"/srv/dl\"\n",
        )
        .unwrap();
        let s = load_sources(&root).unwrap();
        let dl = keys
            .iter()
            .find(|k| k.config_key() == "influxdata_dl")
            .unwrap();
        if std::env::var_os(dl.env_var()).is_none() {
            assert_eq!(s.get(*dl), "file:///srv/dl");
        }
        std::fs::write(
            root.config_file(),
            "[sources]\ninfluxdata_dll = \"/srv/dl\"\n",
        )
        .unwrap();
        assert_eq!(load_sources(&root).unwrap_err().exit_code(), 2);
    }

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
