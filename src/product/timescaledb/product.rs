//! The `Product` implementation of TimescaleDB / PostgreSQL. Installations are pinned, not
//! downloaded ([`crate::install::pin_local`]): the installation directory holds
//! [`INSTALL_RECORD`], the [`PgInstallation`] with every binary's checksum, and the manifest's
//! binary is the absolute path of `postgres`. The variant is the [`Mode`], bound to the
//! workspace (its `edition` field); installations are shared by both modes.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde_json::{json, Map, Value};

use super::install::PgInstallation;
use super::server::{self as pg, Layout, RunAs, Settings};
use super::sql::{self, Target};
use super::Mode;
use crate::dataset::{DataFormat, Profile, RowLayout, RowLine};
use crate::error::{Error, Result};
use crate::platform::Platform;
use crate::product::{FilePart, FootprintParts, Product, ServerCommand, ToolOptions, CONFIG_FILE};
use crate::queryset::QueryFormat;
use crate::server::{Probe, Timing};
use crate::tsbs::{LoadTarget, QueryTarget, Secret, ToolArg};
use crate::workspace_manifest::WorkspaceManifest;

/// The pinned installation record inside an installation directory.
pub const INSTALL_RECORD: &str = "pg-installation.json";

/// TimescaleDB (or plain PostgreSQL) in one [`Mode`].
#[derive(Debug, Clone, Copy)]
pub struct TimescaleDb {
    pub mode: Mode,
}

/// The registry line: variants are the modes, `--mode`, default `timescaledb`.
pub const ENTRY: crate::product::Entry = crate::product::Entry {
    name: "timescaledb",
    display: "TimescaleDB",
    variant_flag: Some("--mode"),
    variants: &["timescaledb", "postgresql"],
    make: |v| {
        let mode = v.map(Mode::parse).transpose()?.unwrap_or(Mode::Timescaledb);
        Ok(Box::new(TimescaleDb { mode }))
    },
};

pub(super) static BENCH_EXT: crate::product::ext::BenchExt = crate::product::ext::BenchExt {
    flags: super::flags::FLAGS,
    record: crate::product::ext::Record::Flat,
    resolve: super::flags::resolve,
    core: super::flags::core,
    ..crate::product::ext::BenchExt::NONE
};

/// Manifest of a TimescaleDB query set (kind `timescaledb-query-set`).
#[derive(Debug, Clone, serde::Serialize, serde::Deserialize)]
#[serde(transparent)]
pub struct TimescaleQuerySetManifest(pub crate::queryset::QuerySetManifest);
impl crate::manifest::Manifest for TimescaleQuerySetManifest {
    const KIND: &'static str = "timescaledb-query-set";
}
impl From<crate::queryset::QuerySetManifest> for TimescaleQuerySetManifest {
    fn from(m: crate::queryset::QuerySetManifest) -> Self {
        TimescaleQuerySetManifest(m)
    }
}
impl From<TimescaleQuerySetManifest> for crate::queryset::QuerySetManifest {
    fn from(m: TimescaleQuerySetManifest) -> Self {
        m.0
    }
}

/// `tsbs_generate_data --format timescaledb`, what `tsbs_load_timescaledb` reads (both modes):
/// three header lines (the tags' schema, the columns, a blank line), then per row a `tags,...`
/// line and its `cpu,<ns>,...` values line.
const DATA_FORMAT: DataFormat = DataFormat {
    name: "timescaledb",
    layout: RowLayout {
        header_lines: 3,
        lines_per_row: 2,
        row_line: RowLine::MeasurementDigit,
    },
};

/// `tsbs_generate_queries --format timescaledb` (gob-encoded SQL queries).
/// The query format of each mode: the same files but for the generator flags (PostgreSQL has
/// no `time_bucket`), which are in the set's identity. Must match [`QueryFlags::for_mode`].
const FORMAT: QueryFormat = QueryFormat {
    name: "timescaledb",
    manifest_kind: "timescaledb-query-set",
    write: crate::queryset::write_as::<TimescaleQuerySetManifest>,
    read: crate::queryset::read_as::<TimescaleQuerySetManifest>,
    bytes_per_query: 2048,
    generator_flags: &[
        "--timescale-use-time-bucket=true",
        "--timescale-use-json=false",
        "--timescale-use-tags=true",
    ],
    use_cases: &["devops", "iot"],
    refused_types: &[],
    answers: Some(crate::answers::PrintFormat::QueryResults),
};
const FORMAT_POSTGRESQL: QueryFormat = QueryFormat {
    generator_flags: &[
        "--timescale-use-time-bucket=false",
        "--timescale-use-json=false",
        "--timescale-use-tags=true",
    ],
    refused_types: &[
        ("avg-daily-driving-duration", NO_TIME_BUCKET),
        ("avg-daily-driving-session", NO_TIME_BUCKET),
        ("breakdown-frequency", NO_TIME_BUCKET),
        ("daily-activity", NO_TIME_BUCKET),
        ("long-daily-sessions", NO_TIME_BUCKET),
        ("long-driving-sessions", NO_TIME_BUCKET),
    ],
    ..FORMAT
};

/// Why six iot types cannot run on plain PostgreSQL.
const NO_TIME_BUCKET: &str = "the fork's TimescaleDB iot queries of these types call time_bucket() whatever --timescale-use-time-bucket says (databases/timescaledb/iot.go), and plain PostgreSQL has no such function; a workspace in timescaledb mode runs them";

/// Reads the pinned record of the installation in `install_dir`.
pub fn read_record(install_dir: &Path) -> Result<PgInstallation> {
    let path = install_dir.join(INSTALL_RECORD);
    let bytes = std::fs::read(&path).map_err(|e| {
        Error::integrity(format!("{}: {e}", path.display()))
            .with_hint("tsbsctl timescaledb install --reinstall")
    })?;
    serde_json::from_slice(&bytes).map_err(|e| {
        Error::integrity(format!(
            "{} is not a PostgreSQL installation record: {e}",
            path.display()
        ))
        .with_hint("tsbsctl timescaledb install --reinstall")
    })
}

/// The maintenance database every cluster has (sessions on the benchmark one are ended from it).
const ADMIN_DB: &str = "postgres";

/// Where an endpoint is: a managed workspace's `postgres://postgres@127.0.0.1:PORT/DB`
/// ([`Product::local_endpoint`]) or an external `--url postgres://USER@HOST:PORT/DB`; the
/// generic `http://HOST:PORT` form (older records, tests) means the superuser on that port.
fn target_of(endpoint: &str) -> Result<Target> {
    match url::Url::parse(endpoint) {
        Ok(u) if matches!(u.scheme(), "http" | "https") => {
            let mut t = Target::local(endpoint_port(endpoint)?, ADMIN_DB);
            if let Some(h) = u.host_str() {
                t.host = h.trim_start_matches('[').trim_end_matches(']').into();
            }
            Ok(t)
        }
        _ => Target::from_url(endpoint),
    }
}

/// The one endpoint (the tools take one server).
fn one_target(urls: &[String]) -> Result<Target> {
    let [u] = urls else {
        return Err(Error::invalid(format!(
            "PostgreSQL takes exactly one endpoint, got {}",
            urls.len()
        )));
    };
    target_of(u)
}

/// The port of an endpoint (`postgres://postgres@127.0.0.1:PORT/DB`, or `http://H:PORT`).
fn endpoint_port(endpoint: &str) -> Result<u16> {
    url::Url::parse(endpoint)
        .ok()
        .and_then(|u| {
            u.port_or_known_default()
                .or(Some(5432).filter(|_| u.scheme().starts_with("postgres")))
        })
        .ok_or_else(|| Error::invalid(format!("no port in endpoint {endpoint:?}")))
}

/// The password argument of the TSBS tools: `PGPASSWORD` in their environment (pgx reads it
/// when `--pass` is empty), never `--pass` on argv nor a file.
fn password_arg(o: &ToolOptions) -> Option<ToolArg> {
    o.auth_token
        .as_ref()
        .filter(|p| !p.is_empty())
        .map(|p| ToolArg::Env(super::tsbs::PASSWORD_ENV, p.clone()))
}

/// Runs `f` on a plain thread: the postgres client runs its own runtime, which must not
/// nest in a caller's.
fn on_thread<T: Send + 'static>(f: impl FnOnce() -> Result<T> + Send + 'static) -> Result<T> {
    std::thread::spawn(f)
        .join()
        .map_err(|_| Error::failed("the PostgreSQL client thread panicked"))?
}

impl TimescaleDb {
    fn settings(&self, ws: &WorkspaceManifest, dir: &Path) -> Settings {
        let port = ws
            .ports
            .get("postgres")
            .copied()
            .unwrap_or(self.default_http_port());
        Settings::bench(
            port,
            &Layout::in_dir(dir).socket_dir,
            self.mode == Mode::Timescaledb,
            super::Durability::of(&ws.extra),
        )
    }
}

/// The two modes are one PostgreSQL server with and without the extension's tables.
static VARIANTS: crate::product::variants::RunVariants = crate::product::variants::RunVariants {
    noun: "edition",
    editions_why: "one stores the data in TimescaleDB hypertables, the other in plain PostgreSQL tables (other table layouts and query plans)",
    limits: None,
};

impl Product for TimescaleDb {
    fn name(&self) -> &'static str {
        "timescaledb"
    }
    fn run_variants(&self) -> Option<&'static crate::product::variants::RunVariants> {
        Some(&VARIANTS)
    }
    fn display_name(&self) -> String {
        match self.mode {
            Mode::Timescaledb => "TimescaleDB".into(),
            Mode::Postgresql => "PostgreSQL (no TimescaleDB)".into(),
        }
    }
    fn edition(&self) -> Option<&str> {
        Some(self.mode.as_str())
    }
    /// Both modes use the same pinned PostgreSQL.
    fn installation_edition(&self) -> Option<&str> {
        None
    }
    fn verify_installation(&self, install_dir: &Path) -> Result<()> {
        let rec = read_record(install_dir)?;
        let changed = rec.changed_binaries();
        if changed.is_empty() {
            return Ok(());
        }
        Err(Error::integrity(format!(
            "the pinned PostgreSQL binaries changed since `install`: {}",
            changed.join("; ")
        )))
    }
    fn binary_name(&self) -> &'static str {
        "postgres"
    }
    fn check_platform(&self, _platform: &Platform) -> Result<()> {
        Ok(())
    }
    /// PostgreSQL versions are `MAJOR.MINOR` (`15.18`).
    fn normalize_version(&self, raw: &str) -> Result<String> {
        let parts: Vec<&str> = raw.split('.').collect();
        let ok = (1..=2).contains(&parts.len())
            && parts
                .iter()
                .all(|p| !p.is_empty() && p.len() <= 4 && p.bytes().all(|b| b.is_ascii_digit()));
        if ok {
            Ok(raw.to_string())
        } else {
            Err(
                Error::invalid(format!("--version {raw:?} is not a PostgreSQL version"))
                    .with_hint("give the version `postgres --version` prints, e.g. 15.18"),
            )
        }
    }
    fn check_version_output(&self, version: &str, output: &str) -> Result<()> {
        let v = super::install::parse_version(output.trim())?;
        if v.version == version {
            Ok(())
        } else {
            Err(Error::integrity(format!(
                "`postgres --version` reports {}, not {version}",
                v.version
            )))
        }
    }
    fn install_command(&self, _version: &str, reinstall: bool) -> String {
        if reinstall {
            "tsbsctl timescaledb install --reinstall".into()
        } else {
            "tsbsctl timescaledb install".into()
        }
    }
    fn cli(&self) -> String {
        format!("tsbsctl timescaledb --mode {}", self.mode.as_str())
    }

    /// initdb into `dir/data` as the server's user, then the rendered settings included.
    /// TimescaleDB mode on an installation without the extension is refused first.
    fn init_data_dir(&self, ws: &WorkspaceManifest, dir: &Path) -> Result<()> {
        let inst = read_record(&ws.installation_path)?;
        self.mode.require_available(
            inst.extension_version(),
            &inst.bin_dir.display().to_string(),
        )?;
        let run_as = RunAs::detect();
        let layout = Layout::in_dir(dir);
        pg::initdb(&inst, &layout, &run_as)?;
        let cfg = dir.join(CONFIG_FILE);
        let text = fs_err::read_to_string(&cfg)?;
        pg::install_config(&layout.data_dir, &text, &run_as)?;
        Ok(())
    }

    fn default_http_port(&self) -> u16 {
        15432
    }
    /// `postgres://postgres@127.0.0.1:PORT/DB`: what `psql` and the TSBS tools connect to.
    fn local_endpoint(&self, port: u16, database: &str) -> String {
        Target::local(port, database).display()
    }
    fn default_ports(&self, port: u16) -> Result<BTreeMap<String, u16>> {
        Ok(BTreeMap::from([("postgres".to_string(), port)]))
    }
    fn render_config(&self, ws: &WorkspaceManifest, dir: &Path) -> Result<Option<String>> {
        let inst = read_record(&ws.installation_path).ok();
        let label = self.mode.label(
            inst.as_ref()
                .map(|i| i.version.version.as_str())
                .unwrap_or(&ws.version),
            inst.as_ref().and_then(|i| i.extension_version()),
        );
        pg::render_config(
            &self.settings(ws, dir),
            &ws.database_id,
            &label,
            crate::VERSION,
        )
        .map(Some)
    }
    /// `postgres -D data` in the foreground as the server's user; the checked workspace
    /// config is installed again first (so the file the server reads is the one verified), and
    /// a `postmaster.pid` no process holds is removed.
    fn server_command(
        &self,
        _ws: &WorkspaceManifest,
        dir: &Path,
        install_dir: &Path,
    ) -> Result<ServerCommand> {
        let inst = read_record(install_dir)?;
        let run_as = RunAs::detect();
        let layout = Layout::in_dir(dir);
        pg::clear_stale_pid(&layout.data_dir)?;
        pg::clear_stale_socket_locks(&layout.socket_dir)?;
        // Sockets: recreated when missing (the workspace dir may have been restored).
        pg::prepare_dirs(&layout, &run_as)?;
        let cfg = dir.join(CONFIG_FILE);
        let text = fs_err::read_to_string(&cfg)?;
        pg::install_config(&layout.data_dir, &text, &run_as)?;
        Ok(pg::server_command(
            &inst,
            &layout,
            &run_as,
            &pg::config_assignments(&text),
        ))
    }
    /// `postgresql.auto.conf` and what follows the include in `postgresql.conf`.
    fn outside_settings(&self, ws_dir: &Path) -> Result<Vec<crate::product::OutsideSetting>> {
        let cfg = ws_dir.join(CONFIG_FILE);
        let text = fs_err::read_to_string(&cfg)?;
        pg::outside_settings(
            &pg::Layout::in_dir(ws_dir).data_dir,
            &pg::config_assignments(&text),
        )
    }
    /// PostgreSQL's log: FATAL ends a session, only PANIC or a dead server process fails.
    fn log_rules(&self) -> crate::logscan::LogRules {
        super::log::RULES
    }
    fn failure_lines(&self) -> Option<fn(&str) -> Vec<String>> {
        Some(super::log::fatal_lines)
    }
    /// Without the installation: `pg_isready` from PATH.
    fn readiness_probe(&self, endpoint: &str) -> Probe {
        let port = endpoint_port(endpoint).unwrap_or(5432);
        Probe::Command {
            program: PathBuf::from("pg_isready"),
            args: vec![
                "-h".into(),
                "127.0.0.1".into(),
                "-p".into(),
                port.to_string(),
                "-U".into(),
                pg::SUPERUSER.into(),
            ],
            gate: None,
        }
    }
    /// The recorded run's durability (a run of a workspace made before the choice: relaxed).
    fn rerun_workspace_fields(&self, server_settings: Option<&Value>) -> Map<String, Value> {
        let d = server_settings
            .and_then(|s| s["settings"]["durability"].as_str())
            .map_or(Ok(super::Durability::Relaxed), super::Durability::parse)
            .unwrap_or(super::Durability::Relaxed);
        [(super::Durability::FIELD.to_string(), d.as_str().into())]
            .into_iter()
            .collect()
    }
    /// `pg_isready` of the installation, asked only once `postmaster.pid` says `ready`: a
    /// connection during startup or WAL replay is refused with a FATAL line in the log.
    fn readiness_probe_for(
        &self,
        endpoint: &str,
        install_dir: &Path,
        workspace_dir: &Path,
    ) -> Probe {
        match (read_record(install_dir), endpoint_port(endpoint)) {
            (Ok(inst), Ok(port)) => {
                let c = pg::pg_isready_command(&inst, port);
                Probe::Command {
                    program: c.program,
                    args: c.args,
                    gate: Some(pg::ready_gate(&Layout::in_dir(workspace_dir).data_dir)),
                }
            }
            _ => self.readiness_probe(endpoint),
        }
    }
    /// The settings in force are the workspace's (N1): each setting of its file must come from
    /// the command line tsbsctl gave (so nothing in `postgresql.conf` after the include, nor
    /// `postgresql.auto.conf`, won), no `ALTER DATABASE/ROLE ... SET` may change one for the
    /// benchmark's sessions, and the postmaster must listen on 127.0.0.1 only. Exit 4 naming
    /// every difference; else the settings as read, with their source, for the run.
    fn check_serving(
        &self,
        ws: &WorkspaceManifest,
        ws_dir: &Path,
        endpoint: &str,
        pid: u32,
    ) -> Result<Option<Value>> {
        let cfg = ws_dir.join(CONFIG_FILE);
        let text = fs_err::read_to_string(&cfg)?;
        let want = pg::config_assignments(&text);
        let mut names: Vec<String> = want.iter().map(|(n, _)| n.clone()).collect();
        names.extend(sql::REPORTED_SETTINGS.iter().map(|s| s.to_string()));
        // What the person set in the cluster's own files is recorded as in force too.
        let outside = pg::outside_settings(&Layout::in_dir(ws_dir).data_dir, &want)?;
        names.extend(outside.into_iter().map(|s| s.name.to_lowercase()));
        names.sort();
        names.dedup();
        let admin = target_of(endpoint)?.with_db(ADMIN_DB);
        let (db, q_names) = (ws.database.clone(), names.clone());
        let (in_force, overrides) = on_thread(move || {
            let mut c = sql::connect(&admin, sql::TIMEOUT)?;
            let f = sql::settings_in_force(&mut c, &q_names)?;
            let o = sql::db_role_overrides(&mut c, &q_names, &db, pg::SUPERUSER)?;
            Ok((f, o))
        })?;
        let mut wrong = Vec::new();
        for (name, value) in &want {
            match in_force.get(&name.to_lowercase()) {
                Some(f) if f.source == "command line" => {}
                // A placeholder's source is not kept: its value must be the workspace's.
                Some(f) if f.source == sql::PLACEHOLDER && &f.value == value => {}
                Some(f) => wrong.push(format!(
                    "{name} = {} from the {}, not the workspace's {value}",
                    f.value, f.source
                )),
                None => wrong.push(format!("{name} is not in pg_settings")),
            }
        }
        for o in &overrides {
            wrong.push(format!("{o} changes a workspace setting"));
        }
        let listening = crate::proc::tcp_listeners(pid).ok();
        if let Some(l) = &listening {
            let open: Vec<String> = l
                .iter()
                .filter(|a| a.ip() != std::net::Ipv4Addr::LOCALHOST)
                .map(|a| a.to_string())
                .collect();
            if !open.is_empty() {
                wrong.push(format!(
                    "the server listens on {} (only 127.0.0.1 is allowed)",
                    open.join(", ")
                ));
            }
        }
        if !wrong.is_empty() {
            return Err(Error::integrity(format!(
                "PostgreSQL of workspace {} runs with settings that are not the workspace's: {}",
                ws.database_id,
                wrong.join("; ")
            ))
            .with_hint(
                "remove them (`ALTER DATABASE ... RESET name`, `ALTER ROLE ... RESET name`, or the lines in the data directory's postgresql.conf or postgresql.auto.conf), or prepare a new workspace",
            ));
        }
        Ok(Some(json!({
            "effective": in_force,
            "effective_source": "pg_settings, read once the server answered",
            "listening": listening.map(|l| l.iter().map(|a| a.to_string()).collect::<Vec<_>>()),
        })))
    }
    /// SIGINT is PostgreSQL's fast shutdown (SIGTERM waits for every client to leave).
    fn default_timing(&self) -> Timing {
        Timing {
            startup_timeout: std::time::Duration::from_secs(120),
            grace: std::time::Duration::from_secs(60),
            stop_signal: nix::sys::signal::Signal::SIGINT,
            startup_wait: Some("it replays its WAL after an unclean stop"),
            ..Timing::default()
        }
    }
    fn count_rows(&self, endpoint: &str, database: &str, table: &str) -> Result<u64> {
        self.count_rows_detailed(&crate::product::CountRequest {
            endpoint,
            database,
            table,
            window: None,
            token: None,
            timeout: sql::TIMEOUT,
        })
        .map(|(n, _)| n)
    }
    /// Over the endpoint's connection (an external server's user, with its password).
    fn count_rows_detailed(
        &self,
        req: &crate::product::CountRequest,
    ) -> Result<(u64, Option<Value>)> {
        crate::ids::validate_sql_identifier("--table", req.table)?;
        let t = target_of(req.endpoint)?
            .with_db(req.database)
            .with_password(req.token);
        let table = req.table.to_string();
        let n = on_thread(move || {
            let mut c = sql::connect(&t, sql::TIMEOUT)?;
            sql::row_count(&mut c, &table)
        })?;
        Ok((n, None))
    }

    fn tsbs_loader(&self) -> &'static str {
        "tsbs_load_timescaledb"
    }
    fn tsbs_runner(&self) -> &'static str {
        "tsbs_run_queries_timescaledb"
    }
    fn data_format(&self) -> DataFormat {
        DATA_FORMAT
    }
    fn query_format(&self) -> QueryFormat {
        match self.mode {
            Mode::Timescaledb => FORMAT,
            Mode::Postgresql => FORMAT_POSTGRESQL,
        }
    }
    /// The published comparison: 8 workers x 10,000 rows.
    fn default_write(&self, profile: Profile) -> (u32, u32) {
        match profile {
            Profile::Manual => (8, 10_000),
            Profile::Smoke => (2, 3000),
        }
    }
    fn max_urls(&self) -> Option<usize> {
        Some(1)
    }
    /// The password of an external server, read only from the variable `--password-env`
    /// names (no default: not even `PGPASSWORD` is read unasked).
    fn token_env_defaults(&self) -> Option<(Option<&'static str>, Option<&'static str>)> {
        Some((None, None))
    }
    fn secret_word(&self) -> &'static str {
        "password"
    }
    /// Its own flags (`timescaledb/flags.rs`, recorded flat as they always were): the mode
    /// of an external target, the password's variable and the hypertable's settings.
    fn bench_ext(&self) -> Option<&'static crate::product::ext::BenchExt> {
        Some(&BENCH_EXT)
    }
    /// `--chunk-time` and `--partitions` shape hypertables: PostgreSQL mode has none.
    fn check_bench_values(&self, values: &crate::product::ext::Values) -> Result<()> {
        super::flags::check_mode(self.mode == Mode::Timescaledb, &self.display_name(), values)
    }
    /// The mode's table layout (hypertables or plain tables), in TimescaleDB mode the
    /// hypertable's `--chunk-time` and `--partitions` when given (the loader's defaults
    /// otherwise: 12h, none; refused in postgresql mode before a run exists), the password in
    /// the environment only.
    fn load_target(&self, o: &ToolOptions) -> LoadTarget {
        let mut args = vec![
            ToolArg::Flag(
                "use-hypertable",
                (self.mode == Mode::Timescaledb).to_string(),
            ),
            ToolArg::Flag("use-jsonb-tags", "false".into()),
            ToolArg::Flag("in-table-partition-tag", "false".into()),
        ];
        if self.mode == Mode::Timescaledb {
            let (chunk_time, partitions) = super::flags::hypertable(&o.values);
            if let Some(c) = chunk_time {
                args.push(ToolArg::Flag("chunk-time", c));
            }
            if let Some(n) = partitions {
                args.push(ToolArg::Flag("partitions", n.to_string()));
            }
        }
        args.extend(password_arg(o));
        LoadTarget {
            basic_auth: None,
            single_url: Some("PostgreSQL"),
            args,
            connection: None,
        }
    }
    /// "PostgreSQL 17.2 (no TimescaleDB)", "TimescaleDB 2.17.2 (PostgreSQL 17.2)".
    fn run_label(&self, version: &str, settings: Option<&Value>) -> Option<String> {
        let ext = settings.and_then(|s| s["extension_version"].as_str());
        Some(self.mode.label(version, ext))
    }
    /// The version a server answers with is PostgreSQL's (`SHOW server_version`).
    fn version_name(&self) -> Option<&'static str> {
        Some("PostgreSQL")
    }
    /// No other session on the benchmark database (a leftover one would block the loader's
    /// `DROP DATABASE` and compete with it), and the WAL position the load starts from.
    /// Called for managed servers only: other people's sessions on an external server are
    /// theirs.
    fn before_load(&self, endpoint: &str, database: &str) -> Result<Option<Value>> {
        let admin = target_of(endpoint)?.with_db(ADMIN_DB);
        let db = database.to_string();
        on_thread(move || {
            let mut c = sql::connect(&admin, sql::TIMEOUT)?;
            let ended = sql::terminate_sessions(&mut c, &db, sql::TIMEOUT)?;
            let lsn = sql::wal_lsn(&mut c)?;
            Ok(Some(
                json!({"terminated_sessions": ended, "wal_lsn_before": lsn}),
            ))
        })
    }
    /// One `tags` row per host, `ANALYZE` (the loader runs none), then the footprint as the
    /// published comparison counts it: `pg_database_size`, table/index split, the load's WAL.
    /// External servers: over the `--url` connection with its password; no WAL figure (no
    /// position was taken before the load).
    fn after_load(&self, req: &crate::product::AfterLoad) -> Result<Option<Value>> {
        let t = target_of(req.endpoint)?
            .with_db(req.database)
            .with_password(req.token);
        let scale = req.scale;
        let exact_tags = req.exact_tags;
        let before = req
            .before
            .and_then(|b| b["wal_lsn_before"].as_str())
            .map(String::from);
        on_thread(move || {
            let mut c = sql::connect(&t, sql::TIMEOUT)?;
            let tags = sql::row_count(&mut c, "tags")?;
            // iot clears tags at random: a truck may also appear under a tag set with a
            // cleared value, so there are at least as many tag sets as trucks.
            if tags != scale && (exact_tags || tags < scale) {
                return Err(Error::failed(format!(
                    "table tags holds {tags} rows, the dataset has {scale} hosts"
                ))
                .with_hint("the load did not store every host; load again with --database-mode reset --confirm-reset NAME"));
            }
            sql::analyze(&mut c)?;
            let f = sql::footprint(&mut c)?;
            let wal = match &before {
                Some(b) => {
                    let now = sql::wal_lsn(&mut c)?;
                    Some(sql::wal_bytes(&mut c, b, &now)?)
                }
                None => None,
            };
            let sum = |g: fn(&sql::RelationSize) -> u64| {
                f.cpu.iter().chain(f.tags.iter()).map(g).sum::<u64>()
            };
            Ok(Some(json!({
                "tags": if exact_tags {
                    json!({"expected": scale, "actual": tags, "ok": true})
                } else {
                    json!({"expected": scale, "actual": tags, "ok": true, "at_least": true})
                },
                "analyze": true,
                "footprint": {
                    "database_bytes": f.database_bytes,
                    "table_bytes": sum(|r| r.table_bytes),
                    "index_bytes": sum(|r| r.index_bytes),
                    "load_wal_bytes": wal,
                    "sql": f,
                },
            })))
        })
    }
    /// The runner executes any gob file, an influx one as empty SQL: check the labels first.
    fn check_query_file(&self, path: &Path) -> Result<Option<Value>> {
        let c = super::tsbs::check_query_file(path)?;
        Ok(Some(json!({"queries": c.queries, "labels": c.labels})))
    }
    /// `--host=H --port=P --user=U` from the endpoint (the workspace's or the `--url`); the
    /// database is `--db-name`, the target's.
    fn load_connection(&self, urls: &[String]) -> Result<Option<Vec<ToolArg>>> {
        let t = one_target(urls)?;
        Ok(Some(vec![
            ToolArg::Flag("host", t.host),
            ToolArg::Flag("port", t.port.to_string()),
            ToolArg::Flag("user", t.user),
        ]))
    }
    /// `--hosts=H --port=P`, and with more queries than workers `--burn-in=W --max-queries=N`
    /// for W workers: each worker's first query (which pays its connection setup, 3-7 ms)
    /// runs uncounted, so N-W of the file's N queries are measured. The runner skips the
    /// first W queries to finish, whichever worker ran them: one per worker whenever no
    /// worker finishes two before another finishes one (each pays its setup first).
    fn query_connection(
        &self,
        urls: &[String],
        queries: Option<u64>,
        workers: u32,
    ) -> Result<Option<Vec<ToolArg>>> {
        let t = one_target(urls)?;
        let mut a = vec![
            ToolArg::Flag("hosts", t.host),
            ToolArg::Flag("port", t.port.to_string()),
            ToolArg::Flag("user", t.user),
        ];
        let w = u64::from(workers.max(1));
        if let Some(n) = queries.filter(|n| *n > w) {
            let b = super::tsbs::BurnIn::new(w, n)?;
            a.push(ToolArg::Flag("burn-in", b.burn_in.to_string()));
            a.push(ToolArg::Flag("max-queries", b.max_queries.to_string()));
        }
        Ok(Some(a))
    }
    fn statistics_exclusion(&self) -> &'static str {
        "The first query of each query worker (`--burn-in` = the query workers, on the runner's command line in each query log): it pays the worker's connection setup (3-7 ms), which would otherwise land in sub-millisecond latencies. A type whose file has no more queries than workers runs without a burn-in, its setup included."
    }
    /// The password in the environment only (the user comes with the connection flags).
    fn query_target(&self, o: &ToolOptions) -> QueryTarget {
        QueryTarget {
            basic_auth: None,
            args: password_arg(o).into_iter().collect(),
            connection: None,
            per_query_latencies: false,
        }
    }
    /// `postgres://USER@HOST[:PORT][/DB]`: no password, no parameters; `DB` is the benchmark
    /// database (the loader's `--db-name`).
    fn check_external_url(&self, url: &str) -> Result<Option<String>> {
        let db = Target::url_database(url)?;
        if let Some(d) = &db {
            crate::ids::validate_sql_identifier("the --url database", d)?;
        }
        Ok(db)
    }
    /// The probe's SQL connection is the health check.
    fn external_health_path(&self) -> Option<&'static str> {
        None
    }
    /// `url` is `postgres://USER@HOST:PORT/DB`; `token` the password (from the environment).
    /// It connects to the maintenance database `postgres`, as the loader does (the benchmark
    /// database may not exist yet). TimescaleDB mode needs the extension installed and
    /// preloaded, else the loader's `CREATE EXTENSION` fails: refused here (exit 2), before a
    /// run exists, never downgraded.
    fn probe_version(
        &self,
        _client: &reqwest::blocking::Client,
        url: &str,
        token: Option<&Secret>,
        _variant: Option<&str>,
    ) -> Result<(Option<String>, Value)> {
        let t = Target::from_url(url)?
            .with_db(ADMIN_DB)
            .with_password(token.map(Secret::expose));
        let where_ = Target::from_url(url)?.display();
        let p = on_thread(move || sql::probe(&t, sql::TIMEOUT))?;
        let version = p
            .server_version
            .split_whitespace()
            .next()
            .map(str::to_string);
        if self.mode == Mode::Timescaledb {
            self.mode
                .require_available(p.timescaledb_available.as_deref(), &where_)?;
            // Unknown to a user who may not read the setting: the loader's CREATE EXTENSION
            // then says it.
            if p.timescaledb_preloaded == Some(false) {
                return Err(Error::invalid(format!(
                    "the timescaledb extension is installed on {where_} but not preloaded, so hypertables cannot be created"
                ))
                .with_hint("add timescaledb to shared_preload_libraries in that server's postgresql.conf and restart it, or benchmark plain PostgreSQL with --mode postgresql"));
            }
        }
        Ok((version, serde_json::to_value(&p).unwrap_or(Value::Null)))
    }
    fn probe_identity(&self) -> (&'static str, u16) {
        ("it does not answer as PostgreSQL", 5432)
    }
    /// The benchmark settings and the mode, recorded with every run.
    fn server_settings(
        &self,
        ws: Option<&WorkspaceManifest>,
        data_dir: Option<&Path>,
        _runtime_version: Option<&str>,
    ) -> Option<Value> {
        let ws = ws?;
        let dir = data_dir.and_then(Path::parent)?;
        let rendered = std::fs::read_to_string(dir.join(CONFIG_FILE)).ok();
        Some(json!({
            "mode": self.mode.as_str(),
            "settings": self.settings(ws, dir),
            "config_file": pg::CONFIG_NAME,
            "config": rendered,
            "extension_version": read_record(&ws.installation_path)
                .ok()
                .and_then(|i| i.extension_version().map(String::from)),
        }))
    }
    /// What [`Self::classify_file`] puts in each part (reference §5.5).
    fn footprint_parts(&self) -> FootprintParts {
        FootprintParts {
            wal: "WAL segments (`pg_wal/`)",
            data: "Databases (`base/`: all of the cluster's)",
            other: "Other (`global/`, `pg_xact/`, configuration)",
            total_note: Some("The data directory holds the whole cluster: `pg_wal/` keeps the WAL segments the WAL settings keep (`min_wal_size`), whatever the dataset, and `base/` holds the system and template databases beside this one, so its total is not the database's size (`pg_database_size`)"),
        }
    }
    /// A cluster's directory: `pg_wal/` is WAL, `base/` the databases, the rest other. The
    /// published footprint is `pg_database_size`, measured over SQL, not this split.
    fn classify_file(&self, rel: &Path) -> FilePart {
        if rel.starts_with("pg_wal") {
            FilePart::Wal
        } else if rel.starts_with("base") {
            FilePart::Data
        } else {
            FilePart::Other
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A rerun into a new workspace keeps the recorded run's durability; a run made before
    /// the choice existed ran relaxed.
    #[test]
    fn a_rerun_workspace_keeps_the_runs_durability() {
        let p = TimescaleDb {
            mode: Mode::Postgresql,
        };
        let f = |v: Option<Value>| p.rerun_workspace_fields(v.as_ref())["durability"].clone();
        assert_eq!(
            f(Some(json!({"settings": {"durability": "durable"}}))),
            "durable"
        );
        assert_eq!(
            f(Some(json!({"settings": {"durability": "relaxed"}}))),
            "relaxed"
        );
        assert_eq!(f(Some(json!({"settings": {"port": 1}}))), "relaxed");
        assert_eq!(f(None), "relaxed");
    }

    #[test]
    fn run_labels_name_both_versions() {
        let s = json!({"extension_version": "2.17.2"});
        assert_eq!(
            crate::product::run_label("timescaledb", Some("postgresql"), Some("17.2"), Some(&s)),
            Some("PostgreSQL 17.2 (no TimescaleDB)".into())
        );
        assert_eq!(
            crate::product::run_label("timescaledb", Some("timescaledb"), Some("17.2"), Some(&s)),
            Some("TimescaleDB 2.17.2 (PostgreSQL 17.2)".into())
        );
        assert_eq!(
            crate::product::run_label("greptimedb", None, Some("0.9.0"), None),
            None
        );
    }

    /// Each mode's query sets are generated with its flags, and the flags tell the sets apart.
    #[test]
    fn query_formats_carry_the_mode_generator_flags() {
        for mode in [Mode::Timescaledb, Mode::Postgresql] {
            let f = TimescaleDb { mode }.query_format();
            let want = super::super::tsbs::QueryFlags::for_mode(mode).generator_args();
            assert_eq!(want[0], format!("--format={}", f.name));
            assert_eq!(f.generator_flags, &want[1..]);
        }
        let ds = crate::dataset::Dataset {
            id: "ds".into(),
            dir: "/d".into(),
            spec: Profile::Smoke.spec(),
            stored: false,
            created_at: None,
        };
        let counts: BTreeMap<String, u64> = [("lastpoint".to_string(), 3)].into();
        let pg = crate::queryset::query_set_spec(&ds, FORMAT_POSTGRESQL, &counts).unwrap();
        let ts = crate::queryset::query_set_spec(&ds, FORMAT, &counts).unwrap();
        assert_ne!(
            crate::queryset::query_set_id(FORMAT_POSTGRESQL, &pg),
            crate::queryset::query_set_id(FORMAT, &ts)
        );
        let args = crate::queryset::generator_args(&pg, "lastpoint", 3);
        assert_eq!(args.last().unwrap(), "--timescale-use-tags=true");
        assert!(args.contains(&"--timescale-use-time-bucket=false".to_string()));
    }

    #[test]
    fn registry_and_modes() {
        let e = crate::product::entry("timescaledb").unwrap();
        assert_eq!(e.variant_flag, Some("--mode"));
        let p = crate::product::resolve("timescaledb", Some("postgresql")).unwrap();
        assert_eq!(p.edition(), Some("postgresql"));
        assert_eq!(p.installation_edition(), None);
        assert_eq!(p.display_name(), "PostgreSQL (no TimescaleDB)");
        assert_eq!(
            crate::product::resolve("timescaledb", Some("x"))
                .err()
                .unwrap()
                .exit_code(),
            2
        );
        assert_eq!(p.default_write(Profile::Manual), (8, 10_000));
        assert_eq!(p.default_write(Profile::Smoke), (2, 3000));
        assert!(crate::product::query_formats().contains(&"timescaledb"));
    }

    /// The formats `data generate` writes are the ones the products declare, each once, in
    /// registry order; both modes load this one. Their layouts are recorded in every variant's
    /// manifest in these words, so stored datasets keep verifying.
    #[test]
    fn data_formats_are_declared_by_the_products() {
        let f = crate::product::data_formats();
        let names: Vec<&str> = f.iter().map(|f| f.name).collect();
        assert_eq!(names, ["influx", "timescaledb"]);
        for mode in ["timescaledb", "postgresql"] {
            let p = crate::product::resolve("timescaledb", Some(mode)).unwrap();
            assert_eq!(p.data_format(), f[1], "{mode}");
        }
        assert_eq!(
            serde_json::to_value(f[0].layout).unwrap(),
            json!({"header_lines": 0, "lines_per_row": 1, "row_line": "every line"})
        );
        assert_eq!(
            serde_json::to_value(f[1].layout).unwrap(),
            json!({"header_lines": 3, "lines_per_row": 2, "row_line": "<measurement>,<digit>"})
        );
    }

    #[test]
    fn versions() {
        let p = TimescaleDb {
            mode: Mode::Postgresql,
        };
        assert_eq!(p.normalize_version("15.18").unwrap(), "15.18");
        for bad in ["15.", "v15", "15.18.1", "", "latest"] {
            assert_eq!(
                p.normalize_version(bad).unwrap_err().exit_code(),
                2,
                "{bad}"
            );
        }
        let out = "postgres (PostgreSQL) 15.18 (Debian 15.18-0+deb12u1)\n";
        p.check_version_output("15.18", out).unwrap();
        assert!(p.check_version_output("15.17", out).is_err());
    }

    #[test]
    fn log_levels_and_footprint_split() {
        use crate::logscan::Severity;
        let p = TimescaleDb {
            mode: Mode::Postgresql,
        };
        assert_eq!(
            (p.log_rules().classify)("2026-01-01 00:00:00.000 UTC [7] FATAL:  could not bind"),
            Some(Severity::Fatal)
        );
        assert_eq!(
            (p.log_rules().classify)(
                "2026-01-01 00:00:00.000 UTC [7] LOG:  database system is ready"
            ),
            None
        );
        assert_eq!(
            p.classify_file(Path::new("pg_wal/000000010000000000000001")),
            FilePart::Wal
        );
        assert_eq!(p.classify_file(Path::new("base/5/16384")), FilePart::Data);
        assert_eq!(
            p.classify_file(Path::new("global/pg_control")),
            FilePart::Other
        );
    }

    const FIX: &str = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/tests/fixtures/tsbs-real-postgresql/help"
    );

    /// Every `--flag` of `args` is one the real tool's `-help` lists.
    fn in_real_help(tool: &str, args: &[String]) {
        let help = std::fs::read_to_string(format!("{FIX}/{tool}.help.txt")).unwrap();
        for a in args {
            let name = a.split('=').next().unwrap();
            assert!(
                help.contains(&format!("      {name} ")),
                "{name} is not in the real {tool} -help"
            );
        }
    }

    fn load_cmd(mode: Mode, endpoint: &str, o: &ToolOptions) -> crate::tsbs::TsbsCommand {
        let p = TimescaleDb { mode };
        let urls = vec![endpoint.to_string()];
        let mut target = p.load_target(o);
        target.connection = p.load_connection(&urls).unwrap();
        crate::tsbs::load_command(&crate::tsbs::LoadSpec {
            binary: "/t/bin/tsbs_load_timescaledb".into(),
            target,
            urls,
            input: crate::tsbs::LoadInput::Stdin,
            database: "benchmark".into(),
            batch_size: 10000,
            workers: 8,
            results_file: "/r/load-001.json".into(),
            mode: crate::tsbs::DatabaseMode::Create,
            confirm_reset: None,
        })
        .unwrap()
    }

    /// The loader's command lines as the reference's real runs give them (§5.3 b, §8.7), from
    /// a managed endpoint and from an external URL: host, port and user from the endpoint, the
    /// mode's table layout, the hypertable flags only in TimescaleDB mode, and the password
    /// nowhere but in the environment.
    #[test]
    fn loader_command_lines_follow_the_mode_and_the_endpoint() {
        let managed = TimescaleDb {
            mode: Mode::Postgresql,
        }
        .local_endpoint(15432, "benchmark");
        assert_eq!(managed, "postgres://postgres@127.0.0.1:15432/benchmark");
        let c = load_cmd(Mode::Postgresql, &managed, &ToolOptions::default());
        assert_eq!(
            c.redacted_args().join(" "),
            "--host=127.0.0.1 --port=15432 --user=postgres --db-name=benchmark --batch-size=10000 --workers=8 --reporting-period=10s --results-file=/r/load-001.json --use-hypertable=false --use-jsonb-tags=false --in-table-partition-tag=false --do-create-db=true --do-abort-on-exist=true"
        );
        in_real_help("tsbs_load_timescaledb", &c.redacted_args());
        assert_eq!(
            c.redacted(),
            format!(
                "/t/bin/tsbs_load_timescaledb {}",
                c.redacted_args().join(" ")
            )
        );

        let o = ToolOptions {
            auth_token: Some(Secret::new("s3cret-pw")),
            values: json!({"chunk_time": "6h", "partitions": 2})
                .as_object()
                .cloned()
                .unwrap(),
            ..ToolOptions::default()
        };
        let ext = "postgres://bench@db.example:6543/tsbs";
        let c = load_cmd(Mode::Timescaledb, ext, &o);
        let a = c.redacted_args();
        assert_eq!(a[..3], ["--host=db.example", "--port=6543", "--user=bench"]);
        for f in ["--use-hypertable=true", "--chunk-time=6h", "--partitions=2"] {
            assert!(a.contains(&f.to_string()), "{f} not in {a:?}");
        }
        in_real_help("tsbs_load_timescaledb", &a);
        assert_eq!(c.secret_env_keys(), ["PGPASSWORD"]);
        assert!(
            c.secret_keys().is_empty(),
            "no config.json: {:?}",
            c.secret_keys()
        );
        for shown in [c.redacted(), c.log_line(), format!("{c:?}")] {
            assert!(!shown.contains("s3cret"), "{shown}");
            assert!(shown.ends_with(" # env: PGPASSWORD=<redacted>"), "{shown}");
        }
        // The real child: the password in its environment, not in argv, no config file.
        let parent = tempfile::tempdir().unwrap();
        let (cmd, dir) = c.command(parent.path()).unwrap();
        assert!(!cmd
            .get_args()
            .any(|x| x.to_string_lossy().contains("s3cret")));
        let env: Vec<_> = cmd
            .get_envs()
            .map(|(k, v)| (k.to_owned(), v.map(|v| v.to_owned())))
            .collect();
        assert_eq!(
            env,
            [("PGPASSWORD".into(), Some("s3cret-pw".into()))],
            "{env:?}"
        );
        assert!(crate::tsbs::command::viper_config_files(&dir.path).is_empty());

        // PostgreSQL mode never passes hypertable flags (they are refused before a run).
        let c = load_cmd(Mode::Postgresql, ext, &o);
        let a = c.redacted_args();
        assert!(
            !a.iter()
                .any(|x| x.starts_with("--chunk-time") || x.starts_with("--partitions")),
            "{a:?}"
        );
        // No password: nothing in the environment either.
        let c = load_cmd(Mode::Timescaledb, ext, &ToolOptions::default());
        assert!(c.secret_env_keys().is_empty());
        let c = load_cmd(
            Mode::Timescaledb,
            ext,
            &ToolOptions {
                auth_token: Some(Secret::new("")),
                ..ToolOptions::default()
            },
        );
        assert!(c.secret_env_keys().is_empty(), "an empty password is none");
    }

    #[test]
    fn runner_command_lines_follow_the_endpoint() {
        let p = TimescaleDb {
            mode: Mode::Postgresql,
        };
        let o = ToolOptions {
            auth_token: Some(Secret::new("s3cret-pw")),
            ..ToolOptions::default()
        };
        for (endpoint, conn) in [
            (
                p.local_endpoint(15432, "benchmark"),
                ["--hosts=127.0.0.1", "--port=15432", "--user=postgres"],
            ),
            (
                "postgres://bench@db.example/tsbs".to_string(),
                ["--hosts=db.example", "--port=5432", "--user=bench"],
            ),
        ] {
            let urls = vec![endpoint];
            let mut target = p.query_target(&o);
            target.connection = p.query_connection(&urls, Some(10), 1).unwrap();
            let c = crate::tsbs::query_command(&crate::tsbs::QuerySpec {
                binary: "/t/bin/tsbs_run_queries_timescaledb".into(),
                target,
                file: "/q/lastpoint.dat".into(),
                database: "benchmark".into(),
                urls,
                workers: 1,
                results_file: "/r/q.json".into(),
            })
            .unwrap();
            let a = c.redacted_args();
            assert_eq!(a[2..5], conn, "{a:?}");
            assert_eq!(a[5..7], ["--burn-in=1", "--max-queries=10"], "{a:?}");
            in_real_help("tsbs_run_queries_timescaledb", &a);
            assert_eq!(c.secret_env_keys(), ["PGPASSWORD"]);
            assert!(!c.redacted().contains("s3cret"));
        }
        // One burn-in query per worker (audit 6); none when the file has no more queries.
        let flags = |queries, workers| {
            p.query_connection(
                &["postgres://postgres@127.0.0.1:1/b".into()],
                Some(queries),
                workers,
            )
            .unwrap()
            .unwrap()
            .iter()
            .filter_map(|a| match a {
                ToolArg::Flag(k, v) if k.contains('-') => Some(format!("--{k}={v}")),
                _ => None,
            })
            .collect::<Vec<_>>()
        };
        assert_eq!(flags(10, 4), ["--burn-in=4", "--max-queries=10"]);
        assert_eq!(flags(4, 4), Vec::<String>::new());
        assert_eq!(flags(2, 1), ["--burn-in=1", "--max-queries=2"]);
    }

    /// External URLs: what `--url` may be (exit 2 otherwise, the URL never quoted), and the
    /// database it names.
    #[test]
    fn external_urls() {
        let p = TimescaleDb {
            mode: Mode::Postgresql,
        };
        assert_eq!(
            p.check_external_url("postgres://bench@10.0.0.5:5432/tsbs")
                .unwrap(),
            Some("tsbs".into())
        );
        assert_eq!(p.check_external_url("postgresql://10.0.0.5").unwrap(), None);
        for bad in [
            "http://10.0.0.5:5432",
            "postgres://bench:pw@10.0.0.5/tsbs",
            "postgres://bench@10.0.0.5/bad%20name",
        ] {
            let e = p.check_external_url(bad).unwrap_err();
            assert_eq!(e.exit_code(), 2, "{bad}");
            assert!(!e.message.contains(":pw@"), "{}", e.message);
        }
        assert_eq!(p.external_health_path(), None);
        // The generic HTTP check stays the others' default.
        let g = crate::product::greptimedb::GreptimeDb;
        assert_eq!(g.check_external_url("http://10.0.0.5:4000").unwrap(), None);
        assert_eq!(g.external_health_path(), Some("/health"));
        assert_eq!(g.local_endpoint(4000, "public"), "http://127.0.0.1:4000");
        assert_eq!(
            g.check_external_url("postgres://h/db")
                .unwrap_err()
                .exit_code(),
            2
        );
        // Endpoints read back: both forms give the port and host.
        assert_eq!(
            endpoint_port("postgres://postgres@127.0.0.1:15433/benchmark").unwrap(),
            15433
        );
        assert_eq!(endpoint_port("postgres://u@h/db").unwrap(), 5432);
        assert_eq!(endpoint_port("http://127.0.0.1:15433").unwrap(), 15433);
        let t = target_of("http://10.1.2.3:7").unwrap();
        assert_eq!(t.display(), "postgres://postgres@10.1.2.3:7/postgres");
        // Hypertable flags apply to TimescaleDB mode only (a workspace's mode is known only
        // from its manifest, so the target asks the variant that runs).
        let hyper = json!({"chunk_time": "6h"}).as_object().cloned().unwrap();
        TimescaleDb {
            mode: Mode::Timescaledb,
        }
        .check_bench_values(&hyper)
        .unwrap();
        let e = p.check_bench_values(&hyper).unwrap_err();
        assert_eq!(e.exit_code(), 2);
        assert!(
            e.message.contains("PostgreSQL (no TimescaleDB) has none"),
            "{}",
            e.message
        );
        p.check_bench_values(&Default::default()).unwrap();
        assert_eq!(p.token_env_defaults(), Some((None, None)));
    }

    #[test]
    fn the_hypertable_mode_preloads_the_extension_in_its_config() {
        let ws: WorkspaceManifest = serde_json::from_value(json!({
            "database_id": "h1", "product": "timescaledb", "edition": "timescaledb",
            "version": "15.18", "version_source": "pg-config", "platform": "linux-amd64",
            "installation_path": "/nonexistent", "binary_sha256": "x", "database": "benchmark",
            "ports": {"postgres": 15440}, "config_sha256": null, "binding": null,
            "created_at": "t", "updated_at": "t", "tool_version": "0"
        }))
        .unwrap();
        let dir = Path::new("/srv/ws/h1");
        let hyper = TimescaleDb {
            mode: Mode::Timescaledb,
        }
        .render_config(&ws, dir)
        .unwrap()
        .unwrap();
        assert!(
            hyper.contains("shared_preload_libraries = 'timescaledb'"),
            "{hyper}"
        );
        assert!(
            hyper.contains("timescaledb.telemetry_level = off"),
            "{hyper}"
        );
        assert!(hyper.contains("port = 15440"), "{hyper}");
        assert!(
            hyper.contains("unix_socket_directories = '/srv/ws/h1/sock'"),
            "{hyper}"
        );
        let plain = TimescaleDb {
            mode: Mode::Postgresql,
        }
        .render_config(&ws, dir)
        .unwrap()
        .unwrap();
        assert!(!plain.contains("shared_preload_libraries"), "{plain}");
        assert!(plain.contains("(no TimescaleDB)"), "{plain}");
        // Stopped with SIGINT, PostgreSQL's fast shutdown.
        assert_eq!(
            TimescaleDb {
                mode: Mode::Postgresql
            }
            .default_timing()
            .stop_signal,
            nix::sys::signal::Signal::SIGINT
        );
    }
}
