//! The packed account header leaf (spec 3.3) with geth's encoding choices.

use alloy_primitives::{B256, U256};

/// The fields of the BasicData leaf.
///
/// Layout as geth writes it: byte 0 version (always 0), bytes 4..8 code size
/// as a big-endian u32 (the EIP's 3 bytes at 5..8 for any code under 16 MiB),
/// bytes 8..16 nonce, bytes 16..32 balance.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub struct BasicData {
    /// Leaf format version; geth only writes 0.
    pub version: u8,
    /// Byte length of the account's code.
    pub code_size: u32,
    /// Account nonce.
    pub nonce: u64,
    /// Account balance (128 bits in the leaf).
    pub balance: u128,
}

impl BasicData {
    /// Packs the fields into the 32-byte leaf value.
    pub fn pack(&self) -> B256 {
        let mut leaf = [0u8; 32];
        leaf[0] = self.version;
        leaf[4..8].copy_from_slice(&self.code_size.to_be_bytes());
        leaf[8..16].copy_from_slice(&self.nonce.to_be_bytes());
        leaf[16..32].copy_from_slice(&self.balance.to_be_bytes());
        B256::from(leaf)
    }

    /// Unpacks a 32-byte leaf value. Every 32-byte string decodes; bytes 1..4
    /// (reserved) are ignored, as geth ignores them.
    pub fn unpack(leaf: &B256) -> Self {
        let mut code_size = [0u8; 4];
        code_size.copy_from_slice(&leaf[4..8]);
        let mut nonce = [0u8; 8];
        nonce.copy_from_slice(&leaf[8..16]);
        let mut balance = [0u8; 16];
        balance.copy_from_slice(&leaf[16..32]);
        BasicData {
            version: leaf[0],
            code_size: u32::from_be_bytes(code_size),
            nonce: u64::from_be_bytes(nonce),
            balance: u128::from_be_bytes(balance),
        }
    }
}

/// The 128-bit balance geth stores for a 256-bit balance.
///
/// Balances below 2^128 are stored as they are. For wider balances geth keeps
/// bytes `[16..]` of the *minimal* big-endian encoding (spec section 10, item
/// 6): 2^128 becomes 0 and 2^136 + 5 becomes 5. Only reachable in dev chains.
pub fn geth_balance(balance: &U256) -> u128 {
    let full = balance.to_be_bytes::<32>();
    let leading_zero_bytes = full.iter().take_while(|b| **b == 0).count();
    let minimal = &full[leading_zero_bytes..];
    let kept = if minimal.len() > 16 {
        &minimal[16..]
    } else {
        minimal
    };
    let mut low = [0u8; 16];
    low[16 - kept.len()..].copy_from_slice(kept);
    u128::from_be_bytes(low)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pack_unpack_round_trip() {
        let data = BasicData {
            version: 0,
            code_size: 0xff_ffff,
            nonce: u64::MAX,
            balance: 7,
        };
        assert_eq!(BasicData::unpack(&data.pack()), data);
    }

    #[test]
    fn wide_balances_follow_geth() {
        assert_eq!(geth_balance(&U256::from(5u8)), 5);
        assert_eq!(geth_balance(&(U256::from(1u8) << 128usize)), 0);
        let b = (U256::from(1u8) << 136usize) + U256::from(5u8);
        assert_eq!(geth_balance(&b), 5);
        assert_eq!(geth_balance(&U256::MAX), u128::MAX);
    }
}
