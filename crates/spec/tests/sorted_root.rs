//! Property: the one-pass root of sorted entries (`ubt_spec::sorted_root`)
//! equals the reference tree's root, for random keys, stems sharing 0 to
//! 247 leading bits, many values in one stem, keys crowded into one first
//! byte (the parallel split's shard), duplicate keys (the last write wins),
//! and geth's conformance vectors (tries.json, the root after every step).
//! Out-of-order input is reported, not hashed. Set `PROPTEST_CASES` to run
//! more cases.

// Test code: a failed unwrap is a failed test, and casts narrow test data.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::cast_possible_truncation
)]

mod common;

use alloy_primitives::B256;
use common::*;
use proptest::prelude::*;
use serde_json::Value;
use ubt_spec::hash::sha256;
use ubt_spec::sorted_root::{root_of_entries, root_of_sorted, OutOfOrder, SortedRoot};
use ubt_spec::{ReferenceTree, StateTree};

/// Cases per property unless `PROPTEST_CASES` says otherwise.
fn cases(default: u32) -> ProptestConfig {
    let cases = std::env::var("PROPTEST_CASES")
        .ok()
        .and_then(|v| v.parse().ok());
    ProptestConfig::with_cases(cases.unwrap_or(default))
}

/// The reference root of `writes` applied in order.
fn reference_root(writes: &[(B256, B256)]) -> [u8; 32] {
    let mut tree = ReferenceTree::new();
    tree.insert_batch(writes);
    tree.root()
}

/// The three ways `sorted_root` offers, each checked against the others:
/// sort-and-root, the streaming builder over a stable sort, and the
/// parallel root of a slice sorted by (key, write number) with an accessor.
fn sorted_roots(writes: &[(B256, B256)]) -> [u8; 32] {
    let mut sorted = writes.to_vec();
    let by_entries = root_of_entries(&mut sorted);
    let mut builder = SortedRoot::new();
    for (key, value) in &sorted {
        builder.push(*key, *value).expect("sorted");
    }
    let streamed = builder.finish();
    let mut numbered: Vec<(B256, B256, u64)> = writes
        .iter()
        .zip(0u64..)
        .map(|((key, value), n)| (*key, *value, n))
        .collect();
    numbered.sort_unstable_by(|a, b| a.0.cmp(&b.0).then(a.2.cmp(&b.2)));
    let parallel = root_of_sorted(&numbered, |e| (e.0, e.1)).expect("sorted");
    assert_eq!(by_entries, streamed, "root_of_entries vs SortedRoot");
    assert_eq!(by_entries, parallel, "root_of_entries vs root_of_sorted");
    by_entries
}

/// A key whose stem shares exactly `shared` leading bits with `base`
/// (bit `shared` flipped, the bits after it random from `noise`).
fn sharing(base: &[u8; 32], shared: usize, noise: &[u8; 32], sub: u8) -> B256 {
    let mut key = *base;
    key[shared / 8] ^= 0x80 >> (shared % 8);
    for bit in shared + 1..248 {
        let mask = 0x80 >> (bit % 8);
        key[bit / 8] = (key[bit / 8] & !mask) | (noise[bit / 8] & mask);
    }
    key[31] = sub;
    B256::from(key)
}

fn key_strategy() -> impl Strategy<Value = B256> {
    let base = [0x5au8; 32];
    prop_oneof![
        // Anywhere.
        any::<[u8; 32]>().prop_map(B256::from),
        // Near one base stem: sharing 0..=247 leading bits with it.
        (0usize..248, any::<[u8; 32]>(), any::<u8>())
            .prop_map(move |(shared, noise, sub)| sharing(&base, shared, &noise, sub)),
        // Deep: sharing 200..=247 bits (long chains of one-sided nodes).
        (200usize..248, any::<[u8; 32]>(), any::<u8>())
            .prop_map(move |(shared, noise, sub)| sharing(&base, shared, &noise, sub)),
        // In the base stem itself.
        any::<u8>().prop_map(move |sub| {
            let mut key = base;
            key[31] = sub;
            B256::from(key)
        }),
        // In one first byte (one of the parallel folds).
        any::<[u8; 32]>().prop_map(|mut key| {
            key[0] = 0x5a;
            B256::from(key)
        }),
    ]
}

fn value_strategy() -> impl Strategy<Value = B256> {
    prop_oneof![3 => any::<[u8; 32]>().prop_map(B256::from), 1 => Just(B256::ZERO)]
}

/// Writes with frequent duplicate keys: distinct keys first, then writes
/// that pick among them (so a key is often written several times).
fn writes_strategy(max: usize) -> impl Strategy<Value = Vec<(B256, B256)>> {
    prop::collection::vec(key_strategy(), 1..max).prop_flat_map(move |keys| {
        let count = keys.len();
        prop::collection::vec((0..count, value_strategy()), 0..2 * max).prop_map(move |picks| {
            picks
                .into_iter()
                .map(|(index, value)| (keys[index], value))
                .collect()
        })
    })
}

proptest! {
    #![proptest_config(cases(2_000))]

    #[test]
    fn sorted_root_matches_reference(writes in writes_strategy(40)) {
        prop_assert_eq!(sorted_roots(&writes), reference_root(&writes));
    }

    #[test]
    fn sorted_root_matches_reference_on_many_stems(writes in writes_strategy(700)) {
        prop_assert_eq!(sorted_roots(&writes), reference_root(&writes));
    }
}

/// More stems than one hashing batch, in one shard and across all of them.
#[test]
fn batches_of_stems_fold_like_the_reference() {
    let mut crowded = Vec::new();
    let mut spread = Vec::new();
    for i in 0..3_000u64 {
        let mut key = sha256(&i.to_be_bytes());
        spread.push((B256::from(key), B256::from(sha256(&key))));
        key[0] = 7;
        crowded.push((B256::from(key), B256::repeat_byte(i as u8)));
    }
    for writes in [&crowded, &spread] {
        assert_eq!(sorted_roots(writes), reference_root(writes));
    }
}

#[test]
fn empty_and_single_inputs() {
    assert_eq!(sorted_roots(&[]), [0u8; 32]);
    assert_eq!(SortedRoot::new().finish(), [0u8; 32]);
    let one = [(B256::repeat_byte(0xff), B256::ZERO)];
    assert_eq!(sorted_roots(&one), reference_root(&one));
    assert_ne!(sorted_roots(&one), [0u8; 32]);
}

#[test]
fn out_of_order_keys_are_reported() {
    let small = B256::repeat_byte(1);
    let large = B256::repeat_byte(2);
    let mut builder = SortedRoot::new();
    builder.push(large, B256::ZERO).expect("first");
    assert_eq!(
        builder.push(small, B256::ZERO),
        Err(OutOfOrder {
            previous: large,
            key: small
        })
    );
    let entries = [
        (small, B256::ZERO),
        (large, B256::ZERO),
        (small, B256::ZERO),
    ];
    assert_eq!(
        root_of_sorted(&entries, |e| *e),
        Err(OutOfOrder {
            previous: large,
            key: small
        })
    );
}

/// Replays a tries.json step as writes, in the order geth applied them.
fn trie_step_writes(step: &Value, out: &mut Vec<(B256, B256)>) {
    let from = step["from"].as_u64().unwrap_or(0);
    let to = step["to"].as_u64().unwrap_or(0);
    let every = step["every"].as_u64().unwrap_or(1);
    match str_field(step, "op") {
        "insert" => out.push((b256(step, "key"), b256(step, "value"))),
        "insert_generated" => {
            let indices: Vec<u64> = if step["order"].as_str() == Some("descending") {
                (from..to).rev().collect()
            } else {
                (from..to).collect()
            };
            out.extend(
                indices
                    .into_iter()
                    .map(|i| (generated_key(i), generated_value(i))),
            );
        }
        "overwrite_generated" => out.extend((from..to).filter(|i| i % every == 0).map(|i| {
            (
                generated_key(i),
                B256::from(sha256(generated_value(i).as_slice())),
            )
        })),
        "zero_generated" => out.extend(
            (from..to)
                .filter(|i| i % every == 0)
                .map(|i| (generated_key(i), B256::ZERO)),
        ),
        other => panic!("unknown op {other}"),
    }
}

#[test]
fn tries_vectors_match_geth() {
    let v = vector_file("tries.json");
    let mut checked = 0;
    for case in array(&v, "cases") {
        let name = str_field(case, "name");
        let mut writes = Vec::new();
        for (i, step) in array(case, "steps").iter().enumerate() {
            trie_step_writes(step, &mut writes);
            let root = B256::from(sorted_roots(&writes));
            assert_eq!(root, b256(step, "root_after"), "{name} step {i}");
            checked += 1;
        }
        assert_eq!(
            B256::from(sorted_roots(&writes)),
            b256(case, "root"),
            "{name} final root"
        );
    }
    assert!(checked >= 20, "only {checked} steps checked");
}
