//! The flags of a bench command, declared once: each group below derives both `clap::Args`
//! (the CLI flattens it) and serde (the run manifest's `flags`), so the record is the parsed
//! command line itself and `runs rerun` reads it back into the same type. This is also the
//! one place a [`Request`] is built from them. A new flag is one field here plus its line in
//! [`Flags::request`].
//!
//! The field order is the recorded key order (serde_json keeps it): `phase`, the common
//! flags, then the product's ([`ProductFlags`]); it is also the order of `--help`. A product's
//! declared flags ([`crate::product::ext`], [`OwnFlags`]) are not fields here: the product
//! resolves them, and [`Flags::to_value`] records them in the shape it declares. Secrets are
//! never recorded: only the names of the environment variables that hold them, and
//! [`REDACTED`] for a hold token. The groups shared with other commands (locks, the dataset
//! spec and root, server timing) live here too because the core may not name `crate::cli`;
//! the CLI re-exports them.

use std::path::PathBuf;

use serde::{Deserialize, Serialize, Serializer};

use super::{watch, Phase, Request};
use crate::dataset::{Compression, Profile, SpecOverrides};
use crate::error::{Error, Result};
use crate::product::ext::{BenchExt, CoreValues, Record, Values};
use crate::tsbs::DatabaseMode;

/// What a hold token is recorded as.
pub const REDACTED: &str = "<redacted>";

/// The recorded flags of a bench command.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
#[serde(default)]
pub struct Flags {
    pub phase: Option<String>,
    #[serde(flatten)]
    pub common: CommonFlags,
    #[serde(flatten)]
    pub product: ProductFlags,
}

/// Target and workload flags both products share.
#[derive(Debug, Clone, Default, clap::Args, Serialize, Deserialize)]
#[serde(default)]
pub struct CommonFlags {
    /// Managed workspace to benchmark (its server is started and stopped by tsbsctl).
    #[arg(long, value_name = "ID")]
    pub database_id: Option<String>,
    /// External server instead of a managed workspace. Repeatable where the product's TSBS
    /// tools take several (frontends of one cluster; their workers take them in turn).
    #[arg(long = "url", value_name = "URL")]
    pub urls: Vec<String>,
    /// SQL database (managed: the workspace's; external: default benchmark).
    #[arg(long, value_name = "NAME")]
    pub database: Option<String>,
    /// What the loader does with an existing database (managed default: create).
    #[arg(long, value_name = "MODE", value_enum)]
    pub database_mode: Option<DatabaseMode>,
    /// Confirms a reset: the SQL database name, exactly.
    #[arg(long, value_name = "NAME")]
    pub confirm_reset: Option<String>,
    #[command(flatten)]
    #[serde(flatten)]
    pub spec: SpecArgs,
    /// The dataset to load (default: the profile's; query phases: the workspace's loaded one).
    #[arg(long, value_name = "ID")]
    pub dataset_id: Option<String>,
    #[command(flatten)]
    #[serde(flatten)]
    pub dataset_root: DatasetRootArgs,
    /// Store a newly generated dataset compressed (streamed to the loader's stdin).
    #[arg(long, value_enum)]
    pub compression: Option<Compression>,
    /// Only these query types (repeatable).
    #[arg(long = "query-type", value_name = "T")]
    pub query_types: Vec<String>,
    /// Queries per type (default: the profile's counts).
    #[arg(long, value_name = "N", allow_negative_numbers = true)]
    pub queries: Option<i64>,
    /// Count for one type, TYPE=N (repeatable).
    #[arg(long = "query-count", value_name = "T=N")]
    pub query_counts: Vec<String>,
    /// Loader workers (default: the product's for the profile).
    #[arg(long, value_name = "N")]
    pub load_workers: Option<u32>,
    /// Rows per write request (default: the product's for the profile).
    #[arg(long, value_name = "N")]
    pub batch_size: Option<u32>,
    /// Query-runner workers (default 1).
    #[arg(long, value_name = "N")]
    pub query_workers: Option<u32>,
    /// Run the whole query phase N times in this run (every type once per pass, in the same
    /// order, on the same server), so the spread between passes is measured (default 1).
    // Recorded only when given: older records keep their keys.
    #[arg(long, value_name = "N", allow_negative_numbers = true)]
    #[serde(skip_serializing_if = "Option::is_none")]
    pub passes: Option<i64>,
    /// Cold queries: before each query type (each pass), stop the managed server, drop the
    /// OS page cache (`sync`, then 3 into /proc/sys/vm/drop_caches: root only) and start the
    /// server again, so no type reads what the one before it cached.
    // Recorded only when given: older records keep their keys.
    #[arg(long)]
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub cold: bool,
    /// Run more queries of a type, in batches of fresh queries from the TSBS generator, until
    /// the 95% interval of its mean latency is within ± this share (e.g. 2%), or its
    /// --precision-budget is spent.
    #[arg(long, value_name = "PERCENT")]
    #[serde(skip_serializing_if = "Option::is_none")]
    pub target_precision: Option<String>,
    /// With --target-precision: the wall time one query type (per pass) may take at most, a
    /// Go duration (default 5m).
    // Recorded with its default applied when --target-precision is given.
    #[arg(long, value_name = "DURATION")]
    #[serde(skip_serializing_if = "Option::is_none")]
    pub precision_budget: Option<String>,
    /// After the timed passes, run every query once more with the runner's
    /// `--print-responses` and one worker, and keep a digest of each normalised answer in
    /// `answers.jsonl` (`runs report` compares them across databases). Not timed.
    // Recorded only when given: older records keep their keys.
    #[arg(long)]
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub check_answers: bool,
    /// Name of the run directory (default: UTC time, YYYYMMDDTHHMMSSZ).
    #[arg(long, value_name = "ID")]
    pub run_id: Option<String>,
    #[command(flatten)]
    #[serde(flatten)]
    pub timing: ServerTimingArgs,
    #[command(flatten)]
    #[serde(flatten)]
    pub shape: ServerShapeArgs,
    /// Refuse to measure on a busy machine: before the load and before the queries, other
    /// processes must use at most 10% of the host's CPU over 2 s, with nothing swapping.
    #[arg(long)]
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub require_quiet: bool,
    /// Seconds a loader or query runner may go without progress in its periodic reports
    /// before it counts as stalled (default 300; the loader reports every 10 s).
    // Recorded with its default applied (what the run used): see `Flags::record`.
    #[arg(long, value_name = "SECONDS", allow_negative_numbers = true)]
    pub stall_timeout: Option<f64>,
    /// On a stall: warn (terminal and events) and go on, or stop the tool (the run fails).
    // Recorded with its default applied.
    #[arg(long, value_enum, value_name = "ACTION")]
    pub on_stall: Option<watch::OnStall>,
    #[command(flatten)]
    #[serde(flatten)]
    pub lock: LockArgs,
    /// The environment variable holding an external server's token, for a product whose own
    /// flags do not name one (the generic `bench <product> --token-env VAR`, which sets it):
    /// the name is recorded, never the token, as `auth_token_env` after the common keys
    /// (where the generic command has always recorded it), and only when given. A product
    /// that declares a flag of the same key (InfluxDB 3's `--auth-token-env`) records it in
    /// its own place instead ([`Flags::to_value`]).
    #[arg(skip)]
    #[serde(rename = "auth_token_env", skip_serializing_if = "Option::is_none")]
    pub token_env: Option<String>,
}

/// Flags of every command that takes a workspace lock.
#[derive(Debug, Clone, Default, clap::Args, Serialize, Deserialize)]
#[serde(default)]
pub struct LockArgs {
    /// Wait up to SECONDS for a busy lock instead of failing at once (exit 3).
    // At most a week (trial-run #1): a huge wait overflowed the deadline.
    #[arg(long, value_name = "SECONDS", value_parser = clap::value_parser!(u64).range(..=crate::bounds::MAX_WAIT_SECS))]
    pub wait: Option<u64>,
    /// Work inside a manual hold taken with `tsbsctl workspace lock` (its token). Visible to
    /// other local users in `ps`: prefer --hold-token-env or --hold-token-stdin.
    // Never serialized as itself: a record says only that a token was given.
    #[arg(long, value_name = "TOKEN")]
    #[serde(serialize_with = "redacted")]
    pub hold_token: Option<String>,
    /// Like --hold-token, with the token read from environment variable VAR.
    #[arg(long, value_name = "VAR", conflicts_with_all = ["hold_token", "hold_token_stdin"])]
    pub hold_token_env: Option<String>,
    /// Like --hold-token, with the token read from the first line of stdin.
    #[arg(long, conflicts_with = "hold_token")]
    pub hold_token_stdin: bool,
}

/// [`REDACTED`] for a given secret, `null` for none.
fn redacted<S: Serializer>(secret: &Option<String>, s: S) -> std::result::Result<S::Ok, S::Error> {
    secret.as_ref().map(|_| REDACTED).serialize(s)
}

/// The six spec flags and the profile (`data prepare|generate` and `bench`).
#[derive(Debug, Clone, Default, clap::Args, Serialize, Deserialize)]
#[serde(default)]
pub struct SpecArgs {
    /// Start from this workload profile (default: the stored spec of an existing
    /// --dataset-id, else manual).
    #[arg(long, value_enum)]
    pub profile: Option<Profile>,
    /// TSBS use case: cpu-only (the profiles'), devops (nine tables) or iot (readings and
    /// diagnostics; not InfluxDB 3's queries).
    #[arg(long, value_name = "NAME")]
    pub use_case: Option<String>,
    /// First timestamp, RFC 3339 as Go reads it: upper-case T and Z, or an offset such as
    /// +02:00 (profiles: 2023-06-11T00:00:00Z). Stored in UTC.
    #[arg(long, value_name = "TIME")]
    pub start: Option<String>,
    /// End timestamp, RFC 3339 as Go reads it, exclusive.
    #[arg(long, value_name = "TIME")]
    pub end: Option<String>,
    /// Number of hosts (manual: 4000, smoke: 10).
    #[arg(long, value_name = "HOSTS", allow_negative_numbers = true)]
    pub scale: Option<i64>,
    /// Random seed (profiles: 123).
    #[arg(long, value_name = "N", allow_negative_numbers = true)]
    pub seed: Option<i64>,
    /// Interval between two readings of a host, a Go duration (profiles: 10s).
    #[arg(long, value_name = "DURATION")]
    pub log_interval: Option<String>,
}

impl SpecArgs {
    pub fn overrides(&self) -> SpecOverrides {
        SpecOverrides {
            profile: self.profile,
            use_case: self.use_case.clone(),
            start: self.start.clone(),
            end: self.end.clone(),
            scale: self.scale,
            seed: self.seed,
            log_interval: self.log_interval.clone(),
        }
    }
}

/// `--dataset-root DIR` (else $TSBS_DATASET_ROOT, else <root>/datasets).
#[derive(Debug, Clone, Default, clap::Args, Serialize, Deserialize)]
#[serde(default)]
pub struct DatasetRootArgs {
    /// Where shared datasets live (default: $TSBS_DATASET_ROOT, else <root>/datasets).
    #[arg(long, value_name = "DIR")]
    pub dataset_root: Option<PathBuf>,
}

/// A number of seconds a person typed for a wait: finite, positive and at most a week
/// ([`crate::bounds::MAX_WAIT_SECONDS`]). `Err` says what is wrong with it.
pub fn seconds(raw: &str) -> std::result::Result<f64, String> {
    let max = crate::bounds::MAX_WAIT_SECONDS;
    match raw.trim().parse::<f64>() {
        Ok(s) if s.is_finite() && s > 0.0 && s <= max => Ok(s),
        _ => Err(format!(
            "must be a positive number of seconds, at most {max} (one week)"
        )),
    }
}

/// The clap value parser of [`seconds`]: a bad value exits 2 before anything is written
/// (`1e300` and `inf` would panic in `Duration::from_secs_f64`; a negative value must not
/// become a silent minimum), with a message that names the flag.
#[derive(Debug, Clone, Copy)]
pub struct Seconds;

impl clap::builder::TypedValueParser for Seconds {
    type Value = f64;

    fn parse_ref(
        &self,
        cmd: &clap::Command,
        arg: Option<&clap::Arg>,
        value: &std::ffi::OsStr,
    ) -> std::result::Result<f64, clap::Error> {
        let flag = arg
            .and_then(|a| a.get_long())
            .map(|l| format!("--{l}"))
            .unwrap_or_else(|| "the value".into());
        seconds(&value.to_string_lossy()).map_err(|why| {
            clap::Error::raw(
                clap::error::ErrorKind::ValueValidation,
                format!("{flag} {why}, e.g. {flag} 60\n"),
            )
            .with_cmd(cmd)
        })
    }
}

/// How long tsbsctl waits for a managed server: shared by `bench`, `serve` (and the checked
/// parser by `activate`).
#[derive(Debug, Clone, Copy, Default, clap::Args, Serialize, Deserialize)]
#[serde(default)]
pub struct ServerTimingArgs {
    /// Seconds to wait for a managed server to answer.
    #[arg(long, value_name = "SECONDS", value_parser = Seconds, allow_negative_numbers = true)]
    pub startup_timeout: Option<f64>,
    /// Seconds a managed server may take to stop after SIGTERM before SIGKILL; for a server
    /// that drains its work first (GreptimeDB), the seconds without progress (its log or CPU
    /// time growing) before SIGKILL.
    #[arg(long, value_name = "SECONDS", value_parser = Seconds, allow_negative_numbers = true)]
    pub stop_timeout: Option<f64>,
}

impl ServerTimingArgs {
    /// `timing` with the given waits in place of its defaults (already checked by [`seconds`]).
    pub fn apply(&self, mut timing: crate::server::Timing) -> crate::server::Timing {
        if let Some(s) = self.startup_timeout {
            timing.startup_timeout = std::time::Duration::from_secs_f64(s);
        }
        if let Some(s) = self.stop_timeout {
            timing.grace = std::time::Duration::from_secs_f64(s);
        }
        timing
    }
}

/// The machine shape a managed server runs in (its own cgroup): shared by `bench` and `serve`.
#[derive(Debug, Clone, Copy, Default, clap::Args, Serialize, Deserialize)]
#[serde(default)]
pub struct ServerShapeArgs {
    /// Hold a managed server to N CPUs: its own cgroup with a CPU-time quota of N CPUs on the
    /// first ceil(N) CPUs tsbsctl may use (root or a delegated cgroup; exit 2 otherwise).
    #[arg(long, value_name = "N", allow_negative_numbers = true)]
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cpus: Option<f64>,
    /// Hold a managed server to SIZE of memory, swap included (16GiB, 512MiB; K/M/G/T are
    /// binary, KB/MB/GB/TB decimal): above it the kernel's OOM killer ends the server, and the
    /// run says so.
    #[arg(long, value_name = "SIZE", value_parser = parse_size)]
    #[serde(skip_serializing_if = "Option::is_none")]
    pub memory: Option<u64>,
}

impl ServerShapeArgs {
    /// The shape asked for; `None` when neither flag was given.
    pub fn shape(&self) -> Option<crate::server::cgroup::Shape> {
        let s = crate::server::cgroup::Shape {
            cpus: self.cpus,
            memory_bytes: self.memory,
        };
        (!s.is_empty()).then_some(s)
    }
}

pub use crate::fsutil::parse_size;

/// The product-specific flags, recorded after the common ones (only the product's keys):
/// the values of the flags the product declares.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct ProductFlags {
    /// The flags a product declares itself ([`crate::product::ext`]), recorded as one object
    /// under the product's name, after every other key (see [`Flags::to_value`]).
    #[serde(skip)]
    pub own: Option<OwnFlags>,
}

/// A product's own flag values: as given, or as recorded (a [`Record::Nested`] record keeps
/// the resolved ones, a [`Record::Flat`] one the given ones, typed).
#[derive(Debug, Clone, Default)]
pub struct OwnFlags {
    pub product: &'static str,
    pub values: Values,
}

impl OwnFlags {
    /// The product's declared flags.
    fn ext(&self) -> Result<Option<&'static BenchExt>> {
        Ok(crate::product::resolve(self.product, None)?.bench_ext())
    }

    /// The values resolved by the product ([`crate::product::ext::BenchExt::resolve`]) for
    /// `phase`: the one step a command line and a recorded run go through (whether `phase`
    /// takes them is [`crate::bench::validate`]'s check, with the other phase rules).
    pub fn resolve(&self, phase: &str) -> Result<Values> {
        match self.ext()? {
            Some(x) => (x.resolve)(phase, &self.values),
            None if self.values.is_empty() => Ok(Default::default()),
            None => Err(Error::invalid(format!(
                "{} takes no flags of its own",
                crate::product::resolve(self.product, None)?.display_name()
            ))),
        }
    }

    /// What the run's record keeps, `resolved` being [`OwnFlags::resolve`]'s answer: the
    /// resolved values, or (a flat record) the given ones, typed.
    pub fn recorded(&self, resolved: &Values) -> Result<Values> {
        match self.ext()? {
            Some(x) if x.record == Record::Flat => self.given(),
            _ => Ok(resolved.clone()),
        }
    }

    /// The values given, typed as a record holds them.
    pub fn given(&self) -> Result<Values> {
        match self.ext()? {
            Some(x) => x.typed(&self.values),
            None => Ok(self.values.clone()),
        }
    }
}

impl Flags {
    /// The record of a parsed command line: the parsed groups themselves, with what the
    /// record has always normalised: `stall_timeout` and `on_stall` with their defaults
    /// applied (what the run used). The hold token is redacted when serialized.
    pub fn record(phase: Phase, mut common: CommonFlags, product: ProductFlags) -> Flags {
        common.stall_timeout = Some(common.stall_timeout.unwrap_or(watch::DEFAULT_STALL_SECS));
        common.on_stall = Some(common.on_stall.unwrap_or_default());
        if common.target_precision.is_some() && common.precision_budget.is_none() {
            common.precision_budget = Some(super::request::DEFAULT_PRECISION_BUDGET.into());
        }
        Flags {
            phase: Some(phase.as_str().to_string()),
            common,
            product,
        }
    }

    /// The recorded JSON (the manifest's `flags`): a product's own flags as one object under
    /// its name, last (only for a product that has them, so other records keep their keys),
    /// or, declared [`Record::Flat`], each at the top level after the common keys.
    pub fn to_value(&self) -> serde_json::Value {
        let mut v = serde_json::to_value(self).expect("bench flags serialize");
        let (Some(own), Some(m)) = (&self.product.own, v.as_object_mut()) else {
            return v;
        };
        match own.ext().ok().flatten() {
            Some(x) if x.record == Record::Flat => {
                // A declared key the common flags have too (`auth_token_env`, read back from a
                // record into both) is written in the product's place.
                let mut out: serde_json::Map<String, serde_json::Value> = m
                    .iter()
                    .filter(|(k, _)| x.flag(k).is_none())
                    .map(|(k, v)| (k.clone(), v.clone()))
                    .collect();
                // As given, typed (a value that is not of its kind was refused before a run).
                let given = x.typed(&own.values).unwrap_or_else(|_| own.values.clone());
                out.extend(x.flat_record(&given));
                *m = out;
            }
            _ => {
                m.insert(own.product.into(), own.values.clone().into());
            }
        }
        v
    }

    /// Reads recorded flags back (`runs rerun`) of a run of `product`; a value of the wrong
    /// kind is an integrity error: the manifest was changed outside tsbsctl.
    pub fn from_value(v: &serde_json::Value, product: &str) -> Result<Flags> {
        let edited = |e: String| {
            Error::integrity(format!(
                "the run manifest records flags tsbsctl cannot read: {e}"
            ))
            .with_hint("the manifest was changed by hand or by another tool version")
        };
        let mut f: Flags = serde_json::from_value(v.clone()).map_err(|e| edited(e.to_string()))?;
        // A product's own flags: the object under its name, or its keys at the top level.
        let Ok(entry) = crate::product::entry(product) else {
            return Ok(f);
        };
        let ext = (entry.make)(None).ok().and_then(|p| p.bench_ext());
        let record = v.as_object().cloned().unwrap_or_default();
        f.product.own = match ext {
            Some(x) if x.record == Record::Flat && !x.flags.is_empty() => Some(OwnFlags {
                product: entry.name,
                values: x.from_flat_record(&record).map_err(edited)?,
            }),
            _ => v
                .get(entry.name)
                .and_then(|o| o.as_object())
                .map(|values| OwnFlags {
                    product: entry.name,
                    values: values.clone(),
                }),
        };
        Ok(f)
    }

    /// The request these flags ask for in `phase` (the lock options, the rerun pins and the
    /// recorded `flags` are the caller's to set).
    pub fn request(&self, phase: Phase) -> Result<Request> {
        let c = &self.common;
        let own_resolved = match &self.product.own {
            Some(own) => own.resolve(phase.as_str())?,
            None => Default::default(),
        };
        // The product's basic-auth flags, if it declares them.
        let basic_auth = match &self.product.own {
            Some(own) => match own.ext()?.and_then(|x| x.basic_auth) {
                Some(b) => b.given(&own.values),
                None => (None, None),
            },
            None => (None, None),
        };
        // What the core reads of the product's given flags (the variant, token variables,
        // write settings), whichever flags give them.
        let core = match &self.product.own {
            Some(own) => match own.ext()? {
                Some(x) => (x.core)(&own.given()?),
                None => CoreValues::default(),
            },
            None => CoreValues::default(),
        };
        // The product's flags that run another installed version, if it declares them.
        let runtime = match &self.product.own {
            Some(own) => match own.ext()?.and_then(|x| x.version_override) {
                Some(o) => o.given(&own.values),
                None => (None, None),
            },
            None => (None, None),
        };
        Ok(Request {
            phase: Some(phase),
            database_id: c.database_id.clone(),
            urls: c.urls.clone(),
            // The variant: the declared flag's (InfluxDB 3's edition, TimescaleDB's mode).
            variant: core.variant,
            database: c.database.clone(),
            mode: c.database_mode,
            confirm_reset: c.confirm_reset.clone(),
            dataset_id: c.dataset_id.clone(),
            dataset_root: c.dataset_root.dataset_root.clone(),
            spec: c.spec.overrides(),
            compression: c.compression,
            query_types: c.query_types.clone(),
            queries: c.queries,
            query_counts: c.query_counts.clone(),
            load_workers: c.load_workers,
            batch_size: c.batch_size,
            query_workers: c.query_workers,
            passes: c.passes,
            cold: c.cold,
            target_precision: c.target_precision.clone(),
            precision_budget: c.precision_budget.clone(),
            check_answers: c.check_answers,
            run_id: c.run_id.clone(),
            no_sync: core.no_sync,
            // PostgreSQL's password and a declared basic-auth password go through the
            // auth-token seam.
            auth_token_env: core.auth_token_env.or(basic_auth.1).or(c.token_env.clone()),
            user: basic_auth.0,
            admin_token_env: core.admin_token_env,
            runtime_version: runtime.0,
            confirm_runtime: runtime.1,
            startup_timeout: c.timing.startup_timeout,
            stop_timeout: c.timing.stop_timeout,
            shape: c.shape.shape(),
            require_quiet: c.require_quiet,
            // Checked by the CLI; a recorded value out of range is refused, not a panic.
            count_timeout: core
                .count_timeout
                .and_then(|t| std::time::Duration::try_from_secs_f64(t).ok()),
            stall_timeout: c.stall_timeout,
            on_stall: c.on_stall,
            product_values: own_resolved,
            product_given: match &self.product.own {
                Some(own) => own.given()?,
                None => Default::default(),
            },
            ..Request::default()
        })
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    /// The table split into regions `product`'s resolved values in `req` ask for.
    pub(crate) fn partitioning(
        product: &str,
        req: &Request,
    ) -> Option<crate::product::Partitioning> {
        crate::product::resolve(product, None)
            .unwrap()
            .bench_ext()
            .and_then(|x| (x.partitioning)(&req.product_values))
    }

    /// GreptimeDB's declared flags, as given.
    fn greptimedb_given(v: serde_json::Value) -> OwnFlags {
        OwnFlags {
            product: "greptimedb",
            values: v.as_object().cloned().unwrap_or_default(),
        }
    }

    /// The recorded keys, in the order manifests have always had them (common, then the
    /// product's), and the values as the record writes them: the defaults of the stall
    /// flags applied, the hold token redacted.
    #[test]
    fn the_record_keeps_its_keys_order_and_values() {
        let common = CommonFlags {
            database_id: Some("ws1".into()),
            database_mode: Some(DatabaseMode::Reset),
            spec: SpecArgs {
                profile: Some(Profile::Smoke),
                ..SpecArgs::default()
            },
            compression: Some(Compression::Gzip),
            load_workers: Some(3),
            lock: LockArgs {
                hold_token: Some("s3cret-token".into()),
                ..LockArgs::default()
            },
            ..CommonFlags::default()
        };
        let product = ProductFlags {
            own: Some(greptimedb_given(serde_json::json!({"hot_runs": 2}))),
        };
        let f = Flags::record(Phase::All, common, product);
        let text = serde_json::to_string(&f.to_value()).unwrap();
        assert_eq!(
            text,
            concat!(
                r#"{"phase":"all","database_id":"ws1","urls":[],"database":null,"#,
                r#""database_mode":"reset","confirm_reset":null,"profile":"smoke","#,
                r#""use_case":null,"start":null,"end":null,"scale":null,"seed":null,"#,
                r#""log_interval":null,"dataset_id":null,"dataset_root":null,"#,
                r#""compression":"gzip","query_types":[],"queries":null,"query_counts":[],"#,
                r#""load_workers":3,"batch_size":null,"query_workers":null,"run_id":null,"#,
                r#""startup_timeout":null,"stop_timeout":null,"stall_timeout":300.0,"#,
                r#""on_stall":"warn","wait":null,"hold_token":"<redacted>","#,
                r#""hold_token_env":null,"hold_token_stdin":false,"table":null,"#,
                r#""strategy":null,"window":null,"confirm_timeout":null,"parallelism":null,"#,
                r#""flush_before_queries":false,"hot_runs":2,"greptime_version":null,"#,
                r#""confirm_version_override":null}"#
            )
        );
        // And back: the request a rerun builds is the one the command built. Its own flags
        // resolve through the product's step: `--hot-runs` is the analyze phase's.
        let back = Flags::from_value(&f.to_value(), "greptimedb").unwrap();
        let all = back.request(Phase::All).unwrap();
        assert_eq!(
            serde_json::Value::Object(all.product_values.clone()),
            serde_json::json!({"flush_before_queries": false})
        );
        assert_eq!(all.product_given["hot_runs"], 2);
        let req = back.request(Phase::Analyze).unwrap();
        assert_eq!(req.mode, Some(DatabaseMode::Reset));
        assert_eq!(req.spec.profile, Some(Profile::Smoke));
        assert_eq!(req.load_workers, Some(3));
        assert_eq!(req.product_values["hot_runs"], 2);
        assert_eq!(req.on_stall, Some(watch::OnStall::Warn));
        assert_eq!(req.stall_timeout, Some(watch::DEFAULT_STALL_SECS));
        assert_eq!(back.common.lock.hold_token.as_deref(), Some(REDACTED));
    }

    /// A TimescaleDB record: its keys after the common ones, the password as a variable name
    /// only, and back into the request `runs rerun` builds (mode, password variable,
    /// hypertable flags).
    #[test]
    fn a_timescaledb_record_round_trips() {
        let common = CommonFlags {
            urls: vec!["postgres://bench@10.0.0.5:5432/tsbs".into()],
            ..CommonFlags::default()
        };
        let product = ProductFlags {
            own: Some(OwnFlags {
                product: "timescaledb",
                values: serde_json::json!({
                    "mode": "timescaledb", "password_env": "TSBS_PG_PASSWORD",
                    "chunk_time": "6h", "partitions": "4"
                })
                .as_object()
                .cloned()
                .unwrap(),
            }),
        };
        let v = Flags::record(Phase::All, common, product).to_value();
        let text = serde_json::to_string(&v).unwrap();
        assert!(
            text.ends_with(r#""hold_token_stdin":false,"mode":"timescaledb","password_env":"TSBS_PG_PASSWORD","chunk_time":"6h","partitions":4}"#),
            "{text}"
        );
        assert!(
            v.get("edition").is_none() && v.get("table").is_none(),
            "{text}"
        );
        let req = Flags::from_value(&v, "timescaledb")
            .unwrap()
            .request(Phase::All)
            .unwrap();
        assert_eq!(req.variant.as_deref(), Some("timescaledb"));
        assert_eq!(req.auth_token_env.as_deref(), Some("TSBS_PG_PASSWORD"));
        assert_eq!(
            serde_json::Value::Object(req.product_values.clone()),
            serde_json::json!({"chunk_time": "6h", "partitions": 4})
        );
        assert_eq!(
            serde_json::Value::Object(req.write_settings()),
            serde_json::json!({"chunk_time": "6h", "partitions": 4})
        );
        // A record without them (another product's) asks for none.
        let req = Flags::default().request(Phase::All).unwrap();
        assert!(req.write_settings().is_empty());
    }

    /// GreptimeDB's `--partitions`/`--partition-column`: recorded only when given, under
    /// the key TimescaleDB's hypertable flag has too, and read back into the request's
    /// partitioning (`runs rerun` makes the same table).
    #[test]
    fn a_greptimedb_partitioned_record_round_trips() {
        let product = ProductFlags {
            own: Some(greptimedb_given(
                serde_json::json!({"partitions": "8", "partition_column": "hostname"}),
            )),
        };
        let v = Flags::record(Phase::All, CommonFlags::default(), product).to_value();
        let text = serde_json::to_string(&v).unwrap();
        assert!(
            text.ends_with(
                r#""confirm_version_override":null,"partitions":8,"partition_column":"hostname"}"#
            ),
            "{text}"
        );
        let req = Flags::from_value(&v, "greptimedb")
            .unwrap()
            .request(Phase::All)
            .unwrap();
        assert_eq!(
            partitioning("greptimedb", &req),
            Some(crate::product::Partitioning {
                partitions: 8,
                column: "hostname".into()
            })
        );
        assert_eq!(
            serde_json::Value::Object(req.write_settings()),
            serde_json::json!({"partitions": 8, "partition_column": "hostname", "flush_before_queries": false})
        );
        // Without them nothing is recorded or asked for.
        let v =
            Flags::record(Phase::All, CommonFlags::default(), ProductFlags::default()).to_value();
        assert!(v.get("partitions").is_none() && v.get("partition_column").is_none());
        let req = Flags::from_value(&v, "greptimedb")
            .unwrap()
            .request(Phase::All)
            .unwrap();
        assert_eq!(partitioning("greptimedb", &req), None);
    }

    /// Manifests written before a flag existed (every key absent) still read, as the
    /// flag's absence.
    #[test]
    fn an_old_record_without_keys_still_reads() {
        let f = Flags::from_value(
            &serde_json::json!({"phase": "load", "load_workers": 2}),
            "greptimedb",
        )
        .unwrap();
        assert_eq!(f.phase.as_deref(), Some("load"));
        assert_eq!(f.common.load_workers, Some(2));
        assert!(f.common.urls.is_empty() && !f.common.lock.hold_token_stdin);
        let req = f.request(Phase::Load).unwrap();
        assert_eq!(req.stall_timeout, None);
        assert_eq!(req.on_stall, None);
        assert!(!req.no_sync && !req.product_values.contains_key("chunk_time"));
        assert_eq!(
            req.product_values.get("flush_before_queries"),
            Some(&false.into())
        );
        assert!(req.product_values.get("table").is_none(), "{req:?}");
    }

    #[test]
    fn an_edited_record_is_an_integrity_error_not_a_guess() {
        let bad = serde_json::json!({"database_mode": "drop"});
        assert_eq!(
            Flags::from_value(&bad, "greptimedb")
                .unwrap_err()
                .exit_code(),
            4
        );
        let bad = serde_json::json!({"on_stall": "explode"});
        assert_eq!(
            Flags::from_value(&bad, "greptimedb")
                .unwrap_err()
                .exit_code(),
            4
        );
        // A declared flag recorded flat, of the wrong kind.
        let bad = serde_json::json!({"window": "an hour"});
        assert_eq!(
            Flags::from_value(&bad, "greptimedb")
                .unwrap_err()
                .exit_code(),
            4
        );
        // InfluxDB 3's declared flags: a negative wait is refused by the product's step (as
        // on a command line), not a panic; a good record reads back.
        let f = Flags::from_value(
            &serde_json::json!({"edition": "core", "count_timeout": -1.0, "no_sync": true}),
            "influxdb3",
        )
        .unwrap();
        let e = f.request(Phase::Query).unwrap_err();
        assert_eq!(e.exit_code(), 2, "{}", e.message);
        assert!(e.message.contains("--count-timeout -1"), "{}", e.message);
        let f = Flags::from_value(
            &serde_json::json!({"edition": "core", "count_timeout": 60.0, "no_sync": true}),
            "influxdb3",
        )
        .unwrap();
        let req = f.request(Phase::Query).unwrap();
        assert_eq!(req.count_timeout, Some(std::time::Duration::from_secs(60)));
        assert!(req.no_sync);
        assert_eq!(req.variant.as_deref(), Some("core"));
    }

    #[test]
    fn seconds_are_finite_positive_and_bounded() {
        for good in ["0.5", "60", "604800", " 20 "] {
            assert!(seconds(good).is_ok(), "{good}");
        }
        for bad in [
            "1e300", "inf", "-inf", "nan", "-5", "0", "604801", "", "abc",
        ] {
            let e = seconds(bad).unwrap_err();
            assert!(e.contains("positive number of seconds"), "{bad}: {e}");
        }
    }

    #[test]
    fn timing_args_replace_only_what_was_given() {
        let base = crate::server::Timing::default();
        let t = ServerTimingArgs {
            startup_timeout: Some(2.5),
            stop_timeout: None,
        }
        .apply(base);
        assert_eq!(t.startup_timeout, std::time::Duration::from_millis(2500));
        assert_eq!(t.grace, base.grace);
    }
}
