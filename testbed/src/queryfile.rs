//! The query files of the testbed's TSBS stand-ins: what the `tsbs_generate_queries` stand-in
//! writes and the `tsbs_run_queries_*` stand-ins read, in place of the real tools' Go `gob`
//! stream of `query.HTTP` records (protocols.md §1.2). tsbsctl only hashes and sizes these
//! files, so their format is ours; it keeps the same fields.
//!
//! Format: **JSON lines**, one JSON object per query, `\n` terminated, with the keys of [`Query`]
//! in that order; empty lines are skipped. Multi-line SQL stays on one line (JSON escapes the
//! newlines). This is the format the `tsbs_generate_queries` stand-in documents and writes
//! (helper "data", `emulators/tsbs_generate.rs`, `QueryRecord`); both sides must stay in step.
//! Query ids are positions (0, 1, 2, ...), as the real runner numbers what it decodes. A line
//! that is not a query record is refused by the runners (as a real runner refuses a non-gob
//! file: `log.Fatal`, exit 1).

use std::io::{BufRead, Write};

use serde::{Deserialize, Serialize};

/// One query: the fields of TSBS's `query.HTTP`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Query {
    pub human_label: String,
    pub human_description: String,
    pub method: String,
    /// `greptime`: `/v1/sql?sql=<form-encoded SQL>`; `influx3`: `/api/v3/query_sql`.
    pub path: String,
    #[serde(default)]
    pub body: String,
    /// The SQL itself.
    pub raw_query: String,
    pub start_timestamp: i64,
    pub end_timestamp: i64,
}

impl Query {
    /// A query as `--format=greptime` produces it: POST `/v1/sql?sql=<encoded>`.
    pub fn greptime(label: &str, description: &str, sql: &str, start: i64, end: i64) -> Query {
        Query {
            human_label: label.into(),
            human_description: description.into(),
            method: "POST".into(),
            path: format!("/v1/sql?sql={}", form_encode(sql)),
            body: String::new(),
            raw_query: sql.into(),
            start_timestamp: start,
            end_timestamp: end,
        }
    }

    /// A query as `--format=influx3` produces it: POST `/api/v3/query_sql`, SQL kept raw.
    pub fn influx3(label: &str, description: &str, sql: &str, start: i64, end: i64) -> Query {
        Query {
            human_label: label.into(),
            human_description: description.into(),
            method: "POST".into(),
            path: "/api/v3/query_sql".into(),
            body: String::new(),
            raw_query: sql.into(),
            start_timestamp: start,
            end_timestamp: end,
        }
    }
}

/// Writes a whole query file.
pub fn write(w: &mut impl Write, queries: &[Query]) -> std::io::Result<()> {
    for q in queries {
        serde_json::to_writer(&mut *w, q)?;
        w.write_all(b"\n")?;
    }
    Ok(())
}

/// Reads query files lazily (the runners honour `--max-queries` without reading the rest).
pub struct Reader<R: BufRead> {
    lines: std::io::Lines<R>,
    line_no: usize,
}

impl<R: BufRead> Reader<R> {
    pub fn new(r: R) -> Reader<R> {
        Reader {
            lines: r.lines(),
            line_no: 0,
        }
    }
}

impl<R: BufRead> Iterator for Reader<R> {
    type Item = Result<Query, String>;
    fn next(&mut self) -> Option<Self::Item> {
        loop {
            let line = self.lines.next()?;
            self.line_no += 1;
            return Some(match line {
                Ok(l) if l.is_empty() => continue,
                Ok(l) => serde_json::from_str(&l)
                    .map_err(|e| format!("malformed query record on line {}: {e}", self.line_no)),
                Err(e) => Err(format!("read error: {e}")),
            });
        }
    }
}

/// Reads a whole query file.
pub fn read(r: impl BufRead) -> Result<Vec<Query>, String> {
    Reader::new(r).collect()
}

/// Go's `url.QueryEscape`: unreserved bytes kept, space as `+`, the rest `%XX`.
pub fn form_encode(s: &str) -> String {
    let mut out = String::with_capacity(s.len() * 3 / 2);
    for b in s.bytes() {
        match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'_' | b'.' | b'~' => {
                out.push(b as char)
            }
            b' ' => out.push('+'),
            _ => out.push_str(&format!("%{b:02X}")),
        }
    }
    out
}

/// The inverse of [`form_encode`] (and of any form/URL encoding): `+` is a space.
pub fn form_decode(s: &str) -> String {
    let bytes = s.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        match bytes[i] {
            b'+' => out.push(b' '),
            b'%' => {
                let hex = bytes
                    .get(i + 1..i + 3)
                    .filter(|h| h.iter().all(u8::is_ascii_hexdigit))
                    .and_then(|h| u8::from_str_radix(std::str::from_utf8(h).ok()?, 16).ok());
                match hex {
                    Some(v) => {
                        out.push(v);
                        i += 2;
                    }
                    None => out.push(b'%'),
                }
            }
            b => out.push(b),
        }
        i += 1;
    }
    String::from_utf8_lossy(&out).into_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trip() {
        let qs = vec![
            Query::greptime(
                "Influx last row per host",
                "d",
                "SELECT 1 FROM cpu WHERE a = 'x'",
                1,
                2,
            ),
            Query::influx3(
                "InfluxDB 3 last row per host",
                "d",
                "SELECT *\nFROM cpu",
                3,
                4,
            ),
        ];
        let mut buf = Vec::new();
        write(&mut buf, &qs).unwrap();
        let text = String::from_utf8(buf.clone()).unwrap();
        assert_eq!(text.lines().count(), 2);
        assert!(text.starts_with("{\"human_label\":\"Influx last row per host\",\"human_description\":\"d\",\"method\":\"POST\",\"path\":"));
        assert_eq!(read(&buf[..]).unwrap(), qs);
        assert_eq!(
            qs[0].path,
            "/v1/sql?sql=SELECT+1+FROM+cpu+WHERE+a+%3D+%27x%27"
        );
        assert_eq!(form_decode(&qs[0].path[12..]), qs[0].raw_query);
        assert!(read(&b"cpu,host=a x=1i 1\n"[..])
            .unwrap_err()
            .starts_with("malformed query record on line 1"));
        assert_eq!(form_decode("a%2"), "a%2");
    }
}
