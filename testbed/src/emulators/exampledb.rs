//! Stand-in of ExampleDB, tsbsctl's test-only third product (`src/product/exampledb.rs`), and
//! its releases on the mirror ([`publish`]). The server is the product's imagined API and no
//! more:
//!
//! * `exampledb --version` → `exampledb <V>` (`TESTBED_EMULATED_VERSION`);
//! * `exampledb --config FILE` serves `[http] addr` with the data under `[storage] data_dir`:
//!   `GET /health` → `{}`; `GET /version` → `{"version": V}`; `GET /count?db=D&table=T` →
//!   `{"rows": N}` (404 for a database or table it does not hold); `GET /vacuum?db=D&table=T`
//!   → `{"table": T, "rows_kept": N, "rows_removed": 0}` (its maintenance operation);
//! * GreptimeDB's HTTP dialect, as much as `tsbs_load_greptime` and `tsbs_run_queries_influx`
//!   use: `/v1/sql` (`SHOW DATABASES`, `CREATE DATABASE`, `DROP DATABASE`; any other
//!   statement answers an empty result) and `POST /v1/influxdb/write?db=D` (line protocol,
//!   gzip or not, 204).
//!
//! Each row written is appended to `<data_dir>/<db>/<table>.seg` before the write is answered,
//! so the counts survive a restart (they are re-read at start). SIGTERM/SIGINT stop it (exit 0).

use std::collections::BTreeMap;
use std::io::{Read, Write};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use serde_json::{json, Value};
use sha2::{Digest, Sha256};

use crate::mirror::{Mirror, GITHUB, GITHUB_API};
use crate::tarball::Tree;

fn version() -> String {
    std::env::var("TESTBED_EMULATED_VERSION").unwrap_or_else(|_| "0.0.0".into())
}

pub fn main(args: Vec<String>) -> i32 {
    match args
        .iter()
        .map(String::as_str)
        .collect::<Vec<_>>()
        .as_slice()
    {
        ["--version"] => {
            println!("exampledb {}", version());
            0
        }
        ["--config", path] => match Config::read(Path::new(path)) {
            Ok(c) => serve(c),
            Err(e) => {
                eprintln!("ERROR exampledb: {e}");
                2
            }
        },
        _ => {
            eprintln!("usage: exampledb --version | exampledb --config FILE");
            2
        }
    }
}

struct Config {
    addr: String,
    data_dir: PathBuf,
}

impl Config {
    fn read(path: &Path) -> Result<Config, String> {
        let text = std::fs::read_to_string(path).map_err(|e| format!("{}: {e}", path.display()))?;
        let v: toml::Value = text
            .parse()
            .map_err(|e| format!("{}: {e}", path.display()))?;
        let get = |section: &str, key: &str| {
            v.get(section)
                .and_then(|s| s.get(key))
                .and_then(|k| k.as_str())
                .map(str::to_string)
                .ok_or_else(|| format!("{}: no [{section}] {key}", path.display()))
        };
        Ok(Config {
            addr: get("http", "addr")?,
            data_dir: PathBuf::from(get("storage", "data_dir")?),
        })
    }
}

/// Rows per table per database, as on disk.
type Counts = BTreeMap<String, BTreeMap<String, u64>>;

fn load_counts(dir: &Path) -> std::io::Result<Counts> {
    let mut out = Counts::new();
    for db in std::fs::read_dir(dir)?.flatten() {
        if !db.path().is_dir() {
            continue;
        }
        let tables = out
            .entry(db.file_name().to_string_lossy().into_owned())
            .or_default();
        for t in std::fs::read_dir(db.path())?.flatten() {
            let p = t.path();
            if p.extension().is_some_and(|e| e == "seg") {
                let name = p
                    .file_stem()
                    .unwrap_or_default()
                    .to_string_lossy()
                    .into_owned();
                let lines = std::fs::read(&p)?.iter().filter(|&&b| b == b'\n').count();
                tables.insert(name, lines as u64);
            }
        }
    }
    Ok(out)
}

fn serve(c: Config) -> i32 {
    if let Err(e) = std::fs::create_dir_all(&c.data_dir) {
        eprintln!("ERROR exampledb: {}: {e}", c.data_dir.display());
        return 1;
    }
    let mut counts = match load_counts(&c.data_dir) {
        Ok(c) => c,
        Err(e) => {
            eprintln!("ERROR exampledb: reading {}: {e}", c.data_dir.display());
            return 1;
        }
    };
    let server = match tiny_http::Server::http(&c.addr) {
        Ok(s) => s,
        Err(e) => {
            eprintln!("ERROR exampledb: cannot listen on {}: {e}", c.addr);
            return 1;
        }
    };
    let stop = Arc::new(AtomicBool::new(false));
    for sig in [signal_hook::consts::SIGTERM, signal_hook::consts::SIGINT] {
        let _ = signal_hook::flag::register(sig, Arc::clone(&stop));
    }
    println!("INFO exampledb {} listening on {}", version(), c.addr);
    let _ = std::io::stdout().flush();
    while !stop.load(Ordering::SeqCst) {
        let Ok(Some(mut req)) = server.recv_timeout(Duration::from_millis(100)) else {
            continue;
        };
        let (status, body) = handle(&mut req, &c.data_dir, &mut counts);
        let mut resp = tiny_http::Response::from_data(if status == 204 {
            Vec::new()
        } else {
            body.to_string().into_bytes()
        })
        .with_status_code(status);
        if let Ok(h) = tiny_http::Header::from_bytes("Content-Type", "application/json") {
            resp = resp.with_header(h);
        }
        let _ = req.respond(resp);
    }
    println!("INFO exampledb stopped");
    0
}

fn params(s: &str) -> BTreeMap<String, String> {
    url::form_urlencoded::parse(s.as_bytes())
        .into_owned()
        .collect()
}

fn handle(req: &mut tiny_http::Request, dir: &Path, counts: &mut Counts) -> (u16, Value) {
    let url = req.url().to_string();
    let (path, query) = url.split_once('?').unwrap_or((url.as_str(), ""));
    let mut q = params(query);
    let mut body = Vec::new();
    if req.as_reader().read_to_end(&mut body).is_err() {
        return (400, json!({"error": "unreadable body"}));
    }
    let gzip = req
        .headers()
        .iter()
        .any(|h| h.field.equiv("Content-Encoding") && h.value.as_str() == "gzip");
    if gzip {
        let mut out = Vec::new();
        if flate2::read::GzDecoder::new(&body[..])
            .read_to_end(&mut out)
            .is_err()
        {
            return (400, json!({"error": "bad gzip body"}));
        }
        body = out;
    }
    match path {
        "/health" => (200, json!({})),
        "/version" => (200, json!({ "version": version() })),
        "/count" => {
            let (db, table) = (q.get("db"), q.get("table"));
            let n = match (db, table) {
                (Some(d), Some(t)) => counts.get(d).and_then(|ts| ts.get(t)).copied(),
                _ => None,
            };
            match n {
                Some(n) => (200, json!({ "rows": n })),
                None => (
                    404,
                    json!({"error": format!("no table {table:?} in database {db:?}")}),
                ),
            }
        }
        // Its maintenance operation (`bench exampledb vacuum`): says how many rows the
        // table's segment holds (nothing is ever deleted here, so nothing to rewrite).
        "/vacuum" => {
            let (db, table) = (q.get("db"), q.get("table"));
            match (db, table) {
                (Some(d), Some(t)) => {
                    let n = counts.get(d).and_then(|ts| ts.get(t)).copied().unwrap_or(0);
                    (
                        200,
                        json!({ "table": t, "rows_kept": n, "rows_removed": 0 }),
                    )
                }
                _ => (400, json!({"error": "vacuum needs db and table"})),
            }
        }
        "/v1/sql" => {
            // Form fields count where the query string has none.
            for (k, v) in params(&String::from_utf8_lossy(&body)) {
                q.entry(k).or_insert(v);
            }
            let sql = q.get("sql").cloned().unwrap_or_default();
            let db = q.get("db").cloned().unwrap_or_else(|| "public".into());
            sql_answer(&sql, &db, dir, counts)
        }
        "/v1/influxdb/write" => {
            let db = q.get("db").cloned().unwrap_or_else(|| "public".into());
            match write(dir, counts, &db, &body) {
                Ok(()) => (204, Value::Null),
                Err((s, e)) => (s, json!({ "error": e })),
            }
        }
        _ => (404, json!({"error": format!("no route {path}")})),
    }
}

fn records(rows: Vec<Value>) -> Value {
    let n = rows.len();
    json!({"output": [{"records": {"schema": {"column_schemas": [{"name": "Database", "data_type": "String"}]}, "rows": rows, "total_rows": n}}], "execution_time_ms": 0})
}

fn sql_answer(sql: &str, db: &str, dir: &Path, counts: &mut Counts) -> (u16, Value) {
    let words: Vec<String> = sql
        .trim()
        .trim_end_matches(';')
        .split_whitespace()
        .map(str::to_string)
        .collect();
    let upper: Vec<String> = words.iter().map(|w| w.to_ascii_uppercase()).collect();
    let upper: Vec<&str> = upper.iter().map(String::as_str).collect();
    let name = |at: usize| words.get(at).map(|w| w.trim_matches('"').to_string());
    match upper.as_slice() {
        ["SHOW", "DATABASES"] => {
            let mut rows = vec![json!(["public"])];
            rows.extend(counts.keys().filter(|d| *d != "public").map(|d| json!([d])));
            (200, records(rows))
        }
        ["CREATE", "DATABASE", ..] => {
            let Some(d) = name(upper.len() - 1).filter(|d| valid_name(d)) else {
                return (400, json!({"code": 1004, "error": "bad database name"}));
            };
            if counts.contains_key(&d) && !upper.contains(&"EXISTS") {
                return (
                    400,
                    json!({"code": 4000, "error": format!("Database already exists: {d}")}),
                );
            }
            if let Err(e) = std::fs::create_dir_all(dir.join(&d)) {
                return (500, json!({"code": 1003, "error": e.to_string()}));
            }
            counts.entry(d).or_default();
            (
                200,
                json!({"output": [{"affectedrows": 1}], "execution_time_ms": 0}),
            )
        }
        ["DROP", "DATABASE", ..] => {
            let Some(d) = name(upper.len() - 1).filter(|d| valid_name(d)) else {
                return (400, json!({"code": 1004, "error": "bad database name"}));
            };
            if counts.remove(&d).is_none() && !upper.contains(&"EXISTS") {
                return (
                    400,
                    json!({"code": 4004, "error": format!("Database not found: {d}")}),
                );
            }
            let _ = std::fs::remove_dir_all(dir.join(&d));
            (
                200,
                json!({"output": [{"affectedrows": 1}], "execution_time_ms": 0}),
            )
        }
        _ if db != "public" && !counts.contains_key(db) => (
            400,
            json!({"code": 4004, "error": format!("Database not found: {db}")}),
        ),
        // Queries: an empty result (the benchmark measures the round trip, not the answer).
        _ => (200, records(Vec::new())),
    }
}

/// A database or table name that is safe as a file name.
fn valid_name(s: &str) -> bool {
    !s.is_empty()
        && s.len() <= 64
        && s.chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-')
}

/// Appends each line to its table's segment, then counts it (the answer comes after both).
fn write(dir: &Path, counts: &mut Counts, db: &str, body: &[u8]) -> Result<(), (u16, String)> {
    let Some(tables) = counts.get_mut(db) else {
        return Err((404, format!("Database not found: {db}")));
    };
    let mut by_table: BTreeMap<String, Vec<u8>> = BTreeMap::new();
    for line in body.split(|&b| b == b'\n') {
        let line = line.strip_suffix(b"\r").unwrap_or(line);
        if line.is_empty() || line.starts_with(b"#") {
            continue;
        }
        let end = line
            .iter()
            .position(|&b| b == b',' || b == b' ')
            .ok_or((400, "a line without fields".to_string()))?;
        let table = String::from_utf8_lossy(&line[..end]).into_owned();
        if !valid_name(&table) {
            return Err((400, format!("bad table name {table:?}")));
        }
        let buf = by_table.entry(table).or_default();
        buf.extend_from_slice(line);
        buf.push(b'\n');
    }
    for (table, bytes) in by_table {
        let path = dir.join(db).join(format!("{table}.seg"));
        let mut f = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(&path)
            .map_err(|e| (500, format!("{}: {e}", path.display())))?;
        f.write_all(&bytes)
            .map_err(|e| (500, format!("{}: {e}", path.display())))?;
        let n = bytes.iter().filter(|&&b| b == b'\n').count() as u64;
        *tables.entry(table).or_insert(0) += n;
    }
    Ok(())
}

// ---------------------------------------------------------------------------------------------
// Releases on the mirror

/// `exampledb-<V>-<platform>` (the archive stem and its top directory).
fn stem(version: &str, platform: &str) -> String {
    format!("exampledb-{version}-{platform}")
}

/// Mirror path of the archive of `version` for `platform` (its checksum: `.sha256` after it).
pub fn archive_path(version: &str, platform: &str) -> String {
    format!(
        "{GITHUB}/exampledb/exampledb/releases/download/v{version}/{}.tar.gz",
        stem(version, platform)
    )
}

/// Publishes ExampleDB `version` for the host platform: the archive (its top directory
/// holding the `exampledb` wrapper), its bare-hex `.sha256`, and, when `latest`, the
/// `releases/latest` object naming it. Returns the archive's SHA-256.
pub fn publish(mirror: &Mirror, version: &str, latest: bool) -> String {
    let platform = crate::releases::greptime::host_platform();
    let top = stem(version, &platform);
    let wrapper = crate::wrapper_script("exampledb", &[("TESTBED_EMULATED_VERSION", version)]);
    let bytes = Tree::new()
        .dir(&top, 0o755)
        .file(&format!("{top}/exampledb"), wrapper, 0o755)
        .tar_gz();
    let digest = hex::encode(Sha256::digest(&bytes));
    let path = archive_path(version, &platform);
    mirror.put_bytes(
        &format!("{path}.sha256"),
        format!("{digest}\n").into_bytes(),
    );
    mirror.put_bytes(&path, bytes);
    if latest {
        mirror.put_json(
            &format!("{GITHUB_API}/repos/exampledb/exampledb/releases/latest"),
            &json!({"tag_name": format!("v{version}"), "draft": false, "prerelease": false}),
        );
    }
    digest
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rows_written_are_counted_and_survive_a_restart() {
        let d = tempfile::tempdir().unwrap();
        let mut counts = Counts::new();
        let body =
            b"cpu,hostname=h1 usage_user=1 1\ncpu,hostname=h2 usage_user=2 1\r\n\nmem,h=1 x=1 1\n";
        assert_eq!(
            write(d.path(), &mut counts, "benchmark", body)
                .unwrap_err()
                .0,
            404
        );
        assert_eq!(
            sql_answer("CREATE DATABASE benchmark", "public", d.path(), &mut counts).0,
            200
        );
        write(d.path(), &mut counts, "benchmark", body).unwrap();
        write(
            d.path(),
            &mut counts,
            "benchmark",
            b"cpu,hostname=h3 usage_user=3 2",
        )
        .unwrap();
        assert_eq!(counts["benchmark"]["cpu"], 3);
        assert_eq!(counts["benchmark"]["mem"], 1);
        assert_eq!(load_counts(d.path()).unwrap(), counts);
        assert_eq!(
            write(d.path(), &mut counts, "benchmark", b"../x y=1")
                .unwrap_err()
                .0,
            400
        );
    }

    #[test]
    fn sql_is_what_the_loader_and_runner_need() {
        let d = tempfile::tempdir().unwrap();
        let mut counts = Counts::new();
        let (s, v) = sql_answer("SHOW DATABASES", "public", d.path(), &mut counts);
        assert_eq!(
            (s, v["output"][0]["records"]["rows"].clone()),
            (200, json!([["public"]]))
        );
        assert_eq!(
            sql_answer("CREATE DATABASE b1", "public", d.path(), &mut counts).0,
            200
        );
        assert_eq!(
            sql_answer("CREATE DATABASE b1", "public", d.path(), &mut counts).0,
            400
        );
        let (_, v) = sql_answer("show databases;", "public", d.path(), &mut counts);
        assert_eq!(
            v["output"][0]["records"]["rows"],
            json!([["public"], ["b1"]])
        );
        assert_eq!(sql_answer("SELECT 1", "b1", d.path(), &mut counts).0, 200);
        assert_eq!(sql_answer("SELECT 1", "nope", d.path(), &mut counts).0, 400);
        assert_eq!(
            sql_answer("DROP DATABASE b1", "public", d.path(), &mut counts).0,
            200
        );
        assert!(!d.path().join("b1").exists());
        assert_eq!(
            sql_answer(
                "DROP DATABASE IF EXISTS b1",
                "public",
                d.path(),
                &mut counts
            )
            .0,
            200
        );
    }
}
