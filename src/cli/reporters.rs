//! The words of the core's status lines. The core emits typed [`Event`]s through the
//! [`Reporter`](crate::output::Reporter) and never builds a sentence; this is the one place
//! that says them (as uv's `Reporter` traits do, design-2 §3.2).

use std::fmt;

use crate::output::{
    count_of, BenchOutcome, BuildReason, Event, FailureGroups, LeftBy, UrlUser, Warning, Words,
};

impl fmt::Display for LeftBy {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            LeftBy::EarlierRun => f.write_str("of an earlier run"),
            LeftBy::Interrupted(tag) => write!(f, "of an interrupted {tag}"),
            LeftBy::Generation => f.write_str("left by an interrupted generation or adoption"),
            LeftBy::QuerySetGeneration => {
                f.write_str("left by an interrupted query-set generation")
            }
        }
    }
}

impl fmt::Display for BuildReason {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            BuildReason::Asked => "--rebuild",
            BuildReason::DirtyCheckout => "the checkout is dirty",
            BuildReason::NotBuilt => "not built yet",
            BuildReason::Missing => "the binary is missing",
            BuildReason::Drifted => "its checksum drifted",
        })
    }
}

impl fmt::Display for Event {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            // -- download and install
            Event::Downloading { file, url } => write!(f, "downloading {file} from {url}"),
            Event::UsingVerifiedDownload { path } => {
                write!(f, "using the verified download {}", path.display())
            }
            Event::Retrying {
                error,
                delay,
                from_byte,
            } => {
                write!(f, "{error}; retrying in {:.1}s", delay.as_secs_f64())?;
                match from_byte {
                    Some(b) => write!(f, " from byte {b}"),
                    None => Ok(()),
                }
            }
            Event::NoResume { url } => {
                write!(f, "{url} does not support resuming; starting over")
            }
            Event::Installing { product } => write!(f, "installing {product}"),
            Event::RemovedLeftover { path, left_by } => match left_by {
                LeftBy::EarlierRun | LeftBy::Interrupted(_) => {
                    write!(f, "removed leftover {} {left_by}", path.display())
                }
                LeftBy::Generation | LeftBy::QuerySetGeneration => {
                    write!(f, "removed {}, {left_by}", path.display())
                }
            },
            Event::CheckingGo { archive, index_url } => {
                write!(f, "checking {archive} against {index_url}")
            }
            Event::Extracting { archive } => write!(f, "extracting {archive}"),
            Event::GoInstalled { version, dir } => {
                write!(f, "installed Go {version} in {}", dir.display())
            }
            Event::GoNotUsed { path, why } => write!(f, "not using {}: {why}", path.display()),
            Event::FetchingTsbs { commit, repo } => {
                write!(f, "fetching TSBS {commit} from {repo}")
            }
            Event::Building {
                tool,
                reason,
                go_version,
            } => write!(f, "building {tool} ({reason}) with Go {go_version}"),

            // -- server
            Event::WaitingForServer {
                label,
                until,
                timeout,
            } => {
                write!(f, "waiting for {label} to answer")?;
                if let Some(w) = until {
                    write!(f, ": {w}")?;
                }
                write!(
                    f,
                    " (up to {:.0} s, --startup-timeout)",
                    timeout.as_secs_f64()
                )
            }
            Event::StoppingDiscarded {
                label,
                why,
                kill_after,
            } => write!(
                f,
                "stopping {label}: {why}; SIGKILL after {:.0} s",
                kill_after.as_secs_f64()
            ),
            Event::StoppingDraining {
                label,
                stall,
                limit,
            } => write!(
                f,
                "stopping {label}: it finishes its running and queued flush and compaction jobs before it exits; waiting while it makes progress (SIGKILL after {:.0} s without progress, or {:.0} s in all)",
                stall.as_secs_f64(),
                limit.as_secs_f64()
            ),

            // -- workspace
            Event::NoneInstalled { product, latest } => {
                write!(f, "no {product} installed; the latest release is {latest}")
            }
            Event::PortShared { id, shared } => {
                let list = shared
                    .iter()
                    .map(|s| format!("{} ({} workspace {})", s.port, s.product, s.workspace))
                    .collect::<Vec<_>>()
                    .join(", ");
                write!(
                    f,
                    "note: workspace {id} listens on a port another workspace uses: {list}; they cannot serve at the same time (pick another with --http-port)"
                )
            }
            Event::CopyingWorkspace { from, id } => {
                write!(f, "copying {} to workspace {id}", from.display())
            }
            Event::DeletingObjects { location } => {
                write!(f, "deleting the workspace's objects in {location}")
            }

            // -- datasets and query sets
            Event::OtherBuildSameCommit {
                what,
                commit,
                recorded_sha256,
                recorded_go,
                prepared_sha256,
                prepared_go,
            } => write!(
                f,
                "note: {what} was generated by another build of TSBS commit {commit} (binary SHA-256 {recorded_sha256}, {recorded_go}) than the prepared one (binary SHA-256 {prepared_sha256}, {prepared_go}); the same commit generates the same data, so it is reused (its manifest keeps the generator that wrote it)"
            ),
            Event::VerifyingChanged { path } => write!(
                f,
                "{} changed on disk since it was recorded (size, mtime or inode); verifying it before reuse",
                path.display()
            ),
            Event::Adopted {
                dataset,
                format,
                rows,
                bytes,
                hard_link,
            } => write!(
                f,
                "adopted {dataset}/{format}: {rows} rows, {bytes} bytes ({})",
                if *hard_link { "hard link" } else { "copy" }
            ),
            Event::Generating {
                dataset,
                format,
                compression,
                rows,
                exact,
            } => write!(
                f,
                "generating {dataset} ({format}, {compression}): {} {rows} rows",
                if *exact { "" } else { "at most" }
            ),
            Event::Generated {
                rows,
                bytes,
                seconds,
            } => write!(f, "generated {rows} rows ({bytes} bytes) in {seconds:.1}s"),
            Event::QuerySetPublished { id, dir } => {
                write!(f, "query set {id} published at {}", dir.display())
            }
            Event::GeneratingQuerySet {
                id,
                types,
                parallel,
            } => write!(
                f,
                "generating query set {id}: {types} types, {parallel} at a time"
            ),
            Event::ExtendingQuerySet {
                from,
                id,
                copied,
                generated,
                parallel,
            } => write!(
                f,
                "extending query set {from} to {id}: {copied} types copied, {generated} generated, {parallel} at a time"
            ),

            // -- benchmark runs
            Event::LoadSkipped { workspace, dataset } => write!(
                f,
                "workspace {workspace} already holds dataset {dataset}: load skipped"
            ),
            Event::Loading {
                rows,
                dataset,
                tool,
                workers,
                batch,
                log,
            } => write!(
                f,
                "loading {rows} rows of {dataset} with {tool} ({} x {batch} rows); its reports every 10 s go to {}",
                count_of(workers, "worker"),
                log.display()
            ),
            Event::TableCreated {
                table,
                regions,
                column,
            } => write!(
                f,
                "created table {table} split into {regions} regions on {column} (the schema the server auto-creates from the dataset's first line)"
            ),
            Event::RunIn {
                operation,
                run,
                dir,
            } => {
                if let Some(op) = operation {
                    write!(f, "{op} ")?;
                }
                write!(f, "run {run} in {}", dir.display())
            }
            Event::ServerReady { label, endpoint } => write!(f, "{label} ready at {endpoint}"),
            Event::CountingRows { tables, expected } => write!(
                f,
                "counting the rows of {} before the queries (the workspace is bound to {expected})",
                tables.join(", ")
            ),
            Event::WaitingForAnswer { sql, server } => write!(
                f,
                "{sql}: waiting for {server}'s answer (it answers once the work is done; Ctrl-C stops)"
            ),
            Event::Answered { step, seconds } => write!(f, "{step} answered after {seconds:.1} s"),
            Event::ExternalVersion {
                product,
                urls,
                version,
            } => write!(
                f,
                "external {product} at {} reports version {}",
                urls.join(", "),
                version.as_deref().unwrap_or("unknown")
            ),
            Event::ClusterInfo {
                summary,
                frontends_unused,
            } => {
                write!(
                    f,
                    "its information_schema.cluster_info lists {}",
                    summary.as_deref().unwrap_or("unknown")
                )?;
                if *frontends_unused > 0 {
                    write!(
                        f,
                        "; {frontends_unused} frontend(s) no --url reaches take no part in this run"
                    )?;
                }
                Ok(())
            }
            Event::BuildingRecordedTsbs { commit, go } => write!(
                f,
                "TSBS {commit} is not built here: building it with Go {go}"
            ),
            Event::PreparingWorkspace {
                id,
                product,
                version,
                http_port,
            } => write!(
                f,
                "preparing workspace {id} with {product} {version} on HTTP port {http_port}"
            ),
            Event::Rerunning {
                run,
                product,
                version,
            } => write!(
                f,
                "rerunning {run} ({product} {}) with its pins",
                version.as_deref().unwrap_or("?")
            ),
            Event::Resuming {
                run,
                status,
                load_again,
                types,
                added,
            } => {
                write!(f, "resuming run {run} ({status}): ")?;
                if let Some(mode) = load_again {
                    write!(
                        f,
                        "its load again from the start (database mode {mode}), "
                    )?;
                }
                write!(f, "{types} query type(s) to run")?;
                if !added.is_empty() {
                    write!(f, ", {} added", added.join(", "))?;
                }
                Ok(())
            }
            Event::Precision {
                query_type,
                target_pct,
                reached,
                stop,
                half_width,
                queries,
                batches,
            } => {
                write!(f, "query type {query_type}: target ±{target_pct}%: ")?;
                match (reached, half_width) {
                    (true, Some(h)) => write!(
                        f,
                        "±{:.2}% after {queries} queries in {batches} batch(es)",
                        h * 100.0
                    ),
                    (false, Some(h)) => write!(
                        f,
                        "not reached ({stop}): ±{:.2}% after {queries} queries in {batches} batch(es)",
                        h * 100.0
                    ),
                    (_, None) => write!(f, "not reached: {stop}"),
                }
            }
            Event::ProgressResumed { tool, count, unit } => {
                write!(f, "{tool}: progress resumed ({count} {unit})")
            }
            Event::QuickstartEnvironment => {
                f.write_str("quickstart: preparing the TSBS environment (Go and the TSBS tools)")
            }
            Event::QuickstartWorkspace { product, id } => write!(
                f,
                "quickstart: preparing the {product} workspace `{id}`"
            ),
            Event::WaitingForLock {
                label,
                holder,
                wait,
            } => write!(
                f,
                "waiting up to {}s for {label}: held by {holder}",
                wait.as_secs()
            ),
        }
    }
}

impl fmt::Display for Warning {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            // -- download and install
            Warning::DamagedDownload { path, sha256 } => write!(
                f,
                "{} is damaged (sha256 {sha256}); downloading it again",
                path.display()
            ),
            Warning::ResumedDownloadBad { url } => write!(
                f,
                "the resumed download of {url} does not verify; downloading it again from the start"
            ),
            Warning::GithubTokenUnusable => f.write_str(
                "GITHUB_TOKEN holds characters not allowed in an HTTP header; it is not used",
            ),
            Warning::ReplacedNotRemoved { path, error } => write!(
                f,
                "could not remove the replaced installation {}: {error}",
                path.display()
            ),
            Warning::RestoringInstall { path } => write!(
                f,
                "restoring {} from an interrupted reinstall",
                path.display()
            ),
            Warning::GoNotInIndex { index_url, archive } => write!(
                f,
                "the Go download index at {index_url} does not list {archive}; using the compiled checksum"
            ),
            Warning::GoIndexUnreadable { archive, why } => write!(
                f,
                "could not cross-check {archive} with the Go download index ({why}); using the compiled checksum"
            ),
            Warning::TsbsCheckoutStale { path, head, commit } => write!(
                f,
                "{} holds {head} or has local changes; fetching {commit} again",
                path.display()
            ),
            Warning::TsbsCheckoutUnusable { path, commit } => write!(
                f,
                "{} is not a usable checkout; fetching {commit} again",
                path.display()
            ),
            Warning::SeedIgnored { major, minor } => write!(
                f,
                "this TSBS's go.mod says go {major}.{minor}: Go then ignores math/rand.Seed (GODEBUG randseednop=1), so its generators may not reproduce a dataset or query set from its seed"
            ),
            Warning::BuildRecordUnreadable { error } => write!(f, "{error}; rebuilding"),
            Warning::BinaryDrifted {
                path,
                recorded,
                found,
            } => write!(
                f,
                "{} changed since it was built (recorded {recorded}, found {found}); rebuilding",
                path.display()
            ),

            // -- workspaces, locks and servers
            Warning::HoldTokenIgnored { label } => write!(
                f,
                "{label} has no manual hold (it was released); --hold-token is ignored"
            ),
            Warning::ConfigDiffers { path, written_by } => write!(
                f,
                "{} differs from what this tsbsctl would write today (it was written by tsbsctl {written_by})",
                path.display()
            ),
            Warning::OutsideSetting {
                file,
                name,
                value,
                overridden,
            } => write!(
                f,
                "{file} sets {name} = '{value}': {}",
                if *overridden {
                    "tsbsctl's value replaces it when the server runs"
                } else {
                    "in force when the server runs, recorded with the run's settings"
                }
            ),
            Warning::OrphanGone {
                pid,
                started_at,
                tsbsctl_pid,
                log,
            } => write!(
                f,
                "a server (pid {pid}) started at {started_at} by tsbsctl pid {tsbsctl_pid} was not stopped by tsbsctl; it is no longer running (log: {})",
                log.display()
            ),
            Warning::StoppingOrphan { pid, grace } => write!(
                f,
                "stopping orphaned server pid {pid} (SIGTERM, then SIGKILL after {}s)",
                grace.as_secs_f64()
            ),
            Warning::KilledAfterGrace { label } => write!(
                f,
                "{label} did not stop within the grace period and was killed"
            ),
            Warning::ServerStopForced { seconds } => write!(
                f,
                "the server did not stop within the grace period and was killed (SIGKILL after {seconds:.1} s); work it still had queued was lost"
            ),
            Warning::ServerKilledInShutdown { how, seconds } => write!(
                f,
                "the server was killed during its shutdown ({how}, not sent by tsbsctl) after {seconds:.1} s; its shutdown did not finish, so the next start recovers"
            ),

            // -- runs and comparisons
            Warning::DataStateAccepted { run, original, now } => write!(
                f,
                "run {run} measured data {original}; this rerun measures data {now} (accepted with --accept-data-state)"
            ),
            Warning::ReadOnlyRun { run } => write!(
                f,
                "run {run} is on read-only media: shown as interrupted, but that cannot be recorded there"
            ),
            Warning::ComparisonNotSaved { dir, error } => write!(
                f,
                "{} is on read-only media: the comparison is shown but not saved ({error})",
                dir.display()
            ),

            // -- benchmark runs
            Warning::NotQuiet { before, reading } => write!(
                f,
                "the machine is not quiet before {before}: {reading} (summary.md warns; --require-quiet refuses)"
            ),
            Warning::UrlsUnused {
                tool: UrlUser::Loader,
                workers,
                used,
                urls,
            } => write!(
                f,
                "the loader's {workers} worker(s) write through {used} of the {urls} --url endpoints (worker i writes to URL i mod {urls}); pass --workers {urls} to spread the load over all"
            ),
            Warning::UrlsUnused {
                tool: UrlUser::QueryRunner,
                workers,
                used,
                urls,
            } => write!(
                f,
                "the query runner's {workers} worker(s) use {used} of the {urls} --url endpoints (worker i queries URL i mod {urls}); pass --query-workers {urls} to query through all"
            ),
            Warning::AnswersNotChecked { runner } => write!(
                f,
                "--check-answers: {runner} prints no responses tsbsctl can read; answers not checked"
            ),
            Warning::QueryTypeFailed { query_type, reason } => {
                write!(f, "query type {query_type} failed: {reason}")
            }
            Warning::QueryTypeFailedAsBefore { query_type, first } => write!(
                f,
                "query type {query_type} failed: the same cause as {first}"
            ),
            Warning::QueryBatchFailed {
                query_type,
                batch,
                reason,
            } => write!(f, "query type {query_type}, batch {batch} failed: {reason}"),
            Warning::ServerDiedUnder { query_type, what } => write!(
                f,
                "query type {query_type}: {what}; starting the server again for the other types"
            ),
            Warning::RegionRowsDiffer {
                table,
                regions,
                loaded,
            } => write!(
                f,
                "the regions of {table} report {} rows in all (information_schema.region_statistics), the load {loaded}",
                match regions {
                    Some(n) => n.to_string(),
                    None => "null".into(),
                }
            ),
            Warning::EmptyRegions { table, regions } => {
                write!(f, "region(s) {} of {table} hold no rows", regions.join(", "))
            }
            Warning::NoTimeline { error } => write!(f, "no resource timeline: {error}"),
            Warning::Stalled {
                tool,
                seconds,
                count,
                unit,
                stopped: false,
            } => write!(
                f,
                "{tool} made no progress for {seconds} s (still at {count} {unit}); it may be retrying a write the server keeps refusing: see the server log. Stop it with Ctrl-C, or pass --on-stall stop"
            ),
            Warning::Stalled {
                tool,
                seconds,
                count,
                unit,
                stopped: true,
            } => write!(
                f,
                "{tool} made no progress for {seconds} s (stuck at {count} {unit}): stopped (--on-stall stop)"
            ),
            Warning::DiedUnderQueries { failures, groups } => write!(
                f,
                "{failures} failure(s), results of the server running out of memory or dying under a query type: {groups}"
            ),
            Warning::Product { text } => f.write_str(text),
        }
    }
}

/// `step: reason` for a cause that hit one step, `reason (the same cause in N steps: a, b)`
/// for one that hit more, joined with `; ` (#22).
impl fmt::Display for FailureGroups {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (i, g) in self.0.iter().enumerate() {
            if i > 0 {
                f.write_str("; ")?;
            }
            if g.steps.len() == 1 {
                write!(f, "{}: {}", g.steps[0], g.reason)?;
            } else {
                write!(
                    f,
                    "{} (the same cause in {} steps: {})",
                    g.reason,
                    g.steps.len(),
                    g.steps.join(", ")
                )?;
            }
        }
        Ok(())
    }
}

/// What a successful command prints.
impl fmt::Display for Words {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Words::Text(t) => f.write_str(t),
            Words::Bench(b) => b.fmt(f),
            Words::Rerun { of, then } => write!(f, "Rerun of {of}\n{then}"),
            Words::Resumed {
                run,
                query_types,
                then,
            } => write!(f, "Resumed {run}: {}\n{then}", query_types.join(", ")),
            Words::Quickstart { then } => writeln!(
                f,
                "{then}Open summary.md above for ingestion, storage and per-query latency."
            ),
        }
    }
}

/// What a finished bench command prints: the run, its status, where its directory and summary
/// are, and each query type that did not complete with its failure kind.
impl fmt::Display for BenchOutcome {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "Run {}: {}\nRun directory: {}\nSummary: {}\n",
            self.run_id,
            self.status,
            self.run_dir.display(),
            self.summary_md.display()
        )?;
        for (query_type, kind) in &self.failed_types {
            writeln!(f, "  {query_type}: {kind}")?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use std::path::PathBuf;
    use std::time::Duration;

    use super::*;
    use crate::output::SharedPort;

    /// A command's typed words read as the sentences the core built before it ended with
    /// data (issue 23 §3).
    #[test]
    fn a_commands_words_read_as_before() {
        let bench = Words::Bench(BenchOutcome {
            run_id: "r1".into(),
            status: "completed with failures".into(),
            run_dir: PathBuf::from("/s/runs/r1"),
            summary_md: PathBuf::from("/s/runs/r1/summary.md"),
            failed_types: vec![("high-cpu-all".into(), "OOM".into())],
        });
        let ended = "Run r1: completed with failures\nRun directory: /s/runs/r1\n\
                     Summary: /s/runs/r1/summary.md\n  high-cpu-all: OOM\n";
        assert_eq!(bench.to_string(), ended);
        let rerun = Words::Rerun {
            of: "r0".into(),
            then: Box::new(bench.clone()),
        };
        assert_eq!(rerun.to_string(), format!("Rerun of r0\n{ended}"));
        let resumed = Words::Resumed {
            run: "r1".into(),
            query_types: vec!["lastpoint".into(), "high-cpu-1".into()],
            then: Box::new(bench.clone()),
        };
        assert_eq!(
            resumed.to_string(),
            format!("Resumed r1: lastpoint, high-cpu-1\n{ended}")
        );
        let quick = Words::Quickstart {
            then: Box::new(bench),
        };
        assert_eq!(
            quick.to_string(),
            format!("{ended}Open summary.md above for ingestion, storage and per-query latency.\n")
        );
        let mut o = crate::output::Outcome::typed(serde_json::Value::Null, quick);
        o.push_line("one more\n");
        assert!(o.human.to_string().ends_with("latency.\none more\n"));
        assert!(Words::Text(String::new()).is_empty());
    }

    /// The words are the ones the core used to build itself (issue 23 §3): tests and users
    /// read them.
    #[test]
    fn events_read_as_before() {
        let cases: Vec<(Event, &str)> = vec![
            (
                Event::Downloading {
                    file: "go.tar.gz".into(),
                    url: "https://x/go.tar.gz".into(),
                },
                "downloading go.tar.gz from https://x/go.tar.gz",
            ),
            (
                Event::Retrying {
                    error: "timed out".into(),
                    delay: Duration::from_millis(1500),
                    from_byte: Some(42),
                },
                "timed out; retrying in 1.5s from byte 42",
            ),
            (
                Event::Retrying {
                    error: "timed out".into(),
                    delay: Duration::from_millis(300),
                    from_byte: None,
                },
                "timed out; retrying in 0.3s",
            ),
            (
                Event::RemovedLeftover {
                    path: PathBuf::from("/w/.x.old-1"),
                    left_by: LeftBy::EarlierRun,
                },
                "removed leftover /w/.x.old-1 of an earlier run",
            ),
            (
                Event::RemovedLeftover {
                    path: PathBuf::from("/w/.a.copy-1"),
                    left_by: LeftBy::Interrupted("copy".into()),
                },
                "removed leftover /w/.a.copy-1 of an interrupted copy",
            ),
            (
                Event::RemovedLeftover {
                    path: PathBuf::from("/d/.data.gen-1"),
                    left_by: LeftBy::Generation,
                },
                "removed /d/.data.gen-1, left by an interrupted generation or adoption",
            ),
            (
                Event::Building {
                    tool: "tsbs_load".into(),
                    reason: BuildReason::DirtyCheckout,
                    go_version: "1.22.5".into(),
                },
                "building tsbs_load (the checkout is dirty) with Go 1.22.5",
            ),
            (
                Event::WaitingForServer {
                    label: "GreptimeDB".into(),
                    until: Some("replaying its WAL".into()),
                    timeout: Duration::from_secs(60),
                },
                "waiting for GreptimeDB to answer: replaying its WAL (up to 60 s, --startup-timeout)",
            ),
            (
                Event::WaitingForServer {
                    label: "GreptimeDB".into(),
                    until: None,
                    timeout: Duration::from_secs(60),
                },
                "waiting for GreptimeDB to answer (up to 60 s, --startup-timeout)",
            ),
            (
                Event::PortShared {
                    id: "b".into(),
                    shared: vec![
                        SharedPort {
                            port: 4000,
                            product: "greptimedb".into(),
                            workspace: "a".into(),
                        },
                        SharedPort {
                            port: 4001,
                            product: "greptimedb".into(),
                            workspace: "c".into(),
                        },
                    ],
                },
                "note: workspace b listens on a port another workspace uses: 4000 (greptimedb workspace a), 4001 (greptimedb workspace c); they cannot serve at the same time (pick another with --http-port)",
            ),
            (
                Event::Precision {
                    query_type: "lastpoint".into(),
                    target_pct: 5.0,
                    reached: true,
                    stop: "reached".into(),
                    half_width: Some(0.04321),
                    queries: 120,
                    batches: 2,
                },
                "query type lastpoint: target ±5%: ±4.32% after 120 queries in 2 batch(es)",
            ),
            (
                Event::Precision {
                    query_type: "lastpoint".into(),
                    target_pct: 2.5,
                    reached: false,
                    stop: "budget".into(),
                    half_width: Some(0.1),
                    queries: 40,
                    batches: 1,
                },
                "query type lastpoint: target ±2.5%: not reached (budget): ±10.00% after 40 queries in 1 batch(es)",
            ),
            (
                Event::Precision {
                    query_type: "lastpoint".into(),
                    target_pct: 5.0,
                    reached: false,
                    stop: "a batch failed".into(),
                    half_width: None,
                    queries: 1,
                    batches: 1,
                },
                "query type lastpoint: target ±5%: not reached: a batch failed",
            ),
            (
                Event::ProgressResumed {
                    tool: "tsbs_load".into(),
                    count: 300,
                    unit: "rows".into(),
                },
                "tsbs_load: progress resumed (300 rows)",
            ),
        ];
        for (e, words) in cases {
            assert_eq!(e.to_string(), words, "{e:?}");
        }
    }

    /// The warnings' words are the ones the core used to build itself (issue 23 §3), copied
    /// from its `format!`s before they moved here.
    #[test]
    fn warnings_read_as_before() {
        use crate::output::FailureGroup;
        let p = PathBuf::from;
        let s = |x: &str| x.to_string();
        let cases: Vec<(Warning, &str)> = vec![
            (
                Warning::DamagedDownload { path: p("/c/go.tgz"), sha256: s("ab12") },
                "/c/go.tgz is damaged (sha256 ab12); downloading it again",
            ),
            (
                Warning::ResumedDownloadBad { url: s("https://x/a") },
                "the resumed download of https://x/a does not verify; downloading it again from the start",
            ),
            (
                Warning::GithubTokenUnusable,
                "GITHUB_TOKEN holds characters not allowed in an HTTP header; it is not used",
            ),
            (
                Warning::ReplacedNotRemoved { path: p("/i/.x.old-1"), error: s("busy") },
                "could not remove the replaced installation /i/.x.old-1: busy",
            ),
            (
                Warning::RestoringInstall { path: p("/i/x") },
                "restoring /i/x from an interrupted reinstall",
            ),
            (
                Warning::GoNotInIndex { index_url: s("https://go.dev/dl"), archive: s("go.tgz") },
                "the Go download index at https://go.dev/dl does not list go.tgz; using the compiled checksum",
            ),
            (
                Warning::GoIndexUnreadable { archive: s("go.tgz"), why: s("timed out") },
                "could not cross-check go.tgz with the Go download index (timed out); using the compiled checksum",
            ),
            (
                Warning::TsbsCheckoutStale { path: p("/e/src"), head: s("abc"), commit: s("def") },
                "/e/src holds abc or has local changes; fetching def again",
            ),
            (
                Warning::TsbsCheckoutUnusable { path: p("/e/src"), commit: s("def") },
                "/e/src is not a usable checkout; fetching def again",
            ),
            (
                Warning::SeedIgnored { major: 1, minor: 24 },
                "this TSBS's go.mod says go 1.24: Go then ignores math/rand.Seed (GODEBUG randseednop=1), so its generators may not reproduce a dataset or query set from its seed",
            ),
            (
                Warning::BuildRecordUnreadable { error: s("bad manifest") },
                "bad manifest; rebuilding",
            ),
            (
                Warning::BinaryDrifted { path: p("/e/bin/t"), recorded: s("aa"), found: s("bb") },
                "/e/bin/t changed since it was built (recorded aa, found bb); rebuilding",
            ),
            (
                Warning::HoldTokenIgnored { label: s("workspace a") },
                "workspace a has no manual hold (it was released); --hold-token is ignored",
            ),
            (
                Warning::ConfigDiffers { path: p("/w/a/config.toml"), written_by: s("0.1.0") },
                "/w/a/config.toml differs from what this tsbsctl would write today (it was written by tsbsctl 0.1.0)",
            ),
            (
                Warning::OutsideSetting { file: s("f.toml"), name: s("n"), value: s("v"), overridden: true },
                "f.toml sets n = 'v': tsbsctl's value replaces it when the server runs",
            ),
            (
                Warning::OutsideSetting { file: s("f.toml"), name: s("n"), value: s("v"), overridden: false },
                "f.toml sets n = 'v': in force when the server runs, recorded with the run's settings",
            ),
            (
                Warning::OrphanGone { pid: 7, started_at: s("T"), tsbsctl_pid: 5, log: p("/l") },
                "a server (pid 7) started at T by tsbsctl pid 5 was not stopped by tsbsctl; it is no longer running (log: /l)",
            ),
            (
                Warning::StoppingOrphan { pid: 7, grace: Duration::from_secs(10) },
                "stopping orphaned server pid 7 (SIGTERM, then SIGKILL after 10s)",
            ),
            (
                Warning::KilledAfterGrace { label: s("the server") },
                "the server did not stop within the grace period and was killed",
            ),
            (
                Warning::ServerStopForced { seconds: 30.04 },
                "the server did not stop within the grace period and was killed (SIGKILL after 30.0 s); work it still had queued was lost",
            ),
            (
                Warning::ServerKilledInShutdown { how: s("signal 9"), seconds: 1.25 },
                "the server was killed during its shutdown (signal 9, not sent by tsbsctl) after 1.2 s; its shutdown did not finish, so the next start recovers",
            ),
            (
                Warning::DataStateAccepted { run: s("R"), original: s("a"), now: s("b") },
                "run R measured data a; this rerun measures data b (accepted with --accept-data-state)",
            ),
            (
                Warning::ReadOnlyRun { run: s("R") },
                "run R is on read-only media: shown as interrupted, but that cannot be recorded there",
            ),
            (
                Warning::ComparisonNotSaved { dir: p("/m"), error: s("EROFS") },
                "/m is on read-only media: the comparison is shown but not saved (EROFS)",
            ),
            (
                Warning::NotQuiet { before: s("the load"), reading: s("busy") },
                "the machine is not quiet before the load: busy (summary.md warns; --require-quiet refuses)",
            ),
            (
                Warning::UrlsUnused { tool: UrlUser::Loader, workers: 1, used: 1, urls: 2 },
                "the loader's 1 worker(s) write through 1 of the 2 --url endpoints (worker i writes to URL i mod 2); pass --workers 2 to spread the load over all",
            ),
            (
                Warning::UrlsUnused { tool: UrlUser::QueryRunner, workers: 1, used: 1, urls: 2 },
                "the query runner's 1 worker(s) use 1 of the 2 --url endpoints (worker i queries URL i mod 2); pass --query-workers 2 to query through all",
            ),
            (
                Warning::AnswersNotChecked { runner: s("tsbs_run_queries_x") },
                "--check-answers: tsbs_run_queries_x prints no responses tsbsctl can read; answers not checked",
            ),
            (
                Warning::QueryTypeFailed { query_type: s("lastpoint"), reason: s("boom") },
                "query type lastpoint failed: boom",
            ),
            (
                Warning::QueryTypeFailedAsBefore { query_type: s("b"), first: s("a") },
                "query type b failed: the same cause as a",
            ),
            (
                Warning::QueryBatchFailed { query_type: s("a"), batch: 2, reason: s("boom") },
                "query type a, batch 2 failed: boom",
            ),
            (
                Warning::ServerDiedUnder { query_type: s("a"), what: s("OOM") },
                "query type a: OOM; starting the server again for the other types",
            ),
            (
                Warning::RegionRowsDiffer { table: s("cpu"), regions: Some(3), loaded: 4 },
                "the regions of cpu report 3 rows in all (information_schema.region_statistics), the load 4",
            ),
            (
                Warning::RegionRowsDiffer { table: s("cpu"), regions: None, loaded: 4 },
                "the regions of cpu report null rows in all (information_schema.region_statistics), the load 4",
            ),
            (
                Warning::EmptyRegions { table: s("cpu"), regions: vec![s("1"), s("2")] },
                "region(s) 1, 2 of cpu hold no rows",
            ),
            (
                Warning::NoTimeline { error: s("no /proc") },
                "no resource timeline: no /proc",
            ),
            (
                Warning::Stalled { tool: s("tsbs_load"), seconds: 60, count: 5, unit: s("rows"), stopped: false },
                "tsbs_load made no progress for 60 s (still at 5 rows); it may be retrying a write the server keeps refusing: see the server log. Stop it with Ctrl-C, or pass --on-stall stop",
            ),
            (
                Warning::Stalled { tool: s("tsbs_load"), seconds: 60, count: 5, unit: s("rows"), stopped: true },
                "tsbs_load made no progress for 60 s (stuck at 5 rows): stopped (--on-stall stop)",
            ),
            (
                Warning::DiedUnderQueries {
                    failures: 3,
                    groups: FailureGroups(vec![
                        FailureGroup { reason: s("died"), steps: vec![s("query-a"), s("query-b")] },
                        FailureGroup { reason: s("panic"), steps: vec![s("server")] },
                    ]),
                },
                "3 failure(s), results of the server running out of memory or dying under a query type: died (the same cause in 2 steps: query-a, query-b); server: panic",
            ),
            (Warning::Product { text: s("its own words") }, "its own words"),
        ];
        for (w, words) in cases {
            assert_eq!(w.to_string(), words, "{w:?}");
        }
    }

    /// The block a finished bench command prints (its words were built in
    /// `bench/conclude.rs`).
    #[test]
    fn a_bench_outcome_reads_as_before() {
        let o = BenchOutcome {
            run_id: "20261206T041500Z".into(),
            status: "completed with failures".into(),
            run_dir: PathBuf::from("/r/20261206T041500Z"),
            summary_md: PathBuf::from("/r/20261206T041500Z/summary.md"),
            failed_types: vec![("high-cpu-all".into(), "OOM".into())],
        };
        assert_eq!(
            o.to_string(),
            "Run 20261206T041500Z: completed with failures\nRun directory: /r/20261206T041500Z\nSummary: /r/20261206T041500Z/summary.md\n  high-cpu-all: OOM\n"
        );
    }
}
