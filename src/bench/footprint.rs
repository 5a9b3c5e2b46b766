//! Storage footprint of a stopped server's data directory, split the way published
//! comparisons report it: WAL, data files (Parquet / SST) and other (indexes, manifests,
//! catalog metadata). Sizes are allocated bytes (what `du` shows), plus apparent bytes.

use std::path::Path;

use serde::{Deserialize, Serialize};

use crate::error::{Error, Result};

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
}

/// Which part of the split a file belongs to: anything under a `wal` directory or named
/// `*.wal` / `*.raftlog` is WAL (GreptimeDB `wal/`, InfluxDB 3 `<node>/wal/*.wal`); Parquet
/// and SST files are data; the rest is other.
fn classify(rel: &Path) -> Part {
    let ext = rel
        .extension()
        .map(|e| e.to_string_lossy().to_ascii_lowercase())
        .unwrap_or_default();
    let in_wal = rel
        .parent()
        .into_iter()
        .flat_map(|p| p.components())
        .any(|c| c.as_os_str().eq_ignore_ascii_case("wal"));
    if in_wal || ext == "wal" || ext == "raftlog" {
        Part::Wal
    } else if ext == "parquet" || ext == "sst" {
        Part::Data
    } else {
        Part::Other
    }
}

enum Part {
    Wal,
    Data,
    Other,
}

/// Measures `dir` (symlinks are not followed).
pub fn measure(dir: &Path) -> Result<Footprint> {
    use std::os::unix::fs::MetadataExt;
    let mut f = Footprint::default();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        let rd = match std::fs::read_dir(&d) {
            Ok(rd) => rd,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound && d != dir => continue,
            Err(e) => return Err(Error::io("measure", &d, e)),
        };
        for e in rd.flatten() {
            let p = e.path();
            let Ok(m) = std::fs::symlink_metadata(&p) else {
                continue;
            };
            if m.is_dir() {
                stack.push(p);
                continue;
            }
            if !m.is_file() {
                continue;
            }
            let size = m.blocks() * 512;
            f.files += 1;
            f.total_bytes += size;
            f.apparent_bytes += m.len();
            match classify(p.strip_prefix(dir).unwrap_or(&p)) {
                Part::Wal => {
                    f.wal_bytes += size;
                    f.wal_files += 1;
                }
                Part::Data => {
                    f.data_bytes += size;
                    f.data_files += 1;
                }
                Part::Other => f.other_bytes += size,
            }
        }
    }
    Ok(f)
}

#[cfg(test)]
mod tests {
    use super::*;

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
    }
}
