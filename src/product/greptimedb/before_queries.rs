//! Before GreptimeDB's queries (the query phase, on the started server), through [`OpCtx`]:
//!
//! 1. `--flush-before-queries`: `ADMIN FLUSH_TABLE` of each of the dataset's tables (`cpu`;
//!    devops's nine; iot's two), recorded in the workspace's data state ("as loaded, flushed").
//! 2. The automatic compaction that flush starts runs to its end before the first query.
//!    Every flush schedules a TWCS job (v1.0.2 `worker/handle_flush.rs`, after the FLUSH
//!    answer; 13-52 s at 5.2 M rows, growing with the data): queries beside it would measure
//!    the merge too. The signal is the server's own `greptime_mito_inflight_compaction_count`
//!    gauge on `/metrics` (a real v1.0.2 read 1 within 10 ms of the FLUSH answer and 0 right
//!    after its "Compacted SST files" line); the wait ends when the gauge has read 0 for
//!    [`QUIET`]. The log lines of the compactions it waited for are recorded.
//! 3. Where the data is: SST files, their rows (`information_schema.ssts_manifest`), the rows
//!    only in memtables (region rows minus SST rows: memtable bytes are uncompressed and SST
//!    bytes compressed, so bytes cannot be compared), and the files on storage that no
//!    manifest lists (`information_schema.ssts_storage`): outputs of compactions a stop threw
//!    away. What the version cannot say is recorded as unknown, and never fails the run.
//!    Several tables are summed (the record names them, with each one's id); one table keeps
//!    the record it always had.

use std::path::Path;
use std::time::{Duration, Instant};

use serde_json::{json, Value};

use super::compact::{read_from, region_of, settled_region_statistics};
use super::ssts;
use crate::error::{Error, Result};
use crate::output::Warning;
use crate::product::ext::MaintenanceWords;
use crate::product::op::{BeforeQueries, OpCtx, StepEnd};

/// Its flush record (`--flush-before-queries`): data as loaded becomes "as loaded, flushed".
pub const FLUSH_WORDS: MaintenanceWords = MaintenanceWords {
    operation: "flush",
    completed: "as loaded, flushed",
    rewrites: false,
};

/// The benchmark table of a run without a dataset (what the TSBS loader writes for cpu-only).
const TABLE: &str = "cpu";
/// The gauge of running compaction jobs (absent until the first job ran).
const GAUGE: &str = "greptime_mito_inflight_compaction_count";
/// How long the gauge must read 0 before the compactions count as done: covers the moment
/// between the FLUSH answer and the job's start (observed: under 10 ms).
const QUIET: Duration = Duration::from_secs(2);
const POLL: Duration = Duration::from_millis(200);
/// The longest wait; the queries then start beside the compaction, and the run says so.
const WAIT_LIMIT: Duration = Duration::from_secs(3600);
/// At most this many paths (orphans, log lines) are kept in a record.
const KEEP: usize = 20;

pub const BEFORE_QUERIES: BeforeQueries = BeforeQueries { run };

fn run(ctx: &mut dyn OpCtx, values: &crate::product::ext::Values) -> Result<()> {
    let flush = super::flags::flush_before_queries(values);
    let mut names = ctx.tables();
    if names.is_empty() {
        names.push(TABLE.to_string());
    }
    let tables: Vec<(String, Option<u64>)> = names
        .into_iter()
        .map(|t| {
            let id = table_id(ctx, &t);
            (t, id)
        })
        .collect();
    if flush {
        let log = ctx.server_log();
        let offset = log
            .as_ref()
            .and_then(|(p, _)| std::fs::metadata(p).ok())
            .map_or(0, |m| m.len());
        let mut statements = Vec::new();
        for (t, _) in &tables {
            let sql = format!("ADMIN FLUSH_TABLE('{t}')");
            ctx.maintenance_step("flush", &sql)?;
            statements.push(sql);
        }
        let rec = serde_json::from_value(json!({
            "operation": FLUSH_WORDS.operation,
            "status": "completed",
            "at": crate::manifest::now_rfc3339(),
            "run_id": ctx.run_id(),
            "run_dir": ctx.run_dir(),
            "table": joined(&tables),
            "statements": statements,
        }))?;
        ctx.push_maintenance(Clone::clone(&rec))?;
        // The same record again: copies the workspace's data state into the run.
        ctx.update_last_maintenance(rec)?;
        let ids: Vec<u64> = tables.iter().filter_map(|(_, id)| *id).collect();
        wait_for_compaction(
            ctx,
            log.as_ref().map(|(p, r)| (p.as_path(), r.as_str())),
            offset,
            &ids,
        )?;
    }
    data_location(ctx, flush, &tables)
}

/// The tables' names as one record value ("cpu"; "readings, diagnostics").
fn joined(tables: &[(String, Option<u64>)]) -> String {
    tables
        .iter()
        .map(|(t, _)| t.as_str())
        .collect::<Vec<_>>()
        .join(", ")
}

/// A table's id (`None`: the server could not say).
fn table_id(ctx: &dyn OpCtx, table: &str) -> Option<u64> {
    let db = ctx.database().to_string();
    ctx.sql(
        None,
        &format!(
            "SELECT table_id FROM information_schema.tables WHERE table_schema = '{db}' AND table_name = '{table}'"
        ),
    )
    .ok()
    .and_then(|o| o.pointer("/records/rows/0/0").and_then(Value::as_u64))
}

/// The running compaction jobs in a `/metrics` text (0 when the gauge is absent: no job has
/// run in this process).
pub(super) fn inflight(metrics: &str) -> u64 {
    metrics
        .lines()
        .filter(|l| {
            l.strip_prefix(GAUGE)
                .is_some_and(|rest| rest.starts_with(' ') || rest.starts_with('{'))
        })
        .filter_map(|l| l.rsplit(' ').next()?.parse::<f64>().ok())
        .map(|v| v.max(0.0) as u64)
        .sum()
}

/// Waits until no compaction runs, as a step of its own (`automatic-compaction`).
fn wait_for_compaction(
    ctx: &mut dyn OpCtx,
    log: Option<(&Path, &str)>,
    offset: u64,
    table_ids: &[u64],
) -> Result<()> {
    let step = "automatic-compaction";
    ctx.begin(step, 1, log.map(|(_, rel)| rel), None, Some(json!({"signal": format!("{GAUGE} on /metrics"), "limit_seconds": WAIT_LIMIT.as_secs()})))?;
    let start = Instant::now();
    let mut quiet_since = start;
    let mut busy: Option<(Instant, Instant)> = None;
    let mut polls = 0u64;
    let outcome = loop {
        if let Err(e) = crate::interrupt::check() {
            ctx.end(step, 1, StepEnd::Interrupted, Some(e.message.clone()), None)?;
            return Err(e);
        }
        if let Some(why) = ctx.server_gone() {
            let msg = format!("the server died while compacting after the flush: {why}");
            ctx.end(step, 1, StepEnd::Failed, Some(msg.clone()), None)?;
            return Err(Error::failed(msg));
        }
        polls += 1;
        let now = Instant::now();
        match ctx.http_get("/metrics") {
            Err(e) => break Err(e.message),
            Ok(body) if inflight(&body) > 0 => {
                if busy.is_none() {
                    ctx.reporter().info(
                        "waiting for the compaction GreptimeDB started after the flush (queries beside it would measure the merge too)",
                    );
                }
                busy = Some((busy.map_or(now, |b| b.0), now));
                quiet_since = now;
            }
            Ok(_) => {}
        }
        if now.duration_since(quiet_since) >= QUIET {
            break Ok(if busy.is_some() {
                "finished"
            } else {
                "none ran"
            });
        }
        if now.duration_since(start) >= WAIT_LIMIT {
            break Ok("still running");
        }
        std::thread::sleep(POLL);
    };
    let lines: Vec<String> = match log {
        Some((path, _)) if !table_ids.is_empty() => read_from(path, offset)
            .lines()
            .filter(|l| {
                l.contains("Compacted SST files")
                    && table_ids.iter().any(|id| region_of(l, *id).is_some())
            })
            .map(|l| l.trim().to_string())
            .collect(),
        _ => Vec::new(),
    };
    let waited = start.elapsed().as_secs_f64();
    let busy_s = busy.map(|(a, b)| b.duration_since(a).as_secs_f64());
    let outcome = match outcome {
        // A compaction shorter than one poll shows only in the log.
        Ok("none ran") if !lines.is_empty() => "finished".to_string(),
        Ok(o) => o.to_string(),
        Err(why) => {
            ctx.reporter().warning(&Warning::Product {
                text: format!(
                    "could not tell whether GreptimeDB still compacts after the flush ({why}): the queries may run beside a compaction"
                ),
            });
            format!("unknown: {why}")
        }
    };
    match outcome.as_str() {
        "finished" => ctx.reporter().info(&format!(
            "the compaction after the flush finished ({:.1} s waited)",
            waited
        )),
        "still running" => ctx.reporter().warning(&Warning::Product {
            text: format!(
                "GreptimeDB still compacts {} s after the flush: the queries start beside it",
                WAIT_LIMIT.as_secs()
            ),
        }),
        _ => {}
    }
    let data = json!({
        "outcome": outcome,
        "waited_s": (waited * 10.0).round() / 10.0,
        "busy_s": busy_s.map(|b| (b * 10.0).round() / 10.0),
        "polls": polls,
        "compacted_lines": lines.len(),
        "log_lines": lines.iter().take(KEEP).collect::<Vec<_>>(),
    });
    ctx.end(step, 1, StepEnd::Completed, None, Some(data))
}

/// The SST rows of the table and the files on storage no manifest lists. `None` fields:
/// the version has no such tables (1.0.0-beta.1) or the question failed.
fn sst_files(ctx: &dyn OpCtx, table_id: u64) -> Value {
    let db = ctx.database().to_string();
    let view = ssts::server_view(&|sql| ctx.sql(Some(&db), sql).ok(), Some(table_id));
    let Some((manifest, storage)) = view else {
        return json!({"sst_rows": null, "orphan_files": null});
    };
    let sst_rows = ssts::visible_rows(&manifest);
    let Some(storage) = storage.filter(|_| !manifest.is_empty()) else {
        return json!({"sst_rows": sst_rows, "orphan_files": null});
    };
    let orphans = ssts::orphans(&manifest, &storage, ctx.data_dir().as_deref());
    let parquet = orphans
        .iter()
        .filter(|(p, _)| p.ends_with(".parquet"))
        .count();
    let bytes: Option<u64> = orphans.iter().map(|(_, s)| *s).sum();
    json!({
        "sst_rows": sst_rows,
        "orphan_files": parquet,
        "orphan_index_files": orphans.len() - parquet,
        "orphan_bytes": bytes,
        "orphan_paths": orphans.iter().take(KEEP).map(|(p, _)| p).collect::<Vec<_>>(),
    })
}

/// Where the data of the benchmark tables is before the queries run (several tables:
/// summed; a sum is unknown when one table's part is). Never fails the run: what cannot be
/// read is recorded as unknown.
fn data_location(
    ctx: &mut dyn OpCtx,
    flushed: bool,
    tables: &[(String, Option<u64>)],
) -> Result<()> {
    ctx.begin("data-location", 1, None, None, None)?;
    let db = ctx.database().to_string();
    let mut regions: Option<Vec<Value>> = Some(Vec::new());
    let mut waited = 0.0;
    let mut files = Vec::new();
    for (_, id) in tables {
        let (r, w) = match id {
            Some(id) => settled_region_statistics(ctx, &db, *id),
            None => (None, 0.0),
        };
        waited += w;
        regions = regions.zip(r).map(|(mut a, b)| {
            a.extend(b);
            a
        });
        files.push(id.map_or(json!({}), |id| sst_files(ctx, id)));
    }
    let sum = |k: &str| -> Option<u64> {
        let rs = regions.as_ref()?;
        let vals: Vec<u64> = rs.iter().filter_map(|r| r[k].as_u64()).collect();
        (!vals.is_empty()).then(|| vals.iter().sum())
    };
    // Every table's part, or unknown.
    let total = |k: &str| -> Option<u64> { files.iter().map(|f| f[k].as_u64()).sum() };
    let region_rows = sum("region_rows");
    let sst_rows = total("sst_rows");
    let one = (tables.len() == 1).then(|| tables[0].1).flatten();
    let mut v = json!({
        "table": joined(tables),
        "table_id": one,
        "information_schema": regions.is_some(),
        "statistics_waited_s": waited,
        "sst_num": sum("sst_num"),
        "sst_size": sum("sst_size"),
        "memtable_size": sum("memtable_size"),
        "region_rows": region_rows,
        "sst_rows": sst_rows,
        "memtable_rows": region_rows.zip(sst_rows).map(|(r, s)| r.saturating_sub(s)),
        "flushed_before_queries": flushed,
    });
    if tables.len() > 1 {
        v["tables"] = tables
            .iter()
            .map(|(t, id)| json!({"table": t, "table_id": id}))
            .collect();
    }
    for k in ["orphan_files", "orphan_index_files", "orphan_bytes"] {
        if files.iter().any(|f| f.get(k).is_some()) {
            v[k] = json!(files.iter().map(|f| f[k].as_u64()).sum::<Option<u64>>());
        }
    }
    if files.iter().any(|f| f.get("orphan_paths").is_some()) {
        let paths: Vec<Value> = files
            .iter()
            .filter_map(|f| f["orphan_paths"].as_array())
            .flatten()
            .take(KEEP)
            .cloned()
            .collect();
        v["orphan_paths"] = json!(paths);
    }
    if let Some(n) = v["orphan_files"].as_u64().filter(|n| *n > 0) {
        ctx.reporter().warning(&Warning::Product {
            text: format!(
                "{n} SST file(s) of table {} are on storage but in no manifest (outputs of compactions a stop threw away); `tsbsctl greptimedb orphans --database-id {}` names them and removes them with --remove",
                joined(tables),
                ctx.database_id()
            ),
        });
    }
    ctx.end("data-location", 1, StepEnd::Completed, None, Some(v))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn gauge_is_read_from_the_metrics_text() {
        // Before the first compaction the real server has no such line.
        assert_eq!(
            inflight("# HELP greptime_app_version x\ngreptime_app_version{a=\"b\"} 1\n"),
            0
        );
        let busy = "# HELP greptime_mito_inflight_compaction_count inflight compaction count\n# TYPE greptime_mito_inflight_compaction_count gauge\ngreptime_mito_inflight_compaction_count 1\n";
        assert_eq!(inflight(busy), 1);
        assert_eq!(inflight("greptime_mito_inflight_compaction_count 0\n"), 0);
        // Another series with the same prefix is not the gauge.
        assert_eq!(
            inflight("greptime_mito_inflight_compaction_count_total 3\n"),
            0
        );
    }
}
