//! `make_warm` reads files into the page cache without holding them in
//! the process's memory (the store benchmark once read its whole data
//! file into a `Vec` to warm the cache: 8.9 GB of resident memory at
//! 100M entries). Its own test binary, so no other test's allocations
//! move the peak it checks.

// Test code: a failed unwrap is a failed test.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::io::Write;

use common::TempDir;
use ubt_bench::measure::cold::make_warm;
use ubt_bench::measure::memory::peak_resident_bytes;

const FILE_BYTES: usize = 256 << 20;

#[test]
fn warming_a_large_file_does_not_grow_the_resident_set() {
    let dir = TempDir::new("warm");
    let path = dir.0.join("data");
    let mut file = std::fs::File::create(&path).unwrap();
    let chunk: Vec<u8> = (0..1 << 20).map(|i: u32| (i % 251) as u8).collect();
    for _ in 0..FILE_BYTES / chunk.len() {
        file.write_all(&chunk).unwrap();
    }
    file.sync_all().unwrap();
    drop(file);

    let Some(peak_before) = peak_resident_bytes() else {
        eprintln!("SKIP: no /proc/self/status on this system");
        return;
    };
    let read = make_warm(std::slice::from_ref(&path)).unwrap();
    let peak_after = peak_resident_bytes().unwrap();
    assert_eq!(read, FILE_BYTES as u64, "every byte read");
    let grown = peak_after.saturating_sub(peak_before);
    assert!(
        grown < (FILE_BYTES / 8) as u64,
        "the peak resident set grew {grown} bytes warming a {FILE_BYTES}-byte file"
    );
}

#[test]
fn a_missing_file_is_an_error_naming_it() {
    let dir = TempDir::new("warm-missing");
    let error = make_warm(&[dir.0.join("absent")]).unwrap_err().to_string();
    assert!(error.contains("absent"), "{error}");
}
