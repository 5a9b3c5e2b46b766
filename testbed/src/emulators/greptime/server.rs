//! `greptime standalone start`: listeners, HTTP routes, writes, signals and the knobs that
//! make the process misbehave.

use std::collections::BTreeMap;
use std::io::Read;
use std::net::TcpListener;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use serde::Serialize;
use serde_json::Value;
use tiny_http::{Header, Request, Response};

use super::compaction::Scheduler;
use super::config::Options;
use super::knobs::Knobs;
use super::lineproto;
use super::logging;
use super::sql::{self, Output};
use super::store::{row_key, GtError, Store, TableBatch};
use super::version::Version;

/// HTTP status for a GreptimeDB status code (reference/protocols.md §2.4).
pub fn http_status(code: u32) -> u16 {
    match code {
        1004 | 2000 | 3000 | 4000..=4006 | 4011 | 5001 | 1001 => 400,
        4007 | 7000..=7004 => 401,
        7005 | 7006 => 403,
        6001 => 429,
        1005 | 1008 => 504,
        1007 | 4008 | 4009 | 4010 | 5000 | 1009 => 503,
        _ => 500,
    }
}

#[derive(Serialize)]
struct ColumnSchema {
    name: String,
    data_type: String,
}

#[derive(Serialize)]
struct Schema {
    column_schemas: Vec<ColumnSchema>,
}

#[derive(Serialize)]
struct Records {
    schema: Schema,
    rows: Vec<Vec<Value>>,
    total_rows: usize,
}

#[derive(Serialize)]
#[serde(untagged)]
enum OutputJson {
    Records { records: Records },
    Affected { affectedrows: u64 },
}

#[derive(Serialize)]
struct SqlOk {
    output: Vec<OutputJson>,
    execution_time_ms: u64,
}

#[derive(Serialize)]
struct SqlErr<'a> {
    code: u32,
    error: &'a str,
    execution_time_ms: u64,
}

struct Shared {
    opts: Options,
    version: Version,
    knobs: Knobs,
    store: Arc<Mutex<Store>>,
    scheduler: Arc<Scheduler>,
    requests: AtomicU64,
    rows_accepted: AtomicU64,
    /// Timeout answers sent (knob `write_timeouts_after_rows`).
    write_timeouts_sent: AtomicU64,
    rows_dropped: AtomicU64,
    /// `--user-provider`: requests under `/v1/` need credentials (see `auth.rs`).
    users: Option<super::auth::Users>,
}

fn header(name: &str, value: &str) -> Header {
    Header::from_bytes(name.as_bytes(), value.as_bytes()).expect("valid header")
}

type Resp = Response<std::io::Cursor<Vec<u8>>>;

fn json_response(status: u16, body: Vec<u8>) -> Resp {
    Response::from_data(body)
        .with_status_code(status)
        .with_header(header("Content-Type", "application/json"))
}

fn empty(status: u16) -> Resp {
    Response::from_data(Vec::new()).with_status_code(status)
}

fn text(status: u16, body: &str) -> Resp {
    Response::from_data(body.as_bytes().to_vec())
        .with_status_code(status)
        .with_header(header("Content-Type", "text/plain; charset=utf-8"))
}

/// The value of `x-greptime-err-msg` as v1.0.2 writes it (`from_err_code_msg_to_header`,
/// src/common/error/src/lib.rs): the message as it is when it is a valid header value (visible
/// ASCII, space, tab), else every byte of it through `std::ascii::escape_default` (quotes and
/// backslashes escaped too, UTF-8 as `\xNN`, newlines as `\n`).
pub fn err_msg_header_value(msg: &str) -> String {
    let plain = msg.bytes().all(|b| b == b'\t' || (32..127).contains(&b));
    if plain {
        return msg.to_string();
    }
    msg.bytes()
        .flat_map(std::ascii::escape_default)
        .map(char::from)
        .collect()
}

fn error_headers(resp: Resp, e: &GtError) -> Resp {
    resp.with_header(header("x-greptime-err-code", &e.code.to_string()))
        .with_header(header("x-greptime-err-msg", &err_msg_header_value(&e.msg)))
}

fn sql_error(e: &GtError, elapsed: u64) -> Resp {
    let body = serde_json::to_vec(&SqlErr {
        code: e.code,
        error: &e.msg,
        execution_time_ms: elapsed,
    })
    .unwrap_or_default();
    error_headers(json_response(http_status(e.code), body), e)
}

/// A refused write: `{"error"}` with the error headers (a datanode's, a standalone's, and the
/// frontend's own refusals alike).
pub(crate) fn write_error(e: &GtError) -> Resp {
    let body = serde_json::to_vec(&serde_json::json!({ "error": e.msg })).unwrap_or_default();
    error_headers(json_response(http_status(e.code), body), e)
}

fn get_header<'a>(req: &'a Request, name: &str) -> Option<&'a str> {
    req.headers()
        .iter()
        .find(|h| h.field.as_str().as_str().eq_ignore_ascii_case(name))
        .map(|h| h.value.as_str())
}

enum BodyError {
    TooLarge,
    Io(String),
}

fn read_body(req: &mut Request, limit: u64) -> Result<Vec<u8>, BodyError> {
    if let Some(n) = get_header(req, "content-length").and_then(|v| v.trim().parse::<u64>().ok()) {
        if n > limit {
            return Err(BodyError::TooLarge);
        }
    }
    let mut body = Vec::new();
    req.as_reader()
        .take(limit + 1)
        .read_to_end(&mut body)
        .map_err(|e| BodyError::Io(e.to_string()))?;
    if body.len() as u64 > limit {
        return Err(BodyError::TooLarge);
    }
    Ok(body)
}

fn too_large() -> Resp {
    text(
        413,
        "Failed to buffer the request body: length limit exceeded",
    )
}

fn params(s: &str) -> BTreeMap<String, String> {
    url::form_urlencoded::parse(s.as_bytes())
        .map(|(k, v)| (k.into_owned(), v.into_owned()))
        .collect()
}

/// `db` → schema (the `catalog-schema` form is accepted for catalog `greptime`).
fn schema_of(db: &str) -> Result<String, GtError> {
    match db.split_once('-') {
        Some(("greptime", s)) => Ok(s.to_string()),
        Some(_) => Err(GtError::new(4004, format!("Database not found: {db}"))),
        None => Ok(db.to_string()),
    }
}

impl Shared {
    fn handle(&self, mut req: Request) {
        let n = self.requests.fetch_add(1, Ordering::SeqCst) + 1;
        let resp = if self.knobs.never_ready.as_deref() == Some("503") {
            text(503, "Service Unavailable")
        } else if let Err(e) = self.authorize(&req) {
            sql_error(&e, 0)
        } else {
            self.route(&mut req)
        };
        let _ = req.respond(resp);
        if self.knobs.crash_after_requests == Some(n) {
            self.crash(&format!("crash after {n} requests"));
        }
    }

    /// The real server's auth middleware runs before any route (401 on a refusal).
    fn authorize(&self, req: &Request) -> Result<(), GtError> {
        let Some(users) = &self.users else {
            return Ok(());
        };
        let url = req.url().to_string();
        let (path, query) = url.split_once('?').unwrap_or((url.as_str(), ""));
        users
            .check(path, query, |name| {
                get_header(req, name).map(str::to_string)
            })
            .inspect_err(|e| {
                logging::log(
                    "WARN",
                    "servers::http::authorize",
                    &format!("authenticate failed: {}", e.msg),
                )
            })
    }

    fn crash(&self, why: &str) -> ! {
        logging::panic_line(&format!("testbed knob: {why}"));
        if self.knobs.crash_signal == Some(true) {
            std::process::abort();
        }
        // SAFETY: _exit ends the process at once, without running destructors (a crash).
        unsafe { libc::_exit(self.knobs.crash_exit_code.unwrap_or(101)) }
    }

    fn route(&self, req: &mut Request) -> Resp {
        let url = req.url().to_string();
        let (path, query) = url.split_once('?').unwrap_or((url.as_str(), ""));
        let method = req.method().as_str().to_ascii_uppercase();
        let get_post = method == "GET" || method == "POST";
        match path {
            "/health" | "/ready" | "/v1/health" if get_post => json_response(200, b"{}".to_vec())
                .with_header(header("access-control-allow-origin", "*")),
            "/status" if method == "GET" => {
                let body = serde_json::json!({
                    "source_time": "",
                    "commit": self.version.commit(),
                    "branch": "",
                    "rustc_version": "rustc 1.87.0-nightly",
                    "hostname": "localhost",
                    "version": self.version.text(),
                });
                json_response(200, serde_json::to_vec(&body).unwrap_or_default())
            }
            "/metrics" if method == "GET" => {
                let mut body = format!(
                    "# HELP greptime_app_version app version\n# TYPE greptime_app_version gauge\ngreptime_app_version{{app=\"greptime-standalone\",short_version=\"{}\",version=\"{}\"}} 1\n",
                    self.version.text(),
                    self.version.text()
                );
                body.push_str(&crate::emulators::process_metrics());
                if let Some(n) = self.scheduler.inflight() {
                    body.push_str(&format!(
                        "# HELP greptime_mito_inflight_compaction_count inflight compaction count\n# TYPE greptime_mito_inflight_compaction_count gauge\ngreptime_mito_inflight_compaction_count {n}\n"
                    ));
                }
                text(200, &body)
            }
            "/config" if method == "GET" => text(200, &self.config_text()),
            "/v1/sql" if get_post => self.sql(req, query, method == "POST"),
            "/testbed/lines" if method == "GET" => self.held(query, false),
            "/testbed/count" if method == "GET" => self.held(query, true),
            "/testbed/regions" if method == "GET" => self.region_scans(query),
            "/v1/influxdb/write" | "/v1/influxdb/api/v2/write" if self.opts.influxdb_enable => {
                if method != "POST" {
                    return empty(405);
                }
                self.influx_write(req, query, path.contains("/api/v2/"))
            }
            "/v1/influxdb/ping" if self.opts.influxdb_enable && method == "GET" => empty(204),
            "/v1/influxdb/health" if self.opts.influxdb_enable && method == "GET" => empty(200),
            "/health"
            | "/ready"
            | "/v1/health"
            | "/status"
            | "/metrics"
            | "/config"
            | "/v1/sql"
            | "/v1/influxdb/ping"
            | "/v1/influxdb/health" => empty(405),
            _ => empty(404),
        }
    }

    /// `GET /config`: the options in force as TOML, as the real server serializes them (its
    /// `to_toml`); the emulator writes the parts tsbsctl reads: the HTTP address, the region
    /// engines and the mito engine's memory sizes (`ReadableSize`: a whole number of the
    /// largest binary unit, else a bare number of bytes; zero is `0KiB`).
    fn config_text(&self) -> String {
        fn readable(b: u64) -> String {
            const UNITS: [(u64, &str); 5] = [
                (1 << 50, "PiB"),
                (1 << 40, "TiB"),
                (1 << 30, "GiB"),
                (1 << 20, "MiB"),
                (1 << 10, "KiB"),
            ];
            if b == 0 {
                return "\"0KiB\"".into();
            }
            match UNITS.iter().find(|(u, _)| b.is_multiple_of(*u)) {
                Some((u, name)) => format!("\"{}{name}\"", b / u),
                None => b.to_string(),
            }
        }
        let mut out = format!(
            "enable_telemetry = {}\n\n[http]\naddr = \"{}\"\n",
            self.opts.enable_telemetry, self.opts.http_addr
        );
        for engine in &self.opts.region_engines {
            out.push_str(&format!(
                "\n[[region_engine]]\n\n[region_engine.{engine}]\n"
            ));
            if engine == "mito" {
                // The engine's own keys, then its sub-tables, as the real answer orders them.
                for (k, b) in &self.opts.mito_sizes {
                    if !k.contains('.') {
                        out.push_str(&format!("{k} = {}\n", readable(*b)));
                    }
                }
                out.push_str("\n[region_engine.mito.index]\n");
                for (k, b) in &self.opts.mito_sizes {
                    if let Some(k) = k.strip_prefix("index.") {
                        out.push_str(&format!("{k} = {}\n", readable(*b)));
                    }
                }
                for (build, t) in &self.opts.index_thresholds {
                    let v = match t {
                        None => "\"auto\"".to_string(),
                        Some(crate::emulators::greptime::config::Threshold::Unlimited) => {
                            "\"unlimited\"".to_string()
                        }
                        Some(crate::emulators::greptime::config::Threshold::Size(b)) => {
                            readable(*b)
                        }
                    };
                    out.push_str(&format!(
                        "\n[region_engine.mito.{build}]\nmem_threshold_on_create = {v}\n"
                    ));
                }
            }
        }
        out
    }

    fn sql(&self, req: &mut Request, query: &str, post: bool) -> Resp {
        let start = Instant::now();
        let mut q = params(query);
        if post {
            let ct = get_header(req, "content-type").unwrap_or("");
            if !ct
                .to_ascii_lowercase()
                .starts_with("application/x-www-form-urlencoded")
            {
                return text(
                    415,
                    "Form requests must have `Content-Type: application/x-www-form-urlencoded`",
                );
            }
            let body = match read_body(req, self.opts.body_limit) {
                Ok(b) => b,
                Err(BodyError::TooLarge) => return too_large(),
                Err(BodyError::Io(e)) => return text(400, &format!("Failed to read body: {e}")),
            };
            for (k, v) in params(&String::from_utf8_lossy(&body)) {
                q.entry(k).or_insert(v);
            }
        }
        let ms = |s: Instant| s.elapsed().as_millis() as u64;
        if let Some(f) = q.get("format") {
            if f != "greptimedb_v1" {
                return sql_error(
                    &GtError::new(
                        1001,
                        format!("Not supported: the testbed emulator answers only format=greptimedb_v1, not {f}"),
                    ),
                    ms(start),
                );
            }
        }
        let Some(sql_text) = q.get("sql") else {
            return sql_error(&GtError::new(1004, "sql parameter is required."), ms(start));
        };
        let db = match schema_of(q.get("db").map(String::as_str).unwrap_or("public")) {
            Ok(d) => d,
            Err(e) => return sql_error(&e, ms(start)),
        };
        {
            let store = self.store.lock().unwrap_or_else(|e| e.into_inner());
            if !store.has_database(&db) {
                return sql_error(
                    &GtError::new(4004, format!("Database not found: {db}")),
                    ms(start),
                );
            }
        }
        // What a cluster's frontend adds for a datanode (testbed-only parameters): the id and
        // the region numbers of a table it creates here, and the other datanodes that hold
        // regions of the table a query reads.
        let placement = q
            .get("testbed_table_id")
            .and_then(|id| id.parse().ok())
            .map(|id| sql::Placement {
                table_id: id,
                regions: q
                    .get("testbed_regions")
                    .map(|r| r.split(',').filter_map(|n| n.parse().ok()).collect())
                    .unwrap_or_default(),
            });
        let peers = q
            .get("testbed_peers")
            .map(|p| {
                p.split(',')
                    .filter(|a| !a.is_empty())
                    .map(String::from)
                    .collect()
            })
            .unwrap_or_default();
        let ctx = sql::Ctx {
            store: &self.store,
            scheduler: &self.scheduler,
            version: &self.version,
            knobs: &self.knobs,
            db,
            placement,
            peers,
        };
        match sql::execute(&ctx, sql_text) {
            Ok(outputs) => {
                let output = outputs
                    .into_iter()
                    .map(|o| match o {
                        Output::Affected(n) => OutputJson::Affected { affectedrows: n },
                        Output::Records { columns, rows } => OutputJson::Records {
                            records: Records {
                                schema: Schema {
                                    column_schemas: columns
                                        .into_iter()
                                        .map(|(name, data_type)| ColumnSchema { name, data_type })
                                        .collect(),
                                },
                                total_rows: rows.len(),
                                rows,
                            },
                        },
                    })
                    .collect();
                let elapsed = ms(start);
                let body = serde_json::to_vec(&SqlOk {
                    output,
                    execution_time_ms: elapsed,
                })
                .unwrap_or_default();
                json_response(200, body)
                    .with_header(header("x-greptime-format", "greptimedb_v1"))
                    .with_header(header("x-greptime-execution-time", &elapsed.to_string()))
            }
            Err(e) => sql_error(&e, ms(start)),
        }
    }

    /// What this server holds of table `table_id` (ids are global in a cluster): its stored
    /// lines, one a line (`/testbed/lines`), or its row count (`/testbed/count`). A cluster's
    /// datanode that answers a query reads the other datanodes' regions of the table so.
    fn held(&self, query: &str, count: bool) -> Resp {
        let q = params(query);
        let Some(id) = q.get("table_id").and_then(|t| t.parse().ok()) else {
            return empty(400);
        };
        let store = self.store.lock().unwrap_or_else(|e| e.into_inner());
        if count {
            return text(200, &store.row_count(id).to_string());
        }
        match store.scan_lines(id) {
            Ok(lines) => text(200, &lines.join("\n")),
            Err(e) => sql_error(&e, 0),
        }
    }

    /// This server's open regions of table `table_id` as a scan reads them
    /// (`/testbed/regions`): a cluster's datanode that answers EXPLAIN ANALYZE shows every
    /// region, its own and the other datanodes', as the real MergeScan's sub-stages do.
    fn region_scans(&self, query: &str) -> Resp {
        let q = params(query);
        let Some(id) = q.get("table_id").and_then(|t| t.parse().ok()) else {
            return empty(400);
        };
        let store = self.store.lock().unwrap_or_else(|e| e.into_inner());
        json_response(
            200,
            serde_json::to_vec(&store.region_scans(id)).unwrap_or_default(),
        )
    }

    fn influx_write(&self, req: &mut Request, query: &str, v2: bool) -> Resp {
        let q = params(query);
        let db = if v2 {
            q.get("bucket").or_else(|| q.get("db"))
        } else {
            q.get("db")
        }
        .cloned()
        .unwrap_or_else(|| "public".into());
        let Some(factor) = lineproto::precision_factor(q.get("precision").map(String::as_str))
        else {
            return write_error(&GtError::new(
                1004,
                format!(
                    "Failed to parse query string, precision {} is not supported",
                    q["precision"]
                ),
            ));
        };
        if let Some(limit) = self.knobs.fail_writes_after_rows {
            if self.rows_accepted.load(Ordering::SeqCst) >= limit {
                return write_error(&GtError::new(
                    1003,
                    "Failed to write to region: injected failure (testbed knob fail_writes_after_rows)",
                ));
            }
        }
        if let Some(after) = self.knobs.write_timeouts_after_rows {
            if self.rows_accepted.load(Ordering::SeqCst) >= after {
                let n = self.write_timeouts_sent.fetch_add(1, Ordering::SeqCst);
                if self.knobs.write_timeouts.is_none_or(|max| n < max) {
                    // Drain the body first, as a real server does before it answers.
                    let _ = read_body(req, self.opts.body_limit);
                    return write_error(&GtError::new(
                        1003,
                        "Failed to write to region: Request timeout (testbed knob write_timeouts_after_rows)",
                    ));
                }
            }
        }
        let raw = match read_body(req, self.opts.body_limit) {
            Ok(b) => b,
            Err(BodyError::TooLarge) => return too_large(),
            Err(BodyError::Io(e)) => return text(400, &format!("Failed to read body: {e}")),
        };
        let gz = get_header(req, "content-encoding")
            .is_some_and(|v| v.trim().eq_ignore_ascii_case("gzip"));
        let body = if gz {
            let mut out = Vec::new();
            if let Err(e) = flate2::read::MultiGzDecoder::new(&raw[..]).read_to_end(&mut out) {
                return write_error(&GtError::new(
                    1004,
                    format!("Failed to decode gzip body: {e}"),
                ));
            }
            out
        } else {
            raw
        };
        let Ok(body) = String::from_utf8(body) else {
            return write_error(&GtError::new(1004, "Invalid utf-8 in request body"));
        };
        let db = match schema_of(&db) {
            Ok(d) => d,
            Err(e) => {
                return write_error(&GtError::new(
                    1004,
                    format!("Failed to find schema, schema info: {}", e.msg),
                ))
            }
        };
        let now = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.as_nanos() as i64)
            .unwrap_or(0);
        let mut batches: BTreeMap<String, TableBatch> = BTreeMap::new();
        let mut count = 0u64;
        for line in body.lines() {
            let line = line.trim();
            if line.is_empty() || line.starts_with('#') {
                continue;
            }
            let l = match lineproto::parse(line) {
                Ok(l) => l,
                Err(e) => {
                    return write_error(&GtError::new(
                        1004,
                        format!("Failed to parse InfluxDB line protocol: {e}"),
                    ))
                }
            };
            let ts = match l.timestamp {
                Some(t) => match t.checked_mul(factor) {
                    Some(v) => v,
                    None => {
                        return write_error(&GtError::new(1004, format!("Timestamp overflow: {t}")))
                    }
                },
                None => now,
            };
            count += 1;
            if let Some(drop) = self.knobs.drop_rows {
                if self.rows_dropped.load(Ordering::SeqCst) < drop {
                    self.rows_dropped.fetch_add(1, Ordering::SeqCst);
                    continue;
                }
            }
            let b = batches.entry(l.measurement).or_default();
            // TSBS lines repeat one schema: only look at names when it changes.
            let same = b.last_tags.len() == l.tags.len()
                && b.last_tags.iter().zip(&l.tags).all(|(a, t)| a == t)
                && b.last_fields.len() == l.fields.len()
                && b.last_fields
                    .iter()
                    .zip(&l.fields)
                    .all(|((a, at), (f, ft))| a == f && at == ft);
            if !same {
                for t in &l.tags {
                    let t = lineproto::unescape(t);
                    if !b.tags.contains(&t) {
                        b.tags.push(t);
                    }
                }
                for (f, ty) in &l.fields {
                    let f = lineproto::unescape(f);
                    match b.fields.iter().find(|(n, _)| *n == f) {
                        Some((_, t)) if t != ty => {
                            return write_error(&GtError::type_conflict(&f, t, ty))
                        }
                        Some(_) => {}
                        None => b.fields.push((f, *ty)),
                    }
                }
                b.last_tags = l.tags.iter().map(|t| t.to_string()).collect();
                b.last_fields = l.fields.iter().map(|(f, t)| (f.to_string(), *t)).collect();
            }
            if factor == 1 && l.timestamp.is_some() {
                b.lines.extend_from_slice(line.as_bytes());
            } else {
                b.lines
                    .extend_from_slice(format!("{} {} {ts}", l.series, l.field_text).as_bytes());
            }
            b.lines.push(b'\n');
            b.keys.push(row_key(l.series, ts));
        }
        let res = self
            .store
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .write(&db, batches);
        // An engine-full flush during the write schedules an automatic compaction.
        self.scheduler.after_flush();
        match res {
            Ok(_) => {
                self.rows_accepted.fetch_add(count, Ordering::SeqCst);
                empty(204)
            }
            Err(e) => write_error(&e),
        }
    }
}

fn bind(what: &str, addr: std::net::SocketAddr) -> Result<TcpListener, i32> {
    TcpListener::bind(addr).map_err(|e| {
        logging::error(
            "cmd",
            &format!("Failed to start {what} server: Failed to bind address {addr}, source: {e}"),
        );
        logging::error("greptime", "Fatal error occurs!");
        1
    })
}

/// Runs the server until SIGTERM/SIGINT; returns the exit code.
/// `Datanode` when this server is a cluster's datanode (its log lines say so); else standalone.
pub static ROLE: std::sync::OnceLock<&'static str> = std::sync::OnceLock::new();

fn role_name() -> &'static str {
    ROLE.get().copied().unwrap_or("Standalone")
}

fn role_target() -> &'static str {
    match role_name() {
        "Datanode" => "cmd::datanode",
        _ => "cmd::standalone",
    }
}

pub fn run(
    opts: Options,
    version: Version,
    knobs: Knobs,
    command_line: String,
    users: Option<super::auth::Users>,
) -> i32 {
    super::sql::mark_started();
    if let Err(e) = logging::init(opts.log_dir.clone()) {
        eprintln!(
            "Error: failed to create log dir {:?}: {e}",
            opts.log_dir.as_ref().map(|p| p.display().to_string())
        );
        return 1;
    }
    logging::set_level(&opts.log_level);
    let term = Arc::new(AtomicBool::new(false));
    for sig in [signal_hook::consts::SIGTERM, signal_hook::consts::SIGINT] {
        if let Err(e) = signal_hook::flag::register(sig, Arc::clone(&term)) {
            logging::error("cmd", &format!("failed to install a signal handler: {e}"));
            return 1;
        }
    }
    logging::info(
        "cmd",
        &format!(
            "short_version: {}, full_version: greptimedb-{}",
            version.text(),
            version.commit()
        ),
    );
    logging::info(
        role_target(),
        &format!("{} start command: {command_line}", role_name()),
    );
    logging::info(
        role_target(),
        &format!(
            "{} options: http.addr={}, http.timeout={}, data_home={}, wal.dir={}, logging.dir={}",
            role_name(),
            opts.http_addr,
            opts.http_timeout.as_deref().unwrap_or("0s"),
            opts.data_home.display(),
            opts.wal_dir.display(),
            opts.log_dir
                .as_ref()
                .map(|p| p.display().to_string())
                .unwrap_or_default()
        ),
    );
    if let Some(ms) = knobs.start_delay_ms {
        let until = Instant::now() + Duration::from_millis(ms);
        while Instant::now() < until {
            if term.load(Ordering::SeqCst) && knobs.ignore_sigterm != Some(true) {
                logging::info("cmd", "Received signal SIGTERM during startup, exiting");
                return 0;
            }
            std::thread::sleep(Duration::from_millis(10));
        }
    }
    if let Some(code) = knobs.exit_during_start {
        logging::error(
            "greptime",
            "Fatal error occurs! err.msg=Failed to start standalone: testbed knob exit_during_start",
        );
        return code;
    }
    // Object storage: the bucket must answer (and the keys be accepted) before anything opens.
    let objects_home = match (&opts.object_store, &opts.write_cache) {
        (Some(o), Some(cache)) => {
            let held =
                (role_name() == "Datanode").then(|| super::store::held_tables(&opts.data_home));
            if let Err(e) = super::objstore::open(o, cache, held.as_ref()) {
                logging::error("greptime", &format!("Fatal error occurs! err.msg={e}"));
                return 1;
            }
            super::objstore::local_home(cache)
        }
        _ => opts.data_home.clone(),
    };
    let store = match Store::open(
        &opts.data_home,
        &objects_home,
        &opts.wal_dir,
        knobs.auto_flush_bytes.unwrap_or(64 << 20),
        knobs.wal_purge_threshold_bytes.unwrap_or(1 << 30),
    ) {
        Ok(mut s) => {
            if let Some(n) = knobs.twcs_trigger_file_num {
                s.set_twcs_trigger_file_num(n);
            }
            s
        }
        Err(e) => {
            logging::error("greptime", &format!("Fatal error occurs! err.msg={e}"));
            return 1;
        }
    };
    if opts.enable_telemetry {
        // The real server phones home every 30 min and keeps its id beside the data.
        let id = opts.data_home.join(".greptimedb-telemetry-uuid");
        if !id.exists() {
            let _ = std::fs::write(&id, "00000000-0000-4000-8000-000000000000");
        }
        logging::info(
            "common_greptimedb_telemetry",
            "Attempt to report telemetry to telemetry.greptimestats.com (testbed: not sent)",
        );
    }
    // HTTP answers only once every region is open and its WAL replayed.
    let replay_mib = store.unflushed_wal_bytes() as f64 / (1 << 20) as f64;
    let replay = Duration::from_secs_f64(
        replay_mib * knobs.wal_replay_ms_per_mib.unwrap_or(20.0).max(0.0) / 1000.0,
    );
    let until = Instant::now() + replay;
    while Instant::now() < until {
        if term.load(Ordering::SeqCst) && knobs.ignore_sigterm != Some(true) {
            logging::info("cmd", "Received signal SIGTERM during startup, exiting");
            return 0;
        }
        std::thread::sleep(Duration::from_millis(10).min(until - Instant::now()));
    }
    let store = Arc::new(Mutex::new(store));
    let scheduler = Scheduler::start(
        Arc::clone(&store),
        knobs.compaction_ms_per_mib.unwrap_or(5.0),
    );
    let mut extra = Vec::new();
    match bind("gRPC", opts.grpc_addr) {
        Ok(l) => extra.push(l),
        Err(c) => return c,
    }
    let http = match bind("HTTP", opts.http_addr) {
        Ok(l) => l,
        Err(c) => return c,
    };
    if let Some(a) = opts.mysql_addr {
        match bind("MySQL", a) {
            Ok(l) => extra.push(l),
            Err(c) => return c,
        }
    }
    if let Some(a) = opts.postgres_addr {
        match bind("PostgreSQL", a) {
            Ok(l) => extra.push(l),
            Err(c) => return c,
        }
    }
    let server = match tiny_http::Server::from_listener(http, None) {
        Ok(s) => Arc::new(s),
        Err(e) => {
            logging::error("greptime", &format!("Fatal error occurs! err.msg={e}"));
            return 1;
        }
    };
    logging::info(
        "servers::grpc",
        &format!("gRPC server is bound to {}", opts.grpc_addr),
    );
    logging::info(
        "servers::http",
        &format!("HTTP server is bound to {}", opts.http_addr),
    );
    if let Some(a) = opts.mysql_addr {
        logging::info(
            "servers::mysql::server",
            &format!("MySQL server started at {a}"),
        );
    }
    if let Some(a) = opts.postgres_addr {
        logging::info(
            "servers::postgres::server",
            &format!("Postgres server started at {a}"),
        );
    }
    for l in knobs.inject_logs.iter().flatten() {
        match l.level.as_str() {
            "PANIC" => logging::panic_line(&l.message),
            lvl => logging::log(lvl, "testbed::injected", &l.message),
        }
    }
    let shared = Arc::new(Shared {
        opts,
        version,
        knobs: knobs.clone(),
        store,
        scheduler: Arc::clone(&scheduler),
        requests: AtomicU64::new(0),
        rows_accepted: AtomicU64::new(0),
        write_timeouts_sent: AtomicU64::new(0),
        rows_dropped: AtomicU64::new(0),
        users,
    });
    if let Some(ms) = knobs.crash_after_ms {
        let s = Arc::clone(&shared);
        std::thread::spawn(move || {
            std::thread::sleep(Duration::from_millis(ms));
            s.crash(&format!("crash after {ms} ms"));
        });
    }
    // Kept until the server returns; the child also dies with this (main) thread.
    let _busy = knobs.busy_child.unwrap_or(false).then(busy_child);
    let stop = Arc::new(AtomicBool::new(false));
    let mut workers = Vec::new();
    for _ in 0..4 {
        let (server, shared, stop) = (Arc::clone(&server), Arc::clone(&shared), Arc::clone(&stop));
        workers.push(std::thread::spawn(move || {
            let mut held = Vec::new();
            while !stop.load(Ordering::SeqCst) {
                match server.recv_timeout(Duration::from_millis(50)) {
                    Ok(Some(req)) => {
                        if shared.knobs.never_ready.as_deref() == Some("no_answer") {
                            shared.requests.fetch_add(1, Ordering::SeqCst);
                            held.push(req);
                        } else {
                            shared.handle(req);
                        }
                    }
                    Ok(None) => {}
                    Err(_) => break,
                }
            }
        }));
    }
    while !term.load(Ordering::SeqCst) {
        std::thread::sleep(Duration::from_millis(20));
    }
    logging::info("cmd", "Received SIGTERM, shutting down");
    if knobs.ignore_sigterm == Some(true) {
        // Stuck in shutdown: only SIGKILL ends this process.
        loop {
            std::thread::sleep(Duration::from_secs(3600));
        }
    }
    // No new requests; one waiting for a compaction is answered once its job ends.
    stop.store(true, Ordering::SeqCst);
    logging::info("servers::http", "Shutdown HTTP server");
    logging::info("mito2::worker", "Stop region worker group");
    // The real server finishes every running and queued flush/compaction job first (and
    // does not flush memtables: unflushed rows stay in the WAL).
    scheduler.drain();
    for w in workers {
        let _ = w.join();
    }
    drop(server);
    drop(extra);
    logging::info("servers::http", "HTTP server is shutdown");
    drop(shared);
    logging::info(role_target(), &format!("{} instance stopped", role_name()));
    logging::info("cmd", "Goodbye!");
    0
}

/// A child that burns a CPU while the server runs; killed when the server's thread dies
/// (PR_SET_PDEATHSIG) or when it is dropped.
struct BusyChild(std::process::Child);

impl Drop for BusyChild {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

fn busy_child() -> BusyChild {
    use std::os::unix::process::CommandExt;
    let mut cmd = std::process::Command::new("sh");
    cmd.args(["-c", "while :; do :; done"])
        .stdin(std::process::Stdio::null());
    // SAFETY: prctl is async-signal-safe.
    unsafe {
        cmd.pre_exec(|| {
            libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL);
            Ok(())
        });
    }
    BusyChild(cmd.spawn().expect("testbed: spawn the busy child"))
}

#[cfg(test)]
mod tests {
    use super::err_msg_header_value;

    /// v1.0.2's rule: a valid header value goes as it is; anything else is escaped byte by byte
    /// with `escape_default`, the whole message (so its quotes are escaped too).
    #[test]
    fn the_error_header_is_escaped_as_the_real_server_escapes_it() {
        let plain = "Table not found: greptime.public.cpu";
        assert_eq!(err_msg_header_value(plain), plain);
        assert_eq!(
            err_msg_header_value("Failed to plan SQL: No field named \"time\".\nValid fields"),
            "Failed to plan SQL: No field named \\\"time\\\".\\nValid fields"
        );
        assert_eq!(err_msg_header_value("é 'x'"), "\\xc3\\xa9 \\'x\\'");
    }
}
