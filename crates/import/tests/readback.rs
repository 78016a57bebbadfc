//! Imported genesis state read back through the engine's account API
//! (`Db::account`, `Db::storage`, `Db::code`) and compared, account by
//! account and slot by slot, with an independent reading of the same JSON
//! file: Hoodi (code and storage), mainnet (8,893 accounts), Sepolia and
//! every edge-case vector that imports (zero storage values, big balances,
//! code sizes across stems, number, address and storage spellings).
//!
//! The reading here is written from go-ethereum's decoding rules, not
//! from the importer's parser: field names without regard to ASCII case,
//! balance and nonce as a decimal or `0x` hex string or a JSON number,
//! addresses with or without `0x`, storage keys and values hex with an
//! optional `0x`, left-padded to 32 bytes. Expected values follow geth's
//! genesis semantics: the balance as geth stores it (a balance of more than
//! 16 significant bytes keeps only its last len - 16 bytes), the code hash
//! keccak256 of the code (of nothing for none), the code size its length,
//! a zero storage value no leaf at all (read back as absent).

// Test code: a failed unwrap is a failed test, and casts narrow test data.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::cast_possible_truncation
)]

mod common;

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

use alloy_primitives::{keccak256, Address, B256, U256};
use common::{import_genesis_bytes, vectors, TempDir};
use serde_json::value::RawValue;
use ubt_engine::{Account, Db, Options};
use ubt_import::{ImportOptions, MIN_MEMORY_BYTES};

/// One alloc entry as the test reads it.
struct Expected {
    address: Address,
    nonce: u64,
    balance: U256,
    code: Vec<u8>,
    /// Every slot of the file with its left-padded value, zeros included.
    storage: BTreeMap<U256, B256>,
}

/// The vector go-ethereum decodes but the import refuses (see the crate
/// documentation).
const REFUSED: &str = "edge-negative-balance.json";

fn raw_map(raw: &RawValue, what: &str) -> BTreeMap<String, Box<RawValue>> {
    serde_json::from_str(raw.get()).unwrap_or_else(|e| panic!("{what}: not an object: {e}"))
}

/// The text of a JSON string, or `None` for any other JSON value.
fn string(raw: &RawValue) -> Option<String> {
    serde_json::from_str::<String>(raw.get()).ok()
}

fn strip_hex_prefix(text: &str) -> Option<&str> {
    text.strip_prefix("0x").or_else(|| text.strip_prefix("0X"))
}

/// A balance or nonce: a string holding a decimal or `0x`/`0X` hex number
/// (empty: zero), or a JSON number.
fn number(raw: &RawValue, what: &str) -> U256 {
    let (digits, radix) = match string(raw) {
        Some(text) => match strip_hex_prefix(&text) {
            Some(hex) => (hex.to_string(), 16),
            None => (text, 10),
        },
        None => (raw.get().trim().to_string(), 10),
    };
    if digits.is_empty() {
        return U256::ZERO;
    }
    U256::from_str_radix(&digits, radix).unwrap_or_else(|e| panic!("{what}: {digits:?}: {e}"))
}

/// Hex bytes with an optional `0x`.
fn hex_bytes(text: &str, what: &str) -> Vec<u8> {
    let digits = text.strip_prefix("0x").unwrap_or(text);
    alloy_primitives::hex::decode(digits).unwrap_or_else(|e| panic!("{what}: {text:?}: {e}"))
}

/// Up to 32 bytes, left-padded.
fn word(text: &str, what: &str) -> [u8; 32] {
    let bytes = hex_bytes(text, what);
    assert!(bytes.len() <= 32, "{what}: {text:?} is over 32 bytes");
    let mut out = [0u8; 32];
    out[32 - bytes.len()..].copy_from_slice(&bytes);
    out
}

/// The alloc of a genesis file: the `alloc` member of a genesis object, or
/// the whole document when it is a bare alloc map.
fn read_alloc(path: &Path) -> Vec<Expected> {
    let text = std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    let document: Box<RawValue> = serde_json::from_str(&text).expect("the file is JSON");
    let top = raw_map(&document, "the document");
    let alloc = match top.iter().find(|(k, _)| k.eq_ignore_ascii_case("alloc")) {
        Some((_, alloc)) => raw_map(alloc, "alloc"),
        None => top,
    };
    let mut seen = BTreeSet::new();
    let mut accounts = Vec::new();
    for (key, raw) in &alloc {
        let address_bytes = hex_bytes(strip_hex_prefix(key).unwrap_or(key), key);
        assert_eq!(address_bytes.len(), 20, "{key}");
        let address = Address::from_slice(&address_bytes);
        assert!(seen.insert(address), "{key}: the address twice");
        let fields: BTreeMap<String, Box<RawValue>> = raw_map(raw, key)
            .into_iter()
            .map(|(name, value)| (name.to_ascii_lowercase(), value))
            .collect();
        let balance = number(&fields["balance"], &format!("{key}.balance"));
        let nonce = match fields.get("nonce") {
            Some(raw) => {
                let nonce = number(raw, &format!("{key}.nonce"));
                u64::try_from(nonce).unwrap_or_else(|_| panic!("{key}.nonce: over 64 bits"))
            }
            None => 0,
        };
        let code = match fields.get("code").and_then(|raw| string(raw)) {
            Some(text) => hex_bytes(&text, &format!("{key}.code")),
            None => Vec::new(),
        };
        let mut storage = BTreeMap::new();
        if let Some(raw) = fields.get("storage").filter(|raw| raw.get() != "null") {
            for (slot, value) in raw_map(raw, &format!("{key}.storage")) {
                let what = format!("{key}.storage.{slot}");
                let value = string(&value).unwrap_or_else(|| panic!("{what}: not a string"));
                let slot_number = U256::from_be_bytes(word(&slot, &what));
                let previous = storage.insert(slot_number, B256::from(word(&value, &what)));
                assert!(previous.is_none(), "{what}: the slot twice");
            }
        }
        accounts.push(Expected {
            address,
            nonce,
            balance,
            code,
            storage,
        });
    }
    accounts
}

/// The balance as go-ethereum's `UpdateAccount` stores it in BasicData's
/// 16 bytes: unchanged below 2^128; longer (n significant bytes), only the
/// last n - 16 bytes are kept.
fn stored_balance(balance: &U256) -> U256 {
    let significant = balance.byte_len();
    if significant <= 16 {
        return *balance;
    }
    let kept_bits = 8 * (significant - 16);
    *balance & ((U256::from(1u8) << kept_bits) - U256::from(1u8))
}

/// Addresses no alloc in the vectors holds.
fn absent_addresses(present: &BTreeSet<Address>) -> Vec<Address> {
    let mut out: Vec<Address> = (0u64..64)
        .map(|i| Address::from_slice(&keccak256(format!("ubt-readback-absent-{i}"))[12..]))
        .collect();
    out.push(Address::repeat_byte(0xff));
    out.push(Address::with_last_byte(0xfe));
    out.retain(|a| !present.contains(a));
    assert!(out.len() > 60);
    out
}

/// Slots the account does not have: some in the header stem (below 64),
/// some in the main storage, the neighbours of every present slot.
fn absent_slots(storage: &BTreeMap<U256, B256>) -> Vec<U256> {
    let mut candidates: Vec<U256> = [0u64, 1, 2, 63, 64, 65, 1000]
        .into_iter()
        .map(U256::from)
        .chain([
            U256::MAX,
            U256::from_be_bytes(keccak256(b"ubt-readback-slot").0),
        ])
        .collect();
    for slot in storage.keys().take(200) {
        candidates.push(slot.wrapping_add(U256::from(1u8)));
        candidates.push(slot.wrapping_sub(U256::from(1u8)));
    }
    candidates.retain(|slot| !storage.contains_key(slot));
    candidates.sort();
    candidates.dedup();
    candidates
}

/// What was read back.
#[derive(Default, Debug)]
struct Tally {
    accounts: u64,
    with_code: u64,
    slots_present: u64,
    slots_zero: u64,
    absent_slots: u64,
    absent_accounts: u64,
    truncated_balances: u64,
}

/// Reads every account, slot and code of `expected` back from `db`.
fn check_database(file: &str, db: &Db, expected: &[Expected]) -> Tally {
    let mut tally = Tally::default();
    let empty_code_hash = keccak256(b"");
    for account in expected {
        let what = format!("{file}: {}", account.address);
        let balance = stored_balance(&account.balance);
        assert_eq!(
            balance,
            U256::from(ubt_spec::basic_data::geth_balance(&account.balance)),
            "{what}: the test's truncation rule disagrees with the spec's"
        );
        if balance != account.balance {
            tally.truncated_balances += 1;
        }
        let want = Account {
            nonce: account.nonce,
            balance,
            code_size: u32::try_from(account.code.len()).expect("code size"),
            code_hash: if account.code.is_empty() {
                empty_code_hash
            } else {
                keccak256(&account.code)
            },
        };
        let got = db.account(&account.address).expect("account read");
        assert_eq!(got, Some(want), "{what}: account");

        let code = db.code(&account.address).expect("code read");
        assert_eq!(
            code.as_ref().map(|c| &c[..]),
            Some(&account.code[..]),
            "{what}: code of {} bytes",
            account.code.len()
        );
        tally.with_code += u64::from(!account.code.is_empty());

        for (slot, value) in &account.storage {
            let got = db.storage(&account.address, slot).expect("storage read");
            if *value == B256::ZERO {
                // geth's SetState of zero on a fresh account: no leaf.
                assert_eq!(got, None, "{what}: slot {slot:#x} holds zero");
                tally.slots_zero += 1;
            } else {
                assert_eq!(got, Some(*value), "{what}: slot {slot:#x}");
                tally.slots_present += 1;
            }
        }
        for slot in absent_slots(&account.storage) {
            let got = db.storage(&account.address, &slot).expect("storage read");
            assert_eq!(got, None, "{what}: slot {slot:#x} is not in the file");
            tally.absent_slots += 1;
        }
        tally.accounts += 1;
    }

    let present: BTreeSet<Address> = expected.iter().map(|a| a.address).collect();
    for address in absent_addresses(&present) {
        let what = format!("{file}: absent {address}");
        assert_eq!(db.account(&address).expect("account read"), None, "{what}");
        assert_eq!(db.code(&address).expect("code read"), None, "{what}");
        for slot in [U256::ZERO, U256::from(64u8)] {
            assert_eq!(
                db.storage(&address, &slot).expect("storage read"),
                None,
                "{what}: slot {slot}"
            );
        }
        tally.absent_accounts += 1;
    }
    tally
}

fn import_and_check(work: &TempDir, file: &str, options: &ImportOptions, label: &str) -> Tally {
    let path = vectors().join("genesis").join(file);
    let expected = read_alloc(&path);
    let document = std::fs::read(&path).expect("read");
    let db_path = work.path(&format!("{file}-{label}"));
    let report = import_genesis_bytes(&db_path, &document, options)
        .unwrap_or_else(|e| panic!("{file}: {e}"));
    assert_eq!(report.counts.accounts, expected.len() as u64, "{file}");
    let slots: u64 = expected.iter().map(|a| a.storage.len() as u64).sum();
    let zeros: u64 = expected
        .iter()
        .flat_map(|a| a.storage.values())
        .filter(|v| **v == B256::ZERO)
        .count() as u64;
    assert_eq!(report.counts.storage_slots, slots - zeros, "{file}");
    assert_eq!(report.counts.zero_storage_values, zeros, "{file}");
    let code_bytes: u64 = expected.iter().map(|a| a.code.len() as u64).sum();
    assert_eq!(report.counts.code_bytes, code_bytes, "{file}");

    let db = Db::open_read_only(&db_path, Options::default()).expect("open");
    // With the flat index (the default) the account reads below go
    // through it; verify compares it with the tree, entry for entry.
    assert_eq!(db.has_flat_index(), options.flat_index, "{file}");
    let flat_records = report.flat_index.map(|f| f.records);
    let indexed = options.flat_index.then_some(report.counts.tree_entries);
    assert_eq!(flat_records, indexed, "{file}: the flat index's records");
    let verified = db.verify().expect("verify");
    assert!(verified.is_ok(), "{file}: {:?}", verified.problems);
    assert_eq!(verified.leaves, report.counts.tree_entries, "{file}");
    assert_eq!(verified.flat_records, indexed.unwrap_or(0), "{file}");
    let tally = check_database(file, &db, &expected);
    assert_eq!(db.root(), report.root.0, "{file}: the report's root");
    tally
}

#[test]
fn hoodi_reads_back_account_by_account() {
    let work = TempDir::new("readback-hoodi");
    let tally = import_and_check(&work, "hoodi.json", &ImportOptions::default(), "roomy");
    println!("hoodi: {tally:?}");
    // What makes Hoodi the interesting one: code (the deposit contract's
    // past the header stem's 128 chunks) and storage.
    assert_eq!(tally.accounts, 335);
    assert_eq!(tally.with_code, 5);
    assert_eq!(tally.slots_present, 33);

    // Spilled and merged with the smallest memory bound: the same reads.
    let spill = TempDir::new("readback-hoodi-tmp");
    let tiny = ImportOptions {
        memory_bytes: MIN_MEMORY_BYTES,
        tmp_dir: Some(spill.0.clone()),
        ..ImportOptions::default()
    };
    let again = import_and_check(&work, "hoodi.json", &tiny, "tiny");
    assert_eq!(again.slots_present, tally.slots_present);

    // Without the flat index, spilled: the same reads, from the tree.
    let tiny_tree_only = ImportOptions {
        flat_index: false,
        ..tiny
    };
    let tree_only = import_and_check(&work, "hoodi.json", &tiny_tree_only, "tiny-tree-only");
    assert_eq!(tree_only.slots_present, tally.slots_present);
}

#[test]
fn mainnet_reads_back_account_by_account() {
    let work = TempDir::new("readback-mainnet");
    let tally = import_and_check(&work, "mainnet.json", &ImportOptions::default(), "roomy");
    println!("mainnet: {tally:?}");
    assert_eq!(tally.accounts, 8893);
    assert_eq!(tally.with_code, 0);
}

#[test]
fn every_importable_vector_reads_back() {
    let dir = vectors().join("genesis");
    let roots: BTreeMap<String, String> =
        serde_json::from_slice(&std::fs::read(dir.join("roots.json")).expect("read"))
            .expect("roots.json is a map");
    let work = TempDir::new("readback-vectors");
    let mut total = Tally::default();
    for file in roots.keys() {
        if file == REFUSED || file == "mainnet.json" || file == "hoodi.json" {
            continue;
        }
        let tally = import_and_check(&work, file, &ImportOptions::default(), "roomy");
        total.accounts += tally.accounts;
        total.slots_present += tally.slots_present;
        total.slots_zero += tally.slots_zero;
        total.truncated_balances += tally.truncated_balances;
        total.with_code += tally.with_code;
        total.absent_slots += tally.absent_slots;
        total.absent_accounts += tally.absent_accounts;
    }
    println!("edge vectors and sepolia: {total:?}");
    // The rules the vectors exist for were exercised.
    assert!(total.slots_zero >= 8, "{total:?}");
    assert!(total.truncated_balances >= 5, "{total:?}");
    assert!(total.with_code >= 10, "{total:?}");
}
