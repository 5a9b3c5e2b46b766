//! Watching a TSBS tool while it runs: progress from its own periodic report lines (the
//! loader's CSV line every `--reporting-period`, the runners' `After N queries` block every
//! `--print-interval` queries) and stalls (C2: the GreptimeDB loader retries a batch forever
//! while the server answers 500 "timeout", so the rows stop growing while the lines go on).
//!
//! A stall is `--stall-timeout` seconds without the count growing: it is warned about on the
//! terminal and recorded as an event of the step; with `--on-stall stop` the tool is stopped
//! and the step fails with the stall as its reason.

use std::time::{Duration, Instant};

use serde_json::json;

use crate::error::{Error, Result};
use crate::output::{Event, Progress, Reporter, Unit, Warning};
use crate::run::{RunDir, StepEvent};

use super::exec::Observer;

/// Default `--stall-timeout`: far above the loader's 10 s report period and any sane query.
pub const DEFAULT_STALL_SECS: f64 = 300.0;
/// The largest `--stall-timeout` (a week).
pub const MAX_STALL_SECS: f64 = 7.0 * 86400.0;

/// What to do when a tool stalls.
// Serialized as `as_str` (the recorded `on_stall`).
#[derive(
    Debug,
    Clone,
    Copy,
    PartialEq,
    Eq,
    Default,
    clap::ValueEnum,
    serde::Serialize,
    serde::Deserialize,
)]
#[serde(rename_all = "lowercase")]
pub enum OnStall {
    /// Warn (terminal and events) and let the tool go on.
    #[default]
    Warn,
    /// Warn, then stop the tool: the step fails with the stall as its reason.
    Stop,
}

impl OnStall {
    pub fn as_str(self) -> &'static str {
        match self {
            OnStall::Warn => "warn",
            OnStall::Stop => "stop",
        }
    }
}

/// The stall settings of one command.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct StallPolicy {
    pub timeout: Duration,
    pub on_stall: OnStall,
}

impl StallPolicy {
    /// Validates `--stall-timeout` (seconds) and applies the defaults.
    pub fn new(timeout: Option<f64>, on_stall: Option<OnStall>) -> Result<StallPolicy> {
        let secs = timeout.unwrap_or(DEFAULT_STALL_SECS);
        if !secs.is_finite() || !(1.0..=MAX_STALL_SECS).contains(&secs) {
            return Err(Error::invalid(format!(
                "--stall-timeout must be between 1 and {MAX_STALL_SECS} seconds, got {secs}"
            ))
            .with_hint(format!(
                "pass --stall-timeout SECONDS (default {DEFAULT_STALL_SECS}); the loader reports every 10 s, so keep it well above that"
            )));
        }
        Ok(StallPolicy {
            timeout: Duration::from_secs_f64(secs),
            on_stall: on_stall.unwrap_or_default(),
        })
    }

    pub fn to_json(self) -> serde_json::Value {
        json!({"timeout_seconds": self.timeout.as_secs_f64(), "on_stall": self.on_stall.as_str()})
    }
}

/// `After N queries with W workers:` (the runners' `--print-interval` block, on stderr).
pub fn parse_after_line(line: &str) -> Option<u64> {
    let rest = line.strip_prefix("After ")?;
    let (n, tail) = rest.split_once(" queries with ")?;
    tail.ends_with(" workers:").then_some(())?;
    n.parse().ok()
}

/// What a watched tool counts.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Counting {
    /// A loader: rows (metrics when the loader prints `-` for rows).
    Rows,
    /// A query runner: queries.
    Queries,
}

/// Sees one tool run: draws its progress and watches for stalls.
pub struct ToolWatch<'a> {
    run: &'a mut RunDir,
    reporter: &'a dyn Reporter,
    step: String,
    attempt: u32,
    tool: String,
    counting: Counting,
    expected: Option<u64>,
    policy: StallPolicy,
    bar: Box<dyn Progress>,
    /// The count at the last report line, and when it last grew.
    count: u64,
    last_growth: Instant,
    started: Instant,
    /// A stall was reported and progress has not resumed since.
    stalled: bool,
    /// Stall warnings so far (the step records them).
    pub stalls: u32,
    /// An event could not be written (reported once, at the end).
    pub event_error: Option<Error>,
}

impl<'a> ToolWatch<'a> {
    #[allow(clippy::too_many_arguments)]
    pub fn new(
        run: &'a mut RunDir,
        reporter: &'a dyn Reporter,
        step: &str,
        attempt: u32,
        tool: &str,
        counting: Counting,
        label: &str,
        expected: Option<u64>,
        policy: StallPolicy,
    ) -> ToolWatch<'a> {
        let bar = reporter.progress(label, expected, Unit::Reported);
        bar.set_message(match counting {
            Counting::Rows => "rows, waiting for the loader's first report".into(),
            Counting::Queries => "queries".into(),
        });
        let now = Instant::now();
        ToolWatch {
            run,
            reporter,
            step: step.to_string(),
            attempt,
            tool: tool.to_string(),
            counting,
            expected,
            policy,
            bar,
            count: 0,
            last_growth: now,
            started: now,
            stalled: false,
            stalls: 0,
            event_error: None,
        }
    }

    fn advance(&mut self, count: u64, rate: Option<f64>) {
        if count > self.count {
            self.count = count;
            self.last_growth = Instant::now();
            if self.stalled {
                self.stalled = false;
                let resumed = Event::ProgressResumed {
                    tool: self.tool.to_string(),
                    count,
                    unit: self.unit().to_string(),
                };
                self.reporter.event(&resumed);
                let msg = resumed.to_string();
                self.record("resumed", &msg);
            }
        }
        self.bar.set_position(count);
        let unit = self.unit();
        let mut msg = unit.to_string();
        if let Some(r) = rate.filter(|r| *r > 0.0) {
            msg.push_str(&format!(", {} {unit}/s", crate::output::fmt_rate(r)));
            if let Some(left) = self.expected.map(|e| e.saturating_sub(count)) {
                let eta = Duration::from_secs_f64(left as f64 / r);
                msg.push_str(&format!(", eta {}", crate::output::fmt_duration(eta)));
            }
        }
        self.bar.set_message(msg);
    }

    fn unit(&self) -> &'static str {
        match self.counting {
            Counting::Rows => "rows",
            Counting::Queries => "queries",
        }
    }

    fn record(&mut self, what: &str, msg: &str) {
        let e = StepEvent {
            seq: 0,
            step: self.step.clone(),
            attempt: self.attempt,
            status: crate::run::Status::Running,
            at: crate::manifest::now_rfc3339(),
            log: None,
            results: None,
            reason: None,
            data: Some(json!({
                "stall": {
                    "event": what,
                    "message": msg,
                    "count": self.count,
                    "seconds_without_progress": self.last_growth.elapsed().as_secs_f64().round(),
                    "policy": self.policy.to_json(),
                }
            })),
        };
        if let Err(err) = self.run.event(e) {
            self.event_error.get_or_insert(err);
        }
    }
}

impl Observer for ToolWatch<'_> {
    fn line(&mut self, line: &str) {
        match self.counting {
            Counting::Rows => {
                if let Some(p) = crate::tsbs::load::parse_progress_line(line) {
                    let (total, rate) = match (p.rows_total, p.overall_rows_per_second) {
                        (Some(t), r) => (t, r),
                        // Without rows the loader counts metrics only: still progress.
                        (None, _) => (p.metrics_total, None),
                    };
                    self.advance(total.max(0.0) as u64, rate);
                }
            }
            Counting::Queries => {
                if let Some(n) = parse_after_line(line) {
                    let rate = self.started.elapsed().as_secs_f64();
                    self.advance(n, (rate > 0.0).then(|| n as f64 / rate));
                }
            }
        }
    }

    fn tick(&mut self) -> Option<String> {
        let quiet = self.last_growth.elapsed();
        if self.stalled || quiet < self.policy.timeout {
            return None;
        }
        self.stalled = true;
        self.stalls += 1;
        let secs = quiet.as_secs();
        let warning = Warning::Stalled {
            tool: self.tool.to_string(),
            seconds: secs,
            count: self.count,
            unit: self.unit().to_string(),
            stopped: self.policy.on_stall == OnStall::Stop,
        };
        self.reporter.warning(&warning);
        let msg = warning.to_string();
        self.record("stalled", &msg);
        match self.policy.on_stall {
            OnStall::Warn => None,
            OnStall::Stop => Some(msg),
        }
    }

    fn done(&mut self) {
        self.bar.finish();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn after_lines_of_the_real_runner() {
        assert_eq!(
            parse_after_line("After 100 queries with 1 workers:"),
            Some(100)
        );
        assert_eq!(
            parse_after_line("After 7 queries with 12 workers:"),
            Some(7)
        );
        assert_eq!(parse_after_line("Run complete after 10 queries with 1 workers (Overall query rate 20.28 queries/sec):"), None);
        assert_eq!(parse_after_line("After x queries with 1 workers:"), None);
    }

    #[test]
    fn stall_timeout_is_validated() {
        assert_eq!(
            StallPolicy::new(None, None).unwrap().timeout,
            Duration::from_secs(300)
        );
        for bad in [0.0, 0.5, -3.0, f64::NAN, f64::INFINITY, 1e9] {
            let e = StallPolicy::new(Some(bad), None).unwrap_err();
            assert_eq!(e.exit_code(), 2, "{bad}");
            assert!(e.message.contains("--stall-timeout"));
        }
        let p = StallPolicy::new(Some(2.0), Some(OnStall::Stop)).unwrap();
        assert_eq!(p.to_json()["on_stall"], "stop");
    }
}
