//! Helper for `scripts/bench-foundation.sh` (not a test): times tsbsctl's own SHA-256 and
//! downloader so the script can compare them with `openssl dgst` and `curl -o`.
//!
//! ```text
//! bench_foundation hash FILE                 prints: <seconds> <bytes> <sha256>
//! bench_foundation download URL SHA256 ROOT  prints: <seconds> <bytes>
//! ```

use std::path::Path;
use std::sync::Arc;
use std::time::Instant;

use tsbsctl::download::Downloader;
use tsbsctl::output::{NoProgress, SilentReporter};
use tsbsctl::paths::Root;

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let result = match args
        .iter()
        .map(String::as_str)
        .collect::<Vec<_>>()
        .as_slice()
    {
        ["hash", file] => {
            let t = Instant::now();
            tsbsctl::hash::sha256_file(Path::new(file), &NoProgress)
                .map(|(hex, size)| format!("{:.6} {size} {hex}", t.elapsed().as_secs_f64()))
        }
        ["download", url, sha, root] => {
            let root = Root::at(root);
            let t = Instant::now();
            Downloader::new(
                &root,
                &tsbsctl::product::default_sources(),
                Arc::new(SilentReporter),
            )
            .and_then(|d| d.fetch_verified(url, sha, "bench.bin"))
            .map(|v| format!("{:.6} {}", t.elapsed().as_secs_f64(), v.size))
        }
        _ => {
            eprintln!("usage: bench_foundation hash FILE | download URL SHA256 ROOT");
            std::process::exit(2);
        }
    };
    match result {
        Ok(line) => println!("{line}"),
        Err(e) => {
            eprintln!("error: {}", e.message);
            std::process::exit(e.exit_code());
        }
    }
}
