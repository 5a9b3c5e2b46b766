//! `tsbsctl influxdb3 install|prepare|activate|list|inspect|verify|remove|serve`: installations
//! and workspaces of InfluxDB 3 Core and Enterprise, over the generic [`crate::cli::dbcmd`]
//! commands, plus Enterprise licence activation ([`crate::product::influxdb3::activation`], on
//! the workspace opened as a [`workspace::OpContext`]). Commands on an existing workspace take
//! its edition from its manifest; only `install` and `prepare` name one.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::time::Duration;

use serde_json::{json, Value};

use crate::cli::bench as bench_cli;
use crate::cli::common::LockArgs;
use crate::cli::dbcmd::{self, IdArgs, RemoveArgs, ServeArgs};
use crate::context::Ctx;
use crate::error::{Error, Result};
use crate::ids::validate_id;
use crate::output::Outcome;
use crate::product::influxdb3::activation::{self, ActivateRequest, LicenseSource, LicenseType};
use crate::product::influxdb3::{object_store, Edition, InfluxDb3};
use crate::workspace::{self, PrepareRequest};

#[derive(Debug, clap::Subcommand)]
pub enum Influxdb3Cmd {
    /// Install a checksum-verified InfluxDB 3 release (latest without --version).
    #[command(disable_version_flag = true)]
    Install(InstallArgs),
    /// Create (or reuse) a workspace bound to one installed edition and version.
    #[command(disable_version_flag = true)]
    Prepare(PrepareArgs),
    /// Activate the licence of an Enterprise workspace (trial or home e-mail, or a licence file).
    Activate(ActivateArgs),
    /// List the workspaces of both editions, broken ones with their reasons (cheap).
    List,
    /// Show one workspace, its licence, and why it is broken, if it is (cheap).
    Inspect(IdArgs),
    /// Re-hash the installation and run it (exit 4 on damage).
    Verify(IdArgs),
    /// Delete a workspace and its data, under its lock.
    Remove(RemoveArgs),
    /// Run the workspace's server in the foreground until Ctrl-C (Enterprise: licence active).
    Serve(ServeArgs),
}

#[derive(Debug, clap::Args)]
pub struct InstallArgs {
    /// InfluxDB 3 edition: core or enterprise.
    #[arg(long, value_name = "EDITION", value_enum)]
    pub edition: Edition,
    /// Exact version (3.11.1); default: the latest from InfluxData's installer script.
    #[arg(long, value_name = "V")]
    pub version: Option<String>,
    #[command(flatten)]
    pub install: dbcmd::ReinstallArgs,
}

#[derive(Debug, clap::Args)]
pub struct PrepareArgs {
    /// Workspace id: a letter or digit, then letters, digits, '.', '_' or '-'.
    #[arg(long, value_name = "ID")]
    pub database_id: String,
    /// InfluxDB 3 edition: core or enterprise.
    #[arg(long, value_name = "EDITION", value_enum)]
    pub edition: Edition,
    /// Version to bind (installed if needed); default: the workspace's, else the newest
    /// installed, else the latest from InfluxData's installer script.
    #[arg(long, value_name = "V")]
    pub version: Option<String>,
    /// SQL database the benchmarks use (default: benchmark).
    #[arg(long, value_name = "NAME")]
    pub database: Option<String>,
    /// HTTP port on 127.0.0.1 (default 8181).
    #[arg(long, value_name = "P")]
    pub http_port: Option<u16>,
    /// file (the default: everything under the workspace's data/) or s3 (the WAL, Parquet
    /// files and catalog in an S3 bucket, under the workspace's node id: the server has no
    /// key prefix option). Core only; fixed when the workspace is made.
    #[arg(long, value_name = "KIND")]
    pub object_store: Option<String>,
    #[command(flatten)]
    pub s3: crate::cli::common::S3Args,
    /// Not offered: InfluxDB 3 has no key prefix option (its objects go under the node id).
    #[arg(long, value_name = "P", hide = true)]
    pub s3_prefix: Option<String>,
    #[command(flatten)]
    pub lock: LockArgs,
}

#[derive(Debug, clap::Args)]
#[command(group(
    clap::ArgGroup::new("licence").required(true).args(["license_type", "license_file"])
))]
pub struct ActivateArgs {
    /// Enterprise workspace id.
    #[arg(long, value_name = "ID")]
    pub database_id: String,
    /// Request a trial or home licence for an e-mail address (InfluxData sends a link to
    /// confirm it; the server waits for that).
    #[arg(long, value_name = "TYPE", value_enum)]
    pub license_type: Option<LicenseType>,
    /// Read the e-mail from standard input (one line; not echoed on a terminal).
    #[arg(
        long,
        requires = "license_type",
        conflicts_with_all = ["license_email_env", "license_file"]
    )]
    pub license_email_stdin: bool,
    /// Read the e-mail from this environment variable (default: INFLUXDB3_LICENSE_EMAIL).
    #[arg(
        long,
        value_name = "VAR",
        requires = "license_type",
        conflicts_with = "license_file"
    )]
    pub license_email_env: Option<String>,
    /// Use this licence file (only its absolute path is recorded; tsbsctl never reads it).
    #[arg(long, value_name = "PATH")]
    pub license_file: Option<PathBuf>,
    /// Seconds to wait for the server to serve, e-mail confirmation included (default: 1800).
    #[arg(long, value_name = "SECONDS", value_parser = crate::cli::common::Seconds, allow_negative_numbers = true)]
    pub timeout: Option<f64>,
    /// Seconds between SIGTERM and SIGKILL when stopping the server (default: 60).
    #[arg(long, value_name = "SECONDS", value_parser = crate::cli::common::Seconds, allow_negative_numbers = true)]
    pub stop_timeout: Option<f64>,
    /// Stop a server an earlier, killed tsbsctl left running on this workspace.
    #[arg(long)]
    pub kill_orphan: bool,
    #[command(flatten)]
    pub lock: LockArgs,
}

#[derive(Debug, clap::Args)]
// `tsbsctl bench influxdb3 PHASE ...` (no doc comment: clap would make it the help text).
pub struct BenchFlags {
    // all | load | query, or a phase of the product's own: the values are set per product
    // (`generic::phase_values`).
    #[arg(value_name = "PHASE")]
    pub phase: String,
    #[command(flatten)]
    pub common: bench_cli::CommonArgs,
    /// External targets: the edition the servers run.
    // Declared by the product (`influxdb3/flags.rs`) and given to it as text; parsed here as
    // its enum, so `--help` lists the editions.
    #[arg(long, value_name = "EDITION", value_enum)]
    pub edition: Option<crate::product::influxdb3::Edition>,
}

impl super::generic::OwnFlagsOf for BenchFlags {
    fn entry() -> &'static crate::product::Entry {
        &crate::product::influxdb3::ENTRY
    }
}

/// `tsbsctl bench influxdb3 PHASE ...`: the flags above, then the flags InfluxDB 3 declares
/// itself (token flags: variable names only).
pub type BenchArgs = super::generic::WithOwnFlags<BenchFlags>;

/// The request of `tsbsctl bench influxdb3` (its checks done), with its recorded flags.
pub(super) fn bench_request(a: BenchArgs) -> Result<crate::bench::Request> {
    let phase = super::generic::phase_of(&crate::product::influxdb3::ENTRY, &a.flags.phase)?;
    let edition = a.flags.edition.map(|e| e.as_str());
    let product = a.product_flags(edition.map(|e| (&crate::product::influxdb3::flags::EDITION, e)));
    bench_cli::request(a.flags.common, product, phase)
}

pub fn run(ctx: &Ctx, cmd: Influxdb3Cmd) -> Result<Outcome> {
    match cmd {
        Influxdb3Cmd::Install(a) => {
            let p = InfluxDb3::new(a.edition);
            dbcmd::install_cmd(
                ctx,
                &p,
                a.version.as_deref(),
                a.install.reinstall,
                a.install.wait,
            )
        }
        Influxdb3Cmd::Prepare(a) => {
            let p = InfluxDb3::new(a.edition);
            let extra = prepare_object_store(ctx, &p, &a)?;
            let req = PrepareRequest {
                id: a.database_id,
                version: a.version,
                database: a.database,
                http_port: a.http_port,
                ports: BTreeMap::new(),
                extra,
            };
            let mut o = dbcmd::prepare_cmd(ctx, &p, req, &a.lock)?;
            o.push_line(&licence_line(&o.data["manifest"]));
            let kept = match o.data["manifest"].as_object() {
                Some(m) => {
                    let node = m
                        .get("node_id")
                        .and_then(Value::as_str)
                        .unwrap_or_default()
                        .to_string();
                    object_store::of_extra(m, &node)?
                }
                None => None,
            };
            if let Some(l) = &kept {
                o.push_line(&format!(
                    "  object store: {} ({})\n",
                    l.describe(),
                    l.keys_from()
                ));
            }
            o.data["object_store"] = object_store::field(kept.as_ref());
            Ok(o)
        }
        Influxdb3Cmd::Activate(a) => activate_cmd(ctx, a),
        Influxdb3Cmd::List => list_cmd(ctx),
        Influxdb3Cmd::Inspect(a) => {
            let p = product_of(ctx, &a.database_id)?;
            let mut o = dbcmd::inspect_cmd(ctx, &p, a)?;
            if !o.data["manifest"].is_null() {
                let m = o.data["manifest"].clone();
                o.push_line(&format!(
                    "  edition: {}\n  node id: {}\n  cluster id: {}\n",
                    m["edition"].as_str().unwrap_or("-"),
                    m["node_id"].as_str().unwrap_or("-"),
                    m["cluster_id"].as_str().unwrap_or("-"),
                ));
                o.push_line(&licence_line(&m));
            }
            Ok(o)
        }
        Influxdb3Cmd::Verify(a) => {
            let p = existing(ctx, &a.database_id)?;
            dbcmd::verify_cmd(ctx, &p, a)
        }
        Influxdb3Cmd::Remove(a) => {
            let p = product_of(ctx, &a.database_id)?;
            dbcmd::remove_cmd(ctx, &p, a)
        }
        Influxdb3Cmd::Serve(a) => {
            let p = existing(ctx, &a.database_id)?;
            // A trial close to its 30 days: said before the server starts.
            if let Some(w) = crate::workspace::load(&ctx.root, &p, &a.database_id)
                .ok()
                .and_then(|ws| crate::product::influxdb3::expiry_warning(&ws.manifest))
            {
                ctx.reporter.warn(&w);
            }
            dbcmd::serve_cmd(ctx, &p, a)
        }
    }
}

/// The object-store part of `prepare`: an existing workspace keeps its store (asking for
/// another is bad input); a new one on S3 is checked against the bucket before anything is
/// created: the bucket answers to the keys, and nothing is under the node id yet (the server
/// would take such objects for its own catalog and data).
fn prepare_object_store(
    ctx: &Ctx,
    p: &InfluxDb3,
    a: &PrepareArgs,
) -> Result<serde_json::Map<String, Value>> {
    let node = InfluxDb3::node_id(&a.database_id);
    let flags = object_store::Flags {
        object_store: a.object_store.clone(),
        s3: (&a.s3).into(),
        prefix: a.s3_prefix.clone(),
    };
    let wanted = flags.parse(&node)?;
    if let Ok(w) = crate::workspace::load(&ctx.root, p, &a.database_id) {
        let have = object_store::of(&w.manifest)?;
        if a.object_store.is_some() && have != wanted {
            let say = |l: Option<&crate::s3::Location>| {
                l.map_or("local files".to_string(), |l| l.describe())
            };
            return Err(Error::invalid(format!(
                "workspace {} was prepared with object store {}; it cannot become {}",
                a.database_id,
                say(have.as_ref()),
                say(wanted.as_ref())
            ))
            .with_hint("a workspace never changes its object store: prepare a new one (`tsbsctl influxdb3 prepare --database-id NEW --object-store ...`)"));
        }
        return Ok(Default::default());
    }
    let Some(l) = wanted else {
        return Ok(Default::default());
    };
    if a.edition == Edition::Enterprise {
        return Err(Error::invalid(
            "--object-store s3 is supported for InfluxDB 3 Core only",
        )
        .with_hint("Enterprise keeps its licence and cluster catalog in the object store, which tsbsctl's activation does not read from a bucket yet: use --object-store file (the default)"));
    }
    // Before anything is written: the variables are set, the bucket answers to them.
    l.probe()?;
    // That the node id's prefix is empty is checked by `prepare` (its objects are the
    // workspace's own, which `remove` deletes).
    Ok([(
        object_store::FIELD.to_string(),
        object_store::field(Some(&l)),
    )]
    .into_iter()
    .collect())
}

/// The product of workspace `id`: the edition its manifest names (Core when it has none or an
/// unknown one, so `inspect`, `list` and `remove` still work on a broken workspace).
fn product_of(ctx: &Ctx, id: &str) -> Result<InfluxDb3> {
    Ok(edition_of(ctx, id)?
        .and_then(|e| Edition::parse(&e).ok())
        .map(InfluxDb3::new)
        .unwrap_or(InfluxDb3::new(Edition::Core)))
}

/// The `edition` field of workspace `id`'s manifest, if it reads.
fn edition_of(ctx: &Ctx, id: &str) -> Result<Option<String>> {
    crate::product::workspace_variant(&ctx.root, crate::product::influxdb3::ENTRY.name, id)
}

/// The product of prepared workspace `id` (its manifest must name a known edition).
fn existing(ctx: &Ctx, id: &str) -> Result<InfluxDb3> {
    let edition = edition_of(ctx, id)?;
    let dir = ctx.root.database("influxdb3", id);
    if !dir.join("manifest.json").exists() {
        return Err(Error::invalid(format!(
            "there is no InfluxDB 3 workspace {id:?} (looked in {})",
            dir.display()
        ))
        .with_hint(format!(
            "create it with `tsbsctl influxdb3 prepare --database-id {id} --edition core|enterprise`, or see `tsbsctl influxdb3 list`"
        )));
    }
    match edition.as_deref().map(Edition::parse) {
        Some(Ok(e)) => Ok(InfluxDb3::new(e)),
        _ => Err(Error::integrity(format!(
            "{} names no InfluxDB 3 edition (core or enterprise)",
            dir.join("manifest.json").display()
        ))
        .with_hint(format!(
            "see `tsbsctl influxdb3 inspect --database-id {id}`; remove the workspace if it is beyond repair"
        ))),
    }
}

fn licence_line(m: &Value) -> String {
    let l = &m["license"];
    match l["status"].as_str() {
        None => String::new(),
        Some(s) => format!(
            "  licence: {s}{}\n",
            match (l["source"].as_str(), l["path"].as_str()) {
                (Some(src), Some(p)) => format!(" ({src}: {p})"),
                (Some(src), None) => format!(" ({src})"),
                _ => String::new(),
            }
        ),
    }
}

fn list_cmd(ctx: &Ctx) -> Result<Outcome> {
    let base = ctx.root.databases("influxdb3");
    let ids = workspace::workspace_ids(&base);
    let mut all = Vec::new();
    let mut human = String::new();
    if ids.is_empty() {
        human.push_str(
            "no InfluxDB 3 workspaces (create one with `tsbsctl influxdb3 prepare --database-id ID --edition core|enterprise`)\n",
        );
    }
    for id in &ids {
        let p = product_of(ctx, id).unwrap_or(InfluxDb3::new(Edition::Core));
        let i = workspace::inspect_dir(&ctx.root, &p, &base.join(id), id);
        let m = i.manifest.clone().unwrap_or(Value::Null);
        let f = |k: &str| m[k].as_str().unwrap_or("-").to_string();
        human.push_str(&format!(
            "{:<24} {:<10} {:<10} {:<10} {:<12} {}\n",
            i.database_id,
            i.state,
            f("edition"),
            f("version"),
            m["license"]["status"].as_str().unwrap_or("-"),
            f("database"),
        ));
        for pr in &i.problems {
            human.push_str(&format!("    {} (fix: {})\n", pr.problem, pr.fix));
        }
        all.push(i);
    }
    Ok(Outcome::new(json!({ "workspaces": all }), human))
}

fn activate_cmd(ctx: &Ctx, a: ActivateArgs) -> Result<Outcome> {
    validate_id("--database-id", &a.database_id)?;
    // Checked by the `seconds` value parser (finite, positive, at most a week).
    let timeout = a
        .timeout
        .map_or(activation::DEFAULT_TIMEOUT, Duration::from_secs_f64);
    let stop_timeout = a.stop_timeout.map(Duration::from_secs_f64);
    if a.license_email_stdin && a.lock.hold_token_stdin {
        return Err(Error::invalid(
            "--license-email-stdin and --hold-token-stdin cannot both read stdin",
        )
        .with_hint("pass the hold token with --hold-token-env VAR instead"));
    }
    let p = existing(ctx, &a.database_id)?;
    activation::check_needs_license(&p, &a.database_id)?;
    if a.license_file.is_some() && (a.license_email_stdin || a.license_email_env.is_some()) {
        return Err(Error::invalid(
            "--license-email-stdin and --license-email-env go with --license-type, not --license-file",
        )
        .with_hint("a licence file needs no e-mail: drop the e-mail flag"));
    }
    // Every input is checked (and the e-mail read) before the lock is taken or a server runs.
    let source = match (&a.license_type, &a.license_file) {
        (Some(t), None) => {
            let license_type = *t;
            let email = if a.license_email_stdin {
                activation::email_from_stdin()?
            } else {
                activation::email_from_env(
                    a.license_email_env
                        .as_deref()
                        .unwrap_or(activation::DEFAULT_EMAIL_ENV),
                )?
            };
            LicenseSource::Email {
                license_type,
                email,
            }
        }
        (None, Some(f)) => LicenseSource::File(activation::license_file_path(f)?),
        _ => {
            return Err(Error::invalid(
                "give exactly one of --license-type trial|home or --license-file PATH",
            )
            .with_hint("see `tsbsctl influxdb3 activate --help`"))
        }
    };
    let id = a.database_id.clone();
    // The workspace is opened here and locked by the activation; the lock ends with `w`.
    let o = {
        let mut w = workspace::OpContext::open(ctx, &p, &id, &(&a.lock).into())?;
        activation::activate(
            &mut w,
            &p,
            ActivateRequest {
                id: id.clone(),
                source,
                timeout,
                stop_timeout,
                kill_orphan: a.kill_orphan,
            },
        )?
    };
    let m = &o.manifest;
    let lic = m.extra.get("license").cloned().unwrap_or(Value::Null);
    let d = &o.diagnostics;
    let mut human = if o.reused {
        format!("workspace {id}: the licence is already active\n")
    } else {
        format!(
            "workspace {id}: licence active after {}\n",
            activation::human_duration(Duration::from_secs(o.waited.as_secs()))
        )
    };
    human.push_str(&licence_line(&serde_json::to_value(m)?));
    if d.warnings + d.errors + d.fatals + d.panics > 0 {
        human.push_str(&format!(
            "  server log: {} warnings, {} errors, {} fatals, {} panics ({})\n",
            d.warnings,
            d.errors,
            d.fatals,
            d.panics,
            o.log.display()
        ));
    }
    human.push_str(&format!(
        "  serve it with `tsbsctl influxdb3 serve --database-id {id}`\n"
    ));
    Ok(Outcome::new(
        json!({
            "database_id": id,
            "database_path": o.dir,
            "edition": m.variant,
            "version": m.version,
            "license": lic,
            "reused": o.reused,
            "waited_seconds": o.waited.as_millis() as f64 / 1000.0,
            "log": o.log,
            "diagnostics": o.diagnostics,
        }),
        human,
    ))
}
