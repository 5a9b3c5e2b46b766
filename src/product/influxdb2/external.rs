//! InfluxDB 2's [`ExternalServer`]: its external servers.

use serde_json::{json, Value};

use super::{api, InfluxDb2, TOKEN_ENV};
use crate::error::{Error, Result};
use crate::product::ExternalServer;
use crate::tsbs::Secret;

impl ExternalServer for InfluxDb2 {
    fn token_env_defaults(&self) -> Option<(Option<&'static str>, Option<&'static str>)> {
        Some((Some(TOKEN_ENV), None))
    }
    fn probe_version(
        &self,
        c: &reqwest::blocking::Client,
        url: &str,
        token: Option<&Secret>,
        _variant: Option<&str>,
    ) -> Result<(Option<String>, Value)> {
        let body: Option<Value> = c
            .get(format!("{}/health", url.trim_end_matches('/')))
            .send()
            .ok()
            .and_then(|r| r.json().ok());
        let version = body
            .as_ref()
            .filter(|b| b["name"] == "influxdb")
            .and_then(|b| b["version"].as_str())
            .map(|v| v.trim_start_matches('v').to_string())
            .filter(|v| v.starts_with("2."));
        // A version tells the product; the token must open it before anything is written.
        if version.is_some() {
            let t = token.ok_or_else(|| {
                Error::invalid(format!(
                    "InfluxDB 2 at {url} needs a token, and ${TOKEN_ENV} is not set"
                ))
                .with_hint(format!(
                    "export {TOKEN_ENV} with an all-access token of the server's organisation"
                ))
            })?;
            api::Api::new(url, Some(t.expose()))?.orgs()?;
            self.remember_token(Some(t));
        }
        Ok((version, json!({ "health": body })))
    }
    fn probe_identity(&self) -> (&'static str, u16) {
        ("its /health does not report an InfluxDB 2 version", 8086)
    }
    fn metrics_path(&self) -> Option<&'static str> {
        Some("/metrics")
    }
}
