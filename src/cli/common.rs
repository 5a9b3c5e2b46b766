//! Flag groups shared by several commands, defined once.

use std::path::PathBuf;

/// Flags of every command that takes a workspace lock.
#[derive(Debug, Clone, Default, clap::Args)]
pub struct LockArgs {
    /// Wait up to SECONDS for a busy lock instead of failing at once (exit 3).
    // At most a week (trial-run #1): a huge wait overflowed the deadline.
    #[arg(long, value_name = "SECONDS", value_parser = clap::value_parser!(u64).range(..=crate::bounds::MAX_WAIT_SECS))]
    pub wait: Option<u64>,
    /// Work inside a manual hold taken with `tsbsctl workspace lock` (its token). Visible to
    /// other local users in `ps`: prefer --hold-token-env or --hold-token-stdin.
    #[arg(long, value_name = "TOKEN")]
    pub hold_token: Option<String>,
    /// Like --hold-token, with the token read from environment variable VAR.
    #[arg(long, value_name = "VAR", conflicts_with_all = ["hold_token", "hold_token_stdin"])]
    pub hold_token_env: Option<String>,
    /// Like --hold-token, with the token read from the first line of stdin.
    #[arg(long, conflicts_with = "hold_token")]
    pub hold_token_stdin: bool,
}

// Here, not in lock.rs, so the core never imports `cli` (review #3).
impl From<&LockArgs> for crate::lock::LockOptions {
    fn from(a: &LockArgs) -> Self {
        crate::lock::LockOptions {
            wait: a.wait.map(std::time::Duration::from_secs),
            hold_token: crate::lock::HoldToken::from_flags(
                a.hold_token.clone(),
                a.hold_token_env.clone(),
                a.hold_token_stdin,
            ),
        }
    }
}

/// `--dataset-root DIR` (else $TSBS_DATASET_ROOT, else <root>/datasets).
#[derive(Debug, Clone, Default, clap::Args)]
pub struct DatasetRootArgs {
    /// Where shared datasets live (default: $TSBS_DATASET_ROOT, else <root>/datasets).
    #[arg(long, value_name = "DIR")]
    pub dataset_root: Option<PathBuf>,
}

/// A number of seconds a person typed for a wait: finite, positive and at most a week
/// ([`crate::bounds::MAX_WAIT_SECONDS`]). `Err` says what is wrong with it.
pub fn seconds(raw: &str) -> Result<f64, String> {
    let max = crate::bounds::MAX_WAIT_SECONDS;
    match raw.trim().parse::<f64>() {
        Ok(s) if s.is_finite() && s > 0.0 && s <= max => Ok(s),
        _ => Err(format!(
            "must be a positive number of seconds, at most {max} (one week)"
        )),
    }
}

/// The clap value parser of [`seconds`]: a bad value exits 2 before anything is written
/// (`1e300` and `inf` would panic in `Duration::from_secs_f64`; a negative value must not
/// become a silent minimum), with a message that names the flag.
#[derive(Debug, Clone, Copy)]
pub struct Seconds;

impl clap::builder::TypedValueParser for Seconds {
    type Value = f64;

    fn parse_ref(
        &self,
        cmd: &clap::Command,
        arg: Option<&clap::Arg>,
        value: &std::ffi::OsStr,
    ) -> Result<f64, clap::Error> {
        let flag = arg
            .and_then(|a| a.get_long())
            .map(|l| format!("--{l}"))
            .unwrap_or_else(|| "the value".into());
        seconds(&value.to_string_lossy()).map_err(|why| {
            clap::Error::raw(
                clap::error::ErrorKind::ValueValidation,
                format!("{flag} {why}, e.g. {flag} 60\n"),
            )
            .with_cmd(cmd)
        })
    }
}

/// How long tsbsctl waits for a managed server: shared by `bench`, `serve` (and the checked
/// parser by `activate`).
#[derive(Debug, Clone, Copy, Default, clap::Args)]
pub struct ServerTimingArgs {
    /// Seconds to wait for a managed server to answer.
    #[arg(long, value_name = "SECONDS", value_parser = Seconds, allow_negative_numbers = true)]
    pub startup_timeout: Option<f64>,
    /// Seconds between SIGTERM and SIGKILL when stopping a managed server.
    #[arg(long, value_name = "SECONDS", value_parser = Seconds, allow_negative_numbers = true)]
    pub stop_timeout: Option<f64>,
}

impl ServerTimingArgs {
    /// `timing` with the given waits in place of its defaults (already checked by [`seconds`]).
    pub fn apply(&self, mut timing: crate::server::Timing) -> crate::server::Timing {
        if let Some(s) = self.startup_timeout {
            timing.startup_timeout = std::time::Duration::from_secs_f64(s);
        }
        if let Some(s) = self.stop_timeout {
            timing.grace = std::time::Duration::from_secs_f64(s);
        }
        timing
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn seconds_are_finite_positive_and_bounded() {
        for good in ["0.5", "60", "604800", " 20 "] {
            assert!(seconds(good).is_ok(), "{good}");
        }
        for bad in [
            "1e300", "inf", "-inf", "nan", "-5", "0", "604801", "", "abc",
        ] {
            let e = seconds(bad).unwrap_err();
            assert!(e.contains("positive number of seconds"), "{bad}: {e}");
        }
    }

    #[test]
    fn timing_args_replace_only_what_was_given() {
        let base = crate::server::Timing::default();
        let t = ServerTimingArgs {
            startup_timeout: Some(2.5),
            stop_timeout: None,
        }
        .apply(base);
        assert_eq!(t.startup_timeout, std::time::Duration::from_millis(2500));
        assert_eq!(t.grace, base.grace);
    }
}
