//! What every command gets: the resolved state root, output switches and the reporter.

use crate::output::SharedReporter;
use crate::paths::Root;

/// The per-invocation context handed to every command.
pub struct Ctx {
    pub root: Root,
    /// `--json`: stdout carries exactly one JSON document.
    pub json: bool,
    /// `--quiet`: no status lines, no progress.
    pub quiet: bool,
    pub reporter: SharedReporter,
    /// The command line as typed (program name excluded), recorded in lock files and manifests.
    pub argv: Vec<String>,
}

impl Ctx {
    /// This context with another reporter (a run's, which also records what it is told).
    pub fn with_reporter(&self, reporter: SharedReporter) -> Ctx {
        Ctx {
            root: self.root.clone(),
            json: self.json,
            quiet: self.quiet,
            reporter,
            argv: self.argv.clone(),
        }
    }

    /// This invocation as recorded in lock files and manifests: `tsbsctl env prepare ...`, with
    /// the value of `--hold-token` replaced by `<redacted>` (a token is a capability).
    pub fn command_line(&self) -> String {
        let mut s = String::from("tsbsctl");
        for a in redact_args(&self.argv) {
            s.push(' ');
            s.push_str(&a);
        }
        s
    }
}

/// Flags whose value must never be recorded.
const SECRET_FLAGS: &[&str] = &["--hold-token"];

/// `argv` with the values of secret-bearing flags replaced by `<redacted>`.
pub fn redact_args(argv: &[String]) -> Vec<String> {
    let mut out = Vec::with_capacity(argv.len());
    let mut hide_next = false;
    for a in argv {
        if hide_next {
            out.push("<redacted>".to_string());
            hide_next = false;
            continue;
        }
        match SECRET_FLAGS
            .iter()
            .find(|f| a.starts_with(&format!("{f}=")))
        {
            Some(f) => out.push(format!("{f}=<redacted>")),
            None => {
                hide_next = SECRET_FLAGS.contains(&a.as_str());
                out.push(a.clone());
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hold_tokens_are_redacted_in_both_spellings() {
        let argv: Vec<String> = ["bench", "--hold-token", "abc", "--hold-token=def", "--json"]
            .iter()
            .map(|s| s.to_string())
            .collect();
        assert_eq!(
            redact_args(&argv),
            vec![
                "bench",
                "--hold-token",
                "<redacted>",
                "--hold-token=<redacted>",
                "--json"
            ]
        );
    }
}
