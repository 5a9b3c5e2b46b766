//! A managed PostgreSQL cluster in a workspace, run as a real DBA would (reference §2, §3,
//! §8.2-8.5, 8.11): initdb as an unprivileged user when tsbsctl is root, with the directories
//! it needs owned by that user and every parent traversable; the benchmark settings rendered
//! from `templates/timescaledb/postgresql.conf.j2` and included into `postgresql.conf`; the
//! server itself in the FOREGROUND (`postgres -D`), so the supervisor owns its pid and stops it
//! with SIGINT (PostgreSQL's fast shutdown); stale `postmaster.pid` handling; the server log's
//! `FATAL` lines for error messages; and readiness by `pg_isready`, returned as data.

use std::io::Write as _;
use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::process::Command;

use serde::{Deserialize, Serialize};

use super::install::PgInstallation;
use crate::error::{Error, Result};
use crate::product::ServerCommand;

const TEMPLATE: &str = include_str!("../../../templates/timescaledb/postgresql.conf.j2");

/// The file the rendered settings go to, inside the data directory.
pub const CONFIG_NAME: &str = "tsbsctl.conf";
/// The line appended to `postgresql.conf` (relative includes resolve next to it).
pub const INCLUDE_LINE: &str = "include 'tsbsctl.conf'";

/// PostgreSQL's fast shutdown: active sessions are ended, the server stops cleanly.
pub const STOP_SIGNAL: i32 = libc::SIGINT;

/// The database superuser initdb creates, whatever the OS user (`-U postgres`), so the TSBS
/// tools' default `--user=postgres` works.
pub const SUPERUSER: &str = "postgres";

/// Where a workspace's cluster lives.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Layout {
    /// The cluster (`PGDATA`), mode 0700, owned by the server's user.
    pub data_dir: PathBuf,
    /// `unix_socket_directories`: owned by the server's user.
    pub socket_dir: PathBuf,
}

impl Layout {
    /// `<dir>/data` and `<dir>/sock`.
    pub fn in_dir(dir: &Path) -> Layout {
        Layout {
            data_dir: dir.join("data"),
            socket_dir: dir.join("sock"),
        }
    }
}

/// Which OS user runs initdb and the server.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum RunAs {
    /// tsbsctl is not root: it runs them itself.
    Current,
    /// tsbsctl is root (PostgreSQL refuses to run as root): Debian's `postgres` user when it
    /// exists (`name` set), else `nobody` (uid/gid 65534) through `setpriv`.
    User {
        name: Option<String>,
        uid: u32,
        gid: u32,
    },
}

impl RunAs {
    /// `Current` unless the effective uid is 0.
    pub fn detect() -> RunAs {
        if !nix::unistd::geteuid().is_root() {
            return RunAs::Current;
        }
        match nix::unistd::User::from_name("postgres") {
            Ok(Some(u)) => RunAs::User {
                name: Some(u.name),
                uid: u.uid.as_raw(),
                gid: u.gid.as_raw(),
            },
            _ => RunAs::User {
                name: None,
                uid: 65534,
                gid: 65534,
            },
        }
    }

    pub fn describe(&self) -> String {
        match self {
            RunAs::Current => "the current user".to_string(),
            RunAs::User {
                name: Some(n), uid, ..
            } => format!("user {n} (uid {uid})"),
            RunAs::User {
                name: None, uid, ..
            } => format!("uid {uid}"),
        }
    }

    /// The command that runs `program args` as this user and returns when it ends:
    /// `runuser -u postgres --` for a named user, `setpriv --reuid --regid --clear-groups`
    /// for a bare uid.
    pub fn wrap_oneshot(&self, program: &Path, args: &[String]) -> Cmd {
        match self {
            RunAs::Current => Cmd::new(program, args.to_vec()),
            RunAs::User { name: Some(n), .. } => {
                let mut a = vec!["-u".to_string(), n.clone(), "--".to_string()];
                a.push(program.display().to_string());
                a.extend(args.iter().cloned());
                Cmd::new(Path::new("runuser"), a)
            }
            RunAs::User { .. } => self.wrap_exec(program, args),
        }
    }

    /// The command that BECOMES `program args` as this user (setpriv execs it: same pid, no
    /// parent in between). Used for the server, so the pid the supervisor holds is the
    /// postmaster's and SIGINT reaches it directly; runuser would stay as a parent that
    /// turns signals into SIGTERM (a smart shutdown that waits for clients).
    pub fn wrap_exec(&self, program: &Path, args: &[String]) -> Cmd {
        match self {
            RunAs::Current => Cmd::new(program, args.to_vec()),
            RunAs::User { name, uid, gid } => {
                let groups = if name.is_some() {
                    "--init-groups"
                } else {
                    "--clear-groups"
                };
                // The kernel clears the parent-death signal tsbsctl set when the uid
                // changes; `keep` sets it again, so a killed tsbsctl leaves no postmaster.
                let mut a = vec![
                    format!("--reuid={uid}"),
                    format!("--regid={gid}"),
                    groups.to_string(),
                    "--pdeathsig=keep".to_string(),
                ];
                a.push(program.display().to_string());
                a.extend(args.iter().cloned());
                Cmd::new(Path::new("setpriv"), a)
            }
        }
    }

    fn ids(&self) -> Option<(u32, u32)> {
        match self {
            RunAs::Current => None,
            RunAs::User { uid, gid, .. } => Some((*uid, *gid)),
        }
    }
}

/// A bare program name (`runuser`, `setpriv`) as found on `PATH`, else in the system
/// directories: `runuser` lives in `/usr/sbin`, which a user's `PATH` often lacks (Debian's
/// default for users other than root).
pub fn resolve_system_tool(program: &Path) -> PathBuf {
    if program.components().count() != 1 {
        return program.to_path_buf();
    }
    let on_path = std::env::var_os("PATH")
        .map(|p| std::env::split_paths(&p).collect::<Vec<_>>())
        .unwrap_or_default();
    on_path
        .into_iter()
        .chain(["/usr/sbin", "/usr/bin", "/sbin", "/bin"].map(PathBuf::from))
        .map(|d| d.join(program))
        .find(|p| p.is_file())
        .unwrap_or_else(|| program.to_path_buf())
}

/// A command line, as data (tests and the supervisor decide how to run it).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Cmd {
    pub program: PathBuf,
    pub args: Vec<String>,
}

impl Cmd {
    pub fn new(program: &Path, args: Vec<String>) -> Cmd {
        Cmd {
            program: program.to_path_buf(),
            args,
        }
    }

    pub fn command(&self) -> Command {
        let mut c = Command::new(resolve_system_tool(&self.program));
        c.args(&self.args);
        c
    }

    /// The whole line, for logs and manifests (no secret is ever on it).
    pub fn display(&self) -> String {
        std::iter::once(self.program.display().to_string())
            .chain(self.args.iter().cloned())
            .collect::<Vec<_>>()
            .join(" ")
    }
}

/// Creates the data and socket directories for `run_as`: data 0700, socket 0755, both owned
/// by the server's user; then checks that user can traverse every parent directory (else
/// initdb fails with `could not access directory ...: Permission denied`, fixture
/// `server/fail-initdb-untraversable-parent.txt`), and says which parent and why.
pub fn prepare_dirs(layout: &Layout, run_as: &RunAs) -> Result<()> {
    for (dir, mode) in [(&layout.data_dir, 0o700), (&layout.socket_dir, 0o755)] {
        fs_err::create_dir_all(dir)?;
        fs_err::set_permissions(dir, std::fs::Permissions::from_mode(mode))?;
        if let Some((uid, gid)) = run_as.ids() {
            fs_err::os::unix::fs::chown(dir, Some(uid), Some(gid))?;
        }
    }
    check_traversable(&layout.data_dir, run_as)?;
    check_traversable(&layout.socket_dir, run_as)
}

/// Every parent of `dir` must let `run_as` search it (x for its owner, group or others).
pub fn check_traversable(dir: &Path, run_as: &RunAs) -> Result<()> {
    let Some((uid, gid)) = run_as.ids() else {
        return Ok(());
    };
    let groups = supplementary_groups(run_as, gid);
    let abs = std::path::absolute(dir).map_err(|e| Error::io("resolve", dir, e))?;
    for parent in abs.ancestors().skip(1) {
        let meta = fs_err::metadata(parent)?;
        let mode = meta.mode();
        let ok = if meta.uid() == uid {
            mode & 0o100 != 0
        } else if groups.contains(&meta.gid()) {
            mode & 0o010 != 0
        } else {
            mode & 0o001 != 0
        };
        if !ok {
            return Err(Error::failed(format!(
                "{} cannot reach {}: the parent directory {} (mode {:04o}, owner uid {}) is not traversable by it",
                run_as.describe(),
                dir.display(),
                parent.display(),
                mode & 0o7777,
                meta.uid()
            ))
            .with_hint(format!(
                "PostgreSQL runs as {} and needs to search every directory above its data: `chmod o+x {}` or put the workspace elsewhere",
                run_as.describe(),
                parent.display()
            )));
        }
    }
    Ok(())
}

fn supplementary_groups(run_as: &RunAs, gid: u32) -> Vec<u32> {
    let mut out = vec![gid];
    if let RunAs::User { name: Some(n), .. } = run_as {
        if let Ok(c) = std::ffi::CString::new(n.as_str()) {
            if let Ok(gs) = nix::unistd::getgrouplist(&c, nix::unistd::Gid::from_raw(gid)) {
                out.extend(gs.into_iter().map(|g| g.as_raw()));
            }
        }
    }
    out
}

/// `initdb -D <data> -U postgres --auth=trust -E UTF8 --locale=C --no-instructions`, as
/// `run_as` (reference §8.3: `--locale=C -E UTF8` for reproducibility, trust on a
/// loopback-only cluster).
pub fn initdb_command(inst: &PgInstallation, layout: &Layout, run_as: &RunAs) -> Cmd {
    let args = vec![
        "-D".to_string(),
        layout.data_dir.display().to_string(),
        "-U".to_string(),
        SUPERUSER.to_string(),
        "--auth=trust".to_string(),
        "-E".to_string(),
        "UTF8".to_string(),
        "--locale=C".to_string(),
        "--no-instructions".to_string(),
    ];
    run_as.wrap_oneshot(&inst.binary("initdb"), &args)
}

/// Runs initdb into an empty (or new) data directory. A non-empty one is refused: it may be
/// someone's cluster.
pub fn initdb(inst: &PgInstallation, layout: &Layout, run_as: &RunAs) -> Result<String> {
    if let Ok(mut rd) = std::fs::read_dir(&layout.data_dir) {
        if rd.next().is_some() {
            return Err(Error::invalid(format!(
                "data directory {} is not empty",
                layout.data_dir.display()
            ))
            .with_hint("remove the workspace's server data first (it is not initialised twice)"));
        }
    }
    prepare_dirs(layout, run_as)?;
    let cmd = initdb_command(inst, layout, run_as);
    let out = cmd
        .command()
        .env("LC_ALL", "C")
        .output()
        .map_err(|e| Error::failed(format!("could not run {}: {e}", cmd.display())))?;
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    if !out.status.success() {
        let errors: Vec<&str> = text
            .lines()
            .filter(|l| l.starts_with("initdb: error") || l.starts_with("initdb: hint"))
            .collect();
        let detail = if errors.is_empty() {
            text.trim().to_string()
        } else {
            errors.join("; ")
        };
        return Err(Error::failed(format!(
            "initdb failed ({}): {detail}",
            out.status
        )));
    }
    Ok(text)
}

/// The benchmark settings (reference §3, fixture `server/bench.conf`). They change results, so
/// the run manifest records them with the rendered file.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Settings {
    pub port: u16,
    pub socket_dir: PathBuf,
    /// `shared_preload_libraries = 'timescaledb'`: only in TimescaleDB mode.
    pub timescaledb: bool,
    /// Commit and WAL settings (`synchronous_commit`, `wal_level`).
    pub durability: super::Durability,
    pub max_connections: u32,
    pub shared_buffers: String,
    pub effective_cache_size: String,
    pub work_mem: String,
    pub maintenance_work_mem: String,
    pub max_wal_size: String,
    pub min_wal_size: String,
    pub max_worker_processes: u32,
    pub max_parallel_workers: u32,
    pub max_parallel_workers_per_gather: u32,
}

impl Settings {
    /// The settings of the real run (2 CPUs, 23 GiB).
    pub fn bench(
        port: u16,
        socket_dir: &Path,
        timescaledb: bool,
        durability: super::Durability,
    ) -> Settings {
        Settings {
            port,
            socket_dir: socket_dir.to_path_buf(),
            timescaledb,
            durability,
            max_connections: 100,
            shared_buffers: "1GB".into(),
            effective_cache_size: "8GB".into(),
            work_mem: "64MB".into(),
            maintenance_work_mem: "512MB".into(),
            max_wal_size: "4GB".into(),
            min_wal_size: "256MB".into(),
            max_worker_processes: 8,
            max_parallel_workers: 2,
            max_parallel_workers_per_gather: 1,
        }
    }
}

/// A PostgreSQL string literal: single quotes, embedded quotes doubled.
fn pg_string(s: String) -> String {
    format!("'{}'", s.replace('\'', "''"))
}

/// Renders the settings file.
pub fn render_config(
    settings: &Settings,
    database_id: &str,
    mode_label: &str,
    tool_version: &str,
) -> Result<String> {
    let mut env = minijinja::Environment::new();
    env.set_trim_blocks(true);
    env.add_filter("pgstr", pg_string);
    env.add_template("postgresql.conf", TEMPLATE)
        .map_err(|e| Error::failed(format!("bad PostgreSQL config template: {e}")))?;
    let t = env.get_template("postgresql.conf").expect("just added");
    let mut ctx = serde_json::to_value(settings).expect("settings serialise");
    let obj = ctx.as_object_mut().expect("an object");
    obj.insert("database_id".into(), database_id.into());
    obj.insert("mode_label".into(), mode_label.into());
    obj.insert("tool_version".into(), tool_version.into());
    obj.insert(
        "socket_dir".into(),
        settings.socket_dir.display().to_string().into(),
    );
    t.render(minijinja::Value::from_serialize(&ctx))
        .map_err(|e| Error::failed(format!("could not render the PostgreSQL config: {e}")))
}

/// Writes the rendered settings to `<data>/tsbsctl.conf` (readable by the server's user) and
/// includes it at the end of `postgresql.conf`, once. Returns the settings file's path.
pub fn install_config(data_dir: &Path, rendered: &str, run_as: &RunAs) -> Result<PathBuf> {
    let path = data_dir.join(CONFIG_NAME);
    crate::fsutil::write_atomic(&path, rendered.as_bytes())?;
    fs_err::set_permissions(&path, std::fs::Permissions::from_mode(0o644))?;
    if let Some((uid, gid)) = run_as.ids() {
        fs_err::os::unix::fs::chown(&path, Some(uid), Some(gid))?;
    }
    let main = data_dir.join("postgresql.conf");
    let text = fs_err::read_to_string(&main)?;
    if !text.lines().any(|l| l.trim() == INCLUDE_LINE) {
        let mut f = fs_err::OpenOptions::new().append(true).open(&main)?;
        let sep = if text.ends_with('\n') || text.is_empty() {
            ""
        } else {
            "\n"
        };
        writeln!(
            f,
            "{sep}\n# tsbsctl's benchmark settings (they win: last one counts)\n{INCLUDE_LINE}"
        )?;
    }
    Ok(path)
}

/// The `name = value` assignments of a settings file, in order, string values unquoted
/// (`'a''b'` is `a'b`), comments and `include` lines left out.
pub fn config_assignments(text: &str) -> Vec<(String, String)> {
    let mut out = Vec::new();
    for line in text.lines() {
        let line = line.trim();
        let Some((name, rest)) = line.split_once('=') else {
            continue;
        };
        let name = name.trim();
        if name.is_empty() || name.starts_with('#') || name.contains(char::is_whitespace) {
            continue;
        }
        let rest = rest.trim_start();
        let value = if let Some(quoted) = rest.strip_prefix('\'') {
            let mut v = String::new();
            let mut chars = quoted.chars().peekable();
            while let Some(c) = chars.next() {
                if c == '\'' {
                    if chars.peek() == Some(&'\'') {
                        chars.next();
                        v.push('\'');
                        continue;
                    }
                    break;
                }
                v.push(c);
            }
            v
        } else {
            rest.split(|c: char| c.is_whitespace() || c == '#')
                .next()
                .unwrap_or_default()
                .to_string()
        };
        out.push((name.to_string(), value));
    }
    out
}

/// The settings of the cluster's own files that tsbsctl did not write: `postgresql.auto.conf`
/// (`ALTER SYSTEM`) and the lines after tsbsctl's include in `postgresql.conf` (the lines
/// before it are initdb's, and the include replaces any of them it names). Each is marked
/// overridden when `ours` (the workspace's settings, also on the command line) names it.
pub fn outside_settings(
    data_dir: &Path,
    ours: &[(String, String)],
) -> Result<Vec<crate::product::OutsideSetting>> {
    let read = |name: &str| -> Result<String> {
        let p = data_dir.join(name);
        match fs_err::read_to_string(&p) {
            Ok(t) => Ok(t),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(String::new()),
            Err(e) => Err(e.into()),
        }
    };
    let main = read("postgresql.conf")?;
    let after_include = main
        .lines()
        .skip_while(|l| l.trim() != INCLUDE_LINE)
        .skip(1)
        .collect::<Vec<_>>()
        .join("\n");
    let mut out = Vec::new();
    for (file, text) in [
        ("postgresql.conf", after_include),
        ("postgresql.auto.conf", read("postgresql.auto.conf")?),
    ] {
        for (name, value) in config_assignments(&text) {
            let overridden = ours.iter().any(|(n, _)| n.eq_ignore_ascii_case(&name));
            out.push(crate::product::OutsideSetting {
                file: file.into(),
                name,
                value,
                overridden,
            });
        }
    }
    Ok(out)
}

/// The foreground server: `postgres -D <data> -c name=value ...` as the server's user
/// (exec'd, see [`RunAs::wrap_exec`]); stop it with [`STOP_SIGNAL`]. Every setting of the
/// workspace's file is also passed with `-c`: the command line wins over `postgresql.conf`,
/// whatever follows the include, and `postgresql.auto.conf` (`ALTER SYSTEM`), so the settings
/// recorded are the settings in force.
pub fn server_command(
    inst: &PgInstallation,
    layout: &Layout,
    run_as: &RunAs,
    settings: &[(String, String)],
) -> ServerCommand {
    let mut args = vec!["-D".to_string(), layout.data_dir.display().to_string()];
    for (name, value) in settings {
        args.push("-c".into());
        args.push(format!("{name}={value}"));
    }
    let cmd = run_as.wrap_exec(&inst.binary("postgres"), &args);
    ServerCommand {
        program: cmd.program,
        args: cmd.args,
        // The server's messages in English, whatever the caller's locale, so FATAL lines match.
        env: vec![("LC_MESSAGES".into(), "C".into())],
        // Clients' variables that do not concern the server.
        env_remove: vec!["PGPASSWORD".into(), "PGDATA".into()],
    }
}

/// `pg_isready -h 127.0.0.1 -p PORT -U postgres` (clients may stay root: auth is by role).
pub fn pg_isready_command(inst: &PgInstallation, port: u16) -> Cmd {
    Cmd::new(
        &inst.binary("pg_isready"),
        vec![
            "-h".into(),
            "127.0.0.1".into(),
            "-p".into(),
            port.to_string(),
            "-U".into(),
            SUPERUSER.into(),
        ],
    )
}

/// The postmaster's own account of its state: `postmaster.pid` holds its pid on line 1 and,
/// on line 8, `starting` until recovery is done and connections are accepted, then `ready`
/// (PostgreSQL's `LOCK_FILE_LINE_PM_STATUS`; `pg_ctl -w` waits on the same line).
pub fn ready_gate(data_dir: &Path) -> crate::server::StatusGate {
    crate::server::StatusGate {
        path: data_dir.join("postmaster.pid"),
        pid_line: Some(1),
        status_line: 8,
        ready: "ready".into(),
    }
}

/// What `pg_isready`'s exit code says.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Readiness {
    Accepting,
    /// Starting up or shutting down: poll again.
    Rejecting,
    NoResponse,
    /// Bad parameters: polling again will not help.
    NoAttempt,
}

impl Readiness {
    pub fn from_exit(code: Option<i32>) -> Readiness {
        match code {
            Some(0) => Readiness::Accepting,
            Some(1) => Readiness::Rejecting,
            Some(2) => Readiness::NoResponse,
            _ => Readiness::NoAttempt,
        }
    }
}

/// Whether 127.0.0.1:`port` can be bound now (else the server fails with `could not bind`).
pub fn port_free(port: u16) -> bool {
    std::net::TcpListener::bind(("127.0.0.1", port)).is_ok()
}

/// The postmaster pid named in `<data>/postmaster.pid`, if the file is there.
pub fn postmaster_pid(data_dir: &Path) -> Option<i32> {
    let text = std::fs::read_to_string(data_dir.join("postmaster.pid")).ok()?;
    text.lines().next()?.trim().parse().ok()
}

/// True when `pid` is a live (not zombie) process that is a postgres.
fn postmaster_alive(pid: i32) -> bool {
    if !crate::fsutil::process_alive(pid) {
        return false;
    }
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        Ok(stat) => {
            let comm = stat
                .split_once('(')
                .and_then(|(_, r)| r.rsplit_once(')'))
                .map(|(c, rest)| (c.to_string(), rest.split_whitespace().next().unwrap_or("")));
            match comm {
                Some((_, "Z")) | Some((_, "X")) => false,
                // A reused pid that is not a postgres is no server.
                Some((c, _)) => c.starts_with("postgres") || c.starts_with("postmaster"),
                None => true,
            }
        }
        // No /proc: the signal probe is all there is.
        Err(_) => true,
    }
}

/// Before a start: a `postmaster.pid` whose process is gone is removed (the returned note
/// goes into the workspace's record); one whose server still runs is refused, naming the pid.
pub fn clear_stale_pid(data_dir: &Path) -> Result<Option<String>> {
    let file = data_dir.join("postmaster.pid");
    if !file.exists() {
        return Ok(None);
    }
    let pid = postmaster_pid(data_dir);
    if let Some(pid) = pid.filter(|p| postmaster_alive(*p)) {
        return Err(Error::busy(format!(
            "a PostgreSQL server (pid {pid}) is already running on {}",
            data_dir.display()
        ))
        .with_hint(format!(
            "stop it first (kill -INT {pid} is a fast shutdown), or wait until it has stopped"
        )));
    }
    fs_err::remove_file(&file)?;
    Ok(Some(match pid {
        Some(p) => format!(
            "removed a stale postmaster.pid (pid {p} no longer runs) from {}",
            data_dir.display()
        ),
        None => format!(
            "removed an unreadable postmaster.pid from {}",
            data_dir.display()
        ),
    }))
}

/// Before a start: socket lock files (`.s.PGSQL.<port>.lock`) of a postmaster that no longer
/// runs are removed. PostgreSQL itself only asks `kill(pid, 0)`, which a zombie answers (a
/// killed server's processes stay zombies where nothing reaps orphans, as in containers), so
/// it would refuse to start. Returns the removed files.
pub fn clear_stale_socket_locks(socket_dir: &Path) -> Result<Vec<PathBuf>> {
    let mut removed = Vec::new();
    let Ok(rd) = std::fs::read_dir(socket_dir) else {
        return Ok(removed);
    };
    for e in rd.flatten() {
        let name = e.file_name().to_string_lossy().into_owned();
        if !(name.starts_with(".s.PGSQL.") && name.ends_with(".lock")) {
            continue;
        }
        let pid = std::fs::read_to_string(e.path())
            .ok()
            .and_then(|t| t.lines().next().and_then(|l| l.trim().parse::<i32>().ok()));
        if pid.is_some_and(postmaster_alive) {
            continue;
        }
        fs_err::remove_file(e.path())?;
        removed.push(e.path());
    }
    Ok(removed)
}

#[cfg(test)]
mod tests {
    use super::super::Durability;
    use super::*;

    const FIX: &str = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/tests/fixtures/tsbs-real-postgresql"
    );

    fn fixture(p: &str) -> String {
        std::fs::read_to_string(format!("{FIX}/{p}")).unwrap()
    }

    fn inst() -> PgInstallation {
        PgInstallation {
            bin_dir: "/usr/lib/postgresql/15/bin".into(),
            found_by: super::super::install::FoundBy::Debian,
            version: super::super::install::parse_version("postgres (PostgreSQL) 15.18").unwrap(),
            binaries: Default::default(),
            share_dir: None,
            timescaledb: None,
        }
    }

    #[test]
    fn command_lines_as_the_reference_ran_them() {
        let layout = Layout::in_dir(Path::new("/srv/bench"));
        let pg = RunAs::User {
            name: Some("postgres".into()),
            uid: 101,
            gid: 104,
        };
        assert_eq!(
            initdb_command(&inst(), &layout, &pg).display(),
            "runuser -u postgres -- /usr/lib/postgresql/15/bin/initdb -D /srv/bench/data -U postgres --auth=trust -E UTF8 --locale=C --no-instructions"
        );
        let nobody = RunAs::User {
            name: None,
            uid: 65534,
            gid: 65534,
        };
        assert_eq!(
            initdb_command(&inst(), &layout, &nobody).display(),
            "setpriv --reuid=65534 --regid=65534 --clear-groups --pdeathsig=keep /usr/lib/postgresql/15/bin/initdb -D /srv/bench/data -U postgres --auth=trust -E UTF8 --locale=C --no-instructions"
        );
        assert_eq!(
            initdb_command(&inst(), &layout, &RunAs::Current).display(),
            "/usr/lib/postgresql/15/bin/initdb -D /srv/bench/data -U postgres --auth=trust -E UTF8 --locale=C --no-instructions"
        );
        let set = config_assignments("port = 15432\nunix_socket_directories = '/s/it''s'\n");
        let s = server_command(&inst(), &layout, &pg, &set);
        assert_eq!(s.program, PathBuf::from("setpriv"));
        assert_eq!(
            s.args,
            [
                "--reuid=101",
                "--regid=104",
                "--init-groups",
                "--pdeathsig=keep",
                "/usr/lib/postgresql/15/bin/postgres",
                "-D",
                "/srv/bench/data",
                "-c",
                "port=15432",
                "-c",
                "unix_socket_directories=/s/it's"
            ]
        );
        assert_eq!(
            pg_isready_command(&inst(), 15432).display(),
            "/usr/lib/postgresql/15/bin/pg_isready -h 127.0.0.1 -p 15432 -U postgres"
        );
        assert_eq!(Readiness::from_exit(Some(0)), Readiness::Accepting);
        assert_eq!(Readiness::from_exit(Some(1)), Readiness::Rejecting);
        assert_eq!(Readiness::from_exit(Some(2)), Readiness::NoResponse);
        assert_eq!(Readiness::from_exit(Some(3)), Readiness::NoAttempt);
        assert_eq!(Readiness::from_exit(None), Readiness::NoAttempt);
    }

    /// Every setting of the real run's bench.conf, with the same value, in both modes; the
    /// preload only in TimescaleDB mode.
    #[test]
    fn rendered_config_has_the_reference_settings() {
        let s = Settings::bench(
            15432,
            Path::new("/srv/bench/sock"),
            false,
            Durability::Relaxed,
        );
        let plain =
            render_config(&s, "pg-1", "PostgreSQL 15.18 (no TimescaleDB)", "0.1.0").unwrap();
        let settings = |text: &str| -> std::collections::BTreeMap<String, String> {
            text.lines()
                .filter(|l| !l.trim_start().starts_with('#') && l.contains('='))
                .map(|l| {
                    let (k, v) = l.split_once('=').unwrap();
                    (k.trim().to_string(), v.trim().to_string())
                })
                .collect()
        };
        let got = settings(&plain);
        for (k, v) in settings(&fixture("server/bench.conf")) {
            assert_eq!(got.get(&k), Some(&v), "setting {k}");
        }
        assert!(!got.contains_key("shared_preload_libraries"));
        assert!(plain.contains("PostgreSQL 15.18 (no TimescaleDB)"));
        let ts = render_config(
            &Settings::bench(
                15432,
                Path::new("/srv/bench/sock"),
                true,
                Durability::Relaxed,
            ),
            "pg-1",
            "TimescaleDB",
            "0.1.0",
        )
        .unwrap();
        assert_eq!(
            settings(&ts)
                .get("shared_preload_libraries")
                .map(String::as_str),
            Some("'timescaledb'")
        );
        // A quote in a path cannot end the literal.
        let odd = render_config(
            &Settings::bench(1, Path::new("/tmp/it's"), false, Durability::Durable),
            "x",
            "x",
            "x",
        )
        .unwrap();
        assert!(
            odd.contains("unix_socket_directories = '/tmp/it''s'"),
            "{odd}"
        );
    }

    /// The default: durable commits as published; the relaxed settings only when chosen.
    /// Every assignment of a rendered file goes to the command line, unquoted.
    #[test]
    fn durable_by_default_and_every_setting_on_the_command_line() {
        let durable = render_config(
            &Settings::bench(
                15432,
                Path::new("/srv/bench/sock"),
                false,
                Durability::Durable,
            ),
            "pg-1",
            "x",
            "0.1.0",
        )
        .unwrap();
        let set: std::collections::BTreeMap<String, String> =
            config_assignments(&durable).into_iter().collect();
        assert_eq!(set["synchronous_commit"], "on");
        assert_eq!(set["wal_level"], "replica");
        assert_eq!(set["fsync"], "on");
        assert!(!set.contains_key("max_wal_senders"), "{durable}");
        assert_eq!(set["listen_addresses"], "127.0.0.1");
        assert_eq!(set["unix_socket_directories"], "/srv/bench/sock");
        let relaxed = render_config(
            &Settings::bench(
                15432,
                Path::new("/srv/bench/sock"),
                false,
                Durability::Relaxed,
            ),
            "pg-1",
            "x",
            "0.1.0",
        )
        .unwrap();
        let set: std::collections::BTreeMap<String, String> =
            config_assignments(&relaxed).into_iter().collect();
        assert_eq!(set["synchronous_commit"], "off");
        assert_eq!(set["wal_level"], "minimal");
        assert_eq!(set["max_wal_senders"], "0");
        // Comments, includes and trailing comments are not settings.
        assert_eq!(
            config_assignments("# a = 1\ninclude 'x.conf'\nb = 2 # two\nc='x # y'\n"),
            [("b".into(), "2".into()), ("c".into(), "x # y".into())]
        );
    }

    #[test]
    fn outside_settings_are_those_after_the_include_and_in_auto_conf() {
        let dir = tempfile::tempdir().unwrap();
        let d = dir.path();
        assert_eq!(outside_settings(d, &[]).unwrap(), []);
        std::fs::write(
            d.join("postgresql.conf"),
            format!("max_connections = 100\n{INCLUDE_LINE}\nwork_mem = '64MB' # mine\n"),
        )
        .unwrap();
        std::fs::write(
            d.join("postgresql.auto.conf"),
            "# Do not edit this file manually!\nlisten_addresses = '*'\nSynchronous_Commit = 'off'\n",
        )
        .unwrap();
        let ours = [
            ("listen_addresses".to_string(), "127.0.0.1".to_string()),
            ("synchronous_commit".to_string(), "on".to_string()),
        ];
        let got: Vec<(String, String, String, bool)> = outside_settings(d, &ours)
            .unwrap()
            .into_iter()
            .map(|s| (s.file, s.name, s.value, s.overridden))
            .collect();
        let row = |f: &str, n: &str, v: &str, o| (f.into(), n.into(), v.into(), o);
        assert_eq!(
            got,
            [
                row("postgresql.conf", "work_mem", "64MB", false),
                row("postgresql.auto.conf", "listen_addresses", "*", true),
                row("postgresql.auto.conf", "Synchronous_Commit", "off", true),
            ]
        );
    }

    #[test]
    fn config_is_included_once() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("postgresql.conf"), "port = 5432").unwrap();
        let p = install_config(dir.path(), "port = 1\n", &RunAs::Current).unwrap();
        install_config(dir.path(), "port = 2\n", &RunAs::Current).unwrap();
        assert_eq!(std::fs::read_to_string(p).unwrap(), "port = 2\n");
        let main = std::fs::read_to_string(dir.path().join("postgresql.conf")).unwrap();
        assert_eq!(main.matches(INCLUDE_LINE).count(), 1);
        assert!(main.starts_with("port = 5432\n"), "{main}");
        assert!(main.trim_end().ends_with(INCLUDE_LINE));
    }

    #[test]
    fn stale_pid_is_removed_and_a_live_one_refused() {
        let dir = tempfile::tempdir().unwrap();
        assert_eq!(clear_stale_pid(dir.path()).unwrap(), None);
        // A pid that no longer runs: a reaped child's.
        let mut c = Command::new("true").spawn().unwrap();
        let dead = c.id() as i32;
        c.wait().unwrap();
        let pidfile = dir.path().join("postmaster.pid");
        std::fs::write(&pidfile, format!("{dead}\n/data\n")).unwrap();
        let note = clear_stale_pid(dir.path()).unwrap().unwrap();
        assert!(
            note.contains(&format!("pid {dead} no longer runs")),
            "{note}"
        );
        assert!(!pidfile.exists());
        // A live process that is not a postgres (this test) is a reused pid: stale too.
        std::fs::write(&pidfile, format!("{}\n", std::process::id())).unwrap();
        assert!(clear_stale_pid(dir.path()).unwrap().is_some());
        // A live postgres: refused, named. A `sleep` exec'd through a link named postgres has
        // that process name.
        let link = dir.path().join("postgres");
        let sleep = ["/bin/sleep", "/usr/bin/sleep"]
            .into_iter()
            .find(|p| Path::new(p).exists())
            .unwrap();
        std::os::unix::fs::symlink(sleep, &link).unwrap();
        let mut pg = Command::new(&link).arg("30").spawn().unwrap();
        // Until the exec is done, the child still has this test's name.
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
        while !std::fs::read_to_string(format!("/proc/{}/stat", pg.id()))
            .unwrap_or_default()
            .contains("(postgres)")
        {
            assert!(
                std::time::Instant::now() < deadline,
                "the stand-in postgres did not start"
            );
            std::thread::sleep(std::time::Duration::from_millis(10));
        }
        std::fs::write(&pidfile, format!("{}\n", pg.id())).unwrap();
        let e = clear_stale_pid(dir.path());
        let _ = pg.kill();
        let _ = pg.wait();
        let e = e.unwrap_err();
        assert_eq!(e.exit_code(), 3);
        assert!(
            e.message.contains(&format!("pid {}", pg.id())),
            "{}",
            e.message
        );
        assert!(pidfile.exists());
    }

    #[test]
    fn untraversable_parent_is_named() {
        if !nix::unistd::geteuid().is_root() {
            eprintln!("SKIP untraversable_parent_is_named: needs root to act as another user");
            return;
        }
        let top = tempfile::tempdir().unwrap();
        let private = top.path().join("private");
        std::fs::create_dir(&private).unwrap();
        std::fs::set_permissions(&private, std::fs::Permissions::from_mode(0o700)).unwrap();
        std::fs::set_permissions(top.path(), std::fs::Permissions::from_mode(0o755)).unwrap();
        let nobody = RunAs::User {
            name: None,
            uid: 65534,
            gid: 65534,
        };
        let layout = Layout::in_dir(&private);
        let e = prepare_dirs(&layout, &nobody).unwrap_err();
        assert!(
            e.message.contains(&format!(
                "parent directory {} (mode 0700",
                private.display()
            )),
            "{}",
            e.message
        );
        std::fs::set_permissions(&private, std::fs::Permissions::from_mode(0o711)).unwrap();
        prepare_dirs(&layout, &nobody).unwrap();
        let meta = std::fs::metadata(&layout.data_dir).unwrap();
        assert_eq!((meta.uid(), meta.mode() & 0o777), (65534, 0o700));
    }
}
