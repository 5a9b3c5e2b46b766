//! Archives built in memory from a described tree, including the unsafe variants a hostile or
//! broken release could contain (`../x`, `/etc/x`, links out of the tree, FIFOs).
//!
//! Entries are written in the order they were added, with fixed owners and mtimes, so the same
//! tree always gives the same bytes (and the same checksum).
//!
//! ```
//! use testbed::tarball::Tree;
//! let gz = Tree::new()
//!     .dir("go", 0o755)
//!     .file("go/bin/go", "#!/bin/sh\n", 0o755)
//!     .tar_gz();
//! assert_eq!(&gz[..2], &[0x1f, 0x8b]);
//! ```

use std::io::Write;

use tar::{EntryType, Header};

/// The fixed mtime of every entry (2023-11-14T22:13:20Z).
const MTIME: u64 = 1_700_000_000;

#[derive(Debug, Clone)]
enum Entry {
    File {
        path: String,
        bytes: Vec<u8>,
        mode: u32,
    },
    Dir {
        path: String,
        mode: u32,
    },
    Symlink {
        path: String,
        target: String,
    },
    Hardlink {
        path: String,
        target: String,
    },
    Fifo {
        path: String,
    },
    Raw {
        raw_path: String,
        bytes: Vec<u8>,
    },
}

/// A described file tree that renders to tar, tar.gz or tar.xz.
#[derive(Debug, Clone, Default)]
pub struct Tree {
    entries: Vec<Entry>,
}

impl Tree {
    pub fn new() -> Tree {
        Tree::default()
    }

    /// A regular file with permission bits `mode` (e.g. `0o755`).
    pub fn file(mut self, path: &str, bytes: impl Into<Vec<u8>>, mode: u32) -> Tree {
        self.entries.push(Entry::File {
            path: path.to_string(),
            bytes: bytes.into(),
            mode,
        });
        self
    }

    /// A directory entry (parents are not added implicitly: real archives list them, and tests
    /// of odd archives need to leave them out).
    pub fn dir(mut self, path: &str, mode: u32) -> Tree {
        self.entries.push(Entry::Dir {
            path: path.to_string(),
            mode,
        });
        self
    }

    /// A symbolic link at `path` whose target is `target`, verbatim (may be absolute or `..`).
    pub fn symlink(mut self, path: &str, target: &str) -> Tree {
        self.entries.push(Entry::Symlink {
            path: path.to_string(),
            target: target.to_string(),
        });
        self
    }

    /// A hard link at `path` to the archive member `target`, verbatim.
    pub fn hardlink(mut self, path: &str, target: &str) -> Tree {
        self.entries.push(Entry::Hardlink {
            path: path.to_string(),
            target: target.to_string(),
        });
        self
    }

    /// A named pipe.
    pub fn fifo(mut self, path: &str) -> Tree {
        self.entries.push(Entry::Fifo {
            path: path.to_string(),
        });
        self
    }

    /// A regular file (mode 0644) whose name is written verbatim into the header, bypassing the
    /// tar crate's checks: `../x`, `/etc/x`, `a/../../b`. At most 100 bytes.
    pub fn raw_path_file(mut self, raw_path: &str, bytes: impl Into<Vec<u8>>) -> Tree {
        self.entries.push(Entry::Raw {
            raw_path: raw_path.to_string(),
            bytes: bytes.into(),
        });
        self
    }

    /// The uncompressed tar (ustar/GNU headers; long names use GNU long-name entries).
    pub fn tar(&self) -> Vec<u8> {
        let mut b = tar::Builder::new(Vec::new());
        for e in &self.entries {
            match e {
                Entry::File { path, bytes, mode } => {
                    let mut h = header(EntryType::Regular, *mode, bytes.len() as u64);
                    b.append_data(&mut h, path, bytes.as_slice())
                        .expect("append file");
                }
                Entry::Dir { path, mode } => {
                    let mut h = header(EntryType::Directory, *mode, 0);
                    // Directory names end in `/`, as GNU tar writes them.
                    let name = if path.ends_with('/') {
                        path.clone()
                    } else {
                        format!("{path}/")
                    };
                    b.append_data(&mut h, name, std::io::empty())
                        .expect("append directory");
                }
                Entry::Symlink { path, target } => {
                    let mut h = header(EntryType::Symlink, 0o777, 0);
                    append_link(&mut b, &mut h, path, target);
                }
                Entry::Hardlink { path, target } => {
                    let mut h = header(EntryType::Link, 0o644, 0);
                    append_link(&mut b, &mut h, path, target);
                }
                Entry::Fifo { path } => {
                    let mut h = header(EntryType::Fifo, 0o644, 0);
                    b.append_data(&mut h, path, std::io::empty())
                        .expect("append fifo");
                }
                Entry::Raw { raw_path, bytes } => {
                    let mut h = header(EntryType::Regular, 0o644, bytes.len() as u64);
                    set_raw_name(&mut h, raw_path);
                    h.set_cksum();
                    b.append(&h, bytes.as_slice()).expect("append raw file");
                }
            }
        }
        b.into_inner().expect("finish tar")
    }

    /// The tar, gzip-compressed.
    pub fn tar_gz(&self) -> Vec<u8> {
        let mut e = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
        e.write_all(&self.tar()).expect("gzip");
        e.finish().expect("gzip")
    }

    /// The tar, xz-compressed.
    pub fn tar_xz(&self) -> Vec<u8> {
        let mut e = xz2::write::XzEncoder::new(Vec::new(), 1);
        e.write_all(&self.tar()).expect("xz");
        e.finish().expect("xz")
    }
}

fn header(kind: EntryType, mode: u32, size: u64) -> Header {
    let mut h = Header::new_gnu();
    h.set_entry_type(kind);
    h.set_mode(mode);
    h.set_size(size);
    h.set_mtime(MTIME);
    h.set_uid(0);
    h.set_gid(0);
    h
}

/// Link names are written verbatim: the point is to describe links that may be unsafe.
fn append_link(b: &mut tar::Builder<Vec<u8>>, h: &mut Header, path: &str, target: &str) {
    if target.len() <= 100 && path.len() <= 100 {
        set_raw_name(h, path);
        let old = h.as_old_mut();
        old.linkname = [0; 100];
        old.linkname[..target.len()].copy_from_slice(target.as_bytes());
        h.set_cksum();
        b.append(h, std::io::empty()).expect("append link");
    } else {
        b.append_link(h, path, target).expect("append long link");
    }
}

fn set_raw_name(h: &mut Header, raw: &str) {
    let bytes = raw.as_bytes();
    assert!(
        bytes.len() <= 100,
        "raw names are limited to 100 bytes: {raw}"
    );
    let old = h.as_old_mut();
    old.name = [0; 100];
    old.name[..bytes.len()].copy_from_slice(bytes);
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Read;

    fn listing(tar: &[u8]) -> Vec<(String, EntryType, u32, String, Vec<u8>)> {
        let mut ar = tar::Archive::new(tar);
        ar.entries()
            .unwrap()
            .map(|e| {
                let mut e = e.unwrap();
                let name = String::from_utf8_lossy(&e.path_bytes()).into_owned();
                let link = e
                    .link_name_bytes()
                    .map(|l| String::from_utf8_lossy(&l).into_owned())
                    .unwrap_or_default();
                let kind = e.header().entry_type();
                let mode = e.header().mode().unwrap();
                let mut body = Vec::new();
                e.read_to_end(&mut body).unwrap();
                (name, kind, mode, link, body)
            })
            .collect()
    }

    #[test]
    fn every_kind_round_trips_verbatim() {
        let long = format!("d/{}", "n".repeat(150));
        let t = Tree::new()
            .dir("d", 0o755)
            .file("d/x", "hi", 0o755)
            .file(&long, "long", 0o644)
            .symlink("d/l", "../../etc/passwd")
            .hardlink("d/h", "/etc/shadow")
            .fifo("d/p")
            .raw_path_file("../evil", "e")
            .raw_path_file("/abs", "a");
        let l = listing(&t.tar());
        assert_eq!(l.len(), 8);
        assert_eq!(l[0].0, "d/");
        assert_eq!(l[0].1, EntryType::Directory);
        assert_eq!(
            (l[1].0.as_str(), l[1].2, l[1].4.as_slice()),
            ("d/x", 0o755, &b"hi"[..])
        );
        assert_eq!(l[2].0, long);
        assert_eq!(
            (l[3].1, l[3].3.as_str()),
            (EntryType::Symlink, "../../etc/passwd")
        );
        assert_eq!((l[4].1, l[4].3.as_str()), (EntryType::Link, "/etc/shadow"));
        assert_eq!(l[5].1, EntryType::Fifo);
        assert_eq!((l[6].0.as_str(), l[6].4.as_slice()), ("../evil", &b"e"[..]));
        assert_eq!(l[7].0, "/abs");
    }

    #[test]
    fn compressed_forms_carry_the_same_tar_and_are_deterministic() {
        let t = Tree::new().file("a", "x", 0o644);
        let mut gz = Vec::new();
        flate2::read::GzDecoder::new(t.tar_gz().as_slice())
            .read_to_end(&mut gz)
            .unwrap();
        assert_eq!(gz, t.tar());
        let mut xz = Vec::new();
        xz2::read::XzDecoder::new(t.tar_xz().as_slice())
            .read_to_end(&mut xz)
            .unwrap();
        assert_eq!(xz, t.tar());
        assert_eq!(t.tar_gz(), t.clone().tar_gz());
    }
}
