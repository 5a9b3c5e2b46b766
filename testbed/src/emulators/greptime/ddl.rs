//! `CREATE TABLE`, `ALTER TABLE ... ADD COLUMN` and `SHOW CREATE TABLE` as far as the emulator
//! stores tables: STRING tags (the primary key), BIGINT / BIGINT UNSIGNED / DOUBLE / STRING /
//! BOOLEAN fields, one `TIMESTAMP(9)` time index, `PARTITION ON COLUMNS (…) (…)` ([`super::partition`]),
//! `ENGINE=mito` and `WITH(…)`. Anything else a real server takes (other types, defaults,
//! indexes, inline keys) is refused as not emulated (code 1001), never stored differently.
//! `ALTER TABLE` adds nullable columns at the end of the table (a `PRIMARY KEY` one is a tag,
//! joining the primary key), with the real checks and errors ([`columns_to_add`]); no other
//! alteration is emulated.
//!
//! SHOW CREATE TABLE prints the real v1.x layout (GreptimeDB `tests/cases/standalone/common/
//! show/show_create.result`): `CREATE TABLE IF NOT EXISTS "t" (`, one quoted column a line
//! with `NULL`/`NOT NULL`, `TIME INDEX ("ts")`, `PRIMARY KEY (…)`, `)`, then the partition
//! block or an empty line, `ENGINE=mito`, and `WITH(` the options `)`. A table auto-created by
//! a write carries `'comment' = 'Created on insertion'` (the real default description,
//! `operator/src/expr_helper.rs`; printed first as in the real auto-created tables of
//! `tests-integration/tests/http.rs`) and `merge_mode = 'last_non_null'` (the InfluxDB write
//! path creates `AutoCreateTableType::LastNonNull` tables: `frontend/src/instance/grpc.rs`
//! `handle_influx_row_inserts`, `operator/src/insert.rs` `fill_table_options_for_create`;
//! read in the source, not observed on a server).

use super::partition::parse_rules;
use super::store::{CreatedDef, GtError, PartitionDef, TableMeta};

/// What `CREATE TABLE` asks for.
#[derive(Debug)]
pub struct CreateTable {
    pub db: Option<String>,
    pub if_not_exists: bool,
    pub meta: TableMeta,
}

fn not_emulated(what: &str) -> GtError {
    GtError::new(
        1001,
        format!(
            "Not supported: the testbed GreptimeDB emulator does not create tables with {what}"
        ),
    )
}

fn syntax(found: &str) -> GtError {
    GtError::new(
        2000,
        format!("Invalid SQL syntax: sql parser error: Expected: ), found: {found}"),
    )
}

fn unquote(s: &str) -> String {
    let s = s.trim();
    if s.len() >= 2
        && (s.starts_with('"') && s.ends_with('"') || s.starts_with('`') && s.ends_with('`'))
    {
        s[1..s.len() - 1].to_string()
    } else {
        s.to_string()
    }
}

/// The text inside the parentheses opening at byte `open`, and the index after the closing one.
fn group(s: &str, open: usize) -> Result<(&str, usize), GtError> {
    let b = s.as_bytes();
    let (mut depth, mut quote) = (0i32, None::<u8>);
    for (i, &c) in b.iter().enumerate().skip(open) {
        match (quote, c) {
            (Some(q), c) if c == q => quote = None,
            (Some(_), _) => {}
            (None, b'\'' | b'"' | b'`') => quote = Some(c),
            (None, b'(') => depth += 1,
            (None, b')') => {
                depth -= 1;
                if depth == 0 {
                    return Ok((&s[open + 1..i], i + 1));
                }
            }
            _ => {}
        }
    }
    Err(syntax("EOF"))
}

fn idents(list: &str) -> Vec<String> {
    super::sql::split_top(list, ',')
        .iter()
        .map(|c| unquote(c))
        .filter(|c| !c.is_empty())
        .collect()
}

/// The emulator's kind (GreptimeDB's type name) of a SQL column type it stores.
fn column_kind(sql_type: &str) -> Option<&'static str> {
    let ty: String = sql_type
        .split_whitespace()
        .collect::<String>()
        .to_ascii_uppercase();
    Some(match ty.as_str() {
        "BIGINTUNSIGNED" => "UInt64",
        "BIGINT" => "Int64",
        "DOUBLE" => "Float64",
        "STRING" => "String",
        "BOOLEAN" => "Boolean",
        "TIMESTAMP(9)" => "TimestampNanosecond",
        _ => return None,
    })
}

/// Options the emulator accepts in `WITH(…)` (a subset of the real table options).
const OPTIONS: [&str; 8] = [
    "comment",
    "ttl",
    "append_mode",
    "merge_mode",
    "write_buffer_size",
    "skip_wal",
    "sst_format",
    "compaction.type",
];

/// Parses `CREATE TABLE [IF NOT EXISTS] [db.]t (…) [PARTITION ON COLUMNS (…) (…)]
/// [ENGINE=mito] [WITH(…)]`.
pub fn parse_create(stmt: &str) -> Result<CreateTable, GtError> {
    let head = regex::Regex::new(
        r#"(?is)^create\s+table\s+(if\s+not\s+exists\s+)?((?:[A-Za-z_][A-Za-z0-9_\-]*|`[^`]+`|"[^"]+")(?:\.(?:[A-Za-z_][A-Za-z0-9_\-]*|`[^`]+`|"[^"]+"))?)\s*\("#,
    )
    .expect("static regex");
    let caps = head.captures(stmt).ok_or_else(|| syntax(stmt))?;
    let open = caps.get(0).expect("match").end() - 1;
    let parts = super::sql::split_top(&caps[2], '.');
    let (db, name) = match parts.as_slice() {
        [d, t] => (Some(unquote(d)), unquote(t)),
        _ => (None, unquote(&caps[2])),
    };
    let (body, mut at) = group(stmt, open)?;
    let mut order = Vec::new();
    let mut typed: Vec<(String, String)> = Vec::new();
    let mut time_index = None;
    let mut pk: Vec<String> = Vec::new();
    let col_re = regex::Regex::new(
        r#"(?is)^((?:[A-Za-z_][A-Za-z0-9_\-]*|`[^`]+`|"[^"]+"))\s+(bigint\s+unsigned|bigint|double|string|boolean|timestamp\s*\(\s*9\s*\)|[a-z]+(?:\s*\([^)]*\))?)\s*(not\s+null|null)?$"#,
    )
    .expect("static regex");
    for item in super::sql::split_top(body, ',') {
        let item = item.trim();
        if item.is_empty() {
            continue;
        }
        let upper = item.to_ascii_uppercase();
        if upper.starts_with("TIME INDEX") {
            let o = item.find('(').ok_or_else(|| syntax(item))?;
            time_index = idents(group(item, o)?.0).into_iter().next();
        } else if upper.starts_with("PRIMARY KEY") {
            let o = item.find('(').ok_or_else(|| syntax(item))?;
            pk = idents(group(item, o)?.0);
        } else if let Some(c) = col_re.captures(item) {
            let kind = column_kind(&c[2])
                .ok_or_else(|| not_emulated(&format!("the column type {}", &c[2])))?;
            let col = unquote(&c[1]);
            order.push(col.clone());
            typed.push((col, kind.to_string()));
        } else {
            return Err(not_emulated(&format!("the column definition {item:?}")));
        }
    }
    let ts = time_index
        .ok_or_else(|| GtError::new(1004, "Invalid SQL, error: time index constraint not found"))?;
    if typed
        .iter()
        .find(|(c, _)| *c == ts)
        .is_none_or(|(_, t)| t != "TimestampNanosecond")
    {
        return Err(not_emulated(
            "a time index other than a TIMESTAMP(9) column",
        ));
    }
    let mut tags = Vec::new();
    for k in &pk {
        match typed.iter().find(|(c, _)| c == k) {
            Some((_, t)) if t == "String" => tags.push(k.clone()),
            Some(_) => return Err(not_emulated("a primary key column that is not STRING")),
            None => return Err(GtError::new(1004, format!("Column {k} not found"))),
        }
    }
    let fields: Vec<(String, String)> = typed
        .iter()
        .filter(|(c, _)| *c != ts && !tags.contains(c))
        .cloned()
        .collect();
    let mut rest = &stmt[at..];
    let mut partition = None;
    let part_re =
        regex::Regex::new(r"(?is)^\s*partition\s+on\s+columns\s*\(").expect("static regex");
    if let Some(m) = part_re.find(rest) {
        let (cols, after) = group(rest, m.end() - 1)?;
        let columns = idents(cols);
        for c in &columns {
            if !typed.iter().any(|(n, _)| n == c) {
                return Err(GtError::new(1004, format!("Undefined column: {c}")));
            }
        }
        let r = &rest[after..];
        let o = r.find('(').filter(|o| r[..*o].trim().is_empty());
        let o = o.ok_or_else(|| syntax(r.trim()))?;
        let (rules_text, end) = group(r, o)?;
        let rules = parse_rules(&columns, rules_text)?;
        partition = Some(PartitionDef {
            columns,
            rules: rules.rules.iter().map(|e| e.to_string()).collect(),
        });
        at += after + end;
        rest = &stmt[at..];
    }
    let engine_re = regex::Regex::new(r"(?is)^\s*engine\s*=\s*([a-z_]+)").expect("static regex");
    if let Some(c) = engine_re.captures(rest) {
        if !c[1].eq_ignore_ascii_case("mito") {
            return Err(not_emulated(&format!("ENGINE={}", &c[1])));
        }
        rest = &rest[c.get(0).expect("match").end()..];
    }
    let mut options = Vec::new();
    let with_re = regex::Regex::new(r"(?is)^\s*with\s*\(").expect("static regex");
    if let Some(m) = with_re.find(rest) {
        let (opts, end) = group(rest, m.end() - 1)?;
        for o in super::sql::split_top(opts, ',') {
            let o = o.trim();
            if o.is_empty() {
                continue;
            }
            let (k, v) = o.split_once('=').ok_or_else(|| syntax(o))?;
            let (k, v) = (k.trim().to_string(), v.trim().to_string());
            let bare = k.trim_matches('\'').trim_matches('"').to_ascii_lowercase();
            if !OPTIONS.contains(&bare.as_str()) {
                return Err(GtError::new(
                    1004,
                    format!("Invalid table option key: {bare}"),
                ));
            }
            // The real server prints a created table's option keys bare (`comment = ...`),
            // however they were written, while an auto-created table shows `'comment'`
            // (seen on a real v1.0.2: the two texts differ in that quote only).
            options.push((bare, v));
        }
        rest = &rest[end..];
    }
    if !rest.trim().is_empty() {
        return Err(syntax(rest.trim()));
    }
    Ok(CreateTable {
        db,
        if_not_exists: caps.get(1).is_some(),
        meta: TableMeta {
            name,
            table_id: 0,
            tags,
            fields,
            time_index: ts,
            partition,
            created: Some(CreatedDef { order, options }),
            hosted: None,
        },
    })
}

/// One `ADD [COLUMN] [IF NOT EXISTS] <name> <type> [NULL | NOT NULL] [PRIMARY KEY]` of
/// `ALTER TABLE`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AddColumn {
    pub name: String,
    /// The emulator's kind of the column (GreptimeDB's type name: `Float64`, `String`, ...).
    pub kind: &'static str,
    /// `PRIMARY KEY`: a tag (the real `is_key`).
    pub tag: bool,
    pub nullable: bool,
    pub if_not_exists: bool,
}

/// What `ALTER TABLE ... ADD COLUMN ...` asks for.
#[derive(Debug)]
pub struct AlterTable {
    pub db: Option<String>,
    pub table: String,
    pub columns: Vec<AddColumn>,
}

/// An identifier: bare, or quoted with `"` or `` ` `` (a doubled quote inside is one quote).
const ALTER_IDENT: &str = r#"(?:[A-Za-z_][A-Za-z0-9_\-]*|`(?:[^`]|``)+`|"(?:[^"]|"")+")"#;

fn ident_text(s: &str) -> String {
    let s = s.trim();
    for q in ['"', '`'] {
        if s.len() >= 2 && s.starts_with(q) && s.ends_with(q) {
            return s[1..s.len() - 1].replace(&format!("{q}{q}"), &q.to_string());
        }
    }
    s.to_string()
}

fn alter_not_emulated(what: &str) -> GtError {
    GtError::new(
        1001,
        format!("Not supported: the testbed GreptimeDB emulator does not alter tables with {what}"),
    )
}

/// Parses `ALTER TABLE [db.]t ADD [COLUMN] [IF NOT EXISTS] c <type> [NULL | NOT NULL]
/// [PRIMARY KEY] [, ADD ...]`, the v1.0.2 grammar (`sql/src/parsers/alter_parser.rs`
/// `parse_alter_table_add`, `parse_add_columns`; `PRIMARY KEY` makes a tag:
/// `sql/src/statements.rs` `sql_column_def_to_grpc_column_def`). The types are those
/// `CREATE TABLE` takes here; any other alteration, type, `DEFAULT` or `FIRST`/`AFTER` is
/// refused as not emulated (1001).
pub fn parse_alter(stmt: &str) -> Result<AlterTable, GtError> {
    let head = regex::Regex::new(&format!(
        r"(?is)^alter\s+table\s+({ALTER_IDENT}(?:\.{ALTER_IDENT})?)\s+(.*)$"
    ))
    .expect("static regex");
    let caps = head
        .captures(stmt)
        .ok_or_else(|| alter_not_emulated(&format!("{stmt:?}")))?;
    let parts = super::sql::split_top(&caps[1], '.');
    let (db, table) = match parts.as_slice() {
        [d, t] => (Some(ident_text(d)), ident_text(t)),
        _ => (None, ident_text(&caps[1])),
    };
    let add = regex::Regex::new(&format!(
        r"(?is)^add\s+(?:column\s+)?(if\s+not\s+exists\s+)?({ALTER_IDENT})\s+(bigint\s+unsigned|[a-z][a-z0-9_]*(?:\s*\([^)]*\))?)((?:\s+(?:null|not\s+null|primary\s+key))*)$"
    ))
    .expect("static regex");
    let mut columns = Vec::new();
    for clause in super::sql::split_top(&caps[2], ',') {
        let clause = clause.trim();
        let c = add
            .captures(clause)
            .ok_or_else(|| alter_not_emulated(&format!("{clause:?}")))?;
        let kind = column_kind(&c[3])
            .filter(|k| *k != "TimestampNanosecond")
            .ok_or_else(|| alter_not_emulated(&format!("the column type {}", &c[3])))?;
        let options = c[4].to_ascii_lowercase();
        let tag = options.contains("primary");
        if tag && kind != "String" {
            return Err(alter_not_emulated(
                "a primary key column that is not STRING",
            ));
        }
        columns.push(AddColumn {
            name: ident_text(&c[2]),
            kind,
            tag,
            nullable: !options.contains("not"),
            if_not_exists: c.get(1).is_some(),
        });
    }
    Ok(AlterTable { db, table, columns })
}

/// The columns `alter` adds to `t`, as the real frontend checks them before its DDL procedure
/// (`operator/src/statement/ddl.rs` `verify_alter`, `table/src/metadata.rs` `add_columns`):
/// nothing when every column exists and is `IF NOT EXISTS`; an existing column without it is
/// `Column c already exists in table t` (4003); a column added twice or `NOT NULL` without a
/// default is refused (1004). Empty: nothing to change.
pub fn columns_to_add(t: &TableMeta, alter: &AlterTable) -> Result<Vec<AddColumn>, GtError> {
    let exists = |c: &AddColumn| t.column_type(&c.name).is_some();
    if alter.columns.iter().all(|c| exists(c) && c.if_not_exists) {
        return Ok(Vec::new());
    }
    let invalid = |err: String| {
        GtError::new(
            1004,
            format!("Invalid alter table({}) request: {err}", alter.table),
        )
    };
    let mut new: Vec<AddColumn> = Vec::new();
    for c in &alter.columns {
        if let Some(kind) = t.column_type(&c.name) {
            if !c.if_not_exists {
                return Err(GtError::new(
                    4003,
                    format!("Column {} already exists in table {}", c.name, alter.table),
                ));
            }
            if kind != c.kind {
                return Err(alter_not_emulated(&format!(
                    "an existing column {} of another type",
                    c.name
                )));
            }
        } else {
            if new.iter().any(|n| n.name == c.name) {
                return Err(invalid(format!("add column {} more than once", c.name)));
            }
            if !c.nullable {
                return Err(invalid(format!("no default value for column {}", c.name)));
            }
            new.push(c.clone());
        }
    }
    Ok(new)
}

/// The SQL type of a kind (`Float64` → `DOUBLE`), as SHOW CREATE TABLE prints it.
pub fn sql_type(kind: &str) -> &'static str {
    match kind {
        "Int64" => "BIGINT",
        "UInt64" => "BIGINT UNSIGNED",
        "Float64" => "DOUBLE",
        "Boolean" => "BOOLEAN",
        _ => "STRING",
    }
}

/// The `Create Table` text of SHOW CREATE TABLE.
pub fn show_create(t: &TableMeta) -> String {
    let order = t.column_order();
    let mut lines: Vec<String> = order
        .iter()
        .map(|c| {
            if *c == t.time_index {
                format!("  \"{c}\" TIMESTAMP(9) NOT NULL")
            } else {
                let kind = t.column_type(c).unwrap_or("String");
                format!("  \"{c}\" {} NULL", sql_type(kind))
            }
        })
        .collect();
    lines.push(format!("  TIME INDEX (\"{}\")", t.time_index));
    if !t.tags.is_empty() {
        let pk: Vec<String> = t.tags.iter().map(|k| format!("\"{k}\"")).collect();
        lines.push(format!("  PRIMARY KEY ({})", pk.join(", ")));
    }
    let partition = match &t.partition {
        Some(p) => {
            let cols: Vec<String> = p.columns.iter().map(|c| format!("\"{c}\"")).collect();
            let rules: Vec<String> = p.rules.iter().map(|r| format!("  {r}")).collect();
            format!(
                "PARTITION ON COLUMNS ({}) (\n{}\n)",
                cols.join(", "),
                rules.join(",\n")
            )
        }
        None => String::new(),
    };
    let options: Vec<(String, String)> = match &t.created {
        Some(c) => c.options.clone(),
        None => vec![
            ("'comment'".into(), "'Created on insertion'".into()),
            ("merge_mode".into(), "'last_non_null'".into()),
        ],
    };
    let with = if options.is_empty() {
        String::new()
    } else {
        let o: Vec<String> = options
            .iter()
            .map(|(k, v)| format!("  {k} = {v}"))
            .collect();
        format!("\nWITH(\n{}\n)", o.join(",\n"))
    };
    format!(
        "CREATE TABLE IF NOT EXISTS \"{}\" (\n{}\n)\n{partition}\nENGINE=mito{with}",
        t.name,
        lines.join(",\n")
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_shown_table_creates_the_same_table() {
        let auto = TableMeta {
            name: "cpu".into(),
            table_id: 1024,
            tags: vec!["hostname".into(), "region".into()],
            fields: vec![("usage_user".into(), "Int64".into())],
            time_index: "greptime_timestamp".into(),
            partition: None,
            created: None,
            hosted: None,
        };
        let text = show_create(&auto);
        assert_eq!(
            text,
            "CREATE TABLE IF NOT EXISTS \"cpu\" (\n  \"hostname\" STRING NULL,\n  \"region\" STRING NULL,\n  \"usage_user\" BIGINT NULL,\n  \"greptime_timestamp\" TIMESTAMP(9) NOT NULL,\n  TIME INDEX (\"greptime_timestamp\"),\n  PRIMARY KEY (\"hostname\", \"region\")\n)\n\nENGINE=mito\nWITH(\n  'comment' = 'Created on insertion',\n  merge_mode = 'last_non_null'\n)"
        );
        // The same text with a partition block creates a partitioned table that shows the same.
        let ddl = text.replacen(
            ")\n\nENGINE",
            ")\nPARTITION ON COLUMNS (\"hostname\") (\n  hostname < 'host_5',\n  hostname >= 'host_5'\n)\nENGINE",
            1,
        );
        let c = parse_create(&ddl).unwrap();
        assert!(c.if_not_exists);
        assert_eq!(c.meta.tags, auto.tags);
        assert_eq!(c.meta.fields, auto.fields);
        assert_eq!(c.meta.region_numbers(), 0..2);
        // ... except that its option keys are printed bare, as a real v1.0.2 prints them.
        assert_eq!(
            show_create(&c.meta),
            ddl.replace("  'comment' =", "  comment =")
        );
    }

    #[test]
    fn alter_table_adds_columns_with_the_real_checks() {
        let t = parse_create(
            "CREATE TABLE cpu (hostname STRING, usage_user DOUBLE, ts TIMESTAMP(9) NOT NULL, TIME INDEX (ts), PRIMARY KEY (hostname))",
        )
        .unwrap()
        .meta;
        let a = parse_alter(
            "ALTER TABLE benchmark.cpu ADD COLUMN IF NOT EXISTS \"te\"\"mp\" DOUBLE NULL, ADD rack STRING PRIMARY KEY, ADD COLUMN n BIGINT UNSIGNED",
        )
        .unwrap();
        assert_eq!(
            (a.db.as_deref(), a.table.as_str()),
            (Some("benchmark"), "cpu")
        );
        let col = |name: &str, kind, tag, if_not_exists| AddColumn {
            name: name.into(),
            kind,
            tag,
            nullable: true,
            if_not_exists,
        };
        assert_eq!(
            a.columns,
            [
                col("te\"mp", "Float64", false, true),
                col("rack", "String", true, false),
                col("n", "UInt64", false, false)
            ]
        );
        assert_eq!(columns_to_add(&t, &a).unwrap(), a.columns);
        let mut t2 = t.clone();
        for c in &a.columns {
            t2.add_column(&c.name, c.kind, c.tag);
        }
        assert_eq!(t2.tags, ["hostname", "rack"]);
        assert_eq!(
            t2.column_order(),
            ["hostname", "usage_user", "ts", "te\"mp", "rack", "n"]
        );
        let e = |sql: &str| columns_to_add(&t, &parse_alter(sql).unwrap()).unwrap_err();
        let exists = e("ALTER TABLE cpu ADD COLUMN usage_user DOUBLE");
        assert_eq!(
            (exists.code, exists.msg.as_str()),
            (4003, "Column usage_user already exists in table cpu")
        );
        // The time index is a column too; with IF NOT EXISTS an existing one is no change.
        assert_eq!(e("ALTER TABLE cpu ADD COLUMN ts STRING").code, 4003);
        let none = parse_alter("ALTER TABLE cpu ADD COLUMN IF NOT EXISTS usage_user DOUBLE");
        assert!(columns_to_add(&t, &none.unwrap()).unwrap().is_empty());
        assert_eq!(
            e("ALTER TABLE cpu ADD COLUMN x DOUBLE NOT NULL").msg,
            "Invalid alter table(cpu) request: no default value for column x"
        );
        assert_eq!(
            e("ALTER TABLE cpu ADD COLUMN x DOUBLE, ADD COLUMN x DOUBLE").msg,
            "Invalid alter table(cpu) request: add column x more than once"
        );
        // Other alterations, types, defaults and positions are not emulated.
        for sql in [
            "ALTER TABLE cpu DROP COLUMN usage_user",
            "ALTER TABLE cpu ADD COLUMN x INT",
            "ALTER TABLE cpu ADD COLUMN x DOUBLE DEFAULT 0",
            "ALTER TABLE cpu ADD COLUMN x DOUBLE FIRST",
            "ALTER TABLE cpu ADD COLUMN x DOUBLE PRIMARY KEY",
            "ALTER TABLE cpu ADD COLUMN x DOUBLE, y DOUBLE",
        ] {
            assert_eq!(parse_alter(sql).unwrap_err().code, 1001, "{sql}");
        }
    }

    #[test]
    fn refusals() {
        let e = |s: &str| parse_create(s).unwrap_err();
        assert_eq!(
            e("CREATE TABLE t (a STRING, ts TIMESTAMP(9) NOT NULL, TIME INDEX (ts)) PARTITION ON COLUMNS (a) (a < 'x', a > 'x')").msg,
            "Checkpoint `a=x` is not covered"
        );
        assert_eq!(
            e("CREATE TABLE t (a INT, ts TIMESTAMP(9), TIME INDEX (ts))").code,
            1001
        );
        assert_eq!(e("CREATE TABLE t (a STRING)").code, 1004);
        assert_eq!(
            e("CREATE TABLE t (ts TIMESTAMP(9), TIME INDEX (ts)) WITH(foo = 1)").msg,
            "Invalid table option key: foo"
        );
    }
}
