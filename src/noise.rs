//! Is a latency difference between two runs outside their noise? Welch's two-sample t-test on
//! the runs' own summary statistics (count, mean, standard deviation of each run's queries),
//! giving the 95% confidence interval of the difference of means. Welch's variant does not
//! assume equal variances, which two builds or two servers rarely have.
//!
//! The runners' means are HDR-histogram means (bucket medians, reference tsbs.md §3), close to
//! the arithmetic mean at the µs resolution TSBS records; the log's `stddev` is the runner's
//! own. Queries within a type are not independent samples in the strict sense (same cache,
//! same server); the interval is the usual practical answer, not a guarantee.

use serde_json::{json, Value};

/// The confidence level of the interval.
pub const LEVEL: f64 = 0.95;

/// One run's statistics of one query type.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Sample {
    pub count: u64,
    pub mean: f64,
    pub stddev: f64,
}

impl Sample {
    /// From a summary's query entry (`query_count`, `mean_ms`, `stddev_ms`); `None` when a
    /// number is missing.
    pub fn from_summary(q: &Value) -> Option<Sample> {
        Sample::new(
            q["query_count"].as_u64()?,
            q["mean_ms"].as_f64()?,
            q["stddev_ms"].as_f64()?,
        )
    }

    /// `None` unless mean and stddev are finite and the stddev is not negative.
    pub fn new(count: u64, mean: f64, stddev: f64) -> Option<Sample> {
        let s = Sample {
            count,
            mean,
            stddev,
        };
        (s.mean.is_finite() && s.stddev.is_finite() && s.stddev >= 0.0).then_some(s)
    }
}

/// The interval of `candidate - baseline` and whether it excludes zero.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Welch {
    pub difference: f64,
    pub low: f64,
    pub high: f64,
    pub degrees_of_freedom: Option<f64>,
}

impl Welch {
    /// Zero lies outside the interval: the difference is not noise.
    pub fn significant(&self) -> bool {
        self.low > 0.0 || self.high < 0.0
    }

    pub fn to_json(self, baseline_mean: f64) -> Value {
        let pct = |x: f64| (baseline_mean != 0.0).then(|| x / baseline_mean * 100.0);
        json!({
            "test": "welch_t",
            "level": LEVEL,
            "difference_ms": self.difference,
            "interval_ms": [self.low, self.high],
            "interval_percent": match (pct(self.low), pct(self.high)) {
                (Some(a), Some(b)) => json!([a, b]),
                _ => Value::Null,
            },
            "degrees_of_freedom": self.degrees_of_freedom,
            "outside_noise": self.significant(),
        })
    }
}

/// Welch's interval for `c.mean - b.mean`; `None` when either run has fewer than two queries
/// (no spread to measure).
pub fn welch(b: Sample, c: Sample) -> Option<Welch> {
    if b.count < 2 || c.count < 2 {
        return None;
    }
    let (nb, nc) = (b.count as f64, c.count as f64);
    let (vb, vc) = (b.stddev * b.stddev / nb, c.stddev * c.stddev / nc);
    let d = c.mean - b.mean;
    let se = (vb + vc).sqrt();
    if se == 0.0 {
        // No spread in either run: the difference is exact.
        return Some(Welch {
            difference: d,
            low: d,
            high: d,
            degrees_of_freedom: None,
        });
    }
    let df = (vb + vc).powi(2) / (vb * vb / (nb - 1.0) + vc * vc / (nc - 1.0));
    let t = t_quantile(1.0 - (1.0 - LEVEL) / 2.0, df);
    Some(Welch {
        difference: d,
        low: d - t * se,
        high: d + t * se,
        degrees_of_freedom: Some(df),
    })
}

/// The `p` quantile (p > 0.5) of Student's t with `df` degrees of freedom, by bisection.
pub fn t_quantile(p: f64, df: f64) -> f64 {
    let (mut lo, mut hi) = (0.0f64, 1.0e4f64);
    for _ in 0..200 {
        let mid = (lo + hi) / 2.0;
        if t_cdf(mid, df) < p {
            lo = mid;
        } else {
            hi = mid;
        }
    }
    (lo + hi) / 2.0
}

/// Student's t CDF for `t >= 0`.
fn t_cdf(t: f64, df: f64) -> f64 {
    let x = df / (df + t * t);
    1.0 - 0.5 * inc_beta(df / 2.0, 0.5, x)
}

/// The regularized incomplete beta function I_x(a, b) (continued fraction, Lentz).
fn inc_beta(a: f64, b: f64, x: f64) -> f64 {
    if x <= 0.0 {
        return 0.0;
    }
    if x >= 1.0 {
        return 1.0;
    }
    let front =
        (ln_gamma(a + b) - ln_gamma(a) - ln_gamma(b) + a * x.ln() + b * (1.0 - x).ln()).exp();
    if x < (a + 1.0) / (a + b + 2.0) {
        front * beta_cf(a, b, x) / a
    } else {
        1.0 - front * beta_cf(b, a, 1.0 - x) / b
    }
}

fn beta_cf(a: f64, b: f64, x: f64) -> f64 {
    const TINY: f64 = 1e-300;
    let (qab, qap, qam) = (a + b, a + 1.0, a - 1.0);
    let mut c = 1.0;
    let mut d = 1.0 - qab * x / qap;
    if d.abs() < TINY {
        d = TINY;
    }
    d = 1.0 / d;
    let mut h = d;
    for m in 1..300 {
        let m = m as f64;
        let m2 = 2.0 * m;
        let aa = m * (b - m) * x / ((qam + m2) * (a + m2));
        d = 1.0 + aa * d;
        d = if d.abs() < TINY { TINY } else { d };
        c = 1.0 + aa / c;
        c = if c.abs() < TINY { TINY } else { c };
        d = 1.0 / d;
        h *= d * c;
        let aa = -(a + m) * (qab + m) * x / ((a + m2) * (qap + m2));
        d = 1.0 + aa * d;
        d = if d.abs() < TINY { TINY } else { d };
        c = 1.0 + aa / c;
        c = if c.abs() < TINY { TINY } else { c };
        d = 1.0 / d;
        let del = d * c;
        h *= del;
        if (del - 1.0).abs() < 1e-14 {
            break;
        }
    }
    h
}

/// ln Γ(x) for x > 0 (Lanczos, g = 7).
fn ln_gamma(x: f64) -> f64 {
    const G: [f64; 9] = [
        0.999_999_999_999_809_9,
        676.520_368_121_885_1,
        -1_259.139_216_722_402_8,
        771.323_428_777_653_1,
        -176.615_029_162_140_6,
        12.507_343_278_686_905,
        -0.138_571_095_265_720_12,
        9.984_369_578_019_572e-6,
        1.505_632_735_149_311_6e-7,
    ];
    if x < 0.5 {
        let pi = std::f64::consts::PI;
        return (pi / (pi * x).sin()).ln() - ln_gamma(1.0 - x);
    }
    let x = x - 1.0;
    let mut a = G[0];
    let t = x + 7.5;
    for (i, g) in G.iter().enumerate().skip(1) {
        a += g / (x + i as f64);
    }
    0.5 * (2.0 * std::f64::consts::PI).ln() + (x + 0.5) * t.ln() - t + a.ln()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn t_quantiles_match_the_tables() {
        // Two-sided 95% critical values.
        for (df, want) in [
            (1.0, 12.706),
            (2.0, 4.303),
            (5.0, 2.571),
            (9.0, 2.262),
            (30.0, 2.042),
            (1e6, 1.960),
        ] {
            let got = t_quantile(0.975, df);
            assert!((got - want).abs() < 2e-3, "df {df}: {got} vs {want}");
        }
    }

    #[test]
    fn welch_interval_of_a_known_example() {
        // b: n=10 mean 20 sd 2; c: n=10 mean 22 sd 2 → se = 0.894, df = 18, t = 2.101.
        let w = welch(
            Sample {
                count: 10,
                mean: 20.0,
                stddev: 2.0,
            },
            Sample {
                count: 10,
                mean: 22.0,
                stddev: 2.0,
            },
        )
        .unwrap();
        assert!((w.degrees_of_freedom.unwrap() - 18.0).abs() < 1e-9);
        assert!((w.low - (2.0 - 2.101 * 0.8944)).abs() < 5e-3, "{w:?}");
        assert!(w.significant());
        // Same means within their spread: noise.
        let n = welch(
            Sample {
                count: 10,
                mean: 20.0,
                stddev: 5.0,
            },
            Sample {
                count: 10,
                mean: 21.5,
                stddev: 5.0,
            },
        )
        .unwrap();
        assert!(!n.significant(), "{n:?}");
        assert!(welch(
            Sample {
                count: 1,
                mean: 1.0,
                stddev: 0.0
            },
            Sample {
                count: 10,
                mean: 2.0,
                stddev: 1.0
            }
        )
        .is_none());
        let exact = welch(
            Sample {
                count: 3,
                mean: 0.0,
                stddev: 0.0,
            },
            Sample {
                count: 3,
                mean: 2.0,
                stddev: 0.0,
            },
        )
        .unwrap();
        assert!(exact.significant());
    }
}
