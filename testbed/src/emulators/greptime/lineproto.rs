//! InfluxDB line protocol, enough to store rows faithfully: measurement, tag set, field set
//! (with types) and timestamp, with backslash escapes and quoted string fields.

/// Field value types as GreptimeDB maps them.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FieldType {
    Float64,
    Int64,
    UInt64,
    String,
    Boolean,
}

impl FieldType {
    pub fn name(self) -> &'static str {
        match self {
            FieldType::Float64 => "Float64",
            FieldType::Int64 => "Int64",
            FieldType::UInt64 => "UInt64",
            FieldType::String => "String",
            FieldType::Boolean => "Boolean",
        }
    }
}

/// One parsed line. Tag and field names are as written (escaped); see [`unescape`].
#[derive(Debug)]
pub struct Line<'a> {
    pub measurement: String,
    /// Measurement and tag set, as written (the series key).
    pub series: &'a str,
    pub tags: Vec<&'a str>,
    pub fields: Vec<(&'a str, FieldType)>,
    /// The field set, as written.
    pub field_text: &'a str,
    pub timestamp: Option<i64>,
}

pub fn unescape(s: &str) -> String {
    if !s.contains('\\') {
        return s.to_string();
    }
    let mut out = String::with_capacity(s.len());
    let mut chars = s.chars();
    while let Some(c) = chars.next() {
        if c == '\\' {
            if let Some(n) = chars.next() {
                out.push(n);
            }
        } else {
            out.push(c);
        }
    }
    out
}

/// Splits `s` at unescaped `sep` (outside double quotes when `quotes`).
pub fn split_unescaped(s: &str, sep: u8, quotes: bool) -> Vec<&str> {
    let b = s.as_bytes();
    let mut parts = Vec::new();
    let (mut i, mut start, mut in_q) = (0, 0, false);
    while i < b.len() {
        match b[i] {
            b'\\' => i += 1,
            b'"' if quotes => in_q = !in_q,
            c if c == sep && !in_q => {
                parts.push(&s[start..i]);
                start = i + 1;
            }
            _ => {}
        }
        i += 1;
    }
    parts.push(&s[start..]);
    parts
}

/// Index of the first unescaped space (outside quotes when `quotes`) at or after `from`.
fn find_space(b: &[u8], from: usize, quotes: bool) -> Option<usize> {
    let (mut i, mut in_q) = (from, false);
    while i < b.len() {
        match b[i] {
            b'\\' => i += 1,
            b'"' if quotes => in_q = !in_q,
            b' ' if !in_q => return Some(i),
            _ => {}
        }
        i += 1;
    }
    None
}

fn field_type(v: &str) -> Result<FieldType, String> {
    if v.starts_with('"') {
        if v.len() >= 2 && v.ends_with('"') {
            return Ok(FieldType::String);
        }
        return Err(format!("unterminated string field value {v}"));
    }
    match v {
        "t" | "T" | "true" | "True" | "TRUE" | "f" | "F" | "false" | "False" | "FALSE" => {
            return Ok(FieldType::Boolean)
        }
        _ => {}
    }
    if let Some(n) = v.strip_suffix('i') {
        return n
            .parse::<i64>()
            .map(|_| FieldType::Int64)
            .map_err(|_| format!("invalid integer field value {v}"));
    }
    if let Some(n) = v.strip_suffix('u') {
        return n
            .parse::<u64>()
            .map(|_| FieldType::UInt64)
            .map_err(|_| format!("invalid unsigned field value {v}"));
    }
    v.parse::<f64>()
        .map(|_| FieldType::Float64)
        .map_err(|_| format!("invalid float field value {v}"))
}

/// Parses one non-empty, non-comment line.
pub fn parse(line: &str) -> Result<Line<'_>, String> {
    let b = line.as_bytes();
    let series_end = find_space(b, 0, false).ok_or_else(|| "missing fields".to_string())?;
    let series = &line[..series_end];
    let mut parts = split_unescaped(series, b',', false).into_iter();
    let m = parts.next().unwrap_or("");
    if m.is_empty() {
        return Err("missing measurement".into());
    }
    let mut tags = Vec::new();
    for t in parts {
        let kv = split_unescaped(t, b'=', false);
        if kv.len() != 2 || kv[0].is_empty() || kv[1].is_empty() {
            return Err(format!("invalid tag set {t:?}"));
        }
        tags.push(kv[0]);
    }
    let fstart = series_end + 1;
    let fend = find_space(b, fstart, true).unwrap_or(b.len());
    let field_text = &line[fstart..fend];
    if field_text.is_empty() {
        return Err("missing fields".into());
    }
    let mut fields = Vec::new();
    for f in split_unescaped(field_text, b',', true) {
        let Some(eq) = f
            .bytes()
            .enumerate()
            .find(|&(i, c)| c == b'=' && (i == 0 || f.as_bytes()[i - 1] != b'\\'))
            .map(|(i, _)| i)
        else {
            return Err(format!("invalid field {f:?}"));
        };
        let (k, v) = (&f[..eq], &f[eq + 1..]);
        if k.is_empty() || v.is_empty() {
            return Err(format!("invalid field {f:?}"));
        }
        fields.push((k, field_type(v)?));
    }
    let rest = line[fend..].trim();
    let timestamp = if rest.is_empty() {
        None
    } else {
        Some(
            rest.parse::<i64>()
                .map_err(|_| format!("invalid timestamp {rest:?}"))?,
        )
    };
    Ok(Line {
        measurement: unescape(m),
        series,
        tags,
        fields,
        field_text,
        timestamp,
    })
}

/// Nanoseconds per unit of an InfluxDB `precision` value; `None` = not a valid precision.
pub fn precision_factor(p: Option<&str>) -> Option<i64> {
    Some(match p {
        None | Some("n") | Some("ns") => 1,
        Some("u") | Some("us") => 1_000,
        Some("ms") => 1_000_000,
        Some("s") => 1_000_000_000,
        Some("m") => 60_000_000_000,
        Some("h") => 3_600_000_000_000,
        _ => return None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tsbs_line() {
        let l = parse("cpu,hostname=host_0,region=eu-west-1 usage_user=58i,usage_system=2.5 1451606400000000000").unwrap();
        assert_eq!(l.measurement, "cpu");
        assert_eq!(l.series, "cpu,hostname=host_0,region=eu-west-1");
        assert_eq!(l.tags, vec!["hostname", "region"]);
        assert_eq!(
            l.fields,
            vec![
                ("usage_user", FieldType::Int64),
                ("usage_system", FieldType::Float64)
            ]
        );
        assert_eq!(l.timestamp, Some(1451606400000000000));
    }

    #[test]
    fn escapes_quotes_and_errors() {
        let l = parse(r#"my\ m,t\=x=a\ b s="a b, c",b=t"#).unwrap();
        assert_eq!(l.measurement, "my m");
        assert_eq!(l.tags, vec![r"t\=x"]);
        assert_eq!(unescape(l.tags[0]), "t=x");
        assert_eq!(l.fields[0].1, FieldType::String);
        assert_eq!(l.fields[1].1, FieldType::Boolean);
        assert_eq!(l.timestamp, None);
        assert!(parse("cpu").is_err());
        assert!(parse("cpu,host x=1").is_err());
        assert!(parse("cpu x=abc").is_err());
        assert!(parse("cpu x=1 12z").is_err());
        assert!(parse("cpu x=1i 1 2").is_err());
    }
}
