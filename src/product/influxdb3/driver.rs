//! InfluxDB 3's [`Driver`]: its TSBS loader and query runner.

use super::{flags, InfluxDb3};
use crate::dataset::Profile;
use crate::product::{Driver, ToolOptions};
use crate::queryset::QueryFormat;

impl Driver for InfluxDb3 {
    fn tsbs_loader(&self) -> &'static str {
        super::LOAD_INFLUX3
    }
    fn tsbs_runner(&self) -> &'static str {
        super::RUN_QUERIES_INFLUX3
    }
    fn query_format(&self) -> QueryFormat {
        QueryFormat::Influx3
    }
    fn default_write(&self, profile: Profile) -> (u32, u32) {
        match profile {
            Profile::Manual => (16, 25000),
            Profile::Smoke => (2, 3000),
        }
    }
    /// `tsbs_load_influx3`: durability flags and optional tokens. `--admin-token` falls back
    /// to the auth token when no admin token is given (reference §3.3).
    fn load_target(&self, o: &ToolOptions) -> crate::tsbs::LoadTarget {
        use crate::tsbs::ToolArg;
        let mut args = vec![
            ToolArg::Flag("no-sync", flags::no_sync(&o.values).to_string()),
            ToolArg::Flag(
                "accept-partial",
                flags::accept_partial(&o.values).to_string(),
            ),
        ];
        let auth = o.auth_token.as_ref().filter(|t| !t.is_empty());
        if let Some(t) = auth {
            args.push(ToolArg::Secret("auth-token", t.clone()));
        }
        if let Some(t) = o.admin_token.as_ref().filter(|t| !t.is_empty()).or(auth) {
            args.push(ToolArg::Secret("admin-token", t.clone()));
        }
        crate::tsbs::LoadTarget {
            basic_auth: None,
            single_url: None,
            args,
            connection: None,
        }
    }
    /// `tsbs_run_queries_influx3`, with the auth token when one is set.
    fn query_target(&self, o: &ToolOptions) -> crate::tsbs::QueryTarget {
        crate::tsbs::QueryTarget {
            basic_auth: None,
            args: o
                .auth_token
                .iter()
                .filter(|t| !t.is_empty())
                .map(|t| crate::tsbs::ToolArg::Secret("auth-token", t.clone()))
                .collect(),
            connection: None,
            per_query_latencies: true,
        }
    }
}
