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
//! fences decide it, beside the leaf the lookup finds anyway: no I/O and
//! no second search. A stem of a few values, or one that merely straddles
//! a leaf boundary, stays with the index. Keys changed since the last
//! checkpoint are answered from the index's changes.

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

/// Whether a read of `key`, which [`Directory::leaf_for`] places in the
/// leaf at `position`, is served better by the tree's bucket than by the
/// index: its stem fills a leaf by itself. No search: the starts inside
/// the stem are consecutive fences, and the stem holds two or more of
/// them exactly when two of the four around `position` (the one before
/// it to the two after) lie inside it.
///
/// [`Directory::leaf_for`]: super::directory::Directory::leaf_for
pub fn stem_is_dense(leaves: &[Fence], position: usize, key: &FlatKey) -> bool {
    let (low, high) = stem_range(key);
    let near = position.saturating_sub(1)..(position + 3).min(leaves.len());
    let inside = leaves[near]
        .iter()
        .filter(|f| f.key >= low && f.key <= high)
        .count();
    let dense = inside >= DENSE_STEM_FENCES;
    debug_assert_eq!(dense, fences_in_stem(leaves, key) >= DENSE_STEM_FENCES);
    dense
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
    /// Where a read of `key` goes: to the index's changes or leaf, or to
    /// the tree when the key is unchanged and its stem is dense.
    pub fn route(&self, key: &FlatKey) -> Route {
        match self.locate(key) {
            Located::Leaf(position) if stem_is_dense(self.directory().leaves(), position, key) => {
                Route::Tree
            }
            located => Route::Index(located),
        }
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
        let dense = |key: &FlatKey| {
            let position = leaves.partition_point(|f| f.key <= *key).saturating_sub(1);
            stem_is_dense(&leaves, position, key)
        };
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
