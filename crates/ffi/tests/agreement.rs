//! The ABI agrees with the engine it wraps: the same blocks applied
//! through the C functions and through `ubt_engine::Db` (two databases
//! side by side) give the same root after every block, persist, revert,
//! commit and reopen, and every read (tree keys, accounts, storage slots,
//! code, at the tip and in readers) returns the engine's answer.

// Test code: a failed unwrap is a failed test, and casts narrow test data.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::cast_possible_truncation
)]

mod common;

use alloy_primitives::{Address, B256, U256};
use common::*;
use ubt_engine::{AccountBatch, Db, Options, SyncMode};

/// The engine's options equal to `small_options()`.
fn engine_options(flat_index: bool) -> Options {
    Options {
        memory_budget_bytes: 8 << 20,
        sync: SyncMode::Never,
        flat_index,
        ..Options::default()
    }
}

/// Block `block`: 150 writes over 1,000 keys (rewrites and new keys).
fn block_writes(block: u64) -> Vec<(B256, B256)> {
    (0..150)
        .map(|i| {
            (
                word(1, (block * 97 + i * 13) % 1000),
                word(2, block * 1000 + i),
            )
        })
        .collect()
}

/// Keys 0..1100 of the blocks' key space (the last 100 never written).
fn all_keys() -> Vec<B256> {
    (0..1100).map(|i| word(1, i)).collect()
}

/// Every tree-key read of the ABI at `at` equals the engine's `expected`.
fn assert_reads_agree(at: At, expected: &[Option<B256>]) {
    let keys = all_keys();
    assert_eq!(get_many(at, &keys).unwrap(), expected);
    for (key, value) in keys.iter().zip(expected).step_by(37) {
        assert_eq!(get(at, key).unwrap(), *value);
    }
}

#[test]
fn tree_key_blocks_give_the_engines_roots_and_values() {
    let (dir, engine_dir) = (
        TempDir::new("agree-keys"),
        TempDir::new("agree-keys-engine"),
    );
    let db = open(&dir, Some(&small_options())).unwrap();
    let mut engine = Db::open(&engine_dir.0, engine_options(false)).unwrap();
    let mut roots = Vec::new();
    for block in 0..12 {
        let writes = block_writes(block);
        let root = apply(db, &writes).unwrap();
        assert_eq!(root, engine.apply(&writes).unwrap(), "block {block}");
        if block % 4 == 3 {
            persist(db, &root).unwrap();
            engine.persist(&root).unwrap();
        }
        roots.push(root);
    }
    assert_eq!(tip_root(db).unwrap(), engine.root());
    assert_eq!(committed_root(db).unwrap(), engine.committed_root());
    assert_eq!(committed_root(db).unwrap(), roots[11]);
    let keys = all_keys();
    assert_reads_agree(At::Tip(db), &engine.get_many(&keys).unwrap());

    // Readers at older roots answer as the engine's readers do.
    for &at in &[roots[9], roots[11]] {
        let ours = reader(db, &at).unwrap();
        assert_eq!(reader_root(ours).unwrap(), at);
        let theirs = engine.reader(&at).unwrap();
        assert_reads_agree(At::Reader(ours), &theirs.get_many(&keys).unwrap());
        reader_close(ours).unwrap();
    }

    // A revert into persisted blocks, then new blocks on top.
    revert(db, &roots[5]).unwrap();
    engine.revert(&roots[5]).unwrap();
    assert_eq!(tip_root(db).unwrap(), roots[5]);
    assert_reads_agree(At::Tip(db), &engine.get_many(&keys).unwrap());
    for block in 100..103 {
        let writes = block_writes(block);
        assert_eq!(apply(db, &writes).unwrap(), engine.apply(&writes).unwrap());
    }
    let committed = commit(db).unwrap();
    assert_eq!(committed, engine.commit().unwrap());

    // Reopened, the database is where it was committed.
    close(db).unwrap();
    let db = open(&dir, Some(&small_options())).unwrap();
    assert_eq!(tip_root(db).unwrap(), committed);
    assert_reads_agree(At::Tip(db), &engine.get_many(&keys).unwrap());
    let stats = stats(db).unwrap();
    let engine_stats = engine.stats();
    assert_eq!(B256::from(stats.root), committed);
    assert_eq!(stats.leaf_count, engine_stats.leaf_count);
    assert_eq!(stats.stem_count, engine_stats.stem_count);
    assert_eq!(stats.group_depth, engine_stats.group_depth);
    assert_eq!(stats.memory_budget_bytes, 8 << 20);
    close(db).unwrap();
}

/// Blocks of account-level operations over 6 accounts: every kind, code
/// that grows and shrinks, deleted slots and accounts.
fn account_blocks() -> Vec<Vec<Op>> {
    let address = |i: u64| Address::from_slice(&word(3, i)[..20]);
    let code = |len: usize, fill: u8| vec![fill; len];
    (0..8u64)
        .map(|block| {
            let mut ops = Vec::new();
            for a in 0..6u64 {
                let who = address(a);
                let size = (block as usize * 29 + a as usize * 11) % 200;
                ops.push(Op::SetAccount(who, account_of(block * 10 + a, size as u32)));
                ops.push(Op::SetCode(who, code(size, block as u8 + 1)));
                ops.push(Op::SetStorage(
                    who,
                    U256::from(block),
                    word(4, block * 6 + a),
                ));
                ops.push(Op::SetStorage(
                    who,
                    U256::MAX - U256::from(a),
                    word(5, block),
                ));
                if block % 3 == 2 {
                    ops.push(Op::DeleteStorage(who, U256::from(block - 1)));
                }
            }
            if block % 4 == 3 {
                ops.push(Op::DeleteAccount(address(block % 6)));
            }
            ops
        })
        .collect()
}

/// Every account-level read of the ABI at `at` equals `engine`'s at the
/// same state.
fn assert_accounts_agree(at: At, engine: &Db) {
    for a in 0..7u64 {
        let who = Address::from_slice(&word(3, a)[..20]);
        assert_eq!(account(at, &who).unwrap(), engine.account(&who).unwrap());
        assert_eq!(
            code(at, &who).unwrap(),
            engine.code(&who).unwrap().map(|c| c.to_vec())
        );
        for slot in (0..9u64)
            .map(U256::from)
            .chain([U256::MAX, U256::MAX - U256::from(3)])
        {
            assert_eq!(
                storage(at, &who, &slot).unwrap(),
                engine.storage(&who, &slot).unwrap(),
                "account {a} slot {slot}"
            );
        }
    }
}

/// Applies [`account_blocks`] through both APIs, with or without a flat
/// index, comparing roots after each block and reads at the end.
fn account_blocks_agree(flat_index: bool) {
    let label = if flat_index {
        "agree-flat"
    } else {
        "agree-accounts"
    };
    let (dir, engine_dir) = (TempDir::new(label), TempDir::new(label));
    let mut options = small_options();
    options.flat_index = u8::from(flat_index);
    let db = open(&dir, Some(&options)).unwrap();
    let mut engine = Db::open(&engine_dir.0, engine_options(flat_index)).unwrap();
    assert_eq!(stats(db).unwrap().flat_index, u8::from(flat_index));
    let mut roots = Vec::new();
    for (block, ops) in account_blocks().iter().enumerate() {
        let batch: AccountBatch = ops.iter().map(Op::to_engine).collect();
        let root = apply_accounts(db, ops).unwrap();
        assert_eq!(
            root,
            engine.apply_accounts(&batch).unwrap(),
            "block {block}"
        );
        roots.push(root);
    }
    assert_accounts_agree(At::Tip(db), &engine);
    // A reader at an older root reads what the engine read there.
    let ours = reader(db, &roots[4]).unwrap();
    engine.revert(&roots[4]).unwrap();
    assert_accounts_agree(At::Reader(ours), &engine);
    reader_close(ours).unwrap();
    close(db).unwrap();
}

#[test]
fn account_blocks_give_the_engines_roots_and_reads() {
    account_blocks_agree(false);
}

#[test]
fn account_blocks_agree_on_a_database_with_a_flat_index() {
    account_blocks_agree(true);
}

#[test]
fn empty_blocks_and_empty_reads_are_accepted() {
    let (dir, engine_dir) = (TempDir::new("agree-empty"), TempDir::new("agree-empty"));
    let db = open(&dir, Some(&small_options())).unwrap();
    let mut engine = Db::open(&engine_dir.0, engine_options(false)).unwrap();
    assert_eq!(tip_root(db).unwrap(), B256::ZERO);
    assert_eq!(apply(db, &[]).unwrap(), engine.apply(&[]).unwrap());
    assert_eq!(
        apply_accounts(db, &[]).unwrap(),
        engine.apply_accounts(&AccountBatch::new()).unwrap()
    );
    assert_eq!(get_many(At::Tip(db), &[]).unwrap(), Vec::new());
    close(db).unwrap();
}
