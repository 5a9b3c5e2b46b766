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
