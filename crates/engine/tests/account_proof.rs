// Test code: a failed unwrap is a failed test, and casts narrow test data.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::cast_possible_truncation
)]

//! Account proofs (`Db::account_proof`, `Reader::account_proof`) report
//! what the reference tree of the same state holds, carry byte for byte the
//! spec's multiproofs of the header and slot keys, verify against their
//! root, survive a JSON round trip, and fail verification when any claimed
//! field, proof or root is changed.

use std::sync::Arc;

use alloy_primitives::{Address, Bytes, B256, KECCAK256_EMPTY, U256};
use ubt_engine::{
    Account, AccountBatch, AccountProof, AccountProofError, Db, Options, ProofError, ProofField,
    ProofPart, Root, StoreDir, ACCOUNT_PROOF_FORMAT,
};
use ubt_spec::key::{basic_data_key, code_hash_key, storage_slot_key};
use ubt_spec::proof::prove_reference;
use ubt_spec::{AccountWrites, ReferenceTree, StateTree};
use ubt_store::io::sim::SimDir;

const PRESENT: Address = Address::repeat_byte(0xa1);
const DELETED: Address = Address::repeat_byte(0xde);
const NEVER: Address = Address::repeat_byte(0x99);

/// A header slot (in the account's stem), a main-storage slot, the largest.
const SLOT_SET: U256 = U256::from_limbs([3, 0, 0, 0]);
const SLOT_MAIN: U256 = U256::from_limbs([0, 0, 1, 0]);
const SLOT_DELETED: U256 = U256::from_limbs([7, 0, 0, 0]);
const SLOT_NEVER: U256 = U256::MAX;

fn open() -> Db {
    let dir: Arc<dyn StoreDir> = Arc::new(SimDir::new());
    let options = Options {
        group_depth: Some(3),
        memory_budget_bytes: 64 << 10,
        revert_depth: 8,
        ..Options::default()
    };
    Db::open_dir(dir, options).expect("open")
}

fn account() -> Account {
    Account {
        nonce: 7,
        balance: U256::from(1_000_000_007u64) << 64,
        code_size: 45,
        code_hash: B256::repeat_byte(0x77),
    }
}

/// The first block: a contract with storage (one slot deleted), a deleted
/// account that keeps a slot, and filler accounts around them.
fn first_block() -> AccountBatch {
    let mut batch = AccountBatch::new();
    batch
        .set_account(PRESENT, account())
        .set_code(PRESENT, vec![0x60u8; 45])
        .set_storage(PRESENT, SLOT_SET, B256::repeat_byte(0x51))
        .set_storage(PRESENT, SLOT_MAIN, B256::repeat_byte(0x52))
        .set_storage(PRESENT, SLOT_DELETED, B256::repeat_byte(0x53))
        .delete_storage(PRESENT, SLOT_DELETED)
        .set_account(DELETED, account())
        .set_storage(DELETED, SLOT_SET, B256::repeat_byte(0x54))
        .delete_account(DELETED);
    for i in 0..40u8 {
        let filler = Account {
            nonce: u64::from(i),
            ..account()
        };
        batch.set_account(Address::repeat_byte(i), filler);
    }
    batch
}

/// The database and the reference tree after the first block.
fn state() -> (Db, ReferenceTree) {
    let mut db = open();
    let mut reference = ReferenceTree::new();
    let batch = first_block();
    let root = db.apply_accounts(&batch).unwrap();
    reference.apply_account_batch(&batch);
    assert_eq!(root, reference.compute_root());
    (db, reference)
}

fn slots() -> Vec<U256> {
    vec![SLOT_SET, SLOT_MAIN, SLOT_DELETED, SLOT_NEVER]
}

/// Checks `proof` against the reference tree: the reported fields, each
/// proof equal to the spec's, and verification to the reference values.
fn check_against(proof: &AccountProof, reference: &ReferenceTree, address: &Address) {
    let root = B256::from(reference.compute_root());
    assert_eq!(proof.address, *address);
    assert_eq!((proof.state_root, proof.storage_hash), (root, root));
    assert_eq!(proof.proof_format, ACCOUNT_PROOF_FORMAT);
    let expected = reference.account(address);
    // An absent account shows zeros, the code hash too (geth's rule).
    let shown = expected.unwrap_or_default();
    assert_eq!(
        (proof.nonce, proof.balance, proof.code_hash, proof.code_size),
        (shown.nonce, shown.balance, shown.code_hash, shown.code_size)
    );
    let header = [basic_data_key(address), code_hash_key(address)];
    let header_proof = prove_reference(reference, &header).encode();
    assert_eq!(proof.account_proof, vec![Bytes::from(header_proof)]);
    for entry in &proof.storage_proof {
        let key = storage_slot_key(address, &entry.key);
        let value = reference.get(&key).unwrap_or_default();
        assert_eq!(entry.value, U256::from_be_bytes(value.0));
        let slot_proof = prove_reference(reference, &[key]).encode();
        assert_eq!(entry.proof, vec![Bytes::from(slot_proof)]);
    }
    let verified = proof.verified(&root).expect("verifies");
    assert_eq!(verified.address, *address);
    assert_eq!(verified.account, expected);
    let proven: Vec<_> = verified
        .storage
        .iter()
        .map(|(slot, value)| (*slot, *value))
        .collect();
    let wanted: Vec<_> = proof
        .storage_proof
        .iter()
        .map(|entry| (entry.key, reference.storage(address, &entry.key)))
        .collect();
    assert_eq!(proven, wanted);
}

#[test]
fn a_present_account_with_present_absent_and_deleted_slots() {
    let (db, reference) = state();
    let proof = db.account_proof(&PRESENT, &slots()).unwrap();
    check_against(&proof, &reference, &PRESENT);
    assert_eq!(proof.nonce, 7);
    assert_eq!(proof.code_hash, B256::repeat_byte(0x77));
    let verified = proof.verified(&db.root()).unwrap();
    assert_eq!(verified.account, Some(account()));
    assert_eq!(
        verified.storage,
        vec![
            (SLOT_SET, Some(B256::repeat_byte(0x51))),
            (SLOT_MAIN, Some(B256::repeat_byte(0x52))),
            // Deleted: a present zero; never written: absent. Both report 0.
            (SLOT_DELETED, Some(B256::ZERO)),
            (SLOT_NEVER, None),
        ]
    );
    assert_eq!(proof.storage_proof[2].value, U256::ZERO);
    assert_eq!(proof.storage_proof[3].value, U256::ZERO);
}

#[test]
fn absent_and_deleted_accounts_report_zeros_and_prove_absence() {
    let (db, reference) = state();
    for address in [NEVER, DELETED] {
        let proof = db.account_proof(&address, &[SLOT_SET]).unwrap();
        check_against(&proof, &reference, &address);
        assert_eq!(proof.balance, U256::ZERO);
        assert_eq!(proof.nonce, 0);
        assert_eq!(proof.code_size, 0);
        assert_eq!(proof.code_hash, B256::ZERO);
        assert_eq!(proof.verified(&db.root()).unwrap().account, None);
    }
    // A deleted account's slots stay, and are proven.
    let deleted = db.account_proof(&DELETED, &[SLOT_SET]).unwrap();
    assert_eq!(
        deleted.storage_proof[0].value,
        U256::from_be_bytes(B256::repeat_byte(0x54).0)
    );
    // An absent account claiming a balance, or a present one claiming to
    // be absent, fails.
    let mut claims = db.account_proof(&NEVER, &[]).unwrap();
    claims.balance = U256::from(1u8);
    assert!(matches!(
        claims.verify(&db.root()),
        Err(AccountProofError::FieldMismatch {
            field: ProofField::Balance,
            ..
        })
    ));
    let mut hides = db.account_proof(&PRESENT, &[]).unwrap();
    hides.nonce = 0;
    hides.balance = U256::ZERO;
    hides.code_size = 0;
    hides.code_hash = B256::ZERO;
    assert!(hides.verify(&db.root()).is_err());
    // An absent account claiming the empty code's hash fails too.
    let mut empty_code = db.account_proof(&NEVER, &[]).unwrap();
    empty_code.code_hash = KECCAK256_EMPTY;
    assert!(empty_code.verify(&db.root()).is_err());
}

#[test]
fn readers_prove_at_their_root_and_old_proofs_fail_at_new_roots() {
    let (mut db, mut reference) = state();
    let old_root = db.root();
    let old_reference = reference.clone();
    let old = db.account_proof(&PRESENT, &slots()).unwrap();
    let reader = db.reader(&old_root).unwrap();

    let mut batch = AccountBatch::new();
    batch
        .set_account(
            PRESENT,
            Account {
                nonce: 8,
                ..account()
            },
        )
        .set_storage(PRESENT, SLOT_NEVER, B256::repeat_byte(0x61));
    let new_root = db.apply_accounts(&batch).unwrap();
    reference.apply_account_batch(&batch);
    assert_eq!(new_root, reference.compute_root());

    let at_reader = reader.account_proof(&PRESENT, &slots()).unwrap();
    assert_eq!(at_reader, old);
    check_against(&at_reader, &old_reference, &PRESENT);
    let new = db.account_proof(&PRESENT, &slots()).unwrap();
    check_against(&new, &reference, &PRESENT);
    assert_eq!(new.nonce, 8);

    // The old proof against the new root: the claimed root differs; with
    // the claim edited to the new root, the proofs do not verify.
    assert_eq!(
        old.verify(&new_root),
        Err(AccountProofError::StateRoot {
            claimed: old_root,
            expected: new_root
        })
    );
    let mut moved = old.clone();
    moved.state_root = new_root;
    moved.storage_hash = new_root;
    assert_eq!(
        moved.verify(&new_root),
        Err(AccountProofError::Proof {
            part: ProofPart::Account,
            source: ProofError::RootMismatch
        })
    );
    assert!(old.verify(&old_root).is_ok());
    assert!(new.verify(&new_root).is_ok());
}

/// Applies `edit` to a copy of `proof` and returns the verification error.
fn tampered(
    proof: &AccountProof,
    root: &Root,
    edit: impl Fn(&mut AccountProof),
) -> AccountProofError {
    let mut copy = proof.clone();
    edit(&mut copy);
    assert_ne!(&copy, proof, "the edit changed nothing");
    copy.verify(root).expect_err("a tampered proof verifies")
}

#[test]
fn every_tampered_field_fails_verification() {
    let (db, _) = state();
    let root = db.root();
    let proof = db.account_proof(&PRESENT, &slots()).unwrap();
    proof.verify(&root).unwrap();
    let field = |error: AccountProofError| match error {
        AccountProofError::FieldMismatch { field, .. } => Some(field),
        _ => None,
    };
    let e = tampered(&proof, &root, |p| p.balance += U256::from(1u8));
    assert_eq!(field(e), Some(ProofField::Balance));
    let e = tampered(&proof, &root, |p| p.nonce += 1);
    assert_eq!(field(e), Some(ProofField::Nonce));
    let e = tampered(&proof, &root, |p| p.code_hash = KECCAK256_EMPTY);
    assert_eq!(field(e), Some(ProofField::CodeHash));
    let e = tampered(&proof, &root, |p| p.code_size -= 1);
    assert_eq!(field(e), Some(ProofField::CodeSize));
    let e = tampered(&proof, &root, |p| {
        p.storage_proof[1].value = U256::from(9u8)
    });
    assert_eq!(field(e), Some(ProofField::StorageValue(1)));
    // An absent slot claimed present with a value, a present one zeroed.
    let e = tampered(&proof, &root, |p| {
        p.storage_proof[3].value = U256::from(1u8)
    });
    assert_eq!(field(e), Some(ProofField::StorageValue(3)));
    let e = tampered(&proof, &root, |p| p.storage_proof[0].value = U256::ZERO);
    assert_eq!(field(e), Some(ProofField::StorageValue(0)));
}

#[test]
fn tampered_proofs_roots_and_bindings_fail_verification() {
    let (db, _) = state();
    let root = db.root();
    let proof = db.account_proof(&PRESENT, &slots()).unwrap();
    let other = db.account_proof(&NEVER, &[SLOT_MAIN]).unwrap();

    let e = tampered(&proof, &root, |p| {
        p.proof_format = "ubt-multiproof-v2".into()
    });
    assert!(matches!(e, AccountProofError::UnsupportedFormat(_)));
    let e = tampered(&proof, &root, |p| p.storage_hash = B256::ZERO);
    assert!(matches!(e, AccountProofError::StorageHash { .. }));
    let e = tampered(&proof, &root, |p| p.state_root = B256::repeat_byte(1));
    assert!(matches!(e, AccountProofError::StateRoot { .. }));
    // Another account's address over this account's proofs.
    let e = tampered(&proof, &root, |p| p.address = NEVER);
    assert_eq!(
        e,
        AccountProofError::WrongKeys {
            part: ProofPart::Account,
            address: NEVER
        }
    );
    // Another slot's proof, or the storage proof of another account.
    let e = tampered(&proof, &root, |p| {
        p.storage_proof[0].key = SLOT_NEVER - U256::from(1u8)
    });
    assert!(matches!(
        e,
        AccountProofError::WrongKeys {
            part: ProofPart::Storage(0),
            ..
        }
    ));
    let e = tampered(&proof, &root, |p| {
        p.storage_proof[1].proof = other.storage_proof[0].proof.clone();
    });
    assert!(matches!(
        e,
        AccountProofError::WrongKeys {
            part: ProofPart::Storage(1),
            ..
        }
    ));
    // No proof, two proofs.
    let e = tampered(&proof, &root, |p| p.account_proof.clear());
    assert_eq!(
        e,
        AccountProofError::ProofCount {
            part: ProofPart::Account,
            count: 0
        }
    );
    let e = tampered(&proof, &root, |p| {
        let again = p.storage_proof[2].proof[0].clone();
        p.storage_proof[2].proof.push(again);
    });
    assert_eq!(
        e,
        AccountProofError::ProofCount {
            part: ProofPart::Storage(2),
            count: 2
        }
    );
    // Every flipped byte of the header proof, and a truncated slot proof.
    let bytes = proof.account_proof[0].to_vec();
    for at in 0..bytes.len() {
        let mut flipped = bytes.clone();
        flipped[at] ^= 0x01;
        let e = tampered(&proof, &root, |p| {
            p.account_proof = vec![Bytes::from(flipped.clone())]
        });
        assert!(
            matches!(
                e,
                AccountProofError::Proof {
                    part: ProofPart::Account,
                    ..
                }
            ),
            "byte {at}: {e}"
        );
    }
    let e = tampered(&proof, &root, |p| {
        let cut = p.storage_proof[0].proof[0].len() - 1;
        p.storage_proof[0].proof[0] = p.storage_proof[0].proof[0].slice(..cut);
    });
    assert!(matches!(
        e,
        AccountProofError::Proof {
            part: ProofPart::Storage(0),
            source: ProofError::Truncated
        }
    ));
}

#[test]
fn the_json_has_the_documented_shape_and_round_trips() {
    let (db, _) = state();
    let root = db.root();
    let proof = db
        .account_proof(&PRESENT, &[SLOT_MAIN, SLOT_NEVER])
        .unwrap();
    let json = serde_json::to_string_pretty(&proof).unwrap();
    let value: serde_json::Value = serde_json::from_str(&json).unwrap();
    let mut fields: Vec<&str> = value
        .as_object()
        .unwrap()
        .keys()
        .map(String::as_str)
        .collect();
    fields.sort_unstable();
    assert_eq!(
        fields,
        [
            "accountProof",
            "address",
            "balance",
            "codeHash",
            "codeSize",
            "nonce",
            "proofFormat",
            "stateRoot",
            "storageHash",
            "storageProof"
        ]
    );
    assert_eq!(value["address"], format!("0x{}", "a1".repeat(20)));
    assert_eq!(value["nonce"], "0x7");
    assert_eq!(value["codeSize"], "0x2d");
    assert_eq!(value["balance"], format!("{:#x}", account().balance));
    assert_eq!(value["codeHash"], format!("0x{}", "77".repeat(32)));
    assert_eq!(value["stateRoot"], root.to_string());
    assert_eq!(value["storageHash"], root.to_string());
    assert_eq!(value["proofFormat"], "ubt-multiproof-v1");
    let slot = &value["storageProof"][0];
    assert_eq!(slot["key"], format!("0x{:064x}", SLOT_MAIN));
    assert_eq!(
        slot["value"],
        format!("{:#x}", U256::from_be_bytes([0x52; 32]))
    );
    assert_eq!(value["storageProof"][1]["value"], "0x0");
    assert_eq!(value["accountProof"].as_array().unwrap().len(), 1);

    let back: AccountProof = serde_json::from_str(&json).unwrap();
    assert_eq!(back, proof);
    back.verify(&root).unwrap();

    // An edited balance in the JSON text parses and fails verification.
    let edited = json.replace(
        &format!("\"balance\": \"{:#x}\"", account().balance),
        "\"balance\": \"0x1\"",
    );
    assert_ne!(edited, json);
    let edited: AccountProof = serde_json::from_str(&edited).unwrap();
    assert!(matches!(
        edited.verify(&root),
        Err(AccountProofError::FieldMismatch {
            field: ProofField::Balance,
            ..
        })
    ));
    // A short storage key is read as a number; malformed fields and
    // unknown fields are refused.
    let short = json.replace(&format!("0x{:064x}", SLOT_MAIN), &format!("{SLOT_MAIN:#x}"));
    let short: AccountProof = serde_json::from_str(&short).unwrap();
    assert_eq!(short, proof);
    for (from, to) in [
        ("\"nonce\": \"0x7\"", "\"nonce\": \"0x07\""),
        ("\"nonce\": \"0x7\"", "\"nonce\": 7"),
        ("\"codeSize\": \"0x2d\"", "\"codeSize\": \"0x1ffffffff\""),
        ("\"proofFormat\"", "\"extra\": 1, \"proofFormat\""),
        ("\"address\": \"0x", "\"address\": \"0xa1"),
    ] {
        let bad = json.replacen(from, to, 1);
        assert_ne!(bad, json, "{from}");
        assert!(serde_json::from_str::<AccountProof>(&bad).is_err(), "{to}");
    }
}
