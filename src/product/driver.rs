//! The TSBS tools of a product: the part of [`Product`](super::Product) that the bench request
//! and phases (`src/bench/`), the tools' command lines (`src/tsbs/command.rs`) and the query
//! sets ask.

use std::path::Path;

use serde_json::Value;

use super::{ext, ToolOptions};
use crate::dataset::DataFormat;
use crate::error::Result;

/// The loader and the query runner: their formats, default write parameters and
/// product-specific arguments, and whether a benchmark of this product can run at all.
pub trait Driver {
    /// The TSBS loader and query runner of this product (`<tsbs>/bin/<name>`).
    fn tsbs_loader(&self) -> &'static str;
    fn tsbs_runner(&self) -> &'static str;
    /// The data format the loader reads (`tsbs_generate_data --format`) and its row layout.
    fn data_format(&self) -> DataFormat {
        DataFormat::Influx
    }
    /// The query format its runner reads.
    fn query_format(&self) -> crate::queryset::QueryFormat;
    /// Default loader workers and batch size for a profile (DESIGN.md, Benchmark runs).
    fn default_write(&self, profile: crate::dataset::Profile) -> (u32, u32);
    /// The most `--url`s a benchmark of this product takes (`None`: any number).
    fn max_urls(&self) -> Option<usize> {
        None
    }
    /// Refuses `bench <product>` while the product's benchmark phases are not built (exit 2,
    /// before anything is written), rather than a run that is bound to fail.
    fn check_benchmarkable(&self) -> Result<()> {
        Ok(())
    }
    /// Refuses (exit 2) resolved values of its own bench flags ([`ext::BenchExt::resolve`])
    /// that this variant cannot take (a managed workspace's variant is known only from its
    /// manifest, so this is asked once the target is known, before it is locked).
    fn check_bench_values(&self, _values: &ext::Values) -> Result<()> {
        Ok(())
    }
    /// The loader's product-specific part.
    fn load_target(&self, o: &ToolOptions) -> crate::tsbs::LoadTarget;
    /// The query runner's product-specific part.
    fn query_target(&self, o: &ToolOptions) -> crate::tsbs::QueryTarget;
    /// The loader's own connection flags for `urls` (set as [`crate::tsbs::LoadTarget::connection`]).
    /// `None`: the HTTP loaders' `--urls=` and `--gzip=false`.
    fn load_connection(&self, _urls: &[String]) -> Result<Option<Vec<crate::tsbs::ToolArg>>> {
        Ok(None)
    }
    /// The runner's own connection flags for `urls`, for a query file of `queries` queries
    /// run by `workers` workers (set as [`crate::tsbs::QueryTarget::connection`]). `None`:
    /// `--urls=`.
    fn query_connection(
        &self,
        _urls: &[String],
        _queries: Option<u64>,
        _workers: u32,
    ) -> Result<Option<Vec<crate::tsbs::ToolArg>>> {
        Ok(None)
    }
    /// Checks a query file is one this product's runner executes as meant, before it runs
    /// (`Some`: what was found, recorded in the step). Default: nothing to check.
    fn check_query_file(&self, _path: &Path) -> Result<Option<Value>> {
        Ok(None)
    }
}
