//! Emulator of the `greptime` binary (GreptimeDB standalone), faithful to
//! `shared/reference/protocols.md` §2 and the checklist of §5. The emulated version comes from
//! `TESTBED_EMULATED_VERSION` (`1.2.0`, `v1.2.0`, `1.2.0-beta.2`); knobs from `$TESTBED_KNOBS`.
//!
//! # Command line
//!
//! * `greptime --version` → stdout `<name> ⏎branch: ⏎commit: <40 hex>⏎clean: true⏎version: <V>`
//!   (`<name>` = `greptime` before 1.0.0, `GreptimeDB` from 1.0.0; the first line ends in a
//!   space); `greptime -V` → `<name> <V>`. Exit 0.
//! * `greptime [--log-dir DIR] [--log-level LEVEL] standalone start [OPTIONS]` (the global
//!   options go before or after the subcommand), OPTIONS:
//!   `--http-addr HOST:PORT`, `--grpc-bind-addr HOST:PORT` (aliases `--rpc-bind-addr`,
//!   `--rpc-addr`), `--mysql-addr HOST:PORT`, `--postgres-addr HOST:PORT`,
//!   `-i/--influxdb-enable`, `-c/--config-file FILE`, `--data-home DIR`,
//!   `--env-prefix PREFIX` (default `GREPTIMEDB_STANDALONE`).
//!   `--user-provider static_user_provider:cmd:U=P[,U=P]` or `static_user_provider:file:PATH`
//!   turns on HTTP authentication as the real server does (`auth.rs`: 401 with the real error
//!   body). `--tls-mode/--tls-cert-path/--tls-key-path/--tls-watch` exist in the real binary
//!   but are not emulated: refused with exit 2. Unknown flags: clap's error, exit 2.
//! * Precedence: command line > config file > `<PREFIX>__SECTION__KEY` variables > defaults.
//!   Defaults: HTTP 127.0.0.1:4000, gRPC :4001, MySQL :4002, PostgreSQL :4003 (all bound, so
//!   collisions surface), data home `./greptimedb_data` (`/tmp/greptimedb/` before 0.10),
//!   WAL `<data_home>/wal`, logs `<data_home>/logs`, body limit 64MB.
//!
//! # Config file keys (anything else → `error: invalid config file ...: unknown key`, exit 2)
//!
//! ```toml
//! default_column_prefix = "greptime"
//! enable_telemetry = true (default; writes `<data_home>/.greptimedb-telemetry-uuid`)
//! [http]      addr = "127.0.0.1:4000"   timeout = "30s"   body_limit = "64MB"
//!             enable_api_server = false (only false; 0.10+)   api_server_addr = "..." (0.10+)
//! [influxdb]  enable = true
//! [storage]   type = "File" | "S3"   data_home = "/path/data"
//!             (S3:) bucket, root, endpoint, region (default us-east-1), access_key_id,
//!             secret_access_key: the keys also from `<PREFIX>__STORAGE__ACCESS_KEY_ID` and
//!             `<PREFIX>__STORAGE__SECRET_ACCESS_KEY`; no bucket, endpoint or key → exit 2
//! [[region_engine]] [region_engine.mito]  enable_write_cache = true  write_cache_path = "/p"
//!             write_cache_size = "5GiB"   global_write_buffer_size, ..._reject_size,
//!             sst_meta_cache_size, vector_cache_size, page_cache_size,
//!             selector_result_cache_size, range_result_cache_size (sizes)
//!             [region_engine.mito.index] metadata_cache_size, content_cache_size,
//!             result_cache_size (sizes)
//!             [region_engine.mito.inverted_index] (also fulltext_index, bloom_filter_index)
//!             mem_threshold_on_create = "auto" | "unlimited" | size
//!             ([region_engine.file] may follow, empty; listing engines replaces the default
//!             list of mito and file, as the real layered config does)
//! [logging]   dir = "/path/logs" ("" = no log files)   level = "info"
//! [wal]       dir = "/path/wal"   provider = "raft_engine" (only)
//! [grpc]      bind_addr = "127.0.0.1:4001"   (from 0.12; `addr` before 0.12)
//! [mysql]     enable = true   addr = "127.0.0.1:4002"
//! [postgres]  enable = true   addr = "127.0.0.1:4003"
//! ```
//! `http.timeout` is validated and logged, not enforced; `logging.level` (or `--log-level`)
//! `error`/`warn` filters the log lines, anything else prints all.
//! `default_column_prefix` is accepted (the time index is always `greptime_timestamp`).
//!
//! # Knob file (`$TESTBED_KNOBS`, JSON object, read at every start; unknown keys → exit 2)
//!
//! | key | effect |
//! |---|---|
//! | `wrong_version` | `--version` and `-V` report this version (must parse as one); behaviour stays that of the emulated version |
//! | `version_exit_code` | `--version`/`-V` exit with this code after printing |
//! | `start_delay_ms` | sleep before opening the data home and binding listeners |
//! | `exit_during_start` | exit with this code during startup (after the delay, before binding) |
//! | `never_ready` | `"503"`: bound, every request → 503; `"no_answer"`: bound, requests never answered |
//! | `crash_after_requests` | abrupt exit after answering the N-th HTTP request (any path) |
//! | `crash_after_ms` | abrupt exit N ms after binding |
//! | `crash_exit_code` | exit code of a crash (default 101); `crash_signal: true` aborts (SIGABRT) instead |
//! | `ignore_sigterm` | SIGTERM/SIGINT are logged, then ignored (only SIGKILL ends it) |
//! | `inject_logs` | `[{"level":"WARN"\|"ERROR"\|"INFO"\|"PANIC","message":".."}]` printed after binding (PANIC = a Rust panic message on stderr; the process keeps running) |
//! | `wrong_answers` | `[".."]`: a SELECT containing one of the texts (case-insensitive) answers its first row's first number plus one |
//! | `query_base_delay_ms` | added to every SELECT/EXPLAIN statement, before `query_delay_ms` |
//! | `query_delay_ms`, `query_delay_contains` | added to every SELECT/EXPLAIN statement (containing the string, case-insensitive, when set) |
//! | `query_jitter_ms` | up to that many ms more per such statement, drawn anew each time (noisy latencies) |
//! | `query_memory_mib`, `query_memory_contains` | a SELECT (containing the string, when set) allocates and touches that many MiB while it runs: under a cgroup memory limit the kernel OOM-kills the emulator as it does the real server on a heavy query |
//! | `fail_sql` | `[{"contains":"compact_table","code":1003,"error":"..."}]`: a statement containing the text (case-insensitive) fails with that code (default 1003 → HTTP 500) and message |
//! | `fail_writes_after_rows` | influx writes answer 500 `{"error":..}` once N rows were accepted by this process |
//! | `write_timeouts_after_rows` | once N rows were accepted, influx writes answer 500 `{"error":"Failed to write to region: Request timeout (testbed knob ...)"}` (the wording is a guess; what matters is the word `timeout`, which makes the real GreptimeDB loader retry the batch forever) |
//! | `write_timeouts` | how many of those timeout answers before writes are accepted again (default: forever) |
//! | `drop_rows` | the first N rows written are answered 204 but not stored (row-count shortfall) |
//! | `compaction_ms_per_mib` | a compaction job takes N ms per MiB of input per output window (default 5); the statement waits for it |
//! | `wal_replay_ms_per_mib` | startup replays unflushed WAL for N ms per MiB before HTTP is bound (default 20) |
//! | `auto_flush_bytes` | unflushed WAL bytes per region that trigger a flush (default 64 MiB) |
//! | `twcs_trigger_file_num` | TWCS picks a window of non-overlapping files from N files on (the real table option `compaction.twcs.trigger_file_num`, default 4) |
//! | `wal_purge_threshold_bytes` | a fully flushed region WAL this large is truncated (default 1 GiB) |
//! | `busy_child` | `true`: once bound, a child process (`sh`, in the server's process group, killed when the server dies) burns a CPU until the server exits |
//!
//! # HTTP
//!
//! * `/health`, `/ready`, `/v1/health` (GET/POST) → 200 `{}` with `access-control-allow-origin: *`;
//!   `/status` → JSON with `version`; `/metrics` → `greptime_app_version{..,version="V"} 1`,
//!   `process_cpu_seconds_total` and `process_resident_memory_bytes` (the emulator's own, from
//!   `/proc/self`, as the real server's process collector serves its own), and
//!   `greptime_mito_inflight_compaction_count` once a compaction has run (1 while one runs).
//! * `/config` (GET) → the options in force as TOML, as the real `to_toml` writes them: the
//!   HTTP address, every region engine, and the mito engine's write buffer and caches sized
//!   from the memory the real server sees (`config::total_mem_bytes`: the host's, also in a
//!   cgroup of its own) unless the config file sets them.
//! * `/v1/sql` (GET, or POST with `Content-Type: application/x-www-form-urlencoded`, else 415):
//!   `sql` and `db` from query or form (query wins; `db` default `public`, `greptime-<db>` form
//!   accepted; unknown → 400 `{"code":4004,"error":"Database not found: x",..}`); `format`
//!   other than `greptimedb_v1` → 400 code 1001. Success:
//!   `{"output":[{"records":{"schema":{"column_schemas":[{"name":..,"data_type":..}]},"rows":[..],"total_rows":N}}],"execution_time_ms":N}`
//!   or `{"output":[{"affectedrows":N}],"execution_time_ms":N}`, headers `x-greptime-format`,
//!   `x-greptime-execution-time`. Errors: `{"code":C,"error":"..","execution_time_ms":N}` with
//!   headers `x-greptime-err-code`/`-msg`, HTTP status mapped as §2.4 (1001/1004/2000/3000/
//!   4001/4004 → 400, 1003 → 500, ...). `;`-separated statements → several outputs.
//! * `/v1/influxdb/write?db=&precision=` and `/v1/influxdb/api/v2/write?bucket=&precision=`
//!   (POST; 404 when influxdb is disabled): 204 empty body; precision n/ns/u/us/ms/s/m/h
//!   (other → 400); `Content-Encoding: gzip` accepted; other parameters (`consistency`, `u`,
//!   `p`) ignored; unknown database → 400 `{"error":"Failed to find schema, schema info: x"}`;
//!   malformed line → 400 `{"error":"Failed to parse InfluxDB line protocol: .."}`; body over
//!   `http.body_limit` → 413 `Failed to buffer the request body: length limit exceeded`.
//!   Tables are auto-created (tags → String, `i` → Int64, `u` → UInt64, quoted → String,
//!   bool → Boolean, other → Float64; time index `greptime_timestamp`); new columns are added;
//!   a type change → 400. Rows are deduplicated on (series, timestamp) like the real engine.
//! * Anything else → 404 (wrong method on a known path → 405).
//!
//! # SQL answered (keywords case-insensitive; trailing `;` fine)
//!
//! * `SHOW DATABASES` (sorted; a fresh instance has `greptime_private`, `information_schema`,
//!   `public`), `SHOW TABLES [FROM db]` (`public` also lists `numbers`).
//! * `CREATE DATABASE [IF NOT EXISTS] x` → affectedrows 1 (0 if it existed with IF NOT EXISTS);
//!   existing → 400 code 1004 `Schema x already exists`. `DROP DATABASE [IF EXISTS] x` →
//!   affectedrows 0; missing → 400 code 4004; `public` and system databases → 400 code 1004.
//! * `CREATE TABLE [IF NOT EXISTS] t (…) [PARTITION ON COLUMNS (c) (rules)] [ENGINE=mito]
//!   [WITH(…)]` (`ddl.rs`: STRING tags as the primary key, BIGINT/BIGINT UNSIGNED/DOUBLE/
//!   STRING/BOOLEAN fields, a TIMESTAMP(9) time index; other types → 1001; existing → 400
//!   code 4000). Rules (`partition.rs`): `= != < <= > >= AND OR` on string literals, checked
//!   as the real checker (`Checkpoint `c=v` is not covered` / `is overlapped`, code 1004); one
//!   region per rule (region id = table id << 32 | rule index, directory
//!   `<table_id>_<n:010>`, WAL per region); a row goes to the first rule it holds, else to
//!   region 0 (the real default region). Flush, compaction (one job and one log line per
//!   region), counts and scans cover every region. `SHOW CREATE TABLE t` prints the real
//!   layout (an auto-created table: `WITH('comment' = 'Created on insertion', merge_mode = 'last_non_null')`, as the real InfluxDB write path creates it).
//! * `ALTER TABLE t ADD [COLUMN] [IF NOT EXISTS] c <type> [NULL] [PRIMARY KEY][, ADD ...]`
//!   (`ddl.rs`: the `CREATE TABLE` types; `PRIMARY KEY` on STRING adds a tag) → affectedrows
//!   0; the columns go at the end of the table, nullable. An existing column → 400 code 4003
//!   `Column c already exists in table t` (none with IF NOT EXISTS); `NOT NULL` → 400 code
//!   1004 `Invalid alter table(t) request: no default value for column c`; missing table → 400
//!   code 4001 `Table not found: greptime.<db>.<t>`; any other alteration → 1001.
//! * `SELECT count(*) FROM t` (exact, deduplicated row count; column `count(*)`, Int64),
//!   `SELECT 1` (column `Int64(1)`), `DESC [TABLE] t`.
//! * `ADMIN flush_table('t')` / `ADMIN compact_table('t'[, 'regular'|'twcs'|'swcs'|'strict_window'[, 'opts']])`
//!   (`'db.t'` accepted) → one column named as the server prints the statement (`ADMIN`, the
//!   function as written, the arguments joined by `, `), UInt64, rows `[[0]]`.
//!   Options: before 1.0.0-beta.1 a bare number of seconds (swcs), `'window=7200'` → 400 code
//!   1004 `Compact window is expected to be a valid number, provided: window=7200`; from
//!   1.0.0-beta.1 also `window=`/`window_seconds=`/`parallelism=`/`start_time=`+`end_time=`
//!   (unknown key → `Unknown parameter: k`, malformed → `Invalid key-value pair: p`).
//!   Synchronous, as the real server: the answer comes after the merge and the manifest update
//!   (see `compaction.rs`: one job at a time, queued behind the automatic TWCS that every flush
//!   schedules, time proportional to the bytes rewritten). A merge logs
//!   `INFO mito2::compaction::task: Compacted SST files, region_id: <id>(<table_id>, 0), input: [..], output: [..], window: Some(7200), waiter_num: 1, merge_time: ..s`
//!   (`waiter_num: 0` for automatic ones); no plan (TWCS with nothing to merge) answers 0 and
//!   logs no completion line (there is no "No files to compact" line). Unknown compaction types
//!   are regular TWCS (no error); `window=` with TWCS → 500 code 1002 `Unknown parameter: window`.
//!   Flush logs
//!   `INFO mito2::flush: Successfully flushed memtables, region: .., reason: Manual, files: [..], cost: ..s`.
//!   Missing table → 400 code 4001 `Failed to plan SQL: Table not found: greptime.<db>.<t>`.
//! * `SELECT <cols|*|sum(c)|max(c)|min(c)|count(*)> FROM information_schema.<t> [WHERE c = v
//!   [AND c IN (..)]] [ORDER BY c [ASC|DESC]]` for `t` ∈ `tables` (table_catalog,
//!   table_schema, table_name, table_type, table_id, engine — a subset of the real columns),
//!   `schemata`, `build_info`, `cluster_info` (one `STANDALONE` peer, id 0, empty address, this process's start time), `region_peers` (every region on peer 0, no address, leader,
//!   `ALIVE`), `partitions` (the real v1.0.2's 26 columns: partition_name `p<n>`, the partition columns
//!   in partition_expression, the region's rule in partition_description as the real
//!   `PartitionExpr` prints it, greptime_partition_id = region id, the other MySQL columns null), and `region_statistics` (0.10+, the version's documented
//!   columns: region_id, table_id, region_number, region_rows, [written_bytes_since_open 1.0+,
//!   query_cpu_time_millis/query_scanned_bytes 1.2+], disk_size, memtable_size (unflushed WAL
//!   bytes), manifest_size, sst_size, [sst_num 1.0+], index_size, engine, region_role). So SST
//!   count/size of a table: `SELECT table_id FROM information_schema.tables WHERE
//!   table_schema = 'benchmark' AND table_name = 'cpu'`, then `SELECT sst_num, sst_size,
//!   region_rows FROM information_schema.region_statistics WHERE table_id = <id>` (`sst_num`
//!   only from 1.0; count files on disk before). Before 0.10: 400 code 4001.
//!   `ssts_manifest` (1.0.0-beta.1+, the real 22 columns: the files the manifests list, with
//!   `file_path` relative to the data home and `num_rows`) and `ssts_storage` (file_path,
//!   file_size and last_modified_ms null as for local files on v1.0.2, node_id: every
//!   `*.parquet` and `index/*.puffin` in the region directories, listed or not).
//! * `EXPLAIN [ANALYZE] [VERBOSE] SELECT ...` → `stage` (UInt32), `node` (UInt32), `plan`
//!   (String) rows with metrics (ANALYZE), or `plan_type`/`plan` (plain EXPLAIN).
//! * Any other `SELECT ... FROM t ...` (the TSBS shapes): tables must exist (4001), compared
//!   identifiers (`x = ..`, `x > ..`) must be columns (3000 `No field named x`); answered from
//!   the stored rows (SSTs and unflushed WAL, deduplicated) by the testbed's shared evaluator
//!   ([`crate::sqleval`]) as the real server answers the real TSBS SQL
//!   (`databases/greptime/devops.go`): DataFusion names (`max(cpu.usage_user)`,
//!   `date_trunc(Utf8("minute"),cpu.greptime_timestamp)`,
//!   `last_value(cpu.hostname) ORDER BY [cpu.greptime_timestamp ASC NULLS LAST]`), types from
//!   the catalog (`max` of an Int64 is Int64, `avg` Float64, buckets TimestampNanosecond, sent
//!   as integer nanoseconds), and no row order without `ORDER BY` (a hash aggregate's). A shape
//!   the evaluator does not know is refused (400 code 1001), never answered with made-up rows.
//! * Anything else: other known statements → 400 code 1001 (not emulated); unknown → 400 code
//!   2000 (syntax error).
//!
//! # On-disk layout (all relative, so a copied data dir works)
//!
//! ```text
//! <data_home>/metadata/0000000000000001.raftlog     catalog: databases, tables, columns, table ids
//!                                                   (≥1024); the real metadata store is raft-engine,
//!                                                   the content here is JSON (a stand-in)
//! <data_home>/metadata/LOCK                         flock: a second instance on the data home fails
//! <wal_dir = data_home/wal>/<region_id:020>.raftlog WAL: normalised lines appended per write
//! <wal_dir>/LOCK
//! <data_home>/data/greptime/<db>/<table_id>/<table_id>_<region_number:010>/
//!     manifest/<version:020>.json                   region manifest (files, flushed WAL offset, window)
//!     <file_id>.parquet                             SST: rows sorted by time, series dictionary-encoded
//!                                                   (text, not real Parquet; ~half the WAL size)
//!     index/<file_id>.puffin                        index (distinct series)
//! <log_dir = data_home/logs>/greptimedb.<YYYY-MM-DD-HH>, greptimedb-err.<YYYY-MM-DD-HH>
//! ```
//! With `[storage] type = "S3"` the region directories (`data/greptime/...`: SSTs, index files,
//! manifests) are objects `<root>/data/greptime/...` in the bucket, written with signed PUTs
//! (see `objstore.rs`); the emulator's copy is in `<write_cache_path>/cache/object/write/`.
//! A start lists the bucket first: an unreachable endpoint, a missing bucket or refused keys
//! log `Fatal error occurs!` and exit 1.
//! Footprint split as the real layout: WAL = `wal/`; metadata = `metadata/`; data files =
//! `data/**.parquet`; index = `*.puffin`; other = manifests and the rest. The WAL stays after a flush (as the real raft-engine does until its purge
//! threshold); flushed bytes are skipped on replay. Restart replays the WAL and reloads SSTs.
//!
//! # Logs
//!
//! stdout (and the log files): `<RFC3339 µs>Z  INFO <target>: <message>`, e.g.
//! `... INFO servers::http: HTTP server is bound to 127.0.0.1:4000`. Fatal start errors (port
//! taken, data home locked) log `ERROR` lines and exit 1. SIGTERM/SIGINT: stop taking requests,
//! finish every running and queued compaction job (each then fails its manifest update: a
//! waiting statement gets 500 and the outputs stay as orphans), exit 0. Nothing is flushed on
//! shutdown: unflushed rows stay in the WAL and the next start replays them.

mod auth;
mod cluster;
mod compaction;
mod config;
mod ddl;
mod knobs;
mod lineproto;
mod logging;
mod objstore;
pub mod partition;
mod plan_refusals;
mod rows;
pub mod server;
mod sql;
mod store;
mod version;

use clap::{Arg, ArgAction, Command};

pub use config::total_mem_bytes;
pub use knobs::Knobs;
pub use version::Version;

/// clap without its `string` feature takes `&'static str`; the process is short-lived.
fn leak(s: String) -> &'static str {
    Box::leak(s.into_boxed_str())
}

fn addr_arg(id: &'static str, long: &'static str) -> Arg {
    Arg::new(id).long(long).value_name(id)
}

/// The gRPC bind flag as the version names it: `--grpc-bind-addr` (aliases `--rpc-bind-addr`
/// and `old`) from 1.1, `--rpc-bind-addr` (alias `old`) before; the real v1.0.2 refuses
/// `--grpc-bind-addr` ("unexpected argument", exit 2), seen running it.
fn grpc_bind_arg(v: &Version, old: &'static str) -> Arg {
    if v.at_least(1, 1, 0) {
        addr_arg("GRPC_BIND_ADDR", "grpc-bind-addr").aliases(["rpc-bind-addr", old])
    } else {
        addr_arg("GRPC_BIND_ADDR", "rpc-bind-addr").alias(old)
    }
}

/// The advertised gRPC address flag, named as [`grpc_bind_arg`] names the bind flag.
fn grpc_server_arg(v: &Version, old: &'static str) -> Arg {
    if v.at_least(1, 1, 0) {
        addr_arg("GRPC_SERVER_ADDR", "grpc-server-addr").aliases(["rpc-server-addr", old])
    } else {
        addr_arg("GRPC_SERVER_ADDR", "rpc-server-addr").alias(old)
    }
}

fn command(v: &Version) -> Command {
    Command::new(v.product_name())
        .bin_name("greptime")
        .version(leak(v.text()))
        .long_version(leak(v.long_version()))
        .about("The GreptimeDB command-line interface (testbed emulator)")
        .propagate_version(true)
        .subcommand_required(true)
        .arg_required_else_help(true)
        .arg(
            Arg::new("log_dir")
                .long("log-dir")
                .value_name("LOG_DIR")
                .global(true),
        )
        .arg(
            Arg::new("log_level")
                .long("log-level")
                .value_name("LOG_LEVEL")
                .global(true),
        )
        .subcommand(
            Command::new("metasrv")
                .about("Start the metasrv (cluster metadata)")
                .subcommand_required(true)
                .arg_required_else_help(true)
                .subcommand(
                    Command::new("start")
                        .arg(grpc_bind_arg(v, "bind-addr"))
                        .arg(grpc_server_arg(v, "server-addr"))
                        .arg(addr_arg("STORE_ADDRS", "store-addrs").alias("store-addr"))
                        .arg(addr_arg("HTTP_ADDR", "http-addr"))
                        .arg(addr_arg("DATA_HOME", "data-home"))
                        .arg(addr_arg("BACKEND", "backend"))
                        .arg(addr_arg("SELECTOR", "selector"))
                        .arg(addr_arg("ENV_PREFIX", "env-prefix"))
                        .arg(
                            Arg::new("config_file")
                                .short('c')
                                .long("config-file")
                                .value_name("CONFIG_FILE"),
                        ),
                ),
        )
        .subcommand(
            Command::new("datanode")
                .about("Start a datanode")
                .subcommand_required(true)
                .arg_required_else_help(true)
                .subcommand(
                    Command::new("start")
                        .arg(addr_arg("NODE_ID", "node-id"))
                        .arg(grpc_bind_arg(v, "rpc-addr"))
                        .arg(grpc_server_arg(v, "rpc-hostname"))
                        .arg(addr_arg("METASRV_ADDRS", "metasrv-addrs"))
                        .arg(addr_arg("HTTP_ADDR", "http-addr"))
                        .arg(addr_arg("DATA_HOME", "data-home"))
                        .arg(addr_arg("WAL_DIR", "wal-dir"))
                        .arg(
                            Arg::new("env_prefix")
                                .long("env-prefix")
                                .value_name("ENV_PREFIX")
                                .default_value("GREPTIMEDB_DATANODE"),
                        )
                        .arg(
                            Arg::new("config_file")
                                .short('c')
                                .long("config-file")
                                .value_name("CONFIG_FILE"),
                        ),
                ),
        )
        .subcommand(
            Command::new("frontend")
                .about("Start a frontend")
                .subcommand_required(true)
                .arg_required_else_help(true)
                .subcommand(
                    Command::new("start")
                        .arg(addr_arg("HTTP_ADDR", "http-addr"))
                        .arg(grpc_bind_arg(v, "rpc-addr"))
                        .arg(grpc_server_arg(v, "rpc-hostname"))
                        .arg(addr_arg("MYSQL_ADDR", "mysql-addr"))
                        .arg(addr_arg("POSTGRES_ADDR", "postgres-addr"))
                        .arg(addr_arg("METASRV_ADDRS", "metasrv-addrs"))
                        .arg(
                            Arg::new("influxdb_enable")
                                .short('i')
                                .long("influxdb-enable")
                                .action(ArgAction::SetTrue),
                        )
                        .arg(addr_arg("ENV_PREFIX", "env-prefix"))
                        .arg(
                            Arg::new("config_file")
                                .short('c')
                                .long("config-file")
                                .value_name("CONFIG_FILE"),
                        ),
                ),
        )
        .subcommand(
            Command::new("standalone")
                .about("Start GreptimeDB in standalone mode")
                .subcommand_required(true)
                .arg_required_else_help(true)
                .subcommand(
                    Command::new("start")
                        .about("Start the standalone server")
                        .arg(addr_arg("HTTP_ADDR", "http-addr"))
                        .arg(
                            addr_arg("GRPC_BIND_ADDR", "grpc-bind-addr")
                                .aliases(["rpc-bind-addr", "rpc-addr"]),
                        )
                        .arg(addr_arg("MYSQL_ADDR", "mysql-addr"))
                        .arg(addr_arg("POSTGRES_ADDR", "postgres-addr"))
                        .arg(
                            Arg::new("influxdb_enable")
                                .short('i')
                                .long("influxdb-enable")
                                .action(ArgAction::SetTrue),
                        )
                        .arg(
                            Arg::new("config_file")
                                .short('c')
                                .long("config-file")
                                .value_name("CONFIG_FILE"),
                        )
                        .arg(Arg::new("tls_mode").long("tls-mode").value_name("TLS_MODE"))
                        .arg(
                            Arg::new("tls_cert_path")
                                .long("tls-cert-path")
                                .value_name("TLS_CERT_PATH"),
                        )
                        .arg(
                            Arg::new("tls_key_path")
                                .long("tls-key-path")
                                .value_name("TLS_KEY_PATH"),
                        )
                        .arg(
                            Arg::new("tls_watch")
                                .long("tls-watch")
                                .action(ArgAction::SetTrue),
                        )
                        .arg(
                            Arg::new("user_provider")
                                .long("user-provider")
                                .value_name("USER_PROVIDER"),
                        )
                        .arg(
                            Arg::new("env_prefix")
                                .long("env-prefix")
                                .value_name("ENV_PREFIX")
                                .default_value("GREPTIMEDB_STANDALONE"),
                        )
                        .arg(
                            Arg::new("data_home")
                                .long("data-home")
                                .value_name("DATA_HOME"),
                        ),
                ),
        )
}

/// `testbed emulate greptime <args>`.
pub fn main(args: Vec<String>) -> i32 {
    let knobs = match Knobs::load() {
        Ok(k) => k,
        Err(e) => {
            eprintln!("testbed: {e}");
            return 2;
        }
    };
    let Some(vtext) = std::env::var("TESTBED_EMULATED_VERSION")
        .ok()
        .filter(|v| !v.is_empty())
    else {
        eprintln!("testbed: TESTBED_EMULATED_VERSION is not set (the wrapper script sets it)");
        return 2;
    };
    let Some(version) = Version::parse(&vtext) else {
        eprintln!("testbed: TESTBED_EMULATED_VERSION {vtext:?} is not a version");
        return 2;
    };
    let shown = match &knobs.wrong_version {
        Some(w) => match Version::parse(w) {
            Some(v) => v,
            None => {
                eprintln!("testbed: knob wrong_version {w:?} is not a version");
                return 2;
            }
        },
        None => version.clone(),
    };
    let argv: Vec<String> = std::iter::once("greptime".to_string())
        .chain(args.iter().cloned())
        .collect();
    let matches = match command(&shown).try_get_matches_from(&argv) {
        Ok(m) => m,
        Err(e) => {
            use clap::error::ErrorKind;
            let _ = e.print();
            return match e.kind() {
                ErrorKind::DisplayVersion => knobs.version_exit_code.unwrap_or(0),
                ErrorKind::DisplayHelp => 0,
                _ => e.exit_code(),
            };
        }
    };
    let (role, role_m) = matches.subcommand().expect("subcommand required");
    let (_, start) = role_m.subcommand().expect("subcommand required");
    if role != "standalone" {
        return cluster_role(role, start, version, knobs, argv.join(" "));
    }
    for flag in ["tls_mode", "tls_cert_path", "tls_key_path"] {
        if start.get_one::<String>(flag).is_some() {
            eprintln!(
                "error: --{} is not emulated by the testbed greptime",
                flag.replace('_', "-")
            );
            return 2;
        }
    }
    if start.get_flag("tls_watch") {
        eprintln!("error: --tls-watch is not emulated by the testbed greptime");
        return 2;
    }
    let s = |m: &clap::ArgMatches, id: &str| m.get_one::<String>(id).cloned();
    let cli = config::CliArgs {
        http_addr: s(start, "HTTP_ADDR"),
        grpc_bind_addr: s(start, "GRPC_BIND_ADDR"),
        mysql_addr: s(start, "MYSQL_ADDR"),
        postgres_addr: s(start, "POSTGRES_ADDR"),
        influxdb_enable: start.get_flag("influxdb_enable"),
        config_file: s(start, "config_file"),
        env_prefix: s(start, "env_prefix").unwrap_or_else(|| "GREPTIMEDB_STANDALONE".into()),
        data_home: s(start, "data_home"),
        log_dir: s(start, "log_dir"),
        log_level: s(start, "log_level"),
    };
    let opts = match config::resolve(&cli, &version) {
        Ok(o) => o,
        Err(e) => {
            eprintln!("error: {e}");
            return 2;
        }
    };
    let users = match start.get_one::<String>("user_provider") {
        None => None,
        Some(spec) => match auth::parse_provider(spec) {
            Ok(u) => Some(u),
            Err(e) => {
                eprintln!("Error: {e}");
                return 1;
            }
        },
    };
    server::run(opts, version, knobs, argv.join(" "), users)
}

/// `greptime metasrv|datanode|frontend start ...` (see [`cluster`]).
fn cluster_role(
    role: &str,
    m: &clap::ArgMatches,
    version: Version,
    knobs: Knobs,
    command_line: String,
) -> i32 {
    let s = |id: &str| m.get_one::<String>(id).cloned();
    let addr = |id: &str, default: &str| -> Result<std::net::SocketAddr, i32> {
        let v = s(id).unwrap_or_else(|| default.to_string());
        v.parse().map_err(|_| {
            eprintln!(
                "error: invalid socket address {v:?} for --{}",
                id.to_ascii_lowercase().replace('_', "-")
            );
            2
        })
    };
    let log_dir = s("log_dir").map(std::path::PathBuf::from);
    macro_rules! tri {
        ($e:expr) => {
            match $e {
                Ok(v) => v,
                Err(c) => return c,
            }
        };
    }
    match role {
        "metasrv" => {
            // The metasrv's config file: only `enable_telemetry` is emulated.
            let mut telemetry = true;
            if let Some(path) = s("config_file") {
                let text = match std::fs::read_to_string(&path) {
                    Ok(t) => t,
                    Err(e) => {
                        eprintln!("error: cannot read config file {path}: {e}");
                        return 2;
                    }
                };
                let table: toml::Table = match text.parse() {
                    Ok(t) => t,
                    Err(e) => {
                        eprintln!("error: invalid config file {path}: {e}");
                        return 2;
                    }
                };
                for (k, v) in &table {
                    match (k.as_str(), v.as_bool()) {
                        ("enable_telemetry", Some(b)) => telemetry = b,
                        _ => {
                            eprintln!("error: invalid config file {path}: key {k} is not emulated by the testbed metasrv");
                            return 2;
                        }
                    }
                }
            }
            let grpc = tri!(addr("GRPC_BIND_ADDR", "127.0.0.1:3002"));
            cluster::metasrv::run(
                cluster::metasrv::Args {
                    grpc_bind_addr: grpc,
                    grpc_server_addr: s("GRPC_SERVER_ADDR").unwrap_or_else(|| grpc.to_string()),
                    http_addr: tri!(addr("HTTP_ADDR", "127.0.0.1:4000")),
                    store_addrs: s("STORE_ADDRS")
                        .unwrap_or_else(|| "127.0.0.1:2379".into())
                        .split(',')
                        .map(|a| a.trim().to_string())
                        .collect(),
                    backend: s("BACKEND").unwrap_or_else(|| "etcd-store".into()),
                    data_home: s("DATA_HOME")
                        .map(std::path::PathBuf::from)
                        .unwrap_or_else(|| "./greptimedb_data".into()),
                    log_dir,
                    command_line,
                    telemetry,
                },
                &version,
            )
        }
        "datanode" => {
            let Some(node_id) = s("NODE_ID").and_then(|v| v.parse::<u64>().ok()) else {
                eprintln!("error: a datanode needs --node-id N");
                return 2;
            };
            let cli = config::CliArgs {
                http_addr: s("HTTP_ADDR"),
                grpc_bind_addr: s("GRPC_BIND_ADDR"),
                mysql_addr: None,
                postgres_addr: None,
                influxdb_enable: true,
                config_file: s("config_file"),
                env_prefix: s("env_prefix").unwrap_or_else(|| "GREPTIMEDB_DATANODE".into()),
                data_home: s("DATA_HOME"),
                log_dir: s("log_dir"),
                log_level: s("log_level"),
            };
            let mut opts = match config::resolve(&cli, &version) {
                Ok(o) => o,
                Err(e) => {
                    eprintln!("error: {e}");
                    return 2;
                }
            };
            if let Some(w) = s("WAL_DIR") {
                opts.wal_dir = w.into();
            }
            let grpc_server = s("GRPC_SERVER_ADDR").unwrap_or_else(|| opts.grpc_addr.to_string());
            // In a cluster the metasrv reports telemetry, not the datanodes.
            opts.enable_telemetry = false;
            cluster::datanode::run(
                opts,
                cluster::datanode::Args {
                    node_id,
                    metasrv_addrs: s("METASRV_ADDRS").unwrap_or_default(),
                    grpc_server_addr: grpc_server,
                },
                version,
                knobs,
                command_line,
            )
        }
        _ => {
            if s("config_file").is_some() {
                eprintln!("error: -c/--config-file of the frontend is not emulated by the testbed greptime");
                return 2;
            }
            let grpc = tri!(addr("GRPC_BIND_ADDR", "127.0.0.1:4001"));
            cluster::frontend::run(
                cluster::frontend::Args {
                    http_addr: tri!(addr("HTTP_ADDR", "127.0.0.1:4000")),
                    grpc_bind_addr: grpc,
                    grpc_server_addr: s("GRPC_SERVER_ADDR").unwrap_or_else(|| grpc.to_string()),
                    mysql_addr: tri!(addr("MYSQL_ADDR", "127.0.0.1:4002")),
                    postgres_addr: tri!(addr("POSTGRES_ADDR", "127.0.0.1:4003")),
                    metasrv_addrs: s("METASRV_ADDRS").unwrap_or_default(),
                    log_dir,
                    command_line,
                },
                version,
            )
        }
    }
}
