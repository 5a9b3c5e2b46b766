//! Finding a PostgreSQL installation (reference §8.1): TimescaleDB ships as OS packages, so
//! `install` pins what is on this machine instead of downloading: the bin directory, the
//! binaries tsbsctl runs and their SHA-256, `postgres --version`, and whether the
//! `timescaledb` extension is there (its `timescaledb.control` under the share directory).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;

use serde::{Deserialize, Serialize};

use crate::error::{Error, Result};
use crate::hash::sha256_file;
use crate::output::NoProgress;

/// The binaries a managed server needs. On Debian they are not on PATH (reference §8.1).
pub const BINARIES: &[&str] = &["initdb", "pg_ctl", "postgres", "pg_isready", "psql"];

/// How the bin directory was chosen.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum FoundBy {
    /// `--pg-bin DIR`.
    Flag,
    /// `pg_config --bindir` of the `pg_config` on PATH.
    PgConfig,
    /// `/usr/lib/postgresql/<ver>/bin`, the highest version.
    Debian,
    /// `/opt/homebrew/opt/postgresql@<ver>/bin` or `/usr/local/opt/...`.
    Homebrew,
}

/// One pinned binary.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Binary {
    pub path: PathBuf,
    pub sha256: String,
    pub size: u64,
}

/// `postgres --version`, parsed.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PgVersion {
    /// The whole line: `postgres (PostgreSQL) 15.18 (Debian 15.18-0+deb12u1)`.
    pub text: String,
    /// `15.18`.
    pub version: String,
    pub major: u32,
    /// 0 for a development or beta build (`16devel`, `17beta1`).
    pub minor: u32,
}

/// The `timescaledb` extension as the installation ships it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Extension {
    pub control_file: PathBuf,
    pub default_version: String,
}

/// A PostgreSQL installation as a workspace binds it (immutably: `verify` compares the
/// checksums again).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PgInstallation {
    pub bin_dir: PathBuf,
    pub found_by: FoundBy,
    pub version: PgVersion,
    /// Name (`initdb`, ...) → pinned binary.
    pub binaries: BTreeMap<String, Binary>,
    /// `pg_config --sharedir`, when a `pg_config` of this installation answered.
    pub share_dir: Option<PathBuf>,
    /// `None`: the extension is not installed (plain PostgreSQL only).
    pub timescaledb: Option<Extension>,
}

impl PgInstallation {
    pub fn binary(&self, name: &str) -> PathBuf {
        self.binaries
            .get(name)
            .map(|b| b.path.clone())
            .unwrap_or_else(|| self.bin_dir.join(name))
    }

    pub fn extension_version(&self) -> Option<&str> {
        self.timescaledb
            .as_ref()
            .map(|e| e.default_version.as_str())
    }

    /// The binaries whose checksum no longer matches (or that are gone), with what changed.
    pub fn changed_binaries(&self) -> Vec<String> {
        let mut out = Vec::new();
        for (name, b) in &self.binaries {
            match sha256_file(&b.path, &NoProgress) {
                Ok((sum, _)) if sum == b.sha256 => {}
                Ok((sum, _)) => out.push(format!(
                    "{name} ({}): sha256 {sum}, pinned {}",
                    b.path.display(),
                    b.sha256
                )),
                Err(e) => out.push(format!("{name} ({}): {}", b.path.display(), e.message)),
            }
        }
        out
    }
}

/// Where to look, for tests: the roots that stand for `/usr/lib/postgresql` and the Homebrew
/// prefixes, and whether to ask the `pg_config` on PATH.
#[derive(Debug, Clone)]
pub struct SearchPaths {
    pub use_path_pg_config: bool,
    pub debian_root: PathBuf,
    pub homebrew_roots: Vec<PathBuf>,
}

impl Default for SearchPaths {
    fn default() -> Self {
        SearchPaths {
            use_path_pg_config: true,
            debian_root: PathBuf::from("/usr/lib/postgresql"),
            homebrew_roots: vec![
                PathBuf::from("/opt/homebrew/opt"),
                PathBuf::from("/usr/local/opt"),
            ],
        }
    }
}

/// Finds and pins an installation: `--pg-bin DIR` when given, else the first of
/// `pg_config --bindir`, the highest Debian `/usr/lib/postgresql/<ver>/bin`, the highest
/// Homebrew `postgresql@<ver>` that holds every binary in [`BINARIES`].
pub fn find(pg_bin: Option<&Path>, search: &SearchPaths) -> Result<PgInstallation> {
    if let Some(dir) = pg_bin {
        return pin(dir, FoundBy::Flag);
    }
    let mut tried = Vec::new();
    if search.use_path_pg_config {
        if let Some(dir) = pg_config_value(Path::new("pg_config"), "--bindir") {
            let dir = PathBuf::from(dir);
            if has_all_binaries(&dir) {
                return pin(&dir, FoundBy::PgConfig);
            }
            tried.push(dir);
        }
    }
    for (dir, how) in versioned_dirs(&search.debian_root, "", "bin")
        .into_iter()
        .map(|d| (d, FoundBy::Debian))
        .chain(search.homebrew_roots.iter().flat_map(|r| {
            versioned_dirs(r, "postgresql@", "bin")
                .into_iter()
                .map(|d| (d, FoundBy::Homebrew))
        }))
    {
        if has_all_binaries(&dir) {
            return pin(&dir, how);
        }
        tried.push(dir);
    }
    let tried = if tried.is_empty() {
        "no candidate directory exists".to_string()
    } else {
        format!(
            "tried {}",
            tried
                .iter()
                .map(|p| p.display().to_string())
                .collect::<Vec<_>>()
                .join(", ")
        )
    };
    Err(Error::invalid(format!(
        "no PostgreSQL installation found ({tried})"
    ))
    .with_hint(
        "install PostgreSQL (Debian: apt-get install postgresql) or name its bin directory with --pg-bin DIR",
    ))
}

fn has_all_binaries(dir: &Path) -> bool {
    BINARIES.iter().all(|b| dir.join(b).is_file())
}

/// `<root>/<prefix><ver>/<tail>` directories, highest version first (numeric order, so 9.6 <
/// 10 < 15 < 16).
fn versioned_dirs(root: &Path, prefix: &str, tail: &str) -> Vec<PathBuf> {
    let Ok(entries) = std::fs::read_dir(root) else {
        return Vec::new();
    };
    let mut found: Vec<(Vec<u64>, PathBuf)> = entries
        .flatten()
        .filter_map(|e| {
            let name = e.file_name().to_string_lossy().into_owned();
            let ver = name.strip_prefix(prefix)?;
            let key: Option<Vec<u64>> = ver.split('.').map(|p| p.parse().ok()).collect();
            Some((key?, e.path().join(tail)))
        })
        .filter(|(_, p)| p.is_dir())
        .collect();
    found.sort_by(|a, b| b.0.cmp(&a.0));
    found.into_iter().map(|(_, p)| p).collect()
}

fn pg_config_value(pg_config: &Path, flag: &str) -> Option<String> {
    let out = Command::new(pg_config).arg(flag).output().ok()?;
    if !out.status.success() {
        return None;
    }
    let s = String::from_utf8_lossy(&out.stdout).trim().to_string();
    (!s.is_empty()).then_some(s)
}

/// Pins the installation in `dir`: every binary of [`BINARIES`] must be there.
pub fn pin(dir: &Path, found_by: FoundBy) -> Result<PgInstallation> {
    let bin_dir = std::fs::canonicalize(dir)
        .map_err(|e| Error::invalid(format!("PostgreSQL bin directory {}: {e}", dir.display())))?;
    let missing: Vec<&str> = BINARIES
        .iter()
        .copied()
        .filter(|b| !bin_dir.join(b).is_file())
        .collect();
    if !missing.is_empty() {
        return Err(Error::invalid(format!(
            "{} is not a PostgreSQL bin directory: {} missing",
            bin_dir.display(),
            missing.join(", ")
        ))
        .with_hint("name the directory that holds initdb, pg_ctl and postgres with --pg-bin"));
    }
    let mut binaries = BTreeMap::new();
    for name in BINARIES {
        let path = bin_dir.join(name);
        let (sha256, size) = sha256_file(&path, &NoProgress)?;
        binaries.insert(name.to_string(), Binary { path, sha256, size });
    }
    let postgres = bin_dir.join("postgres");
    let out = Command::new(&postgres)
        .arg("--version")
        .output()
        .map_err(|e| {
            Error::failed(format!(
                "could not run {} --version: {e}",
                postgres.display()
            ))
        })?;
    let text = String::from_utf8_lossy(&out.stdout).trim().to_string();
    if !out.status.success() {
        return Err(Error::failed(format!(
            "{} --version exited with {}: {}",
            postgres.display(),
            out.status,
            String::from_utf8_lossy(&out.stderr).trim()
        )));
    }
    let version = parse_version(&text)?;
    // The pg_config of this installation (Debian ships one in each versioned bin directory);
    // the one on PATH only if it describes this same bin directory.
    let share_dir = pg_config_value(&bin_dir.join("pg_config"), "--sharedir")
        .or_else(|| {
            let path_bindir = pg_config_value(Path::new("pg_config"), "--bindir")?;
            (std::fs::canonicalize(path_bindir).ok()? == bin_dir)
                .then(|| pg_config_value(Path::new("pg_config"), "--sharedir"))
                .flatten()
        })
        .map(PathBuf::from);
    let timescaledb = share_dir.as_deref().and_then(find_extension);
    Ok(PgInstallation {
        bin_dir,
        found_by,
        version,
        binaries,
        share_dir,
        timescaledb,
    })
}

/// Parses `postgres --version` (`postgres (PostgreSQL) 15.18 (Debian 15.18-0+deb12u1)`).
pub fn parse_version(text: &str) -> Result<PgVersion> {
    let bad = || {
        Error::failed(format!(
            "unrecognised `postgres --version` output: {text:?}"
        ))
    };
    let rest = text
        .split_once("(PostgreSQL) ")
        .map(|(_, r)| r)
        .ok_or_else(bad)?;
    let version = rest.split_whitespace().next().ok_or_else(bad)?.to_string();
    let digits_end = |s: &str| s.find(|c: char| !c.is_ascii_digit()).unwrap_or(s.len());
    let major_s = &version[..digits_end(&version)];
    let major: u32 = major_s.parse().map_err(|_| bad())?;
    let after = &version[major_s.len()..];
    let minor = match after.strip_prefix('.') {
        Some(m) => m[..digits_end(m)].parse().map_err(|_| bad())?,
        None => 0,
    };
    Ok(PgVersion {
        text: text.to_string(),
        version,
        major,
        minor,
    })
}

/// The extension's `default_version` from `<share>/extension/timescaledb.control`.
pub fn find_extension(share_dir: &Path) -> Option<Extension> {
    let control_file = share_dir.join("extension").join("timescaledb.control");
    let text = std::fs::read_to_string(&control_file).ok()?;
    let default_version = parse_control_default_version(&text)?;
    Some(Extension {
        control_file,
        default_version,
    })
}

/// `default_version = '2.14.2'` of a control file (comments and other keys ignored).
pub fn parse_control_default_version(text: &str) -> Option<String> {
    text.lines().find_map(|l| {
        let l = l.split('#').next()?.trim();
        let (k, v) = l.split_once('=')?;
        (k.trim() == "default_version")
            .then(|| v.trim().trim_matches('\'').trim_matches('"').to_string())
            .filter(|v| !v.is_empty())
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn versions_parse() {
        let v = parse_version("postgres (PostgreSQL) 15.18 (Debian 15.18-0+deb12u1)").unwrap();
        assert_eq!((v.version.as_str(), v.major, v.minor), ("15.18", 15, 18));
        let v = parse_version("postgres (PostgreSQL) 16.4").unwrap();
        assert_eq!((v.major, v.minor), (16, 4));
        let v = parse_version("postgres (PostgreSQL) 17beta1").unwrap();
        assert_eq!((v.version.as_str(), v.major, v.minor), ("17beta1", 17, 0));
        assert!(parse_version("mysqld  Ver 8.0").is_err());
    }

    #[test]
    fn control_file_default_version() {
        let text = "# TimescaleDB extension\ncomment = 'Enables scalable inserts'\ndefault_version = '2.14.2'\nmodule_pathname = '$libdir/timescaledb-2.14.2'\nrelocatable = false\n";
        assert_eq!(
            parse_control_default_version(text).as_deref(),
            Some("2.14.2")
        );
        assert_eq!(parse_control_default_version("comment = 'x'\n"), None);
        let dir = tempfile::tempdir().unwrap();
        assert!(find_extension(dir.path()).is_none());
        std::fs::create_dir(dir.path().join("extension")).unwrap();
        std::fs::write(dir.path().join("extension/timescaledb.control"), text).unwrap();
        let e = find_extension(dir.path()).unwrap();
        assert_eq!(e.default_version, "2.14.2");
    }

    fn fake_bin(dir: &Path) {
        use std::os::unix::fs::PermissionsExt;
        std::fs::create_dir_all(dir).unwrap();
        for b in BINARIES {
            let p = dir.join(b);
            std::fs::write(
                &p,
                "#!/bin/sh\necho 'postgres (PostgreSQL) 15.18 (Debian 15.18-0+deb12u1)'\n",
            )
            .unwrap();
            std::fs::set_permissions(&p, std::fs::Permissions::from_mode(0o755)).unwrap();
        }
    }

    #[test]
    fn the_highest_version_with_every_binary_wins() {
        let root = tempfile::tempdir().unwrap();
        let debian = root.path().join("lib/postgresql");
        fake_bin(&debian.join("9.6/bin"));
        fake_bin(&debian.join("15/bin"));
        // 16 is incomplete (a client-only package): skipped, not chosen.
        std::fs::create_dir_all(debian.join("16/bin")).unwrap();
        std::fs::write(debian.join("16/bin/psql"), "").unwrap();
        let search = SearchPaths {
            use_path_pg_config: false,
            debian_root: debian.clone(),
            homebrew_roots: vec![root.path().join("brew")],
        };
        let inst = find(None, &search).unwrap();
        assert_eq!(inst.found_by, FoundBy::Debian);
        assert_eq!(
            inst.bin_dir,
            std::fs::canonicalize(debian.join("15/bin")).unwrap()
        );
        assert_eq!(inst.version.version, "15.18");
        assert_eq!(inst.binaries.len(), BINARIES.len());
        assert!(inst.timescaledb.is_none());
        assert!(inst.changed_binaries().is_empty());
        std::fs::write(debian.join("15/bin/initdb"), "#!/bin/sh\n").unwrap();
        let changed = inst.changed_binaries();
        assert_eq!(changed.len(), 1);
        assert!(changed[0].starts_with("initdb"), "{changed:?}");

        // Homebrew when there is no Debian tree.
        let search = SearchPaths {
            use_path_pg_config: false,
            debian_root: root.path().join("none"),
            homebrew_roots: vec![root.path().join("brew")],
        };
        let e = find(None, &search).unwrap_err();
        assert_eq!(e.exit_code(), 2);
        assert!(e.hint.unwrap().contains("--pg-bin"));
        fake_bin(&root.path().join("brew/postgresql@14/bin"));
        fake_bin(&root.path().join("brew/postgresql@16/bin"));
        let inst = find(None, &search).unwrap();
        assert_eq!(inst.found_by, FoundBy::Homebrew);
        assert!(inst.bin_dir.ends_with("postgresql@16/bin"));
    }

    #[test]
    fn pg_bin_must_hold_the_binaries() {
        let root = tempfile::tempdir().unwrap();
        let e = pin(root.path(), FoundBy::Flag).unwrap_err();
        assert_eq!(e.exit_code(), 2);
        assert!(e
            .message
            .contains("initdb, pg_ctl, postgres, pg_isready, psql missing"));
        fake_bin(root.path());
        let inst = find(Some(root.path()), &SearchPaths::default()).unwrap();
        assert_eq!(inst.found_by, FoundBy::Flag);
        let json = serde_json::to_string(&inst).unwrap();
        let back: PgInstallation = serde_json::from_str(&json).unwrap();
        assert_eq!(back, inst);
    }

    /// The machine's own installation, when there is one (CI installs Debian's).
    #[test]
    fn finds_this_machines_postgresql() {
        let Ok(inst) = find(None, &SearchPaths::default()) else {
            eprintln!("SKIP finds_this_machines_postgresql: no PostgreSQL installed here");
            return;
        };
        assert!(inst.version.major >= 10, "{:?}", inst.version);
        assert!(inst.binaries["postgres"].size > 0);
    }
}
