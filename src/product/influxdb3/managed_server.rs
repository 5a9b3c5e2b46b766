//! InfluxDB 3's [`ManagedServer`]: how its managed server is started, watched and reached.

use std::path::Path;

use super::{
    expiry_warning, license, object_store, renewal_hint, rfc3339, trial_expiry, Edition, InfluxDb3,
    TRIAL_DAYS,
};
use crate::error::{Error, Result};
use crate::product::{Distribution, ManagedServer, ServerCommand};
use crate::server::{Probe, Timing};
use crate::workspace_manifest::WorkspaceManifest;

/// The serve flags of the query pool, the Parquet (3.11: file) cache and the forced-snapshot
/// threshold, in that order, before 3.11 and from 3.11.
const OLD_MEMORY_FLAGS: [&str; 3] = [
    "exec-mem-pool-bytes",
    "parquet-mem-cache-size",
    "force-snapshot-mem-threshold",
];
const NEW_MEMORY_FLAGS: [&str; 3] = [
    "exec-mem-pool-size",
    "file-cache-size",
    "force-snapshot-mem-size",
];

impl ManagedServer for InfluxDb3 {
    /// Tracing logs, with a word on the warning every wide query logs.
    fn log_rules(&self) -> crate::logscan::LogRules {
        crate::logscan::LogRules {
            note: Some("`cannot split dedup operation, fanout too wide` (WARN, `iox_query::physical_optimizer::dedup::split`) is logged by the real server for every query over many files and is harmless."),
            ..crate::logscan::LogRules::TRACING
        }
    }

    fn server_command(
        &self,
        ws: &WorkspaceManifest,
        dir: &Path,
        install_dir: &Path,
    ) -> Result<ServerCommand> {
        let port = ws.ports.get("http").copied().ok_or_else(|| {
            Error::integrity(format!("workspace {} has no http port", ws.database_id))
        })?;
        let node = ws.extra["node_id"]
            .as_str()
            .map(str::to_string)
            .unwrap_or_else(|| Self::node_id(&ws.database_id));
        // On S3 the bucket must answer before the server starts (the real one fails its
        // catalog load otherwise), and the keys go in its environment only.
        let s3 = object_store::of(ws)?;
        let mut args = vec!["serve".to_string()];
        match &s3 {
            Some(l) => {
                l.probe()?;
                args.extend(object_store::server_args(l));
            }
            None => {
                args.push("--object-store=file".into());
                args.push(format!("--data-dir={}", dir.join("data").display()));
            }
        }
        args.extend([
            format!("--node-id={node}"),
            format!("--http-bind=127.0.0.1:{port}"),
            "--without-auth".into(),
            // A benchmark run stays offline-clean: no upload to telemetry.v3.influxdata.com.
            "--disable-telemetry-upload".into(),
        ]);
        if self.edition == Edition::Enterprise {
            if let Some(c) = ws.extra["cluster_id"].as_str() {
                args.push(format!("--cluster-id={c}"));
            }
            if let Some(p) = ws.extra["license"]["path"].as_str() {
                args.push(format!("--license-file={p}"));
            }
        }
        Ok(ServerCommand {
            program: install_dir.join(self.binary_name()),
            args,
            env: match &s3 {
                Some(l) => object_store::server_env(l)?,
                None => vec![],
            },
            // The workspace decides: no INFLUXDB3_* override (object store, auth, licence
            // e-mail) from the caller's shell, and no token reaches the server; nor any AWS_*
            // (the S3 client reads AWS_ENDPOINT, AWS_SESSION_TOKEN, ... from it).
            // The variables the keys come from stay with tsbsctl too.
            env_remove: std::env::vars()
                .map(|(k, _)| k)
                .filter(|k| k.starts_with("INFLUXDB3_") || k.starts_with("AWS_"))
                .chain(s3.iter().flat_map(|l| l.source_vars()))
                .collect(),
        })
    }

    fn check_can_serve(&self, ws: &WorkspaceManifest) -> Result<()> {
        let status = ws.extra["license"]["status"].as_str().unwrap_or("unknown");
        if self.edition == Edition::Enterprise && status != license::ACTIVE {
            let id = &ws.database_id;
            return Err(Error::invalid(format!(
                "InfluxDB 3 Enterprise workspace {id} has no active licence (licence status: {status})"
            ))
            .with_hint(format!(
                "activate it first: `tsbsctl influxdb3 activate --database-id {id} --license-type trial` \
                 (or home; the e-mail comes from $INFLUXDB3_LICENSE_EMAIL or --license-email-stdin), \
                 or `tsbsctl influxdb3 activate --database-id {id} --license-file PATH`"
            )));
        }
        // An expired trial: queries fail and the server does not restart (docs
        // admin/license.md), so nothing is started.
        if let Some(exp) = trial_expiry(&ws.extra["license"]) {
            if exp <= time::OffsetDateTime::now_utc() {
                let id = &ws.database_id;
                return Err(Error::invalid(format!(
                    "the trial licence of InfluxDB 3 Enterprise workspace {id} expired at {} ({TRIAL_DAYS} days after its activation)",
                    rfc3339(exp)
                ))
                .with_hint(renewal_hint(id)));
            }
        }
        Ok(())
    }

    /// The server may print a licence e-mail, a licence key or a token: every line is
    /// redacted before it reaches the log.
    fn output_filter(&self) -> Option<crate::server::OutputFilter> {
        let r = crate::redact::Redactor::new();
        Some(crate::server::OutputFilter(std::sync::Arc::new(
            move |line: &str| r.redact(line),
        )))
    }

    fn readiness_probe(&self, endpoint: &str) -> Probe {
        Probe::Get {
            url: format!("{endpoint}/health"),
        }
    }

    /// The three sizes the server takes as a share of the memory it sees (query pool 20%,
    /// Parquet cache 20%, forced snapshot 50%: src serve.rs, the same from 3.0 to 3.10), given
    /// as that share of the shape. sysinfo's `cgroup_limits`, which it sizes them from, reads
    /// the root's limit only: a real 3.10.1 under `--memory 2G` had a 4.7 GiB pool, 20% of the
    /// host. Bytes (`Nb`) from 3.2; before, a bare number of megabytes (10^6 bytes). 3.11
    /// renamed all three and wants a unit (docs-v2 79332006, config-options.md "Size option
    /// values": `b` is one; the old names stay as deprecated aliases with a start-up warning).
    fn shape_memory(
        &self,
        ws: &WorkspaceManifest,
        _ws_dir: &Path,
        memory_bytes: u64,
        args: &mut Vec<String>,
    ) -> Result<()> {
        let size = |pct: u64| {
            let b = memory_bytes / 100 * pct;
            if super::version_at_least(&ws.version, 3, 2) {
                format!("{b}b")
            } else {
                (b / 1_000_000).to_string()
            }
        };
        let names = if super::version_at_least(&ws.version, 3, 11) {
            NEW_MEMORY_FLAGS
        } else {
            OLD_MEMORY_FLAGS
        };
        args.extend(
            names
                .iter()
                .zip([20, 20, 50])
                .map(|(name, pct)| format!("--{name}={}", size(pct))),
        );
        Ok(())
    }

    /// The query engine's memory pool in force, as the server reports it
    /// (`datafusion_mem_pool_bytes{state="limit"}` of `/metrics`), and whether tsbsctl sized it
    /// to the shape (its flag on the server's command line): the pool decides whether a heavy
    /// query is refused ("Resources exhausted", the published OOM cells) or grows the server
    /// until a memory limit kills it.
    fn check_serving(
        &self,
        _ws: &WorkspaceManifest,
        _ws_dir: &Path,
        endpoint: &str,
        pid: u32,
    ) -> Result<Option<serde_json::Value>> {
        let pool = crate::sampler::read_metric(
            &format!("{endpoint}/metrics"),
            &None,
            "datafusion_mem_pool_bytes",
            Some(("state", "limit")),
            std::time::Duration::from_secs(10),
        );
        let sized = crate::proc::argv(pid).iter().any(|a| {
            [OLD_MEMORY_FLAGS[0], NEW_MEMORY_FLAGS[0]]
                .iter()
                .any(|name| a.starts_with(&format!("--{name}=")))
        });
        let say = |b: u64| crate::render::bytes(minijinja::Value::from(b));
        let note = match (pool, sized) {
            (Some(p), true) => format!(
                "query memory pool {} as the server reports it; tsbsctl gave it, its Parquet cache and its forced-snapshot threshold the shares (20%, 20%, 50%) of the --memory shape they take of a machine, which the server would have taken of the host's memory",
                say(p)
            ),
            (Some(p), false) => format!(
                "query memory pool {} as the server reports it (its default, 20% of the memory it sees)",
                say(p)
            ),
            (None, _) => "query memory pool unknown (the server's /metrics has no datafusion_mem_pool_bytes)".to_string(),
        };
        Ok(Some(serde_json::json!({
            "query_memory_pool_bytes": pool,
            "query_memory_pool_sized_to_shape": sized,
            "memory_note": note,
        })))
    }

    fn default_timing(&self) -> Timing {
        Timing {
            startup_timeout: std::time::Duration::from_secs(600),
            // A graceful stop flushes the WAL buffer (and snapshots only if one is due).
            grace: std::time::Duration::from_secs(60),
            // 92.6 s for 305 MB of WAL in a real 3.10.1 dev build.
            startup_wait: Some(
                "it replays its WAL, where Core keeps all data no snapshot has persisted",
            ),
            ..Timing::default()
        }
    }
    fn serve_warning(&self, ws: &WorkspaceManifest) -> Option<String> {
        expiry_warning(ws)
    }
}
