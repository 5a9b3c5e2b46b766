//! The latency table's statistics (issue 24 §6-§7): each cell's 95% interval of the mean (the
//! whiskers of the latency chart), and the ★, decided by the model of `runs compare`
//! ([`crate::compare::Evidence`]) with Holm's correction over every ★ claim of the table.

use serde_json::json;

use crate::compare::{observations, Evidence};
use crate::noise::{Observations, LEVEL};
use crate::runlist::RecordedRun;
use crate::summary::QuerySummary;

use super::{clear_lead, QueryRow, FASTEST_MARGIN};

/// The 95% interval of one run's mean of one type, and what it was computed from:
/// `passes` (Student's t over the passes' means, P - 1 degrees of freedom: run-to-run
/// variance measured), `queries` (Student's t over the per-query latencies of the runner's
/// log, one pass) or `summary` (the runner's count, mean and stddev, one pass, no log).
pub fn mean_interval(l: &RecordedRun, q: &QuerySummary) -> Option<(f64, f64, &'static str)> {
    let t_interval = |x: &[f64]| -> Option<(f64, f64)> {
        let n = x.len();
        (n >= 2).then(|| {
            let m = x.iter().sum::<f64>() / n as f64;
            let var = x.iter().map(|v| (v - m).powi(2)).sum::<f64>() / (n as f64 - 1.0);
            let h = crate::noise::t_quantile(1.0 - (1.0 - LEVEL) / 2.0, n as f64 - 1.0)
                * (var / n as f64).sqrt();
            (m - h, m + h)
        })
    };
    let means = |p: &[Vec<f64>]| -> Vec<f64> {
        p.iter()
            .map(|x| x.iter().sum::<f64>() / x.len().max(1) as f64)
            .collect()
    };
    match observations(&l.dir, q) {
        Some(Observations::Queries(p)) if p.len() >= 2 => {
            t_interval(&means(&p)).map(|(a, b)| (a, b, "passes"))
        }
        Some(Observations::PassMeans(m)) if m.len() >= 2 => {
            t_interval(&m).map(|(a, b)| (a, b, "passes"))
        }
        Some(Observations::Queries(p)) if p.len() == 1 => {
            t_interval(&p[0]).map(|(a, b)| (a, b, "queries"))
        }
        _ => {
            let s = q.noise_sample()?;
            (s.count >= 2).then(|| {
                let n = s.count as f64;
                let h = crate::noise::t_quantile(1.0 - (1.0 - LEVEL) / 2.0, n - 1.0) * s.stddev
                    / n.sqrt();
                (s.mean - h, s.mean + h, "summary")
            })
        }
    }
}

/// Sets `fastest` and `lead_within_noise` of every row: the lowest mean with a lead beyond
/// [`FASTEST_MARGIN`] over every other measured run is starred only when each of its leads is
/// outside the noise by the model of `runs compare`, Holm-corrected over all the leads the
/// table tests at once (family-wise level 1 - [`LEVEL`]). A pair the model cannot judge (a
/// run without count or stddev) is left to the margin, as `runs compare` does. The leader's
/// `lead` records each test.
pub fn decide(loaded: &[RecordedRun], rows: &mut [QueryRow]) {
    struct Claim {
        row: usize,
        leader: usize,
        pairs: Vec<(usize, Option<Evidence>)>,
    }
    let find = |l: &RecordedRun, t: &str| -> Option<QuerySummary> {
        l.summary
            .queries
            .iter()
            .find(|q| q.query_type == t)
            .cloned()
    };
    let mut claims = Vec::new();
    for (r, row) in rows.iter().enumerate() {
        let values: Vec<f64> = row.cells.iter().filter_map(|c| c.mean()).collect();
        let min = values.iter().cloned().fold(f64::INFINITY, f64::min);
        let Some(leader) = row.cells.iter().position(|c| c.mean() == Some(min)) else {
            continue;
        };
        if values.len() < 2
            || !clear_lead(&values, min, |x, best| x >= best * (1.0 + FASTEST_MARGIN))
        {
            continue;
        }
        let lq = find(&loaded[leader], &row.query_type);
        let pairs = row
            .cells
            .iter()
            .enumerate()
            .filter(|(i, c)| *i != leader && c.mean().is_some())
            .map(|(i, _)| {
                let e = match (&lq, find(&loaded[i], &row.query_type)) {
                    (Some(b), Some(q)) => Evidence::of(&loaded[leader], b, &loaded[i], &q),
                    _ => None,
                };
                (i, e)
            })
            .collect();
        claims.push(Claim {
            row: r,
            leader,
            pairs,
        });
    }
    let tested: Vec<(usize, usize)> = claims
        .iter()
        .enumerate()
        .flat_map(|(c, cl)| {
            cl.pairs
                .iter()
                .enumerate()
                .filter(|(_, (_, e))| e.is_some())
                .map(move |(k, _)| (c, k))
        })
        .collect();
    let p: Vec<f64> = tested
        .iter()
        .map(|&(c, k)| claims[c].pairs[k].1.as_ref().map_or(1.0, Evidence::p_value))
        .collect();
    let holm = crate::noise::holm(&p, 1.0 - LEVEL);
    for (c, cl) in claims.iter().enumerate() {
        let mut all_outside = true;
        let mut against = Vec::new();
        for (k, (other, e)) in cl.pairs.iter().enumerate() {
            let label = loaded[*other].summary.label.clone();
            let Some(e) = e else {
                against.push(json!({"run": label, "test": null,
                    "reason": "a run lacks the count or stddev of this type: the margin alone decides"}));
                continue;
            };
            let j = tested.iter().position(|&x| x == (c, k)).unwrap_or(0);
            let (reject, level, adjusted) = holm[j];
            let (ratio, (lo, hi)) = e.interval(level);
            // The other run over the leader: beyond 1 all along is a lead.
            let outside = reject && lo > 1.0;
            all_outside &= outside;
            against.push(
                json!({"run": label, "ratio": ratio, "interval_ratio": [lo, hi],
                "interval_level": 1.0 - level, "p_value": p[j], "adjusted_p_value": adjusted,
                "outside_noise": outside}),
            );
        }
        let cell = &mut rows[cl.row].cells[cl.leader];
        cell.fastest = all_outside;
        cell.lead_within_noise = !all_outside;
        cell.lead = Some(json!({
            "correction": "holm",
            "family_size": tested.len(),
            "level": LEVEL,
            "against": against,
        }));
    }
}

/// What the intervals of one run's cells were computed from, for the chart's legend.
pub fn sources_legend(sources: &[Option<String>]) -> String {
    let mut s: Vec<&str> = sources.iter().flatten().map(String::as_str).collect();
    s.sort();
    s.dedup();
    let word = |x: &str| match x {
        "passes" => "the passes' means",
        "queries" => "per-query latencies",
        _ => "the runner's count, mean and stddev",
    };
    match s.as_slice() {
        [] => "no interval".into(),
        [one] => format!("from {}", word(one)),
        more => format!(
            "from {}",
            more.iter()
                .map(|x| word(x))
                .collect::<Vec<_>>()
                .join(" or ")
        ),
    }
}

/// A cell's interval for `summary.json`.
///
/// The bounds are widened by half of 0.01 ms, the precision of the runner's per-query
/// latencies, and rounded outward to it: the interval comes from those latencies, the cell's
/// mean from the runner's own summary, and two passes with equal means gave an interval of no
/// width that the summary's mean fell a microsecond outside of.
pub fn interval_json(iv: Option<(f64, f64, &str)>) -> (Option<[f64; 2]>, Option<String>) {
    match iv {
        Some((a, b, s)) if a.is_finite() && b.is_finite() => (
            Some([
                ((a - 0.005) * 100.0).floor() / 100.0,
                ((b + 0.005) * 100.0).ceil() / 100.0,
            ]),
            Some(s.to_string()),
        ),
        _ => (None, None),
    }
}

#[cfg(test)]
mod interval_tests {
    /// A real cell of a loaded run: two equal pass means, the summary's mean 29.312 ms.
    #[test]
    fn a_zero_width_interval_holds_the_rounded_mean() {
        let (iv, src) =
            super::interval_json(Some((29.313333333333333, 29.313333333333333, "passes")));
        let [a, b] = iv.unwrap();
        assert!(a <= 29.312 && 29.312 <= b, "{a} {b}");
        assert_eq!((a, b), (29.3, 29.32));
        assert_eq!(src.as_deref(), Some("passes"));
    }
}
