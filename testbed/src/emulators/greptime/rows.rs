//! The rows of a table as a query reads them (SSTs and the unflushed WAL, deduplicated by
//! series and timestamp, in scan order: series, then time), for the shared SQL evaluator
//! ([`crate::sqleval`]); and the evaluator's answer in GreptimeDB's `/v1/sql` shape.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, OnceLock};

use serde_json::{json, Value};

use super::lineproto::{split_unescaped, unescape};
use super::store::{GtError, Store, TableMeta};
use crate::sqleval::{ColType, Source, Val};

/// One stored row: its time, its series' tag values (shared by the series' rows) and its
/// field values, each by position.
pub struct GRow {
    time: i64,
    tags: Arc<Vec<Val>>,
    fields: Vec<Val>,
}

/// Where a column's value is.
#[derive(Clone, Copy)]
enum At {
    Tag(usize),
    Field(usize),
}

/// A table's rows and columns.
pub struct GRows {
    table: String,
    time_index: String,
    /// `SELECT *` order: tags, the time index, fields (as the real auto-created table).
    columns: Vec<(String, ColType)>,
    index: HashMap<String, At>,
    rows: Vec<GRow>,
}

impl Source for GRows {
    type Row = GRow;

    fn table(&self) -> &str {
        &self.table
    }

    fn time_column(&self) -> &str {
        &self.time_index
    }

    fn columns(&self) -> Vec<(String, ColType)> {
        self.columns.clone()
    }

    fn rows(&self) -> Vec<&GRow> {
        self.rows.iter().collect()
    }

    fn time(&self, row: &GRow) -> i64 {
        row.time
    }

    fn value(&self, row: &GRow, column: &str) -> Val {
        if column == self.time_index {
            return Val::Time(row.time);
        }
        match self.index.get(column) {
            Some(At::Tag(i)) => row.tags.get(*i).cloned().unwrap_or(Val::Null),
            Some(At::Field(i)) => row.fields.get(*i).cloned().unwrap_or(Val::Null),
            None => Val::Null,
        }
    }
}

fn col_type(data_type: &str) -> ColType {
    match data_type {
        "Float64" => ColType::F64,
        "Int64" => ColType::I64,
        "UInt64" => ColType::U64,
        "Boolean" => ColType::Bool,
        t if t.starts_with("Timestamp") => ColType::Time,
        _ => ColType::Str,
    }
}

/// A line-protocol field value.
fn field_value(v: &str) -> Val {
    if let Some(s) = v.strip_prefix('"').and_then(|s| s.strip_suffix('"')) {
        return Val::Str(s.replace("\\\"", "\"").replace("\\\\", "\\"));
    }
    match v {
        "t" | "T" | "true" | "True" | "TRUE" => return Val::B(true),
        "f" | "F" | "false" | "False" | "FALSE" => return Val::B(false),
        _ => {}
    }
    if let Some(n) = v.strip_suffix('i') {
        return n.parse().map(Val::I).unwrap_or(Val::Null);
    }
    if let Some(n) = v.strip_suffix('u') {
        return n.parse().map(Val::U).unwrap_or(Val::Null);
    }
    v.parse().map(Val::F).unwrap_or(Val::Null)
}

/// Builds the rows of `meta` from its stored lines (see the module documentation).
fn load(meta: &TableMeta, lines: Vec<String>) -> GRows {
    let mut columns: Vec<(String, ColType)> = meta
        .tags
        .iter()
        .map(|t| (t.clone(), ColType::Str))
        .collect();
    columns.push((meta.time_index.clone(), ColType::Time));
    columns.extend(meta.fields.iter().map(|(n, t)| (n.clone(), col_type(t))));
    let mut index: HashMap<String, At> = HashMap::new();
    for (i, t) in meta.tags.iter().enumerate() {
        index.insert(t.clone(), At::Tag(i));
    }
    for (i, (f, _)) in meta.fields.iter().enumerate() {
        index.insert(f.clone(), At::Field(i));
    }
    let mut series_tags: HashMap<String, Arc<Vec<Val>>> = HashMap::new();
    // (series, ts) → row; later lines win.
    let mut latest: HashMap<(String, i64), GRow> = HashMap::new();
    for line in lines {
        let Some((series, rest)) = split_series(&line) else {
            continue;
        };
        let Some((fields, ts)) = rest.rsplit_once(' ') else {
            continue;
        };
        let Ok(ts) = ts.parse::<i64>() else {
            continue;
        };
        let tags = series_tags
            .entry(series.to_string())
            .or_insert_with(|| {
                let mut tags = vec![Val::Null; meta.tags.len()];
                for tag in split_unescaped(series, b',', false).into_iter().skip(1) {
                    let kv = split_unescaped(tag, b'=', false);
                    if let [k, v] = kv.as_slice() {
                        if let Some(At::Tag(i)) = index.get(&unescape(k)) {
                            tags[*i] = Val::Str(unescape(v));
                        }
                    }
                }
                Arc::new(tags)
            })
            .clone();
        let mut vals = vec![Val::Null; meta.fields.len()];
        for f in split_unescaped(fields, b',', true) {
            let kv = split_unescaped(f, b'=', true);
            if let [k, v] = kv.as_slice() {
                if let Some(At::Field(i)) = index.get(&unescape(k)) {
                    vals[*i] = field_value(v);
                }
            }
        }
        latest.insert(
            (series.to_string(), ts),
            GRow {
                time: ts,
                tags,
                fields: vals,
            },
        );
    }
    let mut keyed: Vec<((String, i64), GRow)> = latest.into_iter().collect();
    keyed.sort_by(|a, b| a.0.cmp(&b.0));
    GRows {
        table: meta.name.clone(),
        time_index: meta.time_index.clone(),
        columns,
        index,
        rows: keyed.into_iter().map(|(_, r)| r).collect(),
    }
}

/// `<series> <rest>` at the first unescaped space.
fn split_series(line: &str) -> Option<(&str, &str)> {
    let b = line.as_bytes();
    let mut i = 0;
    while i < b.len() {
        match b[i] {
            b'\\' => i += 1,
            b' ' => return Some((&line[..i], &line[i + 1..])),
            _ => {}
        }
        i += 1;
    }
    None
}

type Cache = Mutex<HashMap<u32, (String, Arc<GRows>)>>;

/// The rows of `meta`, re-read only when the table changed since the last query (its data,
/// or its columns: `ALTER TABLE ... ADD COLUMN` adds columns and no data).
pub fn rows_of(store: &Store, meta: &TableMeta) -> Result<Arc<GRows>, GtError> {
    static CACHE: OnceLock<Cache> = OnceLock::new();
    let cache = CACHE.get_or_init(Default::default);
    let version = format!(
        "{}|{}|{}",
        store.scan_version(meta.table_id),
        meta.tags.len(),
        meta.fields.len()
    );
    let mut c = cache.lock().unwrap_or_else(|e| e.into_inner());
    if let Some((v, rows)) = c.get(&meta.table_id) {
        if *v == version {
            return Ok(rows.clone());
        }
    }
    let rows = Arc::new(load(meta, store.scan_lines(meta.table_id)?));
    c.insert(meta.table_id, (version, rows.clone()));
    Ok(rows)
}

/// The rows of `meta` here and in `peers` (the stored lines of the other datanodes that hold
/// regions of the table, in a cluster), read afresh.
pub fn rows_with(store: &Store, meta: &TableMeta, peers: Vec<String>) -> Result<GRows, GtError> {
    let mut lines = store.scan_lines(meta.table_id)?;
    lines.extend(peers);
    Ok(load(meta, lines))
}

/// GreptimeDB's name of a column type in `column_schemas`.
pub fn type_name(t: ColType) -> &'static str {
    match t {
        ColType::Str => "String",
        ColType::F64 => "Float64",
        ColType::I64 => "Int64",
        ColType::U64 => "UInt64",
        ColType::Bool => "Boolean",
        // The time index of a line-protocol table is TIMESTAMP(9).
        ColType::Time => "TimestampNanosecond",
    }
}

/// A value as `/v1/sql` writes it: timestamps as integers in the column's unit (ns here).
pub fn json_value(v: &Val) -> Value {
    match v {
        Val::Null => Value::Null,
        Val::Str(s) => json!(s),
        Val::F(x) => json!(x),
        Val::I(x) | Val::Time(x) => json!(x),
        Val::U(x) => json!(x),
        Val::B(b) => json!(b),
    }
}
