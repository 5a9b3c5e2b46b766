//! Upper bounds for numeric flags (trial-run defect #1). Every number a person types is
//! checked against a bound far above any sensible benchmark, so a typo (an extra few digits)
//! is refused with exit 2 and the bound, instead of running for hours or filling a disk.
//! Lower bounds (positive, non-zero) stay where the flags are parsed.

use crate::error::{Error, Result};

/// Hosts (`--scale`): the manual profile uses 4,000; TSBS itself keeps per-host state.
pub const MAX_SCALE: u64 = 1_000_000;
/// Queries per type (`--queries`, `--query-count T=N`): the manual profile uses at most 100.
pub const MAX_QUERIES: u64 = 1_000_000;
/// Loader and runner workers: each is a goroutine with open connections.
pub const MAX_WORKERS: u64 = 1024;
/// Rows per write request: the profiles use 3,000 and 25,000.
pub const MAX_BATCH_SIZE: u64 = 1_000_000;
/// analyze: hot repetitions per query type.
pub const MAX_HOT_RUNS: u64 = 1000;
/// compact: the swcs window, in seconds of data (ten years).
pub const MAX_WINDOW_SECONDS: u64 = 10 * 366 * 86_400;
/// Waits in seconds (`--startup-timeout`, `--stop-timeout`, `--confirm-timeout`, `--wait`):
/// one week.
pub const MAX_WAIT_SECS: u64 = 7 * 86_400;
pub const MAX_WAIT_SECONDS: f64 = MAX_WAIT_SECS as f64;

/// Refuses `v` above `max` (exit 2, naming the bound).
pub fn at_most(flag: &str, v: Option<u64>, max: u64) -> Result<()> {
    match v {
        Some(n) if n > max => Err(Error::invalid(format!(
            "{flag} {n} is above the limit of {max}"
        ))
        .with_hint(format!("pass {flag} N with 1 <= N <= {max}"))),
        _ => Ok(()),
    }
}

/// A wait in seconds: positive, finite and at most [`MAX_WAIT_SECONDS`] (0 has no defined
/// meaning: it would be "give up at once", trial-run #30).
pub fn wait_seconds(flag: &str, v: Option<f64>) -> Result<()> {
    match v {
        Some(s) if !(s.is_finite() && s > 0.0 && s <= MAX_WAIT_SECONDS) => Err(Error::invalid(
            format!("{flag} must be a positive number of seconds, at most {MAX_WAIT_SECONDS}"),
        )
        .with_hint(format!("e.g. {flag} 60"))),
        _ => Ok(()),
    }
}

/// `--queries N` and every `--query-count T=N` whose count parses (the syntax itself is
/// checked by `queryset::resolve_counts`).
pub fn queries(queries: Option<i64>, query_counts: &[String]) -> Result<()> {
    at_most(
        "--queries",
        queries.and_then(|q| u64::try_from(q).ok()),
        MAX_QUERIES,
    )?;
    for raw in query_counts {
        if let Some((t, c)) = raw.split_once('=') {
            if let Ok(n) = c.trim().parse::<u64>() {
                at_most(&format!("--query-count {}", t.trim()), Some(n), MAX_QUERIES)?;
            }
        }
    }
    Ok(())
}

/// `--scale N`.
pub fn scale(scale: Option<i64>) -> Result<()> {
    at_most(
        "--scale",
        scale.and_then(|s| u64::try_from(s).ok()),
        MAX_SCALE,
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn defect_1_absurd_values_are_refused_with_the_bound() {
        let e = at_most("--load-workers", Some(4_294_967_295), MAX_WORKERS).unwrap_err();
        assert_eq!(e.exit_code(), 2);
        assert!(e.message.contains("1024"), "{}", e.message);
        assert!(at_most("--load-workers", Some(MAX_WORKERS), MAX_WORKERS).is_ok());
        let e = queries(Some(99_999_999_999), &[]).unwrap_err();
        assert!(e.message.contains("--queries 99999999999"), "{}", e.message);
        let e = queries(None, &["lastpoint=5000000".into()]).unwrap_err();
        assert!(
            e.message.contains("--query-count lastpoint"),
            "{}",
            e.message
        );
        assert!(queries(Some(-5), &["lastpoint=abc".into()]).is_ok());
        assert!(scale(Some(99_999_999_999_999))
            .unwrap_err()
            .message
            .contains("1000000"));
        assert!(scale(Some(4000)).is_ok());
    }

    #[test]
    fn defect_30_zero_waits_are_refused() {
        assert!(wait_seconds("--startup-timeout", Some(0.0)).is_err());
        assert!(wait_seconds("--stop-timeout", Some(-1.0)).is_err());
        assert!(wait_seconds("--stop-timeout", Some(f64::NAN)).is_err());
        assert!(wait_seconds("--stop-timeout", Some(1e12)).is_err());
        assert!(wait_seconds("--stop-timeout", Some(5.0)).is_ok());
        assert!(wait_seconds("--stop-timeout", None).is_ok());
    }
}
