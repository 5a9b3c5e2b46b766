//! Exclusive locks on workspaces, installs and datasets, and manual holds.
//!
//! A lock is an exclusive flock ([`crate::filelock`]) on a lock file (for a directory: `<dir>/.lock`). The file
//! records holder pid, host, command line, start time and reason, so a busy error names who
//! holds it. Non-blocking by default (exit 3); `--wait SECONDS` waits with a message. A manual
//! hold (`tsbsctl workspace lock`) is a persistent record in `<dir>/.hold.json`: every lock on
//! that directory is refused (exit 3, naming who, since when, why) unless the caller presents
//! the hold token. Callers re-check the state they are about to change after taking a lock.
//!
//! The holder deletes the lock file when it releases the lock, and the directories it created
//! for it when they are left empty, so a command leaves no lock file behind, whatever its exit
//! (trial 2 N14: an exit-2 command changes nothing on disk). Deleting a flock'ed file would let
//! two processes lock two different inodes, so whoever takes a lock then checks that the path
//! still names the file it locked, and starts again when it does not. A lock file that still
//! names a holder while nobody holds the lock was left by a killed process ("stale"; harmless
//! with flock).

use std::fs::{File, OpenOptions};
use std::io::{Read, Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

use crate::error::{Error, Result};
use crate::output::{Event, Reporter, Warning};

/// How to take a lock.
#[derive(Debug, Clone, Default)]
pub struct LockOptions {
    /// Wait this long for a busy lock; `None` fails at once.
    pub wait: Option<Duration>,
    /// The token of a manual hold the caller works inside.
    pub hold_token: Option<HoldToken>,
}

/// The variable the hints suggest for a hold token (any name works with --hold-token-env).
pub const HOLD_TOKEN_VAR: &str = "TSBSCTL_HOLD_TOKEN";

/// How hints tell people to pass a token: never on the command line, where `ps` shows it.
const PASS_TOKEN: &str = "out of sight of `ps`: `export TSBSCTL_HOLD_TOKEN=<token>`, then --hold-token-env TSBSCTL_HOLD_TOKEN (or --hold-token-stdin)";

/// Where a hold token comes from: `--hold-token TOKEN` (visible in `ps`), `--hold-token-env
/// VAR` or `--hold-token-stdin` (issue 16 #4: neither puts it in any argv). Read when the
/// lock is taken; a missing or empty value is invalid input (exit 2).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum HoldToken {
    Given(String),
    Env(String),
    Stdin,
}

impl From<&str> for HoldToken {
    fn from(t: &str) -> Self {
        HoldToken::Given(t.to_string())
    }
}

impl HoldToken {
    /// From `--hold-token`, `--hold-token-env` and `--hold-token-stdin` (clap keeps them
    /// exclusive).
    pub fn from_flags(given: Option<String>, env: Option<String>, stdin: bool) -> Option<Self> {
        match (given, env, stdin) {
            (Some(t), _, _) => Some(HoldToken::Given(t)),
            (None, Some(var), _) => Some(HoldToken::Env(var)),
            (None, None, true) => Some(HoldToken::Stdin),
            (None, None, false) => None,
        }
    }

    /// The token's value.
    pub fn resolve(&self) -> Result<String> {
        let value = match self {
            HoldToken::Given(t) => t.clone(),
            HoldToken::Env(var) => match std::env::var(var) {
                Ok(v) => v,
                Err(std::env::VarError::NotPresent) => {
                    return Err(Error::invalid(format!(
                        "--hold-token-env: environment variable {var} is not set"
                    ))
                    .with_hint(format!(
                        "export {var}=<token printed by `tsbsctl workspace lock`>"
                    )))
                }
                Err(_) => {
                    return Err(Error::invalid(format!(
                        "--hold-token-env: environment variable {var} is not valid UTF-8"
                    ))
                    .with_hint("set it to the token printed by `tsbsctl workspace lock`"))
                }
            },
            HoldToken::Stdin => stdin_token()?,
        };
        let value = value.trim().to_string();
        if value.is_empty() {
            return Err(Error::invalid("the hold token given is empty")
                .with_hint("pass the token printed by `tsbsctl workspace lock`"));
        }
        Ok(value)
    }
}

/// The first line of stdin, read once per process (several locks may ask).
fn stdin_token() -> Result<String> {
    static READ: std::sync::OnceLock<std::result::Result<String, String>> =
        std::sync::OnceLock::new();
    READ.get_or_init(|| {
        let mut line = String::new();
        std::io::stdin()
            .read_line(&mut line)
            .map(|_| line)
            .map_err(|e| e.to_string())
    })
    .clone()
    .map_err(|e| {
        Error::invalid(format!("--hold-token-stdin: could not read stdin: {e}"))
            .with_hint("pipe the token in: printf '%s\\n' \"$TOKEN\" | tsbsctl ...")
    })
}

/// What a lock file records about its holder.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct LockInfo {
    pub pid: i32,
    pub host: String,
    pub command: String,
    pub started_at: String,
    #[serde(default)]
    pub reason: Option<String>,
}

impl LockInfo {
    pub fn describe(&self) -> String {
        format!(
            "pid {} on host {} since {} running `{}`{}",
            self.pid,
            self.host,
            self.started_at,
            self.command,
            self.reason
                .as_deref()
                .map(|r| format!(" ({r})"))
                .unwrap_or_default()
        )
    }
}

/// A held lock; released on drop.
#[derive(Debug)]
pub struct LockGuard {
    file: File,
    path: PathBuf,
    /// The directories taken for this lock that did not exist before, deepest last.
    created: Vec<PathBuf>,
}

impl LockGuard {
    /// The lock file.
    pub fn path(&self) -> &Path {
        &self.path
    }
}

impl Drop for LockGuard {
    fn drop(&mut self) {
        // Forget the holder and delete the file while still holding the lock (a waiter that
        // then gets the old inode sees the path changed and starts again), then release it.
        // On read-only media the delete fails and the emptied file stays: still free.
        let _ = self.file.set_len(0);
        let _ = std::fs::remove_file(&self.path);
        let _ = crate::filelock::unlock(&self.file);
        // Only empty directories go: another lock or any file in them keeps them.
        for dir in self.created.iter().rev() {
            if std::fs::remove_dir(dir).is_err() {
                break;
            }
        }
    }
}

/// Locks directory `dir` (creating it if missing) through `<dir>/.lock`, honouring a manual
/// hold in `dir`. `label` names the thing in messages ("workspace greptimedb/greptime-120-manual").
/// `command` is recorded as the holder's command line; `reason` is optional.
pub fn lock_dir(
    dir: &Path,
    label: &str,
    command: &str,
    reason: Option<&str>,
    opts: &LockOptions,
    reporter: &dyn Reporter,
) -> Result<LockGuard> {
    let token = opts
        .hold_token
        .as_ref()
        .map(HoldToken::resolve)
        .transpose()?;
    let created = create_dirs(dir)?;
    // Fail fast on a hold, and check again once the lock is ours: `workspace lock` writes the
    // hold while holding the lock, so the second check cannot miss one.
    let had_hold = check_hold(dir, label, token.as_deref())?;
    if !had_hold && token.is_some() {
        reporter.warning(&Warning::HoldTokenIgnored {
            label: label.to_string(),
        });
    }
    let mut guard = acquire(
        &lock_path_of(dir),
        label,
        command,
        reason,
        opts,
        token.as_deref(),
        reporter,
    )?;
    guard.created = created;
    check_hold(dir, label, token.as_deref())?;
    Ok(guard)
}

/// Locks an explicit lock file (install locks such as `<installations>/<version>.lock`),
/// creating its parent if missing. No hold check.
pub fn lock_file(
    lock_path: &Path,
    label: &str,
    command: &str,
    opts: &LockOptions,
    reporter: &dyn Reporter,
) -> Result<LockGuard> {
    let created = match lock_path.parent().filter(|p| !p.as_os_str().is_empty()) {
        Some(parent) => create_dirs(parent)?,
        None => Vec::new(),
    };
    let mut guard = acquire(lock_path, label, command, None, opts, None, reporter)?;
    guard.created = created;
    Ok(guard)
}

/// Creates `dir` and its missing ancestors; returns the ones it created, outermost first.
fn create_dirs(dir: &Path) -> Result<Vec<PathBuf>> {
    let missing: Vec<PathBuf> = dir
        .ancestors()
        .take_while(|d| !d.as_os_str().is_empty() && !d.exists())
        .map(Path::to_path_buf)
        .collect();
    fs_err::create_dir_all(dir)?;
    Ok(missing.into_iter().rev().collect())
}

/// The lock file of a directory.
pub fn lock_path_of(dir: &Path) -> PathBuf {
    dir.join(".lock")
}

/// The manual-hold record of a directory.
pub fn hold_path_of(dir: &Path) -> PathBuf {
    dir.join(".hold.json")
}

fn acquire(
    path: &Path,
    label: &str,
    command: &str,
    reason: Option<&str>,
    opts: &LockOptions,
    token: Option<&str>,
    reporter: &dyn Reporter,
) -> Result<LockGuard> {
    let deadline = opts.wait.map(|w| Instant::now() + w);
    let mut announced = false;
    let mut file = open_lock_file(path)?;
    let mut reopened = 0;
    loop {
        match crate::filelock::try_lock_exclusive(&file) {
            // The holder before us may have deleted the file as it released it: ours must be
            // the file the path names now, or two processes would hold "the" lock.
            Ok(true) if names_same_file(path, &file) => break,
            Ok(true) if reopened < 100 => {
                reopened += 1;
                file = open_lock_file(path)?;
                continue;
            }
            Ok(true) => {
                return Err(Error::failed(format!(
                    "could not lock {label} ({}): the lock file kept being replaced",
                    path.display()
                )))
            }
            Ok(false) => {}
            Err(e) => {
                return Err(Error::failed(format!(
                    "could not lock {} ({}): {e}",
                    label,
                    path.display()
                ))
                .with_hint("locks need a local filesystem that supports flock (not NFS)"))
            }
        }
        let now = Instant::now();
        let holder = holder_text(path);
        match deadline {
            Some(d) if now < d => {
                if !announced {
                    reporter.event(&Event::WaitingForLock {
                        label: label.to_string(),
                        holder: holder.clone(),
                        wait: opts.wait.unwrap_or_default(),
                    });
                    announced = true;
                }
                crate::interrupt::check()?;
                std::thread::sleep((d - now).min(Duration::from_millis(200)));
            }
            _ => {
                let waited = opts
                    .wait
                    .map(|w| format!(" (waited {}s)", w.as_secs()))
                    .unwrap_or_default();
                return Err(
                    Error::busy(format!("{label} is busy: held by {holder}{waited}")).with_hint(
                        "wait for that command to finish, or pass --wait SECONDS to wait for it",
                    ),
                );
            }
        }
    }
    // A hold token given on the command line is not recorded: the lock file is world-readable.
    let command = match token {
        Some(t) if !t.is_empty() => command.replace(t, "<hold-token>"),
        _ => command.to_string(),
    };
    let info = LockInfo {
        pid: std::process::id() as i32,
        host: hostname(),
        command,
        started_at: crate::manifest::now_rfc3339(),
        reason: reason.map(str::to_string),
    };
    let mut text = serde_json::to_string_pretty(&info)?;
    text.push('\n');
    let record = (|| -> std::io::Result<()> {
        file.set_len(0)?;
        file.seek(SeekFrom::Start(0))?;
        file.write_all(text.as_bytes())?;
        file.sync_all()
    })();
    let guard = LockGuard {
        file,
        path: path.to_path_buf(),
        created: Vec::new(),
    };
    record.map_err(|e| Error::io("record the holder in", path, e))?;
    Ok(guard)
}

/// Opens (creating) a lock file. A releasing holder may remove the directory it created for
/// its lock between our `create_dirs` and this open: create it again, a bounded number of times.
fn open_lock_file(path: &Path) -> Result<File> {
    let open = || {
        OpenOptions::new()
            .read(true)
            .write(true)
            .create(true)
            .truncate(false)
            .open(path)
    };
    let mut attempt = 0;
    loop {
        match open() {
            Err(e) if e.kind() == std::io::ErrorKind::NotFound && attempt < 5 => {
                attempt += 1;
                if let Some(parent) = path.parent() {
                    let _ = std::fs::create_dir_all(parent);
                }
            }
            r => return r.map_err(|e| Error::io("open lock file", path, e)),
        }
    }
}

/// True when `path` names the open file `file` (same device and inode).
fn names_same_file(path: &Path, file: &File) -> bool {
    use std::os::unix::fs::MetadataExt;
    match (std::fs::metadata(path), file.metadata()) {
        (Ok(a), Ok(b)) => a.dev() == b.dev() && a.ino() == b.ino(),
        _ => false,
    }
}

/// Who holds the lock, as recorded in the lock file. The holder writes its record right after
/// taking the lock, so an empty file is retried briefly before giving up on details.
fn holder_text(path: &Path) -> String {
    for attempt in 0..5 {
        if let Some(info) = read_lock_info(path) {
            return info.describe();
        }
        if attempt < 4 {
            std::thread::sleep(Duration::from_millis(20));
        }
    }
    "another process (it has not recorded its details)".to_string()
}

/// The holder recorded in a lock file, if any.
pub fn read_lock_info(path: &Path) -> Option<LockInfo> {
    let mut s = String::new();
    File::open(path).ok()?.read_to_string(&mut s).ok()?;
    serde_json::from_str(&s).ok()
}

/// The state of a lock file, found by trying the lock without waiting.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum LockState {
    /// No lock file, or nobody holds it and it records nobody.
    Free,
    /// Another process holds the lock (with what it recorded, when readable).
    Live(Option<LockInfo>),
    /// Nobody holds the lock, but the file still names a holder: it was killed before it could
    /// clean up. `pid_alive` tells whether that pid now exists (reused or still running).
    Stale { info: LockInfo, pid_alive: bool },
}

/// Probes a lock file without waiting. Taking the lock for an instant is the only portable way
/// to ask flock whether it is held; the file is left as it was.
pub fn probe(path: &Path) -> Result<LockState> {
    let file = match File::open(path) {
        Ok(f) => f,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(LockState::Free),
        Err(e) => return Err(Error::io("open lock file", path, e)),
    };
    match crate::filelock::try_lock_exclusive(&file) {
        Ok(true) => {
            let info = read_lock_info(path);
            let _ = crate::filelock::unlock(&file);
            Ok(match info {
                Some(info) => {
                    let pid_alive = crate::fsutil::process_alive(info.pid);
                    LockState::Stale { info, pid_alive }
                }
                None => LockState::Free,
            })
        }
        Ok(false) => Ok(LockState::Live(read_lock_info(path))),
        Err(e) => Err(Error::io("probe lock file", path, e)),
    }
}

/// A manual hold on a directory (`<dir>/.hold.json`). Only the SHA-256 of the token is stored.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Hold {
    pub token_sha256: String,
    /// The user who took the hold.
    pub holder: String,
    pub host: String,
    /// The pid of the `tsbsctl workspace lock` process that took it (gone by now).
    pub pid: i32,
    #[serde(default)]
    pub reason: Option<String>,
    pub since: String,
}

/// `s` with control characters escaped (`\n`, `\u{1b}`), for text read from a file that a
/// person may have written by hand.
pub fn printable(s: &str) -> String {
    s.chars()
        .map(|c| {
            if c.is_control() {
                c.escape_default().to_string()
            } else {
                c.to_string()
            }
        })
        .collect()
}

impl Hold {
    pub fn describe(&self) -> String {
        format!(
            "{} (pid {} on host {}) since {}{}",
            self.holder,
            self.pid,
            self.host,
            self.since,
            self.reason
                .as_deref()
                .map(|r| format!(": {}", printable(r)))
                .unwrap_or_else(|| " (no reason given)".to_string())
        )
    }

    /// True when `token` is this hold's token (digests compared in constant time).
    pub fn matches(&self, token: &str) -> bool {
        let given = token_digest(token);
        let a = given.as_bytes();
        let b = self.token_sha256.as_bytes();
        if a.len() != b.len() {
            return false;
        }
        a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
    }
}

/// Reads the manual hold of `dir`, if any. A damaged hold file is an integrity error (it is
/// never silently ignored: that would drop a person's hold).
pub fn read_hold(dir: &Path) -> Result<Option<Hold>> {
    let path = hold_path_of(dir);
    let bytes = match fs_err::read(&path) {
        Ok(b) => b,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(e.into()),
    };
    serde_json::from_slice(&bytes).map(Some).map_err(|e| {
        Error::integrity(format!("damaged hold file {}: {e}", path.display())).with_hint(
            "check with whoever works on this workspace, then release it with \
             `tsbsctl workspace unlock ID --force`",
        )
    })
}

/// Refuses unless `dir` has no hold or `token` is its token. True when a hold was found.
fn check_hold(dir: &Path, label: &str, token: Option<&str>) -> Result<bool> {
    let Some(hold) = read_hold(dir)? else {
        return Ok(false);
    };
    match token {
        Some(t) if hold.matches(t) => Ok(true),
        Some(_) => Err(Error::busy(format!(
            "{label} is held by {}; the --hold-token given does not match that hold",
            hold.describe()
        ))
        .with_hint(format!("pass the token printed by `tsbsctl workspace lock` for this workspace, {PASS_TOKEN}"))),
        None => Err(
            Error::busy(format!("{label} is held by {}", hold.describe())).with_hint(format!(
                "wait until it is released with `tsbsctl workspace unlock`, or, if you work inside that hold, pass its token {PASS_TOKEN}"
            )),
        ),
    }
}

/// Places a manual hold on `dir` and returns it with its token (shown once, never stored).
/// Takes the live lock while writing, so a running command cannot be overtaken; refuses when a
/// hold already exists.
pub fn place_hold(
    dir: &Path,
    label: &str,
    command: &str,
    reason: Option<&str>,
    wait: Option<Duration>,
    reporter: &dyn Reporter,
) -> Result<(Hold, String)> {
    // The reason is echoed by `workspace status` and every busy error: a newline or an escape
    // sequence would forge lines or colour a terminal (trial 2 N17).
    if let Some(r) = reason.filter(|r| r.chars().any(char::is_control)) {
        return Err(Error::invalid(format!(
            "--reason {} holds a control character (a newline, tab or escape)",
            printable(r)
        ))
        .with_hint("give the reason as one line of plain text"));
    }
    if let Some(h) = read_hold(dir)? {
        return Err(already_held(label, &h));
    }
    let opts = LockOptions {
        wait,
        hold_token: None,
    };
    let _guard = acquire(
        &lock_path_of(dir),
        label,
        command,
        reason,
        &opts,
        None,
        reporter,
    )?;
    if let Some(h) = read_hold(dir)? {
        return Err(already_held(label, &h));
    }
    let token = new_token()?;
    let hold = Hold {
        token_sha256: token_digest(&token),
        holder: user_name(),
        host: hostname(),
        pid: std::process::id() as i32,
        reason: reason.map(str::to_string),
        since: crate::manifest::now_rfc3339(),
    };
    let mut text = serde_json::to_string_pretty(&hold)?;
    text.push('\n');
    crate::fsutil::write_atomic(&hold_path_of(dir), text.as_bytes())?;
    Ok((hold, token))
}

fn already_held(label: &str, h: &Hold) -> Error {
    Error::busy(format!("{label} is already held by {}", h.describe())).with_hint(
        "only one manual hold at a time: work inside it with its token, or release it with \
         `tsbsctl workspace unlock` (--force if the token is lost)",
    )
}

/// Releases the manual hold of `dir`: with its token, or `force`. Returns the released hold;
/// `None` when `force` removed a damaged hold file that could not be read.
pub fn release_hold(
    dir: &Path,
    label: &str,
    token: Option<&str>,
    force: bool,
) -> Result<Option<Hold>> {
    let hold = match read_hold(dir) {
        Ok(Some(h)) => h,
        Ok(None) => {
            return Err(Error::invalid(format!("{label} has no manual hold"))
                .with_hint("see holds and locks with `tsbsctl workspace status`"))
        }
        Err(_) if force => {
            remove_hold_file(dir)?;
            return Ok(None);
        }
        Err(e) => return Err(e),
    };
    if !force {
        match token {
            Some(t) if hold.matches(t) => {}
            Some(_) => {
                return Err(Error::busy(format!(
                    "the token does not match the hold on {label} (held by {})",
                    hold.describe()
                ))
                .with_hint(
                    "pass the token printed by `tsbsctl workspace lock`, or --force if it is lost",
                ))
            }
            None => {
                return Err(Error::invalid(format!(
                    "releasing the hold on {label} needs its token or --force"
                ))
                .with_hint(format!(
                    "pass the token printed by `tsbsctl workspace lock` {PASS_TOKEN}"
                )))
            }
        }
    }
    remove_hold_file(dir)?;
    Ok(Some(hold))
}

fn remove_hold_file(dir: &Path) -> Result<()> {
    let path = hold_path_of(dir);
    match fs_err::remove_file(&path) {
        Ok(()) => crate::fsutil::sync_dir(dir),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(()),
        Err(e) => Err(e.into()),
    }
}

/// Lowercase hex SHA-256 of a token.
pub fn token_digest(token: &str) -> String {
    hex::encode(Sha256::digest(token.as_bytes()))
}

fn new_token() -> Result<String> {
    let mut buf = [0u8; 24];
    File::open("/dev/urandom")
        .and_then(|mut f| f.read_exact(&mut buf))
        .map_err(|e| Error::failed(format!("could not read random bytes for a token: {e}")))?;
    Ok(format!("hold-{}", hex::encode(buf)))
}

/// This machine's host name.
pub fn hostname() -> String {
    nix::unistd::gethostname()
        .ok()
        .and_then(|h| h.into_string().ok())
        .unwrap_or_else(|| "unknown-host".to_string())
}

fn user_name() -> String {
    nix::unistd::User::from_uid(nix::unistd::getuid())
        .ok()
        .flatten()
        .map(|u| u.name)
        .or_else(|| std::env::var("USER").ok())
        .unwrap_or_else(|| format!("uid {}", nix::unistd::getuid()))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Trial 2 N14: a released lock leaves neither its file nor the directories it created.
    #[test]
    fn release_deletes_the_file_and_the_empty_directories_it_made() {
        let d = tempfile::tempdir().unwrap();
        let p = d.path().join("a/b/.locks/x.lock");
        let g = lock_file(&p, "x", "cmd", &LockOptions::default(), &SilentReporter).unwrap();
        assert!(p.is_file());
        drop(g);
        assert!(!d.path().join("a").exists());
        // A directory that holds something else stays.
        std::fs::create_dir_all(d.path().join("a/b")).unwrap();
        std::fs::write(d.path().join("a/b/keep"), "").unwrap();
        let g = lock_file(&p, "x", "cmd", &LockOptions::default(), &SilentReporter).unwrap();
        drop(g);
        assert!(!d.path().join("a/b/.locks").exists());
        assert!(d.path().join("a/b/keep").is_file());
        let ws = d.path().join("ws");
        let g = lock_dir(
            &ws,
            "w",
            "cmd",
            None,
            &LockOptions::default(),
            &SilentReporter,
        )
        .unwrap();
        assert!(ws.join(".lock").is_file());
        drop(g);
        assert!(!ws.exists());
    }

    /// A waiter that locks the inode its holder deleted on release must not believe it holds
    /// the lock: it opens the path again.
    #[test]
    fn a_lock_on_a_deleted_file_is_taken_again_on_the_new_one() {
        let d = tempfile::tempdir().unwrap();
        let p = d.path().join("x.lock");
        let first = lock_file(&p, "x", "one", &LockOptions::default(), &SilentReporter).unwrap();
        // The waiter's open file: the inode the holder is about to delete.
        let stale = File::open(&p).unwrap();
        drop(first);
        assert!(crate::filelock::try_lock_exclusive(&stale).unwrap());
        assert!(!names_same_file(&p, &stale));
        // The path now names nothing; a real taker creates a new file and holds that one.
        let second = lock_file(&p, "x", "two", &LockOptions::default(), &SilentReporter).unwrap();
        assert!(names_same_file(&p, &second.file));
        let third = File::open(&p).unwrap();
        assert!(!crate::filelock::try_lock_exclusive(&third).unwrap());
        drop(second);
    }

    /// Trial 2 N17: a hold file written by hand never puts raw escapes on a terminal.
    #[test]
    fn a_hand_written_reason_is_shown_escaped() {
        let h = Hold {
            token_sha256: String::new(),
            holder: "me".into(),
            host: "h".into(),
            pid: 1,
            reason: Some("\u{1b}[31mRED\nx".into()),
            since: "t".into(),
        };
        let d = h.describe();
        assert!(!d.chars().any(char::is_control), "{d:?}");
        assert!(d.ends_with(": \\u{1b}[31mRED\\nx"), "{d}");
    }
    use crate::error::ErrorKind;
    use crate::output::{NoProgress, Progress, SilentReporter, Unit};
    use std::sync::Mutex;

    /// Keeps every line, and the typed events apart.
    #[derive(Default)]
    struct Recorder(Mutex<Vec<String>>, Mutex<Vec<Event>>);
    impl Reporter for Recorder {
        fn info(&self, msg: &str) {
            self.0.lock().unwrap().push(msg.to_string());
        }
        fn event(&self, e: &Event) {
            self.1.lock().unwrap().push(e.clone());
            self.info(&e.to_string());
        }
        fn warn(&self, msg: &str) {
            self.0.lock().unwrap().push(msg.to_string());
        }
        fn progress(&self, _: &str, _: Option<u64>, _: Unit) -> Box<dyn Progress> {
            Box::new(NoProgress)
        }
    }

    fn lock(dir: &Path, opts: &LockOptions) -> Result<LockGuard> {
        lock_dir(
            dir,
            "workspace t/x",
            "tsbsctl test",
            Some("why"),
            opts,
            &SilentReporter,
        )
    }

    #[test]
    fn second_lock_is_busy_and_names_the_holder() {
        let d = tempfile::tempdir().unwrap();
        let ws = d.path().join("ws");
        let g = lock(&ws, &LockOptions::default()).unwrap();
        let info = read_lock_info(g.path()).unwrap();
        assert_eq!(info.pid, std::process::id() as i32);
        assert_eq!(info.command, "tsbsctl test");
        assert_eq!(info.reason.as_deref(), Some("why"));
        let e = lock(&ws, &LockOptions::default()).unwrap_err();
        assert_eq!(e.kind, ErrorKind::Busy);
        assert!(
            e.message.contains(&format!("pid {}", std::process::id())),
            "{}",
            e.message
        );
        assert!(e.message.contains("`tsbsctl test`"), "{}", e.message);
        assert!(e.hint.unwrap().contains("--wait"));
        assert!(matches!(probe(g.path()).unwrap(), LockState::Live(Some(_))));
        drop(g);
        // Released: emptied, free, and lockable again.
        assert_eq!(probe(&lock_path_of(&ws)).unwrap(), LockState::Free);
        lock(&ws, &LockOptions::default()).unwrap();
    }

    #[test]
    fn wait_announces_once_and_gives_up_when_the_time_is_out() {
        let d = tempfile::tempdir().unwrap();
        let _g = lock(d.path(), &LockOptions::default()).unwrap();
        let rec = Recorder::default();
        let opts = LockOptions {
            wait: Some(Duration::from_millis(300)),
            hold_token: None,
        };
        let e = lock_dir(d.path(), "workspace t/x", "c", None, &opts, &rec).unwrap_err();
        assert_eq!(e.kind, ErrorKind::Busy);
        let lines = rec.0.lock().unwrap().clone();
        assert_eq!(lines.len(), 1, "{lines:?}");
        assert!(lines[0].starts_with("waiting"), "{lines:?}");
        // The wait is announced as data, worded by the CLI (issue 23 §3).
        let events = rec.1.lock().unwrap().clone();
        assert!(
            matches!(
                events.as_slice(),
                [Event::WaitingForLock { label, wait, .. }]
                    if label == "workspace t/x" && *wait == Duration::from_millis(300)
            ),
            "{events:?}"
        );
        assert_eq!(
            lines[0],
            format!(
                "waiting up to 0s for workspace t/x: held by {}",
                holder_text(&lock_path_of(d.path()))
            )
        );
    }

    #[test]
    fn wait_succeeds_when_the_holder_lets_go() {
        use std::sync::atomic::{AtomicBool, Ordering};
        use std::sync::Arc;
        const HOLD: Duration = Duration::from_millis(300);
        let d = tempfile::tempdir().unwrap();
        let g = lock(d.path(), &LockOptions::default()).unwrap();
        let released = Arc::new(AtomicBool::new(false));
        let started = std::time::Instant::now();
        let releaser = std::thread::spawn({
            let released = Arc::clone(&released);
            move || {
                std::thread::sleep(HOLD);
                // Marked before the release: a waiter that sees `false` got in too early.
                released.store(true, Ordering::SeqCst);
                drop(g);
            }
        });
        let opts = LockOptions {
            wait: Some(Duration::from_secs(30)),
            hold_token: None,
        };
        let _g2 = lock(d.path(), &opts).unwrap();
        let waited = started.elapsed();
        assert!(
            released.load(Ordering::SeqCst),
            "acquired while the holder still held the lock"
        );
        assert!(
            waited >= HOLD,
            "acquired after {waited:?}, the holder let go at {HOLD:?}"
        );
        releaser.join().unwrap();
    }

    #[test]
    fn stale_lock_file_is_reported() {
        let d = tempfile::tempdir().unwrap();
        let path = lock_path_of(d.path());
        let info = LockInfo {
            pid: 999_999_999,
            host: "h".into(),
            command: "tsbsctl killed".into(),
            started_at: "2026-01-01T00:00:00.000000Z".into(),
            reason: None,
        };
        std::fs::write(&path, serde_json::to_string(&info).unwrap()).unwrap();
        assert_eq!(
            probe(&path).unwrap(),
            LockState::Stale {
                info,
                pid_alive: false
            }
        );
        // Harmless: the lock can be taken, and the new holder replaces the record.
        let g = lock(d.path(), &LockOptions::default()).unwrap();
        assert_eq!(read_lock_info(g.path()).unwrap().command, "tsbsctl test");
    }

    #[test]
    fn hold_refuses_without_token_and_admits_with_it() {
        let d = tempfile::tempdir().unwrap();
        let (hold, token) = place_hold(
            d.path(),
            "workspace t/x",
            "c",
            Some("tuning"),
            None,
            &SilentReporter,
        )
        .unwrap();
        let stored = std::fs::read_to_string(hold_path_of(d.path())).unwrap();
        assert!(
            !stored.contains(&token),
            "the token itself must not be stored"
        );
        assert!(stored.contains(&token_digest(&token)));
        assert_eq!(hold.reason.as_deref(), Some("tuning"));
        // The live lock was released after placing the hold.
        assert_eq!(probe(&lock_path_of(d.path())).unwrap(), LockState::Free);

        let e = lock(d.path(), &LockOptions::default()).unwrap_err();
        assert_eq!(e.kind, ErrorKind::Busy);
        assert!(e.message.contains("tuning") && e.message.contains(&hold.since));
        let wrong = LockOptions {
            wait: None,
            hold_token: Some("hold-wrong".into()),
        };
        let e = lock(d.path(), &wrong).unwrap_err();
        assert_eq!(e.kind, ErrorKind::Busy);
        assert!(e.message.contains("does not match"), "{}", e.message);
        let right = LockOptions {
            wait: None,
            hold_token: Some(HoldToken::Given(token.clone())),
        };
        let cmd = format!("tsbsctl greptimedb serve --hold-token {token}");
        let g = lock_dir(d.path(), "w", &cmd, None, &right, &SilentReporter).unwrap();
        let recorded = read_lock_info(g.path()).unwrap().command;
        assert_eq!(
            recorded,
            "tsbsctl greptimedb serve --hold-token <hold-token>"
        );
        drop(g);

        // A second hold is refused.
        let e =
            place_hold(d.path(), "workspace t/x", "c", None, None, &SilentReporter).unwrap_err();
        assert_eq!(e.kind, ErrorKind::Busy);

        // Release: wrong token refused, right token works, then nothing to release.
        let e = release_hold(d.path(), "workspace t/x", Some("nope"), false).unwrap_err();
        assert_eq!(e.kind, ErrorKind::Busy);
        assert!(e.message.contains("does not match"));
        assert_eq!(
            release_hold(d.path(), "workspace t/x", None, false)
                .unwrap_err()
                .kind,
            ErrorKind::Invalid
        );
        release_hold(d.path(), "workspace t/x", Some(&token), false).unwrap();
        assert!(read_hold(d.path()).unwrap().is_none());
        lock(d.path(), &LockOptions::default()).unwrap();
        assert_eq!(
            release_hold(d.path(), "workspace t/x", None, true)
                .unwrap_err()
                .kind,
            ErrorKind::Invalid
        );
    }

    #[test]
    fn hold_is_refused_while_the_live_lock_is_held_and_force_releases() {
        let d = tempfile::tempdir().unwrap();
        let g = lock(d.path(), &LockOptions::default()).unwrap();
        let e =
            place_hold(d.path(), "workspace t/x", "c", None, None, &SilentReporter).unwrap_err();
        assert_eq!(e.kind, ErrorKind::Busy);
        assert!(read_hold(d.path()).unwrap().is_none());
        drop(g);
        place_hold(d.path(), "workspace t/x", "c", None, None, &SilentReporter).unwrap();
        release_hold(d.path(), "workspace t/x", None, true).unwrap();
        assert!(read_hold(d.path()).unwrap().is_none());
    }

    #[test]
    fn damaged_hold_is_integrity_and_only_force_removes_it() {
        let d = tempfile::tempdir().unwrap();
        std::fs::write(hold_path_of(d.path()), "{oops").unwrap();
        assert_eq!(
            lock(d.path(), &LockOptions::default()).unwrap_err().kind,
            ErrorKind::Integrity
        );
        assert_eq!(
            release_hold(d.path(), "w", Some("t"), false)
                .unwrap_err()
                .kind,
            ErrorKind::Integrity
        );
        assert_eq!(release_hold(d.path(), "w", None, true).unwrap(), None);
        assert!(!hold_path_of(d.path()).exists());
        lock(d.path(), &LockOptions::default()).unwrap();
    }

    #[test]
    fn lock_file_creates_its_parent_and_excludes() {
        let d = tempfile::tempdir().unwrap();
        let p = d.path().join("installations").join("1.2.0.lock");
        let _g = lock_file(
            &p,
            "install 1.2.0",
            "c",
            &LockOptions::default(),
            &SilentReporter,
        )
        .unwrap();
        let e = lock_file(
            &p,
            "install 1.2.0",
            "c",
            &LockOptions::default(),
            &SilentReporter,
        )
        .unwrap_err();
        assert_eq!(e.kind, ErrorKind::Busy);
        assert!(e.message.starts_with("install 1.2.0 is busy"));
    }
}
