//! Stand-in InfluxDB 3 releases (protocols.md §4.2): the installer script naming the latest
//! versions, and per edition/version/platform `influxdb3-<edition>-<V>_<platform>.tar.gz` with
//! its `.sha256` (`<hex>  <filename>`), under `dl.influxdata.com/influxdb/releases/`.
//!
//! An archive holds one leading directory `influxdb3-<edition>-<V>/` (a guess: the real
//! packager is not public; only "one leading component" is certain) with `influxdb3` (a
//! wrapper script that execs `testbed emulate influxdb3` with `TESTBED_EMULATED_EDITION`,
//! `TESTBED_EMULATED_VERSION` and `TESTBED_KNOBS` baked in) and a small `python/` tree
//! (`python/lib/libpython3.so`, the `python/lib/libpython.so -> libpython3.so` symlink,
//! `python/bin/python3`), like the real distribution whose binary needs its bundled Python.
//! Variants exercise the validators: wrong checksum, bare-hash checksum, no checksum file,
//! extra top-level entry, symlink escape, hard link, other root name, no root, no binary.
//!
//! ```no_run
//! use testbed::mirror::Mirror;
//! use testbed::releases::influxdb3::{self, Installer, Release, Variant};
//! let mirror = Mirror::start().unwrap();
//! influxdb3::publish_installer(&mirror, "3.11.1", "3.11.1");
//! influxdb3::publish(&mirror, &Release::new("core", "3.11.1", "/tmp/knobs.json"));
//! influxdb3::publish(&mirror, &Release::new("core", "3.10.0", "/tmp/k.json").variant(Variant::WrongChecksum));
//! influxdb3::publish_installer_variant(&mirror, "3.11.1", "3.11.1", Installer::DuplicateCore);
//! ```

use crate::mirror::{Mirror, INFLUXDATA_DL, INSTALLER};
use crate::tarball::Tree;
use std::path::Path;

/// The versions `publish_all` serves (and the installer script names).
pub const CORE_LATEST: &str = "3.11.1";
pub const ENTERPRISE_LATEST: &str = "3.11.1";

/// The platform tag of this host as InfluxData names it, if it is one they publish.
pub fn host_platform() -> Option<&'static str> {
    match (std::env::consts::OS, std::env::consts::ARCH) {
        ("linux", "x86_64") => Some("linux_amd64"),
        ("linux", "aarch64") => Some("linux_arm64"),
        ("macos", "aarch64") => Some("darwin_arm64"),
        _ => None,
    }
}

/// What is wrong with a published archive (for validator tests).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Variant {
    #[default]
    Good,
    /// The `.sha256` names a digest that is not the archive's.
    WrongChecksum,
    /// The `.sha256` holds the bare digest, no file name (also accepted by the reference).
    BareChecksum,
    /// No `.sha256` at all (404).
    MissingChecksum,
    /// A second top-level entry beside the root directory.
    ExtraTopLevel,
    /// `python/lib/escape -> ../../../outside` points out of the tree.
    SymlinkEscape,
    /// `python/lib/hard` is a hard link to the binary.
    HardLink,
    /// The root directory carries the platform: `influxdb3-<edition>-<V>_<platform>/`.
    PlatformRootName,
    /// No `influxdb3` in the root.
    NoBinary,
    /// No leading directory: `influxdb3` and `python/` at the archive's root (the vendor's
    /// installer accepts that too).
    NoRoot,
    /// The top directory is named like the binary: `influxdb3/influxdb3`, `influxdb3/python/`
    /// (the vendor's installer accepts it; the real asset's top name is unconfirmed).
    RootNamedLikeTheBinary,
}

/// One release to publish.
#[derive(Debug, Clone)]
pub struct Release {
    /// `core` or `enterprise`.
    pub edition: String,
    pub version: String,
    /// `linux_amd64`, `linux_arm64`, `darwin_arm64`.
    pub platform: String,
    /// Knob file the installed wrapper points at (outside any install tree).
    pub knobs: std::path::PathBuf,
    pub variant: Variant,
}

impl Release {
    /// A good release for the host platform (linux_amd64 on hosts InfluxData does not build for).
    pub fn new(edition: &str, version: &str, knobs: impl Into<std::path::PathBuf>) -> Release {
        Release {
            edition: edition.to_string(),
            version: version.to_string(),
            platform: host_platform().unwrap_or("linux_amd64").to_string(),
            knobs: knobs.into(),
            variant: Variant::Good,
        }
    }

    pub fn variant(mut self, v: Variant) -> Release {
        self.variant = v;
        self
    }

    pub fn platform(mut self, p: &str) -> Release {
        self.platform = p.to_string();
        self
    }

    /// `influxdb3-<edition>-<V>_<platform>.tar.gz`
    pub fn file_name(&self) -> String {
        format!(
            "influxdb3-{}-{}_{}.tar.gz",
            self.edition, self.version, self.platform
        )
    }

    /// Path below the InfluxData download host: `/influxdb/releases/<file>`.
    pub fn path(&self) -> String {
        format!("/influxdb/releases/{}", self.file_name())
    }

    /// The root directory inside the archive (empty: none).
    pub fn root(&self) -> String {
        match self.variant {
            Variant::PlatformRootName => format!(
                "influxdb3-{}-{}_{}",
                self.edition, self.version, self.platform
            ),
            Variant::NoRoot => String::new(),
            Variant::RootNamedLikeTheBinary => "influxdb3".into(),
            _ => format!("influxdb3-{}-{}", self.edition, self.version),
        }
    }

    /// The wrapper script installed as `influxdb3`: `testbed::wrapper_script` plus
    /// `TESTBED_INFLUXDB3_DIR` = the directory the script runs from, so the emulator can
    /// refuse to start without the bundled `python/` beside it, as the real binary does.
    pub fn wrapper(&self) -> String {
        let base = crate::wrapper_script(
            "influxdb3",
            &[
                ("TESTBED_EMULATED_VERSION", &self.version),
                ("TESTBED_EMULATED_EDITION", &self.edition),
                ("TESTBED_KNOBS", &self.knobs.to_string_lossy()),
            ],
        );
        let rest = base.strip_prefix("#!/bin/sh\n").unwrap_or(&base);
        format!(
            "#!/bin/sh\nTESTBED_INFLUXDB3_DIR=$(CDPATH= cd -- \"$(dirname -- \"$0\")\" && pwd)\nexport TESTBED_INFLUXDB3_DIR\n{rest}"
        )
    }

    /// The archive bytes (deterministic for a given release).
    pub fn archive(&self) -> Vec<u8> {
        let top = self.root();
        // `root` prefixes every path: `<top>/` or nothing.
        let root = if top.is_empty() {
            ".".to_string()
        } else {
            top.clone()
        };
        let mut t = Tree::new();
        if !top.is_empty() {
            t = t.dir(&top, 0o755);
        }
        if self.variant != Variant::NoBinary {
            t = t.file(&format!("{root}/influxdb3"), self.wrapper(), 0o755);
        }
        t = t
            .dir(&format!("{root}/python"), 0o755)
            .dir(&format!("{root}/python/bin"), 0o755)
            .file(
                &format!("{root}/python/bin/python3"),
                "#!/bin/sh\necho 'Python 3.11.13 (stand-in)'\n",
                0o755,
            )
            .dir(&format!("{root}/python/lib"), 0o755)
            .file(
                &format!("{root}/python/lib/libpython3.so"),
                format!(
                    "stand-in libpython for influxdb3 {} {}\n",
                    self.edition, self.version
                ),
                0o644,
            )
            .symlink(&format!("{root}/python/lib/libpython.so"), "libpython3.so")
            .file(
                &format!("{root}/LICENSE"),
                "Stand-in licence text for a test release.\n",
                0o644,
            );
        match self.variant {
            Variant::ExtraTopLevel => t = t.file("README.md", "not inside the root\n", 0o644),
            Variant::SymlinkEscape => {
                t = t.symlink(&format!("{root}/python/lib/escape"), "../../../outside")
            }
            Variant::HardLink => {
                t = t.hardlink(
                    &format!("{root}/python/lib/hard"),
                    &format!("{root}/LICENSE"),
                )
            }
            _ => {}
        }
        t.tar_gz()
    }

    /// The `.sha256` body for `archive` (None when the variant has no checksum file).
    pub fn checksum_file(&self, archive: &[u8]) -> Option<String> {
        use sha2::Digest;
        let real = hex::encode(sha2::Sha256::digest(archive));
        match self.variant {
            Variant::MissingChecksum => None,
            Variant::WrongChecksum => Some(format!(
                "{}  {}\n",
                hex::encode(sha2::Sha256::digest(b"not the archive")),
                self.file_name()
            )),
            Variant::BareChecksum => Some(format!("{real}\n")),
            _ => Some(format!("{real}  {}\n", self.file_name())),
        }
    }
}

/// How the installer script names the versions (for resolver tests).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Installer {
    #[default]
    Good,
    /// No `INFLUXDB_OSS_VERSION` assignment.
    MissingCore,
    /// No `INFLUXDB_ENT_VERSION` assignment.
    MissingEnterprise,
    /// `INFLUXDB_OSS_VERSION` assigned twice (different values).
    DuplicateCore,
    /// `INFLUXDB_ENT_VERSION` assigned twice.
    DuplicateEnterprise,
    /// `INFLUXDB_OSS_VERSION=3.11.1` without quotes.
    UnquotedCore,
    /// `INFLUXDB_ENT_VERSION=3.11.1` without quotes.
    UnquotedEnterprise,
    /// An old single `INFLUXDB_VERSION="..."` script.
    OldSingleVersion,
}

/// The installer script text, shaped like `install_influxdb3.sh`.
pub fn installer_script(core: &str, enterprise: &str, variant: Installer) -> String {
    let oss = match variant {
        Installer::MissingCore | Installer::OldSingleVersion => String::new(),
        Installer::UnquotedCore => format!("INFLUXDB_OSS_VERSION={core}\n"),
        Installer::DuplicateCore => {
            format!("INFLUXDB_OSS_VERSION=\"{core}\"\nINFLUXDB_OSS_VERSION=\"3.0.0\"\n")
        }
        _ => format!("INFLUXDB_OSS_VERSION=\"{core}\"\n"),
    };
    let ent = match variant {
        Installer::MissingEnterprise | Installer::OldSingleVersion => String::new(),
        Installer::UnquotedEnterprise => format!("INFLUXDB_ENT_VERSION={enterprise}\n"),
        Installer::DuplicateEnterprise => {
            format!("INFLUXDB_ENT_VERSION=\"{enterprise}\"\nINFLUXDB_ENT_VERSION=\"3.0.0\"\n")
        }
        _ => format!("INFLUXDB_ENT_VERSION=\"{enterprise}\"\n"),
    };
    let single = if variant == Installer::OldSingleVersion {
        format!("INFLUXDB_VERSION=\"{core}\"\n")
    } else {
        String::new()
    };
    format!(
        r#"#!/bin/sh -e

# ==========================
# Script Configuration
# ==========================

readonly GREEN='\033[0;32m'
readonly BLUE='\033[0;34m'
readonly BOLD='\033[1m'
readonly BOLDGREEN='\033[1;32m'
readonly DIM='\033[2m'
readonly NC='\033[0m' # No Color

# No diagnostics for: 'printf "...${{FOO}}"'
# shellcheck disable=SC2059

ARCHITECTURE=$(uname -m)
ARTIFACT=""
OS=""
INSTALL_LOC=~/.influxdb
BINARY_NAME="influxdb3"
PORT=8181

# Set the default (latest) version here. Users may specify a version using the
# --version arg (handled below)
{single}{oss}{ent}
# Base URLs
BASE_URL="https://dl.influxdata.com/influxdb/releases"
EDITION="Core"
EDITION_TAG="core"

# Parse command line arguments
while [ $# -gt 0 ]; do
    case "$1" in
        --version)
            INFLUXDB_VERSION="$2"
            shift 2
            ;;
        enterprise)
            EDITION="Enterprise"
            EDITION_TAG="enterprise"
            shift 1
            ;;
        *)
            echo "Usage: $0 [enterprise] [--version VERSION]"
            exit 1
            ;;
    esac
done

if [ -z "$INFLUXDB_VERSION" ]; then
    if [ "$EDITION" = "Core" ]; then
        INFLUXDB_VERSION="${{INFLUXDB_OSS_VERSION}}"
    else
        INFLUXDB_VERSION="${{INFLUXDB_ENT_VERSION}}"
    fi
fi

case "$(uname -s)" in
    Linux*)  OS="Linux";;
    Darwin*) OS="Darwin";;
    *)       OS="UNKNOWN";;
esac

if [ "${{OS}}" = "Linux" ]; then
    if [ "${{ARCHITECTURE}}" = "x86_64" ] || [ "${{ARCHITECTURE}}" = "amd64" ]; then
        ARTIFACT="linux_amd64"
    elif [ "${{ARCHITECTURE}}" = "aarch64" ] || [ "${{ARCHITECTURE}}" = "arm64" ]; then
        ARTIFACT="linux_arm64"
    fi
elif [ "${{OS}}" = "Darwin" ]; then
    if [ "${{ARCHITECTURE}}" = "x86_64" ]; then
        printf "Intel Mac support is coming soon!\n"
        exit 0
    else
        ARTIFACT="darwin_arm64"
    fi
fi

[ -n "${{ARTIFACT}}" ] || {{
    printf "Unfortunately this script doesn't support your '${{OS}}' | '${{ARCHITECTURE}}' setup.\n"
    exit 1
}}

URL="${{BASE_URL}}/influxdb3-${{EDITION_TAG}}-${{INFLUXDB_VERSION}}_${{ARTIFACT}}.tar.gz"

printf "\n${{BOLD}}Downloading InfluxDB 3 %s %s to %s${{NC}}\n" "$EDITION" "$INFLUXDB_VERSION" "$INSTALL_LOC"
mkdir -p "$INSTALL_LOC"
curl --proto '=https' --tlsv1.2 -sSfL "$URL" -o "$INSTALL_LOC/influxdb3.tar.gz"
curl --proto '=https' --tlsv1.2 -sSfL "$URL.sha256" -o "$INSTALL_LOC/influxdb3.tar.gz.sha256"
EXPECTED=$(cut -d ' ' -f 1 < "$INSTALL_LOC/influxdb3.tar.gz.sha256")
tar -xf "$INSTALL_LOC/influxdb3.tar.gz" --strip-components=1 -C "$INSTALL_LOC"
printf "${{BOLDGREEN}}InfluxDB 3 %s is installed in %s${{NC}}\n" "$EDITION" "$INSTALL_LOC"
"#
    )
}

/// Puts `rel`'s archive at `<INFLUXDATA_DL>/influxdb/releases/<file>` and its `.sha256` beside
/// it (removed for `Variant::MissingChecksum`). Returns the archive bytes.
pub fn publish(mirror: &Mirror, rel: &Release) -> Vec<u8> {
    let archive = rel.archive();
    let path = format!("{INFLUXDATA_DL}{}", rel.path());
    mirror.put_bytes(&path, archive.clone());
    match rel.checksum_file(&archive) {
        Some(sum) => mirror.put_bytes(&format!("{path}.sha256"), sum.into_bytes()),
        None => mirror.remove(&format!("{path}.sha256")),
    }
    archive
}

/// Puts the installer script naming `core_version` and `ent_version` at `INSTALLER`.
pub fn publish_installer(mirror: &Mirror, core_version: &str, ent_version: &str) {
    publish_installer_variant(mirror, core_version, ent_version, Installer::Good);
}

/// Puts an installer script variant (missing, duplicated, unquoted assignment, ...).
pub fn publish_installer_variant(
    mirror: &Mirror,
    core_version: &str,
    ent_version: &str,
    variant: Installer,
) {
    mirror.put_bytes(
        INSTALLER,
        installer_script(core_version, ent_version, variant).into_bytes(),
    );
}

/// For `testbed serve`: Core and Enterprise [`CORE_LATEST`]/[`ENTERPRISE_LATEST`] for the host
/// platform, with knob files `<work_dir>/knobs/influxdb3-<edition>-<V>.json` (created as `{}`;
/// edit them to make the installed servers misbehave), and the installer naming them.
pub fn publish_all(mirror: &Mirror, work_dir: &Path) {
    let knob_dir = work_dir.join("knobs");
    let _ = std::fs::create_dir_all(&knob_dir);
    for (edition, version) in [("core", CORE_LATEST), ("enterprise", ENTERPRISE_LATEST)] {
        let knobs = knob_dir.join(format!("influxdb3-{edition}-{version}.json"));
        if !knobs.exists() {
            let _ = std::fs::write(&knobs, "{}\n");
        }
        publish(mirror, &Release::new(edition, version, knobs));
    }
    publish_installer(mirror, CORE_LATEST, ENTERPRISE_LATEST);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_and_checksums() {
        let r = Release::new("core", "3.11.1", "/k.json").platform("linux_amd64");
        assert_eq!(r.file_name(), "influxdb3-core-3.11.1_linux_amd64.tar.gz");
        assert_eq!(
            r.path(),
            "/influxdb/releases/influxdb3-core-3.11.1_linux_amd64.tar.gz"
        );
        let a = r.archive();
        assert_eq!(a, r.archive(), "deterministic");
        let sum = r.checksum_file(&a).unwrap();
        let re =
            regex::Regex::new(r"^[0-9a-f]{64}  influxdb3-core-3\.11\.1_linux_amd64\.tar\.gz\n$")
                .unwrap();
        assert!(re.is_match(&sum), "{sum}");
        let wrong = r
            .clone()
            .variant(Variant::WrongChecksum)
            .checksum_file(&a)
            .unwrap();
        assert_ne!(wrong[..64], sum[..64]);
        assert_eq!(
            r.clone()
                .variant(Variant::BareChecksum)
                .checksum_file(&a)
                .unwrap(),
            format!("{}\n", &sum[..64])
        );
        assert!(r
            .variant(Variant::MissingChecksum)
            .checksum_file(&a)
            .is_none());
    }

    fn entries(gz: &[u8]) -> Vec<(String, tar::EntryType, Option<String>)> {
        let mut ar = tar::Archive::new(flate2::read::GzDecoder::new(gz));
        ar.entries()
            .unwrap()
            .map(|e| {
                let e = e.unwrap();
                (
                    e.path().unwrap().to_string_lossy().into_owned(),
                    e.header().entry_type(),
                    e.link_name()
                        .unwrap()
                        .map(|l| l.to_string_lossy().into_owned()),
                )
            })
            .collect()
    }

    #[test]
    fn archive_layout_and_variants() {
        let r = Release::new("enterprise", "3.11.1", "/tmp/knobs.json");
        let e = entries(&r.archive());
        assert!(e
            .iter()
            .all(|(p, _, _)| p.starts_with("influxdb3-enterprise-3.11.1")));
        assert!(e
            .iter()
            .any(|(p, _, _)| p == "influxdb3-enterprise-3.11.1/influxdb3"));
        assert!(e
            .iter()
            .any(|(p, t, l)| p.ends_with("python/lib/libpython.so")
                && *t == tar::EntryType::Symlink
                && l.as_deref() == Some("libpython3.so")));
        assert!(r
            .wrapper()
            .contains("TESTBED_EMULATED_EDITION='enterprise'"));
        assert!(r.wrapper().contains("TESTBED_KNOBS='/tmp/knobs.json'"));
        let extra = entries(&r.clone().variant(Variant::ExtraTopLevel).archive());
        assert!(extra.iter().any(|(p, _, _)| p == "README.md"));
        let esc = entries(&r.clone().variant(Variant::SymlinkEscape).archive());
        assert!(esc
            .iter()
            .any(|(_, _, l)| l.as_deref() == Some("../../../outside")));
        let hard = entries(&r.clone().variant(Variant::HardLink).archive());
        assert!(hard.iter().any(|(_, t, _)| *t == tar::EntryType::Link));
        let noroot = entries(&r.clone().variant(Variant::PlatformRootName).archive());
        assert!(noroot[0].0.contains(&format!("_{}", r.platform)));
        let nobin = entries(&r.variant(Variant::NoBinary).archive());
        assert!(!nobin.iter().any(|(p, _, _)| p.ends_with("/influxdb3")));
    }

    #[test]
    fn installer_variants() {
        let count = |s: &str, var: &str, quoted: bool| {
            s.lines()
                .filter(|l| {
                    let l = l.trim();
                    l.strip_prefix(&format!("{var}="))
                        .is_some_and(|v| v.starts_with('"') == quoted && !v.contains('$'))
                })
                .count()
        };
        let good = installer_script("3.11.1", "3.11.2", Installer::Good);
        assert!(good.contains("\nINFLUXDB_OSS_VERSION=\"3.11.1\"\n"));
        assert!(good.contains("\nINFLUXDB_ENT_VERSION=\"3.11.2\"\n"));
        assert_eq!(count(&good, "INFLUXDB_OSS_VERSION", true), 1);
        let s = installer_script("3.11.1", "3.11.2", Installer::MissingCore);
        assert_eq!(count(&s, "INFLUXDB_OSS_VERSION", true), 0);
        let s = installer_script("3.11.1", "3.11.2", Installer::DuplicateEnterprise);
        assert_eq!(count(&s, "INFLUXDB_ENT_VERSION", true), 2);
        let s = installer_script("3.11.1", "3.11.2", Installer::UnquotedCore);
        assert_eq!(count(&s, "INFLUXDB_OSS_VERSION", true), 0);
        assert_eq!(count(&s, "INFLUXDB_OSS_VERSION", false), 1);
        let s = installer_script("3.11.1", "3.11.2", Installer::OldSingleVersion);
        assert!(s.contains("\nINFLUXDB_VERSION=\"3.11.1\"\n"));
        assert_eq!(count(&s, "INFLUXDB_ENT_VERSION", true), 0);
    }
}
