//! The module graph's rules, checked against the sources (review #3): the core never names
//! `crate::cli`, and the top-level modules form no import cycle beyond [`ALLOWED_CYCLES`].
//!
//! An edge `a -> b` is a `crate::b` path in a file of top-level module `a` (`src/a.rs` or
//! `src/a/…`), outside comments, string literals and `#[cfg(test)]` items. `cargo test --lib
//! layering -- --nocapture` prints the strongly connected components it finds.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

/// Cycles that are tolerated; each entry is one strongly connected component, its modules
/// sorted. Empty: the module graph has no cycle, and a new one fails the test.
const ALLOWED_CYCLES: &[&[&str]] = &[];

/// `src/` with comments, strings and `#[cfg(test)]` items removed, per file.
fn sources() -> Vec<(PathBuf, String)> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut out = Vec::new();
    let mut stack = vec![root.clone()];
    while let Some(dir) = stack.pop() {
        for e in std::fs::read_dir(&dir).unwrap().flatten() {
            let p = e.path();
            if p.is_dir() {
                stack.push(p);
            } else if p.extension().is_some_and(|x| x == "rs") {
                let rel = p.strip_prefix(&root).unwrap().to_path_buf();
                let text = std::fs::read_to_string(&p).unwrap();
                out.push((rel, strip_test_items(&strip_comments_and_strings(&text))));
            }
        }
    }
    out.sort();
    out
}

/// The top-level module a file belongs to; `None` for the crate roots.
fn top_module(rel: &Path) -> Option<String> {
    let first = rel
        .components()
        .next()?
        .as_os_str()
        .to_string_lossy()
        .into_owned();
    let name = first.strip_suffix(".rs").unwrap_or(&first).to_string();
    (!matches!(name.as_str(), "lib" | "main")).then_some(name)
}

/// Replaces comments and string/char literals with spaces (newlines kept), so a `crate::x`
/// in a doc link or a message is not an edge.
fn strip_comments_and_strings(s: &str) -> String {
    let c: Vec<char> = s.chars().collect();
    let mut out = String::with_capacity(s.len());
    let mut i = 0;
    let blank = |out: &mut String, ch: char| out.push(if ch == '\n' { '\n' } else { ' ' });
    while i < c.len() {
        let next = c.get(i + 1).copied();
        if c[i] == '/' && next == Some('/') {
            while i < c.len() && c[i] != '\n' {
                i += 1;
            }
        } else if c[i] == '/' && next == Some('*') {
            let mut depth = 0;
            while i < c.len() {
                if c[i] == '/' && c.get(i + 1) == Some(&'*') {
                    depth += 1;
                    i += 2;
                } else if c[i] == '*' && c.get(i + 1) == Some(&'/') {
                    depth -= 1;
                    i += 2;
                    if depth == 0 {
                        break;
                    }
                } else {
                    blank(&mut out, c[i]);
                    i += 1;
                }
            }
        } else if c[i] == 'r'
            && matches!(next, Some('"') | Some('#'))
            && (i == 0 || !(c[i - 1].is_alphanumeric() || c[i - 1] == '_'))
        {
            // Raw string r"…" / r#"…"#.
            let mut j = i + 1;
            let mut hashes = 0;
            while c.get(j) == Some(&'#') {
                hashes += 1;
                j += 1;
            }
            if c.get(j) != Some(&'"') {
                out.push(c[i]);
                i += 1;
                continue;
            }
            j += 1;
            loop {
                if j >= c.len() {
                    break;
                }
                if c[j] == '"' && (1..=hashes).all(|k| c.get(j + k) == Some(&'#')) {
                    j += 1 + hashes;
                    break;
                }
                blank(&mut out, c[j]);
                j += 1;
            }
            i = j;
        } else if c[i] == '"' {
            i += 1;
            while i < c.len() && c[i] != '"' {
                if c[i] == '\\' {
                    i += 1;
                }
                if let Some(&ch) = c.get(i) {
                    blank(&mut out, ch);
                }
                i += 1;
            }
            i += 1;
        } else if c[i] == '\'' && next == Some('\\') {
            // An escaped char literal: '\'' '\n' '\u{..}'.
            i += 2;
            while i < c.len() && c[i] != '\'' {
                i += 1;
            }
            i += 1;
        } else if c[i] == '\'' && c.get(i + 2) == Some(&'\'') {
            i += 3; // 'x' ('a' as a lifetime is never followed by a quote)
        } else {
            out.push(c[i]);
            i += 1;
        }
    }
    out
}

/// Removes every item marked `#[cfg(test)]` (a `mod tests { … }`, a `use`, a `fn`).
fn strip_test_items(s: &str) -> String {
    let mut out = String::new();
    let mut rest = s;
    while let Some(at) = rest.find("#[cfg(test)]") {
        out.push_str(&rest[..at]);
        let b = &rest.as_bytes()[at..];
        let mut i = "#[cfg(test)]".len();
        let mut depth = 0usize;
        while i < b.len() {
            match b[i] {
                b'{' => depth += 1,
                b'}' => {
                    depth -= 1;
                    if depth == 0 {
                        i += 1;
                        break;
                    }
                }
                b';' if depth == 0 => {
                    i += 1;
                    break;
                }
                _ => {}
            }
            i += 1;
        }
        rest = &rest[at + i.min(b.len())..];
    }
    out.push_str(rest);
    out
}

/// The `crate::<name>` paths in a stripped source.
fn crate_refs(s: &str) -> BTreeSet<String> {
    refs_after(s, "crate::")
}

/// The first segments of the paths that start with `prefix` (`crate::`, `super::`,
/// `crate::bench::`), `prefix::{a, b::c}` groups included.
fn refs_after(s: &str, prefix: &str) -> BTreeSet<String> {
    let mut out = BTreeSet::new();
    for (at, _) in s.match_indices(prefix) {
        if at > 0 {
            let p = s.as_bytes()[at - 1];
            if p.is_ascii_alphanumeric() || p == b'_' || p == b':' {
                continue; // e.g. `my_crate::`, or `super::` inside `super::super::`
            }
        }
        let tail = &s[at + prefix.len()..];
        let names: Vec<&str> = if let Some(group) = tail.strip_prefix('{') {
            // `crate::{a, b::c}`: the first segment of each entry.
            let end = group.find('}').unwrap_or(group.len());
            group[..end]
                .split(',')
                .map(|e| e.trim().split("::").next().unwrap_or("").trim())
                .collect()
        } else {
            let end = tail
                .find(|ch: char| !(ch.is_ascii_alphanumeric() || ch == '_'))
                .unwrap_or(tail.len());
            vec![&tail[..end]]
        };
        out.extend(
            names
                .into_iter()
                .filter(|n| !n.is_empty())
                .map(String::from),
        );
    }
    out
}

/// Top-level module -> the top-level modules it names (edges to itself and to items of the
/// crate root, such as `crate::VERSION`, left out).
fn graph() -> BTreeMap<String, BTreeSet<String>> {
    let files = sources();
    let modules: BTreeSet<String> = files.iter().filter_map(|(p, _)| top_module(p)).collect();
    let mut g: BTreeMap<String, BTreeSet<String>> = modules
        .iter()
        .map(|m| (m.clone(), BTreeSet::new()))
        .collect();
    for (p, text) in &files {
        let Some(from) = top_module(p) else { continue };
        for to in crate_refs(text) {
            if to != from && modules.contains(&to) {
                g.get_mut(&from).unwrap().insert(to);
            }
        }
    }
    g
}

/// Strongly connected components with more than one module (Tarjan), each sorted.
fn cycles(g: &BTreeMap<String, BTreeSet<String>>) -> Vec<Vec<String>> {
    struct T<'a> {
        g: &'a BTreeMap<String, BTreeSet<String>>,
        index: BTreeMap<&'a str, usize>,
        low: BTreeMap<&'a str, usize>,
        stack: Vec<&'a str>,
        on: BTreeSet<&'a str>,
        out: Vec<Vec<String>>,
    }
    fn visit<'a>(t: &mut T<'a>, v: &'a str) {
        let n = t.index.len();
        t.index.insert(v, n);
        t.low.insert(v, n);
        t.stack.push(v);
        t.on.insert(v);
        for w in &t.g[v] {
            let w = w.as_str();
            if !t.index.contains_key(w) {
                visit(t, w);
                let lw = t.low[w];
                let lv = t.low.get_mut(v).unwrap();
                *lv = (*lv).min(lw);
            } else if t.on.contains(w) {
                let iw = t.index[w];
                let lv = t.low.get_mut(v).unwrap();
                *lv = (*lv).min(iw);
            }
        }
        if t.low[v] == t.index[v] {
            let mut comp = Vec::new();
            loop {
                let w = t.stack.pop().unwrap();
                t.on.remove(w);
                comp.push(w.to_string());
                if w == v {
                    break;
                }
            }
            if comp.len() > 1 {
                comp.sort();
                t.out.push(comp);
            }
        }
    }
    let mut t = T {
        g,
        index: BTreeMap::new(),
        low: BTreeMap::new(),
        stack: Vec::new(),
        on: BTreeSet::new(),
        out: Vec::new(),
    };
    for v in g.keys() {
        if !t.index.contains_key(v.as_str()) {
            visit(&mut t, v);
        }
    }
    t.out.sort();
    t.out
}

#[test]
fn the_core_never_names_cli() {
    let offenders: Vec<String> = sources()
        .into_iter()
        .filter(|(p, _)| top_module(p).is_some_and(|m| m != "cli"))
        .filter(|(_, text)| crate_refs(text).contains("cli"))
        .map(|(p, _)| p.display().to_string())
        .collect();
    assert!(
        offenders.is_empty(),
        "modules outside src/cli/ name crate::cli: {offenders:?}"
    );
}

/// The products sit below the benchmarks, the run model and the workspaces: an operation a
/// product owns (GreptimeDB's compaction) reaches them only through `product::op::OpCtx`,
/// which the benchmark side implements (design-2 §5 point 3).
#[test]
fn products_reach_the_run_and_workspace_only_through_the_op_context() {
    let above = ["bench", "run", "workspace", "cli"];
    let offenders: Vec<String> = sources()
        .into_iter()
        .filter(|(p, _)| top_module(p).as_deref() == Some("product"))
        .filter_map(|(p, text)| {
            let refs = crate_refs(&text);
            let named: Vec<&str> = above
                .iter()
                .copied()
                .filter(|m| refs.contains(*m))
                .collect();
            (!named.is_empty()).then(|| format!("{} names {named:?}", p.display()))
        })
        .collect();
    assert!(
        offenders.is_empty(),
        "src/product/ names modules above it: {offenders:?}"
    );
}

#[test]
fn module_graph_has_no_cycle_beyond_the_allowed_list() {
    let found = cycles(&graph());
    println!("top-level import cycles: {}", found.len());
    for c in &found {
        println!("  cycle: {}", c.join(", "));
    }
    let allowed: Vec<Vec<String>> = ALLOWED_CYCLES
        .iter()
        .map(|c| c.iter().map(|s| s.to_string()).collect())
        .collect();
    let new: Vec<&Vec<String>> = found.iter().filter(|c| !allowed.contains(c)).collect();
    assert!(
        new.is_empty(),
        "import cycles not in ALLOWED_CYCLES: {new:?}"
    );
}

/// The submodules of `src/bench/` (`plan`, `target`, `phases`, ...) -> the siblings they
/// name (`super::x` from `bench/y.rs`, `super::super::x` from `bench/phases/…`,
/// `crate::bench::x` anywhere). `bench/mod.rs`, the parent that declares them all, is left
/// out: a child naming an item of its parent is no circle between siblings.
fn bench_graph() -> BTreeMap<String, BTreeSet<String>> {
    let files: Vec<(PathBuf, String)> = sources()
        .into_iter()
        .filter(|(p, _)| p.starts_with("bench") && p != Path::new("bench/mod.rs"))
        .collect();
    let node = |p: &Path| -> String {
        let c = p.components().nth(1).unwrap().as_os_str().to_string_lossy();
        c.strip_suffix(".rs").unwrap_or(&c).to_string()
    };
    let nodes: BTreeSet<String> = files.iter().map(|(p, _)| node(p)).collect();
    let mut g: BTreeMap<String, BTreeSet<String>> =
        nodes.iter().map(|m| (m.clone(), BTreeSet::new())).collect();
    for (p, text) in &files {
        let from = node(p);
        let up = if p.components().count() > 2 {
            "super::super::"
        } else {
            "super::"
        };
        let named = refs_after(text, up)
            .into_iter()
            .chain(refs_after(text, "crate::bench::"));
        for to in named {
            if to != from && nodes.contains(&to) {
                g.get_mut(&from).unwrap().insert(to);
            }
        }
    }
    g
}

/// Issue 23: "The import graph has no circle inside `src/bench/`" (the review found request
/// -> preflight -> target -> request).
#[test]
fn bench_submodules_form_no_cycle() {
    let g = bench_graph();
    assert!(g.contains_key("plan") && g.contains_key("phases"), "{g:?}");
    assert!(
        g["plan"].contains("target"),
        "the scanner sees sibling edges: {g:?}"
    );
    let found = cycles(&g);
    assert!(
        found.is_empty(),
        "import cycles inside src/bench/: {found:?}"
    );
}

#[test]
fn the_scanner_sees_edges_and_skips_comments_strings_and_tests() {
    let src = "use crate::a::X;\n/// see [`crate::b`]\nfn f() { let _ = \"crate::c\"; \
               crate::{d, e::F}; let _ = '\"'; crate::g::h(); }\n\
               #[cfg(test)]\nmod tests { use crate::t; }\n#[cfg(test)]\nuse crate::u;\n";
    let refs = crate_refs(&strip_test_items(&strip_comments_and_strings(src)));
    let want: BTreeSet<String> = ["a", "d", "e", "g"].iter().map(|s| s.to_string()).collect();
    assert_eq!(refs, want);
    let g: BTreeMap<String, BTreeSet<String>> = [
        ("x", vec!["y"]),
        ("y", vec!["z"]),
        ("z", vec!["x"]),
        ("w", vec!["x"]),
    ]
    .into_iter()
    .map(|(k, v)| (k.to_string(), v.into_iter().map(String::from).collect()))
    .collect();
    assert_eq!(cycles(&g), vec![vec!["x", "y", "z"]]);
}
