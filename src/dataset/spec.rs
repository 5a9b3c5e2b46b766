//! The logical dataset's spec (benchmark.md §1.1): the workload profiles, the six spec fields
//! with their automatic id, validation and canonical spelling, the explicit-flag overrides, and
//! the RFC 3339 / Go-duration grammar TSBS reads them with.

use serde::{Deserialize, Serialize};
use serde_json::Value;

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
                .with_hint("use cpu-only (the use case the benchmarks load)"));
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

    /// Rows TSBS writes for this spec, when the use case has a fixed shape (one row per host
    /// and timestamp, ten metrics per row for cpu-only).
    pub fn expected_rows(&self) -> Result<Option<(u64, u64)>> {
        if self.use_case != "cpu-only" {
            return Ok(None);
        }
        let rows = self.scale.checked_mul(self.intervals()?).ok_or_else(|| {
            Error::invalid("scale × intervals overflows")
                .with_hint("use a smaller --scale or time range")
        })?;
        Ok(Some((rows, 10)))
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
        assert_eq!(s.expected_rows().unwrap(), Some((86_400, 10)));
        let m = Profile::Manual.spec();
        assert_eq!(m.expected_rows().unwrap(), Some((103_680_000, 10)));
    }
}
