//! The spill-run file format: records in sort order, written once and
//! read back once by the same import. Short-lived, but bytes on a disk, so
//! the decoder trusts nothing: every length is checked against its limit,
//! every block carries a CRC-32C, and it accepts only what the encoder
//! writes (accepted bytes re-encode to the same bytes; a fuzz body checks
//! it).
//!
//! ```text
//! header  magic (8 bytes) | record count u64 LE | CRC-32C of the 16 bytes before, u32 LE
//! blocks  payload length u32 LE | record count u32 LE | CRC-32C u32 LE | payload
//!         (the CRC covers the first 8 header bytes and the payload)
//! value   length n (u8, 0..=32) | the value's last n bytes (its leading
//!         zero bytes dropped: the first is not zero)
//! ```
//!
//! Two kinds of record ([`Record`]), each with its magic:
//!
//! ```text
//! "UBTSORT1"  tree entry   key (32 bytes) | value | origin (LEB128, canonical:
//!                          no redundant trailing 0x80/0x00 bytes)
//! "UBTSORTA"  flat record  account (20 bytes) | tree key (32 bytes) | value
//! ```
//!
//! Every block but the last holds exactly [`BLOCK_ENTRIES`] records; the
//! blocks hold exactly the header's record count and the file ends there.
//! Sort keys (the tree key; the account, then the tree key) never decrease
//! (equal keys are allowed: the merge decides whether they are duplicates).

use std::io::{self, Read, Write};

use super::record::Record;

/// Bytes of the file header.
pub const HEADER_BYTES: usize = 20;
/// Bytes of a block header.
pub const BLOCK_HEADER_BYTES: usize = 12;
/// Records in every block but the last.
pub const BLOCK_ENTRIES: usize = 1024;

/// What is wrong with a run's bytes.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum RunError {
    /// The file does not start with the magic of its kind of record.
    #[error("not a spill run of this kind (bad magic)")]
    BadMagic,
    /// The header's checksum does not match.
    #[error("header checksum mismatch")]
    HeaderChecksum,
    /// The file ends before its last entry.
    #[error("truncated after {entries_read} of {entries} entries")]
    Truncated {
        /// Entries decoded before the end.
        entries_read: u64,
        /// Entries the header promises.
        entries: u64,
    },
    /// A block's checksum does not match its bytes.
    #[error("block {block}: checksum mismatch")]
    BlockChecksum {
        /// 0-based block number.
        block: u64,
    },
    /// A block's header or payload breaks a rule of the format.
    #[error("block {block}: {problem}")]
    BadBlock {
        /// 0-based block number.
        block: u64,
        /// Which rule.
        problem: &'static str,
    },
    /// A key smaller than the one before it.
    #[error("entry {index}: key smaller than the previous one")]
    OutOfOrder {
        /// 0-based entry number.
        index: u64,
    },
    /// The header promises another number of entries than were written.
    #[error("holds {found} entries, not the {expected} written")]
    WrongCount {
        /// Entries written.
        expected: u64,
        /// Entries the header promises.
        found: u64,
    },
    /// Bytes after the last entry.
    #[error("bytes after the last entry")]
    TrailingBytes,
    /// Reading failed.
    #[error("read failed: {0}")]
    Io(String),
}

/// Writes a run of a known number of records, given in key order.
pub struct RunWriter<W: Write, T> {
    out: W,
    entries: u64,
    written: u64,
    payload: Vec<u8>,
    block_entries: u32,
    last: Option<T>,
}

impl<W: Write, T: Record> RunWriter<W, T> {
    /// Starts a run of `entries` records: writes the header.
    pub fn new(mut out: W, entries: u64) -> io::Result<RunWriter<W, T>> {
        let mut header = [0u8; HEADER_BYTES];
        header[..8].copy_from_slice(&T::MAGIC);
        header[8..16].copy_from_slice(&entries.to_le_bytes());
        let crc = crc32c::crc32c(&header[..16]);
        header[16..].copy_from_slice(&crc.to_le_bytes());
        out.write_all(&header)?;
        Ok(RunWriter {
            out,
            entries,
            written: 0,
            payload: Vec::with_capacity(BLOCK_ENTRIES * T::ENCODED_BYTES_MAX),
            block_entries: 0,
            last: None,
        })
    }

    /// Appends `entry`; its key must not be smaller than the previous one,
    /// and the run must not be full.
    pub fn push(&mut self, entry: &T) -> io::Result<()> {
        if self.written == self.entries {
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                "more entries than the run's header promises",
            ));
        }
        if self.last.is_some_and(|last| entry.key_order(&last).is_lt()) {
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                "spill run entries out of key order",
            ));
        }
        self.last = Some(*entry);
        entry.encode(&mut self.payload);
        self.block_entries += 1;
        self.written += 1;
        if self.block_entries as usize == BLOCK_ENTRIES {
            self.flush_block()?;
        }
        Ok(())
    }

    fn flush_block(&mut self) -> io::Result<()> {
        if self.block_entries == 0 {
            return Ok(());
        }
        let mut header = [0u8; BLOCK_HEADER_BYTES];
        // At most BLOCK_ENTRIES records of T::ENCODED_BYTES_MAX bytes each.
        #[allow(clippy::cast_possible_truncation)]
        let payload_len = self.payload.len() as u32;
        header[..4].copy_from_slice(&payload_len.to_le_bytes());
        header[4..8].copy_from_slice(&self.block_entries.to_le_bytes());
        let crc = crc32c::crc32c_append(crc32c::crc32c(&header[..8]), &self.payload);
        header[8..].copy_from_slice(&crc.to_le_bytes());
        self.out.write_all(&header)?;
        self.out.write_all(&self.payload)?;
        self.payload.clear();
        self.block_entries = 0;
        Ok(())
    }

    /// Writes the last block and returns the output (flushed). Fails if
    /// fewer entries were pushed than the header promises.
    pub fn finish(mut self) -> io::Result<W> {
        self.flush_block()?;
        if self.written != self.entries {
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                "fewer entries than the run's header promises",
            ));
        }
        // `write_all` retries interrupted writes; a flush is retried too.
        loop {
            match self.out.flush() {
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                other => break other?,
            }
        }
        Ok(self.out)
    }
}

/// Reads a run back, checking everything.
pub struct RunReader<R: Read, T> {
    input: R,
    /// Records the header promises.
    entries: u64,
    /// Records decoded so far (all blocks read).
    decoded: u64,
    blocks_read: u64,
    block: Vec<T>,
    position: usize,
    payload: Vec<u8>,
    last: Option<T>,
    finished: bool,
}

/// `read_exact`, with the end of the input as `Ok(false)` (when nothing
/// was read) or a truncation.
fn read_full(input: &mut impl Read, buf: &mut [u8]) -> Result<bool, io::Error> {
    let mut filled = 0;
    while filled < buf.len() {
        match input.read(&mut buf[filled..]) {
            Ok(0) => {
                return if filled == 0 {
                    Ok(false)
                } else {
                    Err(io::ErrorKind::UnexpectedEof.into())
                }
            }
            Ok(n) => filled += n,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    Ok(true)
}

impl<R: Read, T: Record> RunReader<R, T> {
    /// Reads and checks the header.
    pub fn open(mut input: R) -> Result<RunReader<R, T>, RunError> {
        let mut header = [0u8; HEADER_BYTES];
        match read_full(&mut input, &mut header) {
            Ok(true) => {}
            Ok(false) => return Err(RunError::BadMagic),
            Err(e) if e.kind() == io::ErrorKind::UnexpectedEof => {
                return Err(if header[..8] == T::MAGIC {
                    RunError::Truncated {
                        entries_read: 0,
                        entries: 0,
                    }
                } else {
                    RunError::BadMagic
                })
            }
            Err(e) => return Err(RunError::Io(e.to_string())),
        }
        if header[..8] != T::MAGIC {
            return Err(RunError::BadMagic);
        }
        let crc = u32::from_le_bytes([header[16], header[17], header[18], header[19]]);
        if crc32c::crc32c(&header[..16]) != crc {
            return Err(RunError::HeaderChecksum);
        }
        let mut count = [0u8; 8];
        count.copy_from_slice(&header[8..16]);
        Ok(RunReader {
            input,
            entries: u64::from_le_bytes(count),
            decoded: 0,
            blocks_read: 0,
            block: Vec::new(),
            position: 0,
            payload: Vec::new(),
            last: None,
            finished: false,
        })
    }

    /// Entries the header promises.
    pub fn entries(&self) -> u64 {
        self.entries
    }

    /// The next entry, `None` after the last (and the end of the file
    /// checked).
    pub fn next_entry(&mut self) -> Result<Option<T>, RunError> {
        if self.position == self.block.len() {
            if self.finished {
                return Ok(None);
            }
            if self.decoded == self.entries {
                self.finished = true;
                let mut byte = [0u8; 1];
                return match read_full(&mut self.input, &mut byte) {
                    Ok(false) => Ok(None),
                    Ok(true) => Err(RunError::TrailingBytes),
                    Err(e) => Err(RunError::Io(e.to_string())),
                };
            }
            self.read_block()?;
        }
        let entry = self.block[self.position];
        self.position += 1;
        Ok(Some(entry))
    }

    fn truncated(&self) -> RunError {
        RunError::Truncated {
            entries_read: self.decoded,
            entries: self.entries,
        }
    }

    fn read_block(&mut self) -> Result<(), RunError> {
        let block = self.blocks_read;
        let bad = |problem| RunError::BadBlock { block, problem };
        let mut header = [0u8; BLOCK_HEADER_BYTES];
        match read_full(&mut self.input, &mut header) {
            Ok(true) => {}
            Ok(false) => return Err(self.truncated()),
            Err(e) if e.kind() == io::ErrorKind::UnexpectedEof => return Err(self.truncated()),
            Err(e) => return Err(RunError::Io(e.to_string())),
        }
        let payload_len = u32::from_le_bytes([header[0], header[1], header[2], header[3]]) as usize;
        let count = u32::from_le_bytes([header[4], header[5], header[6], header[7]]) as u64;
        let crc = u32::from_le_bytes([header[8], header[9], header[10], header[11]]);
        let remaining = self.entries - self.decoded;
        if count == 0 || count > BLOCK_ENTRIES as u64 {
            return Err(bad("entry count outside 1..=1024"));
        }
        if count > remaining {
            return Err(bad("more entries than the run holds"));
        }
        if count != BLOCK_ENTRIES as u64 && count != remaining {
            return Err(bad("a block before the last is not full"));
        }
        let count = usize::try_from(count).map_err(|_| bad("entry count outside 1..=1024"))?;
        if payload_len < count * T::ENCODED_BYTES_MIN || payload_len > count * T::ENCODED_BYTES_MAX
        {
            return Err(bad("payload length does not fit the entry count"));
        }
        self.payload.resize(payload_len, 0);
        match read_full(&mut self.input, &mut self.payload) {
            Ok(true) => {}
            Ok(false) => return Err(self.truncated()),
            Err(e) if e.kind() == io::ErrorKind::UnexpectedEof => return Err(self.truncated()),
            Err(e) => return Err(RunError::Io(e.to_string())),
        }
        let computed = crc32c::crc32c_append(crc32c::crc32c(&header[..8]), &self.payload);
        if computed != crc {
            return Err(RunError::BlockChecksum { block });
        }
        self.block.clear();
        self.position = 0;
        let mut bytes = self.payload.as_slice();
        for _ in 0..count {
            let entry = T::decode(&mut bytes).ok_or_else(|| bad("malformed entry"))?;
            if self.last.is_some_and(|last| entry.key_order(&last).is_lt()) {
                return Err(RunError::OutOfOrder {
                    index: self.decoded + self.block.len() as u64,
                });
            }
            self.last = Some(entry);
            self.block.push(entry);
        }
        if !bytes.is_empty() {
            return Err(bad("bytes after the block's last entry"));
        }
        self.decoded += count as u64;
        self.blocks_read += 1;
        Ok(())
    }
}

/// Every entry of the run in `bytes` (fuzzing and tests).
#[cfg(any(test, feature = "fuzzing"))]
pub fn decode_all<T: Record>(bytes: &[u8]) -> Result<Vec<T>, RunError> {
    let mut reader = RunReader::open(bytes)?;
    let mut entries = Vec::new();
    while let Some(entry) = reader.next_entry()? {
        entries.push(entry);
    }
    Ok(entries)
}

/// The bytes of a run of `entries` (sorted by key; fuzzing and tests).
#[cfg(any(test, feature = "fuzzing"))]
pub fn encode_all<T: Record>(entries: &[T]) -> io::Result<Vec<u8>> {
    let mut writer = RunWriter::new(Vec::new(), entries.len() as u64)?;
    for entry in entries {
        writer.push(entry)?;
    }
    writer.finish()
}

#[cfg(test)]
#[allow(clippy::cast_possible_truncation)] // test data
mod io_errors;

#[cfg(test)]
#[allow(clippy::cast_possible_truncation)] // test data
mod tests {
    use super::*;
    use crate::entries::{Entry, FlatRecord};

    fn entry(key: u8, value_low: u64, origin: u64) -> Entry {
        let mut value = [0u8; 32];
        value[24..].copy_from_slice(&value_low.to_be_bytes());
        Entry {
            key: [key; 32],
            value,
            origin,
        }
    }

    #[test]
    fn round_trips_across_blocks() {
        let entries: Vec<Entry> = (0..2500u64)
            .map(|i| {
                entry(
                    (i / 10) as u8,
                    i * 7919,
                    i.wrapping_mul(0x9e37_79b9_7f4a_7c15),
                )
            })
            .collect();
        let bytes = encode_all(&entries).unwrap_or_default();
        assert_eq!(decode_all::<Entry>(&bytes), Ok(entries));
        assert_eq!(
            decode_all::<Entry>(&encode_all::<Entry>(&[]).unwrap_or_default()),
            Ok(vec![])
        );
    }

    #[test]
    fn flat_records_round_trip_and_runs_of_another_kind_are_refused() {
        let records: Vec<FlatRecord> = (0..2100u32)
            .map(|i| {
                let mut value = [0u8; 32];
                value[(i % 33).min(31) as usize..].fill(i as u8 | 1);
                FlatRecord {
                    owner: [(i / 300) as u8; 20],
                    key: *alloy_primitives::keccak256(i.to_be_bytes()),
                    value,
                }
            })
            .collect::<Vec<_>>();
        let mut records = records;
        records.sort_by(Record::order);
        let bytes = encode_all(&records).unwrap_or_default();
        assert_eq!(decode_all::<FlatRecord>(&bytes), Ok(records.clone()));
        assert_eq!(decode_all::<Entry>(&bytes), Err(RunError::BadMagic));
        let entries = encode_all::<Entry>(&[entry(1, 1, 1)]).unwrap_or_default();
        assert_eq!(decode_all::<FlatRecord>(&entries), Err(RunError::BadMagic));
        // Out of account order: refused by the writer and the reader.
        records.swap(0, 2000);
        let mut writer = RunWriter::new(Vec::new(), records.len() as u64).ok();
        let refused = writer
            .as_mut()
            .map(|w| records.iter().try_for_each(|r| w.push(r)).is_err());
        assert_eq!(refused, Some(true));
    }

    #[test]
    fn damage_is_a_typed_error() {
        let entries: Vec<Entry> = (0..100u64).map(|i| entry(i as u8, i, i)).collect();
        let bytes = encode_all(&entries).unwrap_or_default();
        for cut in 0..bytes.len() {
            assert!(decode_all::<Entry>(&bytes[..cut]).is_err(), "cut at {cut}");
        }
        for at in 0..bytes.len() {
            let mut damaged = bytes.clone();
            damaged[at] ^= 0x10;
            assert!(decode_all::<Entry>(&damaged).is_err(), "flip at {at}");
        }
        let mut longer = bytes.clone();
        longer.push(0);
        assert_eq!(decode_all::<Entry>(&longer), Err(RunError::TrailingBytes));
    }

    fn sorted_entries() -> impl proptest::strategy::Strategy<Value = Vec<Entry>> {
        use proptest::prelude::*;
        prop::collection::vec(
            (any::<[u8; 32]>(), any::<[u8; 32]>(), 0u32..33, any::<u64>()),
            0..2100,
        )
        .prop_map(|raw| {
            let mut entries: Vec<Entry> = raw
                .into_iter()
                .map(|(key, mut value, zeros, origin)| {
                    value[..zeros as usize].fill(0);
                    Entry {
                        key,
                        value,
                        origin: origin >> (origin % 64),
                    }
                })
                .collect();
            entries.sort_by_key(|e| e.key);
            entries
        })
    }

    proptest::proptest! {
        #![proptest_config(proptest::prelude::ProptestConfig::with_cases(64))]

        /// Any run decodes to what was written; any changed byte, any cut
        /// and any extra byte is a typed error.
        #[test]
        fn damaged_runs_are_refused(
            entries in sorted_entries(),
            at in proptest::prelude::any::<usize>(),
            flip in 1u8..=255,
            cut in proptest::prelude::any::<usize>(),
        ) {
            let bytes = encode_all(&entries).unwrap_or_default();
            proptest::prop_assert_eq!(decode_all::<Entry>(&bytes), Ok(entries));
            let mut damaged = bytes.clone();
            damaged[at % bytes.len()] ^= flip;
            proptest::prop_assert!(decode_all::<Entry>(&damaged).is_err());
            proptest::prop_assert!(decode_all::<Entry>(&bytes[..cut % bytes.len()]).is_err());
            let mut longer = bytes;
            longer.push(flip);
            proptest::prop_assert_eq!(decode_all::<Entry>(&longer), Err(RunError::TrailingBytes));
        }
    }

    #[test]
    fn writer_refuses_disorder_and_miscounts() {
        let mut writer = RunWriter::new(Vec::new(), 2).ok();
        let writer = writer.as_mut().map(|w| {
            (
                w.push(&entry(2, 1, 1)).is_ok(),
                w.push(&entry(1, 1, 1)).is_err(),
            )
        });
        assert_eq!(writer, Some((true, true)));
        let short = RunWriter::<_, Entry>::new(Vec::new(), 2).and_then(|w| w.finish());
        assert!(short.is_err());
    }
}
