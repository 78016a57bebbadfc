// Test code: a failed unwrap is a failed test, and casts narrow test data.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::cast_possible_truncation
)]

//! The same world seeded into ubt and into revm's in-memory
//! `CacheDB<EmptyDB>`, the same blocks run over both: every transaction's
//! result and the state after every block read the same. On ubt each
//! block runs over a snapshot and its changes are applied as one block;
//! on the in-memory database each transaction is committed on its own.

mod common;

use common::scenario::{addresses, blocks, created, created_and_destroyed, slots, world};
use common::scenario::{COINBASE, STORE};
use common::{open, run_block_committing, run_ubt_block, seed_batch, seed_cache};
use common::{state_at_tip, world_view, TempDir};
use revm::context::result::{ExecutionResult, Output};
use revm::primitives::U256;
use revm::DatabaseRef;

#[test]
fn blocks_run_over_ubt_and_over_revms_memory_database_agree() {
    let dir = TempDir::new("differential");
    let mut db = open(&dir);
    db.apply_accounts(&seed_batch(&world())).unwrap();
    let mut cache = seed_cache(&world());
    let (addresses, slots) = (addresses(), slots());
    assert_eq!(
        world_view(&state_at_tip(&db), &addresses, &slots),
        world_view(&cache, &addresses, &slots),
        "seeded worlds differ"
    );

    for (number, txs) in blocks().iter().enumerate() {
        let (ubt_results, _, root) = run_ubt_block(&mut db, COINBASE, txs);
        let memory_results = run_block_committing(&mut cache, COINBASE, txs);
        assert_eq!(ubt_results, memory_results, "block {number}: results");
        for (index, result) in ubt_results.iter().enumerate() {
            assert!(result.is_success(), "block {number} tx {index}: {result:?}");
        }
        assert_eq!(db.root(), root);
        assert_eq!(
            world_view(&state_at_tip(&db), &addresses, &slots),
            world_view(&cache, &addresses, &slots),
            "block {number}: state after"
        );
    }
}

#[test]
fn the_blocks_do_what_they_claim() {
    // Guards the scenario itself: the differential test is only as good
    // as what its blocks exercise.
    let dir = TempDir::new("scenario");
    let mut db = open(&dir);
    db.apply_accounts(&seed_batch(&world())).unwrap();
    let blocks = blocks();
    let (results1, _, _) = run_ubt_block(&mut db, COINBASE, &blocks[0]);
    let deployed = match &results1[5] {
        ExecutionResult::Success {
            output: Output::Create(code, Some(address)),
            ..
        } => {
            assert_eq!(*address, created());
            code.clone()
        }
        other => panic!("creation failed: {other:?}"),
    };
    assert_eq!(deployed, common::code::store_variant());
    let (results2, _, _) = run_ubt_block(&mut db, COINBASE, &blocks[1]);
    // The inspector returns the created contract's code, read back from
    // its chunks; the hasher the provided block hash.
    assert_eq!(results2[4].output().unwrap(), &deployed);
    assert_eq!(results2[5].output().unwrap(), &common::code::store());
    let hash = common::block_hash(99).unwrap();
    assert_eq!(results2[6].output().unwrap().as_ref(), hash.as_slice());
    let (_, batch3, _) = run_ubt_block(&mut db, COINBASE, &blocks[2]);
    assert!(!batch3.is_empty());
    let state = state_at_tip(&db);
    assert_eq!(state.storage_ref(STORE, U256::MAX).unwrap(), U256::ZERO);
    assert_eq!(
        state.storage_ref(created(), U256::from(1u64)).unwrap(),
        U256::from(0x2bu64)
    );
    assert_eq!(state.basic_ref(created_and_destroyed()).unwrap(), None);
}
