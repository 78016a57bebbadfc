//! Runs blocks of transactions with revm (Osaka rules) over a
//! [`StateSource`], and reports what each block read, wrote and cost.

use std::time::Instant;

use alloy_primitives::{Address, Bytes, B256, U256};
use revm::context::{Context, TxEnv};
use revm::context_interface::result::EVMError;
use revm::context_interface::transaction::{AccessList, AccessListItem};
use revm::primitives::hardfork::SpecId;
use revm::primitives::TxKind;
use revm::{ExecuteEvm, MainBuilder, MainContext};

use crate::changes;
use crate::db::{BlockDb, ReadError};
use crate::record::ReadRecord;
use crate::state::{CodeStore, StateSource};

/// Gas limit of every block the executor builds: high enough for any
/// workload; the transactions' own limits bound the work.
pub const BLOCK_GAS_LIMIT: u64 = 1_000_000_000;

/// A transaction to execute. Gas price is zero and the base fee is zero,
/// so no balance is needed and none changes.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TxSpec {
    /// Sender.
    pub from: Address,
    /// Callee; `None` creates a contract with `input` as init code.
    pub to: Option<Address>,
    /// Value sent.
    pub value: U256,
    /// Calldata (or init code).
    pub input: Bytes,
    /// Gas limit; any value (the executor lifts Osaka's per-transaction cap).
    pub gas_limit: u64,
    /// Addresses warmed by the EIP-2930 access list (no storage keys).
    pub access_list: Vec<Address>,
    /// Nonce; `None` takes the sender's next nonce.
    pub nonce: Option<u64>,
}

/// What one transaction did.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TxOutcome {
    /// Gas charged (after refunds).
    pub gas_used: u64,
    /// True unless it reverted or halted.
    pub success: bool,
    /// Return or revert data.
    pub output: Bytes,
}

/// What a block did and cost.
#[derive(Clone, Debug, Default)]
pub struct BlockOutcome {
    /// Gas of all transactions.
    pub gas_used: u64,
    /// Each transaction's result, in order (their count is the block's `txs`).
    pub txs: Vec<TxOutcome>,
    /// Wall time of executing the transactions, state reads excluded (µs).
    pub execution_us: u64,
    /// Time inside state reads: tree reads (key derivation included) and
    /// code lookups (µs).
    pub state_read_us: u64,
    /// Distinct accounts read (each is one BasicData + CodeHash read).
    pub accounts_read: usize,
    /// Distinct storage slots read.
    pub slots_read: usize,
    /// Accounts written (`a:` records).
    pub accounts_written: usize,
    /// Slots written (`s:` records).
    pub slots_written: usize,
    /// The block's tree-key writes with geth's semantics, in order (later
    /// entries win): apply them to the state before the next block.
    pub tree_writes: Vec<(B256, B256)>,
    /// The account each of `tree_writes` belongs to, parallel to it (what
    /// a store filing values by account needs).
    pub tree_owners: Vec<Address>,
    /// The block's `reads` in the workload format, in the order made.
    pub reads: Vec<String>,
    /// The block's `writes` in the workload format.
    pub writes: Vec<String>,
}

/// Why a block could not be executed.
#[derive(Debug, thiserror::Error)]
pub enum ExecError<E: std::error::Error + Send + Sync + 'static> {
    /// A state read failed.
    #[error(transparent)]
    Read(#[from] ReadError<E>),
    /// A transaction was invalid (wrong nonce, gas limit below intrinsic gas...).
    #[error("transaction {index} is invalid: {reason}")]
    InvalidTx {
        /// Index of the transaction in the block.
        index: usize,
        /// What revm rejected.
        reason: String,
    },
}

/// Executes blocks over a state source and a code store.
///
/// Each block reads through the source afresh (reads are deduplicated
/// within a block only); the caller applies each block's `tree_writes` to
/// the source before the next one. Code that blocks create is added to the
/// code store.
pub struct Executor<S: StateSource> {
    source: S,
    codes: CodeStore,
    coinbase: Option<Address>,
    block_number: u64,
}

impl<S: StateSource> Executor<S> {
    /// An executor reading `source`, with contract code from `codes`.
    pub fn new(source: S, codes: CodeStore) -> Self {
        Self {
            source,
            codes,
            coinbase: None,
            block_number: 0,
        }
    }

    /// Sets the blocks' beneficiary. By default it is the sender of each
    /// block's first transaction: an existing, non-empty account, so the
    /// zero fee payment changes nothing (an empty coinbase would be touched
    /// and deleted, EIP-161).
    pub fn with_coinbase(mut self, coinbase: Address) -> Self {
        self.coinbase = Some(coinbase);
        self
    }

    /// The state source.
    pub fn source(&self) -> &S {
        &self.source
    }

    /// The state source, to change (apply a block's `tree_writes`).
    pub fn source_mut(&mut self) -> &mut S {
        &mut self.source
    }

    /// The code store.
    pub fn codes(&self) -> &CodeStore {
        &self.codes
    }

    /// The state source and the code store (with the code blocks created).
    pub fn into_parts(self) -> (S, CodeStore) {
        (self.source, self.codes)
    }

    /// Number of blocks executed so far.
    pub fn blocks(&self) -> u64 {
        self.block_number
    }

    /// Executes one block: the transactions in order, against the state
    /// as of the source (plus the earlier transactions of this block).
    pub fn execute_block(&mut self, txs: &[TxSpec]) -> Result<BlockOutcome, ExecError<S::Error>> {
        self.block_number += 1;
        let number = self.block_number;
        let beneficiary = self
            .coinbase
            .or_else(|| txs.first().map(|tx| tx.from))
            .unwrap_or_default();
        let started = Instant::now();
        let mut db = BlockDb::new(&mut self.source, &self.codes);
        let envs = tx_envs(&mut db, txs)?;
        let mut evm = Context::mainnet()
            .with_db(&mut db)
            .modify_cfg_chained(|cfg| {
                cfg.spec = SpecId::OSAKA;
                cfg.tx_gas_limit_cap = Some(u64::MAX);
            })
            .modify_block_chained(|block| {
                block.number = U256::from(number);
                block.timestamp = U256::from(number);
                block.gas_limit = BLOCK_GAS_LIMIT;
                block.basefee = 0;
                block.beneficiary = beneficiary;
            })
            .build_mainnet();
        let mut outcomes = Vec::with_capacity(txs.len());
        for (index, env) in envs.into_iter().enumerate() {
            let result = evm.transact_one(env).map_err(|error| match error {
                EVMError::Database(error) => ExecError::Read(error),
                other => ExecError::InvalidTx {
                    index,
                    reason: other.to_string(),
                },
            })?;
            outcomes.push(TxOutcome {
                gas_used: result.tx_gas_used(),
                success: result.is_success(),
                output: result.output().cloned().unwrap_or_default(),
            });
        }
        let state = evm.finalize();
        drop(evm);
        let elapsed = started.elapsed();

        let read_time = db.read_time;
        let reads = std::mem::take(&mut db.reads);
        let (accounts, slots) = (db.accounts, db.slots);
        let changes = changes::collect(
            &state,
            |address| accounts.get(address).copied().flatten(),
            |address, slot| slots.get(&(*address, *slot)).copied().unwrap_or_default(),
            &mut self.codes,
        );
        Ok(BlockOutcome {
            gas_used: outcomes.iter().map(|tx| tx.gas_used).sum(),
            txs: outcomes,
            execution_us: saturating_u64(elapsed.saturating_sub(read_time).as_micros()),
            state_read_us: saturating_u64(read_time.as_micros()),
            accounts_read: accounts.len(),
            slots_read: slots.len(),
            accounts_written: changes.accounts_written,
            slots_written: changes.slots_written,
            tree_writes: changes.tree_writes,
            tree_owners: changes.tree_owners,
            reads: reads.iter().map(ReadRecord::to_string).collect(),
            writes: changes.writes.iter().map(ToString::to_string).collect(),
        })
    }
}

/// revm's transactions, with nonces filled in: a sender's next nonce is
/// its pre-block nonce plus its earlier transactions in this block. The
/// sender's account read this makes is the one revm would make first.
fn tx_envs<S: StateSource>(
    db: &mut BlockDb<'_, S>,
    txs: &[TxSpec],
) -> Result<Vec<TxEnv>, ExecError<S::Error>> {
    let mut sent = std::collections::HashMap::<Address, u64>::new();
    let mut envs = Vec::with_capacity(txs.len());
    for tx in txs {
        let nonce = match tx.nonce {
            Some(nonce) => nonce,
            None => {
                let base = db.pre_account(tx.from)?.map_or(0, |account| account.nonce);
                base + sent.get(&tx.from).copied().unwrap_or(0)
            }
        };
        *sent.entry(tx.from).or_default() += 1;
        let access_list = AccessList(
            tx.access_list
                .iter()
                .map(|address| AccessListItem {
                    address: *address,
                    storage_keys: Vec::new(),
                })
                .collect(),
        );
        envs.push(
            TxEnv::builder()
                .caller(tx.from)
                .kind(tx.to.map_or(TxKind::Create, TxKind::Call))
                .value(tx.value)
                .data(tx.input.clone())
                .gas_limit(tx.gas_limit)
                .gas_price(0)
                .nonce(nonce)
                .access_list(access_list)
                .build_fill(),
        );
    }
    Ok(envs)
}

/// Microseconds as a `u64`, saturating (584,000 years fit).
fn saturating_u64(micros: u128) -> u64 {
    u64::try_from(micros).unwrap_or(u64::MAX)
}
