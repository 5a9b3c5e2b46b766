//! The TSBS source (a pinned commit fetched with git, or an existing checkout) and the build of
//! the six tools the benchmarks use, once per commit, into `environment/tsbs/<key>/bin/`.

use std::collections::BTreeMap;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Duration;

use serde::{Deserialize, Serialize};

use crate::error::{Error, ErrorKind, Result};
use crate::lock::{self, LockOptions};
use crate::manifest::{self, Manifest};
use crate::output::{BuildReason, Event, NoProgress, Reporter, Warning};
use crate::paths::Root;

use super::go::GoToolchain;
use super::process::{run_capture, wait_bounded, NETWORK_PASSTHROUGH};

/// The TSBS commit the reference pins (GreptimeTeam/tsbs).
pub const PINNED_COMMIT: &str = "81d12c8bc5aa985aed0d0d6f040a2cbcf77e4a82";

/// Overrides the default commit (below `--tsbs-rev`, above `[defaults] tsbs_rev`).
pub const REV_ENV: &str = "TSBSCTL_TSBS_REV";

const GIT_TIMEOUT: Duration = Duration::from_secs(1800);
const LOCK_WAIT: Duration = Duration::from_secs(3600);

/// Checks a commit id: 40 hexadecimal characters (lower-cased). `flag` names the origin.
pub fn validate_commit(flag: &str, value: &str) -> Result<String> {
    let v = value.trim();
    if v.len() == 40 && v.bytes().all(|b| b.is_ascii_hexdigit()) {
        Ok(v.to_ascii_lowercase())
    } else {
        Err(
            Error::invalid(format!("{flag} {value:?} is not a full commit id"))
                .with_hint("give the full 40-character commit id (branch and tag names are not pins; `git rev-parse <name>` prints the id)"),
        )
    }
}

/// The default commit and where it came from: `TSBSCTL_TSBS_REV` > `[defaults] tsbs_rev` in
/// config.toml > the pinned commit.
pub fn default_commit(root: &Root) -> Result<(String, String)> {
    match super::configured_default(root, REV_ENV, "tsbs_rev")? {
        Some((v, origin)) => Ok((validate_commit(&origin, &v)?, origin)),
        None => Ok((PINNED_COMMIT.to_string(), "pinned".to_string())),
    }
}

/// Where the TSBS source of an environment is.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Eq)]
pub struct TsbsSource {
    /// The repository URL (or, for `--tsbs-dir` without an `origin` remote, the directory).
    pub repo: String,
    pub commit: String,
    pub dirty: bool,
    /// `fetched` (under `environment/tsbs/<commit>/src`) or `dir` (`--tsbs-dir`).
    pub kind: String,
    pub dir: PathBuf,
}

impl TsbsSource {
    /// The directory name under `environment/tsbs/`: the commit, with `-dirty` for a dirty
    /// checkout (whose binaries must never be mistaken for the commit's).
    pub fn key(&self) -> String {
        if self.dirty {
            format!("{}-dirty", self.commit)
        } else {
            self.commit.clone()
        }
    }
}

/// `git` with the user's PATH and HOME (credentials and proxy configuration), never prompting,
/// in the C locale so its messages can be recognised.
fn git(dir: &Path) -> Command {
    let mut c = Command::new("git");
    c.current_dir(dir)
        .env_clear()
        .env("GIT_TERMINAL_PROMPT", "0")
        .env("LC_ALL", "C");
    for k in ["PATH", "HOME"].iter().chain(NETWORK_PASSTHROUGH) {
        if let Some(v) = std::env::var_os(k) {
            c.env(k, v);
        }
    }
    c
}

fn run_git(dir: &Path, args: &[&str]) -> Result<String> {
    let mut c = git(dir);
    c.args(args);
    let out = run_capture(c, GIT_TIMEOUT).map_err(|e| e.into_error("git"))?;
    if !out.status.success() {
        return Err(Error::failed(format!(
            "git {} failed in {}: {}",
            args.join(" "),
            dir.display(),
            out.diagnostic()
        ))
        .with_hint("check that git is installed and the repository is reachable"));
    }
    Ok(out.stdout.trim().to_string())
}

pub fn head_of(dir: &Path) -> Result<String> {
    run_git(dir, &["rev-parse", "--verify", "HEAD^{commit}"])
}

fn is_dirty(dir: &Path) -> Result<bool> {
    Ok(!run_git(dir, &["status", "--porcelain", "--untracked-files=normal"])?.is_empty())
}

/// An existing checkout (`--tsbs-dir`): its HEAD, and whether it is dirty (refused unless
/// `allow_dirty`).
pub fn from_dir(path: &Path, allow_dirty: bool) -> Result<TsbsSource> {
    let dir = std::fs::canonicalize(path).map_err(|e| {
        Error::invalid(format!("--tsbs-dir {}: {e}", path.display()))
            .with_hint("give the path of a TSBS git checkout")
    })?;
    let not_repo = |e: Error| {
        Error::invalid(format!(
            "--tsbs-dir {} is not a git checkout with a commit: {}",
            dir.display(),
            e.message
        ))
        .with_hint(format!(
            "give the path of a TSBS git checkout (git clone {})",
            crate::sources::SourceKey::TSBS_REPO.default_value()
        ))
    };
    let top = run_git(&dir, &["rev-parse", "--show-toplevel"]).map_err(not_repo)?;
    let commit = head_of(&dir).map_err(not_repo)?;
    if Path::new(&top) != dir {
        return Err(Error::invalid(format!(
            "--tsbs-dir {} is inside the checkout {top}, not its top directory",
            dir.display()
        ))
        .with_hint(format!("pass --tsbs-dir {top}")));
    }
    let dirty = is_dirty(&dir)?;
    if dirty && !allow_dirty {
        return Err(Error::invalid(format!(
            "--tsbs-dir {} has uncommitted changes (HEAD {commit})",
            dir.display()
        ))
        .with_hint("commit or stash them (git status shows them), or pass --allow-dirty: the environment and every run that uses it are then marked dirty"));
    }
    let repo = run_git(&dir, &["remote", "get-url", "origin"])
        .ok()
        .filter(|r| !r.is_empty())
        .map(|r| redact_url(&r))
        .unwrap_or_else(|| dir.display().to_string());
    Ok(TsbsSource {
        repo,
        commit,
        dirty,
        kind: "dir".into(),
        dir,
    })
}

/// Drops `user:password@` from a URL, so that recorded repository URLs never hold credentials.
pub fn redact_url(url: &str) -> String {
    if let Some((scheme, rest)) = url.split_once("://") {
        let (authority, path) = rest.split_once('/').unwrap_or((rest, ""));
        if let Some((_, host)) = authority.rsplit_once('@') {
            return format!("{scheme}://{host}/{path}");
        }
    }
    url.to_string()
}

/// Fetches exactly `commit` from `repo` into `environment/tsbs/<commit>/src` (staged beside it,
/// then renamed), unless a checkout of that commit is already there. Caller holds the lock.
fn fetch(
    root: &Root,
    repo: &str,
    commit: &str,
    reporter: &dyn Reporter,
) -> Result<(TsbsSource, bool)> {
    let base = root.tsbs_dir(commit);
    let src = base.join("src");
    let source = TsbsSource {
        repo: redact_url(repo),
        commit: commit.to_string(),
        dirty: false,
        kind: "fetched".into(),
        dir: src.clone(),
    };
    let _ = crate::fsutil::clean_staging(&src, "fetch");
    if src.exists() {
        match head_of(&src) {
            Ok(h) if h == commit && !is_dirty(&src)? => return Ok((source, false)),
            Ok(h) => reporter.warning(&Warning::TsbsCheckoutStale {
                path: src.clone(),
                head: h,
                commit: commit.to_string(),
            }),
            Err(_) => reporter.warning(&Warning::TsbsCheckoutUnusable {
                path: src.clone(),
                commit: commit.to_string(),
            }),
        }
        let aside = crate::fsutil::staging_path(&src, "fetch")?;
        crate::fsutil::rename_durable(&src, &aside)?;
        let _ = std::fs::remove_dir_all(&aside);
    }
    fs_err::create_dir_all(&base)?;
    let stage = crate::fsutil::staging_path(&src, "fetch")?;
    fs_err::create_dir_all(&stage)?;
    let cleanup = StageGuard(stage.clone());
    reporter.event(&Event::FetchingTsbs {
        commit: commit.to_string(),
        repo: redact_url(repo),
    });
    run_git(&stage, &["init", "-q"])?;
    run_git(&stage, &["remote", "add", "origin", repo])?;
    let mut c = git(&stage);
    c.args(["fetch", "--depth", "1", "--no-tags", "-q", "origin", commit]);
    let out = run_capture(c, GIT_TIMEOUT).map_err(|e| e.into_error("git fetch"))?;
    if !out.status.success() {
        let diag = out.diagnostic();
        let missing = [
            "not our ref",
            "couldn't find remote ref",
            "no such remote ref",
            "unadvertised object",
        ]
        .iter()
        .any(|m| diag.contains(m));
        let err = if missing {
            Error::invalid(format!(
                "commit {commit} does not exist in {}",
                redact_url(repo)
            ))
            .with_hint("check --tsbs-rev (or TSBSCTL_TSBS_REV / [defaults] tsbs_rev) and --tsbs-repo: the commit must be in that repository")
        } else {
            Error::failed(format!(
                "could not fetch {commit} from {}: {diag}",
                redact_url(repo)
            ))
            .with_hint("check the network and --tsbs-repo / TSBSCTL_TSBS_REPO, or use an existing checkout with --tsbs-dir")
        };
        return Err(err);
    }
    run_git(
        &stage,
        &[
            "-c",
            "advice.detachedHead=false",
            "checkout",
            "-q",
            "--detach",
            "FETCH_HEAD",
        ],
    )?;
    let head = head_of(&stage)?;
    if head != commit {
        return Err(Error::integrity(format!(
            "fetching {commit} from {} checked out {head}",
            redact_url(repo)
        ))
        .with_hint("the repository answered with another commit; check --tsbs-repo"));
    }
    crate::interrupt::check()?;
    crate::fsutil::rename_durable(&stage, &src)?;
    std::mem::forget(cleanup);
    Ok((source, true))
}

/// Removes a staging directory unless forgotten.
struct StageGuard(PathBuf);

impl Drop for StageGuard {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// The Go toolchain a binary was built with (a short form of [`GoToolchain`]).
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Eq)]
pub struct BuiltWith {
    pub source: String,
    pub version: String,
    pub binary: PathBuf,
    pub binary_sha256: String,
}

/// One built tool in the build manifest.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Eq)]
pub struct BinaryRecord {
    /// Relative to the build directory: `bin/<name>`.
    pub path: String,
    pub sha256: String,
    pub size: u64,
    pub built_at: String,
    pub go: BuiltWith,
    /// The exact command line run (argv).
    pub command: Vec<String>,
    pub cwd: PathBuf,
    /// The child's environment. Network variables passed through from the user's environment
    /// are listed by name only, with the value `<inherited>`; the Go network settings
    /// (`GOPROXY` ...) with their value, credentials in URLs redacted.
    pub env: BTreeMap<String, String>,
    /// Where each Go network setting came from: `environment` or the user's go env file.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub go_settings_from: BTreeMap<String, String>,
}

/// `environment/tsbs/<key>/manifest.json`.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct BuildManifest {
    pub source: TsbsSource,
    pub binaries: BTreeMap<String, BinaryRecord>,
    pub updated_at: String,
}

impl Manifest for BuildManifest {
    const KIND: &'static str = "tsbs-build";
}

/// A binary as reported by a command.
#[derive(Debug, Clone, Serialize)]
pub struct BinaryStatus {
    pub name: String,
    pub path: PathBuf,
    pub sha256: String,
    pub go_version: String,
    pub built_at: String,
    /// `built` (this call), `reused`.
    pub status: String,
}

/// The result of preparing the TSBS side.
#[derive(Debug, Clone)]
pub struct Prepared {
    pub source: TsbsSource,
    pub fetched: bool,
    pub dir: PathBuf,
    pub build_log: PathBuf,
    pub binaries: Vec<BinaryStatus>,
}

/// What `path` holds from byte `from` on (lossy; empty when unreadable).
fn read_from(path: &Path, from: u64) -> String {
    use std::io::{Read, Seek, SeekFrom};
    let mut text = Vec::new();
    if let Ok(mut f) = std::fs::File::open(path) {
        if f.seek(SeekFrom::Start(from)).is_ok() {
            let _ = f.take(1 << 20).read_to_end(&mut text);
        }
    }
    String::from_utf8_lossy(&text).into_owned()
}

/// The cause of a failed build in a few words, from its output, for the error itself (the
/// log holds the rest): a full disk by name, else the last lines Go printed (trial 2 N17: only
/// the log said "no space left on device"). And a hint when the cause has a known remedy.
fn build_failure(output: &str, src: &Path) -> (String, Option<String>) {
    if output.to_lowercase().contains("no space left on device") {
        return (
            ": no space left on device".into(),
            Some(format!(
                "free space on the disk holding {} (and Go's build cache), then run `tsbsctl env prepare` again",
                src.display()
            )),
        );
    }
    let lines: Vec<&str> = output
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty() && !l.starts_with('#'))
        .collect();
    let tail: Vec<String> = lines[lines.len().saturating_sub(3)..]
        .iter()
        .map(|l| l.chars().take(300).collect())
        .collect();
    if tail.is_empty() {
        (String::new(), None)
    } else {
        (format!(": {}", tail.join(" | ")), None)
    }
}

/// How to get the source.
#[derive(Debug, Clone)]
pub enum SourceRequest {
    /// Fetch `commit` from `repo` with git.
    Fetch { repo: String, commit: String },
    /// An existing checkout, already checked by [`from_dir`].
    Given(TsbsSource),
}

impl SourceRequest {
    /// The directory name under `environment/tsbs/`.
    pub fn key(&self) -> String {
        match self {
            SourceRequest::Fetch { commit, .. } => commit.clone(),
            SourceRequest::Given(s) => s.key(),
        }
    }
}

/// Everything the TSBS step needs.
pub struct BuildCtx<'a> {
    pub root: &'a Root,
    pub reporter: &'a dyn Reporter,
    pub command_line: String,
    /// The tools to build (the caller takes them from the product registry).
    pub tools: &'a [&'static str],
}

/// Under a per-commit lock: gets the source (so a wrong commit fails before anything else
/// happens), then the Go toolchain from `go`, then builds what is missing, drifted, or
/// everything with `rebuild` (and always for a dirty checkout).
pub fn prepare(
    cx: &BuildCtx<'_>,
    req: &SourceRequest,
    go: impl FnOnce() -> Result<GoToolchain>,
    rebuild: bool,
) -> Result<(GoToolchain, Prepared)> {
    cx.root.ensure()?;
    let key = req.key();
    let dir = cx.root.tsbs_dir(&key);
    let lock_path = dir.with_file_name(format!("{key}.lock"));
    let _guard = lock::lock_file(
        &lock_path,
        &format!("TSBS build {key}"),
        &cx.command_line,
        &LockOptions {
            wait: Some(LOCK_WAIT),
            hold_token: None,
        },
        cx.reporter,
    )?;
    let (source, fetched) = match req {
        SourceRequest::Given(s) => (s.clone(), false),
        SourceRequest::Fetch { repo, commit } => {
            match fetch(cx.root, repo, commit, cx.reporter) {
                Ok(r) => r,
                Err(e) => {
                    // Leave nothing behind for a commit that could not be fetched.
                    let _ = std::fs::remove_dir(&dir);
                    return Err(e);
                }
            }
        }
    };
    let go = go()?;
    if let Some(w) = std::fs::read_to_string(source.dir.join("go.mod"))
        .ok()
        .and_then(|t| seeding_warning(&t))
    {
        cx.reporter.warning(&w);
    }
    fs_err::create_dir_all(dir.join("bin"))?;
    let manifest_path = dir.join("manifest.json");
    let previous: Option<BuildManifest> = match manifest::read_optional(&manifest_path) {
        Ok(m) => m,
        Err(e) if e.kind == ErrorKind::Interrupted => return Err(e),
        Err(e) => {
            cx.reporter
                .warning(&Warning::BuildRecordUnreadable { error: e.message });
            None
        }
    };
    let mut records = previous.map(|m| m.binaries).unwrap_or_default();
    clean_dead_outputs(&dir.join("bin"));
    let build_log = dir.join("build.log");
    let mut statuses = Vec::new();
    for &tool in cx.tools {
        crate::interrupt::check()?;
        let bin = dir.join("bin").join(tool);
        let reason = if rebuild {
            Some(BuildReason::Asked)
        } else if source.dirty {
            Some(BuildReason::DirtyCheckout)
        } else {
            match records.get(tool) {
                None => Some(BuildReason::NotBuilt),
                Some(_) if !bin.exists() => Some(BuildReason::Missing),
                Some(r) => {
                    let sha = crate::hash::sha256_file(&bin, &NoProgress)?.0;
                    if sha != r.sha256 {
                        cx.reporter.warning(&Warning::BinaryDrifted {
                            path: bin.clone(),
                            recorded: r.sha256.clone(),
                            found: sha,
                        });
                        Some(BuildReason::Drifted)
                    } else {
                        None
                    }
                }
            }
        };
        let status = if let Some(reason) = reason {
            cx.reporter.event(&Event::Building {
                tool: tool.to_string(),
                reason,
                go_version: go.version.to_string(),
            });
            let rec = build_one(cx.root, &source.dir, &dir, tool, &go, &build_log)?;
            records.insert(tool.to_string(), rec);
            // Record each binary as soon as it exists, so an interrupted build keeps its work.
            write_manifest(&manifest_path, &source, &records)?;
            "built"
        } else {
            "reused"
        };
        statuses.push(status_of(&dir, tool, &records[tool], status));
    }
    write_manifest(&manifest_path, &source, &records)?;
    Ok((
        go,
        Prepared {
            source,
            fetched,
            dir,
            build_log,
            binaries: statuses,
        },
    ))
}

/// Removes `bin/.<tool>.tmp-<pid>` outputs left by a build whose process is gone (killed).
fn clean_dead_outputs(bin: &Path) {
    let Ok(entries) = std::fs::read_dir(bin) else {
        return;
    };
    for e in entries.flatten() {
        let name = e.file_name().to_string_lossy().into_owned();
        let Some((_, pid)) = name.strip_prefix('.').and_then(|n| n.rsplit_once(".tmp-")) else {
            continue;
        };
        if pid
            .parse::<i32>()
            .is_ok_and(|p| !crate::fsutil::process_alive(p))
        {
            let _ = std::fs::remove_file(e.path());
        }
    }
}

/// The `go` directive of a go.mod (`go 1.14` → (1, 14)).
pub fn go_directive(go_mod: &str) -> Option<(u32, u32)> {
    let v = go_mod
        .lines()
        .map(str::trim)
        .find_map(|l| l.strip_prefix("go ").map(str::trim))?;
    let mut parts = v.split('.');
    Some((parts.next()?.parse().ok()?, parts.next()?.parse().ok()?))
}

/// From Go 1.24 on, `math/rand.Seed` is a no-op in a module whose go.mod says `go 1.24` or later
/// (GODEBUG `randseednop`), and the TSBS generators seed with it: their "seeded" datasets and
/// query sets would differ run to run (real finding C9; inferred from Go's GODEBUG rules). The
/// pinned TSBS says `go 1.14`.
fn seeding_warning(go_mod: &str) -> Option<Warning> {
    let (major, minor) = go_directive(go_mod)?;
    ((major, minor) >= (1, 24)).then_some(Warning::SeedIgnored { major, minor })
}

/// A recorded binary as reported.
pub fn status_of(dir: &Path, tool: &str, r: &BinaryRecord, status: &str) -> BinaryStatus {
    BinaryStatus {
        name: tool.to_string(),
        path: dir.join(&r.path),
        sha256: r.sha256.clone(),
        go_version: r.go.version.clone(),
        built_at: r.built_at.clone(),
        status: status.to_string(),
    }
}

fn write_manifest(
    path: &Path,
    source: &TsbsSource,
    records: &BTreeMap<String, BinaryRecord>,
) -> Result<()> {
    manifest::write(
        path,
        &BuildManifest {
            source: source.clone(),
            binaries: records.clone(),
            updated_at: manifest::now_rfc3339(),
        },
    )
}

/// The child's environment, what to record of it, and where each Go setting came from.
pub type BuildEnv = (
    Vec<(String, String)>,
    BTreeMap<String, String>,
    BTreeMap<String, String>,
);

/// The build environment: nothing from the user's shell but network settings; caches, HOME
/// and GOPATH under `environment/`; no toolchain switching; no cgo. The user's Go network
/// settings (environment or go env file, see [`super::goenv`]) are passed explicitly, since
/// `GOENV=off` would drop the file. Returns the environment, what to record of it, and where
/// each Go setting came from.
pub fn build_env(root: &Root, go: &GoToolchain) -> BuildEnv {
    build_env_with(root, go, &super::goenv::user_settings())
}

fn build_env_with(root: &Root, go: &GoToolchain, settings: &[super::goenv::GoSetting]) -> BuildEnv {
    let env_dir = root.path().join("environment").join("cache");
    let go_bin = go
        .binary
        .parent()
        .unwrap_or(Path::new("/"))
        .display()
        .to_string();
    let mut fixed: Vec<(String, String)> = vec![
        (
            "PATH".into(),
            format!("{go_bin}:/usr/local/bin:/usr/bin:/bin"),
        ),
        ("HOME".into(), env_dir.join("home").display().to_string()),
        (
            "GOCACHE".into(),
            env_dir.join("go-build").display().to_string(),
        ),
        (
            "GOMODCACHE".into(),
            env_dir.join("gomod").display().to_string(),
        ),
        (
            "GOPATH".into(),
            env_dir.join("gopath").display().to_string(),
        ),
        ("GOTOOLCHAIN".into(), "local".into()),
        ("GOENV".into(), "off".into()),
        ("GOFLAGS".into(), String::new()),
        ("GO111MODULE".into(), "on".into()),
        ("CGO_ENABLED".into(), "0".into()),
        ("LC_ALL".into(), "C".into()),
    ];
    if let Some(goroot) = &go.goroot {
        fixed.push(("GOROOT".into(), goroot.display().to_string()));
    }
    let mut recorded: BTreeMap<String, String> = fixed.iter().cloned().collect();
    for k in NETWORK_PASSTHROUGH {
        if super::goenv::GO_NETWORK_SETTINGS.contains(k) {
            continue;
        }
        if let Some(v) = std::env::var(k).ok().filter(|v| !v.is_empty()) {
            fixed.push((k.to_string(), v));
            recorded.insert(k.to_string(), "<inherited>".into());
        }
    }
    let mut from = BTreeMap::new();
    for g in settings {
        fixed.push((g.key.clone(), g.value.clone()));
        recorded.insert(g.key.clone(), g.redacted());
        from.insert(g.key.clone(), g.from.clone());
    }
    (fixed, recorded, from)
}

/// Builds one tool: `go build -o <dir>/bin/.<tool>.tmp-<pid> ./cmd/<tool>` in the source
/// directory, output appended to `build.log`, then renamed into place.
fn build_one(
    root: &Root,
    src: &Path,
    dir: &Path,
    tool: &str,
    go: &GoToolchain,
    log_path: &Path,
) -> Result<BinaryRecord> {
    let (env, recorded, go_settings_from) = build_env(root, go);
    for k in ["HOME", "GOCACHE", "GOMODCACHE", "GOPATH"] {
        if let Some((_, v)) = env.iter().find(|(n, _)| n == k) {
            fs_err::create_dir_all(v)?;
        }
    }
    let final_path = dir.join("bin").join(tool);
    let tmp = dir
        .join("bin")
        .join(format!(".{tool}.tmp-{}", std::process::id()));
    let _ = std::fs::remove_file(&tmp);
    let argv: Vec<String> = vec![
        go.binary.display().to_string(),
        "build".into(),
        "-o".into(),
        tmp.display().to_string(),
        format!("./cmd/{tool}"),
    ];
    let mut log = fs_err::OpenOptions::new()
        .create(true)
        .append(true)
        .open(log_path)?;
    let started = manifest::now_rfc3339();
    let header = format!(
        "# {started} building {tool} with Go {} ({}, {})\n# cwd: {}\n# env: {}\n# $ {}\n",
        go.version,
        go.source.as_str(),
        go.binary.display(),
        src.display(),
        recorded
            .iter()
            .map(|(k, v)| format!("{k}={v}"))
            .collect::<Vec<_>>()
            .join(" "),
        argv.join(" ")
    );
    log.write_all(header.as_bytes())?;
    let output_from = log.metadata().map(|m| m.len()).unwrap_or(0);
    let out = log.try_clone()?.into_file();
    let err = log.try_clone()?.into_file();
    let mut cmd = Command::new(&argv[0]);
    cmd.args(&argv[1..])
        .current_dir(src)
        .env_clear()
        .envs(env.iter().map(|(k, v)| (k.as_str(), v.as_str())))
        .stdin(Stdio::null())
        .stdout(Stdio::from(out))
        .stderr(Stdio::from(err));
    crate::proc::configure(&mut cmd);
    let mut child = cmd
        .spawn()
        .map_err(|e| Error::failed(format!("could not run {}: {e}", argv[0])))?;
    let status = wait_bounded(&mut child, None).map_err(|e| {
        let _ = std::fs::remove_file(&tmp);
        e.into_error(&format!("go build of {tool}"))
    })?;
    let _ = writeln!(log, "# exit status: {}\n", status.code().unwrap_or(-1));
    if !status.success() || !tmp.is_file() {
        let _ = std::fs::remove_file(&tmp);
        let output = read_from(log_path, output_from);
        let (cause, hint) = build_failure(&output, src);
        return Err(Error::failed(format!(
            "building {tool} failed (exit status {}){cause}; the build output is in {}",
            status
                .code()
                .map(|c| c.to_string())
                .unwrap_or_else(|| "signal".into()),
            log_path.display()
        ))
        .with_hint(hint.unwrap_or_else(|| {
            format!(
                "read {} and fix the cause, then run `tsbsctl env prepare` again",
                log_path.display()
            )
        })));
    }
    let (sha256, size) = crate::hash::sha256_file(&tmp, &NoProgress)?;
    crate::fsutil::rename_durable(&tmp, &final_path)?;
    Ok(BinaryRecord {
        path: format!("bin/{tool}"),
        sha256,
        size,
        built_at: manifest::now_rfc3339(),
        go: BuiltWith {
            source: go.source.as_str().to_string(),
            version: go.version.clone(),
            binary: go.binary.clone(),
            binary_sha256: go.binary_sha256.clone(),
        },
        command: argv,
        cwd: src.to_path_buf(),
        env: recorded,
        go_settings_from,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Trial 2 N17: a full disk was said only in build.log.
    #[test]
    fn a_build_failure_names_its_cause() {
        let src = Path::new("/src/tsbs");
        let (cause, hint) = build_failure(
            "# github.com/x\n/usr/lib/go/pkg/tool/link: write $WORK/b001/exe/a.out: no space left on device\n",
            src,
        );
        assert_eq!(cause, ": no space left on device");
        assert!(hint
            .unwrap()
            .contains("free space on the disk holding /src/tsbs"));
        let (cause, hint) =
            build_failure("# pkg\na.go:1: x\nb.go:2: y\nc.go:3: z\nd.go:4: w\n", src);
        assert_eq!(cause, ": b.go:2: y | c.go:3: z | d.go:4: w");
        assert!(hint.is_none());
        assert_eq!(build_failure("", src), (String::new(), None));
    }

    #[test]
    fn commit_grammar() {
        assert_eq!(
            validate_commit("--tsbs-rev", PINNED_COMMIT).unwrap(),
            PINNED_COMMIT
        );
        assert_eq!(
            validate_commit("--tsbs-rev", &PINNED_COMMIT.to_uppercase()).unwrap(),
            PINNED_COMMIT
        );
        for bad in ["81d12c8", "main", "", &"g".repeat(40), &"a".repeat(41)] {
            assert_eq!(
                validate_commit("--tsbs-rev", bad).unwrap_err().exit_code(),
                2
            );
        }
    }

    #[test]
    fn a_go_mod_that_breaks_seeding_is_named() {
        let pinned = "module github.com/timescale/tsbs\n\ngo 1.14\n\nrequire (\n)\n";
        assert_eq!(go_directive(pinned), Some((1, 14)));
        assert_eq!(seeding_warning(pinned), None);
        assert_eq!(go_directive("module x\ngo 1.24.1\n"), Some((1, 24)));
        assert!(seeding_warning("module x\ngo 1.24\n")
            .unwrap()
            .to_string()
            .contains("randseednop"));
        assert_eq!(seeding_warning("module x\n"), None);
    }

    #[test]
    fn urls_lose_credentials() {
        assert_eq!(
            redact_url("https://user:tok@github.com/GreptimeTeam/tsbs.git"),
            "https://github.com/GreptimeTeam/tsbs.git"
        );
        assert_eq!(redact_url("file:///tmp/tsbs"), "file:///tmp/tsbs");
        assert_eq!(
            redact_url("git@github.com:x/y.git"),
            "git@github.com:x/y.git"
        );
    }

    #[test]
    fn dirty_sources_get_their_own_directory() {
        let mut s = TsbsSource {
            repo: "r".into(),
            commit: PINNED_COMMIT.into(),
            dirty: false,
            kind: "dir".into(),
            dir: PathBuf::from("/x"),
        };
        assert_eq!(s.key(), PINNED_COMMIT);
        s.dirty = true;
        assert_eq!(s.key(), format!("{PINNED_COMMIT}-dirty"));
    }

    #[test]
    fn build_env_is_closed_and_records_no_inherited_values() {
        let root = Root::at("/state");
        let go = GoToolchain {
            source: super::super::go::GoSource::Managed,
            version: "1.21.13".into(),
            platform: "linux-amd64".into(),
            binary: PathBuf::from("/state/environment/go/1.21.13/linux-amd64/bin/go"),
            binary_sha256: "0".repeat(64),
            version_output: "go version go1.21.13 linux/amd64".into(),
            goroot: Some(PathBuf::from("/state/environment/go/1.21.13/linux-amd64")),
            checksum_source: Some("pinned".into()),
        };
        let (env, recorded, _) = build_env_with(&root, &go, &[]);
        let get = |k: &str| env.iter().find(|(n, _)| n == k).map(|(_, v)| v.as_str());
        assert_eq!(get("GOTOOLCHAIN"), Some("local"));
        assert_eq!(get("CGO_ENABLED"), Some("0"));
        assert_eq!(get("GOPATH"), Some("/state/environment/cache/gopath"));
        assert!(get("PATH")
            .unwrap()
            .starts_with("/state/environment/go/1.21.13/linux-amd64/bin:"));
        assert_eq!(
            get("GOROOT"),
            Some("/state/environment/go/1.21.13/linux-amd64")
        );
        for v in recorded.values() {
            assert!(!v.contains('@'), "{v}");
        }
        // The user's Go settings reach the build; only their redacted form is recorded.
        let settings = [super::super::goenv::GoSetting {
            key: "GOPROXY".into(),
            value: "https://me:s3cret@proxy.corp/go,direct".into(),
            from: "/home/me/.config/go/env".into(),
        }];
        let (env, recorded, from) = build_env_with(&root, &go, &settings);
        let get = |k: &str| env.iter().find(|(n, _)| n == k).map(|(_, v)| v.as_str());
        assert_eq!(
            get("GOPROXY"),
            Some("https://me:s3cret@proxy.corp/go,direct")
        );
        assert_eq!(get("GOENV"), Some("off"));
        assert_eq!(
            recorded["GOPROXY"],
            "https://<redacted>@proxy.corp/go,direct"
        );
        assert!(recorded.values().all(|v| !v.contains("s3cret")));
        assert_eq!(from["GOPROXY"], "/home/me/.config/go/env");
    }
}
