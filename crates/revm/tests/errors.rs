// Test code: a failed unwrap is a failed test, and casts narrow test data.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::cast_possible_truncation
)]

//! The error paths: code asked for by a hash not read, block hashes not
//! provided, a snapshot whose root was reverted away, changes applied on
//! the wrong parent, and accounts whose code cannot be read back.

mod common;

use std::collections::HashMap;

use alloy_primitives::{keccak256, Address, Bytes, B256, U256};
use common::code::{hasher, inspect, store};
use common::scenario::{world, COINBASE, HASHER, SENDER, STORE};
use common::{open, run_block, seed_batch, tx, TempDir, SPEC};
use revm::context::result::EVMError;
use revm::database_interface::WrapDatabaseRef;
use revm::primitives::KECCAK_EMPTY;
use revm::{DatabaseRef, ExecuteEvm};
use ubt_engine::{Account, AccountBatch, Db};
use ubt_revm::{BlockContext, Error, UbtState};

fn seeded(dir: &TempDir) -> Db {
    let mut db = open(dir);
    db.apply_accounts(&seed_batch(&world())).unwrap();
    db
}

#[test]
fn code_is_served_by_hash_only_once_read_through_an_account() {
    let dir = TempDir::new("code-hash");
    let db = seeded(&dir);
    let state = UbtState::new(db.reader(&db.root()).unwrap());
    let hash = keccak256(store());
    assert!(matches!(
        state.code_by_hash_ref(hash),
        Err(Error::UnknownCodeHash(h)) if h == hash
    ));
    let info = state.basic_ref(STORE).unwrap().unwrap();
    assert_eq!(info.code_hash, hash);
    assert_eq!(
        state.code_by_hash_ref(hash).unwrap().original_bytes(),
        store()
    );
    assert!(state.code_by_hash_ref(KECCAK_EMPTY).unwrap().is_empty());
    let unknown = B256::repeat_byte(7);
    assert!(matches!(
        state.code_by_hash_ref(unknown),
        Err(Error::UnknownCodeHash(h)) if h == unknown
    ));
}

#[test]
fn block_hashes_come_from_the_caller_and_unknown_numbers_fail() {
    let dir = TempDir::new("block-hash");
    let db = seeded(&dir);
    let reader = db.reader(&db.root()).unwrap();

    let without = UbtState::new(reader.clone());
    assert!(matches!(
        without.block_hash_ref(5),
        Err(Error::UnknownBlockHash(5))
    ));

    let known = B256::repeat_byte(0x99);
    let map = HashMap::from([(99u64, known)]);
    let state = UbtState::new(reader).with_block_hashes(move |number| map.get(&number).copied());
    assert_eq!(state.block_hash_ref(99).unwrap(), known);
    assert!(matches!(
        state.block_hash_ref(98),
        Err(Error::UnknownBlockHash(98))
    ));

    // Inside revm the error stops the transaction as a database error.
    let mut evm_tx = tx(SENDER, 0, Some(HASHER), U256::ZERO, Bytes::new());
    evm_tx.data = Bytes::from(U256::from(98u64).to_be_bytes::<32>());
    let mut evm = revm_over(&state);
    match evm.transact_one(evm_tx) {
        Err(EVMError::Database(Error::UnknownBlockHash(98))) => {}
        other => panic!("expected the unknown block hash, got {other:?}"),
    }
    assert_eq!(
        hasher(),
        state
            .basic_ref(HASHER)
            .unwrap()
            .unwrap()
            .code
            .unwrap()
            .original_bytes()
    );
}

/// revm over `state`, as the tests' blocks run.
fn revm_over(
    state: &UbtState,
) -> revm::MainnetEvm<revm::handler::MainnetContext<WrapDatabaseRef<&UbtState>>> {
    use revm::{Context, MainBuilder, MainContext};
    Context::mainnet()
        .with_db(WrapDatabaseRef(state))
        .modify_cfg_chained(|cfg| cfg.spec = SPEC)
        .modify_block_chained(|block| block.number = U256::from(common::BLOCK_NUMBER))
        .build_mainnet()
}

#[test]
fn a_snapshot_whose_root_was_reverted_fails_its_reads() {
    let dir = TempDir::new("reverted");
    let mut db = seeded(&dir);
    let parent = db.root();
    let mut block = AccountBatch::new();
    block.set_storage(STORE, U256::from(1u64), B256::with_last_byte(3));
    let child = db.apply_accounts(&block).unwrap();
    let state = UbtState::new(db.reader(&child).unwrap());
    assert_eq!(
        state.storage_ref(STORE, U256::from(1u64)).unwrap(),
        U256::from(3u64)
    );

    db.revert(&parent).unwrap();
    assert!(matches!(
        state.basic_ref(SENDER),
        Err(Error::Db(ubt_engine::Error::SnapshotReverted(root))) if root == child.0
    ));
    assert!(matches!(
        state.storage_ref(STORE, U256::from(2u64)),
        Err(Error::Db(ubt_engine::Error::SnapshotReverted(_)))
    ));
    // A root that is gone cannot be opened either.
    assert!(matches!(
        db.reader(&child),
        Err(ubt_engine::Error::UnknownRoot(_))
    ));
}

#[test]
fn changes_apply_only_on_the_root_they_were_executed_at() {
    let dir = TempDir::new("not-at-tip");
    let mut db = seeded(&dir);
    let parent = db.root();
    let state = UbtState::new(db.reader(&parent).unwrap());
    let transfer = tx(SENDER, 0, Some(COINBASE), U256::from(1u64), Bytes::new());
    let (_, evm_state) = run_block(WrapDatabaseRef(&state), COINBASE, &[transfer]);

    let mut other = AccountBatch::new();
    other.set_storage(STORE, U256::from(9u64), B256::with_last_byte(1));
    let tip = db.apply_accounts(&other).unwrap();
    let context = BlockContext::new(COINBASE, SPEC);
    match state.apply_changes(&mut db, &evm_state, &context) {
        Err(Error::NotAtTip {
            executed_at,
            tip: t,
        }) => {
            assert_eq!((executed_at, t), (parent, tip));
        }
        other => panic!("expected NotAtTip, got {other:?}"),
    }
    assert_eq!(db.root(), tip);

    db.revert(&parent).unwrap();
    let root = state.apply_changes(&mut db, &evm_state, &context).unwrap();
    assert_eq!(db.root(), root);
    assert_ne!(root, parent);
}

/// An account at `address` whose header says `code_size` and `code_hash`
/// over chunks of `code`.
fn inconsistent(address: Address, code_size: u32, code_hash: B256, code: Bytes) -> AccountBatch {
    let mut batch = AccountBatch::new();
    let account = Account {
        nonce: 1,
        balance: U256::ZERO,
        code_size,
        code_hash,
    };
    batch.set_account(address, account).set_code(address, code);
    batch
}

#[test]
fn code_that_does_not_read_back_as_its_hash_is_an_error() {
    let dir = TempDir::new("bad-code");
    let mut db = seeded(&dir);
    let (wrong, zero_size, missing, invalid) = (
        Address::repeat_byte(0xa1),
        Address::repeat_byte(0xa2),
        Address::repeat_byte(0xa3),
        Address::repeat_byte(0xa4),
    );
    let store_hash = keccak256(store());
    let delegation = Bytes::from_static(&[0xef, 0x01, 0x00, 0x42]);
    for batch in [
        // Chunks of other code than the hash says.
        inconsistent(wrong, inspect().len() as u32, store_hash, inspect()),
        // geth's code size of 0 for a contract whose code it had not loaded.
        inconsistent(zero_size, 0, store_hash, store()),
        // A code size no chunks back.
        inconsistent(missing, 40, store_hash, Bytes::new()),
        // An EIP-7702 marker without a valid delegation.
        inconsistent(invalid, 4, keccak256(&delegation), delegation),
    ] {
        db.apply_accounts(&batch).unwrap();
    }
    let state = UbtState::new(db.reader(&db.root()).unwrap());
    assert!(matches!(
        state.basic_ref(wrong),
        Err(Error::CodeHashMismatch { address, code_hash, computed })
            if address == wrong && code_hash == store_hash && computed == keccak256(inspect())
    ));
    assert!(matches!(
        state.basic_ref(missing),
        Err(Error::MissingCodeChunk(chunk)) if chunk.address == missing && chunk.chunk_id == 0
    ));
    assert!(matches!(
        state.basic_ref(invalid),
        Err(Error::InvalidBytecode { address, .. }) if address == invalid
    ));
    // geth's code size of 0: the code is recovered from the chunks by its
    // hash (no other account has served that code yet: the state serves
    // code by hash once read, to `missing` too from then on).
    let info = state.basic_ref(zero_size).unwrap().unwrap();
    assert_eq!(info.code.unwrap().original_bytes(), store());
}
