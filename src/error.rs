//! One error type for the whole tool. Every failure carries a kind (which decides the exit
//! code), a message that says what went wrong, and a hint that says what to do next; where a
//! caller decides something by the failure, a typed [`Detail`] (never the message's words);
//! and, where one caused it, the underlying error as its [`source`](std::error::Error::source).
//!
//! Modules build errors with the constructors below and add context with [`Context`];
//! `main` turns the kind into the exit code and the JSON envelope's `error` object.

use std::fmt;

/// What kind of failure this is; decides the process exit code (DESIGN.md, Exit codes).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ErrorKind {
    /// The operation failed (download, build, server, benchmark step). Exit 1.
    Failed,
    /// Invalid input: bad flag, value, id, version, conflicting options. Nothing changed. Exit 2.
    Invalid,
    /// A workspace or install lock (or a manual hold) is held by someone else. Exit 3.
    Busy,
    /// A checksum, manifest or workspace does not match what was recorded. Exit 4.
    Integrity,
    /// Ctrl-C or SIGTERM: children stopped, state recorded as interrupted. Exit 130.
    Interrupted,
}

impl ErrorKind {
    pub fn exit_code(self) -> i32 {
        match self {
            ErrorKind::Failed => 1,
            ErrorKind::Invalid => 2,
            ErrorKind::Busy => 3,
            ErrorKind::Integrity => 4,
            ErrorKind::Interrupted => 130,
        }
    }

    /// The stable name used in the `--json` envelope.
    pub fn as_str(self) -> &'static str {
        match self {
            ErrorKind::Failed => "failed",
            ErrorKind::Invalid => "invalid_input",
            ErrorKind::Busy => "busy",
            ErrorKind::Integrity => "integrity",
            ErrorKind::Interrupted => "interrupted",
        }
    }
}

/// What code may decide by, beyond the kind: a failure's typed detail. Callers match this,
/// never the message (whose words are for people and may change).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Detail {
    /// The error is a server's answer with this HTTP status (not a request that got none).
    HttpStatus(u16),
    /// The work was not attempted because an earlier part of the same job failed.
    Skipped,
    /// The release source serves another archive than the one expected (by SHA-256).
    ArchiveDiffers,
    /// The server answered that what was asked for is not there, in its own typed terms (an
    /// error code, a SQLSTATE, a status, a list without it): a row count of a table or
    /// database that was dropped or wiped.
    NotFound(Missing),
}

/// What a server said it does not have ([`Detail::NotFound`]), with the name asked for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Missing {
    /// The database (GreptimeDB, InfluxDB 3 and PostgreSQL database, InfluxDB 2 bucket).
    Database(String),
    /// The table (InfluxDB measurement) in a database that is there.
    Table(String),
}

impl fmt::Display for Missing {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Missing::Database(n) => write!(f, "database {n}"),
            Missing::Table(n) => write!(f, "table {n}"),
        }
    }
}

/// The tool's error: a kind, a message (context added on the way up is prefixed to it), an
/// optional hint (what to do next), an optional typed detail, and an optional source.
#[derive(Debug)]
pub struct Error {
    pub kind: ErrorKind,
    pub message: String,
    pub hint: Option<String>,
    /// Printed as a plain line, not as "error: ..." (a foreground server stopped by Ctrl-C:
    /// exit 130, but the normal way to stop it).
    pub plain: bool,
    /// What callers decide by (an HTTP status, a skipped part), when there is something.
    pub detail: Option<Detail>,
    /// The underlying error, when one caused this (an I/O error): [`std::error::Error::source`].
    pub source: Option<Box<dyn std::error::Error + Send + Sync>>,
}

pub type Result<T, E = Error> = std::result::Result<T, E>;

impl Error {
    pub fn new(kind: ErrorKind, message: impl Into<String>) -> Self {
        Error {
            kind,
            message: message.into(),
            hint: None,
            plain: false,
            detail: None,
            source: None,
        }
    }
    /// The error is the server's answer with this HTTP status.
    pub fn with_http_status(self, status: u16) -> Self {
        self.with_detail(Detail::HttpStatus(status))
    }
    /// The HTTP status, when the error is a server's answer.
    pub fn http_status(&self) -> Option<u16> {
        match self.detail {
            Some(Detail::HttpStatus(s)) => Some(s),
            _ => None,
        }
    }
    /// Sets (or replaces) the typed detail callers decide by.
    pub fn with_detail(mut self, detail: Detail) -> Self {
        self.detail = Some(detail);
        self
    }
    /// Whether the error carries this detail.
    pub fn is(&self, detail: Detail) -> bool {
        self.detail == Some(detail)
    }
    /// The error is the server's answer that `missing` is not there.
    pub fn not_found(self, missing: Missing) -> Self {
        self.with_detail(Detail::NotFound(missing))
    }
    /// What the server said it does not have, when the error is such an answer.
    pub fn missing(&self) -> Option<&Missing> {
        match &self.detail {
            Some(Detail::NotFound(m)) => Some(m),
            _ => None,
        }
    }
    /// Keeps `source` as the error that caused this one.
    pub fn with_source(
        mut self,
        source: impl Into<Box<dyn std::error::Error + Send + Sync>>,
    ) -> Self {
        self.source = Some(source.into());
        self
    }
    pub fn failed(message: impl Into<String>) -> Self {
        Self::new(ErrorKind::Failed, message)
    }
    pub fn invalid(message: impl Into<String>) -> Self {
        Self::new(ErrorKind::Invalid, message)
    }
    pub fn busy(message: impl Into<String>) -> Self {
        Self::new(ErrorKind::Busy, message)
    }
    pub fn integrity(message: impl Into<String>) -> Self {
        Self::new(ErrorKind::Integrity, message)
    }
    pub fn interrupted(message: impl Into<String>) -> Self {
        Self::new(ErrorKind::Interrupted, message)
    }

    /// An I/O error on `path`, as a failure that names the path.
    pub fn io(action: &str, path: &std::path::Path, err: std::io::Error) -> Self {
        Self::failed(format!("could not {action} {}: {err}", path.display())).with_source(err)
    }

    /// Marks the error as an expected end, printed as its plain message.
    pub fn plain(mut self) -> Self {
        self.plain = true;
        self
    }

    /// Adds (or replaces) the hint: what the user should do next.
    pub fn with_hint(mut self, hint: impl Into<String>) -> Self {
        self.hint = Some(hint.into());
        self
    }

    /// Prefixes the message with context ("while installing X: ...").
    pub fn context(mut self, context: impl fmt::Display) -> Self {
        self.message = format!("{context}: {}", self.message);
        self
    }

    pub fn exit_code(&self) -> i32 {
        self.kind.exit_code()
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::error::Error for Error {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        self.source
            .as_deref()
            .map(|e| e as &(dyn std::error::Error + 'static))
    }
}

/// Adds context to any result whose error converts into [`Error`].
pub trait Context<T> {
    fn context(self, context: impl fmt::Display) -> Result<T>;
    fn with_context<C: fmt::Display>(self, f: impl FnOnce() -> C) -> Result<T>;
}

impl<T, E: Into<Error>> Context<T> for std::result::Result<T, E> {
    fn context(self, context: impl fmt::Display) -> Result<T> {
        self.map_err(|e| e.into().context(context))
    }
    fn with_context<C: fmt::Display>(self, f: impl FnOnce() -> C) -> Result<T> {
        self.map_err(|e| e.into().context(f()))
    }
}

impl From<std::io::Error> for Error {
    fn from(err: std::io::Error) -> Self {
        Error::failed(err.to_string()).with_source(err)
    }
}

impl From<serde_json::Error> for Error {
    fn from(err: serde_json::Error) -> Self {
        Error::failed(format!("JSON error: {err}")).with_source(err)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kinds_map_to_the_documented_exit_codes() {
        let codes: Vec<i32> = [
            ErrorKind::Failed,
            ErrorKind::Invalid,
            ErrorKind::Busy,
            ErrorKind::Integrity,
            ErrorKind::Interrupted,
        ]
        .iter()
        .map(|k| k.exit_code())
        .collect();
        assert_eq!(codes, vec![1, 2, 3, 4, 130]);
    }

    #[test]
    fn context_prefixes_the_message_and_keeps_kind_and_hint() {
        let r: Result<()> = Err(Error::integrity("sha256 differs").with_hint("re-download"));
        let e = r
            .context("verifying go1.21.13.linux-amd64.tar.gz")
            .unwrap_err();
        assert_eq!(e.kind, ErrorKind::Integrity);
        assert_eq!(
            e.message,
            "verifying go1.21.13.linux-amd64.tar.gz: sha256 differs"
        );
        assert_eq!(e.hint.as_deref(), Some("re-download"));
    }

    #[test]
    fn an_io_error_is_the_source_and_the_message_names_the_path() {
        use std::error::Error as _;
        let io = std::io::Error::new(std::io::ErrorKind::NotFound, "gone");
        let e = Error::io("read", std::path::Path::new("/x/y"), io);
        assert_eq!(e.message, "could not read /x/y: gone");
        let src = e.source().expect("a source");
        let io = src.downcast_ref::<std::io::Error>().expect("the io::Error");
        assert_eq!(io.kind(), std::io::ErrorKind::NotFound);
        // Context keeps the source.
        let e = e.context("installing");
        assert!(e.source().is_some());
        assert!(Error::failed("x").source().is_none());
    }

    /// What fs-err says reaches the user whole: what failed and on which path, with the cause;
    /// the io::Error stays the source.
    #[test]
    fn an_fs_err_failure_names_the_operation_and_the_path() {
        use std::error::Error as _;
        let dir = tempfile::tempdir().unwrap();
        let missing = dir.path().join("no-such-file");
        let e: Error = fs_err::read(&missing).unwrap_err().into();
        assert_eq!(e.kind, ErrorKind::Failed);
        assert!(
            e.message
                .starts_with(&format!("failed to open file `{}`: ", missing.display())),
            "{}",
            e.message
        );
        assert!(e.message.contains("(os error 2)"), "{}", e.message);
        let io = e
            .source()
            .unwrap()
            .downcast_ref::<std::io::Error>()
            .unwrap();
        assert_eq!(io.kind(), std::io::ErrorKind::NotFound);
    }

    #[test]
    fn the_http_status_is_a_detail() {
        let e = Error::failed("refused (503)").with_http_status(503);
        assert_eq!(e.http_status(), Some(503));
        assert!(e.is(Detail::HttpStatus(503)) && !e.is(Detail::Skipped));
        assert_eq!(Error::failed("HTTP 503").http_status(), None);
        assert_eq!(
            Error::failed("s")
                .with_detail(Detail::Skipped)
                .http_status(),
            None
        );
    }

    /// "Not there" is a detail with the name asked for, never read from the message.
    #[test]
    fn not_found_is_a_detail_naming_what_is_missing() {
        let e =
            Error::failed("refused (400): whatever words").not_found(Missing::Table("cpu".into()));
        assert_eq!(e.missing(), Some(&Missing::Table("cpu".into())));
        assert_eq!(e.missing().unwrap().to_string(), "table cpu");
        assert_eq!(
            Missing::Database("benchmark".into()).to_string(),
            "database benchmark"
        );
        assert_eq!(Error::failed("Table not found: cpu").missing(), None);
        assert_eq!(Error::failed("x").with_http_status(404).missing(), None);
        // Context on the way up keeps it.
        assert!(e.context("counting").missing().is_some());
    }
}
