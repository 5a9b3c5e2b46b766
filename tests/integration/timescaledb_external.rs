//! External PostgreSQL targets against this machine's REAL PostgreSQL (skipped, saying why,
//! when there is none): `bench timescaledb all --url postgres://USER@HOST:PORT/DB
//! --password-env VAR` on a server that really asks for a password (scram-sha-256), the
//! password kept out of every file, output and tool command line, and the refusals that come
//! before anything exists (wrong, missing or inline password, TimescaleDB mode without the
//! extension, `--password-env` on a managed workspace, hypertable flags without hypertables).

use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::time::Duration;

use serde_json::{json, Value};

use crate::timescaledb::{pg_bin, pg_env, prepare_pg, ws_dir};
use crate::util::*;

/// The variable the tests name with `--password-env`.
const VAR: &str = "TSBSCTL_T_EXT_PGPASS";

/// A managed workspace's server, served in the background by `tsbsctl timescaledb serve`,
/// then switched to password authentication over TCP: role `bench` (LOGIN CREATEDB, password
/// `password`) and a `pg_hba.conf` that asks every TCP connection for a scram-sha-256
/// password. For the benchmarks it is an external server like any other.
struct PasswordServer {
    _serve: Bg,
    port: u64,
    password: String,
    /// A superuser session opened while the server still trusted TCP (kept for checks).
    admin: postgres::Client,
}

/// A connection over TCP as `user`, with `password` when given.
fn connect(
    port: u64,
    user: &str,
    db: &str,
    password: Option<&str>,
) -> Result<postgres::Client, postgres::Error> {
    let mut c = postgres::Config::new();
    c.host("127.0.0.1")
        .port(port as u16)
        .user(user)
        .dbname(db)
        .connect_timeout(Duration::from_secs(5));
    if let Some(p) = password {
        c.password(p);
    }
    c.connect(postgres::NoTls)
}

fn password_server(env: &TestEnv, id: &str) -> PasswordServer {
    let port = prepare_pg(env, id)["data"]["manifest"]["ports"]["postgres"]
        .as_u64()
        .unwrap();
    let mut serve = Bg::spawn(env, &["timescaledb", "serve", "--database-id", id]);
    serve.wait_serving(|| connect(port, "postgres", "postgres", None).is_ok());
    // The ready line names the endpoint the way PostgreSQL clients take it.
    let endpoint = format!("postgres://postgres@127.0.0.1:{port}/benchmark");
    assert!(
        serve.stderr().contains(&format!("at {endpoint} ")),
        "{}",
        serve.stderr()
    );
    let mut admin = connect(port, "postgres", "postgres", None).unwrap();
    let password = format!("Pw-{}-{}-x9", std::process::id(), unique());
    admin
        .batch_execute(&format!(
            "CREATE ROLE bench LOGIN CREATEDB PASSWORD '{password}'"
        ))
        .unwrap();
    let hba = ws_dir(env, id).join("data/pg_hba.conf");
    std::fs::write(
        &hba,
        // `nosuchrole` gets in without a password, so the server says the role is unknown.
        "local all all trust\nhost all nosuchrole 127.0.0.1/32 trust\nhost all all 127.0.0.1/32 scram-sha-256\nhost all all ::1/128 scram-sha-256\n",
    )
    .unwrap();
    admin.batch_execute("SELECT pg_reload_conf()").unwrap();
    // Reloaded once a connection without the password is refused (the server's own answer).
    assert!(
        wait_until(Duration::from_secs(15), || {
            connect(port, "postgres", "postgres", None).is_err()
        }),
        "the server still lets TCP connections in without a password"
    );
    assert!(
        connect(port, "bench", "postgres", Some("not-the-password")).is_err(),
        "a wrong password is refused"
    );
    connect(port, "bench", "postgres", Some(&password)).expect("the password is accepted");
    PasswordServer {
        _serve: serve,
        port,
        password,
        admin,
    }
}

/// The run directories of the `timescaledb` product in `env`.
fn runs(env: &TestEnv) -> Vec<PathBuf> {
    std::fs::read_dir(env.root.join("timescaledb/runs"))
        .map(|rd| rd.flatten().map(|e| e.path()).collect())
        .unwrap_or_default()
}

/// The JSON lines the TSBS stand-ins wrote through their `record` knob.
fn recorded_calls(path: &Path) -> Vec<Value> {
    std::fs::read_to_string(path)
        .unwrap_or_default()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

/// The whole flow on a password-protected server: the refusals first (nothing on disk), then
/// `bench timescaledb all` with `--url` and `--password-env` on the smoke profile; the rows
/// counted, the SQL footprint, the label, the target as recorded, and the password nowhere:
/// not in the state root, not in tsbsctl's output, not in the loader's or runner's argv (they
/// got it as `PGPASSWORD`, no config file).
#[test]
fn an_external_server_with_a_password() {
    if pg_bin().is_none() {
        eprintln!("SKIP an_external_server_with_a_password: no PostgreSQL under /usr/lib/postgresql (.ci/run installs it)");
        return;
    }
    let (mut gt, knobs_dir) = crate::world::unprepared();
    // The managed server runs as an unprivileged user through runuser (/usr/sbin).
    gt.env.env(
        "PATH",
        format!("{}:/bin:/usr/bin:/usr/sbin:/sbin", crate::world::git_dir()),
    );
    std::fs::set_permissions(gt.env.path(), std::fs::Permissions::from_mode(0o755)).unwrap();
    gt.run(&["env", "prepare"]).ok();
    let w = crate::world::World { gt, knobs_dir };
    let record = w.gt.env.path().join("tool-calls.jsonl");
    w.tool_knobs("tsbs_timescaledb", json!({"record": record}));
    let installed = w.gt.env.run_json(&["timescaledb", "install"]).ok().json();
    let has_extension = !installed["data"]["postgresql"]["timescaledb"].is_null();

    let mut srv = password_server(&w.gt.env, "ext1");
    let url = format!("postgres://bench@127.0.0.1:{}/tsbs_ext", srv.port);
    let secret = srv.password.clone();
    let bench = |env: &TestEnv, url: &str, extra: &[&str]| -> Run {
        let mut a = vec!["bench", "timescaledb", "all", "--url", url];
        a.extend_from_slice(extra);
        a.extend(crate::world::tiny());
        for t in crate::world::TYPES {
            a.extend(["--query-type", t]);
        }
        a.extend(["--queries", "3", "--json"]);
        env.run(&a)
    };
    let pg = ["--mode", "postgresql", "--database-mode", "create"];

    // No password where the server asks for one: the input is wrong, exit 2, nothing written.
    let mut env = TestEnv::new();
    env.root = w.gt.env.root.clone();
    env.envs = w.gt.env.envs.clone();
    let r = bench(&env, &url, &pg);
    r.code(2).says("password").says("--password-env");
    // A wrong password: the server's refusal, exit 2.
    let mut wrong = TestEnv::new();
    wrong.root = env.root.clone();
    wrong.envs = env.envs.clone();
    wrong.env(VAR, "not-the-password");
    let mut a = pg.to_vec();
    a.extend(["--password-env", VAR]);
    let r = bench(&wrong, &url, &a);
    r.code(2)
        .says("password authentication failed for user \"bench\"")
        .says("--password-env");
    assert!(!r.stdout.contains("not-the-password") && !r.stderr.contains("not-the-password"));
    // The variable named but not set (trial 2 N17: it is a password, not a token).
    bench(&env, &url, &a)
        .code(2)
        .says(&format!("environment variable {VAR} is not set"))
        .says(&format!("export {VAR}=<password>"));
    // Trial 2 N17: an unknown role was hinted as a missing password; a refused connection
    // had no hint.
    let nosuch = format!("postgres://nosuchrole@127.0.0.1:{}/tsbs_ext", srv.port);
    let r = bench(&env, &nosuch, &pg);
    r.code(2)
        .says("does not exist")
        .says("the user (role) in --url");
    assert!(!r.stderr.contains("wants a password"), "{}", r.describe());
    let closed = format!("postgres://bench@127.0.0.1:{}/tsbs_ext", free_port_block(1));
    bench(&env, &closed, &pg).code(1).says("nothing listens at");
    // A password inside the URL is refused without being repeated.
    let inline = format!("postgres://bench:{secret}@127.0.0.1:{}/tsbs_ext", srv.port);
    let r = bench(&env, &inline, &pg);
    r.code(2).says("--url must not hold a password");
    assert_no_secret(&env.root, &secret, &[&r]);
    // A managed workspace trusts local connections: a password there is refused.
    env.run(&[
        "bench",
        "timescaledb",
        "all",
        "--database-id",
        "ext1",
        "--password-env",
        VAR,
    ])
    .code(2)
    .says("--password-env")
    .says("takes no password");
    // Hypertable flags without hypertables are refused before the server is even asked.
    bench(&wrong, &url, &[&a[..], &["--chunk-time", "6h"]].concat())
        .code(2)
        .says("PostgreSQL (no TimescaleDB) has none");
    // TimescaleDB mode on a server without the extension: refused with the hint, never
    // downgraded (with the right password, so the probe gets to ask).
    let mut right = TestEnv::new();
    right.root = env.root.clone();
    right.envs = env.envs.clone();
    right.env(VAR, &secret);
    if has_extension {
        eprintln!("SKIP the no-extension refusal: the timescaledb extension is installed here");
    } else {
        let r = bench(
            &right,
            &url,
            &[
                "--mode",
                "timescaledb",
                "--database-mode",
                "create",
                "--password-env",
                VAR,
            ],
        );
        r.code(2)
            .says("the timescaledb extension is not available on postgres://bench@127.0.0.1")
            .says("--mode postgresql");
    }
    assert!(
        runs(&env).is_empty(),
        "a refusal wrote a run: {:?}",
        runs(&env)
    );
    assert!(
        recorded_calls(&record).is_empty(),
        "a refusal ran a TSBS tool"
    );

    // The run.
    let r = bench(&right, &url, &a);
    r.ok();
    let dir = crate::world::run_dir(&r);
    let s = crate::world::summary(&dir);
    assert_eq!(s["status"], "completed", "{s:#}");
    let rows = s["dataset"]["rows"].as_u64().unwrap();
    assert_eq!(s["row_count"]["actual"], rows, "{:#}", s["row_count"]);
    let v = s["target"]["version"].as_str().unwrap();
    assert_eq!(s["label"], format!("PostgreSQL {v} (no TimescaleDB)"));
    assert_eq!(s["target"]["mode"], "external");
    assert_eq!(s["target"]["endpoint"], url.as_str());
    assert_eq!(s["target"]["database"], "tsbs_ext");
    assert_eq!(s["target"]["auth_token"], true);
    assert!(s["command"]
        .as_str()
        .unwrap()
        .contains(&format!("--password-env {VAR}")));
    let st = &s["storage"];
    for k in ["database_bytes", "table_bytes", "index_bytes"] {
        assert!(st[k].as_u64().unwrap() > 0, "{k}: {st:#}");
    }
    assert!(st["data_dir"].is_null(), "{st:#}");
    for q in s["queries"].as_array().unwrap() {
        assert_eq!(q["status"], "completed", "{q:#}");
    }
    let md = std::fs::read_to_string(dir.join("summary.md")).unwrap();
    assert!(md.contains("| Database (`pg_database_size`) |"), "{md}");
    assert!(
        md.contains("Measured over SQL right after the load, on the external server"),
        "{md}"
    );
    assert!(
        !md.contains("with the server stopped") && !md.contains("Data files"),
        "{md}"
    );
    let m = read_json(&dir.join("manifest.json"));
    // The settings that decide durability, memory and parallelism, as this user reads them
    // in force (the serving workspace is durable by default, from its command line).
    let set = &m["target"]["probe"]["servers"][0]["details"]["settings"];
    assert_eq!(set["synchronous_commit"]["value"], "on", "{set:#}");
    assert_eq!(set["wal_level"]["value"], "replica", "{set:#}");
    assert!(set["shared_buffers"]["source"].is_string(), "{set:#}");
    assert_eq!(m["flags"]["password_env"], VAR);
    assert_eq!(m["flags"]["mode"], "postgresql");
    assert_eq!(m["flags"]["urls"], json!([url]));
    // The data is in the database the URL names, owned by the URL's user.
    let owner: String = srv
        .admin
        .query_one(
            "SELECT pg_get_userbyid(datdba)::text FROM pg_database WHERE datname = 'tsbs_ext'",
            &[],
        )
        .unwrap()
        .get(0);
    assert_eq!(owner, "bench");
    let mut c = connect(srv.port, "bench", "tsbs_ext", Some(&secret)).unwrap();
    let n: i64 = c.query_one("SELECT count(*) FROM cpu", &[]).unwrap().get(0);
    assert_eq!(n as u64, rows);

    // The password: in no file of the state root, not in tsbsctl's output...
    assert_no_secret(&w.gt.env.root, &secret, &[&r]);
    // ...nor in a TSBS tool's argv: they got it as PGPASSWORD, with no config file.
    let calls = recorded_calls(&record);
    let tools: Vec<&str> = calls.iter().map(|c| c["tool"].as_str().unwrap()).collect();
    assert!(tools.contains(&"tsbs_load_timescaledb"), "{tools:?}");
    assert_eq!(
        tools
            .iter()
            .filter(|t| **t == "tsbs_run_queries_timescaledb")
            .count(),
        crate::world::TYPES.len(),
        "{tools:?}"
    );
    for c in &calls {
        let args: Vec<&str> = c["args"]
            .as_array()
            .unwrap()
            .iter()
            .map(|a| a.as_str().unwrap())
            .collect();
        assert!(!args.iter().any(|a| a.contains(&secret)), "{c}");
        assert!(!args.iter().any(|a| a.starts_with("--pass")), "{c}");
        assert!(args.contains(&"--user=bench"), "{c}");
        assert!(args.contains(&"--db-name=tsbs_ext"), "{c}");
        assert!(
            args.contains(&format!("--port={}", srv.port).as_str()),
            "{c}"
        );
        assert_eq!(c["pgpassword_set"], true, "{c}");
        assert_eq!(c["config_files"], json!([]), "{c}");
    }
    // The logs say where the password went, without it.
    let load_log = std::fs::read_to_string(dir.join("logs/load-001.log")).unwrap();
    assert!(
        load_log
            .lines()
            .next()
            .unwrap()
            .ends_with(" # env: PGPASSWORD=<redacted>"),
        "{load_log}"
    );
}

/// `--chunk-time` and `--partitions` shape hypertables: on a postgresql-mode workspace they
/// are refused (exit 2) before its lock, a server or a run exists; a bad value is refused
/// whatever the mode, and so are they on a phase that does not load.
#[test]
fn hypertable_flags_are_refused_without_hypertables() {
    let Some((env, _)) = pg_env("hypertable_flags_are_refused_without_hypertables") else {
        return;
    };
    prepare_pg(&env, "plain1");
    let bench = |extra: &[&str]| {
        let mut a = vec!["bench", "timescaledb"];
        a.extend_from_slice(extra);
        a.extend(["--profile", "smoke"]);
        env.run(&a)
    };
    for flags in [&["--chunk-time", "6h"][..], &["--partitions", "4"][..]] {
        let mut a = vec!["load", "--database-id", "plain1"];
        a.extend_from_slice(flags);
        bench(&a)
            .code(2)
            .says("--chunk-time and --partitions shape TimescaleDB hypertables; PostgreSQL (no TimescaleDB) has none")
            .says("--mode timescaledb");
    }
    bench(&["all", "--database-id", "plain1", "--chunk-time", "12 hours"])
        .code(2)
        .says("is not a positive Go duration");
    bench(&["all", "--database-id", "plain1", "--partitions", "0"])
        .code(2)
        .says("outside 1..=32767");
    bench(&["query", "--database-id", "plain1", "--chunk-time", "6h"])
        .code(2)
        .says("apply to load and all, not query");
    assert!(runs(&env).is_empty(), "{:?}", runs(&env));
    // The workspace was not touched: no server ran, no lock is left.
    let dir = ws_dir(&env, "plain1");
    assert!(!dir.join("data/postmaster.pid").exists());
    env.run(&["workspace", "status", "plain1"])
        .ok()
        .says("free");
}
