//! The account commands' contract: `ubt account`, `ubt storage` and
//! `ubt code` print what the engine's account API reads from a database
//! (present, absent, deleted, empty, long code past the header stem), slots
//! in hex and decimal; bad addresses and slots are one-line errors with
//! exit 2, a missing database or an account whose chunks its code size
//! does not back exit 1, and nothing panics.

// Test code: a failed unwrap is a failed test, and casts narrow test data.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::cast_possible_truncation
)]

use std::process::Output;

use alloy_primitives::{Address, B256, U256};
use ubt_engine::{Account, AccountBatch, Db, Options};

mod common;

use common::{run_ubt, stderr_of, text, TempDir};

fn ubt(args: &[&str]) -> Output {
    run_ubt(args, None)
}

/// Asserts success and exactly one line on stdout; returns it.
fn one_line(output: &Output) -> String {
    assert!(output.status.success(), "failed: {}", stderr_of(output));
    let out = String::from_utf8_lossy(&output.stdout).to_string();
    assert_eq!(out.lines().count(), 1, "stdout: {out:?}");
    assert!(out.ends_with('\n'));
    out.trim_end().to_string()
}

/// Asserts a failure with `code`, one `ubt: error:` line on stderr that
/// contains `fragment`, and nothing on stdout.
fn assert_fails(output: &Output, code: i32, fragment: &str) {
    let err = stderr_of(output);
    assert_eq!(output.status.code(), Some(code), "stderr: {err}");
    assert!(output.stdout.is_empty(), "stdout: {:?}", output.stdout);
    assert_eq!(err.lines().count(), 1, "stderr: {err}");
    assert!(err.starts_with("ubt: error: "), "stderr: {err}");
    assert!(err.contains(fragment), "{fragment:?} not in: {err}");
}

fn hex_address(address: &Address) -> String {
    format!("0x{}", alloy_primitives::hex::encode(address))
}

const CONTRACT: Address = Address::repeat_byte(0xc1);
const EOA: Address = Address::repeat_byte(0xe0);
const DELETED: Address = Address::repeat_byte(0xde);
const BROKEN: Address = Address::repeat_byte(0xbb);
const STORAGE_ONLY: Address = Address::repeat_byte(0x50);
const NEVER: Address = Address::repeat_byte(0x99);

/// 5,000 bytes of code: 162 chunks, past the 128 of the header stem.
fn contract_code() -> Vec<u8> {
    (0..5000u32).map(|i| (i * 7 % 256) as u8).collect()
}

fn code_hash() -> B256 {
    B256::repeat_byte(0x77)
}

/// A database holding the test accounts, closed.
fn database(dir: &TempDir) -> String {
    let path = dir.path("db");
    let mut db = Db::open(&path, Options::default()).expect("create");
    let mut batch = AccountBatch::new();
    batch
        .set_account(
            CONTRACT,
            Account {
                nonce: 1,
                balance: U256::from(0x1234u32),
                code_size: 5000,
                code_hash: code_hash(),
            },
        )
        .set_code(CONTRACT, contract_code())
        .set_storage(CONTRACT, U256::ZERO, B256::with_last_byte(0x2a))
        .set_storage(CONTRACT, U256::from(1000u32), B256::repeat_byte(0xab))
        .delete_storage(CONTRACT, U256::from(1u8))
        .set_account(
            EOA,
            Account {
                nonce: u64::MAX,
                balance: U256::ZERO,
                code_size: 0,
                code_hash: code_hash(),
            },
        )
        .set_account(DELETED, Account::default())
        .set_account(
            DELETED,
            Account {
                nonce: 3,
                balance: U256::from(1u8),
                code_size: 2,
                code_hash: code_hash(),
            },
        )
        .set_code(DELETED, vec![0x60, 0x00])
        .set_storage(DELETED, U256::from(5u8), B256::repeat_byte(5))
        .delete_account(DELETED)
        .set_account(
            BROKEN,
            Account {
                nonce: 0,
                balance: U256::ZERO,
                code_size: 40,
                code_hash: code_hash(),
            },
        )
        .set_storage(STORAGE_ONLY, U256::from(7u8), B256::repeat_byte(7));
    db.apply_accounts(&batch).expect("apply");
    db.close().expect("close");
    text(&path)
}

#[test]
fn account_prints_one_json_object_or_absent() {
    let dir = TempDir::new("accounts-account");
    let db = database(&dir);
    let hash = format!("0x{}", "77".repeat(32));
    let out = one_line(&ubt(&["account", "--db", &db, &hex_address(&CONTRACT)]));
    assert_eq!(
        out,
        format!(r#"{{"nonce":1,"balance":"0x1234","codeHash":"{hash}","codeSize":5000}}"#)
    );
    let out = one_line(&ubt(&["account", "--db", &db, &hex_address(&EOA)]));
    assert_eq!(
        out,
        format!(
            r#"{{"nonce":18446744073709551615,"balance":"0x0","codeHash":"{hash}","codeSize":0}}"#
        )
    );
    // Upper-case hex digits are accepted.
    let upper = format!("0x{}", "E0".repeat(20));
    assert_eq!(one_line(&ubt(&["account", "--db", &db, &upper])), out);
    for absent in [NEVER, DELETED, STORAGE_ONLY] {
        let out = one_line(&ubt(&["account", "--db", &db, &hex_address(&absent)]));
        assert_eq!(out, "absent", "{absent}");
    }
}

#[test]
fn storage_prints_the_value_or_zero() {
    let dir = TempDir::new("accounts-storage");
    let db = database(&dir);
    let contract = hex_address(&CONTRACT);
    let storage =
        |address: &str, slot: &str| one_line(&ubt(&["storage", "--db", &db, address, slot]));
    let zero = format!("0x{}", "00".repeat(32));
    assert_eq!(
        storage(&contract, "0x0"),
        format!("0x{}2a", "00".repeat(31))
    );
    assert_eq!(storage(&contract, "0"), storage(&contract, "0x0"));
    let main_storage = format!("0x{}", "ab".repeat(32));
    assert_eq!(storage(&contract, "1000"), main_storage);
    assert_eq!(storage(&contract, "0x3e8"), main_storage);
    assert_eq!(
        storage(&contract, &format!("0x{}3e8", "0".repeat(61))),
        main_storage
    );
    assert_eq!(storage(&contract, "1"), zero, "deleted slot");
    assert_eq!(storage(&contract, "2"), zero, "never written");
    assert_eq!(storage(&hex_address(&NEVER), "0"), zero);
    // A deleted account's slots stay.
    assert_eq!(
        storage(&hex_address(&DELETED), "5"),
        format!("0x{}", "05".repeat(32))
    );
    assert_eq!(
        storage(&hex_address(&STORAGE_ONLY), "0x7"),
        format!("0x{}", "07".repeat(32))
    );
}

#[test]
fn code_prints_hex_and_0x_for_empty_or_absent() {
    let dir = TempDir::new("accounts-code");
    let db = database(&dir);
    let out = one_line(&ubt(&["code", "--db", &db, &hex_address(&CONTRACT)]));
    assert_eq!(
        out,
        format!("0x{}", alloy_primitives::hex::encode(contract_code()))
    );
    for empty in [EOA, NEVER, DELETED, STORAGE_ONLY] {
        let out = one_line(&ubt(&["code", "--db", &db, &hex_address(&empty)]));
        assert_eq!(out, "0x", "{empty}");
    }
}

#[test]
fn a_code_size_without_chunks_exits_1() {
    let dir = TempDir::new("accounts-broken");
    let db = database(&dir);
    let output = ubt(&["code", "--db", &db, &hex_address(&BROKEN)]);
    assert_fails(&output, 1, "40 code bytes, but code chunk 0 is absent");
}

#[test]
fn bad_addresses_and_slots_exit_2() {
    let dir = TempDir::new("accounts-bad-input");
    let db = database(&dir);
    let good = hex_address(&CONTRACT);
    let bad_addresses = [
        ("", "empty"),
        ("c1c1", "must start with 0x"),
        ("0x1234", "20 bytes (40 hex digits), got 4"),
        (&format!("0x{}", "c1".repeat(32)), "got 64"),
        (&format!("0x{}zz", "c1".repeat(19)), "not a hex digit"),
    ];
    for (address, fragment) in bad_addresses {
        for command in ["account", "code"] {
            let output = ubt(&[command, "--db", &db, address]);
            assert_fails(&output, 2, fragment);
        }
        let output = ubt(&["storage", "--db", &db, address, "0"]);
        assert_fails(&output, 2, fragment);
    }
    let too_big = format!("{}0", U256::MAX);
    let bad_slots = [
        ("", "empty"),
        ("-1", "unexpected argument"), // clap takes it for an option
        ("+1", "not a decimal digit"),
        ("1e3", "not a decimal digit"),
        ("0x", "1 to 64 hex digits, got 0"),
        (&format!("0x1{}", "0".repeat(64)), "got 65"),
        (&too_big, "does not fit 256 bits"),
    ];
    for (slot, fragment) in bad_slots {
        let output = ubt(&["storage", "--db", &db, &good, slot]);
        assert_fails(&output, 2, fragment);
    }
    // Missing arguments are usage errors.
    assert_fails(&ubt(&["account", "--db", &db]), 2, "required");
    assert_fails(&ubt(&["storage", "--db", &db, &good]), 2, "required");
}

#[test]
fn a_missing_database_exits_1() {
    let dir = TempDir::new("accounts-missing");
    let missing = text(&dir.path("nothing-here"));
    let address = hex_address(&CONTRACT);
    for args in [
        vec!["account", "--db", &missing, &address],
        vec!["code", "--db", &missing, &address],
        vec!["storage", "--db", &missing, &address, "0"],
    ] {
        assert_fails(&ubt(&args), 1, "no database");
    }
    // Nothing was created by the read-only open.
    assert!(!dir.path("nothing-here").exists());
}
