//! The account-level API with go-ethereum's `BinaryTrie` semantics (spec
//! section 4), available on every [`StateTree`].
//!
//! Every operation is a plain 32-byte write; nothing is ever removed. Where
//! geth behaves oddly, these functions do what geth does, so roots match:
//!
//! * [`AccountWrites::delete_account`] writes zeros to the BasicData and
//!   CodeHash leaves only; storage slots and code chunks stay.
//! * [`AccountWrites::update_code`] writes the new chunks and nothing else:
//!   when code shrinks, chunks past the new end keep their old values.
//! * [`AccountWrites::delete_storage`] writes a present zero leaf, which
//!   hashes differently from an absent slot.
//! * Balances of 2^128 and above are truncated as geth truncates them (see
//!   [`geth_balance`]).
//! * The code size in BasicData is whatever the caller passes; geth's state
//!   layer sometimes passes 0 for contracts whose code was not loaded.

use alloy_primitives::{Address, B256, U256};

use crate::basic_data::{geth_balance, BasicData};
use crate::chunk::chunkify_code;
use crate::key::{basic_data_key, code_chunk_key, code_hash_key, storage_slot_key};
use crate::tree::StateTree;

/// An account as geth's `GetAccount` returns it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Account {
    /// Account nonce.
    pub nonce: u64,
    /// Account balance as stored (128 bits).
    pub balance: u128,
    /// keccak256 of the account's code.
    pub code_hash: B256,
}

/// The account operations, implemented for every [`StateTree`].
pub trait AccountWrites: StateTree {
    /// geth `UpdateAccount`: writes the BasicData and CodeHash leaves.
    fn update_account(
        &mut self,
        address: &Address,
        nonce: u64,
        balance: &U256,
        code_hash: &B256,
        code_size: u32,
    ) {
        let basic = BasicData {
            version: 0,
            code_size,
            nonce,
            balance: geth_balance(balance),
        }
        .pack();
        self.insert(basic_data_key(address), basic);
        self.insert(code_hash_key(address), *code_hash);
    }

    /// geth `UpdateContractCode`: writes chunk `i` of `code` at code-chunk key
    /// `i` for every chunk. Old chunks beyond the new length are left as is.
    fn update_code(&mut self, address: &Address, code: &[u8]) {
        for (chunk_id, chunk) in chunkify_code(code).into_iter().enumerate() {
            self.insert(code_chunk_key(address, chunk_id as u64), B256::from(chunk));
        }
    }

    /// geth `UpdateStorage`: `value` (at most 32 bytes are used: the first 32)
    /// left-padded with zeros to 32 bytes.
    fn update_storage(&mut self, address: &Address, slot: &U256, value: &[u8]) {
        let used = &value[..value.len().min(32)];
        let mut padded = [0u8; 32];
        padded[32 - used.len()..].copy_from_slice(used);
        self.insert(storage_slot_key(address, slot), B256::from(padded));
    }

    /// geth `DeleteStorage`: writes 32 zero bytes at the slot key.
    fn delete_storage(&mut self, address: &Address, slot: &U256) {
        self.insert(storage_slot_key(address, slot), B256::ZERO);
    }

    /// geth `DeleteAccount`: zeros the BasicData and CodeHash leaves only.
    fn delete_account(&mut self, address: &Address) {
        self.insert(basic_data_key(address), B256::ZERO);
        self.insert(code_hash_key(address), B256::ZERO);
    }

    /// geth `GetAccount`: `None` if both header leaves are absent or both are
    /// zero (deleted).
    fn account(&self, address: &Address) -> Option<Account> {
        let basic = self.get(&basic_data_key(address));
        let code_hash = self.get(&code_hash_key(address));
        let deleted = basic == Some(B256::ZERO) && code_hash == Some(B256::ZERO);
        if (basic.is_none() && code_hash.is_none()) || deleted {
            return None;
        }
        let data = BasicData::unpack(&basic.unwrap_or_default());
        Some(Account {
            nonce: data.nonce,
            balance: data.balance,
            code_hash: code_hash.unwrap_or_default(),
        })
    }

    /// The value of a storage slot, if present.
    fn storage(&self, address: &Address, slot: &U256) -> Option<B256> {
        self.get(&storage_slot_key(address, slot))
    }
}

impl<T: StateTree + ?Sized> AccountWrites for T {}
