//! tsbsctl: reproducible TSBS benchmarks of GreptimeDB and InfluxDB 3.
//!
//! `main` is thin; each concern lives in its own module. Commands are parsed in [`cli`], get a
//! [`context::Ctx`], and return an [`output::Outcome`] or an [`error::Error`] whose kind picks the
//! exit code.

pub mod answers;
pub mod archive;
pub mod bench;
pub mod bounds;
pub mod canonical;
pub mod cli;
pub mod compare;
pub mod context;
pub mod dataset;
pub mod diskspace;
pub mod download;
pub mod environment;
pub mod error;
pub mod failurekind;
pub mod filelock;
pub mod fsutil;
pub mod gotime;
pub mod hash;
pub mod http;
pub mod ids;
pub mod install;
pub mod interrupt;
#[cfg(test)]
mod layering;
pub mod lock;
pub mod logscan;
pub mod manifest;
pub mod media;
pub mod noise;
pub mod output;
pub mod paths;
pub mod platform;
pub mod precision;
pub mod proc;
pub mod product;
pub mod publish;
pub mod queryset;
pub mod redact;
pub mod render;

pub mod report;
pub mod rerun;
pub mod resume;
pub mod run;
pub mod runlist;
pub mod s3;
pub mod sampler;
pub mod server;
pub mod skills;
pub mod sources;
pub mod summary;
pub mod treehash;
pub mod tsbs;
pub mod userpath;
pub mod workspace;
pub mod workspace_manifest;
pub mod xz;

/// The tool's version, recorded in every manifest.
pub const VERSION: &str = env!("CARGO_PKG_VERSION");
