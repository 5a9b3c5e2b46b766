//! The same answers (issue 24 §5): the TSBS query files of two formats come from the same seed
//! and differ only in dialect, so the databases should return the same rows. A run made with
//! `--check-answers` runs every query once more after its timed passes, with the runner's own
//! `--print-responses` and one worker, and keeps one line per query in `answers.jsonl`: a digest
//! of the normalised answer, its row count, the columns compared and the first rows. `runs
//! report` compares the digests query by query (by the index in the type's query file).
//!
//! Normalisation (README "Checking answers" says the same):
//! * column names are mapped to one name per meaning: lower-cased, table qualifiers dropped,
//!   `max(x)`/`avg(x)`/`mean(x)` → `max_x`/`avg_x`, `mean_x` → `avg_x`, `last_value(x ...)` →
//!   `x`, time buckets and time columns (`time`, `minute`, `hour`, `greptime_timestamp`,
//!   `date_trunc(..)`, `date_bin(..)`, `time_bucket(..)`, `to_timestamp(..)`) → `time`;
//! * each devops type compares a fixed set of those columns, the ones every dialect returns
//!   ([`compared_columns`]); other columns (PostgreSQL's `tags_id`, ...) are left out;
//! * numbers are rounded to [`SIGNIFICANT_DIGITS`] significant digits (`-0` is `0`);
//! * times (strings in RFC 3339 or `YYYY-MM-DD[T ]HH:MM:SS[.f]`, taken as UTC without an
//!   offset; integers as epoch seconds, ms, µs or ns by magnitude) become RFC 3339 UTC with
//!   milliseconds;
//! * rows are sorted; an empty answer has no columns to lose, so it is the type's columns with
//!   no rows.

use std::collections::BTreeMap;
use std::path::Path;

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::error::{Error, Result};

/// The file of a run directory that holds one [`AnswerRecord`] per line.
pub const FILE: &str = "answers.jsonl";
/// Numbers are compared at this many significant digits.
pub const SIGNIFICANT_DIGITS: usize = 9;
/// Rows of each answer kept in `answers.jsonl`, to show where two answers differ.
pub const HEAD_ROWS: usize = 10;

/// The response printing of one TSBS runner (`--print-responses`); a product's query format
/// names the one its runner prints ([`crate::queryset::QueryFormat::answers`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PrintFormat {
    /// `json.MarshalIndent` of `{"influxql": <query>, "response": <body>}` with the prefix
    /// `ID <n>: ` on every line but the first, then an empty line; the body a `/v1/sql`
    /// `output` or an InfluxQL `results`.
    JsonEnvelope,
    /// `ID <n> SQL: <query>` then the body indented by two spaces (the raw body when it is not
    /// JSON): rows as objects.
    SqlThenBody,
    /// `{"query": <sql>, "results": [{column: value}]}` indented by two spaces, then an empty
    /// line; no query id (file order with one worker).
    QueryResults,
}

/// One answer as a runner printed it.
#[derive(Debug, Clone, PartialEq)]
pub struct RawAnswer {
    /// The query's index in its file (the runner's query id).
    pub id: u64,
    pub columns: Vec<String>,
    pub rows: Vec<Vec<Value>>,
    /// Why no rows could be read (an error body, a body that is not JSON).
    pub error: Option<String>,
}

/// One line of `answers.jsonl`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct AnswerRecord {
    pub query_type: String,
    /// The query's index in the type's query file.
    pub index: u64,
    /// SHA-256 of the normalised answer (columns, then the sorted rows).
    pub digest: String,
    pub rows: u64,
    /// The (mapped) columns compared, in order.
    pub columns: Vec<String>,
    /// Columns the type compares that this answer lacked.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub missing: Vec<String>,
    /// The first [`HEAD_ROWS`] normalised rows, sorted.
    #[serde(default)]
    pub head: Vec<Vec<Value>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
}

/// Parses a runner's output (its log: stdout, with anything else between the blocks).
pub fn parse(format: PrintFormat, text: &str) -> Vec<RawAnswer> {
    match format {
        PrintFormat::JsonEnvelope => parse_json_envelope(text),
        PrintFormat::SqlThenBody => parse_sql_then_body(text),
        PrintFormat::QueryResults => parse_query_results(text),
    }
}

/// Byte offsets of the starts of lines.
fn lines_with_offsets(text: &str) -> Vec<(usize, &str)> {
    let mut out = Vec::new();
    let mut at = 0;
    for l in text.split_inclusive('\n') {
        out.push((at, l.trim_end_matches(['\n', '\r'])));
        at += l.len();
    }
    out
}

/// The one JSON value that starts at `text[at..]`, and the offset just after it.
fn json_at(text: &str, at: usize) -> Option<(Value, usize)> {
    let mut it = serde_json::Deserializer::from_str(&text[at..]).into_iter::<Value>();
    let v = it.next()?.ok()?;
    Some((v, at + it.byte_offset()))
}

fn parse_json_envelope(text: &str) -> Vec<RawAnswer> {
    let lines = lines_with_offsets(text);
    let mut out = Vec::new();
    let mut i = 0;
    while i < lines.len() {
        let id = (lines[i].1 == "{")
            .then(|| lines.get(i + 1).and_then(|(_, l)| id_prefix(l)))
            .flatten();
        let Some((id, prefix)) = id else {
            i += 1;
            continue;
        };
        let close = format!("{prefix}}}");
        let Some(end) = (i + 1..lines.len()).find(|&j| lines[j].1 == close) else {
            break;
        };
        let mut doc = String::from("{\n");
        for (_, l) in &lines[i + 1..=end] {
            doc.push_str(l.strip_prefix(prefix.as_str()).unwrap_or(l));
            doc.push('\n');
        }
        let answer = match serde_json::from_str::<Value>(&doc) {
            Ok(v) => envelope_table(id, &v["response"]),
            Err(e) => failed(id, format!("the printed response is not JSON: {e}")),
        };
        out.push(answer);
        i = end + 1;
    }
    out
}

/// `ID <n>: ` at the start of a line: the id and the prefix.
fn id_prefix(line: &str) -> Option<(u64, String)> {
    let rest = line.strip_prefix("ID ")?;
    let (n, _) = rest.split_once(": ")?;
    let id = n.parse().ok()?;
    Some((id, format!("ID {n}: ")))
}

fn failed(id: u64, why: String) -> RawAnswer {
    RawAnswer {
        id,
        columns: Vec::new(),
        rows: Vec::new(),
        error: Some(why),
    }
}

/// The rows of a GreptimeDB `/v1/sql` body or an InfluxQL `/query` body.
fn envelope_table(id: u64, r: &Value) -> RawAnswer {
    if r.is_null() {
        return failed(id, "the response body is not JSON".into());
    }
    if let Some(e) = r.get("error").and_then(Value::as_str) {
        return failed(id, format!("the server answered an error: {e}"));
    }
    // GreptimeDB: {"output":[{"records":{"schema":{"column_schemas":[{"name"}]},"rows":[[..]]}}]}
    if let Some(outputs) = r.get("output").and_then(Value::as_array) {
        let Some(rec) = outputs.iter().find_map(|o| o.get("records")) else {
            return failed(id, "the response has no records".into());
        };
        let columns = rec["schema"]["column_schemas"]
            .as_array()
            .map(|c| {
                c.iter()
                    .map(|s| s["name"].as_str().unwrap_or_default().to_string())
                    .collect()
            })
            .unwrap_or_default();
        let rows = rows_of(&rec["rows"]);
        return RawAnswer {
            id,
            columns,
            rows,
            error: None,
        };
    }
    // InfluxQL: {"results":[{"series":[{"name","tags"?,"columns","values"}]}]}
    if let Some(results) = r.get("results").and_then(Value::as_array) {
        let mut columns: Vec<String> = Vec::new();
        let mut rows = Vec::new();
        for res in results {
            if let Some(e) = res.get("error").and_then(Value::as_str) {
                return failed(id, format!("the server answered an error: {e}"));
            }
            for s in res["series"].as_array().into_iter().flatten() {
                let tags: Vec<(String, Value)> = s["tags"]
                    .as_object()
                    .map(|t| t.iter().map(|(k, v)| (k.clone(), v.clone())).collect())
                    .unwrap_or_default();
                let cols: Vec<String> = tags
                    .iter()
                    .map(|(k, _)| k.clone())
                    .chain(
                        s["columns"]
                            .as_array()
                            .into_iter()
                            .flatten()
                            .map(|c| c.as_str().unwrap_or_default().to_string()),
                    )
                    .collect();
                if columns.is_empty() {
                    columns = cols.clone();
                }
                for v in rows_of(&s["values"]) {
                    let full: Vec<Value> = tags.iter().map(|(_, t)| t.clone()).chain(v).collect();
                    // Rows are kept by column name, so series with other tags still line up.
                    rows.push(align(&columns, &cols, full));
                }
            }
        }
        return RawAnswer {
            id,
            columns,
            rows,
            error: None,
        };
    }
    failed(
        id,
        "the response has neither an `output` array (a SQL answer) nor a `results` array (an InfluxQL answer)".into(),
    )
}

fn rows_of(v: &Value) -> Vec<Vec<Value>> {
    v.as_array()
        .into_iter()
        .flatten()
        .map(|r| r.as_array().cloned().unwrap_or_default())
        .collect()
}

fn align(columns: &[String], cols: &[String], row: Vec<Value>) -> Vec<Value> {
    columns
        .iter()
        .map(|c| {
            cols.iter()
                .position(|x| x == c)
                .and_then(|i| row.get(i).cloned())
                .unwrap_or(Value::Null)
        })
        .collect()
}

/// Rows given as objects (InfluxDB 3's `format=json`, the PostgreSQL runner's `results`).
fn object_rows(id: u64, v: &Value) -> RawAnswer {
    let Some(items) = v.as_array() else {
        if let Some(e) = v.get("error").and_then(Value::as_str) {
            return failed(id, format!("the server answered an error: {e}"));
        }
        return failed(id, "the answer is not a list of rows".into());
    };
    let mut columns: Vec<String> = Vec::new();
    for o in items.iter().filter_map(Value::as_object) {
        for k in o.keys() {
            if !columns.contains(k) {
                columns.push(k.clone());
            }
        }
    }
    let rows = items
        .iter()
        .map(|o| {
            columns
                .iter()
                .map(|c| o.get(c).cloned().unwrap_or(Value::Null))
                .collect()
        })
        .collect();
    RawAnswer {
        id,
        columns,
        rows,
        error: None,
    }
}

fn parse_sql_then_body(text: &str) -> Vec<RawAnswer> {
    let lines = lines_with_offsets(text);
    let mut out = Vec::new();
    let mut i = 0;
    while i < lines.len() {
        let Some(id) = lines[i]
            .1
            .strip_prefix("ID ")
            .and_then(|r| r.split_once(" SQL: "))
            .and_then(|(n, _)| n.parse::<u64>().ok())
        else {
            i += 1;
            continue;
        };
        // The SQL may span lines; the body starts at the first line that opens JSON.
        let body = (i + 1..lines.len()).find(|&j| {
            let l = lines[j].1;
            l == "[" || l == "{" || l == "[]" || l == "{}" || l.starts_with("ID ")
        });
        match body {
            Some(j) if !lines[j].1.starts_with("ID ") => match json_at(text, lines[j].0) {
                Some((v, end)) => {
                    out.push(object_rows(id, &v));
                    i = lines.partition_point(|(o, _)| *o < end);
                }
                None => {
                    out.push(failed(id, "the printed body is not JSON".into()));
                    i = j + 1;
                }
            },
            _ => {
                out.push(failed(id, "the printed body is not JSON".into()));
                i += 1;
            }
        }
    }
    out
}

fn parse_query_results(text: &str) -> Vec<RawAnswer> {
    let lines = lines_with_offsets(text);
    let mut out = Vec::new();
    let mut i = 0;
    while i < lines.len() {
        if lines[i].1 != "{" {
            i += 1;
            continue;
        }
        match json_at(text, lines[i].0) {
            Some((v, end)) if v.get("results").is_some() && v.get("query").is_some() => {
                let id = out.len() as u64;
                out.push(object_rows(id, &v["results"]));
                i = lines.partition_point(|(o, _)| *o < end);
            }
            _ => i += 1,
        }
    }
    out
}

/// The ten CPU metrics of the devops use case, in TSBS's order.
const METRICS: [&str; 10] = [
    "usage_user",
    "usage_system",
    "usage_idle",
    "usage_nice",
    "usage_iowait",
    "usage_irq",
    "usage_softirq",
    "usage_steal",
    "usage_guest",
    "usage_guest_nice",
];
const TAGS: [&str; 10] = [
    "hostname",
    "region",
    "datacenter",
    "rack",
    "os",
    "arch",
    "team",
    "service",
    "service_version",
    "service_environment",
];

/// The mapped columns a devops query type compares (those every dialect returns), or `None`
/// for a type this module does not know (all its mapped columns are compared).
pub fn compared_columns(query_type: &str) -> Option<Vec<String>> {
    let n_metrics = |s: &str| -> Option<usize> {
        if s == "all" {
            Some(METRICS.len())
        } else {
            s.parse().ok().filter(|n| (1..=METRICS.len()).contains(n))
        }
    };
    let with = |agg: &str, n: usize| -> Vec<String> {
        std::iter::once("time".to_string())
            .chain(METRICS[..n].iter().map(|m| format!("{agg}{m}")))
            .collect()
    };
    let parts: Vec<&str> = query_type.split('-').collect();
    match parts.as_slice() {
        // single-groupby-<metrics>-<hosts>-<hours>: max per minute.
        ["single", "groupby", m, _, _] => Some(with("max_", n_metrics(m)?)),
        // cpu-max-all-<hosts>: max of all metrics per hour.
        ["cpu", "max", "all", _] => Some(with("max_", METRICS.len())),
        // double-groupby-<metrics>: mean per hour and host (GreptimeDB's query does not
        // return the host, so the hour and the means are compared).
        ["double", "groupby", m] => Some(with("avg_", n_metrics(m)?)),
        ["groupby", "orderby", "limit"] => Some(with("max_", 1)),
        // high-cpu-<hosts>: the rows themselves (PostgreSQL's cpu table has no hostname).
        ["high", "cpu", _] => Some(with("", METRICS.len())),
        // lastpoint: the last values per host (GreptimeDB's query does not return the time).
        ["lastpoint"] => Some(
            TAGS.iter()
                .chain(METRICS.iter())
                .map(|s| s.to_string())
                .collect(),
        ),
        _ => None,
    }
}

/// The one name of a column's meaning (see the module documentation).
pub fn map_column(query_type: &str, raw: &str) -> String {
    let mut s = raw.trim().trim_matches('"').to_ascii_lowercase();
    // A call: the function name and its first argument.
    if let Some(open) = s.find('(') {
        let func = s[..open].trim().to_string();
        // Up to the call's own closing parenthesis: DataFusion writes an aggregate's ORDER BY
        // after it (`last_value(cpu.region) ORDER BY [cpu.greptime_timestamp ASC NULLS LAST]`).
        let mut depth = 0usize;
        let close = s[open..]
            .char_indices()
            .find(|&(_, c)| {
                match c {
                    '(' => depth += 1,
                    ')' => depth -= 1,
                    _ => {}
                }
                depth == 0
            })
            .map_or(s.len(), |(i, _)| open + i);
        let inner = &s[open + 1..close];
        let arg = inner
            .split([',', ' '])
            .map(str::trim)
            .find(|a| !a.is_empty())
            .unwrap_or("")
            .to_string();
        let col = |a: &str| unqualify(a.trim_matches('"')).to_string();
        s = match func.as_str() {
            "date_trunc" | "date_bin" | "time_bucket" | "to_timestamp" => "time".into(),
            "max" | "min" | "avg" | "sum" | "count" => format!("{func}_{}", col(&arg)),
            "mean" => format!("avg_{}", col(&arg)),
            "last_value" | "last" | "first_value" | "first" => col(&arg),
            _ => s,
        };
    } else {
        s = unqualify(&s).to_string();
    }
    if let Some(m) = s.strip_prefix("mean_") {
        s = format!("avg_{m}");
    }
    match s.as_str() {
        "time" | "minute" | "hour" | "ts" | "greptime_timestamp" | "bucket" => "time".into(),
        // PostgreSQL names `max(usage_user)` without an alias `max`; InfluxQL too.
        "max" if query_type == "groupby-orderby-limit" => "max_usage_user".into(),
        _ => s,
    }
}

fn unqualify(s: &str) -> &str {
    s.rsplit('.').next().unwrap_or(s)
}

/// A number rounded to [`SIGNIFICANT_DIGITS`].
pub fn round(x: f64) -> f64 {
    if x == 0.0 || !x.is_finite() {
        return if x == 0.0 { 0.0 } else { x };
    }
    let s = format!("{:.*e}", SIGNIFICANT_DIGITS - 1, x);
    let r: f64 = s.parse().unwrap_or(x);
    if r == 0.0 {
        0.0
    } else {
        r
    }
}

/// A time value as RFC 3339 UTC with milliseconds, or `None` when it is not one.
pub fn time_value(v: &Value) -> Option<String> {
    use time::format_description::well_known::Rfc3339;
    use time::{OffsetDateTime, PrimitiveDateTime};
    let nanos: i128 = match v {
        Value::Number(n) => {
            let x = n.as_f64()?;
            let a = x.abs();
            // Epoch seconds, ms, µs or ns of dates between 1973 and 2286, by magnitude.
            let scale = if a >= 1e17 {
                1.0
            } else if a >= 1e14 {
                1e3
            } else if a >= 1e11 {
                1e6
            } else {
                1e9
            };
            (x * scale).round() as i128
        }
        Value::String(s) => {
            let s = s.trim();
            if let Ok(t) = OffsetDateTime::parse(s, &Rfc3339) {
                t.unix_timestamp_nanos()
            } else {
                let f = time::macros::format_description!(
                    version = 2,
                    "[year]-[month]-[day][first [T][ ]][hour]:[minute]:[second][optional [.[subsecond]]]"
                );
                let p = PrimitiveDateTime::parse(s.trim_end_matches('Z'), &f).ok()?;
                p.assume_utc().unix_timestamp_nanos()
            }
        }
        _ => return None,
    };
    let ms = nanos.div_euclid(1_000_000);
    let t = OffsetDateTime::from_unix_timestamp_nanos(ms * 1_000_000).ok()?;
    let f = time::macros::format_description!(
        "[year]-[month]-[day]T[hour]:[minute]:[second].[subsecond digits:3]Z"
    );
    t.format(&f).ok()
}

/// One value, normalised for column `col`.
fn normalise_value(col: &str, v: &Value) -> Value {
    if col == "time" {
        if let Some(t) = time_value(v) {
            return Value::String(t);
        }
    }
    match v {
        Value::Number(n) => match n.as_f64() {
            Some(x) => serde_json::Number::from_f64(round(x))
                .map(Value::Number)
                .unwrap_or(Value::Null),
            None => v.clone(),
        },
        other => other.clone(),
    }
}

/// Normalises one answer of `query_type` into its record.
pub fn normalise(query_type: &str, a: &RawAnswer) -> AnswerRecord {
    let mapped: Vec<String> = a
        .columns
        .iter()
        .map(|c| map_column(query_type, c))
        .collect();
    let wanted = compared_columns(query_type).unwrap_or_else(|| {
        let mut seen = Vec::new();
        for c in &mapped {
            if !seen.contains(c) {
                seen.push(c.clone());
            }
        }
        seen
    });
    let at: Vec<Option<usize>> = wanted
        .iter()
        .map(|w| mapped.iter().position(|m| m == w))
        .collect();
    // An empty answer has nothing to lose: it is the type's columns with no rows.
    let empty = a.rows.is_empty();
    let missing: Vec<String> = if empty || a.error.is_some() {
        Vec::new()
    } else {
        wanted
            .iter()
            .zip(&at)
            .filter(|(_, i)| i.is_none())
            .map(|(w, _)| w.clone())
            .collect()
    };
    let columns: Vec<String> = wanted
        .iter()
        .zip(&at)
        .filter(|(_, i)| i.is_some() || empty)
        .map(|(w, _)| w.clone())
        .collect();
    let mut rows: Vec<(String, Vec<Value>)> = a
        .rows
        .iter()
        .map(|r| {
            let vals: Vec<Value> = wanted
                .iter()
                .zip(&at)
                .filter_map(|(w, i)| {
                    i.map(|i| normalise_value(w, r.get(i).unwrap_or(&Value::Null)))
                })
                .collect();
            (Value::Array(vals.clone()).to_string(), vals)
        })
        .collect();
    rows.sort_by(|x, y| x.0.cmp(&y.0));
    let mut text = String::new();
    text.push_str(&serde_json::to_string(&columns).unwrap_or_default());
    text.push('\n');
    text.push_str(&serde_json::to_string(&missing).unwrap_or_default());
    text.push('\n');
    if let Some(e) = &a.error {
        text.push_str("error\n");
        text.push_str(e);
        text.push('\n');
    }
    for (t, _) in &rows {
        text.push_str(t);
        text.push('\n');
    }
    AnswerRecord {
        query_type: query_type.to_string(),
        index: a.id,
        digest: crate::hash::sha256_hex(text.as_bytes()),
        rows: rows.len() as u64,
        columns,
        missing,
        head: rows.into_iter().take(HEAD_ROWS).map(|(_, v)| v).collect(),
        error: a.error.clone(),
    }
}

/// Appends records to a run's `answers.jsonl`.
pub fn append(run_dir: &Path, records: &[AnswerRecord]) -> Result<()> {
    use std::io::Write;
    let path = run_dir.join(FILE);
    let mut f = fs_err::OpenOptions::new()
        .create(true)
        .append(true)
        .open(&path)?;
    let mut text = String::new();
    for r in records {
        text.push_str(&serde_json::to_string(r).map_err(|e| Error::failed(e.to_string()))?);
        text.push('\n');
    }
    Ok(f.write_all(text.as_bytes())?)
}

/// A run's answers: by query type, then by index in the type's file.
pub type RunAnswers = BTreeMap<String, BTreeMap<u64, AnswerRecord>>;

/// A run's answers by type and index (`None` when the run did not check its answers).
pub fn read(run_dir: &Path) -> Option<RunAnswers> {
    let text = std::fs::read_to_string(run_dir.join(FILE)).ok()?;
    let mut out: RunAnswers = BTreeMap::new();
    for line in text.lines().filter(|l| !l.trim().is_empty()) {
        if let Ok(r) = serde_json::from_str::<AnswerRecord>(line) {
            out.entry(r.query_type.clone())
                .or_default()
                .insert(r.index, r);
        }
    }
    Some(out)
}

/// What `summary.json` says of a run's answer check.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct AnswersSummary {
    /// `answers.jsonl`.
    pub file: String,
    /// How the answers were taken (a verification pass after the timed ones).
    pub method: String,
    pub significant_digits: usize,
    pub types: Vec<TypeAnswers>,
}

/// One type's checked answers.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct TypeAnswers {
    pub query_type: String,
    /// Queries whose answers were read.
    pub queries: u64,
    /// Queries the file held.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub expected: Option<u64>,
    pub rows: u64,
    /// Answers that were errors or could not be read.
    pub errors: u64,
    /// SHA-256 over the type's answer digests in query order.
    pub digest: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub note: Option<String>,
}

/// Summarises one type's records.
pub fn summarise_type(
    query_type: &str,
    records: &[AnswerRecord],
    expected: Option<u64>,
) -> TypeAnswers {
    let mut all = String::new();
    for r in records {
        all.push_str(&r.digest);
        all.push('\n');
    }
    TypeAnswers {
        query_type: query_type.to_string(),
        queries: records.len() as u64,
        expected,
        rows: records.iter().map(|r| r.rows).sum(),
        errors: records.iter().filter(|r| r.error.is_some()).count() as u64,
        digest: crate::hash::sha256_hex(all.as_bytes()),
        note: None,
    }
}

/// The answers of one query type across a report's runs.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct AnswerRow {
    pub query_type: String,
    /// `same`, `different`, or `unchecked` (fewer than two runs checked this type).
    pub verdict: String,
    /// Queries compared (present in every checked run).
    pub queries: u64,
    /// The labels of the runs compared.
    pub runs: Vec<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub first_difference: Option<String>,
}

/// Compares the checked answers of `runs` (label, answers) type by type.
pub fn compare(runs: &[(String, Option<RunAnswers>)]) -> Vec<AnswerRow> {
    let mut types: Vec<String> = Vec::new();
    for (_, a) in runs {
        for t in a.iter().flat_map(|a| a.keys()) {
            if !types.contains(t) {
                types.push(t.clone());
            }
        }
    }
    types.sort();
    types
        .into_iter()
        .map(|t| {
            let checked: Vec<(&String, &BTreeMap<u64, AnswerRecord>)> = runs
                .iter()
                .filter_map(|(l, a)| Some((l, a.as_ref()?.get(&t)?)))
                .collect();
            let labels = checked.iter().map(|(l, _)| (*l).clone()).collect();
            if checked.len() < 2 {
                return AnswerRow {
                    query_type: t,
                    verdict: "unchecked".into(),
                    queries: 0,
                    runs: labels,
                    first_difference: None,
                };
            }
            let (l0, a0) = checked[0];
            let mut common = 0;
            let mut diff = None;
            for (idx, r0) in a0 {
                let others: Vec<(&String, &AnswerRecord)> = checked[1..]
                    .iter()
                    .filter_map(|(l, a)| Some((*l, a.get(idx)?)))
                    .collect();
                if others.len() + 1 < checked.len() {
                    continue;
                }
                common += 1;
                if diff.is_some() {
                    continue;
                }
                if let Some((l, r)) = others.iter().find(|(_, r)| r.digest != r0.digest) {
                    diff = Some(describe(*idx, l0, r0, l, r));
                }
            }
            let counts: Vec<usize> = checked.iter().map(|(_, a)| a.len()).collect();
            if diff.is_none() && counts.iter().any(|&n| n != common) {
                diff = Some(format!(
                    "the runs checked different queries ({}): only the {common} they share are compared",
                    checked
                        .iter()
                        .map(|(l, a)| format!("{l}: {}", a.len()))
                        .collect::<Vec<_>>()
                        .join(", ")
                ));
            }
            let verdict = if common == 0 || diff.as_deref().is_some_and(|d| !d.starts_with("the runs checked")) {
                "different"
            } else {
                "same"
            };
            AnswerRow {
                query_type: t,
                verdict: verdict.into(),
                queries: common as u64,
                runs: labels,
                first_difference: diff,
            }
        })
        .collect()
}

/// Where two answers of query `idx` first differ, in words.
fn describe(idx: u64, la: &str, a: &AnswerRecord, lb: &str, b: &AnswerRecord) -> String {
    let q = format!("query {idx}");
    if a.error.is_some() || b.error.is_some() {
        let e = |r: &AnswerRecord| {
            r.error
                .clone()
                .unwrap_or_else(|| format!("{} rows", r.rows))
        };
        return format!("{q}: {la}: {}; {lb}: {}", e(a), e(b));
    }
    if a.missing != b.missing {
        let m = |r: &AnswerRecord| {
            if r.missing.is_empty() {
                "all compared columns".to_string()
            } else {
                format!("no {}", r.missing.join(", "))
            }
        };
        return format!("{q}: {la} returned {}; {lb} returned {}", m(a), m(b));
    }
    if a.rows != b.rows {
        let mut s = format!("{q}: {la} returned {} rows, {lb} {} rows", a.rows, b.rows);
        if let Some(d) = first_row_difference(a, b, la, lb) {
            s.push_str(&format!("; {d}"));
        }
        return s;
    }
    match first_row_difference(a, b, la, lb) {
        Some(d) => format!("{q}: {d}"),
        None => format!(
            "{q}: the first {} rows agree, a later one differs (digests {} and {})",
            a.head.len().min(b.head.len()),
            &a.digest[..12.min(a.digest.len())],
            &b.digest[..12.min(b.digest.len())]
        ),
    }
}

fn first_row_difference(a: &AnswerRecord, b: &AnswerRecord, la: &str, lb: &str) -> Option<String> {
    let n = a.head.len().min(b.head.len());
    let i = (0..n).find(|&i| a.head[i] != b.head[i])?;
    let cols = &a.columns;
    let (ra, rb) = (&a.head[i], &b.head[i]);
    let col = (0..ra.len().max(rb.len())).find(|&c| ra.get(c) != rb.get(c));
    let at = col
        .and_then(|c| cols.get(c))
        .map(|c| format!(", column {c}"))
        .unwrap_or_default();
    Some(format!(
        "sorted row {}{at}: {la} {} vs {lb} {}",
        i + 1,
        row_text(cols, ra),
        row_text(cols, rb)
    ))
}

fn row_text(cols: &[String], row: &[Value]) -> String {
    let parts: Vec<String> = cols
        .iter()
        .zip(row)
        .map(|(c, v)| match v {
            Value::String(s) => format!("{c}={s}"),
            other => format!("{c}={other}"),
        })
        .collect();
    format!("({})", parts.join(", "))
}

#[cfg(test)]
mod tests;
