//! InfluxDB 2's [`ManagedServer`]: how its managed server is started, watched and reached.

use std::path::Path;

use serde_json::{json, Value};

use super::{api, classify_log, setup, InfluxDb2, Session, ORG};
use crate::error::{Error, Result};
use crate::product::{Distribution, ManagedServer, ServerCommand, CONFIG_FILE};
use crate::server::{Probe, Timing};
use crate::workspace_manifest::WorkspaceManifest;

impl ManagedServer for InfluxDb2 {
    fn server_command(
        &self,
        _ws: &WorkspaceManifest,
        dir: &Path,
        install_dir: &Path,
    ) -> Result<ServerCommand> {
        Ok(ServerCommand {
            program: install_dir.join(self.binary_name()),
            args: vec![],
            env: vec![(
                "INFLUXD_CONFIG_PATH".into(),
                dir.join(CONFIG_FILE).to_string_lossy().into_owned(),
            )],
            // The workspace's config decides: no INFLUXD_* from the caller's shell.
            env_remove: std::env::vars()
                .map(|(k, _)| k)
                .filter(|k| k.starts_with("INFLUXD_") && k != "INFLUXD_CONFIG_PATH")
                .collect(),
        })
    }
    fn log_rules(&self) -> crate::logscan::LogRules {
        crate::logscan::LogRules {
            classify: classify_log,
            fails_run: |s| {
                use crate::logscan::Severity;
                matches!(s, Severity::Fatal | Severity::Panic | Severity::Crash)
            },
            note: None,
        }
    }
    /// A token the server logs is redacted on its way to the log.
    fn output_filter(&self) -> Option<crate::server::OutputFilter> {
        let r = crate::redact::Redactor::new();
        let token = self.session().token;
        Some(crate::server::OutputFilter(std::sync::Arc::new(
            move |line: &str| {
                let l = r.redact(line);
                match &token {
                    Some(t) => l.replace(t.expose(), "<redacted>"),
                    None => l,
                }
            },
        )))
    }
    fn readiness_probe(&self, endpoint: &str) -> Probe {
        Probe::Get {
            url: format!("{endpoint}/health"),
        }
    }
    /// The workspace was set up at prepare: its token opens it (checked here, once).
    fn check_serving(
        &self,
        ws: &WorkspaceManifest,
        ws_dir: &Path,
        endpoint: &str,
        _pid: u32,
    ) -> Result<Option<Value>> {
        let token = setup::read_token(ws_dir)?;
        let org = ws.extra["org"].as_str().unwrap_or(ORG).to_string();
        let api = api::Api::new(endpoint, Some(token.expose()))?;
        if api.setup_allowed()? {
            return Err(Error::integrity(format!(
                "InfluxDB 2 workspace {} is not set up (its server allows onboarding)",
                ws.database_id
            ))
            .with_hint("remove the workspace and prepare it again"));
        }
        api.org_id(&org)?;
        *self.session.lock().unwrap_or_else(|e| e.into_inner()) = Session {
            token: Some(token),
            org: Some(org.clone()),
        };
        Ok(Some(json!({
            "org": org,
            "auth": "the workspace's operator token (secrets/operator-token)",
            "retention": "infinite",
            "storage_engine": "tsm1 + tsi1",
        })))
    }
    fn default_timing(&self) -> Timing {
        Timing {
            startup_timeout: std::time::Duration::from_secs(600),
            grace: std::time::Duration::from_secs(60),
            startup_wait: Some("it opens its TSM shards and TSI index"),
            // influxd 2.7 handles only os.Interrupt (kit/signals.WithStandardSignals): SIGTERM
            // ends it at once, without closing its engine (seen on a real 2.7.12: exit 143 in
            // 0.01 s, no shutdown lines); SIGINT stops its subsystems and exits 0.
            stop_signal: nix::sys::signal::Signal::SIGINT,
            ..Timing::default()
        }
    }
}
