//! The knob file (`$TESTBED_KNOBS`, JSON, read once per process start). Every key is
//! optional; unknown keys are refused so a typo in a test cannot silently do nothing. See the
//! module documentation of `emulators::greptime` for what each key does.

use serde::Deserialize;

#[derive(Debug, Default, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Knobs {
    /// `--version`/`-V` report this version instead of the emulated one.
    pub wrong_version: Option<String>,
    /// `--version`/`-V` print their output, then exit with this code.
    pub version_exit_code: Option<i32>,
    /// Milliseconds between the first log lines and binding the listeners.
    pub start_delay_ms: Option<u64>,
    /// Exit with this code during startup (after `start_delay_ms`, before binding HTTP).
    pub exit_during_start: Option<i32>,
    /// `"503"`: listeners are bound but every HTTP request gets 503;
    /// `"no_answer"`: requests are accepted and never answered.
    pub never_ready: Option<String>,
    /// Crash (abrupt exit, nothing persisted beyond what is on disk) after answering this many
    /// HTTP requests (every path counts, readiness probes too).
    pub crash_after_requests: Option<u64>,
    /// Crash this many milliseconds after the HTTP server is bound.
    pub crash_after_ms: Option<u64>,
    /// Exit code of a crash (default 101). With `crash_signal` = true: abort (SIGABRT) instead.
    pub crash_exit_code: Option<i32>,
    pub crash_signal: Option<bool>,
    /// SIGTERM/SIGINT are logged, then ignored: the process keeps running until SIGKILL.
    pub ignore_sigterm: Option<bool>,
    /// Extra log lines printed once the HTTP server is bound.
    pub inject_logs: Option<Vec<InjectedLog>>,
    /// Milliseconds added to every SELECT / EXPLAIN statement, before `query_delay_ms`: the
    /// time every query costs a server doing real work (latencies that the scheduling noise
    /// of a busy machine is a small part of).
    pub query_base_delay_ms: Option<u64>,
    /// Milliseconds added to every SELECT / EXPLAIN statement (only to statements containing
    /// `query_delay_contains` when that is set: one query shape slower, as a planner
    /// regression makes one type slower on the real server).
    pub query_delay_ms: Option<u64>,
    pub query_delay_contains: Option<String>,
    /// Queries containing one of these texts (case-insensitive) answer wrongly: the first
    /// number of the first row plus one (a database that is fast because it is wrong).
    #[serde(default)]
    pub wrong_answers: Vec<String>,
    /// Up to this many milliseconds more, drawn anew for each statement (uniform): a type
    /// whose queries' latencies spread widely, as the real server's do when the random hosts
    /// and windows of one type hit very different amounts of data.
    pub query_jitter_ms: Option<u64>,
    /// MiB a SELECT really allocates and touches while it runs (the real server's memory
    /// for a heavy aggregation), so a memory limit can OOM-kill the process as it does the
    /// real one; only statements containing `query_memory_contains` when that is set.
    pub query_memory_mib: Option<u64>,
    pub query_memory_contains: Option<String>,
    /// SQL statements that fail: first rule whose `contains` is a case-insensitive substring
    /// of the statement wins.
    pub fail_sql: Option<Vec<FailSql>>,
    /// Write requests fail (500 `{"error":..}`) once this many rows have been accepted by
    /// this process.
    pub fail_writes_after_rows: Option<u64>,
    /// Once this many rows have been accepted, writes answer 500 with an error that contains
    /// "timeout" (the GreptimeDB loader then backs off and retries the same batch, forever).
    pub write_timeouts_after_rows: Option<u64>,
    /// How many such timeout answers before writes are accepted again (default: forever).
    pub write_timeouts: Option<u64>,
    /// The first N rows written to this process are answered 204 but not stored.
    pub drop_rows: Option<u64>,
    /// Milliseconds a compaction job takes per MiB of input SST per output window (SWCS
    /// re-reads the whole input for every window); default 5. `ADMIN compact_table` answers
    /// only after its job (queued behind a running one).
    pub compaction_ms_per_mib: Option<f64>,
    /// Milliseconds of startup per MiB of unflushed WAL replayed before HTTP is bound
    /// (default 20).
    pub wal_replay_ms_per_mib: Option<f64>,
    /// Memtable (unflushed WAL) bytes per region that trigger an automatic flush
    /// (default 64 MiB).
    pub auto_flush_bytes: Option<u64>,
    /// TWCS picks a window of non-overlapping files from this many files on (the real table
    /// option `compaction.twcs.trigger_file_num`, default 4).
    pub twcs_trigger_file_num: Option<usize>,
    /// A fully flushed region WAL file at least this large is purged (default 1 GiB, the real
    /// `wal.purge_threshold`).
    pub wal_purge_threshold_bytes: Option<u64>,
    /// Once bound, a child process burns a CPU until the server exits (a server whose work is
    /// done by child processes, as PostgreSQL's backends under the postmaster).
    pub busy_child: Option<bool>,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct InjectedLog {
    /// `INFO`, `WARN`, `ERROR`, or `PANIC` (a Rust panic message on stderr; the process
    /// keeps running, as a panic in a tokio worker does).
    pub level: String,
    pub message: String,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FailSql {
    pub contains: String,
    /// GreptimeDB status code (default 1003 Internal → HTTP 500); the HTTP status follows the
    /// real mapping.
    pub code: Option<u32>,
    pub error: Option<String>,
}

impl Knobs {
    /// Reads `$TESTBED_KNOBS`. A missing variable or file means no knobs; a malformed file is
    /// an error (exit 2 at the caller).
    pub fn load() -> Result<Knobs, String> {
        // The whole file is ours (one knob file per server release).
        let knobs: Knobs = crate::gotool::load_knobs(None)?;
        let path = std::env::var_os("TESTBED_KNOBS").unwrap_or_default();
        if let Some(n) = &knobs.never_ready {
            if n != "503" && n != "no_answer" {
                return Err(format!(
                    "bad knob file {}: never_ready must be \"503\" or \"no_answer\"",
                    path.to_string_lossy()
                ));
            }
        }
        for l in knobs.inject_logs.iter().flatten() {
            if !["INFO", "WARN", "ERROR", "PANIC"].contains(&l.level.as_str()) {
                return Err(format!(
                    "bad knob file {}: inject_logs level must be INFO, WARN, ERROR or PANIC",
                    path.to_string_lossy()
                ));
            }
        }
        Ok(knobs)
    }
}
