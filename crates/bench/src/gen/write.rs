//! Writing workload files line by line: lowercase `0x` hex, the
//! `state.jsonl` records and the `blocks.jsonl` lines of
//! docs/workload-format.md, through one reused line buffer.

use std::fs::File;
use std::io::{BufWriter, Write};
use std::path::{Path, PathBuf};

use super::sink::StateSink;
use crate::BenchError;

const HEX_DIGITS: &[u8; 16] = b"0123456789abcdef";

/// Appends `0x` and the lowercase hex of `bytes`.
pub(crate) fn push_hex(buf: &mut Vec<u8>, bytes: &[u8]) {
    buf.reserve(2 + 2 * bytes.len());
    buf.extend_from_slice(b"0x");
    for byte in bytes {
        buf.push(HEX_DIGITS[usize::from(byte >> 4)]);
        buf.push(HEX_DIGITS[usize::from(byte & 0x0f)]);
    }
}

/// `0x` and the lowercase hex of `bytes`, as a string.
pub(crate) fn hex_string(bytes: &[u8]) -> String {
    let mut buf = Vec::new();
    push_hex(&mut buf, bytes);
    // Hex digits are ASCII, so nothing is replaced.
    String::from_utf8_lossy(&buf).into_owned()
}

/// Appends the decimal digits of `value`.
fn push_decimal(buf: &mut Vec<u8>, value: u128) {
    let mut digits = [0u8; 39];
    let mut at = digits.len();
    let mut rest = value;
    loop {
        at -= 1;
        digits[at] = b'0' + (rest % 10) as u8;
        rest /= 10;
        if rest == 0 {
            break;
        }
    }
    buf.extend_from_slice(&digits[at..]);
}

/// A file written one line at a time, counting its lines and bytes.
pub(crate) struct LineWriter {
    out: BufWriter<File>,
    path: PathBuf,
    line: Vec<u8>,
    lines: u64,
    bytes: u64,
}

impl LineWriter {
    /// Creates (or truncates) `path`.
    pub fn create(path: &Path) -> Result<Self, BenchError> {
        let file = File::create(path).map_err(|e| BenchError::io_at("create", path, e))?;
        Ok(LineWriter {
            out: BufWriter::with_capacity(1 << 20, file),
            path: path.to_owned(),
            line: Vec::with_capacity(4096),
            lines: 0,
            bytes: 0,
        })
    }

    /// Writes the line in the buffer (a newline is added) and clears it.
    fn emit(&mut self) -> Result<(), BenchError> {
        self.line.push(b'\n');
        self.out
            .write_all(&self.line)
            .map_err(|e| BenchError::io_at("write", &self.path, e))?;
        self.lines += 1;
        self.bytes += self.line.len() as u64;
        self.line.clear();
        Ok(())
    }

    /// `{"raw":"0x<64>","value":"0x<64>"}`.
    pub fn raw(&mut self, key: &[u8; 32], value: &[u8; 32]) -> Result<(), BenchError> {
        let line = &mut self.line;
        line.extend_from_slice(b"{\"raw\":\"");
        push_hex(line, key);
        line.extend_from_slice(b"\",\"value\":\"");
        push_hex(line, value);
        line.extend_from_slice(b"\"}");
        self.emit()
    }

    /// `{"block":N,"gas_used":G,"txs":T,"reads":[..],"writes":[..]}`; the
    /// record strings are hex and punctuation, written without escaping.
    pub fn block(
        &mut self,
        number: u64,
        gas_used: u64,
        txs: u64,
        reads: &[String],
        writes: &[String],
    ) -> Result<(), BenchError> {
        let line = &mut self.line;
        line.extend_from_slice(b"{\"block\":");
        push_decimal(line, u128::from(number));
        line.extend_from_slice(b",\"gas_used\":");
        push_decimal(line, u128::from(gas_used));
        line.extend_from_slice(b",\"txs\":");
        push_decimal(line, u128::from(txs));
        for (name, records) in [("reads", reads), ("writes", writes)] {
            line.extend_from_slice(b",\"");
            line.extend_from_slice(name.as_bytes());
            line.extend_from_slice(b"\":[");
            for (i, record) in records.iter().enumerate() {
                debug_assert!(!record.contains(['"', '\\']), "record needs no escaping");
                if i > 0 {
                    line.push(b',');
                }
                line.push(b'"');
                line.extend_from_slice(record.as_bytes());
                line.push(b'"');
            }
            line.push(b']');
        }
        line.push(b'}');
        self.emit()
    }

    /// Flushes the file; returns its lines and bytes.
    pub fn finish(mut self) -> Result<(u64, u64), BenchError> {
        self.out
            .flush()
            .map_err(|e| BenchError::io_at("write", &self.path, e))?;
        Ok((self.lines, self.bytes))
    }
}

/// The `state.jsonl` records of docs/workload-format.md.
impl StateSink for LineWriter {
    /// `{"account":"0x<40>","nonce":N,"balance":"<decimal>","code":"0x<hex>"}`.
    fn account(
        &mut self,
        address: &[u8; 20],
        nonce: u64,
        balance: u128,
        code: &[u8],
    ) -> Result<(), BenchError> {
        let line = &mut self.line;
        line.extend_from_slice(b"{\"account\":\"");
        push_hex(line, address);
        line.extend_from_slice(b"\",\"nonce\":");
        push_decimal(line, u128::from(nonce));
        line.extend_from_slice(b",\"balance\":\"");
        push_decimal(line, balance);
        line.extend_from_slice(b"\",\"code\":\"");
        push_hex(line, code);
        line.extend_from_slice(b"\"}");
        self.emit()
    }

    /// `{"slot":"0x<40>","key":"0x<64>","value":"0x<64>"}`.
    fn slot(
        &mut self,
        address: &[u8; 20],
        key: &[u8; 32],
        value: &[u8; 32],
    ) -> Result<(), BenchError> {
        let line = &mut self.line;
        line.extend_from_slice(b"{\"slot\":\"");
        push_hex(line, address);
        line.extend_from_slice(b"\",\"key\":\"");
        push_hex(line, key);
        line.extend_from_slice(b"\",\"value\":\"");
        push_hex(line, value);
        line.extend_from_slice(b"\"}");
        self.emit()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn numbers_and_hex_are_formatted_as_the_format_says() {
        let mut buf = Vec::new();
        push_decimal(&mut buf, 0);
        buf.push(b' ');
        push_decimal(&mut buf, u128::MAX);
        buf.push(b' ');
        push_hex(&mut buf, &[0x00, 0xab, 0x1f]);
        assert_eq!(
            String::from_utf8(buf).unwrap(),
            format!("0 {} 0x00ab1f", u128::MAX)
        );
        assert_eq!(hex_string(&[]), "0x");
    }

    #[test]
    fn block_lines_are_the_bytes_serde_json_writes() {
        // `ubt bench run` once wrote `blocks.jsonl` with serde_json; the
        // one writer left must give the same bytes.
        let line = crate::studies::runner::blocks::BlockLine {
            block: 7,
            gas_used: 16_777_216,
            txs: 3,
            reads: vec![
                format!("a:{}", hex_string(&[0xab; 20])),
                "s:0x01:0x02".into(),
            ],
            writes: vec![],
        };
        let dir = std::env::temp_dir().join(format!("ubt-block-line-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("blocks.jsonl");
        let mut out = LineWriter::create(&path).unwrap();
        out.block(
            line.block,
            line.gas_used,
            line.txs,
            &line.reads,
            &line.writes,
        )
        .unwrap();
        assert_eq!(out.finish().unwrap().0, 1);
        let written = std::fs::read_to_string(&path).unwrap();
        let _ = std::fs::remove_dir_all(&dir);
        assert_eq!(written, serde_json::to_string(&line).unwrap() + "\n");
    }
}
