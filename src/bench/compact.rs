//! Manual compaction of a managed GreptimeDB workspace (user-flows.md step 5), as one phase
//! with its own run directory (kind `compaction`): under the workspace lock, start the bound
//! instance, confirm the table exists in the bound SQL database, record its state, run
//! `ADMIN FLUSH_TABLE('<t>')` then `ADMIN COMPACT_TABLE('<t>', '<strategy>', '<options>')`,
//! confirm completion from the answers and the server log, record the state after, stop the
//! server normally, and append the operation to the workspace's data state.

use std::time::{Duration, Instant};

use serde_json::{json, Value};

use super::{Bench, Phase, Request};
use crate::context::Ctx;
use crate::error::{Error, ErrorKind, Result};
use crate::output::Outcome;
use crate::paths::Root;
use crate::product::compare_versions;
use crate::product::greptimedb::GreptimeDb;
use crate::run::{NewRun, RunDir, RunKind, Status};

use super::target::Target;

/// The first version whose `compact_table` takes `key=value` options (before: a bare number).
const KEY_VALUE_OPTIONS_FROM: &str = "1.0.0-beta.1";
/// Default wait for the completion line in the server log.
const DEFAULT_CONFIRM: Duration = Duration::from_secs(3600);

/// The `ADMIN COMPACT_TABLE` statement for a version, strategy and window.
pub fn compact_statement(
    version: &str,
    table: &str,
    strategy: &str,
    window: Option<u64>,
) -> String {
    let swcs = matches!(strategy, "swcs" | "strict_window");
    match (swcs, window) {
        (true, Some(w)) => {
            let opt = if compare_versions(version, KEY_VALUE_OPTIONS_FROM).is_ge() {
                format!("window={w}")
            } else {
                w.to_string()
            };
            format!("ADMIN COMPACT_TABLE('{table}', '{strategy}', '{opt}')")
        }
        _ => format!("ADMIN COMPACT_TABLE('{table}', '{strategy}')"),
    }
}

pub fn run(ctx: &Ctx, root: Root, target: Target, req: &Request) -> Result<Outcome> {
    let table = req
        .table
        .clone()
        .unwrap_or_else(|| super::TABLE.to_string());
    let strategy = req.strategy.clone().unwrap_or_else(|| "swcs".into());
    let window = req.window.or((strategy == "swcs").then_some(7200));
    super::preflight::check_compact_table(&target, &table)?;
    let run = RunDir::create(
        &root,
        NewRun {
            product: target.kind.name(),
            edition: None,
            kind: RunKind::Compaction,
            phase: Phase::Compact.as_str(),
            run_id: req.run_id.as_deref(),
            command: ctx.command_line(),
            flags: req.flags.clone(),
            target: target.to_json(),
            workload: json!({"table": table, "strategy": strategy, "window_seconds": window}),
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
        kind: target.kind,
        phase: Phase::Compact,
        req,
        target,
        run,
        server: None,
        server_attempt: 0,
        cwd,
    };
    let result = b.compact(&table, &strategy, window);
    b.conclude(result)
}

impl Bench<'_> {
    fn sql_step(&mut self, step: &str, sql: &str) -> Result<Value> {
        let attempt = self.run.next_attempt(step)?;
        let log = format!("logs/server-{:03}.log", self.server_attempt);
        self.run
            .begin(step, attempt, Some(&log), None, Some(json!({"sql": sql})))?;
        let endpoint = self.endpoint();
        match GreptimeDb.sql(&endpoint, Some(self.target.database()), sql) {
            Ok(out) => {
                self.run.end(
                    step,
                    attempt,
                    Status::Completed,
                    None,
                    Some(json!({"response": out})),
                )?;
                Ok(out)
            }
            Err(e) => {
                self.run
                    .end(step, attempt, Status::Failed, Some(e.message.clone()), None)?;
                Err(e.with_hint(format!("see {}", self.run.dir.join(&log).display())))
            }
        }
    }

    /// SQL that only reads (table state); failures are recorded, not fatal.
    fn query_value(&self, sql: &str) -> Option<Value> {
        GreptimeDb
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
        let out = GreptimeDb.sql(&self.endpoint(), None, &sql);
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

    /// SST count and size per region (information schema, where the version has it) and the
    /// data directory split.
    fn table_state(&mut self, step: &str, table_id: u64) -> Result<Value> {
        self.run.begin(step, 1, None, None, None)?;
        let stats = self.query_value(&format!(
            "SELECT * FROM information_schema.region_statistics WHERE table_id = {table_id}"
        ));
        let regions: Vec<Value> = stats
            .as_ref()
            .and_then(|o| {
                let cols: Vec<String> = o
                    .pointer("/records/schema/column_schemas")?
                    .as_array()?
                    .iter()
                    .filter_map(|c| c["name"].as_str().map(str::to_string))
                    .collect();
                let rows = o.pointer("/records/rows")?.as_array()?;
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
            })
            .unwrap_or_default();
        let sum = |k: &str| -> Option<u64> {
            let vals: Vec<u64> = regions.iter().filter_map(|r| r[k].as_u64()).collect();
            (!vals.is_empty()).then(|| vals.iter().sum())
        };
        let fp = match self.target.data_dir() {
            Some(d) => Some(serde_json::to_value(super::footprint::measure(&d)?)?),
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
            .managed
            .as_ref()
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
        self.sql_step("flush", &flush_sql)?;
        let compact_sql = compact_statement(&version, table, strategy, window);
        let offset = std::fs::metadata(&log_path).map(|m| m.len()).unwrap_or(0);
        self.sql_step("compact", &compact_sql)?;
        // Completion: one "Compacted SST files" / "No files to compact" line per region of the
        // table in the server log, after the statement; a "Failed to compact" line fails it.
        let regions: Vec<u64> = before["regions"]
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
        match self.confirm(&log_path, offset, table_id, &regions, timeout) {
            Ok(lines) => self.run.end(
                "confirm",
                1,
                Status::Completed,
                None,
                Some(json!({"log_lines": lines})),
            )?,
            Err(e) => {
                let st = if e.kind == ErrorKind::Interrupted {
                    Status::Interrupted
                } else {
                    Status::Failed
                };
                self.run
                    .end("confirm", 1, st, Some(e.message.clone()), None)?;
                return Err(e);
            }
        }
        let after = self.table_state("state-after", table_id)?;
        self.stop_server()?;
        if self
            .run
            .steps()?
            .iter()
            .any(|s| s.step == "server" && s.status == Status::Failed)
        {
            return Err(
                Error::failed("the server did not stop normally after the compaction")
                    .with_hint("see the server log in the run directory"),
            );
        }
        self.target.push_maintenance(json!({
            "operation": "compaction",
            "status": "completed",
            "at": crate::manifest::now_rfc3339(),
            "run_id": self.run.id(),
            "run_dir": self.run.dir,
            "table": table,
            "strategy": strategy,
            "window_seconds": window,
            "statements": [flush_sql, compact_sql],
            "version": version,
            "sst_num_before": before["sst_num"],
            "sst_num_after": after["sst_num"],
        }))?;
        self.run.manifest.data_state = self.target.data_state();
        self.run.save()?;
        Ok(())
    }

    fn confirm(
        &mut self,
        log: &std::path::Path,
        offset: u64,
        table_id: u64,
        regions: &[u64],
        timeout: Duration,
    ) -> Result<Vec<String>> {
        let deadline = Instant::now() + timeout;
        loop {
            let text = read_from(log, offset);
            let mut done: Vec<String> = Vec::new();
            let mut seen: Vec<u64> = Vec::new();
            for line in text.lines() {
                let Some(region) = region_of(line, table_id) else {
                    continue;
                };
                if line.contains("Failed to compact") {
                    return Err(Error::failed(format!(
                        "GreptimeDB reported a failed compaction: {}",
                        line.trim()
                    ))
                    .with_hint(format!("see {}", log.display())));
                }
                if line.contains("Compacted SST files") || line.contains("No files to compact") {
                    done.push(line.trim().to_string());
                    seen.push(region);
                }
            }
            let complete = if regions.is_empty() {
                !seen.is_empty()
            } else {
                regions.iter().all(|r| seen.contains(r))
            };
            if complete {
                return Ok(done);
            }
            if let Some(reason) = self.server_gone() {
                return Err(Error::failed(format!(
                    "the server died before the compaction completed: {reason}"
                )));
            }
            crate::interrupt::check()?;
            if Instant::now() >= deadline {
                return Err(Error::failed(format!(
                    "compaction completion could not be confirmed within {}s: no completion line for table {table_id} in {}",
                    timeout.as_secs_f64(),
                    log.display()
                ))
                .with_hint("the compaction may still be running; look at the server log, then run the compact phase again"));
            }
            std::thread::sleep(Duration::from_millis(100));
        }
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
    fn statement_follows_the_version() {
        assert_eq!(
            compact_statement("1.2.0", "cpu", "swcs", Some(7200)),
            "ADMIN COMPACT_TABLE('cpu', 'swcs', 'window=7200')"
        );
        assert_eq!(
            compact_statement("1.0.0-beta.1", "cpu", "swcs", Some(7200)),
            "ADMIN COMPACT_TABLE('cpu', 'swcs', 'window=7200')"
        );
        assert_eq!(
            compact_statement("0.17.2", "cpu", "swcs", Some(7200)),
            "ADMIN COMPACT_TABLE('cpu', 'swcs', '7200')"
        );
        assert_eq!(
            compact_statement("1.2.0", "cpu", "twcs", None),
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
