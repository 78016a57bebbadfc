//! Seed inputs for every target: the structures of a small real database
//! (built on the simulated disk with layers, a revert, checkpoints and WAL
//! records after the last one), each wrapped with the control bytes its
//! target expects, and pseudo-random programs for the model target. The
//! flat index's leaves and directory nodes come from a second small
//! database that keeps one.

use std::sync::Arc;

use alloy_primitives::{Address, B256};
use ubt_spec::hash::sha256;

use crate::flat::node;
use crate::format::Extent;
use crate::io::sim::SimDir;
use crate::io::StoreDir;
use crate::meta::{Meta, META_SLOTS, META_SLOT_BYTES};
use crate::options::Options;
use crate::prefix::Prefix;
use crate::upper::page;
use crate::{wal, Store, DATA_FILE, META_FILE, WAL_FILE};

/// Seed inputs, one list per target.
#[derive(Clone, Debug, Default)]
pub struct Seeds {
    /// [`super::decoders::bucket`].
    pub bucket: Vec<Vec<u8>>,
    /// [`super::decoders::trie_page`].
    pub trie_page: Vec<Vec<u8>>,
    /// [`super::decoders::meta_slot`].
    pub meta_slot: Vec<Vec<u8>>,
    /// [`super::decoders::meta_choice`].
    pub meta_choice: Vec<Vec<u8>>,
    /// [`super::decoders::wal_record`].
    pub wal_record: Vec<Vec<u8>>,
    /// [`super::decoders::wal_replay`].
    pub wal_replay: Vec<Vec<u8>>,
    /// [`super::decoders::wal_mark`].
    pub wal_mark: Vec<Vec<u8>>,
    /// [`super::decoders::revert_segment`].
    pub revert_segment: Vec<Vec<u8>>,
    /// [`super::decoders::store_open`].
    pub store_open: Vec<Vec<u8>>,
    /// [`super::decoders::flat_leaf`].
    pub flat_leaf: Vec<Vec<u8>>,
    /// [`super::decoders::flat_node`].
    pub flat_node: Vec<Vec<u8>>,
    /// [`super::model::model`].
    pub model: Vec<Vec<u8>>,
}

fn key(i: u64) -> B256 {
    let mut key = sha256(&i.to_le_bytes());
    if i.is_multiple_of(3) {
        key[..3].fill(0x5a);
    }
    key[31] = (i % 7) as u8;
    B256::from(key)
}

/// Builds the database the structure seeds come from; returns its files.
fn database() -> Option<(Vec<u8>, Vec<u8>, Vec<u8>)> {
    let sim = SimDir::new();
    let dir: Arc<dyn StoreDir> = Arc::new(sim.clone());
    let options = Options {
        group_depth: Some(2),
        memory_budget_bytes: 1 << 20,
        revert_depth: 4,
        ..Options::default()
    };
    let mut store = Store::open(dir, options).ok()?;
    let block = |b: u64, n: u64| -> Vec<(B256, B256)> {
        (0..n)
            .map(|i| {
                let k = key((b * 31 + i * 7) % 600);
                let low_bytes = [(b & 0xff) as u8, (i & 0xff) as u8];
                (k, B256::from(sha256(&low_bytes)))
            })
            .collect()
    };
    for b in 0..6 {
        store.apply(&block(b, if b == 2 { 400 } else { 30 })).ok()?;
        store.commit().ok()?;
    }
    let before = store.root();
    store.apply(&block(6, 20)).ok()?;
    store.commit().ok()?;
    store.revert(&before).ok()?;
    store.checkpoint().ok()?;
    for b in 7..10 {
        store.apply(&block(b, 25)).ok()?;
        store.commit().ok()?;
    }
    drop(store);
    Some((
        sim.file_bytes(META_FILE)?,
        sim.file_bytes(DATA_FILE)?,
        sim.file_bytes(WAL_FILE)?,
    ))
}

fn bytes_of<'a>(data: &'a [u8], at: &Extent) -> Option<&'a [u8]> {
    data.get(usize::try_from(at.offset).ok()?..usize::try_from(at.end()).ok()?)
}

/// Every seed input.
pub fn seeds() -> Seeds {
    let mut seeds = Seeds::default();
    if let Some((meta, data, wal_bytes)) = database() {
        structure_seeds(&mut seeds, &meta, &data, &wal_bytes);
    }
    if let Some((meta, data)) = flat_database() {
        flat_seeds(&mut seeds, &meta, &data);
    }
    // Programs for the model target: pseudo-random bytes.
    let mut state = 0x5eed_u64;
    for len in [16usize, 48, 96, 160, 240, 320] {
        for _ in 0..3 {
            let program = (0..len)
                .map(|_| {
                    state = state
                        .wrapping_mul(6_364_136_223_846_793_005)
                        .wrapping_add(1);
                    (state >> 56) as u8
                })
                .collect();
            seeds.model.push(program);
        }
    }
    seeds.model.extend(bulk_programs());
    seeds
}

/// Programs for the model target around bulk applies: layers applied and
/// partly persisted, then a bulk apply, alone or with an I/O fault of each
/// kind armed a few operations ahead of it (so that it fails in the commit
/// it starts with, while staging, or in its checkpoint), then more blocks,
/// a revert and a reopen. (The byte layout is the model body's: three
/// option bytes, then per operation its code, argument and operands, then
/// one byte choosing whether to check reads.)
fn bulk_programs() -> Vec<Vec<u8>> {
    let mut programs = Vec::new();
    for ahead in [0u8, 2, 3, 5, 8, 12, 16, 20] {
        for kind in 0..4u8 {
            let mut program = vec![1, ahead % 3, 3];
            // A large block, a small one, a persist of the first only.
            program.extend_from_slice(&[2, 40 + ahead, 7, 1]);
            program.extend_from_slice(&[0, 3, 1, 2, 3, 4, 5, 6, 7, 8, 1]);
            program.extend_from_slice(&[3, 0, 1]);
            // The fault, then a bulk apply (a checkpoint code whose
            // argument is 3 modulo 4) of 16 + 4 * 60 writes.
            program.extend_from_slice(&[9, ahead * 4 + kind, 5, 3 + 4 * kind, 60, ahead]);
            // The power-loss choice of the recovery, and a read check.
            program.extend_from_slice(&[kind, 0, 1, 9, 17, 33, 65, 129, 200, 255, 77]);
            // More blocks, a commit, a revert, a reopen.
            program.extend_from_slice(&[1, 2, 10, 11, 12, 13, 14, 15, 1]);
            program.extend_from_slice(&[4, 0, 1]);
            program.extend_from_slice(&[6, 0, 1]);
            program.extend_from_slice(&[7, 0, 0, 3, 5, 7, 9, 11, 13, 15, 17]);
            programs.push(program);
        }
    }
    programs
}

/// The seeds taken from the database's files.
fn structure_seeds(seeds: &mut Seeds, meta: &[u8], data: &[u8], wal_bytes: &[u8]) {
    let with = |control: u8, bytes: &[u8]| {
        let mut input = vec![control];
        input.extend_from_slice(bytes);
        input
    };
    seeds.meta_choice.push(with(0, meta));
    let mut newest: Option<Meta> = None;
    for slot in 0..META_SLOTS {
        let Some(bytes) = meta.get(slot * META_SLOT_BYTES..(slot + 1) * META_SLOT_BYTES) else {
            continue;
        };
        if let Ok(decoded) = Meta::decode(bytes, slot) {
            #[allow(clippy::cast_possible_truncation)] // slot < META_SLOTS (4)
            let control = (slot as u8) << 1;
            seeds.meta_slot.push(with(control, bytes));
            if newest.is_none_or(|m| m.generation < decoded.generation) {
                newest = Some(decoded);
            }
        }
    }
    let Some(newest) = newest else { return };
    // Pages and buckets, walked from the root entry.
    let g = newest.group_depth;
    let mut queue: Vec<(Prefix, Extent)> = Vec::new();
    match newest.root.extent {
        Some(at) if !newest.root.leaf => queue.push((Prefix::ROOT, at)),
        Some(at) => seeds.bucket.extend(bytes_of(data, &at).map(|b| with(0, b))),
        None => {}
    }
    while let Some((prefix, at)) = queue.pop() {
        let Some(bytes) = bytes_of(data, &at) else {
            continue;
        };
        seeds.trie_page.push(with(0, bytes));
        let Ok(decoded) = page::decode(bytes, g, &prefix, at.crc, "seed") else {
            continue;
        };
        for (rel, index, entry) in decoded.entries {
            let Some(extent) = entry.extent else { continue };
            if entry.leaf {
                seeds
                    .bucket
                    .extend(bytes_of(data, &extent).map(|b| with(0, b)));
                continue;
            }
            let mut child = Some(prefix);
            for bit in (0..rel).rev() {
                child = child.and_then(|c| c.child(u8::from((index >> bit) & 1 == 1)));
            }
            if let Some(child) = child {
                queue.push((child, extent));
            }
        }
    }
    if let Some(at) = newest.revert_log {
        seeds
            .revert_segment
            .extend(bytes_of(data, &at).map(|b| with(0, b)));
    }
    let mut at = wal::RECORDS_START_INDEX;
    while let Some(record) = wal_bytes.get(at..).and_then(wal::decode) {
        let len = record.encoded_len();
        seeds.wal_record.push(with(0, &wal_bytes[at..at + len]));
        at += len;
    }
    // The log's header marks: both slots as a log's first bytes, and each
    // slot alone (the control byte naming it).
    let marks = &wal_bytes[..wal_bytes.len().min(wal::RECORDS_START_INDEX)];
    seeds.wal_mark.push(with(0, marks));
    for (slot, bytes) in marks.chunks_exact(wal::MARK_BYTES).enumerate() {
        #[allow(clippy::cast_possible_truncation)] // two slots
        let control = (slot as u8) << 1;
        seeds.wal_mark.push(with(control, bytes));
    }
    let low = |x: u64| (x & 0xff) as u8;
    let mut replay = vec![0, low(newest.generation), low(newest.commit_seq)];
    replay.extend_from_slice(wal_bytes);
    seeds.wal_replay.push(replay);
    let mut image = vec![0u8];
    for file in [meta, data] {
        let Ok(len) = u32::try_from(file.len()) else {
            return;
        };
        image.extend_from_slice(&len.to_le_bytes());
        image.extend_from_slice(file);
    }
    image.extend_from_slice(wal_bytes);
    seeds.store_open.push(image);
}

/// Builds a small database with a flat index (10,000 values of three
/// accounts, in four blocks each checkpointed: about 140 leaves under two
/// levels of directory nodes); returns its meta and data files.
fn flat_database() -> Option<(Vec<u8>, Vec<u8>)> {
    let sim = SimDir::new();
    let dir: Arc<dyn StoreDir> = Arc::new(sim.clone());
    let options = Options {
        group_depth: Some(2),
        memory_budget_bytes: 4 << 20,
        flat_index: true,
        ..Options::default()
    };
    let mut store = Store::open(dir, options).ok()?;
    for b in 0..4u64 {
        let writes: Vec<(Address, B256, B256)> = (0..2500u64)
            .map(|i| {
                let n = b * 2500 + i;
                #[allow(clippy::cast_possible_truncation)] // n % 3 < 3
                let owner = Address::repeat_byte(0x10 + (n % 3) as u8);
                let mut value = [0u8; 32];
                // Small values (a few bytes stored) and whole hashes.
                if n.is_multiple_of(5) {
                    value = sha256(&n.to_be_bytes());
                } else {
                    value[24..].copy_from_slice(&(n + 1).to_be_bytes());
                }
                (
                    owner,
                    B256::from(sha256(&n.to_le_bytes())),
                    B256::from(value),
                )
            })
            .collect();
        store.apply_owned(&writes).ok()?;
        store.commit().ok()?;
        store.checkpoint().ok()?;
    }
    drop(store);
    Some((sim.file_bytes(META_FILE)?, sim.file_bytes(DATA_FILE)?))
}

/// The flat index's leaves and nodes, walked from the newest checkpoint's
/// directory root (each node's control byte names its level).
fn flat_seeds(seeds: &mut Seeds, meta: &[u8], data: &[u8]) {
    let newest = (0..META_SLOTS)
        .filter_map(|slot| {
            let bytes = meta.get(slot * META_SLOT_BYTES..(slot + 1) * META_SLOT_BYTES)?;
            Meta::decode(bytes, slot).ok()
        })
        .max_by_key(|m| m.generation);
    let Some(root) = newest.and_then(|m| m.flat).and_then(|f| f.root) else {
        return;
    };
    let mut queue = vec![(root.height, root.extent)];
    while let Some((level, at)) = queue.pop() {
        let Some(bytes) = bytes_of(data, &at) else {
            continue;
        };
        if level == 0 {
            let mut input = vec![0u8];
            input.extend_from_slice(bytes);
            seeds.flat_leaf.push(input);
            continue;
        }
        let mut input = vec![level << 1];
        input.extend_from_slice(bytes);
        seeds.flat_node.push(input);
        if let Ok(children) = node::decode(bytes, level, "seed") {
            queue.extend(children.iter().map(|c| (level - 1, c.extent)));
        }
    }
}
