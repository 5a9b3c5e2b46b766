//! Storage footprint of a stopped server's data directory, split the way published
//! comparisons report it: WAL, data files (Parquet / SST) and other (indexes, manifests,
//! catalog metadata); GreptimeDB's split follows its real layout and also counts index and
//! metadata on their own ([`measure_for`]). Sizes are allocated bytes (what `du`
//! shows), plus apparent bytes.

use std::path::Path;

use serde::{Deserialize, Serialize};

use crate::error::{Error, Result};
use crate::product::{FilePart as Part, StorageFootprint};

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Footprint {
    pub total_bytes: u64,
    pub wal_bytes: u64,
    pub data_bytes: u64,
    pub other_bytes: u64,
    /// Sum of file lengths (allocated sizes differ on sparse or compressed filesystems).
    pub apparent_bytes: u64,
    pub files: u64,
    pub wal_files: u64,
    pub data_files: u64,
    /// Files that hold the WAL and the data together ([`Part::WalAndData`]), so they
    /// belong to neither part. The record's keys are `pt_*`: the one such format known is
    /// InfluxDB 3 Enterprise's `.pt` (its upgraded engine, default for clusters from 3.11).
    #[serde(default, rename = "pt_files")]
    pub combined_files: u64,
    #[serde(default, rename = "pt_bytes")]
    pub combined_bytes: u64,
    /// GreptimeDB only (its real layout, [`measure_for`]): index files (`*.puffin`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub index_bytes: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub index_files: Option<u64>,
    /// GreptimeDB only: the standalone metadata store (`metadata/`, raft-engine).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub metadata_bytes: Option<u64>,
    /// GreptimeDB only: `other_bytes` without the index and the metadata (manifests, staging,
    /// the rest). `other_bytes` keeps its meaning: everything that is neither WAL nor data.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub misc_bytes: Option<u64>,
    /// GreptimeDB only: the zero tail raft-engine preallocates in its log files (metadata and
    /// WAL), which is allocated on disk but holds nothing yet (the next open truncates it:
    /// 2.01 MiB of metadata was 22,923 B after a restart of a real v1.0.2).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub metadata_preallocated_bytes: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub wal_preallocated_bytes: Option<u64>,
    /// GreptimeDB only: the metadata and WAL bytes without that tail (what they hold).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub metadata_used_bytes: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub wal_used_bytes: Option<u64>,
    /// Which classifier split the files (`greptimedb`; absent: the generic one).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub layout: Option<String>,
}

impl Footprint {
    /// What a run records: the fields, plus `split` (whether WAL/data/other mean anything)
    /// and its note. With files that hold WAL and data together the split is unknown (null),
    /// never a precise-looking 0.
    pub fn record(&self, product: &dyn StorageFootprint) -> serde_json::Value {
        let mut v = serde_json::to_value(self).expect("a footprint serializes");
        if self.combined_files > 0 {
            for k in [
                "wal_bytes",
                "data_bytes",
                "other_bytes",
                "wal_files",
                "data_files",
            ] {
                v[k] = serde_json::Value::Null;
            }
            v["split"] = false.into();
            v["split_note"] = product.combined_note().into();
            if let Some(e) = product.storage_engine(self.combined_files, 0) {
                v["storage_engine"] = e.into();
            }
        } else {
            v["split"] = true.into();
            v["split_note"] = serde_json::Value::Null;
        }
        v
    }
}

/// Measures a stopped server's data home with the product's classifier. A product with its
/// own layout also counts index and metadata on their own.
pub fn measure_for(product: &dyn StorageFootprint, dir: &Path) -> Result<Footprint> {
    let Some(layout) = product.footprint_layout() else {
        return walk(dir, &|rel| product.classify_file(rel));
    };
    let mut f = walk(dir, &|rel| product.classify_file(rel))?;
    f.layout = Some(layout.into());
    f.index_files.get_or_insert(0);
    f.index_bytes.get_or_insert(0);
    f.metadata_bytes.get_or_insert(0);
    f.misc_bytes = Some(
        f.other_bytes
            .saturating_sub(f.index_bytes.unwrap_or(0) + f.metadata_bytes.unwrap_or(0)),
    );
    let (mut meta, mut wal) = (0u64, 0u64);
    for e in walkdir::WalkDir::new(dir)
        .min_depth(1)
        .into_iter()
        .flatten()
    {
        let p = e.path();
        if !e.file_type().is_file() || p.extension().is_none_or(|x| x != "raftlog") {
            continue;
        }
        let tail = zero_tail(p);
        match product.classify_file(p.strip_prefix(dir).unwrap_or(p)) {
            Part::Metadata => meta += tail,
            Part::Wal => wal += tail,
            _ => {}
        }
    }
    f.metadata_preallocated_bytes = Some(meta);
    f.wal_preallocated_bytes = Some(wal);
    f.metadata_used_bytes = Some(f.metadata_bytes.unwrap_or(0).saturating_sub(meta));
    f.wal_used_bytes = Some(f.wal_bytes.saturating_sub(wal));
    Ok(f)
}

/// The zero bytes at the end of a file: what a preallocating log (raft-engine) has not
/// written yet. A record ending in zero bytes is undercounted by those few bytes. Reads
/// only the tail; an unreadable file has none.
fn zero_tail(path: &Path) -> u64 {
    use std::io::{Read, Seek, SeekFrom};
    const CHUNK: u64 = 64 * 1024;
    let Ok(mut file) = std::fs::File::open(path) else {
        return 0;
    };
    let Ok(len) = file.metadata().map(|m| m.len()) else {
        return 0;
    };
    let mut end = len;
    let mut buf = vec![0u8; CHUNK as usize];
    while end > 0 {
        let start = end.saturating_sub(CHUNK);
        let n = (end - start) as usize;
        if file.seek(SeekFrom::Start(start)).is_err() || file.read_exact(&mut buf[..n]).is_err() {
            return 0;
        }
        if let Some(i) = buf[..n].iter().rposition(|b| *b != 0) {
            return len - (start + i as u64 + 1);
        }
        end = start;
    }
    len
}

/// Measures `dir` (symlinks are not followed).
/// Whether the data never left the WAL (`never_flushed` of a footprint record): GreptimeDB
/// has no SST yet (it flushes a full memtable, not on shutdown), InfluxDB 3 no Parquet yet
/// (it snapshots after about 900 WAL flushes, not on shutdown). `.pt` files (Enterprise's
/// upgraded engine) hold both the WAL and the data, so the split is unknown: null.
pub fn never_flushed(f: &Footprint) -> serde_json::Value {
    if f.combined_files > 0 {
        return serde_json::Value::Null;
    }
    serde_json::Value::Bool(f.data_files == 0 && f.wal_bytes > 0)
}

pub fn measure(dir: &Path) -> Result<Footprint> {
    walk(dir, &crate::product::classify_generic)
}

fn walk(dir: &Path, classify: &dyn Fn(&Path) -> Part) -> Result<Footprint> {
    use std::os::unix::fs::MetadataExt;
    let mut f = Footprint::default();
    // Symlinks are not followed; a directory or file that vanishes during the walk (the
    // server compacting) is skipped, any other error below the root fails the measurement.
    for e in walkdir::WalkDir::new(dir).min_depth(1) {
        let e = match e {
            Ok(e) => e,
            Err(err)
                if err.depth() > 0
                    && err.io_error().map(|io| io.kind()) == Some(std::io::ErrorKind::NotFound) =>
            {
                continue
            }
            Err(err) => {
                let at = err.path().unwrap_or(dir).to_path_buf();
                return Err(Error::io("measure", &at, err.into()));
            }
        };
        let p = e.path();
        let Ok(m) = e.metadata() else {
            continue;
        };
        if !m.is_file() {
            continue;
        }
        let size = m.blocks() * 512;
        f.files += 1;
        f.total_bytes += size;
        f.apparent_bytes += m.len();
        match classify(p.strip_prefix(dir).unwrap_or(p)) {
            Part::Wal => {
                f.wal_bytes += size;
                f.wal_files += 1;
            }
            Part::Data => {
                f.data_bytes += size;
                f.data_files += 1;
            }
            Part::Index => {
                f.other_bytes += size;
                *f.index_bytes.get_or_insert(0) += size;
                *f.index_files.get_or_insert(0) += 1;
            }
            Part::Metadata => {
                f.other_bytes += size;
                *f.metadata_bytes.get_or_insert(0) += size;
            }
            Part::Other => f.other_bytes += size,
            Part::WalAndData => {
                f.combined_bytes += size;
                f.combined_files += 1;
            }
        }
    }
    Ok(f)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_zero_tail_of_a_preallocated_log_is_measured() {
        let d = tempfile::tempdir().unwrap();
        let p = d.path().join("0000000000000001.raftlog");
        // Written records, then a preallocated tail of zeros longer than one read chunk.
        let mut bytes = vec![7u8; 22_923];
        bytes.extend(vec![0u8; 2 * 1024 * 1024 - 22_923]);
        std::fs::write(&p, &bytes).unwrap();
        assert_eq!(zero_tail(&p), 2 * 1024 * 1024 - 22_923);
        std::fs::write(&p, [0u8; 10]).unwrap();
        assert_eq!(zero_tail(&p), 10);
        std::fs::write(&p, [1u8, 0, 2]).unwrap();
        assert_eq!(zero_tail(&p), 0);
        assert_eq!(zero_tail(&d.path().join("missing")), 0);
    }

    #[test]
    fn never_flushed_is_known_for_every_split_and_unknown_for_combined_files() {
        let wal_only = Footprint {
            wal_bytes: 4096,
            wal_files: 1,
            ..Default::default()
        };
        assert_eq!(never_flushed(&wal_only), serde_json::json!(true));
        let with_data = Footprint {
            data_files: 1,
            data_bytes: 4096,
            ..wal_only.clone()
        };
        assert_eq!(never_flushed(&with_data), serde_json::json!(false));
        let pt = Footprint {
            combined_files: 2,
            combined_bytes: 8192,
            ..Default::default()
        };
        assert!(never_flushed(&pt).is_null());
    }

    #[test]
    fn greptimedb_split_follows_the_real_layout() {
        let d = tempfile::tempdir().unwrap();
        let w = d.path();
        let region = "data/greptime/benchmark/1024/1024_0000000000";
        // A database named `wal` must not turn its SSTs into WAL.
        let walreg = "data/greptime/wal/1025/1025_0000000000";
        for dir in [
            "wal".to_string(),
            "metadata".into(),
            format!("{region}/index"),
            format!("{region}/manifest"),
            format!("{walreg}/manifest"),
            "index_intermediate/staging".into(),
        ] {
            std::fs::create_dir_all(w.join(dir)).unwrap();
        }
        let put = |p: &str, n: usize| std::fs::write(w.join(p), vec![7u8; n]).unwrap();
        put("wal/0000000000000001.raftlog", 10000);
        put("wal/0000000000000001.rewrite", 100);
        put("metadata/0000000000000001.raftlog", 4000);
        put("metadata/0000000000000001.rewrite", 100);
        put("metadata/LOCK", 0);
        put(&format!("{region}/a.parquet"), 20000);
        put(&format!("{walreg}/b.parquet"), 8000);
        put(&format!("{region}/index/a.puffin"), 3000);
        put(&format!("{region}/manifest/00000000000000000001.json"), 500);
        put("index_intermediate/staging/x", 200);
        put(".greptimedb-telemetry-uuid", 36);
        let f = measure_for(&crate::product::greptimedb::GreptimeDb, w).unwrap();
        assert_eq!(f.layout.as_deref(), Some("greptimedb"));
        assert_eq!(f.wal_files, 2);
        assert_eq!(f.data_files, 2);
        assert_eq!(f.index_files, Some(1));
        assert!(f.wal_bytes >= 10100 && f.wal_bytes < 20000, "{f:?}");
        assert!(f.data_bytes >= 28000, "{f:?}");
        assert!(f.index_bytes.unwrap() >= 3000 && f.index_bytes.unwrap() < 8000);
        assert!(f.metadata_bytes.unwrap() >= 4100 && f.metadata_bytes.unwrap() < 10000);
        assert_eq!(f.total_bytes, f.wal_bytes + f.data_bytes + f.other_bytes);
        assert_eq!(
            f.other_bytes,
            f.index_bytes.unwrap() + f.metadata_bytes.unwrap() + f.misc_bytes.unwrap()
        );
        // The generic split keeps its meaning for other products.
        let g = measure(w).unwrap();
        assert!(g.index_bytes.is_none() && g.layout.is_none());
    }

    #[test]
    fn split_by_kind() {
        let d = tempfile::tempdir().unwrap();
        let w = d.path();
        std::fs::create_dir_all(w.join("wal")).unwrap();
        std::fs::create_dir_all(w.join("data/greptime/benchmark/1024/index")).unwrap();
        std::fs::create_dir_all(w.join("node/wal")).unwrap();
        std::fs::write(w.join("wal/00000000000000000001.raftlog"), vec![1u8; 10000]).unwrap();
        std::fs::write(w.join("node/wal/00000000001.wal"), vec![1u8; 5000]).unwrap();
        std::fs::write(
            w.join("data/greptime/benchmark/1024/a.parquet"),
            vec![2u8; 20000],
        )
        .unwrap();
        std::fs::write(
            w.join("data/greptime/benchmark/1024/index/a.puffin"),
            vec![3u8; 3000],
        )
        .unwrap();
        let f = measure(w).unwrap();
        assert_eq!(f.files, 4);
        assert_eq!(f.wal_files, 2);
        assert_eq!(f.data_files, 1);
        assert_eq!(f.apparent_bytes, 38000);
        assert_eq!(f.total_bytes, f.wal_bytes + f.data_bytes + f.other_bytes);
        assert!(f.wal_bytes >= 15000 && f.data_bytes >= 20000 && f.other_bytes >= 3000);
        assert_eq!(
            f.record(&crate::product::greptimedb::GreptimeDb)["split"],
            true
        );
    }

    #[test]
    fn combined_files_make_a_total_without_a_split() {
        let d = tempfile::tempdir().unwrap();
        let w = d.path();
        std::fs::create_dir_all(w.join("node/wal")).unwrap();
        std::fs::create_dir_all(w.join("node/data/1/2")).unwrap();
        std::fs::create_dir_all(w.join("cluster/catalog")).unwrap();
        std::fs::write(w.join("node/wal/00000000001.pt"), vec![1u8; 5000]).unwrap();
        std::fs::write(w.join("node/data/1/2/0000000001.pt"), vec![2u8; 9000]).unwrap();
        std::fs::write(w.join("cluster/catalog/checkpoint"), vec![3u8; 100]).unwrap();
        let enterprise = crate::product::influxdb3::InfluxDb3::new(
            crate::product::influxdb3::Edition::Enterprise,
        );
        // `.pt` is InfluxDB 3's: the generic split does not know it.
        assert_eq!(measure(w).unwrap().combined_files, 0);
        let f = measure_for(&enterprise, w).unwrap();
        assert_eq!((f.combined_files, f.wal_files, f.data_files), (2, 0, 0));
        let r = f.record(&enterprise);
        assert_eq!(r["storage_engine"], "upgraded (.pt files)");
        assert_eq!(r["split"], false);
        assert!(r["wal_bytes"].is_null() && r["data_bytes"].is_null(), "{r}");
        assert_eq!(r["total_bytes"], f.total_bytes);
        assert!(r["split_note"]
            .as_str()
            .unwrap()
            .contains("share one format"));
    }
}
