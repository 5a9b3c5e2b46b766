//! Build script. Each concern is one delimited function so branches can merge their own.

fn main() {
    git_revision();
    skill_sources();
}

// ---- git revision (bench: recorded in every run manifest) ----------------------------------
/// Embeds the git revision of the source tree as `TSBSCTL_GIT_REVISION` (`unknown` outside a
/// checkout; `-dirty` appended when tracked files differ from HEAD).
fn git_revision() {
    let run = |args: &[&str]| {
        std::process::Command::new("git")
            .args(args)
            .output()
            .ok()
            .filter(|o| o.status.success())
            .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_string())
    };
    let rev = match run(&["rev-parse", "HEAD"]) {
        Some(r) if !r.is_empty() => {
            let dirty = run(&["status", "--porcelain", "--untracked-files=no"])
                .is_some_and(|s| !s.is_empty());
            if dirty {
                format!("{r}-dirty")
            } else {
                r
            }
        }
        _ => "unknown".to_string(),
    };
    println!("cargo:rustc-env=TSBSCTL_GIT_REVISION={rev}");
    // Rebuild when HEAD moves (a commit, a checkout) or the index changes (worktree-safe paths).
    let mut watch = vec!["HEAD".to_string(), "index".to_string()];
    if let Some(r) = run(&["symbolic-ref", "-q", "HEAD"]) {
        watch.push(r);
    }
    for w in watch {
        if let Some(p) = run(&["rev-parse", "--git-path", &w]) {
            println!("cargo:rerun-if-changed={p}");
        }
    }
    println!("cargo:rerun-if-changed=build.rs");
}
// ---- end git revision ------------------------------------------------------------------------

// ---- skill sources (recorded by `tsbsctl skills render|install`) ---------------------------
/// Embeds the canonical skill sources (`skills/`) into the binary, so `tsbsctl skills render`
/// and `skills install` work from any directory. Each file becomes an `include_str!`, which
/// rustc tracks; new or removed files re-run this script.
fn skill_sources() {
    let root =
        std::path::PathBuf::from(std::env::var("CARGO_MANIFEST_DIR").unwrap()).join("skills");
    println!("cargo:rerun-if-changed=skills");
    let mut files = Vec::new();
    collect(&root, &root, &mut files);
    files.sort();
    use std::fmt::Write as _;
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
    let dest = std::path::PathBuf::from(std::env::var("OUT_DIR").unwrap()).join("skill_sources.rs");
    std::fs::write(dest, out).unwrap();
}

fn collect(root: &std::path::Path, dir: &std::path::Path, out: &mut Vec<String>) {
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
// ---- end skill sources -----------------------------------------------------------------------
