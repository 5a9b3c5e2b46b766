//! Command lines of the TSBS loaders and query runners (reference benchmark.md §3.3-§3.4),
//! built from typed parameters, flag by flag in the reference's order.
//!
//! Tokens are carried as [`Secret`]s and never reach a process's argv (issue 16 #4: any local
//! user can read `/proc/<pid>/cmdline`). The real tools merge a `config.*` file from their
//! working directory into their flags (viper: `SetConfigName("config")`, `AddConfigPath(".")`,
//! `BindPFlags`, then `GetString("auth-token")`; tsbs.md C7), so [`TsbsCommand::command`] runs
//! each tool from a fresh private directory (mode 0700) holding a `config.json` (mode 0600) with
//! the token keys, removed when the tool is done ([`ToolDir`]). A secret a tool's client library
//! reads from its environment (PostgreSQL's `PGPASSWORD`, which pgx reads) is set in the child's
//! environment only. Every rendering meant for people, logs or manifests
//! ([`TsbsCommand::redacted`], `Debug`) shows `<redacted>` instead.

use std::ffi::OsString;
use std::fmt;
use std::path::{Path, PathBuf};
use std::process::Command;

use crate::error::{Error, Result};

/// The loader's periodic report interval the reference passes.
pub const REPORTING_PERIOD: &str = "10s";
/// What every runner invocation passes: no interim stat blocks on stderr.
pub const PRINT_INTERVAL: &str = "0";
/// The prefix the GreptimeDB runner puts before every SQL in explain mode.
pub const EXPLAIN_PREFIX: &str = "EXPLAIN ANALYZE VERBOSE ";

/// A token. Its value never appears in `Debug`, `Display` or serialised output.
#[derive(Clone, PartialEq, Eq)]
pub struct Secret(String);

impl Secret {
    pub fn new(value: impl Into<String>) -> Secret {
        Secret(value.into())
    }
    /// The real value, for the child process only.
    pub fn expose(&self) -> &str {
        &self.0
    }
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }
}

impl fmt::Debug for Secret {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("<redacted>")
    }
}

/// `--database-mode`: what the loader does with an existing database (§5.6).
// The variants' notes are `//`, not `///`: clap would turn doc comments into help text.
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize, clap::ValueEnum,
)]
#[serde(rename_all = "lowercase")]
pub enum DatabaseMode {
    // Create it; abort (panic, exit 2) if it exists.
    Create,
    // Write into what is there (GreptimeDB still lists databases; InfluxDB 3 makes no admin call).
    Reuse,
    // Drop it if it exists, then create it. Needs a confirmation equal to the database name.
    Reset,
}

impl DatabaseMode {
    pub fn parse(s: &str) -> Result<DatabaseMode> {
        match s {
            "create" => Ok(DatabaseMode::Create),
            "reuse" => Ok(DatabaseMode::Reuse),
            "reset" => Ok(DatabaseMode::Reset),
            other => Err(Error::invalid(format!(
                "unknown database mode {other:?}; expected create, reuse or reset"
            ))
            .with_hint("pass --database-mode create|reuse|reset")),
        }
    }

    pub fn as_str(self) -> &'static str {
        match self {
            DatabaseMode::Create => "create",
            DatabaseMode::Reuse => "reuse",
            DatabaseMode::Reset => "reset",
        }
    }

    /// The loader flags of this mode, exactly as the reference passes them.
    pub fn flags(self) -> &'static [&'static str] {
        match self {
            DatabaseMode::Create => &["--do-create-db=true", "--do-abort-on-exist=true"],
            DatabaseMode::Reuse => &["--do-create-db=false"],
            DatabaseMode::Reset => &["--do-create-db=true"],
        }
    }

    /// Checks a reset's confirmation: it must name the SQL database exactly. Other modes
    /// ignore it. Called at validation time and again when the flags are built.
    pub fn check_confirmation(self, database: &str, confirm_reset: Option<&str>) -> Result<()> {
        if self != DatabaseMode::Reset {
            return Ok(());
        }
        match confirm_reset {
            Some(c) if c == database => Ok(()),
            Some(c) => Err(Error::invalid(format!(
                "--confirm-reset {c:?} does not match the SQL database {database:?}"
            ))
            .with_hint(format!(
                "a reset drops the database; confirm it with --confirm-reset {database}"
            ))),
            None => Err(Error::invalid(format!(
                "--database-mode reset drops the SQL database {database:?} and needs --confirm-reset {database}"
            ))
            .with_hint(format!("add --confirm-reset {database}, or use --database-mode reuse"))),
        }
    }
}

/// One argument: plain text, or a secret flag, which goes to the tool's `config.json` under
/// its flag name (`auth-token`), never to argv, or a secret environment variable of the child.
#[derive(Clone)]
enum Arg {
    Plain(String),
    /// `shown`: what logs show for the value (`None`: `<redacted>`).
    Secret {
        key: &'static str,
        value: Secret,
        shown: Option<String>,
    },
    /// A `config.json` key that is no secret (a user name), shown as is.
    Config {
        key: &'static str,
        value: String,
    },
    Env {
        key: &'static str,
        value: Secret,
    },
}

/// The file name viper finds first in the tool's working directory (`json` leads viper's
/// `SupportedExts`).
pub const TOOL_CONFIG: &str = "config.json";

/// A TSBS command line ready to run (with [`TsbsCommand::command`]) or to log (with
/// [`TsbsCommand::redacted`]). Children inherit the caller's environment, plus the product's
/// secret variables ([`ToolArg::Env`]).
#[derive(Clone)]
pub struct TsbsCommand {
    pub program: PathBuf,
    args: Vec<Arg>,
    /// Where the data comes from for a loader: `None` = the caller streams it to stdin.
    pub stdin_data: bool,
}

impl TsbsCommand {
    fn new(program: &Path) -> TsbsCommand {
        TsbsCommand {
            program: program.to_path_buf(),
            args: Vec::new(),
            stdin_data: false,
        }
    }

    fn flag(&mut self, name: &str, value: impl fmt::Display) {
        self.args.push(Arg::Plain(format!("--{name}={value}")));
    }

    fn raw(&mut self, arg: &str) {
        self.args.push(Arg::Plain(arg.to_string()));
    }

    /// A secret flag (`key` is its name without `--`): written to the tool's `config.json`.
    fn secret(&mut self, key: &'static str, value: &Secret) {
        self.args.push(Arg::Secret {
            key,
            value: value.clone(),
            shown: None,
        });
    }

    /// The endpoints in `config.json` (`urls`), with `auth` as their userinfo: the runner has
    /// no auth flag, and Go sends URL userinfo as Basic auth. Logs show the user, not the
    /// password.
    fn urls_with_auth(&mut self, urls: &[String], auth: &super::credentials::BasicAuth) {
        let real: Vec<String> = urls
            .iter()
            .map(|u| super::credentials::with_userinfo(u, auth).unwrap_or_else(|| u.clone()))
            .collect();
        let shown: Vec<String> = urls
            .iter()
            .map(|u| super::credentials::shown_userinfo(u, &auth.user))
            .collect();
        self.args.push(Arg::Secret {
            key: "urls",
            value: Secret::new(real.join(",")),
            shown: Some(shown.join(",")),
        });
    }

    /// Basic credentials registered for `urls` (external servers only), in the way the
    /// product's tool takes them.
    fn basic_auth(
        &mut self,
        style: Option<super::credentials::BasicAuthStyle>,
        urls: &[String],
    ) -> bool {
        use super::credentials::{for_url, BasicAuthStyle};
        let (Some(style), Some(auth)) = (style, urls.first().and_then(|u| for_url(u))) else {
            return false;
        };
        match style {
            BasicAuthStyle::ConfigKeys { user, password } => {
                self.args.push(Arg::Config {
                    key: user,
                    value: auth.user.clone(),
                });
                self.secret(password, &auth.password);
            }
            BasicAuthStyle::UrlUserinfo => self.urls_with_auth(urls, &auth),
        }
        true
    }

    /// A product's own arguments, in order.
    fn tool_args(&mut self, args: &[ToolArg]) {
        for a in args {
            match a {
                ToolArg::Flag(name, value) => self.flag(name, value),
                ToolArg::Secret(key, value) => self.secret(key, value),
                ToolArg::Config(key, value) => self.args.push(Arg::Config {
                    key,
                    value: value.clone(),
                }),
                ToolArg::Env(key, value) => self.args.push(Arg::Env {
                    key,
                    value: value.clone(),
                }),
            }
        }
    }

    /// The secret flags, as the `config.json` object the tool reads (real values).
    fn config_json(&self) -> Option<String> {
        let m: serde_json::Map<String, serde_json::Value> = self
            .args
            .iter()
            .filter_map(|a| match a {
                Arg::Secret { key, value, .. } => Some((key.to_string(), value.0.clone().into())),
                Arg::Config { key, value } => Some((key.to_string(), value.clone().into())),
                Arg::Plain(_) | Arg::Env { .. } => None,
            })
            .collect();
        (!m.is_empty()).then(|| serde_json::Value::Object(m).to_string())
    }

    /// Replaces `--print-interval` (a runner's progress block every N queries, on stderr).
    pub fn set_print_interval(&mut self, n: u64) {
        let arg = Arg::Plain(format!("--print-interval={n}"));
        match self
            .args
            .iter_mut()
            .find(|a| matches!(a, Arg::Plain(s) if s.starts_with("--print-interval=")))
        {
            Some(a) => *a = arg,
            None => self.args.push(arg),
        }
    }

    /// The tool's name (`tsbs_load_greptime`, ...), from the program path.
    pub fn tool(&self) -> String {
        self.program
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default()
    }

    /// The real argv of the child. Secrets are not in it: they go to `config.json`.
    pub fn args(&self) -> Vec<OsString> {
        self.redacted_args()
            .into_iter()
            .map(OsString::from)
            .collect()
    }

    /// The arguments (secrets are never arguments, so nothing needs hiding here).
    pub fn redacted_args(&self) -> Vec<String> {
        self.args
            .iter()
            .filter_map(|a| match a {
                Arg::Plain(s) => Some(s.clone()),
                Arg::Secret { .. } | Arg::Config { .. } | Arg::Env { .. } => None,
            })
            .collect()
    }

    /// The names of the secret flags the tool gets through its `config.json`.
    pub fn secret_keys(&self) -> Vec<&'static str> {
        self.args
            .iter()
            .filter_map(|a| match a {
                Arg::Secret { key, .. } => Some(*key),
                Arg::Plain(_) | Arg::Config { .. } | Arg::Env { .. } => None,
            })
            .collect()
    }

    /// The tool's `config.json` keys as logs show them: `key=<redacted>` (or the shown form
    /// of a secret, e.g. URLs with the password redacted), `key=value` for other keys.
    fn config_shown(&self) -> Vec<String> {
        self.args
            .iter()
            .filter_map(|a| match a {
                Arg::Secret { key, shown, .. } => Some(format!(
                    "{key}={}",
                    shown.as_deref().unwrap_or("<redacted>")
                )),
                Arg::Config { key, value } => Some(format!("{key}={}", crate::proc::quote(value))),
                Arg::Plain(_) | Arg::Env { .. } => None,
            })
            .collect()
    }

    /// The names of the secret environment variables the tool gets.
    pub fn secret_env_keys(&self) -> Vec<&'static str> {
        self.args
            .iter()
            .filter_map(|a| match a {
                Arg::Env { key, .. } => Some(*key),
                Arg::Plain(_) | Arg::Secret { .. } | Arg::Config { .. } => None,
            })
            .collect()
    }

    /// The whole command line for logs and manifests: POSIX-shell quoted (so it can be pasted
    /// into a shell, unlike the reference's Windows quoting), followed by a shell comment
    /// naming the secret keys of the tool's `config.json` and its secret environment
    /// variables, each as `<redacted>`.
    pub fn redacted(&self) -> String {
        let mut out =
            crate::proc::command_line(&self.program.to_string_lossy(), &self.redacted_args());
        let keys = self.config_shown();
        if !keys.is_empty() {
            out.push_str(&format!(" # {TOOL_CONFIG}:"));
            for k in keys {
                out.push_str(&format!(" {k}"));
            }
        }
        let env = self.secret_env_keys();
        if !env.is_empty() {
            out.push_str(" # env:");
            for k in env {
                out.push_str(&format!(" {k}=<redacted>"));
            }
        }
        out
    }

    /// The first line of the step's log: `$ <redacted command line>`.
    pub fn log_line(&self) -> String {
        format!("$ {}", self.redacted())
    }

    /// A `std::process::Command` with the arguments, run from a new private directory under
    /// `parent` ([`ToolDir`]) that holds the secrets in `config.json`. Keep the `ToolDir` until
    /// the tool has exited: dropping it removes the directory. Stdio is left to the caller.
    pub fn command(&self, parent: &Path) -> Result<(Command, ToolDir)> {
        let mut dir = ToolDir::create(parent)?;
        let config_fd = match self.config_json() {
            Some(text) => Some(dir.write_config(&text)?),
            None => None,
        };
        let mut c = Command::new(&self.program);
        c.args(self.args()).current_dir(&dir.path);
        if let Some(fd) = config_fd {
            use std::os::unix::process::CommandExt;
            // SAFETY: fcntl is async-signal-safe; it runs in the forked child before exec,
            // so only this tool inherits the memfd its config.json link names.
            unsafe {
                c.pre_exec(move || {
                    if libc::fcntl(fd, libc::F_SETFD, 0) == -1 {
                        return Err(std::io::Error::last_os_error());
                    }
                    Ok(())
                });
            }
        }
        for a in &self.args {
            if let Arg::Env { key, value } = a {
                c.env(key, value.expose());
            }
        }
        Ok((c, dir))
    }
}

/// The private working directory of one TSBS tool run: `<parent>/tsbsctl-tool-<pid>.<random>`,
/// mode 0700, with the tool's `config.json` when it has secrets. That is a symlink to
/// `/proc/self/fd/N`, N a memfd (a file without a name) holding the secrets, which only the
/// tool inherits: viper opens the link in the tool's process, where it names the tool's own
/// copy of the fd. So the secrets are in no file with a name at any instant, and a kill -9
/// leaves only a dangling link behind (trial 2 N8). Removed on drop (tool exited, error,
/// Ctrl-C); one left by a killed tsbsctl is removed by the next [`ToolDir::create`] under the
/// same parent once that pid is gone.
#[derive(Debug)]
pub struct ToolDir {
    pub path: PathBuf,
    /// The memfd of `config.json`, open until the tool has it (dropped with the directory).
    config: Option<std::os::fd::OwnedFd>,
}

const TOOL_DIR_PREFIX: &str = "tsbsctl-tool-";

impl ToolDir {
    pub fn create(parent: &Path) -> Result<ToolDir> {
        use std::os::unix::fs::PermissionsExt;
        fs_err::create_dir_all(parent)?;
        sweep_stale_tool_dirs(parent);
        let t = tempfile::Builder::new()
            .prefix(&format!("{TOOL_DIR_PREFIX}{}.", std::process::id()))
            .permissions(std::fs::Permissions::from_mode(0o700))
            .tempdir_in(parent)
            .map_err(|e| Error::io("create a private directory in", parent, e))?;
        Ok(ToolDir {
            path: t.keep(),
            config: None,
        })
    }

    /// Puts `text` in a memfd (close-on-exec: no other child inherits it) and makes
    /// `config.json` a link to `/proc/self/fd/<it>`; returns the fd number the tool inherits.
    fn write_config(&mut self, text: &str) -> Result<std::os::fd::RawFd> {
        use std::io::Write;
        use std::os::fd::AsRawFd;
        let p = self.path.join(TOOL_CONFIG);
        let fd = nix::sys::memfd::memfd_create(
            c"tsbsctl-tool-config",
            nix::sys::memfd::MemFdCreateFlag::MFD_CLOEXEC,
        )
        .map_err(|e| Error::failed(format!("could not create the tool's config in memory: {e}")))?;
        let mut f = std::fs::File::from(fd);
        // Only its owner may open it (through /proc, only processes it could ptrace can).
        f.set_permissions(std::os::unix::fs::PermissionsExt::from_mode(0o600))
            .map_err(|e| Error::io("restrict", &p, e))?;
        f.write_all(text.as_bytes())
            .map_err(|e| Error::io("write", &p, e))?;
        let raw = f.as_raw_fd();
        std::os::unix::fs::symlink(format!("/proc/self/fd/{raw}"), &p)
            .map_err(|e| Error::io("create", &p, e))?;
        self.config = Some(f.into());
        Ok(raw)
    }
}

impl Drop for ToolDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.path);
    }
}

/// The parent of the tools' private directories: the system temporary directory (`$TMPDIR`,
/// else `/tmp`), so a token never lands in the state root.
pub fn tool_dir_parent() -> PathBuf {
    std::env::temp_dir()
}

/// Removes `tsbsctl-tool-<pid>.*` directories under `parent` whose tsbsctl is gone (killed
/// with -9: no drop ran). Best effort.
fn sweep_stale_tool_dirs(parent: &Path) {
    let Ok(entries) = std::fs::read_dir(parent) else {
        return;
    };
    for e in entries.flatten() {
        let name = e.file_name().to_string_lossy().into_owned();
        let Some(pid) = name
            .strip_prefix(TOOL_DIR_PREFIX)
            .and_then(|r| r.split('.').next())
            .and_then(|p| p.parse::<i32>().ok())
        else {
            continue;
        };
        if !crate::fsutil::process_alive(pid) {
            let _ = std::fs::remove_dir_all(e.path());
        }
    }
}

impl fmt::Debug for TsbsCommand {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.redacted())
    }
}

/// Files named `config.<ext>` that the TSBS tools (viper) would silently merge into their flags
/// when run from `dir`. The working directory of every TSBS process must have none.
pub fn viper_config_files(dir: &Path) -> Vec<PathBuf> {
    const EXTS: &[&str] = &[
        "json",
        "toml",
        "yaml",
        "yml",
        "properties",
        "props",
        "prop",
        "hcl",
        "tfvars",
        "dotenv",
        "env",
        "ini",
    ];
    EXTS.iter()
        .map(|e| dir.join(format!("config.{e}")))
        .filter(|p| p.exists())
        .collect()
}

/// Where the loader reads the dataset from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum LoadInput {
    /// `--file=<path>`: an uncompressed dataset file.
    File(PathBuf),
    /// No `--file`: the loader reads stdin, where the caller streams a (decompressed) dataset.
    Stdin,
}

/// A product-specific argument of a TSBS tool, added after the common ones.
#[derive(Debug, Clone)]
pub enum ToolArg {
    /// `--name=value`.
    Flag(&'static str, String),
    /// A secret flag (`name` without `--`): written to the tool's `config.json`, never argv.
    Secret(&'static str, Secret),
    /// A secret environment variable of the tool (`PGPASSWORD`), never argv nor a file.
    Env(&'static str, Secret),
    /// A `config.json` key that is no secret (shown as is in logs).
    Config(&'static str, String),
}

/// The target-specific part of a load, as the product builds it
/// ([`crate::product::Driver::load_target`]).
#[derive(Debug, Clone, Default)]
pub struct LoadTarget {
    /// The product's display name when its loader takes exactly one endpoint (the refusal
    /// names it); `None`: any number, used round-robin by worker.
    pub single_url: Option<&'static str>,
    /// The product's own arguments, after the common ones, in order.
    pub args: Vec<ToolArg>,
    /// The loader's own connection flags (`--host=.. --port=..`), set from the endpoint by
    /// [`crate::product::Driver::load_connection`]. `None`: the HTTP loaders' `--urls=` and
    /// `--gzip=false` (tools that take neither reject them).
    pub connection: Option<Vec<ToolArg>>,
    /// How the loader takes basic credentials, when it does: those registered for its URLs
    /// ([`super::credentials`]) are passed that way.
    pub basic_auth: Option<super::credentials::BasicAuthStyle>,
}

/// Everything a loader invocation needs.
#[derive(Debug, Clone)]
pub struct LoadSpec {
    /// Absolute path of the loader binary (`<tsbs>/bin/tsbs_load_*`).
    pub binary: PathBuf,
    pub target: LoadTarget,
    /// Endpoints, used round-robin by worker where the loader takes several (GreptimeDB,
    /// InfluxDB 3, InfluxDB 2); exactly one where [`LoadTarget::single_url`] says so.
    pub urls: Vec<String>,
    pub input: LoadInput,
    pub database: String,
    pub batch_size: u32,
    pub workers: u32,
    pub results_file: PathBuf,
    pub mode: DatabaseMode,
    pub confirm_reset: Option<String>,
}

/// The loader command line of benchmark.md §3.3.
pub fn load_command(spec: &LoadSpec) -> Result<TsbsCommand> {
    spec.mode
        .check_confirmation(&spec.database, spec.confirm_reset.as_deref())?;
    check_common(&spec.urls, &spec.database, spec.workers)?;
    if spec.batch_size == 0 {
        return Err(Error::invalid("--batch-size must be at least 1")
            .with_hint("pass --batch-size N with N >= 1"));
    }
    if let (Some(name), false) = (spec.target.single_url, spec.urls.len() == 1) {
        return Err(Error::invalid(format!(
            "{name} takes exactly one endpoint, got {}",
            spec.urls.len()
        ))
        .with_hint("pass a single --url"));
    }
    let mut c = TsbsCommand::new(&spec.binary);
    match &spec.target.connection {
        Some(conn) => c.tool_args(conn),
        None => c.flag("urls", spec.urls.join(",")),
    }
    match &spec.input {
        LoadInput::File(p) => c.flag("file", p.display()),
        LoadInput::Stdin => c.stdin_data = true,
    }
    c.flag("db-name", &spec.database);
    c.flag("batch-size", spec.batch_size);
    if spec.target.connection.is_none() {
        c.raw("--gzip=false");
    }
    c.flag("workers", spec.workers);
    c.flag("reporting-period", REPORTING_PERIOD);
    c.flag("results-file", spec.results_file.display());
    c.tool_args(&spec.target.args);
    c.basic_auth(spec.target.basic_auth, &spec.urls);
    for f in spec.mode.flags() {
        c.raw(f);
    }
    Ok(c)
}

/// The target-specific part of a query run, as the product builds it
/// ([`crate::product::Driver::query_target`]): its own arguments, in order.
#[derive(Debug, Clone, Default)]
pub struct QueryTarget {
    pub args: Vec<ToolArg>,
    /// The runner's own connection flags instead of `--urls=` (see [`LoadTarget::connection`]),
    /// from [`crate::product::Driver::query_connection`].
    pub connection: Option<Vec<ToolArg>>,
    /// The runner prints each query's latency with `--debug=1` (`debug: <label> in <ms>ms`,
    /// the influx and influx3 runners; not the PostgreSQL one).
    pub per_query_latencies: bool,
    /// How the runner takes basic credentials (see [`LoadTarget::basic_auth`]).
    pub basic_auth: Option<super::credentials::BasicAuthStyle>,
}

/// Everything one query-runner invocation (one query type, one attempt) needs.
#[derive(Debug, Clone)]
pub struct QuerySpec {
    pub binary: PathBuf,
    pub target: QueryTarget,
    /// The query file of one type (`<set>/queries/<type>.dat`).
    pub file: PathBuf,
    pub database: String,
    pub urls: Vec<String>,
    pub workers: u32,
    pub results_file: PathBuf,
}

/// The runner command line of benchmark.md §3.4.
pub fn query_command(spec: &QuerySpec) -> Result<TsbsCommand> {
    check_common(&spec.urls, &spec.database, spec.workers)?;
    let mut c = TsbsCommand::new(&spec.binary);
    c.flag("file", spec.file.display());
    c.flag("db-name", &spec.database);
    match &spec.target.connection {
        Some(conn) => c.tool_args(conn),
        None => {
            if !c.basic_auth(spec.target.basic_auth, &spec.urls) {
                c.flag("urls", spec.urls.join(","))
            }
        }
    }
    c.flag("workers", spec.workers);
    c.flag("print-interval", PRINT_INTERVAL);
    c.flag("results-file", spec.results_file.display());
    c.tool_args(&spec.target.args);
    Ok(c)
}

/// One GreptimeDB analysis invocation (§8.1): query 0 cold, then the file's next `hot_runs`
/// queries warm (other hosts and windows, not repetitions of query 0: real finding W2),
/// one worker, every response kept under `results_dir` (`cold.json`, `hot-NNN.json`) and the
/// runner's own results file at `results_dir/metrics.json`.
#[derive(Debug, Clone)]
pub struct ExplainSpec {
    pub binary: PathBuf,
    pub file: PathBuf,
    pub database: String,
    pub url: String,
    pub hot_runs: u32,
    pub results_dir: PathBuf,
}

impl ExplainSpec {
    pub fn cold_result(&self) -> PathBuf {
        self.results_dir.join("cold.json")
    }
    /// `hot-001.json` ... `hot-NNN.json`.
    pub fn hot_results(&self) -> Vec<PathBuf> {
        (1..=self.hot_runs)
            .map(|i| self.results_dir.join(format!("hot-{i:03}.json")))
            .collect()
    }
    pub fn metrics_file(&self) -> PathBuf {
        self.results_dir.join("metrics.json")
    }
}

/// The analysis command line of benchmark.md §3.4 ("GreptimeDB analysis").
pub fn explain_command(spec: &ExplainSpec) -> Result<TsbsCommand> {
    check_common(std::slice::from_ref(&spec.url), &spec.database, 1)?;
    if spec.hot_runs == 0 {
        return Err(Error::invalid("--hot-runs must be at least 1")
            .with_hint("pass --hot-runs N with N >= 1"));
    }
    let mut c = TsbsCommand::new(&spec.binary);
    c.flag("file", spec.file.display());
    c.flag("db-name", &spec.database);
    // The same runner as the query phase: registered credentials go in its URL.
    let url = std::slice::from_ref(&spec.url);
    if !c.basic_auth(Some(super::credentials::BasicAuthStyle::UrlUserinfo), url) {
        c.flag("urls", &spec.url);
    }
    c.raw("--workers=1");
    c.flag("max-queries", 1 + u64::from(spec.hot_runs));
    c.flag("print-interval", PRINT_INTERVAL);
    c.raw("--explain-analyze-verbose");
    c.flag("explain-results-dir", spec.results_dir.display());
    c.flag("results-file", spec.metrics_file().display());
    Ok(c)
}

fn check_common(urls: &[String], database: &str, workers: u32) -> Result<()> {
    if urls.is_empty() || urls.iter().any(|u| u.trim().is_empty() || u.contains(',')) {
        return Err(Error::invalid(format!(
            "invalid endpoint list {urls:?}: each URL must be non-empty and contain no comma"
        ))
        .with_hint("pass --url http://HOST:PORT"));
    }
    if database.is_empty() || database.contains(['\0', ',', ' ', '\n']) {
        return Err(
            Error::invalid(format!("invalid SQL database name {database:?}"))
                .with_hint("pass --database NAME (letters, digits, '_' or '-')"),
        );
    }
    if workers == 0 {
        return Err(
            Error::invalid("the worker count must be at least 1").with_hint("pass N >= 1 workers")
        );
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::product::Driver;

    fn greptime_target() -> LoadTarget {
        crate::product::greptimedb::GreptimeDb.load_target(&Default::default())
    }
    fn influx3() -> crate::product::influxdb3::InfluxDb3 {
        crate::product::influxdb3::InfluxDb3::new(crate::product::influxdb3::Edition::Core)
    }
    fn influx3_target(o: crate::product::ToolOptions) -> LoadTarget {
        influx3().load_target(&o)
    }
    fn influx3_query(o: crate::product::ToolOptions) -> QueryTarget {
        influx3().query_target(&o)
    }

    fn greptime_load(mode: DatabaseMode, confirm: Option<&str>) -> Result<TsbsCommand> {
        load_command(&LoadSpec {
            binary: "/t/bin/tsbs_load_greptime".into(),
            target: greptime_target(),
            urls: vec!["http://127.0.0.1:4000".into()],
            input: LoadInput::File("/d/data".into()),
            database: "benchmark".into(),
            batch_size: 3000,
            workers: 6,
            results_file: "/r/results/load-run-001.json".into(),
            mode,
            confirm_reset: confirm.map(String::from),
        })
    }

    #[test]
    fn greptime_load_flags_in_reference_order() {
        let c = greptime_load(DatabaseMode::Create, None).unwrap();
        assert_eq!(
            c.redacted_args(),
            [
                "--urls=http://127.0.0.1:4000",
                "--file=/d/data",
                "--db-name=benchmark",
                "--batch-size=3000",
                "--gzip=false",
                "--workers=6",
                "--reporting-period=10s",
                "--results-file=/r/results/load-run-001.json",
                "--do-create-db=true",
                "--do-abort-on-exist=true",
            ]
        );
        let reuse = greptime_load(DatabaseMode::Reuse, None).unwrap();
        assert_eq!(
            reuse.redacted_args().last().unwrap(),
            "--do-create-db=false"
        );
        let reset = greptime_load(DatabaseMode::Reset, Some("benchmark")).unwrap();
        assert_eq!(reset.redacted_args().last().unwrap(), "--do-create-db=true");
        assert!(!reset
            .redacted_args()
            .iter()
            .any(|a| a.starts_with("--do-abort-on-exist")));
    }

    #[test]
    fn reset_needs_the_exact_confirmation_when_flags_are_built() {
        let e = greptime_load(DatabaseMode::Reset, None).unwrap_err();
        assert_eq!(e.exit_code(), 2);
        assert!(
            e.message.contains("--confirm-reset benchmark"),
            "{}",
            e.message
        );
        let e = greptime_load(DatabaseMode::Reset, Some("other")).unwrap_err();
        assert_eq!(e.exit_code(), 2);
        assert!(e.message.contains("does not match"));
    }

    fn influx3_load(auth: Option<&str>, admin: Option<&str>) -> TsbsCommand {
        load_command(&LoadSpec {
            binary: "/t/bin/tsbs_load_influx3".into(),
            target: influx3_target(crate::product::ToolOptions {
                values: serde_json::json!({"no_sync": false, "accept_partial": true})
                    .as_object()
                    .cloned()
                    .unwrap(),
                auth_token: auth.map(Secret::new),
                admin_token: admin.map(Secret::new),
            }),
            urls: vec!["http://a:8181".into(), "http://b:8181".into()],
            input: LoadInput::Stdin,
            database: "benchmark".into(),
            batch_size: 25000,
            workers: 16,
            results_file: "/r/load-run-002.json".into(),
            mode: DatabaseMode::Reuse,
            confirm_reset: None,
        })
        .unwrap()
    }

    /// Issue 16 #4: tokens never reach argv; they go to the private config.json (0600).
    #[test]
    fn influx3_load_flags_tokens_and_redaction_defect_4() {
        let c = influx3_load(Some("s3cr3t-auth"), None);
        assert!(c.stdin_data);
        assert_eq!(
            c.redacted_args(),
            [
                "--urls=http://a:8181,http://b:8181",
                "--db-name=benchmark",
                "--batch-size=25000",
                "--gzip=false",
                "--workers=16",
                "--reporting-period=10s",
                "--results-file=/r/load-run-002.json",
                "--no-sync=false",
                "--accept-partial=true",
                "--do-create-db=false",
            ]
        );
        let real: Vec<String> = c
            .args()
            .iter()
            .map(|a| a.to_string_lossy().into_owned())
            .collect();
        assert!(!real.iter().any(|a| a.contains("s3cr3t")), "{real:?}");
        // the admin token falls back to the auth token
        let cfg: serde_json::Value = serde_json::from_str(&c.config_json().unwrap()).unwrap();
        assert_eq!(
            cfg,
            serde_json::json!({"auth-token": "s3cr3t-auth", "admin-token": "s3cr3t-auth"})
        );
        let spec_debug = format!(
            "{:?}",
            influx3_target(crate::product::ToolOptions {
                values: serde_json::json!({"no_sync": true, "accept_partial": false})
                    .as_object()
                    .cloned()
                    .unwrap(),
                auth_token: Some(Secret::new("s3cr3t-auth")),
                admin_token: None,
            })
        );
        for shown in [c.redacted(), c.log_line(), format!("{c:?}")] {
            assert!(!shown.contains("s3cr3t"), "{shown}");
            assert!(!shown.contains("--auth-token"), "{shown}");
            assert!(
                shown.ends_with(" # config.json: auth-token=<redacted> admin-token=<redacted>"),
                "{shown}"
            );
        }
        assert!(!spec_debug.contains("s3cr3t") && spec_debug.contains("<redacted>"));
        let c = influx3_load(Some("a1"), Some("ad1"));
        let cfg: serde_json::Value = serde_json::from_str(&c.config_json().unwrap()).unwrap();
        assert_eq!(cfg["admin-token"], "ad1");
        let c = influx3_load(None, Some(""));
        assert!(!c.redacted().contains("token"), "{}", c.redacted());
        assert!(c.config_json().is_none());
        let c = influx3_load(None, Some("ad"));
        assert!(c.redacted().contains("admin-token=<redacted>"));
        assert!(!c.redacted().contains("auth-token"));
    }

    #[test]
    fn query_commands() {
        let c = query_command(&QuerySpec {
            binary: "/t/bin/tsbs_run_queries_influx".into(),
            target: QueryTarget::default(),
            file: "/q/queries/lastpoint.dat".into(),
            database: "benchmark".into(),
            urls: vec!["http://127.0.0.1:4000".into()],
            workers: 4,
            results_file: "/r/results/query-lastpoint-run-001.json".into(),
        })
        .unwrap();
        assert_eq!(
            c.redacted_args(),
            [
                "--file=/q/queries/lastpoint.dat",
                "--db-name=benchmark",
                "--urls=http://127.0.0.1:4000",
                "--workers=4",
                "--print-interval=0",
                "--results-file=/r/results/query-lastpoint-run-001.json",
            ]
        );
        let c = query_command(&QuerySpec {
            binary: "/t/bin/tsbs_run_queries_influx3".into(),
            target: influx3_query(crate::product::ToolOptions {
                auth_token: Some(Secret::new("s3cr3t-q")),
                ..Default::default()
            }),
            file: "/q/x.dat".into(),
            database: "benchmark".into(),
            urls: vec!["http://a:1".into(), "http://b:2".into()],
            workers: 1,
            results_file: "/r/x.json".into(),
        })
        .unwrap();
        assert_eq!(c.redacted_args()[2], "--urls=http://a:1,http://b:2");
        assert_eq!(
            c.redacted_args().last().unwrap(),
            "--results-file=/r/x.json"
        );
        assert!(c
            .redacted()
            .ends_with("# config.json: auth-token=<redacted>"));
        assert!(!c.redacted().contains("s3cr3t"));
        assert!(c.config_json().unwrap().contains("s3cr3t-q"));
    }

    /// A product with its own connection flags gets neither `--urls` nor `--gzip`.
    #[test]
    fn timescaledb_connection_flags_replace_urls_and_gzip() {
        let p = crate::product::resolve("timescaledb", Some("postgresql")).unwrap();
        let urls = vec![p.local_endpoint(5433, "benchmark")];
        let mut target = p.load_target(&Default::default());
        target.connection = p.load_connection(&urls).unwrap();
        let c = load_command(&LoadSpec {
            binary: "/t/bin/tsbs_load_timescaledb".into(),
            target,
            urls: urls.clone(),
            input: LoadInput::Stdin,
            database: "benchmark".into(),
            batch_size: 3000,
            workers: 2,
            results_file: "/r/load.json".into(),
            mode: DatabaseMode::Create,
            confirm_reset: None,
        })
        .unwrap();
        let a = c.redacted_args();
        assert_eq!(
            a[..4],
            [
                "--host=127.0.0.1",
                "--port=5433",
                "--user=postgres",
                "--db-name=benchmark"
            ]
        );
        assert!(a.contains(&"--use-hypertable=false".to_string()), "{a:?}");
        assert!(
            !a.iter()
                .any(|x| x.starts_with("--urls") || x.starts_with("--gzip")),
            "{a:?}"
        );
        let mut target = p.query_target(&Default::default());
        target.connection = p.query_connection(&urls, Some(10), 1).unwrap();
        let c = query_command(&QuerySpec {
            binary: "/t/bin/tsbs_run_queries_timescaledb".into(),
            target,
            file: "/q/x.dat".into(),
            database: "benchmark".into(),
            urls,
            workers: 1,
            results_file: "/r/x.json".into(),
        })
        .unwrap();
        let a = c.redacted_args();
        assert_eq!(
            a[2..7],
            [
                "--hosts=127.0.0.1",
                "--port=5433",
                "--user=postgres",
                "--burn-in=1",
                "--max-queries=10"
            ]
        );
        assert!(!a.iter().any(|x| x.starts_with("--urls")), "{a:?}");
        // One query: nothing to burn in.
        assert!(
            p.query_connection(&["http://h:1".into()], Some(1), 1)
                .unwrap()
                .unwrap()
                .len()
                == 3
        );
    }

    #[test]
    fn explain_command_line() {
        let spec = ExplainSpec {
            binary: "/t/bin/tsbs_run_queries_influx".into(),
            file: "/q/queries/lastpoint.dat".into(),
            database: "benchmark".into(),
            url: "http://127.0.0.1:4000".into(),
            hot_runs: 2,
            results_dir: "/r/results/analyze/lastpoint/run-001".into(),
        };
        let c = explain_command(&spec).unwrap();
        assert_eq!(
            c.redacted_args(),
            [
                "--file=/q/queries/lastpoint.dat",
                "--db-name=benchmark",
                "--urls=http://127.0.0.1:4000",
                "--workers=1",
                "--max-queries=3",
                "--print-interval=0",
                "--explain-analyze-verbose",
                "--explain-results-dir=/r/results/analyze/lastpoint/run-001",
                "--results-file=/r/results/analyze/lastpoint/run-001/metrics.json",
            ]
        );
        assert_eq!(
            spec.hot_results()[1],
            PathBuf::from("/r/results/analyze/lastpoint/run-001/hot-002.json")
        );
    }

    #[test]
    fn bad_parameters_are_invalid_input() {
        let mut spec = LoadSpec {
            binary: "/b".into(),
            target: LoadTarget {
                single_url: Some("PostgreSQL"),
                ..LoadTarget::default()
            },
            urls: vec!["http://a".into(), "http://b".into()],
            input: LoadInput::Stdin,
            database: "benchmark".into(),
            batch_size: 1,
            workers: 1,
            results_file: "/r".into(),
            mode: DatabaseMode::Create,
            confirm_reset: None,
        };
        assert_eq!(load_command(&spec).unwrap_err().exit_code(), 2);
        spec.urls = vec!["http://a".into()];
        spec.workers = 0;
        assert_eq!(load_command(&spec).unwrap_err().exit_code(), 2);
        spec.workers = 1;
        spec.database = "a b".into();
        assert_eq!(load_command(&spec).unwrap_err().exit_code(), 2);
        assert_eq!(DatabaseMode::parse("drop").unwrap_err().exit_code(), 2);
    }

    /// Issue 22: several GreptimeDB URLs go to the loader as its comma list (worker i writes
    /// to URL i mod n); registered credentials go to `config.json`: the loader's `user` and
    /// `password` keys, the runner's `urls` with userinfo (it has no auth flag). The password
    /// is in no argv and no log line.
    #[test]
    fn greptime_urls_and_basic_auth() {
        use crate::tsbs::credentials::{register, BasicAuth};
        let urls: Vec<String> = vec!["http://10.1.2.3:4000".into(), "http://10.1.2.4:4000".into()];
        let load = |urls: &[String]| {
            load_command(&LoadSpec {
                binary: "/t/bin/tsbs_load_greptime".into(),
                target: greptime_target(),
                urls: urls.to_vec(),
                input: LoadInput::Stdin,
                database: "benchmark".into(),
                batch_size: 10,
                workers: 4,
                results_file: "/r/l.json".into(),
                mode: DatabaseMode::Reuse,
                confirm_reset: None,
            })
            .unwrap()
        };
        let c = load(&urls);
        assert_eq!(
            c.redacted_args()[0],
            "--urls=http://10.1.2.3:4000,http://10.1.2.4:4000"
        );
        assert!(c.config_json().is_none(), "nothing registered: no config");
        register(
            &urls,
            &BasicAuth {
                user: "bench".into(),
                password: Secret::new("s3cr3t:pw@x"),
            },
        );
        let c = load(&urls);
        let cfg: serde_json::Value = serde_json::from_str(&c.config_json().unwrap()).unwrap();
        assert_eq!(
            cfg,
            serde_json::json!({"user": "bench", "password": "s3cr3t:pw@x"})
        );
        assert!(c
            .redacted()
            .ends_with(" # config.json: user=bench password=<redacted>"));
        let q = query_command(&QuerySpec {
            binary: "/t/bin/tsbs_run_queries_influx".into(),
            target: crate::product::greptimedb::GreptimeDb.query_target(&Default::default()),
            file: "/q/x.dat".into(),
            database: "benchmark".into(),
            urls: urls.clone(),
            workers: 2,
            results_file: "/r/x.json".into(),
        })
        .unwrap();
        assert!(
            !q.redacted_args().iter().any(|a| a.starts_with("--urls")),
            "{:?}",
            q.redacted_args()
        );
        let cfg: serde_json::Value = serde_json::from_str(&q.config_json().unwrap()).unwrap();
        assert_eq!(
            cfg["urls"],
            "http://bench:s3cr3t%3Apw%40x@10.1.2.3:4000,http://bench:s3cr3t%3Apw%40x@10.1.2.4:4000"
        );
        assert!(q.redacted().ends_with(
            " # config.json: urls=http://bench:<redacted>@10.1.2.3:4000,http://bench:<redacted>@10.1.2.4:4000"
        ));
        let e = explain_command(&ExplainSpec {
            binary: "/t/bin/tsbs_run_queries_influx".into(),
            file: "/q/x.dat".into(),
            database: "benchmark".into(),
            url: urls[1].clone(),
            hot_runs: 1,
            results_dir: "/r/a".into(),
        })
        .unwrap();
        assert!(!e.redacted_args().iter().any(|a| a.starts_with("--urls")));
        assert!(e
            .config_json()
            .unwrap()
            .contains("bench:s3cr3t%3Apw%40x@10.1.2.4:4000"));
        for c in [&c, &q, &e] {
            for shown in [c.redacted(), format!("{c:?}")] {
                assert!(!shown.contains("s3cr3t"), "{shown}");
            }
            assert!(!c
                .args()
                .iter()
                .any(|a| a.to_string_lossy().contains("s3cr3t")));
        }
        // Another server (a managed one on loopback) gets none of it.
        let c = load(&["http://127.0.0.1:4000".into()]);
        assert!(c.config_json().is_none());
    }

    #[test]
    fn quoting_and_viper_files() {
        let quote = crate::proc::quote;
        assert_eq!(quote("--a=b"), "--a=b");
        assert_eq!(
            quote("--auth-token=<redacted>"),
            "'--auth-token=<redacted>'"
        );
        assert_eq!(quote("it's"), "\"it's\"");
        assert_eq!(quote(""), "''");
        let d = tempfile::tempdir().unwrap();
        assert!(viper_config_files(d.path()).is_empty());
        std::fs::write(d.path().join("config.yaml"), "workers: 9\n").unwrap();
        assert_eq!(viper_config_files(d.path()), [d.path().join("config.yaml")]);
    }

    /// Issue 16 #4: each tool runs from its own 0700 directory; the tokens' config.json is
    /// 0600 and everything is gone once the ToolDir is dropped; a killed tsbsctl's is swept.
    #[test]
    fn tool_dir_is_private_and_removed_defect_4() {
        use std::os::unix::fs::PermissionsExt;
        let parent = tempfile::tempdir().unwrap();
        // beside a stray config.* in the parent: the tool never sees it
        std::fs::write(parent.path().join("config.yaml"), "workers: 9\n").unwrap();
        let c = influx3_load(Some("s3cr3t-auth"), None);
        let (cmd, dir) = c.command(parent.path()).unwrap();
        assert_eq!(cmd.get_current_dir(), Some(dir.path.as_path()));
        assert!(!cmd
            .get_args()
            .any(|a| a.to_string_lossy().contains("s3cr3t")));
        let mode = |p: &Path| std::fs::metadata(p).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode(&dir.path), 0o700);
        let cfg = dir.path.join(TOOL_CONFIG);
        assert_eq!(mode(&cfg), 0o600);
        assert!(std::fs::read_to_string(&cfg)
            .unwrap()
            .contains("s3cr3t-auth"));
        assert_eq!(viper_config_files(&dir.path), std::slice::from_ref(&cfg));
        let path = dir.path.clone();
        drop(dir);
        assert!(!path.exists());
        // No secrets: an empty private directory, no config file.
        let (_, dir) = greptime_load(DatabaseMode::Reuse, None)
            .unwrap()
            .command(parent.path())
            .unwrap();
        assert!(viper_config_files(&dir.path).is_empty());
        drop(dir);
        // A directory left by a pid that no longer exists is swept by the next create.
        let stale = parent
            .path()
            .join(format!("{TOOL_DIR_PREFIX}{}.abc", i32::MAX));
        std::fs::create_dir(&stale).unwrap();
        std::fs::write(stale.join(TOOL_CONFIG), "{}").unwrap();
        let mine = parent
            .path()
            .join(format!("{TOOL_DIR_PREFIX}{}.live", std::process::id()));
        std::fs::create_dir(&mine).unwrap();
        let _d = ToolDir::create(parent.path()).unwrap();
        assert!(!stale.exists());
        assert!(mine.exists(), "a live tsbsctl's directory is kept");
    }

    /// Trial 2 N8: after a kill -9 the token stayed in `config.json` until a later run swept
    /// it. It is in no named file at any instant: `config.json` links to a memfd that only the
    /// tool inherits, and the tool reads it there.
    #[test]
    fn the_tools_config_is_in_no_named_file() {
        let parent = tempfile::tempdir().unwrap();
        let mut c = TsbsCommand::new(Path::new("/bin/sh"));
        c.raw("-c");
        c.raw("cat config.json");
        c.secret("auth-token", &Secret::new("s3cr3t-N8".to_string()));
        let (mut cmd, dir) = c.command(parent.path()).unwrap();
        let link = dir.path.join(TOOL_CONFIG);
        let meta = std::fs::symlink_metadata(&link).unwrap();
        assert!(meta.file_type().is_symlink());
        let target = std::fs::read_link(&link).unwrap();
        assert!(target.starts_with("/proc/self/fd/"), "{target:?}");
        // Nothing with a name holds the secret.
        for e in walkdir::WalkDir::new(parent.path()).follow_links(false) {
            let e = e.unwrap();
            if e.file_type().is_file() {
                let text = std::fs::read_to_string(e.path()).unwrap_or_default();
                assert!(!text.contains("s3cr3t-N8"), "{}", e.path().display());
            }
        }
        // The tool reads it through the link.
        let out = cmd.output().unwrap();
        let text = String::from_utf8_lossy(&out.stdout);
        assert!(text.contains("\"auth-token\":\"s3cr3t-N8\""), "{text}");
        // Another child of this process does not inherit the memfd.
        let other = Command::new("/bin/sh")
            .arg("-c")
            .arg("cat config.json")
            .current_dir(&dir.path)
            .output()
            .unwrap();
        assert!(
            !String::from_utf8_lossy(&other.stdout).contains("s3cr3t-N8"),
            "{other:?}"
        );
    }
}
