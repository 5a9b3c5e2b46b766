//! Fast SHA-256 of files and streams (as fast as `openssl dgst -sha256` on this CPU).
//!
//! `sha2` picks the SHA-NI (x86) or ARMv8 crypto instructions at run time when the CPU has
//! them; `scripts/bench-foundation.sh` measures it against openssl (README, Performance).

use std::io::Read;
use std::path::Path;

use sha2::Digest;

use crate::error::{Error, Result};
use crate::output::Progress;

/// Read size for hashing files: large enough that syscalls are noise next to hashing.
pub const READ_BUF: usize = 2 << 20;

/// SHA-256 (lowercase hex) and size of a file, with progress in bytes. Reading and hashing
/// overlap (the hash runs on a helper thread), so the read is hidden behind the hash.
pub fn sha256_file(path: &Path, progress: &dyn Progress) -> Result<(String, u64)> {
    let mut file = fs_err::File::open(path)?.into_file();
    sha256_open(&mut file, path, progress)
}

/// [`sha256_file`] of a file already open (read from its current offset to its end); `path`
/// names it in errors.
pub fn sha256_open(
    file: &mut std::fs::File,
    path: &Path,
    progress: &dyn Progress,
) -> Result<(String, u64)> {
    if let Ok(meta) = file.metadata() {
        progress.set_total(meta.len());
    }
    let mut pipe = HashPipe::new(Sha256::new());
    let mut size = 0u64;
    loop {
        let mut buf = pipe.buffer(READ_BUF);
        let n = loop {
            match file.read(&mut buf) {
                Ok(n) => break n,
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
                Err(e) => return Err(Error::io("read", path, e)),
            }
        };
        if n == 0 {
            break;
        }
        buf.truncate(n);
        pipe.push(buf);
        size += n as u64;
        progress.inc(n as u64);
    }
    progress.finish();
    Ok((pipe.finish().finish_hex(), size))
}

/// SHA-256 on a helper thread: the caller pushes owned buffers (hashed in order) and gets
/// them back through [`HashPipe::buffer`] for reuse, so reading (or writing) and hashing
/// run at the same time.
pub struct HashPipe {
    tx: Option<std::sync::mpsc::SyncSender<Vec<u8>>>,
    back: std::sync::mpsc::Receiver<Vec<u8>>,
    worker: Option<std::thread::JoinHandle<Sha256>>,
}

impl HashPipe {
    /// Continues from `state` (e.g. a hasher primed with a partial download).
    pub fn new(state: Sha256) -> Self {
        // Three buffers in flight keep both threads busy without holding much memory.
        let (tx, rx) = std::sync::mpsc::sync_channel::<Vec<u8>>(3);
        let (back_tx, back) = std::sync::mpsc::channel();
        let worker = std::thread::Builder::new()
            .name("sha256".into())
            .spawn(move || {
                let mut h = state;
                for buf in rx {
                    h.update(&buf);
                    let _ = back_tx.send(buf);
                }
                h
            })
            .expect("spawn the hashing thread");
        HashPipe {
            tx: Some(tx),
            back,
            worker: Some(worker),
        }
    }

    /// A buffer of `len` bytes: a returned one when available, else a new one.
    pub fn buffer(&self, len: usize) -> Vec<u8> {
        let mut b = self.back.try_recv().unwrap_or_default();
        b.resize(len, 0);
        b
    }

    /// Hashes `buf` (all of it) after everything pushed before.
    pub fn push(&mut self, buf: Vec<u8>) {
        if let Some(tx) = &self.tx {
            tx.send(buf).expect("the hashing thread is alive");
        }
    }

    /// Waits for the queue to drain and returns the hasher state.
    pub fn finish(mut self) -> Sha256 {
        self.tx.take();
        self.worker
            .take()
            .expect("finish is called once")
            .join()
            .expect("the hashing thread does not panic")
    }
}

impl Drop for HashPipe {
    fn drop(&mut self) {
        self.tx.take();
        if let Some(w) = self.worker.take() {
            let _ = w.join();
        }
    }
}

/// Feeds everything `reader` yields into `hasher`; returns the byte count.
pub fn hash_reader(
    reader: &mut dyn Read,
    hasher: &mut Sha256,
    progress: &dyn Progress,
) -> std::io::Result<u64> {
    let mut buf = vec![0u8; READ_BUF];
    let mut total = 0u64;
    loop {
        let n = match reader.read(&mut buf) {
            Ok(0) => return Ok(total),
            Ok(n) => n,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(e),
        };
        hasher.update(&buf[..n]);
        total += n as u64;
        progress.inc(n as u64);
    }
}

/// A streaming SHA-256 hasher (wraps the fastest implementation available).
#[derive(Clone, Default)]
pub struct Sha256 {
    inner: sha2::Sha256,
}

impl Sha256 {
    pub fn new() -> Self {
        Sha256 {
            inner: sha2::Sha256::new(),
        }
    }
    pub fn update(&mut self, bytes: &[u8]) {
        self.inner.update(bytes);
    }
    /// Lowercase hex digest.
    pub fn finish_hex(self) -> String {
        hex::encode(self.finish_bytes())
    }
    /// Raw 32-byte digest.
    pub fn finish_bytes(self) -> [u8; 32] {
        self.inner.finalize().into()
    }
}

/// SHA-256 (lowercase hex) of a byte slice.
pub fn sha256_hex(bytes: &[u8]) -> String {
    let mut h = Sha256::new();
    h.update(bytes);
    h.finish_hex()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::output::NoProgress;

    #[test]
    fn known_vectors() {
        assert_eq!(
            sha256_hex(b""),
            "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"
        );
        assert_eq!(
            sha256_hex(b"abc"),
            "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"
        );
    }

    #[test]
    fn streaming_equals_one_shot_and_file_hash() {
        let data: Vec<u8> = (0..(3 * READ_BUF + 17))
            .map(|i| (i * 31 % 251) as u8)
            .collect();
        let mut h = Sha256::new();
        for chunk in data.chunks(1000) {
            h.update(chunk);
        }
        let streamed = h.clone().finish_hex();
        assert_eq!(streamed, sha256_hex(&data));
        assert_eq!(hex::encode(h.finish_bytes()), streamed);

        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("f");
        std::fs::write(&p, &data).unwrap();
        let (hex, size) = sha256_file(&p, &NoProgress).unwrap();
        assert_eq!(hex, streamed);
        assert_eq!(size, data.len() as u64);

        let e = sha256_file(&dir.path().join("missing"), &NoProgress).unwrap_err();
        assert_eq!(e.exit_code(), 1);
        assert!(e.message.contains("missing"));
    }
}
