//! The CLI of registry products without a CLI module of their own: `tsbsctl <product>
//! install|prepare|list|inspect|verify|remove|serve` and `tsbsctl bench <product>
//! all|load|query`, one clap command per product built from the registry
//! ([`crate::product::all`]) and dispatched to the generic commands of [`super::dbcmd`] and to
//! [`crate::bench::run`]. A product with flags of its own (GreptimeDB's ports and compaction,
//! InfluxDB 3's editions) keeps its own module; these commands are what every product has.
//!
//! Both [`Products`] and [`BenchProducts`] are flattened into a derived subcommand enum, last:
//! they add a command for each product the variants above did not define, and remember which
//! (clap asks [`Subcommand::has_subcommand`] without the command at hand).

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Mutex;

use clap::{ArgMatches, Args, FromArgMatches, Subcommand, ValueEnum};

use crate::bench::flags::ProductFlags;
use crate::bench::Request;
use crate::cli::bench as bench_cli;
use crate::cli::common::LockArgs;
use crate::cli::dbcmd::{self, IdArgs, RemoveArgs, ServeArgs};
use crate::context::Ctx;
use crate::error::Result;
use crate::output::Outcome;
use crate::product::ext::{BenchFlag, FlagKind, Values};
use crate::product::{Entry, Product};
use crate::workspace::PrepareRequest;

/// `tsbsctl <product> ...` of one registry product.
pub struct Products {
    pub entry: &'static Entry,
    pub cmd: ProductCmd,
}

/// `tsbsctl bench <product> ...` of one registry product.
pub struct BenchProducts {
    pub entry: &'static Entry,
    pub args: BenchArgs,
    /// The product's own flags that were given ([`crate::product::ext`]), as typed.
    pub own: crate::product::ext::Values,
}

impl std::fmt::Debug for Products {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{} {:?}", self.entry.name, self.cmd)
    }
}

impl std::fmt::Debug for BenchProducts {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "bench {} {:?}", self.entry.name, self.args)
    }
}

// What every product's area offers (`//`: clap would make a doc comment the area's help).
#[derive(Debug, clap::Subcommand)]
pub enum ProductCmd {
    /// Install a checksum-verified release (latest stable without --version).
    #[command(disable_version_flag = true)]
    Install(InstallArgs),
    /// Create (or reuse) a workspace bound to one installed version and one database.
    #[command(disable_version_flag = true)]
    Prepare(PrepareArgs),
    /// List the workspaces, broken ones with their reasons (cheap: no hashing, no server).
    List,
    /// Show one workspace and why it is broken, if it is (cheap).
    Inspect(IdArgs),
    /// Re-hash the installation, run it, and check the workspace's config (exit 4 on damage).
    Verify(IdArgs),
    /// Delete a workspace and its data, under its lock.
    Remove(RemoveArgs),
    /// Run the workspace's server in the foreground until Ctrl-C.
    Serve(ServeArgs),
}

#[derive(Debug, clap::Args)]
pub struct InstallArgs {
    /// Exact version; default: the latest stable release.
    #[arg(long, value_name = "V")]
    pub version: Option<String>,
    #[command(flatten)]
    pub install: dbcmd::ReinstallArgs,
}

#[derive(Debug, clap::Args)]
pub struct PrepareArgs {
    /// Workspace id: a letter or digit, then letters, digits, '.', '_' or '-' (at most 64).
    #[arg(long, value_name = "ID")]
    pub database_id: String,
    /// Version to bind (installed if needed); default: the workspace's version, else the newest
    /// installed, else the latest stable release.
    #[arg(long, value_name = "V")]
    pub version: Option<String>,
    /// Database the benchmarks use (default: benchmark).
    #[arg(long, value_name = "NAME")]
    pub database: Option<String>,
    /// HTTP port on 127.0.0.1 (default: the product's).
    #[arg(long, value_name = "P")]
    pub http_port: Option<u16>,
    #[command(flatten)]
    pub lock: LockArgs,
}

/// The phases every product has; a product adds its analysis of the query types and its
/// operations ([`phase_values`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum GenericPhase {
    /// Dataset and query set, then load, verify, query.
    All,
    /// Load (or reuse loaded data) and verify the row count.
    Load,
    /// Run every query type of the query set once.
    Query,
}

impl From<GenericPhase> for crate::bench::Phase {
    fn from(p: GenericPhase) -> Self {
        match p {
            GenericPhase::All => crate::bench::Phase::All,
            GenericPhase::Load => crate::bench::Phase::Load,
            GenericPhase::Query => crate::bench::Phase::Query,
        }
    }
}

/// The name of the phase a product's analysis of the query types runs as.
const ANALYZE: &str = "analyze";

/// The phases `bench <product>` offers product `e`: every product's, its analysis of the
/// query types if it declares one, then its operations, each with its help line.
fn phase_values(e: &Entry) -> Vec<clap::builder::PossibleValue> {
    let ext = (e.make)(None).ok().and_then(|p| p.bench_ext());
    let mut values: Vec<clap::builder::PossibleValue> = GenericPhase::value_variants()
        .iter()
        .filter_map(|p| p.to_possible_value())
        .collect();
    if let Some(a) = ext.and_then(|x| x.analyze) {
        values.push(clap::builder::PossibleValue::new(ANALYZE).help(a.about));
    }
    values.extend(
        ext.map_or(&[][..], |x| x.operations)
            .iter()
            .map(|o| clap::builder::PossibleValue::new(o.name).help(o.about)),
    );
    values
}

/// `cmd` (a `bench <product>` command) with its `PHASE` argument taking product `e`'s phases.
fn with_phase_values(cmd: clap::Command, e: &Entry) -> clap::Command {
    if !cmd.get_arguments().any(|a| a.get_id() == "phase") {
        return cmd;
    }
    let values = phase_values(e);
    cmd.mut_arg("phase", |a| {
        a.value_parser(clap::builder::PossibleValuesParser::new(values))
    })
}

/// The phase `name` (one of [`phase_values`], as clap checked) of product `e`.
pub fn phase_of(e: &Entry, name: &str) -> Result<crate::bench::Phase> {
    if let Ok(p) = GenericPhase::from_str(name, false) {
        return Ok(p.into());
    }
    let ext = (e.make)(None)?.bench_ext();
    if name == ANALYZE && ext.and_then(|x| x.analyze).is_some() {
        return Ok(crate::bench::Phase::Analyze);
    }
    ext.and_then(|x| x.operation(name))
        .map(|o| crate::bench::Phase::Operation(o.name))
        .ok_or_else(|| {
            crate::error::Error::invalid(format!("{} has no phase {name:?}", e.display))
                .with_hint(format!("see `tsbsctl bench {} --help`", e.name))
        })
}

#[derive(Debug, clap::Args)]
// `tsbsctl bench <product> PHASE ...` (no doc comment: clap would make it the help text).
pub struct BenchArgs {
    /// all | load | query, or one of the product's own operations (its value parser is set
    /// per product: [`bench_command`]).
    #[arg(value_name = "PHASE")]
    pub phase: String,
    #[command(flatten)]
    pub common: bench_cli::CommonArgs,
    /// External servers: the environment variable holding the token (default: the product's).
    #[arg(long, value_name = "VAR")]
    pub token_env: Option<String>,
}

/// The product names one flattened enum added (the ones it answers for).
struct Added(Mutex<BTreeSet<&'static str>>);

impl Added {
    const fn new() -> Added {
        Added(Mutex::new(BTreeSet::new()))
    }
    fn insert(&self, name: &'static str) {
        self.0
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .insert(name);
    }
    fn has(&self, name: &str) -> bool {
        self.0
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .contains(name)
    }
}

static AREAS: Added = Added::new();
static BENCHES: Added = Added::new();

/// `cmd` with one subcommand per registry product it does not define yet.
fn augment(
    mut cmd: clap::Command,
    added: &Added,
    make: impl Fn(&'static Entry) -> clap::Command,
) -> clap::Command {
    for e in crate::product::all() {
        // Defined by a variant above: the product has its own module.
        if cmd.get_subcommands().any(|c| c.get_name() == e.name) {
            continue;
        }
        added.insert(e.name);
        cmd = cmd.subcommand(make(e));
    }
    cmd
}

fn area_command(e: &'static Entry) -> clap::Command {
    let about = format!(
        "Install {d} releases and manage {d} workspaces and servers.",
        d = e.display
    );
    // The about after the augment: the derive sets the type's own doc as the about.
    ProductCmd::augment_subcommands(clap::Command::new(e.name))
        .about(about)
        .subcommand_required(true)
        .arg_required_else_help(true)
}

fn bench_command(e: &'static Entry) -> clap::Command {
    let names: Vec<String> = phase_values(e)
        .iter()
        .map(|v| v.get_name().to_string())
        .collect();
    let about = format!("Benchmark {}: {}", e.display, names.join(" | "));
    let cmd = BenchArgs::augment_args(clap::Command::new(e.name)).about(about);
    add_own_flags(with_phase_values(cmd, e), e)
}

/// The parsed flags of a product CLI module's bench command ([`WithOwnFlags`]): its product.
pub trait OwnFlagsOf: Args + FromArgMatches {
    /// The product whose declared flags follow these.
    fn entry() -> &'static Entry;
}

/// A product CLI module's bench flags (`F`: the phase, the shared flags and what the module
/// parses itself), then the flags its product declares ([`crate::product::ext`], added at
/// runtime), given as typed.
#[derive(Debug)]
pub struct WithOwnFlags<F> {
    pub flags: F,
    /// The product's own flags that were given, as typed (token and password flags: the
    /// variables' names only).
    pub own: Values,
}

impl<F: OwnFlagsOf> FromArgMatches for WithOwnFlags<F> {
    fn from_arg_matches(m: &ArgMatches) -> std::result::Result<Self, clap::Error> {
        Ok(WithOwnFlags {
            flags: F::from_arg_matches(m)?,
            own: own_values(F::entry(), m),
        })
    }
    fn update_from_arg_matches(&mut self, m: &ArgMatches) -> std::result::Result<(), clap::Error> {
        *self = WithOwnFlags::from_arg_matches(m)?;
        Ok(())
    }
}

impl<F: OwnFlagsOf> Args for WithOwnFlags<F> {
    fn augment_args(cmd: clap::Command) -> clap::Command {
        add_own_flags(
            with_phase_values(F::augment_args(cmd), F::entry()),
            F::entry(),
        )
    }
    fn augment_args_for_update(cmd: clap::Command) -> clap::Command {
        WithOwnFlags::<F>::augment_args(cmd)
    }
}

impl<F: OwnFlagsOf> WithOwnFlags<F> {
    /// `tsbsctl bench <product>` of a product CLI module: the request the module builds
    /// (`request`: its own checks, its recorded flags), run against its product.
    pub fn bench(self, ctx: &Ctx, request: fn(Self) -> Result<Request>) -> Result<Outcome> {
        let req = request(self)?;
        crate::bench::run(ctx, F::entry(), &req)
    }
    /// The product's flags of the record: the given ones (and `extra`, what the module
    /// parsed itself, as text).
    pub fn product_flags(&self, extra: Option<(&BenchFlag, &str)>) -> ProductFlags {
        let mut values = self.own.clone();
        if let Some((f, v)) = extra {
            values.insert(f.key(), v.into());
        }
        ProductFlags {
            own: Some(crate::bench::flags::OwnFlags {
                product: F::entry().name,
                values,
            }),
        }
    }
}

/// `cmd` with the flags product `e` declares itself, after the shared ones (text: the
/// product checks them). A flag `cmd` has already (the product's CLI module parses it as its
/// own type, `--edition`) is not added again: the module gives its value to the product.
pub(super) fn add_own_flags(mut cmd: clap::Command, e: &Entry) -> clap::Command {
    for f in own_flags(e) {
        if cmd.get_arguments().any(|a| a.get_long() == Some(f.long)) {
            continue;
        }
        let mut arg = clap::Arg::new(f.long).long(f.long).help(match f.default {
            Some(d) => format!("{} (default {d})", f.help),
            None => f.help.to_string(),
        });
        if let Some(other) = f.requires {
            arg = arg.requires(other);
        }
        cmd = cmd.arg(match f.kind {
            FlagKind::Switch => arg.action(clap::ArgAction::SetTrue),
            FlagKind::Number | FlagKind::Seconds | FlagKind::Text => arg
                .value_name(f.value_name)
                .allow_negative_numbers(true)
                .action(clap::ArgAction::Set),
        });
    }
    cmd
}

/// The flags product `e` declares itself.
fn own_flags(e: &Entry) -> &'static [BenchFlag] {
    (e.make)(None)
        .ok()
        .and_then(|p| p.bench_ext())
        .map_or(&[], |x| x.flags)
}

/// The product's own flags given in `m`, by key: text as typed, a switch as `true`.
pub(super) fn own_values(e: &Entry, m: &ArgMatches) -> Values {
    let mut out = Values::new();
    for f in own_flags(e) {
        match f.kind {
            // A flag the product's CLI module parses itself, as its own type, is not a bool or
            // text here (`Err`): its value is the module's to give.
            FlagKind::Switch => {
                if let Ok(Some(true)) = m.try_get_one::<bool>(f.long) {
                    out.insert(f.key(), true.into());
                }
            }
            FlagKind::Number | FlagKind::Seconds | FlagKind::Text => {
                if let Ok(Some(v)) = m.try_get_one::<String>(f.long) {
                    out.insert(f.key(), v.clone().into());
                }
            }
        }
    }
    out
}

/// The registry entry a matched subcommand names.
fn matched(
    m: &ArgMatches,
    added: &Added,
) -> std::result::Result<(&'static Entry, ArgMatches), clap::Error> {
    let (name, sub) = m
        .subcommand()
        .filter(|(n, _)| added.has(n))
        .ok_or_else(|| clap::Error::new(clap::error::ErrorKind::MissingSubcommand))?;
    let entry = crate::product::entry(name)
        .map_err(|e| clap::Error::raw(clap::error::ErrorKind::InvalidSubcommand, e.message))?;
    Ok((entry, sub.clone()))
}

impl FromArgMatches for Products {
    fn from_arg_matches(m: &ArgMatches) -> std::result::Result<Self, clap::Error> {
        let (entry, sub) = matched(m, &AREAS)?;
        Ok(Products {
            entry,
            cmd: ProductCmd::from_arg_matches(&sub)?,
        })
    }
    fn update_from_arg_matches(&mut self, m: &ArgMatches) -> std::result::Result<(), clap::Error> {
        *self = Products::from_arg_matches(m)?;
        Ok(())
    }
}

impl Subcommand for Products {
    fn augment_subcommands(cmd: clap::Command) -> clap::Command {
        augment(cmd, &AREAS, area_command)
    }
    fn augment_subcommands_for_update(cmd: clap::Command) -> clap::Command {
        augment(cmd, &AREAS, area_command)
    }
    fn has_subcommand(name: &str) -> bool {
        AREAS.has(name)
    }
}

impl FromArgMatches for BenchProducts {
    fn from_arg_matches(m: &ArgMatches) -> std::result::Result<Self, clap::Error> {
        let (entry, sub) = matched(m, &BENCHES)?;
        Ok(BenchProducts {
            entry,
            args: BenchArgs::from_arg_matches(&sub)?,
            own: own_values(entry, &sub),
        })
    }
    fn update_from_arg_matches(&mut self, m: &ArgMatches) -> std::result::Result<(), clap::Error> {
        *self = BenchProducts::from_arg_matches(m)?;
        Ok(())
    }
}

impl Subcommand for BenchProducts {
    fn augment_subcommands(cmd: clap::Command) -> clap::Command {
        augment(cmd, &BENCHES, bench_command)
    }
    fn augment_subcommands_for_update(cmd: clap::Command) -> clap::Command {
        augment(cmd, &BENCHES, bench_command)
    }
    fn has_subcommand(name: &str) -> bool {
        BENCHES.has(name)
    }
}

/// `tsbsctl <product> ...`: the product's default variant for what creates things, the
/// workspace's own for what works on one.
pub fn run(ctx: &Ctx, p: Products) -> Result<Outcome> {
    let e = p.entry;
    let default = || (e.make)(None);
    let of_workspace = |id: &str| -> Result<Box<dyn Product>> {
        crate::product::for_workspace(&ctx.root, e.name, id)
    };
    match p.cmd {
        ProductCmd::Install(a) => dbcmd::install_cmd(
            ctx,
            default()?.as_ref(),
            a.version.as_deref(),
            a.install.reinstall,
            a.install.wait,
        ),
        ProductCmd::Prepare(a) => {
            let req = PrepareRequest {
                id: a.database_id,
                version: a.version,
                database: a.database,
                http_port: a.http_port,
                ports: BTreeMap::new(),
                extra: Default::default(),
            };
            dbcmd::prepare_cmd(ctx, default()?.as_ref(), req, &a.lock)
        }
        ProductCmd::List => dbcmd::list_cmd(ctx, default()?.as_ref()),
        ProductCmd::Inspect(a) => {
            dbcmd::inspect_cmd(ctx, of_workspace(&a.database_id)?.as_ref(), a)
        }
        ProductCmd::Verify(a) => dbcmd::verify_cmd(ctx, of_workspace(&a.database_id)?.as_ref(), a),
        ProductCmd::Remove(a) => dbcmd::remove_cmd(ctx, of_workspace(&a.database_id)?.as_ref(), a),
        ProductCmd::Serve(a) => dbcmd::serve_cmd(ctx, of_workspace(&a.database_id)?.as_ref(), a),
    }
}

impl BenchProducts {
    /// The phase given.
    pub fn phase(&self) -> Result<crate::bench::Phase> {
        phase_of(self.entry, &self.args.phase)
    }
}

/// `tsbsctl bench <product> PHASE`: the shared flags, the product's own flags and operations
/// ([`crate::product::ext`]).
pub fn bench(ctx: &Ctx, b: BenchProducts) -> Result<Outcome> {
    let entry = b.entry;
    let req = bench_request(b)?;
    crate::bench::run(ctx, entry, &req)
}

/// The request (and its record) of a parsed `bench <product>` command.
pub fn bench_request(b: BenchProducts) -> Result<crate::bench::Request> {
    let phase = b.phase()?;
    if b.args.token_env.is_some() && (b.entry.make)(None)?.token_env_defaults().is_none() {
        return Err(
            crate::error::Error::invalid(format!("{} reads no token", b.entry.display))
                .with_hint("drop --token-env"),
        );
    }
    // A field of the shared flags (recorded as `auth_token_env`), no product's group.
    let mut common = b.args.common;
    common.token_env = b.args.token_env;
    let product = ProductFlags {
        // A product with flags of its own records them (resolved) even when none was given.
        own: own_flags(b.entry)
            .first()
            .map(|_| crate::bench::flags::OwnFlags {
                product: b.entry.name,
                values: b.own,
            }),
    };
    bench_cli::request(common, product, phase)
}

#[cfg(test)]
mod tests {
    use clap::CommandFactory;

    /// Every registry product has an area and a bench command, once, whoever defines it.
    #[test]
    fn every_product_has_its_commands_once() {
        let cli = crate::cli::Cli::command();
        let bench = cli.find_subcommand("bench").unwrap();
        for e in crate::product::all() {
            for c in [&cli, bench] {
                let n = c
                    .get_subcommands()
                    .filter(|s| s.get_name() == e.name)
                    .count();
                assert_eq!(n, 1, "{} under {}", e.name, c.get_name());
            }
        }
    }

    /// A registry product without a CLI module parses into the generic commands, with its
    /// own help.
    #[test]
    fn a_product_without_a_module_parses_generically() {
        use clap::FromArgMatches;
        let _ = crate::cli::Cli::command();
        // The test builds register a skeleton product that has no module of its own.
        let e = crate::product::all()
            .iter()
            .find(|e| super::AREAS.has(e.name))
            .expect("a registry product without a CLI module");
        let m = crate::cli::Cli::command()
            .try_get_matches_from(["tsbsctl", "bench", e.name, "load", "--database-id", "x1"])
            .unwrap();
        let cli = crate::cli::Cli::from_arg_matches(&m).unwrap();
        let crate::cli::Command::Bench(super::super::bench::BenchCmd::Product(b)) = cli.command
        else {
            panic!("not the generic bench: {:?}", cli.command);
        };
        assert_eq!(b.entry.name, e.name);
        assert_eq!(b.phase().unwrap(), crate::bench::Phase::Load);
        assert_eq!(b.args.common.database_id.as_deref(), Some("x1"));
        let cli_cmd = crate::cli::Cli::command();
        let about = |c: &clap::Command| c.get_about().map(|a| a.to_string()).unwrap_or_default();
        let area = cli_cmd.find_subcommand(e.name).unwrap();
        assert_eq!(
            about(area),
            format!(
                "Install {d} releases and manage {d} workspaces and servers.",
                d = e.display
            )
        );
        let bench = cli_cmd.find_subcommand("bench").unwrap();
        assert_eq!(
            about(bench.find_subcommand(e.name).unwrap()),
            format!("Benchmark {}: all | load | query", e.display)
        );
        let m = crate::cli::Cli::command()
            .try_get_matches_from([
                "tsbsctl",
                e.name,
                "prepare",
                "--database-id",
                "x1",
                "--version",
                "1.0.0",
            ])
            .unwrap();
        let cli = crate::cli::Cli::from_arg_matches(&m).unwrap();
        let crate::cli::Command::Product(p) = cli.command else {
            panic!("not the generic area: {:?}", cli.command);
        };
        assert!(
            matches!(p.cmd, super::ProductCmd::Prepare(ref a) if a.version.as_deref() == Some("1.0.0"))
        );
        // The phases the generic bench does not offer are refused by clap (exit 2).
        let err = crate::cli::Cli::command()
            .try_get_matches_from(["tsbsctl", "bench", e.name, "compact"])
            .unwrap_err();
        assert_eq!(err.kind(), clap::error::ErrorKind::InvalidValue);
    }
}
