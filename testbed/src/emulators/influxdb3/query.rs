//! The InfluxDB 3 stand-in's SQL: `SHOW TABLES`, `SELECT <literals>`, `system.parquet_files`,
//! and every `SELECT ... FROM <table>` through the testbed's shared evaluator
//! ([`crate::sqleval`], also GreptimeDB's): `count(*)`, the TSBS devops shapes (aggregates,
//! `date_bin`/`date_trunc` buckets, `hostname IN`, time ranges, thresholds, `GROUP BY`,
//! `ORDER BY`, `LIMIT`). Answers are computed from the data, never made up. Conditions it does
//! not understand are ignored (documented leniency); statements it cannot parse are planning
//! errors.

use super::lp::Field;
use super::store::{Row, TableData, TableEntry, ValueRef};
use crate::sqleval::{self, find_kw, parse_conds, split_top, unquote, ColType, Cond, EvalError};

pub use crate::sqleval::Val;

/// A value as JSON (`None`: NULL, which InfluxDB 3 leaves out of a row object).
fn json_of(v: &Val) -> Option<String> {
    Some(match v {
        Val::Null => return None,
        Val::Str(s) => serde_json::to_string(s).unwrap(),
        Val::F(x) => serde_json::to_string(x).unwrap(),
        Val::I(x) => x.to_string(),
        Val::U(x) => x.to_string(),
        Val::B(b) => b.to_string(),
        Val::Time(t) => format!("\"{}\"", fmt_time(*t)),
    })
}

/// A value as CSV / pretty-table text.
fn text_of(v: &Val) -> String {
    match v {
        Val::Null => String::new(),
        Val::Str(s) => s.clone(),
        Val::Time(t) => fmt_time(*t),
        other => json_of(other).unwrap_or_default(),
    }
}

/// InfluxDB 3's time text: no zone, fractional seconds only when there are any.
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
                json_of(v).map(|j| format!("{}:{j}", serde_json::to_string(c).unwrap()))
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
                    let t = text_of(v);
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
                widths[i] = widths[i].max(text_of(v).len());
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
            out += &line(r.iter().map(text_of).collect());
        }
        out + &sep
    }
}

fn plan_err(msg: &str) -> String {
    format!("Error during planning: {msg}")
}

/// One table of the store, as the shared evaluator reads it.
struct Table<'a> {
    entry: &'a TableEntry,
    data: &'a TableData,
}

impl sqleval::Source for Table<'_> {
    type Row = Row;

    fn table(&self) -> &str {
        &self.entry.name
    }

    fn time_column(&self) -> &str {
        "time"
    }

    fn columns(&self) -> Vec<(String, ColType)> {
        // `SELECT *`: the tags and fields in the catalog's order, then `time`.
        let mut out: Vec<(String, ColType)> = self
            .entry
            .columns
            .iter()
            .filter(|c| c.kind != "time")
            .map(|c| {
                let t = match c.kind.as_str() {
                    "float" => ColType::F64,
                    "integer" => ColType::I64,
                    "unsigned" => ColType::U64,
                    "boolean" => ColType::Bool,
                    _ => ColType::Str,
                };
                (c.name.clone(), t)
            })
            .collect();
        out.push(("time".into(), ColType::Time));
        out
    }

    fn rows(&self) -> Vec<&Row> {
        self.data.visible_rows().collect()
    }

    fn time(&self, row: &Row) -> i64 {
        row.time
    }

    fn value(&self, row: &Row, column: &str) -> Val {
        match self.data.value_of(row, column) {
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
}

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
            parse_conds(rest[..end_of(rest)].trim(), "time")
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
        Some(f) => match parse_conds(&f, "time").as_slice() {
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
    if find_kw(&flat, "from").is_none() {
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
    }
    let q = match sqleval::parse_select(&flat) {
        Ok(Some(q)) => q,
        Ok(None) => return Err(plan_err("testbed: SELECT needs FROM")),
        Err(EvalError::Plan(m) | EvalError::NoField(m)) => return Err(plan_err(&m)),
    };
    if q.table.eq_ignore_ascii_case("system.parquet_files") {
        return parquet_files(tables, q.select_text(), q.where_text().map(str::to_string));
    }
    let bare = q.bare_table();
    let Some((table, td)) = tables.iter().find(|(t, _)| t.name == bare) else {
        return Err(plan_err(&format!("table 'public.iox.{bare}' not found")));
    };
    let src = Table {
        entry: table,
        data: td,
    };
    match sqleval::run(&src, &q) {
        Ok(out) => Ok(ResultSet {
            columns: out.columns.into_iter().map(|c| c.name).collect(),
            rows: out.rows,
        }),
        Err(EvalError::NoField(c)) => Err(format!(
            "Schema error: No field named {c}. Valid fields are {}.",
            table
                .columns
                .iter()
                .map(|c| format!("{}.{}", table.name, c.name))
                .collect::<Vec<_>>()
                .join(", ")
        )),
        Err(EvalError::Plan(m)) => Err(plan_err(&m)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::emulators::influxdb3::lp::parse_line;
    use crate::emulators::influxdb3::store::Column;
    use std::cmp::Ordering;

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
        assert!(rs.rows[0][0].sql_cmp(&rs.rows[1][0]) == Ordering::Greater);
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
