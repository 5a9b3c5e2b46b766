//! The `influxdb3` command line, built with clap as the real binary is, so usage errors look
//! and exit (2) like the real ones.

use super::{Build, Edition, Knobs};
use clap::{value_parser, Arg, ArgAction, Command};
use std::net::{SocketAddr, ToSocketAddrs};
use std::path::PathBuf;
use std::time::Duration;

const CORE_CLUSTER_ID_ERROR: &str = "You've incorrectly specified a cluster-id for InfluxDB 3 Core OSS.\n\nCluster-id is an InfluxDB 3 Enterprise parameter. \nDid you install Core in an upgrade or run Core by mistake?\n\nRemove --cluster-id to run InfluxDB 3 Core OSS.";

/// What `serve` was asked to do.
#[derive(Debug, Clone)]
pub struct ServeConfig {
    pub object_store: String,
    pub data_dir: Option<PathBuf>,
    pub node_id: String,
    pub cluster_id: Option<String>,
    pub http_bind: SocketAddr,
    pub without_auth: bool,
    pub disable_authz: Vec<String>,
    pub max_request_size: usize,
    /// Only when given on the command line or in its variable (then it beats the knob).
    pub wal_flush_interval: Option<Duration>,
    pub gen1_minutes: u64,
    pub tcp_listener_file: Option<PathBuf>,
    pub license_email: Option<String>,
    pub license_type: Option<String>,
    pub license_file: Option<PathBuf>,
    /// The `--object-store s3` options (read whatever the store is, as clap does).
    pub s3: super::objects::S3Config,
    /// The query engine's memory pool in bytes (`--exec-mem-pool-bytes`, 3.11:
    /// `--exec-mem-pool-size`; default 20% of [`total_mem_bytes`]), served as
    /// `datafusion_mem_pool_bytes{state="limit"}`.
    pub exec_mem_pool_bytes: u64,
}

/// The memory the real server sizes its percentages from (`total_mem_bytes`,
/// influxdb3_clap_blocks memory_size.rs, through sysinfo 0.37's `cgroup_limits`): the cgroup
/// limit read at the ROOT of the hierarchy (`/sys/fs/cgroup/memory.max` for cgroup v2,
/// `/sys/fs/cgroup/memory/memory.limit_in_bytes` for v1), never the process's own group,
/// capped by the machine's memory. A server in a group of its own below the root (as tsbsctl's
/// `--memory` makes) therefore sizes itself from the host.
pub fn total_mem_bytes() -> u64 {
    let read = |p: &str| {
        std::fs::read_to_string(p)
            .ok()
            .and_then(|s| s.trim().parse::<u64>().ok())
    };
    let mem_total = std::fs::read_to_string("/proc/meminfo")
        .ok()
        .and_then(|s| {
            s.lines()
                .find_map(|l| l.strip_prefix("MemTotal:"))
                .and_then(|v| v.trim().trim_end_matches("kB").trim().parse::<u64>().ok())
        })
        .map_or(0, |kb| kb * 1024);
    let v2 = read("/sys/fs/cgroup/memory.current").is_some()
        && std::path::Path::new("/sys/fs/cgroup/memory.stat").exists();
    if v2 {
        return read("/sys/fs/cgroup/memory.max").map_or(mem_total, |m| m.min(mem_total));
    }
    match (
        read("/sys/fs/cgroup/memory/memory.usage_in_bytes"),
        read("/sys/fs/cgroup/memory/memory.limit_in_bytes"),
    ) {
        (Some(_), Some(limit)) => limit.min(mem_total),
        _ => mem_total,
    }
}

/// A `MemorySizeMb` value (src serve.rs, later influxdb3_clap_blocks memory_size.rs): `N%` of
/// [`total_mem_bytes`], or a bare number of MEGABYTES (10^6 bytes before 3.9, 2^20 since; the
/// real switch was in 3.8.1); `Nb` bytes from 3.2; `Ngb`/`Nmb`/`Nkb` from 3.9.
fn memory_size_mb(build: &Build) -> impl Fn(&str) -> Result<u64, String> + Clone + Send + Sync {
    let (bytes_suffix, units, mb) = (
        build.at_least(3, 2),
        build.at_least(3, 9),
        if build.at_least(3, 9) {
            1u64 << 20
        } else {
            1_000_000
        },
    );
    move |s: &str| {
        let lower = s.trim().to_ascii_lowercase();
        if lower.ends_with('%') || (units && lower.ends_with("kb")) {
            return parse_memory_size_mb(s);
        }
        if units && (lower.ends_with("gb") || lower.ends_with("mb")) {
            return parse_memory_size_mb(s);
        }
        if let Some(n) = lower.strip_suffix('b').filter(|_| bytes_suffix) {
            return n
                .parse::<u64>()
                .map_err(|_| "failed to parse value as unsigned integer".to_string());
        }
        lower
            .parse::<u64>()
            .map(|n| n * mb)
            .map_err(|_| "failed to parse value as unsigned integer".to_string())
    }
}

/// 3.10's `MemorySizeMb` (influxdb3_clap_blocks memory_size.rs): `N%` of [`total_mem_bytes`],
/// `Ngb`/`Nmb`/`Nkb`/`Nb`, or a bare number of MEGABYTES.
fn parse_memory_size_mb(s: &str) -> Result<u64, String> {
    let lower = s.trim().to_ascii_lowercase();
    let num = |t: &str, what: &str| {
        t.trim()
            .parse::<u64>()
            .map_err(|e| format!("failed to parse '{s}' as a memory size in {what}: {e}"))
    };
    if let Some(p) = lower.strip_suffix('%') {
        let p = p.parse::<u64>().map_err(|e| {
            format!("failed to parse '{s}' as a percentage of available memory: {e}")
        })?;
        if p > 100 {
            return Err(format!(
                "failed to parse '{s}' as a percentage of available memory: relative memory size must be in [0, 100] but is {p}"
            ));
        }
        return Ok((p as f64 / 100.0 * total_mem_bytes() as f64).round() as u64);
    }
    if let Some(n) = lower.strip_suffix("gb") {
        return Ok(num(n, "GB")? << 30);
    }
    if let Some(n) = lower.strip_suffix("mb") {
        return Ok(num(n, "MB")? << 20);
    }
    if let Some(n) = lower.strip_suffix("kb") {
        return Ok(num(n, "KB")? << 10);
    }
    if let Some(n) = lower.strip_suffix('b') {
        return num(n, "bytes");
    }
    Ok(num(&lower, "MB")? << 20)
}

/// The parser of a memory size of `build`'s serve flags.
fn memory_size(build: &Build) -> clap::builder::ValueParser {
    if build.at_least(3, 11) {
        clap::builder::ValueParser::new(parse_memory_size_units)
    } else {
        clap::builder::ValueParser::new(memory_size_mb(build))
    }
}

/// 3.11's sizes need a unit (`b`, `kb`, `mb`, `gb`, `tb`) or a percentage: a bare number is
/// refused, "to avoid a silent change in meaning" (docs-v2 config-options.md).
fn parse_memory_size_units(s: &str) -> Result<u64, String> {
    let t = s.trim();
    if t.ends_with('%') {
        return parse_memory_size_mb(s);
    }
    if t.chars().all(|c| c.is_ascii_digit()) {
        return Err(format!(
            "invalid size '{s}': a unit is required (b, kb, mb, gb or tb), or a percentage"
        ));
    }
    if let Some(n) = t.to_ascii_lowercase().strip_suffix("tb") {
        let n: u64 = n.parse().map_err(|_| format!("invalid size '{s}'"))?;
        return Ok(n << 40);
    }
    parse_size_with_units(s).map(|n| n as u64)
}

/// The serve flags sized from memory: (id, id of the deprecated name, name before 3.11,
/// name from 3.11, default).
type MemorySize = (
    &'static str,
    &'static str,
    &'static str,
    &'static str,
    &'static str,
);
const MEMORY_SIZES: [MemorySize; 3] = [
    (
        "exec-mem-pool",
        "exec-mem-pool-legacy",
        "exec-mem-pool-bytes",
        "exec-mem-pool-size",
        "20%",
    ),
    (
        "parquet-mem-cache",
        "parquet-mem-cache-legacy",
        "parquet-mem-cache-size",
        "file-cache-size",
        "20%",
    ),
    (
        "force-snapshot-mem",
        "force-snapshot-mem-legacy",
        "force-snapshot-mem-threshold",
        "force-snapshot-mem-size",
        "50%",
    ),
];

/// A memory size as the server resolves it: the deprecated name where it was given (3.11
/// warns at start-up), else the flag or its default.
fn memory_size_given(m: &clap::ArgMatches, id: &str) -> u64 {
    let (_, legacy, old, new, _) = MEMORY_SIZES.iter().find(|s| s.0 == id).expect("known");
    if let Ok(Some(v)) = m.try_get_one::<u64>(legacy) {
        super::log(
            "WARN",
            "influxdb3::commands::serve",
            "deprecated option in use",
            &[("name", format!("--{old}")), ("use", format!("--{new}"))],
        );
        return *v;
    }
    *m.get_one::<u64>(id).expect("default")
}

fn command(build: &Build) -> Command {
    let long_version = format!(
        "{}, {}, revision {}",
        build.edition.product_name(),
        build.version,
        build.revision
    );
    let mut serve = Command::new("serve")
        .about("Run the InfluxDB 3 server")
        .arg(
            Arg::new("object-store")
                .long("object-store")
                .value_name("OBJECT_STORE")
                .env("INFLUXDB3_OBJECT_STORE")
                .value_parser([
                    "memory",
                    "memory-throttled",
                    "file",
                    "s3",
                    "google",
                    "azure",
                ])
                .required(true),
        )
        .arg(
            Arg::new("data-dir")
                .long("data-dir")
                .value_name("DATA_DIR")
                .env("INFLUXDB3_DB_DIR")
                .value_parser(value_parser!(PathBuf))
                .required_if_eq("object-store", "file"),
        )
        // The S3 options of the real `ObjectStoreConfig` (influxdb3_clap_blocks
        // object_store.rs, v3.10.1): the keys come from the flags or, preferably, from
        // `AWS_ACCESS_KEY_ID` / `AWS_SECRET_ACCESS_KEY` (values hidden from the help).
        .arg(
            Arg::new("bucket")
                .long("bucket")
                .value_name("BUCKET")
                .env("INFLUXDB3_BUCKET"),
        )
        .arg(
            Arg::new("aws-access-key-id")
                .long("aws-access-key-id")
                .value_name("AWS_ACCESS_KEY_ID")
                .env("AWS_ACCESS_KEY_ID")
                .hide_env_values(true)
                .default_value(""),
        )
        .arg(
            Arg::new("aws-secret-access-key")
                .long("aws-secret-access-key")
                .value_name("AWS_SECRET_ACCESS_KEY")
                .env("AWS_SECRET_ACCESS_KEY")
                .hide_env_values(true)
                .default_value(""),
        )
        .arg(
            Arg::new("aws-default-region")
                .long("aws-default-region")
                .value_name("AWS_DEFAULT_REGION")
                .env("AWS_DEFAULT_REGION")
                .default_value("us-east-1"),
        )
        .arg(
            Arg::new("aws-endpoint")
                .long("aws-endpoint")
                .value_name("AWS_ENDPOINT")
                .env("AWS_ENDPOINT")
                .value_parser(parse_endpoint),
        )
        .arg(
            Arg::new("aws-allow-http")
                .long("aws-allow-http")
                .env("AWS_ALLOW_HTTP")
                .action(ArgAction::SetTrue),
        )
        .arg(
            Arg::new("node-id")
                .long("node-id")
                .alias("host-id")
                .value_name("NODE_IDENTIFIER_PREFIX")
                .env("INFLUXDB3_NODE_IDENTIFIER_PREFIX")
                .required(true),
        )
        .arg(
            Arg::new("http-bind")
                .long("http-bind")
                .value_name("HTTP_BIND_ADDR")
                .env("INFLUXDB3_HTTP_BIND_ADDR")
                .default_value("0.0.0.0:8181")
                .value_parser(parse_addr),
        )
        .arg(
            Arg::new("without-auth")
                .long("without-auth")
                .env("INFLUXDB3_START_WITHOUT_AUTH")
                .action(ArgAction::SetTrue),
        )
        .arg(
            // Hidden in the real help (src serve.rs); accepted and otherwise ignored: the
            // emulator never uploads anything.
            Arg::new("disable-telemetry-upload")
                .long("disable-telemetry-upload")
                .hide(true)
                .action(ArgAction::SetTrue),
        )
        .arg(
            Arg::new("disable-authz")
                .long("disable-authz")
                .value_name("DISABLE_AUTHZ")
                .env("INFLUXDB3_DISABLE_AUTHZ")
                .value_parser(parse_disable_authz),
        )
        .arg(
            Arg::new("max-http-request-size")
                .long("max-http-request-size")
                .value_name("MAX_HTTP_REQUEST_SIZE")
                .env("INFLUXDB3_MAX_HTTP_REQUEST_SIZE")
                .default_value("10485760")
                .value_parser(if build.at_least(3, 11) {
                    parse_size_with_units
                } else {
                    parse_size_bytes
                }),
        )
        .arg(
            Arg::new("wal-flush-interval")
                .long("wal-flush-interval")
                .value_name("WAL_FLUSH_INTERVAL")
                .env("INFLUXDB3_WAL_FLUSH_INTERVAL")
                .value_parser(parse_duration),
        )
        .arg(
            Arg::new("gen1-duration")
                .long("gen1-duration")
                .value_name("GEN1_DURATION")
                .env("INFLUXDB3_GEN1_DURATION")
                .default_value("10m")
                .value_parser(["1m", "5m", "10m"]),
        );
    // The three sizes the real server takes as a share of the memory it sees (defaults
    // 20%, 20%, 50%). 3.11 renamed all three and wants units; the old names stay as
    // deprecated aliases that keep their pre-3.11 format (a bare number is megabytes) and
    // warn at start-up (docs-v2 79332006 config-options.md "Size option values").
    for (id, legacy, old, new, default) in MEMORY_SIZES {
        if build.at_least(3, 11) {
            serve = serve
                .arg(
                    Arg::new(id)
                        .long(new)
                        .default_value(default)
                        .value_parser(memory_size(build)),
                )
                .arg(
                    Arg::new(legacy)
                        .long(old)
                        .hide(true)
                        .conflicts_with(id)
                        .value_parser(memory_size_mb(build)),
                );
        } else {
            serve = serve.arg(
                Arg::new(id)
                    .long(old)
                    .default_value(default)
                    .value_parser(memory_size(build)),
            );
        }
    }
    serve = serve.arg(
        Arg::new("tcp-listener-file-path")
            .long("tcp-listener-file-path")
            .value_name("TCP_LISTENER_FILE_PATH")
            .value_parser(value_parser!(PathBuf)),
    );
    if build.at_least(3, 11) {
        serve = serve.arg(
            Arg::new("shutdown-timeout")
                .long("shutdown-timeout")
                .value_name("SHUTDOWN_TIMEOUT")
                .env("INFLUXDB3_SHUTDOWN_TIMEOUT")
                .default_value("30s")
                .value_parser(parse_duration),
        );
    }
    match build.edition {
        Edition::Core => {
            serve = serve.arg(
                Arg::new("cluster-id")
                    .long("cluster-id")
                    .value_name("CLUSTER_ID")
                    .hide(true)
                    .value_parser(|_: &str| -> Result<String, String> {
                        Err(CORE_CLUSTER_ID_ERROR.to_string())
                    }),
            );
        }
        Edition::Enterprise => {
            serve = serve
                .arg(
                    Arg::new("cluster-id")
                        .long("cluster-id")
                        .value_name("CLUSTER_ID")
                        .env("INFLUXDB3_ENTERPRISE_CLUSTER_ID")
                        .required(true)
                        .value_parser(parse_identifier),
                )
                .arg(
                    Arg::new("license-email")
                        .long("license-email")
                        .value_name("EMAIL")
                        .conflicts_with("license-file"),
                )
                .arg(
                    Arg::new("license-file")
                        .long("license-file")
                        .value_name("FILE")
                        .value_parser(value_parser!(PathBuf)),
                )
                .arg(
                    Arg::new("license-type")
                        .long("license-type")
                        .value_name("LICENSE_TYPE")
                        .value_parser(["trial", "home", "commercial"]),
                );
        }
    }
    Command::new("influxdb3")
        .version(&*Box::leak(long_version.into_boxed_str()))
        .about("InfluxDB 3 server and command line tools")
        .subcommand_required(true)
        .arg_required_else_help(true)
        .arg(
            Arg::new("num-io-threads")
                .long("num-io-threads")
                .value_name("NUM_IO_THREADS")
                .env("INFLUXDB3_NUM_IO_THREADS")
                .value_parser(value_parser!(usize)),
        )
        .subcommand(serve)
}

fn parse_addr(s: &str) -> Result<SocketAddr, String> {
    if let Ok(a) = s.parse::<SocketAddr>() {
        return Ok(a);
    }
    s.to_socket_addrs()
        .map_err(|e| format!("Cannot parse socket address '{s}': {e}"))?
        .next()
        .ok_or_else(|| format!("Cannot parse socket address '{s}': no address found"))
}

/// The real `Endpoint`: a URL, its trailing slash dropped.
fn parse_endpoint(s: &str) -> Result<String, String> {
    url::Url::parse(s).map_err(|e| e.to_string())?;
    Ok(s.strip_suffix('/').unwrap_or(s).to_string())
}

fn parse_disable_authz(s: &str) -> Result<String, String> {
    for part in s.split(',') {
        if !["health", "ping", "metrics"].contains(&part.trim()) {
            return Err(format!(
                "invalid choice '{part}', allowed values are health, ping, metrics"
            ));
        }
    }
    Ok(s.to_string())
}

fn parse_size_bytes(s: &str) -> Result<usize, String> {
    s.parse::<usize>().map_err(|e| e.to_string())
}

fn parse_size_with_units(s: &str) -> Result<usize, String> {
    let lower = s.trim().to_ascii_lowercase();
    let split = lower
        .find(|c: char| !c.is_ascii_digit())
        .unwrap_or(lower.len());
    let (num, unit) = lower.split_at(split);
    let n: usize = num.parse().map_err(|_| format!("invalid size '{s}'"))?;
    let mult = match unit.trim() {
        "" | "b" => 1,
        "kb" | "kib" => 1 << 10,
        "mb" | "mib" => 1 << 20,
        "gb" | "gib" => 1 << 30,
        _ => return Err(format!("invalid size unit in '{s}'")),
    };
    Ok(n * mult)
}

/// humantime-style durations the server flags take: `1s`, `100ms`, `10m`, `1h`.
pub(crate) fn parse_duration(s: &str) -> Result<Duration, String> {
    let t = s.trim();
    let split = t.find(|c: char| !c.is_ascii_digit()).unwrap_or(t.len());
    let (num, unit) = t.split_at(split);
    let n: u64 = num
        .parse()
        .map_err(|_| format!("expected number at 0 in '{s}'"))?;
    Ok(match unit {
        "ns" => Duration::from_nanos(n),
        "us" => Duration::from_micros(n),
        "ms" => Duration::from_millis(n),
        "s" | "sec" | "secs" => Duration::from_secs(n),
        "m" | "min" | "mins" => Duration::from_secs(n * 60),
        "h" | "hr" | "hrs" => Duration::from_secs(n * 3600),
        "" => return Err("time unit needed, for example 1sec or 1ms".into()),
        _ => return Err(format!("unknown time unit {unit:?}")),
    })
}

fn parse_identifier(s: &str) -> Result<String, String> {
    if s.is_empty() || !s.chars().all(|c| c.is_ascii_alphanumeric() || c == '-') {
        return Err("identifiers may only contain ASCII letters, digits and '-'".into());
    }
    Ok(s.to_string())
}

/// Runs the command line; returns the exit code.
pub fn run(args: Vec<String>, build: Build, knobs: Knobs) -> i32 {
    if matches!(args.first().map(String::as_str), Some("--version" | "-V"))
        && (knobs.version_output.is_some() || knobs.version_exit_code.is_some())
    {
        let text = knobs.version_output.clone().unwrap_or_else(|| {
            format!(
                "influxdb3 {}, {}, revision {}",
                build.edition.product_name(),
                build.version,
                build.revision
            )
        });
        super::say(&text);
        return knobs.version_exit_code.unwrap_or(0);
    }
    let matches = match command(&build)
        .try_get_matches_from(std::iter::once("influxdb3".to_string()).chain(args))
    {
        Ok(m) => m,
        Err(e) => {
            let _ = e.print();
            return e.exit_code();
        }
    };
    let Some(("serve", m)) = matches.subcommand() else {
        eprintln!("testbed: only `influxdb3 serve` and `influxdb3 --version` are emulated");
        return 2;
    };
    let node_id: String = m.get_one::<String>("node-id").cloned().unwrap_or_default();
    let cluster_id = m.get_one::<String>("cluster-id").cloned();
    if build.edition == Edition::Enterprise {
        if let Err(e) = parse_identifier(&node_id) {
            eprintln!("error: invalid value '{node_id}' for '--node-id <NODE_IDENTIFIER_PREFIX>': {e}\n\nFor more information, try '--help'.");
            return 2;
        }
        if cluster_id.as_deref() == Some(node_id.as_str()) {
            eprintln!("Serve command failed: invalid configuration: the node-id and cluster-id must be different (both are '{node_id}')");
            return 1;
        }
    }
    let cfg = ServeConfig {
        object_store: m
            .get_one::<String>("object-store")
            .cloned()
            .unwrap_or_default(),
        data_dir: m.get_one::<PathBuf>("data-dir").cloned(),
        node_id,
        cluster_id,
        http_bind: *m.get_one::<SocketAddr>("http-bind").expect("default"),
        without_auth: m.get_flag("without-auth"),
        disable_authz: m
            .get_one::<String>("disable-authz")
            .map(|s| s.split(',').map(|p| p.trim().to_string()).collect())
            .unwrap_or_default(),
        max_request_size: *m
            .get_one::<usize>("max-http-request-size")
            .expect("default"),
        wal_flush_interval: m.get_one::<Duration>("wal-flush-interval").copied(),
        gen1_minutes: m
            .get_one::<String>("gen1-duration")
            .map(|s| s.trim_end_matches('m').parse().unwrap_or(10))
            .unwrap_or(10),
        tcp_listener_file: m.get_one::<PathBuf>("tcp-listener-file-path").cloned(),
        license_email: m
            .try_get_one::<String>("license-email")
            .ok()
            .flatten()
            .cloned(),
        license_type: m
            .try_get_one::<String>("license-type")
            .ok()
            .flatten()
            .cloned(),
        license_file: m
            .try_get_one::<PathBuf>("license-file")
            .ok()
            .flatten()
            .cloned(),
        s3: super::objects::S3Config {
            bucket: m.get_one::<String>("bucket").cloned(),
            endpoint: m.get_one::<String>("aws-endpoint").cloned(),
            region: m
                .get_one::<String>("aws-default-region")
                .cloned()
                .unwrap_or_else(|| "us-east-1".into()),
            allow_http: m.get_flag("aws-allow-http"),
            access_key_id: m.get_one::<String>("aws-access-key-id").cloned(),
            secret_access_key: m.get_one::<String>("aws-secret-access-key").cloned(),
        },
        exec_mem_pool_bytes: memory_size_given(m, "exec-mem-pool"),
    };
    super::serve::run(build, knobs, cfg)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn memory_sizes_of_3_11_need_a_unit_and_keep_the_old_names_as_megabytes() {
        let build = |v: &str, semver| Build {
            edition: super::super::Edition::Core,
            version: v.into(),
            semver,
            revision: "0".into(),
        };
        let serve = |b: &Build, args: &[&str]| {
            let mut argv = vec![
                "influxdb3",
                "serve",
                "--object-store",
                "memory",
                "--node-id",
                "n0",
            ];
            argv.extend_from_slice(args);
            command(b)
                .try_get_matches_from(argv)
                .map(|m| memory_size_given(m.subcommand_matches("serve").unwrap(), "exec-mem-pool"))
        };
        let b311 = build("3.11.1", (3, 11, 1));
        assert_eq!(serve(&b311, &["--exec-mem-pool-size=1000b"]).unwrap(), 1000);
        assert!(serve(&b311, &["--exec-mem-pool-size=1000"]).is_err());
        assert_eq!(serve(&b311, &["--exec-mem-pool-bytes=3"]).unwrap(), 3 << 20);
        assert!(serve(
            &b311,
            &["--exec-mem-pool-bytes=3", "--exec-mem-pool-size=1b"]
        )
        .is_err());
        let b310 = build("3.10.1", (3, 10, 1));
        assert_eq!(
            serve(&b310, &["--exec-mem-pool-bytes=1000b"]).unwrap(),
            1000
        );
        assert!(serve(&b310, &["--exec-mem-pool-size=1000b"]).is_err());
    }

    #[test]
    fn durations_and_sizes() {
        assert_eq!(parse_duration("1s").unwrap(), Duration::from_secs(1));
        assert_eq!(parse_duration("150ms").unwrap(), Duration::from_millis(150));
        assert!(parse_duration("5").is_err());
        assert_eq!(parse_size_with_units("10mb").unwrap(), 10_485_760);
        assert_eq!(parse_size_with_units("10485760").unwrap(), 10_485_760);
        assert!(parse_size_bytes("10mb").is_err());
    }
}
