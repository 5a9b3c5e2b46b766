//! `influxdb3 serve`: start-up (knobs, licence, catalog and WAL replay), the HTTP listener,
//! the WAL flusher, and graceful shutdown on SIGTERM/SIGINT.

use super::cli::ServeConfig;
use super::http::App;
use super::objects::Objects;
use super::store::{Layout, Store};
use super::{license, log, Build, Edition, Knobs};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

const SERVE: &str = "influxdb3::commands::serve";

fn fail(msg: &str) -> i32 {
    eprintln!("Serve command failed: {msg}");
    1
}

/// Emits the knob-injected log lines for life-cycle point `at`.
pub(crate) fn inject(knobs: &Knobs, at: &str) {
    for l in knobs.log_lines.iter().filter(|l| l.at == at) {
        match l.level.to_ascii_uppercase().as_str() {
            "FATAL" => eprintln!("fatal runtime error: {}", l.message),
            "PANIC" => {
                log(
                    "ERROR",
                    "panic_logging",
                    "Thread panic",
                    &[
                        ("panic_type", "\"unknown\"".into()),
                        ("panic_message", format!("{:?}", l.message)),
                        ("panic_file", "\"influxdb3_server/src/http.rs\"".into()),
                        ("panic_line", "812".into()),
                    ],
                );
                eprintln!(
                    "thread 'tokio-runtime-worker' panicked at influxdb3_server/src/http.rs:812:9:\n{}\nnote: run with `RUST_BACKTRACE=1` environment variable to display a backtrace",
                    l.message
                );
            }
            level => log(level, "influxdb3_server", &l.message, &[]),
        }
    }
}

fn signal_flag() -> Arc<AtomicBool> {
    let flag = Arc::new(AtomicBool::new(false));
    for sig in [signal_hook::consts::SIGTERM, signal_hook::consts::SIGINT] {
        let _ = signal_hook::flag::register(sig, flag.clone());
    }
    flag
}

pub fn run(build: Build, knobs: Knobs, cfg: ServeConfig) -> i32 {
    let started = Instant::now();
    let mut fields = vec![
        ("node_id", cfg.node_id.clone()),
        ("version", build.version.clone()),
        ("product_name", build.edition.product_name()),
    ];
    if let Some(c) = &cfg.cluster_id {
        fields.push(("cluster_id", c.clone()));
    }
    log("INFO", SERVE, "server starting", &fields);
    inject(&knobs, "start");
    // The object store, built as the real `make_object_store` does: a config error fails at
    // once (`Cannot parse object store config: ...`).
    let objects = match (cfg.object_store.as_str(), &cfg.data_dir) {
        ("file", Some(dir)) => Some(Objects::Dir(dir.clone())),
        ("memory", _) => None,
        ("s3", _) => {
            if let Some(dir) = &cfg.data_dir {
                log(
                    "WARN",
                    "influxdb3_clap_blocks::object_store",
                    "--data-dir / `INFLUXDB3_DB_DIR` ignored. It only affects 'file' object stores",
                    &[
                        ("data_dir", format!("{:?}", dir.display().to_string())),
                        ("object_store_type", "S3".into()),
                    ],
                );
            }
            if build.edition == Edition::Enterprise {
                return fail("testbed: an Enterprise licence kept in an S3 object store is not emulated (use --object-store file)");
            }
            match Objects::s3(&cfg.s3) {
                Ok(o) => Some(o),
                Err((true, m)) => return fail(&format!("Cannot parse object store config: {m}")),
                Err((false, m)) => {
                    // The real builder accepts it; the first request (catalog load) fails.
                    return fail(&format!(
                        "failed to initialize catalog: object store error: {m}"
                    ));
                }
            }
        }
        ("file", None) => {
            return fail("Cannot parse object store config: Specified 'File' for the object store; required configuration missing for data-dir")
        }
        (other, _) => {
            return fail(&format!(
                "testbed: object store '{other}' is not emulated (use file, s3 or memory)"
            ))
        }
    };
    let mut store_fields = vec![("object_store", cfg.object_store.clone())];
    if let Some(o) = &objects {
        store_fields.extend(o.describe());
    }
    log("INFO", SERVE, "object store", &store_fields);
    if knobs.start_delay_ms > 0 {
        std::thread::sleep(Duration::from_millis(knobs.start_delay_ms));
    }
    if let Some(code) = knobs.exit_during_start {
        log(
            "ERROR",
            SERVE,
            "failed to initialize write buffer",
            &[("error", "testbed: injected start-up failure".into())],
        );
        eprintln!("Serve command failed: failed to initialize write buffer: testbed: injected start-up failure");
        return code;
    }
    if build.edition == Edition::Enterprise {
        if let Err(license::Fatal(m)) = license::ensure(&build, &knobs, &cfg) {
            return fail(&m);
        }
    }
    let stop_signal = signal_flag();
    if knobs.never_ready {
        log("INFO", SERVE, "catalog loading", &[]);
        while !stop_signal.load(Ordering::SeqCst) {
            std::thread::sleep(Duration::from_millis(20));
        }
        log("INFO", SERVE, "shutdown signal received, exiting", &[]);
        return 0;
    }

    let catalog_prefix = cfg
        .cluster_id
        .clone()
        .unwrap_or_else(|| cfg.node_id.clone());
    if let Some(o) = &objects {
        // The catalog's first read: the bucket and the keys must be accepted.
        if let Err(e) = o.check(&format!("{catalog_prefix}/catalog/checkpoint")) {
            return fail(&format!(
                "failed to initialize catalog: object store error: {e}"
            ));
        }
    }
    let layout = objects.map(|objects| Layout {
        objects,
        node_id: cfg.node_id.clone(),
        catalog_prefix,
    });
    let store = match Store::open(
        layout,
        cfg.gen1_minutes,
        knobs.snapshot_after_wal_files.unwrap_or(900),
        // 3.11: "New clusters are created on the upgraded storage engine" (Enterprise only).
        build.edition == Edition::Enterprise && build.at_least(3, 11),
    ) {
        Ok(s) => Arc::new(
            s.with_persist_per_file(Duration::from_millis(knobs.snapshot_persist_ms_per_file)),
        ),
        Err(e) => return fail(&format!("failed to initialize catalog: {e}")),
    };
    // The WAL replay: proportional to the WAL on the knob (real: `replaying WAL files`, then
    // `completed replaying wal files time_taken=...`; Core holds all its data in the WAL).
    let replay_started = Instant::now();
    log(
        "INFO",
        "influxdb3_wal::object_store",
        "replaying WAL files",
        &[],
    );
    let replay = Duration::from_millis(
        knobs.wal_replay_ms_per_mib * store.replayed_wal_bytes / (1024 * 1024),
    );
    // The buffer the replay rebuilds is resident memory: under a cgroup limit a large WAL
    // gets the process OOM-killed during start-up, as it did the real one.
    let replay_memory = crate::emulators::touched_bytes(
        (knobs.wal_replay_memory_per_mib.unwrap_or(3.5).max(0.0) * store.replayed_wal_bytes as f64)
            as usize,
    );
    let replay_end = Instant::now() + replay;
    while Instant::now() < replay_end && !stop_signal.load(Ordering::SeqCst) {
        std::thread::sleep((replay_end - Instant::now()).min(Duration::from_millis(20)));
    }
    drop(replay_memory);
    log(
        "INFO",
        "influxdb3_wal::object_store",
        "completed replaying wal files",
        &[("time_taken", format!("{:?}", replay_started.elapsed()))],
    );
    log(
        "INFO",
        "influxdb3_catalog::catalog",
        "catalog loaded",
        &[("catalog_uuid", store.catalog_uuid())],
    );

    let server = match tiny_http::Server::http(cfg.http_bind) {
        Ok(s) => Arc::new(s),
        Err(e) => {
            log(
                "ERROR",
                SERVE,
                "Failed to bind address",
                &[
                    ("address", cfg.http_bind.to_string()),
                    ("error", e.to_string()),
                ],
            );
            return fail("Failed to bind address");
        }
    };
    let addr = server
        .server_addr()
        .to_ip()
        .map(|a| a.to_string())
        .unwrap_or_else(|| cfg.http_bind.to_string());
    if let Some(p) = &cfg.tcp_listener_file {
        if let Err(e) = std::fs::write(p, &addr) {
            return fail(&format!(
                "cannot write the TCP listener file {}: {e}",
                p.display()
            ));
        }
    }
    let flush_interval = cfg
        .wal_flush_interval
        .or(knobs.wal_flush_interval_ms.map(Duration::from_millis))
        .unwrap_or(Duration::from_secs(1));
    let stopping = Arc::new(AtomicBool::new(false));
    let app = Arc::new(App::new(
        build.clone(),
        knobs.clone(),
        cfg.clone(),
        store.clone(),
    ));

    // Background snapshot persistence (only queued when persisting is slow, on the knob).
    let persister = {
        let (store, stopping) = (store.clone(), stopping.clone());
        std::thread::spawn(move || {
            while !stopping.load(Ordering::SeqCst) {
                match store.persist_next() {
                    Ok(true) => {}
                    Ok(false) => std::thread::sleep(Duration::from_millis(20)),
                    Err(e) => {
                        log(
                            "ERROR",
                            "influxdb3_write::write_buffer::queryable_buffer",
                            "error during sort, deduplicate, and persist of buffer data as parquet",
                            &[("error", e)],
                        );
                        std::thread::sleep(Duration::from_millis(20));
                    }
                }
            }
        })
    };
    let flusher = {
        let (store, stopping) = (store.clone(), stopping.clone());
        std::thread::spawn(move || {
            let mut next = Instant::now() + flush_interval;
            while !stopping.load(Ordering::SeqCst) {
                let now = Instant::now();
                if now < next {
                    std::thread::sleep((next - now).min(Duration::from_millis(20)));
                    continue;
                }
                next += flush_interval;
                if let Err(e) = store.flush() {
                    log(
                        "ERROR",
                        "influxdb3_wal::object_store",
                        "failed to flush WAL",
                        &[("error", e)],
                    );
                }
            }
        })
    };
    let acceptor = {
        let (server, app) = (server.clone(), app.clone());
        std::thread::spawn(move || {
            for req in server.incoming_requests() {
                let app = app.clone();
                std::thread::spawn(move || app.handle(req));
            }
        })
    };
    log(
        "INFO",
        "influxdb3_server",
        &format!("startup time: {}ms", started.elapsed().as_millis()),
        &[("address", addr)],
    );
    inject(&knobs, "ready");

    let serving_since = Instant::now();
    let mut sigterm_logged = false;
    loop {
        std::thread::sleep(Duration::from_millis(20));
        if let Some(ms) = knobs.crash_after_ms {
            if serving_since.elapsed() >= Duration::from_millis(ms) {
                eprintln!("thread 'main' panicked at influxdb3/src/commands/serve.rs:1207:17:\ntestbed: injected crash while serving\nnote: run with `RUST_BACKTRACE=1` environment variable to display a backtrace");
                std::process::exit(knobs.crash_exit_code.unwrap_or(101));
            }
        }
        if stop_signal.load(Ordering::SeqCst) {
            if knobs.hang_on_sigterm {
                if !sigterm_logged {
                    log(
                        "INFO",
                        "influxdb3_shutdown",
                        "received shutdown signal",
                        &[],
                    );
                    sigterm_logged = true;
                }
                continue;
            }
            break;
        }
    }
    log(
        "INFO",
        "influxdb3_shutdown",
        "received shutdown signal",
        &[],
    );
    inject(&knobs, "shutdown");
    server.unblock();
    let _ = acceptor.join();
    drop(server); // stop listening before the final flush
    if knobs.shutdown_delay_ms > 0 {
        std::thread::sleep(Duration::from_millis(knobs.shutdown_delay_ms));
    }
    stopping.store(true, Ordering::SeqCst);
    let _ = flusher.join();
    // A snapshot still persisting is abandoned, as the real runtime drops its task: its landed
    // files stay without a snapshot file, and the next start replays their rows from the WAL.
    let _ = persister.join();
    // The final flush releases durable writers still waiting; let them answer.
    let persisted = store.shutdown();
    app.released.store(true, Ordering::SeqCst);
    let deadline = Instant::now() + Duration::from_secs(5);
    while app.in_flight() > 0 && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(10));
    }
    if let Err(e) = persisted {
        log(
            "ERROR",
            SERVE,
            "failed to persist on shutdown",
            &[("error", e)],
        );
        return 1;
    }
    log("INFO", SERVE, "shutdown complete", &[]);
    0
}
