//! `tsbsctl quickstart`: a newcomer's smoke benchmark of GreptimeDB in one command. Prepare the
//! TSBS environment, install the latest GreptimeDB and prepare a `quickstart` workspace (each
//! only when missing), then `bench greptimedb all` with the smoke profile, which generates the
//! smoke dataset and query set once and reuses the loaded data afterwards. A second call
//! therefore only runs the queries again, and works offline.
//!
//! Before anything is downloaded, the hosts that will be needed are probed (a TCP connect with a
//! short timeout), so a machine without access fails at once with the host and the mirror
//! settings to use, instead of after a long retry loop.

use std::net::ToSocketAddrs;
use std::time::Duration;

use serde_json::json;

use crate::bench::{self, Phase, Request};
use crate::context::Ctx;
use crate::dataset::Profile;
use crate::environment::{self, tsbs as envtsbs, GoRequest, TsbsEnv};
use crate::error::{Error, Result};
use crate::lock::LockOptions;
use crate::output::{Event, Outcome};
use crate::sources::{SourceKey, Sources};
use crate::workspace::{self, PrepareRequest};

/// The workspace quickstart uses.
pub const WORKSPACE: &str = "quickstart";

/// Checks that `key`'s location can be reached: a TCP connect for http(s), existence for
/// local paths. The error names the host and how to point tsbsctl at a mirror.
pub fn check_reachable(sources: &Sources, key: SourceKey, why: &str) -> Result<()> {
    let raw = sources.get(key).to_string();
    let mirror_hint = format!(
        "set {} (or `{}` under [sources] in <root>/config.toml) to a reachable mirror; for a local stand-in run `cargo run --release -p testbed -- serve` and export the variables it prints",
        key.env_var(),
        key.config_key()
    );
    let parsed = url::Url::parse(&raw).ok();
    match parsed.as_ref().map(|u| u.scheme()) {
        Some("http") | Some("https") | Some("git") | Some("ssh") => {
            let u = parsed.as_ref().expect("parsed");
            let host = u.host_str().unwrap_or_default().to_string();
            let port = u.port_or_known_default().unwrap_or(443);
            let addrs = (host.as_str(), port)
                .to_socket_addrs()
                .map_err(|e| {
                    Error::failed(format!("cannot resolve {host} ({why}; from {raw}): {e}"))
                        .with_hint(mirror_hint.clone())
                })?
                .collect::<Vec<_>>();
            let mut last = None;
            for a in &addrs {
                match std::net::TcpStream::connect_timeout(a, Duration::from_secs(3)) {
                    Ok(_) => return Ok(()),
                    Err(e) => last = Some(e),
                }
            }
            Err(Error::failed(format!(
                "cannot reach {host}:{port} ({why}; from {raw}): {}",
                last.map(|e| e.to_string())
                    .unwrap_or_else(|| "no address".into())
            ))
            .with_hint(mirror_hint))
        }
        Some("file") => {
            let p = parsed
                .as_ref()
                .and_then(|u| u.to_file_path().ok())
                .unwrap_or_default();
            if p.exists() {
                Ok(())
            } else {
                Err(
                    Error::failed(format!("{} does not exist ({why})", p.display()))
                        .with_hint(mirror_hint),
                )
            }
        }
        _ => {
            if std::path::Path::new(&raw).exists() {
                Ok(())
            } else {
                Err(Error::failed(format!("{raw} does not exist ({why})")).with_hint(mirror_hint))
            }
        }
    }
}

/// Is there a `go` on PATH (then env prepare may not need go.dev)?
fn system_go() -> bool {
    std::env::var_os("PATH")
        .map(|p| std::env::split_paths(&p).any(|d| d.join("go").is_file()))
        .unwrap_or(false)
}

pub fn run(ctx: &Ctx, http_port: Option<u16>) -> Result<Outcome> {
    let sources = crate::product::load_sources(&ctx.root)?;
    let entry = crate::product::quickstart();
    let product = (entry.make)(None)?;
    let product = product.as_ref();
    let r = ctx.reporter.as_ref();
    // A bad or changed port is bad input: said before any work (a fresh root would otherwise
    // fetch and build TSBS first), and an existing workspace never silently keeps another.
    let asked = PrepareRequest {
        id: WORKSPACE.into(),
        http_port,
        ..Default::default()
    };
    let ports = workspace::requested_ports(product, &asked)?;
    if let (Some(p), Ok(ws)) = (http_port, workspace::load(&ctx.root, product, WORKSPACE)) {
        if ws.manifest.ports != ports {
            return Err(Error::invalid(format!(
                "the quickstart workspace already uses HTTP port {}; it cannot change to {p}",
                ws.http_port()
            ))
            .with_hint(format!(
                "run `tsbsctl quickstart` without --http-port to keep {}; a workspace never changes its ports, so for another one remove it first (`{} remove --database-id {WORKSPACE} --confirm {WORKSPACE}`, which deletes its data)",
                ws.http_port(),
                product.cli()
            )));
        }
    }
    // 1. The TSBS environment.
    let env_fresh = TsbsEnv::load(&ctx.root, None).is_err();
    if env_fresh {
        check_reachable(&sources, SourceKey::TSBS_REPO, "fetching the TSBS source")?;
        if !system_go() {
            check_reachable(&sources, SourceKey::GO_DL, "downloading Go to build TSBS")?;
        }
        r.event(&Event::QuickstartEnvironment);
        let commit = envtsbs::default_commit(&ctx.root)?.0;
        let req = environment::PrepareRequest {
            go: GoRequest::Auto,
            reinstall_go: false,
            source: envtsbs::SourceRequest::Fetch {
                repo: sources.get(SourceKey::TSBS_REPO).to_string(),
                commit,
            },
            rebuild: false,
            tools: crate::product::tsbs_tools(),
            source_keys: crate::product::source_keys(),
        };
        environment::prepare(ctx, &req)?;
    }
    // 2. GreptimeDB and the workspace.
    let ws_exists = workspace::load(&ctx.root, product, WORKSPACE).is_ok();
    if !ws_exists {
        let installed = crate::platform::Platform::host()
            .map(|p| crate::install::newest_stable_installed(&ctx.root, product, &p).is_some())
            .unwrap_or(false);
        if !installed {
            let name = product.display_name();
            check_reachable(
                &sources,
                SourceKey::GITHUB_API,
                &format!("finding the latest {name} release"),
            )?;
            check_reachable(&sources, SourceKey::GITHUB, &format!("downloading {name}"))?;
        }
        r.event(&Event::QuickstartWorkspace {
            product: product.display_name(),
            id: WORKSPACE.to_string(),
        });
        workspace::prepare(ctx, product, &asked, &LockOptions::default())?;
    }
    // 3. The smoke benchmark (dataset, query set, load or reuse, queries).
    let req = Request {
        phase: Some(Phase::All),
        database_id: Some(WORKSPACE.into()),
        spec: crate::dataset::SpecOverrides {
            profile: Some(Profile::Smoke),
            ..Default::default()
        },
        flags: json!({"quickstart": true, "database_id": WORKSPACE, "profile": "smoke", "http_port": http_port}),
        ..Default::default()
    };
    let mut out = bench::run(ctx, entry, &req)?;
    out.human = crate::output::Words::Quickstart {
        then: Box::new(out.human),
    };
    Ok(out)
}
