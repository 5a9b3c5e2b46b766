//! The words of the core's status lines. The core emits typed [`Event`]s through the
//! [`Reporter`](crate::output::Reporter) and never builds a sentence; this is the one place
//! that says them (as uv's `Reporter` traits do, design-2 §3.2).

use std::fmt;

use crate::output::{count_of, BuildReason, Event, LeftBy};

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

#[cfg(test)]
mod tests {
    use std::path::PathBuf;
    use std::time::Duration;

    use super::*;
    use crate::output::SharedPort;

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
        ];
        for (e, words) in cases {
            assert_eq!(e.to_string(), words, "{e:?}");
        }
    }
}
