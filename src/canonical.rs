//! Canonical JSON and the content-derived ids of the reference (benchmark.md §1.2, §2.4):
//! keys sorted recursively, separators `,` and `:` without whitespace, non-ASCII escaped as
//! `\uXXXX`, integers kept as integers.
//!
//! The text is byte-for-byte what Python's
//! `json.dumps(v, sort_keys=True, separators=(",", ":"), ensure_ascii=True)` prints, so ids
//! computed by the reference implementation and by tsbsctl agree.
//!
//! Ids: [`dataset_id_for`] (automatic dataset ids, §1.2) and [`query_set_id_for`] (§2.4).

use serde_json::Value;
use sha2::{Digest, Sha256};

/// The canonical JSON text of `v`.
pub fn canonical_json(v: &Value) -> String {
    let mut out = String::new();
    write_value(&mut out, v);
    out
}

/// SHA-256 (lowercase hex) of the canonical JSON of `{"schema_version": 1, "spec": spec}`.
pub fn spec_digest(spec: &Value) -> String {
    let wrapped = serde_json::json!({"schema_version": 1, "spec": spec});
    hex::encode(Sha256::digest(canonical_json(&wrapped).as_bytes()))
}

/// The automatic dataset id of a logical dataset spec (benchmark.md §1.2):
/// `<prefix>-s<scale>-<first 12 hex of spec_digest>`, where the prefix is `use_case`
/// lower-cased with every run of characters outside `[a-z0-9]` replaced by one `-`, leading and
/// trailing `-` stripped (`data` when nothing is left). A missing `scale` renders as `s`
/// followed by the JSON text of whatever is there (the reference prints the raw value).
pub fn dataset_id_for(spec: &Value) -> String {
    let use_case = spec.get("use_case").and_then(Value::as_str).unwrap_or("");
    let scale = match spec.get("scale") {
        Some(Value::String(s)) => s.clone(),
        Some(v) => v.to_string(),
        None => String::new(),
    };
    let digest = spec_digest(spec);
    format!("{}-s{}-{}", id_prefix(use_case), scale, &digest[..12])
}

/// The id of a query set (benchmark.md §2.4): `<format>-<first 16 hex of spec_digest>`, where
/// `format` is `greptime` or `influx3` and `spec` is the query-set spec object.
pub fn query_set_id_for(format: &str, spec: &Value) -> String {
    format!("{format}-{}", &spec_digest(spec)[..16])
}

fn id_prefix(use_case: &str) -> String {
    let mut out = String::new();
    let mut pending_dash = false;
    for c in use_case.to_lowercase().chars() {
        if c.is_ascii_lowercase() || c.is_ascii_digit() {
            if pending_dash && !out.is_empty() {
                out.push('-');
            }
            pending_dash = false;
            out.push(c);
        } else {
            pending_dash = true;
        }
    }
    if out.is_empty() {
        "data".to_string()
    } else {
        out
    }
}

fn write_value(out: &mut String, v: &Value) {
    match v {
        Value::Null => out.push_str("null"),
        Value::Bool(b) => out.push_str(if *b { "true" } else { "false" }),
        Value::Number(n) => {
            if let Some(i) = n.as_i64() {
                out.push_str(&i.to_string());
            } else if let Some(u) = n.as_u64() {
                out.push_str(&u.to_string());
            } else if let Some(f) = n.as_f64() {
                out.push_str(&python_float_repr(f));
            } else {
                out.push_str(&n.to_string());
            }
        }
        Value::String(s) => write_string(out, s),
        Value::Array(items) => {
            out.push('[');
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                write_value(out, item);
            }
            out.push(']');
        }
        Value::Object(map) => {
            // Rust's `str` order is byte order of UTF-8, which is code-point order, as Python's.
            let mut keys: Vec<&String> = map.keys().collect();
            keys.sort();
            out.push('{');
            for (i, k) in keys.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                write_string(out, k);
                out.push(':');
                write_value(out, &map[k.as_str()]);
            }
            out.push('}');
        }
    }
}

/// Python's `ensure_ascii` escaping: `"` and `\` escaped, `\n \r \t \b \f` short forms, every
/// other character outside printable ASCII (space to `~`) as lowercase `\uXXXX`, astral
/// characters as a surrogate pair.
fn write_string(out: &mut String, s: &str) {
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            '\u{8}' => out.push_str("\\b"),
            '\u{c}' => out.push_str("\\f"),
            ' '..='~' => out.push(c),
            _ => {
                let mut buf = [0u16; 2];
                for unit in c.encode_utf16(&mut buf) {
                    out.push_str(&format!("\\u{unit:04x}"));
                }
            }
        }
    }
    out.push('"');
}

/// Python's `repr(float)`: the shortest round-tripping digits, fixed notation when the decimal
/// exponent is in [-4, 16), otherwise `d.ddde+XX`; integral values keep a `.0`.
fn python_float_repr(f: f64) -> String {
    if f.is_nan() {
        return "NaN".into();
    }
    if f.is_infinite() {
        return if f > 0.0 { "Infinity" } else { "-Infinity" }.into();
    }
    // `{:e}` gives the shortest round-trip digits: "-1.2345e-7", "1e16", "0e0".
    let sci = format!("{f:e}");
    let (mantissa, exp) = sci.split_once('e').expect("`{:e}` always has an exponent");
    let exp: i32 = exp.parse().expect("integer exponent");
    let (neg, mantissa) = match mantissa.strip_prefix('-') {
        Some(m) => (true, m),
        None => (false, mantissa),
    };
    let digits: String = mantissa.chars().filter(|c| *c != '.').collect();
    let sign = if neg { "-" } else { "" };
    if (-4..16).contains(&exp) {
        let n = digits.len() as i32;
        let body = if exp < 0 {
            format!("0.{}{}", "0".repeat((-exp - 1) as usize), digits)
        } else if exp + 1 >= n {
            format!("{}{}.0", digits, "0".repeat((exp + 1 - n) as usize))
        } else {
            let (a, b) = digits.split_at((exp + 1) as usize);
            format!("{a}.{b}")
        };
        format!("{sign}{body}")
    } else {
        let (first, rest) = digits.split_at(1);
        let frac = if rest.is_empty() {
            String::new()
        } else {
            format!(".{rest}")
        };
        let esign = if exp < 0 { '-' } else { '+' };
        format!("{sign}{first}{frac}e{esign}{:02}", exp.abs())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    const QUERY_TYPES: [&str; 15] = [
        "cpu-max-all-1",
        "cpu-max-all-8",
        "double-groupby-1",
        "double-groupby-5",
        "double-groupby-all",
        "groupby-orderby-limit",
        "high-cpu-1",
        "high-cpu-all",
        "lastpoint",
        "single-groupby-1-1-1",
        "single-groupby-1-1-12",
        "single-groupby-1-8-1",
        "single-groupby-5-1-1",
        "single-groupby-5-1-12",
        "single-groupby-5-8-1",
    ];

    fn manual() -> Value {
        json!({
            "use_case": "cpu-only",
            "start": "2023-06-11T00:00:00Z",
            "end": "2023-06-14T00:00:00Z",
            "scale": 4000,
            "seed": 123,
            "log_interval": "10s",
        })
    }

    fn smoke() -> Value {
        let mut s = manual();
        s["end"] = json!("2023-06-12T00:00:00Z");
        s["scale"] = json!(10);
        s
    }

    #[test]
    fn canonical_text_of_the_manual_spec_matches_the_reference() {
        let wrapped = json!({"spec": manual(), "schema_version": 1});
        assert_eq!(
            canonical_json(&wrapped),
            r#"{"schema_version":1,"spec":{"end":"2023-06-14T00:00:00Z","log_interval":"10s","scale":4000,"seed":123,"start":"2023-06-11T00:00:00Z","use_case":"cpu-only"}}"#
        );
    }

    #[test]
    fn dataset_id_vectors() {
        assert_eq!(dataset_id_for(&manual()), "cpu-only-s4000-57964a838c71");
        assert_eq!(dataset_id_for(&smoke()), "cpu-only-s10-c3a7d38f3a2a");
        let mut s = smoke();
        s["scale"] = json!(100);
        assert_eq!(dataset_id_for(&s), "cpu-only-s100-003a91156529");
        s["scale"] = json!(1000);
        assert_eq!(dataset_id_for(&s), "cpu-only-s1000-45c02116670b");
    }

    #[test]
    fn id_prefix_rule() {
        assert_eq!(id_prefix("cpu-only"), "cpu-only");
        assert_eq!(id_prefix("  IoT__Fleet!!"), "iot-fleet");
        assert_eq!(id_prefix("é"), "data");
        assert_eq!(id_prefix(""), "data");
    }

    /// The query-set spec exactly as benchmark.md §2.4 describes it.
    fn query_set_spec(
        dataset: &Value,
        format: &str,
        end_plus_1s: &str,
        counts: &[(&str, u64)],
    ) -> Value {
        let mut query_counts = serde_json::Map::new();
        for (t, n) in counts {
            query_counts.insert(t.to_string(), json!(n));
        }
        json!({
            "dataset": {"dataset_id": dataset_id_for(dataset), "spec": dataset},
            "format": format,
            "use_case": "devops",
            "seed": dataset["seed"],
            "scale": dataset["scale"],
            "timestamp_start": dataset["start"],
            "timestamp_end": end_plus_1s,
            "query_counts": query_counts,
        })
    }

    #[test]
    fn query_set_id_vectors() {
        let all10: Vec<(&str, u64)> = QUERY_TYPES.iter().map(|t| (*t, 10)).collect();
        let smoke_end = "2023-06-12T00:00:01Z";
        let g = query_set_spec(&smoke(), "greptime", smoke_end, &all10);
        assert_eq!(
            query_set_id_for("greptime", &g),
            "greptime-ea4a6b593558cdfb"
        );
        let i = query_set_spec(&smoke(), "influx3", smoke_end, &all10);
        assert_eq!(query_set_id_for("influx3", &i), "influx3-fe778555ef240528");

        let manual_counts: Vec<(&str, u64)> = QUERY_TYPES
            .iter()
            .map(|t| {
                let n = match *t {
                    "lastpoint" => 10,
                    t if t.starts_with("double-groupby")
                        || t == "groupby-orderby-limit"
                        || t == "high-cpu-all" =>
                    {
                        50
                    }
                    _ => 100,
                };
                (*t, n)
            })
            .collect();
        let manual_end = "2023-06-14T00:00:01Z";
        let g = query_set_spec(&manual(), "greptime", manual_end, &manual_counts);
        assert_eq!(
            query_set_id_for("greptime", &g),
            "greptime-2220fa05b2c1ffda"
        );
        let i = query_set_spec(&manual(), "influx3", manual_end, &manual_counts);
        assert_eq!(query_set_id_for("influx3", &i), "influx3-0a5217a05af29920");

        let last = query_set_spec(&smoke(), "influx3", smoke_end, &[("lastpoint", 10)]);
        assert_eq!(
            query_set_id_for("influx3", &last),
            "influx3-280d001243e57350"
        );
    }

    #[test]
    fn key_order_of_the_input_does_not_matter() {
        let a = json!({"b": {"y": 1, "x": [ {"d": 1, "c": 2} ]}, "a": 2});
        assert_eq!(
            canonical_json(&a),
            r#"{"a":2,"b":{"x":[{"c":2,"d":1}],"y":1}}"#
        );
    }

    #[test]
    fn strings_are_escaped_like_python_ensure_ascii() {
        // Expected texts produced by Python 3:
        // json.dumps(s, sort_keys=True, separators=(",", ":"), ensure_ascii=True)
        let cases = [
            ("a\"b\\c", r#""a\"b\\c""#),
            ("\n\r\t\u{8}\u{c}", r#""\n\r\t\b\f""#),
            ("\u{0}\u{1f}\u{7f}", r#""\u0000\u001f\u007f""#),
            ("é€", r#""\u00e9\u20ac""#),
            ("😀", r#""\ud83d\ude00""#),
            ("/<>~ ", r#""/<>~ ""#),
        ];
        for (input, expected) in cases {
            assert_eq!(canonical_json(&json!(input)), expected, "{input:?}");
        }
        assert_eq!(canonical_json(&json!({"é": 1})), r#"{"\u00e9":1}"#);
    }

    #[test]
    fn numbers_render_like_python() {
        let cases = [
            (json!(-7), "-7"),
            (json!(u64::MAX), "18446744073709551615"),
            (json!(1.0), "1.0"),
            (json!(0.5), "0.5"),
            (json!(-0.0), "-0.0"),
            (json!(123456.789), "123456.789"),
            (json!(1e16), "1e+16"),
            (json!(1.5e16), "1.5e+16"),
            (json!(1e15), "1000000000000000.0"),
            (json!(0.0001), "0.0001"),
            (json!(0.00001), "1e-05"),
            (json!(1.25e-7), "1.25e-07"),
            (json!(1e100), "1e+100"),
        ];
        for (v, expected) in cases {
            assert_eq!(canonical_json(&v), expected);
        }
        assert_eq!(
            canonical_json(&json!([true, false, null])),
            "[true,false,null]"
        );
    }
}
