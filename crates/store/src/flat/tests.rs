//! The flat index against a sorted map, over an in-memory file.

// Test code: casts narrow random test data.
#![allow(clippy::cast_possible_truncation)]

use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;

use alloy_primitives::{Address, B256};
use ubt_spec::rng::SplitMix64;

use super::directory::Directory;
use super::index::{FlatIndex, FlatIo};
use super::key::FlatKey;
use super::leaf::{self, Record, LEAF_BYTES_MAX};
use super::node::{self, Child};
use crate::error::{Result, StoreError};
use crate::format::{checksum, Extent, BLOCK_BYTES};

/// Blocks in memory; every extent read is checked against what was written.
#[derive(Default)]
struct MemIo {
    blocks: HashMap<u64, Vec<u8>>,
    next: u64,
    reads: std::cell::Cell<usize>,
}

impl FlatIo for MemIo {
    fn read(&self, extents: &[Extent]) -> Result<Vec<Arc<[u8]>>> {
        self.reads.set(self.reads.get() + extents.len());
        extents
            .iter()
            .map(|e| {
                let bytes = self.blocks.get(&e.offset).expect("a live extent");
                assert_eq!(bytes.len(), e.byte_len());
                assert_eq!(checksum(&bytes[4..]), e.crc);
                Ok(Arc::from(bytes.as_slice()))
            })
            .collect()
    }

    fn write(&mut self, bytes: &[u8]) -> Result<Extent> {
        let offset = self.next * BLOCK_BYTES as u64;
        self.next += bytes.len().div_ceil(BLOCK_BYTES) as u64;
        self.blocks.insert(offset, bytes.to_vec());
        Ok(Extent::at_block(
            offset / BLOCK_BYTES as u64,
            bytes.len(),
            leaf::stored_crc(bytes),
        ))
    }
}

impl MemIo {
    fn release(&mut self, extents: &[Extent]) {
        for e in extents {
            assert!(
                self.blocks.remove(&e.offset).is_some(),
                "released twice: {e:?}"
            );
        }
    }
}

fn owner(n: u64) -> Address {
    let mut bytes = [0u8; 20];
    bytes[12..].copy_from_slice(&n.to_be_bytes());
    Address::from(bytes)
}

fn random_b256(rng: &mut SplitMix64) -> B256 {
    let mut out = [0u8; 32];
    for chunk in out.chunks_mut(8) {
        chunk.copy_from_slice(&rng.next_u64().to_le_bytes());
    }
    B256::from(out)
}

/// A value with 0..=32 significant bytes.
fn random_value(rng: &mut SplitMix64) -> B256 {
    let mut value = random_b256(rng);
    let zeros = (rng.next_u64() % 33) as usize;
    value[..zeros].fill(0);
    value
}

/// A key whose owner follows a heavy tail: owner 0 takes about half.
fn random_key(rng: &mut SplitMix64, owners: u64) -> FlatKey {
    let pick = rng.next_u64() % (owners * 2);
    let who = pick.saturating_sub(owners);
    FlatKey::new(&owner(who), &random_b256(rng))
}

#[test]
fn leaves_round_trip_and_look_up() {
    for seed in 0..20u64 {
        let mut rng = SplitMix64::new(seed);
        let mut records: BTreeMap<FlatKey, B256> = BTreeMap::new();
        let n = 1 + rng.next_u64() % 3_000;
        for _ in 0..n {
            records.insert(random_key(&mut rng, 1 + seed % 7), random_value(&mut rng));
        }
        let all: Vec<Record> = records.iter().map(|(k, v)| (*k, *v)).collect();
        let fill = 200 + (rng.next_u64() % 4_000) as usize;
        let pieces = leaf::pack(all.clone(), fill);
        assert_eq!(pieces.concat(), all, "packing keeps every record in order");
        for piece in &pieces {
            let bytes = leaf::encode(piece);
            assert_eq!(bytes.len(), leaf::encoded_len(piece));
            assert!(bytes.len() <= LEAF_BYTES_MAX);
            assert_eq!(leaf::decode(&bytes, &"t").unwrap(), *piece);
            for (key, value) in piece {
                assert_eq!(leaf::lookup(&bytes, key, &"t").unwrap(), Some(*value));
            }
            let absent = random_key(&mut rng, 3);
            if !records.contains_key(&absent) {
                assert_eq!(leaf::lookup(&bytes, &absent, &"t").unwrap(), None);
            }
        }
        if pieces.len() > 1 {
            // Balanced: no leaf but the last is under half the fill.
            let share = leaf::encoded_len(&all) / pieces.len();
            for piece in &pieces[..pieces.len() - 1] {
                assert!(
                    leaf::encoded_len(piece) * 2 >= share.min(fill),
                    "sliver leaf"
                );
            }
        }
    }
}

#[test]
fn lookups_find_keys_that_share_a_stem_or_a_first_word() {
    // Consecutive slots share 31 bytes of their tree key; other keys share
    // only the first word. Every present key is found, every absent one
    // between them is not, in every owner's group of a leaf.
    let mut rng = SplitMix64::new(11);
    let mut records: BTreeMap<FlatKey, B256> = BTreeMap::new();
    let mut absent = Vec::new();
    for who in 0..3u64 {
        let stem = random_b256(&mut rng);
        for sub_index in 0..=255u8 {
            let mut tree_key = stem;
            tree_key[31] = sub_index;
            // Every third sub-index and every word twin at an odd one absent.
            let mut twin = tree_key;
            twin[8 + usize::from(sub_index % 20)] ^= 0x40;
            if sub_index % 3 == 0 {
                absent.push(FlatKey::new(&owner(who), &tree_key));
            } else {
                records.insert(FlatKey::new(&owner(who), &tree_key), random_value(&mut rng));
            }
            if sub_index % 2 == 0 {
                records.insert(FlatKey::new(&owner(who), &twin), random_value(&mut rng));
            } else {
                absent.push(FlatKey::new(&owner(who), &twin));
            }
        }
    }
    let all: Vec<Record> = records.iter().map(|(k, v)| (*k, *v)).collect();
    for piece in leaf::pack(all, LEAF_BYTES_MAX) {
        let bytes = leaf::encode(&piece);
        for (key, value) in &piece {
            assert_eq!(
                leaf::lookup(&bytes, key, &"t").unwrap(),
                Some(*value),
                "{key:?}"
            );
        }
        for key in &absent {
            assert_eq!(leaf::lookup(&bytes, key, &"t").unwrap(), None, "{key:?}");
        }
    }
}

/// Sets the checksum of `bytes` (after a mutation) so the decoder's other
/// checks are reached.
fn reseal(bytes: &mut [u8]) {
    let crc = checksum(&bytes[4..]);
    bytes[..4].copy_from_slice(&crc.to_le_bytes());
}

#[test]
fn leaf_decoding_is_canonical_and_total() {
    let mut rng = SplitMix64::new(7);
    let records: Vec<Record> = {
        let mut map = BTreeMap::new();
        for _ in 0..60 {
            map.insert(random_key(&mut rng, 2), random_value(&mut rng));
        }
        map.into_iter().collect()
    };
    let piece = leaf::pack(records, LEAF_BYTES_MAX).remove(0);
    let bytes = leaf::encode(&piece);
    let mut flipped = bytes.clone();
    flipped[100] ^= 1;
    assert!(
        leaf::decode(&flipped, &"t").unwrap_err().is_corruption(),
        "checksum"
    );
    for _ in 0..5_000 {
        let mut mutated = bytes.clone();
        let at = (rng.next_u64() as usize) % mutated.len();
        mutated[at] = rng.next_u64() as u8;
        if rng.next_u64().is_multiple_of(4) {
            let cut = 4 + (rng.next_u64() as usize) % (mutated.len() - 4);
            mutated.truncate(cut);
        }
        reseal(&mut mutated);
        match leaf::decode(&mutated, &"t") {
            Ok(decoded) => assert_eq!(
                leaf::encode(&decoded),
                mutated,
                "accepted non-canonical bytes"
            ),
            Err(error) => assert!(error.is_corruption()),
        }
        // Lookups over damaged bytes return an answer or an error, never panic.
        let _ = leaf::lookup(&mutated, &piece[0].0, &"t");
    }
}

#[test]
fn node_decoding_is_canonical_and_total() {
    let mut rng = SplitMix64::new(9);
    let mut keys: Vec<FlatKey> = (0..40).map(|_| random_key(&mut rng, 5)).collect();
    keys.sort();
    keys.dedup();
    let children: Vec<Child> = keys
        .iter()
        .enumerate()
        .map(|(i, key)| Child {
            key: *key,
            extent: Extent::at_block(i as u64 + 1, 100, 7),
        })
        .collect();
    let bytes = node::encode(3, &children);
    assert_eq!(node::decode(&bytes, 3, "t").unwrap(), children);
    assert!(
        node::decode(&bytes, 2, "t").is_err(),
        "a node at the wrong level"
    );
    for _ in 0..5_000 {
        let mut mutated = bytes.clone();
        let at = (rng.next_u64() as usize) % mutated.len();
        mutated[at] = rng.next_u64() as u8;
        reseal(&mut mutated);
        match node::decode(&mutated, 3, "t") {
            Ok(decoded) => assert_eq!(node::encode(3, &decoded), mutated),
            Err(error) => assert!(error.is_corruption()),
        }
    }
}

/// Every leaf decodes, holds keys between its fence and the next, and the
/// leaves together hold exactly `model`'s persisted records.
fn check_leaves(index: &FlatIndex, io: &MemIo, model: &BTreeMap<FlatKey, B256>) {
    let leaves = index.directory().leaves();
    let mut all = Vec::new();
    for (i, fence) in leaves.iter().enumerate() {
        let bytes = io.read(&[fence.extent]).unwrap();
        let records = leaf::decode(&bytes[0], &"t").unwrap();
        assert_eq!(records[0].0, fence.key, "a fence is its leaf's first key");
        if let Some(next) = leaves.get(i + 1) {
            assert!(records.last().unwrap().0 < next.key);
        }
        all.extend(records);
    }
    let expected: Vec<Record> = model.iter().map(|(k, v)| (*k, *v)).collect();
    assert_eq!(all, expected);
    assert_eq!(index.stored_records(), model.len() as u64);
}

fn reload(index: &FlatIndex, io: &MemIo) -> FlatIndex {
    let Some(root) = index.root() else {
        return FlatIndex::default();
    };
    let mut first = |extent: &Extent| -> Result<FlatKey> {
        let bytes = io.read(&[*extent])?;
        Ok(leaf::decode(&bytes[0], &"t")?[0].0)
    };
    let mut read = |extents: &[Extent]| io.read(extents);
    let directory = Directory::load(root, &mut first, &mut read).unwrap();
    FlatIndex::new(directory, index.stored_records())
}

#[test]
fn index_matches_a_sorted_map_through_checkpoints_and_reloads() {
    for seed in 0..12u64 {
        let mut rng = SplitMix64::new(100 + seed);
        let mut io = MemIo::default();
        let initial: BTreeMap<FlatKey, B256> = (0..rng.next_u64() % 20_000)
            .map(|_| (random_key(&mut rng, 50), random_value(&mut rng)))
            .collect();
        let mut index =
            FlatIndex::build(initial.iter().map(|(k, v)| Ok((*k, *v))), &mut io).unwrap();
        let mut stored = initial.clone();
        let mut tip = initial;
        check_leaves(&index, &io, &stored);
        for round in 0..30 {
            let keys: Vec<FlatKey> = tip.keys().copied().collect();
            for _ in 0..rng.next_u64() % 400 {
                let key = if !keys.is_empty() && rng.next_u64().is_multiple_of(2) {
                    keys[(rng.next_u64() as usize) % keys.len()]
                } else {
                    random_key(&mut rng, 50)
                };
                if rng.next_u64().is_multiple_of(5) {
                    tip.remove(&key);
                    index.set(key, None);
                } else {
                    let value = random_value(&mut rng);
                    tip.insert(key, value);
                    index.set(key, Some(value));
                }
            }
            let probes: Vec<FlatKey> = (0..64)
                .map(|i| {
                    if i % 2 == 0 && !keys.is_empty() {
                        keys[(rng.next_u64() as usize) % keys.len()]
                    } else {
                        random_key(&mut rng, 50)
                    }
                })
                .collect();
            let got = index.get_many(&probes, &io).unwrap();
            for (key, value) in probes.iter().zip(got) {
                assert_eq!(value, tip.get(key).copied(), "seed {seed} round {round}");
                assert_eq!(
                    index.get_many(std::slice::from_ref(key), &io).unwrap(),
                    vec![value]
                );
            }
            if rng.next_u64().is_multiple_of(3) {
                let changes = index.sorted_changes();
                let written = index.write(&changes, &mut io).unwrap();
                io.release(&written.released);
                index.settled(Default::default(), Default::default());
                stored.clone_from(&tip);
                check_leaves(&index, &io, &stored);
                if rng.next_u64().is_multiple_of(2) {
                    index = reload(&index, &io);
                    check_leaves(&index, &io, &stored);
                }
            }
        }
    }
}

#[test]
fn a_small_change_rewrites_one_leaf_and_its_path() {
    let mut rng = SplitMix64::new(5);
    let mut io = MemIo::default();
    let records: BTreeMap<FlatKey, B256> = (0..200_000)
        .map(|_| (random_key(&mut rng, 1_000), random_value(&mut rng)))
        .collect();
    let mut index = FlatIndex::build(records.iter().map(|(k, v)| Ok((*k, *v))), &mut io).unwrap();
    let height = index.directory().height();
    assert!(
        height >= 2,
        "200,000 records need two levels of nodes, got {height}"
    );
    let (key, _) = records.iter().nth(123_456).unwrap();
    let mut changes = BTreeMap::new();
    changes.insert(*key, Some(B256::repeat_byte(1)));
    let written = index.write(&changes, &mut io).unwrap();
    assert_eq!(written.leaves_written, 1);
    assert_eq!(written.nodes_written, height, "one node per level");
    assert_eq!(written.released.len(), 1 + height);
    io.release(&written.released);
    index.settled(Default::default(), Default::default());
    let reads = io.reads.get();
    assert_eq!(
        index.get_many(std::slice::from_ref(key), &io).unwrap(),
        vec![Some(B256::repeat_byte(1))]
    );
    assert_eq!(io.reads.get() - reads, 1, "a read is one leaf");
}

#[test]
fn one_accounts_records_share_leaves() {
    // 100,000 records of one owner with small values pack ~110 to a leaf.
    let mut rng = SplitMix64::new(11);
    let mut io = MemIo::default();
    let records: BTreeMap<FlatKey, B256> = (0..100_000u64)
        .map(|i| {
            (
                FlatKey::new(&owner(1), &random_b256(&mut rng)),
                B256::from(alloy_primitives::U256::from(i + 1)),
            )
        })
        .collect();
    let index = FlatIndex::build(records.iter().map(|(k, v)| Ok((*k, *v))), &mut io).unwrap();
    let per_leaf = records.len() / index.directory().leaves().len();
    assert!(per_leaf >= 90, "{per_leaf} records per leaf");
}

#[test]
fn build_refuses_unsorted_input() {
    let a = FlatKey::new(&owner(2), &B256::ZERO);
    let b = FlatKey::new(&owner(1), &B256::ZERO);
    let mut io = MemIo::default();
    let error = FlatIndex::build([Ok((a, B256::ZERO)), Ok((b, B256::ZERO))], &mut io).unwrap_err();
    assert!(matches!(error, StoreError::UnsortedInput { index: 1 }));
}

/// The 256 keys of one stem of `who` (stem bytes all `stem`), random
/// full-width values: about four leaves.
fn full_stem(rng: &mut SplitMix64, who: u64, stem: u8) -> Vec<(FlatKey, B256)> {
    (0..=u8::MAX)
        .map(|sub| {
            let mut tree_key = [stem; 32];
            tree_key[31] = sub;
            let mut value = random_b256(rng);
            value[0] |= 1;
            (FlatKey::new(&owner(who), &B256::from(tree_key)), value)
        })
        .collect()
}

#[test]
fn dense_stems_come_from_the_fences_and_writes_to_them_mark_the_stem() {
    use super::route::Route;
    let mut rng = SplitMix64::new(21);
    let mut io = MemIo::default();
    let mut records: BTreeMap<FlatKey, B256> = (0..3_000)
        .map(|_| (random_key(&mut rng, 20), random_value(&mut rng)))
        .collect();
    records.extend(full_stem(&mut rng, 3, 0x44));
    let mut index = FlatIndex::build(records.iter().map(|(k, v)| Ok((*k, *v))), &mut io).unwrap();
    let dense = full_stem(&mut rng, 3, 0x44);
    let stem = dense[0].0.stem();
    assert_eq!(index.dense_stems().len(), 1);
    assert!(index.dense_stems().contains(&stem));
    // A scattered key: a change of its own, read from the changes.
    let (scattered, _) = records.iter().next().unwrap();
    assert_eq!(index.record(*scattered, Some(B256::ZERO)), None);
    assert_eq!(index.changes().len(), 1);
    assert!(index.stem_changes().is_empty());
    assert!(matches!(index.route(scattered), Route::Index(_)));
    // A dense stem's keys read from the tree, written or not; a write
    // marks the stem and holds no change of its own.
    assert!(dense.iter().all(|(key, _)| index.route(key) == Route::Tree));
    assert_eq!(index.record(dense[7].0, None), Some(stem));
    assert_eq!(index.record(dense[9].0, Some(B256::ZERO)), Some(stem));
    assert_eq!(index.record(dense[7].0, Some(B256::ZERO)), Some(stem));
    assert_eq!(index.changes().len(), 1);
    assert_eq!(index.stem_changes().len(), 1);
    let written = index.stem_changes()[&stem];
    assert_eq!(written.iter().collect::<Vec<_>>(), vec![7, 9]);
    assert!(index.has_changes());
    // The budget counts the positions written, not the whole stem: two
    // positions cost about two changes.
    assert!(
        index.changes_bytes() < 16 * 96,
        "{} bytes for three changes",
        index.changes_bytes()
    );
    // A fresh stem of a few keys stays with the index; once a checkpoint
    // has written all 256 of its values, its fences make it dense.
    let fresh = full_stem(&mut rng, 5, 0x91);
    assert_eq!(index.record(fresh[0].0, Some(fresh[0].1)), None);
    assert!(matches!(index.route(&fresh[3].0), Route::Index(_)));
    let changes: BTreeMap<FlatKey, Option<B256>> =
        fresh.iter().map(|(k, v)| (*k, Some(*v))).collect();
    let written = index.write(&changes, &mut io).unwrap();
    io.release(&written.released);
    index.settled(Default::default(), Default::default());
    assert_eq!(index.dense_stems().len(), 2);
    assert!(fresh.iter().all(|(key, _)| index.route(key) == Route::Tree));
    assert!(!index.has_changes());
}
