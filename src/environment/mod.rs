//! The Go toolchain and the TSBS build (`tsbsctl env ...`).
//!
//! `env prepare` picks a Go (system ≥ 1.21, `--go PATH`, or a managed install), gets the TSBS
//! source at a pinned commit, builds the six tools once per commit, and records the result in
//! `environment/current.json`. Later phases call [`TsbsEnv::load`], which reads manifests only.

pub mod go;
pub mod goenv;
mod process;
pub mod tsbs;

use std::collections::BTreeMap;
use std::path::PathBuf;

use serde::{Deserialize, Serialize};
use serde_json::{json, Value};

use crate::context::Ctx;
use crate::error::{Error, ErrorKind, Result};
use crate::manifest::{self, Manifest};
use crate::output::{Event, NoProgress};
use crate::paths::Root;
use crate::platform::Platform;

use go::{GoSource, GoToolchain, GoVersion};
use tsbs::{BinaryStatus, BuildManifest, SourceRequest, TsbsSource};

/// One built TSBS tool.
#[derive(Debug, Clone)]
pub struct BuiltBinary {
    pub path: PathBuf,
    pub sha256: String,
}

/// A prepared TSBS environment, as later phases (data generation, benchmarks) consume it.
#[derive(Debug, Clone)]
pub struct TsbsEnv {
    pub repo: String,
    pub commit: String,
    /// True when built from a dirty `--tsbs-dir` checkout.
    pub dirty: bool,
    /// `go version` of the toolchain that built the binaries, e.g. `go1.21.13`.
    pub go_version: String,
    /// Keyed by tool name (`tsbs_generate_data`, ...).
    pub binaries: BTreeMap<String, BuiltBinary>,
}

impl TsbsEnv {
    /// Loads the environment recorded by the last successful `env prepare` (or `commit`), from
    /// manifests only: no network, no hashing. Missing: a failure whose hint is
    /// `tsbsctl env prepare`. `commit` may carry the `-dirty` suffix of a dirty build.
    pub fn load(root: &Root, commit: Option<&str>) -> Result<TsbsEnv> {
        let key = match commit {
            Some(c) => c.to_string(),
            None => read_current(root)?.key,
        };
        let dir = root.tsbs_dir(&key);
        let m: BuildManifest =
            manifest::read_optional(&dir.join("manifest.json"))?.ok_or_else(|| {
                Error::failed(format!(
                    "TSBS {key} has not been built under {}",
                    root.path().display()
                ))
                .with_hint(format!(
                    "run `tsbsctl env prepare --tsbs-rev {}`",
                    key.trim_end_matches("-dirty")
                ))
            })?;
        let mut versions: Vec<String> = m
            .binaries
            .values()
            .map(|r| format!("go{}", r.go.version))
            .collect();
        versions.sort();
        versions.dedup();
        Ok(TsbsEnv {
            repo: m.source.repo,
            commit: m.source.commit,
            dirty: m.source.dirty,
            go_version: versions.join(","),
            binaries: m
                .binaries
                .iter()
                .map(|(name, r)| {
                    (
                        name.clone(),
                        BuiltBinary {
                            path: dir.join(&r.path),
                            sha256: r.sha256.clone(),
                        },
                    )
                })
                .collect(),
        })
    }

    /// The built tool `name`, or a failure naming `env prepare --rebuild`.
    pub fn binary(&self, name: &str) -> Result<&BuiltBinary> {
        match self.binaries.get(name) {
            Some(b) if b.path.is_file() => Ok(b),
            Some(b) => Err(Error::failed(format!(
                "the TSBS tool {name} is missing at {}",
                b.path.display()
            ))
            .with_hint("run `tsbsctl env prepare --rebuild`")),
            None => Err(Error::failed(format!(
                "the TSBS tool {name} was not built for commit {}",
                self.commit
            ))
            .with_hint("run `tsbsctl env prepare --rebuild`")),
        }
    }
}

/// What the last successful `env prepare` chose: `environment/current.json`.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct CurrentEnv {
    /// Directory name under `environment/tsbs/` (the commit, `-dirty` suffixed when dirty).
    pub key: String,
    pub go: GoToolchain,
    pub source: TsbsSource,
    pub prepared_at: String,
    pub command: String,
    pub tool_version: String,
}

impl Manifest for CurrentEnv {
    const KIND: &'static str = "tsbs-environment";
}

/// A default from the environment variable `var`, else `[defaults] <key>` in config.toml,
/// with a name for where it came from (used in messages).
pub fn configured_default(root: &Root, var: &str, key: &str) -> Result<Option<(String, String)>> {
    if let Some(v) = std::env::var_os(var) {
        return Ok(Some((v.to_string_lossy().into_owned(), var.to_string())));
    }
    let file = root.config_file();
    let text = match fs_err::read_to_string(&file) {
        Ok(t) => t,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(e.into()),
    };
    let doc: toml::Table = text.parse().map_err(|e| {
        Error::invalid(format!("{} is not valid TOML: {e}", file.display()))
            .with_hint("fix or remove the file")
    })?;
    crate::sources::check_config_keys(&file, &doc)?;
    let Some(v) = doc.get("defaults").and_then(|d| d.get(key)) else {
        return Ok(None);
    };
    let origin = format!("{} [defaults] {key}", file.display());
    match v.as_str() {
        Some(s) => Ok(Some((s.to_string(), origin))),
        None => Err(Error::invalid(format!("{origin} must be a string"))
            .with_hint(format!("write {key} = \"...\" (quoted)"))),
    }
}

fn current_path(root: &Root) -> PathBuf {
    root.path().join("environment").join("current.json")
}

fn read_current(root: &Root) -> Result<CurrentEnv> {
    // A step run before `env prepare` is a usage error, like a missing workspace (#23).
    manifest::read_optional(&current_path(root))?.ok_or_else(|| {
        Error::invalid(format!(
            "no TSBS environment has been prepared under {}",
            root.path().display()
        ))
        .with_hint("run `tsbsctl env prepare`")
    })
}

/// How to choose Go.
#[derive(Debug, Clone)]
pub enum GoRequest {
    /// A system Go ≥ 1.21 if there is one, else the managed default.
    Auto,
    /// `--go PATH`.
    Explicit(PathBuf),
    /// `--managed-go` / `--go-version V`.
    Managed(GoVersion),
}

/// A parsed `env prepare`.
#[derive(Debug, Clone)]
pub struct PrepareRequest {
    pub go: GoRequest,
    pub reinstall_go: bool,
    pub source: SourceRequest,
    pub rebuild: bool,
    /// The TSBS tools to build (benchmark.md §3.5; from the product registry:
    /// `crate::product::tsbs_tools`).
    pub tools: Vec<&'static str>,
    /// The remote locations `config.toml` may name, Go's downloads among them (from the
    /// product registry: `crate::product::source_keys`).
    pub source_keys: Vec<crate::sources::SourceKey>,
}

/// What an `env` command reports.
#[derive(Debug, Clone)]
pub struct Report {
    pub go: GoToolchain,
    /// `found` (system/explicit), `installed`, `reused` (managed), `recorded` (show).
    pub go_status: String,
    pub source: TsbsSource,
    pub source_status: String,
    pub dir: PathBuf,
    pub build_log: PathBuf,
    pub binaries: Vec<BinaryStatus>,
    /// `env verify`: `quick` or `full`.
    pub verified: Option<&'static str>,
    pub warnings: Vec<String>,
}

impl Report {
    /// The `data` object of the JSON envelope; the CLI words the report for a person
    /// (`src/cli/env.rs`).
    pub fn data(&self) -> Value {
        let g = &self.go;
        json!({
            "go": {
                "source": g.source.as_str(),
                "status": self.go_status,
                "version": g.version,
                "platform": g.platform,
                "binary": g.binary,
                "binary_sha256": g.binary_sha256,
                "version_output": g.version_output,
                "goroot": g.goroot,
                "checksum_source": g.checksum_source,
            },
            "tsbs": {
                "repo": self.source.repo,
                "commit": self.source.commit,
                "dirty": self.source.dirty,
                "source_kind": self.source.kind,
                "source_dir": self.source.dir,
                "source_status": self.source_status,
                "dir": self.dir,
                "build_log": self.build_log,
            },
            "binaries": self.binaries,
            "verified": self.verified,
            "warnings": self.warnings,
        })
    }
}

/// `tsbsctl env prepare`.
pub fn prepare(ctx: &Ctx, req: &PrepareRequest) -> Result<Report> {
    let platform = Platform::host()?;
    let reporter = ctx.reporter.clone();
    let command_line = ctx.command_line();
    let cx = tsbs::BuildCtx {
        root: &ctx.root,
        reporter: reporter.as_ref(),
        command_line: command_line.clone(),
        tools: &req.tools,
    };
    let mut go_status = String::new();
    let (go, prepared) = tsbs::prepare(
        &cx,
        &req.source,
        || {
            let (t, status) = choose_go(ctx, req, &platform)?;
            go_status = status;
            Ok(t)
        },
        req.rebuild,
    )?;
    let current = CurrentEnv {
        key: prepared.source.key(),
        go: go.clone(),
        source: prepared.source.clone(),
        prepared_at: manifest::now_rfc3339(),
        command: command_line,
        tool_version: crate::VERSION.to_string(),
    };
    manifest::write(&current_path(&ctx.root), &current)?;
    let source_status = match (prepared.source.kind.as_str(), prepared.fetched) {
        ("dir", _) => "given",
        (_, true) => "fetched",
        _ => "reused",
    };
    Ok(Report {
        go,
        go_status,
        source: prepared.source,
        source_status: source_status.to_string(),
        dir: prepared.dir,
        build_log: prepared.build_log,
        binaries: prepared.binaries,
        verified: None,
        warnings: Vec::new(),
    })
}

fn choose_go(
    ctx: &Ctx,
    req: &PrepareRequest,
    platform: &Platform,
) -> Result<(GoToolchain, String)> {
    let install = |version: GoVersion| -> Result<(GoToolchain, String)> {
        let cx = go::InstallCtx {
            root: &ctx.root,
            reporter: ctx.reporter.clone(),
            command_line: ctx.command_line(),
            source_keys: &req.source_keys,
        };
        let (t, installed) = go::ensure_managed(&cx, version, platform, req.reinstall_go)?;
        Ok((
            t,
            if installed { "installed" } else { "reused" }.to_string(),
        ))
    };
    match &req.go {
        GoRequest::Explicit(path) => Ok((go::explicit(path, platform)?, "found".into())),
        GoRequest::Managed(v) => install(*v),
        GoRequest::Auto if req.reinstall_go => install(go::default_version(&ctx.root)?),
        GoRequest::Auto => {
            for candidate in go::system_candidates() {
                match go::describe_unmanaged(&candidate, GoSource::System, platform) {
                    Ok(t) => return Ok((t, "found".into())),
                    Err(e) if e.kind == ErrorKind::Interrupted => return Err(e),
                    Err(e) => ctx.reporter.event(&Event::GoNotUsed {
                        path: candidate.clone(),
                        why: e.message,
                    }),
                }
            }
            // A managed Go chosen by an earlier prepare (say with --go-version) is kept rather
            // than downloading the default one.
            if let Some(t) = recorded_managed(ctx, platform)? {
                return Ok((t, "reused".into()));
            }
            install(go::default_version(&ctx.root)?)
        }
    }
}

/// The managed Go recorded by the last prepare, when it is still installed and intact.
fn recorded_managed(ctx: &Ctx, platform: &Platform) -> Result<Option<GoToolchain>> {
    let Ok(Some(current)) = manifest::read_optional::<CurrentEnv>(&current_path(&ctx.root)) else {
        return Ok(None);
    };
    let g = &current.go;
    if g.source != GoSource::Managed || g.platform != platform.dashed() {
        return Ok(None);
    }
    let Ok(version) = GoVersion::parse_requested(&g.version) else {
        return Ok(None);
    };
    let dir = ctx.root.go_dir(&g.version, &g.platform);
    if !dir.exists() {
        return Ok(None);
    }
    go::check_managed(&dir, version, platform, false).map(Some)
}

/// `tsbsctl env show`: what the last `env prepare` recorded; runs and hashes nothing.
/// `tools`: the tools the benchmarks use, in the order shown.
pub fn show(root: &Root, tools: &[&str]) -> Result<Report> {
    let current = read_current(root)?;
    let dir = root.tsbs_dir(&current.key);
    let m: BuildManifest = manifest::read(&dir.join("manifest.json"))?;
    let binaries = tools
        .iter()
        .filter_map(|t| {
            m.binaries
                .get(*t)
                .map(|r| tsbs::status_of(&dir, t, r, "recorded"))
        })
        .collect();
    Ok(Report {
        go: current.go,
        go_status: "recorded".into(),
        source: current.source,
        source_status: "recorded".into(),
        build_log: dir.join("build.log"),
        dir,
        binaries,
        verified: None,
        warnings: Vec::new(),
    })
}

/// `tsbsctl env verify [--full]`: re-checks what `env prepare` recorded, offline. Go: binary
/// checksum and `go version` (managed: also its manifest; `--full`: its whole tree). TSBS:
/// every binary's checksum, and the fetched source's HEAD.
/// `tools`: the tools that must have been built.
pub fn verify(root: &Root, full: bool, tools: &[&str]) -> Result<Report> {
    let current = read_current(root)?;
    let platform = Platform::host()?;
    let mut problems: Vec<(String, String)> = Vec::new();
    let mut warnings = Vec::new();
    let g = &current.go;
    if g.platform != platform.dashed() {
        problems.push((
            format!(
                "the environment was prepared for {}, this host is {platform}",
                g.platform
            ),
            "run `tsbsctl env prepare` on this host (or use another --root)".into(),
        ));
    }
    match g.source {
        GoSource::Managed => {
            let version = GoVersion::parse_requested(&g.version).map_err(|e| {
                Error::integrity(format!("{}: {}", current_path(root).display(), e.message))
            })?;
            let goroot = g
                .goroot
                .clone()
                .unwrap_or_else(|| root.go_dir(&g.version, &g.platform));
            match go::check_managed(&goroot, version, &platform, full) {
                Ok(t) if t.binary_sha256 != g.binary_sha256 => problems.push((
                    format!(
                        "the managed Go at {} is not the one recorded",
                        goroot.display()
                    ),
                    "run `tsbsctl env prepare`".into(),
                )),
                Ok(_) => {}
                Err(e) if e.kind == ErrorKind::Interrupted => return Err(e),
                Err(e) => problems.push((e.message, e.hint.unwrap_or_default())),
            }
        }
        GoSource::System | GoSource::Explicit => {
            let again = "run `tsbsctl env prepare` to choose and record a Go again".to_string();
            if !go::is_executable(&g.binary) {
                problems.push((
                    format!(
                        "Go binary {} is missing or not executable",
                        g.binary.display()
                    ),
                    again,
                ));
            } else {
                let sha = crate::hash::sha256_file(&g.binary, &NoProgress)?.0;
                if sha != g.binary_sha256 {
                    problems.push((
                        format!(
                            "Go binary {} changed (recorded sha256 {}, found {sha})",
                            g.binary.display(),
                            g.binary_sha256
                        ),
                        again,
                    ));
                } else {
                    match go::probe(&g.binary) {
                        Ok(p) if p.output == g.version_output => {}
                        Ok(p) => problems.push((
                            format!(
                                "{} now reports {:?}, recorded {:?}",
                                g.binary.display(),
                                p.output,
                                g.version_output
                            ),
                            again,
                        )),
                        Err(e) if e.kind == ErrorKind::Interrupted => return Err(e),
                        Err(e) => problems.push((e.message, again)),
                    }
                }
            }
        }
    }

    let dir = root.tsbs_dir(&current.key);
    let rebuild = "run `tsbsctl env prepare` (it rebuilds missing or changed binaries)".to_string();
    let m: Option<BuildManifest> = match manifest::read(&dir.join("manifest.json")) {
        Ok(m) => Some(m),
        Err(e) if e.kind == ErrorKind::Interrupted => return Err(e),
        Err(e) => {
            problems.push((e.message, rebuild.clone()));
            None
        }
    };
    let mut binaries = Vec::new();
    if let Some(m) = &m {
        if m.source.commit != current.source.commit || m.source.dirty != current.source.dirty {
            problems.push((
                format!(
                    "{} does not describe commit {}",
                    dir.join("manifest.json").display(),
                    current.source.commit
                ),
                rebuild.clone(),
            ));
        }
        for &tool in tools {
            let Some(r) = m.binaries.get(tool) else {
                problems.push((
                    format!("{tool} was never built for {}", current.key),
                    rebuild.clone(),
                ));
                continue;
            };
            let path = dir.join(&r.path);
            if !path.is_file() {
                problems.push((format!("{} is missing", path.display()), rebuild.clone()));
                continue;
            }
            crate::interrupt::check()?;
            let sha = crate::hash::sha256_file(&path, &NoProgress)?.0;
            if sha != r.sha256 {
                problems.push((
                    format!(
                        "{} changed (recorded sha256 {}, found {sha})",
                        path.display(),
                        r.sha256
                    ),
                    rebuild.clone(),
                ));
                continue;
            }
            binaries.push(tsbs::status_of(&dir, tool, r, "verified"));
        }
    }

    let src = &current.source;
    let source_status = if !src.dir.exists() {
        warnings.push(format!(
            "the TSBS source {} is gone (the binaries do not need it)",
            src.dir.display()
        ));
        "missing"
    } else {
        match tsbs::head_of(&src.dir).ok() {
            Some(h) if h == src.commit => "verified",
            Some(h) if src.kind == "dir" => {
                warnings.push(format!(
                    "{} moved on to {h} since the build from {}",
                    src.dir.display(),
                    src.commit
                ));
                "moved"
            }
            other => {
                problems.push((
                    format!(
                        "the TSBS source {} is at {}, expected {}",
                        src.dir.display(),
                        other.as_deref().unwrap_or("<no commit>"),
                        src.commit
                    ),
                    "run `tsbsctl env prepare` to fetch it again".into(),
                ));
                "mismatch"
            }
        }
    };
    if !problems.is_empty() {
        let message = problems
            .iter()
            .map(|(m, _)| m.as_str())
            .collect::<Vec<_>>()
            .join("; ");
        let mut hints: Vec<&str> = problems
            .iter()
            .map(|(_, h)| h.as_str())
            .filter(|h| !h.is_empty())
            .collect();
        hints.dedup();
        return Err(Error::integrity(format!(
            "the TSBS environment does not match its record: {message}"
        ))
        .with_hint(hints.join("; ")));
    }
    Ok(Report {
        go: current.go,
        go_status: "verified".into(),
        source: current.source,
        source_status: source_status.into(),
        build_log: dir.join("build.log"),
        dir,
        binaries,
        verified: Some(if full { "full" } else { "quick" }),
        warnings,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    const UNSET: &str = "TSBSCTL_TEST_VARIABLE_NOBODY_SETS";

    #[test]
    fn defaults_come_from_config_toml_when_the_variable_is_unset() {
        let dir = tempfile::tempdir().unwrap();
        let root = Root::at(dir.path());
        assert_eq!(configured_default(&root, UNSET, "tsbs_rev").unwrap(), None);
        assert_eq!(
            tsbs::default_commit(&root).unwrap(),
            (tsbs::PINNED_COMMIT.to_string(), "pinned".to_string())
        );
        std::fs::write(
            root.config_file(),
            "[sources]\ngo_dl = \"https://mirror.example/go\"\n[defaults]\ntsbs_rev = \"ABCDEF0123456789abcdef0123456789abcdef01\"\ngo_version = 7\n",
        )
        .unwrap();
        let (v, origin) = configured_default(&root, UNSET, "tsbs_rev")
            .unwrap()
            .unwrap();
        assert_eq!(v, "ABCDEF0123456789abcdef0123456789abcdef01");
        assert!(origin.ends_with("[defaults] tsbs_rev"), "{origin}");
        let e = configured_default(&root, UNSET, "go_version").unwrap_err();
        assert_eq!(e.exit_code(), 2);
        assert!(e.message.contains("must be a string"));
        std::fs::write(root.config_file(), "[defaults\n").unwrap();
        assert_eq!(
            configured_default(&root, UNSET, "tsbs_rev")
                .unwrap_err()
                .exit_code(),
            2
        );
        // Trial 2 N13: a misspelt key is named, not ignored.
        std::fs::write(root.config_file(), "[defaults]\ntsbs_revv = \"main\"\n").unwrap();
        let e = configured_default(&root, UNSET, "tsbs_rev").unwrap_err();
        assert!(e.message.contains("tsbs_revv"), "{}", e.message);
        std::fs::write(root.config_file(), "[defaults]\ntsbs_rev = \"main\"\n").unwrap();
        let e = tsbs::default_commit(&root).unwrap_err();
        assert_eq!(e.exit_code(), 2);
        assert!(e.message.contains("tsbs_rev"), "{}", e.message);
    }

    #[test]
    fn load_without_a_prepare_says_what_to_run() {
        let dir = tempfile::tempdir().unwrap();
        let root = Root::at(dir.path());
        let e = TsbsEnv::load(&root, None).unwrap_err();
        // A step before `env prepare` is exit 2 (trial-run #23).
        assert_eq!(e.exit_code(), 2);
        assert_eq!(e.hint.as_deref(), Some("run `tsbsctl env prepare`"));
        let e = TsbsEnv::load(&root, Some(tsbs::PINNED_COMMIT)).unwrap_err();
        assert!(e.hint.unwrap().contains(tsbs::PINNED_COMMIT));
    }
}
