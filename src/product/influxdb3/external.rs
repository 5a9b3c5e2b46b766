//! InfluxDB 3's [`ExternalServer`]: its external servers.

use serde_json::{json, Value};

use super::InfluxDb3;
use crate::error::{Error, Result};
use crate::product::ExternalServer;

impl ExternalServer for InfluxDb3 {
    fn token_env_defaults(&self) -> Option<(Option<&'static str>, Option<&'static str>)> {
        Some((Some("INFLUXDB3_AUTH_TOKEN"), Some("INFLUXDB3_ADMIN_TOKEN")))
    }
    fn probe_version(
        &self,
        c: &reqwest::blocking::Client,
        u: &str,
        token: Option<&crate::tsbs::Secret>,
        edition: Option<&str>,
    ) -> Result<(Option<String>, Value)> {
        let mut r = c.get(format!("{u}/ping"));
        if let Some(t) = token {
            r = r.bearer_auth(t.expose());
        }
        let resp = r.send().ok();
        let header = resp.as_ref().and_then(|r| {
            r.headers()
                .get("x-influxdb-version")
                .and_then(|h| h.to_str().ok())
                .map(str::to_string)
        });
        let build = resp.as_ref().and_then(|r| {
            r.headers()
                .get("x-influxdb-build")
                .and_then(|h| h.to_str().ok())
                .map(str::to_string)
        });
        if let (Some(b), Some(want)) = (&build, edition) {
            if !b.eq_ignore_ascii_case(want) {
                return Err(Error::integrity(format!(
                    "InfluxDB 3 at {u} reports X-Influxdb-Build: {b}, not the --edition {want} asked for"
                ))
                .with_hint(format!(
                    "pass --edition {} (or point --url at an InfluxDB 3 {} server)",
                    b.to_ascii_lowercase(),
                    if want == "core" { "Core" } else { "Enterprise" }
                )));
            }
        }
        let body: Option<Value> = resp.and_then(|r| r.json().ok());
        let version = body
            .as_ref()
            .and_then(|b| b["version"].as_str().map(str::to_string))
            .or(header);
        Ok((version, json!({"ping": body, "build": build})))
    }
    fn probe_identity(&self) -> (&'static str, u16) {
        ("its /ping does not report an InfluxDB 3 version", 8181)
    }
    fn metrics_path(&self) -> Option<&'static str> {
        Some("/metrics")
    }
    /// InfluxDB 3 registers no process collector: its memory is jemalloc's statistics, one
    /// gauge with a `stat` label (`influxdb3/src/commands/serve/jemalloc.rs`); its `resident`
    /// pages are the allocator's memory, read when no process series is there. No CPU series.
    fn process_series(&self) -> crate::sampler::metrics::ProcessSeriesNames {
        use crate::sampler::metrics::{LabelledGauge, ProcessSeriesNames};
        ProcessSeriesNames {
            rss_fallback: Some(LabelledGauge {
                name: "jemalloc_memstats_bytes",
                label: ("stat", "resident"),
                shown: "jemalloc_memstats_bytes{stat=\"resident\"}",
                note: "the memory allocator's resident pages, not the whole process's RSS",
            }),
            ..ProcessSeriesNames::PROCESS_COLLECTOR
        }
    }
    /// iox_query's `OomTrackingMemoryPool` counts every `ResourcesExhausted` of the pool
    /// (core/iox_query/src/memory_pool.rs, 3.10.1); a real 3.10.1 with a 2 MiB pool counted
    /// 170 during seven failing types, whose runner only saw "unexpected EOF".
    fn query_oom_series(&self) -> Option<&'static str> {
        Some("query_datafusion_query_execution_ooms_total")
    }
}
