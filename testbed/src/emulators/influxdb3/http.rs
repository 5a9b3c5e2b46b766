//! The HTTP API (protocols.md §3.2–3.4): routing, auth, headers, and the handlers.

use super::cli::ServeConfig;
use super::lp;
use super::query;
use super::store::{AdminError, LineError, Store, WriteOutcome};
use super::{log, Build, Edition, Knobs};
use std::collections::HashMap;
use std::io::Read;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;
use tiny_http::{Header, Request, Response};

pub struct App {
    build: Build,
    knobs: Knobs,
    cfg: ServeConfig,
    store: Arc<Store>,
    process_id: String,
    writes_seen: AtomicU64,
    requests: AtomicU64,
    /// Allocations refused for lack of pool memory (`query_datafusion_query_execution_ooms_total`).
    query_ooms: AtomicU64,
    in_flight: AtomicUsize,
    /// Set once the final flush is done: durable writers stop waiting.
    pub released: AtomicBool,
}

/// A response before the common headers are added.
pub struct Reply {
    status: u16,
    content_type: Option<&'static str>,
    body: Vec<u8>,
    headers: Vec<(String, String)>,
    /// The error text logged for error responses.
    log_error: Option<String>,
}

/// The header by which the stand-in server tells the stand-in runner that the real server
/// would cut the connection after the body sent (tiny_http cannot close a kept-alive
/// connection mid-answer): the runner then fails as the real Go runner does when the real
/// server cuts it, `unexpected EOF`.
pub const CUT_SHORT_HEADER: &str = "x-testbed-cut-short";

impl Reply {
    /// A 200 whose body the real server would not finish (see [`CUT_SHORT_HEADER`]).
    fn cut_short(partial: Vec<u8>) -> Reply {
        let mut r = Reply::new(200, Some("application/json"), partial);
        r.headers.push((CUT_SHORT_HEADER.into(), "1".into()));
        r
    }

    fn new(status: u16, content_type: Option<&'static str>, body: impl Into<Vec<u8>>) -> Reply {
        Reply {
            status,
            content_type,
            body: body.into(),
            headers: vec![],
            log_error: None,
        }
    }
    fn empty(status: u16) -> Reply {
        Reply::new(status, None, Vec::new())
    }
    fn text(status: u16, body: &str) -> Reply {
        let mut r = Reply::new(status, Some("text/plain; charset=utf-8"), body);
        if status >= 400 {
            r.log_error = Some(body.to_string());
        }
        r
    }
    /// A body without a content type: what the real server's plain `ResponseBuilder` errors
    /// send (3.10.1: `HTTP/1.1 400 Bad Request` with only `cluster-uuid`, `content-length`,
    /// `date`).
    fn bare(status: u16, body: &str) -> Reply {
        let mut r = Reply::new(status, None, body);
        if status >= 400 {
            r.log_error = Some(body.to_string());
        }
        r
    }
    fn json(status: u16, value: &serde_json::Value) -> Reply {
        let mut r = Reply::new(status, Some("application/json"), value.to_string());
        if status >= 400 {
            r.log_error = Some(
                value["error"]
                    .as_str()
                    .map(str::to_string)
                    .unwrap_or_else(|| value.to_string()),
            );
        }
        r
    }
    fn header(mut self, k: &str, v: &str) -> Reply {
        self.headers.push((k.to_string(), v.to_string()));
        self
    }
    fn not_found() -> Reply {
        Reply::text(404, "Not found")
    }
}

/// Decodes an `application/x-www-form-urlencoded` query string.
pub fn parse_query(q: &str) -> HashMap<String, String> {
    fn decode(s: &str) -> String {
        let b = s.as_bytes();
        let mut out = Vec::with_capacity(b.len());
        let mut i = 0;
        while i < b.len() {
            match b[i] {
                b'+' => out.push(b' '),
                b'%' if i + 2 < b.len() => {
                    let hex = std::str::from_utf8(&b[i + 1..i + 3]).unwrap_or("zz");
                    match u8::from_str_radix(hex, 16) {
                        Ok(v) => {
                            out.push(v);
                            i += 2;
                        }
                        Err(_) => out.push(b'%'),
                    }
                }
                c => out.push(c),
            }
            i += 1;
        }
        String::from_utf8_lossy(&out).into_owned()
    }
    q.split('&')
        .filter(|p| !p.is_empty())
        .map(|p| match p.split_once('=') {
            Some((k, v)) => (decode(k), decode(v)),
            None => (decode(p), String::new()),
        })
        .collect()
}

fn parse_bool(v: Option<&String>, default: bool) -> Result<bool, String> {
    match v.map(String::as_str) {
        None => Ok(default),
        Some("true") => Ok(true),
        Some("false") => Ok(false),
        Some(other) => Err(format!(
            "invalid query string: provided string was not `true` or `false`: {other}"
        )),
    }
}

impl App {
    pub fn new(build: Build, knobs: Knobs, cfg: ServeConfig, store: Arc<Store>) -> App {
        App {
            build,
            knobs,
            cfg,
            store,
            process_id: super::uuid(4),
            writes_seen: AtomicU64::new(0),
            requests: AtomicU64::new(0),
            query_ooms: AtomicU64::new(0),
            in_flight: AtomicUsize::new(0),
            released: AtomicBool::new(false),
        }
    }

    pub fn in_flight(&self) -> usize {
        self.in_flight.load(Ordering::SeqCst)
    }

    pub fn handle(&self, mut req: Request) {
        self.in_flight.fetch_add(1, Ordering::SeqCst);
        self.requests.fetch_add(1, Ordering::Relaxed);
        let method = req.method().as_str().to_ascii_uppercase();
        let url = req.url().to_string();
        let (path, query) = match url.split_once('?') {
            Some((p, q)) => (p.to_string(), Some(q.to_string())),
            None => (url.clone(), None),
        };
        let reply = self.route(&method, &path, query.as_deref(), &mut req);
        if let Some(err) = &reply.log_error {
            if reply.status != 401 {
                // `error` is a Display field (`%e`): tracing writes it unquoted, newlines and
                // all (fixtures influxdb3-real/ext-filelimit-server.log).
                log(
                    "ERROR",
                    "influxdb3_server::http",
                    &format!("Error while handling request error={err}"),
                    &[("method", method.clone()), ("path", path.clone())],
                );
            }
        }
        let mut resp = Response::from_data(reply.body).with_status_code(reply.status);
        let mut add = |k: &str, v: &str| {
            if let Ok(h) = Header::from_bytes(k.as_bytes(), v.as_bytes()) {
                resp.add_header(h);
            }
        };
        if let Some(ct) = reply.content_type {
            add("Content-Type", ct);
        }
        add("cluster-uuid", &self.store.catalog_uuid());
        if reply.status < 400 {
            add("access-control-allow-origin", "*");
        }
        for (k, v) in &reply.headers {
            add(k, v);
        }
        let _ = req.respond(resp);
        self.in_flight.fetch_sub(1, Ordering::SeqCst);
    }

    fn header<'a>(req: &'a Request, name: &str) -> Option<&'a str> {
        req.headers()
            .iter()
            .find(|h| h.field.as_str().as_str().eq_ignore_ascii_case(name))
            .map(|h| h.value.as_str())
    }

    fn authorize(&self, path: &str, req: &Request) -> Option<Reply> {
        if self.cfg.without_auth {
            return None;
        }
        let exempt = match path {
            "/health" | "/api/v1/health" => "health",
            "/ping" => "ping",
            "/metrics" => "metrics",
            _ => "",
        };
        if !exempt.is_empty() && self.cfg.disable_authz.iter().any(|d| d == exempt) {
            return None;
        }
        // The real body has a space after the colon.
        let unauthenticated = || {
            Reply::new(
                401,
                Some("application/json"),
                r#"{"error": "the request was not authenticated"}"#,
            )
        };
        let Some(h) = Self::header(req, "authorization") else {
            return Some(unauthenticated());
        };
        let token = match h.split_once(' ') {
            Some(("Bearer" | "Token", t)) if !t.trim().is_empty() => t.trim().to_string(),
            Some(("Basic", b)) => {
                let decoded = super::b64url_decode(
                    &b.trim()
                        .replace('+', "-")
                        .replace('/', "_")
                        .replace('=', ""),
                )
                .and_then(|d| String::from_utf8(d).ok());
                match decoded.and_then(|d| d.split_once(':').map(|(_, p)| p.to_string())) {
                    Some(p) => p,
                    None => {
                        return Some(Reply::json(
                            400,
                            &serde_json::json!({"error": "malformed authorization header"}),
                        ))
                    }
                }
            }
            _ => {
                return Some(Reply::json(
                    400,
                    &serde_json::json!({"error": "malformed authorization header"}),
                ))
            }
        };
        match &self.knobs.admin_token {
            Some(t) if *t == token => None,
            _ => Some(unauthenticated()),
        }
    }

    fn route(&self, method: &str, path: &str, query: Option<&str>, req: &mut Request) -> Reply {
        if method == "OPTIONS" {
            return Reply::empty(204)
                .header(
                    "access-control-allow-methods",
                    "GET, POST, PUT, DELETE, OPTIONS",
                )
                .header("access-control-allow-headers", "*")
                .header("access-control-max-age", "86400");
        }
        if let Some(r) = self.authorize(path, req) {
            return r;
        }
        match (method, path) {
            ("GET", "/health" | "/api/v1/health") => Reply::text(200, "OK"),
            ("GET" | "POST", "/ping") => self.ping(),
            ("GET", "/metrics") => self.metrics(),
            ("GET" | "POST" | "DELETE", "/api/v3/configure/database") => {
                self.configure_database(method, query, req)
            }
            ("POST", "/api/v3/write_lp") => self.write_lp(query, req),
            ("GET" | "POST", "/api/v3/query_sql") => self.query_sql(method, query, req),
            _ => Reply::not_found(),
        }
    }

    fn ping(&self) -> Reply {
        let body = serde_json::json!({
            "product_name": self.build.edition.product_name(),
            "version": self.build.version,
            "revision": self.build.short_revision(),
            "process_id": self.process_id,
        });
        let rid = super::uuid(7);
        Reply::json(200, &body)
            .header("X-Influxdb-Version", &self.build.version)
            .header("X-Influxdb-Build", self.build.edition.word())
            .header("Request-Id", &rid)
            .header("X-Request-Id", &rid)
    }

    fn metrics(&self) -> Reply {
        let body = format!(
            "# HELP http_requests_total Total HTTP requests.\n# TYPE http_requests_total counter\nhttp_requests_total {}\n# HELP influxdb3_write_requests_total Write requests.\n# TYPE influxdb3_write_requests_total counter\ninfluxdb3_write_requests_total {}\n# HELP influxdb3_buffered_rows Rows held in the write buffer.\n# TYPE influxdb3_buffered_rows gauge\ninfluxdb3_buffered_rows {}\n# HELP datafusion_mem_pool_bytes Number of bytes within the datafusion memory pool\n# TYPE datafusion_mem_pool_bytes gauge\ndatafusion_mem_pool_bytes{{state=\"limit\"}} {}\ndatafusion_mem_pool_bytes{{state=\"reserved\"}} 0\n# HELP query_datafusion_query_execution_ooms_total Number of OOMs encountered by the query engine\n# TYPE query_datafusion_query_execution_ooms_total counter\nquery_datafusion_query_execution_ooms_total {}\n{}# EOF\n",
            self.requests.load(Ordering::Relaxed),
            self.writes_seen.load(Ordering::Relaxed),
            self.store.row_count(),
            self.cfg.exec_mem_pool_bytes,
            self.query_ooms.load(Ordering::Relaxed),
            crate::emulators::jemalloc_metrics()
        );
        Reply::new(200, Some("text/plain; version=0.0.4; charset=utf-8"), body)
    }

    fn read_body(req: &mut Request, limit: usize) -> Result<Vec<u8>, Reply> {
        let mut body = Vec::new();
        req.as_reader()
            .take(limit as u64 + 1)
            .read_to_end(&mut body)
            .map_err(|e| Reply::text(400, &format!("error reading request body: {e}")))?;
        Ok(body)
    }

    fn configure_database(&self, method: &str, query: Option<&str>, req: &mut Request) -> Reply {
        match method {
            "GET" => {
                // The real handler decodes the query string (empty when absent) with
                // serde_urlencoded: 400 `serde error: ...`, no content type.
                let missing = || Reply::bare(400, "serde error: missing field `format`");
                let Some(q) = query else {
                    return missing();
                };
                let params = parse_query(q);
                match params.get("format").map(String::as_str) {
                    Some("json") => {}
                    Some(other) => {
                        return Reply::text(
                            400,
                            &format!(
                                "invalid format: {other}; only json is supported by this emulator"
                            ),
                        )
                    }
                    None => return missing(),
                }
                let show_deleted = match parse_bool(params.get("show_deleted"), false) {
                    Ok(b) => b,
                    Err(e) => return Reply::text(400, &e),
                };
                let list: Vec<serde_json::Value> = self
                    .store
                    .list(show_deleted)
                    .into_iter()
                    .map(|(name, deleted)| {
                        if show_deleted {
                            serde_json::json!({"iox::database": name, "deleted": deleted})
                        } else {
                            serde_json::json!({"iox::database": name})
                        }
                    })
                    .collect();
                Reply::json(200, &serde_json::Value::Array(list))
            }
            "POST" => {
                let body = match Self::read_body(req, self.cfg.max_request_size) {
                    Ok(b) => b,
                    Err(r) => return r,
                };
                #[derive(serde::Deserialize)]
                struct Create {
                    db: String,
                    #[allow(dead_code)]
                    retention_period: Option<String>,
                }
                let create: Create = match serde_json::from_slice(&body) {
                    Ok(c) => c,
                    Err(e) => return Reply::text(400, &format!("serde json error: {e}")),
                };
                match self.store.create(&create.db) {
                    Ok(()) => Reply::empty(200),
                    Err(AdminError::Exists) => {
                        Reply::text(409, "attempted to create a resource that already exists")
                    }
                    Err(AdminError::Invalid(m)) => {
                        Reply::json(400, &serde_json::json!({"error": m}))
                    }
                    Err(AdminError::NotFound) => Reply::not_found(),
                }
            }
            _ => {
                let Some(q) = query else {
                    return Reply::text(400, "missing query parameter 'db'");
                };
                let params = parse_query(q);
                let Some(db) = params.get("db") else {
                    return Reply::text(400, "missing query parameter 'db'");
                };
                let hard = match params.get("hard_delete_at").map(String::as_str) {
                    None | Some("never") | Some("default") => false,
                    Some("now") => true,
                    Some(t) => match time::OffsetDateTime::parse(
                        t,
                        &time::format_description::well_known::Rfc3339,
                    ) {
                        Ok(when) => when <= time::OffsetDateTime::now_utc(),
                        Err(_) => {
                            return Reply::text(400, &format!("invalid hard_delete_at value: {t}"))
                        }
                    },
                };
                match self.store.delete(db, hard) {
                    Ok(()) => Reply::empty(200),
                    Err(AdminError::NotFound) => {
                        Reply::text(404, &format!("database not found: {db}"))
                    }
                    Err(AdminError::Invalid(m)) => {
                        Reply::json(400, &serde_json::json!({"error": m}))
                    }
                    Err(AdminError::Exists) => {
                        Reply::text(409, "attempted to create a resource that already exists")
                    }
                }
            }
        }
    }

    fn write_lp(&self, query: Option<&str>, req: &mut Request) -> Reply {
        let n = self.writes_seen.fetch_add(1, Ordering::SeqCst);
        let Some(q) = query else {
            return Reply::text(400, "missing query parameter 'db'");
        };
        let params = parse_query(q);
        let Some(db) = params.get("db").cloned() else {
            return Reply::text(400, "missing query parameter 'db'");
        };
        if !super::store::valid_db_name(&db) {
            return Reply::json(
                400,
                &serde_json::json!({"error": format!("invalid character in database or rp name: {db}")}),
            );
        }
        let precision = params
            .get("precision")
            .cloned()
            .unwrap_or_else(|| "auto".into());
        if !matches!(
            precision.as_str(),
            "auto"
                | "second"
                | "s"
                | "millisecond"
                | "ms"
                | "microsecond"
                | "us"
                | "u"
                | "nanosecond"
                | "ns"
                | "n"
        ) {
            return Reply::text(
                400,
                &format!("invalid query string: unknown precision: {precision}"),
            );
        }
        let accept_partial = match parse_bool(params.get("accept_partial"), true) {
            Ok(b) => b,
            Err(e) => return Reply::text(400, &e),
        };
        let no_sync = match parse_bool(params.get("no_sync"), false) {
            Ok(b) => b,
            Err(e) => return Reply::text(400, &e),
        };
        if n < self.knobs.write_reject_first {
            let status = self.knobs.write_reject_status.unwrap_or(429);
            let mut r = if status == 503 {
                Reply::text(503, "service unavailable, please try again later")
            } else {
                Reply::text(status, "this service is overloaded, please try again later")
            };
            if let Some(ra) = &self.knobs.write_retry_after {
                r = r.header("Retry-After", ra);
            }
            return r;
        }
        let gzip =
            match Self::header(req, "content-encoding").map(|s| s.trim().to_ascii_lowercase()) {
                None => false,
                Some(e) if e == "identity" => false,
                Some(e) if e == "gzip" => true,
                Some(e) => return Reply::text(400, &format!("unacceptable content-encoding: {e}")),
            };
        let limit = self.cfg.max_request_size;
        let too_big = || Reply::text(413, &format!("max request size ({limit} bytes) exceeded"));
        let raw = match Self::read_body(req, if gzip { usize::MAX - 1 } else { limit }) {
            Ok(b) => b,
            Err(r) => return r,
        };
        let body = if gzip {
            let mut out = Vec::new();
            if let Err(e) = flate2::read::GzDecoder::new(&raw[..])
                .take(limit as u64 + 1)
                .read_to_end(&mut out)
            {
                return Reply::text(400, &format!("error decoding gzip stream: {e}"));
            }
            out
        } else {
            raw
        };
        if body.len() > limit {
            return too_big();
        }
        let Ok(text) = String::from_utf8(body) else {
            return Reply::text(400, "body contents must be valid UTF-8");
        };
        let mut lines = Vec::new();
        for (i, raw_line) in text.split('\n').enumerate() {
            let l = raw_line.trim_end_matches('\r');
            let t = l.trim_start();
            if t.is_empty() || t.starts_with('#') {
                continue;
            }
            lines.push((i + 1, l, lp::parse_line(t)));
        }
        if lines.is_empty() {
            return Reply::text(
                400,
                "no data in request body: at least one line of line protocol is required",
            );
        }
        let now = time::OffsetDateTime::now_utc().unix_timestamp_nanos() as i64;
        let outcome = match self
            .store
            .write(&db, lines, &precision, accept_partial, now)
        {
            Ok(o) => o,
            Err(e) => return Reply::text(500, &format!("write buffer error: {e}")),
        };
        let errs = |e: &[LineError]| -> Vec<serde_json::Value> {
            e.iter()
                .map(|e| {
                    serde_json::json!({
                        "original_line": e.original_line,
                        "line_number": e.line_number,
                        "error_message": e.error_message,
                    })
                })
                .collect()
        };
        match outcome {
            WriteOutcome::Deleted => Reply::json(
                400,
                &serde_json::json!({"error": format!("write to a deleted database is not allowed: {db}")}),
            ),
            WriteOutcome::Rejected(e) if !accept_partial => Reply::json(
                400,
                &serde_json::json!({"error": "line protocol parsing error", "data": errs(&e)[0]}),
            ),
            WriteOutcome::Rejected(e) => Reply::json(
                400,
                &serde_json::json!({"error": "partial write of line protocol occurred", "data": errs(&e)}),
            ),
            WriteOutcome::Written { batch, errors } => {
                if !no_sync {
                    self.store.wait_flushed(batch, &self.released);
                }
                if errors.is_empty() {
                    Reply::empty(204)
                } else {
                    Reply::json(
                        400,
                        &serde_json::json!({"error": "partial write of line protocol occurred", "data": errs(&errors)}),
                    )
                }
            }
        }
    }

    fn query_sql(&self, method: &str, query: Option<&str>, req: &mut Request) -> Reply {
        let (db, q, format) = if method == "POST" {
            let body = match Self::read_body(req, self.cfg.max_request_size) {
                Ok(b) => b,
                Err(r) => return r,
            };
            #[derive(serde::Deserialize)]
            struct Body {
                db: String,
                q: String,
                format: Option<String>,
                #[allow(dead_code)]
                params: Option<serde_json::Value>,
            }
            match serde_json::from_slice::<Body>(&body) {
                Ok(b) => (b.db, b.q, b.format),
                Err(e) => return Reply::text(400, &format!("serde json error: {e}")),
            }
        } else {
            let params = parse_query(query.unwrap_or(""));
            match (params.get("db"), params.get("q")) {
                (Some(db), Some(q)) => (db.clone(), q.clone(), params.get("format").cloned()),
                (None, _) => return Reply::text(400, "invalid query string: missing field `db`"),
                (_, None) => return Reply::text(400, "invalid query string: missing field `q`"),
            }
        };
        let format = match format {
            Some(f) => f,
            None => match Self::header(req, "accept")
                .map(|a| a.split(',').next().unwrap_or("").trim().to_string())
            {
                None => "json".into(),
                Some(a) if a.is_empty() || a == "*/*" || a == "application/json" => "json".into(),
                Some(a) if a == "text/csv" => "csv".into(),
                Some(a) if a == "text/plain" => "pretty".into(),
                Some(a) if a == "application/jsonl" => "jsonl".into(),
                Some(a) => return Reply::text(400, &format!("invalid mime type ({a})")),
            },
        };
        if !matches!(format.as_str(), "json" | "jsonl" | "csv" | "pretty") {
            return Reply::text(
                400,
                &format!("testbed: query output format {format:?} is not emulated"),
            );
        }
        if self.knobs.query_delay_ms > 0 {
            std::thread::sleep(Duration::from_millis(self.knobs.query_delay_ms));
        }
        let lower = q.to_ascii_lowercase();
        if let Some(f) = self
            .knobs
            .query_failures
            .iter()
            .find(|f| lower.contains(&f.contains.to_ascii_lowercase()))
        {
            match f.needs_bytes {
                Some(need) if need <= self.cfg.exec_mem_pool_bytes => {}
                Some(need) => {
                    // What a real 3.10.1 did when its pool ran out while it streamed the
                    // answer (its log, ext-oom run of 2026-12-06): counted, logged, cut.
                    self.query_ooms.fetch_add(1, Ordering::Relaxed);
                    log(
                        "ERROR",
                        "influxdb3_server",
                        &format!(
                            "Error serving connection: hyper::Error(User(Body), Shared(External(Context(\"Execution error for 'deduplicate batches'\", Context(\"Not enough memory to continue external sort. Consider increasing the memory limit, or decreasing sort_spill_reservation_bytes\", ResourcesExhausted(\"Additional allocation failed for ExternalSorter[0] with top memory consumers (across reservations) as:\\n  ExternalSorter[0]#1(can spill: true) consumed {need} B, peak {need} B.\\nError: Failed to allocate additional {need} B for ExternalSorter[0] with 0 B already allocated for this reservation - {} B remain available for the total pool\"))))))",
                            self.cfg.exec_mem_pool_bytes
                        ),
                        &[],
                    );
                    return Reply::cut_short(b"[{\"hostname\":\"host_0\",".to_vec());
                }
                None => {
                    let msg = f.error.clone().unwrap_or_else(|| {
                        "query error: Resources exhausted: Failed to allocate additional 10485760 bytes for GroupedHashAggregateStream[0] with 0 bytes already allocated for this reservation - 1048576 bytes remain available for the total pool".into()
                    });
                    return Reply::json(
                        f.status.unwrap_or(500),
                        &serde_json::json!({"error": msg}),
                    );
                }
            }
        }
        // Core refuses at planning a query that would scan more Parquet files than its limit
        // (src influxdb3_write/src/write_buffer/mod.rs). As 3.10.1 answered: 500, the
        // DataFusion error's text as the body with no content type, and the number in it is
        // the limit (`self.query_file_limit`), not the files the query would scan. The log
        // line has the whole error chain.
        if self.build.edition == Edition::Core {
            let limit = self.knobs.query_file_limit.unwrap_or(432);
            let n = self
                .store
                .with_db(&db, |tables| query::parquet_files_scanned(tables, &q))
                .unwrap_or(0);
            if n > limit {
                let text = format!("External error: Query would scan {limit} Parquet files, exceeding the file limit. InfluxDB 3 Core caps file access to prevent performance degradation and memory issues. Use a narrower time range, or increase the limit with --query-file-limit (this may cause slower queries or instability).\n\nTo remove this limitation, upgrade to InfluxDB 3 Enterprise, which automatically compacts files for efficient querying across any time range. Free for non-commercial and home use, and free trials for commercial evaluation: https://www.influxdata.com/downloads");
                let mut r = Reply::bare(500, &text);
                r.log_error = Some(format!("query error: error while planning query: {text}"));
                return r;
            }
        }
        let slow_count = self.knobs.count_ms_per_1000_rows > 0 && lower.contains("count(");
        let (result, visible) = match self.store.with_db(&db, |tables| {
            let visible: usize = if slow_count {
                tables.iter().map(|(_, td)| td.visible_rows().count()).sum()
            } else {
                0
            };
            (query::execute(tables, &q), visible)
        }) {
            Some((r, v)) => (Some(r), v),
            None => (None, 0),
        };
        // A count reads every visible row: slow in proportion (real 3.10.1 dev build: 61-104 s
        // for 2.6 M rows on 2 shared cores). Its answer is what was visible when it started:
        // rows flushed while it runs are not in it.
        if slow_count {
            std::thread::sleep(Duration::from_millis(
                self.knobs.count_ms_per_1000_rows * visible as u64 / 1000,
            ));
        }
        match result {
            None => Reply::json(
                404,
                &serde_json::json!({"error": format!("query error: database not found: {db}")}),
            ),
            Some(Err(e)) => Reply::text(400, &e),
            Some(Ok(rs)) => {
                let (ct, body) = match format.as_str() {
                    "json" => {
                        let mut body = rs.to_json();
                        if self
                            .knobs
                            .wrong_answers
                            .iter()
                            .any(|w| lower.contains(&w.to_ascii_lowercase()))
                        {
                            body = wrong_answer(&body);
                        }
                        ("application/json", body)
                    }
                    "jsonl" => ("application/jsonl", rs.to_jsonl()),
                    "csv" => ("text/csv", rs.to_csv()),
                    _ => ("text/plain", rs.to_pretty()),
                };
                Reply::new(200, Some(ct), body)
            }
        }
    }
}

/// The `wrong_answers` knob: the first number of the first row, plus one.
fn wrong_answer(body: &str) -> String {
    let Ok(mut v) = serde_json::from_str::<serde_json::Value>(body) else {
        return body.to_string();
    };
    if let Some(row) = v.get_mut(0).and_then(|r| r.as_object_mut()) {
        if let Some(n) = row.values_mut().find(|x| x.is_number()) {
            *n = serde_json::json!(n.as_f64().unwrap_or(0.0) + 1.0);
        }
    }
    v.to_string()
}
