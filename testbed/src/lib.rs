//! Test-only stand-ins for the outside world, faithful to `shared/reference/protocols.md`:
//!
//! * [`mirror`]: a release mirror on 127.0.0.1 (GitHub, GitHub API, InfluxData, go.dev route
//!   shapes) with fault knobs and a log of the requests it saw;
//! * [`tarball`]: archives built on the fly from file trees, including unsafe variants;
//! * `releases`: the stand-in releases each product publishes on the mirror;
//! * `emulators`: `greptime`, `influxdb3`, `go` and the TSBS tools. They all live in the one
//!   `testbed` binary (`testbed emulate <tool> ...`); the archives the mirror serves hold small
//!   wrapper scripts that exec it, so a test's installed "binary" is a real executable.
