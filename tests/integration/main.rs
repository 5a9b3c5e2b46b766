//! One integration-test binary that runs the real `tsbsctl` in temp directories against the
//! testbed. Each area of the product has its own module.

mod util;

mod answers;
mod archive;
mod bench;
mod cli;
mod cluster;
mod data;
mod download;
mod env;
mod exampledb;
mod flow;
mod greptimedb;
mod influxdb2;
mod influxdb3;
mod integrity;
mod locks;
mod pipeline;
mod precision;
mod queries;
mod resume;
mod runs;
mod s3;
mod safety;
mod server;
mod shape;
mod skills;
mod timeline;
mod timescaledb;
mod timescaledb_external;
mod tsbs;
mod usecases;
mod world;
