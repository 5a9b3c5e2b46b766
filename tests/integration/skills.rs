//! The agent skills: `.agents/skills` matches what `skills/` renders, the frontmatter and
//! `agents/openai.yaml` obey the Agent Skills standard, and every command line the skills show
//! parses with the real CLI.

use std::path::{Path, PathBuf};

use clap::Parser;

use crate::util::*;

fn repo() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

fn skill_dirs(root: &Path) -> Vec<PathBuf> {
    let mut v: Vec<PathBuf> = std::fs::read_dir(root)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.is_dir())
        .collect();
    v.sort();
    v
}

#[test]
fn committed_skills_do_not_drift_from_their_sources() {
    let env = TestEnv::new();
    let dest = repo().join(".agents").join("skills");
    let r = env.run(&[
        "skills",
        "render",
        "--check",
        "--dest",
        dest.to_str().unwrap(),
    ]);
    r.ok();
}

#[test]
fn claude_sees_the_same_skills_through_a_relative_symlink() {
    let link = repo().join(".claude").join("skills");
    let target = std::fs::read_link(&link).expect(".claude/skills must be a symlink");
    assert_eq!(target, Path::new("../.agents/skills"));
    assert!(link.join("setup-greptimedb").join("SKILL.md").is_file());
}

#[test]
fn frontmatter_and_openai_yaml_follow_the_standard() {
    let root = repo().join(".agents").join("skills");
    let dirs = skill_dirs(&root);
    let names: Vec<String> = dirs
        .iter()
        .map(|d| d.file_name().unwrap().to_string_lossy().into_owned())
        .collect();
    for required in [
        "setup-tsbs-environment",
        "setup-greptimedb",
        "setup-influxdb3",
        "generate-tsbs-data",
        "benchmark-greptimedb",
        "benchmark-influxdb3",
        "benchmark-timescaledb",
        "report-tsbs-results",
        "manage-tsbs-workspace",
    ] {
        assert!(
            names.iter().any(|n| n == required),
            "missing skill {required}"
        );
    }
    let name_re = regex::Regex::new(r"^[a-z0-9]+(-[a-z0-9]+)*$").unwrap();
    for dir in dirs {
        let name = dir.file_name().unwrap().to_string_lossy().into_owned();
        let text = std::fs::read_to_string(dir.join("SKILL.md")).unwrap();
        let rest = text
            .strip_prefix("---\n")
            .unwrap_or_else(|| panic!("{name}: no frontmatter"));
        let (front, body) = rest
            .split_once("\n---\n")
            .unwrap_or_else(|| panic!("{name}: unterminated frontmatter"));
        let mut fname = None;
        let mut desc = None;
        for line in front.lines() {
            if let Some(v) = line.strip_prefix("name: ") {
                fname = Some(v.to_string());
            } else if let Some(v) = line.strip_prefix("description: ") {
                desc = Some(v.to_string());
            }
        }
        assert_eq!(
            fname.as_deref(),
            Some(name.as_str()),
            "{name}: name must equal the folder"
        );
        assert!(
            name_re.is_match(&name) && name.len() <= 64,
            "{name}: bad skill name"
        );
        let desc = desc.unwrap_or_else(|| panic!("{name}: no description"));
        assert!(
            !desc.is_empty() && desc.len() < 1024,
            "{name}: description length {}",
            desc.len()
        );
        assert!(
            desc.contains("Use when"),
            "{name}: the description must say when to use it"
        );
        assert!(body.lines().count() < 500, "{name}: body over 500 lines");
        for forbidden in ["README.md", "CHANGELOG.md", "INSTALL.md"] {
            assert!(
                !dir.join(forbidden).exists(),
                "{name}: {forbidden} does not belong in a skill"
            );
        }

        let yaml = std::fs::read_to_string(dir.join("agents").join("openai.yaml"))
            .unwrap_or_else(|_| panic!("{name}: agents/openai.yaml missing"));
        assert!(
            yaml.starts_with("interface:\n"),
            "{name}: openai.yaml must start with interface:"
        );
        let field = |key: &str| -> String {
            let line = yaml
                .lines()
                .find(|l| l.trim_start().starts_with(&format!("{key}: ")))
                .unwrap_or_else(|| panic!("{name}: openai.yaml lacks {key}"));
            let v = line.trim_start()[key.len() + 2..].to_string();
            assert!(
                v.starts_with('"') && v.ends_with('"'),
                "{name}: {key} must be quoted"
            );
            v.trim_matches('"').to_string()
        };
        field("display_name");
        let short = field("short_description");
        assert!(
            (25..=64).contains(&short.len()),
            "{name}: short_description is {} chars",
            short.len()
        );
        let prompt = field("default_prompt");
        assert!(
            prompt.contains(&format!("${name}")),
            "{name}: default_prompt should invoke ${name}"
        );
    }
}

/// Every `tsbsctl` command line in a fenced block or an inline code span of a rendered skill.
fn shown_commands(root: &Path) -> Vec<(PathBuf, String)> {
    let mut out = Vec::new();
    for f in all_files(root) {
        if f.extension().is_none_or(|e| e != "md") {
            continue;
        }
        let text = std::fs::read_to_string(&f).unwrap();
        let mut in_fence = false;
        for line in text.lines() {
            let t = line.trim();
            if t.starts_with("```") {
                in_fence = !in_fence;
                continue;
            }
            if in_fence {
                if let Some(cmd) = as_tool_command(t) {
                    out.push((f.clone(), cmd));
                }
            } else {
                for (i, span) in t.split('`').enumerate() {
                    if i % 2 == 1 {
                        if let Some(cmd) = as_tool_command(span) {
                            out.push((f.clone(), cmd));
                        }
                    }
                }
            }
        }
    }
    out
}

fn as_tool_command(s: &str) -> Option<String> {
    for prefix in ["./target/release/tsbsctl ", "tsbsctl "] {
        if let Some(rest) = s.strip_prefix(prefix) {
            return Some(rest.to_string());
        }
    }
    None
}

#[test]
fn every_command_the_skills_show_parses_with_the_real_cli() {
    let root = repo().join(".agents").join("skills");
    let commands = shown_commands(&root);
    assert!(
        commands.len() >= 30,
        "expected the skills to show many commands, found {}",
        commands.len()
    );
    let mut failures = Vec::new();
    for (file, cmd) in &commands {
        let mut words =
            shlex::split(cmd).unwrap_or_else(|| panic!("{}: cannot split {cmd:?}", file.display()));
        words.insert(0, "tsbsctl".to_string());
        let parsed = tsbsctl::cli::Cli::try_parse_from(&words);
        // `--help` and `--version` "fail" with the text to print: that is a valid command.
        let help = matches!(&parsed, Err(e) if matches!(e.kind(), clap::error::ErrorKind::DisplayHelp | clap::error::ErrorKind::DisplayVersion));
        if let (Err(e), false) = (parsed, help) {
            failures.push(format!(
                "{}: tsbsctl {cmd}\n  {}",
                file.display(),
                e.to_string().lines().next().unwrap_or("")
            ));
        }
    }
    assert!(
        failures.is_empty(),
        "commands that do not parse:\n{}",
        failures.join("\n")
    );
}

#[test]
fn user_install_calls_the_tool_on_path() {
    let env = TestEnv::new();
    let dest = env.path().join("claude-skills");
    env.run(&[
        "skills",
        "install",
        "--agent",
        "claude",
        "--dest",
        dest.to_str().unwrap(),
    ])
    .ok();
    let text = std::fs::read_to_string(dest.join("benchmark-greptimedb").join("SKILL.md")).unwrap();
    assert!(text.contains("\ntsbsctl bench greptimedb all"), "{text}");
    assert!(!text.contains("./target/release/tsbsctl"));
    // A second install replaces the skills in place.
    env.run(&[
        "skills",
        "install",
        "--agent",
        "claude",
        "--dest",
        dest.to_str().unwrap(),
    ])
    .ok();
    let leftovers: Vec<_> = std::fs::read_dir(&dest)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| n.starts_with('.'))
        .collect();
    assert!(leftovers.is_empty(), "{leftovers:?}");
}
