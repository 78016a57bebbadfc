//! Bad arguments are error codes, checked before anything happens: every
//! required pointer that is null is `UBT_ERR_NULL_POINTER` with a message
//! naming it (and the call changes nothing: a block whose root slot is
//! null is not applied); lengths too large for memory, misaligned
//! pointers, unknown operation kinds and out-of-range option fields are
//! `UBT_ERR_INVALID_ARGUMENT`; arrays of length 0 may be null.

// Test code: a failed unwrap is a failed test, and casts narrow test data.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::cast_possible_truncation
)]
// The tests call the ABI directly, with null and bad pointers on purpose.
#![allow(unsafe_code)]

mod common;

use std::ptr::{null, null_mut};

use alloy_primitives::{Address, B256};
use common::*;
use ubt_ffi::*;

/// Asserts `status` is `UBT_ERR_NULL_POINTER` naming `argument`.
fn assert_null(status: i32, argument: &str) {
    assert_eq!(status, UBT_ERR_NULL_POINTER, "{argument}: {}", last_error());
    assert_eq!(last_error(), format!("{argument} is a null pointer"));
}

/// A database with one block applied; returns its handle and root.
fn one_block(dir: &TempDir) -> (u64, B256) {
    let db = open(dir, Some(&small_options())).unwrap();
    let root = apply(db, &[(word(1, 1), word(2, 2))]).unwrap();
    (db, root)
}

#[test]
fn null_pointers_of_database_calls_are_refused() {
    let dir = TempDir::new("null-db");
    let (db, root) = one_block(&dir);
    let path = dir.c_path();
    let key = UbtBytes32::from(word(1, 1));
    let address = UbtAddress::default();
    let write = UbtWrite::default();
    let (mut value, mut found, mut handle) = (UbtBytes32::default(), 0u8, 0u64);
    let (mut bytes, mut account) = (UbtBytes::EMPTY, UbtAccount::default());
    // SAFETY: every non-null pointer is a live value of its type; the
    // null ones are what the calls must refuse.
    unsafe {
        assert_null(ubt_db_open(null(), null(), &mut handle), "path");
        assert_null(ubt_db_open(path.as_ptr(), null(), null_mut()), "db_out");
        assert_null(ubt_db_open_read_only(null(), null(), &mut handle), "path");
        assert_null(ubt_db_get(db, null(), &mut value, &mut found), "key");
        assert_null(ubt_db_get(db, &key, null_mut(), &mut found), "value_out");
        assert_null(ubt_db_get(db, &key, &mut value, null_mut()), "found_out");
        assert_null(
            ubt_db_get_many(db, null(), 1, &mut value, &mut found),
            "keys",
        );
        assert_null(
            ubt_db_get_many(db, &key, 1, null_mut(), &mut found),
            "values_out",
        );
        assert_null(
            ubt_db_get_many(db, &key, 1, &mut value, null_mut()),
            "found_out",
        );
        assert_null(
            ubt_db_account(db, null(), &mut account, &mut found),
            "address",
        );
        assert_null(
            ubt_db_account(db, &address, null_mut(), &mut found),
            "account_out",
        );
        assert_null(
            ubt_db_storage(db, &address, null(), &mut value, &mut found),
            "slot",
        );
        assert_null(
            ubt_db_code(db, &address, null_mut(), &mut found),
            "code_out",
        );
        assert_null(ubt_db_prove(db, null(), 2, &mut bytes), "keys");
        assert_null(ubt_db_prove(db, &key, 1, null_mut()), "proof_out");
        assert_null(ubt_db_apply(db, null(), 1, &mut value), "writes");
        assert_null(ubt_db_apply(db, &write, 1, null_mut()), "root_out");
        assert_null(
            ubt_db_apply_accounts(db, null(), 1, null(), 0, &mut value),
            "ops",
        );
        let op = UbtAccountOp::default();
        assert_null(
            ubt_db_apply_accounts(db, &op, 1, null(), 3, &mut value),
            "code_buffer",
        );
        assert_null(ubt_db_persist(db, null()), "root");
        assert_null(ubt_db_revert(db, null()), "root");
        assert_null(ubt_db_commit(db, null_mut()), "root_out");
        assert_null(ubt_db_root(db, null_mut()), "root_out");
        assert_null(ubt_db_committed_root(db, null_mut()), "root_out");
        assert_null(ubt_db_stats(db, null_mut()), "stats_out");
        assert_null(ubt_db_reader(db, null(), &mut handle), "root");
        assert_null(ubt_db_reader(db, &key, null_mut()), "reader_out");
        assert_null(ubt_options_default(null_mut()), "options_out");
        assert_null(ubt_bytes_free(null_mut()), "bytes");
    }
    // Nothing was applied: the write with a null root slot was refused
    // before the block reached the database.
    assert_eq!(tip_root(db).unwrap(), root);
    close(db).unwrap();
}

#[test]
fn null_pointers_of_reader_and_proof_calls_are_refused() {
    let dir = TempDir::new("null-reader");
    let (db, root) = one_block(&dir);
    let r = reader(db, &root).unwrap();
    let key = UbtBytes32::from(word(1, 1));
    let root = UbtBytes32::from(root);
    let address = UbtAddress::default();
    let (mut value, mut found, mut bytes) = (UbtBytes32::default(), 0u8, UbtBytes::EMPTY);
    let mut account = UbtAccount::default();
    let proof = prove(At::Reader(r), &[key.into()]).unwrap();
    // SAFETY: every non-null pointer is a live value of its type.
    unsafe {
        assert_null(ubt_reader_root(r, null_mut()), "root_out");
        assert_null(ubt_reader_get(r, null(), &mut value, &mut found), "key");
        assert_null(
            ubt_reader_get_many(r, &key, 1, &mut value, null_mut()),
            "found_out",
        );
        assert_null(
            ubt_reader_account(r, &address, &mut account, null_mut()),
            "found_out",
        );
        assert_null(
            ubt_reader_storage(r, null(), &key, &mut value, &mut found),
            "address",
        );
        assert_null(
            ubt_reader_code(r, null(), &mut bytes, &mut found),
            "address",
        );
        assert_null(ubt_reader_prove(r, &key, 1, null_mut()), "proof_out");
        let (p, n) = (proof.as_ptr(), proof.len());
        assert_null(
            ubt_verify_proof(null(), n, &root, &key, 1, &mut value, &mut found),
            "proof",
        );
        assert_null(
            ubt_verify_proof(p, n, null(), &key, 1, &mut value, &mut found),
            "root",
        );
        assert_null(
            ubt_verify_proof(p, n, &root, null(), 1, &mut value, &mut found),
            "keys",
        );
        assert_null(
            ubt_verify_proof(p, n, &root, &key, 1, null_mut(), &mut found),
            "values_out",
        );
        assert_null(
            ubt_verify_proof(p, n, &root, &key, 1, &mut value, null_mut()),
            "found_out",
        );
        // The proof itself is fine.
        let status = ubt_verify_proof(p, n, &root, &key, 1, &mut value, &mut found);
        assert_eq!(status, UBT_OK);
    }
    assert_eq!((B256::from(value), found), (word(2, 2), 1));
    reader_close(r).unwrap();
    close(db).unwrap();
}

#[test]
fn arrays_of_length_zero_may_be_null() {
    let dir = TempDir::new("null-empty");
    let (db, root) = one_block(&dir);
    let root_in = UbtBytes32::from(root);
    let (mut out, mut proof) = (UbtBytes32::default(), UbtBytes::EMPTY);
    // SAFETY: lengths are 0, so no array is read or written; the other
    // pointers are live.
    unsafe {
        assert_eq!(
            ubt_db_get_many(db, null(), 0, null_mut(), null_mut()),
            UBT_OK
        );
        assert_eq!(ubt_db_prove(db, null(), 0, &mut proof), UBT_OK);
        let status = ubt_verify_proof(
            proof.data,
            proof.len,
            &root_in,
            null(),
            0,
            null_mut(),
            null_mut(),
        );
        assert_eq!(status, UBT_OK, "{}", last_error());
        assert_eq!(ubt_bytes_free(&mut proof), UBT_OK);
        assert_eq!(ubt_db_apply(db, null(), 0, &mut out), UBT_OK);
        assert_eq!(
            ubt_db_apply_accounts(db, null(), 0, null(), 0, &mut out),
            UBT_OK
        );
        // A proof of length 0 may be null too; it is then rejected as a
        // proof, not as a pointer.
        let status = ubt_verify_proof(null(), 0, &root_in, null(), 0, null_mut(), null_mut());
        assert_eq!(status, UBT_ERR_PROOF_REJECTED);
    }
    assert_eq!(B256::from(out), root, "empty blocks keep the root");
    close(db).unwrap();
}

#[test]
fn lengths_too_large_for_memory_are_refused_before_reading() {
    let dir = TempDir::new("lengths");
    let (db, root) = one_block(&dir);
    let key = UbtBytes32::default();
    let write = UbtWrite::default();
    let (mut value, mut found, mut proof) = (UbtBytes32::default(), 0u8, UbtBytes::EMPTY);
    let root_in = UbtBytes32::from(root);
    // SAFETY: each length overflows `isize::MAX` bytes, which the callee
    // checks before it reads past the one live item.
    unsafe {
        for n in [
            usize::MAX,
            usize::MAX / 32 + 1,
            isize::MAX.unsigned_abs() / 32 + 1,
        ] {
            let status = ubt_db_get_many(db, &key, n, &mut value, &mut found);
            assert_eq!(status, UBT_ERR_INVALID_ARGUMENT, "n = {n}");
            assert!(last_error().contains("too large"), "{}", last_error());
            assert_eq!(
                ubt_db_apply(db, &write, n, &mut value),
                UBT_ERR_INVALID_ARGUMENT
            );
            assert_eq!(
                ubt_db_prove(db, &key, n, &mut proof),
                UBT_ERR_INVALID_ARGUMENT
            );
        }
        let status = ubt_verify_proof(
            &0u8,
            usize::MAX,
            &root_in,
            null(),
            0,
            null_mut(),
            null_mut(),
        );
        assert_eq!(status, UBT_ERR_INVALID_ARGUMENT);
    }
    assert_eq!(tip_root(db).unwrap(), root);
    close(db).unwrap();
}

#[test]
fn misaligned_pointers_are_refused() {
    let dir = TempDir::new("aligned");
    let (db, _) = one_block(&dir);
    let address = UbtAddress::default();
    let mut found = 0u8;
    // Room for a UbtAccount at an odd address inside a u64-aligned buffer.
    let mut buffer = vec![0u64; 16];
    let misaligned = buffer
        .as_mut_ptr()
        .cast::<u8>()
        .wrapping_add(1)
        .cast::<UbtAccount>();
    // SAFETY: the pointer is inside `buffer`, with room for a UbtAccount;
    // the callee refuses it for its alignment before writing.
    let status = unsafe { ubt_db_account(db, &address, misaligned, &mut found) };
    assert_eq!(status, UBT_ERR_INVALID_ARGUMENT);
    assert!(
        last_error().contains("account_out is not aligned"),
        "{}",
        last_error()
    );
    assert!(buffer.iter().all(|&word| word == 0));
    close(db).unwrap();
}

/// `ubt_db_apply_accounts` of `ops` with `code`.
fn apply_raw(db: u64, ops: &[UbtAccountOp], code: &[u8]) -> i32 {
    let mut root = UbtBytes32::default();
    // SAFETY: live arrays of the lengths given, a live slot.
    unsafe {
        ubt_db_apply_accounts(
            db,
            ops.as_ptr(),
            ops.len(),
            code.as_ptr(),
            code.len(),
            &mut root,
        )
    }
}

#[test]
fn an_invalid_operation_fails_the_whole_block() {
    let dir = TempDir::new("bad-ops");
    let (db, root) = one_block(&dir);
    let who = Address::repeat_byte(5);
    let (ops, _) = ffi_ops(&[Op::SetAccount(who, account_of(1, 0))]);
    let good = ops[0];
    for kind in [0, 6, 99, u32::MAX] {
        let bad = UbtAccountOp { kind, ..good };
        assert_eq!(apply_raw(db, &[good, bad], &[]), UBT_ERR_INVALID_ARGUMENT);
        assert_eq!(
            last_error(),
            format!("ops[1].kind is {kind}, not one of the UBT_OP_* values")
        );
    }
    let (ops, code) = ffi_ops(&[Op::SetCode(who, vec![0x5b; 10])]);
    for (offset, len) in [(0, 11), (10, 1), (usize::MAX, 1), (2, usize::MAX)] {
        let beyond = UbtAccountOp {
            code_offset: offset,
            code_len: len,
            ..ops[0]
        };
        assert_eq!(
            apply_raw(db, &[good, beyond], &code),
            UBT_ERR_INVALID_ARGUMENT
        );
        assert!(
            last_error().contains("beyond the 10 bytes of code"),
            "{}",
            last_error()
        );
    }
    assert_eq!(tip_root(db).unwrap(), root, "nothing was applied");
    assert_eq!(account(At::Tip(db), &who).unwrap(), None);
    // Operations may share a range of the code buffer.
    let shared = [good, ops[0], ops[0]];
    assert_eq!(apply_raw(db, &shared, &code), UBT_OK);
    close(db).unwrap();
}

#[test]
fn out_of_range_options_are_refused() {
    let dir = TempDir::new("options");
    let defaults = UbtOptions::defaults();
    let mut filled = UbtOptions {
        group_depth: 99,
        ..defaults
    };
    // SAFETY: a live slot.
    assert_eq!(unsafe { ubt_options_default(&mut filled) }, UBT_OK);
    assert_eq!(filled, defaults);
    assert_eq!(filled.revert_depth, 128);
    assert_eq!(filled.create_if_missing, 1);

    let invalid_arguments = [
        UbtOptions {
            sync_mode: 2,
            ..defaults
        },
        UbtOptions {
            read_backend: 2,
            ..defaults
        },
        UbtOptions {
            create_if_missing: 2,
            ..defaults
        },
        UbtOptions {
            flat_index: 7,
            ..defaults
        },
        UbtOptions {
            direct_reads: 3,
            ..defaults
        },
    ];
    for options in invalid_arguments {
        let failure = open(&dir, Some(&options)).unwrap_err();
        assert_eq!(failure.code, UBT_ERR_INVALID_ARGUMENT, "{options:?}");
        assert!(failure.message.starts_with("options."), "{failure:?}");
    }
    let invalid_options = [
        UbtOptions {
            group_depth: 9,
            ..defaults
        },
        UbtOptions {
            wal_bytes_max: 0,
            ..defaults
        },
        UbtOptions {
            wal_bytes_max: u64::MAX,
            ..defaults
        },
    ];
    for options in invalid_options {
        let failure = open(&dir, Some(&options)).unwrap_err();
        assert_eq!(
            failure.code, UBT_ERR_INVALID_OPTIONS,
            "{options:?}: {failure:?}"
        );
    }
    // Nothing was created by the refused opens.
    assert_eq!(std::fs::read_dir(&dir.0).unwrap().count(), 0);
}

#[test]
fn empty_paths_are_refused() {
    let empty = c"";
    let mut db = 0;
    // SAFETY: a NUL-terminated (empty) string and a live slot.
    let status = unsafe { ubt_db_open(empty.as_ptr(), null(), &mut db) };
    assert_eq!(status, UBT_ERR_INVALID_ARGUMENT);
    assert_eq!(last_error(), "path is an empty path");
    assert_eq!(db, 0, "no output on failure");
}
