//! The TSBS side of this product (reference §5-§8) beyond the command lines (those are built
//! by the product's `load_target`/`load_connection`/`query_connection` through
//! `crate::tsbs::command`, and tested there on the real `-help` texts): how the password
//! reaches the tools, the burn-in rule; the query generator's flags per mode (they belong in the query set's
//! identity); the check that a query file really is in the timescaledb format (an influx file
//! fed to this runner "passes" with empty SQL and exit 0); and the loader's failure text. The
//! loader's and runner's stdout are what the existing parsers of `crate::tsbs` already read
//! (tested here on the real outputs).

use std::collections::BTreeSet;
use std::io::Read;
use std::path::Path;

use serde::{Deserialize, Serialize};
use serde_json::{json, Value};

use super::Mode;
use crate::error::{Error, Result};

/// The variable the TSBS tools' PostgreSQL driver (pgx) reads the password from when `--pass`
/// is empty. tsbsctl never puts a password on a command line (nor in a file): it sets this in
/// the tool's environment (`crate::tsbs::ToolArg::Env`).
pub const PASSWORD_ENV: &str = "PGPASSWORD";

/// `--burn-in` works only together with `--max-queries` (alone it panics: "burn-in is larger
/// than limit"), so they are one value: `burn_in` queries run uncounted out of `max_queries`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct BurnIn {
    pub burn_in: u64,
    pub max_queries: u64,
}

impl BurnIn {
    pub fn new(burn_in: u64, max_queries: u64) -> Result<BurnIn> {
        if burn_in == 0 || max_queries <= burn_in {
            return Err(Error::invalid(format!(
                "burn-in {burn_in} needs more queries than it skips (max queries {max_queries})"
            )));
        }
        Ok(BurnIn {
            burn_in,
            max_queries,
        })
    }
}

/// The timescaledb query format's flags. Their values must match the load (`--use-jsonb-tags`,
/// `--in-table-partition-tag`) and go into the query set's identity.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct QueryFlags {
    pub use_time_bucket: bool,
    pub use_json: bool,
    pub use_tags: bool,
}

impl QueryFlags {
    /// TimescaleDB: the generator's defaults. PostgreSQL: no `time_bucket` (12 of 15 types
    /// fail without the extension). Both keep the tags table, matching a default load.
    pub fn for_mode(mode: Mode) -> QueryFlags {
        QueryFlags {
            use_time_bucket: mode == Mode::Timescaledb,
            use_json: false,
            use_tags: true,
        }
    }

    /// `tsbs_generate_queries` flags after the common ones (every flag explicit, so the
    /// identity does not depend on the generator's defaults).
    pub fn generator_args(&self) -> Vec<String> {
        vec![
            "--format=timescaledb".into(),
            format!("--timescale-use-time-bucket={}", self.use_time_bucket),
            format!("--timescale-use-json={}", self.use_json),
            format!("--timescale-use-tags={}", self.use_tags),
        ]
    }

    /// The part of the query set's identity these flags make.
    pub fn identity(&self) -> Value {
        json!({
            "format": "timescaledb",
            "timescale_use_time_bucket": self.use_time_bucket,
            "timescale_use_json": self.use_json,
            "timescale_use_tags": self.use_tags,
        })
    }
}

/// What [`check_query_file`] found.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct QueryFileCheck {
    pub queries: u64,
    pub labels: BTreeSet<String>,
}

/// Checks a query file is a gob stream of `TimescaleDB` queries, each labelled `TimescaleDB
/// ...` with non-empty SQL. The runner itself checks none of it: gob matches fields by name,
/// so an influx file decodes with an empty `SqlQuery` and "measures" empty statements.
pub fn check_query_file(path: &Path) -> Result<QueryFileCheck> {
    let mut bytes = Vec::new();
    fs_err::File::open(path)?.read_to_end(&mut bytes)?;
    let wrong = |why: String| {
        Error::integrity(format!(
            "{} is not a timescaledb query file: {why}",
            path.display()
        ))
        .with_hint(
            "generate it with tsbs_generate_queries --format=timescaledb; tsbs_run_queries_timescaledb would run any other file as empty SQL and exit 0",
        )
    };
    let values = gob::decode(&bytes).map_err(wrong)?;
    if values.type_name != "TimescaleDB" {
        let labels: BTreeSet<String> = values
            .values
            .iter()
            .filter_map(|v| v.get("HumanLabel").cloned())
            .take(3)
            .collect();
        return Err(wrong(format!(
            "its queries are of type {:?} (labels {labels:?})",
            values.type_name
        )));
    }
    let mut labels = BTreeSet::new();
    for (i, v) in values.values.iter().enumerate() {
        let label = v.get("HumanLabel").map(String::as_str).unwrap_or("");
        if !label.starts_with("TimescaleDB") {
            return Err(wrong(format!(
                "query {i} is labelled {label:?}, not \"TimescaleDB ...\""
            )));
        }
        if v.get("SqlQuery").is_none_or(|s| s.trim().is_empty()) {
            return Err(wrong(format!("query {i} ({label}) has no SQL")));
        }
        labels.insert(label.to_string());
    }
    if values.values.is_empty() {
        return Err(wrong("it holds no query".into()));
    }
    Ok(QueryFileCheck {
        queries: values.values.len() as u64,
        labels,
    })
}

/// The loader's own explanation of a failed run: the `could not execute sql: ...` line of its
/// stdout (printed without a newline before a panic) and the first `panic:` or `log.Fatal`
/// line of its stderr.
pub fn loader_failure(stdout: &str, stderr: &str) -> Option<String> {
    let sql = stdout
        .lines()
        .find_map(|l| l.strip_prefix("could not execute sql: "))
        .map(|s| format!("could not execute sql: {}", s.trim_end()));
    let first = stderr
        .lines()
        .map(str::trim_end)
        .find(|l| {
            l.starts_with("panic: ")
                || l.starts_with("fatal error: ")
                || (l.len() > 20 && l.as_bytes()[4] == b'/' && l.as_bytes()[10] == b' ')
        })
        .map(str::to_string);
    match (sql, first) {
        (Some(s), Some(p)) => Some(format!("{s}: {p}")),
        (a, b) => a.or(b),
    }
}

/// A small decoder of Go `encoding/gob` streams of ONE struct type whose fields are basic
/// types (what TSBS query files are): the type's name and each value's fields as text.
pub(crate) mod gob {
    use std::collections::BTreeMap;

    pub struct Decoded {
        pub type_name: String,
        pub values: Vec<BTreeMap<String, String>>,
    }

    struct Cur<'a>(&'a [u8]);

    impl Cur<'_> {
        fn uint(&mut self) -> Result<u64, String> {
            let (&b, rest) = self.0.split_first().ok_or("truncated gob message")?;
            self.0 = rest;
            if b < 128 {
                return Ok(u64::from(b));
            }
            let n = 256 - b as usize;
            if n > 8 || self.0.len() < n {
                return Err("bad gob integer".into());
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
        fn bytes(&mut self) -> Result<&[u8], String> {
            let n = self.uint()? as usize;
            if self.0.len() < n {
                return Err("truncated gob message".into());
            }
            let (v, rest) = self.0.split_at(n);
            self.0 = rest;
            Ok(v)
        }
    }

    /// A struct type definition: (name, id, fields as (name, type id)).
    type StructDef = (String, i64, Vec<(String, i64)>);

    /// `wireType{StructT: structType{CommonType{Name, Id}, Field []fieldType{Name, Id}}}`.
    fn parse_struct_def(c: &mut Cur) -> Result<StructDef, String> {
        if c.uint()? != 3 {
            return Err("the stream's type is not a struct".into());
        }
        let (mut name, mut id, mut fields) = (String::new(), 0i64, Vec::new());
        let mut field = 0u64;
        loop {
            let d = c.uint()?;
            if d == 0 {
                break;
            }
            field += d;
            match field {
                1 => {
                    let mut f = 0u64;
                    loop {
                        let d = c.uint()?;
                        if d == 0 {
                            break;
                        }
                        f += d;
                        match f {
                            1 => name = String::from_utf8_lossy(c.bytes()?).into_owned(),
                            2 => id = c.int()?,
                            _ => return Err("unexpected CommonType field".into()),
                        }
                    }
                }
                2 => {
                    let n = c.uint()?;
                    for _ in 0..n {
                        let (mut fname, mut fid) = (String::new(), 0i64);
                        let mut f = 0u64;
                        loop {
                            let d = c.uint()?;
                            if d == 0 {
                                break;
                            }
                            f += d;
                            match f {
                                1 => fname = String::from_utf8_lossy(c.bytes()?).into_owned(),
                                2 => fid = c.int()?,
                                _ => return Err("unexpected fieldType field".into()),
                            }
                        }
                        fields.push((fname, fid));
                    }
                }
                _ => return Err("unexpected structType field".into()),
            }
        }
        if c.uint()? != 0 {
            return Err("unexpected wireType field".into());
        }
        Ok((name, id, fields))
    }

    pub fn decode(mut input: &[u8]) -> Result<Decoded, String> {
        let mut def: Option<StructDef> = None;
        let mut values = Vec::new();
        while !input.is_empty() {
            let mut c = Cur(input);
            let len = c.uint().map_err(|_| "not a gob stream".to_string())? as usize;
            if c.0.len() < len {
                return Err("not a gob stream (truncated message)".into());
            }
            let (msg, rest) = c.0.split_at(len);
            input = rest;
            let mut m = Cur(msg);
            let id = m.int()?;
            if id < 0 {
                if def.is_some() {
                    return Err("more than one type in the stream".into());
                }
                let d = parse_struct_def(&mut m)?;
                if d.1 != -id {
                    return Err("inconsistent gob type id".into());
                }
                def = Some(d);
                continue;
            }
            let (_, tid, fields) = def.as_ref().ok_or("gob value before its type")?;
            if id != *tid {
                return Err(format!("unknown gob type id {id}"));
            }
            let mut v = BTreeMap::new();
            let mut field: i64 = -1;
            loop {
                let d = m.uint()?;
                if d == 0 {
                    break;
                }
                field += d as i64;
                let (name, ftype) = fields.get(field as usize).ok_or("gob field out of range")?;
                let text = match ftype {
                    1 | 3 => m.uint()?.to_string(),
                    2 => m.int()?.to_string(),
                    4 => {
                        let bits = m.uint()?.swap_bytes();
                        f64::from_bits(bits).to_string()
                    }
                    5 | 6 => String::from_utf8_lossy(m.bytes()?).into_owned(),
                    other => return Err(format!("field {name} has unsupported gob type {other}")),
                };
                v.insert(name.clone(), text);
            }
            values.push(v);
        }
        let (type_name, _, _) = def.ok_or("empty stream")?;
        Ok(Decoded { type_name, values })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tsbs::load::parse_load_log;
    use crate::tsbs::query::{parse_query_log, query_result};

    const FIX: &str = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/tests/fixtures/tsbs-real-postgresql"
    );

    fn fixture(p: &str) -> String {
        std::fs::read_to_string(format!("{FIX}/{p}")).unwrap()
    }

    #[test]
    fn burn_in_needs_more_queries_than_it_skips() {
        let b = BurnIn::new(1, 10).unwrap();
        assert_eq!((b.burn_in, b.max_queries), (1, 10));
        assert_eq!(BurnIn::new(1, 1).unwrap_err().exit_code(), 2);
        assert_eq!(BurnIn::new(0, 10).unwrap_err().exit_code(), 2);
    }

    #[test]
    fn generator_flags_per_mode() {
        let pg = QueryFlags::for_mode(Mode::Postgresql);
        assert!(pg
            .generator_args()
            .contains(&"--timescale-use-time-bucket=false".to_string()));
        let ts = QueryFlags::for_mode(Mode::Timescaledb);
        assert!(ts
            .generator_args()
            .contains(&"--timescale-use-time-bucket=true".to_string()));
        assert_ne!(pg.identity(), ts.identity());
        let help = fixture("help/tsbs_generate_queries.help.txt");
        for f in pg.generator_args() {
            let name = f.split('=').next().unwrap();
            assert!(
                help.contains(&format!("      {name} ")),
                "{name} not in the real help"
            );
        }
    }

    #[test]
    fn real_query_files_are_checked() {
        for dir in ["timescaledb-plainpg", "timescaledb-default"] {
            let c =
                check_query_file(Path::new(&format!("{FIX}/queries/{dir}/lastpoint.gob"))).unwrap();
            assert_eq!(c.queries, 10);
            assert_eq!(
                c.labels.into_iter().collect::<Vec<_>>(),
                ["TimescaleDB last row per host"]
            );
            let c = check_query_file(Path::new(&format!(
                "{FIX}/queries/{dir}/single-groupby-1-1-1.gob"
            )))
            .unwrap();
            assert_eq!(c.queries, 10);
        }
        // The decoded SQL is the generator's (its decoded.jsonl).
        let bytes = std::fs::read(format!(
            "{FIX}/queries/timescaledb-plainpg/single-groupby-1-1-1.gob"
        ))
        .unwrap();
        let decoded = gob::decode(&bytes).unwrap();
        let want: Vec<Value> =
            fixture("queries/timescaledb-plainpg/single-groupby-1-1-1.decoded.jsonl")
                .lines()
                .map(|l| serde_json::from_str(l).unwrap())
                .collect();
        assert_eq!(decoded.values.len(), want.len());
        for (got, want) in decoded.values.iter().zip(&want) {
            for k in ["HumanLabel", "HumanDescription", "Hypertable", "SqlQuery"] {
                assert_eq!(got.get(k).map(String::as_str), want[k].as_str(), "{k}");
            }
        }
        // The influx files the real runner "passes" with empty SQL are refused.
        for t in ["lastpoint", "single-groupby-1-1-1"] {
            let e =
                check_query_file(Path::new(&format!("{FIX}/queries/influx/{t}.gob"))).unwrap_err();
            assert_eq!(e.exit_code(), 4);
            assert!(e.message.contains("\"HTTP\""), "{}", e.message);
            assert!(e.message.contains("Influx"), "{}", e.message);
        }
        // Not gob at all.
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("x.gob");
        std::fs::write(&p, fixture("data/cpu-timescaledb.head30.txt")).unwrap();
        assert_eq!(check_query_file(&p).unwrap_err().exit_code(), 4);
    }

    #[test]
    fn the_existing_parsers_read_the_real_loader_output() {
        let log = parse_load_log(&fixture("load/success-plain-w8-b10000.stdout.txt"));
        let s = log.summary.unwrap();
        assert_eq!((s.metrics, s.workers), (864000, 8));
        assert_eq!(s.rows.map(|r| r.0), Some(86400));
        assert_eq!(
            log.results_file.as_deref(),
            Some("/srv/bench/load/plain-w8-b10000.json")
        );
        let log = parse_load_log(&fixture(
            "load/success-scale100-w8-b10000-reporting-period-1s.stdout.txt",
        ));
        assert!(!log.progress.is_empty());
        assert_eq!(log.summary.unwrap().rows.map(|r| r.0), Some(864000));
        // A failed load has no summary; its explanation is the two streams' first lines.
        let out = fixture("load/fail-hypertable-w8-b10000.stdout.txt");
        assert!(parse_load_log(&out).summary.is_none());
        assert_eq!(
            loader_failure(&out, &fixture("load/fail-hypertable-w8-b10000.stderr.txt")).unwrap(),
            "could not execute sql: CREATE EXTENSION IF NOT EXISTS timescaledb CASCADE: panic: ERROR: extension \"timescaledb\" is not available (SQLSTATE 0A000)"
        );
        assert_eq!(
            loader_failure("", &fixture("load/fail-influx-input.stderr.txt")).unwrap(),
            fixture("load/fail-influx-input.stderr.txt").trim_end()
        );
        // The results file, through the same reader as the other loaders'.
        let dir = tempfile::tempdir().unwrap();
        let res = dir.path().join("r.json");
        std::fs::write(&res, fixture("load/success-plain-w8-b10000.results.json")).unwrap();
        let r = crate::tsbs::load::load_result(
            &res,
            &fixture("load/success-plain-w8-b10000.stdout.txt"),
        )
        .unwrap();
        assert_eq!(
            (r.rows, r.metrics, r.workers, r.batch_size),
            (Some(86400), 864000, Some(8), Some(10000))
        );
        assert_eq!(r.start_time, Some(1796151695));
    }

    #[test]
    fn the_existing_parsers_read_the_real_runner_output() {
        let dir = tempfile::tempdir().unwrap();
        for (name, label, count) in [
            (
                "success-plainpg-lastpoint",
                "TimescaleDB last row per host",
                10,
            ),
            (
                "burnin1-max10-lastpoint",
                "TimescaleDB last row per host",
                9,
            ),
            ("success-plainpg-cpu-max-all-8", "", 10),
        ] {
            let out = fixture(&format!("run/{name}.stdout.txt"));
            let log = parse_query_log(&out).unwrap();
            assert_eq!(log.completed_queries, count, "{name}");
            if !label.is_empty() {
                assert_eq!(log.blocks[0].0, label);
            }
            let res = dir.path().join(format!("{name}.json"));
            std::fs::write(&res, fixture(&format!("run/{name}.results.json"))).unwrap();
            let r = query_result(&res, &out).unwrap();
            assert_eq!(r.all.count, count, "{name}");
            assert!(r.all.mean_ms > 0.0);
        }
        // The mismatch the runner does not see: an influx file "ran". Only the labels tell.
        let out = fixture("run/mismatch-influx-queryfile-lastpoint.stdout.txt");
        let log = parse_query_log(&out).unwrap();
        assert!(
            log.blocks[0].0.starts_with("Influx"),
            "{:?}",
            log.blocks[0].0
        );
    }
}
