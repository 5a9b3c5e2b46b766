//! Guards for the paths a person names for output (`runs report --out DIR`, `--result-file
//! PATH`), so that writing a result never destroys a user's file or tsbsctl's own state
//! (trial-run defects #2 and #3).

use std::path::{Component, Path, PathBuf};

use crate::error::{Error, Result};
use crate::paths::Root;

/// The files `runs report` writes into its directory.
pub const REPORT_FILES: [&str; 3] = ["summary.json", "summary.md", "report.html"];

/// Beside a report's files: the SHA-256 of each as written, so a later `--out` over that
/// directory sees a file a person edited and refuses instead of replacing it (trial 2 N11).
pub const REPORT_DIGESTS: &str = ".written-sha256.json";

/// The [`REPORT_DIGESTS`] entry for a report's files.
pub fn report_digests(files: &[(String, Vec<u8>)]) -> Result<(String, Vec<u8>)> {
    let map: serde_json::Map<String, serde_json::Value> = files
        .iter()
        .map(|(n, b)| (n.clone(), crate::hash::sha256_hex(b).into()))
        .collect();
    Ok((
        REPORT_DIGESTS.to_string(),
        crate::publish::pretty(&serde_json::Value::Object(map))?,
    ))
}

/// While a report is rewritten over an earlier one: each file's digest as it is now and as
/// it will be, either accepted, so a crash between two files' renames leaves a directory the
/// next `--out` still recognises as tsbsctl's own.
pub fn interim_report_digests(
    dir: &Path,
    files: &[(String, Vec<u8>)],
) -> Result<(String, Vec<u8>)> {
    let map: serde_json::Map<String, serde_json::Value> = files
        .iter()
        .filter(|(n, _)| n != REPORT_DIGESTS)
        .map(|(n, b)| {
            let mut v = vec![serde_json::Value::from(crate::hash::sha256_hex(b))];
            if let Ok(now) = std::fs::read(dir.join(n)) {
                v.push(crate::hash::sha256_hex(&now).into());
            }
            (n.clone(), serde_json::Value::Array(v))
        })
        .collect();
    Ok((
        REPORT_DIGESTS.to_string(),
        crate::publish::pretty(&serde_json::Value::Object(map))?,
    ))
}

/// The report files in `dir` that tsbsctl has no record of writing exactly as they are:
/// `Some(files)` when `.written-sha256.json` is there (the files that differ from it), `None`
/// when it is missing or unreadable, so that every report file there is unaccounted for.
fn edited_report_files(dir: &Path) -> Option<Vec<String>> {
    let written = std::fs::read(dir.join(REPORT_DIGESTS))
        .ok()
        .and_then(|b| serde_json::from_slice::<serde_json::Value>(&b).ok())
        .filter(|v| v.is_object())?;
    Some(
        REPORT_FILES
            .iter()
            .filter(|n| {
                let Ok(bytes) = std::fs::read(dir.join(n)) else {
                    return false;
                };
                let now = crate::hash::sha256_hex(&bytes);
                match &written[**n] {
                    serde_json::Value::String(d) => *d != now,
                    serde_json::Value::Array(a) => !a.iter().any(|d| d.as_str() == Some(&now)),
                    _ => true,
                }
            })
            .map(|n| n.to_string())
            .collect(),
    )
}

/// The report files present in `dir`.
fn present_report_files(dir: &Path) -> Vec<String> {
    REPORT_FILES
        .iter()
        .filter(|n| dir.join(n).exists())
        .map(|n| n.to_string())
        .collect()
}

/// `a`, `a and b`, `a, b and c`.
fn and_list(items: &[String]) -> String {
    match items {
        [] => String::new(),
        [one] => one.clone(),
        [init @ .., last] => format!("{} and {last}", init.join(", ")),
    }
}

/// `path` made absolute with symlinks resolved as far as it exists (the rest appended
/// lexically), so `a/../b`, relative paths and links into the root are all caught.
pub fn resolved(path: &Path) -> PathBuf {
    let abs = if path.is_absolute() {
        path.to_path_buf()
    } else {
        std::env::current_dir()
            .map(|d| d.join(path))
            .unwrap_or_else(|_| path.to_path_buf())
    };
    let abs = crate::paths::normalize(&abs);
    let mut existing = abs.as_path();
    let mut rest: Vec<std::ffi::OsString> = Vec::new();
    loop {
        if let Ok(c) = std::fs::canonicalize(existing) {
            let mut out = c;
            for r in rest.iter().rev() {
                out.push(r);
            }
            return out;
        }
        match (existing.parent(), existing.file_name()) {
            (Some(p), Some(n)) => {
                rest.push(n.to_os_string());
                existing = p;
            }
            _ => return abs,
        }
    }
}

/// True when `path` is `dir` or lies under it (both resolved).
pub fn is_within(path: &Path, dir: &Path) -> bool {
    resolved(path).starts_with(resolved(dir))
}

/// The directories holding tsbsctl's state: the root and a dataset root set in the
/// environment (a `--dataset-root` flag is per command and checked there).
fn state_dirs(root: &Root) -> Vec<PathBuf> {
    let mut dirs = vec![root.path().to_path_buf()];
    if let Ok(r) = root.clone().with_dataset_root(None) {
        let d = r.datasets();
        if !d.starts_with(root.path()) {
            dirs.push(d);
        }
    }
    dirs
}

/// The `kind` of every manifest and summary tsbsctl writes but the products' query sets
/// ([`crate::product::query_set_kinds`]): a JSON file carrying one of these is ours, whichever
/// root it belongs to.
const TSBSCTL_KINDS: [&str; 11] = [
    "tsbs-build",
    "go-installation",
    "tsbs-environment",
    "database-workspace",
    "dataset",
    "dataset-format",
    "run",
    "installation",
    "run-summary",
    "report",
    "comparison",
];

/// The `kind` of `file` when it is a JSON file tsbsctl wrote.
fn tsbsctl_kind(file: &Path) -> Option<String> {
    let meta = std::fs::metadata(file).ok()?;
    // Our manifests are small; a big file is not one of them and is not read whole.
    if !meta.is_file() || meta.len() > 64 << 20 {
        return None;
    }
    let v: serde_json::Value = serde_json::from_slice(&std::fs::read(file).ok()?).ok()?;
    let k = v.get("kind")?.as_str()?;
    (TSBSCTL_KINDS.contains(&k) || crate::product::query_set_kinds().contains(&k))
        .then(|| k.to_string())
}

/// The top-level directories of a state root (every product's, datasets, environment); two of
/// them side by side mark one.
fn root_layout() -> Vec<&'static str> {
    let mut v = crate::product::names();
    v.extend(["datasets", "environment"]);
    v
}

/// Why `dir` looks like (a part of) some tsbsctl state root, when it does.
fn state_marker(dir: &Path) -> Option<String> {
    let manifest = dir.join("manifest.json");
    if let Some(k) = tsbsctl_kind(&manifest) {
        return Some(format!("{} is a tsbsctl {k} manifest", manifest.display()));
    }
    let present: Vec<&str> = root_layout()
        .into_iter()
        .filter(|n| dir.join(n).is_dir())
        .collect();
    if present.len() >= 2 {
        return Some(format!(
            "{} holds {} side by side, the layout of a tsbsctl state root",
            dir.display(),
            present
                .iter()
                .map(|n| format!("{n}/"))
                .collect::<Vec<_>>()
                .join(", ")
        ));
    }
    // A root with a single product so far: `greptimedb/` holding `databases/`, `runs/`...
    for product in crate::product::names() {
        let p = dir.join(product);
        if let Some(sub) = ["databases", "runs", "installations"]
            .iter()
            .find(|s| p.join(s).is_dir())
        {
            return Some(format!(
                "{} holds {product}/{sub}/, the layout of a tsbsctl state root",
                dir.display()
            ));
        }
    }
    None
}

/// What makes `target` a part of some tsbsctl state root (another root than the current
/// one, e.g. `TSBSCTL_ROOT=/tmp/a ... --result-file /tmp/b/...`): the first directory, from
/// its parent upwards, that holds tsbsctl's own files.
fn foreign_state(target: &Path) -> Option<String> {
    let abs = resolved(target);
    let mut anc = abs.parent();
    while let Some(a) = anc {
        if let Some(m) = state_marker(a) {
            return Some(m);
        }
        anc = a.parent();
    }
    None
}

/// `--result-file PATH`: refused (exit 2, before the command runs) inside the state root or
/// any directory that looks like a part of a tsbsctl state root, over an existing tsbsctl
/// manifest, when it is a directory, or when its directory does not exist. `root` is `None`
/// when the state root could not be resolved (`--root` a file, `TSBSCTL_ROOT=` empty): every
/// check that needs no root still holds then (trial 2 N12).
pub fn check_result_file(root: Option<&Root>, path: &Path) -> Result<()> {
    if path.as_os_str().is_empty() || path.components().next_back() == Some(Component::ParentDir) {
        return Err(Error::invalid("--result-file needs a file path")
            .with_hint("e.g. --result-file ./result.json"));
    }
    let dirs = match root {
        Some(r) => state_dirs(r),
        // No root: a dataset root set in the environment is still tsbsctl's state.
        None => Root::at("")
            .with_dataset_root(None)
            .map(|r| r.datasets())
            .into_iter()
            .filter(|d| d.is_absolute())
            .collect(),
    };
    for d in dirs {
        if is_within(path, &d) {
            return Err(Error::invalid(format!(
                "--result-file {} is inside tsbsctl's state directory {}; writing it could replace a manifest",
                path.display(),
                d.display()
            ))
            .with_hint("write the result somewhere else, e.g. --result-file ./result.json"));
        }
    }
    if let Some(k) = tsbsctl_kind(&resolved(path)) {
        return Err(Error::invalid(format!(
            "--result-file {} is a tsbsctl {k} manifest; writing it would replace it",
            path.display()
        ))
        .with_hint("write the result somewhere else, e.g. --result-file ./result.json"));
    }
    if let Some(why) = foreign_state(path) {
        return Err(Error::invalid(format!(
            "--result-file {} is inside what looks like a tsbsctl state directory ({why}); \
             writing it could replace a manifest",
            path.display()
        ))
        .with_hint("write the result somewhere else, e.g. --result-file ./result.json"));
    }
    if path.is_dir() {
        return Err(
            Error::invalid(format!("--result-file {} is a directory", path.display()))
                .with_hint("name a file, e.g. --result-file ./result.json"),
        );
    }
    // Its directory must exist: creating it would hide a typo in the path (trial 2 N12).
    let abs = resolved(path);
    if let Some(dir) = abs.parent() {
        match std::fs::metadata(dir) {
            Ok(m) if m.is_dir() => {}
            Ok(_) => {
                return Err(Error::invalid(format!(
                    "--result-file {} is inside {}, which is not a directory",
                    path.display(),
                    dir.display()
                ))
                .with_hint("name a file under a directory"))
            }
            Err(_) => {
                return Err(Error::invalid(format!(
                    "--result-file {}: directory {} does not exist",
                    path.display(),
                    dir.display()
                ))
                .with_hint("check the path, or create the directory first"))
            }
        }
    }
    Ok(())
}

/// True when `dir` holds only what `runs report` writes, with a report's summary.
fn is_report_dir(dir: &Path) -> bool {
    let Ok(rd) = std::fs::read_dir(dir) else {
        return false;
    };
    for e in rd.flatten() {
        let name = e.file_name().to_string_lossy().into_owned();
        // Our own staging leftovers (`.summary.json.<random>.tmp`) are fine too.
        if !REPORT_FILES.contains(&name.as_str()) && !name.starts_with('.') {
            return false;
        }
    }
    std::fs::read(dir.join("summary.json"))
        .ok()
        .and_then(|b| serde_json::from_slice::<serde_json::Value>(&b).ok())
        .is_some_and(|v| v["kind"] == "report")
}

/// `runs report --out DIR`: a new directory, an empty one, or an earlier report directory;
/// never a directory holding anything else, nor a place inside the state root other than a
/// report directory (exit 2, nothing written).
pub fn check_report_out(root: &Root, out: &Path) -> Result<()> {
    let exists = out.exists();
    if exists && !out.is_dir() {
        return Err(Error::invalid(format!(
            "--out {} exists and is not a directory",
            out.display()
        ))
        .with_hint("pass a directory (created when missing)"));
    }
    let report = exists && is_report_dir(out);
    for d in state_dirs(root) {
        if is_within(out, &d) && !report {
            let reports = root.reports();
            let under_reports = resolved(out)
                .parent()
                .is_some_and(|p| p == resolved(&reports));
            if !under_reports || exists {
                return Err(Error::invalid(format!(
                    "--out {} is inside tsbsctl's state directory {} and is not a report directory",
                    out.display(),
                    d.display()
                ))
                .with_hint(format!(
                    "drop --out (reports go to {}), or pass a directory outside the state root",
                    reports.display()
                )));
            }
        }
    }
    // Another root (or a copy of one): refused whatever lies there, so no run list ever
    // shows a report directory as an unreadable run.
    let in_current = state_dirs(root).iter().any(|d| is_within(out, d));
    if !in_current {
        if let Some(why) = foreign_state(out) {
            return Err(Error::invalid(format!(
                "--out {} is inside what looks like a tsbsctl state directory ({why})",
                out.display()
            ))
            .with_hint(format!(
                "drop --out (reports go to {}), or pass a directory outside any state root",
                root.reports().display()
            )));
        }
    }
    // An earlier report is replaced only where tsbsctl knows it wrote exactly those bytes
    // (trial 2 N11): a changed file, or any file when the record is missing, is refused.
    if report {
        let hint = "remove them or choose another --out (keep a copy of any edit first)";
        match edited_report_files(out) {
            Some(edited) if !edited.is_empty() => {
                return Err(Error::invalid(format!(
                    "--out {} holds an earlier report whose {} changed since tsbsctl wrote it; writing the report there would replace the edit",
                    out.display(),
                    and_list(&edited)
                ))
                .with_hint(hint));
            }
            Some(_) => {}
            None => {
                return Err(Error::invalid(format!(
                    "--out {} holds an earlier report ({}) with no record that tsbsctl wrote those files as they are now ({REPORT_DIGESTS} is missing or unreadable); a person may have edited them, and writing the report there would replace the edit",
                    out.display(),
                    and_list(&present_report_files(out))
                ))
                .with_hint(hint));
            }
        }
    }
    if exists && !report {
        let empty = std::fs::read_dir(out)
            .map(|mut rd| rd.next().is_none())
            .unwrap_or(false);
        if !empty {
            return Err(Error::invalid(format!(
                "--out {} already holds files that tsbsctl did not write",
                out.display()
            ))
            .with_hint("pass a new or empty directory (it is created when missing)"));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Trial 2 N11: an earlier report's summary.md edited by hand was silently replaced.
    #[test]
    fn report_out_refuses_an_earlier_report_with_an_edited_file() {
        let t = tempfile::tempdir().unwrap();
        let root = Root::at(t.path().join("root"));
        let out = t.path().join("out dir ü");
        std::fs::create_dir(&out).unwrap();
        let files: Vec<(String, Vec<u8>)> = vec![
            ("summary.json".into(), br#"{"kind":"report"}"#.to_vec()),
            ("summary.md".into(), b"# Report\n".to_vec()),
            ("report.html".into(), b"<html></html>".to_vec()),
        ];
        let digests = report_digests(&files).unwrap();
        for (n, b) in files.iter().chain(std::iter::once(&digests)) {
            std::fs::write(out.join(n), b).unwrap();
        }
        assert!(
            check_report_out(&root, &out).is_ok(),
            "as written: reusable"
        );
        std::fs::write(out.join("summary.md"), "# Report\nmy notes\n").unwrap();
        let e = check_report_out(&root, &out).unwrap_err();
        assert_eq!(e.exit_code(), 2);
        assert!(e.message.contains("summary.md changed"), "{}", e.message);
        // Without the record (a report from before it existed): refused, naming the files.
        std::fs::remove_file(out.join(REPORT_DIGESTS)).unwrap();
        let e = check_report_out(&root, &out).unwrap_err();
        assert_eq!(e.exit_code(), 2);
        assert!(
            e.message
                .contains("summary.json, summary.md and report.html"),
            "{}",
            e.message
        );
        assert!(
            e.hint
                .as_deref()
                .unwrap_or("")
                .contains("remove them or choose another --out"),
            "{:?}",
            e.hint
        );
        // A record that is not ours (unreadable, or missing a file): the same.
        std::fs::write(out.join(REPORT_DIGESTS), "{").unwrap();
        assert!(check_report_out(&root, &out).is_err());
    }

    /// A rewrite cut between two files' renames leaves a directory still known as ours.
    #[test]
    fn a_report_cut_while_rewritten_is_still_recognised() {
        let t = tempfile::tempdir().unwrap();
        let root = Root::at(t.path().join("root"));
        let out = t.path().join("rep");
        std::fs::create_dir(&out).unwrap();
        let old: Vec<(String, Vec<u8>)> = vec![
            (
                "summary.json".into(),
                br#"{"kind":"report","v":1}"#.to_vec(),
            ),
            ("summary.md".into(), b"one".to_vec()),
        ];
        let new: Vec<(String, Vec<u8>)> = vec![
            (
                "summary.json".into(),
                br#"{"kind":"report","v":2}"#.to_vec(),
            ),
            ("summary.md".into(), b"two".to_vec()),
        ];
        for (n, b) in &old {
            std::fs::write(out.join(n), b).unwrap();
        }
        let (n, b) = interim_report_digests(&out, &new).unwrap();
        std::fs::write(out.join(n), b).unwrap();
        // Only summary.json was replaced when the process died.
        std::fs::write(out.join("summary.json"), &new[0].1).unwrap();
        assert!(check_report_out(&root, &out).is_ok());
        std::fs::write(out.join("summary.md"), "three").unwrap();
        assert!(check_report_out(&root, &out).is_err());
    }

    #[test]
    fn defect_2_report_out_refuses_a_users_directory() {
        let t = tempfile::tempdir().unwrap();
        let root = Root::at(t.path().join("root"));
        std::fs::create_dir_all(root.path().join("greptimedb/databases/g1")).unwrap();
        let precious = t.path().join("precious");
        std::fs::create_dir(&precious).unwrap();
        std::fs::write(precious.join("summary.md"), "my notes").unwrap();
        let e = check_report_out(&root, &precious).unwrap_err();
        assert_eq!(e.exit_code(), 2);
        assert!(e.message.contains("did not write"), "{}", e.message);
        // Inside the state root: refused even when empty or new.
        let ws = root.path().join("greptimedb/databases/g1");
        assert!(check_report_out(&root, &ws).is_err());
        assert!(check_report_out(&root, &ws.join("new")).is_err());
        // New, empty, an earlier report, or a new directory under reports/: fine.
        assert!(check_report_out(&root, &t.path().join("new/dir")).is_ok());
        let empty = t.path().join("empty");
        std::fs::create_dir(&empty).unwrap();
        assert!(check_report_out(&root, &empty).is_ok());
        std::fs::write(empty.join("summary.json"), r#"{"kind":"report"}"#).unwrap();
        std::fs::write(empty.join("report.html"), "x").unwrap();
        // A report with no record of what tsbsctl wrote: not replaced (trial 2 N11).
        let e = check_report_out(&root, &empty).unwrap_err();
        assert_eq!(e.exit_code(), 2);
        assert!(
            e.message.contains("summary.json and report.html"),
            "{}",
            e.message
        );
        let files: Vec<(String, Vec<u8>)> = vec![
            ("summary.json".into(), br#"{"kind":"report"}"#.to_vec()),
            ("report.html".into(), b"x".to_vec()),
        ];
        let (n, b) = report_digests(&files).unwrap();
        std::fs::write(empty.join(n), b).unwrap();
        assert!(check_report_out(&root, &empty).is_ok());
        assert!(check_report_out(&root, &root.reports().join("mine")).is_ok());
    }

    #[test]
    fn defect_3_result_file_refuses_the_state_root() {
        let t = tempfile::tempdir().unwrap();
        let root = Root::at(t.path().join("root"));
        std::fs::create_dir_all(root.path().join("greptimedb/databases/victim")).unwrap();
        let m = root
            .path()
            .join("greptimedb/databases/victim/manifest.json");
        let e = check_result_file(Some(&root), &m).unwrap_err();
        assert_eq!(e.exit_code(), 2);
        // Through `..` and a symlink too.
        let link = t.path().join("link");
        std::os::unix::fs::symlink(root.path(), &link).unwrap();
        assert!(check_result_file(Some(&root), &link.join("x.json")).is_err());
        assert!(check_result_file(Some(&root), &t.path().join("a/../root/x.json")).is_err());
        // A directory is not a file.
        assert!(check_result_file(Some(&root), t.path()).is_err());
        assert!(check_result_file(Some(&root), &t.path().join("result.json")).is_ok());
        // Trial 2 N12: a missing directory is refused, not created.
        let e = check_result_file(Some(&root), &t.path().join("out/result.json")).unwrap_err();
        assert_eq!(e.exit_code(), 2);
        assert!(e.message.contains("does not exist"), "{}", e.message);
    }

    /// Another root than the current one (trial: `TSBSCTL_ROOT=/tmp/a ... --result-file
    /// /tmp/b/influxdb3/databases/x/manifest.json` replaced b's workspace manifest).
    #[test]
    fn another_roots_state_is_refused_too() {
        let t = tempfile::tempdir().unwrap();
        let current = Root::at(t.path().join("a"));
        let other = t.path().join("b");
        let ws = other.join("influxdb3/databases/x");
        std::fs::create_dir_all(&ws).unwrap();
        std::fs::create_dir_all(other.join("greptimedb/runs")).unwrap();
        std::fs::write(
            ws.join("manifest.json"),
            r#"{"schema_version": 1, "kind": "database-workspace"}"#,
        )
        .unwrap();
        let e = check_result_file(Some(&current), &ws.join("manifest.json")).unwrap_err();
        assert_eq!(e.exit_code(), 2);
        assert!(e.message.contains("database-workspace"), "{}", e.message);
        // A new file beside it, and anywhere in that root's layout.
        let e = check_result_file(Some(&current), &ws.join("new.json")).unwrap_err();
        assert!(
            e.message.contains("database-workspace manifest"),
            "{}",
            e.message
        );
        let e = check_result_file(Some(&current), &other.join("greptimedb/x.json")).unwrap_err();
        assert!(
            e.message.contains("greptimedb/, influxdb3/"),
            "{}",
            e.message
        );
        let e = check_report_out(&current, &other.join("greptimedb/runs/newrep")).unwrap_err();
        assert_eq!(e.exit_code(), 2);
        assert!(e.message.contains("state directory"), "{}", e.message);
        // A root holding one product so far is still a root.
        let lone = t.path().join("c");
        std::fs::create_dir_all(lone.join("greptimedb/runs")).unwrap();
        assert!(check_report_out(&current, &lone.join("greptimedb/runs/r")).is_err());
        // A tsbsctl manifest copied anywhere is never overwritten.
        let copy = t.path().join("elsewhere/manifest.json");
        std::fs::create_dir_all(copy.parent().unwrap()).unwrap();
        std::fs::copy(ws.join("manifest.json"), &copy).unwrap();
        assert!(check_result_file(Some(&current), &copy).is_err());
        // Ordinary places stay fine, and an earlier result file may be replaced.
        let res = t.path().join("out/result.json");
        std::fs::create_dir_all(res.parent().unwrap()).unwrap();
        assert!(check_result_file(Some(&current), &res).is_ok());
        std::fs::write(&res, r#"{"ok": true, "command": "x"}"#).unwrap();
        assert!(check_result_file(Some(&current), &res).is_ok());
        assert!(check_report_out(&current, &t.path().join("rep")).is_ok());
        assert!(check_report_out(&current, &current.reports().join("mine")).is_ok());
    }

    /// Every product's query-set manifest is ours, wherever it was copied: PostgreSQL's and
    /// InfluxDB 2's were not (the kinds were a hand-kept list of two products).
    #[test]
    fn every_products_query_set_manifest_is_recognised() {
        let t = tempfile::tempdir().unwrap();
        let current = Root::at(t.path().join("a"));
        let kinds = crate::product::query_set_kinds();
        // The four products with query formats of their own (a test product may borrow one).
        assert!(kinds.len() >= 4, "{kinds:?}");
        for k in kinds {
            let f = t.path().join(format!("{k}.json"));
            std::fs::write(&f, format!(r#"{{"schema_version": 1, "kind": "{k}"}}"#)).unwrap();
            let e = check_result_file(Some(&current), &f).unwrap_err();
            assert!(
                e.message.contains(&format!("{k} manifest")),
                "{}",
                e.message
            );
        }
    }
}
