//! Reading JSON-lines key/value input, streamed line by line.

use std::io::BufRead;

use alloy_primitives::B256;
use serde::Deserialize;

use crate::error::CliError;
use crate::hex_arg::fixed_hex;

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Entry {
    key: String,
    value: String,
}

/// Reads every entry of `reader`; `source_name` names it in errors.
pub fn read_entries(
    reader: impl BufRead,
    source_name: &str,
) -> Result<Vec<(B256, B256)>, CliError> {
    let mut entries = Vec::new();
    for (index, line) in reader.lines().enumerate() {
        let line_number = index as u64 + 1;
        let bad = |problem: String| CliError::Input {
            source_name: source_name.to_string(),
            line: line_number,
            problem,
        };
        let line = line.map_err(|e| CliError::Read {
            source_name: source_name.to_string(),
            reason: e.to_string(),
        })?;
        if line.trim().is_empty() {
            continue;
        }
        let entry: Entry = serde_json::from_str(&line).map_err(|e| bad(describe(&e)))?;
        let key = fixed_hex::<32>(&entry.key, "\"key\"").map_err(bad)?;
        let value = fixed_hex::<32>(&entry.value, "\"value\"").map_err(&bad)?;
        entries.push((B256::from(key), B256::from(value)));
    }
    Ok(entries)
}

/// serde_json's message without its trailing position (we give the line).
fn describe(err: &serde_json::Error) -> String {
    let text = err.to_string();
    let text = text.split(" at line ").next().unwrap_or(&text).to_string();
    if err.is_syntax() || err.is_eof() {
        format!("not a JSON object: {text}")
    } else {
        text.replace('`', "\"")
    }
}
