//! The `Product` implementation of TimescaleDB / PostgreSQL (its larger parts in `product/`,
//! one file a part). Installations are pinned, not downloaded ([`crate::install::pin_local`]):
//! the installation directory holds [`INSTALL_RECORD`], the [`PgInstallation`] with every
//! binary's checksum, and the manifest's binary is the absolute path of `postgres`. The
//! variant is the [`Mode`], bound to the workspace (its `edition` field); installations are
//! shared by both modes.

mod distribution;
mod driver;
mod external;
mod loading;
mod managed_server;
mod reporting;
mod workspace_setup;

use std::path::Path;

use super::install::PgInstallation;
use super::server::{Layout, Settings};
use super::sql::Target;
use super::Mode;
use crate::dataset::{DataFormat, RowLayout, RowLine};
use crate::error::{Error, Result};
use crate::product::{
    FilePart, FootprintParts, Product, StorageFootprint, ToolOptions, WorkspaceSetup,
};
use crate::queryset::QueryFormat;
use crate::tsbs::ToolArg;
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
    sources: &[],
};

pub(super) static BENCH_EXT: crate::product::ext::BenchExt = crate::product::ext::BenchExt {
    flags: super::flags::FLAGS,
    record: crate::product::ext::Record::Flat,
    resolve: super::flags::resolve,
    core: super::flags::core,
    ..crate::product::ext::BenchExt::NONE
};

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
/// ([`ManagedServer::local_endpoint`]) or an external `--url postgres://USER@HOST:PORT/DB`; the
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
    fn variant(&self) -> Option<&str> {
        Some(self.mode.as_str())
    }
    /// Both modes use the same pinned PostgreSQL.
    fn installation_variant(&self) -> Option<&str> {
        None
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
    /// Its own flags (`timescaledb/flags.rs`, recorded flat as they always were): the mode
    /// of an external target, the password's variable and the hypertable's settings.
    fn bench_ext(&self) -> Option<&'static crate::product::ext::BenchExt> {
        Some(&BENCH_EXT)
    }
}

impl StorageFootprint for TimescaleDb {
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
    use std::collections::BTreeMap;

    use serde_json::{json, Value};

    use crate::dataset::Profile;
    use crate::product::{Distribution, Driver, ExternalServer, ManagedServer};
    use crate::tsbs::Secret;

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
        assert_eq!(p.variant(), Some("postgresql"));
        assert_eq!(p.installation_variant(), None);
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
