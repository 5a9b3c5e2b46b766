//! Emulators of `tsbs_generate_data` and `tsbs_generate_queries` (protocols.md §1.1-1.2).
//!
//! # `tsbs_generate_data`
//!
//! Both refuse to run beside a `config.*` in their working directory (the real tools would
//! merge it into their flags), exit 2.
//!
//! Flags: the real tools' flag sets with their types and defaults (including the
//! DB-specific query-generator booleans), parsed by [`crate::gotool::parse_tool`] like every
//! TSBS stand-in (strict pflag: an unknown flag, a single-dash flag such as `-seed=1`, a missing
//! or bad value: pflag's message plus usage on stderr, the message on stdout, exit 2). Only
//! `--format=influx` (and `timescaledb`, the same rows in that layout) and `--use-case=cpu-only`,
//! `devops` and `iot` (the latter two in `tsbs_usecases.rs`) are emulated; any other *known* format or use case is refused (exit 2, `testbed: ... not
//! emulated`), an unknown format panics like the real tool (exit 2, `Unrecognized format ...`),
//! a zero scale, an invalid use case or a timestamp Go's `time.RFC3339` refuses is the real
//! tool's quirk: `error: <msg>` on **stdout**, exit 0, in the real wording (`scale cannot be 0`,
//! `invalid use case specified: 'x'`, `cannot parse time from string 's': ` and Go's `parsing
//! time ...` text, see
//! [`crate::gotool::go_parse_rfc3339`]). Defaults as real: `--timestamp-end` is
//! `2016-01-02T00:00:00Z`.
//!
//! Output: InfluxDB line protocol, `cpu,<10 tags> <10 integer fields> <unix-ns>`, tags and
//! fields in the real order, epoch-major (host_0 .. host_{scale-1} per timestamp), exactly
//! `scale * floor((end - start) / interval)` rows (less with `--max-data-points`), deterministic
//! for a non-zero `--seed` (0 = time based, as in TSBS). Nothing on stderr on success.
//!
//! # `tsbs_generate_queries`
//!
//! Flags: `--use-case` (devops | cpu-only), `--seed`, `--scale`, `--timestamp-start`,
//! `--timestamp-end`, `--queries` (1000), `--query-type` (the 15 devops types), `--format`
//! (greptime | influx3 | timescaledb, with its `--timescale-use-*` flags), `--db-name`, `--interleaved-generation-group-id/-groups`, `--debug`,
//! `--file`. Errors in the configuration: `error: <msg>` on stderr, exit 1, in the real order
//! and wording (`scale cannot be 0`, `invalid format specified: 'x'`, `invalid use case
//! specified: 'x'`, `query type cannot be empty`, `incorrect interleaved groups configuration:
//! ...`, `invalid query type for use case 'u': 'q'`, `cannot parse time from string 's': <Go's
//! ParseError>`); more hosts than `--scale`, or a random window not shorter than the interval
//! (`upper <= lower`): a Go-style panic, exit 2. At the end,
//! stderr gets one `<label>: <n> points` line per distinct human label, sorted.
//!
//! ## Query file format
//!
//! As the real tool: a Go gob stream of `query.HTTP` values (see [`crate::queryfile`]):
//! `HumanLabel`, `HumanDescription`, `Method` (`POST`), `Path` (greptime: `/v1/sql?sql=<form-
//! urlencoded SQL>`; influx3: `/api/v3/query_sql`), `Body` (empty, as the real Body is nil),
//! `RawQuery` (the SQL), `StartTimestamp`, `EndTimestamp` (0, as the real generator leaves
//! them). The greptime and influx3 SQL is the real generator's text ([`super::tsbs_sql`]), with
//! the stand-in's own random draws of hosts and windows (the same for every format of one
//! seed). The bytes are deterministic for the flags (with a non-zero seed).
//!
//! # Knobs (`$TESTBED_KNOBS`, a JSON file; all optional; an unknown key or a bad value: exit 2)
//!
//! ```json
//! {"tsbs_generate_data":    {"exit_code": 1, "fail_after_rows": 100, "stderr": "boom",
//!                            "stdout_error": "bad things", "error_after_rows": 50,
//!                            "delay_ms": 500, "rows_per_sec": 1000,
//!                            "invocations_log": "/abs/path"},
//!  "tsbs_generate_queries": {"exit_code": 1, "stderr": "boom", "delay_ms": 500,
//!                            "fail_types": ["lastpoint"], "invocations_log": "/abs/path"}}
//! ```
//! * `exit_code` (non-zero): write `fail_after_rows` rows (default 0), print `stderr` (default
//!   `log.Fatal`-style message) on stderr, exit with that code. For queries, only the types in
//!   `fail_types` fail when it is given, every type otherwise.
//! * `stdout_error`: after `error_after_rows` rows (default 0), print `error: <msg>` on stdout
//!   and exit 0 (the real quirk).
//! * `delay_ms`: sleep before writing anything; `rows_per_sec`: throttle the output.
//! * `invocations_log`: append one line per invocation (`<tool> <args...>`), so tests can count
//!   generator runs.

use std::io::{self, Write};
use std::time::{Duration, Instant};

use serde::Deserialize;

use crate::queryfile::Query;

// ---------------------------------------------------------------------------------------------
// Flags: the real definitions (pkg/data/usecases/common/generator.go, pkg/query/config), parsed
// by the strict pflag stand-in the other TSBS stand-ins use.

use crate::gotool::{flag, FlagDef, Flags, Kind as F};

const BASE_FLAGS: &[FlagDef] = &[
    flag(
        "format",
        F::Str,
        "",
        "Format to generate. (choices: cassandra, clickhouse, influx, mongo, siridb, timescaledb, akumuli, cratedb, prometheus, victoriametrics, timestream, questdb, influx2, influx3, greptime)",
    ),
    flag("use-case", F::Str, "", "Use case to generate."),
    flag(
        "scale",
        F::Uint64,
        "1",
        "Scaling value specific to use case (e.g., devices in 'devops').",
    ),
    flag(
        "timestamp-start",
        F::Str,
        "2016-01-01T00:00:00Z",
        "Beginning timestamp (RFC3339).",
    ),
    flag(
        "timestamp-end",
        F::Str,
        "2016-01-02T00:00:00Z",
        "Ending timestamp (RFC3339).",
    ),
    flag(
        "seed",
        F::Int64,
        "0",
        "PRNG seed (default: 0, which uses the current timestamp)",
    ),
    flag("debug", F::Int, "0", "Control level of debug output"),
    flag("file", F::Str, "", "Write the output to this path"),
];

const GROUP_FLAGS: &[FlagDef] = &[
    flag(
        "interleaved-generation-group-id",
        F::Uint,
        "0",
        "Group (0-indexed) to perform round-robin serialization within. Use this to scale up data generation to multiple processes.",
    ),
    flag(
        "interleaved-generation-groups",
        F::Uint,
        "1",
        "The number of round-robin serialization groups. Use this to scale up data generation to multiple processes.",
    ),
];

const DATA_FLAGS: &[FlagDef] = &[
    flag(
        "max-data-points",
        F::Uint64,
        "0",
        "Limit the number of data points to generate, 0 = no limit",
    ),
    flag(
        "initial-scale",
        F::Uint64,
        "0",
        "Initial scaling variable specific to the use case (e.g., devices in 'devops'). 0 means to use -scale value",
    ),
    flag("log-interval", F::Duration, "10s", "Duration between data points"),
    flag(
        "max-metric-count",
        F::Uint64,
        "100",
        "Max number of metric fields to generate per host. Used only in devops-generic use-case",
    ),
    flag(
        "profile-file",
        F::Str,
        "",
        "File to which to write go profiling data",
    ),
];

const QUERY_FLAGS: &[FlagDef] = &[
    flag(
        "queries",
        F::Uint64,
        "1000",
        "Number of queries to generate.",
    ),
    flag(
        "query-type",
        F::Str,
        "",
        "Query type. (Choices are in the use case matrix.)",
    ),
    flag(
        "clickhouse-use-tags",
        F::Bool,
        "true",
        "ClickHouse only: Use separate tags table when querying",
    ),
    flag(
        "mongo-use-naive",
        F::Bool,
        "true",
        "MongoDB only: Generate queries for the 'naive' data storage format for Mongo",
    ),
    flag(
        "timescale-use-json",
        F::Bool,
        "false",
        "TimescaleDB only: Use separate JSON tags table when querying",
    ),
    flag(
        "timescale-use-tags",
        F::Bool,
        "true",
        "TimescaleDB only: Use separate tags table when querying",
    ),
    flag(
        "timescale-use-time-bucket",
        F::Bool,
        "true",
        "TimescaleDB only: Use time bucket. Set to false to test on native PostgreSQL",
    ),
    flag(
        "db-name",
        F::Str,
        "benchmark",
        "Specify database name. Timestream requires it in order to generate the queries",
    ),
];

/// The flags, typed and checked by [`crate::gotool::parse_tool`] (every flag has its value or
/// the real default), or the exit code of a usage error. A `config.*` beside the tool is
/// refused first ([`crate::gotool::refuse_viper_config`]), so nothing is merged from one.
fn parse_generator(tool: &str, tables: &[&[FlagDef]], args: &[String]) -> Result<Flags, i32> {
    crate::gotool::refuse_viper_config(tool);
    crate::gotool::parse_tool(tool, tables, args)
}

fn not_emulated(what: &str) -> i32 {
    eprintln!("testbed: {what} is not emulated");
    2
}

// ---------------------------------------------------------------------------------------------
// Knobs

/// Both generators' knobs; a key that is not one of these fails the run (exit 2).
#[derive(Debug, Default, Deserialize)]
#[serde(default, deny_unknown_fields)]
struct Knobs {
    exit_code: i32,
    fail_after_rows: u64,
    stderr: Option<String>,
    stdout_error: Option<String>,
    error_after_rows: u64,
    delay_ms: u64,
    rows_per_sec: u64,
    invocations_log: Option<String>,
    fail_types: Option<Vec<String>>,
}

fn load_knobs(tool: &str, args: &[String]) -> Knobs {
    let knobs: Knobs = crate::gotool::knobs_or_exit(tool);
    if let Some(log) = &knobs.invocations_log {
        if let Ok(mut f) = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(log)
        {
            // One write per line, so concurrent invocations do not interleave.
            let _ = f.write_all(format!("{tool} {}\n", args.join(" ")).as_bytes());
        }
    }
    if knobs.delay_ms > 0 {
        std::thread::sleep(Duration::from_millis(knobs.delay_ms));
    }
    knobs
}

// ---------------------------------------------------------------------------------------------
// Time helpers (Go's RFC 3339 and duration syntax)

/// Go's `time.Parse(time.RFC3339, s)` (strict: the real tools refuse what Go refuses).
fn parse_rfc3339_ns(s: &str) -> Result<i128, String> {
    crate::gotool::go_parse_rfc3339(s)
}

fn rfc3339(ns: i128) -> String {
    time::OffsetDateTime::from_unix_timestamp_nanos(ns)
        .ok()
        .and_then(|t| {
            t.format(&time::format_description::well_known::Rfc3339)
                .ok()
        })
        .unwrap_or_default()
}

fn time_seed() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_nanos() as u64)
        .unwrap_or(1)
}

// ---------------------------------------------------------------------------------------------
// A tiny deterministic PRNG (splitmix64): the output depends on the seed only.

struct Rng(u64);

impl Rng {
    fn new(seed: u64) -> Rng {
        Rng(seed ^ 0x9E37_79B9_7F4A_7C15)
    }
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }
    fn below(&mut self, n: u64) -> u64 {
        self.next() % n.max(1)
    }
}

// ---------------------------------------------------------------------------------------------
// tsbs_generate_data

const REGIONS: &[(&str, &[&str])] = &[
    (
        "us-east-1",
        &["us-east-1a", "us-east-1b", "us-east-1c", "us-east-1e"],
    ),
    ("us-west-1", &["us-west-1a", "us-west-1b"]),
    ("us-west-2", &["us-west-2a", "us-west-2b", "us-west-2c"]),
    ("eu-west-1", &["eu-west-1a", "eu-west-1b", "eu-west-1c"]),
    ("eu-central-1", &["eu-central-1a", "eu-central-1b"]),
    ("ap-southeast-1", &["ap-southeast-1a", "ap-southeast-1b"]),
    ("ap-southeast-2", &["ap-southeast-2a", "ap-southeast-2b"]),
    ("ap-northeast-1", &["ap-northeast-1a", "ap-northeast-1c"]),
    ("sa-east-1", &["sa-east-1a", "sa-east-1b", "sa-east-1c"]),
];
const OSES: &[&str] = &["Ubuntu16.10", "Ubuntu16.04LTS", "Ubuntu15.10"];
const ARCHES: &[&str] = &["x64", "x86"];
const TEAMS: &[&str] = &["SF", "NYC", "LON", "CHI"];
const ENVIRONMENTS: &[&str] = &["production", "staging", "test"];
/// The cpu fields in TSBS order.
pub const CPU_FIELDS: [&str; 10] = [
    "usage_user",
    "usage_system",
    "usage_idle",
    "usage_nice",
    "usage_iowait",
    "usage_irq",
    "usage_softirq",
    "usage_steal",
    "usage_guest",
    "usage_guest_nice",
];
const KNOWN_DATA_FORMATS: &[&str] = &[
    "cassandra",
    "clickhouse",
    "influx",
    "mongo",
    "siridb",
    "timescaledb",
    "akumuli",
    "cratedb",
    "prometheus",
    "victoriametrics",
    "timestream",
    "questdb",
    "influx2",
    "influx3",
    "greptime",
];
const KNOWN_USE_CASES: &[&str] = &["devops", "iot", "cpu-only", "cpu-single", "devops-generic"];

/// The real tool's quirk: configuration errors go to stdout and the exit status is 0.
fn stdout_error(msg: &str) -> i32 {
    let mut out = io::stdout().lock();
    let _ = writeln!(out, "error: {msg}");
    let _ = out.flush();
    0
}

/// `tsbs_generate_data`.
pub fn data_main(args: Vec<String>) -> i32 {
    let flags = match parse_generator(
        "tsbs_generate_data",
        &[BASE_FLAGS, DATA_FLAGS, GROUP_FLAGS],
        &args,
    ) {
        Ok(m) => m,
        Err(c) => return c,
    };
    let scale = flags.u64("scale");
    let seed = flags.i64("seed");
    let max_points = flags.u64("max-data-points");
    let initial_scale = flags.u64("initial-scale");
    let group_id = flags.u64("interleaved-generation-group-id");
    let groups = flags.u64("interleaved-generation-groups");
    let knobs = load_knobs("tsbs_generate_data", &args);

    let format = flags.str("format");
    let format = format.as_str();
    if !KNOWN_DATA_FORMATS.contains(&format) {
        crate::gotool::go_panic(
            "tsbs_generate_data",
            &format!(
                "Unrecognized format {format}, supported: {}",
                KNOWN_DATA_FORMATS.join(",")
            ),
        );
    }
    // BaseConfig.Validate: scale before the use case.
    let use_case = flags.str("use-case");
    let use_case = use_case.as_str();
    if scale == 0 {
        return stdout_error("scale cannot be 0");
    }
    if !KNOWN_USE_CASES.contains(&use_case) {
        return stdout_error(&format!("invalid use case specified: '{use_case}'"));
    }
    if groups == 0 || group_id >= groups {
        return stdout_error("incorrect interleaved groups configuration");
    }
    let (start, end) = (flags.str("timestamp-start"), flags.str("timestamp-end"));
    // Real: main prints the error on stdout and exits 0, in the words of the query generator
    // (tsbs-real-postgresql/generate/gd-badtime: `error: cannot parse time from string '<s>':
    // <Go's ParseError>`).
    let parse = |s: &str| {
        parse_rfc3339_ns(s).map_err(|e| format!("cannot parse time from string '{s}': {e}"))
    };
    let (start_ns, end_ns) = match (parse(&start), parse(&end)) {
        (Ok(a), Ok(b)) => (a, b),
        (Err(e), _) | (_, Err(e)) => return stdout_error(&e),
    };
    // A Go duration, checked by the flag parser; only its sign is left to judge.
    let interval = match i128::from(flags.duration_ns("log-interval")) {
        v if v > 0 => v,
        _ => {
            let raw = flags.str("log-interval");
            return stdout_error(&format!("invalid log interval: {raw:?}"));
        }
    };
    if format != "influx" && format != "timescaledb" {
        return not_emulated(&format!("--format={format}"));
    }
    if !matches!(use_case, "cpu-only" | "devops" | "iot") {
        return not_emulated(&format!("--use-case={use_case}"));
    }
    if initial_scale != 0 && initial_scale != scale {
        return not_emulated("--initial-scale different from --scale");
    }
    let seed = if seed == 0 { time_seed() } else { seed as u64 };
    let epochs = if end_ns > start_ns {
        ((end_ns - start_ns) / interval) as u64
    } else {
        0
    };

    let file = flags.str("file");
    let out: Box<dyn Write> = match Some(file).filter(|f| !f.is_empty()) {
        Some(path) => match std::fs::File::create(&path) {
            Ok(f) => Box::new(f),
            Err(e) => {
                eprintln!("cannot open file for write {path}: {e}");
                return 1;
            }
        },
        None => Box::new(raw_stdout()),
    };
    if use_case != "cpu-only" {
        let gen = crate::emulators::tsbs_usecases::UseCaseGen {
            use_case: use_case.to_string(),
            timescaledb: format == "timescaledb",
            scale,
            seed,
            start_ns,
            interval,
            epochs,
            max_points,
        };
        if groups != 1 {
            return not_emulated("--interleaved-generation-groups with devops or iot");
        }
        let mut out = out;
        let fail_at = (knobs.exit_code != 0).then_some(knobs.fail_after_rows);
        let error_at = knobs.stdout_error.as_ref().map(|_| knobs.error_after_rows);
        return match gen.write(&mut out, fail_at.or(error_at)) {
            Ok(_) if fail_at.is_some() => {
                let msg = knobs
                    .stderr
                    .clone()
                    .unwrap_or_else(|| "generator failed (testbed knob)".into());
                eprintln!("{}", go_log(&msg));
                knobs.exit_code
            }
            Ok(_) => {
                if let Some(msg) = &knobs.stdout_error {
                    let _ = out.write_all(format!("error: {msg}\n").as_bytes());
                    let _ = out.flush();
                }
                0
            }
            Err(e) if e.kind() == io::ErrorKind::BrokenPipe => 2,
            Err(e) => {
                eprintln!("{}", go_log(&format!("write error: {e}")));
                1
            }
        };
    }
    let out = if format == "timescaledb" {
        Box::new(TimescaleLines::new(out)) as Box<dyn Write>
    } else {
        out
    };
    let gen = DataGen {
        scale,
        seed,
        start_ns,
        interval,
        epochs,
        max_points,
        group_id,
        groups,
    };
    match gen.write(out, &knobs) {
        Ok(code) => code,
        // A closed pipe: the reader went away; Go would die of SIGPIPE.
        Err(e) if e.kind() == io::ErrorKind::BrokenPipe => 2,
        Err(e) => {
            eprintln!("{}", go_log(&format!("write error: {e}")));
            1
        }
    }
}

/// stdout as an unbuffered file (the generator does its own big buffering).
fn raw_stdout() -> std::fs::File {
    use std::os::fd::FromRawFd;
    // SAFETY: fd 1 is open for the life of the process; a duplicate is owned by the File.
    let fd = unsafe { libc::dup(1) };
    unsafe { std::fs::File::from_raw_fd(fd) }
}

fn go_log(msg: &str) -> String {
    let now = time::OffsetDateTime::now_utc();
    format!(
        "{:04}/{:02}/{:02} {:02}:{:02}:{:02} {msg}",
        now.year(),
        now.month() as u8,
        now.day(),
        now.hour(),
        now.minute(),
        now.second()
    )
}

struct DataGen {
    scale: u64,
    seed: u64,
    start_ns: i128,
    interval: i128,
    epochs: u64,
    max_points: u64,
    group_id: u64,
    groups: u64,
}

impl DataGen {
    /// Writes every row; returns the exit code (knobs may ask for a failure).
    fn write(&self, mut out: Box<dyn Write>, knobs: &Knobs) -> io::Result<i32> {
        let mut rng = Rng::new(self.seed);
        // Per-host tag prefix, built once: `cpu,hostname=host_0,...,service_environment=x `.
        let mut prefixes: Vec<Vec<u8>> = Vec::with_capacity(self.scale as usize);
        let mut state: Vec<[u8; 10]> = Vec::with_capacity(self.scale as usize);
        for h in 0..self.scale {
            let (region, dcs) = REGIONS[rng.below(REGIONS.len() as u64) as usize];
            let dc = dcs[rng.below(dcs.len() as u64) as usize];
            let p = format!(
                "cpu,hostname=host_{h},region={region},datacenter={dc},rack={},os={},arch={},team={},service={},service_version={},service_environment={} ",
                rng.below(100),
                OSES[rng.below(OSES.len() as u64) as usize],
                ARCHES[rng.below(ARCHES.len() as u64) as usize],
                TEAMS[rng.below(TEAMS.len() as u64) as usize],
                rng.below(20),
                rng.below(2),
                ENVIRONMENTS[rng.below(ENVIRONMENTS.len() as u64) as usize],
            );
            prefixes.push(p.into_bytes());
            let mut s = [0u8; 10];
            for v in s.iter_mut() {
                *v = rng.below(101) as u8;
            }
            state.push(s);
        }
        // "usage_user=" .. and the 101 possible values with their `i` suffix.
        let names: Vec<Vec<u8>> = CPU_FIELDS
            .iter()
            .enumerate()
            .map(|(i, n)| {
                let sep = if i == 0 { "" } else { "," };
                format!("{sep}{n}=").into_bytes()
            })
            .collect();
        let values: Vec<Vec<u8>> = (0..=100).map(|v| format!("{v}i").into_bytes()).collect();

        const CAP: usize = 1 << 20;
        let mut buf: Vec<u8> = Vec::with_capacity(CAP + 4096);
        let mut ts = Vec::with_capacity(32);
        let mut written: u64 = 0;
        let mut point: u64 = 0;
        let started = Instant::now();
        let fail_at = (knobs.exit_code != 0).then_some(knobs.fail_after_rows);
        let error_at = knobs.stdout_error.as_ref().map(|_| knobs.error_after_rows);
        'outer: for e in 0..self.epochs {
            ts.clear();
            ts.push(b' ');
            ts.extend_from_slice(
                (self.start_ns + self.interval * e as i128)
                    .to_string()
                    .as_bytes(),
            );
            ts.push(b'\n');
            for h in 0..self.scale as usize {
                // Random walk of every field, clamped to 0..=100; one draw per row.
                let mut r = rng.next();
                let s = &mut state[h];
                for v in s.iter_mut() {
                    let step = (r % 5) as i16 - 2;
                    r /= 5;
                    *v = (*v as i16 + step).clamp(0, 100) as u8;
                }
                let mine = point % self.groups == self.group_id;
                point += 1;
                if !mine {
                    continue;
                }
                if self.max_points > 0 && written >= self.max_points {
                    break 'outer;
                }
                if fail_at == Some(written) || error_at == Some(written) {
                    break 'outer;
                }
                buf.extend_from_slice(&prefixes[h]);
                for (name, v) in names.iter().zip(s.iter()) {
                    buf.extend_from_slice(name);
                    buf.extend_from_slice(&values[*v as usize]);
                }
                buf.extend_from_slice(&ts);
                written += 1;
                if buf.len() >= CAP {
                    out.write_all(&buf)?;
                    buf.clear();
                    throttle(knobs.rows_per_sec, written, started);
                }
            }
        }
        out.write_all(&buf)?;
        out.flush()?;
        if fail_at.is_some() {
            let msg = knobs
                .stderr
                .clone()
                .unwrap_or_else(|| "generator failed (testbed knob)".into());
            eprintln!("{}", go_log(&msg));
            return Ok(knobs.exit_code);
        }
        if let Some(msg) = &knobs.stdout_error {
            out.write_all(format!("error: {msg}\n").as_bytes())?;
            out.flush()?;
        }
        Ok(0)
    }
}

fn throttle(rows_per_sec: u64, written: u64, started: Instant) {
    if rows_per_sec == 0 {
        return;
    }
    let due = Duration::from_secs_f64(written as f64 / rows_per_sec as f64);
    let elapsed = started.elapsed();
    if due > elapsed {
        std::thread::sleep(due - elapsed);
    }
}

// ---------------------------------------------------------------------------------------------
// tsbs_generate_queries

/// The 15 devops query types the benchmarks use.
pub const QUERY_TYPES: [&str; 15] = [
    "cpu-max-all-1",
    "cpu-max-all-8",
    "double-groupby-1",
    "double-groupby-5",
    "double-groupby-all",
    "groupby-orderby-limit",
    "high-cpu-1",
    "high-cpu-all",
    "lastpoint",
    "single-groupby-1-1-1",
    "single-groupby-1-1-12",
    "single-groupby-1-8-1",
    "single-groupby-5-1-1",
    "single-groupby-5-1-12",
    "single-groupby-5-8-1",
];

const HOUR: i128 = 3_600_000_000_000;

/// What a query type asks for: metrics, hosts (0 = all), window length, grouping.
struct TypeShape {
    kind: Kind,
    metrics: usize,
    hosts: u64,
    window: i128,
}

enum Kind {
    SingleGroupby,
    CpuMaxAll,
    DoubleGroupby,
    GroupbyOrderbyLimit,
    HighCpu,
    Lastpoint,
}

fn shape_of(t: &str) -> Option<TypeShape> {
    let s = |kind, metrics, hosts, window| {
        Some(TypeShape {
            kind,
            metrics,
            hosts,
            window,
        })
    };
    match t {
        "cpu-max-all-1" => s(Kind::CpuMaxAll, 10, 1, 8 * HOUR),
        "cpu-max-all-8" => s(Kind::CpuMaxAll, 10, 8, 8 * HOUR),
        "double-groupby-1" => s(Kind::DoubleGroupby, 1, 0, 12 * HOUR),
        "double-groupby-5" => s(Kind::DoubleGroupby, 5, 0, 12 * HOUR),
        "double-groupby-all" => s(Kind::DoubleGroupby, 10, 0, 12 * HOUR),
        // The real generator draws a one-hour window (`MustRandWindow(time.Hour)`).
        "groupby-orderby-limit" => s(Kind::GroupbyOrderbyLimit, 1, 0, HOUR),
        "high-cpu-1" => s(Kind::HighCpu, 10, 1, 12 * HOUR),
        "high-cpu-all" => s(Kind::HighCpu, 10, 0, 12 * HOUR),
        "lastpoint" => s(Kind::Lastpoint, 10, 0, 0),
        _ => {
            let rest = t.strip_prefix("single-groupby-")?;
            let parts: Vec<&str> = rest.split('-').collect();
            let [m, h, r] = parts.as_slice() else {
                return None;
            };
            let (m, h, r): (usize, u64, i128) = (m.parse().ok()?, h.parse().ok()?, r.parse().ok()?);
            if !QUERY_TYPES.contains(&t) {
                return None;
            }
            s(Kind::SingleGroupby, m, h, r * HOUR)
        }
    }
}

fn label_of(t: &str, shape: &TypeShape, prefix: &str) -> String {
    match shape.kind {
        Kind::SingleGroupby => format!(
            "{prefix} {} cpu metric(s), random {:4} hosts, random {}h0m0s by 1m",
            shape.metrics,
            shape.hosts,
            shape.window / HOUR
        ),
        Kind::CpuMaxAll => format!(
            "{prefix} max of all CPU metrics, random {:4} hosts, random 8h0m0s by 1h",
            shape.hosts
        ),
        Kind::DoubleGroupby => format!(
            "{prefix} mean of {} metrics, all hosts, random 12h0m0s by 1h",
            shape.metrics
        ),
        Kind::GroupbyOrderbyLimit => {
            format!("{prefix} max cpu over last 5 min-intervals (random end)")
        }
        Kind::HighCpu if t == "high-cpu-1" => format!("{prefix} CPU over threshold, 1 host(s)"),
        Kind::HighCpu => format!("{prefix} CPU over threshold, all hosts"),
        Kind::Lastpoint => format!("{prefix} last row per host"),
    }
}

struct QueryCtx<'a> {
    format: &'a str,
    scale: u64,
    start_ns: i128,
    end_ns: i128,
}

impl QueryCtx<'_> {
    fn hosts(&self, rng: &mut Rng, n: u64) -> Vec<String> {
        // A partial Fisher-Yates draw of n distinct hosts.
        let mut picked: Vec<u64> = Vec::with_capacity(n as usize);
        while (picked.len() as u64) < n {
            let h = rng.below(self.scale);
            if !picked.contains(&h) {
                picked.push(h);
            }
        }
        picked.iter().map(|h| format!("host_{h}")).collect()
    }

    /// InfluxQL as the real `influx` generator writes it
    /// (`cmd/tsbs_generate_queries/databases/influx/devops.go`).
    fn influxql(&self, shape: &TypeShape, rng: &mut Rng, from: i128, to: i128) -> String {
        let metrics = &CPU_FIELDS[..shape.metrics.min(10)];
        let hosts_where = |hosts: &[String]| {
            let parts: Vec<String> = hosts.iter().map(|h| format!("hostname = '{h}'")).collect();
            format!("({})", parts.join(" or "))
        };
        let (f, t) = (rfc3339(from), rfc3339(to));
        match shape.kind {
            Kind::SingleGroupby | Kind::CpuMaxAll => {
                let hosts = self.hosts(rng, shape.hosts);
                let by = if matches!(shape.kind, Kind::CpuMaxAll) {
                    "1h"
                } else {
                    "1m"
                };
                let sel: Vec<String> = metrics.iter().map(|m| format!("max({m})")).collect();
                format!(
                    "SELECT {} from cpu where {} and time >= '{f}' and time < '{t}' group by time({by})",
                    sel.join(", "),
                    hosts_where(&hosts)
                )
            }
            Kind::DoubleGroupby => {
                let sel: Vec<String> = metrics.iter().map(|m| format!("mean({m})")).collect();
                format!(
                    "SELECT {} from cpu where time >= '{f}' and time < '{t}' group by time(1h),hostname",
                    sel.join(", ")
                )
            }
            Kind::GroupbyOrderbyLimit => format!(
                "SELECT max(usage_user) from cpu where time < '{t}' group by time(1m) limit 5"
            ),
            Kind::HighCpu => {
                let hosts = if shape.hosts > 0 {
                    format!(" and {}", hosts_where(&self.hosts(rng, shape.hosts)))
                } else {
                    String::new()
                };
                format!("SELECT * from cpu where usage_user > 90.0 and time >= '{f}' and time < '{t}'{hosts}")
            }
            Kind::Lastpoint => {
                "SELECT * from cpu group by \"hostname\" order by time desc limit 1".to_string()
            }
        }
    }

    /// The real generator's SQL for `greptime` and `influx3` ([`super::tsbs_sql`]); hosts are
    /// drawn here, after the window, in the real generator's order.
    fn sql(&self, t: &str, shape: &TypeShape, rng: &mut Rng, from: i128, to: i128) -> String {
        use super::tsbs_sql::{greptime, influx3, Shape};
        let _ = t;
        let metrics = &CPU_FIELDS[..shape.metrics.min(10)];
        let hosts = match shape.kind {
            Kind::SingleGroupby | Kind::CpuMaxAll | Kind::HighCpu if shape.hosts > 0 => {
                self.hosts(rng, shape.hosts)
            }
            _ => Vec::new(),
        };
        let s = match shape.kind {
            Kind::SingleGroupby => Shape::SingleGroupby {
                metrics,
                hosts: &hosts,
            },
            Kind::CpuMaxAll => Shape::CpuMaxAll {
                metrics,
                hosts: &hosts,
            },
            Kind::DoubleGroupby => Shape::DoubleGroupby { metrics },
            Kind::GroupbyOrderbyLimit => Shape::GroupbyOrderbyLimit,
            Kind::HighCpu => Shape::HighCpu { hosts: &hosts },
            Kind::Lastpoint => Shape::Lastpoint,
        };
        let (f, e) = (rfc3339(from), rfc3339(to));
        if self.format == "greptime" {
            greptime(&s, &f, &e)
        } else {
            influx3(&s, &f, &e)
        }
    }
}

/// `tsbs_generate_queries`.
pub fn queries_main(args: Vec<String>) -> i32 {
    let flags = match parse_generator(
        "tsbs_generate_queries",
        &[BASE_FLAGS, QUERY_FLAGS, GROUP_FLAGS],
        &args,
    ) {
        Ok(m) => m,
        Err(c) => return c,
    };
    let scale = flags.u64("scale");
    let seed = flags.i64("seed");
    let count = flags.u64("queries");
    let debug = flags.i64("debug");
    let group_id = flags.u64("interleaved-generation-group-id");
    let groups = flags.u64("interleaved-generation-groups");
    let knobs = load_knobs("tsbs_generate_queries", &args);
    let fail = |msg: String| {
        eprintln!("error: {msg}");
        1
    };
    let (use_case, qtype, format) = (
        flags.str("use-case"),
        flags.str("query-type"),
        flags.str("format"),
    );
    let (use_case, qtype, format) = (use_case.as_str(), qtype.as_str(), format.as_str());
    // The real order and wording: BaseConfig.Validate (scale, format, use case), then the
    // query type and groups (pkg/query/config), then the use-case matrix
    // (internal/inputs/generator_queries.go).
    if scale == 0 {
        return fail("scale cannot be 0".into());
    }
    if !KNOWN_DATA_FORMATS.contains(&format) {
        return fail(format!("invalid format specified: '{format}'"));
    }
    if !KNOWN_USE_CASES.contains(&use_case) {
        return fail(format!("invalid use case specified: '{use_case}'"));
    }
    if qtype.is_empty() {
        return fail("query type cannot be empty".into());
    }
    if groups == 0 {
        return fail("incorrect interleaved groups configuration: total groups = 0".into());
    }
    if group_id >= groups {
        return fail(format!(
            "incorrect interleaved groups configuration: id {group_id} >= total groups {groups}"
        ));
    }
    if !matches!(use_case, "devops" | "cpu-only" | "iot") {
        return fail(format!("invalid use case specified: '{use_case}'"));
    }
    if use_case == "iot" {
        return iot_queries_main(&flags, qtype, format, scale, seed, count, &knobs);
    }
    let Some(shape) = shape_of(qtype) else {
        return fail(format!(
            "invalid query type for use case '{use_case}': '{qtype}'"
        ));
    };
    let prefix = match format {
        "greptime" | "influx" => "Influx",
        "influx3" => "InfluxDB 3",
        "timescaledb" => "TimescaleDB",
        other => return not_emulated(&format!("--format={other}")),
    };
    let (start, end) = (flags.str("timestamp-start"), flags.str("timestamp-end"));
    let start_ns = match parse_rfc3339_ns(&start) {
        Ok(v) => v,
        Err(e) => return fail(format!("cannot parse time from string '{start}': {e}")),
    };
    let end_ns = match parse_rfc3339_ns(&end) {
        Ok(v) => v,
        Err(e) => return fail(format!("cannot parse time from string '{end}': {e}")),
    };
    if end_ns <= start_ns {
        return fail("invalid time range: end is before start".into());
    }
    if knobs.exit_code != 0
        && knobs
            .fail_types
            .as_ref()
            .is_none_or(|t| t.iter().any(|x| x == qtype))
    {
        let msg = knobs
            .stderr
            .clone()
            .unwrap_or_else(|| "query generation failed (testbed knob)".into());
        eprintln!("{}", go_log(&msg));
        return knobs.exit_code;
    }
    if shape.hosts > scale {
        crate::gotool::go_panic(
            "tsbs_generate_queries",
            &format!(
                "number of hosts ({}) larger than total hosts. See --scale ({scale})",
                shape.hosts
            ),
        );
    }
    // Real: `upper := end - window; if upper <= lower` panics, so a window equal to the span
    // panics too (`internal/utils/time_interval.go`).
    if shape.window > 0 && shape.window >= end_ns - start_ns {
        crate::gotool::go_panic(
            "tsbs_generate_queries",
            &format!(
                "random window equal to or larger than TimeInterval: window {}, interval {}",
                go_duration_string(shape.window),
                go_duration_string(end_ns - start_ns)
            ),
        );
    }
    let seed = if seed == 0 { time_seed() } else { seed as u64 };
    if debug > 0 {
        eprintln!("using random seed {seed}");
    }
    let ctx = QueryCtx {
        format,
        scale,
        start_ns,
        end_ns,
    };
    let label = label_of(qtype, &shape, prefix);
    let mut rng = Rng::new(seed);
    let file = flags.str("file");
    let out: Box<dyn Write> = match Some(file).filter(|f| !f.is_empty()) {
        Some(path) => match std::fs::File::create(&path) {
            Ok(f) => Box::new(io::BufWriter::new(f)),
            Err(e) => return fail(format!("cannot open file for write {path}: {e}")),
        },
        None => Box::new(io::BufWriter::new(raw_stdout())),
    };
    if format == "timescaledb" {
        let opts = TimescaleOpts::from_flags(&flags);
        return timescaledb_queries(
            &ctx,
            &opts,
            qtype,
            &shape,
            &label,
            &mut rng,
            out,
            count,
            (groups, group_id),
        );
    }
    let mut out = crate::queryfile::Writer::new(out);
    let mut emitted = 0u64;
    for i in 0..count {
        let (from, to) = if shape.window > 0 {
            let span = (ctx.end_ns - ctx.start_ns - shape.window) as u64;
            // Windows start on a whole second, as TSBS's random windows are second-aligned.
            let offset = (rng.below(span / 1_000_000_000 + 1) as i128) * 1_000_000_000;
            (ctx.start_ns + offset, ctx.start_ns + offset + shape.window)
        } else {
            (0, 0)
        };
        let sql = if format == "influx" {
            ctx.influxql(&shape, &mut rng, from, to)
        } else {
            ctx.sql(qtype, &shape, &mut rng, from, to)
        };
        if i % groups != group_id {
            continue;
        }
        // As real: lastpoint's description names the table; no timestamps are filled in.
        let description = if shape.window > 0 {
            format!("{label}: {}", rfc3339(from))
        } else {
            format!("{label}: cpu")
        };
        let rec = if format == "greptime" {
            Query::greptime(&label, &description, &sql, 0, 0)
        } else if format == "influx" {
            Query::influxql(&label, &description, &sql, 0, 0)
        } else {
            Query::influx3(&label, &description, &sql, 0, 0)
        };
        if debug > 1 {
            eprintln!("{}", rec.human_description);
        }
        if let Err(e) = out.write(&rec) {
            return fail(format!("write: {e}"));
        }
        emitted += 1;
    }
    if let Err(e) = out.flush() {
        return fail(format!("write: {e}"));
    }
    eprintln!("{label}: {emitted} points");
    0
}

// ---------------------------------------------------------------------------------------------
// --use-case=iot (cmd/tsbs_generate_queries/uses/iot, databases/{greptime,influx}/iot.go)

/// An iot query type: the real human label (after the format's prefix) and description, and
/// the random window it draws (0: none).
fn iot_shape(t: &str) -> Option<(&'static str, &'static str, i128)> {
    const MIN: i128 = 60_000_000_000;
    Some(match t {
        "last-loc" => ("last location per truck", "", 0),
        "single-last-loc" => ("last location by specific truck", ": random    1 trucks", 0),
        "low-fuel" => ("trucks with low fuel", ": under 10 percent", 0),
        "high-load" => ("trucks with high load", ": over 90 percent", 0),
        "stationary-trucks" => (
            "stationary trucks",
            ": with low avg velocity in last 10 minutes",
            10 * MIN,
        ),
        "long-driving-sessions" => (
            "trucks with longer driving sessions",
            ": stopped less than 20 mins in 4 hour period",
            4 * HOUR,
        ),
        "long-daily-sessions" => (
            "trucks with longer daily sessions",
            ": drove more than 10 hours in the last 24 hours",
            24 * HOUR,
        ),
        "avg-vs-projected-fuel-consumption" => {
            ("average vs projected fuel consumption per fleet", "", 0)
        }
        "avg-daily-driving-duration" => ("average driver driving duration per day", "", 0),
        "avg-daily-driving-session" => (
            "average driver driving session without stopping per day",
            "",
            0,
        ),
        "avg-load" => ("average load per truck model per fleet", "", 0),
        "daily-activity" => ("daily truck activity per fleet per model", "", 0),
        "breakdown-frequency" => ("truck breakdown frequency per model", "", 0),
        _ => return None,
    })
}

/// The iot query text of the `influx` and `greptime` formats: the fork's
/// `databases/greptime/iot.go` is a copy of `databases/influx/iot.go`, so GreptimeDB gets the
/// same InfluxQL text on `/v1/sql` (`"time"`, `GROUP BY time(10m)`, `mean()`), which a SQL
/// engine cannot plan as written: the stand-in must not be kinder than that.
fn iot_query(t: &str, rng: &mut Rng, scale: u64, from: i128, to: i128) -> String {
    let fleets = ["East", "West", "North", "South"];
    let fleet = fleets[rng.below(4) as usize];
    let truck = format!("truck_{}", rng.below(scale));
    let (f, e) = (rfc3339(from), rfc3339(to));
    // The fork's text, line breaks and tabs included (`databases/influx/iot.go` at the pinned
    // commit); `tenMinutePeriods(5, 4h)` is 22 and `tenMinutePeriods(35, 24h)` is 60.
    match t {
        "last-loc" => format!("SELECT \"latitude\", \"longitude\" \n\t\tFROM \"readings\" \n\t\tWHERE \"fleet\"='{fleet}' \n\t\tGROUP BY \"name\",\"driver\" \n\t\tORDER BY \"time\" \n\t\tLIMIT 1"),
        "single-last-loc" => format!("SELECT \"name\", \"driver\", \"latitude\", \"longitude\" \n\t\tFROM \"readings\" \n\t\tWHERE (\"name\" = '{truck}') \n\t\tORDER BY \"time\" \n\t\tLIMIT 1"),
        "low-fuel" => format!("SELECT \"name\", \"driver\", \"fuel_state\" \n\t\tFROM \"diagnostics\" \n\t\tWHERE \"fuel_state\" <= 0.1 AND \"fleet\" = '{fleet}' \n\t\tGROUP BY \"name\" \n\t\tORDER BY \"time\" DESC \n\t\tLIMIT 1"),
        "high-load" => format!("SELECT \"name\", \"driver\", \"current_load\", \"load_capacity\" \n\t\tFROM (SELECT  \"current_load\", \"load_capacity\" \n\t\t FROM \"diagnostics\" WHERE fleet = '{fleet}' \n\t\t GROUP BY \"name\",\"driver\" \n\t\t ORDER BY \"time\" DESC \n\t\t LIMIT 1) \n\t\tWHERE \"current_load\" >= 0.9 * \"load_capacity\" \n\t\tGROUP BY \"name\" \n\t\tORDER BY \"time\" DESC"),
        "stationary-trucks" => format!("SELECT \"name\", \"driver\" \n\t\tFROM(SELECT mean(\"velocity\") as mean_velocity \n\t\t FROM \"readings\" \n\t\t WHERE time > '{f}' AND time <= '{e}' \n\t\t GROUP BY time(10m),\"name\",\"driver\",\"fleet\"  \n\t\t LIMIT 1) \n\t\tWHERE \"fleet\" = '{fleet}' AND \"mean_velocity\" < 1 \n\t\tGROUP BY \"name\""),
        "long-driving-sessions" | "long-daily-sessions" => {
            let periods = if t == "long-driving-sessions" { 22 } else { 60 };
            format!("SELECT \"name\",\"driver\" \n\t\tFROM(SELECT count(*) AS ten_min \n\t\t FROM(SELECT mean(\"velocity\") AS mean_velocity \n\t\t  FROM readings \n\t\t  WHERE \"fleet\" = '{fleet}' AND time > '{f}' AND time <= '{e}' \n\t\t  GROUP BY time(10m),\"name\",\"driver\") \n\t\t WHERE \"mean_velocity\" > 1 \n\t\t GROUP BY \"name\",\"driver\") \n\t\tWHERE ten_min_mean_velocity > {periods}")
        }
        "avg-vs-projected-fuel-consumption" => "SELECT mean(\"fuel_consumption\") AS \"mean_fuel_consumption\", mean(\"nominal_fuel_consumption\") AS \"nominal_fuel_consumption\" \n\t\tFROM \"readings\" \n\t\tWHERE \"velocity\" > 1 \n\t\tGROUP BY \"fleet\"".into(),
        "avg-daily-driving-duration" => format!("SELECT count(\"mv\")/6 as \"hours driven\" \n\t\tFROM (SELECT mean(\"velocity\") as \"mv\" \n\t\t FROM \"readings\" \n\t\t WHERE time > '{f}' AND time < '{e}' \n\t\t GROUP BY time(10m),\"fleet\", \"name\", \"driver\") \n\t\tWHERE time > '{f}' AND time < '{e}' \n\t\tGROUP BY time(1d),\"fleet\", \"name\", \"driver\""),
        "avg-daily-driving-session" => format!("SELECT \"elapsed\" \n\t\tINTO \"random_measure2_1\" \n\t\tFROM (SELECT difference(\"difka\"), elapsed(\"difka\", 1m) \n\t\t FROM (SELECT \"difka\" \n\t\t  FROM (SELECT difference(\"mv\") AS difka \n\t\t   FROM (SELECT floor(mean(\"velocity\")/10)/floor(mean(\"velocity\")/10) AS \"mv\" \n\t\t    FROM \"readings\" \n\t\t    WHERE \"name\"!='' AND time > '{f}' AND time < '{e}' \n\t\t    GROUP BY time(10m), \"name\" fill(0)) \n\t\t   GROUP BY \"name\") \n\t\t  WHERE \"difka\"!=0 \n\t\t  GROUP BY \"name\") \n\t\t GROUP BY \"name\") \n\t\tWHERE \"difference\" = -2 \n\t\tGROUP BY \"name\"; \n\t\tSELECT mean(\"elapsed\") \n\t\tFROM \"random_measure2_1\" \n\t\tWHERE time > '{f}' AND time < '{e}' \n\t\tGROUP BY time(1d),\"name\""),
        "avg-load" => "SELECT mean(\"ml\") AS mean_load_percentage \n\t\tFROM (SELECT \"current_load\"/\"load_capacity\" AS \"ml\" \n\t\t FROM \"diagnostics\" \n\t\t GROUP BY \"name\", \"fleet\", \"model\") \n\t\tGROUP BY \"fleet\", \"model\"".into(),
        "daily-activity" => format!("SELECT count(\"ms\")/144 \n\t\tFROM (SELECT mean(\"status\") AS ms \n\t\t FROM \"diagnostics\" \n\t\t WHERE time >= '{f}' AND time < '{e}' \n\t\t GROUP BY time(10m), \"model\", \"fleet\") \n\t\tWHERE time >= '{f}' AND time < '{e}' AND \"ms\"<1 \n\t\tGROUP BY time(1d), \"model\", \"fleet\""),
        // breakdown-frequency
        _ => format!("SELECT count(\"state_changed\") \n\t\tFROM (SELECT difference(\"broken_down\") AS \"state_changed\" \n\t\t FROM (SELECT floor(2*(sum(\"nzs\")/count(\"nzs\")))/floor(2*(sum(\"nzs\")/count(\"nzs\"))) AS \"broken_down\" \n\t\t  FROM (SELECT \"model\", \"status\"/\"status\" AS nzs \n\t\t   FROM \"diagnostics\" \n\t\t   WHERE time >= '{f}' AND time < '{e}') \n\t\t  WHERE time >= '{f}' AND time < '{e}' \n\t\t  GROUP BY time(10m),\"model\") \n\t\t GROUP BY \"model\") \n\t\tWHERE \"state_changed\" = 1 \n\t\tGROUP BY \"model\""),
    }
}

/// `--use-case=iot`: the formats with an iot generator (greptime, influx); influx3 has none
/// (`databases/influx3` implements devops only), as the real tool says.
fn iot_queries_main(
    flags: &crate::gotool::Flags,
    qtype: &str,
    format: &str,
    scale: u64,
    seed: i64,
    count: u64,
    knobs: &Knobs,
) -> i32 {
    let fail = |msg: String| {
        eprintln!("error: {msg}");
        1
    };
    let Some((what, desc, window)) = iot_shape(qtype) else {
        return fail(format!("invalid query type for use case 'iot': '{qtype}'"));
    };
    let prefix = match format {
        "greptime" | "influx" => "Influx",
        "timescaledb" => "TimescaleDB",
        "influx3" => {
            return fail(format!(
                "use case 'iot' not implemented for format '{format}'"
            ))
        }
        other => return not_emulated(&format!("--use-case=iot --format={other}")),
    };
    let (start, end) = (flags.str("timestamp-start"), flags.str("timestamp-end"));
    let (start_ns, end_ns) = match (parse_rfc3339_ns(&start), parse_rfc3339_ns(&end)) {
        (Ok(a), Ok(b)) => (a, b),
        (Err(e), _) => return fail(format!("cannot parse time from string '{start}': {e}")),
        (_, Err(e)) => return fail(format!("cannot parse time from string '{end}': {e}")),
    };
    if knobs.exit_code != 0
        && knobs
            .fail_types
            .as_ref()
            .is_none_or(|t| t.iter().any(|x| x == qtype))
    {
        eprintln!("{}", go_log("query generation failed (testbed knob)"));
        return knobs.exit_code;
    }
    if window > 0 && window >= end_ns - start_ns {
        crate::gotool::go_panic(
            "tsbs_generate_queries",
            &format!(
                "random window equal to or larger than TimeInterval: window {}, interval {}",
                go_duration_string(window),
                go_duration_string(end_ns - start_ns)
            ),
        );
    }
    let label = format!("{prefix} {what}");
    let mut rng = Rng::new(if seed == 0 { time_seed() } else { seed as u64 });
    let file = flags.str("file");
    let out: Box<dyn Write> = match Some(file).filter(|f| !f.is_empty()) {
        Some(path) => match std::fs::File::create(&path) {
            Ok(f) => Box::new(io::BufWriter::new(f)),
            Err(e) => return fail(format!("cannot open file for write {path}: {e}")),
        },
        None => Box::new(io::BufWriter::new(raw_stdout())),
    };
    // The timescaledb format is a gob stream of `query.TimescaleDB`, written at the end.
    let json = format == "timescaledb" && flags.bool("timescale-use-json");
    let mut ts_queries = Vec::new();
    let (mut raw, mut out) = if format == "timescaledb" {
        (Some(out), None)
    } else {
        (None, Some(crate::queryfile::Writer::new(out)))
    };
    for _ in 0..count {
        let (from, to) = if window > 0 {
            let span = (end_ns - start_ns - window) as u64;
            let offset = (rng.below(span / 1_000_000_000 + 1) as i128) * 1_000_000_000;
            (start_ns + offset, start_ns + offset + window)
        } else {
            (start_ns, end_ns)
        };
        let description = format!("{label}{desc}");
        if format == "timescaledb" {
            let (table, sql) = iot_timescaledb_sql(qtype, json, &mut rng, scale, from, to);
            ts_queries.push(crate::emulators::tsbs_timescaledb::TsQuery {
                human_label: label.clone(),
                human_description: description,
                hypertable: table.into(),
                sql_query: sql,
            });
            continue;
        }
        let sql = iot_query(qtype, &mut rng, scale, from, to);
        let rec = if format == "greptime" {
            Query::greptime(&label, &description, &sql, 0, 0)
        } else {
            Query::influxql(&label, &description, &sql, 0, 0)
        };
        if let Some(Err(e)) = out.as_mut().map(|o| o.write(&rec)) {
            return fail(format!("write: {e}"));
        }
    }
    if let Some(raw) = raw.as_mut() {
        let bytes = crate::emulators::tsbs_timescaledb::write_queries(&ts_queries);
        if let Err(e) = raw.write_all(&bytes).and_then(|_| raw.flush()) {
            return fail(format!("write: {e}"));
        }
    }
    if let Some(Err(e)) = out.as_mut().map(|o| o.flush()) {
        return fail(format!("write: {e}"));
    }
    eprintln!("{label}: {count} points");
    0
}

/// The fork's `databases/timescaledb/iot.go` text of one iot query (tags in the `tags` table,
/// `tagset->>'...'` with `--timescale-use-json`), and the table `fillInQuery` names. Six of
/// them call `time_bucket` whatever `--timescale-use-time-bucket` says: plain PostgreSQL has no
/// such function.
fn iot_timescaledb_sql(
    t: &str,
    json: bool,
    rng: &mut Rng,
    scale: u64,
    from: i128,
    to: i128,
) -> (&'static str, String) {
    let col = |c: &str| {
        if json {
            format!("tagset->>'{c}'")
        } else {
            c.to_string()
        }
    };
    let alias = |c: &str| format!("{} AS {c}", col(c));
    let fleets = ["East", "West", "North", "South"];
    let mut fleet = || fleets[rng.below(4) as usize];
    let (s, e) = (go_sql_time(from), go_sql_time(to));
    let (name, driver) = (alias("name"), alias("driver"));
    match t {
        "single-last-loc" => {
            let truck = format!("truck_{}", rng.below(scale));
            let which = if json {
                format!("tags_id IN (SELECT id FROM tags WHERE tagset @> '{{\"name\": \"{truck}\"}}')")
            } else {
                format!("name IN ('{truck}')")
            };
            ("readings", format!("SELECT t.{name}, t.{driver}, r.*\n\t\tFROM tags t INNER JOIN LATERAL\n\t\t\t(SELECT longitude, latitude\n\t\t\tFROM readings r\n\t\t\tWHERE r.tags_id=t.id\n\t\t\tORDER BY time DESC LIMIT 1)  r ON true\n\t\tWHERE t.{which}"))
        }
        "last-loc" => ("readings", format!("SELECT t.{name}, t.{driver}, r.*\n\t\tFROM tags t INNER JOIN LATERAL\n\t\t\t(SELECT longitude, latitude\n\t\t\tFROM readings r\n\t\t\tWHERE r.tags_id=t.id\n\t\t\tORDER BY time DESC LIMIT 1)  r ON true\n\t\tWHERE t.{} IS NOT NULL\n\t\tAND t.{} = '{}'", col("name"), col("fleet"), fleet())),
        "low-fuel" => ("diagnostics", format!("SELECT t.{name}, t.{driver}, d.* \n\t\tFROM tags t INNER JOIN LATERAL \n\t\t\t(SELECT fuel_state \n\t\t\tFROM diagnostics d \n\t\t\tWHERE d.tags_id=t.id \n\t\t\tORDER BY time DESC LIMIT 1) d ON true \n\t\tWHERE t.{} IS NOT NULL\n\t\tAND d.fuel_state < 0.1 \n\t\tAND t.{} = '{}'", col("name"), col("fleet"), fleet())),
        "high-load" => ("diagnostics", format!("SELECT t.{name}, t.{driver}, d.* \n\t\tFROM tags t INNER JOIN LATERAL \n\t\t\t(SELECT current_load \n\t\t\tFROM diagnostics d \n\t\t\tWHERE d.tags_id=t.id \n\t\t\tORDER BY time DESC LIMIT 1) d ON true \n\t\tWHERE t.{} IS NOT NULL\n\t\tAND d.current_load/t.{} > 0.9 \n\t\tAND t.{} = '{}'", col("name"), col("load_capacity"), col("fleet"), fleet())),
        "stationary-trucks" => ("readings", format!("SELECT t.{name}, t.{driver}\n\t\tFROM tags t \n\t\tINNER JOIN readings r ON r.tags_id = t.id \n\t\tWHERE time >= '{s}' AND time < '{e}'\n\t\tAND t.{} IS NOT NULL\n\t\tAND t.{} = '{}' \n\t\tGROUP BY 1, 2 \n\t\tHAVING avg(r.velocity) < 1", col("name"), col("fleet"), fleet())),
        // tenMinutePeriods(5, 4h) = 22, tenMinutePeriods(35, 24h) = 60.
        "long-driving-sessions" | "long-daily-sessions" => {
            let periods = if t == "long-driving-sessions" { 22 } else { 60 };
            ("readings", format!("SELECT t.{name}, t.{driver}\n\t\tFROM tags t \n\t\tINNER JOIN LATERAL \n\t\t\t(SELECT  time_bucket('10 minutes', time) AS ten_minutes, tags_id  \n\t\t\tFROM readings \n\t\t\tWHERE time >= '{s}' AND time < '{e}'\n\t\t\tGROUP BY ten_minutes, tags_id  \n\t\t\tHAVING avg(velocity) > 1 \n\t\t\tORDER BY ten_minutes, tags_id) AS r ON t.id = r.tags_id \n\t\tWHERE t.{} IS NOT NULL\n\t\tAND t.{} = '{}'\n\t\tGROUP BY name, driver \n\t\tHAVING count(r.ten_minutes) > {periods}", col("name"), col("fleet"), fleet()))
        }
        "avg-vs-projected-fuel-consumption" => ("readings", format!("SELECT t.{}, avg(r.fuel_consumption) AS avg_fuel_consumption, \n\t\tavg(t.{}) AS projected_fuel_consumption\n\t\tFROM tags t\n\t\tINNER JOIN LATERAL(SELECT tags_id, fuel_consumption FROM readings r WHERE r.tags_id = t.id AND velocity > 1) r ON true\n\t\tWHERE t.{} IS NOT NULL\n\t\tAND t.{} IS NOT NULL \n\t\tAND t.{} IS NOT NULL\n\t\tGROUP BY fleet", alias("fleet"), col("nominal_fuel_consumption"), col("fleet"), col("nominal_fuel_consumption"), col("name"))),
        "avg-daily-driving-duration" => ("readings", format!("WITH ten_minute_driving_sessions\n\t\tAS (\n\t\t\tSELECT time_bucket('10 minutes', TIME) AS ten_minutes, tags_id\n\t\t\tFROM readings r\n\t\t\tGROUP BY tags_id, ten_minutes\n\t\t\tHAVING avg(velocity) > 1\n\t\t\t), daily_total_session\n\t\tAS (\n\t\t\tSELECT time_bucket('24 hours', ten_minutes) AS day, tags_id, count(*) / 6 AS hours\n\t\t\tFROM ten_minute_driving_sessions\n\t\t\tGROUP BY day, tags_id\n\t\t\t)\n\t\tSELECT t.{}, t.{name}, t.{driver}, avg(d.hours) AS avg_daily_hours\n\t\tFROM daily_total_session d\n\t\tINNER JOIN tags t ON t.id = d.tags_id\n\t\tGROUP BY fleet, name, driver", alias("fleet"))),
        "avg-daily-driving-session" => ("readings", format!("WITH driver_status\n\t\tAS (\n\t\t\tSELECT tags_id, time_bucket('10 mins', TIME) AS ten_minutes, avg(velocity) > 5 AS driving\n\t\t\tFROM readings\n\t\t\tGROUP BY tags_id, ten_minutes\n\t\t\tORDER BY tags_id, ten_minutes\n\t\t\t), driver_status_change\n\t\tAS (\n\t\t\tSELECT tags_id, ten_minutes AS start, lead(ten_minutes) OVER (PARTITION BY tags_id ORDER BY ten_minutes) AS stop, driving\n\t\t\tFROM (\n\t\t\t\tSELECT tags_id, ten_minutes, driving, lag(driving) OVER (PARTITION BY tags_id ORDER BY ten_minutes) AS prev_driving\n\t\t\t\tFROM driver_status\n\t\t\t\t) x\n\t\t\tWHERE x.driving <> x.prev_driving\n\t\t\t)\n\t\tSELECT t.{name}, time_bucket('24 hours', start) AS day, avg(age(stop, start)) AS duration\n\t\tFROM tags t\n\t\tINNER JOIN driver_status_change d ON t.id = d.tags_id\n\t\tWHERE t.{} IS NOT NULL\n\t\tAND d.driving = true\n\t\tGROUP BY name, day\n\t\tORDER BY name, day", col("name"))),
        "avg-load" => ("readings", format!("SELECT t.{}, t.{}, t.{}, avg(d.avg_load / t.{}) AS avg_load_percentage\n\t\tFROM tags t\n\t\tINNER JOIN (\n\t\t\tSELECT tags_id, avg(current_load) AS avg_load\n\t\t\tFROM diagnostics d\n\t\t\tGROUP BY tags_id\n\t\t\t) d ON t.id = d.tags_id\n\t\tWHERE t.{} IS NOT NULL\n\t\tGROUP BY fleet, model, load_capacity", alias("fleet"), alias("model"), alias("load_capacity"), col("load_capacity"), col("name"))),
        "daily-activity" => ("readings", format!("SELECT t.{}, t.{}, y.day, sum(y.ten_mins_per_day) / 144 AS daily_activity\n\t\tFROM tags t\n\t\tINNER JOIN (\n\t\t\tSELECT time_bucket('24 hours', TIME) AS day, time_bucket('10 minutes', TIME) AS ten_minutes, tags_id, count(*) AS ten_mins_per_day\n\t\t\tFROM diagnostics\n\t\t\tGROUP BY day, ten_minutes, tags_id\n\t\t\tHAVING avg(STATUS) < 1\n\t\t\t) y ON y.tags_id = t.id\n\t\tWHERE t.{} IS NOT NULL\n\t\tGROUP BY fleet, model, y.day\n\t\tORDER BY y.day", alias("fleet"), alias("model"), col("name"))),
        _ => ("diagnostics", format!("WITH breakdown_per_truck_per_ten_minutes\n\t\tAS (\n\t\t\tSELECT time_bucket('10 minutes', TIME) AS ten_minutes, tags_id, count(STATUS = 0) / count(*) >= 0.5 AS broken_down\n\t\t\tFROM diagnostics\n\t\t\tGROUP BY ten_minutes, tags_id\n\t\t\t), breakdowns_per_truck\n\t\tAS (\n\t\t\tSELECT ten_minutes, tags_id, broken_down, lead(broken_down) OVER (\n\t\t\t\t\tPARTITION BY tags_id ORDER BY ten_minutes\n\t\t\t\t\t) AS next_broken_down\n\t\t\tFROM breakdown_per_truck_per_ten_minutes\n\t\t\t)\n\t\tSELECT t.{}, count(*)\n\t\tFROM tags t\n\t\tINNER JOIN breakdowns_per_truck b ON t.id = b.tags_id\n\t\tWHERE t.{} IS NOT NULL\n\t\tAND broken_down = false AND next_broken_down = true\n\t\tGROUP BY model", alias("model"), col("name"))),
    }
}

// ---------------------------------------------------------------------------------------------
// --format=timescaledb (reference postgresql.md §4, §6)

/// The timescaledb data layout written from the influx rows: the header (the tag schema with
/// types, the field columns, a blank line), then per row a `tags,<k=v,...>` line and a
/// `cpu,<unix-ns>,<v1>,...` line with the same values as the influx row (as the real files of
/// one dataset are: `data/cpu-timescaledb.head30.txt` vs `cpu-influx.head30.txt`).
struct TimescaleLines {
    out: Box<dyn Write>,
    partial: Vec<u8>,
    header: bool,
}

impl TimescaleLines {
    fn new(out: Box<dyn Write>) -> TimescaleLines {
        TimescaleLines {
            out,
            partial: Vec::new(),
            header: false,
        }
    }

    fn header_bytes() -> Vec<u8> {
        let tags = [
            "hostname",
            "region",
            "datacenter",
            "rack",
            "os",
            "arch",
            "team",
            "service",
            "service_version",
            "service_environment",
        ];
        format!(
            "tags,{}\ncpu,{}\n\n",
            tags.map(|t| format!("{t} string")).join(","),
            CPU_FIELDS.join(",")
        )
        .into_bytes()
    }

    /// One influx line as the two timescaledb lines; any other line is passed through.
    fn convert(line: &[u8], out: &mut Vec<u8>) {
        let text = String::from_utf8_lossy(line);
        let parsed = (|| {
            let rest = text.strip_prefix("cpu,")?;
            let (tags, rest) = rest.split_once(' ')?;
            let (fields, ts) = rest.rsplit_once(' ')?;
            let values: Option<Vec<&str>> = fields
                .split(',')
                .map(|kv| kv.split_once('=').map(|(_, v)| v.trim_end_matches('i')))
                .collect();
            Some((tags.to_string(), ts.to_string(), values?.join(",")))
        })();
        match parsed {
            Some((tags, ts, values)) => {
                out.extend_from_slice(format!("tags,{tags}\ncpu,{ts},{values}\n").as_bytes())
            }
            None => {
                out.extend_from_slice(line);
                out.push(b'\n');
            }
        }
    }
}

impl Write for TimescaleLines {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        let mut conv = Vec::with_capacity(buf.len() + buf.len() / 2 + 512);
        if !self.header {
            conv.extend_from_slice(&Self::header_bytes());
            self.header = true;
        }
        self.partial.extend_from_slice(buf);
        let mut start = 0;
        while let Some(n) = self.partial[start..].iter().position(|b| *b == b'\n') {
            Self::convert(&self.partial[start..start + n], &mut conv);
            start += n + 1;
        }
        self.partial.drain(..start);
        self.out.write_all(&conv)?;
        Ok(buf.len())
    }

    fn flush(&mut self) -> io::Result<()> {
        if !self.header {
            self.out.write_all(&Self::header_bytes())?;
            self.header = true;
        }
        self.out.flush()
    }
}

/// The TimescaleDB-only generator flags.
struct TimescaleOpts {
    use_time_bucket: bool,
    use_json: bool,
    use_tags: bool,
}

impl TimescaleOpts {
    /// The defaults come from the flag table (`--timescale-use-time-bucket` and
    /// `--timescale-use-tags` default to true, as in the real generator).
    fn from_flags(flags: &crate::gotool::Flags) -> TimescaleOpts {
        TimescaleOpts {
            use_time_bucket: flags.bool("timescale-use-time-bucket"),
            use_json: flags.bool("timescale-use-json"),
            use_tags: flags.bool("timescale-use-tags"),
        }
    }

    /// `time_bucket('<n> seconds', time)`, or its plain-PostgreSQL equivalent.
    fn bucket(&self, secs: u32) -> String {
        if self.use_time_bucket {
            format!("time_bucket('{secs} seconds', time)")
        } else {
            format!("to_timestamp(((extract(epoch from time)::int)/{secs})*{secs})")
        }
    }

    fn host_where(&self, hosts: &[String]) -> String {
        if self.use_json {
            let c: Vec<String> = hosts
                .iter()
                .map(|h| format!("tagset @> '{{\"hostname\": \"{h}\"}}'"))
                .collect();
            format!("tags_id IN (SELECT id FROM tags WHERE {})", c.join(" OR "))
        } else {
            let c: Vec<String> = hosts.iter().map(|h| format!("'{h}'")).collect();
            if self.use_tags {
                format!(
                    "tags_id IN (SELECT id FROM tags WHERE hostname IN ({}))",
                    c.join(",")
                )
            } else {
                format!("hostname IN ({})", c.join(","))
            }
        }
    }
}

/// Go's `2006-01-02 15:04:05.999999 -0700` in UTC: trailing zeros of the fraction dropped.
fn go_sql_time(ns: i128) -> String {
    let t = time::OffsetDateTime::from_unix_timestamp_nanos(ns)
        .unwrap_or(time::OffsetDateTime::UNIX_EPOCH);
    let mut frac = format!("{:06}", t.microsecond());
    while frac.ends_with('0') {
        frac.pop();
    }
    let frac = if frac.is_empty() {
        String::new()
    } else {
        format!(".{frac}")
    };
    format!(
        "{:04}-{:02}-{:02} {:02}:{:02}:{:02}{frac} +0000",
        t.year(),
        t.month() as u8,
        t.day(),
        t.hour(),
        t.minute(),
        t.second()
    )
}

/// The SQL of one query, in the real generator's text where the fixtures show it
/// (`single-groupby-*`, `lastpoint`), in its structure elsewhere.
fn timescaledb_sql(
    ctx: &QueryCtx,
    o: &TimescaleOpts,
    shape: &TypeShape,
    rng: &mut Rng,
    from: i128,
    to: i128,
) -> String {
    let metrics = &CPU_FIELDS[..shape.metrics.min(10)];
    let (s, e) = (go_sql_time(from), go_sql_time(to));
    let max_of = |ms: &[&str]| {
        ms.iter()
            .map(|m| format!("max({m}) as max_{m}"))
            .collect::<Vec<_>>()
            .join(", ")
    };
    match shape.kind {
        Kind::SingleGroupby => {
            let hosts = ctx.hosts(rng, shape.hosts);
            format!(
                "SELECT {} AS minute,\n        {}\n        FROM cpu\n        WHERE {} AND time >= '{s}' AND time < '{e}'\n        GROUP BY minute ORDER BY minute ASC",
                o.bucket(60),
                max_of(metrics),
                o.host_where(&hosts)
            )
        }
        Kind::CpuMaxAll => {
            let hosts = ctx.hosts(rng, shape.hosts);
            format!(
                "SELECT {} AS hour,\n        {}\n        FROM cpu\n        WHERE {} AND time >= '{s}' AND time < '{e}'\n        GROUP BY hour ORDER BY hour",
                o.bucket(3600),
                max_of(&CPU_FIELDS),
                o.host_where(&hosts)
            )
        }
        Kind::DoubleGroupby => {
            let means: Vec<String> = metrics.iter().map(|m| format!("mean_{m}")).collect();
            let avgs: Vec<String> = metrics
                .iter()
                .map(|m| format!("avg({m}) as mean_{m}"))
                .collect();
            // The real generator's JSON bug kept: `tags->>'hostname'` (reference §6).
            let (group, field, join) = if o.use_json {
                ("tags_id", "tags->>'hostname'", "JOIN tags ON cpu_avg.tags_id = tags.id")
            } else if o.use_tags {
                ("tags_id", "tags.hostname", "JOIN tags ON cpu_avg.tags_id = tags.id")
            } else {
                ("hostname", "hostname", "")
            };
            format!(
                "\n        WITH cpu_avg AS (\n          SELECT {} as hour, {group},\n          {}\n          FROM cpu\n          WHERE time >= '{s}' AND time < '{e}'\n          GROUP BY hour, {group}\n        )\n        SELECT hour, {field}, {}\n        FROM cpu_avg\n        {join}\n        ORDER BY hour, {field}",
                o.bucket(3600),
                avgs.join(", "),
                means.join(", ")
            )
        }
        Kind::GroupbyOrderbyLimit => format!(
            "SELECT {} AS minute, max(usage_user) FROM cpu WHERE time < '{e}' GROUP BY minute ORDER BY minute DESC LIMIT 5",
            o.bucket(60)
        ),
        Kind::HighCpu => {
            let hosts = if shape.hosts > 0 {
                format!("AND {}", o.host_where(&ctx.hosts(rng, shape.hosts)))
            } else {
                String::new()
            };
            format!("SELECT * FROM cpu WHERE usage_user > 90.0 and time >= '{s}' AND time < '{e}' {hosts}")
        }
        // With tags the tags table wins, JSON or not (reference §6).
        Kind::Lastpoint if o.use_tags => "SELECT DISTINCT ON (t.hostname) * FROM tags t INNER JOIN LATERAL(SELECT * FROM cpu c WHERE c.tags_id = t.id ORDER BY time DESC LIMIT 1) AS b ON true ORDER BY t.hostname, b.time DESC".into(),
        Kind::Lastpoint if o.use_json => "SELECT DISTINCT ON (t.tagset->>'hostname') * FROM tags t INNER JOIN LATERAL(SELECT * FROM cpu c WHERE c.tags_id = t.id ORDER BY time DESC LIMIT 1) AS b ON true ORDER BY t.tagset->>'hostname', b.time DESC".into(),
        Kind::Lastpoint => "SELECT DISTINCT ON (hostname) * FROM cpu ORDER BY hostname, time DESC".into(),
    }
}

/// `--format=timescaledb`: a gob stream of `query.TimescaleDB` (see
/// [`crate::emulators::tsbs_timescaledb::write_queries`]), labels `TimescaleDB ...`.
#[allow(clippy::too_many_arguments)]
fn timescaledb_queries(
    ctx: &QueryCtx,
    o: &TimescaleOpts,
    qtype: &str,
    shape: &TypeShape,
    label: &str,
    rng: &mut Rng,
    mut out: Box<dyn Write>,
    count: u64,
    (groups, group_id): (u64, u64),
) -> i32 {
    let _ = qtype;
    let mut queries = Vec::new();
    for i in 0..count {
        let (from, to) = if shape.window > 0 {
            let span = (ctx.end_ns - ctx.start_ns - shape.window) as u64;
            let offset = (rng.below(span / 1_000_000_000 + 1) as i128) * 1_000_000_000;
            (ctx.start_ns + offset, ctx.start_ns + offset + shape.window)
        } else {
            (0, 0)
        };
        let sql = timescaledb_sql(ctx, o, shape, rng, from, to);
        if i % groups != group_id {
            continue;
        }
        let description = match shape.kind {
            Kind::Lastpoint => label.to_string(),
            Kind::GroupbyOrderbyLimit => format!("{label}: {}", rfc3339(to)),
            _ => format!("{label}: {}", rfc3339(from)),
        };
        queries.push(crate::emulators::tsbs_timescaledb::TsQuery {
            human_label: label.to_string(),
            human_description: description,
            hypertable: "cpu".into(),
            sql_query: sql,
        });
    }
    let bytes = crate::emulators::tsbs_timescaledb::write_queries(&queries);
    if let Err(e) = out.write_all(&bytes).and_then(|_| out.flush()) {
        eprintln!("error: write: {e}");
        return 1;
    }
    eprintln!("{label}: {} points", queries.len());
    0
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn labels_match_the_real_tool() {
        let l = |t: &str, p: &str| label_of(t, &shape_of(t).unwrap(), p);
        assert_eq!(
            l("single-groupby-1-1-1", "Influx"),
            "Influx 1 cpu metric(s), random    1 hosts, random 1h0m0s by 1m"
        );
        assert_eq!(
            l("single-groupby-5-8-1", "InfluxDB 3"),
            "InfluxDB 3 5 cpu metric(s), random    8 hosts, random 1h0m0s by 1m"
        );
        assert_eq!(
            l("cpu-max-all-8", "Influx"),
            "Influx max of all CPU metrics, random    8 hosts, random 8h0m0s by 1h"
        );
        assert_eq!(
            l("double-groupby-all", "Influx"),
            "Influx mean of 10 metrics, all hosts, random 12h0m0s by 1h"
        );
        assert_eq!(
            l("high-cpu-1", "Influx"),
            "Influx CPU over threshold, 1 host(s)"
        );
        assert_eq!(l("lastpoint", "Influx"), "Influx last row per host");
        for t in QUERY_TYPES {
            assert!(shape_of(t).is_some(), "{t}");
        }
        assert!(shape_of("single-groupby-2-2-2").is_none());
    }
}

/// Go's `time.Duration.String()` (`12h0m0s`, `1m30s`, `1.5s`, `500ms`), for panic texts.
fn go_duration_string(ns: i128) -> String {
    fn frac(v: u128, unit: u128, digits: usize) -> String {
        let (i, f) = (v / unit, v % unit);
        if f == 0 {
            i.to_string()
        } else {
            let f = format!("{f:0digits$}");
            format!("{i}.{}", f.trim_end_matches('0'))
        }
    }
    if ns == 0 {
        return "0s".into();
    }
    let sign = if ns < 0 { "-" } else { "" };
    let u = ns.unsigned_abs();
    let body = if u < 1_000 {
        format!("{u}ns")
    } else if u < 1_000_000 {
        format!("{}µs", frac(u, 1_000, 3))
    } else if u < 1_000_000_000 {
        format!("{}ms", frac(u, 1_000_000, 6))
    } else {
        let (h, rest) = (u / 3_600_000_000_000, u % 3_600_000_000_000);
        let (m, rest) = (rest / 60_000_000_000, rest % 60_000_000_000);
        let s = format!("{}s", frac(rest, 1_000_000_000, 9));
        if h > 0 {
            format!("{h}h{m}m{s}")
        } else if m > 0 {
            format!("{m}m{s}")
        } else {
            s
        }
    };
    format!("{sign}{body}")
}

#[cfg(test)]
mod go_duration_tests {
    #[test]
    fn go_duration_strings() {
        let h = 3_600_000_000_000i128;
        assert_eq!(super::go_duration_string(12 * h), "12h0m0s");
        assert_eq!(super::go_duration_string(h + 1_000_000_000), "1h0m1s");
        assert_eq!(super::go_duration_string(90_000_000_000), "1m30s");
        assert_eq!(super::go_duration_string(1_500_000_000), "1.5s");
        assert_eq!(super::go_duration_string(500_000_000), "500ms");
    }
}
