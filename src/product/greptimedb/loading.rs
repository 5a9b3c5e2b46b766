//! GreptimeDB's [`Loading`]: the database work around a load, and its row counts.

use serde_json::Value;

use super::{partition, partitioned, GreptimeDb, DATABASE_NOT_FOUND, TABLE_NOT_FOUND};
use crate::error::{Error, Missing, Result};
use crate::product::{admin_client, Loading, PartitionedLoad, Partitioning};

impl Loading for GreptimeDb {
    /// A table or database that is not there is GreptimeDB's own code (4001, 4004), as
    /// [`Detail::NotFound`](crate::error::Detail::NotFound).
    fn count_rows(&self, endpoint: &str, database: &str, table: &str) -> Result<u64> {
        crate::ids::validate_sql_identifier("--table", table)?;
        let q = format!("SELECT count(*) FROM {table}");
        let out = Self::sql_coded(&admin_client()?, endpoint, Some(database), &q).map_err(
            |(e, code)| match code {
                Some(TABLE_NOT_FOUND) => e.not_found(Missing::Table(table.into())),
                Some(DATABASE_NOT_FOUND) => e.not_found(Missing::Database(database.into())),
                _ => e,
            },
        )?;
        out.pointer("/records/rows/0/0")
            .and_then(Value::as_u64)
            .ok_or_else(|| {
                Error::failed(format!(
                    "GreptimeDB answered count(*) of {table} without a number"
                ))
            })
    }
    fn check_partitioning(&self, p: &Partitioning, use_case: &str, scale: u64) -> Result<()> {
        partition::validate(p.partitions, &p.column, use_case, scale)
    }
    fn create_partitioned(&self, req: &PartitionedLoad) -> Result<Value> {
        partitioned::create(self, req)
    }
    fn region_report(
        &self,
        endpoint: &str,
        database: &str,
        table: &str,
        loaded: u64,
    ) -> Result<Option<Value>> {
        partitioned::report(self, endpoint, database, table, loaded)
    }
}
