//! The cold-cache protocol on real files: residency seen by `mincore`,
//! dropped by `drop_caches` (as root) or `POSIX_FADV_DONTNEED`.

// Test code: a failed unwrap is a failed test, and casts narrow test data.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::cast_possible_truncation
)]

use std::fs::{self, File};
use std::io::{Read, Write};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Mutex;
use std::time::{SystemTime, UNIX_EPOCH};

use ubt_bench::measure::cold::{
    drop_page_cache, expand_files, fadvise_dontneed, make_cold, resident_bytes, ColdMethod,
};
use ubt_bench::BenchError;

/// Dropping the page cache as root empties every file's cache, so the
/// tests of this binary that expect residency must not overlap it.
static CACHE_LOCK: Mutex<()> = Mutex::new(());

fn lock() -> std::sync::MutexGuard<'static, ()> {
    CACHE_LOCK
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner())
}

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
            "ubt-bench-cold-{tag}-{}-{nanos}-{}",
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

/// Writes `len` non-zero pseudo-random bytes to `path`, fsynced.
fn write_file(path: &Path, len: usize) {
    let mut state = 0x1234_5678_9abc_def0u64;
    let mut data = vec![0u8; len];
    for chunk in data.chunks_mut(8) {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        chunk.copy_from_slice(&(state | 1).to_le_bytes()[..chunk.len()]);
    }
    let mut file = File::create(path).unwrap();
    file.write_all(&data).unwrap();
    file.sync_all().unwrap();
}

/// Reads all of `path`, bringing it into the page cache.
fn read_all(path: &Path) -> usize {
    let mut data = Vec::new();
    File::open(path).unwrap().read_to_end(&mut data).unwrap();
    data.len()
}

#[test]
fn make_cold_empties_the_cache_of_a_resident_file() {
    let _guard = lock();
    let dir = TempDir::new("make-cold");
    let path = dir.path().join("data.bin");
    write_file(&path, 16 << 20);
    assert_eq!(read_all(&path), 16 << 20);
    let files = vec![path.clone()];

    let resident = resident_bytes(&files).unwrap();
    assert!(resident > 0, "a file just read is resident");
    assert!(resident <= 16 << 20, "capped at the file's length");

    let report = make_cold(&files).unwrap();
    assert_eq!(report.files, 1);
    assert!(report.resident_bytes_before > 0);
    assert_eq!(report.resident_bytes_after, 0, "{report:?}");
    assert_eq!(resident_bytes(&files).unwrap(), 0);

    let json = serde_json::to_value(report).unwrap();
    assert!(json["method"] == "drop_caches" || json["method"] == "fadvise_dontneed");
    assert!(json["resident_bytes_after"] == 0);
}

#[test]
fn fadvise_alone_empties_the_cache_of_a_clean_file() {
    let _guard = lock();
    let dir = TempDir::new("fadvise");
    let path = dir.path().join("data.bin");
    write_file(&path, 8 << 20);
    read_all(&path);
    let files = vec![path];
    assert!(resident_bytes(&files).unwrap() > 0);
    fadvise_dontneed(&files).unwrap();
    assert_eq!(resident_bytes(&files).unwrap(), 0);
}

#[test]
fn drop_page_cache_names_its_method() {
    let _guard = lock();
    let dir = TempDir::new("drop");
    let path = dir.path().join("data.bin");
    write_file(&path, 1 << 20);
    let method = drop_page_cache(std::slice::from_ref(&path)).unwrap();
    // drop_caches needs root: the owner of /proc/self is our effective uid.
    let root = fs::metadata("/proc/self")
        .map(|m| std::os::unix::fs::MetadataExt::uid(&m) == 0)
        .unwrap_or(false);
    if !root {
        assert_eq!(method, ColdMethod::FadviseDontneed);
    }
    assert_eq!(resident_bytes(&[path]).unwrap(), 0);
}

#[test]
fn residency_is_capped_at_the_file_length_and_empty_files_count_zero() {
    let _guard = lock();
    let dir = TempDir::new("small");
    let small = dir.path().join("small.bin");
    write_file(&small, 100);
    read_all(&small);
    let empty = dir.path().join("empty.bin");
    File::create(&empty).unwrap();

    assert_eq!(resident_bytes(std::slice::from_ref(&empty)).unwrap(), 0);
    assert_eq!(resident_bytes(&[small, empty]).unwrap(), 100);
}

#[test]
fn directories_expand_to_the_regular_files_below_them() {
    let _guard = lock();
    let dir = TempDir::new("expand");
    let nested = dir.path().join("a").join("b");
    fs::create_dir_all(&nested).unwrap();
    let top = dir.path().join("top.bin");
    let deep = nested.join("deep.bin");
    write_file(&top, 5000);
    write_file(&deep, 3000);

    let files = expand_files(&[dir.path().to_path_buf(), top.clone()]).unwrap();
    assert_eq!(files, vec![deep.clone(), top.clone()]);

    read_all(&top);
    read_all(&deep);
    assert_eq!(
        resident_bytes(&[dir.path().to_path_buf()]).unwrap(),
        8000,
        "both files, whole, through their directory"
    );
    let report = make_cold(&[dir.path().to_path_buf()]).unwrap();
    assert_eq!(report.files, 2);
    assert_eq!(report.resident_bytes_after, 0);
}

#[test]
fn a_missing_file_is_an_error_naming_it() {
    let dir = TempDir::new("missing");
    let path = dir.path().join("absent.bin");
    let err = resident_bytes(std::slice::from_ref(&path)).unwrap_err();
    assert!(matches!(err, BenchError::Io { .. }));
    assert!(
        err.to_string().contains("absent.bin"),
        "message names the file: {err}"
    );
}
