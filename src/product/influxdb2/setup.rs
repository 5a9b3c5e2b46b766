//! A new workspace's onboarding, at `prepare` (like PostgreSQL's `initdb`): InfluxDB 2 always
//! checks tokens, and `/api/v2/setup` succeeds once (reference influxdb2.md §4), so the
//! workspace is set up before anything else can reach it. tsbsctl generates the operator
//! token, keeps it in `<workspace>/secrets/operator-token` (0600, in a 0700 directory; never in
//! a manifest, a log or an argv), starts `influxd` on the staged data directory on a free
//! loopback port, posts the setup (user `tsbsctl`, org `tsbs`, a setup bucket, that token) and
//! stops it again. The benchmark bucket itself is created by the first load.

use std::io::Read;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use super::api::Api;
use crate::error::{Error, Result};
use crate::tsbs::Secret;

/// The token file, relative to the workspace.
pub const TOKEN_FILE: &str = "secrets/operator-token";

/// The bucket setup creates (it must create one); the benchmarks use their own.
pub const SETUP_BUCKET: &str = "tsbsctl-setup";

/// How long the onboarding server may take to answer.
const START_LIMIT: Duration = Duration::from_secs(120);

/// A fresh random token: 32 bytes of the kernel's randomness, hex.
fn new_token() -> Result<String> {
    let mut b = [0u8; 32];
    std::fs::File::open("/dev/urandom")
        .and_then(|mut f| f.read_exact(&mut b))
        .map_err(|e| Error::failed(format!("could not read /dev/urandom for a token: {e}")))?;
    Ok(hex::encode(b))
}

/// Reads a workspace's operator token.
pub fn read_token(ws_dir: &Path) -> Result<Secret> {
    let p = ws_dir.join(TOKEN_FILE);
    let t = std::fs::read_to_string(&p).map_err(|e| {
        Error::integrity(format!(
            "the InfluxDB 2 workspace has no readable operator token ({}): {e}",
            p.display()
        ))
        .with_hint("the workspace was set up by `prepare`; remove it and prepare it again")
    })?;
    let t = t.trim();
    if t.is_empty() {
        return Err(Error::integrity(format!("{} is empty", p.display())));
    }
    Ok(Secret::new(t))
}

fn write_token(at: &Path, token: &str) -> Result<()> {
    use fs_err::os::unix::fs::OpenOptionsExt as _;
    use std::io::Write;
    let dir = at.join("secrets");
    fs_err::create_dir_all(&dir)?;
    fs_err::set_permissions(&dir, std::fs::Permissions::from_mode(0o700))?;
    let p = at.join(TOKEN_FILE);
    let mut f = fs_err::OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o600)
        .open(&p)?;
    f.write_all(token.as_bytes())?;
    Ok(f.sync_all()?)
}

/// A free loopback port (bound and released: the short race is acceptable for a setup run).
fn free_port() -> Result<u16> {
    std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .map(|a| a.port())
        .map_err(|e| Error::failed(format!("no free loopback port for the setup run: {e}")))
}

struct Running {
    child: Child,
}

impl Drop for Running {
    fn drop(&mut self) {
        let pid = nix::unistd::Pid::from_raw(self.child.id() as i32);
        let _ = nix::sys::signal::kill(pid, nix::sys::signal::Signal::SIGTERM);
        let until = Instant::now() + Duration::from_secs(30);
        while Instant::now() < until {
            if let Ok(Some(_)) = self.child.try_wait() {
                return;
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Onboards the staged workspace `at` (data under `at/data`) with the installation's `influxd`.
pub fn onboard(binary: &Path, at: &Path, org: &str, user: &str) -> Result<()> {
    let token = new_token()?;
    write_token(at, &token)?;
    let data = at.join("data");
    let port = free_port()?;
    let log_path: PathBuf = at.join("logs").join("setup.log");
    let log = fs_err::File::create(&log_path)?;
    let log2 = log.try_clone()?.into_file();
    let log = log.into_file();
    let mut cmd = Command::new(binary);
    cmd.arg(format!(
        "--bolt-path={}",
        data.join("influxd.bolt").display()
    ))
    .arg(format!(
        "--sqlite-path={}",
        data.join("influxd.sqlite").display()
    ))
    .arg(format!("--engine-path={}", data.join("engine").display()))
    .arg(format!("--http-bind-address=127.0.0.1:{port}"))
    .arg("--reporting-disabled")
    .current_dir(at)
    .stdin(Stdio::null())
    .stdout(log)
    .stderr(log2);
    for (k, _) in std::env::vars() {
        if k.starts_with("INFLUXD_") {
            cmd.env_remove(k);
        }
    }
    crate::proc::configure(&mut cmd);
    let child = cmd.spawn().map_err(|e| {
        Error::failed(format!(
            "could not start {} for the setup: {e}",
            binary.display()
        ))
    })?;
    let mut running = Running { child };
    let endpoint = format!("http://127.0.0.1:{port}");
    let api = Api::new(&endpoint, None)?;
    let until = Instant::now() + START_LIMIT;
    loop {
        if let Ok(Some(status)) = running.child.try_wait() {
            return Err(Error::failed(format!(
                "influxd exited during the workspace setup ({status}); see {}",
                log_path.display()
            )));
        }
        if api.health().is_ok() {
            break;
        }
        if Instant::now() > until {
            return Err(Error::failed(format!(
                "influxd did not answer /health within {} s during the workspace setup; see {}",
                START_LIMIT.as_secs(),
                log_path.display()
            )));
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    if !api.setup_allowed()? {
        return Err(Error::integrity(
            "the new workspace's InfluxDB 2 data directory was already set up",
        ));
    }
    api.setup(user, org, SETUP_BUCKET, &token)?;
    // The token works: an authenticated read of the organisation.
    let authed = Api::new(&endpoint, Some(&token))?;
    authed.org_id(org)?;
    drop(running);
    Ok(())
}
