//! An order-independent digest of a set of `(tree key, value)` entries:
//! the sum modulo 2^256 of SHA-256(key || value) over the entries. Two
//! sets have the same digest and count only if they are equal (up to
//! finding a SHA-256 sum collision), and each side is computed in one
//! streaming pass in any order, with constant memory: verify compares the
//! tree's entries with the flat index's this way.

use alloy_primitives::{B256, U256};
use ubt_spec::hash::hash64;

/// See the module documentation.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct EntryDigest {
    /// Entries added.
    pub count: u64,
    /// The sum of their hashes.
    pub sum: U256,
}

impl EntryDigest {
    /// Adds one entry.
    pub fn add(&mut self, key: &B256, value: &B256) {
        let mut message = [0u8; 64];
        message[..32].copy_from_slice(key.as_slice());
        message[32..].copy_from_slice(value.as_slice());
        self.sum = self.sum.wrapping_add(U256::from_be_bytes(hash64(&message)));
        self.count += 1;
    }

    /// Adds every entry of `other`.
    pub fn merge(&mut self, other: &EntryDigest) {
        self.sum = self.sum.wrapping_add(other.sum);
        self.count += other.count;
    }
}
