//! Multiproofs over random reference trees: verify returns exactly the
//! tree's values and absences, encodings are canonical, corrupted and
//! truncated proofs never yield a wrong value, and stateless application
//! matches the reference tree.

// Test code: a failed unwrap is a failed test, and casts narrow test data.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::cast_possible_truncation
)]

use std::collections::BTreeMap;

use alloy_primitives::B256;
use ubt_spec::hash::ZERO_HASH;
use ubt_spec::proof::{prove, prove_reference, verify, Proof, ProofError};
use ubt_spec::rng::SplitMix64;
use ubt_spec::{stateless, FastTree, ReferenceTree, StateTree};

/// A key whose stem shares `shared` leading bits with `base` and then
/// differs (a random tail), at sub-index `sub`.
fn near(base: &B256, shared: usize, sub: u8, rng: &mut SplitMix64) -> B256 {
    let mut key = B256::from(rng.bytes32());
    for bit in 0..shared.min(247) {
        let mask = 0x80u8 >> (bit % 8);
        key[bit / 8] = (key[bit / 8] & !mask) | (base[bit / 8] & mask);
    }
    if shared < 248 {
        let mask = 0x80u8 >> (shared % 8);
        key[shared / 8] = (key[shared / 8] & !mask) | (!base[shared / 8] & mask);
    }
    key[31] = sub;
    key
}

/// A random tree of about `stems` stems (some sharing 200+ bit prefixes)
/// and a key set mixing present keys, absent slots of present stems, absent
/// stems next to present ones and unrelated absent keys.
fn workload(seed: u64, stems: usize, keys: usize) -> (ReferenceTree, Vec<B256>) {
    let mut rng = SplitMix64::new(seed);
    let mut tree = ReferenceTree::new();
    let mut present: Vec<B256> = Vec::new();
    for _ in 0..stems {
        let key = match (present.is_empty(), rng.below(4)) {
            (false, 0) => {
                let base = present[rng.index(present.len())];
                near(&base, 200 + rng.index(48), rng.below(256) as u8, &mut rng)
            }
            (false, 1) => {
                let base = present[rng.index(present.len())];
                near(&base, rng.index(248), rng.below(256) as u8, &mut rng)
            }
            _ => B256::from(rng.bytes32()),
        };
        for _ in 0..=rng.below(6) {
            let mut k = key;
            k[31] = rng.below(256) as u8;
            let value = if rng.below(10) == 0 {
                B256::ZERO
            } else {
                B256::from(rng.bytes32())
            };
            tree.insert(k, value);
            present.push(k);
        }
    }
    let mut out = Vec::new();
    for _ in 0..keys {
        let key = match (present.is_empty(), rng.below(5)) {
            (false, 0 | 1) => present[rng.index(present.len())],
            (false, 2) => {
                let mut k = present[rng.index(present.len())];
                k[31] = rng.below(256) as u8;
                k
            }
            (false, 3) => {
                let base = present[rng.index(present.len())];
                near(&base, rng.index(249), rng.below(256) as u8, &mut rng)
            }
            _ => B256::from(rng.bytes32()),
        };
        out.push(key);
    }
    (tree, out)
}

/// Proves, round-trips and verifies `keys`; checks every value against
/// the tree. Returns the encoding.
fn check(tree: &ReferenceTree, keys: &[B256]) -> Vec<u8> {
    let root = tree.compute_root();
    let proof = prove_reference(tree, keys);
    let bytes = proof.encode();
    let decoded = Proof::decode(&bytes).unwrap();
    assert_eq!(decoded, proof);
    let values = verify(&root, &decoded).unwrap();
    let expected: BTreeMap<B256, Option<B256>> = keys.iter().map(|k| (*k, tree.get(k))).collect();
    assert_eq!(values, expected);
    let mut other = root;
    other[31] ^= 1;
    assert_eq!(verify(&other, &decoded), Err(ProofError::RootMismatch));
    bytes
}

fn fast_of(tree: &ReferenceTree) -> FastTree {
    let mut fast = FastTree::new();
    for (k, v) in tree.entries() {
        fast.insert(*k, *v);
    }
    fast
}

#[test]
fn random_key_sets_verify_to_the_tree() {
    for seed in 0..40u64 {
        let stems = [1, 2, 3, 10, 60][seed as usize % 5];
        let keys = 1 + (seed as usize * 7) % 50;
        let (tree, keys) = workload(seed, stems, keys);
        let bytes = check(&tree, &keys);
        // The fast tree's view gives the same proof.
        let mut fast = fast_of(&tree);
        fast.root();
        assert_eq!(prove(&fast.view(), &keys).encode(), bytes, "seed {seed}");
        // Only present keys, only absent keys.
        let (present, absent): (Vec<B256>, Vec<B256>) =
            keys.iter().partition(|k| tree.get(k).is_some());
        check(&tree, &present);
        check(&tree, &absent);
    }
}

#[test]
fn ten_thousand_keys() {
    let (tree, keys) = workload(7, 3000, 10_000);
    let mut fast = fast_of(&tree);
    let root = fast.root();
    assert_eq!(root, tree.compute_root());
    let proof = prove(&fast.view(), &keys);
    let bytes = proof.encode();
    let values = verify(&root, &Proof::decode(&bytes).unwrap()).unwrap();
    for key in &keys {
        assert_eq!(values[key], tree.get(key));
    }
    assert_eq!(values.len(), proof.keys().len());
}

#[test]
fn empty_and_single_stem_trees() {
    let empty = ReferenceTree::new();
    let mut rng = SplitMix64::new(3);
    let keys: Vec<B256> = (0..5).map(|_| B256::from(rng.bytes32())).collect();
    check(&empty, &keys);
    check(&empty, &[]);
    // The empty tree and one key: a single `00` tag.
    let proof = prove_reference(&empty, &keys[..1]);
    assert_eq!(proof.encode().len(), 4 + 32 + 4 + 1 + 12);
    // No key: one bit, `0` (the empty root).
    assert_eq!(prove_reference(&empty, &[]).encode().len(), 4 + 4 + 1 + 12);
    let mut single = ReferenceTree::new();
    let stem = keys[0];
    for sub in [0u8, 1, 64, 200] {
        let mut k = stem;
        k[31] = sub;
        single.insert(k, B256::repeat_byte(sub));
    }
    let mut asked = Vec::new();
    for sub in [0u8, 2, 64, 255] {
        let mut k = stem;
        k[31] = sub;
        asked.push(k);
    }
    asked.push(near(&stem, 230, 0, &mut rng));
    check(&single, &asked);
    check(&single, &asked[4..]);
    check(&single, &[]);
}

/// Every single-bit flip and every truncation of a valid proof is rejected
/// by decode or verify, or yields, for each key of the (possibly changed)
/// key set, exactly the tree's value or absence; an accepted string
/// re-encodes to itself.
#[test]
fn corruptions_never_yield_a_wrong_value() {
    for seed in [1u64, 2, 3] {
        let (tree, keys) = workload(seed, 12, 6);
        let root = tree.compute_root();
        let bytes = check(&tree, &keys);
        let mut accepted = 0;
        let mut judge = |input: &[u8]| {
            let Ok(proof) = Proof::decode(input) else {
                return;
            };
            assert_eq!(proof.encode(), input);
            if let Ok(values) = verify(&root, &proof) {
                accepted += 1;
                for (key, value) in values {
                    assert_eq!(value, tree.get(&key), "wrong value for {key}");
                }
            }
        };
        for bit in 0..bytes.len() * 8 {
            let mut flipped = bytes.clone();
            flipped[bit / 8] ^= 0x80 >> (bit % 8);
            judge(&flipped);
        }
        for len in 0..bytes.len() {
            judge(&bytes[..len]);
        }
        // Flips that survive only change a proven key within a subtree
        // proven empty (or another stem): a few at most.
        println!("seed {seed}: {} bytes, {accepted} accepted", bytes.len());
        assert!(accepted < bytes.len(), "{accepted}");
    }
}

fn encode_raw(keys: &[B256], shape_bits: u32, shape: &[u8], hashes: &[[u8; 32]]) -> Vec<u8> {
    let mut out = Vec::new();
    out.extend_from_slice(&(keys.len() as u32).to_be_bytes());
    for k in keys {
        out.extend_from_slice(k.as_slice());
    }
    out.extend_from_slice(&shape_bits.to_be_bytes());
    out.extend_from_slice(shape);
    out.extend_from_slice(&(hashes.len() as u32).to_be_bytes());
    for h in hashes {
        out.extend_from_slice(h);
    }
    out.extend_from_slice(&[0; 8]);
    out
}

#[test]
fn non_canonical_encodings_are_rejected() {
    let a = B256::repeat_byte(0x11);
    let b = B256::repeat_byte(0x99);
    // Valid: two absent keys in the empty tree (`00`).
    let valid = encode_raw(&[a, b], 2, &[0x00], &[]);
    assert!(Proof::decode(&valid).is_ok());
    let mut trailing = valid.clone();
    trailing.push(0);
    assert_eq!(Proof::decode(&trailing), Err(ProofError::TrailingBytes));
    assert_eq!(
        Proof::decode(&encode_raw(&[b, a], 2, &[0x00], &[])),
        Err(ProofError::KeysNotSorted)
    );
    assert_eq!(
        Proof::decode(&encode_raw(&[a, a], 2, &[0x00], &[])),
        Err(ProofError::KeysNotSorted)
    );
    assert_eq!(
        Proof::decode(&encode_raw(&[a, b], 2, &[0x01], &[])),
        Err(ProofError::ShapePadding)
    );
    assert_eq!(
        Proof::decode(&encode_raw(&[a, b], 2, &[0xc0], &[])),
        Err(ProofError::BadTag)
    );
    // An internal node over two empty subtrees (`01 00 00`).
    assert_eq!(
        Proof::decode(&encode_raw(&[a, b], 6, &[0x40], &[])),
        Err(ProofError::NonMinimal(0))
    );
    // An internal node over an empty subtree and an empty sibling
    // (`01 00 0`), and the same sibling as a zero hash (`01 00 1`).
    assert_eq!(
        Proof::decode(&encode_raw(&[a], 5, &[0x40], &[])),
        Err(ProofError::NonMinimal(0))
    );
    assert_eq!(
        Proof::decode(&encode_raw(&[a], 5, &[0x48], &[ZERO_HASH])),
        Err(ProofError::ZeroHash)
    );
    assert_eq!(
        Proof::decode(&encode_raw(&[a, b], 2, &[0x00], &[[1; 32]])),
        Err(ProofError::SectionUnused("hashes"))
    );
    assert_eq!(
        Proof::decode(&encode_raw(&[a, b], 4, &[0x00], &[])),
        Err(ProofError::SectionUnused("shape"))
    );
    assert_eq!(
        Proof::decode(&valid[..valid.len() - 1]),
        Err(ProofError::Truncated)
    );
    // A huge count is rejected before allocating.
    assert_eq!(Proof::decode(&[0xff; 4]), Err(ProofError::Truncated));
}

#[test]
fn stateless_apply_matches_the_reference_tree() {
    for seed in 0..30u64 {
        let (tree, keys) = workload(100 + seed, [1, 4, 40][seed as usize % 3], 20);
        let root = tree.compute_root();
        let proof = prove_reference(&tree, &keys);
        let mut rng = SplitMix64::new(seed);
        let mut writes: Vec<(B256, B256)> = Vec::new();
        for k in &keys {
            if rng.below(3) != 0 {
                writes.push((*k, B256::from(rng.bytes32())));
            }
        }
        let mut after = tree.clone();
        for (k, v) in &writes {
            after.insert(*k, *v);
        }
        assert_eq!(
            stateless::apply(&root, &proof, &writes).unwrap(),
            after.compute_root(),
            "seed {seed}"
        );
        assert_eq!(stateless::apply(&root, &proof, &[]).unwrap(), root);
        let stranger = B256::from(rng.bytes32());
        if !keys.contains(&stranger) {
            assert_eq!(
                stateless::apply(&root, &proof, &[(stranger, B256::ZERO)]),
                Err(ProofError::UnprovenWrite(stranger))
            );
        }
        let mut wrong = root;
        wrong[0] ^= 1;
        assert_eq!(
            stateless::apply(&wrong, &proof, &writes),
            Err(ProofError::RootMismatch)
        );
    }
    // Writes into the empty tree, two keys whose stems share 240 bits.
    let mut rng = SplitMix64::new(9);
    let a = B256::from(rng.bytes32());
    let b = near(&a, 240, 3, &mut rng);
    let empty = ReferenceTree::new();
    let proof = prove_reference(&empty, &[a, b]);
    let writes = [(a, B256::repeat_byte(1)), (b, B256::repeat_byte(2))];
    let mut after = ReferenceTree::new();
    after.insert_batch(&writes);
    assert_eq!(
        stateless::apply(&ZERO_HASH, &proof, &writes).unwrap(),
        after.compute_root()
    );
}
