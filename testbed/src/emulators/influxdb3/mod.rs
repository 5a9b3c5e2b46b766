//! Emulator of `influxdb3`, Core and Enterprise (shared/reference/protocols.md §3, §5).
//!
//! Run as `testbed emulate influxdb3 ARGS...` (the release archives hold a wrapper script that
//! execs exactly that). What it emulates, and what tsbsctl and the benchmark can rely on:
//!
//! # Environment
//! * `TESTBED_EMULATED_EDITION` = `core` | `enterprise` (required), `TESTBED_EMULATED_VERSION`
//!   = `x.y.z` (required); `TESTBED_KNOBS` = path of the knob file (optional, see below);
//!   `TESTBED_INFLUXDB3_DIR` (set by the release wrapper to its own directory): when set,
//!   `<dir>/python/lib/libpython3.so` must exist, else the loader-style error
//!   `influxdb3: error while loading shared libraries: libpython3.so: ...` and exit 127.
//! * Enterprise licence variables, honoured only as the emulated version reads them:
//!   3.11.0 and later read `INFLUXDB3_LICENSE_EMAIL`, `INFLUXDB3_LICENSE_TYPE`,
//!   `INFLUXDB3_LICENSE_FILE` and still accept the `INFLUXDB3_ENTERPRISE_LICENSE_*` names as
//!   deprecated aliases (a WARN line; the new name wins); earlier versions read only the
//!   `INFLUXDB3_ENTERPRISE_LICENSE_*` names.
//! * Flag environment fallbacks as the real clap definitions: `INFLUXDB3_OBJECT_STORE`,
//!   `INFLUXDB3_DB_DIR`, `INFLUXDB3_NODE_IDENTIFIER_PREFIX`, `INFLUXDB3_ENTERPRISE_CLUSTER_ID`,
//!   `INFLUXDB3_HTTP_BIND_ADDR`, `INFLUXDB3_START_WITHOUT_AUTH`, `INFLUXDB3_DISABLE_AUTHZ`,
//!   `INFLUXDB3_MAX_HTTP_REQUEST_SIZE`, `INFLUXDB3_WAL_FLUSH_INTERVAL`.
//!
//! # Command line (clap: unknown flags → `error: unexpected argument ...`, exit 2)
//! * `influxdb3 --version` / `-V`: stdout `influxdb3 InfluxDB 3 Core, <V>, revision <40 hex>`
//!   (`Enterprise` for Enterprise), exit 0.
//! * `influxdb3 [--num-io-threads N] serve` with (`--flag=value` or `--flag value`):
//!   `--object-store` (`file`, `s3` or `memory` emulated; required), `--data-dir` (required with
//!   `file`), the S3 options of the real `ObjectStoreConfig` (`--bucket`, `--aws-endpoint`,
//!   `--aws-allow-http`, `--aws-default-region`, `--aws-access-key-id` /
//!   `--aws-secret-access-key` or `AWS_ACCESS_KEY_ID` / `AWS_SECRET_ACCESS_KEY`): with `s3`
//!   every file below is an object of that bucket under the same key (no key prefix option, as
//!   the real server), written and read back through signed requests to a real S3 server; a
//!   missing bucket name fails as `Cannot parse object store config: ...`, and refused keys, a
//!   missing bucket or plain HTTP without `--aws-allow-http` fail the catalog load
//!   (`Serve command failed: failed to initialize catalog: object store error: ...`, exit 1),
//!   before anything listens. Enterprise on `s3` is not emulated. `--node-id` (alias `--host-id`; required), `--http-bind` (default `0.0.0.0:8181`),
//!   `--without-auth`, `--disable-authz health,ping,metrics`, `--max-http-request-size`
//!   (bytes, default 10485760; 3.11+ also `10mb`-style), `--wal-flush-interval` (default `1s`),
//!   `--gen1-duration` (`1m|5m|10m`, the snapshot file window),
//!   `--tcp-listener-file-path PATH` (the bound address is written there once listening),
//!   3.11+ `--shutdown-timeout` (default `30s`).
//!   Core: `--cluster-id` fails with clap's `invalid value ... You've incorrectly specified a
//!   cluster-id for InfluxDB 3 Core OSS.` (exit 2). Enterprise: `--cluster-id` required and
//!   different from `--node-id` (both ASCII alphanumerics and `-`), plus `--license-email`,
//!   `--license-type trial|home|commercial`, `--license-file` (email and file conflict: exit 2).
//! * Any other subcommand is refused with exit 2 (not emulated).
//!
//! # Enterprise licence (before anything listens)
//! Order: `--license-file`, the licence-file variable, `<data-dir>/<cluster-id>/commercial_license`,
//! `<data-dir>/<cluster-id>/trial_or_home_license`, `--license-email`, the e-mail variable.
//! A given licence file must exist and hold a licence this emulator wrote (a JWT-shaped
//! `header.payload.signature`, payload base64url JSON, so the e-mail never appears in clear);
//! the file is read, never modified. With an e-mail: the type (`--license-type` or variable) is
//! required (`trial` or `home`), stdout gets `Email sent. Please check your inbox to verify your
//! email address and proceed.` and `Waiting for verification...`, and the log gets
//! `INFO influxdb3_enterprise::license: requesting license email=<e-mail> license_type=<t>
//! cluster_id=<c>` (the vendor prints the address: this is what tsbsctl must redact). Nothing
//! listens while waiting; after the verification delay (knob, default 2000 ms) the licence is
//! written to `<data-dir>/<cluster-id>/trial_or_home_license`, the log says `valid license found,
//! happy data crunching`, and start-up continues. Later starts find the file and need no e-mail.
//! Without licence and e-mail: on a terminal it prompts (`Welcome to InfluxDB 3 Enterprise` /
//! `No license file was detected. Please enter your email:`); otherwise stderr gets
//! `Serve command failed: License management error: No interactive TTY detected. Cannot prompt
//! for email.` and the exit code is 1. SIGTERM while waiting kills the process (no handler yet).
//!
//! # Logs (stdout; tracing "full" format)
//! `<RFC3339 µs>Z  INFO <target>: <message> k=v ...` (level right-aligned to 5). First line
//! `INFO influxdb3::commands::serve: server starting node_id=.. version=.. product_name=..`;
//! readiness `INFO influxdb3_server: startup time: <ms>ms address=<bound addr>`; request errors
//! `ERROR influxdb3_server::http: Error while handling request error=.. method=.. path=..`;
//! shutdown `INFO influxdb3::commands::serve: shutdown complete`. Fatal start errors go to
//! stderr as `Serve command failed: ...` with exit 1 (e.g. `Failed to bind address`).
//!
//! # HTTP
//! Every response carries `cluster-uuid`; successful ones `access-control-allow-origin: *`;
//! `OPTIONS` → 204 preflight. Without `--without-auth` every path needs `Authorization:
//! Bearer|Token <knob admin_token>` (401 `{"error": "the request was not authenticated"}`;
//! malformed header 400); `--disable-authz` exempts `health`, `ping`, `metrics`.
//! * `GET /health`, `/api/v1/health` → 200 `OK`. `GET|POST /ping` → JSON `{"product_name",
//!   "version","revision","process_id"}` with `X-Influxdb-Version`, `X-Influxdb-Build`
//!   (`Core`/`Enterprise`), `Request-Id`, `X-Request-Id`. `GET /metrics` → Prometheus text as the real
//!   one: no process collector (no CPU series), memory only as jemalloc's
//!   `jemalloc_memstats_bytes{stat="resident"}` (the emulator's own resident bytes stand in).
//! * `/api/v3/configure/database`: `GET ?format=json[&show_deleted=true]` →
//!   `[{"iox::database":"_internal"},...]` (without `format`: 400, no content type,
//!   ``serde error: missing field `format` ``); `POST {"db":..}` → 200 empty, 409 `attempted to
//!   create a resource that already exists`, 400 bad name; `DELETE ?db=..[&hard_delete_at=..]`
//!   → 200, 404 unknown, 400 for `_internal` or no query. Without `hard_delete_at=now` (or a
//!   past time) the database is soft-deleted: still named, writes to it fail with 400, its data
//!   stays on disk; with it the data files are removed. Either way the name can be created
//!   again at once (a new database id).
//! * `POST /api/v3/write_lp?db=..&precision=..&accept_partial=..&no_sync=..` → 204. Durable
//!   writes (`no_sync=false`) are answered after the next WAL flush (every
//!   `--wal-flush-interval` if given, else knob `wal_flush_interval_ms`, else 1 s; set the knob
//!   low in tests); `no_sync=true` at once, but its rows become queryable only after that
//!   next flush, as on the real server. Errors: 400 `missing query parameter 'db'`, 400 JSON `line protocol parsing error`
//!   (accept_partial=false, nothing written) or `partial write of line protocol occurred`
//!   (default accept_partial=true, good lines written), 413 `max request size (N bytes)
//!   exceeded` on the decoded size, 400 for an unknown Content-Encoding (gzip/identity known),
//!   non-UTF-8 or empty body, 400 JSON for a soft-deleted database; a missing database is
//!   created. Knob-driven 429/503 with `Retry-After`.
//! * `GET|POST /api/v3/query_sql` (`db`, `q`, `format` json|jsonl|csv|pretty; Accept fallback)
//!   → rows computed from the stored data for `SELECT count(*)`, `SHOW TABLES`, `SELECT 1`, the TSBS
//!   shapes (aggregates max/min/avg/sum/count/last_value, `date_bin`, `hostname IN`, time range,
//!   `GROUP BY`, `ORDER BY`, `LIMIT`); 404 `{"error":"query error: database not found: <db>"}`.
//!   Core refuses at planning (500 with no content type and the plain-text body `External
//!   error: Query would scan N Parquet files, exceeding the file limit. ...`, where N is the
//!   limit, not the number of files, as 3.10.1 answered) a query whose table has more snapshot
//!   files meeting its time conditions than `--query-file-limit` (knob `query_file_limit`,
//!   default 432). `SELECT <columns> FROM system.parquet_files
//!   [WHERE table_name = '..']` lists the landed snapshot files (`table_name`, `path`,
//!   `size_bytes`, `row_count`, `min_time`, `max_time`).
//!
//! # On disk (`--data-dir`, or the bucket with `s3`; nothing written elsewhere; catalog prefix = node id for Core,
//! cluster id for Enterprise)
//! * `<prefix>/catalog/checkpoint` — JSON catalog (uuid, databases, tables, columns).
//! * `<node-id>/wal/<seq:011>.wal` — one file per WAL flush: magic `idb3.001`, a JSON header
//!   line, then per write batch `@op {"db_id":..,"db":..,"lines":N}` and N lines of line protocol.
//! * `<node-id>/dbs/<db id>/<table id>/<YYYY-MM-DD>/<HH-MM>/<last WAL seq:010>.parquet` —
//!   snapshot files, one per table and gen1 window (`PAR1` ... `PAR1`, gzip line protocol
//!   inside), written after `snapshot_after_wal_files` WAL files (knob, default 900 = the real
//!   600 + 300); WAL files older than the newest 300 snapshotted ones are then removed (real
//!   `--snapshotted-wal-files-to-keep`). A graceful stop only flushes the WAL buffer (no
//!   snapshot unless one is due), so a short load leaves WAL files and no Parquet. With knob
//!   `snapshot_persist_ms_per_file` the files land one by one in the background, logged as
//!   the real server does (`Buffering contents and persisting snapshotted data`, `persisting
//!   N chunks for wal number W`, `Persisting N rows ... to file P`, `Persisted parquet file:
//!   P`); from the first landed file until each window's file lands, that window's
//!   snapshotted rows are invisible to queries (real 3.10.1 `queryable_buffer.rs:358-366`:
//!   acknowledged durable rows dip from `count(*)`). A stop abandons a snapshot in flight.
//!   Start-up replays the WAL after the last snapshot (`replaying WAL files`, `completed
//!   replaying wal files time_taken=..`), `wal_replay_ms_per_mib` per MiB of it, touching and
//!   holding `wal_replay_memory_per_mib` (default 3.5) MiB of memory per MiB meanwhile (the real
//!   3.10.1 was OOM-killed replaying 291 MiB of WAL under a 1 GiB limit).
//! * Enterprise 3.11 and later, for a catalog created by that version (the upgraded storage
//!   engine, recorded as `storage_engine` in the catalog): the same layout with `.pt` WAL and
//!   data files instead of `.wal` / `.parquet`. Guess: only the `.pt` extension is documented;
//!   the paths and contents are this emulator's. Older catalogs keep the Parquet layout.
//! * `<node-id>/snapshots/<seq:020>.info.json` — which Parquet files exist, per snapshot.
//! * Enterprise: `<cluster-id>/trial_or_home_license`.
//!
//! # Knobs (`$TESTBED_KNOBS`, JSON object, read at each start; unknown keys → exit 2)
//! Flat (`{"start_delay_ms": 500}`) or, in a file shared with other stand-ins, under an
//! `"influxdb3"` section (`{"influxdb3": {...}, "tsbs_load": {...}}`; other sections ignored).
//! `version_output` (string printed by `--version` instead), `version_exit_code`;
//! `start_delay_ms` (before listening), `exit_during_start` (exit code, after an ERROR line),
//! `never_ready` (never listens; exits 0 on SIGTERM); `verification_delay_ms` (default 2000),
//! `never_verify`, `license_server_status` (e.g. 402: activation fails like an expired trial),
//! `license_clock_offset_days` (the licence clock runs ahead: 31 makes a 30-day trial expired,
//! so a start with it fails with `License management error: the license has expired`);
//! `crash_after_ms` (+ `crash_exit_code`, default 101, with a panic message), `hang_on_sigterm`,
//! `shutdown_delay_ms` (pause after SIGTERM before the final flush), `log_lines`
//! (`[{"at":"start|ready|shutdown","level":"INFO|WARN|ERROR|FATAL|PANIC","message":".."}]`,
//! `at` defaults to `ready`), `admin_token` (the one valid token when auth is on);
//! `wal_flush_interval_ms`, `snapshot_after_wal_files`, `write_reject_first` (N first writes
//! refused), `write_reject_status` (429 default, or 503), `write_retry_after` (header value);
//! `snapshot_persist_ms_per_file`, `wal_replay_ms_per_mib`, `wal_replay_memory_per_mib`;
//! `wrong_answers` (`[".."]`: a query containing the text answers its first row's first number
//! plus one), `query_delay_ms`, `count_ms_per_1000_rows` (a `count(..)` query sleeps in proportion to the
//! visible rows), `query_failures` (`[{"contains":"..","status":500,"error":".."}]`),
//! `query_file_limit` (Core).
//!
//! # Inferred, not read from a real binary (protocols.md §6)
//! The Enterprise `--version`/`/ping` wording; the licence log target and message texts other
//! than the console lines quoted above; the exact texts of: the deleted-database write error,
//! the empty-body and bad-precision errors, licence-file and node/cluster-id validation
//! errors; `show_deleted=true` adding `"deleted": bool`; the JWT contents. Not emulated: the
//! other `influxdb3` subcommands, token management (`--admin-token-file`, `create token`), the
//! v1/v2 write and query APIs, Parquet output, database/table/column limits (422).

pub mod cli;
pub mod http;
mod knobs;
mod license;
mod lp;
pub mod objects;
mod query;
mod serve;
mod store;

pub use knobs::Knobs;
pub use license::make_license;

use std::io::Write;

/// Which product is emulated.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Edition {
    Core,
    Enterprise,
}

impl Edition {
    pub fn word(self) -> &'static str {
        match self {
            Edition::Core => "Core",
            Edition::Enterprise => "Enterprise",
        }
    }
    pub fn product_name(self) -> String {
        format!("InfluxDB 3 {}", self.word())
    }
}

/// The emulated build: edition, version and a revision derived from both.
#[derive(Debug, Clone)]
pub struct Build {
    pub edition: Edition,
    pub version: String,
    pub semver: (u64, u64, u64),
    pub revision: String,
}

impl Build {
    fn from_env() -> Result<Build, String> {
        let edition = match std::env::var("TESTBED_EMULATED_EDITION").as_deref() {
            Ok("core") => Edition::Core,
            Ok("enterprise") => Edition::Enterprise,
            Ok(other) => {
                return Err(format!(
                    "TESTBED_EMULATED_EDITION={other:?} is not core|enterprise"
                ))
            }
            Err(_) => return Err("TESTBED_EMULATED_EDITION is not set".into()),
        };
        let version = std::env::var("TESTBED_EMULATED_VERSION")
            .map_err(|_| "TESTBED_EMULATED_VERSION is not set".to_string())?;
        let semver = parse_semver(&version)
            .ok_or_else(|| format!("TESTBED_EMULATED_VERSION={version:?} is not x.y.z"))?;
        let revision =
            hex_digest(&format!("influxdb3-{}-{version}", edition.word()))[..40].to_string();
        Ok(Build {
            edition,
            version,
            semver,
            revision,
        })
    }

    /// Whether the emulated version is at least `major.minor`.
    pub fn at_least(&self, major: u64, minor: u64) -> bool {
        (self.semver.0, self.semver.1) >= (major, minor)
    }

    /// `/ping`'s `revision`: the first 7 characters of the full one (`influxdb3_process/build.rs`
    /// takes 7 of `GIT_HASH`; 3.10.1 answered `"revision":"ff6872a"`).
    pub fn short_revision(&self) -> &str {
        &self.revision[..7]
    }
}

fn parse_semver(v: &str) -> Option<(u64, u64, u64)> {
    let mut it = v.split('.');
    let a = it.next()?.parse().ok()?;
    let b = it.next()?.parse().ok()?;
    let c = it.next()?.parse().ok()?;
    if it.next().is_some() {
        return None;
    }
    Some((a, b, c))
}

pub(crate) fn hex_digest(s: &str) -> String {
    use sha2::Digest;
    hex::encode(sha2::Sha256::digest(s.as_bytes()))
}

/// Entry point: `args` exclude the tool name.
pub fn main(args: Vec<String>) -> i32 {
    let build = match Build::from_env() {
        Ok(b) => b,
        Err(e) => {
            eprintln!("testbed: influxdb3 emulator: {e}");
            return 70;
        }
    };
    // The real binary loads libpython from `$ORIGIN/python/lib`: without it, not even
    // `--version` runs. The release wrapper tells us where it lives.
    if let Some(dir) = std::env::var_os("TESTBED_INFLUXDB3_DIR") {
        let lib = std::path::Path::new(&dir).join("python/lib/libpython3.so");
        if !lib.is_file() {
            eprintln!("influxdb3: error while loading shared libraries: libpython3.so: cannot open shared object file: No such file or directory");
            return 127;
        }
    }
    let knobs = match Knobs::load() {
        Ok(k) => k,
        Err(e) => {
            eprintln!("testbed: influxdb3 emulator: {e}");
            // As every stand-in's bad knob file (`gotool::load_knobs_with`).
            return 2;
        }
    };
    cli::run(args, build, knobs)
}

/// Log lines in the tracing "full" format, on stdout, one write per line.
pub(crate) fn log(level: &str, target: &str, message: &str, fields: &[(&str, String)]) {
    let mut line = format!("{} {level:>5} {target}: {message}", timestamp());
    for (k, v) in fields {
        line.push(' ');
        line.push_str(k);
        line.push('=');
        if v.contains(' ') || v.is_empty() {
            line.push_str(&format!("{v:?}"));
        } else {
            line.push_str(v);
        }
    }
    line.push('\n');
    let mut out = std::io::stdout().lock();
    let _ = out.write_all(line.as_bytes());
    let _ = out.flush();
}

/// Prints a plain line on stdout (what the real binary prints with `println!`).
pub(crate) fn say(text: &str) {
    let mut out = std::io::stdout().lock();
    let _ = writeln!(out, "{text}");
    let _ = out.flush();
}

pub(crate) fn timestamp() -> String {
    let now = time::OffsetDateTime::now_utc();
    let fmt = time::macros::format_description!(
        "[year]-[month]-[day]T[hour]:[minute]:[second].[subsecond digits:6]Z"
    );
    now.format(&fmt).unwrap_or_default()
}

/// A random-enough UUID string (v4 or v7 layout) without a uuid dependency.
pub(crate) fn uuid(version: u8) -> String {
    use sha2::Digest;
    use std::sync::atomic::{AtomicU64, Ordering};
    static COUNTER: AtomicU64 = AtomicU64::new(0);
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap_or_default()
        .as_nanos();
    let seed = format!(
        "{nanos}-{}-{}",
        std::process::id(),
        COUNTER.fetch_add(1, Ordering::Relaxed)
    );
    let mut b: [u8; 16] = sha2::Sha256::digest(seed.as_bytes())[..16]
        .try_into()
        .unwrap();
    if version == 7 {
        let ms = (nanos / 1_000_000) as u64;
        b[..6].copy_from_slice(&ms.to_be_bytes()[2..]);
    }
    b[6] = (b[6] & 0x0f) | (version << 4);
    b[8] = (b[8] & 0x3f) | 0x80;
    let h = hex::encode(b);
    format!(
        "{}-{}-{}-{}-{}",
        &h[..8],
        &h[8..12],
        &h[12..16],
        &h[16..20],
        &h[20..]
    )
}

/// base64url without padding (JWT segments).
pub(crate) fn b64url(data: &[u8]) -> String {
    const A: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";
    let mut out = String::new();
    for chunk in data.chunks(3) {
        let n = chunk
            .iter()
            .enumerate()
            .fold(0u32, |acc, (i, &c)| acc | (c as u32) << (16 - 8 * i));
        let chars = chunk.len() + 1;
        for i in 0..chars {
            out.push(A[((n >> (18 - 6 * i)) & 63) as usize] as char);
        }
    }
    out
}

pub(crate) fn b64url_decode(s: &str) -> Option<Vec<u8>> {
    let val = |c: u8| -> Option<u32> {
        Some(match c {
            b'A'..=b'Z' => c - b'A',
            b'a'..=b'z' => c - b'a' + 26,
            b'0'..=b'9' => c - b'0' + 52,
            b'-' => 62,
            b'_' => 63,
            _ => return None,
        } as u32)
    };
    let bytes = s.as_bytes();
    let mut out = Vec::new();
    for chunk in bytes.chunks(4) {
        if chunk.len() == 1 {
            return None;
        }
        let mut n = 0u32;
        for (i, &c) in chunk.iter().enumerate() {
            n |= val(c)? << (18 - 6 * i);
        }
        for i in 0..chunk.len() - 1 {
            out.push((n >> (16 - 8 * i)) as u8);
        }
    }
    Some(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn b64_round_trip() {
        for s in ["", "a", "ab", "abc", "abcd", "{\"email\":\"x@y.z\"}"] {
            let e = b64url(s.as_bytes());
            assert!(!e.contains('='));
            assert_eq!(b64url_decode(&e).unwrap(), s.as_bytes());
        }
        assert_eq!(b64url(b"abc"), "YWJj");
        assert_eq!(b64url(b"ab"), "YWI");
    }

    #[test]
    fn uuid_shape() {
        let u = uuid(7);
        assert_eq!(u.len(), 36);
        assert_eq!(&u[14..15], "7");
        assert_ne!(uuid(4), uuid(4));
    }
}
