//! A stand-in for the GreptimeTeam/tsbs repository: a real git repository (made with the `git`
//! CLI) holding `go.mod` and `cmd/<tool>/main.go` for the tools tsbsctl builds, served to
//! tsbsctl as a `file://` URL.

use std::path::{Path, PathBuf};
use std::process::Command;

/// The TSBS tools the benchmarks use (benchmark.md §3.5), and the TimescaleDB pair
/// (reference postgresql.md §5, §7) that tsbsctl builds once that product is wired in.
pub const TOOLS: [&str; 9] = [
    "tsbs_generate_data",
    "tsbs_generate_queries",
    "tsbs_load_greptime",
    "tsbs_run_queries_influx",
    "tsbs_load_influx3",
    "tsbs_run_queries_influx3",
    "tsbs_load_timescaledb",
    "tsbs_run_queries_timescaledb",
    "tsbs_load_influx2",
];

/// Runs git in `repo` with an environment that ignores the developer's configuration.
pub fn git(repo: &Path, args: &[&str]) -> std::io::Result<String> {
    let out = Command::new("git")
        .args([
            "-c",
            "user.name=TSBS Testbed",
            "-c",
            "user.email=testbed@example.invalid",
            "-c",
            "commit.gpgsign=false",
            "-c",
            "init.defaultBranch=main",
        ])
        .args(args)
        .current_dir(repo)
        .env("GIT_CONFIG_NOSYSTEM", "1")
        .env("GIT_CONFIG_GLOBAL", "/dev/null")
        .env("GIT_AUTHOR_DATE", "2024-05-01T12:00:00Z")
        .env("GIT_COMMITTER_DATE", "2024-05-01T12:00:00Z")
        .output()?;
    if !out.status.success() {
        return Err(std::io::Error::other(format!(
            "git {args:?} failed: {}",
            String::from_utf8_lossy(&out.stderr)
        )));
    }
    Ok(String::from_utf8_lossy(&out.stdout).trim().to_string())
}

/// The stand-in's `main.go`: built by the testbed's `go`, the tool is a wrapper script and the
/// source is never compiled; built by a real Go (one on `PATH` wins in `env prepare`), it
/// becomes a binary that runs the same emulator, so the offline flow works with either.
fn main_go(tool: &str) -> String {
    let bin = crate::testbed_bin();
    // Rust's debug quoting of a path is a valid Go string literal for what a path holds here.
    let bin = format!("{:?}", bin.to_string_lossy());
    format!(
        r#"// Stand-in for the {tool} command of TSBS: it runs the testbed's emulator of it.
package main

import (
	"os"
	"syscall"
)

func main() {{
	bin := {bin}
	args := append([]string{{bin, "emulate", "{tool}"}}, os.Args[1:]...)
	err := syscall.Exec(bin, args, os.Environ())
	os.Stderr.WriteString("{tool}: cannot run the testbed emulator " + bin + ": " + err.Error() + "\n")
	os.Exit(127)
}}
"#
    )
}

/// Creates `<dir>/tsbs` as a git repository with one commit; returns its path and commit id.
pub fn create(dir: &Path) -> std::io::Result<(PathBuf, String)> {
    let repo = dir.join("tsbs");
    std::fs::create_dir_all(&repo)?;
    git(&repo, &["init", "-q"])?;
    std::fs::write(
        repo.join("go.mod"),
        "module github.com/timescale/tsbs\n\ngo 1.14\n",
    )?;
    std::fs::write(repo.join("go.sum"), "")?;
    std::fs::write(
        repo.join("README.md"),
        "# TSBS (testbed stand-in)\n\nTime Series Benchmark Suite.\n",
    )?;
    std::fs::write(repo.join(".gitignore"), "bin/\n")?;
    for tool in TOOLS {
        let d = repo.join("cmd").join(tool);
        std::fs::create_dir_all(&d)?;
        std::fs::write(d.join("main.go"), main_go(tool))?;
    }
    git(&repo, &["add", "-A"])?;
    git(&repo, &["commit", "-q", "-m", "Initial import"])?;
    let commit = git(&repo, &["rev-parse", "HEAD"])?;
    Ok((repo, commit))
}

/// Adds a commit on top of HEAD (a README change); returns the new commit id.
pub fn add_commit(repo: &Path, message: &str) -> std::io::Result<String> {
    let readme = repo.join("README.md");
    let mut text = std::fs::read_to_string(&readme)?;
    text.push_str(&format!("\n{message}\n"));
    std::fs::write(&readme, text)?;
    git(repo, &["commit", "-q", "-a", "-m", message])?;
    git(repo, &["rev-parse", "HEAD"])
}

/// The `file://` URL of a repository path.
pub fn url(repo: &Path) -> String {
    format!("file://{}", repo.display())
}
