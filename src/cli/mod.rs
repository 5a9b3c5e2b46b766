//! Command-line parsing and dispatch. Flags are defined once here (clap derive) and help is
//! generated from them; each area of commands lives in its own file and returns an
//! [`Outcome`]; this module prints it (human or `--json`) and picks the exit code.

use std::ffi::OsString;
use std::io::Write;
use std::path::PathBuf;
use std::sync::Arc;

use clap::{CommandFactory, FromArgMatches, Parser, Subcommand};

use crate::context::Ctx;
use crate::error::{Error, ErrorKind, Result};
use crate::output::{envelope, Outcome, StderrReporter};
use crate::paths::Root;

mod adopt;
mod bench;
pub mod common;
pub mod data;
pub mod dbcmd;
mod env;
mod generic;
mod greptimedb;
mod influxdb3;
mod queries;
mod quickstart;
pub mod reporters;
mod runs;
mod skills;
mod timescaledb;
mod workspace;

/// Reproducible TSBS benchmarks of GreptimeDB and InfluxDB 3.
#[derive(Debug, Parser)]
#[command(
    name = "tsbsctl",
    version,
    about,
    propagate_version = true,
    max_term_width = 100
)]
pub struct Cli {
    #[command(flatten)]
    pub global: GlobalArgs,
    #[command(subcommand)]
    pub command: Command,
}

/// Flags accepted by every command.
#[derive(Debug, clap::Args)]
pub struct GlobalArgs {
    /// State root (default: $TSBSCTL_ROOT, else ./workspaces).
    #[arg(long, global = true, value_name = "DIR")]
    pub root: Option<PathBuf>,
    /// Print one JSON document on stdout; logs and progress go to stderr.
    #[arg(long, global = true)]
    pub json: bool,
    /// No status lines and no progress bars (warnings and errors still show).
    #[arg(long, global = true)]
    pub quiet: bool,
    /// Also write the JSON result to PATH (atomically), whatever the output mode; never
    /// inside the state root.
    #[arg(long, global = true, value_name = "PATH")]
    pub result_file: Option<PathBuf>,
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// The Go toolchain and the TSBS tools built from a pinned commit.
    #[command(subcommand)]
    Env(env::EnvCmd),
    /// Shared datasets: prepare, generate, list, inspect, verify.
    #[command(subcommand)]
    Data(data::DataCmd),
    /// Install GreptimeDB releases and manage GreptimeDB workspaces and servers.
    #[command(subcommand)]
    Greptimedb(greptimedb::GreptimedbCmd),
    /// Install InfluxDB 3 releases; manage workspaces, Enterprise licences and servers.
    #[command(subcommand)]
    Influxdb3(influxdb3::Influxdb3Cmd),
    /// Pin this machine's PostgreSQL; manage TimescaleDB / PostgreSQL workspaces and servers.
    #[command(subcommand)]
    Timescaledb(timescaledb::TimescaledbCmd),
    /// Benchmark phases: all, load, query and each product's own (run directories with summaries).
    #[command(subcommand)]
    Bench(bench::BenchCmd),
    /// Smoke benchmark of the latest GreptimeDB in one command (reuses everything next time).
    Quickstart(quickstart::QuickstartArgs),
    /// Take in what the reference tool left in `.benchmarks/`: its datasets (checked, then
    /// hard-linked or copied; nothing under DIR is written) and its installed versions
    /// (installed from the release archive it installed, checked equal).
    Adopt(adopt::AdoptArgs),
    /// Benchmark runs: list, show, summarize, compare, report, rerun.
    #[command(subcommand)]
    Runs(runs::RunsCmd),
    /// Hold, release and inspect database workspace locks.
    #[command(subcommand)]
    Workspace(workspace::WorkspaceCmd),
    /// Render or install the agent skills (Codex, Claude Code).
    #[command(subcommand)]
    Skills(skills::SkillsCmd),
    // Every registry product without a module of its own (generic.rs). Keep it last: it adds
    // the products no variant above defines.
    #[command(flatten)]
    Product(generic::Products),
}

impl Command {
    fn run(self, ctx: &Ctx) -> Result<Outcome> {
        match self {
            Command::Env(cmd) => env::run(ctx, cmd),
            Command::Data(cmd) => data::run(ctx, cmd),
            Command::Greptimedb(cmd) => greptimedb::run(ctx, cmd),
            Command::Influxdb3(cmd) => influxdb3::run(ctx, cmd),
            Command::Timescaledb(cmd) => timescaledb::run(ctx, cmd),
            Command::Bench(cmd) => bench::run(ctx, cmd),
            Command::Runs(cmd) => runs::run(ctx, cmd),
            Command::Quickstart(a) => quickstart::run(ctx, a),
            Command::Adopt(a) => adopt::run(ctx, a),
            Command::Workspace(cmd) => workspace::run(ctx, cmd),
            Command::Skills(cmd) => skills::run(ctx, cmd),
            Command::Product(p) => generic::run(ctx, p),
        }
    }
}

/// Parses `args`, runs the command and returns the process exit code.
pub fn main_with_args(args: Vec<OsString>) -> i32 {
    crate::interrupt::install();
    let wants_json = args.iter().skip(1).any(|a| a == "--json");
    let matches = match Cli::command().try_get_matches_from(&args) {
        Ok(m) => m,
        Err(e) => return report_parse_error(e, wants_json, &command_name_of_args(&args)),
    };
    let name = command_name(&matches);
    let cli = match Cli::from_arg_matches(&matches) {
        Ok(c) => c,
        Err(e) => return report_parse_error(e, wants_json, &name),
    };
    let argv: Vec<String> = args
        .iter()
        .skip(1)
        .map(|a| a.to_string_lossy().into_owned())
        .collect();
    let GlobalArgs {
        root,
        json,
        quiet,
        result_file,
    } = cli.global;
    let reporter = Arc::new(StderrReporter::new(json, quiet));

    // A --result-file that could replace tsbsctl's own state, or whose directory does not
    // exist, is refused before the command runs, and then never written (trial-run #3). The
    // checks hold also when the root itself is refused (trial 2 N12).
    let root = Root::resolve(root.as_deref());
    let result_file_check = result_file
        .as_deref()
        .map(|p| crate::userpath::check_result_file(root.as_ref().ok(), p))
        .unwrap_or(Ok(()));
    let result_file_refused = result_file_check.is_err();
    let result = match (root, result_file_check) {
        (Err(root_err), Err(file_err)) => {
            // The root's error is the command's; the result file's is said too.
            let _ = writeln!(
                std::io::stderr(),
                "warning: --result-file not written: {}",
                file_err.message
            );
            Err(root_err)
        }
        (root, file_check) => root.and_then(|r| file_check.map(|_| r)),
    };
    let result = result.and_then(|root| {
        let ctx = Ctx {
            root,
            json,
            quiet,
            reporter,
            argv,
        };
        // Groups of a machine shape (--cpus/--memory) a killed tsbsctl left behind: every
        // command sweeps them, not only the next server start (a readdir of tsbsctl's own
        // group per hierarchy; a group that still has processes is left).
        crate::server::cgroup::sweep();
        let r = cli.command.run(&ctx);
        // A command that finished while a signal arrived still reports as interrupted.
        match r {
            Ok(_) if crate::interrupt::requested() => Err(Error::interrupted("interrupted")),
            other => other,
        }
    });

    let mut result = result;
    let mut doc = envelope(&name, &result);
    if let (Some(path), false) = (&result_file, result_file_refused) {
        let mut bytes = serde_json::to_vec_pretty(&doc).unwrap_or_default();
        bytes.push(b'\n');
        // Staged beside the target and renamed; its directory is never created, not even
        // when it vanished while the command ran (trial 2 N12).
        if let Err(e) = crate::fsutil::write_atomic_in_place(path, &bytes) {
            // The result asked for is missing: that is a failure, not a warning (#23).
            let err = match e.kind {
                ErrorKind::Invalid => Error::invalid(format!(
                    "could not write --result-file {}: {}",
                    path.display(),
                    e.message
                )),
                _ => Error::failed(format!("could not write --result-file: {e}")),
            }
            .with_hint("name a file in a writable directory, e.g. --result-file ./result.json");
            if result.is_ok() {
                result = Err(err);
                doc = envelope(&name, &result);
            } else {
                let _ = writeln!(std::io::stderr(), "warning: {}", err.message);
            }
        }
    }
    let mut out = std::io::stdout().lock();
    if json {
        let _ = writeln!(
            out,
            "{}",
            serde_json::to_string_pretty(&doc).unwrap_or_default()
        );
    }
    match result {
        Ok(outcome) => {
            let words = outcome.human.to_string();
            if !json && !words.is_empty() {
                let _ = write!(out, "{words}");
                if !words.ends_with('\n') {
                    let _ = writeln!(out);
                }
            }
            0
        }
        Err(err) => {
            let mut stderr = std::io::stderr().lock();
            if err.plain {
                let _ = writeln!(stderr, "{}", err.message);
                return err.exit_code();
            }
            let _ = writeln!(stderr, "error: {}", err.message);
            if let Some(hint) = &err.hint {
                let _ = writeln!(stderr, "hint: {hint}");
            }
            err.exit_code()
        }
    }
}

/// The subcommand path, e.g. `env prepare`, for the JSON envelope.
fn command_name(matches: &clap::ArgMatches) -> String {
    let mut parts = Vec::new();
    let mut m = matches;
    while let Some((name, sub)) = m.subcommand() {
        parts.push(name.to_string());
        m = sub;
    }
    // `bench <product> <phase>`: the phase is a value, but part of what was run (trial 2 N17).
    if let Ok(Some(mut phase)) = m.try_get_raw("phase") {
        if let Some(p) = phase.next() {
            parts.push(p.to_string_lossy().into_owned());
        }
    }
    parts.join(" ")
}

/// The command named on a command line that did not parse: its leading words that name
/// subcommands (and a bench phase), so `--json` errors still say what was run (trial 2 N17).
fn command_name_of_args(args: &[OsString]) -> String {
    let cmd = Cli::command();
    let mut cur = &cmd;
    let mut parts = Vec::new();
    let mut skip_value = false;
    for a in args.iter().skip(1) {
        let a = a.to_string_lossy();
        if std::mem::take(&mut skip_value) {
            continue;
        }
        if let Some(flag) = a.strip_prefix("--") {
            // `--root DIR`: the value is not a subcommand.
            skip_value = !flag.contains('=')
                && cur
                    .get_arguments()
                    .chain(cmd.get_arguments())
                    .any(|x| x.get_long() == Some(flag) && x.get_action().takes_values());
            continue;
        }
        if a.starts_with('-') {
            continue;
        }
        match cur.find_subcommand(a.as_ref()) {
            Some(sub) => {
                parts.push(a.into_owned());
                cur = sub;
            }
            None => {
                if cur.get_arguments().any(|x| x.get_id() == "phase") {
                    parts.push(a.into_owned());
                }
                break;
            }
        }
    }
    parts.join(" ")
}

fn report_parse_error(e: clap::Error, json: bool, name: &str) -> i32 {
    use clap::error::ErrorKind as K;
    match e.kind() {
        K::DisplayHelp | K::DisplayVersion | K::DisplayHelpOnMissingArgumentOrSubcommand => {
            let _ = e.print();
            if e.kind() == K::DisplayHelpOnMissingArgumentOrSubcommand {
                2
            } else {
                0
            }
        }
        _ => {
            if json {
                let err = Error::invalid(
                    e.to_string()
                        .trim()
                        .trim_start_matches("error: ")
                        .to_string(),
                )
                .with_hint("run with --help to see the accepted flags");
                let doc = envelope(name, &Err(err));
                println!("{}", serde_json::to_string_pretty(&doc).unwrap_or_default());
            }
            let _ = e.print();
            ErrorKind::Invalid.exit_code()
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cli_definition_is_consistent() {
        Cli::command().debug_assert();
    }

    /// Trial 2 N17: `--json` errors said `"command": ""` on a parse error and left out the
    /// bench phase.
    #[test]
    fn the_command_name_includes_the_phase_and_survives_a_parse_error() {
        let args = |s: &str| -> Vec<OsString> { s.split(' ').map(OsString::from).collect() };
        let a = args("tsbsctl bench greptimedb compact --database-id g1 --json");
        let m = Cli::command().try_get_matches_from(&a).unwrap();
        assert_eq!(command_name(&m), "bench greptimedb compact");
        let bad = args("tsbsctl bench greptimedb query --no-such-flag --json");
        assert!(Cli::command().try_get_matches_from(&bad).is_err());
        assert_eq!(command_name_of_args(&bad), "bench greptimedb query");
        assert_eq!(
            command_name_of_args(&args("tsbsctl --json --root /r runs list --bogus")),
            "runs list"
        );
    }
}
