//! InfluxDB 3's own bench flags ([`crate::product::ext`]): declared here with their help,
//! checks and what the core reads of them ([`core`]); `bench influxdb3` adds them at runtime
//! (`--edition` is parsed by its CLI module as the product's own enum and given here as
//! text). Recorded flat ([`Record::Flat`](crate::product::ext::Record::Flat)), every key
//! always: the keys, order and values runs have always recorded.
//!
//! `--auth-token-env` is recorded under `auth_token_env`, the key the generic
//! `bench <product> --token-env` records too: a record has one of them.

use serde_json::Value;

use crate::error::{Error, Result};
use crate::product::ext::{
    flag, given_text, BenchFlag, CoreValues, Durability, FlagKind, Values, WriteSettings,
};

/// The longest one row-count request may be given (a day).
pub const MAX_COUNT_TIMEOUT: f64 = 86_400.0;

/// The entry's `variant_flag`: its CLI module parses it (the product's enum, so `--help`
/// lists the editions) and gives it as text.
pub const EDITION: BenchFlag = flag(
    "edition",
    "External targets: the edition the servers run",
    "EDITION",
);
pub const NO_SYNC: BenchFlag = BenchFlag {
    kind: FlagKind::Switch,
    ..flag(
        "no-sync",
        "Acknowledge writes before the WAL is persisted (default: durable acknowledgement)",
        "",
    )
};
pub const ACCEPT_PARTIAL: BenchFlag = BenchFlag {
    kind: FlagKind::Switch,
    ..flag(
        "accept-partial",
        "Accept the valid lines of a batch with invalid ones (default: reject the whole batch)",
        "",
    )
};
pub const AUTH_TOKEN_ENV: BenchFlag = flag(
    "auth-token-env",
    "Environment variable holding the auth token (default INFLUXDB3_AUTH_TOKEN, if set)",
    "VAR",
);
pub const ADMIN_TOKEN_ENV: BenchFlag = flag(
    "admin-token-env",
    "Environment variable holding the admin token (default INFLUXDB3_ADMIN_TOKEN, if set; else the auth token)",
    "VAR",
);
pub const COUNT_TIMEOUT: BenchFlag = BenchFlag {
    kind: FlagKind::Seconds,
    ..flag(
        "count-timeout",
        "Seconds one row-count request may take (default 1800: a count over the published 103.7 M rows can take minutes; Core's counts may be split into time slices)",
        "SECONDS",
    )
};

/// In the order runs have always recorded them.
pub const FLAGS: &[BenchFlag] = &[
    EDITION,
    NO_SYNC,
    ACCEPT_PARTIAL,
    AUTH_TOKEN_ENV,
    ADMIN_TOKEN_ENV,
    COUNT_TIMEOUT,
];

fn seconds(given: &Values) -> Option<f64> {
    given.get(&COUNT_TIMEOUT.key()).and_then(Value::as_f64)
}

fn switch(given: &Values, f: &BenchFlag) -> bool {
    given.get(&f.key()) == Some(&Value::Bool(true))
}

/// Its write settings: the durability flags its runs' workloads record (`no_sync`,
/// `accept_partial`), and how the writes were acknowledged by them.
pub static WRITE_SETTINGS: WriteSettings = WriteSettings {
    keys: &["no_sync", "accept_partial"],
    durability: |w| {
        // A record without them: the server's defaults (durable, whole batches).
        let no_sync = w.get("no_sync").and_then(Value::as_bool).unwrap_or(false);
        let accept_partial = w
            .get("accept_partial")
            .and_then(Value::as_bool)
            .unwrap_or(false);
        Durability {
            no_sync,
            accept_partial,
            durable_write_acknowledgement: !no_sync,
            whole_batch_rejection: !accept_partial,
        }
    },
};

/// `--no-sync`, in resolved values.
pub fn no_sync(values: &Values) -> bool {
    switch(values, &NO_SYNC)
}

/// `--accept-partial`, in resolved values.
pub fn accept_partial(values: &Values) -> bool {
    switch(values, &ACCEPT_PARTIAL)
}

/// The given values (typed) to the resolved ones: the count timeout checked (exit 2, the
/// words users have always seen); the write settings the run's workload records
/// (`no_sync`, `accept_partial`). The token variables are read by the core ([`core`]).
pub fn resolve(_phase: &str, given: &Values) -> Result<Values> {
    let given = &crate::product::ext::typed(FLAGS, given)?;
    if let Some(t) = seconds(given) {
        if !(t.is_finite() && t > 0.0 && t <= MAX_COUNT_TIMEOUT) {
            return Err(Error::invalid(format!(
                "--count-timeout {t} is not a number of seconds in (0, 86400]"
            ))
            .with_hint("e.g. --count-timeout 3600"));
        }
    }
    let mut out = Values::new();
    out.insert(NO_SYNC.key(), switch(given, &NO_SYNC).into());
    out.insert(ACCEPT_PARTIAL.key(), switch(given, &ACCEPT_PARTIAL).into());
    Ok(out)
}

/// What the core reads of the given values: the edition, the token variables, the count
/// timeout and `--no-sync` as parsed (the loader and the row count read the resolved values).
pub fn core(given: &Values) -> CoreValues {
    CoreValues {
        variant: given_text(given, &EDITION),
        auth_token_env: given_text(given, &AUTH_TOKEN_ENV),
        admin_token_env: given_text(given, &ADMIN_TOKEN_ENV),
        count_timeout: seconds(given),
        no_sync: switch(given, &NO_SYNC),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn given(v: Value) -> Values {
        v.as_object().cloned().unwrap()
    }

    /// The count timeout's bounds (they were the CLI's), as a command line (text) and a
    /// record (a number) give it; the resolved values are the workload's write settings.
    #[test]
    fn the_count_timeout_is_checked_and_the_write_settings_resolved() {
        for bad in [json!("0"), json!(-1.0), json!("86401")] {
            let e = resolve("load", &given(json!({"count_timeout": bad}))).unwrap_err();
            assert_eq!(e.exit_code(), 2, "{bad}");
            assert!(
                e.message.starts_with("--count-timeout ") && e.message.contains("(0, 86400]"),
                "{}",
                e.message
            );
        }
        let v = resolve(
            "all",
            &given(json!({"count_timeout": "120", "no_sync": true, "auth_token_env": "AT"})),
        )
        .unwrap();
        assert_eq!(
            Value::Object(v),
            json!({"no_sync": true, "accept_partial": false})
        );
    }

    #[test]
    fn the_core_reads_the_edition_tokens_and_write_settings() {
        let g = crate::product::ext::typed(
            FLAGS,
            &given(json!({
                "edition": "enterprise", "accept_partial": true, "auth_token_env": "AT",
                "admin_token_env": "ADT", "count_timeout": "120"
            })),
        )
        .unwrap();
        let c = core(&g);
        assert_eq!(c.variant.as_deref(), Some("enterprise"));
        assert_eq!(
            (c.auth_token_env.as_deref(), c.admin_token_env.as_deref()),
            (Some("AT"), Some("ADT"))
        );
        assert_eq!(c.count_timeout, Some(120.0));
        assert!(!c.no_sync);
        let resolved = resolve("load", &g).unwrap();
        assert!(accept_partial(&resolved) && !no_sync(&resolved));
        assert_eq!(core(&Values::new()), CoreValues::default());
    }
}
