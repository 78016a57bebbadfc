//! A real writer process killed with SIGKILL in the middle of its commits.
//!
//! The test re-executes its own binary (`--exact <this test> --nocapture`)
//! with `UBT_KILL_CHILD=<dir>:<seed>` set: the child opens the database in
//! `<dir>` on real files (a small memory budget, so checkpoints happen
//! every few commits; `SyncMode::Always`), prints `opened <seq> 0x<root>`,
//! then commits block after block, printing `acked <seq> 0x<root>` after
//! each `commit()` returns. About one block in ten is instead a bulk
//! block of a few thousand sorted writes, applied with `apply_bulk` (its
//! buckets staged under the small budget, then one checkpoint) and
//! acknowledged only once that returns. Block `n`'s writes (and whether it
//! is a bulk block) are a function of the seed and `n` alone, so the
//! parent can rebuild every state with the reference tree.
//!
//! The parent kills the child after a random number of acknowledgements
//! (sometimes none: during start-up or recovery) plus a random delay of up
//! to a millisecond (20 ms when a bulk block is next, so that the kill
//! lands anywhere in it), then reopens the database: it must open, be at
//! the last acknowledged commit or the one after it (in flight at the
//! kill; a bulk block in flight lands whole or not at all: the state
//! before or after it), with the reference's root and values, and
//! `verify` clean. The next child continues on the same database, so
//! recovery follows recovery; a fresh database is started every few
//! kills.
//!
//! Every other database keeps a flat index of account values
//! ([`is_flat`]): its blocks are applied with their accounts
//! ([`common::apply_block`]; its bulk blocks as ordinary blocks, since
//! bulk writes name no accounts), and each recovery also reads every value
//! back through the flat index (`verify` compares it with the tree).
//!
//! 200 kills by default, 10,000 with `UBT_LONG=1`, `UBT_KILLS=<n>` for any
//! other number. Rerun with
//! `UBT_SEED=<seed>` (printed at the start; the kill moments depend on
//! the scheduler too, so a rerun repeats the writes, not the exact kills).

// Test code: a failed unwrap is a failed test, and casts narrow test data.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::cast_possible_truncation
)]

mod common;

use std::io::{BufRead, BufReader, Write as _};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use alloy_primitives::B256;
use common::*;
use ubt_spec::{ReferenceTree, StateTree};
use ubt_store::{Options, Store, SyncMode};

/// The environment variable that turns the test into the child writer.
const CHILD_ENV: &str = "UBT_KILL_CHILD";
/// This test's name, for `--exact`.
const TEST_NAME: &str = "sigkill_during_commits";
/// Kills in the default run and in the long mode (`UBT_LONG=1`).
const KILLS: usize = 200;
const LONG_KILLS: usize = 10_000;
/// Kills per database before a fresh one is started.
const KILLS_PER_DATABASE: usize = 10;
/// The child stops on its own after this many blocks (it is always killed
/// long before).
const CHILD_BLOCKS_MAX: u64 = 100_000;
/// One block in this many is a bulk block.
const BULK_EVERY: u64 = 10;

/// The options of the database seeded with `seed`: every other one keeps
/// a flat index, and one in two (crossed with that) has 16 KiB buckets.
fn store_options(seed: u64) -> Options {
    Options {
        group_depth: Some(3),
        bucket_bytes: Some(if seed & 2 == 2 { 16 << 10 } else { 4 << 10 }),
        memory_budget_bytes: 128 << 10,
        sync: SyncMode::Always,
        flat_index: is_flat(seed),
        ..Options::default()
    }
}

/// Whether the database seeded with `seed` keeps a flat index (every
/// other database: their seeds alternate in parity).
fn is_flat(seed: u64) -> bool {
    seed & 1 == 1
}

/// Whether block `n` of the database seeded with `seed` is a bulk block.
fn is_bulk(seed: u64, n: u64) -> bool {
    SplitMix64(seed ^ 0xb01c ^ n.wrapping_mul(0xd1b5_4a32_d192_ed03)).below(BULK_EVERY) == 0
}

/// The writes of block `n` (the commit with sequence number `n`) of the
/// database seeded with `seed`: new stems, stems of earlier blocks and
/// stems sharing long prefixes, about one value in eight zero. A bulk
/// block has 1,500 to 3,500 writes sorted by key (of equal keys, the one
/// written last stays last, as it wins in `apply_bulk`).
fn block(seed: u64, n: u64) -> Vec<(B256, B256)> {
    let mut rng = SplitMix64(seed ^ n.wrapping_mul(SplitMix64::GAMMA));
    let bulk = is_bulk(seed, n);
    let max = if rng.below(6) == 0 { 400 } else { 60 };
    let size = if bulk {
        1500 + rng.below(2000)
    } else {
        1 + rng.below(max)
    };
    let mut writes: Vec<(B256, B256)> = (0..size)
        .map(|_| {
            // Stem `i` of a pool that grows with the block number.
            let i = rng.below(64 + 8 * n);
            let mut key = SplitMix64(seed ^ 0x57e3_0000_0000 ^ i).bytes32();
            if i.is_multiple_of(4) {
                let shared = 2 + (i % 11) as usize;
                key[..shared].fill(0x3c);
            }
            key[31] = rng.below(256) as u8;
            let value = if rng.below(8) == 0 {
                B256::ZERO
            } else {
                B256::from(rng.bytes32())
            };
            (B256::from(key), value)
        })
        .collect();
    if bulk {
        writes.sort_by_key(|(key, _)| *key);
    }
    writes
}

/// The child: commit blocks forever, acknowledging each on stdout.
fn child(spec: &str) {
    let (dir, seed) = spec
        .rsplit_once(':')
        .expect("UBT_KILL_CHILD is <dir>:<seed>");
    let seed: u64 = seed.parse().expect("seed");
    let mut store = Store::open_path(Path::new(dir), store_options(seed)).expect("child open");
    let mut out = std::io::stdout().lock();
    writeln!(
        out,
        "opened {} {}",
        store.commit_seq(),
        hex_root(&store.committed_root())
    )
    .expect("stdout");
    out.flush().expect("stdout");
    loop {
        let n = store.commit_seq() + 1;
        if n > CHILD_BLOCKS_MAX {
            return;
        }
        let writes = block(seed, n);
        let root = if is_bulk(seed, n) && !store.has_flat_index() {
            store
                .apply_bulk(writes.iter().copied())
                .expect("child bulk apply")
        } else {
            apply_block(&mut store, &writes).expect("child apply");
            store.commit().expect("child commit")
        };
        writeln!(out, "acked {n} {}", hex_root(&root)).expect("stdout");
        out.flush().expect("stdout");
    }
}

/// Kills and reaps the child when dropped (also when the parent panics).
struct Reaper(Child);

impl Drop for Reaper {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// A directory removed when dropped.
struct TempDir(PathBuf);

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// What the parent knows about one database.
struct Database {
    dir: TempDir,
    seed: u64,
    /// The reference tree after blocks `1..=applied`.
    reference: ReferenceTree,
    applied: u64,
    /// Sequence number the database was last found at.
    recovered: u64,
    /// Its checkpoint generation then.
    generation: u64,
    /// Every key written so far, and some never written.
    probes: Vec<B256>,
}

impl Database {
    fn new(seed: u64) -> Database {
        let path = temp_path("kill-writer");
        let _ = std::fs::remove_dir_all(&path);
        std::fs::create_dir_all(&path).expect("temp dir");
        let mut rng = SplitMix64(seed ^ 0xab5e);
        Database {
            dir: TempDir(path),
            seed,
            reference: ReferenceTree::new(),
            applied: 0,
            recovered: 0,
            generation: 0,
            probes: (0..20).map(|_| B256::from(rng.bytes32())).collect(),
        }
    }

    /// Advances the reference to block `n` and returns its root.
    fn root_at(&mut self, n: u64) -> [u8; 32] {
        assert!(n >= self.applied, "the reference only moves forward");
        while self.applied < n {
            self.applied += 1;
            let writes = block(self.seed, self.applied);
            self.probes.extend(writes.iter().map(|(key, _)| *key));
            self.reference.insert_batch(&writes);
        }
        self.reference.compute_root()
    }
}

/// One kill: spawn a child on `db`, kill it after `acks` acknowledgements
/// plus `delay`, then check the database. Returns the number of
/// acknowledgements seen and the sequence number recovered.
fn kill_once(db: &mut Database, acks: u64, delay: Duration, context: &str) -> (u64, u64) {
    let exe = std::env::current_exe().expect("test binary");
    let stderr_path = db.dir.0.with_extension("stderr");
    let stderr = std::fs::File::create(&stderr_path).expect("child stderr file");
    let spawned = Command::new(exe)
        .args(["--exact", TEST_NAME, "--nocapture", "--test-threads=1"])
        .env(CHILD_ENV, format!("{}:{}", db.dir.0.display(), db.seed))
        .stdout(Stdio::piped())
        .stderr(stderr)
        .spawn()
        .expect("spawn the child writer");
    let mut child = Reaper(spawned);
    let stdout = child.0.stdout.take().expect("child stdout");
    let mut lines = BufReader::new(stdout).lines();
    let mut seen = 0u64;
    let mut last_ack: Option<(u64, String)> = None;
    let mut opened: Option<(u64, String)> = None;
    let mut parse = |line: &str, seen: &mut u64| {
        let mut words = line.split_whitespace();
        match (words.next(), words.next(), words.next()) {
            (Some("acked"), Some(seq), Some(root)) => {
                *seen += 1;
                last_ack = Some((seq.parse().expect("acked seq"), root.to_string()));
            }
            (Some("opened"), Some(seq), Some(root)) => {
                opened = Some((seq.parse().expect("opened seq"), root.to_string()));
            }
            _ => {}
        }
    };
    if acks == 0 {
        std::thread::sleep(delay * 8);
    } else {
        while seen < acks {
            match lines.next() {
                Some(Ok(line)) => parse(&line, &mut seen),
                _ => break,
            }
        }
        std::thread::sleep(delay);
    }
    child.0.kill().expect("kill the child");
    let status = child.0.wait().expect("wait for the child");
    // Acknowledgements printed before the kill are still in the pipe.
    for line in lines.map_while(Result::ok) {
        parse(&line, &mut seen);
    }
    drop(child);
    let child_stderr = std::fs::read_to_string(&stderr_path).unwrap_or_default();
    let _ = std::fs::remove_file(&stderr_path);
    {
        use std::os::unix::process::ExitStatusExt;
        assert_eq!(
            status.signal(),
            Some(libc::SIGKILL),
            "{context}: the child ended before the kill ({status}); its stderr:\n{child_stderr}"
        );
    }
    if let Some((seq, root)) = &opened {
        assert_eq!(*seq, db.recovered, "{context}: the child opened elsewhere");
        assert_eq!(
            *root,
            hex_root(&db.root_at(*seq)),
            "{context}: child opened root"
        );
    }
    let base = last_ack.as_ref().map_or(db.recovered, |(seq, _)| *seq);
    if let Some((seq, root)) = &last_ack {
        assert_eq!(
            *root,
            hex_root(&db.root_at(*seq)),
            "{context}: acked root of block {seq}"
        );
    }
    (seen, check_recovery(db, base, context))
}

/// Reopens `db` after a kill whose last acknowledged commit was `base`:
/// the store recovers that commit or the one after it, with its root,
/// verifies, and reads back every value. Returns the commit recovered.
fn check_recovery(db: &mut Database, base: u64, context: &str) -> u64 {
    let store = Store::open_path(&db.dir.0, store_options(db.seed))
        .unwrap_or_else(|e| panic!("{context}: reopen after the kill: {e}"));
    assert_eq!(
        store.has_flat_index(),
        is_flat(db.seed),
        "{context}: flat index"
    );
    let seq = store.commit_seq();
    assert!(
        seq == base || seq == base + 1,
        "{context}: recovered commit {seq}, last acknowledged {base}"
    );
    let expected = db.root_at(seq);
    assert_eq!(
        hex_root(&store.root()),
        hex_root(&expected),
        "{context}: recovered root at commit {seq}"
    );
    let report = store
        .verify()
        .unwrap_or_else(|e| panic!("{context}: verify: {e}"));
    assert!(report.is_ok(), "{context}: verify: {:?}", report.problems);
    assert_eq!(
        report.leaves,
        db.reference.len() as u64,
        "{context}: values"
    );
    let reads = check_reads(&store, &db.reference, &db.probes)
        .and_then(|n| Ok(n + check_flat_reads(&store, &db.reference, &db.probes)?));
    match reads {
        Ok(0) => {}
        Ok(n) => panic!("{context}: {n} reads failed with Corrupted"),
        Err(what) => panic!("{context}: {what}"),
    }
    db.recovered = seq;
    db.generation = store.stats().generation;
    seq
}

#[test]
fn sigkill_during_commits() {
    if let Ok(spec) = std::env::var(CHILD_ENV) {
        child(&spec);
        return;
    }
    let seed = seed_from_env(0x4b11_0001);
    let kills: usize = std::env::var("UBT_KILLS")
        .map(|n| n.parse().expect("UBT_KILLS is a number"))
        .unwrap_or(if long_mode() { LONG_KILLS } else { KILLS });
    println!("seed {seed} (rerun with UBT_SEED={seed}), {kills} kills");
    let started = Instant::now();
    let mut rng = SplitMix64(seed);
    let mut db: Option<Database> = None;
    let mut databases = 0u64;
    let mut large_buckets = 0u64;
    let mut checkpoints = 0u64;
    let (mut total_acks, mut in_flight_recovered, mut during_startup) = (0u64, 0usize, 0usize);
    // Bulk blocks acknowledged; kills with a bulk block next (in flight, or
    // about to start), and how many of those recovered it.
    let (mut bulk_acks, mut bulk_in_flight, mut bulk_recovered) = (0u64, 0usize, 0usize);
    for kill in 0..kills {
        if kill % KILLS_PER_DATABASE == 0 {
            checkpoints += db.as_ref().map_or(0, |db| db.generation);
            databases += 1;
            let db_seed = seed ^ databases.wrapping_mul(0x5851_f42d);
            large_buckets += u64::from(store_options(db_seed).bucket_bytes != Some(4 << 10));
            db = Some(Database::new(db_seed));
        }
        let db = db.as_mut().expect("database");
        let acks = if rng.below(5) == 0 {
            0
        } else {
            1 + rng.below(12)
        };
        // A bulk block next takes longer: the kill may land anywhere in it.
        let next = db.recovered + acks + 1;
        let delay = Duration::from_micros(if acks > 0 && is_bulk(db.seed, next) {
            rng.below(20_000)
        } else {
            rng.below(1000)
        });
        let context = format!("seed {seed} kill {kill} (after {acks} acks + {delay:?})");
        let before = db.recovered;
        let (seen, recovered) = kill_once(db, acks, delay, &context);
        total_acks += seen;
        bulk_acks += (before + 1..=before + seen)
            .filter(|&n| is_bulk(db.seed, n))
            .count() as u64;
        if is_bulk(db.seed, before + seen + 1) {
            bulk_in_flight += 1;
            bulk_recovered += usize::from(recovered > before + seen);
        }
        if acks == 0 && seen == 0 {
            during_startup += 1;
        }
        if recovered > before + seen {
            in_flight_recovered += 1;
        }
    }
    checkpoints += db.as_ref().map_or(0, |db| db.generation);
    println!(
        "{kills} kills over {databases} databases: {total_acks} commits acknowledged \
         ({bulk_acks} of them bulk blocks), {checkpoints} checkpoints, {in_flight_recovered} \
         recoveries kept the commit in flight, {during_startup} kills before the first \
         acknowledgement; {bulk_in_flight} kills with a bulk block next, {bulk_recovered} of them \
         recovered it; {large_buckets} databases with 16 KiB buckets; {:.1} s",
        started.elapsed().as_secs_f64()
    );
    assert!(
        databases < 4 || large_buckets > 0,
        "no database with 16 KiB buckets"
    );
}
