//! The account-level path of a block on a database with and without the
//! flat index of account values: what the read-locality work costs and
//! saves where the tree is already local.
//!
//! The state: a contract of `UBT_BENCH_SLOTS` (default 50,000) consecutive
//! storage slots (one stem per 256 slots: the `sload_seq`/`sstore_seq`
//! contract), a token of as many mapping slots (one stem each), and
//! 10,000 one-slot accounts; built once per variant in a temporary
//! directory.
//!
//! * `sload_consecutive/{flat,noflat}`: 1,024 reads of consecutive slots,
//!   one `get_owned` call each (as the EVM issues them), cache warm.
//! * `sload_mapping/{flat,noflat}`: 1,024 reads of the token's slots, one
//!   call each, cache warm.
//! * `sstore_consecutive/{flat,noflat}`: one block of 3,300 writes to
//!   consecutive slots (`apply_owned`, buckets cached), the layer then
//!   discarded outside the measurement.
//! * `sstore_consecutive_committed/{flat,noflat}`: the same block, applied
//!   again and again with new values, each committed outside the
//!   measurement (changes pile up until checkpoints, as along a chain).

// Test code: a failed unwrap is a failed test, and casts narrow test data.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::cast_possible_truncation
)]

use std::hint::black_box;
use std::path::PathBuf;
use std::time::{Duration, Instant};

use alloy_primitives::{Address, B256, U256};
use criterion::{criterion_group, criterion_main, Criterion};
use ubt_engine::{Db, Options};
use ubt_spec::hash::sha256;
use ubt_spec::key::storage_slot_key;

const CONTRACT: Address = Address::repeat_byte(0x5e);
const TOKEN: Address = Address::repeat_byte(0x77);
const READS: u64 = 1_024;
const WRITES: u64 = 3_300;

fn slots() -> u64 {
    std::env::var("UBT_BENCH_SLOTS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(50_000)
}

fn mapping_slot(i: u64) -> U256 {
    U256::from_be_bytes(sha256(&i.to_le_bytes()))
}

/// `(owner, tree key, value)` of the whole state, sorted by owner and key.
fn records(slots: u64) -> Vec<(Address, B256, B256)> {
    let mut out = Vec::new();
    for i in 0..slots {
        let value = B256::from(U256::from(i + 1));
        out.push((CONTRACT, storage_slot_key(&CONTRACT, &U256::from(i)), value));
        out.push((TOKEN, storage_slot_key(&TOKEN, &mapping_slot(i)), value));
    }
    for i in 0..10_000u64 {
        let owner = Address::from_word(B256::from(U256::from(i + 1_000)));
        out.push((
            owner,
            storage_slot_key(&owner, &U256::from(3u8)),
            B256::repeat_byte(1),
        ));
    }
    out.sort_by_key(|r| (r.0, r.1));
    out
}

/// A temporary database directory, removed when dropped.
struct TempPath(PathBuf);

impl Drop for TempPath {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

fn build(records: &[(Address, B256, B256)], flat: bool) -> (Db, TempPath) {
    let path = std::env::temp_dir().join(format!(
        "ubt-account-block-{}-{}",
        std::process::id(),
        if flat { "flat" } else { "noflat" }
    ));
    let _ = std::fs::remove_dir_all(&path);
    let mut entries: Vec<(B256, B256)> = records.iter().map(|(_, k, v)| (*k, *v)).collect();
    entries.sort_unstable();
    let (mut db, _) = Db::build(&path, Options::default(), entries).unwrap();
    if flat {
        db.build_flat_index(records.iter().map(|r| Ok(*r))).unwrap();
    }
    (db, TempPath(path))
}

fn benches(c: &mut Criterion) {
    let slots = slots();
    let records = records(slots);
    let consecutive: Vec<B256> = (slots / 4..slots / 4 + READS)
        .map(|i| storage_slot_key(&CONTRACT, &U256::from(i)))
        .collect();
    let mapping: Vec<B256> = (0..READS)
        .map(|i| storage_slot_key(&TOKEN, &mapping_slot(i * 7 % slots)))
        .collect();
    let writes: Vec<(Address, B256, B256)> = (slots / 2..slots / 2 + WRITES)
        .map(|i| {
            let key = storage_slot_key(&CONTRACT, &U256::from(i));
            (CONTRACT, key, B256::from(U256::from(i + 7)))
        })
        .collect();
    for flat in [true, false] {
        let (mut db, path) = build(&records, flat);
        let name = if flat { "flat" } else { "noflat" };
        let read_each = |db: &Db, owner: Address, keys: &[B256]| {
            for key in keys {
                black_box(db.get_owned(&[(owner, *key)]).unwrap());
            }
        };
        c.bench_function(&format!("sload_consecutive/{name}"), |b| {
            b.iter(|| read_each(&db, CONTRACT, &consecutive));
        });
        c.bench_function(&format!("sload_mapping/{name}"), |b| {
            b.iter(|| read_each(&db, TOKEN, &mapping));
        });
        // Warm the written stems' buckets, as the block's reads would.
        let written: Vec<(Address, B256)> = writes.iter().map(|(o, k, _)| (*o, *k)).collect();
        db.get_owned(&written).unwrap();
        c.bench_function(&format!("sstore_consecutive/{name}"), |b| {
            b.iter_custom(|iterations| {
                let mut spent = Duration::ZERO;
                for _ in 0..iterations {
                    let start = Instant::now();
                    black_box(db.apply_owned(&writes).unwrap());
                    spent += start.elapsed();
                    db.discard_uncommitted();
                }
                spent
            });
        });
        // Blocks that stay: each commits (outside the measurement), so the
        // index's changes grow until a checkpoint, as in a chain of blocks.
        c.bench_function(&format!("sstore_consecutive_committed/{name}"), |b| {
            let mut round = 0u64;
            b.iter_custom(|iterations| {
                let mut spent = Duration::ZERO;
                for _ in 0..iterations {
                    round += 1;
                    let block: Vec<(Address, B256, B256)> = writes
                        .iter()
                        .map(|(o, k, _)| (*o, *k, B256::from(U256::from(round))))
                        .collect();
                    let start = Instant::now();
                    black_box(db.apply_owned(&block).unwrap());
                    spent += start.elapsed();
                    db.commit().unwrap();
                }
                spent
            });
        });
        drop(db);
        drop(path);
    }
}

criterion_group!(account_block, benches);
criterion_main!(account_block);
