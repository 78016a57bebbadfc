//! The engine's errors come through with their own codes and messages,
//! and a failed call changes nothing: writes on a read-only handle, a
//! second writer, reverts to roots out of reach, readers of reverted
//! roots, a missing or foreign directory, a group depth that differs from
//! the stored one, tree-key writes on a database with a flat index, and
//! code whose chunks are missing.

// Test code: a failed unwrap is a failed test, and casts narrow test data.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::cast_possible_truncation
)]

mod common;

use alloy_primitives::{keccak256, Address, B256, U256};
use common::*;
use ubt_ffi::*;

/// A committed database with one block; closed. Returns its root.
fn committed_block(dir: &TempDir) -> B256 {
    let db = open(dir, Some(&small_options())).unwrap();
    let root = apply(db, &[(word(1, 1), word(2, 1))]).unwrap();
    commit(db).unwrap();
    close(db).unwrap();
    root
}

#[test]
fn read_only_handles_read_and_refuse_every_write() {
    let dir = TempDir::new("read-only");
    let root = committed_block(&dir);
    let db = open_read_only(&dir, None).unwrap();
    let second = open_read_only(&dir, Some(&small_options())).unwrap();
    assert_eq!(tip_root(db).unwrap(), root);
    assert_eq!(get(At::Tip(second), &word(1, 1)).unwrap(), Some(word(2, 1)));

    let failure = apply(db, &[(word(1, 2), word(2, 2))]).unwrap_err();
    assert_eq!(failure.code, UBT_ERR_READ_ONLY);
    assert!(failure.message.contains("read-only"), "{failure:?}");
    let account = Op::SetAccount(Address::ZERO, account_of(1, 0));
    assert_eq!(status_of(apply_accounts(db, &[account])), UBT_ERR_READ_ONLY);
    assert_eq!(status_of(commit(db)), UBT_ERR_READ_ONLY);
    assert_eq!(status_of(persist(db, &root)), UBT_ERR_READ_ONLY);
    assert_eq!(status_of(revert(db, &root)), UBT_ERR_READ_ONLY);
    // A checkpoint with nothing to write is a no-op, read-only or not.
    assert_eq!(ubt_db_checkpoint(db), UBT_OK);
    assert_eq!(tip_root(db).unwrap(), root);

    // No writer while read-only handles are open.
    assert_eq!(status_of(open(&dir, None)), UBT_ERR_LOCKED);
    close(second).unwrap();
    close(db).unwrap();
    let writer = open(&dir, None).unwrap();
    close(writer).unwrap();
}

#[test]
fn a_second_writer_is_locked_out() {
    let dir = TempDir::new("locked");
    let db = open(&dir, Some(&small_options())).unwrap();
    let failure = open(&dir, Some(&small_options())).unwrap_err();
    assert_eq!(failure.code, UBT_ERR_LOCKED);
    assert!(failure.message.contains("locked"), "{failure:?}");
    assert_eq!(status_of(open_read_only(&dir, None)), UBT_ERR_LOCKED);
    close(db).unwrap();
}

#[test]
fn missing_and_foreign_directories_are_refused() {
    let dir = TempDir::new("missing");
    let mut options = small_options();
    options.create_if_missing = 0;
    assert_eq!(status_of(open(&dir, Some(&options))), UBT_ERR_NOT_FOUND);
    assert_eq!(status_of(open_read_only(&dir, None)), UBT_ERR_NOT_FOUND);

    let foreign = TempDir::new("foreign");
    std::fs::write(foreign.0.join("notes.txt"), b"not a database").unwrap();
    let failure = open(&foreign, None).unwrap_err();
    assert_eq!(failure.code, UBT_ERR_NOT_A_DATABASE, "{failure:?}");
}

#[test]
fn a_group_depth_other_than_the_stored_one_is_refused() {
    let dir = TempDir::new("group-depth");
    let mut options = small_options();
    options.group_depth = 4;
    let db = open(&dir, Some(&options)).unwrap();
    assert_eq!(stats(db).unwrap().group_depth, 4);
    close(db).unwrap();
    options.group_depth = 5;
    let failure = open(&dir, Some(&options)).unwrap_err();
    assert_eq!(failure.code, UBT_ERR_INVALID_OPTIONS);
    assert!(failure.message.contains("group depth 4"), "{failure:?}");
    options.group_depth = 0; // accept the stored one
    let db = open(&dir, Some(&options)).unwrap();
    assert_eq!(stats(db).unwrap().group_depth, 4);
    close(db).unwrap();
}

#[test]
fn reverts_out_of_reach_fail_and_change_nothing() {
    let dir = TempDir::new("revert");
    let mut options = small_options();
    options.revert_depth = 2;
    let db = open(&dir, Some(&options)).unwrap();
    let roots: Vec<B256> = (0..6u64)
        .map(|block| {
            apply(db, &[(word(1, block), word(2, block))]).unwrap();
            commit(db).unwrap()
        })
        .collect();
    let nowhere = word(9, 9);
    let failure = revert(db, &nowhere).unwrap_err();
    assert_eq!(failure.code, UBT_ERR_UNKNOWN_ROOT);
    assert!(
        failure.message.contains(&format!("{nowhere:x}")[2..]),
        "{failure:?}"
    );
    assert_eq!(status_of(reader(db, &nowhere)), UBT_ERR_UNKNOWN_ROOT);
    // A root older than the revert window is out of reach too.
    assert_eq!(status_of(revert(db, &roots[0])), UBT_ERR_UNKNOWN_ROOT);
    assert_eq!(status_of(revert(db, &roots[2])), UBT_ERR_UNKNOWN_ROOT);
    assert_eq!(tip_root(db).unwrap(), roots[5]);
    // Within the window, a revert works.
    revert(db, &roots[4]).unwrap();
    assert_eq!(tip_root(db).unwrap(), roots[4]);
    close(db).unwrap();
}

#[test]
fn readers_of_reverted_roots_fail_with_snapshot_reverted() {
    let dir = TempDir::new("reverted");
    let db = open(&dir, Some(&small_options())).unwrap();
    let first = apply(db, &[(word(1, 1), word(2, 1))]).unwrap();
    let second = apply(db, &[(word(1, 2), word(2, 2))]).unwrap();
    let r = reader(db, &second).unwrap();
    assert_eq!(get(At::Reader(r), &word(1, 2)).unwrap(), Some(word(2, 2)));
    revert(db, &first).unwrap();
    let failure = get(At::Reader(r), &word(1, 2)).unwrap_err();
    assert_eq!(failure.code, UBT_ERR_SNAPSHOT_REVERTED);
    assert!(failure.message.contains("reverted"), "{failure:?}");
    assert_eq!(
        status_of(prove(At::Reader(r), &[word(1, 1)])),
        UBT_ERR_SNAPSHOT_REVERTED
    );
    // The reader's root is still known; the handle is still valid.
    assert_eq!(reader_root(r).unwrap(), second);
    reader_close(r).unwrap();
    close(db).unwrap();
}

#[test]
fn a_flat_index_requires_account_level_writes() {
    let dir = TempDir::new("flat");
    let mut options = small_options();
    options.flat_index = 1;
    let db = open(&dir, Some(&options)).unwrap();
    let failure = apply(db, &[(word(1, 1), word(2, 1))]).unwrap_err();
    assert_eq!(failure.code, UBT_ERR_OWNERS_REQUIRED);
    assert!(failure.message.contains("flat index"), "{failure:?}");
    assert_eq!(tip_root(db).unwrap(), B256::ZERO);
    let who = Address::repeat_byte(3);
    let ops = [
        Op::SetAccount(who, account_of(3, 0)),
        Op::SetStorage(who, U256::from(1u8), word(4, 1)),
    ];
    apply_accounts(db, &ops).unwrap();
    assert_eq!(
        storage(At::Tip(db), &who, &U256::from(1u8)).unwrap(),
        Some(word(4, 1))
    );
    close(db).unwrap();
}

#[test]
fn code_without_its_chunks_is_reported() {
    let dir = TempDir::new("chunks");
    let db = open(&dir, Some(&small_options())).unwrap();
    let who = Address::repeat_byte(4);
    // The header says 100 bytes of code; no chunk was written.
    apply_accounts(db, &[Op::SetAccount(who, account_of(4, 100))]).unwrap();
    let failure = code(At::Tip(db), &who).unwrap_err();
    assert_eq!(failure.code, UBT_ERR_MISSING_CODE_CHUNK);
    assert_eq!(account(At::Tip(db), &who).unwrap().unwrap().code_size, 100);
    close(db).unwrap();
}

#[test]
fn code_whose_size_geth_wrote_as_zero_reads_by_its_hash() {
    let dir = TempDir::new("zero-size");
    let db = open(&dir, Some(&small_options())).unwrap();
    let who = Address::repeat_byte(5);
    let contract: Vec<u8> = (0..700u32).map(|i| (i * 7 % 251) as u8).collect();
    let header = |code_size: u32| ubt_engine::Account {
        code_hash: keccak256(&contract),
        ..account_of(5, code_size)
    };
    // Deployed, then updated by go-ethereum's StateDB without its code
    // loaded: the same hash, code size 0.
    apply_accounts(
        db,
        &[
            Op::SetAccount(who, header(700)),
            Op::SetCode(who, contract.clone()),
        ],
    )
    .unwrap();
    apply_accounts(db, &[Op::SetAccount(who, header(0))]).unwrap();
    assert_eq!(account(At::Tip(db), &who).unwrap().unwrap().code_size, 0);
    assert_eq!(code(At::Tip(db), &who).unwrap(), Some(contract.clone()));
    let snapshot = reader(db, &tip_root(db).unwrap()).unwrap();
    assert_eq!(code(At::Reader(snapshot), &who).unwrap(), Some(contract));
    reader_close(snapshot).unwrap();
    close(db).unwrap();
}
