//! Account-level writes as data: [`AccountOp`], an ordered [`AccountBatch`]
//! of them, and their translation into tree-key writes
//! ([`AccountOp::for_each_tree_write`], the one place that defines it).

use alloy_primitives::{Address, Bytes, B256, U256};

use super::Account;
use crate::basic_data::{geth_balance, BasicData};
use crate::chunk::{chunkify_code, CHUNK_CODE_BYTES};
use crate::key::{basic_data_key, code_chunk_key, code_hash_key, storage_slot_key};

/// The 32-byte leaf geth's `UpdateStorage` stores for `value`: the first 32
/// bytes of a longer value, a shorter one left-padded with zeros (an empty
/// value stores 32 zero bytes, a present leaf).
pub fn geth_storage_value(value: &[u8]) -> B256 {
    let used = &value[..value.len().min(32)];
    let mut padded = [0u8; 32];
    padded[32 - used.len()..].copy_from_slice(used);
    B256::from(padded)
}

/// One account-level write with geth's `BinaryTrie` semantics. Each becomes
/// a fixed sequence of tree-key writes ([`AccountOp::for_each_tree_write`]).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum AccountOp {
    /// geth `UpdateAccount`: writes the BasicData leaf (version 0, code size,
    /// nonce, balance) then the CodeHash leaf. A balance of 2^128 or more is
    /// truncated as geth truncates it
    /// ([`geth_balance`](crate::basic_data::geth_balance)); the code size is
    /// stored as given, whatever code the account has.
    SetAccount {
        /// The account.
        address: Address,
        /// The header to store.
        account: Account,
    },
    /// geth `UpdateContractCode`: writes the chunks of `code`
    /// ([`chunkify_code`]), chunk `i` at code-chunk key `i`, and nothing
    /// else. When code shrinks, chunks past the new end keep their old
    /// values; BasicData (the code size) and CodeHash are not touched, so
    /// a [`AccountOp::SetAccount`] should go with it. Empty code writes
    /// nothing.
    SetCode {
        /// The account.
        address: Address,
        /// The code.
        code: Bytes,
    },
    /// geth `UpdateStorage`: writes `value` at the slot's key. geth's
    /// padding of shorter values is [`geth_storage_value`].
    SetStorage {
        /// The account.
        address: Address,
        /// The slot number.
        slot: U256,
        /// The 32-byte value.
        value: B256,
    },
    /// geth `DeleteStorage`: writes 32 zero bytes at the slot's key, a
    /// present zero leaf (which hashes differently from an absent slot).
    DeleteStorage {
        /// The account.
        address: Address,
        /// The slot number.
        slot: U256,
    },
    /// geth `DeleteAccount`: writes 32 zero bytes to the BasicData and
    /// CodeHash leaves only. Storage slots and code chunks stay; the account
    /// reads as absent until set again.
    DeleteAccount {
        /// The account.
        address: Address,
    },
}

impl AccountOp {
    /// The account the operation writes to.
    pub fn address(&self) -> &Address {
        match self {
            AccountOp::SetAccount { address, .. }
            | AccountOp::SetCode { address, .. }
            | AccountOp::SetStorage { address, .. }
            | AccountOp::DeleteStorage { address, .. }
            | AccountOp::DeleteAccount { address } => address,
        }
    }

    /// How many tree-key writes the operation makes.
    pub fn tree_write_count(&self) -> usize {
        match self {
            AccountOp::SetAccount { .. } | AccountOp::DeleteAccount { .. } => 2,
            AccountOp::SetCode { code, .. } => code.len().div_ceil(CHUNK_CODE_BYTES),
            AccountOp::SetStorage { .. } | AccountOp::DeleteStorage { .. } => 1,
        }
    }

    /// Calls `write(key, value)` for each tree-key write of the operation, in
    /// the order geth makes them. This is the definition of every
    /// operation's effect on the tree; everything else calls it.
    pub fn for_each_tree_write(&self, mut write: impl FnMut(B256, B256)) {
        match self {
            AccountOp::SetAccount { address, account } => {
                let basic_data = BasicData {
                    version: 0,
                    code_size: account.code_size,
                    nonce: account.nonce,
                    balance: geth_balance(&account.balance),
                };
                write(basic_data_key(address), basic_data.pack());
                write(code_hash_key(address), account.code_hash);
            }
            AccountOp::SetCode { address, code } => {
                for (chunk_id, chunk) in (0u64..).zip(chunkify_code(code)) {
                    write(code_chunk_key(address, chunk_id), B256::from(chunk));
                }
            }
            AccountOp::SetStorage {
                address,
                slot,
                value,
            } => write(storage_slot_key(address, slot), *value),
            AccountOp::DeleteStorage { address, slot } => {
                write(storage_slot_key(address, slot), B256::ZERO);
            }
            AccountOp::DeleteAccount { address } => {
                write(basic_data_key(address), B256::ZERO);
                write(code_hash_key(address), B256::ZERO);
            }
        }
    }
}

/// An ordered list of [`AccountOp`]s: one block of account-level changes.
/// Operations apply in order; a later write to the same tree key wins.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct AccountBatch {
    ops: Vec<AccountOp>,
}

impl AccountBatch {
    /// An empty batch.
    pub fn new() -> Self {
        Self::default()
    }

    /// Appends `op`.
    pub fn push(&mut self, op: AccountOp) -> &mut Self {
        self.ops.push(op);
        self
    }

    /// Appends [`AccountOp::SetAccount`].
    pub fn set_account(&mut self, address: Address, account: Account) -> &mut Self {
        self.push(AccountOp::SetAccount { address, account })
    }

    /// Appends [`AccountOp::SetCode`].
    pub fn set_code(&mut self, address: Address, code: impl Into<Bytes>) -> &mut Self {
        self.push(AccountOp::SetCode {
            address,
            code: code.into(),
        })
    }

    /// Appends [`AccountOp::SetStorage`].
    pub fn set_storage(&mut self, address: Address, slot: U256, value: B256) -> &mut Self {
        self.push(AccountOp::SetStorage {
            address,
            slot,
            value,
        })
    }

    /// Appends [`AccountOp::DeleteStorage`].
    pub fn delete_storage(&mut self, address: Address, slot: U256) -> &mut Self {
        self.push(AccountOp::DeleteStorage { address, slot })
    }

    /// Appends [`AccountOp::DeleteAccount`].
    pub fn delete_account(&mut self, address: Address) -> &mut Self {
        self.push(AccountOp::DeleteAccount { address })
    }

    /// The operations, in order.
    pub fn ops(&self) -> &[AccountOp] {
        &self.ops
    }

    /// Number of operations.
    pub fn len(&self) -> usize {
        self.ops.len()
    }

    /// Whether the batch holds no operation.
    pub fn is_empty(&self) -> bool {
        self.ops.is_empty()
    }

    /// How many tree-key writes the batch makes.
    pub fn tree_write_count(&self) -> usize {
        self.ops.iter().map(AccountOp::tree_write_count).sum()
    }

    /// Calls `write(key, value)` for every tree-key write of every operation,
    /// in order ([`AccountOp::for_each_tree_write`]).
    pub fn for_each_tree_write(&self, mut write: impl FnMut(B256, B256)) {
        for op in &self.ops {
            op.for_each_tree_write(&mut write);
        }
    }

    /// The batch's tree-key writes, in order (later writes to a key win):
    /// what a key/value store applies for it.
    pub fn tree_writes(&self) -> Vec<(B256, B256)> {
        let mut writes = Vec::with_capacity(self.tree_write_count());
        self.for_each_tree_write(|key, value| writes.push((key, value)));
        writes
    }

    /// The batch's tree-key writes with the account each belongs to, in
    /// order: what a store that files values by account (a flat index)
    /// applies.
    pub fn owned_tree_writes(&self) -> Vec<(Address, B256, B256)> {
        let mut writes = Vec::with_capacity(self.tree_write_count());
        for op in &self.ops {
            let owner = *op.address();
            op.for_each_tree_write(|key, value| writes.push((owner, key, value)));
        }
        writes
    }
}

impl From<Vec<AccountOp>> for AccountBatch {
    fn from(ops: Vec<AccountOp>) -> Self {
        AccountBatch { ops }
    }
}

impl FromIterator<AccountOp> for AccountBatch {
    fn from_iter<I: IntoIterator<Item = AccountOp>>(ops: I) -> Self {
        AccountBatch {
            ops: ops.into_iter().collect(),
        }
    }
}

impl Extend<AccountOp> for AccountBatch {
    fn extend<I: IntoIterator<Item = AccountOp>>(&mut self, ops: I) {
        self.ops.extend(ops);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn storage_values_are_padded_or_cut_as_geth_does() {
        assert_eq!(geth_storage_value(&[]), B256::ZERO);
        assert_eq!(geth_storage_value(&[0x2a]), B256::with_last_byte(0x2a));
        let long: Vec<u8> = (0u8..40).collect();
        assert_eq!(geth_storage_value(&long).as_slice(), &long[..32]);
    }

    #[test]
    fn write_counts_match_the_writes() {
        let who = Address::repeat_byte(7);
        let mut batch = AccountBatch::new();
        batch
            .set_account(who, Account::default())
            .set_code(who, vec![0x5b; 63])
            .set_code(who, Bytes::new())
            .set_storage(who, U256::from(3u8), B256::repeat_byte(1))
            .delete_storage(who, U256::MAX)
            .delete_account(who);
        assert_eq!(batch.tree_write_count(), 2 + 3 + 1 + 1 + 2);
        assert_eq!(batch.tree_writes().len(), batch.tree_write_count());
        for op in batch.ops() {
            let mut count = 0;
            op.for_each_tree_write(|_, _| count += 1);
            assert_eq!(count, op.tree_write_count(), "{op:?}");
            assert_eq!(op.address(), &who);
        }
    }
}
