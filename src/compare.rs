//! `runs compare`: candidates against a baseline, for runs of one product (managed or
//! external) that measured the same thing.
//!
//! Unlike the reference (benchmark.md §8.2), a latency difference counts only when it is both
//! beyond the practical band (`--threshold`, default 5%) and outside the runs' noise (the
//! passes' or queries' spread plus an assumed run-to-run drift, Holm-corrected over the types:
//! [`crate::noise`]); a large change inside the noise is "within noise". Ingestion is compared too (higher rows/s is better), but
//! only between loads with the same write parameters ("not comparable" otherwise); mean,
//! median and p95 are all shown. Runs that differ in SQL database, dataset, query set, counts
//! or repetitions, or that hold failures, are refused naming the difference, never mixed.
//! A data state or data location (memtables vs SST files) that differs is a caveat stated on
//! every verdict; a state that is unknown on either side makes the latency verdicts "not
//! comparable".
//! The output directory `comparisons/<id>/` is staged and renamed in one step.

use std::collections::BTreeMap;
use std::path::PathBuf;

use serde::{Deserialize, Serialize};
use serde_json::{json, Value};

use crate::context::Ctx;
use crate::error::{Error, Result};
use crate::output::Warning;
use crate::run::{RunKind, Status};
use crate::runlist::{self, RecordedRun};
use crate::summary::{QuerySummary, RunIdentity, RunSummary};

/// Bumped when the shape of a comparison's `summary.json` changes incompatibly.
pub const SCHEMA_VERSION: u32 = 1;
/// The default noise band, in percent.
pub const DEFAULT_THRESHOLD: f64 = 5.0;

const TEMPLATE: &str = include_str!("../templates/compare.md.j2");

/// Which direction is better.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Better {
    Lower,
    Higher,
}

/// Baseline vs candidate of one number.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Delta {
    pub baseline: Option<f64>,
    pub candidate: Option<f64>,
    /// candidate - baseline.
    pub delta: Option<f64>,
    pub delta_percent: Option<f64>,
    /// candidate / baseline.
    pub ratio: Option<f64>,
}

/// Baseline vs candidate of one number: delta, percent, ratio (candidate / baseline). A zero
/// baseline gives no ratio nor percent unless both are zero.
pub fn delta(baseline: Option<f64>, candidate: Option<f64>) -> Delta {
    let (Some(b), Some(c)) = (baseline, candidate) else {
        return Delta {
            baseline,
            candidate,
            delta: None,
            delta_percent: None,
            ratio: None,
        };
    };
    let (ratio, pct) = if b == 0.0 {
        if c == 0.0 {
            (Some(1.0), Some(0.0))
        } else {
            (None, None)
        }
    } else {
        let r = c / b;
        (Some(r), Some((r - 1.0) * 100.0))
    };
    Delta {
        baseline: Some(b),
        candidate: Some(c),
        delta: Some(c - b),
        delta_percent: pct,
        ratio,
    }
}

/// improved / unchanged / regressed with a noise band of `threshold` percent. An undefined
/// percentage (zero baseline, non-zero candidate) is an infinite change.
pub fn classify(d: &Delta, threshold: f64, better: Better) -> &'static str {
    let Some(delta) = d.delta else {
        return "unknown";
    };
    let pct = d.delta_percent.unwrap_or(if delta > 0.0 {
        f64::INFINITY
    } else if delta < 0.0 {
        f64::NEG_INFINITY
    } else {
        0.0
    });
    let worse = match better {
        Better::Lower => pct,
        Better::Higher => -pct,
    };
    if worse > threshold {
        "regressed"
    } else if worse < -threshold {
        "improved"
    } else {
        "unchanged"
    }
}

/// Checks `--threshold`.
pub fn check_threshold(t: f64) -> Result<f64> {
    if !t.is_finite() || !(0.0..=1000.0).contains(&t) {
        return Err(Error::invalid(format!(
            "--threshold {t} is not a percentage between 0 and 1000"
        ))
        .with_hint("e.g. --threshold 5 (changes within ±5% count as unchanged)"));
    }
    Ok(t)
}

/// What makes a run comparable: refuses runs that cannot be inputs at all.
fn check_eligible(role: &str, l: &RecordedRun) -> Result<()> {
    let s = &l.summary;
    let id = &l.manifest.run_id;
    if s.run_kind != RunKind::Benchmark {
        return Err(Error::invalid(format!(
            "{role} run {id} is a {} run; only benchmark runs have measurements to compare",
            s.run_kind.as_str()
        ))
        .with_hint("pass runs made by `tsbsctl bench ... all|load|query`"));
    }
    if let Some(f) = s.failures.first() {
        return Err(Error::invalid(format!(
            "{role} run {id} has failures ({} in {}: {})",
            s.failures.len(),
            f.step.as_deref().unwrap_or(&f.stage),
            f.reason
        ))
        .with_hint("compare only runs that completed without failures; rerun the failed one (`tsbsctl runs rerun RUN`)"));
    }
    if s.status != Status::Completed {
        return Err(Error::invalid(format!(
            "{role} run {id} is {}, not completed",
            s.status.as_str()
        ))
        .with_hint("compare only completed runs"));
    }
    Ok(())
}

/// The identity a candidate must share with the baseline: `(what, value)` pairs.
fn identity(s: &RunSummary) -> Vec<(&'static str, Value)> {
    let counts: BTreeMap<String, Value> = s
        .queries
        .iter()
        .map(|q| {
            (
                q.query_type.clone(),
                json!({"repetitions": q.repetitions, "query_count": q.query_count}),
            )
        })
        .collect();
    let ds = s.dataset.as_ref();
    let qs = s.query_set.as_ref();
    vec![
        ("product", json!(s.product)),
        ("SQL database", json!(s.target.database)),
        ("dataset id", json!(ds.map(|d| &d.dataset_id))),
        (
            "dataset checksum",
            json!(ds.and_then(|d| d.sha256.as_ref())),
        ),
        ("query-set id", json!(qs.map(|q| &q.query_set_id))),
        (
            "query-set manifest checksum",
            json!(qs.map(|q| &q.manifest_sha256)),
        ),
        ("query counts", json!(qs.map(|q| &q.query_counts))),
        ("repetitions and query counts", json!(counts)),
    ]
}

fn short(v: &Value) -> String {
    match v {
        Value::Null => "none".into(),
        Value::String(s) => s.clone(),
        v => v.to_string(),
    }
}

/// Refuses a candidate that measured something else than the baseline.
fn check_same(base: &RecordedRun, cand: &RecordedRun) -> Result<()> {
    let a = identity(&base.summary);
    let b = identity(&cand.summary);
    let diffs: Vec<String> = a
        .iter()
        .zip(b.iter())
        .filter(|((_, x), (_, y))| x != y)
        .map(|((what, x), (_, y))| {
            format!("{what}: baseline {} vs candidate {}", short(x), short(y))
        })
        .collect();
    if !diffs.is_empty() {
        return Err(Error::invalid(format!(
            "run {} is not comparable with baseline {}: {}",
            cand.manifest.run_id,
            base.manifest.run_id,
            diffs.join("; ")
        ))
        .with_hint("compare runs of one product on the same SQL database, dataset and query set (for a cross-database view use `tsbsctl runs report`)"));
    }
    Ok(())
}

/// One query type of a candidate against the baseline.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct QueryComparison {
    pub query_type: String,
    pub repetitions: Option<u32>,
    pub query_count: Option<u64>,
    pub mean_ms: Delta,
    pub median_ms: Delta,
    pub p95_ms: Delta,
    /// improved, unchanged, regressed, within noise, not comparable, unknown.
    pub classification: String,
    /// The noise test's record, or why there was none.
    pub noise: Value,
    pub baseline_log: Option<PathBuf>,
    pub candidate_log: Option<PathBuf>,
}

/// The query type whose mean regressed most.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct LargestRegression {
    pub query_type: String,
    pub delta_ms: Option<f64>,
    pub delta_percent: Option<f64>,
    pub ratio: Option<f64>,
}

/// Ingestion of a candidate against the baseline.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum IngestionComparison {
    /// Both loaded with the same write parameters.
    Compared {
        rows_per_second: Delta,
        metrics_per_second: Delta,
        classification: String,
        noise: String,
        workers: [Option<u64>; 2],
        batch_size: [Option<u64>; 2],
    },
    /// Both loaded, with different write parameters.
    NotComparable {
        classification: String,
        reason: String,
        rows_per_second: Delta,
        workers: [Option<u64>; 2],
        batch_size: [Option<u64>; 2],
    },
    /// A run did not load (or its load failed).
    NotCompared {
        classification: String,
        reason: String,
    },
}

impl IngestionComparison {
    pub fn classification(&self) -> &str {
        match self {
            IngestionComparison::Compared { classification, .. }
            | IngestionComparison::NotComparable { classification, .. }
            | IngestionComparison::NotCompared { classification, .. } => classification,
        }
    }
}

/// One candidate of a comparison: its identity and the verdicts against the baseline.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CandidateComparison {
    #[serde(flatten)]
    pub identity: RunIdentity,
    /// improved, unchanged (within noise included), regressed -> query types.
    pub counts: BTreeMap<String, u64>,
    pub within_noise: u64,
    /// Differences in the data that qualify every latency verdict.
    pub caveats: Vec<String>,
    /// changed, unchanged, within noise, not comparable.
    pub verdict: String,
    pub largest_regression: Option<LargestRegression>,
    pub ingestion: IngestionComparison,
    pub queries: Vec<QueryComparison>,
}

/// One candidate against the baseline.
fn compare_one(
    base: &RecordedRun,
    cand: &RecordedRun,
    threshold: f64,
    drift: &Drift,
) -> CandidateComparison {
    let bq: BTreeMap<&str, &QuerySummary> = base
        .summary
        .queries
        .iter()
        .map(|q| (q.query_type.as_str(), q))
        .collect();
    let mut counts: BTreeMap<String, u64> = ["improved", "unchanged", "regressed"]
        .into_iter()
        .map(|k| (k.to_string(), 0))
        .collect();
    let (mut caveats, state_unknown) = data_caveats(&base.summary, &cand.summary);
    caveats.extend(variant_caveats(&base.summary, &cand.summary));
    let mut queries = Vec::new();
    let mut largest: Option<&QueryComparison> = None;
    let mut within_noise = 0u64;
    let pairs: Vec<(&QuerySummary, &QuerySummary)> = cand
        .summary
        .queries
        .iter()
        .filter_map(|q| bq.get(q.query_type.as_str()).map(|b| (*b, q)))
        .collect();
    let evidence: Vec<Option<Evidence>> = pairs
        .iter()
        .map(|(b, q)| {
            Evidence::with_drift(
                observations(&base.dir, b),
                observations(&cand.dir, q),
                b,
                q,
                drift.value,
            )
        })
        .collect();
    let judged = judge_all(&pairs, &evidence, threshold, drift);
    for ((b, q), (class, noise)) in pairs.iter().zip(judged) {
        let qt = q.query_type.as_str();
        let mean = delta(b.mean_ms, q.mean_ms);
        // Data of unknown state may be anything: no latency verdict holds against it.
        let class = if state_unknown {
            "not comparable"
        } else {
            class
        };
        if class == "within noise" {
            within_noise += 1;
        }
        // "within noise" counts as unchanged: nothing was shown to have changed.
        let counted = if class == "within noise" {
            "unchanged"
        } else {
            class
        };
        *counts.entry(counted.to_string()).or_default() += 1;
        queries.push(QueryComparison {
            query_type: qt.to_string(),
            repetitions: q.repetitions,
            query_count: q.query_count,
            mean_ms: mean,
            median_ms: delta(b.median_ms.flatten(), q.median_ms.flatten()),
            p95_ms: delta(b.p95_ms.flatten(), q.p95_ms.flatten()),
            classification: class.to_string(),
            noise,
            baseline_log: b.log.clone().flatten().map(|l| base.dir.join(l)),
            candidate_log: q.log.clone().flatten().map(|l| cand.dir.join(l)),
        });
    }
    // The first of the largest (an unknown percent is an infinite change).
    let pct = |q: &QueryComparison| q.mean_ms.delta_percent.unwrap_or(f64::INFINITY);
    for item in queries.iter().filter(|q| q.classification == "regressed") {
        if largest.is_none_or(|l| pct(item) > pct(l)) {
            largest = Some(item);
        }
    }
    let largest_regression = largest.map(|l| LargestRegression {
        query_type: l.query_type.clone(),
        delta_ms: l.mean_ms.delta,
        delta_percent: l.mean_ms.delta_percent,
        ratio: l.mean_ms.ratio,
    });
    let ingestion = {
        let (bi, ci) = (&base.summary.ingestion, &cand.summary.ingestion);
        let write_b = write_parameters(&base.summary);
        let write_c = write_parameters(&cand.summary);
        let completed = |i: &Option<crate::summary::Ingestion>| {
            i.as_ref().map(|i| i.status) == Some(Status::Completed)
        };
        let rate = |i: &Option<crate::summary::Ingestion>| {
            i.as_ref().and_then(|i| i.rows_per_second.flatten())
        };
        let mrate =
            |i: &Option<crate::summary::Ingestion>| i.as_ref().and_then(|i| i.metrics_per_second);
        let workers = |i: &Option<crate::summary::Ingestion>| i.as_ref().and_then(|i| i.workers);
        let batch = |i: &Option<crate::summary::Ingestion>| i.as_ref().and_then(|i| i.batch_size);
        let status = |i: &Option<crate::summary::Ingestion>| {
            i.as_ref().map_or("no load", |i| i.status.as_str())
        };
        if completed(bi) && completed(ci) && write_b != write_c {
            IngestionComparison::NotComparable {
                classification: "not comparable".into(),
                reason: format!(
                    "the loads used different write parameters (baseline {}, candidate {}); rows/s depend on them",
                    describe_write(&write_b),
                    describe_write(&write_c)
                ),
                rows_per_second: delta(rate(bi), rate(ci)),
                workers: [workers(bi), workers(ci)],
                batch_size: [batch(bi), batch(ci)],
            }
        } else if completed(bi) && completed(ci) {
            let d = delta(rate(bi), rate(ci));
            let class = classify(&d, threshold, Better::Higher);
            IngestionComparison::Compared {
                rows_per_second: d,
                metrics_per_second: delta(mrate(bi), mrate(ci)),
                classification: class.into(),
                noise: "one load per run: no spread to test, the band alone decides".into(),
                workers: [workers(bi), workers(ci)],
                batch_size: [batch(bi), batch(ci)],
            }
        } else {
            IngestionComparison::NotCompared {
                classification: "not compared".into(),
                reason: format!(
                    "ingestion needs a completed load in both runs (baseline: {}, candidate: {})",
                    status(bi),
                    status(ci)
                ),
            }
        }
    };
    let verdict = if state_unknown {
        "not comparable"
    } else if counts["regressed"] > 0 || counts["improved"] > 0 {
        "changed"
    } else if within_noise > 0 {
        "within noise"
    } else {
        "unchanged"
    };
    CandidateComparison {
        identity: cand.identity(),
        counts,
        within_noise,
        caveats,
        verdict: verdict.into(),
        largest_regression,
        ingestion,
        queries,
    }
}

/// What the latencies of two runs may owe to their data rather than to the servers: a data
/// state that differs, a data location that differs (memtables vs SST files). True as the
/// second value when either state is unknown (the latency verdicts are then not comparable).
/// Runs of two variants (editions), or under different limits (a licence): other server
/// builds or other limits, so a verdict measures those too (trial 2 N17; the report says it
/// in its notes). The product words both ([`crate::product::variants`]).
fn variant_caveats(base: &RunSummary, cand: &RunSummary) -> Vec<String> {
    let variants = |s: &RunSummary| {
        crate::product::resolve(&s.product, s.variant.as_deref())
            .ok()
            .and_then(|p| p.run_variants())
    };
    let (vb, vc) = (variants(base), variants(cand));
    let mut out = Vec::new();
    let name = |s: &RunSummary| s.variant.clone().unwrap_or_else(|| "-".into());
    if base.variant != cand.variant {
        out.push(crate::product::variants::differ_caveat(
            vc.or(vb),
            &name(base),
            &name(cand),
        ));
    }
    // Either run's limits (a Core run has none; it reads "none" against an Enterprise one).
    if let Some(limits) = [vc, vb]
        .into_iter()
        .flatten()
        .find_map(|v| v.limits.as_ref())
    {
        let (lb, lc) = (
            (limits.label)(&base.server_settings),
            (limits.label)(&cand.server_settings),
        );
        if (lb.is_some() || lc.is_some()) && lb != lc {
            out.push((limits.compare_note)(
                lb.as_deref().unwrap_or("none"),
                lc.as_deref().unwrap_or("none"),
            ));
        }
    }
    out
}

fn data_caveats(base: &RunSummary, cand: &RunSummary) -> (Vec<String>, bool) {
    use crate::workspace_manifest::DataState;
    let label = |s: &RunSummary| json!(s.data_state.as_ref().map(|d| &d.label));
    let (sb, sc) = (&label(base), &label(cand));
    let mut unknown = DataState::label_unknown(sb) || DataState::label_unknown(sc);
    let mut out = Vec::new();
    if sb != sc {
        out.push(format!(
            "the data states differ: baseline {}, candidate {}{}",
            short(sb),
            short(sc),
            if unknown {
                "; a state unknown (interrupted or failed maintenance) may be anything, so the latency verdicts are not comparable"
            } else {
                "; the latencies show what changed in the data as well as in the server"
            }
        ));
    } else if unknown {
        out.push(format!(
            "the data state is {} in both runs: the data may be anything, so the latency verdicts are not comparable",
            short(sb)
        ));
    }
    // A cold latency includes reading from disk what a warm one finds in memory.
    let cold = |s: &RunSummary| {
        if s.cold.is_some() {
            "cold (--cold)"
        } else {
            "warm"
        }
    };
    if cold(base) != cold(cand) {
        out.push(format!(
            "the baseline's queries were {}, the candidate's {}: a cold query reads from disk what a warm one finds in memory, so the latency verdicts are not comparable",
            cold(base),
            cold(cand)
        ));
        unknown = true;
    }
    // Where each product says its data was; told apart only within one product.
    let loc = |s: &RunSummary| s.data_location.clone().unwrap_or(Value::Null);
    let dl =
        crate::product::ext::data_location(&base.product).filter(|_| base.product == cand.product);
    let (base, cand) = (&loc(base), &loc(cand));
    if let Some(dl) = dl {
        if let (Some(pb), Some(pc)) = ((dl.place)(base), (dl.place)(cand)) {
            if pb != pc {
                out.push(format!(
                    "the data was in different places when the queries started: baseline {} ({}), candidate {} ({}); {}",
                    pb.1,
                    (dl.describe)(base),
                    pc.1,
                    (dl.describe)(cand),
                    dl.compare_why
                ));
            }
        }
    }
    (out, unknown)
}

/// The run-to-run drift a comparison uses: measured from replicate runs of the baseline's
/// setup when given, else assumed ([`crate::noise::run_drift`]).
#[derive(Debug, Clone, PartialEq)]
pub struct Drift {
    pub value: f64,
    /// Runs and degrees of freedom it was measured from.
    pub measured: Option<(usize, usize)>,
}

impl Drift {
    fn note(&self) -> String {
        match self.measured {
            Some((runs, df)) => format!(
                "a run-to-run drift of {:.1}% per run, measured from {runs} runs of the baseline's setup ({df} degrees of freedom)",
                self.value * 100.0
            ),
            None => format!(
                "one run per side: a run-to-run drift of {:.1}% per run is assumed, not measured ({} sets it; --replicate runs measure it)",
                self.value * 100.0,
                crate::noise::RUN_DRIFT_ENV
            ),
        }
    }
}

/// One run's log mean latency of a type and the variance of that log mean within the run:
/// from its passes' means when it ran two or more (they include what varies between passes),
/// else from its queries' spread over their count.
pub fn run_mean(dir: &std::path::Path, q: &QuerySummary) -> Option<crate::noise::RunMean> {
    use crate::noise::{Observations, RunMean};
    let pass_means = match observations(dir, q)? {
        Observations::Queries(p) => p
            .iter()
            .map(|x| x.iter().sum::<f64>() / x.len().max(1) as f64)
            .collect(),
        Observations::PassMeans(m) => m,
    };
    let logs: Vec<f64> = pass_means
        .iter()
        .filter(|m| **m > 0.0)
        .map(|m| m.ln())
        .collect();
    if logs.len() >= 2 {
        let n = logs.len() as f64;
        let mean = logs.iter().sum::<f64>() / n;
        let var = logs.iter().map(|l| (l - mean).powi(2)).sum::<f64>() / (n - 1.0);
        return Some(RunMean {
            log_mean: mean,
            within_var: var / n,
        });
    }
    let s = q.noise_sample()?;
    (s.mean > 0.0).then(|| RunMean {
        log_mean: s.mean.ln(),
        within_var: (s.stddev / s.mean).powi(2) / s.count as f64,
    })
}

/// The drift measured from the baseline and its replicates (every type they all ran).
fn measured_drift(runs: &[&RecordedRun]) -> Option<(f64, usize)> {
    let types: Vec<Vec<crate::noise::RunMean>> = runs[0]
        .summary
        .queries
        .iter()
        .map(|b| {
            runs.iter()
                .filter_map(|r| {
                    let q = r
                        .summary
                        .queries
                        .iter()
                        .find(|q| q.query_type == b.query_type)?;
                    run_mean(&r.dir, q)
                })
                .collect()
        })
        .collect();
    crate::noise::drift_from_replicates(&types)
}

/// What the noise model has of one query type in two runs.
#[derive(Debug, Clone)]
pub enum Evidence {
    /// The bootstrap of the ratio of means (queries paired by index, or pass means).
    Bootstrap(crate::noise::Bootstrap),
    /// Two passes or more on both sides: the passes as replicates (Welch's t on the logs of
    /// the pass means) plus the assumed run-to-run drift.
    Passes(crate::noise::PassLevel),
    /// Welch's test on the logs of the summary statistics plus the run-to-run drift: one
    /// pass without per-query latencies.
    Welch(crate::noise::Sample, crate::noise::Sample, f64),
}

/// One run's observations of one type: per-query latencies of every pass when each pass's log
/// holds them, else the passes' means.
pub fn observations(dir: &std::path::Path, q: &QuerySummary) -> Option<crate::noise::Observations> {
    use crate::noise::Observations;
    let logs: Vec<Option<String>> = match &q.passes {
        Some(p) => p.logs.clone(),
        None => vec![q.log.clone().flatten()],
    };
    let counts: Vec<u64> = match &q.attempts {
        Some(a) if a.len() == logs.len() => a.iter().map(|a| a.stats.count).collect(),
        _ if logs.len() == 1 => vec![q.query_count?],
        _ => Vec::new(),
    };
    let per_query: Option<Vec<Vec<f64>>> = (counts.len() == logs.len())
        .then(|| {
            logs.iter()
                .zip(&counts)
                .map(|(l, &n)| {
                    let text = std::fs::read_to_string(dir.join(l.as_deref()?)).ok()?;
                    crate::tsbs::query::per_query_latencies(&text, n)
                })
                .collect()
        })
        .flatten();
    if let Some(p) = per_query {
        return Some(Observations::Queries(p));
    }
    let means: Vec<f64> = q
        .attempts
        .as_ref()?
        .iter()
        .map(|a| a.stats.mean_ms)
        .collect();
    Some(Observations::PassMeans(means))
}

impl Evidence {
    /// The best model both runs allow: paired queries, pass means, Welch, or none.
    pub fn of(
        base: &RecordedRun,
        b: &QuerySummary,
        cand: &RecordedRun,
        q: &QuerySummary,
    ) -> Option<Evidence> {
        Evidence::between(observations(&base.dir, b), observations(&cand.dir, q), b, q)
    }

    /// [`Evidence::with_drift`] with the run-to-run drift in force (checked by `run` before).
    pub fn between(
        ob: Option<crate::noise::Observations>,
        oc: Option<crate::noise::Observations>,
        b: &QuerySummary,
        q: &QuerySummary,
    ) -> Option<Evidence> {
        let drift = crate::noise::run_drift().unwrap_or(crate::noise::RUN_DRIFT);
        Evidence::with_drift(ob, oc, b, q, drift)
    }

    /// The best model both runs allow, with run-to-run drift `drift`.
    pub fn with_drift(
        ob: Option<crate::noise::Observations>,
        oc: Option<crate::noise::Observations>,
        b: &QuerySummary,
        q: &QuerySummary,
        drift: f64,
    ) -> Option<Evidence> {
        use crate::noise::{Bootstrap, Observations, Rng, RESAMPLES};
        let mut rng = Rng::for_name(&q.query_type);
        let to_means = |o: &Observations| match o {
            Observations::Queries(p) => Observations::PassMeans(
                p.iter()
                    .map(|x| x.iter().sum::<f64>() / x.len() as f64)
                    .collect(),
            ),
            m => m.clone(),
        };
        if let (Some(x), Some(y)) = (&ob, &oc) {
            // Passes are the replicates: two or more on both sides.
            if let (Observations::PassMeans(bm), Observations::PassMeans(cm)) =
                (to_means(x), to_means(y))
            {
                if let Some(p) = crate::noise::PassLevel::new(bm, cm, drift) {
                    return Some(Evidence::Passes(p));
                }
            }
            if let Some(bs) = Bootstrap::new(x, y, RESAMPLES, &mut rng)
                .or_else(|| Bootstrap::new(&to_means(x), &to_means(y), RESAMPLES, &mut rng))
            {
                return Some(Evidence::Bootstrap(bs.with_drift(drift, &mut rng)));
            }
        }
        let (sb, sc) = (b.noise_sample()?, q.noise_sample()?);
        crate::noise::welch_log_ratio(sb, sc, drift, 0.05)?;
        Some(Evidence::Welch(sb, sc, drift))
    }

    /// The two-sided p-value of "no change".
    pub fn p_value(&self) -> f64 {
        match self {
            Evidence::Bootstrap(b) => b.p_value(),
            Evidence::Passes(p) => p.p_value(),
            Evidence::Welch(b, c, d) => {
                crate::noise::welch_log_ratio(*b, *c, *d, 0.05).map_or(1.0, |x| x.1)
            }
        }
    }

    /// The ratio (candidate / baseline) and its interval at level `1 - alpha`.
    pub fn interval(&self, alpha: f64) -> (f64, (f64, f64)) {
        match self {
            Evidence::Bootstrap(b) => (b.estimate, b.interval(alpha)),
            Evidence::Passes(p) => (p.estimate(), p.interval(alpha)),
            Evidence::Welch(b, c, d) => {
                let iv = crate::noise::welch_log_ratio(*b, *c, *d, alpha)
                    .map_or((f64::NAN, f64::NAN), |x| x.0);
                (c.mean / b.mean, iv)
            }
        }
    }

    /// The run-to-run drift the model assumed.
    pub fn drift(&self) -> f64 {
        match self {
            Evidence::Bootstrap(b) => b.drift,
            Evidence::Passes(p) => p.drift,
            Evidence::Welch(_, _, d) => *d,
        }
    }

    /// Whether a side ran one pass only (its pass-to-pass variance unmeasured).
    pub fn one_pass(&self) -> bool {
        match self {
            Evidence::Bootstrap(b) => b.passes[0] < 2 || b.passes[1] < 2,
            Evidence::Passes(_) => false,
            Evidence::Welch(..) => true,
        }
    }

    fn describe(&self) -> (String, Value) {
        use crate::noise::{RESAMPLES, SEED};
        let (test, mut record) = match self {
            Evidence::Bootstrap(b) => {
                let mut note = if b.paired_queries > 0 {
                    format!("{} queries paired by their index in the query file, resampled with the passes of each run", b.paired_queries)
                } else {
                    format!(
                        "no per-query latencies in both runs: the passes' means resampled{}",
                        if b.paired_passes {
                            ", paired by pass number"
                        } else {
                            ""
                        }
                    )
                };
                if self.one_pass() {
                    note.push_str("; a run with one pass: its pass-to-pass variance is not measured (--passes 3 or more)");
                }
                (
                    b.method.to_string(),
                    json!({"resamples": RESAMPLES, "seed": SEED, "paired_queries": b.paired_queries,
                           "passes": b.passes, "paired_passes": b.paired_passes, "note": note}),
                )
            }
            Evidence::Passes(p) => (
                "t_pass_means".into(),
                json!({"passes": [p.baseline.len(), p.candidate.len()],
                       "pass_means_ms": [p.baseline, p.candidate],
                       "degrees_of_freedom": p.degrees_of_freedom(),
                       "note": format!("passes as replicates: Welch's t on the logs of the {} and {} pass means ({:.1} degrees of freedom)", p.baseline.len(), p.candidate.len(), p.degrees_of_freedom())}),
            ),
            Evidence::Welch(..) => (
                "welch_t".into(),
                json!({"note": "one pass and no per-query latencies: Welch's test on the logs of the runs' count, mean and stddev, within-run spread only"}),
            ),
        };
        if let Value::Object(r) = &mut record {
            r.insert("run_drift".into(), json!(self.drift()));
        }
        (test, record)
    }
}

/// The latency verdicts of every type of one candidate: beyond the band and outside the
/// noise to count, the noise judged for all the types at once (Holm's correction at family
/// level 1 - [`crate::noise::LEVEL`]). Returns per pair the class and the noise record.
fn judge_all(
    pairs: &[(&QuerySummary, &QuerySummary)],
    evidence: &[Option<Evidence>],
    threshold: f64,
    drift: &Drift,
) -> Vec<(&'static str, Value)> {
    let alpha = 1.0 - crate::noise::LEVEL;
    let tested: Vec<usize> = (0..pairs.len())
        .filter(|&i| evidence[i].is_some())
        .collect();
    let p: Vec<f64> = tested
        .iter()
        .map(|&i| evidence[i].as_ref().map_or(1.0, Evidence::p_value))
        .collect();
    let holm = crate::noise::holm(&p, alpha);
    let mut out = Vec::new();
    for (i, (b, q)) in pairs.iter().enumerate() {
        let Some(e) = &evidence[i] else {
            let mean = delta(b.mean_ms, q.mean_ms);
            let why = json!({
                "test": null,
                "reason": "a run lacks the count or stddev of this type (or has fewer than 2 queries): only the band decides",
            });
            out.push((classify(&mean, threshold, Better::Lower), why));
            continue;
        };
        let k = tested.iter().position(|&t| t == i).unwrap_or(0);
        let (reject, level, adjusted) = holm[k];
        let (ratio, (lo, hi)) = e.interval(level);
        let bm = b.mean_ms.unwrap_or(f64::NAN);
        let est = delta(Some(1.0), Some(ratio));
        let practical = classify(&est, threshold, Better::Lower);
        let class = match practical {
            "regressed" | "improved" if !reject => "within noise",
            c => c,
        };
        let (test, mut record) = e.describe();
        if let Value::Object(r) = &mut record {
            r.insert("run_drift_note".into(), json!(drift.note()));
        }
        if class == "within noise" {
            let how = if drift.measured.is_some() {
                "measured"
            } else {
                "assumed"
            };
            let why = if e.one_pass() {
                format!("not enough passes to tell: beyond the band, but inside the noise of one pass and the {how} run-to-run drift (run --passes 3 or more; --replicate runs measure the drift)")
            } else {
                format!("beyond the band, but inside the noise of the passes and the {how} run-to-run drift")
            };
            if let Value::Object(r) = &mut record {
                r.insert("reason".into(), json!(why));
            }
        }
        let pct = |r: f64| (r - 1.0) * 100.0;
        let extra = json!({
            "test": test,
            "level": crate::noise::LEVEL,
            "correction": "holm",
            "family_size": tested.len(),
            "interval_level": 1.0 - level,
            "ratio": ratio,
            "change_percent": pct(ratio),
            "interval_ratio": [lo, hi],
            "interval_percent": [pct(lo), pct(hi)],
            "interval_ms": [(lo - 1.0) * bm, (hi - 1.0) * bm],
            "p_value": p[k],
            "adjusted_p_value": adjusted,
            "outside_noise": reject,
        });
        if let (Value::Object(r), Value::Object(x)) = (&mut record, extra) {
            r.extend(x);
        }
        out.push((class, record));
    }
    out
}

/// What decides a load's throughput besides the server: workers, batch size, and the
/// product's write settings (its durability flags), as its workload recorded them.
fn write_parameters(s: &RunSummary) -> Value {
    let i = s.ingestion.as_ref();
    let mut w = json!({
        "workers": i.and_then(|i| i.workers),
        "batch_size": i.and_then(|i| i.batch_size),
    });
    if let Value::Object(o) = &mut w {
        o.extend(crate::product::ext::recorded_write_settings(
            &s.product,
            s.workload.fields(),
        ));
    }
    w
}

fn describe_write(w: &Value) -> String {
    let mut out = format!(
        "{} x {} rows",
        crate::output::count_of(short(&w["workers"]), "worker"),
        short(&w["batch_size"])
    );
    if let Value::Object(o) = w {
        let settings = o
            .iter()
            .filter(|(k, v)| !matches!(k.as_str(), "workers" | "batch_size") && !v.is_null());
        for (k, v) in settings {
            out.push_str(&format!(", {k} {}", short(v)));
        }
    }
    out
}

/// How a latency change is told from noise.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct NoiseTest {
    pub test: String,
    pub level: f64,
    pub rule: String,
    #[serde(default)]
    pub correction: String,
    #[serde(default)]
    pub resamples: u64,
    #[serde(default)]
    pub seed: u64,
    /// The run-to-run drift per run (the log scale's standard deviation).
    #[serde(default)]
    pub run_drift: f64,
    /// Whether it was measured (from which runs) or assumed.
    #[serde(default)]
    pub run_drift_source: String,
    /// The runs of the baseline's setup the drift was measured from, besides the baseline.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub replicates: Vec<RunIdentity>,
}

/// What the compared runs share (their identity checks passed).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ComparedDataset {
    pub dataset_id: Option<String>,
    pub sha256: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ComparedQuerySet {
    pub query_set_id: Option<String>,
    pub manifest_sha256: Option<String>,
    pub query_counts: Option<BTreeMap<String, u64>>,
}

/// `summary.json` of a comparison.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Comparison {
    pub schema_version: u32,
    /// Always `comparison`.
    pub kind: String,
    /// `null` when it could not be saved (read-only media).
    pub comparison_id: Option<String>,
    pub created_at: String,
    pub threshold_percent: f64,
    pub noise_test: NoiseTest,
    pub product: String,
    pub product_label: String,
    pub database: String,
    pub dataset: ComparedDataset,
    pub query_set: ComparedQuerySet,
    pub baseline: RunIdentity,
    pub candidates: Vec<CandidateComparison>,
}

/// `manifest.json` of a comparison.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ComparisonManifest {
    pub schema_version: u32,
    pub kind: String,
    pub comparison_id: Option<String>,
    pub created_at: String,
    pub command: String,
    pub tool: crate::run::ToolInfo,
    pub threshold_percent: f64,
    pub baseline: RunIdentity,
    pub candidate_runs: Vec<RunIdentity>,
}

/// What `runs compare` was asked for.
pub struct Request {
    pub baseline: String,
    pub candidates: Vec<String>,
    /// More runs of the baseline's setup, to measure the run-to-run drift.
    pub replicates: Vec<String>,
    pub threshold: Option<f64>,
}

/// Runs the comparison and publishes `comparisons/<id>/`.
/// What `runs compare` found; the CLI words it for a person (`src/cli/runs.rs`).
#[derive(Debug, Clone)]
pub struct Compared {
    /// `None` when the comparison could not be saved (read-only media).
    pub id: Option<String>,
    pub dir: Option<PathBuf>,
    /// The baseline run's id.
    pub baseline: String,
    /// How many query types regressed, over all candidates.
    pub regressed: u64,
    pub summary: Comparison,
}

impl Compared {
    /// The `data` object of the JSON envelope.
    pub fn data(&self) -> Value {
        json!({
            "comparison_id": self.id,
            "comparison_dir": self.dir,
            "summary_md": self.dir.as_ref().map(|d| d.join("summary.md")),
            "regressed": self.regressed,
            "summary": self.summary,
        })
    }
}

/// How many query types of a candidate have the class `k` (`improved`, `unchanged`, ...).
pub fn class_count(c: &CandidateComparison, k: &str) -> u64 {
    c.counts.get(k).copied().unwrap_or(0)
}

pub fn run(ctx: &Ctx, req: &Request) -> Result<Compared> {
    let threshold = check_threshold(req.threshold.unwrap_or(DEFAULT_THRESHOLD))?;
    let run_drift = crate::noise::run_drift().map_err(|v| {
        Error::invalid(format!(
            "{}={v} is not a percentage from 0 to 100",
            crate::noise::RUN_DRIFT_ENV
        ))
        .with_hint(format!(
            "unset it for the default ({}%), or set the drift two runs of one binary show on this machine (scripts/bench-twins.sh measures it)",
            crate::noise::RUN_DRIFT * 100.0
        ))
    })?;
    if req.candidates.is_empty() {
        return Err(Error::invalid("no --candidate run").with_hint("add --candidate RUN"));
    }
    let rep = ctx.reporter.as_ref();
    let base = runlist::load(&ctx.root, &req.baseline, rep)?;
    check_eligible("baseline", &base)?;
    let mut cands = Vec::new();
    for c in &req.candidates {
        let l = runlist::load(&ctx.root, c, rep)?;
        if l.dir == base.dir {
            return Err(Error::invalid(format!(
                "run {} is both the baseline and a candidate",
                l.manifest.run_id
            ))
            .with_hint("pass another run as --candidate"));
        }
        check_eligible("candidate", &l)?;
        check_same(&base, &l)?;
        cands.push(l);
    }
    let mut replicates = Vec::new();
    for r in &req.replicates {
        let l = runlist::load(&ctx.root, r, rep)?;
        if l.dir == base.dir || cands.iter().any(|c| c.dir == l.dir) {
            return Err(Error::invalid(format!(
                "run {} is a replicate and the baseline or a candidate",
                l.manifest.run_id
            ))
            .with_hint("a replicate is another run of the baseline's setup"));
        }
        check_eligible("replicate", &l)?;
        check_same(&base, &l)?;
        replicates.push(l);
    }
    let drift = if replicates.is_empty() {
        Drift {
            value: run_drift,
            measured: None,
        }
    } else {
        let runs: Vec<&RecordedRun> = std::iter::once(&base).chain(replicates.iter()).collect();
        let (value, df) = measured_drift(&runs).ok_or_else(|| {
            Error::invalid("the replicates share no query type with the baseline")
                .with_hint("replicates are runs of the baseline's binary, data and query types")
        })?;
        Drift {
            value,
            measured: Some((runs.len(), df)),
        }
    };
    let s = &base.summary;
    let candidates: Vec<CandidateComparison> = cands
        .iter()
        .map(|c| compare_one(&base, c, threshold, &drift))
        .collect();
    let created_at = crate::manifest::now_rfc3339();
    let mut summary = Comparison {
        schema_version: SCHEMA_VERSION,
        kind: "comparison".into(),
        comparison_id: None,
        created_at: created_at.clone(),
        threshold_percent: threshold,
        noise_test: NoiseTest {
            test: "bootstrap".into(),
            level: crate::noise::LEVEL,
            rule: "a latency change is improved or regressed only when the ratio of means is beyond the threshold and its interval, at the level Holm's correction over the compared types gives it, excludes 1 (no change); the interval holds the passes' (or queries') noise and the run-to-run drift (measured from --replicate runs, else assumed)".into(),
            correction: "holm".into(),
            resamples: crate::noise::RESAMPLES as u64,
            seed: crate::noise::SEED,
            run_drift: drift.value,
            run_drift_source: drift.note(),
            replicates: replicates.iter().map(RecordedRun::identity).collect(),
        },
        product: s.product.clone(),
        product_label: s.product_label.clone(),
        database: s.target.database.clone(),
        dataset: ComparedDataset {
            dataset_id: s.dataset.as_ref().map(|d| d.dataset_id.clone()),
            sha256: s.dataset.as_ref().and_then(|d| d.sha256.clone()),
        },
        query_set: ComparedQuerySet {
            query_set_id: s.query_set.as_ref().map(|q| q.query_set_id.clone()),
            manifest_sha256: s.query_set.as_ref().map(|q| q.manifest_sha256.clone()),
            query_counts: s.query_set.as_ref().map(|q| q.query_counts.clone()),
        },
        baseline: base.identity(),
        candidates,
    };
    let mut manifest = ComparisonManifest {
        schema_version: SCHEMA_VERSION,
        kind: "comparison".into(),
        comparison_id: None,
        created_at,
        command: ctx.command_line(),
        tool: crate::run::ToolInfo::current(),
        threshold_percent: threshold,
        baseline: base.identity(),
        candidate_runs: cands.iter().map(RecordedRun::identity).collect(),
    };
    let base_dir = ctx.root.comparisons();
    let published = crate::publish::publish(&base_dir, |id| {
        summary.comparison_id = Some(id.to_string());
        manifest.comparison_id = Some(id.to_string());
        let md = render_md(&summary)?;
        Ok(vec![
            (
                "manifest.json".into(),
                crate::publish::pretty(&json!(manifest))?,
            ),
            (
                "summary.json".into(),
                crate::publish::pretty(&json!(summary))?,
            ),
            ("summary.md".into(), md.into_bytes()),
        ])
    });
    // Runs on read-only media can still be compared; only the record cannot be kept (#19).
    let (id, dir) = match published {
        Ok((id, dir)) => (Some(id), Some(dir)),
        Err(e) if crate::media::is_read_only(&base_dir) => {
            rep.warning(&Warning::ComparisonNotSaved {
                dir: base_dir.clone(),
                error: e.message,
            });
            summary.comparison_id = None;
            (None, None)
        }
        Err(e) => return Err(e),
    };
    let regressed: u64 = summary
        .candidates
        .iter()
        .map(|c| class_count(c, "regressed"))
        .sum();
    Ok(Compared {
        id,
        dir,
        baseline: base.manifest.run_id.clone(),
        regressed,
        summary,
    })
}

/// Renders a comparison's `summary.md` (a [`Comparison`], or a value of its shape).
pub fn render_md<S: Serialize>(summary: &S) -> Result<String> {
    let env = crate::render::template_env("compare.md", TEMPLATE)?;
    let t = env
        .get_template("compare.md")
        .map_err(|e| Error::failed(format!("comparison template: {e}")))?;
    t.render(minijinja::Value::from_serialize(summary))
        .map_err(|e| Error::failed(format!("rendering the comparison: {e}")))
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use std::path::PathBuf;

    const NO_DRIFT: Drift = Drift {
        value: 0.0,
        measured: None,
    };

    #[test]
    fn deltas_and_zero_baselines() {
        let d = delta(Some(10.0), Some(12.0));
        assert_eq!(d.ratio, Some(1.2));
        assert!((d.delta_percent.unwrap() - 20.0).abs() < 1e-9);
        assert_eq!(classify(&d, 5.0, Better::Lower), "regressed");
        assert_eq!(classify(&d, 25.0, Better::Lower), "unchanged");
        assert_eq!(classify(&d, 5.0, Better::Higher), "improved");
        let z = delta(Some(0.0), Some(0.0));
        assert_eq!(z.ratio, Some(1.0));
        assert_eq!(z.delta_percent, Some(0.0));
        assert_eq!(classify(&z, 5.0, Better::Lower), "unchanged");
        let n = delta(Some(0.0), Some(3.0));
        assert!(n.ratio.is_none() && n.delta_percent.is_none());
        assert_eq!(n.delta, Some(3.0));
        assert_eq!(classify(&n, 5.0, Better::Lower), "regressed");
        assert_eq!(classify(&n, 5.0, Better::Higher), "improved");
        let m = delta(None, Some(3.0));
        assert_eq!(classify(&m, 5.0, Better::Lower), "unknown");
        let i = delta(Some(10.0), Some(9.6));
        assert_eq!(classify(&i, 5.0, Better::Lower), "unchanged");
        assert_eq!(classify(&i, 1.0, Better::Lower), "improved");
    }

    fn q(count: u64, mean: f64, stddev: f64) -> QuerySummary {
        query(json!({"query_count": count, "mean_ms": mean, "stddev_ms": stddev}))
    }

    /// A query entry of a summary from the fields a test sets.
    fn query(v: Value) -> QuerySummary {
        serde_json::from_value(v).unwrap()
    }

    /// One type judged alone (a family of one), from its summary statistics.
    fn judge1(b: &QuerySummary, c: &QuerySummary, threshold: f64) -> (&'static str, Value) {
        let e = Evidence::with_drift(None, None, b, c, 0.0);
        judge_all(&[(b, c)], &[e], threshold, &NO_DRIFT).remove(0)
    }

    #[test]
    fn holm_decides_over_the_types_and_the_interval_says_it() {
        // Three types of +6% each with p ~ 0.024 alone: none survives Holm over the three,
        // and each interval, at the level Holm's step gives it, includes 1.
        let (b, c) = (q(30, 10.0, 1.0), q(30, 10.6, 1.0));
        let e = || Evidence::with_drift(None, None, &b, &c, 0.0);
        assert!(e().unwrap().p_value() < 0.05);
        let one = judge_all(&[(&b, &c)], &[e()], 5.0, &NO_DRIFT);
        assert_eq!(one[0].0, "regressed", "{}", one[0].1);
        let three = judge_all(
            &[(&b, &c), (&b, &c), (&b, &c)],
            &[e(), e(), e()],
            5.0,
            &NO_DRIFT,
        );
        for (class, n) in &three {
            assert_eq!(*class, "within noise", "{n}");
            assert_eq!(n["family_size"], 3);
            assert_eq!(n["correction"], "holm");
            let iv = n["interval_ratio"].as_array().unwrap();
            assert!(
                iv[0].as_f64().unwrap() < 1.0 && iv[1].as_f64().unwrap() > 1.0,
                "{n}"
            );
        }
    }

    #[test]
    fn defect_9_a_large_change_inside_the_noise_is_within_noise() {
        // +20% with a spread of ±50%: the trial's "improved 2, regressed 2" on twin runs.
        let (b, c) = (q(10, 10.0, 5.0), q(10, 12.0, 5.0));
        let (class, noise) = judge1(&b, &c, 5.0);
        assert_eq!(class, "within noise", "{noise}");
        assert_eq!(noise["test"], "welch_t");
        assert_eq!(noise["outside_noise"], false);
        let iv = noise["interval_ms"].as_array().unwrap();
        assert!(iv[0].as_f64().unwrap() < 0.0 && iv[1].as_f64().unwrap() > 0.0);
        // The same +20% with a tight spread is a regression; and -20% an improvement.
        let (class, _) = judge1(&q(10, 10.0, 0.5), &q(10, 12.0, 0.5), 5.0);
        assert_eq!(class, "regressed");
        let (class, _) = judge1(&q(10, 12.0, 0.5), &q(10, 10.0, 0.5), 5.0);
        assert_eq!(class, "improved");
        // Significant but below the practical band: unchanged.
        let (class, noise) = judge1(&q(1000, 10.0, 0.1), &q(1000, 10.2, 0.1), 5.0);
        assert_eq!(class, "unchanged");
        assert_eq!(noise["outside_noise"], true);
        // No spread known: the band alone decides, and the record says so.
        let (class, noise) = judge1(&query(json!({"mean_ms": 10.0})), &c, 5.0);
        assert_eq!(class, "regressed");
        assert!(noise["test"].is_null() && noise["reason"].is_string());
    }

    /// A loaded run of `summary` (built by hand: no run directory behind it).
    pub(crate) fn loaded_with(id: &str, summary: Value) -> RecordedRun {
        use crate::run::{Host, Owner, RunKind, RunManifest, Status, ToolInfo};
        let manifest = RunManifest {
            run_id: id.into(),
            run_kind: RunKind::Benchmark,
            product: "greptimedb".into(),
            variant: None,
            phase: "query".into(),
            status: Status::Completed,
            created_at: String::new(),
            updated_at: String::new(),
            finished_at: None,
            tool: ToolInfo::current(),
            command: String::new(),
            flags: Value::Null,
            host: Host::current(None),
            owner: Owner {
                pid: 1,
                host: "h".into(),
            },
            target: crate::summary::tests::fixture_target(),
            environment: None,
            server: None,
            dataset: None,
            query_set: None,
            workload: crate::summary::tests::fixture_workload(),
            data_state: None,
            rerun_of: None,
            error: None,
            resumes: Vec::new(),
        };
        RecordedRun {
            dir: PathBuf::from("/nonexistent").join(id),
            manifest,
            summary: crate::summary::tests::summary_from(summary),
            manifest_sha256: String::new(),
        }
    }

    fn loaded(id: &str, state: &str, sst: u64, mem: u64, mean: f64) -> RecordedRun {
        let summary = json!({
            "label": id,
            "product": "greptimedb",
            "data_state": {"label": state},
            "data_location": {"information_schema": true, "sst_num": sst, "sst_size": sst * 1_000_000, "memtable_size": mem},
            "ingestion": {"status": "reused"},
            "queries": [{"query_type": "lastpoint", "status": "completed", "query_count": 10,
                         "mean_ms": mean, "median_ms": mean, "p95_ms": mean, "stddev_ms": 0.1}],
        });
        loaded_with(id, summary)
    }

    /// Trial 2 N17: Core against Enterprise gave verdicts with no word on the edition.
    #[test]
    fn two_editions_or_licences_are_a_caveat() {
        let with = |id: &str, edition: &str, licence: Option<&str>| {
            let mut s = json!({
                "label": id, "product": "influxdb3", "edition": edition,
                "ingestion": {"status": "reused"},
                "queries": [{"query_type": "lastpoint", "status": "completed", "query_count": 10,
                             "mean_ms": 10.0, "median_ms": 10.0, "p95_ms": 10.0, "stddev_ms": 0.1}],
            });
            if let Some(l) = licence {
                s["server_settings"] = json!({"license": {"type": l}});
            }
            loaded_with(id, s)
        };
        let core = with("core", "core", None);
        let ent = with("ent", "enterprise", Some("trial"));
        let cav = json!(compare_one(&core, &ent, 5.0, &NO_DRIFT))["caveats"].to_string();
        assert!(
            cav.contains("the editions differ: baseline core, candidate enterprise"),
            "{cav}"
        );
        let home = with("home", "enterprise", Some("home"));
        let cav = json!(compare_one(&ent, &home, 5.0, &NO_DRIFT))["caveats"].to_string();
        assert!(!cav.contains("editions differ"), "{cav}");
        assert!(cav.contains("baseline trial, candidate home"), "{cav}");
        let cav = json!(compare_one(
            &core,
            &with("c2", "core", None),
            5.0,
            &NO_DRIFT
        ))["caveats"]
            .to_string();
        assert_eq!(cav, "[]");
        assert!(cav_of("influxdb3", "core", "enterprise")
            .contains("different server builds (storage engine, licence"),);
    }

    fn cav_of(product: &str, a: &str, b: &str) -> String {
        let with = |id: &str, edition: &str| {
            loaded_with(
                id,
                json!({
                    "label": id, "product": product, "edition": edition,
                    "ingestion": {"status": "reused"},
                    "queries": [{"query_type": "lastpoint", "status": "completed", "query_count": 10,
                                 "mean_ms": 10.0, "median_ms": 10.0, "p95_ms": 10.0, "stddev_ms": 0.1}],
                }),
            )
        };
        json!(compare_one(&with("a", a), &with("b", b), 5.0, &NO_DRIFT))["caveats"].to_string()
    }

    /// The wording of two editions is the product's: TimescaleDB's two modes are one server
    /// with other tables, not other server builds with a licence.
    #[test]
    fn two_editions_are_worded_by_their_product() {
        let cav = cav_of("timescaledb", "timescaledb", "postgresql");
        assert!(cav.contains("the editions differ: baseline timescaledb, candidate postgresql; one stores the data in TimescaleDB hypertables"), "{cav}");
        assert!(!cav.contains("licence"), "{cav}");
    }

    #[test]
    fn issue_16_an_unknown_data_state_makes_latency_not_comparable() {
        // The trial: "as loaded" vs "maintenance interrupted: state unknown", +10%, tight.
        let base = loaded("b", "as loaded", 0, 28 << 20, 10.0);
        let cand = loaded("c", "maintenance interrupted: state unknown", 12, 0, 11.0);
        let v = json!(compare_one(&base, &cand, 5.0, &NO_DRIFT));
        assert_eq!(v["verdict"], "not comparable", "{v}");
        assert_eq!(v["queries"][0]["classification"], "not comparable");
        assert_eq!(v["counts"]["regressed"], 0);
        assert!(v["largest_regression"].is_null());
        let cav = v["caveats"].to_string();
        assert!(
            cav.contains("baseline as loaded, candidate maintenance interrupted: state unknown"),
            "{cav}"
        );
        assert!(
            cav.contains("memtables only") && cav.contains("SST files only"),
            "{cav}"
        );
        assert!(cav.contains("--flush-before-queries"), "{cav}");
        let md = render_md(&json!({"product_label": "GreptimeDB", "comparison_id": "x", "database": "benchmark", "dataset": {"dataset_id": null, "sha256": null}, "query_set": {"query_set_id": null}, "threshold_percent": 5.0, "noise_test": {"level": 0.95}, "baseline": {"label": "b", "run_id": "b", "path": "/b"}, "candidates": [v]})).unwrap();
        assert!(md.contains("Caveat on every verdict below"), "{md}");
        assert!(md.contains("not comparable: 1"), "{md}");
    }

    #[test]
    fn issue_16_a_known_state_that_differs_is_a_caveat_on_the_verdicts() {
        let base = loaded("b", "as loaded", 0, 28 << 20, 10.0);
        // 2.5 times slower: beyond the assumed run-to-run drift too.
        let cand = loaded("c", "as loaded, flushed", 12, 0, 25.0);
        let v = json!(compare_one(&base, &cand, 5.0, &NO_DRIFT));
        assert_eq!(v["verdict"], "changed", "{v}");
        assert_eq!(v["queries"][0]["classification"], "regressed");
        let cav = v["caveats"].as_array().unwrap();
        assert_eq!(cav.len(), 2, "{cav:?}");
        assert!(cav[0].as_str().unwrap().contains("data states differ"));
        assert!(cav[1].as_str().unwrap().contains("different places"));
        // Like with like: no caveat.
        let twin = loaded("t", "as loaded", 0, 27 << 20, 10.0);
        let v = json!(compare_one(&base, &twin, 5.0, &NO_DRIFT));
        assert_eq!(v["caveats"], json!([]), "{v}");
        assert_eq!(v["verdict"], "unchanged");
    }

    /// The write settings compared and named are the ones each run's product declares, as
    /// its workload recorded them (InfluxDB 3's durability flags; none for GreptimeDB).
    #[test]
    fn write_settings_are_the_products() {
        let with = |product: &str, workload: Value| {
            let mut s = json!({
                "label": product, "product": product,
                "ingestion": {"status": "completed", "workers": 4, "batch_size": 5000},
                "queries": [],
            });
            s["workload"] = workload;
            loaded_with(product, s).summary
        };
        let bench = json!({"profile": "smoke", "load_workers": 4, "batch_size": 5000,
            "query_workers": 1, "database_mode": "create", "query_counts": {}});
        let mut i3 = bench.clone();
        i3["no_sync"] = json!(true);
        i3["accept_partial"] = json!(false);
        let mut gt = bench.clone();
        gt["no_sync"] = Value::Null;
        gt["accept_partial"] = Value::Null;
        gt["flush_before_queries"] = json!(true);
        let (wi, wg) = (
            write_parameters(&with("influxdb3", i3)),
            write_parameters(&with("greptimedb", gt.clone())),
        );
        assert_eq!(
            describe_write(&wi),
            "4 workers x 5000 rows, no_sync true, accept_partial false"
        );
        assert_eq!(describe_write(&wg), "4 workers x 5000 rows");
        assert_ne!(wi, wg);
        assert_eq!(wg, write_parameters(&with("greptimedb", gt)));
    }

    #[test]
    fn one_worker_is_singular() {
        let w = json!({"workers": 1, "batch_size": 5000, "no_sync": null, "accept_partial": null});
        assert_eq!(describe_write(&w), "1 worker x 5000 rows");
        let w = json!({"workers": 4, "batch_size": 5000, "no_sync": null, "accept_partial": null});
        assert_eq!(describe_write(&w), "4 workers x 5000 rows");
    }

    #[test]
    fn thresholds_are_checked() {
        assert!(check_threshold(5.0).is_ok());
        assert!(check_threshold(0.0).is_ok());
        assert_eq!(check_threshold(-1.0).unwrap_err().exit_code(), 2);
        assert_eq!(check_threshold(f64::NAN).unwrap_err().exit_code(), 2);
    }
}
