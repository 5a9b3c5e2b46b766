//! Manual compaction of a managed GreptimeDB workspace (user-flows.md step 5): GreptimeDB's
//! operation `compact` ([`COMPACT`]), run by the generic operation driver
//! (`bench/operation.rs`: its own run directory, of the kind `compaction` its runs have always
//! recorded, under the workspace lock) through [`OpCtx`], which is all it knows of the run.
//! What is the compaction's own is declared here: its request (from the flags, `flags.rs`),
//! the version check, the table it needs, its workload record, the steps that change the
//! data, its summary section and the report's storage cells. It runs: start the bound
//! instance, confirm the table exists in the bound SQL database, record its state before the
//! flush, record the intent in the workspace's data state, run `ADMIN FLUSH_TABLE('<t>')`,
//! record the state after the flush, run `ADMIN COMPACT_TABLE('<t>', '<strategy>',
//! '<options>')`, record the state after the compaction, stop the server (it drains), and
//! mark the operation completed.
//!
//! Both statements are synchronous on the server (reference/real/greptimedb.md #1): the answer
//! is the completion signal, no client timeout applies, and Ctrl-C ends the wait (the server is
//! stopped, the compaction recorded as failed and the data state as unknown). The server log
//! only corroborates, after the answer and briefly: the line of *this* manual compaction
//! (`waiter_num` ≥ 1, its window), never an automatic one. A compaction killed before it
//! recorded its outcome leaves the intent behind, so the next command labels the data
//! "maintenance interrupted: state unknown".

use std::path::Path;
use std::time::{Duration, Instant};

use serde_json::{json, Value};

use crate::error::{Error, ErrorKind, Result};
use crate::product::compare_versions;
use crate::product::ext::{MaintenanceWords, OpSummary, OpTable, Operation, StepRecord, Values};
use crate::product::op::{OpCtx, StepEnd};

use super::flags::compact_request;

/// What a compaction was asked for (the flags, defaults applied: `flags.rs`).
#[derive(Debug, Clone)]
pub struct CompactRequest {
    pub table: String,
    pub strategy: String,
    pub window: Option<u64>,
    pub parallelism: Option<u32>,
    /// How long to wait, after the answer, for the corroborating server log line (seconds).
    pub confirm_timeout: f64,
}

/// The first version whose `compact_table` takes `key=value` options such as `parallelism`
/// (before: a bare number of seconds).
const KEY_VALUE_OPTIONS_FROM: &str = "1.0.0-beta.1";
/// The first version with the `ADMIN` statement.
const ADMIN_FROM: &str = "0.10.0";
/// The first version that understands `'swcs'` (before it, silently regular TWCS).
const SWCS_FROM: &str = "0.9.2";

/// Refuses (exit 2) what the workspace's version cannot run, instead of letting the server
/// silently run another strategy.
fn check_version(version: &str, strategy: &str, parallelism: Option<u32>) -> Result<()> {
    if compare_versions(version, ADMIN_FROM).is_lt() {
        return Err(Error::invalid(format!(
            "GreptimeDB {version} has no ADMIN statement (it exists from v{ADMIN_FROM}); tsbsctl compacts with ADMIN FLUSH_TABLE / COMPACT_TABLE"
        ))
        .with_hint(format!("use a workspace of GreptimeDB {ADMIN_FROM} or later")));
    }
    if matches!(strategy, "swcs" | "strict_window") && compare_versions(version, SWCS_FROM).is_lt()
    {
        return Err(Error::invalid(format!(
            "GreptimeDB {version} does not know strategy {strategy:?} (from v{SWCS_FROM}) and would silently run regular TWCS"
        ))
        .with_hint("use --strategy twcs, or a newer version"));
    }
    if parallelism.is_some() && compare_versions(version, KEY_VALUE_OPTIONS_FROM).is_lt() {
        return Err(Error::invalid(format!(
            "GreptimeDB {version} takes no compaction options such as parallelism (from v{KEY_VALUE_OPTIONS_FROM})"
        ))
        .with_hint("drop --parallelism (the server compacts with parallelism 1)"));
    }
    Ok(())
}

/// The `ADMIN COMPACT_TABLE` statement for a version, strategy, window and parallelism.
/// `table` and `strategy` are validated before (identifier / fixed list).
fn compact_statement(
    version: &str,
    table: &str,
    strategy: &str,
    window: Option<u64>,
    parallelism: Option<u32>,
) -> String {
    let swcs = matches!(strategy, "swcs" | "strict_window");
    let key_value = compare_versions(version, KEY_VALUE_OPTIONS_FROM).is_ge();
    let mut opts: Vec<String> = Vec::new();
    if let (true, Some(w)) = (swcs, window) {
        opts.push(if key_value {
            format!("window={w}")
        } else {
            w.to_string()
        });
    }
    if let (true, Some(p)) = (key_value, parallelism) {
        opts.push(format!("parallelism={p}"));
    }
    if opts.is_empty() {
        format!("ADMIN COMPACT_TABLE('{table}', '{strategy}')")
    } else {
        format!(
            "ADMIN COMPACT_TABLE('{table}', '{strategy}', '{}')",
            opts.join(",")
        )
    }
}

/// GreptimeDB's manual compaction, `bench greptimedb compact` (its flags, their checks and
/// defaults: `flags.rs`). Its runs are of kind `compaction`, their workload is the request
/// (`table`, `strategy`, `window_seconds`, `parallelism`) and their summary's `compaction`
/// section the statements and table states, as they always were.
pub const COMPACT: Operation = Operation {
    name: "compact",
    about: "Flush, then compact a table (manual compaction)",
    run: |ctx, values| run(ctx, &compact_request(values)),
    kind: Some(COMPACTION_WORDS.operation),
    check: |version, values| {
        let req = compact_request(values);
        check_version(version, &req.strategy, req.parallelism)
    },
    table: Some(&TABLE),
    workload: Some(workload),
    changes_data: &["flush", "compact"],
    summary: Some(&SUMMARY),
};

/// Its maintenance record: a completed compaction labels the data "after manual
/// compaction"; one that did not finish leaves the state unknown.
pub const COMPACTION_WORDS: MaintenanceWords = MaintenanceWords {
    operation: "compaction",
    completed: "after manual compaction",
    rewrites: true,
};

/// The table compacted (`--table`, default `cpu`) must be one the loaded dataset wrote.
static TABLE: OpTable = OpTable {
    flag: &super::flags::TABLE,
    of: |values| compact_request(values).table,
};

/// The run's workload: the request, in the keys compaction runs have always recorded.
fn workload(values: &Values) -> Values {
    let req = compact_request(values);
    let v = json!({
        "table": req.table,
        "strategy": req.strategy,
        "window_seconds": req.window,
        "parallelism": req.parallelism,
    });
    match v {
        Value::Object(m) => m,
        _ => unreachable!("an object"),
    }
}

/// The summary's `compaction`: the request and the data of the run's steps (a statement's
/// step with how it ended: an interrupted wait is no answer); its storage cells in `runs
/// report`: the SST bytes after the flush and after the compaction.
static SUMMARY: OpSummary = OpSummary {
    key: "compaction",
    build: summary,
    report_storage: |c| {
        vec![
            (
                "sst_after_flush_bytes",
                c["after_flush"]["sst_size"].clone(),
            ),
            ("sst_after_compaction_bytes", c["after"]["sst_size"].clone()),
        ]
    },
};

fn summary(w: &Values, step: &StepRecord) -> Value {
    let data = |n: &str| step(n).map_or(Value::Null, |s| s["data"].clone());
    let statement = |n: &str| {
        step(n)
            .map(|s| {
                let mut v = s["data"].clone();
                if let Value::Object(o) = &mut v {
                    o.insert("status".into(), s["status"].clone());
                    o.insert("reason".into(), s["reason"].clone());
                }
                v
            })
            .unwrap_or(Value::Null)
    };
    let field = |k: &str| w.get(k).cloned().unwrap_or(Value::Null);
    json!({
        "table": field("table"),
        "strategy": field("strategy"),
        "window_seconds": field("window_seconds"),
        "flush": statement("flush"),
        "compact": statement("compact"),
        "confirmation": data("confirm"),
        "before": data("state-before"),
        "after_flush": data("state-after-flush"),
        "after": data("state-after"),
        "parallelism": field("parallelism"),
    })
}

fn run(ctx: &mut dyn OpCtx, req: &CompactRequest) -> Result<()> {
    let table = req.table.as_str();
    let version = ctx.version();
    ctx.start_server()?;
    let table_id = table_id(ctx, table)?;
    let before = table_state(ctx, "state-before", table_id)?;
    let (log_path, log_rel) = ctx
        .server_log()
        .ok_or_else(|| Error::failed("the server is not running"))?;
    let flush_sql = format!("ADMIN FLUSH_TABLE('{table}')");
    let compact_sql =
        compact_statement(&version, table, &req.strategy, req.window, req.parallelism);
    // The intent first: a compaction killed from here on leaves the data state unknown,
    // never "as loaded" (the next command reads this record).
    let mut record = json!({
        "operation": COMPACTION_WORDS.operation,
        "status": "started",
        "at": crate::manifest::now_rfc3339(),
        "run_id": ctx.run_id(),
        "run_dir": ctx.run_dir(),
        "table": table,
        "strategy": req.strategy,
        "window_seconds": req.window,
        "parallelism": req.parallelism,
        "statements": [flush_sql, compact_sql],
        "version": version,
        "sst_num_before": before["sst_num"],
    });
    ctx.push_maintenance(serde_json::from_value(record.clone())?)?;
    let res = flush_and_compact(
        ctx,
        req,
        &flush_sql,
        &compact_sql,
        (&log_path, &log_rel),
        table_id,
    );
    let (status, reason) = match &res {
        Ok(_) => ("completed", None),
        Err(e) if e.kind == ErrorKind::Interrupted => ("interrupted", Some(e.message.clone())),
        Err(e) => ("failed", Some(e.message.clone())),
    };
    record["status"] = json!(status);
    record["finished_at"] = json!(crate::manifest::now_rfc3339());
    if let Some(r) = reason {
        record["reason"] = json!(r);
        record["data_state"] = json!("unknown");
    }
    if let Ok((after_flush, after)) = &res {
        record["sst_num_after_flush"] = after_flush["sst_num"].clone();
        record["sst_num_after"] = after["sst_num"].clone();
    }
    ctx.update_last_maintenance(serde_json::from_value(record)?)?;
    res?;
    // The statement's answer is final: a slow stop only warns.
    ctx.stop_server()?;
    Ok(())
}

/// The table's id, or a refusal when it does not exist.
fn table_id(ctx: &mut dyn OpCtx, table: &str) -> Result<u64> {
    ctx.begin("table-check", 1, None, None, None)?;
    let db = ctx.database().to_string();
    let sql = format!(
        "SELECT table_id FROM information_schema.tables WHERE table_schema = '{db}' AND table_name = '{table}'"
    );
    // Asked outside the database, which may not even exist.
    let out = ctx.sql(None, &sql);
    let id = out
        .as_ref()
        .ok()
        .and_then(|o| o.pointer("/records/rows/0/0").and_then(Value::as_u64));
    match id {
        Some(id) => {
            ctx.end(
                "table-check",
                1,
                StepEnd::Completed,
                None,
                Some(json!({"table": table, "database": db, "table_id": id})),
            )?;
            Ok(id)
        }
        None => {
            // The flags were checked against the workspace's binding before the run
            // began, so a missing table here is data that is gone, not a bad flag.
            let (why, kind) = match out {
                Err(e) => (e.message, ErrorKind::Failed),
                Ok(_) => (
                    format!("table {table} does not exist in database {db}"),
                    ErrorKind::Integrity,
                ),
            };
            ctx.end("table-check", 1, StepEnd::Failed, Some(why.clone()), None)?;
            let id = ctx.database_id();
            Err(Error::new(kind, format!(
                "nothing to compact in workspace {id}, which is bound to loaded data: {why}"
            ))
            .with_hint(format!("check the data with `tsbsctl greptimedb verify --database-id {id}`, then load it again with `tsbsctl bench greptimedb load --database-id {id} --database-mode reset --confirm-reset NAME`")))
        }
    }
}

/// The regions of `table_id` in `information_schema.region_statistics` (where the version
/// has it: `None` otherwise), one object per region. `query` runs a read-only statement in
/// the benchmark database (failures are `None`).
pub(super) fn region_statistics(
    query: &dyn Fn(&str) -> Option<Value>,
    table_id: u64,
) -> Option<Vec<Value>> {
    let stats = query(&format!(
        "SELECT * FROM information_schema.region_statistics WHERE table_id = {table_id}"
    ))?;
    let cols: Vec<String> = stats
        .pointer("/records/schema/column_schemas")?
        .as_array()?
        .iter()
        .filter_map(|c| c["name"].as_str().map(str::to_string))
        .collect();
    let rows = stats.pointer("/records/rows")?.as_array()?;
    Some(
        rows.iter()
            .map(|r| {
                let mut m = serde_json::Map::new();
                for (i, c) in cols.iter().enumerate() {
                    m.insert(c.clone(), r.get(i).cloned().unwrap_or(Value::Null));
                }
                Value::Object(m)
            })
            .collect(),
    )
}

/// A cluster's datanodes send their region statistics to the metasrv with each heartbeat
/// (every 3 s), and the metasrv publishes them to `information_schema.region_statistics`
/// every third heartbeat (`DEFAULT_FLUSH_STATS_FACTOR`): up to 9 s late. Read at once after a
/// flush, a real v1.0.2 cluster still showed its memtables, and its three datanodes' new
/// numbers appeared 3.5 to 5.1 s apart. So in a cluster the statistics are read every second
/// until they stayed the same for longer than a publication period.
const STATS_STABLE_FOR: Duration = Duration::from_secs(10);
const STATS_WAIT_AT_MOST: Duration = Duration::from_secs(45);

/// [`region_statistics`], settled where the server is a cluster (see [`STATS_STABLE_FOR`]);
/// with the seconds waited for them (0 on a standalone server).
pub(super) fn settled_region_statistics(
    c: &dyn OpCtx,
    db: &str,
    table_id: u64,
) -> (Option<Vec<Value>>, f64) {
    let read = || region_statistics(&|sql| c.sql(Some(db), sql).ok(), table_id);
    let distributed = c
        .sql(
            Some(db),
            "SELECT peer_type FROM information_schema.cluster_info WHERE peer_type = 'DATANODE'",
        )
        .ok()
        .and_then(|v| {
            v.pointer("/records/rows")
                .and_then(Value::as_array)
                .map(|r| !r.is_empty())
        })
        .unwrap_or(false);
    let started = Instant::now();
    let mut last = read();
    if !distributed {
        return (last, 0.0);
    }
    // What changes when the data moves; other columns (bytes written since open) may creep.
    let key = |s: &Option<Vec<Value>>| -> Vec<Value> {
        s.iter()
            .flatten()
            .map(|r| {
                json!([
                    r["region_id"],
                    r["region_rows"],
                    r["sst_num"],
                    r["sst_size"],
                    r["memtable_size"]
                ])
            })
            .collect()
    };
    let mut since = Instant::now();
    while since.elapsed() < STATS_STABLE_FOR && started.elapsed() < STATS_WAIT_AT_MOST {
        std::thread::sleep(Duration::from_secs(1));
        let next = read();
        if key(&next) != key(&last) {
            since = Instant::now();
        }
        last = next;
    }
    (
        last,
        (started.elapsed().as_secs_f64() * 10.0).round() / 10.0,
    )
}

/// SST count and size per region (information schema, where the version has it) and the
/// data directory split.
fn table_state(ctx: &mut dyn OpCtx, step: &str, table_id: u64) -> Result<Value> {
    ctx.begin(step, 1, None, None, None)?;
    let db = ctx.database().to_string();
    let (stats, waited) = settled_region_statistics(ctx, &db, table_id);
    let regions: Vec<Value> = stats.clone().unwrap_or_default();
    let sum = |k: &str| -> Option<u64> {
        let vals: Vec<u64> = regions.iter().filter_map(|r| r[k].as_u64()).collect();
        (!vals.is_empty()).then(|| vals.iter().sum())
    };
    let fp = ctx.footprint()?;
    let v = json!({
        "table_id": table_id,
        "regions": regions,
        "region_count": regions.len(),
        "sst_num": sum("sst_num"),
        "sst_size": sum("sst_size"),
        "region_rows": sum("region_rows"),
        "memtable_size": sum("memtable_size"),
        "information_schema": stats.is_some(),
        "statistics_waited_s": waited,
        "footprint": fp,
        "footprint_note": "measured while the server runs",
    });
    ctx.end(step, 1, StepEnd::Completed, None, Some(v.clone()))?;
    Ok(v)
}

/// Flush, state, compact, corroborate, state. Returns the states after the flush and
/// after the compaction. `log`: the server log's path and its name in the run directory.
fn flush_and_compact(
    ctx: &mut dyn OpCtx,
    req: &CompactRequest,
    flush_sql: &str,
    compact_sql: &str,
    (log_path, log_rel): (&Path, &str),
    table_id: u64,
) -> Result<(Value, Value)> {
    ctx.maintenance_step("flush", flush_sql)?;
    let after_flush = table_state(ctx, "state-after-flush", table_id)?;
    let offset = std::fs::metadata(log_path).map(|m| m.len()).unwrap_or(0);
    let asked = Instant::now();
    ctx.maintenance_step("compact", compact_sql)?;
    let answered_s = asked.elapsed().as_secs_f64();
    let regions: Vec<u64> = after_flush["regions"]
        .as_array()
        .map(|a| {
            a.iter()
                .filter_map(|r| r["region_number"].as_u64())
                .collect()
        })
        .unwrap_or_default();
    let timeout = Duration::from_secs_f64(req.confirm_timeout.max(0.1));
    ctx.begin(
        "confirm",
        1,
        Some(log_rel),
        None,
        Some(json!({"timeout_seconds": timeout.as_secs_f64(), "regions": regions})),
    )?;
    let after = table_state(ctx, "state-after", table_id)?;
    // The same files after the answer: most likely the picker found nothing to do, and
    // then no line comes at all; only a short look.
    let unchanged =
        after["sst_num"] == after_flush["sst_num"] && after["sst_size"] == after_flush["sst_size"];
    let look = if unchanged {
        timeout.min(Duration::from_millis(500))
    } else {
        timeout
    };
    let lines = corroborate(log_path, offset, table_id, &regions, req.window, look);
    let (queued, merge_s) = queue_and_merge(&read_from(log_path, offset), table_id, &lines);
    // Per region (a partitioned table has several): which ones wrote their completion line.
    let (confirmed, unconfirmed): (Vec<u64>, Vec<u64>) = regions
        .iter()
        .partition(|r| lines.iter().any(|l| region_of(l, table_id) == Some(**r)));
    // The answer's time less the server's own merge time: mostly the wait behind the
    // automatic compaction (157.7 s = 27.3 s queued + 130.4 s merging on a real v1.0.2).
    let queued_s = merge_s
        .filter(|_| queued)
        .map(|m| ((answered_s - m).max(0.0) * 10.0).round() / 10.0);
    let outcome = if !lines.is_empty() {
        "compacted"
    } else if unchanged {
        "nothing to compact"
    } else {
        "compacted (no log line found)"
    };
    ctx.end(
        "confirm",
        1,
        StepEnd::Completed,
        None,
        Some(json!({
            "log_lines": lines,
            "corroborated": !lines.is_empty(),
            "regions_confirmed": confirmed,
            "regions_unconfirmed": unconfirmed,
            "outcome": outcome,
            "queued_behind_automatic": queued,
            "merge_s": merge_s,
            "queued_s": queued_s,
        })),
    )?;
    if outcome == "nothing to compact" {
        ctx.reporter()
            .info("GreptimeDB answered 0 and compacted no file: nothing to compact");
    }
    Ok((after_flush, after))
}

/// The log lines, after `offset`, of this manual compaction of `table_id`: "Compacted SST
/// files" with a waiter (automatic compactions have `waiter_num: 0`) and, for a strict window,
/// that window. Waits at most `timeout` for one line per region (the server writes it a few
/// ms before its answer); none is not an error: the answer already decided.
fn corroborate(
    log: &Path,
    offset: u64,
    table_id: u64,
    regions: &[u64],
    window: Option<u64>,
    timeout: Duration,
) -> Vec<String> {
    let deadline = Instant::now() + timeout;
    loop {
        let text = read_from(log, offset);
        let mut done: Vec<String> = Vec::new();
        let mut seen: Vec<u64> = Vec::new();
        for line in text.lines() {
            let Some(region) = region_of(line, table_id) else {
                continue;
            };
            if manual_completion(line, window) {
                done.push(line.trim().to_string());
                seen.push(region);
            }
        }
        let complete = if regions.is_empty() {
            !seen.is_empty()
        } else {
            regions.iter().all(|r| seen.contains(r))
        };
        if complete || Instant::now() >= deadline || crate::interrupt::requested() {
            return done;
        }
        std::thread::sleep(Duration::from_millis(100));
    }
}

/// Whether the manual compaction of `table_id` waited behind a running one ("Region … is
/// compacting, manually compaction will be re-scheduled.", after `offset`), and the longest
/// `merge_time` of its own completion `lines` (seconds).
fn queue_and_merge(text: &str, table_id: u64, lines: &[String]) -> (bool, Option<f64>) {
    let queued = text.lines().any(|l| {
        l.contains("manually compaction will be re-scheduled")
            && l.find("Region ").is_some_and(|i| {
                region_of(&l[i..].replacen("Region ", "region: ", 1), table_id).is_some()
            })
    });
    let merge = lines
        .iter()
        .filter_map(|l| {
            let rest = l.split("merge_time: ").nth(1)?;
            rest.trim_end_matches('s').trim().parse::<f64>().ok()
        })
        .reduce(f64::max);
    (queued, merge)
}

/// A "Compacted SST files" line of a manual compaction (and of `window`, when given).
fn manual_completion(line: &str, window: Option<u64>) -> bool {
    if !line.contains("Compacted SST files") {
        return false;
    }
    let waiters = line
        .split("waiter_num: ")
        .nth(1)
        .and_then(|r| r.split(|c: char| !c.is_ascii_digit()).next())
        .and_then(|n| n.parse::<u64>().ok());
    if waiters.unwrap_or(0) == 0 {
        return false;
    }
    match window {
        Some(w) => line.contains(&format!("window: Some({w})")),
        None => true,
    }
}

pub(super) fn read_from(path: &Path, offset: u64) -> String {
    use std::io::{Read, Seek, SeekFrom};
    let mut s = Vec::new();
    if let Ok(mut f) = std::fs::File::open(path) {
        let _ = f.seek(SeekFrom::Start(offset));
        let _ = f.read_to_end(&mut s);
    }
    String::from_utf8_lossy(&s).into_owned()
}

/// The region number in a compaction log line of `table_id`: `region_id: <id>(<table>, <n>)`.
pub(super) fn region_of(line: &str, table_id: u64) -> Option<u64> {
    let i = line.find("region_id: ").or_else(|| line.find("region: "))?;
    let rest = &line[i..];
    let open = rest.find('(')?;
    let close = rest[open..].find(')')? + open;
    let inner = &rest[open + 1..close];
    let (t, n) = inner.split_once(',')?;
    if t.trim().parse::<u64>().ok()? != table_id {
        return None;
    }
    n.trim().parse().ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_compaction_without_a_strategy_is_swcs_in_windows_of_two_hours() {
        let of = |v: serde_json::Value| {
            let r = super::super::flags::resolve("compact", v.as_object().unwrap()).unwrap();
            let c = compact_request(&r);
            (c.strategy, c.window)
        };
        assert_eq!(of(json!({})), ("swcs".to_string(), Some(7200)));
        assert_eq!(
            of(json!({"strategy": "strict_window"})),
            ("strict_window".to_string(), Some(7200))
        );
        assert_eq!(
            of(json!({"strategy": "swcs", "window": 60})),
            ("swcs".to_string(), Some(60))
        );
        assert_eq!(of(json!({"strategy": "twcs"})), ("twcs".to_string(), None));
    }

    #[test]
    fn the_queue_behind_the_automatic_compaction_and_the_merge_time_are_read() {
        // Lines as a real v1.0.2 wrote them (greptimedb-observed-2.md, run 17).
        let text = "2026-12-03T09:17:01.101Z  INFO mito2::compaction: Region 4398046511104(1024, 0) is compacting, manually compaction will be re-scheduled.\n";
        let manual = "2026-12-03T09:19:38.5Z  INFO mito2::compaction::task: Compacted SST files, region_id: 4398046511104(1024, 0), input: [..], output: [..], window: Some(7200), waiter_num: 1, merge_time: 130.4s".to_string();
        let (queued, merge) = queue_and_merge(text, 1024, std::slice::from_ref(&manual));
        assert!(queued);
        assert_eq!(merge, Some(130.4));
        // Another table's queue is not this one's.
        assert!(!queue_and_merge(text, 1025, &[]).0);
        assert_eq!(queue_and_merge("", 1024, &[]), (false, None));
    }

    #[test]
    fn only_this_manual_compaction_corroborates() {
        let auto = "2026-12-01T20:04:34.107811Z  INFO mito2::compaction::task: Compacted SST files, region_id: 4398046511104(1024, 0), input: [..], output: [..], window: Some(86400), waiter_num: 0, merge_time: 1.2s";
        let manual = "2026-12-01T20:04:36.010409Z  INFO mito2::compaction::task: Compacted SST files, region_id: 4398046511104(1024, 0), input: [..], output: [..], window: Some(7200), waiter_num: 1, merge_time: 1.9s";
        assert!(!manual_completion(auto, Some(7200)));
        assert!(!manual_completion(auto, None));
        assert!(manual_completion(manual, Some(7200)));
        assert!(!manual_completion(manual, Some(3600)));
        assert!(manual_completion(manual, None));
        let d = tempfile::tempdir().unwrap();
        let log = d.path().join("server.log");
        std::fs::write(&log, format!("{auto}\n{manual}\n")).unwrap();
        let lines = corroborate(&log, 0, 1024, &[0], Some(7200), Duration::from_millis(10));
        assert_eq!(lines, vec![manual.to_string()]);
        // Nothing to find: returns after the short wait, without an error.
        std::fs::write(&log, format!("{auto}\n")).unwrap();
        let t = Instant::now();
        assert!(
            corroborate(&log, 0, 1024, &[0], Some(7200), Duration::from_millis(300)).is_empty()
        );
        assert!(t.elapsed() < Duration::from_secs(5));
    }

    #[test]
    fn versions_without_admin_swcs_or_options_are_refused() {
        assert_eq!(
            check_version("0.9.5", "twcs", None)
                .unwrap_err()
                .exit_code(),
            2
        );
        assert!(check_version("0.10.0", "swcs", None).is_ok());
        let e = check_version("0.17.2", "swcs", Some(2)).unwrap_err();
        assert!(e.message.contains("parallelism"), "{}", e.message);
        assert!(check_version("1.2.0", "swcs", Some(2)).is_ok());
    }

    #[test]
    fn statement_follows_the_version() {
        assert_eq!(
            compact_statement("1.2.0", "cpu", "swcs", Some(7200), Some(4)),
            "ADMIN COMPACT_TABLE('cpu', 'swcs', 'window=7200,parallelism=4')"
        );
        assert_eq!(
            compact_statement("1.2.0", "cpu", "twcs", None, Some(2)),
            "ADMIN COMPACT_TABLE('cpu', 'twcs', 'parallelism=2')"
        );
        assert_eq!(
            compact_statement("1.2.0", "cpu", "swcs", Some(7200), None),
            "ADMIN COMPACT_TABLE('cpu', 'swcs', 'window=7200')"
        );
        assert_eq!(
            compact_statement("1.0.0-beta.1", "cpu", "swcs", Some(7200), None),
            "ADMIN COMPACT_TABLE('cpu', 'swcs', 'window=7200')"
        );
        assert_eq!(
            compact_statement("0.17.2", "cpu", "swcs", Some(7200), Some(3)),
            "ADMIN COMPACT_TABLE('cpu', 'swcs', '7200')"
        );
        assert_eq!(
            compact_statement("1.2.0", "cpu", "twcs", None, None),
            "ADMIN COMPACT_TABLE('cpu', 'twcs')"
        );
    }

    #[test]
    fn region_lines() {
        let l = "2026-11-29T20:00:00.000000Z  INFO mito2::compaction::task: Compacted SST files, region_id: 4398046511104(1024, 0), input: [..], output: [..], window: Some(7200)";
        assert_eq!(region_of(l, 1024), Some(0));
        assert_eq!(region_of(l, 1025), None);
        assert_eq!(region_of("no region here", 1024), None);
    }
}
