//! PostgreSQL's server log read as PostgreSQL means it (reference §8.5, the real log in
//! `tests/fixtures/postgresql-real/`):
//!
//! * `FATAL` ends one session: a client that connected during startup or recovery ("the
//!   database system is starting up", which any readiness probe by connection provokes), a
//!   wrong database or role, a backend ended by `pg_terminate_backend` (tsbsctl runs it before
//!   a load). The server goes on serving. Counted and listed, never a run failure.
//! * `PANIC` stops the server; the postmaster's `LOG` lines "server process (PID n) was
//!   terminated by signal", "terminating any other active server processes" and "all server
//!   processes terminated; reinitializing" say a process died and every session was lost.
//!   Those fail a run.

use std::sync::LazyLock;

use regex::Regex;

use crate::logscan::{LogRules, Severity};

/// The default `log_line_prefix` (`%m [%p] `), then the level and its two spaces.
static PREFIXED: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"^\d{4}-\d{2}-\d{2} [0-9:.]+(?: [A-Za-z0-9+-]+)? \[\d+\] ([A-Z]+[0-9]?):  (.*)$")
        .expect("postgres log regex")
});

/// What the postmaster logs, at level `LOG`, when a server process died and it restarts.
const CRASH_MARKS: [&str; 4] = [
    ") was terminated by signal ",
    ") was terminated by exception ",
    "terminating any other active server processes",
    "all server processes terminated; reinitializing",
];

/// The severity of one line of a PostgreSQL log, if it is one worth counting.
pub fn classify(line: &str) -> Option<Severity> {
    let (level, message) = match PREFIXED.captures(line) {
        Some(c) => (c.get(1)?.as_str(), c.get(2)?.as_str()),
        // Another prefix (a person's own `log_line_prefix`): the first `LEVEL:` word.
        None => line
            .split_whitespace()
            .find_map(|w| {
                let l = w.strip_suffix(':')?;
                matches!(l, "LOG" | "WARNING" | "ERROR" | "FATAL" | "PANIC").then_some(l)
            })
            .map(|l| (l, line))?,
    };
    match level {
        "PANIC" => Some(Severity::Panic),
        "FATAL" => Some(Severity::Fatal),
        "ERROR" => Some(Severity::Error),
        "WARNING" => Some(Severity::Warning),
        "LOG" if CRASH_MARKS.iter().any(|m| message.contains(m)) => Some(Severity::Crash),
        _ => None,
    }
}

/// PostgreSQL's rules: only a PANIC or a server process that died fails a run.
pub const RULES: LogRules = LogRules {
    classify,
    fails_run: |s| matches!(s, Severity::Panic | Severity::Crash),
    note: Some(
        "PostgreSQL: a FATAL line ends one client session (a connection during startup or \
         recovery, a wrong database or role, a session ended on purpose), not the server; only \
         a PANIC or a server process that died fails a run.",
    ),
};

/// The lines of a server log that explain a failed start: every `FATAL`/`PANIC` line, and the
/// `ERROR`, `DETAIL`, `HINT` and `LOG: could not ...` lines of the same processes (the bind
/// error and its hint come before `FATAL:  could not create any TCP/IP sockets`).
pub fn fatal_lines(log: &str) -> Vec<String> {
    let pid_of = |l: &str| -> Option<String> {
        let start = l.find(" [")? + 2;
        let end = start + l[start..].find(']')?;
        Some(l[start..end].to_string())
    };
    let is_fatal = |l: &str| matches!(classify(l), Some(Severity::Fatal | Severity::Panic));
    let pids: std::collections::BTreeSet<String> = log
        .lines()
        .filter(|l| is_fatal(l))
        .filter_map(pid_of)
        .collect();
    log.lines()
        .filter(|l| {
            if is_fatal(l) {
                return true;
            }
            let same = pid_of(l).is_some_and(|p| pids.contains(&p));
            same && (l.contains("ERROR:  ")
                || l.contains("HINT:  ")
                || l.contains("DETAIL:  ")
                || (l.contains("LOG:  could not")))
        })
        .map(str::to_string)
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::logscan::Diagnostics;
    use crate::redact::Redactor;

    const FIX: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixtures");

    fn fixture(p: &str) -> String {
        std::fs::read_to_string(format!("{FIX}/{p}")).unwrap()
    }

    fn scan(text: &str) -> Diagnostics {
        let mut d = Diagnostics::default();
        d.scan_text_with("logs/server-001.log", text, &Redactor::new(), &RULES);
        d
    }

    /// Real PostgreSQL 15 lines, one of each kind, through the classifier.
    #[test]
    fn real_lines_get_postgresql_severities() {
        let log = fixture("postgresql-real/crash-and-restart.log");
        let find = |needle: &str| {
            log.lines()
                .find(|l| l.contains(needle))
                .unwrap_or_else(|| panic!("{needle} not in the fixture"))
        };
        let cases = [
            ("LOG:  starting PostgreSQL 15", None),
            ("LOG:  database system is ready to accept connections", None),
            (
                "FATAL:  the database system is starting up",
                Some(Severity::Fatal),
            ),
            (
                "FATAL:  database \"nosuchdb\" does not exist",
                Some(Severity::Fatal),
            ),
            (
                "FATAL:  terminating connection due to administrator",
                Some(Severity::Fatal),
            ),
            ("STATEMENT:  select pg_sleep(30)", None),
            ("was terminated by signal 9: Killed", Some(Severity::Crash)),
            ("DETAIL:  Failed process was running", None),
            (
                "LOG:  terminating any other active server processes",
                Some(Severity::Crash),
            ),
            (
                "all server processes terminated; reinitializing",
                Some(Severity::Crash),
            ),
            ("automatic recovery in progress", None),
            (
                "FATAL:  the database system is not yet accepting",
                Some(Severity::Fatal),
            ),
            ("LOG:  received fast shutdown request", None),
            ("LOG:  database system is shut down", None),
        ];
        for (needle, want) in cases {
            assert_eq!(classify(find(needle)), want, "{needle}");
        }
        // PANIC has no real sample here (it takes a broken WAL write); PostgreSQL's format.
        let panic = "2026-12-03 10:43:04.287 UTC [5733] PANIC:  could not write to file \"pg_wal/xlogtemp.5733\": No space left on device";
        assert_eq!(classify(panic), Some(Severity::Panic));
        // A query text that quotes a level is not that level.
        let stmt = "2026-12-03 10:43:04.287 UTC [5805] STATEMENT:  select 'FATAL:  no' as x";
        assert_eq!(classify(stmt), None);
    }

    /// Startup probes, a refused connection, a terminated session and a clean shutdown fail
    /// nothing; the crash does, naming its first line.
    #[test]
    fn only_a_crash_or_panic_fails_a_run() {
        let log = fixture("postgresql-real/crash-and-restart.log");
        let crash_at = log
            .lines()
            .position(|l| l.contains("was terminated by signal 9"))
            .unwrap();
        let before: Vec<&str> = log.lines().take(crash_at).collect();
        let calm = scan(&before.join("\n"));
        assert!(calm.fatals >= 3, "{calm:?}");
        assert_eq!((calm.panics, calm.crashes), (0, 0));
        assert!(!calm.has_failure(), "{calm:?}");

        let all = scan(&log);
        assert_eq!(all.crashes, 3);
        let first = all.first_failure.expect("the crash fails the run");
        assert_eq!(first.line, crash_at + 1);
        assert_eq!(first.severity, Severity::Crash);

        // The real TSBS session log (wrong role and database, from the TSBS tools): no failure.
        let session = fixture("tsbs-real-postgresql/server/server.log");
        let d = scan(&session);
        assert!(d.fatals >= 4 && !d.has_failure(), "{d:?}");
    }

    #[test]
    fn fatal_lines_of_the_real_logs() {
        let want = fixture("tsbs-real-postgresql/server/fail-start-serverlog-lines.txt");
        let want: Vec<&str> = want.lines().collect();
        // The fixture's lines are what a tool must surface from those two logs.
        let got = fatal_lines(&want.join("\n"));
        assert_eq!(got, want);
        // The session log of the real run: its only FATALs are the two refused connections;
        // the ERROR/HINT lines of sessions that did not end in FATAL are left out.
        let session = fixture("tsbs-real-postgresql/server/server.log");
        let got = fatal_lines(&session);
        assert_eq!(got.len(), 4, "{got:?}");
        assert!(got[0].ends_with("FATAL:  database \"nosuchdb\" does not exist"));
        assert!(got[1].ends_with("FATAL:  role \"nosuchuser\" does not exist"));
        assert!(got[3].ends_with("FATAL:  role \"root\" does not exist"));
        assert!(!got.iter().any(|l| l.contains("time_bucket")));
        let mixed = format!("{session}{}\n", want[1..].join("\n"));
        assert_eq!(fatal_lines(&mixed)[4..], want[1..]);
    }
}
