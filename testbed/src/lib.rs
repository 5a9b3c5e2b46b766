//! Test-only stand-ins for the outside world: a release mirror on 127.0.0.1 and emulators of
//! `greptime`, `influxdb3`, `go` and the TSBS tools, faithful to `shared/reference/protocols.md`.
