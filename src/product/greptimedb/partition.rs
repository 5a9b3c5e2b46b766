//! Partitioned `cpu` tables for GreptimeDB (issue 25 §2): the host-name ranges, the rule of
//! each region and the `CREATE TABLE … PARTITION ON COLUMNS` statement that must exist before
//! the load. Facts: shared/reference/real/greptimedb-cluster.md §5.
//!
//! The pure part (no I/O): validation of the flags, range computation, and the DDL made from
//! the server's own `SHOW CREATE TABLE` of the table it auto-created from the dataset's first
//! line, so it can be tested exactly and reused by the standalone and cluster targets. The
//! statements themselves run in [`super::partitioned`].

use crate::error::{Error, Result};

/// Fewest and most regions accepted for `--partitions`.
pub const MIN_PARTITIONS: u32 = 2;
pub const MAX_PARTITIONS: u32 = 1024;

/// The devops tags in line order: the loader makes them STRING primary-key columns in this
/// order (TSBS `pkg/data/usecases/devops/host.go:119-131`, GreptimeDB `servers/src/influxdb.rs`).
pub const CPU_TAGS: [&str; 10] = [
    "hostname",
    "region",
    "datacenter",
    "rack",
    "os",
    "arch",
    "team",
    "service",
    "service_version",
    "service_environment",
];

/// The table the partition applies to (cpu-only is the one use case supported).
pub const TABLE: &str = "cpu";

/// One region of the partitioned table: its half-open host-name range and rule text.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Region {
    /// 0-based, in rule order (the order GreptimeDB numbers the regions).
    pub index: usize,
    /// Inclusive lower bound (`None` for the first region).
    pub from: Option<String>,
    /// Exclusive upper bound (`None` for the last region).
    pub to: Option<String>,
    /// The rule expression exactly as written into the DDL.
    pub rule: String,
    /// How many of the dataset's hosts fall in this range.
    pub hosts: u64,
}

/// Checks `--partitions N --partition-column C` against the dataset's use case and scale
/// before anything is changed. All failures are bad input (exit 2).
pub fn validate(partitions: u32, column: &str, use_case: &str, scale: u64) -> Result<()> {
    if !(MIN_PARTITIONS..=MAX_PARTITIONS).contains(&partitions) {
        return Err(Error::invalid(format!(
            "--partitions {partitions} is out of range: a partitioned table has {MIN_PARTITIONS} to {MAX_PARTITIONS} regions"
        ))
        .with_hint("pass --partitions N with N in 2..=1024, or leave it out for one region"));
    }
    if use_case != "cpu-only" {
        return Err(Error::invalid(format!(
            "--partitions supports the cpu-only use case, not {use_case:?}"
        ))
        .with_hint("use --use-case cpu-only, or leave --partitions out"));
    }
    if !CPU_TAGS.contains(&column) {
        return Err(Error::invalid(format!(
            "--partition-column {column:?} is not a tag of the cpu table; tags are: {}",
            CPU_TAGS.join(", ")
        ))
        .with_hint("partition on a tag (primary-key) column, e.g. --partition-column hostname"));
    }
    // Only hostname ranges can be computed from the dataset alone; the other tags take
    // randomly drawn values whose spread depends on the seed.
    if column != "hostname" {
        return Err(Error::invalid(format!(
            "--partition-column {column:?}: only hostname ranges are computed from the dataset"
        ))
        .with_hint("use --partition-column hostname"));
    }
    if scale < u64::from(partitions) {
        return Err(Error::invalid(format!(
            "--partitions {partitions} exceeds the dataset's {scale} hosts: some regions would be empty"
        ))
        .with_hint(format!("use at most --partitions {scale}, or a larger --scale")));
    }
    Ok(())
}

/// The dataset's host names in lexicographic order. Read from the scale, not the data: the
/// TSBS devops generator names its hosts `host_<i>` for i in 0..scale
/// (`pkg/data/usecases/devops/host.go`, `fmt.Sprintf("host_%d", i)`), so the scale fixes them.
pub fn host_names(scale: u64) -> Vec<String> {
    let mut names: Vec<String> = (0..scale).map(|i| format!("host_{i}")).collect();
    names.sort();
    names
}

/// Where region k starts in the sorted host names: k·scale/N, so the shares differ by at
/// most one host when N does not divide the scale. Every host writes one row per interval,
/// so equal hosts means equal rows.
fn cut(k: u64, scale: u64, partitions: u32) -> usize {
    usize::try_from(k * scale / u64::from(partitions)).expect("scale fits in memory")
}

/// The N-1 boundaries giving N regions of equal host counts.
pub fn boundaries(scale: u64, partitions: u32) -> Vec<String> {
    let names = host_names(scale);
    (1..u64::from(partitions))
        .map(|k| names[cut(k, scale, partitions)].clone())
        .collect()
}

/// A SQL string literal (host names have no quotes, but a rule must never break on one).
fn literal(s: &str) -> String {
    format!("'{}'", s.replace('\'', "''"))
}

/// The regions for `column` over the dataset's hosts, with the rule of each.
pub fn regions(column: &str, scale: u64, partitions: u32) -> Vec<Region> {
    let names = host_names(scale);
    let n = partitions as usize;
    (0..n)
        .map(|i| {
            let lo = cut(i as u64, scale, partitions);
            let hi = cut(i as u64 + 1, scale, partitions);
            let from = (i > 0).then(|| names[lo].clone());
            let to = (i + 1 < n).then(|| names[hi].clone());
            let rule = match (&from, &to) {
                (None, Some(t)) => format!("{column} < {}", literal(t)),
                (Some(f), Some(t)) => {
                    format!("{column} >= {} AND {column} < {}", literal(f), literal(t))
                }
                (Some(f), None) => format!("{column} >= {}", literal(f)),
                (None, None) => unreachable!("at least two regions"),
            };
            Region {
                index: i,
                from,
                to,
                rule,
                hosts: (hi - lo) as u64,
            }
        })
        .collect()
}

/// The `PARTITION ON COLUMNS` block of `regions`, as `SHOW CREATE TABLE` prints it.
pub fn partition_clause(column: &str, regions: &[Region]) -> String {
    let rules: Vec<String> = regions.iter().map(|r| format!("  {}", r.rule)).collect();
    format!(
        "PARTITION ON COLUMNS (\"{column}\") (\n{}\n)",
        rules.join(",\n")
    )
}

/// The `CREATE TABLE` of the partitioned table, made from `SHOW CREATE TABLE` of the table
/// the server auto-created from the dataset's first line (so the schema is the loader's by
/// construction: columns, types, keys and options): `IF NOT EXISTS` dropped (an existing
/// table must fail, not be loaded into) and the partition block put where the server prints
/// it, between the column list and `ENGINE=`.
pub fn partitioned_ddl(auto_created: &str, column: &str, regions: &[Region]) -> Result<String> {
    let text = auto_created.trim();
    if !text.starts_with("CREATE TABLE IF NOT EXISTS ") {
        return Err(unexpected(
            text,
            "does not start with CREATE TABLE IF NOT EXISTS",
        ));
    }
    let at = text
        .find("\nENGINE=")
        .ok_or_else(|| unexpected(text, "has no ENGINE= line"))?;
    let head = &text[..at];
    let head = head.strip_suffix('\n').unwrap_or(head);
    if !head.ends_with(')') {
        return Err(unexpected(
            text,
            "has no closing parenthesis before ENGINE=",
        ));
    }
    if head.contains("\nPARTITION ON COLUMNS") {
        return Err(unexpected(text, "is partitioned already"));
    }
    let head = head.replacen("CREATE TABLE IF NOT EXISTS ", "CREATE TABLE ", 1);
    Ok(format!(
        "{head}\n{}{}",
        partition_clause(column, regions),
        &text[at..]
    ))
}

fn unexpected(text: &str, why: &str) -> Error {
    Error::failed(format!(
        "GreptimeDB's SHOW CREATE TABLE of the auto-created table {why}: {text:?}"
    ))
    .with_hint("this server version prints tables in a form tsbsctl does not know; run without --partitions")
}

/// Two `SHOW CREATE TABLE` texts that differ at most in quotes around an option key of their
/// `WITH(...)` block: the real v1.0.2 prints an auto-created table's `'comment' = ...` quoted
/// and the same option of a table created by SQL bare (`comment = ...`).
pub fn same_schema(a: &str, b: &str) -> bool {
    fn bare_keys(text: &str) -> String {
        let Some(w) = text.find(
            "
WITH(
",
        ) else {
            return text.trim().to_string();
        };
        let (head, opts) = text.split_at(w);
        let opts: Vec<String> = opts
            .lines()
            .map(|l| match l.split_once(" = ") {
                Some((k, v)) => {
                    let key = k.trim();
                    let key = key
                        .strip_prefix('\'')
                        .and_then(|x| x.strip_suffix('\''))
                        .unwrap_or(key);
                    format!("  {key} = {v}")
                }
                None => l.to_string(),
            })
            .collect();
        format!("{head}{}", opts.join("\n")).trim().to_string()
    }
    bare_keys(a) == bare_keys(b)
}

/// `SHOW CREATE TABLE` text without its partition block (what the loader's own table would
/// show), for comparing a partitioned table with the auto-created one.
pub fn without_partition(text: &str) -> String {
    let text = text.trim();
    let Some(p) = text.find("\nPARTITION ON COLUMNS") else {
        return text.to_string();
    };
    let Some(e) = text[p..].find("\n)\n").map(|e| p + e + 2) else {
        return text.to_string();
    };
    // The server prints an empty line where an unpartitioned table has no block.
    format!("{}\n{}", &text[..p], &text[e..])
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The texts of a real GreptimeDB v1.0.2 (trimmed to two columns): the same schema.
    #[test]
    fn a_quoted_option_key_is_the_same_schema() {
        let auto = "CREATE TABLE IF NOT EXISTS \"cpu\" (\n  \"hostname\" STRING NULL,\n  \"greptime_timestamp\" TIMESTAMP(9) NOT NULL,\n  TIME INDEX (\"greptime_timestamp\"),\n  PRIMARY KEY (\"hostname\")\n)\n\nENGINE=mito\nWITH(\n  'comment' = 'Created on insertion',\n  merge_mode = 'last_non_null'\n)";
        let made = auto.replace("  'comment' =", "  comment =");
        assert!(same_schema(auto, &made));
        assert!(!same_schema(
            auto,
            &made.replace("last_non_null", "last_row")
        ));
        assert!(!same_schema(auto, &made.replace("STRING NULL", "STRING")));
    }

    /// What a real v1.0.2 cluster printed for the probe's table and for ours.
    #[test]
    fn the_real_servers_two_texts_are_the_same_schema() {
        let auto =
            include_str!("../../../tests/fixtures/greptimedb-real/show-create-auto-created.sql");
        let ours =
            include_str!("../../../tests/fixtures/greptimedb-real/show-create-partitioned.sql");
        assert_ne!(without_partition(ours), auto.trim());
        assert!(same_schema(auto, &without_partition(ours)));
    }

    #[test]
    fn scale_4000_in_8_regions_matches_the_reference_boundaries() {
        assert_eq!(
            boundaries(4000, 8),
            [
                "host_1448",
                "host_1899",
                "host_2348",
                "host_2799",
                "host_3248",
                "host_3699",
                "host_549"
            ]
        );
        assert_eq!(
            boundaries(40_000, 8),
            [
                "host_14498",
                "host_18999",
                "host_23498",
                "host_27999",
                "host_32498",
                "host_36999",
                "host_5499"
            ]
        );
    }

    #[test]
    fn host_names_are_lexicographic_not_numeric() {
        assert_eq!(
            host_names(12)[..4],
            ["host_0", "host_1", "host_10", "host_11"]
        );
        assert_eq!(host_names(12).last().unwrap(), "host_9");
    }

    #[test]
    fn regions_cover_every_host_once_in_equal_shares() {
        for (scale, n) in [(4000u64, 8u32), (10, 4), (7, 3), (2, 2), (1000, 1000)] {
            let rs = regions("hostname", scale, n);
            assert_eq!(rs.len(), n as usize);
            assert_eq!(
                rs.iter().map(|r| r.hosts).sum::<u64>(),
                scale,
                "{scale}/{n}"
            );
            let (lo, hi) = (scale / u64::from(n), scale.div_ceil(u64::from(n)));
            assert!(
                rs.iter().all(|r| (lo..=hi).contains(&r.hosts)),
                "{scale}/{n}: {rs:?}"
            );
            // Adjacent ranges meet exactly: no gap, no overlap.
            for w in rs.windows(2) {
                assert_eq!(w[0].to, w[1].from);
            }
        }
    }

    #[test]
    fn rules_have_the_documented_form() {
        let rs = regions("hostname", 10, 3);
        let rules: Vec<&str> = rs.iter().map(|r| r.rule.as_str()).collect();
        // sorted: host_0 host_1 host_2 | host_3 host_4 host_5 | host_6 .. host_9
        assert_eq!(
            rules,
            [
                "hostname < 'host_3'",
                "hostname >= 'host_3' AND hostname < 'host_6'",
                "hostname >= 'host_6'"
            ]
        );
        assert_eq!(literal("a'b"), "'a''b'");
    }

    #[test]
    fn the_ddl_is_the_auto_created_table_with_the_rules() {
        let auto = "CREATE TABLE IF NOT EXISTS \"cpu\" (\n  \"hostname\" STRING NULL,\n  \"usage_user\" BIGINT NULL,\n  \"greptime_timestamp\" TIMESTAMP(9) NOT NULL,\n  TIME INDEX (\"greptime_timestamp\"),\n  PRIMARY KEY (\"hostname\")\n)\n\nENGINE=mito\nWITH(\n  'comment' = 'Created on insertion'\n)";
        let rs = regions("hostname", 10, 3);
        let ddl = partitioned_ddl(auto, "hostname", &rs).unwrap();
        assert_eq!(
            ddl,
            "CREATE TABLE \"cpu\" (\n  \"hostname\" STRING NULL,\n  \"usage_user\" BIGINT NULL,\n  \"greptime_timestamp\" TIMESTAMP(9) NOT NULL,\n  TIME INDEX (\"greptime_timestamp\"),\n  PRIMARY KEY (\"hostname\")\n)\nPARTITION ON COLUMNS (\"hostname\") (\n  hostname < 'host_3',\n  hostname >= 'host_3' AND hostname < 'host_6',\n  hostname >= 'host_6'\n)\nENGINE=mito\nWITH(\n  'comment' = 'Created on insertion'\n)"
        );
        // What the server shows of the partitioned table, less its block, is the auto one.
        let shown = ddl.replacen("CREATE TABLE ", "CREATE TABLE IF NOT EXISTS ", 1);
        assert_eq!(without_partition(&shown), auto);
        assert_eq!(without_partition(auto), auto);
        // A changed column is seen.
        assert_ne!(without_partition(&shown.replace("BIGINT", "DOUBLE")), auto);
        for bad in [
            "CREATE TABLE \"cpu\" ()\nENGINE=mito",
            "CREATE TABLE IF NOT EXISTS \"cpu\" ()",
        ] {
            assert_eq!(
                partitioned_ddl(bad, "hostname", &rs)
                    .unwrap_err()
                    .exit_code(),
                1
            );
        }
    }

    #[test]
    fn validation_refuses_bad_input() {
        assert!(validate(4, "hostname", "cpu-only", 10).is_ok());
        let msg = |r: Result<()>| r.unwrap_err().to_string();
        assert!(msg(validate(1, "hostname", "cpu-only", 10)).contains("out of range"));
        assert!(msg(validate(1025, "hostname", "cpu-only", 5000)).contains("out of range"));
        assert!(msg(validate(4, "hostname", "iot", 10)).contains("cpu-only"));
        assert!(msg(validate(4, "hostname", "devops", 10)).contains("cpu-only"));
        assert!(msg(validate(4, "usage_user", "cpu-only", 10)).contains("not a tag"));
        assert!(msg(validate(4, "region", "cpu-only", 10)).contains("only hostname"));
        assert!(msg(validate(11, "hostname", "cpu-only", 10)).contains("exceeds"));
        assert_eq!(
            validate(0, "x", "iot", 0).unwrap_err().kind,
            crate::error::ErrorKind::Invalid
        );
    }
}
