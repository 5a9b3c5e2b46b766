//! Issue 14, "How we will know": a third product is one module, its templates and one
//! registry line. ExampleDB (`src/product/exampledb.rs`, compiled only in tests; its unit
//! tests drive it through the registry, the bench validation, the TSBS command lines, the
//! footprint and the query-set manifests) is that product; this test keeps the list of what
//! it needed, and fails when anything else in the sources names it.

use std::path::{Path, PathBuf};

/// Every file ExampleDB needed, and the only lines outside them that name it.
const ITS_FILES: [&str; 2] = [
    "src/product/exampledb.rs",
    "templates/exampledb/exampledb.toml.j2",
];
const ITS_LINES: [&str; 2] = [
    "src/product/mod.rs: exampledb::ENTRY,",
    "src/product/mod.rs: pub mod exampledb;",
];

fn sources(root: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    let mut stack: Vec<PathBuf> = ["src", "testbed/src", "templates", "tests"]
        .iter()
        .map(|d| root.join(d))
        .collect();
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).into_iter().flatten().flatten() {
            let p = e.path();
            if p.is_dir() {
                stack.push(p);
            } else {
                out.push(p);
            }
        }
    }
    out.sort();
    out
}

#[test]
fn a_third_product_is_one_module_its_templates_and_one_registry_line() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    for f in ITS_FILES {
        assert!(root.join(f).is_file(), "{f} is missing");
    }
    // This test itself (its file and its `mod` line) is not something the product needed.
    let this = root.join("tests/integration/exampledb.rs");
    let registration = "tests/integration/main.rs: mod exampledb;";
    let mut lines = Vec::new();
    for p in sources(root) {
        let rel = p.strip_prefix(root).unwrap().display().to_string();
        if p == this || ITS_FILES.contains(&rel.as_str()) {
            continue;
        }
        // Binary fixtures hold no source to read.
        let Ok(text) = std::fs::read_to_string(&p) else {
            continue;
        };
        for l in text.lines() {
            let line = format!("{rel}: {}", l.trim());
            if l.to_ascii_lowercase().contains("exampledb") && line != registration {
                lines.push(line);
            }
        }
    }
    lines.sort();
    assert_eq!(
        lines, ITS_LINES,
        "ExampleDB must need nothing but {ITS_FILES:?} and its registry lines"
    );
}
