//! The binary key/value format `ubt load` reads and `ubt export-bin` writes.
//!
//! ```text
//! off      len  field
//! 0        8    magic "UBTKV001"
//! 8+64i    32   key i
//! 40+64i   32   value i
//! ```
//!
//! No header beyond the magic and no trailer: a file of n records is exactly
//! 8 + 64n bytes. Records are in any order; a later record for a key
//! overwrites an earlier one, as in JSON-lines input.

use std::io::{self, Read, Write};

use alloy_primitives::B256;

use crate::error::CliError;

/// The 8 bytes every binary key/value file starts with.
pub const MAGIC: &[u8; 8] = b"UBTKV001";
/// Bytes of one record: a 32-byte key, then a 32-byte value.
pub const RECORD_BYTES: usize = 64;

/// Checks that `total` bytes can hold the magic and whole records.
pub fn check_length(total: u64, source_name: &str) -> Result<(), CliError> {
    if total >= MAGIC.len() as u64
        && (total - MAGIC.len() as u64).is_multiple_of(RECORD_BYTES as u64)
    {
        return Ok(());
    }
    Err(CliError::Format {
        source_name: source_name.to_string(),
        problem: format!(
            "binary input is {total} bytes, but must be 8 + 64*n bytes \
             (magic UBTKV001, then 64-byte key/value records)"
        ),
    })
}

/// Reads the records of `reader`, whose magic has already been read and
/// checked; `source_name` names it in errors.
pub fn read_records(
    mut reader: impl Read,
    source_name: &str,
) -> Result<Vec<(B256, B256)>, CliError> {
    let mut entries = Vec::new();
    let mut total = MAGIC.len() as u64;
    let mut record = [0u8; RECORD_BYTES];
    loop {
        let got = read_full(&mut reader, &mut record).map_err(|e| read_error(source_name, &e))?;
        total += got as u64;
        if got < RECORD_BYTES {
            check_length(total, source_name)?;
            return Ok(entries);
        }
        entries.push((
            B256::from_slice(&record[..32]),
            B256::from_slice(&record[32..]),
        ));
    }
}

/// Writes `entries` in the binary format.
pub fn write(mut writer: impl Write, entries: &[(B256, B256)]) -> io::Result<()> {
    writer.write_all(MAGIC)?;
    for (key, value) in entries {
        writer.write_all(key.as_slice())?;
        writer.write_all(value.as_slice())?;
    }
    writer.flush()
}

/// Reads until `buf` is full or the input ends; returns the bytes read.
pub fn read_full(reader: &mut impl Read, buf: &mut [u8]) -> io::Result<usize> {
    let mut filled = 0;
    while filled < buf.len() {
        match reader.read(&mut buf[filled..]) {
            Ok(0) => break,
            Ok(n) => filled += n,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    Ok(filled)
}

/// A read failure of `source_name`.
pub fn read_error(source_name: &str, error: &io::Error) -> CliError {
    CliError::Read {
        source_name: source_name.to_string(),
        reason: error.to_string(),
    }
}
