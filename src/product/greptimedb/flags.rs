//! GreptimeDB's own bench flags ([`crate::product::ext`]): declared here with their help, the
//! phases that take them, their checks and defaults; `bench greptimedb` adds them at runtime.
//! Recorded flat ([`Record::Flat`]): the keys, order and values runs have always recorded.
//!
//! * compact: `--table --strategy --window --confirm-timeout --parallelism` (defaults: table
//!   `cpu`, strategy swcs, a swcs window of 7,200 s, 5 s for the log line);
//! * analyze: `--hot-runs` (default 2);
//! * query/all: `--flush-before-queries` (the product's before-queries step reads it);
//! * query/analyze: `--greptime-version` with `--confirm-version-override`, declared as the
//!   product's [`VersionOverride`] (the core checks them against the target and runs it).

use std::collections::BTreeMap;

use serde_json::Value;

use super::compact::CompactRequest;
use crate::bounds;
use crate::error::{Error, Result};
use crate::product::ext::{flag, BasicAuth, BenchFlag, FlagKind, Values, VersionOverride};

/// The table compacted when `--table` names none.
pub const DEFAULT_TABLE: &str = "cpu";
/// The strategy when `--strategy` names none.
pub const DEFAULT_STRATEGY: &str = "swcs";
/// The window of swcs when `--window` gives none (seconds of data).
pub const DEFAULT_WINDOW: u64 = 7200;
/// The wait for the corroborating log line when `--confirm-timeout` gives none.
pub const DEFAULT_CONFIRM_SECONDS: f64 = 5.0;
/// Queries of a type analyze runs after the first, cold one, when `--hot-runs` gives none.
pub const DEFAULT_HOT_RUNS: u64 = 2;

const STRATEGIES: [&str; 4] = ["swcs", "twcs", "strict_window", "regular"];

const COMPACT: &[&str] = &["compact"];

pub const TABLE: BenchFlag = BenchFlag {
    phases: COMPACT,
    ..flag("table", "compact: table to compact", "TABLE")
};
pub const STRATEGY: BenchFlag = BenchFlag {
    phases: COMPACT,
    ..flag(
        "strategy",
        "compact: strategy (swcs = strict window compaction)",
        "S",
    )
};
pub const WINDOW: BenchFlag = BenchFlag {
    phases: COMPACT,
    kind: FlagKind::Number,
    default: Some("7200"),
    ..flag(
        "window",
        "compact: the window of swcs, in seconds of data",
        "SECONDS",
    )
};
pub const CONFIRM_TIMEOUT: BenchFlag = BenchFlag {
    phases: COMPACT,
    kind: FlagKind::Seconds,
    ..flag(
        "confirm-timeout",
        "compact: seconds to wait, after GreptimeDB answered, for the server log line that corroborates the compaction (default 5; the answer itself is the completion signal)",
        "SECONDS",
    )
};
pub const PARALLELISM: BenchFlag = BenchFlag {
    phases: COMPACT,
    kind: FlagKind::Number,
    ..flag(
        "parallelism",
        "compact: server-side parallelism of the compaction (`parallelism=N`, GreptimeDB 1.0.0-beta.1 and later; the server's default is 1)",
        "N",
    )
};
pub const FLUSH_BEFORE_QUERIES: BenchFlag = BenchFlag {
    phases: &["query", "all"],
    kind: FlagKind::Switch,
    ..flag(
        "flush-before-queries",
        "query/all: run `ADMIN FLUSH_TABLE` before the queries, so they read SST files rather than memtables replayed from the WAL (recorded; off by default: the published flow does not flush)",
        "",
    )
};
pub const HOT_RUNS: BenchFlag = BenchFlag {
    phases: &["analyze"],
    kind: FlagKind::Number,
    ..flag(
        "hot-runs",
        "analyze: how many more queries of the file run after the first, cold one (default 2). They are the file's next queries of the same type, on the warmed server: other random hosts and time windows, not repetitions of the first (only lastpoint's SQL is fixed)",
        "N",
    )
};
// Checked and run by the core, which knows the target ([`VERSION_OVERRIDE`]).
pub const GREPTIME_VERSION: BenchFlag = flag(
    "greptime-version",
    "query/analyze: run this installed version on the workspace's data",
    "V",
);
pub const CONFIRM_VERSION_OVERRIDE: BenchFlag = flag(
    "confirm-version-override",
    "Confirms --greptime-version: the workspace id, exactly",
    "ID",
);

const LOADS: &[&str] = &["load", "all"];

// Recorded only when given (the key `partitions` is TimescaleDB's too: one record has one).
pub const PARTITIONS: BenchFlag = BenchFlag {
    phases: LOADS,
    kind: FlagKind::Number,
    requires: Some("partition-column"),
    always_recorded: false,
    ..flag(
        "partitions",
        "load/all, cpu-only: create the `cpu` table before the load split into N regions (2-1024) by ranges of --partition-column, each holding an equal share of the dataset's hosts; the loader then only writes into it",
        "N",
    )
};
pub const PARTITION_COLUMN: BenchFlag = BenchFlag {
    phases: LOADS,
    requires: Some("partitions"),
    always_recorded: false,
    ..flag(
        "partition-column",
        "With --partitions: the tag the regions split on (hostname: ranges computed from the dataset's host names)",
        "TAG",
    )
};

// Recorded only when given (the key `password_env` is TimescaleDB's too: one record has one).
pub const USER: BenchFlag = BenchFlag {
    requires: Some("password-env"),
    always_recorded: false,
    ..flag(
        "user",
        "External servers with authentication (a static user provider): the user name (recorded) for HTTP basic auth of tsbsctl's requests, the loader and the query runner",
        "NAME",
    )
};
pub const PASSWORD_ENV: BenchFlag = BenchFlag {
    requires: Some("user"),
    always_recorded: false,
    ..flag(
        "password-env",
        "With --user: the environment variable holding its password (the variable's name is recorded, never the password; the tools get it through a file without a name)",
        "VAR",
    )
};

/// `--user NAME --password-env VAR`: HTTP basic auth against an external server.
pub static BASIC_AUTH: BasicAuth = BasicAuth {
    user: &USER,
    password_env: &PASSWORD_ENV,
};

/// `--greptime-version V --confirm-version-override ID`: another installed version on a
/// managed workspace's data, for query and analyze.
pub static VERSION_OVERRIDE: VersionOverride = VersionOverride {
    version: &GREPTIME_VERSION,
    confirm: &CONFIRM_VERSION_OVERRIDE,
    phases: &["query", "analyze"],
};

/// In the order runs have always recorded them.
pub const FLAGS: &[BenchFlag] = &[
    TABLE,
    STRATEGY,
    WINDOW,
    CONFIRM_TIMEOUT,
    PARALLELISM,
    FLUSH_BEFORE_QUERIES,
    HOT_RUNS,
    GREPTIME_VERSION,
    CONFIRM_VERSION_OVERRIDE,
    PARTITIONS,
    PARTITION_COLUMN,
    USER,
    PASSWORD_ENV,
];

fn text<'a>(given: &'a Values, f: &BenchFlag) -> Option<&'a str> {
    given.get(&f.key()).and_then(Value::as_str)
}

fn whole(given: &Values, f: &BenchFlag) -> Option<u64> {
    given.get(&f.key()).and_then(Value::as_u64)
}

fn positive(f: &BenchFlag, v: Option<u64>) -> Result<()> {
    if v == Some(0) {
        return Err(Error::invalid(format!("--{} must be positive", f.long))
            .with_hint(format!("pass --{} N with N >= 1", f.long)));
    }
    Ok(())
}

/// The given values (typed) to the resolved ones of `phase`: checks (exit 2, the words users
/// have always seen) and defaults. Only what the phase uses is resolved; the phases were
/// checked before ([`crate::product::ext::check_phases`]).
pub fn resolve(phase: &str, given: &Values) -> Result<Values> {
    let given = &crate::product::ext::typed(FLAGS, given)?;
    let hot_runs = whole(given, &HOT_RUNS);
    positive(&HOT_RUNS, hot_runs)?;
    bounds::at_most("--hot-runs", hot_runs, bounds::MAX_HOT_RUNS)?;
    let window = whole(given, &WINDOW);
    bounds::at_most("--window", window, bounds::MAX_WINDOW_SECONDS)?;
    let confirm = given.get(&CONFIRM_TIMEOUT.key()).and_then(Value::as_f64);
    bounds::wait_seconds("--confirm-timeout", confirm)?;
    let parallelism = whole(given, &PARALLELISM);
    positive(&PARALLELISM, parallelism)?;
    let mut out = Values::new();
    match phase {
        "compact" => {
            let strategy = text(given, &STRATEGY).unwrap_or(DEFAULT_STRATEGY);
            if !STRATEGIES.contains(&strategy) {
                return Err(
                    Error::invalid(format!("unknown compaction strategy {strategy:?}"))
                        .with_hint("use --strategy swcs (strict window), twcs or regular"),
                );
            }
            let windowed = matches!(strategy, "swcs" | "strict_window");
            if window == Some(0) {
                return Err(Error::invalid("--window must be positive (seconds)")
                    .with_hint("e.g. --window 7200 for a 2-hour window"));
            }
            if window.is_some() && !windowed {
                return Err(Error::invalid("--window applies to --strategy swcs only")
                    .with_hint("drop --window, or use --strategy swcs"));
            }
            let table = text(given, &TABLE).unwrap_or(DEFAULT_TABLE);
            crate::ids::validate_sql_identifier("--table", table).map_err(|_| {
                Error::invalid(format!("--table {table:?} is not a valid table name"))
                    .with_hint("use letters, digits and '_'")
            })?;
            out.insert(TABLE.key(), table.into());
            out.insert(STRATEGY.key(), strategy.into());
            out.insert(
                WINDOW.key(),
                window.or(windowed.then_some(DEFAULT_WINDOW)).into(),
            );
            out.insert(
                CONFIRM_TIMEOUT.key(),
                confirm.unwrap_or(DEFAULT_CONFIRM_SECONDS).into(),
            );
            out.insert(PARALLELISM.key(), parallelism.into());
        }
        "analyze" => {
            out.insert(HOT_RUNS.key(), hot_runs.unwrap_or(DEFAULT_HOT_RUNS).into());
        }
        "load" | "all" => {
            // The regions of the `cpu` table: checked against the dataset once it is known
            // (`Loading::check_partitioning`).
            match (whole(given, &PARTITIONS), text(given, &PARTITION_COLUMN)) {
                (Some(n), Some(c)) => {
                    out.insert(PARTITIONS.key(), n.into());
                    out.insert(PARTITION_COLUMN.key(), c.into());
                }
                (None, None) => {}
                _ => return Err(Error::invalid(
                    "--partitions and --partition-column go together: the number of regions and the tag they split on",
                )
                .with_hint("e.g. --partitions 8 --partition-column hostname")),
            }
        }
        _ => {}
    }
    // The benchmark phases' workloads record whether the queries ran on flushed data.
    if matches!(phase, "all" | "load" | "query" | "analyze") {
        out.insert(
            FLUSH_BEFORE_QUERIES.key(),
            given.get(&FLUSH_BEFORE_QUERIES.key()).is_some().into(),
        );
    }
    Ok(out)
}

/// The compaction the resolved values of the compact phase ask for.
pub fn compact_request(values: &Values) -> CompactRequest {
    CompactRequest {
        table: text(values, &TABLE).unwrap_or(DEFAULT_TABLE).to_string(),
        strategy: text(values, &STRATEGY)
            .unwrap_or(DEFAULT_STRATEGY)
            .to_string(),
        window: whole(values, &WINDOW),
        parallelism: whole(values, &PARALLELISM).map(|n| n as u32),
        confirm_timeout: values
            .get(&CONFIRM_TIMEOUT.key())
            .and_then(Value::as_f64)
            .unwrap_or(DEFAULT_CONFIRM_SECONDS),
    }
}

/// Whether the resolved values of a query run ask for `ADMIN FLUSH_TABLE` before the queries.
pub fn flush_before_queries(values: &Values) -> bool {
    values.get(&FLUSH_BEFORE_QUERIES.key()) == Some(&Value::Bool(true))
}

/// The table split into regions the resolved values of a load ask for.
pub fn partitioning(values: &Values) -> Option<crate::product::Partitioning> {
    Some(crate::product::Partitioning {
        partitions: u32::try_from(whole(values, &PARTITIONS)?).unwrap_or(u32::MAX),
        column: text(values, &PARTITION_COLUMN)?.to_string(),
    })
}

/// The queries after the first, cold one, of the resolved values of the analyze phase.
pub fn hot_runs(values: &Values) -> u32 {
    whole(values, &HOT_RUNS).unwrap_or(DEFAULT_HOT_RUNS) as u32
}

/// Analyze runs `1 + hot runs` queries of each type: fewer is refused (exit 2).
pub fn check_analyze_counts(values: &Values, counts: &BTreeMap<String, u64>) -> Result<()> {
    let need = 1 + u64::from(hot_runs(values));
    let short: Vec<String> = counts
        .iter()
        .filter(|(_, c)| **c < need)
        .map(|(t, c)| format!("{t}={c}"))
        .collect();
    if short.is_empty() {
        return Ok(());
    }
    Err(Error::invalid(format!(
        "analyze needs at least {need} queries per type; too few: {}",
        short.join(", ")
    ))
    .with_hint(format!("pass --queries {need} (or lower --hot-runs)")))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::product::ext;

    fn given(v: serde_json::Value) -> Values {
        v.as_object().cloned().unwrap()
    }

    fn resolved(phase: &str, v: serde_json::Value) -> Result<Values> {
        ext::resolve("greptimedb", &super::super::BENCH_EXT, phase, &given(v))
    }

    /// Every rule of the compaction and analyze flags (they were `bench::validate`'s): the
    /// given flags as a command line gives them (text), and `None` (accepted) or a part of
    /// the refusal's message.
    #[test]
    fn flag_rules() {
        use serde_json::json;
        let cases: Vec<(&str, &str, serde_json::Value, Option<&str>)> = vec![
            ("unknown strategy", "compact", json!({"strategy": "lsm"}), Some("unknown compaction strategy \"lsm\"")),
            ("window with twcs", "compact", json!({"strategy": "twcs", "window": "60"}), Some("--window applies to --strategy swcs only")),
            ("zero window", "compact", json!({"window": "0"}), Some("--window must be positive")),
            ("huge window", "compact", json!({"window": "999999999999"}), Some("--window 999999999999 is above the limit")),
            ("window not a number", "compact", json!({"window": "2h"}), Some("--window \"2h\" is not a whole number")),
            ("bad table", "compact", json!({"table": "cpu;drop"}), Some("--table \"cpu;drop\" is not a valid table name")),
            ("zero parallelism", "compact", json!({"parallelism": "0"}), Some("--parallelism must be positive")),
            ("confirm timeout 1e300", "compact", json!({"confirm_timeout": "1e300"}), Some("--confirm-timeout must be a positive number of seconds")),
            ("compact flags on a load", "load", json!({"table": "cpu"}), Some("--table, --strategy, --window, --confirm-timeout and --parallelism apply to the compact phase only")),
            ("parallelism on a query", "query", json!({"parallelism": "2"}), Some("apply to the compact phase only")),
            ("a whole compaction", "compact", json!({"table": "cpu", "strategy": "swcs", "window": "3600", "confirm_timeout": "20", "parallelism": "2"}), None),
            ("flush before a load", "load", json!({"flush_before_queries": true}), Some("--flush-before-queries applies to the query and all phases only")),
            ("flush before queries", "query", json!({"flush_before_queries": true}), None),
            ("hot runs on a query", "query", json!({"hot_runs": "3"}), Some("--hot-runs applies to the analyze phase only")),
            ("zero hot runs", "analyze", json!({"hot_runs": "0"}), Some("--hot-runs must be positive")),
            ("too many hot runs", "analyze", json!({"hot_runs": "1001"}), Some("--hot-runs 1001 is above the limit of 1000")),
            ("hot runs on analyze", "analyze", json!({"hot_runs": "3"}), None),
            ("regions of a load", "load", json!({"partitions": "8", "partition_column": "hostname"}), None),
            ("regions without their tag", "all", json!({"partitions": "8"}), Some("--partitions and --partition-column go together")),
            ("regions of a query", "query", json!({"partitions": "8", "partition_column": "hostname"}), Some("--partitions and --partition-column apply to the load and all phases only")),
        ];
        for (name, phase, g, want) in cases {
            match (want, resolved(phase, g)) {
                (None, Ok(_)) => {}
                (None, Err(e)) => panic!("{name}: refused: {}", e.message),
                (Some(w), Ok(_)) => panic!("{name}: accepted, wanted {w:?}"),
                (Some(w), Err(e)) => {
                    assert_eq!(e.exit_code(), 2, "{name}: {}", e.message);
                    assert!(e.message.contains(w), "{name}: {:?} lacks {w:?}", e.message);
                }
            }
        }
        let e = resolved("query", json!({"window": "60"})).unwrap_err();
        assert_eq!(
            e.hint.as_deref(),
            Some("drop them, or run `bench greptimedb compact`")
        );
    }

    /// The defaults live here: swcs in 7,200 s windows on `cpu`, 5 s for the log line, two hot
    /// runs; a given value is kept; twcs has no window.
    #[test]
    fn defaults_are_the_products() {
        use serde_json::json;
        let c = compact_request(&resolved("compact", json!({})).unwrap());
        assert_eq!(
            (
                c.table.as_str(),
                c.strategy.as_str(),
                c.window,
                c.parallelism,
                c.confirm_timeout
            ),
            ("cpu", "swcs", Some(7200), None, 5.0)
        );
        let c = compact_request(
            &resolved(
                "compact",
                json!({"strategy": "twcs", "parallelism": "4", "confirm_timeout": "0.5"}),
            )
            .unwrap(),
        );
        assert_eq!(
            (
                c.strategy.as_str(),
                c.window,
                c.parallelism,
                c.confirm_timeout
            ),
            ("twcs", None, Some(4), 0.5)
        );
        let c = compact_request(&resolved("compact", json!({"window": 3600})).unwrap());
        assert_eq!(c.window, Some(3600));
        let a = resolved("analyze", json!({})).unwrap();
        assert_eq!(
            Value::Object(a.clone()),
            json!({"hot_runs": 2, "flush_before_queries": false})
        );
        assert_eq!(hot_runs(&a), 2);
        // The other benchmark phases resolve only the flush into the run's workload.
        assert_eq!(
            Value::Object(resolved("query", json!({"flush_before_queries": true})).unwrap()),
            json!({"flush_before_queries": true})
        );
        assert_eq!(
            Value::Object(resolved("load", json!({})).unwrap()),
            json!({"flush_before_queries": false})
        );
        // What its before-queries step reads of them.
        assert!(flush_before_queries(
            &resolved("query", json!({"flush_before_queries": true})).unwrap()
        ));
        assert!(!flush_before_queries(&resolved("all", json!({})).unwrap()));
        let mut counts = BTreeMap::new();
        counts.insert("lastpoint".to_string(), 3);
        check_analyze_counts(&a, &counts).unwrap();
        let four = resolved("analyze", json!({"hot_runs": "3"})).unwrap();
        let e = check_analyze_counts(&four, &counts).unwrap_err();
        assert_eq!(e.exit_code(), 2);
        assert_eq!(
            e.message,
            "analyze needs at least 4 queries per type; too few: lastpoint=3"
        );
    }
}
