//! Group blobs: one blob per internal node at a depth that is a multiple of
//! the group depth G, listing the frontier of the G levels below it:
//!
//! `0x02 | G | bitmap (max(1, 2^G / 8) bytes) | 3-bit depth codes | hash x K`
//!
//! An entry at relative depth r with relative path bits `c` sets bitmap bit
//! `c << (G - r)` (MSB-first), appends depth code `r - 1`, and stores the
//! entry node's hash. Entries are in ascending position order.

use super::{BlobError, GROUP_DEPTH_MAX, GROUP_DEPTH_MIN};
use crate::hash::{hash_pair, Hash, ZERO_HASH};

/// Type byte of a group blob.
pub const GROUP_BLOB_TYPE: u8 = 0x02;

/// A frontier entry of a group.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct GroupEntry {
    /// Depth below the group root, 1..=G.
    pub depth: u8,
    /// The entry's `depth` path bits below the group root, as an integer.
    pub bits: u8,
    /// The entry node's hash.
    pub hash: Hash,
}

impl GroupEntry {
    /// The bottom-level position of the entry's leftmost descendant.
    pub fn position(&self, group_depth: u8) -> usize {
        usize::from(self.bits) << (group_depth - self.depth)
    }
}

/// A decoded group blob.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct GroupBlob {
    /// The group depth G (1..=8).
    pub group_depth: u8,
    /// Frontier entries in ascending position order.
    pub entries: Vec<GroupEntry>,
}

fn bitmap_bytes(group_depth: u8) -> usize {
    ((1usize << group_depth) / 8).max(1)
}

impl GroupBlob {
    /// Encodes the blob.
    pub fn encode(&self) -> Vec<u8> {
        let g = self.group_depth;
        debug_assert!((GROUP_DEPTH_MIN..=GROUP_DEPTH_MAX).contains(&g));
        let count = self.entries.len();
        let mut blob =
            Vec::with_capacity(2 + bitmap_bytes(g) + (3 * count).div_ceil(8) + 32 * count);
        blob.extend([GROUP_BLOB_TYPE, g]);
        let mut bitmap = vec![0u8; bitmap_bytes(g)];
        let mut codes = vec![0u8; (3 * count).div_ceil(8)];
        for (index, entry) in self.entries.iter().enumerate() {
            debug_assert!((1..=g).contains(&entry.depth));
            let position = entry.position(g);
            bitmap[position / 8] |= 0x80 >> (position % 8);
            let code = entry.depth - 1;
            for bit in 0..3 {
                if code & (4 >> bit) != 0 {
                    let at = 3 * index + bit;
                    codes[at / 8] |= 0x80 >> (at % 8);
                }
            }
        }
        blob.extend(bitmap);
        blob.extend(codes);
        for entry in &self.entries {
            blob.extend_from_slice(&entry.hash);
        }
        blob
    }

    /// Decodes and validates a group blob as geth's decoder does.
    pub fn decode(blob: &[u8]) -> Result<Self, BlobError> {
        let too_short = |expected| BlobError::Length {
            kind: "group",
            expected,
            actual: blob.len(),
        };
        let (&kind, rest) = blob.split_first().ok_or(too_short(2))?;
        if kind != GROUP_BLOB_TYPE {
            return Err(BlobError::UnknownType(kind));
        }
        let (&g, rest) = rest.split_first().ok_or(too_short(2))?;
        if !(GROUP_DEPTH_MIN..=GROUP_DEPTH_MAX).contains(&g) {
            return Err(BlobError::GroupDepth(g));
        }
        let bitmap = rest
            .get(..bitmap_bytes(g))
            .ok_or(too_short(2 + bitmap_bytes(g)))?;
        let slots = 1usize << g;
        if slots < 8 && bitmap[0] & (0xffu8 >> slots) != 0 {
            return Err(BlobError::Padding("bitmap"));
        }
        let positions: Vec<usize> = (0..slots)
            .filter(|p| bitmap[p / 8] & (0x80 >> (p % 8)) != 0)
            .collect();
        let count = positions.len();
        let code_bytes = (3 * count).div_ceil(8);
        let expected = 2 + bitmap.len() + code_bytes + 32 * count;
        if blob.len() != expected {
            return Err(BlobError::Length {
                kind: "group",
                expected,
                actual: blob.len(),
            });
        }
        let codes = &rest[bitmap.len()..bitmap.len() + code_bytes];
        let used_bits = 3 * count;
        if !used_bits.is_multiple_of(8)
            && codes
                .last()
                .is_some_and(|b| b & (0xffu8 >> (used_bits % 8)) != 0)
        {
            return Err(BlobError::Padding("depth codes"));
        }
        let hashes = &rest[bitmap.len() + code_bytes..];
        let mut entries = Vec::with_capacity(count);
        let mut covered_until = 0usize;
        for (index, (&position, hash)) in positions.iter().zip(hashes.chunks_exact(32)).enumerate()
        {
            let code = (0..3).fold(0u8, |acc, bit| {
                let at = 3 * index + bit;
                (acc << 1) | ((codes[at / 8] >> (7 - at % 8)) & 1)
            });
            let depth = code + 1;
            if depth > g {
                return Err(BlobError::EntryDepth {
                    depth,
                    group_depth: g,
                });
            }
            let span = 1usize << (g - depth);
            if position % span != 0 {
                return Err(BlobError::Misaligned { position, depth });
            }
            if position < covered_until {
                return Err(BlobError::Overlap { position });
            }
            covered_until = position + span;
            let mut entry_hash = [0u8; 32];
            entry_hash.copy_from_slice(hash);
            #[allow(clippy::cast_possible_truncation)] // position < 2^g <= 256
            let bits = (position / span) as u8;
            entries.push(GroupEntry {
                depth,
                bits,
                hash: entry_hash,
            });
        }
        Ok(GroupBlob {
            group_depth: g,
            entries,
        })
    }

    /// The group root's hash, recomputed from the entries (internal nodes
    /// above them hash as `H(left || right)`, missing children are `0^32`).
    pub fn root_hash(&self) -> Hash {
        self.subtree_hash(0, 0, 1usize << self.group_depth)
    }

    /// Hash of the node at relative `depth` covering positions `start..start + span`.
    fn subtree_hash(&self, depth: u8, start: usize, span: usize) -> Hash {
        let g = self.group_depth;
        let inside = |e: &&GroupEntry| (start..start + span).contains(&e.position(g));
        let mut within = self.entries.iter().filter(inside);
        let Some(first) = within.next() else {
            return ZERO_HASH;
        };
        if first.depth == depth {
            return first.hash;
        }
        if depth >= g {
            return ZERO_HASH;
        }
        let half = span / 2;
        let left = self.subtree_hash(depth + 1, start, half);
        let right = self.subtree_hash(depth + 1, start + half, half);
        hash_pair(&left, &right)
    }
}
