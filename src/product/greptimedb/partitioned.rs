//! The statements of a partitioned load (issue 25 §2), on a running server through `/v1/sql`:
//!
//! 1. the schema the loader would have made: the dataset's first line written, as the loader
//!    writes it (`/v1/influxdb/write?db=`), into a scratch database, whose auto-created `cpu`
//!    table's `SHOW CREATE TABLE` is kept; the scratch database is dropped again;
//! 2. the benchmark database by `--database-mode` (create refuses an existing one, reset drops
//!    it, reuse keeps it but refuses an existing `cpu` table: it would not be the one asked for);
//! 3. `CREATE TABLE` = that text with the `PARTITION ON COLUMNS` block ([`super::partition`]),
//!    then its own `SHOW CREATE TABLE`, which less the block must equal the auto-created one.
//!
//! After the load, [`report`] reads where each region is and what it holds from
//! `information_schema` (`region_statistics`, `region_peers`, `partitions`).

use serde_json::{json, Value};

use super::partition::{self, TABLE};
use super::GreptimeDb;
use crate::error::{Error, Result};
use crate::product::PartitionedLoad;
use crate::tsbs::DatabaseMode;

/// The scratch database of the schema probe (dropped after it).
fn scratch_name(db: &str) -> String {
    format!("{db}_tsbsctl_schema_probe")
}

fn databases(g: &GreptimeDb, endpoint: &str) -> Result<Vec<String>> {
    let out = g.sql(endpoint, None, "SHOW DATABASES")?;
    Ok(out
        .pointer("/records/rows")
        .and_then(Value::as_array)
        .map(|rows| {
            rows.iter()
                .filter_map(|r| r.get(0).and_then(Value::as_str).map(str::to_string))
                .collect()
        })
        .unwrap_or_default())
}

fn tables(g: &GreptimeDb, endpoint: &str, db: &str) -> Result<Vec<String>> {
    let out = g.sql(endpoint, Some(db), "SHOW TABLES")?;
    Ok(out
        .pointer("/records/rows")
        .and_then(Value::as_array)
        .map(|rows| {
            rows.iter()
                .filter_map(|r| r.get(0).and_then(Value::as_str).map(str::to_string))
                .collect()
        })
        .unwrap_or_default())
}

fn show_create(g: &GreptimeDb, endpoint: &str, db: &str) -> Result<String> {
    let out = g.sql(endpoint, Some(db), &format!("SHOW CREATE TABLE {TABLE}"))?;
    out.pointer("/records/rows/0/1")
        .and_then(Value::as_str)
        .map(str::to_string)
        .ok_or_else(|| {
            Error::failed(format!(
                "GreptimeDB answered SHOW CREATE TABLE {TABLE} in {db} without the statement"
            ))
        })
}

/// One line-protocol write, as the loader sends its batches.
fn write_line(endpoint: &str, db: &str, line: &str) -> Result<()> {
    let client = crate::product::admin_client()?;
    let mut req = client
        .post(format!("{endpoint}/v1/influxdb/write"))
        .query(&[("db", db)])
        .body(format!("{}\n", line.trim_end()));
    if let Some(a) = crate::tsbs::credentials::for_url(endpoint) {
        req = req.basic_auth(&a.user, Some(a.password.expose()));
    }
    let resp = req.send().map_err(|e| {
        Error::failed(format!(
            "GreptimeDB at {endpoint} did not answer a line-protocol write: {e}"
        ))
    })?;
    let status = resp.status();
    if !status.is_success() {
        let body = resp.text().unwrap_or_default();
        return Err(Error::failed(format!(
            "GreptimeDB refused the dataset's first line in database {db} ({status}): {}",
            body.trim()
        )));
    }
    Ok(())
}

/// The `SHOW CREATE TABLE` of the table the server auto-creates from `line`, in a scratch
/// database that is dropped again whatever happened.
fn auto_created(g: &GreptimeDb, endpoint: &str, db: &str, line: &str) -> Result<String> {
    let scratch = scratch_name(db);
    // A leftover of an interrupted run goes first.
    g.sql(
        endpoint,
        None,
        &format!("DROP DATABASE IF EXISTS {scratch}"),
    )?;
    g.sql(endpoint, None, &format!("CREATE DATABASE {scratch}"))?;
    let text =
        write_line(endpoint, &scratch, line).and_then(|_| show_create(g, endpoint, &scratch));
    let dropped = g.sql(endpoint, None, &format!("DROP DATABASE {scratch}"));
    let text = text?;
    dropped.map_err(|e| e.context(format!("dropping the scratch database {scratch}")))?;
    Ok(text)
}

/// Steps 1-3 of the module documentation. The record always comes back (with
/// `schema_matches`), so a mismatch is recorded with both texts before the run fails.
pub fn create(g: &GreptimeDb, r: &PartitionedLoad) -> Result<Value> {
    let (endpoint, db) = (r.endpoint, r.database);
    let p = r.partitioning;
    let exists = databases(g, endpoint)?.iter().any(|d| d == db);
    match (r.mode, exists) {
        (DatabaseMode::Create, true) => {
            return Err(Error::failed(format!(
                "database {db:?} exists: aborting (--database-mode create)"
            ))
            .with_hint(format!(
                "drop it with --database-mode reset --confirm-reset {db}"
            )))
        }
        (DatabaseMode::Reuse, true) if tables(g, endpoint, db)?.iter().any(|t| t == TABLE) => {
            // Found only on the running server, like an existing database in create mode.
            return Err(Error::failed(format!(
                "table {TABLE} exists in database {db}: --partitions creates it before the load, split into {} regions",
                p.partitions
            ))
            .with_hint(format!(
                "load with --database-mode reset --confirm-reset {db} (drops the database), or drop --partitions to load into the table as it is"
            )));
        }
        _ => {}
    }
    let auto = auto_created(g, endpoint, db, r.sample_line)?;
    let regions = partition::regions(&p.column, r.scale, p.partitions);
    let ddl = partition::partitioned_ddl(&auto, &p.column, &regions)?;
    if r.mode == DatabaseMode::Reset && exists {
        g.sql(endpoint, None, &format!("DROP DATABASE {db}"))?;
    }
    if r.mode == DatabaseMode::Reset || !exists {
        g.sql(endpoint, None, &format!("CREATE DATABASE {db}"))?;
    }
    g.sql(endpoint, Some(db), &ddl)?;
    let created = show_create(g, endpoint, db)?;
    let matches = partition::same_schema(&partition::without_partition(&created), &auto);
    Ok(json!({
        "table": TABLE,
        "database": db,
        "partitions": p.partitions,
        "partition_column": p.column,
        "database_mode": r.mode.as_str(),
        "database_existed": exists,
        "scale": r.scale,
        "regions": regions,
        "ddl": ddl,
        "schema_source": "SHOW CREATE TABLE of the table the server auto-created from the dataset's first line (scratch database, dropped)",
        "auto_created": auto,
        "created": created,
        "schema_matches": matches,
    }))
}

/// Rows of one `/v1/sql` answer as objects keyed by column name.
fn objects(out: &Value) -> Vec<serde_json::Map<String, Value>> {
    let cols: Vec<String> = out
        .pointer("/records/schema/column_schemas")
        .and_then(Value::as_array)
        .map(|a| {
            a.iter()
                .filter_map(|c| c["name"].as_str().map(str::to_string))
                .collect()
        })
        .unwrap_or_default();
    out.pointer("/records/rows")
        .and_then(Value::as_array)
        .map(|rows| {
            rows.iter()
                .map(|r| {
                    cols.iter()
                        .enumerate()
                        .map(|(i, c)| (c.clone(), r.get(i).cloned().unwrap_or(Value::Null)))
                        .collect()
                })
                .collect()
        })
        .unwrap_or_default()
}

/// How long the regions' statistics may take to add up to the loaded rows. A cluster's
/// `region_statistics` is what the metasrv last published of the datanodes' heartbeats (every
/// third one of each, so up to 9 s late): read at once after a load, a real v1.0.2 cluster
/// showed 51,600 of 86,400 rows, and 3 s later still 60,000 of another 86,400.
const STATS_SETTLE: std::time::Duration = std::time::Duration::from_secs(30);

/// Per region of `table`: number, id, rule, rows, peer. `None` when the table is not there.
/// The statistics are read until their rows add up to `loaded` (at most [`STATS_SETTLE`]);
/// the readings and the wait are recorded.
pub fn report(
    g: &GreptimeDb,
    endpoint: &str,
    db: &str,
    table: &str,
    loaded: u64,
) -> Result<Option<Value>> {
    crate::ids::validate_sql_identifier("--table", table)?;
    let id_sql = format!(
        "SELECT table_id FROM information_schema.tables WHERE table_schema = '{db}' AND table_name = '{table}'"
    );
    let Some(table_id) = g
        .sql(endpoint, None, &id_sql)?
        .pointer("/records/rows/0/0")
        .and_then(Value::as_u64)
    else {
        return Ok(None);
    };
    let stats_sql = format!(
        "SELECT region_id, region_number, region_rows, sst_num, memtable_size FROM information_schema.region_statistics WHERE table_id = {table_id}"
    );
    let sum = |stats: &[serde_json::Map<String, Value>]| -> u64 {
        stats
            .iter()
            .filter_map(|s| s.get("region_rows").and_then(Value::as_u64))
            .sum()
    };
    let started = std::time::Instant::now();
    let mut readings: Vec<u64> = Vec::new();
    let stats = loop {
        let stats = objects(&g.sql(endpoint, None, &stats_sql)?);
        readings.push(sum(&stats));
        if sum(&stats) == loaded || started.elapsed() >= STATS_SETTLE {
            break stats;
        }
        std::thread::sleep(std::time::Duration::from_secs(1));
    };
    let waited = started.elapsed().as_secs_f64();
    let peers = objects(&g.sql(
        endpoint,
        None,
        &format!(
            "SELECT region_id, peer_id, peer_addr, is_leader, status FROM information_schema.region_peers WHERE table_schema = '{db}' AND table_name = '{table}'"
        ),
    )?);
    // The rules (`partitions` is newer than the others on some versions: optional). A real
    // v1.0.2 puts the partition columns in `partition_expression` and each region's rule in
    // `partition_description`, as MySQL does; the expression is the fallback.
    let rules = g
        .sql(
            endpoint,
            None,
            &format!(
                "SELECT * FROM information_schema.partitions WHERE table_schema = '{db}' AND table_name = '{table}'"
            ),
        )
        .map(|o| objects(&o))
        .unwrap_or_default();
    let mut regions: Vec<Value> = stats
        .iter()
        .map(|s| {
            let rid = s.get("region_id").cloned().unwrap_or(Value::Null);
            let peer = peers.iter().find(|p| p.get("region_id") == Some(&rid));
            let rule = rules
                .iter()
                .find(|r| r.get("greptime_partition_id") == Some(&rid))
                .and_then(|r| {
                    r.get("partition_description")
                        .filter(|d| d.is_string())
                        .or_else(|| r.get("partition_expression"))
                        .cloned()
                });
            json!({
                "region_number": s.get("region_number"),
                "region_id": rid,
                "rule": rule,
                "rows": s.get("region_rows"),
                "sst_num": s.get("sst_num"),
                "memtable_size": s.get("memtable_size"),
                "peer_id": peer.and_then(|p| p.get("peer_id")),
                "peer_addr": peer.and_then(|p| p.get("peer_addr")),
                "is_leader": peer.and_then(|p| p.get("is_leader")),
                "status": peer.and_then(|p| p.get("status")),
            })
        })
        .collect();
    regions.sort_by_key(|r| r["region_number"].as_u64().unwrap_or(u64::MAX));
    let total: u64 = regions.iter().filter_map(|r| r["rows"].as_u64()).sum();
    let empty: Vec<u64> = regions
        .iter()
        .filter(|r| r["rows"].as_u64() == Some(0))
        .filter_map(|r| r["region_number"].as_u64())
        .collect();
    Ok(Some(json!({
        "table": table,
        "table_id": table_id,
        "regions": regions,
        "region_count": regions.len(),
        "rows": total,
        "empty_regions": empty,
        "readings": readings,
        "waited_s": (waited * 10.0).round() / 10.0,
        "source": "information_schema.region_statistics (region_rows), region_peers, partitions",
    })))
}
