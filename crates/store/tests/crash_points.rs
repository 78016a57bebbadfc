//! Power loss at every I/O operation of a scripted workload.
//!
//! The workload ([`common::workload`]: blocks applied as layers, persists of some
//! layers only, commits of several, reverts of unpersisted layers and
//! durable reverts of persisted blocks, checkpoints writing the revert
//! window as a segment, reopens, writes lost to a reopen, bulk applies
//! staging their buckets before their checkpoint; a memory budget small
//! enough that most persists also checkpoint) is run on a fresh
//! simulated disk once per crash point `k = 0, 1, ...`: the disk refuses
//! operation `k` and every later one ([`SimDir::set_crash_at`]), so the
//! workload stops there. The last point is the first `k` the workload
//! completes without reaching.
//!
//! For every crash point, crash images are built with every mode: unsynced
//! operations dropped, kept, and a few random subsets of them, kept whole,
//! reordered, torn at a sector boundary or torn at any byte. Each image
//! must open without any error, `verify` clean, and be exactly at the last
//! commit whose step returned `Ok` before the crash, or at the one in
//! flight when the crash hit (if any; for a bulk apply, the state before
//! or after the whole block, or after the record of the layers it
//! commits first): same commit sequence number, same root, every value
//! equal to the reference tree's at that commit. The
//! recovered database must then revert one persisted block when the
//! revert window holds one (the window survives the crash too), take one
//! more block, commit and checkpoint it, and reopen at the root the
//! reference gives.
//!
//! Images with the same bytes as one already checked are only checked
//! against the allowed states (the open is a function of the bytes).
//! Every failure is listed with its crash point, mode and image seed.
//!
//! Rerun with `UBT_SEED=<seed>` (printed at the start). `UBT_LONG=1` runs
//! workloads of successive seeds on every core until 1,000,000 crash
//! images are checked (`UBT_CRASH_IMAGES=<n>` for another target).

// Test code: a failed unwrap is a failed test, and casts narrow test data.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::cast_possible_truncation
)]

mod common;

use std::collections::hash_map::DefaultHasher;
use std::collections::{BTreeMap, HashMap};
use std::hash::{Hash as _, Hasher};
use std::panic::AssertUnwindSafe;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Instant;

use alloy_primitives::B256;
use common::workload::{run, script, script_flat, Script, State, Step};
use common::*;
use ubt_spec::hash::Hash;
use ubt_spec::{ReferenceTree, StateTree};
use ubt_store::io::sim::{CrashMode, SimDir, SimEventKind};
use ubt_store::io::StoreDir;
use ubt_store::{Store, StoreError};

/// Rounds of the workload (about 900 crash points; the cost grows with the
/// square of the crash points, so the long mode runs more seeds instead).
const ROUNDS: usize = 7;
/// Rounds of the workload on a database with a flat index.
const FLAT_ROUNDS: usize = 4;
/// Crash images the default run must check at least.
const IMAGES_MIN: usize = 5_000;
/// Crash images the long mode checks by default.
const LONG_IMAGES: usize = 1_000_000;
/// Rounds of random images (one of each random mode) per crash point in
/// the default run and in the long mode.
const RANDOM_ROUNDS: u64 = 2;
const LONG_RANDOM_ROUNDS: u64 = 6;

/// The roots a recovered database must reach after the probe block.
struct Expected {
    /// `after_probe[seq]`: state `seq` plus the probe block.
    after_probe: Vec<Hash>,
    /// State `seq` reverted one block, plus the probe block.
    after_revert_probe: Vec<Option<Hash>>,
}

impl Expected {
    fn new(script: &Script) -> Expected {
        let with_probe = |tree: &ReferenceTree| {
            let mut tree = tree.clone();
            tree.insert_batch(&script.probe_block);
            tree.compute_root()
        };
        Expected {
            after_probe: script.states.iter().map(|s| with_probe(&s.tree)).collect(),
            after_revert_probe: script
                .states
                .iter()
                .map(|s| s.revert_to.as_ref().map(|(_, tree)| with_probe(tree)))
                .collect(),
        }
    }
}

/// Hash of every file of an image (names and bytes).
fn image_hash(image: &SimDir) -> u64 {
    let mut hasher = DefaultHasher::new();
    for name in image.file_names() {
        name.hash(&mut hasher);
        image.file_bytes(&name).hash(&mut hasher);
    }
    hasher.finish()
}

/// Checks a recovered store's state against `state`.
fn check_state(store: &Store, state: &State, probes: &[B256]) -> Result<(), String> {
    if store.root() != state.root || store.committed_root() != state.root {
        return Err(format!(
            "root {}, the reference gives {}",
            hex_root(&store.root()),
            hex_root(&state.root)
        ));
    }
    verify_counts(store, state.tree.len())?;
    match check_reads(store, &state.tree, probes)? + check_flat_reads(store, &state.tree, probes)? {
        0 => Ok(()),
        n => Err(format!("{n} reads failed with Corrupted")),
    }
}

/// Opens an image and checks it; returns the commit count it recovered
/// and whether it then reverted a persisted block.
fn check_image(
    script: &Script,
    expected: &Expected,
    image: SimDir,
    allowed: &[usize],
) -> Result<(usize, bool), String> {
    let dir: Arc<dyn StoreDir> = Arc::new(image);
    let mut store = Store::open(Arc::clone(&dir), script.opts.clone())
        .map_err(|e| format!("open failed: {e}"))?;
    let seq = store.commit_seq() as usize;
    if !allowed.contains(&seq) {
        return Err(format!(
            "recovered commit {seq} (root {}), allowed {allowed:?}",
            hex_root(&store.root())
        ));
    }
    let state = &script.states[seq];
    check_state(&store, state, &script.probes).map_err(|e| format!("commit {seq}: {e}"))?;
    // The revert window survived: one persisted block back is reachable.
    let mut next_seq = seq + 1;
    let mut next_root = expected.after_probe[seq];
    if let Some((root, tree)) = &state.revert_to {
        store
            .revert(root)
            .map_err(|e| format!("commit {seq}: revert one block after recovery: {e}"))?;
        let reverted = State {
            root: *root,
            tree: tree.clone(),
            revert_to: None,
        };
        check_state(&store, &reverted, &script.probes)
            .map_err(|e| format!("commit {seq} reverted one block: {e}"))?;
        next_seq += 1;
        next_root = expected.after_revert_probe[seq].unwrap_or_default();
    }
    // The recovered database takes the next block.
    apply_block(&mut store, &script.probe_block)
        .and_then(|_| store.commit())
        .and_then(|_| store.checkpoint())
        .map_err(|e| format!("writing after recovery: {e}"))?;
    drop(store);
    let store =
        Store::open(dir, script.opts.clone()).map_err(|e| format!("reopen after writing: {e}"))?;
    if store.root() != next_root || store.commit_seq() as usize != next_seq {
        return Err(format!(
            "after recovery and one more block: commit {} root {}, expected commit {next_seq} \
             root {}",
            store.commit_seq(),
            hex_root(&store.root()),
            hex_root(&next_root)
        ));
    }
    Ok((seq, state.revert_to.is_some()))
}

/// The crash images built at each crash point: mode and image seed.
fn image_modes(k: u64, seed: u64, random_rounds: u64) -> Vec<(CrashMode, u64)> {
    let base = seed ^ k.wrapping_mul(SplitMix64::GAMMA);
    let mut modes = vec![(CrashMode::DropUnsynced, 0), (CrashMode::KeepUnsynced, 0)];
    let random = [
        CrashMode::RandomSubset,
        CrashMode::Reordered,
        CrashMode::Torn,
        CrashMode::TornAnyByte,
    ];
    for i in 0..random_rounds {
        for (j, mode) in random.iter().enumerate() {
            modes.push((*mode, base.wrapping_add(4 * i + j as u64)));
        }
    }
    modes
}

/// What an enumeration found.
#[derive(Debug, Default)]
struct Tally {
    points: u64,
    images: usize,
    distinct: usize,
    failed: usize,
    /// Recoveries per outcome: at the last acknowledged record, or at the
    /// one in flight.
    at_acked: usize,
    at_in_flight: usize,
    /// Distinct images whose recovered database then reverted a block.
    reverted: usize,
    /// Crash points inside bulk applies, their images, and the images
    /// recovered after the whole block.
    bulk_points: u64,
    bulk_images: usize,
    bulk_after: usize,
    failures: Vec<String>,
}

impl Tally {
    /// One line of what was checked and found, `started` ago.
    fn summary(&self, started: Instant) -> String {
        format!(
            "{} crash points, {} crash images ({} distinct, {} of them reverted a block after \
             recovery), recovered at the last acknowledged commit {}, at the one in flight {}, \
             {} failed; {:.1} s",
            self.points,
            self.images,
            self.distinct,
            self.reverted,
            self.at_acked,
            self.at_in_flight,
            self.failed,
            started.elapsed().as_secs_f64()
        )
    }
}

/// Crashes `script` at every operation, `random_rounds` rounds of random
/// images per point.
fn enumerate(script: &Script, seed: u64, random_rounds: u64) -> Tally {
    let expected = Expected::new(script);
    let mut tally = Tally::default();
    let mut seen: HashMap<u64, usize> = HashMap::new();
    let mut k = 0u64;
    loop {
        let (sim, dir) = sim_dir();
        sim.set_crash_at(Some(k));
        let (progress, error) = run(script, &dir);
        drop(dir);
        if !sim.crashed() {
            assert!(
                error.is_none(),
                "seed {seed} k {k}: run failed without a crash: {error:?}"
            );
            break;
        }
        if let Some(error) = &error {
            let is_crash = matches!(error, StoreError::Io { source, .. }
                if source.to_string().contains("simulated crash"))
                || matches!(error, StoreError::Poisoned(_));
            assert!(is_crash, "seed {seed} k {k}: the run stopped on {error}");
        }
        let allowed = progress.allowed();
        let in_bulk = matches!(script.steps.get(progress.step), Some(Step::Bulk { .. }));
        tally.bulk_points += u64::from(in_bulk);
        for (mode, image_seed) in image_modes(k, seed, random_rounds) {
            tally.images += 1;
            tally.bulk_images += usize::from(in_bulk);
            let image = sim.crash_image(mode, image_seed);
            let hash = image_hash(&image);
            let result = match seen.get(&hash) {
                Some(&seq) if allowed.contains(&seq) => Ok(seq),
                Some(&seq) => Err(format!(
                    "recovered commit {seq} (same bytes as an image checked before), \
                     allowed {allowed:?}"
                )),
                None => {
                    tally.distinct += 1;
                    let checked = std::panic::catch_unwind(AssertUnwindSafe(|| {
                        check_image(script, &expected, image, &allowed)
                    }))
                    .unwrap_or_else(|_| Err("panicked".to_string()));
                    checked.map(|(seq, reverted)| {
                        seen.insert(hash, seq);
                        tally.reverted += usize::from(reverted);
                        seq
                    })
                }
            };
            match result {
                Ok(seq) if seq == progress.acked => tally.at_acked += 1,
                Ok(seq) => {
                    tally.at_in_flight += 1;
                    tally.bulk_after +=
                        usize::from(in_bulk && seq == progress.acked + progress.in_flight);
                }
                Err(what) => {
                    tally.failed += 1;
                    if tally.failures.len() < 40 {
                        tally.failures.push(format!(
                            "seed {seed} k {k} (step {} {}, {} acked, {} in flight) {mode:?} \
                             image seed {image_seed}: {what}",
                            progress.step,
                            script.steps.get(progress.step).map_or("end", Step::name),
                            progress.acked,
                            progress.in_flight
                        ));
                    }
                }
            }
        }
        k += 1;
    }
    tally.points = k;
    tally
}

/// A one-line description of the workload's steps and operations.
fn describe_workload(script: &Script, clean: &SimDir) -> String {
    let mut steps: BTreeMap<&str, usize> = BTreeMap::new();
    for step in &script.steps {
        *steps.entry(step.name()).or_default() += 1;
    }
    let mut kinds: BTreeMap<String, usize> = BTreeMap::new();
    for event in clean.events() {
        let what = match event.kind {
            SimEventKind::Create => "create",
            SimEventKind::Write { .. } => "write",
            SimEventKind::SetLen { .. } => "set_len",
            SimEventKind::Sync => "sync",
            SimEventKind::SyncDir => "sync_dir",
        };
        let file = event.file.unwrap_or_else(|| "dir".into());
        *kinds.entry(format!("{what} {file}")).or_default() += 1;
    }
    format!(
        "{} steps {steps:?}, {} WAL records, {} values; {} operations, of which change \
         something: {kinds:?}",
        script.steps.len(),
        script.states.len() - 1,
        script.states.last().map_or(0, |s| s.tree.len()),
        clean.op_count()
    )
}

/// Runs `script` without a crash and checks the result; returns the disk.
fn clean_run(script: &Script) -> SimDir {
    let (clean, dir) = sim_dir();
    let (progress, error) = run(script, &dir);
    assert!(error.is_none(), "clean run: {error:?}");
    if script.opts.flat_index {
        assert!(
            progress.stems_written_max > 0,
            "the flat workload never wrote a dense stem as a whole"
        );
    }
    let records = script.states.len() - 1;
    assert_eq!(progress.acked, records, "clean run: records acknowledged");
    assert_eq!(
        check_image(
            script,
            &Expected::new(script),
            clean.crash_image(CrashMode::DropUnsynced, 0),
            &[records]
        ),
        Ok((records, script.states[records].revert_to.is_some())),
        "clean run"
    );
    clean
}

fn long_images() -> usize {
    std::env::var("UBT_CRASH_IMAGES")
        .map(|n| n.parse().expect("UBT_CRASH_IMAGES is a number"))
        .unwrap_or(LONG_IMAGES)
}

#[test]
fn power_loss_at_every_operation() {
    let seed = seed_from_env(0xc4a5_4001);
    if long_mode() {
        return power_loss_long(seed, long_images());
    }
    println!("seed {seed} (rerun with UBT_SEED={seed})");
    let started = Instant::now();
    let script = script(seed, ROUNDS);
    let clean = clean_run(&script);
    println!("workload: {}", describe_workload(&script, &clean));
    let tally = enumerate(&script, seed, RANDOM_ROUNDS);
    println!("{}", tally.summary(started));
    println!(
        "inside bulk applies: {} crash points, {} crash images, {} recovered after the whole block",
        tally.bulk_points, tally.bulk_images, tally.bulk_after
    );
    assert_eq!(
        tally.points,
        clean.op_count(),
        "the last crash point is the operation count"
    );
    assert!(
        tally.failures.is_empty(),
        "seed {seed}: {} crash images failed (first 40):\n{}",
        tally.failed,
        tally.failures.join("\n")
    );
    assert!(
        tally.images >= IMAGES_MIN,
        "only {} crash images",
        tally.images
    );
    assert!(
        tally.at_in_flight > 0,
        "no recovery kept a record in flight"
    );
    assert!(
        tally.bulk_points > 0 && tally.bulk_after > 0,
        "no crash point inside a bulk apply recovered the block"
    );
}

/// The same on a database with a flat index (every block applied with its
/// accounts, no bulk applies): its leaves and directory nodes written by
/// checkpoints, its changes replayed from the WAL and undone by reverts
/// into the window, through every crash image; each recovered image also
/// reads every probe through the flat index and verifies it against the
/// tree.
#[test]
fn power_loss_at_every_operation_with_a_flat_index() {
    let seed = seed_from_env(0xf1a7_4001);
    let tally = every_crash_point(&script_flat(seed, FLAT_ROUNDS), seed, "flat workload");
    assert!(tally.at_in_flight > 0 && tally.reverted > 0);
}

/// Runs `script` clean, then through every crash point's images; every
/// image must recover, and the last crash point is the operation count.
fn every_crash_point(script: &Script, seed: u64, label: &str) -> Tally {
    let started = Instant::now();
    let clean = clean_run(script);
    println!(
        "seed {seed}; {label}: {}",
        describe_workload(script, &clean)
    );
    let tally = enumerate(script, seed, RANDOM_ROUNDS);
    println!("{}", tally.summary(started));
    assert_eq!(tally.points, clean.op_count());
    assert!(
        tally.failures.is_empty(),
        "seed {seed}: {} crash images failed (first 40):\n{}",
        tally.failed,
        tally.failures.join("\n")
    );
    tally
}

/// The same workload on a database created with 16 KiB buckets (fewer,
/// larger buckets, each written and split at that capacity; the capacity
/// kept in the meta record): every crash image recovers a committed state
/// at the capacity it was created with.
#[test]
fn power_loss_at_every_operation_with_larger_buckets() {
    let seed = seed_from_env(0xb16b_4001);
    let mut script = script(seed, FLAT_ROUNDS);
    script.opts.bucket_bytes = Some(16 << 10);
    let tally = every_crash_point(&script, seed, "16 KiB buckets");
    assert!(tally.at_in_flight > 0);
}

/// The long mode: workloads of seeds `seed, seed + 1, ...` (one per core
/// at a time, with three times the random images of the default run per
/// crash point) until `target` crash images are checked.
fn power_loss_long(seed: u64, target: usize) {
    let workers = std::thread::available_parallelism().map_or(1, |n| n.get());
    println!("long mode: seeds from {seed}, {workers} workers, {target} crash images");
    let started = Instant::now();
    let next_seed = AtomicU64::new(seed);
    let images = AtomicUsize::new(0);
    let totals = Mutex::new(Tally::default());
    std::thread::scope(|scope| {
        for _ in 0..workers {
            scope.spawn(|| {
                while images.load(Ordering::Relaxed) < target {
                    let seed = next_seed.fetch_add(1, Ordering::Relaxed);
                    let script = script(seed, ROUNDS);
                    clean_run(&script);
                    let tally = enumerate(&script, seed, LONG_RANDOM_ROUNDS);
                    let done = images.fetch_add(tally.images, Ordering::Relaxed) + tally.images;
                    println!(
                        "seed {seed}: {} points, {} images ({} distinct), {} failed; {done} \
                         images so far, {:.0} s",
                        tally.points,
                        tally.images,
                        tally.distinct,
                        tally.failed,
                        started.elapsed().as_secs_f64()
                    );
                    let mut totals = totals.lock().unwrap_or_else(|e| e.into_inner());
                    totals.points += tally.points;
                    totals.images += tally.images;
                    totals.distinct += tally.distinct;
                    totals.failed += tally.failed;
                    totals.at_acked += tally.at_acked;
                    totals.at_in_flight += tally.at_in_flight;
                    totals.reverted += tally.reverted;
                    totals.bulk_points += tally.bulk_points;
                    totals.bulk_images += tally.bulk_images;
                    totals.bulk_after += tally.bulk_after;
                    totals.failures.extend(tally.failures.into_iter().take(10));
                }
            });
        }
    });
    let totals = totals.into_inner().unwrap_or_else(|e| e.into_inner());
    println!(
        "long mode: {} seeds, {} crash points, {} crash images ({} distinct, {} of them \
         reverted a block after recovery), recovered at the last acknowledged commit {}, at \
         the one in flight {}, {} failed; inside bulk applies {} crash points, {} images, {} \
         recovered after the whole block; {:.0} s",
        next_seed.load(Ordering::Relaxed) - seed,
        totals.points,
        totals.images,
        totals.distinct,
        totals.reverted,
        totals.at_acked,
        totals.at_in_flight,
        totals.failed,
        totals.bulk_points,
        totals.bulk_images,
        totals.bulk_after,
        started.elapsed().as_secs_f64()
    );
    assert!(
        totals.failures.is_empty(),
        "{} crash images failed (some of them):\n{}",
        totals.failed,
        totals.failures.join("\n")
    );
    assert!(totals.images >= target);
}

/// Crash images per mode and crash point in [`power_loss_during_creation`].
const CREATION_IMAGES: u64 = 16;

/// The creation of a database (the first open, then one commit and a
/// checkpoint), with many more random images per crash point than the
/// main test: a crash while the files are being created must leave either
/// no database (the next open creates one) or an empty one.
#[test]
fn power_loss_during_creation() {
    let seed = seed_from_env(0xc4a5_4001);
    println!("seed {seed} (rerun with UBT_SEED={seed})");
    let mut rng = SplitMix64(seed);
    let mut known = Vec::new();
    let writes = random_writes(&mut rng, &mut known, 20);
    let mut tree = ReferenceTree::new();
    let empty = State {
        root: tree.compute_root(),
        tree: tree.clone(),
        revert_to: None,
    };
    tree.insert_batch(&writes);
    known.extend((0..10).map(|_| B256::from(rng.bytes32())));
    let one = State {
        root: tree.compute_root(),
        tree,
        revert_to: Some((empty.root, empty.tree.clone())),
    };
    let script = Script {
        steps: vec![
            Step::Apply(writes),
            Step::Commit { record: true },
            Step::Checkpoint { record: false },
        ],
        states: vec![empty, one],
        probes: known,
        probe_block: random_writes(&mut rng, &mut Vec::new(), 10),
        opts: options(2, 64 << 10),
    };
    let expected = Expected::new(&script);
    let mut images = 0usize;
    let mut failures: BTreeMap<String, Vec<(u64, String)>> = BTreeMap::new();
    let mut k = 0u64;
    loop {
        let (sim, dir) = sim_dir();
        sim.set_crash_at(Some(k));
        let (progress, _) = run(&script, &dir);
        drop(dir);
        if !sim.crashed() {
            break;
        }
        let allowed = progress.allowed();
        for (mode, image_seed) in image_modes(k, seed, CREATION_IMAGES) {
            images += 1;
            let image = sim.crash_image(mode, image_seed);
            let files: Vec<String> = image
                .file_names()
                .into_iter()
                .map(|name| {
                    let len = image.file_bytes(&name).map_or(0, |b| b.len());
                    format!("{name} ({len} bytes)")
                })
                .collect();
            let checked = std::panic::catch_unwind(AssertUnwindSafe(|| {
                check_image(&script, &expected, image, &allowed)
            }))
            .unwrap_or_else(|_| Err("panicked".to_string()));
            if let Err(what) = checked {
                failures.entry(what).or_default().push((
                    k,
                    format!("k {k} {mode:?} image seed {image_seed}, files {files:?}"),
                ));
            }
        }
        k += 1;
    }
    let failed: usize = failures.values().map(Vec::len).sum();
    println!("{k} crash points, {images} crash images, {failed} failed");
    let report: Vec<String> = failures
        .iter()
        .map(|(what, cases)| {
            let mut per_point: BTreeMap<u64, usize> = BTreeMap::new();
            for (k, _) in cases {
                *per_point.entry(*k).or_default() += 1;
            }
            let per_point: Vec<String> = per_point
                .iter()
                .map(|(k, n)| format!("{n} at k {k}"))
                .collect();
            let examples: Vec<&str> = cases.iter().take(3).map(|(_, c)| c.as_str()).collect();
            format!(
                "{what}: {} images ({}), e.g.\n    {}",
                cases.len(),
                per_point.join(", "),
                examples.join("\n    ")
            )
        })
        .collect();
    assert!(
        failures.is_empty(),
        "seed {seed}: {failed} crash images failed:\n{}",
        report.join("\n")
    );
}
