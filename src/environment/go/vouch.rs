//! The go.dev download index (`?mode=json&include=all`) and the rule that decides which digest
//! an archive must have: the compiled pin and the index must agree when both speak.

use serde_json::Value;

use crate::error::{Error, Result};
use crate::output::Warning;
use crate::platform::Platform;

use super::version::{archive_name, GoVersion};

/// One archive entry of go.dev's `?mode=json&include=all` index.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct IndexEntry {
    pub filename: String,
    pub sha256: String,
}

/// Finds the archive for `version`/`platform` in the index. `Err` when the document is not the
/// index's shape (not an array); `Ok(None)` when the release or the archive is not listed.
/// Entries with a missing file name, another kind, or a digest that is not 64 lowercase hex
/// characters are skipped.
pub fn find_in_index(
    index: &Value,
    version: GoVersion,
    platform: &Platform,
) -> std::result::Result<Option<IndexEntry>, String> {
    let releases = index
        .as_array()
        .ok_or_else(|| "the Go download index is not a JSON array".to_string())?;
    let tag = version.tag();
    let expected_name = archive_name(version, platform);
    for release in releases {
        if release.get("version").and_then(Value::as_str) != Some(tag.as_str()) {
            continue;
        }
        let Some(files) = release.get("files").and_then(Value::as_array) else {
            continue;
        };
        for f in files {
            let s = |k: &str| f.get(k).and_then(Value::as_str);
            if s("os") != Some(platform.os_str())
                || s("arch") != Some(platform.arch_str())
                || s("kind") != Some("archive")
                || s("filename") != Some(expected_name.as_str())
            {
                continue;
            }
            let Some(sha) = s("sha256") else { continue };
            if sha.len() != 64 || !sha.bytes().all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f')) {
                continue;
            }
            return Ok(Some(IndexEntry {
                filename: expected_name,
                sha256: sha.to_string(),
            }));
        }
    }
    Ok(None)
}

/// Which source vouched for an archive digest.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Vouched {
    pub sha256: String,
    /// `pinned+index` (compiled pin, confirmed by the index), `pinned` (index unreachable or
    /// silent), or `index`.
    pub source: &'static str,
}

/// Decides the expected digest from the compiled pin (if any) and the index (if it could be
/// fetched). A pin and an index that disagree is an integrity error, never a silent pick.
pub fn vouch(
    version: GoVersion,
    platform: &Platform,
    pin: Option<&str>,
    index: std::result::Result<&Value, &Error>,
    index_url: &str,
    warn: &dyn Fn(&Warning),
) -> Result<Vouched> {
    let name = archive_name(version, platform);
    let listed = match index {
        Ok(doc) => match find_in_index(doc, version, platform) {
            Ok(e) => Ok(e),
            Err(why) => Err(why),
        },
        Err(e) => Err(e.message.clone()),
    };
    match (pin, listed) {
        (Some(pin), Ok(Some(entry))) if entry.sha256 == pin => Ok(Vouched {
            sha256: pin.to_string(),
            source: "pinned+index",
        }),
        (Some(pin), Ok(Some(entry))) => Err(Error::integrity(format!(
            "the Go download index at {index_url} gives sha256 {} for {name}, but tsbsctl's compiled pin is {pin}",
            entry.sha256
        ))
        .with_hint("the index or a mirror in between may be compromised or wrong; check TSBSCTL_GO_DL_URL / [sources] go_dl, or pass --go PATH to use a Go you trust")),
        (Some(pin), Ok(None)) => {
            warn(&Warning::GoNotInIndex {
                index_url: index_url.to_string(),
                archive: name.to_string(),
            });
            Ok(Vouched {
                sha256: pin.to_string(),
                source: "pinned",
            })
        }
        (Some(pin), Err(why)) => {
            warn(&Warning::GoIndexUnreadable {
                archive: name.to_string(),
                why: why.to_string(),
            });
            Ok(Vouched {
                sha256: pin.to_string(),
                source: "pinned",
            })
        }
        (None, Ok(Some(entry))) => Ok(Vouched {
            sha256: entry.sha256,
            source: "index",
        }),
        (None, Ok(None)) => Err(Error::invalid(format!(
            "the Go download index at {index_url} has no {name} archive"
        ))
        .with_hint("pick a released Go version that exists for this platform (see https://go.dev/dl/), or omit --go-version for 1.21.13")),
        (None, Err(why)) => Err(Error::failed(format!(
            "could not read the Go download index at {index_url}: {why}"
        ))
        .with_hint(format!(
            "Go {version} has no compiled checksum, so the index must be reachable; check the network or TSBSCTL_GO_DL_URL, or use the default version 1.21.13"
        ))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::environment::go::{pinned_sha256, DEFAULT_VERSION};
    use serde_json::json;

    fn v(major: u32, minor: u32, patch: u32) -> GoVersion {
        GoVersion {
            major,
            minor,
            patch,
        }
    }

    fn linux() -> Platform {
        Platform::from_parts("linux", "x86_64").unwrap()
    }

    fn index(sha: &str) -> Value {
        json!([
            {"version": "go1.22.5", "stable": true, "files": [
                {"filename": "go1.22.5.linux-amd64.tar.gz", "os": "linux", "arch": "amd64",
                 "kind": "archive", "sha256": "b".repeat(64)}]},
            {"version": "go1.21.13", "stable": true, "files": [
                {"filename": "go1.21.13.src.tar.gz", "os": "", "arch": "", "kind": "source", "sha256": "c".repeat(64)},
                {"filename": "go1.21.13.linux-amd64.pkg", "os": "linux", "arch": "amd64", "kind": "installer", "sha256": "d".repeat(64)},
                {"filename": "go1.21.13.linux-amd64.tar.gz", "os": "linux", "arch": "amd64", "kind": "archive", "sha256": "E".repeat(64)},
                {"filename": "go1.21.13.linux-amd64.tar.gz", "os": "linux", "arch": "amd64", "kind": "archive", "sha256": sha},
                {"filename": "go1.21.13.linux-arm64.tar.gz", "os": "linux", "arch": "arm64", "kind": "archive", "sha256": "f".repeat(64)}]}
        ])
    }

    #[test]
    fn index_lookup_skips_other_kinds_and_malformed_digests() {
        let pin = pinned_sha256(DEFAULT_VERSION, "linux-amd64").unwrap();
        let e = find_in_index(&index(pin), DEFAULT_VERSION, &linux())
            .unwrap()
            .unwrap();
        assert_eq!(e.sha256, pin);
        assert_eq!(e.filename, "go1.21.13.linux-amd64.tar.gz");
        assert_eq!(
            find_in_index(&index(pin), v(1, 22, 5), &linux())
                .unwrap()
                .unwrap()
                .sha256,
            "b".repeat(64)
        );
        assert!(find_in_index(&index(pin), v(1, 23, 0), &linux())
            .unwrap()
            .is_none());
        assert!(
            find_in_index(&json!({"version": "go1.21.13"}), DEFAULT_VERSION, &linux()).is_err()
        );
    }

    #[test]
    fn vouching_rules() {
        let pin = pinned_sha256(DEFAULT_VERSION, "linux-amd64").unwrap();
        let warned = std::cell::RefCell::new(Vec::<String>::new());
        let warn = |w: &Warning| warned.borrow_mut().push(w.to_string());
        let p = linux();
        let good = index(pin);
        let r = vouch(DEFAULT_VERSION, &p, Some(pin), Ok(&good), "u", &warn).unwrap();
        assert_eq!((r.sha256.as_str(), r.source), (pin, "pinned+index"));

        let bad = index(&"a".repeat(64));
        let e = vouch(DEFAULT_VERSION, &p, Some(pin), Ok(&bad), "u", &warn).unwrap_err();
        assert_eq!(e.exit_code(), 4);

        let down = Error::failed("connection refused");
        let r = vouch(DEFAULT_VERSION, &p, Some(pin), Err(&down), "u", &warn).unwrap();
        assert_eq!(r.source, "pinned");
        assert_eq!(warned.borrow().len(), 1);

        let r = vouch(v(1, 22, 5), &p, None, Ok(&good), "u", &warn).unwrap();
        assert_eq!((r.sha256, r.source), ("b".repeat(64), "index"));
        assert_eq!(
            vouch(v(1, 23, 0), &p, None, Ok(&good), "u", &warn)
                .unwrap_err()
                .exit_code(),
            2
        );
        assert_eq!(
            vouch(v(1, 22, 5), &p, None, Err(&down), "u", &warn)
                .unwrap_err()
                .exit_code(),
            1
        );
    }
}
