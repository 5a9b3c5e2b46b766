//! One integration-test binary that runs the real `tsbsctl` in temp directories against the
//! testbed. Each area of the product has its own module.

mod util;

mod cli;
mod skills;
