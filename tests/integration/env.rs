//! `tsbsctl env prepare|verify|show` against the testbed: a release mirror serving stand-in Go
//! archives and the go.dev index, the `go` emulator, and a fake TSBS repository (real git).

use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::{Duration, Instant};

use serde_json::{json, Value};
use testbed::mirror::{Fault, Mirror};
use testbed::releases::go as go_release;
use testbed::tsbs_repo;
use tsbsctl::environment::TsbsEnv;
use tsbsctl::paths::Root;

use crate::util::{all_files, testbed_bin, wait_bounded, Run, TestEnv};

const TOOLS: [&str; 9] = [
    "tsbs_generate_data",
    "tsbs_generate_queries",
    "tsbs_load_greptime",
    "tsbs_run_queries_influx",
    "tsbs_load_influx3",
    "tsbs_run_queries_influx3",
    "tsbs_load_timescaledb",
    "tsbs_run_queries_timescaledb",
    "tsbs_load_influx2",
];

/// A managed Go version the stand-in mirror vouches for through its index.
const GO: &str = "1.22.5";
/// How long a spawned `env prepare` may take before the test kills it.
const PREPARE_LIMIT: Duration = Duration::from_secs(120);

struct World {
    env: TestEnv,
    mirror: Mirror,
    repo: PathBuf,
    commit: String,
    /// The knob file baked into the published Go and into every tool it builds.
    knobs: PathBuf,
    /// Where `go build` calls are recorded, one JSON line each.
    calls: PathBuf,
    /// Directory first on PATH, for fake system Go binaries.
    fakebin: PathBuf,
    platform: String,
}

fn world() -> World {
    testbed_bin();
    let mut env = TestEnv::new();
    let mirror = Mirror::start().expect("mirror");
    for (k, v) in mirror.env() {
        env.env(k, v);
    }
    let (repo, commit) = tsbs_repo::create(env.path()).expect("fake tsbs repo");
    env.env("TSBSCTL_TSBS_REPO", tsbs_repo::url(&repo));
    env.env("TSBSCTL_TSBS_REV", commit.clone());
    let fakebin = env.path().join("fakebin");
    std::fs::create_dir_all(&fakebin).unwrap();
    // No Go anywhere on PATH unless a test puts one in fakebin; git and sh stay reachable.
    env.env(
        "PATH",
        format!("{}:{}:/bin", fakebin.display(), crate::world::git_dir()),
    );
    // A user GOPATH and GOFLAGS that must never reach the build.
    env.env("GOPATH", "/nonexistent/user-gopath");
    env.env("GOFLAGS", "-mod=vendor");
    let knobs = env.path().join("knobs").join("knobs.json");
    std::fs::create_dir_all(knobs.parent().unwrap()).unwrap();
    let calls = env.path().join("knobs").join("go-calls.jsonl");
    let w = World {
        env,
        mirror,
        repo,
        commit,
        knobs,
        calls,
        fakebin,
        platform: go_release::host_platform(),
    };
    w.set_knobs(json!({}));
    w
}

impl World {
    /// Sets the `go` section of the shared knob file (always recording calls).
    fn set_knobs(&self, mut v: Value) {
        v["record"] = json!(self.calls.display().to_string());
        std::fs::write(&self.knobs, json!({ "go": v }).to_string()).unwrap();
    }

    fn publish(&self, version: &str) -> go_release::Published {
        go_release::publish(&self.mirror, version, &self.platform, &self.knobs)
    }

    /// A fake system `go` reporting `version`, first on PATH.
    fn system_go(&self, version: &str) -> PathBuf {
        let p = self.fakebin.join("go");
        let knobs = self.knobs.display().to_string();
        let script = testbed::wrapper_script(
            "go",
            &[
                ("TESTBED_EMULATED_VERSION", version),
                ("TESTBED_KNOBS", &knobs),
            ],
        );
        std::fs::write(&p, script).unwrap();
        set_mode(&p, 0o755);
        p
    }

    fn go_dir(&self, version: &str) -> PathBuf {
        self.env
            .root
            .join("environment/go")
            .join(version)
            .join(&self.platform)
    }

    fn tsbs_dir(&self) -> PathBuf {
        self.env.root.join("environment/tsbs").join(&self.commit)
    }

    /// The `go build` calls logged so far. The stand-in may be writing its next line right
    /// now, so only complete (newline-terminated) lines count.
    fn builds(&self) -> Vec<Value> {
        let text = std::fs::read_to_string(&self.calls).unwrap_or_default();
        let complete = text.rfind('\n').map_or("", |i| &text[..=i]);
        complete
            .lines()
            .map(|l| serde_json::from_str::<Value>(l).unwrap())
            .filter(|c| c["args"][0] == "build")
            .collect()
    }

    fn go_requests(&self) -> Vec<String> {
        self.mirror
            .requests()
            .into_iter()
            .map(|r| match r.query {
                Some(q) => format!("{}?{q}", r.path),
                None => r.path,
            })
            .collect()
    }

    fn archive_gets(&self, version: &str) -> usize {
        let name = format!("go{version}.{}.tar.gz", self.platform);
        self.mirror
            .requests()
            .iter()
            .filter(|r| r.method == "GET" && r.path.ends_with(&name))
            .count()
    }
}

fn set_mode(p: &Path, mode: u32) {
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(p, std::fs::Permissions::from_mode(mode)).unwrap();
}

fn sha256(p: &Path) -> String {
    use sha2::{Digest, Sha256};
    hex::encode(Sha256::digest(std::fs::read(p).unwrap()))
}

fn statuses(run: &Run) -> Vec<String> {
    let doc = run.json();
    doc["data"]["binaries"]
        .as_array()
        .unwrap_or_else(|| panic!("no binaries\n{}", run.describe()))
        .iter()
        .map(|b| b["status"].as_str().unwrap().to_string())
        .collect()
}

#[test]
fn too_old_system_go_falls_back_to_a_managed_install() {
    let mut w = world();
    let old = w.system_go("1.19.3");
    w.publish(GO);
    // The default managed version is configurable; 1.21.13 itself is pinned to the real
    // archives' checksums, which a stand-in can never match (see the disagreement test).
    w.env.env("TSBSCTL_GO_VERSION", GO);
    let run = w.env.run_json(&["env", "prepare"]);
    run.ok().says("Go 1.19.3 is too old");
    let doc = run.json();
    let go = &doc["data"]["go"];
    assert_eq!(go["source"], "managed", "{}", run.describe());
    assert_eq!(go["status"], "installed");
    assert_eq!(go["version"], GO);
    assert_eq!(go["checksum_source"], "index");
    let binary = PathBuf::from(go["binary"].as_str().unwrap());
    assert!(binary.starts_with(w.go_dir(GO)), "{}", binary.display());
    assert_ne!(binary, old);
    assert_eq!(go["binary_sha256"], sha256(&binary));
    assert_eq!(w.archive_gets(GO), 1);
    assert!(w.go_dir(GO).join("manifest.json").is_file());
    // Every build ran the managed Go.
    assert_eq!(w.builds().len(), TOOLS.len());
}

#[test]
fn acceptable_system_go_is_reused_and_nothing_is_downloaded() {
    let w = world();
    let system = w.system_go("1.22.7");
    w.publish(GO);
    let run = w.env.run_json(&["env", "prepare"]);
    run.ok();
    let doc = run.json();
    let go = &doc["data"]["go"];
    assert_eq!(go["source"], "system", "{}", run.describe());
    assert_eq!(go["version"], "1.22.7");
    assert_eq!(go["binary"], system.display().to_string());
    assert_eq!(go["binary_sha256"], sha256(&system));
    assert_eq!(
        w.go_requests(),
        Vec::<String>::new(),
        "the mirror saw requests"
    );
    assert!(!w.env.root.join("environment/go").exists());
    assert_eq!(statuses(&run), vec!["built"; TOOLS.len()]);
    // Human output names every field a person needs.
    let human = w.env.run(&["env", "show"]);
    human.ok();
    // A system Go that changes after the prepare is caught by verify (offline).
    w.env.run_json(&["env", "verify"]).ok();
    w.system_go("1.22.8");
    w.env
        .run_json(&["env", "verify"])
        .code(4)
        .says("changed")
        .says("tsbsctl env prepare");
    assert_eq!(w.go_requests(), Vec::<String>::new());
    for needle in [
        "Go source: system",
        "Go version: 1.22.7",
        "Go platform:",
        "Go binary SHA-256:",
        "TSBS repo: file://",
        &format!("TSBS commit: {}", w.commit),
    ] {
        human.says(needle);
    }
}

#[test]
fn compiled_pin_and_index_disagreeing_is_an_integrity_error() {
    let w = world();
    // A stand-in 1.21.13 whose index entry (the stand-in's real digest) cannot match the pin.
    let published = w.publish("1.21.13");
    let run = w.env.run_json(&["env", "prepare", "--managed-go"]);
    run.code(4).says("compiled pin");
    assert_eq!(run.json()["error"]["kind"], "integrity");
    assert!(run.stdout.contains(&published.sha256), "{}", run.describe());
    assert_eq!(w.archive_gets("1.21.13"), 0, "nothing may be downloaded");
    assert!(!w.go_dir("1.21.13").exists());

    // With the index unreachable the pin alone decides, so the stand-in archive is refused
    // by its checksum: still integrity, still nothing installed.
    w.mirror.fault(go_release::INDEX_PATH, Fault::Status(503));
    let run = w.env.run_json(&["env", "prepare", "--managed-go"]);
    run.code(4);
    assert!(!w.go_dir("1.21.13").exists());
    // Trial 2 N14: a refused prepare leaves no lock file behind (it left the Go install's).
    let locks: Vec<_> = all_files(&w.env.root)
        .into_iter()
        .filter(|p| p.extension().is_some_and(|e| e == "lock"))
        .collect();
    assert!(locks.is_empty(), "lock files left behind: {locks:?}");
}

#[test]
fn verify_never_touches_the_network_and_full_catches_a_changed_tree() {
    let w = world();
    w.publish(GO);
    w.env.run_json(&["env", "prepare", "--go-version", GO]).ok();
    let seen = w.mirror.requests().len();
    w.env.run_json(&["env", "verify"]).ok();
    let full = w.env.run_json(&["env", "verify", "--full"]);
    full.ok();
    assert_eq!(full.json()["data"]["verified"], "full");
    assert_eq!(w.mirror.requests().len(), seen, "verify used the network");

    // A file in GOROOT changes: the quick check (manifest, bin/go, go version) passes, the
    // full one does not, and the repair command fixes it.
    let readme = w.go_dir(GO).join("README.md");
    set_mode(&readme, 0o644);
    std::fs::write(&readme, "tampered\n").unwrap();
    w.env.run_json(&["env", "verify"]).ok();
    let bad = w.env.run_json(&["env", "verify", "--full"]);
    bad.code(4).says("--reinstall-go");
    assert_eq!(w.mirror.requests().len(), seen, "verify used the network");

    w.env
        .run_json(&["env", "prepare", "--go-version", GO, "--reinstall-go"])
        .ok();
    w.env.run_json(&["env", "verify", "--full"]).ok();

    // A changed TSBS binary is caught too, and `env prepare` rebuilds just that one.
    let tool = w.tsbs_dir().join("bin/tsbs_load_greptime");
    std::fs::write(&tool, "#!/bin/sh\nexit 0\n").unwrap();
    w.env
        .run_json(&["env", "verify"])
        .code(4)
        .says("tsbs_load_greptime");
    let run = w.env.run_json(&["env", "prepare", "--go-version", GO]);
    run.ok();
    let s = statuses(&run);
    assert_eq!(s.iter().filter(|s| *s == "built").count(), 1, "{s:?}");
    w.env.run_json(&["env", "verify"]).ok();
}

#[test]
fn binaries_are_built_once_reused_and_rebuilt_on_request() {
    let w = world();
    w.publish(GO);
    let first = w.env.run_json(&["env", "prepare", "--go-version", GO]);
    first.ok();
    assert_eq!(statuses(&first), vec!["built"; TOOLS.len()]);
    let builds = w.builds();
    assert_eq!(builds.len(), TOOLS.len());
    let bin_dir = w.tsbs_dir().join("bin");
    for (call, tool) in builds.iter().zip(TOOLS) {
        let args: Vec<&str> = call["args"]
            .as_array()
            .unwrap()
            .iter()
            .map(|a| a.as_str().unwrap())
            .collect();
        assert_eq!(args[0..2], ["build", "-o"]);
        assert_eq!(args[3], format!("./cmd/{tool}"));
        let env = &call["env"];
        assert_eq!(env["GOTOOLCHAIN"], "local");
        assert_eq!(env["CGO_ENABLED"], "0");
        assert_eq!(env["GOFLAGS"], "");
        let gopath = env["GOPATH"].as_str().unwrap();
        assert!(gopath.starts_with(w.env.root.to_str().unwrap()), "{gopath}");
        assert!(
            env.get("TSBSCTL_ROOT").is_none(),
            "the build saw the user's env"
        );
        assert!(env["PATH"]
            .as_str()
            .unwrap()
            .starts_with(w.go_dir(GO).join("bin").to_str().unwrap()));
        assert!(call["cwd"].as_str().unwrap().ends_with("/src"));
        // The built tool is a runnable stand-in steered by the same knob file.
        let script = std::fs::read_to_string(bin_dir.join(tool)).unwrap();
        assert!(script.contains(&format!("emulate '{tool}'")), "{script}");
        assert!(script.contains(w.knobs.to_str().unwrap()), "{script}");
    }

    // The manifest records per binary: sha256, Go version and source, time, the command.
    let m: Value =
        serde_json::from_str(&std::fs::read_to_string(w.tsbs_dir().join("manifest.json")).unwrap())
            .unwrap();
    let rec = &m["binaries"]["tsbs_generate_data"];
    assert_eq!(rec["sha256"], sha256(&bin_dir.join("tsbs_generate_data")));
    assert_eq!(rec["go"]["version"], GO);
    assert_eq!(rec["go"]["source"], "managed");
    assert!(rec["built_at"].as_str().unwrap().ends_with('Z'));
    assert_eq!(rec["command"][1], "build");
    assert!(w.tsbs_dir().join("build.log").is_file());

    // The library view later phases use: manifests only.
    let tsbs = TsbsEnv::load(&Root::at(&w.env.root), None).unwrap();
    assert_eq!(tsbs.commit, w.commit);
    assert!(!tsbs.dirty);
    assert_eq!(tsbs.go_version, format!("go{GO}"));
    assert_eq!(tsbs.binaries.len(), TOOLS.len());
    let b = tsbs.binary("tsbs_run_queries_influx3").unwrap();
    assert_eq!(b.sha256, sha256(&b.path));
    assert_eq!(
        tsbs.binary("tsbs_load_cassandra").unwrap_err().exit_code(),
        1
    );
    // What was built runs as the TSBS tool's stand-in (strict flags, like pflag).
    let loader = tsbs.binary("tsbs_load_greptime").unwrap();
    let out = std::process::Command::new(&loader.path)
        .arg("--no-such-flag")
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("unknown flag: --no-such-flag"));

    let second = w.env.run_json(&["env", "prepare", "--go-version", GO]);
    second.ok();
    assert_eq!(statuses(&second), vec!["reused"; TOOLS.len()]);
    assert_eq!(second.json()["data"]["go"]["status"], "reused");
    assert_eq!(w.builds().len(), TOOLS.len(), "a reuse must not build");

    // Without Go flags, the managed Go of the last prepare is kept (nothing downloaded).
    std::fs::remove_file(bin_dir.join("tsbs_generate_queries")).unwrap();
    let seen = w.mirror.requests().len();
    let third = w.env.run_json(&["env", "prepare"]);
    third.ok();
    assert_eq!(third.json()["data"]["go"]["version"], GO);
    assert_eq!(third.json()["data"]["go"]["status"], "reused");
    assert_eq!(w.mirror.requests().len(), seen);
    assert_eq!(w.builds().len(), TOOLS.len() + 1);
    assert_eq!(statuses(&third)[1], "built");

    let forced = w
        .env
        .run_json(&["env", "prepare", "--go-version", GO, "--rebuild"]);
    forced.ok();
    assert_eq!(statuses(&forced), vec!["built"; TOOLS.len()]);
    assert_eq!(w.builds().len(), 2 * TOOLS.len() + 1);
}

/// A proxy set only with `go env -w` (the user's go env file) reaches the closed build
/// (`GOENV=off`), an environment variable wins over the file, and only the redacted value is
/// recorded (real finding B1).
#[test]
fn the_users_go_env_file_reaches_the_build_redacted_in_the_record() {
    let mut w = world();
    w.publish(GO);
    let go_env = w.env.path().join("home/.config/go/env");
    std::fs::create_dir_all(go_env.parent().unwrap()).unwrap();
    std::fs::write(
        &go_env,
        "GOPROXY=https://me:s3cret@proxy.corp.example/go,direct\nGOPRIVATE=*.corp.example\nGOSUMDB=off\n",
    )
    .unwrap();
    w.env.env("GOSUMDB", "sum.golang.org");
    let r = w.env.run_json(&["env", "prepare", "--go-version", GO]);
    r.ok();
    let builds = w.builds();
    assert_eq!(builds.len(), TOOLS.len());
    for call in &builds {
        let env = &call["env"];
        assert_eq!(
            env["GOPROXY"],
            "https://me:s3cret@proxy.corp.example/go,direct"
        );
        assert_eq!(env["GOPRIVATE"], "*.corp.example");
        assert_eq!(env["GOSUMDB"], "sum.golang.org");
        assert_eq!(env["GOENV"], "off");
        assert!(env.get("GONOSUMDB").is_none());
    }
    let manifest = std::fs::read_to_string(w.tsbs_dir().join("manifest.json")).unwrap();
    let m: Value = serde_json::from_str(&manifest).unwrap();
    let rec = &m["binaries"]["tsbs_load_greptime"];
    assert_eq!(
        rec["env"]["GOPROXY"],
        "https://<redacted>@proxy.corp.example/go,direct"
    );
    assert_eq!(rec["env"]["GOPRIVATE"], "*.corp.example");
    assert_eq!(
        rec["go_settings_from"]["GOPROXY"],
        go_env.display().to_string()
    );
    assert_eq!(rec["go_settings_from"]["GOSUMDB"], "environment");
    let log = std::fs::read_to_string(w.tsbs_dir().join("build.log")).unwrap();
    assert!(
        log.contains("GOPROXY=https://<redacted>@proxy.corp.example/go,direct"),
        "{log}"
    );
    for text in [&manifest, &log, &r.stdout, &r.stderr] {
        assert!(!text.contains("s3cret"), "the secret leaked: {text}");
    }
}

#[test]
fn a_failed_build_keeps_its_log_and_names_it() {
    let w = world();
    w.publish(GO);
    w.set_knobs(json!({"fail_build": ["tsbs_load_influx3"]}));
    let run = w.env.run_json(&["env", "prepare", "--go-version", GO]);
    // Trial 2 N17: the cause is in the error itself, not only in the log.
    run.code(1)
        .says("build.log")
        .says("undefined: brokenByTestbedKnob");
    let log = std::fs::read_to_string(w.tsbs_dir().join("build.log")).unwrap();
    assert!(log.contains("brokenByTestbedKnob"), "{log}");
    assert!(log.contains("./cmd/tsbs_load_influx3"), "{log}");
    assert!(!w.tsbs_dir().join("bin/tsbs_load_influx3").exists());
    assert!(!w.env.root.join("environment/current.json").exists());

    w.set_knobs(json!({}));
    let run = w.env.run_json(&["env", "prepare", "--go-version", GO]);
    run.ok();
    let s = statuses(&run);
    // The failed tool and every one after it.
    let failed_at = TOOLS
        .iter()
        .position(|t| *t == "tsbs_load_influx3")
        .unwrap();
    assert_eq!(
        s.iter().filter(|s| *s == "built").count(),
        TOOLS.len() - failed_at,
        "{s:?}"
    );
}

#[test]
fn two_prepares_at_once_install_once() {
    let w = world();
    let published = w.publish(GO);
    // Slow enough that the second process arrives while the first is still downloading.
    w.mirror.fault(
        &published.path,
        Fault::Slow {
            bytes_per_sec: (published.bytes.len() as u64 / 2).max(1),
        },
    );
    let spawn = || {
        let mut c = w.env.cmd(&["env", "prepare", "--go-version", GO, "--json"]);
        c.stdout(Stdio::piped()).stderr(Stdio::piped());
        c.spawn().expect("spawn")
    };
    let a = spawn();
    let b = spawn();
    let ra = Run::from_output(&["a"], wait_bounded(a, PREPARE_LIMIT));
    let rb = Run::from_output(&["b"], wait_bounded(b, PREPARE_LIMIT));
    ra.ok();
    rb.ok();
    let mut go_status = vec![
        ra.json()["data"]["go"]["status"]
            .as_str()
            .unwrap()
            .to_string(),
        rb.json()["data"]["go"]["status"]
            .as_str()
            .unwrap()
            .to_string(),
    ];
    go_status.sort();
    assert_eq!(go_status, ["installed", "reused"]);
    assert_eq!(w.archive_gets(GO), 1, "{:?}", w.go_requests());
    assert_eq!(w.builds().len(), TOOLS.len());
}

#[test]
fn a_dirty_tsbs_dir_is_refused_unless_allowed() {
    let w = world();
    w.publish(GO);
    std::fs::write(
        w.repo.join("cmd/tsbs_load_greptime/main.go"),
        "package main\n",
    )
    .unwrap();
    let dir = w.repo.display().to_string();
    let run = w
        .env
        .run_json(&["env", "prepare", "--go-version", GO, "--tsbs-dir", &dir]);
    run.code(2)
        .says("uncommitted changes")
        .says("--allow-dirty");
    assert!(
        !w.env.root.exists(),
        "a refused prepare changed the state root"
    );

    let run = w.env.run_json(&[
        "env",
        "prepare",
        "--go-version",
        GO,
        "--tsbs-dir",
        &dir,
        "--allow-dirty",
    ]);
    run.ok();
    let doc = run.json();
    assert_eq!(doc["data"]["tsbs"]["dirty"], true);
    assert_eq!(doc["data"]["tsbs"]["commit"], w.commit.as_str());
    assert!(doc["data"]["tsbs"]["dir"]
        .as_str()
        .unwrap()
        .ends_with(&format!("{}-dirty", w.commit)));
    let tsbs = TsbsEnv::load(&Root::at(&w.env.root), None).unwrap();
    assert!(tsbs.dirty);
    w.env.run(&["env", "show"]).ok().says("(DIRTY)");
}

#[test]
fn a_wrong_tsbs_rev_is_a_clear_error() {
    let w = world();
    w.publish(GO);
    let run = w.env.run_json(&[
        "env",
        "prepare",
        "--go-version",
        GO,
        "--tsbs-rev",
        "81d12c8",
    ]);
    run.code(2).says("full commit id");
    assert!(!w.env.root.exists());

    let missing = "0123456789abcdef0123456789abcdef01234567";
    let run = w
        .env
        .run_json(&["env", "prepare", "--go-version", GO, "--tsbs-rev", missing]);
    run.code(2).says("does not exist").says("--tsbs-rev");
    assert!(!w
        .env
        .root
        .join("environment/tsbs")
        .join(missing)
        .join("src")
        .exists());
    assert!(
        !w.env.root.join("environment/go").exists(),
        "Go was installed for a bad rev"
    );

    // An older commit (not the tip) is fetched exactly.
    let newer = tsbs_repo::add_commit(&w.repo, "a later change").unwrap();
    assert_ne!(newer, w.commit);
    let run = w.env.run_json(&[
        "env",
        "prepare",
        "--go-version",
        GO,
        "--tsbs-rev",
        &w.commit.clone(),
    ]);
    run.ok();
    let head = tsbs_repo::git(&w.tsbs_dir().join("src"), &["rev-parse", "HEAD"]).unwrap();
    assert_eq!(head, w.commit);
}

/// Starts `env prepare --go-version GO` and waits until its archive download has begun.
fn start_slow_install(w: &World) -> std::process::Child {
    let before = w.archive_gets(GO);
    let mut c = w.env.cmd(&["env", "prepare", "--go-version", GO]);
    c.stdout(Stdio::null()).stderr(Stdio::piped());
    let child = c.spawn().expect("spawn");
    let start = Instant::now();
    while w.archive_gets(GO) == before {
        assert!(
            start.elapsed() < Duration::from_secs(60),
            "no download started"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
    std::thread::sleep(Duration::from_millis(300));
    child
}

#[test]
fn an_interrupted_install_leaves_no_final_directory_and_the_next_call_succeeds() {
    let w = world();
    let published = w.publish(GO);
    // About two seconds for the whole archive (the signal comes ~0.3 s in); the download
    // client notices an interrupt between chunks, so a slower body only makes this test slower.
    w.mirror.fault(
        &published.path,
        Fault::Slow {
            bytes_per_sec: (published.bytes.len() as u64 / 2).max(1),
        },
    );

    // SIGKILL: nothing can clean up, and still nothing is published.
    let mut child = start_slow_install(&w);
    child.kill().unwrap();
    child.wait().unwrap();
    assert!(
        !w.go_dir(GO).exists(),
        "a killed install left its final directory"
    );

    // SIGTERM: the download stops, the command exits 130.
    let child = start_slow_install(&w);
    // SAFETY: signalling the child this test spawned.
    unsafe { libc::kill(child.id() as i32, libc::SIGTERM) };
    let out = wait_bounded(child, PREPARE_LIMIT);
    let run = Run::from_output(&["env", "prepare"], out);
    run.code(130);
    assert!(
        !w.go_dir(GO).exists(),
        "an interrupted install left its final directory"
    );

    w.mirror.clear_faults();
    let run = w.env.run_json(&["env", "prepare", "--go-version", GO]);
    run.ok();
    assert_eq!(run.json()["data"]["go"]["status"], "installed");
    w.env.run_json(&["env", "verify", "--full"]).ok();
    // No staging leftovers beside the installation.
    let leftovers: Vec<_> = std::fs::read_dir(w.go_dir(GO).parent().unwrap())
        .unwrap()
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|n| n.starts_with('.'))
        .collect();
    assert!(leftovers.is_empty(), "{leftovers:?}");
}

#[test]
fn explicit_go_must_be_acceptable_and_show_needs_a_prepare() {
    let w = world();
    // Exit 2 since trial-run #23: a step run before `env prepare`.
    w.env
        .run_json(&["env", "show"])
        .code(2)
        .says("tsbsctl env prepare");
    w.env
        .run_json(&["env", "verify"])
        .code(2)
        .says("tsbsctl env prepare");
    let old = w.system_go("1.20.14");
    let run = w
        .env
        .run_json(&["env", "prepare", "--go", old.to_str().unwrap()]);
    run.code(2).says("too old");
    let run = w
        .env
        .run_json(&["env", "prepare", "--go", "/nonexistent/go"]);
    run.code(2).says("not an executable");
    // Devel builds are not stable releases.
    w.set_knobs(json!({"devel": true}));
    let devel = w.system_go("1.23.1");
    w.env
        .run_json(&["env", "prepare", "--go", devel.to_str().unwrap()])
        .code(2)
        .says("could not parse stable Go version output");
    w.set_knobs(json!({}));
    let good = w.system_go("1.23.1");
    // Moved out of PATH: --go is what selects it.
    let elsewhere = w.env.path().join("go-1.23.1");
    std::fs::rename(&good, &elsewhere).unwrap();
    let run = w
        .env
        .run_json(&["env", "prepare", "--go", elsewhere.to_str().unwrap()]);
    run.ok();
    assert_eq!(run.json()["data"]["go"]["source"], "explicit");
    assert_eq!(w.go_requests(), Vec::<String>::new());
    w.env
        .run_json(&["env", "prepare", "--go", "x", "--managed-go"])
        .code(2);
    w.env
        .run_json(&["env", "prepare", "--go-version", "1.20.1"])
        .code(2)
        .says("too old");
}

#[test]
fn an_interrupted_build_keeps_finished_binaries_and_resumes() {
    let w = world();
    w.publish(GO);
    w.set_knobs(json!({"build_delay_ms": 400}));
    let mut c = w.env.cmd(&["env", "prepare", "--go-version", GO, "--json"]);
    c.stdout(Stdio::piped()).stderr(Stdio::piped());
    let child = c.spawn().expect("spawn");
    let start = Instant::now();
    while w.builds().len() < 2 {
        assert!(
            start.elapsed() < Duration::from_secs(60),
            "no build started"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
    // SAFETY: signalling the child this test spawned.
    unsafe { libc::kill(child.id() as i32, libc::SIGINT) };
    let run = Run::from_output(&["env", "prepare"], wait_bounded(child, PREPARE_LIMIT));
    run.code(130);
    assert_eq!(run.json()["error"]["kind"], "interrupted");
    assert!(!w.env.root.join("environment/current.json").exists());
    let bin = w.tsbs_dir().join("bin");
    let names: Vec<String> = std::fs::read_dir(&bin)
        .unwrap()
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .collect();
    assert!(names.iter().all(|n| !n.starts_with('.')), "{names:?}");
    let finished = names.len();
    assert!((1..6).contains(&finished), "{names:?}");

    w.set_knobs(json!({}));
    let run = w.env.run_json(&["env", "prepare", "--go-version", GO]);
    run.ok();
    let s = statuses(&run);
    assert_eq!(
        s.iter().filter(|s| *s == "reused").count(),
        finished,
        "{s:?}"
    );
    w.env.run_json(&["env", "verify"]).ok();
}

#[test]
fn go_archives_must_hold_only_go_and_a_working_go_binary() {
    use testbed::tarball::Tree;
    let w = world();
    let (os, arch) = w.platform.split_once('-').unwrap();
    let name = format!("go{GO}.{}.tar.gz", w.platform);
    let serve = |bytes: Vec<u8>| {
        use sha2::{Digest, Sha256};
        let sha = hex::encode(Sha256::digest(&bytes));
        let size = bytes.len() as u64;
        w.mirror.put_bytes(&format!("/go.dev/dl/{name}"), bytes);
        go_release::put_index(
            &w.mirror,
            vec![json!({"version": format!("go{GO}"), "stable": true,
                        "files": [go_release::index_file(GO, os, arch, &sha, size)]})],
        );
    };
    let go = testbed::wrapper_script("go", &[("TESTBED_EMULATED_VERSION", GO)]);

    // An entry beside go/.
    serve(
        Tree::new()
            .file("go/bin/go", go.clone(), 0o755)
            .file("README", "stray", 0o644)
            .tar_gz(),
    );
    w.env
        .run_json(&["env", "prepare", "--go-version", GO])
        .code(4);
    assert!(!w.go_dir(GO).exists());

    // No go/bin/go.
    serve(Tree::new().file("go/VERSION", "go", 0o644).tar_gz());
    w.env
        .run_json(&["env", "prepare", "--go-version", GO])
        .code(4)
        .says("go/bin/go");
    assert!(!w.go_dir(GO).exists());

    // A go that reports another version.
    let other = testbed::wrapper_script("go", &[("TESTBED_EMULATED_VERSION", "1.22.4")]);
    serve(Tree::new().file("go/bin/go", other, 0o755).tar_gz());
    w.env
        .run_json(&["env", "prepare", "--go-version", GO])
        .code(4)
        .says("reports 1.22.4");
    assert!(!w.go_dir(GO).exists());

    // A good one installs.
    serve(Tree::new().file("go/bin/go", go, 0o755).tar_gz());
    w.env.run_json(&["env", "prepare", "--go-version", GO]).ok();
    assert!(w.go_dir(GO).join("bin/go").is_file());
}

/// The real `go` on the test's PATH (not a testbed stand-in), when there is one.
/// The real Go, or `None` after saying on stderr why `test` is skipped (straight to stderr, not
/// eprintln!, which the harness captures: a skip must show).
fn real_go_or_skip(test: &str) -> Option<PathBuf> {
    real_go()
        .map_err(|why| {
            use std::io::Write as _;
            let _ = writeln!(std::io::stderr(), "SKIPPED env::{test}: {why}");
        })
        .ok()
}

fn real_go() -> Result<PathBuf, String> {
    let path = std::env::var_os("PATH").ok_or("PATH is not set")?;
    let go = std::env::split_paths(&path)
        .map(|d| d.join("go"))
        .find(|p| p.is_file())
        .ok_or("no `go` on PATH")?;
    let out = std::process::Command::new(&go)
        .arg("version")
        .env("GOTOOLCHAIN", "local")
        .output()
        .map_err(|e| format!("{} does not run: {e}", go.display()))?;
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    if !out.status.success() || text.contains("testbed") {
        return Err(format!("{} is not a real Go ({text:?})", go.display()));
    }
    // tsbsctl's floor is Go 1.21.
    let minor = text
        .split_whitespace()
        .nth(2)
        .and_then(|v| v.strip_prefix("go1."))
        .and_then(|v| v.split('.').next())
        .and_then(|m| m.parse::<u32>().ok())
        .ok_or_else(|| format!("unreadable `go version`: {text:?}"))?;
    if minor < 21 {
        return Err(format!("{text:?} is older than 1.21"));
    }
    Ok(go)
}

/// The real toolchain: a TSBS-shaped module (`github.com/timescale/tsbs`, `go 1.14`, the eight
/// `cmd/<tool>` mains, no dependencies) built by `env prepare` with the real `go build` in the
/// closed build environment; the binaries run and the manifest matches them. Skipped (and
/// said so) where no real Go 1.21+ is on PATH.
#[test]
fn a_real_go_builds_a_tsbs_shaped_module() {
    let Some(go) = real_go_or_skip("a_real_go_builds_a_tsbs_shaped_module") else {
        return;
    };
    let w = world();
    // Mains without imports: only the runtime to compile, so a cold cache builds in seconds.
    let repo = w.env.path().join("real-tsbs");
    std::fs::create_dir_all(&repo).unwrap();
    tsbs_repo::git(&repo, &["init", "-q"]).unwrap();
    std::fs::write(
        repo.join("go.mod"),
        "module github.com/timescale/tsbs\n\ngo 1.14\n",
    )
    .unwrap();
    for tool in TOOLS {
        let d = repo.join("cmd").join(tool);
        std::fs::create_dir_all(&d).unwrap();
        std::fs::write(
            d.join("main.go"),
            format!("package main\n\nfunc main() {{\n\tprintln(\"{tool}\")\n}}\n"),
        )
        .unwrap();
    }
    tsbs_repo::git(&repo, &["add", "-A"]).unwrap();
    tsbs_repo::git(&repo, &["commit", "-q", "-m", "tsbs-shaped"]).unwrap();
    let commit = tsbs_repo::git(&repo, &["rev-parse", "HEAD"]).unwrap();
    let started = Instant::now();
    let r = w.env.run_json(&[
        "env",
        "prepare",
        "--go",
        go.to_str().unwrap(),
        "--tsbs-dir",
        repo.to_str().unwrap(),
    ]);
    r.ok();
    eprintln!(
        "real Go {} built the eight tools in {:.1}s",
        go.display(),
        started.elapsed().as_secs_f64()
    );
    assert_eq!(statuses(&r), vec!["built"; TOOLS.len()]);
    assert!(w.builds().is_empty(), "the stand-in go was used");
    let dir = w.env.root.join("environment/tsbs").join(&commit);
    let m: Value =
        serde_json::from_str(&std::fs::read_to_string(dir.join("manifest.json")).unwrap()).unwrap();
    for tool in TOOLS {
        let bin = dir.join("bin").join(tool);
        let out = std::process::Command::new(&bin).output().unwrap();
        assert!(out.status.success(), "{tool}: {out:?}");
        // println writes to stderr.
        assert_eq!(String::from_utf8_lossy(&out.stderr).trim(), tool);
        let rec = &m["binaries"][tool];
        assert_eq!(rec["sha256"], sha256(&bin), "{tool}");
        assert_eq!(rec["env"]["GOTOOLCHAIN"], "local");
        assert_eq!(rec["env"]["GOENV"], "off");
        assert_eq!(rec["env"]["CGO_ENABLED"], "0");
        assert_eq!(rec["command"][4], format!("./cmd/{tool}"));
        assert_eq!(rec["go"]["binary"], go.to_str().unwrap());
    }
    // Built in the closed environment: its caches are under the state root.
    assert!(w.env.root.join("environment/cache/go-build").is_dir());
    w.env.run_json(&["env", "verify"]).ok();
}

/// A real Go on `PATH` is what `env prepare` picks; the testbed's stand-in TSBS repository must
/// build with it into tools that run the testbed's emulators (the offline quickstart depends on
/// it), not into programs that only print their names.
#[test]
fn the_stand_in_tsbs_repository_builds_with_a_real_go_into_working_tools() {
    let Some(go) =
        real_go_or_skip("the_stand_in_tsbs_repository_builds_with_a_real_go_into_working_tools")
    else {
        return;
    };
    let w = world();
    let parent = w.env.path().join("stand-in");
    std::fs::create_dir_all(&parent).unwrap();
    let (repo, commit) = tsbs_repo::create(&parent).unwrap();
    let r = w.env.run_json(&[
        "env",
        "prepare",
        "--go",
        go.to_str().unwrap(),
        "--tsbs-dir",
        repo.to_str().unwrap(),
    ]);
    r.ok();
    assert!(w.builds().is_empty(), "the stand-in go was used");
    let bin = w
        .env
        .root
        .join("environment/tsbs")
        .join(&commit)
        .join("bin/tsbs_generate_data");
    let out = std::process::Command::new(&bin)
        .args([
            "--use-case=cpu-only",
            "--seed=123",
            "--scale=1",
            "--timestamp-start=2023-06-11T00:00:00Z",
            "--timestamp-end=2023-06-11T00:00:30Z",
            "--log-interval=10s",
            "--format=influx",
        ])
        .output()
        .unwrap();
    assert!(out.status.success(), "{out:?}");
    let data = String::from_utf8_lossy(&out.stdout);
    assert_eq!(
        data.lines()
            .filter(|l| l.starts_with("cpu,hostname=host_0"))
            .count(),
        3,
        "{data}"
    );
}
