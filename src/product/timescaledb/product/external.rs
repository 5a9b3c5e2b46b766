//! TimescaleDB's [`ExternalServer`]: its external servers.

use serde_json::Value;

use super::{on_thread, TimescaleDb, ADMIN_DB};
use crate::error::{Error, Result};
use crate::product::timescaledb::sql::Target;
use crate::product::timescaledb::{sql, Mode};
use crate::product::ExternalServer;
use crate::tsbs::Secret;

impl ExternalServer for TimescaleDb {
    /// The password of an external server, read only from the variable `--password-env`
    /// names (no default: not even `PGPASSWORD` is read unasked).
    fn token_env_defaults(&self) -> Option<(Option<&'static str>, Option<&'static str>)> {
        Some((None, None))
    }
    fn secret_word(&self) -> &'static str {
        "password"
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
}
