//! The device's own limits, measured in the same run as the store's
//! figures, so that a figure such as "cold reads per second" can be read
//! against what the disk under it can do at all.
//!
//! [`probe`] writes (or reuses) a scratch file, then times random 4 KiB
//! reads at 4 KiB-aligned offsets, bypassing the page cache with
//! `O_DIRECT`:
//!
//! * **QD1**: one `pread` at a time; the latency of each read is recorded
//!   and reported as p50, p99, mean and max, with the reads per second.
//! * **QD32**: 32 reads in flight, through io_uring if the kernel allows
//!   it, else 32 threads each issuing blocking `pread`s; reported as reads
//!   per second (IOPS) and MB/s.
//!
//! Offsets come from a seeded splitmix64 generator, so two runs with the
//! same options read the same blocks; warm-up and timed phases use
//! different streams, so a timed phase does not re-read the blocks its
//! warm-up just read (a virtual disk's host may cache them).
//!
//! If the file system refuses `O_DIRECT` (`EINVAL`), reads are buffered
//! instead, with readahead disabled (`POSIX_FADV_RANDOM`) and the file
//! dropped from the page cache (`POSIX_FADV_DONTNEED`) before each timed
//! phase; [`DeviceLimits::direct_io`] is then `false`. On a file system
//! whose pages are its storage (tmpfs) this measures memory, not a disk.
//!
//! MB means 10^6 bytes throughout.
//!
//! This module is allowed `unsafe` for io_uring: pushing a read into the
//! submission queue hands the kernel a raw buffer pointer.

#![allow(unsafe_code)]

use std::fs::{self, File, OpenOptions};
use std::io::{self, Write};
use std::os::fd::AsRawFd;
use std::os::unix::fs::{FileExt, MetadataExt, OpenOptionsExt};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Barrier;
use std::time::{Duration, Instant};

use serde::{Deserialize, Serialize};

use crate::error::BenchError;
use crate::measure::cold::fadvise;
use crate::statistics::{quantile_sorted, QuantileMethod};
use ubt_spec::rng::SplitMix64;

/// The name of the scratch file [`probe`] creates in its directory.
pub const PROBE_FILE_NAME: &str = "device-probe.bin";

/// The default bytes per read, and the alignment of offsets, buffers and
/// every read size.
pub const READ_BLOCK_BYTES: usize = 4096;

/// The largest read size [`probe`] accepts.
pub const READ_BYTES_MAX: usize = 1 << 20;

/// Reads in flight in the QD32 phase.
pub const QUEUE_DEPTH: usize = 32;

/// The scratch file is written in chunks of this size.
const WRITE_CHUNK_BYTES: usize = 1 << 20;

/// One MB, as used in every `*_mb_per_s` figure.
const MB: f64 = 1e6;

/// Stream numbers of the generator, one per use.
const STREAM_FILL: u64 = 1;
const STREAM_QD1_WARMUP: u64 = 2;
const STREAM_QD1: u64 = 3;
const STREAM_QD32_WARMUP: u64 = 4;
const STREAM_QD32: u64 = 5;
const STREAM_PAIRED: u64 = 6;

/// What [`probe`] measures and how much.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DeviceProbeOptions {
    /// Size of the scratch file in bytes; a non-zero multiple of 4096.
    /// Large enough that the device's own caches cannot hold it.
    pub file_bytes: u64,
    /// Timed reads in the QD1 phase.
    pub qd1_reads: usize,
    /// Timed reads in the QD32 phase.
    pub qd32_reads: usize,
    /// Untimed reads before each timed phase.
    pub warmup_reads: usize,
    /// Seed of the generator behind the file's contents and the offsets.
    pub seed: u64,
    /// Try `O_DIRECT` (falling back to buffered reads if refused). `false`
    /// forces the buffered fallback.
    pub allow_direct_io: bool,
    /// Try io_uring for QD32 (falling back to threads if unavailable).
    /// `false` forces the thread pool.
    pub allow_io_uring: bool,
    /// Bytes per read: a multiple of [`READ_BLOCK_BYTES`] up to
    /// [`READ_BYTES_MAX`] that divides `file_bytes`; reads start at
    /// multiples of it.
    pub read_bytes: usize,
}

impl Default for DeviceProbeOptions {
    /// 1 GiB file, 4 KiB reads, 4,000 QD1 reads, 40,000 QD32 reads, 300
    /// warm-up reads, `O_DIRECT` and io_uring where possible.
    fn default() -> Self {
        DeviceProbeOptions {
            file_bytes: 1 << 30,
            qd1_reads: 4_000,
            qd32_reads: 40_000,
            warmup_reads: 300,
            seed: 0x5eed_0ddb_a11d_e71c,
            allow_direct_io: true,
            allow_io_uring: true,
            read_bytes: READ_BLOCK_BYTES,
        }
    }
}

/// The device's limits as measured by [`probe`].
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct DeviceLimits {
    /// The scratch file that was read.
    pub path: PathBuf,
    /// Size of the scratch file in bytes.
    pub file_bytes: u64,
    /// Bytes per read (4096 unless the options chose another size).
    pub read_block_bytes: u64,
    /// Whether the scratch file was written in this run (else an existing
    /// file of the right size was reused).
    pub file_created: bool,
    /// Sequential write bandwidth of creating the file: bytes written
    /// divided by the time of the writes plus the final `fsync`, in MB/s
    /// (10^6 bytes). `None` when the file was reused.
    pub seq_write_mb_per_s: Option<f64>,
    /// Whether reads bypassed the page cache with `O_DIRECT`. `false`: the
    /// file system refused it (or the options forbade it) and reads were
    /// buffered after dropping the file from the cache.
    pub direct_io: bool,
    /// Untimed reads before each timed phase.
    pub warmup_reads: u64,
    /// Timed reads in the QD1 phase.
    pub qd1_reads: u64,
    /// Median latency of one QD1 read, in microseconds.
    pub qd1_latency_p50_us: f64,
    /// 99th-percentile latency of one QD1 read (nearest rank), in
    /// microseconds.
    pub qd1_latency_p99_us: f64,
    /// Mean latency of one QD1 read, in microseconds.
    pub qd1_latency_mean_us: f64,
    /// Slowest QD1 read, in microseconds.
    pub qd1_latency_max_us: f64,
    /// QD1 reads completed per second of the phase's wall-clock time.
    pub qd1_reads_per_s: f64,
    /// Wall-clock time of the QD1 phase, in seconds.
    pub qd1_elapsed_s: f64,
    /// Reads in flight in the QD32 phase (32).
    pub qd32_queue_depth: u64,
    /// Timed reads in the QD32 phase.
    pub qd32_reads: u64,
    /// How the QD32 reads were issued: `io_uring` or `pread-threads`.
    pub qd32_backend: String,
    /// QD32 reads completed per second (IOPS).
    pub qd32_reads_per_s: f64,
    /// QD32 read bandwidth, in MB/s (10^6 bytes).
    pub qd32_mb_per_s: f64,
    /// Wall-clock time of the QD32 phase, in seconds.
    pub qd32_elapsed_s: f64,
    /// Fallbacks taken and other remarks, in plain words.
    pub notes: Vec<String>,
}

/// Stream `stream` of `seed` of the splitmix64 generator: streams of one
/// seed are unrelated.
fn rng_stream(seed: u64, stream: u64) -> SplitMix64 {
    let mut mixer = SplitMix64(seed ^ stream.wrapping_mul(0xD1B5_4A32_D192_ED03));
    SplitMix64(mixer.next_u64())
}

/// A uniformly chosen offset among `slots` aligned slots of `read_bytes`.
fn random_offset(rng: &mut SplitMix64, slots: u64, read_bytes: usize) -> u64 {
    rng.below(slots) * read_bytes as u64
}

/// A zeroed buffer whose start is aligned to [`READ_BLOCK_BYTES`], as
/// `O_DIRECT` requires, carved out of a slightly larger `Vec`.
struct AlignedBuf {
    storage: Vec<u8>,
    start: usize,
    len: usize,
}

impl AlignedBuf {
    fn new(len: usize) -> Self {
        let storage = vec![0u8; len + READ_BLOCK_BYTES];
        let addr = storage.as_ptr() as usize;
        let start = (READ_BLOCK_BYTES - addr % READ_BLOCK_BYTES) % READ_BLOCK_BYTES;
        AlignedBuf {
            storage,
            start,
            len,
        }
    }

    fn as_mut_slice(&mut self) -> &mut [u8] {
        &mut self.storage[self.start..self.start + self.len]
    }
}

/// Measures the device under `dir` (see the module documentation): writes
/// or reuses `dir/device-probe.bin` of `options.file_bytes`, then times
/// QD1 and QD32 random reads of `options.read_bytes`. `dir` is created if missing; the
/// scratch file is left in place for reuse (delete it, or `dir`, when
/// done).
pub fn probe(dir: &Path, options: &DeviceProbeOptions) -> Result<DeviceLimits, BenchError> {
    check_options(options)?;
    fs::create_dir_all(dir).map_err(|e| BenchError::io_at("create directory", dir, e))?;
    let path = dir.join(PROBE_FILE_NAME);
    let mut notes = Vec::new();

    let seq_write_mb_per_s = prepare_file(dir, &path, options)?;
    let file_created = seq_write_mb_per_s.is_some();
    if !file_created {
        notes.push(format!(
            "reused the existing {PROBE_FILE_NAME}; sequential write not measured"
        ));
    }
    let read_bytes = options.read_bytes;
    let slots = options.file_bytes / read_bytes as u64;

    let (file, direct_io) = open_for_reads(&path, options.allow_direct_io, &mut notes)?;
    let reader = Reader {
        file: &file,
        path: &path,
        slots,
        read_bytes,
        direct_io,
    };

    // QD1.
    let mut rng = rng_stream(options.seed, STREAM_QD1_WARMUP);
    let mut buf = AlignedBuf::new(read_bytes);
    for _ in 0..options.warmup_reads {
        reader.read_one(
            buf.as_mut_slice(),
            random_offset(&mut rng, slots, read_bytes),
        )?;
    }
    reader.make_cold()?;
    let mut rng = rng_stream(options.seed, STREAM_QD1);
    let mut latencies_us = Vec::with_capacity(options.qd1_reads);
    let start = Instant::now();
    for _ in 0..options.qd1_reads {
        let offset = random_offset(&mut rng, slots, read_bytes);
        let t0 = Instant::now();
        reader.read_one(buf.as_mut_slice(), offset)?;
        latencies_us.push(t0.elapsed().as_secs_f64() * 1e6);
    }
    let qd1_elapsed = start.elapsed();
    latencies_us.sort_by(f64::total_cmp);
    let qd1_latency_mean_us = latencies_us.iter().sum::<f64>() / latencies_us.len() as f64;

    // QD32.
    let (qd32_backend, qd32_elapsed) = reader.qd32(options, &mut notes)?;

    let qd1_s = qd1_elapsed.as_secs_f64();
    let qd32_s = qd32_elapsed.as_secs_f64();
    let qd32_reads_per_s = options.qd32_reads as f64 / qd32_s;
    Ok(DeviceLimits {
        path,
        file_bytes: options.file_bytes,
        read_block_bytes: read_bytes as u64,
        file_created,
        seq_write_mb_per_s,
        direct_io,
        warmup_reads: options.warmup_reads as u64,
        qd1_reads: options.qd1_reads as u64,
        qd1_latency_p50_us: quantile_sorted(&latencies_us, 0.5, QuantileMethod::NearestRank),
        qd1_latency_p99_us: quantile_sorted(&latencies_us, 0.99, QuantileMethod::NearestRank),
        qd1_latency_mean_us,
        qd1_latency_max_us: latencies_us.last().copied().unwrap_or(0.0),
        qd1_reads_per_s: options.qd1_reads as f64 / qd1_s,
        qd1_elapsed_s: qd1_s,
        qd32_queue_depth: QUEUE_DEPTH as u64,
        qd32_reads: options.qd32_reads as u64,
        qd32_backend: qd32_backend.to_string(),
        qd32_reads_per_s,
        qd32_mb_per_s: qd32_reads_per_s * read_bytes as f64 / MB,
        qd32_elapsed_s: qd32_s,
        notes,
    })
}

fn check_options(options: &DeviceProbeOptions) -> Result<(), BenchError> {
    let invalid = |what: String| Err(BenchError::InvalidOptions { what });
    if options.file_bytes == 0 || !options.file_bytes.is_multiple_of(READ_BLOCK_BYTES as u64) {
        return invalid(format!(
            "file_bytes = {} is not a non-zero multiple of {READ_BLOCK_BYTES}",
            options.file_bytes
        ));
    }
    let read_bytes = options.read_bytes;
    if read_bytes == 0
        || !read_bytes.is_multiple_of(READ_BLOCK_BYTES)
        || read_bytes > READ_BYTES_MAX
        || !options.file_bytes.is_multiple_of(read_bytes as u64)
    {
        return invalid(format!(
            "read_bytes = {read_bytes} is not a multiple of {READ_BLOCK_BYTES} up to \
             {READ_BYTES_MAX} dividing file_bytes = {}",
            options.file_bytes
        ));
    }
    if options.qd1_reads == 0 || options.qd32_reads == 0 {
        return invalid("qd1_reads and qd32_reads must be at least 1".to_string());
    }
    Ok(())
}

/// Reuses `path` if it is a fully allocated regular file of the right size;
/// otherwise writes it sequentially with pseudo-random bytes and fsyncs it.
/// Returns the write bandwidth in MB/s if it wrote the file. Either way the
/// file's pages are then dropped from the page cache.
fn prepare_file(
    dir: &Path,
    path: &Path,
    options: &DeviceProbeOptions,
) -> Result<Option<f64>, BenchError> {
    let reusable = match fs::metadata(path) {
        // Fully allocated: a sparse file would read holes, not the disk.
        Ok(meta) => {
            meta.is_file() && meta.len() == options.file_bytes && meta.blocks() * 512 >= meta.len()
        }
        Err(e) if e.kind() == io::ErrorKind::NotFound => false,
        Err(e) => return Err(BenchError::io_at("stat", path, e)),
    };
    let mb_per_s = if reusable {
        None
    } else {
        Some(write_file(path, options)?)
    };
    if mb_per_s.is_some() {
        let handle = File::open(dir).map_err(|e| BenchError::io_at("open", dir, e))?;
        handle
            .sync_all()
            .map_err(|e| BenchError::io_at("fsync", dir, e))?;
    }
    // Give back the page cache the write filled; reads bypass it anyway
    // (or drop it again before timing, without O_DIRECT).
    let file = File::open(path).map_err(|e| BenchError::io_at("open", path, e))?;
    fadvise(&file, libc::POSIX_FADV_DONTNEED)
        .map_err(|e| BenchError::io_at("posix_fadvise(DONTNEED)", path, e))?;
    Ok(mb_per_s)
}

/// Writes the scratch file; returns MB/s of the writes plus the fsync
/// (generating the bytes is not timed).
fn write_file(path: &Path, options: &DeviceProbeOptions) -> Result<f64, BenchError> {
    let mut file = OpenOptions::new()
        .write(true)
        .create(true)
        .truncate(true)
        .open(path)
        .map_err(|e| BenchError::io_at("create", path, e))?;
    let mut rng = rng_stream(options.seed, STREAM_FILL);
    let mut chunk = vec![0u8; WRITE_CHUNK_BYTES];
    let mut remaining = options.file_bytes;
    let mut timed = Duration::ZERO;
    while remaining > 0 {
        let len =
            usize::try_from(remaining).map_or(WRITE_CHUNK_BYTES, |r| r.min(WRITE_CHUNK_BYTES));
        rng.fill(&mut chunk[..len]);
        let t0 = Instant::now();
        file.write_all(&chunk[..len])
            .map_err(|e| BenchError::io_at("write", path, e))?;
        timed += t0.elapsed();
        remaining -= len as u64;
    }
    let t0 = Instant::now();
    file.sync_all()
        .map_err(|e| BenchError::io_at("fsync", path, e))?;
    timed += t0.elapsed();
    Ok(options.file_bytes as f64 / MB / timed.as_secs_f64())
}

/// Opens `path` for reading with `O_DIRECT` if allowed and supported,
/// checked with one read; else buffered with readahead disabled. Returns
/// the file and whether it is direct.
fn open_for_reads(
    path: &Path,
    allow_direct_io: bool,
    notes: &mut Vec<String>,
) -> Result<(File, bool), BenchError> {
    if allow_direct_io {
        match OpenOptions::new()
            .read(true)
            .custom_flags(libc::O_DIRECT)
            .open(path)
        {
            Ok(file) => {
                let mut buf = AlignedBuf::new(READ_BLOCK_BYTES);
                match file.read_exact_at(buf.as_mut_slice(), 0) {
                    Ok(()) => return Ok((file, true)),
                    Err(e) if e.raw_os_error() == Some(libc::EINVAL) => notes.push(format!(
                        "O_DIRECT read refused ({e}): buffered reads after \
                         posix_fadvise(DONTNEED), readahead off (POSIX_FADV_RANDOM)"
                    )),
                    Err(e) => return Err(BenchError::io_at("O_DIRECT read", path, e)),
                }
            }
            Err(e) if e.raw_os_error() == Some(libc::EINVAL) => notes.push(format!(
                "O_DIRECT open refused ({e}): buffered reads after \
                 posix_fadvise(DONTNEED), readahead off (POSIX_FADV_RANDOM)"
            )),
            Err(e) => return Err(BenchError::io_at("open (O_DIRECT)", path, e)),
        }
    } else {
        notes.push(
            "O_DIRECT not tried (options): buffered reads after posix_fadvise(DONTNEED), \
             readahead off (POSIX_FADV_RANDOM)"
                .to_string(),
        );
    }
    let file = File::open(path).map_err(|e| BenchError::io_at("open", path, e))?;
    fadvise(&file, libc::POSIX_FADV_RANDOM)
        .map_err(|e| BenchError::io_at("posix_fadvise(RANDOM)", path, e))?;
    Ok((file, false))
}

/// The open scratch file and what reading it needs.
struct Reader<'a> {
    file: &'a File,
    path: &'a Path,
    /// Aligned places a read can start at.
    slots: u64,
    read_bytes: usize,
    direct_io: bool,
}

impl Reader<'_> {
    /// One blocking read of `buf.len()` bytes.
    fn read_one(&self, buf: &mut [u8], offset: u64) -> Result<(), BenchError> {
        self.file
            .read_exact_at(buf, offset)
            .map_err(|e| read_error(self.path, buf.len(), offset, e))
    }

    /// A random aligned offset of one read.
    fn next_offset(&self, rng: &mut SplitMix64) -> u64 {
        random_offset(rng, self.slots, self.read_bytes)
    }

    /// Without `O_DIRECT`, drops the file from the page cache so that the
    /// timed phase reads the device, not the blocks its warm-up cached.
    fn make_cold(&self) -> Result<(), BenchError> {
        if self.direct_io {
            return Ok(());
        }
        fadvise(self.file, libc::POSIX_FADV_DONTNEED)
            .map_err(|e| BenchError::io_at("posix_fadvise(DONTNEED)", self.path, e))
    }

    /// The QD32 phase: warm-up, then the timed reads. Returns the backend's
    /// name and the timed phase's wall-clock time.
    fn qd32(
        &self,
        options: &DeviceProbeOptions,
        notes: &mut Vec<String>,
    ) -> Result<(&'static str, Duration), BenchError> {
        #[cfg(target_os = "linux")]
        if options.allow_io_uring {
            #[allow(clippy::cast_possible_truncation)] // a constant, 32
            let entries = QUEUE_DEPTH as u32;
            match io_uring::IoUring::new(entries) {
                Ok(mut ring) => {
                    let mut rng = rng_stream(options.seed, STREAM_QD32_WARMUP);
                    match self.uring_reads(&mut ring, &mut rng, options.warmup_reads) {
                        Ok(_) => {
                            self.make_cold()?;
                            let mut rng = rng_stream(options.seed, STREAM_QD32);
                            let elapsed =
                                self.uring_reads(&mut ring, &mut rng, options.qd32_reads)?;
                            return Ok(("io_uring", elapsed));
                        }
                        Err(e) => notes.push(format!(
                            "io_uring reads failed in the warm-up ({e}): \
                             {QUEUE_DEPTH} pread threads instead"
                        )),
                    }
                }
                Err(e) => notes.push(format!(
                    "io_uring unavailable ({e}): {QUEUE_DEPTH} pread threads instead"
                )),
            }
        }
        #[cfg(not(target_os = "linux"))]
        if options.allow_io_uring {
            notes.push(format!(
                "io_uring exists only on Linux: {QUEUE_DEPTH} pread threads instead"
            ));
        }
        self.pool_reads(options.seed, STREAM_QD32_WARMUP, options.warmup_reads)?;
        self.make_cold()?;
        let elapsed = self.pool_reads(options.seed, STREAM_QD32, options.qd32_reads)?;
        Ok(("pread-threads", elapsed))
    }

    /// `count` reads with up to [`QUEUE_DEPTH`] in flight through `ring`,
    /// each of the next block of `rng`. Returns the time from the first
    /// submission to the last completion. On a failed read, stops issuing,
    /// waits for the reads in flight, and returns the first error.
    #[cfg(target_os = "linux")]
    fn uring_reads(
        &self,
        ring: &mut io_uring::IoUring,
        rng: &mut SplitMix64,
        count: usize,
    ) -> Result<Duration, BenchError> {
        use io_uring::{opcode, types};

        let depth = QUEUE_DEPTH.min(count);
        let read_bytes = self.read_bytes;
        let mut buffers = AlignedBuf::new(depth * read_bytes);
        // One read-sized slot per read in flight; the slot index is the
        // read's user data. The slots are only touched by the kernel while
        // the reads are in flight, never through `buffers`.
        let slots: Vec<*mut u8> = buffers
            .as_mut_slice()
            .chunks_exact_mut(read_bytes)
            .map(|slot| slot.as_mut_ptr())
            .collect();
        let fd = types::Fd(self.file.as_raw_fd());
        let mut offsets = vec![0u64; depth];
        let mut issued = 0usize;
        let mut in_flight = 0usize;
        let mut first_error: Option<BenchError> = None;
        let mut completions: Vec<(usize, i32)> = Vec::with_capacity(depth);

        let start = Instant::now();
        // Queues the next read into `slot`; false if the queue was full.
        let mut push = |ring: &mut io_uring::IoUring, slot: usize, offsets: &mut [u64]| {
            let offset = self.next_offset(rng);
            offsets[slot] = offset;
            #[allow(clippy::cast_possible_truncation)] // at most READ_BYTES_MAX
            let entry = opcode::Read::new(fd, slots[slot], read_bytes as u32)
                .offset(offset)
                .build()
                .user_data(slot as u64);
            // SAFETY: `slots[slot]` points to `read_bytes` bytes of
            // `buffers`, which nobody else reads or writes while this read
            // is in flight (each slot carries at most one read) and which
            // outlives the read: this function waits for every read in
            // flight before returning, and leaks `buffers` if it cannot.
            // The file descriptor stays open for the whole function
            // (borrowed from `self.file`).
            unsafe { ring.submission().push(&entry) }.is_ok()
        };

        for slot in 0..depth {
            if !push(ring, slot, &mut offsets) {
                first_error = Some(BenchError::io_at(
                    "io_uring submission",
                    self.path,
                    io::Error::other("submission queue full"),
                ));
                break;
            }
            issued += 1;
            in_flight += 1;
        }
        while in_flight > 0 {
            if let Err(e) = ring.submit_and_wait(1) {
                match e.raw_os_error() {
                    Some(libc::EINTR | libc::EAGAIN | libc::EBUSY) => continue,
                    _ => {
                        // Reads may still be in flight into `buffers`: keep
                        // the memory alive for good rather than free it
                        // under the kernel.
                        std::mem::forget(buffers);
                        return Err(BenchError::io_at("io_uring submit", self.path, e));
                    }
                }
            }
            completions.clear();
            completions.extend(ring.completion().map(|cqe| {
                #[allow(clippy::cast_possible_truncation)] // a slot index this code queued
                let slot = cqe.user_data() as usize;
                (slot, cqe.result())
            }));
            for &(slot, result) in &completions {
                in_flight -= 1;
                if result < 0 {
                    let e = io::Error::from_raw_os_error(-result);
                    first_error.get_or_insert(read_error(self.path, read_bytes, offsets[slot], e));
                } else if result as usize != read_bytes {
                    let e = io::Error::new(
                        io::ErrorKind::UnexpectedEof,
                        format!("short read: {result} of {read_bytes} bytes"),
                    );
                    first_error.get_or_insert(read_error(self.path, read_bytes, offsets[slot], e));
                }
                if first_error.is_none() && issued < count {
                    if push(ring, slot, &mut offsets) {
                        issued += 1;
                        in_flight += 1;
                    } else {
                        first_error = Some(BenchError::io_at(
                            "io_uring submission",
                            self.path,
                            io::Error::other("submission queue full"),
                        ));
                    }
                }
            }
        }
        let elapsed = start.elapsed();
        drop(buffers);
        match first_error {
            Some(e) => Err(e),
            None => Ok(elapsed),
        }
    }

    /// `count` reads by [`QUEUE_DEPTH`] threads, each issuing blocking
    /// `pread`s of blocks from its own stream of the generator. Returns the
    /// time from the release of the threads to the last one finishing.
    fn pool_reads(&self, seed: u64, stream: u64, count: usize) -> Result<Duration, BenchError> {
        let next = AtomicUsize::new(0);
        let failed = AtomicBool::new(false);
        let start_line = Barrier::new(QUEUE_DEPTH + 1);
        std::thread::scope(|scope| {
            let workers: Vec<_> = (0..QUEUE_DEPTH as u64)
                .map(|thread| {
                    let (next, failed, start_line) = (&next, &failed, &start_line);
                    scope.spawn(move || -> Result<(), BenchError> {
                        let mut rng = rng_stream(seed, stream.wrapping_mul(1 << 16) + thread);
                        let mut buf = AlignedBuf::new(self.read_bytes);
                        start_line.wait();
                        while !failed.load(Ordering::Relaxed)
                            && next.fetch_add(1, Ordering::Relaxed) < count
                        {
                            if let Err(e) =
                                self.read_one(buf.as_mut_slice(), self.next_offset(&mut rng))
                            {
                                failed.store(true, Ordering::Relaxed);
                                return Err(e);
                            }
                        }
                        Ok(())
                    })
                })
                .collect();
            start_line.wait();
            let start = Instant::now();
            let mut result = Ok(());
            for worker in workers {
                let outcome = worker
                    .join()
                    .unwrap_or_else(|panic| std::panic::resume_unwind(panic));
                if result.is_ok() {
                    result = outcome;
                }
            }
            result.map(|()| start.elapsed())
        })
    }
}

/// The device's QD1 latency measured beside another measurement, read
/// for read: random `O_DIRECT` reads of an existing file (a
/// database's own data file), timed one at a time between the other
/// measurement's operations. A probe taken minutes earlier on a virtual
/// disk whose latency drifts by a third within a run says less about
/// those operations than reads of the same file, on the same device, in
/// the same seconds.
pub struct PairedDeviceReads {
    file: File,
    path: PathBuf,
    /// Blocks a read can start at (every block from which `buf.len()`
    /// bytes lie inside the file).
    starts: u64,
    buf: AlignedBuf,
    rng: SplitMix64,
}

impl PairedDeviceReads {
    /// Opens `path` for direct reads of `read_bytes` (a multiple of
    /// [`READ_BLOCK_BYTES`], as a database's bucket extents are) starting
    /// at any block; `None` if it holds less than one read or its file
    /// system refuses `O_DIRECT` (the reads would then measure the page
    /// cache, not the device).
    pub fn open(
        path: &Path,
        seed: u64,
        read_bytes: usize,
    ) -> Result<Option<PairedDeviceReads>, BenchError> {
        if read_bytes == 0 || !read_bytes.is_multiple_of(READ_BLOCK_BYTES) {
            return Err(BenchError::InvalidOptions {
                what: format!("paired reads of {read_bytes} bytes: not whole blocks"),
            });
        }
        let len = fs::metadata(path)
            .map_err(|e| BenchError::io_at("stat", path, e))?
            .len();
        let blocks = len / READ_BLOCK_BYTES as u64;
        let read_blocks = (read_bytes / READ_BLOCK_BYTES) as u64;
        if blocks < read_blocks {
            return Ok(None);
        }
        let mut notes = Vec::new();
        let (file, direct) = open_for_reads(path, true, &mut notes)?;
        if !direct {
            return Ok(None);
        }
        Ok(Some(PairedDeviceReads {
            file,
            path: path.to_path_buf(),
            starts: blocks - read_blocks + 1,
            buf: AlignedBuf::new(read_bytes),
            rng: rng_stream(seed, STREAM_PAIRED),
        }))
    }

    /// Bytes per read.
    pub fn read_bytes(&self) -> usize {
        self.buf.len
    }

    /// One read at a random block; returns its latency in microseconds.
    pub fn time_one(&mut self) -> Result<f64, BenchError> {
        let offset = random_offset(&mut self.rng, self.starts, READ_BLOCK_BYTES);
        let started = Instant::now();
        let buf = self.buf.as_mut_slice();
        self.file
            .read_exact_at(buf, offset)
            .map_err(|e| read_error(&self.path, buf.len(), offset, e))?;
        Ok(started.elapsed().as_secs_f64() * 1e6)
    }
}

fn read_error(path: &Path, read_bytes: usize, offset: u64, e: io::Error) -> BenchError {
    BenchError::io(
        format!(
            "read {read_bytes} bytes at offset {offset} of {}",
            path.display()
        ),
        e,
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn offsets_are_aligned_inside_the_file_and_reproducible() {
        let mut a = rng_stream(7, STREAM_QD1);
        let mut b = rng_stream(7, STREAM_QD1);
        let mut c = rng_stream(7, STREAM_QD32);
        let mut differs = false;
        for _ in 0..10_000 {
            let offset = random_offset(&mut a, 1000, 8192);
            assert_eq!(offset % 8192, 0);
            assert!(offset < 1000 * 8192);
            assert_eq!(offset, random_offset(&mut b, 1000, 8192));
            differs |= offset != random_offset(&mut c, 1000, 8192);
        }
        assert!(differs, "streams differ");
    }

    #[test]
    fn aligned_buffers_are_aligned() {
        for len in [4096, 8192, 32 * 4096] {
            let mut buf = AlignedBuf::new(len);
            let slice = buf.as_mut_slice();
            assert_eq!(slice.len(), len);
            assert_eq!(slice.as_ptr() as usize % READ_BLOCK_BYTES, 0);
        }
    }

    #[test]
    fn paired_reads_read_whole_reads_of_the_file_or_decline() {
        let dir = std::env::temp_dir().join(format!("ubt-paired-{}", std::process::id()));
        fs::create_dir_all(&dir).unwrap();
        let small = dir.join("small");
        fs::write(&small, [7u8; 4000]).unwrap();
        assert!(PairedDeviceReads::open(&small, 1, READ_BLOCK_BYTES)
            .unwrap()
            .is_none());
        let file = dir.join("file");
        // Block i holds the byte i, so a read shows where it started.
        let mut contents: Vec<u8> = (0..16u8).flat_map(|i| [i; READ_BLOCK_BYTES]).collect();
        contents.extend_from_slice(&[99; 100]);
        fs::write(&file, &contents).unwrap();
        assert!(PairedDeviceReads::open(&file, 1, 17 * READ_BLOCK_BYTES)
            .unwrap()
            .is_none());
        assert!(PairedDeviceReads::open(&file, 1, 5000).is_err());
        for read_blocks in [1, 3, 16] {
            match PairedDeviceReads::open(&file, 1, read_blocks * READ_BLOCK_BYTES).unwrap() {
                Some(mut reads) => {
                    assert_eq!(reads.read_bytes(), read_blocks * READ_BLOCK_BYTES);
                    assert_eq!(reads.starts, (16 - read_blocks + 1) as u64);
                    for _ in 0..50 {
                        let micros = reads.time_one().unwrap();
                        assert!(micros.is_finite() && micros > 0.0);
                        let read = reads.buf.as_mut_slice();
                        let first = read[0] as usize;
                        assert!(first + read_blocks <= 16, "inside the file's whole blocks");
                        let expected = &contents[first * READ_BLOCK_BYTES..][..read.len()];
                        assert_eq!(read, expected, "whole blocks from a block boundary");
                    }
                }
                None => eprintln!("skipping: the temporary directory refuses O_DIRECT"),
            }
        }
        assert!(PairedDeviceReads::open(&dir.join("missing"), 1, READ_BLOCK_BYTES).is_err());
        fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn read_sizes_are_checked() {
        let with = |read_bytes| DeviceProbeOptions {
            read_bytes,
            ..DeviceProbeOptions::default()
        };
        assert!(check_options(&with(READ_BLOCK_BYTES)).is_ok());
        assert!(
            check_options(&with(3 * READ_BLOCK_BYTES)).is_err(),
            "does not divide 1 GiB"
        );
        assert!(check_options(&with(16 * READ_BLOCK_BYTES)).is_ok());
        for bad in [0, 1000, 4097, 2 * READ_BYTES_MAX] {
            assert!(check_options(&with(bad)).is_err(), "{bad}");
        }
    }
}
