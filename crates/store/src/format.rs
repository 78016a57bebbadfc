//! Shared pieces of the on-disk formats (docs/file-format.md): block size,
//! structure tags, the checksum, block references, and a bounds-checked
//! byte reader so that no decoder can panic on any input.

/// Bytes per block: the unit of allocation and of I/O in the data file.
pub const BLOCK_BYTES: usize = 4096;

/// The on-disk format version this build reads and writes.
pub const FORMAT_VERSION: u16 = 3;
/// [`FORMAT_VERSION`] as the one byte buckets, pages and revert segments
/// store.
pub const FORMAT_VERSION_BYTE: u8 = FORMAT_VERSION.to_le_bytes()[0];
const _: () = assert!(FORMAT_VERSION <= 0xff, "the version must fit its byte");

/// Tag byte of a bucket.
pub const TAG_BUCKET: u8 = 0xb1;
/// Tag byte of an upper-trie page.
pub const TAG_TRIE_PAGE: u8 = 0xb2;

/// CRC-32C (Castagnoli, hardware-accelerated where available).
#[inline]
pub fn checksum(bytes: &[u8]) -> u32 {
    crc32c::crc32c(bytes)
}

/// Where a bucket or page lives in the data file, and the checksum its
/// bytes must have. The parent of every structure stores its extent, so a
/// misdirected or lost write is caught even when the bytes found at the
/// location are self-consistent. Buckets start on a block boundary; pages
/// are packed, several to a block.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub struct Extent {
    /// Byte offset in the data file.
    pub offset: u64,
    /// Length in bytes (the structure's encoded length).
    pub len: u32,
    /// CRC-32C stored in (and over) the structure's encoded bytes.
    pub crc: u32,
}

/// Bytes of an encoded [`Extent`].
#[cfg(any(test, feature = "testing"))]
pub const EXTENT_BYTES: usize = 16;

impl Extent {
    /// An extent starting at the start of `block`. Every structure is
    /// bounded far below 4 GiB (buckets, pages, a revert segment of at most
    /// 1 GiB).
    pub fn at_block(block: u64, len: usize, crc: u32) -> Extent {
        debug_assert!(u32::try_from(len).is_ok(), "extent of {len} bytes");
        Extent {
            offset: block * BLOCK_BYTES as u64,
            len: u32::try_from(len).unwrap_or(u32::MAX),
            crc,
        }
    }

    /// Length in bytes.
    pub fn byte_len(&self) -> usize {
        self.len as usize
    }

    /// One past the last byte.
    pub fn end(&self) -> u64 {
        self.offset + u64::from(self.len)
    }

    /// The first block the extent touches.
    pub fn first_block(&self) -> u64 {
        self.offset / BLOCK_BYTES as u64
    }

    /// The blocks the extent touches, as a range.
    pub fn blocks(&self) -> std::ops::Range<u64> {
        self.first_block()..self.end().div_ceil(BLOCK_BYTES as u64)
    }

    /// Appends the 16-byte encoding.
    pub fn encode_into(&self, out: &mut Vec<u8>) {
        out.extend_from_slice(&self.offset.to_le_bytes());
        out.extend_from_slice(&self.len.to_le_bytes());
        out.extend_from_slice(&self.crc.to_le_bytes());
    }

    /// Reads an extent; `None` if out of bytes, empty, or past 2^62 bytes.
    pub fn decode(reader: &mut Reader<'_>) -> Option<Extent> {
        let offset = reader.u64()?;
        let len = reader.u32()?;
        let crc = reader.u32()?;
        (len > 0 && offset < 1 << 62).then_some(Extent { offset, len, crc })
    }
}

/// Number of whole blocks needed for `bytes` (an extent's length, so below
/// 4 GiB).
pub fn blocks_for(bytes: usize) -> u32 {
    #[allow(clippy::cast_possible_truncation)] // bytes / 4096 of a u32 length
    let blocks = bytes.div_ceil(BLOCK_BYTES) as u32;
    blocks
}

/// A cursor over bytes whose every read is bounds-checked.
#[derive(Clone, Debug)]
pub struct Reader<'a> {
    bytes: &'a [u8],
    at: usize,
}

impl<'a> Reader<'a> {
    /// A reader at the start of `bytes`.
    pub fn new(bytes: &'a [u8]) -> Self {
        Reader { bytes, at: 0 }
    }

    /// Bytes consumed so far.
    pub fn position(&self) -> usize {
        self.at
    }

    /// Bytes left.
    pub fn remaining(&self) -> usize {
        self.bytes.len() - self.at
    }

    /// The next `n` bytes.
    pub fn take(&mut self, n: usize) -> Option<&'a [u8]> {
        let end = self.at.checked_add(n)?;
        let out = self.bytes.get(self.at..end)?;
        self.at = end;
        Some(out)
    }

    /// The next `N` bytes as an array.
    pub fn array<const N: usize>(&mut self) -> Option<[u8; N]> {
        self.take(N).and_then(|s| s.try_into().ok())
    }

    /// One byte.
    pub fn u8(&mut self) -> Option<u8> {
        self.take(1).map(|s| s[0])
    }

    /// A little-endian u16.
    pub fn u16(&mut self) -> Option<u16> {
        self.array().map(u16::from_le_bytes)
    }

    /// A little-endian u32.
    pub fn u32(&mut self) -> Option<u32> {
        self.array().map(u32::from_le_bytes)
    }

    /// A little-endian u64.
    pub fn u64(&mut self) -> Option<u64> {
        self.array().map(u64::from_le_bytes)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reader_never_reads_past_the_end() {
        let bytes = [1u8, 2, 3];
        let mut r = Reader::new(&bytes);
        assert_eq!(r.u16(), Some(0x0201));
        assert_eq!(r.u16(), None);
        assert_eq!(r.u8(), Some(3));
        assert_eq!(r.take(usize::MAX), None);
    }

    #[test]
    fn extent_round_trip_and_rejects_empty_extents() {
        let r = Extent {
            offset: 77 * 4096 + 100,
            len: 5000,
            crc: 0xdead_beef,
        };
        assert_eq!(r.blocks(), 77..79);
        let mut out = Vec::new();
        r.encode_into(&mut out);
        assert_eq!(out.len(), EXTENT_BYTES);
        assert_eq!(Extent::decode(&mut Reader::new(&out)), Some(r));
        let mut empty = Vec::new();
        Extent { len: 0, ..r }.encode_into(&mut empty);
        assert_eq!(Extent::decode(&mut Reader::new(&empty)), None);
    }
}
