//! What tsbsctl asks a running PostgreSQL, over the PostgreSQL protocol (the `postgres`
//! crate, sync): the version and extension probe (also for an external `--url
//! postgres://user@host:port/db`, with the password the bench seam read from the variable
//! `--password-env` names), row counts, `ANALYZE`, the other sessions on the benchmark database (the loader's
//! `DROP DATABASE` fails while one is connected, reference §0.3), and the footprint as the
//! published comparison counts it (reference §5.5, §8.10): `pg_database_size`, the table and
//! index split, and the WAL a load generated (insert positions before and after). Every call is bounded: a connect timeout, and a
//! `statement_timeout` set at connection start.
//!
//! The `postgres` crate runs its own small runtime: call these from a plain thread (or
//! `spawn_blocking`), not from inside an async task.

use std::time::Duration;

use serde::{Deserialize, Serialize};

use crate::error::{Error, Missing, Result};
use postgres::error::SqlState;

pub use postgres::Client;

/// The default bound of a connection attempt and of every statement.
pub const TIMEOUT: Duration = Duration::from_secs(30);

/// Where to connect. The password is never serialised nor printed.
#[derive(Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Target {
    pub host: String,
    pub port: u16,
    pub user: String,
    pub dbname: String,
    #[serde(skip)]
    password: Option<String>,
}

impl std::fmt::Debug for Target {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}", self.display())
    }
}

impl Target {
    /// A managed server: 127.0.0.1, superuser `postgres`, trust auth (no password).
    pub fn local(port: u16, dbname: &str) -> Target {
        Target {
            host: "127.0.0.1".into(),
            port,
            user: super::server::SUPERUSER.into(),
            dbname: dbname.into(),
            password: None,
        }
    }

    /// A server named by `postgres://user@host[:port][/db]` (port 5432, user `postgres` and
    /// database `postgres` by default). A password in the URL is refused (it would sit in argv,
    /// the shell history and the run manifest): it comes from the environment
    /// ([`Target::with_password`]). So are query parameters (`?sslmode=...`), which tsbsctl
    /// and the TSBS tools would not honour alike. The errors never quote the URL (it may hold
    /// a password).
    pub fn from_url(url: &str) -> Result<Target> {
        let bad = |why: &str| {
            Error::invalid(format!("invalid --url: {why}"))
                .with_hint("expected postgres://USER@HOST:PORT/DATABASE, with the password in the variable named by --password-env")
        };
        let u = url::Url::parse(url).map_err(|e| bad(&e.to_string()))?;
        if u.scheme() != "postgres" && u.scheme() != "postgresql" {
            return Err(bad(&format!(
                "the scheme is {:?}, not postgres or postgresql",
                u.scheme()
            )));
        }
        if u.password().is_some() {
            return Err(Error::invalid(
                "--url must not hold a password (it would be readable in the process list, the shell history and the run manifest)",
            )
            .with_hint("put it in an environment variable and name it with --password-env VAR"));
        }
        if u.query().is_some() || u.fragment().is_some() {
            return Err(bad(
                "connection parameters (?...) are not supported: tsbsctl and the TSBS tools connect without TLS, with the URL's host, port, user and database only",
            ));
        }
        if u.path().trim_start_matches('/').contains('/') {
            return Err(bad("the path must be one database name"));
        }
        let host = u
            .host_str()
            .filter(|h| !h.is_empty())
            .ok_or_else(|| bad("no host"))?;
        let host = host
            .trim_start_matches('[')
            .trim_end_matches(']')
            .to_string();
        let user = if u.username().is_empty() {
            super::server::SUPERUSER.to_string()
        } else {
            percent_decode(u.username())
        };
        let dbname = u.path().trim_start_matches('/');
        let dbname = if dbname.is_empty() {
            "postgres".to_string()
        } else {
            percent_decode(dbname)
        };
        Ok(Target {
            host,
            port: u.port().unwrap_or(5432),
            user,
            dbname,
            password: None,
        })
    }

    /// The database a URL names (`None`: no path).
    pub fn url_database(url: &str) -> Result<Option<String>> {
        let t = Target::from_url(url)?;
        let named = url::Url::parse(url)
            .map(|u| !u.path().trim_start_matches('/').is_empty())
            .unwrap_or(false);
        Ok(named.then_some(t.dbname))
    }

    /// The same target, with the password (from the environment) or none.
    pub fn with_password(self, password: Option<&str>) -> Target {
        Target {
            password: password.filter(|p| !p.is_empty()).map(str::to_string),
            ..self
        }
    }

    /// The same server, another database.
    pub fn with_db(&self, dbname: &str) -> Target {
        Target {
            dbname: dbname.into(),
            ..self.clone()
        }
    }

    /// `postgres://user@host:port/db` (never the password).
    pub fn display(&self) -> String {
        let host = if self.host.contains(':') {
            format!("[{}]", self.host)
        } else {
            self.host.clone()
        };
        format!(
            "postgres://{}@{host}:{}/{}",
            self.user, self.port, self.dbname
        )
    }

    fn config(&self, timeout: Duration) -> postgres::Config {
        let mut c = postgres::Config::new();
        c.host(&self.host)
            .port(self.port)
            .user(&self.user)
            .dbname(&self.dbname)
            .application_name("tsbsctl")
            .connect_timeout(timeout)
            .options(&format!("-c statement_timeout={}", timeout.as_millis()));
        if let Some(p) = &self.password {
            c.password(p);
        }
        c
    }
}

fn percent_decode(s: &str) -> String {
    let b = s.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        if b[i] == b'%' && i + 2 < b.len() {
            if let Ok(v) = u8::from_str_radix(&s[i + 1..i + 3], 16) {
                out.push(v);
                i += 3;
                continue;
            }
        }
        out.push(b[i]);
        i += 1;
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// The server's own words for an error (`FATAL: role "x" does not exist (SQLSTATE 28000)`),
/// else the client's.
pub fn describe(e: &postgres::Error) -> String {
    match e.as_db_error() {
        Some(db) => format!(
            "{}: {} (SQLSTATE {})",
            db.severity(),
            db.message(),
            db.code().code()
        ),
        None => {
            let mut s = e.to_string();
            let mut src = std::error::Error::source(e);
            while let Some(inner) = src {
                let t = inner.to_string();
                if !s.contains(&t) {
                    s.push_str(": ");
                    s.push_str(&t);
                }
                src = inner.source();
            }
            s
        }
    }
}

/// Connects, bounded by `timeout` (also every statement's `statement_timeout`). A refused
/// login (wrong password, none given where the server asks for one, unknown role: SQLSTATE
/// class 28) is the caller's input, exit 2; anything else (server down) exit 1.
pub fn connect(t: &Target, timeout: Duration) -> Result<Client> {
    t.config(timeout).connect(postgres::NoTls).map_err(|e| {
        let msg = format!("could not connect to {}: {}", t.display(), describe(&e));
        let login = e
            .as_db_error()
            .is_some_and(|d| d.code().code().starts_with("28"));
        // The client's own refusal to connect without the password the server asked for.
        let no_password = e.as_db_error().is_none() && describe(&e).contains("password missing");
        if login || no_password {
            let db = e.as_db_error();
            let code = db.map(|d| d.code().code()).unwrap_or("");
            let text = db.map(|d| d.message()).unwrap_or("");
            // Each refusal its own remedy (trial 2 N17: an unknown role was hinted as a
            // missing password).
            let hint = if code == "28000" && text.contains("role") && text.contains("does not exist") {
                "the user (role) in --url does not exist on that server: check the name in postgres://USER@HOST:PORT/DB, or create the role"
            } else if code == "28000" {
                "the server's pg_hba.conf does not let this user connect from here (this host, database or method): ask its administrator, or check --url"
            } else if t.password.is_some() {
                "check the user in --url and the password in the variable --password-env names"
            } else {
                "the server wants a password: put it in an environment variable and name it with --password-env VAR"
            };
            Error::invalid(msg).with_hint(hint)
        } else if refused(&e) {
            Error::failed(msg).with_hint(format!(
                "nothing listens at {}: is the server running, and are the host and port in --url right?",
                t.display()
            ))
        } else if e.code() == Some(&SqlState::INVALID_CATALOG_NAME) {
            // `database "x" does not exist`: the server's own answer that it is not there.
            Error::failed(msg).not_found(Missing::Database(t.dbname.clone()))
        } else {
            Error::failed(msg)
        }
    })
}

/// Whether the connection was refused (nothing listens there): the client's I/O error kind,
/// found down the error's sources.
fn refused(e: &postgres::Error) -> bool {
    let mut src: Option<&(dyn std::error::Error + 'static)> = Some(e);
    while let Some(inner) = src {
        if inner
            .downcast_ref::<std::io::Error>()
            .is_some_and(|io| io.kind() == std::io::ErrorKind::ConnectionRefused)
        {
            return true;
        }
        src = inner.source();
    }
    false
}

fn q(what: &str, e: postgres::Error) -> Error {
    Error::failed(format!("{what}: {}", describe(&e)))
}

/// A quoted identifier (`"bench""mark"`).
pub fn quote_ident(name: &str) -> String {
    format!("\"{}\"", name.replace('"', "\"\""))
}

/// Settings recorded as read from the server whether or not the workspace sets them: what
/// decides durability, memory and parallelism.
pub const REPORTED_SETTINGS: [&str; 16] = [
    "synchronous_commit",
    "fsync",
    "full_page_writes",
    "wal_level",
    "wal_compression",
    "shared_buffers",
    "work_mem",
    "effective_cache_size",
    "maintenance_work_mem",
    "max_connections",
    "max_worker_processes",
    "max_parallel_workers",
    "max_parallel_workers_per_gather",
    "jit",
    "shared_preload_libraries",
    "listen_addresses",
];

/// What a server is, before tsbsctl uses it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ServerProbe {
    /// `SHOW server_version`: `15.18 (Debian 15.18-0+deb12u1)`.
    pub server_version: String,
    /// `server_version_num`: 150018.
    pub server_version_num: u32,
    /// `default_version` of `timescaledb` in `pg_available_extensions`: `None` when the
    /// extension is not installed on the server's machine.
    pub timescaledb_available: Option<String>,
    /// Whether `timescaledb` is in `shared_preload_libraries` (hypertables need it); `None`
    /// when the user may not read that setting (only superusers and `pg_read_all_settings`
    /// may: PostgreSQL hides it from `pg_settings` for others).
    pub timescaledb_preloaded: Option<bool>,
    /// [`REPORTED_SETTINGS`] as this user reads them in force (durability, memory,
    /// parallelism): what an external server ran with.
    #[serde(default, skip_serializing_if = "std::collections::BTreeMap::is_empty")]
    pub settings: std::collections::BTreeMap<String, InForce>,
}

pub fn probe(t: &Target, timeout: Duration) -> Result<ServerProbe> {
    let mut c = connect(t, timeout)?;
    probe_client(&mut c)
}

pub fn probe_client(c: &mut Client) -> Result<ServerProbe> {
    let row = c
        .query_one(
            "SELECT current_setting('server_version'), current_setting('server_version_num')::int",
            &[],
        )
        .map_err(|e| q("could not read the server version", e))?;
    let preload: Option<String> = c
        .query_opt(
            "SELECT setting FROM pg_settings WHERE name = 'shared_preload_libraries'",
            &[],
        )
        .map_err(|e| q("could not read shared_preload_libraries", e))?
        .map(|r| r.get(0));
    let ext = c
        .query_opt(
            "SELECT default_version FROM pg_available_extensions WHERE name = 'timescaledb'",
            &[],
        )
        .map_err(|e| q("could not list the available extensions", e))?;
    let names: Vec<String> = REPORTED_SETTINGS.iter().map(|s| s.to_string()).collect();
    let settings = settings_in_force(c, &names)?;
    Ok(ServerProbe {
        settings,
        server_version: row.get(0),
        server_version_num: row.get::<_, i32>(1) as u32,
        timescaledb_available: ext.and_then(|r| r.get::<_, Option<String>>(0)),
        timescaledb_preloaded: preload.map(|p| {
            p.split(',')
                .any(|l| l.trim().trim_matches('"') == "timescaledb")
        }),
    })
}

/// One setting as the server has it in force.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct InForce {
    /// `current_setting(name)`: with its unit, as `SHOW` prints it (`64MB`, `on`).
    pub value: String,
    /// `pg_settings.source`: `command line`, `configuration file`, `default`, `database`, ...
    pub source: String,
}

/// The settings among `names` that this session sees in force (`pg_settings`: it reflects
/// the command line, the config files, `ALTER SYSTEM` and the session's database and role).
/// Settings the user may not read are absent. Names are case-insensitive (`TimeZone`): the
/// map's keys are lower case. An extension's settings (`timescaledb.telemetry_level`) stay
/// placeholders in a database without the extension, which `pg_settings` does not list: their
/// value is read with `current_setting`, their source as [`PLACEHOLDER`].
pub fn settings_in_force(
    c: &mut Client,
    names: &[String],
) -> Result<std::collections::BTreeMap<String, InForce>> {
    let lower: Vec<String> = names.iter().map(|n| n.to_lowercase()).collect();
    let rows = c
        .query(
            "SELECT lower(name), current_setting(name), source FROM pg_settings \
             WHERE lower(name) = ANY($1)",
            &[&lower],
        )
        .map_err(|e| q("could not read pg_settings", e))?;
    let mut found: std::collections::BTreeMap<String, InForce> = rows
        .iter()
        .map(|r| {
            (
                r.get::<_, String>(0),
                InForce {
                    value: r.get(1),
                    source: r.get(2),
                },
            )
        })
        .collect();
    for n in names.iter().filter(|n| n.contains('.')) {
        let key = n.to_lowercase();
        if found.contains_key(&key) {
            continue;
        }
        if let Some(value) = placeholder_value(c, n)? {
            let source = PLACEHOLDER.to_string();
            found.insert(key, InForce { value, source });
        }
    }
    Ok(found)
}

/// The source [`settings_in_force`] gives a placeholder (PostgreSQL does not keep it).
pub const PLACEHOLDER: &str = "placeholder (the extension defines it where it is loaded)";

/// The value of a setting `pg_settings` does not list: an extension's (`timescaledb.*`) is
/// only a placeholder until a session loads the extension, and placeholders are not listed,
/// though `current_setting` answers. `None` when the server knows no such setting.
fn placeholder_value(c: &mut Client, name: &str) -> Result<Option<String>> {
    let row = c
        .query_one("SELECT current_setting($1, true)", &[&name])
        .map_err(|e| q(&format!("could not read the setting {name}"), e))?;
    Ok(row.get::<_, Option<String>>(0))
}

/// `ALTER DATABASE ... SET` and `ALTER ROLE ... SET` entries that set one of `names` for the
/// sessions of database `db` as `role`: each as
/// `name=value (database D, role R)`. They win over the command line in the sessions they
/// apply to, so a session of another database would not see them in `pg_settings`.
pub fn db_role_overrides(
    c: &mut Client,
    names: &[String],
    db: &str,
    role: &str,
) -> Result<Vec<String>> {
    let rows = c
        .query(
            "SELECT coalesce(d.datname, ''), coalesce(r.rolname, ''), cfg \
             FROM pg_db_role_setting s \
             LEFT JOIN pg_database d ON d.oid = s.setdatabase \
             LEFT JOIN pg_roles r ON r.oid = s.setrole, unnest(s.setconfig) AS cfg",
            &[],
        )
        .map_err(|e| q("could not read pg_db_role_setting", e))?;
    let mut out = Vec::new();
    for r in rows {
        let (d, r, cfg): (String, String, String) = (r.get(0), r.get(1), r.get(2));
        let name = cfg.split('=').next().unwrap_or_default().to_lowercase();
        // Only entries that apply to the benchmark's sessions (empty: every database/role).
        let applies = (d.is_empty() || d == db) && (r.is_empty() || r == role);
        if !applies || !names.iter().any(|n| n.to_lowercase() == name) {
            continue;
        }
        let (db, role) = (d, r);
        let scope = match (db.is_empty(), role.is_empty()) {
            (false, false) => {
                format!("database {db}, role {role}: ALTER ROLE ... IN DATABASE ... SET")
            }
            (false, true) => format!("database {db}: ALTER DATABASE ... SET"),
            _ => format!("role {role}: ALTER ROLE ... SET"),
        };
        out.push(format!("{cfg} ({scope})"));
    }
    Ok(out)
}

/// `SELECT count(*) FROM <table>`.
pub fn row_count(c: &mut Client, table: &str) -> Result<u64> {
    let row = c
        .query_one(&format!("SELECT count(*) FROM {}", quote_ident(table)), &[])
        .map_err(|e| {
            let undefined = e.code() == Some(&SqlState::UNDEFINED_TABLE);
            let e = q(&format!("could not count the rows of {table}"), e);
            if undefined {
                e.not_found(Missing::Table(table.into()))
            } else {
                e
            }
        })?;
    Ok(row.get::<_, i64>(0) as u64)
}

/// `ANALYZE`, so the planner has statistics before the queries (the loader runs none, and
/// autovacuum's timing is not guaranteed: reference §7.3).
pub fn analyze(c: &mut Client) -> Result<()> {
    c.batch_execute("ANALYZE")
        .map_err(|e| q("ANALYZE failed", e))
}

/// Whether database `db` exists (what the loader asks first).
pub fn database_exists(c: &mut Client, db: &str) -> Result<bool> {
    let row = c
        .query_opt("SELECT 1 FROM pg_database WHERE datname = $1", &[&db])
        .map_err(|e| q("could not list the databases", e))?;
    Ok(row.is_some())
}

/// One other session on a database.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Session {
    pub pid: i32,
    pub user: Option<String>,
    pub application_name: Option<String>,
}

/// The sessions connected to `db`, other than this one.
pub fn sessions_on(c: &mut Client, db: &str) -> Result<Vec<Session>> {
    let rows = c
        .query(
            "SELECT pid, usename::text, application_name FROM pg_stat_activity \
             WHERE datname = $1 AND pid <> pg_backend_pid() ORDER BY pid",
            &[&db],
        )
        .map_err(|e| q("could not list the sessions", e))?;
    Ok(rows
        .iter()
        .map(|r| Session {
            pid: r.get(0),
            user: r.get(1),
            application_name: r.get(2),
        })
        .collect())
}

/// Ends every other session on `db` (`pg_terminate_backend`), so the loader's `DROP DATABASE`
/// cannot fail with SQLSTATE 55006; waits (within `timeout`) until they are gone. Returns the
/// sessions it ended. `c` must be connected to another database (the admin one).
pub fn terminate_sessions(c: &mut Client, db: &str, timeout: Duration) -> Result<Vec<Session>> {
    let found = sessions_on(c, db)?;
    for s in &found {
        c.query_one("SELECT pg_terminate_backend($1)", &[&s.pid])
            .map_err(|e| q(&format!("could not end session {}", s.pid), e))?;
    }
    let deadline = std::time::Instant::now() + timeout;
    while !sessions_on(c, db)?.is_empty() {
        if std::time::Instant::now() > deadline {
            return Err(Error::failed(format!(
                "sessions on database {db} did not end within {timeout:?}"
            )));
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    Ok(found)
}

/// `DROP DATABASE IF EXISTS` that no other session can block: `WITH (FORCE)` from
/// PostgreSQL 13, else the sessions ended first.
pub fn drop_database(c: &mut Client, db: &str, server_version_num: u32) -> Result<()> {
    let sql = if server_version_num >= 130000 {
        format!("DROP DATABASE IF EXISTS {} WITH (FORCE)", quote_ident(db))
    } else {
        terminate_sessions(c, db, TIMEOUT)?;
        format!("DROP DATABASE IF EXISTS {}", quote_ident(db))
    };
    c.batch_execute(&sql)
        .map_err(|e| q(&format!("could not drop database {db}"), e))
}

/// A relation's bytes: heap (`pg_relation_size`, main fork), indexes (`pg_indexes_size`),
/// and everything (`pg_total_relation_size`: with TOAST, FSM and VM).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct RelationSize {
    pub table_bytes: u64,
    pub index_bytes: u64,
    pub total_bytes: u64,
}

/// The footprint of one benchmark database, as the published comparison counts it. The data
/// directory's total is not it: `pg_wal` and the template databases dominate that (§5.5).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Footprint {
    pub database_bytes: u64,
    /// `None` when the table does not exist.
    pub cpu: Option<RelationSize>,
    pub tags: Option<RelationSize>,
    /// How the table sizes were measured: `relation` (plain tables) or `hypertable`
    /// (`hypertable_detailed_size`, which sums the chunks; the parent table is empty).
    pub method: String,
}

/// The footprint of the database `c` is connected to.
pub fn footprint(c: &mut Client) -> Result<Footprint> {
    let db: u64 = c
        .query_one("SELECT pg_database_size(current_database())", &[])
        .map_err(|e| q("could not read the database size", e))?
        .get::<_, i64>(0) as u64;
    let hyper = c
        .query_opt(
            "SELECT 1 FROM pg_extension WHERE extname = 'timescaledb'",
            &[],
        )
        .map_err(|e| q("could not list the extensions", e))?
        .is_some()
        && c.query_opt(
            "SELECT 1 FROM timescaledb_information.hypertables WHERE hypertable_name = 'cpu'",
            &[],
        )
        .map_err(|e| q("could not list the hypertables", e))?
        .is_some();
    let plain = |c: &mut Client, table: &str| -> Result<Option<RelationSize>> {
        let row = c
            .query_one(
                "SELECT pg_relation_size(oid), pg_indexes_size(oid), pg_total_relation_size(oid) \
                 FROM (SELECT to_regclass($1)::oid AS oid) r WHERE oid IS NOT NULL \
                 UNION ALL SELECT -1, -1, -1 LIMIT 1",
                &[&table],
            )
            .map_err(|e| q(&format!("could not size table {table}"), e))?;
        let t: i64 = row.get(0);
        Ok((t >= 0).then(|| RelationSize {
            table_bytes: t as u64,
            index_bytes: row.get::<_, i64>(1) as u64,
            total_bytes: row.get::<_, i64>(2) as u64,
        }))
    };
    let cpu = if hyper {
        let row = c
            .query_one(
                "SELECT table_bytes, index_bytes, total_bytes FROM hypertable_detailed_size('cpu')",
                &[],
            )
            .map_err(|e| q("could not size hypertable cpu", e))?;
        let get = |i: usize| row.get::<_, Option<i64>>(i).unwrap_or(0).max(0) as u64;
        Some(RelationSize {
            table_bytes: get(0),
            index_bytes: get(1),
            total_bytes: get(2),
        })
    } else {
        plain(c, "cpu")?
    };
    Ok(Footprint {
        database_bytes: db,
        cpu,
        tags: plain(c, "tags")?,
        method: if hyper { "hypertable" } else { "relation" }.into(),
    })
}

/// The WAL insert position (`pg_current_wal_insert_lsn()`), as text (`0/1A2B3C4`). Not
/// `pg_current_wal_lsn()`, the write position: with `synchronous_commit = off` it lags until
/// the WAL writer runs, so a difference taken right after a load would miss its tail.
pub fn wal_lsn(c: &mut Client) -> Result<String> {
    let row = c
        .query_one("SELECT pg_current_wal_insert_lsn()::text", &[])
        .map_err(|e| q("could not read the WAL position", e))?;
    Ok(row.get(0))
}

/// The WAL bytes between two positions (`pg_wal_lsn_diff(after, before)`): what a load wrote.
pub fn wal_bytes(c: &mut Client, before: &str, after: &str) -> Result<u64> {
    let row = c
        .query_one(
            "SELECT pg_wal_lsn_diff($1::text::pg_lsn, $2::text::pg_lsn)::bigint",
            &[&after, &before],
        )
        .map_err(|e| q("could not compute the WAL size", e))?;
    Ok(row.get::<_, i64>(0).max(0) as u64)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn urls() {
        let t = Target::from_url("postgres://bench@db.example:6543/tsbs").unwrap();
        assert_eq!(
            (t.host.as_str(), t.port, t.user.as_str(), t.dbname.as_str()),
            ("db.example", 6543, "bench", "tsbs")
        );
        assert_eq!(t.display(), "postgres://bench@db.example:6543/tsbs");
        assert_eq!(
            Target::url_database("postgres://bench@db.example:6543/tsbs").unwrap(),
            Some("tsbs".into())
        );
        let t = Target::from_url("postgresql://127.0.0.1").unwrap();
        assert_eq!(
            (t.port, t.user.as_str(), t.dbname.as_str()),
            (5432, "postgres", "postgres")
        );
        assert_eq!(
            Target::url_database("postgresql://127.0.0.1/").unwrap(),
            None
        );
        let t = Target::from_url("postgres://u@[::1]:7/d").unwrap();
        assert_eq!(
            (t.host.as_str(), t.display().as_str()),
            ("::1", "postgres://u@[::1]:7/d")
        );
        for (bad, why) in [
            ("postgres://u:secret@h/db", "must not hold a password"),
            ("mysql://h/db", "not postgres"),
            ("postgres://u@h/db?sslmode=require", "connection parameters"),
            ("postgres://u@h/a/b", "one database name"),
            ("postgres:///db", "no host"),
            ("not a url", "invalid --url"),
        ] {
            let e = Target::from_url(bad).unwrap_err();
            assert_eq!(e.exit_code(), 2, "{bad}");
            assert!(e.message.contains(why), "{bad}: {}", e.message);
            assert!(!e.message.contains("secret"), "{}", e.message);
        }
        // The password is kept out of Debug, display and JSON.
        let t = Target::from_url("postgres://u@h/db")
            .unwrap()
            .with_password(Some("hunter2"));
        assert_eq!(t.password.as_deref(), Some("hunter2"));
        let shown = format!(
            "{t:?} {} {}",
            t.display(),
            serde_json::to_string(&t).unwrap()
        );
        assert!(!shown.contains("hunter2"), "{shown}");
        assert_eq!(t.clone().with_password(Some("")).password, None);
        assert_eq!(quote_ident("bench\"mark"), "\"bench\"\"mark\"");
        assert_eq!(percent_decode("a%40b"), "a@b");
    }

    #[test]
    fn a_refused_connection_says_where() {
        // A port nothing listens on: bind one, learn it, drop it.
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap()
            .port();
        let Err(e) = connect(&Target::local(port, "benchmark"), Duration::from_secs(5)) else {
            panic!("connected to a closed port");
        };
        assert!(
            e.message.starts_with(&format!(
                "could not connect to postgres://postgres@127.0.0.1:{port}/benchmark: "
            )),
            "{}",
            e.message
        );
        assert!(
            e.message.to_lowercase().contains("refused"),
            "{}",
            e.message
        );
        // Told by the client's I/O error kind, not by the words.
        assert!(
            e.hint
                .as_deref()
                .is_some_and(|h| h.starts_with("nothing listens at ")),
            "{:?}",
            e.hint
        );
        assert_eq!(e.missing(), None);
    }
}
