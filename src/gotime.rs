//! Go's time grammars as the TSBS generators read them, and one canonical spelling of each
//! value (so equal datasets get equal ids, trial-run #29).
//!
//! The generators parse `--timestamp-start/-end` with `time.Parse(time.RFC3339, s)` and print
//! an error but exit 0 on anything else (real finding C1), so tsbsctl must refuse first. This
//! accepts the subset every Go since 1.20 accepts on its strict RFC 3339 path: `YYYY-MM-DD`,
//! an upper-case `T`, `hh:mm:ss` with seconds 00-59 (no leap second), an optional `.` fraction,
//! and an upper-case `Z` or `±hh:mm`. Go's lenient fallback also takes a one-digit hour or a
//! comma before the fraction; refusing those too is on the safe side.

/// Unix nanoseconds of `s`, or `None` when Go's `time.RFC3339` would not read it.
pub fn parse_rfc3339(s: &str) -> Option<i128> {
    let b = s.as_bytes();
    if b.len() < 20 || !s.is_ascii() {
        return None;
    }
    let num = |r: std::ops::Range<usize>| -> Option<i64> {
        let d = b.get(r)?;
        d.iter()
            .all(u8::is_ascii_digit)
            .then(|| d.iter().fold(0i64, |a, c| a * 10 + i64::from(c - b'0')))
    };
    let sep = |i: usize, c: u8| b.get(i) == Some(&c);
    if !(sep(4, b'-') && sep(7, b'-') && sep(10, b'T') && sep(13, b':') && sep(16, b':')) {
        return None;
    }
    let (year, month, day) = (num(0..4)?, num(5..7)?, num(8..10)?);
    let (hour, minute, second) = (num(11..13)?, num(14..16)?, num(17..19)?);
    if !(1..=12).contains(&month)
        || day < 1
        || day > days_in_month(year, month)
        || hour > 23
        || minute > 59
        || second > 59
    {
        return None;
    }
    let mut rest = &b[19..];
    let mut nanos: i128 = 0;
    if rest.len() >= 2 && rest[0] == b'.' && rest[1].is_ascii_digit() {
        let n = 1 + rest[1..].iter().take_while(|c| c.is_ascii_digit()).count();
        // Go keeps nine digits and drops the rest.
        let mut scale = 100_000_000i128;
        for &c in rest[1..n].iter().take(9) {
            nanos += i128::from(c - b'0') * scale;
            scale /= 10;
        }
        rest = &rest[n..];
    }
    let offset_seconds: i64 = match rest {
        [b'Z'] => 0,
        [sign @ (b'+' | b'-'), h1, h2, b':', m1, m2] => {
            let digits = [*h1, *h2, *m1, *m2];
            if !digits.iter().all(u8::is_ascii_digit) {
                return None;
            }
            let h = i64::from((h1 - b'0') * 10 + (h2 - b'0'));
            let m = i64::from((m1 - b'0') * 10 + (m2 - b'0'));
            if h > 23 || m > 59 {
                return None;
            }
            let o = h * 3600 + m * 60;
            if *sign == b'-' {
                -o
            } else {
                o
            }
        }
        _ => return None,
    };
    let days = days_from_civil(year, month, day);
    let secs = days * 86_400 + hour * 3600 + minute * 60 + second - offset_seconds;
    Some(i128::from(secs) * 1_000_000_000 + nanos)
}

/// The canonical spelling of unix nanoseconds: UTC with `Z`, the fraction without trailing
/// zeros (none when whole), as Go's `RFC3339Nano` prints it.
pub fn format_rfc3339(nanos: i128) -> String {
    let secs = nanos.div_euclid(1_000_000_000) as i64;
    let frac = nanos.rem_euclid(1_000_000_000);
    let (days, tod) = (secs.div_euclid(86_400), secs.rem_euclid(86_400));
    let (y, m, d) = civil_from_days(days);
    let mut s = format!(
        "{y:04}-{m:02}-{d:02}T{:02}:{:02}:{:02}",
        tod / 3600,
        tod % 3600 / 60,
        tod % 60
    );
    if frac != 0 {
        let f = format!("{frac:09}");
        s.push('.');
        s.push_str(f.trim_end_matches('0'));
    }
    s.push('Z');
    s
}

/// The canonical spelling of a positive duration: the largest units first, zero parts left
/// out (`10000ms` → `10s`, `90m` → `1h30m`, `1.5s` → `1s500ms`). What is spelled this way
/// today keeps its spelling (`10s`, `1m`, `1h30m`), so existing dataset ids hold.
pub fn format_duration(nanos: i128) -> String {
    if nanos == 0 {
        return "0s".into();
    }
    let mut s = String::new();
    if nanos < 0 {
        s.push('-');
    }
    let mut rest = nanos.unsigned_abs();
    for (unit, name) in [
        (3_600_000_000_000u128, "h"),
        (60_000_000_000, "m"),
        (1_000_000_000, "s"),
        (1_000_000, "ms"),
        (1_000, "us"),
        (1, "ns"),
    ] {
        let n = rest / unit;
        if n > 0 {
            s.push_str(&format!("{n}{name}"));
            rest -= n * unit;
        }
    }
    s
}

fn days_in_month(y: i64, m: i64) -> i64 {
    match m {
        2 if (y % 4 == 0 && y % 100 != 0) || y % 400 == 0 => 29,
        2 => 28,
        4 | 6 | 9 | 11 => 30,
        _ => 31,
    }
}

/// Days since 1970-01-01 (H. Hinnant's algorithm).
fn days_from_civil(y: i64, m: i64, d: i64) -> i64 {
    let y = if m <= 2 { y - 1 } else { y };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let mp = (m + 9) % 12;
    let doy = (153 * mp + 2) / 5 + d - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era * 146_097 + doe - 719_468
}

fn civil_from_days(z: i64) -> (i64, i64, i64) {
    let z = z + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    (
        if m <= 2 {
            yoe + era * 400 + 1
        } else {
            yoe + era * 400
        },
        m,
        d,
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn go_rfc3339_grammar() {
        let base = 1_686_441_600_000_000_000i128; // 2023-06-11T00:00:00Z
        for ok in [
            "2023-06-11T00:00:00Z",
            "2023-06-11T02:00:00+02:00",
            "2023-06-10T22:30:00-01:30",
            "2023-06-11T00:00:00.000Z",
            "2023-06-11T00:00:00.0000000000001Z",
        ] {
            assert_eq!(parse_rfc3339(ok), Some(base), "{ok}");
        }
        assert_eq!(
            parse_rfc3339("2023-06-11T00:00:00.5Z"),
            Some(base + 500_000_000)
        );
        // What the time crate accepts and Go refuses (real finding C1).
        for bad in [
            "2023-06-11 00:00:00Z",
            "2023-06-11t00:00:00Z",
            "2023-06-11T00:00:00z",
            "2023-06-11 00:00:00z",
            "2016-12-31T23:59:60Z",
            "2023-02-29T00:00:00Z",
            "2023-06-11T24:00:00Z",
            "2023-06-11T00:00:00",
            "2023-06-11T00:00:00+0200",
            "2023-06-11T00:00:00+24:00",
            "2023-06-11T00:00:00.Z",
            "2023-06-11T0:00:00Z",
            "2023-6-11T00:00:00Z",
            "2023-06-11T00:00:00Z ",
            "",
        ] {
            assert_eq!(parse_rfc3339(bad), None, "{bad}");
        }
        assert!(parse_rfc3339("2024-02-29T00:00:00Z").is_some());
        assert_eq!(parse_rfc3339("1970-01-01T00:00:00Z"), Some(0));
        assert_eq!(parse_rfc3339("1969-12-31T23:59:59.5Z"), Some(-500_000_000));
    }

    #[test]
    fn canonical_spellings() {
        for (s, canon) in [
            ("2023-06-11T00:00:00Z", "2023-06-11T00:00:00Z"),
            ("2023-06-11T02:00:00+02:00", "2023-06-11T00:00:00Z"),
            ("2023-06-11T00:00:00.000Z", "2023-06-11T00:00:00Z"),
            ("2023-06-11T00:00:00.250+00:00", "2023-06-11T00:00:00.25Z"),
            ("2024-03-01T00:30:00+01:00", "2024-02-29T23:30:00Z"),
            ("1969-12-31T23:59:59.5Z", "1969-12-31T23:59:59.5Z"),
        ] {
            assert_eq!(format_rfc3339(parse_rfc3339(s).unwrap()), canon, "{s}");
        }
        let d = |s: &str| format_duration(crate::dataset::parse_go_duration(s).unwrap());
        for (s, canon) in [
            ("10s", "10s"),
            ("10000ms", "10s"),
            ("1m", "1m"),
            ("60s", "1m"),
            ("1m0s", "1m"),
            ("90m", "1h30m"),
            ("1h30m", "1h30m"),
            ("1.5s", "1s500ms"),
            ("100ms", "100ms"),
            ("1500us", "1ms500us"),
            ("0.5h", "30m"),
        ] {
            assert_eq!(d(s), canon, "{s}");
        }
    }
}
