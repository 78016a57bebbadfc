//! Stem-node hashing (spec section 6): the 8-level subtree over a stem's 256
//! value slots, where two zero children give zero, and the stem hash
//! `sha256(stem || 0x00 || subtree_root)`.
//!
//! [`subtree_root`] and [`stem_hash`] handle one stem; [`stem_hashes`] gives
//! the same hashes for many stems at once, interleaving their independent
//! hash chains.

use alloy_primitives::B256;

mod batch;

pub use batch::{stem_hashes, StemLeaves};

use crate::hash::{hash32, hash64, hash_pair, Hash, ZERO_HASH};
use crate::key::Stem;

/// Values per stem.
pub const STEM_WIDTH: usize = 256;

/// The root of a stem's value subtree from its present values, given as
/// `(sub_index, value)` in strictly ascending sub-index order.
///
/// Costs one hash per present value plus one per non-zero pair on the way up
/// (at most 511 for a full stem); absent slots cost nothing.
pub fn subtree_root<'a>(present: impl IntoIterator<Item = (u8, &'a B256)>) -> Hash {
    // Level entries as (position at this level, hash), ascending by position.
    let mut level: [(u16, Hash); STEM_WIDTH] = [(0, ZERO_HASH); STEM_WIDTH];
    let mut len = 0usize;
    for (sub_index, value) in present {
        debug_assert!(
            len == 0 || level[len - 1].0 < u16::from(sub_index),
            "not ascending"
        );
        level[len] = (u16::from(sub_index), hash32(&value.0));
        len += 1;
    }
    for _ in 0..8 {
        let mut read = 0usize;
        let mut write = 0usize;
        while read < len {
            let (position, hash) = level[read];
            let (left, right, consumed) = if position % 2 == 0 {
                if read + 1 < len && level[read + 1].0 == position + 1 {
                    (hash, level[read + 1].1, 2)
                } else {
                    (hash, ZERO_HASH, 1)
                }
            } else {
                (ZERO_HASH, hash, 1)
            };
            read += consumed;
            // Zero rule: a pair of zero children is zero (kept out of the list).
            if left != ZERO_HASH || right != ZERO_HASH {
                level[write] = (position / 2, hash_pair(&left, &right));
                write += 1;
            }
        }
        len = write;
    }
    if len == 0 {
        ZERO_HASH
    } else {
        level[0].1
    }
}

/// The hash of a stem node: `sha256(stem || 0x00 || subtree_root)`.
#[inline]
pub fn stem_hash(stem: &Stem, subtree_root: &Hash) -> Hash {
    let mut message = [0u8; 64];
    message[..31].copy_from_slice(&stem.0);
    message[32..].copy_from_slice(subtree_root);
    hash64(&message)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::hash::sha256;

    /// The spec's pseudo-code, literally: all 256 slots, 8 levels.
    fn dense_subtree_root(values: &[Option<B256>; STEM_WIDTH]) -> Hash {
        let mut level: Vec<Hash> = values
            .iter()
            .map(|v| v.map_or(ZERO_HASH, |v| sha256(v.as_slice())))
            .collect();
        while level.len() > 1 {
            level = level
                .chunks(2)
                .map(|pair| {
                    if pair[0] == ZERO_HASH && pair[1] == ZERO_HASH {
                        ZERO_HASH
                    } else {
                        sha256(&[pair[0], pair[1]].concat())
                    }
                })
                .collect();
        }
        level[0]
    }

    #[test]
    fn sparse_matches_dense_for_assorted_patterns() {
        let patterns: [&[u8]; 6] = [
            &[],
            &[0],
            &[255],
            &[0, 1],
            &[1, 2, 3, 128, 200, 255],
            &[7, 8, 64, 65, 66, 67],
        ];
        for pattern in patterns {
            let mut dense = [None; STEM_WIDTH];
            let mut sparse = Vec::new();
            for &i in pattern {
                let v = B256::repeat_byte(i.wrapping_add(1));
                dense[usize::from(i)] = Some(v);
                sparse.push((i, v));
            }
            let got = subtree_root(sparse.iter().map(|(i, v)| (*i, v)));
            assert_eq!(got, dense_subtree_root(&dense), "pattern {pattern:?}");
        }
        let full: Vec<(u8, B256)> = (0..=255u8).map(|i| (i, B256::repeat_byte(i))).collect();
        let mut dense = [None; STEM_WIDTH];
        for (i, v) in &full {
            dense[usize::from(*i)] = Some(*v);
        }
        assert_eq!(
            subtree_root(full.iter().map(|(i, v)| (*i, v))),
            dense_subtree_root(&dense)
        );
    }
}
