//! Pieces of the outside world several modules set up the same way: the fake TSBS repository
//! with the environment variables that point `env prepare` at it, and the directory of `git`.

use std::path::PathBuf;

use testbed::tsbs_repo;

use crate::util::TestEnv;

/// The directory holding `git`, so a test's PATH can keep git while leaving out other tools.
pub(crate) fn git_dir() -> String {
    let out = std::process::Command::new("sh")
        .args(["-c", "command -v git"])
        .output()
        .expect("sh");
    let p = PathBuf::from(String::from_utf8_lossy(&out.stdout).trim());
    p.parent().expect("git dir").display().to_string()
}

/// Creates a fake TSBS repository under the test's directory and points `env prepare` at it.
pub(crate) fn use_tsbs_repo(env: &mut TestEnv) {
    let (repo, commit) = tsbs_repo::create(env.path()).expect("fake tsbs repo");
    env.env("TSBSCTL_TSBS_REPO", tsbs_repo::url(&repo));
    env.env("TSBSCTL_TSBS_REV", commit);
}

/// [`use_tsbs_repo`], plus the Go version to take from the mirror and a PATH of only git and the base system.
pub(crate) fn use_tsbs_repo_and_mirror_go(env: &mut TestEnv, go: &str) {
    use_tsbs_repo(env);
    env.env("TSBSCTL_GO_VERSION", go);
    env.env("PATH", format!("{}:/bin:/usr/bin", git_dir()));
}
