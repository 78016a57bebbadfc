//! `ubt bench store` end to end on a small N: the pairs built, read back
//! (every read checks its value, so a wrong pair fails the run), updated
//! and checkpointed, with the memory figures reported.

// Test code: a failed unwrap is a failed test.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use common::TempDir;
use ubt_bench::gen::RandomPairs;
use ubt_bench::studies::store::{run, to_markdown, StoreBenchConfig};
use ubt_engine::{Db, Options};

fn small_config(dir: &TempDir) -> StoreBenchConfig {
    let mut config = StoreBenchConfig::new(dir.0.join("bench"), 30_000);
    config.cold_reads = 100;
    config.batch_keys = 1_000;
    config.cold_blocks = 1;
    config.warm_blocks = 2;
    config.block_writes = 256;
    config.device = None;
    config
}

/// A device probe small enough for a test.
fn small_probe() -> ubt_bench::measure::device::DeviceProbeOptions {
    ubt_bench::measure::device::DeviceProbeOptions {
        file_bytes: 8 << 20,
        qd1_reads: 50,
        qd32_reads: 200,
        ..Default::default()
    }
}

#[test]
fn a_small_run_builds_reads_and_updates_the_streamed_pairs() {
    let dir = TempDir::new("store-run");
    let config = small_config(&dir);
    let report = run(&config, &mut |_| {}).unwrap();
    assert_eq!(report.build.entries, 30_000);
    assert!(report.build.disk_bytes_per_entry > 32.0);
    assert_eq!(report.cold_reads.misses + report.cold_reads.hits, 100);
    assert!(report.batch_read.keys > 0);
    assert_eq!(report.blocks.len(), 3);
    assert!(report.blocks.iter().all(|b| b.writes == 256));
    if cfg!(target_os = "linux") {
        let peak = report.peak_resident_bytes.unwrap();
        assert!(peak >= report.resident_bytes_open.unwrap());
    }
    // The in-memory reference reached the store's root after every block
    // (the run fails otherwise) and timed the warm ones.
    let reference = report.reference.as_ref().expect("reference at 30k entries");
    assert_eq!(reference.warm_ms.len(), 2);
    assert!(report
        .targets
        .iter()
        .any(|t| t.name.contains("FastTree") && t.met.is_some()));
    let md = to_markdown(&report);
    assert!(md.contains("Process memory"), "{md}");
    assert!(md.contains("bytes/entry"), "{md}");
    assert!(md.contains("In-memory reference"), "{md}");
}

/// With direct reads, the run reads through `O_DIRECT` (where the
/// temporary directory allows it) and its report says so; with a small
/// device probe, each cold miss is paired with a direct read of the data
/// file, and the cold-read target is set against those.
#[test]
fn a_small_run_with_direct_reads_and_paired_device_reads() {
    let dir = TempDir::new("store-direct");
    let mut config = small_config(&dir);
    config.direct_reads = true;
    config.device = Some(small_probe());
    let report = run(&config, &mut |_| {}).unwrap();
    let direct = report.device.as_ref().unwrap().direct_io;
    assert_eq!(report.batch_read.backend.contains("O_DIRECT"), direct);
    let cold = &report.cold_reads;
    let target = report
        .targets
        .iter()
        .find(|t| t.name == "cold point read p50")
        .unwrap();
    if direct && cold.misses > 0 {
        assert!(cold.paired_device_p50_us.unwrap() > 0.0);
        assert!(
            target.measured.contains("paired reads"),
            "{}",
            target.measured
        );
    } else {
        eprintln!("the temporary directory refuses O_DIRECT: no paired reads");
        assert!(cold.paired_device_p50_us.is_none());
    }
}

/// With buckets larger than a block, the device is probed again with
/// reads of the buckets' mean extent, and the cold blocks' I/O bound (and
/// the paired reads) use that probe, not the 4 KiB one.
#[test]
fn larger_buckets_are_measured_against_reads_of_their_size() {
    let dir = TempDir::new("store-bucket-reads");
    let mut config = small_config(&dir);
    config.bucket_bytes = 16 << 10;
    config.device = Some(small_probe());
    let report = run(&config, &mut |_| {}).unwrap();
    let blocks_mean = report.build.bucket_blocks_mean;
    assert!(blocks_mean > 1.5 && blocks_mean <= 4.0, "{blocks_mean}");
    let four_kib = report.device.as_ref().unwrap();
    assert_eq!(four_kib.read_block_bytes, 4096);
    let at_buckets = report
        .device_at_bucket_reads
        .as_ref()
        .expect("a second probe");
    assert_eq!(
        at_buckets.read_block_bytes as f64,
        blocks_mean.round() * 4096.0,
        "reads of the mean extent in whole blocks"
    );
    for block in &report.blocks {
        let bound = block.io_bound_ms.unwrap();
        let expected = block.buckets_read as f64 / at_buckets.qd32_reads_per_s * 1e3;
        assert!(
            (bound - expected).abs() <= 1e-9 * expected.max(1.0),
            "{bound} {expected}"
        );
    }
    let md = to_markdown(&report);
    assert!(md.contains("mean extent"), "{md}");
    // At the default capacity a bucket is one block: no second probe.
    let dir = TempDir::new("store-bucket-reads-4k");
    let mut config = small_config(&dir);
    config.device = Some(small_probe());
    let report = run(&config, &mut |_| {}).unwrap();
    assert!(report.build.bucket_blocks_mean.round() <= 1.0);
    assert!(report.device_at_bucket_reads.is_none());
}

#[test]
fn the_built_database_holds_exactly_the_pairs() {
    let dir = TempDir::new("store-pairs");
    let pairs = RandomPairs::new(9_000, 4);
    let (db, _) = Db::build(dir.0.join("db"), Options::default(), pairs.sorted()).unwrap();
    for index in (0..pairs.len()).step_by(97) {
        let (key, value) = pairs.entry(index);
        assert_eq!(db.get(&key).unwrap(), Some(value), "pair {index}");
    }
    // The reference tree over the pairs in generation order.
    let mut tree =
        ubt_spec::FastTree::from_entries((0..pairs.len()).map(|i| pairs.entry(i)).collect());
    assert_eq!(db.root(), tree.root_hash());
}

/// Regression: when the store checkpointed by itself during the warm
/// blocks (its changed buckets filled their share of the budget), the
/// amortized figure counted only the final checkpoint's bytes (582 B/slot
/// reported at 100M where ~5 KiB/slot were written).
#[test]
fn the_amortized_checkpoint_counts_checkpoints_taken_during_the_blocks() {
    let dir = TempDir::new("store-amortized");
    let mut config = small_config(&dir);
    config.warm_blocks = 4;
    config.memory_budget_bytes = 1 << 20;
    let report = run(&config, &mut |_| {}).unwrap();
    let k = &report.checkpoint;
    assert!(k.checkpoints_during_blocks >= 1, "{k:?}");
    // What the warm blocks wrote beyond their WAL records (64 bytes per
    // slot and a header) was checkpoint bytes.
    let beyond_wal: u64 = report
        .blocks
        .iter()
        .filter(|b| b.phase == "warm")
        .map(|b| b.store_bytes_written.saturating_sub(64 * b.writes + 4096))
        .sum();
    assert!(beyond_wal > 0);
    let amortized_bytes = k.bytes_per_slot * k.slots_since_previous as f64;
    assert!(
        amortized_bytes >= beyond_wal as f64,
        "amortized {amortized_bytes} < {beyond_wal} written by checkpoints during the blocks"
    );
    assert_eq!(k.slots_since_previous, 4 * 256);
}
