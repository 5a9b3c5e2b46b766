//! InfluxDB 3 Core and Enterprise: releases from dl.influxdata.com (latest from the official
//! installer script), `influxdb3 serve --object-store=file ...` on 127.0.0.1, readiness by
//! `GET /health`, admin over `/api/v3/configure/database` and SQL over `/api/v3/query_sql`
//! (reference setup.md §3, benchmark.md §6.2, protocols.md §3 and §4.2).
//!
//! Written for the benchmark phases (issue 7); the `tsbsctl influxdb3` command set extends
//! this file, and Enterprise licence activation lives in [`activation`].

pub mod activation;
mod distribution;
mod driver;
mod external;
pub mod flags;
mod managed_server;
pub mod object_store;
mod settle;
mod workspace_setup;

use std::path::Path;

use serde_json::{json, Value};

use super::variants::{RunLimits, RunVariants};
use super::{check_semver, Loading, Product, Reporting, StorageFootprint};
use crate::error::{Error, Missing, Result};
use crate::queryset::QueryFormat;
use crate::workspace_manifest::WorkspaceManifest;

/// `version_source` of a version read from the official installer script.
pub const LATEST_SOURCE: &str = "installer-script";
/// Its TSBS loader and query runner.
/// How the run records Enterprise's upgraded storage engine (`server_settings.storage_engine`).
const UPGRADED_ENGINE: &str = "upgraded (.pt files)";
pub const LOAD_INFLUX3: &str = "tsbs_load_influx3";
pub const RUN_QUERIES_INFLUX3: &str = "tsbs_run_queries_influx3";

/// The two editions (`--edition`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Edition {
    Core,
    Enterprise,
}

impl Edition {
    pub fn parse(s: &str) -> Result<Edition> {
        match s {
            "core" => Ok(Edition::Core),
            "enterprise" => Ok(Edition::Enterprise),
            other => Err(
                Error::invalid(format!("unknown InfluxDB 3 edition {other:?}"))
                    .with_hint("use --edition core or --edition enterprise"),
            ),
        }
    }
    pub fn as_str(self) -> &'static str {
        match self {
            Edition::Core => "core",
            Edition::Enterprise => "enterprise",
        }
    }
    fn title(self) -> &'static str {
        match self {
            Edition::Core => "Core",
            Edition::Enterprise => "Enterprise",
        }
    }
}

/// InfluxDB 3 of one edition.
#[derive(Debug, Clone, Copy)]
pub struct InfluxDb3 {
    pub edition: Edition,
}

impl InfluxDb3 {
    pub fn new(edition: Edition) -> InfluxDb3 {
        InfluxDb3 { edition }
    }

    /// Whether the server needs an activated licence to serve (Enterprise): the licence
    /// operation (`activate`) applies to it.
    pub fn needs_license(&self) -> bool {
        self.edition == Edition::Enterprise
    }

    /// The node id of a workspace: the id with anything but `[A-Za-z0-9-]` replaced by `-`,
    /// plus `-node`.
    pub fn node_id(id: &str) -> String {
        let stem: String = id
            .chars()
            .map(|c| {
                if c.is_ascii_alphanumeric() || c == '-' {
                    c
                } else {
                    '-'
                }
            })
            .collect();
        format!("{stem}-node")
    }
}

/// Reads the one quoted assignment `NAME="x.y.z"` (or `'x.y.z'`) on a line of its own from the
/// installer script (never executed). A missing, repeated or unquoted assignment, or a value
/// that is not an exact version, is an error: "latest" is never guessed.
pub fn script_version(script: &str, name: &str) -> Result<String> {
    let hint = "pass an exact --version (e.g. --version 3.11.1)";
    let mut quoted = Vec::new();
    let mut unquoted = Vec::new();
    for (i, line) in script.lines().enumerate() {
        let Some(v) = line.trim().strip_prefix(&format!("{name}=")) else {
            continue;
        };
        let q = v
            .strip_prefix('"')
            .and_then(|r| r.strip_suffix('"'))
            .or_else(|| v.strip_prefix('\'').and_then(|r| r.strip_suffix('\'')));
        match q {
            Some(q) if !q.contains(['"', '\'']) => quoted.push((i + 1, q)),
            _ => unquoted.push(i + 1),
        }
    }
    if let Some(line) = unquoted.first() {
        return Err(Error::failed(format!(
            "the InfluxDB 3 installer script assigns {name} without quotes (line {line}); tsbsctl reads only {name}=\"x.y.z\""
        ))
        .with_hint(hint));
    }
    match quoted.as_slice() {
        [(_, v)] => check_semver(name, v, "3.11.1").map_err(|_| {
            Error::failed(format!(
                "the InfluxDB 3 installer script sets {name} to {v:?}, which is not an exact version"
            ))
            .with_hint(hint)
        }),
        [] => Err(Error::failed(format!(
            "the InfluxDB 3 installer script does not set {name}"
        ))
        .with_hint(hint)),
        more => Err(Error::failed(format!(
            "the InfluxDB 3 installer script sets {name} {} times (lines {}); which one is latest is unclear",
            more.len(),
            more.iter().map(|(l, _)| l.to_string()).collect::<Vec<_>>().join(", ")
        ))
        .with_hint(hint)),
    }
}

/// Licence status of a workspace (`license.status` in its manifest).
pub mod license {
    /// Core: no licence needed.
    pub const NOT_REQUIRED: &str = "not-required";
    /// Enterprise, never activated.
    pub const UNCONFIGURED: &str = "unconfigured";
    /// Enterprise, an activation waited for e-mail verification and timed out.
    pub const PENDING: &str = "pending";
    /// Enterprise, the server served with its licence.
    pub const ACTIVE: &str = "active";
    /// Where a trial or home licence is stored, under `<data>/<cluster-id>/`.
    pub const TRIAL_OR_HOME_FILE: &str = "trial_or_home_license";
    /// Where a commercial licence is stored, under `<data>/<cluster-id>/`.
    pub const COMMERCIAL_FILE: &str = "commercial_license";
}

/// The environment variables through which `version` reads the licence e-mail and type: 3.11
/// and later `INFLUXDB3_LICENSE_*`, earlier versions `INFLUXDB3_ENTERPRISE_LICENSE_*`.
pub fn license_env_names(version: &str) -> (&'static str, &'static str) {
    if version_at_least(version, 3, 11) {
        ("INFLUXDB3_LICENSE_EMAIL", "INFLUXDB3_LICENSE_TYPE")
    } else {
        (
            "INFLUXDB3_ENTERPRISE_LICENSE_EMAIL",
            "INFLUXDB3_ENTERPRISE_LICENSE_TYPE",
        )
    }
}

/// Core and Enterprise are other server builds; an Enterprise run ran under its licence
/// (recorded in `server_settings.license.type`), and an At-Home licence limits the server.
static VARIANTS: RunVariants = RunVariants {
    noun: "edition",
    editions_why: "they are different server builds (storage engine, licence and its limits)",
    limits: Some(RunLimits {
        applies: |edition| edition == Some(Edition::Enterprise.as_str()),
        note_key: "licence",
        label: |settings| settings["license"]["type"].as_str().map(String::from),
        report_note: |groups| {
            format!("the Enterprise runs ran under different licences (At-Home: 2 cores, 1 IO and 1 DataFusion thread): {groups}")
        },
        compare_note: |base, cand| {
            format!("the licences differ: baseline {base}, candidate {cand} (an At-Home licence runs 2 cores, 1 IO and 1 DataFusion thread)")
        },
    }),
};

impl Product for InfluxDb3 {
    fn name(&self) -> &'static str {
        "influxdb3"
    }
    fn display_name(&self) -> String {
        format!("InfluxDB 3 {}", self.edition.title())
    }
    fn variant(&self) -> Option<&str> {
        Some(self.edition.as_str())
    }

    fn run_variants(&self) -> Option<&'static RunVariants> {
        Some(&VARIANTS)
    }
    /// Its own flags (`influxdb3/flags.rs`, recorded flat as they always were): durability,
    /// tokens, the count timeout and the edition of an external target.
    fn bench_ext(&self) -> Option<&'static super::ext::BenchExt> {
        Some(&BENCH_EXT)
    }
}

impl Loading for InfluxDb3 {
    fn count_rows(&self, endpoint: &str, database: &str, table: &str) -> Result<u64> {
        count_table(&CountRequest {
            endpoint,
            database,
            table,
            window: None,
            token: None,
            timeout: DEFAULT_COUNT_TIMEOUT,
        })
        .map(|c| c.rows)
    }
    /// Both durable and `--no-sync` loads: a real Core hides acknowledged durable rows while a
    /// snapshot persists, and unsynced ones until the next flush ([`settle`]).
    fn count_after_load(
        &self,
        req: &CountRequest,
        expected: u64,
        load: crate::product::LoadRun<'_>,
    ) -> std::result::Result<crate::product::LoadCount, crate::product::CountFailed> {
        settle::count_after_load(req, expected, load)
    }
    fn count_rows_detailed(&self, req: &CountRequest) -> Result<(u64, Option<Value>)> {
        let c = count_table(req)?;
        Ok((c.rows, Some(c.detail)))
    }
}

impl StorageFootprint for InfluxDb3 {
    /// The generic split, and Enterprise's upgraded engine's `.pt` files, which hold both the
    /// WAL and the data (docs: storage-engine.md, admin/load-capture.md).
    fn classify_file(&self, rel: &Path) -> crate::product::FilePart {
        match rel.extension().and_then(|e| e.to_str()) {
            Some(e) if e.eq_ignore_ascii_case("pt") => crate::product::FilePart::WalAndData,
            _ => crate::product::classify_generic(rel),
        }
    }
    fn combined_note(&self) -> &'static str {
        "WAL and data files share one format (.pt, the upgraded InfluxDB 3 Enterprise storage engine): reported as a total, not split"
    }
    /// `.pt` files: the upgraded engine; WAL or Parquet files: the Parquet one.
    fn storage_engine(&self, combined_files: u64, split_files: u64) -> Option<&'static str> {
        if combined_files > 0 {
            Some(UPGRADED_ENGINE)
        } else if split_files > 0 {
            Some("parquet")
        } else {
            None
        }
    }
    /// On S3: the bucket's objects under the node id (WAL, Parquet, catalog); no local cache.
    fn object_store_footprint(
        &self,
        ws: &WorkspaceManifest,
        _ws_dir: &Path,
    ) -> Result<Option<(Value, Option<Value>)>> {
        match object_store::of(ws)? {
            Some(l) => Ok(Some((object_store::record(&l)?, None))),
            None => Ok(None),
        }
    }
    /// `--object-store s3`: the bucket, under the node id.
    fn object_location(
        &self,
        database_id: &str,
        extra: &serde_json::Map<String, Value>,
    ) -> Result<Option<crate::s3::Location>> {
        object_store::of_extra(extra, &object_store::node_id_of(database_id, extra))
    }
}

impl Reporting for InfluxDb3 {
    fn templates(&self) -> &'static [(&'static str, &'static str)] {
        &[
            (
                "summary/settings",
                include_str!("../../templates/influxdb3/summary-settings.md.j2"),
            ),
            (
                "summary/never_flushed",
                include_str!("../../templates/influxdb3/summary-never-flushed.md.j2"),
            ),
            (
                "report.md/settings",
                include_str!("../../templates/influxdb3/report-settings.md.j2"),
            ),
            (
                "report.html/settings",
                include_str!("../../templates/influxdb3/report-settings.html.j2"),
            ),
        ]
    }
    fn server_settings(
        &self,
        ws: Option<&WorkspaceManifest>,
        data_dir: Option<&Path>,
        runtime_version: Option<&str>,
    ) -> Option<Value> {
        let mut v = server_settings(Some(self.edition.as_str()), ws, data_dir);
        // A --version override runs another binary than the workspace's.
        if let Some(r) = runtime_version {
            v["source"] = json!(settings_source(r));
        }
        // Where the data was (the names of the key variables, not the keys).
        if let Some(l) = ws.and_then(|w| object_store::of(w).ok().flatten()) {
            v["object_storage"] = object_store::field(Some(&l));
            v["object_storage_source"] = json!("the workspace manifest, fixed at prepare");
        }
        Some(v)
    }
}

static BENCH_EXT: super::ext::BenchExt = super::ext::BenchExt {
    flags: flags::FLAGS,
    record: super::ext::Record::Flat,
    resolve: flags::resolve,
    core: flags::core,
    write_settings: Some(&flags::WRITE_SETTINGS),
    ..super::ext::BenchExt::NONE
};

/// The registry line of InfluxDB 3 (variant: the edition).
pub const ENTRY: super::Entry = super::Entry {
    name: "influxdb3",
    display: "InfluxDB 3",
    variant_flag: Some("--edition"),
    variants: &["core", "enterprise"],
    make: |v| {
        Ok(Box::new(InfluxDb3::new(Edition::parse(
            v.unwrap_or("core"),
        )?)))
    },
    sources: &[super::release::INFLUXDATA_DL, distribution::INSTALLER],
};

#[allow(non_upper_case_globals)]
impl QueryFormat {
    pub const Influx3: QueryFormat = QueryFormat {
        name: "influx3",
        manifest_kind: "influxdb3-query-set",
        bytes_per_query: 2560,
        generator_flags: &[],
        // `databases/influx3` implements `NewDevops` only: no iot queries.
        use_cases: &["devops"],
        refused_types: &[],
        answers: Some(crate::answers::PrintFormat::SqlThenBody),
    };
}

/// How long a trial licence lasts (docs `admin/license.md`: "Expiration | 30 days").
pub const TRIAL_DAYS: i64 = 30;

/// Within this long of its expiry a trial licence is warned about before a start.
pub const EXPIRY_WARNING_DAYS: i64 = 2;

/// When the trial licence recorded in a workspace's `license` expires (`None`: not a trial
/// activated by e-mail, or no readable activation time).
pub fn trial_expiry(license: &Value) -> Option<time::OffsetDateTime> {
    if license["source"].as_str() != Some("trial") || license["status"] != license::ACTIVE {
        return None;
    }
    let at = time::OffsetDateTime::parse(
        license["activated_at"].as_str()?,
        &time::format_description::well_known::Rfc3339,
    )
    .ok()?;
    Some(at + time::Duration::days(TRIAL_DAYS))
}

fn rfc3339(t: time::OffsetDateTime) -> String {
    t.format(&time::format_description::well_known::Rfc3339)
        .unwrap_or_default()
}

/// The command that gives an Enterprise workspace a licence again after its trial expired.
pub fn renewal_hint(id: &str) -> String {
    format!(
        "renew it with a licence file from InfluxData: `tsbsctl influxdb3 activate --database-id {id} \
         --license-file PATH` (the server reads the given file before the expired stored trial)"
    )
}

/// A warning when the workspace's trial licence expires within [`EXPIRY_WARNING_DAYS`]: a long
/// run may outlive it (queries then fail and the server does not restart).
pub fn expiry_warning(ws: &WorkspaceManifest) -> Option<String> {
    let exp = trial_expiry(&ws.extra["license"])?;
    let now = time::OffsetDateTime::now_utc();
    (exp > now && exp - now < time::Duration::days(EXPIRY_WARNING_DAYS)).then(|| {
        format!(
            "the trial licence of workspace {} expires at {} (in {} h): a long run may outlive it; {}",
            ws.database_id,
            rfc3339(exp),
            (exp - now).whole_hours(),
            renewal_hint(&ws.database_id)
        )
    })
}

/// What drives an InfluxDB 3 run's numbers besides the workload: the licence (Enterprise:
/// At-Home runs 2 cores, one IO and one DataFusion thread), the WAL and snapshot settings in
/// force (the server's defaults: tsbsctl passes none), the storage engine and telemetry.
/// `ws`: the managed workspace (`None`: an external server, whose settings are unknown).
pub fn server_settings(
    edition: Option<&str>,
    ws: Option<&WorkspaceManifest>,
    data_dir: Option<&Path>,
) -> Value {
    let Some(ws) = ws else {
        return json!({
            "source": "unknown: an external server's settings are not visible to tsbsctl",
            "license": {"type": if edition == Some("core") { "not-required" } else { "unknown" }},
            "wal_flush_interval": null,
            "gen1_duration": null,
            "wal_snapshot_size": null,
            "snapshot_after_wal_flushes": null,
            "snapshotted_wal_files_to_keep": null,
            "storage_engine": if edition == Some("core") { "parquet" } else { "unknown" },
            "telemetry_upload": "unknown",
        });
    };
    let lic = &ws.extra["license"];
    let enterprise = ws.variant.as_deref() == Some("enterprise");
    let license = if !enterprise {
        json!({"type": "not-required"})
    } else {
        // A licence file is never opened: its type stays unknown.
        let kind = match lic["source"].as_str() {
            Some(t @ ("trial" | "home")) => t.to_string(),
            Some("file") => "unknown (licence file)".to_string(),
            _ => "unknown".to_string(),
        };
        let limits = (kind == "home").then_some(
            "At-Home licence: capped at 2 cores; on the 3.11 engine 1 IO thread and 1 DataFusion thread",
        );
        json!({
            "type": kind,
            "activated_at": lic["activated_at"],
            "expires_at": trial_expiry(lic).map(rfc3339),
            "limits": limits,
        })
    };
    let engine = if !enterprise {
        ("parquet", "Core")
    } else {
        match data_dir.map(detect_engine).unwrap_or(None) {
            Some(e) => (e, "data directory layout"),
            None if version_at_least(&ws.version, 3, 11) => (
                "upgraded (.pt files)",
                "expected for a cluster created on 3.11 or later (no data files yet)",
            ),
            None => ("parquet", "version before 3.11 (no data files yet)"),
        }
    };
    let snapshot_flag = if version_at_least(&ws.version, 3, 11) {
        "--wal-files-per-snapshot"
    } else {
        "--wal-snapshot-size"
    };
    json!({
        "source": settings_source(&ws.version),
        "license": license,
        "wal_flush_interval": "1s",
        "durable_write_wait": "a durable write is answered after the next WAL flush (up to the flush interval)",
        "gen1_duration": "10m",
        "wal_snapshot_size": 600,
        "wal_snapshot_size_flag": snapshot_flag,
        "snapshot_after_wal_flushes": 900,
        "snapshotted_wal_files_to_keep": 300,
        "storage_engine": engine.0,
        "storage_engine_source": engine.1,
        "telemetry_upload": "disabled (--disable-telemetry-upload)",
    })
}

/// The source of the WAL and snapshot values below for a server of `version`: they were read
/// in the v3.10.1 source, so for another version they are what that source says, unconfirmed.
pub fn settings_source(version: &str) -> String {
    const READ_IN: &str = "3.10.1";
    if version.trim_start_matches('v') == READ_IN {
        "server defaults: tsbsctl passes no WAL or snapshot flag (src influxdb3 serve.rs, v3.10.1)"
            .to_string()
    } else {
        format!(
            "server defaults as read in the v{READ_IN} source (influxdb3 serve.rs); not confirmed for {version}: tsbsctl passes no WAL or snapshot flag"
        )
    }
}

/// `MAJOR.MINOR` of `version` is at least `major.minor` (a pre-release of 3.11 counts as 3.11:
/// the flags it gates arrived with the 3.11 pre-releases). False for a version that is not
/// SemVer.
pub(crate) fn version_at_least(version: &str, major: u64, minor: u64) -> bool {
    semver::Version::parse(version).is_ok_and(|v| (v.major, v.minor) >= (major, minor))
}

/// The storage engine a data directory's files show: `.pt` files are the upgraded engine,
/// `.wal` / `.parquet` the Parquet one; `None` when there are neither (bounded walk).
pub fn detect_engine(dir: &Path) -> Option<&'static str> {
    let mut stack = vec![dir.to_path_buf()];
    let mut seen = 0u32;
    let mut parquet = false;
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).into_iter().flatten().flatten() {
            seen += 1;
            if seen > 100_000 {
                break;
            }
            let p = e.path();
            match e.file_type() {
                Ok(t) if t.is_dir() => stack.push(p),
                Ok(t) if t.is_file() => match p.extension().and_then(|x| x.to_str()) {
                    Some("pt") => return Some(UPGRADED_ENGINE),
                    Some("wal" | "parquet") => parquet = true,
                    _ => {}
                },
                _ => {}
            }
        }
    }
    parquet.then_some("parquet")
}

/// Text by which InfluxDB 3 Core refuses a query over its Parquet file limit
/// (`influxdb3_write/src/write_buffer/mod.rs`: "Query would scan <limit> Parquet files,
/// exceeding the file limit. ...", where the number is the limit, not the files).
pub const FILE_LIMIT_TEXT: &str = "exceeding the file limit";

/// Default limit of one count or admin request: a `count(*)` over ~100 M rows of the published
/// scale on a remote server can take minutes (`--count-timeout` overrides it).
pub const DEFAULT_COUNT_TIMEOUT: std::time::Duration = super::DEFAULT_COUNT_TIMEOUT;

/// The server's `--wal-flush-interval` when none is passed (src `serve.rs`: default `1s`).
pub const DEFAULT_WAL_FLUSH_INTERVAL: std::time::Duration = std::time::Duration::from_secs(1);

/// Most count requests one row count may make (slicing stops before this, bounded).
const MAX_COUNT_REQUESTS: u32 = 4096;

/// What a row count asks: the table, the dataset's `[start, end)` in ns when known (slices
/// stay inside it), a token for external servers, the per-request limit.
pub use super::CountRequest;

/// A row count and how it was obtained (`detail` goes into the run's row-count step).
#[derive(Debug, Clone)]
pub struct RowCount {
    pub rows: u64,
    pub detail: Value,
}

enum CountFailure {
    /// Core's query file limit, as the refusal names it.
    FileLimit(Option<u64>),
    Other(Error),
}

/// `[start, end)` of an RFC 3339 pair (a dataset's spec) in ns; `None` when either is unreadable.
pub fn window_ns(start: &str, end: &str) -> Option<(i64, i64)> {
    let p = |s: &str| {
        time::OffsetDateTime::parse(s, &time::format_description::well_known::Rfc3339)
            .ok()
            .map(|t| t.unix_timestamp_nanos() as i64)
    };
    let (a, b) = (p(start)?, p(end)?);
    (a < b).then_some((a, b))
}

fn rfc3339_ns(ns: i64) -> String {
    time::OffsetDateTime::from_unix_timestamp_nanos(ns as i128)
        .ok()
        .and_then(|t| {
            t.format(&time::format_description::well_known::Rfc3339)
                .ok()
        })
        .unwrap_or_default()
}

/// Counts the rows of a table. A whole-table `count(*)` first; when Core refuses it for its
/// query file limit (a count over a 3-day table at the published scale can), the dataset's
/// window is counted in time slices, halved until each stays under the limit, and summed.
/// A file-limit refusal that slicing cannot get under is reported as such, never as rows.
pub fn count_table(req: &CountRequest) -> Result<RowCount> {
    let client = count_client(req.timeout)?;
    crate::ids::validate_sql_identifier("--table", req.table)?;
    // Real 3.10.1 names its limit in the refusal ("Query would scan <limit> Parquet files"),
    // not the files the query would scan; those come from its own list of persisted files.
    let limit_words = |limit: Option<u64>| {
        let limit = limit.map(|n| format!(" ({n})")).unwrap_or_default();
        match persisted_files(req) {
            Some((files, _)) => format!(
                "over the server's query file limit{limit}: the table has {files} Parquet files"
            ),
            None => format!("over the server's query file limit{limit}"),
        }
    };
    let limit_error = |limit: Option<u64>, what: &str| {
        Error::failed(format!(
            "InfluxDB 3 Core refused to count {} {what}: {} (this is the server's limit, not missing rows)",
            req.table,
            limit_words(limit)
        ))
        .with_hint("count in narrower time ranges, or start the server with a higher --query-file-limit")
    };
    let started = std::time::Instant::now();
    let whole = match count_once(&client, req, None) {
        Ok(n) => {
            return Ok(RowCount {
                rows: n,
                detail: json!({"method": "whole-table", "requests": 1,
                    "request_timeout_s": req.timeout.as_secs_f64()}),
            })
        }
        Err(CountFailure::Other(e)) => return Err(e),
        Err(CountFailure::FileLimit(files)) => files,
    };
    let Some((lo, hi)) = req.window else {
        return Err(limit_error(
            whole,
            "as a whole (no dataset window to slice)",
        ));
    };
    let mut pending = vec![(lo, hi)];
    let (mut total, mut slices, mut requests, mut widest) = (0u64, 0u32, 1u32, 0i64);
    while let Some((a, b)) = pending.pop() {
        if requests >= MAX_COUNT_REQUESTS {
            return Err(limit_error(
                whole,
                &format!("even in {requests} time slices"),
            ));
        }
        requests += 1;
        match count_once(&client, req, Some((a, b))) {
            Ok(n) => {
                total += n;
                slices += 1;
                widest = widest.max(b - a);
            }
            // Halve until each slice is under the limit; a 1 s slice over it cannot be cut.
            Err(CountFailure::FileLimit(_)) if b - a > 1_000_000_000 => {
                let mid = a + (b - a) / 2;
                pending.push((mid, b));
                pending.push((a, mid));
            }
            Err(CountFailure::FileLimit(files)) => {
                return Err(limit_error(files, "even in a one-second slice"))
            }
            Err(CountFailure::Other(e)) => return Err(e),
        }
    }
    Ok(RowCount {
        rows: total,
        detail: json!({
            "method": "time-slices",
            "reason": format!("a whole-table count is {}", limit_words(whole)),
            "window": {"start": rfc3339_ns(lo), "end": rfc3339_ns(hi)},
            "slices": slices,
            "widest_slice_s": widest as f64 / 1e9,
            "requests": requests,
            "request_timeout_s": req.timeout.as_secs_f64(),
            "seconds": started.elapsed().as_secs_f64(),
        }),
    })
}

/// The table's landed Parquet files and their rows, from `system.parquet_files` (real
/// 3.10.1: `table_name`, `path`, `size_bytes`, `row_count`, `min_time`, `max_time`). A system
/// table: no file limit applies. `None` when the server does not answer it.
pub fn persisted_files(req: &CountRequest) -> settle::Persisted {
    crate::ids::validate_sql_identifier("--table", req.table).ok()?;
    let client = count_client(std::time::Duration::from_secs(60)).ok()?;
    let q = format!(
        "SELECT row_count FROM system.parquet_files WHERE table_name = '{}'",
        req.table
    );
    let server = format!("InfluxDB 3 at {}", req.endpoint);
    let a = crate::http::send(
        &server,
        "system.parquet_files",
        sql_request(&client, req, &q),
        None,
    )
    .ok()
    .filter(crate::http::Answer::is_success)?;
    let body = a.json(&server, "system.parquet_files").ok()?;
    let files = body.as_array()?;
    let rows = files
        .iter()
        .map(|f| f["row_count"].as_u64())
        .sum::<Option<u64>>()?;
    Some((files.len() as u64, rows))
}

/// Whether `SHOW TABLES` in the request's database lists its table among the data tables
/// (schema `iox`); `None` when the server does not answer it.
fn lists_table(c: &reqwest::blocking::Client, req: &CountRequest) -> Option<bool> {
    let server = format!("InfluxDB 3 at {}", req.endpoint);
    let a = crate::http::send(
        &server,
        "SHOW TABLES",
        sql_request(c, req, "SHOW TABLES"),
        Some(req.timeout),
    )
    .ok()
    .filter(crate::http::Answer::is_success)?;
    let rows = a.json(&server, "SHOW TABLES").ok()?;
    Some(rows.as_array()?.iter().any(|r| {
        r["table_schema"].as_str() == Some("iox") && r["table_name"].as_str() == Some(req.table)
    }))
}

/// The client of a count's requests: no proxy, `timeout` per request.
fn count_client(timeout: std::time::Duration) -> Result<reqwest::blocking::Client> {
    crate::http::local(Some(timeout))
}

/// `POST /api/v3/query_sql` of `q` in the request's database, JSON rows, with its token.
fn sql_request(
    c: &reqwest::blocking::Client,
    req: &CountRequest,
    q: &str,
) -> reqwest::blocking::RequestBuilder {
    let r = c
        .post(format!("{}/api/v3/query_sql", req.endpoint))
        .json(&json!({"db": req.database, "q": q, "format": "json"}));
    match req.token {
        Some(t) => r.bearer_auth(t),
        None => r,
    }
}

fn count_once(
    c: &reqwest::blocking::Client,
    req: &CountRequest,
    range: Option<(i64, i64)>,
) -> std::result::Result<u64, CountFailure> {
    let table = req.table;
    let q = match range {
        None => format!("SELECT count(*) AS n FROM {table}"),
        Some((a, b)) => format!(
            "SELECT count(*) AS n FROM {table} WHERE time >= '{}' AND time < '{}'",
            rfc3339_ns(a),
            rfc3339_ns(b)
        ),
    };
    let what = format!("count(*) of {table}");
    let r = sql_request(c, req, &q);
    let a = crate::http::send(
        &format!("InfluxDB 3 at {}", req.endpoint),
        &what,
        r,
        Some(req.timeout),
    )
    .map_err(|e| {
        CountFailure::Other(
            e.with_hint("a count over a large table can take long: raise --count-timeout SECONDS"),
        )
    })?;
    if !a.is_success() {
        if a.text.contains(FILE_LIMIT_TEXT) {
            let files = a
                .text
                .split("would scan ")
                .nth(1)
                .and_then(|r| r.split_whitespace().next())
                .and_then(|n| n.parse().ok());
            return Err(CountFailure::FileLimit(files));
        }
        let e = a.refused("InfluxDB 3", &what, a.text.trim());
        // Not there, in the server's own terms: an unknown database is its 404
        // (`QueryExecutorError::DatabaseNotFound`); a table the database lacks is a planning
        // error like any other, so its own list of tables says it.
        let e = if a.status == reqwest::StatusCode::NOT_FOUND {
            e.not_found(Missing::Database(req.database.into()))
        } else if lists_table(c, req) == Some(false) {
            e.not_found(Missing::Table(table.into()))
        } else {
            e
        };
        return Err(CountFailure::Other(e));
    }
    let body = a.json("InfluxDB 3", &what).map_err(CountFailure::Other)?;
    body.get(0)
        .and_then(|row| row.as_object())
        .and_then(|o| o.get("n").or_else(|| o.values().next()))
        .and_then(Value::as_u64)
        .ok_or_else(|| {
            CountFailure::Other(Error::failed(format!(
                "InfluxDB 3 answered count(*) of {table} without a number: {body}"
            )))
        })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::platform::Platform;
    use crate::product::{Distribution, WorkspaceSetup};

    #[test]
    fn settings_provenance_names_the_source_version_it_was_read_in() {
        let same = settings_source("3.10.1");
        assert!(
            same.contains("v3.10.1") && !same.contains("not confirmed"),
            "{same}"
        );
        let other = settings_source("3.11.1");
        assert!(
            other.starts_with("server defaults as read in the v3.10.1 source")
                && other.contains("not confirmed for 3.11.1"),
            "{other}"
        );
    }

    #[test]
    fn installer_versions() {
        let s = "#!/bin/sh\nINFLUXDB_OSS_VERSION=\"3.11.1\"\nINFLUXDB_ENT_VERSION=\"3.11.2\"\n";
        assert_eq!(script_version(s, "INFLUXDB_OSS_VERSION").unwrap(), "3.11.1");
        assert_eq!(script_version(s, "INFLUXDB_ENT_VERSION").unwrap(), "3.11.2");
        assert!(script_version(
            "INFLUXDB_OSS_VERSION=\"1\"\nINFLUXDB_OSS_VERSION=\"2\"\n",
            "INFLUXDB_OSS_VERSION"
        )
        .is_err());
        assert!(script_version("", "INFLUXDB_OSS_VERSION").is_err());
        assert_eq!(
            script_version(
                "  INFLUXDB_OSS_VERSION='3.10.0'  \n",
                "INFLUXDB_OSS_VERSION"
            )
            .unwrap(),
            "3.10.0"
        );
        for bad in [
            "INFLUXDB_OSS_VERSION=3.11.1\n",
            "INFLUXDB_OSS_VERSION=\"3.11.1\"\nINFLUXDB_OSS_VERSION=3.11.1\n",
            "INFLUXDB_OSS_VERSION=\"latest\"\n",
            "INFLUXDB_OSS_VERSION=\"${X}\"\n",
            "INFLUXDB_VERSION=\"3.11.1\"\n",
        ] {
            let e = script_version(bad, "INFLUXDB_OSS_VERSION").unwrap_err();
            assert!(e.hint.unwrap().contains("--version"), "{bad}");
        }
    }

    #[test]
    fn platforms_and_licence_variables() {
        let p = InfluxDb3::new(Edition::Core);
        for ok in [
            ("linux", "x86_64"),
            ("linux", "aarch64"),
            ("macos", "aarch64"),
        ] {
            p.check_platform(&Platform::from_parts(ok.0, ok.1).unwrap())
                .unwrap();
        }
        let e = p
            .check_platform(&Platform::from_parts("macos", "x86_64").unwrap())
            .unwrap_err();
        assert_eq!(e.exit_code(), 2);
        assert_eq!(license_env_names("3.11.0").0, "INFLUXDB3_LICENSE_EMAIL");
        assert_eq!(license_env_names("3.12.1").1, "INFLUXDB3_LICENSE_TYPE");
        assert_eq!(
            license_env_names("3.10.2").0,
            "INFLUXDB3_ENTERPRISE_LICENSE_EMAIL"
        );
        assert_eq!(
            InfluxDb3::new(Edition::Core).new_workspace_fields("a.b_c")["license"]["status"],
            "not-required"
        );
        assert_eq!(InfluxDb3::node_id("a.b_c"), "a-b-c-node");
    }

    /// Issue 23 §4: a database that is not there is the server's 404; a table that is not
    /// there is a refusal whose database's `SHOW TABLES` does not list it. Either is
    /// [`Missing`], with the name asked for; any other refusal is not.
    #[test]
    fn a_count_of_what_is_not_there_says_so_by_the_servers_own_answers() {
        let count = |ep: &str| {
            count_table(&CountRequest {
                endpoint: ep,
                database: "benchmark",
                table: "cpu",
                window: None,
                token: None,
                timeout: std::time::Duration::from_secs(5),
            })
            .unwrap_err()
        };
        let e = count(&crate::http::answers_in_turn(vec![(
            "404 Not Found",
            r#"{"error":"query error: database not found: benchmark","data":null}"#,
        )]));
        assert_eq!(e.missing(), Some(&Missing::Database("benchmark".into())));
        let shown = r#"[{"table_catalog":"public","table_schema":"iox","table_name":"mem","table_type":"BASE TABLE"},{"table_catalog":"public","table_schema":"system","table_name":"cpu","table_type":"BASE TABLE"}]"#;
        let e = count(&crate::http::answers_in_turn(vec![
            (
                "400 Bad Request",
                "Error during planning: table 'public.iox.cpu' not found",
            ),
            ("200 OK", shown),
        ]));
        assert_eq!(e.missing(), Some(&Missing::Table("cpu".into())), "{e:?}");
        // A refusal of a table the server lists is not "not there", whatever its words.
        let e = count(&crate::http::answers_in_turn(vec![
            ("500 Internal Server Error", "Table not found, or not"),
            (
                "200 OK",
                r#"[{"table_catalog":"public","table_schema":"iox","table_name":"cpu","table_type":"BASE TABLE"}]"#,
            ),
        ]));
        assert_eq!(e.missing(), None, "{e:?}");
        assert_eq!(e.http_status(), Some(500));
        // No list of tables (the second request refused): not decided either way.
        let e = count(&crate::http::answers_in_turn(vec![
            (
                "400 Bad Request",
                "Error during planning: table 'public.iox.cpu' not found",
            ),
            ("500 Internal Server Error", "busy"),
        ]));
        assert_eq!(e.missing(), None, "{e:?}");
    }

    #[test]
    fn a_file_limit_refusal_is_named_and_sliced_counts_are_bounded() {
        let ep = crate::http::answers_in_turn(vec![(
            "500 Internal Server Error",
            "External error: Query would scan 432 Parquet files, exceeding the file limit. InfluxDB 3 Core caps file access",
        )]);
        // No window to slice in: the limit is named as the limit it is (the real refusal's
        // number), not as a file count nor as missing rows.
        let e = count_table(&CountRequest {
            endpoint: &ep,
            database: "benchmark",
            table: "cpu",
            window: None,
            token: None,
            timeout: std::time::Duration::from_secs(5),
        })
        .unwrap_err();
        assert!(
            e.message
                .contains("over the server's query file limit (432)"),
            "{}",
            e.message
        );
        assert!(!e.message.contains("432 Parquet files"), "{}", e.message);
        assert!(e.message.contains("not missing rows"), "{}", e.message);
        assert_eq!(
            window_ns("2023-06-11T00:00:00Z", "2023-06-12T00:00:00Z"),
            Some((1_686_441_600_000_000_000, 1_686_528_000_000_000_000))
        );
        assert_eq!(
            window_ns("2023-06-12T00:00:00Z", "2023-06-11T00:00:00Z"),
            None
        );
        assert_eq!(
            rfc3339_ns(1_686_441_600_000_000_000),
            "2023-06-11T00:00:00Z"
        );
    }

    #[test]
    fn trial_expiry_is_thirty_days_after_activation() {
        let lic =
            json!({"status": "active", "source": "trial", "activated_at": "2026-01-01T00:00:00Z"});
        assert_eq!(rfc3339(trial_expiry(&lic).unwrap()), "2026-01-31T00:00:00Z");
        for other in [
            json!({"status": "active", "source": "home", "activated_at": "2026-01-01T00:00:00Z"}),
            json!({"status": "active", "source": "file", "activated_at": "2026-01-01T00:00:00Z"}),
            json!({"status": "pending", "source": "trial"}),
        ] {
            assert!(trial_expiry(&other).is_none(), "{other}");
        }
    }

    #[test]
    fn versions_and_assets() {
        let p = InfluxDb3::new(Edition::Enterprise);
        p.check_version_output(
            "3.11.1",
            "influxdb3 InfluxDB 3 Enterprise, 3.11.1, revision abc",
        )
        .unwrap();
        assert!(p
            .check_version_output("3.11.1", "influxdb3 InfluxDB 3 Core, 3.11.1, revision abc")
            .is_err());
        assert!(p
            .check_version_output(
                "3.11.1",
                "influxdb3 InfluxDB 3 Enterprise, 3.11.10, revision"
            )
            .is_err());
        assert_eq!(InfluxDb3::node_id("core_3.11"), "core-3-11-node");
        let f = p.new_workspace_fields("ent-3111-manual");
        assert_eq!(f["cluster_id"], "ent-3111-manual-cluster");
    }
}
