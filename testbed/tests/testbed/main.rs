//! One test binary for the testbed (as the main crate has `tests/integration`): the stand-ins
//! run as processes (`env!("CARGO_BIN_EXE_testbed")`, which also makes `cargo test` build the
//! binary the integration tests use) and the mirror's releases. One module per stand-in.

mod conformance;
mod go_emulator;
mod greptime_cluster;
mod greptime_emulator;
mod greptime_releases;
mod influxdb3_emulator;
mod timescaledb;
mod tsbs_tools;
