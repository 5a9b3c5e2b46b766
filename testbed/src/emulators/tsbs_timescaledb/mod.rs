//! Stand-ins of `tsbs_load_timescaledb` and `tsbs_run_queries_timescaledb`
//! (`shared/reference/real/postgresql.md` §5, §7; fixtures `tsbs-real-postgresql/`): the real
//! flags, the real data and query-file formats, and a REAL PostgreSQL server at the other end,
//! spoken to over the PostgreSQL protocol (the `postgres` crate). What they share is here: the
//! connection with pgx's error texts, the password rule, and the gob stream of TSBS's
//! `query.TimescaleDB`.
//!
//! Stricter than the real tools on purpose: a non-empty `--pass` on the command line is
//! refused (exit 2), since argv is readable by every local user; the password comes from
//! `PGPASSWORD` (which pgx reads) or `config.json` (viper), as tsbsctl hands it over.
//!
//! Knob (`$TESTBED_KNOBS`, section `tsbs_timescaledb`, both tools): `record`, a file that
//! gets one JSON line per call, before anything else: the tool, its argv, whether
//! `PGPASSWORD` was set and which `config.*` files its working directory held (never a
//! password), so a test can prove where the password did and did not go.

pub mod load;
pub mod run;

use std::io::Write;

use crate::gotool::Flags;

#[derive(Debug, Default, serde::Deserialize)]
#[serde(deny_unknown_fields)]
struct Knobs {
    #[serde(default)]
    record: Option<std::path::PathBuf>,
}

/// Appends this call to the `record` knob's file (see the module's notes); no knob: nothing.
pub(crate) fn record_call(tool: &str, args: &[String]) {
    let knobs: Knobs = crate::gotool::knobs_or_exit("tsbs_timescaledb");
    let Some(path) = knobs.record else { return };
    let configs: Vec<String> = std::fs::read_dir(".")
        .map(|rd| {
            rd.flatten()
                .map(|e| e.file_name().to_string_lossy().into_owned())
                .filter(|n| n.starts_with("config."))
                .collect()
        })
        .unwrap_or_default();
    let line = serde_json::json!({
        "tool": tool,
        "args": args,
        "pgpassword_set": std::env::var_os("PGPASSWORD").is_some_and(|p| !p.is_empty()),
        "config_files": configs,
    });
    let written = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(&path)
        .and_then(|mut f| writeln!(f, "{line}"));
    if let Err(e) = written {
        eprintln!(
            "testbed: {tool}: cannot record the call in {}: {e}",
            path.display()
        );
        std::process::exit(2);
    }
}

/// The message of a server error as pgx prints it: `ERROR: <message> (SQLSTATE <code>)`.
pub(crate) fn pg_error(e: &postgres::Error) -> String {
    match e.as_db_error() {
        Some(db) => format!(
            "{}: {} (SQLSTATE {})",
            db.severity(),
            db.message(),
            db.code().code()
        ),
        None => e.to_string(),
    }
}

/// Connects like pgx; `Err` is pgx's text: ``failed to connect to `host=H user=U
/// database=D`: dial error (...)`` or `... server error (FATAL: ... (SQLSTATE ...))`.
pub(crate) fn connect(
    host: &str,
    port: &str,
    user: &str,
    db: &str,
    password: Option<&str>,
) -> Result<postgres::Client, String> {
    let what = format!("failed to connect to `host={host} user={user} database={db}`");
    let port_n: u16 = port
        .parse()
        .map_err(|_| format!("{what}: invalid port {port:?}"))?;
    let addr_host = if host == "localhost" {
        "127.0.0.1"
    } else {
        host
    };
    let mut c = postgres::Config::new();
    c.host(addr_host)
        .port(port_n)
        .user(user)
        .dbname(db)
        .connect_timeout(std::time::Duration::from_secs(10));
    if let Some(p) = password.filter(|p| !p.is_empty()) {
        c.password(p);
    }
    c.connect(postgres::NoTls).map_err(|e| {
        if let Some(dbe) = e.as_db_error() {
            return format!(
                "{what}: server error ({}: {} (SQLSTATE {}))",
                dbe.severity(),
                dbe.message(),
                dbe.code().code()
            );
        }
        let mut src: Option<&dyn std::error::Error> = std::error::Error::source(&e);
        let mut io_kind = None;
        while let Some(s) = src {
            if let Some(io) = s.downcast_ref::<std::io::Error>() {
                io_kind = Some(io.kind());
            }
            src = s.source();
        }
        match io_kind {
            Some(std::io::ErrorKind::ConnectionRefused) => format!(
                "{what}: dial error (dial tcp {addr_host}:{port}: connect: connection refused)"
            ),
            _ => format!("{what}: {e}"),
        }
    })
}

/// The password: `--pass` from `config.json` or, when empty, `PGPASSWORD` (pgx's default).
/// `Err(2)` after saying why when `--pass` was given on the command line.
pub(crate) fn password(tool: &str, flags: &Flags) -> Result<Option<String>, i32> {
    if flags.is_set("pass") && !flags.str("pass").is_empty() {
        eprintln!(
            "testbed: {tool}: --pass was given on the command line, where every local user can read it (ps, /proc/<pid>/cmdline); pass it in PGPASSWORD or config.json"
        );
        return Err(2);
    }
    let p = flags.str("pass");
    if !p.is_empty() {
        return Ok(Some(p));
    }
    Ok(std::env::var("PGPASSWORD").ok().filter(|p| !p.is_empty()))
}

/// `MustExec`'s failure: the statement on stdout without a newline, then the panic.
pub(crate) fn must_exec_failed(tool: &str, sql: &str, err: &str) -> ! {
    print!("could not execute sql: {sql}");
    let _ = std::io::stdout().flush();
    crate::gotool::go_panic(tool, err)
}

/// One query of a timescaledb query file: TSBS's `query.TimescaleDB`.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct TsQuery {
    pub human_label: String,
    pub human_description: String,
    pub hypertable: String,
    pub sql_query: String,
}

/// The struct's fields in declaration order, all `[]byte` (gob type 5).
const TS_FIELDS: [&str; 4] = ["HumanLabel", "HumanDescription", "Hypertable", "SqlQuery"];
const TS_TYPE_ID: i64 = 64;

fn put_uint(out: &mut Vec<u8>, x: u64) {
    if x < 128 {
        out.push(x as u8);
        return;
    }
    let bytes = x.to_be_bytes();
    let skip = bytes.iter().take_while(|b| **b == 0).count();
    out.push((256 - (8 - skip)) as u8);
    out.extend_from_slice(&bytes[skip..]);
}

fn put_int(out: &mut Vec<u8>, i: i64) {
    let u = if i < 0 {
        (!(i as u64) << 1) | 1
    } else {
        (i as u64) << 1
    };
    put_uint(out, u);
}

fn put_bytes(out: &mut Vec<u8>, b: &[u8]) {
    put_uint(out, b.len() as u64);
    out.extend_from_slice(b);
}

fn message(out: &mut Vec<u8>, body: &[u8]) {
    put_uint(out, body.len() as u64);
    out.extend_from_slice(body);
}

/// A gob stream of `TimescaleDB` queries, as Go's encoder writes it (byte-identical to the
/// real generator's files).
pub fn write_queries(queries: &[TsQuery]) -> Vec<u8> {
    let mut out = Vec::new();
    let mut t = Vec::new();
    put_int(&mut t, -TS_TYPE_ID);
    t.extend_from_slice(&[3, 1, 1]); // wireType.StructT, structType.CommonType, Name
    put_bytes(&mut t, b"TimescaleDB");
    t.push(1);
    put_int(&mut t, TS_TYPE_ID);
    t.push(0);
    t.push(1);
    put_uint(&mut t, TS_FIELDS.len() as u64);
    for name in TS_FIELDS {
        t.push(1);
        put_bytes(&mut t, name.as_bytes());
        t.push(1);
        put_int(&mut t, 5);
        t.push(0);
    }
    t.extend_from_slice(&[0, 0]);
    message(&mut out, &t);
    for q in queries {
        let mut v = Vec::new();
        put_int(&mut v, TS_TYPE_ID);
        let mut last: i64 = -1;
        let fields = [
            &q.human_label,
            &q.human_description,
            &q.hypertable,
            &q.sql_query,
        ];
        for (i, f) in fields.iter().enumerate() {
            if !f.is_empty() {
                put_uint(&mut v, (i as i64 - last) as u64);
                put_bytes(&mut v, f.as_bytes());
                last = i as i64;
            }
        }
        v.push(0);
        message(&mut out, &v);
    }
    out
}

struct Cur<'a>(&'a [u8]);

impl Cur<'_> {
    fn uint(&mut self) -> Result<u64, String> {
        let (&b, rest) = self
            .0
            .split_first()
            .ok_or("gob: decoding past end of message")?;
        self.0 = rest;
        if b < 128 {
            return Ok(u64::from(b));
        }
        let n = 256 - b as usize;
        if n > 8 || self.0.len() < n {
            return Err("gob: invalid uint data length".into());
        }
        let (v, rest) = self.0.split_at(n);
        self.0 = rest;
        Ok(v.iter().fold(0u64, |a, b| (a << 8) | u64::from(*b)))
    }
    fn int(&mut self) -> Result<i64, String> {
        let u = self.uint()?;
        Ok(if u & 1 == 1 {
            !(u >> 1) as i64
        } else {
            (u >> 1) as i64
        })
    }
    fn bytes(&mut self) -> Result<Vec<u8>, String> {
        let n = self.uint()? as usize;
        if self.0.len() < n {
            return Err("gob: decoding past end of message".into());
        }
        let (v, rest) = self.0.split_at(n);
        self.0 = rest;
        Ok(v.to_vec())
    }
}

/// Reads a `wireType` with `StructT`: the struct's name and (field name, type id) list.
fn parse_struct(c: &mut Cur) -> Result<(String, Vec<(String, i64)>), String> {
    let bad = || "gob: unsupported type in the stream (a struct was expected)".to_string();
    if c.uint()? != 3 {
        return Err(bad());
    }
    let (mut name, mut fields) = (String::new(), Vec::new());
    let mut f = 0u64;
    loop {
        let d = c.uint()?;
        if d == 0 {
            break;
        }
        f += d;
        match f {
            1 => {
                let mut g = 0u64;
                loop {
                    let d = c.uint()?;
                    if d == 0 {
                        break;
                    }
                    g += d;
                    match g {
                        1 => name = String::from_utf8_lossy(&c.bytes()?).into_owned(),
                        2 => {
                            c.int()?;
                        }
                        _ => return Err(bad()),
                    }
                }
            }
            2 => {
                for _ in 0..c.uint()? {
                    let (mut fname, mut fid) = (String::new(), 0);
                    let mut g = 0u64;
                    loop {
                        let d = c.uint()?;
                        if d == 0 {
                            break;
                        }
                        g += d;
                        match g {
                            1 => fname = String::from_utf8_lossy(&c.bytes()?).into_owned(),
                            2 => fid = c.int()?,
                            _ => return Err(bad()),
                        }
                    }
                    fields.push((fname, fid));
                }
            }
            _ => return Err(bad()),
        }
    }
    if c.uint()? != 0 {
        return Err(bad());
    }
    Ok((name, fields))
}

/// Decodes a query file INTO `TimescaleDB` values the way Go's gob does: fields matched by
/// name, the others skipped. So an influx file (`HTTP`) decodes with an empty `SqlQuery`, as
/// the real runner decodes it (reference §0.3). No common field at all is gob's type mismatch.
pub fn read_queries(bytes: &[u8]) -> Result<Vec<TsQuery>, String> {
    let mut input = bytes;
    let mut ty: Option<(i64, Vec<(String, i64)>)> = None;
    let mut out = Vec::new();
    while !input.is_empty() {
        let mut c = Cur(input);
        let len = c.uint()? as usize;
        if c.0.len() < len {
            return Err("unexpected EOF".into());
        }
        let (msg, rest) = c.0.split_at(len);
        input = rest;
        let mut m = Cur(msg);
        let id = m.int()?;
        if id < 0 {
            let (name, fields) = parse_struct(&mut m)?;
            if !fields.iter().any(|(f, _)| TS_FIELDS.contains(&f.as_str())) {
                return Err(format!(
                    "gob: type mismatch: no fields matched compiling decoder for {name}"
                ));
            }
            ty = Some((-id, fields));
            continue;
        }
        let (tid, fields) = ty.as_ref().ok_or("gob: unknown type id")?;
        if id != *tid {
            return Err(format!("gob: unknown type id {id}"));
        }
        let mut q = TsQuery::default();
        let mut field: i64 = -1;
        loop {
            let d = m.uint()?;
            if d == 0 {
                break;
            }
            field += d as i64;
            let (name, ftype) = fields
                .get(field as usize)
                .ok_or("gob: field number out of range")?;
            let text = match ftype {
                5 | 6 => Some(String::from_utf8_lossy(&m.bytes()?).into_owned()),
                1..=4 => {
                    m.uint()?;
                    None
                }
                other => return Err(format!("gob: unsupported field type {other}")),
            };
            match (name.as_str(), text) {
                ("HumanLabel", Some(t)) => q.human_label = t,
                ("HumanDescription", Some(t)) => q.human_description = t,
                ("Hypertable", Some(t)) => q.hypertable = t,
                ("SqlQuery", Some(t)) => q.sql_query = t,
                _ => {}
            }
        }
        out.push(q);
    }
    Ok(out)
}
