//! `tsbsctl runs ...`: what was run. Each subcommand is one variant and one function; the
//! logic lives in `runlist`, `summary`, `compare`, `report`, `rerun` and `resume`.

use std::path::PathBuf;

use serde_json::{json, Value};

use crate::context::Ctx;
use crate::error::Result;
use crate::output::Outcome;
use crate::run::{self, RunDir};

#[derive(Debug, clap::Subcommand)]
pub enum RunsCmd {
    /// List the runs of every product, newest first.
    List,
    /// Show one run: its summary, rebuilt from disk (summary files are not rewritten).
    Show {
        /// A run directory or a run id.
        #[arg(value_name = "RUN")]
        run: String,
    },
    /// Rebuild summary.json and summary.md of a run from what is on disk (a run left
    /// `running` by a dead process is marked interrupted first).
    Summarize {
        /// A run directory or a run id.
        #[arg(value_name = "RUN")]
        run: String,
    },
    /// Compare candidate runs with a baseline run of the same product, dataset and query set
    /// (exits 0 even when candidates regress). A data state or data location (memtables vs
    /// SST files) that differs is a caveat on every verdict; an unknown state makes the
    /// latency verdicts "not comparable".
    Compare {
        /// The reference run.
        #[arg(long, value_name = "RUN")]
        baseline: String,
        /// A run compared with the baseline (repeatable).
        #[arg(long = "candidate", value_name = "RUN", required = true)]
        candidates: Vec<String>,
        /// Another run of the baseline's setup (same binary, data and queries; repeatable):
        /// with it the run-to-run drift is measured instead of assumed.
        #[arg(long = "replicate", value_name = "RUN")]
        replicates: Vec<String>,
        /// Noise band in percent: smaller changes count as unchanged.
        #[arg(long, value_name = "PCT", default_value_t = crate::compare::DEFAULT_THRESHOLD, allow_negative_numbers = true)]
        threshold: f64,
    },
    /// Cross-database report (Markdown + self-contained HTML with charts) of one or more runs.
    Report {
        /// Runs to report on (directories or ids), one column each.
        #[arg(value_name = "RUN", required = true)]
        runs: Vec<String>,
        /// The run ratios are computed against (default: the first RUN).
        #[arg(long, value_name = "RUN")]
        baseline: Option<String>,
        /// Write the report here instead of <root>/reports/<id> (a new or empty directory, or
        /// an earlier report's; never one holding other files).
        #[arg(long, value_name = "DIR")]
        out: Option<PathBuf>,
    },
    /// Run a benchmark again with the same pins and flags, in a new run directory.
    Rerun {
        /// The run to reproduce.
        #[arg(value_name = "RUN")]
        run: String,
        /// Benchmark this workspace instead (prepared with the run's pins when missing).
        #[arg(long, value_name = "ID")]
        database_id: Option<String>,
        /// Rerun although the workspace's data is in another state than the run measured
        /// (refused otherwise, exit 4); name the state the rerun will measure, e.g.
        /// "after manual compaction" or "as loaded".
        #[arg(long, value_name = "STATE")]
        accept_data_state: Option<String>,
    },
    /// Continue a run in its own directory: the query types a kill, crash or failure left
    /// undone, with the run's recorded flags and pins (those of `runs rerun`). An `all` or
    /// `load` run whose load did not finish is loaded again from the start (its inputs made
    /// again first if it was cut before they were), then queried; once its load had begun,
    /// that drops the workspace's SQL database and needs --confirm-reset DB. With
    /// --query-type, extend a run (finished or not) with more types: its query set is
    /// extended to them. A complete run without new types, or a workspace bound to another
    /// dataset since a cut load, is refused (exit 2); a run another process holds is busy
    /// (exit 3); a workspace whose data changed since the run is an integrity error (exit 4).
    /// The manifest, events and summary record each resume.
    Resume {
        /// The run to continue (a directory or a run id).
        #[arg(value_name = "RUN")]
        run: String,
        /// Add this query type to the run (repeatable, or comma-separated).
        #[arg(long = "query-type", value_name = "TYPE")]
        query_types: Vec<String>,
        /// Queries per added type (default: the run's profile's count).
        #[arg(long, value_name = "N", allow_negative_numbers = true)]
        queries: Option<i64>,
        /// Queries of one added type, TYPE=N (repeatable).
        #[arg(long = "query-count", value_name = "TYPE=N")]
        query_counts: Vec<String>,
        /// The workspace's SQL database: confirms that a resume which loads again drops
        /// what the cut load left there.
        #[arg(long, value_name = "DB")]
        confirm_reset: Option<String>,
    },
}

pub fn run(ctx: &Ctx, cmd: RunsCmd) -> Result<Outcome> {
    match cmd {
        RunsCmd::List => list(ctx),
        RunsCmd::Show { run } => show(ctx, &run),
        RunsCmd::Summarize { run } => summarize(ctx, &run),
        RunsCmd::Compare {
            baseline,
            candidates,
            replicates,
            threshold,
        } => {
            let c = crate::compare::run(
                ctx,
                &crate::compare::Request {
                    baseline,
                    candidates,
                    replicates,
                    threshold: Some(threshold),
                },
            )?;
            Ok(Outcome::new(c.data(), compare_words(&c)?))
        }
        RunsCmd::Report {
            runs,
            baseline,
            out,
        } => crate::report::run(
            ctx,
            &crate::report::Request {
                runs,
                baseline,
                out,
            },
        )
        .map(|r| Outcome::new(r.data(), report_words(&r))),
        RunsCmd::Rerun {
            run,
            database_id,
            accept_data_state,
        } => crate::rerun::run(
            ctx,
            &run,
            database_id.as_deref(),
            accept_data_state.as_deref(),
        ),
        RunsCmd::Resume {
            run,
            query_types,
            queries,
            query_counts,
            confirm_reset,
        } => crate::resume::run(
            ctx,
            &crate::resume::Request {
                run,
                query_types,
                queries,
                query_counts,
                confirm_reset,
            },
        ),
    }
}

fn list(ctx: &Ctx) -> Result<Outcome> {
    let runs = crate::runlist::list(&ctx.root);
    let human = crate::runlist::table(&runs);
    Ok(Outcome::new(json!({ "runs": runs }), human))
}

fn show(ctx: &Ctx, run: &str) -> Result<Outcome> {
    let l = crate::runlist::load(&ctx.root, run, ctx.reporter.as_ref())?;
    let md = crate::summary::render_md(&l.summary)?;
    Ok(Outcome::new(
        json!({
            "run_id": l.manifest.run_id,
            "run_dir": l.dir,
            "entry": crate::runlist::entry(&l.dir, &l.manifest),
            "manifest": l.manifest,
            "summary": l.summary,
        }),
        md,
    ))
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
            r.manifest.status.words(),
            md.display()
        ),
    ))
}

/// What `runs report` says to a person: what keeps the runs from being compared, then where
/// the report is.
fn report_words(r: &crate::report::Reported) -> String {
    let mut human = String::new();
    for w in &r.summary.incomplete {
        human.push_str(&format!("Incomplete: {w}\n"));
    }
    for w in &r.summary.warnings {
        human.push_str(&format!("Not strictly comparable: {w}\n"));
    }
    human.push_str(&format!(
        "Report of {} run(s) (id {}), baseline {}\nDirectory: {}\nHTML: {}\nMarkdown: {}\n",
        r.runs,
        r.id,
        r.summary.baseline_label,
        r.dir.display(),
        r.dir.join("report.html").display(),
        r.dir.join("summary.md").display()
    ));
    human
}

/// What `runs compare` says to a person: each candidate's verdicts, type by type, then where
/// the comparison is (or its summary, when it could not be saved).
fn compare_words(c: &crate::compare::Compared) -> Result<String> {
    use crate::compare::class_count as count;
    let mut human = String::new();
    for c2 in &c.summary.candidates {
        human.push_str(&format!(
            "{} ({}) vs baseline {}: improved {}, unchanged {} ({} of them within noise), regressed {}; ingestion {}\n",
            c2.identity.label,
            c2.identity.run_id,
            c.baseline,
            count(c2, "improved"),
            count(c2, "unchanged"),
            c2.within_noise,
            count(c2, "regressed"),
            c2.ingestion.classification(),
        ));
        if c2.verdict == "not comparable" {
            human.push_str("  latency verdicts: not comparable\n");
        }
        for q in &c2.queries {
            human.push_str(&format!("  {}\n", query_line(q)));
        }
        for cv in &c2.caveats {
            human.push_str(&format!("  caveat: {cv}\n"));
        }
    }
    match &c.dir {
        Some(dir) => human.push_str(&format!(
            "Comparison directory: {}\nSummary: {}\n",
            dir.display(),
            dir.join("summary.md").display()
        )),
        None => {
            human.push('\n');
            human.push_str(&crate::compare::render_md(&c.summary)?);
        }
    }
    Ok(human)
}

/// One type's verdict on one line: the change, its corrected interval, the class.
fn query_line(q: &crate::compare::QueryComparison) -> String {
    let n = &q.noise;
    let f = |v: &Value| v.as_f64().map_or("?".to_string(), |x| format!("{x:+.1}%"));
    match n["interval_percent"].as_array() {
        Some(iv) if iv.len() == 2 => format!(
            "{:<28} {:>8}  [{}, {}] at {:.2}%  {}",
            q.query_type,
            f(&n["change_percent"]),
            f(&iv[0]),
            f(&iv[1]),
            n["interval_level"].as_f64().unwrap_or(0.0) * 100.0,
            q.classification
        ),
        _ => format!(
            "{:<28} {:>8}  (no interval: the band alone)  {}",
            q.query_type,
            q.mean_ms
                .delta_percent
                .map_or("?".to_string(), |x| format!("{x:+.1}%")),
            q.classification
        ),
    }
}
