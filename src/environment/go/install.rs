//! Go binaries on this machine: probing one (`go version` in a sealed environment), the system
//! candidates and a `--go PATH`, and the managed Go under `environment/go/<V>/<platform>/`:
//! checking it, and installing it (download, vouched digest, extraction, probe, manifest,
//! publication) under an install lock.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::Arc;
use std::time::Duration;

use serde::{Deserialize, Serialize};

use crate::archive::{self, ExtractOptions};
use crate::download::Downloader;
use crate::environment::process::run_capture;
use crate::error::{Error, ErrorKind, Result};
use crate::lock::{self, LockOptions};
use crate::manifest::{self, Manifest};
use crate::output::{Event, NoProgress, SharedReporter};
use crate::paths::Root;
use crate::platform::Platform;
use crate::sources::{SourceKey, Sources};

use super::version::{archive_name, pinned_sha256, GoVersion, DEFAULT_VERSION, MINIMUM};
use super::vouch::vouch;
use super::{GoSource, GoToolchain};

/// How long `go version` may take.
const PROBE_TIMEOUT: Duration = Duration::from_secs(15);
/// How long a second `env prepare` waits for another one's install.
const INSTALL_WAIT: Duration = Duration::from_secs(3600);

/// The manifest of a managed Go (`environment/go/<V>/<platform>/manifest.json`).
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct GoInstallManifest {
    pub version: String,
    pub platform: String,
    pub url: String,
    pub archive_sha256: String,
    pub checksum_source: String,
    /// Tree digest (setup.md §0.5) of the GOROOT, without this manifest.
    pub tree_digest: String,
    /// Relative to the install directory.
    pub binary: String,
    pub binary_sha256: String,
    pub go_version_output: String,
    pub installed_at: String,
    pub tool_version: String,
}

impl Manifest for GoInstallManifest {
    const KIND: &'static str = "go-installation";
}

/// The outcome of running `go version` on a candidate.
#[derive(Debug, Clone)]
pub struct Probe {
    pub version: GoVersion,
    pub output: String,
}

/// Runs `<go> version` with `GOTOOLCHAIN=local` (so probing never downloads a toolchain),
/// `GOENV=off`, a neutral working directory and a minimal environment, bounded to 15 s.
pub fn probe(binary: &Path) -> Result<Probe> {
    let what = format!("Go binary {}", binary.display());
    let mut cmd = Command::new(binary);
    cmd.arg("version")
        .env_clear()
        .env("PATH", "/usr/local/bin:/usr/bin:/bin")
        .env("GOTOOLCHAIN", "local")
        .env("GOENV", "off")
        .current_dir("/");
    if let Some(home) = std::env::var_os("HOME") {
        cmd.env("HOME", home);
    }
    let out = run_capture(cmd, PROBE_TIMEOUT).map_err(|e| e.into_error(&what))?;
    if !out.status.success() {
        return Err(Error::failed(format!(
            "{what} failed version verification: {}",
            out.diagnostic()
        )));
    }
    let (version, _os_arch) = GoVersion::parse_output(&out.stdout).map_err(Error::failed)?;
    Ok(Probe {
        version,
        output: out.stdout.trim().to_string(),
    })
}

/// Probes a candidate and requires Go ≥ 1.21.
pub fn probe_acceptable(binary: &Path) -> Result<Probe> {
    let p = probe(binary)?;
    if p.version < MINIMUM {
        return Err(Error::failed(format!(
            "Go {} is too old; TSBS requires Go {MINIMUM} or newer",
            p.version
        )));
    }
    Ok(p)
}

/// System Go candidates in order: the first `go` on PATH, then `$GOROOT/bin/go`.
pub fn system_candidates() -> Vec<PathBuf> {
    let mut out: Vec<PathBuf> = Vec::new();
    if let Some(path) = std::env::var_os("PATH") {
        if let Some(p) = std::env::split_paths(&path)
            .filter(|d| d.is_absolute())
            .map(|d| d.join("go"))
            .find(|p| is_executable(p))
        {
            out.push(p);
        }
    }
    if let Some(goroot) = std::env::var_os("GOROOT").filter(|g| !g.is_empty()) {
        let p = PathBuf::from(goroot).join("bin").join("go");
        if is_executable(&p) {
            out.push(p);
        }
    }
    let mut seen = Vec::new();
    out.retain(|p| {
        let c = std::fs::canonicalize(p).unwrap_or_else(|_| p.clone());
        if seen.contains(&c) {
            false
        } else {
            seen.push(c);
            true
        }
    });
    out
}

pub fn is_executable(p: &Path) -> bool {
    use std::os::unix::fs::PermissionsExt;
    std::fs::metadata(p)
        .map(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
        .unwrap_or(false)
}

fn sha256_of(path: &Path) -> Result<String> {
    Ok(crate::hash::sha256_file(path, &NoProgress)?.0)
}

/// A Go given by the user or found on the system, as a toolchain record.
pub fn describe_unmanaged(
    binary: &Path,
    source: GoSource,
    platform: &Platform,
) -> Result<GoToolchain> {
    let resolved = fs_err::canonicalize(binary)?;
    let probe = probe_acceptable(&resolved)?;
    Ok(GoToolchain {
        source,
        version: probe.version.to_string(),
        platform: platform.dashed(),
        binary_sha256: sha256_of(&resolved)?,
        binary: resolved,
        version_output: probe.output,
        goroot: None,
        checksum_source: None,
    })
}

/// `--go PATH`: that binary must exist and be an acceptable Go, else invalid input.
pub fn explicit(path: &Path, platform: &Platform) -> Result<GoToolchain> {
    if !is_executable(path) {
        return Err(
            Error::invalid(format!("--go {} is not an executable file", path.display())).with_hint(
                "give the path of a go binary (e.g. /usr/local/go/bin/go), or omit --go",
            ),
        );
    }
    describe_unmanaged(path, GoSource::Explicit, platform).map_err(|e| {
        if e.kind == ErrorKind::Interrupted {
            e
        } else {
            Error::invalid(format!("--go {}: {}", path.display(), e.message))
                .with_hint("give a Go 1.21+ release binary, or omit --go to let tsbsctl choose")
        }
    })
}

/// The hint that repairs a managed Go.
pub fn repair_hint(version: GoVersion) -> String {
    if version == DEFAULT_VERSION {
        "run `tsbsctl env prepare --reinstall-go`".to_string()
    } else {
        format!("run `tsbsctl env prepare --go-version {version} --reinstall-go`")
    }
}

/// Checks an existing managed Go: manifest, identity, binary checksum, `go version`, and with
/// `full` the tree digest. Every mismatch is an integrity error with the repair command.
pub fn check_managed(
    dir: &Path,
    version: GoVersion,
    platform: &Platform,
    full: bool,
) -> Result<GoToolchain> {
    let corrupt = |what: String| {
        Error::integrity(format!("managed Go {version} at {}: {what}", dir.display()))
            .with_hint(repair_hint(version))
    };
    let m: GoInstallManifest = manifest::read(&dir.join("manifest.json")).map_err(|e| {
        if e.kind == ErrorKind::Interrupted {
            e
        } else {
            corrupt(e.message)
        }
    })?;
    if m.version != version.to_string() || m.platform != platform.dashed() {
        return Err(corrupt(format!(
            "the manifest records Go {} for {}",
            m.version, m.platform
        )));
    }
    let binary = dir.join(&m.binary);
    if !is_executable(&binary) {
        return Err(corrupt("bin/go is missing or not executable".into()));
    }
    let sha = sha256_of(&binary)?;
    if sha != m.binary_sha256 {
        return Err(corrupt(format!(
            "bin/go checksum mismatch (recorded {}, found {sha})",
            m.binary_sha256
        )));
    }
    if full {
        let digest = crate::treehash::tree_digest(dir)?;
        if digest != m.tree_digest {
            return Err(corrupt(format!(
                "the installed tree changed (recorded digest {}, found {digest})",
                m.tree_digest
            )));
        }
    }
    let probe = probe(&binary).map_err(|e| {
        if e.kind == ErrorKind::Interrupted {
            e
        } else {
            corrupt(e.message)
        }
    })?;
    if probe.version != version {
        return Err(corrupt(format!(
            "go version reports {}, expected {version}",
            probe.version
        )));
    }
    Ok(GoToolchain {
        source: GoSource::Managed,
        version: version.to_string(),
        platform: platform.dashed(),
        binary: std::fs::canonicalize(&binary).unwrap_or(binary),
        binary_sha256: sha,
        version_output: probe.output,
        goroot: Some(dir.to_path_buf()),
        checksum_source: Some(m.checksum_source),
    })
}

/// What [`ensure_managed`] needs from the caller.
pub struct InstallCtx<'a> {
    pub root: &'a Root,
    pub reporter: SharedReporter,
    pub command_line: String,
    /// Every remote location `config.toml` may name (the products' too).
    pub source_keys: &'a [SourceKey],
}

/// The managed Go `version` for `platform`: reused when present and intact, else downloaded,
/// verified, extracted and published under an install lock (re-checked after the lock is
/// taken, so a second process waits and then reuses). With `reinstall`, an existing install is
/// replaced. Returns the toolchain and whether anything was installed.
pub fn ensure_managed(
    cx: &InstallCtx<'_>,
    version: GoVersion,
    platform: &Platform,
    reinstall: bool,
) -> Result<(GoToolchain, bool)> {
    let dir = cx.root.go_dir(&version.to_string(), &platform.dashed());
    if !reinstall && dir.exists() {
        return Ok((check_managed(&dir, version, platform, false)?, false));
    }
    cx.root.ensure()?;
    let lock_path = dir.with_file_name(format!("{}.lock", platform.dashed()));
    let _guard = lock::lock_file(
        &lock_path,
        &format!("Go {version} install for {platform}"),
        &cx.command_line,
        &LockOptions {
            wait: Some(INSTALL_WAIT),
            hold_token: None,
        },
        cx.reporter.as_ref(),
    )?;
    let _ = crate::fsutil::clean_staging(&dir, "old");
    if dir.exists() {
        if !reinstall {
            // Someone else installed it while we waited.
            return Ok((check_managed(&dir, version, platform, false)?, false));
        }
        let aside = crate::fsutil::staging_path(&dir, "old")?;
        crate::fsutil::rename_durable(&dir, &aside)?;
        let result = install(cx, version, platform, &dir);
        if result.is_err() && !dir.exists() {
            // Put the previous tree back so that a failed reinstall changes nothing.
            let _ = crate::fsutil::rename_durable(&aside, &dir);
        } else {
            let _ = std::fs::remove_dir_all(&aside);
        }
        return result.map(|t| (t, true));
    }
    install(cx, version, platform, &dir).map(|t| (t, true))
}

fn install(
    cx: &InstallCtx<'_>,
    version: GoVersion,
    platform: &Platform,
    dir: &Path,
) -> Result<GoToolchain> {
    let sources = Sources::load(cx.root, cx.source_keys)?;
    let downloader = Downloader::new(cx.root, &sources, Arc::clone(&cx.reporter))?;
    let name = archive_name(version, platform);
    let index_url = sources.url(SourceKey::GO_DL, "?mode=json&include=all");
    let pin = pinned_sha256(version, &platform.dashed());
    cx.reporter.event(&Event::CheckingGo {
        archive: name.clone(),
        index_url: index_url.clone(),
    });
    let index = downloader.fetch_json(&index_url, "application/json");
    crate::interrupt::check()?;
    let reporter = Arc::clone(&cx.reporter);
    let vouched = vouch(version, platform, pin, index.as_ref(), &index_url, &|m| {
        reporter.warning(m)
    })?;
    let url = sources.url(SourceKey::GO_DL, &name);
    let verified = downloader.fetch_verified(&url, &vouched.sha256, &name)?;
    crate::interrupt::check()?;
    cx.reporter.event(&Event::Extracting {
        archive: name.clone(),
    });
    let staged = archive::extract_staged(
        &verified.path,
        dir,
        &ExtractOptions {
            top_dir: Some("go".into()),
            forbid_symlinks: false,
        },
    )?;
    let tree = staged.path().to_path_buf();
    let binary = tree.join("bin").join("go");
    if !is_executable(&binary) {
        return Err(Error::integrity(format!(
            "the Go archive {name} does not contain an executable go/bin/go"
        ))
        .with_hint("check the archive source (TSBSCTL_GO_DL_URL / [sources] go_dl)"));
    }
    let probe = probe(&binary).map_err(|e| {
        if e.kind == ErrorKind::Interrupted {
            e
        } else {
            Error::integrity(format!("the Go from {name} does not run: {}", e.message))
                .with_hint("check the archive source (TSBSCTL_GO_DL_URL / [sources] go_dl)")
        }
    })?;
    if probe.version != version {
        return Err(Error::integrity(format!(
            "the Go from {name} reports {}, expected {version}",
            probe.version
        ))
        .with_hint("check the archive source (TSBSCTL_GO_DL_URL / [sources] go_dl)"));
    }
    let binary_sha256 = sha256_of(&binary)?;
    let tree_digest = crate::treehash::tree_digest(&tree)?;
    let m = GoInstallManifest {
        version: version.to_string(),
        platform: platform.dashed(),
        url: url.clone(),
        archive_sha256: verified.sha256.clone(),
        checksum_source: vouched.source.to_string(),
        tree_digest,
        binary: "bin/go".into(),
        binary_sha256,
        go_version_output: probe.output,
        installed_at: manifest::now_rfc3339(),
        tool_version: crate::VERSION.to_string(),
    };
    manifest::write(&tree.join("manifest.json"), &m)?;
    crate::interrupt::check()?;
    staged.publish(dir)?;
    cx.reporter.event(&Event::GoInstalled {
        version: version.to_string(),
        dir: dir.to_path_buf(),
    });
    check_managed(dir, version, platform, false)
}
