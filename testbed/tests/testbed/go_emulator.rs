//! The `go` stand-in as a process: its knobs are strict like every stand-in's.

use std::process::{Command, Stdio};

/// `testbed emulate go version` with `knobs` as the knob file: (exit code, stdout, stderr).
fn go_version(knobs: &serde_json::Value) -> (i32, String, String) {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("knobs.json");
    std::fs::write(&path, knobs.to_string()).unwrap();
    let out = Command::new(env!("CARGO_BIN_EXE_testbed"))
        .args(["emulate", "go", "version"])
        .env("TESTBED_KNOBS", &path)
        .env("TESTBED_EMULATED_VERSION", "1.22.5")
        .env("GOTOOLCHAIN", "local")
        .stdin(Stdio::null())
        .output()
        .unwrap();
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// A misspelt or ill-typed `"go"` knob exits 2 naming it; the right spelling takes effect, and
/// other tools' sections are not the go stand-in's business.
#[test]
fn go_knobs_are_strict() {
    use serde_json::json;
    let (code, out, err) = go_version(&json!({"go": {"version_output": "go version go9.9"}}));
    assert_eq!((code, out.as_str()), (0, "go version go9.9\n"), "{err}");
    let (code, _, err) = go_version(&json!({"go": {"version_outptu": "x"}}));
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("unknown field `version_outptu`"), "{err}");
    let (code, _, err) = go_version(&json!({"go": {"fail_build": "yes"}}));
    assert_eq!(code, 2, "{err}");
    let (code, out, err) = go_version(&json!({"tsbs_load_greptime": {"whatever": 1}}));
    assert_eq!(code, 0, "{err}");
    assert!(out.starts_with("go version go1.22.5 "), "{out}");
}
