//! Checksum files as vendors publish them (a bare digest, `sha256sum` lines, BSD `SHA256 (f) =
//! d` lines), and the SHA-256 digest grammar.

use crate::error::{Error, Result};

pub(super) fn normalize_digest(s: &str) -> Option<String> {
    let s = s.trim();
    (s.len() == 64 && s.bytes().all(|b| b.is_ascii_hexdigit())).then(|| s.to_ascii_lowercase())
}

/// Parses a checksum file: a bare hex digest, or `digest  filename` lines (the line naming
/// `file_name` when there are several). Returns lowercase hex.
pub fn parse_checksum_file(text: &str, file_name: &str) -> Result<String> {
    let bad = |why: String| {
        Error::integrity(format!("checksum file for {file_name}: {why}")).with_hint(
            "the published checksum file is not usable; check the mirror, or try again later",
        )
    };
    let lines: Vec<&str> = text
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty() && !l.starts_with('#'))
        .collect();
    if lines.is_empty() {
        return Err(bad("it is empty".into()));
    }
    let mut bare = Vec::new();
    let mut named = Vec::new();
    for line in &lines {
        if let Some((digest, name)) = parse_bsd_line(line) {
            named.push((digest, name));
            continue;
        }
        let mut it = line.splitn(2, char::is_whitespace);
        let first = it.next().unwrap_or_default();
        let rest = it.next().map(str::trim).unwrap_or_default();
        let Some(digest) = normalize_digest(first) else {
            return Err(bad(format!(
                "{:?} is not a SHA-256 digest line",
                truncate(line, 80)
            )));
        };
        if rest.is_empty() {
            bare.push(digest);
        } else {
            // `sha256sum -b` marks binary mode with `*`.
            named.push((digest, rest.trim_start_matches('*').to_string()));
        }
    }
    if !bare.is_empty() {
        if bare.len() == 1 && named.is_empty() {
            return Ok(bare.remove(0));
        }
        return Err(bad(
            "it mixes bare digests with other lines, so the one for this file is unknown".into(),
        ));
    }
    let base = |n: &str| n.rsplit('/').next().unwrap_or(n).to_string();
    let mut matching: Vec<&String> = named
        .iter()
        .filter(|(_, n)| n == file_name || base(n) == file_name)
        .map(|(d, _)| d)
        .collect();
    matching.dedup();
    match matching.len() {
        1 => Ok(matching[0].clone()),
        0 => {
            let names: Vec<String> = named.iter().take(5).map(|(_, n)| n.clone()).collect();
            Err(bad(format!(
                "no line names {file_name} (it names {})",
                names.join(", ")
            )))
        }
        _ => Err(bad(format!(
            "several different digests are given for {file_name}"
        ))),
    }
}

/// BSD style: `SHA256 (file) = digest`.
fn parse_bsd_line(line: &str) -> Option<(String, String)> {
    let rest = line.strip_prefix("SHA256 (")?;
    let (name, digest) = rest.rsplit_once(") = ")?;
    Some((normalize_digest(digest)?, name.to_string()))
}

fn truncate(s: &str, n: usize) -> String {
    s.chars().take(n).collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::error::ErrorKind;

    const D: &str = "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef";
    const E: &str = "fedcba9876543210fedcba9876543210fedcba9876543210fedcba9876543210";

    #[test]
    fn checksum_bare_digest_any_case() {
        assert_eq!(
            parse_checksum_file(&format!("{D}\n"), "x.tar.gz").unwrap(),
            D
        );
        assert_eq!(
            parse_checksum_file(&D.to_uppercase(), "x.tar.gz").unwrap(),
            D
        );
        assert_eq!(
            parse_checksum_file(&format!("  {D}  \r\n\n"), "x").unwrap(),
            D
        );
    }

    #[test]
    fn checksum_named_lines_pick_our_file() {
        let one = format!("{D}  influxdb3-core-3.11.1_linux_amd64.tar.gz\n");
        assert_eq!(
            parse_checksum_file(&one, "influxdb3-core-3.11.1_linux_amd64.tar.gz").unwrap(),
            D
        );
        let many = format!("{E}  a.tar.gz\n{D} *dist/b.tar.gz\n{E}  c.tar.gz\n");
        assert_eq!(parse_checksum_file(&many, "b.tar.gz").unwrap(), D);
        assert_eq!(parse_checksum_file(&many, "a.tar.gz").unwrap(), E);
        let bsd = format!("SHA256 (b.tar.gz) = {D}\n");
        assert_eq!(parse_checksum_file(&bsd, "b.tar.gz").unwrap(), D);
    }

    #[test]
    fn checksum_garbage_or_no_match_is_integrity() {
        for (text, name) in [
            ("", "a"),
            ("\n\n", "a"),
            ("<html>Not Found</html>", "a"),
            ("abc123", "a"),
            (&format!("{D}  other.tar.gz\n") as &str, "a.tar.gz"),
            (&format!("{D}\n{E}\n"), "a"),
            (&format!("{D}  a\n{E}  a\n"), "a"),
            (&format!("{D}0\n"), "a"),
        ] {
            let e = parse_checksum_file(text, name).unwrap_err();
            assert_eq!(e.kind, ErrorKind::Integrity, "{text:?}");
            assert!(e.message.contains(name), "{}", e.message);
        }
    }

    #[test]
    fn digests() {
        assert_eq!(normalize_digest(&D.to_uppercase()).as_deref(), Some(D));
        assert_eq!(normalize_digest("abc"), None);
    }
}
