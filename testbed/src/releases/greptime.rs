//! Stand-in GreptimeDB releases served by the mirror, shaped like the real GitHub ones
//! (reference/protocols.md §4.1):
//!
//! * `<GITHUB>/GreptimeTeam/greptimedb/releases/download/v<V>/greptime-<os>-<arch>-v<V>.tar.gz`
//!   with a single top directory `greptime-<os>-<arch>-v<V>/` holding the `greptime` wrapper
//!   script (it execs `testbed emulate greptime` with `TESTBED_EMULATED_VERSION=<V>` and, when
//!   given, `TESTBED_KNOBS=<path>`);
//! * `.../greptime-<os>-<arch>-v<V>.sha256sum`: the bare lower-case hex digest and a newline;
//! * `<GITHUB_API>/repos/GreptimeTeam/greptimedb/releases/tags/v<V>` and `.../releases/latest`:
//!   release objects with `tag_name`, `name`, `draft`, `prerelease`, `assets`.
//!
//! [`Variant`]s break one thing each, to exercise the installer's validators.

use std::path::{Path, PathBuf};

use serde_json::{json, Value};
use sha2::{Digest, Sha256};

use crate::mirror::{Mirror, GITHUB, GITHUB_API};
use crate::tarball::Tree;

/// How a published release deviates from a good one.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Variant {
    Good,
    /// The `.sha256sum` names a different digest.
    WrongChecksum,
    /// The `.sha256sum` is upper-case hex (as Windows builds write it); still correct.
    UppercaseChecksum,
    /// No `.sha256sum` on the mirror (404).
    MissingChecksum,
    /// A second top-level entry (`README.md`) beside the top directory.
    ExtraTopLevelEntry,
    /// A symlink inside the top directory pointing out of the tree.
    SymlinkEscape,
    /// A hard link inside the top directory.
    HardLink,
    /// The top directory without the `greptime` binary.
    MissingBinary,
    /// Everything under a top directory with another name (`greptime-<platform>/`).
    WrongTopDir,
}

/// One release to publish.
#[derive(Debug, Clone)]
pub struct GreptimeRelease {
    /// `1.2.0` or `1.3.0-beta.1` (no `v`).
    pub version: String,
    /// `linux-amd64`, `linux-arm64`, `darwin-arm64`, `darwin-amd64`, ...
    pub platforms: Vec<String>,
    /// Baked into the wrapper as `TESTBED_KNOBS` (the file may not exist yet).
    pub knobs: Option<PathBuf>,
    pub variant: Variant,
}

impl GreptimeRelease {
    /// A good release of `version` for the host platform, without knobs.
    pub fn new(version: &str) -> GreptimeRelease {
        GreptimeRelease {
            version: version.trim_start_matches('v').to_string(),
            platforms: vec![host_platform()],
            knobs: None,
            variant: Variant::Good,
        }
    }

    pub fn with_knobs(mut self, path: &Path) -> GreptimeRelease {
        self.knobs = Some(path.to_path_buf());
        self
    }

    pub fn with_variant(mut self, variant: Variant) -> GreptimeRelease {
        self.variant = variant;
        self
    }

    pub fn with_platforms(mut self, platforms: &[&str]) -> GreptimeRelease {
        self.platforms = platforms.iter().map(|p| p.to_string()).collect();
        self
    }
}

/// GreptimeDB's name for the host platform (`linux-amd64`, `darwin-arm64`, ...).
pub fn host_platform() -> String {
    let os = match std::env::consts::OS {
        "macos" => "darwin",
        other => other,
    };
    let arch = match std::env::consts::ARCH {
        "x86_64" => "amd64",
        "aarch64" => "arm64",
        other => other,
    };
    format!("{os}-{arch}")
}

/// `greptime-<platform>-v<V>` (the archive stem and its top directory).
pub fn top_dir(version: &str, platform: &str) -> String {
    format!("greptime-{platform}-v{version}")
}

/// Mirror path of the archive.
pub fn archive_path(version: &str, platform: &str) -> String {
    format!(
        "{GITHUB}/GreptimeTeam/greptimedb/releases/download/v{version}/{}.tar.gz",
        top_dir(version, platform)
    )
}

/// Mirror path of the checksum file.
pub fn checksum_path(version: &str, platform: &str) -> String {
    format!(
        "{GITHUB}/GreptimeTeam/greptimedb/releases/download/v{version}/{}.sha256sum",
        top_dir(version, platform)
    )
}

/// Mirror path of a release object by tag (`v1.2.0`).
pub fn tag_path(tag: &str) -> String {
    format!("{GITHUB_API}/repos/GreptimeTeam/greptimedb/releases/tags/{tag}")
}

/// Mirror path of the "latest release" object.
pub fn latest_path() -> String {
    format!("{GITHUB_API}/repos/GreptimeTeam/greptimedb/releases/latest")
}

/// The `greptime` wrapper script of a release.
pub fn wrapper(rel: &GreptimeRelease) -> String {
    let knobs = rel.knobs.as_ref().map(|p| p.to_string_lossy().into_owned());
    let mut env = vec![("TESTBED_EMULATED_VERSION", rel.version.as_str())];
    if let Some(k) = &knobs {
        env.push(("TESTBED_KNOBS", k.as_str()));
    }
    crate::wrapper_script("greptime", &env)
}

/// The `.tar.gz` bytes of `rel` for `platform`.
pub fn archive(rel: &GreptimeRelease, platform: &str) -> Vec<u8> {
    let top = match rel.variant {
        Variant::WrongTopDir => format!("greptime-{platform}"),
        _ => top_dir(&rel.version, platform),
    };
    let mut tree = Tree::new().dir(&top, 0o755);
    if rel.variant != Variant::MissingBinary {
        tree = tree.file(&format!("{top}/greptime"), wrapper(rel), 0o755);
    }
    tree = match rel.variant {
        Variant::ExtraTopLevelEntry => tree.file("README.md", "# GreptimeDB\n", 0o644),
        Variant::SymlinkEscape => tree.symlink(&format!("{top}/escape"), "../../../etc/passwd"),
        Variant::HardLink => {
            tree.hardlink(&format!("{top}/greptime-link"), &format!("{top}/greptime"))
        }
        _ => tree,
    };
    tree.tar_gz()
}

/// Puts the archive and checksum of every platform of `rel`, and its `releases/tags/v<V>`
/// object (a prerelease when the version has a `-suffix`). Returns the archives' sha256 by
/// platform.
pub fn publish(mirror: &Mirror, rel: &GreptimeRelease) -> Vec<(String, String)> {
    let mut digests = Vec::new();
    for platform in &rel.platforms {
        let bytes = archive(rel, platform);
        let digest = hex::encode(Sha256::digest(&bytes));
        let sum = match rel.variant {
            Variant::WrongChecksum => Some(hex::encode(Sha256::digest(b"not the archive"))),
            Variant::UppercaseChecksum => Some(digest.to_ascii_uppercase()),
            Variant::MissingChecksum => None,
            _ => Some(digest.clone()),
        };
        mirror.put_bytes(&archive_path(&rel.version, platform), bytes);
        let cpath = checksum_path(&rel.version, platform);
        match sum {
            Some(s) => mirror.put_bytes(&cpath, format!("{s}\n").into_bytes()),
            None => mirror.remove(&cpath),
        }
        digests.push((platform.clone(), digest));
    }
    let tag = format!("v{}", rel.version);
    mirror.put_json(
        &tag_path(&tag),
        &release_object(
            mirror,
            &tag,
            false,
            rel.version.contains('-'),
            &rel.platforms,
        ),
    );
    digests
}

/// A GitHub release object for `tag`.
pub fn release_object(
    mirror: &Mirror,
    tag: &str,
    draft: bool,
    prerelease: bool,
    platforms: &[String],
) -> Value {
    let version = tag.trim_start_matches('v');
    let assets: Vec<Value> = platforms
        .iter()
        .flat_map(|p| {
            [
                (
                    format!("{}.tar.gz", top_dir(version, p)),
                    archive_path(version, p),
                ),
                (
                    format!("{}.sha256sum", top_dir(version, p)),
                    checksum_path(version, p),
                ),
            ]
        })
        .map(|(name, path)| {
            json!({
                "name": name,
                "browser_download_url": format!("{}{path}", mirror.base_url()),
                "content_type": "application/octet-stream",
                "state": "uploaded",
            })
        })
        .collect();
    json!({
        "url": format!("{}{}", mirror.base_url(), tag_path(tag)),
        "tag_name": tag,
        "name": format!("Release {tag}"),
        "draft": draft,
        "prerelease": prerelease,
        "created_at": "2026-11-20T08:00:00Z",
        "published_at": "2026-11-20T09:00:00Z",
        "assets": assets,
    })
}

/// Makes `tag` (e.g. `v1.2.0`) the answer of `releases/latest` (and of `releases/tags/<tag>`)
/// with the given flags — a draft or prerelease answer is what a broken API would return.
pub fn publish_latest(mirror: &Mirror, tag: &str, draft: bool, prerelease: bool) {
    let obj = release_object(mirror, tag, draft, prerelease, &[host_platform()]);
    mirror.put_json(&latest_path(), &obj);
    mirror.put_json(&tag_path(tag), &obj);
}

/// What `testbed serve` offers: GreptimeDB 1.2.0 (latest stable), 1.1.4 and 0.17.1 for the
/// host platform, and a prerelease v1.3.0-beta.1. Each version's wrapper reads its knobs from
/// `<work_dir>/knobs/greptime-<V>.json` (absent = no knobs).
pub fn publish_all(mirror: &Mirror, work_dir: &Path) {
    for v in ["1.2.0", "1.1.4", "0.17.1", "1.3.0-beta.1"] {
        let knobs = work_dir.join("knobs").join(format!("greptime-{v}.json"));
        publish(mirror, &GreptimeRelease::new(v).with_knobs(&knobs));
    }
    publish_latest(mirror, "v1.2.0", false, false);
}
