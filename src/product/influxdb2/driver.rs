//! InfluxDB 2's [`Driver`]: its TSBS loader and query runner.

use super::{InfluxDb2, LOAD_INFLUX2};
use crate::dataset::Profile;
use crate::error::{Error, Result};
use crate::product::{Driver, ToolOptions};
use crate::queryset::QueryFormat;
use crate::tsbs::{LoadTarget, QueryTarget, ToolArg};

impl Driver for InfluxDb2 {
    fn tsbs_loader(&self) -> &'static str {
        LOAD_INFLUX2
    }
    fn tsbs_runner(&self) -> &'static str {
        crate::product::greptimedb::RUN_QUERIES_GREPTIME
    }
    fn query_format(&self) -> QueryFormat {
        QueryFormat::Influx
    }
    /// The report's 8 workers x 3,000 rows (its manual, `tsbs_load_influx2`).
    fn default_write(&self, profile: Profile) -> (u32, u32) {
        match profile {
            Profile::Manual => (8, 3000),
            Profile::Smoke => (2, 3000),
        }
    }
    fn load_target(&self, o: &ToolOptions) -> LoadTarget {
        self.remember_token(o.auth_token.as_ref());
        LoadTarget::default()
    }
    /// `--urls`, gzip on (the report's), the organisation and the token (in `config.json`).
    fn load_connection(&self, urls: &[String]) -> Result<Option<Vec<ToolArg>>> {
        let s = self.session();
        let token = self.token_for(None)?;
        let org = s.org.ok_or_else(|| {
            Error::failed("the InfluxDB 2 organisation to load into is not known yet")
        })?;
        Ok(Some(vec![
            ToolArg::Flag("urls", urls.join(",")),
            ToolArg::Flag("gzip", "true".into()),
            ToolArg::Flag("org-id", org),
            ToolArg::Secret("auth-token", token),
        ]))
    }
    fn query_target(&self, o: &ToolOptions) -> QueryTarget {
        self.remember_token(o.auth_token.as_ref());
        QueryTarget {
            basic_auth: None,
            args: vec![ToolArg::Flag("is-v2", "true".into())],
            connection: None,
            per_query_latencies: true,
        }
    }
    fn query_connection(
        &self,
        urls: &[String],
        _queries: Option<u64>,
        _workers: u32,
    ) -> Result<Option<Vec<ToolArg>>> {
        let token = self.token_for(None)?;
        Ok(Some(vec![
            ToolArg::Flag("urls", urls.join(",")),
            ToolArg::Secret("auth-token", token),
        ]))
    }
}
