//! Reading JSON-lines key/value input, streamed line by line.
//!
//! Each line is one JSON object `{"key":"0x<64 hex>","value":"0x<64 hex>"}`
//! (no other fields); blank lines are skipped; a later line for a key
//! overwrites an earlier one (the callers apply them in order). Lines end in
//! `\n` or `\r\n`; the last may have no end.
//!
//! What is rejected, always naming the line (`F:3: ...`), exit code 2:
//!
//! * a line longer than [`LINE_BYTES_MAX`] bytes: lines are read through a
//!   bounded buffer, so input without newlines (a binary file, `/dev/zero`)
//!   costs at most that much memory before it is reported;
//! * text that is not UTF-8, or holds control characters (JSON allows none
//!   outside escapes), with the offending byte and its position;
//! * a first line that does not look like text at all: "not JSON lines, and
//!   not ubt binary input (no UBTKV001 magic)", with its first bytes; or
//!   that starts with the magic of ubt's binary format where JSON lines are
//!   expected;
//! * anything but a JSON object on a line (an array `["0x..","0x.."]` is not
//!   an entry, though serde would read a struct from it).
//!
//! A UTF-8 byte-order mark (`EF BB BF`) at the very start of the input is
//! accepted and skipped: some editors write one, and it never changes what
//! the lines mean. Anywhere else it is an error like any other stray
//! character.

use std::io::{BufRead, Read};

use alloy_primitives::B256;
use serde::Deserialize;

use crate::binary::MAGIC;
use crate::error::CliError;
use crate::hex_arg::fixed_hex;

/// Longest line accepted, in bytes without its line end. A line of one
/// entry is under 200 bytes; the bound only stops input without newlines
/// from growing a line buffer without end.
pub const LINE_BYTES_MAX: usize = 64 * 1024;

/// The UTF-8 byte-order mark, skipped at the start of the input.
const BYTE_ORDER_MARK: &[u8] = b"\xef\xbb\xbf";

/// What one line must look like, for messages.
const ENTRY_SHAPE: &str = r#"{"key":"0x<64 hex>","value":"0x<64 hex>"}"#;

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
    for_each_entry(reader, source_name, |key, value| entries.push((key, value)))?;
    Ok(entries)
}

/// Calls `each` with every entry of `reader` in input order, holding one
/// line at a time (at most [`LINE_BYTES_MAX`] bytes); `source_name` names
/// the input in errors. Returns the number of entries.
pub fn for_each_entry(
    mut reader: impl BufRead,
    source_name: &str,
    mut each: impl FnMut(B256, B256),
) -> Result<u64, CliError> {
    let mut buffer = Vec::new();
    let mut count = 0u64;
    for line_number in 1u64.. {
        let bad = |problem: String| CliError::Input {
            source_name: source_name.to_string(),
            line: line_number,
            problem,
        };
        buffer.clear();
        // At most one byte over the bound: enough to tell that it is over.
        let got = (&mut reader)
            .take(LINE_BYTES_MAX as u64 + 1)
            .read_until(b'\n', &mut buffer)
            .map_err(|e| CliError::Read {
                source_name: source_name.to_string(),
                reason: e.to_string(),
            })?;
        if got == 0 {
            break;
        }
        let ended = buffer.last() == Some(&b'\n');
        let mut line: &[u8] = &buffer;
        if ended {
            line = &line[..line.len() - 1];
        }
        if line_number == 1 {
            line = line.strip_prefix(BYTE_ORDER_MARK).unwrap_or(line);
            if let Some(problem) = first_line_problem(line) {
                return Err(bad(problem));
            }
        }
        if !ended && got > LINE_BYTES_MAX {
            return Err(bad(format!("line is longer than {LINE_BYTES_MAX} bytes")));
        }
        if let Some(b'\r') = line.last() {
            line = &line[..line.len() - 1];
        }
        let text = text_of(line).map_err(&bad)?;
        if text.trim().is_empty() {
            continue;
        }
        // JSON's own whitespace only: a stray other space is named.
        let text = text.trim_matches(|c| matches!(c, ' ' | '\t' | '\r'));
        let (key, value) = parse_entry(text).map_err(&bad)?;
        each(key, value);
        count += 1;
    }
    Ok(count)
}

/// Why the first line (or the first [`LINE_BYTES_MAX`] bytes of it) is not
/// the start of JSON lines at all, if it is not: the binary format's magic,
/// or bytes that text does not hold (NUL and other control characters, or
/// invalid UTF-8 among the first eight bytes).
fn first_line_problem(line: &[u8]) -> Option<String> {
    if line.starts_with(MAGIC) {
        return Some(
            "this is ubt binary input (UBTKV001 magic), not JSON lines \
             (`ubt load` reads it without --format jsonl)"
                .into(),
        );
    }
    let head = &line[..line.len().min(MAGIC.len())];
    let head_not_utf8 = match std::str::from_utf8(head) {
        Ok(_) => false,
        // A character cut at the end of the eight bytes is fine.
        Err(e) => e.error_len().is_some(),
    };
    if !head_not_utf8 && !line.iter().any(|&b| is_binary_byte(b)) {
        return None;
    }
    let shown: Vec<String> = head.iter().map(|b| format!("{b:02x}")).collect();
    Some(format!(
        "not JSON lines, and not ubt binary input (no UBTKV001 magic): binary data starting with bytes {}",
        shown.join(" ")
    ))
}

/// A control byte that no text line holds (whitespace ones excepted).
fn is_binary_byte(byte: u8) -> bool {
    (byte < 0x20 && !matches!(byte, b'\t' | b'\r' | b'\n' | 0x0c)) || byte == 0x7f
}

/// The line as text: UTF-8 without control characters (other than tab).
fn text_of(line: &[u8]) -> Result<&str, String> {
    let text = std::str::from_utf8(line).map_err(|e| {
        let at = e.valid_up_to();
        format!(
            "not UTF-8 text: byte 0x{:02x} at byte {} of the line",
            line.get(at).copied().unwrap_or_default(),
            at + 1
        )
    })?;
    if let Some((at, c)) = text
        .char_indices()
        .find(|(_, c)| c.is_control() && *c != '\t')
    {
        return Err(format!(
            "control character {c:?} (U+{:04X}) at byte {} of the line, which JSON text cannot hold",
            u32::from(c),
            at + 1
        ));
    }
    Ok(text)
}

/// The key and value of one non-blank line.
fn parse_entry(text: &str) -> Result<(B256, B256), String> {
    if !text.starts_with('{') {
        return Err(format!(
            "expected a JSON object {ENTRY_SHAPE}, found {}",
            json_kind(text)
        ));
    }
    let entry: Entry = serde_json::from_str(text).map_err(|e| describe(&e))?;
    let key = fixed_hex::<32>(&entry.key, "\"key\"")?;
    let value = fixed_hex::<32>(&entry.value, "\"value\"")?;
    Ok((B256::from(key), B256::from(value)))
}

/// What a line that is not an object starts with.
fn json_kind(text: &str) -> String {
    let first = text.chars().next().unwrap_or(' ');
    match first {
        '[' => "an array".into(),
        '"' => "a string".into(),
        '-' | '0'..='9' => "a number".into(),
        _ if text.starts_with("true") || text.starts_with("false") => "a boolean".into(),
        _ if text.starts_with("null") => "null".into(),
        c => format!("{c:?}"),
    }
}

/// serde_json's message without its trailing position (we give the line).
fn describe(err: &serde_json::Error) -> String {
    let text = err.to_string();
    let position = format!(" at line {} column {}", err.line(), err.column());
    let text = text.strip_suffix(&position).unwrap_or(&text);
    if err.is_syntax() || err.is_eof() {
        format!("not a JSON object: {text}")
    } else {
        text.replace('`', "\"")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn first_error(input: &[u8]) -> String {
        match read_entries(input, "f") {
            Err(e) => e.to_string(),
            Ok(entries) => format!("accepted {} entries", entries.len()),
        }
    }

    #[test]
    fn long_lines_are_reported_with_their_number() {
        let long = vec![b'a'; LINE_BYTES_MAX + 1];
        assert_eq!(
            first_error(&long),
            format!("f:1: line is longer than {LINE_BYTES_MAX} bytes")
        );
        let mut input = b"\n\n".to_vec();
        input.extend_from_slice(&long);
        input.push(b'\n');
        assert!(first_error(&input).starts_with("f:3: line is longer"));
        // Exactly the bound is still read (and then judged as JSON).
        let at_bound = vec![b' '; LINE_BYTES_MAX];
        assert_eq!(first_error(&at_bound), "accepted 0 entries");
    }

    #[test]
    fn binary_and_encoding_problems_are_named() {
        assert!(first_error(&[0u8; 100]).contains("f:1: not JSON lines, and not ubt binary input"));
        assert!(first_error(b"UBTKV001\0\0").contains("UBTKV001 magic"));
        let err = first_error(b"\n{\"key\":\"0x\xff\"}\n");
        assert_eq!(err, "f:2: not UTF-8 text: byte 0xff at byte 11 of the line");
        assert!(first_error(b"{\"key\":\"0x\xe9\"}").starts_with("f:1: not UTF-8 text"));
        assert!(first_error(b"\n\x01").contains("f:2: control character '\\u{1}' (U+0001)"));
    }
}
