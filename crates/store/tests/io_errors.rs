//! I/O errors in the write path: an apply whose bucket reads fail changes
//! nothing and can be retried; a commit whose WAL write or sync fails
//! leaves the last committed state readable, poisons the handle for writes,
//! and a reopen recovers the last acknowledged commit (or the one in
//! flight). Every I/O of the operation is failed in turn.

// Test code: a failed unwrap is a failed test, and casts narrow test data.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::cast_possible_truncation
)]

mod common;

use std::sync::Arc;

use alloy_primitives::B256;
use common::*;
use ubt_spec::{ReferenceTree, StateTree};
use ubt_store::io::sim::{FaultKind, SimDir};
use ubt_store::io::StoreDir;
use ubt_store::{Store, StoreError};

/// A database with committed data partly on disk, partly in memory.
fn setup(
    rng: &mut SplitMix64,
    known: &mut Vec<B256>,
) -> (SimDir, Arc<dyn StoreDir>, ReferenceTree) {
    let (sim, dir) = sim_dir();
    let opts = options(3, 1 << 20);
    let mut store = open(&dir, &opts);
    let mut reference = ReferenceTree::new();
    for _ in 0..4 {
        let writes: Vec<(B256, B256)> = (0..300)
            .map(|_| (mixed_key(rng, known), B256::from(rng.bytes32())))
            .collect();
        store.apply(&writes).unwrap();
        store.commit().unwrap();
        reference.insert_batch(&writes);
    }
    store.checkpoint().unwrap();
    (sim, dir, reference)
}

#[test]
fn failed_bucket_reads_leave_the_state_unchanged() {
    let mut rng = SplitMix64(0xe10);
    let mut known = Vec::new();
    let (sim, dir, mut reference) = setup(&mut rng, &mut known);
    let opts = options(3, 1 << 20);
    let mut failures = 0;
    for attempt in 0..60u64 {
        let mut store = open(&dir, &opts);
        // Some buckets in memory, then a block that also needs reads.
        let warm: Vec<(B256, B256)> = (0..20)
            .map(|_| (mixed_key(&mut rng, &mut known), B256::from(rng.bytes32())))
            .collect();
        store.apply(&warm).unwrap();
        store.commit().unwrap();
        reference.insert_batch(&warm);
        let root = store.root();
        let writes: Vec<(B256, B256)> = (0..200)
            .map(|_| (mixed_key(&mut rng, &mut known), B256::from(rng.bytes32())))
            .collect();
        sim.fail_op(sim.op_count() + attempt % 40, FaultKind::Eio);
        match store.apply(&writes) {
            Err(StoreError::Io { .. }) => {
                failures += 1;
                assert_eq!(
                    store.root(),
                    root,
                    "attempt {attempt}: failed apply changed the root"
                );
                for key in known.iter().rev().take(300) {
                    assert_eq!(
                        store.get(key).unwrap(),
                        reference.get(key),
                        "attempt {attempt}"
                    );
                }
                sim.clear_faults();
                // The same writes succeed once the disk recovers.
                assert_eq!(store.apply(&writes).unwrap(), {
                    reference.insert_batch(&writes);
                    reference.compute_root()
                });
            }
            Err(other) => panic!("attempt {attempt}: unexpected error {other}"),
            Ok(new_root) => {
                reference.insert_batch(&writes);
                assert_eq!(new_root, reference.compute_root());
            }
        }
        sim.clear_faults();
        store.commit().unwrap();
        drop(store);
    }
    assert!(
        failures > 10,
        "only {failures} injected read failures hit the apply"
    );
}

#[test]
fn failed_commits_poison_and_recover() {
    let mut rng = SplitMix64(0xc0);
    let mut known = Vec::new();
    let (sim, dir, mut reference) = setup(&mut rng, &mut known);
    let opts = options(3, 1 << 20);
    let mut poisoned = 0;
    for attempt in 0..8u64 {
        let mut store = open(&dir, &opts);
        assert_eq!(
            store.root(),
            reference.compute_root(),
            "attempt {attempt}: recovered root"
        );
        let committed = store.root();
        let writes: Vec<(B256, B256)> = (0..50)
            .map(|_| (mixed_key(&mut rng, &mut known), B256::from(rng.bytes32())))
            .collect();
        let in_flight_root = store.apply(&writes).unwrap();
        // The commit's I/O: the WAL write, then its sync.
        sim.fail_op(sim.op_count() + attempt % 2, FaultKind::Eio);
        match store.commit() {
            Ok(_) => panic!("attempt {attempt}: injected failure missed the commit"),
            Err(error) => {
                poisoned += 1;
                assert!(store.poisoned().is_some(), "{error}");
                assert_eq!(
                    store.root(),
                    committed,
                    "failed commit left uncommitted writes visible"
                );
                for key in known.iter().rev().take(100) {
                    assert_eq!(store.get(key).unwrap(), reference.get(key));
                }
                assert!(matches!(store.apply(&writes), Err(StoreError::Poisoned(_))));
                assert!(matches!(store.commit(), Err(StoreError::Poisoned(_))));
            }
        }
        sim.clear_faults();
        drop(store);
        // The record may or may not have reached the disk: either state is allowed.
        let store = open(&dir, &opts);
        if store.root() == in_flight_root {
            reference.insert_batch(&writes);
        } else {
            assert_eq!(
                store.root(),
                committed,
                "attempt {attempt}: reopened at neither state"
            );
        }
        assert!(store.verify().unwrap().is_ok());
    }
    assert_eq!(poisoned, 8);
    let store = Store::open(Arc::clone(&dir), opts).unwrap();
    assert_eq!(store.root(), reference.compute_root());
}
