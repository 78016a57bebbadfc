//! The account-level API with go-ethereum's `BinaryTrie` semantics (spec
//! section 4): writes as an ordered [`AccountBatch`] of [`AccountOp`]s,
//! reads ([`read_account`], [`read_storage`], [`read_code`]) over any
//! source of tree values, and both together on every [`StateTree`]
//! ([`AccountWrites`]).
//!
//! Every operation is a plain 32-byte write; nothing is ever removed. Where
//! geth behaves oddly, these operations do what geth does, so roots match:
//!
//! * [`AccountOp::DeleteAccount`] writes zeros to the BasicData and
//!   CodeHash leaves only; storage slots and code chunks stay.
//! * [`AccountOp::SetCode`] writes the new chunks and nothing else: when
//!   code shrinks, chunks past the new end keep their old values. It does
//!   not touch BasicData either: the code size read back is the one the
//!   last [`AccountOp::SetAccount`] gave.
//! * [`AccountOp::DeleteStorage`] writes a present zero leaf, which hashes
//!   differently from an absent slot.
//! * Balances of 2^128 and above are truncated as geth truncates them (see
//!   [`geth_balance`](crate::basic_data::geth_balance)).
//! * The code size in BasicData is whatever the caller passes; geth's state
//!   layer sometimes passes 0 for contracts whose code was not loaded.
//!
//! Reads follow geth's `GetAccount`: an account whose two header leaves are
//! both absent, or both 32 zero bytes (deleted), is absent. Code is not
//! stored whole in the trie; [`read_code`] reassembles it from the chunks,
//! using the code size in BasicData.

mod batch;
mod read;

use alloy_primitives::{Address, Bytes, B256, U256};

pub use batch::{geth_storage_value, AccountBatch, AccountOp};
pub use read::{
    read_account, read_code, read_code_matching_hash, read_storage, CodeReadError,
    MissingCodeChunk, CODE_READ_BATCH_CHUNKS, CODE_RECOVER_MAX_CHUNKS,
};

use crate::tree::StateTree;

/// An account header: what geth's `GetAccount` returns, plus the code size
/// BasicData holds. The same fields set an account ([`AccountOp::SetAccount`]).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Account {
    /// Account nonce.
    pub nonce: u64,
    /// Account balance. Read back, it is the stored 128 bits; written, a
    /// balance of 2^128 or more is truncated as geth truncates it
    /// ([`geth_balance`](crate::basic_data::geth_balance)).
    pub balance: U256,
    /// Byte length of the account's code as BasicData records it (whatever
    /// the writer passed; not checked against the chunks).
    pub code_size: u32,
    /// keccak256 of the account's code.
    pub code_hash: B256,
}

/// The account operations and reads, implemented for every [`StateTree`].
/// Each write method applies one [`AccountOp`] (see its documentation for
/// geth's quirks); the reads are [`read_account`], [`read_storage`] and
/// [`read_code`] over the tree.
pub trait AccountWrites: StateTree {
    /// geth `UpdateAccount`: writes the BasicData and CodeHash leaves
    /// ([`AccountOp::SetAccount`]).
    fn update_account(
        &mut self,
        address: &Address,
        nonce: u64,
        balance: &U256,
        code_hash: &B256,
        code_size: u32,
    ) {
        let account = Account {
            nonce,
            balance: *balance,
            code_size,
            code_hash: *code_hash,
        };
        self.apply_account_op(&AccountOp::SetAccount {
            address: *address,
            account,
        });
    }

    /// geth `UpdateContractCode`: writes chunk `i` of `code` at code-chunk key
    /// `i` for every chunk ([`AccountOp::SetCode`]). Old chunks beyond the new
    /// length are left as is.
    fn update_code(&mut self, address: &Address, code: &[u8]) {
        self.apply_account_op(&AccountOp::SetCode {
            address: *address,
            code: Bytes::copy_from_slice(code),
        });
    }

    /// geth `UpdateStorage`: `value` (at most 32 bytes are used: the first 32)
    /// left-padded with zeros to 32 bytes ([`geth_storage_value`]).
    fn update_storage(&mut self, address: &Address, slot: &U256, value: &[u8]) {
        self.apply_account_op(&AccountOp::SetStorage {
            address: *address,
            slot: *slot,
            value: geth_storage_value(value),
        });
    }

    /// geth `DeleteStorage`: writes 32 zero bytes at the slot key
    /// ([`AccountOp::DeleteStorage`]).
    fn delete_storage(&mut self, address: &Address, slot: &U256) {
        self.apply_account_op(&AccountOp::DeleteStorage {
            address: *address,
            slot: *slot,
        });
    }

    /// geth `DeleteAccount`: zeros the BasicData and CodeHash leaves only
    /// ([`AccountOp::DeleteAccount`]).
    fn delete_account(&mut self, address: &Address) {
        self.apply_account_op(&AccountOp::DeleteAccount { address: *address });
    }

    /// Applies one operation's tree writes, in order.
    fn apply_account_op(&mut self, op: &AccountOp) {
        op.for_each_tree_write(|key, value| self.insert(key, value));
    }

    /// Applies every operation of `batch`, in order.
    fn apply_account_batch(&mut self, batch: &AccountBatch) {
        batch.for_each_tree_write(|key, value| self.insert(key, value));
    }

    /// geth `GetAccount` ([`read_account`]): `None` if both header leaves
    /// are absent or both are zero (deleted).
    fn account(&self, address: &Address) -> Option<Account> {
        infallible(read_account(address, tree_lookup(self)))
    }

    /// The value of a storage slot, if present ([`read_storage`]).
    fn storage(&self, address: &Address, slot: &U256) -> Option<B256> {
        infallible(read_storage(address, slot, tree_lookup(self)))
    }

    /// The account's code reassembled from its chunks ([`read_code`]):
    /// `None` if the account is absent, an error if a chunk within the
    /// code size is absent.
    fn code(&self, address: &Address) -> Result<Option<Bytes>, MissingCodeChunk> {
        read_code(address, tree_lookup(self)).map_err(|error| match error {
            CodeReadError::MissingChunk(missing) => missing,
            CodeReadError::Source(never) => match never {},
        })
    }
}

impl<T: StateTree + ?Sized> AccountWrites for T {}

/// A batch lookup over an in-memory tree, for the read functions.
fn tree_lookup<T: StateTree + ?Sized>(
    tree: &T,
) -> impl FnMut(&[B256]) -> Result<Vec<Option<B256>>, std::convert::Infallible> + '_ {
    move |keys| Ok(keys.iter().map(|key| tree.get(key)).collect())
}

/// The value of a result that cannot be an error.
fn infallible<T>(result: Result<T, std::convert::Infallible>) -> T {
    match result {
        Ok(value) => value,
        Err(never) => match never {},
    }
}
