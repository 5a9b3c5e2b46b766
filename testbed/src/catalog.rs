//! Everything `testbed serve` publishes: every stand-in release of every product.

use std::path::Path;

use crate::mirror::Mirror;

/// Publishes every stand-in release on `mirror`; `work_dir` holds files the releases need
/// on disk (built archives, knob files).
pub fn publish_all(mirror: &Mirror, work_dir: &Path) {
    crate::releases::go::publish_all(mirror, work_dir);
    crate::releases::greptime::publish_all(mirror, work_dir);
    crate::releases::influxdb3::publish_all(mirror, work_dir);
}
