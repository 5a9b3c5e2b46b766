//! xz (LZMA2) streams: the one place that names the xz crate, so a swap (for example to the
//! maintained fork `liblzma`, same API) is this file only.

use std::io::{Read, Write};

/// An xz encoder writing into `W`; `finish()` ends the stream and returns `W`.
pub type Encoder<W> = xz2::write::XzEncoder<W>;

/// An encoder at `level` (0-9).
pub fn encoder<W: Write>(w: W, level: u32) -> Encoder<W> {
    xz2::write::XzEncoder::new(w, level)
}

/// A decoder of every concatenated xz stream in `r` (what `xz` itself accepts).
pub fn decoder<R: Read>(r: R) -> impl Read {
    xz2::read::XzDecoder::new_multi_decoder(r)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trip_and_concatenated_streams() {
        let pack = |b: &[u8]| {
            let mut e = encoder(Vec::new(), 1);
            e.write_all(b).unwrap();
            e.finish().unwrap()
        };
        let mut two = pack(b"hello ");
        two.extend(pack(b"world"));
        let mut out = String::new();
        decoder(two.as_slice()).read_to_string(&mut out).unwrap();
        assert_eq!(out, "hello world");
    }
}
