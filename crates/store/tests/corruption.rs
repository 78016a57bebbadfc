//! Media corruption: single bit flips in every kind of on-disk structure
//! are detected, never cause a panic and never make a read return a wrong
//! value.
//!
//! A small database is built on the simulated disk (a few thousand writes
//! over several commits and checkpoints, group depth 2 so that there are
//! many upper-trie pages, and WAL records after the last checkpoint). The
//! bytes of each structure are located from the files themselves, through
//! the public codecs: the meta slots (`Meta::decode`), the trie pages and
//! the bucket extents they reference (`page::decode`, walked from the meta
//! record's root entry), and the WAL records of the current epoch
//! (`wal::decode`). Each flip is made on a fresh copy of the files, which
//! is then reopened. What is allowed depends on the structure:
//!
//! * **Meta slots** (four: two copies of the newest checkpoint, two of the
//!   one before): the flipped copy fails its checksum, and the open uses
//!   the other copy of the same generation, landing at the full state with
//!   `verify` clean. Both copies of the newest checkpoint damaged: the open
//!   fails with `Corrupted` rather than silently falling back to the older
//!   checkpoint (whose WAL records were overwritten).
//! * **Trie page, bucket, revert segment**: the open fails with `Corrupted`, or it succeeds
//!   at the full state and `verify` reports a problem; reads return the
//!   right value or `Corrupted`.
//! * **WAL record** of the current epoch: replay ends at the damaged record,
//!   so the database opens at the commit before it (root, sequence number
//!   and values), with `verify` clean.
//! * **Unreferenced bytes** (free or padding bytes of the data file, stale
//!   WAL bytes of an older epoch past the current records): harmless, the
//!   database opens at the full state.
//! * **Flat index** (a second database, created with `flat_index: true`;
//!   its leaves and directory nodes located from the meta record's flat
//!   root through `flat::node::decode`): the open fails with `Corrupted`,
//!   or it succeeds at the full state with every tree read right, every
//!   read through the index right or `Corrupted` (a damaged leaf's records
//!   at least once), and `verify` listing a problem.
//!
//! A flip counts as detected when the damaged structure is rejected: an
//! open error, a `verify` problem, a fallback to the other meta slot, the
//! end of WAL replay at the damaged record, or (inactive meta slot, never
//! read while the active one is sound) `Meta::decode` failing on it. Every byte of the checked
//! structures is covered by a CRC-32C, which catches every single-bit
//! error, so 100% must be detected. The test prints a summary per kind.
//!
//! Rerun with `UBT_SEED=<seed>` (printed at the start).

// Test code: a failed unwrap is a failed test, and casts narrow test data.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::cast_possible_truncation
)]

mod common;

use std::collections::BTreeSet;
use std::panic::AssertUnwindSafe;
use std::sync::Arc;
use std::time::Instant;

use alloy_primitives::B256;
use common::*;
use ubt_spec::hash::Hash;
use ubt_spec::{ReferenceTree, StateTree};
use ubt_store::flat;
use ubt_store::format::{Extent, BLOCK_BYTES};
use ubt_store::io::sim::{CrashMode, SimDir};
use ubt_store::io::StoreDir;
use ubt_store::meta::{Meta, META_SLOT_BYTES};
use ubt_store::prefix::Prefix;
use ubt_store::upper::page;
use ubt_store::{wal, Options, Store, DATA_FILE, META_FILE, WAL_FILE};

const GROUP_DEPTH: u8 = 2;
/// Flips spread over the bytes of the buckets and of the WAL records
/// (every byte if there are fewer).
const SPREAD_FLIPS: usize = 1200;
/// Bucket flips: each costs a full `verify`.
const BUCKET_FLIPS: usize = 450;
/// Meta flips followed by `verify` and a read of every probe: one byte in
/// this many (the others check the state the open lands at). Whichever
/// slot is flipped, the open uses the same intact bytes of the other slot,
/// the data file and the WAL, so a sample shows them sound.
const META_THOROUGH_EVERY: usize = 64;
/// Likewise for WAL flips: one in this many.
const WAL_THOROUGH_EVERY: usize = 4;
/// Flips spread over the unreferenced bytes of the data file and the WAL.
const HARMLESS_FLIPS: usize = 200;

/// A committed state: sequence number, root and contents.
#[derive(Clone)]
struct State {
    seq: u64,
    root: Hash,
    tree: ReferenceTree,
}

/// The database under test and every state it may legitimately show.
struct Fixture {
    sim: SimDir,
    /// A copy of the files that the flips are made in, one at a time.
    work: SimDir,
    /// The WAL as built (opens cut its stale tail).
    wal_bytes: Vec<u8>,
    opts: Options,
    /// The checkpoint in the inactive meta slot.
    previous_checkpoint: State,
    /// The checkpoint in the active meta slot.
    last_checkpoint: State,
    /// `after_record[i]`: the state after WAL record `i` of the current
    /// epoch (the last one is the full state).
    after_record: Vec<State>,
    /// Every key written, and some never written.
    probes: Vec<B256>,
}

impl Fixture {
    fn full(&self) -> &State {
        self.after_record.last().unwrap_or(&self.last_checkpoint)
    }
}

fn build(seed: u64) -> Fixture {
    let mut rng = SplitMix64(seed);
    let (sim, dir) = sim_dir();
    // A large budget: checkpoints happen only when asked for, so the WAL
    // keeps the records written after the last one.
    let opts = options(GROUP_DEPTH, 64 << 20);
    let mut store = open(&dir, &opts);
    let mut tree = ReferenceTree::new();
    let mut known = Vec::new();
    let mut checkpoints: Vec<State> = Vec::new();
    let mut after_record = Vec::new();
    let state = |store: &Store, tree: &ReferenceTree| State {
        seq: store.commit_seq(),
        root: store.committed_root(),
        tree: tree.clone(),
    };
    for block in 0..27 {
        // Small blocks after the last checkpoint: every open replays them.
        let max = if block < 24 { 200 } else { 10 };
        let writes = random_writes(&mut rng, &mut known, max);
        tree.insert_batch(&writes);
        store.apply(&writes).expect("apply");
        assert_eq!(store.commit().expect("commit"), tree.compute_root());
        if block < 24 && block % 6 == 5 {
            store.checkpoint().expect("checkpoint");
            checkpoints.push(state(&store, &tree));
        } else if block >= 24 {
            after_record.push(state(&store, &tree));
        }
    }
    let stats = store.stats();
    assert_eq!(stats.checkpoints, 4, "only the explicit checkpoints ran");
    println!(
        "database: {} values, {} stems, {} buckets, {} pages (G {GROUP_DEPTH}), generation {}, \
         {} WAL records after the last checkpoint, data {} bytes, WAL {} bytes",
        stats.leaf_count,
        stats.stem_count,
        stats.bucket_count,
        stats.page_count,
        stats.generation,
        after_record.len(),
        stats.data_file_bytes,
        stats.wal_bytes
    );
    drop(store);
    let mut probes: Vec<B256> = tree.entries().map(|(key, _)| *key).collect();
    probes.extend((0..100).map(|_| B256::from(rng.bytes32())));
    let last_checkpoint = checkpoints.pop().expect("checkpoints");
    let previous_checkpoint = checkpoints.pop().expect("checkpoints");
    Fixture {
        work: sim.crash_image(CrashMode::KeepUnsynced, 0),
        wal_bytes: sim.file_bytes(WAL_FILE).expect("WAL file"),
        sim,
        opts,
        previous_checkpoint,
        last_checkpoint,
        after_record,
        probes,
    }
}

/// Where every structure lies, found from the files.
struct Layout {
    active_slot: usize,
    generation: u64,
    pages: Vec<Extent>,
    buckets: Vec<Extent>,
    /// The revert window's segment (reverse diffs of recent blocks).
    revert_log: Option<Extent>,
    /// Byte ranges of the WAL records of the current epoch, in order.
    wal_records: Vec<std::ops::Range<u64>>,
    data_len: u64,
    wal_len: u64,
}

fn locate(fx: &Fixture) -> Layout {
    let meta_bytes = fx.sim.file_bytes(META_FILE).expect("meta file");
    let data = fx.sim.file_bytes(DATA_FILE).expect("data file");
    let wal_bytes = fx.sim.file_bytes(WAL_FILE).expect("WAL file");
    let slots: Vec<Option<Meta>> = (0..4)
        .map(|slot| {
            Meta::decode(
                &meta_bytes[slot * META_SLOT_BYTES..(slot + 1) * META_SLOT_BYTES],
                slot,
            )
            .ok()
        })
        .collect();
    let (active_slot, meta) = slots
        .iter()
        .enumerate()
        .filter_map(|(slot, meta)| meta.map(|m| (slot, m)))
        .max_by_key(|(_, meta)| meta.generation)
        .expect("a valid meta slot");
    let active_slot = active_slot & !1;
    let other = slots[active_slot ^ 2].expect("all meta slots valid");
    assert_eq!(
        slots[active_slot],
        slots[active_slot + 1],
        "both copies of the newest"
    );
    assert_eq!(meta.commit_seq, fx.last_checkpoint.seq);
    assert_eq!(meta.root.summary.hash, fx.last_checkpoint.root);
    assert_eq!(other.commit_seq, fx.previous_checkpoint.seq);
    assert_eq!(other.generation + 1, meta.generation);

    let mut pages = Vec::new();
    let mut buckets = Vec::new();
    let mut queue: Vec<(Prefix, Extent)> = Vec::new();
    if meta.root.leaf {
        buckets.extend(meta.root.extent);
    } else {
        queue.push((Prefix::ROOT, meta.root.extent.expect("root page")));
    }
    while let Some((prefix, at)) = queue.pop() {
        pages.push(at);
        let bytes = &data[at.offset as usize..at.end() as usize];
        let decoded =
            page::decode(bytes, GROUP_DEPTH, &prefix, at.crc, "layout").expect("intact page");
        for (rel, index, entry) in decoded.entries {
            let Some(extent) = entry.extent else { continue };
            if entry.leaf {
                buckets.push(extent);
            } else {
                let mut child = prefix;
                for bit in (0..rel).rev() {
                    child = child.child(((index >> bit) & 1) as u8).expect("depth");
                }
                queue.push((child, extent));
            }
        }
    }
    pages.sort_by_key(|e| e.offset);
    buckets.sort_by_key(|e| e.offset);

    let mut wal_records = Vec::new();
    let mut at = wal::RECORDS_START as usize;
    let mut seq = meta.commit_seq + 1;
    while let Some(record) = wal::decode(&wal_bytes[at..]) {
        if record.epoch != meta.generation || record.seq != seq {
            break;
        }
        let len = record.encoded_len();
        wal_records.push(at as u64..(at + len) as u64);
        at += len;
        seq += 1;
    }
    assert_eq!(wal_records.len(), fx.after_record.len(), "WAL records");
    Layout {
        active_slot,
        generation: meta.generation,
        pages,
        buckets,
        revert_log: meta.revert_log,
        wal_records,
        data_len: data.len() as u64,
        wal_len: wal_bytes.len() as u64,
    }
}

/// `count` byte positions spread evenly over `ranges` (taken as one
/// sequence), each jittered inside its stride; all of them if fewer.
fn spread(ranges: &[std::ops::Range<u64>], count: usize, rng: &mut SplitMix64) -> Vec<u64> {
    let total: u64 = ranges.iter().map(|r| r.end - r.start).sum();
    let positions: Vec<u64> = if total <= count as u64 {
        (0..total).collect()
    } else {
        let stride = total / count as u64;
        (0..count as u64)
            .map(|i| i * stride + rng.below(stride))
            .collect()
    };
    positions
        .into_iter()
        .map(|mut position| {
            for range in ranges {
                let len = range.end - range.start;
                if position < len {
                    return range.start + position;
                }
                position -= len;
            }
            unreachable!("position inside the ranges")
        })
        .collect()
}

/// What reopening a flipped copy gave.
enum Outcome {
    /// The open failed with `Corrupted`.
    Rejected,
    /// The database opened at an allowed state (and, for a thorough check,
    /// `verify` found this many problems and this many reads failed with
    /// `Corrupted`).
    Opened {
        verify_problems: usize,
        corrupted_reads: usize,
    },
}

/// Flips one bit of the working copy of the files, reopens it, requires
/// it to open at one of the `allowed` states (or fail with `Corrupted`)
/// and, if `thorough`, runs `verify` and reads every probe against that
/// state. Then restores the working copy: flips the bit back (unless it is
/// in the WAL) and rewrites the WAL if it differs from the original (the
/// open cuts it after its last intact record: the only write an open
/// makes).
fn flip_and_open(
    fx: &Fixture,
    file: &str,
    offset: u64,
    bit: u8,
    allowed: &[&State],
    thorough: bool,
) -> Result<Outcome, String> {
    fx.work
        .flip_bit(file, offset, bit)
        .map_err(|e| format!("flip_bit: {e}"))?;
    let result = open_and_check(fx, allowed, thorough);
    if file != WAL_FILE {
        fx.work
            .flip_bit(file, offset, bit)
            .map_err(|e| format!("flip_bit: {e}"))?;
    }
    if fx.work.file_bytes(WAL_FILE).as_ref() != Some(&fx.wal_bytes) {
        fx.work
            .write_raw(WAL_FILE, 0, &fx.wal_bytes)
            .map_err(|e| format!("restoring the WAL: {e}"))?;
    }
    result
}

fn open_and_check(fx: &Fixture, allowed: &[&State], thorough: bool) -> Result<Outcome, String> {
    let dir: Arc<dyn StoreDir> = Arc::new(fx.work.clone());
    let opts = fx.opts.clone();
    let run = move || -> Result<Outcome, String> {
        let store = match Store::open(dir, opts) {
            Ok(store) => store,
            Err(error) if error.is_corruption() => return Ok(Outcome::Rejected),
            Err(error) => return Err(format!("open failed with a non-corruption error: {error}")),
        };
        let seq = store.commit_seq();
        let root = store.root();
        if store.committed_root() != root {
            return Err("opened with uncommitted writes".into());
        }
        let state = allowed
            .iter()
            .find(|s| s.seq == seq && s.root == root)
            .ok_or_else(|| {
                format!(
                    "opened at seq {seq} root {}, not an allowed state",
                    hex_root(&root)
                )
            })?;
        if !thorough {
            return Ok(Outcome::Opened {
                verify_problems: 0,
                corrupted_reads: 0,
            });
        }
        let report = store
            .verify()
            .map_err(|e| format!("verify returned an error: {e}"))?;
        let corrupted_reads = check_reads(&store, &state.tree, &fx.probes)?;
        Ok(Outcome::Opened {
            verify_problems: report.problems.len(),
            corrupted_reads,
        })
    };
    caught(run)
}

/// Tally of one kind.
#[derive(Default)]
struct Tally {
    flips: usize,
    /// Flips followed by `verify` and a read of every probe.
    thorough: usize,
    detected: usize,
    rejected_at_open: usize,
    fallbacks: usize,
    verify_detections: usize,
    corrupted_reads: usize,
    harmless: usize,
    failures: Vec<String>,
}

impl Tally {
    fn fail(&mut self, what: String) {
        if self.failures.len() < 20 {
            self.failures.push(what);
        }
    }
}

/// Flips in a structure that the open or `verify` must reject.
fn checked_flip(fx: &Fixture, tally: &mut Tally, file: &str, offset: u64, bit: u8) {
    tally.flips += 1;
    let here = format!("{file} byte {offset} bit {bit}");
    tally.thorough += 1;
    match flip_and_open(fx, file, offset, bit, &[fx.full()], true) {
        Err(error) => tally.fail(format!("{here}: {error}")),
        Ok(Outcome::Rejected) => {
            tally.detected += 1;
            tally.rejected_at_open += 1;
        }
        Ok(Outcome::Opened {
            verify_problems,
            corrupted_reads,
        }) => {
            tally.corrupted_reads += corrupted_reads;
            if verify_problems > 0 {
                tally.detected += 1;
                tally.verify_detections += 1;
            } else {
                tally.fail(format!("{here}: opened and verified clean (undetected)"));
            }
        }
    }
}

/// Flips that must leave the full state readable and sound.
fn harmless_flip(fx: &Fixture, tally: &mut Tally, file: &str, offset: u64, bit: u8) {
    tally.flips += 1;
    let here = format!("{file} byte {offset} bit {bit}");
    tally.thorough += 1;
    match flip_and_open(fx, file, offset, bit, &[fx.full()], true) {
        Err(error) => tally.fail(format!("{here}: {error}")),
        Ok(Outcome::Rejected) => tally.fail(format!("{here}: open rejected an unused byte")),
        Ok(Outcome::Opened {
            verify_problems,
            corrupted_reads,
        }) => {
            if verify_problems > 0 || corrupted_reads > 0 {
                tally.fail(format!(
                    "{here}: {verify_problems} verify problems, {corrupted_reads} failed reads"
                ));
            } else {
                tally.harmless += 1;
            }
        }
    }
}

#[test]
fn bit_flips_in_every_structure_are_detected() {
    let seed = seed_from_env(0xc0_4409);
    println!("seed {seed} (rerun with UBT_SEED={seed})");
    let started = Instant::now();
    let fx = build(seed);
    let layout = locate(&fx);
    let mut rng = SplitMix64(seed ^ 0xf11b);
    let (active, inactive) = flip_meta(&fx, &layout, &mut rng);
    let tallies: Vec<(&str, Tally)> = vec![
        ("meta, newest pair", active),
        ("meta, older pair", inactive),
        ("trie pages", flip_pages(&fx, &layout, &mut rng)),
        (
            "revert segment",
            flip_revert_segment(&fx, &layout, &mut rng),
        ),
        ("buckets", flip_buckets(&fx, &layout, &mut rng)),
        ("WAL records", flip_wal_records(&fx, &layout, &mut rng)),
        ("WAL header marks", flip_wal_marks(&fx, &mut rng)),
        (
            "unreferenced bytes",
            flip_unreferenced(&fx, &layout, &mut rng),
        ),
    ];
    print_layout(&layout);
    let failures = print_tallies(&tallies);
    println!("{:.1} s", started.elapsed().as_secs_f64());
    assert!(
        failures.is_empty(),
        "seed {seed}: {} failures (first 20 per kind):\n{}",
        failures.len(),
        failures.join("\n")
    );
    for name in [META_FILE, DATA_FILE, WAL_FILE] {
        assert!(
            fx.work.file_bytes(name) == fx.sim.file_bytes(name),
            "{name}: the working copy was not restored"
        );
    }
}

/// Meta slots: every byte of each pair's first copy, every eighth byte of
/// the second copies, one bit each; then both copies of the newest pair.
/// Returns the tallies of the newest pair and of the older one.
fn flip_meta(fx: &Fixture, layout: &Layout, rng: &mut SplitMix64) -> (Tally, Tally) {
    // Any one damaged copy is harmless.
    let mut active = Tally::default();
    let mut inactive = Tally::default();
    let meta_bytes = fx.sim.file_bytes(META_FILE).expect("meta file");
    for slot in 0..4usize {
        for at in (0..META_SLOT_BYTES).step_by(if slot % 2 == 0 { 1 } else { 8 }) {
            let offset = (slot * META_SLOT_BYTES + at) as u64;
            let bit = rng.below(8) as u8;
            let here = format!("{META_FILE} slot {slot} byte {at} bit {bit}");
            let thorough = at % META_THOROUGH_EVERY == 0;
            let mut slot_bytes =
                meta_bytes[slot * META_SLOT_BYTES..(slot + 1) * META_SLOT_BYTES].to_vec();
            slot_bytes[at] ^= 1 << bit;
            let tally = if slot & !1 == layout.active_slot {
                &mut active
            } else {
                &mut inactive
            };
            tally.flips += 1;
            if Meta::decode(&slot_bytes, slot).is_ok() {
                tally.fail(format!("{here}: the flipped slot still decodes"));
                continue;
            }
            tally.detected += 1;
            tally.thorough += usize::from(thorough);
            match flip_and_open(fx, META_FILE, offset, bit, &[fx.full()], thorough) {
                Err(error) => tally.fail(format!("{here}: {error}")),
                Ok(Outcome::Rejected) => tally.fail(format!("{here}: open rejected the database")),
                Ok(Outcome::Opened {
                    verify_problems,
                    corrupted_reads,
                }) => {
                    if verify_problems > 0 || corrupted_reads > 0 {
                        tally.fail(format!(
                            "{here}: {verify_problems} verify problems, {corrupted_reads} failed reads"
                        ));
                    } else {
                        tally.harmless += 1;
                    }
                }
            }
        }
    }
    // Both copies of the newest checkpoint damaged: a clean `Corrupted`.
    for at in (0..META_SLOT_BYTES).step_by(509) {
        let dir = fx.sim.crash_image(CrashMode::KeepUnsynced, 0);
        for copy in 0..2 {
            let offset = ((layout.active_slot + copy) * META_SLOT_BYTES + at) as u64;
            dir.flip_bit(META_FILE, offset, (at % 8) as u8)
                .expect("flip");
        }
        let shared: Arc<dyn StoreDir> = Arc::new(dir);
        active.flips += 2;
        match Store::open(shared, options(GROUP_DEPTH, 64 << 20)) {
            Err(error) if error.is_corruption() => active.detected += 2,
            Err(error) => active.fail(format!("both copies, byte {at}: unexpected error {error}")),
            Ok(store) => active.fail(format!(
                "both copies, byte {at}: opened silently at commit {}",
                store.commit_seq()
            )),
        }
    }
    (active, inactive)
}

/// Trie pages: every byte.
fn flip_pages(fx: &Fixture, layout: &Layout, rng: &mut SplitMix64) -> Tally {
    let page_ranges: Vec<std::ops::Range<u64>> =
        layout.pages.iter().map(|e| e.offset..e.end()).collect();
    let mut pages = Tally::default();
    for offset in spread(&page_ranges, usize::MAX, rng) {
        checked_flip(fx, &mut pages, DATA_FILE, offset, rng.below(8) as u8);
    }
    pages
}

/// The revert window's segment: every byte (checked at open).
fn flip_revert_segment(fx: &Fixture, layout: &Layout, rng: &mut SplitMix64) -> Tally {
    let mut revert = Tally::default();
    if let Some(segment) = layout.revert_log {
        let ranges = std::slice::from_ref(&(segment.offset..segment.end())).to_vec();
        for offset in spread(&ranges, SPREAD_FLIPS, rng) {
            checked_flip(fx, &mut revert, DATA_FILE, offset, rng.below(8) as u8);
        }
    }
    revert
}

/// Buckets: the first bytes of the first bucket (the fixed header and the
/// prefix, up to one hash per sub-bucket, then records), then a spread
/// over all bucket bytes.
fn flip_buckets(fx: &Fixture, layout: &Layout, rng: &mut SplitMix64) -> Tally {
    let bucket_ranges: Vec<std::ops::Range<u64>> =
        layout.buckets.iter().map(|e| e.offset..e.end()).collect();
    let mut buckets = Tally::default();
    let first = layout.buckets[0];
    let header_span = 48 + 32 * ubt_store::bucket::SUB_COUNT as u64;
    let mut offsets: Vec<u64> = (first.offset..first.offset + header_span)
        .filter(|o| *o < first.end())
        .collect();
    offsets.extend(spread(&bucket_ranges, BUCKET_FLIPS, rng));
    for offset in offsets {
        checked_flip(fx, &mut buckets, DATA_FILE, offset, rng.below(8) as u8);
    }
    buckets
}

/// WAL records: every header byte of every record, then a spread over all
/// record bytes (all of them when few). Damage to a record followed by
/// intact synced records is refused at open (`Corrupted`); damage to the
/// last record looks exactly like a torn tail, so replay ends there.
fn flip_wal_records(fx: &Fixture, layout: &Layout, rng: &mut SplitMix64) -> Tally {
    let mut offsets: Vec<u64> = layout
        .wal_records
        .iter()
        .flat_map(|r| r.start..r.start + 68)
        .collect();
    offsets.extend(spread(&layout.wal_records, SPREAD_FLIPS, rng));
    offsets.sort_unstable();
    offsets.dedup();
    let mut wal_tally = Tally::default();
    for offset in offsets {
        let bit = rng.below(8) as u8;
        let here = format!("{WAL_FILE} byte {offset} bit {bit}");
        let record = layout
            .wal_records
            .iter()
            .position(|r| r.contains(&offset))
            .expect("inside a record");
        let before = if record == 0 {
            &fx.last_checkpoint
        } else {
            &fx.after_record[record - 1]
        };
        let thorough = wal_tally.flips % WAL_THOROUGH_EVERY == 0;
        wal_tally.thorough += usize::from(thorough);
        wal_tally.flips += 1;
        let last = record + 1 == layout.wal_records.len();
        match flip_and_open(fx, WAL_FILE, offset, bit, &[before], thorough) {
            Err(error) => wal_tally.fail(format!("{here} (record {record}): {error}")),
            Ok(Outcome::Rejected) if !last => {
                wal_tally.detected += 1;
                wal_tally.rejected_at_open += 1;
            }
            Ok(Outcome::Rejected) => wal_tally.fail(format!("{here}: open rejected the database")),
            Ok(Outcome::Opened {
                verify_problems,
                corrupted_reads,
            }) => {
                if verify_problems > 0 || corrupted_reads > 0 {
                    wal_tally.fail(format!(
                        "{here}: {verify_problems} verify problems, {corrupted_reads} failed reads"
                    ));
                } else {
                    wal_tally.detected += 1;
                }
            }
        }
    }
    wal_tally
}

/// WAL header marks: a flip in either copy leaves the other, which
/// witnesses the same commit or the one before; both damaged is a clean
/// `Corrupted` (the log can no longer show how far it reached).
fn flip_wal_marks(fx: &Fixture, rng: &mut SplitMix64) -> Tally {
    let mut marks = Tally::default();
    for at in (0..wal::RECORDS_START).step_by(3) {
        let bit = rng.below(8) as u8;
        let here = format!("{WAL_FILE} header byte {at} bit {bit}");
        marks.flips += 1;
        marks.thorough += 1;
        match flip_and_open(fx, WAL_FILE, at, bit, &[fx.full()], true) {
            Err(error) => marks.fail(format!("{here}: {error}")),
            Ok(Outcome::Rejected) => marks.fail(format!("{here}: open rejected the database")),
            Ok(Outcome::Opened {
                verify_problems,
                corrupted_reads,
            }) if verify_problems > 0 || corrupted_reads > 0 => marks.fail(format!(
                "{here}: {verify_problems} verify problems, {corrupted_reads} failed reads"
            )),
            Ok(Outcome::Opened { .. }) => marks.harmless += 1,
        }
    }
    for at in (0..wal::MARK_BYTES as u64).step_by(61) {
        let dir = fx.sim.crash_image(CrashMode::KeepUnsynced, 0);
        for slot in 0..2 {
            dir.flip_bit(WAL_FILE, slot * wal::MARK_BYTES as u64 + at, (at % 8) as u8)
                .expect("flip");
        }
        let shared: Arc<dyn StoreDir> = Arc::new(dir);
        marks.flips += 2;
        match Store::open(shared, options(GROUP_DEPTH, 64 << 20)) {
            Err(error) if error.is_corruption() => marks.detected += 2,
            Err(error) => marks.fail(format!("both marks, byte {at}: unexpected error {error}")),
            Ok(_) => marks.fail(format!("both marks, byte {at}: opened")),
        }
    }
    marks
}

/// Unreferenced bytes: data-file bytes outside every live extent, and WAL
/// bytes past the current epoch's records. Flips there must be harmless.
fn flip_unreferenced(fx: &Fixture, layout: &Layout, rng: &mut SplitMix64) -> Tally {
    let free = unreferenced_ranges(layout);
    let mut unused = Tally::default();
    for offset in spread(&free, HARMLESS_FLIPS, rng) {
        harmless_flip(fx, &mut unused, DATA_FILE, offset, rng.below(8) as u8);
    }
    let wal_end = layout.wal_records.last().map_or(0, |r| r.end);
    if layout.wal_len > wal_end {
        for offset in spread(
            std::slice::from_ref(&(wal_end..layout.wal_len)),
            HARMLESS_FLIPS / 4,
            rng,
        ) {
            harmless_flip(fx, &mut unused, WAL_FILE, offset, rng.below(8) as u8);
        }
    }
    unused
}

/// Data-file bytes outside every live extent, as ranges.
fn unreferenced_ranges(layout: &Layout) -> Vec<std::ops::Range<u64>> {
    let mut used = BTreeSet::new();
    for extent in layout
        .pages
        .iter()
        .chain(&layout.buckets)
        .chain(&layout.revert_log)
    {
        used.extend(extent.offset..extent.end());
    }
    let mut free: Vec<std::ops::Range<u64>> = Vec::new();
    for offset in (0..layout.data_len).filter(|o| !used.contains(o)) {
        match free.last_mut() {
            Some(range) if range.end == offset => range.end += 1,
            _ => free.push(offset..offset + 1),
        }
    }
    free
}

fn print_layout(layout: &Layout) {
    let bytes = |extents: &[Extent]| extents.iter().map(|e| e.end() - e.offset).sum::<u64>();
    let free_bytes: u64 = unreferenced_ranges(layout)
        .iter()
        .map(|r| r.end - r.start)
        .sum();
    let wal_end = layout.wal_records.last().map_or(0, |r| r.end);
    println!(
        "layout: active meta slot {} (generation {}), {} pages ({} bytes), {} buckets ({} bytes), \
         {} WAL records ({} bytes, file {} bytes), {} unreferenced data bytes of {} ({} blocks)",
        layout.active_slot,
        layout.generation,
        layout.pages.len(),
        bytes(&layout.pages),
        layout.buckets.len(),
        bytes(&layout.buckets),
        layout.wal_records.len(),
        wal_end,
        layout.wal_len,
        free_bytes,
        layout.data_len,
        layout.data_len / BLOCK_BYTES as u64
    );
}

/// Prints a line per kind; returns every failure.
fn print_tallies(tallies: &[(&str, Tally)]) -> Vec<String> {
    println!(
        "{:<22} {:>6} {:>9} {:>9} {:>8} {:>9} {:>7} {:>9} {:>9}",
        "kind",
        "flips",
        "thorough",
        "detected",
        "at open",
        "fallback",
        "verify",
        "bad reads",
        "harmless"
    );
    let mut failures = Vec::new();
    for (kind, tally) in tallies {
        println!(
            "{:<22} {:>6} {:>9} {:>9} {:>8} {:>9} {:>7} {:>9} {:>9}",
            kind,
            tally.flips,
            tally.thorough,
            tally.detected,
            tally.rejected_at_open,
            tally.fallbacks,
            tally.verify_detections,
            tally.corrupted_reads,
            tally.harmless
        );
        failures.extend(tally.failures.iter().map(|f| format!("{kind}: {f}")));
    }
    failures
}

// The flat index (a database created with `flat_index: true`): its
// leaves and directory nodes, located from the newest meta record's flat
// root through the public codecs (`flat::node::decode`).

/// Blocks of values written to the database with a flat index.
const FLAT_BLOCKS: usize = 6;
/// Values per block (mixed keys: some rewrite known ones).
const FLAT_BLOCK_WRITES: usize = 1200;
/// Leaves (the first, by offset) with a flip in every header byte; the
/// others get one header byte. Every leaf also gets a body byte and its
/// last byte; every directory node each header byte, eight body bytes and
/// its last byte. Each leaf flip costs a `verify` and a read of every value.
const FLAT_WHOLE_HEADERS: usize = 8;

/// A database with a flat index, fully checkpointed, and a working copy.
struct FlatFixture {
    sim: SimDir,
    work: SimDir,
    wal_bytes: Vec<u8>,
    opts: Options,
    state: State,
    /// Every key written, and some never written.
    probes: Vec<B256>,
    /// `(leaves, nodes)` as `stats` counts them.
    counts: (u64, u64),
}

fn build_flat(seed: u64) -> FlatFixture {
    let mut rng = SplitMix64(seed);
    let (sim, dir) = sim_dir();
    let opts = Options {
        flat_index: true,
        ..options(GROUP_DEPTH, 64 << 20)
    };
    let mut store = open(&dir, &opts);
    let mut tree = ReferenceTree::new();
    let mut known = Vec::new();
    for block in 0..FLAT_BLOCKS {
        let writes = writes_over_mixed_keys(&mut rng, &mut known, FLAT_BLOCK_WRITES);
        tree.insert_batch(&writes);
        // Three accounts (`owner_of`): each spans many leaves.
        store.apply_owned(&owned(&writes)).expect("apply_owned");
        assert_eq!(store.commit().expect("commit"), tree.compute_root());
        if block % 3 == 2 {
            // Two checkpoints: the second rewrites leaves copy-on-write.
            store.checkpoint().expect("checkpoint");
        }
    }
    let stats = store.stats();
    assert!(stats.flat_index && stats.flat_nodes > 0, "{stats:?}");
    assert_eq!(stats.flat_changes, 0, "everything checkpointed");
    println!(
        "flat database: {} values, {} flat records in {} leaves under {} directory nodes, \
         {} buckets, data {} bytes",
        stats.leaf_count,
        stats.flat_records,
        stats.flat_leaves,
        stats.flat_nodes,
        stats.bucket_count,
        stats.data_file_bytes
    );
    let state = State {
        seq: store.commit_seq(),
        root: store.committed_root(),
        tree: tree.clone(),
    };
    drop(store);
    let mut probes: Vec<B256> = tree.entries().map(|(key, _)| *key).collect();
    probes.extend((0..100).map(|_| B256::from(rng.bytes32())));
    FlatFixture {
        work: sim.crash_image(CrashMode::KeepUnsynced, 0),
        wal_bytes: sim.file_bytes(WAL_FILE).expect("WAL file"),
        sim,
        opts,
        state,
        probes,
        counts: (stats.flat_leaves, stats.flat_nodes),
    }
}

/// The flat index's leaves and its directory nodes (with their levels),
/// walked from the newest meta record's flat root, sorted by offset.
fn locate_flat(fx: &FlatFixture) -> (Vec<Extent>, Vec<(u8, Extent)>) {
    let meta_bytes = fx.sim.file_bytes(META_FILE).expect("meta file");
    let data = fx.sim.file_bytes(DATA_FILE).expect("data file");
    let meta = (0..4)
        .filter_map(|slot| {
            Meta::decode(
                &meta_bytes[slot * META_SLOT_BYTES..(slot + 1) * META_SLOT_BYTES],
                slot,
            )
            .ok()
        })
        .max_by_key(|meta| meta.generation)
        .expect("a valid meta slot");
    assert_eq!(meta.commit_seq, fx.state.seq);
    let root = meta.flat.expect("a flat index").root.expect("a flat root");
    let mut leaves = Vec::new();
    let mut nodes = Vec::new();
    let mut queue = vec![(root.height, root.extent)];
    while let Some((level, at)) = queue.pop() {
        if level == 0 {
            leaves.push(at);
            continue;
        }
        nodes.push((level, at));
        let bytes = &data[at.offset as usize..at.end() as usize];
        let children = flat::node::decode(bytes, level, "layout").expect("intact node");
        queue.extend(children.iter().map(|c| (level - 1, c.extent)));
    }
    leaves.sort_by_key(|e| e.offset);
    nodes.sort_by_key(|(_, e)| e.offset);
    assert_eq!(
        (leaves.len() as u64, nodes.len() as u64),
        fx.counts,
        "leaves and nodes found from the files, and as `stats` counts them"
    );
    (leaves, nodes)
}

/// Reads every probe through the flat index (batched, one key at a time
/// when a batch fails with `Corrupted`): each value equals the reference's
/// or the read fails with `Corrupted`. Returns how many did.
fn check_owned_reads(
    store: &Store,
    expected: &ReferenceTree,
    probes: &[B256],
) -> Result<usize, String> {
    let mut corrupted = 0usize;
    let check = |key: &B256, got: Option<B256>| {
        if got == expected.get(key) {
            Ok(())
        } else {
            Err(format!(
                "get_owned({key}) = {got:?}, expected {:?}",
                expected.get(key)
            ))
        }
    };
    for chunk in probes.chunks(512) {
        let pairs: Vec<_> = chunk.iter().map(|key| (owner_of(key), *key)).collect();
        match store.get_owned(&pairs) {
            Ok(values) => {
                for (key, got) in chunk.iter().zip(values) {
                    check(key, got)?;
                }
            }
            Err(error) if error.is_corruption() => {
                for pair in &pairs {
                    match store.get_owned(std::slice::from_ref(pair)) {
                        Ok(got) => check(&pair.1, got[0])?,
                        Err(error) if error.is_corruption() => corrupted += 1,
                        Err(error) => return Err(format!("get_owned({}): {error}", pair.1)),
                    }
                }
            }
            Err(error) => return Err(format!("get_owned: {error}")),
        }
    }
    Ok(corrupted)
}

/// What opening a copy with one flipped bit in the flat index gave.
enum FlatOutcome {
    /// The open failed with `Corrupted`.
    Rejected,
    /// The database opened at the full state, every tree read right;
    /// `verify` listed this many problems (or failed with this `Corrupted`
    /// error instead), and this many reads through the flat index failed
    /// with `Corrupted` (none returned a wrong value).
    Opened {
        verify_problems: usize,
        verify_error: Option<String>,
        corrupted_reads: usize,
    },
}

fn flat_open_and_check(fx: &FlatFixture) -> Result<FlatOutcome, String> {
    let dir: Arc<dyn StoreDir> = Arc::new(fx.work.clone());
    let opts = fx.opts.clone();
    let run = move || -> Result<FlatOutcome, String> {
        let store = match Store::open(dir, opts) {
            Ok(store) => store,
            Err(error) if error.is_corruption() => return Ok(FlatOutcome::Rejected),
            Err(error) => return Err(format!("open failed with a non-corruption error: {error}")),
        };
        if store.commit_seq() != fx.state.seq || store.root() != fx.state.root {
            return Err(format!(
                "opened at seq {}, not the full state",
                store.commit_seq()
            ));
        }
        let tree_failures = check_reads(&store, &fx.state.tree, &fx.probes)?;
        if tree_failures > 0 {
            return Err(format!("{tree_failures} tree reads failed"));
        }
        // The prefetcher reads the leaves first (adjacent ones as one
        // request): it must not cache a damaged leaf for the reads to trust.
        for owner in (0..3u8).map(|i| alloy_primitives::Address::repeat_byte(1 + i)) {
            let keys: Vec<B256> = fx
                .probes
                .iter()
                .filter(|k| owner_of(k) == owner)
                .copied()
                .collect();
            store.prefetch_owned(&owner, &keys);
        }
        let corrupted_reads = check_owned_reads(&store, &fx.state.tree, &fx.probes)?;
        let (verify_problems, verify_error) = match store.verify() {
            Ok(report) => (report.problems.len(), None),
            Err(error) if error.is_corruption() => (0, Some(error.to_string())),
            Err(error) => return Err(format!("verify returned an error: {error}")),
        };
        Ok(FlatOutcome::Opened {
            verify_problems,
            verify_error,
            corrupted_reads,
        })
    };
    caught(run)
}

/// Flips one bit of a flat leaf (`leaf`) or directory node in the working
/// copy, reopens and checks it, and restores the copy. A flip must be
/// detected: rejected at open, or reported by `verify`; a damaged leaf's
/// records read `Corrupted`, never a wrong value.
fn flat_flip(fx: &FlatFixture, tally: &mut Tally, leaf: bool, offset: u64, bit: u8) {
    let here = format!("{DATA_FILE} byte {offset} bit {bit}");
    tally.flips += 1;
    tally.thorough += 1;
    fx.work.flip_bit(DATA_FILE, offset, bit).expect("flip");
    let result = flat_open_and_check(fx);
    fx.work.flip_bit(DATA_FILE, offset, bit).expect("flip back");
    if fx.work.file_bytes(WAL_FILE).as_ref() != Some(&fx.wal_bytes) {
        fx.work
            .write_raw(WAL_FILE, 0, &fx.wal_bytes)
            .expect("restoring the WAL");
    }
    match result {
        Err(error) => tally.fail(format!("{here}: {error}")),
        Ok(FlatOutcome::Rejected) => {
            tally.detected += 1;
            tally.rejected_at_open += 1;
        }
        Ok(FlatOutcome::Opened {
            verify_problems,
            verify_error,
            corrupted_reads,
        }) => {
            tally.corrupted_reads += corrupted_reads;
            if let Some(error) = verify_error {
                // `verify` lists what it finds wrong; only I/O errors are
                // its errors.
                tally.fail(format!(
                    "{here}: verify failed with `{error}` instead of listing a problem"
                ));
            } else if leaf && corrupted_reads == 0 {
                tally.fail(format!("{here}: every read of the damaged leaf succeeded"));
            } else if verify_problems > 0 {
                tally.detected += 1;
                tally.verify_detections += 1;
            } else {
                tally.fail(format!("{here}: opened and verified clean (undetected)"));
            }
        }
    }
}

/// Byte positions flipped in a block of `len` bytes: every header byte
/// (checksum, tag, version, counts or level) if `whole_header`, else one
/// at random; `body` bytes at random behind it; and the last byte.
fn block_positions(
    len: u64,
    header: u64,
    whole_header: bool,
    body: usize,
    rng: &mut SplitMix64,
) -> Vec<u64> {
    let mut positions: Vec<u64> = if whole_header {
        (0..header.min(len)).collect()
    } else {
        vec![rng.below(header.min(len))]
    };
    if len > header {
        positions.extend((0..body).map(|_| header + rng.below(len - header)));
    }
    positions.push(len - 1);
    positions.sort_unstable();
    positions.dedup();
    positions
}

#[test]
fn bit_flips_in_the_flat_index_are_detected() {
    let seed = seed_from_env(0xf1a7_4409);
    println!("seed {seed} (rerun with UBT_SEED={seed})");
    let started = Instant::now();
    let fx = build_flat(seed);
    let (leaves, nodes) = locate_flat(&fx);
    let mut rng = SplitMix64(seed ^ 0xf11b);
    let mut leaf_tally = Tally::default();
    for (index, at) in leaves.iter().enumerate() {
        let whole_header = index < FLAT_WHOLE_HEADERS;
        for position in block_positions(at.len.into(), 8, whole_header, 1, &mut rng) {
            let bit = rng.below(8) as u8;
            flat_flip(&fx, &mut leaf_tally, true, at.offset + position, bit);
        }
    }
    let mut node_tally = Tally::default();
    for (_, at) in &nodes {
        for position in block_positions(at.len.into(), 9, true, 8, &mut rng) {
            let bit = rng.below(8) as u8;
            flat_flip(&fx, &mut node_tally, false, at.offset + position, bit);
        }
    }
    let levels: BTreeSet<u8> = nodes.iter().map(|(level, _)| *level).collect();
    println!(
        "flat layout: {} leaves ({} bytes), {} directory nodes at levels {levels:?} ({} bytes)",
        leaves.len(),
        leaves.iter().map(|e| u64::from(e.len)).sum::<u64>(),
        nodes.len(),
        nodes.iter().map(|(_, e)| u64::from(e.len)).sum::<u64>()
    );
    let failures = print_tallies(&[
        ("flat leaves", leaf_tally),
        ("flat directory nodes", node_tally),
    ]);
    println!("{:.1} s", started.elapsed().as_secs_f64());
    assert!(
        failures.is_empty(),
        "seed {seed}: {} failures (first 20 per kind):\n{}",
        failures.len(),
        failures.join("\n")
    );
    for name in [META_FILE, DATA_FILE, WAL_FILE] {
        assert!(
            fx.work.file_bytes(name) == fx.sim.file_bytes(name),
            "{name}: the working copy was not restored"
        );
    }
}

/// Runs `run`, turning a panic into an error naming it.
fn caught<T>(run: impl FnOnce() -> Result<T, String>) -> Result<T, String> {
    match std::panic::catch_unwind(AssertUnwindSafe(run)) {
        Ok(result) => result,
        Err(panic) => {
            let message = panic
                .downcast_ref::<String>()
                .cloned()
                .or_else(|| panic.downcast_ref::<&str>().map(|s| s.to_string()))
                .unwrap_or_default();
            Err(format!("panicked: {message}"))
        }
    }
}
