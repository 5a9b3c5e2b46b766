//! Small filesystem primitives that publish safely: write beside the target, fsync, rename,
//! fsync the directory. Nothing is ever visible under a final name half-written.

use std::fs::{self, File};
use std::io::Write;
use std::path::{Path, PathBuf};

use crate::error::{Error, Result};

/// Writes `bytes` to `path` atomically: a temp file in the same directory, fsync, rename over
/// the target, fsync the directory. Creates the parent directory if needed.
pub fn write_atomic(path: &Path, bytes: &[u8]) -> Result<()> {
    let parent = parent_of(path)?;
    fs_err::create_dir_all(parent)?;
    write_atomic_in_place(path, bytes)
}

/// [`write_atomic`] into a directory that must already exist: never creates one, so a path a
/// person typed wrong (or a directory removed meanwhile) is an error, not a new directory.
/// A missing directory is an invalid-input error naming it.
pub fn write_atomic_in_place(path: &Path, bytes: &[u8]) -> Result<()> {
    let parent = parent_of(path)?;
    if !parent.is_dir() {
        return Err(
            Error::invalid(format!("directory {} does not exist", parent.display()))
                .with_hint("check the path, or create the directory first"),
        );
    }
    let mut tmp = tempfile::Builder::new()
        .prefix(&format!(".{}.", file_name(path)))
        .suffix(".tmp")
        .tempfile_in(parent)
        .map_err(|e| Error::io("create a temporary file in", parent, e))?;
    tmp.write_all(bytes)
        .map_err(|e| Error::io("write", tmp.path(), e))?;
    tmp.as_file()
        .sync_all()
        .map_err(|e| Error::io("sync", tmp.path(), e))?;
    tmp.persist(path)
        .map_err(|e| Error::io("publish", path, e.error))?;
    sync_dir(parent)
}

/// Fsyncs a directory so that a rename inside it survives a crash.
pub fn sync_dir(dir: &Path) -> Result<()> {
    Ok(fs_err::File::open(dir)?.sync_all()?)
}

/// Renames `from` to `to` and fsyncs the parent of `to` (and of `from`, when different).
pub fn rename_durable(from: &Path, to: &Path) -> Result<()> {
    fs::rename(from, to).map_err(|e| {
        Error::failed(format!(
            "could not rename {} to {}: {e}",
            from.display(),
            to.display()
        ))
    })?;
    let to_parent = parent_of(to)?;
    sync_dir(to_parent)?;
    let from_parent = parent_of(from)?;
    if from_parent != to_parent {
        sync_dir(from_parent)?;
    }
    Ok(())
}

/// A sibling path for staging: `<parent>/.<name>.<tag>-<pid>-<nanos>`. Leftovers from a crash
/// are recognisable by the `.<name>.` prefix and can be cleaned by [`clean_staging`].
pub fn staging_path(target: &Path, tag: &str) -> Result<PathBuf> {
    let parent = parent_of(target)?;
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.subsec_nanos())
        .unwrap_or(0);
    Ok(parent.join(format!(
        ".{}.{tag}-{}-{nanos}",
        file_name(target),
        std::process::id()
    )))
}

/// Removes staging leftovers of `target` made by [`staging_path`] with `tag`, whose creating
/// process is gone. Returns what was removed.
pub fn clean_staging(target: &Path, tag: &str) -> Result<Vec<PathBuf>> {
    let parent = parent_of(target)?;
    let prefix = format!(".{}.{tag}-", file_name(target));
    let mut removed = Vec::new();
    let entries = match fs_err::read_dir(parent) {
        Ok(e) => e,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(removed),
        Err(e) => return Err(e.into()),
    };
    for entry in entries.flatten() {
        let name = entry.file_name().to_string_lossy().into_owned();
        let Some(rest) = name.strip_prefix(&prefix) else {
            continue;
        };
        let pid: Option<i32> = rest.split('-').next().and_then(|p| p.parse().ok());
        let path = entry.path();
        if pid.is_some_and(|p| owner_alive(p, &path)) {
            continue;
        }
        let res = if entry.file_type().map(|t| t.is_dir()).unwrap_or(false) {
            fs::remove_dir_all(&path)
        } else {
            fs::remove_file(&path)
        };
        res.map_err(|e| Error::io("remove staging leftover", &path, e))?;
        removed.push(path);
    }
    Ok(removed)
}

/// Removes every staging leftover in `dir` made by [`staging_path`] with one of `tags`
/// (`.<name>.<tag>-<pid>-<nanos>`, any name) whose creating process is gone, e.g. what a
/// killed generation left (trial-run #15). Best effort: returns what was removed.
pub fn sweep_staging(dir: &Path, tags: &[&str]) -> Vec<PathBuf> {
    let mut removed = Vec::new();
    let Ok(entries) = fs::read_dir(dir) else {
        return removed;
    };
    for entry in entries.flatten() {
        let name = entry.file_name().to_string_lossy().into_owned();
        let Some(rest) = name.strip_prefix('.') else {
            continue;
        };
        let owner = tags.iter().find_map(|tag| {
            let (_, tail) = rest.rsplit_once(&format!(".{tag}-"))?;
            let (pid, nanos) = tail.split_once('-')?;
            if nanos.is_empty() || !nanos.bytes().all(|b| b.is_ascii_digit()) {
                return None;
            }
            pid.parse::<i32>().ok()
        });
        let Some(pid) = owner else {
            continue;
        };
        let path = entry.path();
        if owner_alive(pid, &path) {
            continue;
        }
        let res = if entry.file_type().map(|t| t.is_dir()).unwrap_or(false) {
            fs::remove_dir_all(&path)
        } else {
            fs::remove_file(&path)
        };
        if res.is_ok() {
            removed.push(path);
        }
    }
    removed
}

/// True when process `pid`, named in the staging leftover `path`, may still be writing it.
/// Not when it is a zombie (killed, not yet reaped by its parent: `kill -9 $!` in a shell
/// leaves one) nor when the pid was reused by a process that started after `path` was last
/// changed (the owner started before it created the path).
pub fn owner_alive(pid: i32, path: &Path) -> bool {
    if !process_alive(pid) {
        return false;
    }
    let Some((state, started)) = proc_state(pid) else {
        // No /proc (another OS): the signal probe is all there is.
        return true;
    };
    if state == "Z" || state == "X" {
        return false;
    }
    // The inode's change time: never earlier than the path's creation, and unlike the
    // modification time it cannot be set back (an extraction keeping archive mtimes).
    let changed = fs::symlink_metadata(path).ok().map(|m| {
        use std::os::unix::fs::MetadataExt;
        m.ctime() as f64 + m.ctime_nsec() as f64 / 1e9
    });
    // The margin covers the tick granularity and a wall clock that was stepped.
    !matches!((started, changed), (Some(s), Some(c)) if s > c + 2.0)
}

/// The state letter of process `pid` and when it started (Unix seconds), from `/proc`.
fn proc_state(pid: i32) -> Option<(String, Option<f64>)> {
    let stat = fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    let after = &stat[stat.rfind(')')? + 1..];
    let fields: Vec<&str> = after.split_whitespace().collect();
    let state = fields.first()?.to_string();
    // Field 22 of stat (starttime, clock ticks since boot); `fields` starts at field 3.
    let started = (|| {
        let ticks: f64 = fields.get(19)?.parse().ok()?;
        // SAFETY: sysconf only reads a system constant.
        let hz = unsafe { libc::sysconf(libc::_SC_CLK_TCK) };
        if hz <= 0 {
            return None;
        }
        // Boot time from the uptime (10 ms), not `btime` (whole seconds, up to 1 s early).
        let uptime: f64 = fs::read_to_string("/proc/uptime")
            .ok()?
            .split_whitespace()
            .next()?
            .parse()
            .ok()?;
        let now = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .ok()?
            .as_secs_f64();
        Some(now - uptime + ticks / hz as f64)
    })();
    Some((state, started))
}

/// True when a process with this pid exists and has not exited. A zombie (exited, not yet
/// reaped by its parent) answers signal 0 but holds no lock, no file and does no work: it is a
/// dead holder, not a live one.
pub fn process_alive(pid: i32) -> bool {
    if pid <= 0 {
        return false;
    }
    // Signal 0 only checks for existence and permission (EPERM: it exists, not ours).
    let exists = match nix::sys::signal::kill(nix::unistd::Pid::from_raw(pid), None) {
        Ok(()) => true,
        Err(e) => e == nix::errno::Errno::EPERM,
    };
    exists && proc_state(pid).is_none_or(|(state, _)| state != "Z")
}

/// Reads a log as text (lossy), for the parsers; a missing or unreadable file reads as "".
pub fn read_log(path: &Path) -> String {
    let mut s = Vec::new();
    if let Ok(mut f) = File::open(path) {
        let _ = std::io::Read::read_to_end(&mut f, &mut s);
    }
    String::from_utf8_lossy(&s).into_owned()
}

fn parent_of(path: &Path) -> Result<&Path> {
    match path.parent() {
        Some(p) if !p.as_os_str().is_empty() => Ok(p),
        _ => Ok(Path::new(".")),
    }
}

fn file_name(path: &Path) -> String {
    path.file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default()
}

/// A size with an optional unit: `16GiB`, `16G` and `16g` are 16 x 2^30 bytes, `16GB` is
/// 16 x 10^9 (as `df -H` and cloud sizes say), a bare number is bytes.
pub fn parse_size(s: &str) -> std::result::Result<u64, String> {
    let t = s.trim();
    let split = t
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .unwrap_or(t.len());
    let (num, unit) = t.split_at(split);
    let n: f64 = num
        .parse()
        .map_err(|_| format!("\"{s}\" is not a size: give a number with a unit, such as 16GiB"))?;
    let mult: f64 = match unit.trim().to_ascii_lowercase().as_str() {
        "" | "b" => 1.0,
        "k" | "kib" => 1024.0,
        "m" | "mib" => 1024f64.powi(2),
        "g" | "gib" => 1024f64.powi(3),
        "t" | "tib" => 1024f64.powi(4),
        "kb" => 1e3,
        "mb" => 1e6,
        "gb" => 1e9,
        "tb" => 1e12,
        u => {
            return Err(format!(
                "unknown size unit \"{u}\": use KiB, MiB, GiB, TiB (or KB, MB, GB, TB)"
            ))
        }
    };
    let bytes = n * mult;
    if !(bytes.is_finite() && bytes >= 1.0 && bytes < u64::MAX as f64) {
        return Err(format!("\"{s}\" is not a usable size"));
    }
    Ok(bytes.round() as u64)
}

/// Files, allocated bytes and apparent bytes under `dir` (symlinks not followed; entries that
/// vanish during the walk are skipped).
pub fn tree_usage(dir: &Path) -> Result<(u64, u64, u64)> {
    use std::os::unix::fs::MetadataExt;
    let (mut files, mut bytes, mut apparent) = (0u64, 0u64, 0u64);
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        let rd = match fs_err::read_dir(&d) {
            Ok(rd) => rd,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => continue,
            Err(e) => return Err(e.into()),
        };
        for e in rd.flatten() {
            let Ok(m) = e.path().symlink_metadata() else {
                continue;
            };
            if m.is_dir() {
                stack.push(e.path());
            } else if m.is_file() {
                files += 1;
                bytes += m.blocks() * 512;
                apparent += m.len();
            }
        }
    }
    Ok((files, bytes, apparent))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_zombie_is_not_alive_and_a_running_child_is() {
        let mut child = std::process::Command::new("sleep")
            .arg("30")
            .spawn()
            .unwrap();
        let pid = child.id() as i32;
        assert!(process_alive(pid));
        nix::sys::signal::kill(nix::unistd::Pid::from_raw(pid), nix::sys::signal::SIGKILL).unwrap();
        // Not reaped yet: a zombie until `wait`. Bounded wait for the state to turn Z.
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
        while proc_state(pid).is_some_and(|(s, _)| s != "Z") {
            assert!(
                std::time::Instant::now() < deadline,
                "never became a zombie"
            );
            std::thread::sleep(std::time::Duration::from_millis(10));
        }
        assert_eq!(proc_state(pid).map(|(s, _)| s).as_deref(), Some("Z"));
        assert!(!process_alive(pid));
        child.wait().unwrap();
        assert!(!process_alive(pid));
        assert!(!process_alive(0) && !process_alive(-1));
    }

    #[test]
    fn write_atomic_replaces_and_leaves_no_temp() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("sub").join("m.json");
        write_atomic(&p, b"one").unwrap();
        write_atomic(&p, b"two").unwrap();
        assert_eq!(fs::read(&p).unwrap(), b"two");
        let names: Vec<_> = fs::read_dir(p.parent().unwrap())
            .unwrap()
            .map(|e| e.unwrap().file_name())
            .collect();
        assert_eq!(names.len(), 1, "{names:?}");
    }

    /// Trial 2 N12: the in-place writer makes no directory, not even a vanished one.
    #[test]
    fn write_in_place_never_creates_a_directory() {
        let d = tempfile::tempdir().unwrap();
        let p = d.path().join("gone/x.json");
        let e = write_atomic_in_place(&p, b"one").unwrap_err();
        assert_eq!(e.exit_code(), 2);
        assert!(e.message.contains("does not exist"), "{}", e.message);
        assert!(!d.path().join("gone").exists());
        let ok = d.path().join("x.json");
        write_atomic_in_place(&ok, b"one").unwrap();
        write_atomic_in_place(&ok, b"two").unwrap();
        assert_eq!(fs::read(&ok).unwrap(), b"two");
        let names: Vec<_> = fs::read_dir(d.path()).unwrap().flatten().collect();
        assert_eq!(names.len(), 1, "no staging file left");
    }

    #[test]
    fn defect_15_sweep_removes_dead_generation_leftovers_of_any_name() {
        let dir = tempfile::tempdir().unwrap();
        let d = dir.path();
        let dead = [
            ".data.gen-999999999-185686937",
            ".generate.log.gen-999999999-1",
        ];
        for n in dead {
            fs::write(d.join(n), "x").unwrap();
        }
        fs::create_dir(d.join(".work.cwd-999999999-2")).unwrap();
        let mine = staging_path(&d.join("data"), "gen").unwrap();
        fs::write(&mine, "live").unwrap();
        fs::write(d.join("data"), "published").unwrap();
        fs::write(d.join(".data.gen-notapid"), "x").unwrap();
        let mut removed = sweep_staging(d, &["gen", "cwd"]);
        removed.sort();
        assert_eq!(removed.len(), 3, "{removed:?}");
        assert!(mine.exists() && d.join("data").exists() && d.join(".data.gen-notapid").exists());
    }

    #[test]
    fn a_zombie_or_a_younger_process_owns_no_leftover() {
        let dir = tempfile::tempdir().unwrap();
        let f = dir.path().join(".data.gen-1-1");
        fs::write(&f, "x").unwrap();
        // This process, started before the file was written: the owner.
        assert!(owner_alive(std::process::id() as i32, &f));
        // A process started well after the file was made: a reused pid.
        std::thread::sleep(std::time::Duration::from_millis(2500));
        let mut young = std::process::Command::new("sleep")
            .arg("30")
            .spawn()
            .unwrap();
        assert!(!owner_alive(young.id() as i32, &f));
        // A killed child not reaped yet: a zombie.
        let fresh = dir.path().join(".data.gen-2-1");
        fs::write(&fresh, "x").unwrap();
        assert!(owner_alive(young.id() as i32, &fresh));
        young.kill().unwrap();
        let t0 = std::time::Instant::now();
        while owner_alive(young.id() as i32, &fresh)
            && t0.elapsed() < std::time::Duration::from_secs(10)
        {
            std::thread::sleep(std::time::Duration::from_millis(10));
        }
        assert!(!owner_alive(young.id() as i32, &fresh));
        // Still there, as a zombie: the path above was the zombie's, not a missing pid's.
        assert_eq!(
            proc_state(young.id() as i32).map(|(s, _)| s).as_deref(),
            Some("Z"),
            "reaped too early"
        );
        young.wait().unwrap();
    }

    #[test]
    fn clean_staging_removes_dead_leftovers_only() {
        let dir = tempfile::tempdir().unwrap();
        let target = dir.path().join("tree");
        let dead = dir.path().join(".tree.stage-999999999-1");
        let mine = staging_path(&target, "stage").unwrap();
        fs::create_dir(&dead).unwrap();
        fs::create_dir(&mine).unwrap();
        let removed = clean_staging(&target, "stage").unwrap();
        assert_eq!(removed, vec![dead.clone()]);
        assert!(mine.exists());
    }
}
