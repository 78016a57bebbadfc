//! Reverse diffs on disk, so that the latest persisted blocks can be
//! reverted after a restart (docs/file-format.md, "Revert segment").
//!
//! The store keeps the reverse diffs of the last `revert_depth` persisted
//! blocks (its revert window) in memory, as layers. Each checkpoint writes
//! the whole window as one **segment** (for every layer: its sequence
//! number, its roots before and after, and the previous value of every key
//! it touched), copy-on-write like buckets and pages, and the meta record
//! references it; open loads it back into layers. So the window is exactly
//! as durable as the checkpoint, and a revert never reads the disk.
//!
//! ```text
//! off  len  field
//! 0    4    CRC-32C of bytes [4, encoded length)
//! 4    1    tag 0xb3
//! 5    1    format version (2)
//! 6    2    flags: bit 0 set when entries carry owners (a database
//!           with a flat index), every other bit zero
//! 8    4    encoded length
//! 12   4    layer count
//! 16   ...  layers, ascending by sequence number:
//!             8   sequence number
//!             32  root before
//!             32  root after
//!             4   entry count
//!             entries: 32 key, 20 owner (if flagged), 1 present (0/1),
//!             32 value if present
//! ```

use alloy_primitives::map::HashMap;

use alloy_primitives::{Address, B256};
use ubt_spec::hash::Hash;

use crate::error::{Result, StoreError, Structure};
use crate::format::{checksum, Reader, FORMAT_VERSION, FORMAT_VERSION_BYTE};

/// Tag byte of a revert segment.
pub const TAG_SEGMENT: u8 = 0xb3;
const HEADER_BYTES: usize = 16;
/// Largest segment: what [`decode_segment`] accepts, and so what the store
/// writes (it leaves the oldest blocks out of a window that would not
/// fit; their length field is a `u32`).
pub const SEGMENT_BYTES_MAX: usize = 1 << 30;

/// Flag: entries carry owners.
const FLAG_OWNERS: u16 = 1;

/// Bytes of the segment of `diffs`.
pub fn segment_len(diffs: &[ReverseDiff]) -> usize {
    HEADER_BYTES + diffs.iter().map(diff_len).sum::<usize>()
}

/// Bytes one layer's reverse diff adds to a segment.
pub fn diff_len(diff: &ReverseDiff) -> usize {
    let owner = if diff.owners.is_empty() { 0 } else { 20 };
    76 + diff
        .old
        .iter()
        .map(|(_, value)| owner + if value.is_some() { 65 } else { 33 })
        .sum::<usize>()
}

/// A layer's reverse diff.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ReverseDiff {
    /// Layer sequence number.
    pub seq: u64,
    /// Root before the layer (what reverting it restores).
    pub root_before: Hash,
    /// Root after the layer.
    pub root: Hash,
    /// Every key the layer touched, with its value before the layer.
    pub old: Vec<(B256, Option<B256>)>,
    /// The account owning each key of `old`, parallel to it (a database
    /// with a flat index), or empty.
    pub owners: Vec<Address>,
}

fn header(tag: u8, flags: u16, count: usize) -> Vec<u8> {
    let mut out = Vec::new();
    out.extend_from_slice(&[0u8; 4]);
    out.push(tag);
    out.push(FORMAT_VERSION_BYTE);
    out.extend_from_slice(&flags.to_le_bytes());
    out.extend_from_slice(&[0u8; 4]); // length, patched
    out.extend_from_slice(&u32_field(count));
    out
}

/// A count or length inside a segment as its 4-byte field: a segment is at
/// most [`SEGMENT_BYTES_MAX`] (1 GiB, kept by the caller), so it fits.
fn u32_field(n: usize) -> [u8; 4] {
    debug_assert!(n <= SEGMENT_BYTES_MAX);
    #[allow(clippy::cast_possible_truncation)]
    let n = n as u32;
    n.to_le_bytes()
}

fn seal(mut out: Vec<u8>) -> Vec<u8> {
    let len = u32_field(out.len());
    out[8..12].copy_from_slice(&len);
    let crc = checksum(&out[4..]);
    out[..4].copy_from_slice(&crc.to_le_bytes());
    out
}

/// Checks the header and checksum; returns the count, the flags and a
/// reader over the body.
fn open<'a>(
    bytes: &'a [u8],
    tag: u8,
    expected_crc: u32,
    location: &str,
) -> Result<(usize, u16, Reader<'a>)> {
    let bad = |detail: String| StoreError::corrupted(Structure::Revert, location, detail);
    let mut r = Reader::new(bytes);
    let short = || bad("shorter than its header".into());
    let stored = r.u32().ok_or_else(short)?;
    let found_tag = r.u8().ok_or_else(short)?;
    let version = r.u8().ok_or_else(short)?;
    let flags = r.u16().ok_or_else(short)?;
    let len = r.u32().ok_or_else(short)? as usize;
    let count = r.u32().ok_or_else(short)? as usize;
    if len < HEADER_BYTES || len > bytes.len() || len > SEGMENT_BYTES_MAX {
        return Err(bad(format!("encoded length {len}")));
    }
    let crc = checksum(&bytes[4..len]);
    if crc != stored || crc != expected_crc {
        return Err(bad("checksum mismatch".into()));
    }
    if found_tag != tag || u16::from(version) != FORMAT_VERSION || flags & !FLAG_OWNERS != 0 {
        return Err(bad(format!(
            "tag {found_tag:#04x}, version {version}, flags {flags:#x}"
        )));
    }
    Ok((count, flags, Reader::new(&bytes[HEADER_BYTES..len])))
}

/// Encodes a segment of reverse diffs (ascending sequence numbers); the
/// caller keeps it within [`SEGMENT_BYTES_MAX`] ([`segment_len`]).
pub fn encode_segment(diffs: &[ReverseDiff]) -> Vec<u8> {
    debug_assert!(segment_len(diffs) <= SEGMENT_BYTES_MAX);
    let owned = diffs.iter().any(|d| !d.owners.is_empty());
    debug_assert!(!owned || diffs.iter().all(|d| d.owners.len() == d.old.len()));
    let mut out = header(
        TAG_SEGMENT,
        if owned { FLAG_OWNERS } else { 0 },
        diffs.len(),
    );
    for diff in diffs {
        out.extend_from_slice(&diff.seq.to_le_bytes());
        out.extend_from_slice(&diff.root_before);
        out.extend_from_slice(&diff.root);
        out.extend_from_slice(&u32_field(diff.old.len()));
        for (index, (key, value)) in diff.old.iter().enumerate() {
            out.extend_from_slice(key.as_slice());
            if owned {
                out.extend_from_slice(diff.owners.get(index).unwrap_or(&Address::ZERO).as_slice());
            }
            match value {
                Some(value) => {
                    out.push(1);
                    out.extend_from_slice(value.as_slice());
                }
                None => out.push(0),
            }
        }
    }
    seal(out)
}

/// Decodes a segment.
pub fn decode_segment(bytes: &[u8], expected_crc: u32, location: &str) -> Result<Vec<ReverseDiff>> {
    let bad = |detail: &str| StoreError::corrupted(Structure::Revert, location, detail);
    let (count, flags, mut r) = open(bytes, TAG_SEGMENT, expected_crc, location)?;
    let owned = flags & FLAG_OWNERS != 0;
    let mut diffs = Vec::with_capacity(count.min(bytes.len() / 76));
    for _ in 0..count {
        let seq = r.u64().ok_or_else(|| bad("truncated layer"))?;
        let root_before: Hash = r.array().ok_or_else(|| bad("truncated layer"))?;
        let root: Hash = r.array().ok_or_else(|| bad("truncated layer"))?;
        let entries = r.u32().ok_or_else(|| bad("truncated layer"))? as usize;
        let mut old = Vec::with_capacity(entries.min(r.remaining() / 33));
        let mut seen = HashMap::with_capacity(entries.min(r.remaining() / 33));
        let mut owners = Vec::new();
        for _ in 0..entries {
            let key = B256::from(r.array::<32>().ok_or_else(|| bad("truncated entry"))?);
            if owned {
                owners.push(Address::from(
                    r.array::<20>().ok_or_else(|| bad("truncated entry"))?,
                ));
            }
            let value = match r.u8() {
                Some(0) => None,
                Some(1) => Some(B256::from(
                    r.array::<32>().ok_or_else(|| bad("truncated entry"))?,
                )),
                _ => return Err(bad("entry presence byte")),
            };
            if seen.insert(key, ()).is_some() {
                return Err(bad("a key listed twice in one layer"));
            }
            old.push((key, value));
        }
        if diffs.last().is_some_and(|d: &ReverseDiff| d.seq >= seq) {
            return Err(bad("layers not in ascending order"));
        }
        diffs.push(ReverseDiff {
            seq,
            root_before,
            root,
            old,
            owners,
        });
    }
    if r.remaining() != 0 {
        return Err(bad("bytes after the last layer"));
    }
    Ok(diffs)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn segment_len_is_the_encoded_length() {
        let diffs = vec![
            ReverseDiff {
                seq: 1,
                root_before: [1; 32],
                root: [2; 32],
                old: vec![
                    (B256::repeat_byte(1), None),
                    (B256::repeat_byte(2), Some(B256::ZERO)),
                ],
                owners: vec![],
            },
            ReverseDiff {
                seq: 2,
                root_before: [2; 32],
                root: [3; 32],
                old: vec![],
                owners: vec![],
            },
        ];
        assert_eq!(segment_len(&diffs), encode_segment(&diffs).len());
        assert_eq!(segment_len(&[]), encode_segment(&[]).len());
    }

    #[test]
    fn round_trips_and_detects_every_flip() {
        let diffs = vec![
            ReverseDiff {
                seq: 5,
                root_before: [1; 32],
                root: [2; 32],
                old: vec![
                    (B256::repeat_byte(3), Some(B256::repeat_byte(4))),
                    (B256::repeat_byte(5), None),
                ],
                owners: vec![],
            },
            ReverseDiff {
                seq: 6,
                root_before: [2; 32],
                root: [7; 32],
                old: vec![],
                owners: vec![],
            },
        ];
        let mut owned = diffs.clone();
        owned[0].owners = vec![Address::repeat_byte(8), Address::repeat_byte(9)];
        for diffs in [diffs, owned] {
            let bytes = encode_segment(&diffs);
            assert_eq!(bytes.len(), segment_len(&diffs));
            let crc = u32::from_le_bytes(bytes[..4].try_into().unwrap());
            assert_eq!(decode_segment(&bytes, crc, "t").unwrap(), diffs);
            for at in 0..bytes.len() {
                let mut bad = bytes.clone();
                bad[at] ^= 0x20;
                assert!(decode_segment(&bad, crc, "t").is_err(), "flip at {at}");
            }
        }
    }
}
