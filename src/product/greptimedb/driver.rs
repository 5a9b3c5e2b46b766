//! GreptimeDB's [`Driver`]: its TSBS loader and query runner.

use super::GreptimeDb;
use crate::dataset::Profile;
use crate::product::{Driver, ToolOptions};
use crate::queryset::QueryFormat;

impl Driver for GreptimeDb {
    fn tsbs_loader(&self) -> &'static str {
        super::LOAD_GREPTIME
    }
    fn tsbs_runner(&self) -> &'static str {
        super::RUN_QUERIES_GREPTIME
    }
    fn query_format(&self) -> QueryFormat {
        QueryFormat::Greptime
    }
    fn default_write(&self, profile: Profile) -> (u32, u32) {
        match profile {
            Profile::Manual => (6, 3000),
            Profile::Smoke => (2, 3000),
        }
    }
    /// `tsbs_load_greptime --urls=<u1,u2,..>`: worker i writes to URL i mod n, the database
    /// is listed, created and dropped at the first (`process.go`, `creator.go`). Credentials
    /// are its `user` and `password` keys (Basic auth on DDL and writes when both are set).
    fn load_target(&self, _o: &ToolOptions) -> crate::tsbs::LoadTarget {
        crate::tsbs::LoadTarget {
            single_url: None,
            args: Vec::new(),
            connection: None,
            basic_auth: Some(crate::tsbs::credentials::BasicAuthStyle::ConfigKeys {
                user: "user",
                password: "password",
            }),
        }
    }
    /// `tsbs_run_queries_influx` against `/v1/sql`: worker i queries URL i mod n. It has no
    /// auth flag for GreptimeDB (only `--is-v2`'s `Token`): credentials go in its URLs.
    fn query_target(&self, _o: &ToolOptions) -> crate::tsbs::QueryTarget {
        crate::tsbs::QueryTarget {
            per_query_latencies: true,
            basic_auth: Some(crate::tsbs::credentials::BasicAuthStyle::UrlUserinfo),
            ..Default::default()
        }
    }
}
