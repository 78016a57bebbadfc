//! Eight reader threads read snapshots while one writer applies, persists,
//! commits, checkpoints and reverts blocks: every value a reader gets
//! equals the reference value at its snapshot's root, whatever the writer
//! is doing (no torn read, no value of another root), and a reader whose
//! root was reverted away gets `SnapshotReverted`, never a value.
//!
//! The writer publishes a snapshot ([`Db::reader`]) of every block it
//! applies, with a copy of the reference values at that root; each reader
//! thread repeatedly takes one of the latest published snapshots, reads a
//! random sample of keys one by one and in a batch, and checks them. The
//! writer checks every root it produces against the reference tree. A
//! small memory budget makes most persists checkpoint, so readers run
//! across checkpoints (bucket rewrites, cache evictions) too.
//!
//! Every second block persists its parent and every fifth commits the tip,
//! each a synced WAL record (a durable commit). 1,000 blocks (700 durable
//! commits) by default; `UBT_LONG=1` runs 15,000 blocks (10,500 durable
//! commits), `UBT_READER_COMMITS=<n>` any number of blocks. Rerun with
//! `UBT_SEED=<seed>` (printed at the start; thread interleavings differ
//! between runs, the writes do not).

// Test code: a failed unwrap is a failed test, and casts narrow test data.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::cast_possible_truncation
)]

use std::collections::HashSet;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Condvar, Mutex};
use std::time::Instant;

use alloy_primitives::B256;
use ubt_engine::Root as Hash;
use ubt_engine::{Db, Error, Options, Reader, StoreDir};
use ubt_spec::rng::SplitMix64;
use ubt_spec::{ReferenceTree, StateTree};
use ubt_store::io::sim::SimDir;

/// Reader threads.
const READERS: usize = 8;
/// Keys in the key space; half are present at the start.
const KEYS: u64 = 2_000;
/// Snapshots a reader chooses from (the latest published).
const RECENT: usize = 8;
/// Keys read per snapshot, one by one and as one batch.
const SAMPLE: usize = 48;
/// Snapshots a reader checks per published block before it waits for the
/// next one (so that readers pace themselves on the writer).
const CHECKS_PER_BLOCK: u64 = 3;

fn key(i: u64) -> B256 {
    B256::from(ubt_spec::hash::sha256(&i.to_le_bytes()))
}

fn value(rng: &mut SplitMix64) -> B256 {
    B256::from(rng.bytes32())
}

/// A published snapshot: a reader and the reference values at its root.
#[derive(Clone)]
struct Published {
    reader: Reader,
    expected: Arc<Vec<Option<B256>>>,
}

/// What the writer shares with the readers.
struct Board {
    recent: Mutex<Vec<Published>>,
    /// Blocks published so far; readers wait on `published` for it to move.
    generation: Mutex<u64>,
    published: Condvar,
    /// Roots reverted away (inserted before the revert happens).
    reverted: Mutex<HashSet<Hash>>,
    done: AtomicBool,
    reads: AtomicU64,
    snapshots_checked: AtomicU64,
    reverted_seen: AtomicU64,
}

/// One reader thread: checks snapshots until the writer is done, and at
/// least one after that.
fn read_loop(board: &Board, seed: u64) -> Result<(), String> {
    let mut rng = SplitMix64(seed);
    let (mut seen_generation, mut checks) = (0u64, 0u64);
    loop {
        {
            let mut generation = board.generation.lock().unwrap_or_else(|e| e.into_inner());
            while *generation == seen_generation
                && checks >= CHECKS_PER_BLOCK
                && !board.done.load(Ordering::Acquire)
            {
                generation = board
                    .published
                    .wait(generation)
                    .unwrap_or_else(|e| e.into_inner());
            }
            if *generation != seen_generation {
                seen_generation = *generation;
                checks = 0;
            }
        }
        checks += 1;
        let finished = board.done.load(Ordering::Acquire);
        let published = {
            let recent = board.recent.lock().unwrap_or_else(|e| e.into_inner());
            if recent.is_empty() {
                None
            } else {
                Some(recent[rng.below(recent.len() as u64) as usize].clone())
            }
        };
        if let Some(published) = published {
            check_snapshot(board, &published, &mut rng)?;
        }
        if finished {
            return Ok(());
        }
    }
}

/// Reads a sample of keys at one snapshot and checks every value.
fn check_snapshot(
    board: &Board,
    published: &Published,
    rng: &mut SplitMix64,
) -> Result<(), String> {
    let root = published.reader.root();
    let at = B256::from(root);
    let indices: Vec<u64> = (0..SAMPLE).map(|_| rng.below(KEYS)).collect();
    let keys: Vec<B256> = indices.iter().map(|&i| key(i)).collect();
    let reverted = |error: &Error| {
        matches!(error, Error::SnapshotReverted(r) if *r == root)
            && board
                .reverted
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .contains(&root)
    };
    for (&i, k) in indices.iter().zip(&keys) {
        match published.reader.get(k) {
            Ok(got) if got == published.expected[i as usize] => {}
            Ok(got) => {
                return Err(format!(
                    "root {at}: key {i} read {got:?}, expected {:?}",
                    published.expected[i as usize]
                ))
            }
            Err(error) if reverted(&error) => {
                board.reverted_seen.fetch_add(1, Ordering::Relaxed);
                return Ok(());
            }
            Err(error) => return Err(format!("root {at}: key {i}: {error}")),
        }
    }
    match published.reader.get_many(&keys) {
        Ok(values) => {
            for (&i, got) in indices.iter().zip(values) {
                if got != published.expected[i as usize] {
                    return Err(format!("root {at}: batch read of key {i} is wrong"));
                }
            }
        }
        Err(error) if reverted(&error) => {
            board.reverted_seen.fetch_add(1, Ordering::Relaxed);
            return Ok(());
        }
        Err(error) => return Err(format!("root {at}: batch read: {error}")),
    }
    board.reads.fetch_add(2 * SAMPLE as u64, Ordering::Relaxed);
    board.snapshots_checked.fetch_add(1, Ordering::Relaxed);
    Ok(())
}

/// One block of the writer's chain: its root and reference values.
struct Block {
    root: Hash,
    tree: ReferenceTree,
    values: Arc<Vec<Option<B256>>>,
}

/// The writer: `blocks` blocks with persists, commits, checkpoints and
/// reverts mixed in; returns how many of each it did.
fn write_loop(db: &mut Db, board: &Board, seed: u64, blocks: u64) -> [u64; 4] {
    let mut rng = SplitMix64(seed);
    let mut chain: Vec<Block> = Vec::new();
    let mut tree = ReferenceTree::new();
    let mut values = vec![None; KEYS as usize];
    let initial: Vec<(B256, B256)> = (0..KEYS / 2)
        .map(|i| {
            let v = value(&mut rng);
            values[i as usize] = Some(v);
            (key(i), v)
        })
        .collect();
    tree.insert_batch(&initial);
    let root = db.apply_block(&initial).expect("initial block");
    assert_eq!(root, tree.compute_root());
    chain.push(Block {
        root,
        tree,
        values: Arc::new(values),
    });
    let mut counts = [0u64; 4]; // persists, commits, checkpoints, reverts
    for b in 1..=blocks {
        let parent = chain.last().expect("chain");
        let (mut tree, mut values) = (parent.tree.clone(), (*parent.values).clone());
        let writes: Vec<(B256, B256)> = (0..10 + rng.below(40))
            .map(|_| {
                let i = rng.below(KEYS);
                let v = value(&mut rng);
                values[i as usize] = Some(v);
                (key(i), v)
            })
            .collect();
        tree.insert_batch(&writes);
        let root = db.apply(&writes).expect("apply");
        assert_eq!(root, tree.compute_root(), "block {b}: root");
        let values = Arc::new(values);
        let reader = db.reader(&root).expect("reader at the new root");
        chain.push(Block {
            root,
            tree,
            values: Arc::clone(&values),
        });
        {
            let mut recent = board.recent.lock().unwrap_or_else(|e| e.into_inner());
            recent.push(Published {
                reader,
                expected: values,
            });
            if recent.len() > RECENT {
                recent.remove(0);
            }
        }
        *board.generation.lock().unwrap_or_else(|e| e.into_inner()) += 1;
        board.published.notify_all();
        if b % 7 == 0 && chain.len() >= 2 {
            // Revert the newest block (persisted or not).
            let doomed = chain.pop().expect("newest");
            let target = chain.last().expect("parent").root;
            board
                .reverted
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .insert(doomed.root);
            db.revert(&target).expect("revert one block");
            counts[3] += 1;
        }
        if b % 2 == 0 && chain.len() >= 2 {
            db.persist(&chain[chain.len() - 2].root).expect("persist");
            counts[0] += 1;
        }
        if b % 5 == 0 {
            db.commit().expect("commit");
            counts[1] += 1;
        }
        if b % 50 == 0 {
            db.checkpoint().expect("checkpoint");
            counts[2] += 1;
        }
        // Only the recent blocks can be reverted or read: keep the chain short.
        if chain.len() > 2 * RECENT {
            chain.remove(0);
        }
    }
    db.commit().expect("final commit");
    assert_eq!(db.root(), chain.last().expect("chain").root);
    counts
}

#[test]
fn eight_readers_see_exact_snapshots_while_the_writer_commits() {
    let seed: u64 = std::env::var("UBT_SEED")
        .map(|s| s.parse().expect("UBT_SEED is a number"))
        .unwrap_or(0x8ead_0001);
    let long = std::env::var("UBT_LONG").is_ok_and(|v| v != "0" && !v.is_empty());
    let blocks: u64 = std::env::var("UBT_READER_COMMITS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(if long { 15_000 } else { 1_000 });
    println!("seed {seed} (rerun with UBT_SEED={seed}), {READERS} readers, {blocks} blocks");
    let started = Instant::now();
    let dir: Arc<dyn StoreDir> = Arc::new(SimDir::new());
    let options = Options {
        group_depth: Some(3),
        memory_budget_bytes: 96 << 10,
        revert_depth: 16,
        ..Options::default()
    };
    let mut db = Db::open_dir(dir, options).expect("open");
    let board = Board {
        recent: Mutex::new(Vec::new()),
        generation: Mutex::new(0),
        published: Condvar::new(),
        reverted: Mutex::new(HashSet::new()),
        done: AtomicBool::new(false),
        reads: AtomicU64::new(0),
        snapshots_checked: AtomicU64::new(0),
        reverted_seen: AtomicU64::new(0),
    };
    let (counts, results) = std::thread::scope(|scope| {
        let readers: Vec<_> = (0..READERS as u64)
            .map(|r| {
                let board = &board;
                scope.spawn(move || read_loop(board, seed ^ (r + 1).wrapping_mul(0x5851_f42d)))
            })
            .collect();
        let counts = write_loop(&mut db, &board, seed, blocks);
        board.done.store(true, Ordering::Release);
        {
            let _generation = board.generation.lock().unwrap_or_else(|e| e.into_inner());
            board.published.notify_all();
        }
        let results: Vec<Result<(), String>> = readers
            .into_iter()
            .map(|h| h.join().unwrap_or_else(|_| Err("reader panicked".into())))
            .collect();
        (counts, results)
    });
    board
        .recent
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .clear();
    println!(
        "{blocks} blocks ({} durable commits: {} persists, {} commits; {} checkpoints, {} \
         reverts); {READERS} readers checked {} snapshots, {} reads, {} reads found their root \
         reverted; {:.1} s",
        counts[0] + counts[1],
        counts[0],
        counts[1],
        counts[2],
        counts[3],
        board.snapshots_checked.load(Ordering::Relaxed),
        board.reads.load(Ordering::Relaxed),
        board.reverted_seen.load(Ordering::Relaxed),
        started.elapsed().as_secs_f64()
    );
    for (r, result) in results.into_iter().enumerate() {
        if let Err(what) = result {
            panic!("seed {seed}: reader {r}: {what}");
        }
    }
    assert!(board.snapshots_checked.load(Ordering::Relaxed) >= READERS as u64);
    if long {
        assert!(
            counts[0] + counts[1] >= 10_000,
            "long mode: 10,000 durable commits"
        );
    }
    let report = db.verify().expect("verify");
    assert!(report.is_ok(), "{:?}", report.problems);
}
