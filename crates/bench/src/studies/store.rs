//! `ubt bench store`: the store's own figures on N random 32-byte keys and
//! values, each next to the device's limit measured in the same run.
//!
//! Phases, in order: the device probe (QD1 latency, QD32 IOPS); bulk build
//! (entries/s, disk bytes per entry); where buckets take more than one
//! block (capacities above 4 KiB), a second probe with reads of their mean
//! extent, whose limits the read and cold-block targets use; cold point
//! reads (page cache dropped and checked empty with `mincore`,
//! single-threaded, latency of reads that missed every cache); one cold
//! batched read (`get_many`); blocks of random updates, cold (checkpoint,
//! caches dropped) then warm (data file in the page cache), with the time
//! split into read, hash and commit and the bytes written per updated
//! slot (by the store and by the device); then a checkpoint and its
//! amortized bytes per slot; and the process's resident memory (after the
//! build, open after the blocks, peak).
//!
//! Memory does not grow with N beyond the database's own: the pairs are
//! [`RandomPairs`], generated in key order as the build consumes them
//! and read back by index, and warming the page cache reads the data file
//! through one buffer ([`make_warm`]).

use std::fmt::Write;
use std::path::{Path, PathBuf};
use std::time::Instant;

use alloy_primitives::B256;
use serde::Serialize;
use ubt_engine::{Db, Options};
use ubt_spec::rng::SplitMix64;

use super::store_reference::{
    measure_reference, AppliedBlock, ReferenceFigures, REFERENCE_ENTRIES_MAX,
};
use crate::error::BenchError;
use crate::gen::RandomPairs;
use crate::measure::cold::{make_cold, make_warm, resident_bytes, ColdReport};
use crate::measure::device::{
    probe, DeviceLimits, DeviceProbeOptions, PairedDeviceReads, READ_BLOCK_BYTES,
};
use crate::measure::diskstats::DeviceCounters;
use crate::measure::hash_rate::{self, HashRate};
use crate::measure::memory;
use crate::statistics::{quantile_sorted, QuantileMethod};

/// How long [`hash_rate::measure`] hashes.
const HASH_RATE_DURATION: std::time::Duration = std::time::Duration::from_secs(1);

/// What to run.
#[derive(Clone, Debug)]
pub struct StoreBenchConfig {
    /// Directory for the database (and the device probe's scratch file).
    pub dir: PathBuf,
    /// Number of random key/value pairs.
    pub entries: u64,
    /// Group depth of the database.
    pub group_depth: u8,
    /// Bucket capacity of the database in bytes
    /// ([`ubt_engine::Options::bucket_bytes`]).
    pub bucket_bytes: usize,
    /// Memory budget of the database handle.
    pub memory_budget_bytes: usize,
    /// Read the data file around the page cache
    /// ([`ubt_engine::Options::direct_reads`]).
    pub direct_reads: bool,
    /// Single-threaded cold point reads.
    pub cold_reads: usize,
    /// Most keys in the cold batched read (it uses about one key per two
    /// buckets, up to this).
    pub batch_keys: usize,
    /// Cold update blocks (each after a checkpoint and dropped caches).
    pub cold_blocks: usize,
    /// Warm update blocks (no checkpoint between them; the checkpoint after
    /// them is amortized over their updates).
    pub warm_blocks: usize,
    /// Writes per block.
    pub block_writes: usize,
    /// Seed of the key/value generator.
    pub seed: u64,
    /// Device probe options; `None` skips the probe (no ratios).
    pub device: Option<DeviceProbeOptions>,
    /// Keep the database directory afterwards.
    pub keep_db: bool,
    /// Measure the in-memory reference ([`super::store_reference`]) on
    /// the same state and writes (default: up to
    /// [`REFERENCE_ENTRIES_MAX`] entries).
    pub reference: bool,
}

impl StoreBenchConfig {
    /// Defaults for `entries` pairs under `dir`.
    pub fn new(dir: PathBuf, entries: u64) -> Self {
        StoreBenchConfig {
            dir,
            entries,
            group_depth: ubt_engine::DEFAULT_GROUP_DEPTH,
            bucket_bytes: ubt_engine::BUCKET_BYTES_DEFAULT,
            memory_budget_bytes: 1 << 30,
            direct_reads: false,
            cold_reads: 2_000,
            batch_keys: 100_000,
            cold_blocks: 5,
            warm_blocks: 20,
            block_writes: 4_096,
            seed: 1,
            device: Some(DeviceProbeOptions::default()),
            keep_db: false,
            reference: entries <= REFERENCE_ENTRIES_MAX,
        }
    }
}

/// Bulk build figures.
#[derive(Clone, Debug, Serialize)]
pub struct BuildFigures {
    /// Seconds generating and sorting the pairs inside the build's input
    /// stream (not counted in `build_s`).
    pub generate_s: f64,
    /// Seconds of `Db::build` from the sorted pairs (durable at the end),
    /// without the stream's generating.
    pub build_s: f64,
    /// Entries built.
    pub entries: u64,
    /// Entries per second of the build.
    pub entries_per_s: f64,
    /// Bytes of the database's files.
    pub disk_bytes: u64,
    /// Disk bytes per entry.
    pub disk_bytes_per_entry: f64,
    /// Buckets.
    pub buckets: u64,
    /// Mean bucket prefix length.
    pub bucket_depth_mean: f64,
    /// Upper-trie pages.
    pub pages: u64,
    /// Memory of the resident upper trie and bucket table.
    pub upper_trie_bytes: u64,
    /// Mean whole blocks per bucket extent: the data file's used blocks
    /// less the pages' over the buckets (after a bulk build the data file
    /// holds nothing else). One cold bucket read reads about this many.
    pub bucket_blocks_mean: f64,
    /// The process's resident bytes after the build (the database closed).
    pub resident_bytes_after_build: Option<u64>,
}

/// Cold point-read figures.
#[derive(Clone, Debug, Serialize)]
pub struct ColdReadFigures {
    /// How the page cache was emptied, and what `mincore` saw.
    pub cold: ColdReport,
    /// Data-file bytes resident after reopening (the upper trie's pages).
    pub resident_bytes_after_open: u64,
    /// Reads that issued one bucket read.
    pub misses: u64,
    /// Reads served from memory.
    pub hits: u64,
    /// Median latency of the misses.
    pub miss_latency_p50_us: f64,
    /// 99th percentile latency of the misses.
    pub miss_latency_p99_us: f64,
    /// Mean latency of the misses.
    pub miss_latency_mean_us: f64,
    /// Median latency of the device's own reads paired with the misses:
    /// after each store read, one `O_DIRECT` read of the mean bucket
    /// extent (whole blocks, from a random block) of the database's data
    /// file (`None` without the device probe, or where `O_DIRECT` is
    /// refused).
    pub paired_device_p50_us: Option<f64>,
}

/// Cold batched-read figures.
#[derive(Clone, Debug, Serialize)]
pub struct BatchReadFigures {
    /// Keys looked up.
    pub keys: u64,
    /// Bucket reads issued.
    pub bucket_reads: u64,
    /// Seconds.
    pub elapsed_s: f64,
    /// Bucket reads per second.
    pub bucket_reads_per_s: f64,
    /// Keys per second.
    pub keys_per_s: f64,
    /// The store's read backend.
    pub backend: String,
}

/// One update block.
#[derive(Clone, Debug, Serialize)]
pub struct BlockFigures {
    /// `cold` or `warm`.
    pub phase: String,
    /// Writes in the block.
    pub writes: u64,
    /// Buckets read (not in memory).
    pub buckets_read: u64,
    /// Milliseconds of `apply` (read + hash + upper trie).
    pub apply_ms: f64,
    /// Milliseconds from the first bucket read issued to the last one
    /// completed (buckets are decoded and rehashed meanwhile).
    pub read_ms: f64,
    /// Milliseconds of bucket hashing left after the last read completed.
    pub hash_ms: f64,
    /// Milliseconds rehashing the upper trie (and locating keys).
    pub upper_ms: f64,
    /// Milliseconds of `commit` (WAL append + sync).
    pub commit_ms: f64,
    /// Milliseconds of the whole block.
    pub total_ms: f64,
    /// Bytes the store wrote (WAL, data, meta).
    pub store_bytes_written: u64,
    /// Bytes the device wrote meanwhile (from /proc/diskstats; all processes).
    pub device_bytes_written: Option<u64>,
    /// Store bytes written per updated slot.
    pub bytes_per_slot: f64,
    /// The block's I/O lower bound: its bucket reads at the device's QD32 rate.
    pub io_bound_ms: Option<f64>,
    /// SHA-256 compressions during the block (apply and commit, every
    /// thread), when the build counts them.
    pub compressions: Option<u64>,
}

/// The checkpoint after the blocks.
#[derive(Clone, Debug, Serialize)]
pub struct CheckpointFigures {
    /// Milliseconds.
    pub ms: f64,
    /// Bytes the final checkpoint wrote to the data and meta files.
    pub bytes: u64,
    /// Checkpoints the store took by itself during the warm blocks (its
    /// changed buckets reached their share of the memory budget).
    pub checkpoints_during_blocks: u64,
    /// Bytes those checkpoints wrote to the data and meta files.
    pub bytes_during_blocks: u64,
    /// Slots updated by the warm blocks (since the checkpoint before them).
    pub slots_since_previous: u64,
    /// Every checkpoint byte since the warm blocks began (theirs and the
    /// final one's) per slot they updated.
    pub bytes_per_slot: f64,
}

/// How much of a warm block's time its hashing would take at the cores'
/// raw rate.
#[derive(Clone, Debug, Serialize)]
pub struct HashingShare {
    /// Whose blocks: the store's or the in-memory reference's.
    pub what: String,
    /// Median SHA-256 compressions per warm block.
    pub compressions: u64,
    /// Those per write.
    pub compressions_per_write: f64,
    /// Median warm block time, milliseconds.
    pub block_ms: f64,
    /// Compressions per second achieved over the block.
    pub achieved_per_s: f64,
    /// `achieved_per_s` over the raw rate: the share of the block's time
    /// that is hashing at full speed.
    pub share: f64,
}

/// A target and whether the run met it.
#[derive(Clone, Debug, Serialize)]
pub struct TargetCheck {
    /// What is measured.
    pub name: String,
    /// The target, in words.
    pub target: String,
    /// The measured value, in words.
    pub measured: String,
    /// Whether it was met (`None` when the device was not probed).
    pub met: Option<bool>,
}

/// Everything one run measured.
#[derive(Clone, Debug, Serialize)]
pub struct StoreBenchReport {
    /// Entries.
    pub entries: u64,
    /// Group depth.
    pub group_depth: u8,
    /// Bucket capacity in bytes.
    pub bucket_bytes: usize,
    /// The database's memory budget.
    pub memory_budget_bytes: usize,
    /// The machine.
    pub machine: crate::measure::machine::MachineInfo,
    /// The device's limits (4 KiB reads).
    pub device: Option<DeviceLimits>,
    /// The device's limits for reads of the database's mean bucket extent
    /// (whole blocks), probed after the build when that is more than one
    /// block: the bucket reads' own device limits, which the cold-read,
    /// batched-read and cold-block targets then use.
    pub device_at_bucket_reads: Option<DeviceLimits>,
    /// Bulk build.
    pub build: BuildFigures,
    /// Cold point reads.
    pub cold_reads: ColdReadFigures,
    /// Cold batched read.
    pub batch_read: BatchReadFigures,
    /// Update blocks.
    pub blocks: Vec<BlockFigures>,
    /// Checkpoint after the warm blocks.
    pub checkpoint: CheckpointFigures,
    /// The process's peak resident bytes over the whole run (`VmHWM`).
    pub peak_resident_bytes: Option<u64>,
    /// Resident bytes with the database open after the blocks.
    pub resident_bytes_open: Option<u64>,
    /// The in-memory reference on the same state and writes (measured
    /// after the store is closed; not in the memory figures).
    pub reference: Option<ReferenceFigures>,
    /// The cores' raw SHA-256 rate, measured after the blocks.
    pub hash_rate: HashRate,
    /// The warm blocks' hashing against that rate (the store's, and the
    /// reference's when it ran), when the build counts compressions.
    pub hashing_share: Vec<HashingShare>,
    /// Targets.
    pub targets: Vec<TargetCheck>,
}

fn db_files(db_dir: &Path) -> Vec<PathBuf> {
    [
        ubt_engine::DATA_FILE,
        ubt_engine::META_FILE,
        ubt_engine::WAL_FILE,
    ]
    .iter()
    .map(|name| db_dir.join(name))
    .collect()
}

fn dir_bytes(db_dir: &Path) -> u64 {
    db_files(db_dir)
        .iter()
        .filter_map(|p| std::fs::metadata(p).ok())
        .map(|m| m.len())
        .sum()
}

fn engine_error(what: &str) -> impl FnOnce(ubt_engine::Error) -> BenchError + '_ {
    move |error| BenchError::Engine {
        what: what.to_string(),
        message: error.to_string(),
    }
}

/// Runs the benchmark; `progress` receives one line per phase.
pub fn run(
    config: &StoreBenchConfig,
    progress: &mut dyn FnMut(&str),
) -> Result<StoreBenchReport, BenchError> {
    std::fs::create_dir_all(&config.dir)
        .map_err(|e| BenchError::io_at("creating", &config.dir, e))?;
    let machine = crate::measure::machine::MachineInfo::read();
    let device = match &config.device {
        Some(options) => {
            progress("probing the device (O_DIRECT random 4 KiB reads at QD1 and QD32)");
            Some(probe_once(&config.dir, options)?)
        }
        None => None,
    };
    let db_dir = config.dir.join(format!("store-bench-{}", config.entries));
    let _ = std::fs::remove_dir_all(&db_dir);
    let options = Options {
        group_depth: Some(config.group_depth),
        bucket_bytes: Some(config.bucket_bytes),
        memory_budget_bytes: config.memory_budget_bytes,
        direct_reads: config.direct_reads,
        ..Options::default()
    };

    // The pairs come from their own stream; the reads and writes draw
    // from `random`.
    let entries = RandomPairs::new(config.entries, config.seed);
    let mut random = SplitMix64::new(config.seed);
    let build = generate_and_build(config, &db_dir, &options, &entries, progress)?;
    let device_at_bucket_reads = probe_bucket_reads(config, &build, progress)?;
    let read_limits = device_at_bucket_reads.as_ref().or(device.as_ref());

    progress("cold point reads");
    let cold = make_cold(&db_files(&db_dir))?;
    let db = Db::open(&db_dir, options.clone()).map_err(engine_error("reopening"))?;
    let resident_bytes_after_open = resident_bytes(&db_files(&db_dir))?;
    let paired = match config.device {
        Some(_) => PairedDeviceReads::open(
            &db_dir.join(ubt_engine::DATA_FILE),
            config.seed,
            read_limits.map_or(READ_BLOCK_BYTES, |d| {
                usize::try_from(d.read_block_bytes).unwrap_or(READ_BLOCK_BYTES)
            }),
        )?,
        None => None,
    };
    let cold_reads = cold_point_reads(config, &db, &entries, &mut random, paired)?
        .after(cold, resident_bytes_after_open);

    progress("cold batched read");
    let batch_read = cold_batched_read(config, &db, &db_dir, &entries, &mut random)?;
    drop(db);

    let mut db = Db::open(&db_dir, options).map_err(engine_error("reopening"))?;
    let qd32 = read_limits.map(|d| d.qd32_reads_per_s);
    let (blocks, warm, applied) = update_blocks(
        config,
        &mut db,
        &db_dir,
        &entries,
        &mut random,
        qd32,
        progress,
    )?;
    progress("checkpoint");
    let checkpoint = final_checkpoint(&mut db, &warm)?;
    let resident_bytes_open = memory::resident_bytes();
    db.close().map_err(engine_error("closing"))?;
    progress("raw SHA-256 rate of the cores");
    let hash_rate = hash_rate::measure(HASH_RATE_DURATION);
    if !config.keep_db {
        let _ = std::fs::remove_dir_all(&db_dir);
    }
    let resident_bytes_after_build = build.resident_bytes_after_build;
    // Before the reference, whose tree would dominate the peak.
    let peak_resident_bytes =
        memory::peak_resident_bytes_with(&[resident_bytes_after_build, resident_bytes_open]);
    let reference = if config.reference {
        progress("in-memory reference (FastTree, same state and writes)");
        Some(measure_reference(&entries, &applied)?)
    } else {
        None
    };
    let mut report = StoreBenchReport {
        entries: config.entries,
        group_depth: config.group_depth,
        bucket_bytes: config.bucket_bytes,
        memory_budget_bytes: config.memory_budget_bytes,
        machine,
        device,
        device_at_bucket_reads,
        build,
        cold_reads,
        batch_read,
        blocks,
        checkpoint,
        peak_resident_bytes,
        resident_bytes_open,
        reference,
        hash_rate,
        hashing_share: Vec::new(),
        targets: Vec::new(),
    };
    report.hashing_share = hashing_share(&report);
    report.targets = targets(&report);
    Ok(report)
}

/// A random entry of `entries` (not empty).
fn random_entry(random: &mut SplitMix64, entries: &RandomPairs) -> (B256, B256) {
    entries.entry(random.below(entries.len()))
}

/// Bulk-builds the database from the pairs, generated in key order as the
/// build consumes them.
fn generate_and_build(
    config: &StoreBenchConfig,
    db_dir: &Path,
    options: &Options,
    entries: &RandomPairs,
    progress: &mut dyn FnMut(&str),
) -> Result<BuildFigures, BenchError> {
    progress(&format!(
        "bulk build of {} random pairs, generated in key order",
        config.entries
    ));
    let mut sorted = entries.sorted();
    let started = Instant::now();
    let (db, _) =
        Db::build(db_dir, options.clone(), &mut sorted).map_err(engine_error("bulk build"))?;
    let generate_s = sorted.generating_time().as_secs_f64();
    let build_s = started.elapsed().as_secs_f64() - generate_s;
    let stats = db.stats();
    let disk_bytes = dir_bytes(db_dir);
    let build = BuildFigures {
        generate_s,
        build_s,
        entries: config.entries,
        entries_per_s: config.entries as f64 / build_s,
        disk_bytes,
        disk_bytes_per_entry: disk_bytes as f64 / config.entries.max(1) as f64,
        buckets: stats.bucket_count,
        bucket_depth_mean: stats.bucket_depth_mean,
        pages: stats.page_count,
        upper_trie_bytes: stats.upper_trie_bytes,
        bucket_blocks_mean: (stats.data_used_bytes / READ_BLOCK_BYTES as u64)
            .saturating_sub(stats.page_blocks) as f64
            / stats.bucket_count.max(1) as f64,
        resident_bytes_after_build: None,
    };
    db.close()
        .map_err(engine_error("closing after the build"))?;
    Ok(BuildFigures {
        resident_bytes_after_build: memory::resident_bytes(),
        ..build
    })
}

/// With the device probe on and buckets of more than one block, probes
/// the device again with reads of the buckets' mean extent.
fn probe_bucket_reads(
    config: &StoreBenchConfig,
    build: &BuildFigures,
    progress: &mut dyn FnMut(&str),
) -> Result<Option<DeviceLimits>, BenchError> {
    let read_bytes = bucket_read_bytes(build);
    let Some(options) = config
        .device
        .as_ref()
        .filter(|_| read_bytes > READ_BLOCK_BYTES)
    else {
        return Ok(None);
    };
    progress(&format!(
        "probing the device with reads of the mean bucket extent ({} KiB)",
        read_bytes >> 10
    ));
    let options = DeviceProbeOptions {
        read_bytes,
        file_bytes: options.file_bytes / read_bytes as u64 * read_bytes as u64,
        ..options.clone()
    };
    probe_once(&config.dir, &options).map(Some)
}

/// Probes the device under `dir`, then removes the probe's scratch file
/// (the database needs the space; a later probe writes its own).
fn probe_once(dir: &Path, options: &DeviceProbeOptions) -> Result<DeviceLimits, BenchError> {
    let limits = probe(dir, options)?;
    let _ = std::fs::remove_file(dir.join(crate::measure::device::PROBE_FILE_NAME));
    Ok(limits)
}

/// Bytes of one cold bucket read: the build's mean bucket extent in whole
/// blocks, rounded to the nearest block (at least one).
fn bucket_read_bytes(build: &BuildFigures) -> usize {
    // A few blocks at most (the capacity is at most 64 KiB).
    #[allow(clippy::cast_possible_truncation, clippy::cast_sign_loss)]
    let blocks = build.bucket_blocks_mean.round().max(1.0) as usize;
    blocks * READ_BLOCK_BYTES
}

/// The latencies of [`cold_point_reads`].
struct PointReads {
    /// Sorted latencies of the reads that read a bucket.
    latencies: Vec<f64>,
    hits: u64,
    /// Sorted latencies of the device reads paired with them.
    device_latencies: Vec<f64>,
}

impl PointReads {
    /// The figures, with how the cache was emptied and what was resident
    /// after the open.
    fn after(self, cold: ColdReport, resident_bytes_after_open: u64) -> ColdReadFigures {
        let latencies = &self.latencies;
        ColdReadFigures {
            cold,
            resident_bytes_after_open,
            misses: latencies.len() as u64,
            hits: self.hits,
            miss_latency_p50_us: quantile_sorted(latencies, 0.5, QuantileMethod::NearestRank),
            miss_latency_p99_us: quantile_sorted(latencies, 0.99, QuantileMethod::NearestRank),
            miss_latency_mean_us: latencies.iter().sum::<f64>() / latencies.len().max(1) as f64,
            paired_device_p50_us: (!self.device_latencies.is_empty())
                .then(|| quantile_sorted(&self.device_latencies, 0.5, QuantileMethod::NearestRank)),
        }
    }
}

/// Single-threaded point reads of random keys, timing those that read a
/// bucket; with the device probe on, each is followed by one direct read
/// of a random block of the data file (`paired`), timed the same way.
fn cold_point_reads(
    config: &StoreBenchConfig,
    db: &Db,
    entries: &RandomPairs,
    random: &mut SplitMix64,
    mut paired: Option<PairedDeviceReads>,
) -> Result<PointReads, BenchError> {
    let mut latencies = Vec::new();
    let mut device_latencies = Vec::new();
    let mut hits = 0u64;
    for _ in 0..config.cold_reads {
        let (key, value) = random_entry(random, entries);
        let reads_before = db.diagnostics().io.bucket_reads;
        let started = Instant::now();
        let found = db.get(&key).map_err(engine_error("cold get"))?;
        let micros = started.elapsed().as_secs_f64() * 1e6;
        if found != Some(value) {
            return Err(BenchError::Engine {
                what: "cold get".into(),
                message: format!("wrong value for {key}"),
            });
        }
        if db.diagnostics().io.bucket_reads > reads_before {
            latencies.push(micros);
            if let Some(device) = paired.as_mut() {
                device_latencies.push(device.time_one()?);
            }
        } else {
            hits += 1;
        }
    }
    latencies.sort_by(f64::total_cmp);
    device_latencies.sort_by(f64::total_cmp);
    Ok(PointReads {
        latencies,
        hits,
        device_latencies,
    })
}

/// One `get_many` of random keys with every cache dropped.
fn cold_batched_read(
    config: &StoreBenchConfig,
    db: &Db,
    db_dir: &Path,
    entries: &RandomPairs,
    random: &mut SplitMix64,
) -> Result<BatchReadFigures, BenchError> {
    db.clear_cache();
    make_cold(&db_files(db_dir))?;
    // About one key per two buckets, so the batch measures bucket reads
    // rather than lookups in buckets already read.
    let half_the_buckets = usize::try_from(db.stats().bucket_count / 2).unwrap_or(usize::MAX);
    let batch = config.batch_keys.min(half_the_buckets.max(1));
    let keys: Vec<B256> = (0..batch)
        .map(|_| random_entry(random, entries).0)
        .collect();
    let reads_before = db.diagnostics().io.bucket_reads;
    let started = Instant::now();
    let found = db.get_many(&keys).map_err(engine_error("batched read"))?;
    let elapsed_s = started.elapsed().as_secs_f64();
    if found.iter().any(Option::is_none) {
        return Err(BenchError::Engine {
            what: "batched read".into(),
            message: "a present key read as absent".into(),
        });
    }
    let bucket_reads = db.diagnostics().io.bucket_reads - reads_before;
    Ok(BatchReadFigures {
        keys: keys.len() as u64,
        bucket_reads,
        elapsed_s,
        bucket_reads_per_s: bucket_reads as f64 / elapsed_s,
        keys_per_s: keys.len() as f64 / elapsed_s,
        backend: backend_name(&db.stats()),
    })
}

/// How the store's reads reach the device: its batched-read backend, and
/// `O_DIRECT` when its data-file reads bypass the page cache.
fn backend_name(stats: &ubt_engine::Stats) -> String {
    if stats.direct_reads {
        format!("{}, O_DIRECT", stats.read_backend)
    } else {
        format!("{}, page cache", stats.read_backend)
    }
}

/// Where the warm blocks began: what a checkpoint amortized over them
/// counts from.
struct WarmStart {
    /// Slots the warm blocks updated.
    slots: u64,
    /// Data and meta bytes written before them.
    checkpoint_bytes: u64,
    /// Checkpoints taken before them.
    checkpoints: u64,
}

/// Data and meta bytes a store has written (its checkpoints' bytes).
fn checkpoint_bytes(stats: &ubt_engine::Stats) -> u64 {
    stats.data_bytes_written + stats.meta_bytes_written
}

/// The cold blocks (each after a checkpoint and dropped caches), then the
/// warm ones; returns their figures, where the warm blocks began, and the
/// blocks as applied (kept for the in-memory reference when it runs).
fn update_blocks(
    config: &StoreBenchConfig,
    db: &mut Db,
    db_dir: &Path,
    entries: &RandomPairs,
    random: &mut SplitMix64,
    qd32: Option<f64>,
    progress: &mut dyn FnMut(&str),
) -> Result<(Vec<BlockFigures>, WarmStart, Vec<AppliedBlock>), BenchError> {
    let counters = DeviceCounters::for_path(db_dir);
    let mut blocks = Vec::new();
    let mut warm = WarmStart {
        slots: 0,
        checkpoint_bytes: 0,
        checkpoints: 0,
    };
    let mut applied = Vec::new();
    for phase in ["cold", "warm"] {
        if phase == "warm" {
            // Start the warm run from a checkpoint, with the whole data file
            // in the page cache.
            db.checkpoint().map_err(engine_error("checkpoint"))?;
            let stats = db.stats();
            warm.checkpoint_bytes = checkpoint_bytes(&stats);
            warm.checkpoints = stats.checkpoints;
            make_warm(&[db_dir.join(ubt_engine::DATA_FILE)])?;
        }
        let count = if phase == "cold" {
            config.cold_blocks
        } else {
            config.warm_blocks
        };
        for index in 0..count {
            progress(&format!("{phase} block {}/{count}", index + 1));
            if phase == "cold" {
                db.checkpoint().map_err(engine_error("checkpoint"))?;
                db.clear_cache();
                make_cold(&db_files(db_dir))?;
            }
            let writes: Vec<(B256, B256)> = (0..config.block_writes)
                .map(|_| {
                    (
                        random_entry(random, entries).0,
                        B256::from(random.bytes32()),
                    )
                })
                .collect();
            let figures = update_block(db, counters.as_ref(), phase, &writes, qd32)?;
            if phase == "warm" {
                warm.slots += figures.writes;
            }
            blocks.push(figures);
            if config.reference {
                applied.push(AppliedBlock {
                    warm: phase == "warm",
                    writes,
                    root: db.root(),
                });
            }
        }
    }
    Ok((blocks, warm, applied))
}

/// Applies and commits one block of `writes`, timed.
fn update_block(
    db: &mut Db,
    counters: Option<&DeviceCounters>,
    phase: &str,
    writes: &[(B256, B256)],
    qd32: Option<f64>,
) -> Result<BlockFigures, BenchError> {
    // Diagnostics, not stats: stats walks the whole upper trie (O(N)).
    let written_before = db.diagnostics().io.bytes_written;
    let device_before = counters.and_then(DeviceCounters::sectors_written);
    let compressions_before = ubt_spec::hash::compressions();
    let started = Instant::now();
    db.apply(writes).map_err(engine_error("apply"))?;
    let applied = Instant::now();
    db.commit().map_err(engine_error("commit"))?;
    let done = Instant::now();
    let compressions = ubt_spec::hash::compressions()
        .zip(compressions_before)
        .map(|(after, before)| after - before);
    let device_after = counters.and_then(DeviceCounters::sectors_written);
    let diagnostics = db.diagnostics();
    let timing = diagnostics.last_apply;
    let store_bytes_written = diagnostics.io.bytes_written - written_before;
    Ok(BlockFigures {
        phase: phase.to_string(),
        writes: writes.len() as u64,
        buckets_read: timing.buckets_read,
        apply_ms: (applied - started).as_secs_f64() * 1e3,
        read_ms: timing.read_us as f64 / 1e3,
        hash_ms: timing.hash_tail_us as f64 / 1e3,
        upper_ms: (timing.locate_us + timing.upper_us) as f64 / 1e3,
        commit_ms: (done - applied).as_secs_f64() * 1e3,
        total_ms: (done - started).as_secs_f64() * 1e3,
        store_bytes_written,
        device_bytes_written: device_before.zip(device_after).map(|(b, a)| (a - b) * 512),
        bytes_per_slot: store_bytes_written as f64 / writes.len() as f64,
        io_bound_ms: qd32.map(|iops| timing.buckets_read as f64 / iops * 1e3),
        compressions,
    })
}

/// A checkpoint after the warm blocks; every checkpoint byte since they
/// began (including checkpoints the store took during them) amortized
/// over their slots.
fn final_checkpoint(db: &mut Db, warm: &WarmStart) -> Result<CheckpointFigures, BenchError> {
    let before = db.stats();
    let started = Instant::now();
    db.checkpoint().map_err(engine_error("checkpoint"))?;
    let ms = started.elapsed().as_secs_f64() * 1e3;
    let after = db.stats();
    let bytes = checkpoint_bytes(&after) - checkpoint_bytes(&before);
    let bytes_during_blocks = checkpoint_bytes(&before) - warm.checkpoint_bytes;
    Ok(CheckpointFigures {
        ms,
        bytes,
        checkpoints_during_blocks: before.checkpoints - warm.checkpoints,
        bytes_during_blocks,
        slots_since_previous: warm.slots,
        bytes_per_slot: (bytes + bytes_during_blocks) as f64 / warm.slots.max(1) as f64,
    })
}

/// The warm blocks' hashing share: the store's, then the reference's.
fn hashing_share(report: &StoreBenchReport) -> Vec<HashingShare> {
    let raw = report.hash_rate.compressions_per_s;
    let row = |what: &str, blocks: &[(u64, f64, u64)]| -> Option<HashingShare> {
        if blocks.is_empty() || raw <= 0.0 {
            return None;
        }
        let mut counts: Vec<u64> = blocks.iter().map(|b| b.0).collect();
        counts.sort_unstable();
        // The nearest-rank median, as `median` takes it.
        let compressions = counts[(counts.len() - 1) / 2];
        let block_ms = median(blocks.iter().map(|b| b.1));
        let writes = median(blocks.iter().map(|b| b.2 as f64));
        let achieved_per_s = compressions as f64 / (block_ms / 1e3);
        Some(HashingShare {
            what: what.to_string(),
            compressions,
            compressions_per_write: compressions as f64 / writes.max(1.0),
            block_ms,
            achieved_per_s,
            share: achieved_per_s / raw,
        })
    };
    let store: Vec<(u64, f64, u64)> = report
        .blocks
        .iter()
        .filter(|b| b.phase == "warm")
        .filter_map(|b| Some((b.compressions?, b.total_ms, b.writes)))
        .collect();
    let mut rows: Vec<HashingShare> = row("store warm block", &store).into_iter().collect();
    if let Some(reference) = &report.reference {
        let blocks: Vec<(u64, f64, u64)> = reference
            .warm_ms
            .iter()
            .zip(&reference.warm_compressions)
            .zip(&reference.warm_writes)
            .map(|((&ms, &compressions), &writes)| (compressions, ms, writes))
            .collect();
        rows.extend(row("in-memory FastTree, same writes", &blocks));
    }
    rows
}

/// The nearest-rank median (an observed value) of `values`.
pub(crate) fn median(values: impl Iterator<Item = f64>) -> f64 {
    let mut values: Vec<f64> = values.collect();
    values.sort_by(f64::total_cmp);
    quantile_sorted(&values, 0.5, QuantileMethod::NearestRank)
}

/// The targets of the store (docs/benchmarks.md) against this run.
fn targets(report: &StoreBenchReport) -> Vec<TargetCheck> {
    let mut out = Vec::new();
    // The limits of reads of the buckets' size.
    let device = report
        .device_at_bucket_reads
        .as_ref()
        .or(report.device.as_ref());
    let p50 = report.cold_reads.miss_latency_p50_us;
    // The device reads paired with the store's, where there are any; else
    // the probe's.
    let device_qd1 = report.cold_reads.paired_device_p50_us.map_or_else(
        || device.map(|d| (d.qd1_latency_p50_us, "probe")),
        |p50| Some((p50, "paired reads of the data file")),
    );
    out.push(TargetCheck {
        name: "cold point read p50".into(),
        target: "<= 1.2 x device QD1 p50".into(),
        measured: match device_qd1 {
            Some((qd1, source)) => format!(
                "{p50:.0} us = {:.2} x device {qd1:.0} us ({source})",
                p50 / qd1
            ),
            None => format!("{p50:.0} us"),
        },
        met: device_qd1.map(|(qd1, _)| p50 <= 1.2 * qd1),
    });
    let batched = report.batch_read.bucket_reads_per_s;
    out.push(TargetCheck {
        name: "cold batched reads".into(),
        target: ">= 0.75 x device QD32 IOPS".into(),
        measured: match device {
            Some(d) => format!(
                "{batched:.0}/s = {:.2} x device {:.0}/s",
                batched / d.qd32_reads_per_s,
                d.qd32_reads_per_s
            ),
            None => format!("{batched:.0}/s"),
        },
        met: device.map(|d| batched >= 0.75 * d.qd32_reads_per_s),
    });
    out.push(TargetCheck {
        name: "bulk load".into(),
        target: ">= 1,000,000 entries/s".into(),
        measured: format!("{:.0} entries/s", report.build.entries_per_s),
        met: Some(report.build.entries_per_s >= 1e6),
    });
    out.push(TargetCheck {
        name: "disk bytes per entry".into(),
        target: "<= 100".into(),
        measured: format!("{:.1}", report.build.disk_bytes_per_entry),
        met: Some(report.build.disk_bytes_per_entry <= 100.0),
    });
    let per_slot = median(report.blocks.iter().map(|b| b.bytes_per_slot));
    let amortized = per_slot + report.checkpoint.bytes_per_slot;
    out.push(TargetCheck {
        name: "bytes written per updated slot".into(),
        target: "<= 1024".into(),
        measured: format!("{per_slot:.0} per commit; {amortized:.0} with the checkpoint amortized"),
        met: Some(per_slot <= 1024.0),
    });
    let cold: Vec<&BlockFigures> = report.blocks.iter().filter(|b| b.phase == "cold").collect();
    let ratio = median(
        cold.iter()
            .filter_map(|b| b.io_bound_ms.map(|bound| b.total_ms / bound)),
    );
    out.push(TargetCheck {
        name: format!("{}-update cold block", cold.first().map_or(0, |b| b.writes)),
        target: "<= 1.5 x (bucket reads / device QD32 IOPS)".into(),
        measured: match device {
            Some(_) => format!(
                "{:.1} ms median = {ratio:.2} x its I/O bound",
                median(cold.iter().map(|b| b.total_ms))
            ),
            None => format!("{:.1} ms median", median(cold.iter().map(|b| b.total_ms))),
        },
        met: device.map(|_| ratio <= 1.5),
    });
    out.extend(reference_target(report));
    out
}

/// The warm blocks against the in-memory reference, when it ran.
fn reference_target(report: &StoreBenchReport) -> Option<TargetCheck> {
    let reference = report.reference.as_ref()?;
    let warm = median(
        report
            .blocks
            .iter()
            .filter(|b| b.phase == "warm")
            .map(|b| b.total_ms),
    );
    let ratio = warm / reference.warm_median_ms;
    Some(TargetCheck {
        name: "warm block against the in-memory FastTree".into(),
        target: "<= 2 x FastTree's time for the same writes".into(),
        measured: format!(
            "{warm:.1} ms median = {ratio:.2} x FastTree {:.1} ms",
            reference.warm_median_ms
        ),
        met: Some(ratio <= 2.0),
    })
}

/// Renders the report as Markdown.
pub fn to_markdown(report: &StoreBenchReport) -> String {
    let mut md = String::new();
    markdown_setup(&mut md, report);
    markdown_build(&mut md, &report.build);
    markdown_reads(&mut md, report);
    markdown_blocks(&mut md, &report.blocks);
    markdown_reference(&mut md, report);
    markdown_hashing(&mut md, report);
    markdown_checkpoint_and_targets(&mut md, report);
    markdown_memory(&mut md, report);
    md
}

/// The data set, the machine and the device.
fn markdown_setup(md: &mut String, report: &StoreBenchReport) {
    let _ = writeln!(
        md,
        "N = {} random 32-byte keys and values, group depth {}, buckets of {} KiB; {}\n",
        report.entries,
        report.group_depth,
        report.bucket_bytes >> 10,
        report.machine.summary()
    );
    if let Some(d) = &report.device {
        let _ = writeln!(
            md,
            "Device ({}, {}): QD1 4 KiB read p50 {:.0} us, p99 {:.0} us; QD32 {:.0} reads/s ({}).\n",
            d.path.display(),
            if d.direct_io { "O_DIRECT" } else { "buffered" },
            d.qd1_latency_p50_us,
            d.qd1_latency_p99_us,
            d.qd32_reads_per_s,
            d.qd32_backend
        );
    }
    if let Some(d) = &report.device_at_bucket_reads {
        let _ = writeln!(
            md,
            "The same device with reads of the buckets' mean extent ({} KiB; {:.2} blocks per bucket): QD1 p50 {:.0} us, p99 {:.0} us; QD32 {:.0} reads/s = {:.0} MB/s. The cold-read, batched-read and cold-block targets below use these.\n",
            d.read_block_bytes >> 10,
            report.build.bucket_blocks_mean,
            d.qd1_latency_p50_us,
            d.qd1_latency_p99_us,
            d.qd32_reads_per_s,
            d.qd32_mb_per_s
        );
    }
}

/// The bulk build's table.
fn markdown_build(md: &mut String, b: &BuildFigures) {
    let _ = writeln!(md, "| build | value |\n|---|---|");
    let _ = writeln!(
        md,
        "| generate and sort (in the build's input stream) | {:.2} s |",
        b.generate_s
    );
    let _ = writeln!(
        md,
        "| bulk build (sorted stream to durable) | {:.2} s = {:.0} entries/s |",
        b.build_s, b.entries_per_s
    );
    let _ = writeln!(
        md,
        "| disk | {} bytes = {:.1} bytes/entry |",
        b.disk_bytes, b.disk_bytes_per_entry
    );
    let _ = writeln!(
        md,
        "| buckets / mean depth / pages | {} / {:.1} / {} |",
        b.buckets, b.bucket_depth_mean, b.pages
    );
    let _ = writeln!(
        md,
        "| resident upper trie | {:.1} MiB = {:.2} bytes/entry |\n",
        b.upper_trie_bytes as f64 / 1048576.0,
        b.upper_trie_bytes as f64 / b.entries.max(1) as f64
    );
}

/// The process's memory: after the build, with the database open after
/// the blocks, and the peak.
fn markdown_memory(md: &mut String, report: &StoreBenchReport) {
    let mib = |bytes: Option<u64>| {
        bytes.map_or_else(
            || "-".to_owned(),
            |b| format!("{:.0} MiB", b as f64 / 1048576.0),
        )
    };
    let _ = writeln!(
        md,
        "\nProcess memory (resident set): {} after the build, {} with the database open after the blocks, peak {} (memory budget {:.0} MiB).\n",
        mib(report.build.resident_bytes_after_build),
        mib(report.resident_bytes_open),
        mib(report.peak_resident_bytes),
        report.memory_budget_bytes as f64 / 1048576.0
    );
}

/// The cold point reads and the cold batched read.
fn markdown_reads(md: &mut String, report: &StoreBenchReport) {
    let c = &report.cold_reads;
    let _ = writeln!(
        md,
        "Cold point reads ({}; {} bytes resident before, {} after reopening): {} misses, p50 {:.0} us, p99 {:.0} us, mean {:.0} us ({} hits excluded){}.\n",
        c.cold.method.name(),
        c.cold.resident_bytes_before,
        c.resident_bytes_after_open,
        c.misses,
        c.miss_latency_p50_us,
        c.miss_latency_p99_us,
        c.miss_latency_mean_us,
        c.hits,
        c.paired_device_p50_us.map_or(String::new(), |p50| format!(
            "; the device's own O_DIRECT reads of the data file, one after each miss: p50 {p50:.0} us"
        ))
    );
    let r = &report.batch_read;
    let _ = writeln!(
        md,
        "Cold batched read ({}): {} keys, {} bucket reads in {:.2} s = {:.0} reads/s ({:.0} keys/s).\n",
        r.backend, r.keys, r.bucket_reads, r.elapsed_s, r.bucket_reads_per_s, r.keys_per_s
    );
}

/// The cold blocks and the first and last warm ones.
fn markdown_blocks(md: &mut String, blocks: &[BlockFigures]) {
    let _ = writeln!(md, "| block | reads | read ms | hash tail ms | upper ms | commit ms | total ms | I/O bound ms | store B/slot | device B/slot |");
    let _ = writeln!(md, "|---|---|---|---|---|---|---|---|---|---|");
    let warm: Vec<&BlockFigures> = blocks.iter().filter(|b| b.phase == "warm").collect();
    for block in blocks
        .iter()
        .filter(|b| b.phase == "cold")
        .chain(warm.first().copied())
        .chain(warm.last().copied())
    {
        let _ = writeln!(
            md,
            "| {} | {} | {:.1} | {:.1} | {:.1} | {:.1} | {:.1} | {} | {:.0} | {} |",
            block.phase,
            block.buckets_read,
            block.read_ms,
            block.hash_ms,
            block.upper_ms,
            block.commit_ms,
            block.total_ms,
            block.io_bound_ms.map_or("-".into(), |v| format!("{v:.1}")),
            block.bytes_per_slot,
            block.device_bytes_written.map_or("-".into(), |v| format!(
                "{:.0}",
                v as f64 / block.writes as f64
            )),
        );
    }
    if warm.len() > 2 {
        let _ = writeln!(
            md,
            "\n(first and last of {} warm blocks shown; warm median total {:.1} ms)",
            warm.len(),
            median(warm.iter().map(|b| b.total_ms))
        );
    }
}

/// The in-memory reference's line, when it ran.
fn markdown_reference(md: &mut String, report: &StoreBenchReport) {
    let Some(r) = &report.reference else {
        return;
    };
    let _ = writeln!(
        md,
        "\nIn-memory reference (FastTree over the same pairs, the same blocks in the same order, its root equal to the store's after every block): built in {:.1} s, {:.0} MiB of heap; warm block median {:.1} ms (insert and root).",
        r.build_s,
        r.heap_bytes as f64 / f64::from(1 << 20),
        r.warm_median_ms
    );
}

/// The warm blocks' hashing against the cores' raw rate.
fn markdown_hashing(md: &mut String, report: &StoreBenchReport) {
    let rate = &report.hash_rate;
    let _ = writeln!(
        md,
        "\nRaw SHA-256 on the same cores ({} threads, 64-byte messages through the batch kernel): {:.2} M compressions/s.\n",
        rate.threads,
        rate.compressions_per_s / 1e6
    );
    if report.hashing_share.is_empty() {
        return;
    }
    let _ = writeln!(md, "| warm blocks | compressions (median) | per write | block ms (median) | achieved | share of raw |\n|---|---|---|---|---|---|");
    for row in &report.hashing_share {
        let _ = writeln!(
            md,
            "| {} | {} | {:.1} | {:.1} | {:.2} M/s | {:.2} |",
            row.what,
            row.compressions,
            row.compressions_per_write,
            row.block_ms,
            row.achieved_per_s / 1e6,
            row.share
        );
    }
}

/// The checkpoint and the targets.
fn markdown_checkpoint_and_targets(md: &mut String, report: &StoreBenchReport) {
    let k = &report.checkpoint;
    let _ = writeln!(
        md,
        "\nCheckpoint after the warm blocks: {:.0} ms, {} bytes; {} checkpoints the store took during them, {} bytes; {} updated slots: {:.0} bytes/slot amortized.\n",
        k.ms,
        k.bytes,
        k.checkpoints_during_blocks,
        k.bytes_during_blocks,
        k.slots_since_previous,
        k.bytes_per_slot
    );
    let _ = writeln!(md, "| target | goal | measured | met |\n|---|---|---|---|");
    for t in &report.targets {
        let met = match t.met {
            Some(true) => "yes",
            Some(false) => "no",
            None => "-",
        };
        let _ = writeln!(md, "| {} | {} | {} | {met} |", t.name, t.target, t.measured);
    }
}
