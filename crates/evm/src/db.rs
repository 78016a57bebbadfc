//! `revm::Database` over a [`StateSource`] for one block: decodes accounts
//! from their BasicData and CodeHash leaves and slots from their storage
//! keys, times every read, keeps each account's and slot's value as it was
//! before the block (so each is read once per block), and records the
//! order of reads.

use std::collections::HashMap;
use std::time::{Duration, Instant};

use alloy_primitives::{keccak256, Address, B256, U256};
use revm::bytecode::Bytecode;
use revm::database_interface::DBErrorMarker;
use revm::primitives::KECCAK_EMPTY;
use revm::state::AccountInfo;
use revm::Database;
use ubt_spec::account::read_account;
use ubt_spec::key::storage_slot_key;
use ubt_spec::Account;

use crate::record::ReadRecord;
use crate::state::{CodeStore, StateSource};

/// An account as it was before the block.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct PreAccount {
    pub nonce: u64,
    pub balance: U256,
    pub code_hash: B256,
    pub code_size: u32,
}

/// A state source's error, or missing code, as revm sees it.
#[derive(Debug, thiserror::Error)]
pub enum ReadError<E: std::error::Error + 'static> {
    /// The state source failed.
    #[error("state read failed: {0}")]
    Source(#[source] E),
    /// An account's code hash has no code in the code store.
    #[error("no code with hash {0} in the code store")]
    MissingCode(B256),
}

impl<E: std::error::Error + Send + Sync + 'static> DBErrorMarker for ReadError<E> {}

/// The per-block database revm executes against.
pub(crate) struct BlockDb<'a, S: StateSource> {
    source: &'a mut S,
    codes: &'a CodeStore,
    /// Accounts read this block, as they were before it (`None`: absent).
    pub accounts: HashMap<Address, Option<PreAccount>>,
    /// Slots read this block, as they were before it.
    pub slots: HashMap<(Address, U256), U256>,
    /// Every read, first access only, in order.
    pub reads: Vec<ReadRecord>,
    /// Time spent inside state reads (source and code store).
    pub read_time: Duration,
}

impl<'a, S: StateSource> BlockDb<'a, S> {
    pub fn new(source: &'a mut S, codes: &'a CodeStore) -> Self {
        Self {
            source,
            codes,
            accounts: HashMap::new(),
            slots: HashMap::new(),
            reads: Vec::new(),
            read_time: Duration::ZERO,
        }
    }

    /// The account's pre-block state, reading it if this block has not.
    pub fn pre_account(
        &mut self,
        address: Address,
    ) -> Result<Option<PreAccount>, ReadError<S::Error>> {
        if let Some(account) = self.accounts.get(&address) {
            return Ok(*account);
        }
        let started = Instant::now();
        let header = read_account(&address, |keys| {
            self.source.get_account_values(&address, keys)
        });
        self.read_time += started.elapsed();
        let account = header.map_err(ReadError::Source)?.map(pre_account);
        self.accounts.insert(address, account);
        self.reads.push(ReadRecord::Account(address));
        Ok(account)
    }

    fn code(&self, hash: B256) -> Result<Bytecode, ReadError<S::Error>> {
        if hash == KECCAK_EMPTY || hash == B256::ZERO {
            return Ok(Bytecode::default());
        }
        self.codes
            .get(&hash)
            .map(|code| Bytecode::new_raw(code.clone()))
            .ok_or(ReadError::MissingCode(hash))
    }
}

/// The EVM's view of an account read with geth's `GetAccount`
/// ([`read_account`]): a zero code hash (a header written without one)
/// is the empty code's.
fn pre_account(account: Account) -> PreAccount {
    let code_hash = if account.code_hash == B256::ZERO {
        KECCAK_EMPTY
    } else {
        account.code_hash
    };
    PreAccount {
        nonce: account.nonce,
        balance: account.balance,
        code_hash,
        code_size: account.code_size,
    }
}

impl<S: StateSource> Database for BlockDb<'_, S> {
    type Error = ReadError<S::Error>;

    fn basic(&mut self, address: Address) -> Result<Option<AccountInfo>, Self::Error> {
        let Some(account) = self.pre_account(address)? else {
            return Ok(None);
        };
        let started = Instant::now();
        let code = self.code(account.code_hash);
        self.read_time += started.elapsed();
        Ok(Some(AccountInfo::new(
            account.balance,
            account.nonce,
            account.code_hash,
            code?,
        )))
    }

    fn code_by_hash(&mut self, code_hash: B256) -> Result<Bytecode, Self::Error> {
        let started = Instant::now();
        let code = self.code(code_hash);
        self.read_time += started.elapsed();
        code
    }

    fn storage(&mut self, address: Address, index: U256) -> Result<U256, Self::Error> {
        if let Some(value) = self.slots.get(&(address, index)) {
            return Ok(*value);
        }
        // Timed from the key derivation on: it is part of a tree read.
        let started = Instant::now();
        let leaf = self
            .source
            .get_account_value(&address, &storage_slot_key(&address, &index));
        self.read_time += started.elapsed();
        let value = leaf
            .map_err(ReadError::Source)?
            .map_or(U256::ZERO, |word| U256::from_be_bytes(word.0));
        self.slots.insert((address, index), value);
        self.reads.push(ReadRecord::Slot(address, index));
        Ok(value)
    }

    /// No chain history here: a fixed stand-in, `keccak256(number)`.
    fn block_hash(&mut self, number: u64) -> Result<B256, Self::Error> {
        Ok(keccak256(number.to_be_bytes()))
    }
}
