//! Misbehaviour knobs: a JSON object in the file named by `$TESTBED_KNOBS`, read once per
//! process start (so a test changes behaviour between starts by rewriting the file). The knobs
//! are the object's keys, or those of its `"influxdb3"` section when it has one (a file shared
//! with other stand-ins, whose sections are ignored). A missing variable or file means "behave
//! normally"; an unreadable file, a file that is not JSON or an unknown key makes the emulator fail
//! loudly (exit 2, as every stand-in) so a typo in a test never silently tests nothing.

use serde::Deserialize;

/// Every key is optional. See the module documentation of `influxdb3` for the meaning of each.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct Knobs {
    // --version
    pub version_output: Option<String>,
    pub version_exit_code: Option<i32>,

    // start-up
    pub start_delay_ms: u64,
    pub exit_during_start: Option<i32>,
    pub never_ready: bool,

    // Enterprise activation
    pub verification_delay_ms: Option<u64>,
    pub never_verify: bool,
    pub license_server_status: Option<u16>,
    /// Days the licence clock runs ahead: `31` makes a fresh trial expired.
    pub license_clock_offset_days: Option<u64>,

    // serving
    pub crash_after_ms: Option<u64>,
    pub crash_exit_code: Option<i32>,
    pub hang_on_sigterm: bool,
    pub shutdown_delay_ms: u64,
    pub log_lines: Vec<LogInjection>,
    pub admin_token: Option<String>,

    // writes
    pub wal_flush_interval_ms: Option<u64>,
    pub snapshot_after_wal_files: Option<u64>,
    /// Each file of a snapshot takes this long to persist, in the background; meanwhile the
    /// snapshot's rows not yet in a landed file are invisible to queries (the real dip).
    pub snapshot_persist_ms_per_file: u64,
    /// Start-up replays the WAL at this pace per MiB of WAL files (the real `startup time`
    /// grows with the WAL: 92.6 s for 305 MB in a dev build).
    pub wal_replay_ms_per_mib: u64,
    /// MiB of memory the start-up touches and holds while it replays, per MiB of WAL files
    /// (default 3.5): the real 3.10.1 rebuilds its in-memory buffer from the WAL and was
    /// OOM-killed under a 1 GiB cgroup limit replaying 291 MiB of WAL.
    pub wal_replay_memory_per_mib: Option<f64>,
    pub write_reject_first: u64,
    pub write_reject_status: Option<u16>,
    pub write_retry_after: Option<String>,

    // queries
    pub query_delay_ms: u64,
    /// A `count(...)` query sleeps this long per 1000 rows it reads.
    pub count_ms_per_1000_rows: u64,
    /// Core's `--query-file-limit` (default 432; Enterprise has none).
    pub query_file_limit: Option<usize>,
    pub query_failures: Vec<QueryFailure>,
    /// A query whose SQL contains one of these texts (case-insensitive) answers `format=json`
    /// with the first number of its first row one more than the data says: a wrong answer
    /// for the answer check to catch.
    pub wrong_answers: Vec<String>,
}

/// A log line injected at a point of the life cycle.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LogInjection {
    /// `start` (before the licence/catalog work), `ready` (right after `startup time`),
    /// `shutdown` (after the shutdown signal).
    #[serde(default = "default_at")]
    pub at: String,
    /// `INFO`, `WARN`, `ERROR`, `FATAL` (Rust runtime `fatal runtime error: ...` on stderr),
    /// `PANIC` (a thread panic: the panic message on stderr plus the tracing ERROR line real
    /// servers emit through their panic hook).
    pub level: String,
    pub message: String,
}

fn default_at() -> String {
    "ready".into()
}

/// A query answered with an error instead of rows.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct QueryFailure {
    /// Case-insensitive substring of the SQL text; the first matching entry applies.
    pub contains: String,
    /// HTTP status (default 500).
    #[serde(default)]
    pub status: Option<u16>,
    /// The `error` text (default: a DataFusion "Resources exhausted" message, as Core prints
    /// when a query runs out of its memory pool).
    #[serde(default)]
    pub error: Option<String>,
    /// The memory the query needs: it fails only when that is more than the server's query
    /// pool (`--exec-mem-pool-bytes`), and then as a real 3.10.1 did: the answer starts (200)
    /// and is cut short mid-body, the server logs `Error serving connection: ...
    /// ResourcesExhausted(...)` and counts it in `query_datafusion_query_execution_ooms_total`;
    /// its runner panics "unexpected EOF". Without it the entry always fails, with `status`.
    #[serde(default)]
    pub needs_bytes: Option<u64>,
}

impl Knobs {
    /// Reads `$TESTBED_KNOBS`. `Err` carries the message to print.
    pub fn load() -> Result<Knobs, String> {
        crate::gotool::load_knobs_with(|all| {
            let serde_json::Value::Object(mut map) = all else {
                return Err("not a JSON object".into());
            };
            // A knob file shared with other stand-ins: our own `"influxdb3"` section wins;
            // other tools' sections (object values under names that are not knobs) are not ours.
            Ok(Some(match map.remove("influxdb3") {
                Some(section @ serde_json::Value::Object(_)) => section,
                Some(_) => return Err("\"influxdb3\" must be an object".into()),
                None => {
                    map.retain(|_, v| !v.is_object());
                    serde_json::Value::Object(map)
                }
            }))
        })
    }
}
