//! The report's resource-timeline charts (issue 24 §7): per run, the server's CPU (user,
//! system), RSS with its peak, bytes read and written, and the data directory's size over
//! time, with every step (load, each query type, maintenance) as a band. The series are kept
//! in the report's `summary.json` in data units (seconds, cores, bytes); [`geometry`] turns
//! them into the SVG the HTML draws (inline, server-side: no script, no asset, printable).

use serde::{Deserialize, Serialize};
use serde_json::{json, Value};

use crate::runlist::RecordedRun;
use crate::sampler::{self, Sample};

/// Points a series keeps at most; a longer run's series keep each bucket's lowest and
/// highest point (a peak is never averaged away).
pub const MAX_POINTS: usize = 1600;
/// A rate is taken over at least this long (CPU time is counted in 10 ms ticks: over a few
/// ms between a boundary sample and a clock sample, a rate would be noise).
const MIN_RATE_SECONDS: f64 = 0.5;

/// One run's timeline, as the report keeps it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RunTimeline {
    /// What was sampled (the run summary's `resources.source`).
    pub source: Option<String>,
    /// Samples in the run's `timeline.jsonl`.
    pub samples: u64,
    /// Why there is no chart.
    pub note: Option<String>,
    pub duration_s: f64,
    pub phases: Vec<PhaseSpan>,
    /// When a new server start's first sample was taken (a restart after a crash or an OOM).
    pub restarts: Vec<f64>,
    pub peak_rss: Option<Peak>,
    /// The server's cgroup memory limit (`--memory`).
    pub memory_limit_bytes: Option<u64>,
    pub series: Vec<Series>,
    /// True when a series kept fewer points than the samples (see [`MAX_POINTS`]).
    pub downsampled: bool,
}

/// A step that ran from `start_s` to `end_s` (the next step's first sample).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PhaseSpan {
    pub phase: String,
    pub start_s: f64,
    pub end_s: f64,
    /// The query type's failure (OOM, server crashed, ...) when it failed.
    pub failure: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Peak {
    pub t: f64,
    pub bytes: u64,
    pub phase: String,
}

/// One line of a panel: `[seconds, value]` points, one segment per server start.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Series {
    /// cpu_user, cpu_system, cpu, rss, read, write, data_dir.
    pub key: String,
    pub label: String,
    /// cpu, rss, io, dir.
    pub panel: String,
    pub segments: Vec<Vec<[f64; 2]>>,
}

/// The timeline of run `l`; `failures` maps a query type to its failure kind.
pub fn of(l: &RecordedRun, failures: &[(String, String)]) -> RunTimeline {
    let samples = sampler::read(&l.dir.join(sampler::TIMELINE_FILE));
    let res = l.summary.resources.as_ref();
    let mut t = RunTimeline {
        source: res.map(|r| r.source.clone()),
        samples: samples.len() as u64,
        note: None,
        duration_s: 0.0,
        phases: Vec::new(),
        restarts: Vec::new(),
        peak_rss: None,
        memory_limit_bytes: l
            .manifest
            .target
            .extra
            .get("server_shape")
            .and_then(|s| s["memory_limit_bytes"].as_u64()),
        series: Vec::new(),
        downsampled: false,
    };
    if samples.is_empty() {
        t.note = Some(match res {
            Some(r) => format!("no samples: {}", r.source),
            None if !l.manifest.target.is_managed() => {
                "no samples: an external server without process metrics".into()
            }
            None => {
                "no timeline in this run (recorded before servers were sampled, or no server ran)"
                    .into()
            }
        });
        return t;
    }
    let t0 = samples[0].elapsed_s;
    let at = |s: &Sample| s.elapsed_s - t0;
    t.duration_s = samples.last().map_or(0.0, at);
    // Steps: consecutive samples of one phase; a span ends at the next one's first sample.
    for s in &samples {
        match t.phases.last_mut() {
            Some(p) if p.phase == s.phase => p.end_s = at(s),
            last => {
                if let Some(p) = last {
                    p.end_s = at(s);
                }
                let failure = s
                    .phase
                    .strip_prefix("query:")
                    .and_then(|q| failures.iter().find(|(t, _)| t == q))
                    .map(|(_, f)| f.clone());
                t.phases.push(PhaseSpan {
                    phase: s.phase.clone(),
                    start_s: at(s),
                    end_s: at(s),
                    failure,
                });
            }
        }
    }
    // Server starts.
    let mut sessions: Vec<&[Sample]> = Vec::new();
    let mut i = 0;
    while i < samples.len() {
        let j = samples[i..]
            .iter()
            .position(|s| s.session != samples[i].session)
            .map_or(samples.len(), |k| i + k);
        sessions.push(&samples[i..j]);
        if i > 0 {
            t.restarts.push(at(&samples[i]));
        }
        i = j;
    }
    for s in &samples {
        if let Some(r) = s.rss_bytes {
            if t.peak_rss.as_ref().is_none_or(|p| r > p.bytes) {
                t.peak_rss = Some(Peak {
                    t: at(s),
                    bytes: r,
                    phase: s.phase.clone(),
                });
            }
        }
    }
    let level = |f: fn(&Sample) -> Option<u64>| -> Vec<Vec<[f64; 2]>> {
        sessions
            .iter()
            .map(|ss| {
                ss.iter()
                    .filter_map(|s| f(s).map(|v| [at(s), v as f64]))
                    .collect()
            })
            .collect()
    };
    let rate = |f: fn(&Sample) -> Option<f64>| -> Vec<Vec<[f64; 2]>> {
        sessions
            .iter()
            .map(|ss| {
                let mut out = Vec::new();
                let mut anchor: Option<(f64, f64)> = None;
                for (k, s) in ss.iter().enumerate() {
                    let Some(v) = f(s) else { continue };
                    let x = at(s);
                    match anchor {
                        None => anchor = Some((x, v)),
                        Some((x0, v0)) => {
                            let dt = x - x0;
                            if dt >= MIN_RATE_SECONDS || (k + 1 == ss.len() && dt > 0.0) {
                                // A tree whose child went unreaped may count less: not negative.
                                out.push([(x0 + x) / 2.0, ((v - v0) / dt).max(0.0)]);
                                anchor = Some((x, v));
                            }
                        }
                    }
                }
                out
            })
            .collect()
    };
    let mut push = |key: &str, label: &str, panel: &str, segments: Vec<Vec<[f64; 2]>>| {
        if segments.iter().any(|s| !s.is_empty()) {
            t.series.push(Series {
                key: key.into(),
                label: label.into(),
                panel: panel.into(),
                segments,
            });
        }
    };
    let split = samples.iter().any(|s| s.cpu_user_s.is_some());
    if split {
        push("cpu_user", "user", "cpu", rate(|s| s.cpu_user_s));
        push("cpu_system", "system", "cpu", rate(|s| s.cpu_system_s));
    } else {
        push("cpu", "user + system", "cpu", rate(|s| s.cpu_s));
    }
    push("rss", "RSS", "rss", level(|s| s.rss_bytes));
    push(
        "read",
        "read",
        "io",
        rate(|s| s.read_bytes.map(|b| b as f64)),
    );
    push(
        "write",
        "written",
        "io",
        rate(|s| s.write_bytes.map(|b| b as f64)),
    );
    push(
        "data_dir",
        "data directory",
        "dir",
        level(|s| s.data_dir_bytes),
    );
    for s in &mut t.series {
        let n: usize = s.segments.iter().map(Vec::len).sum();
        if n > MAX_POINTS {
            t.downsampled = true;
            let per = n.div_ceil(MAX_POINTS / 2);
            for seg in &mut s.segments {
                *seg = seg
                    .chunks(per)
                    .flat_map(|c| {
                        let lo = c.iter().min_by(|a, b| a[1].total_cmp(&b[1])).copied();
                        let hi = c.iter().max_by(|a, b| a[1].total_cmp(&b[1])).copied();
                        let mut v: Vec<[f64; 2]> = lo.into_iter().chain(hi).collect();
                        v.sort_by(|a, b| a[0].total_cmp(&b[0]));
                        v.dedup();
                        v
                    })
                    .collect();
            }
        }
    }
    t
}

/// The panels of the chart.
const PANELS: [(&str, &str, &str); 4] = [
    ("cpu", "CPU (cores: CPU seconds per second)", "cores"),
    ("rss", "Resident memory (RSS)", "bytes"),
    ("io", "Storage I/O (bytes/s)", "bytes/s"),
    ("dir", "Data directory size", "bytes"),
];

fn color(key: &str) -> &'static str {
    match key {
        "cpu_user" | "cpu" => "#0072B2",
        "cpu_system" => "#D55E00",
        "rss" => "#009E73",
        "read" => "#56B4E9",
        "write" => "#CC79A7",
        _ => "#E69F00",
    }
}

/// 1, 2, 2.5 or 5 times a power of ten, at least `v`.
fn nice(v: f64) -> f64 {
    if v <= 0.0 || !v.is_finite() {
        return 1.0;
    }
    let p = 10f64.powf(v.log10().floor());
    [1.0, 2.0, 2.5, 5.0, 10.0]
        .iter()
        .map(|m| m * p)
        .find(|x| *x >= v)
        .unwrap_or(10.0 * p)
}

fn label(v: f64, unit: &str) -> String {
    let b = |x: f64| crate::render::bytes(minijinja::Value::from(x.round() as u64));
    match unit {
        "cores" => format!("{v:.2}"),
        "bytes/s" => format!("{}/s", b(v)),
        _ => b(v),
    }
}

/// The SVG geometry of one run's chart (pixels), for the template.
pub fn geometry(t: &RunTimeline) -> Value {
    let (left, width, ph, title, gap, strip) = (96.0, 860.0, 78.0, 18.0, 14.0, 22.0);
    let dur = t.duration_s.max(1.0);
    let x = |s: f64| left + s / dur * width;
    let mut y = strip + 6.0;
    let mut panels = Vec::new();
    for (panel, heading, unit) in PANELS {
        let series: Vec<&Series> = t.series.iter().filter(|s| s.panel == panel).collect();
        let top = y + title;
        let bottom = top + ph;
        let mut max = series
            .iter()
            .flat_map(|s| s.segments.iter().flatten())
            .map(|p| p[1])
            .fold(0.0, f64::max);
        if panel == "rss" {
            if let Some(l) = t.memory_limit_bytes {
                max = max.max(l as f64);
            }
        }
        let max = nice(max);
        let yv = |v: f64| bottom - (v / max * ph).clamp(0.0, ph);
        let lines: Vec<Value> = series
            .iter()
            .flat_map(|s| {
                s.segments.iter().filter(|g| !g.is_empty()).map(move |g| {
                    let pts: Vec<String> = g
                        .iter()
                        .map(|p| format!("{:.1},{:.1}", x(p[0]), yv(p[1])))
                        .collect();
                    json!({"key": s.key, "color": color(&s.key), "points": pts.join(" "),
                           "n": g.len(), "markers": s.key == "data_dir",
                           "dots": pts.iter().map(|p| {
                               let (a, b) = p.split_once(',').unwrap_or(("0", "0"));
                               json!({"x": a, "y": b})
                           }).collect::<Vec<_>>()})
                })
            })
            .collect();
        let legend: Vec<Value> = series
            .iter()
            .map(|s| json!({"label": s.label, "color": color(&s.key)}))
            .collect();
        let mut extra = json!(null);
        if panel == "rss" {
            extra = json!({
                "peak": t.peak_rss.as_ref().map(|p| json!({"x": x(p.t), "y": yv(p.bytes as f64),
                    "text": format!("peak {} at {:.0} s ({})", label(p.bytes as f64, "bytes"), p.t, p.phase)})),
                "limit": t.memory_limit_bytes.map(|l| json!({"y": yv(l as f64),
                    "text": format!("memory limit {}", label(l as f64, "bytes"))})),
            });
        }
        panels.push(json!({
            "panel": panel, "heading": heading, "ty": y + 12.0, "top": top, "bottom": bottom,
            "ticks": [{"y": bottom, "label": label(0.0, unit)}, {"y": (top + bottom) / 2.0, "label": label(max / 2.0, unit)}, {"y": top, "label": label(max, unit)}],
            "lines": lines, "legend": legend, "extra": extra,
            "empty": series.is_empty(),
        }));
        y = bottom + gap;
    }
    let bottom = y - gap;
    // Time ticks: at most 10.
    let step = nice(dur / 10.0);
    let xticks: Vec<Value> = (0..=((dur / step).floor() as usize))
        .map(|k| json!({"x": x(k as f64 * step), "label": format!("{} s", k as f64 * step)}))
        .collect();
    let mut shaded = 0;
    let phases: Vec<Value> = t
        .phases
        .iter()
        .enumerate()
        .map(|(i, p)| {
            let (x0, x1) = (x(p.start_s), x(p.end_s));
            let name = p.failure.as_ref().map_or(p.phase.clone(), |f| {
                format!("{} ({f})", p.phase.trim_start_matches("query:"))
            });
            let short = p.phase.trim_start_matches("query:");
            let idle = p.phase == crate::bench::timeline::IDLE;
            if !idle {
                shaded += 1;
            }
            let fits = |s: &str| s.chars().count() as f64 * 6.3 + 4.0 <= x1 - x0;
            let text = if p.failure.is_some() && fits(&name) {
                name.clone()
            } else if fits(short) {
                short.to_string()
            } else if fits(&(i + 1).to_string()) {
                (i + 1).to_string()
            } else {
                String::new()
            };
            json!({
                "n": i + 1, "name": name, "x": x0, "w": (x1 - x0).max(0.5), "text": text,
                "idle": idle, "failed": p.failure.is_some(),
                "fill": if p.failure.is_some() { "#fbe3e3" } else if idle { "none" } else if shaded % 2 == 1 { "#eef3f9" } else { "#f8f8f8" },
                "start": format!("{:.1}", p.start_s), "end": format!("{:.1}", p.end_s),
            })
        })
        .collect();
    json!({
        "width": left + width + 20.0,
        "height": bottom + 30.0,
        "left": left, "right": left + width, "strip_y": 4.0, "strip_h": strip - 6.0,
        "top": strip, "bottom": bottom,
        "panels": panels, "xticks": xticks, "phases": phases,
        "restarts": t.restarts.iter().map(|r| x(*r)).collect::<Vec<_>>(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample(t: f64, phase: &str, session: u32, cpu: f64, rss: u64) -> Sample {
        serde_json::from_value(json!({"t": "x", "elapsed_s": t, "phase": phase,
            "session": session, "source": "proc", "pid": 1, "processes": 1,
            "cpu_user_s": cpu, "cpu_system_s": cpu / 2.0, "cpu_s": cpu * 1.5,
            "rss_bytes": rss, "read_bytes": 0, "write_bytes": (t * 1000.0) as u64}))
        .unwrap()
    }

    #[test]
    fn rates_skip_short_intervals_sessions_break_lines_and_the_peak_is_kept() {
        let d = tempfile::tempdir().unwrap();
        let ss = [
            sample(0.0, "load", 1, 0.0, 10),
            sample(1.0, "load", 1, 1.0, 50),
            sample(1.01, "query:a", 1, 1.01, 40),
            sample(2.0, "query:a", 1, 2.0, 30),
            sample(3.0, "query:b", 2, 0.0, 20),
            sample(4.0, "query:b", 2, 0.5, 25),
        ];
        let text: String = ss
            .iter()
            .map(|s| serde_json::to_string(s).unwrap() + "\n")
            .collect();
        std::fs::write(d.path().join(sampler::TIMELINE_FILE), text).unwrap();
        let mut l = crate::compare::tests::loaded_with("r", json!({}));
        l.dir = d.path().to_path_buf();
        let t = of(&l, &[("b".into(), "server crashed".into())]);
        assert_eq!(t.samples, 6);
        let s = |k: &str| t.series.iter().find(|s| s.key == k).unwrap();
        // RSS: a point per sample, one segment per server start.
        assert_eq!(
            s("rss").segments.iter().map(Vec::len).collect::<Vec<_>>(),
            [4, 2]
        );
        // The 10 ms step is folded into the next: 2 rates in session 1, 1 in session 2.
        let u = &s("cpu_user").segments;
        assert_eq!(u[0].len(), 2, "{u:?}");
        assert!((u[0][1][1] - 1.0).abs() < 1e-9, "{u:?}");
        assert_eq!(u[1], vec![[3.5, 0.5]]);
        assert_eq!(t.peak_rss.as_ref().unwrap().bytes, 50);
        assert_eq!(t.restarts, [3.0]);
        let names: Vec<&str> = t.phases.iter().map(|p| p.phase.as_str()).collect();
        assert_eq!(names, ["load", "query:a", "query:b"]);
        assert_eq!(t.phases[2].failure.as_deref(), Some("server crashed"));
        assert_eq!((t.phases[1].start_s, t.phases[1].end_s), (1.01, 3.0));
        let g = geometry(&t);
        assert_eq!(g["panels"][1]["lines"][0]["n"], 4);
        assert_eq!(g["phases"][2]["failed"], true);
    }

    #[test]
    fn a_long_timeline_keeps_each_buckets_extremes() {
        let d = tempfile::tempdir().unwrap();
        let n = 5000;
        let text: String = (0..n)
            .map(|i| {
                let rss = if i == 3333 {
                    9999
                } else {
                    100 + (i % 7) as u64
                };
                serde_json::to_string(&sample(i as f64, "load", 1, i as f64, rss)).unwrap() + "\n"
            })
            .collect();
        std::fs::write(d.path().join(sampler::TIMELINE_FILE), text).unwrap();
        let mut l = crate::compare::tests::loaded_with("r", json!({}));
        l.dir = d.path().to_path_buf();
        let t = of(&l, &[]);
        assert!(t.downsampled);
        let rss = &t.series.iter().find(|s| s.key == "rss").unwrap().segments[0];
        assert!(
            rss.len() <= MAX_POINTS && rss.len() > MAX_POINTS / 2,
            "{}",
            rss.len()
        );
        assert!(rss.iter().any(|p| p[1] == 9999.0));
    }
}
