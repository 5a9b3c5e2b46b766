//! TimescaleDB's [`Loading`]: the database work around a load, and its row counts.

use serde_json::{json, Value};

use super::{on_thread, target_of, TimescaleDb, ADMIN_DB};
use crate::error::{Error, Result};
use crate::product::timescaledb::sql;
use crate::product::Loading;

impl Loading for TimescaleDb {
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
}
