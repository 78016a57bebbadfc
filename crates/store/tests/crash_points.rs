//! Power loss at every I/O operation of a scripted workload.
//!
//! The workload (creation, blocks of writes each committed, explicit
//! checkpoints, a memory budget small enough that most commits also
//! checkpoint, reopens, and writes dropped uncommitted before a reopen) is
//! run on a fresh simulated disk once per crash point `k = 0, 1, ...`: the
//! disk refuses operation `k` and every later one
//! ([`SimDir::set_crash_at`]), so the workload stops there. The last point
//! is the first `k` the workload completes without reaching.
//!
//! For every crash point, crash images are built with every mode: unsynced
//! operations dropped, kept, and a few random subsets of them, kept whole
//! or torn. Each image must open without any error, `verify` clean, and be
//! exactly at the last commit whose `commit()` returned `Ok` before the
//! crash, or at the commit in flight when the crash hit (if any): same
//! commit sequence number, same root, every value equal to the reference
//! tree's at that commit. The recovered database must then take the next
//! block of the workload, commit and checkpoint it, and reopen at the
//! root the reference gives.
//!
//! Images with the same bytes as one already checked are only checked
//! against the allowed states (the open is a function of the bytes).
//! Every failure is listed with its crash point, mode and image seed.
//!
//! Rerun with `UBT_SEED=<seed>` (printed at the start).

mod common;

use std::collections::hash_map::DefaultHasher;
use std::collections::HashMap;
use std::hash::{Hash as _, Hasher};
use std::panic::AssertUnwindSafe;
use std::sync::Arc;
use std::time::Instant;

use alloy_primitives::B256;
use common::*;
use ubt_spec::hash::Hash;
use ubt_spec::{ReferenceTree, StateTree};
use ubt_store::io::sim::{CrashMode, SimDir, SimEventKind};
use ubt_store::io::StoreDir;
use ubt_store::{Options, Store, StoreError};

/// Commits in the workload.
const BLOCKS: usize = 32;

/// One step of the scripted workload.
#[derive(Clone, Debug)]
enum Step {
    /// Apply these writes and commit them (one commit).
    Commit(Vec<(B256, B256)>),
    /// An explicit checkpoint.
    Checkpoint,
    /// Apply these writes, then drop the handle without committing and
    /// reopen.
    LoseAndReopen(Vec<(B256, B256)>),
    /// Drop the handle and reopen.
    Reopen,
}

/// The workload and every state it commits.
struct Script {
    steps: Vec<Step>,
    /// `states[i]`: root and contents after `i` commits.
    states: Vec<(Hash, ReferenceTree)>,
    /// Every key written (committed or not), and some never written.
    probes: Vec<B256>,
    opts: Options,
}

fn script(seed: u64) -> Script {
    let mut rng = Rng(seed);
    let mut known = Vec::new();
    let mut steps = Vec::new();
    for block in 0..BLOCKS {
        // Mostly small blocks, now and then one that splits buckets.
        let max = if block % 9 == 4 { 300 } else { 40 };
        steps.push(Step::Commit(random_writes(&mut rng, &mut known, max)));
        match block % 12 {
            7 => steps.push(Step::Checkpoint),
            11 => steps.push(Step::Reopen),
            5 => steps.push(Step::LoseAndReopen(random_writes(&mut rng, &mut known, 20))),
            _ => {}
        }
    }
    let mut tree = ReferenceTree::new();
    let mut states = vec![(tree.compute_root(), tree.clone())];
    for step in &steps {
        if let Step::Commit(writes) = step {
            tree.insert_batch(writes);
            states.push((tree.compute_root(), tree.clone()));
        }
    }
    let mut probes = known;
    probes.sort_unstable();
    probes.dedup();
    probes.extend((0..50).map(|_| B256::from(rng.bytes32())));
    Script {
        steps,
        states,
        probes,
        // Group depth 2: several pages; 64 KiB: most commits checkpoint.
        opts: options(2, 64 << 10),
    }
}

/// How far a run got.
#[derive(Clone, Copy, Debug, Default)]
struct Progress {
    /// Commits whose `commit()` returned `Ok`.
    acked: usize,
    /// Whether a commit was in flight when the run stopped.
    in_flight: bool,
}

/// Runs the script on `dir` until an operation fails; returns how far it
/// got and the error that stopped it, if any.
fn run(script: &Script, dir: &Arc<dyn StoreDir>) -> (Progress, Option<StoreError>) {
    let mut progress = Progress::default();
    let open = || Store::open(Arc::clone(dir), script.opts.clone());
    let mut store = match open() {
        Ok(store) => store,
        Err(error) => return (progress, Some(error)),
    };
    for step in &script.steps {
        let result = match step {
            Step::Commit(writes) => store.apply(writes).and_then(|_| {
                progress.in_flight = true;
                store.commit().map(|_| {
                    progress.acked += 1;
                    progress.in_flight = false;
                })
            }),
            Step::Checkpoint => store.checkpoint(),
            Step::LoseAndReopen(writes) => store.apply(writes).map(|_| ()),
            Step::Reopen => Ok(()),
        };
        if let Err(error) = result {
            return (progress, Some(error));
        }
        if matches!(step, Step::LoseAndReopen(_) | Step::Reopen) {
            // The old handle releases the directory lock first.
            drop(store);
            store = match open() {
                Ok(store) => store,
                Err(error) => return (progress, Some(error)),
            };
        }
    }
    (progress, None)
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

/// Opens an image and checks it; returns the commit count it recovered.
fn check_image(script: &Script, image: SimDir, allowed: &[usize]) -> Result<usize, String> {
    let dir: Arc<dyn StoreDir> = Arc::new(image);
    let store = Store::open(Arc::clone(&dir), script.opts.clone())
        .map_err(|e| format!("open failed: {e}"))?;
    let seq = store.commit_seq() as usize;
    let root = store.root();
    if !allowed.contains(&seq) {
        return Err(format!(
            "recovered commit {seq} (root {}), allowed {allowed:?}",
            hex_root(&root)
        ));
    }
    let (expected_root, tree) = &script.states[seq];
    if root != *expected_root || store.committed_root() != root {
        return Err(format!(
            "recovered commit {seq} with root {}, the reference gives {}",
            hex_root(&root),
            hex_root(expected_root)
        ));
    }
    let report = store.verify().map_err(|e| format!("verify: {e}"))?;
    if !report.is_ok() {
        return Err(format!("verify: {:?}", report.problems));
    }
    if report.leaves != tree.len() as u64 {
        return Err(format!(
            "verify counted {} values, the reference has {}",
            report.leaves,
            tree.len()
        ));
    }
    match check_reads(&store, tree, &script.probes)? {
        0 => {}
        n => return Err(format!("{n} reads failed with Corrupted")),
    }
    // The recovered database takes the next block.
    let next = script.steps.iter().filter_map(|step| match step {
        Step::Commit(writes) => Some(writes),
        _ => None,
    });
    if let Some(writes) = next.clone().nth(seq) {
        let mut store = store;
        store
            .apply(writes)
            .and_then(|_| store.commit())
            .and_then(|_| store.checkpoint())
            .map_err(|e| format!("writing after recovery: {e}"))?;
        drop(store);
        let store = Store::open(dir, script.opts.clone())
            .map_err(|e| format!("reopen after writing: {e}"))?;
        let (next_root, _) = &script.states[seq + 1];
        if store.root() != *next_root || store.commit_seq() as usize != seq + 1 {
            return Err(format!(
                "after recovery and one more commit: commit {} root {}, expected commit {} root {}",
                store.commit_seq(),
                hex_root(&store.root()),
                seq + 1,
                hex_root(next_root)
            ));
        }
    }
    Ok(seq)
}

/// Random-subset images, and as many torn ones, per crash point.
const RANDOM_IMAGES: u64 = 4;

/// The crash images built at each crash point: mode and image seed.
fn image_modes(k: u64, seed: u64) -> Vec<(CrashMode, u64)> {
    let base = seed ^ k.wrapping_mul(0x9e37_79b9_7f4a_7c15);
    let mut modes = vec![(CrashMode::DropUnsynced, 0), (CrashMode::KeepUnsynced, 0)];
    for i in 0..RANDOM_IMAGES {
        modes.push((CrashMode::RandomSubset, base.wrapping_add(2 * i)));
        modes.push((CrashMode::Torn, base.wrapping_add(2 * i + 1)));
    }
    modes
}

#[test]
fn power_loss_at_every_operation() {
    let seed = seed_from_env(0xc4a5_4001);
    println!("seed {seed} (rerun with UBT_SEED={seed})");
    let started = Instant::now();
    let script = script(seed);

    // A clean run: every commit acknowledged, the final state sound.
    let (clean, _) = sim_dir();
    let clean_dir: Arc<dyn StoreDir> = Arc::new(clean.clone());
    let (progress, error) = run(&script, &clean_dir);
    assert!(error.is_none(), "clean run: {error:?}");
    let commits = script.states.len() - 1;
    assert_eq!(progress.acked, commits);
    let total_ops = clean.op_count();
    assert_eq!(
        check_image(
            &script,
            clean.crash_image(CrashMode::DropUnsynced, 0),
            &[commits]
        ),
        Ok(commits),
        "clean run"
    );
    let mut kinds: std::collections::BTreeMap<String, usize> = Default::default();
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
    let changes: usize = kinds.values().sum();
    println!(
        "workload: {} steps, {commits} commits, {} values; {total_ops} operations, of which \
         {changes} change something: {kinds:?} (the rest are reads, lengths and lookups)",
        script.steps.len(),
        script.states[commits].1.len()
    );

    let mut images = 0usize;
    let mut distinct = 0usize;
    let mut seen: HashMap<u64, usize> = HashMap::new();
    let mut failures: Vec<String> = Vec::new();
    let mut failed_images = 0usize;
    let mut k = 0u64;
    loop {
        let (sim, dir) = sim_dir();
        sim.set_crash_at(Some(k));
        let (progress, error) = run(&script, &dir);
        drop(dir);
        if !sim.crashed() {
            assert!(
                error.is_none(),
                "k {k}: run failed without a crash: {error:?}"
            );
            break;
        }
        if let Some(error) = &error {
            let is_crash = matches!(error, StoreError::Io { source, .. }
                if source.to_string().contains("simulated crash"))
                || matches!(error, StoreError::Poisoned(_));
            assert!(is_crash, "k {k}: the run stopped on {error}");
        }
        let mut allowed = vec![progress.acked];
        if progress.in_flight {
            allowed.push(progress.acked + 1);
        }
        for (mode, image_seed) in image_modes(k, seed) {
            images += 1;
            let image = sim.crash_image(mode, image_seed);
            let hash = image_hash(&image);
            let result = match seen.get(&hash) {
                Some(&seq) if allowed.contains(&seq) => Ok(seq),
                Some(&seq) => Err(format!(
                    "recovered commit {seq} (same bytes as an image checked before), \
                     allowed {allowed:?}"
                )),
                None => {
                    distinct += 1;
                    let checked = std::panic::catch_unwind(AssertUnwindSafe(|| {
                        check_image(&script, image, &allowed)
                    }))
                    .unwrap_or_else(|_| Err("panicked".to_string()));
                    if let Ok(seq) = checked {
                        seen.insert(hash, seq);
                    }
                    checked
                }
            };
            if let Err(what) = result {
                failed_images += 1;
                if failures.len() < 40 {
                    failures.push(format!(
                        "k {k} ({} acked, in flight: {}) {mode:?} image seed {image_seed}: {what}",
                        progress.acked, progress.in_flight
                    ));
                }
            }
        }
        k += 1;
    }
    println!(
        "{k} crash points (operations 0..{k}), {images} crash images ({distinct} distinct), \
         {failed_images} failed, {:.1} s",
        started.elapsed().as_secs_f64()
    );
    assert_eq!(k, total_ops, "the last crash point is the operation count");
    assert!(
        failures.is_empty(),
        "seed {seed}: {failed_images} crash images failed (first 40):\n{}",
        failures.join("\n")
    );
}

/// Crash images per mode and crash point in [`power_loss_during_creation`].
const CREATION_IMAGES: u64 = 64;

/// The creation of a database (the first open, then one commit and a
/// checkpoint), with many more random images per crash point than the
/// main test: a crash while the files are being created must leave either
/// no database (the next open creates one) or an empty one.
#[test]
fn power_loss_during_creation() {
    let seed = seed_from_env(0xc4a5_4001);
    println!("seed {seed} (rerun with UBT_SEED={seed})");
    let mut rng = Rng(seed);
    let mut known = Vec::new();
    let writes = random_writes(&mut rng, &mut known, 20);
    let mut tree = ReferenceTree::new();
    let empty = (tree.compute_root(), tree.clone());
    tree.insert_batch(&writes);
    known.extend((0..10).map(|_| B256::from(rng.bytes32())));
    let script = Script {
        steps: vec![Step::Commit(writes), Step::Checkpoint],
        states: vec![empty, (tree.compute_root(), tree)],
        probes: known,
        opts: options(2, 64 << 10),
    };
    let mut images = 0usize;
    let mut failures: std::collections::BTreeMap<String, Vec<(u64, String)>> = Default::default();
    let mut k = 0u64;
    loop {
        let (sim, dir) = sim_dir();
        sim.set_crash_at(Some(k));
        let (progress, _) = run(&script, &dir);
        drop(dir);
        if !sim.crashed() {
            break;
        }
        let mut allowed = vec![progress.acked];
        if progress.in_flight {
            allowed.push(progress.acked + 1);
        }
        let mut modes = vec![(CrashMode::DropUnsynced, 0), (CrashMode::KeepUnsynced, 0)];
        for i in 0..CREATION_IMAGES {
            let base = seed ^ k.wrapping_mul(0x9e37_79b9_7f4a_7c15);
            modes.push((CrashMode::RandomSubset, base.wrapping_add(2 * i)));
            modes.push((CrashMode::Torn, base.wrapping_add(2 * i + 1)));
        }
        for (mode, image_seed) in modes {
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
                check_image(&script, image, &allowed)
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
            let mut per_point: std::collections::BTreeMap<u64, usize> = Default::default();
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
