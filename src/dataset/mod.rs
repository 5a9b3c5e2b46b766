//! Logical datasets and their stored formats (`tsbsctl data ...`; benchmark.md §1).
//!
//! A logical dataset is the six-field [`DatasetSpec`]; its id is derived from the spec exactly
//! as the reference derives it (or given with `--dataset-id`). It lives in
//! `<dataset-root>/<id>/dataset.json`; each serialization in `formats/<format>/` holds one
//! stored file (`data`, `data.gz` or `data.xz`), its `manifest.json` and `generate.log`.
//!
//! Generation is one pass: the generator's stdout flows through tsbsctl, which counts lines,
//! hashes the uncompressed stream, optionally compresses, hashes the stored bytes and writes a
//! temp file beside the target, then publishes by rename and writes the manifest. Reuse checks
//! the manifest, the size and a recorded fingerprint (size, mtime, inode) without reading the
//! data; a changed fingerprint triggers a full verify first.
//!
//! API for the benchmark phases:
//! * [`Dataset::resolve`] (no writes) / [`Dataset::prepare`] (writes `dataset.json` if new) /
//!   [`Dataset::open`] (must exist);
//! * [`ensure_generated`] → [`StoredFormat`] (path, compression, rows, checksums, `reused`);
//!   [`StoredFormat::open_uncompressed`] streams the line protocol whatever the compression;
//! * [`verify`] recomputes every checksum.
//!
//! The parts: `spec.rs` (profiles, the spec and its id, the RFC 3339 / Go-duration grammar),
//! `store.rs` (the logical dataset store), `format.rs` (stored formats, fingerprints, reuse,
//! verify), `rows.rs` (row layouts and counting), `generate.rs` (generating a format) and
//! `pipeline.rs` (the buffers, `O_DIRECT` and pipe code the generator's output streams through).

use std::time::Duration;

mod adopt;
mod format;
mod generate;
mod pipeline;
mod rows;
mod spec;
mod store;
mod usecase;

pub use adopt::{adopt, find_datasets, AdoptMethod, AdoptReport, Adopted, Skipped};
pub use format::{
    check_generator, check_stored_spec, completed_formats, read_format_manifest,
    sweep_dataset_leftovers, sweep_leftovers, validate_format, variant_json, verify, AdoptedFrom,
    Compression, Digest, Fingerprint, FormatManifest, Generator, GeneratorRecord, StoredFormat,
    VariantStatus,
};
pub use generate::{ensure_generated, estimated_bytes, generation_need, GenerateRequest};
pub use rows::{DataFormat, RowLayout, RowLine, TableRows};
pub use spec::{
    generator_args, parse_go_duration, parse_rfc3339, DatasetSpec, ExpectedRows, Profile,
    SpecOverrides,
};
pub use store::{list, Dataset, DatasetManifest};
pub use usecase::{
    use_case, use_case_names, Table, UseCase, DEVOPS_QUERY_TYPES, IOT_QUERY_TYPES, USE_CASES,
};

/// How long a second process waits for another one generating the same variant.
const GENERATION_WAIT: Duration = Duration::from_secs(24 * 3600);
/// Size of one pipeline buffer; a handful are in flight, so memory stays flat.
const CHUNK: usize = 1 << 20;
