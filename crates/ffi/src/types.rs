//! The plain C structs of the ABI for values (keys, values, roots,
//! addresses, accounts, byte buffers) and their conversions to the
//! engine's types. Every struct is `repr(C)` with fixed-size fields only,
//! so cgo and C see it as declared.

use alloy_primitives::{Address, B256, U256};
use ubt_engine::Account;

/// 32 bytes: a tree key, a value, a state root, a storage slot number or
/// a balance (numbers big-endian).
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct UbtBytes32 {
    /// The bytes.
    pub bytes: [u8; 32],
}

/// A 20-byte account address.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct UbtAddress {
    /// The bytes.
    pub bytes: [u8; 20],
}

/// One tree-key write of a block: `value` at `key`.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct UbtWrite {
    /// The tree key.
    pub key: UbtBytes32,
    /// The value to store.
    pub value: UbtBytes32,
}

/// An account header, as read (go-ethereum's `GetAccount` plus the code
/// size) and as written by `UBT_OP_SET_ACCOUNT`.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct UbtAccount {
    /// The nonce.
    pub nonce: u64,
    /// The balance, a 256-bit big-endian number. Read back it is the 128
    /// bits stored; written, a balance of 2^128 or more is truncated as
    /// go-ethereum truncates it.
    pub balance: UbtBytes32,
    /// keccak256 of the code.
    pub code_hash: UbtBytes32,
    /// The code size BasicData records (whatever the writer gave).
    pub code_size: u32,
}

/// A byte buffer allocated by the library (code, proofs). The caller reads
/// `len` bytes at `data` and hands the buffer back with `ubt_bytes_free`
/// exactly once. An empty buffer has `data` NULL and `len` 0 and needs no
/// free (freeing it is a no-op).
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct UbtBytes {
    /// The first byte, or NULL when `len` is 0.
    pub data: *const u8,
    /// The number of bytes.
    pub len: usize,
}

impl UbtBytes {
    /// The empty buffer.
    pub const EMPTY: UbtBytes = UbtBytes {
        data: std::ptr::null(),
        len: 0,
    };
}

impl From<UbtBytes32> for B256 {
    fn from(value: UbtBytes32) -> B256 {
        B256::from(value.bytes)
    }
}

impl From<B256> for UbtBytes32 {
    fn from(value: B256) -> UbtBytes32 {
        UbtBytes32 { bytes: value.0 }
    }
}

impl From<UbtBytes32> for U256 {
    fn from(value: UbtBytes32) -> U256 {
        U256::from_be_bytes(value.bytes)
    }
}

impl From<U256> for UbtBytes32 {
    fn from(value: U256) -> UbtBytes32 {
        UbtBytes32 {
            bytes: value.to_be_bytes(),
        }
    }
}

impl From<UbtAddress> for Address {
    fn from(value: UbtAddress) -> Address {
        Address::from(value.bytes)
    }
}

impl From<Address> for UbtAddress {
    fn from(value: Address) -> UbtAddress {
        UbtAddress { bytes: value.0 .0 }
    }
}

impl From<UbtWrite> for (B256, B256) {
    fn from(write: UbtWrite) -> (B256, B256) {
        (write.key.into(), write.value.into())
    }
}

impl From<Account> for UbtAccount {
    fn from(account: Account) -> UbtAccount {
        UbtAccount {
            nonce: account.nonce,
            balance: account.balance.into(),
            code_hash: account.code_hash.into(),
            code_size: account.code_size,
        }
    }
}

impl From<UbtAccount> for Account {
    fn from(account: UbtAccount) -> Account {
        Account {
            nonce: account.nonce,
            balance: account.balance.into(),
            code_size: account.code_size,
            code_hash: account.code_hash.into(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn numbers_are_big_endian() {
        let one = UbtBytes32::from(U256::from(1u8));
        assert_eq!(one.bytes[31], 1);
        assert!(one.bytes[..31].iter().all(|&b| b == 0));
        let back: U256 = one.into();
        assert_eq!(back, U256::from(1u8));
    }

    #[test]
    fn accounts_round_trip() {
        let account = Account {
            nonce: 7,
            balance: U256::from(1_000_000u64),
            code_size: 33,
            code_hash: B256::repeat_byte(0xab),
        };
        assert_eq!(Account::from(UbtAccount::from(account)), account);
    }
}
