//! Diagnostics from a server log: how many warnings, errors, fatals and panics it holds, with a
//! few redacted samples. Lines are classified by their *level field*, never by a word that
//! merely looks like one ("no errors", "non-fatal", an `error=` field of an INFO line):
//!
//! * tracing lines (InfluxDB 3, GreptimeDB): `<RFC 3339 timestamp> <LEVEL> <target>: ...`, the
//!   level being `TRACE|DEBUG|INFO|WARN|ERROR` (also `WARNING`, `FATAL`, `CRITICAL`, `PANIC`
//!   as other loggers spell them), possibly coloured;
//! * the Rust runtime's own lines, which carry no level: `thread '<name>' panicked at ...`
//!   (a panic) and `fatal runtime error: ...` (an abort).
//!
//! A panic usually also produces an ERROR line from the server's panic hook; both are counted,
//! each under its own level.
//!
//! Which severities fail a run is the product's to say ([`LogRules`]): in a tracing log a FATAL
//! line is the server's own end, while PostgreSQL's FATAL ends one client session and only its
//! PANIC, or a server process that died, means the server did.

use std::path::Path;
use std::sync::LazyLock;

use regex::Regex;
use serde::Serialize;

use crate::redact::Redactor;

/// At most this many samples are kept per scan.
pub const MAX_SAMPLES: usize = 20;
/// Samples are cut to this many characters.
const SAMPLE_CHARS: usize = 300;

/// The severity of one log line (only those worth counting).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Severity {
    Warning,
    Error,
    Fatal,
    Panic,
    /// A line without a level that reports a server process died or the server restarted
    /// (PostgreSQL's postmaster: "server process (PID n) was terminated by signal 9").
    Crash,
}

/// How one product's server log is read.
#[derive(Debug, Clone, Copy)]
pub struct LogRules {
    /// The severity a line declares, if it is one worth counting.
    pub classify: fn(&str) -> Option<Severity>,
    /// True when a line of this severity means the server itself failed (the run's numbers
    /// cannot be trusted); other counted lines are listed, never a failure.
    pub fails_run: fn(Severity) -> bool,
    /// What the counts mean, for a reader of the summary (`None`: nothing to add).
    pub note: Option<&'static str>,
}

impl LogRules {
    /// Tracing logs (GreptimeDB, InfluxDB 3): FATAL, a panic or an abort is the server's end.
    pub const TRACING: LogRules = LogRules {
        classify,
        fails_run: |s| matches!(s, Severity::Fatal | Severity::Panic | Severity::Crash),
        note: None,
    };
}

static ANSI: LazyLock<Regex> = LazyLock::new(|| Regex::new(r"\x1b\[[0-9;]*m").expect("ansi regex"));
/// A timestamp first (date, `T` or space, time), then the level word.
static LEVEL_FIELD: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(
        r"^\s*\[?\d{4}-\d{2}-\d{2}[T ][0-9:.,]+(?:Z|[+-]\d{2}:?\d{2})?\]?\s+\[?(TRACE|DEBUG|INFO|WARN|WARNING|ERROR|FATAL|CRITICAL|PANIC)\]?\s",
    )
    .expect("level regex")
});
static RUST_PANIC: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(r"^thread '[^']*' panicked at ").expect("panic regex"));

/// The severity `line` declares, if it is one worth counting.
pub fn classify(line: &str) -> Option<Severity> {
    let clean = ANSI.replace_all(line, "");
    if RUST_PANIC.is_match(&clean) {
        return Some(Severity::Panic);
    }
    if clean.starts_with("fatal runtime error:") {
        return Some(Severity::Fatal);
    }
    let level = LEVEL_FIELD.captures(&clean)?.get(1)?.as_str().to_string();
    match level.as_str() {
        "WARN" | "WARNING" => Some(Severity::Warning),
        "ERROR" => Some(Severity::Error),
        "FATAL" | "CRITICAL" => Some(Severity::Fatal),
        "PANIC" => Some(Severity::Panic),
        _ => None,
    }
}

/// One counted line, redacted and shortened.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Sample {
    pub severity: Severity,
    /// The log it came from (as the caller names it).
    pub log: String,
    pub line: usize,
    pub message: String,
}

/// Counts per severity and the first samples, over one or more logs.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct Diagnostics {
    pub warnings: u64,
    pub errors: u64,
    pub fatals: u64,
    pub panics: u64,
    pub crashes: u64,
    pub samples: Vec<Sample>,
    /// The first line the product's [`LogRules::fails_run`] calls the server's failure, kept
    /// even when the samples are full: it decides whether a run's numbers can be trusted.
    pub first_failure: Option<Sample>,
}

impl Diagnostics {
    /// Adds the lines of `text` (the log named `log`).
    pub fn scan_text(&mut self, log: &str, text: &str, redactor: &Redactor) {
        self.scan_text_with(log, text, redactor, &LogRules::TRACING)
    }

    /// [`Self::scan_text`] with a product's own rules (PostgreSQL's `LOG:` / `ERROR:` /
    /// `FATAL:` / `PANIC:` lines carry their level in another place than tracing's, and mean
    /// something else by FATAL).
    pub fn scan_text_with(&mut self, log: &str, text: &str, redactor: &Redactor, rules: &LogRules) {
        for (i, line) in text.lines().enumerate() {
            let Some(sev) = (rules.classify)(line) else {
                continue;
            };
            match sev {
                Severity::Warning => self.warnings += 1,
                Severity::Error => self.errors += 1,
                Severity::Fatal => self.fatals += 1,
                Severity::Panic => self.panics += 1,
                Severity::Crash => self.crashes += 1,
            }
            let want_first_fatal = (rules.fails_run)(sev) && self.first_failure.is_none();
            if self.samples.len() < MAX_SAMPLES || want_first_fatal {
                let clean = ANSI.replace_all(line.trim(), "");
                let sample = Sample {
                    severity: sev,
                    log: log.to_string(),
                    line: i + 1,
                    message: redactor.redact(&clean).chars().take(SAMPLE_CHARS).collect(),
                };
                if want_first_fatal {
                    self.first_failure = Some(sample.clone());
                }
                if self.samples.len() < MAX_SAMPLES {
                    self.samples.push(sample);
                }
            }
        }
    }

    /// Adds the log file at `path` (unreadable bytes replaced; a missing file adds nothing).
    pub fn scan_file(&mut self, log: &str, path: &Path, redactor: &Redactor) {
        self.scan_file_with(log, path, redactor, &LogRules::TRACING)
    }

    /// [`Self::scan_file`] with a product's own rules.
    pub fn scan_file_with(
        &mut self,
        log: &str,
        path: &Path,
        redactor: &Redactor,
        rules: &LogRules,
    ) {
        if let Ok(bytes) = std::fs::read(path) {
            self.scan_text_with(log, &String::from_utf8_lossy(&bytes), redactor, rules);
        }
    }

    /// True when the log shows the server failed (by the rules it was read with).
    pub fn has_failure(&self) -> bool {
        self.first_failure.is_some()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_first_panic_is_kept_even_after_the_samples_are_full() {
        let mut text = String::new();
        for _ in 0..(MAX_SAMPLES + 5) {
            text.push_str("2026-11-29T19:40:00Z  WARN greptime: slow\n");
        }
        text.push_str("thread 'main' panicked at src/x.rs:1:1: boom\n");
        let mut d = Diagnostics::default();
        d.scan_text("logs/server-001.log", &text, &Redactor::new());
        assert_eq!(d.samples.len(), MAX_SAMPLES);
        assert!(d.has_failure());
        let first = d.first_failure.expect("first failure kept");
        assert_eq!(first.line, MAX_SAMPLES + 6);
        assert_eq!(first.severity, Severity::Panic);
    }

    #[test]
    fn levels_come_from_the_level_field_only() {
        let cases = [
            ("2026-11-29T19:40:00.123456Z  WARN influxdb3_server: slow", Some(Severity::Warning)),
            ("2026-11-29T19:40:00.123456Z ERROR influxdb3_server::http: Error while handling request error=x", Some(Severity::Error)),
            ("2026-11-29T19:40:00.123456Z  INFO x: no errors, non-fatal, WARN words ERROR inside", None),
            ("2026-11-29T19:40:00.123456Z  INFO x: request failed error=\"panic at the disco\"", None),
            ("\x1b[2m2026-11-29T19:40:00Z\x1b[0m \x1b[31mERROR\x1b[0m x: coloured", Some(Severity::Error)),
            ("2026-11-29 19:40:00,123 [WARNING] other logger", Some(Severity::Warning)),
            ("thread 'tokio-runtime-worker' panicked at influxdb3_server/src/http.rs:812:9:", Some(Severity::Panic)),
            ("fatal runtime error: stack overflow", Some(Severity::Fatal)),
            ("ERROR: a word at the start without a timestamp", None),
            ("Serve command failed: failed to bind address", None),
            ("the word panic and fatal in prose", None),
        ];
        for (line, want) in cases {
            assert_eq!(classify(line), want, "{line}");
        }
    }

    #[test]
    fn counts_and_redacted_samples() {
        let mut d = Diagnostics::default();
        let text = "2026-11-29T19:40:00Z  WARN a: one\n\
                    2026-11-29T19:40:00Z ERROR a: mail x@y.example\n\
                    2026-11-29T19:40:00Z  INFO a: fine\n\
                    thread 'main' panicked at src/main.rs:1:1:\n\
                    fatal runtime error: abort\n";
        d.scan_text("logs/server.log", text, &Redactor::new());
        assert_eq!((d.warnings, d.errors, d.fatals, d.panics), (1, 1, 1, 1));
        assert!(d.has_failure());
        assert_eq!(d.samples.len(), 4);
        assert_eq!(d.samples[1].line, 2);
        assert!(d.samples[1].message.ends_with("mail <redacted-email>"));
        let many = "2026-11-29T19:40:00Z  WARN a: w\n".repeat(50);
        d.scan_text("b", &many, &Redactor::new());
        assert_eq!(d.warnings, 51);
        assert_eq!(d.samples.len(), MAX_SAMPLES);
    }
}
