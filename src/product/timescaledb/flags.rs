//! TimescaleDB's own bench flags ([`crate::product::ext`]): declared here with their help and
//! checks, and what the core reads of them ([`core`]); `bench timescaledb` adds them at
//! runtime (`--mode` is parsed by its CLI module, which lists the modes, and given here as
//! text). Recorded flat ([`Record::Flat`](crate::product::ext::Record::Flat)), every key
//! always: the keys, order and values runs have always recorded. `password_env` holds a
//! variable's name, never the password.

use serde_json::Value;

use crate::error::{Error, Result};
use crate::product::ext::{flag, given_text, BenchFlag, CoreValues, FlagKind, Values};

/// The most hypertable space partitions TimescaleDB accepts (`number_partitions`).
pub const MAX_PARTITIONS: u64 = 32767;

/// The entry's `variant_flag`: its CLI module parses it (so `--help` lists the modes) and
/// gives it as text.
pub const MODE: BenchFlag = flag(
    "mode",
    "External targets: what the server is benchmarked as: timescaledb (hypertables; the extension must be installed and preloaded) or postgresql (plain tables)",
    "MODE",
);
pub const PASSWORD_ENV: BenchFlag = flag(
    "password-env",
    "External targets: the environment variable holding the password of the --url user (the variable's name is recorded, never its value; no variable is read unless named)",
    "VAR",
);
pub const CHUNK_TIME: BenchFlag = flag(
    "chunk-time",
    "TimescaleDB mode, load and all: the hypertable's chunk interval, a Go duration (the loader's default: 12h)",
    "DURATION",
);
pub const PARTITIONS: BenchFlag = BenchFlag {
    kind: FlagKind::Number,
    ..flag(
        "partitions",
        "TimescaleDB mode, load and all: hypertable space partitions on the host key, 1-32767 (the loader's default: none)",
        "N",
    )
};

/// In the order runs have always recorded them.
pub const FLAGS: &[BenchFlag] = &[MODE, PASSWORD_ENV, CHUNK_TIME, PARTITIONS];

fn partitions(given: &Values) -> Option<u64> {
    given.get(&PARTITIONS.key()).and_then(Value::as_u64)
}

/// The given values (typed) checked (exit 2, the words users have always seen): the
/// hypertable's flags take a load, a positive Go duration and 1-32767 partitions. Whether
/// the mode that runs has hypertables is the product's check once the mode is known
/// ([`check_mode`]). The hypertable settings given resolve into the workload's write settings
/// (`chunk_time`, `partitions`) and the loader's arguments ([`hypertable`]).
pub fn resolve(phase: &str, given: &Values) -> Result<Values> {
    let given = &crate::product::ext::typed(FLAGS, given)?;
    let chunk_time = given_text(given, &CHUNK_TIME);
    let parts = partitions(given);
    if chunk_time.is_none() && parts.is_none() {
        return Ok(Values::new());
    }
    if !matches!(phase, "load" | "all") {
        return Err(Error::invalid(format!(
            "--chunk-time and --partitions apply to load and all, not {phase}"
        ))
        .with_hint("drop them: the hypertable is made by the load"));
    }
    if let Some(c) = &chunk_time {
        if crate::dataset::parse_go_duration(c).is_none_or(|ns| ns <= 0) {
            return Err(Error::invalid(format!(
                "--chunk-time {c:?} is not a positive Go duration"
            ))
            .with_hint("e.g. --chunk-time 12h (the loader's default), 30m or 1h30m"));
        }
    }
    if let Some(n) = parts {
        if !(1..=MAX_PARTITIONS).contains(&n) {
            return Err(Error::invalid(format!(
                "--partitions {n} is outside 1..={MAX_PARTITIONS}"
            ))
            .with_hint("omit it for no space partitions (the loader's default)"));
        }
    }
    let mut out = Values::new();
    if let Some(c) = chunk_time {
        out.insert(CHUNK_TIME.key(), c.into());
    }
    if let Some(n) = parts {
        out.insert(PARTITIONS.key(), n.into());
    }
    Ok(out)
}

/// The hypertable's chunk interval and space partitions in resolved values (`None`: the
/// loader's default).
pub fn hypertable(values: &Values) -> (Option<String>, Option<u64>) {
    (given_text(values, &CHUNK_TIME), partitions(values))
}

/// Refuses (exit 2) hypertable settings for a variant without hypertables (`display`: its
/// name).
pub fn check_mode(has_hypertables: bool, display: &str, values: &Values) -> Result<()> {
    if has_hypertables || hypertable(values) == (None, None) {
        return Ok(());
    }
    Err(Error::invalid(format!(
        "--chunk-time and --partitions shape TimescaleDB hypertables; {display} has none"
    ))
    .with_hint("drop them, or benchmark TimescaleDB (a workspace prepared with --mode timescaledb, or --mode timescaledb for an external server)"))
}

/// What the core reads of the given values: the mode and the password's variable.
pub fn core(given: &Values) -> CoreValues {
    CoreValues {
        variant: given_text(given, &MODE),
        auth_token_env: given_text(given, &PASSWORD_ENV),
        ..CoreValues::default()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn resolved(phase: &str, v: Value) -> Result<Values> {
        crate::product::ext::resolve(
            "timescaledb",
            &super::super::product::BENCH_EXT,
            phase,
            v.as_object().unwrap(),
        )
    }

    /// The hypertable flags' rules (they were `bench::validate`'s), as a command line (text)
    /// and a record (typed) give them.
    #[test]
    fn hypertable_flag_rules() {
        let cases: Vec<(&str, &str, Value, Option<&str>)> = vec![
            (
                "a whole hypertable",
                "all",
                json!({"chunk_time": "1h30m", "partitions": "4"}),
                None,
            ),
            (
                "from a record",
                "load",
                json!({"chunk_time": "6h", "partitions": 4}),
                None,
            ),
            (
                "on a query",
                "query",
                json!({"chunk_time": "6h"}),
                Some("--chunk-time and --partitions apply to load and all, not query"),
            ),
            (
                "not a duration",
                "load",
                json!({"chunk_time": "12 hours"}),
                Some("--chunk-time \"12 hours\" is not a positive Go duration"),
            ),
            (
                "zero duration",
                "load",
                json!({"chunk_time": "0s"}),
                Some("is not a positive Go duration"),
            ),
            (
                "zero partitions",
                "all",
                json!({"partitions": "0"}),
                Some("--partitions 0 is outside 1..=32767"),
            ),
            (
                "too many",
                "all",
                json!({"partitions": 32768}),
                Some("--partitions 32768 is outside 1..=32767"),
            ),
            (
                "not a number",
                "all",
                json!({"partitions": "four"}),
                Some("--partitions \"four\" is not a whole number"),
            ),
            (
                "only the mode and password",
                "query",
                json!({"mode": "postgresql", "password_env": "PW"}),
                None,
            ),
        ];
        for (name, phase, g, want) in cases {
            match (want, resolved(phase, g)) {
                // Only the hypertable settings resolve (the workload's write settings).
                (None, Ok(v)) => assert!(
                    v.keys().all(|k| k == "chunk_time" || k == "partitions"),
                    "{name}: {v:?}"
                ),
                (None, Err(e)) => panic!("{name}: refused: {}", e.message),
                (Some(w), Ok(_)) => panic!("{name}: accepted, wanted {w:?}"),
                (Some(w), Err(e)) => {
                    assert_eq!(e.exit_code(), 2, "{name}: {}", e.message);
                    assert!(e.message.contains(w), "{name}: {:?} lacks {w:?}", e.message);
                }
            }
        }
    }

    #[test]
    fn the_core_reads_the_mode_password_variable_and_hypertable() {
        let g = crate::product::ext::typed(
            FLAGS,
            json!({"mode": "timescaledb", "password_env": "PW", "chunk_time": "6h", "partitions": "4"})
                .as_object()
                .unwrap(),
        )
        .unwrap();
        let c = core(&g);
        assert_eq!(c.variant.as_deref(), Some("timescaledb"));
        assert_eq!(c.auth_token_env.as_deref(), Some("PW"));
        let resolved = resolve("load", &g).unwrap();
        assert_eq!(
            serde_json::Value::Object(resolved.clone()),
            json!({"chunk_time": "6h", "partitions": 4})
        );
        assert_eq!(hypertable(&resolved), (Some("6h".into()), Some(4)));
        assert_eq!(core(&Values::new()), CoreValues::default());
    }
}
