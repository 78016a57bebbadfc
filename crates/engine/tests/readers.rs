//! Snapshot readers on other threads while the writer applies, persists,
//! checkpoints and reverts: every read a reader makes equals the reference
//! tree's value at the reader's root (no torn read, whatever the writer is
//! doing), and a reader whose root was reverted away gets
//! `SnapshotReverted` rather than a wrong value.
//!
//! The commit count is small here; `UBT_READER_COMMITS` raises it (the
//! reliability suite's long mode).

// Test code: a failed unwrap is a failed test, and casts narrow test data.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::cast_possible_truncation
)]

use std::sync::Arc;

use alloy_primitives::B256;
use ubt_engine::{Db, Error, Options, StoreDir};
use ubt_spec::{ReferenceTree, StateTree};
use ubt_store::io::sim::SimDir;

fn key(i: u64) -> B256 {
    B256::from(ubt_spec::hash::sha256(&i.to_le_bytes()))
}

fn value(block: u64, i: u64) -> B256 {
    B256::from(ubt_spec::hash::sha256(
        &[block.to_le_bytes(), i.to_le_bytes()].concat(),
    ))
}

/// Block `b` rewrites 40 of 400 keys and adds 10 new ones.
fn block(b: u64) -> Vec<(B256, B256)> {
    (0..40u64)
        .map(|j| ((b * 37 + j * 11) % 400, j))
        .chain((0..10).map(|j| (400 + b * 10 + j, j)))
        .map(|(i, j)| (key(i), value(b, j + i)))
        .collect()
}

fn open() -> Db {
    let dir: Arc<dyn StoreDir> = Arc::new(SimDir::new());
    let options = Options {
        group_depth: Some(3),
        memory_budget_bytes: 96 << 10,
        revert_depth: 16,
        ..Options::default()
    };
    Db::open_dir(dir, options).expect("open")
}

#[test]
fn readers_see_their_snapshot_while_the_writer_goes_on() {
    let commits: u64 = std::env::var("UBT_READER_COMMITS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(120);
    let mut db = open();
    let mut reference = ReferenceTree::new();
    let initial: Vec<(B256, B256)> = (0..400u64).map(|i| (key(i), value(0, i))).collect();
    db.apply_block(&initial).expect("initial");
    reference.insert_batch(&initial);
    let keys: Vec<B256> = (0..400 + commits * 10).map(key).collect();

    let mut handles = Vec::new();
    let mut readers_checked = 0;
    for b in 1..=commits {
        let writes = block(b);
        let root = db.apply(&writes).expect("apply");
        reference.insert_batch(&writes);
        assert_eq!(root, reference.compute_root());
        if b % 3 == 0 {
            db.persist(&root).expect("persist");
        }
        if b % 10 == 0 {
            // A reader at this root, checked on its own thread while the
            // writer continues, against a copy of the reference.
            let reader = db.reader(&root).expect("reader");
            let expected: Vec<Option<B256>> = keys.iter().map(|k| reference.get(k)).collect();
            let keys = keys.clone();
            handles.push(std::thread::spawn(move || {
                for round in 0..30 {
                    if round % 2 == 0 {
                        for (k, want) in keys.iter().zip(&expected) {
                            assert_eq!(reader.get(k).expect("read"), *want);
                        }
                    } else {
                        assert_eq!(reader.get_many(&keys).expect("read many"), expected);
                    }
                }
                assert_eq!(reader.root(), root);
            }));
            readers_checked += 1;
        }
        if b % 25 == 0 {
            db.checkpoint().expect("checkpoint");
        }
    }
    for handle in handles {
        handle.join().expect("reader thread");
    }
    assert!(readers_checked >= 10);
    db.commit().expect("commit");
    assert_eq!(db.root(), reference.compute_root());
}

#[test]
fn a_reverted_snapshot_errs_and_older_ones_stay_exact() {
    let mut db = open();
    let mut reference = ReferenceTree::new();
    let mut roots = Vec::new();
    let mut trees = Vec::new();
    for b in 0..6u64 {
        let writes = block(b);
        roots.push(db.apply(&writes).expect("apply"));
        reference.insert_batch(&writes);
        trees.push(reference.clone());
        db.commit().expect("commit");
    }
    let old = db.reader(&roots[1]).expect("reader");
    let doomed = db.reader(&roots[4]).expect("reader");
    db.revert(&roots[2]).expect("revert");
    assert!(matches!(
        doomed.get(&key(1)),
        Err(Error::SnapshotReverted(_))
    ));
    // New blocks after the revert do not leak into the older snapshot.
    db.apply_block(&block(100)).expect("apply");
    for i in 0..460u64 {
        assert_eq!(
            old.get(&key(i)).expect("read"),
            trees[1].get(&key(i)),
            "key {i}"
        );
    }
}

#[test]
fn prefetched_buckets_are_not_read_again() {
    let dir: Arc<dyn StoreDir> = Arc::new(SimDir::new());
    let options = Options {
        group_depth: Some(4),
        ..Options::default()
    };
    let entries: Vec<(B256, B256)> = {
        let mut e: Vec<(B256, B256)> = (0..20_000u64).map(|i| (key(i), value(0, i))).collect();
        e.sort();
        e
    };
    let (db, _) = Db::build_dir(Arc::clone(&dir), options.clone(), entries).expect("build");
    drop(db);
    let mut db = Db::open_dir(dir, options).expect("reopen");
    let writes: Vec<(B256, B256)> = (0..2_000u64).map(|i| (key(i * 7), value(1, i))).collect();
    let keys: Vec<B256> = writes.iter().map(|(k, _)| *k).collect();
    let started = db.prefetch(&keys);
    assert!(started > 100, "prefetch started {started} reads");
    db.apply(&writes).expect("apply");
    let timing = db.diagnostics().last_apply;
    assert_eq!(
        timing.buckets_read, 0,
        "apply read buckets the prefetch had read"
    );
    let mut reference = ReferenceTree::new();
    for i in 0..20_000u64 {
        reference.insert(key(i), value(0, i));
    }
    reference.insert_batch(&writes);
    assert_eq!(db.root(), reference.compute_root());
}
