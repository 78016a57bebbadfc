//! The store's fuzz target bodies (`ubt_store::fuzzing`, run by cargo-fuzz
//! from `fuzz/`) over their seed inputs (the structures of a real small
//! database, and pseudo-random programs for the model target) and
//! thousands of mutations of them: no panic, and no broken property (an
//! accepted structure re-encodes to its bytes, the store agrees with the
//! model). This is the short run of every fuzz target that `cargo test`
//! does on each CI run, on the stable toolchain; docs/reliability.md has
//! the figures of the long cargo-fuzz runs.
//!
//! `UBT_LONG=1` runs ten times the mutations.

// Test code: a failed unwrap is a failed test, and casts narrow test data.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::cast_possible_truncation
)]

mod common;

use std::time::Instant;

use common::long_mode;
use ubt_spec::fuzzing::Mutator;
use ubt_store::fuzzing::{decoders, model, seeds::seeds};

type Body = fn(&[u8]) -> Result<(), String>;

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// Runs `body` over `seeds` and `mutations` mutations of them (each with
/// the checksum-fixing bit of the control byte set half the time).
fn run(name: &str, body: Body, seeds: &[Vec<u8>], mutations: usize) -> usize {
    assert!(!seeds.is_empty(), "{name}: no seed inputs");
    let started = Instant::now();
    let mutations = if long_mode() {
        10 * mutations
    } else {
        mutations
    };
    let mut mutator = Mutator::new(0xf022 ^ name.len() as u64);
    for seed in seeds {
        if let Err(finding) = body(seed) {
            panic!("{name}: seed input {}: {finding}", hex(seed));
        }
    }
    for _ in 0..mutations {
        let seed = &seeds[mutator.below(seeds.len())];
        let other = &seeds[mutator.below(seeds.len())];
        let mut input = mutator.mutate(seed, other);
        if let Some(control) = input.first_mut() {
            if mutator.below(2) == 0 {
                *control |= 1;
            }
        }
        if let Err(finding) = body(&input) {
            panic!("{name}: input {}: {finding}", hex(&input));
        }
    }
    println!(
        "{name}: {} seeds, {mutations} mutations, {:.1} s",
        seeds.len(),
        started.elapsed().as_secs_f64()
    );
    seeds.len() + mutations
}

#[test]
fn decoder_bodies_hold_over_seeds_and_mutations() {
    let seeds = seeds();
    let targets: [(&str, Body, &[Vec<u8>], usize); 11] = [
        ("bucket", decoders::bucket, &seeds.bucket, 20_000),
        ("trie_page", decoders::trie_page, &seeds.trie_page, 20_000),
        ("meta_slot", decoders::meta_slot, &seeds.meta_slot, 20_000),
        (
            "meta_choice",
            decoders::meta_choice,
            &seeds.meta_choice,
            5_000,
        ),
        (
            "wal_record",
            decoders::wal_record,
            &seeds.wal_record,
            20_000,
        ),
        (
            "wal_replay",
            decoders::wal_replay,
            &seeds.wal_replay,
            10_000,
        ),
        ("wal_mark", decoders::wal_mark, &seeds.wal_mark, 20_000),
        (
            "revert_segment",
            decoders::revert_segment,
            &seeds.revert_segment,
            20_000,
        ),
        ("store_open", decoders::store_open, &seeds.store_open, 2_000),
        ("flat_leaf", decoders::flat_leaf, &seeds.flat_leaf, 20_000),
        ("flat_node", decoders::flat_node, &seeds.flat_node, 20_000),
    ];
    let total: usize = targets
        .iter()
        .map(|(name, body, seeds, mutations)| run(name, *body, seeds, *mutations))
        .sum();
    println!("{total} inputs, 0 findings");
}

#[test]
fn model_body_holds_over_programs_and_mutations() {
    let seeds = seeds();
    run("model", model::model, &seeds.model, 500);
}

#[test]
fn the_checksum_bit_lets_mutations_past_the_checksum() {
    // Mutated bytes behind a recomputed checksum reach the structural
    // checks: a bucket with one value byte flipped decodes once its
    // checksum is recomputed, and is rejected as it is.
    let seeds = seeds();
    let bucket = &seeds.bucket[0][1..];
    let prefix_len = usize::from(bucket[6]);
    let mut bits = [0u8; 31];
    let at = ubt_store::bucket::codec::FIXED_HEADER_BYTES;
    bits[..prefix_len.div_ceil(8)].copy_from_slice(&bucket[at..at + prefix_len.div_ceil(8)]);
    let prefix = ubt_store::prefix::Prefix::from_parts(bits, prefix_len).expect("prefix");
    let mut flipped = bucket.to_vec();
    let last = flipped.len() - 1;
    flipped[last] ^= 1;
    let crc = |b: &[u8]| u32::from_le_bytes([b[0], b[1], b[2], b[3]]);
    let decode = |b: &[u8], crc: u32| ubt_store::bucket::codec::decode(b, &prefix, crc, &"t");
    assert!(decode(&flipped, crc(&flipped)).is_err());
    let fixed = ubt_store::format::checksum(&flipped[4..]);
    flipped[..4].copy_from_slice(&fixed.to_le_bytes());
    assert!(decode(&flipped, fixed).is_ok());
}

/// Programs the model target once failed on, kept as regressions.
#[test]
fn model_findings_stay_fixed() {
    // A checkpoint whose meta sync fails with ENOSPC leaves the new meta
    // record in the page cache only; a reopen of the directory as left
    // trusted it and cut the WAL, so a power loss after the reopen went
    // back one commit, past commits acknowledged since. The open now
    // syncs the files recovery reads before building on them.
    let program = "9dd8c568430202da87c216141f3a39fb45b20fa97cde50935e074c4116b950e5325ca279a5\
                   11c595a9446900dcf3b199468b1723e20b21b8502999c87d511c3096cfd3346458f0d7c7ab\
                   68fae95a803c06f35a8752ffa8d4d3cdfba7fb2463d84283d0963825798d89f5019c2eef1e\
                   a373ae0e9b752e725cba4a3d43115d8219b4240ecdaf0e66ffbd40454b93e5263da887885f\
                   77a888110153958a5f2e168741d62b888f612b7da2d911122f57df84047efff1a02465faee\
                   cac2b66fa2d911122f57df84047eff20b4b28e396dd5e1268b577272fc30cbb488eddb3bcb\
                   545d0dd6af8101fb947557627eb20bc6285003b13d790e1b9d9e4d1555";
    let bytes: Vec<u8> = (0..program.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(&program[i..i + 2], 16).expect("hex"))
        .collect();
    assert_eq!(bytes.len(), 251);
    assert_eq!(model::model(&bytes), Ok(()));
}

/// Found by the model body (a mutation of the program above, with revert
/// depth 1, reached when the model seeds are the 18 pseudo-random programs
/// only): after a reopen, while the checkpoint's revert segment is
/// still unread, persisted layers are not trimmed to the revert depth, so
/// `revert` undid three persisted blocks with `revert_depth` 1. A revert
/// must succeed exactly within the window: the last `revert_depth`
/// persisted blocks.
#[test]
fn a_revert_beyond_the_revert_depth_is_refused_after_a_reopen() {
    use std::sync::Arc;
    use ubt_store::{Options, Store, StoreError};
    let opts = Options {
        revert_depth: 1,
        ..common::options(2, 1 << 20)
    };
    let (_sim, dir) = common::sim_dir();
    let mut rng = common::SplitMix64(7);
    let mut block = || -> Vec<(alloy_primitives::B256, alloy_primitives::B256)> {
        (0..20)
            .map(|_| (rng.bytes32().into(), rng.bytes32().into()))
            .collect()
    };
    let mut store = Store::open(Arc::clone(&dir), opts.clone()).expect("create");
    store.apply(&block()).expect("apply");
    store.commit().expect("commit");
    // The checkpoint writes a revert segment (one block).
    store.checkpoint().expect("checkpoint");
    let three_back = store.root();
    drop(store);
    let mut store = Store::open(dir, opts).expect("reopen");
    for _ in 0..3 {
        store.apply(&block()).expect("apply");
        store.commit().expect("commit");
    }
    match store.revert(&three_back) {
        Err(StoreError::UnknownRoot(_)) => {}
        other => panic!("a revert of three persisted blocks with revert depth 1: {other:?}"),
    }
}
