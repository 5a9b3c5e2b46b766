//! Embeds the canonical skill sources (`skills/`) into the binary, so `tsbsctl skills render`
//! and `skills install` work from any directory. Each file becomes an `include_str!`, which
//! rustc tracks; new or removed files re-run this script.

use std::fmt::Write as _;
use std::path::{Path, PathBuf};

fn main() {
    let root = PathBuf::from(std::env::var("CARGO_MANIFEST_DIR").unwrap()).join("skills");
    println!("cargo:rerun-if-changed=skills");
    let mut files = Vec::new();
    collect(&root, &root, &mut files);
    files.sort();
    let mut out = String::from("/// (path relative to skills/, contents)\npub static SKILL_SOURCES: &[(&str, &str)] = &[\n");
    for rel in files {
        let abs = root.join(&rel);
        writeln!(
            out,
            "    ({:?}, include_str!({:?})),",
            rel,
            abs.to_string_lossy()
        )
        .unwrap();
    }
    out.push_str("];\n");
    let dest = PathBuf::from(std::env::var("OUT_DIR").unwrap()).join("skill_sources.rs");
    std::fs::write(dest, out).unwrap();
}

fn collect(root: &Path, dir: &Path, out: &mut Vec<String>) {
    let Ok(rd) = std::fs::read_dir(dir) else {
        return;
    };
    for e in rd.flatten() {
        let p = e.path();
        if p.is_dir() {
            collect(root, &p, out);
        } else if p.is_file() {
            let rel = p
                .strip_prefix(root)
                .unwrap()
                .to_string_lossy()
                .replace('\\', "/");
            out.push(rel);
        }
    }
}
