//! Canonical JSON and the content-derived ids of the reference (benchmark.md §1.2, §2.4):
//! keys sorted recursively, separators `,` and `:` without whitespace, non-ASCII escaped as
//! `\uXXXX`, integers kept as integers.

use serde_json::Value;

/// The canonical JSON text of `v`.
pub fn canonical_json(_v: &Value) -> String {
    todo!("foundation: canonical")
}

/// SHA-256 (lowercase hex) of the canonical JSON of `{"schema_version": 1, "spec": spec}`.
pub fn spec_digest(_spec: &Value) -> String {
    todo!("foundation: canonical")
}
