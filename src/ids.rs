//! Grammars for user-supplied identifiers (workspace ids, dataset ids, run ids).

use crate::error::{Error, Result};

/// Checks an id against `^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$`. `flag` names the flag in the
/// message (e.g. `--database-id`).
pub fn validate_id(flag: &str, value: &str) -> Result<()> {
    let bytes = value.as_bytes();
    let ok = !bytes.is_empty()
        && bytes.len() <= 64
        && bytes[0].is_ascii_alphanumeric()
        && bytes
            .iter()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'.' | b'_' | b'-'));
    if ok {
        Ok(())
    } else {
        Err(Error::invalid(format!("{flag} {value:?} is not a valid id"))
            .with_hint("use 1 to 64 characters: a letter or digit first, then letters, digits, '.', '_' or '-'"))
    }
}

/// Checks a SQL name (database, table): a letter or `_` first, then letters, digits, `_` (at
/// most 63), so it is safe unquoted in every product's admin statements. `flag` names the flag
/// in the message (`--database` gives "... is not a valid database name").
pub fn validate_sql_identifier(flag: &str, value: &str) -> Result<()> {
    let b = value.as_bytes();
    let ok = !b.is_empty()
        && b.len() <= 63
        && (b[0].is_ascii_alphabetic() || b[0] == b'_')
        && b.iter().all(|c| c.is_ascii_alphanumeric() || *c == b'_');
    if ok {
        Ok(())
    } else {
        let noun = flag.trim_start_matches('-');
        Err(
            Error::invalid(format!("{flag} {value:?} is not a valid {noun} name")).with_hint(
                "use 1 to 63 characters: a letter or '_' first, then letters, digits or '_'",
            ),
        )
    }
}

/// The UTC time as an id (`20260102T030405Z`): generated run, comparison and report ids.
pub fn timestamp_id_now() -> String {
    let now = time::OffsetDateTime::now_utc();
    let fmt = time::macros::format_description!("[year][month][day]T[hour][minute][second]Z");
    now.format(&fmt).unwrap_or_else(|_| "run".into())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn id_grammar() {
        for good in [
            "a",
            "a..b",
            "A_1.x-2",
            "greptime-120-manual",
            &"a".repeat(64),
        ] {
            assert!(validate_id("--database-id", good).is_ok(), "{good}");
        }
        for bad in ["", ".a", "-a", "a/b", "a b", "ä", "..", &"a".repeat(65)] {
            let e = validate_id("--database-id", bad).unwrap_err();
            assert_eq!(e.exit_code(), 2, "{bad}");
        }
    }

    #[test]
    fn sql_identifiers() {
        for ok in ["benchmark", "_x", "db_2"] {
            validate_sql_identifier("--database", ok).unwrap();
        }
        for bad in ["", "1db", "a-b", "a b", "a;drop", &"a".repeat(64)] {
            let e = validate_sql_identifier("--database", bad).unwrap_err();
            assert_eq!(e.exit_code(), 2, "{bad}");
            assert!(
                e.to_string().contains("--database") && e.to_string().contains("database name"),
                "{e}"
            );
        }
    }
}
