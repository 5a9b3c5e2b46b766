//! Log lines in GreptimeDB's format (tracing-subscriber's default, no ANSI when not on a
//! terminal): `2026-11-29T19:40:00.123456Z  INFO servers::http: HTTP server is bound to ...`,
//! to stdout and to rolling files in the log dir (`greptimedb.<YYYY-MM-DD-HH>`, and
//! `greptimedb-err.<YYYY-MM-DD-HH>` for WARN and ERROR).

use std::fs::{File, OpenOptions};
use std::io::Write;
use std::path::PathBuf;
use std::sync::Mutex;

use time::OffsetDateTime;

struct Sink {
    dir: Option<PathBuf>,
    hour: String,
    all: Option<File>,
    err: Option<File>,
}

static SINK: Mutex<Option<Sink>> = Mutex::new(None);

/// 0 = everything, 1 = WARN and ERROR, 2 = ERROR only (from `--log-level`).
static THRESHOLD: std::sync::atomic::AtomicU8 = std::sync::atomic::AtomicU8::new(0);

/// Applies `--log-level` / `logging.level` (`error`, `warn`, else everything).
pub fn set_level(level: &str) {
    let l = level.to_ascii_lowercase();
    let t = if l.starts_with("error") {
        2
    } else if l.starts_with("warn") {
        1
    } else {
        0
    };
    THRESHOLD.store(t, std::sync::atomic::Ordering::Relaxed);
}

/// Starts writing log files under `dir` (created if missing).
pub fn init(dir: Option<PathBuf>) -> std::io::Result<()> {
    if let Some(d) = &dir {
        std::fs::create_dir_all(d)?;
    }
    *SINK.lock().unwrap_or_else(|e| e.into_inner()) = Some(Sink {
        dir,
        hour: String::new(),
        all: None,
        err: None,
    });
    Ok(())
}

fn timestamp(now: OffsetDateTime) -> String {
    format!(
        "{:04}-{:02}-{:02}T{:02}:{:02}:{:02}.{:06}Z",
        now.year(),
        now.month() as u8,
        now.day(),
        now.hour(),
        now.minute(),
        now.second(),
        now.microsecond()
    )
}

/// One log line at `level` (`INFO`, `WARN`, `ERROR`) from module `target`.
pub fn log(level: &str, target: &str, msg: &str) {
    let rank = match level {
        "ERROR" => 2,
        "WARN" => 1,
        _ => 0,
    };
    if rank < THRESHOLD.load(std::sync::atomic::Ordering::Relaxed) {
        return;
    }
    let now = OffsetDateTime::now_utc();
    let line = format!("{} {:>5} {target}: {msg}\n", timestamp(now), level);
    {
        let mut out = std::io::stdout().lock();
        let _ = out.write_all(line.as_bytes());
        let _ = out.flush();
    }
    let mut guard = SINK.lock().unwrap_or_else(|e| e.into_inner());
    if let Some(sink) = guard.as_mut() {
        let Some(dir) = sink.dir.clone() else { return };
        let hour = format!(
            "{:04}-{:02}-{:02}-{:02}",
            now.year(),
            now.month() as u8,
            now.day(),
            now.hour()
        );
        if sink.hour != hour {
            let open = |name: String| {
                OpenOptions::new()
                    .create(true)
                    .append(true)
                    .open(dir.join(name))
                    .ok()
            };
            sink.all = open(format!("greptimedb.{hour}"));
            sink.err = open(format!("greptimedb-err.{hour}"));
            sink.hour = hour;
        }
        if let Some(f) = sink.all.as_mut() {
            let _ = f.write_all(line.as_bytes());
        }
        if level == "WARN" || level == "ERROR" {
            if let Some(f) = sink.err.as_mut() {
                let _ = f.write_all(line.as_bytes());
            }
        }
    }
}

pub fn info(target: &str, msg: &str) {
    log("INFO", target, msg)
}

pub fn error(target: &str, msg: &str) {
    log("ERROR", target, msg)
}

/// A Rust panic message as the runtime prints it (stderr).
pub fn panic_line(msg: &str) {
    let mut err = std::io::stderr().lock();
    let _ = writeln!(
        err,
        "thread 'tokio-runtime-worker' panicked at src/servers/src/http.rs:42:9:\n{msg}\nnote: run with `RUST_BACKTRACE=1` environment variable to display a backtrace"
    );
    let _ = err.flush();
}
