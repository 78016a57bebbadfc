//! `stem_hashes` agrees with the one-stem-at-a-time `stem_hash` of
//! `subtree_root`: stems with 1, 2, 3, 17 and 256 values at random
//! sub-indices, batches of one size and mixed, on the accelerated path (where
//! the CPU has one) and on the forced portable path; plus a property test over
//! arbitrary mixes. Set `PROPTEST_CASES` to run more.

// Test code: a failed unwrap is a failed test, and casts narrow test data.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::cast_possible_truncation
)]

use alloy_primitives::B256;
use proptest::prelude::*;
use ubt_spec::hash::{force_portable, Hash};
use ubt_spec::rng::SplitMix64;
use ubt_spec::stem::{stem_hash, stem_hashes, subtree_root};
use ubt_spec::Stem;

/// The test's draws over the workspace's seeded generator.
struct Rng(SplitMix64);

impl Rng {
    fn bytes<const N: usize>(&mut self) -> [u8; N] {
        let mut out = [0u8; N];
        self.0.fill(&mut out);
        out
    }

    /// A stem with `count` values at distinct random sub-indices, ascending.
    fn stem(&mut self, count: usize) -> (Stem, Vec<(u8, B256)>) {
        let mut slots: Vec<u8> = (0..=255).collect();
        for i in 0..count {
            let j = i + self.0.below((256 - i) as u64) as usize;
            slots.swap(i, j);
        }
        let mut chosen = slots[..count].to_vec();
        chosen.sort_unstable();
        let values = chosen
            .into_iter()
            .map(|i| (i, B256::from(self.bytes::<32>())))
            .collect();
        (Stem(self.bytes()), values)
    }
}

/// The expected hashes, one stem at a time through `sha2` only (the
/// portable path), so they do not share the kernel under test.
fn scalar(stems: &[(Stem, Vec<(u8, B256)>)]) -> Vec<Hash> {
    let portable = ubt_spec::hash::is_forced_portable();
    force_portable(true);
    let hashes = stems
        .iter()
        .map(|(stem, values)| stem_hash(stem, &subtree_root(values.iter().map(|(i, v)| (*i, v)))))
        .collect();
    force_portable(portable);
    hashes
}

fn batched(stems: &[(Stem, Vec<(u8, B256)>)]) -> Vec<Hash> {
    let input: Vec<(Stem, &[(u8, B256)])> = stems.iter().map(|(s, v)| (*s, v.as_slice())).collect();
    let mut out = vec![[0xffu8; 32]; stems.len()];
    stem_hashes(&input, &mut out);
    out
}

fn check(portable: bool) {
    force_portable(portable);
    let mut rng = Rng(SplitMix64::new(7 + u64::from(portable)));
    for count in [1, 2, 3, 17, 256] {
        for stems in [0, 1, 2, 3, 4, 5, 31, 100] {
            let input: Vec<_> = (0..stems).map(|_| rng.stem(count)).collect();
            assert_eq!(
                batched(&input),
                scalar(&input),
                "{stems} stems of {count} values"
            );
        }
    }
    // A mix in one call, long enough to span several chunks.
    let sizes = [1, 256, 2, 1, 17, 3, 1, 1, 200, 5, 0, 64, 1];
    let input: Vec<_> = (0..600).map(|i| rng.stem(sizes[i % sizes.len()])).collect();
    assert_eq!(batched(&input), scalar(&input), "mixed sizes");
    force_portable(false);
}

#[test]
fn batched_matches_scalar_on_the_default_path() {
    check(false);
}

#[test]
fn batched_matches_scalar_on_the_portable_path() {
    check(true);
}

#[test]
fn sibling_and_edge_patterns_match() {
    let patterns: [&[u8]; 8] = [
        &[0],
        &[255],
        &[0, 1],
        &[254, 255],
        &[0, 255],
        &[1, 2],
        &[0, 1, 2, 3, 4, 5, 6, 7],
        &[127, 128],
    ];
    let input: Vec<_> = patterns
        .iter()
        .enumerate()
        .map(|(n, pattern)| {
            let values = pattern
                .iter()
                .map(|&i| (i, B256::repeat_byte(i ^ n as u8)))
                .collect();
            (Stem([n as u8; 31]), values)
        })
        .collect();
    assert_eq!(batched(&input), scalar(&input));
    // Zero values are present values (their leaf hash is not zero).
    let zeros = vec![(Stem([9; 31]), vec![(3, B256::ZERO), (4, B256::ZERO)])];
    assert_eq!(batched(&zeros), scalar(&zeros));
}

#[test]
#[should_panic(expected = "one output per stem")]
fn batched_rejects_mismatched_output() {
    let stems: [(Stem, &[(u8, B256)]); 1] = [(Stem([0; 31]), &[])];
    stem_hashes(&stems, &mut []);
}

fn cases(default: u32) -> ProptestConfig {
    let cases = std::env::var("PROPTEST_CASES")
        .ok()
        .and_then(|v| v.parse().ok());
    ProptestConfig::with_cases(cases.unwrap_or(default))
}

proptest! {
    #![proptest_config(cases(64))]

    #[test]
    fn batched_matches_scalar_for_any_mix(
        stems in prop::collection::vec(
            (any::<[u8; 31]>(), prop::collection::btree_map(any::<u8>(), any::<[u8; 32]>(), 0..40)),
            0..40,
        ),
        portable in any::<bool>(),
    ) {
        let input: Vec<(Stem, Vec<(u8, B256)>)> = stems
            .into_iter()
            .map(|(stem, values)| {
                (Stem(stem), values.into_iter().map(|(i, v)| (i, B256::from(v))).collect())
            })
            .collect();
        force_portable(portable);
        let got = batched(&input);
        force_portable(false);
        prop_assert_eq!(got, scalar(&input));
    }
}
