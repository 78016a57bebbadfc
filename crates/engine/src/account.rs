//! The account-level API over the database: reads of accounts, storage
//! slots and code with go-ethereum's semantics, and blocks of
//! account-level writes. The semantics are the spec's, shared with the
//! in-memory trees ([`ubt_spec::account`]); here each read's batch of keys
//! goes to the store as one `get_many`, all its reads in flight at once.

use alloy_primitives::{Address, Bytes, B256, U256};
use ubt_spec::account::{
    read_account, read_code, read_code_matching_hash, read_storage, CodeReadError,
};
use ubt_spec::{Account, AccountBatch};

use crate::{Db, Error, Reader, Result, Root};

/// Why a code read failed: the store failed ([`CodeReadError::Source`]), or
/// the account's BasicData gives a code size that its chunks do not back
/// ([`CodeReadError::MissingChunk`]).
pub type CodeError = CodeReadError<Error>;

/// `keys` of the account at `address`, as the owned reads take them.
fn owned(address: &Address, keys: &[B256]) -> Vec<(Address, B256)> {
    keys.iter().map(|key| (*address, *key)).collect()
}

impl Db {
    /// The account at `address` at the tip, as geth's `GetAccount` reads it
    /// (plus the code size): `None` when both header leaves are absent, or
    /// both zero (deleted). One batch of two reads. See
    /// [`read_account`].
    pub fn account(&self, address: &Address) -> Result<Option<Account>> {
        let store = self.shared.read();
        read_account(address, |keys| store.get_owned(&owned(address, keys)))
    }

    /// The value of storage slot `slot` of `address` at the tip, if present
    /// (a deleted slot is a present zero). Slots outlive a deleted account.
    pub fn storage(&self, address: &Address, slot: &U256) -> Result<Option<B256>> {
        let store = self.shared.read();
        read_storage(address, slot, |keys| store.get_owned(&owned(address, keys)))
    }

    /// The code of `address` at the tip, reassembled from its chunks with
    /// the code size in BasicData: `None` when the account is absent, empty
    /// for size 0. Two batches (the header, then every chunk, up to
    /// [`CODE_READ_BATCH_CHUNKS`](ubt_spec::account::CODE_READ_BATCH_CHUNKS)
    /// per batch), read under one lock so both see the same state. See
    /// [`read_code`].
    pub fn code(&self, address: &Address) -> std::result::Result<Option<Bytes>, CodeError> {
        let store = self.shared.read();
        read_code(address, |keys| store.get_owned(&owned(address, keys)))
    }

    /// The code of `address` as its code hash names it: [`Db::code`]'s
    /// when it hashes to the account's code hash, else recovered from the
    /// chunks (go-ethereum writes code size 0 for a contract it updates
    /// without loading its code; see
    /// [`read_code_matching_hash`]).
    pub fn code_matching_hash(
        &self,
        address: &Address,
    ) -> std::result::Result<Option<Bytes>, CodeError> {
        let store = self.shared.read();
        read_code_matching_hash(address, |keys| store.get_owned(&owned(address, keys)))
    }

    /// Applies a block of account-level writes as one layer, like
    /// [`Db::apply`] with the batch's tree-key writes (each filed under its
    /// account in the flat index, when the database keeps one)
    /// ([`AccountBatch::tree_writes`], in order, with geth's semantics and
    /// quirks: see [`AccountOp`](ubt_spec::AccountOp)), and returns its
    /// root. The block's tree-key writes count against
    /// [`MAX_BLOCK_WRITES`](crate::MAX_BLOCK_WRITES).
    pub fn apply_accounts(&mut self, batch: &AccountBatch) -> Result<Root> {
        self.shared
            .write()
            .apply_owned(&batch.owned_tree_writes())
            .map(Root::from)
    }
}

impl Reader {
    /// The account at `address` in the snapshot ([`Db::account`]).
    pub fn account(&self, address: &Address) -> Result<Option<Account>> {
        let store = self.shared.read();
        read_account(address, |keys| {
            store.get_owned_at(&owned(address, keys), &self.snapshot)
        })
    }

    /// The value of storage slot `slot` of `address` in the snapshot
    /// ([`Db::storage`]).
    pub fn storage(&self, address: &Address, slot: &U256) -> Result<Option<B256>> {
        let store = self.shared.read();
        read_storage(address, slot, |keys| {
            store.get_owned_at(&owned(address, keys), &self.snapshot)
        })
    }

    /// The code of `address` in the snapshot ([`Db::code`]).
    pub fn code(&self, address: &Address) -> std::result::Result<Option<Bytes>, CodeError> {
        let store = self.shared.read();
        read_code(address, |keys| {
            store.get_owned_at(&owned(address, keys), &self.snapshot)
        })
    }

    /// [`Db::code_matching_hash`] in the snapshot.
    pub fn code_matching_hash(
        &self,
        address: &Address,
    ) -> std::result::Result<Option<Bytes>, CodeError> {
        let store = self.shared.read();
        read_code_matching_hash(address, |keys| {
            store.get_owned_at(&owned(address, keys), &self.snapshot)
        })
    }
}
