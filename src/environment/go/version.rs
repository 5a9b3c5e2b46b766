//! Go release numbers: the `--go-version` and `go version` grammars, the default managed
//! version (and its overrides), and the compiled-in digests of its archives.

use std::fmt;

use crate::error::{Error, Result};
use crate::paths::Root;
use crate::platform::Platform;

/// The managed Go installed when no acceptable Go is found and no version is asked for.
pub const DEFAULT_VERSION: GoVersion = GoVersion {
    major: 1,
    minor: 21,
    patch: 13,
};

/// TSBS needs Go 1.21 or newer.
pub const MINIMUM: GoVersion = GoVersion {
    major: 1,
    minor: 21,
    patch: 0,
};

/// SHA-256 of the official go1.21.13 archives, compiled in so that the digest does not come
/// from the same origin as the archive (setup.md §7 item 3). Each value agrees across
/// independent public pins:
/// * cashapp/hermit-packages `go.hcl` (commit 7834205a) — all four;
/// * Vercel's Go builder `packages/go/src/go-helpers.ts` version map (1.21 → 1.21.13) — all four;
/// * a Go SDK table `sdkHashes` for `go1.21.13` (dl.google.com) — all four;
/// * Dockerfiles/provisioning scripts pinning linux-amd64 and linux-arm64, and a nix-style
///   `go_1_21_13` entry (linux-amd64).
///
/// setup.md §1.4 lists the same four and warns of one Dockerfile with a different linux-amd64
/// value: the majority value is used. go.dev's JSON index, when reachable, must agree.
pub const PINNED_1_21_13: [(&str, &str); 4] = [
    (
        "linux-amd64",
        "502fc16d5910562461e6a6631fb6377de2322aad7304bf2bcd23500ba9dab4a7",
    ),
    (
        "linux-arm64",
        "2ca2d70dc9c84feef959eb31f2a5aac33eefd8c97fe48f1548886d737bffabd4",
    ),
    (
        "darwin-amd64",
        "796fd05e8741f6776c505eb201922864f2e32991679b639d9fcb524dbe300c0d",
    ),
    (
        "darwin-arm64",
        "c04ee7bdc0e65cf17133994c40ee9bdfa1b1dc9587b3baedaea39affdb8e5b49",
    ),
];

/// A stable Go release number.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct GoVersion {
    pub major: u32,
    pub minor: u32,
    pub patch: u32,
}

impl fmt::Display for GoVersion {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}.{}.{}", self.major, self.minor, self.patch)
    }
}

fn number(s: &str) -> Option<u32> {
    // Digits only, no leading zeros (Go never writes them).
    if s.is_empty() || !s.bytes().all(|b| b.is_ascii_digit()) || (s.len() > 1 && s.starts_with('0'))
    {
        return None;
    }
    s.parse().ok()
}

impl GoVersion {
    /// Parses `--go-version`: exactly `MAJOR.MINOR.PATCH` (a leading `go` is accepted), at
    /// least 1.21.0.
    pub fn parse_requested(s: &str) -> Result<GoVersion> {
        let bad = || {
            Error::invalid(format!("--go-version {s:?} is not a Go release number"))
                .with_hint("give a stable release such as 1.21.13 or 1.22.5 (MAJOR.MINOR.PATCH)")
        };
        let body = s.strip_prefix("go").unwrap_or(s);
        let parts: Vec<&str> = body.split('.').collect();
        if parts.len() != 3 {
            return Err(bad());
        }
        let v = GoVersion {
            major: number(parts[0]).ok_or_else(bad)?,
            minor: number(parts[1]).ok_or_else(bad)?,
            patch: number(parts[2]).ok_or_else(bad)?,
        };
        if v < MINIMUM {
            return Err(Error::invalid(format!(
                "--go-version {v} is too old; TSBS requires Go {MINIMUM} or newer"
            ))
            .with_hint("give 1.21.0 or newer, or omit --go-version for the default 1.21.13"));
        }
        Ok(v)
    }

    /// Parses the output of `go version`: exactly `go version go<MAJOR>.<MINOR>[.<PATCH>]
    /// <os>/<arch>` after trimming. Devel, RC/beta, gccgo and tagged (`X:...`) builds are
    /// refused. Returns the version and the `<os>/<arch>` token.
    pub fn parse_output(out: &str) -> std::result::Result<(GoVersion, String), String> {
        let text = out.trim();
        let shown = if text.is_empty() { "<empty>" } else { text };
        let fail = || format!("could not parse stable Go version output: {shown}");
        let rest = text.strip_prefix("go version go").ok_or_else(fail)?;
        let mut tokens = rest.split(' ');
        let (Some(ver), Some(os_arch), None) = (tokens.next(), tokens.next(), tokens.next()) else {
            return Err(fail());
        };
        if os_arch.is_empty() || !os_arch.contains('/') {
            return Err(fail());
        }
        let parts: Vec<&str> = ver.split('.').collect();
        let v = match parts.as_slice() {
            [a, b] => (number(a), number(b), Some(0)),
            [a, b, c] => (number(a), number(b), number(c)),
            _ => return Err(fail()),
        };
        match v {
            (Some(major), Some(minor), Some(patch)) => Ok((
                GoVersion {
                    major,
                    minor,
                    patch,
                },
                os_arch.to_string(),
            )),
            _ => Err(fail()),
        }
    }

    /// The go.dev tag, `go1.21.13`.
    pub fn tag(&self) -> String {
        format!("go{self}")
    }
}

/// Overrides the managed version installed by default (below `--go-version`, above
/// `[defaults] go_version` in config.toml).
pub const VERSION_ENV: &str = "TSBSCTL_GO_VERSION";

/// The managed version to install when none is asked for: `TSBSCTL_GO_VERSION` >
/// `[defaults] go_version` > 1.21.13.
pub fn default_version(root: &Root) -> Result<GoVersion> {
    match crate::environment::configured_default(root, VERSION_ENV, "go_version")? {
        Some((v, origin)) => GoVersion::parse_requested(&v).map_err(|e| {
            Error::invalid(e.message.replace("--go-version", &origin))
                .with_hint(e.hint.unwrap_or_default())
        }),
        None => Ok(DEFAULT_VERSION),
    }
}

/// The compiled-in digest of the default version's archive for `platform`, if any.
pub fn pinned_sha256(version: GoVersion, platform: &str) -> Option<&'static str> {
    if version != DEFAULT_VERSION {
        return None;
    }
    PINNED_1_21_13
        .iter()
        .find(|(p, _)| *p == platform)
        .map(|(_, d)| *d)
}

/// `go<V>.<os>-<arch>.tar.gz`.
pub fn archive_name(version: GoVersion, platform: &Platform) -> String {
    format!(
        "go{version}.{}-{}.tar.gz",
        platform.os_str(),
        platform.arch_str()
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn v(major: u32, minor: u32, patch: u32) -> GoVersion {
        GoVersion {
            major,
            minor,
            patch,
        }
    }

    #[test]
    fn version_output_grammar() {
        assert_eq!(
            GoVersion::parse_output("go version go1.21.0 linux/amd64\n").unwrap(),
            (v(1, 21, 0), "linux/amd64".into())
        );
        assert_eq!(
            GoVersion::parse_output("go version go1.24 darwin/arm64")
                .unwrap()
                .0,
            v(1, 24, 0)
        );
        for bad in [
            "go version devel go1.25-abc linux/amd64",
            "go1.21.0",
            "go version go1.22rc1 linux/amd64",
            "go version go1.21.0 X:boringcrypto linux/amd64",
            "go version go1.21.0 linux/amd64 X:boringcrypto",
            "go version go1.21.0",
            "go version go1.21.0  linux/amd64",
            "go version go1.21.01 linux/amd64",
            "go version go1.21.0.1 linux/amd64",
            "go version go1.18 gccgo (GCC) 12.2.0 linux/amd64",
            "",
        ] {
            let e = GoVersion::parse_output(bad).unwrap_err();
            assert!(
                e.contains("could not parse stable Go version output"),
                "{bad}: {e}"
            );
        }
        assert!(GoVersion::parse_output("")
            .unwrap_err()
            .ends_with("<empty>"));
    }

    #[test]
    fn requested_version_grammar() {
        assert_eq!(GoVersion::parse_requested("1.22.5").unwrap(), v(1, 22, 5));
        assert_eq!(
            GoVersion::parse_requested("go1.21.13").unwrap(),
            v(1, 21, 13)
        );
        for bad in [
            "1.22",
            "1.22.5rc1",
            "latest",
            "1.22.05",
            "",
            "1.22.5 ",
            "v1.22.5",
        ] {
            assert_eq!(
                GoVersion::parse_requested(bad).unwrap_err().exit_code(),
                2,
                "{bad}"
            );
        }
        let old = GoVersion::parse_requested("1.20.14").unwrap_err();
        assert_eq!(old.exit_code(), 2);
        assert!(old.message.contains("too old"));
        assert!(v(1, 21, 0) >= MINIMUM && v(1, 20, 14) < MINIMUM && v(2, 0, 0) > MINIMUM);
    }

    #[test]
    fn pins_cover_the_four_platforms_of_the_default_only() {
        for p in ["linux-amd64", "linux-arm64", "darwin-amd64", "darwin-arm64"] {
            let d = pinned_sha256(DEFAULT_VERSION, p).unwrap();
            assert_eq!(d.len(), 64);
        }
        assert!(pinned_sha256(v(1, 22, 5), "linux-amd64").is_none());
        assert!(pinned_sha256(DEFAULT_VERSION, "linux-riscv64").is_none());
    }
}
