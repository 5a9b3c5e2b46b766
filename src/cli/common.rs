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

/// Where an object store is, for every product that keeps its data in one (GreptimeDB's
/// `--storage s3`, InfluxDB 3's `--object-store s3`); the key prefix is each product's own.
#[derive(Debug, Clone, Default, clap::Args)]
pub struct S3Args {
    /// With S3 storage: the S3 endpoint, http(s)://host[:port] (path-style requests).
    #[arg(long, value_name = "URL")]
    pub s3_endpoint: Option<String>,
    /// With S3 storage: the bucket (it must exist).
    #[arg(long, value_name = "B")]
    pub s3_bucket: Option<String>,
    /// With S3 storage: the region (default us-east-1).
    #[arg(long, value_name = "R")]
    pub s3_region: Option<String>,
    /// With S3 storage: the environment variable holding the access key id (default
    /// AWS_ACCESS_KEY_ID; the name is recorded, never the value).
    #[arg(long, value_name = "VAR")]
    pub s3_access_key_env: Option<String>,
    /// With S3 storage: the environment variable holding the secret key (default
    /// AWS_SECRET_ACCESS_KEY).
    #[arg(long, value_name = "VAR")]
    pub s3_secret_key_env: Option<String>,
}

impl From<&S3Args> for crate::s3::LocationFlags {
    fn from(a: &S3Args) -> Self {
        crate::s3::LocationFlags {
            endpoint: a.s3_endpoint.clone(),
            bucket: a.s3_bucket.clone(),
            region: a.s3_region.clone(),
            access_key_env: a.s3_access_key_env.clone(),
            secret_key_env: a.s3_secret_key_env.clone(),
        }
    }
}
