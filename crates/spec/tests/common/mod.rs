//! Shared helpers for the integration tests: loading the conformance vectors
//! (copied into `test-vectors/` so a fresh clone tests without anything
//! outside the repository) and decoding their hex fields.
#![allow(dead_code, missing_docs)]

use alloy_primitives::{Address, B256, U256};
use serde_json::Value;

/// Loads `test-vectors/<name>`.
pub fn vector_file(name: &str) -> Value {
    let path = manifest_dir().join("../../test-vectors").join(name);
    let text = std::fs::read_to_string(&path)
        .unwrap_or_else(|e| panic!("cannot read vector file {}: {e}", path.display()));
    serde_json::from_str(&text).unwrap_or_else(|e| panic!("bad JSON in {}: {e}", path.display()))
}

/// The string field `field` of `v`.
pub fn str_field<'a>(v: &'a Value, field: &str) -> &'a str {
    v[field]
        .as_str()
        .unwrap_or_else(|| panic!("field {field} missing or not a string in {v}"))
}

/// Bytes of a `"0x…"` string.
pub fn bytes(hex_str: &str) -> Vec<u8> {
    hex::decode(hex_str.trim_start_matches("0x"))
        .unwrap_or_else(|e| panic!("bad hex {hex_str}: {e}"))
}

/// A 32-byte field.
pub fn b256(v: &Value, field: &str) -> B256 {
    B256::from_slice(&bytes(str_field(v, field)))
}

/// A 20-byte address field.
pub fn address(v: &Value, field: &str) -> Address {
    Address::from_slice(&bytes(str_field(v, field)))
}

/// A 32-byte big-endian integer field.
pub fn u256(v: &Value, field: &str) -> U256 {
    U256::from_be_slice(&bytes(str_field(v, field)))
}

/// A decimal-string integer field (nonce, balance).
pub fn decimal(v: &Value, field: &str) -> U256 {
    U256::from_str_radix(str_field(v, field), 10).unwrap_or_else(|e| panic!("bad decimal: {e}"))
}

/// The deterministic vector generator: `key_i = sha256("ubt-vector" || u64_be(i))`.
pub fn generated_key(i: u64) -> B256 {
    let mut preimage = b"ubt-vector".to_vec();
    preimage.extend_from_slice(&i.to_be_bytes());
    B256::from(ubt_spec::hash::sha256(&preimage))
}

/// `value_i = sha256(key_i)`.
pub fn generated_value(i: u64) -> B256 {
    B256::from(ubt_spec::hash::sha256(generated_key(i).as_slice()))
}

/// The array field `field` of `v`.
pub fn array<'a>(v: &'a Value, field: &str) -> &'a Vec<Value> {
    v[field]
        .as_array()
        .unwrap_or_else(|| panic!("field {field} missing or not an array"))
}

/// This crate's directory: cargo's run-time value first (a build cache
/// shared between clones may hold a binary compiled in another clone),
/// the compile-time one otherwise.
fn manifest_dir() -> std::path::PathBuf {
    std::env::var_os("CARGO_MANIFEST_DIR")
        .map_or_else(|| env!("CARGO_MANIFEST_DIR").into(), Into::into)
}
