//! Is a latency difference between two runs outside their noise? A model of three levels:
//! queries within a pass, passes within a run, runs. `runs compare` has one run per side, so
//! the top level cannot be measured: it is assumed ([`run_drift`], [`RUN_DRIFT`]) and added to
//! what the passes and queries show.
//!
//! * [`PassLevel`]: two passes or more on both sides. Passes are the replicates: Welch's t on
//!   the logs of the passes' means, plus the drift's variance.
//! * The bootstrap of [`Bootstrap`], when a side ran one pass: the ratio of mean latencies
//!   (candidate / baseline) of one query type, resampled [`RESAMPLES`] times with a fixed seed
//!   (deterministic). Where both runs have per-query latencies (the runner's `--debug=1`
//!   lines, one worker, so line k is query k of the file), queries are paired by their index
//!   in the shared file: one draw of query indices serves both runs, and each run's passes are
//!   drawn with replacement too; then each draw is moved by the two runs' drifts
//!   ([`Bootstrap::with_drift`]): a hierarchical bootstrap whose top level is parametric.
//! * [`welch_log_ratio`]: Welch's test on the logs of the runs' summary statistics (count,
//!   mean, standard deviation) plus the drift: one pass without per-query latencies (older
//!   runs, TimescaleDB's runner, several workers).
//!
//! Each gives, for a level, an interval of the ratio and a p-value whose test agrees with it
//! exactly (the interval at level 1 - a excludes 1 iff p <= a), so that [`holm`] can pick each
//! type's level and the verdict can be read off the interval.
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

/// Bootstrap resamples per query type: enough for the tail Holm needs with 15 types
/// (0.05 / 15 / 2 of 10,000 is 16 resamples beyond each bound).
pub const RESAMPLES: usize = 10_000;
/// The seed of every bootstrap (mixed with the query type's name): the same runs give the
/// same intervals on every machine and every time.
pub const SEED: u64 = 0x7473_6273_6374_6c31;

/// SplitMix64: small, fast, and the same sequence everywhere (no crate's version to pin).
#[derive(Debug, Clone)]
pub struct Rng(u64);

impl Rng {
    pub fn new(seed: u64) -> Rng {
        Rng(seed)
    }
    /// A seed of [`SEED`] and `name` (FNV-1a), so types draw independent sequences.
    pub fn for_name(name: &str) -> Rng {
        let mut h: u64 = 0xcbf2_9ce4_8422_2325;
        for b in name.bytes() {
            h = (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3);
        }
        Rng(SEED ^ h)
    }
    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }
    /// Uniform in `0..n` (`n > 0`; Lemire's multiply-shift, bias below 2^-40 for our n).
    pub fn below(&mut self, n: usize) -> usize {
        ((u128::from(self.next_u64()) * n as u128) >> 64) as usize
    }
}

/// What one side of a comparison brings to the bootstrap.
#[derive(Debug, Clone, PartialEq)]
pub enum Observations {
    /// Per pass, every query's latency in file order (all passes of equal length).
    Queries(Vec<Vec<f64>>),
    /// Per pass, the mean latency only.
    PassMeans(Vec<f64>),
}

/// The bootstrap distribution of the ratio of means (candidate / baseline), sorted.
#[derive(Debug, Clone, PartialEq)]
pub struct Bootstrap {
    /// `bootstrap_paired_queries` or `bootstrap_pass_means`.
    pub method: &'static str,
    /// The ratio of the observed means.
    pub estimate: f64,
    pub sorted: Vec<f64>,
    /// Queries paired by index (0 for pass means).
    pub paired_queries: usize,
    /// Passes of the baseline and of the candidate.
    pub passes: [usize; 2],
    /// Pass means paired by pass number.
    pub paired_passes: bool,
    /// The run-to-run drift folded into the draws ([`Bootstrap::with_drift`]).
    pub drift: f64,
}

fn mean(x: &[f64]) -> f64 {
    x.iter().sum::<f64>() / x.len() as f64
}

impl Bootstrap {
    /// The bootstrap of `c` against `b`, `resamples` draws from `rng`; `None` when the two
    /// cannot be paired or hold no spread to resample (one pass of means on a side), or a
    /// baseline mean is not positive.
    pub fn new(
        b: &Observations,
        c: &Observations,
        resamples: usize,
        rng: &mut Rng,
    ) -> Option<Bootstrap> {
        use Observations::*;
        let (method, estimate, mut draws, paired_queries, passes, paired_passes) = match (b, c) {
            (Queries(bq), Queries(cq)) => {
                let n = bq.first()?.len();
                if n == 0 || bq.iter().chain(cq).any(|p| p.len() != n) || cq.is_empty() {
                    return None;
                }
                let all = |x: &[Vec<f64>]| x.iter().map(|p| mean(p)).sum::<f64>() / x.len() as f64;
                let est = all(cq) / all(bq);
                let mut draws = Vec::with_capacity(resamples);
                let (mut pb, mut pc) = (vec![0usize; bq.len()], vec![0usize; cq.len()]);
                for _ in 0..resamples {
                    for p in pb.iter_mut() {
                        *p = rng.below(bq.len());
                    }
                    for p in pc.iter_mut() {
                        *p = rng.below(cq.len());
                    }
                    let (mut sb, mut sc) = (0.0, 0.0);
                    // One draw of query indices for both runs: the pairing.
                    for _ in 0..n {
                        let i = rng.below(n);
                        sb += pb.iter().map(|&p| bq[p][i]).sum::<f64>();
                        sc += pc.iter().map(|&p| cq[p][i]).sum::<f64>();
                    }
                    draws.push((sc / pc.len() as f64) / (sb / pb.len() as f64));
                }
                (
                    "bootstrap_paired_queries",
                    est,
                    draws,
                    n,
                    [bq.len(), cq.len()],
                    false,
                )
            }
            (PassMeans(bm), PassMeans(cm)) => {
                if bm.len() < 2 || cm.len() < 2 {
                    return None;
                }
                let est = mean(cm) / mean(bm);
                let paired = bm.len() == cm.len();
                let mut draws = Vec::with_capacity(resamples);
                for _ in 0..resamples {
                    let (mut sb, mut sc) = (0.0, 0.0);
                    if paired {
                        for _ in 0..bm.len() {
                            let k = rng.below(bm.len());
                            sb += bm[k];
                            sc += cm[k];
                        }
                    } else {
                        for _ in 0..bm.len() {
                            sb += bm[rng.below(bm.len())];
                        }
                        for _ in 0..cm.len() {
                            sc += cm[rng.below(cm.len())];
                        }
                    }
                    draws.push((sc / cm.len() as f64) / (sb / bm.len() as f64));
                }
                (
                    "bootstrap_pass_means",
                    est,
                    draws,
                    0,
                    [bm.len(), cm.len()],
                    paired,
                )
            }
            _ => return None,
        };
        if !estimate.is_finite() || draws.iter().any(|d| !d.is_finite()) {
            return None;
        }
        draws.sort_by(f64::total_cmp);
        Some(Bootstrap {
            method,
            estimate,
            sorted: draws,
            paired_queries,
            passes,
            paired_passes,
            drift: 0.0,
        })
    }

    /// The top level of the hierarchy, runs, which one run per side cannot resample: each
    /// draw times `exp(√2 · drift · Z)`, the two runs' drifts (normal on the log scale), so
    /// the interval holds the run-to-run drift besides what the passes and queries show.
    pub fn with_drift(mut self, drift: f64, rng: &mut Rng) -> Bootstrap {
        if drift > 0.0 {
            for d in self.sorted.iter_mut() {
                *d *= (std::f64::consts::SQRT_2 * drift * normal(rng)).exp();
            }
            self.sorted.sort_by(f64::total_cmp);
        }
        self.drift = drift;
        self
    }

    /// The percentile interval at level `1 - alpha`: the `k+1`-th smallest and largest
    /// draws, `k = floor(B alpha / 2)`.
    pub fn interval(&self, alpha: f64) -> (f64, f64) {
        let b = self.sorted.len();
        let k = ((b as f64 * alpha / 2.0).floor() as usize).min(b - 1);
        (self.sorted[k], self.sorted[b - 1 - k])
    }

    /// The two-sided p-value of "no change" that agrees with [`Self::interval`]: the
    /// interval at `1 - a` excludes 1 exactly when this is at most `a`.
    pub fn p_value(&self) -> f64 {
        let le = self.sorted.iter().filter(|&&r| r <= 1.0).count();
        let ge = self.sorted.iter().filter(|&&r| r >= 1.0).count();
        (2.0 * le.min(ge) as f64 / self.sorted.len() as f64).min(1.0)
    }
}

/// Welch's interval of the ratio `c.mean / b.mean` at level `1 - alpha` (the difference's
/// interval divided by the baseline mean) and its p-value; `None` as for [`welch`] or when the
/// baseline mean is not positive.
pub fn welch_ratio(b: Sample, c: Sample, alpha: f64) -> Option<((f64, f64), f64)> {
    let w = welch(b, c)?;
    if b.mean <= 0.0 {
        return None;
    }
    let se =
        ((b.stddev * b.stddev) / b.count as f64 + (c.stddev * c.stddev) / c.count as f64).sqrt();
    let Some(df) = w.degrees_of_freedom else {
        let p = if w.difference == 0.0 { 1.0 } else { 0.0 };
        let r = 1.0 + w.difference / b.mean;
        return Some(((r, r), p));
    };
    let t = t_quantile(1.0 - alpha / 2.0, df);
    let d = w.difference;
    let p = (2.0 * (1.0 - t_cdf(d.abs() / se, df))).clamp(0.0, 1.0);
    Some((
        (1.0 + (d - t * se) / b.mean, 1.0 + (d + t * se) / b.mean),
        p,
    ))
}

/// The run-to-run drift assumed when it cannot be measured: the standard deviation of the log
/// of a run's mean latency of a type around what the binary would give on that data (so 0.2
/// is about ±20% per run). `runs compare` always has one run per side, and a run's passes share
/// its server start, its page cache and the load the host had while it ran, so they cannot
/// show it. `scripts/bench-twins.sh` measured 18% beyond the passes on the 2-core development
/// host under the load of other builds (README, "Comparing runs"); a quiet machine sets its own.
pub const RUN_DRIFT: f64 = 0.2;
/// Overrides [`RUN_DRIFT`], in percent (0 to 100): on a quiet, pinned machine the drift a
/// dimensioning experiment measures there.
pub const RUN_DRIFT_ENV: &str = "TSBSCTL_RUN_DRIFT_PERCENT";

/// One run's mean latency of one type, on the log scale, and the variance of that log mean
/// the run itself shows (its passes' spread, or its queries' over their count).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct RunMean {
    pub log_mean: f64,
    pub within_var: f64,
}

/// The run-to-run drift measured from several runs of one setup (`runs compare --replicate`):
/// per type, the variance of the runs' log means less the mean variance each run's own log mean
/// has (what the passes or queries already explain), floored at 0; pooled over the types, each
/// weighted by its runs less one. Returns the drift and the degrees of freedom (types × (runs −
/// 1)); `None` when no type was seen by two runs.
pub fn drift_from_replicates(types: &[Vec<RunMean>]) -> Option<(f64, usize)> {
    let (mut sum, mut df) = (0.0, 0usize);
    for runs in types.iter().filter(|r| r.len() >= 2) {
        let n = runs.len() as f64;
        let mean = runs.iter().map(|r| r.log_mean).sum::<f64>() / n;
        let between = runs
            .iter()
            .map(|r| (r.log_mean - mean).powi(2))
            .sum::<f64>()
            / (n - 1.0);
        let within = runs.iter().map(|r| r.within_var).sum::<f64>() / n;
        if !(between.is_finite() && within.is_finite()) {
            continue;
        }
        sum += (between - within).max(0.0) * (n - 1.0);
        df += runs.len() - 1;
    }
    (df > 0).then(|| ((sum / df as f64).sqrt(), df))
}

/// The run-to-run drift in force: [`RUN_DRIFT_ENV`] when set, else [`RUN_DRIFT`]; `Err` with
/// the value when it is not a percentage from 0 to 100.
pub fn run_drift() -> std::result::Result<f64, String> {
    match std::env::var(RUN_DRIFT_ENV) {
        Err(_) => Ok(RUN_DRIFT),
        Ok(v) => {
            let x: f64 = v
                .trim()
                .trim_end_matches('%')
                .parse()
                .map_err(|_| v.clone())?;
            (x.is_finite() && (0.0..=100.0).contains(&x))
                .then_some(x / 100.0)
                .ok_or(v)
        }
    }
}

/// Passes as the unit of replication: the log of each pass's mean latency, the passes of the
/// baseline and of the candidate as two samples (a run's pass k has nothing to do with the
/// other run's pass k), plus the drift between the two runs that their passes cannot show
/// ([`run_drift`], one per side). The log ratio of the runs is the difference of the mean log
/// pass means; its variance is `s_b²/P_b + s_c²/P_c + 2·drift²`, and Student's t with the
/// Welch-Satterthwaite degrees of freedom of the measured part (the drift is assumed, not
/// estimated) pays for few passes (with 3 and 3 passes and no drift, 4 degrees at most).
#[derive(Debug, Clone, PartialEq)]
pub struct PassLevel {
    pub baseline: Vec<f64>,
    pub candidate: Vec<f64>,
    pub drift: f64,
}

fn log_mean_var(x: &[f64]) -> (f64, f64) {
    let n = x.len() as f64;
    let logs: Vec<f64> = x.iter().map(|v| v.ln()).collect();
    let m = logs.iter().sum::<f64>() / n;
    (
        m,
        logs.iter().map(|l| (l - m).powi(2)).sum::<f64>() / (n - 1.0),
    )
}

impl PassLevel {
    /// `None` unless both sides have two passes or more, every mean positive and finite.
    pub fn new(baseline: Vec<f64>, candidate: Vec<f64>, drift: f64) -> Option<PassLevel> {
        let ok = |x: &[f64]| x.len() >= 2 && x.iter().all(|r| r.is_finite() && *r > 0.0);
        (ok(&baseline) && ok(&candidate) && drift.is_finite() && drift >= 0.0).then_some(
            PassLevel {
                baseline,
                candidate,
                drift,
            },
        )
    }

    /// The log ratio, its standard error and the degrees of freedom.
    fn stats(&self) -> (f64, f64, f64) {
        let (nb, nc) = (self.baseline.len() as f64, self.candidate.len() as f64);
        let (mb, sb) = log_mean_var(&self.baseline);
        let (mc, sc) = log_mean_var(&self.candidate);
        let (vb, vc) = (sb / nb, sc / nc);
        let v = vb + vc + 2.0 * self.drift * self.drift;
        let measured = vb * vb / (nb - 1.0) + vc * vc / (nc - 1.0);
        let df = if measured > 0.0 {
            (v * v / measured).min(1e6)
        } else {
            1e6
        };
        (mc - mb, v.sqrt(), df)
    }

    /// The ratio of the geometric means of the passes' means.
    pub fn estimate(&self) -> f64 {
        self.stats().0.exp()
    }

    pub fn degrees_of_freedom(&self) -> f64 {
        self.stats().2
    }

    /// The interval of the ratio at level `1 - alpha`.
    pub fn interval(&self, alpha: f64) -> (f64, f64) {
        let (m, se, df) = self.stats();
        let t = t_quantile(1.0 - alpha / 2.0, df);
        ((m - t * se).exp(), (m + t * se).exp())
    }

    /// The two-sided p-value of "no change" (the interval at `1 - p` just touches 1).
    pub fn p_value(&self) -> f64 {
        let (m, se, df) = self.stats();
        if se == 0.0 {
            return if m == 0.0 { 1.0 } else { 0.0 };
        }
        (2.0 * (1.0 - t_cdf(m.abs() / se, df))).clamp(0.0, 1.0)
    }
}

/// Welch's test on the logs, with the run-to-run drift: the log of `c.mean / b.mean`, the
/// standard errors of the two means relative to them (the delta method), plus `2·drift²`.
/// Its interval of the ratio at level `1 - alpha` and its p-value; `None` as for [`welch`]
/// or when a mean is not positive.
pub fn welch_log_ratio(b: Sample, c: Sample, drift: f64, alpha: f64) -> Option<((f64, f64), f64)> {
    welch(b, c)?;
    if b.mean <= 0.0 || c.mean <= 0.0 {
        return None;
    }
    let (nb, nc) = (b.count as f64, c.count as f64);
    let vb = (b.stddev / b.mean).powi(2) / nb;
    let vc = (c.stddev / c.mean).powi(2) / nc;
    let v = vb + vc + 2.0 * drift * drift;
    let m = (c.mean / b.mean).ln();
    if v == 0.0 {
        let r = c.mean / b.mean;
        return Some(((r, r), if m == 0.0 { 1.0 } else { 0.0 }));
    }
    let measured = vb * vb / (nb - 1.0) + vc * vc / (nc - 1.0);
    let df = if measured > 0.0 {
        (v * v / measured).min(1e6)
    } else {
        1e6
    };
    let (se, t) = (v.sqrt(), t_quantile(1.0 - alpha / 2.0, df));
    let p = (2.0 * (1.0 - t_cdf(m.abs() / se, df))).clamp(0.0, 1.0);
    Some((((m - t * se).exp(), (m + t * se).exp()), p))
}

/// A standard normal draw (Box-Muller) from `rng`.
pub fn normal(rng: &mut Rng) -> f64 {
    // Uniforms in (0, 1]: 53 random bits, never 0 (the log below).
    let u = |r: &mut Rng| ((r.next_u64() >> 11) + 1) as f64 / (1u64 << 53) as f64;
    let (u1, u2) = (u(rng), u(rng));
    (-2.0 * u1.ln()).sqrt() * (2.0 * std::f64::consts::PI * u2).cos()
}

/// Holm's step-down correction of `p` at family level `alpha`: per hypothesis, whether it is
/// rejected, the level its interval is to be taken at, and its adjusted p-value. The k-th
/// smallest p (from 0) is tested at `alpha / (m - k)` while the earlier ones were rejected;
/// from the first that is not, every later one keeps that step's level, so an interval at its
/// level excludes "no change" exactly when Holm rejects.
pub fn holm(p: &[f64], alpha: f64) -> Vec<(bool, f64, f64)> {
    let m = p.len();
    let mut order: Vec<usize> = (0..m).collect();
    order.sort_by(|&a, &b| p[a].total_cmp(&p[b]).then(a.cmp(&b)));
    let mut out = vec![(false, alpha, 1.0); m];
    let mut stopped: Option<f64> = None;
    let mut adjusted_max: f64 = 0.0;
    for (k, &i) in order.iter().enumerate() {
        let step = alpha / (m - k) as f64;
        adjusted_max = adjusted_max.max(((m - k) as f64 * p[i]).min(1.0));
        let level = match stopped {
            Some(l) => l,
            None if p[i] <= step => step,
            None => {
                stopped = Some(step);
                step
            }
        };
        out[i] = (stopped.is_none(), level, adjusted_max);
    }
    out
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
mod drift_tests {
    use super::*;

    fn run(mean: f64, within_var: f64) -> RunMean {
        RunMean {
            log_mean: mean.ln(),
            within_var,
        }
    }

    #[test]
    fn replicates_measure_the_drift_beyond_what_each_run_explains() {
        // Two runs 20% apart on every type, each run's own noise negligible: the runs' log
        // means differ by ln 1.2, whose sample variance over two runs is (ln 1.2)^2 / 2.
        let types: Vec<Vec<RunMean>> = (0..15)
            .map(|_| vec![run(10.0, 0.0), run(12.0, 0.0)])
            .collect();
        let (d, df) = drift_from_replicates(&types).unwrap();
        assert_eq!(df, 15);
        assert!((d - 1.2f64.ln() / 2f64.sqrt()).abs() < 1e-12, "{d}");
        // The same spread, all of it explained by each run's own noise: no drift.
        let noisy: Vec<Vec<RunMean>> = (0..15)
            .map(|_| vec![run(10.0, 0.05), run(12.0, 0.05)])
            .collect();
        assert_eq!(drift_from_replicates(&noisy).unwrap().0, 0.0);
        // Identical runs: none.
        let same = vec![vec![run(10.0, 0.0), run(10.0, 0.0)]];
        assert_eq!(drift_from_replicates(&same).unwrap().0, 0.0);
        // One run of each type: nothing to measure.
        assert!(drift_from_replicates(&[vec![run(10.0, 0.0)]]).is_none());
    }
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

    fn boot(sorted: Vec<f64>) -> Bootstrap {
        Bootstrap {
            method: "test",
            estimate: 1.0,
            sorted,
            paired_queries: 0,
            passes: [1, 1],
            paired_passes: false,
            drift: 0.0,
        }
    }

    #[test]
    fn percentile_intervals_and_p_values_agree_by_hand() {
        // 0.91, 0.92, ..., 1.10: k = floor(20 * 0.1 / 2) = 1 -> the 2nd smallest and largest.
        let b = boot((91..=110).map(|i| f64::from(i) / 100.0).collect());
        let (lo, hi) = b.interval(0.1);
        assert!((lo - 0.92).abs() < 1e-12 && (hi - 1.09).abs() < 1e-12);
        // 10 draws <= 1, 11 >= 1: p = 2 * 10 / 20 = 1.
        assert_eq!(b.p_value(), 1.0);
        // 0.99, 1.00, 1.01 ... 1.18: 2 draws <= 1, so p = 2 * 2 / 20 = 0.2; the interval at
        // 1 - 0.2 excludes 1 (k = 2: 1.01), at 1 - 0.19 it does not (k = 1: 1.00).
        let mut v = vec![0.99, 1.0];
        v.extend((101..=118).map(|i| f64::from(i) / 100.0));
        let b = boot(v);
        assert!((b.p_value() - 0.2).abs() < 1e-12);
        assert!(b.interval(0.2).0 > 1.0);
        assert!(b.interval(0.19).0 <= 1.0);
        let b = boot((101..=120).map(|i| f64::from(i) / 100.0).collect());
        assert_eq!(b.p_value(), 0.0);
        assert_eq!(b.interval(0.05), (1.01, 1.2));
    }

    #[test]
    fn pairing_by_query_index_cancels_the_spread_between_queries() {
        use Observations::*;
        // Every query twice as slow: whatever indices are drawn, the ratio is exactly 2,
        // although the queries differ threefold among themselves.
        let b = Queries(vec![vec![1.0, 2.0, 3.0], vec![1.0, 2.0, 3.0]]);
        let c = Queries(vec![vec![2.0, 4.0, 6.0]]);
        let x = Bootstrap::new(&b, &c, 500, &mut Rng::new(1)).unwrap();
        assert_eq!(x.method, "bootstrap_paired_queries");
        assert_eq!((x.estimate, x.interval(0.05)), (2.0, (2.0, 2.0)));
        assert_eq!((x.paired_queries, x.passes), (3, [2, 1]));
        assert_eq!(x.p_value(), 0.0);
        // Pass means paired by pass number: 10, 20 against 12, 24 is +20% in every draw.
        let x = Bootstrap::new(
            &PassMeans(vec![10.0, 20.0]),
            &PassMeans(vec![12.0, 24.0]),
            500,
            &mut Rng::new(1),
        )
        .unwrap();
        assert!(x.paired_passes);
        let (lo, hi) = x.interval(0.05);
        assert!(
            (lo - 1.2).abs() < 1e-12 && (hi - 1.2).abs() < 1e-12,
            "{lo} {hi}"
        );
        // One pass of means holds no spread; unequal query counts cannot be paired.
        assert!(Bootstrap::new(
            &PassMeans(vec![1.0]),
            &PassMeans(vec![1.0, 2.0]),
            10,
            &mut Rng::new(1)
        )
        .is_none());
        assert!(Bootstrap::new(
            &Queries(vec![vec![1.0]]),
            &Queries(vec![vec![1.0, 2.0]]),
            10,
            &mut Rng::new(1)
        )
        .is_none());
        // Seeded: the same inputs give the same draws.
        let noisy = |s: u64| {
            let mut r = Rng::new(s);
            Queries(vec![(0..50)
                .map(|_| 1.0 + r.below(1000) as f64 / 1000.0)
                .collect()])
        };
        let a =
            Bootstrap::new(&noisy(3), &noisy(4), 2000, &mut Rng::for_name("lastpoint")).unwrap();
        let b =
            Bootstrap::new(&noisy(3), &noisy(4), 2000, &mut Rng::for_name("lastpoint")).unwrap();
        assert_eq!(a, b);
        // Two samples of the same distribution: no change is inside the interval.
        let (lo, hi) = a.interval(0.05);
        assert!(lo < 1.0 && hi > 1.0, "{lo} {hi}");
    }

    #[test]
    fn pass_level_by_hand() {
        // ln of 10, 11, 12 against 12, 13, 14: means 2.39513 and 2.56297 (difference
        // 0.16784), variances 0.0083160 and 0.0059435, so se = sqrt(0.0027720 + 0.0019812)
        // = 0.068943; df = 0.0047532^2 / (0.0027720^2 / 2 + 0.0019812^2 / 2) = 3.892.
        let p = PassLevel::new(vec![10.0, 11.0, 12.0], vec![12.0, 13.0, 14.0], 0.0).unwrap();
        assert!(
            (p.estimate().ln() - 0.16784).abs() < 1e-4,
            "{}",
            p.estimate()
        );
        assert!((p.degrees_of_freedom() - 3.892).abs() < 1e-2);
        let t = t_quantile(0.975, p.degrees_of_freedom());
        let (lo, hi) = p.interval(0.05);
        assert!((lo.ln() - (0.16784 - t * 0.068943)).abs() < 1e-3, "{lo}");
        assert!((hi.ln() - (0.16784 + t * 0.068943)).abs() < 1e-3, "{hi}");
        assert!(p.interval(p.p_value() * 0.999).0 < 1.0 && p.interval(p.p_value() * 1.001).0 > 1.0);
        // Passes that agree closely but differ between the runs by 17% (what one run per
        // side cannot tell from drift): outside the noise of the passes alone, inside it
        // with the assumed drift.
        let b = vec![10.0, 10.1, 9.9];
        let c = vec![8.3, 8.35, 8.25];
        assert!(PassLevel::new(b.clone(), c.clone(), 0.0).unwrap().p_value() < 0.001);
        let with = PassLevel::new(b.clone(), c.clone(), RUN_DRIFT).unwrap();
        let (lo, hi) = with.interval(0.05);
        assert!(lo < 1.0 && hi > 1.0, "{lo} {hi}");
        // The drift widens, it does not hide: ten times slower is outside it.
        let slow: Vec<f64> = b.iter().map(|x| x * 10.0).collect();
        assert!(
            PassLevel::new(b.clone(), slow, RUN_DRIFT)
                .unwrap()
                .interval(0.001)
                .0
                > 2.0
        );
        assert!(PassLevel::new(vec![1.0], vec![1.0, 2.0], 0.0).is_none());
        assert!(PassLevel::new(vec![1.0, 0.0], vec![1.0, 2.0], 0.0).is_none());
    }

    #[test]
    fn drift_widens_the_bootstrap_and_welch() {
        use Observations::*;
        // Every query 17% faster, exactly: an interval of one point without drift.
        let b = Queries(vec![vec![1.0, 2.0, 3.0]]);
        let c = Queries(vec![vec![0.83, 1.66, 2.49]]);
        let x = Bootstrap::new(&b, &c, 4000, &mut Rng::new(1)).unwrap();
        assert!(x.interval(0.05).1 < 1.0);
        let x = x.with_drift(RUN_DRIFT, &mut Rng::new(2));
        let (lo, hi) = x.interval(0.05);
        assert!(lo < 1.0 && hi > 1.0, "{lo} {hi}");
        // exp(±1.96 · √2 · drift) around 0.83.
        assert!(
            (lo - 0.83 * (-1.96f64 * 2f64.sqrt() * RUN_DRIFT).exp()).abs() < 0.02,
            "{lo}"
        );
        assert_eq!(x.drift, RUN_DRIFT);
        let s = |mean| Sample {
            count: 1000,
            mean,
            stddev: 1.0,
        };
        let ((lo, _), p) = welch_log_ratio(s(10.0), s(8.3), 0.0, 0.05).unwrap();
        assert!(p < 1e-6 && lo < 0.83);
        let ((lo, hi), p) = welch_log_ratio(s(10.0), s(8.3), RUN_DRIFT, 0.05).unwrap();
        assert!(p > 0.05 && lo < 1.0 && hi > 1.0, "{lo} {hi} {p}");
        assert!(welch_log_ratio(s(0.0), s(8.3), RUN_DRIFT, 0.05).is_none());
    }

    #[test]
    fn normal_draws_have_mean_0_and_variance_1() {
        let mut r = Rng::new(7);
        let x: Vec<f64> = (0..20_000).map(|_| normal(&mut r)).collect();
        let m = x.iter().sum::<f64>() / x.len() as f64;
        let v = x.iter().map(|a| (a - m).powi(2)).sum::<f64>() / x.len() as f64;
        assert!(m.abs() < 0.03 && (v - 1.0).abs() < 0.05, "{m} {v}");
    }

    #[test]
    fn holm_by_hand() {
        // Sorted: 0.005 <= 0.05/4 rejected; 0.01 <= 0.05/3 rejected; 0.03 > 0.05/2 stops, and
        // 0.04 keeps that level. Adjusted: 4*0.005, 3*0.01, 2*0.03, max(0.06, 1*0.04).
        let h = holm(&[0.01, 0.04, 0.03, 0.005], 0.05);
        let close = |a: f64, b: f64| (a - b).abs() < 1e-12;
        let want = [
            (true, 0.05 / 3.0, 0.03),
            (false, 0.025, 0.06),
            (false, 0.025, 0.06),
            (true, 0.0125, 0.02),
        ];
        for (got, want) in h.iter().zip(want) {
            assert_eq!(got.0, want.0, "{h:?}");
            assert!(close(got.1, want.1) && close(got.2, want.2), "{h:?}");
        }
        // One test: Holm is the test itself.
        assert_eq!(holm(&[0.04], 0.05), vec![(true, 0.05, 0.04)]);
        assert!(holm(&[], 0.05).is_empty());
    }

    #[test]
    fn welch_ratio_by_hand() {
        // n=10 mean 20 sd 2 vs mean 22: the difference 2 +- 2.101 * 0.8944 over 20;
        // t = 2.236 with 18 df: p = 0.038.
        let s = |mean| Sample {
            count: 10,
            mean,
            stddev: 2.0,
        };
        let ((lo, hi), p) = welch_ratio(s(20.0), s(22.0), 0.05).unwrap();
        assert!(
            (lo - 1.00605).abs() < 2e-4 && (hi - 1.19395).abs() < 2e-4,
            "{lo} {hi}"
        );
        assert!((p - 0.038).abs() < 1e-3, "{p}");
    }
}
