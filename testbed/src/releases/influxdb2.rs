//! InfluxDB 2 releases on the mirror as InfluxData publishes them (reference influxdb2.md §2):
//! `influxdb/releases/influxdb2-<V>_<os>_<arch>.tar.gz` (2.7.12: under `v2.7.12/`) holding
//! the package tree `influxdb2-<V>/usr/bin/influxd`, `usr/share/influxdb/LICENSE`, ...,
//! beside the release's aggregate checksum file `influxdb.<V>.sha256` (`sha256sum *` over
//! all its files: bare names, one line each, the archive's among others).
//!
//! The binary is the caller's: the real `influxd` the tests run (built from the Go module
//! proxy by CI), or a stand-in script for the checks that never start it.

use sha2::{Digest, Sha256};

use crate::mirror::{Mirror, INFLUXDATA_DL};
use crate::tarball::Tree;

/// InfluxData's platform tag of this host (linux_amd64 elsewhere).
pub fn host_platform() -> &'static str {
    match (std::env::consts::OS, std::env::consts::ARCH) {
        ("linux", "aarch64") => "linux_arm64",
        ("macos", _) => "darwin_amd64",
        _ => "linux_amd64",
    }
}

/// The directory of `version` below the download host.
pub fn dir(version: &str) -> String {
    if version == "2.7.12" || version.starts_with("2.8.") {
        format!("{INFLUXDATA_DL}/influxdb/releases/v{version}")
    } else {
        format!("{INFLUXDATA_DL}/influxdb/releases")
    }
}

/// The archive of `version` with `influxd` = `binary` in the 2.7 linux layout.
pub fn archive(version: &str, binary: &[u8]) -> Vec<u8> {
    let top = format!("influxdb2-{version}");
    Tree::new()
        .dir(&top, 0o755)
        .dir(&format!("{top}/usr"), 0o755)
        .dir(&format!("{top}/usr/bin"), 0o755)
        .file(&format!("{top}/usr/bin/influxd"), binary.to_vec(), 0o755)
        .dir(&format!("{top}/usr/share"), 0o755)
        .dir(&format!("{top}/usr/share/influxdb"), 0o755)
        .file(
            &format!("{top}/usr/share/influxdb/LICENSE"),
            "Stand-in licence text for a test release.\n",
            0o644,
        )
        .dir(&format!("{top}/etc"), 0o755)
        .dir(&format!("{top}/etc/logrotate.d"), 0o755)
        .file(
            &format!("{top}/etc/logrotate.d/influxdb"),
            "/var/log/influxdb/influxd.log {\n}\n",
            0o644,
        )
        .tar_gz()
}

/// Publishes `version` for this host with `binary` as its `influxd`; returns the archive's
/// SHA-256 (as the aggregate checksum file lists it).
pub fn publish(mirror: &Mirror, version: &str, binary: &[u8]) -> String {
    let bytes = archive(version, binary);
    let digest = hex::encode(Sha256::digest(&bytes));
    let platform = host_platform();
    let file = format!("influxdb2-{version}_{platform}.tar.gz");
    let d = dir(version);
    // `sha256sum *` in the upload directory: the other artifacts' lines around this one.
    let other = |name: &str| hex::encode(Sha256::digest(name.as_bytes()));
    let sums = format!(
        "{}  influxdb2-{version}-1.x86_64.rpm\n{digest}  {file}\n{}  influxdb2_{version}-1_amd64.deb\n",
        other("rpm"),
        other("deb")
    );
    mirror.put_text(&format!("{d}/influxdb.{version}.sha256"), &sums);
    mirror.put_bytes(&format!("{d}/{file}"), bytes);
    digest
}
