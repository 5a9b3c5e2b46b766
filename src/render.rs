//! The one minijinja environment every rendered Markdown/HTML file uses (`summary.md`,
//! comparisons, reports), and its filters: `num`, `bytes`, `cell`, `pct`, `ratio`.

use crate::error::{Error, Result};

/// A minijinja environment with the table filters of `summary.md` plus `pct`, `ratio`.
pub fn template_env(
    name: &'static str,
    source: &'static str,
) -> Result<minijinja::Environment<'static>> {
    let mut env = minijinja::Environment::new();
    env.set_trim_blocks(true);
    env.set_lstrip_blocks(true);
    env.add_filter("num", num);
    env.add_filter("bytes", bytes);
    env.add_filter("cell", cell);
    env.add_filter("pct", pct);
    env.add_filter("ratio", ratio);
    env.add_template(name, source)
        .map_err(|e| Error::failed(format!("template {name}: {e}")))?;
    Ok(env)
}

fn opt_f64(v: &minijinja::Value) -> Option<f64> {
    if v.is_none() || v.is_undefined() {
        return None;
    }
    f64::try_from(v.clone()).ok()
}

/// `+12.34%`; `-` when undefined.
fn pct(v: minijinja::Value) -> String {
    match opt_f64(&v) {
        Some(p) => format!("{p:+.2}%"),
        None => "-".into(),
    }
}

/// `1.234x`; `-` when undefined.
fn ratio(v: minijinja::Value) -> String {
    match opt_f64(&v) {
        Some(r) => format!("{r:.3}x"),
        None => "-".into(),
    }
}

/// A number with `d` decimals and thousands separators; `-` when absent.
pub fn num(v: minijinja::Value, d: Option<u32>) -> String {
    let Some(f) = f64::try_from(v.clone())
        .ok()
        .filter(|_| !v.is_none() && !v.is_undefined())
    else {
        return "-".into();
    };
    let d = d.unwrap_or(0) as usize;
    let s = format!("{:.*}", d, f.abs());
    let (int, frac) = s.split_once('.').unwrap_or((&s, ""));
    let mut out = String::new();
    for (i, c) in int.chars().enumerate() {
        if i > 0 && (int.len() - i) % 3 == 0 {
            out.push(',');
        }
        out.push(c);
    }
    if !frac.is_empty() {
        out.push('.');
        out.push_str(frac);
    }
    if f < 0.0 {
        out.insert(0, '-');
    }
    out
}

/// Bytes in MiB/GiB; `-` when absent.
pub fn bytes(v: minijinja::Value) -> String {
    let Some(b) = u64::try_from(v.clone()).ok().filter(|_| !v.is_none()) else {
        return "-".into();
    };
    let f = b as f64;
    if f >= 1024.0 * 1024.0 * 1024.0 {
        format!("{:.2} GiB", f / (1024.0 * 1024.0 * 1024.0))
    } else if f >= 1024.0 * 1024.0 {
        format!("{:.2} MiB", f / (1024.0 * 1024.0))
    } else if f >= 1024.0 {
        format!("{:.1} KiB", f / 1024.0)
    } else {
        format!("{b} B")
    }
}

/// A value safe inside a Markdown table cell (`|` escaped, one line); `-` when absent.
pub fn cell(v: minijinja::Value) -> String {
    if v.is_none() || v.is_undefined() {
        return "-".into();
    }
    let s = v
        .as_str()
        .map(str::to_string)
        .unwrap_or_else(|| v.to_string());
    s.replace('|', "\\|").replace('\n', " ")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn filters() {
        assert_eq!(
            num(minijinja::Value::from(1234567.891), Some(2)),
            "1,234,567.89"
        );
        assert_eq!(num(minijinja::Value::from(12), None), "12");
        assert_eq!(num(minijinja::Value::from(()), Some(2)), "-");
        assert_eq!(bytes(minijinja::Value::from(3u64 << 20)), "3.00 MiB");
        assert_eq!(cell(minijinja::Value::from("a|b\nc")), "a\\|b c");
    }

    #[test]
    fn percent_and_ratio() {
        assert_eq!(pct(minijinja::Value::from(12.345)), "+12.35%");
        assert_eq!(pct(minijinja::Value::from(())), "-");
        assert_eq!(ratio(minijinja::Value::from(1.5)), "1.500x");
    }
}
