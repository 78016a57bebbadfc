//! Tree-key derivation (spec section 3): `get_tree_key` and the account
//! header, storage-slot and code-chunk keys built on it.
//!
//! A tree key is 32 bytes: the first 31 are the [`Stem`] (which stem node the
//! value lives in), the last is the sub-index (which of the stem's 256 slots).

use alloy_primitives::{Address, B256, U256};

use crate::hash::sha256;
use crate::{BASIC_DATA_LEAF_KEY, CODE_HASH_LEAF_KEY, CODE_OFFSET, HEADER_STORAGE_OFFSET};

/// Bytes of a key that select the stem.
pub const STEM_BYTES: usize = 31;

/// The 31-byte prefix of a tree key that selects a stem node.
#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Default)]
pub struct Stem(pub [u8; STEM_BYTES]);

impl Stem {
    /// The stem of a tree key.
    #[inline]
    pub fn of_key(key: &B256) -> Self {
        let mut stem = [0u8; STEM_BYTES];
        stem.copy_from_slice(&key[..STEM_BYTES]);
        Stem(stem)
    }

    /// Bit `index` of the stem, MSB-first (bit 0 is the top bit of byte 0).
    #[inline]
    pub fn bit(&self, index: usize) -> u8 {
        debug_assert!(index < STEM_BYTES * 8, "stem bit {index} out of range");
        (self.0[index / 8] >> (7 - index % 8)) & 1
    }

    /// The index of the first bit where two stems differ, or `None` if equal.
    pub fn first_difference(&self, other: &Stem) -> Option<usize> {
        self.0
            .iter()
            .zip(other.0.iter())
            .position(|(a, b)| a != b)
            .map(|byte| byte * 8 + (self.0[byte] ^ other.0[byte]).leading_zeros() as usize)
    }

    /// The full tree key of slot `sub_index` in this stem.
    pub fn key(&self, sub_index: u8) -> B256 {
        let mut key = [0u8; 32];
        key[..STEM_BYTES].copy_from_slice(&self.0);
        key[STEM_BYTES] = sub_index;
        B256::from(key)
    }
}

impl std::fmt::Debug for Stem {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Stem(0x")?;
        for b in self.0 {
            write!(f, "{b:02x}")?;
        }
        write!(f, ")")
    }
}

/// The sub-index (last byte) of a tree key.
#[inline]
pub fn sub_index(key: &B256) -> u8 {
    key[STEM_BYTES]
}

/// `get_tree_key(address, tree_index, sub_index)`:
/// `sha256(0^12 || address || tree_index as 32 bytes big-endian)[0..31] || sub_index`.
///
/// `tree_index` may use up to 249 bits (storage slots whose top byte is 0xff).
pub fn get_tree_key(address: &Address, tree_index: &U256, sub_index: u8) -> B256 {
    let mut preimage = [0u8; 64];
    preimage[12..32].copy_from_slice(address.as_slice());
    preimage[32..].copy_from_slice(&tree_index.to_be_bytes::<32>());
    let mut key = sha256(&preimage);
    key[STEM_BYTES] = sub_index;
    B256::from(key)
}

/// The key of the packed account header leaf (nonce, balance, code size).
pub fn basic_data_key(address: &Address) -> B256 {
    get_tree_key(address, &U256::ZERO, BASIC_DATA_LEAF_KEY)
}

/// The key of the account's code-hash leaf.
pub fn code_hash_key(address: &Address) -> B256 {
    get_tree_key(address, &U256::ZERO, CODE_HASH_LEAF_KEY)
}

/// `(tree_index, sub_index)` of a storage slot (spec 3.4): slots below 64 live
/// in the account stem at sub-index `64 + slot`; others at `slot + 2^248`.
pub fn storage_index(slot: &U256) -> (U256, u8) {
    let header_slots = U256::from(CODE_OFFSET - HEADER_STORAGE_OFFSET);
    if *slot < header_slots {
        // The slot is below 64, so it fits a byte.
        let low = (slot.as_limbs()[0] & 0xff) as u8;
        return (U256::ZERO, HEADER_STORAGE_OFFSET + low);
    }
    // pos = slot + 2^248 may need 257 bits, so shift first:
    // pos >> 8 = (slot >> 8) + 2^240, and pos & 0xff = slot & 0xff.
    let tree_index = (*slot >> 8usize) + (U256::from(1u8) << 240usize);
    let sub = slot.to_be_bytes::<32>()[31];
    (tree_index, sub)
}

/// The tree key of a storage slot.
pub fn storage_slot_key(address: &Address, slot: &U256) -> B256 {
    let (tree_index, sub) = storage_index(slot);
    get_tree_key(address, &tree_index, sub)
}

/// `(tree_index, sub_index)` of code chunk `chunk_id` (spec 3.5).
pub fn code_chunk_index(chunk_id: u64) -> (U256, u8) {
    let pos = u128::from(CODE_OFFSET) + u128::from(chunk_id);
    (U256::from(pos >> 8), (pos & 0xff) as u8)
}

/// The tree key of code chunk `chunk_id`.
pub fn code_chunk_key(address: &Address, chunk_id: u64) -> B256 {
    let (tree_index, sub) = code_chunk_index(chunk_id);
    get_tree_key(address, &tree_index, sub)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn first_difference_finds_the_bit() {
        let a = Stem([0u8; 31]);
        let mut b = a;
        assert_eq!(a.first_difference(&b), None);
        b.0[25] = 0b0000_0100;
        assert_eq!(a.first_difference(&b), Some(25 * 8 + 5));
        assert_eq!(b.bit(25 * 8 + 5), 1);
        assert_eq!(b.bit(25 * 8 + 4), 0);
    }

    #[test]
    fn header_slots_map_into_the_account_stem() {
        let (ti, sub) = storage_index(&U256::from(63u8));
        assert_eq!((ti, sub), (U256::ZERO, 127));
        let (ti, sub) = storage_index(&U256::from(64u8));
        assert_eq!((ti, sub), (U256::from(1u8) << 240usize, 64));
        let (ti, _) = storage_index(&U256::MAX);
        assert_eq!(ti.to_be_bytes::<32>()[0], 0x01);
    }
}
