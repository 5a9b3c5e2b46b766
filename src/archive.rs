//! Safe extraction of `.tar.gz` and `.tar.xz` archives into a staging directory beside the
//! target, published with one rename. Absolute paths, `..`, links pointing outside the tree,
//! hard links to outside, devices and FIFOs are refused (integrity, exit 4). Executable bits
//! are kept.
//!
//! Every entry is checked before anything is written for it: its path, its type, the parent
//! chain it would be written through (no symlinks: nothing is ever written through a link),
//! and for links, where they point, resolved inside the staging tree with every symlink on the
//! way followed there (never on the real filesystem). Because a later entry can change what an
//! earlier link resolves to, every symlink is checked once more when the archive is done.

use std::ffi::OsString;
use std::io::{BufReader, Read};
use std::os::unix::fs::PermissionsExt;
use std::path::{Component, Path, PathBuf};

use tar::EntryType;

use crate::error::{Error, Result};

/// What the caller requires of the archive's shape.
#[derive(Debug, Clone, Default)]
pub struct ExtractOptions {
    /// Every entry must live under this single top directory (e.g. `go`,
    /// `greptime-linux-amd64-v1.2.0`). `None`: any layout.
    pub top_dir: Option<String>,
    /// Refuse symbolic links altogether (the Go archive has none).
    pub forbid_symlinks: bool,
}

/// An extracted tree in a staging directory beside its target. Dropping it without
/// [`Staged::publish`] removes the staging directory.
#[derive(Debug)]
pub struct Staged {
    /// The staging directory created beside the target.
    root: PathBuf,
    /// What gets published: `root`, or `root/<top_dir>`.
    inner: PathBuf,
    published: bool,
}

impl Staged {
    /// The staging directory (the extracted archive's root: the contents of the top directory
    /// when `top_dir` was given).
    pub fn path(&self) -> &Path {
        &self.inner
    }

    /// Renames the staged tree to `target` (which must not exist) and fsyncs the parent.
    pub fn publish(mut self, target: &Path) -> Result<PathBuf> {
        if target.symlink_metadata().is_ok() {
            return Err(Error::failed(format!(
                "cannot publish the extracted tree: {} already exists",
                target.display()
            ))
            .with_hint("remove it (or use the command's reinstall option) and try again"));
        }
        crate::fsutil::rename_durable(&self.inner, target)?;
        self.published = true;
        Ok(target.to_path_buf())
    }
}

impl Drop for Staged {
    fn drop(&mut self) {
        if self.published {
            if self.root != self.inner {
                let _ = std::fs::remove_dir(&self.root);
            }
        } else {
            remove_tree(&self.root);
        }
    }
}

/// Removes a tree even where extraction left directories without write permission.
fn remove_tree(path: &Path) {
    if std::fs::remove_dir_all(path).is_ok() || !path.exists() {
        return;
    }
    make_writable(path);
    let _ = std::fs::remove_dir_all(path);
}

fn make_writable(dir: &Path) {
    let Ok(meta) = dir.symlink_metadata() else {
        return;
    };
    if !meta.is_dir() {
        return;
    }
    let _ = std::fs::set_permissions(
        dir,
        std::fs::Permissions::from_mode(meta.permissions().mode() | 0o700),
    );
    if let Ok(rd) = std::fs::read_dir(dir) {
        for e in rd.flatten() {
            make_writable(&e.path());
        }
    }
}

const GZIP_MAGIC: &[u8] = &[0x1f, 0x8b];
const XZ_MAGIC: &[u8] = &[0xfd, b'7', b'z', b'X', b'Z', 0x00];

/// Extracts `archive` (gzip or xz, detected from the bytes) into a staging directory beside
/// `target`.
pub fn extract_staged(archive: &Path, target: &Path, opts: &ExtractOptions) -> Result<Staged> {
    let mut file = fs_err::File::open(archive)?;
    let mut magic = [0u8; 6];
    let n = read_up_to(&mut file, &mut magic)?;
    let magic = &magic[..n];
    let file = fs_err::File::open(archive)?;
    let reader = BufReader::with_capacity(1 << 20, file);
    let decoder: Box<dyn Read> = if magic.starts_with(GZIP_MAGIC) {
        Box::new(flate2::read::MultiGzDecoder::new(reader))
    } else if magic.starts_with(XZ_MAGIC) {
        Box::new(crate::xz::decoder(reader))
    } else {
        return Err(Error::integrity(format!(
            "{} is neither a gzip nor an xz archive",
            archive.display()
        ))
        .with_hint("remove the file and download it again"));
    };

    if let Some(parent) = target.parent().filter(|p| !p.as_os_str().is_empty()) {
        fs_err::create_dir_all(parent)?;
    }
    // Leftovers of extractions whose process died are recognised by name and removed; a
    // failure to remove one does not stop this extraction (its staging name is unique).
    let _ = crate::fsutil::clean_staging(target, "extract");
    let root = crate::fsutil::staging_path(target, "extract")?;
    fs_err::create_dir(&root)?;
    let inner = match &opts.top_dir {
        Some(top) => root.join(top),
        None => root.clone(),
    };
    // From here on, dropping `staged` (on any error) removes the staging directory.
    let staged = Staged {
        root: root.clone(),
        inner,
        published: false,
    };
    Extractor {
        archive,
        root: &root,
        opts,
        dir_modes: Vec::new(),
        saw_top: false,
    }
    .run(decoder)?;
    Ok(staged)
}

fn read_up_to(r: &mut impl Read, buf: &mut [u8]) -> std::io::Result<usize> {
    let mut n = 0;
    while n < buf.len() {
        match r.read(&mut buf[n..])? {
            0 => break,
            k => n += k,
        }
    }
    Ok(n)
}

struct Extractor<'a> {
    archive: &'a Path,
    root: &'a Path,
    opts: &'a ExtractOptions,
    /// Directory modes applied at the end, so read-only directories can still be filled.
    dir_modes: Vec<(PathBuf, u32)>,
    saw_top: bool,
}

impl Extractor<'_> {
    fn refuse(&self, entry: &str, why: &str) -> Error {
        Error::integrity(format!(
            "unsafe archive {}: entry {entry:?} {why}",
            self.archive.display()
        ))
        .with_hint(
            "the archive is damaged or not the vendor's release; remove it, check the source \
             and download it again",
        )
    }

    fn damaged(&self, e: std::io::Error) -> Error {
        Error::integrity(format!(
            "could not read archive {}: {e}",
            self.archive.display()
        ))
        .with_hint("the file is truncated or damaged; remove it and download it again")
    }

    fn run(mut self, decoder: Box<dyn Read>) -> Result<()> {
        let mut ar = tar::Archive::new(decoder);
        ar.set_preserve_permissions(false);
        ar.set_preserve_ownerships(false);
        ar.set_unpack_xattrs(false);
        let entries = ar.entries().map_err(|e| self.damaged(e))?;
        for entry in entries {
            crate::interrupt::check()?;
            let mut entry = entry.map_err(|e| self.damaged(e))?;
            self.one(&mut entry)?;
        }
        if let Some(top) = &self.opts.top_dir {
            let top_path = self.root.join(top);
            let is_dir = top_path
                .symlink_metadata()
                .map(|m| m.is_dir())
                .unwrap_or(false);
            if !self.saw_top || !is_dir {
                return Err(Error::integrity(format!(
                    "archive {} does not contain the expected top directory {top:?}",
                    self.archive.display()
                ))
                .with_hint("check that the file is the release archive you asked for"));
            }
        }
        self.recheck_symlinks(self.root, &[])?;
        // Deepest first, so a read-only parent does not stop us from setting its children.
        self.dir_modes
            .sort_by_key(|d| std::cmp::Reverse(d.0.components().count()));
        for (path, mode) in &self.dir_modes {
            fs_err::set_permissions(path, std::fs::Permissions::from_mode(*mode))?;
        }
        Ok(())
    }

    fn one<R: Read>(&mut self, entry: &mut tar::Entry<'_, R>) -> Result<()> {
        let raw = String::from_utf8_lossy(&entry.path_bytes()).into_owned();
        let kind = entry.header().entry_type();
        match kind {
            EntryType::XGlobalHeader | EntryType::XHeader => return Ok(()),
            EntryType::Regular
            | EntryType::Continuous
            | EntryType::Directory
            | EntryType::Symlink
            | EntryType::Link => {}
            EntryType::Char | EntryType::Block => {
                return Err(self.refuse(&raw, "is a device"));
            }
            EntryType::Fifo => return Err(self.refuse(&raw, "is a FIFO")),
            other => {
                return Err(self.refuse(&raw, &format!("has an unsupported type ({other:?})")));
            }
        }
        let path = entry.path().map_err(|e| self.damaged(e))?.into_owned();
        let Some(parts) = self.normal_parts(&raw, &path)? else {
            // "./" or "": the archive root itself.
            if kind == EntryType::Directory && self.opts.top_dir.is_none() {
                return Ok(());
            }
            return Err(self.refuse(&raw, "has an empty name"));
        };
        self.check_top(&raw, &parts, kind)?;
        // Never write through a symlink: every parent that exists must be a real directory.
        let mut cur = self.root.to_path_buf();
        for p in &parts[..parts.len() - 1] {
            cur.push(p);
            match cur.symlink_metadata() {
                Ok(m) if m.file_type().is_symlink() => {
                    return Err(self.refuse(&raw, "would be written through a symbolic link"));
                }
                Ok(m) if !m.is_dir() => {
                    return Err(self.refuse(&raw, "lies under an entry that is not a directory"));
                }
                _ => {}
            }
        }
        let dst = self.root.join(parts.iter().collect::<PathBuf>());
        if let Ok(existing) = dst.symlink_metadata() {
            let ok = match kind {
                EntryType::Directory => existing.is_dir(),
                EntryType::Regular | EntryType::Continuous => existing.is_file(),
                _ => false,
            };
            if !ok {
                return Err(self.refuse(&raw, "collides with an earlier entry of another kind"));
            }
        }
        match kind {
            EntryType::Symlink => {
                if self.opts.forbid_symlinks {
                    return Err(self.refuse(&raw, "is a symbolic link (none are expected)"));
                }
                let target = entry
                    .link_name()
                    .map_err(|e| self.damaged(e))?
                    .map(|t| t.into_owned())
                    .unwrap_or_default();
                self.check_symlink(&raw, &parts[..parts.len() - 1], &target)?;
            }
            EntryType::Link => {
                let target = entry
                    .link_name()
                    .map_err(|e| self.damaged(e))?
                    .map(|t| t.into_owned())
                    .unwrap_or_default();
                self.check_hardlink(&raw, &target)?;
            }
            _ => {}
        }
        let unpacked = entry
            .unpack_in(self.root)
            .map_err(|e| Error::failed(format!("could not extract {raw:?}: {e}")))?;
        if !unpacked {
            return Err(self.refuse(&raw, "was skipped by the tar reader"));
        }
        if kind == EntryType::Directory {
            let mode = entry.header().mode().unwrap_or(0o755) & 0o777;
            // Keep it fillable until the end; the recorded mode is applied then.
            fs_err::set_permissions(&dst, std::fs::Permissions::from_mode(mode | 0o700))?;
            self.dir_modes.push((dst, mode));
        }
        Ok(())
    }

    /// The entry's path as plain names. Absolute paths and `..` are refused; `.` is dropped.
    fn normal_parts(&self, raw: &str, path: &Path) -> Result<Option<Vec<OsString>>> {
        let mut parts = Vec::new();
        for c in path.components() {
            match c {
                Component::Normal(n) => parts.push(n.to_os_string()),
                Component::CurDir => {}
                Component::RootDir | Component::Prefix(_) => {
                    return Err(self.refuse(raw, "has an absolute path"));
                }
                Component::ParentDir => {
                    return Err(self.refuse(raw, "contains a '..' component"));
                }
            }
        }
        Ok(if parts.is_empty() { None } else { Some(parts) })
    }

    fn check_top(&mut self, raw: &str, parts: &[OsString], kind: EntryType) -> Result<()> {
        let Some(top) = &self.opts.top_dir else {
            return Ok(());
        };
        if parts[0] != OsString::from(top) {
            return Err(self.refuse(
                raw,
                &format!("is outside the expected single top directory {top:?}"),
            ));
        }
        if parts.len() == 1 && kind != EntryType::Directory {
            return Err(self.refuse(raw, "should be the top directory but is not a directory"));
        }
        self.saw_top = true;
        Ok(())
    }

    fn check_symlink(&self, raw: &str, dir: &[OsString], target: &Path) -> Result<()> {
        if target.as_os_str().is_empty() {
            return Err(self.refuse(raw, "is a symbolic link with an empty target"));
        }
        if target.is_absolute() {
            return Err(self.refuse(
                raw,
                &format!(
                    "is a symbolic link to an absolute path ({})",
                    target.display()
                ),
            ));
        }
        if resolve_confined(self.root, dir.to_vec(), target, 0).is_none() {
            return Err(self.refuse(
                raw,
                &format!(
                    "is a symbolic link pointing outside the archive ({})",
                    target.display()
                ),
            ));
        }
        Ok(())
    }

    fn check_hardlink(&self, raw: &str, target: &Path) -> Result<()> {
        let mut parts = Vec::new();
        for c in target.components() {
            match c {
                Component::Normal(n) => parts.push(n.to_os_string()),
                Component::CurDir => {}
                _ => {
                    return Err(self.refuse(
                        raw,
                        &format!("is a hard link outside the archive ({})", target.display()),
                    ))
                }
            }
        }
        if parts.is_empty() {
            return Err(self.refuse(raw, "is a hard link with an empty target"));
        }
        if let Some(top) = &self.opts.top_dir {
            if parts[0] != OsString::from(top) {
                return Err(self.refuse(
                    raw,
                    &format!(
                        "is a hard link outside the top directory ({})",
                        target.display()
                    ),
                ));
            }
        }
        let mut cur = self.root.to_path_buf();
        for (i, p) in parts.iter().enumerate() {
            cur.push(p);
            let Ok(m) = cur.symlink_metadata() else {
                return Err(self.refuse(
                    raw,
                    &format!(
                        "is a hard link to {}, which is not an earlier file of the archive",
                        target.display()
                    ),
                ));
            };
            let last = i + 1 == parts.len();
            if (last && !m.is_file()) || (!last && !m.is_dir()) {
                return Err(self.refuse(
                    raw,
                    &format!(
                        "is a hard link to {}, which is not a regular file of the archive",
                        target.display()
                    ),
                ));
            }
        }
        Ok(())
    }

    /// Checks every symlink of the finished tree again: a later entry may have changed what an
    /// earlier link resolves to.
    fn recheck_symlinks(&self, dir: &Path, rel: &[OsString]) -> Result<()> {
        let rd = fs_err::read_dir(dir)?;
        for e in rd {
            let e = e?;
            let ft = e.file_type()?;
            let mut here = rel.to_vec();
            here.push(e.file_name());
            if ft.is_symlink() {
                let target = fs_err::read_link(e.path())?;
                let name = here
                    .iter()
                    .map(|s| s.to_string_lossy())
                    .collect::<Vec<_>>()
                    .join("/");
                self.check_symlink(&name, rel, &target)?;
            } else if ft.is_dir() {
                self.recheck_symlinks(&e.path(), &here)?;
            }
        }
        Ok(())
    }
}

/// Resolves `target` (relative to the directory `start` inside `root`) the way the kernel
/// would, following symlinks met on the way, but inside `root` only. `None` when the path
/// leaves `root`, is absolute, or loops. Missing components resolve lexically.
fn resolve_confined(
    root: &Path,
    mut stack: Vec<OsString>,
    target: &Path,
    depth: u32,
) -> Option<Vec<OsString>> {
    if depth > 40 || target.is_absolute() {
        return None;
    }
    for c in target.components() {
        match c {
            Component::CurDir => {}
            Component::ParentDir => {
                stack.pop()?;
            }
            Component::Normal(n) => {
                stack.push(n.to_os_string());
                let here = root.join(stack.iter().collect::<PathBuf>());
                if let Ok(m) = here.symlink_metadata() {
                    if m.file_type().is_symlink() {
                        let link = std::fs::read_link(&here).ok()?;
                        stack.pop();
                        stack = resolve_confined(root, stack, &link, depth + 1)?;
                    }
                }
            }
            Component::RootDir | Component::Prefix(_) => return None,
        }
    }
    Some(stack)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::error::ErrorKind;
    use std::io::Write;

    /// A tar builder for unit tests (the testbed's `Tree` is for integration tests).
    struct T(tar::Builder<Vec<u8>>);

    impl T {
        fn new() -> T {
            T(tar::Builder::new(Vec::new()))
        }
        fn header(path: &str, kind: EntryType, mode: u32, size: u64) -> tar::Header {
            let mut h = tar::Header::new_gnu();
            raw_name(&mut h, path);
            h.set_entry_type(kind);
            h.set_mode(mode);
            h.set_size(size);
            h.set_mtime(1_700_000_000);
            h
        }
        fn file(mut self, path: &str, body: &[u8], mode: u32) -> T {
            let mut h = Self::header(path, EntryType::Regular, mode, body.len() as u64);
            h.set_cksum();
            self.0.append(&h, body).unwrap();
            self
        }
        fn dir(mut self, path: &str, mode: u32) -> T {
            let mut h = Self::header(path, EntryType::Directory, mode, 0);
            h.set_cksum();
            self.0.append(&h, std::io::empty()).unwrap();
            self
        }
        fn link(mut self, kind: EntryType, path: &str, target: &str) -> T {
            let mut h = Self::header(path, kind, 0o777, 0);
            let bytes = target.as_bytes();
            let old = h.as_old_mut();
            old.linkname[..bytes.len()].copy_from_slice(bytes);
            h.set_cksum();
            self.0.append(&h, std::io::empty()).unwrap();
            self
        }
        fn special(mut self, kind: EntryType, path: &str) -> T {
            let mut h = Self::header(path, kind, 0o644, 0);
            h.set_cksum();
            self.0.append(&h, std::io::empty()).unwrap();
            self
        }
        fn gz(self) -> Vec<u8> {
            let tar = self.0.into_inner().unwrap();
            let mut e = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
            e.write_all(&tar).unwrap();
            e.finish().unwrap()
        }
        fn xz(self) -> Vec<u8> {
            let tar = self.0.into_inner().unwrap();
            let mut e = crate::xz::encoder(Vec::new(), 1);
            e.write_all(&tar).unwrap();
            e.finish().unwrap()
        }
    }

    /// Writes the name bytes verbatim (the safe setters refuse `..` and absolute paths).
    fn raw_name(h: &mut tar::Header, path: &str) {
        let old = h.as_old_mut();
        old.name = [0; 100];
        old.name[..path.len()].copy_from_slice(path.as_bytes());
    }

    struct Case {
        dir: tempfile::TempDir,
        archive: PathBuf,
        target: PathBuf,
    }

    fn case(bytes: Vec<u8>) -> Case {
        let dir = tempfile::tempdir().unwrap();
        let archive = dir.path().join("a.tar.gz");
        std::fs::write(&archive, bytes).unwrap();
        let target = dir.path().join("out").join("tree");
        Case {
            dir,
            archive,
            target,
        }
    }

    /// Everything beside the target: must be empty after a refused archive.
    fn beside(c: &Case) -> Vec<String> {
        match std::fs::read_dir(c.target.parent().unwrap()) {
            Ok(rd) => rd
                .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
                .collect(),
            Err(_) => Vec::new(),
        }
    }

    fn refused(bytes: Vec<u8>, opts: &ExtractOptions, needle: &str) {
        let c = case(bytes);
        let e = extract_staged(&c.archive, &c.target, opts).unwrap_err();
        assert_eq!(e.kind, ErrorKind::Integrity, "{}", e.message);
        assert!(
            e.message.contains(needle),
            "{needle:?} not in {}",
            e.message
        );
        assert!(e.hint.is_some());
        assert_eq!(beside(&c), Vec::<String>::new());
        // Nothing escaped next to the archive either.
        let names: Vec<_> = std::fs::read_dir(c.dir.path())
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        for n in names {
            assert!(n == "a.tar.gz" || n == "out", "unexpected {n}");
        }
    }

    fn none() -> ExtractOptions {
        ExtractOptions::default()
    }

    fn good() -> T {
        T::new()
            .dir("pkg/", 0o755)
            .dir("pkg/bin/", 0o755)
            .file("pkg/bin/tool", b"#!/bin/sh\necho hi\n", 0o755)
            .file("pkg/README", b"readme", 0o644)
            .link(EntryType::Symlink, "pkg/bin/readme", "../README")
            .link(EntryType::Link, "pkg/bin/tool2", "pkg/bin/tool")
            .dir("pkg/ro/", 0o555)
            .file("pkg/ro/f", b"f", 0o444)
    }

    #[test]
    fn extracts_gzip_and_xz_keeping_modes_and_links() {
        for bytes in [good().gz(), good().xz()] {
            let c = case(bytes);
            let opts = ExtractOptions {
                top_dir: Some("pkg".into()),
                forbid_symlinks: false,
            };
            let staged = extract_staged(&c.archive, &c.target, &opts).unwrap();
            let p = staged.path().to_path_buf();
            assert!(p.ends_with("pkg"));
            let mode = |rel: &str| {
                std::fs::symlink_metadata(p.join(rel))
                    .unwrap()
                    .permissions()
                    .mode()
                    & 0o777
            };
            assert_eq!(mode("bin/tool"), 0o755);
            assert_eq!(mode("README"), 0o644);
            assert_eq!(mode("ro"), 0o555);
            assert_eq!(
                std::fs::read_link(p.join("bin/readme")).unwrap(),
                Path::new("../README")
            );
            assert_eq!(
                std::fs::read(p.join("bin/tool2")).unwrap(),
                b"#!/bin/sh\necho hi\n"
            );
            let out = staged.publish(&c.target).unwrap();
            assert_eq!(out, c.target);
            assert!(c.target.join("bin/tool").is_file());
            assert_eq!(beside(&c), vec!["tree".to_string()]);
            make_writable(&c.target);
        }
    }

    #[test]
    fn without_top_dir_the_staging_root_is_the_archive_root() {
        let c = case(good().gz());
        let staged = extract_staged(&c.archive, &c.target, &none()).unwrap();
        assert!(staged.path().join("pkg/bin/tool").is_file());
        staged.publish(&c.target).unwrap();
        assert!(c.target.join("pkg/README").is_file());
        make_writable(&c.target);
    }

    #[test]
    fn dropping_without_publish_removes_staging() {
        let c = case(good().gz());
        let staged = extract_staged(&c.archive, &c.target, &none()).unwrap();
        assert_eq!(beside(&c).len(), 1);
        drop(staged);
        assert_eq!(beside(&c), Vec::<String>::new());
    }

    #[test]
    fn leftovers_of_dead_extractions_are_cleaned() {
        let c = case(good().gz());
        let parent = c.target.parent().unwrap();
        let dead = parent.join(".tree.extract-999999999-1");
        std::fs::create_dir_all(dead.join("pkg")).unwrap();
        let staged = extract_staged(&c.archive, &c.target, &none()).unwrap();
        assert!(!dead.exists());
        assert_eq!(beside(&c).len(), 1);
        drop(staged);
    }

    #[test]
    fn publish_refuses_an_existing_target() {
        let c = case(good().gz());
        std::fs::create_dir_all(&c.target).unwrap();
        let staged = extract_staged(&c.archive, &c.target, &none()).unwrap();
        assert!(staged.publish(&c.target).is_err());
        assert_eq!(beside(&c), vec!["tree".to_string()]);
    }

    #[test]
    fn unsafe_paths_are_refused() {
        refused(
            T::new().file("/etc/evil", b"x", 0o644).gz(),
            &none(),
            "absolute",
        );
        refused(T::new().file("../evil", b"x", 0o644).gz(), &none(), "'..'");
        refused(
            T::new().file("a/../../evil", b"x", 0o644).gz(),
            &none(),
            "'..'",
        );
        refused(
            T::new()
                .file("ok", b"x", 0o644)
                .file("a/../b", b"x", 0o644)
                .xz(),
            &none(),
            "'..'",
        );
    }

    #[test]
    fn links_escaping_the_tree_are_refused() {
        refused(
            T::new().link(EntryType::Symlink, "l", "/etc/passwd").gz(),
            &none(),
            "absolute",
        );
        refused(
            T::new().link(EntryType::Symlink, "l", "../outside").gz(),
            &none(),
            "outside",
        );
        refused(
            T::new()
                .dir("a/", 0o755)
                .dir("a/b/", 0o755)
                .link(EntryType::Symlink, "a/b/l", "../../..")
                .gz(),
            &none(),
            "outside",
        );
        // A chain: each link is inside on its own, but the second escapes through the first.
        refused(
            T::new()
                .dir("a/", 0o755)
                .dir("a/b/", 0o755)
                .link(EntryType::Symlink, "a/b/up", "../..")
                .link(EntryType::Symlink, "esc", "a/b/up/..")
                .gz(),
            &none(),
            "outside",
        );
        // A link made before the link it goes through: caught by the final check.
        refused(
            T::new()
                .link(EntryType::Symlink, "late", "b/..")
                .link(EntryType::Symlink, "b", ".")
                .gz(),
            &none(),
            "outside",
        );
        // Writing through a symlink (even one pointing inside) is refused.
        refused(
            T::new()
                .dir("d/", 0o755)
                .link(EntryType::Symlink, "l", "d")
                .file("l/x", b"x", 0o644)
                .gz(),
            &none(),
            "through a symbolic link",
        );
        // Replacing a file by a symlink, or a symlink by a file.
        refused(
            T::new()
                .file("f", b"x", 0o644)
                .link(EntryType::Symlink, "f", "g")
                .gz(),
            &none(),
            "collides",
        );
        refused(
            T::new()
                .link(EntryType::Symlink, "f", "g")
                .file("f", b"x", 0o644)
                .gz(),
            &none(),
            "collides",
        );
        refused(
            T::new().link(EntryType::Symlink, "l", "x").gz(),
            &ExtractOptions {
                top_dir: None,
                forbid_symlinks: true,
            },
            "none are expected",
        );
    }

    #[test]
    fn hard_links_must_point_at_earlier_files_inside() {
        refused(
            T::new().link(EntryType::Link, "h", "/etc/passwd").gz(),
            &none(),
            "hard link outside",
        );
        refused(
            T::new().link(EntryType::Link, "h", "../x").gz(),
            &none(),
            "hard link outside",
        );
        refused(
            T::new().link(EntryType::Link, "h", "missing").gz(),
            &none(),
            "not an earlier file",
        );
        refused(
            T::new()
                .dir("d/", 0o755)
                .link(EntryType::Link, "h", "d")
                .gz(),
            &none(),
            "not a regular file",
        );
        refused(
            T::new()
                .file("f", b"x", 0o644)
                .link(EntryType::Symlink, "s", "f")
                .link(EntryType::Link, "h", "s")
                .gz(),
            &none(),
            "not a regular file",
        );
    }

    #[test]
    fn devices_and_fifos_are_refused() {
        refused(
            T::new().special(EntryType::Char, "c").gz(),
            &none(),
            "device",
        );
        refused(
            T::new().special(EntryType::Block, "b").gz(),
            &none(),
            "device",
        );
        refused(T::new().special(EntryType::Fifo, "p").gz(), &none(), "FIFO");
    }

    #[test]
    fn top_dir_is_enforced() {
        let top = ExtractOptions {
            top_dir: Some("pkg".into()),
            forbid_symlinks: false,
        };
        refused(
            T::new()
                .dir("pkg/", 0o755)
                .file("pkg/a", b"a", 0o644)
                .file("other", b"x", 0o644)
                .gz(),
            &top,
            "single top directory",
        );
        refused(
            T::new().file("pkg", b"x", 0o644).gz(),
            &top,
            "not a directory",
        );
        refused(
            T::new().file("x/a", b"a", 0o644).gz(),
            &top,
            "single top directory",
        );
        refused(T::new().gz(), &top, "top directory");
        refused(
            T::new()
                .dir("pkg/", 0o755)
                .file("pkg/a", b"a", 0o644)
                .link(EntryType::Link, "pkg/h", "a")
                .gz(),
            &top,
            "hard link outside the top directory",
        );
    }

    #[test]
    fn garbage_and_truncated_archives_are_integrity_errors() {
        refused(b"not an archive at all".to_vec(), &none(), "neither");
        let mut bytes = good().gz();
        bytes.truncate(bytes.len() / 2);
        let c = case(bytes);
        let e = extract_staged(&c.archive, &c.target, &none()).unwrap_err();
        assert_eq!(e.kind, ErrorKind::Integrity, "{}", e.message);
        assert_eq!(beside(&c), Vec::<String>::new());
    }

    #[test]
    fn confined_resolution() {
        let d = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(d.path().join("a/b")).unwrap();
        std::os::unix::fs::symlink("../..", d.path().join("a/b/up")).unwrap();
        std::os::unix::fs::symlink("loop", d.path().join("loop")).unwrap();
        let r = |start: &[&str], t: &str| {
            resolve_confined(
                d.path(),
                start.iter().map(OsString::from).collect(),
                Path::new(t),
                0,
            )
        };
        assert_eq!(r(&["a", "b"], "up"), Some(vec![]));
        assert_eq!(r(&[], "a/b/up/a"), Some(vec![OsString::from("a")]));
        assert_eq!(r(&[], "a/b/up/.."), None);
        assert_eq!(r(&[], "missing/../a"), Some(vec![OsString::from("a")]));
        assert_eq!(r(&[], "loop"), None);
        assert_eq!(r(&[], "/x"), None);
    }
}
