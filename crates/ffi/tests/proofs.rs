//! Proofs through the ABI: the bytes `ubt_db_prove` and `ubt_reader_prove`
//! give are the engine's canonical encoding of the same proof, byte for
//! byte; `ubt_verify_proof` returns the values and absences they prove;
//! and every corruption of the bytes (each single-bit flip, truncation,
//! trailing bytes), a wrong root, or a key the proof does not prove fails
//! without writing an output.

// Test code: a failed unwrap is a failed test, and casts narrow test data.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::cast_possible_truncation
)]

mod common;

use alloy_primitives::B256;
use common::*;
use ubt_engine::{verify_proof, Db, Options, Proof, SyncMode};
use ubt_ffi::*;

/// A database (ABI) and its twin (engine) with the same three blocks;
/// returns both and the roots.
fn twins(dir: &TempDir, engine_dir: &TempDir) -> (u64, Db, Vec<B256>) {
    let db = open(dir, Some(&small_options())).unwrap();
    let options = Options {
        memory_budget_bytes: 8 << 20,
        sync: SyncMode::Never,
        ..Options::default()
    };
    let mut engine = Db::open(&engine_dir.0, options).unwrap();
    let mut roots = Vec::new();
    for block in 0..3u64 {
        let writes: Vec<(B256, B256)> = (0..300)
            .map(|i| (word(7, i * 3 + block), word(8, block * 1000 + i)))
            .collect();
        let root = apply(db, &writes).unwrap();
        assert_eq!(root, engine.apply(&writes).unwrap());
        roots.push(root);
    }
    (db, engine, roots)
}

/// Keys to prove: present ones, absent ones, a duplicate, out of order.
fn proof_keys() -> Vec<B256> {
    let mut keys: Vec<B256> = (0..40).map(|i| word(7, i * 23)).collect();
    keys.extend((0..10).map(|i| word(9, i)));
    keys.push(keys[3]);
    keys.reverse();
    keys
}

#[test]
fn proofs_are_the_engines_bytes_and_verify_to_its_values() {
    let (dir, engine_dir) = (TempDir::new("proofs"), TempDir::new("proofs-engine"));
    let (db, engine, roots) = twins(&dir, &engine_dir);
    let keys = proof_keys();

    let proof = prove(At::Tip(db), &keys).unwrap();
    assert_eq!(proof, engine.prove(&keys).unwrap().encode());
    let values = verify(&proof, &roots[2], &keys).unwrap();
    assert_eq!(values, engine.get_many(&keys).unwrap());
    assert!(values.iter().any(Option::is_some) && values.iter().any(Option::is_none));

    // At an older root, through a reader: the engine's reader's proof,
    // valid for that root only.
    let ours = reader(db, &roots[0]).unwrap();
    let theirs = engine.reader(&roots[0]).unwrap();
    let old_proof = prove(At::Reader(ours), &keys).unwrap();
    assert_eq!(old_proof, theirs.prove(&keys).unwrap().encode());
    assert_eq!(
        verify(&old_proof, &roots[0], &keys).unwrap(),
        theirs.get_many(&keys).unwrap()
    );
    assert_eq!(
        status_of(verify(&old_proof, &roots[2], &keys)),
        UBT_ERR_PROOF_REJECTED
    );
    let decoded = Proof::decode(&old_proof).unwrap();
    assert!(verify_proof(&roots[0], &decoded).is_ok());
    reader_close(ours).unwrap();

    // The proof of no keys checks the root alone.
    let empty = prove(At::Tip(db), &[]).unwrap();
    assert_eq!(verify(&empty, &roots[2], &[]).unwrap(), Vec::new());
    assert_eq!(
        status_of(verify(&empty, &roots[1], &[])),
        UBT_ERR_PROOF_REJECTED
    );
    close(db).unwrap();
}

#[test]
fn every_corruption_of_a_proof_is_rejected() {
    let (dir, engine_dir) = (
        TempDir::new("proofs-bad"),
        TempDir::new("proofs-bad-engine"),
    );
    let (db, _engine, roots) = twins(&dir, &engine_dir);
    let keys: Vec<B256> = (0..6)
        .map(|i| word(7, i * 31))
        .chain([word(9, 1)])
        .collect();
    let proof = prove(At::Tip(db), &keys).unwrap();
    assert!(verify(&proof, &roots[2], &keys).is_ok());

    // Every single-bit flip: the bytes no longer decode, no longer hash to
    // the root, or prove other keys than the ones asked for.
    for byte in 0..proof.len() {
        for bit in 0..8 {
            let mut bad = proof.clone();
            bad[byte] ^= 1 << bit;
            let failure = verify(&bad, &roots[2], &keys).unwrap_err();
            assert!(
                [UBT_ERR_PROOF_REJECTED, UBT_ERR_KEY_NOT_PROVEN].contains(&failure.code),
                "byte {byte} bit {bit}: {failure:?}"
            );
        }
    }
    // Cut short, or followed by more bytes.
    for len in [0, 1, 4, proof.len() / 2, proof.len() - 1] {
        let failure = verify(&proof[..len], &roots[2], &keys).unwrap_err();
        assert_eq!(failure.code, UBT_ERR_PROOF_REJECTED, "length {len}");
    }
    let mut longer = proof.clone();
    longer.push(0);
    let failure = verify(&longer, &roots[2], &keys).unwrap_err();
    assert_eq!(failure.code, UBT_ERR_PROOF_REJECTED);
    assert!(failure.message.contains("trailing"), "{failure:?}");
    // Against another root.
    let failure = verify(&proof, &roots[1], &keys).unwrap_err();
    assert_eq!(failure.code, UBT_ERR_PROOF_REJECTED);
    assert!(failure.message.contains("root mismatch"), "{failure:?}");
    close(db).unwrap();
}

#[test]
fn keys_the_proof_does_not_prove_are_refused() {
    let (dir, engine_dir) = (
        TempDir::new("proofs-keys"),
        TempDir::new("proofs-keys-engine"),
    );
    let (db, _engine, roots) = twins(&dir, &engine_dir);
    let keys = [word(7, 0), word(7, 3)];
    let proof = prove(At::Tip(db), &keys).unwrap();
    // A subset of the proven keys is fine, in any order.
    assert!(verify(&proof, &roots[2], &[keys[1]]).is_ok());
    let failure = verify(&proof, &roots[2], &[keys[1], word(7, 6)]).unwrap_err();
    assert_eq!(failure.code, UBT_ERR_KEY_NOT_PROVEN);
    assert!(failure.message.starts_with("keys[1]"), "{failure:?}");
    close(db).unwrap();
}

#[test]
#[allow(unsafe_code)] // Calls the ABI with its own output buffers.
fn a_failed_verification_writes_no_output() {
    let (dir, engine_dir) = (
        TempDir::new("proofs-out"),
        TempDir::new("proofs-out-engine"),
    );
    let (db, _engine, roots) = twins(&dir, &engine_dir);
    let keys = [UbtBytes32::from(word(7, 0)), UbtBytes32::from(word(9, 0))];
    let proof = prove(At::Tip(db), &[word(7, 0), word(9, 0)]).unwrap();
    let wrong_root = UbtBytes32::from(roots[0]);
    let mut values = [UbtBytes32 { bytes: [0xee; 32] }; 2];
    let mut found = [7u8; 2];
    // SAFETY: live arrays of the lengths given.
    let status = unsafe {
        ubt_verify_proof(
            proof.as_ptr(),
            proof.len(),
            &wrong_root,
            keys.as_ptr(),
            2,
            values.as_mut_ptr(),
            found.as_mut_ptr(),
        )
    };
    assert_eq!(status, UBT_ERR_PROOF_REJECTED);
    assert_eq!(values, [UbtBytes32 { bytes: [0xee; 32] }; 2]);
    assert_eq!(found, [7, 7]);
    close(db).unwrap();
}
