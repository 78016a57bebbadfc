//! Shared helpers for the store's integration tests.
#![allow(dead_code, missing_docs)]

pub mod workload;

use std::sync::Arc;

use alloy_primitives::B256;
use ubt_store::io::sim::SimDir;
use ubt_store::io::StoreDir;
use ubt_store::{Options, Store};

/// The tests' seeded generator: every test prints its seed and can be
/// rerun from it.
pub use ubt_spec::rng::SplitMix64;

/// A key drawn from a mix that exercises every shape: fresh random stems,
/// values added to stems seen before, and stems sharing long prefixes.
pub fn mixed_key(rng: &mut SplitMix64, known: &mut Vec<B256>) -> B256 {
    let choice = rng.below(10);
    let mut key = rng.bytes32();
    if choice < 3 && !known.is_empty() {
        // Another slot of a known stem.
        let base = known[rng.below(known.len() as u64) as usize];
        key[..31].copy_from_slice(&base[..31]);
    } else if choice < 5 {
        // A long shared prefix.
        let shared = 2 + rng.below(12) as usize;
        for byte in key.iter_mut().take(shared) {
            *byte = 0x3c;
        }
    }
    let key = B256::from(key);
    known.push(key);
    key
}

/// A simulated directory and a handle on it.
pub fn sim_dir() -> (SimDir, Arc<dyn StoreDir>) {
    let dir = SimDir::new();
    let shared: Arc<dyn StoreDir> = Arc::new(dir.clone());
    (dir, shared)
}

/// Options with a group depth and a memory budget.
pub fn options(group_depth: u8, memory_budget_bytes: usize) -> Options {
    Options {
        group_depth: Some(group_depth),
        memory_budget_bytes,
        ..Options::default()
    }
}

/// Opens a store, panicking with context.
pub fn open(dir: &Arc<dyn StoreDir>, options: &Options) -> Store {
    Store::open(Arc::clone(dir), options.clone()).unwrap_or_else(|e| panic!("open failed: {e}"))
}

/// A unique temporary directory path.
pub fn temp_path(name: &str) -> std::path::PathBuf {
    static COUNTER: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
    let n = COUNTER.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    std::env::temp_dir().join(format!("ubt-store-test-{}-{name}-{n}", std::process::id()))
}

/// Loads `test-vectors/<name>` (copied into the repository).
pub fn vector_file(name: &str) -> serde_json::Value {
    let path = manifest_dir().join("../../test-vectors").join(name);
    let text = std::fs::read_to_string(&path)
        .unwrap_or_else(|e| panic!("cannot read {}: {e}", path.display()));
    serde_json::from_str(&text).unwrap_or_else(|e| panic!("bad JSON in {}: {e}", path.display()))
}

/// Bytes of a `"0x…"` string field.
pub fn hex_field(v: &serde_json::Value, field: &str) -> Vec<u8> {
    let text = v[field]
        .as_str()
        .unwrap_or_else(|| panic!("field {field} missing in {v}"));
    hex::decode(text.trim_start_matches("0x")).unwrap_or_else(|e| panic!("bad hex {text}: {e}"))
}

/// A 32-byte field.
pub fn b256_field(v: &serde_json::Value, field: &str) -> B256 {
    B256::from_slice(&hex_field(v, field))
}

/// The vectors' generator: `key_i = sha256("ubt-vector" || u64_be(i))`, `value_i = sha256(key_i)`.
pub fn generated_entry(i: u64) -> (B256, B256) {
    let mut preimage = b"ubt-vector".to_vec();
    preimage.extend_from_slice(&i.to_be_bytes());
    let key = ubt_spec::hash::sha256(&preimage);
    (B256::from(key), B256::from(ubt_spec::hash::sha256(&key)))
}

/// The seeds to run: `UBT_SEED` if set, else `default`.
pub fn seed_from_env(default: u64) -> u64 {
    match std::env::var("UBT_SEED") {
        Ok(seed) => {
            let seed = seed.trim();
            let parsed = match seed.strip_prefix("0x") {
                Some(hex) => u64::from_str_radix(hex, 16),
                None => seed.parse(),
            };
            parsed.expect("UBT_SEED is a number (decimal or 0x-hex)")
        }
        Err(_) => default,
    }
}

/// A block of 1..=`max` random writes over `mixed_key`, about one in eight
/// a zero value (a present zero leaf).
pub fn random_writes(rng: &mut SplitMix64, known: &mut Vec<B256>, max: u64) -> Vec<(B256, B256)> {
    let size = 1 + rng.below(max) as usize;
    writes_over_mixed_keys(rng, known, size)
}

/// `n` writes over `mixed_key`, about one in eight a zero value.
pub fn writes_over_mixed_keys(
    rng: &mut SplitMix64,
    known: &mut Vec<B256>,
    n: usize,
) -> Vec<(B256, B256)> {
    (0..n)
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

/// `verify` finds nothing wrong and counts exactly `values` values.
pub fn verify_counts(store: &Store, values: usize) -> Result<(), String> {
    let report = store.verify().map_err(|e| format!("verify: {e}"))?;
    if !report.is_ok() {
        return Err(format!("verify: {:?}", report.problems));
    }
    if report.leaves != values as u64 {
        return Err(format!(
            "verify counted {} values, the reference has {values}",
            report.leaves
        ));
    }
    Ok(())
}

/// Reads every probe back, batched (falling back to one `get` per key
/// when the batch fails). Every value read must equal `expected`'s; a read
/// may fail only with `StoreError::Corrupted`. Returns the number of
/// reads that failed that way, or a description of the first wrong value
/// or unexpected error.
pub fn check_reads(
    store: &Store,
    expected: &ubt_spec::ReferenceTree,
    probes: &[B256],
) -> Result<usize, String> {
    use ubt_spec::StateTree;
    let mut corrupted = 0usize;
    for chunk in probes.chunks(1024) {
        match store.get_many(chunk) {
            Ok(values) => {
                for (key, got) in chunk.iter().zip(values) {
                    if got != expected.get(key) {
                        return Err(format!(
                            "get_many({key}) = {got:?}, expected {:?}",
                            expected.get(key)
                        ));
                    }
                }
            }
            Err(error) if error.is_corruption() => {
                for key in chunk {
                    match store.get(key) {
                        Ok(got) if got == expected.get(key) => {}
                        Ok(got) => {
                            return Err(format!(
                                "get({key}) = {got:?}, expected {:?}",
                                expected.get(key)
                            ))
                        }
                        Err(error) if error.is_corruption() => corrupted += 1,
                        Err(error) => return Err(format!("get({key}): {error}")),
                    }
                }
            }
            Err(error) => return Err(format!("get_many: {error}")),
        }
    }
    Ok(corrupted)
}

/// The account a key belongs to in workloads on a database with a flat
/// index: a function of the key (so every write of a key names the same
/// account), over three accounts (so each spans many leaves).
pub fn owner_of(key: &B256) -> alloy_primitives::Address {
    alloy_primitives::Address::repeat_byte(1 + key[0] % 3)
}

/// `writes` with their accounts ([`owner_of`]).
pub fn owned(writes: &[(B256, B256)]) -> Vec<(alloy_primitives::Address, B256, B256)> {
    writes
        .iter()
        .map(|(key, value)| (owner_of(key), *key, *value))
        .collect()
}

/// Applies `writes` as a block: with their accounts on a database with a
/// flat index, by bare key otherwise.
pub fn apply_block(
    store: &mut Store,
    writes: &[(B256, B256)],
) -> Result<[u8; 32], ubt_store::StoreError> {
    if store.has_flat_index() {
        store.apply_owned(&owned(writes))
    } else {
        store.apply(writes)
    }
}

/// On a database with a flat index, reads every probe through it
/// (account-level reads at the tip) and compares with `expected`; a read
/// may fail only with `StoreError::Corrupted`. Returns how many did.
pub fn check_flat_reads(
    store: &Store,
    expected: &ubt_spec::ReferenceTree,
    probes: &[B256],
) -> Result<usize, String> {
    use ubt_spec::StateTree;
    if !store.has_flat_index() {
        return Ok(0);
    }
    let mut corrupted = 0usize;
    for chunk in probes.chunks(256) {
        let pairs: Vec<_> = chunk.iter().map(|key| (owner_of(key), *key)).collect();
        match store.get_owned(&pairs) {
            Ok(values) => {
                for (key, got) in chunk.iter().zip(values) {
                    if got != expected.get(key) {
                        return Err(format!(
                            "get_owned({key}) = {got:?}, expected {:?}",
                            expected.get(key)
                        ));
                    }
                }
            }
            Err(error) if error.is_corruption() => corrupted += chunk.len(),
            Err(error) => return Err(format!("get_owned: {error}")),
        }
    }
    Ok(corrupted)
}

/// `0x`-prefixed lowercase hex of a hash.
pub fn hex_root(root: &[u8; 32]) -> String {
    let mut out = String::from("0x");
    for byte in root {
        out.push_str(&format!("{byte:02x}"));
    }
    out
}

/// Whether the reliability suite's long mode is on (`UBT_LONG=1`): each
/// test then runs its long figures (see docs/reliability.md).
pub fn long_mode() -> bool {
    std::env::var("UBT_LONG").is_ok_and(|v| v != "0" && !v.is_empty())
}

/// This crate's directory: cargo's run-time value first (a build cache
/// shared between clones may hold a binary compiled in another clone),
/// the compile-time one otherwise.
fn manifest_dir() -> std::path::PathBuf {
    std::env::var_os("CARGO_MANIFEST_DIR")
        .map_or_else(|| env!("CARGO_MANIFEST_DIR").into(), Into::into)
}
