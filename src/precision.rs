//! `--target-precision`: a query type's batches pooled into one sample, the 95% interval of
//! its mean, and how many more queries the next batch should hold (issue 24 §6).
//!
//! Each batch's runner reports its count, mean and standard deviation (the runner's, over
//! its batch: a population deviation, as the runner's histogram gives it); the batches pool
//! exactly (Chan's parallel formula), so the interval is Student's t over every query of the
//! type: `mean ± t(0.975, n-1) · s / √n`. Stopping when it is narrow enough is a sequential
//! rule, which makes the stated 95% a little optimistic; the README says so.

use serde::{Deserialize, Serialize};

/// The queries of one type (one pass) so far.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
pub struct Pooled {
    pub count: u64,
    pub mean_ms: f64,
    /// The sum of squared deviations from the mean.
    pub m2: f64,
}

/// The most batches of one type in one pass (each one runner start and, the first time, one
/// generator run): bounds the work when every batch is tiny.
pub const MAX_BATCHES: u32 = 20;

impl Pooled {
    /// Adds a batch of `count` queries with mean `mean_ms` and (population) deviation
    /// `stddev_ms`.
    pub fn add(&mut self, count: u64, mean_ms: f64, stddev_ms: f64) {
        if count == 0 {
            return;
        }
        let (na, nb) = (self.count as f64, count as f64);
        let n = na + nb;
        let delta = mean_ms - self.mean_ms;
        self.mean_ms += delta * nb / n;
        self.m2 += stddev_ms * stddev_ms * nb + delta * delta * na * nb / n;
        self.count += count;
    }

    /// The sample standard deviation (`None` below two queries).
    pub fn stddev_ms(&self) -> Option<f64> {
        (self.count >= 2).then(|| (self.m2 / (self.count - 1) as f64).sqrt())
    }

    /// The half-width of the 95% interval of the mean, as a fraction of the mean (`None`
    /// below two queries or at a zero mean).
    pub fn half_width(&self) -> Option<f64> {
        let s = self.stddev_ms()?;
        if self.mean_ms <= 0.0 {
            return None;
        }
        let t = crate::noise::t_quantile(0.975, (self.count - 1) as f64);
        Some(t * s / (self.count as f64).sqrt() / self.mean_ms)
    }

    pub fn reached(&self, target: f64) -> bool {
        self.half_width().is_some_and(|h| h <= target)
    }

    /// The size of the next batch: the queries the current spread says are still needed for
    /// `target` (with a tenth more), at least `min`, at most three times what ran so far.
    pub fn next_batch(&self, target: f64, min: u64) -> u64 {
        let need = match (self.stddev_ms(), self.mean_ms > 0.0) {
            (Some(s), true) => {
                let cv = s / self.mean_ms;
                ((1.96 * cv / target).powi(2) * 1.1).ceil() as u64
            }
            _ => 0,
        };
        need.saturating_sub(self.count)
            .max(min.max(2))
            .min((3 * self.count).max(min.max(2)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn batches_pool_exactly() {
        let xs = [10.0, 12.0, 11.0, 30.0, 9.0, 14.0, 13.0];
        let pop = |v: &[f64]| {
            let m = v.iter().sum::<f64>() / v.len() as f64;
            let var = v.iter().map(|x| (x - m).powi(2)).sum::<f64>() / v.len() as f64;
            (m, var.sqrt())
        };
        let mut p = Pooled::default();
        for part in [&xs[..3], &xs[3..4], &xs[4..]] {
            let (m, s) = pop(part);
            p.add(part.len() as u64, m, s);
        }
        let m = xs.iter().sum::<f64>() / 7.0;
        let s = (xs.iter().map(|x| (x - m).powi(2)).sum::<f64>() / 6.0).sqrt();
        assert_eq!(p.count, 7);
        assert!((p.mean_ms - m).abs() < 1e-9);
        assert!((p.stddev_ms().unwrap() - s).abs() < 1e-9);
        let t = crate::noise::t_quantile(0.975, 6.0);
        assert!((p.half_width().unwrap() - t * s / 7f64.sqrt() / m).abs() < 1e-12);
    }

    #[test]
    fn the_next_batch_follows_the_spread_within_bounds() {
        let mut p = Pooled::default();
        p.add(10, 100.0, 50.0);
        // cv ≈ 0.53: (1.96·0.53/0.02)² · 1.1 ≈ 2900, capped at three times the 10 so far.
        assert_eq!(p.next_batch(0.02, 10), 30);
        let mut steady = Pooled::default();
        steady.add(10, 100.0, 1.0);
        assert!(steady.reached(0.02));
        // Nearly there: the floor of one batch's worth.
        assert_eq!(steady.next_batch(0.015, 10), 10);
        assert_eq!(Pooled::default().half_width(), None);
    }
}
