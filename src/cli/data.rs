//! `tsbsctl data prepare|generate|list|inspect|verify` (thin: the logic is in `dataset`).

use serde_json::{json, Value};

use crate::cli::common::DatasetRootArgs;
use crate::context::Ctx;
use crate::dataset::{self, Compression, Dataset, GenerateRequest, Generator};
use crate::environment::TsbsEnv;
use crate::error::Result;
use crate::output::Outcome;

/// The six spec flags and the profile (shared with the benchmark commands, whose record
/// serializes them: declared in [`crate::bench::flags`]).
pub use crate::bench::flags::SpecArgs;

#[derive(Debug, clap::Subcommand)]
pub enum DataCmd {
    /// Create (or find) a logical dataset: writes only dataset.json, no data.
    Prepare {
        #[command(flatten)]
        spec: SpecArgs,
        /// Name the dataset (default: an id derived from the spec).
        #[arg(long, value_name = "ID")]
        dataset_id: Option<String>,
        #[command(flatten)]
        root: DatasetRootArgs,
    },
    /// Generate a serialization of a dataset with tsbs_generate_data (reused when present),
    /// or with --only queries a query set for it (tsbs_generate_queries needs only the
    /// dataset's spec, never its data files).
    Generate {
        /// What to generate: the data (default) or a query set (`queries`).
        #[arg(long, value_enum, default_value = "data")]
        only: Only,
        /// Serialization to generate: a format a product's loader reads (influx: GreptimeDB and
        /// InfluxDB 3; timescaledb: TimescaleDB). Every format of a dataset has the same id and
        /// the same rows. Required for data.
        #[arg(long, value_name = "FORMAT")]
        format: Option<String>,
        #[command(flatten)]
        queries: QueryArgs,
        /// How to store it (default: as already stored, else none).
        #[arg(long, value_enum)]
        compression: Option<Compression>,
        #[command(flatten)]
        spec: SpecArgs,
        /// Name the dataset (default: an id derived from the spec).
        #[arg(long, value_name = "ID")]
        dataset_id: Option<String>,
        /// Generate again even when a completed variant exists.
        #[arg(long)]
        regenerate: bool,
        #[command(flatten)]
        root: DatasetRootArgs,
    },
    /// List datasets and their completed formats (never reads the data).
    List {
        #[command(flatten)]
        root: DatasetRootArgs,
    },
    /// Show a dataset's spec and its format manifests (never reads the data).
    Inspect {
        #[arg(long, value_name = "ID")]
        dataset_id: String,
        #[command(flatten)]
        root: DatasetRootArgs,
    },
    /// Recompute every checksum of a dataset's formats.
    Verify {
        #[arg(long, value_name = "ID")]
        dataset_id: String,
        /// Only this format (default: all).
        #[arg(long, value_name = "FORMAT")]
        format: Option<String>,
        #[command(flatten)]
        root: DatasetRootArgs,
    },
}

/// What `data generate` makes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Only {
    /// A stored serialization of the dataset (`--format`).
    Data,
    /// A query set of the dataset for one product's query format (`--product`).
    Queries,
}

/// The query-set flags of `data generate --only queries`.
#[derive(Debug, Clone, Default, clap::Args)]
pub struct QueryArgs {
    /// --only queries: the product whose query format the set is in (a product command's
    /// name, e.g. greptimedb; an unknown one is refused with the list).
    #[arg(long, value_name = "PRODUCT")]
    pub product: Option<String>,
    /// --only queries: the product's variant when its query format depends on it (TimescaleDB:
    /// --edition postgresql for plain PostgreSQL queries).
    #[arg(long, value_name = "VARIANT")]
    pub edition: Option<String>,
    /// --only queries: a query type of the set (repeatable; default: every type).
    #[arg(long = "query-type", value_name = "TYPE")]
    pub query_types: Vec<String>,
    /// --only queries: queries per type (default: the profile's count).
    #[arg(long, value_name = "N", allow_negative_numbers = true)]
    pub queries: Option<i64>,
    /// --only queries: queries of one type, TYPE=N (repeatable).
    #[arg(long = "query-count", value_name = "TYPE=N")]
    pub query_counts: Vec<String>,
    /// --only queries: extend this published query set of the dataset (its id) with the
    /// given types or counts: a new set, staged beside it and published with one rename,
    /// reusing its files of the unchanged types; the set itself is left as it is.
    #[arg(long, value_name = "QUERY_SET_ID")]
    pub extend: Option<String>,
}

impl QueryArgs {
    fn any(&self) -> bool {
        self.product.is_some()
            || self.edition.is_some()
            || !self.query_types.is_empty()
            || self.queries.is_some()
            || !self.query_counts.is_empty()
            || self.extend.is_some()
    }
}

fn root_of(ctx: &Ctx, args: &DatasetRootArgs) -> Result<crate::paths::Root> {
    ctx.root
        .clone()
        .with_dataset_root(args.dataset_root.as_deref())
}

pub fn run(ctx: &Ctx, cmd: DataCmd) -> Result<Outcome> {
    let command = ctx.command_line();
    let reporter = ctx.reporter.as_ref();
    match cmd {
        DataCmd::Prepare {
            spec,
            dataset_id,
            root,
        } => {
            crate::bounds::scale(spec.scale)?;
            let root = root_of(ctx, &root)?;
            let (ds, reused) = Dataset::prepare(
                &root,
                dataset_id.as_deref(),
                &spec.overrides(),
                &command,
                reporter,
            )?;
            let mut data = ds.to_json();
            data["reused"] = json!(reused);
            let human = format!(
                "Dataset {}: {}\nPath: {}\n",
                if reused { "reused" } else { "prepared" },
                ds.id,
                ds.dir.display()
            );
            Ok(Outcome::new(data, human))
        }
        DataCmd::Generate {
            only: Only::Queries,
            format,
            queries,
            compression,
            spec,
            dataset_id,
            regenerate,
            root,
        } => {
            if format.is_some() || compression.is_some() || regenerate {
                return Err(crate::error::Error::invalid(
                    "--format, --compression and --regenerate apply to data, not --only queries",
                )
                .with_hint("name the query format by its product: --product greptimedb"));
            }
            crate::bounds::scale(spec.scale)?;
            let root = root_of(ctx, &root)?;
            crate::cli::queries::generate(ctx, &root, dataset_id.as_deref(), &spec, &queries)
        }
        DataCmd::Generate {
            only: Only::Data,
            format,
            queries,
            compression,
            spec,
            dataset_id,
            regenerate,
            root,
        } => {
            if queries.any() {
                return Err(crate::error::Error::invalid(
                    "--product, --edition, --query-type, --queries, --query-count and --extend apply to --only queries",
                )
                .with_hint("add --only queries to generate a query set"));
            }
            let format = format.ok_or_else(|| {
                crate::error::Error::invalid("data generate needs --format").with_hint(format!(
                    "e.g. --format influx; formats: {}",
                    crate::product::data_formats()
                        .iter()
                        .map(|f| f.name)
                        .collect::<Vec<_>>()
                        .join(", ")
                ))
            })?;
            crate::bounds::scale(spec.scale)?;
            let root = root_of(ctx, &root)?;
            let generatable = crate::product::data_formats();
            dataset::validate_format(&format, &generatable)?;
            let ds = Dataset::resolve(&root, dataset_id.as_deref(), &spec.overrides())?;
            let req = GenerateRequest {
                format,
                compression,
                regenerate,
                generatable,
            };
            let state_root = ctx.root.clone();
            let mut gen = move || -> Result<Generator> {
                let env = TsbsEnv::load(&state_root, None)?;
                Generator::from_env(&env, "tsbs_generate_data")
            };
            let sf = dataset::ensure_generated(&ds, &req, &mut gen, &command, reporter)?;
            let mut data = sf.to_json();
            data["dataset_path"] = json!(ds.dir);
            data["spec"] = ds.spec.to_value();
            let human = format!(
                "Dataset {}: {} ({}, {})\nData: {}\nRows: {}\nSHA-256: {}\n",
                if sf.reused { "reused" } else { "generated" },
                sf.dataset_id,
                sf.format,
                sf.compression.as_str(),
                sf.path.display(),
                sf.rows,
                sf.sha256
            );
            Ok(Outcome::new(data, human))
        }
        DataCmd::List { root } => {
            let root = root_of(ctx, &root)?;
            let (list, warnings) = dataset::list(&root)?;
            for w in &warnings {
                reporter.warn(w);
            }
            let mut items = Vec::new();
            let mut human = String::new();
            for ds in &list {
                // What a killed generation left goes whenever a command looks at it.
                dataset::sweep_dataset_leftovers(ds, reporter);
                let formats = dataset::completed_formats(ds);
                let names: Vec<&str> = formats.keys().map(String::as_str).collect();
                human.push_str(&format!(
                    "{}\t{}\t{}\n",
                    ds.id,
                    if names.is_empty() {
                        "-".to_string()
                    } else {
                        names.join(",")
                    },
                    ds.dir.display()
                ));
                let mut v = ds.to_json();
                v["formats"] = json!(names);
                items.push(v);
            }
            if list.is_empty() {
                human = format!("No datasets under {}\n", root.datasets().display());
            }
            Ok(Outcome::new(
                json!({"dataset_root": root.datasets(), "datasets": items}),
                human,
            ))
        }
        DataCmd::Inspect { dataset_id, root } => {
            let root = root_of(ctx, &root)?;
            let ds = Dataset::open(&root, &dataset_id)?;
            let mut formats = serde_json::Map::new();
            for f in ds.format_names()? {
                formats.insert(f.clone(), dataset::variant_json(&ds.format_dir(&f))?);
            }
            let mut data = ds.to_json();
            data["formats"] = Value::Object(formats.clone());
            let mut human = format!(
                "Dataset: {}\nPath: {}\nSpec: {}\n",
                ds.id,
                ds.dir.display(),
                ds.spec.to_value()
            );
            for (f, v) in &formats {
                human.push_str(&format!(
                    "Format {f}: {} {} rows={} bytes={} sha256={}\n",
                    v["status"].as_str().unwrap_or("?"),
                    v["compression"].as_str().unwrap_or("-"),
                    v["rows"],
                    v["stored"]["bytes"],
                    v["stored"]["sha256"].as_str().unwrap_or("-"),
                ));
            }
            // Its query sets (`data generate --only queries`, bench runs), and when each was
            // generated or extended.
            let sets = crate::queryset::list_sets(&root, &ds.id);
            for q in &sets {
                human.push_str(&format!(
                    "Query set {} ({}): created {}{}\n",
                    q["query_set_id"].as_str().unwrap_or("?"),
                    q["format"].as_str().unwrap_or("?"),
                    q["created_at"].as_str().unwrap_or("?"),
                    q["extended_from"]["query_set_id"]
                        .as_str()
                        .map(|b| format!(", extended from {b}"))
                        .unwrap_or_default()
                ));
                for (t, n) in q["query_counts"].as_object().into_iter().flatten() {
                    human.push_str(&format!(
                        "  {t}: {n} queries, generated {}\n",
                        q["generated_at"][t].as_str().unwrap_or("(not recorded)")
                    ));
                }
            }
            data["query_sets"] = json!(sets);
            Ok(Outcome::new(data, human))
        }
        DataCmd::Verify {
            dataset_id,
            format,
            root,
        } => {
            let root = root_of(ctx, &root)?;
            let ds = Dataset::open(&root, &dataset_id)?;
            let variants = dataset::verify(
                &ds,
                format.as_deref(),
                &crate::product::data_formats(),
                &command,
                reporter,
            )?;
            let mut human = String::new();
            for v in &variants {
                human.push_str(&format!(
                    "Verified {} ({}): {} rows, SHA-256 {}\n",
                    v.dataset_id, v.format, v.rows, v.sha256
                ));
            }
            Ok(Outcome::new(
                json!({
                    "dataset_id": ds.id,
                    "dataset_path": ds.dir,
                    "variants": variants.iter().map(|v| v.to_json()).collect::<Vec<_>>(),
                }),
                human,
            ))
        }
    }
}
