//! The key/value interface shared by every tree in the project, so that the
//! account API, tests and tools work over the reference tree and the fast
//! tree alike.

use alloy_primitives::B256;

use crate::hash::Hash;

/// A binary trie seen as a map from 32-byte tree keys to 32-byte values.
///
/// Nothing is ever removed (geth semantics): writing 32 zero bytes stores a
/// present zero leaf, which hashes differently from an absent one.
pub trait StateTree {
    /// Sets `key` to `value`.
    fn insert(&mut self, key: B256, value: B256);

    /// The value at `key`, if present.
    fn get(&self, key: &B256) -> Option<B256>;

    /// The state root (`0^32` for the empty tree).
    fn root(&mut self) -> Hash;

    /// Sets many keys; later entries overwrite earlier ones.
    fn insert_batch(&mut self, entries: &[(B256, B256)]) {
        for (key, value) in entries {
            self.insert(*key, *value);
        }
    }
}
