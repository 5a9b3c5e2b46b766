//! Scrubbing secrets out of text a server prints before it reaches a file or a person: e-mail
//! addresses (the one the user gave, in any case, plain or URL-encoded, and anything else
//! shaped like an address), licence keys (JWT-shaped strings), API tokens and the values
//! of `token=` / `Authorization:`-style fields. Used line by line on server output (the
//! supervisor's output filter) and on log samples shown in summaries.

use std::sync::LazyLock;

use regex::Regex;

/// What replaces an e-mail address.
pub const EMAIL: &str = "<redacted-email>";
/// What replaces a licence key (JWT-shaped).
pub const LICENSE: &str = "<redacted-license>";
/// What replaces a token or another secret field value.
pub const SECRET: &str = "<redacted>";

/// A local part of word characters, `.`, `+`, `-`; `@`; a domain with a dot and a 2+-letter
/// top-level domain; not touching further address characters on either side.
static EMAIL_RE: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"[A-Za-z0-9_.+-]+(@|%40)[A-Za-z0-9-]+(\.[A-Za-z0-9-]+)*\.[A-Za-z]{2,}\b")
        .expect("email regex")
});
/// Three base64url segments, the first a JSON header (`eyJ` = `{"`): a JWT licence or token.
static JWT_RE: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"eyJ[A-Za-z0-9_-]*\.[A-Za-z0-9_-]+\.[A-Za-z0-9_-]*").expect("jwt regex")
});
/// InfluxDB 3 tokens (`apiv3_...`).
static TOKEN_RE: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(r"apiv3_[A-Za-z0-9_+/=-]+").expect("token regex"));
/// `Bearer x`, `Authorization: Token x`, `Authorization: Basic x`.
static AUTH_RE: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"(?i)(\bbearer\s+|authorization\s*[:=]\s*(?:token|basic)\s+)[A-Za-z0-9_.+/=-]+")
        .expect("auth regex")
});
/// `token=x`, `license_key="x"`, `password: x`, ... (field names that always hold secrets; a
/// name inside a module path such as `server::token:` is not a field).
static FIELD_RE: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(
        r#"(?i)(^|[\s,;{(\["'])(token|admin_token|auth_token|api_key|license_key|secret|password)(\s*[=:]\s*)("[^"]*"|'[^']*'|[^\s,;]+)"#,
    )
    .expect("field regex")
});

/// Redacts known secrets (exact values, matched case-insensitively) and secret-shaped text.
#[derive(Debug, Clone, Default)]
pub struct Redactor {
    /// Lower-cased secrets, longest first, each with what replaces it.
    secrets: Vec<(String, &'static str)>,
}

impl Redactor {
    pub fn new() -> Redactor {
        Redactor::default()
    }

    /// Also redacts `secret` (an e-mail address) wherever it appears (plain, any case, or
    /// URL-encoded).
    pub fn with_secret(self, secret: &str) -> Redactor {
        self.with(secret, EMAIL)
    }

    /// Also redacts `token` (a token or password) wherever it appears, as [`SECRET`].
    pub fn with_token(self, token: &str) -> Redactor {
        self.with(token, SECRET)
    }

    fn with(mut self, secret: &str, label: &'static str) -> Redactor {
        let s = secret.trim();
        if !s.is_empty() {
            self.secrets.push((s.to_ascii_lowercase(), label));
            let encoded = s.replace('@', "%40").replace('+', "%2B");
            if encoded != s {
                self.secrets.push((encoded.to_ascii_lowercase(), label));
            }
            self.secrets
                .sort_by_key(|(s, _)| std::cmp::Reverse(s.len()));
        }
        self
    }

    /// `line` with every secret replaced.
    pub fn redact(&self, line: &str) -> String {
        let mut out = line.to_string();
        for (s, label) in &self.secrets {
            out = replace_ci(&out, s, label);
        }
        let out = JWT_RE.replace_all(&out, LICENSE);
        let out = TOKEN_RE.replace_all(&out, SECRET);
        let out = FIELD_RE.replace_all(&out, |c: &regex::Captures| {
            // Values already scrubbed stay readable.
            if c[4].contains("<redacted") {
                c[0].to_string()
            } else {
                format!("{}{}{}{SECRET}", &c[1], &c[2], &c[3])
            }
        });
        let out = AUTH_RE.replace_all(&out, |c: &regex::Captures| format!("{}{SECRET}", &c[1]));
        EMAIL_RE.replace_all(&out, EMAIL).into_owned()
    }
}

/// Replaces every ASCII-case-insensitive occurrence of `needle` (lower case) in `hay`.
fn replace_ci(hay: &str, needle: &str, with: &str) -> String {
    if needle.is_empty() {
        return hay.to_string();
    }
    let lower = hay.to_ascii_lowercase();
    let mut out = String::with_capacity(hay.len());
    let mut last = 0;
    for (i, _) in lower.match_indices(needle) {
        if i < last {
            continue;
        }
        out.push_str(&hay[last..i]);
        out.push_str(with);
        last = i + needle.len();
    }
    out.push_str(&hay[last..]);
    out
}

/// True when `text` contains anything [`Redactor::redact`] would change (for checks).
pub fn looks_secret(text: &str) -> bool {
    Redactor::new().redact(text) != text
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn emails_known_and_unknown() {
        let r = Redactor::new().with_secret("stdin@example.com");
        assert_eq!(
            r.redact("known stdin@example.com unknown other@example.org"),
            "known <redacted-email> unknown <redacted-email>"
        );
        assert_eq!(
            r.redact("STDIN@Example.COM and stdin%40example.com"),
            "<redacted-email> and <redacted-email>"
        );
        assert_eq!(
            r.redact("requesting license email=a.b+c@mail.example.co.uk license_type=trial"),
            "requesting license email=<redacted-email> license_type=trial"
        );
        // A secret that is not e-mail shaped is still found.
        let r = Redactor::new().with_secret("Weird Secret");
        assert_eq!(r.redact("x weird secret y"), "x <redacted-email> y");
        // A token is said to be one.
        let r = Redactor::new().with_token("plain-Tok3n");
        assert_eq!(r.redact("x PLAIN-tok3n y"), "x <redacted> y");
    }

    #[test]
    fn licences_tokens_and_fields() {
        let r = Redactor::new();
        assert_eq!(
            r.redact("license eyJhbGciOiJFZERTQSJ9.eyJlbWFpbCI6ImFAYi5jIn0.c2lnbmF0dXJl end"),
            "license <redacted-license> end"
        );
        assert_eq!(
            r.redact("created apiv3_abcDEF123-_xyz for you"),
            "created <redacted> for you"
        );
        assert_eq!(
            r.redact("Authorization: Bearer abcdefgh12345678"),
            "Authorization: Bearer <redacted>"
        );
        assert_eq!(
            r.redact(r#"admin_token="s3cr3t" token=abc password: hunter2"#),
            "admin_token=<redacted> token=<redacted> password: <redacted>"
        );
        // Ordinary log lines are untouched.
        for plain in [
            "2026-11-29T19:40:00.123456Z  INFO influxdb3_server: startup time: 12ms address=127.0.0.1:8181",
            "--license-file=/home/u/lic.jwt --cluster-id=ws-cluster license_type=trial",
            "influxdb3 InfluxDB 3 Enterprise, 3.11.1, revision 0123456789abcdef",
            "Waiting for verification...",
            "2026-11-29T20:28:25.767243Z  INFO influxdb3_enterprise::license: valid license found, happy data crunching",
            "2026-11-29T20:28:25.767243Z  INFO influxdb3_server::token: requesting tokens",
        ] {
            assert_eq!(r.redact(plain), plain);
            assert!(!looks_secret(plain));
        }
    }
}
