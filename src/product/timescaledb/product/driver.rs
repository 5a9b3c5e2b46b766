//! TimescaleDB's [`Driver`]: its TSBS loader and query runner.

use std::path::Path;

use serde_json::{json, Value};

use super::{one_target, password_arg, TimescaleDb, DATA_FORMAT, FORMAT, FORMAT_POSTGRESQL};
use crate::dataset::{DataFormat, Profile};
use crate::error::Result;
use crate::product::timescaledb::{flags, tsbs, Mode};
use crate::product::{Driver, Product, ToolOptions};
use crate::queryset::QueryFormat;
use crate::tsbs::{LoadTarget, QueryTarget, ToolArg};

impl Driver for TimescaleDb {
    fn tsbs_loader(&self) -> &'static str {
        "tsbs_load_timescaledb"
    }
    fn tsbs_runner(&self) -> &'static str {
        "tsbs_run_queries_timescaledb"
    }
    fn data_format(&self) -> DataFormat {
        DATA_FORMAT
    }
    fn query_format(&self) -> QueryFormat {
        match self.mode {
            Mode::Timescaledb => FORMAT,
            Mode::Postgresql => FORMAT_POSTGRESQL,
        }
    }
    /// The published comparison: 8 workers x 10,000 rows.
    fn default_write(&self, profile: Profile) -> (u32, u32) {
        match profile {
            Profile::Manual => (8, 10_000),
            Profile::Smoke => (2, 3000),
        }
    }
    fn max_urls(&self) -> Option<usize> {
        Some(1)
    }
    /// `--chunk-time` and `--partitions` shape hypertables: PostgreSQL mode has none.
    fn check_bench_values(&self, values: &crate::product::ext::Values) -> Result<()> {
        flags::check_mode(self.mode == Mode::Timescaledb, &self.display_name(), values)
    }
    /// The mode's table layout (hypertables or plain tables), in TimescaleDB mode the
    /// hypertable's `--chunk-time` and `--partitions` when given (the loader's defaults
    /// otherwise: 12h, none; refused in postgresql mode before a run exists), the password in
    /// the environment only.
    fn load_target(&self, o: &ToolOptions) -> LoadTarget {
        let mut args = vec![
            ToolArg::Flag(
                "use-hypertable",
                (self.mode == Mode::Timescaledb).to_string(),
            ),
            ToolArg::Flag("use-jsonb-tags", "false".into()),
            ToolArg::Flag("in-table-partition-tag", "false".into()),
        ];
        if self.mode == Mode::Timescaledb {
            let (chunk_time, partitions) = flags::hypertable(&o.values);
            if let Some(c) = chunk_time {
                args.push(ToolArg::Flag("chunk-time", c));
            }
            if let Some(n) = partitions {
                args.push(ToolArg::Flag("partitions", n.to_string()));
            }
        }
        args.extend(password_arg(o));
        LoadTarget {
            basic_auth: None,
            single_url: Some("PostgreSQL"),
            args,
            connection: None,
        }
    }
    /// The runner executes any gob file, an influx one as empty SQL: check the labels first.
    fn check_query_file(&self, path: &Path) -> Result<Option<Value>> {
        let c = tsbs::check_query_file(path)?;
        Ok(Some(json!({"queries": c.queries, "labels": c.labels})))
    }
    /// `--host=H --port=P --user=U` from the endpoint (the workspace's or the `--url`); the
    /// database is `--db-name`, the target's.
    fn load_connection(&self, urls: &[String]) -> Result<Option<Vec<ToolArg>>> {
        let t = one_target(urls)?;
        Ok(Some(vec![
            ToolArg::Flag("host", t.host),
            ToolArg::Flag("port", t.port.to_string()),
            ToolArg::Flag("user", t.user),
        ]))
    }
    /// `--hosts=H --port=P`, and with more queries than workers `--burn-in=W --max-queries=N`
    /// for W workers: each worker's first query (which pays its connection setup, 3-7 ms)
    /// runs uncounted, so N-W of the file's N queries are measured. The runner skips the
    /// first W queries to finish, whichever worker ran them: one per worker whenever no
    /// worker finishes two before another finishes one (each pays its setup first).
    fn query_connection(
        &self,
        urls: &[String],
        queries: Option<u64>,
        workers: u32,
    ) -> Result<Option<Vec<ToolArg>>> {
        let t = one_target(urls)?;
        let mut a = vec![
            ToolArg::Flag("hosts", t.host),
            ToolArg::Flag("port", t.port.to_string()),
            ToolArg::Flag("user", t.user),
        ];
        let w = u64::from(workers.max(1));
        if let Some(n) = queries.filter(|n| *n > w) {
            let b = tsbs::BurnIn::new(w, n)?;
            a.push(ToolArg::Flag("burn-in", b.burn_in.to_string()));
            a.push(ToolArg::Flag("max-queries", b.max_queries.to_string()));
        }
        Ok(Some(a))
    }
    /// The password in the environment only (the user comes with the connection flags).
    fn query_target(&self, o: &ToolOptions) -> QueryTarget {
        QueryTarget {
            basic_auth: None,
            args: password_arg(o).into_iter().collect(),
            connection: None,
            per_query_latencies: false,
        }
    }
}
