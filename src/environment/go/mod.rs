//! The Go toolchain (setup.md §1): probing a system Go, and installing, checking and reusing a
//! managed Go under `environment/go/<version>/<platform>/` (that directory is GOROOT).

use std::fmt;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::Arc;
use std::time::Duration;

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::archive::{self, ExtractOptions};
use crate::download::Downloader;
use crate::error::{Error, ErrorKind, Result};
use crate::lock::{self, LockOptions};
use crate::manifest::{self, Manifest};
use crate::output::{NoProgress, SharedReporter};
use crate::paths::Root;
use crate::platform::Platform;
use crate::sources::{SourceKey, Sources};

use super::process::run_capture;

/// The managed Go installed when no acceptable Go is found and no version is asked for.
pub const DEFAULT_VERSION: GoVersion = GoVersion {
    major: 1,
    minor: 21,
    patch: 13,
};

/// TSBS needs Go 1.21 or newer.
pub const MINIMUM: GoVersion = GoVersion {
    major: 1,
    minor: 21,
    patch: 0,
};

/// SHA-256 of the official go1.21.13 archives, compiled in so that the digest does not come
/// from the same origin as the archive (setup.md §7 item 3). Each value agrees across
/// independent public pins:
/// * cashapp/hermit-packages `go.hcl` (commit 7834205a) — all four;
/// * Vercel's Go builder `packages/go/src/go-helpers.ts` version map (1.21 → 1.21.13) — all four;
/// * a Go SDK table `sdkHashes` for `go1.21.13` (dl.google.com) — all four;
/// * Dockerfiles/provisioning scripts pinning linux-amd64 and linux-arm64, and a nix-style
///   `go_1_21_13` entry (linux-amd64).
///
/// setup.md §1.4 lists the same four and warns of one Dockerfile with a different linux-amd64
/// value: the majority value is used. go.dev's JSON index, when reachable, must agree.
pub const PINNED_1_21_13: [(&str, &str); 4] = [
    (
        "linux-amd64",
        "502fc16d5910562461e6a6631fb6377de2322aad7304bf2bcd23500ba9dab4a7",
    ),
    (
        "linux-arm64",
        "2ca2d70dc9c84feef959eb31f2a5aac33eefd8c97fe48f1548886d737bffabd4",
    ),
    (
        "darwin-amd64",
        "796fd05e8741f6776c505eb201922864f2e32991679b639d9fcb524dbe300c0d",
    ),
    (
        "darwin-arm64",
        "c04ee7bdc0e65cf17133994c40ee9bdfa1b1dc9587b3baedaea39affdb8e5b49",
    ),
];

/// How long `go version` may take.
const PROBE_TIMEOUT: Duration = Duration::from_secs(15);
/// How long a second `env prepare` waits for another one's install.
const INSTALL_WAIT: Duration = Duration::from_secs(3600);

/// A stable Go release number.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct GoVersion {
    pub major: u32,
    pub minor: u32,
    pub patch: u32,
}

impl fmt::Display for GoVersion {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}.{}.{}", self.major, self.minor, self.patch)
    }
}

fn number(s: &str) -> Option<u32> {
    // Digits only, no leading zeros (Go never writes them).
    if s.is_empty() || !s.bytes().all(|b| b.is_ascii_digit()) || (s.len() > 1 && s.starts_with('0'))
    {
        return None;
    }
    s.parse().ok()
}

impl GoVersion {
    /// Parses `--go-version`: exactly `MAJOR.MINOR.PATCH` (a leading `go` is accepted), at
    /// least 1.21.0.
    pub fn parse_requested(s: &str) -> Result<GoVersion> {
        let bad = || {
            Error::invalid(format!("--go-version {s:?} is not a Go release number"))
                .with_hint("give a stable release such as 1.21.13 or 1.22.5 (MAJOR.MINOR.PATCH)")
        };
        let body = s.strip_prefix("go").unwrap_or(s);
        let parts: Vec<&str> = body.split('.').collect();
        if parts.len() != 3 {
            return Err(bad());
        }
        let v = GoVersion {
            major: number(parts[0]).ok_or_else(bad)?,
            minor: number(parts[1]).ok_or_else(bad)?,
            patch: number(parts[2]).ok_or_else(bad)?,
        };
        if v < MINIMUM {
            return Err(Error::invalid(format!(
                "--go-version {v} is too old; TSBS requires Go {MINIMUM} or newer"
            ))
            .with_hint("give 1.21.0 or newer, or omit --go-version for the default 1.21.13"));
        }
        Ok(v)
    }

    /// Parses the output of `go version`: exactly `go version go<MAJOR>.<MINOR>[.<PATCH>]
    /// <os>/<arch>` after trimming. Devel, RC/beta, gccgo and tagged (`X:...`) builds are
    /// refused. Returns the version and the `<os>/<arch>` token.
    pub fn parse_output(out: &str) -> std::result::Result<(GoVersion, String), String> {
        let text = out.trim();
        let shown = if text.is_empty() { "<empty>" } else { text };
        let fail = || format!("could not parse stable Go version output: {shown}");
        let rest = text.strip_prefix("go version go").ok_or_else(fail)?;
        let mut tokens = rest.split(' ');
        let (Some(ver), Some(os_arch), None) = (tokens.next(), tokens.next(), tokens.next()) else {
            return Err(fail());
        };
        if os_arch.is_empty() || !os_arch.contains('/') {
            return Err(fail());
        }
        let parts: Vec<&str> = ver.split('.').collect();
        let v = match parts.as_slice() {
            [a, b] => (number(a), number(b), Some(0)),
            [a, b, c] => (number(a), number(b), number(c)),
            _ => return Err(fail()),
        };
        match v {
            (Some(major), Some(minor), Some(patch)) => Ok((
                GoVersion {
                    major,
                    minor,
                    patch,
                },
                os_arch.to_string(),
            )),
            _ => Err(fail()),
        }
    }

    /// The go.dev tag, `go1.21.13`.
    pub fn tag(&self) -> String {
        format!("go{self}")
    }
}

/// Overrides the managed version installed by default (below `--go-version`, above
/// `[defaults] go_version` in config.toml).
pub const VERSION_ENV: &str = "TSBSCTL_GO_VERSION";

/// The managed version to install when none is asked for: `TSBSCTL_GO_VERSION` >
/// `[defaults] go_version` > 1.21.13.
pub fn default_version(root: &Root) -> Result<GoVersion> {
    match super::configured_default(root, VERSION_ENV, "go_version")? {
        Some((v, origin)) => GoVersion::parse_requested(&v).map_err(|e| {
            Error::invalid(e.message.replace("--go-version", &origin))
                .with_hint(e.hint.unwrap_or_default())
        }),
        None => Ok(DEFAULT_VERSION),
    }
}

/// The compiled-in digest of the default version's archive for `platform`, if any.
pub fn pinned_sha256(version: GoVersion, platform: &str) -> Option<&'static str> {
    if version != DEFAULT_VERSION {
        return None;
    }
    PINNED_1_21_13
        .iter()
        .find(|(p, _)| *p == platform)
        .map(|(_, d)| *d)
}

/// `go<V>.<os>-<arch>.tar.gz`.
pub fn archive_name(version: GoVersion, platform: &Platform) -> String {
    format!(
        "go{version}.{}-{}.tar.gz",
        platform.os_str(),
        platform.arch_str()
    )
}

/// One archive entry of go.dev's `?mode=json&include=all` index.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct IndexEntry {
    pub filename: String,
    pub sha256: String,
}

/// Finds the archive for `version`/`platform` in the index. `Err` when the document is not the
/// index's shape (not an array); `Ok(None)` when the release or the archive is not listed.
/// Entries with a missing file name, another kind, or a digest that is not 64 lowercase hex
/// characters are skipped.
pub fn find_in_index(
    index: &Value,
    version: GoVersion,
    platform: &Platform,
) -> std::result::Result<Option<IndexEntry>, String> {
    let releases = index
        .as_array()
        .ok_or_else(|| "the Go download index is not a JSON array".to_string())?;
    let tag = version.tag();
    let expected_name = archive_name(version, platform);
    for release in releases {
        if release.get("version").and_then(Value::as_str) != Some(tag.as_str()) {
            continue;
        }
        let Some(files) = release.get("files").and_then(Value::as_array) else {
            continue;
        };
        for f in files {
            let s = |k: &str| f.get(k).and_then(Value::as_str);
            if s("os") != Some(platform.os_str())
                || s("arch") != Some(platform.arch_str())
                || s("kind") != Some("archive")
                || s("filename") != Some(expected_name.as_str())
            {
                continue;
            }
            let Some(sha) = s("sha256") else { continue };
            if sha.len() != 64 || !sha.bytes().all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f')) {
                continue;
            }
            return Ok(Some(IndexEntry {
                filename: expected_name,
                sha256: sha.to_string(),
            }));
        }
    }
    Ok(None)
}

/// Which source vouched for an archive digest.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Vouched {
    pub sha256: String,
    /// `pinned+index` (compiled pin, confirmed by the index), `pinned` (index unreachable or
    /// silent), or `index`.
    pub source: &'static str,
}

/// Decides the expected digest from the compiled pin (if any) and the index (if it could be
/// fetched). A pin and an index that disagree is an integrity error, never a silent pick.
pub fn vouch(
    version: GoVersion,
    platform: &Platform,
    pin: Option<&str>,
    index: std::result::Result<&Value, &Error>,
    index_url: &str,
    warn: &dyn Fn(&str),
) -> Result<Vouched> {
    let name = archive_name(version, platform);
    let listed = match index {
        Ok(doc) => match find_in_index(doc, version, platform) {
            Ok(e) => Ok(e),
            Err(why) => Err(why),
        },
        Err(e) => Err(e.message.clone()),
    };
    match (pin, listed) {
        (Some(pin), Ok(Some(entry))) if entry.sha256 == pin => Ok(Vouched {
            sha256: pin.to_string(),
            source: "pinned+index",
        }),
        (Some(pin), Ok(Some(entry))) => Err(Error::integrity(format!(
            "the Go download index at {index_url} gives sha256 {} for {name}, but tsbsctl's compiled pin is {pin}",
            entry.sha256
        ))
        .with_hint("the index or a mirror in between may be compromised or wrong; check TSBSCTL_GO_DL_URL / [sources] go_dl, or pass --go PATH to use a Go you trust")),
        (Some(pin), Ok(None)) => {
            warn(&format!(
                "the Go download index at {index_url} does not list {name}; using the compiled checksum"
            ));
            Ok(Vouched {
                sha256: pin.to_string(),
                source: "pinned",
            })
        }
        (Some(pin), Err(why)) => {
            warn(&format!(
                "could not cross-check {name} with the Go download index ({why}); using the compiled checksum"
            ));
            Ok(Vouched {
                sha256: pin.to_string(),
                source: "pinned",
            })
        }
        (None, Ok(Some(entry))) => Ok(Vouched {
            sha256: entry.sha256,
            source: "index",
        }),
        (None, Ok(None)) => Err(Error::invalid(format!(
            "the Go download index at {index_url} has no {name} archive"
        ))
        .with_hint("pick a released Go version that exists for this platform (see https://go.dev/dl/), or omit --go-version for 1.21.13")),
        (None, Err(why)) => Err(Error::failed(format!(
            "could not read the Go download index at {index_url}: {why}"
        ))
        .with_hint(format!(
            "Go {version} has no compiled checksum, so the index must be reachable; check the network or TSBSCTL_GO_DL_URL, or use the default version 1.21.13"
        ))),
    }
}

/// Where the chosen Go came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum GoSource {
    /// Found on PATH or in $GOROOT/bin.
    System,
    /// Given with `--go PATH`.
    Explicit,
    /// Installed by tsbsctl.
    Managed,
}

impl GoSource {
    pub fn as_str(self) -> &'static str {
        match self {
            GoSource::System => "system",
            GoSource::Explicit => "explicit",
            GoSource::Managed => "managed",
        }
    }
}

/// The Go toolchain an environment uses, as recorded and reported.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Eq)]
pub struct GoToolchain {
    pub source: GoSource,
    /// `1.21.13`
    pub version: String,
    /// Host platform, `linux-amd64`.
    pub platform: String,
    /// Absolute path, symlinks resolved.
    pub binary: PathBuf,
    pub binary_sha256: String,
    /// What `go version` printed.
    pub version_output: String,
    /// Managed only: the install directory (GOROOT).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub goroot: Option<PathBuf>,
    /// Managed only: who vouched for the archive digest (`pinned+index`, `pinned`, `index`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub checksum_source: Option<String>,
}

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
    let resolved = std::fs::canonicalize(binary).map_err(|e| Error::io("resolve", binary, e))?;
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
    let sources = Sources::load(cx.root)?;
    let downloader = Downloader::new(cx.root, &sources, Arc::clone(&cx.reporter))?;
    let name = archive_name(version, platform);
    let index_url = sources.url(SourceKey::GoDl, "?mode=json&include=all");
    let pin = pinned_sha256(version, &platform.dashed());
    cx.reporter
        .info(&format!("checking {name} against {index_url}"));
    let index = downloader.fetch_json(&index_url, "application/json");
    crate::interrupt::check()?;
    let reporter = Arc::clone(&cx.reporter);
    let vouched = vouch(version, platform, pin, index.as_ref(), &index_url, &|m| {
        reporter.warn(m)
    })?;
    let url = sources.url(SourceKey::GoDl, &name);
    let verified = downloader.fetch_verified(&url, &vouched.sha256, &name)?;
    crate::interrupt::check()?;
    cx.reporter.info(&format!("extracting {name}"));
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
    cx.reporter
        .info(&format!("installed Go {version} in {}", dir.display()));
    check_managed(dir, version, platform, false)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn v(major: u32, minor: u32, patch: u32) -> GoVersion {
        GoVersion {
            major,
            minor,
            patch,
        }
    }

    #[test]
    fn version_output_grammar() {
        assert_eq!(
            GoVersion::parse_output("go version go1.21.0 linux/amd64\n").unwrap(),
            (v(1, 21, 0), "linux/amd64".into())
        );
        assert_eq!(
            GoVersion::parse_output("go version go1.24 darwin/arm64")
                .unwrap()
                .0,
            v(1, 24, 0)
        );
        for bad in [
            "go version devel go1.25-abc linux/amd64",
            "go1.21.0",
            "go version go1.22rc1 linux/amd64",
            "go version go1.21.0 X:boringcrypto linux/amd64",
            "go version go1.21.0 linux/amd64 X:boringcrypto",
            "go version go1.21.0",
            "go version go1.21.0  linux/amd64",
            "go version go1.21.01 linux/amd64",
            "go version go1.21.0.1 linux/amd64",
            "go version go1.18 gccgo (GCC) 12.2.0 linux/amd64",
            "",
        ] {
            let e = GoVersion::parse_output(bad).unwrap_err();
            assert!(
                e.contains("could not parse stable Go version output"),
                "{bad}: {e}"
            );
        }
        assert!(GoVersion::parse_output("")
            .unwrap_err()
            .ends_with("<empty>"));
    }

    #[test]
    fn requested_version_grammar() {
        assert_eq!(GoVersion::parse_requested("1.22.5").unwrap(), v(1, 22, 5));
        assert_eq!(
            GoVersion::parse_requested("go1.21.13").unwrap(),
            v(1, 21, 13)
        );
        for bad in [
            "1.22",
            "1.22.5rc1",
            "latest",
            "1.22.05",
            "",
            "1.22.5 ",
            "v1.22.5",
        ] {
            assert_eq!(
                GoVersion::parse_requested(bad).unwrap_err().exit_code(),
                2,
                "{bad}"
            );
        }
        let old = GoVersion::parse_requested("1.20.14").unwrap_err();
        assert_eq!(old.exit_code(), 2);
        assert!(old.message.contains("too old"));
        assert!(v(1, 21, 0) >= MINIMUM && v(1, 20, 14) < MINIMUM && v(2, 0, 0) > MINIMUM);
    }

    #[test]
    fn pins_cover_the_four_platforms_of_the_default_only() {
        for p in ["linux-amd64", "linux-arm64", "darwin-amd64", "darwin-arm64"] {
            let d = pinned_sha256(DEFAULT_VERSION, p).unwrap();
            assert_eq!(d.len(), 64);
        }
        assert!(pinned_sha256(v(1, 22, 5), "linux-amd64").is_none());
        assert!(pinned_sha256(DEFAULT_VERSION, "linux-riscv64").is_none());
    }

    fn linux() -> Platform {
        Platform::from_parts("linux", "x86_64").unwrap()
    }

    fn index(sha: &str) -> Value {
        json!([
            {"version": "go1.22.5", "stable": true, "files": [
                {"filename": "go1.22.5.linux-amd64.tar.gz", "os": "linux", "arch": "amd64",
                 "kind": "archive", "sha256": "b".repeat(64)}]},
            {"version": "go1.21.13", "stable": true, "files": [
                {"filename": "go1.21.13.src.tar.gz", "os": "", "arch": "", "kind": "source", "sha256": "c".repeat(64)},
                {"filename": "go1.21.13.linux-amd64.pkg", "os": "linux", "arch": "amd64", "kind": "installer", "sha256": "d".repeat(64)},
                {"filename": "go1.21.13.linux-amd64.tar.gz", "os": "linux", "arch": "amd64", "kind": "archive", "sha256": "E".repeat(64)},
                {"filename": "go1.21.13.linux-amd64.tar.gz", "os": "linux", "arch": "amd64", "kind": "archive", "sha256": sha},
                {"filename": "go1.21.13.linux-arm64.tar.gz", "os": "linux", "arch": "arm64", "kind": "archive", "sha256": "f".repeat(64)}]}
        ])
    }

    #[test]
    fn index_lookup_skips_other_kinds_and_malformed_digests() {
        let pin = pinned_sha256(DEFAULT_VERSION, "linux-amd64").unwrap();
        let e = find_in_index(&index(pin), DEFAULT_VERSION, &linux())
            .unwrap()
            .unwrap();
        assert_eq!(e.sha256, pin);
        assert_eq!(e.filename, "go1.21.13.linux-amd64.tar.gz");
        assert_eq!(
            find_in_index(&index(pin), v(1, 22, 5), &linux())
                .unwrap()
                .unwrap()
                .sha256,
            "b".repeat(64)
        );
        assert!(find_in_index(&index(pin), v(1, 23, 0), &linux())
            .unwrap()
            .is_none());
        assert!(
            find_in_index(&json!({"version": "go1.21.13"}), DEFAULT_VERSION, &linux()).is_err()
        );
    }

    #[test]
    fn vouching_rules() {
        let pin = pinned_sha256(DEFAULT_VERSION, "linux-amd64").unwrap();
        let warned = std::cell::RefCell::new(Vec::<String>::new());
        let warn = |m: &str| warned.borrow_mut().push(m.to_string());
        let p = linux();
        let good = index(pin);
        let r = vouch(DEFAULT_VERSION, &p, Some(pin), Ok(&good), "u", &warn).unwrap();
        assert_eq!((r.sha256.as_str(), r.source), (pin, "pinned+index"));

        let bad = index(&"a".repeat(64));
        let e = vouch(DEFAULT_VERSION, &p, Some(pin), Ok(&bad), "u", &warn).unwrap_err();
        assert_eq!(e.exit_code(), 4);

        let down = Error::failed("connection refused");
        let r = vouch(DEFAULT_VERSION, &p, Some(pin), Err(&down), "u", &warn).unwrap();
        assert_eq!(r.source, "pinned");
        assert_eq!(warned.borrow().len(), 1);

        let r = vouch(v(1, 22, 5), &p, None, Ok(&good), "u", &warn).unwrap();
        assert_eq!((r.sha256, r.source), ("b".repeat(64), "index"));
        assert_eq!(
            vouch(v(1, 23, 0), &p, None, Ok(&good), "u", &warn)
                .unwrap_err()
                .exit_code(),
            2
        );
        assert_eq!(
            vouch(v(1, 22, 5), &p, None, Err(&down), "u", &warn)
                .unwrap_err()
                .exit_code(),
            1
        );
    }
}
