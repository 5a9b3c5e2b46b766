//! `[storage] type = "S3"`: the region files (SSTs, index files, manifests) live in the bucket
//! under `<root>/data/greptime/<db>/<table_id>/<table_id>_<region:010>/...`, the object layout
//! of the real server (store-api `path_utils.rs`, mito2 `sst/location.rs`); WAL and metadata
//! stay in the data home. The emulator keeps its working copy in the write cache directory
//! (`<write_cache_path>/cache/object/write/data/greptime/...`: a tree, where the real cache is
//! flat, `<region_id>.<file_id>.parquet`; tsbsctl measures only its size): every file written
//! there is PUT (signed) before the write counts, every file dropped is DELETEd, and at each
//! start the copy is rebuilt from the bucket, so the bucket is what holds the data: objects
//! lost from it are lost to the server, as on the real one.
//!
//! In a cluster every datanode has this store on the same bucket and root (region directories
//! are distinct by table id) and its own write cache; at start a datanode copies only the
//! regions of the tables its catalog holds.
//!
//! The write cache's capacity is not enforced (nothing is evicted).

use std::path::{Path, PathBuf};
use std::sync::OnceLock;

use super::config::{S3Options, WriteCache};
use crate::s3::Client;

pub struct Remote {
    client: Client,
    bucket: String,
    root: String,
    /// The local copy: keys are `<root>/<path relative to this>`.
    local: PathBuf,
}

static REMOTE: OnceLock<Remote> = OnceLock::new();

/// The directory the region files are kept in locally, for the store.
pub fn local_home(cache: &WriteCache) -> PathBuf {
    cache.path.join("cache/object/write")
}

fn key_of(r: &Remote, path: &Path) -> Option<String> {
    let rel = path
        .strip_prefix(&r.local)
        .ok()?
        .to_string_lossy()
        .into_owned();
    Some(if r.root.is_empty() {
        rel
    } else {
        format!("{}/{rel}", r.root)
    })
}

/// Checks the bucket (one listing: the endpoint answers, the bucket exists, the keys may read
/// it), rebuilds the local copy from it and turns the uploads on. The error is the start's.
/// `held`: a cluster datanode's tables (`<db>/<table id>`): the datanodes share one bucket and
/// root, and each copies only the region directories of the tables it holds (the real one
/// opens the regions the metasrv gives it); `None`: every object under the root (standalone).
pub fn open(
    o: &S3Options,
    cache: &WriteCache,
    held: Option<&std::collections::BTreeSet<String>>,
) -> Result<(), String> {
    let r = Remote {
        client: Client::new(
            &o.endpoint,
            &o.region,
            &o.access_key_id,
            &o.secret_access_key,
        ),
        bucket: o.bucket.clone(),
        root: o.root.clone(),
        local: local_home(cache),
    };
    let prefix = if r.root.is_empty() {
        "data/".to_string()
    } else {
        format!("{}/data/", r.root)
    };
    let objects = r.client.list(&r.bucket, &prefix).map_err(|e| {
        format!(
            "Failed to list objects of bucket {} at {} (root {:?}): {e}",
            r.bucket, r.client.endpoint, r.root
        )
    })?;
    let data = r.local.join("data");
    std::fs::create_dir_all(&data).map_err(|e| format!("cannot create {}: {e}", data.display()))?;
    let mut keep = std::collections::BTreeSet::new();
    for (key, _) in &objects {
        let rel = key
            .strip_prefix(&prefix)
            .filter(|rel| {
                !rel.split('/')
                    .any(|s| s.is_empty() || s == "." || s == "..")
            })
            .ok_or_else(|| format!("unexpected object key {key:?} in the bucket"))?;
        if let Some(held) = held {
            // `greptime/<db>/<table id>/...`
            let mut parts = rel.splitn(4, '/');
            let (_, db, table) = (parts.next(), parts.next(), parts.next());
            let mine =
                matches!((db, table), (Some(d), Some(t)) if held.contains(&format!("{d}/{t}")));
            if !mine {
                continue;
            }
        }
        let path = data.join(rel);
        let bytes = r
            .client
            .get(&r.bucket, key)
            .map_err(|e| format!("Failed to read object {key}: {e}"))?;
        if let Some(p) = path.parent() {
            std::fs::create_dir_all(p)
                .map_err(|e| format!("cannot create {}: {e}", p.display()))?;
        }
        std::fs::write(&path, bytes)
            .map_err(|e| format!("cannot write {}: {e}", path.display()))?;
        keep.insert(path);
    }
    // What the bucket no longer holds is gone (cached copies of deleted objects).
    for e in walk(&data) {
        if !keep.contains(&e) {
            let _ = std::fs::remove_file(&e);
        }
    }
    super::logging::info(
        "object_store",
        &format!(
            "Object store S3 bucket {} at {}, root {:?}: {} objects, {} of them this node's; write cache {}, capacity {} bytes",
            r.bucket,
            r.client.endpoint,
            r.root,
            objects.len(),
            keep.len(),
            cache.path.display(),
            cache.size
        ),
    );
    let _ = REMOTE.set(r);
    Ok(())
}

fn walk(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).into_iter().flatten().flatten() {
            let p = e.path();
            match e.file_type() {
                Ok(t) if t.is_dir() => stack.push(p),
                Ok(t) if t.is_file() => out.push(p),
                _ => {}
            }
        }
    }
    out
}

/// After `path` (under the local copy) was written: upload it. A failed upload fails the
/// write that made the file (a flush, a compaction, a manifest update).
pub fn put_file(path: &Path) -> Result<(), String> {
    let Some(r) = REMOTE.get() else {
        return Ok(());
    };
    let Some(key) = key_of(r, path) else {
        return Ok(());
    };
    let bytes = std::fs::read(path).map_err(|e| format!("cannot read {}: {e}", path.display()))?;
    r.client
        .put(&r.bucket, &key, &bytes)
        .map_err(|e| format!("Failed to write object {key}: {e}"))
}

/// After `path` was removed locally: delete its object (best effort, as the real purger).
pub fn delete_file(path: &Path) {
    if let Some(r) = REMOTE.get() {
        if let Some(key) = key_of(r, path) {
            let _ = r.client.delete(&r.bucket, &key);
        }
    }
}

/// Before a directory of the local copy is removed: delete every object under it.
pub fn delete_tree(dir: &Path) {
    if REMOTE.get().is_some() {
        for f in walk(dir) {
            delete_file(&f);
        }
    }
}
