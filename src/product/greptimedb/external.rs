//! GreptimeDB's [`ExternalServer`]: its external servers.

use serde_json::Value;

use super::{topology, GreptimeDb};
use crate::error::Result;
use crate::product::ExternalServer;

impl ExternalServer for GreptimeDb {
    /// The password of `--user`, read only from the variable `--password-env` names.
    fn token_env_defaults(&self) -> Option<(Option<&'static str>, Option<&'static str>)> {
        Some((None, None))
    }
    fn secret_word(&self) -> &'static str {
        "password"
    }
    fn takes_basic_auth(&self) -> bool {
        true
    }
    fn probe_version(
        &self,
        c: &reqwest::blocking::Client,
        u: &str,
        _token: Option<&crate::tsbs::Secret>,
        _variant: Option<&str>,
    ) -> Result<(Option<String>, Value)> {
        let v: Option<Value> = c
            .get(format!("{u}/status"))
            .send()
            .ok()
            .filter(|r| r.status().is_success())
            .and_then(|r| r.json().ok());
        let version = v
            .as_ref()
            .and_then(|v| v["version"].as_str())
            .map(|s| s.trim_start_matches('v').to_string());
        if version.is_some() {
            // `/status` needs no credentials; `/v1/sql` does when the server has users: a
            // missing or wrong password fails here, before anything is written.
            Self::sql_with(c, u, None, "SHOW DATABASES")?;
        }
        Ok((version, v.unwrap_or(Value::Null)))
    }
    fn probe_topology(
        &self,
        c: &reqwest::blocking::Client,
        urls: &[String],
    ) -> Result<Option<Value>> {
        topology::probe(c, urls).map(Some)
    }
    fn probe_identity(&self) -> (&'static str, u16) {
        ("its /status does not report a GreptimeDB version", 4000)
    }
    fn metrics_path(&self) -> Option<&'static str> {
        Some("/metrics")
    }
    /// The process collector's names; releases before the switch to it (2023) prefixed them
    /// with `greptime_`.
    fn process_series(&self) -> crate::sampler::metrics::ProcessSeriesNames {
        crate::sampler::metrics::ProcessSeriesNames {
            rss: &[
                "process_resident_memory_bytes",
                "greptime_process_resident_memory_bytes",
            ],
            cpu: &[
                "process_cpu_seconds_total",
                "greptime_process_cpu_seconds_total",
            ],
            rss_fallback: None,
        }
    }
}
