//! `tsbsctl runs ...`: what was run. Each subcommand is one variant and one function, so
//! `list`, `show`, `compare`, `report` and `rerun` slot in beside `summarize`.

use serde_json::json;

use crate::context::Ctx;
use crate::error::Result;
use crate::output::Outcome;
use crate::run::{self, RunDir};

#[derive(Debug, clap::Subcommand)]
pub enum RunsCmd {
    /// Rebuild summary.json and summary.md of a run from what is on disk (a run left
    /// `running` by a dead process is marked interrupted first).
    Summarize {
        /// A run directory or a run id.
        #[arg(value_name = "RUN")]
        run: String,
    },
}

pub fn run(ctx: &Ctx, cmd: RunsCmd) -> Result<Outcome> {
    match cmd {
        RunsCmd::Summarize { run } => summarize(ctx, &run),
    }
}

fn summarize(ctx: &Ctx, run: &str) -> Result<Outcome> {
    let dir = run::resolve(&ctx.root, run)?;
    let r = RunDir::open(&dir, ctx.reporter.as_ref())?;
    let summary = crate::summary::write(&r)?;
    let md = r.dir.join("summary.md");
    Ok(Outcome::new(
        json!({
            "run_id": r.id(),
            "run_dir": r.dir,
            "status": r.manifest.status,
            "summary_json": r.dir.join("summary.json"),
            "summary_md": md,
            "summary": summary,
        }),
        format!(
            "Run {}: {}\nSummary: {}\n",
            r.id(),
            r.manifest.status.as_str(),
            md.display()
        ),
    ))
}
