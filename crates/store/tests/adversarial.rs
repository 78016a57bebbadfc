//! Regressions of the adversarial review: damage that used to open
//! silently at an older state, read-only opens that wrote, loads that were
//! not atomic, blocks too large for the WAL. Each test names the finding.
//!
//! Images are made on the simulated disk: a database's files are copied
//! byte for byte into a fresh directory, damaged there (zeroed, cut short)
//! and opened.

// Test code: a failed unwrap is a failed test, and casts narrow test data.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::cast_possible_truncation
)]

mod common;

use std::sync::Arc;

use alloy_primitives::B256;
use common::*;
use ubt_spec::{ReferenceTree, StateTree};
use ubt_store::io::sim::{CrashMode, FaultKind, SimDir};
use ubt_store::io::StoreDir;
use ubt_store::meta::META_SLOT_BYTES;
use ubt_store::{wal, Options, Store, StoreError, DATA_FILE, META_FILE, WAL_FILE};

/// A fresh directory holding `files` (name, bytes) as durable files.
fn image(files: &[(&str, Vec<u8>)]) -> SimDir {
    let dir = SimDir::new();
    for (name, bytes) in files {
        dir.write_raw(name, 0, bytes).expect("write_raw");
    }
    dir
}

/// The three files of `dir`.
fn files(dir: &SimDir) -> Vec<(&'static str, Vec<u8>)> {
    [META_FILE, DATA_FILE, WAL_FILE]
        .into_iter()
        .map(|name| (name, dir.file_bytes(name).expect(name)))
        .collect()
}

/// The same files with `name` replaced by `bytes`.
fn with(files: &[(&'static str, Vec<u8>)], name: &str, bytes: Vec<u8>) -> SimDir {
    let mut files = files.to_vec();
    for file in &mut files {
        if file.0 == name {
            file.1 = bytes.clone();
        }
    }
    image(&files)
}

fn open_sim(dir: &SimDir, options: &Options) -> Result<Store, StoreError> {
    Store::open(Arc::new(dir.clone()), options.clone())
}

fn random_block(rng: &mut SplitMix64, n: usize) -> Vec<(B256, B256)> {
    (0..n)
        .map(|_| (B256::from(rng.bytes32()), B256::from(rng.bytes32())))
        .collect()
}

/// A database with checkpoints behind it and `records` commits in its
/// WAL after the last one; returns the directory and the root after each
/// of those commits (index 0: the checkpoint's root).
fn with_wal_records(records: usize) -> (SimDir, Vec<[u8; 32]>) {
    let mut rng = SplitMix64(0xad5e);
    let (sim, dir) = sim_dir();
    let opts = options(4, 64 << 20);
    let mut store = open(&dir, &opts);
    for _ in 0..3 {
        store.apply(&random_block(&mut rng, 200)).unwrap();
        store.checkpoint().unwrap();
    }
    let mut roots = vec![store.root()];
    for _ in 0..records {
        store.apply(&random_block(&mut rng, 50)).unwrap();
        roots.push(store.commit().unwrap());
    }
    drop(store);
    (sim, roots)
}

/// Finding 3: both copies of the newest meta record read back as zeros
/// (after a close, so the WAL holds no record of that epoch) and the open
/// fell back to the checkpoint before, losing commits, with `verify` ok.
#[test]
fn zeroed_or_cut_newest_meta_record_is_reported_not_rolled_back() {
    let (sim, _) = with_wal_records(2);
    let dir: Arc<dyn StoreDir> = Arc::new(sim.clone());
    let store = open(&dir, &options(4, 64 << 20));
    store.close().unwrap();
    let store = open(&dir, &options(4, 64 << 20));
    let generation = store.stats().generation;
    assert!(generation >= 2);
    drop(store);
    let original = files(&sim);
    let meta = original[0].1.clone();
    let newest = 2 * (generation % 2) as usize;

    let mut zeroed = meta.clone();
    zeroed[newest * META_SLOT_BYTES..(newest + 2) * META_SLOT_BYTES].fill(0);
    let error = open_sim(&with(&original, META_FILE, zeroed), &options(4, 64 << 20))
        .expect_err("opened with the newest meta record zeroed");
    assert!(error.is_corruption(), "{error}");

    if newest == 2 {
        let cut = meta[..2 * META_SLOT_BYTES].to_vec();
        let error = open_sim(&with(&original, META_FILE, cut), &options(4, 64 << 20))
            .expect_err("opened with the meta file cut short");
        assert!(error.is_corruption(), "{error}");
    }
}

/// Finding 3, first checkpoint: generation 1 zeroed leaves a valid
/// generation 0 that looks like a database never checkpointed; the WAL's
/// header, which names the checkpoint it follows, tells the loss.
#[test]
fn a_lost_first_checkpoint_is_told_by_the_wal_header() {
    let (sim, dir) = sim_dir();
    let mut store = open(&dir, &options(4, 64 << 20));
    store.apply(&random_block(&mut SplitMix64(3), 100)).unwrap();
    store.close().unwrap();
    let original = files(&sim);
    let mut meta = original[0].1.clone();
    meta[2 * META_SLOT_BYTES..].fill(0);
    let error = open_sim(&with(&original, META_FILE, meta), &options(4, 64 << 20))
        .expect_err("opened at generation 0");
    assert!(error.is_corruption(), "{error}");
}

/// Finding 4: zeroing or cutting the WAL to nothing, to one record or to
/// half opened at an older state with `verify` ok. Only a torn last record
/// may roll back (the commit in flight), and it does so without an error.
#[test]
fn a_wal_cut_or_zeroed_is_reported_only_a_torn_last_record_rolls_back() {
    let (sim, roots) = with_wal_records(6);
    let original = files(&sim);
    let wal_bytes = original[2].1.clone();
    let opts = options(4, 64 << 20);
    // Where each record ends.
    let mut ends = Vec::new();
    let mut at = wal::RECORDS_START as usize;
    while let Some(record) = wal::decode(&wal_bytes[at..]) {
        at += record.encoded_len();
        ends.push(at);
    }
    assert_eq!(ends.len(), 6, "records after the checkpoint");

    let cases: Vec<(&str, Vec<u8>)> = vec![
        ("cut to 0 bytes", Vec::new()),
        (
            "cut to the header",
            wal_bytes[..wal::RECORDS_START as usize].to_vec(),
        ),
        ("cut to one record", wal_bytes[..ends[0]].to_vec()),
        ("cut to half", wal_bytes[..wal_bytes.len() / 2].to_vec()),
        ("cut to four records", wal_bytes[..ends[3]].to_vec()),
        ("zeroed", vec![0u8; wal_bytes.len()]),
        ("records zeroed from the second", {
            let mut bytes = wal_bytes.clone();
            bytes[ends[0]..].fill(0);
            bytes
        }),
    ];
    for (what, bytes) in cases {
        match open_sim(&with(&original, WAL_FILE, bytes), &opts) {
            Err(error) => assert!(error.is_corruption(), "{what}: {error}"),
            Ok(store) => panic!(
                "{what}: opened at commit {} (of {})",
                store.commit_seq(),
                roots.len() - 1
            ),
        }
    }
    // Torn last record: the commit before it, no error.
    for cut in [ends[4] + 1, ends[4] + 70, ends[5] - 1] {
        let store = open_sim(&with(&original, WAL_FILE, wal_bytes[..cut].to_vec()), &opts)
            .unwrap_or_else(|e| panic!("torn last record at {cut}: {e}"));
        assert_eq!(store.root(), roots[5]);
        assert!(store.verify().unwrap().is_ok());
    }
    let store = open_sim(&with(&original, WAL_FILE, wal_bytes), &opts).unwrap();
    assert_eq!(store.root(), roots[6]);
}

/// Finding 4 (second part) and 9: a read-only open writes nothing, not
/// even to cut a torn tail, works on read-only media, beside other
/// read-only opens and not beside a writer; its writes are refused.
#[test]
fn read_only_opens_never_write_and_share_the_directory() {
    let (sim, roots) = with_wal_records(3);
    let original = files(&sim);
    let mut torn = original[2].1.clone();
    torn.extend_from_slice(&[0xab; 100]);
    let dir = with(&original, WAL_FILE, torn.clone());
    dir.set_read_only_media(true);
    let read_only = Options {
        read_only: true,
        ..options(4, 64 << 20)
    };
    let before = dir.mutating_op_count();
    let first = open_sim(&dir, &read_only).expect("read-only open on read-only media");
    let second = open_sim(&dir, &read_only).expect("a second read-only open beside the first");
    assert_eq!(first.root(), roots[3]);
    assert_eq!(second.root(), roots[3]);
    assert!(first.verify().unwrap().is_ok());
    let writer = open_sim(&dir, &options(4, 64 << 20));
    assert!(matches!(writer, Err(StoreError::Locked(_))), "{writer:?}");
    let mut first = first;
    assert!(matches!(
        first.apply(&[(B256::ZERO, B256::ZERO)]),
        Err(StoreError::ReadOnly(_))
    ));
    assert!(
        first.checkpoint().is_ok(),
        "a read-only close has nothing to write"
    );
    drop((first, second));
    assert_eq!(dir.mutating_op_count(), before, "a read-only open wrote");
    assert_eq!(dir.file_bytes(WAL_FILE).unwrap(), torn, "the WAL changed");
    for (name, bytes) in &original[..2] {
        assert_eq!(&dir.file_bytes(name).unwrap(), bytes, "{name} changed");
    }
    // While a writer holds it, read-only opens are refused.
    dir.set_read_only_media(false);
    let writer = open_sim(&dir, &options(4, 64 << 20)).unwrap();
    assert!(matches!(
        open_sim(&dir, &read_only),
        Err(StoreError::Locked(_))
    ));
    drop(writer);
}

/// Finding 0: a block too large for one WAL record is refused before
/// anything changes (it used to be written, synced and acknowledged, then
/// dropped by replay).
#[test]
fn a_block_larger_than_a_wal_record_is_refused_before_anything_changes() {
    let (_sim, dir) = sim_dir();
    let mut store = open(&dir, &options(4, 64 << 20));
    let root = store.apply(&random_block(&mut SplitMix64(5), 10)).unwrap();
    // Zeroed memory: the check reads only the length.
    let huge = vec![(B256::ZERO, B256::ZERO); wal::LAYER_OPS_MAX + 1];
    match store.apply(&huge) {
        Err(StoreError::BlockTooLarge { writes, max }) => {
            assert_eq!(
                (writes, max),
                (huge.len() as u64, wal::LAYER_OPS_MAX as u64)
            );
        }
        other => panic!("{other:?}"),
    }
    drop(huge);
    assert_eq!(store.root(), root);
    assert_eq!(store.commit().unwrap(), root);
    let too_large = Options {
        wal_bytes_max: (wal::RECORD_BYTES_MAX as u64) + 1,
        ..options(4, 64 << 20)
    };
    assert!(matches!(
        Store::open(Arc::clone(&dir), too_large),
        Err(StoreError::InvalidOptions(_))
    ));
}

/// A database of `n` random entries and the reference tree of it.
fn populated(n: usize, opts: &Options) -> (SimDir, ReferenceTree) {
    let (sim, dir) = sim_dir();
    let mut rng = SplitMix64(0xb01c);
    let mut reference = ReferenceTree::new();
    let mut store = open(&dir, opts);
    for _ in 0..n / 500 {
        let block = random_block(&mut rng, 500);
        store.apply(&block).unwrap();
        reference.insert_batch(&block);
        store.commit().unwrap();
    }
    store.checkpoint().unwrap();
    drop(store);
    (sim, reference)
}

/// Finding 10 (and 8): a bulk block is atomic. It is crashed at every
/// operation and failed with each fault at every operation; every image
/// and every reopen is at the state before the block or after it (after
/// only if the call returned Ok or crashed late), never in between, and
/// `verify` is clean. The budget is small enough that the block stages
/// its changed buckets several times before its checkpoint.
/// After a bulk apply failed: the handle reloaded itself from the files
/// and serves the state they hold (the block's, if its checkpoint was
/// durable after all), refusing writes; or, if the reload failed too, it
/// refuses reads and reports the last durable root.
fn check_failed_bulk(
    store: &mut Store,
    (before, after): (&ReferenceTree, &ReferenceTree),
    block: &[(B256, B256)],
    what: &str,
) {
    let root = store.root();
    let state = if root == before.compute_root() {
        before
    } else {
        assert_eq!(root, after.compute_root(), "{what}: root after failure");
        after
    };
    match store.get(&block[0].0) {
        Ok(value) => assert_eq!(value, state.get(&block[0].0), "{what}: read"),
        Err(StoreError::Poisoned(_)) => assert_eq!(root, before.compute_root()),
        Err(e) => panic!("{what}: read: {e}"),
    }
    assert!(
        matches!(store.apply(&block[..1]), Err(StoreError::Poisoned(_))),
        "{what}: a write after a failed bulk apply"
    );
}

#[test]
fn a_bulk_block_lands_whole_or_not_at_all() {
    let opts = options(3, 256 << 10);
    let (base, before) = populated(3000, &opts);
    let mut rng = SplitMix64(0xb1c);
    let mut block = random_block(&mut rng, 6000);
    // Overwrite some existing keys too.
    block.extend(
        before
            .entries()
            .take(500)
            .map(|(k, _)| (*k, B256::from(rng.bytes32()))),
    );
    block.sort_by_key(|(k, _)| *k);
    let mut after = before.clone();
    after.insert_batch(&block);
    let (root_before, root_after) = (before.compute_root(), after.compute_root());

    // Fault-free, to count operations and check the result.
    let clean = base.crash_image(CrashMode::KeepUnsynced, 0);
    let mut store = open_sim(&clean, &opts).unwrap();
    let start = clean.op_count();
    assert_eq!(store.apply_bulk(block.iter().copied()).unwrap(), root_after);
    let ops = clean.op_count() - start;
    let staged = store.stats().data_bytes_written;
    drop(store);
    let store = open_sim(&clean, &opts).unwrap();
    assert_eq!(store.root(), root_after);
    assert!(staged > 0);
    drop(store);

    let check = |dir: &SimDir, allowed: &[[u8; 32]], what: &str| {
        let store = open_sim(dir, &opts).unwrap_or_else(|e| panic!("{what}: reopen: {e}"));
        assert!(
            allowed.contains(&store.root()),
            "{what}: opened at another root"
        );
        assert!(store.verify().unwrap().is_ok(), "{what}: verify");
    };
    let mut images = 0;
    for k in 0..ops {
        let dir = base.crash_image(CrashMode::KeepUnsynced, 0);
        let mut store = open_sim(&dir, &opts).unwrap();
        dir.set_crash_at(Some(dir.op_count() + k));
        let result = store.apply_bulk(block.iter().copied());
        drop(store);
        // Ok only once the new meta record's first copy was durable (the
        // crash then failed only the second copy or the WAL restart).
        let allowed: &[[u8; 32]] = if result.is_ok() {
            &[root_after]
        } else {
            &[root_before, root_after]
        };
        for (i, mode) in [
            CrashMode::DropUnsynced,
            CrashMode::KeepUnsynced,
            CrashMode::Torn,
        ]
        .into_iter()
        .enumerate()
        {
            let image = dir.crash_image(mode, k ^ i as u64);
            check(&image, allowed, &format!("crash at {k} {mode:?}"));
            images += 1;
        }
        for kind in [FaultKind::Eio, FaultKind::Enospc, FaultKind::DiskFull] {
            let dir = base.crash_image(CrashMode::KeepUnsynced, 0);
            let mut store = open_sim(&dir, &opts).unwrap();
            dir.fail_op(dir.op_count() + k, kind);
            let result = store.apply_bulk(block.iter().copied());
            match &result {
                Ok(root) => assert_eq!(*root, root_after),
                Err(_) => check_failed_bulk(
                    &mut store,
                    (&before, &after),
                    &block,
                    &format!("{kind:?} at {k}"),
                ),
            }
            drop(store);
            dir.clear_faults();
            let allowed: &[[u8; 32]] = if result.is_ok() {
                &[root_after]
            } else {
                &[root_before, root_after]
            };
            check(&dir, allowed, &format!("{kind:?} at {k}"));
            check(
                &dir.crash_image(CrashMode::DropUnsynced, 0),
                allowed,
                &format!("{kind:?} at {k}, power loss"),
            );
        }
    }
    println!(
        "bulk apply: {ops} operations, {images} crash images, {} fault points",
        3 * ops
    );
}

/// Finding 8: a full disk during the checkpoint that follows a persist.
/// The persist's record is durable and the call says so (Ok, the handle
/// poisoned); the next open is at the new root.
#[test]
fn a_checkpoint_failing_after_a_durable_commit_does_not_report_the_commit_failed() {
    let opts = options(4, 64 << 10);
    let (base, mut reference) = populated(1000, &opts);
    let block = random_block(&mut SplitMix64(8), 2000);
    reference.insert_batch(&block);
    let mut acknowledged = 0;
    for k in 0..200u64 {
        let dir = base.crash_image(CrashMode::KeepUnsynced, 0);
        let mut store = open_sim(&dir, &opts).unwrap();
        let root = store.apply(&block).unwrap();
        dir.fail_op(dir.op_count() + k, FaultKind::DiskFull);
        let persisted = store.persist(&root);
        drop(store);
        dir.clear_faults();
        let reopened = open_sim(&dir, &opts).unwrap();
        if persisted.is_ok() {
            acknowledged += 1;
            assert_eq!(
                reopened.root(),
                root,
                "full disk at {k}: acknowledged commit lost"
            );
        }
        assert!(reopened.verify().unwrap().is_ok());
    }
    assert!(acknowledged > 0);
    assert_eq!(reference.compute_root().len(), 32);
}

/// The current checkpoint's meta record in `meta` (the meta file's bytes).
fn current_meta(meta: &[u8]) -> ubt_store::meta::Meta {
    use ubt_store::meta::{choose, Choice, SlotState, META_SLOTS};
    let slots: [SlotState; META_SLOTS] = std::array::from_fn(|i| SlotState::read(meta, i));
    match choose(&slots) {
        Choice::Current(meta, _) => meta,
        other => panic!("{other:?}"),
    }
}

/// Finding 6: every open (even one `ubt get`) read the whole revert
/// window, and a flip inside it made the database unopenable. Now a
/// read-only open never reads it, a writable open reads it only when a
/// revert, an older reader or a checkpoint needs it, and a damaged window
/// costs the reverts past the blocks in memory, not the database.
#[test]
fn the_revert_window_is_read_lazily_and_its_damage_is_contained() {
    let (sim, dir) = sim_dir();
    let opts = options(4, 64 << 20);
    let mut rng = SplitMix64(0x71d0);
    let mut store = open(&dir, &opts);
    let mut roots = Vec::new();
    for _ in 0..6 {
        store.apply(&random_block(&mut rng, 300)).unwrap();
        roots.push(store.commit().unwrap());
    }
    store.checkpoint().unwrap();
    drop(store);
    let original = files(&sim);
    let segment = current_meta(&original[0].1)
        .revert_log
        .expect("a revert segment");
    let mut data = original[1].1.clone();
    data[segment.offset as usize + segment.byte_len() / 2] ^= 0x20;
    let damaged = with(&original, DATA_FILE, data);

    // Read-only: opens, reads, verifies (verify checks what the checkpoint
    // references for the state, not the reverse diffs).
    let read_only = Options {
        read_only: true,
        ..opts.clone()
    };
    let store = open_sim(&damaged, &read_only).expect("read-only open");
    assert_eq!(store.root(), roots[5]);
    drop(store);

    // Writable: opens and commits; a revert into the damaged window fails
    // cleanly and the damage is reported; the next checkpoint writes a
    // sound window and the database verifies.
    let mut store = open_sim(&damaged, &opts).expect("writable open");
    assert_eq!(store.stats().revert_window_damaged, None, "read at open");
    let extra = store.apply(&random_block(&mut rng, 10)).unwrap();
    store.commit().unwrap();
    assert!(matches!(
        store.revert(&roots[3]),
        Err(StoreError::UnknownRoot(_))
    ));
    assert!(store.stats().revert_window_damaged.is_some());
    store
        .revert(&roots[5])
        .expect("the block in memory can be reverted");
    store.checkpoint().unwrap();
    drop(store);
    let store = open_sim(&damaged, &opts).unwrap();
    assert_eq!(store.root(), roots[5]);
    assert!(store.verify().unwrap().is_ok());
    let _ = extra;

    // Undamaged: the window is read when a revert needs it.
    let mut store = open_sim(&image(&original), &opts).unwrap();
    store
        .revert(&roots[2])
        .expect("revert into the window after a reopen");
    assert_eq!(store.root(), roots[2]);
}

/// Finding 6: the revert window's previous values are bounded by the
/// budget as well as by the revert depth.
#[test]
fn the_revert_window_keeps_within_its_share_of_the_budget() {
    let (_sim, dir) = sim_dir();
    // 1 MiB budget: a quarter is 2,048 values at 128 bytes each, below the
    // floor of 65,536, so the floor applies.
    let opts = options(4, 1 << 20);
    let mut store = open(&dir, &opts);
    let mut rng = SplitMix64(0x3a);
    for _ in 0..24 {
        store.apply(&random_block(&mut rng, 5000)).unwrap();
        store.commit().unwrap();
    }
    let layers = store.layers();
    let keys: usize = layers.iter().map(|l| l.keys).sum();
    assert!(keys <= (1 << 16) + 5000, "{keys} previous values kept");
    assert!(
        layers.len() < 24 && !layers.is_empty(),
        "{} layers",
        layers.len()
    );
}

/// Finding 8, second half: a fresh build that hit a full disk left an
/// empty database beside a data file full of unreferenced buckets, which
/// kept the space the retry needed. Now a failed build gives the space
/// back, and the retry into the same directory proceeds.
#[test]
fn a_failed_fresh_build_gives_its_space_back_and_the_retry_proceeds() {
    let mut rng = SplitMix64(0xf11);
    let mut entries = random_block(&mut rng, 20_000);
    entries.sort_by_key(|(k, _)| *k);
    let mut reference = ReferenceTree::new();
    reference.insert_batch(&entries);
    let mut failures = 0;
    for k in [8u64, 12, 20, 40, 80] {
        let (sim, dir) = sim_dir();
        sim.fail_op(k, FaultKind::DiskFull);
        match Store::build(
            Arc::clone(&dir),
            options(4, 1 << 20),
            entries.iter().copied(),
        ) {
            Ok(_) => continue,
            Err(error) => assert!(matches!(error, StoreError::Io { .. }), "{error}"),
        }
        failures += 1;
        sim.clear_faults();
        let left = sim.file_bytes(DATA_FILE).map_or(0, |b| b.len());
        assert_eq!(
            left, 0,
            "full disk at {k}: {left} bytes left in the data file"
        );
        let (store, _) = Store::build(
            Arc::clone(&dir),
            options(4, 1 << 20),
            entries.iter().copied(),
        )
        .unwrap_or_else(|e| panic!("retry after a full disk at {k}: {e}"));
        assert_eq!(store.root(), reference.compute_root());
    }
    assert!(failures > 0, "no injection point failed the build");
}

/// A database written by the previous format version (whose buckets
/// carried four sub-bucket hashes, not sixteen) is refused at open with
/// `UnsupportedVersion`, read-write and read-only alike, before any of its
/// buckets is decoded under the new layout; nothing is written.
#[test]
fn a_database_of_the_previous_format_version_is_refused() {
    let (sim, _) = populated(1_000, &Options::default());
    let before = files(&sim);
    let mut meta = sim.file_bytes(META_FILE).expect("meta");
    let previous = ubt_store::FORMAT_VERSION - 1;
    let mut rewritten = 0;
    for slot in meta.chunks_exact_mut(META_SLOT_BYTES) {
        if &slot[4..12] != b"UBT-META" {
            continue;
        }
        slot[12..14].copy_from_slice(&previous.to_le_bytes());
        let crc = ubt_store::format::checksum(&slot[4..]);
        slot[..4].copy_from_slice(&crc.to_le_bytes());
        rewritten += 1;
    }
    assert!(rewritten >= 2, "the database has written its meta copies");
    let old = with(&before, META_FILE, meta);
    let old_files = files(&old);
    for read_only in [false, true] {
        let options = Options {
            read_only,
            ..Options::default()
        };
        match open_sim(&old, &options) {
            Err(StoreError::UnsupportedVersion { found, supported }) => {
                assert_eq!(found, previous);
                assert_eq!(supported, ubt_store::FORMAT_VERSION);
            }
            Err(other) => panic!("read_only {read_only}: {other}"),
            Ok(_) => panic!("read_only {read_only}: a previous-version database opened"),
        }
        assert_eq!(files(&old), old_files, "a refused open wrote nothing");
    }
}
