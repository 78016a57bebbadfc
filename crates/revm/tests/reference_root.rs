// Test code: a failed unwrap is a failed test, and casts narrow test data.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::cast_possible_truncation
)]

//! A block's changes applied to ubt give the root of ubt-spec's reference
//! tree given the same `AccountBatch`, and read back as written.

mod common;

use alloy_primitives::B256;
use common::scenario::{blocks, world, COINBASE};
use common::{open, run_ubt_block, seed_batch, TempDir};
use ubt_engine::{AccountBatch, AccountOp, Db, Root};
use ubt_spec::{AccountWrites, ReferenceTree, StateTree};

/// Every operation of `batch` reads back from `db` and from `tree` as it
/// was written (a batch writes each account's header, code and slots at
/// most once).
fn assert_reads_back(db: &Db, tree: &ReferenceTree, batch: &AccountBatch) {
    for op in batch.ops() {
        match op {
            AccountOp::SetAccount { address, account } => {
                assert_eq!(db.account(address).unwrap(), Some(*account), "{op:?}");
                assert_eq!(tree.account(address), Some(*account), "{op:?}");
            }
            AccountOp::SetCode { address, code } => {
                assert_eq!(db.code(address).unwrap().as_ref(), Some(code), "{op:?}");
                assert_eq!(tree.code(address).unwrap().as_ref(), Some(code), "{op:?}");
            }
            AccountOp::SetStorage {
                address,
                slot,
                value,
            } => {
                assert_eq!(db.storage(address, slot).unwrap(), Some(*value), "{op:?}");
                assert_eq!(tree.storage(address, slot), Some(*value), "{op:?}");
            }
            AccountOp::DeleteStorage { address, slot } => {
                assert_eq!(db.storage(address, slot).unwrap(), Some(B256::ZERO));
                assert_eq!(tree.storage(address, slot), Some(B256::ZERO));
            }
            AccountOp::DeleteAccount { address } => {
                assert_eq!(db.account(address).unwrap(), None, "{op:?}");
                assert_eq!(tree.account(address), None, "{op:?}");
            }
        }
    }
}

#[test]
fn applied_changes_give_the_reference_trees_root_and_read_back() {
    let dir = TempDir::new("reference");
    let mut db = open(&dir);
    let mut tree = ReferenceTree::new();
    let seed = seed_batch(&world());
    let root = db.apply_accounts(&seed).unwrap();
    tree.apply_account_batch(&seed);
    assert_eq!(root, Root::from(tree.root()));

    let mut kinds = [0usize; 5];
    for (number, txs) in blocks().iter().enumerate() {
        let parent = db.root();
        let (_, batch, root) = run_ubt_block(&mut db, COINBASE, txs);
        assert_ne!(root, parent, "block {number} changed nothing");
        tree.apply_account_batch(&batch);
        assert_eq!(root, Root::from(tree.root()), "block {number}: root");
        assert_reads_back(&db, &tree, &batch);
        for op in batch.ops() {
            kinds[match op {
                AccountOp::SetAccount { .. } => 0,
                AccountOp::SetCode { code, .. } => {
                    assert!(!code.is_empty(), "empty code is no write");
                    1
                }
                AccountOp::SetStorage { .. } => 2,
                AccountOp::DeleteStorage { .. } => 3,
                AccountOp::DeleteAccount { .. } => 4,
            }] += 1;
        }
    }
    // The blocks exercise every kind of operation.
    assert!(kinds.iter().all(|&count| count > 0), "{kinds:?}");

    // And the state survives a commit and a reopen.
    let root = db.commit().unwrap();
    db.close().unwrap();
    let db = open(&dir);
    assert_eq!(db.root(), root);
    assert_eq!(root, Root::from(tree.root()));
}

#[test]
fn a_block_without_transactions_keeps_the_root() {
    let dir = TempDir::new("empty-block");
    let mut db = open(&dir);
    let parent = db.apply_accounts(&seed_batch(&world())).unwrap();
    let (results, batch, root) = run_ubt_block(&mut db, COINBASE, &[]);
    assert!(results.is_empty());
    assert!(batch.is_empty());
    assert_eq!(root, parent);
    // The next block goes on top as usual.
    let (_, _, next) = run_ubt_block(&mut db, COINBASE, &blocks()[0]);
    assert_ne!(next, parent);
    db.revert(&parent).unwrap();
    assert_eq!(db.root(), parent);
}
