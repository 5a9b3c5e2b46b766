//! One error type for the whole tool. Every failure carries a kind (which decides the exit
//! code), a message that says what went wrong, and a hint that says what to do next.
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

/// The tool's error: a kind, a message, an optional hint (what to do next), and an optional
/// chain of context lines added on the way up.
#[derive(Debug)]
pub struct Error {
    pub kind: ErrorKind,
    pub message: String,
    pub hint: Option<String>,
    /// Printed as a plain line, not as "error: ..." (a foreground server stopped by Ctrl-C:
    /// exit 130, but the normal way to stop it).
    pub plain: bool,
    /// The HTTP status when the error is a server's answer (not a request that got none).
    pub http_status: Option<u16>,
}

pub type Result<T, E = Error> = std::result::Result<T, E>;

impl Error {
    pub fn new(kind: ErrorKind, message: impl Into<String>) -> Self {
        Error {
            kind,
            message: message.into(),
            hint: None,
            plain: false,
            http_status: None,
        }
    }
    /// The error is the server's answer with this HTTP status.
    pub fn with_http_status(mut self, status: u16) -> Self {
        self.http_status = Some(status);
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
        Self::failed(format!("could not {action} {}: {err}", path.display()))
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

impl std::error::Error for Error {}

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
        Error::failed(err.to_string())
    }
}

impl From<serde_json::Error> for Error {
    fn from(err: serde_json::Error) -> Self {
        Error::failed(format!("JSON error: {err}"))
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
}
