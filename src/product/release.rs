//! Where products published as GitHub releases or on InfluxData's download host find their
//! archives, and the checks of what those vendors ship. Written once so that the products
//! differ only in what they pass (names, paths, archive layouts); each still words its own
//! messages where they differ.

use std::path::{Path, PathBuf};

use serde_json::Value;

use super::ReleaseAsset;
use crate::download::{Downloader, ACCEPT_GITHUB_JSON};
use crate::error::{Error, Result};
use crate::platform::Platform;
use crate::sources::{SourceKey, Sources};

/// InfluxData's download host (`influxdata_dl` / `TSBSCTL_INFLUXDATA_DL_URL`), where InfluxDB
/// 2 and 3 publish their release archives.
pub const INFLUXDATA_DL: SourceKey = SourceKey::new(
    "influxdata_dl",
    "TSBSCTL_INFLUXDATA_DL_URL",
    "https://dl.influxdata.com",
    true,
    false,
);

/// GitHub's answer for `repo`'s latest release (`repos/<repo>/releases/latest` under the API
/// source). The error is the download's own: the product words its context and hint.
pub fn github_latest(dl: &Downloader, sources: &Sources, repo: &str) -> Result<Value> {
    let url = sources.url(
        SourceKey::GITHUB_API,
        &format!("repos/{repo}/releases/latest"),
    );
    dl.fetch_json(&url, ACCEPT_GITHUB_JSON)
}

/// `<stem>.tar.gz` of `repo`'s release `v<version>`, beside the checksum file
/// `<stem><checksum_suffix>`, everything in it under the directory `<stem>/`.
pub fn github_tarball(
    sources: &Sources,
    repo: &str,
    version: &str,
    stem: String,
    checksum_suffix: &str,
) -> ReleaseAsset {
    let dir = format!("{repo}/releases/download/v{version}");
    ReleaseAsset {
        url: sources.url(SourceKey::GITHUB, &format!("{dir}/{stem}.tar.gz")),
        checksum_url: sources.url(SourceKey::GITHUB, &format!("{dir}/{stem}{checksum_suffix}")),
        file_name: format!("{stem}.tar.gz"),
        top_dir: Some(stem),
    }
}

/// `<dir>/<file>` on InfluxData's download host, beside the checksum file `<dir>/<checksum>`.
/// No top directory is named: the product's `distribution_root` finds it.
pub fn influxdata_tarball(
    sources: &Sources,
    dir: &str,
    file: String,
    checksum: &str,
) -> ReleaseAsset {
    ReleaseAsset {
        url: sources.url(INFLUXDATA_DL, &format!("{dir}/{file}")),
        checksum_url: sources.url(INFLUXDATA_DL, &format!("{dir}/{checksum}")),
        file_name: file,
        top_dir: None,
    }
}

/// Refuses (exit 2) a platform not among the `published` ones (`linux-amd64`, ...): InfluxData
/// publishes no `product` build for it; `hint` says what to do instead.
pub fn check_influxdata_platform(
    platform: &Platform,
    published: &[&str],
    product: &str,
    hint: &str,
) -> Result<()> {
    let dashed = platform.dashed();
    if published.contains(&dashed.as_str()) {
        return Ok(());
    }
    Err(Error::invalid(format!(
        "InfluxData publishes no {product} build for {dashed}"
    ))
    .with_hint(hint))
}

/// Checks that a line of `command`'s `output` holds `want` as a whole: followed by the line's
/// end, whitespace or one of `also` (InfluxData's binaries print the version mid-line). The
/// refusal (integrity) quotes the output; the product adds its hint.
pub fn check_reported(command: &str, output: &str, want: &str, also: &[char]) -> Result<()> {
    let ok = output.lines().any(|l| {
        l.find(want).is_some_and(|i| {
            let rest = &l[i + want.len()..];
            rest.is_empty() || rest.starts_with(also) || rest.starts_with(char::is_whitespace)
        })
    });
    if ok {
        Ok(())
    } else {
        Err(Error::integrity(format!(
            "`{command}` does not report {want}: {}",
            output.trim()
        )))
    }
}

/// The entries at an extracted archive's root, sorted (the order a refusal lists them in).
pub fn sorted_entries(extracted: &Path) -> Result<Vec<PathBuf>> {
    let mut entries: Vec<PathBuf> = fs_err::read_dir(extracted)?
        .flatten()
        .map(|e| e.path())
        .collect();
    entries.sort();
    Ok(entries)
}

/// What a refusal says of an archive's top level: its entries' names, or `empty`.
pub fn top_level(entries: &[PathBuf]) -> String {
    let names: Vec<String> = entries
        .iter()
        .filter_map(|p| p.file_name().map(|n| n.to_string_lossy().into_owned()))
        .collect();
    if names.is_empty() {
        "empty".into()
    } else {
        names.join(", ")
    }
}
