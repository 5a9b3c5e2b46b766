//! Renames that publish trees: "only if the target does not exist" and "swap two trees in
//! one step". On Linux both are single `renameat2` calls; elsewhere (or on filesystems
//! without support) callers get [`Swap::Unsupported`] and fall back to two renames plus
//! crash recovery. Also: publishing a new `<base>/<id>/` of generated files (comparisons,
//! reports) from a staging directory in one rename.

use std::ffi::CString;
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};

use crate::error::{Error, Result};
use crate::fsutil;

/// Result of an attempted atomic exchange.
#[derive(Debug, PartialEq, Eq)]
pub enum Swap {
    Done,
    /// The OS or filesystem cannot exchange; nothing was changed.
    Unsupported,
}

fn cstr(p: &Path) -> Result<CString> {
    CString::new(p.as_os_str().as_bytes())
        .map_err(|_| Error::failed(format!("path contains NUL: {}", p.display())))
}

#[cfg(target_os = "linux")]
fn renameat2(from: &Path, to: &Path, flags: libc::c_uint) -> std::io::Result<()> {
    let (a, b) = (
        cstr(from).map_err(|e| std::io::Error::other(e.message))?,
        cstr(to).map_err(|e| std::io::Error::other(e.message))?,
    );
    // SAFETY: valid NUL-terminated paths, AT_FDCWD-relative.
    let rc = unsafe {
        libc::syscall(
            libc::SYS_renameat2,
            libc::AT_FDCWD,
            a.as_ptr(),
            libc::AT_FDCWD,
            b.as_ptr(),
            flags,
        )
    };
    if rc == 0 {
        Ok(())
    } else {
        Err(std::io::Error::last_os_error())
    }
}

fn unsupported(e: &std::io::Error) -> bool {
    matches!(
        e.raw_os_error(),
        Some(libc::EINVAL) | Some(libc::ENOSYS) | Some(libc::ENOTSUP)
    )
}

fn sync_parents(a: &Path, b: &Path) -> Result<()> {
    let pa = a.parent().unwrap_or(Path::new("."));
    let pb = b.parent().unwrap_or(Path::new("."));
    fsutil::sync_dir(pb)?;
    if pa != pb {
        fsutil::sync_dir(pa)?;
    }
    Ok(())
}

/// Renames `from` to `to`, failing if `to` exists in any form (even an empty directory, which
/// a plain rename would silently replace). Fsyncs the parents.
pub fn rename_noreplace(from: &Path, to: &Path) -> Result<()> {
    let exists_err = || {
        Error::invalid(format!("{} already exists", to.display()))
            .with_hint("choose another name, or remove the existing one first")
    };
    #[cfg(target_os = "linux")]
    {
        match renameat2(from, to, libc::RENAME_NOREPLACE) {
            Ok(()) => return sync_parents(from, to),
            Err(e) if e.raw_os_error() == Some(libc::EEXIST) => return Err(exists_err()),
            Err(e) if unsupported(&e) => {}
            Err(e) => {
                return Err(Error::failed(format!(
                    "could not rename {} to {}: {e}",
                    from.display(),
                    to.display()
                )))
            }
        }
    }
    // Fallback: check, then rename (a tiny window remains where the OS offers nothing better).
    if std::fs::symlink_metadata(to).is_ok() {
        return Err(exists_err());
    }
    fsutil::rename_durable(from, to)
}

/// Exchanges `a` and `b` atomically (both must exist). Fsyncs the parents.
pub fn exchange(a: &Path, b: &Path) -> Result<Swap> {
    #[cfg(target_os = "linux")]
    {
        match renameat2(a, b, libc::RENAME_EXCHANGE) {
            Ok(()) => {
                sync_parents(a, b)?;
                return Ok(Swap::Done);
            }
            Err(e) if unsupported(&e) => return Ok(Swap::Unsupported),
            Err(e) => {
                return Err(Error::failed(format!(
                    "could not exchange {} and {}: {e}",
                    a.display(),
                    b.display()
                )))
            }
        }
    }
    #[allow(unreachable_code)]
    {
        let _ = (a, b);
        Ok(Swap::Unsupported)
    }
}

/// Pretty JSON with a final newline, as every published `*.json` is written.
pub fn pretty(v: &serde_json::Value) -> Result<Vec<u8>> {
    let mut t = serde_json::to_string_pretty(v)?;
    t.push('\n');
    Ok(t.into_bytes())
}

/// Publishes a new `<base>/<id>/` holding the files `make(id)` returns: written into a staging
/// directory beside it, then renamed in one step. The id is the UTC time, suffixed `-01`, ...
/// when taken. Staging leftovers of dead processes are removed first.
pub fn publish(
    base: &Path,
    mut make: impl FnMut(&str) -> Result<Vec<(String, Vec<u8>)>>,
) -> Result<(String, PathBuf)> {
    fs_err::create_dir_all(base)?;
    sweep_dead_staging(base);
    let stem = crate::ids::timestamp_id_now();
    for n in 0..1000 {
        let id = if n == 0 {
            stem.clone()
        } else {
            format!("{stem}-{n:02}")
        };
        let dir = base.join(&id);
        if dir.exists() {
            continue;
        }
        let _ = crate::fsutil::clean_staging(&dir, "stage");
        let files = make(&id)?;
        let staging = crate::fsutil::staging_path(&dir, "stage")?;
        write_dir(&staging, &files)?;
        if dir.exists() {
            let _ = std::fs::remove_dir_all(&staging);
            continue;
        }
        if let Err(e) = crate::fsutil::rename_durable(&staging, &dir) {
            let _ = std::fs::remove_dir_all(&staging);
            return Err(e);
        }
        return Ok((id, dir));
    }
    Err(Error::failed(format!(
        "no free id for {stem} under {}",
        base.display()
    )))
}

/// Removes `.<id>.stage-<pid>-<nanos>` leftovers of processes that are gone (a crash between
/// staging and rename); a live process's staging directory is left alone.
fn sweep_dead_staging(base: &Path) {
    let Ok(rd) = std::fs::read_dir(base) else {
        return;
    };
    for e in rd.flatten() {
        let name = e.file_name().to_string_lossy().into_owned();
        let Some(rest) = name
            .strip_prefix('.')
            .and_then(|n| n.split_once(".stage-"))
            .map(|(_, r)| r)
        else {
            continue;
        };
        let pid: Option<i32> = rest.split('-').next().and_then(|p| p.parse().ok());
        if pid.is_some_and(|p| !crate::fsutil::process_alive(p)) {
            let _ = std::fs::remove_dir_all(e.path());
        }
    }
}

/// Writes files into a fresh directory, each synced.
pub fn write_dir(dir: &Path, files: &[(String, Vec<u8>)]) -> Result<()> {
    fs_err::create_dir(dir)?;
    for (name, bytes) in files {
        let p = dir.join(name);
        let r = (|| -> std::io::Result<()> {
            use std::io::Write;
            let mut f = fs_err::File::create(&p)?;
            f.write_all(bytes)?;
            f.sync_all()
        })();
        if let Err(e) = r {
            let _ = std::fs::remove_dir_all(dir);
            return Err(e.into());
        }
    }
    crate::fsutil::sync_dir(dir)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn noreplace_refuses_an_empty_directory_target() {
        let d = tempfile::tempdir().unwrap();
        let (a, b) = (d.path().join("a"), d.path().join("b"));
        std::fs::create_dir(&a).unwrap();
        std::fs::create_dir(&b).unwrap();
        assert_eq!(rename_noreplace(&a, &b).unwrap_err().exit_code(), 2);
        std::fs::remove_dir(&b).unwrap();
        rename_noreplace(&a, &b).unwrap();
        assert!(b.is_dir() && !a.exists());
    }

    #[test]
    fn exchange_swaps_two_trees() {
        let d = tempfile::tempdir().unwrap();
        let (a, b) = (d.path().join("a"), d.path().join("b"));
        std::fs::create_dir(&a).unwrap();
        std::fs::create_dir(&b).unwrap();
        std::fs::write(a.join("x"), "old").unwrap();
        std::fs::write(b.join("x"), "new").unwrap();
        if exchange(&a, &b).unwrap() == Swap::Done {
            assert_eq!(std::fs::read_to_string(a.join("x")).unwrap(), "new");
            assert_eq!(std::fs::read_to_string(b.join("x")).unwrap(), "old");
        }
    }
}
