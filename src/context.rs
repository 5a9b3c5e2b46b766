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
    /// A short human description of this invocation: `tsbsctl env prepare ...`.
    pub fn command_line(&self) -> String {
        let mut s = String::from("tsbsctl");
        for a in &self.argv {
            s.push(' ');
            s.push_str(a);
        }
        s
    }
}
