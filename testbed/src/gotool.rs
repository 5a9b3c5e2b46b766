//! What the TSBS tools share because they are Go programs (protocols.md §1): pflag command-line
//! parsing (strict: unknown flags, missing values and bad values exit 2 with pflag's message and
//! usage), Go durations, `log.Fatal` (exit 1) and `panic` (exit 2) output, viper's `config.*`
//! lookup in the working directory, `encoding/json` output (`MarshalIndent` shape) and the
//! `$TESTBED_KNOBS` file. Used by the TSBS stand-ins; nothing here is TSBS-specific.

use std::collections::BTreeMap;
use std::io::Write;
use std::path::Path;
use std::time::Duration;

/// A flag's type; [`Kind::type_name`] is how pflag names it in usage lines.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    Str,
    Bool,
    Uint,
    Uint64,
    Int,
    Int64,
    Duration,
}

impl Kind {
    fn type_name(self) -> &'static str {
        match self {
            Kind::Str => "string",
            Kind::Bool => "",
            // pflag's `UnquoteUsage` prints the 64-bit kinds by their short names (the real
            // help: `--scale uint`, `--seed int`).
            Kind::Uint | Kind::Uint64 => "uint",
            Kind::Int | Kind::Int64 => "int",
            Kind::Duration => "duration",
        }
    }
}

/// One flag definition: name, type, default (as Go prints it) and usage text.
#[derive(Debug, Clone, Copy)]
pub struct FlagDef {
    pub name: &'static str,
    pub kind: Kind,
    pub default: &'static str,
    pub usage: &'static str,
}

pub const fn flag(
    name: &'static str,
    kind: Kind,
    default: &'static str,
    usage: &'static str,
) -> FlagDef {
    FlagDef {
        name,
        kind,
        default,
        usage,
    }
}

/// Parsed flags: every defined flag has a value (its default unless set).
#[derive(Debug, Clone)]
pub struct Flags {
    values: BTreeMap<&'static str, String>,
    set: Vec<&'static str>,
    pub positional: Vec<String>,
}

impl Flags {
    pub fn str(&self, name: &str) -> String {
        self.values
            .get(name)
            .unwrap_or_else(|| panic!("flag {name} not defined"))
            .clone()
    }
    pub fn bool(&self, name: &str) -> bool {
        parse_bool(&self.str(name)).expect("validated at parse time")
    }
    pub fn u64(&self, name: &str) -> u64 {
        self.str(name).parse().expect("validated at parse time")
    }
    pub fn i64(&self, name: &str) -> i64 {
        self.str(name).parse().expect("validated at parse time")
    }
    /// A duration flag in nanoseconds (Go's `time.Duration`).
    pub fn duration_ns(&self, name: &str) -> i64 {
        parse_duration(&self.str(name)).expect("validated at parse time")
    }
    pub fn duration(&self, name: &str) -> Duration {
        Duration::from_nanos(self.duration_ns(name).max(0) as u64)
    }
    /// Whether the command line set this flag.
    pub fn is_set(&self, name: &str) -> bool {
        self.set.contains(&name)
    }
    /// The flags the command line set, with their (last) values.
    pub fn set_values(&self) -> BTreeMap<String, String> {
        self.set
            .iter()
            .map(|n| (n.to_string(), self.values[n].clone()))
            .collect()
    }
}

/// Go's `strconv.ParseBool`.
pub fn parse_bool(s: &str) -> Option<bool> {
    match s {
        "1" | "t" | "T" | "TRUE" | "true" | "True" => Some(true),
        "0" | "f" | "F" | "FALSE" | "false" | "False" => Some(false),
        _ => None,
    }
}

/// Go's `time.ParseDuration`, in nanoseconds.
pub fn parse_duration(s: &str) -> Result<i64, String> {
    let orig = s;
    let err = || format!("time: invalid duration \"{orig}\"");
    let (neg, mut rest) = match s.as_bytes().first() {
        Some(b'-') => (true, &s[1..]),
        Some(b'+') => (false, &s[1..]),
        _ => (false, s),
    };
    if rest == "0" {
        return Ok(0);
    }
    if rest.is_empty() {
        return Err(err());
    }
    let mut total: f64 = 0.0;
    while !rest.is_empty() {
        let num_end = rest
            .find(|c: char| !(c.is_ascii_digit() || c == '.'))
            .unwrap_or(rest.len());
        let num = &rest[..num_end];
        if num.is_empty() || num == "." {
            return Err(err());
        }
        let value: f64 = num.parse().map_err(|_| err())?;
        rest = &rest[num_end..];
        let unit_end = rest
            .find(|c: char| c.is_ascii_digit() || c == '.')
            .unwrap_or(rest.len());
        let unit = &rest[..unit_end];
        rest = &rest[unit_end..];
        let scale = match unit {
            "ns" => 1.0,
            "us" | "µs" | "μs" => 1e3,
            "ms" => 1e6,
            "s" => 1e9,
            "m" => 60e9,
            "h" => 3600e9,
            "" => return Err(format!("time: missing unit in duration \"{orig}\"")),
            u => return Err(format!("time: unknown unit \"{u}\" in duration \"{orig}\"")),
        };
        total += value * scale;
    }
    let ns = total.round() as i64;
    Ok(if neg { -ns } else { ns })
}

fn check_value(kind: Kind, v: &str) -> Result<(), String> {
    let syntax = |f: &str| format!("strconv.{f}: parsing \"{v}\": invalid syntax");
    match kind {
        Kind::Str => Ok(()),
        Kind::Bool => parse_bool(v).map(|_| ()).ok_or_else(|| syntax("ParseBool")),
        Kind::Uint => v
            .parse::<u32>()
            .map(|_| ())
            .map_err(|_| syntax("ParseUint")),
        Kind::Uint64 => v
            .parse::<u64>()
            .map(|_| ())
            .map_err(|_| syntax("ParseUint")),
        Kind::Int => v.parse::<i32>().map(|_| ()).map_err(|_| syntax("ParseInt")),
        Kind::Int64 => v.parse::<i64>().map(|_| ()).map_err(|_| syntax("ParseInt")),
        Kind::Duration => parse_duration(v).map(|_| ()),
    }
}

/// pflag's usage text: `Usage of <prog>:` and one aligned line per flag, sorted by name.
pub fn usage(prog: &str, defs: &[FlagDef]) -> String {
    let mut sorted: Vec<&FlagDef> = defs.iter().collect();
    sorted.sort_by_key(|d| d.name);
    let mut lines = Vec::new();
    let mut maxlen = 0;
    for d in &sorted {
        let mut head = format!("      --{}", d.name);
        if !d.kind.type_name().is_empty() {
            head.push(' ');
            head.push_str(d.kind.type_name());
        }
        maxlen = maxlen.max(head.len());
        let zero = matches!(d.default, "" | "0" | "false" | "0s");
        let mut tail = d.usage.to_string();
        if !zero {
            if d.kind == Kind::Str {
                tail.push_str(&format!(" (default \"{}\")", d.default));
            } else {
                tail.push_str(&format!(" (default {})", d.default));
            }
        }
        lines.push((head, tail));
    }
    let mut out = format!("Usage of {prog}:\n");
    for (head, tail) in lines {
        let pad = " ".repeat(maxlen - head.len());
        out.push_str(&format!("{head} {pad}  {tail}\n"));
    }
    out
}

/// pflag's `ErrHelp`, which the TSBS tools' pflag (v1.0.5) prints on stdout before exiting 2.
const ERR_HELP: &str = "pflag: help requested";

/// Parses `args` like pflag (v1.0.5, the TSBS tools' version) with `ExitOnError`: `Err(2)`
/// after printing what it prints. An error: the message and the usage on stderr, the message
/// again on stdout (`fmt.Println(err)`). `--help`, `-h`, `-help`: the usage on stderr and
/// `pflag: help requested` on stdout, exit 2 too (the real help texts, tsbs-real-postgresql).
pub fn parse(prog: &str, defs: &[FlagDef], args: &[String]) -> Result<Flags, i32> {
    let mut flags = Flags {
        values: defs
            .iter()
            .map(|d| (d.name, d.default.to_string()))
            .collect(),
        set: Vec::new(),
        positional: Vec::new(),
    };
    let fail = |msg: String| -> i32 {
        let _ = write!(std::io::stderr().lock(), "{msg}\n{}", usage(prog, defs));
        println!("{msg}");
        2
    };
    let help = || -> i32 {
        eprint!("{}", usage(prog, defs));
        println!("{ERR_HELP}");
        2
    };
    let mut i = 0;
    while i < args.len() {
        let a = &args[i];
        i += 1;
        if a == "--" {
            flags.positional.extend(args[i..].iter().cloned());
            break;
        }
        if let Some(body) = a.strip_prefix("--") {
            if body.is_empty() || body.starts_with('-') || body.starts_with('=') {
                return Err(fail(format!("bad flag syntax: {a}")));
            }
            let (name, inline) = match body.split_once('=') {
                Some((n, v)) => (n, Some(v.to_string())),
                None => (body, None),
            };
            let Some(def) = defs.iter().find(|d| d.name == name) else {
                if name == "help" {
                    return Err(help());
                }
                return Err(fail(format!("unknown flag: --{name}")));
            };
            let value = match (inline, def.kind) {
                (Some(v), _) => v,
                (None, Kind::Bool) => "true".to_string(),
                (None, _) => match args.get(i) {
                    Some(v) => {
                        i += 1;
                        v.clone()
                    }
                    None => return Err(fail(format!("flag needs an argument: --{name}"))),
                },
            };
            if let Err(e) = check_value(def.kind, &value) {
                return Err(fail(format!(
                    "invalid argument \"{value}\" for \"--{name}\" flag: {e}"
                )));
            }
            flags.values.insert(def.name, value);
            flags.set.push(def.name);
        } else if let Some(short) = a.strip_prefix('-').filter(|s| !s.is_empty()) {
            let c = short.chars().next().unwrap();
            if c == 'h' {
                return Err(help());
            }
            return Err(fail(format!("unknown shorthand flag: '{c}' in {a}")));
        } else {
            flags.positional.push(a.clone());
        }
    }
    Ok(flags)
}

/// `log.Fatalf`: `YYYY/MM/DD HH:MM:SS <msg>` on stderr, exit status 1.
pub fn fatal(msg: &str) -> ! {
    let now = time::OffsetDateTime::now_utc();
    let ts = now
        .format(time::macros::format_description!(
            "[year]/[month]/[day] [hour]:[minute]:[second]"
        ))
        .unwrap_or_default();
    let line = if msg.ends_with('\n') {
        format!("{ts} {msg}")
    } else {
        format!("{ts} {msg}\n")
    };
    let _ = std::io::stdout().flush();
    let _ = std::io::stderr().write_all(line.as_bytes());
    std::process::exit(1)
}

/// A Go `panic`: `panic: <msg>`, a blank line and a goroutine trace on stderr, exit status 2.
pub fn go_panic(tool: &str, msg: &str) -> ! {
    let _ = std::io::stdout().flush();
    let _ = write!(
        std::io::stderr(),
        "panic: {msg}\n\ngoroutine 1 [running]:\nmain.main()\n\t/go/src/github.com/timescale/tsbs/cmd/{tool}/main.go:1 +0x1d\n"
    );
    std::process::exit(2)
}

/// The start of a TSBS loader's or runner's `init`: its flag tables joined and parsed (usage
/// errors give the exit code to return), then viper's `config.*` from the working directory
/// merged under the flags ([`merge_viper_config`]).
///
/// Deliberately stricter than the real tools: a token flag ([`ARGV_SECRETS`]) given on the
/// command line is refused (exit 2). The real tools take it there too, but argv is readable by
/// every local user (`/proc/<pid>/cmdline`), so tsbsctl must hand it over in `config.json`
/// (issue 16 #4), and a regression must fail the tests.
pub fn parse_tool(tool: &str, tables: &[&[FlagDef]], args: &[String]) -> Result<Flags, i32> {
    let defs: Vec<FlagDef> = tables.iter().flat_map(|t| t.iter().copied()).collect();
    let mut flags = parse(tool, &defs, args)?;
    if let Some(name) = flags.set.iter().find(|n| ARGV_SECRETS.contains(n)) {
        eprintln!(
            "testbed: --{name} was given on the command line, where every local user can read it (ps, /proc/<pid>/cmdline); pass it in config.json in the working directory"
        );
        return Err(2);
    }
    merge_viper_config(tool, &defs, &mut flags);
    Ok(flags)
}

/// Token flags the stand-ins refuse on the command line (see [`parse_tool`]).
pub const ARGV_SECRETS: &[&str] = &["auth-token", "admin-token"];

/// viper's `SupportedExts`, in the order `ReadInConfig` tries them.
const VIPER_EXTS: &[&str] = &[
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

/// viper as the TSBS tools use it (`SetConfigName("config")`, `AddConfigPath(".")`,
/// `BindPFlags`, `ReadInConfig` with not-found ignored; tsbs.md C7): the first `config.<ext>`
/// in the working directory is read, and each top-level key (case-insensitive) that names a
/// flag not set on the command line takes the file's value. Unknown keys are ignored. A file
/// that does not parse panics like the real tool (`fatal error config file: ...`, exit 2).
/// Emulated formats: JSON and TOML; any other extension is refused with a `testbed:` panic
/// (a guess would be more lenient than viper). A value that is not valid for the flag's type
/// panics too (a guess: viper's casts would silently give the zero value).
pub fn merge_viper_config(tool: &str, defs: &[FlagDef], flags: &mut Flags) {
    let Some(ext) = VIPER_EXTS
        .iter()
        .find(|e| Path::new(".").join(format!("config.{e}")).exists())
    else {
        return;
    };
    let name = format!("config.{ext}");
    let text = match std::fs::read_to_string(&name) {
        Ok(t) => t,
        Err(e) => go_panic(tool, &format!("fatal error config file: {e}")),
    };
    let table: Vec<(String, String)> = match *ext {
        "json" => match serde_json::from_str::<serde_json::Value>(&text) {
            Ok(serde_json::Value::Object(m)) => m
                .into_iter()
                .filter_map(|(k, v)| match v {
                    serde_json::Value::String(s) => Some((k, s)),
                    serde_json::Value::Bool(_) | serde_json::Value::Number(_) => {
                        Some((k, v.to_string()))
                    }
                    _ => None,
                })
                .collect(),
            Ok(_) => go_panic(
                tool,
                "fatal error config file: While parsing config: json: cannot unmarshal into map",
            ),
            Err(e) => go_panic(
                tool,
                &format!("fatal error config file: While parsing config: {e}"),
            ),
        },
        "toml" => match text.parse::<toml::Table>() {
            Ok(t) => t
                .into_iter()
                .filter_map(|(k, v)| match v {
                    toml::Value::String(s) => Some((k, s)),
                    toml::Value::Boolean(b) => Some((k, b.to_string())),
                    toml::Value::Integer(i) => Some((k, i.to_string())),
                    toml::Value::Float(f) => Some((k, f.to_string())),
                    _ => None,
                })
                .collect(),
            Err(e) => go_panic(
                tool,
                &format!("fatal error config file: While parsing config: {e}"),
            ),
        },
        other => go_panic(
            tool,
            &format!("fatal error config file: testbed: config.{other} is not emulated (JSON and TOML are)"),
        ),
    };
    for (key, value) in table {
        let key = key.to_ascii_lowercase();
        let Some(def) = defs.iter().find(|d| d.name == key) else {
            continue;
        };
        if flags.set.contains(&def.name) {
            continue;
        }
        if let Err(e) = check_value(def.kind, &value) {
            go_panic(
                tool,
                &format!("testbed: {name}: invalid value {value:?} for {key}: {e}"),
            );
        }
        flags.values.insert(def.name, value);
    }
}

/// The generators' stand-ins refuse to run beside a `config.*` (the real ones would merge it,
/// see [`merge_viper_config`]; tsbsctl gives them no config file), so a test catches an
/// orchestrator that runs them from a directory holding such a file.
pub fn refuse_viper_config(tool: &str) {
    const EXTS: &[&str] = VIPER_EXTS;
    for e in EXTS {
        let p = Path::new(".").join(format!("config.{e}"));
        if p.exists() {
            go_panic(
                tool,
                &format!(
                    "fatal error config file: testbed: config.{e} in the working directory would be merged into the flags by viper"
                ),
            );
        }
    }
}

/// The knobs of `$TESTBED_KNOBS` for `tool`: the object under the tool's own name, merged over
/// the one under `family` (e.g. `tsbs_load`). No variable or no file: no knobs. A knob file
/// that is not JSON is a test bug: exit 2 with a message ([`load_knobs_with`]).
pub fn knobs(tool: &str, family: &str) -> serde_json::Map<String, serde_json::Value> {
    let merged = load_knobs_with(|all| {
        let mut out = serde_json::Map::new();
        for key in [family, tool] {
            if let Some(serde_json::Value::Object(m)) = all.get(key) {
                out.extend(m.clone());
            }
        }
        Ok(Some(serde_json::Value::Object(out)))
    });
    merged.unwrap_or_else(|e| {
        eprintln!("testbed: {e}");
        std::process::exit(2)
    })
}

/// The one strict loader of the `$TESTBED_KNOBS` file: the object under `section` (the whole
/// file when `None`) as `T`. No variable, no file, an empty file or no such section: the
/// defaults. A file that is not JSON, a section that is not an object, or a key or value `T`
/// refuses: `Err(message)`. Give `T` `#[serde(deny_unknown_fields)]`, so a misspelt knob fails
/// the test instead of silently exercising the happy path.
pub fn load_knobs<T: serde::de::DeserializeOwned + Default>(
    section: Option<&str>,
) -> Result<T, String> {
    load_knobs_with(|all| match section {
        None => Ok(Some(all)),
        Some(name) => match all.get(name) {
            None => Ok(None),
            Some(v @ serde_json::Value::Object(_)) => Ok(Some(v.clone())),
            Some(_) => Err(format!("\"{name}\" must be an object")),
        },
    })
    .map_err(|e| match section {
        // Name the section: one file steers many tools.
        Some(name) if !e.contains(&format!("\"{name}\"")) => format!("{e} (in \"{name}\")"),
        _ => e,
    })
}

/// [`load_knobs`] with the stand-in's own choice of what in the file is its knobs: `select`
/// gets the parsed file and returns the object to read (`None`: no knobs) or why the file is
/// wrong. Reading, parsing and the strict deserialising stay here.
pub fn load_knobs_with<T: serde::de::DeserializeOwned + Default>(
    select: impl FnOnce(serde_json::Value) -> Result<Option<serde_json::Value>, String>,
) -> Result<T, String> {
    let Some(path) = std::env::var_os("TESTBED_KNOBS") else {
        return Ok(T::default());
    };
    let text = match std::fs::read_to_string(&path) {
        Ok(t) => t,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(T::default()),
        Err(e) => return Err(format!("cannot read knob file {path:?}: {e}")),
    };
    if text.trim().is_empty() {
        return Ok(T::default());
    }
    let bad = |e: &dyn std::fmt::Display| format!("bad knob file {path:?}: {e}");
    let all: serde_json::Value = serde_json::from_str(&text).map_err(|e| bad(&e))?;
    match select(all).map_err(|e| bad(&e))? {
        None => Ok(T::default()),
        Some(v) => serde_json::from_value(v).map_err(|e| bad(&e)),
    }
}

/// [`load_knobs`] for a stand-in that cannot go on with bad knobs: the message on stderr, exit 2.
pub fn knobs_or_exit<T: serde::de::DeserializeOwned + Default>(section: &str) -> T {
    load_knobs(Some(section)).unwrap_or_else(|e| {
        eprintln!("testbed: {e}");
        std::process::exit(2)
    })
}

/// A JSON value written the way Go's `encoding/json` writes it: struct fields in declaration
/// order (maps are given sorted by the caller), floats without a trailing `.0`.
#[derive(Debug, Clone)]
pub enum GoJson {
    Null,
    Bool(bool),
    Int(i64),
    Uint(u64),
    Float(f64),
    Str(String),
    /// Already-encoded JSON (`json.RawMessage`).
    Raw(String),
    Obj(Vec<(String, GoJson)>),
}

impl GoJson {
    pub fn obj(fields: Vec<(&str, GoJson)>) -> GoJson {
        GoJson::Obj(
            fields
                .into_iter()
                .map(|(k, v)| (k.to_string(), v))
                .collect(),
        )
    }

    /// `json.Marshal`; `Err` for NaN/Inf like Go's `UnsupportedValueError`.
    pub fn compact(&self) -> Result<String, String> {
        let mut out = String::new();
        self.write(&mut out)?;
        Ok(out)
    }

    fn write(&self, out: &mut String) -> Result<(), String> {
        match self {
            GoJson::Null => out.push_str("null"),
            GoJson::Bool(b) => out.push_str(if *b { "true" } else { "false" }),
            GoJson::Int(i) => out.push_str(&i.to_string()),
            GoJson::Uint(u) => out.push_str(&u.to_string()),
            GoJson::Float(f) => out.push_str(&go_float(*f)?),
            GoJson::Str(s) => out.push_str(&go_string(s)),
            GoJson::Raw(r) => out.push_str(&html_escape_raw(r)),
            GoJson::Obj(fields) => {
                out.push('{');
                for (i, (k, v)) in fields.iter().enumerate() {
                    if i > 0 {
                        out.push(',');
                    }
                    out.push_str(&go_string(k));
                    out.push(':');
                    v.write(out)?;
                }
                out.push('}');
            }
        }
        Ok(())
    }

    /// `json.MarshalIndent(v, "", indent)`.
    pub fn indented(&self, indent: &str) -> Result<String, String> {
        Ok(indent_json(&self.compact()?, "", indent))
    }
}

/// Go's float64 JSON encoding.
pub fn go_float(f: f64) -> Result<String, String> {
    if !f.is_finite() {
        return Err(format!("json: unsupported value: {}", go_float_name(f)));
    }
    let abs = f.abs();
    if abs != 0.0 && !(1e-6..1e21).contains(&abs) {
        let s = format!("{f:e}");
        let (mant, exp) = s.split_once('e').unwrap();
        let exp = if exp.starts_with('-') {
            exp.to_string()
        } else {
            format!("+{exp}")
        };
        return Ok(format!("{mant}e{exp}"));
    }
    Ok(format!("{f}"))
}

fn go_float_name(f: f64) -> &'static str {
    if f.is_nan() {
        "NaN"
    } else if f > 0.0 {
        "+Inf"
    } else {
        "-Inf"
    }
}

/// Go's JSON string encoding (HTML-safe: `<`, `>`, `&` escaped).
pub fn go_string(s: &str) -> String {
    let mut out = String::with_capacity(s.len() + 2);
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            '<' => out.push_str("\\u003c"),
            '>' => out.push_str("\\u003e"),
            '&' => out.push_str("\\u0026"),
            '\u{2028}' => out.push_str("\\u2028"),
            '\u{2029}' => out.push_str("\\u2029"),
            c if (c as u32) < 0x20 => out.push_str(&format!("\\u{:04x}", c as u32)),
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

/// What `json.Marshal` does to a `json.RawMessage`: `<`, `>`, `&` inside strings are escaped.
fn html_escape_raw(raw: &str) -> String {
    let mut out = String::with_capacity(raw.len());
    let (mut in_str, mut escaped) = (false, false);
    for c in raw.chars() {
        if in_str {
            match c {
                '<' => out.push_str("\\u003c"),
                '>' => out.push_str("\\u003e"),
                '&' => out.push_str("\\u0026"),
                c => out.push(c),
            }
            if escaped {
                escaped = false;
            } else if c == '\\' {
                escaped = true;
            } else if c == '"' {
                in_str = false;
            }
        } else {
            if c == '"' {
                in_str = true;
            }
            out.push(c);
        }
    }
    out
}

/// Go's `json.Indent(dst, src, prefix, indent)` on valid compact or pretty JSON: keeps key
/// order, puts every element on its own line, leaves `{}` and `[]` as they are.
pub fn indent_json(src: &str, prefix: &str, indent: &str) -> String {
    let mut out = String::with_capacity(src.len() * 2);
    let mut depth = 0usize;
    let mut in_str = false;
    let mut escaped = false;
    let mut need_indent = false; // an opening bracket was just written
    let newline = |out: &mut String, depth: usize| {
        out.push('\n');
        out.push_str(prefix);
        for _ in 0..depth {
            out.push_str(indent);
        }
    };
    for c in src.chars() {
        if in_str {
            out.push(c);
            if escaped {
                escaped = false;
            } else if c == '\\' {
                escaped = true;
            } else if c == '"' {
                in_str = false;
            }
            continue;
        }
        if c.is_ascii_whitespace() {
            continue;
        }
        if need_indent && c != ']' && c != '}' {
            need_indent = false;
            depth += 1;
            newline(&mut out, depth);
        }
        match c {
            '"' => {
                in_str = true;
                out.push(c);
            }
            '{' | '[' => {
                out.push(c);
                need_indent = true;
            }
            ',' => {
                out.push(c);
                newline(&mut out, depth);
            }
            ':' => out.push_str(": "),
            '}' | ']' => {
                if need_indent {
                    need_indent = false; // empty: `{}` / `[]`
                } else {
                    depth -= 1;
                    newline(&mut out, depth);
                }
                out.push(c);
            }
            c => out.push(c),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args(a: &[&str]) -> Vec<String> {
        a.iter().map(|s| s.to_string()).collect()
    }

    const DEFS: &[FlagDef] = &[
        flag("db-name", Kind::Str, "benchmark", "Name of database"),
        flag(
            "workers",
            Kind::Uint,
            "1",
            "Number of parallel clients inserting",
        ),
        flag(
            "gzip",
            Kind::Bool,
            "true",
            "Whether to gzip encode requests",
        ),
        flag("do-abort-on-exist", Kind::Bool, "false", "Abort if exists."),
        flag(
            "reporting-period",
            Kind::Duration,
            "10s",
            "Period to report write stats",
        ),
    ];

    #[test]
    fn pflag_shapes() {
        let f = parse(
            "t",
            DEFS,
            &args(&[
                "--db-name",
                "x",
                "--gzip=false",
                "--do-abort-on-exist",
                "--workers=3",
                "pos",
            ]),
        )
        .unwrap();
        assert_eq!(f.str("db-name"), "x");
        assert!(!f.bool("gzip"));
        assert!(f.bool("do-abort-on-exist"));
        assert_eq!(f.u64("workers"), 3);
        assert_eq!(f.duration_ns("reporting-period"), 10_000_000_000);
        assert_eq!(f.positional, ["pos"]);
        assert!(f.is_set("workers") && !f.is_set("reporting-period"));
        assert_eq!(parse("t", DEFS, &args(&["--nope=1"])).unwrap_err(), 2);
        assert_eq!(parse("t", DEFS, &args(&["-db-name=x"])).unwrap_err(), 2);
        assert_eq!(parse("t", DEFS, &args(&["--workers=x"])).unwrap_err(), 2);
        assert_eq!(parse("t", DEFS, &args(&["--workers"])).unwrap_err(), 2);
        assert_eq!(parse("t", DEFS, &args(&["--gzip=maybe"])).unwrap_err(), 2);
        assert_eq!(parse("t", DEFS, &args(&["--help"])).unwrap_err(), 2);
        assert_eq!(parse("t", DEFS, &args(&["-help"])).unwrap_err(), 2);
    }

    #[test]
    fn usage_shape() {
        let u = usage("tsbs_load_greptime", DEFS);
        assert!(
            u.starts_with("Usage of tsbs_load_greptime:\n      --db-name string "),
            "{u}"
        );
        assert!(u.contains("(default \"benchmark\")"));
        assert!(u.contains("(default 10s)"));
        assert!(u.contains("      --gzip  "));
        assert!(!u.contains("(default false)"));
    }

    #[test]
    fn durations() {
        assert_eq!(parse_duration("1s"), Ok(1_000_000_000));
        assert_eq!(parse_duration("1m30.5s"), Ok(90_500_000_000));
        assert_eq!(parse_duration("1.5h"), Ok(5_400_000_000_000));
        assert_eq!(parse_duration("100ms"), Ok(100_000_000));
        assert!(parse_duration("s").is_err());
        assert_eq!(parse_duration("0"), Ok(0));
        assert!(parse_duration("10").unwrap_err().contains("missing unit"));
        assert!(parse_duration("").is_err());
        assert!(parse_duration("5x").is_err());
    }

    #[test]
    fn go_json() {
        let v = GoJson::obj(vec![
            ("b", GoJson::Float(5.0)),
            ("a", GoJson::Float(92693.92)),
            ("e", GoJson::Obj(vec![])),
            ("s", GoJson::Str("<&>".into())),
            ("r", GoJson::Raw("{\"x\":[1,2],\"y\":[]}".into())),
            ("t", GoJson::Float(1e-7)),
            ("u", GoJson::Float(1.5e21)),
        ]);
        assert_eq!(
            v.indented(" ").unwrap(),
            "{\n \"b\": 5,\n \"a\": 92693.92,\n \"e\": {},\n \"s\": \"\\u003c\\u0026\\u003e\",\n \"r\": {\n  \"x\": [\n   1,\n   2\n  ],\n  \"y\": []\n },\n \"t\": 1e-7,\n \"u\": 1.5e+21\n}"
        );
        assert!(GoJson::Float(f64::NAN).compact().is_err());
    }
}

/// Go's `time.Parse(time.RFC3339, s)` as unix nanoseconds, or the `*time.ParseError` text Go
/// prints (`parsing time "x" as "2006-01-02T15:04:05Z07:00": cannot parse "..." as "T"`,
/// `parsing time "x": second out of range`). Go's general parser is modelled: one- or
/// two-digit hour, `.` or `,` before a fraction, upper-case `T` and `Z` only, no leap second.
/// The error texts follow Go's `parse` for the inputs tests use; for other malformed inputs
/// the element named after "as" is a best guess.
pub fn go_parse_rfc3339(s: &str) -> Result<i128, String> {
    const LAYOUT: &str = "2006-01-02T15:04:05Z07:00";
    let bad = |rest: &str, elem: &str| {
        format!("parsing time \"{s}\" as \"{LAYOUT}\": cannot parse \"{rest}\" as \"{elem}\"")
    };
    let range = |what: &str| format!("parsing time \"{s}\": {what} out of range");
    let mut v = s;
    let digits = |v: &str, min: usize, max: usize| -> Option<(i64, usize)> {
        let n = v.bytes().take(max).take_while(u8::is_ascii_digit).count();
        (n >= min).then(|| (v[..n].parse().unwrap_or(0), n))
    };
    let num = |v: &mut &str, min: usize, max: usize, elem: &str| -> Result<i64, String> {
        let (n, len) = digits(v, min, max).ok_or_else(|| bad(v, elem))?;
        *v = &v[len..];
        Ok(n)
    };
    let lit = |v: &mut &str, l: &str| -> Result<(), String> {
        match v.strip_prefix(l) {
            Some(r) => {
                *v = r;
                Ok(())
            }
            None => Err(bad(v, l)),
        }
    };
    let year = num(&mut v, 4, 4, "2006")?;
    lit(&mut v, "-")?;
    let month = num(&mut v, 2, 2, "01")?;
    if !(1..=12).contains(&month) {
        return Err(range("month"));
    }
    lit(&mut v, "-")?;
    let day = num(&mut v, 2, 2, "02")?;
    lit(&mut v, "T")?;
    let hour = num(&mut v, 1, 2, "15")?;
    if hour > 23 {
        return Err(range("hour"));
    }
    lit(&mut v, ":")?;
    let minute = num(&mut v, 2, 2, "04")?;
    if minute > 59 {
        return Err(range("minute"));
    }
    lit(&mut v, ":")?;
    let second = num(&mut v, 2, 2, "05")?;
    if second > 59 {
        return Err(range("second"));
    }
    let mut nanos: i128 = 0;
    let b = v.as_bytes();
    if b.len() >= 2 && (b[0] == b'.' || b[0] == b',') && b[1].is_ascii_digit() {
        let n = 1 + b[1..].iter().take_while(|c| c.is_ascii_digit()).count();
        let mut scale = 100_000_000i128;
        for &c in b[1..n].iter().take(9) {
            nanos += i128::from(c - b'0') * scale;
            scale /= 10;
        }
        v = &v[n..];
    }
    let offset: i64 = if let Some(r) = v.strip_prefix('Z') {
        v = r;
        0
    } else {
        let b = v.as_bytes();
        let ok = b.len() >= 6
            && (b[0] == b'+' || b[0] == b'-')
            && b[1..3].iter().all(u8::is_ascii_digit)
            && b[3] == b':'
            && b[4..6].iter().all(u8::is_ascii_digit);
        if !ok {
            return Err(bad(v, "Z07:00"));
        }
        let h: i64 = v[1..3].parse().unwrap_or(0);
        let m: i64 = v[4..6].parse().unwrap_or(0);
        if h > 24 || m > 60 {
            return Err(range("time zone offset"));
        }
        let o = h * 3600 + m * 60;
        let o = if b[0] == b'-' { -o } else { o };
        v = &v[6..];
        o
    };
    if !v.is_empty() {
        return Err(format!("parsing time \"{s}\": extra text: \"{v}\""));
    }
    let leap = (year % 4 == 0 && year % 100 != 0) || year % 400 == 0;
    let days_in = match month {
        2 if leap => 29,
        2 => 28,
        4 | 6 | 9 | 11 => 30,
        _ => 31,
    };
    if day < 1 || day > days_in {
        return Err(range("day"));
    }
    // Days since the epoch (H. Hinnant's algorithm).
    let y = if month <= 2 { year - 1 } else { year };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let doy = (153 * ((month + 9) % 12) + 2) / 5 + day - 1;
    let days = era * 146_097 + yoe * 365 + yoe / 4 - yoe / 100 + doy - 719_468;
    let secs = days * 86_400 + hour * 3600 + minute * 60 + second - offset;
    Ok(i128::from(secs) * 1_000_000_000 + nanos)
}

#[cfg(test)]
mod go_time_tests {
    use super::go_parse_rfc3339 as p;

    #[test]
    fn go_rfc3339_and_its_errors() {
        assert_eq!(p("2023-06-11T00:00:00Z"), Ok(1_686_441_600_000_000_000));
        assert_eq!(
            p("2023-06-11T02:00:00+02:00"),
            Ok(1_686_441_600_000_000_000)
        );
        assert_eq!(p("2023-06-11T00:00:00.5Z"), Ok(1_686_441_600_500_000_000));
        // The real tool's text for the audit's example (finding C1).
        assert_eq!(
            p("2023-06-11 00:00:00z").unwrap_err(),
            "parsing time \"2023-06-11 00:00:00z\" as \"2006-01-02T15:04:05Z07:00\": cannot parse \" 00:00:00z\" as \"T\""
        );
        assert_eq!(
            p("2023-06-11T00:00:00z").unwrap_err(),
            "parsing time \"2023-06-11T00:00:00z\" as \"2006-01-02T15:04:05Z07:00\": cannot parse \"z\" as \"Z07:00\""
        );
        assert_eq!(
            p("2016-12-31T23:59:60Z").unwrap_err(),
            "parsing time \"2016-12-31T23:59:60Z\": second out of range"
        );
        assert!(p("2023-06-11t00:00:00Z").is_err());
        assert_eq!(
            p("2023-02-29T00:00:00Z").unwrap_err(),
            "parsing time \"2023-02-29T00:00:00Z\": day out of range"
        );
    }
}
