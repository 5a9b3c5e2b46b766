//! The CLI frame: global flags, the JSON envelope, exit codes for bad input.

use crate::util::*;

#[test]
fn help_lists_commands_and_exits_zero() {
    let env = TestEnv::new();
    let r = env.run(&["--help"]);
    r.ok().says("Usage");
}

#[test]
fn unknown_flag_is_exit_2_and_json_envelope_when_asked() {
    let env = TestEnv::new();
    let r = env.run(&["workspace", "status", "--bogus", "--json"]);
    r.code(2);
    let v = r.json();
    assert_eq!(v["ok"], false);
    assert_eq!(v["error"]["kind"], "invalid_input");
}

#[test]
fn bad_root_is_exit_2_and_nothing_is_created() {
    let env = TestEnv::new();
    let file = env.path().join("a-file");
    std::fs::write(&file, "x").unwrap();
    let r = env.run(&[
        "--root",
        file.join("sub").to_str().unwrap(),
        "workspace",
        "status",
    ]);
    r.code(2).says("not a directory");
    assert!(!env.root.exists());
    assert_eq!(std::fs::read(&file).unwrap(), b"x");
}
