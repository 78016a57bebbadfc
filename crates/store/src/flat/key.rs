//! [`FlatKey`]: where a value sits in the flat index, the owning account's
//! address followed by the value's tree key. Sorting by it clusters one
//! account's header, code chunks and storage together, whatever their tree
//! keys (EIP-7864 scatters those over the whole key space).

use alloy_primitives::{Address, B256};

/// Bytes of a [`FlatKey`]: a 20-byte address and a 32-byte tree key.
pub const FLAT_KEY_BYTES: usize = 52;

/// `owner || tree_key`, ordered bytewise: by owner, then by tree key.
#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct FlatKey([u8; FLAT_KEY_BYTES]);

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
}

impl std::fmt::Debug for FlatKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "FlatKey({}, {})", self.owner(), self.tree_key())
    }
}
