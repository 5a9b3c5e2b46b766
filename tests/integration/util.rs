//! The harness: a temp directory per test, the real `tsbsctl` binary run in it (to completion
//! or in the background, [`Bg`]), and every output printed when an assertion fails; plus what
//! any test needs around processes: free ports, bounded waits, "is this pid gone". What a test
//! sets up of the outside world (mirrors, releases, prepared workspaces) is in `world.rs`.

#![allow(dead_code)]

use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};

use serde_json::Value;

/// `--startup-timeout` of a managed cluster in the tests (etcd, a metasrv, datanodes and
/// frontends start in order): a bound, not an expectation. 60 s was too short on a 2-core host
/// busy with builds (seen failing); an idle host is ready in seconds.
pub const CLUSTER_STARTUP: &str = "300";

/// Path of the `tsbsctl` binary under test.
pub fn tsbsctl_bin() -> PathBuf {
    PathBuf::from(env!("CARGO_BIN_EXE_tsbsctl"))
}

/// Path of the `testbed` binary (the emulators). `cargo test --workspace` builds it beside
/// `tsbsctl`; when only this package is tested, or the binary is older than its sources, it is
/// (re)built on first use, so a test never runs yesterday's stand-ins.
pub fn testbed_bin() -> PathBuf {
    static ONCE: std::sync::OnceLock<PathBuf> = std::sync::OnceLock::new();
    ONCE.get_or_init(|| {
        let path = tsbsctl_bin().with_file_name("testbed");
        let sources = Path::new(env!("CARGO_MANIFEST_DIR")).join("testbed");
        let built = std::fs::metadata(&path).and_then(|m| m.modified()).ok();
        if built.is_none_or(|b| newest_mtime(&sources).is_some_and(|s| s > b)) {
            let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
            let st = Command::new(cargo)
                .args(["build", "-q", "-p", "testbed", "--bin", "testbed"])
                .current_dir(env!("CARGO_MANIFEST_DIR"))
                .status()
                .expect("run cargo build -p testbed");
            assert!(st.success(), "could not build the testbed binary");
        }
        path
    })
    .clone()
}

fn newest_mtime(dir: &Path) -> Option<std::time::SystemTime> {
    let mut newest = None;
    let mut stack = vec![dir.join("src"), dir.join("Cargo.toml")];
    while let Some(p) = stack.pop() {
        let Ok(meta) = std::fs::metadata(&p) else {
            continue;
        };
        if meta.is_dir() {
            if let Ok(rd) = std::fs::read_dir(&p) {
                stack.extend(rd.flatten().map(|e| e.path()));
            }
        } else if let Ok(m) = meta.modified() {
            newest = newest.max(Some(m));
        }
    }
    newest
}

/// One test's world: a temp directory holding the state root, a HOME and a working directory.
pub struct TestEnv {
    pub dir: tempfile::TempDir,
    /// The state root passed as TSBSCTL_ROOT.
    pub root: PathBuf,
    /// Extra environment for every command run in this env.
    pub envs: Vec<(String, String)>,
}

impl TestEnv {
    pub fn new() -> TestEnv {
        let dir = tempfile::Builder::new()
            .prefix("tsbsctl-test-")
            .tempdir()
            .expect("tempdir");
        let root = dir.path().join("root");
        std::fs::create_dir_all(dir.path().join("home")).unwrap();
        std::fs::create_dir_all(dir.path().join("cwd")).unwrap();
        TestEnv {
            dir,
            root,
            envs: Vec::new(),
        }
    }

    pub fn path(&self) -> &Path {
        self.dir.path()
    }

    /// Adds an environment variable for later commands.
    pub fn env(&mut self, key: impl Into<String>, value: impl Into<String>) -> &mut Self {
        self.envs.push((key.into(), value.into()));
        self
    }

    /// A `tsbsctl` command with a clean environment: only PATH, HOME (in the temp dir),
    /// TSBSCTL_ROOT and what the test added. Nothing from the developer's shell leaks in.
    pub fn cmd(&self, args: &[&str]) -> Command {
        let mut c = Command::new(tsbsctl_bin());
        c.args(args)
            .env_clear()
            .env("PATH", std::env::var("PATH").unwrap_or_default())
            .env("HOME", self.dir.path().join("home"))
            .env("TSBSCTL_ROOT", &self.root)
            // The 2 s look at the host before each measured phase, shortened for the suite.
            .env("TSBSCTL_MACHINE_CHECK_MS", "200")
            .current_dir(self.dir.path().join("cwd"))
            .stdin(Stdio::null());
        for (k, v) in &self.envs {
            c.env(k, v);
        }
        c
    }

    /// Runs `tsbsctl args...` to completion (bounded: 5 minutes) and captures everything.
    pub fn run(&self, args: &[&str]) -> Run {
        let c = self.cmd(args);
        run_command(c, args, Duration::from_secs(300))
    }

    /// Runs with `--json` appended and parses stdout.
    pub fn run_json(&self, args: &[&str]) -> Run {
        let mut a: Vec<&str> = args.to_vec();
        a.push("--json");
        self.run(&a)
    }
}

/// Runs a command with a time bound; kills it and fails the test when the bound passes.
pub fn run_command(mut c: Command, args: &[&str], limit: Duration) -> Run {
    c.stdout(Stdio::piped()).stderr(Stdio::piped());
    let child = c.spawn().expect("spawn tsbsctl");
    Run::from_output(args, wait_bounded(child, limit))
}

/// Waits for a spawned command and collects its output, killing it (SIGKILL) when `limit`
/// passes, so a hung child fails its test instead of hanging the suite.
pub fn wait_bounded(child: Child, limit: Duration) -> Output {
    let pid = child.id();
    let (tx, rx) = std::sync::mpsc::channel::<()>();
    std::thread::spawn(move || {
        if rx.recv_timeout(limit).is_err() {
            // SAFETY: sending SIGKILL to the child we spawned.
            unsafe { libc::kill(pid as i32, libc::SIGKILL) };
        }
    });
    let out = child.wait_with_output().expect("wait for the child");
    let _ = tx.send(());
    out
}

/// Polls `f` every 50 ms until it is true (true) or `limit` passes (false).
pub fn wait_until(limit: Duration, mut f: impl FnMut() -> bool) -> bool {
    let end = Instant::now() + limit;
    while Instant::now() < end {
        if f() {
            return true;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    f()
}

/// A finished command: exit code and both streams.
#[derive(Debug, Clone)]
pub struct Run {
    pub args: Vec<String>,
    pub code: i32,
    pub stdout: String,
    pub stderr: String,
}

impl Run {
    pub fn from_output(args: &[&str], out: Output) -> Run {
        use std::os::unix::process::ExitStatusExt;
        let code = out
            .status
            .code()
            .unwrap_or_else(|| 128 + out.status.signal().unwrap_or(0));
        Run {
            args: args.iter().map(|s| s.to_string()).collect(),
            code,
            stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
            stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
        }
    }

    /// Everything about this run, for failure messages.
    pub fn describe(&self) -> String {
        format!(
            "command: tsbsctl {}\nexit code: {}\n--- stdout ---\n{}\n--- stderr ---\n{}",
            self.args.join(" "),
            self.code,
            self.stdout,
            self.stderr
        )
    }

    /// Asserts the exit code, printing everything otherwise.
    #[track_caller]
    pub fn code(&self, expected: i32) -> &Run {
        assert_eq!(
            self.code,
            expected,
            "unexpected exit code\n{}",
            self.describe()
        );
        self
    }

    #[track_caller]
    pub fn ok(&self) -> &Run {
        self.code(0)
    }

    /// Parses stdout as the JSON envelope.
    #[track_caller]
    pub fn json(&self) -> Value {
        serde_json::from_str(&self.stdout).unwrap_or_else(|e| {
            panic!("stdout is not one JSON document ({e})\n{}", self.describe())
        })
    }

    /// Asserts that stderr (or stdout) contains `needle`.
    #[track_caller]
    pub fn says(&self, needle: &str) -> &Run {
        assert!(
            self.stderr.contains(needle) || self.stdout.contains(needle),
            "expected output to contain {needle:?}\n{}",
            self.describe()
        );
        self
    }
}

/// Every file under `dir` (recursively), for "nothing was created" and "no secret" checks.
pub fn all_files(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        let Ok(rd) = std::fs::read_dir(&d) else {
            continue;
        };
        for e in rd.flatten() {
            let p = e.path();
            match e.file_type() {
                Ok(t) if t.is_dir() => stack.push(p),
                Ok(_) => out.push(p),
                Err(_) => {}
            }
        }
    }
    out.sort();
    out
}

/// Asserts that no file under `dir`, nor the given outputs, contains `secret`.
#[track_caller]
pub fn assert_no_secret(dir: &Path, secret: &str, runs: &[&Run]) {
    for f in all_files(dir) {
        if let Ok(bytes) = std::fs::read(&f) {
            let hay = String::from_utf8_lossy(&bytes);
            assert!(!hay.contains(secret), "secret found in {}", f.display());
        }
    }
    for r in runs {
        assert!(
            !r.stdout.contains(secret) && !r.stderr.contains(secret),
            "secret in output\n{}",
            r.describe()
        );
    }
}

/// A process's start time in clock ticks since boot (field 22 of `/proc/<pid>/stat`, counted
/// after the command name, which may itself hold spaces and parentheses).
pub fn proc_start_time(pid: u32) -> u64 {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap();
    stat[stat.rfind(')').unwrap() + 1..]
        .split_whitespace()
        .nth(19)
        .unwrap()
        .parse()
        .unwrap()
}

/// A JSON file, parsed (panics with the path when it is missing or not JSON).
pub fn read_json(p: &Path) -> Value {
    serde_json::from_slice(&std::fs::read(p).unwrap_or_else(|e| panic!("{}: {e}", p.display())))
        .unwrap_or_else(|e| panic!("{}: {e}", p.display()))
}

/// A number never handed out twice in this test process (for file names).
pub fn unique() -> u64 {
    use std::sync::atomic::{AtomicU64, Ordering};
    static N: AtomicU64 = AtomicU64::new(0);
    N.fetch_add(1, Ordering::SeqCst)
}

pub use testbed::ports::free_port_block;

/// True while a process with this pid exists and is not a zombie.
pub fn alive(pid: u32) -> bool {
    // SAFETY: signal 0 only probes.
    let exists = unsafe { libc::kill(pid as i32, 0) } == 0;
    if !exists {
        return false;
    }
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
    !stat
        .rsplit(')')
        .next()
        .unwrap_or("")
        .trim_start()
        .starts_with('Z')
}

/// Waits (at most `secs`) for `pid` to be gone (exited, or a zombie nobody reaped yet).
pub fn gone_within(pid: u32, secs: u64) -> bool {
    wait_until(Duration::from_secs(secs), || !alive(pid))
}

/// A `tsbsctl` running in the background, its output in files; killed on drop.
pub struct Bg {
    pub child: Option<Child>,
    pub args: Vec<String>,
    pub out: PathBuf,
    pub err: PathBuf,
}

impl Bg {
    /// Starts `tsbsctl args...` in `env`, stdout and stderr going to fresh files there.
    pub fn spawn(env: &TestEnv, args: &[&str]) -> Bg {
        let n = unique();
        let out = env.path().join(format!("bg-{n}.out"));
        let err = env.path().join(format!("bg-{n}.err"));
        let mut c = env.cmd(args);
        c.stdout(Stdio::from(std::fs::File::create(&out).unwrap()))
            .stderr(Stdio::from(std::fs::File::create(&err).unwrap()));
        Bg {
            child: Some(c.spawn().expect("spawn tsbsctl")),
            args: args.iter().map(|s| s.to_string()).collect(),
            out,
            err,
        }
    }

    pub fn pid(&self) -> i32 {
        self.child.as_ref().unwrap().id() as i32
    }

    pub fn stderr(&self) -> String {
        std::fs::read_to_string(&self.err).unwrap_or_default()
    }

    /// Waits (at most 30 s) until tsbsctl says the server is serving and `answers` is true;
    /// panics when tsbsctl exits first.
    pub fn wait_serving(&mut self, mut answers: impl FnMut() -> bool) {
        let deadline = Instant::now() + Duration::from_secs(30);
        while Instant::now() < deadline {
            if self.stderr().contains("press Ctrl-C to stop it") && answers() {
                return;
            }
            if let Some(st) = self.child.as_mut().unwrap().try_wait().unwrap() {
                panic!("serve exited early ({st})\n{}", self.stderr());
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        panic!("server not ready within 30s\n{}", self.stderr());
    }

    /// Waits (at most 90 s) until `loading` says the background bench is in its load; a bench
    /// that exits first fails the test with its output.
    pub fn wait_for_load(&mut self, mut loading: impl FnMut() -> bool) {
        let deadline = Instant::now() + Duration::from_secs(90);
        while !loading() {
            if let Some(st) = self.child.as_mut().unwrap().try_wait().unwrap() {
                panic!("bench exited before the load ({st})\n{}", self.stderr());
            }
            assert!(
                Instant::now() < deadline,
                "no load within 90 s\n{}",
                self.stderr()
            );
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    /// Sends `sig` to tsbsctl.
    pub fn signal(&self, sig: i32) {
        // SAFETY: signalling the child we spawned.
        unsafe { libc::kill(self.pid(), sig) };
    }

    /// Waits (at most 30 s) for tsbsctl to exit and returns what it did.
    pub fn wait(&mut self) -> Run {
        let mut child = self.child.take().unwrap();
        let deadline = Instant::now() + Duration::from_secs(30);
        let status = loop {
            if let Some(s) = child.try_wait().unwrap() {
                break s;
            }
            if Instant::now() > deadline {
                let _ = child.kill();
                panic!("tsbsctl did not exit within 30s\n{}", self.stderr());
            }
            std::thread::sleep(Duration::from_millis(20));
        };
        let mut out = String::new();
        let _ = std::fs::File::open(&self.out).map(|mut f| f.read_to_string(&mut out));
        let args: Vec<&str> = self.args.iter().map(String::as_str).collect();
        let output = Output {
            status,
            stdout: out.into_bytes(),
            stderr: self.stderr().into_bytes(),
        };
        Run::from_output(&args, output)
    }

    /// Ctrl-C, then wait.
    pub fn interrupt(&mut self) -> Run {
        self.signal(libc::SIGINT);
        self.wait()
    }
}

impl Drop for Bg {
    fn drop(&mut self) {
        if let Some(mut c) = self.child.take() {
            let _ = c.kill();
            let _ = c.wait();
        }
    }
}

/// Says a test did not run, and why, where a person reads the suite's output: on the real
/// standard error, which the test harness does not capture (`eprintln!` is captured, and
/// shown only for failing tests).
pub fn skip(test: &str, why: &str) {
    use std::io::Write as _;
    let _ = writeln!(std::io::stderr().lock(), "SKIP {test}: {why}");
}

/// The entry of query type `t` in a summary's `queries` (panics when the summary has none).
pub fn query_of(summary: &serde_json::Value, t: &str) -> serde_json::Value {
    summary["queries"]
        .as_array()
        .and_then(|qs| qs.iter().find(|q| q["query_type"] == t))
        .unwrap_or_else(|| panic!("no query type {t} in {}", summary["queries"]))
        .clone()
}
