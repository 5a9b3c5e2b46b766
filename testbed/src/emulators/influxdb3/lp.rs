//! Line protocol parsing (the subset InfluxDB 3 accepts: escapes, tags, typed fields, an
//! optional integer timestamp) with error texts in the style of `influxdb_line_protocol`.

/// A typed field value.
#[derive(Debug, Clone, PartialEq)]
pub enum Field {
    F(f64),
    I(i64),
    U(u64),
    S(String),
    B(bool),
}

impl Field {
    /// The catalog type name (`iox::column_type::field::<t>`).
    pub fn type_name(&self) -> &'static str {
        match self {
            Field::F(_) => "float",
            Field::I(_) => "integer",
            Field::U(_) => "uinteger",
            Field::S(_) => "string",
            Field::B(_) => "boolean",
        }
    }

    /// Line-protocol rendering (used to persist normalised lines).
    pub fn render(&self) -> String {
        match self {
            Field::F(v) => {
                let s = format!("{v}");
                if s.contains(['.', 'e', 'E', 'i', 'N']) {
                    s
                } else {
                    format!("{s}.0")
                }
            }
            Field::I(v) => format!("{v}i"),
            Field::U(v) => format!("{v}u"),
            Field::S(s) => format!("\"{}\"", s.replace('\\', "\\\\").replace('"', "\\\"")),
            Field::B(b) => b.to_string(),
        }
    }
}

/// One parsed line.
#[derive(Debug, Clone, PartialEq)]
pub struct Line {
    pub measurement: String,
    pub tags: Vec<(String, String)>,
    pub fields: Vec<(String, Field)>,
    pub timestamp: Option<i64>,
}

impl Line {
    /// Renders with an explicit nanosecond timestamp (the persisted, normalised form).
    pub fn render(&self, ts: i64) -> String {
        let esc = |s: &str, extra: &[char]| {
            if !s.bytes().any(|b| b == b',' || b == b' ' || b == b'=') {
                return s.to_string();
            }
            let mut o = String::new();
            for c in s.chars() {
                if c == ',' || c == ' ' || extra.contains(&c) {
                    o.push('\\');
                }
                o.push(c);
            }
            o
        };
        let mut s = esc(&self.measurement, &[]);
        for (k, v) in &self.tags {
            s.push(',');
            s.push_str(&esc(k, &['=']));
            s.push('=');
            s.push_str(&esc(v, &['=']));
        }
        s.push(' ');
        let fields: Vec<String> = self
            .fields
            .iter()
            .map(|(k, v)| format!("{}={}", esc(k, &['=']), v.render()))
            .collect();
        s.push_str(&fields.join(","));
        s.push(' ');
        s.push_str(&ts.to_string());
        s
    }
}

/// Parses one non-empty, non-comment line. Works on bytes: every delimiter is ASCII, so
/// slicing at them keeps UTF-8 intact.
pub fn parse_line(line: &str) -> Result<Line, String> {
    let b = line.as_bytes();
    let mut i = 0;
    let (measurement, stop) = take_escaped(line, &mut i, b",  ");
    if measurement.is_empty() {
        return Err("Invalid measurement was provided".into());
    }
    let mut tags: Vec<(String, String)> = Vec::new();
    let mut stop = stop;
    while stop == Some(b',') {
        i += 1;
        let (key, s) = take_escaped(line, &mut i, b"=, ");
        if s != Some(b'=') || key.is_empty() {
            return Err("Tag Set Malformed".into());
        }
        i += 1;
        let (value, s) = take_escaped(line, &mut i, b", =");
        if value.is_empty() || s == Some(b'=') {
            return Err("Tag Set Malformed".into());
        }
        if tags.iter().any(|(k, _)| *k == key) {
            return Err(format!(
                "Must not contain duplicate tags, but \"{key}\" was repeated"
            ));
        }
        tags.push((key, value));
        stop = s;
    }
    if stop != Some(b' ') {
        return Err("No fields were provided".into());
    }
    while i < b.len() && b[i] == b' ' {
        i += 1;
    }
    let mut fields: Vec<(String, Field)> = Vec::new();
    loop {
        let (key, s) = take_escaped(line, &mut i, b"=, ");
        if key.is_empty() || s != Some(b'=') {
            if fields.is_empty() {
                return Err("No fields were provided".into());
            }
            return Err("Field Set Malformed".into());
        }
        i += 1;
        let value = if i < b.len() && b[i] == b'"' {
            i += 1;
            let mut v = Vec::new();
            loop {
                match b.get(i) {
                    None => {
                        return Err("Unable to parse string value: missing closing quote".into())
                    }
                    Some(b'\\') if matches!(b.get(i + 1), Some(b'"') | Some(b'\\')) => {
                        v.push(b[i + 1]);
                        i += 2;
                    }
                    Some(b'"') => {
                        i += 1;
                        break;
                    }
                    Some(c) => {
                        v.push(*c);
                        i += 1;
                    }
                }
            }
            Field::S(String::from_utf8_lossy(&v).into_owned())
        } else {
            let start = i;
            while i < b.len() && b[i] != b',' && b[i] != b' ' {
                i += 1;
            }
            parse_value(&line[start..i])?
        };
        if fields.iter().any(|(k, _)| *k == key) {
            return Err(format!(
                "Must not contain duplicate fields, but \"{key}\" was repeated"
            ));
        }
        fields.push((key, value));
        match b.get(i) {
            Some(b',') => i += 1,
            _ => break,
        }
    }
    while i < b.len() && b[i] == b' ' {
        i += 1;
    }
    let rest = line[i..].trim_end();
    let timestamp = if rest.is_empty() {
        None
    } else if rest.contains(' ') {
        let extra = rest.split_once(' ').map(|x| x.1).unwrap_or("");
        return Err(format!(
            "Could not parse entire line. Found trailing content: '{extra}'"
        ));
    } else {
        Some(
            rest.parse::<i64>()
                .map_err(|_| format!("Unable to parse timestamp value '{rest}'"))?,
        )
    };
    Ok(Line {
        measurement,
        tags,
        fields,
        timestamp,
    })
}

fn parse_value(raw: &str) -> Result<Field, String> {
    match raw {
        "t" | "T" | "true" | "True" | "TRUE" => return Ok(Field::B(true)),
        "f" | "F" | "false" | "False" | "FALSE" => return Ok(Field::B(false)),
        _ => {}
    }
    if let Some(n) = raw.strip_suffix('i') {
        return n
            .parse::<i64>()
            .map(Field::I)
            .map_err(|_| format!("Unable to parse integer value '{raw}'"));
    }
    if let Some(n) = raw.strip_suffix('u') {
        return n
            .parse::<u64>()
            .map(Field::U)
            .map_err(|_| format!("Unable to parse unsigned integer value '{raw}'"));
    }
    let ok_chars = !raw.is_empty()
        && raw
            .chars()
            .all(|c| c.is_ascii_digit() || matches!(c, '.' | '-' | '+' | 'e' | 'E'));
    match raw.parse::<f64>() {
        Ok(v) if ok_chars && v.is_finite() => Ok(Field::F(v)),
        _ => Err(format!("Unable to parse float value '{raw}'")),
    }
}

/// Takes text until an unescaped stop byte (all ASCII); returns it and the stop byte.
fn take_escaped(line: &str, i: &mut usize, stops: &[u8]) -> (String, Option<u8>) {
    let b = line.as_bytes();
    let start = *i;
    let mut escaped = false;
    while *i < b.len() {
        let c = b[*i];
        if c == b'\\' && *i + 1 < b.len() && matches!(b[*i + 1], b',' | b' ' | b'=' | b'\\') {
            escaped = true;
            *i += 2;
            continue;
        }
        if stops.contains(&c) {
            break;
        }
        *i += 1;
    }
    let raw = &line[start..*i];
    let text = if escaped {
        let mut s = String::with_capacity(raw.len());
        let mut chars = raw.chars().peekable();
        while let Some(c) = chars.next() {
            if c == '\\' && matches!(chars.peek(), Some(',' | ' ' | '=' | '\\')) {
                s.push(chars.next().unwrap_or('\\'));
            } else {
                s.push(c);
            }
        }
        s
    } else {
        raw.to_string()
    };
    (text, b.get(*i).copied())
}

/// Normalises a timestamp in `precision` to nanoseconds. `auto` guesses from the magnitude.
pub fn to_nanos(ts: i64, precision: &str) -> Option<i64> {
    let mult: i64 = match precision {
        "second" | "s" => 1_000_000_000,
        "millisecond" | "ms" => 1_000_000,
        "microsecond" | "us" | "u" => 1_000,
        "nanosecond" | "ns" | "n" => 1,
        _ => {
            let a = ts.unsigned_abs();
            if a < 5_000_000_000 {
                1_000_000_000
            } else if a < 5_000_000_000_000 {
                1_000_000
            } else if a < 5_000_000_000_000_000 {
                1_000
            } else {
                1
            }
        }
    };
    ts.checked_mul(mult)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tsbs_line() {
        let l = parse_line("cpu,hostname=host_0,region=eu-central-1 usage_user=58i,usage_system=2.5 1686441600000000000").unwrap();
        assert_eq!(l.measurement, "cpu");
        assert_eq!(l.tags.len(), 2);
        assert_eq!(l.fields[0], ("usage_user".into(), Field::I(58)));
        assert_eq!(l.fields[1], ("usage_system".into(), Field::F(2.5)));
        assert_eq!(l.timestamp, Some(1_686_441_600_000_000_000));
        let again = parse_line(&l.render(5)).unwrap();
        assert_eq!(again.fields, l.fields);
        assert_eq!(again.tags, l.tags);
    }

    #[test]
    fn escapes_and_errors() {
        let l = parse_line(r#"m\ x,t\,k=v\ 1 s="a \"q\"",b=t"#).unwrap();
        assert_eq!(l.measurement, "m x");
        assert_eq!(l.tags[0], ("t,k".into(), "v 1".into()));
        assert_eq!(l.fields[0].1, Field::S("a \"q\"".into()));
        assert_eq!(l.timestamp, None);
        assert_eq!(parse_line("cpu").unwrap_err(), "No fields were provided");
        assert!(parse_line("cpu f=abc").unwrap_err().contains("float"));
        assert!(parse_line("cpu f=1 12 x").unwrap_err().contains("trailing"));
        assert!(parse_line("cpu,a=1,a=2 f=1")
            .unwrap_err()
            .contains("duplicate"));
        assert!(parse_line("cpu f=1 nope")
            .unwrap_err()
            .contains("timestamp"));
    }

    #[test]
    fn precision() {
        assert_eq!(to_nanos(2, "s"), Some(2_000_000_000));
        assert_eq!(
            to_nanos(1_686_441_600, "auto"),
            Some(1_686_441_600_000_000_000)
        );
        assert_eq!(
            to_nanos(1_686_441_600_000_000_000, "auto"),
            Some(1_686_441_600_000_000_000)
        );
    }
}
