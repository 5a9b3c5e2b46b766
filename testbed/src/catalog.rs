//! Everything `testbed serve` publishes (every stand-in release of every product), and the
//! `serve` command itself: the mirror by hand, for people and benchmark scripts.

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use crate::mirror::{Body, Mirror};

/// Publishes every stand-in release on `mirror`; `work_dir` holds files the releases need
/// on disk (built archives, knob files).
pub fn publish_all(mirror: &Mirror, work_dir: &Path) {
    crate::releases::go::publish_all(mirror, work_dir);
    crate::releases::greptime::publish_all(mirror, work_dir);
    crate::releases::influxdb3::publish_all(mirror, work_dir);
}

const USAGE: &str = "usage: testbed serve [--port P] [--dir DIR] [--file URLPATH=FILE]...

Runs the release mirror on 127.0.0.1 until Ctrl-C or SIGTERM, publishes every stand-in
release, and prints the `export TSBSCTL_...=...` lines that point tsbsctl at it.
  --port P              listen on port P (default: any free port)
  --dir DIR             work directory for published files (default: a temporary one)
  --file URLPATH=FILE   also serve FILE (streamed from disk) at URLPATH, e.g. /bench/1g.bin=/tmp/x";

/// `testbed serve ...`; returns the exit code.
pub fn serve_main(args: Vec<String>) -> i32 {
    let mut port = 0u16;
    let mut dir: Option<PathBuf> = None;
    let mut files: Vec<(String, PathBuf)> = Vec::new();
    let mut it = args.into_iter();
    while let Some(a) = it.next() {
        let (flag, inline) = match a.split_once('=') {
            Some((f, v)) if f.starts_with("--") => (f.to_string(), Some(v.to_string())),
            _ => (a.clone(), None),
        };
        let mut value = || inline.clone().or_else(|| it.next());
        match flag.as_str() {
            "--port" => match value().and_then(|v| v.parse().ok()) {
                Some(p) => port = p,
                None => return usage("--port needs a port number"),
            },
            "--dir" => match value() {
                Some(d) => dir = Some(PathBuf::from(d)),
                None => return usage("--dir needs a directory"),
            },
            "--file" => match value().as_deref().and_then(|v| v.split_once('=')) {
                Some((p, f)) if p.starts_with('/') && Path::new(f).is_file() => {
                    files.push((p.to_string(), PathBuf::from(f)))
                }
                _ => return usage(
                    "--file needs URLPATH=FILE with URLPATH starting with / and an existing FILE",
                ),
            },
            "-h" | "--help" => {
                println!("{USAGE}");
                return 0;
            }
            other => return usage(&format!("unknown argument {other:?}")),
        }
    }
    let _tmp;
    let work_dir = match dir {
        Some(d) => {
            if let Err(e) = std::fs::create_dir_all(&d) {
                eprintln!("testbed serve: cannot create {}: {e}", d.display());
                return 1;
            }
            d
        }
        None => match tempfile::Builder::new().prefix("testbed-serve-").tempdir() {
            Ok(t) => {
                let p = t.path().to_path_buf();
                _tmp = t;
                p
            }
            Err(e) => {
                eprintln!("testbed serve: cannot create a temporary directory: {e}");
                return 1;
            }
        },
    };
    let stop = Arc::new(AtomicBool::new(false));
    for sig in [signal_hook::consts::SIGINT, signal_hook::consts::SIGTERM] {
        let _ = signal_hook::flag::register(sig, Arc::clone(&stop));
    }
    let mirror = match Mirror::start_on(port) {
        Ok(m) => m,
        Err(e) => {
            eprintln!("testbed serve: cannot listen on 127.0.0.1:{port}: {e}");
            return 1;
        }
    };
    publish_all(&mirror, &work_dir);
    for (path, file) in files {
        mirror.put(&path, Body::File(file));
    }
    use std::io::Write;
    for (k, v) in mirror
        .env()
        .into_iter()
        .chain(crate::releases::go::serve_env(&work_dir))
    {
        // A reader that stops after the lines it needs must not kill the server.
        let _ = writeln!(std::io::stdout(), "export {k}={}", crate::shell_quote(&v));
    }
    let _ = std::io::stdout().flush();
    eprintln!(
        "testbed mirror on {} serving {} paths from {}; Ctrl-C stops it",
        mirror.base_url(),
        mirror.paths().len(),
        work_dir.display()
    );
    while !stop.load(Ordering::SeqCst) {
        std::thread::sleep(Duration::from_millis(100));
    }
    drop(mirror);
    0
}

fn usage(why: &str) -> i32 {
    eprintln!("testbed serve: {why}\n{USAGE}");
    2
}
