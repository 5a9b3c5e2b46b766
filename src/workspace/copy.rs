//! `copy`: a full, independent copy of a workspace's `data/` (no links, no reflinks, special
//! files refused) into a new workspace bound to another installed version, verified by file
//! count, byte count and content digest, staged then published.

use std::fs;
use std::io::{Read, Write};
use std::path::Path;

use serde::Serialize;

use crate::context::Ctx;
use crate::error::{Error, Result};
use crate::fsutil;
use crate::hash;
use crate::ids::validate_id;
use crate::install::{self, Installation};
use crate::lock::LockOptions;
use crate::output::Event;
use crate::platform::Platform;
use crate::product::Product;
use crate::publish;

use super::prepare::create_layout;
use super::store::{load, lock_workspace, refuse_live_server, sweep_leftovers};
use super::{workspace_dir, Provenance, Workspace, WorkspaceManifest};

/// What `copy` was asked for.
#[derive(Debug, Clone)]
pub struct CopyRequest {
    pub source_id: String,
    pub id: String,
    /// Raw `--version` of the copy (must be installed).
    pub version: String,
    /// Ports of the copy (default: the source's).
    pub http_port: Option<u16>,
}

/// Copies workspace `source_id` to a new workspace bound to another installed version.
pub fn copy(
    ctx: &Ctx,
    product: &dyn Product,
    req: &CopyRequest,
    lock_opts: &LockOptions,
) -> Result<Workspace> {
    validate_id("--source-database-id", &req.source_id)?;
    validate_id("--database-id", &req.id)?;
    if req.source_id == req.id {
        return Err(
            Error::invalid("--source-database-id and --database-id must differ")
                .with_hint("name the new workspace with --database-id"),
        );
    }
    let version = product.normalize_version(&req.version)?;
    let dest = workspace_dir(&ctx.root, product, &req.id);
    if fs::symlink_metadata(&dest).is_ok() {
        return Err(Error::invalid(format!(
            "workspace {} already exists ({})",
            req.id,
            dest.display()
        ))
        .with_hint("choose a new --database-id for the copy"));
    }
    let source = load(&ctx.root, product, &req.source_id)?;
    // The data of an object-storage workspace is in its bucket, not in its directory: a copy
    // would be a workspace without its data.
    if let Some(l) = product.object_location(&req.source_id, &source.manifest.extra)? {
        return Err(Error::invalid(format!(
            "workspace {} keeps its data in S3 (bucket {}, prefix {}): copy works on local storage only",
            req.source_id, l.bucket, l.prefix
        ))
        .with_hint(format!(
            "prepare a new workspace and load it (`{} prepare --database-id NEW ...`)",
            product.cli()
        )));
    }
    let platform = Platform::host()?;
    let inst = install::open(&ctx.root, product, &version, &platform)?.ok_or_else(|| {
        Error::invalid(format!(
            "{} {version} is not installed",
            product.display_name()
        ))
        .with_hint(product.install_command(&version, false))
    })?;
    if inst.manifest.platform != source.manifest.platform {
        return Err(Error::invalid(format!(
            "workspace {} is for {}, the {version} installation for {}",
            req.source_id, source.manifest.platform, inst.manifest.platform
        ))
        .with_hint("copy on a machine of the source's platform"));
    }
    if let Some(p) = req.http_port {
        if p == 0 {
            return Err(Error::invalid("--http-port must be between 1 and 65535")
                .with_hint("pick a free port"));
        }
    }
    install::verify(product, &inst)?;

    let _guard = lock_workspace(ctx, product, &source.dir, &req.source_id, lock_opts)?;
    let source = load(&ctx.root, product, &req.source_id)?;
    refuse_live_server(&source.dir)?;
    let manifest_bytes = fs_err::read(source.manifest_path())?;
    sweep_leftovers(ctx, product);
    let staging = fsutil::staging_path(&dest, "copy")?;
    fs_err::create_dir_all(&staging)?;
    let r = copy_into(
        ctx,
        product,
        req,
        &source,
        &inst,
        &version,
        &manifest_bytes,
        &staging,
        &dest,
    );
    if r.is_err() {
        let _ = fs::remove_dir_all(&staging);
    }
    r
}

#[allow(clippy::too_many_arguments)]
fn copy_into(
    ctx: &Ctx,
    product: &dyn Product,
    req: &CopyRequest,
    source: &Workspace,
    inst: &Installation,
    version: &str,
    source_manifest: &[u8],
    staging: &Path,
    dest: &Path,
) -> Result<Workspace> {
    let src_data = source.data_dir();
    if !src_data.is_dir() {
        return Err(
            Error::integrity(format!("{} is missing", src_data.display()))
                .with_hint("the source lost its data; nothing to copy"),
        );
    }
    ctx.reporter.event(&Event::CopyingWorkspace {
        from: src_data.clone(),
        id: req.id.to_string(),
    });
    let copied = copy_tree(&src_data, &staging.join("data"))?;
    let check = data_digest(&staging.join("data"))?;
    if check != copied {
        return Err(Error::integrity(format!(
            "the copy of {} does not match its source ({} files, {} bytes, digest {} vs {} files, {} bytes, digest {})",
            src_data.display(),
            check.files,
            check.bytes,
            check.content_sha256,
            copied.files,
            copied.bytes,
            copied.content_sha256
        ))
        .with_hint("nothing was published; check the disk and run the copy again"));
    }
    let now = crate::manifest::now_rfc3339();
    let ports = match req.http_port {
        Some(p) => product.default_ports(p)?,
        None => source.manifest.ports.clone(),
    };
    let mut extra = source.manifest.extra.clone();
    for (k, v) in product.new_workspace_fields(&req.id) {
        extra.insert(k, v);
    }
    let m = WorkspaceManifest {
        database_id: req.id.clone(),
        product: product.name().to_string(),
        variant: product.variant().map(str::to_string),
        version: version.to_string(),
        version_source: install::source::EXPLICIT.to_string(),
        platform: inst.manifest.platform.clone(),
        installation_path: inst.dir.clone(),
        binary_sha256: inst.manifest.binary_sha256.clone(),
        database: source.manifest.database.clone(),
        ports,
        config_sha256: None,
        binding: source.manifest.binding.clone(),
        data_state: source.manifest.data_state.clone(),
        copied_from: Some(Provenance {
            database_id: source.id().to_string(),
            database_path: source.dir.clone(),
            version: source.manifest.version.clone(),
            binary_sha256: source.manifest.binary_sha256.clone(),
            manifest_sha256: hash::sha256_hex(source_manifest),
            copied_at: now.clone(),
            method: "full".into(),
            files: copied.files,
            bytes: copied.bytes,
            content_sha256: copied.content_sha256.clone(),
        }),
        // A copy is of local files; a workspace on object storage is not copied.
        object_store_claimed_at: None,
        created_at: now.clone(),
        updated_at: now,
        tool_version: crate::VERSION.to_string(),
        extra,
    };
    let mut ws = Workspace {
        dir: dest.to_path_buf(),
        manifest: m,
    };
    create_layout(product, &mut ws, staging)?;
    crate::manifest::write(&staging.join("manifest.json"), &ws.manifest)?;
    crate::interrupt::check()?;
    publish::rename_noreplace(staging, dest)?;
    Ok(ws)
}

/// File count, byte count and content digest of a `data/` tree (directories included in the
/// digest by path; symlinks and special files refused).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct DataDigest {
    pub files: u64,
    pub dirs: u64,
    pub bytes: u64,
    pub content_sha256: String,
}

/// Sorted relative paths of every entry under `root`; refuses links and special files.
fn walk(root: &Path) -> Result<Vec<(String, fs::Metadata)>> {
    let mut out = Vec::new();
    for e in walkdir::WalkDir::new(root).min_depth(1) {
        let e = e.map_err(|err| {
            let at = err.path().unwrap_or(root).to_path_buf();
            Error::io("list", &at, err.into())
        })?;
        let meta = fs_err::symlink_metadata(e.path())?;
        let ft = meta.file_type();
        if ft.is_symlink() || !(ft.is_file() || ft.is_dir()) {
            return Err(Error::integrity(format!(
                "{} is a {}; a workspace's data holds only files and directories",
                e.path().display(),
                if ft.is_symlink() {
                    "symbolic link"
                } else {
                    "special file"
                }
            ))
            .with_hint("remove it from the source workspace's data/ and copy again"));
        }
        let rel = e.path().strip_prefix(root).unwrap_or(e.path());
        let name = rel.to_str().ok_or_else(|| {
            Error::integrity(format!("{} has a non-UTF-8 name", e.path().display()))
        })?;
        out.push((name.to_string(), meta));
    }
    out.sort_by(|a, b| a.0.cmp(&b.0));
    Ok(out)
}

fn digest_entry(h: &mut hash::Sha256, rel: &str, kind: &str, size: u64, sha: &str) {
    h.update(kind.as_bytes());
    h.update(b"\0");
    h.update(rel.as_bytes());
    h.update(b"\0");
    h.update(size.to_string().as_bytes());
    h.update(b"\0");
    h.update(sha.as_bytes());
    h.update(b"\n");
}

/// The [`DataDigest`] of a tree, reading every file.
pub fn data_digest(root: &Path) -> Result<DataDigest> {
    let mut h = hash::Sha256::new();
    let (mut files, mut dirs, mut bytes) = (0, 0, 0);
    for (rel, meta) in walk(root)? {
        if meta.is_dir() {
            dirs += 1;
            digest_entry(&mut h, &rel, "dir", 0, "");
        } else {
            let (sha, size) = hash::sha256_file(&root.join(&rel), &crate::output::NoProgress)?;
            files += 1;
            bytes += size;
            digest_entry(&mut h, &rel, "file", size, &sha);
        }
    }
    Ok(DataDigest {
        files,
        dirs,
        bytes,
        content_sha256: h.finish_hex(),
    })
}

/// Copies `src` to the new directory `dst` byte by byte (explicit reads and writes: no hard
/// links, no reflinks, no copy offload), keeping permission bits, fsyncing every file and
/// directory. Returns the digest of what was read.
fn copy_tree(src: &Path, dst: &Path) -> Result<DataDigest> {
    use std::os::unix::fs::PermissionsExt;
    fs_err::create_dir(dst)?;
    let entries = walk(src)?;
    let mut h = hash::Sha256::new();
    let (mut files, mut dirs, mut bytes) = (0, 0, 0);
    let mut buf = vec![0u8; 1 << 20];
    let mut made_dirs = vec![dst.to_path_buf()];
    for (rel, meta) in &entries {
        crate::interrupt::check()?;
        let to = dst.join(rel);
        if meta.is_dir() {
            fs_err::create_dir(&to)?;
            dirs += 1;
            digest_entry(&mut h, rel, "dir", 0, "");
            made_dirs.push(to);
            continue;
        }
        let from = src.join(rel);
        let mut r = fs_err::File::open(&from)?;
        let mut w = fs_err::OpenOptions::new()
            .write(true)
            .create_new(true)
            .open(&to)?;
        let mut fh = hash::Sha256::new();
        let mut size = 0u64;
        loop {
            let n = r.read(&mut buf)?;
            if n == 0 {
                break;
            }
            fh.update(&buf[..n]);
            w.write_all(&buf[..n])?;
            size += n as u64;
        }
        w.sync_all()?;
        fs_err::set_permissions(
            &to,
            fs::Permissions::from_mode(meta.permissions().mode() & 0o7777),
        )?;
        files += 1;
        bytes += size;
        digest_entry(&mut h, rel, "file", size, &fh.finish_hex());
    }
    for (rel, meta) in entries.iter().filter(|(_, m)| m.is_dir()) {
        let to = dst.join(rel);
        let _ = fs::set_permissions(
            &to,
            fs::Permissions::from_mode(meta.permissions().mode() & 0o7777),
        );
    }
    for d in made_dirs {
        fsutil::sync_dir(&d)?;
    }
    Ok(DataDigest {
        files,
        dirs,
        bytes,
        content_sha256: h.finish_hex(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::{MetadataExt, PermissionsExt};

    #[test]
    fn copy_tree_is_an_independent_byte_copy_with_the_same_digest() {
        let d = tempfile::tempdir().unwrap();
        let src = d.path().join("src");
        fs::create_dir_all(src.join("a/b")).unwrap();
        fs::create_dir_all(src.join("empty")).unwrap();
        fs::write(src.join("a/b/f"), vec![7u8; 3 << 20]).unwrap();
        fs::write(src.join("top"), "x").unwrap();
        fs::set_permissions(src.join("top"), fs::Permissions::from_mode(0o600)).unwrap();
        let dst = d.path().join("dst");
        let copied = copy_tree(&src, &dst).unwrap();
        assert_eq!(copied.files, 2);
        assert_eq!(copied.dirs, 3);
        assert_eq!(copied.bytes, (3 << 20) + 1);
        assert_eq!(data_digest(&dst).unwrap(), copied);
        assert_eq!(data_digest(&src).unwrap(), copied);
        let (a, b) = (
            fs::metadata(src.join("top")).unwrap(),
            fs::metadata(dst.join("top")).unwrap(),
        );
        assert_ne!(a.ino(), b.ino());
        assert_eq!(b.mode() & 0o777, 0o600);
        // Content matters, not just sizes.
        fs::write(dst.join("top"), "y").unwrap();
        assert_ne!(
            data_digest(&dst).unwrap().content_sha256,
            copied.content_sha256
        );
    }

    #[test]
    fn special_files_are_refused() {
        let d = tempfile::tempdir().unwrap();
        let src = d.path().join("src");
        fs::create_dir_all(&src).unwrap();
        nix::unistd::mkfifo(&src.join("fifo"), nix::sys::stat::Mode::S_IRWXU).unwrap();
        let e = copy_tree(&src, &d.path().join("dst")).unwrap_err();
        assert_eq!(e.exit_code(), 4);
        assert!(e.message.contains("special file"), "{}", e.message);
    }
}
