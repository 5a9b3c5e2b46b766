//! InfluxDB 3 Enterprise licence activation of a workspace (reference setup.md §3.7, with its
//! weaknesses fixed: §7 "Activation and secrets").
//!
//! * Under the workspace lock (a manual hold is honoured), so no benchmark server runs on the
//!   same `data/` meanwhile.
//! * Trial / home: the e-mail reaches only the server's environment, under the names the bound
//!   version reads ([`license_env_names`]); it is never on a command line, in a manifest, in
//!   output or in a log. The server's output is streamed to `logs/license-activation.log`
//!   through the supervisor's output filter, which redacts the e-mail (and anything e-mail
//!   shaped, licence keys and tokens) before a byte is written.
//! * While the server waits for the person to confirm the e-mail, they are told so and a
//!   heartbeat shows the wait goes on. Done means `/health` answers 200 *and* the licence is
//!   stored under `data/<cluster-id>/`; the server is then stopped and the licence recorded as
//!   `active`. A timeout records `pending` and says how to resume (run `activate` again).
//! * The workspace (its lock, manifest, directories and server) is reached only through
//!   [`WorkspaceOpCtx`], which the workspace side implements.
//! * Licence file: only the absolute path is recorded; the file is never opened, read, hashed
//!   or copied (the server reads it; `serve` and the benchmarks pass it on).

use std::io::{BufRead, IsTerminal, Read, Write};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use serde_json::{json, Value};

use super::{license, license_env_names, renewal_hint, trial_expiry, InfluxDb3};
use crate::error::{Error, ErrorKind, Result};
use crate::fsutil;
use crate::logscan::Diagnostics;
use crate::manifest;
use crate::output::{Reporter, Warning};
use crate::product::ws_op::{ServerStart, WorkspaceOpCtx};
use crate::product::{ManagedServer, Product};
use crate::redact::Redactor;
use crate::server::{OutputFilter, Server};
use crate::workspace_manifest::WorkspaceManifest;

/// The activation log inside a workspace's `logs/`.
pub const LOG_FILE: &str = "license-activation.log";
/// The default wait for the e-mail confirmation.
pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(30 * 60);
/// The variable holding the e-mail unless `--license-email-env` names another.
pub const DEFAULT_EMAIL_ENV: &str = "INFLUXDB3_LICENSE_EMAIL";

/// `trial` or `home` (`--license-type`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum LicenseType {
    Trial,
    Home,
}

impl LicenseType {
    pub fn parse(s: &str) -> Result<LicenseType> {
        match s {
            "trial" => Ok(LicenseType::Trial),
            "home" => Ok(LicenseType::Home),
            other => Err(Error::invalid(format!("unknown licence type {other:?}"))
                .with_hint("use --license-type trial or --license-type home")),
        }
    }
    pub fn as_str(self) -> &'static str {
        match self {
            LicenseType::Trial => "trial",
            LicenseType::Home => "home",
        }
    }
}

/// Where the licence comes from.
pub enum LicenseSource {
    /// A trial or home licence requested for an e-mail address (a secret).
    Email {
        license_type: LicenseType,
        email: String,
    },
    /// A licence file the server reads (recorded by absolute path only).
    File(PathBuf),
}

impl std::fmt::Debug for LicenseSource {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            LicenseSource::Email { license_type, .. } => {
                write!(f, "Email({}, <redacted>)", license_type.as_str())
            }
            LicenseSource::File(p) => write!(f, "File({})", p.display()),
        }
    }
}

impl LicenseSource {
    /// `trial`, `home` or `file` (recorded as `license.source`).
    pub fn name(&self) -> &'static str {
        match self {
            LicenseSource::Email { license_type, .. } => license_type.as_str(),
            LicenseSource::File(_) => "file",
        }
    }
    fn path(&self) -> Option<&Path> {
        match self {
            LicenseSource::File(p) => Some(p),
            LicenseSource::Email { .. } => None,
        }
    }
}

/// What `activate` was asked for.
#[derive(Debug)]
pub struct ActivateRequest {
    pub id: String,
    pub source: LicenseSource,
    /// How long to wait for the server to serve (the e-mail confirmation included).
    pub timeout: Duration,
    /// SIGTERM-to-SIGKILL grace when stopping the server (default: the product's).
    pub stop_timeout: Option<Duration>,
    pub kill_orphan: bool,
}

/// What `activate` did.
#[derive(Debug)]
pub struct ActivateOutcome {
    /// The workspace's directory and its manifest as recorded.
    pub dir: PathBuf,
    pub manifest: WorkspaceManifest,
    /// The licence was already active from the same source; no server was started.
    pub reused: bool,
    pub log: PathBuf,
    pub waited: Duration,
    /// Warnings, errors, fatals and panics the server logged during this attempt.
    pub diagnostics: Diagnostics,
}

// ------------------------------------------------------------------------------------------
// The e-mail

/// Checks an e-mail address without ever repeating it: trimmed, one `@`, something on both
/// sides, a dot in the domain, no spaces or control characters.
pub fn check_email(raw: &str, from: &str) -> Result<String> {
    let e = raw.trim();
    if e.is_empty() {
        return Err(
            Error::invalid(format!("no licence e-mail address came from {from}"))
                .with_hint(email_hint()),
        );
    }
    let ok = e.len() <= 254
        && !e.chars().any(|c| c.is_whitespace() || c.is_control())
        && e.matches('@').count() == 1
        && e.split_once('@').is_some_and(|(local, domain)| {
            !local.is_empty()
                && domain.contains('.')
                && !domain.starts_with('.')
                && !domain.ends_with('.')
        });
    if !ok {
        // Never echo the value: it may be a mistyped secret.
        return Err(Error::invalid(format!(
            "the licence e-mail from {from} does not look like an e-mail address"
        ))
        .with_hint(email_hint()));
    }
    Ok(e.to_string())
}

fn email_hint() -> String {
    format!(
        "put the address in ${DEFAULT_EMAIL_ENV} (or the variable named by --license-email-env), \
         or pipe it in with --license-email-stdin"
    )
}

/// The e-mail from the environment variable `var`.
pub fn email_from_env(var: &str) -> Result<String> {
    let valid = !var.is_empty()
        && var.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_')
        && !var.as_bytes()[0].is_ascii_digit();
    if !valid {
        return Err(Error::invalid(format!(
            "--license-email-env {var:?} is not an environment variable name"
        ))
        .with_hint(format!("e.g. --license-email-env {DEFAULT_EMAIL_ENV}")));
    }
    match std::env::var(var) {
        Ok(v) if !v.trim().is_empty() => check_email(&v, &format!("${var}")),
        Ok(_) | Err(std::env::VarError::NotPresent) => Err(Error::invalid(format!(
            "trial/home activation needs the licence e-mail in ${var}, which is unset or empty"
        ))
        .with_hint(email_hint())),
        Err(std::env::VarError::NotUnicode(_)) => {
            Err(Error::invalid(format!("${var} is not valid UTF-8")).with_hint(email_hint()))
        }
    }
}

/// The e-mail from standard input: one line; on a terminal, prompted for and read without echo.
pub fn email_from_stdin() -> Result<String> {
    let stdin = std::io::stdin();
    let line = if stdin.is_terminal() {
        read_hidden_line("InfluxDB 3 licence e-mail (not echoed): ")?
    } else {
        let mut line = String::new();
        stdin.lock().take(4096).read_line(&mut line).map_err(|e| {
            Error::invalid(format!(
                "cannot read the licence e-mail from standard input: {e}"
            ))
        })?;
        line
    };
    check_email(line.trim_end_matches(['\r', '\n']), "standard input")
}

/// Prompts on stderr and reads one line from the terminal on stdin with echo turned off (and
/// turned back on whatever happens).
fn read_hidden_line(prompt: &str) -> Result<String> {
    use nix::sys::termios::{self, LocalFlags, SetArg};
    let stdin = std::io::stdin();
    let _ = write!(std::io::stderr(), "{prompt}");
    let _ = std::io::stderr().flush();
    let saved = termios::tcgetattr(&stdin).map_err(|e| {
        Error::failed(format!("cannot configure the terminal: {e}"))
            .with_hint("pipe the e-mail in instead: `printf '%s\\n' ... | tsbsctl influxdb3 activate ... --license-email-stdin`")
    })?;
    let mut quiet = saved.clone();
    quiet.local_flags.remove(LocalFlags::ECHO);
    quiet.local_flags.insert(LocalFlags::ECHONL);
    let _ = termios::tcsetattr(&stdin, SetArg::TCSANOW, &quiet);
    struct Restore<'a>(&'a std::io::Stdin, nix::sys::termios::Termios);
    impl Drop for Restore<'_> {
        fn drop(&mut self) {
            let _ = nix::sys::termios::tcsetattr(self.0, SetArg::TCSANOW, &self.1);
        }
    }
    let _restore = Restore(&stdin, saved);
    // Poll, so Ctrl-C (which only sets a flag) ends the prompt without waiting for Enter.
    let mut line = Vec::new();
    let mut buf = [0u8; 512];
    loop {
        crate::interrupt::check()?;
        let mut pfd = libc::pollfd {
            fd: 0,
            events: libc::POLLIN,
            revents: 0,
        };
        // SAFETY: one valid pollfd on the process's own stdin.
        let ready = unsafe { libc::poll(&mut pfd, 1, 200) };
        if ready <= 0 {
            continue;
        }
        // SAFETY: reading into a buffer we own, at most its length.
        let n = unsafe { libc::read(0, buf.as_mut_ptr().cast(), buf.len()) };
        if n < 0 {
            let e = std::io::Error::last_os_error();
            if e.kind() == std::io::ErrorKind::Interrupted {
                continue;
            }
            return Err(Error::failed(format!("cannot read from the terminal: {e}")));
        }
        if n == 0 {
            break;
        }
        line.extend_from_slice(&buf[..n as usize]);
        if line.contains(&b'\n') || line.len() > 4096 {
            break;
        }
    }
    let text = String::from_utf8_lossy(&line);
    Ok(text.split('\n').next().unwrap_or("").to_string())
}

// ------------------------------------------------------------------------------------------
// Activation

/// Resolves a `--license-file` argument to an absolute path and checks, by metadata only, that
/// it names a regular file. The file is not opened.
pub fn license_file_path(raw: &Path) -> Result<PathBuf> {
    let abs = std::path::absolute(raw).map_err(|e| {
        Error::invalid(format!("--license-file {}: {e}", raw.display()))
            .with_hint("give the licence file's path")
    })?;
    match std::fs::metadata(&abs) {
        Ok(m) if m.is_file() => Ok(abs),
        Ok(_) => Err(Error::invalid(format!(
            "--license-file {} is not a regular file",
            abs.display()
        ))
        .with_hint("give the path of the licence file InfluxData sent you")),
        Err(e) => Err(Error::invalid(format!(
            "--license-file {} cannot be used: {e}",
            abs.display()
        ))
        .with_hint("give the path of the licence file InfluxData sent you")),
    }
}

/// What the server's output told us, collected by the output filter.
#[derive(Default)]
struct Watch {
    /// The server asked for the e-mail confirmation.
    waiting: AtomicBool,
    /// The last start-up failure line (already redacted).
    failure: Mutex<Option<String>>,
}

/// Refuses (exit 2) to activate workspace `id` of an edition that needs no licence.
pub fn check_needs_license(product: &InfluxDb3, id: &str) -> Result<()> {
    if product.needs_license() {
        return Ok(());
    }
    Err(
        Error::invalid(format!("workspace {id} is InfluxDB 3 Core, which needs no licence"))
            .with_hint(format!(
                "serve it as it is (`tsbsctl influxdb3 serve --database-id {id}`); licences are for Enterprise workspaces"
            )),
    )
}

/// Activates the licence of Enterprise workspace `req.id`, opened (not yet locked) as `w`.
pub fn activate(
    w: &mut dyn WorkspaceOpCtx,
    product: &InfluxDb3,
    req: ActivateRequest,
) -> Result<ActivateOutcome> {
    check_needs_license(product, &req.id)?;
    w.lock()?;
    let reporter = w.reporter();
    let version = w.manifest().version.clone();
    let log = w.logs_dir().join(LOG_FILE);

    let current = w
        .manifest()
        .extra
        .get("license")
        .cloned()
        .unwrap_or(Value::Null);
    // An expired trial: the server finds the stored (expired) licence before any e-mail, so
    // only a licence file renews it.
    if let (Some(exp), LicenseSource::Email { .. }) = (trial_expiry(&current), &req.source) {
        if exp <= time::OffsetDateTime::now_utc() {
            return Err(Error::invalid(format!(
                "the trial licence of workspace {} expired at {}; another e-mail activation does not renew it",
                req.id,
                exp.format(&time::format_description::well_known::Rfc3339)
                    .unwrap_or_default()
            ))
            .with_hint(renewal_hint(&req.id)));
        }
    }
    if current["status"] == license::ACTIVE
        && current["source"] == req.source.name()
        && current["path"].as_str().map(Path::new) == req.source.path()
        && (req.source.path().is_some() || stored_license(w).is_some())
    {
        return Ok(ActivateOutcome {
            dir: w.dir().to_path_buf(),
            manifest: w.manifest().clone(),
            reused: true,
            log,
            waited: Duration::ZERO,
            diagnostics: Diagnostics::default(),
        });
    }

    let mut redactor = Redactor::new();
    let mut env = Vec::new();
    if let LicenseSource::Email {
        license_type,
        email,
    } = &req.source
    {
        redactor = redactor.with_secret(email);
        let (email_var, type_var) = license_env_names(&version);
        env.push((email_var.to_string(), email.clone()));
        env.push((type_var.to_string(), license_type.as_str().to_string()));
    }

    // The server is started as if the licence were active (that is what `serve` refuses
    // otherwise), with the licence source of this attempt.
    let mut timing = product.default_timing();
    timing.startup_timeout = req.timeout;
    if let Some(g) = req.stop_timeout {
        timing.grace = g;
    }
    let watch = Arc::new(Watch::default());
    let spec = w.server_spec(ServerStart {
        fields: vec![(
            "license".into(),
            json!({"status": license::ACTIVE, "source": req.source.name(), "path": req.source.path()}),
        )],
        log: log.clone(),
        timing,
        kill_orphan: req.kill_orphan,
        env,
        output_filter: activation_filter(redactor.clone(), Arc::clone(&watch)),
    })?;

    let logs = w.logs_dir();
    fs_err::create_dir_all(&logs)?;
    let offset = std::fs::metadata(&log).map(|m| m.len()).unwrap_or(0);
    append_line(
        &log,
        &format!(
            "\n# {} tsbsctl: licence activation attempt (source={})",
            manifest::now_rfc3339(),
            req.source.name()
        ),
    )?;
    reporter.info(&format!(
        "starting {} {} for workspace {} to activate a {} licence (log: {})",
        product.display_name(),
        version,
        req.id,
        req.source.name(),
        log.display()
    ));
    let started = Instant::now();
    let mut server = Server::start(spec, reporter.as_ref())?;
    let heartbeat = Heartbeat::start(
        reporter.clone(),
        Arc::clone(&watch),
        req.timeout,
        matches!(req.source, LicenseSource::Email { .. }),
    );
    let ready = server.wait_ready();
    heartbeat.stop();
    let waited = started.elapsed();

    // Done means serving *and* the licence stored in the data directory.
    let served = ready.is_ok();
    let result = ready.and_then(|()| match &req.source {
        LicenseSource::File(_) => Ok(()),
        LicenseSource::Email { .. } => stored_license(w).map(|_| ()).ok_or_else(|| {
            Error::failed(format!(
                "{} served, but stored no licence under {}",
                server.label(),
                cluster_dir(w).display()
            ))
            .with_hint(format!("see {}; run activate again", log.display()))
        }),
    });
    // Whatever happened, the server is stopped before the manifest is written.
    let outcome = server.stop();
    if result.is_ok() && outcome.forced {
        reporter.warning(&Warning::KilledAfterGrace {
            label: server.label().to_string(),
        });
    }
    let events = server.events().to_vec();
    drop(server);
    scrub_log(&log, &redactor);

    let mut diagnostics = Diagnostics::default();
    if let Ok(bytes) = std::fs::read(&log) {
        let part = bytes.get(offset as usize..).unwrap_or_default();
        diagnostics.scan_text(
            &format!("logs/{LOG_FILE}"),
            &String::from_utf8_lossy(part),
            &redactor,
        );
    }

    let waiting = watch.waiting.load(Ordering::SeqCst);
    let (status, attempt) = match &result {
        Ok(()) => (license::ACTIVE, "active"),
        Err(e) if e.kind == ErrorKind::Interrupted => {
            (if waiting { license::PENDING } else { "" }, "interrupted")
        }
        Err(_) if served => (license::PENDING, "no-licence-stored"),
        Err(_) if outcome.unexpected => ("", "server-exited"),
        Err(_) => (license::PENDING, "timeout"),
    };
    let now = manifest::now_rfc3339();
    let attempt_record = json!({
        "at": now,
        "source": req.source.name(),
        "result": attempt,
        "waited_seconds": (waited.as_millis() as f64 / 1000.0),
        "log": format!("logs/{LOG_FILE}"),
        "events": events,
    });
    let mut lic = if status.is_empty() {
        // The attempt failed before anything was pending: the recorded licence is unchanged.
        current.as_object().cloned().unwrap_or_default()
    } else {
        let mut m = serde_json::Map::new();
        m.insert("status".into(), json!(status));
        m.insert("source".into(), json!(req.source.name()));
        m.insert("path".into(), json!(req.source.path()));
        if status == license::ACTIVE {
            m.insert("activated_at".into(), json!(now));
        }
        m
    };
    lic.insert("last_attempt".into(), attempt_record);
    w.record("license", Value::Object(lic))?;

    if let Err(e) = result {
        let id = &req.id;
        let resume = format!(
            "run the same `tsbsctl influxdb3 activate --database-id {id} ...` again to resume"
        );
        let failure = watch.failure.lock().ok().and_then(|f| f.clone());
        return Err(match attempt {
            "timeout" if waiting => Error::failed(format!(
                "the licence e-mail was not confirmed within {}; workspace {id}'s licence is pending",
                human_duration(req.timeout)
            ))
            .with_hint(format!(
                "open the verification e-mail from InfluxData and click its link, then {resume} \
                 (raise --timeout to wait longer); the server's output is in {}",
                log.display()
            )),
            "timeout" => Error::failed(format!(
                "{} {} did not serve within {}; workspace {id}'s licence is pending",
                product.display_name(),
                version,
                human_duration(req.timeout)
            ))
            .with_hint(format!("read {}; then {resume}", log.display())),
            "server-exited" => Error::failed(format!(
                "{} stopped during activation{}",
                product.display_name(),
                failure.map(|f| format!(": {f}")).unwrap_or_default()
            ))
            .with_hint(format!(
                "read {}; fix the cause, then run activate again",
                log.display()
            )),
            "no-licence-stored" => e,
            _ => e.with_hint(format!("the server was stopped; {resume}")),
        });
    }
    Ok(ActivateOutcome {
        dir: w.dir().to_path_buf(),
        manifest: w.manifest().clone(),
        reused: false,
        log,
        waited,
        diagnostics,
    })
}

/// `data/<cluster-id>/` of a workspace.
fn cluster_dir(w: &dyn WorkspaceOpCtx) -> PathBuf {
    let cluster = w.manifest().extra["cluster_id"].as_str().unwrap_or("");
    w.data_dir().join(cluster)
}

/// The licence file the server stored in the data directory, if any (by name only; never read).
fn stored_license(w: &dyn WorkspaceOpCtx) -> Option<PathBuf> {
    [license::TRIAL_OR_HOME_FILE, license::COMMERCIAL_FILE]
        .iter()
        .map(|n| cluster_dir(w).join(n))
        .find(|p| p.is_file())
}

/// The output filter: redacts every line, and notes what the server says about the licence.
fn activation_filter(redactor: Redactor, watch: Arc<Watch>) -> OutputFilter {
    OutputFilter(Arc::new(move |line: &str| {
        let clean = redactor.redact(line);
        if clean.contains("Waiting for verification") || clean.contains("Please check your inbox") {
            watch.waiting.store(true, Ordering::SeqCst);
        }
        if let Some(i) = clean.find("Serve command failed: ") {
            if let Ok(mut f) = watch.failure.lock() {
                *f = Some(
                    clean[i + "Serve command failed: ".len()..]
                        .trim()
                        .to_string(),
                );
            }
        }
        clean
    }))
}

fn append_line(path: &Path, line: &str) -> Result<()> {
    let mut f = fs_err::OpenOptions::new()
        .create(true)
        .append(true)
        .open(path)?;
    Ok(writeln!(f, "{line}")?)
}

/// Belt and braces: if the log somehow holds a secret (a line split by the server mid-address),
/// rewrites it redacted, atomically.
fn scrub_log(path: &Path, redactor: &Redactor) {
    let Ok(bytes) = std::fs::read(path) else {
        return;
    };
    let text = String::from_utf8_lossy(&bytes);
    let clean: String = text
        .split_inclusive('\n')
        .map(|l| {
            let body = l.trim_end_matches('\n');
            let mut s = redactor.redact(body);
            if l.ends_with('\n') {
                s.push('\n');
            }
            s
        })
        .collect();
    if clean.as_bytes() != bytes.as_slice() {
        let _ = fsutil::write_atomic(path, clean.as_bytes());
    }
}

/// `30m`, `1m30s`, `2.5s`.
pub fn human_duration(d: Duration) -> String {
    let s = d.as_secs();
    if d.subsec_millis() != 0 && s < 60 {
        return format!("{}s", d.as_secs_f64());
    }
    match (s / 3600, (s % 3600) / 60, s % 60) {
        (0, 0, s) => format!("{s}s"),
        (0, m, 0) => format!("{m}m"),
        (0, m, s) => format!("{m}m{s}s"),
        (h, m, _) => format!("{h}h{m}m"),
    }
}

/// One heartbeat line; `None` once less than a second is left (the wait is ending, and "0s
/// left" said twice while the server stops helps nobody, trial-run #30). Seconds left round
/// up, elapsed ones down, so the two never add up to more than the timeout.
fn heartbeat_line(what: &str, elapsed: Duration, timeout: Duration) -> Option<String> {
    let left = timeout.saturating_sub(elapsed);
    if left < Duration::from_secs(1) {
        return None;
    }
    let left_secs = left.as_secs() + u64::from(left.subsec_nanos() > 0);
    Some(format!(
        "still waiting for {what}: {} elapsed, {} left",
        human_duration(Duration::from_secs(elapsed.as_secs())),
        human_duration(Duration::from_secs(left_secs))
    ))
}

/// A thread telling the person what is going on while the server waits: once the server says
/// it sent the verification e-mail, the instruction to confirm it; then a line every interval.
struct Heartbeat {
    stop: Arc<AtomicBool>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl Heartbeat {
    fn start(
        reporter: Arc<dyn Reporter>,
        watch: Arc<Watch>,
        timeout: Duration,
        email: bool,
    ) -> Heartbeat {
        let stop = Arc::new(AtomicBool::new(false));
        let flag = Arc::clone(&stop);
        // Every 30 s on a real wait; more often on short ones, so the wait is visibly alive.
        let every = (timeout / 10).clamp(Duration::from_secs(1), Duration::from_secs(30));
        let thread = std::thread::spawn(move || {
            let started = Instant::now();
            let mut told = false;
            let mut next = started + every;
            while !flag.load(Ordering::SeqCst) {
                std::thread::sleep(Duration::from_millis(50));
                if email && !told && watch.waiting.load(Ordering::SeqCst) {
                    told = true;
                    reporter.info(&format!(
                        "InfluxData sent a verification e-mail to the address you gave: open it and \
                         click the link to confirm. Waiting up to {} (Ctrl-C stops; running activate \
                         again resumes)",
                        human_duration(timeout)
                    ));
                }
                if Instant::now() >= next {
                    next += every;
                    let elapsed = started.elapsed();
                    let what = if told {
                        "the e-mail confirmation"
                    } else {
                        "InfluxDB 3 Enterprise to serve"
                    };
                    if let Some(line) = heartbeat_line(what, elapsed, timeout) {
                        reporter.info(&line);
                    }
                }
            }
        });
        Heartbeat {
            stop,
            thread: Some(thread),
        }
    }

    fn stop(mut self) {
        self.stop.store(true, Ordering::SeqCst);
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn defect_30_heartbeat_never_says_0s_left() {
        let t = Duration::from_secs(10);
        assert_eq!(heartbeat_line("x", Duration::from_millis(9_400), t), None);
        assert_eq!(heartbeat_line("x", Duration::from_secs(12), t), None);
        let l = heartbeat_line("x", Duration::from_millis(8_500), t).unwrap();
        assert!(
            l.ends_with(&format!("{} left", human_duration(Duration::from_secs(2)))),
            "{l}"
        );
    }

    #[test]
    fn emails_are_checked_without_being_echoed() {
        assert_eq!(
            check_email("  a.b@example.com\n", "x").unwrap(),
            "a.b@example.com"
        );
        for bad in [
            "",
            "nobody",
            "a@b",
            "a b@example.com",
            "a@@example.com",
            "@example.com",
            "a@.com",
        ] {
            let e = check_email(bad, "$V").unwrap_err();
            assert_eq!(e.exit_code(), 2, "{bad}");
            if !bad.is_empty() {
                assert!(!e.message.contains(bad.trim()), "{}", e.message);
            }
        }
    }

    #[test]
    fn the_filter_redacts_and_watches() {
        let watch = Arc::new(Watch::default());
        let f = activation_filter(
            Redactor::new().with_secret("me@example.com"),
            Arc::clone(&watch),
        );
        let out = (f.0)("2026-11-29T00:00:00Z  INFO influxdb3_enterprise::license: requesting license email=me@example.com license_type=trial");
        assert!(!out.contains("me@example.com"), "{out}");
        assert!(!watch.waiting.load(Ordering::SeqCst));
        (f.0)("Waiting for verification...");
        assert!(watch.waiting.load(Ordering::SeqCst));
        (f.0)("Serve command failed: License management error: expired for me@example.com");
        let failure = watch.failure.lock().unwrap().clone().unwrap();
        assert_eq!(
            failure,
            "License management error: expired for <redacted-email>"
        );
    }

    /// A workspace context without a workspace: what the operation asked of it.
    struct Fake {
        m: WorkspaceManifest,
        dir: PathBuf,
        locked: bool,
        records: usize,
    }

    impl Fake {
        fn new(license: Value) -> Fake {
            let m = serde_json::from_value(json!({
                "database_id": "ent", "product": "influxdb3", "edition": "enterprise",
                "version": "3.11.1", "version_source": "explicit", "platform": "linux-amd64",
                "installation_path": "/nonexistent", "binary_sha256": "0", "database": "benchmark",
                "ports": {"http": 1}, "config_sha256": null, "binding": null,
                "created_at": "2026-01-01T00:00:00Z", "updated_at": "2026-01-01T00:00:00Z",
                "tool_version": "0", "cluster_id": "ent-cluster", "license": license,
            }))
            .unwrap();
            Fake {
                m,
                dir: PathBuf::from("/nonexistent/ent"),
                locked: false,
                records: 0,
            }
        }
    }

    impl WorkspaceOpCtx for Fake {
        fn reporter(&self) -> crate::output::SharedReporter {
            Arc::new(crate::output::SilentReporter)
        }
        fn lock(&mut self) -> Result<()> {
            self.locked = true;
            Ok(())
        }
        fn manifest(&self) -> &WorkspaceManifest {
            &self.m
        }
        fn dir(&self) -> &Path {
            &self.dir
        }
        fn logs_dir(&self) -> PathBuf {
            self.dir.join("logs")
        }
        fn data_dir(&self) -> PathBuf {
            self.dir.join("data")
        }
        fn record(&mut self, _key: &str, _value: Value) -> Result<()> {
            self.records += 1;
            Ok(())
        }
        fn server_spec(&self, _start: ServerStart) -> Result<crate::server::ServerSpec> {
            // Any start fails the test: neither case may reach the server.
            Err(Error::failed("no server in this test"))
        }
    }

    fn request(source: LicenseSource) -> ActivateRequest {
        ActivateRequest {
            id: "ent".into(),
            source,
            timeout: Duration::from_secs(1),
            stop_timeout: None,
            kill_orphan: false,
        }
    }

    #[test]
    fn core_is_refused_before_the_lock() {
        let mut w = Fake::new(json!({"status": license::NOT_REQUIRED}));
        let e = activate(
            &mut w,
            &InfluxDb3::new(super::super::Edition::Core),
            request(LicenseSource::File("/x/lic".into())),
        )
        .unwrap_err();
        assert_eq!(e.exit_code(), 2);
        assert!(e.message.contains("needs no licence"), "{}", e.message);
        assert!(!w.locked);
        assert_eq!(w.records, 0);
    }

    #[test]
    fn the_same_active_licence_file_is_reused_under_the_lock_without_a_server() {
        let mut w =
            Fake::new(json!({"status": license::ACTIVE, "source": "file", "path": "/x/lic"}));
        let o = activate(
            &mut w,
            &InfluxDb3::new(super::super::Edition::Enterprise),
            request(LicenseSource::File("/x/lic".into())),
        )
        .unwrap();
        assert!(o.reused && w.locked);
        assert_eq!(o.dir, w.dir);
        assert_eq!(o.log, w.dir.join("logs").join(LOG_FILE));
        assert_eq!(o.manifest.extra["license"]["path"], "/x/lic");
        assert_eq!(w.records, 0);
    }

    #[test]
    fn durations() {
        assert_eq!(human_duration(Duration::from_secs(1800)), "30m");
        assert_eq!(human_duration(Duration::from_secs(90)), "1m30s");
        assert_eq!(human_duration(Duration::from_millis(2500)), "2.5s");
        assert_eq!(human_duration(Duration::from_secs(3700)), "1h1m");
    }
}
