//! Recognising a failed TSBS tool (reference benchmark.md §4.4, protocols.md §1 and §5 item 19):
//! exit 0 is success; `log.Fatal` exits 1 with a `YYYY/MM/DD HH:MM:SS <msg>` line; `panic`
//! exits 2 with `panic: <msg>` (non-200 query answers, an existing database in create mode,
//! a failed create); a signal means the process was killed. The reason says which, with the
//! tool's own words and, for HTTP failures, the status code.

use std::process::ExitStatus;
use std::sync::LazyLock;

use regex::Regex;
use serde::{Deserialize, Serialize};

/// What kind of failure the tool reported.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum FailureKind {
    /// The server answered a query or write with an unexpected HTTP status.
    HttpStatus,
    /// `database "<db>" exists: aborting.` (create mode on an existing database).
    DatabaseExists,
    /// Another Go panic.
    Panic,
    /// A `log.Fatal` (write error, listing error, bad flag value...).
    Fatal,
    /// Killed by a signal.
    Signal,
    /// A non-zero exit without a recognisable message (e.g. pflag's exit 2 on a bad flag).
    Exit,
    /// Exit 0, but the results file or the log cannot be read (malformed, missing summary).
    Results,
}

/// Why a tool run failed; `reason` is one line for summaries (no secrets: tools never print
/// their tokens).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ToolFailure {
    pub kind: FailureKind,
    pub exit_code: Option<i32>,
    pub signal: Option<i32>,
    pub http_status: Option<u16>,
    pub reason: String,
}

static FATAL_RE: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(r"^\d{4}/\d{2}/\d{2} \d{2}:\d{2}:\d{2} (.+)$").unwrap());
static STATUS_RES: LazyLock<Vec<Regex>> = LazyLock::new(|| {
    [
        r"did not return status 200 OK, code=(\d{3})",
        r"query failed \(status (\d{3})\)",
        r"write response \(status (\d{3})\)",
        r"failed \(status (\d{3})\)",
        r#"returned (\d{3})[ :]"#,
    ]
    .iter()
    .map(|r| Regex::new(r).unwrap())
    .collect()
});
static EXISTS_RE: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(r#"database "[^"]*" exists: aborting\."#).unwrap());

impl ToolFailure {
    /// A run that exited 0 but whose results are unusable.
    pub fn unreadable(tool: &str, err: &crate::error::Error) -> ToolFailure {
        ToolFailure {
            kind: FailureKind::Results,
            exit_code: Some(0),
            signal: None,
            http_status: None,
            reason: format!(
                "{tool} exited 0 but its results are unusable: {}",
                err.message
            ),
        }
    }
}

/// Longest message kept in a reason (bodies of error responses can be large).
const MAX_MESSAGE: usize = 400;

/// Decides whether a tool run failed, from its exit status and its merged output.
/// `None` = success (exit 0). Parsing the results is a separate step that can still fail.
pub fn detect(tool: &str, status: ExitStatus, log: &str) -> Option<ToolFailure> {
    use std::os::unix::process::ExitStatusExt;
    if status.success() {
        return None;
    }
    Some(classify(tool, status.code(), status.signal(), log))
}

/// [`detect`] for callers that only have the numbers (e.g. from events on disk).
pub fn classify(tool: &str, code: Option<i32>, signal: Option<i32>, log: &str) -> ToolFailure {
    let how = match (code, signal) {
        (Some(c), _) => format!("{tool} exited with code {c}"),
        (None, Some(s)) => format!("{tool} was killed by signal {s}"),
        (None, None) => format!("{tool} ended abnormally"),
    };
    let panic = log
        .lines()
        .find_map(|l| l.strip_prefix("panic: "))
        .map(|m| m.trim_end_matches(" [recovered]").to_string());
    let fatal = log
        .lines()
        .rev()
        .find_map(|l| FATAL_RE.captures(l.trim_end()).map(|c| c[1].to_string()));
    let message = panic
        .clone()
        .map(|m| format!("panic: {m}"))
        .or(fatal.clone());
    let http_status = message.as_deref().and_then(|m| {
        STATUS_RES
            .iter()
            .find_map(|r| r.captures(m).and_then(|c| c[1].parse().ok()))
    });
    let kind = if signal.is_some() && code.is_none() {
        FailureKind::Signal
    } else if message.as_deref().is_some_and(|m| EXISTS_RE.is_match(m)) {
        FailureKind::DatabaseExists
    } else if http_status.is_some() {
        FailureKind::HttpStatus
    } else if panic.is_some() {
        FailureKind::Panic
    } else if fatal.is_some() {
        FailureKind::Fatal
    } else {
        FailureKind::Exit
    };
    let reason = match message {
        Some(m) => format!("{how}: {}", truncate(&m)),
        None => match log.lines().find(|l| !l.trim().is_empty()) {
            Some(last) if kind == FailureKind::Exit => format!("{how}: {}", truncate(last.trim())),
            _ => how,
        },
    };
    ToolFailure {
        kind,
        exit_code: code,
        signal,
        http_status,
        reason,
    }
}

fn truncate(s: &str) -> String {
    if s.len() <= MAX_MESSAGE {
        return s.to_string();
    }
    let mut end = MAX_MESSAGE;
    while !s.is_char_boundary(end) {
        end -= 1;
    }
    format!("{}...", &s[..end])
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::process::ExitStatusExt;

    fn exit(code: i32) -> ExitStatus {
        ExitStatus::from_raw(code << 8)
    }

    #[test]
    fn success_is_exit_zero() {
        assert_eq!(
            detect("tsbs_load_greptime", exit(0), "panic: in a data line?"),
            None
        );
    }

    #[test]
    fn non_200_query_panics() {
        let log = "panic: http request did not return status 200 OK, code=500, body={\"code\":1003,\"error\":\"boom\"}\n\ngoroutine 7 [running]:\nmain.(*HTTPClient).Do(...)\n";
        let f = detect("tsbs_run_queries_influx", exit(2), log).unwrap();
        assert_eq!(f.kind, FailureKind::HttpStatus);
        assert_eq!(f.http_status, Some(500));
        assert_eq!(f.exit_code, Some(2));
        assert!(f.reason.starts_with(
            "tsbs_run_queries_influx exited with code 2: panic: http request did not return status 200 OK, code=500"
        ), "{}", f.reason);
        let f = classify(
            "tsbs_run_queries_influx3",
            Some(2),
            None,
            "panic: InfluxDB 3 query failed (status 404): {\"error\":\"query error: database not found: x\"}\n",
        );
        assert_eq!(
            (f.kind, f.http_status),
            (FailureKind::HttpStatus, Some(404))
        );
    }

    #[test]
    fn database_exists_abort() {
        let f = classify(
            "tsbs_load_greptime",
            Some(2),
            None,
            "panic: database \"benchmark\" exists: aborting.\n\ngoroutine 1 [running]:\n",
        );
        assert_eq!(f.kind, FailureKind::DatabaseExists);
        assert!(f
            .reason
            .ends_with("panic: database \"benchmark\" exists: aborting."));
    }

    #[test]
    fn fatal_write_errors() {
        let log = "time,per. metric/s,metric total,overall metric/s,per. row/s,row total,overall row/s\n\
                   2024/06/10 12:00:01 Error writing: [DebugInfo: worker #0, dest url: http://127.0.0.1:4000] Invalid write response (status 400): {\"error\":\"x\"}\n";
        let f = classify("tsbs_load_greptime", Some(1), None, log);
        assert_eq!(
            (f.kind, f.http_status),
            (FailureKind::HttpStatus, Some(400))
        );
        let f = classify(
            "tsbs_load_greptime",
            Some(1),
            None,
            "2024/06/10 12:00:01 parse error: line does not have 3 tuples, has 1\n",
        );
        assert_eq!(f.kind, FailureKind::Fatal);
        assert!(f
            .reason
            .ends_with(": parse error: line does not have 3 tuples, has 1"));
    }

    #[test]
    fn signals_and_bare_exits() {
        let f = detect("tsbs_load_influx3", ExitStatus::from_raw(9), "").unwrap();
        assert_eq!((f.kind, f.signal), (FailureKind::Signal, Some(9)));
        assert_eq!(f.reason, "tsbs_load_influx3 was killed by signal 9");
        let f = classify(
            "tsbs_load_influx3",
            Some(2),
            None,
            "unknown flag: --x\nUsage of tsbs_load_influx3:\n      --x string\n",
        );
        assert_eq!(f.kind, FailureKind::Exit);
        let long = format!("panic: {}", "x".repeat(1000));
        assert!(classify("t", Some(2), None, &long).reason.len() < 500);
    }
}
