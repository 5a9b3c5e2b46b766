//! Issue 24 §3: `--cpus` and `--memory` hold a managed server to a machine shape in a cgroup of
//! its own (real cgroups: cgroup v1 with the cpu, cpuset and memory controllers on this machine
//! and in CI, root), the group goes with the server, also after kill -9 of tsbsctl, and an
//! out-of-memory kill is said as such.

use std::path::{Path, PathBuf};
use std::time::Duration;

use serde_json::json;

use crate::pipeline::events;
use crate::util::{query_of, read_json, wait_until};
use crate::world::{endpoint_of, run_dir, world, World};

/// Our own group in the v1 hierarchy of `controller` (tsbsctl runs in the same ones), or why
/// the test cannot run here.
fn own_group(controller: &str) -> Result<PathBuf, String> {
    // SAFETY: geteuid has no preconditions.
    if unsafe { libc::geteuid() } != 0 {
        return Err("not root: no cgroup can be created".into());
    }
    let cg = std::fs::read_to_string("/proc/self/cgroup").map_err(|e| e.to_string())?;
    let path = cg
        .lines()
        .find_map(|l| {
            let mut p = l.splitn(3, ':');
            let (_, c, path) = (p.next()?, p.next()?, p.next()?);
            c.split(',')
                .any(|x| x == controller)
                .then(|| path.to_string())
        })
        .ok_or_else(|| format!("no cgroup v1 {controller} controller for this process"))?;
    let dir = Path::new("/sys/fs/cgroup")
        .join(controller)
        .join(path.trim_start_matches('/'));
    // One name per call: the tests of this process probe at the same time.
    let probe = dir.join(format!(
        "tsbsctl-probe-{}-{}",
        std::process::id(),
        crate::util::unique()
    ));
    std::fs::create_dir(&probe)
        .map_err(|e| format!("cannot create a group in {}: {e}", dir.display()))?;
    let _ = std::fs::remove_dir(&probe);
    Ok(dir)
}

fn shaped_host() -> Option<()> {
    for c in ["cpu", "cpuset", "memory"] {
        if let Err(why) = own_group(c) {
            eprintln!("SKIP: {why}");
            return None;
        }
    }
    Some(())
}

#[test]
fn shape_a_managed_server_runs_in_its_own_cgroup_and_the_group_goes_with_it() {
    if shaped_host().is_none() {
        return;
    }
    let w = world();
    let dir = w.bench_ok("load", &["--cpus", "1", "--memory", "512MiB"]);
    let m = read_json(&dir.join("manifest.json"));
    let shape = &m["target"]["server_shape"];
    assert_eq!(shape["hierarchy"], "cgroup v1", "{shape}");
    assert_eq!(shape["cpus"], 1.0, "{shape}");
    assert_eq!(shape["cpuset"], "0", "{shape}");
    assert_eq!(shape["cpu_quota_us"], 100_000, "{shape}");
    assert_eq!(shape["cpu_period_us"], 100_000, "{shape}");
    assert_eq!(shape["memory_limit_bytes"], 512u64 << 20, "{shape}");
    let groups: Vec<PathBuf> = shape["groups"]
        .as_array()
        .unwrap()
        .iter()
        .map(|g| PathBuf::from(g.as_str().unwrap()))
        .collect();
    assert_eq!(groups.len(), 3, "cpu, cpuset and memory: {shape}");
    for g in &groups {
        let name = g.file_name().unwrap().to_string_lossy().into_owned();
        assert!(name.starts_with("tsbsctl-"), "{name}");
        // Beneath tsbsctl's own group, never at a hierarchy's root.
        let controller = g
            .strip_prefix("/sys/fs/cgroup")
            .unwrap()
            .components()
            .next()
            .unwrap()
            .as_os_str()
            .to_string_lossy()
            .into_owned();
        assert_eq!(g.parent().unwrap(), own_group(&controller).unwrap());
        assert!(
            !g.exists(),
            "the group went with the server: {}",
            g.display()
        );
    }
    // The server step says where it ran; the flags are recorded.
    let running = events(&dir)
        .into_iter()
        .find(|e| e["step"] == "server" && e["status"] == "running" && !e["data"].is_null())
        .unwrap();
    assert_eq!(running["data"]["cgroup"], *shape, "{running}");
    assert_eq!(m["flags"]["cpus"], 1.0);
    assert_eq!(m["flags"]["memory"], 512u64 << 20);
    let md = std::fs::read_to_string(dir.join("summary.md")).unwrap();
    assert!(
        md.contains("Server shape: 1 CPU(s) on 0 and 512.0 MiB of memory"),
        "{md}"
    );
}

/// A real GreptimeDB v1.0.2 in a cgroup of its own reads the host's memory, not the shape's
/// (its `/config` said a page cache of an eighth of this 23.5 GiB host under any shape), and
/// its write buffer and caches have no flags. Under `--memory` a standalone starts with
/// `config.shaped.toml`, the workspace's config with the sizes it takes of a machine of the
/// shape's size; the run records the sizes the server reports. Without a shape they are the
/// server's own shares of the host, said as such.
#[test]
fn shape_greptimedb_sizes_its_write_buffer_and_caches_from_the_shape_not_the_host() {
    if shaped_host().is_none() {
        return;
    }
    let w = world();
    let shaped = 512u64 << 20;
    let dir = w.bench_ok("load", &["--memory", "512MiB"]);
    let shaped_dir = dir.clone();
    let st = &read_json(&dir.join("manifest.json"))["target"]["server_settings"];
    let sizes = &st["memory_sizes"];
    assert_eq!(sizes["page_cache_size"], shaped / 8, "{st}");
    assert_eq!(sizes["global_write_buffer_size"], shaped / 8, "{st}");
    assert_eq!(sizes["global_write_buffer_reject_size"], shaped / 4, "{st}");
    assert_eq!(sizes["sst_meta_cache_size"], shaped / 32, "{st}");
    for k in [
        "vector_cache_size",
        "selector_result_cache_size",
        "range_result_cache_size",
        // Below 2 GiB the index caches fall below their defaults too.
        "index.content_cache_size",
        "index.result_cache_size",
        // The index builds' threshold: a sixteenth at any size.
        "inverted_index.mem_threshold_on_create",
        "fulltext_index.mem_threshold_on_create",
        "bloom_filter_index.mem_threshold_on_create",
    ] {
        assert_eq!(sizes[k], shaped / 16, "{k}: {st}");
    }
    assert_eq!(sizes["index.metadata_cache_size"], shaped / 32, "{st}");
    assert_eq!(st["memory_sized_to_shape"], true, "{st}");
    let log = std::fs::read_to_string(dir.join("logs/server-001.log")).unwrap();
    assert!(log.contains("config.shaped.toml"), "{log}");
    let md = std::fs::read_to_string(dir.join("summary.md")).unwrap();
    assert!(
        md.contains("- Server memory: page cache 64.00 MiB, write buffer 64.00 MiB, index build threshold 32.00 MiB as the server reports them (GET /config); tsbsctl gave"),
        "{md}"
    );
    // The workspace's own config is untouched (verify holds).
    w.run(&["greptimedb", "verify", "--database-id", "g1"]).ok();
    // Without a shape: the server's shares of the memory it sees.
    let dir = w.bench_ok(
        "load",
        &["--database-mode", "reset", "--confirm-reset", "benchmark"],
    );
    let st = &read_json(&dir.join("manifest.json"))["target"]["server_settings"];
    let host = testbed::emulators::greptime::total_mem_bytes();
    assert_eq!(st["memory_sizes"]["page_cache_size"], host / 8, "{st}");
    assert_eq!(
        st["memory_sizes"]["inverted_index.mem_threshold_on_create"], "auto",
        "{st}"
    );
    assert_eq!(st["memory_sized_to_shape"], false, "{st}");
    let log = std::fs::read_to_string(dir.join("logs/server-001.log")).unwrap();
    assert!(!log.contains("config.shaped.toml"), "{log}");
    // The report sets the two side by side.
    let out = w.report("memory-report", &[&shaped_dir, &dir]);
    let rep = std::fs::read_to_string(out.join("summary.md")).unwrap();
    assert!(rep.contains("### GreptimeDB memory"), "{rep}");
    assert!(
        rep.contains(
            "| 64.00 MiB | 64.00 MiB | 16.00 MiB | 32.00 MiB | 32.00 MiB | 32.00 MiB | to the shape |"
        ),
        "{rep}"
    );
    assert!(
        rep.contains("| auto | from the memory the server sees |"),
        "{rep}"
    );
    let html = std::fs::read_to_string(out.join("report.html")).unwrap();
    assert!(html.contains(r#"<table id="greptimedb-memory">"#), "{html}");
}

/// A cluster under `--memory` runs in one group with its metasrv, frontends and metadata
/// store; each datanode would size its caches from the host (as a standalone would). Its
/// launcher writes every datanode a config sized for its share of the shape, and the run
/// records what each datanode reports.
#[test]
fn shape_greptimedb_cluster_datanodes_share_the_shape() {
    if shaped_host().is_none() {
        return;
    }
    let Some((w, _)) = crate::cluster::cluster_world() else {
        return;
    };
    let mut a = vec![
        "bench",
        "greptimedb",
        "load",
        "--database-id",
        "c1",
        "--stop-timeout",
        "20",
        "--startup-timeout",
        crate::util::CLUSTER_STARTUP,
        "--memory",
        "3GiB",
        "--json",
    ];
    a.extend(crate::world::tiny());
    let r = w.run(&a);
    r.ok();
    let dir = run_dir(&r);
    let st = &read_json(&dir.join("manifest.json"))["target"]["server_settings"];
    // Three datanodes: a 1 GiB machine each.
    let sizes = &st["memory_sizes"];
    assert_eq!(sizes["page_cache_size"], 128u64 << 20, "{st}");
    assert_eq!(sizes["global_write_buffer_size"], 128u64 << 20, "{st}");
    assert_eq!(sizes["index.metadata_cache_size"], 32u64 << 20, "{st}");
    assert_eq!(
        sizes["inverted_index.mem_threshold_on_create"],
        64u64 << 20,
        "{st}"
    );
    assert_eq!(st["memory_datanodes"], 3, "{st}");
    assert_eq!(st["memory_sized_to_shape"], true, "{st}");
    assert!(st.get("memory_sizes_by_datanode").is_none(), "{st}");
    let ws = w.gt.ws_dir("c1");
    for d in 1..=3 {
        let f = std::fs::read_to_string(ws.join(format!("datanode-{d}.toml"))).unwrap();
        assert!(f.contains("page_cache_size = \"134217728B\""), "{f}");
        assert!(f.contains("over 3 datanodes"), "{f}");
    }
    let md = std::fs::read_to_string(dir.join("summary.md")).unwrap();
    assert!(
        md.contains("- Server memory: page cache 128.00 MiB, write buffer 128.00 MiB, index build threshold 64.00 MiB in each of the 3 datanodes, as they report them (GET /config); tsbsctl gave each datanode the sizes it takes of a machine of 1/3 of the --memory shape's size"),
        "{md}"
    );
    // The workspace's own config is untouched (verify holds).
    w.run(&["greptimedb", "verify", "--database-id", "c1"]).ok();
}

/// Issue 24 §2 with §3: a server the kernel kills at its memory limit during one query type
/// is that type's result, "OOM" with the evidence; the server is started again and the other
/// types run.
#[test]
fn shape_a_server_killed_at_its_memory_limit_is_an_oom_result_and_the_run_goes_on() {
    if shaped_host().is_none() {
        return;
    }
    let w = world();
    w.bench_ok("load", &[]);
    // high-cpu-1 (the first type) is heavy: the real server's memory for it, over the limit.
    w.gt.set_knobs(json!({"query_memory_mib": 400, "query_memory_contains": "usage_user > 90"}));
    let r = w.bench("query", &["--memory", "160MiB", "--queries", "1"]);
    // The OOM is the type's result: the run completed, with failures, and exits 0.
    r.ok().says("OOM");
    assert_eq!(r.json()["data"]["status"], "completed_with_failures");
    let dir = run_dir(&r);
    let m = read_json(&dir.join("manifest.json"));
    assert_eq!(m["status"], "completed_with_failures", "{m}");
    assert!(m["error"].is_null(), "{m}");
    let s = crate::world::summary(&dir);
    assert_eq!(s["status"], "completed_with_failures");
    let md = std::fs::read_to_string(dir.join("summary.md")).unwrap();
    assert!(md.contains("Status: **completed with failures**"), "{md}");
    let list = w.run(&["runs", "list"]);
    list.ok();
    let row = list
        .stdout
        .lines()
        .find(|l| l.contains(m["run_id"].as_str().unwrap()))
        .unwrap();
    assert!(row.contains("completed with failures"), "{row}");
    let listed = w.run(&["runs", "list", "--json"]).json();
    assert!(
        listed.to_string().contains("\"completed_with_failures\""),
        "{listed}"
    );
    w.run(&["runs", "summarize", dir.to_str().unwrap()])
        .ok()
        .says("completed with failures");
    let q = |t: &str| query_of(&s, t);
    let hc = q("high-cpu-1");
    assert_eq!(hc["status"], "failed", "{hc}");
    let reason = hc["reason"].as_str().unwrap();
    assert!(reason.contains("(OOM)"), "{reason}");
    assert!(
        reason.contains("out of memory: killed by SIGKILL with 1 OOM kill(s) in its cgroup (memory limit 160.0 MiB"),
        "{reason}"
    );
    for t in ["lastpoint", "single-groupby-1-1-1"] {
        assert_eq!(q(t)["status"], "completed", "the run went on: {}", q(t));
    }
    let evs = events(&dir);
    let dead = evs
        .iter()
        .find(|e| e["step"] == "server" && e["attempt"] == 1 && e["status"] == "failed")
        .unwrap();
    assert!(
        dead["data"]["events"].to_string().contains("out_of_memory"),
        "{dead}"
    );
    let restart = evs
        .iter()
        .find(|e| e["step"] == "server-restart" && e["status"] == "completed")
        .unwrap();
    assert_eq!(restart["data"]["after_query_type"], "high-cpu-1");
    assert!(restart["data"]["seconds"].as_f64().unwrap() > 0.0);
    assert!(evs
        .iter()
        .any(|e| e["step"] == "server" && e["attempt"] == 2 && e["status"] == "completed"));
    // The report's cell says OOM, as the published table does.
    let out = w.gt.env.path().join("rep-oom");
    w.run(&[
        "runs",
        "report",
        dir.to_str().unwrap(),
        "--out",
        out.to_str().unwrap(),
    ])
    .ok();
    let md = std::fs::read_to_string(out.join("summary.md")).unwrap();
    assert!(md.contains("| high-cpu-1 | OOM |"), "{md}");
    assert!(md.contains("| completed with failures |"), "{md}");
}

#[test]
fn shape_a_group_left_by_a_killed_tsbsctl_is_swept_by_the_next_command() {
    if shaped_host().is_none() {
        return;
    }
    let w: World = world();
    let endpoint = endpoint_of(&w.ws());
    let mut bg = w.gt.serve_bg("g1", &["--cpus", "1"]);
    bg.wait_ready(&endpoint);
    let pid = bg.pid();
    let cpu = own_group("cpu").unwrap();
    let group = cpu.join(format!("tsbsctl-{pid}-1"));
    assert!(group.exists(), "{}", group.display());
    let tasks = std::fs::read_to_string(group.join("cgroup.procs")).unwrap();
    assert!(!tasks.trim().is_empty(), "the server runs in it");
    // kill -9: the server dies with tsbsctl (parent-death signal); its empty group stays.
    // SAFETY: SIGKILL to the tsbsctl we spawned.
    unsafe { libc::kill(pid, libc::SIGKILL) };
    bg.child.take().unwrap().wait().unwrap();
    assert!(wait_until(Duration::from_secs(20), || {
        std::fs::read_to_string(group.join("cgroup.procs")).is_ok_and(|t| t.trim().is_empty())
    }));
    assert!(group.exists());
    // The next command of any kind sweeps it, also one that starts no server.
    w.run(&["runs", "list", "--json"]).ok();
    assert!(!group.exists(), "swept: {}", group.display());
}

#[test]
fn shape_refused_where_it_cannot_hold_and_for_an_external_server() {
    let w = world();
    let runs = w.gt.env.root.join("greptimedb/runs");
    let r = w.bench("load", &["--cpus", "4096"]);
    r.code(2).says("--cpus 4096");
    let r = w.bench("load", &["--memory", "1MiB"]);
    r.code(2).says("below 64 MiB");
    let r = w.bench("load", &["--memory", "lots"]);
    r.code(2).says("not a size");
    assert!(!runs.exists() || std::fs::read_dir(&runs).unwrap().next().is_none());
    let endpoint = endpoint_of(&w.ws());
    let r = w.run(&[
        "bench",
        "greptimedb",
        "load",
        "--url",
        &endpoint,
        "--cpus",
        "1",
        "--dataset-id",
        "tiny",
    ]);
    r.code(2).says("external server");
}

/// Issue 24 §4: a busy host before a measured phase is recorded and warned about in
/// summary.md, and `--require-quiet` refuses to measure on it; a measurement it was busy
/// during (the load, a query type, a `--target-precision` batch) is warned about with when.
#[test]
fn a_busy_machine_is_warned_about_and_refused_with_require_quiet() {
    let w = world();
    // Two busy loops: both CPUs of a 2-core machine (more than 10% on any host).
    let cpus = std::thread::available_parallelism().map_or(2, |n| n.get());
    let mut burners: Vec<std::process::Child> = (0..cpus)
        .map(|_| {
            std::process::Command::new("sh")
                .args(["-c", "while :; do :; done"])
                .spawn()
                .unwrap()
        })
        .collect();
    let bench = |phase: &str, extra: &[&str]| {
        let mut args = vec![
            "bench",
            "greptimedb",
            phase,
            "--database-id",
            "g1",
            "--stop-timeout",
            "5",
        ];
        args.extend_from_slice(extra);
        args.extend(crate::world::tiny());
        args.push("--json");
        let mut c = w.gt.env.cmd(&args);
        c.env("TSBSCTL_MACHINE_CHECK_MS", "1000");
        crate::util::run_command(c, &args, Duration::from_secs(300))
    };
    let refused = bench("load", &["--require-quiet"]);
    // The whole bench, with a type whose batches (--target-precision) are measurements too:
    // 40 to 80 ms a query, so five queries cannot give ±5% and more batches run.
    w.gt.set_knobs(json!({"query_delay_ms": 40, "query_jitter_ms": 40}));
    let warned = bench(
        "all",
        &[
            "--query-type",
            "lastpoint",
            "--queries",
            "5",
            "--target-precision",
            "5%",
        ],
    );
    for b in &mut burners {
        let _ = b.kill();
        let _ = b.wait();
    }
    refused
        .code(1)
        .says("the machine is not quiet before the load: other processes used");
    // Refused before anything was measured.
    assert!(
        !events(&run_dir(&refused))
            .iter()
            .any(|e| e["step"] == "load"),
        "no load step"
    );
    warned.ok();
    let dir = run_dir(&warned);
    let md = std::fs::read_to_string(dir.join("summary.md")).unwrap();
    assert!(
        md.contains("## Was the machine quiet?")
            && md.contains("- machine-check: not quiet before the load: other processes used"),
        "{md}"
    );
    // During each measurement too, with when: the load, the type's first file and its
    // extra batches.
    for step in ["load", "query:lastpoint", "query-batch:lastpoint"] {
        let line = format!("- {step}: not quiet during {step} (");
        assert!(
            md.lines().any(|l| l.starts_with(&line)
                && l.contains(" → ")
                && l.contains("other processes used")),
            "{line}\n{md}"
        );
    }
    let batch = events(&dir)
        .into_iter()
        .find(|e| e["step"] == "query-batch:lastpoint" && e["status"] == "completed")
        .expect("a batch ran");
    assert_eq!(batch["data"]["machine"]["quiet"], false, "{batch}");
    let check = events(&dir)
        .into_iter()
        .find(|e| e["step"] == "machine-check" && e["status"] == "completed")
        .unwrap();
    assert_eq!(check["data"]["quiet"], false, "{check}");
    assert_eq!(check["data"]["threshold"], 0.1, "{check}");
    let load = events(&dir)
        .into_iter()
        .find(|e| e["step"] == "load" && e["status"] == "completed")
        .unwrap();
    assert!(
        load["data"]["machine"]["others_cpu_share"].is_number(),
        "{load}"
    );
}

/// Issue 24 §4: the work of the managed server's child processes (PostgreSQL's backends under
/// the postmaster, a cluster's roles under tsbsctl's launcher) is the server's, not "other
/// processes'": the emulator's child burns a CPU and the check counts it as the server's.
#[test]
fn a_servers_busy_child_is_the_servers_cpu_not_another_processes() {
    let w = world();
    w.gt.set_knobs(json!({"busy_child": true}));
    let mut args = vec![
        "bench",
        "greptimedb",
        "load",
        "--database-id",
        "g1",
        "--stop-timeout",
        "5",
    ];
    args.extend(crate::world::tiny());
    args.push("--json");
    let mut c = w.gt.env.cmd(&args);
    c.env("TSBSCTL_MACHINE_CHECK_MS", "1500");
    let r = crate::util::run_command(c, &args, Duration::from_secs(300));
    w.gt.set_knobs(json!({}));
    r.ok();
    let dir = run_dir(&r);
    let check = events(&dir)
        .into_iter()
        .find(|e| e["step"] == "machine-check" && e["status"] == "completed")
        .unwrap();
    let d = &check["data"];
    let (server, others, busy) = (
        d["server_cpu_share"].as_f64().expect("the server's share"),
        d["others_cpu_share"].as_f64().unwrap(),
        d["host_busy_share"].as_f64().unwrap(),
    );
    // The child's CPU over 1.5 s: at least 2% of the host's CPU time even on a crowded host
    // (its main process only waits for requests, and there are none before the load).
    assert!(server >= 0.02, "{check}");
    assert!(others <= (busy - server).max(0.0) + 1e-9, "{check}");
    let load = events(&dir)
        .into_iter()
        .find(|e| e["step"] == "load" && e["status"] == "completed")
        .unwrap();
    assert!(
        load["data"]["machine"]["server_cpu_share"].is_number(),
        "{load}"
    );
}

/// A real InfluxDB 3 Core 3.10.1 under `--memory 1G` was OOM-killed while it replayed 291 MiB
/// of WAL at start-up, and tsbsctl said only "exited during startup (killed by signal 9)".
/// A start the OOM killer ends is said as such, with the evidence and what to change.
#[test]
fn shape_a_server_killed_at_its_memory_limit_while_starting_says_out_of_memory() {
    if shaped_host().is_none() {
        return;
    }
    let w = world();
    let knobs = crate::world::publish_influx3(&w, "core");
    w.prepare_influx3("om1", "core");
    crate::influxdb3::bench_influx3(&w, "om1", "load", &[]).ok();
    // The replay's memory, 400 MiB for this small WAL (the real one needs about 3.5 times
    // its WAL), over the limit below.
    let wal: u64 = crate::util::all_files(&w.gt.env.root.join("influxdb3/databases/om1"))
        .iter()
        .filter(|p| p.extension().is_some_and(|e| e == "wal"))
        .map(|p| std::fs::metadata(p).unwrap().len())
        .sum();
    assert!(wal > 0, "the load left a WAL to replay");
    let per_mib = 400.0 * (1 << 20) as f64 / wal as f64;
    std::fs::write(
        &knobs,
        json!({"wal_flush_interval_ms": 20, "wal_replay_memory_per_mib": per_mib}).to_string(),
    )
    .unwrap();
    let r = crate::influxdb3::bench_influx3(&w, "om1", "query", &["--memory", "160MiB"]);
    r.code(1)
        .says("exited during startup (out of memory: killed by SIGKILL with 1 OOM kill(s) in its cgroup (memory limit 160.0 MiB")
        .says("--memory");
    let dir = run_dir(&r);
    let dead = events(&dir)
        .into_iter()
        .find(|e| e["step"] == "server" && e["status"] == "failed")
        .unwrap();
    assert!(
        dead["reason"]
            .as_str()
            .unwrap()
            .contains("exited during startup (out of memory: killed by SIGKILL"),
        "{dead}"
    );
    let md = std::fs::read_to_string(dir.join("summary.md")).unwrap();
    assert!(md.contains("exited during startup (out of memory"), "{md}");
    // Without the limit the same start replays and the queries run.
    crate::influxdb3::bench_influx3(&w, "om1", "query", &[]).ok();
}

/// Prepares InfluxDB 3 Core `version` as workspace `id`, loads it under `--memory 512MiB` and
/// checks that the server got the shape's shares (20%, 20%, 50%) in bytes under the `flags`
/// the version takes (pool, cache, snapshot) and reported the pool; the run directory.
fn load_influx3_shaped(w: &World, id: &str, version: &str, flags: [&str; 3]) -> PathBuf {
    let shaped = 512u64 << 20;
    crate::world::publish_influx3_version(w, "core", version);
    let port = crate::util::free_port_block(1).to_string();
    w.run(&[
        "influxdb3",
        "prepare",
        "--database-id",
        id,
        "--edition",
        "core",
        "--version",
        version,
        "--http-port",
        &port,
    ])
    .ok();
    let r = crate::influxdb3::bench_influx3(w, id, "load", &["--memory", "512MiB"]);
    r.ok();
    let dir = run_dir(&r);
    let st = &read_json(&dir.join("manifest.json"))["target"]["server_settings"];
    assert_eq!(st["query_memory_pool_bytes"], shaped / 100 * 20, "{st}");
    assert_eq!(st["query_memory_pool_sized_to_shape"], true, "{st}");
    let log = std::fs::read_to_string(dir.join("logs/server-001.log")).unwrap();
    for (flag, share) in flags.iter().zip([20, 20, 50]) {
        let flag = format!("{flag}={}b", shaped / 100 * share);
        assert!(log.contains(&flag), "{flag} in\n{log}");
    }
    dir
}

/// A real InfluxDB 3 Core 3.10.1 under `--memory 2G` reported a query pool of 4.7 GiB: 20% of
/// the host's 23.5 GiB, not of the shape (sysinfo reads the root cgroup's limit, not the
/// server's own group). Under a shape tsbsctl now gives it the shares (20%, 20%, 50%) of the
/// shape, and records the pool the server reports; without a shape the pool is the server's
/// own 20% of what it sees, said as such.
#[test]
fn shape_influxdb3_sizes_its_memory_shares_from_the_shape_not_the_host() {
    if shaped_host().is_none() {
        return;
    }
    let w = world();
    let dir = load_influx3_shaped(
        &w,
        "m1",
        "3.10.1",
        [
            "--exec-mem-pool-bytes",
            "--parquet-mem-cache-size",
            "--force-snapshot-mem-threshold",
        ],
    );
    let shaped_dir = dir.clone();
    let md = std::fs::read_to_string(dir.join("summary.md")).unwrap();
    assert!(
        md.contains("- Server memory: query memory pool 102.40 MiB as the server reports it; tsbsctl gave it"),
        "{md}"
    );
    // Without a shape: the server's own default share of the memory it sees.
    let r = crate::influxdb3::bench_influx3(
        &w,
        "m1",
        "load",
        &["--database-mode", "reset", "--confirm-reset", "benchmark"],
    );
    r.ok();
    let dir = run_dir(&r);
    let st = &read_json(&dir.join("manifest.json"))["target"]["server_settings"];
    // What the stand-in, as the real server through sysinfo, sizes its shares from: the
    // root cgroup's limit, capped by the machine's memory.
    let host = testbed::emulators::influxdb3::cli::total_mem_bytes();
    assert_eq!(
        st["query_memory_pool_bytes"],
        (host as f64 * 0.2).round() as u64,
        "{st}"
    );
    assert_eq!(st["query_memory_pool_sized_to_shape"], false, "{st}");
    let md = std::fs::read_to_string(dir.join("summary.md")).unwrap();
    assert!(
        md.contains("(its default, 20% of the memory it sees"),
        "{md}"
    );
    // The report sets the two pools side by side.
    let out = w.report("pool-report", &[&shaped_dir, &dir]);
    let rep = std::fs::read_to_string(out.join("summary.md")).unwrap();
    assert!(rep.contains("| Query memory pool |"), "{rep}");

    // 3.11 renamed the three and wants a unit; an old name would still be taken, with a
    // deprecation warning in the log.
    let dir = load_influx3_shaped(
        &w,
        "m2",
        "3.11.1",
        [
            "--exec-mem-pool-size",
            "--file-cache-size",
            "--force-snapshot-mem-size",
        ],
    );
    let log = std::fs::read_to_string(dir.join("logs/server-001.log")).unwrap();
    assert!(!log.contains("deprecated option"), "{log}");
    assert!(rep.contains("| 102.40 MiB (sized to the shape) |"), "{rep}");
}
