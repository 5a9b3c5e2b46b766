//! The managed server as steps of a bench run: each start is a `server` attempt with its own
//! log (`logs/server-NNN.log`), ended by the stop that records how the server went down.

use serde_json::json;

use crate::error::{ErrorKind, Result};
use crate::output::Warning;
use crate::run::data::{self, ServerData, ServerEnded};
use crate::run::Status;
use crate::server::Server;

use super::Bench;

impl Bench<'_> {
    pub(super) fn start_server(&mut self) -> Result<()> {
        if !self.target.is_managed() {
            self.start_external_timeline();
            return Ok(());
        }
        if self.server.is_some() {
            return Ok(());
        }
        self.server_attempt += 1;
        let n = self.server_attempt;
        let (log, rel) = self.run.log(&format!("server-{n:03}.log"));
        self.run.begin("server", n, Some(&rel), None, None)?;
        let timing = self.plan.server.timing;
        let res = (|| -> Result<Server> {
            let mut spec = self.target.server_spec(&self.root, log, timing)?;
            if let Some(m) = self.target.managed() {
                crate::workspace::shape_spec(
                    self.target.product.as_ref(),
                    &m.ws,
                    &mut spec,
                    self.plan.server.shape,
                )?;
            }
            let mut s = Server::start(spec, self.reporter())?;
            // The shape the server really got (what the kernel holds), once per run.
            if let Some(r) = s.shape_record() {
                self.run.manifest.target.extra.insert(
                    "server_shape".into(),
                    serde_json::to_value(r).unwrap_or_default(),
                );
                self.run.save()?;
            }
            s.wait_ready_reporting(self.reporter())?;
            // What the server says it runs with is what the run records; a difference from
            // the workspace stops the run here (the server is stopped on the way out).
            match self.target.check_serving(s.endpoint(), s.pid()) {
                Ok(Some(found)) => {
                    let st = &mut self.run.manifest.target.extra;
                    let entry = st.entry("server_settings").or_insert_with(|| json!({}));
                    if let (Some(obj), Some(found)) = (entry.as_object_mut(), found.as_object()) {
                        for (k, v) in found {
                            obj.insert(k.clone(), v.clone());
                        }
                    }
                    self.run.save()?;
                }
                Ok(None) => {}
                Err(e) => {
                    s.stop();
                    return Err(e);
                }
            }
            Ok(s)
        })();
        match res {
            Ok(s) => {
                self.reporter().event(&crate::output::Event::ServerReady {
                    label: s.label().to_string(),
                    endpoint: s.endpoint().to_string(),
                });
                self.run.event(crate::run::StepEvent {
                    seq: 0,
                    step: "server".into(),
                    attempt: n,
                    status: Status::Running,
                    at: crate::manifest::now_rfc3339(),
                    log: None,
                    results: None,
                    reason: None,
                    data: Some(data::value(&ServerData {
                        pid: Some(s.pid()),
                        endpoint: Some(s.endpoint().to_string()),
                        cgroup: Some(json!(s.shape_record())),
                        end: ServerEnded::default(),
                    })),
                })?;
                self.start_timeline(s.pid());
                self.server = Some(s);
                Ok(())
            }
            Err(e) => {
                let status = if e.kind == ErrorKind::Interrupted {
                    Status::Interrupted
                } else {
                    Status::Failed
                };
                self.run
                    .end("server", n, status, Some(e.message.clone()), None)?;
                Err(e)
            }
        }
    }

    /// Stops the managed server (normally), recording how it ended.
    pub(super) fn stop_server(&mut self) -> Result<()> {
        // The last sample is of the running server, before it is told to stop.
        self.timeline.stop();
        let Some(mut s) = self.server.take() else {
            return Ok(());
        };
        let out = s.stop_reporting(self.ctx.reporter.as_ref());
        let n = self.server_attempt;
        let unexpected = out.unexpected;
        // A slow stop does not undo what completed before it: a forced kill is a warning on
        // the run (and marks later footprints), an unexpected exit a failure.
        let status = if unexpected {
            Status::Failed
        } else {
            Status::Completed
        };
        let oom = s.events().iter().find_map(|e| match &e.kind {
            crate::server::EventKind::OutOfMemory { evidence } => Some(evidence.clone()),
            _ => None,
        });
        let reason = if unexpected {
            Some(format!(
                "the server exited unexpectedly ({}); see its log",
                match &oom {
                    Some(e) => format!("out of memory: {e}"),
                    None => describe(out.code, out.signal),
                }
            ))
        } else {
            None
        };
        let mut data = ServerEnded {
            events: Some(json!(s.events())),
            outcome: Some(json!(out)),
            stop_seconds: Some(out.stop_ms as f64 / 1000.0),
            warning: None,
        };
        let seconds = out.stop_ms as f64 / 1000.0;
        let warning = if out.forced {
            Some(Warning::ServerStopForced { seconds })
        } else if out.killed {
            Some(Warning::ServerKilledInShutdown {
                how: describe(out.code, out.signal),
                seconds,
            })
        } else {
            None
        };
        if let Some(w) = warning {
            self.reporter().warning(&w);
            data.warning = Some(w.to_string());
            // Later footprints are marked as taken after an unclean stop.
            self.forced_stop = true;
        }
        self.run
            .end("server", n, status, reason, Some(data::value(&data)))?;
        self.record_late_answer()
    }

    /// `Some(reason)` when the managed server has died.
    pub(super) fn server_gone(&mut self) -> Option<String> {
        let s = self.server.as_mut()?;
        s.check_running().err().map(|e| e.message)
    }

    pub(super) fn endpoint(&self) -> String {
        match &self.server {
            Some(s) => s.endpoint().to_string(),
            None => self.target.endpoint(),
        }
    }
}

fn describe(code: Option<i32>, signal: Option<i32>) -> String {
    match (code, signal) {
        (Some(c), _) => format!("exit code {c}"),
        (None, Some(s)) => format!("signal {s}"),
        _ => "unknown status".into(),
    }
}
