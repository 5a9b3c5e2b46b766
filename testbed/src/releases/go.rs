//! Stand-in Go releases served by the mirror (protocols.md §4.3): archives
//! `<GO_DL>/go<V>.<os>-<arch>.tar.gz` holding `go/` with `go/bin/go` = a wrapper around the
//! `go` emulator, and the `<GO_DL>/?mode=json&include=all` index listing every version
//! published on that mirror (newest first, like go.dev).

use std::collections::HashMap;
use std::path::Path;
use std::sync::{Mutex, OnceLock};

use serde_json::{json, Value};
use sha2::{Digest, Sha256};

use crate::mirror::{Mirror, GO_DL};
use crate::tarball::Tree;

/// The index path on the mirror, query included.
pub const INDEX_PATH: &str = "/go.dev/dl/?mode=json&include=all";

/// What [`publish`] put on the mirror.
#[derive(Debug, Clone)]
pub struct Published {
    pub version: String,
    /// `go1.22.5.linux-amd64.tar.gz`
    pub filename: String,
    /// Mirror path of the archive (`/go.dev/dl/go1.22.5.linux-amd64.tar.gz`).
    pub path: String,
    pub sha256: String,
    pub bytes: Vec<u8>,
}

/// Index entries per mirror (keyed by base URL), so that several `publish` calls accumulate.
fn registry() -> &'static Mutex<HashMap<String, Vec<Value>>> {
    static R: OnceLock<Mutex<HashMap<String, Vec<Value>>>> = OnceLock::new();
    R.get_or_init(|| Mutex::new(HashMap::new()))
}

/// The archive bytes of a stand-in Go `version` for `platform` (`linux-amd64`), whose
/// `go/bin/go` reads its knobs from `knobs_path`.
pub fn archive(version: &str, platform: &str, knobs_path: &Path) -> Vec<u8> {
    let go_platform = platform.replacen('-', "/", 1);
    let knobs = knobs_path.display().to_string();
    let script = crate::wrapper_script(
        "go",
        &[
            ("TESTBED_EMULATED_VERSION", version),
            ("TESTBED_GO_PLATFORM", &go_platform),
            ("TESTBED_KNOBS", &knobs),
        ],
    );
    Tree::new()
        .dir("go", 0o755)
        .file(
            "go/VERSION",
            format!("go{version}\ntime 2024-08-06T15:47:27Z\n"),
            0o644,
        )
        .file(
            "go/LICENSE",
            "Copyright 2009 The Go Authors.\n(testbed stand-in)\n",
            0o644,
        )
        .file(
            "go/README.md",
            "# The Go Programming Language\n\n(testbed stand-in)\n",
            0o644,
        )
        .dir("go/bin", 0o755)
        .file("go/bin/go", script, 0o755)
        .dir("go/src", 0o755)
        .dir("go/src/runtime", 0o755)
        .file(
            "go/src/runtime/extern.go",
            "// Package runtime (testbed stand-in).\npackage runtime\n",
            0o644,
        )
        .dir("go/pkg", 0o755)
        .dir("go/pkg/tool", 0o755)
        .tar_gz()
}

/// One go.dev index `files` entry.
pub fn index_file(version: &str, os: &str, arch: &str, sha256: &str, size: u64) -> Value {
    json!({
        "filename": format!("go{version}.{os}-{arch}.tar.gz"),
        "os": os,
        "arch": arch,
        "version": format!("go{version}"),
        "sha256": sha256,
        "size": size,
        "kind": "archive",
    })
}

/// Puts `releases` (go.dev index release objects) as the mirror's index, replacing what
/// [`publish`] accumulated. For tests that need a particular (e.g. disagreeing) index.
pub fn put_index(mirror: &Mirror, releases: Vec<Value>) {
    registry()
        .lock()
        .unwrap()
        .insert(mirror.base_url(), releases.clone());
    mirror.put_json(INDEX_PATH, &Value::Array(releases));
}

/// Publishes stand-in Go `version` for `platform` (`linux-amd64`, `darwin-arm64`, ...) on the
/// mirror: the archive and an index entry (alongside a source and an installer entry that are
/// listed but not served, as on go.dev).
pub fn publish(mirror: &Mirror, version: &str, platform: &str, knobs_path: &Path) -> Published {
    let (os, arch) = platform.split_once('-').expect("platform is <os>-<arch>");
    let bytes = archive(version, platform, knobs_path);
    let sha256 = hex::encode(Sha256::digest(&bytes));
    let filename = format!("go{version}.{os}-{arch}.tar.gz");
    let path = format!("{GO_DL}/{filename}");
    mirror.put_bytes(&path, bytes.clone());

    let mut reg = registry().lock().unwrap();
    let releases = reg.entry(mirror.base_url()).or_default();
    let tag = format!("go{version}");
    let pos = match releases.iter().position(|r| r["version"] == tag) {
        Some(p) => p,
        None => {
            releases.push(json!({
                "version": tag,
                "stable": true,
                "files": [
                    {"filename": format!("go{version}.src.tar.gz"), "os": "", "arch": "",
                     "version": tag, "sha256": "0".repeat(64), "size": 27_000_000, "kind": "source"},
                ],
            }));
            releases.len() - 1
        }
    };
    let files = releases[pos]["files"].as_array_mut().expect("files array");
    files.retain(|f| !(f["os"] == os && f["arch"] == arch));
    files.push(json!({
        "filename": format!("go{version}.{os}-{arch}.pkg"), "os": os, "arch": arch,
        "version": tag, "sha256": "1".repeat(64), "size": 70_000_000, "kind": "installer",
    }));
    files.push(index_file(version, os, arch, &sha256, bytes.len() as u64));
    // Newest first, like go.dev.
    releases.sort_by(|a, b| {
        version_key(b["version"].as_str().unwrap_or(""))
            .cmp(&version_key(a["version"].as_str().unwrap_or("")))
    });
    mirror.put_json(INDEX_PATH, &Value::Array(releases.clone()));
    Published {
        version: version.to_string(),
        filename,
        path,
        sha256,
        bytes,
    }
}

fn version_key(tag: &str) -> Vec<u64> {
    tag.trim_start_matches("go")
        .split('.')
        .map(|p| p.parse().unwrap_or(0))
        .collect()
}

/// The host platform in Go's spelling (`linux-amd64`).
pub fn host_platform() -> String {
    let os = match std::env::consts::OS {
        "macos" => "darwin",
        o => o,
    };
    let arch = match std::env::consts::ARCH {
        "x86_64" => "amd64",
        "aarch64" => "arm64",
        a => a,
    };
    format!("{os}-{arch}")
}

/// For `testbed serve`: a stand-in Go 1.22.12 for the host (knob file `<work_dir>/knobs.json`,
/// shared with the tools it builds) and a
/// fake TSBS repository at `<work_dir>/tsbs`; [`serve_env`] gives the variables that point
/// tsbsctl at them. Go 1.21.13 is deliberately not published: its compiled checksums could
/// never match a stand-in, so use `tsbsctl env prepare --go-version 1.22.12` (or export
/// `TSBSCTL_GO_VERSION=1.22.12`).
pub fn publish_all(mirror: &Mirror, work_dir: &Path) {
    std::fs::create_dir_all(work_dir).expect("create the serve work directory");
    publish(
        mirror,
        SERVE_VERSION,
        &host_platform(),
        &work_dir.join("knobs.json"),
    );
    if !work_dir.join("tsbs").join(".git").exists() {
        crate::tsbs_repo::create(work_dir).expect("create the fake TSBS repository");
    }
}

/// The variables that point tsbsctl at what [`publish_all`] made: `TSBSCTL_TSBS_REPO`,
/// `TSBSCTL_TSBS_REV` (the fake repository's commit) and `TSBSCTL_GO_VERSION`.
pub fn serve_env(work_dir: &Path) -> Vec<(String, String)> {
    let repo = work_dir.join("tsbs");
    let commit = crate::tsbs_repo::git(&repo, &["rev-parse", "HEAD"]).unwrap_or_default();
    vec![
        ("TSBSCTL_TSBS_REPO".into(), crate::tsbs_repo::url(&repo)),
        ("TSBSCTL_TSBS_REV".into(), commit),
        ("TSBSCTL_GO_VERSION".into(), SERVE_VERSION.into()),
    ]
}

/// The Go version `publish_all` serves.
pub const SERVE_VERSION: &str = "1.22.12";
