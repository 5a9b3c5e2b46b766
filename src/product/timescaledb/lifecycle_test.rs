//! The whole managed-server cycle against this machine's real PostgreSQL: find the
//! installation, initdb (as `postgres`/`nobody` when root), render and include the config,
//! start `postgres -D` in the foreground as a child, wait for `pg_isready`, load a few rows
//! with the client, count them, measure the footprint and the WAL, end another session, stop
//! with SIGINT, and check no postgres is left. Skipped, saying so, when PostgreSQL is missing.

use std::os::unix::fs::PermissionsExt;
use std::process::{Child, Stdio};
use std::time::{Duration, Instant};

use super::install::{self, SearchPaths};
use super::server::{self, Layout, Readiness, RunAs, Settings};
use super::sql::{self, Target};
use super::Mode;

fn free_port() -> u16 {
    testbed::ports::free_port_block(1)
}

/// The pids of the processes whose parent is `pid` (the postmaster's backends).
fn children_of(pid: i32) -> Vec<i32> {
    let mut out = Vec::new();
    for e in std::fs::read_dir("/proc").unwrap().flatten() {
        let Ok(child) = e.file_name().to_string_lossy().parse::<i32>() else {
            continue;
        };
        let Ok(stat) = std::fs::read_to_string(e.path().join("stat")) else {
            continue;
        };
        let ppid = stat
            .rsplit_once(')')
            .and_then(|(_, r)| r.split_whitespace().nth(1))
            .and_then(|p| p.parse::<i32>().ok());
        if ppid == Some(pid) {
            out.push(child);
        }
    }
    out
}

/// Kills the server if the test fails half-way, so no postgres outlives it.
struct Guard(Option<Child>);

impl Drop for Guard {
    fn drop(&mut self) {
        if let Some(c) = self.0.as_mut() {
            let _ = nix::sys::signal::kill(
                nix::unistd::Pid::from_raw(c.id() as i32),
                nix::sys::signal::Signal::SIGQUIT,
            );
            let _ = c.wait();
        }
    }
}

/// Starts the foreground server as `run_as` (stdout and stderr to `log_path`) and waits for
/// `pg_isready`; a server that exits first fails the test with its FATAL lines.
fn start_and_wait(
    inst: &install::PgInstallation,
    layout: &Layout,
    run_as: &RunAs,
    port: u16,
    log_path: &std::path::Path,
) -> Guard {
    let text = std::fs::read_to_string(layout.data_dir.join(server::CONFIG_NAME)).unwrap();
    let cmd = server::server_command(inst, layout, run_as, &server::config_assignments(&text));
    let log = std::fs::File::create(log_path).unwrap();
    let mut c = std::process::Command::new(&cmd.program);
    c.args(&cmd.args)
        .stdin(Stdio::null())
        .stdout(log.try_clone().unwrap())
        .stderr(log);
    for (k, v) in &cmd.env {
        c.env(k, v);
    }
    for k in &cmd.env_remove {
        c.env_remove(k);
    }
    let mut guard = Guard(Some(c.spawn().unwrap()));
    let ready = server::pg_isready_command(inst, port);
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        let st = ready.command().output().unwrap().status;
        match Readiness::from_exit(st.code()) {
            Readiness::Accepting => return guard,
            Readiness::NoAttempt => panic!("pg_isready made no attempt: {}", ready.display()),
            _ => {}
        }
        if let Some(st) = guard.0.as_mut().unwrap().try_wait().unwrap() {
            let text = std::fs::read_to_string(log_path).unwrap();
            panic!(
                "postgres exited with {st}: {:?}\n{text}",
                super::log::fatal_lines(&text)
            );
        }
        assert!(Instant::now() < deadline, "server not ready in 60 s");
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// Stops the server with SIGINT and waits (30 s at most) for it to exit.
fn stop(guard: &mut Guard) -> std::process::ExitStatus {
    let mut child = guard.0.take().unwrap();
    nix::sys::signal::kill(
        nix::unistd::Pid::from_raw(child.id() as i32),
        nix::sys::signal::Signal::SIGINT,
    )
    .unwrap();
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        if let Some(st) = child.try_wait().unwrap() {
            return st;
        }
        if Instant::now() > deadline {
            let _ = child.kill();
            let _ = child.wait();
            panic!("postgres did not stop within 30 s of SIGINT");
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// CI images without a `postgres` user: the cluster runs as `nobody` through setpriv.
#[test]
fn managed_server_as_nobody_when_root() {
    if !nix::unistd::geteuid().is_root() {
        eprintln!("SKIP managed_server_as_nobody_when_root: needs root to act as another user");
        return;
    }
    let Ok(inst) = install::find(None, &SearchPaths::default()) else {
        eprintln!("SKIP managed_server_as_nobody_when_root: no PostgreSQL installation found");
        return;
    };
    let nobody = RunAs::User {
        name: None,
        uid: 65534,
        gid: 65534,
    };
    let top = tempfile::tempdir().unwrap();
    std::fs::set_permissions(top.path(), std::fs::Permissions::from_mode(0o755)).unwrap();
    let layout = Layout::in_dir(&top.path().join("server"));
    std::fs::create_dir_all(top.path().join("server")).unwrap();
    server::initdb(&inst, &layout, &nobody).unwrap();
    let port = free_port();
    let settings = Settings {
        shared_buffers: "128MB".into(),
        ..Settings::bench(port, &layout.socket_dir, false, super::Durability::Durable)
    };
    let rendered = server::render_config(&settings, "pg-nobody", "x", "test").unwrap();
    server::install_config(&layout.data_dir, &rendered, &nobody).unwrap();
    let log = top.path().join("server.log");
    let mut guard = start_and_wait(&inst, &layout, &nobody, port, &log);
    let pid = guard.0.as_ref().unwrap().id();
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap();
    let uid_line = status.lines().find(|l| l.starts_with("Uid:")).unwrap();
    assert!(
        uid_line.split_whitespace().skip(1).all(|u| u == "65534"),
        "{uid_line}"
    );
    let mut c = sql::connect(&Target::local(port, "postgres"), sql::TIMEOUT).unwrap();
    assert_eq!(c.query_one("SELECT 1", &[]).unwrap().get::<_, i32>(0), 1);
    drop(c);
    assert!(stop(&mut guard).success());
    assert!(!layout.data_dir.join("postmaster.pid").exists());
}

#[test]
fn managed_server_full_cycle_on_real_postgresql() {
    let Ok(inst) = install::find(None, &SearchPaths::default()) else {
        eprintln!(
            "SKIP managed_server_full_cycle_on_real_postgresql: no PostgreSQL installation found (.ci/run installs Debian's postgresql)"
        );
        return;
    };
    let run_as = RunAs::detect();
    let top = tempfile::tempdir().unwrap();
    // The server's user must traverse the temp dir (0700 by default).
    std::fs::set_permissions(top.path(), std::fs::Permissions::from_mode(0o755)).unwrap();
    let layout = Layout::in_dir(&top.path().join("server"));
    std::fs::create_dir_all(top.path().join("server")).unwrap();

    let out = server::initdb(&inst, &layout, &run_as).unwrap();
    assert!(layout.data_dir.join("PG_VERSION").exists(), "{out}");
    // initdb twice into the same directory is refused.
    assert_eq!(
        server::initdb(&inst, &layout, &run_as)
            .unwrap_err()
            .exit_code(),
        2
    );

    let port = free_port();
    let settings = Settings::bench(port, &layout.socket_dir, false, super::Durability::Durable);
    // This machine may be small: the real run's 1 GB of shared buffers is not the point here.
    let settings = Settings {
        shared_buffers: "128MB".into(),
        ..settings
    };
    let label = Mode::Postgresql.label(&inst.version.version, None);
    let rendered = server::render_config(&settings, "pg-test", &label, "test").unwrap();
    server::install_config(&layout.data_dir, &rendered, &run_as).unwrap();
    assert_eq!(server::clear_stale_pid(&layout.data_dir).unwrap(), None);
    assert!(server::port_free(port));

    let log_path = top.path().join("server.log");
    let mut guard = start_and_wait(&inst, &layout, &run_as, port, &log_path);
    let pid = guard.0.as_ref().unwrap().id() as i32;
    let ready = server::pg_isready_command(&inst, port);
    // The pid we hold is the postmaster's own (setpriv execs), as postmaster.pid says.
    assert_eq!(server::postmaster_pid(&layout.data_dir), Some(pid));
    // A second start is refused, naming the running server.
    let e = server::clear_stale_pid(&layout.data_dir).unwrap_err();
    assert!(e.message.contains(&format!("pid {pid}")), "{}", e.message);

    let admin = Target::local(port, "postgres");
    let probe = sql::probe(&admin, sql::TIMEOUT).unwrap();
    assert_eq!(probe.server_version_num / 10000, inst.version.major);
    assert!(probe.server_version.starts_with(&inst.version.version));
    assert_eq!(
        probe.timescaledb_available.as_deref(),
        inst.extension_version()
    );
    assert_eq!(probe.timescaledb_preloaded, Some(false));
    // The settings file is what the server runs with.
    let mut a = sql::connect(&admin, sql::TIMEOUT).unwrap();
    let row = a
        .query_one(
            "SELECT current_setting('listen_addresses'), current_setting('jit'), current_setting('wal_level')",
            &[],
        )
        .unwrap();
    assert_eq!(
        (
            row.get::<_, String>(0),
            row.get::<_, String>(1),
            row.get::<_, String>(2)
        ),
        // Durable by default: WAL for replicas, as published.
        ("127.0.0.1".into(), "off".into(), "replica".into())
    );
    assert!(!sql::database_exists(&mut a, "benchmark").unwrap());
    a.batch_execute("CREATE DATABASE benchmark").unwrap();
    assert!(sql::database_exists(&mut a, "benchmark").unwrap());

    let bench = admin.with_db("benchmark");
    let mut b = sql::connect(&bench, sql::TIMEOUT).unwrap();
    b.batch_execute(
        "CREATE TABLE tags(id SERIAL PRIMARY KEY, hostname TEXT);
         CREATE TABLE cpu(time timestamptz, tags_id integer, usage_user DOUBLE PRECISION, additional_tags JSONB DEFAULT NULL);
         CREATE INDEX ON cpu(tags_id, \"time\" DESC);
         CREATE INDEX ON cpu(\"time\" DESC);",
    )
    .unwrap();
    // Separate transactions, as the loader's: with wal_level = minimal, rows written in the
    // transaction that created their table skip the WAL.
    let before = sql::wal_lsn(&mut b).unwrap();
    b.batch_execute(
        "INSERT INTO tags(hostname) SELECT 'host_' || g FROM generate_series(0, 9) g;
         INSERT INTO cpu(time, tags_id, usage_user)
           SELECT timestamptz '2023-06-11' + g * interval '10 s', 1 + g % 10, g % 100
           FROM generate_series(0, 8639) g;",
    )
    .unwrap();
    let after = sql::wal_lsn(&mut b).unwrap();
    assert_eq!(sql::row_count(&mut b, "cpu").unwrap(), 8640);
    assert_eq!(sql::row_count(&mut b, "tags").unwrap(), 10);
    sql::analyze(&mut b).unwrap();
    let wal = sql::wal_bytes(&mut b, &before, &after).unwrap();
    assert!(wal > 8640 * 50, "the load wrote {wal} WAL bytes");
    let f = sql::footprint(&mut b).unwrap();
    assert_eq!(f.method, "relation");
    let cpu = f.cpu.clone().unwrap();
    assert!(cpu.table_bytes > 0 && cpu.index_bytes > 0, "{f:?}");
    assert!(
        cpu.total_bytes >= cpu.table_bytes + cpu.index_bytes,
        "{f:?}"
    );
    assert!(f.database_bytes > cpu.total_bytes, "{f:?}");
    assert!(f.tags.is_some());

    // Another session on the database would make the loader's DROP DATABASE fail: it is
    // listed and ended.
    let found = sql::sessions_on(&mut a, "benchmark").unwrap();
    assert_eq!(found.len(), 1, "{found:?}");
    assert_eq!(found[0].application_name.as_deref(), Some("tsbsctl"));
    let ended = sql::terminate_sessions(&mut a, "benchmark", Duration::from_secs(10)).unwrap();
    assert_eq!(ended, found);
    assert!(
        b.query_one("SELECT 1", &[]).is_err(),
        "the session was not ended"
    );
    // And with one connected again, the forced drop still works (PostgreSQL >= 13).
    let _c = sql::connect(&bench, sql::TIMEOUT).unwrap();
    sql::drop_database(&mut a, "benchmark", probe.server_version_num).unwrap();
    assert!(!sql::database_exists(&mut a, "benchmark").unwrap());
    drop(a);

    // Stop: SIGINT is a fast shutdown; the postmaster and all its backends are gone.
    let backends = children_of(pid);
    assert!(backends.len() >= 3, "backends: {backends:?}");
    let status = stop(&mut guard);
    assert!(status.success(), "postgres exited with {status}");
    let text = std::fs::read_to_string(&log_path).unwrap();
    assert!(text.contains("fast shutdown request"), "{text}");
    assert!(!layout.data_dir.join("postmaster.pid").exists());
    let left: Vec<i32> = backends
        .into_iter()
        .filter(|p| crate::fsutil::process_alive(*p))
        .collect();
    assert!(left.is_empty(), "backends left: {left:?}");
    assert_eq!(
        Readiness::from_exit(ready.command().output().unwrap().status.code()),
        Readiness::NoResponse
    );
    assert!(server::port_free(port));
}
