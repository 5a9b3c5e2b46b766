//! The distribution hash of an extracted install tree (setup.md §0.5): a local tamper-detection
//! fingerprint over kinds, paths, permission bits and contents, skipping the top-level
//! `manifest.json`.
//!
//! For every entry (files, directories, symlinks; symlinked directories are not descended),
//! sorted by root-relative POSIX path as a plain string, the stream gets
//! `kind NUL path NUL octal-mode NUL content NUL`, where content is the raw 32-byte SHA-256 of
//! a file, the target of a symlink, nothing for a directory.

use std::io::Read;
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};

use sha2::{Digest, Sha256};

use crate::error::{Error, Result};

/// Lowercase hex distribution hash of the tree at `root`. FIFOs, sockets and devices are an
/// integrity error.
pub fn tree_digest(root: &Path) -> Result<String> {
    let mut entries: Vec<(Vec<u8>, PathBuf)> = Vec::new();
    collect(root, &mut entries)?;
    // Code-point order of UTF-8 paths is their byte order.
    entries.sort_by(|a, b| a.0.cmp(&b.0));

    let mut h = Sha256::new();
    for (rel, path) in &entries {
        if rel.as_slice() == b"manifest.json" {
            continue;
        }
        let meta = fs_err::symlink_metadata(path)?;
        let ft = meta.file_type();
        let mode = meta.permissions().mode() & 0o7777;
        let (kind, content): (&str, Vec<u8>) = if ft.is_symlink() {
            let target = fs_err::read_link(path)?;
            ("symlink", target.as_os_str().as_bytes().to_vec())
        } else if ft.is_dir() {
            ("directory", Vec::new())
        } else if ft.is_file() {
            ("file", file_sha256(path)?.to_vec())
        } else {
            return Err(unsupported(path));
        };
        h.update(kind.as_bytes());
        h.update([0]);
        h.update(rel);
        h.update([0]);
        h.update(format!("{mode:o}").as_bytes());
        h.update([0]);
        h.update(&content);
        h.update([0]);
    }
    Ok(hex::encode(h.finalize()))
}

fn collect(dir: &Path, out: &mut Vec<(Vec<u8>, PathBuf)>) -> Result<()> {
    // walkdir does not follow symlinks by default, so a symlinked directory stays a leaf.
    for entry in walkdir::WalkDir::new(dir).min_depth(1) {
        let entry = entry.map_err(|e| {
            let at = e.path().unwrap_or(dir).to_path_buf();
            Error::io("list", &at, e.into())
        })?;
        let ft = entry.file_type();
        if !(ft.is_dir() || ft.is_file() || ft.is_symlink()) {
            return Err(unsupported(entry.path()));
        }
        let rel = entry.path().strip_prefix(dir).unwrap_or(entry.path());
        out.push((rel.as_os_str().as_bytes().to_vec(), entry.into_path()));
    }
    Ok(())
}

fn unsupported(path: &Path) -> Error {
    Error::integrity(format!(
        "unsupported installation entry (not a file, directory or symlink): {}",
        path.display()
    ))
    .with_hint("remove it; installation trees hold only files, directories and symlinks")
}

fn file_sha256(path: &Path) -> Result<[u8; 32]> {
    let mut f = fs_err::File::open(path)?;
    let mut h = Sha256::new();
    let mut buf = vec![0u8; 1 << 20];
    loop {
        let n = f.read(&mut buf)?;
        if n == 0 {
            break;
        }
        h.update(&buf[..n]);
    }
    Ok(h.finalize().into())
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::fs;

    fn chmod(p: &Path, mode: u32) {
        fs::set_permissions(p, fs::Permissions::from_mode(mode)).unwrap();
    }

    /// The tree of setup.md §0.5.
    fn vector_tree() -> tempfile::TempDir {
        let d = tempfile::tempdir().unwrap();
        let r = d.path();
        fs::write(r.join("README"), "x").unwrap();
        chmod(&r.join("README"), 0o644);
        fs::create_dir(r.join("bin")).unwrap();
        chmod(&r.join("bin"), 0o755);
        fs::write(r.join("bin/tool"), "hi\n").unwrap();
        chmod(&r.join("bin/tool"), 0o755);
        std::os::unix::fs::symlink("README", r.join("link")).unwrap();
        fs::create_dir(r.join("sub")).unwrap();
        fs::write(r.join("sub/manifest.json"), "m\n").unwrap();
        chmod(&r.join("sub/manifest.json"), 0o600);
        chmod(&r.join("sub"), 0o700);
        fs::write(r.join("manifest.json"), "{\"excluded\": true}\n").unwrap();
        d
    }

    #[test]
    fn reference_test_vector() {
        let d = vector_tree();
        assert_eq!(
            tree_digest(d.path()).unwrap(),
            "0a91e25cecdba6de1d589f09b680b2d6a25be2553d88a048a7fb9f6f3a00e987"
        );
    }

    #[test]
    fn top_level_manifest_is_ignored_but_everything_else_counts() {
        let d = vector_tree();
        let base = tree_digest(d.path()).unwrap();
        fs::write(d.path().join("manifest.json"), "changed").unwrap();
        assert_eq!(tree_digest(d.path()).unwrap(), base);
        chmod(&d.path().join("bin/tool"), 0o700);
        let changed_mode = tree_digest(d.path()).unwrap();
        assert_ne!(changed_mode, base);
        chmod(&d.path().join("bin/tool"), 0o755);
        fs::write(d.path().join("sub/manifest.json"), "n\n").unwrap();
        assert_ne!(tree_digest(d.path()).unwrap(), base);
    }

    #[test]
    fn symlinked_directories_are_not_descended() {
        let d = vector_tree();
        let base = tree_digest(d.path()).unwrap();
        std::os::unix::fs::symlink("bin", d.path().join("bindir")).unwrap();
        assert_ne!(tree_digest(d.path()).unwrap(), base);
        let mut v = Vec::new();
        collect(d.path(), &mut v).unwrap();
        assert!(v.iter().any(|(rel, _)| rel.as_slice() == b"bindir"));
        assert!(!v.iter().any(|(rel, _)| rel.starts_with(b"bindir/")));
    }

    #[test]
    fn fifos_are_an_integrity_error() {
        let d = vector_tree();
        let fifo = d.path().join("bin/pipe");
        nix::unistd::mkfifo(&fifo, nix::sys::stat::Mode::from_bits_truncate(0o644)).unwrap();
        let e = tree_digest(d.path()).unwrap_err();
        assert_eq!(e.exit_code(), 4);
        assert!(e.message.contains("bin/pipe"), "{}", e.message);
    }
}
