//! The account-level API on an on-disk database: random blocks of account
//! operations applied with `Db::apply_accounts`, with persists,
//! checkpoints, reopens and crashes (unpersisted blocks dropped) in
//! between, agree after every step with the same operations applied through
//! `AccountWrites` to the reference tree: the root, and every account,
//! storage slot and code read, at the tip and through a snapshot reader;
//! with reverts, and with and without the flat index of account values
//! (whose verify then checks its values against the tree's).
//!
//! Set `PROPTEST_CASES` to run more cases.

// Test code: a failed unwrap is a failed test, and casts narrow test data.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::cast_possible_truncation
)]

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::atomic::{AtomicU32, Ordering};

use alloy_primitives::{Address, Bytes, B256, U256};
use proptest::prelude::*;
use ubt_engine::Root as Hash;
use ubt_engine::{
    Account, AccountBatch, AccountOp, CodeReadError, Db, MissingCodeChunk, Options, SyncMode,
};
use ubt_spec::{AccountWrites, ReferenceTree};

/// Cases per property unless `PROPTEST_CASES` says otherwise.
fn cases(default: u32) -> ProptestConfig {
    let cases = std::env::var("PROPTEST_CASES")
        .ok()
        .and_then(|v| v.parse().ok());
    ProptestConfig::with_cases(cases.unwrap_or(default))
}

/// A fresh directory under the system temp dir, removed on drop.
struct TempDir(PathBuf);

impl TempDir {
    fn new(label: &str) -> TempDir {
        static COUNTER: AtomicU32 = AtomicU32::new(0);
        let n = COUNTER.fetch_add(1, Ordering::Relaxed);
        let path = std::env::temp_dir().join(format!(
            "ubt-engine-{label}-test-{}-{n}",
            std::process::id()
        ));
        let _ = std::fs::remove_dir_all(&path);
        TempDir(path)
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

fn options() -> Options {
    Options {
        group_depth: Some(3),
        memory_budget_bytes: 64 << 10,
        sync: SyncMode::Never,
        revert_depth: 4,
        ..Options::default()
    }
}

fn flat_options(flat_index: bool) -> Options {
    Options {
        flat_index,
        ..options()
    }
}

const ADDRESSES: u8 = 3;

fn address(index: u8) -> Address {
    Address::repeat_byte(0x20 + index)
}

/// The slots the operations use: header slots (in the account stem), a
/// main-storage slot, and the largest.
fn slot(index: u8) -> U256 {
    match index {
        0 => U256::ZERO,
        1 => U256::from(63u8),
        2 => U256::from(64u8),
        3 => U256::from(0x1234_5678u64),
        _ => U256::MAX,
    }
}

const SLOTS: u8 = 5;

fn op_strategy() -> impl Strategy<Value = AccountOp> {
    let address = (0..ADDRESSES).prop_map(address);
    let slot = (0..SLOTS).prop_map(slot);
    let code = prop_oneof![
        4 => proptest::collection::vec(any::<u8>(), 0..200),
        1 => proptest::collection::vec(0x60u8..=0x7f, 3900..4300),
    ];
    prop_oneof![
        (
            address.clone(),
            any::<u64>(),
            any::<u128>(),
            prop_oneof![0u32..300, 3900u32..4300],
            any::<[u8; 32]>()
        )
            .prop_map(|(address, nonce, balance, code_size, hash)| {
                AccountOp::SetAccount {
                    address,
                    account: Account {
                        nonce,
                        balance: U256::from(balance),
                        code_size,
                        code_hash: B256::from(hash),
                    },
                }
            }),
        (address.clone(), code).prop_map(|(address, code)| {
            // A header of the code's length goes with most code.
            AccountOp::SetCode {
                address,
                code: Bytes::from(code),
            }
        }),
        (address.clone(), slot.clone(), any::<[u8; 32]>()).prop_map(|(address, slot, value)| {
            AccountOp::SetStorage {
                address,
                slot,
                value: B256::from(value),
            }
        }),
        (address.clone(), slot)
            .prop_map(|(address, slot)| AccountOp::DeleteStorage { address, slot }),
        address.prop_map(|address| AccountOp::DeleteAccount { address }),
    ]
}

/// A block: its operations, each `SetCode` followed by the header of its
/// length (so most code reads back whole; the rest exercises sizes the
/// chunks do not back).
fn block_strategy() -> impl Strategy<Value = AccountBatch> {
    proptest::collection::vec((op_strategy(), any::<bool>()), 0..12).prop_map(|ops| {
        let mut batch = AccountBatch::new();
        for (op, with_header) in ops {
            let sized = match (&op, with_header) {
                (AccountOp::SetCode { address, code }, true) => Some((*address, code.len())),
                _ => None,
            };
            batch.push(op);
            if let Some((address, code_len)) = sized {
                batch.set_account(
                    address,
                    Account {
                        nonce: 1,
                        balance: U256::from(code_len),
                        code_size: code_len as u32,
                        code_hash: B256::repeat_byte(0xcc),
                    },
                );
            }
        }
        batch
    })
}

#[derive(Clone, Debug)]
enum Step {
    /// Apply a block as a layer.
    Apply(AccountBatch),
    /// Persist the layers up to one of those in memory (the index picks it).
    Persist(prop::sample::Index),
    /// Checkpoint (persists first).
    Checkpoint,
    /// Drop the handle without persisting, and reopen: the unpersisted
    /// blocks are gone.
    Crash,
    /// Close (persists and checkpoints) and reopen.
    Reopen,
    /// Revert to one of the layers in memory (the index picks it).
    Revert(prop::sample::Index),
}

fn step_strategy() -> impl Strategy<Value = Step> {
    prop_oneof![
        8 => block_strategy().prop_map(Step::Apply),
        2 => any::<prop::sample::Index>().prop_map(Step::Persist),
        1 => Just(Step::Checkpoint),
        1 => Just(Step::Crash),
        1 => Just(Step::Reopen),
        2 => any::<prop::sample::Index>().prop_map(Step::Revert),
    ]
}

/// The reference tree after `op`, applied through `AccountWrites`' methods.
fn apply_by_calls(tree: &mut ReferenceTree, op: &AccountOp) {
    match op {
        AccountOp::SetAccount { address, account } => tree.update_account(
            address,
            account.nonce,
            &account.balance,
            &account.code_hash,
            account.code_size,
        ),
        AccountOp::SetCode { address, code } => tree.update_code(address, code),
        AccountOp::SetStorage {
            address,
            slot,
            value,
        } => tree.update_storage(address, slot, value.as_slice()),
        AccountOp::DeleteStorage { address, slot } => tree.delete_storage(address, slot),
        AccountOp::DeleteAccount { address } => tree.delete_account(address),
    }
}

/// Every read of the database at its tip, and of a reader at its root,
/// equals the reference tree's.
fn check_reads(db: &Db, reference: &ReferenceTree) -> Result<(), TestCaseError> {
    prop_assert_eq!(db.root(), reference.compute_root());
    let reader = db.reader(&db.root()).expect("reader at the tip");
    for address in (0..ADDRESSES).map(address) {
        let account = reference.account(&address);
        prop_assert_eq!(db.account(&address).expect("account"), account);
        prop_assert_eq!(reader.account(&address).expect("account"), account);
        let code = reference.code(&address);
        prop_assert_eq!(db.code(&address).map_err(missing_chunk), code.clone());
        prop_assert_eq!(reader.code(&address).map_err(missing_chunk), code);
        for slot in (0..SLOTS).map(slot) {
            let value = reference.storage(&address, &slot);
            prop_assert_eq!(db.storage(&address, &slot).expect("storage"), value);
            prop_assert_eq!(reader.storage(&address, &slot).expect("storage"), value);
        }
    }
    Ok(())
}

/// The missing chunk of a code error (a store error fails the test).
fn missing_chunk(error: CodeReadError<ubt_engine::Error>) -> MissingCodeChunk {
    match error {
        CodeReadError::MissingChunk(missing) => missing,
        CodeReadError::Source(store) => panic!("store error: {store}"),
    }
}

proptest! {
    #![proptest_config(cases(32))]

    #[test]
    fn account_blocks_on_disk_match_the_reference(
        steps in proptest::collection::vec(step_strategy(), 1..24),
        flat in any::<bool>(),
    ) {
        let dir = TempDir::new("accounts");
        let options = || flat_options(flat);
        let mut db = Db::open(&dir.0, options()).expect("create");
        prop_assert_eq!(db.has_flat_index(), flat);
        let mut reference = ReferenceTree::new();
        let mut persisted = ReferenceTree::new();
        // The layers not yet persisted, oldest first: root and state.
        let mut layers: Vec<(Hash, ReferenceTree)> = Vec::new();
        // Every state reached, by root (for reverts).
        let mut states: HashMap<Hash, ReferenceTree> = HashMap::new();
        states.insert(db.root(), reference.clone());
        for step in steps {
            match step {
                Step::Apply(batch) => {
                    let root = db.apply_accounts(&batch).expect("apply");
                    for op in batch.ops() {
                        apply_by_calls(&mut reference, op);
                    }
                    prop_assert_eq!(root.0, reference.compute_root());
                    layers.push((root, reference.clone()));
                    states.insert(root, reference.clone());
                }
                Step::Revert(index) => {
                    let infos = db.layers();
                    if !infos.is_empty() {
                        let target = infos[index.index(infos.len())];
                        db.revert(&target.root).expect("revert");
                        reference = states[&target.root].clone();
                        match layers.iter().rposition(|(root, _)| *root == target.root) {
                            Some(position) => layers.truncate(position + 1),
                            None => {
                                layers.clear();
                                persisted = reference.clone();
                            }
                        }
                    }
                }
                Step::Persist(index) => {
                    if !layers.is_empty() {
                        let last = index.index(layers.len());
                        db.persist(&layers[last].0).expect("persist");
                        persisted = layers[last].1.clone();
                        layers.drain(..=last);
                    }
                }
                Step::Checkpoint => {
                    db.checkpoint().expect("checkpoint");
                    persisted = reference.clone();
                    layers.clear();
                }
                Step::Crash => {
                    drop(db);
                    db = Db::open(&dir.0, options()).expect("reopen");
                    reference = persisted.clone();
                    layers.clear();
                }
                Step::Reopen => {
                    db.close().expect("close");
                    db = Db::open(&dir.0, options()).expect("reopen");
                    persisted = reference.clone();
                    layers.clear();
                }
            }
            check_reads(&db, &reference)?;
        }
        let report = db.verify().expect("verify");
        prop_assert!(report.is_ok(), "{:?}", report.problems);
        db.close().expect("close");
        let read_only = Db::open_read_only(&dir.0, options()).expect("read-only");
        check_reads(&read_only, &reference)?;
        let report = read_only.verify().expect("verify");
        prop_assert!(report.is_ok(), "{:?}", report.problems);
    }
}

#[test]
fn a_contract_reads_back_after_a_reopen_and_a_snapshot_keeps_the_old_code() {
    let dir = TempDir::new("contract");
    let who = address(0);
    let old_code: Vec<u8> = (0..5000u32).map(|i| (i % 256) as u8).collect();
    let header = |code_size: u32, nonce: u64| Account {
        nonce,
        balance: U256::from(10u8),
        code_size,
        code_hash: B256::repeat_byte(0x42),
    };
    let mut db = Db::open(&dir.0, options()).expect("create");
    let mut block = AccountBatch::new();
    block
        .set_account(who, header(5000, 1))
        .set_code(who, old_code.clone())
        .set_storage(who, U256::from(1u8), B256::repeat_byte(7));
    let first = db.apply_accounts(&block).expect("apply");
    db.close().expect("close");

    let mut db = Db::open(&dir.0, options()).expect("reopen");
    assert_eq!(db.root(), first);
    assert_eq!(db.account(&who).expect("read"), Some(header(5000, 1)));
    assert_eq!(
        db.code(&who).expect("read"),
        Some(Bytes::from(old_code.clone()))
    );
    let snapshot = db.reader(&first).expect("reader");

    let mut block = AccountBatch::new();
    block
        .set_account(who, header(3, 2))
        .set_code(who, vec![0x60, 0x00, 0x00])
        .delete_storage(who, U256::from(1u8));
    db.apply_accounts(&block).expect("apply");
    assert_eq!(
        db.code(&who).expect("read"),
        Some(Bytes::from(vec![0x60, 0x00, 0x00]))
    );
    assert_eq!(
        db.storage(&who, &U256::from(1u8)).expect("read"),
        Some(B256::ZERO)
    );
    assert_eq!(
        snapshot.code(&who).expect("read"),
        Some(Bytes::from(old_code))
    );
    assert_eq!(
        snapshot.storage(&who, &U256::from(1u8)).expect("read"),
        Some(B256::repeat_byte(7))
    );

    let mut block = AccountBatch::new();
    block.delete_account(who);
    db.apply_accounts(&block).expect("apply");
    assert_eq!(db.account(&who).expect("read"), None);
    assert_eq!(db.code(&who).expect("read"), None);
    assert_eq!(
        db.storage(&who, &U256::from(1u8)).expect("read"),
        Some(B256::ZERO)
    );
    assert_eq!(snapshot.account(&who).expect("read"), Some(header(5000, 1)));
}

#[test]
fn a_code_size_without_chunks_is_a_typed_error() {
    let dir = TempDir::new("missing-chunk");
    let who = address(1);
    let mut db = Db::open(&dir.0, options()).expect("create");
    let mut block = AccountBatch::new();
    block.set_account(
        who,
        Account {
            nonce: 0,
            balance: U256::ZERO,
            code_size: 100,
            code_hash: B256::repeat_byte(1),
        },
    );
    db.apply_accounts(&block).expect("apply");
    match db.code(&who) {
        Err(CodeReadError::MissingChunk(missing)) => {
            assert_eq!((missing.chunk_id, missing.code_size), (0, 100));
        }
        other => panic!("expected a missing chunk, got {other:?}"),
    }
}

#[test]
fn reads_on_a_read_only_handle_and_writes_refused() {
    let dir = TempDir::new("read-only");
    let who = address(2);
    let mut db = Db::open(&dir.0, options()).expect("create");
    let mut block = AccountBatch::new();
    block.set_storage(who, U256::from(64u8), B256::repeat_byte(3));
    db.apply_accounts(&block).expect("apply");
    db.close().expect("close");
    let mut db = Db::open_read_only(&dir.0, options()).expect("read-only");
    assert_eq!(
        db.storage(&who, &U256::from(64u8)).expect("read"),
        Some(B256::repeat_byte(3))
    );
    assert_eq!(db.account(&who).expect("read"), None, "no header written");
    assert!(matches!(
        db.apply_accounts(&block),
        Err(ubt_engine::Error::ReadOnly(_))
    ));
}

/// A snapshot's account-level reads go through the flat index when the
/// database keeps one: one contract's slots, scattered over as many stems
/// (and buckets) as there are slots, are read from the few index leaves
/// that hold them. They once read the buckets, one per slot, whatever the
/// index. The values are the snapshot's, also for slots changed by a
/// newer block.
#[test]
fn a_snapshots_account_reads_go_through_the_flat_index() {
    const SLOTS: u64 = 300;
    let dir = TempDir::new("reader-flat");
    let who = address(2);
    // Slot i << 16: every slot in its own stem.
    let scattered = |i: u64| U256::from(i + 1) << 16;
    let value = |i: u64, generation: u8| B256::from(U256::from(i * 1000 + u64::from(generation)));
    let mut db = Db::open(&dir.0, flat_options(true)).expect("create");
    let mut block = AccountBatch::new();
    block.set_account(who, Account::default());
    for i in 0..SLOTS {
        block.set_storage(who, scattered(i), value(i, 0));
    }
    // Another account's 20,000 stems, so the contract's slots fall in
    // different buckets (about 40 stems share one).
    for i in 0..20_000 {
        block.set_storage(address(1), scattered(i), value(i, 9));
    }
    let root = db.apply_accounts(&block).expect("apply");
    db.checkpoint().expect("checkpoint");
    db.close().expect("close");

    let mut db = Db::open(&dir.0, flat_options(true)).expect("reopen");
    let snapshot = db.reader(&root).expect("reader");
    let mut newer = AccountBatch::new();
    for i in (0..SLOTS).step_by(3) {
        newer.set_storage(who, scattered(i), value(i, 1));
    }
    db.apply_accounts(&newer).expect("apply a newer block");

    let reads_before = db.diagnostics().io.bucket_reads;
    for i in 0..SLOTS {
        assert_eq!(
            snapshot.storage(&who, &scattered(i)).expect("read"),
            Some(value(i, 0)),
            "slot {i} at the snapshot"
        );
    }
    let reads = db.diagnostics().io.bucket_reads - reads_before;
    assert!(
        reads * 10 < SLOTS,
        "{reads} reads from disk for {SLOTS} slots of one contract: the snapshot read the \
         buckets, not the flat index"
    );
    assert_eq!(
        db.storage(&who, &scattered(3)).expect("read"),
        Some(value(3, 1))
    );
}
