//! Tokens for the TSBS tools and the server's admin API.

use crate::error::{Error, Result};
use crate::tsbs::Secret;

/// Token values from the environment variables the flags name (never from flags).
/// `word` names the secret in messages ("token", "password").
pub fn token_from_env(var: Option<&str>, default: &str, word: &str) -> Result<Option<Secret>> {
    let name = var.unwrap_or(default);
    match std::env::var(name) {
        Ok(v) if !v.is_empty() => Ok(Some(Secret::new(v))),
        Ok(_) | Err(std::env::VarError::NotPresent) => {
            if var.is_some() {
                // Say which: set but empty is a different mistake (trial-run #23).
                let state = if std::env::var_os(name).is_some() {
                    "is empty"
                } else {
                    "is not set"
                };
                Err(
                    Error::invalid(format!("environment variable {name} {state}")).with_hint(
                        format!("export {name}=<{word}>, or drop the flag naming it"),
                    ),
                )
            } else {
                Ok(None)
            }
        }
        Err(_) => Err(
            Error::invalid(format!("environment variable {name} is not valid UTF-8"))
                .with_hint(format!("set it to the {word} text")),
        ),
    }
}
