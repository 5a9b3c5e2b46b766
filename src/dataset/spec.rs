//! The logical dataset's spec (benchmark.md §1.1): the workload profiles, the six spec fields
//! with their automatic id, validation and canonical spelling, the explicit-flag overrides, and
//! the RFC 3339 / Go-duration grammar TSBS reads them with.

use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::usecase::{use_case, use_case_names, UseCase};
use crate::error::{Error, Result};

/// The workload profiles (benchmark.md §1.1, §2.2).
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Profile {
    Manual,
    Smoke,
}

impl Profile {
    pub fn as_str(self) -> &'static str {
        match self {
            Profile::Manual => "manual",
            Profile::Smoke => "smoke",
        }
    }

    /// The profile's dataset spec.
    pub fn spec(self) -> DatasetSpec {
        let (end, scale) = match self {
            Profile::Manual => ("2023-06-14T00:00:00Z", 4000),
            Profile::Smoke => ("2023-06-12T00:00:00Z", 10),
        };
        DatasetSpec {
            use_case: "cpu-only".into(),
            start: "2023-06-11T00:00:00Z".into(),
            end: end.into(),
            scale,
            seed: 123,
            log_interval: "10s".into(),
        }
    }
}

/// The six fields that define a logical dataset (benchmark.md §1.1). The serialization format
/// is deliberately not part of it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct DatasetSpec {
    pub use_case: String,
    pub start: String,
    pub end: String,
    pub scale: u64,
    pub seed: i64,
    pub log_interval: String,
}

impl DatasetSpec {
    pub fn to_value(&self) -> Value {
        serde_json::to_value(self).expect("a spec serializes")
    }

    /// The automatic id: `<use-case slug>-s<scale>-<12 hex of the spec digest>` (§1.2).
    pub fn auto_id(&self) -> String {
        let digest = crate::canonical::spec_digest(&self.to_value());
        let mut slug = String::new();
        for c in self.use_case.to_lowercase().chars() {
            if c.is_ascii_lowercase() || c.is_ascii_digit() {
                slug.push(c);
            } else if !slug.ends_with('-') {
                slug.push('-');
            }
        }
        let slug = slug.trim_matches('-');
        let slug = if slug.is_empty() { "data" } else { slug };
        format!("{slug}-s{}-{}", self.scale, &digest[..12])
    }

    /// Checks what TSBS would otherwise misread silently (exit 2).
    pub fn validate(&self) -> Result<()> {
        if self.use_case.trim().is_empty() {
            return Err(Error::invalid("--use-case must not be empty")
                .with_hint(format!("use one of: {}", use_case_names())));
        }
        if use_case(&self.use_case).is_none() {
            return Err(Error::invalid(format!(
                "--use-case {:?} is not one tsbsctl generates, loads and checks",
                self.use_case
            ))
            .with_hint(format!(
                "use one of: {} (TSBS's cpu-single and devops-generic are not supported)",
                use_case_names()
            )));
        }
        if self.scale == 0 {
            return Err(
                Error::invalid("--scale must be positive").with_hint("give a host count ≥ 1")
            );
        }
        if self.seed == 0 {
            return Err(Error::invalid(
                "--seed 0 asks TSBS for a time-based seed, which makes the dataset unreproducible",
            )
            .with_hint("give a non-zero seed (the profiles use 123)"));
        }
        let start = parse_rfc3339(&self.start, "--start")?;
        let end = parse_rfc3339(&self.end, "--end")?;
        if end <= start {
            return Err(Error::invalid(format!(
                "--end {} is not after --start {}",
                self.end, self.start
            ))
            .with_hint("give an end time later than the start time"));
        }
        match parse_go_duration(&self.log_interval) {
            Some(d) if d > 0 => {}
            _ => {
                return Err(Error::invalid(format!(
                    "--log-interval {:?} is not a positive Go duration",
                    self.log_interval
                ))
                .with_hint("use a duration such as 10s, 1m or 1h30m"))
            }
        }
        Ok(())
    }

    /// The same spec with its one canonical spelling: timestamps in UTC with `Z` and no
    /// redundant fraction, the interval in its shortest unit form. Equal data then gets one
    /// id (trial-run #29); a canonically spelled spec is returned unchanged. Invalid fields
    /// are left as they are (validation reports them).
    pub fn canonical(&self) -> DatasetSpec {
        let mut c = self.clone();
        if let Some(n) = crate::gotime::parse_rfc3339(&c.start) {
            c.start = crate::gotime::format_rfc3339(n);
        }
        if let Some(n) = crate::gotime::parse_rfc3339(&c.end) {
            c.end = crate::gotime::format_rfc3339(n);
        }
        if let Some(n) = parse_go_duration(&c.log_interval).filter(|n| *n > 0) {
            c.log_interval = crate::gotime::format_duration(n);
        }
        c
    }

    /// floor((end - start) / interval) (the number of timestamps TSBS generates).
    pub fn intervals(&self) -> Result<u64> {
        let start = parse_rfc3339(&self.start, "--start")?;
        let end = parse_rfc3339(&self.end, "--end")?;
        let step = parse_go_duration(&self.log_interval)
            .filter(|d| *d > 0)
            .ok_or_else(|| {
                Error::invalid(format!("--log-interval {:?} is invalid", self.log_interval))
            })?;
        Ok(((end - start).max(0) / step) as u64)
    }

    /// The spec's use case (exit 2 for one tsbsctl does not take).
    pub fn use_case(&self) -> Result<&'static UseCase> {
        use_case(&self.use_case).ok_or_else(|| {
            Error::invalid(format!(
                "use case {:?} is not one tsbsctl generates, loads and checks",
                self.use_case
            ))
            .with_hint(format!("use one of: {}", use_case_names()))
        })
    }

    /// The rows TSBS writes for this spec (benchmark.md §1): one per table, device and
    /// interval (`scale × floor((end - start) / interval)` per table). Exact for cpu-only and
    /// devops; for iot an upper bound, as it drops batches and entries at random.
    pub fn expected_rows(&self) -> Result<ExpectedRows> {
        let uc = self.use_case()?;
        let overflow = || {
            Error::invalid("scale × intervals overflows")
                .with_hint("use a smaller --scale or time range")
        };
        let per_table = self
            .scale
            .checked_mul(self.intervals()?)
            .ok_or_else(overflow)?;
        let rows = per_table
            .checked_mul(uc.tables.len() as u64)
            .ok_or_else(overflow)?;
        Ok(ExpectedRows {
            rows,
            per_table,
            exact: uc.fixed_rows,
            metrics: per_table.saturating_mul(uc.metrics_per_interval()),
        })
    }

    /// `field=value` differences against `other`, for conflict messages.
    pub fn differences(&self, other: &DatasetSpec) -> Vec<String> {
        let a = self.to_value();
        let b = other.to_value();
        let mut out = Vec::new();
        for key in ["use_case", "start", "end", "scale", "seed", "log_interval"] {
            if a[key] != b[key] {
                out.push(format!("{key}: stored {} vs requested {}", a[key], b[key]));
            }
        }
        out
    }
}

/// The rows a spec gives ([`DatasetSpec::expected_rows`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ExpectedRows {
    /// All tables; exact, or the most when not `exact`.
    pub rows: u64,
    /// Each table (exact, or the most).
    pub per_table: u64,
    pub exact: bool,
    /// Metrics of `rows` rows with every value present (influx format).
    pub metrics: u64,
}

/// RFC 3339 as Go's `time.RFC3339` reads it, to unix nanoseconds. The real generator prints an
/// error and exits 0 on anything else, so this refuses it first (see [`crate::gotime`]).
pub fn parse_rfc3339(s: &str, flag: &str) -> Result<i128> {
    crate::gotime::parse_rfc3339(s).ok_or_else(|| {
        Error::invalid(format!(
            "{flag} {s:?} is not an RFC 3339 timestamp as TSBS (Go) reads it: \
             YYYY-MM-DDThh:mm:ss with an upper-case T, seconds 00-59, then Z or ±hh:mm"
        ))
        .with_hint("use a timestamp such as 2023-06-11T00:00:00Z")
    })
}

/// Go's `time.ParseDuration`, in nanoseconds.
pub fn parse_go_duration(s: &str) -> Option<i128> {
    let (neg, mut rest) = match s.strip_prefix('-') {
        Some(r) => (true, r),
        None => (false, s.strip_prefix('+').unwrap_or(s)),
    };
    if rest == "0" {
        return Some(0);
    }
    if rest.is_empty() {
        return None;
    }
    let mut total: i128 = 0;
    while !rest.is_empty() {
        let end = rest
            .find(|c: char| !(c.is_ascii_digit() || c == '.'))
            .unwrap_or(rest.len());
        let num = &rest[..end];
        if num.is_empty() || num == "." || num.matches('.').count() > 1 {
            return None;
        }
        rest = &rest[end..];
        let uend = rest
            .find(|c: char| c.is_ascii_digit() || c == '.')
            .unwrap_or(rest.len());
        let unit: i128 = match &rest[..uend] {
            "ns" => 1,
            "us" | "µs" | "μs" => 1_000,
            "ms" => 1_000_000,
            "s" => 1_000_000_000,
            "m" => 60_000_000_000,
            "h" => 3_600_000_000_000,
            _ => return None,
        };
        rest = &rest[uend..];
        let (int, frac) = num.split_once('.').unwrap_or((num, ""));
        let int: i128 = if int.is_empty() { 0 } else { int.parse().ok()? };
        let mut value = int.checked_mul(unit)?;
        let mut scale = unit;
        for d in frac.bytes() {
            scale /= 10;
            value += (d - b'0') as i128 * scale;
        }
        total = total.checked_add(value)?;
    }
    Some(if neg { -total } else { total })
}

/// Explicit spec flags (`--use-case --start --end --scale --seed --log-interval`) and the
/// profile; `None` means "not given".
#[derive(Debug, Clone, Default)]
pub struct SpecOverrides {
    pub profile: Option<Profile>,
    pub use_case: Option<String>,
    pub start: Option<String>,
    pub end: Option<String>,
    pub scale: Option<i64>,
    pub seed: Option<i64>,
    pub log_interval: Option<String>,
}

impl SpecOverrides {
    /// Applies the explicit flags on top of `base`.
    pub fn apply(&self, mut base: DatasetSpec) -> Result<DatasetSpec> {
        if let Some(v) = &self.use_case {
            base.use_case = v.clone();
        }
        if let Some(v) = &self.start {
            base.start = v.clone();
        }
        if let Some(v) = &self.end {
            base.end = v.clone();
        }
        if let Some(v) = self.scale {
            if v <= 0 {
                return Err(
                    Error::invalid("--scale must be positive").with_hint("give a host count ≥ 1")
                );
            }
            base.scale = v as u64;
        }
        if let Some(v) = self.seed {
            base.seed = v;
        }
        if let Some(v) = &self.log_interval {
            base.log_interval = v.clone();
        }
        Ok(base)
    }

    /// True when any spec field (or the profile) was given.
    pub fn any(&self) -> bool {
        self.profile.is_some()
            || self.use_case.is_some()
            || self.start.is_some()
            || self.end.is_some()
            || self.scale.is_some()
            || self.seed.is_some()
            || self.log_interval.is_some()
    }
}

/// The generator command line (benchmark.md §3.1).
pub fn generator_args(spec: &DatasetSpec, format: &str) -> Vec<String> {
    vec![
        format!("--use-case={}", spec.use_case),
        format!("--seed={}", spec.seed),
        format!("--scale={}", spec.scale),
        format!("--timestamp-start={}", spec.start),
        format!("--timestamp-end={}", spec.end),
        format!("--log-interval={}", spec.log_interval),
        format!("--format={format}"),
    ]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn go_durations() {
        assert_eq!(parse_go_duration("10s"), Some(10_000_000_000));
        assert_eq!(parse_go_duration("1m30s"), Some(90_000_000_000));
        assert_eq!(parse_go_duration("1.5h"), Some(5_400_000_000_000));
        assert_eq!(parse_go_duration("100ms"), Some(100_000_000));
        assert_eq!(parse_go_duration("10"), None);
        assert_eq!(parse_go_duration("1.2.3s"), None);
        assert_eq!(parse_go_duration(""), None);
    }

    #[test]
    fn profile_specs_and_rows() {
        let s = Profile::Smoke.spec();
        let e = s.expected_rows().unwrap();
        assert_eq!((e.rows, e.exact, e.metrics), (86_400, true, 864_000));
        let m = Profile::Manual.spec();
        assert_eq!(m.expected_rows().unwrap().rows, 103_680_000);
    }

    /// devops: nine tables, each scale x intervals rows (`devops/generate_data.go`
    /// `maxPoints = epochs * hosts * len(measurements)`); iot: two tables, at most as many
    /// (`common/simulator.go`), fewer after the dropped batches and entries.
    #[test]
    fn rows_per_use_case() {
        let mut s = Profile::Smoke.spec();
        s.use_case = "devops".into();
        let e = s.expected_rows().unwrap();
        assert_eq!((e.rows, e.per_table, e.exact), (9 * 86_400, 86_400, true));
        assert_eq!(e.metrics, 86_400 * 101);
        s.use_case = "iot".into();
        let e = s.expected_rows().unwrap();
        assert_eq!((e.rows, e.per_table, e.exact), (2 * 86_400, 86_400, false));
        s.use_case = "cpu-single".into();
        let err = s.validate().unwrap_err();
        assert_eq!(err.kind, crate::error::ErrorKind::Invalid);
        assert!(err.message.contains("cpu-single"), "{}", err.message);
        assert!(s.expected_rows().is_err());
    }
}
