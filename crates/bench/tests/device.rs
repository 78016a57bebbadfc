//! The device probe on a small scratch file: structure, not speed.

// Test code: a failed unwrap is a failed test, and casts narrow test data.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::cast_possible_truncation
)]

use std::fs;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{SystemTime, UNIX_EPOCH};

use ubt_bench::measure::device::{probe, DeviceLimits, DeviceProbeOptions, PROBE_FILE_NAME};
use ubt_bench::BenchError;

/// A directory under the system's temporary directory, removed on drop.
struct TempDir(PathBuf);

impl TempDir {
    fn new(tag: &str) -> Self {
        static COUNTER: AtomicU64 = AtomicU64::new(0);
        let nanos = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map(|d| d.as_nanos())
            .unwrap_or(0);
        let path = std::env::temp_dir().join(format!(
            "ubt-bench-device-{tag}-{}-{nanos}-{}",
            std::process::id(),
            COUNTER.fetch_add(1, Ordering::Relaxed)
        ));
        fs::create_dir_all(&path).unwrap();
        TempDir(path)
    }

    fn path(&self) -> &Path {
        &self.0
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = fs::remove_dir_all(&self.0);
    }
}

fn small_options() -> DeviceProbeOptions {
    DeviceProbeOptions {
        file_bytes: 64 << 20,
        qd1_reads: 500,
        qd32_reads: 2_000,
        warmup_reads: 50,
        ..DeviceProbeOptions::default()
    }
}

/// Checks what holds whatever the device's speed.
fn check_sane(limits: &DeviceLimits, options: &DeviceProbeOptions) {
    assert_eq!(limits.file_bytes, options.file_bytes);
    assert_eq!(limits.read_block_bytes, 4096);
    assert_eq!(limits.qd1_reads, options.qd1_reads as u64);
    assert_eq!(limits.qd32_reads, options.qd32_reads as u64);
    assert_eq!(limits.qd32_queue_depth, 32);
    assert!(limits.qd1_latency_p50_us > 0.0);
    assert!(limits.qd1_latency_p50_us <= limits.qd1_latency_p99_us);
    assert!(limits.qd1_latency_p99_us <= limits.qd1_latency_max_us);
    assert!(limits.qd1_latency_mean_us > 0.0);
    assert!(limits.qd1_latency_mean_us <= limits.qd1_latency_max_us);
    assert!(limits.qd1_reads_per_s > 0.0 && limits.qd1_reads_per_s.is_finite());
    assert!(limits.qd32_reads_per_s > 0.0 && limits.qd32_reads_per_s.is_finite());
    assert!(limits.qd32_mb_per_s > 0.0);
    assert!(
        ["io_uring", "pread-threads"].contains(&limits.qd32_backend.as_str()),
        "backend named: {}",
        limits.qd32_backend
    );
    let json = serde_json::to_value(limits).unwrap();
    for field in [
        "qd1_latency_p50_us",
        "qd1_latency_p99_us",
        "qd1_reads_per_s",
        "qd32_reads_per_s",
        "qd32_backend",
        "seq_write_mb_per_s",
        "direct_io",
        "file_bytes",
    ] {
        assert!(json.get(field).is_some(), "JSON has {field}: {json}");
    }
}

#[test]
fn probe_measures_and_then_reuses_its_file() {
    let dir = TempDir::new("probe");
    let options = small_options();

    let first = probe(dir.path(), &options).unwrap();
    check_sane(&first, &options);
    assert!(first.file_created);
    assert!(first.seq_write_mb_per_s.is_some_and(|mb| mb > 0.0));
    let path = dir.path().join(PROBE_FILE_NAME);
    assert_eq!(first.path, path);
    assert_eq!(fs::metadata(&path).unwrap().len(), options.file_bytes);
    if !first.direct_io {
        assert!(!first.notes.is_empty(), "the fallback is explained");
    }

    let second = probe(dir.path(), &options).unwrap();
    check_sane(&second, &options);
    assert!(!second.file_created, "the file of the right size is reused");
    assert_eq!(second.seq_write_mb_per_s, None);

    // A different size rewrites it.
    let bigger = DeviceProbeOptions {
        file_bytes: 8 << 20,
        ..small_options()
    };
    let third = probe(dir.path(), &bigger).unwrap();
    check_sane(&third, &bigger);
    assert!(third.file_created);
    assert_eq!(fs::metadata(&path).unwrap().len(), 8 << 20);
}

#[test]
fn buffered_reads_and_threads_when_forced() {
    let dir = TempDir::new("fallback");
    let options = DeviceProbeOptions {
        allow_direct_io: false,
        allow_io_uring: false,
        ..small_options()
    };
    let limits = probe(dir.path(), &options).unwrap();
    check_sane(&limits, &options);
    assert!(!limits.direct_io);
    assert_eq!(limits.qd32_backend, "pread-threads");
    assert!(!limits.notes.is_empty());
}

#[test]
fn a_file_size_that_is_not_whole_blocks_is_refused() {
    let dir = TempDir::new("invalid");
    let options = DeviceProbeOptions {
        file_bytes: 4096 * 3 + 1,
        ..small_options()
    };
    let err = probe(dir.path(), &options).unwrap_err();
    assert!(matches!(err, BenchError::InvalidOptions { .. }), "{err}");
    assert!(!dir.path().join(PROBE_FILE_NAME).exists());
}
