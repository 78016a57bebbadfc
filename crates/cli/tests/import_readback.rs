//! `ubt import genesis` of Hoodi, then `ubt account`, `ubt storage` and
//! `ubt code` on a sample of its accounts, each printing exactly its
//! documented line: the deposit contract (code past the header stem's 128
//! chunks, storage slots 0x22..=0x40), an externally owned account with a
//! large balance, and an address the genesis does not hold. The expected
//! lines are built from the genesis file itself.

// Test code: a failed unwrap is a failed test, and casts narrow test data.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::cast_possible_truncation
)]

mod common;

use std::path::{Path, PathBuf};
use std::process::Output;

use alloy_primitives::{keccak256, U256};
use common::{run_ubt, text, TempDir};

/// Hoodi's deposit contract: code and storage.
const CONTRACT: &str = "0x00000000219ab540356cbb839cbe05303d7705fa";
/// Hoodi's largest balance, no code.
const EOA: &str = "0x9a27d0c715d3f2af2fac39a41c49ed35004a3bcf";
/// Not in Hoodi's alloc.
const ABSENT: &str = "0x00000000000000000000000000000000deadbeef";
/// keccak256 of no bytes.
const EMPTY_CODE_HASH: &str = "0xc5d2460186f7233c927e7db2dcc703c0e500b653ca82273b7bfad8045d85a470";

fn hoodi_path() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../test-vectors/genesis/hoodi.json")
}

/// Exit 0 and exactly one line on standard output; returns it.
fn one_line(output: &Output) -> String {
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(output.status.success(), "failed: {stderr}");
    let out = String::from_utf8_lossy(&output.stdout).to_string();
    assert_eq!(out.lines().count(), 1, "stdout: {out:?}");
    assert!(out.ends_with('\n'), "stdout: {out:?}");
    out.trim_end().to_string()
}

/// The 32-byte word of a hex string, left-padded, as `0x<64 hex>`.
fn word(hex: &str) -> String {
    let digits = hex.strip_prefix("0x").unwrap_or(hex).to_ascii_lowercase();
    assert!(digits.len() <= 64, "{hex}");
    format!("0x{digits:0>64}")
}

#[test]
fn hoodi_accounts_print_their_documented_lines() {
    let genesis: serde_json::Value =
        serde_json::from_slice(&std::fs::read(hoodi_path()).expect("read hoodi")).expect("JSON");
    let alloc = genesis["alloc"].as_object().expect("an alloc");
    let entry = |address: &str| alloc.get(address.trim_start_matches("0x"));
    let contract = entry(CONTRACT).expect("the deposit contract is in Hoodi");
    let eoa = entry(EOA).expect("the EOA is in Hoodi");
    assert!(entry(ABSENT).is_none());

    let dir = TempDir::new("import-readback");
    let db = text(&dir.path("hoodi"));
    let imported = run_ubt(
        &["import", "genesis", "--db", &db, &text(&hoodi_path())],
        None,
    );
    assert!(
        imported.status.success(),
        "{}",
        String::from_utf8_lossy(&imported.stderr)
    );
    let ubt = |args: &[&str]| {
        let mut all = vec![args[0], "--db", &db];
        all.extend_from_slice(&args[1..]);
        one_line(&run_ubt(&all, None))
    };

    // The deposit contract: no nonce, zero balance, 6,359 bytes of code.
    let code_hex = contract["code"].as_str().expect("code");
    let code = alloy_primitives::hex::decode(code_hex).expect("hex code");
    assert!(
        code.len() > 128 * 31,
        "the code reaches past the header stem"
    );
    assert!(contract.get("nonce").is_none());
    assert_eq!(contract["balance"], "0x0");
    assert_eq!(
        ubt(&["account", CONTRACT]),
        format!(
            r#"{{"nonce":0,"balance":"0x0","codeHash":"{}","codeSize":{}}}"#,
            keccak256(&code),
            code.len()
        )
    );
    assert_eq!(ubt(&["code", CONTRACT]), code_hex.to_ascii_lowercase());
    let storage = contract["storage"].as_object().expect("storage");
    assert_eq!(storage.len(), 31);
    for (slot, value) in storage {
        let value = word(value.as_str().expect("a hex value"));
        assert_eq!(ubt(&["storage", CONTRACT, slot]), value, "slot {slot}");
        // The same slot in decimal and in short hex.
        let number = U256::from_str_radix(slot.trim_start_matches("0x"), 16).expect("slot");
        assert_eq!(ubt(&["storage", CONTRACT, &number.to_string()]), value);
        assert_eq!(ubt(&["storage", CONTRACT, &format!("{number:#x}")]), value);
    }
    let zero = word("0x");
    for slot in ["0", "0x21", "0x41", "1000"] {
        assert_eq!(ubt(&["storage", CONTRACT, slot]), zero, "slot {slot}");
    }

    // The EOA: balance in minimal hex, no code.
    let balance = eoa["balance"].as_str().expect("balance");
    let balance =
        U256::from_str_radix(balance.trim_start_matches("0x"), 16).expect("a hex balance");
    assert!(balance > U256::from(u64::MAX));
    assert!(eoa.get("code").is_none() && eoa.get("nonce").is_none());
    assert_eq!(
        ubt(&["account", EOA]),
        format!(
            r#"{{"nonce":0,"balance":"{balance:#x}","codeHash":"{EMPTY_CODE_HASH}","codeSize":0}}"#
        )
    );
    assert_eq!(ubt(&["code", EOA]), "0x");
    assert_eq!(ubt(&["storage", EOA, "0"]), zero);

    // The absent address.
    assert_eq!(ubt(&["account", ABSENT]), "absent");
    assert_eq!(ubt(&["code", ABSENT]), "0x");
    assert_eq!(ubt(&["storage", ABSENT, "0x22"]), zero);
}
