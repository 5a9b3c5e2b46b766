//! Flag groups shared by several commands, defined once. They are declared with the bench
//! flags in [`crate::bench::flags`] (the bench record serializes them and the core may not
//! name `crate::cli`) and re-exported here for every command.

pub use crate::bench::flags::{seconds, DatasetRootArgs, LockArgs, Seconds, ServerTimingArgs};

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
