//! `tsbsctl greptimedb ...`: latest resolution, installs (reuse, reinstall, corruption),
//! workspaces (prepare, immutability, copy, list/inspect/verify/remove) against the release
//! mirror and the `greptime` emulator. The world these tests share with others is in
//! `world.rs`.

use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::{Duration, Instant};

use serde_json::{json, Value};
use testbed::mirror::{Fault, Mirror};
use testbed::releases::greptime::{self as rel, GreptimeRelease, Variant};

use tsbsctl::product::greptimedb::GreptimeDb;

use crate::util::*;
use crate::world::*;

fn archive_requests(m: &Mirror) -> usize {
    m.requests()
        .iter()
        .filter(|r| r.path.ends_with(".tar.gz"))
        .count()
}

/// Every file under `dir` with its bytes.
fn snapshot_all(dir: &Path) -> Vec<(PathBuf, Vec<u8>)> {
    all_files(dir)
        .into_iter()
        .map(|p| {
            let b = std::fs::read(&p).unwrap_or_default();
            (p, b)
        })
        .collect()
}

/// Every file under `dir` but lock files, with its bytes.
fn snapshot(dir: &Path) -> Vec<(PathBuf, Vec<u8>)> {
    all_files(dir)
        .into_iter()
        .filter(|p| p.file_name().is_some_and(|n| n != ".lock"))
        .map(|p| {
            let b = std::fs::read(&p).unwrap_or_default();
            (p, b)
        })
        .collect()
}

// ---------------------------------------------------------------------------------------------

#[test]
fn latest_stable_is_installed_and_recorded() {
    let gt = Gt::new();
    let r = gt.run_json(&["greptimedb", "install"]);
    r.ok();
    let m = &r.json()["data"]["manifest"];
    assert_eq!(m["version"], STABLE);
    assert_eq!(m["version_source"], "github-latest-stable");
    assert!(m["version_output"].as_str().unwrap().contains(STABLE));
    assert_eq!(m["binary"], "greptime");
    for k in ["archive_sha256", "binary_sha256", "tree_digest"] {
        assert_eq!(m[k].as_str().unwrap().len(), 64, "{k}");
    }
    assert!(m["source_url"].as_str().unwrap().ends_with(&format!(
        "/v{STABLE}/greptime-{}-v{STABLE}.tar.gz",
        host_platform()
    )));
    let on_disk = read_json(&gt.install_dir(STABLE).join("manifest.json"));
    assert_eq!(on_disk["binary_sha256"], m["binary_sha256"]);
    assert!(gt.install_dir(STABLE).join("greptime").is_file());
    // The GitHub API was asked exactly once; never a guess.
    let api: Vec<_> = gt
        .mirror
        .requests()
        .into_iter()
        .filter(|r| r.path.contains("/releases/latest"))
        .collect();
    assert_eq!(api.len(), 1);
    assert_eq!(api[0].header("accept"), Some("application/vnd.github+json"));
}

#[test]
fn latest_prerelease_and_rate_limit_are_refused() {
    let gt = Gt::new();
    let latest = rel::latest_path();
    rel::publish_latest(&gt.mirror, &format!("v{BETA}"), false, true);
    gt.run(&["greptimedb", "install"])
        .code(1)
        .says("prerelease")
        .says(&format!("--version {BETA}"));
    assert!(
        !gt.env.root.join("greptimedb/installations").exists()
            || all_files(&gt.env.root.join("greptimedb/installations"))
                .iter()
                .all(|p| !p.ends_with("greptime"))
    );

    gt.mirror.fault(&latest, Fault::RateLimited);
    gt.run(&["greptimedb", "install"])
        .code(1)
        .says("GITHUB_TOKEN")
        .says("--version");
    // An explicit version needs no API call and works while GitHub refuses.
    gt.run(&["greptimedb", "install", "--version", &format!("v{STABLE}")])
        .ok();
    // A prerelease is installed when named.
    let r = gt.run_json(&["greptimedb", "install", "--version", BETA]);
    r.ok();
    assert_eq!(r.json()["data"]["manifest"]["version_source"], "explicit");
}

#[test]
fn bad_versions_are_invalid_input_and_change_nothing() {
    let gt = Gt::new();
    for v in ["1.2", "latest", "vv1.1.4", "01.1.4"] {
        gt.run(&["greptimedb", "install", "--version", v]).code(2);
    }
    assert!(!gt.env.root.join("greptimedb").exists());
    assert!(gt.mirror.requests().is_empty());
}

#[test]
fn install_is_reused_without_download_and_reinstall_replaces_it() {
    let gt = Gt::new();
    gt.run(&["greptimedb", "install", "--version", STABLE]).ok();
    let first = read_json(&gt.install_dir(STABLE).join("manifest.json"));
    assert_eq!(archive_requests(&gt.mirror), 1);

    let r = gt.run_json(&["greptimedb", "install", "--version", STABLE]);
    r.ok();
    assert_eq!(r.json()["data"]["reused"], true);
    assert_eq!(archive_requests(&gt.mirror), 1, "reuse must not download");
    let before = gt.mirror.requests().len();

    let r = gt.run_json(&["greptimedb", "install", "--version", STABLE, "--reinstall"]);
    r.ok();
    let d = &r.json()["data"];
    assert_eq!(d["reused"], false);
    assert_eq!(d["replaced"], true);
    let second = read_json(&gt.install_dir(STABLE).join("manifest.json"));
    assert_ne!(first["installed_at"], second["installed_at"]);
    assert_eq!(first["binary_sha256"], second["binary_sha256"]);
    // The verified archive in the download cache is reused; the checksum is fetched again.
    assert!(gt.mirror.requests().len() > before);
    // No staging or aside leftovers.
    let version_dir = gt.install_dir(STABLE).parent().unwrap().to_path_buf();
    let names: Vec<String> = std::fs::read_dir(&version_dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    assert_eq!(names, vec![host_platform()]);
}

#[test]
fn interrupted_reinstall_leftovers_are_repaired() {
    let gt = Gt::new();
    gt.run(&["greptimedb", "install", "--version", STABLE]).ok();
    let target = gt.install_dir(STABLE);
    let parent = target.parent().unwrap();
    // A crash between "old tree moved aside" and "new tree renamed in" (non-exchange path).
    let aside = parent.join(format!(".{}.old-999999999-1", host_platform()));
    std::fs::rename(&target, &aside).unwrap();
    // And a dead process's staging directory.
    let staging = parent.join(format!(".{}.install-999999999-2", host_platform()));
    std::fs::create_dir_all(staging.join("tree")).unwrap();

    let r = gt.run_json(&["greptimedb", "install", "--version", STABLE]);
    r.ok().says("restoring");
    assert_eq!(r.json()["data"]["reused"], true);
    assert!(target.join("greptime").is_file());
    assert!(!aside.exists() && !staging.exists());
    assert_eq!(archive_requests(&gt.mirror), 1);
}

#[test]
fn corrupt_installation_is_found_by_verify_and_repaired_by_reinstall() {
    let gt = Gt::new();
    gt.prepare("w1", STABLE);
    gt.run(&["greptimedb", "verify", "--database-id", "w1"])
        .ok();

    // A new file in the tree: only the tree digest notices.
    std::fs::write(gt.install_dir(STABLE).join("README.extra"), "x").unwrap();
    gt.run(&["greptimedb", "verify", "--database-id", "w1"])
        .code(4)
        .says("changed since it was installed")
        .says(&format!(
            "greptimedb install --version {STABLE} --reinstall"
        ));
    gt.run(&["greptimedb", "install", "--version", STABLE])
        .code(4);
    gt.run(&["greptimedb", "install", "--version", STABLE, "--reinstall"])
        .ok();
    gt.run(&["greptimedb", "verify", "--database-id", "w1"])
        .ok();

    // The binary itself changed.
    let bin = gt.install_dir(STABLE).join("greptime");
    let mut bytes = std::fs::read(&bin).unwrap();
    bytes.extend_from_slice(b"\n# tampered\n");
    std::fs::write(&bin, bytes).unwrap();
    gt.run(&["greptimedb", "verify", "--database-id", "w1"])
        .code(4)
        .says("--reinstall");
    gt.run(&["greptimedb", "serve", "--database-id", "w1"])
        .code(4)
        .says("verify");
}

#[test]
fn wrong_version_output_fails_the_install_and_publishes_nothing() {
    let gt = Gt::new();
    gt.set_knobs(json!({"wrong_version": "9.9.9"}));
    gt.run(&["greptimedb", "install", "--version", STABLE])
        .code(4)
        .says("does not report");
    assert!(!gt.install_dir(STABLE).exists());
}

#[test]
fn prepare_binds_and_reuses_and_refuses_changes() {
    let gt = Gt::new();
    gt.run(&["greptimedb", "install", "--version", STABLE]).ok();
    gt.run(&["greptimedb", "install", "--version", OLD]).ok();
    let port = free_port_block(4);
    let ps = port.to_string();
    let r = gt.run_json(&[
        "greptimedb",
        "prepare",
        "--database-id",
        "w1",
        "--version",
        STABLE,
        "--http-port",
        &ps,
    ]);
    r.ok();
    let m = r.json()["data"]["manifest"].clone();
    assert_eq!(m["version"], STABLE);
    assert_eq!(m["database"], "benchmark");
    assert_eq!(m["binding"], Value::Null);
    assert_eq!(m["ports"]["http"], port);
    assert_eq!(m["ports"]["grpc"], port + 1);
    let ws = gt.ws_dir("w1");
    assert!(ws.join("data").is_dir() && ws.join("logs").is_dir());
    let cfg = std::fs::read_to_string(ws.join("config.toml")).unwrap();
    assert!(
        cfg.contains(&format!("addr = \"127.0.0.1:{port}\"")),
        "{cfg}"
    );
    assert!(cfg.contains(&format!("data_home = \"{}\"", ws.join("data").display())));

    // Reuse: same or no flags.
    let r = gt.run_json(&["greptimedb", "prepare", "--database-id", "w1"]);
    r.ok();
    assert_eq!(r.json()["data"]["reused"], true);

    let before = snapshot(&ws);
    for (args, needle) in [
        (vec!["--version", OLD], "copy --source-database-id w1"),
        (vec!["--database", "other"], "new one"),
        (vec!["--http-port", "4999"], "ports"),
    ] {
        let mut a = vec!["greptimedb", "prepare", "--database-id", "w1"];
        a.extend(args);
        gt.run(&a).code(2).says(needle);
        assert_eq!(snapshot(&ws), before, "prepare changed the workspace");
    }

    // Bad input creates nothing.
    for bad in ["-a", "a/b", ".x", &"a".repeat(65)] {
        gt.run(&["greptimedb", "prepare", "--database-id", bad])
            .code(2);
    }
    gt.run(&[
        "greptimedb",
        "prepare",
        "--database-id",
        "w2",
        "--database",
        "a-b",
    ])
    .code(2);
    assert!(!gt.ws_dir("w2").exists());

    // A directory with foreign content and no manifest is not adopted.
    std::fs::create_dir_all(gt.ws_dir("w3")).unwrap();
    std::fs::write(gt.ws_dir("w3").join("notes.txt"), "mine").unwrap();
    gt.run(&["greptimedb", "prepare", "--database-id", "w3"])
        .code(2)
        .says("not adopted");
    assert!(!gt.ws_dir("w3").join("manifest.json").exists());

    // Without --version a new workspace takes the newest installed version, offline.
    gt.mirror.fault(&rel::latest_path(), Fault::Status(500));
    let p4 = free_port_block(4).to_string();
    let r = gt.run_json(&[
        "greptimedb",
        "prepare",
        "--database-id",
        "w4",
        "--http-port",
        &p4,
    ]);
    r.ok();
    let m4 = &r.json()["data"]["manifest"];
    assert_eq!(m4["version"], STABLE);
    assert_eq!(m4["version_source"], "newest-installed");
}

#[test]
fn prepare_without_anything_installed_installs_the_latest() {
    let gt = Gt::new();
    let p = free_port_block(4).to_string();
    let r = gt.run_json(&[
        "greptimedb",
        "prepare",
        "--database-id",
        "fresh",
        "--http-port",
        &p,
    ]);
    r.ok();
    let d = r.json()["data"].clone();
    assert_eq!(d["manifest"]["version"], STABLE);
    assert_eq!(d["manifest"]["version_source"], "github-latest-stable");
    assert_eq!(d["installed"], true);
    assert!(gt.install_dir(STABLE).join("manifest.json").is_file());
}

#[test]
fn list_inspect_verify_remove() {
    let gt = Gt::new();
    gt.prepare("a1", STABLE);
    gt.prepare("b1", STABLE);
    std::fs::remove_dir_all(gt.ws_dir("b1").join("data")).unwrap();

    let r = gt.run_json(&["greptimedb", "list"]);
    r.ok();
    let ws = r.json()["data"]["workspaces"].clone();
    assert_eq!(ws.as_array().unwrap().len(), 2);
    assert_eq!(ws[0]["database_id"], "a1");
    assert_eq!(ws[0]["state"], "ok");
    assert_eq!(ws[1]["state"], "broken");
    assert!(ws[1]["problems"][0]["problem"]
        .as_str()
        .unwrap()
        .contains("data/"));

    // A hand-edited config is reported by inspect and refused by verify.
    let cfg = gt.ws_dir("a1").join("config.toml");
    let mut text = std::fs::read_to_string(&cfg).unwrap();
    text.push_str("\n# edited\n");
    std::fs::write(&cfg, &text).unwrap();
    let r = gt.run_json(&["greptimedb", "inspect", "--database-id", "a1"]);
    r.ok();
    assert_eq!(r.json()["data"]["state"], "broken");
    gt.run(&["greptimedb", "verify", "--database-id", "a1"])
        .code(4)
        .says("changed by hand");
    // Deleting it and preparing again regenerates it.
    std::fs::remove_file(&cfg).unwrap();
    gt.run(&["greptimedb", "prepare", "--database-id", "a1"])
        .ok();
    gt.run(&["greptimedb", "verify", "--database-id", "a1"])
        .ok();

    gt.run(&["greptimedb", "inspect", "--database-id", "nope"])
        .code(2);
    gt.run(&[
        "greptimedb",
        "remove",
        "--database-id",
        "a1",
        "--confirm",
        "b1",
    ])
    .code(2)
    .says("--confirm a1");
    assert!(gt.ws_dir("a1").exists());
    gt.run(&[
        "greptimedb",
        "remove",
        "--database-id",
        "a1",
        "--confirm",
        "a1",
    ])
    .ok();
    assert!(!gt.ws_dir("a1").exists());
    let left: Vec<_> = std::fs::read_dir(gt.env.root.join("greptimedb/databases"))
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    assert_eq!(left, vec!["b1".to_string()]);
}

#[test]
fn copy_is_independent_verified_and_records_provenance() {
    let gt = Gt::new();
    gt.prepare("src", STABLE);
    gt.run(&["greptimedb", "install", "--version", OLD]).ok();
    let lines: String = (0..50)
        .map(|i| {
            format!(
                "cpu,hostname=host_{} usage_user={i} {}\n",
                i % 5,
                1686441600000000000u64 + i * 10_000_000_000
            )
        })
        .collect();
    gt.with_server("src", |ep| {
        // Admin SQL against the emulator (the product's `/v1/sql` client).
        let g = GreptimeDb;
        let dbs = |g: &GreptimeDb| -> Vec<String> {
            let out = g.sql(ep, None, "SHOW DATABASES").unwrap();
            out.pointer("/records/rows")
                .and_then(|r| r.as_array())
                .unwrap()
                .iter()
                .filter_map(|r| r.get(0).and_then(|v| v.as_str()).map(str::to_string))
                .collect()
        };
        g.sql(ep, None, "CREATE DATABASE benchmark").unwrap();
        g.sql(ep, None, "CREATE DATABASE scratch").unwrap();
        assert!(g.sql(ep, None, "CREATE DATABASE scratch").is_err());
        let listed = dbs(&g);
        assert!(
            listed.contains(&"benchmark".to_string()) && listed.contains(&"scratch".to_string()),
            "{listed:?}"
        );
        g.sql(ep, None, "DROP DATABASE scratch").unwrap();
        assert!(!dbs(&g).contains(&"scratch".to_string()));
        write_lines(ep, "benchmark", &lines);
        assert_eq!(
            sql_status_in(ep, "benchmark", "ADMIN flush_table('cpu')"),
            Some(200)
        );
    });
    let src_data = gt.ws_dir("src").join("data");
    let src_before = snapshot_all(&src_data);
    assert!(!src_before.is_empty());

    // Refusals first: same id, existing destination, version not installed.
    gt.run(&copy_args("src", "src", OLD)).code(2);
    gt.run(&copy_args("src", "dst", BETA))
        .code(2)
        .says("install --version");
    std::fs::create_dir_all(gt.ws_dir("dst")).unwrap();
    gt.run(&copy_args("src", "dst", OLD))
        .code(2)
        .says("already exists");
    std::fs::remove_dir(gt.ws_dir("dst")).unwrap();

    let port = free_port_block(4).to_string();
    let mut args = copy_args("src", "dst", OLD);
    args.extend(["--http-port", &port]);
    let r = gt.run_json(&args);
    r.ok();
    let m = gt.manifest("dst");
    assert_eq!(m["version"], OLD);
    assert_eq!(m["database"], "benchmark");
    let c = &m["copied_from"];
    assert_eq!(c["database_id"], "src");
    assert_eq!(c["version"], STABLE);
    assert_eq!(c["method"], "full");
    assert_eq!(c["files"].as_u64().unwrap() as usize, src_before.len());
    let bytes: usize = src_before.iter().map(|(_, b)| b.len()).sum();
    assert_eq!(c["bytes"].as_u64().unwrap() as usize, bytes);
    assert_eq!(c["content_sha256"].as_str().unwrap().len(), 64);
    assert!(all_files(&gt.ws_dir("dst").join("logs")).is_empty());

    // Independent: different inodes, and writing to the copy leaves the source unchanged.
    use std::os::unix::fs::MetadataExt;
    let (p0, _) = &src_before[0];
    let rel = p0.strip_prefix(&src_data).unwrap();
    let a = std::fs::metadata(p0).unwrap();
    let b = std::fs::metadata(gt.ws_dir("dst").join("data").join(rel)).unwrap();
    assert_ne!(a.ino(), b.ino());
    gt.with_server("dst", |ep| {
        assert_eq!(
            tsbsctl::product::Loading::count_rows(
                &tsbsctl::product::greptimedb::GreptimeDb,
                ep,
                "benchmark",
                "cpu"
            )
            .unwrap(),
            50
        );
        write_lines(
            ep,
            "benchmark",
            "cpu,hostname=host_9 usage_user=1 1686441600000000001\n",
        );
    });
    assert_eq!(snapshot_all(&src_data), src_before);
    assert!(!gt
        .env
        .root
        .join("greptimedb/databases")
        .read_dir()
        .unwrap()
        .any(|e| e.unwrap().file_name().to_string_lossy().starts_with('.')));
}

/// `greptimedb copy` of workspace `src` to `dst` at `version`.
fn copy_args<'a>(src: &'a str, dst: &'a str, version: &'a str) -> Vec<&'a str> {
    vec![
        "greptimedb",
        "copy",
        "--source-database-id",
        src,
        "--database-id",
        dst,
        "--version",
        version,
    ]
}

#[test]
fn copy_refuses_links_in_data_and_publishes_nothing() {
    let gt = Gt::new();
    gt.prepare("src", STABLE);
    let data = gt.ws_dir("src").join("data");
    std::fs::write(data.join("f"), "x").unwrap();
    std::os::unix::fs::symlink("/etc/passwd", data.join("link")).unwrap();
    gt.run(&copy_args("src", "dst", STABLE))
        .code(4)
        .says("symbolic link");
    assert!(!gt.ws_dir("dst").exists());
    let hidden = gt
        .env
        .root
        .join("greptimedb/databases")
        .read_dir()
        .unwrap()
        .filter(|e| {
            e.as_ref()
                .unwrap()
                .file_name()
                .to_string_lossy()
                .starts_with('.')
        })
        .count();
    assert_eq!(hidden, 0);
}

#[test]
fn concurrent_installs_of_one_version_download_once() {
    let gt = Gt::new();
    let archive = rel::archive_path(STABLE, &host_platform());
    // Slow enough that the second command starts while the first downloads.
    gt.mirror
        .fault(&archive, Fault::Slow { bytes_per_sec: 150 });
    let args = ["greptimedb", "install", "--version", STABLE, "--json"];
    let spawn = || {
        let mut c = gt.env.cmd(&args);
        c.stdout(Stdio::piped()).stderr(Stdio::piped());
        c.spawn().unwrap()
    };
    let a = spawn();
    let deadline = Instant::now() + Duration::from_secs(20);
    while archive_requests(&gt.mirror) == 0 {
        assert!(Instant::now() < deadline, "first install never downloaded");
        std::thread::sleep(Duration::from_millis(10));
    }
    let b = spawn();
    let runs: Vec<Run> = [a, b]
        .into_iter()
        .map(|c| Run::from_output(&args, c.wait_with_output().unwrap()))
        .collect();
    // The second waited for the first's install lock, then reused its result.
    runs[1].says("waiting up to");
    for r in &runs {
        r.ok();
    }
    let reused: Vec<bool> = runs
        .iter()
        .map(|r| r.json()["data"]["reused"].as_bool().unwrap())
        .collect();
    assert_eq!(reused.iter().filter(|r| **r).count(), 1, "{reused:?}");
    assert_eq!(archive_requests(&gt.mirror), 1);
    assert!(gt.install_dir(STABLE).join("greptime").is_file());
}

#[test]
fn bad_archives_are_refused_and_nothing_is_installed() {
    let gt = Gt::new();
    for (variant, code, needle) in [
        (Variant::WrongChecksum, 4, "sha256"),
        (Variant::MissingChecksum, 1, "sha256sum"),
        (Variant::ExtraTopLevelEntry, 4, "README.md"),
        (Variant::SymlinkEscape, 4, ""),
        (Variant::MissingBinary, 4, "no greptime binary"),
    ] {
        rel::publish(
            &gt.mirror,
            &GreptimeRelease::new(STABLE)
                .with_knobs(&gt.knobs)
                .with_variant(variant),
        );
        let r = gt.run(&["greptimedb", "install", "--version", STABLE]);
        assert_eq!(r.code, code, "{variant:?}\n{}", r.describe());
        r.says(needle);
        // Nothing half-made is left: not even the version directory.
        assert!(
            !gt.install_dir(STABLE).parent().unwrap().exists(),
            "{variant:?}\n{}",
            r.describe()
        );
    }
    // Upper-case hex (as Windows builds write it) is still the right digest.
    rel::publish(
        &gt.mirror,
        &GreptimeRelease::new(STABLE)
            .with_knobs(&gt.knobs)
            .with_variant(Variant::UppercaseChecksum),
    );
    gt.run(&["greptimedb", "install", "--version", STABLE]).ok();
    // A hard link inside the distribution is harmless and kept (the archive module refuses only
    // links that leave the tree).
    rel::publish(
        &gt.mirror,
        &GreptimeRelease::new(STABLE)
            .with_knobs(&gt.knobs)
            .with_variant(Variant::HardLink),
    );
    gt.run(&["greptimedb", "install", "--version", STABLE, "--reinstall"])
        .ok();
    assert!(gt.install_dir(STABLE).join("greptime-link").is_file());
}

#[test]
fn reinstall_killed_midway_keeps_the_old_installation() {
    let gt = Gt::new();
    gt.prepare("w1", STABLE);
    let before = read_json(&gt.install_dir(STABLE).join("manifest.json"));
    let sums = rel::checksum_path(STABLE, &host_platform());
    gt.mirror.fault(&sums, Fault::Slow { bytes_per_sec: 4 });
    let mut c = gt
        .env
        .cmd(&["greptimedb", "install", "--version", STABLE, "--reinstall"]);
    c.stdout(Stdio::null()).stderr(Stdio::null());
    let mut child = c.spawn().unwrap();
    let deadline = Instant::now() + Duration::from_secs(20);
    while !gt.mirror.requests().iter().any(|r| r.path == sums) {
        assert!(
            Instant::now() < deadline,
            "reinstall never fetched the checksum"
        );
        std::thread::sleep(Duration::from_millis(10));
    }
    child.kill().unwrap();
    child.wait().unwrap();
    gt.mirror.clear_faults();
    assert_eq!(
        read_json(&gt.install_dir(STABLE).join("manifest.json")),
        before
    );
    gt.run(&["greptimedb", "verify", "--database-id", "w1"])
        .ok();
    gt.run(&["greptimedb", "install", "--version", STABLE, "--reinstall"])
        .ok();
    gt.run(&["greptimedb", "verify", "--database-id", "w1"])
        .ok();
}

#[test]
fn leftovers_of_interrupted_copies_and_removals_are_swept() {
    let gt = Gt::new();
    gt.prepare("w1", STABLE);
    let base = gt.env.root.join("greptimedb/databases");
    let dead_copy = base.join(".w9.copy-999999999-1");
    let dead_remove = base.join(".w8.removing-999999999-2");
    let live = base.join(format!(".w7.copy-{}-3", std::process::id()));
    for d in [&dead_copy, &dead_remove, &live] {
        std::fs::create_dir_all(d.join("data")).unwrap();
    }
    let r = gt.run(&["greptimedb", "prepare", "--database-id", "w1"]);
    r.ok().says("interrupted copy");
    assert!(!dead_copy.exists() && !dead_remove.exists());
    assert!(live.exists(), "a live process's staging must stay");
    // `list` never shows staging directories.
    let r = gt.run_json(&["greptimedb", "list"]);
    assert_eq!(r.json()["data"]["workspaces"].as_array().unwrap().len(), 1);
}

/// The run directories of the world, sorted.
fn run_dirs(w: &World) -> Vec<PathBuf> {
    let mut v: Vec<PathBuf> = std::fs::read_dir(w.gt.env.root.join("greptimedb/runs"))
        .map(|rd| rd.flatten().map(|e| e.path()).collect())
        .unwrap_or_default();
    v.sort();
    v
}

/// The statuses of `step` in a run's events, in order.
fn step_statuses(dir: &Path, step: &str) -> Vec<String> {
    std::fs::read_to_string(dir.join("events.jsonl"))
        .unwrap_or_default()
        .lines()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .filter(|e| e["step"] == step)
        .map(|e| e["status"].as_str().unwrap_or("").to_string())
        .collect()
}

#[test]
fn a_draining_stop_after_a_load_and_a_long_compaction_both_succeed() {
    let w = world();
    // Engine-full flushes during the load (small files: the real TWCS picks a window from 4
    // files on) schedule automatic compactions that are still running when the load ends: the stop drains them, logging progress per window, for
    // longer than the --stop-timeout (the time allowed without progress).
    // Slow enough that what runs between the load and the stop (row count, the last resource
    // sample) cannot finish it on a busy machine.
    w.gt.set_knobs(json!({"auto_flush_bytes": 5000, "compaction_ms_per_mib": 12000.0}));
    let mut a = vec![
        "bench",
        "greptimedb",
        "all",
        "--database-id",
        "g1",
        "--query-type",
        "lastpoint",
        "--queries",
        "3",
        "--batch-size",
        "20",
        // 2 s without progress: a disk stalled by another process for a second (seen on a
        // busy host) is not the end of the drain; the compaction still outlasts it.
        "--stop-timeout",
        "2",
        "--json",
    ];
    a.extend(tiny());
    let r = w.run(&a);
    r.ok();
    let dir = run_dir(&r);
    let s = summary(&dir);
    assert_eq!(s["status"], "completed", "{}", s["failures"]);
    let srv = &s["server_diagnostics"]["attempts"][0];
    let log1 = std::fs::read_to_string(dir.join("logs/server-001.log")).unwrap_or_default();
    assert_eq!(srv["outcome"]["forced"], false, "{srv} {log1}");
    let took = srv["stop_seconds"].as_f64().unwrap();
    assert!(took > 2.0, "the stop drained for {took} s only: {log1}");
    assert!(s["warnings"].as_array().unwrap().is_empty());
    let md = std::fs::read_to_string(dir.join("summary.md")).unwrap();
    assert!(
        md.contains("| Server start | Status | Ready after (s) | Stop took (s) | Log |"),
        "{md}"
    );
    // The footprint follows the real layout (metadata is not WAL).
    let st = &s["storage"];
    assert_eq!(st["layout"], "greptimedb");
    assert!(st["metadata_bytes"].as_u64().unwrap() > 0, "{st}");
    // The metadata is what raft-engine wrote, not its preallocated file (F6).
    let used = st["metadata_used_bytes"].as_u64().unwrap();
    assert!(used > 0 && used < 100_000, "{st}");
    assert!(
        st["metadata_preallocated_bytes"].as_u64().unwrap() > 1_000_000,
        "{st}"
    );
    assert!(md.contains(" used ("), "{md}");
    assert!(st["data_files"].as_u64().unwrap() > 0, "{st}");
    assert_eq!(st["never_flushed"], false);
    // The compactions the stop drained were thrown away: their outputs are orphans on disk,
    // which the server lists on storage and in no manifest.
    assert!(
        md.contains("of the table are on storage but in no manifest"),
        "{md}"
    );
    assert!(
        md.contains("`tsbsctl greptimedb orphans --database-id g1` names them all"),
        "{md}"
    );
    let loc = &s["data_location"];
    assert!(loc["orphan_files"].as_u64().unwrap() >= 1, "{loc}");
    let p0 = loc["orphan_paths"][0].as_str().unwrap();
    assert!(p0.starts_with("data/greptime/benchmark/1024/"), "{p0}");
    assert!(loc["orphan_bytes"].as_u64().unwrap() > 0, "{loc}");
    // verify (no server) says what the last query run found, and how to look now.
    let v = w.run(&["greptimedb", "verify", "--database-id", "g1"]);
    v.ok();
    assert!(
        v.stdout.contains("SST file(s)")
            && v.stdout.contains("greptimedb orphans --database-id g1"),
        "{}",
        v.stdout
    );
    // The server names them, and they are removed with it stopped (C8, F10).
    let r = w.run(&["greptimedb", "orphans", "--database-id", "g1", "--json"]);
    r.ok();
    let listed = r.json()["data"].clone();
    assert!(listed["sst_files"].as_u64().unwrap() >= 1, "{listed}");
    assert_eq!(listed["removed"], 0);
    let first =
        w.gt.ws_dir("g1")
            .join("data")
            .join(listed["orphans"][0]["path"].as_str().unwrap());
    assert!(first.is_file(), "{}", first.display());
    let r = w.run(&[
        "greptimedb",
        "orphans",
        "--database-id",
        "g1",
        "--remove",
        "--json",
    ]);
    r.ok();
    assert_eq!(
        r.json()["data"]["removed"],
        listed["orphans"].as_array().unwrap().len()
    );
    assert!(!first.exists());
    let r = w.run(&["greptimedb", "orphans", "--database-id", "g1", "--json"]);
    r.ok();
    assert_eq!(r.json()["data"]["orphans"], json!([]));
    // The data is whole: the next query run's count and location agree.
    assert!(!w.gt.ws_dir("g1").join("server.pid").exists());
    // The report carries the five buckets and the orphan note (F5 of the second real run).
    let p = dir.to_string_lossy().into_owned();
    let rep = w.run(&["runs", "report", &p, "--json"]);
    rep.ok();
    let rdir = PathBuf::from(rep.json()["data"]["report_dir"].as_str().unwrap());
    let rmd = std::fs::read_to_string(rdir.join("summary.md")).unwrap();
    for row in [
        "| — of which index |",
        "| — of which metadata |",
        "| — of which manifests and the rest |",
    ] {
        assert!(rmd.contains(row), "{row}: {rmd}");
    }
    assert!(
        rmd.contains(
            "SST file(s) on disk are in no manifest (outputs of compactions a stop threw away)"
        ),
        "{rmd}"
    );
    let html = std::fs::read_to_string(rdir.join("report.html")).unwrap();
    assert!(html.contains("— of which metadata"), "html");

    // A compaction that blocks for longer than any HTTP limit in the code, scaled down: the
    // admin and download limits are set to 2 s, and the answer is still awaited.
    w.gt.set_knobs(json!({"compaction_ms_per_mib": 2000.0}));
    let args = [
        "bench",
        "greptimedb",
        "compact",
        "--database-id",
        "g1",
        "--parallelism",
        "2",
        "--stop-timeout",
        "5",
        "--json",
    ];
    let mut cmd = w.gt.env.cmd(&args);
    cmd.env("TSBSCTL_ADMIN_TIMEOUT_SECS", "2")
        .env("TSBSCTL_HTTP_TIMEOUT_SECS", "2");
    let r = crate::util::run_command(cmd, &args, std::time::Duration::from_secs(300));
    r.ok();
    let dir = run_dir(&r);
    let s = summary(&dir);
    let c = &s["compaction"];
    assert_eq!(
        c["compact"]["sql"],
        "ADMIN COMPACT_TABLE('cpu', 'swcs', 'window=7200,parallelism=2')"
    );
    assert_eq!(s["workload"]["parallelism"], 2);
    let secs = c["compact"]["elapsed_seconds"].as_f64().unwrap();
    assert!(secs > 2.0, "{c}");
    assert_eq!(c["confirmation"]["outcome"], "compacted");
    assert_eq!(c["after"]["sst_num"], 12);
    let md = std::fs::read_to_string(dir.join("summary.md")).unwrap();
    assert!(md.contains("| after the flush |"), "{md}");
    assert!(md.contains("Server-side parallelism: 2"), "{md}");
    assert!(!md.contains("TSBS: commit"), "{md}");
    assert!(
        md.contains(&format!("(answered after {secs:.1} s)")),
        "{md}"
    );
}

#[test]
fn the_answer_a_server_sends_while_it_stops_is_recorded_with_the_interrupted_statement() {
    let w = world();
    w.bench("load", &[]).ok();
    // Calibrate: how long a compaction of this data takes at 1000 ms per MiB and window.
    w.gt.set_knobs(json!({"compaction_ms_per_mib": 1000.0}));
    let r = w.bench("compact", &[]);
    r.ok();
    let s = summary(&run_dir(&r));
    let took = s["compaction"]["compact"]["elapsed_seconds"]
        .as_f64()
        .unwrap();
    // The next one takes about 2.5 s: interrupted after 0.5 s, the server (SIGTERM) finishes
    // its merge within the 5 s tsbsctl gives it, then answers 500 "Region … is stopped".
    let k = (1000.0 * 2.5 / took.max(0.05)).min(1e7);
    w.gt.set_knobs(json!({"compaction_ms_per_mib": k}));
    let known = run_dirs(&w);
    let mut c =
        w.gt.env
            .cmd(&["bench", "greptimedb", "compact", "--database-id", "g1"]);
    c.stdout(Stdio::piped()).stderr(Stdio::piped());
    let child = c.spawn().unwrap();
    let mut dir = None;
    assert!(wait_until(Duration::from_secs(60), || {
        dir = run_dirs(&w).into_iter().find(|d| !known.contains(d));
        dir.as_ref()
            .is_some_and(|d| step_statuses(d, "compact").contains(&"running".into()))
    }));
    std::thread::sleep(Duration::from_millis(500));
    // SAFETY: signalling the tsbsctl child this test started.
    unsafe { libc::kill(child.id() as i32, libc::SIGINT) };
    let out = child.wait_with_output().unwrap();
    assert_eq!(out.status.code(), Some(130));
    let dir = dir.unwrap();
    let s = summary(&dir);
    let st = &s["compaction"]["compact"];
    assert_eq!(st["status"], "interrupted", "{st}");
    let late = &st["answer_while_stopping"];
    assert_eq!(late["ok"], false, "{st}");
    assert!(
        late["error"].as_str().unwrap().contains("is stopped"),
        "{late}"
    );
    let md = std::fs::read_to_string(dir.join("summary.md")).unwrap();
    assert!(
        md.contains("no answer**; while it stopped, the server answered:"),
        "{md}"
    );
}

#[test]
fn a_compaction_killed_or_interrupted_after_its_flush_leaves_the_state_unknown() {
    let w = world();
    w.bench("load", &[]).ok();
    // Long enough to be caught in the middle.
    w.gt.set_knobs(json!({"compaction_ms_per_mib": 200000.0}));
    let args = [
        "bench",
        "greptimedb",
        "compact",
        "--database-id",
        "g1",
        "--stop-timeout",
        "30",
    ];
    for signal in [libc::SIGKILL, libc::SIGINT] {
        let known = run_dirs(&w);
        let mut c = w.gt.env.cmd(&args);
        c.stdout(Stdio::piped()).stderr(Stdio::piped());
        let child = c.spawn().unwrap();
        let mut dir = None;
        assert!(wait_until(Duration::from_secs(60), || {
            dir = run_dirs(&w).into_iter().find(|d| !known.contains(d));
            dir.as_ref()
                .is_some_and(|d| step_statuses(d, "compact").contains(&"running".into()))
        }));
        let dir = dir.unwrap();
        assert_eq!(step_statuses(&dir, "flush"), ["running", "completed"]);
        // SAFETY: signalling the tsbsctl child this test started.
        unsafe { libc::kill(child.id() as i32, signal) };
        let signalled = Instant::now();
        let out = child.wait_with_output().unwrap();
        let took = signalled.elapsed();
        // Trial 2 N15: `runs list` showed the killed run "as loaded", the Ctrl-C'd one
        // "maintenance interrupted"; both say the state is unknown, before and after the run
        // is opened (and recorded as interrupted).
        for _ in 0..2 {
            let l = w.run(&["runs", "list", "--json"]);
            let e = l.json()["data"]["runs"]
                .as_array()
                .unwrap()
                .iter()
                .find(|e| e["run_dir"].as_str() == dir.to_str())
                .cloned()
                .unwrap();
            assert_eq!(
                e["data_state"], "maintenance interrupted: state unknown",
                "{signal} {e}"
            );
            assert_eq!(e["status"], "interrupted", "{e}");
            let show = w.run(&["runs", "show", dir.to_str().unwrap()]);
            show.ok().says("maintenance interrupted: state unknown");
        }
        let mt = w.gt.manifest("g1")["data_state"]["maintenance"].clone();
        let last = mt.as_array().unwrap().last().unwrap().clone();
        if signal == libc::SIGINT {
            assert_eq!(out.status.code(), Some(130));
            assert_eq!(last["status"], "interrupted", "{last}");
            assert_eq!(last["data_state"], "unknown");
            assert_eq!(
                step_statuses(&dir, "compact").last().unwrap(),
                "interrupted"
            );
            assert!(!w.gt.ws_dir("g1").join("server.pid").exists());
            // F2: the server throws a stopped compaction away, so the stop does not wait for
            // it (the drain would run the whole merge here), and says so; the kill is recorded.
            let stderr = String::from_utf8_lossy(&out.stderr);
            assert!(
                stderr.contains("is thrown away (its manifest update fails on the stopping region), so the stop does not wait for it; SIGKILL after 5 s"),
                "{stderr}"
            );
            assert!(took < Duration::from_secs(20), "{took:?}");
            let s = summary(&dir);
            let srv = &s["server_diagnostics"]["attempts"][0];
            assert_eq!(srv["outcome"]["forced"], true, "{srv}");
            // F1: the statement was interrupted, not answered.
            let md = std::fs::read_to_string(dir.join("summary.md")).unwrap();
            assert!(md.contains("(**interrupted after "), "{md}");
            assert!(md.contains(" s, no answer**)"), "{md}");
            assert_eq!(
                md.matches("answered after").count(),
                1,
                "only the flush: {md}"
            );
        } else {
            // Killed: only the intent recorded before the flush is left.
            assert_eq!(last["status"], "started", "{last}");
        }
        // The next command: never "as loaded".
        w.gt.set_knobs(json!({}));
        let r = w.bench("query", &["--query-type", "lastpoint"]);
        r.ok();
        let s = summary(&run_dir(&r));
        assert_eq!(
            s["data_state"]["label"], "maintenance interrupted: state unknown",
            "{signal}"
        );
        assert!(s["label"]
            .as_str()
            .unwrap()
            .ends_with("(maintenance interrupted: state unknown)"));
        w.gt.set_knobs(json!({"compaction_ms_per_mib": 200000.0}));
    }
}

#[test]
fn compaction_options_the_version_lacks_are_refused_before_anything_runs() {
    let w = world();
    w.gt.prepare("old", OLD);
    let before = run_dirs(&w);
    let r = w.run(&[
        "bench",
        "greptimedb",
        "compact",
        "--database-id",
        "old",
        "--parallelism",
        "2",
    ]);
    r.code(2).says("parallelism");
    assert_eq!(run_dirs(&w), before);
    assert!(!w.gt.ws_dir("old").join("server.pid").exists());
    w.run(&[
        "bench",
        "greptimedb",
        "query",
        "--database-id",
        "old",
        "--parallelism",
        "2",
    ])
    .code(2)
    .says("compact phase only");
}

#[test]
fn query_runs_say_where_the_data_is_and_can_flush_first() {
    let w = world();
    // A small load never fills a memtable: nothing is flushed, all of it is WAL.
    let load = w.bench_ok("all", &["--query-type", "lastpoint"]);
    let s = summary(&load);
    assert_eq!(s["storage"]["never_flushed"], true, "{}", s["storage"]);
    assert_eq!(s["storage"]["data_files"], 0);
    let md = std::fs::read_to_string(load.join("summary.md")).unwrap();
    assert!(md.contains("**Never flushed:**"), "{md}");
    // "As loaded" queries run on memtables replayed from the WAL, and say so.
    let loc = &s["data_location"];
    assert_eq!(loc["sst_num"], 0, "{loc}");
    assert!(loc["memtable_size"].as_u64().unwrap() > 0, "{loc}");
    assert!(
        md.contains("Part of the data was read from memtables"),
        "{md}"
    );
    // --flush-before-queries: recorded, a like-for-like baseline on SST files.
    let r = w.bench(
        "query",
        &["--query-type", "lastpoint", "--flush-before-queries"],
    );
    r.ok();
    let flushed = run_dir(&r);
    let s = summary(&flushed);
    assert_eq!(s["workload"]["flush_before_queries"], true);
    assert_eq!(s["data_state"]["label"], "as loaded, flushed");
    // The count before the queries is said, with its time (229 s on a real InfluxDB 3).
    let fmd = std::fs::read_to_string(flushed.join("summary.md")).unwrap();
    assert!(
        fmd.contains("Before the queries, `SELECT count(*) FROM cpu` found the ")
            && fmd.contains(" rows the workspace is bound to ("),
        "{fmd}"
    );
    assert!(
        s["row_check"]["took_s"].as_f64().is_some(),
        "{}",
        s["row_check"]
    );
    // A query-only run's first start replays what the load left: named as such.
    let first = &s["server_diagnostics"]["attempts"][0];
    assert!(
        first["after_load"].as_str().is_some_and(
            |l| l.starts_with("first start of this run, on loaded data: it opens its regions")
        ),
        "{first}"
    );
    let loc = &s["data_location"];
    assert_eq!(loc["flushed_before_queries"], true);
    assert!(loc["sst_num"].as_u64().unwrap() >= 1, "{loc}");
    assert_eq!(loc["memtable_size"], 0, "{loc}");
    // The report shows both, and the never-flushed footprint.
    let r = w.run(&[
        "runs",
        "report",
        load.to_str().unwrap(),
        flushed.to_str().unwrap(),
        "--json",
    ]);
    r.ok();
    let dir = PathBuf::from(r.json()["data"]["report_dir"].as_str().unwrap());
    let md = std::fs::read_to_string(dir.join("summary.md")).unwrap();
    assert!(
        md.contains("| No data files yet (all data in the WAL) | **yes** |"),
        "{md}"
    );
    assert!(
        md.contains("| Queries read (SST / memtables) | 0 SST"),
        "{md}"
    );
    // How many queries each mean is of (the real run's 3 per type looked like a full run).
    let counts = md
        .lines()
        .find(|l| l.starts_with("| Queries per type |"))
        .unwrap_or_else(|| panic!("{md}"));
    assert_eq!(counts.matches(" | ").count(), 2, "{counts}");
    assert!(!counts.contains(" - "), "{counts}");
    // One read memtables, the other SST files: said at the top, pointing at the flag (#16).
    let top = md.split("## ").next().unwrap();
    assert!(
        top.contains("read their data from different places")
            && top.contains("memtables only")
            && top.contains("SST files only")
            && top.contains("--flush-before-queries"),
        "{md}"
    );
    // Flag checks.
    w.bench("load", &["--flush-before-queries"])
        .code(2)
        .says("query and all phases only");
}

#[test]
fn a_flush_before_queries_waits_for_the_compaction_it_starts() {
    let w = world();
    // The load leaves SST files and rows in the memtable, with no automatic compaction (the
    // table option `compaction.twcs.trigger_file_num` set to 5); the flush before the queries
    // adds a file, and the automatic TWCS it schedules (the option now 2) merges the files
    // of a window slowly. The queries must start after it (audit-round-2
    // item 2: 13-52 s at 5.2 M rows on a real v1.0.2).
    w.gt.set_knobs(json!({"auto_flush_bytes": 200000, "twcs_trigger_file_num": 5}));
    let mut a = vec![
        "bench",
        "greptimedb",
        "load",
        "--database-id",
        "g1",
        "--batch-size",
        "300",
    ];
    a.extend(tiny());
    w.run(&a).ok();
    w.gt.set_knobs(json!({"compaction_ms_per_mib": 15000.0, "twcs_trigger_file_num": 2}));
    let r = w.bench(
        "query",
        &[
            "--query-type",
            "lastpoint",
            "--queries",
            "3",
            "--flush-before-queries",
        ],
    );
    r.ok();
    let dir = run_dir(&r);
    let s = summary(&dir);
    assert_eq!(s["status"], "completed", "{}", s["failures"]);
    let loc = &s["data_location"];
    let ac = &loc["compaction_after_flush"];
    assert_eq!(ac["outcome"], "finished", "{loc}");
    assert!(ac["busy_s"].as_f64().unwrap() > 0.0, "{ac}");
    assert!(ac["compacted_lines"].as_u64().unwrap() >= 1, "{ac}");
    // The first query began after the last "Compacted SST files" line of the server.
    let mut last_compacted = String::new();
    for e in std::fs::read_dir(dir.join("logs")).unwrap().flatten() {
        let name = e.file_name().to_string_lossy().into_owned();
        if !name.starts_with("server-") {
            continue;
        }
        for l in std::fs::read_to_string(e.path()).unwrap().lines() {
            if l.contains("Compacted SST files") {
                let ts = l.split_whitespace().next().unwrap().to_string();
                last_compacted = last_compacted.max(ts);
            }
        }
    }
    let query_began = std::fs::read_to_string(dir.join("events.jsonl"))
        .unwrap()
        .lines()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .find(|e| e["step"] == "query:lastpoint")
        .map(|e| e["at"].as_str().unwrap().to_string())
        .unwrap();
    assert!(!last_compacted.is_empty());
    assert!(
        query_began > last_compacted,
        "query began {query_began}, last compaction line {last_compacted}"
    );
    // The state recorded is the one after the compaction, in rows.
    assert_eq!(loc["memtable_rows"], 0, "{loc}");
    assert_eq!(loc["sst_rows"], loc["region_rows"], "{loc}");
    let md = std::fs::read_to_string(dir.join("summary.md")).unwrap();
    assert!(md.contains("the queries started after it finished"), "{md}");
    assert!(md.contains("rows only in memtables"), "{md}");
}

#[test]
fn a_forced_stop_after_a_load_is_a_warning_and_marks_the_footprint() {
    let w = world();
    // A server that never exits on SIGTERM: killed after the time without progress.
    w.gt.set_knobs(json!({"ignore_sigterm": true}));
    let mut a = vec![
        "bench",
        "greptimedb",
        "load",
        "--database-id",
        "g1",
        "--stop-timeout",
        "1",
        "--json",
    ];
    a.extend(tiny());
    let r = w.run(&a);
    r.ok().says("killed");
    let dir = run_dir(&r);
    let s = summary(&dir);
    // The verified load counts; the kill is a warning, and the footprint says it followed one.
    assert_eq!(s["status"], "completed", "{}", s["failures"]);
    assert_eq!(s["ingestion"]["status"], "completed");
    let warn = s["warnings"].as_array().unwrap();
    assert_eq!(warn.len(), 1, "{warn:?}");
    assert!(warn[0]["message"].as_str().unwrap().contains("killed"));
    assert_eq!(s["storage"]["after_forced_stop"], true);
    let md = std::fs::read_to_string(dir.join("summary.md")).unwrap();
    assert!(md.contains("## Warnings"), "{md}");
    assert!(md.contains("**after a forced stop**"), "{md}");
    assert!(!w.gt.ws_dir("g1").join("server.pid").exists());
    assert_eq!(w.ws()["binding"]["dataset_id"], "tiny");
}

/// Issue 23: GreptimeDB's compaction and analyze flags are the product's declared flags. A
/// phase that does not take one refuses it (exit 2, nothing written, the words users always
/// saw), and a compact run records its flags and workload byte for byte as runs did before
/// (the fixture's command line, run again).
#[test]
fn declared_compaction_flags_keep_their_phases_and_their_record() {
    let w = world();
    w.bench("all", &[]).ok();
    let before = run_dirs(&w);
    for (flag, value) in [
        ("--table", "cpu"),
        ("--strategy", "twcs"),
        ("--window", "3600"),
        ("--confirm-timeout", "5"),
        ("--parallelism", "2"),
    ] {
        w.bench("query", &[flag, value])
            .code(2)
            .says("--table, --strategy, --window, --confirm-timeout and --parallelism apply to the compact phase only")
            .says("bench greptimedb compact");
    }
    w.bench("query", &["--hot-runs", "3"])
        .code(2)
        .says("--hot-runs applies to the analyze phase only");
    w.bench("compact", &["--window", "0"])
        .code(2)
        .says("--window must be positive");
    assert_eq!(run_dirs(&w), before, "no run directory for a refusal");
    // `tsbsctl bench greptimedb compact --database-id g1 --stop-timeout 5 --strategy twcs`.
    let fixture = read_json(
        &Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("tests/fixtures/run-data-v1/run-greptimedb-compaction-completed.json"),
    );
    let dir = w.bench_ok("compact", &["--strategy", "twcs"]);
    let text = std::fs::read_to_string(dir.join("manifest.json")).unwrap();
    let m: Value = serde_json::from_str(&text).unwrap();
    for key in ["flags", "workload"] {
        assert_eq!(
            serde_json::to_string(&m[key]).unwrap(),
            serde_json::to_string(&fixture[key]).unwrap(),
            "{key}"
        );
    }
    assert_eq!(m["command"], fixture["command"]);
}
