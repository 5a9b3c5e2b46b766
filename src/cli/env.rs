//! `tsbsctl env prepare|verify|show`: the Go toolchain and the TSBS build.

use std::path::PathBuf;

use crate::context::Ctx;
use crate::environment::go::GoVersion;
use crate::environment::tsbs::{self, SourceRequest};
use crate::environment::{self, GoRequest, PrepareRequest, Report};
use crate::error::Result;
use crate::output::Outcome;
use crate::sources::SourceKey;

#[derive(Debug, clap::Subcommand)]
pub enum EnvCmd {
    /// Choose or install Go, get TSBS at a pinned commit and build its tools (once per commit).
    ///
    /// Go: a system Go 1.21+ (PATH, then $GOROOT/bin) unless --go, --go-version or
    /// --managed-go says otherwise; else the managed Go the last prepare used; else a managed
    /// Go under environment/go/ (1.21.13, or $TSBSCTL_GO_VERSION, or [defaults] go_version).
    /// TSBS commit: --tsbs-rev, else $TSBSCTL_TSBS_REV, else [defaults] tsbs_rev in
    /// config.toml, else the pinned 81d12c8bc5aa985aed0d0d6f040a2cbcf77e4a82.
    Prepare(PrepareArgs),
    /// Re-check what `env prepare` recorded (checksums, go version); never uses the network.
    Verify {
        /// Also re-hash the whole managed Go tree.
        #[arg(long)]
        full: bool,
    },
    /// Show what `env prepare` recorded (Go, TSBS commit, binaries and their checksums).
    Show,
}

#[derive(Debug, clap::Args)]
pub struct PrepareArgs {
    /// Install (or reuse) this managed Go version, e.g. 1.22.5 (default 1.21.13).
    #[arg(long, value_name = "V", conflicts_with_all = ["go", "managed_go"])]
    pub go_version: Option<String>,
    /// Use this go binary.
    #[arg(long, value_name = "PATH", conflicts_with = "managed_go")]
    pub go: Option<PathBuf>,
    /// Use the managed Go even if an acceptable system Go exists.
    #[arg(long)]
    pub managed_go: bool,
    /// Download and install the managed Go again (repairs a corrupt one).
    #[arg(long, conflicts_with = "go")]
    pub reinstall_go: bool,
    /// TSBS git repository (default: $TSBSCTL_TSBS_REPO, [sources] tsbs_repo, GreptimeTeam/tsbs).
    #[arg(long, value_name = "URL", conflicts_with = "tsbs_dir")]
    pub tsbs_repo: Option<String>,
    /// TSBS commit to fetch and build (a full 40-character commit id).
    #[arg(long, value_name = "COMMIT", conflicts_with = "tsbs_dir")]
    pub tsbs_rev: Option<String>,
    /// Build from this existing TSBS checkout instead of fetching (its HEAD is recorded).
    #[arg(long, value_name = "PATH")]
    pub tsbs_dir: Option<PathBuf>,
    /// Accept a --tsbs-dir with uncommitted changes (the environment is then marked dirty).
    #[arg(long, requires = "tsbs_dir")]
    pub allow_dirty: bool,
    /// Rebuild every TSBS tool even if the recorded binaries are intact.
    #[arg(long)]
    pub rebuild: bool,
}

pub fn run(ctx: &Ctx, cmd: EnvCmd) -> Result<Outcome> {
    let report = match cmd {
        EnvCmd::Prepare(args) => {
            let req = request(ctx, args)?;
            environment::prepare(ctx, &req)?
        }
        EnvCmd::Verify { full } => {
            environment::verify(&ctx.root, full, &crate::product::tsbs_tools())?
        }
        EnvCmd::Show => environment::show(&ctx.root, &crate::product::tsbs_tools())?,
    };
    Ok(finish(ctx, report))
}

fn finish(ctx: &Ctx, report: Report) -> Outcome {
    for w in &report.warnings {
        ctx.reporter.warn(w);
    }
    Outcome::new(report.data(), words(&report))
}

/// The report's words for a person (the JSON `data` is [`Report::data`]).
fn words(report: &Report) -> String {
    let g = &report.go;
    let mut h = String::new();
    h.push_str(&format!(
        "Go source: {} ({})\n",
        g.source.as_str(),
        report.go_status
    ));
    h.push_str(&format!("Go version: {}\n", g.version));
    h.push_str(&format!("Go platform: {}\n", g.platform));
    h.push_str(&format!("Go binary: {}\n", g.binary.display()));
    h.push_str(&format!("Go binary SHA-256: {}\n", g.binary_sha256));
    if let Some(c) = &g.checksum_source {
        h.push_str(&format!("Go archive checksum vouched by: {c}\n"));
    }
    h.push_str(&format!("TSBS repo: {}\n", report.source.repo));
    h.push_str(&format!(
        "TSBS commit: {}{}\n",
        report.source.commit,
        if report.source.dirty { " (DIRTY)" } else { "" }
    ));
    h.push_str(&format!(
        "TSBS source: {} ({})\n",
        report.source.dir.display(),
        report.source_status
    ));
    h.push_str(&format!(
        "TSBS binaries: {}\n",
        report.dir.join("bin").display()
    ));
    for b in &report.binaries {
        h.push_str(&format!(
            "  {:<26} {}  {} (go{})\n",
            b.name, b.sha256, b.status, b.go_version
        ));
    }
    if let Some(v) = report.verified {
        h.push_str(&format!("Verified: yes ({v})\n"));
    }
    h
}

/// Turns flags into a request, validating everything before anything is changed.
fn request(ctx: &Ctx, a: PrepareArgs) -> Result<PrepareRequest> {
    let go = if let Some(v) = &a.go_version {
        GoRequest::Managed(GoVersion::parse_requested(v)?)
    } else if let Some(p) = a.go {
        GoRequest::Explicit(p)
    } else if a.managed_go {
        GoRequest::Managed(environment::go::default_version(&ctx.root)?)
    } else {
        GoRequest::Auto
    };
    let source = if let Some(dir) = &a.tsbs_dir {
        SourceRequest::Given(tsbs::from_dir(dir, a.allow_dirty)?)
    } else {
        let commit = match &a.tsbs_rev {
            Some(r) => tsbs::validate_commit("--tsbs-rev", r)?,
            None => tsbs::default_commit(&ctx.root)?.0,
        };
        let repo = match a.tsbs_repo {
            Some(r) => r,
            None => crate::product::load_sources(&ctx.root)?
                .get(SourceKey::TSBS_REPO)
                .to_string(),
        };
        SourceRequest::Fetch { repo, commit }
    };
    Ok(PrepareRequest {
        go,
        reinstall_go: a.reinstall_go,
        source,
        rebuild: a.rebuild,
        tools: crate::product::tsbs_tools(),
        source_keys: crate::product::source_keys(),
    })
}
