//! An external server (`bench <product> --url`): the part of [`Product`](super::Product) that
//! the bench plan and target (`src/bench/plan.rs`, `target.rs`, `timeline.rs`) ask.

use serde_json::Value;

use super::check_http_url;
use crate::error::Result;

/// What an external target's `--url` may be, how its server is probed and sampled, and the
/// tokens or credentials it takes.
pub trait ExternalServer {
    /// The default environment variables of the auth and admin tokens (`None`: the product
    /// reads no token; a `None` inside: that token is read only from a variable the command
    /// names, or not at all).
    fn token_env_defaults(&self) -> Option<(Option<&'static str>, Option<&'static str>)> {
        None
    }
    /// What the auth secret is called in messages ("token"; PostgreSQL: "password").
    fn secret_word(&self) -> &'static str {
        "token"
    }
    /// Whether an external server of this product takes `--user NAME --password-env VAR`
    /// (HTTP basic auth; the password is then the auth secret of the token seam, and the
    /// credentials reach tsbsctl's requests and the TSBS tools through
    /// [`crate::tsbs::credentials`]).
    fn takes_basic_auth(&self) -> bool {
        false
    }
    /// Checks an external target's `--url` before anything is touched (exit 2 when it is not
    /// one this product takes) and returns the SQL database it names, if it names one
    /// (PostgreSQL URLs do). Default: an absolute HTTP(S) URL with a host, naming none.
    fn check_external_url(&self, url: &str) -> Result<Option<String>> {
        check_http_url(url).map(|()| None)
    }
    /// The HTTP path an external server answers when healthy, asked before
    /// [`ExternalServer::probe_version`] (`None`: the product's probe is its own health
    /// check, e.g. a SQL connection). Default: `/health`.
    fn external_health_path(&self) -> Option<&'static str> {
        Some("/health")
    }
    /// Asks an external server at `url` (already healthy, when the product has a
    /// [`ExternalServer::external_health_path`]) for its version: the version as
    /// the product names it (`None`: the server is not this product) and the details to record.
    fn probe_version(
        &self,
        client: &reqwest::blocking::Client,
        url: &str,
        token: Option<&crate::tsbs::Secret>,
        variant: Option<&str>,
    ) -> Result<(Option<String>, Value)>;
    /// What the external servers at `urls` (already probed) say about the deployment they
    /// belong to, recorded with the run (`None`: the product has nothing to say). A product
    /// refuses URLs that reach different deployments (exit 2).
    fn probe_topology(
        &self,
        _client: &reqwest::blocking::Client,
        _urls: &[String],
    ) -> Result<Option<Value>> {
        Ok(None)
    }
    /// How the probe tells this product (for the refusal of a server that is not it) and
    /// its default HTTP port.
    fn probe_identity(&self) -> (&'static str, u16);
    /// Where the server serves Prometheus metrics with its process series
    /// (`process_resident_memory_bytes`, `process_cpu_seconds_total`): how an external
    /// server's resources are sampled. `None`: unknown for external servers.
    fn metrics_path(&self) -> Option<&'static str> {
        None
    }
    /// Which series of those metrics say the server process's memory and CPU.
    fn process_series(&self) -> crate::sampler::metrics::ProcessSeriesNames {
        crate::sampler::metrics::ProcessSeriesNames::PROCESS_COLLECTOR
    }
    /// The counter of the times the server's query engine ran out of its memory pool (an
    /// allocation refused: one query can count many),
    /// in its metrics ([`ExternalServer::metrics_path`]): read before and after each query
    /// type, so that a type that failed while it rose is "OOM" however the runner ended (a
    /// real InfluxDB 3 cuts the answer short, and its runner panics "unexpected EOF").
    fn query_oom_series(&self) -> Option<&'static str> {
        None
    }
}
