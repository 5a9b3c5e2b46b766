//! `data generate --only queries`: a query set of a dataset that has no data files, and its
//! extension with another type and with more queries of one type (a new set staged beside and
//! published with one rename, the earlier set untouched); bad input changes nothing.

use std::path::{Path, PathBuf};

use serde_json::{json, Value};

use crate::world::*;

fn listing(dir: &Path) -> Vec<PathBuf> {
    let mut v: Vec<PathBuf> = walkdir::WalkDir::new(dir)
        .into_iter()
        .flatten()
        .map(|e| e.path().to_path_buf())
        .collect();
    v.sort();
    v
}

#[test]
fn a_query_set_without_data_then_extended_twice() {
    let w = world();
    let root = w.gt.env.root.clone();
    w.run(&[
        "data",
        "prepare",
        "--profile",
        "smoke",
        "--scale",
        "2",
        "--log-interval",
        "60s",
        "--dataset-id",
        "tq",
    ])
    .ok();
    let gen = |extra: &[&str]| {
        let mut a = vec![
            "data",
            "generate",
            "--only",
            "queries",
            "--product",
            "greptimedb",
            "--dataset-id",
            "tq",
            "--json",
        ];
        a.extend_from_slice(extra);
        w.run(&a)
    };
    let r = gen(&[
        "--query-type",
        "lastpoint",
        "--query-type",
        "high-cpu-1",
        "--queries",
        "3",
    ]);
    r.ok();
    let first: Value = r.json()["data"].clone();
    let id1 = first["query_set_id"].as_str().unwrap().to_string();
    assert!(id1.starts_with("greptime-"), "{first}");
    assert_eq!(first["extended_from"], Value::Null);
    assert!(first["generated_at"]["lastpoint"].is_string(), "{first}");
    // No data was generated for it.
    assert!(!root.join("datasets/tq/formats").exists());
    let set1 = PathBuf::from(first["query_set_path"].as_str().unwrap());
    let m1_bytes = std::fs::read(set1.join("manifest.json")).unwrap();

    // Bad input: exit 2, nothing written under queries/.
    let queries = root.join("queries");
    let before = listing(&queries);
    gen(&[
        "--extend",
        "greptime-0000000000000000",
        "--query-type",
        "high-cpu-all",
    ])
    .code(2)
    .says("has no greptime query set");
    gen(&["--extend", &id1])
        .code(2)
        .says("needs the types or counts to add");
    gen(&["--format", "influx"]).code(2);
    w.run(&[
        "data",
        "generate",
        "--only",
        "queries",
        "--dataset-id",
        "tq",
    ])
    .code(2)
    .says("needs --product");
    w.run(&["data", "generate", "--dataset-id", "tq"])
        .code(2)
        .says("needs --format");
    assert_eq!(listing(&queries), before);

    // Another type: the two files copied, one generated.
    let r = gen(&[
        "--extend",
        &id1,
        "--query-type",
        "single-groupby-1-1-1",
        "--queries",
        "3",
    ]);
    r.ok();
    let second: Value = r.json()["data"].clone();
    let id2 = second["query_set_id"].as_str().unwrap().to_string();
    assert_ne!(id2, id1);
    assert_eq!(
        second["extended_from"]["reused_types"],
        json!(["high-cpu-1", "lastpoint"])
    );
    assert_eq!(
        second["extended_from"]["generated_types"],
        json!(["single-groupby-1-1-1"])
    );
    assert_eq!(
        second["generated_at"]["lastpoint"], first["generated_at"]["lastpoint"],
        "a copied file keeps when it was generated"
    );
    for t in ["high-cpu-1", "lastpoint"] {
        assert_eq!(second["files"][t]["sha256"], first["files"][t]["sha256"]);
    }
    // The earlier set is untouched.
    assert_eq!(std::fs::read(set1.join("manifest.json")).unwrap(), m1_bytes);
    // Its identity is the reference's for the whole spec: asking for the three types anew
    // finds it.
    let r = gen(&[
        "--query-type",
        "lastpoint",
        "--query-type",
        "high-cpu-1",
        "--query-type",
        "single-groupby-1-1-1",
        "--queries",
        "3",
    ]);
    r.ok();
    assert_eq!(r.json()["data"]["query_set_id"], json!(&id2));
    assert_eq!(r.json()["data"]["reused"], true);

    // More queries of one type: that type generated again, the others copied.
    let r = gen(&["--extend", &id2, "--query-count", "lastpoint=5"]);
    r.ok();
    let third: Value = r.json()["data"].clone();
    assert_eq!(
        third["extended_from"]["generated_types"],
        json!(["lastpoint"])
    );
    assert_eq!(
        third["extended_from"]["reused_types"],
        json!(["high-cpu-1", "single-groupby-1-1-1"])
    );
    assert_eq!(third["spec"]["query_counts"]["lastpoint"], 5);
    assert_eq!(third["spec"]["query_counts"]["high-cpu-1"], 3);
    let set3 = PathBuf::from(third["query_set_path"].as_str().unwrap());
    assert!(set3.join("queries/lastpoint.dat").is_file());
    // Three published sets and no staging left beside them.
    let mut sets: Vec<String> = std::fs::read_dir(set3.parent().unwrap())
        .unwrap()
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .collect();
    sets.sort();
    let mut want = vec![
        id1,
        id2.clone(),
        third["query_set_id"].as_str().unwrap().to_string(),
    ];
    want.sort();
    assert_eq!(sets, want);
    // The dataset's records say what was generated when.
    let r = w.run(&["data", "inspect", "--dataset-id", "tq", "--json"]);
    r.ok();
    let listed = r.json()["data"]["query_sets"].as_array().unwrap().clone();
    assert_eq!(listed.len(), 3);
    let third_listed = listed
        .iter()
        .find(|q| q["query_set_id"] == third["query_set_id"])
        .unwrap();
    assert_eq!(third_listed["extended_from"]["query_set_id"], json!(&id2));
    assert_eq!(
        third_listed["generated_at"]["high-cpu-1"],
        first["generated_at"]["high-cpu-1"]
    );
    assert_ne!(
        third_listed["generated_at"]["lastpoint"],
        first["generated_at"]["lastpoint"]
    );
    let r = w.run(&["data", "inspect", "--dataset-id", "tq"]);
    r.ok().says(&format!("extended from {id2}"));
}
