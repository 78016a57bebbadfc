//! Conformance with geth's on-disk node format (serialization.json,
//! witness.json): every blob, path, database key, kind and hash byte-exact at
//! every group depth given; every vector blob decodes and re-encodes to the
//! same bytes and its entries recompute its hash; incremental commits write
//! and delete exactly what geth's did; the blobs read for a lookup are the
//! ones geth resolved. Run on both the reference tree and the fast tree.

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
use ubt_spec::geth::{
    diff_node_sets, export_nodes, group_blob::GroupBlob, stem_blob, witness_nodes, witness_paths,
    BitPath, GethNode, NodeKind,
};
use ubt_spec::hash::sha256;
use ubt_spec::view::{ReferenceView, TrieView};
use ubt_spec::{FastTree, ReferenceTree, StateTree};

fn kind_name(kind: NodeKind) -> &'static str {
    match kind {
        NodeKind::Group => "group",
        NodeKind::Stem => "stem",
    }
}

fn tree_inserts(tree: &Value) -> Vec<(B256, B256)> {
    if let Some(inserts) = tree["inserts"].as_array() {
        return inserts
            .iter()
            .map(|i| (b256(i, "key"), b256(i, "value")))
            .collect();
    }
    // "key_i -> value_i for i in [0, 64)"
    let spec = str_field(tree, "generated");
    let range = spec
        .split('[')
        .nth(1)
        .and_then(|r| r.split(')').next())
        .expect("range");
    let (from, to) = range.split_once(", ").expect("from, to");
    let (from, to): (u64, u64) = (from.parse().expect("from"), to.parse().expect("to"));
    (from..to)
        .map(|i| (generated_key(i), generated_value(i)))
        .collect()
}

fn assert_node_matches(node: &GethNode, expected: &Value, context: &str) {
    assert_eq!(
        node.path.to_bit_string(),
        str_field(expected, "path_bits"),
        "{context}"
    );
    assert_eq!(
        node.path.key_bytes(),
        bytes(str_field(expected, "path")),
        "{context} path"
    );
    assert_eq!(
        node.path.db_key(),
        bytes(str_field(expected, "db_key")),
        "{context} db_key"
    );
    assert_eq!(
        kind_name(node.kind),
        str_field(expected, "kind"),
        "{context} kind"
    );
    assert_eq!(
        B256::from(node.hash),
        b256(expected, "hash"),
        "{context} hash"
    );
    assert_eq!(
        node.blob,
        bytes(str_field(expected, "blob")),
        "{context} blob"
    );
    assert_eq!(
        node.blob.len() as u64,
        expected["blob_len"].as_u64().expect("len"),
        "{context}"
    );
}

/// Exports `view` at every listed group depth and compares with the vectors.
fn check_tree_export<V: TrieView>(view: &V, tree: &Value) {
    let name = str_field(tree, "name");
    assert_eq!(
        B256::from(view.hash_of(view.root_node())),
        b256(tree, "root"),
        "{name} root"
    );
    for depth_case in array(tree, "group_depths") {
        let g = depth_case["group_depth"].as_u64().expect("group_depth") as u8;
        let nodes = export_nodes(view, g);
        let expected = array(depth_case, "nodes");
        assert_eq!(nodes.len(), expected.len(), "{name} G={g} node count");
        assert_eq!(
            nodes.len() as u64,
            depth_case["node_count"].as_u64().expect("count")
        );
        let total: usize = nodes.iter().map(|n| n.blob.len()).sum();
        assert_eq!(
            total as u64,
            depth_case["total_blob_bytes"].as_u64().expect("total")
        );
        for (node, want) in nodes.iter().zip(expected) {
            assert_node_matches(node, want, &format!("{name} G={g} {}", want["path_bits"]));
        }
    }
}

#[test]
fn export_matches_geth_on_reference_tree() {
    let v = vector_file("serialization.json");
    for tree in array(&v, "trees") {
        let mut reference = ReferenceTree::new();
        reference.insert_batch(&tree_inserts(tree));
        check_tree_export(&ReferenceView::new(&reference), tree);
    }
}

#[test]
fn export_matches_geth_on_fast_tree() {
    let v = vector_file("serialization.json");
    for tree in array(&v, "trees") {
        let mut fast = FastTree::new();
        fast.insert_batch(&tree_inserts(tree));
        check_tree_export(&fast.view(), tree);
    }
}

#[test]
fn vector_blobs_decode_and_reencode_exactly() {
    let v = vector_file("serialization.json");
    let mut checked = 0;
    for tree in array(&v, "trees") {
        for depth_case in array(tree, "group_depths") {
            for node in array(depth_case, "nodes") {
                let blob = bytes(str_field(node, "blob"));
                let path = BitPath::from_key_bytes(&bytes(str_field(node, "path"))).expect("path");
                assert_eq!(path.to_bit_string(), str_field(node, "path_bits"));
                if str_field(node, "kind") == "group" {
                    let group = GroupBlob::decode(&blob).expect("group blob decodes");
                    assert_eq!(group.encode(), blob, "group re-encode");
                    assert_eq!(
                        B256::from(group.root_hash()),
                        b256(node, "hash"),
                        "group hash"
                    );
                } else {
                    let (stem, values) = stem_blob::decode(&blob).expect("stem blob decodes");
                    assert_eq!(stem_blob::encode(&stem, &values), blob, "stem re-encode");
                }
                checked += 1;
            }
        }
    }
    assert!(checked > 100);
}

#[test]
fn incremental_commits_write_and_delete_what_geth_did() {
    let v = vector_file("serialization.json");
    for case in array(&v, "incremental_commits") {
        let name = str_field(case, "name");
        let g = case["group_depth"].as_u64().expect("group_depth") as u8;
        let mut tree = FastTree::new();
        let mut before: Vec<GethNode> = Vec::new();
        for (i, commit) in array(case, "commits").iter().enumerate() {
            for insert in array(commit, "inserts") {
                tree.insert(b256(insert, "key"), b256(insert, "value"));
            }
            assert_eq!(
                B256::from(tree.root()),
                b256(commit, "root"),
                "{name} commit {i}"
            );
            let after = export_nodes(&tree.view(), g);
            let diff = diff_node_sets(&before, &after);
            let expected = array(commit, "written");
            assert_eq!(
                diff.written.len(),
                expected.len(),
                "{name} commit {i} written count"
            );
            for (node, want) in diff.written.iter().zip(expected) {
                assert_node_matches(node, want, &format!("{name} commit {i}"));
            }
            let deleted: Vec<String> = diff.deleted.iter().map(BitPath::to_bit_string).collect();
            let want_deleted: Vec<String> = array(commit, "deleted_path_bits")
                .iter()
                .map(|p| p.as_str().expect("path bits").to_string())
                .collect();
            assert_eq!(deleted, want_deleted, "{name} commit {i} deleted");
            let count = commit["db_node_count_after"].as_u64().expect("count");
            assert_eq!(after.len() as u64, count, "{name} commit {i} node count");
            before = after;
        }
    }
}

#[test]
fn witness_matches_geth() {
    let serialization = vector_file("serialization.json");
    let small = array(&serialization, "trees")
        .iter()
        .find(|t| t["name"] == "small")
        .expect("tree small");
    let mut tree = FastTree::new();
    tree.insert_batch(&tree_inserts(small));
    let mut reference = ReferenceTree::new();
    reference.insert_batch(&tree_inserts(small));
    let view = tree.view();
    let v = vector_file("witness.json");
    for (n, case) in array(&v, "cases").iter().enumerate() {
        assert_eq!(str_field(case, "tree"), "small");
        let g = case["group_depth"].as_u64().expect("group_depth") as u8;
        let keys: Vec<B256> = array(case, "read_keys")
            .iter()
            .map(|k| B256::from_slice(&bytes(k.as_str().expect("key"))))
            .collect();
        let blobs = export_nodes(&view, g);
        for (key, value) in keys.iter().zip(array(case, "values")) {
            let expected = value.as_str().map(|s| B256::from_slice(&bytes(s)));
            assert_eq!(reference.get(key), expected, "case {n} value of {key}");
        }
        let read = witness_paths(&view, g, &keys);
        let want = array(case, "witness");
        assert_eq!(read.len(), want.len(), "case {n} (G={g}) witness size");
        for ((path, kind), w) in read.iter().zip(want) {
            assert_eq!(path.to_bit_string(), str_field(w, "path_bits"), "case {n}");
            assert_eq!(path.key_bytes(), bytes(str_field(w, "path")), "case {n}");
            assert_eq!(kind_name(*kind), str_field(w, "kind"), "case {n}");
            let blob = &blobs
                .iter()
                .find(|b| b.path == *path)
                .expect("blob exported")
                .blob;
            assert_eq!(
                B256::from(sha256(blob)),
                b256(w, "blob_sha256"),
                "case {n} blob"
            );
        }
        // The blobs themselves, from the fast tree's view and the reference
        // tree's: each is geth's blob (by its sha256) and the exported one.
        let reference_view = ReferenceView::new(&reference);
        for nodes in [
            witness_nodes(&view, g, &keys),
            witness_nodes(&reference_view, g, &keys),
        ] {
            assert_eq!(nodes.len(), want.len(), "case {n} (G={g}) witness nodes");
            for (node, w) in nodes.iter().zip(want) {
                let context = format!("case {n} (G={g}) {}", w["path_bits"]);
                assert_eq!(
                    node.path.to_bit_string(),
                    str_field(w, "path_bits"),
                    "{context}"
                );
                assert_eq!(
                    node.path.key_bytes(),
                    bytes(str_field(w, "path")),
                    "{context}"
                );
                assert_eq!(kind_name(node.kind), str_field(w, "kind"), "{context}");
                assert_eq!(
                    B256::from(sha256(&node.blob)),
                    b256(w, "blob_sha256"),
                    "{context} blob"
                );
                let exported = blobs.iter().find(|b| b.path == node.path);
                assert_eq!(Some(node), exported, "{context}");
            }
        }
    }
}
