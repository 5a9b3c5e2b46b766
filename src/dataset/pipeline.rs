//! The one-pass pipeline from the generator's stdout to the stored file: recycled aligned
//! buffers, a hashing/counting worker and a compressing/writing worker sharing each buffer,
//! `O_DIRECT` for uncompressed data where the filesystem allows it, and a larger pipe. The
//! module's `unsafe` (the aligned allocation, `F_SETPIPE_SZ`) is all here.

use std::fs::{self, File};
use std::io::{self, Read, Write};
use std::path::Path;
use std::sync::mpsc;

use crate::error::{Error, Result};
use crate::hash::Sha256;
use crate::output::Progress;

use super::format::Compression;
use super::rows::RowCounter;
use super::CHUNK;

/// Buffers in flight between the reader and the writer.
const IN_FLIGHT: usize = 6;

/// A writer that hashes what passes through.
struct HashWriter<W> {
    inner: W,
    hash: Sha256,
    bytes: u64,
}

impl<W: Write> Write for HashWriter<W> {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        let n = self.inner.write(buf)?;
        self.hash.update(&buf[..n]);
        self.bytes += n as u64;
        Ok(n)
    }
    fn flush(&mut self) -> io::Result<()> {
        self.inner.flush()
    }
}

enum Sink {
    Plain(File),
    Gzip(flate2::write::GzEncoder<HashWriter<io::BufWriter<File>>>),
    Xz(crate::xz::Encoder<HashWriter<io::BufWriter<File>>>),
}

impl Sink {
    fn new(file: File, c: Compression) -> Sink {
        let hw = || HashWriter {
            inner: io::BufWriter::with_capacity(CHUNK, file.try_clone().expect("dup file")),
            hash: Sha256::new(),
            bytes: 0,
        };
        match c {
            Compression::None => Sink::Plain(file),
            Compression::Gzip => Sink::Gzip(flate2::write::GzEncoder::new(
                hw(),
                flate2::Compression::default(),
            )),
            // Preset 3 keeps the encoder's memory near 32 MiB.
            Compression::Xz => Sink::Xz(crate::xz::encoder(hw(), 3)),
        }
    }

    fn write_all(&mut self, buf: &[u8]) -> io::Result<()> {
        match self {
            Sink::Plain(f) => f.write_all(buf),
            Sink::Gzip(e) => e.write_all(buf),
            Sink::Xz(e) => e.write_all(buf),
        }
    }

    /// Finishes the stream and fsyncs; returns the stored digest when it differs from the
    /// uncompressed one.
    fn finish(self) -> io::Result<Option<(String, u64)>> {
        let (file, digest) = match self {
            Sink::Plain(f) => (f, None),
            Sink::Gzip(e) => {
                let mut hw = e.finish()?;
                hw.flush()?;
                let f = hw.inner.into_inner().map_err(|e| e.into_error())?;
                (f, Some((hw.hash.finish_hex(), hw.bytes)))
            }
            Sink::Xz(e) => {
                let mut hw = e.finish()?;
                hw.flush()?;
                let f = hw.inner.into_inner().map_err(|e| e.into_error())?;
                (f, Some((hw.hash.finish_hex(), hw.bytes)))
            }
        };
        file.sync_all()?;
        Ok(digest)
    }
}

/// What the worker thread hands back.
pub(super) struct StreamResult {
    pub(super) rows: u64,
    pub(super) lines: u64,
    pub(super) sha256: String,
    pub(super) bytes: u64,
    pub(super) stored: Option<(String, u64)>,
    pub(super) tail: Vec<u8>,
    /// Per table, when the counter counted them.
    pub(super) tables: Option<std::collections::BTreeMap<String, super::rows::TableRows>>,
}

/// Alignment of pipeline buffers (what `O_DIRECT` writes need).
const ALIGN: usize = 4096;

/// A heap buffer aligned for direct I/O; `len` bytes of `CHUNK` are valid.
struct AlignedBuf {
    ptr: std::ptr::NonNull<u8>,
    len: usize,
}

// SAFETY: the buffer is plain owned memory; it moves between threads, never aliased mutably.
unsafe impl Send for AlignedBuf {}
unsafe impl Sync for AlignedBuf {}

impl AlignedBuf {
    fn layout() -> std::alloc::Layout {
        std::alloc::Layout::from_size_align(CHUNK, ALIGN).expect("valid layout")
    }
    fn new() -> AlignedBuf {
        // SAFETY: non-zero size; zeroed so every byte is initialised.
        let raw = unsafe { std::alloc::alloc_zeroed(Self::layout()) };
        let ptr = std::ptr::NonNull::new(raw)
            .unwrap_or_else(|| std::alloc::handle_alloc_error(Self::layout()));
        AlignedBuf { ptr, len: 0 }
    }
    fn data(&self) -> &[u8] {
        // SAFETY: `len <= CHUNK` bytes of an allocation we own.
        unsafe { std::slice::from_raw_parts(self.ptr.as_ptr(), self.len) }
    }
    fn space(&mut self) -> &mut [u8] {
        // SAFETY: the whole allocation, exclusively borrowed.
        unsafe { std::slice::from_raw_parts_mut(self.ptr.as_ptr(), CHUNK) }
    }
}

impl Drop for AlignedBuf {
    fn drop(&mut self) {
        // SAFETY: allocated in `new` with the same layout.
        unsafe { std::alloc::dealloc(self.ptr.as_ptr(), Self::layout()) }
    }
}

/// The pipeline: this thread reads the generator's stdout into a few recycled aligned
/// buffers; one worker counts lines and hashes, another compresses and writes, both on the
/// same buffer (shared, not copied). Uncompressed data is written with `O_DIRECT` when the
/// filesystem allows it (`direct`): no copy into the page cache, which on virtual machines is
/// often slower than the disk itself. Memory stays at a few MiB whatever the dataset size.
pub(super) fn stream(
    mut stdout: std::process::ChildStdout,
    file: File,
    direct: Option<File>,
    compression: Compression,
    counter: RowCounter,
    progress: &dyn Progress,
) -> Result<StreamResult> {
    use std::os::unix::fs::FileExt;
    use std::sync::Arc;
    enlarge_pipe(&stdout);
    let direct = direct.filter(|_| compression == Compression::None);
    let (hash_tx, hash_rx) = mpsc::sync_channel::<Arc<AlignedBuf>>(IN_FLIGHT);
    let (write_tx, write_rx) = mpsc::sync_channel::<Arc<AlignedBuf>>(IN_FLIGHT);
    let (free_tx, free_rx) = mpsc::sync_channel::<AlignedBuf>(IN_FLIGHT + 2);
    for _ in 0..IN_FLIGHT {
        free_tx.send(AlignedBuf::new()).expect("fresh channel");
    }
    // The last stage done with a buffer hands it back to the reader.
    let recycle = |buf: Arc<AlignedBuf>, free: &mpsc::SyncSender<AlignedBuf>| {
        if let Some(v) = Arc::into_inner(buf) {
            let _ = free.send(v);
        }
    };
    std::thread::scope(|scope| {
        let free_h = free_tx.clone();
        let hasher = scope.spawn(move || {
            let mut hash = Sha256::new();
            let mut counter = counter;
            let mut bytes = 0u64;
            let mut tail = Vec::new();
            for buf in hash_rx {
                let data = buf.data();
                let n = counter.feed(data);
                hash.update(data);
                bytes += data.len() as u64;
                progress.inc(n);
                progress.set_message(crate::diskspace::human(bytes));
                let keep = data.len().min(512);
                tail.clear();
                tail.extend_from_slice(&data[data.len() - keep..]);
                recycle(buf, &free_h);
            }
            (counter, hash.finish_hex(), bytes, tail)
        });
        let free_w = free_tx;
        let writer = scope.spawn(move || -> io::Result<Option<(String, u64)>> {
            let mut offset = 0u64;
            let mut sink = match &direct {
                Some(_) => None,
                None => Some(Sink::new(file.try_clone()?, compression)),
            };
            let mut failed = None;
            for buf in write_rx {
                // After an error keep draining, so the reader never blocks on a full channel.
                if failed.is_none() {
                    let data = buf.data();
                    let r = match (&direct, sink.as_mut()) {
                        (Some(d), _) => {
                            // Only the last buffer can be short: its unaligned tail goes
                            // through the page cache.
                            let aligned = data.len() / ALIGN * ALIGN;
                            d.write_all_at(&data[..aligned], offset).and_then(|_| {
                                file.write_all_at(&data[aligned..], offset + aligned as u64)
                            })
                        }
                        (None, Some(s)) => s.write_all(data),
                        (None, None) => unreachable!("a sink exists without direct I/O"),
                    };
                    offset += data.len() as u64;
                    if let Err(e) = r {
                        failed = Some(e);
                    }
                }
                recycle(buf, &free_w);
            }
            if let Some(e) = failed {
                return Err(e);
            }
            match sink {
                Some(s) => s.finish(),
                None => {
                    file.sync_all()?;
                    Ok(None)
                }
            }
        });
        let read_result = (|| -> Result<()> {
            loop {
                crate::interrupt::check()?;
                let Ok(mut buf) = free_rx.recv() else {
                    return Ok(());
                };
                let mut filled = 0;
                // Fill the buffer so the workers get big, aligned chunks.
                {
                    let space = buf.space();
                    while filled < CHUNK {
                        match stdout.read(&mut space[filled..]) {
                            Ok(0) => break,
                            Ok(n) => filled += n,
                            Err(e) if e.kind() == io::ErrorKind::Interrupted => {
                                crate::interrupt::check()?;
                            }
                            Err(e) => {
                                return Err(Error::failed(format!(
                                    "read the generator output: {e}"
                                )))
                            }
                        }
                    }
                }
                if filled == 0 {
                    return Ok(());
                }
                buf.len = filled;
                let buf = Arc::new(buf);
                if hash_tx.send(Arc::clone(&buf)).is_err() || write_tx.send(buf).is_err() {
                    return Ok(());
                }
                if filled < CHUNK {
                    return Ok(()); // end of stream
                }
            }
        })();
        drop(hash_tx);
        drop(write_tx);
        let (counter, sha256, bytes, tail) = hasher
            .join()
            .map_err(|_| Error::failed("the hashing thread panicked"))?;
        let stored = writer
            .join()
            .map_err(|_| Error::failed("the data writer thread panicked"))?;
        read_result?;
        let stored = stored.map_err(|e| Error::failed(format!("write the dataset: {e}")))?;
        Ok(StreamResult {
            rows: counter.rows(),
            lines: counter.lines,
            sha256,
            bytes,
            stored,
            tail,
            tables: counter.table_rows(),
        })
    })
}

/// Opens `path` a second time for direct I/O, when the filesystem supports it.
pub(super) fn open_direct(path: &Path) -> Option<File> {
    #[cfg(target_os = "linux")]
    {
        use std::os::unix::fs::OpenOptionsExt;
        fs::OpenOptions::new()
            .write(true)
            .custom_flags(libc::O_DIRECT)
            .open(path)
            .ok()
    }
    #[cfg(not(target_os = "linux"))]
    {
        let _ = path;
        None
    }
}

/// Asks for a 1 MiB pipe (the default is 64 KiB) so the generator and the reader wake each
/// other 16 times less often. Best effort: the limit may be lower.
fn enlarge_pipe(stdout: &std::process::ChildStdout) {
    #[cfg(target_os = "linux")]
    {
        use std::os::fd::AsRawFd;
        // SAFETY: F_SETPIPE_SZ on a pipe fd we own; failure leaves the pipe as it was.
        unsafe {
            libc::fcntl(
                stdout.as_raw_fd(),
                libc::F_SETPIPE_SZ,
                (1 << 20) as libc::c_int,
            );
        }
    }
    #[cfg(not(target_os = "linux"))]
    let _ = stdout;
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::dataset::RowLayout;
    use std::process::{Command, Stdio};

    /// Both write paths (page cache and `O_DIRECT` with an unaligned tail) store exactly the
    /// generator's bytes, with the right digest and row count.
    #[test]
    fn stream_paths_store_the_exact_bytes() {
        let dir = tempfile::tempdir().unwrap();
        // 3 MiB + a bit: several full buffers and an unaligned tail.
        let line = "cpu,hostname=host_0 usage_user=1i 1686441600000000000\n";
        let reps = (3 * CHUNK + 777) / line.len() + 1;
        let expected: Vec<u8> = line.repeat(reps).into_bytes();
        let script = format!("yes '{}' | head -n {reps}", line.trim_end());
        for (i, use_direct) in [false, true].into_iter().enumerate() {
            let path = dir.path().join(format!("out{i}"));
            let file = fs::OpenOptions::new()
                .read(true)
                .write(true)
                .create_new(true)
                .open(&path)
                .unwrap();
            let direct = if use_direct { open_direct(&path) } else { None };
            let mut child = Command::new("sh")
                .args(["-c", &script])
                .stdout(Stdio::piped())
                .spawn()
                .unwrap();
            let out = child.stdout.take().unwrap();
            let r = stream(
                out,
                file,
                direct,
                Compression::None,
                // One row a line (line protocol).
                RowCounter::new(RowLayout {
                    header_lines: 0,
                    lines_per_row: 1,
                    row_line: super::super::rows::RowLine::Every,
                }),
                &crate::output::NoProgress,
            )
            .unwrap();
            assert!(child.wait().unwrap().success());
            assert_eq!(r.rows, reps as u64);
            assert_eq!(r.bytes, expected.len() as u64);
            assert_eq!(r.sha256, crate::hash::sha256_hex(&expected));
            assert!(r.stored.is_none());
            assert_eq!(fs::read(&path).unwrap(), expected, "direct: {use_direct}");
        }
    }
}
