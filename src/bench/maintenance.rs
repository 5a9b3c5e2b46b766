//! What a product's code may do inside a run ([`OpCtx`], [`StepCtx`]), implemented here by
//! [`Bench`]: for its operations (`operation.rs`), its own phases and what it does before
//! its queries. The product's SQL, its defaults and what its maintenance means live with the
//! product; here is only the generic driver: a maintenance statement as a step, waited for,
//! interruptible, its late answer recorded.

use std::path::PathBuf;
use std::time::{Duration, Instant};

use serde_json::{json, Value};

use super::Bench;
use crate::error::{Error, ErrorKind, Result};
use crate::output::{Event, Reporter};
use crate::product::op::StepCtx;
use crate::product::{Maintenance, OpCtx, StepEnd};
use crate::run::Status;
use crate::workspace_manifest::MaintenanceRecord;

use super::target::Target;

/// The refusal (exit 2) of a product that has no SQL maintenance.
fn no_maintenance(target: &Target) -> Error {
    Error::invalid(format!(
        "{} has no SQL maintenance statements",
        target.entry.display
    ))
    .with_hint("run the load and query phases only")
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
        let discarded = admin.discarded_on_stop(sql);
        std::thread::spawn(move || {
            let _ = tx.send(admin.maintenance_sql(&endpoint, Some(&db), &stmt));
        });
        let server = self.target.entry.display;
        self.ctx.reporter.event(&Event::WaitingForAnswer {
            sql: sql.to_string(),
            server: server.to_string(),
        });
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
                // Work the server throws away on stop is not waited for.
                if let (Some(why), Some(s)) = (discarded, self.server.as_mut()) {
                    s.discard_running_work(why);
                }
                break Err(Error::interrupted(format!(
                    "interrupted after {:.1} s while {server} ran {sql:?}, before it answered",
                    started.elapsed().as_secs_f64()
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
        if res
            .as_ref()
            .is_err_and(|e| e.kind == ErrorKind::Interrupted)
        {
            self.late_answer = Some(LateAnswer {
                step: step.to_string(),
                attempt,
                reason: res.as_ref().err().map(|e| e.message.clone()),
                elapsed_seconds: secs,
                rx,
            });
        }
        match res {
            Ok(out) => {
                self.ctx.reporter.event(&Event::Answered {
                    step: step.to_string(),
                    seconds: secs,
                });
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

    /// After the server stopped: the answer an interrupted maintenance statement got while
    /// the server stopped, if any, recorded as a second end of its step.
    pub(super) fn record_late_answer(&mut self) -> Result<()> {
        let Some(l) = self.late_answer.take() else {
            return Ok(());
        };
        let answer = match l.rx.recv_timeout(Duration::from_millis(500)) {
            Ok(Ok(out)) => json!({"ok": true, "response": out}),
            Ok(Err(e)) if e.http_status().is_some() => {
                json!({"ok": false, "status": e.http_status(), "error": e.message})
            }
            // No answer: the connection is still open, or it closed with the killed server.
            Ok(Err(_)) | Err(_) => return Ok(()),
        };
        self.run.end(
            &l.step,
            l.attempt,
            Status::Interrupted,
            l.reason,
            Some(json!({"elapsed_seconds": l.elapsed_seconds, "answer_while_stopping": answer})),
        )
    }

    /// The product's SQL maintenance (its operations and what it does before its queries
    /// need it).
    fn admin(&self) -> Result<Box<dyn Maintenance>> {
        self.target
            .product
            .maintenance()
            .ok_or_else(|| no_maintenance(&self.target))
    }
}

/// The run's steps and its managed server, as a product's code sees them (its operations,
/// phases and work before the queries): the one implementation.
impl StepCtx for Bench<'_> {
    fn run_dir(&self) -> PathBuf {
        self.run.dir.clone()
    }
    fn next_attempt(&mut self, step: &str) -> Result<u32> {
        self.run.next_attempt(step)
    }
    fn begin(
        &mut self,
        step: &str,
        attempt: u32,
        log: Option<&str>,
        results: Option<&str>,
        data: Option<Value>,
    ) -> Result<()> {
        self.run.begin(step, attempt, log, results, data)
    }
    fn end(
        &mut self,
        step: &str,
        attempt: u32,
        how: StepEnd,
        reason: Option<String>,
        data: Option<Value>,
    ) -> Result<()> {
        self.run.end(step, attempt, how.into(), reason, data)
    }
    fn start_server(&mut self) -> Result<()> {
        Bench::start_server(self)
    }
    fn stop_server(&mut self) -> Result<()> {
        Bench::stop_server(self)
    }
}

/// What a product's operation may do, on this run, its server and its workspace.
impl OpCtx for Bench<'_> {
    fn reporter(&self) -> &dyn Reporter {
        self.ctx.reporter.as_ref()
    }
    fn database(&self) -> &str {
        self.target.database()
    }
    fn database_id(&self) -> String {
        self.target.database_id().unwrap_or_default()
    }
    fn version(&self) -> String {
        self.target
            .managed()
            .map(|m| m.ws.manifest.version.clone())
            .unwrap_or_default()
    }
    fn run_id(&self) -> String {
        self.run.id().to_string()
    }
    fn server_log(&self) -> Option<(PathBuf, String)> {
        let s = self.server.as_ref()?;
        Some((
            s.log_path().to_path_buf(),
            format!("logs/server-{:03}.log", self.server_attempt),
        ))
    }
    fn sql(&self, db: Option<&str>, sql: &str) -> Result<Value> {
        self.admin()?.sql(&self.endpoint(), db, sql)
    }
    fn maintenance_step(&mut self, step: &str, sql: &str) -> Result<Value> {
        Bench::maintenance_step(self, step, sql)
    }
    fn tables(&self) -> Vec<String> {
        self.target.tables.clone()
    }
    fn footprint(&self) -> Result<Option<Value>> {
        let Some(d) = self.target.data_dir() else {
            return Ok(None);
        };
        let mut v = serde_json::to_value(super::footprint::measure_for(
            self.target.product.as_ref(),
            &d,
        )?)?;
        // A server on object storage: what an operation rewrites are objects in the bucket.
        if let Some(m) = self.target.managed() {
            if let Some((o, c)) = self
                .target
                .product
                .object_store_footprint(&m.ws.manifest, &m.ws.dir)?
            {
                v["object_store"] = o;
                if let Some(c) = c {
                    v["cache"] = c;
                }
            }
        }
        Ok(Some(v))
    }
    fn data_dir(&self) -> Option<PathBuf> {
        self.target.data_dir()
    }
    fn http_get(&self, path: &str) -> Result<String> {
        let url = format!("{}{path}", self.endpoint());
        let resp = crate::product::admin_client()?
            .get(&url)
            .send()
            .map_err(|e| Error::failed(format!("{url} did not answer: {e}")))?;
        let status = resp.status();
        let body = resp
            .text()
            .map_err(|e| Error::failed(format!("{url} answered unreadably: {e}")))?;
        if !status.is_success() {
            return Err(Error::failed(format!("{url} answered {status}")));
        }
        Ok(body)
    }
    fn server_gone(&mut self) -> Option<String> {
        Bench::server_gone(self)
    }
    fn push_maintenance(&mut self, rec: MaintenanceRecord) -> Result<()> {
        self.target.push_maintenance(rec)
    }
    fn update_last_maintenance(&mut self, rec: MaintenanceRecord) -> Result<()> {
        self.target.update_last_maintenance(rec)?;
        self.run.manifest.data_state = self.target.data_state();
        self.run.save()
    }
}

/// An interrupted maintenance statement whose answer may still come (see
/// [`Bench::record_late_answer`]).
pub(super) struct LateAnswer {
    step: String,
    attempt: u32,
    reason: Option<String>,
    elapsed_seconds: f64,
    rx: std::sync::mpsc::Receiver<Result<Value>>,
}
