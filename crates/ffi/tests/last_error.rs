//! The last error message: set by every failed call, emptied by every
//! successful one, per OS thread, unchanged by reading it; copied cut to
//! the caller's buffer (always NUL-terminated) with the full length
//! reported; and status names for every code.

// Test code: a failed unwrap is a failed test, and casts narrow test data.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::cast_possible_truncation
)]
// The tests call the ABI directly with their own buffers.
#![allow(unsafe_code)]

mod common;

use std::ffi::{c_char, CStr};

use common::*;
use ubt_ffi::*;

/// Copies the message into a buffer of `capacity` bytes (filled with
/// 0x7f first): the status, the bytes and the reported length.
fn copy_message(capacity: usize) -> (i32, Vec<u8>, usize) {
    let mut buf = vec![0x7f as c_char; capacity];
    let mut len = usize::MAX;
    // SAFETY: `buf` holds `capacity` bytes; a live length slot.
    let status = unsafe { ubt_last_error_message(buf.as_mut_ptr(), capacity, &mut len) };
    (
        status,
        buf.iter().map(|c| c.to_ne_bytes()[0]).collect(),
        len,
    )
}

#[test]
fn messages_are_set_cleared_and_copied_cut_to_the_buffer() {
    assert_eq!(ubt_db_close(0), UBT_ERR_BAD_HANDLE);
    let message = last_error();
    assert_eq!(
        message,
        "handle 0 is not a database handle (0 is never issued)"
    );

    // Cut to 5 bytes: 4 of the message and a NUL; the full length given.
    let (status, bytes, len) = copy_message(5);
    assert_eq!(status, UBT_OK);
    assert_eq!(&bytes, b"hand\0");
    assert_eq!(len, message.len());
    // A buffer of exactly len + 1 holds it whole.
    let (_, bytes, _) = copy_message(message.len() + 1);
    assert_eq!(&bytes[..message.len()], message.as_bytes());
    assert_eq!(bytes[message.len()], 0);
    // Capacity 1: just the NUL. Capacity 0 with a null buffer: the length.
    assert_eq!(copy_message(1).1, vec![0]);
    let mut len = 0;
    // SAFETY: capacity 0: the null buffer is not written.
    let status = unsafe { ubt_last_error_message(std::ptr::null_mut(), 0, &mut len) };
    assert_eq!((status, len), (UBT_OK, message.len()));
    // A null buffer with a capacity is refused, and keeps the message.
    // SAFETY: the null buffer is refused before any write.
    let status = unsafe { ubt_last_error_message(std::ptr::null_mut(), 8, std::ptr::null_mut()) };
    assert_eq!(status, UBT_ERR_NULL_POINTER);
    assert_eq!(last_error(), message, "reading the message keeps it");

    // A successful call empties it.
    let mut options = UbtOptions::defaults();
    // SAFETY: a live slot.
    assert_eq!(unsafe { ubt_options_default(&mut options) }, UBT_OK);
    assert_eq!(last_error(), "");
    assert_eq!(copy_message(4).1, vec![0, 0x7f, 0x7f, 0x7f]);
}

#[test]
fn messages_belong_to_their_thread() {
    assert_eq!(ubt_reader_close(u64::MAX), UBT_ERR_BAD_HANDLE);
    let here = last_error();
    let there = std::thread::spawn(|| {
        let before = last_error();
        assert_eq!(ubt_db_close(0), UBT_ERR_BAD_HANDLE);
        (before, last_error())
    })
    .join()
    .unwrap();
    assert_eq!(there.0, "", "a new thread starts without a message");
    assert!(there.1.contains("0 is never issued"), "{}", there.1);
    assert_eq!(
        last_error(),
        here,
        "another thread's failure is not this one's"
    );
    assert!(here.contains("never issued"), "{here}");
}

#[test]
fn every_status_has_its_name() {
    let names = [
        (UBT_OK, "UBT_OK"),
        (UBT_ERR_INVALID_ARGUMENT, "UBT_ERR_INVALID_ARGUMENT"),
        (UBT_ERR_NULL_POINTER, "UBT_ERR_NULL_POINTER"),
        (UBT_ERR_BAD_HANDLE, "UBT_ERR_BAD_HANDLE"),
        (UBT_ERR_POISONED, "UBT_ERR_POISONED"),
        (UBT_ERR_PANIC, "UBT_ERR_PANIC"),
        (UBT_ERR_IO, "UBT_ERR_IO"),
        (UBT_ERR_CORRUPTED, "UBT_ERR_CORRUPTED"),
        (UBT_ERR_NOT_FOUND, "UBT_ERR_NOT_FOUND"),
        (UBT_ERR_NOT_A_DATABASE, "UBT_ERR_NOT_A_DATABASE"),
        (UBT_ERR_LOCKED, "UBT_ERR_LOCKED"),
        (UBT_ERR_INVALID_OPTIONS, "UBT_ERR_INVALID_OPTIONS"),
        (UBT_ERR_UNSUPPORTED_VERSION, "UBT_ERR_UNSUPPORTED_VERSION"),
        (UBT_ERR_READ_ONLY, "UBT_ERR_READ_ONLY"),
        (UBT_ERR_UNKNOWN_ROOT, "UBT_ERR_UNKNOWN_ROOT"),
        (UBT_ERR_REVERT_TOO_DEEP, "UBT_ERR_REVERT_TOO_DEEP"),
        (UBT_ERR_SNAPSHOT_REVERTED, "UBT_ERR_SNAPSHOT_REVERTED"),
        (UBT_ERR_BLOCK_TOO_LARGE, "UBT_ERR_BLOCK_TOO_LARGE"),
        (UBT_ERR_OWNERS_REQUIRED, "UBT_ERR_OWNERS_REQUIRED"),
        (UBT_ERR_PROOF_REJECTED, "UBT_ERR_PROOF_REJECTED"),
        (UBT_ERR_KEY_NOT_PROVEN, "UBT_ERR_KEY_NOT_PROVEN"),
        (UBT_ERR_MISSING_CODE_CHUNK, "UBT_ERR_MISSING_CODE_CHUNK"),
        (UBT_ERR_INTERNAL, "UBT_ERR_INTERNAL"),
        (23, "UBT_ERR_UNKNOWN"),
        (-1, "UBT_ERR_UNKNOWN"),
    ];
    for (code, name) in names {
        // SAFETY: ubt_status_name returns a static NUL-terminated string.
        let got = unsafe { CStr::from_ptr(ubt_status_name(code)) };
        assert_eq!(got.to_str().unwrap(), name);
    }
    assert_eq!(ubt_abi_version(), UBT_ABI_VERSION);
}
