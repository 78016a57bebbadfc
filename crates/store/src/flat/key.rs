//! [`FlatKey`]: where a value sits in the flat index, the owning account's
//! address followed by the value's tree key. Sorting by it clusters one
//! account's header, code chunks and storage together, whatever their tree
//! keys (EIP-7864 scatters those over the whole key space).

use alloy_primitives::{Address, B256};

/// Bytes of a [`FlatKey`]: a 20-byte address and a 32-byte tree key.
pub const FLAT_KEY_BYTES: usize = 52;

/// `owner || tree_key`, ordered bytewise: by owner, then by tree key.
#[derive(Clone, Copy, Eq)]
pub struct FlatKey([u8; FLAT_KEY_BYTES]);

impl PartialEq for FlatKey {
    /// Byte equality, compared a word at a time: the changes map compares
    /// keys on every write and read, and a call into `memcmp` per
    /// comparison cost more than the comparison. Keys of one stem differ
    /// only in their last byte, so the last word is compared first.
    #[inline]
    fn eq(&self, other: &Self) -> bool {
        let word = |key: &[u8; FLAT_KEY_BYTES], at: usize| {
            let mut bytes = [0u8; 8];
            bytes.copy_from_slice(&key[at..at + 8]);
            u64::from_ne_bytes(bytes)
        };
        [44, 0, 8, 16, 24, 32, 40]
            .iter()
            .all(|&at| word(&self.0, at) == word(&other.0, at))
    }
}

impl std::hash::Hash for FlatKey {
    /// Three words: the owner's first 8 bytes, and the tree key's first 8
    /// and last 8 (which hold the stem's end and the sub-index). Tree keys
    /// are SHA-256 outputs, so two keys of one account agreeing in all
    /// 128 tree-key bits hashed take a search of about 2^64 keys; a write
    /// hashes 24 bytes instead of 52.
    #[inline]
    fn hash<H: std::hash::Hasher>(&self, state: &mut H) {
        let word = |at: usize| {
            let mut bytes = [0u8; 8];
            bytes.copy_from_slice(&self.0[at..at + 8]);
            u64::from_ne_bytes(bytes)
        };
        state.write_u64(word(0));
        state.write_u64(word(20));
        state.write_u64(word(44));
    }
}

impl Ord for FlatKey {
    /// The bytewise order, compared a word at a time: big-endian words
    /// order as their bytes do, and a call into `memcmp` per comparison
    /// cost more than the comparison (the changes map compares keys on
    /// every write).
    #[inline]
    fn cmp(&self, other: &Self) -> std::cmp::Ordering {
        let word = |key: &[u8; FLAT_KEY_BYTES], at: usize| {
            let mut bytes = [0u8; 8];
            bytes.copy_from_slice(&key[at..at + 8]);
            u64::from_be_bytes(bytes)
        };
        for at in (0..48).step_by(8) {
            match word(&self.0, at).cmp(&word(&other.0, at)) {
                std::cmp::Ordering::Equal => {}
                unequal => return unequal,
            }
        }
        let tail = |key: &[u8; FLAT_KEY_BYTES]| {
            let mut bytes = [0u8; 4];
            bytes.copy_from_slice(&key[48..]);
            u32::from_be_bytes(bytes)
        };
        tail(&self.0).cmp(&tail(&other.0))
    }
}

impl PartialOrd for FlatKey {
    #[inline]
    fn partial_cmp(&self, other: &Self) -> Option<std::cmp::Ordering> {
        Some(self.cmp(other))
    }
}

impl FlatKey {
    /// The key of `tree_key`, a value of the account at `owner`.
    pub fn new(owner: &Address, tree_key: &B256) -> FlatKey {
        let mut bytes = [0u8; FLAT_KEY_BYTES];
        bytes[..20].copy_from_slice(owner.as_slice());
        bytes[20..].copy_from_slice(tree_key.as_slice());
        FlatKey(bytes)
    }

    /// The key with these bytes.
    pub fn from_bytes(bytes: [u8; FLAT_KEY_BYTES]) -> FlatKey {
        FlatKey(bytes)
    }

    /// The key's bytes.
    pub fn as_bytes(&self) -> &[u8; FLAT_KEY_BYTES] {
        &self.0
    }

    /// The owning account's address.
    pub fn owner(&self) -> Address {
        Address::from_slice(&self.0[..20])
    }

    /// The value's tree key.
    pub fn tree_key(&self) -> B256 {
        B256::from_slice(&self.0[20..])
    }

    /// The key that names this key's stem under its owner: the same
    /// bytes with the sub-index (the last byte) zero.
    #[inline]
    pub fn stem(&self) -> FlatKey {
        self.with_sub_index(0)
    }

    /// The key of the value at `sub_index` of this key's stem.
    #[inline]
    pub fn with_sub_index(&self, sub_index: u8) -> FlatKey {
        let mut bytes = self.0;
        bytes[FLAT_KEY_BYTES - 1] = sub_index;
        FlatKey(bytes)
    }

    /// The value's position in its stem (the tree key's last byte).
    #[inline]
    pub fn sub_index(&self) -> u8 {
        self.0[FLAT_KEY_BYTES - 1]
    }

    /// Whether `other` lies in this key's stem (same owner, same 31-byte
    /// stem; any sub-index).
    #[inline]
    pub fn same_stem(&self, other: &FlatKey) -> bool {
        self.0[..FLAT_KEY_BYTES - 1] == other.0[..FLAT_KEY_BYTES - 1]
    }
}

/// A set of positions in one stem (sub-indices 0..=255), as 256 bits.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct SubIndices([u64; 4]);

impl SubIndices {
    /// The set holding `sub_index` alone.
    pub fn of(sub_index: u8) -> SubIndices {
        let mut set = SubIndices::default();
        set.insert(sub_index);
        set
    }

    /// Adds `sub_index`; returns whether it was new.
    #[inline]
    pub fn insert(&mut self, sub_index: u8) -> bool {
        let (word, bit) = (usize::from(sub_index / 64), sub_index % 64);
        let new = self.0[word] & (1 << bit) == 0;
        self.0[word] |= 1 << bit;
        new
    }

    /// Whether `sub_index` is in the set.
    #[inline]
    pub fn contains(&self, sub_index: u8) -> bool {
        self.0[usize::from(sub_index / 64)] & (1 << (sub_index % 64)) != 0
    }

    /// Adds every position of `other`; returns how many were new.
    pub fn union(&mut self, other: &SubIndices) -> usize {
        let mut added = 0;
        for (word, more) in self.0.iter_mut().zip(other.0) {
            added += (more & !*word).count_ones() as usize;
            *word |= more;
        }
        added
    }

    /// Positions in the set.
    pub fn len(&self) -> usize {
        self.0.iter().map(|word| word.count_ones() as usize).sum()
    }

    /// Whether the set is empty.
    pub fn is_empty(&self) -> bool {
        self.0.iter().all(|word| *word == 0)
    }

    /// The positions, ascending.
    pub fn iter(&self) -> impl Iterator<Item = u8> + '_ {
        (0..=u8::MAX).filter(|&sub_index| self.contains(sub_index))
    }
}

impl std::fmt::Debug for FlatKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "FlatKey({}, {})", self.owner(), self.tree_key())
    }
}

#[cfg(test)]
#[allow(clippy::cast_possible_truncation)] // test data
mod tests {
    use super::*;

    #[test]
    fn equality_is_byte_equality() {
        let base = [0x5au8; FLAT_KEY_BYTES];
        assert_eq!(FlatKey(base), FlatKey(base));
        for at in 0..FLAT_KEY_BYTES {
            let mut other = base;
            other[at] ^= 1;
            assert_ne!(FlatKey(base), FlatKey(other), "byte {at}");
        }
    }

    #[test]
    fn sub_index_sets_hold_what_was_inserted() {
        let mut set = SubIndices::default();
        assert!(set.is_empty());
        for sub in [0u8, 63, 64, 127, 200, 255] {
            assert!(set.insert(sub));
            assert!(!set.insert(sub));
        }
        assert_eq!(set.len(), 6);
        assert_eq!(
            set.iter().collect::<Vec<_>>(),
            vec![0, 63, 64, 127, 200, 255]
        );
        assert!(!set.contains(1) && !set.contains(65) && set.contains(200));
        let mut other = SubIndices::of(1);
        other.insert(255);
        assert_eq!(set.union(&other), 1);
        assert_eq!(set.len(), 7);
    }

    #[test]
    fn the_order_is_the_byte_order() {
        let keys: Vec<FlatKey> = (0..600u32)
            .map(|i| {
                let mut bytes = [0u8; FLAT_KEY_BYTES];
                bytes[(i % 52) as usize] = (i / 52) as u8 + 1;
                bytes[51 - (i % 5) as usize] ^= i as u8;
                FlatKey(bytes)
            })
            .collect();
        for a in &keys {
            for b in &keys {
                assert_eq!(a.cmp(b), a.0.cmp(&b.0), "{a:?} {b:?}");
            }
        }
    }
}
