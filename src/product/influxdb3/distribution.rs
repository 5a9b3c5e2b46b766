//! InfluxDB 3's [`Distribution`]: releases and installations.

use std::path::Path;

use super::{script_version, Edition, InfluxDb3, LATEST_SOURCE};
use crate::download::{Downloader, ACCEPT_ARTIFACT};
use crate::error::{Error, Result};
use crate::paths::Root;
use crate::platform::Platform;
use crate::product::{check_semver, release, Distribution, Latest, Product, ReleaseAsset};
use crate::sources::{SourceKey, Sources};

/// InfluxData's installer script (`influxdb3_installer` / `TSBSCTL_INFLUXDB3_INSTALLER_URL`, a
/// full URL): the latest versions are read from it.
pub const INSTALLER: SourceKey = SourceKey::new(
    "influxdb3_installer",
    "TSBSCTL_INFLUXDB3_INSTALLER_URL",
    "https://www.influxdata.com/d/install_influxdb3.sh",
    false,
    false,
);

impl Distribution for InfluxDb3 {
    fn binary_name(&self) -> &'static str {
        "influxdb3"
    }

    fn check_platform(&self, platform: &Platform) -> Result<()> {
        release::check_influxdata_platform(
            platform,
            &["linux-amd64", "linux-arm64", "darwin-arm64"],
            "InfluxDB 3",
            "use linux-amd64, linux-arm64 or darwin-arm64, or benchmark an external server with --url",
        )
    }

    fn normalize_version(&self, raw: &str) -> Result<String> {
        check_semver("--version", raw, "3.11.1")
    }

    fn resolve_latest(&self, dl: &Downloader, sources: &Sources) -> Result<Latest> {
        let url = sources.get(INSTALLER).to_string();
        let script = dl
            .fetch_text(&url, ACCEPT_ARTIFACT)
            .map_err(|e| e.context("reading the InfluxDB 3 installer script"))?;
        let name = match self.edition {
            Edition::Core => "INFLUXDB_OSS_VERSION",
            Edition::Enterprise => "INFLUXDB_ENT_VERSION",
        };
        Ok(Latest {
            version: script_version(&script, name)?,
            source: LATEST_SOURCE,
        })
    }

    fn release_asset(
        &self,
        sources: &Sources,
        version: &str,
        platform: &Platform,
    ) -> Result<ReleaseAsset> {
        let file = format!(
            "influxdb3-{}-{version}_{}.tar.gz",
            self.edition.as_str(),
            platform.underscored()
        );
        let checksum = format!("{file}.sha256");
        // The real root's name is unconfirmed: [`Self::distribution_root`] accepts any.
        Ok(release::influxdata_tarball(
            sources,
            "influxdb/releases",
            file,
            &checksum,
        ))
    }
    /// The installer script can lag the releases (the v3.10.1 tag's names 3.9.1).
    fn latest_words(&self) -> &'static str {
        "the version InfluxData's installer script names"
    }
    /// As the vendor's installer (`install_influxdb.sh`: `--strip-components` 0 or 1, when
    /// `*/influxdb3` is there): `influxdb3` at the archive's root, or under its one leading
    /// directory of any name. Anything else is refused; the binary is then run and must report
    /// the edition and version asked for.
    fn distribution_root(&self, extracted: &Path) -> Result<std::path::PathBuf> {
        let bin = self.binary_name();
        // The root holds the binary only when `influxdb3` there is a file: an archive whose
        // top directory is named `influxdb3` (`influxdb3/influxdb3`) is descended into, as
        // the vendor's installer does (`grep '[a-zA-Z0-9]/influxdb3$'`, strip one level).
        let is_file = |p: &Path| p.symlink_metadata().is_ok_and(|m| !m.is_dir());
        if is_file(&extracted.join(bin)) {
            return Ok(extracted.to_path_buf());
        }
        let entries = release::sorted_entries(extracted)?;
        if let [only] = entries.as_slice() {
            let is_dir = only.symlink_metadata().map(|m| m.is_dir()).unwrap_or(false);
            if is_dir && is_file(&only.join(bin)) {
                return Ok(only.clone());
            }
        }
        Err(Error::integrity(format!(
            "the {} archive has no `{bin}` at its root or under a single top directory (its top level: {})",
            self.display_name(),
            release::top_level(&entries)
        ))
        .with_hint("nothing was installed; check that the file is the InfluxDB 3 release archive you asked for"))
    }

    /// `influxdb3 --version` prints `influxdb3 InfluxDB 3 Core, 3.11.1, revision ...`.
    fn check_version_output(&self, version: &str, output: &str) -> Result<()> {
        let want = format!("InfluxDB 3 {}, {version}", self.edition.title());
        release::check_reported("influxdb3 --version", output, &want, &[','])
            .map_err(|e| e.with_hint(self.install_command(version, true)))
    }

    fn installations_dir(&self, root: &Root) -> std::path::PathBuf {
        root.installations(self.name()).join(self.edition.as_str())
    }
}
