//! The store against the reference tree: random blocks of writes applied to
//! both, with commits, checkpoints, discarded blocks and reopens in
//! between, at every group depth 1..8 and with memory budgets far below
//! the state size (so checkpoints happen at nearly every commit and the
//! cache evicts), and at bucket capacities from 4 KiB to 64 KiB. After every block the roots must be equal; after every
//! reopen, the committed root and every value; at the end, `verify` must
//! find nothing wrong.
//!
//! Each case prints its seed; rerun one with `UBT_SEED=<seed>`.

// Test code: a failed unwrap is a failed test, and casts narrow test data.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::cast_possible_truncation
)]

mod common;

use alloy_primitives::B256;
use common::*;
use ubt_spec::{ReferenceTree, StateTree};

/// A block of 1 to 60 writes (one in four: up to 600; one in eighty:
/// 8,192 to 9,191, enough for the store to locate them on the thread
/// pool) over mixed keys, about one value in eight zero.
fn random_block(rng: &mut SplitMix64, known: &mut Vec<B256>) -> Vec<(B256, B256)> {
    let size = match rng.below(80) {
        0 => 8_192 + rng.below(1_000) as usize,
        1..=20 => 1 + rng.below(600) as usize,
        _ => 1 + rng.below(60) as usize,
    };
    (0..size)
        .map(|_| {
            let key = mixed_key(rng, known);
            let value = if rng.below(8) == 0 {
                B256::ZERO
            } else {
                B256::from(rng.bytes32())
            };
            (key, value)
        })
        .collect()
}

/// Point and batched reads of known and random keys agree with the
/// reference.
fn spot_check(
    store: &ubt_store::Store,
    reference: &ReferenceTree,
    known: &[B256],
    rng: &mut SplitMix64,
    context: &str,
) {
    let mut probes: Vec<B256> = (0..20)
        .map(|_| known[rng.below(known.len() as u64) as usize])
        .collect();
    probes.extend((0..5).map(|_| B256::from(rng.bytes32())));
    let batched = store
        .get_many(&probes)
        .unwrap_or_else(|e| panic!("{context}: get_many: {e}"));
    for (key, got) in probes.iter().zip(batched) {
        assert_eq!(got, reference.get(key), "{context}: get_many {key}");
        assert_eq!(
            store.get(key).unwrap(),
            reference.get(key),
            "{context}: get {key}"
        );
    }
}

fn run_case(seed: u64, group_depth: u8, memory_budget_bytes: usize, blocks: usize) {
    run_case_with(seed, options(group_depth, memory_budget_bytes), blocks);
}

fn run_case_with(seed: u64, opts: ubt_store::Options, blocks: usize) {
    let mut rng = SplitMix64(seed);
    let (_sim, dir) = sim_dir();
    let mut store = open(&dir, &opts);
    let mut reference = ReferenceTree::new();
    let mut committed = ReferenceTree::new();
    let mut known = Vec::new();
    let context = format!(
        "seed {seed} G {:?} budget {} capacity {:?}",
        opts.group_depth, opts.memory_budget_bytes, opts.bucket_bytes
    );
    for block in 0..blocks {
        let writes = random_block(&mut rng, &mut known);
        let root = store
            .apply(&writes)
            .unwrap_or_else(|e| panic!("{context}: apply: {e}"));
        reference.insert_batch(&writes);
        assert_eq!(
            root,
            reference.compute_root(),
            "{context}: block {block} root"
        );
        match rng.below(10) {
            0 => {
                store.discard_uncommitted();
                reference = committed.clone();
                assert_eq!(store.root(), reference.compute_root(), "{context}: discard");
            }
            1 => {
                store
                    .checkpoint()
                    .unwrap_or_else(|e| panic!("{context}: checkpoint: {e}"));
                committed = reference.clone();
            }
            _ => {
                store
                    .commit()
                    .unwrap_or_else(|e| panic!("{context}: commit: {e}"));
                committed = reference.clone();
            }
        }
        if rng.below(6) == 0 {
            // Uncommitted writes are lost on reopen, like a crash.
            let lose: Vec<(B256, B256)> = (0..rng.below(20))
                .map(|_| (mixed_key(&mut rng, &mut known), B256::from(rng.bytes32())))
                .collect();
            store
                .apply(&lose)
                .unwrap_or_else(|e| panic!("{context}: apply: {e}"));
            drop(store);
            store = open(&dir, &opts);
            reference = committed.clone();
            assert_eq!(
                store.root(),
                reference.compute_root(),
                "{context}: reopen root"
            );
        }
        spot_check(&store, &reference, &known, &mut rng, &context);
    }
    store.commit().unwrap();
    drop(store);
    let store = open(&dir, &opts);
    for (key, value) in committed.entries() {
        assert_eq!(
            store.get(key).unwrap(),
            Some(*value),
            "{context}: final {key}"
        );
    }
    let report = store.verify().unwrap();
    assert!(report.is_ok(), "{context}: verify: {:?}", report.problems);
    assert_eq!(
        report.leaves,
        committed.len() as u64,
        "{context}: leaf count"
    );
    let stats = store.stats();
    assert_eq!(stats.leaf_count, committed.len() as u64);
    assert_eq!(
        stats.bucket_bytes,
        opts.bucket_bytes.unwrap_or(4096) as u64,
        "{context}: capacity kept across reopens"
    );
    println!(
        "{context}: {} values, {} stems, {} buckets (depth max {}), {} pages, {} upper nodes, \
         generation {}, {} reads",
        stats.leaf_count,
        stats.stem_count,
        stats.bucket_count,
        stats.bucket_depth_max,
        stats.page_count,
        stats.upper_node_count,
        stats.generation,
        stats.bucket_reads
    );
}

fn seeds() -> Vec<u64> {
    match std::env::var("UBT_SEED") {
        Ok(seed) => vec![seed.parse().expect("UBT_SEED is a number")],
        Err(_) => (0..3).map(|i| 0x5eed_0000 + i).collect(),
    }
}

#[test]
fn every_group_depth_with_a_tiny_budget() {
    for seed in seeds() {
        for group_depth in 1..=8 {
            println!("seed {seed} G {group_depth}");
            run_case(seed ^ u64::from(group_depth), group_depth, 64 << 10, 40);
        }
    }
}

/// Larger bucket capacities: the same blocks split buckets later, so
/// buckets hold more stems and the upper trie is smaller; everything else
/// must be equal.
#[test]
fn larger_bucket_capacities() {
    for seed in seeds() {
        for (group_depth, bucket_bytes) in [(1, 8192), (6, 8192), (3, 16_384), (6, 65_536)] {
            println!("seed {seed} G {group_depth} capacity {bucket_bytes}");
            let opts = ubt_store::Options {
                bucket_bytes: Some(bucket_bytes),
                ..options(group_depth, 64 << 10)
            };
            run_case_with(seed ^ bucket_bytes as u64, opts, 40);
        }
    }
}

#[test]
fn default_budget_long_run() {
    for seed in seeds() {
        println!("seed {seed}");
        run_case(seed, 6, 64 << 20, 150);
    }
}

/// A bulk build cuts buckets at the database's capacity: at 4, 8 and
/// 16 KiB the root is the reference tree's, each doubling leaves fewer
/// buckets, `verify` (which also checks that no bucket over the capacity
/// could have been split) finds nothing, and blocks applied after the
/// build keep the roots equal.
#[test]
fn bulk_build_at_each_capacity() {
    let seed = seed_from_env(0xb0c4);
    let mut rng = SplitMix64(seed);
    let mut entries: Vec<(B256, B256)> = (0..20_000).map(generated_entry).collect();
    entries.sort_by_key(|(k, _)| *k);
    let mut reference = ReferenceTree::new();
    reference.insert_batch(&entries);
    let mut blocks = Vec::new();
    let mut known: Vec<B256> = entries.iter().map(|(k, _)| *k).collect();
    for _ in 0..6 {
        blocks.push(random_block(&mut rng, &mut known));
    }
    let mut buckets_before = u64::MAX;
    for bucket_bytes in [4096, 8192, 16_384] {
        let context = format!("seed {seed} capacity {bucket_bytes}");
        let (_sim, dir) = sim_dir();
        let opts = ubt_store::Options {
            bucket_bytes: Some(bucket_bytes),
            ..options(6, 1 << 20)
        };
        let (mut store, _) =
            ubt_store::Store::build(std::sync::Arc::clone(&dir), opts.clone(), entries.clone())
                .unwrap_or_else(|e| panic!("{context}: build: {e}"));
        assert_eq!(
            store.root(),
            reference.compute_root(),
            "{context}: built root"
        );
        let buckets = store.stats().bucket_count;
        assert!(
            buckets < buckets_before,
            "{context}: {buckets} buckets, not fewer than {buckets_before}"
        );
        buckets_before = buckets;
        let report = store.verify().unwrap();
        assert!(report.is_ok(), "{context}: verify: {:?}", report.problems);
        let mut tree = reference.clone();
        for writes in &blocks {
            let root = store.apply(writes).unwrap();
            store.commit().unwrap();
            tree.insert_batch(writes);
            assert_eq!(root, tree.compute_root(), "{context}: block");
        }
        drop(store);
        let store = open(&dir, &opts);
        assert_eq!(store.root(), tree.compute_root(), "{context}: reopen");
        let report = store.verify().unwrap();
        assert!(
            report.is_ok(),
            "{context}: verify after blocks: {:?}",
            report.problems
        );
    }
}
