//! Fuzz target bodies for the tool's input parsers. Not part of the API:
//! the cargo-fuzz targets in `fuzz/` call them, and `tests/fuzz_bodies.rs`
//! runs them over seed inputs and mutations on every `cargo test`.
//!
//! A body never panics by itself; it returns `Err` describing a broken
//! property. A panic inside a parser is a finding too.

use std::io::Cursor;

use alloy_primitives::B256;

use crate::binary::{self, MAGIC};
use crate::error::CliError;
use crate::hex_arg::{fixed_hex, number_hex};
use crate::input::read_entries;

/// What a body reports when a property fails.
pub type Finding = String;

fn line_of(key: &B256, value: &B256) -> String {
    format!("{{\"key\":\"{key}\",\"value\":\"{value}\"}}\n")
}

/// An `eth_getProof`-shaped account proof as `ubt verify-proof --account`
/// reads it: an accepted document serializes to JSON that reads back as
/// the same proof, and verifying it (against its own claimed root) returns
/// a verdict rather than panicking. Seeds: real proofs (the test builds
/// them from a database).
pub fn account_proof_json(data: &[u8]) -> Result<(), Finding> {
    let Ok(proof) = serde_json::from_slice::<ubt_engine::AccountProof>(data) else {
        return Ok(());
    };
    let text = serde_json::to_string(&proof)
        .map_err(|e| format!("an accepted account proof does not serialize: {e}"))?;
    let again: ubt_engine::AccountProof = serde_json::from_str(&text)
        .map_err(|e| format!("an accepted account proof re-reads as an error: {e}"))?;
    if again != proof {
        return Err("an accepted account proof re-reads differently".into());
    }
    let _verdict = proof.verified(&proof.state_root);
    Ok(())
}

/// JSON-lines input: every accepted line holds a key and a value that
/// print back as canonical lines parsing to the same entries; a rejected
/// input is an `Input` or `Read` error naming a line that exists.
pub fn json_lines(data: &[u8]) -> Result<(), Finding> {
    match read_entries(Cursor::new(data), "fuzz") {
        Ok(entries) => {
            let canonical: String = entries.iter().map(|(k, v)| line_of(k, v)).collect();
            match read_entries(Cursor::new(canonical.as_bytes()), "canonical") {
                Ok(again) if again == entries => Ok(()),
                _ => Err("accepted entries do not survive printing as canonical lines".into()),
            }
        }
        Err(CliError::Input { line, .. }) => {
            let lines = data.split(|b| *b == b'\n').count() as u64;
            if line == 0 || line > lines {
                return Err(format!("error names line {line} of {lines}"));
            }
            Ok(())
        }
        Err(CliError::Read { .. }) => Ok(()),
        Err(other) => Err(format!("unexpected error kind: {other}")),
    }
}

/// Binary input (after its magic): accepted input is whole 64-byte
/// records that write back to the same bytes.
pub fn binary_records(data: &[u8]) -> Result<(), Finding> {
    let body = data.strip_prefix(MAGIC.as_slice()).unwrap_or(data);
    match binary::read_records(Cursor::new(body), "fuzz") {
        Ok(entries) => {
            let mut out = Vec::new();
            binary::write(&mut out, &entries).map_err(|e| e.to_string())?;
            if out[MAGIC.len()..] != *body {
                return Err("accepted records do not write back to the same bytes".into());
            }
            Ok(())
        }
        Err(CliError::Format { .. }) => {
            if body.len() % binary::RECORD_BYTES == 0 {
                return Err("whole records rejected".into());
            }
            Ok(())
        }
        Err(other) => Err(format!("unexpected error kind: {other}")),
    }
}

/// Hex arguments: whatever `fixed_hex` or `number_hex` accepts is `0x`
/// followed by hex digits only, and means the bytes it returns.
pub fn hex_args(data: &[u8]) -> Result<(), Finding> {
    let Ok(text) = std::str::from_utf8(data) else {
        return Ok(());
    };
    let is_hex = |digits: &str| digits.bytes().all(|b| b.is_ascii_hexdigit());
    if let Ok(bytes) = fixed_hex::<32>(text, "fuzz") {
        let digits = text.strip_prefix("0x").unwrap_or_default();
        let printed: String = bytes.iter().map(|b| format!("{b:02x}")).collect();
        if !is_hex(digits) || printed != digits.to_ascii_lowercase() {
            return Err(format!("fixed_hex accepted {text:?}"));
        }
    }
    if let Ok(bytes) = number_hex(text, "fuzz") {
        let digits = text.strip_prefix("0x").unwrap_or_default();
        let printed: String = bytes.iter().map(|b| format!("{b:02x}")).collect();
        let padded = format!("{:0>64}", digits.to_ascii_lowercase());
        if !is_hex(digits) || printed != padded {
            return Err(format!("number_hex accepted {text:?}"));
        }
    }
    Ok(())
}

/// Seed inputs, one list per target.
#[derive(Clone, Debug, Default)]
pub struct Seeds {
    /// [`json_lines`]: valid lines, with blank lines, spacing and a leading
    /// byte-order mark.
    pub json_lines: Vec<Vec<u8>>,
    /// [`binary_records`]: whole records after the magic, and none.
    pub binary_records: Vec<Vec<u8>>,
    /// [`hex_args`]: keys and numbers.
    pub hex_args: Vec<Vec<u8>>,
}

/// Every seed input.
pub fn seeds() -> Seeds {
    let entries: Vec<(B256, B256)> = (0u8..6)
        .map(|i| (B256::repeat_byte(i), B256::repeat_byte(0xf0 ^ i)))
        .collect();
    let mut lines: Vec<Vec<u8>> = entries
        .iter()
        .map(|(k, v)| line_of(k, v).into_bytes())
        .collect();
    let all: String = entries.iter().map(|(k, v)| line_of(k, v)).collect();
    lines.push(all.into_bytes());
    lines.push(
        format!(
            "\n  {{ \"value\": \"{}\", \"key\": \"{}\" }}\r\n\n",
            entries[1].1, entries[1].0
        )
        .into_bytes(),
    );
    // A byte-order mark at the start is skipped.
    lines.push(format!("\u{feff}{}", line_of(&entries[2].0, &entries[2].1)).into_bytes());
    let mut records = Vec::new();
    let mut all_records = Vec::new();
    binary::write(&mut all_records, &entries).unwrap_or_default();
    records.push(all_records);
    records.push(MAGIC.to_vec());
    let hex = vec![
        format!("{}", entries[2].0).into_bytes(),
        b"0x1".to_vec(),
        b"0xDEADbeef".to_vec(),
        format!("0x{}", "f".repeat(64)).into_bytes(),
    ];
    Seeds {
        json_lines: lines,
        binary_records: records,
        hex_args: hex,
    }
}

/// Seeds of [`account_proof_json`]: the account proofs of a small database
/// built in a temporary directory (a present account with code, a set, a
/// deleted and a never-written slot; an absent account), as pretty and as
/// compact JSON, each checked to read back and verify.
pub fn seed_account_proofs() -> Result<Vec<Vec<u8>>, Finding> {
    use alloy_primitives::{keccak256, Address, U256};
    use ubt_engine::{Account, AccountBatch, AccountProof, Db, Options};
    let dir = std::env::temp_dir().join(format!("ubt-fuzz-seeds-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    let mut db = Db::open(&dir, Options::default()).map_err(|e| e.to_string())?;
    let present = Address::repeat_byte(0x11);
    let code = vec![0x60, 0x00, 0x56];
    let mut batch = AccountBatch::new();
    batch
        .set_account(
            present,
            Account {
                nonce: 3,
                balance: U256::from(1234u64),
                code_size: 3,
                code_hash: keccak256(&code),
            },
        )
        .set_code(present, code)
        .set_storage(present, U256::from(1u8), B256::repeat_byte(0x22))
        .delete_storage(present, U256::from(2u8));
    db.apply_accounts(&batch).map_err(|e| e.to_string())?;
    let slots = [U256::from(1u8), U256::from(2u8), U256::from(3u8)];
    let mut seeds = Vec::new();
    for address in [present, Address::repeat_byte(0x99)] {
        let proof = db
            .account_proof(&address, &slots)
            .map_err(|e| e.to_string())?;
        proof
            .verify(&db.root())
            .map_err(|e| format!("a seed does not verify: {e}"))?;
        for json in [
            serde_json::to_vec_pretty(&proof),
            serde_json::to_vec(&proof),
        ] {
            let json = json.map_err(|e| e.to_string())?;
            let back: AccountProof = serde_json::from_slice(&json).map_err(|e| e.to_string())?;
            if back != proof {
                return Err("a seed reads back differently".into());
            }
            seeds.push(json);
        }
    }
    drop(db);
    let _ = std::fs::remove_dir_all(&dir);
    Ok(seeds)
}
