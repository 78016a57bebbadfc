//! The account-level batch: its tree-key writes reach geth's roots on the
//! account vectors, equal the `AccountWrites` calls it stands for and an
//! independent model of geth's `BinaryTrie` written out here, on the
//! reference and the fast tree; and each of geth's quirks holds.

// Test code: a failed unwrap is a failed test, and casts narrow test data.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::cast_possible_truncation
)]

mod common;

use alloy_primitives::{Address, Bytes, B256, U256};
use common::*;
use proptest::prelude::*;
use serde_json::Value;
use ubt_spec::account::geth_storage_value;
use ubt_spec::chunk::chunkify_code;
use ubt_spec::key::{basic_data_key, code_chunk_key, code_hash_key, storage_slot_key};
use ubt_spec::{
    Account, AccountBatch, AccountOp, AccountWrites, FastTree, ReferenceTree, StateTree,
};

/// Cases per property unless `PROPTEST_CASES` says otherwise.
fn cases(default: u32) -> ProptestConfig {
    let cases = std::env::var("PROPTEST_CASES")
        .ok()
        .and_then(|v| v.parse().ok());
    ProptestConfig::with_cases(cases.unwrap_or(default))
}

/// One vector op as an account operation.
fn vector_op(op: &Value) -> AccountOp {
    let address = address(op, "address");
    match str_field(op, "op") {
        "update_account" => AccountOp::SetAccount {
            address,
            account: Account {
                nonce: str_field(op, "nonce").parse().expect("nonce"),
                balance: decimal(op, "balance"),
                code_size: op["code_len"].as_u64().expect("code_len") as u32,
                code_hash: b256(op, "code_hash"),
            },
        },
        "update_code" => AccountOp::SetCode {
            address,
            code: Bytes::from(bytes(str_field(op, "code"))),
        },
        "update_storage" => AccountOp::SetStorage {
            address,
            slot: u256(op, "slot"),
            value: geth_storage_value(&bytes(str_field(op, "value"))),
        },
        "delete_storage" => AccountOp::DeleteStorage {
            address,
            slot: u256(op, "slot"),
        },
        "delete_account" => AccountOp::DeleteAccount { address },
        other => panic!("unknown op {other}"),
    }
}

#[test]
fn batches_reach_geths_roots_on_the_account_vectors() {
    let v = vector_file("accounts.json");
    for case in array(&v, "cases") {
        let name = str_field(case, "name");
        let ops: Vec<AccountOp> = array(case, "ops").iter().map(vector_op).collect();
        // One operation per block: every intermediate root.
        let mut reference = ReferenceTree::new();
        let mut fast = FastTree::new();
        for (i, (op, raw)) in ops.iter().zip(array(case, "ops")).enumerate() {
            let batch = AccountBatch::from(vec![op.clone()]);
            reference.insert_batch(&batch.tree_writes());
            fast.apply_account_batch(&batch);
            let root_after = b256(raw, "root_after");
            assert_eq!(B256::from(reference.root()), root_after, "{name} op {i}");
            assert_eq!(B256::from(fast.root()), root_after, "{name} op {i} (fast)");
        }
        // The whole case as one batch: the final root and leaf set.
        let batch: AccountBatch = ops.into_iter().collect();
        let mut whole = ReferenceTree::new();
        whole.insert_batch(&batch.tree_writes());
        assert_eq!(B256::from(whole.root()), b256(case, "root"), "{name}");
        let expected: Vec<(B256, B256)> = array(case, "leaves")
            .iter()
            .map(|l| (b256(l, "key"), b256(l, "value")))
            .collect();
        let leaves: Vec<(B256, B256)> = whole.entries().map(|(k, v)| (*k, *v)).collect();
        assert_eq!(leaves, expected, "{name} leaf set");
    }
}

/// An account operation as the caller of geth's API states it: storage
/// values as raw bytes (any length), balances of any width.
#[derive(Clone, Debug)]
enum CallerOp {
    Update {
        address: Address,
        nonce: u64,
        balance: U256,
        code_hash: B256,
        code_size: u32,
    },
    Code {
        address: Address,
        code: Vec<u8>,
    },
    Storage {
        address: Address,
        slot: U256,
        value: Vec<u8>,
    },
    DeleteStorage {
        address: Address,
        slot: U256,
    },
    DeleteAccount {
        address: Address,
    },
}

impl CallerOp {
    fn to_account_op(&self) -> AccountOp {
        match self.clone() {
            CallerOp::Update {
                address,
                nonce,
                balance,
                code_hash,
                code_size,
            } => AccountOp::SetAccount {
                address,
                account: Account {
                    nonce,
                    balance,
                    code_size,
                    code_hash,
                },
            },
            CallerOp::Code { address, code } => AccountOp::SetCode {
                address,
                code: code.into(),
            },
            CallerOp::Storage {
                address,
                slot,
                value,
            } => AccountOp::SetStorage {
                address,
                slot,
                value: geth_storage_value(&value),
            },
            CallerOp::DeleteStorage { address, slot } => AccountOp::DeleteStorage { address, slot },
            CallerOp::DeleteAccount { address } => AccountOp::DeleteAccount { address },
        }
    }

    fn call(&self, tree: &mut impl StateTree) {
        match self {
            CallerOp::Update {
                address,
                nonce,
                balance,
                code_hash,
                code_size,
            } => tree.update_account(address, *nonce, balance, code_hash, *code_size),
            CallerOp::Code { address, code } => tree.update_code(address, code),
            CallerOp::Storage {
                address,
                slot,
                value,
            } => tree.update_storage(address, slot, value),
            CallerOp::DeleteStorage { address, slot } => tree.delete_storage(address, slot),
            CallerOp::DeleteAccount { address } => tree.delete_account(address),
        }
    }

    /// geth's writes, written out from its source without the library's
    /// encoders (keys aside).
    fn model_writes(&self) -> Vec<(B256, B256)> {
        match self {
            CallerOp::Update {
                address,
                nonce,
                balance,
                code_hash,
                code_size,
            } => {
                let mut leaf = [0u8; 32];
                leaf[4..8].copy_from_slice(&code_size.to_be_bytes());
                leaf[8..16].copy_from_slice(&nonce.to_be_bytes());
                // Minimal big-endian bytes; past 16 bytes, geth keeps [16..].
                let full = balance.to_be_bytes::<32>();
                let mut minimal: &[u8] = &full[full.iter().take_while(|b| **b == 0).count()..];
                if minimal.len() > 16 {
                    minimal = &minimal[16..];
                }
                leaf[32 - minimal.len()..].copy_from_slice(minimal);
                vec![
                    (basic_data_key(address), B256::from(leaf)),
                    (code_hash_key(address), *code_hash),
                ]
            }
            CallerOp::Code { address, code } => chunkify_code(code)
                .into_iter()
                .enumerate()
                .map(|(i, chunk)| (code_chunk_key(address, i as u64), B256::from(chunk)))
                .collect(),
            CallerOp::Storage {
                address,
                slot,
                value,
            } => {
                let mut leaf = [0u8; 32];
                if value.len() >= 32 {
                    leaf.copy_from_slice(&value[..32]);
                } else {
                    leaf[32 - value.len()..].copy_from_slice(value);
                }
                vec![(storage_slot_key(address, slot), B256::from(leaf))]
            }
            CallerOp::DeleteStorage { address, slot } => {
                vec![(storage_slot_key(address, slot), B256::ZERO)]
            }
            CallerOp::DeleteAccount { address } => vec![
                (basic_data_key(address), B256::ZERO),
                (code_hash_key(address), B256::ZERO),
            ],
        }
    }
}

fn address_strategy() -> impl Strategy<Value = Address> {
    (0u8..3).prop_map(|i| Address::repeat_byte(0x10 + i))
}

fn slot_strategy() -> impl Strategy<Value = U256> {
    prop_oneof![
        (0u64..70).prop_map(U256::from),
        any::<[u8; 32]>().prop_map(U256::from_be_bytes),
        Just(U256::MAX),
    ]
}

fn balance_strategy() -> impl Strategy<Value = U256> {
    prop_oneof![
        any::<u64>().prop_map(U256::from),
        any::<u128>().prop_map(U256::from),
        any::<[u8; 32]>().prop_map(U256::from_be_bytes),
        Just(U256::from(1u8) << 128usize),
    ]
}

fn caller_op_strategy() -> impl Strategy<Value = CallerOp> {
    prop_oneof![
        (
            address_strategy(),
            any::<u64>(),
            balance_strategy(),
            any::<[u8; 32]>(),
            prop_oneof![0u32..200, any::<u32>()]
        )
            .prop_map(
                |(address, nonce, balance, hash, code_size)| CallerOp::Update {
                    address,
                    nonce,
                    balance,
                    code_hash: B256::from(hash),
                    code_size,
                }
            ),
        (
            address_strategy(),
            proptest::collection::vec(any::<u8>(), 0..300)
        )
            .prop_map(|(address, code)| CallerOp::Code { address, code }),
        (
            address_strategy(),
            slot_strategy(),
            proptest::collection::vec(any::<u8>(), 0..40)
        )
            .prop_map(|(address, slot, value)| CallerOp::Storage {
                address,
                slot,
                value
            }),
        (address_strategy(), slot_strategy())
            .prop_map(|(address, slot)| CallerOp::DeleteStorage { address, slot }),
        address_strategy().prop_map(|address| CallerOp::DeleteAccount { address }),
    ]
}

proptest! {
    #![proptest_config(cases(128))]

    #[test]
    fn batch_writes_equal_account_writes_and_the_model(
        ops in proptest::collection::vec(caller_op_strategy(), 0..40)
    ) {
        let batch: AccountBatch = ops.iter().map(CallerOp::to_account_op).collect();
        let writes = batch.tree_writes();
        let model: Vec<(B256, B256)> = ops.iter().flat_map(CallerOp::model_writes).collect();
        prop_assert_eq!(&writes, &model);
        prop_assert_eq!(writes.len(), batch.tree_write_count());

        let mut by_calls = ReferenceTree::new();
        for op in &ops {
            op.call(&mut by_calls);
        }
        let mut by_batch = ReferenceTree::new();
        by_batch.insert_batch(&writes);
        let mut fast = FastTree::new();
        fast.apply_account_batch(&batch);
        let root = by_calls.compute_root();
        prop_assert_eq!(by_batch.compute_root(), root);
        prop_assert_eq!(fast.root(), root);
        let by_calls_entries: Vec<_> = by_calls.entries().collect();
        let by_batch_entries: Vec<_> = by_batch.entries().collect();
        prop_assert_eq!(by_calls_entries, by_batch_entries);

        for address in (0u8..3).map(|i| Address::repeat_byte(0x10 + i)) {
            prop_assert_eq!(fast.account(&address), by_calls.account(&address));
            prop_assert_eq!(fast.code(&address), by_calls.code(&address));
        }
    }
}

fn who() -> Address {
    Address::repeat_byte(0xab)
}

fn account(nonce: u64, balance: U256, code_size: u32) -> Account {
    Account {
        nonce,
        balance,
        code_size,
        code_hash: B256::repeat_byte(0x77),
    }
}

#[test]
fn delete_account_keeps_storage_and_code_chunks() {
    let mut tree = ReferenceTree::new();
    let mut batch = AccountBatch::new();
    batch
        .set_account(who(), account(3, U256::from(9u8), 40))
        .set_code(who(), vec![0x5b; 40])
        .set_storage(who(), U256::from(7u8), B256::repeat_byte(1))
        .delete_account(who());
    tree.apply_account_batch(&batch);
    assert_eq!(tree.account(&who()), None);
    assert_eq!(tree.get(&basic_data_key(&who())), Some(B256::ZERO));
    assert_eq!(tree.get(&code_hash_key(&who())), Some(B256::ZERO));
    assert_eq!(
        tree.storage(&who(), &U256::from(7u8)),
        Some(B256::repeat_byte(1))
    );
    assert!(tree.get(&code_chunk_key(&who(), 1)).is_some());
}

#[test]
fn shorter_code_leaves_the_old_chunks_and_the_code_size() {
    let mut tree = ReferenceTree::new();
    let mut batch = AccountBatch::new();
    batch
        .set_account(who(), account(1, U256::ZERO, 70))
        .set_code(who(), vec![0xaa; 70])
        .set_code(who(), vec![0xbb; 10]);
    tree.apply_account_batch(&batch);
    // Chunk 2 (bytes 62..70) is still the old code's.
    let chunk_2 = tree.get(&code_chunk_key(&who(), 2)).expect("old chunk");
    assert_eq!(&chunk_2[1..9], &[0xaa; 8]);
    // The code size is still 70: the read sees the new first chunk and the
    // old ones after it.
    let code = tree.code(&who()).expect("chunks present").expect("account");
    assert_eq!(code.len(), 70);
    assert_eq!(&code[..10], &[0xbb; 10]);
    assert_eq!(&code[10..31], &[0; 21], "new chunk 0 is zero-padded");
    assert_eq!(&code[31..], &[0xaa; 39]);
}

#[test]
fn delete_storage_is_a_present_zero_leaf() {
    let mut deleted = ReferenceTree::new();
    let mut batch = AccountBatch::new();
    batch.delete_storage(who(), U256::from(70u8));
    deleted.apply_account_batch(&batch);
    assert_eq!(deleted.storage(&who(), &U256::from(70u8)), Some(B256::ZERO));
    assert_ne!(deleted.compute_root(), ReferenceTree::new().compute_root());
}

#[test]
fn wide_balances_are_truncated_and_code_sizes_kept_as_given() {
    let mut tree = ReferenceTree::new();
    let wide = (U256::from(1u8) << 136usize) + U256::from(5u8);
    let mut batch = AccountBatch::new();
    batch.set_account(who(), account(1, wide, 123_456));
    tree.apply_account_batch(&batch);
    let read = tree.account(&who()).expect("present");
    assert_eq!(read.balance, U256::from(5u8));
    assert_eq!(
        read.code_size, 123_456,
        "no code was written; size as given"
    );
    batch = AccountBatch::new();
    batch.set_account(who(), account(1, U256::from(1u8) << 128usize, 0));
    tree.apply_account_batch(&batch);
    assert_eq!(tree.account(&who()).map(|a| a.balance), Some(U256::ZERO));
    batch = AccountBatch::new();
    batch.set_account(who(), account(1, U256::from(u128::MAX), 0));
    tree.apply_account_batch(&batch);
    assert_eq!(
        tree.account(&who()).map(|a| a.balance),
        Some(U256::from(u128::MAX))
    );
}

#[test]
fn a_zero_account_is_present_until_deleted() {
    // All-zero BasicData with a non-zero code hash is an account; both
    // zero is a deleted one, even when written by SetAccount.
    let mut tree = ReferenceTree::new();
    let mut batch = AccountBatch::new();
    batch.set_account(who(), account(0, U256::ZERO, 0));
    tree.apply_account_batch(&batch);
    assert_eq!(tree.account(&who()), Some(account(0, U256::ZERO, 0)));
    batch = AccountBatch::new();
    batch.set_account(who(), Account::default());
    tree.apply_account_batch(&batch);
    assert_eq!(tree.account(&who()), None);
}
