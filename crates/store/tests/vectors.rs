//! Conformance with go-ethereum v1.17.10 through the on-disk store: every
//! `tries.json` case (root after every step) and every `accounts.json` case
//! (root after every operation, then every leaf), at group depths 1..8,
//! committing each step and reopening the database between steps.

// Test code: a failed unwrap is a failed test, and casts narrow test data.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::cast_possible_truncation
)]

mod common;

use std::sync::Arc;

use alloy_primitives::{Address, B256, U256};
use common::*;
use serde_json::Value;
use ubt_spec::hash::sha256;
use ubt_spec::{AccountWrites, StateTree};
use ubt_store::io::StoreDir;
use ubt_store::{Options, Store};

/// The writes of one `tries.json` step.
fn trie_step_writes(step: &Value) -> Vec<(B256, B256)> {
    let from = step["from"].as_u64().unwrap_or(0);
    let to = step["to"].as_u64().unwrap_or(0);
    let every = step["every"].as_u64().unwrap_or(1);
    let selected = || (from..to).filter(move |i| i % every == 0);
    match step["op"].as_str().expect("op") {
        "insert" => vec![(b256_field(step, "key"), b256_field(step, "value"))],
        "insert_generated" => {
            let mut indices: Vec<u64> = (from..to).collect();
            if step["order"].as_str() == Some("descending") {
                indices.reverse();
            }
            indices.into_iter().map(generated_entry).collect()
        }
        "overwrite_generated" => selected()
            .map(|i| {
                let (key, value) = generated_entry(i);
                (key, B256::from(sha256(value.as_slice())))
            })
            .collect(),
        "zero_generated" => selected()
            .map(|i| (generated_entry(i).0, B256::ZERO))
            .collect(),
        other => panic!("unknown op {other}"),
    }
}

/// A store seen as a [`StateTree`] so geth's account operations run on it:
/// every write is applied at once (the vectors are small).
struct StoreTree<'a>(&'a mut Store);

impl StateTree for StoreTree<'_> {
    fn insert(&mut self, key: B256, value: B256) {
        self.0.apply(&[(key, value)]).expect("apply");
    }
    fn get(&self, key: &B256) -> Option<B256> {
        self.0.get(key).expect("get")
    }
    fn root(&mut self) -> [u8; 32] {
        self.0.root()
    }
}

fn account_op(tree: &mut StoreTree<'_>, op: &Value) {
    let who = Address::from_slice(&hex_field(op, "address"));
    let decimal = |field: &str| {
        U256::from_str_radix(op[field].as_str().expect("decimal"), 10).expect("decimal")
    };
    match op["op"].as_str().expect("op") {
        "update_account" => {
            let nonce: u64 = op["nonce"].as_str().expect("nonce").parse().expect("nonce");
            let code_len = op["code_len"].as_u64().expect("code_len") as u32;
            tree.update_account(
                &who,
                nonce,
                &decimal("balance"),
                &b256_field(op, "code_hash"),
                code_len,
            );
        }
        "update_code" => tree.update_code(&who, &hex_field(op, "code")),
        "update_storage" => {
            let slot = U256::from_be_slice(&hex_field(op, "slot"));
            tree.update_storage(&who, &slot, &hex_field(op, "value"));
        }
        "delete_storage" => tree.delete_storage(&who, &U256::from_be_slice(&hex_field(op, "slot"))),
        "delete_account" => tree.delete_account(&who),
        other => panic!("unknown op {other}"),
    }
}

fn fresh(group_depth: u8) -> (Arc<dyn StoreDir>, Options, Store) {
    let (_sim, dir) = sim_dir();
    let opts = options(group_depth, 32 << 10);
    let store = open(&dir, &opts);
    (dir, opts, store)
}

#[test]
fn tries_vectors_on_disk_at_every_group_depth() {
    let vectors = vector_file("tries.json");
    for group_depth in 1..=8 {
        for case in vectors["cases"].as_array().expect("cases") {
            let name = case["name"].as_str().expect("name");
            let (dir, opts, mut store) = fresh(group_depth);
            for (i, step) in case["steps"].as_array().expect("steps").iter().enumerate() {
                store.apply(&trie_step_writes(step)).expect("apply");
                let root = store.commit().expect("commit");
                assert_eq!(
                    B256::from(root),
                    b256_field(step, "root_after"),
                    "G {group_depth} {name} step {i}"
                );
                if i % 2 == 1 {
                    drop(store);
                    store = open(&dir, &opts);
                    assert_eq!(
                        B256::from(store.root()),
                        B256::from(root),
                        "G {group_depth} {name} reopen"
                    );
                }
            }
            assert_eq!(
                B256::from(store.root()),
                b256_field(case, "root"),
                "G {group_depth} {name}"
            );
            assert_eq!(
                store.stats().leaf_count,
                case["leaf_count"].as_u64().expect("leaf_count")
            );
            assert!(
                store.verify().expect("verify").is_ok(),
                "G {group_depth} {name} verify"
            );
        }
    }
}

#[test]
fn accounts_vectors_on_disk_at_every_group_depth() {
    let vectors = vector_file("accounts.json");
    for group_depth in 1..=8 {
        for case in vectors["cases"].as_array().expect("cases") {
            let name = case["name"].as_str().expect("name");
            let (dir, opts, mut store) = fresh(group_depth);
            for (i, op) in case["ops"].as_array().expect("ops").iter().enumerate() {
                account_op(&mut StoreTree(&mut store), op);
                let root = store.commit().expect("commit");
                assert_eq!(
                    B256::from(root),
                    b256_field(op, "root_after"),
                    "G {group_depth} {name} op {i}"
                );
            }
            drop(store);
            let store = open(&dir, &opts);
            assert_eq!(
                B256::from(store.root()),
                b256_field(case, "root"),
                "G {group_depth} {name}"
            );
            for leaf in case["leaves"].as_array().expect("leaves") {
                let key = b256_field(leaf, "key");
                assert_eq!(
                    store.get(&key).expect("get"),
                    Some(b256_field(leaf, "value")),
                    "{name} {key}"
                );
            }
        }
    }
}

#[test]
fn bulk_build_matches_the_vectors() {
    let vectors = vector_file("tries.json");
    for case in vectors["cases"].as_array().expect("cases") {
        let mut entries: Vec<(B256, B256)> = Vec::new();
        for step in case["steps"].as_array().expect("steps") {
            entries.extend(trie_step_writes(step));
        }
        // Stable sort: the last write of a key wins, as in the build.
        entries.sort_by_key(|entry| entry.0);
        for group_depth in [1u8, 5, 8] {
            let (_sim, dir) = sim_dir();
            let (store, report) = Store::build(
                Arc::clone(&dir),
                options(group_depth, 1 << 20),
                entries.iter().copied(),
            )
            .expect("build");
            let name = case["name"].as_str().expect("name");
            assert_eq!(
                B256::from(store.root()),
                b256_field(case, "root"),
                "build G {group_depth} {name}"
            );
            assert_eq!(
                report.leaf_count,
                case["leaf_count"].as_u64().expect("leaf_count")
            );
            drop(store);
            let store = open(&dir, &options(group_depth, 1 << 20));
            assert_eq!(
                B256::from(store.root()),
                b256_field(case, "root"),
                "reopened build {name}"
            );
            assert!(store.verify().expect("verify").is_ok());
        }
    }
}
