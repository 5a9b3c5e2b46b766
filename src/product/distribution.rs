//! How a product is released and installed: the part of [`Product`](super::Product) that
//! `install` and `verify` ask (`src/install.rs`, `src/rerun.rs`'s re-download), and the version
//! checks of `prepare`, `copy`, `adopt` and external targets.

use std::path::{Path, PathBuf};

use super::{no_releases, Latest, Named, ReleaseAsset};
use crate::download::Downloader;
use crate::error::Result;
use crate::paths::Root;
use crate::platform::Platform;
use crate::sources::Sources;

/// Releases and installations: the version grammar, where "latest", the archive and its
/// checksum are found, what `--version` must print and where installations live. The release
/// defaults refuse, for products installed from a local directory.
pub trait Distribution: Named {
    /// Product checks of an installation beyond the server binary (the other pinned binaries
    /// of a local installation); run by `verify`. Default: none.
    fn verify_installation(&self, _install_dir: &Path) -> Result<()> {
        Ok(())
    }
    /// The server binary inside an installation (`greptime`, `influxdb3`).
    fn binary_name(&self) -> &'static str;
    /// Refuses platforms the vendor does not ship (exit 2).
    fn check_platform(&self, platform: &Platform) -> Result<()>;
    /// Validates and normalises a user-given version (GreptimeDB strips one leading `v`).
    fn normalize_version(&self, raw: &str) -> Result<String>;
    /// Resolves the newest stable version from the vendor (never a guess, never a cache).
    /// Products without release archives (a local installation pinned by path) keep the
    /// default: a refusal naming the product.
    fn resolve_latest(&self, _downloader: &Downloader, _sources: &Sources) -> Result<Latest> {
        Err(no_releases(self.product_display_name()))
    }
    /// The archive and checksum locations of `version` for `platform` (default: none).
    fn release_asset(
        &self,
        _sources: &Sources,
        _version: &str,
        _platform: &Platform,
    ) -> Result<ReleaseAsset> {
        Err(no_releases(self.product_display_name()))
    }
    /// Extracts the expected SHA-256 (lowercase hex) from the vendor's checksum file.
    fn parse_checksum(&self, text: &str, asset: &ReleaseAsset) -> Result<String> {
        crate::download::parse_checksum_file(text, &asset.file_name)
    }
    /// Checks the output of `<binary> --version` names `version` (and the edition).
    fn check_version_output(&self, version: &str, output: &str) -> Result<()>;
    /// The arguments that make the binary print its version (`influxd` has no `--version`).
    fn version_args(&self) -> &'static [&'static str] {
        &["--version"]
    }
    /// The distribution root inside an extracted archive (`extracted` is the archive's root,
    /// or the contents of [`ReleaseAsset::top_dir`] when the product names one). Products
    /// whose archives have a top directory of unknown name find it here.
    fn distribution_root(&self, extracted: &Path) -> Result<PathBuf> {
        Ok(extracted.to_path_buf())
    }
    /// Directory holding `<version>/<platform>/` installations of this product (edition).
    fn installations_dir(&self, root: &Root) -> PathBuf {
        root.installations(self.product_name())
    }
    /// What picked the version `install` takes without `--version` (after "<Product> <V>: ").
    fn latest_words(&self) -> &'static str {
        "the latest stable release"
    }
}
