//! What a subtree contributes to its parent: how many stems it holds (none,
//! one, or several) and its hash.
//!
//! The EIP-7864 trie is the minimal binary trie over stems: an internal node
//! exists only where at least two stems lie below it, and a lone stem floats
//! up to the highest position where it is alone. So a subtree with one stem
//! contributes that stem's hash wherever the stem ends up, a subtree with
//! several contributes its internal node's hash, and an empty one
//! contributes zero. [`combine`] is the rule for a parent from its two
//! halves; every level of the store (sub-buckets, buckets, upper trie) is
//! hashed with it, so buckets can be cut at any prefix without changing the
//! root.

use ubt_spec::hash::{hash_pair, Hash, ZERO_HASH};
use ubt_spec::key::Stem;

/// How many stems a subtree holds.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum Occupancy {
    /// No stem: hash zero.
    #[default]
    Empty,
    /// Exactly one stem: the stem's hash, floating up.
    One,
    /// Two or more stems: an internal node's hash.
    Many,
}

impl Occupancy {
    /// Two-bit code used on disk.
    pub fn code(self) -> u8 {
        match self {
            Occupancy::Empty => 0,
            Occupancy::One => 1,
            Occupancy::Many => 2,
        }
    }

    /// Inverse of [`Occupancy::code`]; `None` for the unused code 3.
    pub fn from_code(code: u8) -> Option<Occupancy> {
        match code {
            0 => Some(Occupancy::Empty),
            1 => Some(Occupancy::One),
            2 => Some(Occupancy::Many),
            _ => None,
        }
    }
}

/// A subtree's occupancy and hash. See the module documentation.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub struct Summary {
    /// How many stems lie below.
    pub occupancy: Occupancy,
    /// The hash the subtree contributes (zero when empty).
    pub hash: Hash,
}

impl Summary {
    /// The empty subtree.
    pub const EMPTY: Summary = Summary {
        occupancy: Occupancy::Empty,
        hash: ZERO_HASH,
    };

    /// A subtree holding one stem with hash `stem_hash`.
    pub fn one(stem_hash: Hash) -> Summary {
        Summary {
            occupancy: Occupancy::One,
            hash: stem_hash,
        }
    }
}

/// The summary of a node from its two halves (see the module documentation).
#[inline]
pub fn combine(left: &Summary, right: &Summary) -> Summary {
    combine_unhashed(left, right).unwrap_or_else(|| Summary {
        occupancy: Occupancy::Many,
        hash: hash_pair(&left.hash, &right.hash),
    })
}

/// [`combine`] when it needs no hash (an empty half: the other half, or
/// empty); `None` when the node's hash is `SHA-256(left || right)` with
/// [`Occupancy::Many`], which callers batching many hashes compute
/// themselves.
#[inline]
pub fn combine_unhashed(left: &Summary, right: &Summary) -> Option<Summary> {
    match (left.occupancy, right.occupancy) {
        (Occupancy::Empty, Occupancy::Empty) => Some(Summary::EMPTY),
        (Occupancy::One, Occupancy::Empty) => Some(*left),
        (Occupancy::Empty, Occupancy::One) => Some(*right),
        _ => None,
    }
}

/// Something that has a stem and knows the stem's hash.
pub trait StemHashed {
    /// The stem.
    fn stem(&self) -> &Stem;
    /// The stem node's hash.
    fn stem_hash(&self) -> &Hash;
}

impl StemHashed for (Stem, Hash) {
    fn stem(&self) -> &Stem {
        &self.0
    }
    fn stem_hash(&self) -> &Hash {
        &self.1
    }
}

/// The summary of the minimal trie over `stems` (sorted, distinct, all
/// sharing their first `depth` bits) rooted at `depth`, given each stem's
/// hash. Costs one hash per internal node; recursion only at branching
/// nodes, so no deeper than the number of stems.
pub fn subtrie_summary<T: StemHashed>(stems: &[T], depth: usize) -> Summary {
    match stems {
        [] => Summary::EMPTY,
        [only] => Summary::one(*only.stem_hash()),
        [first, .., last] => {
            let (first, last) = (first.stem(), last.stem());
            debug_assert!(first < last, "stems not sorted and distinct");
            let Some(split_bit) = first.first_difference(last) else {
                return Summary::one(*stems[0].stem_hash());
            };
            debug_assert!(split_bit >= depth, "stems do not share the prefix");
            let split = stems.partition_point(|entry| entry.stem().bit(split_bit) == 0);
            let left = subtrie_summary(&stems[..split], split_bit + 1);
            let right = subtrie_summary(&stems[split..], split_bit + 1);
            let mut hash = hash_pair(&left.hash, &right.hash);
            // The levels between `depth` and the split have one empty side.
            for level in (depth..split_bit).rev() {
                hash = if first.bit(level) == 0 {
                    hash_pair(&hash, &ZERO_HASH)
                } else {
                    hash_pair(&ZERO_HASH, &hash)
                };
            }
            Summary {
                occupancy: Occupancy::Many,
                hash,
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use alloy_primitives::B256;
    use ubt_spec::{ReferenceTree, StateTree};

    /// The root of the whole trie is the summary at depth 0.
    #[test]
    fn subtrie_summary_at_depth_zero_is_the_root() {
        for n in [0usize, 1, 2, 3, 17, 200] {
            let mut reference = ReferenceTree::new();
            let mut stems = Vec::new();
            for i in 0..n {
                let mut key = ubt_spec::hash::sha256(&(i as u64).to_be_bytes());
                // Force shared prefixes for some stems.
                if i % 3 == 0 {
                    key[..3].copy_from_slice(&[0xab, 0xcd, 0xef]);
                }
                let key = B256::from(key);
                reference.insert(key, B256::repeat_byte(7));
            }
            let mut last: Option<Stem> = None;
            for (key, value) in reference.entries() {
                let stem = Stem::of_key(key);
                if last != Some(stem) {
                    let subtree = ubt_spec::stem::subtree_root([(key[31], value)]);
                    stems.push((stem, ubt_spec::stem::stem_hash(&stem, &subtree)));
                    last = Some(stem);
                }
            }
            let summary = subtrie_summary(&stems, 0);
            assert_eq!(summary.hash, reference.compute_root(), "n = {n}");
        }
    }

    #[test]
    fn combine_floats_single_stems_and_chains_many() {
        let a = Summary::one([1; 32]);
        assert_eq!(combine(&a, &Summary::EMPTY), a);
        assert_eq!(combine(&Summary::EMPTY, &a), a);
        let many = combine(&a, &a);
        assert_eq!(many.occupancy, Occupancy::Many);
        let chained = combine(&many, &Summary::EMPTY);
        assert_eq!(chained.hash, hash_pair(&many.hash, &ZERO_HASH));
    }
}
