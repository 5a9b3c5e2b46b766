//! InfluxDB 2's [`Distribution`]: releases and installations.

use std::path::{Path, PathBuf};

use super::{pinned, release_dir, InfluxDb2, DEFAULT_SOURCE, DEFAULT_VERSION};
use crate::download::Downloader;
use crate::error::{Error, Result};
use crate::platform::Platform;
use crate::product::{check_semver, release, Distribution, Latest, Product, ReleaseAsset};
use crate::sources::Sources;

impl Distribution for InfluxDb2 {
    fn binary_name(&self) -> &'static str {
        "influxd"
    }
    fn check_platform(&self, platform: &Platform) -> Result<()> {
        release::check_influxdata_platform(
            platform,
            &["linux-amd64", "linux-arm64", "darwin-amd64"],
            "InfluxDB 2",
            "use linux-amd64, linux-arm64 or darwin-amd64 (Rosetta), or benchmark an external server with --url",
        )
    }
    /// 2.7.x and 2.9.x: the releases whose download paths and layouts are known. 2.8.0's file
    /// names carry a build suffix tsbsctl cannot derive; 1.x and 3.x are other products.
    fn normalize_version(&self, raw: &str) -> Result<String> {
        let v = check_semver("--version", raw, DEFAULT_VERSION)?;
        let p = semver::Version::parse(&v).expect("checked");
        if p.major == 2 && (p.minor == 7 || p.minor == 9) && p.pre.is_empty() {
            return Ok(v);
        }
        Err(Error::invalid(format!(
            "InfluxDB 2 {v} is not a version tsbsctl installs: it takes 2.7.x (the report's 2.7.7 by default) and 2.9.x"
        ))
        .with_hint(if p.major == 3 {
            "InfluxDB 3 is its own product: tsbsctl influxdb3 install".to_string()
        } else {
            format!("pass e.g. --version {DEFAULT_VERSION} or --version 2.7.12")
        }))
    }
    /// No network: the report's version, pinned.
    fn resolve_latest(&self, _dl: &Downloader, _sources: &Sources) -> Result<Latest> {
        Ok(Latest {
            version: DEFAULT_VERSION.into(),
            source: DEFAULT_SOURCE,
        })
    }
    fn latest_words(&self) -> &'static str {
        "the version of the 2024 GreptimeDB vs. InfluxDB report"
    }
    /// `influxdb2-<V>_<os>_<arch>.tar.gz` beside InfluxData's aggregate checksum file
    /// `influxdb.<V>.sha256` (`sha256sum *` over the release's files, uploaded with them by
    /// the 2.7 pipeline; the per-file `.sha256` is not).
    fn release_asset(
        &self,
        sources: &Sources,
        version: &str,
        platform: &Platform,
    ) -> Result<ReleaseAsset> {
        let file = format!("influxdb2-{version}_{}.tar.gz", platform.underscored());
        // Its top directory is found by [`Self::distribution_root`]: `influxdb2-<V>/` (2.7
        // linux: `usr/bin/`).
        Ok(release::influxdata_tarball(
            sources,
            &release_dir(version),
            file,
            &format!("influxdb.{version}.sha256"),
        ))
    }
    /// The published line for the archive; where tsbsctl pins a digest, both must agree.
    fn parse_checksum(&self, text: &str, asset: &ReleaseAsset) -> Result<String> {
        let published = crate::download::parse_checksum_file(text, &asset.file_name)?;
        let pin = asset
            .file_name
            .strip_prefix("influxdb2-")
            .and_then(|r| r.strip_suffix(".tar.gz"))
            .and_then(|r| r.split_once('_'))
            .and_then(|(v, p)| pinned(v, p));
        match pin {
            Some(p) if p != published => Err(Error::integrity(format!(
                "the published SHA-256 of {} is {published}, but tsbsctl pins {p} (InfluxData's release notes)",
                asset.file_name
            ))
            .with_hint("nothing was downloaded; check the mirror (TSBSCTL_INFLUXDATA_DL_URL), or report it")),
            _ => Ok(published),
        }
    }
    /// `influxd version` prints `InfluxDB v2.7.12 (git: ...) build_date: ...`.
    fn check_version_output(&self, version: &str, output: &str) -> Result<()> {
        let want = format!("InfluxDB v{version}");
        release::check_reported("influxd version", output, &want, &[])
            .map_err(|e| e.with_hint(self.install_command(version, true)))
    }
    fn version_args(&self) -> &'static [&'static str] {
        &["version"]
    }
    /// The archive's one `influxdb2-*` directory; the binary is at its `usr/bin/influxd`
    /// (2.7 linux) or its root (2.9 linux, darwin). The installation is the directory that
    /// holds it.
    fn distribution_root(&self, extracted: &Path) -> Result<PathBuf> {
        let entries = release::sorted_entries(extracted)?;
        let is_file = |p: &Path| p.symlink_metadata().is_ok_and(|m| m.is_file());
        if let [only] = entries.as_slice() {
            let named = only
                .file_name()
                .is_some_and(|n| n.to_string_lossy().starts_with("influxdb2-"));
            if named && only.is_dir() {
                for sub in ["usr/bin", ""] {
                    let d = if sub.is_empty() {
                        only.clone()
                    } else {
                        only.join(sub)
                    };
                    if is_file(&d.join("influxd")) {
                        return Ok(d);
                    }
                }
            }
        }
        Err(Error::integrity(format!(
            "the InfluxDB 2 archive has no influxdb2-<V>/usr/bin/influxd or influxdb2-<V>/influxd (its top level: {})",
            release::top_level(&entries)
        ))
        .with_hint("nothing was installed; check that the file is the InfluxDB 2 release archive you asked for"))
    }
}
