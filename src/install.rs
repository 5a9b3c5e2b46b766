//! The installation store: one verified, immutable tree per product / (edition /) version /
//! platform, e.g. `greptimedb/installations/1.2.0/linux-amd64/{manifest.json, greptime, ...}`.
//!
//! [`install`] downloads the release archive through the verified download path (the vendor's
//! checksum file), extracts it safely into a private staging directory, checks the binary runs
//! and reports the version, writes the [`InstallManifest`], and publishes with one rename. It
//! runs under an install lock (`.locks/<version>-<platform>.lock`) and re-checks after taking it, so
//! concurrent installs of one version download once. `--reinstall` swaps the new tree in with
//! one atomic exchange where the OS offers it; otherwise the old tree is renamed aside first and
//! a crash between the two renames is repaired by the next install (the old tree is put back).
//! Leftover staging directories of dead processes are removed.
//!
//! [`open`] is cheap (reads the manifest); [`verify`] re-hashes the binary and the tree and runs
//! `--version`.

use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Duration;

use serde::{Deserialize, Serialize};

use crate::archive::{self, ExtractOptions};
use crate::context::Ctx;
use crate::download::{Downloader, ACCEPT_ARTIFACT};
use crate::error::{Error, ErrorKind, Result};
use crate::fsutil;
use crate::hash;
use crate::lock::{self, LockOptions};
use crate::manifest::{self, Manifest};
use crate::output::{Event, LeftBy, NoProgress, Warning};
use crate::platform::Platform;
use crate::product::{compare_versions, Product};
use crate::publish::{self, Swap};
use crate::treehash;

/// How long `<binary> --version` may take.
pub const VERSION_TIMEOUT: Duration = Duration::from_secs(15);

/// How a version was chosen, recorded as `version_source`.
pub mod source {
    /// The user named it.
    pub const EXPLICIT: &str = "explicit";
    /// The newest installed version was reused (`prepare` without `--version`).
    pub const NEWEST_INSTALLED: &str = "newest-installed";
    /// Installed because an existing workspace is bound to it.
    pub const WORKSPACE: &str = "workspace-bound";
    /// The version the reference tool had installed (`tsbsctl adopt`).
    pub const ADOPTED: &str = "adopted-from-reference";
}

/// `manifest.json` of an installation.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct InstallManifest {
    pub product: String,
    /// The product's installation variant, recorded as `edition`.
    #[serde(default, rename = "edition", skip_serializing_if = "Option::is_none")]
    pub variant: Option<String>,
    pub version: String,
    /// `explicit`, `github-latest-stable`, `installer-script`, ...
    pub version_source: String,
    /// `linux-amd64`, ...
    pub platform: String,
    pub source_url: String,
    pub checksum_url: String,
    pub archive_sha256: String,
    pub archive_size: u64,
    /// The server binary, relative to the installation directory.
    pub binary: String,
    pub binary_sha256: String,
    /// [`treehash::tree_digest`] of the installation (without this manifest).
    pub tree_digest: String,
    /// What `<binary> --version` printed at install time.
    pub version_output: String,
    pub installed_at: String,
    pub tool_version: String,
}

impl Manifest for InstallManifest {
    const KIND: &'static str = "installation";
}

/// A published installation.
#[derive(Debug, Clone)]
pub struct Installation {
    pub dir: PathBuf,
    pub manifest: InstallManifest,
}

impl Installation {
    pub fn binary(&self) -> PathBuf {
        self.dir.join(&self.manifest.binary)
    }
}

/// What [`install`] did.
#[derive(Debug, Clone)]
pub struct InstallOutcome {
    pub installation: Installation,
    /// The installation was already there (nothing downloaded or extracted).
    pub reused: bool,
    /// An existing installation was replaced (`--reinstall`).
    pub replaced: bool,
}

/// `<installations>/<version>/<platform>`.
pub fn installation_dir(
    ctx_root: &crate::paths::Root,
    product: &dyn Product,
    version: &str,
    platform: &Platform,
) -> PathBuf {
    product
        .installations_dir(ctx_root)
        .join(version)
        .join(platform.dashed())
}

/// Reads an installation's manifest (cheap: no hashing, no execution). `Ok(None)` when it is
/// not installed; an unreadable manifest or one for another product/version/platform is an
/// integrity error whose hint is the reinstall command.
pub fn open(
    root: &crate::paths::Root,
    product: &dyn Product,
    version: &str,
    platform: &Platform,
) -> Result<Option<Installation>> {
    let dir = installation_dir(root, product, version, platform);
    open_dir(product, &dir, version, platform)
}

fn open_dir(
    product: &dyn Product,
    dir: &Path,
    version: &str,
    platform: &Platform,
) -> Result<Option<Installation>> {
    if !dir.exists() {
        return Ok(None);
    }
    let reinstall = product.install_command(version, true);
    let m: InstallManifest = manifest::read_optional(&dir.join("manifest.json"))
        .map_err(|e| e.with_hint(reinstall.clone()))?
        .ok_or_else(|| {
            Error::integrity(format!(
                "{} has no manifest.json (an unfinished or foreign installation)",
                dir.display()
            ))
            .with_hint(reinstall.clone())
        })?;
    if m.product != product.name()
        || m.variant.as_deref() != product.installation_variant()
        || m.version != version
        || m.platform != platform.dashed()
    {
        return Err(Error::integrity(format!(
            "{} records {} {} {} for {}, not what its path says",
            dir.display(),
            m.product,
            m.variant.as_deref().unwrap_or(""),
            m.version,
            m.platform
        ))
        .with_hint(reinstall));
    }
    Ok(Some(Installation {
        dir: dir.to_path_buf(),
        manifest: m,
    }))
}

/// Installed versions of `product` for `platform`, newest first (cheap; unreadable entries are
/// skipped).
pub fn installed(
    root: &crate::paths::Root,
    product: &dyn Product,
    platform: &Platform,
) -> Vec<Installation> {
    let base = product.installations_dir(root);
    let mut out = Vec::new();
    let Ok(rd) = std::fs::read_dir(&base) else {
        return out;
    };
    for e in rd.flatten() {
        let name = e.file_name().to_string_lossy().into_owned();
        if name.starts_with('.') || !e.path().is_dir() {
            continue;
        }
        if let Ok(Some(i)) = open(root, product, &name, platform) {
            out.push(i);
        }
    }
    out.sort_by(|a, b| compare_versions(&b.manifest.version, &a.manifest.version));
    out
}

/// A prerelease (`1.3.0-beta.1`, `3.0.0-rc.1`): a `-` suffix after the numeric core, as
/// [`crate::product::compare_versions`] orders them.
pub fn is_prerelease(version: &str) -> bool {
    let core_end = version.find(['-', '+']).unwrap_or(version.len());
    version[core_end..].starts_with('-')
}

/// The newest installed stable release of `product` (issue 16 #12: what `prepare` and
/// `quickstart` use without `--version`; a prerelease is only ever used when named).
pub fn newest_stable_installed(
    root: &crate::paths::Root,
    product: &dyn Product,
    platform: &Platform,
) -> Option<Installation> {
    installed(root, product, platform)
        .into_iter()
        .find(|i| !is_prerelease(&i.manifest.version))
}

/// Resolves the latest version through the product (GitHub API, installer script, ...).
pub fn resolve_latest(ctx: &Ctx, product: &dyn Product) -> Result<crate::product::Latest> {
    let sources = crate::product::load_sources(&ctx.root)?;
    let dl = Downloader::new(&ctx.root, &sources, ctx.reporter.clone())?;
    product.resolve_latest(&dl, &sources)
}

/// Installs `version` of `product` for the host (or reuses it). `version_source` is recorded.
/// `lock` decides how long to wait for a concurrent install of the same version.
pub fn install(
    ctx: &Ctx,
    product: &dyn Product,
    version: &str,
    version_source: &str,
    reinstall: bool,
    lock_opts: &LockOptions,
) -> Result<InstallOutcome> {
    install_expecting(
        ctx,
        product,
        version,
        version_source,
        reinstall,
        lock_opts,
        None,
    )
}

/// [`install`], when the archive must be one whose SHA-256 is known beforehand (`adopt`: the
/// one the reference tool installed). A release source serving another archive is an
/// integrity error (exit 4) before anything is downloaded or installed; an installation
/// tsbsctl already had is reused as it is (the caller compares its record).
pub fn install_expecting(
    ctx: &Ctx,
    product: &dyn Product,
    version: &str,
    version_source: &str,
    reinstall: bool,
    lock_opts: &LockOptions,
    expect_archive: Option<&str>,
) -> Result<InstallOutcome> {
    let platform = Platform::host()?;
    product.check_platform(&platform)?;
    let target = installation_dir(&ctx.root, product, version, &platform);
    let display = format!(
        "{} {version} ({})",
        product.display_name(),
        platform.dashed()
    );

    if !reinstall && target.exists() {
        if let Some(i) = open_dir(product, &target, version, &platform)? {
            verify(product, &i)?;
            return Ok(InstallOutcome {
                installation: i,
                reused: true,
                replaced: false,
            });
        }
    }

    // Bad settings are said before the lock file and the root exist (exit 2 changes nothing).
    let sources = crate::product::load_sources(&ctx.root)?;
    let dl = Downloader::new(&ctx.root, &sources, ctx.reporter.clone())?;
    ctx.root.ensure()?;
    let version_dir = target.parent().expect("version dir").to_path_buf();
    // Lock files live apart from the trees, so a failed first install leaves no version
    // directory behind.
    let lock_path = product
        .installations_dir(&ctx.root)
        .join(".locks")
        .join(format!("{version}-{}.lock", platform.dashed()));
    let _guard = lock::lock_file(
        &lock_path,
        &format!("install of {display}"),
        &ctx.command_line(),
        lock_opts,
        ctx.reporter.as_ref(),
    )?;
    repair(&target, ctx)?;

    // Re-check under the lock: a concurrent install may have finished meanwhile.
    let existing = open_dir(product, &target, version, &platform);
    if !reinstall {
        if let Ok(Some(i)) = &existing {
            verify(product, i)?;
            return Ok(InstallOutcome {
                installation: i.clone(),
                reused: true,
                replaced: false,
            });
        }
        if target.exists() {
            // Present but unreadable: only --reinstall may replace it.
            existing?;
            return Err(Error::integrity(format!(
                "{} exists but is not a valid installation",
                target.display()
            ))
            .with_hint(product.install_command(version, true)));
        }
    }

    let asset = product.release_asset(&sources, version, &platform)?;
    // Where the archive comes from is said by the download itself ("downloading … from"
    // or "using the verified download …"), so a cached archive never claims a URL (#30).
    ctx.reporter.event(&Event::Installing {
        product: display.to_string(),
    });
    let checksum_text = dl
        .fetch_text(&asset.checksum_url, ACCEPT_ARTIFACT)
        .map_err(|e| e.context(format!("fetching the checksum of {display}")))?;
    let expected = product.parse_checksum(&checksum_text, &asset)?;
    if let Some(want) = expect_archive.filter(|w| !w.eq_ignore_ascii_case(&expected)) {
        return Err(Error::integrity(format!(
            "the release source serves {display} as {} with SHA-256 {expected}, not the archive with SHA-256 {want} expected",
            asset.url
        ))
        .with_detail(crate::error::Detail::ArchiveDiffers)
        .with_hint(format!(
            "nothing was installed; point {} at the original archive (e.g. a mirror)",
            sources.setting_for(&asset.url)
        )));
    }
    let archive_file = dl.fetch_verified(&asset.url, &expected, &asset.file_name)?;
    interrupt_check()?;

    // Everything is built inside a private staging directory: the extracted tree lands at
    // <staging>/tree; a crash leaves only <staging>, removed by the next install.
    fs_err::create_dir_all(&version_dir)?;
    let staging = fsutil::staging_path(&target, "install")?;
    fs_err::create_dir(&staging)?;
    let result = build_and_publish(
        ctx,
        product,
        version,
        version_source,
        &platform,
        &asset,
        &archive_file,
        &staging,
        &target,
    );
    let _ = std::fs::remove_dir_all(&staging);
    if result.is_err() {
        // Only succeeds when empty: a failed first install leaves nothing.
        let _ = std::fs::remove_dir(&version_dir);
    }
    let (installation, replaced) = result?;
    Ok(InstallOutcome {
        installation,
        reused: false,
        replaced,
    })
}

#[allow(clippy::too_many_arguments)]
fn build_and_publish(
    ctx: &Ctx,
    product: &dyn Product,
    version: &str,
    version_source: &str,
    platform: &Platform,
    asset: &crate::product::ReleaseAsset,
    archive_file: &crate::download::Verified,
    staging: &Path,
    target: &Path,
) -> Result<(Installation, bool)> {
    let tree = staging.join("tree");
    let opts = ExtractOptions {
        top_dir: asset.top_dir.clone(),
        forbid_symlinks: false,
    };
    let staged = archive::extract_staged(&archive_file.path, &tree, &opts)?;
    staged.publish(&tree)?;
    interrupt_check()?;
    let tree = product.distribution_root(&tree)?;

    let binary_rel = product.binary_name().to_string();
    let binary = tree.join(&binary_rel);
    check_binary_file(product, &binary, version)?;
    let (binary_sha256, _) = hash::sha256_file(&binary, &NoProgress)?;
    let bad_release = |e: Error| {
        Error::integrity(format!(
            "the {} {version} release does not run here: {}",
            product.display_name(),
            e.message
        ))
        .with_hint("nothing was installed; check the platform, or pass another --version")
    };
    let version_output =
        run_version(&binary, &tree, product.version_args()).map_err(bad_release)?;
    product
        .check_version_output(version, &version_output)
        .map_err(bad_release)?;
    let tree_digest = treehash::tree_digest(&tree)?;
    let m = InstallManifest {
        product: product.name().to_string(),
        variant: product.installation_variant().map(str::to_string),
        version: version.to_string(),
        version_source: version_source.to_string(),
        platform: platform.dashed(),
        source_url: asset.url.clone(),
        checksum_url: asset.checksum_url.clone(),
        archive_sha256: archive_file.sha256.clone(),
        archive_size: archive_file.size,
        binary: binary_rel,
        binary_sha256,
        tree_digest,
        version_output: version_output.trim().to_string(),
        installed_at: manifest::now_rfc3339(),
        tool_version: crate::VERSION.to_string(),
    };
    manifest::write(&tree.join("manifest.json"), &m)?;
    interrupt_check()?;

    let replaced = if target.exists() {
        replace(&tree, target, ctx)?;
        true
    } else {
        publish::rename_noreplace(&tree, target)?;
        false
    };
    Ok((
        Installation {
            dir: target.to_path_buf(),
            manifest: m,
        },
        replaced,
    ))
}

/// An installation found on this machine rather than downloaded (PostgreSQL from OS
/// packages): its server binary stays where it is (an absolute path), and the installation
/// directory holds only the product's records of it (`files`, e.g. the other binaries'
/// checksums), which the tree digest covers.
#[derive(Debug, Clone)]
pub struct LocalPin {
    pub version: String,
    pub version_source: String,
    /// Where it was found (`file:///usr/lib/postgresql/15/bin`), recorded as `source_url`.
    pub source_url: String,
    /// The server binary, absolute.
    pub binary: PathBuf,
    /// Records written into the installation directory: file name -> content.
    pub files: Vec<(String, Vec<u8>)>,
}

/// Pins a [`LocalPin`] as the installation of its version (or reuses it when it is there and
/// still verifies, unless `reinstall`), with the same lock, staging and atomic publication
/// as [`install`].
pub fn pin_local(
    ctx: &Ctx,
    product: &dyn Product,
    pin: &LocalPin,
    reinstall: bool,
    lock_opts: &LockOptions,
) -> Result<InstallOutcome> {
    let platform = Platform::host()?;
    product.check_platform(&platform)?;
    let version = pin.version.as_str();
    let target = installation_dir(&ctx.root, product, version, &platform);
    ctx.root.ensure()?;
    let lock_path = product
        .installations_dir(&ctx.root)
        .join(".locks")
        .join(format!("{version}-{}.lock", platform.dashed()));
    let _guard = lock::lock_file(
        &lock_path,
        &format!("install of {} {version}", product.display_name()),
        &ctx.command_line(),
        lock_opts,
        ctx.reporter.as_ref(),
    )?;
    repair(&target, ctx)?;
    if !reinstall && target.exists() {
        let i = open_dir(product, &target, version, &platform)?.ok_or_else(|| {
            Error::integrity(format!("{} is not a valid installation", target.display()))
                .with_hint(product.install_command(version, true))
        })?;
        verify(product, &i)?;
        return Ok(InstallOutcome {
            installation: i,
            reused: true,
            replaced: false,
        });
    }
    check_binary_file(product, &pin.binary, version)?;
    let (binary_sha256, binary_size) = hash::sha256_file(&pin.binary, &NoProgress)?;
    let version_output = run_version(&pin.binary, Path::new("/"), product.version_args())?;
    product.check_version_output(version, &version_output)?;
    let version_dir = target.parent().expect("version dir").to_path_buf();
    fs_err::create_dir_all(&version_dir)?;
    let staging = fsutil::staging_path(&target, "install")?;
    fs_err::create_dir(&staging)?;
    let result = (|| -> Result<(InstallManifest, bool)> {
        let tree = staging.join("tree");
        fs_err::create_dir(&tree)?;
        for (name, bytes) in &pin.files {
            fsutil::write_atomic(&tree.join(name), bytes)?;
        }
        let m = InstallManifest {
            product: product.name().to_string(),
            variant: product.installation_variant().map(str::to_string),
            version: version.to_string(),
            version_source: pin.version_source.clone(),
            platform: platform.dashed(),
            source_url: pin.source_url.clone(),
            checksum_url: String::new(),
            // Nothing was downloaded: the "archive" is the binary itself.
            archive_sha256: binary_sha256.clone(),
            archive_size: binary_size,
            binary: pin.binary.display().to_string(),
            binary_sha256: binary_sha256.clone(),
            tree_digest: treehash::tree_digest(&tree)?,
            version_output: version_output.trim().to_string(),
            installed_at: manifest::now_rfc3339(),
            tool_version: crate::VERSION.to_string(),
        };
        manifest::write(&tree.join("manifest.json"), &m)?;
        let replaced = if target.exists() {
            replace(&tree, &target, ctx)?;
            true
        } else {
            publish::rename_noreplace(&tree, &target)?;
            false
        };
        Ok((m, replaced))
    })();
    let _ = std::fs::remove_dir_all(&staging);
    if result.is_err() {
        let _ = std::fs::remove_dir(&version_dir);
    }
    let (manifest, replaced) = result?;
    Ok(InstallOutcome {
        installation: Installation {
            dir: target,
            manifest,
        },
        reused: false,
        replaced,
    })
}

/// Puts `new` at `target`, which exists. Atomic exchange where possible; otherwise the old tree
/// is moved aside to `.<platform>.old-<pid>-<n>` first ([`repair`] restores it after a crash).
fn replace(new: &Path, target: &Path, ctx: &Ctx) -> Result<()> {
    match publish::exchange(new, target)? {
        Swap::Done => {
            // `new` now holds the old tree, inside our staging directory (removed by caller).
            Ok(())
        }
        Swap::Unsupported => {
            let aside = fsutil::staging_path(target, "old")?;
            fsutil::rename_durable(target, &aside)?;
            if let Err(e) = fsutil::rename_durable(new, target) {
                let _ = fsutil::rename_durable(&aside, target);
                return Err(e);
            }
            if let Err(e) = std::fs::remove_dir_all(&aside) {
                ctx.reporter.warning(&Warning::ReplacedNotRemoved {
                    path: aside.clone(),
                    error: e.to_string(),
                });
            }
            Ok(())
        }
    }
}

/// Repairs what a crash may have left beside `target` (call under the install lock): an old
/// tree moved aside by a reinstall is put back when `target` is missing, else removed; staging
/// directories of dead processes are removed.
fn repair(target: &Path, ctx: &Ctx) -> Result<()> {
    let parent = target.parent().expect("parent");
    let name = target
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let prefix = format!(".{name}.old-");
    if !target.exists() {
        let mut asides: Vec<PathBuf> = std::fs::read_dir(parent)
            .map(|rd| {
                rd.flatten()
                    .filter(|e| e.file_name().to_string_lossy().starts_with(&prefix))
                    .map(|e| e.path())
                    .collect()
            })
            .unwrap_or_default();
        asides.sort();
        if let Some(last) = asides.pop() {
            ctx.reporter.warning(&Warning::RestoringInstall {
                path: target.to_path_buf(),
            });
            fsutil::rename_durable(&last, target)?;
        }
    }
    for tag in ["old", "install"] {
        for p in fsutil::clean_staging(target, tag)? {
            ctx.reporter.event(&Event::RemovedLeftover {
                path: p,
                left_by: LeftBy::EarlierRun,
            });
        }
    }
    Ok(())
}

fn check_binary_file(product: &dyn Product, binary: &Path, version: &str) -> Result<()> {
    use std::os::unix::fs::PermissionsExt;
    let meta = std::fs::symlink_metadata(binary).map_err(|_| {
        Error::integrity(format!(
            "the {} {version} archive has no {} binary at its top",
            product.display_name(),
            product.binary_name()
        ))
        .with_hint("check the release, or pass another --version")
    })?;
    if !meta.is_file() || meta.permissions().mode() & 0o111 == 0 {
        return Err(Error::integrity(format!(
            "{} is not an executable regular file",
            binary.display()
        ))
        .with_hint(product.install_command(version, true)));
    }
    Ok(())
}

/// Runs `<binary> --version` in `cwd` with a 15 s limit; returns stdout and stderr joined. A
/// failure to start, a timeout or a non-zero exit is an integrity error (callers add the hint).
pub fn run_version(binary: &Path, cwd: &Path, args: &[&str]) -> Result<String> {
    let mut cmd = Command::new(binary);
    cmd.args(args)
        .current_dir(cwd)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    crate::proc::configure(&mut cmd);
    let mut child = cmd.spawn().map_err(|e| {
        Error::integrity(format!("could not run {} --version: {e}", binary.display()))
    })?;
    let mut out = child.stdout.take().expect("stdout");
    let mut err = child.stderr.take().expect("stderr");
    let t_out = std::thread::spawn(move || {
        let mut b = Vec::new();
        let _ = out.read_to_end(&mut b);
        b
    });
    let t_err = std::thread::spawn(move || {
        let mut b = Vec::new();
        let _ = err.read_to_end(&mut b);
        b
    });
    let bound = crate::proc::WaitFor {
        limit: Some(VERSION_TIMEOUT),
        grace: Duration::ZERO,
        ..Default::default()
    };
    let status = match crate::proc::wait(&mut child, &bound, &mut || None::<()>) {
        Ok(crate::proc::Waited::Exited(s)) => s,
        Ok(crate::proc::Waited::Interrupted) => {
            return Err(Error::interrupted(format!(
                "interrupted while running {} --version",
                binary.display()
            ))
            .with_hint("run the command again to continue"))
        }
        _ => {
            return Err(Error::integrity(format!(
                "{} --version did not finish within {}s",
                binary.display(),
                VERSION_TIMEOUT.as_secs()
            )))
        }
    };
    let mut text = String::from_utf8_lossy(&t_out.join().unwrap_or_default()).into_owned();
    text.push_str(&String::from_utf8_lossy(&t_err.join().unwrap_or_default()));
    if !status.success() {
        return Err(Error::integrity(format!(
            "{} --version failed ({status}): {}",
            binary.display(),
            text.trim()
        )));
    }
    Ok(text)
}

/// What [`verify`] checked.
#[derive(Debug, Clone, Serialize)]
pub struct VerifyReport {
    pub binary_sha256: String,
    pub tree_digest: String,
    pub version_output: String,
}

/// Full check of an installation: binary hash, tree digest, `--version`. Any difference is an
/// integrity error (exit 4) whose hint is the reinstall command.
pub fn verify(product: &dyn Product, inst: &Installation) -> Result<VerifyReport> {
    let m = &inst.manifest;
    let reinstall = product.install_command(&m.version, true);
    let binary = inst.binary();
    check_binary_file(product, &binary, &m.version)?;
    let (binary_sha256, _) = hash::sha256_file(&binary, &NoProgress)?;
    if binary_sha256 != m.binary_sha256 {
        return Err(Error::integrity(format!(
            "{} changed since it was installed (sha256 {binary_sha256}, recorded {})",
            binary.display(),
            m.binary_sha256
        ))
        .with_hint(reinstall));
    }
    let tree_digest =
        treehash::tree_digest(&inst.dir).map_err(|e| e.with_hint(reinstall.clone()))?;
    if tree_digest != m.tree_digest {
        return Err(Error::integrity(format!(
            "files under {} changed since it was installed (tree digest {tree_digest}, recorded {})",
            inst.dir.display(),
            m.tree_digest
        ))
        .with_hint(reinstall));
    }
    let version_output = run_version(&binary, &inst.dir, product.version_args())
        .map_err(|e| e.with_hint(reinstall.clone()))?;
    product
        .check_version_output(&m.version, &version_output)
        .map_err(|e| {
            Error::integrity(format!("{} --version: {}", binary.display(), e.message))
                .with_hint(reinstall.clone())
        })?;
    product
        .verify_installation(&inst.dir)
        .map_err(|e| e.with_hint(reinstall.clone()))?;
    Ok(VerifyReport {
        binary_sha256,
        tree_digest,
        version_output: version_output.trim().to_string(),
    })
}

fn interrupt_check() -> Result<()> {
    crate::interrupt::check().map_err(|e| {
        debug_assert_eq!(e.kind, ErrorKind::Interrupted);
        e.with_hint("nothing was published; run the command again")
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn prereleases_are_told_apart_defect_12() {
        for v in ["1.3.0-beta.1", "3.0.0-rc.1", "1.2.0-nightly+abc"] {
            assert!(is_prerelease(v), "{v}");
        }
        for v in ["1.2.0", "3.11.1", "1.2.0+build.5", "0.17.2"] {
            assert!(!is_prerelease(v), "{v}");
        }
    }
}
