//! What a real v1.0.2's planner (DataFusion) refuses in a SELECT its parser took, in its
//! words (issue 22). The fork's iot query text is InfluxQL sent to `/v1/sql`; the types whose
//! text parses as SQL fail in the planner, and a benchmark must see the same failure:
//!
//! * `ORDER BY "time"` (no such column; the time index is `greptime_timestamp`): "No field
//!   named time. Valid fields are <the SELECT's items>, <the table's columns>." — the items as
//!   DataFusion names them (`diagnostics.current_load`, an alias bare, `*` as every column),
//!   then every column of the table in its order (last-loc, single-last-loc, low-fuel, and
//!   high-load's subquery);
//! * a column outside `GROUP BY` and outside any aggregate: "Column in SELECT must be in
//!   GROUP BY or an aggregate function: While expanding wildcard, column \"t.c\" must appear
//!   ..." with the `GROUP BY` columns (avg-load's subquery).
//!
//! A subquery is planned before the query around it, so the innermost SELECT refuses first;
//! within one SELECT the `ORDER BY` refusal comes first (both recorded on v1.0.2,
//! testbed/tests/fixtures/conformance/greptimedb/21-25). Only these shapes are judged: a
//! SELECT this module cannot name the way the real planner does is left to the caller.

use regex::Regex;
use std::sync::OnceLock;

use super::store::{GtError, TableMeta};

/// One SELECT over a table: its items, table and the keys of `GROUP BY` / `ORDER BY`.
#[derive(Debug, PartialEq)]
struct Block {
    items: Vec<String>,
    table: String,
    group_by: Vec<String>,
    order_by: Vec<String>,
}

/// The statement with every '...' literal emptied (its words are not identifiers).
fn without_literals(s: &str) -> String {
    static RE: OnceLock<Regex> = OnceLock::new();
    RE.get_or_init(|| Regex::new(r"'(?:[^']|'')*'").expect("regex"))
        .replace_all(s, "''")
        .into_owned()
}

fn starts_select(s: &str) -> bool {
    let t = s.trim_start();
    t.len() >= 6 && t[..6].eq_ignore_ascii_case("select")
}

/// Each SELECT of `stmt`, innermost first (a parenthesised `(SELECT ...)` closes before the
/// one around it), the statement last; a nested SELECT inside one is `(subquery)`.
fn selects(stmt: &str) -> Vec<String> {
    let mut spans: Vec<(usize, usize)> = Vec::new();
    let mut open = Vec::new();
    let mut quote = None::<char>;
    for (i, c) in stmt.char_indices() {
        match (quote, c) {
            (Some(q), c) if c == q => quote = None,
            (Some(_), _) => {}
            (None, '"' | '`') => quote = Some(c),
            (None, '(') => open.push(i + 1),
            (None, ')') => {
                if let Some(start) = open.pop() {
                    if starts_select(&stmt[start..i]) {
                        spans.push((start, i));
                    }
                }
            }
            _ => {}
        }
    }
    let mut all = spans.clone();
    all.push((0, stmt.len()));
    all.iter()
        .map(|&(start, end)| {
            let mut text = String::new();
            let mut at = start;
            let mut inner: Vec<&(usize, usize)> = spans
                .iter()
                .filter(|(s, e)| *s > start && *e < end)
                .collect();
            inner.sort();
            for (s, e) in inner {
                if *s < at {
                    continue; // inside one already replaced
                }
                text.push_str(&stmt[at..*s]);
                text.push_str("subquery");
                at = *e;
            }
            text.push_str(&stmt[at..end]);
            text
        })
        .collect()
}

const IDENT: &str = r#"(?:[A-Za-z_][A-Za-z0-9_]*|"[^"]+")"#;

/// `"name"` as written, a bare name in lower case (as DataFusion folds it); `None` for
/// anything that is not one identifier.
fn ident(s: &str) -> Option<String> {
    let s = s.trim();
    if let Some(q) = s.strip_prefix('"').and_then(|r| r.strip_suffix('"')) {
        return (!q.is_empty() && !q.contains('"')).then(|| q.to_string());
    }
    let mut chars = s.chars();
    let first = chars.next()?;
    ((first.is_ascii_alphabetic() || first == '_')
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_'))
    .then(|| s.to_ascii_lowercase())
}

/// An identifier as DataFusion prints it in an error: bare when lower case, else quoted.
fn shown(name: &str) -> String {
    if name
        .chars()
        .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_')
    {
        name.to_string()
    } else {
        format!("\"{name}\"")
    }
}

fn parse(select: &str) -> Option<Block> {
    static RE: OnceLock<Regex> = OnceLock::new();
    let re = RE.get_or_init(|| {
        Regex::new(&format!(
            r"(?is)^\s*select\s+(.+?)\s+from\s*({IDENT})(?:\s+where\s+.+?)?(?:\s+group\s+by\s+(.+?))?(?:\s+order\s+by\s+(.+?))?(?:\s+limit\s+\d+)?\s*$"
        ))
        .expect("regex")
    });
    let c = re.captures(select)?;
    let list = |m: Option<regex::Match>| -> Vec<String> {
        m.map(|m| {
            super::sql::split_top(m.as_str(), ',')
                .into_iter()
                .map(|s| s.trim().to_string())
                .collect()
        })
        .unwrap_or_default()
    };
    Some(Block {
        items: list(c.get(1)),
        table: ident(&c[2])?,
        group_by: list(c.get(3)),
        order_by: list(c.get(4))
            .into_iter()
            .map(|k| {
                let lower = k.to_ascii_lowercase();
                let key = lower
                    .strip_suffix(" desc")
                    .or_else(|| lower.strip_suffix(" asc"))
                    .map_or(k.as_str(), |s| &k[..s.len()]);
                key.trim().to_string()
            })
            .collect(),
    })
}

/// `expr AS alias` → (expr, alias).
fn split_alias(item: &str) -> (&str, Option<String>) {
    static RE: OnceLock<Regex> = OnceLock::new();
    let re = RE.get_or_init(|| Regex::new(&format!(r"(?is)^(.+?)\s+as\s+({IDENT})$")).unwrap());
    match re.captures(item) {
        Some(c) => {
            let e = c.get(1).expect("group").as_str();
            (e, ident(&c[2]))
        }
        None => (item, None),
    }
}

/// The planner's refusal of `ORDER BY <not a column>` in `b`, if that is what it refuses.
fn unknown_order_key(b: &Block, t: &TableMeta) -> Option<GtError> {
    let columns = t.column_order();
    let qualified = |c: &str| format!("{}.{c}", t.name);
    // The SELECT's output fields as DataFusion names them.
    let mut fields = Vec::new();
    for item in &b.items {
        match split_alias(item) {
            (_, Some(alias)) => fields.push(shown(&alias)),
            (e, None) if e.trim() == "*" => fields.extend(columns.iter().map(|c| qualified(c))),
            (e, None) => match ident(e) {
                Some(c) if columns.contains(&c) => fields.push(qualified(&c)),
                _ => return None,
            },
        }
    }
    let aliases: Vec<String> = b.items.iter().filter_map(|i| split_alias(i).1).collect();
    let key = b.order_by.iter().find_map(|k| {
        let k = ident(k)?;
        (!columns.contains(&k) && !aliases.contains(&k)).then_some(k)
    })?;
    fields.extend(columns.iter().map(|c| qualified(c)));
    Some(GtError::new(
        3000,
        format!(
            "Failed to plan SQL: No field named {}. Valid fields are {}.",
            shown(&key),
            fields.join(", ")
        ),
    ))
}

/// The planner's refusal of a column outside `GROUP BY` in `b` (items without function calls
/// only: a column inside an aggregate is allowed, and which one the planner names first is
/// not worked out here).
fn ungrouped_column(b: &Block, t: &TableMeta) -> Option<GtError> {
    if b.group_by.is_empty() || b.items.iter().any(|i| i.contains('(') || i.trim() == "*") {
        return None;
    }
    let columns = t.column_order();
    let group: Vec<String> = b
        .group_by
        .iter()
        .map(|g| ident(g).filter(|g| columns.contains(g)))
        .collect::<Option<_>>()?;
    static WORD: OnceLock<Regex> = OnceLock::new();
    let word = WORD.get_or_init(|| Regex::new(IDENT).expect("regex"));
    let offending = b.items.iter().find_map(|item| {
        let (expr, _) = split_alias(item);
        word.find_iter(expr)
            .filter_map(|m| ident(m.as_str()))
            .find(|c| columns.contains(c) && !group.contains(c))
    })?;
    let q = |c: &str| format!("{}.{c}", t.name);
    Some(GtError::new(
        3000,
        format!(
            "Failed to plan SQL: Error during planning: Column in SELECT must be in GROUP BY or an aggregate function: While expanding wildcard, column \"{}\" must appear in the GROUP BY clause or must be part of an aggregate function, currently only \"{}\" appears in the SELECT clause satisfies this requirement",
            q(&offending),
            group.iter().map(|g| q(g)).collect::<Vec<_>>().join(", ")
        ),
    ))
}

/// The first refusal of the planner in `stmt` (one statement), innermost SELECT first;
/// `table` resolves a table name of the request's database (`None`: not there, which the
/// caller reports its own way).
pub fn refusal(stmt: &str, table: impl Fn(&str) -> Option<TableMeta>) -> Option<GtError> {
    for select in selects(&without_literals(stmt)) {
        let Some(b) = parse(&select) else { continue };
        let Some(t) = table(&b.table) else { continue };
        if let Some(e) = unknown_order_key(&b, &t).or_else(|| ungrouped_column(&b, &t)) {
            return Some(e);
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn selects_are_listed_innermost_first_with_nested_ones_blanked() {
        let s = "SELECT a FROM (SELECT b FROM (SELECT c FROM t) WHERE x = ')') ORDER BY a";
        assert_eq!(
            selects(&without_literals(s)),
            [
                "SELECT c FROM t",
                "SELECT b FROM (subquery) WHERE x = ''",
                "SELECT a FROM (subquery) ORDER BY a",
            ]
        );
        let b = parse("SELECT  \"x\", y AS z FROM \"T\" WHERE a = '' GROUP BY \"g\",h ORDER BY \"time\" DESC LIMIT 1").unwrap();
        assert_eq!(
            b,
            Block {
                items: vec!["\"x\"".into(), "y AS z".into()],
                table: "T".into(),
                group_by: vec!["\"g\"".into(), "h".into()],
                order_by: vec!["\"time\"".into()],
            }
        );
        assert!(parse("SELECT a FROM (subquery) ORDER BY a").is_none());
    }
}
