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
}
