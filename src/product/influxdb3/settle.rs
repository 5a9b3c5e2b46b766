//! The post-load row count on a server whose count moves (InfluxDB 3): a count is a
//! measurement of a moving server, never a verdict on one reading.
//!
//! Two things make a real InfluxDB 3 Core (3.10.1) count fewer rows than it stored:
//! * `--no-sync`: acknowledged rows become queryable only after the next WAL flush;
//! * a WAL snapshot: once its first Parquet file lands, every snapshotting chunk of the table
//!   leaves the queryable buffer until its own file lands (`queryable_buffer.rs:358-366`), so
//!   acknowledged durable rows vanish from `count(*)` for as long as the snapshot persists
//!   (180,000 of 2.6 M rows were hidden here).
//!
//! So a shortfall is counted again, until two readings agree with no snapshot file landing
//! from the start of the one to the end of the other (the server's own list of persisted
//! files, `system.parquet_files`, read around each count), within a bound in counts and in
//! time spent waiting for snapshots, never in the time the counts themselves take (one count
//! took 61 s at 2.6 M rows; each has its own `--count-timeout`).
//!
//! The load phase asks for the count through [`crate::product::Loading::count_after_load`]
//! and records what [`count_after_load`] returns; it knows nothing of flushes or snapshots.

use std::time::{Duration, Instant};

use serde_json::{json, Value};

use crate::error::{Error, Result};
use crate::product::{CountFailed, CountRequest, LoadCount, LoadRun};

/// How the post-load count must be read: counted again until two readings agree with
/// nothing persisting between them, within these bounds.
#[derive(Debug, Clone, Copy)]
pub struct Settling {
    /// The server's WAL flush interval: two of them pass between counts.
    pub flush: std::time::Duration,
    /// Why one reading is not enough, for the record.
    pub reason: &'static str,
    /// The most counts, the first included.
    pub max_counts: u32,
    /// The most time spent waiting for snapshot files to stop landing, in all.
    pub persist_wait: std::time::Duration,
}

/// What a server reports it has persisted of a table: `(files, rows in them)`, when it says.
pub type Persisted = Option<(u64, u64)>;

/// How a count after a load (`no_sync`: with `--no-sync`) is read: both durable and
/// `--no-sync` loads, since a real Core hides acknowledged durable rows while a snapshot
/// persists, and unsynced ones until the next flush.
fn settling(no_sync: bool) -> Settling {
    Settling {
        flush: super::DEFAULT_WAL_FLUSH_INTERVAL,
        reason: if no_sync {
            "--no-sync: acknowledged rows become queryable only after the next WAL flush, and a WAL snapshot hides rows from count(*) while its Parquet files persist"
        } else {
            "a WAL snapshot hides acknowledged rows from count(*) while its Parquet files persist (InfluxDB 3 Core 3.10.1, queryable_buffer.rs)"
        },
        max_counts: 6,
        persist_wait: std::time::Duration::from_secs(900),
    }
}

/// The row count of `req`'s table after a load of `expected` rows, settled (see the module):
/// the readings are the record's `wait`, and a difference is said in the verdict's words.
pub fn count_after_load(
    req: &CountRequest,
    expected: u64,
    load: LoadRun<'_>,
) -> std::result::Result<LoadCount, CountFailed> {
    count_settled(
        expected,
        settling(super::flags::no_sync(load.values)),
        &mut || super::count_table(req).map(|c| (c.rows, Some(c.detail))),
        &mut || super::persisted_files(req),
        &mut std::thread::sleep,
    )
    .map(|s| s.load_count(req.table, expected, load.managed))
    .map_err(|b| {
        let (e, wait) = *b;
        Box::new((e, Some(wait)))
    })
}

/// One count and what surrounded it.
#[derive(Debug, Clone)]
struct Reading {
    /// Seconds from the first count's start to this count's start.
    at: f64,
    took: f64,
    rows: u64,
    /// Persisted files before and after the count.
    before: Persisted,
    after: Persisted,
}

/// How the readings ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Verdict {
    /// The count equals the dataset's rows.
    Reached,
    /// The same count twice with nothing persisting between: a shortfall (or excess) to trust.
    Stable,
    /// Still changing when the bound was reached: nothing is known about lost rows.
    Unsettled,
}

impl Verdict {
    fn words(self) -> &'static str {
        match self {
            Verdict::Reached => "reached the dataset's rows",
            Verdict::Stable => "the same count twice, no snapshot file landing in between",
            Verdict::Unsettled => "still changing at the bound",
        }
    }
}

/// The readings of a settled count.
#[derive(Debug)]
pub struct Settled {
    pub rows: u64,
    pub detail: Option<Value>,
    pub verdict: Verdict,
    /// The record for the row-count step (`wait`): every reading with its time.
    pub record: Value,
}

impl Settled {
    /// What the load phase records of it (`managed`: tsbsctl started the server, so its
    /// flush interval is known) and, when the count differs from `expected`, the words.
    fn load_count(self, table: &str, expected: u64, managed: bool) -> LoadCount {
        let mut wait = self.record;
        wait["flush_interval_source"] = json!(if managed {
            "the server's default: tsbsctl passes no --wal-flush-interval"
        } else {
            "assumed: the server's default (an external server's setting is unknown)"
        });
        let readings = wait["polls"].as_u64().unwrap_or(1);
        let actual = self.rows;
        let mismatch = match self.verdict {
            _ if actual == expected => None,
            Verdict::Unsettled => Some((
                format!(
                    "row count not settled: table {table} held {actual} rows at the last of {readings} counts and was still changing; the dataset has {expected}",
                ),
                "the rows may all be there but not yet visible (a WAL snapshot still persisting): summary.md lists every count with its time; count again once the server is idle, or load again with --database-mode reset --confirm-reset NAME",
            )),
            _ if readings > 1 => Some((
                format!(
                    "row count mismatch: table {table} holds {actual} rows in the last two of {readings} counts, with no snapshot file landing between them; the dataset has {expected}",
                ),
                crate::product::NOT_STORED_HINT,
            )),
            // One reading: the plain mismatch.
            _ => None,
        };
        LoadCount {
            rows: actual,
            method: self.detail,
            wait: Some(wait),
            mismatch,
        }
    }
}

/// Counts until the count reaches `expected`, or is stable (see the module), or the bound
/// ends it. `persisted` is read before and after each count; `None` when the server does not
/// say (then two equal counts at least two flushes apart are taken as stable).
/// A count that fails ends it with the error and the readings so far.
pub fn count_settled(
    expected: u64,
    s: Settling,
    count: &mut dyn FnMut() -> Result<(u64, Option<Value>)>,
    persisted: &mut dyn FnMut() -> Persisted,
    sleep: &mut dyn FnMut(Duration),
) -> std::result::Result<Settled, Box<(Error, Value)>> {
    let started = Instant::now();
    let mut readings: Vec<Reading> = Vec::new();
    let mut persist_waited = Duration::ZERO;
    let record = |readings: &[Reading], verdict: Option<Verdict>, waited: Duration| {
        json!({
            // Why a short count was counted again: nothing to say when one count did.
            "reason": (readings.len() > 1).then_some(s.reason),
            "outcome": verdict.map(Verdict::words).unwrap_or("count failed"),
            "counts": readings.iter().map(|r| r.rows).collect::<Vec<_>>(),
            "readings": readings.iter().map(|r| json!({
                "at_s": round3(r.at),
                "took_s": round3(r.took),
                "rows": r.rows,
                "persisted_before": r.before.map(|(f, n)| json!({"files": f, "rows": n})),
                "persisted_after": r.after.map(|(f, n)| json!({"files": f, "rows": n})),
            })).collect::<Vec<_>>(),
            "polls": readings.len(),
            "waited_s": round3(started.elapsed().as_secs_f64()),
            "snapshot_wait_s": round3(waited.as_secs_f64()),
            "flush_interval_s": s.flush.as_secs_f64(),
            "max_counts": s.max_counts,
            "max_snapshot_wait_s": s.persist_wait.as_secs_f64(),
        })
    };
    // Count start times are from the first count's start.
    let mut first_start: Option<Instant> = None;
    loop {
        let before = persisted();
        let t0 = Instant::now();
        let at = t0
            .duration_since(*first_start.get_or_insert(t0))
            .as_secs_f64();
        let (rows, detail) = match count() {
            Ok(c) => c,
            Err(e) => return Err(Box::new((e, record(&readings, None, persist_waited)))),
        };
        let took = t0.elapsed().as_secs_f64();
        let after = persisted();
        readings.push(Reading {
            at,
            took,
            rows,
            before,
            after,
        });
        let verdict = if rows == expected {
            Some(Verdict::Reached)
        } else if stable(&readings) {
            Some(Verdict::Stable)
        } else if readings.len() as u32 >= s.max_counts.max(1) {
            Some(Verdict::Unsettled)
        } else {
            None
        };
        if let Some(v) = verdict {
            return Ok(Settled {
                rows,
                detail,
                verdict: v,
                record: record(&readings, Some(v), persist_waited),
            });
        }
        if let Err(e) = crate::interrupt::check() {
            return Err(Box::new((e, record(&readings, None, persist_waited))));
        }
        // At least two flushes before the next count, so an unsynced write has been flushed.
        sleep(s.flush * 2);
        // While snapshot files are landing, wait for them to stop (bounded in all).
        let mut last = persisted();
        while last.is_some() && last != after && persist_waited < s.persist_wait {
            let step = s.flush;
            sleep(step);
            persist_waited += step;
            let now = persisted();
            if now == last {
                break;
            }
            last = now;
        }
    }
}

/// The last two readings agree and no file landed from the start of the first to the end of
/// the second. Without the server's file list, two equal counts suffice (they are at least
/// two flushes apart).
fn stable(r: &[Reading]) -> bool {
    let [.., a, b] = r else {
        return false;
    };
    a.rows == b.rows
        && match (a.before, b.after) {
            (Some(x), Some(y)) => x == y && a.after == Some(x) && b.before == Some(x),
            _ => true,
        }
}

fn round3(x: f64) -> f64 {
    (x * 1000.0).round() / 1000.0
}

#[cfg(test)]
mod tests {
    use super::*;

    fn settling(max_counts: u32) -> Settling {
        Settling {
            flush: Duration::from_millis(1),
            reason: "test",
            max_counts,
            persist_wait: Duration::from_millis(50),
        }
    }

    /// Replays `counts` and, per call, `files` (the persisted list; repeats its last).
    fn run(
        counts: &[u64],
        files: &[Persisted],
        expected: u64,
        max_counts: u32,
    ) -> (Settled, usize) {
        let (mut i, mut j) = (0, 0);
        let mut calls = 0;
        let out = count_settled(
            expected,
            settling(max_counts),
            &mut || {
                calls += 1;
                let v = counts[i.min(counts.len() - 1)];
                i += 1;
                Ok((v, None))
            },
            &mut || {
                let v = files[j.min(files.len() - 1)];
                j += 1;
                v
            },
            &mut |_| {},
        )
        .unwrap();
        (out, calls)
    }

    #[test]
    fn one_count_that_reaches_the_rows_is_enough() {
        let (s, calls) = run(&[100], &[None], 100, 6);
        assert_eq!((s.rows, s.verdict, calls), (100, Verdict::Reached, 1));
        assert_eq!(s.record["polls"], 1);
        assert_eq!(s.record["readings"][0]["rows"], 100);
        assert_eq!(s.record["readings"][0]["at_s"], 0.0);
        // No recount, so no reason for one (the real run's record named a snapshot race).
        assert!(s.record["reason"].is_null(), "{}", s.record);
    }

    #[test]
    fn unsynced_rows_appear_after_a_flush() {
        // The smoke run on real Core: 78,000, then 86,400.
        let (s, _) = run(&[78_000, 86_400], &[None], 86_400, 6);
        assert_eq!(s.verdict, Verdict::Reached);
        assert_eq!(s.record["counts"], json!([78_000, 86_400]));
        assert_eq!(s.record["reason"], "test");
    }

    #[test]
    fn a_dip_while_a_snapshot_persists_is_waited_out() {
        // F2 on real Core: 2,412,000 then 2,448,000 while files landed, then all rows.
        let f = |n| Some((n, n * 1000));
        let (s, _) = run(
            &[2_412_000, 2_448_000, 2_592_000],
            &[
                f(1),
                f(5),
                f(9),
                f(20),
                f(30),
                f(30),
                f(30),
                f(31),
                f(31),
                f(31),
                f(31),
            ],
            2_592_000,
            6,
        );
        assert_eq!((s.rows, s.verdict), (2_592_000, Verdict::Reached));
    }

    #[test]
    fn equal_counts_while_files_land_are_not_stable() {
        // Two equal readings, but a file landed during the second: count again.
        let (s, calls) = run(
            &[90, 90, 90, 90],
            &[
                Some((1, 10)),
                Some((1, 10)),
                Some((1, 10)),
                Some((2, 20)),
                Some((2, 20)),
            ],
            100,
            6,
        );
        assert_eq!(s.verdict, Verdict::Stable);
        assert!(calls >= 3, "{calls}: {}", s.record);
    }

    #[test]
    fn a_stable_shortfall_is_trusted_and_a_moving_one_is_not() {
        let (s, calls) = run(&[90, 90], &[Some((3, 30))], 100, 6);
        assert_eq!((s.verdict, calls), (Verdict::Stable, 2));
        let (s, calls) = run(&[1, 2, 3, 4, 5, 6, 7], &[None], 100, 4);
        assert_eq!((s.verdict, s.rows, calls), (Verdict::Unsettled, 4, 4));
        assert_eq!(s.record["outcome"], "still changing at the bound");
    }

    #[test]
    fn a_failed_count_keeps_the_readings_so_far() {
        let mut n = 0;
        let err = count_settled(
            100,
            settling(6),
            &mut || {
                n += 1;
                if n == 1 {
                    Ok((50, None))
                } else {
                    Err(Error::failed("no answer within 1 s"))
                }
            },
            &mut || None,
            &mut |_| {},
        )
        .unwrap_err();
        assert_eq!(err.0.message, "no answer within 1 s");
        assert_eq!(err.1["counts"], json!([50]));
        assert_eq!(err.1["outcome"], "count failed");
    }

    #[test]
    fn the_load_phase_gets_the_readings_and_the_words_of_a_difference() {
        let count = |counts: &[u64], managed| {
            let (s, _) = run(counts, &[None], 100, 3);
            s.load_count("cpu", 100, managed)
        };
        // Reached: no words, the readings recorded with where the flush interval came from.
        let c = count(&[100], true);
        assert_eq!((c.rows, c.mismatch.is_none()), (100, true));
        let w = c.wait.unwrap();
        assert_eq!(w["polls"], 1);
        assert!(w["flush_interval_source"]
            .as_str()
            .unwrap()
            .starts_with("the server's default"));
        // An external server: its flush interval is assumed.
        let c = count(&[90], false);
        assert!(c.wait.unwrap()["flush_interval_source"]
            .as_str()
            .unwrap()
            .starts_with("assumed"));
        // Stable over two readings, and still moving at the bound.
        let (r, hint) = count(&[80, 90, 90], true).mismatch.unwrap();
        assert_eq!(
            r,
            "row count mismatch: table cpu holds 90 rows in the last two of 3 counts, with no snapshot file landing between them; the dataset has 100"
        );
        assert_eq!(hint, crate::product::NOT_STORED_HINT);
        let (r, hint) = count(&[70, 80, 90], true).mismatch.unwrap();
        assert_eq!(
            r,
            "row count not settled: table cpu held 90 rows at the last of 3 counts and was still changing; the dataset has 100"
        );
        assert!(hint.contains("WAL snapshot"), "{hint}");
    }

    #[test]
    fn the_wait_for_snapshots_is_bounded() {
        // Files land forever: the snapshot wait stops at its bound, the counts at theirs.
        let files: Vec<Persisted> = (0..10_000).map(|i| Some((i, i))).collect();
        let (s, calls) = run(&[10, 20, 30, 40], &files, 100, 3);
        assert_eq!((s.verdict, calls), (Verdict::Unsettled, 3));
        assert!(s.record["snapshot_wait_s"].as_f64().unwrap() <= 0.06);
    }
}
