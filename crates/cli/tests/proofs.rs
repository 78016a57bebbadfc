// Test code: a failed unwrap is a failed test, and casts narrow test data.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::cast_possible_truncation
)]

//! `ubt prove` and `ubt verify-proof` end to end through the binary: a
//! proof of keys verifies to what `ubt get` reads (absent keys `absent`),
//! at the tip and at an older root; a flipped byte, a truncated file or
//! another root is one error line with exit 1; bad arguments exit 2; the
//! account proof JSON verifies to what `ubt account` and `ubt storage`
//! read, and fails once a field is edited; and proving writes no byte of
//! the database.

mod common;

use std::path::{Path, PathBuf};
use std::process::Output;

use alloy_primitives::{Address, B256, U256};
use common::{run_ubt, stderr_of, stdout_of, text, TempDir};
use ubt_engine::{AccountBatch, Db, Options};
use ubt_spec::key::{basic_data_key, code_hash_key, storage_slot_key};

fn ubt(args: &[&str]) -> Output {
    run_ubt(args, None)
}

/// Exit 0; standard output.
fn success(output: &Output) -> String {
    assert_eq!(
        output.status.code(),
        Some(0),
        "stderr: {}",
        stderr_of(output)
    );
    stdout_of(output)
}

/// Exit `code`, nothing on standard output, one `ubt: error:` line on
/// standard error holding `fragment`.
fn assert_fails(output: &Output, code: i32, fragment: &str) {
    let err = stderr_of(output);
    assert_eq!(output.status.code(), Some(code), "stderr: {err:?}");
    assert!(output.stdout.is_empty(), "stdout: {:?}", stdout_of(output));
    assert_eq!(err.lines().count(), 1, "not one line: {err:?}");
    assert!(err.starts_with("ubt: error: "), "{err:?}");
    assert!(err.contains(fragment), "{fragment:?} not in {err:?}");
}

fn hex(bytes: &[u8]) -> String {
    format!("0x{}", alloy_primitives::hex::encode(bytes))
}

/// The contract of the genesis fixture with storage, and its two slots.
const CONTRACT: &str = "0xd26793644489aaa20560e78cabb0211f7cc355d0";
const EOA: &str = "0xe71e260171f7dd64cbffbd9429a02237445da55e";
const NEVER: &str = "0x9999999999999999999999999999999999999999";

fn address(text: &str) -> Address {
    text.parse().unwrap()
}

/// A database imported from the full genesis fixture; its root.
fn genesis_db(dir: &TempDir) -> (String, String) {
    let db = text(&dir.path("db"));
    let fixture =
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../../test-vectors/genesis/edge-full.json");
    let out = success(&ubt(&["import", "genesis", "--db", &db, &text(&fixture)]));
    let root = out.lines().last().unwrap().to_string();
    assert_eq!(success(&ubt(&["root", "--db", &db])).trim(), root);
    (db, root)
}

/// Header keys of present and absent accounts, two present slots, an
/// absent slot, and a key no stem is near.
fn test_keys() -> Vec<B256> {
    let contract = address(CONTRACT);
    vec![
        basic_data_key(&contract),
        code_hash_key(&contract),
        storage_slot_key(&contract, &U256::from(0x22u8)),
        storage_slot_key(&contract, &U256::from(0x23u8)),
        storage_slot_key(&contract, &U256::from(0x7777u16)),
        basic_data_key(&address(EOA)),
        basic_data_key(&address(NEVER)),
        B256::repeat_byte(0x5a),
    ]
}

/// The line `ubt verify-proof` prints for `key`: what `ubt get` reads.
fn expected_line(db: &str, key: &B256) -> String {
    let value = success(&ubt(&["get", "--db", db, &key.to_string()]));
    format!("{key} {}", value.trim())
}

#[test]
fn proofs_verify_to_what_get_reads() {
    let dir = TempDir::new("proofs-keys");
    let (db, root) = genesis_db(&dir);
    let keys = test_keys();
    let mut file = String::from("# keys to prove\n\n");
    for key in &keys {
        file.push_str(&format!("  {key}   # a key\n"));
    }
    file.push_str(&format!("{}\n", keys[0])); // a duplicate
    let keys_file = dir.write("keys.txt", file.as_bytes());
    let out = text(&dir.path("proof.bin"));
    let summary = success(&ubt(&[
        "prove",
        "--db",
        &db,
        "--out",
        &out,
        "--keys-file",
        &keys_file,
    ]));
    assert_eq!(summary.lines().count(), 1, "{summary}");
    let bytes = std::fs::read(&out).unwrap();
    assert!(
        summary.contains(&format!("proved {} keys", keys.len())),
        "{summary}"
    );
    assert!(
        summary.contains(&format!("{} bytes", bytes.len())),
        "{summary}"
    );
    assert!(summary.contains(&root), "{summary}");

    let verified = success(&ubt(&["verify-proof", "--root", &root, &out]));
    let mut sorted = keys.clone();
    sorted.sort_unstable();
    let expected: Vec<String> = sorted.iter().map(|key| expected_line(&db, key)).collect();
    assert_eq!(verified.lines().collect::<Vec<_>>(), expected);
    let absent = verified
        .lines()
        .filter(|line| line.ends_with(" absent"))
        .count();
    assert_eq!(absent, 3, "{verified}");
    assert!(
        summary.contains(&format!("({} present, 3 absent)", keys.len() - 3)),
        "{summary}"
    );

    // Keys as arguments, in another order: the same canonical bytes.
    let again = text(&dir.path("again.bin"));
    let mut args = vec!["prove", "--db", &db, "--out", &again];
    let reversed: Vec<String> = keys.iter().rev().map(B256::to_string).collect();
    args.extend(reversed.iter().map(String::as_str));
    success(&ubt(&args));
    assert_eq!(std::fs::read(&again).unwrap(), bytes);
    // At the tip's root given explicitly: the same again.
    let at_root = text(&dir.path("at-root.bin"));
    let key = keys[0].to_string();
    success(&ubt(&[
        "prove", "--db", &db, "--root", &root, "--out", &at_root, &key,
    ]));
    let alone = success(&ubt(&["verify-proof", "--root", &root, &at_root]));
    assert_eq!(alone.trim(), expected_line(&db, &keys[0]));
}

#[test]
fn damaged_proofs_and_other_roots_exit_1() {
    let dir = TempDir::new("proofs-damaged");
    let (db, root) = genesis_db(&dir);
    let out = text(&dir.path("proof.bin"));
    let keys: Vec<String> = test_keys().iter().map(B256::to_string).collect();
    let mut args = vec!["prove", "--db", &db, "--out", &out];
    args.extend(keys.iter().map(String::as_str));
    success(&ubt(&args));
    let bytes = std::fs::read(&out).unwrap();

    let original = success(&ubt(&["verify-proof", "--root", &root, &out]));
    let keys_end = 4 + 32 * keys.len();
    // A flipped bit past the keys (shape, hashes, stems, values) is
    // rejected. In the keys it may give a valid proof of other keys (the
    // neighbour of an absent key is absent too): the output then names the
    // other keys, and never another value for a key of the original.
    for at in (0..bytes.len()).step_by(5).chain([bytes.len() - 1]) {
        let mut flipped = bytes.clone();
        flipped[at] ^= 0x10;
        let file = dir.write("flipped.bin", &flipped);
        let output = ubt(&["verify-proof", "--root", &root, &file]);
        if at >= keys_end || output.status.code() != Some(0) {
            assert_fails(&output, 1, "proof rejected");
            continue;
        }
        let shown = stdout_of(&output);
        assert_ne!(shown, original, "byte {at}");
        for line in shown.lines() {
            let key = line.split(' ').next().unwrap();
            if let Some(same) = original.lines().find(|l| l.starts_with(key)) {
                assert_eq!(line, same, "byte {at}");
            }
        }
    }
    let truncated = dir.write("truncated.bin", &bytes[..bytes.len() - 1]);
    assert_fails(
        &ubt(&["verify-proof", "--root", &root, &truncated]),
        1,
        "proof truncated",
    );
    let mut longer = bytes.clone();
    longer.push(0);
    let longer = dir.write("longer.bin", &longer);
    assert_fails(
        &ubt(&["verify-proof", "--root", &root, &longer]),
        1,
        "trailing bytes",
    );
    let empty = dir.write("empty.bin", b"");
    assert_fails(
        &ubt(&["verify-proof", "--root", &root, &empty]),
        1,
        "proof truncated",
    );
    let other_root = format!("0x{}", "ab".repeat(32));
    assert_fails(
        &ubt(&["verify-proof", "--root", &other_root, &out]),
        1,
        "root mismatch",
    );
    // The untouched proof still verifies.
    success(&ubt(&["verify-proof", "--root", &root, &out]));
}

#[test]
fn bad_arguments_exit_2() {
    let dir = TempDir::new("proofs-args");
    let (db, root) = genesis_db(&dir);
    let out = text(&dir.path("proof.bin"));
    let key = B256::repeat_byte(1).to_string();
    let keys_file = dir.write("keys.txt", format!("{key}\n").as_bytes());
    let bad_line = dir.write("bad.txt", format!("{key}\n\n0x1234\n").as_bytes());
    let no_keys = dir.write("none.txt", b"# nothing\n\n");
    let missing = text(&dir.path("missing.txt"));
    let in_db = text(&dir.path("db").join("proof.bin"));
    let cases: Vec<(Vec<&str>, &str)> = vec![
        (
            vec!["prove", "--db", &db, "--out", &out, "0x12"],
            "key 1 must be 32 bytes",
        ),
        (
            vec!["prove", "--db", &db, "--out", &out, &key, "12"],
            "key 2 must start with 0x",
        ),
        (
            vec!["prove", "--db", &db, "--out", &out, "0xzz"],
            "invalid hex",
        ),
        (
            vec![
                "prove",
                "--db",
                &db,
                "--out",
                &out,
                &key,
                "--keys-file",
                &keys_file,
            ],
            "cannot be used with",
        ),
        (vec!["prove", "--db", &db, "--out", &out], "required"),
        (vec!["prove", "--db", &db, &key], "--out"),
        (
            vec!["prove", "--db", &db, "--out", &out, "--keys-file", &missing],
            "cannot read",
        ),
        (
            vec![
                "prove",
                "--db",
                &db,
                "--out",
                &out,
                "--keys-file",
                &bad_line,
            ],
            "bad.txt:3:",
        ),
        (
            vec!["prove", "--db", &db, "--out", &out, "--keys-file", &no_keys],
            "no keys",
        ),
        (
            vec!["prove", "--db", &db, "--out", &out, "--root", "0x12", &key],
            "--root must be 32 bytes",
        ),
        (
            vec!["prove", "--db", &db, "--out", &in_db, &key],
            "inside the database directory",
        ),
        (
            vec!["prove", "--db", &db, "--slot", "0x1", "--out", &out, &key],
            "'--slot <SLOT>' cannot be used with",
        ),
        (
            vec!["prove", "--db", &db, "--account", "0x12"],
            "the address must be 20 bytes",
        ),
        (
            vec!["prove", "--db", &db, "--account", EOA, "--slot", "0xg"],
            "invalid hex",
        ),
        (
            vec!["prove", "--db", &db, "--account", EOA, &key],
            "cannot be used with",
        ),
        (
            vec!["verify-proof", "--root", &root, &missing],
            "cannot read",
        ),
        (
            vec!["verify-proof", "--root", "0x12", &keys_file],
            "--root must be 32 bytes",
        ),
        (vec!["verify-proof", &keys_file], "--root"),
    ];
    for (args, fragment) in cases {
        let output = ubt(&args);
        assert_fails(&output, 2, fragment);
    }
    assert!(!dir.path("db").join("proof.bin").exists());
    assert!(!Path::new(&out).exists());
}

/// `ubt prove --account` of the contract and three slots (two present,
/// one absent) with --out: the JSON printed (equal to the file's) and the
/// file's path.
fn contract_proof(dir: &TempDir, db: &str, root: &str) -> (String, String) {
    let json_file = text(&dir.path("account.json"));
    let output = ubt(&[
        "prove",
        "--db",
        db,
        "--account",
        CONTRACT,
        "--slot",
        "0x22",
        "--slot",
        "35",
        "--slot",
        "0x7777",
        "--out",
        &json_file,
    ]);
    let json = success(&output);
    assert_eq!(std::fs::read_to_string(&json_file).unwrap(), json);
    let value: serde_json::Value = serde_json::from_str(&json).unwrap();
    assert_eq!(value["stateRoot"], root);
    assert_eq!(value["storageHash"], root);
    assert_eq!(value["proofFormat"], "ubt-multiproof-v1");
    assert_eq!(value["address"], CONTRACT);
    (json, json_file)
}

#[test]
fn account_proofs_verify_to_what_account_and_storage_read() {
    let dir = TempDir::new("proofs-account");
    let (db, root) = genesis_db(&dir);
    let (json, json_file) = contract_proof(&dir, &db, &root);
    let value: serde_json::Value = serde_json::from_str(&json).unwrap();
    // The fields equal what `ubt account` and `ubt storage` read.
    let account: serde_json::Value =
        serde_json::from_str(&success(&ubt(&["account", "--db", &db, CONTRACT]))).unwrap();
    assert_eq!(value["balance"], account["balance"]);
    assert_eq!(value["codeHash"], account["codeHash"]);
    assert_eq!(
        value["nonce"],
        format!("{:#x}", account["nonce"].as_u64().unwrap())
    );
    assert_eq!(
        value["codeSize"],
        format!("{:#x}", account["codeSize"].as_u64().unwrap())
    );

    let verified = success(&ubt(&[
        "verify-proof",
        "--root",
        &root,
        "--account",
        &json_file,
    ]));
    let lines: Vec<&str> = verified.lines().collect();
    assert_eq!(lines[0], format!("address {CONTRACT}"));
    assert_eq!(lines[1], "account present");
    assert_eq!(
        lines[3],
        format!("balance {}", account["balance"].as_str().unwrap())
    );
    assert_eq!(
        lines[4],
        format!("codeHash {}", account["codeHash"].as_str().unwrap())
    );
    for (line, slot) in lines[6..].iter().zip(["0x22", "0x23", "0x7777"]) {
        let stored = success(&ubt(&["storage", "--db", &db, CONTRACT, slot]));
        let slot_hex = hex(&U256::from_str_radix(&slot[2..], 16)
            .unwrap()
            .to_be_bytes::<32>());
        let shown = if slot == "0x7777" {
            "absent".to_string()
        } else {
            stored.trim().to_string()
        };
        assert_eq!(*line, format!("slot {slot_hex} {shown}"));
    }
    assert_eq!(lines.len(), 9, "{verified}");
}

#[test]
fn edited_or_damaged_account_proofs_exit_1() {
    let dir = TempDir::new("proofs-edited");
    let (db, root) = genesis_db(&dir);
    let (json, json_file) = contract_proof(&dir, &db, &root);
    let value: serde_json::Value = serde_json::from_str(&json).unwrap();
    // An edited balance, an edited slot value, or another root: exit 1.
    let balance = value["balance"].as_str().unwrap();
    let edited = json.replacen(
        &format!("\"balance\": \"{balance}\""),
        "\"balance\": \"0x1\"",
        1,
    );
    assert_ne!(edited, json);
    let edited = dir.write("edited.json", edited.as_bytes());
    assert_fails(
        &ubt(&["verify-proof", "--root", &root, "--account", &edited]),
        1,
        "balance is 0x1, but the proof shows",
    );
    let mut slot_edit = value.clone();
    slot_edit["storageProof"][2]["value"] = "0x5".into();
    let slot_edit = dir.write("slot.json", slot_edit.to_string().as_bytes());
    assert_fails(
        &ubt(&["verify-proof", "--root", &root, "--account", &slot_edit]),
        1,
        "storageProof[2].value",
    );
    let other_root = format!("0x{}", "cd".repeat(32));
    assert_fails(
        &ubt(&[
            "verify-proof",
            "--root",
            &other_root,
            "--account",
            &json_file,
        ]),
        1,
        "stateRoot",
    );
    let cut = dir.write("cut.json", &json.as_bytes()[..json.len() / 2]);
    assert_fails(
        &ubt(&["verify-proof", "--root", &root, "--account", &cut]),
        1,
        "not an account proof",
    );
    // A binary proof is not an account proof, nor the reverse.
    assert_fails(
        &ubt(&["verify-proof", "--root", &root, &json_file]),
        1,
        "proof rejected",
    );
}

#[test]
fn absent_accounts_prove_zeros_and_verify_absent() {
    let dir = TempDir::new("proofs-absent");
    let (db, root) = genesis_db(&dir);
    // An absent account: zeros (the code hash too, as go-ethereum's
    // eth_getProof reports it), verified absent.
    let absent = success(&ubt(&["prove", "--db", &db, "--account", NEVER]));
    let value: serde_json::Value = serde_json::from_str(&absent).unwrap();
    assert_eq!(value["balance"], "0x0");
    assert_eq!(value["nonce"], "0x0");
    assert_eq!(value["codeHash"], format!("0x{}", "0".repeat(64)));
    let absent_file = dir.write("absent.json", absent.as_bytes());
    let verified = success(&ubt(&[
        "verify-proof",
        "--root",
        &root,
        "--account",
        &absent_file,
    ]));
    assert_eq!(verified, format!("address {NEVER}\naccount absent\n"));
}

/// Every file of the directory: name, length, modification time, bytes.
fn snapshot(dir: &Path) -> Vec<(String, u64, std::time::SystemTime, Vec<u8>)> {
    let mut files: Vec<_> = std::fs::read_dir(dir)
        .unwrap()
        .map(|entry| {
            let entry = entry.unwrap();
            let meta = entry.metadata().unwrap();
            let name = entry.file_name().to_string_lossy().into_owned();
            (
                name,
                meta.len(),
                meta.modified().unwrap(),
                std::fs::read(entry.path()).unwrap(),
            )
        })
        .collect();
    files.sort();
    files
}

/// A database with two committed blocks (the second overwrites a slot,
/// deletes one, adds one); the roots of both.
fn two_block_db(path: &PathBuf) -> (String, String) {
    let contract = address(CONTRACT);
    let mut db = Db::open(path, Options::default()).unwrap();
    let mut first = AccountBatch::new();
    first
        .set_storage(contract, U256::from(1u8), B256::repeat_byte(0x11))
        .set_storage(contract, U256::from(2u8), B256::repeat_byte(0x22));
    let old = db.apply_accounts(&first).unwrap();
    db.commit().unwrap();
    let mut second = AccountBatch::new();
    second
        .set_storage(contract, U256::from(1u8), B256::repeat_byte(0x33))
        .delete_storage(contract, U256::from(2u8))
        .set_storage(contract, U256::from(3u8), B256::repeat_byte(0x44));
    let new = db.apply_accounts(&second).unwrap();
    db.close().unwrap();
    (old.to_string(), new.to_string())
}

#[test]
fn older_roots_prove_their_state() {
    let dir = TempDir::new("proofs-roots");
    let path = dir.path("db");
    let (old, new) = two_block_db(&path);
    let db = text(&path);
    let contract = address(CONTRACT);
    let keys: Vec<B256> = (1..=3u8)
        .map(|slot| storage_slot_key(&contract, &U256::from(slot)))
        .collect();
    let key_args: Vec<String> = keys.iter().map(B256::to_string).collect();
    let before = snapshot(&path);
    let mut lines = Vec::new();
    for root in [&old, &new] {
        let out = text(&dir.path("proof.bin"));
        let mut args = vec!["prove", "--db", &db, "--root", root, "--out", &out];
        args.extend(key_args.iter().map(String::as_str));
        success(&ubt(&args));
        lines.push(success(&ubt(&["verify-proof", "--root", root, &out])));
    }
    let value = |key: &B256, byte: Option<u8>| {
        byte.map_or_else(
            || format!("{key} absent"),
            |b| format!("{key} {}", B256::repeat_byte(b)),
        )
    };
    let mut old_expected = vec![
        value(&keys[0], Some(0x11)),
        value(&keys[1], Some(0x22)),
        value(&keys[2], None),
    ];
    let mut new_expected = vec![
        value(&keys[0], Some(0x33)),
        value(&keys[1], Some(0)),
        value(&keys[2], Some(0x44)),
    ];
    let order = |lines: &mut Vec<String>| lines.sort();
    order(&mut old_expected);
    order(&mut new_expected);
    assert_eq!(lines[0].lines().collect::<Vec<_>>(), old_expected);
    assert_eq!(lines[1].lines().collect::<Vec<_>>(), new_expected);
    // An old proof does not verify at the new root.
    let out = text(&dir.path("proof.bin"));
    let mut args = vec!["prove", "--db", &db, "--root", &old, "--out", &out];
    args.extend(key_args.iter().map(String::as_str));
    success(&ubt(&args));
    assert_fails(
        &ubt(&["verify-proof", "--root", &new, &out]),
        1,
        "root mismatch",
    );

    // The account proof at the old root: slot 3 absent, slot 2 present.
    let json = success(&ubt(&[
        "prove",
        "--db",
        &db,
        "--root",
        &old,
        "--account",
        CONTRACT,
        "--slot",
        "2",
        "--slot",
        "3",
    ]));
    let file = dir.write("old.json", json.as_bytes());
    let verified = success(&ubt(&["verify-proof", "--root", &old, "--account", &file]));
    assert!(
        verified.contains(&format!(
            "{} absent",
            hex(&U256::from(3u8).to_be_bytes::<32>())
        )),
        "{verified}"
    );
    assert_eq!(snapshot(&path), before, "proving changed the database");
}

#[test]
fn unknown_roots_exit_1_and_write_nothing() {
    let dir = TempDir::new("proofs-unknown");
    let path = dir.path("db");
    two_block_db(&path);
    let db = text(&path);
    let before = snapshot(&path);
    let key_args = [storage_slot_key(&address(CONTRACT), &U256::from(1u8)).to_string()];
    let unknown = format!("0x{}", "42".repeat(32));
    let unknown_out = text(&dir.path("unknown.bin"));
    assert_fails(
        &ubt(&[
            "prove",
            "--db",
            &db,
            "--root",
            &unknown,
            "--out",
            &unknown_out,
            &key_args[0],
        ]),
        1,
        "no block with root",
    );
    assert!(!Path::new(&unknown_out).exists());
    assert_fails(
        &ubt(&[
            "prove",
            "--db",
            &db,
            "--root",
            &unknown,
            "--account",
            CONTRACT,
        ]),
        1,
        "no block with root",
    );
    assert_eq!(snapshot(&path), before, "proving changed the database");
}

#[test]
fn proving_writes_nothing_into_the_database() {
    let dir = TempDir::new("proofs-readonly");
    let (db, root) = genesis_db(&dir);
    let db_path = dir.path("db");
    let before = snapshot(&db_path);
    let out = text(&dir.path("proof.bin"));
    let key = test_keys()[2].to_string();
    let runs: Vec<Vec<&str>> = vec![
        vec!["prove", "--db", &db, "--out", &out, &key],
        vec!["prove", "--db", &db, "--root", &root, "--out", &out, &key],
        vec![
            "prove",
            "--db",
            &db,
            "--account",
            CONTRACT,
            "--slot",
            "0x22",
        ],
        vec!["prove", "--db", &db, "--account", NEVER, "--root", &root],
    ];
    for args in runs {
        success(&ubt(&args));
        assert_eq!(snapshot(&db_path), before, "{args:?} changed the database");
    }
}
