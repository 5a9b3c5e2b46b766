//! Test-only stand-ins for the outside world, faithful to `shared/reference/protocols.md`:
//!
//! * [`mirror`]: a release mirror on 127.0.0.1 (GitHub, GitHub API, InfluxData, go.dev route
//!   shapes) with fault knobs and a log of the requests it saw;
//! * [`tarball`]: archives built on the fly from file trees, including unsafe variants;
//! * `releases`: the stand-in releases each product publishes on the mirror;
//! * `emulators`: `greptime`, `influxdb3`, `go` and the TSBS tools. They all live in the one
//!   `testbed` binary (`testbed emulate <tool> ...`); the archives the mirror serves hold small
//!   wrapper scripts that exec it, so a test's installed "binary" is a real executable;
//! * [`sqleval`]: the SQL evaluator GreptimeDB's and InfluxDB 3's stand-ins answer TSBS
//!   queries with, from the rows they stored.

pub mod catalog;
pub mod emulators;
pub mod gotool;
pub mod mirror;
pub mod ports;
pub mod queryfile;
pub mod releases;
pub mod s3;
pub mod sqleval;
pub mod stubserver;
pub mod tarball;
pub mod tsbs_repo;

use std::path::PathBuf;

/// The `testbed` binary that wrapper scripts exec: `$TESTBED_BIN` if set; this executable when
/// it is the testbed itself; otherwise `target/<profile>/testbed` found from the running test
/// binary (`target/<profile>/deps/<test>-<hash>`).
pub fn testbed_bin() -> PathBuf {
    if let Some(p) = std::env::var_os("TESTBED_BIN") {
        return PathBuf::from(p);
    }
    let exe = std::env::current_exe().expect("current_exe");
    if exe.file_name().is_some_and(|n| n == "testbed") {
        return exe;
    }
    let dir = exe.parent().expect("exe dir");
    let candidates = [
        dir.join("testbed"),
        dir.parent().map(|p| p.join("testbed")).unwrap_or_default(),
    ];
    candidates
        .iter()
        .find(|p| p.exists())
        .cloned()
        .unwrap_or_else(|| candidates[1].clone())
}

/// A POSIX shell wrapper that execs `testbed emulate <tool> "$@"` with `env` exported first
/// (e.g. `TESTBED_EMULATED_VERSION`, `TESTBED_KNOBS` = path of a knob file outside the install
/// tree, so tests can change behaviour without changing the installed bytes). `exec` keeps the
/// pid, so process groups and signals reach the emulator itself.
pub fn wrapper_script(tool: &str, env: &[(&str, &str)]) -> String {
    let mut s = String::from("#!/bin/sh\n");
    for (k, v) in env {
        s.push_str(&format!("{k}={}\nexport {k}\n", shell_quote(v)));
    }
    s.push_str(&format!(
        "exec {} emulate {} \"$@\"\n",
        shell_quote(&testbed_bin().to_string_lossy()),
        shell_quote(tool)
    ));
    s
}

/// Single-quotes a string for POSIX sh.
pub fn shell_quote(s: &str) -> String {
    format!("'{}'", s.replace('\'', "'\\''"))
}
