//! Advisory whole-file locks (flock): the one place that names the lock crate (fs2), so a swap
//! (for example to std's `File::try_lock`, stable since Rust 1.89) is this file only.

use std::fs::File;
use std::io;

use fs2::FileExt;

/// Takes the exclusive lock without waiting: `Ok(true)` when taken, `Ok(false)` when another
/// open file description holds it.
pub fn try_lock_exclusive(f: &File) -> io::Result<bool> {
    match FileExt::try_lock_exclusive(f) {
        Ok(()) => Ok(true),
        Err(e)
            if e.kind() == io::ErrorKind::WouldBlock
                || e.raw_os_error() == fs2::lock_contended_error().raw_os_error() =>
        {
            Ok(false)
        }
        Err(e) => Err(e),
    }
}

/// Releases a lock taken with [`try_lock_exclusive`].
pub fn unlock(f: &File) -> io::Result<()> {
    FileExt::unlock(f)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_second_open_file_is_refused_until_unlock() {
        let d = tempfile::tempdir().unwrap();
        let p = d.path().join("l");
        let a = File::create(&p).unwrap();
        let b = File::open(&p).unwrap();
        assert!(try_lock_exclusive(&a).unwrap());
        assert!(!try_lock_exclusive(&b).unwrap());
        unlock(&a).unwrap();
        assert!(try_lock_exclusive(&b).unwrap());
    }
}
