//! [`UbtState`]: revm's `DatabaseRef` (and `Database`) over a snapshot of a
//! ubt database, which remembers what it served: the accounts and slots as
//! they were at the snapshot's root (what a block's changes are compared
//! with) and the code it read, by hash.

use std::collections::HashMap;
use std::fmt;
use std::sync::{Mutex, MutexGuard};

use alloy_primitives::{keccak256, Address, Bytes, B256, U256};
use revm::primitives::KECCAK_EMPTY;
use revm::state::{AccountInfo, Bytecode, EvmState};
use revm::{Database, DatabaseRef};
use ubt_engine::{Account, AccountBatch, CodeError, Db, Reader, Root};

use crate::changes::{self, BlockContext};
use crate::Error;

/// Where block hashes come from.
type BlockHashes = Box<dyn Fn(u64) -> Option<B256> + Send + Sync>;

/// What a state has read, keyed as revm asks.
#[derive(Default)]
struct Served {
    /// Accounts as the snapshot holds them (`None`: absent).
    accounts: HashMap<Address, Option<Account>>,
    /// Slots as the snapshot holds them (absent: zero).
    slots: HashMap<(Address, U256), U256>,
    /// Code read through accounts, by hash.
    codes: HashMap<B256, Bytecode>,
}

/// revm's view of a ubt database at one root: [`DatabaseRef`] over a
/// [`Reader`], and [`Database`] by delegation (or wrap a reference in
/// revm's `WrapDatabaseRef`).
///
/// * `basic_ref` reads the account as geth's `GetAccount` does
///   ([`Reader::account`]: absent when both header leaves are absent or
///   both zero) with its code reassembled from its chunks
///   ([`Reader::code`]) and checked against its code hash. A zero code
///   hash (a header written without one) reads as no code.
/// * `code_by_hash_ref` serves the code of accounts read so far; ubt keeps
///   code per account, not by hash, so any other hash is
///   [`Error::UnknownCodeHash`] (revm asks only when an account comes
///   without its code, which this state never returns).
/// * `storage_ref` reads the slot ([`Reader::storage`]); absent is zero.
/// * `block_hash_ref` answers from the function given to
///   [`UbtState::with_block_hashes`]: ubt stores no block hashes. A number
///   it does not know is [`Error::UnknownBlockHash`] (revm asks only for
///   the 256 blocks before the current one).
///
/// Every value served is remembered, so each account, slot and code is
/// read from the database once, and [`UbtState::changes`] compares a
/// block's final state with the values before it without reading them
/// again. The state is `Send + Sync`; reads from several threads share
/// what was read.
pub struct UbtState {
    reader: Reader,
    block_hashes: Option<BlockHashes>,
    served: Mutex<Served>,
}

// Shared across threads, as documented: checked at compile time.
const _: fn() = || {
    fn shared<T: Send + Sync>() {}
    shared::<UbtState>();
};

impl fmt::Debug for UbtState {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("UbtState")
            .field("root", &self.reader.root())
            .field("block_hashes", &self.block_hashes.is_some())
            .finish_non_exhaustive()
    }
}

impl UbtState {
    /// The state at the reader's root, without block hashes (every
    /// `BLOCKHASH` that reaches the database fails with
    /// [`Error::UnknownBlockHash`]).
    pub fn new(reader: Reader) -> UbtState {
        UbtState {
            reader,
            block_hashes: None,
            served: Mutex::new(Served::default()),
        }
    }

    /// Answers `block_hash_ref` with `hashes(number)`; `None` is
    /// [`Error::UnknownBlockHash`]. A map works as
    /// `move |number| map.get(&number).copied()`.
    pub fn with_block_hashes<F>(mut self, hashes: F) -> UbtState
    where
        F: Fn(u64) -> Option<B256> + Send + Sync + 'static,
    {
        self.block_hashes = Some(Box::new(hashes));
        self
    }

    /// The root of the snapshot the state reads.
    pub fn root(&self) -> Root {
        self.reader.root()
    }

    /// The changes of a block executed over this state, as one
    /// [`AccountBatch`] with go-ethereum's semantics: `state` is revm's
    /// final state of the block (one transaction's, or several run with
    /// `transact_one` and taken with `finalize`); the values before the
    /// block are this state's. The rules are the crate's
    /// ("From revm's state to a block", in the crate documentation).
    pub fn changes(&self, state: &EvmState, block: &BlockContext) -> Result<AccountBatch, Error> {
        changes::collect(self, state, block)
    }

    /// Applies the block's [`changes`](UbtState::changes) to `db` with
    /// [`Db::apply_accounts`] (one layer, not yet durable) and returns the
    /// new root. `db`'s tip must be this state's root
    /// ([`Error::NotAtTip`] otherwise: the changes are relative to it).
    pub fn apply_changes(
        &self,
        db: &mut Db,
        state: &EvmState,
        block: &BlockContext,
    ) -> Result<Root, Error> {
        let tip = db.root();
        if tip != self.root() {
            return Err(Error::NotAtTip {
                executed_at: self.root(),
                tip,
            });
        }
        let batch = self.changes(state, block)?;
        Ok(db.apply_accounts(&batch)?)
    }

    /// The account at `address` before the block, read once.
    pub(crate) fn account(&self, address: &Address) -> Result<Option<Account>, Error> {
        if let Some(account) = self.served().accounts.get(address) {
            return Ok(*account);
        }
        let account = self.reader.account(address)?;
        self.served().accounts.insert(*address, account);
        Ok(account)
    }

    /// The value of slot `slot` of `address` before the block, read once.
    pub(crate) fn slot(&self, address: &Address, slot: &U256) -> Result<U256, Error> {
        if let Some(value) = self.served().slots.get(&(*address, *slot)) {
            return Ok(*value);
        }
        let value = self
            .reader
            .storage(address, slot)?
            .map_or(U256::ZERO, |word| U256::from_be_bytes(word.0));
        self.served().slots.insert((*address, *slot), value);
        Ok(value)
    }

    /// The code with hash `code_hash` if this state has read it.
    pub(crate) fn known_code(&self, code_hash: &B256) -> Option<Bytecode> {
        if *code_hash == KECCAK_EMPTY || code_hash.is_zero() {
            return Some(Bytecode::default());
        }
        self.served().codes.get(code_hash).cloned()
    }

    /// The code of `account` (at `address`), from what was read or else
    /// from its chunks, checked against its hash (recovered by the hash
    /// when go-ethereum wrote code size 0: `Reader::code_matching_hash`).
    fn account_code(&self, address: &Address, account: &Account) -> Result<Bytecode, Error> {
        let code_hash = effective_code_hash(account);
        if let Some(code) = self.known_code(&code_hash) {
            return Ok(code);
        }
        let bytes = self
            .reader
            .code_matching_hash(address)
            .map_err(code_error)?;
        let bytes = bytes.unwrap_or_default();
        let computed = keccak256(&bytes);
        if computed != code_hash {
            return Err(Error::CodeHashMismatch {
                address: *address,
                code_hash,
                computed,
            });
        }
        let code = bytecode(address, bytes)?;
        self.served().codes.insert(code_hash, code.clone());
        Ok(code)
    }

    /// The record of what was served. A panic while it was held cannot
    /// leave it inconsistent (every update is one insert), so a poisoned
    /// lock is taken as is.
    fn served(&self) -> MutexGuard<'_, Served> {
        self.served.lock().unwrap_or_else(|e| e.into_inner())
    }
}

/// The code hash revm sees for `account`: a zero hash (a header written
/// without one) is the empty code's.
pub(crate) fn effective_code_hash(account: &Account) -> B256 {
    if account.code_hash.is_zero() {
        KECCAK_EMPTY
    } else {
        account.code_hash
    }
}

/// The code-read error as this crate's.
fn code_error(error: CodeError) -> Error {
    match error {
        CodeError::Source(error) => Error::Db(error),
        CodeError::MissingChunk(missing) => Error::MissingCodeChunk(missing),
    }
}

/// revm's bytecode for raw code read from the tree.
fn bytecode(address: &Address, bytes: Bytes) -> Result<Bytecode, Error> {
    Bytecode::new_raw_checked(bytes).map_err(|source| Error::InvalidBytecode {
        address: *address,
        source,
    })
}

impl DatabaseRef for UbtState {
    type Error = Error;

    fn basic_ref(&self, address: Address) -> Result<Option<AccountInfo>, Error> {
        let Some(account) = self.account(&address)? else {
            return Ok(None);
        };
        let code = self.account_code(&address, &account)?;
        Ok(Some(AccountInfo::new(
            account.balance,
            account.nonce,
            effective_code_hash(&account),
            code,
        )))
    }

    fn code_by_hash_ref(&self, code_hash: B256) -> Result<Bytecode, Error> {
        self.known_code(&code_hash)
            .ok_or(Error::UnknownCodeHash(code_hash))
    }

    fn storage_ref(&self, address: Address, index: U256) -> Result<U256, Error> {
        self.slot(&address, &index)
    }

    fn block_hash_ref(&self, number: u64) -> Result<B256, Error> {
        self.block_hashes
            .as_ref()
            .and_then(|hashes| hashes(number))
            .ok_or(Error::UnknownBlockHash(number))
    }
}

impl Database for UbtState {
    type Error = Error;

    fn basic(&mut self, address: Address) -> Result<Option<AccountInfo>, Error> {
        self.basic_ref(address)
    }

    fn code_by_hash(&mut self, code_hash: B256) -> Result<Bytecode, Error> {
        self.code_by_hash_ref(code_hash)
    }

    fn storage(&mut self, address: Address, index: U256) -> Result<U256, Error> {
        self.storage_ref(address, index)
    }

    fn block_hash(&mut self, number: u64) -> Result<B256, Error> {
        self.block_hash_ref(number)
    }
}
