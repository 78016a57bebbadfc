//! Handles across threads: readers made on one thread and used (and
//! closed) on others read exactly the state at their roots while the
//! writer applies, persists and checkpoints; and one database handle
//! shared by several threads serves reads at the tip while another thread
//! applies blocks through it.

// Test code: a failed unwrap is a failed test, and casts narrow test data.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::cast_possible_truncation
)]

mod common;

use std::collections::BTreeMap;

use alloy_primitives::B256;
use common::*;

/// The keys the blocks write.
fn keys() -> Vec<B256> {
    (0..300).map(|i| word(1, i)).collect()
}

/// Block `block`: 40 of the 300 keys rewritten.
fn block_writes(block: u64) -> Vec<(B256, B256)> {
    (0..40)
        .map(|j| {
            (
                word(1, (block * 7 + j * 11) % 300),
                word(2, block * 1000 + j),
            )
        })
        .collect()
}

#[test]
fn readers_on_other_threads_see_their_roots_while_the_writer_applies() {
    let dir = TempDir::new("threads-readers");
    let db = open(&dir, Some(&small_options())).unwrap();
    let keys = keys();
    let mut model = BTreeMap::new();
    let mut snapshots = Vec::new();
    for block in 0..4 {
        let writes = block_writes(block);
        let root = apply(db, &writes).unwrap();
        model.extend(writes);
        let expected: Vec<Option<B256>> = keys.iter().map(|k| model.get(k).copied()).collect();
        snapshots.push((root, expected));
    }

    let readers: Vec<_> = snapshots
        .into_iter()
        .map(|(root, expected)| {
            let r = reader(db, &root).unwrap();
            let keys = keys.clone();
            std::thread::spawn(move || {
                for round in 0..60 {
                    assert_eq!(
                        get_many(At::Reader(r), &keys).unwrap(),
                        expected,
                        "round {round}"
                    );
                    let i = (round * 17) % keys.len();
                    assert_eq!(get(At::Reader(r), &keys[i]).unwrap(), expected[i]);
                    assert_eq!(reader_root(r).unwrap(), root);
                }
                let proof = prove(At::Reader(r), &keys[..20]).unwrap();
                assert_eq!(verify(&proof, &root, &keys[..20]).unwrap(), expected[..20]);
                reader_close(r).unwrap();
            })
        })
        .collect();

    // Meanwhile the writer goes on: blocks, persists, a checkpoint.
    for block in 4..40 {
        let root = apply(db, &block_writes(block)).unwrap();
        if block % 5 == 0 {
            persist(db, &root).unwrap();
        }
        if block == 20 {
            assert_eq!(ubt_ffi::ubt_db_checkpoint(db), ubt_ffi::UBT_OK);
        }
        model.extend(block_writes(block));
    }
    for handle in readers {
        handle.join().unwrap();
    }
    let expected: Vec<Option<B256>> = keys.iter().map(|k| model.get(k).copied()).collect();
    assert_eq!(get_many(At::Tip(db), &keys).unwrap(), expected);
    commit(db).unwrap();
    close(db).unwrap();
}

#[test]
fn one_database_handle_serves_reads_on_many_threads_while_another_applies() {
    let dir = TempDir::new("threads-shared");
    let db = open(&dir, Some(&small_options())).unwrap();
    // Keys no later block touches: their values never change.
    let fixed: Vec<(B256, B256)> = (0..50).map(|i| (word(3, i), word(4, i))).collect();
    apply(db, &fixed).unwrap();
    let fixed_keys: Vec<B256> = fixed.iter().map(|(k, _)| *k).collect();
    let fixed_values: Vec<Option<B256>> = fixed.iter().map(|(_, v)| Some(*v)).collect();

    let writer = std::thread::spawn(move || {
        let mut roots = Vec::new();
        for block in 0..30 {
            roots.push(apply(db, &block_writes(block)).unwrap());
            if block % 10 == 9 {
                commit(db).unwrap();
            }
        }
        roots
    });
    let readers: Vec<_> = (0..3)
        .map(|_| {
            let (keys, values) = (fixed_keys.clone(), fixed_values.clone());
            std::thread::spawn(move || {
                for _ in 0..100 {
                    assert_eq!(get_many(At::Tip(db), &keys).unwrap(), values);
                    assert_eq!(get(At::Tip(db), &keys[7]).unwrap(), values[7]);
                }
            })
        })
        .collect();
    let roots = writer.join().unwrap();
    for handle in readers {
        handle.join().unwrap();
    }
    assert_eq!(tip_root(db).unwrap(), roots[29]);
    assert_eq!(committed_root(db).unwrap(), roots[29]);
    close(db).unwrap();
}
