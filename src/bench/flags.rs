//! The flags of a bench command as the run manifest records them (`flags`), and the one place
//! a [`Request`] is built from them: the CLI records what it parsed and builds the request
//! from that record; `runs rerun` reads the record back into the same type. A flag is added
//! here once (plus its clap definition), not in the CLI, the request and the rerun each.
//!
//! The field order is the recorded key order (serde_json keeps it): common flags first, then
//! the product's ([`ProductFlags`]). Secrets are never recorded: only the names of the
//! environment variables that hold them, and `<redacted>` for a hold token.

use std::path::PathBuf;

use serde::{Deserialize, Serialize};

use super::{watch, Phase, Request};
use crate::dataset::{Compression, Profile, SpecOverrides};
use crate::error::{Error, Result};
use crate::tsbs::DatabaseMode;

/// What a hold token is recorded as.
pub const REDACTED: &str = "<redacted>";

/// The recorded flags of a bench command.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct Flags {
    #[serde(default)]
    pub phase: Option<String>,
    #[serde(default)]
    pub database_id: Option<String>,
    #[serde(default)]
    pub urls: Vec<String>,
    #[serde(default)]
    pub database: Option<String>,
    #[serde(default)]
    pub database_mode: Option<DatabaseMode>,
    #[serde(default)]
    pub confirm_reset: Option<String>,
    #[serde(default)]
    pub profile: Option<Profile>,
    #[serde(default)]
    pub use_case: Option<String>,
    #[serde(default)]
    pub start: Option<String>,
    #[serde(default)]
    pub end: Option<String>,
    #[serde(default)]
    pub scale: Option<i64>,
    #[serde(default)]
    pub seed: Option<i64>,
    #[serde(default)]
    pub log_interval: Option<String>,
    #[serde(default)]
    pub dataset_id: Option<String>,
    #[serde(default)]
    pub dataset_root: Option<PathBuf>,
    #[serde(default)]
    pub compression: Option<Compression>,
    #[serde(default)]
    pub query_types: Vec<String>,
    #[serde(default)]
    pub queries: Option<i64>,
    #[serde(default)]
    pub query_counts: Vec<String>,
    #[serde(default)]
    pub load_workers: Option<u32>,
    #[serde(default)]
    pub batch_size: Option<u32>,
    #[serde(default)]
    pub query_workers: Option<u32>,
    #[serde(default)]
    pub run_id: Option<String>,
    #[serde(default)]
    pub startup_timeout: Option<f64>,
    #[serde(default)]
    pub stop_timeout: Option<f64>,
    /// Recorded with its default applied (what the run used).
    #[serde(default)]
    pub stall_timeout: Option<f64>,
    /// Recorded with its default applied.
    #[serde(default)]
    pub on_stall: Option<String>,
    #[serde(default)]
    pub wait: Option<u64>,
    /// [`REDACTED`] when a hold token was given on the command line.
    #[serde(default)]
    pub hold_token: Option<String>,
    #[serde(default)]
    pub hold_token_env: Option<String>,
    #[serde(default)]
    pub hold_token_stdin: bool,
    #[serde(flatten)]
    pub product: ProductFlags,
}

/// The product-specific flags, recorded after the common ones (only the product's keys).
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct ProductFlags {
    #[serde(flatten, default, skip_serializing_if = "Option::is_none")]
    pub greptimedb: Option<GreptimeFlags>,
    #[serde(flatten, default, skip_serializing_if = "Option::is_none")]
    pub influxdb3: Option<Influx3Flags>,
    #[serde(flatten, default, skip_serializing_if = "Option::is_none")]
    pub timescaledb: Option<TimescaleFlags>,
}

/// `bench greptimedb` flags.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct GreptimeFlags {
    #[serde(default)]
    pub table: Option<String>,
    #[serde(default)]
    pub strategy: Option<String>,
    #[serde(default)]
    pub window: Option<u64>,
    #[serde(default)]
    pub confirm_timeout: Option<f64>,
    #[serde(default)]
    pub parallelism: Option<u32>,
    #[serde(default)]
    pub flush_before_queries: bool,
    #[serde(default)]
    pub hot_runs: Option<u32>,
    #[serde(default)]
    pub greptime_version: Option<String>,
    #[serde(default)]
    pub confirm_version_override: Option<String>,
}

/// `bench influxdb3` flags (token flags hold variable names, never tokens).
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct Influx3Flags {
    #[serde(default)]
    pub edition: Option<String>,
    #[serde(default)]
    pub no_sync: bool,
    #[serde(default)]
    pub accept_partial: bool,
    #[serde(default)]
    pub auth_token_env: Option<String>,
    #[serde(default)]
    pub admin_token_env: Option<String>,
    #[serde(default)]
    pub count_timeout: Option<f64>,
}

/// `bench timescaledb` flags (`password_env` holds a variable name, never the password).
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct TimescaleFlags {
    /// External targets: `timescaledb` or `postgresql` (the product's variant).
    #[serde(default)]
    pub mode: Option<String>,
    #[serde(default)]
    pub password_env: Option<String>,
    #[serde(default)]
    pub chunk_time: Option<String>,
    #[serde(default)]
    pub partitions: Option<u32>,
}

impl Flags {
    /// The recorded JSON (the manifest's `flags`).
    pub fn to_value(&self) -> serde_json::Value {
        serde_json::to_value(self).expect("bench flags serialize")
    }

    /// Reads recorded flags back (`runs rerun`); a value of the wrong kind is an integrity
    /// error: the manifest was changed outside tsbsctl.
    pub fn from_value(v: &serde_json::Value) -> Result<Flags> {
        serde_json::from_value(v.clone()).map_err(|e| {
            Error::integrity(format!(
                "the run manifest records flags tsbsctl cannot read: {e}"
            ))
            .with_hint("the manifest was changed by hand or by another tool version")
        })
    }

    /// The request these flags ask for in `phase` (the lock options, the rerun pins and the
    /// recorded `flags` are the caller's to set).
    pub fn request(&self, phase: Phase) -> Result<Request> {
        let on_stall = match self.on_stall.as_deref() {
            None => None,
            Some(s) => Some(
                <watch::OnStall as clap::ValueEnum>::from_str(s, false).map_err(|_| {
                    Error::integrity(format!("the run manifest records an unknown value {s:?}"))
                        .with_hint("the manifest was changed by hand or by another tool version")
                })?,
            ),
        };
        let g = self.product.greptimedb.clone().unwrap_or_default();
        let i = self.product.influxdb3.clone().unwrap_or_default();
        let t = self.product.timescaledb.clone().unwrap_or_default();
        Ok(Request {
            phase: Some(phase),
            database_id: self.database_id.clone(),
            urls: self.urls.clone(),
            // The variant: InfluxDB 3's edition or PostgreSQL's mode (one product records one).
            edition: i.edition.or(t.mode),
            database: self.database.clone(),
            mode: self.database_mode,
            confirm_reset: self.confirm_reset.clone(),
            dataset_id: self.dataset_id.clone(),
            dataset_root: self.dataset_root.clone(),
            spec: SpecOverrides {
                profile: self.profile,
                use_case: self.use_case.clone(),
                start: self.start.clone(),
                end: self.end.clone(),
                scale: self.scale,
                seed: self.seed,
                log_interval: self.log_interval.clone(),
            },
            compression: self.compression,
            query_types: self.query_types.clone(),
            queries: self.queries,
            query_counts: self.query_counts.clone(),
            load_workers: self.load_workers,
            batch_size: self.batch_size,
            query_workers: self.query_workers,
            run_id: self.run_id.clone(),
            no_sync: i.no_sync,
            accept_partial: i.accept_partial,
            // PostgreSQL's password goes through the auth-token seam.
            auth_token_env: i.auth_token_env.or(t.password_env),
            admin_token_env: i.admin_token_env,
            chunk_time: t.chunk_time,
            partitions: t.partitions,
            strategy: g.strategy,
            window: g.window,
            table: g.table,
            hot_runs: g.hot_runs,
            confirm_timeout: g.confirm_timeout,
            parallelism: g.parallelism,
            flush_before_queries: g.flush_before_queries,
            greptime_version: g.greptime_version,
            confirm_version_override: g.confirm_version_override,
            startup_timeout: self.startup_timeout,
            stop_timeout: self.stop_timeout,
            // Checked by the CLI; a recorded value out of range is refused, not a panic.
            count_timeout: i
                .count_timeout
                .and_then(|t| std::time::Duration::try_from_secs_f64(t).ok()),
            stall_timeout: self.stall_timeout,
            on_stall,
            ..Request::default()
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The recorded keys, in the order manifests have always had them (common, then the
    /// product's), and the values as the record writes them.
    #[test]
    fn the_record_keeps_its_keys_order_and_values() {
        let f = Flags {
            phase: Some("all".into()),
            database_id: Some("ws1".into()),
            database_mode: Some(DatabaseMode::Reset),
            profile: Some(Profile::Smoke),
            compression: Some(Compression::Gzip),
            load_workers: Some(3),
            stall_timeout: Some(300.0),
            on_stall: Some("warn".into()),
            hold_token: Some(REDACTED.into()),
            product: ProductFlags {
                greptimedb: Some(GreptimeFlags {
                    hot_runs: Some(2),
                    ..GreptimeFlags::default()
                }),
                influxdb3: None,
                timescaledb: None,
            },
            ..Flags::default()
        };
        let text = serde_json::to_string(&f.to_value()).unwrap();
        assert_eq!(
            text,
            concat!(
                r#"{"phase":"all","database_id":"ws1","urls":[],"database":null,"#,
                r#""database_mode":"reset","confirm_reset":null,"profile":"smoke","#,
                r#""use_case":null,"start":null,"end":null,"scale":null,"seed":null,"#,
                r#""log_interval":null,"dataset_id":null,"dataset_root":null,"#,
                r#""compression":"gzip","query_types":[],"queries":null,"query_counts":[],"#,
                r#""load_workers":3,"batch_size":null,"query_workers":null,"run_id":null,"#,
                r#""startup_timeout":null,"stop_timeout":null,"stall_timeout":300.0,"#,
                r#""on_stall":"warn","wait":null,"hold_token":"<redacted>","#,
                r#""hold_token_env":null,"hold_token_stdin":false,"table":null,"#,
                r#""strategy":null,"window":null,"confirm_timeout":null,"parallelism":null,"#,
                r#""flush_before_queries":false,"hot_runs":2,"greptime_version":null,"#,
                r#""confirm_version_override":null}"#
            )
        );
        // And back: the request a rerun builds is the one the command built.
        let back = Flags::from_value(&f.to_value()).unwrap();
        let req = back.request(Phase::All).unwrap();
        assert_eq!(req.mode, Some(DatabaseMode::Reset));
        assert_eq!(req.spec.profile, Some(Profile::Smoke));
        assert_eq!(req.load_workers, Some(3));
        assert_eq!(req.hot_runs, Some(2));
        assert_eq!(req.on_stall, Some(watch::OnStall::Warn));
    }

    /// A TimescaleDB record: its keys after the common ones, the password as a variable name
    /// only, and back into the request `runs rerun` builds (mode, password variable,
    /// hypertable flags).
    #[test]
    fn a_timescaledb_record_round_trips() {
        let f = Flags {
            phase: Some("all".into()),
            urls: vec!["postgres://bench@10.0.0.5:5432/tsbs".into()],
            product: ProductFlags {
                timescaledb: Some(TimescaleFlags {
                    mode: Some("timescaledb".into()),
                    password_env: Some("TSBS_PG_PASSWORD".into()),
                    chunk_time: Some("6h".into()),
                    partitions: Some(4),
                }),
                ..ProductFlags::default()
            },
            ..Flags::default()
        };
        let v = f.to_value();
        let text = serde_json::to_string(&v).unwrap();
        assert!(
            text.ends_with(r#""hold_token_stdin":false,"mode":"timescaledb","password_env":"TSBS_PG_PASSWORD","chunk_time":"6h","partitions":4}"#),
            "{text}"
        );
        assert!(
            v.get("edition").is_none() && v.get("table").is_none(),
            "{text}"
        );
        let req = Flags::from_value(&v).unwrap().request(Phase::All).unwrap();
        assert_eq!(req.edition.as_deref(), Some("timescaledb"));
        assert_eq!(req.auth_token_env.as_deref(), Some("TSBS_PG_PASSWORD"));
        assert_eq!(req.chunk_time.as_deref(), Some("6h"));
        assert_eq!(req.partitions, Some(4));
        assert_eq!(
            serde_json::Value::Object(req.write_settings()),
            serde_json::json!({"chunk_time": "6h", "partitions": 4})
        );
        // A record without them (another product's) asks for none.
        let req = Flags::default().request(Phase::All).unwrap();
        assert!(req.write_settings().is_empty());
    }

    #[test]
    fn an_edited_record_is_an_integrity_error_not_a_guess() {
        let bad = serde_json::json!({"database_mode": "drop"});
        assert_eq!(Flags::from_value(&bad).unwrap_err().exit_code(), 4);
        let f = Flags::from_value(&serde_json::json!({"on_stall": "explode"})).unwrap();
        assert_eq!(f.request(Phase::Query).unwrap_err().exit_code(), 4);
        let f = Flags::from_value(
            &serde_json::json!({"edition": "core", "count_timeout": -1.0, "no_sync": true}),
        )
        .unwrap();
        let req = f.request(Phase::Query).unwrap();
        assert_eq!(req.count_timeout, None, "a negative wait is not a panic");
        assert!(req.no_sync);
        assert_eq!(req.edition.as_deref(), Some("core"));
    }
}
