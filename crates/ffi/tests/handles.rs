//! Handles and library buffers cannot be misused into undefined
//! behaviour: 0, never-issued, closed and wrong-kind handles are
//! `UBT_ERR_BAD_HANDLE` for every call (closing twice included), handles
//! are never reused, a reader outlives its database's handle, a handle
//! closed while another thread uses it turns into `UBT_ERR_BAD_HANDLE` for
//! that thread, and a buffer freed twice or not from the library is
//! `UBT_ERR_INVALID_ARGUMENT`.

// Test code: a failed unwrap is a failed test, and casts narrow test data.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::cast_possible_truncation
)]
// The tests call the ABI directly, with bad buffers on purpose.
#![allow(unsafe_code)]

mod common;

use alloy_primitives::{Address, B256};
use common::*;
use ubt_ffi::*;

/// Every database call on `db` fails with `UBT_ERR_BAD_HANDLE`.
fn assert_dead_database(db: u64) {
    let key = word(1, 1);
    assert_eq!(status_of(get(At::Tip(db), &key)), UBT_ERR_BAD_HANDLE);
    assert_eq!(status_of(get_many(At::Tip(db), &[key])), UBT_ERR_BAD_HANDLE);
    assert_eq!(
        status_of(account(At::Tip(db), &Address::ZERO)),
        UBT_ERR_BAD_HANDLE
    );
    assert_eq!(
        status_of(code(At::Tip(db), &Address::ZERO)),
        UBT_ERR_BAD_HANDLE
    );
    assert_eq!(status_of(prove(At::Tip(db), &[key])), UBT_ERR_BAD_HANDLE);
    assert_eq!(status_of(apply(db, &[(key, key)])), UBT_ERR_BAD_HANDLE);
    assert_eq!(status_of(apply_accounts(db, &[])), UBT_ERR_BAD_HANDLE);
    assert_eq!(status_of(persist(db, &key)), UBT_ERR_BAD_HANDLE);
    assert_eq!(status_of(revert(db, &key)), UBT_ERR_BAD_HANDLE);
    assert_eq!(status_of(commit(db)), UBT_ERR_BAD_HANDLE);
    assert_eq!(status_of(tip_root(db)), UBT_ERR_BAD_HANDLE);
    assert_eq!(status_of(committed_root(db)), UBT_ERR_BAD_HANDLE);
    assert_eq!(status_of(stats(db)), UBT_ERR_BAD_HANDLE);
    assert_eq!(status_of(reader(db, &key)), UBT_ERR_BAD_HANDLE);
    assert_eq!(ubt_db_checkpoint(db), UBT_ERR_BAD_HANDLE);
    assert_eq!(ubt_db_close(db), UBT_ERR_BAD_HANDLE);
}

/// Every reader call on `reader` fails with `UBT_ERR_BAD_HANDLE`.
fn assert_dead_reader(reader: u64) {
    let key = word(1, 1);
    assert_eq!(status_of(get(At::Reader(reader), &key)), UBT_ERR_BAD_HANDLE);
    assert_eq!(
        status_of(get_many(At::Reader(reader), &[key])),
        UBT_ERR_BAD_HANDLE
    );
    assert_eq!(
        status_of(storage(
            At::Reader(reader),
            &Address::ZERO,
            &Default::default()
        )),
        UBT_ERR_BAD_HANDLE
    );
    assert_eq!(
        status_of(prove(At::Reader(reader), &[key])),
        UBT_ERR_BAD_HANDLE
    );
    assert_eq!(status_of(reader_root(reader)), UBT_ERR_BAD_HANDLE);
    assert_eq!(ubt_reader_close(reader), UBT_ERR_BAD_HANDLE);
}

#[test]
fn unknown_handles_are_bad_handles() {
    for handle in [0, u64::MAX, u64::MAX / 2] {
        assert_dead_database(handle);
        assert_dead_reader(handle);
    }
    assert_eq!(ubt_db_close(0), UBT_ERR_BAD_HANDLE);
    assert!(
        last_error().contains("0 is never issued"),
        "{}",
        last_error()
    );
    assert_eq!(ubt_db_close(u64::MAX), UBT_ERR_BAD_HANDLE);
    assert!(last_error().contains("never issued"), "{}", last_error());
}

#[test]
fn closed_handles_stay_dead_and_are_never_reused() {
    let dir = TempDir::new("stale");
    let db = open(&dir, Some(&small_options())).unwrap();
    let root = apply(db, &[(word(1, 1), word(2, 1))]).unwrap();
    let r = reader(db, &root).unwrap();
    assert_ne!(db, r);

    // Wrong kinds: a reader handle is not a database handle, and back.
    assert_dead_database(r);
    assert_dead_reader(db);
    assert_eq!(ubt_db_close(r), UBT_ERR_BAD_HANDLE);
    assert!(
        last_error().contains("not an open database handle"),
        "{}",
        last_error()
    );

    reader_close(r).unwrap();
    assert_dead_reader(r);
    close(db).unwrap();
    assert_dead_database(db);
    assert!(last_error().contains("closed"), "{}", last_error());

    // Reopening gives new handles; the old ones stay dead.
    let again = open(&dir, Some(&small_options())).unwrap();
    assert!(again != db && again != r);
    assert_dead_database(db);
    assert_eq!(tip_root(again).unwrap(), root);
    close(again).unwrap();
}

#[test]
fn a_reader_outlives_its_database_handle() {
    let dir = TempDir::new("outlive");
    let db = open(&dir, Some(&small_options())).unwrap();
    let (key, value) = (word(1, 1), word(2, 1));
    let root = apply(db, &[(key, value)]).unwrap();
    let r = reader(db, &root).unwrap();
    close(db).unwrap();
    assert_eq!(get(At::Reader(r), &key).unwrap(), Some(value));
    let proof = prove(At::Reader(r), &[key]).unwrap();
    assert_eq!(verify(&proof, &root, &[key]).unwrap(), vec![Some(value)]);
    reader_close(r).unwrap();
}

#[test]
fn a_handle_closed_under_another_thread_becomes_a_bad_handle_there() {
    let dir = TempDir::new("close-race");
    let db = open(&dir, Some(&small_options())).unwrap();
    let (key, value) = (word(1, 1), word(2, 1));
    apply(db, &[(key, value)]).unwrap();
    let user = std::thread::spawn(move || {
        // Reads until the handle dies: every read before that succeeds.
        let mut reads = 0u64;
        loop {
            match get(At::Tip(db), &key) {
                Ok(found) => assert_eq!(found, Some(value)),
                Err(failure) => {
                    assert_eq!(failure.code, UBT_ERR_BAD_HANDLE, "{failure:?}");
                    return reads;
                }
            }
            reads += 1;
        }
    });
    close(db).unwrap();
    user.join().unwrap();
    assert_dead_database(db);
}

#[test]
fn buffers_are_freed_once_and_only_if_handed_out() {
    let dir = TempDir::new("buffers");
    let db = open(&dir, Some(&small_options())).unwrap();
    apply(db, &[(word(1, 1), word(2, 1))]).unwrap();
    let key = UbtBytes32::from(word(1, 1));
    let mut proof = UbtBytes::EMPTY;
    // SAFETY: live key and slot.
    assert_eq!(unsafe { ubt_db_prove(db, &key, 1, &mut proof) }, UBT_OK);
    assert!(!proof.data.is_null() && proof.len > 0);
    let copy = proof;

    // A wrong length frees nothing.
    let mut wrong_len = UbtBytes {
        len: proof.len + 1,
        ..proof
    };
    // SAFETY: a live UbtBytes.
    assert_eq!(
        unsafe { ubt_bytes_free(&mut wrong_len) },
        UBT_ERR_INVALID_ARGUMENT
    );
    assert!(last_error().contains("bytes.len"), "{}", last_error());
    // SAFETY: a live UbtBytes holding a buffer handed out.
    assert_eq!(unsafe { ubt_bytes_free(&mut proof) }, UBT_OK);
    assert_eq!(proof, UbtBytes::EMPTY);
    // Freeing the emptied struct again is a no-op.
    // SAFETY: a live UbtBytes.
    assert_eq!(unsafe { ubt_bytes_free(&mut proof) }, UBT_OK);
    // A stale copy of the freed buffer is refused, not freed twice.
    let mut stale = copy;
    // SAFETY: a live UbtBytes (its data pointer is stale; the callee only
    // looks it up).
    assert_eq!(
        unsafe { ubt_bytes_free(&mut stale) },
        UBT_ERR_INVALID_ARGUMENT
    );
    assert!(last_error().contains("already freed"), "{}", last_error());
    assert_eq!(stale, copy, "a refused free leaves the struct");

    // Memory the library did not hand out is refused.
    let ours = vec![1u8; 8];
    let mut foreign = UbtBytes {
        data: ours.as_ptr(),
        len: ours.len(),
    };
    // SAFETY: a live UbtBytes; the callee does not free what it did not
    // hand out.
    assert_eq!(
        unsafe { ubt_bytes_free(&mut foreign) },
        UBT_ERR_INVALID_ARGUMENT
    );
    assert_eq!(ours, vec![1u8; 8]);
    close(db).unwrap();
}

#[test]
fn code_of_an_absent_account_is_the_empty_buffer() {
    let dir = TempDir::new("empty-code");
    let db = open(&dir, Some(&small_options())).unwrap();
    let who = Address::repeat_byte(9);
    assert_eq!(code(At::Tip(db), &who).unwrap(), None);
    apply_accounts(db, &[Op::SetAccount(who, account_of(1, 0))]).unwrap();
    assert_eq!(code(At::Tip(db), &who).unwrap(), Some(Vec::new()));
    assert_eq!(tip_root(db).unwrap(), commit(db).unwrap());
    assert_ne!(tip_root(db).unwrap(), B256::ZERO);
    close(db).unwrap();
}
