//! InfluxDB 2's [`Loading`]: the database work around a load, and its row counts.

use serde_json::Value;

use super::{api, InfluxDb2, TOKEN_ENV};
use crate::error::{Error, Result};
use crate::product::{CountRequest, Loading, DEFAULT_COUNT_TIMEOUT};

impl Loading for InfluxDb2 {
    fn count_rows(&self, endpoint: &str, database: &str, table: &str) -> Result<u64> {
        self.count_rows_detailed(&CountRequest {
            endpoint,
            database,
            table,
            window: None,
            token: None,
            timeout: DEFAULT_COUNT_TIMEOUT,
        })
        .map(|(n, _)| n)
    }
    fn count_rows_detailed(&self, req: &CountRequest) -> Result<(u64, Option<Value>)> {
        let token = self.token_for(req.token)?;
        let a = api::Api::new(req.endpoint, Some(token.expose()))?;
        let (n, how) = api::count_rows(&a, req.database, req.table, req.window, req.timeout)?;
        Ok((n, Some(how)))
    }
    /// The bucket by `mode`, over `/api/v2/buckets` (the loader's creator does nothing):
    /// create (refused when it exists, as TSBS's create mode is), reuse (created when
    /// missing), reset (deleted, then created). The loader then only writes.
    fn prepare_database(
        &self,
        endpoint: &str,
        database: &str,
        mode: crate::tsbs::DatabaseMode,
        token: Option<&str>,
    ) -> Result<bool> {
        use crate::tsbs::DatabaseMode;
        let token = self.token_for(token)?;
        self.remember_token(Some(&token));
        let a = api::Api::new(endpoint, Some(token.expose()))?;
        let existing = a.bucket(database)?;
        let org_id = match (&existing, self.session().org) {
            (Some((_, org)), _) => org.clone(),
            (None, Some(name)) => a.org_id(&name)?,
            (None, None) => match a.orgs()?.as_slice() {
                [(id, _)] => id.clone(),
                many => {
                    return Err(Error::invalid(format!(
                        "the token sees {} organisations, so the one to create bucket {database:?} in is unclear",
                        many.len()
                    ))
                    .with_hint(format!("create the bucket first (then --database-mode reuse), or use a token of one organisation in {TOKEN_ENV}")))
                }
            },
        };
        match (mode, &existing) {
            (DatabaseMode::Create, Some(_)) => {
                return Err(Error::failed(format!(
                    "bucket {database:?} exists: aborting (--database-mode create)"
                ))
                .with_hint(format!(
                    "load into it with --database-mode reuse, or drop it with --database-mode reset --confirm-reset {database}"
                )))
            }
            (DatabaseMode::Reset, Some((id, _))) => {
                a.delete_bucket(id)?;
                a.create_bucket(&org_id, database)?;
            }
            (DatabaseMode::Reuse, Some(_)) => {}
            (_, None) => a.create_bucket(&org_id, database)?,
        }
        // The loader names the organisation by id (`org=` is not escaped by it).
        self.session.lock().unwrap_or_else(|e| e.into_inner()).org = Some(org_id);
        Ok(true)
    }
}
