//! Batch hashing against the one-at-a-time functions, on one core.
//!
//! * `hash64`, `hash32`: 100,000 independent messages, a loop over
//!   `hash64`/`hash32` against one `hash64_many`/`hash32_many` call.
//! * `stem_hashes/1_value`: 100,000 stems with one value each (the common
//!   case: 19 dependent compressions per stem), a loop over
//!   `stem_hash(stem, &subtree_root(..))` against one `stem_hashes` call.
//! * `stem_hashes/17_values`: 10,000 stems with 17 values each.
//!
//! Each `*/portable` variant forces the fallback path, for comparison.

// Test code: a failed unwrap is a failed test, and casts narrow test data.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::cast_possible_truncation
)]

use alloy_primitives::B256;
use criterion::{criterion_group, criterion_main, Criterion, Throughput};
use std::hint::black_box;
use ubt_spec::hash::{force_portable, hash32, hash32_many, hash64, hash64_many, sha256, Hash};
use ubt_spec::stem::{stem_hash, stem_hashes, subtree_root};
use ubt_spec::Stem;

/// Deterministic pseudo-random bytes: SHA-256 of a counter and a salt.
fn bytes<const N: usize>(i: u64, salt: u8) -> [u8; N] {
    std::array::from_fn(|j| {
        sha256(&[&i.to_le_bytes()[..], &[salt, (j / 32) as u8]].concat())[j % 32]
    })
}

fn bench_messages(c: &mut Criterion) {
    const COUNT: usize = 100_000;
    let m64: Vec<[u8; 64]> = (0..COUNT as u64).map(|i| bytes(i, 0)).collect();
    let m32: Vec<[u8; 32]> = (0..COUNT as u64).map(|i| bytes(i, 1)).collect();
    let mut out = vec![[0u8; 32]; COUNT];

    let mut group = c.benchmark_group("hash64");
    group.throughput(Throughput::Elements(COUNT as u64));
    group.bench_function("scalar", |b| {
        b.iter(|| {
            for (m, h) in m64.iter().zip(out.iter_mut()) {
                *h = hash64(black_box(m));
            }
        })
    });
    group.bench_function("many", |b| {
        b.iter(|| hash64_many(black_box(&m64), &mut out))
    });
    force_portable(true);
    group.bench_function("many/portable", |b| {
        b.iter(|| hash64_many(black_box(&m64), &mut out))
    });
    force_portable(false);
    group.finish();

    let mut group = c.benchmark_group("hash32");
    group.throughput(Throughput::Elements(COUNT as u64));
    group.bench_function("scalar", |b| {
        b.iter(|| {
            for (m, h) in m32.iter().zip(out.iter_mut()) {
                *h = hash32(black_box(m));
            }
        })
    });
    group.bench_function("many", |b| {
        b.iter(|| hash32_many(black_box(&m32), &mut out))
    });
    group.finish();
}

/// `count` stems of `values` distinct values each, at pseudo-random
/// sub-indices (a random start and a random odd stride, so all distinct).
fn stems(count: usize, values: usize) -> Vec<(Stem, Vec<(u8, B256)>)> {
    (0..count as u64)
        .map(|i| {
            let seed: [u8; 32] = bytes(i, 2);
            let mut slots: Vec<u8> = (0..values as u8)
                .map(|j| seed[0].wrapping_add(j.wrapping_mul(seed[1] | 1)))
                .collect();
            slots.sort_unstable();
            let leaves = slots
                .into_iter()
                .map(|s| (s, B256::from(bytes::<32>(i, s))))
                .collect();
            (Stem(bytes(i, 3)), leaves)
        })
        .collect()
}

fn bench_stems(c: &mut Criterion) {
    for (count, values) in [(100_000, 1), (10_000, 17)] {
        let stems = stems(count, values);
        let input: Vec<(Stem, &[(u8, B256)])> =
            stems.iter().map(|(s, v)| (*s, v.as_slice())).collect();
        let mut out: Vec<Hash> = vec![[0u8; 32]; count];
        let mut group = c.benchmark_group(format!(
            "stem_hashes/{values}_value{}",
            if values == 1 { "" } else { "s" }
        ));
        group.sample_size(20);
        group.measurement_time(std::time::Duration::from_secs(10));
        group.throughput(Throughput::Elements(count as u64));
        group.bench_function("scalar", |b| {
            b.iter(|| {
                for ((stem, leaves), h) in stems.iter().zip(out.iter_mut()) {
                    let root = subtree_root(leaves.iter().map(|(i, v)| (*i, v)));
                    *h = stem_hash(black_box(stem), &root);
                }
            })
        });
        group.bench_function("batched", |b| {
            b.iter(|| stem_hashes(black_box(&input), &mut out))
        });
        force_portable(true);
        group.bench_function("batched/portable", |b| {
            b.iter(|| stem_hashes(black_box(&input), &mut out))
        });
        force_portable(false);
        group.finish();
    }
}

criterion_group!(benches, bench_messages, bench_stems);
criterion_main!(benches);
