//! Fuzz target bodies (feature `fuzzing`). Not part of the API: the
//! cargo-fuzz targets in `fuzz/` call them, and `tests/fuzz_bodies.rs` runs
//! them over seed inputs and mutations on every `cargo test`.
//!
//! A body never panics by itself; it returns `Err` describing a broken
//! property. A panic inside a decoder is a finding too.

use alloy_primitives::{keccak256, Address, B256, KECCAK256_EMPTY};

use crate::dump::line::parse_line;
use crate::entries::{derive, Entry, FlatRecord};
use crate::error::ImportError;
use crate::genesis::parse_all;
use crate::sort::record::Record;
use crate::sort::run::{decode_all, encode_all};
use crate::sort::tmp::TempSpace;

/// What a body reports when a property fails.
pub type Finding = String;

/// Spill-run decoding (runs of tree entries): accepted bytes re-encode to
/// the same bytes; anything else is a typed error (by the decoder's
/// signature).
pub fn spill_run(data: &[u8]) -> Result<(), Finding> {
    reencodes::<Entry>(data)
}

/// [`spill_run`] for runs of flat records (the flat index's sort).
pub fn flat_spill_run(data: &[u8]) -> Result<(), Finding> {
    reencodes::<FlatRecord>(data)
}

fn reencodes<T: Record>(data: &[u8]) -> Result<(), Finding> {
    match decode_all::<T>(data) {
        Ok(entries) => match encode_all(&entries) {
            Ok(bytes) if bytes == data => Ok(()),
            Ok(_) => Err("accepted run does not re-encode to its bytes".into()),
            Err(e) => Err(format!("accepted run does not re-encode: {e}")),
        },
        Err(_) => Ok(()),
    }
}

/// Genesis documents: accepted ones derive entries; rejected ones are
/// input errors.
pub fn genesis_document(data: &[u8]) -> Result<(), Finding> {
    let temp = TempSpace::new(std::env::temp_dir());
    match parse_all(data, &temp) {
        Ok(batches) => {
            for batch in &batches {
                let _ = derive(batch, true);
            }
            Ok(())
        }
        Err(ImportError::Input(_)) => Ok(()),
        Err(other) => Err(format!("unexpected error kind: {other}")),
    }
}

/// Dump lines: accepted or an input error naming the line.
pub fn dump_line(data: &[u8]) -> Result<(), Finding> {
    let mut code = Vec::new();
    let mut slots: Vec<([u8; 32], [u8; 32])> = Vec::new();
    let mut deserializer = serde_json::Deserializer::from_slice(data);
    match parse_line(&mut deserializer, 7, false, &mut code, &mut slots) {
        Ok(_) => Ok(()),
        Err(ImportError::Input(input)) if input.location.line == Some(7) => Ok(()),
        Err(other) => Err(format!("unexpected error: {other:?}")),
    }
}

/// The root of an empty Merkle-Patricia trie.
const EMPTY_TRIE_ROOT: &str = "0x56e81f171bcc55a6ff8345e692c0f86e5b48e01b996cadc001622fb5e363b421";

/// Seed inputs of each body.
pub struct Seeds {
    /// Spill runs of tree entries.
    pub spill_runs: Vec<Vec<u8>>,
    /// Spill runs of flat records.
    pub flat_spill_runs: Vec<Vec<u8>>,
    /// Genesis documents.
    pub genesis_documents: Vec<Vec<u8>>,
    /// Dump lines.
    pub dump_lines: Vec<Vec<u8>>,
}

/// The seed inputs.
pub fn seeds() -> Seeds {
    let entries: Vec<Entry> = (0..1500u64)
        .map(|i| {
            let mut key = [0u8; 32];
            key[..8].copy_from_slice(&i.to_be_bytes());
            let mut value = [0u8; 32];
            value[31 - (i % 32) as usize] = (i % 255) as u8 + 1;
            Entry {
                key,
                value,
                origin: i * i,
            }
        })
        .collect();
    let spill_runs = [&entries[..0], &entries[..3], &entries[..]]
        .iter()
        .filter_map(|e| encode_all(e).ok())
        .collect();
    // Several accounts, each with keys in order, values of every length.
    let flat: Vec<FlatRecord> = entries
        .iter()
        .map(|entry| FlatRecord {
            owner: [(entry.origin % 7) as u8; 20],
            key: entry.key,
            value: entry.value,
        })
        .collect();
    let mut flat = flat;
    flat.sort_by(Record::order);
    let flat_spill_runs = [&flat[..0], &flat[..3], &flat[..]]
        .iter()
        .filter_map(|r| encode_all(r).ok())
        .collect();
    let genesis_documents = [
        r#"{"config":{"chainId":1},"alloc":{"0x00000000000000000000000000000000000000aa":{"balance":"0x10","nonce":"3","code":"0x6001600101","storage":{"0x01":"0x02","0x":"0x00"}}}}"#,
        r#"{"00000000000000000000000000000000000000bb":{"balance":12345},"0x00000000000000000000000000000000000000cc":{"Balance":"0","storage":null}}"#,
        r#"{"alloc":{}}"#,
        "{}",
    ]
    .iter()
    .map(|s| s.as_bytes().to_vec())
    .collect();
    let address_a = Address::repeat_byte(0xaa);
    let address_b = Address::repeat_byte(0xbb);
    let code = [0x60u8, 0x01, 0x60, 0x02];
    let dump_lines = [
        format!("{{\"root\":\"{}\"}}", B256::repeat_byte(0x11)),
        format!(
            "{{\"balance\":\"5\",\"nonce\":2,\"root\":\"{EMPTY_TRIE_ROOT}\",\"codeHash\":\"{KECCAK256_EMPTY}\",\"address\":\"{address_a:#x}\",\"key\":\"{}\"}}",
            keccak256(address_a)
        ),
        format!(
            "{{\"balance\":\"1\",\"nonce\":0,\"root\":\"{}\",\"codeHash\":\"{}\",\"code\":\"0x{}\",\"storage\":{{\"0x{}\":\"2a\",\"0x{}\":\"0100\"}},\"address\":\"{address_b:#x}\"}}",
            B256::repeat_byte(0x22),
            keccak256(code),
            alloy_primitives::hex::encode(code),
            "00".repeat(31) + "01",
            "ff".repeat(32),
        ),
    ]
    .into_iter()
    .map(String::into_bytes)
    .collect();
    Seeds {
        spill_runs,
        flat_spill_runs,
        genesis_documents,
        dump_lines,
    }
}

/// Whether the spill run of tree entries in `data` decodes (seed checks).
pub fn decodes(data: &[u8]) -> bool {
    decode_all::<Entry>(data).is_ok()
}

/// Whether the spill run of flat records in `data` decodes (seed checks).
pub fn flat_decodes(data: &[u8]) -> bool {
    decode_all::<FlatRecord>(data).is_ok()
}

/// Whether the dump line in `data` is accepted (seed checks).
pub fn dump_line_accepted(data: &[u8]) -> bool {
    let mut code = Vec::new();
    let mut slots: Vec<([u8; 32], [u8; 32])> = Vec::new();
    let mut deserializer = serde_json::Deserializer::from_slice(data);
    parse_line(&mut deserializer, 1, false, &mut code, &mut slots).is_ok()
}

/// Whether the genesis document in `data` is accepted (seed checks).
pub fn genesis_accepted(data: &[u8]) -> bool {
    parse_all(data, &TempSpace::new(std::env::temp_dir())).is_ok()
}
