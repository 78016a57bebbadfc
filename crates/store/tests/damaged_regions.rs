//! Damaged regions of the meta file and the WAL: every 512-byte sector
//! zeroed, everything from a sector on zeroed, the file cut at every
//! sector boundary, and the WAL cut at every record boundary and at a few
//! offsets inside each record.
//!
//! A database of about 2,000 values is built on the simulated disk (group
//! depth 2) in four shapes:
//!
//! * **records**: three checkpoints behind it (generation 3) and five
//!   synced WAL records after the last one;
//! * **closed**: the same, then closed: a fourth checkpoint, so the WAL
//!   holds no record of the newest epoch (only stale records of the one
//!   before, behind a restart mark);
//! * **generation 1**: commits, one checkpoint, then four WAL records (the
//!   loss of generation 1 leaves a valid generation 0 that only the WAL's
//!   header can contradict);
//! * **generation 1, bulk**: one bulk apply on a new database (its
//!   checkpoint is generation 1) and no WAL record after it.
//!
//! Each damaged image is built in a fresh simulated directory from the
//! files' bytes, one file damaged, and opened. It must either fail with
//! `Corrupted`, or open with `verify` clean and every value equal to the
//! reference tree's at an allowed state: the full state, or (only when the
//! damage touches the last WAL record or the header mark witnessing it,
//! the one loss the format cannot tell from a torn write) the state one
//! commit before the last. Never an older state, never a wrong value, never
//! another error or a panic.
//!
//! `-- --nocapture` prints a table of images, opens at the full state, at
//! the commit before, and rejections, per shape, file and kind of damage.
//! Rerun with `UBT_SEED=<seed>` (printed at the start).

// Test code: a failed unwrap is a failed test, and casts narrow test data.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::cast_possible_truncation
)]

mod common;

use std::collections::hash_map::DefaultHasher;
use std::collections::{BTreeMap, HashSet};
use std::hash::{Hash as _, Hasher};
use std::ops::Range;
use std::panic::AssertUnwindSafe;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Instant;

use alloy_primitives::B256;
use common::*;
use ubt_spec::hash::Hash;
use ubt_spec::{ReferenceTree, StateTree};
use ubt_store::io::sim::{SimDir, SECTOR_SIZE};
use ubt_store::meta::{Meta, META_SLOTS, META_SLOT_BYTES};
use ubt_store::{wal, Options, Store, DATA_FILE, META_FILE, WAL_FILE};

const GROUP_DEPTH: u8 = 2;
/// Sectors past the last record (stale bytes) that are damaged too.
const TAIL_SECTORS: u64 = 2;

/// A committed state: sequence number, root and contents.
#[derive(Clone)]
struct State {
    seq: u64,
    root: Hash,
    tree: ReferenceTree,
}

/// The shapes of database the damage is done to.
#[derive(Clone, Copy, Debug)]
enum Shape {
    Records,
    Closed,
    FirstCheckpoint,
    FirstCheckpointBulk,
}

impl Shape {
    fn name(self) -> &'static str {
        match self {
            Shape::Records => "records",
            Shape::Closed => "closed",
            Shape::FirstCheckpoint => "generation 1",
            Shape::FirstCheckpointBulk => "generation 1, bulk",
        }
    }
}

/// A database's files and the states it may legitimately open at.
struct Fixture {
    shape: Shape,
    /// `(name, bytes)` of the meta file, the data file and the WAL.
    files: Vec<(&'static str, Vec<u8>)>,
    opts: Options,
    generation: u64,
    full: State,
    /// The state one commit before the last, when the last commit is a
    /// WAL record of the current epoch.
    before_last: Option<State>,
    /// The current epoch's records, in order.
    records: Vec<Range<u64>>,
    /// Every intact record found walking the log from its start (the
    /// current epoch's, or stale ones of the epoch before after a close).
    walk: Vec<Range<u64>>,
    /// The header mark witnessing the last record.
    last_mark: Option<Range<u64>>,
    /// Every key written, and some never written.
    probes: Vec<B256>,
}

impl Fixture {
    fn bytes(&self, name: &str) -> &[u8] {
        &self
            .files
            .iter()
            .find(|(n, _)| *n == name)
            .expect("a database file")
            .1
    }

    /// A fresh directory holding the files, `name` replaced by `bytes`.
    fn image(&self, name: &str, bytes: &[u8]) -> SimDir {
        let dir = SimDir::new();
        for (file, original) in &self.files {
            let contents = if *file == name { bytes } else { original };
            dir.write_raw(file, 0, contents).expect("write_raw");
        }
        dir
    }
}

/// The newest valid meta slot of a meta file.
fn newest_meta(meta_bytes: &[u8]) -> Meta {
    (0..META_SLOTS)
        .filter_map(|slot| {
            Meta::decode(
                meta_bytes.get(slot * META_SLOT_BYTES..(slot + 1) * META_SLOT_BYTES)?,
                slot,
            )
            .ok()
        })
        .max_by_key(|m| m.generation)
        .expect("a valid meta slot")
}

/// The byte ranges of the intact records from the start of a log.
fn walk_records(wal_bytes: &[u8]) -> Vec<Range<u64>> {
    let mut walk = Vec::new();
    let mut at = wal::RECORDS_START as usize;
    while let Some(record) = wal_bytes.get(at..).and_then(wal::decode) {
        let len = record.encoded_len();
        walk.push(at as u64..(at + len) as u64);
        at += len;
    }
    walk
}

/// The walked records that follow the checkpoint `newest`: its epoch,
/// numbered on from its commit.
fn records_of_epoch(wal_bytes: &[u8], walk: &[Range<u64>], newest: &Meta) -> Vec<Range<u64>> {
    walk.iter()
        .zip(newest.commit_seq + 1..)
        .take_while(|(range, seq)| {
            let record = wal::decode(&wal_bytes[range.start as usize..]).expect("intact");
            record.epoch == newest.generation && record.seq == *seq
        })
        .map(|(range, _)| range.clone())
        .collect()
}

/// Applies and commits `writes`, checking the root against `tree`.
fn commit(store: &mut Store, tree: &mut ReferenceTree, writes: &[(B256, B256)]) {
    tree.insert_batch(writes);
    store.apply(writes).expect("apply");
    assert_eq!(store.commit().expect("commit"), tree.compute_root());
}

/// The history of `shape` up to its newest checkpoint; returns how many
/// records the log gets after it.
fn write_checkpoints(
    shape: Shape,
    store: &mut Store,
    tree: &mut ReferenceTree,
    rng: &mut SplitMix64,
    known: &mut Vec<B256>,
) -> usize {
    match shape {
        Shape::Records | Shape::Closed => {
            for i in 0..6 {
                let writes = writes_over_mixed_keys(rng, known, 340);
                commit(store, tree, &writes);
                if i % 2 == 1 {
                    store.checkpoint().expect("checkpoint");
                }
            }
            5
        }
        Shape::FirstCheckpoint => {
            for _ in 0..6 {
                let writes = writes_over_mixed_keys(rng, known, 340);
                commit(store, tree, &writes);
            }
            store.checkpoint().expect("checkpoint");
            4
        }
        Shape::FirstCheckpointBulk => {
            let mut writes = writes_over_mixed_keys(rng, known, 2000);
            // Stable: of equal keys the last written wins, as in the store.
            writes.sort_by_key(|(key, _)| *key);
            tree.insert_batch(&writes);
            let root = store.apply_bulk(writes.iter().copied()).expect("bulk");
            assert_eq!(root, tree.compute_root());
            0
        }
    }
}

fn build(shape: Shape, seed: u64) -> Fixture {
    let mut rng = SplitMix64(seed ^ shape as u64);
    let (sim, dir) = sim_dir();
    // A large budget: checkpoints happen only when asked for.
    let opts = options(GROUP_DEPTH, 64 << 20);
    let mut store = open(&dir, &opts);
    let mut tree = ReferenceTree::new();
    let mut known = Vec::new();
    let records = write_checkpoints(shape, &mut store, &mut tree, &mut rng, &mut known);
    let state = |store: &Store, tree: &ReferenceTree| State {
        seq: store.commit_seq(),
        root: store.committed_root(),
        tree: tree.clone(),
    };
    let mut after = vec![state(&store, &tree)];
    for _ in 0..records {
        let n = 20 + rng.below(20) as usize;
        let writes = writes_over_mixed_keys(&mut rng, &mut known, n);
        commit(&mut store, &mut tree, &writes);
        after.push(state(&store, &tree));
    }
    if matches!(shape, Shape::Closed) {
        store.close().expect("close");
    } else {
        drop(store);
    }
    let files: Vec<(&'static str, Vec<u8>)> = [META_FILE, DATA_FILE, WAL_FILE]
        .into_iter()
        .map(|name| (name, sim.file_bytes(name).expect(name)))
        .collect();

    // The newest checkpoint, and the log's newest mark, agree.
    let newest = newest_meta(&files[0].1);
    let wal_bytes = &files[2].1;
    let mark = wal::Mark::newest(&wal_bytes[..wal::RECORDS_START as usize]).expect("a mark");
    assert_eq!(
        (mark.epoch, mark.base_seq),
        (newest.generation, newest.commit_seq),
        "{shape:?}: the log follows the newest checkpoint"
    );
    let expected_generation = match shape {
        Shape::Records => 3,
        Shape::Closed => 4,
        Shape::FirstCheckpoint | Shape::FirstCheckpointBulk => 1,
    };
    assert_eq!(newest.generation, expected_generation, "{shape:?}");

    let walk = walk_records(wal_bytes);
    let records_of_epoch = records_of_epoch(wal_bytes, &walk, &newest);
    let full = after.last().expect("a state").clone();
    let (before_last, last_mark) = match shape {
        Shape::Closed | Shape::FirstCheckpointBulk => {
            assert!(records_of_epoch.is_empty(), "{shape:?}: records");
            assert_eq!(full.seq, newest.commit_seq);
            (None, None)
        }
        Shape::Records | Shape::FirstCheckpoint => {
            assert_eq!(records_of_epoch.len(), records, "{shape:?}: records");
            assert_eq!(mark.seq, full.seq, "{shape:?}: the mark witnesses the last");
            let slot = mark.slot() as u64 * wal::MARK_BYTES as u64;
            (
                Some(after[after.len() - 2].clone()),
                Some(slot..slot + wal::MARK_BYTES as u64),
            )
        }
    };
    let mut probes: Vec<B256> = tree.entries().map(|(key, _)| *key).collect();
    probes.extend((0..64).map(|_| B256::from(rng.bytes32())));
    Fixture {
        shape,
        files,
        opts,
        generation: newest.generation,
        full,
        before_last,
        records: records_of_epoch,
        walk,
        last_mark,
        probes,
    }
}

/// The kinds of damage.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
enum Kind {
    ZeroSector,
    ZeroToEnd,
    CutAtSector,
    CutInRecords,
}

impl Kind {
    fn name(self) -> &'static str {
        match self {
            Kind::ZeroSector => "sector zeroed",
            Kind::ZeroToEnd => "zeroed to the end",
            Kind::CutAtSector => "cut at a sector",
            Kind::CutInRecords => "cut in the records",
        }
    }
}

/// One damaged image: which file, how, and the damaged byte range.
struct Case {
    file: &'static str,
    kind: Kind,
    bytes: Vec<u8>,
    damage: Range<u64>,
    what: String,
}

fn overlaps(a: &Range<u64>, b: &Range<u64>) -> bool {
    a.start < b.end && b.start < a.end
}

/// Every damaged image of one file: sectors `0..sectors` zeroed, zeroed
/// to the end, cut; and cuts at `cuts`.
fn cases_of(file: &'static str, original: &[u8], sectors: u64, cuts: &[u64]) -> Vec<Case> {
    let len = original.len() as u64;
    let mut cases = Vec::new();
    for sector in 0..sectors {
        let start = sector * SECTOR_SIZE;
        if start >= len {
            break;
        }
        let end = (start + SECTOR_SIZE).min(len);
        let mut zeroed = original.to_vec();
        zeroed[start as usize..end as usize].fill(0);
        cases.push(Case {
            file,
            kind: Kind::ZeroSector,
            bytes: zeroed,
            damage: start..end,
            what: format!("{file} sector {sector} zeroed"),
        });
        let mut to_end = original.to_vec();
        to_end[start as usize..].fill(0);
        cases.push(Case {
            file,
            kind: Kind::ZeroToEnd,
            bytes: to_end,
            damage: start..len,
            what: format!("{file} zeroed from sector {sector} to the end"),
        });
        cases.push(Case {
            file,
            kind: Kind::CutAtSector,
            bytes: original[..start as usize].to_vec(),
            damage: start..len,
            what: format!("{file} cut at sector {sector} (byte {start})"),
        });
    }
    for &at in cuts {
        if at < len {
            cases.push(Case {
                file,
                kind: Kind::CutInRecords,
                bytes: original[..at as usize].to_vec(),
                damage: at..len,
                what: format!("{file} cut at byte {at}"),
            });
        }
    }
    cases
}

/// Every damaged image of a fixture: each distinct image once per kind of
/// damage that makes it (zeroing a sector already zero is no damage).
fn cases(fx: &Fixture) -> Vec<Case> {
    let meta = fx.bytes(META_FILE);
    let mut all = cases_of(
        META_FILE,
        meta,
        (meta.len() as u64).div_ceil(SECTOR_SIZE),
        &[],
    );
    let log = fx.bytes(WAL_FILE);
    let records_end = fx.walk.last().map_or(wal::RECORDS_START, |r| r.end);
    let region_end = (records_end.div_ceil(SECTOR_SIZE) + TAIL_SECTORS) * SECTOR_SIZE;
    let mut cuts = Vec::new();
    for record in &fx.walk {
        let len = record.end - record.start;
        for inside in [0, 1, 8, 67, 68, len / 2, len - 1, len] {
            cuts.push(record.start + inside.min(len));
        }
    }
    cuts.sort_unstable();
    cuts.dedup();
    all.extend(cases_of(
        WAL_FILE,
        log,
        region_end.min(log.len() as u64).div_ceil(SECTOR_SIZE),
        &cuts,
    ));
    let mut seen = HashSet::new();
    all.retain(|case| {
        if case.bytes == fx.bytes(case.file) {
            return false;
        }
        let mut hasher = DefaultHasher::new();
        case.file.hash(&mut hasher);
        case.kind.hash(&mut hasher);
        case.bytes.hash(&mut hasher);
        seen.insert(hasher.finish())
    });
    all
}

/// Where an image opened.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Outcome {
    Full,
    BeforeLast,
    Rejected,
}

/// Opens one damaged image and checks it (see the module documentation).
fn check(fx: &Fixture, case: &Case) -> Result<Outcome, String> {
    // Only damage to the last record, or to the mark witnessing it, may
    // lose the last commit.
    let may_lose_last = case.file == WAL_FILE
        && fx.before_last.is_some()
        && (fx
            .records
            .last()
            .is_some_and(|last| overlaps(&case.damage, last))
            || fx
                .last_mark
                .as_ref()
                .is_some_and(|mark| overlaps(&case.damage, mark)));
    let dir = fx.image(case.file, &case.bytes);
    let store = match Store::open(Arc::new(dir), fx.opts.clone()) {
        Ok(store) => store,
        Err(error) if error.is_corruption() => return Ok(Outcome::Rejected),
        Err(error) => return Err(format!("open failed with a non-corruption error: {error}")),
    };
    let (seq, root) = (store.commit_seq(), store.root());
    if store.committed_root() != root {
        return Err("opened with uncommitted writes".into());
    }
    let (state, outcome) = if (seq, root) == (fx.full.seq, fx.full.root) {
        (&fx.full, Outcome::Full)
    } else {
        match &fx.before_last {
            Some(before) if (seq, root) == (before.seq, before.root) && may_lose_last => {
                (before, Outcome::BeforeLast)
            }
            _ => {
                return Err(format!(
                    "opened at commit {seq} root {} (the full state is commit {}{})",
                    hex_root(&root),
                    fx.full.seq,
                    if may_lose_last {
                        format!(", {} allowed too", fx.full.seq - 1)
                    } else {
                        String::new()
                    }
                ))
            }
        }
    };
    verify_counts(&store, state.tree.len())?;
    match check_reads(&store, &state.tree, &fx.probes)? {
        0 => Ok(outcome),
        n => Err(format!("{n} reads failed with Corrupted")),
    }
}

/// Counts of one row of the table.
#[derive(Default)]
struct Row {
    images: usize,
    full: usize,
    before_last: usize,
    rejected: usize,
}

#[test]
fn zeroed_and_cut_regions_of_the_meta_file_and_the_wal() {
    let seed = seed_from_env(0xda3a_9e01);
    println!("seed {seed} (rerun with UBT_SEED={seed})");
    let started = Instant::now();
    let shapes = [
        Shape::Records,
        Shape::Closed,
        Shape::FirstCheckpoint,
        Shape::FirstCheckpointBulk,
    ];
    let fixtures: Vec<Fixture> = shapes.iter().map(|&shape| build(shape, seed)).collect();
    for fx in &fixtures {
        println!(
            "{}: generation {}, commit {}, {} values, {} WAL records of the epoch, meta {} bytes, \
             WAL {} bytes",
            fx.shape.name(),
            fx.generation,
            fx.full.seq,
            fx.full.tree.len(),
            fx.records.len(),
            fx.bytes(META_FILE).len(),
            fx.bytes(WAL_FILE).len()
        );
        // The undamaged files open at the full state.
        let undamaged = Case {
            file: META_FILE,
            kind: Kind::ZeroSector,
            bytes: fx.bytes(META_FILE).to_vec(),
            damage: 0..0,
            what: "undamaged".into(),
        };
        assert_eq!(
            check(fx, &undamaged),
            Ok(Outcome::Full),
            "{}",
            fx.shape.name()
        );
    }
    let work: Vec<(usize, Case)> = fixtures
        .iter()
        .enumerate()
        .flat_map(|(i, fx)| cases(fx).into_iter().map(move |case| (i, case)))
        .collect();
    let results = check_in_parallel(&fixtures, &work);
    let mut rows: BTreeMap<(usize, &str, Kind), Row> = BTreeMap::new();
    let mut failures = Vec::new();
    for (index, result) in results {
        let (fixture, case) = &work[index];
        let row = rows.entry((*fixture, case.file, case.kind)).or_default();
        row.images += 1;
        match result {
            Ok(Outcome::Full) => row.full += 1,
            Ok(Outcome::BeforeLast) => row.before_last += 1,
            Ok(Outcome::Rejected) => row.rejected += 1,
            Err(what) => failures.push(format!(
                "{}: {}: {what}",
                fixtures[*fixture].shape.name(),
                case.what
            )),
        }
    }
    let total = print_rows(&fixtures, &rows);
    println!(
        "{} failed; {:.1} s",
        failures.len(),
        started.elapsed().as_secs_f64()
    );
    failures.sort();
    assert!(
        failures.is_empty(),
        "seed {seed}: {} damaged images failed (first 30):\n{}",
        failures.len(),
        failures
            .iter()
            .take(30)
            .cloned()
            .collect::<Vec<_>>()
            .join("\n")
    );
    // Every outcome was reached: the test exercises what it claims.
    assert!(total.full > 0 && total.before_last > 0 && total.rejected > 0);
}

/// Checks every `(fixture, case)` of `work` on all cores; the results by
/// index into `work` (a panic is a failure).
fn check_in_parallel(
    fixtures: &[Fixture],
    work: &[(usize, Case)],
) -> Vec<(usize, Result<Outcome, String>)> {
    let next = AtomicUsize::new(0);
    let results: Mutex<Vec<(usize, Result<Outcome, String>)>> = Mutex::new(Vec::new());
    let workers = std::thread::available_parallelism().map_or(1, |n| n.get());
    std::thread::scope(|scope| {
        for _ in 0..workers {
            scope.spawn(|| loop {
                let index = next.fetch_add(1, Ordering::Relaxed);
                let Some((fixture, case)) = work.get(index) else {
                    break;
                };
                let result =
                    std::panic::catch_unwind(AssertUnwindSafe(|| check(&fixtures[*fixture], case)))
                        .unwrap_or_else(|_| Err("panicked".into()));
                results
                    .lock()
                    .unwrap_or_else(|e| e.into_inner())
                    .push((index, result));
            });
        }
    });
    results.into_inner().unwrap_or_else(|e| e.into_inner())
}

/// Prints a row per shape, file and kind of damage, and the total; returns
/// the total.
fn print_rows(fixtures: &[Fixture], rows: &BTreeMap<(usize, &str, Kind), Row>) -> Row {
    println!(
        "{:<20} {:<9} {:<20} {:>7} {:>6} {:>14} {:>9}",
        "shape", "file", "damage", "images", "full", "commit before", "rejected"
    );
    let mut total = Row::default();
    for ((fixture, file, kind), row) in rows {
        println!(
            "{:<20} {:<9} {:<20} {:>7} {:>6} {:>14} {:>9}",
            fixtures[*fixture].shape.name(),
            file,
            kind.name(),
            row.images,
            row.full,
            row.before_last,
            row.rejected
        );
        total.images += row.images;
        total.full += row.full;
        total.before_last += row.before_last;
        total.rejected += row.rejected;
    }
    println!(
        "{:<20} {:<9} {:<20} {:>7} {:>6} {:>14} {:>9}",
        "total", "", "", total.images, total.full, total.before_last, total.rejected
    );
    total
}
