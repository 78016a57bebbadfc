//! Which structure serves an account-level read: the flat index or the
//! tree's bucket.
//!
//! The flat index exists for values an account scatters over many stems
//! (mapping slots, a token's balances): one leaf holds ~100 of them where
//! a bucket holds one. Values an account keeps in consecutive slots share
//! a stem already (EIP-7864 puts slots `256k..256k+255` on one stem), and
//! there the bucket is the denser block: it holds the whole stem, up to
//! 256 values in one read, where the index spreads the same stem over two
//! to five leaves. A write needs the bucket too, so a slot read through
//! the index and then written is read twice.
//!
//! So a read goes to the tree when its stem fills at least one leaf of the
//! index by itself: when [`DENSE_STEM_FENCES`] or more leaves start inside
//! the stem (the record range `owner || stem || 00..ff`). The resident
//! fences decide it; the index keeps the set of such stems, derived from
//! the fences whenever they change ([`dense_stems`]), so a read asks one
//! hash probe of a small set before any search. A stem of a few values,
//! or one that merely straddles a leaf boundary, stays with the index.
//!
//! Writes to a dense stem are recorded as the stem and the positions
//! written, not one change per value ([`FlatIndex::record`]): until the
//! next checkpoint the tree holds that stem's values at the tip, reads of
//! it go to the tree, and the checkpoint copies the written positions
//! from the tree into the leaves.
//! Such a written stem keeps its reads on the tree even if the
//! checkpoint's new fences no longer make it dense, until a checkpoint
//! has written its values. Keys changed since the last checkpoint in other
//! stems are answered from the index's changes.

use alloy_primitives::map::HashSet;

use super::directory::Fence;
use super::index::{FlatIndex, Located};
use super::key::{FlatKey, FLAT_KEY_BYTES};

/// Leaves that must start inside a stem for its reads to go to the tree:
/// two starts mean at least one leaf holds only this stem's records.
pub const DENSE_STEM_FENCES: usize = 2;

/// The first and last possible keys of `key`'s stem under its owner: the
/// same bytes with the sub-index (the last byte) at 0x00 and 0xff.
fn stem_range(key: &FlatKey) -> (FlatKey, FlatKey) {
    let mut low = *key.as_bytes();
    let mut high = low;
    low[FLAT_KEY_BYTES - 1] = 0x00;
    high[FLAT_KEY_BYTES - 1] = 0xff;
    (FlatKey::from_bytes(low), FlatKey::from_bytes(high))
}

/// How many of `leaves` (sorted fences) start inside `key`'s stem.
pub fn fences_in_stem(leaves: &[Fence], key: &FlatKey) -> usize {
    let (low, high) = stem_range(key);
    let start = leaves.partition_point(|f| f.key < low);
    let end = leaves.partition_point(|f| f.key <= high);
    end - start
}

/// The stems (named by [`FlatKey::stem`]) in which
/// [`DENSE_STEM_FENCES`] or more of `leaves` (sorted fences) start: two
/// starts inside one stem are two consecutive fences that share the stem.
pub fn dense_stems(leaves: &[Fence]) -> HashSet<FlatKey> {
    let mut stems = HashSet::default();
    for pair in leaves.windows(DENSE_STEM_FENCES) {
        if pair[0].key.same_stem(&pair[DENSE_STEM_FENCES - 1].key) {
            stems.insert(pair[0].key.stem());
        }
    }
    stems
}

/// Which structure serves a read of a key at the tip.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Route {
    /// The tree's bucket: the key's stem fills a leaf by itself.
    Tree,
    /// The index, where the key is located.
    Index(Located),
}

impl FlatIndex {
    /// Where a read of `key` goes: to the tree when its stem is dense or
    /// was written as a whole since the last checkpoint, else to the
    /// index's changes or leaf.
    pub fn route(&self, key: &FlatKey) -> Route {
        if self.reads_stem_from_tree(key) {
            return Route::Tree;
        }
        let located = self.locate(key);
        debug_assert!(
            fences_in_stem(self.directory().leaves(), key) < DENSE_STEM_FENCES,
            "a dense stem missing from the dense set"
        );
        Route::Index(located)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::format::Extent;
    use alloy_primitives::{Address, B256};

    fn fence(owner: u8, stem: u8, sub_index: u8) -> Fence {
        let mut tree_key = [0u8; 32];
        tree_key[0] = stem;
        tree_key[31] = sub_index;
        Fence {
            key: FlatKey::new(&Address::repeat_byte(owner), &B256::from(tree_key)),
            extent: Extent::at_block(0, 16, 0),
            fresh: false,
        }
    }

    #[test]
    fn a_stem_is_dense_when_a_leaf_holds_only_its_records() {
        // Leaves start at: (1, stem 5, 0), (1, stem 7, 10), (1, stem 7, 90),
        // (1, stem 7, 200), (1, stem 9, 0), (2, stem 7, 0).
        let leaves = vec![
            fence(1, 5, 0),
            fence(1, 7, 10),
            fence(1, 7, 90),
            fence(1, 7, 200),
            fence(1, 9, 0),
            fence(2, 7, 0),
        ];
        let key = |owner, stem, sub| fence(owner, stem, sub).key;
        assert_eq!(fences_in_stem(&leaves, &key(1, 7, 0)), 3);
        assert_eq!(fences_in_stem(&leaves, &key(1, 7, 255)), 3);
        let stems = dense_stems(&leaves);
        assert_eq!(stems.len(), 1);
        let dense = |key: &FlatKey| stems.contains(&key.stem());
        assert!(dense(&key(1, 7, 42)));
        assert!(dense(&key(1, 7, 0)) && dense(&key(1, 7, 255)));
        // One start inside: a stem across a boundary, not a full leaf.
        assert_eq!(fences_in_stem(&leaves, &key(1, 5, 3)), 1);
        assert!(!dense(&key(1, 5, 3)));
        // None inside: the stem lies within another stem's leaf.
        assert_eq!(fences_in_stem(&leaves, &key(1, 6, 1)), 0);
        // The same stem bytes under another owner are another stem.
        assert_eq!(fences_in_stem(&leaves, &key(2, 7, 1)), 1);
        assert!(!dense(&key(3, 7, 1)) && !dense(&key(0, 7, 1)));
        assert_eq!(fences_in_stem(&[], &key(1, 7, 1)), 0);
    }
}
