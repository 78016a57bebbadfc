//! Property: the fast tree and the reference tree agree on every root and
//! every value, for random sequences of inserts, overwrites and zero writes,
//! applied one at a time or in (parallel) batches, and whatever the
//! insertion order.
//!
//! Keys are drawn to exercise the tree's shapes: random keys, keys sharing a
//! stem (one stem, many slots), and stems that differ from a pool stem in a
//! single late bit (long internal chains, up to depth 247). Set
//! `PROPTEST_CASES` to run more cases.

// Test code: a failed unwrap is a failed test, and casts narrow test data.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::cast_possible_truncation
)]

use alloy_primitives::B256;
use proptest::prelude::*;
use ubt_spec::{FastTree, ReferenceTree, StateTree};

/// Cases per property unless `PROPTEST_CASES` says otherwise.
fn cases(default: u32) -> ProptestConfig {
    let cases = std::env::var("PROPTEST_CASES")
        .ok()
        .and_then(|v| v.parse().ok());
    ProptestConfig::with_cases(cases.unwrap_or(default))
}

/// A small pool of base stems that generated keys cluster around.
fn pool_stem(index: u8) -> [u8; 31] {
    let mut stem = [0u8; 31];
    stem[0] = index.wrapping_mul(97); // spread over shards, some collide
    stem[1] = index;
    stem
}

fn key_strategy() -> impl Strategy<Value = B256> {
    prop_oneof![
        any::<[u8; 32]>().prop_map(B256::from),
        (0u8..6, any::<u8>()).prop_map(|(pool, sub)| {
            let mut key = [0u8; 32];
            key[..31].copy_from_slice(&pool_stem(pool));
            key[31] = sub;
            B256::from(key)
        }),
        (0u8..6, 0usize..248, any::<u8>()).prop_map(|(pool, bit, sub)| {
            let mut key = [0u8; 32];
            key[..31].copy_from_slice(&pool_stem(pool));
            key[bit / 8] ^= 0x80 >> (bit % 8);
            key[31] = sub;
            B256::from(key)
        }),
    ]
}

fn value_strategy() -> impl Strategy<Value = B256> {
    prop_oneof![3 => any::<[u8; 32]>().prop_map(B256::from), 1 => Just(B256::ZERO)]
}

fn writes_strategy(max: usize) -> impl Strategy<Value = Vec<(B256, B256)>> {
    prop::collection::vec((key_strategy(), value_strategy()), 0..max)
}

fn assert_same_state(fast: &mut FastTree, reference: &ReferenceTree, probes: &[(B256, B256)]) {
    assert_eq!(fast.root(), reference.compute_root(), "roots differ");
    assert_eq!(fast.len(), reference.len() as u64, "leaf counts differ");
    for (key, _) in probes {
        assert_eq!(fast.get(key), reference.get(key), "value of {key} differs");
    }
}

proptest! {
    #![proptest_config(cases(3_500))]

    /// Single inserts with a root check after every block of writes.
    #[test]
    fn fast_tree_matches_reference(blocks in prop::collection::vec(writes_strategy(24), 1..6)) {
        let mut fast = FastTree::new();
        let mut reference = ReferenceTree::new();
        let mut all = Vec::new();
        for block in &blocks {
            for (key, value) in block {
                fast.insert(*key, *value);
                reference.insert(*key, *value);
            }
            all.extend_from_slice(block);
            assert_same_state(&mut fast, &reference, &all);
        }
    }
}

proptest! {
    #![proptest_config(cases(300))]

    /// Parallel batch insert and bulk build give the reference root.
    #[test]
    fn batches_and_bulk_build_match_reference(
        first in writes_strategy(3_000),
        second in writes_strategy(1_500),
    ) {
        let mut reference = ReferenceTree::new();
        reference.insert_batch(&first);
        let mut batched = FastTree::new();
        batched.insert_batch(&first);
        let mut built = FastTree::from_entries(first.clone());
        assert_same_state(&mut batched, &reference, &first);
        assert_same_state(&mut built, &reference, &first);

        reference.insert_batch(&second);
        batched.insert_batch(&second);
        built.insert_batch(&second);
        assert_same_state(&mut batched, &reference, &second);
        assert_same_state(&mut built, &reference, &second);
    }

    /// The root depends on the final key/value set only, not on the order of
    /// distinct keys' insertion.
    #[test]
    fn insertion_order_does_not_matter(
        writes in writes_strategy(200),
        seed in any::<u64>(),
    ) {
        // Keep the last write per key so every permutation has the same set.
        let mut last = std::collections::BTreeMap::new();
        for (key, value) in &writes {
            last.insert(*key, *value);
        }
        let mut entries: Vec<(B256, B256)> = last.into_iter().collect();
        let mut forward = FastTree::new();
        forward.insert_batch(&entries);
        // Deterministic shuffle from the seed.
        let mut state = seed | 1;
        for i in (1..entries.len()).rev() {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            entries.swap(i, (state % (i as u64 + 1)) as usize);
        }
        let mut shuffled = FastTree::new();
        for (key, value) in &entries {
            shuffled.insert(*key, *value);
        }
        prop_assert_eq!(forward.root(), shuffled.root());
    }
}
