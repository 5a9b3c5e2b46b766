//! The one SQL evaluator of the GreptimeDB and InfluxDB 3 stand-ins (both products plan SQL
//! with DataFusion): enough for the shapes TSBS generates (`databases/greptime/devops.go`,
//! `databases/influx3/devops.go`) and the stand-in generator's, not a general SQL engine.
//!
//! Answers are computed from the rows the stand-in stored, never made up:
//! * items: columns, `*`, `count`/`max`/`min`/`avg`/`mean`/`sum`, `last_value`/`first_value`
//!   (with `ORDER BY <col>` inside), `date_trunc('<unit>', <time>)` and
//!   `date_bin(INTERVAL '<n unit>', <time>)`, each with an optional `AS` alias;
//! * `WHERE`: `AND` of time comparisons, numeric comparisons, `col = '..'`, `col IN (..)` and
//!   `(col = '..' or col = '..')`; conditions it does not understand are ignored;
//! * `GROUP BY` positions, aliases, select expressions or columns that are not selected
//!   (GreptimeDB's double-groupby groups by `hostname` without returning it);
//! * `ORDER BY` positions, names or select expressions, `ASC`/`DESC`; `LIMIT`.
//!
//! Output names are DataFusion's display names when there is no alias (`max(cpu.usage_user)`,
//! `date_trunc(Utf8("minute"),cpu.greptime_timestamp)`,
//! `last_value(cpu.hostname) ORDER BY [cpu.greptime_timestamp ASC NULLS LAST]`), types follow
//! the columns (`max` of a BIGINT is a BIGINT, `avg` a DOUBLE). A grouped query without
//! `ORDER BY` comes back in no particular order, as from DataFusion's hash aggregate: the rows
//! are shuffled (deterministically), never handed over sorted.

use std::cmp::Ordering;
use std::collections::BTreeMap;

/// One value.
#[derive(Debug, Clone, PartialEq)]
pub enum Val {
    Null,
    Str(String),
    F(f64),
    I(i64),
    U(u64),
    B(bool),
    /// Nanoseconds since the epoch.
    Time(i64),
}

impl Val {
    pub fn num(&self) -> Option<f64> {
        match self {
            Val::F(x) => Some(*x),
            Val::I(x) => Some(*x as f64),
            Val::U(x) => Some(*x as f64),
            Val::Time(x) => Some(*x as f64),
            _ => None,
        }
    }

    /// SQL ordering; NULL sorts last.
    pub fn sql_cmp(&self, other: &Val) -> Ordering {
        match (self, other) {
            (Val::Null, Val::Null) => Ordering::Equal,
            (Val::Null, _) => Ordering::Greater,
            (_, Val::Null) => Ordering::Less,
            (Val::Str(a), Val::Str(b)) => a.cmp(b),
            (Val::B(a), Val::B(b)) => a.cmp(b),
            (Val::I(a), Val::I(b)) => a.cmp(b),
            (Val::Time(a), Val::Time(b)) => a.cmp(b),
            (a, b) => a
                .num()
                .unwrap_or(f64::NAN)
                .partial_cmp(&b.num().unwrap_or(f64::NAN))
                .unwrap_or(Ordering::Equal),
        }
    }

    /// A key text that sorts like the value within one column.
    fn key(&self) -> String {
        match self {
            Val::Null => "~".into(),
            Val::Str(s) => s.clone(),
            Val::Time(t) | Val::I(t) => format!("{:020}", (*t as i128 + (1i128 << 63)) as u128),
            Val::U(u) => format!("{u:020}"),
            Val::B(b) => b.to_string(),
            Val::F(x) => format!("{x:030.9}"),
        }
    }
}

/// The type of a column or an output.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ColType {
    Str,
    F64,
    I64,
    U64,
    Bool,
    Time,
}

/// An output column.
#[derive(Debug, Clone, PartialEq)]
pub struct OutColumn {
    pub name: String,
    pub ty: ColType,
}

/// An answer: columns and rows.
#[derive(Debug, Clone, PartialEq)]
pub struct Output {
    pub columns: Vec<OutColumn>,
    pub rows: Vec<Vec<Val>>,
}

/// Why a statement has no answer.
#[derive(Debug, Clone, PartialEq)]
pub enum EvalError {
    /// A column the table does not have.
    NoField(String),
    /// Anything else the planner refuses.
    Plan(String),
}

/// The rows of one table, as a stand-in stores them.
pub trait Source {
    type Row;
    /// The table's name (DataFusion qualifies columns with it in display names).
    fn table(&self) -> &str;
    /// The time column (`time`, `greptime_timestamp`).
    fn time_column(&self) -> &str;
    /// Every column in the order `SELECT *` returns them.
    fn columns(&self) -> Vec<(String, ColType)>;
    /// The visible rows, in the order a scan returns them.
    fn rows(&self) -> Vec<&Self::Row>;
    fn time(&self, row: &Self::Row) -> i64;
    /// A column's value (`Null` when the row has none).
    fn value(&self, row: &Self::Row, column: &str) -> Val;
}

/// Finds `kw` (a space-separated keyword sequence) at paren depth 0, outside quotes.
pub fn find_kw(s: &str, kw: &str) -> Option<usize> {
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
        } else if c == b'(' || c == b'[' {
            depth += 1;
        } else if c == b')' || c == b']' {
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

/// Splits on `sep` (a keyword, or ",") at depth 0 outside quotes.
pub fn split_top(s: &str, sep: &str) -> Vec<String> {
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

/// The first `ch` at depth 0 outside quotes.
pub fn find_char(s: &str, ch: char) -> Option<usize> {
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

/// `'x'` or `"x"` → `x`.
pub fn unquote(s: &str) -> String {
    let s = s.trim();
    if s.len() >= 2
        && ((s.starts_with('"') && s.ends_with('"')) || (s.starts_with('\'') && s.ends_with('\'')))
    {
        s[1..s.len() - 1].to_string()
    } else {
        s.to_string()
    }
}

/// A time literal (RFC 3339, or without a zone: UTC) in nanoseconds.
pub fn parse_time(s: &str) -> Option<i64> {
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

/// `INTERVAL '1 minute'`, `'1 hour'`, `'minute'` → nanoseconds.
pub fn interval_ns(s: &str) -> Option<i64> {
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
        "millisecond" => 1_000_000,
        "second" | "sec" => 1_000_000_000,
        "minute" | "min" => 60_000_000_000,
        "hour" | "h" => 3_600_000_000_000,
        "day" | "d" => 86_400_000_000_000,
        "week" => 7 * 86_400_000_000_000,
        _ => return None,
    };
    Some(n * base)
}

/// One condition of a `WHERE` (an `AND` of these).
#[derive(Debug, Clone)]
pub enum Cond {
    /// A comparison of the time column with a literal.
    Time(String, i64),
    In(String, Vec<String>),
    Num(String, String, f64),
}

/// The conditions of a `WHERE` text; `time_col` is the table's time column.
pub fn parse_conds(text: &str, time_col: &str) -> Vec<Cond> {
    let mut out = vec![];
    for raw in split_top(text, "and") {
        let mut c = raw.trim();
        while c.starts_with('(') && c.ends_with(')') {
            let inner = &c[1..c.len() - 1];
            if find_kw(inner, "or").is_some() || inner.contains('(') {
                break;
            }
            c = inner.trim();
        }
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
                if col.eq_ignore_ascii_case(time_col) {
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
    }
    out
}

pub fn cmp_op(op: &str, o: Ordering) -> bool {
    match op {
        ">=" => o != Ordering::Less,
        "<=" => o != Ordering::Greater,
        ">" => o == Ordering::Greater,
        "<" => o == Ordering::Less,
        "=" => o == Ordering::Equal,
        _ => o != Ordering::Equal,
    }
}

/// Whether `row` meets every condition.
fn matches<S: Source>(src: &S, row: &S::Row, conds: &[Cond]) -> bool {
    conds.iter().all(|c| match c {
        Cond::Time(op, t) => cmp_op(op, src.time(row).cmp(t)),
        Cond::In(col, vals) => match src.value(row, col) {
            Val::Str(v) => vals.contains(&v),
            _ => false,
        },
        Cond::Num(col, op, n) => match src.value(row, col).num() {
            Some(v) => cmp_op(op, v.partial_cmp(n).unwrap_or(Ordering::Equal)),
            None => false,
        },
    })
}

/// A select-list expression.
#[derive(Debug, Clone, PartialEq)]
enum Expr {
    Star,
    Col(String),
    /// A time bucket of the time column (width in ns) and its display name.
    Bucket(i64, String),
    /// Function, argument (`None` = `*`), the `ORDER BY` column inside (`last_value`).
    Agg(String, Option<String>, Option<(String, bool)>),
}

#[derive(Debug, Clone)]
struct Item {
    expr: Expr,
    /// The expression as written, whitespace-collapsed and lower-cased (to match `GROUP BY`
    /// and `ORDER BY` expressions).
    text: String,
    name: String,
}

fn collapse(s: &str) -> String {
    s.split_whitespace()
        .collect::<Vec<_>>()
        .join("")
        .to_ascii_lowercase()
}

fn parse_expr(expr_text: &str, table: &str) -> Result<Expr, EvalError> {
    let lower = expr_text.to_ascii_lowercase();
    if expr_text == "*" {
        return Ok(Expr::Star);
    }
    let Some(open) = lower.find('(') else {
        return Ok(Expr::Col(unquote(expr_text)));
    };
    let func = lower[..open].trim().to_string();
    let close = expr_text
        .rfind(')')
        .ok_or_else(|| EvalError::Plan("unbalanced parenthesis".into()))?;
    let inner = expr_text[open + 1..close].trim();
    match func.as_str() {
        "date_bin" | "date_trunc" => {
            let args = split_top(inner, ",");
            let w = interval_ns(&args[0])
                .ok_or_else(|| EvalError::Plan(format!("unsupported interval {}", args[0])))?;
            let col = unquote(args.get(1).map(String::as_str).unwrap_or("time"));
            let name = if func == "date_trunc" {
                format!("date_trunc(Utf8(\"{}\"),{table}.{col})", unquote(&args[0]))
            } else {
                format!(
                    "date_bin(IntervalMonthDayNano(\"IntervalMonthDayNano {{ months: 0, days: 0, nanoseconds: {w} }}\"),{table}.{col})"
                )
            };
            Ok(Expr::Bucket(w, name))
        }
        "count" | "max" | "min" | "avg" | "mean" | "sum" | "last_value" | "first_value" => {
            let (arg, order) = match find_kw(inner, "order by") {
                Some(p) => {
                    let o = inner[p + 8..].trim();
                    let mut words: Vec<&str> = o.split_whitespace().collect();
                    let desc = words.last().is_some_and(|w| w.eq_ignore_ascii_case("desc"));
                    if words.last().is_some_and(|w| {
                        w.eq_ignore_ascii_case("desc") || w.eq_ignore_ascii_case("asc")
                    }) {
                        words.pop();
                    }
                    (inner[..p].trim(), Some((unquote(&words.join(" ")), desc)))
                }
                None => (inner, None),
            };
            let col = if arg == "*" { None } else { Some(unquote(arg)) };
            Ok(Expr::Agg(func, col, order))
        }
        other => Err(EvalError::Plan(format!("Invalid function '{other}'"))),
    }
}

fn display_name(expr: &Expr, table: &str) -> String {
    match expr {
        Expr::Star => "*".into(),
        Expr::Col(c) => c.clone(),
        Expr::Bucket(_, n) => n.clone(),
        Expr::Agg(f, None, _) => format!("{f}(*)"),
        Expr::Agg(f, Some(c), None) => format!("{f}({table}.{c})"),
        Expr::Agg(f, Some(c), Some((o, desc))) => format!(
            "{f}({table}.{c}) ORDER BY [{table}.{o} {}]",
            if *desc {
                "DESC NULLS FIRST"
            } else {
                "ASC NULLS LAST"
            }
        ),
    }
}

fn parse_item(text: &str, table: &str) -> Result<Item, EvalError> {
    // A trailing `AS alias` (not the `AS` inside a call).
    let (expr_text, alias) = match find_kw(text, "as") {
        Some(p) => (text[..p].trim(), Some(unquote(&text[p + 2..]))),
        None => (text.trim(), None),
    };
    let expr = parse_expr(expr_text, table)?;
    let name = alias.unwrap_or_else(|| display_name(&expr, table));
    Ok(Item {
        text: collapse(expr_text),
        expr,
        name,
    })
}

/// A parsed `SELECT ... FROM <table> [WHERE] [GROUP BY] [ORDER BY] [LIMIT]`.
#[derive(Debug, Clone)]
pub struct Select {
    select_text: String,
    /// The table as written (may be qualified, `db.table`).
    pub table: String,
    where_text: Option<String>,
    group_by: Option<String>,
    order_by: Option<String>,
    limit: Option<usize>,
}

const CLAUSES: [&str; 4] = ["where", "group by", "order by", "limit"];

/// Parses a `SELECT ... FROM ...` (`None`: no `FROM`).
pub fn parse_select(sql: &str) -> Result<Option<Select>, EvalError> {
    let flat: String = sql
        .trim()
        .trim_end_matches(';')
        .split_whitespace()
        .collect::<Vec<_>>()
        .join(" ");
    let lower = flat.to_ascii_lowercase();
    if !lower.starts_with("select ") {
        return Err(EvalError::Plan("not a SELECT".into()));
    }
    let Some(from) = find_kw(&flat, "from") else {
        return Ok(None);
    };
    let mut select_text = flat[7..from].trim().to_string();
    if select_text.to_ascii_lowercase().starts_with("distinct ") {
        select_text = select_text[9..].to_string();
    }
    let after = &flat[from + 4..];
    let end_of = |s: &str| {
        CLAUSES
            .iter()
            .filter_map(|k| find_kw(s, k))
            .min()
            .unwrap_or(s.len())
    };
    let table = unquote(after[..end_of(after)].trim());
    if table.starts_with('(') {
        return Err(EvalError::Plan(
            "testbed: subqueries are not emulated".into(),
        ));
    }
    let section = |kw: &str| -> Option<String> {
        let p = find_kw(after, kw)?;
        let rest = &after[p + kw.len()..];
        Some(rest[..end_of(rest)].trim().to_string())
    };
    let limit = match section("limit") {
        Some(l) => Some(
            l.parse::<usize>()
                .map_err(|_| EvalError::Plan(format!("invalid LIMIT {l}")))?,
        ),
        None => None,
    };
    Ok(Some(Select {
        select_text,
        table,
        where_text: section("where"),
        group_by: section("group by"),
        order_by: section("order by"),
        limit,
    }))
}

impl Select {
    /// The table's bare name (`db.cpu` → `cpu`).
    pub fn bare_table(&self) -> String {
        self.table
            .rsplit('.')
            .next()
            .unwrap_or(&self.table)
            .to_string()
    }

    pub fn select_text(&self) -> &str {
        &self.select_text
    }

    pub fn where_text(&self) -> Option<&str> {
        self.where_text.as_deref()
    }
}

/// What a group key or a non-aggregate item is computed from.
#[derive(Debug, Clone)]
enum Key {
    Col(String),
    Bucket(i64),
}

fn key_value<S: Source>(src: &S, row: &S::Row, k: &Key) -> Val {
    match k {
        Key::Bucket(w) => {
            let t = src.time(row);
            Val::Time(t - t.rem_euclid(*w))
        }
        Key::Col(c) => col_value(src, row, c),
    }
}

fn col_value<S: Source>(src: &S, row: &S::Row, c: &str) -> Val {
    if c.eq_ignore_ascii_case(src.time_column()) {
        Val::Time(src.time(row))
    } else {
        src.value(row, c)
    }
}

fn aggregate<S: Source>(
    src: &S,
    func: &str,
    col: Option<&str>,
    order: Option<&(String, bool)>,
    rows: &[&S::Row],
) -> Val {
    let vals = || {
        rows.iter()
            .map(move |r| col.map(|c| col_value(src, r, c)).unwrap_or(Val::I(1)))
    };
    match func {
        "count" => Val::I(vals().filter(|v| *v != Val::Null).count() as i64),
        "max" => vals()
            .filter(|v| *v != Val::Null)
            .max_by(|a, b| a.sql_cmp(b))
            .unwrap_or(Val::Null),
        "min" => vals()
            .filter(|v| *v != Val::Null)
            .min_by(|a, b| a.sql_cmp(b))
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
            // By the ORDER BY inside the call (the time column when there is none).
            let (ocol, desc) = order
                .map(|(c, d)| (c.clone(), *d))
                .unwrap_or_else(|| (src.time_column().to_string(), false));
            let by = |a: &&&S::Row, b: &&&S::Row| {
                let o = col_value(src, a, &ocol).sql_cmp(&col_value(src, b, &ocol));
                if desc {
                    o.reverse()
                } else {
                    o
                }
            };
            let pick = if func == "last_value" {
                rows.iter().max_by(by)
            } else {
                rows.iter().min_by(by)
            };
            pick.map(|r| col.map(|c| col_value(src, r, c)).unwrap_or(Val::Null))
                .unwrap_or(Val::Null)
        }
        _ => Val::Null,
    }
}

fn agg_type(func: &str, col: Option<ColType>) -> ColType {
    match func {
        "count" => ColType::I64,
        "avg" | "mean" => ColType::F64,
        "sum" => match col {
            Some(ColType::I64) => ColType::I64,
            Some(ColType::U64) => ColType::U64,
            _ => ColType::F64,
        },
        _ => col.unwrap_or(ColType::F64),
    }
}

/// A deterministic scramble of row order (a hash aggregate's output order is no order).
fn scramble(rows: &mut [Vec<Val>]) {
    let h = |r: &Vec<Val>| {
        let mut x: u64 = 0xcbf2_9ce4_8422_2325;
        for v in r {
            for b in v.key().bytes() {
                x ^= b as u64;
                x = x.wrapping_mul(0x0000_0100_0000_01b3);
            }
        }
        x
    };
    rows.sort_by_key(h);
}

/// Evaluates `q` over `src`.
pub fn run<S: Source>(src: &S, q: &Select) -> Result<Output, EvalError> {
    let table = src.table().to_string();
    let cols = src.columns();
    let col_type = |c: &str| -> Option<ColType> {
        cols.iter()
            .find(|(n, _)| n == c)
            .map(|(_, t)| *t)
            .or_else(|| {
                c.eq_ignore_ascii_case(src.time_column())
                    .then_some(ColType::Time)
            })
    };
    let mut items = Vec::new();
    for t in split_top(&q.select_text, ",") {
        let item = parse_item(&t, &table)?;
        let used: Vec<&String> = match &item.expr {
            Expr::Col(c) | Expr::Agg(_, Some(c), None) => vec![c],
            Expr::Agg(_, Some(c), Some((o, _))) => vec![c, o],
            _ => vec![],
        };
        if let Some(c) = used.into_iter().find(|c| col_type(c).is_none()) {
            return Err(EvalError::NoField(c.clone()));
        }
        items.push(item);
    }
    let conds = q
        .where_text
        .as_deref()
        .map(|w| parse_conds(w, src.time_column()))
        .unwrap_or_default();
    if let Some(c) = conds.iter().find_map(|c| match c {
        Cond::In(c, _) | Cond::Num(c, _, _) if col_type(c).is_none() => Some(c.clone()),
        _ => None,
    }) {
        return Err(EvalError::NoField(c));
    }
    let filtered: Vec<&S::Row> = src
        .rows()
        .into_iter()
        .filter(|r| matches(src, r, &conds))
        .collect();
    let has_agg = items.iter().any(|i| matches!(i.expr, Expr::Agg(..)));
    let item_key = |i: &Item| match &i.expr {
        Expr::Bucket(w, _) => Some(Key::Bucket(*w)),
        Expr::Col(c) => Some(Key::Col(c.clone())),
        _ => None,
    };

    let (columns, mut rows, grouped): (Vec<OutColumn>, Vec<Vec<Val>>, bool) = if has_agg
        || q.group_by.is_some()
    {
        // The group keys: GROUP BY's entries (positions, aliases, select expressions,
        // or plain columns), else none (one group).
        let mut keys: Vec<Key> = Vec::new();
        for g in q.group_by.iter().flat_map(|g| split_top(g, ",")) {
            let g = g.trim().to_string();
            let by_item = if let Ok(n) = g.parse::<usize>() {
                Some(items.get(n.wrapping_sub(1)).ok_or_else(|| {
                    EvalError::Plan(format!("GROUP BY position {n} is not in select list"))
                })?)
            } else {
                let u = unquote(&g);
                items.iter().find(|i| i.name == u || i.text == collapse(&g))
            };
            let key = match by_item {
                Some(i) => item_key(i).ok_or_else(|| {
                    EvalError::Plan(format!("cannot GROUP BY an aggregate ({g})"))
                })?,
                None => match parse_expr(&g, &table)? {
                    Expr::Bucket(w, _) => Key::Bucket(w),
                    Expr::Col(c) if col_type(&c).is_some() => Key::Col(c),
                    Expr::Col(c) => return Err(EvalError::NoField(c)),
                    _ => return Err(EvalError::Plan(format!("cannot GROUP BY {g}"))),
                },
            };
            keys.push(key);
        }
        let mut groups: BTreeMap<String, Vec<&S::Row>> = BTreeMap::new();
        if keys.is_empty() {
            groups.insert(String::new(), filtered.clone());
        } else {
            for r in &filtered {
                let k = keys
                    .iter()
                    .map(|k| key_value(src, r, k).key())
                    .collect::<Vec<_>>()
                    .join("\u{1}");
                groups.entry(k).or_default().push(r);
            }
        }
        let rows: Vec<Vec<Val>> = groups
            .into_values()
            .map(|members| {
                items
                    .iter()
                    .map(|i| match &i.expr {
                        Expr::Agg(f, c, o) => aggregate(src, f, c.as_deref(), o.as_ref(), &members),
                        _ => match (item_key(i), members.first()) {
                            (Some(k), Some(r)) => key_value(src, r, &k),
                            _ => Val::Null,
                        },
                    })
                    .collect()
            })
            .collect();
        let columns = items
            .iter()
            .map(|i| OutColumn {
                name: i.name.clone(),
                ty: match &i.expr {
                    Expr::Agg(f, c, _) => agg_type(f, c.as_deref().and_then(col_type)),
                    Expr::Bucket(..) => ColType::Time,
                    Expr::Col(c) => col_type(c).unwrap_or(ColType::Str),
                    Expr::Star => ColType::Str,
                },
            })
            .collect();
        (columns, rows, !keys.is_empty())
    } else {
        let mut out_cols: Vec<OutColumn> = vec![];
        let mut keys: Vec<Key> = vec![];
        for i in &items {
            match &i.expr {
                Expr::Star => {
                    for (n, t) in &cols {
                        out_cols.push(OutColumn {
                            name: n.clone(),
                            ty: *t,
                        });
                        keys.push(Key::Col(n.clone()));
                    }
                }
                Expr::Bucket(w, _) => {
                    out_cols.push(OutColumn {
                        name: i.name.clone(),
                        ty: ColType::Time,
                    });
                    keys.push(Key::Bucket(*w));
                }
                Expr::Col(c) => {
                    out_cols.push(OutColumn {
                        name: i.name.clone(),
                        ty: col_type(c).unwrap_or(ColType::Str),
                    });
                    keys.push(Key::Col(c.clone()));
                }
                Expr::Agg(..) => unreachable!("no aggregates here"),
            }
        }
        let rows = filtered
            .iter()
            .map(|r| keys.iter().map(|k| key_value(src, r, k)).collect())
            .collect();
        (out_cols, rows, false)
    };

    if let Some(ob) = &q.order_by {
        let mut keys: Vec<(usize, bool)> = vec![];
        for part in split_top(ob, ",") {
            let mut words = part.split_whitespace().collect::<Vec<_>>();
            // NULLS FIRST/LAST: every answer here is NULL-free in the columns TSBS sorts on.
            if words.len() >= 2 && words[words.len() - 2].eq_ignore_ascii_case("nulls") {
                words.truncate(words.len() - 2);
            }
            let last = words.last().map(|w| w.to_ascii_lowercase());
            let desc = last.as_deref() == Some("desc");
            if matches!(last.as_deref(), Some("desc" | "asc")) {
                words.pop();
            }
            let text = words.join(" ");
            let name = unquote(&text);
            let idx = if let Ok(n) = name.parse::<usize>() {
                Some(n.wrapping_sub(1)).filter(|i| *i < columns.len())
            } else {
                columns
                    .iter()
                    .position(|c| c.name == name)
                    .or_else(|| items.iter().position(|i| i.text == collapse(&text)))
                    .or_else(|| {
                        // Another spelling of a selected bucket.
                        let lower = name.to_ascii_lowercase();
                        (lower.starts_with("date_bin") || lower.starts_with("date_trunc"))
                            .then(|| {
                                items
                                    .iter()
                                    .position(|i| matches!(i.expr, Expr::Bucket(..)))
                            })
                            .flatten()
                    })
            };
            match idx {
                Some(i) => keys.push((i, desc)),
                None => {
                    return Err(EvalError::Plan(format!(
                        "testbed: ORDER BY {text} is not a selected column"
                    )))
                }
            }
        }
        rows.sort_by(|a, b| {
            for (i, desc) in &keys {
                let o = a[*i].sql_cmp(&b[*i]);
                if o != Ordering::Equal {
                    return if *desc { o.reverse() } else { o };
                }
            }
            Ordering::Equal
        });
    } else if grouped {
        scramble(&mut rows);
    }
    if let Some(n) = q.limit {
        rows.truncate(n);
    }
    Ok(Output { columns, rows })
}

#[cfg(test)]
mod tests;
