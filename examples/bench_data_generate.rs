//! `data generate` through the library, for `scripts/bench-data.sh`: the same pipeline the CLI
//! runs, with the generator given by path instead of a prepared TSBS environment.
//!
//! Usage: bench_data_generate <dataset-root> <generator> <dataset-id> <scale> <end> [none|gzip|xz]

use std::path::PathBuf;

use tsbsctl::dataset::{
    self, Compression, Dataset, GenerateRequest, Generator, Profile, SpecOverrides,
};
use tsbsctl::output::StderrReporter;
use tsbsctl::paths::Root;

fn main() {
    let a: Vec<String> = std::env::args().collect();
    if a.len() < 6 {
        eprintln!("usage: bench_data_generate <dataset-root> <generator> <dataset-id> <scale> <end> [none|gzip|xz]");
        std::process::exit(2);
    }
    let root = Root::at("/nonexistent-state-root")
        .with_dataset_root(Some(&PathBuf::from(&a[1])))
        .expect("dataset root");
    let compression = match a.get(6).map(String::as_str) {
        Some("gzip") => Compression::Gzip,
        Some("xz") => Compression::Xz,
        _ => Compression::None,
    };
    let overrides = SpecOverrides {
        profile: Some(Profile::Smoke),
        scale: Some(a[4].parse().expect("scale")),
        end: Some(a[5].clone()),
        ..Default::default()
    };
    let ds = Dataset::resolve(&root, Some(&a[3]), &overrides).expect("resolve");
    let req = GenerateRequest {
        format: "influx".into(),
        compression: Some(compression),
        regenerate: true,
        generatable: tsbsctl::product::data_formats(),
    };
    let gen = Generator {
        path: PathBuf::from(&a[2]),
        sha256: "0".repeat(64),
        tsbs_repo: "bench".into(),
        tsbs_commit: "bench".into(),
        go_version: "bench".into(),
        dirty: false,
    };
    let mut g = move || Ok(gen.clone());
    let reporter = StderrReporter::new(false, false);
    match dataset::ensure_generated(&ds, &req, &mut g, "bench", &reporter) {
        Ok(sf) => println!("{} rows, {} bytes, sha256 {}", sf.rows, sf.bytes, sf.sha256),
        Err(e) => {
            eprintln!("error: {e}");
            std::process::exit(e.exit_code());
        }
    }
}
