//! The flat index through the store's API: a bulk-built index read back
//! at every key (through the index and through the tree), the readahead
//! of one account's adjacent leaves (a hot account's misses soon read 16
//! leaves at once, a one-off read of another account reads one), the
//! refusal of writes without owners, and the index built only once.

// Test code: a failed unwrap is a failed test, and casts narrow test data.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::cast_possible_truncation
)]

mod common;

use std::sync::Arc;

use alloy_primitives::{Address, B256, U256};
use common::*;
use ubt_spec::key::storage_slot_key;
use ubt_store::io::StoreDir;
use ubt_store::{Options, Store, StoreError};

/// A token at `token` with `slots` storage slots (small values), and
/// `others` one-slot accounts: the tree entries sorted by key and the
/// flat records sorted by (owner, key).
/// Tree entries and flat records of one state.
type State = (Vec<(B256, B256)>, Vec<(Address, B256, B256)>);

fn state(token: Address, slots: u64, others: u64) -> State {
    let mut records: Vec<(Address, B256, B256)> = (0..slots)
        .map(|i| {
            let slot = U256::from_be_bytes(ubt_spec::hash::sha256(&i.to_le_bytes()));
            (
                token,
                storage_slot_key(&token, &slot),
                B256::from(U256::from(i + 1)),
            )
        })
        .collect();
    for i in 0..others {
        let owner = Address::from_word(B256::from(U256::from(i + 7)));
        records.push((
            owner,
            storage_slot_key(&owner, &U256::from(100u8)),
            B256::repeat_byte(3),
        ));
    }
    records.sort_by_key(|r| (r.0, r.1));
    let mut entries: Vec<(B256, B256)> = records.iter().map(|(_, k, v)| (*k, *v)).collect();
    entries.sort();
    (entries, records)
}

fn flat_store(
    entries: &[(B256, B256)],
    records: &[(Address, B256, B256)],
) -> (Arc<dyn StoreDir>, Store) {
    flat_store_within(entries, records, 64 << 20)
}

/// [`flat_store`] with a memory budget.
fn flat_store_within(
    entries: &[(B256, B256)],
    records: &[(Address, B256, B256)],
    memory_budget_bytes: usize,
) -> (Arc<dyn StoreDir>, Store) {
    let (_, dir) = sim_dir();
    let options = Options {
        flat_index: true,
        ..options(4, memory_budget_bytes)
    };
    let (mut store, _) = Store::build(Arc::clone(&dir), options, entries.iter().copied()).unwrap();
    let report = store
        .build_flat_index(records.iter().map(|r| Ok(*r)))
        .unwrap();
    assert_eq!(report.records, records.len() as u64);
    (dir, store)
}

#[test]
fn a_built_index_reads_back_every_value_and_verifies() {
    let token = Address::repeat_byte(0x77);
    let (entries, records) = state(token, 20_000, 500);
    let (dir, store) = flat_store(&entries, &records);
    let stats = store.stats();
    assert!(stats.flat_index && stats.flat_nodes > 0, "{stats:?}");
    let pairs: Vec<(Address, B256)> = records.iter().map(|(o, k, _)| (*o, *k)).collect();
    let got = store.get_owned(&pairs).unwrap();
    for ((_, key, value), got) in records.iter().zip(got) {
        assert_eq!(got, Some(*value), "{key}");
        assert_eq!(store.get(key).unwrap(), Some(*value));
    }
    // A key of another account is not found under this one.
    let stranger = store.get_owned(&[(Address::ZERO, records[0].1)]).unwrap();
    assert_eq!(stranger, vec![None]);
    let report = store.verify().unwrap();
    assert!(report.is_ok(), "{:?}", report.problems);
    assert_eq!(report.flat_records, records.len() as u64);
    drop(store);
    let store = Store::open(dir, Options::default()).unwrap();
    assert!(store.has_flat_index());
    assert!(store.verify().unwrap().is_ok());
}

#[test]
fn a_hot_accounts_misses_read_its_adjacent_leaves_and_a_one_off_read_reads_one() {
    let token = Address::repeat_byte(0x77);
    let (entries, records) = state(token, 50_000, 2_000);
    let (_dir, store) = flat_store(&entries, &records);
    store.clear_cache();
    let token_records: Vec<&(Address, B256, B256)> =
        records.iter().filter(|r| r.0 == token).collect();
    let mut rng = SplitMix64(9);
    let before = store.io_counters();
    let reads = 2_000;
    for _ in 0..reads {
        let (owner, key, value) = token_records[rng.below(token_records.len() as u64) as usize];
        assert_eq!(
            store.get_owned(&[(*owner, *key)]).unwrap(),
            vec![Some(*value)]
        );
    }
    let after = store.io_counters();
    let io = after.bucket_reads - before.bucket_reads;
    let leaves = store.stats().flat_leaves;
    // 50,000 small records take ~540 leaves; 2,000 reads touch nearly all
    // of them. Leaf by leaf that is ~500 reads; the window grows with the
    // misses per leaf, to 16 leaves after ~140 misses.
    assert!(io * 3 < leaves, "{io} reads for {leaves} leaves");
    assert!(after.bytes_read - before.bytes_read >= 4096 * leaves * 3 / 4);
    // A one-off read of another account: one block.
    let other = records.iter().find(|r| r.0 != token).unwrap();
    let before = store.io_counters();
    assert_eq!(
        store.get_owned(&[(other.0, other.1)]).unwrap(),
        vec![Some(other.2)]
    );
    let after = store.io_counters();
    assert_eq!(after.bucket_reads - before.bucket_reads, 1);
    assert!(after.bytes_read - before.bytes_read <= 4096);
}

#[test]
fn a_few_reads_of_a_large_account_read_about_a_leaf_each() {
    let token = Address::repeat_byte(0x77);
    let (entries, records) = state(token, 50_000, 0);
    let (_dir, store) = flat_store(&entries, &records);
    store.clear_cache();
    let mut rng = SplitMix64(11);
    let before = store.io_counters();
    let reads = 20u64;
    for _ in 0..reads {
        let (owner, key, value) = records[rng.below(records.len() as u64) as usize];
        assert_eq!(store.get_owned(&[(owner, key)]).unwrap(), vec![Some(value)]);
    }
    let read_bytes = store.io_counters().bytes_read - before.bytes_read;
    // 20 misses over ~540 leaves earn no readahead: one leaf each.
    assert!(
        read_bytes <= reads * 4096,
        "{read_bytes} bytes for {reads} reads"
    );
}

#[test]
fn writes_without_owners_are_refused_and_the_index_is_built_once() {
    let token = Address::repeat_byte(0x77);
    let (entries, records) = state(token, 100, 10);
    let (_dir, mut store) = flat_store(&entries, &records);
    let root = store.root();
    assert!(matches!(
        store.apply(&[(B256::repeat_byte(1), B256::repeat_byte(2))]),
        Err(StoreError::OwnersRequired)
    ));
    assert!(matches!(
        store.apply_bulk([(B256::repeat_byte(1), B256::repeat_byte(2))]),
        Err(StoreError::OwnersRequired)
    ));
    assert_eq!(store.root(), root, "a refused write changes nothing");
    assert!(store
        .build_flat_index(records.iter().map(|r| Ok(*r)))
        .is_err());
    // An empty block needs no owners.
    assert!(store.apply(&[]).is_ok());
}

/// A build asked for a flat index ends without one until
/// `build_flat_index` adds it: a process killed between the two leaves a
/// database whose reads are right (from the tree), not an empty index over
/// a full tree that answers "absent" for every account.
#[test]
fn a_build_that_stops_before_its_index_leaves_a_database_without_one() {
    let token = Address::repeat_byte(0x77);
    let (entries, records) = state(token, 300, 20);
    let (_, dir) = sim_dir();
    let options = Options {
        flat_index: true,
        ..options(4, 64 << 20)
    };
    let (store, _) = Store::build(Arc::clone(&dir), options, entries.iter().copied()).unwrap();
    assert!(!store.has_flat_index());
    drop(store);
    let store = Store::open(dir, Options::default()).unwrap();
    assert!(!store.has_flat_index());
    let pairs: Vec<(Address, B256)> = records.iter().map(|(o, k, _)| (*o, *k)).collect();
    let got = store.get_owned(&pairs).unwrap();
    let want: Vec<Option<B256>> = records.iter().map(|r| Some(r.2)).collect();
    assert_eq!(got, want);
    assert!(store.verify().unwrap().is_ok());
}

#[test]
fn an_unsorted_flat_build_is_refused() {
    let token = Address::repeat_byte(0x77);
    let (entries, mut records) = state(token, 100, 10);
    records.swap(3, 40);
    let (_, dir) = sim_dir();
    let options = Options {
        flat_index: true,
        ..options(4, 64 << 20)
    };
    let (mut store, _) = Store::build(dir, options, entries.iter().copied()).unwrap();
    let error = store
        .build_flat_index(records.iter().map(|r| Ok(*r)))
        .unwrap_err();
    assert!(matches!(error, StoreError::UnsortedInput { .. }), "{error}");
}

/// A contract at `contract` with slots `0..slots` set to `slot + 1`: one
/// stem per 256 consecutive main-storage slots, each filling leaves of
/// the index by itself. Merged with `state`'s records and entries.
fn with_sequential(state: State, contract: Address, slots: u64) -> State {
    let (mut entries, mut records) = state;
    for i in 0..slots {
        let key = storage_slot_key(&contract, &U256::from(i));
        let value = B256::from(U256::from(i + 1));
        records.push((contract, key, value));
        entries.push((key, value));
    }
    records.sort_by_key(|r| (r.0, r.1));
    entries.sort();
    (entries, records)
}

fn slot_keys(contract: Address, slots: std::ops::Range<u64>) -> Vec<(Address, B256)> {
    slots
        .map(|i| (contract, storage_slot_key(&contract, &U256::from(i))))
        .collect()
}

#[test]
fn consecutive_slots_are_read_from_their_buckets_so_writing_them_reads_nothing_more() {
    let (token, contract) = (Address::repeat_byte(0x77), Address::repeat_byte(0x5e));
    let (entries, records) = with_sequential(state(token, 5_000, 300), contract, 4_096);
    let (_dir, mut store) = flat_store(&entries, &records);
    store.clear_cache();
    // Slots 1024..1792: three whole stems.
    let keys = slot_keys(contract, 1024..1792);
    let got = store.get_owned(&keys).unwrap();
    for (i, value) in (1024u64..).zip(&got) {
        assert_eq!(*value, Some(B256::from(U256::from(i + 1))), "slot {i}");
    }
    // The buckets those reads brought are the ones the writes need.
    let before = store.io_counters();
    let writes: Vec<(Address, B256, B256)> = keys
        .iter()
        .map(|(owner, key)| (*owner, *key, B256::repeat_byte(9)))
        .collect();
    store.apply_owned(&writes).unwrap();
    let after = store.io_counters();
    assert_eq!(
        after.bucket_reads, before.bucket_reads,
        "the block read its buckets again"
    );
    // A token's scattered slots still come from one leaf.
    store.clear_cache();
    let (owner, key, value) = records.iter().find(|r| r.0 == token).unwrap();
    let before = store.io_counters();
    assert_eq!(
        store.get_owned(&[(*owner, *key)]).unwrap(),
        vec![Some(*value)]
    );
    let after = store.io_counters();
    assert_eq!(after.bucket_reads - before.bucket_reads, 1);
    assert!(after.bytes_read - before.bytes_read <= 4096);
}

#[test]
fn writes_to_a_dense_stem_are_held_as_the_stem_and_the_checkpoint_copies_it_from_the_tree() {
    let (token, contract) = (Address::repeat_byte(0x77), Address::repeat_byte(0x5e));
    let (entries, records) = with_sequential(state(token, 2_000, 100), contract, 2_048);
    let (dir, mut store) = flat_store(&entries, &records);
    let dense = store.stats().flat_dense_stems;
    assert!(dense >= 7, "the contract's full stems fill leaves: {dense}");
    // Three whole stems rewritten, and slots past the preset ones (a new
    // stem, not yet in the index), and a few of the token's holders.
    let mut writes: Vec<(Address, B256, B256)> = slot_keys(contract, 512..1_280)
        .into_iter()
        .chain(slot_keys(contract, 2_048..2_100))
        .map(|(owner, key)| (owner, key, B256::repeat_byte(0xab)))
        .collect();
    let holders: Vec<&(Address, B256, B256)> =
        records.iter().filter(|r| r.0 == token).take(5).collect();
    writes.extend(holders.iter().map(|r| (r.0, r.1, B256::repeat_byte(0xcd))));
    store.apply_owned(&writes).unwrap();
    let stats = store.stats();
    assert_eq!(stats.flat_stem_changes, 3, "one entry per dense stem");
    assert_eq!(stats.flat_changes, 52 + 5, "a change per key elsewhere");
    let probes: Vec<(Address, B256)> = writes.iter().map(|(o, k, _)| (*o, *k)).collect();
    let expected: Vec<Option<B256>> = writes.iter().map(|w| Some(w.2)).collect();
    assert_eq!(store.get_owned(&probes).unwrap(), expected);
    let report = store.verify().unwrap();
    assert!(report.is_ok(), "{:?}", report.problems);
    // The checkpoint writes those stems' values into the leaves: with
    // nothing left in memory, verify compares the leaves with the tree.
    store.checkpoint().unwrap();
    let stats = store.stats();
    assert_eq!((stats.flat_stem_changes, stats.flat_changes), (0, 0));
    let report = store.verify().unwrap();
    assert!(report.is_ok(), "{:?}", report.problems);
    drop(store);
    let store = Store::open(dir, Options::default()).unwrap();
    store.clear_cache();
    assert_eq!(store.get_owned(&probes).unwrap(), expected);
    let report = store.verify().unwrap();
    assert!(report.is_ok(), "{:?}", report.problems);
}

/// Rounds of writes over a sequential contract's stems (preset and new
/// ones) and a token's holders, with snapshots, commits, checkpoints,
/// reverts and reopens: reads through both routes agree with the tree and
/// `verify` finds the index equal to the tree after every round. With a
/// small memory budget and `persist_older`, every persist checkpoints
/// while the newest blocks stay in memory, so stems written as a whole
/// outlive checkpoints whose fences moved.
fn dense_stem_rounds(memory_budget_bytes: usize, persist_older: bool) {
    let seed = seed_from_env(0xd5e);
    println!("seed {seed}");
    let (token, contract) = (Address::repeat_byte(0x77), Address::repeat_byte(0x5e));
    let (entries, records) = with_sequential(state(token, 3_000, 200), contract, 2_048);
    let (dir, mut store) = flat_store_within(&entries, &records, memory_budget_bytes);
    let mut rng = SplitMix64(seed);
    let token_keys: Vec<B256> = records
        .iter()
        .filter(|r| r.0 == token)
        .map(|r| r.1)
        .collect();
    // Every key a round may touch: the contract's slots (the preset ones
    // and fresh ones past them, which make new dense stems) and the
    // token's.
    let mut probes: Vec<(Address, B256)> = slot_keys(contract, 0..3_072);
    probes.extend(token_keys.iter().map(|k| (token, *k)));
    let check = |store: &Store, round: usize| {
        let tree_keys: Vec<B256> = probes.iter().map(|(_, k)| *k).collect();
        let expected = store.get_many(&tree_keys).unwrap();
        assert_eq!(store.get_owned(&probes).unwrap(), expected, "round {round}");
        let report = store.verify().unwrap();
        assert!(report.is_ok(), "round {round}: {:?}", report.problems);
    };
    let mut roots = vec![store.root()];
    let mut stems_written_max = 0;
    for round in 0..12 {
        let start = rng.below(2_800);
        let mut writes: Vec<(Address, B256, B256)> = slot_keys(contract, start..start + 256)
            .into_iter()
            .map(|(o, k)| (o, k, B256::from(rng.bytes32())))
            .collect();
        for _ in 0..64 {
            let key = token_keys[rng.below(token_keys.len() as u64) as usize];
            writes.push((token, key, B256::from(rng.bytes32())));
        }
        let snapshot = store.snapshot(&store.root()).unwrap();
        let before: Vec<Option<B256>> = store.get_owned(&probes).unwrap();
        let root = store.apply_owned(&writes).unwrap();
        roots.push(root);
        stems_written_max = stems_written_max.max(store.stats().flat_stem_changes);
        // The snapshot taken before the block still reads the old values,
        // through both routes.
        assert_eq!(
            store.get_owned_at(&probes, &snapshot).unwrap(),
            before,
            "round {round}"
        );
        check(&store, round);
        if persist_older && roots.len() >= 3 {
            // The block before this one: this one stays in memory.
            store.persist(&roots[roots.len() - 2]).unwrap();
            check(&store, round);
        }
        match round % 4 {
            1 => store.commit().map(|_| ()).unwrap(),
            2 if !persist_older => store.checkpoint().unwrap(),
            3 => {
                // Revert the newest block, then apply it again.
                let previous = roots[roots.len() - 2];
                store.revert(&previous).unwrap();
                check(&store, round);
                assert_eq!(store.apply_owned(&writes).unwrap(), root);
            }
            _ => {}
        }
        check(&store, round);
    }
    assert!(stems_written_max > 0, "no stem was written as a whole");
    store.commit().unwrap();
    store.checkpoint().unwrap();
    check(&store, 98);
    drop(store);
    let store = Store::open(dir, Options::default()).unwrap();
    check(&store, 99);
    store.clear_cache();
    check(&store, 100);
}

#[test]
fn reads_of_dense_stems_agree_with_the_tree_through_layers_reverts_checkpoints_and_reopens() {
    dense_stem_rounds(64 << 20, false);
}

#[test]
fn dense_stems_written_as_a_whole_survive_checkpoints_that_keep_newer_blocks_in_memory() {
    dense_stem_rounds(256 << 10, true);
}
