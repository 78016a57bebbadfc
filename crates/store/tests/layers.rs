//! Layers, persist and revert against a model: a chain of reference trees,
//! one per applied block, and the revert window (how many of the latest
//! persisted blocks can still be undone: persisting adds to it up to the
//! depth, reverting consumes it). Random interleavings of apply, persist
//! (of a random unpersisted layer), commit, checkpoint, revert (to a random
//! recent root: it must succeed exactly when the persisted blocks it undoes
//! are within the window), reads at older roots, and reopen (which keeps
//! exactly the persisted blocks and the window; after a reopen the window
//! comes from the checkpoint's revert segment and the WAL). A small revert
//! depth and a small memory budget make checkpoints and the depth limit
//! frequent.
//!
//! Also the reorg scenario: apply A1..A5, revert to A2, apply B3..B6: roots
//! and values equal a fresh tree built from the winning chain.

// Test code: a failed unwrap is a failed test, and casts narrow test data.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::cast_possible_truncation
)]

mod common;

use alloy_primitives::B256;
use common::*;
use ubt_spec::hash::Hash;
use ubt_spec::{ReferenceTree, StateTree};
use ubt_store::{Options, Store, StoreError};

const DEPTH: usize = 6;

/// One block of the model chain.
#[derive(Clone)]
struct Block {
    root: Hash,
    tree: ReferenceTree,
    persisted: bool,
}

fn opts() -> Options {
    Options {
        revert_depth: DEPTH,
        ..options(3, 48 << 10)
    }
}

fn block_writes(rng: &mut SplitMix64, known: &mut Vec<B256>) -> Vec<(B256, B256)> {
    let n = 1 + rng.below(40) as usize;
    (0..n)
        .map(|_| (mixed_key(rng, known), B256::from(rng.bytes32())))
        .collect()
}

fn check_state(store: &Store, tree: &ReferenceTree, known: &[B256], context: &str) {
    assert_eq!(store.root(), tree.compute_root(), "{context}: root");
    for key in known.iter().rev().take(60) {
        assert_eq!(store.get(key).unwrap(), tree.get(key), "{context}: {key}");
    }
}

/// The model: the blocks the store holds (`blocks[0]` is the empty base;
/// the store's layers are `blocks[1..]`) and the revert window.
struct Chain {
    blocks: Vec<Block>,
    /// How many of the latest persisted blocks can still be reverted.
    window: usize,
}

impl Chain {
    fn new() -> Chain {
        Chain {
            blocks: vec![Block {
                root: [0; 32],
                tree: ReferenceTree::new(),
                persisted: true,
            }],
            window: 0,
        }
    }

    fn tip(&self) -> &Block {
        self.blocks.last().expect("base")
    }

    /// Blocks up to `target` are persisted; the window grows by the newly
    /// persisted ones, up to the depth.
    fn persist_upto(&mut self, target: usize) {
        let newly = self.blocks[..=target]
            .iter()
            .filter(|b| !b.persisted)
            .count();
        for block in &mut self.blocks[..=target] {
            block.persisted = true;
        }
        self.window = (self.window + newly).min(DEPTH);
    }

    fn persist_all(&mut self) {
        self.persist_upto(self.blocks.len() - 1);
    }

    /// Reverts `store` to `blocks[target]`, which must succeed exactly when
    /// the blocks persisted after it are within the window; returns whether
    /// it did, after checking the state it reverted to.
    fn revert_to(
        &mut self,
        store: &mut Store,
        target: usize,
        known: &[B256],
        context: &str,
    ) -> bool {
        let persisted_after = self.blocks[target + 1..]
            .iter()
            .filter(|b| b.persisted)
            .count();
        match store.revert(&self.blocks[target].root) {
            Ok(()) => {
                assert!(
                    persisted_after <= self.window,
                    "{context}: reverted beyond the window"
                );
                self.blocks.truncate(target + 1);
                self.window -= persisted_after;
                check_state(store, &self.blocks[target].tree, known, context);
                true
            }
            Err(StoreError::UnknownRoot(_)) => {
                assert!(
                    persisted_after > self.window,
                    "{context}: revert refused within the window"
                );
                false
            }
            Err(other) => panic!("{context}: revert: {other}"),
        }
    }
}

/// Reads at the roots of the newest layers in memory match their blocks.
fn check_layer_reads(store: &Store, chain: &Chain, known: &[B256], context: &str) {
    for layer in store.layers().iter().rev().take(3) {
        let block = chain
            .blocks
            .iter()
            .rev()
            .find(|b| b.root == layer.root)
            .expect("layer in the chain");
        for key in known.iter().rev().take(20) {
            assert_eq!(
                store
                    .get_at(key, &store.snapshot(&layer.root).unwrap())
                    .unwrap(),
                block.tree.get(key),
                "{context}: get_at"
            );
        }
    }
}

fn run(seed: u64, steps: usize) {
    let mut rng = SplitMix64(seed);
    let (_sim, dir) = sim_dir();
    let mut store = open(&dir, &opts());
    let mut known = Vec::new();
    let mut chain = Chain::new();
    let mut reverts = (0, 0, 0);
    for step in 0..steps {
        let context = format!("seed {seed} step {step}");
        match rng.below(12) {
            0..=4 => {
                let writes = block_writes(&mut rng, &mut known);
                let mut tree = chain.tip().tree.clone();
                tree.insert_batch(&writes);
                let root = store.apply(&writes).unwrap();
                assert_eq!(root, tree.compute_root(), "{context}: apply");
                chain.blocks.push(Block {
                    root,
                    tree,
                    persisted: false,
                });
            }
            5 => {
                // Persist a random unpersisted block (and those before it).
                let unpersisted: Vec<usize> = (0..chain.blocks.len())
                    .filter(|&i| !chain.blocks[i].persisted)
                    .collect();
                if let Some(&target) =
                    unpersisted.get(rng.below(unpersisted.len().max(1) as u64) as usize)
                {
                    store.persist(&chain.blocks[target].root).unwrap();
                    chain.persist_upto(target);
                }
            }
            6 => {
                store.commit().unwrap();
                chain.persist_all();
            }
            7 => {
                store.checkpoint().unwrap();
                chain.persist_all();
            }
            8 | 9 => {
                // Revert to a random block among the last few.
                let back = 1 + rng.below(4) as usize;
                if chain.blocks.len() > back {
                    let target = chain.blocks.len() - 1 - back;
                    if chain.revert_to(&mut store, target, &known, &context) {
                        reverts.0 += 1;
                    } else {
                        reverts.1 += 1;
                    }
                }
            }
            10 => check_layer_reads(&store, &chain, &known, &context),
            _ => {
                // Reopen: the unpersisted blocks are gone.
                drop(store);
                store = open(&dir, &opts());
                while chain.blocks.last().is_some_and(|b| !b.persisted) {
                    chain.blocks.pop();
                }
                check_state(&store, &chain.tip().tree, &known, &context);
                // After a reopen, an older root comes from the reverse diffs on disk.
                if chain.blocks.len() > 3 && rng.below(2) == 0 {
                    let target = chain.blocks.len() - 3;
                    let context = format!("{context}, after a reopen");
                    if chain.revert_to(&mut store, target, &known, &context) {
                        reverts.2 += 1;
                    } else {
                        reverts.1 += 1;
                    }
                }
            }
        }
    }
    store.commit().unwrap();
    drop(store);
    let store = open(&dir, &opts());
    check_state(
        &store,
        &chain.tip().tree,
        &known,
        &format!("seed {seed} end"),
    );
    assert!(store.verify().unwrap().is_ok());
    println!(
        "seed {seed}: {} reverts, {} right after a reopen, {} refused beyond the window",
        reverts.0, reverts.2, reverts.1
    );
    assert!(
        reverts.0 > 0 && reverts.2 > 0,
        "seed {seed}: both revert paths exercised"
    );
}

#[test]
fn layers_persist_and_revert_match_the_model() {
    let seeds: Vec<u64> = match std::env::var("UBT_SEED") {
        Ok(seed) => vec![seed.parse().expect("UBT_SEED")],
        Err(_) => vec![11, 12, 13, 14],
    };
    for seed in seeds {
        run(seed, 400);
    }
}

#[test]
fn reorg_equals_a_fresh_tree_of_the_winning_chain() {
    for reopen_before_revert in [false, true] {
        let mut rng = SplitMix64(77);
        let mut known = Vec::new();
        let (_sim, dir) = sim_dir();
        let mut store = open(&dir, &opts());
        let a: Vec<Vec<(B256, B256)>> =
            (0..5).map(|_| block_writes(&mut rng, &mut known)).collect();
        let b: Vec<Vec<(B256, B256)>> =
            (0..4).map(|_| block_writes(&mut rng, &mut known)).collect();
        let mut roots = Vec::new();
        for block in &a {
            roots.push(store.apply(block).unwrap());
            store.commit().unwrap();
        }
        store.checkpoint().unwrap();
        if reopen_before_revert {
            drop(store);
            store = open(&dir, &opts());
        }
        store.revert(&roots[1]).unwrap();
        for block in &b {
            store.apply(block).unwrap();
            store.commit().unwrap();
        }
        let mut winning = ReferenceTree::new();
        for block in a[..2].iter().chain(&b) {
            winning.insert_batch(block);
        }
        check_state(&store, &winning, &known, "reorg");
        for key in &known {
            assert_eq!(store.get(key).unwrap(), winning.get(key), "reorg {key}");
        }
        drop(store);
        let store = open(&dir, &opts());
        check_state(&store, &winning, &known, "reorg after reopen");
        assert_eq!(store.stats().leaf_count, winning.len() as u64);
    }
}

#[test]
fn reverting_beyond_the_depth_is_refused() {
    let mut rng = SplitMix64(5);
    let mut known = Vec::new();
    let (_sim, dir) = sim_dir();
    let mut store = open(&dir, &opts());
    let mut roots = Vec::new();
    for _ in 0..DEPTH + 4 {
        roots.push(store.apply(&block_writes(&mut rng, &mut known)).unwrap());
        store.commit().unwrap();
    }
    let root = store.root();
    assert!(matches!(
        store.revert(&roots[0]),
        Err(StoreError::UnknownRoot(_))
    ));
    assert_eq!(store.root(), root, "a refused revert changes nothing");
    store.revert(&roots[4]).unwrap();
    assert!(matches!(
        store.revert(&[9u8; 32]),
        Err(StoreError::UnknownRoot(_))
    ));
}
