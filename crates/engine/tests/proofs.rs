//! Multiproofs from the database equal, byte for byte, the spec's proofs
//! over the reference tree of the same state (the encoding is canonical,
//! so equality is the whole check), at the tip and at every older root a
//! reader can reach, whether the buckets are changed in memory, cached,
//! or on disk, and every proof verifies to the reference values. The same
//! for go-ethereum's witness (`Db::witness`): equal to the spec's witness
//! walker over the reference tree, blob for blob, at every group depth.
//! And a stateless client's post-state root from the database's proof
//! equals the database's root after the block.

// Test code: a failed unwrap is a failed test, and casts narrow test data.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::cast_possible_truncation
)]

use std::sync::Arc;

use alloy_primitives::B256;
use ubt_engine::{verify_proof, Db, Options, StoreDir};
use ubt_spec::proof::prove_reference;
use ubt_spec::rng::SplitMix64;
use ubt_spec::{ReferenceTree, StateTree};
use ubt_store::io::sim::SimDir;

fn open(group_depth: u8) -> Db {
    let dir: Arc<dyn StoreDir> = Arc::new(SimDir::new());
    let options = Options {
        group_depth: Some(group_depth),
        memory_budget_bytes: 64 << 10,
        revert_depth: 32,
        ..Options::default()
    };
    Db::open_dir(dir, options).expect("open")
}

/// A key near the ones already used: a new random key, a new slot of a
/// used stem, or a stem sharing a long prefix with a used one (so buckets
/// split deep and lone stems sit far from where their keys point).
fn nearby_key(rng: &mut SplitMix64, used: &[B256]) -> B256 {
    let mut key = B256::from(rng.bytes32());
    if used.is_empty() {
        return key;
    }
    let base = used[rng.index(used.len())];
    match rng.below(4) {
        0 => {}
        1 => {
            key[..31].copy_from_slice(&base[..31]);
        }
        _ => {
            let shared = 1 + rng.index(30);
            key[..shared].copy_from_slice(&base[..shared]);
        }
    }
    key
}

/// A proof set: present keys, absent keys near present ones, random keys.
fn key_set(rng: &mut SplitMix64, used: &[B256], size: usize) -> Vec<B256> {
    (0..size)
        .map(|_| {
            if !used.is_empty() && rng.coin() {
                used[rng.index(used.len())]
            } else {
                nearby_key(rng, used)
            }
        })
        .collect()
}

fn check_proof(
    prove: impl Fn(&[B256]) -> ubt_engine::Proof,
    reference: &ReferenceTree,
    keys: &[B256],
) {
    let proof = prove(keys);
    let expected = prove_reference(reference, keys);
    assert_eq!(proof.encode(), expected.encode(), "proof bytes differ");
    let proven = verify_proof(&reference.compute_root(), &proof).expect("verifies");
    for key in keys {
        assert_eq!(proven[key], reference.get(key), "value of {key}");
    }
}

fn check_witness(
    witness: impl Fn(&[B256], u8) -> Vec<ubt_engine::GethNode>,
    reference: &ReferenceTree,
    keys: &[B256],
    group_depth: u8,
) {
    // The fast tree's view: independent of the store, and quick to hash.
    let entries: Vec<(B256, B256)> = reference.entries().map(|(k, v)| (*k, *v)).collect();
    let mut fast = ubt_spec::FastTree::from_entries(entries);
    let expected = ubt_spec::geth::witness_nodes(&fast.view(), group_depth, keys);
    assert_eq!(
        witness(keys, group_depth),
        expected,
        "witness at G={group_depth}"
    );
}

fn run_seed(seed: u64, group_depth: u8) {
    let mut rng = SplitMix64::new(seed);
    let mut db = open(group_depth);
    let mut reference = ReferenceTree::new();
    let mut used: Vec<B256> = Vec::new();
    // The empty tree proves absence.
    check_proof(
        |k| db.prove(k).unwrap(),
        &reference,
        &key_set(&mut rng, &used, 3),
    );
    let mut history: Vec<(B256, ReferenceTree)> = Vec::new();
    for block in 0..24u64 {
        let writes: Vec<(B256, B256)> = (0..1 + rng.index(60))
            .map(|_| {
                let key = nearby_key(&mut rng, &used);
                (key, B256::from(rng.bytes32()))
            })
            .collect();
        used.extend(writes.iter().map(|(k, _)| *k));
        // A stateless client's post-state root, from the database's proof
        // of the block's keys at the pre-state and the writes.
        let written: Vec<B256> = writes.iter().map(|(k, _)| *k).collect();
        let pre_proof = db.prove(&written).unwrap();
        let stateless = ubt_spec::stateless::apply(&db.root().0, &pre_proof, &writes).unwrap();
        let root = db.apply(&writes).unwrap();
        assert_eq!(root, B256::from(stateless), "stateless root");
        reference.insert_batch(&writes);
        assert_eq!(root, B256::from(reference.compute_root()));
        history.push((root, reference.clone()));
        match block % 6 {
            2 => db.persist(&root).unwrap(),
            4 => db.checkpoint().unwrap(),
            5 => db.clear_cache(),
            _ => {}
        }
        let size = 1 + rng.index(40);
        let keys = key_set(&mut rng, &used, size);
        let reads_before = db.diagnostics().io.bucket_reads;
        check_proof(|k| db.prove(k).unwrap(), &reference, &keys);
        // At most one read per key's bucket, plus one per lone stem that
        // sits where an absent key's stem would be.
        let reads = db.diagnostics().io.bucket_reads - reads_before;
        let witness_depth = 1 + (block % 8) as u8;
        check_witness(
            |k, g| db.witness(k, g).unwrap(),
            &reference,
            &keys,
            witness_depth,
        );
        assert!(
            reads <= 2 * keys.len() as u64,
            "{reads} reads for {} keys",
            keys.len()
        );
        // Every older root still in reach, through a reader.
        for (old_root, old_tree) in history.iter().rev().take(6) {
            let reader = db.reader(old_root).unwrap();
            let size = 1 + rng.index(20);
            let keys = key_set(&mut rng, &used, size);
            check_proof(|k| reader.prove(k).unwrap(), old_tree, &keys);
            check_witness(|k, g| reader.witness(k, g).unwrap(), old_tree, &keys, 5);
        }
    }
}

#[test]
fn database_proofs_equal_the_reference_proofs() {
    for seed in 0..12u64 {
        run_seed(seed, 1 + (seed % 8) as u8);
    }
}

#[test]
fn proofs_survive_reopen_and_a_single_stem_tree() {
    let mut db = open(4);
    let key = B256::repeat_byte(0x42);
    let mut reference = ReferenceTree::new();
    db.apply_block(&[(key, B256::repeat_byte(1))]).unwrap();
    reference.insert(key, B256::repeat_byte(1));
    let mut sibling = key;
    sibling[31] = 0;
    let mut elsewhere = key;
    elsewhere[0] = 0x80;
    check_proof(
        |k| db.prove(k).unwrap(),
        &reference,
        &[key, sibling, elsewhere],
    );
}

#[test]
fn a_reverted_snapshot_cannot_prove() {
    let mut db = open(3);
    let a = B256::repeat_byte(0x11);
    let root1 = db.apply(&[(a, B256::repeat_byte(1))]).unwrap();
    let root2 = db.apply(&[(a, B256::repeat_byte(2))]).unwrap();
    let reader = db.reader(&root2).unwrap();
    db.revert(&root1).unwrap();
    let error = reader.prove(&[a]).unwrap_err();
    assert!(
        matches!(error, ubt_engine::Error::SnapshotReverted(_)),
        "{error}"
    );
}

/// A lone stem at an older root whose bucket holds none of the proven or
/// reverted keys: the prover must read that bucket in a second batch.
#[test]
fn an_older_root_reads_the_bucket_of_a_lone_stem() {
    let mut db = open(2);
    let mut reference = ReferenceTree::new();
    let mut lone = B256::repeat_byte(0xff);
    lone[0] = 0x00;
    let far = B256::repeat_byte(0x80);
    let before = vec![(lone, B256::repeat_byte(1)), (far, B256::repeat_byte(2))];
    let root_before = db.apply(&before).unwrap();
    reference.insert_batch(&before);
    let old_tree = reference.clone();
    // Many stems under 0x00 0x00..0x7f: the bucket under 0x00 splits down
    // to depth 9, where the lone stem's side holds only it.
    let mut rng = SplitMix64::new(7);
    let crowd: Vec<(B256, B256)> = (0..400)
        .map(|_| {
            let mut key = B256::from(rng.bytes32());
            key[0] = 0x00;
            key[1] &= 0x7f;
            (key, B256::from(rng.bytes32()))
        })
        .collect();
    db.apply(&crowd).unwrap();
    reference.insert_batch(&crowd);
    db.checkpoint().unwrap();
    db.clear_cache();
    let mut absent = B256::ZERO;
    absent[2] = 0x33;
    let reader = db.reader(&root_before).unwrap();
    check_proof(|k| reader.prove(k).unwrap(), &old_tree, &[absent]);
    check_proof(|k| db.prove(k).unwrap(), &reference, &[absent, lone]);
}
