//! The TimescaleDB stand-ins (`tsbs_load_timescaledb`, `tsbs_run_queries_timescaledb`)
//! against a REAL PostgreSQL started here (initdb in a temp dir, as `postgres`/`nobody` when
//! root; 127.0.0.1 on a free port; sockets in the temp dir), their outputs checked against the
//! real tools' (`tests/fixtures/tsbs-real-postgresql/`). Skipped, saying so, when PostgreSQL is
//! not installed (`.ci/run` installs Debian's).

use std::collections::BTreeSet;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};

use testbed::emulators::tsbs_timescaledb::{read_queries, write_queries};

const FIX: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/../tests/fixtures/tsbs-real-postgresql"
);

fn fixture(p: &str) -> String {
    std::fs::read_to_string(format!("{FIX}/{p}")).unwrap()
}

fn first_line(s: &str) -> &str {
    s.lines().next().unwrap_or("")
}

/// `(name, default)` of each flag of a real `-help` text (a usage continued on the next lines
/// has its default on the last one).
fn help_flags(help: &str) -> BTreeSet<(String, String)> {
    let mut entries: Vec<String> = Vec::new();
    for l in help.lines().skip(1) {
        match l.strip_prefix("      --") {
            Some(rest) => entries.push(rest.to_string()),
            None if l.starts_with(' ') => entries.last_mut().unwrap().push_str(l),
            None => {}
        }
    }
    entries
        .iter()
        .map(|l| {
            let name = l.split_whitespace().next().unwrap().to_string();
            // pflag's own "(default X)" ends the entry; one inside the usage text does not.
            let default = l
                .strip_suffix(')')
                .and_then(|l| l.rsplit_once("(default "))
                .map(|(_, d)| d.trim_matches('"').to_string())
                .unwrap_or_default();
            (name, default)
        })
        .collect()
}

fn ours(defs: &[testbed::gotool::FlagDef]) -> BTreeSet<(String, String)> {
    defs.iter()
        .map(|d| {
            let zero = matches!(d.default, "" | "0" | "false" | "0s");
            (
                d.name.to_string(),
                if zero {
                    String::new()
                } else {
                    d.default.to_string()
                },
            )
        })
        .collect()
}

#[test]
fn flags_are_the_real_ones() {
    use testbed::emulators::tsbs_timescaledb::{load, run};
    assert_eq!(
        ours(load::FLAGS),
        help_flags(&fixture("help/tsbs_load_timescaledb.help.txt"))
    );
    assert_eq!(
        ours(run::FLAGS),
        help_flags(&fixture("help/tsbs_run_queries_timescaledb.help.txt"))
    );
}

#[test]
fn gob_files_read_and_write_as_the_real_ones() {
    for dir in ["timescaledb-plainpg", "timescaledb-default"] {
        for t in ["lastpoint", "single-groupby-1-1-1"] {
            let bytes = std::fs::read(format!("{FIX}/queries/{dir}/{t}.gob")).unwrap();
            let qs = read_queries(&bytes).unwrap();
            assert_eq!(qs.len(), 10);
            let decoded: Vec<serde_json::Value> =
                fixture(&format!("queries/{dir}/{t}.decoded.jsonl"))
                    .lines()
                    .map(|l| serde_json::from_str(l).unwrap())
                    .collect();
            for (q, d) in qs.iter().zip(&decoded) {
                assert_eq!(q.human_label, d["HumanLabel"].as_str().unwrap());
                assert_eq!(q.sql_query, d["SqlQuery"].as_str().unwrap());
                assert_eq!(q.hypertable, "cpu");
            }
            // Byte for byte what the real generator wrote.
            assert_eq!(write_queries(&qs), bytes, "{dir}/{t}");
        }
    }
    // An influx file decodes by field name, with empty SQL, as Go's gob does.
    let bytes = std::fs::read(format!("{FIX}/queries/influx/lastpoint.gob")).unwrap();
    let qs = read_queries(&bytes).unwrap();
    assert_eq!(qs.len(), 10);
    assert_eq!(qs[0].human_label, "Influx last row per host");
    assert!(qs.iter().all(|q| q.sql_query.is_empty()));
}

/// The highest installed PostgreSQL's bin directory.
fn pg_bin() -> Option<PathBuf> {
    let mut dirs: Vec<(u32, PathBuf)> = std::fs::read_dir("/usr/lib/postgresql")
        .ok()?
        .flatten()
        .filter_map(|e| {
            let v: u32 = e.file_name().to_string_lossy().parse().ok()?;
            let bin = e.path().join("bin");
            bin.join("postgres").exists().then_some((v, bin))
        })
        .collect();
    dirs.sort();
    if let Some((_, d)) = dirs.pop() {
        return Some(d);
    }
    let out = Command::new("pg_config").arg("--bindir").output().ok()?;
    let d = PathBuf::from(String::from_utf8_lossy(&out.stdout).trim());
    d.join("postgres").exists().then_some(d)
}

/// The `runuser`/`setpriv` prefix that runs a command as an unprivileged user when root.
fn as_server_user() -> (Vec<String>, Option<(u32, u32)>) {
    if unsafe { libc::geteuid() } != 0 {
        return (Vec::new(), None);
    }
    let pw = std::fs::read_to_string("/etc/passwd").unwrap();
    let ids = pw.lines().find_map(|l| {
        let f: Vec<&str> = l.split(':').collect();
        (f.first() == Some(&"postgres")).then(|| (f[2].parse().unwrap(), f[3].parse().unwrap()))
    });
    let (uid, gid) = ids.unwrap_or((65534, 65534));
    (
        vec![
            "setpriv".into(),
            format!("--reuid={uid}"),
            format!("--regid={gid}"),
            "--clear-groups".into(),
        ],
        Some((uid, gid)),
    )
}

/// A throw-away cluster, killed (and reaped) on drop.
struct Pg {
    _dir: tempfile::TempDir,
    port: u16,
    child: Child,
}

impl Drop for Pg {
    fn drop(&mut self) {
        unsafe { libc::kill(self.child.id() as i32, libc::SIGINT) };
        let _ = self.child.wait();
    }
}

fn start_pg() -> Option<Pg> {
    let Some(bin) = pg_bin() else {
        eprintln!("SKIP: PostgreSQL is not installed (.ci/run installs Debian's postgresql)");
        return None;
    };
    let dir = tempfile::tempdir().unwrap();
    std::fs::set_permissions(dir.path(), std::fs::Permissions::from_mode(0o755)).unwrap();
    let (data, sock) = (dir.path().join("data"), dir.path().join("sock"));
    let (prefix, ids) = as_server_user();
    for d in [&data, &sock] {
        std::fs::create_dir(d).unwrap();
        std::fs::set_permissions(d, std::fs::Permissions::from_mode(0o700)).unwrap();
        if let Some((u, g)) = ids {
            std::os::unix::fs::chown(d, Some(u), Some(g)).unwrap();
        }
    }
    let run = |prog: &Path, args: &[String]| {
        let mut all = prefix.clone();
        all.push(prog.display().to_string());
        all.extend(args.iter().cloned());
        let mut c = Command::new(&all[0]);
        c.args(&all[1..]);
        c
    };
    // --no-sync: a throw-away cluster need not survive a power cut.
    let out = run(
        &bin.join("initdb"),
        &[
            "-D".into(),
            data.display().to_string(),
            "-U".into(),
            "postgres".into(),
            "--auth=trust".into(),
            "-E".into(),
            "UTF8".into(),
            "--locale=C".into(),
            "--no-instructions".into(),
            "-N".into(),
        ],
    )
    .output()
    .unwrap();
    assert!(out.status.success(), "initdb: {out:?}");
    let port = testbed::ports::free_port_block(1);
    let log = std::fs::File::create(dir.path().join("server.log")).unwrap();
    let child = run(
        &bin.join("postgres"),
        &[
            "-D".into(),
            data.display().to_string(),
            "-c".into(),
            "listen_addresses=127.0.0.1".into(),
            "-c".into(),
            format!("port={port}"),
            "-c".into(),
            format!("unix_socket_directories={}", sock.display()),
            "-c".into(),
            "fsync=off".into(),
        ],
    )
    .stdin(Stdio::null())
    .stdout(log.try_clone().unwrap())
    .stderr(log)
    .spawn()
    .unwrap();
    let pg = Pg {
        _dir: dir,
        port,
        child,
    };
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        let st = Command::new(bin.join("pg_isready"))
            .args(["-h", "127.0.0.1", "-p", &port.to_string(), "-U", "postgres"])
            .output()
            .unwrap()
            .status;
        if st.success() {
            break;
        }
        assert!(Instant::now() < deadline, "PostgreSQL did not start");
        std::thread::sleep(Duration::from_millis(50));
    }
    Some(pg)
}

fn client(port: u16, db: &str) -> postgres::Client {
    postgres::Config::new()
        .host("127.0.0.1")
        .port(port)
        .user("postgres")
        .dbname(db)
        .connect(postgres::NoTls)
        .unwrap()
}

fn tool(name: &str, args: &[String], cwd: &Path) -> Output {
    Command::new(env!("CARGO_BIN_EXE_testbed"))
        .arg("emulate")
        .arg(name)
        .args(args)
        .current_dir(cwd)
        .env_remove("PGPASSWORD")
        .env_remove("TESTBED_KNOBS")
        .output()
        .unwrap()
}

fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

/// Numbers (with the padding before them, which depends on their width) replaced by ` N`, so
/// two outputs of different runs compare by shape.
fn shape(s: &str) -> String {
    let re = regex::Regex::new(r" *[0-9]+(\.[0-9]+)?(E[+-][0-9]+)?").unwrap();
    re.replace_all(s, " N").into_owned()
}

/// Every key path of a JSON value (so two results files compare by structure).
fn key_paths(v: &serde_json::Value, prefix: &str, out: &mut BTreeSet<String>) {
    if let Some(m) = v.as_object() {
        for (k, v) in m {
            let p = format!("{prefix}.{k}");
            out.insert(p.clone());
            key_paths(v, &p, out);
        }
    }
}

fn keys(text: &str) -> BTreeSet<String> {
    let mut out = BTreeSet::new();
    key_paths(&serde_json::from_str(text).unwrap(), "", &mut out);
    out
}

#[test]
fn loader_and_runner_against_a_real_postgresql() {
    let Some(pg) = start_pg() else { return };
    let work = tempfile::tempdir().unwrap();
    let w = work.path();
    let port = pg.port.to_string();
    // `head -30` of a real file ends on a tags line whose values line was cut: the real loader
    // reads the values line after every tags line (`NextItem`) and stops with `scan error:
    // <nil>` (exit 1) there, so the rows end before it.
    let head30 = fixture("data/cpu-timescaledb.head30.txt");
    let cut = w.join("cpu-timescaledb.head30.dat");
    std::fs::write(&cut, &head30).unwrap();
    let data = w.join("cpu-timescaledb.dat");
    let whole = &head30[..head30.trim_end().rfind('\n').unwrap() + 1];
    assert!(!whole
        .trim_end()
        .lines()
        .last()
        .unwrap()
        .starts_with("tags,"));
    std::fs::write(&data, whole).unwrap();
    let conn = |extra: &[&str]| -> Vec<String> {
        let mut a = vec![
            "--host=127.0.0.1".to_string(),
            format!("--port={port}"),
            "--user=postgres".to_string(),
            "--db-name=benchmark".to_string(),
        ];
        a.extend(extra.iter().map(|s| s.to_string()));
        a
    };
    let load = |extra: &[&str]| tool("tsbs_load_timescaledb", &conn(extra), w);
    let file = format!("--file={}", data.display());

    let out = load(&[
        "--use-hypertable=false",
        &format!("--file={}", cut.display()),
    ]);
    assert_eq!(out.status.code(), Some(1), "{out:?}");
    assert!(
        text(&out.stderr).ends_with(" scan error: <nil>\n"),
        "{}",
        text(&out.stderr)
    );

    // (a) Hypertable on plain PostgreSQL: the real failure, tables and indexes left behind.
    let out = load(&[
        "--workers=8",
        "--batch-size=10000",
        "--use-hypertable=true",
        &file,
    ]);
    assert_eq!(out.status.code(), Some(2), "{out:?}");
    assert_eq!(
        text(&out.stdout),
        fixture("load/fail-hypertable-w8-b10000.stdout.txt")
    );
    // The server's answer depends on this machine: without the extension (the fixture's
    // machine) it is not available; built and installed but not preloaded (this cluster's
    // settings never preload it), PostgreSQL refuses the CREATE EXTENSION with a FATAL.
    let installed = std::fs::read_dir("/usr/share/postgresql").is_ok_and(|rd| {
        rd.flatten()
            .any(|v| v.path().join("extension/timescaledb.control").is_file())
    });
    let got = text(&out.stderr);
    if installed {
        // The FATAL closes the session: the stand-in's client (the postgres crate) sometimes
        // sees the closed socket before it reads the message.
        assert!(
            [
                "panic: FATAL: extension \"timescaledb\" must be preloaded (SQLSTATE XX000)",
                "panic: connection closed"
            ]
            .contains(&first_line(&got)),
            "{got}"
        );
    } else {
        assert_eq!(
            first_line(&got),
            first_line(&fixture("load/fail-hypertable-w8-b10000.stderr.txt"))
        );
    }
    let mut b = client(pg.port, "benchmark");
    let n: i64 = b.query_one("SELECT count(*) FROM cpu", &[]).unwrap().get(0);
    assert_eq!(n, 0);
    drop(b);

    // (b) Plain, 2 workers x batch 3: the real stdout's shape, the real results keys.
    let res = w.join("load.json");
    let out = load(&[
        "--workers=2",
        "--batch-size=3",
        "--use-hypertable=false",
        &file,
        &format!("--results-file={}", res.display()),
    ]);
    assert_eq!(out.status.code(), Some(0), "{out:?}");
    assert_eq!(text(&out.stderr), "");
    let stdout = text(&out.stdout);
    let real = fixture("load/success-plain-w2-b3000.stdout.txt");
    assert_eq!(
        shape(&stdout).replace(&shape(&res.display().to_string()), "R"),
        shape(&real).replace(&shape("/srv/bench/load/plain-w2-b3000.json"), "R")
    );
    // head30 holds 13 complete rows of 10 fields.
    assert!(stdout.contains("loaded 130 metrics in "), "{stdout}");
    assert!(stdout.contains("loaded 13 rows in "), "{stdout}");
    let got = std::fs::read_to_string(&res).unwrap();
    assert_eq!(
        keys(&got),
        keys(&fixture("load/success-plain-w2-b3000.results.json"))
    );
    let got: serde_json::Value = serde_json::from_str(&got).unwrap();
    assert_eq!(got["Totals"]["rowCount"], 13);
    assert_eq!(got["RunnerConfig"]["batch-size"], 3);

    // The schema of load/schema-after-plain-load.txt: columns and the five indexes.
    let mut b = client(pg.port, "benchmark");
    let cols = |b: &mut postgres::Client, t: &str| -> Vec<(String, String)> {
        b.query(
            "SELECT column_name::text, data_type::text FROM information_schema.columns WHERE table_name = $1 ORDER BY ordinal_position",
            &[&t],
        )
        .unwrap()
        .iter()
        .map(|r| (r.get(0), r.get(1)))
        .collect()
    };
    let schema = fixture("load/schema-after-plain-load.txt");
    let real_cols = |table: &str| -> Vec<(String, String)> {
        let start = schema.find(&format!("Table \"public.{table}\"")).unwrap();
        schema[start..]
            .lines()
            .skip(3)
            .take_while(|l| !l.starts_with("Indexes:"))
            .map(|l| {
                let f: Vec<&str> = l.split('|').map(str::trim).collect();
                (f[0].to_string(), f[1].to_string())
            })
            .collect()
    };
    let cpu = cols(&mut b, "cpu");
    let real = real_cols("cpu");
    assert_eq!(cpu.len(), real.len());
    for ((n, t), (rn, rt)) in cpu.iter().zip(&real) {
        assert_eq!(n, rn);
        assert_eq!(t, rt, "{n}");
    }
    let tags: Vec<String> = cols(&mut b, "tags").into_iter().map(|c| c.0).collect();
    let real_tags: Vec<String> = real_cols("tags").into_iter().map(|c| c.0).collect();
    assert_eq!(tags, real_tags);
    let idx: BTreeSet<String> = b
        .query(
            "SELECT indexname::text FROM pg_indexes WHERE schemaname = 'public'",
            &[],
        )
        .unwrap()
        .iter()
        .map(|r| r.get(0))
        .collect();
    let real_idx: BTreeSet<String> = [
        "cpu_tags_id_time_idx",
        "cpu_time_idx",
        "tags_hostname_idx",
        "tags_pkey",
        "uniq1",
    ]
    .into_iter()
    .filter(|i| schema.contains(&format!("\"{i}\"")))
    .map(str::to_string)
    .collect();
    assert_eq!(idx, real_idx);
    let n: i64 = b.query_one("SELECT count(*) FROM cpu", &[]).unwrap().get(0);
    assert_eq!(n, 13);
    let n: i64 = b
        .query_one("SELECT count(*) FROM tags", &[])
        .unwrap()
        .get(0);
    assert_eq!(n, 10);
    // The sample rows of the schema fixture: host_0's first cpu values. (Its tags id is 1 only
    // when one worker meets every host first: two workers race for the sequence, as the real
    // loader's do.)
    let r = b
        .query_one(
            "SELECT count(DISTINCT t.id), min(c.time)::text FROM cpu c JOIN tags t ON t.id = c.tags_id",
            &[],
        )
        .unwrap();
    assert_eq!(r.get::<_, i64>(0), 10);
    assert_eq!(r.get::<_, String>(1), "2023-06-11 00:00:00+00");
    let r = b
        .query_one(
            "SELECT t.id, c.time::text, c.usage_user, c.usage_guest_nice FROM cpu c JOIN tags t ON t.id = c.tags_id WHERE t.hostname = 'host_0' ORDER BY c.time LIMIT 1",
            &[],
        )
        .unwrap();
    assert_eq!(r.get::<_, String>(1), "2023-06-11 00:00:00+00");
    assert_eq!((r.get::<_, f64>(2), r.get::<_, f64>(3)), (58.0, 38.0));

    // (c) Another session on the database: the real DROP failure, byte for byte.
    let out = load(&["--use-hypertable=false", &file]);
    assert_eq!(out.status.code(), Some(2), "{out:?}");
    assert_eq!(
        text(&out.stdout),
        fixture("load/fail-drop-while-connected.stdout.txt")
    );
    assert_eq!(
        first_line(&text(&out.stderr)),
        first_line(&fixture("load/fail-drop-while-connected.stderr.txt"))
    );
    drop(b);

    // (d) Abort on exist.
    let out = load(&["--use-hypertable=false", "--do-abort-on-exist=true", &file]);
    assert_eq!(out.status.code(), Some(2));
    assert_eq!(text(&out.stdout), "");
    assert_eq!(
        first_line(&text(&out.stderr)),
        first_line(&fixture("load/fail-abort-on-exist.stderr.txt"))
    );

    // (e) A missing database without --do-create-db: fails on the first statement.
    let out = tool(
        "tsbs_load_timescaledb",
        &[
            "--host=127.0.0.1".into(),
            format!("--port={port}"),
            "--user=postgres".into(),
            "--db-name=nosuchdb".into(),
            "--use-hypertable=false".into(),
            "--do-create-db=false".into(),
            file.clone(),
        ],
        w,
    );
    assert_eq!(out.status.code(), Some(2));
    assert_eq!(
        text(&out.stdout),
        fixture("load/fail-no-create-missing-db.stdout.txt")
    );
    assert_eq!(
        first_line(&text(&out.stderr)),
        first_line(&fixture("load/fail-no-create-missing-db.stderr.txt"))
    );

    // (f) Wrong user, wrong port.
    let out = tool(
        "tsbs_load_timescaledb",
        &[
            "--host=127.0.0.1".into(),
            format!("--port={port}"),
            "--user=nosuchuser".into(),
            "--db-name=benchmark".into(),
            "--use-hypertable=false".into(),
            file.clone(),
        ],
        w,
    );
    assert_eq!(out.status.code(), Some(2));
    assert_eq!(
        first_line(&text(&out.stderr)),
        first_line(&fixture("load/fail-wrong-user.stderr.txt"))
    );
    let closed = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let out = tool(
        "tsbs_load_timescaledb",
        &[
            "--host=127.0.0.1".into(),
            format!("--port={closed}"),
            "--user=postgres".into(),
            "--db-name=benchmark".into(),
            "--use-hypertable=false".into(),
            file.clone(),
        ],
        w,
    );
    assert_eq!(out.status.code(), Some(2));
    assert_eq!(
        first_line(&text(&out.stderr)),
        first_line(&fixture("load/fail-wrong-port.stderr.txt"))
            .replace("15499", &closed.to_string())
    );

    // (g) An influx-format file: log.Fatal, exit 1, before any database work.
    let influx = w.join("cpu-influx.dat");
    std::fs::write(&influx, fixture("data/cpu-influx.head30.txt")).unwrap();
    let out = load(&[
        "--use-hypertable=false",
        &format!("--file={}", influx.display()),
    ]);
    assert_eq!(out.status.code(), Some(1));
    let want = fixture("load/fail-influx-input.stderr.txt");
    assert_eq!(
        text(&out.stderr)
            .split_once(' ')
            .unwrap()
            .1
            .split_once(' ')
            .unwrap()
            .1,
        want.split_once(' ').unwrap().1.split_once(' ').unwrap().1
    );

    // (h) A password on the command line is refused; from PGPASSWORD it is used (trust
    // accepts any).
    let out = load(&["--pass=hunter2", "--use-hypertable=false", &file]);
    assert_eq!(out.status.code(), Some(2));
    assert!(text(&out.stderr).contains("--pass was given on the command line"));
    let out = Command::new(env!("CARGO_BIN_EXE_testbed"))
        .args(["emulate", "tsbs_load_timescaledb"])
        .args(conn(&["--use-hypertable=false", &file]))
        .env("PGPASSWORD", "hunter2")
        .current_dir(w)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{out:?}");

    // Batched INSERT instead of COPY, and --limit: the same rows, fewer of them.
    let out = load(&[
        "--use-hypertable=false",
        "--use-insert=true",
        "--limit=5",
        &file,
    ]);
    assert_eq!(out.status.code(), Some(0), "{out:?}");
    assert!(text(&out.stdout).contains("loaded 5 rows in "));
    let mut b = client(pg.port, "benchmark");
    let r = b
        .query_one("SELECT count(*), min(time)::text FROM cpu", &[])
        .unwrap();
    assert_eq!(r.get::<_, i64>(0), 5);
    assert_eq!(r.get::<_, String>(1), "2023-06-11 00:00:00+00");
    drop(b);
    // The full load again, for the runner.
    let out = load(&["--use-hypertable=false", &file]);
    assert_eq!(out.status.code(), Some(0), "{out:?}");

    // The runner. Real query files against the loaded database.
    let rconn = |extra: &[&str]| -> Vec<String> {
        let mut a = vec![
            "--hosts=127.0.0.1".to_string(),
            format!("--port={port}"),
            "--user=postgres".to_string(),
            "--db-name=benchmark".to_string(),
            "--workers=1".to_string(),
        ];
        a.extend(extra.iter().map(|s| s.to_string()));
        a
    };
    let run = |extra: &[&str]| tool("tsbs_run_queries_timescaledb", &rconn(extra), w);
    let q = |p: &str| format!("--file={FIX}/queries/{p}.gob");
    let res = w.join("run.json");
    let out = run(&[
        &q("timescaledb-plainpg/lastpoint"),
        &format!("--results-file={}", res.display()),
    ]);
    assert_eq!(out.status.code(), Some(0), "{out:?}");
    assert_eq!(text(&out.stderr), "");
    let real = fixture("run/success-plainpg-lastpoint.stdout.txt");
    assert_eq!(
        shape(&text(&out.stdout)).replace(&shape(&res.display().to_string()), "R"),
        shape(&real).replace(&shape("/srv/bench/runs/notb/lastpoint.json"), "R")
    );
    let got = std::fs::read_to_string(&res).unwrap();
    assert_eq!(
        keys(&got),
        keys(&fixture("run/success-plainpg-lastpoint.results.json"))
    );

    let out = run(&[&q("timescaledb-plainpg/single-groupby-1-1-1")]);
    assert_eq!(out.status.code(), Some(0), "{out:?}");
    assert!(text(&out.stdout).contains("Run complete after 10 queries with 1 workers"));

    // --prewarm-queries: each query twice, cold and warm blocks, the real results keys.
    let res = w.join("prewarm.json");
    let out = run(&[
        "--prewarm-queries",
        &q("timescaledb-plainpg/single-groupby-1-1-1"),
        &format!("--results-file={}", res.display()),
    ]);
    assert_eq!(out.status.code(), Some(0), "{out:?}");
    let real = fixture("run/prewarm-single-groupby-1-1-1.stdout.txt");
    let blocks = |s: &str| -> Vec<String> {
        shape(s)
            .lines()
            .take(9)
            .map(|l| l.split(" :").next().unwrap().trim_end().to_string())
            .collect()
    };
    assert_eq!(blocks(&text(&out.stdout)), blocks(&real));
    assert!(text(&out.stdout).contains("count: 20\n"));
    let got = std::fs::read_to_string(&res).unwrap();
    assert_eq!(
        keys(&got),
        keys(&fixture("run/prewarm-single-groupby-1-1-1.results.json"))
    );

    // time_bucket SQL on plain PostgreSQL: the real panic, stdout empty.
    let out = run(&[&q("timescaledb-default/single-groupby-1-1-1")]);
    assert_eq!(out.status.code(), Some(2));
    assert_eq!(text(&out.stdout), "");
    assert_eq!(
        first_line(&text(&out.stderr)),
        first_line(&fixture(
            "run/fail-time_bucket-single-groupby-1-1-1.stderr.txt"
        ))
    );

    // --burn-in alone panics before connecting; with --max-queries it skips the first.
    let out = tool(
        "tsbs_run_queries_timescaledb",
        &[
            "--hosts=127.0.0.1".into(),
            format!("--port={closed}"),
            "--burn-in=1".into(),
            q("timescaledb-plainpg/lastpoint"),
        ],
        w,
    );
    assert_eq!(out.status.code(), Some(2));
    assert_eq!(
        text(&out.stdout),
        fixture("run/fail-burnin-without-max-queries.stdout.txt")
    );
    assert_eq!(
        first_line(&text(&out.stderr)),
        first_line(&fixture("run/fail-burnin-without-max-queries.stderr.txt"))
    );
    let out = run(&[
        "--burn-in=1",
        "--max-queries=10",
        &q("timescaledb-plainpg/lastpoint"),
    ]);
    assert_eq!(out.status.code(), Some(0), "{out:?}");
    let real = fixture("run/burnin1-max10-lastpoint.stdout.txt");
    let got = text(&out.stdout);
    assert_eq!(first_line(&shape(&got)), first_line(&shape(&real)));
    assert!(got.starts_with("Run complete after 9 queries"), "{got}");

    // The hazard: an influx file "passes" with empty SQL, exit 0, influx labels.
    let out = run(&[&q("influx/lastpoint")]);
    assert_eq!(out.status.code(), Some(0), "{out:?}");
    let real = fixture("run/mismatch-influx-queryfile-lastpoint.stdout.txt");
    assert_eq!(shape(&text(&out.stdout)), shape(&real));

    // Wrong database, wrong port, missing file.
    let out = tool(
        "tsbs_run_queries_timescaledb",
        &[
            "--hosts=127.0.0.1".into(),
            format!("--port={port}"),
            "--db-name=nosuchdb".into(),
            q("timescaledb-plainpg/lastpoint"),
        ],
        w,
    );
    assert_eq!(out.status.code(), Some(2));
    assert_eq!(
        first_line(&text(&out.stderr)),
        first_line(&fixture("run/fail-wrong-db.stderr.txt"))
    );
    let out = tool(
        "tsbs_run_queries_timescaledb",
        &[
            "--hosts=127.0.0.1".into(),
            format!("--port={closed}"),
            q("timescaledb-plainpg/lastpoint"),
        ],
        w,
    );
    assert_eq!(out.status.code(), Some(2));
    assert_eq!(
        first_line(&text(&out.stderr)),
        first_line(&fixture("run/fail-wrong-port.stderr.txt"))
            .replace("15499", &closed.to_string())
    );
    let out = run(&["--file=/srv/bench/queries/nosuch.gob"]);
    assert_eq!(out.status.code(), Some(2));
    assert_eq!(
        first_line(&text(&out.stderr)),
        first_line(&fixture("run/fail-missing-file.stderr.txt"))
    );
    drop(pg);
}

fn generate(tool_name: &str, args: &[&str], cwd: &Path) -> Output {
    let args: Vec<String> = args.iter().map(|s| s.to_string()).collect();
    tool(tool_name, &args, cwd)
}

const DATA_ARGS: [&str; 6] = [
    "--use-case=cpu-only",
    "--seed=123",
    "--scale=8",
    "--timestamp-start=2023-06-11T00:00:00Z",
    "--timestamp-end=2023-06-12T00:00:00Z",
    "--log-interval=10s",
];

/// The stand-in generators' `--format=timescaledb`: the real header and line grammar, the
/// same rows as their influx format; its query files hold SQL that real PostgreSQL runs.
#[test]
fn generated_timescaledb_data_and_queries_run_on_a_real_postgresql() {
    let work = tempfile::tempdir().unwrap();
    let w = work.path();
    let mut args = DATA_ARGS.to_vec();
    args.push("--format=timescaledb");
    let ts = generate("tsbs_generate_data", &args, w);
    assert_eq!(ts.status.code(), Some(0), "{ts:?}");
    assert_eq!(text(&ts.stderr), "");
    let ts = text(&ts.stdout);
    let mut args = DATA_ARGS.to_vec();
    args.push("--format=influx");
    let influx = text(&generate("tsbs_generate_data", &args, w).stdout);
    let real = fixture("data/cpu-timescaledb.head30.txt");
    let lines: Vec<&str> = ts.lines().collect();
    assert_eq!(lines[..3], real.lines().take(3).collect::<Vec<_>>()[..]);
    let rows = influx.lines().count();
    assert_eq!(rows, 8 * 8640);
    assert_eq!(lines.len(), 3 + 2 * rows);
    let tags_re = regex::Regex::new(r"^tags,hostname=host_\d+,region=[^,=]+,datacenter=[^,=]+,rack=\d+,os=[^,=]+,arch=[^,=]+,team=[^,=]+,service=\d+,service_version=\d+,service_environment=[^,=]+$").unwrap();
    let cpu_re = regex::Regex::new(r"^cpu,\d{19}(,\d+){10}$").unwrap();
    for l in real.lines().skip(3).chain(lines[3..].iter().copied()) {
        assert!(tags_re.is_match(l) || cpu_re.is_match(l), "{l}");
    }
    // Row for row the influx rows' values.
    for (i, inf) in influx.lines().enumerate().step_by(997) {
        let (tags, rest) = inf.strip_prefix("cpu,").unwrap().split_once(' ').unwrap();
        let (fields, t) = rest.rsplit_once(' ').unwrap();
        assert_eq!(lines[3 + 2 * i], format!("tags,{tags}"));
        let vals: Vec<&str> = fields
            .split(',')
            .map(|kv| kv.split_once('=').unwrap().1.trim_end_matches('i'))
            .collect();
        assert_eq!(lines[4 + 2 * i], format!("cpu,{t},{}", vals.join(",")));
    }

    let Some(pg) = start_pg() else { return };
    let port = pg.port.to_string();
    let data = w.join("cpu-timescaledb.dat");
    std::fs::write(&data, &ts).unwrap();
    let out = tool(
        "tsbs_load_timescaledb",
        &[
            "--host=127.0.0.1".into(),
            format!("--port={port}"),
            "--user=postgres".into(),
            "--db-name=benchmark".into(),
            "--workers=2".into(),
            "--batch-size=5000".into(),
            "--use-hypertable=false".into(),
            format!("--file={}", data.display()),
        ],
        w,
    );
    assert_eq!(out.status.code(), Some(0), "{out:?}");
    assert!(text(&out.stdout).contains(&format!("loaded {rows} rows in ")));
    let mut b = client(pg.port, "benchmark");
    let n: i64 = b.query_one("SELECT count(*) FROM cpu", &[]).unwrap().get(0);
    assert_eq!(n as usize, rows);
    b.batch_execute("ANALYZE").unwrap();
    drop(b);

    let query_args = |t: &str, extra: &[&str]| -> Vec<String> {
        let mut a: Vec<String> = [
            "--use-case=devops",
            "--seed=123",
            "--scale=8",
            "--timestamp-start=2023-06-11T00:00:00Z",
            "--timestamp-end=2023-06-12T00:00:01Z",
            "--queries=3",
            "--format=timescaledb",
        ]
        .iter()
        .map(|s| s.to_string())
        .collect();
        a.push(format!("--query-type={t}"));
        a.extend(extra.iter().map(|s| s.to_string()));
        a
    };
    let run = |file: &Path| {
        tool(
            "tsbs_run_queries_timescaledb",
            &[
                "--hosts=127.0.0.1".into(),
                format!("--port={port}"),
                "--db-name=benchmark".into(),
                format!("--file={}", file.display()),
            ],
            w,
        )
    };
    // Plain PostgreSQL flags: every type's SQL runs.
    for t in testbed::emulators::tsbs_generate::QUERY_TYPES {
        let out = tool(
            "tsbs_generate_queries",
            &query_args(t, &["--timescale-use-time-bucket=false"]),
            w,
        );
        assert_eq!(out.status.code(), Some(0), "{t}: {out:?}");
        let qs = read_queries(&out.stdout).unwrap();
        assert_eq!(qs.len(), 3);
        assert!(qs[0].human_label.starts_with("TimescaleDB "), "{t}");
        assert!(!qs[0].sql_query.contains("time_bucket"), "{t}");
        assert_eq!(
            text(&out.stderr),
            format!("{}: 3 points\n", qs[0].human_label)
        );
        let file = w.join(format!("{t}.gob"));
        std::fs::write(&file, &out.stdout).unwrap();
        let out = run(&file);
        assert_eq!(out.status.code(), Some(0), "{t}: {}", text(&out.stderr));
        assert!(text(&out.stdout).contains("Run complete after 3 queries"));
    }
    // The labels and SQL shape of the real single-groupby-1-1-1 (its decoded file).
    let out = tool(
        "tsbs_generate_queries",
        &query_args(
            "single-groupby-1-1-1",
            &["--timescale-use-time-bucket=false"],
        ),
        w,
    );
    let ours = read_queries(&out.stdout).unwrap();
    let real = read_queries(
        &std::fs::read(format!(
            "{FIX}/queries/timescaledb-plainpg/single-groupby-1-1-1.gob"
        ))
        .unwrap(),
    )
    .unwrap();
    let sql_shape = |s: &str| {
        let re = regex::Regex::new(r"'[^']*'").unwrap();
        re.replace_all(s, "'X'").into_owned()
    };
    assert_eq!(ours[0].human_label, real[0].human_label);
    assert_eq!(sql_shape(&ours[0].sql_query), sql_shape(&real[0].sql_query));
    // With the default time_bucket, plain PostgreSQL fails as the real run did.
    let out = tool(
        "tsbs_generate_queries",
        &query_args("single-groupby-1-1-1", &[]),
        w,
    );
    let qs = read_queries(&out.stdout).unwrap();
    assert!(qs[0].sql_query.contains("time_bucket('60 seconds', time)"));
    let file = w.join("tb.gob");
    std::fs::write(&file, &out.stdout).unwrap();
    let out = run(&file);
    assert_eq!(out.status.code(), Some(2));
    assert_eq!(
        first_line(&text(&out.stderr)),
        first_line(&fixture(
            "run/fail-time_bucket-single-groupby-1-1-1.stderr.txt"
        ))
    );
    // lastpoint is the same with or without time_bucket (reference §6).
    let a = tool("tsbs_generate_queries", &query_args("lastpoint", &[]), w).stdout;
    let b = tool(
        "tsbs_generate_queries",
        &query_args("lastpoint", &["--timescale-use-time-bucket=false"]),
        w,
    )
    .stdout;
    assert_eq!(a, b);
    assert_eq!(read_queries(&a).unwrap()[0].sql_query, real_lastpoint_sql());
    drop(pg);
}

fn real_lastpoint_sql() -> String {
    let bytes = std::fs::read(format!("{FIX}/queries/timescaledb-plainpg/lastpoint.gob")).unwrap();
    read_queries(&bytes).unwrap()[0].sql_query.clone()
}
