//! `greptime frontend start`: stores nothing; routes writes and SQL to the datanodes through
//! the metasrv's table routes, and answers `information_schema` from the whole cluster.

use std::collections::BTreeMap;
use std::io::Read;
use std::net::{SocketAddr, TcpListener};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use regex::Regex;
use serde_json::{json, Value};
use tiny_http::{Header, Request, Response};

use super::{agent, call_metasrv, heartbeat, metasrv_url, now_ms, HEARTBEAT};
use crate::emulators::greptime::ddl;
use crate::emulators::greptime::lineproto::{self, FieldType};
use crate::emulators::greptime::logging;
use crate::emulators::greptime::partition::{parse_rules, region_of, RuleSet};
use crate::emulators::greptime::server::http_status;
use crate::emulators::greptime::server::write_error;
use crate::emulators::greptime::sql::{self, InfoTable, Output};
use crate::emulators::greptime::store::{series_tag, GtError, PartitionDef};
use crate::emulators::greptime::version::Version;

pub struct Args {
    pub http_addr: SocketAddr,
    pub grpc_bind_addr: SocketAddr,
    pub grpc_server_addr: String,
    pub mysql_addr: SocketAddr,
    pub postgres_addr: SocketAddr,
    pub metasrv_addrs: String,
    pub log_dir: Option<std::path::PathBuf>,
    pub command_line: String,
}

type Resp = Response<std::io::Cursor<Vec<u8>>>;

struct Front {
    agent: ureq::Agent,
    metasrv: String,
    version: Version,
}

fn header(name: &str, value: &str) -> Header {
    Header::from_bytes(name.as_bytes(), value.as_bytes()).expect("valid header")
}

fn json_resp(status: u16, body: Vec<u8>) -> Resp {
    Response::from_data(body)
        .with_status_code(status)
        .with_header(header("content-type", "application/json"))
}

fn sql_error(e: &GtError, elapsed: u64) -> Resp {
    let body = json!({"code": e.code, "error": e.msg, "execution_time_ms": elapsed});
    json_resp(
        http_status(e.code),
        serde_json::to_vec(&body).unwrap_or_default(),
    )
    .with_header(header("x-greptime-err-code", &e.code.to_string()))
    .with_header(header(
        "x-greptime-err-msg",
        &crate::emulators::greptime::server::err_msg_header_value(&e.msg),
    ))
}

fn re(p: &str) -> Regex {
    Regex::new(p).expect("static regex")
}

pub fn run(a: Args, version: Version) -> i32 {
    sql::mark_started();
    if let Err(e) = logging::init(a.log_dir.clone()) {
        eprintln!("Error: failed to create log dir: {e}");
        return 1;
    }
    let Some(base) = metasrv_url(&a.metasrv_addrs) else {
        eprintln!("error: a frontend needs --metasrv-addrs");
        return 2;
    };
    let term = Arc::new(AtomicBool::new(false));
    for sig in [signal_hook::consts::SIGTERM, signal_hook::consts::SIGINT] {
        let _ = signal_hook::flag::register(sig, Arc::clone(&term));
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
        "cmd::frontend",
        &format!("Frontend start command: {}", a.command_line),
    );
    let mut extra = Vec::new();
    for (what, addr) in [
        ("gRPC", a.grpc_bind_addr),
        ("MySQL", a.mysql_addr),
        ("PostgreSQL", a.postgres_addr),
    ] {
        match TcpListener::bind(addr) {
            Ok(l) => extra.push(l),
            Err(e) => {
                logging::error(
                    "greptime",
                    &format!(
                        "Fatal error occurs! err.msg=Failed to bind {what} server at {addr}: {e}"
                    ),
                );
                return 1;
            }
        }
    }
    let server = match tiny_http::Server::http(a.http_addr) {
        Ok(s) => Arc::new(s),
        Err(e) => {
            logging::error(
                "greptime",
                &format!(
                    "Fatal error occurs! err.msg=Failed to bind HTTP server at {}: {e}",
                    a.http_addr
                ),
            );
            return 1;
        }
    };
    logging::info(
        "servers::grpc",
        &format!("gRPC server is bound to {}", a.grpc_bind_addr),
    );
    logging::info(
        "servers::http",
        &format!("HTTP server is bound to {}", a.http_addr),
    );
    let node = json!({
        "peer_id": -1,
        "peer_type": "FRONTEND",
        "peer_addr": a.grpc_server_addr,
        "http_addr": a.http_addr.to_string(),
        "version": version.text(),
        "git_commit": version.commit(),
        "start_time": now_ms(),
    });
    {
        let base = base.clone();
        std::thread::spawn(move || {
            let agent = agent();
            let mut failing = false;
            loop {
                match heartbeat(&agent, &base, &node) {
                    Ok(()) => failing = false,
                    Err(e) if !failing => {
                        failing = true;
                        logging::log(
                            "WARN",
                            "frontend::heartbeat",
                            &format!("Failed to send heartbeat to metasrv: {e}"),
                        );
                    }
                    Err(_) => {}
                }
                std::thread::sleep(HEARTBEAT);
            }
        });
    }
    let front = Arc::new(Front {
        agent: agent(),
        metasrv: base,
        version,
    });
    let stop = Arc::new(AtomicBool::new(false));
    let mut workers = Vec::new();
    for _ in 0..16 {
        let (server, front, stop) = (Arc::clone(&server), Arc::clone(&front), Arc::clone(&stop));
        workers.push(std::thread::spawn(move || {
            while !stop.load(Ordering::SeqCst) {
                match server.recv_timeout(Duration::from_millis(50)) {
                    Ok(Some(req)) => front.handle(req),
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
    stop.store(true, Ordering::SeqCst);
    logging::info("servers::http", "Shutdown HTTP server");
    for w in workers {
        let _ = w.join();
    }
    drop(extra);
    logging::info("cmd::frontend", "Frontend instance stopped");
    logging::info("cmd", "Goodbye!");
    0
}

/// Where one statement goes.
enum Dest {
    /// Any datanode (the first alive).
    Any,
    /// Every datanode (database DDL); the first answer is returned.
    All,
    /// The datanode of a table; `create` places a new one.
    Table {
        db: String,
        table: String,
        create: bool,
    },
    /// `information_schema.<t>`, gathered.
    Info,
    /// `SHOW TABLES`: the union over the datanodes.
    ShowTables,
}

fn destination(stmt: &str, db: &str) -> Dest {
    let lower = stmt.to_ascii_lowercase();
    let split = |name: &str| -> (String, String) {
        let name = name.trim_matches(|c| c == '"' || c == '`');
        match name.split_once('.') {
            Some((d, t)) => (d.to_string(), t.to_string()),
            None => (db.to_string(), name.to_string()),
        }
    };
    let table = |name: &str, create: bool| {
        let (db, table) = split(name);
        Dest::Table { db, table, create }
    };
    if re(r"(?is)\bfrom\s+information_schema\.").is_match(stmt) {
        return Dest::Info;
    }
    if re(r"(?is)^(create|drop)\s+(database|schema)\b").is_match(stmt) {
        return Dest::All;
    }
    if re(r"(?is)^show\s+tables\b").is_match(stmt) {
        return Dest::ShowTables;
    }
    if let Some(c) =
        re(r#"(?is)^create\s+table\s+(?:if\s+not\s+exists\s+)?([\w."`]+)"#).captures(stmt)
    {
        return table(&c[1], true);
    }
    if let Some(c) = re(r#"(?is)^alter\s+table\s+([\w."`]+)"#).captures(stmt) {
        return table(&c[1], false);
    }
    if let Some(c) = re(r"(?is)^admin\s+\w+\s*\(\s*'([^']+)'").captures(stmt) {
        return table(&c[1], false);
    }
    if let Some(c) = re(r#"(?is)^(?:desc|describe)\s+(?:table\s+)?([\w."`]+)"#).captures(stmt) {
        return table(&c[1], false);
    }
    if let Some(c) = re(r#"(?is)^show\s+create\s+table\s+([\w."`]+)"#).captures(stmt) {
        return table(&c[1], false);
    }
    if lower.starts_with("select")
        || lower.starts_with("explain")
        || lower.starts_with("drop table")
    {
        let r = if lower.starts_with("drop table") {
            re(r#"(?is)^drop\s+table\s+(?:if\s+exists\s+)?([\w."`]+)"#)
        } else {
            re(r#"(?is)\bfrom\s+([\w."`]+)"#)
        };
        if let Some(c) = r.captures(stmt) {
            return table(&c[1], false);
        }
    }
    Dest::Any
}

/// One datanode's answer: HTTP status and JSON body.
struct Answer {
    status: u16,
    body: Value,
}

impl Answer {
    /// The body of an answer below 400, else the datanode's error.
    fn ok_body(self) -> Result<Value, GtError> {
        if self.status >= 400 {
            return Err(GtError::new(
                self.body["code"].as_u64().unwrap_or(1003) as u32,
                self.body["error"]
                    .as_str()
                    .unwrap_or("datanode error")
                    .to_string(),
            ));
        }
        Ok(self.body)
    }
}

impl Front {
    fn handle(&self, mut req: Request) {
        let url = req.url().to_string();
        let (path, query) = url.split_once('?').unwrap_or((url.as_str(), ""));
        let method = req.method().as_str().to_ascii_uppercase();
        let resp = match path {
            "/health" | "/ready" | "/v1/health" => json_resp(200, b"{}".to_vec())
                .with_header(header("access-control-allow-origin", "*")),
            "/status" => json_resp(
                200,
                serde_json::to_vec(&json!({
                    "source_time": "", "commit": self.version.commit(), "branch": "",
                    "rustc_version": "rustc 1.87.0-nightly", "hostname": "localhost",
                    "version": self.version.text(),
                }))
                .unwrap_or_default(),
            ),
            "/metrics" => {
                let mut body = format!(
                    "# HELP greptime_app_version app version\n# TYPE greptime_app_version gauge\ngreptime_app_version{{app=\"greptime-frontend\",short_version=\"{}\",version=\"{}\"}} 1\n",
                    self.version.text(),
                    self.version.text()
                );
                body.push_str(&crate::emulators::process_metrics());
                Response::from_data(body.into_bytes())
            }
            "/v1/sql" => self.sql(&mut req, query, method == "POST"),
            "/v1/influxdb/write" | "/v1/influxdb/api/v2/write" if method == "POST" => {
                self.write(&mut req, path, query)
            }
            "/v1/influxdb/ping" => Response::from_data(Vec::new()).with_status_code(204),
            _ => Response::from_data(Vec::new()).with_status_code(404),
        };
        let _ = req.respond(resp);
    }

    fn nodes(&self) -> Result<Vec<Value>, GtError> {
        call_metasrv(&self.agent, &self.metasrv, "/testbed/nodes", None)
            .map_err(|e| GtError::new(1003, format!("Failed to get cluster nodes: {e}")))
            .map(|v| v.as_array().cloned().unwrap_or_default())
    }

    fn datanodes(&self) -> Result<Vec<String>, GtError> {
        let d: Vec<String> = super::metasrv::datanodes_of(&self.nodes()?)
            .iter()
            .filter_map(|n| n["http_addr"].as_str().map(str::to_string))
            .collect();
        if d.is_empty() {
            return Err(GtError::new(
                1003,
                "Failed to find available datanode: no datanode is registered with the metasrv",
            ));
        }
        Ok(d)
    }

    /// Where the regions of `db.table` are (`None`: no such table). With `create`, a new
    /// table is placed: `regions` regions, split by `partition` (a created table's rules).
    fn route(
        &self,
        db: &str,
        table: &str,
        create: bool,
        regions: usize,
        partition: Option<&PartitionDef>,
    ) -> Result<Option<Route>, GtError> {
        let v = call_metasrv(
            &self.agent,
            &self.metasrv,
            "/testbed/route",
            Some(json!({"db": db, "table": table, "create": create, "regions": regions, "partition": partition})),
        )
        .map_err(|e| GtError::new(1003, format!("Failed to find table route: {e}")))?;
        if v["found"] != true {
            return Ok(None);
        }
        let peers: Vec<String> = v["peers"]
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(|p| p["http_addr"].as_str().map(str::to_string))
            .collect();
        if peers.is_empty() {
            return Ok(None);
        }
        let rules = serde_json::from_value::<Option<PartitionDef>>(v["partition"].clone())
            .ok()
            .flatten()
            .and_then(|p| parse_rules(&p.columns, &p.rules.join(",\n")).ok());
        Ok(Some(Route {
            peers,
            rules,
            created: v["created"] == true,
        }))
    }

    fn forward_sql(&self, dn: &str, stmt: &str, db: &str) -> Answer {
        self.forward_sql_with(dn, stmt, db, &[])
    }

    /// [`Front::forward_sql`] with testbed-only parameters for the datanode (placement,
    /// peers: see `server.rs`).
    fn forward_sql_with(&self, dn: &str, stmt: &str, db: &str, extra: &[(&str, &str)]) -> Answer {
        let mut form = vec![("sql", stmt), ("db", db)];
        form.extend_from_slice(extra);
        let r = self
            .agent
            .post(&format!("http://{dn}/v1/sql"))
            .send_form(&form);
        match r {
            Ok(r) => Answer {
                status: r.status(),
                body: r.into_json().unwrap_or(Value::Null),
            },
            Err(ureq::Error::Status(code, r)) => Answer {
                status: code,
                body: r.into_json().unwrap_or(Value::Null),
            },
            Err(e) => {
                let err = GtError::new(1003, format!("Failed to request datanode {dn}: {e}"));
                Answer {
                    status: http_status(err.code),
                    body: json!({"code": err.code, "error": err.msg}),
                }
            }
        }
    }

    fn sql(&self, req: &mut Request, query: &str, post: bool) -> Resp {
        let start = Instant::now();
        let mut q: BTreeMap<String, String> = url::form_urlencoded::parse(query.as_bytes())
            .map(|(k, v)| (k.into_owned(), v.into_owned()))
            .collect();
        if post {
            let mut body = Vec::new();
            let _ = req.as_reader().read_to_end(&mut body);
            for (k, v) in url::form_urlencoded::parse(&body) {
                q.entry(k.into_owned()).or_insert(v.into_owned());
            }
        }
        let db = q.get("db").cloned().unwrap_or_else(|| "public".into());
        let Some(text) = q.get("sql") else {
            return sql_error(&GtError::new(1004, "sql parameter is required."), 0);
        };
        let mut outputs = Vec::new();
        for stmt in sql::statements(text) {
            match self.statement(&stmt, &db) {
                Ok(o) => outputs.push(o),
                Err(a) if a.status >= 400 => {
                    return json_resp(a.status, serde_json::to_vec(&a.body).unwrap_or_default())
                }
                Err(a) => outputs.push(a.body),
            }
        }
        let elapsed = start.elapsed().as_millis() as u64;
        let body = json!({"output": outputs, "execution_time_ms": elapsed});
        json_resp(200, serde_json::to_vec(&body).unwrap_or_default())
            .with_header(header("x-greptime-format", "greptimedb_v1"))
            .with_header(header("x-greptime-execution-time", &elapsed.to_string()))
    }

    /// Sends `stmt` to each of `dns` (at least one) in turn, with `extra(dn)`'s parameters:
    /// the first failing answer, else the first answer.
    fn to_each(
        &self,
        dns: &[String],
        stmt: &str,
        db: &str,
        extra: impl Fn(&str) -> Vec<(&'static str, String)>,
    ) -> Result<Answer, Answer> {
        let mut first = None;
        for dn in dns {
            let params = extra(dn);
            let params: Vec<(&str, &str)> = params.iter().map(|(k, v)| (*k, v.as_str())).collect();
            let a = self.forward_sql_with(dn, stmt, db, &params);
            if a.status >= 400 {
                return Err(a);
            }
            first.get_or_insert(a);
        }
        Ok(first.expect("at least one datanode"))
    }

    /// The output object of one statement, or the failing answer.
    fn statement(&self, stmt: &str, db: &str) -> Result<Value, Answer> {
        let fail = |e: GtError| Answer {
            status: http_status(e.code),
            body: json!({"code": e.code, "error": e.msg}),
        };
        let first_output = |a: Answer| -> Result<Value, Answer> {
            if a.status >= 400 {
                return Err(a);
            }
            Ok(a.body["output"][0].clone())
        };
        match destination(stmt, db) {
            Dest::Any => {
                let dn = self.datanodes().map_err(fail)?;
                first_output(self.forward_sql(&dn[0], stmt, db))
            }
            Dest::All => {
                let dns = self.datanodes().map_err(fail)?;
                let first = self.to_each(&dns, stmt, db, |_| Vec::new())?;
                if re(r"(?is)^drop\s+(database|schema)\s+(?:if\s+exists\s+)?([\w]+)")
                    .captures(stmt)
                    .is_some()
                {
                    let name = re(r"(?is)^drop\s+(?:database|schema)\s+(?:if\s+exists\s+)?([\w]+)")
                        .captures(stmt)
                        .map(|c| c[1].to_string())
                        .unwrap_or_default();
                    let _ = call_metasrv(
                        &self.agent,
                        &self.metasrv,
                        "/testbed/drop-database",
                        Some(json!({ "db": name })),
                    );
                }
                first_output(first)
            }
            Dest::Table {
                db: tdb,
                table,
                create,
            } => {
                // A table to create: its regions and rules first (a statement the datanode
                // refuses is refused before anything is placed).
                let created = if create {
                    match ddl::parse_create(stmt) {
                        Ok(c) => Some(c),
                        Err(_) => {
                            let dn = self.datanodes().map_err(fail)?.remove(0);
                            return first_output(self.forward_sql(&dn, stmt, db));
                        }
                    }
                } else {
                    None
                };
                let regions = created
                    .as_ref()
                    .map_or(1, |c| c.meta.region_numbers().len());
                let partition = created.as_ref().and_then(|c| c.meta.partition.as_ref());
                let Some(route) = self
                    .route(&tdb, &table, create, regions, partition)
                    .map_err(fail)?
                else {
                    // Unknown table: any datanode answers "Table not found" as the real one.
                    let dn = self.datanodes().map_err(fail)?.remove(0);
                    return first_output(self.forward_sql(&dn, stmt, db));
                };
                let holders = route.holders();
                if route.created {
                    // One table id for all its datanodes; each opens its own regions.
                    let id = call_metasrv(
                        &self.agent,
                        &self.metasrv,
                        "/testbed/table-id",
                        Some(json!({})),
                    )
                    .ok()
                    .and_then(|v| v["table_id"].as_u64())
                    .ok_or_else(|| fail(GtError::new(1003, "Failed to allocate table id")))?
                    .to_string();
                    let first = self.to_each(&holders, stmt, db, |dn| {
                        let numbers: Vec<String> = route
                            .peers
                            .iter()
                            .enumerate()
                            .filter(|(_, p)| *p == dn)
                            .map(|(n, _)| n.to_string())
                            .collect();
                        vec![
                            ("testbed_table_id", id.clone()),
                            ("testbed_regions", numbers.join(",")),
                        ]
                    })?;
                    return first_output(first);
                }
                let lower = stmt.to_ascii_lowercase();
                if lower.starts_with("admin")
                    || lower.starts_with("drop")
                    || lower.starts_with("alter")
                {
                    // Flush, compaction, drop: every datanode of the table does its regions;
                    // a new column reaches every datanode of the table (the real ALTER is one
                    // DDL procedure over all the regions). The first refusal stops it: an
                    // existing column is refused by the first datanode, before any change.
                    return first_output(self.to_each(&holders, stmt, db, |_| Vec::new())?);
                }
                // A query: the first datanode answers, reading the others' regions too.
                let others = holders[1..].join(",");
                first_output(self.forward_sql_with(
                    &holders[0],
                    stmt,
                    db,
                    &[("testbed_peers", &others)],
                ))
            }
            Dest::ShowTables => {
                let mut names = std::collections::BTreeSet::new();
                let mut columns = Value::Null;
                for dn in self.datanodes().map_err(fail)? {
                    let o = first_output(self.forward_sql(&dn, stmt, db))?;
                    columns = o["records"]["schema"].clone();
                    for r in o["records"]["rows"].as_array().into_iter().flatten() {
                        if let Some(n) = r[0].as_str() {
                            names.insert(n.to_string());
                        }
                    }
                }
                let rows: Vec<Value> = names.into_iter().map(|n| json!([n])).collect();
                Ok(json!({"records": {"schema": columns, "total_rows": rows.len(), "rows": rows}}))
            }
            Dest::Info => {
                let out =
                    sql::select_information_from(stmt, |t| self.gather(t, db)).map_err(fail)?;
                Ok(output_json(out))
            }
        }
    }

    /// `information_schema.<t>` of the whole cluster.
    fn gather(&self, table: &str, db: &str) -> Result<InfoTable, GtError> {
        if table == "cluster_info" {
            return self.cluster_info();
        }
        let mut cols: Vec<(String, String)> = Vec::new();
        let mut rows: Vec<Vec<Value>> = Vec::new();
        if table == "region_statistics" {
            // The real frontend asks the metasrv, which knows what each datanode sent in its
            // last heartbeat: right after a write the rows lag (a real v1.0.2 cluster showed
            // 51,600 of 86,400 rows at once after a load).
            for n in super::metasrv::datanodes_of(&self.nodes()?) {
                let rec = &n["region_statistics"];
                if let Some(c) = rec["schema"]["column_schemas"].as_array() {
                    cols = c
                        .iter()
                        .map(|c| {
                            (
                                c["name"].as_str().unwrap_or_default().to_string(),
                                c["data_type"].as_str().unwrap_or_default().to_string(),
                            )
                        })
                        .collect();
                }
                for r in rec["rows"].as_array().into_iter().flatten() {
                    rows.push(r.as_array().cloned().unwrap_or_default());
                }
            }
            if cols.is_empty() {
                // No heartbeat has carried statistics yet: the metasrv knows no region.
                cols = self
                    .version
                    .region_statistics_columns()
                    .into_iter()
                    .map(|(n, t)| (n.to_string(), t.to_string()))
                    .collect();
            }
            return Ok((cols, rows));
        }
        for dn in self.datanodes()? {
            let body = self
                .forward_sql(
                    &dn,
                    &format!("SELECT * FROM information_schema.{table}"),
                    db,
                )
                .ok_body()?;
            let rec = &body["output"][0]["records"];
            cols = rec["schema"]["column_schemas"]
                .as_array()
                .into_iter()
                .flatten()
                .map(|c| {
                    (
                        c["name"].as_str().unwrap_or_default().to_string(),
                        c["data_type"].as_str().unwrap_or_default().to_string(),
                    )
                })
                .collect();
            for r in rec["rows"].as_array().into_iter().flatten() {
                let row: Vec<Value> = r.as_array().cloned().unwrap_or_default();
                // What every datanode knows (databases, build info, the tables and the
                // partitions of a table spread over several): listed once.
                if rows.contains(&row) {
                    continue;
                }
                rows.push(row);
            }
        }
        // Each datanode lists the regions it holds: in region order, as the real table route.
        if let Some(i) = cols.iter().position(|(c, _)| c == "region_id") {
            if table == "region_peers" {
                rows.sort_by_key(|r| r.get(i).and_then(Value::as_u64).unwrap_or(0));
            }
        }
        Ok((cols, rows))
    }

    /// The metasrv's view: METASRV (peer 0), every DATANODE (its node id) and FRONTEND (-1)
    /// heard from within the lease.
    fn cluster_info(&self) -> Result<InfoTable, GtError> {
        let cols = [
            ("peer_id", "Int64"),
            ("peer_type", "String"),
            ("peer_addr", "String"),
            ("version", "String"),
            ("git_commit", "String"),
            ("start_time", "TimestampMillisecond"),
            ("uptime", "String"),
            ("active_time", "String"),
        ]
        .iter()
        .map(|(a, b)| (a.to_string(), b.to_string()))
        .collect();
        let now = now_ms();
        let rows = self
            .nodes()?
            .into_iter()
            .map(|n| {
                let start = n["start_time"].as_i64().unwrap_or(now);
                vec![
                    n["peer_id"].clone(),
                    n["peer_type"].clone(),
                    n["peer_addr"].clone(),
                    n["version"].clone(),
                    n["git_commit"].clone(),
                    json!(start),
                    json!(format!("{}s", (now - start).max(0) / 1000)),
                    match n["active_ms_ago"].as_i64() {
                        Some(ms) => json!(format!("{ms}ms")),
                        None => Value::Null,
                    },
                ]
            })
            .collect();
        Ok((cols, rows))
    }

    /// Adds to a table spread over several datanodes (`holders`, region 0's first) the columns
    /// a write brings that it lacks, on every one of them, before any row is written: the real
    /// frontend alters the table once for all its regions (`operator/src/insert.rs`
    /// `create_or_alter_tables_on_demand`: `ADD COLUMN IF NOT EXISTS`, nullable, a tag into the
    /// primary key), where each datanode would otherwise add a column to its own copy only.
    fn add_missing_columns(
        &self,
        db: &str,
        table: &str,
        holders: &[String],
        brought: &[(String, Option<FieldType>)],
    ) -> Result<(), GtError> {
        let Some(name) = table_ident(table) else {
            return Ok(());
        };
        let desc = self
            .forward_sql(&holders[0], &format!("DESC TABLE {name}"), db)
            .ok_body()?;
        let known: Vec<&str> = desc["output"][0]["records"]["rows"]
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(|r| r[0].as_str())
            .collect();
        let clauses: Vec<String> = brought
            .iter()
            .filter(|(c, _)| !known.contains(&c.as_str()))
            .map(|(c, ty)| {
                let ty = match ty {
                    None => "STRING PRIMARY KEY",
                    Some(t) => ddl::sql_type(t.name()),
                };
                format!(
                    "ADD COLUMN IF NOT EXISTS \"{}\" {ty}",
                    c.replace('"', "\"\"")
                )
            })
            .collect();
        if clauses.is_empty() {
            return Ok(());
        }
        let stmt = format!("ALTER TABLE {name} {}", clauses.join(", "));
        self.to_each(holders, &stmt, db, |_| Vec::new())
            .map(|_| ())
            .or_else(|a| a.ok_body().map(|_| ()))
    }

    fn write(&self, req: &mut Request, path: &str, query: &str) -> Resp {
        let mut body = Vec::new();
        if req.as_reader().read_to_end(&mut body).is_err() {
            return Response::from_data(Vec::new()).with_status_code(400);
        }
        let gzip = req.headers().iter().any(|h| {
            h.field.equiv("content-encoding") && h.value.as_str().eq_ignore_ascii_case("gzip")
        });
        if gzip {
            let mut plain = Vec::new();
            if flate2::read::GzDecoder::new(&body[..])
                .read_to_end(&mut plain)
                .is_err()
            {
                return json_resp(400, br#"{"error":"Failed to decode gzip body"}"#.to_vec());
            }
            body = plain;
        }
        let params: BTreeMap<String, String> = url::form_urlencoded::parse(query.as_bytes())
            .map(|(k, v)| (k.into_owned(), v.into_owned()))
            .collect();
        let db = params
            .get(if path.contains("/api/v2/") {
                "bucket"
            } else {
                "db"
            })
            .cloned()
            .unwrap_or_else(|| "public".into());
        let text = String::from_utf8_lossy(&body);
        // Lines by the datanode of their region (the table's partition rule), in order.
        let mut per_node: BTreeMap<String, String> = BTreeMap::new();
        let mut routes: BTreeMap<String, Route> = BTreeMap::new();
        // The columns the lines bring to each table spread over several datanodes.
        let mut brought: BTreeMap<String, Brought> = BTreeMap::new();
        for line in text.lines() {
            let t = line.trim_start();
            if t.is_empty() || t.starts_with('#') {
                continue;
            }
            let m = measurement(t);
            if !routes.contains_key(&m) {
                match self.route(&db, &m, true, 1, None) {
                    Ok(Some(r)) => {
                        if r.holders().len() > 1 {
                            brought.insert(m.clone(), Brought::default());
                        }
                        routes.insert(m.clone(), r);
                    }
                    Ok(None) => {
                        return json_resp(503, br#"{"error":"no route for the table"}"#.to_vec())
                    }
                    Err(e) => return sql_error(&e, 0),
                }
            }
            if let Some(b) = brought.get_mut(&m) {
                if let Err(e) = b.add(t) {
                    return write_error(&e);
                }
            }
            let dn = routes[&m].datanode_of(t).to_string();
            let buf = per_node.entry(dn).or_default();
            buf.push_str(line);
            buf.push('\n');
        }
        // Before any row goes: the new columns, on every datanode of the table. Not for a
        // write the real frontend refuses before it alters anything: a precision it does not
        // take, a line (of a spread table: the others are not parsed here) that does not
        // parse; the datanodes answer those as before.
        let precision = params.get("precision").map(String::as_str);
        let refused = lineproto::precision_factor(precision).is_none()
            || brought.values().any(|b| b.unparsed);
        for (m, b) in &brought {
            if refused || b.columns.is_empty() {
                continue;
            }
            if let Err(e) = self.add_missing_columns(&db, m, &routes[m].holders(), &b.columns) {
                return write_error(&e);
            }
        }
        for (dn, lines) in per_node {
            let r = self
                .agent
                .post(&format!("http://{dn}{path}?{query}"))
                .send_bytes(lines.as_bytes());
            match r {
                Ok(_) => {}
                Err(ureq::Error::Status(code, r)) => {
                    let b = r.into_string().unwrap_or_default();
                    return json_resp(code, b.into_bytes());
                }
                Err(e) => {
                    let msg = json!({"error": format!("Failed to request datanode {dn}: {e}")});
                    return json_resp(503, serde_json::to_vec(&msg).unwrap_or_default());
                }
            }
        }
        Response::from_data(Vec::new()).with_status_code(204)
    }
}

/// Where a table's regions are: the datanode (HTTP address) of each region number, and the
/// rules that split rows into regions (none: one region).
struct Route {
    peers: Vec<String>,
    rules: Option<RuleSet>,
    /// Placed by this call.
    created: bool,
}

impl Route {
    /// The datanodes holding regions of the table, region 0's first.
    fn holders(&self) -> Vec<String> {
        let mut out: Vec<String> = Vec::new();
        for p in &self.peers {
            if !out.contains(p) {
                out.push(p.clone());
            }
        }
        out
    }

    /// The datanode of a line's region (its series' tags against the rules).
    fn datanode_of(&self, line: &str) -> &str {
        let number = match &self.rules {
            Some(rules) if self.peers.len() > 1 => {
                let series = series_of(line);
                region_of(rules, &|c| series_tag(series, c)) as usize
            }
            _ => 0,
        };
        self.peers.get(number).unwrap_or(&self.peers[0])
    }
}

/// The columns a write's lines bring to one table, first seen first: a line's tags, then its
/// fields, as the real row builder orders a request's columns (`servers/src/influxdb.rs`).
#[derive(Default)]
struct Brought {
    /// (name, `None` for a tag, else the field's type)
    columns: Vec<(String, Option<FieldType>)>,
    /// A line did not parse: the datanode that takes it refuses it; no column is added.
    unparsed: bool,
    /// The tag and field names of the previous line, as written (TSBS lines repeat one shape).
    last_tags: Vec<String>,
    last_fields: Vec<(String, FieldType)>,
}

impl Brought {
    /// Takes one line in; a field seen before with another type refuses the write, as a
    /// standalone refuses it.
    fn add(&mut self, line: &str) -> Result<(), GtError> {
        let Ok(l) = lineproto::parse(line.trim_end()) else {
            self.unparsed = true;
            return Ok(());
        };
        let same = self.last_tags.len() == l.tags.len()
            && self.last_tags.iter().zip(&l.tags).all(|(a, t)| a == t)
            && self.last_fields.len() == l.fields.len()
            && self
                .last_fields
                .iter()
                .zip(&l.fields)
                .all(|((a, at), (f, ft))| a == f && at == ft);
        if same {
            return Ok(());
        }
        for t in &l.tags {
            let t = lineproto::unescape(t);
            if !self.columns.iter().any(|(c, _)| *c == t) {
                self.columns.push((t, None));
            }
        }
        for (f, ty) in &l.fields {
            let f = lineproto::unescape(f);
            match self.columns.iter().find(|(c, _)| *c == f) {
                Some((_, Some(t))) if t != ty => return Err(GtError::type_conflict(&f, t, ty)),
                Some(_) => {}
                None => self.columns.push((f, Some(*ty))),
            }
        }
        self.last_tags = l.tags.iter().map(|t| t.to_string()).collect();
        self.last_fields = l.fields.iter().map(|(f, t)| (f.to_string(), *t)).collect();
        Ok(())
    }
}

/// A table name as `DESC TABLE` and `ALTER TABLE` take it here: in double quotes, or in
/// backquotes when it has a double quote (`None`: it has both).
fn table_ident(table: &str) -> Option<String> {
    if !table.contains('"') {
        Some(format!("\"{table}\""))
    } else if !table.contains('`') {
        Some(format!("`{table}`"))
    } else {
        None
    }
}

/// The measurement and tag set of a line-protocol line: up to the first unescaped space.
fn series_of(line: &str) -> &str {
    let b = line.as_bytes();
    let mut i = 0;
    while i < b.len() {
        match b[i] {
            b'\\' => i += 1,
            b' ' => return &line[..i],
            _ => {}
        }
        i += 1;
    }
    line
}

/// The measurement of a line-protocol line: up to the first unescaped `,` or space.
fn measurement(line: &str) -> String {
    let mut out = String::new();
    let mut chars = line.chars();
    while let Some(c) = chars.next() {
        match c {
            '\\' => {
                if let Some(n) = chars.next() {
                    out.push(n);
                }
            }
            ',' | ' ' => break,
            c => out.push(c),
        }
    }
    out
}

fn output_json(o: Output) -> Value {
    match o {
        Output::Affected(n) => json!({ "affectedrows": n }),
        Output::Records { columns, rows } => json!({
            "records": {
                "schema": {"column_schemas": columns.iter().map(|(n, t)| json!({"name": n, "data_type": t})).collect::<Vec<_>>()},
                "rows": rows,
                "total_rows": rows.len(),
            }
        }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn statements_go_where_their_table_lives() {
        let t = |s: &str| match destination(s, "benchmark") {
            Dest::Table { db, table, create } => format!("{db}.{table}:{create}"),
            Dest::Any => "any".into(),
            Dest::All => "all".into(),
            Dest::Info => "info".into(),
            Dest::ShowTables => "tables".into(),
        };
        assert_eq!(t("SELECT count(*) FROM cpu"), "benchmark.cpu:false");
        assert_eq!(
            t("CREATE TABLE IF NOT EXISTS cpu (a STRING)"),
            "benchmark.cpu:true"
        );
        assert_eq!(
            t("ADMIN flush_table('benchmark.cpu')"),
            "benchmark.cpu:false"
        );
        assert_eq!(
            t("ADMIN compact_table('cpu', 'swcs')"),
            "benchmark.cpu:false"
        );
        assert_eq!(t("CREATE DATABASE IF NOT EXISTS x"), "all");
        assert_eq!(t("drop database x"), "all");
        assert_eq!(t("SHOW DATABASES"), "any");
        assert_eq!(t("SHOW TABLES"), "tables");
        assert_eq!(t("SELECT 1"), "any");
        assert_eq!(
            t("SELECT peer_id FROM information_schema.cluster_info"),
            "info"
        );
        assert_eq!(t("DESC TABLE cpu"), "benchmark.cpu:false");
        assert_eq!(
            t("ALTER TABLE \"cpu\" ADD COLUMN IF NOT EXISTS \"x\" DOUBLE"),
            "benchmark.cpu:false"
        );
        assert_eq!(t("SHOW CREATE TABLE other.cpu"), "other.cpu:false");
    }

    #[test]
    fn a_row_goes_to_the_datanode_of_its_region() {
        let rules = parse_rules(
            &["hostname".to_string()],
            "hostname < 'host_1',\nhostname >= 'host_1' AND hostname < 'host_2',\nhostname >= 'host_2'",
        )
        .unwrap();
        let r = Route {
            peers: vec!["dn2".into(), "dn3".into(), "dn2".into()],
            rules: Some(rules),
            created: false,
        };
        assert_eq!(r.holders(), ["dn2", "dn3"]);
        assert_eq!(r.datanode_of("cpu,hostname=host_0 usage_user=1 1"), "dn2");
        assert_eq!(
            r.datanode_of("cpu,region=x,hostname=host_1 usage_user=1 1"),
            "dn3"
        );
        assert_eq!(r.datanode_of("cpu,hostname=host_9 usage_user=1 1"), "dn2");
        // A tag value with an escaped space is one value.
        assert_eq!(series_of("cpu,hostname=a\\ b x=1 1"), "cpu,hostname=a\\ b");
        let one = Route {
            peers: vec!["dn1".into()],
            rules: None,
            created: true,
        };
        assert_eq!(one.datanode_of("probe x=1 1"), "dn1");
    }

    #[test]
    fn a_write_brings_its_tags_and_fields_first_seen_first() {
        let mut b = Brought::default();
        b.add("cpu,hostname=h0 usage_user=1 1").unwrap();
        b.add("cpu,hostname=h0 usage_user=2 2").unwrap();
        b.add("cpu,hostname=h1,my\\ rack=r1 usage_user=3,n=1i,s=\"x\",ok=t,u=1u 3")
            .unwrap();
        let kinds: Vec<(&str, Option<&str>)> = b
            .columns
            .iter()
            .map(|(c, t)| (c.as_str(), t.map(FieldType::name)))
            .collect();
        assert_eq!(
            kinds,
            [
                ("hostname", None),
                ("usage_user", Some("Float64")),
                ("my rack", None),
                ("n", Some("Int64")),
                ("s", Some("String")),
                ("ok", Some("Boolean")),
                ("u", Some("UInt64"))
            ]
        );
        let e = b.add("cpu,hostname=h2 n=1.5 4").unwrap_err();
        assert_eq!(
            (e.code, e.msg.as_str()),
            (
                1004,
                "Invalid request to region, reason: column n expect type Int64, given: Float64"
            )
        );
        b.add("cpu no fields").unwrap();
        assert!(b.unparsed);
        assert_eq!(table_ident("cpu").unwrap(), "\"cpu\"");
        assert_eq!(table_ident("a\"b").unwrap(), "`a\"b`");
        assert_eq!(table_ident("a\"`b"), None);
    }

    #[test]
    fn measurement_honours_escapes() {
        assert_eq!(measurement("cpu,hostname=a x=1i 1"), "cpu");
        assert_eq!(measurement("my\\ table x=1 1"), "my table");
        assert_eq!(measurement("a\\,b,t=1 x=1"), "a,b");
    }
}
