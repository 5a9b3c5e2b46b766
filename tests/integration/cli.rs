//! The CLI frame: global flags, the JSON envelope, exit codes for bad input.

use crate::util::*;

#[test]
fn help_lists_commands_and_exits_zero() {
    use clap::CommandFactory;
    let env = TestEnv::new();
    let r = env.run(&["--help"]);
    r.ok();
    // The first word of each line of the `Commands:` section, in the order printed.
    let listed: Vec<&str> = r
        .stdout
        .lines()
        .skip_while(|l| l.trim_end() != "Commands:")
        .skip(1)
        .take_while(|l| !l.trim().is_empty())
        .filter(|l| l.starts_with("  ") && !l.starts_with("    "))
        .filter_map(|l| l.split_whitespace().next())
        .collect();
    // Every visible subcommand the CLI defines is listed, and nothing else (clap adds `help`).
    let mut defined: Vec<String> = tsbsctl::cli::Cli::command()
        .get_subcommands()
        .filter(|c| !c.is_hide_set())
        .map(|c| c.get_name().to_string())
        .collect();
    defined.push("help".into());
    assert_eq!(listed, defined, "{}", r.describe());
    // The commands the design names (DESIGN.md) are among them.
    for name in [
        "env",
        "data",
        "greptimedb",
        "influxdb3",
        "bench",
        "quickstart",
        "runs",
        "workspace",
        "skills",
    ] {
        assert!(listed.contains(&name), "{name} missing\n{}", r.describe());
    }
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
