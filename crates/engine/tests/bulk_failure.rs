//! A bulk block that fails part-way (here: its input turns out unsorted
//! after thousands of writes were applied in memory) leaves the handle at
//! the last good state, readable at once: reads, readers and the root are
//! those before the block, and, the failure being bad input, the handle
//! takes new blocks. (It used to refuse every read until reopened.)

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

fn options() -> Options {
    Options {
        group_depth: Some(4),
        memory_budget_bytes: 256 << 10,
        ..Options::default()
    }
}

#[test]
fn a_bulk_block_refused_part_way_leaves_the_last_good_state_readable() {
    let sim = SimDir::new();
    let dir: Arc<dyn StoreDir> = Arc::new(sim.clone());
    let mut db = Db::open_dir(Arc::clone(&dir), options()).unwrap();
    let mut reference = ReferenceTree::new();
    let first: Vec<(B256, B256)> = (0..500).map(|i| (key(i), B256::repeat_byte(1))).collect();
    let root1 = db.apply_block(&first).unwrap();
    reference.insert_batch(&first);
    let old_tree = reference.clone();
    let second: Vec<(B256, B256)> = (0..50).map(|i| (key(i), B256::repeat_byte(2))).collect();
    let root2 = db.apply_block(&second).unwrap();
    reference.insert_batch(&second);
    let old_reader = db.reader(&root1).unwrap();
    let tip_reader = db.reader(&root2).unwrap();

    // 5,000 sorted writes (several chunks of the bulk apply reach memory),
    // then a key smaller than the one before it.
    let mut bulk: Vec<(B256, B256)> = (1_000..6_000)
        .map(|i| (key(i), B256::repeat_byte(3)))
        .collect();
    bulk.sort_by_key(|(k, _)| *k);
    let mut smaller = bulk.last().unwrap().0;
    smaller[0] = 0;
    bulk.push((smaller, B256::repeat_byte(4)));
    let error = db.apply_bulk(bulk.iter().copied()).unwrap_err();
    assert!(matches!(error, Error::UnsortedInput { .. }), "{error}");

    // The state before the block, readable at once, through every path.
    assert_eq!(db.root(), root2);
    let probes: Vec<B256> = (0..60).chain(1_000..1_060).map(key).collect();
    let expected: Vec<Option<B256>> = probes.iter().map(|k| reference.get(k)).collect();
    assert_eq!(db.get_many(&probes).unwrap(), expected);
    assert_eq!(db.get(&probes[0]).unwrap(), expected[0]);
    assert_eq!(tip_reader.get_many(&probes).unwrap(), expected);
    // The older reader sees its own root, or is told its snapshot is gone;
    // never a wrong value.
    match old_reader.get(&probes[0]) {
        Ok(value) => assert_eq!(value, old_tree.get(&probes[0])),
        Err(Error::SnapshotReverted(_)) => {}
        Err(e) => panic!("older reader: {e}"),
    }
    assert!(db.verify().unwrap().is_ok());

    // Bad input poisons nothing: the handle takes the next block, durably.
    let third: Vec<(B256, B256)> = (0..10).map(|i| (key(i), B256::repeat_byte(5))).collect();
    let root3 = db.apply_block(&third).unwrap();
    reference.insert_batch(&third);
    assert_eq!(root3, B256::from(reference.compute_root()));
    drop((old_reader, tip_reader));
    db.close().unwrap();
    let db = Db::open_dir(dir, options()).unwrap();
    assert_eq!(db.root(), root3);
    assert_eq!(db.get(&key(0)).unwrap(), Some(B256::repeat_byte(5)));
}
