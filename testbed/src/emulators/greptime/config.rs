//! Options of `greptime standalone start`: command line > config file (`-c`) > environment
//! (`<ENV_PREFIX>__SECTION__KEY`) > defaults, as the real binary layers them. The config file
//! accepts only the keys listed in the module documentation; anything else is refused.

use std::collections::BTreeMap;
use std::net::{SocketAddr, ToSocketAddrs};
use std::path::{Path, PathBuf};

use super::version::Version;

/// What the command line gave (`None` = not given).
#[derive(Debug, Default)]
pub struct CliArgs {
    pub http_addr: Option<String>,
    pub grpc_bind_addr: Option<String>,
    pub mysql_addr: Option<String>,
    pub postgres_addr: Option<String>,
    pub influxdb_enable: bool,
    pub config_file: Option<String>,
    pub env_prefix: String,
    pub data_home: Option<String>,
    pub log_dir: Option<String>,
    pub log_level: Option<String>,
}

/// The resolved options.
#[derive(Debug, Clone)]
pub struct Options {
    pub http_addr: SocketAddr,
    pub http_timeout: Option<String>,
    pub body_limit: u64,
    pub influxdb_enable: bool,
    pub grpc_addr: SocketAddr,
    pub mysql_addr: Option<SocketAddr>,
    pub postgres_addr: Option<SocketAddr>,
    pub data_home: PathBuf,
    pub wal_dir: PathBuf,
    pub log_dir: Option<PathBuf>,
    pub log_level: String,
    /// Default true, as the real server (which then writes `.greptimedb-telemetry-uuid`).
    pub enable_telemetry: bool,
    /// `[storage] type = "S3"`: where SSTs, indexes and manifests go.
    pub object_store: Option<S3Options>,
    /// The local write cache: on with object storage (the real datanode forces
    /// `enable_write_cache = true` then), at `write_cache_path` (default: the data home).
    pub write_cache: Option<WriteCache>,
    /// The region engines in force: the config's list when it has one (listing one replaces
    /// the real server's default list of mito and file), else both.
    pub region_engines: Vec<String>,
    /// The mito engine's buffer and cache sizes in bytes, in the order of [`MITO_SIZES`]: the
    /// config's, else what the real server takes of the memory it sees ([`total_mem_bytes`]).
    pub mito_sizes: Vec<(&'static str, u64)>,
    /// Each of [`INDEX_BUILDS`]' `mem_threshold_on_create` as the config sets it (`None`:
    /// "auto").
    pub index_thresholds: Vec<(&'static str, Option<Threshold>)>,
}

/// An index build's memory threshold other than "auto".
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Threshold {
    Unlimited,
    Size(u64),
}

/// The mito keys the real v1.0.2 sizes from the machine's memory (`index.*` in
/// `[region_engine.mito.index]`).
pub const MITO_SIZES: [&str; 10] = [
    "global_write_buffer_size",
    "global_write_buffer_reject_size",
    "sst_meta_cache_size",
    "vector_cache_size",
    "page_cache_size",
    "selector_result_cache_size",
    "range_result_cache_size",
    "index.metadata_cache_size",
    "index.content_cache_size",
    "index.result_cache_size",
];

/// The index builds whose `mem_threshold_on_create` the real server leaves `"auto"` (a
/// sixteenth of the memory it sees, worked out when an index is built).
pub const INDEX_BUILDS: [&str; 3] = ["inverted_index", "fulltext_index", "bloom_filter_index"];

/// The memory the real server sizes its buffers and caches from
/// (`common_stat::get_total_memory_bytes`): the limit it reads at `/sys/fs/cgroup` itself
/// (`memory.max` when that is a cgroup v2 mount, else `memory.limit_in_bytes` there, a file a
/// v1 host keeps under `memory/`), never its own group's; no limit there, or one above 1 PB,
/// is the host's memory. A server in a group of its own (tsbsctl's `--memory`) therefore sizes
/// from the host.
pub fn total_mem_bytes() -> u64 {
    let read = |p: &str| {
        std::fs::read_to_string(p)
            .ok()
            .and_then(|s| s.trim().parse::<u64>().ok())
    };
    let v2 = Path::new("/sys/fs/cgroup/cgroup.controllers").exists();
    let file = if v2 {
        "memory.max"
    } else {
        "memory.limit_in_bytes"
    };
    match read(&format!("/sys/fs/cgroup/{file}")) {
        Some(limit) if limit <= 1 << 50 => limit,
        _ => std::fs::read_to_string("/proc/meminfo")
            .ok()
            .and_then(|s| {
                s.lines()
                    .find_map(|l| l.strip_prefix("MemTotal:"))
                    .and_then(|v| v.trim().trim_end_matches("kB").trim().parse::<u64>().ok())
            })
            .map_or(0, |kb| kb * 1024),
    }
}

/// What v1.0.2 takes of a machine of `m` bytes, per key of [`MITO_SIZES`]
/// (src/mito2/src/config.rs).
fn default_mito_size(key: &str, m: u64) -> u64 {
    let write_buffer = (m / 8).min(1 << 30);
    match key {
        "global_write_buffer_size" => write_buffer,
        "global_write_buffer_reject_size" => write_buffer * 2,
        "sst_meta_cache_size" => (m / 32).min(128 << 20),
        "page_cache_size" => m / 8,
        // IndexConfig::adjust_buffer_and_cache_size: below its defaults only under 2 GiB.
        "index.metadata_cache_size" => (m / 32).min(64 << 20),
        "index.content_cache_size" | "index.result_cache_size" => (m / 16).min(128 << 20),
        _ => (m / 16).min(512 << 20),
    }
}

/// `[storage]` of type S3. The keys come from the file or the environment
/// (`<PREFIX>__STORAGE__ACCESS_KEY_ID`, `..._SECRET_ACCESS_KEY`); Debug never shows them.
#[derive(Clone)]
pub struct S3Options {
    pub bucket: String,
    /// Object keys start with `<root>/` (leading and trailing slashes dropped, as OpenDAL's
    /// `normalize_dir`).
    pub root: String,
    pub endpoint: String,
    pub region: String,
    pub access_key_id: String,
    pub secret_access_key: String,
}

impl std::fmt::Debug for S3Options {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "S3Options {{ bucket: {:?}, root: {:?}, endpoint: {:?}, region: {:?} }}",
            self.bucket, self.root, self.endpoint, self.region
        )
    }
}

#[derive(Debug, Clone)]
pub struct WriteCache {
    pub path: PathBuf,
    pub size: u64,
}

#[derive(Debug, Clone)]
enum Val {
    Str(String),
    Bool(bool),
}

/// Keys the emulator understands, per section (`""` = top level), with their kinds.
fn known_keys(v: &Version) -> Vec<(&'static str, &'static str, bool)> {
    // (section, key, is_bool)
    let mut k = vec![
        ("", "default_column_prefix", false),
        ("", "enable_telemetry", true),
        ("http", "addr", false),
        ("http", "timeout", false),
        ("http", "body_limit", false),
        ("influxdb", "enable", true),
        ("storage", "type", false),
        ("storage", "data_home", false),
        ("storage", "bucket", false),
        ("storage", "root", false),
        ("storage", "endpoint", false),
        ("storage", "region", false),
        ("storage", "access_key_id", false),
        ("storage", "secret_access_key", false),
        ("region_engine.mito", "enable_write_cache", true),
        ("region_engine.mito", "write_cache_path", false),
        ("region_engine.mito", "write_cache_size", false),
        // What the real server sizes from the machine's memory (`adjust_buffer_and_cache_size`).
        ("region_engine.mito", "global_write_buffer_size", false),
        (
            "region_engine.mito",
            "global_write_buffer_reject_size",
            false,
        ),
        ("region_engine.mito", "sst_meta_cache_size", false),
        ("region_engine.mito", "vector_cache_size", false),
        ("region_engine.mito", "page_cache_size", false),
        ("region_engine.mito", "selector_result_cache_size", false),
        ("region_engine.mito", "range_result_cache_size", false),
        ("region_engine.mito.index", "metadata_cache_size", false),
        ("region_engine.mito.index", "content_cache_size", false),
        ("region_engine.mito.index", "result_cache_size", false),
        (
            "region_engine.mito.inverted_index",
            "mem_threshold_on_create",
            false,
        ),
        (
            "region_engine.mito.fulltext_index",
            "mem_threshold_on_create",
            false,
        ),
        (
            "region_engine.mito.bloom_filter_index",
            "mem_threshold_on_create",
            false,
        ),
        ("logging", "dir", false),
        ("logging", "level", false),
        ("wal", "dir", false),
        ("wal", "provider", false),
        ("grpc", v.grpc_addr_key(), false),
        ("mysql", "enable", true),
        ("mysql", "addr", false),
        ("postgres", "enable", true),
        ("postgres", "addr", false),
    ];
    if v.at_least(0, 10, 0) {
        k.push(("http", "enable_api_server", true));
        k.push(("http", "api_server_addr", false));
    }
    k
}

/// Parses the config file strictly into `section.key` → value.
fn read_config(path: &Path, v: &Version) -> Result<BTreeMap<String, Val>, String> {
    let text = std::fs::read_to_string(path)
        .map_err(|e| format!("cannot read config file {}: {e}", path.display()))?;
    let table: toml::Table = text
        .parse()
        .map_err(|e| format!("invalid config file {}: {e}", path.display()))?;
    let keys = known_keys(v);
    let mut out = BTreeMap::new();
    let mut check = |section: &str, key: &str, value: &toml::Value| -> Result<(), String> {
        let full = if section.is_empty() {
            key.to_string()
        } else {
            format!("{section}.{key}")
        };
        let Some((_, _, is_bool)) = keys.iter().find(|(s, k, _)| *s == section && *k == key) else {
            return Err(format!(
                "invalid config file {}: unknown key `{full}` (this emulator accepts only the keys tsbsctl uses)",
                path.display()
            ));
        };
        let val = match (is_bool, value) {
            (true, toml::Value::Boolean(b)) => Val::Bool(*b),
            (false, toml::Value::String(s)) => Val::Str(s.clone()),
            _ => {
                return Err(format!(
                    "invalid config file {}: `{full}` must be a {}",
                    path.display(),
                    if *is_bool { "boolean" } else { "string" }
                ))
            }
        };
        out.insert(full, val);
        Ok(())
    };
    let mut engines_listed = None;
    for (name, value) in &table {
        match value {
            // `[[region_engine]]` + `[region_engine.mito]` / `[region_engine.file]`: one engine
            // per element.
            toml::Value::Array(engines) if name == "region_engine" => {
                let listed: Vec<&str> = engines
                    .iter()
                    .filter_map(|e| e.as_table()?.keys().next().map(String::as_str))
                    .collect();
                engines_listed = Some(listed.join(","));
                for e in engines {
                    let Some(t) = e.as_table().filter(|t| t.len() == 1) else {
                        return Err(format!(
                            "invalid config file {}: each [[region_engine]] holds one engine",
                            path.display()
                        ));
                    };
                    for (engine, opts) in t {
                        let Some(opts) = opts.as_table() else {
                            return Err(format!(
                                "invalid config file {}: region_engine.{engine} must be a table",
                                path.display()
                            ));
                        };
                        match engine.as_str() {
                            "mito" => {
                                for (k, v) in opts {
                                    match v {
                                        // `[region_engine.mito.index]` and the like.
                                        toml::Value::Table(sub) => {
                                            let section = format!("region_engine.mito.{k}");
                                            for (k2, v2) in sub {
                                                check(&section, k2, v2)?;
                                            }
                                        }
                                        _ => check("region_engine.mito", k, v)?,
                                    }
                                }
                            }
                            "file" if opts.is_empty() => {}
                            _ => {
                                return Err(format!(
                                    "invalid config file {}: unknown region engine options `region_engine.{engine}` (this emulator accepts only the keys tsbsctl uses)",
                                    path.display()
                                ))
                            }
                        }
                    }
                }
            }
            toml::Value::Table(t) => {
                if !keys.iter().any(|(s, _, _)| s == name) {
                    return Err(format!(
                        "invalid config file {}: unknown section `[{name}]` (this emulator accepts only the keys tsbsctl uses)",
                        path.display()
                    ));
                }
                for (k, val) in t {
                    check(name, k, val)?;
                }
            }
            other => check("", name, other)?,
        }
    }
    if let Some(listed) = engines_listed {
        out.insert("region_engine".into(), Val::Str(listed));
    }
    Ok(out)
}

/// `<prefix>__HTTP__ADDR=...` variables for known keys (others are ignored, as the real
/// layered config ignores what it does not know).
fn read_env(prefix: &str, v: &Version) -> BTreeMap<String, Val> {
    let keys = known_keys(v);
    let mut out = BTreeMap::new();
    let start = format!("{prefix}__");
    for (name, value) in std::env::vars() {
        let Some(rest) = name.strip_prefix(&start) else {
            continue;
        };
        let parts: Vec<String> = rest.split("__").map(|p| p.to_ascii_lowercase()).collect();
        let (section, key) = match parts.as_slice() {
            [k] => (String::new(), k.clone()),
            [s, k] => (s.clone(), k.clone()),
            _ => continue,
        };
        if let Some((_, _, is_bool)) = keys.iter().find(|(s, k, _)| *s == section && *k == key) {
            let full = if section.is_empty() {
                key
            } else {
                format!("{section}.{key}")
            };
            let val = if *is_bool {
                Val::Bool(value.eq_ignore_ascii_case("true"))
            } else {
                Val::Str(value)
            };
            out.insert(full, val);
        }
    }
    out
}

/// `64MB`, `512KiB`, `1GB`, `1024` (bytes); binary multiples as GreptimeDB's ReadableSize.
pub fn parse_size(s: &str) -> Option<u64> {
    let s = s.trim();
    let split = s
        .find(|c: char| !c.is_ascii_digit() && c != '.')
        .unwrap_or(s.len());
    let (num, unit) = s.split_at(split);
    let num: f64 = num.parse().ok()?;
    let mult: u64 = match unit.trim().to_ascii_uppercase().as_str() {
        "" | "B" => 1,
        "K" | "KB" | "KIB" => 1 << 10,
        "M" | "MB" | "MIB" => 1 << 20,
        "G" | "GB" | "GIB" => 1 << 30,
        "T" | "TB" | "TIB" => 1 << 40,
        _ => return None,
    };
    Some((num * mult as f64) as u64)
}

fn parse_addr(what: &str, s: &str) -> Result<SocketAddr, String> {
    s.to_socket_addrs()
        .ok()
        .and_then(|mut a| a.next())
        .ok_or_else(|| format!("invalid {what} address `{s}` (expected host:port)"))
}

/// Resolves the options. Errors are configuration errors (exit 2 at the caller).
pub fn resolve(cli: &CliArgs, v: &Version) -> Result<Options, String> {
    let file = match &cli.config_file {
        Some(p) => read_config(Path::new(p), v)?,
        None => BTreeMap::new(),
    };
    let env = read_env(&cli.env_prefix, v);
    let get = |key: &str| file.get(key).or_else(|| env.get(key)).cloned();
    let get_str = |key: &str| match get(key) {
        Some(Val::Str(s)) => Some(s),
        _ => None,
    };
    let get_bool = |key: &str, default: bool| match get(key) {
        Some(Val::Bool(b)) => b,
        _ => default,
    };

    let object_store = match get_str("storage.type").as_deref() {
        None | Some("File") => None,
        Some("S3") => {
            let need = |k: &str| {
                get_str(&format!("storage.{k}"))
                    .filter(|v| !v.is_empty())
                    .ok_or_else(|| {
                        format!(
                            "storage.type \"S3\" without storage.{k} is not emulated (the real one would fall back to AWS defaults)"
                        )
                    })
            };
            Some(S3Options {
                bucket: need("bucket")?,
                root: get_str("storage.root")
                    .unwrap_or_default()
                    .trim_matches('/')
                    .to_string(),
                endpoint: need("endpoint")?.trim_end_matches('/').to_string(),
                region: get_str("storage.region").unwrap_or_else(|| "us-east-1".into()),
                access_key_id: need("access_key_id")?,
                secret_access_key: need("secret_access_key")?,
            })
        }
        Some(t) => {
            return Err(format!(
                "storage.type `{t}` is not emulated (only \"File\" and \"S3\")"
            ))
        }
    };
    if let Some(p) = get_str("wal.provider") {
        if p != "raft_engine" {
            return Err(format!(
                "wal.provider `{p}` is not emulated (only \"raft_engine\")"
            ));
        }
    }
    if get_bool("http.enable_api_server", false) {
        return Err("http.enable_api_server is not emulated".into());
    }

    let http_addr = cli
        .http_addr
        .clone()
        .or_else(|| get_str("http.addr"))
        .unwrap_or_else(|| "127.0.0.1:4000".into());
    let grpc_key = format!("grpc.{}", v.grpc_addr_key());
    let grpc_addr = cli
        .grpc_bind_addr
        .clone()
        .or_else(|| get_str(&grpc_key))
        .unwrap_or_else(|| "127.0.0.1:4001".into());
    let mysql = if get_bool("mysql.enable", true) {
        Some(
            cli.mysql_addr
                .clone()
                .or_else(|| get_str("mysql.addr"))
                .unwrap_or_else(|| "127.0.0.1:4002".into()),
        )
    } else {
        None
    };
    let postgres = if get_bool("postgres.enable", true) {
        Some(
            cli.postgres_addr
                .clone()
                .or_else(|| get_str("postgres.addr"))
                .unwrap_or_else(|| "127.0.0.1:4003".into()),
        )
    } else {
        None
    };
    let data_home = PathBuf::from(
        cli.data_home
            .clone()
            .or_else(|| get_str("storage.data_home"))
            .unwrap_or_else(|| v.default_data_home().into()),
    );
    let wal_dir = get_str("wal.dir")
        .map(PathBuf::from)
        .unwrap_or_else(|| data_home.join("wal"));
    let log_dir = match cli.log_dir.clone().or_else(|| get_str("logging.dir")) {
        Some(d) if d.is_empty() => None,
        Some(d) => Some(PathBuf::from(d)),
        None => Some(data_home.join("logs")),
    };
    let body_limit = match get_str("http.body_limit") {
        Some(s) => parse_size(&s).ok_or_else(|| format!("invalid http.body_limit `{s}`"))?,
        None => 64 << 20,
    };
    if let Some(t) = get_str("http.timeout") {
        let ok = t
            .strip_suffix("ms")
            .or_else(|| t.strip_suffix('s'))
            .or_else(|| t.strip_suffix('m'))
            .is_some_and(|n| n.parse::<u64>().is_ok());
        if !ok {
            return Err(format!("invalid http.timeout `{t}` (e.g. \"30s\", \"0s\")"));
        }
    }
    let log_level = cli
        .log_level
        .clone()
        .or_else(|| get_str("logging.level"))
        .unwrap_or_else(|| "info".into());
    // The real datanode turns the write cache on whenever the storage is an object store.
    let write_cache =
        if object_store.is_some() || get_bool("region_engine.mito.enable_write_cache", false) {
            let size = match get_str("region_engine.mito.write_cache_size") {
                Some(s) => parse_size(&s)
                    .ok_or_else(|| format!("invalid region_engine.mito.write_cache_size `{s}`"))?,
                None => 5 << 30,
            };
            Some(WriteCache {
                path: get_str("region_engine.mito.write_cache_path")
                    .filter(|p| !p.trim().is_empty())
                    .map(PathBuf::from)
                    .unwrap_or_else(|| data_home.clone()),
                size,
            })
        } else {
            None
        };
    let region_engines = match get_str("region_engine") {
        Some(list) => list.split(',').map(String::from).collect(),
        None => vec!["mito".into(), "file".into()],
    };
    let host = total_mem_bytes();
    let mut mito_sizes = Vec::new();
    for key in MITO_SIZES {
        let full = format!("region_engine.mito.{key}");
        let bytes = match get_str(&full) {
            Some(s) => parse_size(&s).ok_or_else(|| format!("invalid {full} `{s}`"))?,
            None => default_mito_size(key, host),
        };
        mito_sizes.push((key, bytes));
    }
    let mut index_thresholds = Vec::new();
    for build in INDEX_BUILDS {
        let full = format!("region_engine.mito.{build}.mem_threshold_on_create");
        let t = match get_str(&full) {
            None => None,
            Some(s) if s.eq_ignore_ascii_case("auto") => None,
            Some(s) if s.eq_ignore_ascii_case("unlimited") => Some(Threshold::Unlimited),
            Some(s) => Some(Threshold::Size(
                parse_size(&s).ok_or_else(|| format!("invalid {full} `{s}`"))?,
            )),
        };
        index_thresholds.push((build, t));
    }
    Ok(Options {
        object_store,
        write_cache,
        region_engines,
        mito_sizes,
        index_thresholds,
        http_addr: parse_addr("HTTP", &http_addr)?,
        http_timeout: get_str("http.timeout"),
        body_limit,
        influxdb_enable: cli.influxdb_enable || get_bool("influxdb.enable", true),
        grpc_addr: parse_addr("gRPC", &grpc_addr)?,
        mysql_addr: mysql.map(|a| parse_addr("MySQL", &a)).transpose()?,
        postgres_addr: postgres.map(|a| parse_addr("PostgreSQL", &a)).transpose()?,
        data_home,
        wal_dir,
        log_dir,
        log_level,
        enable_telemetry: get_bool("enable_telemetry", true),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes() {
        assert_eq!(parse_size("64MB"), Some(64 << 20));
        assert_eq!(parse_size("1GiB"), Some(1 << 30));
        assert_eq!(parse_size("10"), Some(10));
        assert_eq!(parse_size("10XB"), None);
    }

    #[test]
    fn strict_config_keys() {
        let dir = tempfile::tempdir().unwrap();
        let v = Version::parse("1.2.0").unwrap();
        let p = dir.path().join("c.toml");
        std::fs::write(
            &p,
            "[http]\naddr = \"127.0.0.1:5000\"\nbody_limit = \"1MB\"\n[grpc]\nbind_addr = \"127.0.0.1:5001\"\n[mysql]\nenable = false\n[postgres]\nenable = false\n[storage]\ntype = \"File\"\ndata_home = \"/x\"\n",
        )
        .unwrap();
        let cli = CliArgs {
            config_file: Some(p.to_string_lossy().into()),
            env_prefix: "TESTBED_NO_SUCH_PREFIX".into(),
            ..Default::default()
        };
        let o = resolve(&cli, &v).unwrap();
        assert_eq!(o.http_addr.port(), 5000);
        assert_eq!(o.grpc_addr.port(), 5001);
        assert!(o.mysql_addr.is_none() && o.postgres_addr.is_none());
        assert_eq!(o.body_limit, 1 << 20);
        assert_eq!(o.data_home, PathBuf::from("/x"));
        assert_eq!(o.log_dir, Some(PathBuf::from("/x/logs")));

        std::fs::write(&p, "[http]\nadr = \"127.0.0.1:5000\"\n").unwrap();
        let e = resolve(&cli, &v).unwrap_err();
        assert!(e.contains("unknown key `http.adr`"), "{e}");
        std::fs::write(&p, "[grpc]\naddr = \"127.0.0.1:5000\"\n").unwrap();
        assert!(resolve(&cli, &v).is_err());
        assert!(resolve(&cli, &Version::parse("0.9.5").unwrap()).is_ok());
        // Environment layer: below the file, above the defaults.
        std::env::set_var("TESTBED_GT_CFG_TEST__HTTP__BODY_LIMIT", "2MB");
        std::env::set_var("TESTBED_GT_CFG_TEST__STORAGE__DATA_HOME", "/from-env");
        std::fs::write(&p, "[storage]\ndata_home = \"/from-file\"\n").unwrap();
        let env_cli = CliArgs {
            config_file: Some(p.to_string_lossy().into()),
            env_prefix: "TESTBED_GT_CFG_TEST".into(),
            ..Default::default()
        };
        let o = resolve(&env_cli, &v).unwrap();
        assert_eq!(o.body_limit, 2 << 20);
        assert_eq!(o.data_home, PathBuf::from("/from-file"));
        std::fs::write(&p, "[s3]\nbucket = \"b\"\n").unwrap();
        assert!(resolve(&cli, &v).unwrap_err().contains("unknown section"));
    }

    #[test]
    fn s3_storage_takes_its_keys_from_the_environment() {
        let dir = tempfile::tempdir().unwrap();
        let v = Version::parse("1.1.4").unwrap();
        let p = dir.path().join("c.toml");
        let cfg = "[storage]\ntype = \"S3\"\ndata_home = \"/d\"\nbucket = \"b\"\nroot = \"/r/s1/\"\nendpoint = \"http://127.0.0.1:9/\"\nregion = \"us-east-1\"\n\n[[region_engine]]\n[region_engine.mito]\nenable_write_cache = true\nwrite_cache_path = \"/c\"\nwrite_cache_size = \"1048576B\"\n[[region_engine]]\n[region_engine.file]\n";
        std::fs::write(&p, cfg).unwrap();
        let cli = CliArgs {
            config_file: Some(p.to_string_lossy().into()),
            env_prefix: "TESTBED_GT_S3_TEST".into(),
            ..Default::default()
        };
        // No keys anywhere: refused (the real one would go looking for AWS defaults).
        assert!(resolve(&cli, &v).unwrap_err().contains("access_key_id"));
        std::env::set_var("TESTBED_GT_S3_TEST__STORAGE__ACCESS_KEY_ID", "ak");
        std::env::set_var("TESTBED_GT_S3_TEST__STORAGE__SECRET_ACCESS_KEY", "sk-value");
        let o = resolve(&cli, &v).unwrap();
        let s3 = o.object_store.clone().unwrap();
        assert_eq!((s3.bucket.as_str(), s3.root.as_str()), ("b", "r/s1"));
        assert_eq!(s3.endpoint, "http://127.0.0.1:9");
        assert_eq!(s3.secret_access_key, "sk-value");
        assert!(!format!("{s3:?}").contains("sk-value"));
        let c = o.write_cache.unwrap();
        assert_eq!((c.path, c.size), (PathBuf::from("/c"), 1 << 20));
        std::fs::write(
            &p,
            cfg.replace("[region_engine.file]", "[region_engine.metric]\nx = 1"),
        )
        .unwrap();
        assert!(resolve(&cli, &v)
            .unwrap_err()
            .contains("region_engine.metric"));
        std::fs::write(&p, cfg.replace("\"S3\"", "\"Gcs\"")).unwrap();
        assert!(resolve(&cli, &v).unwrap_err().contains("not emulated"));
        // File storage has no write cache unless asked for.
        std::fs::write(&p, "[storage]\ntype = \"File\"\n").unwrap();
        let o = resolve(&cli, &v).unwrap();
        assert!(o.object_store.is_none() && o.write_cache.is_none());
    }
}
