//! Safe extraction of archives built by `testbed::tarball`: every unsafe kind is refused as an
//! integrity error and nothing is left beside the target (or anywhere outside it).

use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};

use testbed::tarball::Tree;
use tsbsctl::archive::{extract_staged, ExtractOptions};
use tsbsctl::error::ErrorKind;

use crate::util::*;

struct Place {
    env: TestEnv,
    archive: PathBuf,
    target: PathBuf,
}

fn place(bytes: Vec<u8>, name: &str) -> Place {
    let env = TestEnv::new();
    let archive = env.path().join("downloads").join(name);
    std::fs::create_dir_all(archive.parent().unwrap()).unwrap();
    std::fs::write(&archive, bytes).unwrap();
    let target = env
        .path()
        .join("installs")
        .join("1.2.0")
        .join("linux-amd64");
    Place {
        env,
        archive,
        target,
    }
}

fn names(dir: &Path) -> Vec<String> {
    let mut v: Vec<String> = std::fs::read_dir(dir)
        .map(|rd| {
            rd.map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
                .collect()
        })
        .unwrap_or_default();
    v.sort();
    v
}

fn top(name: &str) -> ExtractOptions {
    ExtractOptions {
        top_dir: Some(name.to_string()),
        forbid_symlinks: false,
    }
}

#[track_caller]
fn refused(tree: Tree, opts: &ExtractOptions, needle: &str) {
    for (bytes, name) in [(tree.tar_gz(), "a.tar.gz"), (tree.tar_xz(), "a.tar.xz")] {
        let p = place(bytes, name);
        let before: Vec<PathBuf> = all_files(p.env.path());
        let e = extract_staged(&p.archive, &p.target, opts).unwrap_err();
        assert_eq!(e.kind, ErrorKind::Integrity, "{}", e.message);
        assert!(
            e.message.contains(needle),
            "{needle:?} not in {}",
            e.message
        );
        assert!(
            e.message.contains(name),
            "the archive is named: {}",
            e.message
        );
        assert!(e.hint.is_some());
        // Nothing beside the target, nothing anywhere else in the test's world.
        assert_eq!(names(p.target.parent().unwrap()), Vec::<String>::new());
        assert_eq!(all_files(p.env.path()), before);
    }
}

fn release() -> Tree {
    Tree::new()
        .dir("greptime-linux-amd64-v1.2.0", 0o755)
        .file("greptime-linux-amd64-v1.2.0/greptime", "#!/bin/sh\n", 0o755)
        .dir("greptime-linux-amd64-v1.2.0/lib", 0o755)
        .file("greptime-linux-amd64-v1.2.0/lib/libx.so.1", "so", 0o644)
        .symlink("greptime-linux-amd64-v1.2.0/lib/libx.so", "libx.so.1")
        .hardlink(
            "greptime-linux-amd64-v1.2.0/greptime-copy",
            "greptime-linux-amd64-v1.2.0/greptime",
        )
}

#[test]
fn a_good_release_extracts_into_staging_and_publishes_in_one_rename() {
    for (bytes, name) in [
        (release().tar_gz(), "r.tar.gz"),
        (release().tar_xz(), "r.tar.xz"),
    ] {
        let p = place(bytes, name);
        let staged =
            extract_staged(&p.archive, &p.target, &top("greptime-linux-amd64-v1.2.0")).unwrap();
        assert!(
            !p.target.exists(),
            "nothing under the final name before publish"
        );
        let bin = staged.path().join("greptime");
        assert_eq!(
            std::fs::metadata(&bin).unwrap().permissions().mode() & 0o777,
            0o755
        );
        staged.publish(&p.target).unwrap();
        assert_eq!(names(p.target.parent().unwrap()), vec!["linux-amd64"]);
        assert_eq!(names(&p.target), vec!["greptime", "greptime-copy", "lib"]);
        assert_eq!(
            std::fs::read_link(p.target.join("lib/libx.so")).unwrap(),
            Path::new("libx.so.1")
        );
    }
}

#[test]
fn unsafe_paths_are_refused() {
    refused(
        Tree::new().raw_path_file("/etc/evil", "x"),
        &ExtractOptions::default(),
        "absolute",
    );
    refused(
        Tree::new().raw_path_file("../evil", "x"),
        &ExtractOptions::default(),
        "'..'",
    );
    refused(
        Tree::new()
            .dir("top", 0o755)
            .raw_path_file("top/../../evil", "x"),
        &top("top"),
        "'..'",
    );
}

#[test]
fn links_out_of_the_tree_are_refused() {
    let d = ExtractOptions::default();
    refused(Tree::new().symlink("l", "/etc/passwd"), &d, "absolute");
    refused(Tree::new().symlink("l", "../../outside"), &d, "outside");
    refused(
        Tree::new()
            .dir("a", 0o755)
            .dir("a/b", 0o755)
            .symlink("a/b/up", "../..")
            .symlink("escape", "a/b/up/.."),
        &d,
        "outside",
    );
    refused(
        Tree::new()
            .dir("d", 0o755)
            .symlink("l", "d")
            .file("l/x", "x", 0o644),
        &d,
        "through a symbolic link",
    );
    refused(
        Tree::new().hardlink("h", "/etc/passwd"),
        &d,
        "hard link outside",
    );
    refused(Tree::new().hardlink("h", "../x"), &d, "hard link outside");
    refused(
        Tree::new().hardlink("h", "missing"),
        &d,
        "not an earlier file",
    );
    refused(
        Tree::new().symlink("l", "x"),
        &ExtractOptions {
            top_dir: None,
            forbid_symlinks: true,
        },
        "symbolic link",
    );
}

#[test]
fn fifos_are_refused() {
    refused(
        Tree::new().dir("top", 0o755).fifo("top/pipe"),
        &top("top"),
        "FIFO",
    );
}

#[test]
fn a_second_top_level_entry_is_refused() {
    refused(
        Tree::new()
            .dir("go", 0o755)
            .file("go/VERSION", "go1.21.13", 0o644)
            .file("extra", "x", 0o644),
        &top("go"),
        "single top directory",
    );
    refused(
        Tree::new().dir("other", 0o755),
        &top("go"),
        "single top directory",
    );
}
