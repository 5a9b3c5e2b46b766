//! `runs resume RUN [--query-type T ...]`: continue a benchmark run in its own directory.
//!
//! A run that was killed, interrupted or failed part-way gets the query types it had not done
//! (a type is done when its passes completed), with the flags it recorded, resolved through
//! the path `runs rerun` uses (the same pins: TSBS build, server installation, workspace,
//! dataset checksum, query-set manifest). Giving query types extends the run, finished or not:
//! they are added to its workload and its query set is extended (a new set, staged and
//! published beside the old one, reusing the files of the types it already had).
//!
//! An `all` or `load` run whose load did not finish (cut or failed during its inputs, its
//! load or its row count) is run again from its inputs, in the same directory: a partial load
//! cannot be continued, so once the load had begun the workspace's SQL database is reset
//! (`--confirm-reset DB`, as any command that drops data asks), then loaded from the start,
//! counted and queried. What a resume will not do is refused before anything is written: a
//! run that is complete (exit 2, unless types are added), a cut load whose workspace now holds
//! another dataset (exit 2), a run another process holds (exit 3, naming the holder), a
//! workspace whose data is no longer what the run measured (exit 4).
//!
//! The resume is recorded: `resumes` in the run's manifest and a `resume` step in its events
//! say when, by which tsbsctl, which types it ran and added, and which earlier step attempts
//! (interrupted, failed) it superseded; the summary leaves those attempts out and says that
//! the run was resumed.

use std::collections::{BTreeMap, BTreeSet};

use serde_json::json;

use crate::bench::{self, Phase, RerunPins, ResumePlan};
use crate::context::Ctx;
use crate::dataset::Profile;
use crate::error::{Error, Result};
use crate::output::{Event, Outcome};
use crate::run::{self, ResumeRecord, RunDir, RunKind, RunManifest, Status, Step, StepRef};
use crate::tsbs::DatabaseMode;
use crate::workspace::WorkspaceManifest;

/// What `runs resume` asks for.
#[derive(Debug, Clone, Default)]
pub struct Request {
    pub run: String,
    /// Types to add (`--query-type`, repeatable or comma-separated).
    pub query_types: Vec<String>,
    /// Queries per added type (default: the run's profile's count).
    pub queries: Option<i64>,
    /// `TYPE=N` for added types.
    pub query_counts: Vec<String>,
    /// The SQL database's name: lets a resume that loads again drop what a cut load left.
    pub confirm_reset: Option<String>,
}

/// What is left of a run, from its steps.
#[derive(Debug, Clone, PartialEq)]
pub struct Left {
    /// Types whose passes all completed, with the query file SHA-256 they ran.
    pub done: BTreeMap<String, String>,
    /// Types to run again (or for the first time).
    pub todo: BTreeSet<String>,
    /// Step attempts the resume replaces (unfinished or failed ones, and the passes of a type
    /// that is run again).
    pub superseded: Vec<StepRef>,
}

/// The part of a step name after `query:`, `query-batch:`, `precision:`, `answers:` ...
fn type_of(step: &str) -> Option<&str> {
    step.split_once(':').map(|(_, t)| t)
}

/// Splits a run's query workload into done and to do (pure: unit-tested).
pub fn left(steps: &[Step], counts: &BTreeMap<String, u64>, passes: u32) -> Left {
    let mut done = BTreeMap::new();
    for qt in counts.keys() {
        let ok: Vec<&Step> = steps
            .iter()
            .filter(|s| s.step == format!("query:{qt}") && s.status == Status::Completed)
            .collect();
        if ok.len() as u32 >= passes {
            let sha = ok
                .last()
                .and_then(|s| s.data["file_sha256"].as_str())
                .unwrap_or_default()
                .to_string();
            done.insert(qt.clone(), sha);
        }
    }
    let todo: BTreeSet<String> = counts
        .keys()
        .filter(|t| !done.contains_key(*t))
        .cloned()
        .collect();
    let superseded = steps
        .iter()
        .filter(|s| {
            let unfinished = !matches!(s.status, Status::Completed | Status::Reused);
            let redone = type_of(&s.step).is_some_and(|t| todo.contains(t));
            unfinished || redone
        })
        .map(|s| StepRef {
            step: s.step.clone(),
            attempt: s.attempt,
        })
        .collect();
    Left {
        done,
        todo,
        superseded,
    }
}

fn profile_of(m: &RunManifest) -> Profile {
    match m.workload.benchmark().map(|w| w.profile.as_str()) {
        Some("smoke") => Profile::Smoke,
        _ => Profile::Manual,
    }
}

/// The types `req` adds to the run and their counts (exit 2 for a type the run has).
fn added(
    m: &RunManifest,
    counts: &BTreeMap<String, u64>,
    req: &Request,
) -> Result<BTreeMap<String, u64>> {
    let types: Vec<String> = req
        .query_types
        .iter()
        .flat_map(|t| t.split(','))
        .map(|t| t.trim().to_string())
        .filter(|t| !t.is_empty())
        .collect();
    if types.is_empty() {
        if req.queries.is_some() || !req.query_counts.is_empty() {
            return Err(Error::invalid(
                "--queries and --query-count apply to the query types a resume adds",
            )
            .with_hint("name them with --query-type T; the run's own types keep their counts"));
        }
        return Ok(BTreeMap::new());
    }
    let have: Vec<&str> = types
        .iter()
        .filter(|t| counts.contains_key(*t))
        .map(String::as_str)
        .collect();
    if !have.is_empty() {
        return Err(Error::invalid(format!(
            "run {} already has query type(s) {}",
            m.run_id,
            have.join(", ")
        ))
        .with_hint("add only types the run does not have (`tsbsctl runs show RUN` lists them); a resume runs the run's own unfinished types by itself"));
    }
    // The types of the run's use case (runs of older records are cpu-only).
    let use_case = m
        .dataset
        .as_ref()
        .and_then(|d| d.spec["use_case"].as_str())
        .unwrap_or("cpu-only");
    let uc = crate::dataset::use_case(use_case).ok_or_else(|| {
        Error::integrity(format!(
            "run {} records the use case {use_case:?}, which tsbsctl does not know",
            m.run_id
        ))
    })?;
    crate::queryset::resolve_counts_in(
        uc.query_types,
        profile_of(m),
        None,
        &types,
        req.queries,
        &req.query_counts,
    )
}

fn integrity(msg: String) -> Error {
    Error::integrity(msg).with_hint(
        "a resume continues only on the data the run measured; start a new run instead (`tsbsctl runs rerun RUN --database-id NEW`)",
    )
}

/// The workspace must still hold the data the run measured: the same dataset content, and
/// no load or maintenance since but the run's own (exit 4).
fn check_workspace_data(ctx: &Ctx, m: &RunManifest, product: &str, id: &str) -> Result<()> {
    let path = ctx.root.database(product, id).join("manifest.json");
    let ws: WorkspaceManifest = crate::manifest::read(&path)?;
    let Some(b) = ws.binding.as_ref() else {
        return Err(integrity(format!(
            "workspace {id} holds no loaded data any more (the run measured dataset {})",
            m.dataset.as_ref().map_or("?", |d| d.dataset_id.as_str())
        )));
    };
    if let Some(d) = &m.dataset {
        let same_content = match (&d.uncompressed_sha256, &d.sha256) {
            (Some(u), _) => *u == b.uncompressed_sha256,
            (None, Some(s)) => *s == b.sha256,
            (None, None) => true,
        };
        if b.dataset_id != d.dataset_id || !same_content {
            return Err(integrity(format!(
                "workspace {id} now holds dataset {} ({}), the run measured {} ({})",
                b.dataset_id,
                b.uncompressed_sha256,
                d.dataset_id,
                d.uncompressed_sha256
                    .as_deref()
                    .or(d.sha256.as_deref())
                    .unwrap_or("?")
            )));
        }
    }
    // The loads and other runs' maintenance since the run's record: its own flush (the
    // products' before-queries step) is not a change under it.
    if let Some(rec) = &m.data_state {
        let others = |s: &crate::workspace::manifest::DataState| {
            let mut s = s.clone();
            s.maintenance.retain(|x| x.run_id != m.run_id);
            s
        };
        if others(&rec.state) != others(&ws.data_state) {
            return Err(integrity(format!(
                "the data of workspace {id} changed after run {} recorded it: it was {}, it is {} (another load or maintenance)",
                m.run_id,
                rec.label,
                ws.data_state
                    .label(crate::product::ext::maintenance_words(&m.product))
            )));
        }
    }
    Ok(())
}

/// The dataset's stored spec is still the one the run recorded (exit 4 otherwise), and
/// agrees with its data (`data verify`'s check of `dataset.json`).
fn check_dataset(ctx: &Ctx, m: &RunManifest, dataset_root: Option<&std::path::Path>) -> Result<()> {
    let Some(d) = &m.dataset else { return Ok(()) };
    let root = ctx.root.clone().with_dataset_root(dataset_root)?;
    let ds = crate::dataset::Dataset::open(&root, &d.dataset_id)?;
    if ds.spec.to_value() != d.spec {
        return Err(Error::integrity(format!(
            "dataset {} has the spec {} in {}, the run used {}",
            ds.id,
            ds.spec.to_value(),
            ds.dir.join("dataset.json").display(),
            d.spec
        ))
        .with_hint("restore the dataset.json the run used; a resume never substitutes data"));
    }
    crate::dataset::check_stored_spec(&ds)
}

/// An `all` or `load` run whose load and row count did not both finish (cut during its
/// inputs, its load or its count, or failed there): its resume loads again from the start.
fn load_unfinished(phase: &str, steps: &[Step]) -> bool {
    let done = |name: &str| {
        steps
            .iter()
            .rev()
            .find(|s| s.step == name)
            .is_some_and(|s| matches!(s.status, Status::Completed | Status::Reused))
    };
    matches!(phase, "all" | "load") && !(done("load") && done("row-count"))
}

/// The database mode of a resume that loads again (exit 2 when it cannot, nothing written).
/// Once the run's load began (or the run asked for a reset), the workspace's SQL database may
/// hold part of the data: the load starts over with a reset, which drops it, and only with
/// `--confirm-reset DB`, as every command that drops data asks. A run cut before its load
/// loads as it asked. A workspace bound to another dataset since is not the run's to reload.
fn reload_mode(
    ctx: &Ctx,
    m: &RunManifest,
    steps: &[Step],
    product: &str,
    id: &str,
    req: &Request,
) -> Result<DatabaseMode> {
    let ws: WorkspaceManifest =
        crate::manifest::read(&ctx.root.database(product, id).join("manifest.json"))?;
    let wanted = m
        .dataset
        .as_ref()
        .map(|d| d.dataset_id.clone())
        .or_else(|| m.flags["dataset_id"].as_str().map(str::to_string));
    if let (Some(b), Some(want)) = (&ws.binding, &wanted) {
        if &b.dataset_id != want {
            return Err(Error::invalid(format!(
                "workspace {id} now holds dataset {}, not {want}, which run {} was loading: resuming would replace data loaded since",
                b.dataset_id, m.run_id
            ))
            .with_hint("load the run's dataset in a new run and workspace: `tsbsctl runs rerun RUN --database-id NEW`"));
        }
    }
    let began = steps
        .iter()
        .any(|s| matches!(s.step.as_str(), "before-load" | "load" | "row-count"));
    let asked = m.flags["database_mode"]
        .as_str()
        .map(DatabaseMode::parse)
        .transpose()?
        .unwrap_or(DatabaseMode::Create);
    let mode = if began { DatabaseMode::Reset } else { asked };
    if mode == DatabaseMode::Reset && req.confirm_reset.as_deref() != Some(ws.database.as_str()) {
        let why = if began {
            format!(
                "the load of run {} began and did not finish: workspace {id}'s SQL database {} may hold part of the data, and a resume loads again from the start, dropping it",
                m.run_id, ws.database
            )
        } else {
            format!(
                "run {} asked for --database-mode reset: its resume drops workspace {id}'s SQL database {}",
                m.run_id, ws.database
            )
        };
        let why = match req.confirm_reset.as_deref() {
            Some(c) => format!("--confirm-reset {c:?} does not name the SQL database: {why}"),
            None => why,
        };
        return Err(Error::invalid(why).with_hint(format!(
            "confirm the reset: `tsbsctl runs resume {} --confirm-reset {}`",
            m.run_id, ws.database
        )));
    }
    if mode != DatabaseMode::Reset && req.confirm_reset.is_some() {
        return Err(Error::invalid(format!(
            "run {} was cut before its load, which it asked to make with --database-mode {}: there is no reset to confirm",
            m.run_id,
            mode.as_str()
        ))
        .with_hint("drop --confirm-reset"));
    }
    Ok(mode)
}

/// Runs `runs resume`.
pub fn run(ctx: &Ctx, req: &Request) -> Result<Outcome> {
    let dir = run::resolve(&ctx.root, &req.run)?;
    // Held while the checks run and then for the whole resume (exit 3 while another process
    // works in the run).
    let run = RunDir::reopen(&dir, &ctx.command_line(), ctx.reporter.as_ref())?;
    let m = run.manifest.clone();
    if m.run_kind != RunKind::Benchmark || !matches!(m.phase.as_str(), "all" | "query" | "load") {
        return Err(Error::invalid(format!(
            "run {} is a {} run; a resume continues `all`, `load` and `query` runs",
            m.run_id,
            if m.run_kind == RunKind::Benchmark {
                m.phase.as_str()
            } else {
                m.run_kind.as_str()
            }
        ))
        .with_hint("start it again as a new run: `tsbsctl runs rerun RUN`"));
    }
    if !m.target.is_managed() {
        return Err(Error::invalid(format!(
            "run {} benchmarked an external server, whose data and version tsbsctl cannot check",
            m.run_id
        ))
        .with_hint(format!(
            "run the recorded command again yourself: {}",
            m.command
        )));
    }
    let env = m.environment.clone().ok_or_else(|| {
        Error::invalid(format!(
            "run {} ended before its first step: there is nothing to continue",
            m.run_id
        ))
        .with_hint("start it again: `tsbsctl runs rerun RUN`")
    })?;
    let steps = run.steps()?;
    let reload = load_unfinished(&m.phase, &steps);
    if m.phase == "load" && !reload {
        return Err(Error::invalid(format!(
            "run {} is {}, but its load and row count are done: there is nothing to continue",
            m.run_id,
            m.status.words()
        ))
        .with_hint("load again in a new run: `tsbsctl runs rerun RUN`"));
    }
    let counts = m
        .workload
        .benchmark()
        .map(|w| w.query_counts.clone())
        .unwrap_or_default();
    let passes = m.flags["passes"].as_u64().unwrap_or(1).max(1) as u32;
    let added = added(&m, &counts, req)?;
    if reload && !added.is_empty() {
        return Err(Error::invalid(format!(
            "the load of run {} did not finish: a resume loads again and runs the run's own query types first",
            m.run_id
        ))
        .with_hint("resume it without --query-type, then extend it: `tsbsctl runs resume RUN --query-type T`"));
    }
    if !reload && req.confirm_reset.is_some() {
        return Err(Error::invalid(format!(
            "run {} loaded its data: its resume does not load, so there is no reset to confirm",
            m.run_id
        ))
        .with_hint("drop --confirm-reset"));
    }
    let left = left(&steps, &counts, passes);
    if !reload && left.todo.is_empty() && added.is_empty() {
        let why = match m.status {
            Status::Completed | Status::CompletedWithFailures => format!(
                "run {} is {}: every query type is done",
                m.run_id,
                m.status.words()
            ),
            s => format!(
                "run {} is {}, but every query type is done: there is nothing to continue{}",
                m.run_id,
                s.words(),
                m.error
                    .as_ref()
                    .map(|e| format!(" (it ended with: {})", e.message))
                    .unwrap_or_default()
            ),
        };
        return Err(Error::invalid(why).with_hint(
            "extend it with more query types (`tsbsctl runs resume RUN --query-type T`), or measure again in a new run (`tsbsctl runs rerun RUN`)",
        ));
    }
    let (entry, product) = crate::rerun::product_of(&m)?;
    // The pins a rerun checks (TSBS build, installation, workspace version and binary), then
    // the data the run measured.
    let tsbs_key = crate::rerun::check_environment(ctx, &env)?;
    let database_id = crate::rerun::check_target(ctx, &m, product.as_ref(), None)?;
    let load_mode = if reload {
        Some(reload_mode(
            ctx,
            &m,
            &steps,
            product.name(),
            &database_id,
            req,
        )?)
    } else {
        check_workspace_data(ctx, &m, product.name(), &database_id)?;
        None
    };
    let extending = !added.is_empty();
    let pins = RerunPins {
        rerun_of: m.run_id.clone(),
        tsbs_key,
        dataset_sha256: m.dataset.as_ref().and_then(|d| d.sha256.clone()),
        // An extension makes a larger set; the done types' files are held to their records.
        query_set_manifest_sha256: if extending {
            None
        } else {
            m.query_set.as_ref().map(|q| q.manifest_sha256.clone())
        },
    };
    let mut breq = crate::rerun::request(&m, database_id, pins)?;
    if let Some(mode) = load_mode {
        // The run again from its inputs (made or reused as the run made them), its load
        // from the start, then its queries.
        breq.mode = Some(mode);
        breq.confirm_reset = req.confirm_reset.clone();
    } else {
        // A resume is the query part of the run: the load's flags do not apply.
        breq.phase = Some(Phase::Query);
        breq.mode = None;
        breq.confirm_reset = None;
        breq.compression = None;
    }
    breq.flags = m.flags.clone();
    check_dataset(ctx, &m, breq.dataset_root.as_deref())?;
    // The dataset is the run's, by id (its spec is held to the run's record), so an edited
    // dataset.json is the integrity error it is, not a request for other settings. (The
    // profile only chose defaults the run recorded: its workload stays as it is.) A run cut
    // before it recorded its dataset names it by its flags, spec ones included.
    if m.dataset.is_some() {
        breq.spec = crate::dataset::SpecOverrides::default();
    }
    // A resume that loads again does the run over from its inputs: every earlier step attempt
    // (the earlier resumes' records aside) is replaced by its own.
    let superseded: Vec<StepRef> = if reload {
        steps
            .iter()
            .filter(|s| s.step != "resume")
            .map(|s| StepRef {
                step: s.step.clone(),
                attempt: s.attempt,
            })
            .collect()
    } else {
        left.superseded.clone()
    };
    let mut all_counts = counts.clone();
    all_counts.extend(added.clone());
    let mut types = left.todo.clone();
    types.extend(added.keys().cloned());
    let record = ResumeRecord {
        at: crate::manifest::now_rfc3339(),
        tool: run::ToolInfo::current(),
        command: ctx.command_line(),
        pid: std::process::id(),
        previous_status: m.status,
        query_types: types.iter().cloned().collect(),
        added_query_types: added.keys().cloned().collect(),
        superseded: superseded.clone(),
        previous_query_set: None,
        load_mode: load_mode.map(|m| m.as_str().to_string()),
    };
    // The run's own write and query numbers (its workload records them as resolved then).
    if let Some(w) = m.workload.benchmark() {
        let n = |v: u64| u32::try_from(v).ok();
        breq.load_workers = n(w.load_workers).or(breq.load_workers);
        breq.batch_size = n(w.batch_size).or(breq.batch_size);
        breq.query_workers = n(w.query_workers).or(breq.query_workers);
    }
    breq.resume = Some(ResumePlan {
        query_types: types.clone(),
        counts: all_counts,
        base_query_set: if extending {
            m.query_set.as_ref().map(|q| q.query_set_path.clone())
        } else {
            None
        },
        done_files: left.done.clone(),
        record: Some(record),
    });
    ctx.reporter.event(&Event::Resuming {
        run: m.run_id.to_string(),
        status: m.status.words().to_string(),
        load_again: load_mode.map(|mode| mode.as_str().to_string()),
        types: types.len(),
        added: added.keys().cloned().collect(),
    });
    let mut out = bench::resume(ctx, entry, &breq, run)?;
    out.data["resumed"] = json!({
        "load_mode": load_mode.map(|m| m.as_str()),
        "query_types": types,
        "added_query_types": added.keys().collect::<Vec<_>>(),
        "superseded": superseded,
    });
    out.human = crate::output::Words::Resumed {
        run: m.run_id.to_string(),
        query_types: types.into_iter().map(|t| t.to_string()).collect(),
        then: Box::new(out.human),
    };
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::Value;

    fn step(name: &str, attempt: u32, status: Status, sha: Option<&str>) -> Step {
        Step {
            step: name.into(),
            attempt,
            status,
            started_at: String::new(),
            finished_at: None,
            log: None,
            results: None,
            reason: None,
            data: sha.map_or(Value::Null, |s| json!({ "file_sha256": s })),
        }
    }

    fn counts(types: &[&str]) -> BTreeMap<String, u64> {
        types.iter().map(|t| (t.to_string(), 10)).collect()
    }

    #[test]
    fn done_types_stay_and_unfinished_attempts_are_superseded() {
        let steps = [
            step("load", 1, Status::Completed, None),
            step("server", 2, Status::Interrupted, None),
            step("query:lastpoint", 1, Status::Completed, Some("aa")),
            step("query:single-groupby-1-1-1", 1, Status::Interrupted, None),
        ];
        let l = left(
            &steps,
            &counts(&["lastpoint", "single-groupby-1-1-1", "high-cpu-1"]),
            1,
        );
        assert_eq!(l.done.get("lastpoint").map(String::as_str), Some("aa"));
        assert_eq!(
            l.todo.iter().map(String::as_str).collect::<Vec<_>>(),
            ["high-cpu-1", "single-groupby-1-1-1"]
        );
        let sup: Vec<(&str, u32)> = l
            .superseded
            .iter()
            .map(|s| (s.step.as_str(), s.attempt))
            .collect();
        assert_eq!(
            sup,
            [("server", 2), ("query:single-groupby-1-1-1", 1)],
            "the completed load and the done type stay"
        );
    }

    #[test]
    fn a_type_short_of_its_passes_is_run_again_whole() {
        let steps = [
            step("query:lastpoint", 1, Status::Completed, Some("aa")),
            step("query:lastpoint", 2, Status::Completed, Some("aa")),
            step("query:high-cpu-1", 1, Status::Completed, Some("bb")),
            step("query-batch:high-cpu-1", 1, Status::Completed, None),
        ];
        let l = left(&steps, &counts(&["lastpoint", "high-cpu-1"]), 2);
        assert!(l.done.contains_key("lastpoint"));
        assert!(l.todo.contains("high-cpu-1"));
        assert_eq!(l.superseded.len(), 2, "{:?}", l.superseded);
    }

    #[test]
    fn a_failed_type_is_not_done() {
        let steps = [step("query:lastpoint", 1, Status::Failed, Some("aa"))];
        let l = left(&steps, &counts(&["lastpoint"]), 1);
        assert!(l.done.is_empty());
        assert_eq!(l.superseded.len(), 1);
    }

    #[test]
    fn a_load_is_redone_unless_it_and_its_count_finished_last_issue_22() {
        let cut = [
            step("dataset", 1, Status::Completed, None),
            step("load", 1, Status::Interrupted, None),
        ];
        assert!(load_unfinished("all", &cut));
        assert!(load_unfinished("load", &cut));
        assert!(!load_unfinished("query", &cut), "a query run never loads");
        // Cut before the load: nothing of it recorded.
        assert!(load_unfinished("all", &cut[..1]));
        // A load whose count failed is not done.
        let counted = [
            step("load", 1, Status::Completed, None),
            step("row-count", 1, Status::Failed, None),
        ];
        assert!(load_unfinished("all", &counted));
        // The last attempt counts: a resume's finished load after the cut one.
        let redone = [
            step("load", 1, Status::Interrupted, None),
            step("load", 2, Status::Completed, None),
            step("row-count", 1, Status::Completed, None),
        ];
        assert!(!load_unfinished("all", &redone));
        let reused = [
            step("load", 1, Status::Reused, None),
            step("row-count", 1, Status::Completed, None),
        ];
        assert!(!load_unfinished("load", &reused));
    }
}
