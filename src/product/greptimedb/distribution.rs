//! GreptimeDB's [`Distribution`]: releases and installations.

use super::{nightly_cargo_version, parse_latest, GreptimeDb, REPO};
use crate::download::Downloader;
use crate::error::{Error, Result};
use crate::platform::Platform;
use crate::product::{check_semver, release, Distribution, Latest, ReleaseAsset};
use crate::sources::Sources;

impl Distribution for GreptimeDb {
    fn binary_name(&self) -> &'static str {
        "greptime"
    }

    fn check_platform(&self, _platform: &Platform) -> Result<()> {
        // GreptimeDB ships every platform tsbsctl knows (linux/darwin, amd64/arm64).
        Ok(())
    }

    /// Strips one leading `v` (`v1.1.4` and `1.1.4` are the same); then an exact version.
    fn normalize_version(&self, raw: &str) -> Result<String> {
        let v = raw.strip_prefix('v').unwrap_or(raw);
        // The refusal quotes what was typed (`v1`), not the stripped form (trial-run #30).
        check_semver("--version", v, "1.1.4 or v1.2.0-beta.1").map_err(|e| {
            crate::error::Error::invalid(format!("--version {raw:?} is not an exact version"))
                .with_hint(e.hint.unwrap_or_default())
        })
    }

    fn resolve_latest(&self, dl: &Downloader, sources: &Sources) -> Result<Latest> {
        let hint = "pass an exact --version (e.g. --version 1.1.4)";
        let doc = release::github_latest(dl, sources, REPO).map_err(|e| {
            let limited = matches!(e.http_status(), Some(403 | 429));
            let h = if limited {
                "GitHub refused the request (403, probably its rate limit of 60 anonymous requests an hour): set GITHUB_TOKEN, or pass an exact --version".to_string()
            } else {
                e.hint.clone().map(|h| format!("{h}; or {hint}")).unwrap_or_else(|| hint.into())
            };
            e.context("resolving the latest GreptimeDB release").with_hint(h)
        })?;
        parse_latest(&doc)
    }

    fn release_asset(
        &self,
        sources: &Sources,
        version: &str,
        platform: &Platform,
    ) -> Result<ReleaseAsset> {
        let stem = format!("greptime-{}-v{version}", platform.dashed());
        Ok(release::github_tarball(
            sources,
            REPO,
            version,
            stem,
            ".sha256sum",
        ))
    }

    /// `greptime --version` prints `version: X.Y.Z` among other lines (`-V`: `greptime X.Y.Z`);
    /// one whitespace-separated token must be exactly the version (one leading `v` allowed).
    /// Nightly and hash builds (`1.2.0-nightly-20260706`, `1.2.0-d1e61a4ad-…`) print their
    /// Cargo version (`1.2.0`): that is accepted for them (the installation records both the
    /// tag and the output).
    fn check_version_output(&self, version: &str, output: &str) -> Result<()> {
        let cargo = nightly_cargo_version(version);
        let found = output.split_whitespace().any(|t| {
            let t = t.strip_prefix('v').unwrap_or(t);
            t == version || Some(t) == cargo
        });
        if found {
            Ok(())
        } else {
            Err(Error::integrity(format!(
                "`greptime --version` does not report {version}: {:?}",
                output.trim()
            )))
        }
    }
}
