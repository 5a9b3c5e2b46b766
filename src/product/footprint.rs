//! The storage footprint: the part of [`Product`](super::Product) that the footprint step
//! (`src/bench/footprint.rs`), `inspect` and the footprint headings of summaries and reports
//! ask.

use std::path::Path;

use serde_json::{Map, Value};

use super::{classify_generic, FilePart, FootprintParts};
use crate::error::Result;
use crate::workspace_manifest::WorkspaceManifest;

/// How the server's data is split into parts, where it is not in the data directory, and
/// which engine wrote it.
pub trait StorageFootprint {
    /// Which part of a footprint split a file (path relative to the data directory) is.
    fn classify_file(&self, rel: &Path) -> FilePart {
        classify_generic(rel)
    }
    /// The name of a product-specific footprint layout (index and metadata counted on their
    /// own); `None`: the generic WAL/data/other split.
    fn footprint_layout(&self) -> Option<&'static str> {
        None
    }
    /// What the WAL, data and other parts of the data-directory split hold, in the product's
    /// own words (the headings of `summary.md` and the notes of `runs report`).
    fn footprint_parts(&self) -> FootprintParts {
        FootprintParts::GENERIC
    }
    /// Why a footprint whose files hold the WAL and the data together
    /// ([`FilePart::WalAndData`]) is a total only.
    fn combined_note(&self) -> &'static str {
        "WAL and data files share one format: reported as a total, not split"
    }
    /// The storage engine the files of a data-directory footprint show, where the product
    /// has more than one (`server_settings.storage_engine`): `combined_files` hold WAL and
    /// data together, `split_files` are WAL or data files. `None`: not said.
    fn storage_engine(&self, combined_files: u64, split_files: u64) -> Option<&'static str> {
        let _ = (combined_files, split_files);
        None
    }
    /// A managed workspace whose data lives in an object store: what a footprint adds to the
    /// data directory's, measured now: `object_store` (a listing of the bucket under the
    /// workspace's prefix, by part) and, when the server keeps a local cache of it, `cache`
    /// (measured on disk). `None`: the data is in the data directory.
    fn object_store_footprint(
        &self,
        _ws: &WorkspaceManifest,
        _ws_dir: &Path,
    ) -> Result<Option<(Value, Option<Value>)>> {
        Ok(None)
    }
    /// Where a managed workspace keeps its objects (`None`: in its data directory). A new
    /// workspace claims an empty prefix there at `prepare`, and `remove` deletes what it holds.
    /// `extra`: the workspace manifest's product fields.
    fn object_location(
        &self,
        _database_id: &str,
        _extra: &Map<String, Value>,
    ) -> Result<Option<crate::s3::Location>> {
        Ok(None)
    }
}
