//! Partition rules of `CREATE TABLE … PARTITION ON COLUMNS (c, …) (rule, …)`, as GreptimeDB
//! v1.x parses, checks, prints and evaluates them (`src/partition/src/{expr,checker,multi_dim}.rs`).
//!
//! * A rule is `=`, `!=`/`<>`, `<`, `<=`, `>`, `>=` between a partition column and a string
//!   literal, joined by `AND`/`OR` (parentheses allowed). `value op column` is turned round into
//!   `column op value`, as the real `PartitionExpr::canonicalize` does. Numeric literals are
//!   valid on the real server but not emulated here (refused, code 1001).
//! * The checker tries every literal of a column and the points just below, between and above
//!   them; a point no rule holds is `Checkpoint `c=v` is not covered`, a point two rules hold is
//!   `Checkpoint `c=v` is overlapped` (code 1004, the real texts; between two values the point
//!   reads `lo<c<hi`, below the first `c<first`, above the last `c>last`).
//! * Printed (SHOW CREATE TABLE, `information_schema.partitions`) as the real `Display` does:
//!   `lhs op rhs`, no parentheses, `<>` for not-equal, strings in single quotes.
//! * A row goes to the region of the first rule it satisfies; a row no rule holds (a missing
//!   tag: NULL) goes to region 0, the real `DEFAULT_REGION` (it is not refused).
//!
//! [`region_of`] is the one evaluation, shared by the standalone store and a cluster frontend.

use super::store::GtError;

/// A comparison operator of a rule.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Op {
    Eq,
    Ne,
    Lt,
    Le,
    Gt,
    Ge,
}

impl Op {
    fn text(self) -> &'static str {
        match self {
            Op::Eq => "=",
            Op::Ne => "<>",
            Op::Lt => "<",
            Op::Le => "<=",
            Op::Gt => ">",
            Op::Ge => ">=",
        }
    }
    /// The operator with its operands swapped (`'a' < c` is `c > 'a'`).
    fn flipped(self) -> Op {
        match self {
            Op::Lt => Op::Gt,
            Op::Le => Op::Ge,
            Op::Gt => Op::Lt,
            Op::Ge => Op::Le,
            o => o,
        }
    }
    fn holds(self, ord: std::cmp::Ordering) -> bool {
        use std::cmp::Ordering::*;
        match self {
            Op::Eq => ord == Equal,
            Op::Ne => ord != Equal,
            Op::Lt => ord == Less,
            Op::Le => ord != Greater,
            Op::Gt => ord == Greater,
            Op::Ge => ord != Less,
        }
    }
}

/// A rule expression.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Expr {
    Cmp {
        column: String,
        op: Op,
        value: String,
    },
    And(Box<Expr>, Box<Expr>),
    Or(Box<Expr>, Box<Expr>),
}

impl std::fmt::Display for Expr {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Expr::Cmp { column, op, value } => {
                write!(f, "{column} {} '{}'", op.text(), value.replace('\'', "''"))
            }
            Expr::And(a, b) => write!(f, "{a} AND {b}"),
            Expr::Or(a, b) => write!(f, "{a} OR {b}"),
        }
    }
}

impl Expr {
    /// The rule as `information_schema.partitions.partition_description` shows it: the real
    /// `PartitionExpr` display, string values without quotes (`hostname >= host_1 AND hostname
    /// < host_2`, seen on a real v1.0.2).
    pub fn description(&self) -> String {
        match self {
            Expr::Cmp { column, op, value } => format!("{column} {} {value}", op.text()),
            Expr::And(a, b) => format!("{} AND {}", a.description(), b.description()),
            Expr::Or(a, b) => format!("{} OR {}", a.description(), b.description()),
        }
    }

    /// Whether a row holds the rule; `value(column)` is the row's value (`None`: NULL, which
    /// no comparison holds).
    fn eval(&self, value: &dyn Fn(&str) -> Option<String>) -> bool {
        match self {
            Expr::Cmp {
                column,
                op,
                value: lit,
            } => value(column).is_some_and(|v| op.holds(v.as_bytes().cmp(lit.as_bytes()))),
            Expr::And(a, b) => a.eval(value) && b.eval(value),
            Expr::Or(a, b) => a.eval(value) || b.eval(value),
        }
    }

    fn literals(&self, out: &mut Vec<(String, String)>) {
        match self {
            Expr::Cmp { column, value, .. } => out.push((column.clone(), value.clone())),
            Expr::And(a, b) | Expr::Or(a, b) => {
                a.literals(out);
                b.literals(out);
            }
        }
    }
}

/// The partition of a table: its columns and one rule per region (region number = index).
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct RuleSet {
    pub columns: Vec<String>,
    pub rules: Vec<Expr>,
}

impl RuleSet {
    /// Regions of the table (an empty rule list is one region).
    pub fn regions(&self) -> u32 {
        self.rules.len().max(1) as u32
    }
}

/// The region number of a row: the first rule it holds; region 0 when it holds none (the
/// real `MultiDimPartitionRule::find_region` returns `DEFAULT_REGION`). `tag(column)` gives
/// the row's value of a column (`None`: absent, NULL).
pub fn region_of(rules: &RuleSet, tag: &dyn Fn(&str) -> Option<String>) -> u32 {
    rules
        .rules
        .iter()
        .position(|r| r.eval(tag))
        .map_or(0, |i| i as u32)
}

fn invalid(msg: String) -> GtError {
    GtError::new(1004, msg)
}

fn not_emulated(what: &str) -> GtError {
    GtError::new(
        1001,
        format!("Not supported: the testbed GreptimeDB emulator does not evaluate {what}"),
    )
}

#[derive(Debug, Clone, PartialEq)]
enum Tok {
    Ident(String),
    Str(String),
    Num(String),
    Op(Op),
    And,
    Or,
    Open,
    Close,
}

fn tokens(s: &str) -> Result<Vec<Tok>, GtError> {
    let c: Vec<char> = s.chars().collect();
    let mut out = Vec::new();
    let mut i = 0;
    let syntax = |what: &str| {
        GtError::new(
            2000,
            format!("Invalid SQL syntax: sql parser error: Expected: an expression, found: {what}"),
        )
    };
    while i < c.len() {
        let ch = c[i];
        if ch.is_whitespace() {
            i += 1;
        } else if ch == '(' {
            out.push(Tok::Open);
            i += 1;
        } else if ch == ')' {
            out.push(Tok::Close);
            i += 1;
        } else if ch == '\'' {
            let mut v = String::new();
            i += 1;
            loop {
                match c.get(i) {
                    None => return Err(syntax("EOF")),
                    Some('\'') if c.get(i + 1) == Some(&'\'') => {
                        v.push('\'');
                        i += 2;
                    }
                    Some('\'') => {
                        i += 1;
                        break;
                    }
                    Some(x) => {
                        v.push(*x);
                        i += 1;
                    }
                }
            }
            out.push(Tok::Str(v));
        } else if ch == '`' || ch == '"' {
            let end = c[i + 1..]
                .iter()
                .position(|x| *x == ch)
                .ok_or_else(|| syntax("EOF"))?;
            out.push(Tok::Ident(c[i + 1..i + 1 + end].iter().collect()));
            i += end + 2;
        } else if "<>=!".contains(ch) {
            let two: String = c[i..(i + 2).min(c.len())].iter().collect();
            let (op, n) = match two.as_str() {
                "<=" => (Op::Le, 2),
                ">=" => (Op::Ge, 2),
                "!=" | "<>" => (Op::Ne, 2),
                _ => match ch {
                    '<' => (Op::Lt, 1),
                    '>' => (Op::Gt, 1),
                    '=' => (Op::Eq, 1),
                    _ => return Err(syntax("!")),
                },
            };
            out.push(Tok::Op(op));
            i += n;
        } else if ch.is_ascii_digit() || ch == '-' || ch == '.' {
            let start = i;
            i += 1;
            while i < c.len() && (c[i].is_ascii_alphanumeric() || c[i] == '.') {
                i += 1;
            }
            out.push(Tok::Num(c[start..i].iter().collect()));
        } else if ch.is_alphabetic() || ch == '_' {
            let start = i;
            while i < c.len() && (c[i].is_alphanumeric() || c[i] == '_') {
                i += 1;
            }
            let w: String = c[start..i].iter().collect();
            out.push(match w.to_ascii_uppercase().as_str() {
                "AND" => Tok::And,
                "OR" => Tok::Or,
                _ => Tok::Ident(w),
            });
        } else {
            return Err(syntax(&ch.to_string()));
        }
    }
    Ok(out)
}

struct Parser<'a> {
    t: &'a [Tok],
    i: usize,
    columns: &'a [String],
}

impl Parser<'_> {
    fn peek(&self) -> Option<&Tok> {
        self.t.get(self.i)
    }
    fn next(&mut self) -> Option<Tok> {
        let t = self.t.get(self.i).cloned();
        self.i += 1;
        t
    }
    fn or(&mut self) -> Result<Expr, GtError> {
        let mut e = self.and()?;
        while self.peek() == Some(&Tok::Or) {
            self.i += 1;
            e = Expr::Or(Box::new(e), Box::new(self.and()?));
        }
        Ok(e)
    }
    fn and(&mut self) -> Result<Expr, GtError> {
        let mut e = self.atom()?;
        while self.peek() == Some(&Tok::And) {
            self.i += 1;
            e = Expr::And(Box::new(e), Box::new(self.atom()?));
        }
        Ok(e)
    }
    fn atom(&mut self) -> Result<Expr, GtError> {
        if self.peek() == Some(&Tok::Open) {
            self.i += 1;
            let e = self.or()?;
            if self.next() != Some(Tok::Close) {
                return Err(invalid(
                    "Invalid partition expr: unbalanced parentheses".into(),
                ));
            }
            return Ok(e);
        }
        let lhs = self.next();
        let op = match self.next() {
            Some(Tok::Op(op)) => op,
            other => {
                return Err(invalid(format!(
                    "Invalid partition expr: expected a comparison, found {other:?}"
                )))
            }
        };
        let rhs = self.next();
        let (column, op, value) = match (lhs, rhs) {
            (Some(Tok::Ident(c)), Some(Tok::Str(v))) => (c, op, v),
            (Some(Tok::Str(v)), Some(Tok::Ident(c))) => (c, op.flipped(), v),
            (Some(Tok::Ident(_)), Some(Tok::Num(_))) | (Some(Tok::Num(_)), Some(Tok::Ident(_))) => {
                return Err(not_emulated("numeric partition bounds"))
            }
            (l, r) => {
                return Err(invalid(format!(
                    "Invalid partition expr: {l:?} {} {r:?}",
                    op.text()
                )))
            }
        };
        if !self.columns.contains(&column) {
            return Err(invalid(format!("Undefined column: {column}")));
        }
        Ok(Expr::Cmp { column, op, value })
    }
}

/// Parses the rule list (the text inside the second pair of parentheses, without them) for
/// `columns`, then checks it as the real `PartitionChecker` does.
pub fn parse_rules(columns: &[String], body: &str) -> Result<RuleSet, GtError> {
    let mut rules = Vec::new();
    for part in split_rules(body) {
        if part.trim().is_empty() {
            // A trailing comma, as the real parser allows.
            continue;
        }
        let toks = tokens(&part)?;
        let mut p = Parser {
            t: &toks,
            i: 0,
            columns,
        };
        let e = p.or()?;
        if p.i != toks.len() {
            return Err(invalid(format!("Invalid partition expr: {}", part.trim())));
        }
        rules.push(e);
    }
    let set = RuleSet {
        columns: columns.to_vec(),
        rules,
    };
    check(&set)?;
    Ok(set)
}

/// Splits at commas outside quotes and parentheses.
fn split_rules(s: &str) -> Vec<String> {
    let mut out = vec![String::new()];
    let (mut depth, mut quote) = (0i32, None::<char>);
    for ch in s.chars() {
        match (quote, ch) {
            (Some(q), c) if c == q => quote = None,
            (Some(_), _) => {}
            (None, '\'' | '"' | '`') => quote = Some(ch),
            (None, '(') => depth += 1,
            (None, ')') => depth -= 1,
            (None, ',') if depth == 0 => {
                out.push(String::new());
                continue;
            }
            _ => {}
        }
        out.last_mut().expect("one part").push(ch);
    }
    out
}

/// A point the checker tries on one column: a literal, or just below/between/above them.
#[derive(Debug, Clone)]
enum Point {
    Below(usize),
    At(usize),
    /// Just above literal i (below literal i+1, if any).
    Above(usize),
}

/// The real checker: every combination of points over the rules' columns must be held by
/// exactly one rule.
fn check(set: &RuleSet) -> Result<(), GtError> {
    let mut lits = Vec::new();
    for r in &set.rules {
        r.literals(&mut lits);
    }
    // Per column (sorted by name, as the real matrix's schema), its distinct sorted values.
    let mut cols: std::collections::BTreeMap<String, Vec<String>> = Default::default();
    for (c, v) in lits {
        cols.entry(c).or_default().push(v);
    }
    if cols.is_empty() {
        return Ok(());
    }
    for vs in cols.values_mut() {
        vs.sort_by(|a, b| a.as_bytes().cmp(b.as_bytes()));
        vs.dedup();
    }
    let names: Vec<&String> = cols.keys().collect();
    let points: Vec<Vec<Point>> = cols
        .values()
        .map(|vs| {
            let mut p = vec![Point::Below(0)];
            for i in 0..vs.len() {
                p.push(Point::At(i));
                p.push(Point::Above(i));
            }
            p
        })
        .collect();
    // A rule compared at a point: the literal's place among the column's values decides.
    let cmp_at = |col: &str, pt: &Point, lit: &str| -> std::cmp::Ordering {
        use std::cmp::Ordering::*;
        let vs = &cols[col];
        let j = vs
            .iter()
            .position(|v| v == lit)
            .expect("a literal of the rules");
        match *pt {
            Point::At(i) => i.cmp(&j),
            Point::Below(i) => {
                if i <= j {
                    Less
                } else {
                    Greater
                }
            }
            Point::Above(i) => {
                if i >= j {
                    Greater
                } else {
                    Less
                }
            }
        }
    };
    fn holds(e: &Expr, at: &dyn Fn(&str, &str) -> std::cmp::Ordering) -> bool {
        match e {
            Expr::Cmp { column, op, value } => op.holds(at(column, value)),
            Expr::And(a, b) => holds(a, at) && holds(b, at),
            Expr::Or(a, b) => holds(a, at) || holds(b, at),
        }
    }
    let total: usize = points.iter().map(Vec::len).product();
    // The real checker walks the whole matrix too; the tests' rules keep it small.
    for n in 0..total {
        let mut rest = n;
        let mut chosen = vec![0usize; points.len()];
        for k in (0..points.len()).rev() {
            chosen[k] = rest % points[k].len();
            rest /= points[k].len();
        }
        let at = |col: &str, lit: &str| {
            let k = names
                .iter()
                .position(|c| c.as_str() == col)
                .expect("a column");
            cmp_at(col, &points[k][chosen[k]], lit)
        };
        let count = set.rules.iter().filter(|r| holds(r, &at)).count();
        if count != 1 {
            let text = names
                .iter()
                .enumerate()
                .map(|(k, c)| {
                    let vs = &cols[c.as_str()];
                    match points[k][chosen[k]] {
                        Point::At(i) => format!("{c}={}", vs[i]),
                        Point::Below(_) => format!("{c}<{}", vs[0]),
                        Point::Above(i) if i + 1 == vs.len() => format!("{c}>{}", vs[i]),
                        Point::Above(i) => format!("{}<{c}<{}", vs[i], vs[i + 1]),
                    }
                })
                .collect::<Vec<_>>()
                .join(", ");
            let what = if count == 0 {
                "not covered"
            } else {
                "overlapped"
            };
            return Err(invalid(format!("Checkpoint `{text}` is {what}")));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cols(c: &[&str]) -> Vec<String> {
        c.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn the_real_checker_messages() {
        // GreptimeDB's sqlness case `standalone/common/partition.result`.
        let e = parse_rules(
            &cols(&["b"]),
            "b < 'abc', b >= 'abca' AND b < 'o', b >= 'o',",
        )
        .unwrap_err();
        assert_eq!(
            (e.code, e.msg.as_str()),
            (1004, "Checkpoint `b=abc` is not covered")
        );
        let e = parse_rules(&cols(&["b"]), "b >= 'a', b <= 'o',").unwrap_err();
        assert_eq!(e.msg, "Checkpoint `b=a` is overlapped");
        let e = parse_rules(&cols(&["b"]), "b < 'a', b > 'a'").unwrap_err();
        assert_eq!(e.msg, "Checkpoint `b=a` is not covered");
        let e = parse_rules(&cols(&["b"]), "b < 'm'").unwrap_err();
        assert_eq!(e.msg, "Checkpoint `b=m` is not covered");
        let e = parse_rules(&cols(&["b"]), "b < 'm', b >= 'm', b = 'z'").unwrap_err();
        assert_eq!(e.msg, "Checkpoint `b=z` is overlapped");
        let e = parse_rules(&cols(&["b"]), "b < 'a', b >= 'a' AND b < 'c', b > 'c'").unwrap_err();
        assert_eq!(e.msg, "Checkpoint `b=c` is not covered");
        assert_eq!(
            parse_rules(&cols(&["b"]), "x < 'a', x >= 'a'")
                .unwrap_err()
                .msg,
            "Undefined column: x"
        );
        assert_eq!(
            parse_rules(&cols(&["b"]), "b < 1, b >= 1")
                .unwrap_err()
                .code,
            1001
        );
    }

    #[test]
    fn rows_go_to_the_first_rule_they_hold_else_region_0() {
        let set = parse_rules(
            &cols(&["hostname"]),
            "hostname < 'host_3',\n hostname >= 'host_3' AND hostname < 'host_6', 'host_6' <= hostname",
        )
        .unwrap();
        assert_eq!(set.regions(), 3);
        let at = |h: &'static str| region_of(&set, &move |_| Some(h.to_string()));
        assert_eq!(
            ["host_0", "host_10", "host_3", "host_59", "host_6", "host_9"].map(at),
            [0, 0, 1, 1, 2, 2]
        );
        // NULL holds no rule: the default region.
        assert_eq!(region_of(&set, &|_| None), 0);
        // Printed as the real Display: canonical column-first, no parentheses.
        let shown: Vec<String> = set.rules.iter().map(|r| r.to_string()).collect();
        assert_eq!(
            shown,
            [
                "hostname < 'host_3'",
                "hostname >= 'host_3' AND hostname < 'host_6'",
                "hostname >= 'host_6'"
            ]
        );
    }

    #[test]
    fn or_not_equal_and_two_columns() {
        let set = parse_rules(&cols(&["a"]), "a = 'x' OR a = 'y', a <> 'x' AND a != 'y'").unwrap();
        assert_eq!(set.rules[1].to_string(), "a <> 'x' AND a <> 'y'");
        assert_eq!(region_of(&set, &|_| Some("y".into())), 0);
        assert_eq!(region_of(&set, &|_| Some("q".into())), 1);
        let two = cols(&["a", "b"]);
        assert!(parse_rules(
            &two,
            "a < 'k', a = 'k' AND b < 'm', a = 'k' AND b >= 'm', a > 'k'"
        )
        .is_ok());
        let e = parse_rules(&two, "a < 'k', a = 'k' AND b < 'm', a > 'k'").unwrap_err();
        assert_eq!(e.msg, "Checkpoint `a=k, b=m` is not covered");
    }
}
