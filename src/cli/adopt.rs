//! `tsbsctl adopt --from DIR`: what the reference tool left in `.benchmarks/` (issue 22).
//!
//! Datasets are taken in by [`crate::dataset::adopt`] (checked, hard-linked or copied). An
//! installation of the reference is not copied: tsbsctl installs the same version from the
//! release source and checks that it is the archive the reference installed (the SHA-256 the
//! reference recorded), so every installation tsbsctl runs is one it extracted and checked.

use std::path::{Path, PathBuf};
use std::time::Duration;

use serde::Serialize;
use serde_json::{json, Value};

use crate::cli::common::DatasetRootArgs;
use crate::context::Ctx;
use crate::dataset::{self, AdoptMethod, AdoptReport};
use crate::error::{Error, Result};
use crate::install;
use crate::lock::LockOptions;
use crate::output::{count_of, Outcome};
use crate::platform::Platform;

#[derive(Debug, clap::Args)]
pub struct AdoptArgs {
    /// The reference's `.benchmarks` directory, its `datasets` directory, or one dataset.
    #[arg(long, value_name = "DIR")]
    pub from: PathBuf,
    /// Copy the data even where a hard link would do.
    #[arg(long)]
    pub copy: bool,
    /// Only the datasets: leave the reference's installations alone (nothing is downloaded).
    #[arg(long)]
    pub datasets_only: bool,
    #[command(flatten)]
    pub root: DatasetRootArgs,
}

/// A reference installation and what became of it.
#[derive(Debug, Serialize)]
struct InstallResult {
    product: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    edition: Option<String>,
    version: String,
    source: PathBuf,
    /// `installed`, `present` (tsbsctl had it already), `skipped`.
    status: &'static str,
    #[serde(skip_serializing_if = "Option::is_none")]
    archive_sha256: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    reason: Option<String>,
    /// The archive differs from the one the reference installed.
    integrity: bool,
}

/// The reference's installation directories: `greptimedb/installations/<version>/<tag>` and
/// `influxdb3/installations/<edition>/<version>/<tag>` (setup.md §2.4, §3.4). Staging and
/// backup directories (a leading dot) are not installations.
fn reference_installations(bench: &Path) -> Vec<(&'static str, Option<String>, PathBuf)> {
    let subdirs = |p: &Path| -> Vec<PathBuf> {
        let mut v: Vec<PathBuf> = std::fs::read_dir(p)
            .map(|rd| {
                rd.flatten()
                    .map(|e| e.path())
                    .filter(|p| {
                        p.is_dir()
                            && !p
                                .file_name()
                                .is_some_and(|n| n.to_string_lossy().starts_with('.'))
                    })
                    .collect()
            })
            .unwrap_or_default();
        v.sort();
        v
    };
    let mut out = Vec::new();
    for version in subdirs(&bench.join("greptimedb/installations")) {
        for tag in subdirs(&version) {
            out.push(("greptimedb", None, tag));
        }
    }
    for edition in subdirs(&bench.join("influxdb3/installations")) {
        let ed = edition
            .file_name()
            .map(|n| n.to_string_lossy().into_owned());
        for version in subdirs(&edition) {
            for tag in subdirs(&version) {
                out.push(("influxdb3", ed.clone(), tag));
            }
        }
    }
    out
}

/// Installs the version of one reference installation and checks the archive is the same.
fn adopt_installation(
    ctx: &Ctx,
    product_name: &'static str,
    edition: Option<String>,
    dir: &Path,
) -> InstallResult {
    let mut r = InstallResult {
        product: product_name.to_string(),
        edition: edition.clone(),
        version: dir
            .parent()
            .and_then(|v| v.file_name())
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default(),
        source: dir.to_path_buf(),
        status: "skipped",
        archive_sha256: None,
        reason: None,
        integrity: false,
    };
    let skip = |mut r: InstallResult, reason: String| {
        r.reason = Some(reason);
        r
    };
    let m: Value = match std::fs::read(dir.join("manifest.json"))
        .ok()
        .and_then(|b| serde_json::from_slice(&b).ok())
    {
        Some(v) => v,
        None => return skip(r, "it has no readable manifest.json".into()),
    };
    let s = |k: &str| m.get(k).and_then(Value::as_str).map(str::to_string);
    if s("kind").as_deref() != Some(&format!("{product_name}-installation")) {
        return skip(
            r,
            format!("its manifest is not a {product_name} installation's"),
        );
    }
    let Some(version) = s("version") else {
        return skip(r, "its manifest names no version".into());
    };
    r.version = version.clone();
    if product_name == "influxdb3" && s("edition") != edition {
        return skip(
            r,
            "its manifest names another edition than its directory".into(),
        );
    }
    let Some(archive) = s("archive_sha256") else {
        return skip(r, "its manifest records no archive SHA-256".into());
    };
    r.archive_sha256 = Some(archive.clone());
    let host = match Platform::host() {
        Ok(p) => p,
        Err(e) => return skip(r, e.message),
    };
    let tag = dir.file_name().map(|n| n.to_string_lossy().into_owned());
    if tag.as_deref() != Some(&host.underscored()) && tag.as_deref() != Some(&host.dashed()) {
        return skip(
            r,
            format!(
                "it is for another platform ({}), not this host's ({})",
                tag.unwrap_or_default(),
                host.underscored()
            ),
        );
    }
    let entry = crate::product::all()
        .iter()
        .find(|e| e.name == product_name)
        .expect("a registry product");
    let product = match (entry.make)(edition.as_deref()) {
        Ok(p) => p,
        Err(e) => return skip(r, e.message),
    };
    let version = match product.normalize_version(&version) {
        Ok(v) => v,
        Err(e) => return skip(r, e.message),
    };
    let opts = LockOptions {
        wait: Some(Duration::from_secs(3600)),
        hold_token: None,
    };
    // The archive is compared before anything is installed: one that differs from the
    // reference's is never left in tsbsctl's root.
    let o = match install::install_expecting(
        ctx,
        product.as_ref(),
        &version,
        install::source::ADOPTED,
        false,
        &opts,
        Some(&archive),
    ) {
        Ok(o) => o,
        Err(e) => {
            let integrity = e.kind == crate::error::ErrorKind::Integrity;
            let reason = if e.is(crate::error::Detail::ArchiveDiffers) {
                format!(
                    "the reference installed an archive with SHA-256 {archive}, and {}; nothing was installed",
                    e.message
                )
            } else {
                format!("installing {version} failed: {}", e.message)
            };
            let mut r = skip(r, reason);
            r.integrity = integrity;
            return r;
        }
    };
    if !o
        .installation
        .manifest
        .archive_sha256
        .eq_ignore_ascii_case(&archive)
    {
        // tsbsctl had this version already, from another archive: its own installation
        // stays (it was checked against its own source), and the difference is said.
        r.integrity = true;
        return skip(
            r,
            format!(
                "the reference installed an archive with SHA-256 {archive}; tsbsctl already has {version} installed from another one (SHA-256 {}), which it keeps",
                o.installation.manifest.archive_sha256
            ),
        );
    }
    r.status = if o.reused { "present" } else { "installed" };
    r
}

pub fn run(ctx: &Ctx, a: AdoptArgs) -> Result<Outcome> {
    let root = ctx
        .root
        .clone()
        .with_dataset_root(a.root.dataset_root.as_deref())?;
    // A `.benchmarks` directory holds `datasets/` and the products' directories; anything
    // else is a datasets directory or one dataset.
    let is_bench = ["datasets", "greptimedb", "influxdb3"]
        .iter()
        .any(|d| a.from.join(d).is_dir());
    let datasets_from = if !is_bench {
        Some(a.from.clone())
    } else {
        Some(a.from.join("datasets")).filter(|d| d.is_dir())
    };
    if !a.from.is_dir() {
        // Said by the dataset search, with its hint (exit 2, nothing written).
        dataset::find_datasets(&a.from)?;
    }
    let command = ctx.command_line();
    let reporter = ctx.reporter.as_ref();
    let report = match &datasets_from {
        Some(d) => dataset::adopt(
            &root,
            d,
            a.copy,
            &crate::product::data_formats(),
            &command,
            reporter,
        )?,
        None => AdoptReport::default(),
    };
    let installs: Vec<InstallResult> = if is_bench && !a.datasets_only {
        reference_installations(&a.from)
            .into_iter()
            .map(|(p, ed, dir)| adopt_installation(ctx, p, ed, &dir))
            .collect()
    } else {
        Vec::new()
    };
    outcome(&root, &a.from, report, installs, reporter)
}

/// Words the report; exit 4 when some data or archive did not match what the reference
/// recorded (what did match was adopted all the same).
fn outcome(
    root: &crate::paths::Root,
    from: &Path,
    report: AdoptReport,
    installs: Vec<InstallResult>,
    reporter: &dyn crate::output::Reporter,
) -> Result<Outcome> {
    let mut human = String::new();
    for a in &report.adopted {
        human.push_str(&format!(
            "Adopted {} ({}): {} rows, SHA-256 {}, {}\n",
            a.dataset_id,
            a.format,
            a.rows,
            a.sha256,
            match a.method {
                AdoptMethod::Link => "hard-linked",
                AdoptMethod::Copy => "copied",
            }
        ));
    }
    for a in &report.present {
        human.push_str(&format!(
            "Already present {} ({}): the same data\n",
            a.dataset_id, a.format
        ));
    }
    for s in &report.skipped {
        human.push_str(&format!("Skipped {}: {}\n", s.source.display(), s.reason));
    }
    for i in &installs {
        let name = match &i.edition {
            Some(e) => format!("{} {e} {}", i.product, i.version),
            None => format!("{} {}", i.product, i.version),
        };
        match i.status {
            "installed" => human.push_str(&format!(
                "Installed {name}: the archive the reference installed (SHA-256 {})\n",
                i.archive_sha256.as_deref().unwrap_or("-")
            )),
            "present" => human.push_str(&format!(
                "Already installed {name}: the archive the reference installed\n"
            )),
            _ => human.push_str(&format!(
                "Skipped {} ({name}): {}\n",
                i.source.display(),
                i.reason.as_deref().unwrap_or("")
            )),
        }
    }
    human.push_str(&format!(
        "{} adopted, {} already present, {} skipped, into {}; {} of {} installed\n",
        count_of(report.adopted.len(), "dataset format"),
        report.present.len(),
        report.skipped.len(),
        root.datasets().display(),
        installs.iter().filter(|i| i.status != "skipped").count(),
        count_of(installs.len(), "reference installation"),
    ));
    let mut bad: Vec<String> = report
        .skipped
        .iter()
        .filter(|s| s.integrity)
        .map(|s| format!("{} ({})", s.source.display(), s.reason))
        .collect();
    bad.extend(installs.iter().filter(|i| i.integrity).map(|i| {
        format!(
            "{} ({})",
            i.source.display(),
            i.reason.as_deref().unwrap_or("")
        )
    }));
    if !bad.is_empty() {
        for line in human.lines() {
            reporter.info(line);
        }
        return Err(Error::integrity(format!(
            "{} under {} did not match what the reference recorded: {}",
            count_of(bad.len(), "item"),
            from.display(),
            bad.join("; ")
        ))
        .with_hint("the rest was adopted; regenerate or reinstall the damaged ones with tsbsctl"));
    }
    Ok(Outcome::new(
        json!({"datasets": report, "installations": installs}),
        human,
    ))
}
