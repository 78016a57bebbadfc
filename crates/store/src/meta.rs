//! The meta record: which checkpoint is current. Two copies live in the two
//! 4 KiB blocks of `ubt.meta`; a checkpoint overwrites the older one, so a
//! torn or lost meta write leaves the other copy (the previous checkpoint)
//! intact. Opening picks the valid copy with the highest generation.
//!
//! ```text
//! off  len   field (little-endian), slot = one 4 KiB block
//! 0    4     CRC-32C of bytes [4, 4096)
//! 4    8     magic "UBT-META"
//! 12   2     format version (1)
//! 14   1     group depth G
//! 15   1     slot index (generation % 2)
//! 16   8     generation (checkpoints since creation; also the WAL epoch)
//! 24   8     commit sequence number included in this checkpoint
//! 32   8     data file length in blocks
//! 40   8     bucket count
//! 48   8     stem count
//! 56   8     leaf (value) count
//! 64   ...   root node entry (upper-trie page entry format)
//! ...        zeros up to 4096
//! ```

use crate::error::{Result, StoreError, Structure};
use crate::format::{checksum, Reader, BLOCK_BYTES, FORMAT_VERSION};
use crate::upper::page::Entry;

/// Bytes of one meta slot (a whole block, so the two copies never share one).
pub const META_SLOT_BYTES: usize = BLOCK_BYTES;
const MAGIC: &[u8; 8] = b"UBT-META";

/// The contents of a meta slot.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Meta {
    /// Checkpoints since creation; the WAL records after this checkpoint
    /// carry it as their epoch.
    pub generation: u64,
    /// Group depth of the upper-trie pages.
    pub group_depth: u8,
    /// Last commit whose writes the checkpoint holds.
    pub commit_seq: u64,
    /// Data file length in blocks.
    pub data_blocks: u64,
    /// Buckets in the upper trie.
    pub bucket_count: u64,
    /// Stems stored.
    pub stem_count: u64,
    /// Values stored.
    pub leaf_count: u64,
    /// The root node of the upper trie.
    pub root: Entry,
}

impl Meta {
    /// Encodes into a full slot.
    pub fn encode(&self) -> Vec<u8> {
        let mut out = Vec::with_capacity(META_SLOT_BYTES);
        out.extend_from_slice(&[0u8; 4]);
        out.extend_from_slice(MAGIC);
        out.extend_from_slice(&FORMAT_VERSION.to_le_bytes());
        out.push(self.group_depth);
        out.push((self.generation % 2) as u8);
        for field in [
            self.generation,
            self.commit_seq,
            self.data_blocks,
            self.bucket_count,
            self.stem_count,
            self.leaf_count,
        ] {
            out.extend_from_slice(&field.to_le_bytes());
        }
        self.root.encode_into(&mut out);
        out.resize(META_SLOT_BYTES, 0);
        let crc = checksum(&out[4..]);
        out[..4].copy_from_slice(&crc.to_le_bytes());
        out
    }

    /// Decodes slot `slot` (0 or 1).
    pub fn decode(bytes: &[u8], slot: usize) -> Result<Meta> {
        let location = format!("ubt.meta slot {slot}");
        let bad = |detail: String| StoreError::corrupted(Structure::Meta, location.clone(), detail);
        if bytes.len() != META_SLOT_BYTES {
            return Err(bad(format!(
                "{} bytes, expected {META_SLOT_BYTES}",
                bytes.len()
            )));
        }
        let mut r = Reader::new(bytes);
        let short = || bad("truncated".into());
        let stored = r.u32().ok_or_else(short)?;
        if checksum(&bytes[4..]) != stored {
            return Err(bad("checksum mismatch".into()));
        }
        if r.take(8).ok_or_else(short)? != MAGIC {
            return Err(bad("wrong magic".into()));
        }
        let version = r.u16().ok_or_else(short)?;
        if version != FORMAT_VERSION {
            return Err(StoreError::UnsupportedVersion {
                found: version,
                supported: FORMAT_VERSION,
            });
        }
        let group_depth = r.u8().ok_or_else(short)?;
        let slot_index = r.u8().ok_or_else(short)?;
        let mut fields = [0u64; 6];
        for field in &mut fields {
            *field = r.u64().ok_or_else(short)?;
        }
        let [generation, commit_seq, data_blocks, bucket_count, stem_count, leaf_count] = fields;
        if !(1..=8).contains(&group_depth) {
            return Err(bad(format!("group depth {group_depth}")));
        }
        if usize::from(slot_index) != slot || generation % 2 != slot as u64 {
            return Err(bad(format!(
                "generation {generation} does not belong in slot {slot}"
            )));
        }
        let root = Entry::decode(&mut r).map_err(|e| bad(format!("root entry: {e}")))?;
        if bytes[r.position()..].iter().any(|b| *b != 0) {
            return Err(bad("non-zero bytes after the root entry".into()));
        }
        Ok(Meta {
            generation,
            group_depth,
            commit_seq,
            data_blocks,
            bucket_count,
            stem_count,
            leaf_count,
            root,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::format::Extent;
    use crate::summary::{Occupancy, Summary};

    fn sample(generation: u64) -> Meta {
        Meta {
            generation,
            group_depth: 6,
            commit_seq: 41,
            data_blocks: 1000,
            bucket_count: 12,
            stem_count: 400,
            leaf_count: 900,
            root: Entry {
                summary: Summary {
                    occupancy: Occupancy::Many,
                    hash: [9; 32],
                },
                leaf: false,
                extent: Some(Extent {
                    offset: 5 * 4096 + 64,
                    len: 300,
                    crc: 77,
                }),
            },
        }
    }

    #[test]
    fn round_trip_and_every_bit_flip_detected() {
        let meta = sample(3);
        let bytes = meta.encode();
        assert_eq!(Meta::decode(&bytes, 1).unwrap(), meta);
        assert!(
            Meta::decode(&bytes, 0).is_err(),
            "generation 3 belongs in slot 1"
        );
        for at in 0..bytes.len() {
            let mut bad = bytes.clone();
            bad[at] ^= 1 << (at % 8);
            assert!(
                Meta::decode(&bad, 1).is_err(),
                "flip at byte {at} undetected"
            );
        }
    }
}
