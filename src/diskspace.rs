//! Free-space check before generation (trial-run defect #1): estimate what a dataset or a
//! query set will write and refuse (exit 2, both numbers named) when the target filesystem
//! would not hold it with a margin. A generator that runs into ENOSPC after minutes has
//! already hurt every other process on the host.
//!
//! The per-row and per-query sizes are upper estimates measured on the real tools' output
//! (`shared/fixtures/tsbs-real`): a cpu-only influx line is about 330 bytes (host names grow
//! with the scale), a gob-encoded query 0.4-2.4 KB. The compressed ratios are guesses on the
//! safe side (line protocol compresses about tenfold with gzip).

use std::path::{Path, PathBuf};

use crate::error::{Error, Result};

/// Environment variable: bytes to keep free beyond the estimate (default: the larger of
/// 256 MiB and a tenth of the estimate).
pub const MARGIN_ENV: &str = "TSBSCTL_DISK_MARGIN_BYTES";
const MIN_MARGIN: u64 = 256 << 20;

/// One thing about to be written: what, how much, where.
#[derive(Debug, Clone)]
pub struct Need {
    pub what: String,
    pub bytes: u64,
    pub dir: PathBuf,
}

/// Free bytes (for unprivileged users) of the filesystem holding `path`, and its id; the
/// nearest existing ancestor is asked when `path` does not exist yet.
// The statvfs field types differ between platforms (u32 on some, u64 on Linux).
#[allow(clippy::useless_conversion)]
fn filesystem(path: &Path) -> Option<(u64, u64, PathBuf)> {
    let mut p = Some(path);
    while let Some(d) = p {
        if let Ok(st) = nix::sys::statvfs::statvfs(d) {
            let free =
                u64::from(st.blocks_available()).saturating_mul(u64::from(st.fragment_size()));
            return Some((free, u64::from(st.filesystem_id()), d.to_path_buf()));
        }
        p = d.parent();
    }
    None
}

fn margin(need: u64) -> Result<u64> {
    match std::env::var(MARGIN_ENV) {
        Ok(v) => v.trim().parse::<u64>().map_err(|_| {
            Error::invalid(format!("{MARGIN_ENV}={v:?} is not a number of bytes"))
                .with_hint(format!("set {MARGIN_ENV} to a byte count, or unset it"))
        }),
        Err(_) => Ok(MIN_MARGIN.max(need / 10)),
    }
}

/// Refuses (exit 2) when the needs that share a filesystem exceed its free space minus the
/// margin. Unknown free space (statvfs failed everywhere) lets the work proceed.
pub fn ensure_room(needs: &[Need]) -> Result<()> {
    let mut groups: Vec<(u64, u64, PathBuf, Vec<&Need>)> = Vec::new();
    for n in needs.iter().filter(|n| n.bytes > 0) {
        let Some((free, fsid, at)) = filesystem(&n.dir) else {
            continue;
        };
        match groups.iter_mut().find(|g| g.0 == fsid) {
            Some(g) => g.3.push(n),
            None => groups.push((fsid, free, at, vec![n])),
        }
    }
    for (_, free, at, group) in groups {
        let total = group
            .iter()
            .fold(0u64, |acc, n| acc.saturating_add(n.bytes));
        let keep = margin(total)?;
        if total.saturating_add(keep) > free {
            // One need: its size is the total, said once.
            let what = if group.len() == 1 {
                group[0].what.clone()
            } else {
                group
                    .iter()
                    .map(|n| format!("{} (about {})", n.what, human(n.bytes)))
                    .collect::<Vec<_>>()
                    .join(" and ")
            };
            return Err(Error::invalid(format!(
                "not enough disk space: {what} would write about {} ({total} bytes), but the filesystem of {} has {} ({free} bytes) free, and {} must stay free",
                human(total),
                at.display(),
                human(free),
                human(keep)
            ))
            .with_hint(
                "free some space, choose a smaller workload (--scale, the time range, --queries), or put datasets on another disk with --dataset-root DIR",
            ));
        }
    }
    Ok(())
}

/// Bytes with a binary unit, one decimal.
pub fn human(n: u64) -> String {
    const UNITS: [&str; 7] = ["B", "KiB", "MiB", "GiB", "TiB", "PiB", "EiB"];
    let mut v = n as f64;
    let mut u = 0;
    while v >= 1024.0 && u < UNITS.len() - 1 {
        v /= 1024.0;
        u += 1;
    }
    format!("{v:.1} {}", UNITS[u])
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn defect_1_a_dataset_larger_than_the_disk_is_refused_naming_both_numbers() {
        let dir = tempfile::tempdir().unwrap();
        // About 327 TiB (10^12 rows of a dataset), more than any test machine has.
        let bytes: u64 = 360_000_000_000_000;
        let e = ensure_room(&[Need {
            what: "dataset big".into(),
            bytes,
            dir: dir.path().join("not/yet/there"),
        }])
        .unwrap_err();
        assert_eq!(e.exit_code(), 2);
        assert!(
            e.message.contains(&format!("{bytes} bytes")),
            "{}",
            e.message
        );
        assert!(e.message.contains("bytes) free"), "{}", e.message);
        // One need: its size is said once ("(about 2.8 TiB) would write about 2.8 TiB").
        let size = human(bytes);
        assert_eq!(e.message.matches(&size).count(), 1, "{}", e.message);
        assert!(
            e.message
                .contains(&format!("dataset big would write about {size}")),
            "{}",
            e.message
        );
        // A small one fits.
        ensure_room(&[Need {
            what: "dataset small".into(),
            bytes: 1 << 20,
            dir: dir.path().to_path_buf(),
        }])
        .unwrap();
    }
}
