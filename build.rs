//! Build script. Each concern is one delimited function so branches can merge their own.

fn main() {
    git_revision();
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
