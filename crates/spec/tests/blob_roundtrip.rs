//! Properties of the geth blob codec: random valid stem and group blobs
//! (group depth 1..8, random frontiers) round-trip encode -> decode -> encode
//! exactly; path keys round-trip; arbitrary bytes given to every decoder
//! never panic, and whatever decodes re-encodes to the same bytes (so each
//! accepted blob is canonical). Node sets exported from random trees decode
//! and re-hash to the exported hashes. Set `PROPTEST_CASES` to run more.

// Test code: a failed unwrap is a failed test, and casts narrow test data.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::cast_possible_truncation
)]

use alloy_primitives::B256;
use proptest::prelude::*;
use ubt_spec::geth::group_blob::{GroupBlob, GroupEntry};
use ubt_spec::geth::{export_nodes, stem_blob, BitPath, NodeKind};
use ubt_spec::{FastTree, StateTree, Stem};

fn cases(default: u32) -> ProptestConfig {
    let cases = std::env::var("PROPTEST_CASES")
        .ok()
        .and_then(|v| v.parse().ok());
    ProptestConfig::with_cases(cases.unwrap_or(default))
}

/// A random valid frontier: split the group top-down at random, stopping
/// with an entry (or nothing) at random depths, never deeper than G.
fn frontier(g: u8, choices: &[u8], hashes: &[[u8; 32]]) -> Vec<GroupEntry> {
    fn walk(
        g: u8,
        depth: u8,
        bits: u8,
        choices: &mut impl Iterator<Item = u8>,
        hashes: &mut impl Iterator<Item = [u8; 32]>,
        out: &mut Vec<GroupEntry>,
    ) {
        for bit in 0..2u8 {
            let child_bits = (bits << 1) | bit;
            let child_depth = depth + 1;
            let choice = choices.next().unwrap_or(0) % 3;
            if child_depth == g || choice == 0 {
                if choice != 2 || child_depth == g {
                    let hash = hashes.next().unwrap_or([7; 32]);
                    out.push(GroupEntry {
                        depth: child_depth,
                        bits: child_bits,
                        hash,
                    });
                }
            } else if choice == 1 {
                walk(g, child_depth, child_bits, choices, hashes, out);
            }
        }
    }
    let mut out = Vec::new();
    walk(
        g,
        0,
        0,
        &mut choices.iter().copied(),
        &mut hashes.iter().copied(),
        &mut out,
    );
    out
}

proptest! {
    #![proptest_config(cases(1_500))]

    #[test]
    fn stem_blobs_round_trip(stem in any::<[u8; 31]>(), present in any::<[bool; 256]>(), fill in any::<u8>()) {
        let values: Vec<(u8, B256)> = (0..=255u8)
            .filter(|i| present[usize::from(*i)])
            .map(|i| (i, B256::repeat_byte(i ^ fill)))
            .collect();
        let blob = stem_blob::encode(&Stem(stem), &values);
        let (decoded_stem, decoded) = stem_blob::decode(&blob).expect("valid stem blob");
        prop_assert_eq!(decoded_stem, Stem(stem));
        prop_assert_eq!(&decoded, &values);
        prop_assert_eq!(stem_blob::encode(&decoded_stem, &decoded), blob);
    }

    #[test]
    fn group_blobs_round_trip(
        g in 1u8..=8,
        choices in prop::collection::vec(any::<u8>(), 512),
        hashes in prop::collection::vec(any::<[u8; 32]>(), 256),
    ) {
        let entries = frontier(g, &choices, &hashes);
        prop_assume!(!entries.is_empty());
        let group = GroupBlob { group_depth: g, entries };
        let blob = group.encode();
        let decoded = GroupBlob::decode(&blob).expect("valid group blob");
        prop_assert_eq!(&decoded, &group);
        prop_assert_eq!(decoded.encode(), blob);
    }

    #[test]
    fn path_keys_round_trip(bits in prop::collection::vec(0u8..2, 0..=248)) {
        let text: String = bits.iter().map(|b| if *b == 0 { '0' } else { '1' }).collect();
        let path = BitPath::from_bit_str(&text).expect("valid bits");
        prop_assert_eq!(BitPath::from_key_bytes(&path.key_bytes()).expect("decodes"), path);
        prop_assert_eq!(path.to_bit_string(), text);
    }

    #[test]
    fn decoders_never_panic_and_accept_only_canonical_bytes(
        kind in 0u8..4,
        g in 0u8..10,
        body in prop::collection::vec(any::<u8>(), 0..600),
    ) {
        let mut blob = vec![kind, g];
        blob.extend_from_slice(&body);
        if let Ok(group) = GroupBlob::decode(&blob) {
            prop_assert_eq!(group.encode(), blob.clone());
        }
        if let Ok((stem, values)) = stem_blob::decode(&blob) {
            prop_assert_eq!(stem_blob::encode(&stem, &values), blob.clone());
        }
        if let Ok(path) = BitPath::from_key_bytes(&body) {
            prop_assert_eq!(path.key_bytes(), body);
        }
    }
}

proptest! {
    #![proptest_config(cases(300))]

    /// Every exported blob of a random tree decodes, and group blobs re-hash
    /// to the hash the tree gives that node.
    #[test]
    fn exported_node_sets_decode_and_rehash(
        keys in prop::collection::vec(any::<[u8; 32]>(), 1..80),
        g in 1u8..=8,
    ) {
        let mut tree = FastTree::new();
        for key in &keys {
            tree.insert(B256::from(*key), B256::from(*key));
        }
        for node in export_nodes(&tree.view(), g) {
            match node.kind {
                NodeKind::Group => {
                    let group = GroupBlob::decode(&node.blob).expect("decodes");
                    prop_assert_eq!(group.root_hash(), node.hash);
                }
                NodeKind::Stem => {
                    let (stem, values) = stem_blob::decode(&node.blob).expect("decodes");
                    let root = ubt_spec::stem::subtree_root(values.iter().map(|(i, v)| (*i, v)));
                    prop_assert_eq!(ubt_spec::stem::stem_hash(&stem, &root), node.hash);
                }
            }
        }
    }
}
