//! A small SQL evaluator over the stored rows: enough for `SELECT count(*)`, `SHOW TABLES` and
//! the TSBS devops shapes (aggregates, `date_bin`/`date_trunc` buckets, `hostname IN`, time
//! ranges, numeric thresholds, `GROUP BY`, `ORDER BY`, `LIMIT`). Answers are computed from the
//! data, never made up. Conditions it does not understand are ignored (documented leniency:
//! the TSBS runners only check the status); statements it cannot parse are planning errors.

use super::lp::Field;
use super::store::{Row, TableData, TableEntry, ValueRef};
use std::cmp::Ordering;
use std::collections::BTreeMap;

#[derive(Debug, Clone, PartialEq)]
pub enum Val {
    Null,
    Str(String),
    F(f64),
    I(i64),
    U(u64),
    B(bool),
    Time(i64),
}

impl Val {
    fn from_ref(v: Option<ValueRef<'_>>) -> Val {
        match v {
            None => Val::Null,
            Some(ValueRef::Tag(s)) => Val::Str(s.to_string()),
            Some(ValueRef::Field(f)) => match f {
                Field::F(x) => Val::F(*x),
                Field::I(x) => Val::I(*x),
                Field::U(x) => Val::U(*x),
                Field::S(s) => Val::Str(s.clone()),
                Field::B(b) => Val::B(*b),
            },
        }
    }
    fn num(&self) -> Option<f64> {
        match self {
            Val::F(x) => Some(*x),
            Val::I(x) => Some(*x as f64),
            Val::U(x) => Some(*x as f64),
            Val::Time(x) => Some(*x as f64),
            _ => None,
        }
    }
    fn cmp(&self, other: &Val) -> Ordering {
        match (self, other) {
            (Val::Null, Val::Null) => Ordering::Equal,
            (Val::Null, _) => Ordering::Greater,
            (_, Val::Null) => Ordering::Less,
            (Val::Str(a), Val::Str(b)) => a.cmp(b),
            (Val::B(a), Val::B(b)) => a.cmp(b),
            (a, b) => a
                .num()
                .unwrap_or(f64::NAN)
                .partial_cmp(&b.num().unwrap_or(f64::NAN))
                .unwrap_or(Ordering::Equal),
        }
    }
    fn json(&self) -> Option<String> {
        Some(match self {
            Val::Null => return None,
            Val::Str(s) => serde_json::to_string(s).unwrap(),
            Val::F(x) => serde_json::to_string(x).unwrap(),
            Val::I(x) => x.to_string(),
            Val::U(x) => x.to_string(),
            Val::B(b) => b.to_string(),
            Val::Time(t) => format!("\"{}\"", fmt_time(*t)),
        })
    }
    fn text(&self) -> String {
        match self {
            Val::Null => String::new(),
            Val::Str(s) => s.clone(),
            Val::Time(t) => fmt_time(*t),
            other => other.json().unwrap_or_default(),
        }
    }
}

fn fmt_time(ns: i64) -> String {
    let t = time::OffsetDateTime::from_unix_timestamp_nanos(ns as i128)
        .unwrap_or(time::OffsetDateTime::UNIX_EPOCH);
    let base = format!(
        "{:04}-{:02}-{:02}T{:02}:{:02}:{:02}",
        t.year(),
        u8::from(t.month()),
        t.day(),
        t.hour(),
        t.minute(),
        t.second()
    );
    let frac = t.nanosecond();
    if frac == 0 {
        base
    } else {
        format!("{base}.{}", format!("{frac:09}").trim_end_matches('0'))
    }
}

fn parse_time(s: &str) -> Option<i64> {
    let s = s.trim();
    let with_zone = if s.ends_with('Z') || s.contains('+') || s[10.min(s.len())..].contains('-') {
        s.to_string()
    } else {
        format!("{s}Z")
    };
    let with_t = with_zone.replacen(' ', "T", 1);
    time::OffsetDateTime::parse(&with_t, &time::format_description::well_known::Rfc3339)
        .ok()
        .map(|t| t.unix_timestamp_nanos() as i64)
}

/// A result: column names and rows.
#[derive(Debug)]
pub struct ResultSet {
    pub columns: Vec<String>,
    pub rows: Vec<Vec<Val>>,
}

impl ResultSet {
    fn object(&self, row: &[Val]) -> String {
        let parts: Vec<String> = self
            .columns
            .iter()
            .zip(row)
            .filter_map(|(c, v)| {
                v.json()
                    .map(|j| format!("{}:{j}", serde_json::to_string(c).unwrap()))
            })
            .collect();
        format!("{{{}}}", parts.join(","))
    }
    pub fn to_json(&self) -> String {
        let rows: Vec<String> = self.rows.iter().map(|r| self.object(r)).collect();
        format!("[{}]", rows.join(","))
    }
    pub fn to_jsonl(&self) -> String {
        self.rows.iter().map(|r| self.object(r) + "\n").collect()
    }
    pub fn to_csv(&self) -> String {
        let mut out = self.columns.join(",") + "\n";
        for r in &self.rows {
            let cells: Vec<String> = r
                .iter()
                .map(|v| {
                    let t = v.text();
                    if t.contains([',', '"', '\n']) {
                        format!("\"{}\"", t.replace('"', "\"\""))
                    } else {
                        t
                    }
                })
                .collect();
            out += &(cells.join(",") + "\n");
        }
        out
    }
    pub fn to_pretty(&self) -> String {
        let mut widths: Vec<usize> = self.columns.iter().map(|c| c.len()).collect();
        for r in &self.rows {
            for (i, v) in r.iter().enumerate() {
                widths[i] = widths[i].max(v.text().len());
            }
        }
        let sep = format!(
            "+{}+\n",
            widths
                .iter()
                .map(|w| "-".repeat(w + 2))
                .collect::<Vec<_>>()
                .join("+")
        );
        let line = |cells: Vec<String>| {
            let c: Vec<String> = cells
                .iter()
                .zip(&widths)
                .map(|(c, w)| format!(" {c:<w$} "))
                .collect();
            format!("|{}|\n", c.join("|"))
        };
        let mut out = sep.clone();
        out += &line(self.columns.clone());
        out += &sep;
        for r in &self.rows {
            out += &line(r.iter().map(Val::text).collect());
        }
        out + &sep
    }
}

fn plan_err(msg: &str) -> String {
    format!("Error during planning: {msg}")
}

/// Finds `kw` (a space-separated keyword sequence) at paren depth 0, outside quotes.
fn find_kw(s: &str, kw: &str) -> Option<usize> {
    let lower = s.to_ascii_lowercase();
    let b = lower.as_bytes();
    let kw = kw.to_ascii_lowercase();
    let mut depth = 0i32;
    let mut quote: Option<u8> = None;
    let mut i = 0;
    while i < b.len() {
        let c = b[i];
        if let Some(q) = quote {
            if c == q {
                quote = None;
            }
        } else if c == b'\'' || c == b'"' {
            quote = Some(c);
        } else if c == b'(' {
            depth += 1;
        } else if c == b')' {
            depth -= 1;
        } else if depth == 0
            && lower[i..].starts_with(&kw)
            && (i == 0 || !(b[i - 1].is_ascii_alphanumeric() || b[i - 1] == b'_'))
            && b.get(i + kw.len())
                .is_none_or(|n| !(n.is_ascii_alphanumeric() || *n == b'_'))
        {
            return Some(i);
        }
        i += 1;
    }
    None
}

/// Splits on `sep` (a keyword, or "," ) at depth 0 outside quotes.
fn split_top(s: &str, sep: &str) -> Vec<String> {
    let mut parts = vec![];
    let mut rest = s;
    loop {
        let pos = if sep == "," {
            find_char(rest, ',')
        } else {
            find_kw(rest, sep)
        };
        match pos {
            Some(p) => {
                parts.push(rest[..p].trim().to_string());
                rest = &rest[p + sep.len()..];
            }
            None => {
                parts.push(rest.trim().to_string());
                return parts;
            }
        }
    }
}

fn find_char(s: &str, ch: char) -> Option<usize> {
    let mut depth = 0i32;
    let mut quote: Option<char> = None;
    for (i, c) in s.char_indices() {
        match quote {
            Some(q) if c == q => quote = None,
            Some(_) => {}
            None if c == '\'' || c == '"' => quote = Some(c),
            None if c == '(' => depth += 1,
            None if c == ')' => depth -= 1,
            None if c == ch && depth == 0 => return Some(i),
            None => {}
        }
    }
    None
}

fn unquote(s: &str) -> String {
    let s = s.trim();
    if s.len() >= 2
        && ((s.starts_with('"') && s.ends_with('"')) || (s.starts_with('\'') && s.ends_with('\'')))
    {
        s[1..s.len() - 1].to_string()
    } else {
        s.to_string()
    }
}

#[derive(Debug, Clone)]
enum Expr {
    Star,
    Col(String),
    Bucket(i64),
    Agg(String, Option<String>),
}

struct Item {
    expr: Expr,
    name: String,
}

fn interval_ns(s: &str) -> Option<i64> {
    let t = unquote(
        s.trim()
            .trim_start_matches("INTERVAL")
            .trim_start_matches("interval")
            .trim(),
    );
    let (n, unit) = match t.split_once(' ') {
        Some((n, u)) => (n.trim().parse::<i64>().ok()?, u.trim().to_ascii_lowercase()),
        None => (1, t.to_ascii_lowercase()),
    };
    let u = unit.trim_end_matches('s');
    let base: i64 = match u {
        "nanosecond" | "n" => 1,
        "microsecond" => 1_000,
        "millisecond" | "m" if u == "millisecond" => 1_000_000,
        "second" | "sec" => 1_000_000_000,
        "minute" | "min" => 60_000_000_000,
        "hour" | "h" => 3_600_000_000_000,
        "day" | "d" => 86_400_000_000_000,
        "week" => 7 * 86_400_000_000_000,
        _ => return None,
    };
    Some(n * base)
}

fn parse_item(text: &str, table: &str) -> Result<Item, String> {
    let (expr_text, alias) = match find_kw(text, "as") {
        Some(p) => (text[..p].trim(), Some(unquote(&text[p + 2..]))),
        None => (text.trim(), None),
    };
    let lower = expr_text.to_ascii_lowercase();
    let expr = if expr_text == "*" {
        Expr::Star
    } else if let Some(open) = lower.find('(') {
        let func = lower[..open].trim().to_string();
        let inner = expr_text[open + 1
            ..expr_text
                .rfind(')')
                .ok_or_else(|| plan_err("unbalanced parenthesis"))?]
            .trim();
        match func.as_str() {
            "date_bin" => {
                let args = split_top(inner, ",");
                Expr::Bucket(
                    interval_ns(&args[0])
                        .ok_or_else(|| plan_err(&format!("unsupported interval {}", args[0])))?,
                )
            }
            "date_trunc" => {
                let args = split_top(inner, ",");
                Expr::Bucket(
                    interval_ns(&args[0])
                        .ok_or_else(|| plan_err(&format!("unsupported granularity {}", args[0])))?,
                )
            }
            "count" | "max" | "min" | "avg" | "mean" | "sum" | "last_value" | "first_value" => {
                let arg = match find_kw(inner, "order by") {
                    Some(p) => inner[..p].trim(),
                    None => inner,
                };
                let col = if arg == "*" { None } else { Some(unquote(arg)) };
                Expr::Agg(func, col)
            }
            other => return Err(plan_err(&format!("Invalid function '{other}'"))),
        }
    } else {
        Expr::Col(unquote(expr_text))
    };
    let name = alias.unwrap_or_else(|| match &expr {
        Expr::Agg(f, None) => format!("{f}(*)"),
        Expr::Agg(f, Some(c)) => format!("{f}({table}.{c})"),
        Expr::Col(c) => c.clone(),
        _ => expr_text.to_string(),
    });
    Ok(Item { expr, name })
}

enum Cond {
    Time(String, i64),
    In(String, Vec<String>),
    Num(String, String, f64),
}

fn parse_conds(text: &str) -> Vec<Cond> {
    let mut out = vec![];
    for raw in split_top(text, "and") {
        let mut c = raw.trim();
        while c.starts_with('(')
            && c.ends_with(')')
            && find_char(&c[1..c.len() - 1], ')').is_none_or(|_| true)
        {
            let inner = &c[1..c.len() - 1];
            if find_kw(inner, "or").is_some() || inner.contains('(') {
                break;
            }
            c = inner.trim();
        }
        let lower = c.to_ascii_lowercase();
        if let Some(p) = find_kw(c, "in") {
            let col = unquote(&c[..p]);
            let list = c[p + 2..]
                .trim()
                .trim_start_matches('(')
                .trim_end_matches(')');
            out.push(Cond::In(
                col,
                split_top(list, ",").iter().map(|v| unquote(v)).collect(),
            ));
            continue;
        }
        if c.starts_with('(') && find_kw(&c[1..c.len().saturating_sub(1)], "or").is_some() {
            let inner = &c[1..c.len() - 1];
            let mut col = None;
            let mut vals = vec![];
            for alt in split_top(inner, "or") {
                if let Some((l, r)) = alt.split_once('=') {
                    col = Some(unquote(l));
                    vals.push(unquote(r));
                }
            }
            if let Some(col) = col {
                out.push(Cond::In(col, vals));
            }
            continue;
        }
        for op in [">=", "<=", "!=", "<>", ">", "<", "="] {
            if let Some(p) = c.find(op) {
                let col = unquote(&c[..p]);
                let rhs = c[p + op.len()..].trim();
                if col.eq_ignore_ascii_case("time") {
                    if let Some(t) = parse_time(&unquote(rhs)) {
                        out.push(Cond::Time(op.to_string(), t));
                    }
                } else if let Ok(n) = rhs.parse::<f64>() {
                    out.push(Cond::Num(col, op.to_string(), n));
                } else if op == "=" && rhs.starts_with('\'') {
                    out.push(Cond::In(col, vec![unquote(rhs)]));
                }
                break;
            }
        }
        let _ = lower;
    }
    out
}

fn cmp_op(op: &str, o: Ordering) -> bool {
    match op {
        ">=" => o != Ordering::Less,
        "<=" => o != Ordering::Greater,
        ">" => o == Ordering::Greater,
        "<" => o == Ordering::Less,
        "=" => o == Ordering::Equal,
        _ => o != Ordering::Equal,
    }
}

fn matches(td: &TableData, row: &Row, conds: &[Cond]) -> bool {
    conds.iter().all(|c| match c {
        Cond::Time(op, t) => cmp_op(op, row.time.cmp(t)),
        Cond::In(col, vals) => match td.value_of(row, col) {
            Some(ValueRef::Tag(v)) => vals.iter().any(|x| x == v),
            Some(ValueRef::Field(Field::S(v))) => vals.iter().any(|x| x == v),
            _ => false,
        },
        Cond::Num(col, op, n) => match Val::from_ref(td.value_of(row, col)).num() {
            Some(v) => cmp_op(op, v.partial_cmp(n).unwrap_or(Ordering::Equal)),
            None => false,
        },
    })
}

fn column_value(td: &TableData, row: &Row, col: &str) -> Val {
    if col.eq_ignore_ascii_case("time") {
        return Val::Time(row.time);
    }
    Val::from_ref(td.value_of(row, col))
}

fn aggregate(td: &TableData, func: &str, col: Option<&str>, rows: &[&Row]) -> Val {
    let vals = || {
        rows.iter()
            .map(move |r| col.map(|c| column_value(td, r, c)).unwrap_or(Val::I(1)))
    };
    match func {
        "count" => Val::I(vals().filter(|v| *v != Val::Null).count() as i64),
        "max" => vals()
            .filter(|v| *v != Val::Null)
            .max_by(|a, b| a.cmp(b))
            .unwrap_or(Val::Null),
        "min" => vals()
            .filter(|v| *v != Val::Null)
            .min_by(|a, b| a.cmp(b))
            .unwrap_or(Val::Null),
        "sum" => {
            let v: Vec<Val> = vals().filter(|v| *v != Val::Null).collect();
            if v.is_empty() {
                Val::Null
            } else if v.iter().all(|x| matches!(x, Val::I(_))) {
                Val::I(
                    v.iter()
                        .map(|x| if let Val::I(i) = x { *i } else { 0 })
                        .sum(),
                )
            } else {
                Val::F(v.iter().filter_map(Val::num).sum())
            }
        }
        "avg" | "mean" => {
            let v: Vec<f64> = vals().filter_map(|v| v.num()).collect();
            if v.is_empty() {
                Val::Null
            } else {
                Val::F(v.iter().sum::<f64>() / v.len() as f64)
            }
        }
        "last_value" | "first_value" => {
            let pick = if func == "last_value" {
                rows.iter().max_by_key(|r| r.time)
            } else {
                rows.iter().min_by_key(|r| r.time)
            };
            pick.map(|r| col.map(|c| column_value(td, r, c)).unwrap_or(Val::Null))
                .unwrap_or(Val::Null)
        }
        _ => Val::Null,
    }
}

/// Executes `sql` against the tables of one database.
/// How many snapshot (Parquet) files a `SELECT ... FROM t [WHERE time ...]` would scan: the
/// files of `t` whose time range meets the query's time conditions (Core prunes by time only,
/// so a tag predicate prunes nothing). 0 for anything else.
pub fn parquet_files_scanned(tables: &[(&TableEntry, &TableData)], sql: &str) -> usize {
    let flat: String = sql.split_whitespace().collect::<Vec<_>>().join(" ");
    let Some(from) = find_kw(&flat, "from") else {
        return 0;
    };
    let after_from = &flat[from + 4..];
    let ends = ["where", "group by", "order by", "limit"];
    let end_of = |s: &str| {
        ends.iter()
            .filter_map(|k| find_kw(s, k))
            .min()
            .unwrap_or(s.len())
    };
    let name = unquote(after_from[..end_of(after_from)].trim());
    let bare = name.rsplit('.').next().unwrap_or(&name).to_string();
    let Some((_, td)) = tables.iter().find(|(t, _)| t.name == bare) else {
        return 0;
    };
    let conds = find_kw(after_from, "where")
        .map(|p| {
            let rest = &after_from[p + 5..];
            parse_conds(rest[..end_of(rest)].trim())
        })
        .unwrap_or_default();
    td.files
        .iter()
        .filter(|f| {
            let (lo, hi) = (&f.min_time, &f.max_time);
            conds.iter().all(|c| match c {
                Cond::Time(op, t) => match op.as_str() {
                    ">=" => hi >= t,
                    ">" => hi > t,
                    "<" => lo < t,
                    "<=" => lo <= t,
                    "=" => lo <= t && t <= hi,
                    _ => true,
                },
                _ => true,
            })
        })
        .count()
}

/// The text after keyword `kw` up to the next clause keyword.
fn section_text(after_from: &str, kw: &str) -> Option<String> {
    let ends = ["where", "group by", "order by", "limit"];
    let p = find_kw(after_from, kw)?;
    let rest = &after_from[p + kw.len()..];
    let end = ends
        .iter()
        .filter_map(|k| find_kw(rest, k))
        .min()
        .unwrap_or(rest.len());
    Some(rest[..end].trim().to_string())
}

/// `SELECT <columns> FROM system.parquet_files [WHERE table_name = '<t>']`: the landed
/// Parquet files, as real Core lists them (`influxdb3_system_tables/src/parquet_files.rs`:
/// `table_name`, `path`, `size_bytes`, `row_count`, `min_time`, `max_time`). Columns only;
/// no other condition or aggregate is emulated.
fn parquet_files(
    tables: &[(&TableEntry, &TableData)],
    select_text: &str,
    filter: Option<String>,
) -> Result<ResultSet, String> {
    const COLUMNS: [&str; 6] = [
        "table_name",
        "path",
        "size_bytes",
        "row_count",
        "min_time",
        "max_time",
    ];
    let wanted: Option<String> = match filter {
        None => None,
        Some(f) => match parse_conds(&f).as_slice() {
            [Cond::In(c, v)] if c == "table_name" && v.len() == 1 => Some(v[0].clone()),
            _ => {
                return Err(plan_err(
                    "testbed: system.parquet_files takes WHERE table_name = '...' only",
                ))
            }
        },
    };
    let cols: Vec<String> = if select_text.trim() == "*" {
        COLUMNS.map(String::from).to_vec()
    } else {
        split_top(select_text, ",")
            .into_iter()
            .map(|c| unquote(c.trim()))
            .collect()
    };
    if let Some(c) = cols.iter().find(|c| !COLUMNS.contains(&c.as_str())) {
        return Err(plan_err(&format!(
            "testbed: system.parquet_files has no column {c} (only columns are emulated)"
        )));
    }
    let mut rows = Vec::new();
    for (t, td) in tables {
        if wanted.as_deref().is_some_and(|w| w != t.name) {
            continue;
        }
        for f in &td.files {
            rows.push(
                cols.iter()
                    .map(|c| match c.as_str() {
                        "table_name" => Val::Str(t.name.clone()),
                        "path" => Val::Str(f.path.clone()),
                        "size_bytes" => Val::I(f.size_bytes as i64),
                        "row_count" => Val::I(f.row_count as i64),
                        "min_time" => Val::I(f.min_time),
                        _ => Val::I(f.max_time),
                    })
                    .collect(),
            );
        }
    }
    Ok(ResultSet {
        columns: cols,
        rows,
    })
}

pub fn execute(tables: &[(&TableEntry, &TableData)], sql: &str) -> Result<ResultSet, String> {
    let sql = sql.trim().trim_end_matches(';').trim();
    let flat: String = sql.split_whitespace().collect::<Vec<_>>().join(" ");
    let lower = flat.to_ascii_lowercase();
    if lower == "show tables" {
        let mut rows: Vec<Vec<Val>> = tables
            .iter()
            .map(|(t, _)| {
                vec![
                    Val::Str("public".into()),
                    Val::Str("iox".into()),
                    Val::Str(t.name.clone()),
                    Val::Str("BASE TABLE".into()),
                ]
            })
            .collect();
        for (schema, name) in [
            ("system", "distinct_caches"),
            ("system", "last_caches"),
            ("system", "parquet_files"),
            ("system", "processing_engine_triggers"),
            ("system", "queries"),
            ("information_schema", "tables"),
            ("information_schema", "views"),
            ("information_schema", "columns"),
            ("information_schema", "df_settings"),
            ("information_schema", "schemata"),
        ] {
            rows.push(vec![
                Val::Str("public".into()),
                Val::Str(schema.into()),
                Val::Str(name.into()),
                Val::Str(
                    if schema == "system" {
                        "BASE TABLE"
                    } else {
                        "VIEW"
                    }
                    .into(),
                ),
            ]);
        }
        return Ok(ResultSet {
            columns: ["table_catalog", "table_schema", "table_name", "table_type"]
                .map(String::from)
                .to_vec(),
            rows,
        });
    }
    if !lower.starts_with("select ") {
        return Err(format!(
            "sql parser error: Expected: an SQL statement, found: {}",
            flat.split_whitespace().next().unwrap_or("EOF")
        ));
    }
    let Some(from) = find_kw(&flat, "from") else {
        // `SELECT 1` and friends: integer literals only (connectivity checks).
        let mut columns = vec![];
        let mut row = vec![];
        for item in split_top(&flat[7..], ",") {
            let (expr, alias) = match find_kw(&item, "as") {
                Some(p) => (item[..p].trim().to_string(), Some(unquote(&item[p + 2..]))),
                None => (item.clone(), None),
            };
            let n: i64 = expr.parse().map_err(|_| {
                plan_err("testbed: SELECT without FROM takes integer literals only")
            })?;
            columns.push(alias.unwrap_or_else(|| format!("Int64({n})")));
            row.push(Val::I(n));
        }
        return Ok(ResultSet {
            columns,
            rows: vec![row],
        });
    };
    let select_text = &flat[7..from];
    let after_from = &flat[from + 4..];
    let ends = ["where", "group by", "order by", "limit"];
    let end_of = |s: &str| {
        ends.iter()
            .filter_map(|k| find_kw(s, k))
            .min()
            .unwrap_or(s.len())
    };
    let table_name = unquote(after_from[..end_of(after_from)].trim());
    if table_name.starts_with('(') {
        return Err(plan_err("testbed: subqueries are not emulated"));
    }
    let bare = table_name
        .rsplit('.')
        .next()
        .unwrap_or(&table_name)
        .to_string();
    if table_name.eq_ignore_ascii_case("system.parquet_files") {
        return parquet_files(tables, select_text, section_text(after_from, "where"));
    }
    let Some((table, td)) = tables.iter().find(|(t, _)| t.name == bare) else {
        return Err(plan_err(&format!("table 'public.iox.{bare}' not found")));
    };
    let section = |kw: &str| -> Option<String> {
        let p = find_kw(after_from, kw)?;
        let rest = &after_from[p + kw.len()..];
        Some(rest[..end_of(rest)].trim().to_string())
    };
    let conds = section("where")
        .map(|w| parse_conds(&w))
        .unwrap_or_default();
    let group_by = section("group by");
    let order_by = section("order by");
    let limit = match section("limit") {
        Some(l) => Some(
            l.parse::<usize>()
                .map_err(|_| plan_err(&format!("invalid LIMIT {l}")))?,
        ),
        None => None,
    };
    let mut items = Vec::new();
    for t in split_top(select_text, ",") {
        let item = parse_item(&t, &table.name)?;
        if let Expr::Col(c) | Expr::Agg(_, Some(c)) = &item.expr {
            if !table.columns.iter().any(|col| &col.name == c) {
                return Err(format!(
                    "Schema error: No field named {c}. Valid fields are {}.",
                    table
                        .columns
                        .iter()
                        .map(|c| format!("{}.{}", table.name, c.name))
                        .collect::<Vec<_>>()
                        .join(", ")
                ));
            }
        }
        items.push(item);
    }
    let td: &TableData = td;
    let filtered: Vec<&Row> = td
        .visible_rows()
        .filter(|r| matches(td, r, &conds))
        .collect();
    let has_agg = items.iter().any(|i| matches!(i.expr, Expr::Agg(..)));

    let (columns, mut out_rows) = if has_agg || group_by.is_some() {
        let key_items: Vec<usize> = items
            .iter()
            .enumerate()
            .filter(|(_, i)| matches!(i.expr, Expr::Col(_) | Expr::Bucket(_)))
            .map(|(n, _)| n)
            .collect();
        let key_of = |r: &Row| -> Vec<Val> {
            key_items
                .iter()
                .map(|&n| match &items[n].expr {
                    Expr::Bucket(w) => {
                        let t = r.time;
                        Val::Time(t - t.rem_euclid(*w))
                    }
                    Expr::Col(c) => column_value(td, r, c),
                    _ => Val::Null,
                })
                .collect()
        };
        let mut groups: BTreeMap<String, (Vec<Val>, Vec<&Row>)> = BTreeMap::new();
        if filtered.is_empty() && key_items.is_empty() {
            groups.insert(String::new(), (vec![], vec![]));
        }
        for r in &filtered {
            let k = key_of(r);
            let sort_key = k
                .iter()
                .map(|v| format!("{:>30}", v.text()))
                .collect::<Vec<_>>()
                .join("|");
            groups
                .entry(sort_key)
                .or_insert_with(|| (k, vec![]))
                .1
                .push(r);
        }
        let rows: Vec<Vec<Val>> = groups
            .into_values()
            .map(|(key, members)| {
                let mut ki = key.into_iter();
                items
                    .iter()
                    .map(|i| match &i.expr {
                        Expr::Agg(f, c) => aggregate(td, f, c.as_deref(), &members),
                        _ => ki.next().unwrap_or(Val::Null),
                    })
                    .collect()
            })
            .collect();
        (
            items.iter().map(|i| i.name.clone()).collect::<Vec<_>>(),
            rows,
        )
    } else {
        let mut cols: Vec<String> = vec![];
        for i in &items {
            match &i.expr {
                Expr::Star => {
                    cols.extend(
                        table
                            .columns
                            .iter()
                            .filter(|c| c.kind != "time")
                            .map(|c| c.name.clone()),
                    );
                    cols.push("time".into());
                }
                _ => cols.push(i.name.clone()),
            }
        }
        let exprs: Vec<Expr> = items
            .iter()
            .flat_map(|i| match &i.expr {
                Expr::Star => {
                    let mut v: Vec<Expr> = table
                        .columns
                        .iter()
                        .filter(|c| c.kind != "time")
                        .map(|c| Expr::Col(c.name.clone()))
                        .collect();
                    v.push(Expr::Col("time".into()));
                    v
                }
                e => vec![e.clone()],
            })
            .collect();
        let rows = filtered
            .iter()
            .map(|r| {
                exprs
                    .iter()
                    .map(|e| match e {
                        Expr::Col(c) => column_value(td, r, c),
                        Expr::Bucket(w) => {
                            let t = r.time;
                            Val::Time(t - t.rem_euclid(*w))
                        }
                        _ => Val::Null,
                    })
                    .collect()
            })
            .collect();
        (cols, rows)
    };
    if let Some(ob) = order_by {
        let mut keys = vec![];
        for part in split_top(&ob, ",") {
            let mut words = part.split_whitespace().collect::<Vec<_>>();
            let desc = matches!(
                words.last().map(|w| w.to_ascii_lowercase()).as_deref(),
                Some("desc")
            );
            if matches!(
                words.last().map(|w| w.to_ascii_lowercase()).as_deref(),
                Some("desc" | "asc")
            ) {
                words.pop();
            }
            let name = unquote(&words.join(" "));
            let idx = columns.iter().position(|c| *c == name).or_else(|| {
                items.iter().position(|i| {
                    matches!(&i.expr, Expr::Bucket(_))
                        && name.to_ascii_lowercase().starts_with("date_")
                })
            });
            if let Some(idx) = idx {
                keys.push((idx, desc));
            }
        }
        out_rows.sort_by(|a, b| {
            for (i, desc) in &keys {
                let o = a[*i].cmp(&b[*i]);
                if o != Ordering::Equal {
                    return if *desc { o.reverse() } else { o };
                }
            }
            Ordering::Equal
        });
    }
    if let Some(n) = limit {
        out_rows.truncate(n);
    }
    Ok(ResultSet {
        columns,
        rows: out_rows,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::emulators::influxdb3::lp::parse_line;
    use crate::emulators::influxdb3::store::Column;

    fn table() -> (TableEntry, TableData) {
        let mut rows = vec![];
        for h in 0..3 {
            for m in 0..120 {
                let ts = 1_686_441_600_000_000_000i64 + m * 60_000_000_000 / 2;
                rows.push(
                    parse_line(&format!(
                        "cpu,hostname=host_{h} usage_user={}i,usage_system={}.5 {ts}",
                        (m + h) % 100,
                        m % 7
                    ))
                    .unwrap(),
                );
            }
        }
        let columns = [
            "hostname:tag",
            "usage_user:integer",
            "usage_system:float",
            "time:time",
        ]
        .iter()
        .map(|s| {
            let (n, k) = s.split_once(':').unwrap();
            Column {
                name: n.into(),
                kind: k.into(),
            }
        })
        .collect();
        (
            TableEntry {
                id: 0,
                name: "cpu".into(),
                columns,
            },
            TableData::from_lines(rows),
        )
    }

    fn run(sql: &str) -> ResultSet {
        let (t, td) = table();
        execute(&[(&t, &td)], sql).unwrap()
    }

    #[test]
    fn count_star() {
        assert_eq!(
            run("SELECT count(*) FROM cpu").to_json(),
            r#"[{"count(*)":360}]"#
        );
        assert_eq!(
            run("SELECT COUNT(*) AS n FROM cpu WHERE time >= '2023-06-11T00:10:00Z' AND time < '2023-06-11T00:20:00Z'").to_json(),
            r#"[{"n":60}]"#
        );
        assert_eq!(
            run("select count(*) from cpu where hostname = 'host_1'").rows[0][0],
            Val::I(120)
        );
    }

    #[test]
    fn tsbs_single_groupby() {
        let rs = run("SELECT date_bin(INTERVAL '1 minute', time) AS minute,\n max(usage_user) AS max_usage_user\n FROM cpu\n WHERE hostname IN ('host_1') AND time >= '2023-06-11T00:00:00Z' AND time < '2023-06-11T00:05:00Z'\n GROUP BY minute ORDER BY minute");
        assert_eq!(rs.rows.len(), 5);
        assert_eq!(
            rs.rows[0],
            vec![Val::Time(1_686_441_600_000_000_000), Val::I(2)]
        );
        assert!(rs
            .to_json()
            .starts_with(r#"[{"minute":"2023-06-11T00:00:00","max_usage_user":2}"#));
    }

    #[test]
    fn lastpoint_threshold_limit() {
        let rs = run("SELECT hostname, last_value(usage_user ORDER BY time) AS usage_user FROM cpu GROUP BY hostname ORDER BY hostname");
        assert_eq!(rs.rows.len(), 3);
        assert_eq!(rs.rows[2], vec![Val::Str("host_2".into()), Val::I(21)]);
        let rs = run("SELECT * FROM cpu WHERE usage_user > 97 AND hostname = 'host_0'");
        assert_eq!(
            rs.columns,
            vec!["hostname", "usage_user", "usage_system", "time"]
        );
        assert_eq!(rs.rows.len(), 2); // m = 98, 99
        let rs = run("SELECT date_bin(INTERVAL '1 minute', time) AS minute, max(usage_user) FROM cpu WHERE time < '2023-06-11T00:30:00Z' GROUP BY minute ORDER BY minute DESC LIMIT 5");
        assert_eq!(rs.rows.len(), 5);
        assert_eq!(rs.columns[1], "max(cpu.usage_user)");
        assert!(rs.rows[0][0].cmp(&rs.rows[1][0]) == Ordering::Greater);
    }

    #[test]
    fn errors() {
        let (t, td) = table();
        assert!(execute(&[(&t, &td)], "SELECT * FROM mem")
            .unwrap_err()
            .contains("not found"));
        assert!(execute(&[(&t, &td)], "SELECT nope FROM cpu")
            .unwrap_err()
            .contains("No field named nope"));
        assert!(execute(&[(&t, &td)], "DROP TABLE cpu")
            .unwrap_err()
            .contains("sql parser error"));
        assert_eq!(run("SHOW TABLES").rows[0][2], Val::Str("cpu".into()));
        assert_eq!(run("SELECT 1").to_json(), r#"[{"Int64(1)":1}]"#);
        assert_eq!(run("select 2 as two;").to_json(), r#"[{"two":2}]"#);
    }
}
