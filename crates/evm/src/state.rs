//! What the executor reads through: tree-key reads from a state source,
//! and contract code by hash from a code store kept outside the trie.

use std::collections::HashMap;
use std::convert::Infallible;

use alloy_primitives::{keccak256, Address, Bytes, B256, U256};
use ubt_spec::{AccountWrites, StateTree};

/// Tree-key reads (EIP-7864 keys, see `ubt_spec::key`).
///
/// The executor asks for an account's BasicData and CodeHash leaves in one
/// [`StateSource::get_many`] call and for each storage slot with
/// [`StateSource::get`], so a store can batch or prefetch.
pub trait StateSource {
    /// The error a read can fail with.
    type Error: std::error::Error + Send + Sync + 'static;

    /// The value at a tree key, if present.
    fn get(&mut self, key: &B256) -> Result<Option<B256>, Self::Error>;

    /// The values at several tree keys, in order. Loops over
    /// [`StateSource::get`] unless the source does better.
    fn get_many(&mut self, keys: &[B256]) -> Result<Vec<Option<B256>>, Self::Error> {
        keys.iter().map(|key| self.get(key)).collect()
    }

    /// The value at a tree key of the account at `owner` (derived from its
    /// address): what a source that files values by account (ubt's flat
    /// index) serves from the account's own leaves. Defaults to
    /// [`StateSource::get`].
    fn get_account_value(
        &mut self,
        owner: &Address,
        key: &B256,
    ) -> Result<Option<B256>, Self::Error> {
        let _ = owner;
        self.get(key)
    }

    /// Several values of the account at `owner`, in order. Defaults to
    /// [`StateSource::get_many`].
    fn get_account_values(
        &mut self,
        owner: &Address,
        keys: &[B256],
    ) -> Result<Vec<Option<B256>>, Self::Error> {
        let _ = owner;
        self.get_many(keys)
    }
}

impl<S: StateSource + ?Sized> StateSource for &mut S {
    type Error = S::Error;

    fn get(&mut self, key: &B256) -> Result<Option<B256>, Self::Error> {
        (**self).get(key)
    }

    fn get_many(&mut self, keys: &[B256]) -> Result<Vec<Option<B256>>, Self::Error> {
        (**self).get_many(keys)
    }

    fn get_account_value(
        &mut self,
        owner: &Address,
        key: &B256,
    ) -> Result<Option<B256>, Self::Error> {
        (**self).get_account_value(owner, key)
    }

    fn get_account_values(
        &mut self,
        owner: &Address,
        keys: &[B256],
    ) -> Result<Vec<Option<B256>>, Self::Error> {
        (**self).get_account_values(owner, keys)
    }
}

/// Contract code by its keccak256 hash. Code is kept outside the trie for
/// execution; the caller fills it from the state generator, and the
/// executor adds code that transactions create.
#[derive(Clone, Debug, Default)]
pub struct CodeStore(HashMap<B256, Bytes>);

impl CodeStore {
    /// An empty store.
    pub fn new() -> Self {
        Self::default()
    }

    /// Adds `code` and returns its hash.
    pub fn insert(&mut self, code: Bytes) -> B256 {
        let hash = keccak256(&code);
        self.0.insert(hash, code);
        hash
    }

    /// The code with hash `hash`.
    pub fn get(&self, hash: &B256) -> Option<&Bytes> {
        self.0.get(hash)
    }

    /// Number of distinct codes.
    pub fn len(&self) -> usize {
        self.0.len()
    }

    /// True when the store holds no code.
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }
}

impl From<HashMap<B256, Bytes>> for CodeStore {
    fn from(map: HashMap<B256, Bytes>) -> Self {
        Self(map)
    }
}

/// An in-memory state source over any [`StateTree`]
/// (`ubt_spec::ReferenceTree`, `ubt_spec::FastTree`), for tests and small
/// runs. Reads never fail.
#[derive(Clone, Debug, Default)]
pub struct MemorySource<T> {
    tree: T,
}

impl<T: StateTree> MemorySource<T> {
    /// Wraps a tree.
    pub fn new(tree: T) -> Self {
        Self { tree }
    }

    /// The tree.
    pub fn tree(&self) -> &T {
        &self.tree
    }

    /// The tree, to change.
    pub fn tree_mut(&mut self) -> &mut T {
        &mut self.tree
    }

    /// Unwraps the tree.
    pub fn into_tree(self) -> T {
        self.tree
    }

    /// Writes an account as a state record does (geth semantics: BasicData,
    /// CodeHash and, for code, its chunks) and adds its code to `codes`.
    pub fn put_account(
        &mut self,
        codes: &mut CodeStore,
        address: &Address,
        nonce: u64,
        balance: &U256,
        code: &Bytes,
    ) {
        let code_hash = codes.insert(code.clone());
        // geth stores the size as a u32; code near 4 GiB cannot be held.
        #[allow(clippy::expect_used)]
        let code_size = u32::try_from(code.len()).expect("code under 4 GiB");
        self.tree
            .update_account(address, nonce, balance, &code_hash, code_size);
        if !code.is_empty() {
            self.tree.update_code(address, code);
        }
    }

    /// Writes storage slot `slot` of `address`.
    pub fn put_slot(&mut self, address: &Address, slot: &U256, value: &B256) {
        self.tree.update_storage(address, slot, value.as_slice());
    }

    /// Applies a block's tree writes (`BlockOutcome::tree_writes`).
    pub fn apply(&mut self, writes: &[(B256, B256)]) {
        self.tree.insert_batch(writes);
    }
}

impl<T: StateTree> StateSource for MemorySource<T> {
    type Error = Infallible;

    fn get(&mut self, key: &B256) -> Result<Option<B256>, Infallible> {
        Ok(self.tree.get(key))
    }
}
