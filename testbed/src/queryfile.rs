//! The query files of the testbed's TSBS stand-ins: what the `tsbs_generate_queries` stand-in
//! writes and the `tsbs_run_queries_*` stand-ins read. Like the real tools (real finding C5),
//! a file is a Go `encoding/gob` stream of `query.HTTP` values, so a real runner reads a
//! stand-in's file and the stand-in runners read the real generator's files (checked against
//! `tests/fixtures/tsbs-real/queries-*.gob`, byte for byte both ways).
//!
//! The stream, as Go's encoder writes it for this one type: a type-definition message for
//! `HTTP` (type id 64, the first user type id; fields `HumanLabel`, `HumanDescription`,
//! `Method`, `Path`, `Body`, `RawQuery` as `[]byte` (type 5), `StartTimestamp`,
//! `EndTimestamp` as `int64` (type 2)), then one value message per query. Each message is a
//! gob uint length, then the gob int type id, then the struct's fields as (field delta,
//! value), zero values omitted, ended by a 0 delta. Only this shape is read: any other stream
//! is refused, as a real runner refuses a non-gob file (`log.Fatal`, exit 1; the texts of
//! these errors are modelled on Go's `gob: ...` messages, a guess where not quoted). Query ids are
//! positions (0, 1, 2, ...), as the real runner numbers what it decodes.

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

    /// A query as `--format=influx` produces it: POST `/query?q=<encoded InfluxQL>`.
    pub fn influxql(label: &str, description: &str, q: &str, start: i64, end: i64) -> Query {
        Query {
            human_label: label.into(),
            human_description: description.into(),
            method: "POST".into(),
            path: format!("/query?q={}", form_encode(q)),
            body: String::new(),
            raw_query: q.into(),
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

/// The `HTTP` fields in declaration order with their gob type ids (5 `[]byte`, 2 `int64`).
const FIELDS: [(&str, u64); 8] = [
    ("HumanLabel", 5),
    ("HumanDescription", 5),
    ("Method", 5),
    ("Path", 5),
    ("Body", 5),
    ("RawQuery", 5),
    ("StartTimestamp", 2),
    ("EndTimestamp", 2),
];
/// Go's first user type id, which `HTTP` gets in the generator's process.
const HTTP_TYPE_ID: i64 = 64;

fn put_uint(out: &mut Vec<u8>, x: u64) {
    if x < 128 {
        out.push(x as u8);
        return;
    }
    let bytes = x.to_be_bytes();
    let skip = bytes.iter().take_while(|b| **b == 0).count();
    out.push((256 - (8 - skip)) as u8);
    out.extend_from_slice(&bytes[skip..]);
}

fn put_int(out: &mut Vec<u8>, i: i64) {
    let u = if i < 0 {
        (!(i as u64) << 1) | 1
    } else {
        (i as u64) << 1
    };
    put_uint(out, u);
}

fn put_bytes(out: &mut Vec<u8>, b: &[u8]) {
    put_uint(out, b.len() as u64);
    out.extend_from_slice(b);
}

fn message(body: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(body.len() + 9);
    put_uint(&mut out, body.len() as u64);
    out.extend_from_slice(body);
    out
}

/// The type-definition message of `HTTP` (a `wireType` whose `StructT` is set).
fn type_message() -> Vec<u8> {
    let mut b = Vec::new();
    put_int(&mut b, -HTTP_TYPE_ID);
    b.push(3); // wireType field 2: StructT
    b.push(1); // structType field 0: CommonType
    b.push(1); // CommonType.Name
    put_bytes(&mut b, b"HTTP");
    b.push(1); // CommonType.Id
    put_int(&mut b, HTTP_TYPE_ID);
    b.push(0);
    b.push(1); // structType field 1: Field
    put_uint(&mut b, FIELDS.len() as u64);
    for (name, id) in FIELDS {
        b.push(1);
        put_bytes(&mut b, name.as_bytes());
        b.push(1);
        put_int(&mut b, id as i64);
        b.push(0);
    }
    b.push(0); // end of structType
    b.push(0); // end of wireType
    message(&b)
}

fn value_message(q: &Query) -> Vec<u8> {
    let mut b = Vec::new();
    put_int(&mut b, HTTP_TYPE_ID);
    let bytes: [&[u8]; 6] = [
        q.human_label.as_bytes(),
        q.human_description.as_bytes(),
        q.method.as_bytes(),
        q.path.as_bytes(),
        q.body.as_bytes(),
        q.raw_query.as_bytes(),
    ];
    let mut last: i64 = -1;
    for (i, v) in bytes.iter().enumerate() {
        if !v.is_empty() {
            put_uint(&mut b, (i as i64 - last) as u64);
            put_bytes(&mut b, v);
            last = i as i64;
        }
    }
    for (i, v) in [(6, q.start_timestamp), (7, q.end_timestamp)] {
        if v != 0 {
            put_uint(&mut b, (i - last) as u64);
            put_int(&mut b, v);
            last = i;
        }
    }
    b.push(0);
    message(&b)
}

/// Writes queries as one gob stream (the type definition before the first value).
pub struct Writer<W: Write> {
    out: W,
    started: bool,
}

impl<W: Write> Writer<W> {
    pub fn new(out: W) -> Writer<W> {
        Writer {
            out,
            started: false,
        }
    }

    pub fn write(&mut self, q: &Query) -> std::io::Result<()> {
        if !self.started {
            self.out.write_all(&type_message())?;
            self.started = true;
        }
        self.out.write_all(&value_message(q))
    }

    pub fn flush(&mut self) -> std::io::Result<()> {
        self.out.flush()
    }
}

/// Writes a whole query file.
pub fn write(w: &mut impl Write, queries: &[Query]) -> std::io::Result<()> {
    let mut g = Writer::new(w);
    for q in queries {
        g.write(q)?;
    }
    g.flush()
}

/// Reads query files lazily (the runners honour `--max-queries` without reading the rest).
pub struct Reader<R: BufRead> {
    input: R,
    /// Field number → index into [`FIELDS`], from the stream's type definition.
    fields: Option<Vec<usize>>,
    failed: bool,
}

impl<R: BufRead> Reader<R> {
    pub fn new(r: R) -> Reader<R> {
        Reader {
            input: r,
            fields: None,
            failed: false,
        }
    }

    /// The next message's bytes; `None` at a clean end of the stream.
    fn next_message(&mut self) -> Result<Option<Vec<u8>>, String> {
        let mut first = [0u8; 1];
        match self.input.read(&mut first) {
            Ok(0) => return Ok(None),
            Ok(_) => {}
            Err(e) => return Err(format!("read error: {e}")),
        }
        let len = if first[0] < 128 {
            first[0] as u64
        } else {
            let n = 256 - first[0] as usize;
            if n > 8 {
                return Err("gob: bad message length".into());
            }
            let mut buf = [0u8; 8];
            self.input
                .read_exact(&mut buf[8 - n..])
                .map_err(|_| "unexpected EOF".to_string())?;
            u64::from_be_bytes(buf)
        };
        if len > 1 << 30 {
            return Err(format!("gob: message too big: {len}"));
        }
        let mut msg = vec![0u8; len as usize];
        self.input
            .read_exact(&mut msg)
            .map_err(|_| "unexpected EOF".to_string())?;
        Ok(Some(msg))
    }
}

/// A cursor over one message.
struct Cur<'a>(&'a [u8]);

impl Cur<'_> {
    fn uint(&mut self) -> Result<u64, String> {
        let (&b, rest) = self
            .0
            .split_first()
            .ok_or("gob: decoding past end of message")?;
        self.0 = rest;
        if b < 128 {
            return Ok(u64::from(b));
        }
        let n = 256 - b as usize;
        if n > 8 || self.0.len() < n {
            return Err("gob: invalid uint data length".into());
        }
        let (v, rest) = self.0.split_at(n);
        self.0 = rest;
        Ok(v.iter().fold(0u64, |a, b| (a << 8) | u64::from(*b)))
    }
    fn int(&mut self) -> Result<i64, String> {
        let u = self.uint()?;
        Ok(if u & 1 == 1 {
            !(u >> 1) as i64
        } else {
            (u >> 1) as i64
        })
    }
    fn bytes(&mut self) -> Result<Vec<u8>, String> {
        let n = self.uint()? as usize;
        if self.0.len() < n {
            return Err("gob: decoding past end of message".into());
        }
        let (v, rest) = self.0.split_at(n);
        self.0 = rest;
        Ok(v.to_vec())
    }
}

/// Reads the `HTTP` struct definition: field number → index into [`FIELDS`].
fn parse_type(c: &mut Cur) -> Result<Vec<usize>, String> {
    let bad = || "gob: type mismatch: the stream's type is not query.HTTP".to_string();
    if c.uint()? != 3 || c.uint()? != 1 || c.uint()? != 1 {
        return Err(bad());
    }
    let name = c.bytes()?;
    if name != b"HTTP" || c.uint()? != 1 || c.int()? != HTTP_TYPE_ID || c.uint()? != 0 {
        return Err(bad());
    }
    if c.uint()? != 1 {
        return Err(bad());
    }
    let n = c.uint()? as usize;
    let mut map = Vec::with_capacity(n);
    for _ in 0..n {
        let (mut name, mut id) = (Vec::new(), 0i64);
        loop {
            match c.uint()? {
                0 => break,
                1 if name.is_empty() => name = c.bytes()?,
                1 => id = c.int()?,
                _ => return Err(bad()),
            }
        }
        let i = FIELDS
            .iter()
            .position(|(f, t)| f.as_bytes() == name.as_slice() && *t as i64 == id)
            .ok_or_else(bad)?;
        map.push(i);
    }
    if c.uint()? != 0 || c.uint()? != 0 || !c.0.is_empty() {
        return Err(bad());
    }
    Ok(map)
}

fn parse_value(c: &mut Cur, fields: &[usize]) -> Result<Query, String> {
    let mut q = Query {
        human_label: String::new(),
        human_description: String::new(),
        method: String::new(),
        path: String::new(),
        body: String::new(),
        raw_query: String::new(),
        start_timestamp: 0,
        end_timestamp: 0,
    };
    let mut field: i64 = -1;
    loop {
        let delta = c.uint()?;
        if delta == 0 {
            break;
        }
        field += delta as i64;
        let idx = *fields
            .get(field as usize)
            .ok_or("gob: field number out of range")?;
        let text = |b: Vec<u8>| String::from_utf8_lossy(&b).into_owned();
        match idx {
            0 => q.human_label = text(c.bytes()?),
            1 => q.human_description = text(c.bytes()?),
            2 => q.method = text(c.bytes()?),
            3 => q.path = text(c.bytes()?),
            4 => q.body = text(c.bytes()?),
            5 => q.raw_query = text(c.bytes()?),
            6 => q.start_timestamp = c.int()?,
            _ => q.end_timestamp = c.int()?,
        }
    }
    if !c.0.is_empty() {
        return Err("gob: extra data in message".into());
    }
    Ok(q)
}

impl<R: BufRead> Iterator for Reader<R> {
    type Item = Result<Query, String>;
    fn next(&mut self) -> Option<Self::Item> {
        if self.failed {
            return None;
        }
        let r = (|| loop {
            let Some(msg) = self.next_message()? else {
                return Ok(None);
            };
            let mut c = Cur(&msg);
            let id = c.int()?;
            if id < 0 {
                if id != -HTTP_TYPE_ID || self.fields.is_some() {
                    return Err("gob: duplicate or unexpected type definition".to_string());
                }
                self.fields = Some(parse_type(&mut c)?);
                continue;
            }
            let fields = self
                .fields
                .as_ref()
                .ok_or_else(|| format!("gob: unknown type id {id}"))?;
            if id != HTTP_TYPE_ID {
                return Err(format!("gob: unknown type id {id}"));
            }
            return parse_value(&mut c, fields).map(Some);
        })();
        match r {
            Ok(Some(q)) => Some(Ok(q)),
            Ok(None) => None,
            Err(e) => {
                self.failed = true;
                Some(Err(e))
            }
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
        assert!(buf.starts_with(b"\xff\x83\x7f\x03\x01\x01\x04HTTP"));
        assert_eq!(read(&buf[..]).unwrap(), qs);
        assert_eq!(
            qs[0].path,
            "/v1/sql?sql=SELECT+1+FROM+cpu+WHERE+a+%3D+%27x%27"
        );
        assert_eq!(form_decode(&qs[0].path[12..]), qs[0].raw_query);
        // Not a gob stream of query.HTTP (e.g. a dataset, or the old JSON lines): refused.
        assert!(read(&b"cpu,host=a x=1i 1\n"[..]).is_err());
        assert!(read(&b"{\"human_label\":\"x\"}\n"[..]).is_err());
        assert!(read(&buf[..buf.len() - 1])
            .unwrap_err()
            .contains("unexpected EOF"));
        assert_eq!(read(&b""[..]).unwrap(), vec![]);
        assert_eq!(form_decode("a%2"), "a%2");
    }

    /// The real generator's files decode, and encoding what they hold gives them back byte
    /// for byte (so a real runner reads what the stand-in writes).
    #[test]
    fn real_gob_files_round_trip_byte_for_byte() {
        for (name, bytes, n, label, sql_start) in [
            (
                "greptime lastpoint",
                &include_bytes!("../../tests/fixtures/tsbs-real/queries-greptime-lastpoint.gob")[..],
                10,
                "Influx last row per host",
                "select last_value(hostname order by greptime_timestamp)",
            ),
            (
                "greptime single-groupby-1-1-1",
                &include_bytes!(
                    "../../tests/fixtures/tsbs-real/queries-greptime-single-groupby-1-1-1.gob"
                )[..],
                10,
                "Influx 1 cpu metric(s), random    1 hosts, random 1h0m0s by 1m",
                "SELECT max(usage_user)",
            ),
            (
                "influx3 lastpoint",
                &include_bytes!("../../tests/fixtures/tsbs-real/queries-influx3-lastpoint.gob")[..],
                10,
                "InfluxDB 3 last row per host",
                "",
            ),
            (
                "influx3 single-groupby-1-1-1",
                &include_bytes!(
                    "../../tests/fixtures/tsbs-real/queries-influx3-single-groupby-1-1-1.gob"
                )[..],
                10,
                "InfluxDB 3 1 cpu metric(s), random    1 hosts, random 1h0m0s by 1m",
                "",
            ),
        ] {
            let qs = read(bytes).unwrap_or_else(|e| panic!("{name}: {e}"));
            assert_eq!(qs.len(), n, "{name}");
            assert_eq!(qs[0].human_label, label, "{name}");
            assert_eq!(qs[0].method, "POST", "{name}");
            assert!(
                qs[0].raw_query.starts_with(sql_start),
                "{name}: {}",
                qs[0].raw_query
            );
            if name.starts_with("greptime") {
                assert_eq!(
                    form_decode(&qs[0].path["/v1/sql?sql=".len()..]),
                    qs[0].raw_query
                );
            }
            // The real generator fills neither timestamp.
            assert_eq!(
                (qs[0].start_timestamp, qs[0].end_timestamp),
                (0, 0),
                "{name}"
            );
            if name.ends_with("lastpoint") {
                assert_eq!(qs[0].human_description, format!("{label}: cpu"), "{name}");
            }
            let mut again = Vec::new();
            write(&mut again, &qs).unwrap();
            assert!(again == bytes, "{name}: re-encoding differs");
        }
    }
}
