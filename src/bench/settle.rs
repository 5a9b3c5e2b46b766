//! The post-load row count of a `--no-sync` InfluxDB 3 load: acknowledged rows become
//! queryable only after the next WAL flush (real Core: `write_ops_unconfirmed`, the queryable
//! buffer is fed once the WAL file is persisted), so the count is repeated until it reaches
//! the dataset's rows or stops changing, within a bound of a few flush intervals.

use std::time::{Duration, Instant};

use serde_json::{json, Value};

use crate::error::Result;

/// How long to keep counting.
#[derive(Debug, Clone, Copy)]
pub struct Bound {
    /// The server's WAL flush interval (what it runs with, or its default).
    pub flush: Duration,
    /// Give up after this long.
    pub max_wait: Duration,
}

impl Bound {
    /// Up to 10 flush intervals, at least 10 s; "stopped changing" means unchanged for 3
    /// flush intervals.
    pub fn for_flush(flush: Duration) -> Bound {
        Bound {
            flush,
            max_wait: (flush * 10).max(Duration::from_secs(10)),
        }
    }
}

/// Counts until `count` returns `expected`, or the same number for 3 flush intervals, or the
/// bound is reached. Returns the last count, its detail and a record of the wait.
pub fn count_settled(
    expected: u64,
    bound: Bound,
    count: &mut dyn FnMut() -> Result<(u64, Option<Value>)>,
    sleep: &mut dyn FnMut(Duration),
) -> Result<(u64, Option<Value>, Value)> {
    let started = Instant::now();
    let poll = (bound.flush / 2).max(Duration::from_millis(50));
    let stable_for = bound.flush * 3;
    let (mut n, mut detail) = count()?;
    let mut counts = vec![n];
    let mut changed_at = Instant::now();
    let outcome = loop {
        if n == expected {
            break "reached the dataset's rows";
        }
        if changed_at.elapsed() >= stable_for && counts.len() > 1 {
            break "stopped changing";
        }
        if started.elapsed() >= bound.max_wait {
            break "wait bound reached";
        }
        crate::interrupt::check()?;
        sleep(poll);
        let (m, d) = count()?;
        if m != n {
            changed_at = Instant::now();
        }
        n = m;
        detail = d;
        // Keep the record small: the first counts and the last.
        if counts.len() < 20 {
            counts.push(n);
        } else if let Some(last) = counts.last_mut() {
            *last = n;
        }
    };
    let wait = json!({
        "reason": "--no-sync: acknowledged rows become queryable only after the next WAL flush",
        "waited_s": started.elapsed().as_secs_f64(),
        "polls": counts.len(),
        "counts": counts,
        "outcome": outcome,
        "flush_interval_s": bound.flush.as_secs_f64(),
        "max_wait_s": bound.max_wait.as_secs_f64(),
    });
    Ok((n, detail, wait))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run(seq: &[u64], expected: u64, flush_ms: u64) -> (u64, Value, usize) {
        let mut i = 0;
        let mut calls = 0;
        let bound = Bound {
            flush: Duration::from_millis(flush_ms),
            max_wait: Duration::from_millis(flush_ms * 10),
        };
        let (n, _, wait) = count_settled(
            expected,
            bound,
            &mut || {
                calls += 1;
                let v = seq[i.min(seq.len() - 1)];
                i += 1;
                Ok((v, None))
            },
            &mut |d| std::thread::sleep(d),
        )
        .unwrap();
        (n, wait, calls)
    }

    #[test]
    fn waits_for_rows_that_appear_after_a_flush() {
        // 200 ms flushes: polls every 100 ms, "stopped changing" only after 600 ms, so a
        // busy machine's late poll is not read as a settled count.
        let (n, wait, calls) = run(&[0, 0, 60, 100], 100, 200);
        assert_eq!(n, 100);
        assert_eq!(calls, 4);
        assert_eq!(wait["outcome"], "reached the dataset's rows");
        assert_eq!(wait["counts"], json!([0, 0, 60, 100]));
    }

    #[test]
    fn a_durable_count_at_once_needs_no_wait() {
        let (n, wait, calls) = run(&[100], 100, 20);
        assert_eq!((n, calls), (100, 1));
        assert_eq!(wait["polls"], 1);
    }

    #[test]
    fn stops_when_the_count_stops_changing_or_at_the_bound() {
        // Short of the dataset and stable: judged after 3 flush intervals (300 ms), well before
        // the bound (10 intervals, 1 s).
        let started = Instant::now();
        let (n, wait, _) = run(&[90], 100, 100);
        assert_eq!(n, 90);
        assert_eq!(wait["outcome"], "stopped changing");
        assert!(started.elapsed() < Duration::from_millis(900));
        // Still changing at the bound: the bound ends it.
        let seq: Vec<u64> = (0..1000).collect();
        let (_, wait, _) = run(&seq, 5000, 10);
        assert_eq!(wait["outcome"], "wait bound reached");
    }
}
