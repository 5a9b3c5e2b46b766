//! `runs rerun RUN [--database-id NEW]`: the same benchmark again, in a new run directory, with
//! every pin of the original checked first: product version, release archive and binary
//! checksums, TSBS commit and binary checksums, Go version, dataset id and checksum, query-set
//! manifest checksum, and the recorded flags (workload, durability, target). A pinned artifact
//! that cannot be had with its recorded checksum stops the rerun with exit 4; nothing is ever
//! substituted. The phases themselves are `bench`'s ([`crate::bench::run`]).

use std::path::Path;

use serde_json::{json, Value};

use crate::bench::flags::Flags;
use crate::bench::{self, Phase, Request, RerunPins};
use crate::context::Ctx;
use crate::error::{Error, Result};
use crate::install;
use crate::output::{Event, Outcome, Warning};
use crate::platform::Platform;
use crate::product::{Entry, Product};
use crate::run::{self, RunEnvironment, RunKind, RunManifest};
use crate::workspace::WorkspaceManifest;

fn integrity(msg: String, hint: &str) -> Error {
    Error::integrity(msg).with_hint(hint.to_string())
}

/// The product (edition) a run used.
pub(crate) fn product_of(m: &RunManifest) -> Result<(&'static Entry, Box<dyn Product>)> {
    let entry = crate::product::entry(&m.product).map_err(|_| {
        Error::invalid(format!("run of unknown product {:?}", m.product))
            .with_hint("rerun runs made by tsbsctl bench")
    })?;
    Ok((entry, (entry.make)(m.variant.as_deref())?))
}

/// The TSBS build the run used, present here with the same binaries and Go.
pub(crate) fn check_environment(ctx: &Ctx, env: &RunEnvironment) -> Result<String> {
    let commit = env.tsbs_commit.clone();
    if commit.is_empty() {
        return Err(Error::invalid(
            "the run recorded no TSBS commit (it failed before)",
        ));
    }
    let dirty = env.tsbs_dirty;
    let key = if dirty {
        format!("{commit}-dirty")
    } else {
        commit.clone()
    };
    let go = env.go_version.trim_start_matches("go").to_string();
    let prepare = format!("run `tsbsctl env prepare --tsbs-rev {commit} --go-version {go}` first");
    let have = match crate::environment::TsbsEnv::load(&ctx.root, Some(&key)) {
        Ok(h) => h,
        // Not built here: build the recorded commit with the recorded Go (a dirty checkout
        // cannot be fetched again), then hold the result to the recorded checksums below.
        Err(_) if !dirty => {
            let version =
                crate::environment::go::GoVersion::parse_requested(&go).map_err(|_| {
                    integrity(
                        format!("the run recorded Go {go:?}, which tsbsctl cannot install"),
                        &prepare,
                    )
                })?;
            ctx.reporter.event(&Event::BuildingRecordedTsbs {
                commit: commit.to_string(),
                go: go.to_string(),
            });
            crate::environment::prepare(
                ctx,
                &crate::environment::PrepareRequest {
                    go: crate::environment::GoRequest::Managed(version),
                    reinstall_go: false,
                    source: crate::environment::tsbs::SourceRequest::Fetch {
                        repo: env.tsbs_repo.clone(),
                        commit: commit.clone(),
                    },
                    rebuild: false,
                    tools: crate::product::tsbs_tools(),
                    source_keys: crate::product::source_keys(),
                },
            )
            .map_err(|e| {
                let msg = format!(
                    "the TSBS build of commit {key} the run used cannot be had: {}",
                    e.message
                );
                Error::new(e.kind, msg).with_hint(prepare.clone())
            })?;
            crate::environment::TsbsEnv::load(&ctx.root, Some(&key))?
        }
        Err(e) => {
            return Err(integrity(
                format!(
                    "the TSBS build of commit {key} the run used is not available: {}",
                    e.message
                ),
                &prepare,
            ))
        }
    };
    if have.go_version != env.go_version {
        return Err(integrity(
            format!(
                "TSBS {key} here was built with {}, the run used {}",
                have.go_version, env.go_version
            ),
            &format!("{prepare} (with --rebuild)"),
        ));
    }
    for (name, rec) in &env.binaries {
        let want = rec.sha256.as_deref().unwrap_or("");
        match have.binaries.get(name) {
            Some(b) if b.sha256 == want => {}
            Some(b) => {
                return Err(integrity(
                    format!(
                        "TSBS tool {name} has SHA-256 {}, the run used {want}",
                        b.sha256
                    ),
                    "a rerun needs the same TSBS binaries; rebuild them with the recorded Go and commit",
                ))
            }
            None => {
                return Err(integrity(
                    format!("TSBS tool {name} of commit {key} is not built here"),
                    &prepare,
                ))
            }
        }
    }
    Ok(key)
}

/// The installation the run's server came from: present with the same archive and binary, or
/// downloaded again only when the vendor still serves the same archive bytes.
fn ensure_installation(
    ctx: &Ctx,
    product: &dyn Product,
    version: &str,
    archive_sha256: Option<&str>,
    binary_sha256: Option<&str>,
) -> Result<()> {
    let platform = Platform::host()?;
    let name = format!("{} {version}", product.display_name());
    let check = |i: &install::Installation| -> Result<()> {
        if let Some(a) = archive_sha256 {
            if i.manifest.archive_sha256 != a {
                return Err(integrity(
                    format!(
                        "the installed {name} came from an archive with SHA-256 {}, the run used {a}",
                        i.manifest.archive_sha256
                    ),
                    "a rerun never substitutes another build of the same version",
                ));
            }
        }
        if let Some(b) = binary_sha256 {
            if i.manifest.binary_sha256 != b {
                return Err(integrity(
                    format!(
                        "the installed {name} binary has SHA-256 {}, the run used {b}",
                        i.manifest.binary_sha256
                    ),
                    "a rerun never substitutes another build of the same version",
                ));
            }
        }
        Ok(())
    };
    if let Some(i) = install::open(&ctx.root, product, version, &platform)? {
        return check(&i);
    }
    // Not installed: the vendor's checksum must still name the recorded archive.
    if let Some(a) = archive_sha256 {
        let sources = crate::product::load_sources(&ctx.root)?;
        let dl = crate::download::Downloader::new(&ctx.root, &sources, ctx.reporter.clone())?;
        let asset = product.release_asset(&sources, version, &platform)?;
        let text = dl
            .fetch_text(&asset.checksum_url, "application/octet-stream, */*")
            .map_err(|e| e.context(format!("fetching the checksum of {name}")))?;
        let now = product.parse_checksum(&text, &asset)?;
        if now != a {
            return Err(integrity(
                format!(
                    "the {name} archive at {} now has SHA-256 {now}, the run used {a}: the release changed",
                    asset.url
                ),
                &format!(
                    "a rerun never substitutes another build of the same version; restore the original archive (e.g. a mirror via {}) and try again",
                    sources.setting_for(&asset.url)
                ),
            ));
        }
    }
    let o = install::install(
        ctx,
        product,
        version,
        install::source::EXPLICIT,
        false,
        &Default::default(),
    )?;
    check(&o.installation)
}

/// The workspace the rerun benchmarks: the recorded one (same pins), or `--database-id NEW`
/// (prepared now with the same version and SQL database when it does not exist).
pub(crate) fn check_target(
    ctx: &Ctx,
    m: &RunManifest,
    product: &dyn Product,
    new_id: Option<&str>,
) -> Result<String> {
    let server = m.server.as_ref();
    let ws_version = server
        .map(|s| s.workspace_version.clone())
        .or_else(|| m.target.workspace_version.clone())
        .ok_or_else(|| Error::invalid("the run recorded no server version"))?;
    let ws_binary = server.map(|s| s.workspace_binary_sha256.clone());
    // The installation the server ran from (the override's when there was one).
    let archive = server
        .and_then(|s| s.installation.as_ref())
        .map(|i| i.archive_sha256.clone());
    if let Some(s) = server.filter(|s| s.version_override) {
        ensure_installation(
            ctx,
            product,
            &s.runtime.version,
            archive.as_deref(),
            Some(&s.runtime.binary_sha256),
        )?;
        ensure_installation(ctx, product, &ws_version, None, ws_binary.as_deref())?;
    } else {
        ensure_installation(
            ctx,
            product,
            &ws_version,
            archive.as_deref(),
            ws_binary.as_deref(),
        )?;
    }
    let recorded = m
        .target
        .database_id
        .clone()
        .ok_or_else(|| Error::invalid("the run recorded no workspace"))?;
    let id = new_id.map(str::to_string).unwrap_or(recorded.clone());
    crate::ids::validate_id("--database-id", &id)?;
    let dir = ctx.root.database(product.name(), &id);
    let database = m.target.database.clone();
    if !dir.join("manifest.json").is_file() {
        if new_id.is_none() {
            return Err(
                Error::invalid(format!("workspace {id} of the run no longer exists")).with_hint(
                    "rerun into a new workspace prepared with the same pins: --database-id NEW",
                ),
            );
        }
        if let Some(t) = m.target.extra.get("topology") {
            // A cluster's ports and etcd are chosen when it is prepared, by the person.
            return Err(Error::invalid(format!(
                "the run benchmarked a managed cluster ({} datanodes, {} frontends); workspace {id} does not exist",
                t["datanodes"], t["frontends"]
            ))
            .with_hint(format!(
                "prepare it first: `tsbsctl {} prepare --database-id {id} --version {ws_version} --database {database} --topology cluster --datanodes {} --frontends {}`, then rerun",
                product.name(),
                t["datanodes"],
                t["frontends"]
            )));
        }
        // Not always the default port: the run's own workspace (or another) may use it.
        let http_port = crate::workspace::free_http_port(ctx, product)?;
        ctx.reporter.event(&Event::PreparingWorkspace {
            id: id.to_string(),
            product: product.display_name(),
            version: ws_version.to_string(),
            http_port,
        });
        crate::workspace::prepare(
            ctx,
            product,
            &crate::workspace::PrepareRequest {
                id: id.clone(),
                http_port: Some(http_port),
                version: Some(ws_version.clone()),
                database: Some(database.clone()),
                extra: product.rerun_workspace_fields(m.target.extra.get("server_settings")),
                ..Default::default()
            },
            &Default::default(),
        )?;
    }
    let ws: WorkspaceManifest =
        crate::manifest::read(&dir.join("manifest.json")).map_err(|_| {
            Error::integrity(format!("workspace {id} has an unreadable manifest")).with_hint(
                format!("tsbsctl {} verify --database-id {id}", product.name()),
            )
        })?;
    let mismatch = |what: &str, have: Option<&str>, want: &str| -> Error {
        let msg = format!(
            "workspace {id} has {what} {}, the run used {want}",
            have.unwrap_or("none")
        );
        if new_id.is_some() {
            Error::invalid(msg)
                .with_hint("choose a new --database-id (it is prepared with the run's pins)")
        } else {
            Error::integrity(msg).with_hint("rerun into a new workspace: --database-id NEW")
        }
    };
    if ws.version != ws_version {
        return Err(mismatch("version", Some(&ws.version), &ws_version));
    }
    if let Some(b) = &ws_binary {
        if &ws.binary_sha256 != b {
            return Err(mismatch("binary SHA-256", Some(&ws.binary_sha256), b));
        }
    }
    if ws.database != database {
        return Err(mismatch("SQL database", Some(&ws.database), &database));
    }
    // A cluster run reruns on a cluster of the same shape (and a standalone run on standalone).
    let shape = |t: Option<&serde_json::Value>| {
        t.map_or("standalone".to_string(), |t| {
            format!(
                "cluster of {} datanodes and {} frontends",
                t["datanodes"], t["frontends"]
            )
        })
    };
    let (want, have) = (
        shape(m.target.extra.get("topology")),
        shape(ws.extra.get("topology")),
    );
    if want != have {
        return Err(mismatch("topology", Some(&have), &want));
    }
    let has_variants = crate::product::entry(&m.product).is_ok_and(|e| e.variant_flag.is_some());
    if ws.variant != m.variant && has_variants {
        return Err(mismatch(
            crate::product::variants::noun_of(&m.product),
            ws.variant.as_deref(),
            m.variant.as_deref().unwrap_or("none"),
        ));
    }
    Ok(id)
}

/// The bench request of the original flags, retargeted and pinned.
pub(crate) fn request(m: &RunManifest, database_id: String, pins: RerunPins) -> Result<Request> {
    let f = &m.flags;
    let phase = match m.phase.as_str() {
        "all" => Phase::All,
        "load" => Phase::Load,
        "query" => Phase::Query,
        "analyze" => Phase::Analyze,
        p => {
            return Err(Error::invalid(format!("cannot rerun a {p} run"))
                .with_hint("rerun benchmark runs (all, load, query, analyze)"))
        }
    };
    let mut flags = f.clone();
    flags["database_id"] = json!(database_id);
    flags["run_id"] = Value::Null;
    flags["rerun_of"] = json!(pins.rerun_of);
    // The same record the original command built its request from, retargeted: the
    // workspace, never the original's URLs, edition (a workspace's comes from its manifest),
    // database or run id; the dataset the run actually used.
    let mut req = Flags::from_value(f, &m.product)?.request(phase)?;
    req.database_id = Some(database_id);
    req.urls = Vec::new();
    req.variant = None;
    req.database = None;
    req.run_id = None;
    req.dataset_id = m
        .dataset
        .as_ref()
        .map(|d| d.dataset_id.clone())
        .or(req.dataset_id);
    req.flags = flags;
    req.rerun = Some(pins);
    Ok(req)
}

/// A data-state label as typed (`after-manual-compaction`, `As loaded`) in its canonical form.
fn normalize_state(s: &str) -> String {
    s.trim()
        .to_ascii_lowercase()
        .replace(['-', '_'], " ")
        .split_whitespace()
        .collect::<Vec<_>>()
        .join(" ")
}

/// Issue 16 #10: the data the rerun will measure must be in the state the original run
/// measured ("as loaded", "after manual compaction", ...), unless `accept` names the state the
/// rerun will find. A rerun that loads (reset, or a workspace not bound to the run's dataset)
/// measures freshly loaded data. Returns that state. Refusals are exit 4, like every other pin
/// a rerun cannot meet: the numbers would not reproduce the run's.
fn check_data_state(
    ctx: &Ctx,
    run_dir: &Path,
    m: &RunManifest,
    product: &dyn Product,
    id: &str,
    accept: Option<&str>,
) -> Result<String> {
    let original = m
        .data_state
        .as_ref()
        .map(|d| d.label.clone())
        .unwrap_or_else(|| "unknown".into());
    let dir = ctx.root.database(product.name(), id);
    // Unreadable here means "no data state, no binding": the rerun then loads afresh.
    let ws: Option<WorkspaceManifest> = crate::manifest::read(&dir.join("manifest.json")).ok();
    let state = ws
        .as_ref()
        .map(|w| w.data_state.clone())
        .unwrap_or_default();
    let same_data = match (ws.as_ref().and_then(|w| w.binding.as_ref()), &m.dataset) {
        (Some(b), Some(d)) => {
            b.dataset_id == d.dataset_id
                && d.uncompressed_sha256.as_ref() == Some(&b.uncompressed_sha256)
        }
        _ => false,
    };
    let loads = matches!(m.phase.as_str(), "all" | "load");
    let will_load = loads && (m.flags["database_mode"].as_str() == Some("reset") || !same_data);
    // A rerun that loads repeats the load and what the run's flags did after it (a flush
    // before the queries): when the run loaded its data itself, it measures what the run
    // measured. A run that found its data already there measured another history.
    let loaded_itself = || -> Result<bool> {
        Ok(run::read_events(run_dir)?
            .iter()
            .any(|e| e.step == "load" && e.status == run::Status::Completed))
    };
    let now = if will_load && loaded_itself()? {
        original.clone()
    } else if will_load {
        "as loaded".to_string()
    } else {
        state.label(crate::product::ext::maintenance_words(product.name()))
    };
    // "not loaded": the run ended before it measured any data (a failed load), so there is no
    // state to reproduce.
    if normalize_state(&now) == normalize_state(&original) || original == "not loaded" {
        return Ok(now);
    }
    match accept {
        Some(a) if normalize_state(a) == normalize_state(&now) => {
            ctx.reporter.warning(&Warning::DataStateAccepted {
                run: m.run_id.clone(),
                original: original.to_string(),
                now: now.to_string(),
            });
            Ok(now)
        }
        Some(a) => Err(Error::invalid(format!(
            "--accept-data-state {a:?} does not name the state the rerun would measure: workspace {id} holds data {now}"
        ))
        .with_hint(format!("pass --accept-data-state \"{now}\", or restore the state"))),
        None => Err(integrity(
            format!(
                "run {} measured data {original}, but workspace {id} holds data {now}: a rerun would measure something else",
                m.run_id
            ),
            &format!(
                "rerun into a new workspace that is loaded afresh (--database-id NEW), or accept the difference with --accept-data-state \"{now}\""
            ),
        )),
    }
}

/// Runs `runs rerun`.
pub fn run(
    ctx: &Ctx,
    run_ref: &str,
    new_id: Option<&str>,
    accept_data_state: Option<&str>,
) -> Result<Outcome> {
    if let Some(id) = new_id {
        crate::ids::validate_id("--database-id", id)?;
    }
    let dir = run::resolve(&ctx.root, run_ref)?;
    let m: RunManifest = crate::manifest::read(&dir.join("manifest.json"))?;
    if m.run_kind != RunKind::Benchmark {
        return Err(
            Error::invalid(format!("run {} is a {} run", m.run_id, m.run_kind.as_str())).with_hint(
                format!(
                    "rerun benchmark runs; {} again with `tsbsctl bench {} {}`",
                    m.phase, m.product, m.phase
                ),
            ),
        );
    }
    if !m.target.is_managed() {
        return Err(Error::invalid(format!(
            "run {} benchmarked an external server, whose version tsbsctl cannot pin",
            m.run_id
        ))
        .with_hint(format!(
            "run the recorded command again yourself: {}",
            m.command
        )));
    }
    let (kind, product) = product_of(&m)?;
    let env = m.environment.clone().ok_or_else(|| {
        Error::invalid(format!(
            "run {} recorded no TSBS environment (it ended before its first step)",
            m.run_id
        ))
        .with_hint("rerun a run that got further")
    })?;
    // Every pin is checked before anything is written.
    let tsbs_key = check_environment(ctx, &env)?;
    let database_id = check_target(ctx, &m, product.as_ref(), new_id)?;
    let data_state = check_data_state(
        ctx,
        &dir,
        &m,
        product.as_ref(),
        &database_id,
        accept_data_state,
    )?;
    let pins = RerunPins {
        rerun_of: m.run_id.clone(),
        tsbs_key,
        dataset_sha256: m.dataset.as_ref().and_then(|d| d.sha256.clone()),
        query_set_manifest_sha256: m.query_set.as_ref().map(|q| q.manifest_sha256.clone()),
    };
    let mut req = request(&m, database_id, pins)?;
    if let Some(a) = accept_data_state {
        req.flags["accept_data_state"] = json!(a);
    }
    req.flags["expected_data_state"] = json!(data_state);
    ctx.reporter.event(&Event::Rerunning {
        run: m.run_id.to_string(),
        product: kind.display.to_string(),
        version: m.target.version.clone(),
    });
    let mut out = bench::run(ctx, kind, &req)?;
    out.data["rerun_of"] = json!(m.run_id);
    out.human = crate::output::Words::Rerun {
        of: m.run_id.to_string(),
        then: Box::new(out.human),
    };
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn data_state_names_are_matched_as_typed_defect_10() {
        for typed in [
            "after manual compaction",
            "after-manual-compaction",
            "  After_Manual  Compaction ",
        ] {
            assert_eq!(normalize_state(typed), "after manual compaction");
        }
        assert_ne!(
            normalize_state("as loaded"),
            normalize_state("after manual compaction")
        );
    }
}
