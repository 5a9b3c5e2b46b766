//! Facts about the file system a path lives on: read-only or not, free space, and which
//! mount it is (so a full disk is named as the disk, not as the file we failed to write).

use std::path::{Path, PathBuf};

/// Space on the file system holding a path.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Space {
    /// Bytes an unprivileged writer may still use.
    pub available: u64,
    pub total: u64,
    pub read_only: bool,
}

fn statvfs(path: &Path) -> Option<libc::statvfs> {
    use std::os::unix::ffi::OsStrExt;
    let c = std::ffi::CString::new(path.as_os_str().as_bytes()).ok()?;
    // SAFETY: statvfs fills the zeroed struct from a NUL-terminated path.
    let mut st: libc::statvfs = unsafe { std::mem::zeroed() };
    (unsafe { libc::statvfs(c.as_ptr(), &mut st) } == 0).then_some(st)
}

/// Space on the file system holding `path` (or its nearest existing parent).
// The statvfs field types differ between platforms; the casts are no-ops on some.
#[allow(clippy::unnecessary_cast)]
pub fn space(path: &Path) -> Option<Space> {
    let mut p = path;
    loop {
        if let Some(st) = statvfs(p) {
            let bs = st.f_frsize as u64;
            return Some(Space {
                available: st.f_bavail as u64 * bs,
                total: st.f_blocks as u64 * bs,
                read_only: st.f_flag & libc::ST_RDONLY != 0,
            });
        }
        p = p.parent()?;
    }
}

/// The file system holding `path` is mounted read-only.
pub fn is_read_only(path: &Path) -> bool {
    space(path).is_some_and(|s| s.read_only)
}

/// Nearly nothing left for a writer: under 1 MiB, or under 0.2% of the file system.
pub fn is_full(s: &Space) -> bool {
    s.available < (1 << 20) || (s.total > 0 && (s.available as f64) < s.total as f64 * 0.002)
}

/// `(device, mount point, type)` of the mount holding `path`, from `/proc/self/mounts`.
pub fn mount_of(path: &Path) -> Option<(String, PathBuf, String)> {
    let real = std::fs::canonicalize(path)
        .ok()
        .or_else(|| path.parent().and_then(|p| std::fs::canonicalize(p).ok()))?;
    let text = std::fs::read_to_string("/proc/self/mounts").ok()?;
    let mut best: Option<(String, PathBuf, String)> = None;
    for line in text.lines() {
        let f: Vec<&str> = line.split(' ').collect();
        if f.len() < 3 {
            continue;
        }
        // Spaces and the like are octal-escaped in /proc/self/mounts.
        let mp = PathBuf::from(f[1].replace("\\040", " "));
        if real.starts_with(&mp)
            && best
                .as_ref()
                .is_none_or(|(_, b, _)| mp.as_os_str().len() >= b.as_os_str().len())
        {
            best = Some((f[0].to_string(), mp, f[2].to_string()));
        }
    }
    best
}

/// "the file system at /mnt/x (tmpfs on /mnt/x, tmpfs) is full: 0 B free of 20.0 MiB" when
/// the disk holding `path` is full; `None` otherwise.
pub fn full_disk_note(path: &Path) -> Option<String> {
    let s = space(path)?;
    if !is_full(&s) {
        return None;
    }
    let mib = |b: u64| format!("{:.1} MiB", b as f64 / (1 << 20) as f64);
    let disk = match mount_of(path) {
        Some((dev, mp, ty)) => format!("{} ({dev}, {ty})", mp.display()),
        None => path.display().to_string(),
    };
    Some(format!(
        "the disk holding {} is full: {} free of {} on {disk}",
        path.display(),
        mib(s.available),
        mib(s.total)
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn space_and_mount_of_a_temp_dir() {
        let d = tempfile::tempdir().unwrap();
        let s = space(d.path()).unwrap();
        assert!(s.total > 0 && !s.read_only);
        assert!(space(&d.path().join("missing/deeper")).is_some());
        let (_, mp, _) = mount_of(d.path()).unwrap();
        assert!(d.path().canonicalize().unwrap().starts_with(mp));
        assert!(is_full(&Space {
            available: 1000,
            total: 1 << 40,
            read_only: false
        }));
        assert!(!is_full(&Space {
            available: 1 << 30,
            total: 1 << 31,
            read_only: false
        }));
    }
}
