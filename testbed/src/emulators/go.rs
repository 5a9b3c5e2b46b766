//! Emulator of the `go` command, as far as tsbsctl uses it (protocols.md §4.3, benchmark.md
//! §3.5): `go version` and `go build -o OUT ./cmd/<name>` inside a TSBS checkout.
//!
//! Baked into the wrapper script by `releases::go::publish`:
//! * `TESTBED_EMULATED_VERSION` — e.g. `1.21.13`; `go version` prints `go version go<V> <os>/<arch>`;
//! * `TESTBED_GO_PLATFORM` — `<os>/<arch>` printed by `go version` (default: the host's);
//! * `TESTBED_KNOBS` — path of a JSON knob file shared by all stand-ins, one section per tool
//!   (as in `gotool::knobs`); this emulator reads the `"go"` section on every call with
//!   `gotool::load_knobs` (missing file or section = defaults; an unknown key: exit 2): `version_output` (string printed instead), `devel` (print a
//!   devel build line), `version_exit_code`, `fail_build` (true, or a list of tool names),
//!   `build_delay_ms`, `record` (a file that gets one JSON line per call: args, cwd, full
//!   environment), `embed_source_path` (the built file names the checkout it was built from,
//!   as the real go does without `-trimpath`: builds in two places differ).
//!
//! What `go build` writes is a wrapper script for the TSBS tool of the same name (another
//! emulator) with the same `TESTBED_KNOBS` baked in, so a test steers each built tool through
//! its own section (`"tsbs_load_greptime": {...}`) of the one knob file.
//!
//! Strictness: unknown subcommands and flags fail like the real go (exit 2); every call must
//! run with `GOTOOLCHAIN=local` (tsbsctl's contract: probing or building never downloads a
//! toolchain); builds need an absolute GOCACHE (or HOME), a `go.mod` in the working directory
//! and `./cmd/<name>/*.go`.

use std::io::Write;
use std::path::{Path, PathBuf};

use serde_json::Value;

/// The `"go"` section of the knob file; an unknown key or a bad value: exit 2.
#[derive(Debug, Default, serde::Deserialize)]
#[serde(default, deny_unknown_fields)]
struct Knobs {
    version_output: Option<String>,
    devel: bool,
    version_exit_code: i32,
    fail_build: FailBuild,
    build_delay_ms: u64,
    record: Option<PathBuf>,
    embed_source_path: bool,
}

/// `fail_build`: `true` (every build) or the names of the tools whose builds fail.
#[derive(Debug, serde::Deserialize)]
#[serde(untagged)]
enum FailBuild {
    All(bool),
    Tools(Vec<String>),
}

impl Default for FailBuild {
    fn default() -> FailBuild {
        FailBuild::All(false)
    }
}

impl FailBuild {
    fn fails(&self, tool: &str) -> bool {
        match self {
            FailBuild::All(all) => *all,
            FailBuild::Tools(tools) => tools.iter().any(|t| t == tool),
        }
    }
}

fn load_knobs() -> Result<Knobs, String> {
    crate::gotool::load_knobs(Some("go"))
}

fn record(knobs: &Knobs, args: &[String]) {
    let Some(path) = &knobs.record else { return };
    let env: serde_json::Map<String, Value> = std::env::vars()
        .map(|(k, v)| (k, Value::String(v)))
        .collect();
    let line = serde_json::json!({
        "args": args,
        "cwd": std::env::current_dir().map(|p| p.display().to_string()).unwrap_or_default(),
        "env": env,
    });
    if let Ok(mut f) = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(path)
    {
        let _ = writeln!(f, "{line}");
    }
}

const USAGE: &str = "Go is a tool for managing Go source code.

Usage:

\tgo <command> [arguments]

The commands are:

\tbuild       compile packages and dependencies
\tversion     print Go version

Use \"go help <command>\" for more information about a command.
";

pub fn main(args: Vec<String>) -> i32 {
    let knobs = match load_knobs() {
        Ok(k) => k,
        Err(e) => {
            eprintln!("testbed go: {e}");
            return 2;
        }
    };
    record(&knobs, &args);
    let Some(sub) = args.first() else {
        eprint!("{USAGE}");
        return 2;
    };
    if std::env::var("GOTOOLCHAIN").as_deref() != Ok("local") {
        // Not what the real go does: the stand-in enforces tsbsctl's contract that no probe or
        // build may switch (and so download) toolchains.
        eprintln!("testbed go: GOTOOLCHAIN must be \"local\" (got {:?}); a toolchain switch could download another Go", std::env::var("GOTOOLCHAIN").ok());
        return 1;
    }
    match sub.as_str() {
        "version" => version(&knobs, &args[1..]),
        "build" => build(&knobs, &args[1..]),
        "help" | "-h" | "--help" => {
            eprint!("{USAGE}");
            0
        }
        other => {
            eprintln!("go {other}: unknown command\nRun 'go help' for usage.");
            2
        }
    }
}

fn host_platform() -> String {
    let os = match std::env::consts::OS {
        "macos" => "darwin",
        o => o,
    };
    let arch = match std::env::consts::ARCH {
        "x86_64" => "amd64",
        "aarch64" => "arm64",
        a => a,
    };
    format!("{os}/{arch}")
}

fn version(knobs: &Knobs, args: &[String]) -> i32 {
    if let Some(flag) = args.first() {
        if flag.starts_with('-') && flag != "-m" && flag != "-v" {
            eprintln!(
                "flag provided but not defined: {flag}\nusage: go version [-m] [-v] [file ...]"
            );
            return 2;
        }
        // `go version FILE` reports the Go version a binary was built with; not emulated.
        eprintln!("testbed go: `go version FILE` is not emulated");
        return 2;
    }
    let v = std::env::var("TESTBED_EMULATED_VERSION").unwrap_or_else(|_| "1.21.13".into());
    let platform = std::env::var("TESTBED_GO_PLATFORM").unwrap_or_else(|_| host_platform());
    if knobs.version_exit_code != 0 {
        eprintln!("go: version check failed (testbed knob)");
        return knobs.version_exit_code;
    }
    if let Some(out) = &knobs.version_output {
        println!("{out}");
    } else if knobs.devel {
        println!("go version devel go{v}-0123abcd Tue Aug 6 16:44:41 2024 +0000 {platform}");
    } else {
        println!("go version go{v} {platform}");
    }
    0
}

const BUILD_USAGE: &str =
    "usage: go build [-o output] [build flags] [packages]\nRun 'go help build' for details.";

fn build(knobs: &Knobs, args: &[String]) -> i32 {
    let mut out: Option<String> = None;
    let mut packages = Vec::new();
    let mut i = 0;
    while i < args.len() {
        let a = &args[i];
        i += 1;
        if !a.starts_with('-') || a == "-" {
            packages.push(a.clone());
            packages.extend(args[i..].iter().cloned());
            break;
        }
        let name = a.trim_start_matches('-');
        let (name, inline) = match name.split_once('=') {
            Some((n, v)) => (n, Some(v.to_string())),
            None => (name, None),
        };
        match name {
            "o" | "ldflags" | "mod" | "buildvcs" | "tags" => {
                let value = match inline {
                    Some(v) => v,
                    None => match args.get(i) {
                        Some(v) => {
                            i += 1;
                            v.clone()
                        }
                        None => {
                            eprintln!("flag needs an argument: -{name}\n{BUILD_USAGE}");
                            return 2;
                        }
                    },
                };
                if name == "o" {
                    out = Some(value);
                }
            }
            "v" | "x" | "trimpath" | "a" => {}
            _ => {
                eprintln!("flag provided but not defined: -{name}\n{BUILD_USAGE}");
                return 2;
            }
        }
    }
    if let Err(msg) = check_cache() {
        eprintln!("{msg}");
        return 1;
    }
    let cwd = std::env::current_dir().expect("cwd");
    if !cwd.join("go.mod").is_file() {
        eprintln!("go: go.mod file not found in current directory or any parent directory; see 'go help modules'");
        return 1;
    }
    if packages.len() != 1 {
        eprintln!("testbed go: build exactly one package (./cmd/<name>), got {packages:?}");
        return 2;
    }
    let pkg = &packages[0];
    let Some(tool) = pkg
        .strip_prefix("./cmd/")
        .filter(|t| !t.is_empty() && !t.contains('/'))
    else {
        eprintln!("testbed go: only ./cmd/<name> packages are emulated, got {pkg:?}");
        return 2;
    };
    let dir = cwd.join("cmd").join(tool);
    if !dir.is_dir() {
        eprintln!("stat {}: directory not found", dir.display());
        return 1;
    }
    let has_go = std::fs::read_dir(&dir)
        .map(|rd| {
            rd.flatten()
                .any(|e| e.file_name().to_string_lossy().ends_with(".go"))
        })
        .unwrap_or(false);
    if !has_go {
        eprintln!("no Go files in {}", dir.display());
        return 1;
    }
    if knobs.build_delay_ms > 0 {
        std::thread::sleep(std::time::Duration::from_millis(knobs.build_delay_ms));
    }
    if knobs.fail_build.fails(tool) {
        eprintln!("# github.com/timescale/tsbs/cmd/{tool}\ncmd/{tool}/main.go:12:2: undefined: brokenByTestbedKnob");
        return 1;
    }
    let target = match out {
        Some(o) => {
            let p = cwd.join(o);
            if p.is_dir() {
                p.join(tool)
            } else {
                p
            }
        }
        None => cwd.join(tool),
    };
    let source = knobs.embed_source_path.then_some(cwd.as_path());
    match write_tool(&target, tool, source) {
        Ok(()) => 0,
        Err(e) => {
            eprintln!("go: copying {}: {e}", target.display());
            1
        }
    }
}

/// The real go refuses to build without a usable build cache.
fn check_cache() -> Result<(), String> {
    match std::env::var_os("GOCACHE") {
        Some(c) if !c.is_empty() => {
            let p = PathBuf::from(&c);
            if !p.is_absolute() {
                return Err("go: GOCACHE is not an absolute path".into());
            }
            std::fs::create_dir_all(&p).map_err(|e| {
                format!(
                    "go: failed to initialize build cache at {}: {e}",
                    p.display()
                )
            })?;
            Ok(())
        }
        _ => {
            if std::env::var_os("HOME").is_some_and(|h| !h.is_empty())
                || std::env::var_os("XDG_CACHE_HOME").is_some_and(|h| !h.is_empty())
            {
                Ok(())
            } else {
                Err("build cache is required, but could not be located: GOCACHE is not defined and neither $XDG_CACHE_HOME nor $HOME are defined".into())
            }
        }
    }
}

fn write_tool(target: &Path, tool: &str, source: Option<&Path>) -> std::io::Result<()> {
    use std::os::unix::fs::PermissionsExt;
    let knobs = std::env::var("TESTBED_KNOBS").ok();
    let env: Vec<(&str, &str)> = knobs
        .as_deref()
        .map(|k| vec![("TESTBED_KNOBS", k)])
        .unwrap_or_default();
    let mut script = crate::wrapper_script(tool, &env);
    if let Some(src) = source {
        script.push_str(&format!("\n# built from {}\n", src.display()));
    }
    let tmp = target.with_file_name(format!(
        ".{}.go-build-{}",
        target.file_name().unwrap_or_default().to_string_lossy(),
        std::process::id()
    ));
    std::fs::write(&tmp, script)?;
    std::fs::set_permissions(&tmp, std::fs::Permissions::from_mode(0o755))?;
    std::fs::rename(&tmp, target)
}
