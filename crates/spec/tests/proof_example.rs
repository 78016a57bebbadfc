//! The worked example of `docs/proof-format.md`: the tree, the two proven
//! keys and the proof bytes printed there are what the code produces.

// Test code: a failed unwrap is a failed test.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use alloy_primitives::B256;
use ubt_spec::proof::{prove_reference, verify, Proof};
use ubt_spec::{ReferenceTree, StateTree};

fn key(first: u8, sub: u8) -> B256 {
    let mut key = [0u8; 32];
    key[0] = first;
    key[31] = sub;
    B256::from(key)
}

/// The encoding as hex, 32 bytes a line.
fn hex_lines(bytes: &[u8]) -> String {
    bytes
        .chunks(32)
        .map(|line| line.iter().map(|b| format!("{b:02x}")).collect::<String>() + "\n")
        .collect()
}

#[test]
fn documented_example_stays_true() {
    let mut tree = ReferenceTree::new();
    tree.insert(key(0x00, 0), B256::repeat_byte(0x01));
    tree.insert(key(0x80, 5), B256::repeat_byte(0x02));
    tree.insert(key(0x80, 6), B256::repeat_byte(0x03));
    let root = tree.compute_root();
    let keys = [key(0x00, 0), key(0x80, 7)];
    let proof = prove_reference(&tree, &keys);
    let bytes = proof.encode();
    let values = verify(&root, &Proof::decode(&bytes).unwrap()).unwrap();
    assert_eq!(values[&keys[0]], Some(B256::repeat_byte(0x01)));
    assert_eq!(values[&keys[1]], None);
    let doc = include_str!("../../../docs/proof-format.md");
    let root_hex: String = root.iter().map(|b| format!("{b:02x}")).collect();
    let block = hex_lines(&bytes);
    println!("root {root_hex}\n{block}");
    assert!(doc.contains(&root_hex), "root not in the doc");
    assert!(doc.contains(&block), "proof bytes not in the doc");
}
