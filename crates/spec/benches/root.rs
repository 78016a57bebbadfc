//! Root computation throughput.
//!
//! * `from_scratch/1M`: root of 1,000,000 random 32-byte keys/values built
//!   from nothing (parallel sort + bottom-up build + hashing).
//! * `incremental/4096_updates_on_1M`: 4,096 random updates (new keys and
//!   overwrites) applied to that tree, then the new root.
//! * `sha256_64B`: raw SHA-256 of 64-byte messages on one core, the bound
//!   that root computation is measured against.
//!
//! `UBT_BENCH_N` overrides the tree size.

// Test code: a failed unwrap is a failed test, and casts narrow test data.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::cast_possible_truncation
)]

use alloy_primitives::B256;
use criterion::{criterion_group, criterion_main, BatchSize, Criterion, Throughput};
use std::hint::black_box;
use ubt_spec::hash::{hash64, sha256};
use ubt_spec::{FastTree, StateTree};

fn tree_size() -> usize {
    std::env::var("UBT_BENCH_N")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(1_000_000)
}

/// Deterministic pseudo-random 32-byte values.
fn random_entries(count: usize, salt: u64) -> Vec<(B256, B256)> {
    (0..count as u64)
        .map(|i| {
            let key = sha256(&[salt.to_be_bytes(), i.to_be_bytes()].concat());
            (B256::from(key), B256::from(sha256(&key)))
        })
        .collect()
}

fn bench_root(c: &mut Criterion) {
    let n = tree_size();
    let entries = random_entries(n, 0);
    let mut group = c.benchmark_group("root");
    group.sample_size(10);
    group.throughput(Throughput::Elements(n as u64));
    group.bench_function(format!("from_scratch/{n}"), |b| {
        b.iter_batched(
            || entries.clone(),
            |e| black_box(FastTree::from_entries(e).root_hash()),
            BatchSize::LargeInput,
        )
    });

    // Hashes a from-scratch root costs: per stem one leaf hash (32-byte
    // input), 8 subtree hashes and the stem hash; one per internal node.
    let mut tree = FastTree::from_entries(entries.clone());
    let stems = tree.stem_count();
    let internals = tree.internal_count();
    eprintln!(
        "tree: {n} leaves, {stems} stems, {internals} internal nodes, {} hashes from scratch \
         ({:.2} per leaf)",
        10 * stems + internals,
        (10 * stems + internals) as f64 / n as f64
    );

    // Steady state: each iteration applies a fresh block of 4,096 updates
    // (half new keys, half overwrites) to the same tree and computes the root.
    const UPDATES: usize = 4_096;
    group.throughput(Throughput::Elements(UPDATES as u64));
    let mut round = 0u64;
    group.bench_function(format!("incremental/{UPDATES}_updates_on_{n}"), |b| {
        b.iter_custom(|iterations| {
            let mut elapsed = std::time::Duration::ZERO;
            for _ in 0..iterations {
                round += 1;
                let mut updates = random_entries(UPDATES / 2, round);
                let stride = n / (UPDATES / 2);
                let offset = round as usize % stride;
                updates.extend(
                    entries[offset..]
                        .iter()
                        .step_by(stride)
                        .take(UPDATES / 2)
                        .map(|(k, v)| (*k, !*v)),
                );
                let start = std::time::Instant::now();
                tree.insert_batch(&updates);
                black_box(tree.root_hash());
                elapsed += start.elapsed();
            }
            elapsed
        })
    });
    group.finish();
}

fn bench_sha(c: &mut Criterion) {
    let mut group = c.benchmark_group("sha256_64B");
    const HASHES: u64 = 100_000;
    group.throughput(Throughput::Elements(HASHES));
    group.bench_function("single_core", |b| {
        b.iter(|| {
            let mut message = [7u8; 64];
            for i in 0..HASHES {
                message[0] = i as u8;
                let h = hash64(&message);
                message[32..].copy_from_slice(&h);
            }
            black_box(message)
        })
    });
    group.finish();
}

criterion_group!(benches, bench_root, bench_sha);
criterion_main!(benches);
