//! Manual compaction of a managed GreptimeDB workspace (user-flows.md step 5), as one phase
//! with its own run directory (kind `compaction`): under the workspace lock, start the bound
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

use std::time::{Duration, Instant};

use serde_json::{json, Value};

use super::{Bench, Phase, Request};
use crate::context::Ctx;
use crate::error::{Error, ErrorKind, Result};
use crate::output::Outcome;
use crate::paths::Root;
use crate::product::compare_versions;
use crate::product::Maintenance;
use crate::run::{NewRun, RunDir, RunKind, Status};

use super::target::Target;

/// The first version whose `compact_table` takes `key=value` options such as `parallelism`
/// (before: a bare number of seconds).
const KEY_VALUE_OPTIONS_FROM: &str = "1.0.0-beta.1";
/// The first version with the `ADMIN` statement.
const ADMIN_FROM: &str = "0.10.0";
/// The first version that understands `'swcs'` (before it, silently regular TWCS).
const SWCS_FROM: &str = "0.9.2";
/// Default wait for the corroborating log line after the answer (it is written a few ms
/// before the answer; this covers log buffering).
const DEFAULT_CONFIRM: Duration = Duration::from_secs(5);

/// Refuses (exit 2) what the workspace's version cannot run, instead of letting the server
/// silently run another strategy.
pub fn check_version(version: &str, strategy: &str, parallelism: Option<u32>) -> Result<()> {
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
pub fn compact_statement(
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

pub fn run(ctx: &Ctx, root: Root, target: Target, req: &Request) -> Result<Outcome> {
    let table = req
        .table
        .clone()
        .unwrap_or_else(|| super::TABLE.to_string());
    let strategy = req.strategy.clone().unwrap_or_else(|| "swcs".into());
    // strict_window is swcs spelled the long way: same default window.
    let window = req
        .window
        .or(matches!(strategy.as_str(), "swcs" | "strict_window").then_some(7200));
    if let Some(m) = target.managed() {
        check_version(&m.ws.manifest.version, &strategy, req.parallelism)?;
    }
    super::preflight::check_compact_table(&target, &table)?;
    let run = RunDir::create(
        &root,
        NewRun {
            product: target.entry.name,
            edition: None,
            kind: RunKind::Compaction,
            phase: Phase::Compact.as_str(),
            run_id: req.run_id.as_deref(),
            command: ctx.command_line(),
            flags: req.flags.clone(),
            target: target.to_run_target()?,
            workload: serde_json::from_value(json!({
                "table": table,
                "strategy": strategy,
                "window_seconds": window,
                "parallelism": req.parallelism,
            }))?,
            host_data_dir: target.data_dir(),
        },
        ctx.reporter.as_ref(),
    )?;
    ctx.reporter.info(&format!(
        "compaction run {} in {}",
        run.id(),
        run.dir.display()
    ));
    let cwd = run.dir.clone();
    let mut b = Bench {
        ctx,
        root,
        entry: target.entry,
        phase: Phase::Compact,
        req,
        target,
        run,
        server: None,
        server_attempt: 0,
        forced_stop: false,
        load_footprint: None,
        cwd,
    };
    let result = b.compact(&table, &strategy, window);
    b.conclude(result)
}

impl Bench<'_> {
    /// One maintenance statement as a step: no client timeout, elapsed time on a terminal,
    /// Ctrl-C ends the wait (`Interrupted`). Records how long the server took to answer.
    pub(super) fn maintenance_step(&mut self, step: &str, sql: &str) -> Result<Value> {
        let attempt = self.run.next_attempt(step)?;
        // An external server has no log here.
        let log = self
            .server
            .is_some()
            .then(|| format!("logs/server-{:03}.log", self.server_attempt));
        self.run.begin(
            step,
            attempt,
            log.as_deref(),
            None,
            Some(json!({"sql": sql})),
        )?;
        let endpoint = self.endpoint();
        let db = self.target.database().to_string();
        let (tx, rx) = std::sync::mpsc::channel();
        let stmt = sql.to_string();
        let admin = self.admin()?;
        std::thread::spawn(move || {
            let _ = tx.send(admin.maintenance_sql(&endpoint, Some(&db), &stmt));
        });
        self.ctx.reporter.info(&format!(
            "{sql}: waiting for GreptimeDB's answer (it answers once the work is done; Ctrl-C stops)"
        ));
        let bar = self
            .ctx
            .reporter
            .progress(step, None, crate::output::Unit::Items);
        let started = Instant::now();
        let res = loop {
            match rx.recv_timeout(Duration::from_millis(200)) {
                Ok(r) => break r,
                Err(std::sync::mpsc::RecvTimeoutError::Disconnected) => {
                    break Err(Error::failed(format!("no answer to {sql:?}")))
                }
                Err(std::sync::mpsc::RecvTimeoutError::Timeout) => {}
            }
            bar.set_message(format!("{:.0} s elapsed", started.elapsed().as_secs_f64()));
            if crate::interrupt::requested() {
                break Err(Error::interrupted(format!(
                    "interrupted while GreptimeDB ran {sql:?}"
                )));
            }
            if let Some(reason) = self.server_gone() {
                break Err(Error::failed(format!(
                    "the server died while it ran {sql:?}: {reason}"
                )));
            }
        };
        bar.finish();
        let secs = started.elapsed().as_secs_f64();
        match res {
            Ok(out) => {
                self.ctx
                    .reporter
                    .info(&format!("{step} answered after {secs:.1} s"));
                self.run.end(
                    step,
                    attempt,
                    Status::Completed,
                    None,
                    Some(json!({"response": out, "elapsed_seconds": secs})),
                )?;
                Ok(out)
            }
            Err(e) => {
                let st = if e.kind == ErrorKind::Interrupted {
                    Status::Interrupted
                } else {
                    Status::Failed
                };
                self.run.end(
                    step,
                    attempt,
                    st,
                    Some(e.message.clone()),
                    Some(json!({"elapsed_seconds": secs})),
                )?;
                Err(match log {
                    Some(l) => e.with_hint(format!("see {}", self.run.dir.join(l).display())),
                    None => e,
                })
            }
        }
    }

    /// SQL that only reads (table state); failures are recorded, not fatal.
    fn query_value(&self, sql: &str) -> Option<Value> {
        self.admin()
            .ok()?
            .sql(&self.endpoint(), Some(self.target.database()), sql)
            .ok()
    }

    /// The table's id, or a refusal when it does not exist.
    fn table_id(&mut self, table: &str) -> Result<u64> {
        self.run.begin("table-check", 1, None, None, None)?;
        let db = self.target.database().to_string();
        let sql = format!(
            "SELECT table_id FROM information_schema.tables WHERE table_schema = '{db}' AND table_name = '{table}'"
        );
        // Asked outside the database, which may not even exist.
        let out = self.admin()?.sql(&self.endpoint(), None, &sql);
        let id = out
            .as_ref()
            .ok()
            .and_then(|o| o.pointer("/records/rows/0/0").and_then(Value::as_u64));
        match id {
            Some(id) => {
                self.run.end(
                    "table-check",
                    1,
                    Status::Completed,
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
                self.run
                    .end("table-check", 1, Status::Failed, Some(why.clone()), None)?;
                let id = self.target.database_id().unwrap_or_default();
                Err(Error::new(kind, format!(
                    "nothing to compact in workspace {id}, which is bound to loaded data: {why}"
                ))
                .with_hint(format!("check the data with `tsbsctl greptimedb verify --database-id {id}`, then load it again with `tsbsctl bench greptimedb load --database-id {id} --database-mode reset --confirm-reset NAME`")))
            }
        }
    }

    /// The regions of `table_id` in `information_schema.region_statistics` (where the version
    /// has it: `None` otherwise), one object per region.
    fn region_statistics(&self, table_id: u64) -> Option<Vec<Value>> {
        let stats = self.query_value(&format!(
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

    /// The product's SQL maintenance (the compact phase and the data location need it).
    fn admin(&self) -> Result<Box<dyn Maintenance>> {
        self.target.product.maintenance().ok_or_else(|| {
            Error::invalid(format!(
                "{} has no SQL maintenance (compaction, flush)",
                self.target.entry.display
            ))
            .with_hint("run the load and query phases only")
        })
    }

    /// Before GreptimeDB queries: the optional flush (recorded in the workspace's data state),
    /// then where the data is.
    pub(super) fn flush_then_locate(&mut self) -> Result<()> {
        let flush = self.req.flush_before_queries;
        if flush {
            let sql = format!("ADMIN FLUSH_TABLE('{}')", super::TABLE);
            self.maintenance_step("flush", &sql)?;
            self.target.push_maintenance(serde_json::from_value(json!({
                "operation": "flush",
                "status": "completed",
                "at": crate::manifest::now_rfc3339(),
                "run_id": self.run.id(),
                "run_dir": self.run.dir,
                "table": super::TABLE,
                "statements": [sql],
            }))?)?;
            self.run.manifest.data_state = self.target.data_state();
            self.run.save()?;
        }
        self.data_location(flush)
    }

    /// Where the data of the benchmark table is before queries run (GreptimeDB): SST files
    /// and bytes, and what is only in memtables (unflushed WAL, replayed at start). Never
    /// fails the run: what cannot be read is recorded as unknown.
    fn data_location(&mut self, flushed_before: bool) -> Result<()> {
        let attempt = self.run.next_attempt("data-location")?;
        self.run.begin("data-location", attempt, None, None, None)?;
        let db = self.target.database().to_string();
        let table = super::TABLE;
        let id = self
            .admin()?
            .sql(
                &self.endpoint(),
                None,
                &format!(
                    "SELECT table_id FROM information_schema.tables WHERE table_schema = '{db}' AND table_name = '{table}'"
                ),
            )
            .ok()
            .and_then(|o| o.pointer("/records/rows/0/0").and_then(Value::as_u64));
        let regions = id.and_then(|id| self.region_statistics(id));
        let sum = |k: &str| -> Option<u64> {
            let rs = regions.as_ref()?;
            let vals: Vec<u64> = rs.iter().filter_map(|r| r[k].as_u64()).collect();
            (!vals.is_empty()).then(|| vals.iter().sum())
        };
        let v = json!({
            "table": table,
            "table_id": id,
            "information_schema": regions.is_some(),
            "sst_num": sum("sst_num"),
            "sst_size": sum("sst_size"),
            "memtable_size": sum("memtable_size"),
            "region_rows": sum("region_rows"),
            "flushed_before_queries": flushed_before,
        });
        self.run
            .end("data-location", attempt, Status::Completed, None, Some(v))?;
        Ok(())
    }

    /// SST count and size per region (information schema, where the version has it) and the
    /// data directory split.
    fn table_state(&mut self, step: &str, table_id: u64) -> Result<Value> {
        self.run.begin(step, 1, None, None, None)?;
        let stats = self.region_statistics(table_id);
        let regions: Vec<Value> = stats.clone().unwrap_or_default();
        let sum = |k: &str| -> Option<u64> {
            let vals: Vec<u64> = regions.iter().filter_map(|r| r[k].as_u64()).collect();
            (!vals.is_empty()).then(|| vals.iter().sum())
        };
        let fp = match self.target.data_dir() {
            Some(d) => Some(serde_json::to_value(super::footprint::measure_for(
                self.target.product.as_ref(),
                &d,
            )?)?),
            None => None,
        };
        let v = json!({
            "table_id": table_id,
            "regions": regions,
            "region_count": regions.len(),
            "sst_num": sum("sst_num"),
            "sst_size": sum("sst_size"),
            "region_rows": sum("region_rows"),
            "memtable_size": sum("memtable_size"),
            "information_schema": stats.is_some(),
            "footprint": fp,
            "footprint_note": "measured while the server runs",
        });
        self.run
            .end(step, 1, Status::Completed, None, Some(v.clone()))?;
        Ok(v)
    }

    fn compact(&mut self, table: &str, strategy: &str, window: Option<u64>) -> Result<()> {
        self.run.manifest.server = self.target.server_pin();
        self.run.manifest.data_state = self.target.data_state();
        self.run.save()?;
        let version = self
            .target
            .managed()
            .map(|m| m.ws.manifest.version.clone())
            .unwrap_or_default();
        self.start_server()?;
        let table_id = self.table_id(table)?;
        let before = self.table_state("state-before", table_id)?;
        let log_path = self
            .server
            .as_ref()
            .map(|s| s.log_path().to_path_buf())
            .ok_or_else(|| Error::failed("the server is not running"))?;
        let flush_sql = format!("ADMIN FLUSH_TABLE('{table}')");
        let compact_sql =
            compact_statement(&version, table, strategy, window, self.req.parallelism);
        // The intent first: a compaction killed from here on leaves the data state unknown,
        // never "as loaded" (the next command reads this record).
        let mut record = json!({
            "operation": "compaction",
            "status": "started",
            "at": crate::manifest::now_rfc3339(),
            "run_id": self.run.id(),
            "run_dir": self.run.dir,
            "table": table,
            "strategy": strategy,
            "window_seconds": window,
            "parallelism": self.req.parallelism,
            "statements": [flush_sql, compact_sql],
            "version": version,
            "sst_num_before": before["sst_num"],
        });
        self.target
            .push_maintenance(serde_json::from_value(record.clone())?)?;
        let res = self.flush_and_compact(&flush_sql, &compact_sql, &log_path, table_id, window);
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
        self.target
            .update_last_maintenance(serde_json::from_value(record)?)?;
        self.run.manifest.data_state = self.target.data_state();
        self.run.save()?;
        res?;
        // The statement's answer is final: a slow stop only warns (see stop_server).
        self.stop_server()?;
        Ok(())
    }

    /// Flush, state, compact, corroborate, state. Returns the states after the flush and
    /// after the compaction.
    fn flush_and_compact(
        &mut self,
        flush_sql: &str,
        compact_sql: &str,
        log_path: &std::path::Path,
        table_id: u64,
        window: Option<u64>,
    ) -> Result<(Value, Value)> {
        self.maintenance_step("flush", flush_sql)?;
        let after_flush = self.table_state("state-after-flush", table_id)?;
        let offset = std::fs::metadata(log_path).map(|m| m.len()).unwrap_or(0);
        self.maintenance_step("compact", compact_sql)?;
        let regions: Vec<u64> = after_flush["regions"]
            .as_array()
            .map(|a| {
                a.iter()
                    .filter_map(|r| r["region_number"].as_u64())
                    .collect()
            })
            .unwrap_or_default();
        let timeout = self
            .req
            .confirm_timeout
            .map(|t| Duration::from_secs_f64(t.max(0.1)))
            .unwrap_or(DEFAULT_CONFIRM);
        self.run.begin(
            "confirm",
            1,
            Some(&format!("logs/server-{:03}.log", self.server_attempt)),
            None,
            Some(json!({"timeout_seconds": timeout.as_secs_f64(), "regions": regions})),
        )?;
        let after = self.table_state("state-after", table_id)?;
        // The same files after the answer: most likely the picker found nothing to do, and
        // then no line comes at all; only a short look.
        let unchanged = after["sst_num"] == after_flush["sst_num"]
            && after["sst_size"] == after_flush["sst_size"];
        let look = if unchanged {
            timeout.min(Duration::from_millis(500))
        } else {
            timeout
        };
        let lines = corroborate(log_path, offset, table_id, &regions, window, look);
        let outcome = if !lines.is_empty() {
            "compacted"
        } else if unchanged {
            "nothing to compact"
        } else {
            "compacted (no log line found)"
        };
        self.run.end(
            "confirm",
            1,
            Status::Completed,
            None,
            Some(json!({
                "log_lines": lines,
                "corroborated": !lines.is_empty(),
                "outcome": outcome,
            })),
        )?;
        if outcome == "nothing to compact" {
            self.ctx
                .reporter
                .info("GreptimeDB answered 0 and compacted no file: nothing to compact");
        }
        Ok((after_flush, after))
    }
}

/// The log lines, after `offset`, of this manual compaction of `table_id`: "Compacted SST
/// files" with a waiter (automatic compactions have `waiter_num: 0`) and, for a strict window,
/// that window. Waits at most `timeout` for one line per region (the server writes it a few
/// ms before its answer); none is not an error: the answer already decided.
fn corroborate(
    log: &std::path::Path,
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

fn read_from(path: &std::path::Path, offset: u64) -> String {
    use std::io::{Read, Seek, SeekFrom};
    let mut s = Vec::new();
    if let Ok(mut f) = std::fs::File::open(path) {
        let _ = f.seek(SeekFrom::Start(offset));
        let _ = f.read_to_end(&mut s);
    }
    String::from_utf8_lossy(&s).into_owned()
}

/// The region number in a compaction log line of `table_id`: `region_id: <id>(<table>, <n>)`.
fn region_of(line: &str, table_id: u64) -> Option<u64> {
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
