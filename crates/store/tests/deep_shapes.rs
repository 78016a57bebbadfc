//! Every structure the writer emits must be accepted by the reader, also
//! for the deepest shapes the trie can take: stems that share 200 to 247
//! leading bits, at every group depth 1..8, written by both the bulk
//! builder and incremental applies, then reopened, verified and read.
//!
//! Random keys almost never share more than ~40 bits, so the property
//! tests elsewhere never reached the bottom of the upper trie; these cases
//! build it on purpose (two stems differing only in their last bit land in
//! one bucket of the longest prefix, 244 bits, under an internal
//! upper-trie node at depth 243, below page roots at every multiple of G).

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
use ubt_store::Store;

/// A key of `stem` at sub-index `sub`.
fn key(stem: &[u8; 31], sub: u8) -> B256 {
    let mut bytes = [0u8; 32];
    bytes[..31].copy_from_slice(stem);
    bytes[31] = sub;
    B256::from(bytes)
}

/// Stems that share their first `shared` bits with `base` and differ at
/// bit `shared` (plus random bits after), `count` of them: a cluster whose
/// trie is `shared` levels deep before it branches.
fn cluster(rng: &mut SplitMix64, base: &[u8; 31], shared: usize, count: usize) -> Vec<[u8; 31]> {
    let mut stems = vec![*base];
    // Only 2^(248 - shared) stems share `shared` bits with the base.
    let count = count.min(1 << (248 - shared).min(16));
    while stems.len() < count {
        let mut stem = *base;
        // Flip a bit at or after `shared`, and randomise the later ones.
        let flip = shared + rng.below((248 - shared) as u64) as usize;
        stem[flip / 8] ^= 0x80 >> (flip % 8);
        for bit in flip + 1..248 {
            if rng.below(2) == 1 {
                stem[bit / 8] ^= 0x80 >> (bit % 8);
            }
        }
        if !stems.contains(&stem) {
            stems.push(stem);
        }
    }
    stems
}

/// Writes filling `values` slots of every stem.
fn writes_of(rng: &mut SplitMix64, stems: &[[u8; 31]], values: usize) -> Vec<(B256, B256)> {
    let mut writes = Vec::new();
    for stem in stems {
        for sub in 0..values {
            writes.push((key(stem, sub as u8), B256::from(rng.bytes32())));
        }
    }
    writes
}

/// Reopens, checks the root, `verify` and every value.
fn check_reopen(
    dir: &std::sync::Arc<dyn ubt_store::io::StoreDir>,
    g: u8,
    reference: &ReferenceTree,
    context: &str,
) {
    let store = Store::open(std::sync::Arc::clone(dir), options(g, 1 << 20))
        .unwrap_or_else(|e| panic!("{context}: reopen: {e}"));
    assert_eq!(
        store.root(),
        reference.compute_root(),
        "{context}: root after reopen"
    );
    let report = store
        .verify()
        .unwrap_or_else(|e| panic!("{context}: verify: {e}"));
    assert!(
        report.problems.is_empty(),
        "{context}: verify: {:?}",
        report.problems
    );
    for (key, value) in reference.entries() {
        assert_eq!(
            store.get(key).unwrap(),
            Some(*value),
            "{context}: value of {key}"
        );
    }
}

/// The adversarial review's reproduction: two stems differing only in
/// their last bit, 64 values each, bulk-built at group depth 8.
#[test]
fn two_stems_differing_in_the_last_bit_reopen_at_every_group_depth() {
    let mut rng = SplitMix64(7);
    let mut a = [0u8; 31];
    a[..].copy_from_slice(&rng.bytes32()[..31]);
    let mut b = a;
    b[30] ^= 1;
    let writes = writes_of(&mut rng, &[a, b], 64);
    let mut reference = ReferenceTree::new();
    reference.insert_batch(&writes);
    for g in 1..=8u8 {
        let context = format!("G {g}, bulk build");
        let (_sim, dir) = sim_dir();
        let mut sorted = writes.clone();
        sorted.sort_by_key(|(k, _)| *k);
        let (store, _) = Store::build(std::sync::Arc::clone(&dir), options(g, 1 << 20), sorted)
            .unwrap_or_else(|e| panic!("{context}: build: {e}"));
        drop(store);
        check_reopen(&dir, g, &reference, &context);

        let context = format!("G {g}, applied");
        let (_sim, dir) = sim_dir();
        let mut store = open(&dir, &options(g, 1 << 20));
        store.apply(&writes).unwrap();
        store.checkpoint().unwrap();
        drop(store);
        check_reopen(&dir, g, &reference, &context);
    }
}

/// Clusters sharing every prefix length from 200 to 247 bits, at every
/// group depth, written incrementally (blocks, checkpoints, reopens) and
/// by the bulk builder.
#[test]
fn shared_prefixes_200_to_247_bits_reopen_at_every_group_depth() {
    let seed = std::env::var("UBT_SEED")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(0x5eed_0d33);
    println!("seed {seed}");
    for g in 1..=8u8 {
        let mut rng = SplitMix64(seed ^ u64::from(g));
        let mut reference = ReferenceTree::new();
        let (_sim, dir) = sim_dir();
        let mut all = Vec::new();
        for shared in (200..=247).step_by(1) {
            let mut base = [0u8; 31];
            base.copy_from_slice(&rng.bytes32()[..31]);
            // Enough values that the cluster overflows one bucket and must
            // split all the way down to its shared prefix.
            let count = 2 + rng.below(3) as usize;
            let stems = cluster(&mut rng, &base, shared, count);
            let values = 40 + rng.below(40) as usize;
            let writes = writes_of(&mut rng, &stems, values);
            all.extend(writes.iter().copied());
            let context = format!("seed {seed} G {g} shared {shared}");
            let mut store = open(&dir, &options(g, 1 << 20));
            let root = store
                .apply(&writes)
                .unwrap_or_else(|e| panic!("{context}: apply: {e}"));
            reference.insert_batch(&writes);
            assert_eq!(root, reference.compute_root(), "{context}: root");
            store
                .checkpoint()
                .unwrap_or_else(|e| panic!("{context}: checkpoint: {e}"));
            drop(store);
            if shared % 8 == 7 {
                check_reopen(&dir, g, &reference, &context);
            }
        }
        check_reopen(&dir, g, &reference, &format!("seed {seed} G {g} applied"));

        let (_sim, dir) = sim_dir();
        let mut sorted = all;
        sorted.sort_by_key(|(k, _)| *k);
        let (store, _) = Store::build(std::sync::Arc::clone(&dir), options(g, 1 << 20), sorted)
            .unwrap_or_else(|e| panic!("seed {seed} G {g}: build: {e}"));
        assert_eq!(store.root(), reference.compute_root());
        drop(store);
        check_reopen(&dir, g, &reference, &format!("seed {seed} G {g} built"));
    }
}
