//! Conformance with go-ethereum v1.17.10: key derivation (keys.json), code
//! chunking (chunkify.json), raw insert sequences with the root after every
//! step (tries.json) and the account API with every intermediate root and the
//! complete final leaf set (accounts.json). Tree-level checks run on both the
//! reference tree and the fast tree.

// Test code: a failed unwrap is a failed test, and casts narrow test data.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::cast_possible_truncation
)]

mod common;

use alloy_primitives::B256;
use common::*;
use serde_json::Value;
use ubt_spec::chunk::chunkify_code;
use ubt_spec::hash::sha256;
use ubt_spec::key::*;
use ubt_spec::{AccountWrites, FastTree, ReferenceTree, StateTree};

#[test]
fn keys_match_geth() {
    let v = vector_file("keys.json");
    for case in array(&v, "tree_key") {
        let sub = case["sub_index"].as_u64().expect("sub_index") as u8;
        let key = get_tree_key(&address(case, "address"), &u256(case, "tree_index"), sub);
        assert_eq!(key, b256(case, "key"), "tree_key {case}");
    }
    for case in array(&v, "basic_data_key") {
        assert_eq!(
            basic_data_key(&address(case, "address")),
            b256(case, "key"),
            "{case}"
        );
    }
    for case in array(&v, "code_hash_key") {
        assert_eq!(
            code_hash_key(&address(case, "address")),
            b256(case, "key"),
            "{case}"
        );
    }
    for case in array(&v, "storage_slot_key") {
        let slot = u256(case, "slot");
        let (tree_index, sub) = storage_index(&slot);
        assert_eq!(tree_index, u256(case, "tree_index"), "tree_index {case}");
        assert_eq!(
            u64::from(sub),
            case["sub_index"].as_u64().expect("sub"),
            "{case}"
        );
        let key = storage_slot_key(&address(case, "address"), &slot);
        assert_eq!(key, b256(case, "key"), "storage key {case}");
    }
    for case in array(&v, "code_chunk_key") {
        let chunk = case["chunk_id"].as_u64().expect("chunk_id");
        let (tree_index, sub) = code_chunk_index(chunk);
        assert_eq!(tree_index, u256(case, "tree_index"), "{case}");
        assert_eq!(
            u64::from(sub),
            case["sub_index"].as_u64().expect("sub"),
            "{case}"
        );
        assert_eq!(
            code_chunk_key(&address(case, "address"), chunk),
            b256(case, "key"),
            "{case}"
        );
    }
}

#[test]
fn chunkify_matches_geth() {
    let v = vector_file("chunkify.json");
    for case in array(&v, "cases") {
        let chunks = chunkify_code(&bytes(str_field(case, "code")));
        let expected: Vec<Vec<u8>> = array(case, "chunks")
            .iter()
            .map(|c| bytes(c.as_str().expect("chunk")))
            .collect();
        let got: Vec<Vec<u8>> = chunks.iter().map(|c| c.to_vec()).collect();
        assert_eq!(got, expected, "case {}", str_field(case, "name"));
    }
}

fn apply_trie_step<T: StateTree>(tree: &mut T, step: &Value) {
    let from = step["from"].as_u64().unwrap_or(0);
    let to = step["to"].as_u64().unwrap_or(0);
    let every = step["every"].as_u64().unwrap_or(1);
    match str_field(step, "op") {
        "insert" => tree.insert(b256(step, "key"), b256(step, "value")),
        "insert_generated" => {
            let indices: Vec<u64> = if step["order"].as_str() == Some("descending") {
                (from..to).rev().collect()
            } else {
                (from..to).collect()
            };
            for i in indices {
                tree.insert(generated_key(i), generated_value(i));
            }
        }
        "overwrite_generated" => {
            for i in (from..to).filter(|i| i % every == 0) {
                tree.insert(
                    generated_key(i),
                    B256::from(sha256(generated_value(i).as_slice())),
                );
            }
        }
        "zero_generated" => {
            for i in (from..to).filter(|i| i % every == 0) {
                tree.insert(generated_key(i), B256::ZERO);
            }
        }
        other => panic!("unknown op {other}"),
    }
}

fn check_tries<T: StateTree + Default>(leaf_count: impl Fn(&T) -> u64) {
    let v = vector_file("tries.json");
    for case in array(&v, "cases") {
        let name = str_field(case, "name");
        let mut tree = T::default();
        for (i, step) in array(case, "steps").iter().enumerate() {
            apply_trie_step(&mut tree, step);
            assert_eq!(
                B256::from(tree.root()),
                b256(step, "root_after"),
                "{name} step {i}"
            );
        }
        assert_eq!(
            B256::from(tree.root()),
            b256(case, "root"),
            "{name} final root"
        );
        assert_eq!(
            leaf_count(&tree),
            case["leaf_count"].as_u64().expect("leaf_count"),
            "{name}"
        );
    }
}

#[test]
fn tries_match_geth_on_reference_tree() {
    check_tries::<ReferenceTree>(|t| t.len() as u64);
}

#[test]
fn tries_match_geth_on_fast_tree() {
    check_tries::<FastTree>(FastTree::len);
}

fn apply_account_op<T: StateTree>(tree: &mut T, op: &Value) {
    let who = address(op, "address");
    match str_field(op, "op") {
        "update_account" => {
            let nonce: u64 = str_field(op, "nonce").parse().expect("nonce");
            let code_len = op["code_len"].as_u64().expect("code_len") as u32;
            tree.update_account(
                &who,
                nonce,
                &decimal(op, "balance"),
                &b256(op, "code_hash"),
                code_len,
            );
            let account = tree.account(&who).expect("account present after update");
            assert_eq!(account.nonce, nonce);
            assert_eq!(account.code_hash, b256(op, "code_hash"));
        }
        "update_code" => tree.update_code(&who, &bytes(str_field(op, "code"))),
        "update_storage" => {
            tree.update_storage(&who, &u256(op, "slot"), &bytes(str_field(op, "value")))
        }
        "delete_storage" => tree.delete_storage(&who, &u256(op, "slot")),
        "delete_account" => {
            tree.delete_account(&who);
            assert_eq!(tree.account(&who), None, "account readable after delete");
        }
        other => panic!("unknown op {other}"),
    }
}

fn check_accounts<T: StateTree + Default>() {
    let v = vector_file("accounts.json");
    for case in array(&v, "cases") {
        let name = str_field(case, "name");
        let mut tree = T::default();
        let mut mirror = ReferenceTree::new();
        for (i, op) in array(case, "ops").iter().enumerate() {
            apply_account_op(&mut tree, op);
            apply_account_op(&mut mirror, op);
            assert_eq!(
                B256::from(tree.root()),
                b256(op, "root_after"),
                "{name} op {i}"
            );
        }
        assert_eq!(
            B256::from(tree.root()),
            b256(case, "root"),
            "{name} final root"
        );
        let expected: Vec<(B256, B256)> = array(case, "leaves")
            .iter()
            .map(|l| (b256(l, "key"), b256(l, "value")))
            .collect();
        let leaves: Vec<(B256, B256)> = mirror.entries().map(|(k, v)| (*k, *v)).collect();
        assert_eq!(leaves, expected, "{name} leaf set");
        for (key, value) in &expected {
            assert_eq!(tree.get(key), Some(*value), "{name} value of {key}");
        }
    }
}

#[test]
fn accounts_match_geth_on_reference_tree() {
    check_accounts::<ReferenceTree>();
}

#[test]
fn accounts_match_geth_on_fast_tree() {
    check_accounts::<FastTree>();
}
