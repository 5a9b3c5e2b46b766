//! A file a TSBS tool reads by itself (`--file`), watched while it does, so that the run can
//! record which bytes it read without sitting in its data path.
//!
//! Streaming the dataset through tsbsctl cost the load a fifth of its throughput and half
//! the loader's CPU again (issue 27: copying every byte through a pipe and hashing it on the
//! way). The loader now reads an uncompressed dataset itself, and the bytes are proven
//! instead: the file is held open and watched (inotify on it and on its directory) from
//! before the tool starts until it has exited; its identity (device, inode, size, mtime,
//! ctime) is compared before and after; and it is hashed once the tool is done, on the
//! descriptor held since before the start. An unchanged inode with no write, rename or
//! metadata change in between holds the bytes the tool read, so their hash is the hash of
//! the bytes it loaded. Any change stops the tool and is an integrity error.

use std::ffi::OsString;
use std::fs::File;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};

use serde::Serialize;

use crate::error::{Error, Result};
use crate::output::Progress;

/// What identifies a file's content without reading it: a write or a `touch` changes ctime
/// even when it restores mtime, and a replaced file has another inode.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct Identity {
    pub dev: u64,
    pub ino: u64,
    pub size: u64,
    pub mtime_ns: i128,
    pub ctime_ns: i128,
}

impl Identity {
    fn of(m: &std::fs::Metadata) -> Identity {
        let ns = |s: i64, n: i64| s as i128 * 1_000_000_000 + n as i128;
        Identity {
            dev: m.dev(),
            ino: m.ino(),
            size: m.size(),
            mtime_ns: ns(m.mtime(), m.mtime_nsec()),
            ctime_ns: ns(m.ctime(), m.ctime_nsec()),
        }
    }

    /// How `after` differs, in words; `None` when it does not.
    fn difference(&self, after: &Identity) -> Option<String> {
        if (self.dev, self.ino) != (after.dev, after.ino) {
            return Some("the path now names another file (replaced or moved)".into());
        }
        if self.size != after.size {
            return Some(format!(
                "its size went from {} to {} bytes",
                self.size, after.size
            ));
        }
        if self.mtime_ns != after.mtime_ns {
            return Some("its modification time changed (written to)".into());
        }
        if self.ctime_ns != after.ctime_ns {
            return Some("its change time moved (written to, or its metadata changed)".into());
        }
        None
    }
}

/// Writes, truncation, metadata changes, and the file being moved or deleted.
const FILE_EVENTS: u32 = libc::IN_MODIFY
    | libc::IN_ATTRIB
    | libc::IN_CLOSE_WRITE
    | libc::IN_MOVE_SELF
    | libc::IN_DELETE_SELF;
/// Another file put in its place, or the name taken away.
const DIR_EVENTS: u32 = libc::IN_CREATE | libc::IN_MOVED_TO | libc::IN_MOVED_FROM | libc::IN_DELETE;

/// A file held open and watched; see the module's text.
#[derive(Debug)]
pub struct WatchedFile {
    path: PathBuf,
    file: File,
    before: Identity,
    inotify: Option<OwnedFd>,
    file_wd: i32,
    name: OsString,
    changed: Option<String>,
}

/// What the watch and the hash after the tool found.
#[derive(Debug, Clone, Serialize)]
pub struct Proof {
    pub path: PathBuf,
    pub identity: Identity,
    /// How the file was watched while the tool read it.
    pub watch: &'static str,
    /// The first change seen, in words; the bytes are then unknown.
    pub changed: Option<String>,
    /// Bytes hashed (the whole file), and their SHA-256, when nothing changed.
    pub bytes: u64,
    pub sha256: Option<String>,
    /// How long the hash after the tool took (wall time, not part of what was measured).
    pub hash_seconds: f64,
}

impl WatchedFile {
    /// Starts watching `path` (before opening it, so nothing slips in between) and holds it
    /// open. A file system without inotify is still checked by identity before and after.
    pub fn open(path: &Path) -> Result<WatchedFile> {
        let name = path.file_name().map(OsString::from).unwrap_or_default();
        let (inotify, file_wd) = watch(path);
        let file = fs_err::File::open(path)?.into_file();
        let before = Identity::of(&file.metadata().map_err(|e| Error::io("stat", path, e))?);
        let path_now = fs_err::metadata(path)?;
        let mut w = WatchedFile {
            path: path.to_path_buf(),
            file,
            before,
            inotify,
            file_wd,
            name,
            changed: None,
        };
        // The path and the descriptor must be one file from the start.
        if let Some(d) = before.difference(&Identity::of(&path_now)) {
            w.changed = Some(d);
        }
        Ok(w)
    }

    /// The first change seen so far (events are read without blocking; cheap enough for
    /// every tick of the watch loop).
    pub fn poll(&mut self) -> Option<String> {
        if self.changed.is_none() {
            self.changed = self.read_events();
        }
        self.changed.clone()
    }

    fn read_events(&self) -> Option<String> {
        let fd = self.inotify.as_ref()?.as_raw_fd();
        let mut buf = [0u8; 4096];
        loop {
            // SAFETY: a non-blocking read into a buffer we own, of its length.
            let n = unsafe { libc::read(fd, buf.as_mut_ptr().cast(), buf.len()) };
            if n <= 0 {
                return None;
            }
            let mut at = 0usize;
            let head = std::mem::size_of::<libc::inotify_event>();
            while at + head <= n as usize {
                // SAFETY: the kernel wrote whole events; read_unaligned copes with any offset.
                let ev: libc::inotify_event =
                    unsafe { std::ptr::read_unaligned(buf[at..].as_ptr().cast()) };
                let name_bytes = &buf[at + head..(at + head + ev.len as usize).min(n as usize)];
                let name = name_bytes.split(|&b| b == 0).next().unwrap_or_default();
                at += head + ev.len as usize;
                if ev.mask & libc::IN_Q_OVERFLOW != 0 {
                    return Some("too many file events to follow (the watch overflowed)".into());
                }
                if ev.wd == self.file_wd {
                    if ev.mask & FILE_EVENTS != 0 {
                        return Some(describe(ev.mask));
                    }
                } else if ev.mask & DIR_EVENTS != 0 && name == self.name.as_bytes() {
                    return Some(
                        "its name was moved, deleted or given to another file in its directory"
                            .into(),
                    );
                }
            }
        }
    }

    /// After the tool has exited: the last events, then the identity again (of the
    /// descriptor and of the path). `Some(change)` when the file is not the one it was.
    pub fn check(&mut self) -> Result<Option<String>> {
        if self.poll().is_none() {
            let held = Identity::of(
                &self
                    .file
                    .metadata()
                    .map_err(|e| Error::io("stat", &self.path, e))?,
            );
            self.changed =
                self.before
                    .difference(&held)
                    .or_else(|| match std::fs::metadata(&self.path) {
                        Ok(m) => self.before.difference(&Identity::of(&m)),
                        Err(e) => Some(format!("it can no longer be read: {e}")),
                    });
        }
        Ok(self.changed.clone())
    }

    /// [`WatchedFile::check`], then the hash of the held descriptor unless something changed.
    pub fn finish(mut self, progress: &dyn Progress) -> Result<Proof> {
        let changed = self.check()?;
        let watch = if self.inotify.is_some() {
            "inotify on the file and its directory, identity before and after"
        } else {
            "identity before and after (inotify unavailable)"
        };
        let started = std::time::Instant::now();
        let (sha256, bytes) = if changed.is_some() {
            (None, 0)
        } else {
            let (sha, n) = hash_held(&mut self.file, &self.path, progress)?;
            (Some(sha), n)
        };
        let hash_seconds = started.elapsed().as_secs_f64();
        Ok(Proof {
            path: self.path,
            identity: self.before,
            watch,
            changed,
            bytes,
            sha256,
            hash_seconds,
        })
    }
}

/// inotify on the file and its directory; `(None, -1)` when it cannot be had.
fn watch(path: &Path) -> (Option<OwnedFd>, i32) {
    use std::ffi::CString;
    // SAFETY: plain syscalls; the fd is owned at once, the C strings outlive the calls.
    let fd = unsafe { libc::inotify_init1(libc::IN_NONBLOCK | libc::IN_CLOEXEC) };
    if fd < 0 {
        return (None, -1);
    }
    let fd = unsafe { OwnedFd::from_raw_fd(fd) };
    let Ok(file) = CString::new(path.as_os_str().as_bytes()) else {
        return (None, -1);
    };
    let wd = unsafe { libc::inotify_add_watch(fd.as_raw_fd(), file.as_ptr(), FILE_EVENTS) };
    if wd < 0 {
        return (None, -1);
    }
    let dir = path
        .parent()
        .filter(|p| !p.as_os_str().is_empty())
        .unwrap_or(Path::new("."));
    if let Ok(dir) = CString::new(dir.as_os_str().as_bytes()) {
        // Without the directory's watch a rename over the path is still seen by identity.
        unsafe { libc::inotify_add_watch(fd.as_raw_fd(), dir.as_ptr(), DIR_EVENTS) };
    }
    (Some(fd), wd)
}

fn describe(mask: u32) -> String {
    if mask & (libc::IN_MODIFY | libc::IN_CLOSE_WRITE) != 0 {
        "it was written to".into()
    } else if mask & libc::IN_ATTRIB != 0 {
        "its metadata changed (permissions, times or links)".into()
    } else if mask & libc::IN_MOVE_SELF != 0 {
        "it was moved".into()
    } else {
        "it was deleted".into()
    }
}

/// SHA-256 of the held descriptor from its start (the tool had its own descriptor, so ours
/// is still at offset 0, but seek anyway).
fn hash_held(file: &mut File, path: &Path, progress: &dyn Progress) -> Result<(String, u64)> {
    use std::io::Seek;
    file.rewind().map_err(|e| Error::io("read", path, e))?;
    crate::hash::sha256_open(file, path, progress)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::output::NoProgress;
    use std::io::Write;

    fn dataset(dir: &Path) -> PathBuf {
        let p = dir.join("data");
        std::fs::write(&p, b"cpu,hostname=host_0 usage_user=1 0\n").unwrap();
        p
    }

    #[test]
    fn an_untouched_file_is_hashed_after_the_read() {
        let d = tempfile::tempdir().unwrap();
        let p = dataset(d.path());
        let mut w = WatchedFile::open(&p).unwrap();
        // A reader is not a change.
        std::fs::read(&p).unwrap();
        assert_eq!(w.poll(), None);
        let proof = w.finish(&NoProgress).unwrap();
        assert_eq!(proof.changed, None);
        assert_eq!(
            proof.sha256.as_deref(),
            Some(crate::hash::sha256_hex(&std::fs::read(&p).unwrap()).as_str())
        );
        assert_eq!(proof.bytes, std::fs::metadata(&p).unwrap().len());
    }

    #[test]
    fn a_write_is_seen_at_once_and_leaves_no_hash() {
        let d = tempfile::tempdir().unwrap();
        let p = dataset(d.path());
        let mut w = WatchedFile::open(&p).unwrap();
        std::fs::OpenOptions::new()
            .append(true)
            .open(&p)
            .unwrap()
            .write_all(b"x")
            .unwrap();
        assert_eq!(w.poll().as_deref(), Some("it was written to"));
        let proof = w.finish(&NoProgress).unwrap();
        assert!(proof.changed.is_some());
        assert_eq!(proof.sha256, None);
    }

    #[test]
    fn a_rename_over_the_path_is_seen() {
        let d = tempfile::tempdir().unwrap();
        let p = dataset(d.path());
        let mut w = WatchedFile::open(&p).unwrap();
        let other = d.path().join("other");
        std::fs::write(&other, b"cpu,hostname=host_0 usage_user=1 0\n").unwrap();
        std::fs::rename(&other, &p).unwrap();
        assert!(w.poll().unwrap().contains("another file"), "{:?}", w.poll());
    }

    #[test]
    fn a_touch_that_restores_the_mtime_is_seen_by_identity() {
        let d = tempfile::tempdir().unwrap();
        let p = dataset(d.path());
        let w = WatchedFile::open(&p).unwrap();
        let before = std::fs::metadata(&p).unwrap();
        // File times tick with the kernel's coarse clock: let one tick pass.
        std::thread::sleep(std::time::Duration::from_millis(50));
        // Rewrite the same bytes and put the old mtime back; ctime still moves.
        std::fs::write(&p, b"cpu,hostname=host_0 usage_user=1 0\n").unwrap();
        let t = filetime(&before);
        set_mtime(&p, t);
        // Drop the inotify so only the identity check can see it.
        let mut w = w;
        w.inotify = None;
        let proof = w.finish(&NoProgress).unwrap();
        assert!(
            proof.changed.as_deref().unwrap().contains("change time"),
            "{proof:?}"
        );
    }

    fn filetime(m: &std::fs::Metadata) -> libc::timespec {
        libc::timespec {
            tv_sec: m.mtime(),
            tv_nsec: m.mtime_nsec(),
        }
    }

    fn set_mtime(p: &Path, t: libc::timespec) {
        let c = std::ffi::CString::new(p.as_os_str().as_bytes()).unwrap();
        let times = [
            libc::timespec {
                tv_sec: 0,
                tv_nsec: libc::UTIME_OMIT,
            },
            t,
        ];
        // SAFETY: a valid path and two timespecs, as utimensat expects.
        assert_eq!(
            unsafe { libc::utimensat(libc::AT_FDCWD, c.as_ptr(), times.as_ptr(), 0) },
            0
        );
    }
}
