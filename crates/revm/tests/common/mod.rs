//! Shared setup: a temporary database, a seeded world (the same accounts
//! in ubt and in revm's in-memory `CacheDB`), blocks of transactions run
//! with revm over either, and comparable views of the state.

#![allow(dead_code)]

pub mod code;
pub mod scenario;

use std::path::PathBuf;
use std::sync::atomic::{AtomicU32, Ordering};

use alloy_primitives::{keccak256, Address, Bytes, B256, U256};
use revm::context::result::ExecutionResult;
use revm::context::TxEnv;
use revm::database::{CacheDB, EmptyDB};
use revm::database_interface::WrapDatabaseRef;
use revm::primitives::hardfork::SpecId;
use revm::primitives::{TxKind, KECCAK_EMPTY};
use revm::state::{AccountInfo, Bytecode, EvmState};
use revm::{
    Context, Database, DatabaseRef, ExecuteCommitEvm, ExecuteEvm, MainBuilder, MainContext,
};
use ubt_engine::{Account, AccountBatch, Db, Options, SyncMode};
use ubt_revm::{BlockContext, UbtState};

/// The hardfork every block runs under.
pub const SPEC: SpecId = SpecId::OSAKA;
/// The number of every block (BLOCKHASH reaches back 256 from it).
pub const BLOCK_NUMBER: u64 = 100;
/// Base fee of every block, and the gas price of every transaction.
pub const BASE_FEE: u64 = 7;
pub const GAS_PRICE: u128 = 10;

/// A fresh directory under the system temp dir, removed on drop.
pub struct TempDir(pub PathBuf);

impl TempDir {
    pub fn new(label: &str) -> TempDir {
        static COUNTER: AtomicU32 = AtomicU32::new(0);
        let n = COUNTER.fetch_add(1, Ordering::Relaxed);
        let path =
            std::env::temp_dir().join(format!("ubt-revm-{label}-test-{}-{n}", std::process::id()));
        let _ = std::fs::remove_dir_all(&path);
        TempDir(path)
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// A database in `dir`.
pub fn open(dir: &TempDir) -> Db {
    let options = Options {
        sync: SyncMode::Never,
        ..Options::default()
    };
    Db::open(&dir.0, options).unwrap()
}

/// One account of the seeded world.
#[derive(Clone, Debug)]
pub struct Seed {
    pub address: Address,
    pub nonce: u64,
    pub balance: U256,
    pub code: Bytes,
    pub storage: Vec<(U256, U256)>,
}

impl Seed {
    /// An account with no code and no storage.
    pub fn eoa(address: Address, balance: U256) -> Seed {
        Seed {
            address,
            nonce: 0,
            balance,
            code: Bytes::new(),
            storage: Vec::new(),
        }
    }

    /// A contract with `code` and `storage`.
    pub fn contract(address: Address, code: Bytes, storage: Vec<(U256, U256)>) -> Seed {
        Seed {
            address,
            nonce: 1,
            balance: U256::ZERO,
            code,
            storage,
        }
    }

    fn code_hash(&self) -> B256 {
        if self.code.is_empty() {
            KECCAK_EMPTY
        } else {
            keccak256(&self.code)
        }
    }
}

/// The world as one ubt block, with geth's writes for each account.
pub fn seed_batch(world: &[Seed]) -> AccountBatch {
    let mut batch = AccountBatch::new();
    for seed in world {
        batch.set_account(
            seed.address,
            Account {
                nonce: seed.nonce,
                balance: seed.balance,
                code_size: u32::try_from(seed.code.len()).unwrap(),
                code_hash: seed.code_hash(),
            },
        );
        batch.set_code(seed.address, seed.code.clone());
        for (slot, value) in &seed.storage {
            batch.set_storage(seed.address, *slot, B256::from(*value));
        }
    }
    batch
}

/// The world in revm's in-memory database.
pub fn seed_cache(world: &[Seed]) -> CacheDB<EmptyDB> {
    let mut cache = CacheDB::new(EmptyDB::default());
    for seed in world {
        let info = AccountInfo::new(
            seed.balance,
            seed.nonce,
            seed.code_hash(),
            Bytecode::new_raw(seed.code.clone()),
        );
        cache.insert_account_info(seed.address, info);
        for (slot, value) in &seed.storage {
            cache
                .insert_account_storage(seed.address, *slot, *value)
                .unwrap();
        }
    }
    cache
}

/// The block hashes both databases answer: `EmptyDB`'s.
pub fn block_hash(number: u64) -> Option<B256> {
    Some(keccak256(number.to_string().as_bytes()))
}

/// A transaction at the tests' gas price.
pub fn tx(from: Address, nonce: u64, to: Option<Address>, value: U256, data: Bytes) -> TxEnv {
    TxEnv::builder()
        .caller(from)
        .nonce(nonce)
        .kind(to.map_or(TxKind::Create, TxKind::Call))
        .value(value)
        .data(data)
        .gas_limit(1_000_000)
        .gas_price(GAS_PRICE)
        .build_fill()
}

/// Runs `txs` as one block over `db` (each with `transact_one`) and
/// returns their results and revm's final state of the block.
pub fn run_block<DB>(
    db: DB,
    beneficiary: Address,
    txs: &[TxEnv],
) -> (Vec<ExecutionResult>, EvmState)
where
    DB: Database,
    DB::Error: std::fmt::Debug,
{
    let mut evm = Context::mainnet()
        .with_db(db)
        .modify_cfg_chained(|cfg| cfg.spec = SPEC)
        .modify_block_chained(|block| {
            block.number = U256::from(BLOCK_NUMBER);
            block.timestamp = U256::from(1_800_000_000u64);
            block.gas_limit = 30_000_000;
            block.basefee = BASE_FEE;
            block.beneficiary = beneficiary;
        })
        .build_mainnet();
    let results = txs
        .iter()
        .map(|tx| evm.transact_one(tx.clone()).unwrap())
        .collect();
    (results, evm.finalize())
}

/// Runs `txs` over the in-memory database, committing each transaction.
pub fn run_block_committing(
    cache: &mut CacheDB<EmptyDB>,
    beneficiary: Address,
    txs: &[TxEnv],
) -> Vec<ExecutionResult> {
    let mut evm = Context::mainnet()
        .with_db(cache)
        .modify_cfg_chained(|cfg| cfg.spec = SPEC)
        .modify_block_chained(|block| {
            block.number = U256::from(BLOCK_NUMBER);
            block.timestamp = U256::from(1_800_000_000u64);
            block.gas_limit = 30_000_000;
            block.basefee = BASE_FEE;
            block.beneficiary = beneficiary;
        })
        .build_mainnet();
    txs.iter()
        .map(|tx| evm.transact_commit(tx.clone()).unwrap())
        .collect()
}

/// A ubt state at the database's tip, with the tests' block hashes.
pub fn state_at_tip(db: &Db) -> UbtState {
    UbtState::new(db.reader(&db.root()).unwrap()).with_block_hashes(block_hash)
}

/// Runs `txs` as one block over ubt at the tip and applies its changes;
/// returns the results, the changes applied and the new root.
pub fn run_ubt_block(
    db: &mut Db,
    beneficiary: Address,
    txs: &[TxEnv],
) -> (Vec<ExecutionResult>, AccountBatch, ubt_engine::Root) {
    let state = state_at_tip(db);
    let (results, evm_state) = run_block(WrapDatabaseRef(&state), beneficiary, txs);
    let context = BlockContext::new(beneficiary, SPEC);
    let batch = state.changes(&evm_state, &context).unwrap();
    let root = state.apply_changes(db, &evm_state, &context).unwrap();
    (results, batch, root)
}

/// What an account looks like to revm: `None` for absent or empty (the
/// same after EIP-161), else nonce, balance, code hash and code.
pub type AccountView = Option<(u64, U256, B256, Bytes)>;

/// `address` as `db` shows it.
pub fn account_view<D: DatabaseRef>(db: &D, address: Address) -> AccountView
where
    D::Error: std::fmt::Debug,
{
    let info = db.basic_ref(address).unwrap()?;
    if info.is_empty() {
        return None;
    }
    let code = match &info.code {
        Some(code) => code.original_bytes(),
        None => db
            .code_by_hash_ref(info.code_hash)
            .unwrap()
            .original_bytes(),
    };
    Some((info.nonce, info.balance, info.code_hash, code))
}

/// The accounts and slots of `addresses` and `slots` as `db` shows them.
pub fn world_view<D: DatabaseRef>(
    db: &D,
    addresses: &[Address],
    slots: &[U256],
) -> Vec<(Address, AccountView, Vec<U256>)>
where
    D::Error: std::fmt::Debug,
{
    addresses
        .iter()
        .map(|address| {
            let values = slots
                .iter()
                .map(|slot| db.storage_ref(*address, *slot).unwrap())
                .collect();
            (*address, account_view(db, *address), values)
        })
        .collect()
}
