//! The database work around a load and the row counts after it: the part of
//! [`Product`](super::Product) that the load phase (`src/bench/phases/load.rs`), the bench plan
//! and the integrity checks ask.

use serde_json::Value;

use super::{
    AfterLoad, CountFailed, CountRequest, LoadCount, LoadRun, Named, PartitionedLoad, Partitioning,
};
use crate::error::{Error, Result};

/// Before and after the loader, on the running server (managed or external), and counting the
/// rows it stored.
pub trait Loading: Named {
    /// Before a load, on the running server (PostgreSQL: no other session on the database).
    /// `Some`: what was done, recorded as step `before-load` and passed to [`Loading::after_load`].
    fn before_load(&self, _endpoint: &str, _database: &str) -> Result<Option<Value>> {
        Ok(None)
    }
    /// Before the loader, managed or external: the database work of `mode` its loader cannot
    /// do (InfluxDB 2's buckets). `true`: done; the loader only writes (`--do-create-db=false`).
    fn prepare_database(
        &self,
        _endpoint: &str,
        _db: &str,
        _mode: crate::tsbs::DatabaseMode,
        _token: Option<&str>,
    ) -> Result<bool> {
        Ok(false)
    }
    /// `--partitions`/`--partition-column` against the dataset's use case and scale, before
    /// anything is made (exit 2). Only products whose [`super::ext::BenchExt::partitioning`]
    /// asks for one are asked.
    fn check_partitioning(&self, _p: &Partitioning, _use_case: &str, _scale: u64) -> Result<()> {
        Err(Error::invalid(format!(
            "{} has no partitioned tables",
            self.product_display_name()
        )))
    }
    /// Before the loader, managed or external: the database by `mode`, then the table split
    /// into regions, with exactly the schema the loader would have made. Returns what was
    /// done (recorded as step `create-table`); the loader then only writes (`--do-create-db=false`).
    fn create_partitioned(&self, _req: &PartitionedLoad) -> Result<Value> {
        Err(Error::invalid(format!(
            "{} has no partitioned tables",
            self.product_display_name()
        )))
    }
    /// After a load's row count: where each region of `table` is and how many rows it holds
    /// (`None`: nothing to say), read until the regions hold the `loaded` rows where the
    /// server's statistics lag. Recorded as step `regions`.
    fn region_report(
        &self,
        _endpoint: &str,
        _database: &str,
        _table: &str,
        _loaded: u64,
    ) -> Result<Option<Value>> {
        Ok(None)
    }
    /// After a load's row count, on the running server (PostgreSQL: the tags count, ANALYZE,
    /// the SQL footprint). `Some`: recorded as step `after-load`; its `footprint` object goes
    /// into the footprint step (the run's storage) where the data-directory walk has nothing.
    fn after_load(&self, _req: &AfterLoad) -> Result<Option<Value>> {
        Ok(None)
    }

    /// `SELECT count(*) FROM table` in `database`.
    fn count_rows(&self, endpoint: &str, database: &str, table: &str) -> Result<u64>;
    /// Row count of `table` and, where the product counts in pieces, how it was obtained.
    fn count_rows_detailed(&self, req: &CountRequest) -> Result<(u64, Option<Value>)> {
        self.count_rows(req.endpoint, req.database, req.table)
            .map(|n| (n, None))
    }
    /// The row count of a table after a load of `expected` rows into it. Default: one count
    /// decides. A product whose count moves after a load (InfluxDB 3) counts until it can
    /// trust the reading, and says what it waited for and, when the count differs, why.
    fn count_after_load(
        &self,
        req: &CountRequest,
        expected: u64,
        load: LoadRun<'_>,
    ) -> std::result::Result<LoadCount, CountFailed> {
        let _ = (expected, load);
        self.count_rows_detailed(req)
            .map(|(rows, method)| LoadCount {
                rows,
                method,
                wait: None,
                mismatch: None,
            })
            .map_err(|e| Box::new((e, None)))
    }
}
