//! Fast SHA-256 of files and streams (as fast as `openssl dgst -sha256` on this CPU).

use std::path::Path;

use crate::error::Result;
use crate::output::Progress;

/// SHA-256 (lowercase hex) and size of a file, with progress in bytes.
pub fn sha256_file(_path: &Path, _progress: &dyn Progress) -> Result<(String, u64)> {
    todo!("foundation: hash")
}

/// A streaming SHA-256 hasher (wraps the fastest implementation available).
#[derive(Clone, Default)]
pub struct Sha256 {
    _private: (),
}

impl Sha256 {
    pub fn new() -> Self {
        todo!("foundation: hash")
    }
    pub fn update(&mut self, _bytes: &[u8]) {
        todo!("foundation: hash")
    }
    /// Lowercase hex digest.
    pub fn finish_hex(self) -> String {
        todo!("foundation: hash")
    }
    /// Raw 32-byte digest.
    pub fn finish_bytes(self) -> [u8; 32] {
        todo!("foundation: hash")
    }
}

/// SHA-256 (lowercase hex) of a byte slice.
pub fn sha256_hex(_bytes: &[u8]) -> String {
    todo!("foundation: hash")
}
