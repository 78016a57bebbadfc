//! The panic paths of the ABI, reached by injecting panics (only unit
//! tests can): a panic in an operation on a handle is `UBT_ERR_PANIC` and
//! poisons that handle alone; later calls on it are `UBT_ERR_POISONED`;
//! closing it releases it; a panic outside any handle poisons nothing.
#![allow(unsafe_code)] // Calls the ABI's unsafe functions.

use std::ffi::CString;
use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, Ordering};

use crate::guard::{inject, Point};
use crate::*;

/// A fresh directory under the system temporary directory, removed on drop.
struct TempDir(PathBuf);

impl TempDir {
    fn new(label: &str) -> TempDir {
        static COUNTER: AtomicU64 = AtomicU64::new(0);
        let n = COUNTER.fetch_add(1, Ordering::Relaxed);
        let path =
            std::env::temp_dir().join(format!("ubt-ffi-unit-{label}-{}-{n}", std::process::id()));
        let _ = std::fs::remove_dir_all(&path);
        TempDir(path)
    }

    fn c_path(&self) -> CString {
        CString::new(self.0.to_str().unwrap()).unwrap()
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// Opens a new database with one write applied; returns its handle.
fn open_with_a_write(dir: &TempDir) -> u64 {
    let (path, mut db) = (dir.c_path(), 0);
    // SAFETY: a NUL-terminated path, null options, a live out slot.
    let status = unsafe { ubt_db_open(path.as_ptr(), std::ptr::null(), &mut db) };
    assert_eq!(status, UBT_OK);
    let write = UbtWrite {
        key: UbtBytes32 { bytes: [1; 32] },
        value: UbtBytes32 { bytes: [2; 32] },
    };
    let mut root = UbtBytes32::default();
    // SAFETY: one live write, a live out slot.
    assert_eq!(unsafe { ubt_db_apply(db, &write, 1, &mut root) }, UBT_OK);
    db
}

/// `ubt_db_get` of key `[1; 32]`: the status and the value read.
fn get(db: u64) -> (i32, UbtBytes32) {
    let key = UbtBytes32 { bytes: [1; 32] };
    let (mut value, mut found) = (UbtBytes32::default(), 0u8);
    // SAFETY: live input and output slots.
    let status = unsafe { ubt_db_get(db, &key, &mut value, &mut found) };
    (status, value)
}

#[test]
fn a_panic_on_a_database_poisons_it_until_closed() {
    let dir = TempDir::new("db-panic");
    let db = open_with_a_write(&dir);
    let other_dir = TempDir::new("db-bystander");
    let other = open_with_a_write(&other_dir);

    inject::arm(Point::Handle);
    assert_eq!(get(db).0, UBT_ERR_PANIC);
    assert!(last_error::message().contains("injected panic"));

    assert_eq!(get(db).0, UBT_ERR_POISONED);
    assert!(last_error::message().contains("poisoned"));
    let mut root = UbtBytes32::default();
    // SAFETY: a live out slot.
    assert_eq!(unsafe { ubt_db_commit(db, &mut root) }, UBT_ERR_POISONED);
    let mut reader = 0;
    // SAFETY: live input and output slots.
    let status = unsafe { ubt_db_reader(db, &root, &mut reader) };
    assert_eq!(status, UBT_ERR_POISONED);

    // Another handle is not affected.
    assert_eq!(get(other), (UBT_OK, UbtBytes32 { bytes: [2; 32] }));
    assert_eq!(ubt_db_close(other), UBT_OK);

    // Close releases the poisoned handle (without a checkpoint), once.
    assert_eq!(ubt_db_close(db), UBT_ERR_POISONED);
    assert!(last_error::message().contains("released"));
    assert_eq!(ubt_db_close(db), UBT_ERR_BAD_HANDLE);
    assert_eq!(get(db).0, UBT_ERR_BAD_HANDLE);
}

#[test]
fn a_panic_on_a_reader_poisons_the_reader_only() {
    let dir = TempDir::new("reader-panic");
    let db = open_with_a_write(&dir);
    let mut root = UbtBytes32::default();
    let mut reader = 0;
    // SAFETY: live slots.
    unsafe {
        assert_eq!(ubt_db_root(db, &mut root), UBT_OK);
        assert_eq!(ubt_db_reader(db, &root, &mut reader), UBT_OK);
    }
    let mut reader_root = UbtBytes32::default();
    inject::arm(Point::Handle);
    // SAFETY: a live out slot.
    assert_eq!(
        unsafe { ubt_reader_root(reader, &mut reader_root) },
        UBT_ERR_PANIC
    );
    // SAFETY: a live out slot.
    assert_eq!(
        unsafe { ubt_reader_root(reader, &mut reader_root) },
        UBT_ERR_POISONED
    );
    assert_eq!(reader_root, UbtBytes32::default(), "no output on failure");

    assert_eq!(get(db), (UBT_OK, UbtBytes32 { bytes: [2; 32] }));
    assert_eq!(ubt_reader_close(reader), UBT_OK);
    assert_eq!(ubt_reader_close(reader), UBT_ERR_BAD_HANDLE);
    assert_eq!(ubt_db_close(db), UBT_OK);
}

#[test]
fn a_panic_outside_handles_is_reported_and_poisons_nothing() {
    let dir = TempDir::new("call-panic");
    let db = open_with_a_write(&dir);
    let mut options = UbtOptions::defaults();
    options.group_depth = 3;
    inject::arm(Point::Call);
    // SAFETY: a live out slot.
    assert_eq!(unsafe { ubt_options_default(&mut options) }, UBT_ERR_PANIC);
    assert_eq!(options.group_depth, 3, "no output on failure");
    assert!(last_error::message().starts_with("panic inside ubt"));
    // The next call works; the database was not involved.
    // SAFETY: a live out slot.
    assert_eq!(unsafe { ubt_options_default(&mut options) }, UBT_OK);
    assert_eq!(get(db).0, UBT_OK);
    assert_eq!(ubt_db_close(db), UBT_OK);
}

#[test]
fn a_panic_in_a_write_leaves_the_database_reopenable_at_its_last_commit() {
    let dir = TempDir::new("apply-panic");
    let db = open_with_a_write(&dir);
    let mut committed = UbtBytes32::default();
    // SAFETY: a live out slot.
    assert_eq!(unsafe { ubt_db_commit(db, &mut committed) }, UBT_OK);
    let write = UbtWrite {
        key: UbtBytes32 { bytes: [3; 32] },
        value: UbtBytes32 { bytes: [4; 32] },
    };
    let mut root = UbtBytes32::default();
    inject::arm(Point::Handle);
    // SAFETY: one live write, a live out slot.
    assert_eq!(
        unsafe { ubt_db_apply(db, &write, 1, &mut root) },
        UBT_ERR_PANIC
    );
    assert_eq!(ubt_db_close(db), UBT_ERR_POISONED);

    let (path, mut reopened) = (dir.c_path(), 0);
    // SAFETY: a NUL-terminated path, null options, a live out slot.
    let status = unsafe { ubt_db_open(path.as_ptr(), std::ptr::null(), &mut reopened) };
    assert_eq!(status, UBT_OK, "{}", last_error::message());
    let mut root = UbtBytes32::default();
    // SAFETY: a live out slot.
    assert_eq!(unsafe { ubt_db_root(reopened, &mut root) }, UBT_OK);
    assert_eq!(root, committed);
    assert_eq!(ubt_db_close(reopened), UBT_OK);
}
