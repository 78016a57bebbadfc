//! I/O-error points of spill runs (of both kinds of record): every write
//! and every read of a run fails in turn (and, separately, is interrupted
//! or cut short). A failed
//! write is an error, never a run that reads back as something else; a
//! failed read is an error after a correct prefix, never a wrong entry;
//! interrupted and short operations change nothing.

use std::io::{self, Read, Write};

use super::{decode_all, encode_all, RunError, RunReader, RunWriter, BLOCK_ENTRIES};
use crate::entries::{Entry, FlatRecord};
use crate::sort::record::Record;

/// What the wrapped operation `at` (0-based) does.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Fault {
    /// Fails with an error.
    Fail,
    /// Is interrupted once (`ErrorKind::Interrupted`), then goes on.
    Interrupt,
    /// Never: every operation moves at most `short` bytes.
    None,
}

/// A writer into memory whose operation `at` suffers `fault`; every write
/// takes at most `short` bytes.
struct FaultyWriter {
    out: Vec<u8>,
    calls: usize,
    at: usize,
    fault: Fault,
    short: usize,
}

impl FaultyWriter {
    fn new(at: usize, fault: Fault, short: usize) -> FaultyWriter {
        FaultyWriter {
            out: Vec::new(),
            calls: 0,
            at,
            fault,
            short,
        }
    }

    /// Whether this call suffers the fault (counting it).
    fn hit(&mut self) -> Option<io::Error> {
        let call = self.calls;
        self.calls += 1;
        if call != self.at {
            return None;
        }
        match self.fault {
            Fault::Fail => Some(io::Error::other("injected write failure")),
            Fault::Interrupt => Some(io::ErrorKind::Interrupted.into()),
            Fault::None => None,
        }
    }
}

impl Write for FaultyWriter {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        if let Some(error) = self.hit() {
            return Err(error);
        }
        let n = buf.len().min(self.short);
        self.out.extend_from_slice(&buf[..n]);
        Ok(n)
    }

    fn flush(&mut self) -> io::Result<()> {
        match self.hit() {
            Some(error) => Err(error),
            None => Ok(()),
        }
    }
}

/// A reader of `bytes` whose operation `at` suffers `fault`; every read
/// returns at most `short` bytes.
struct FaultyReader<'a> {
    bytes: &'a [u8],
    calls: usize,
    at: usize,
    fault: Fault,
    short: usize,
}

impl Read for FaultyReader<'_> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let call = self.calls;
        self.calls += 1;
        if call == self.at {
            match self.fault {
                Fault::Fail => return Err(io::Error::other("injected read failure")),
                Fault::Interrupt => return Err(io::ErrorKind::Interrupted.into()),
                Fault::None => {}
            }
        }
        let n = buf.len().min(self.short).min(self.bytes.len());
        buf[..n].copy_from_slice(&self.bytes[..n]);
        self.bytes = &self.bytes[n..];
        Ok(n)
    }
}

/// Three and a half blocks of sorted entries.
fn entries() -> Vec<Entry> {
    (0..BLOCK_ENTRIES * 7 / 2)
        .map(|i| {
            let mut key = [0u8; 32];
            key[..8].copy_from_slice(&(i as u64 * 3).to_be_bytes());
            let mut value = [0u8; 32];
            value[31] = (i % 251) as u8;
            Entry {
                key,
                value,
                origin: i as u64,
            }
        })
        .collect()
}

/// The same, as flat records of a few accounts.
fn flat_records() -> Vec<FlatRecord> {
    let mut records: Vec<FlatRecord> = entries()
        .into_iter()
        .map(|entry| FlatRecord {
            owner: [(entry.origin % 5) as u8; 20],
            key: entry.key,
            value: entry.value,
        })
        .collect();
    records.sort_by(Record::order);
    records
}

fn write_run<T: Record>(entries: &[T], out: FaultyWriter) -> (io::Result<()>, Vec<u8>, usize) {
    let mut writer = match RunWriter::new(out, entries.len() as u64) {
        Ok(writer) => writer,
        // The writer is gone with its bytes: nothing was accepted.
        Err(error) => return (Err(error), Vec::new(), 0),
    };
    for entry in entries {
        if let Err(error) = writer.push(entry) {
            return (Err(error), writer.out.out.clone(), writer.out.calls);
        }
    }
    match writer.finish() {
        Ok(out) => (Ok(()), out.out, out.calls),
        Err(error) => (Err(error), Vec::new(), 0),
    }
}

/// Reads a whole run: the entries read before the outcome, and the outcome.
fn read_run<T: Record>(input: FaultyReader<'_>) -> (Vec<T>, Result<usize, RunError>) {
    let mut read = Vec::new();
    let mut reader = match RunReader::open(input) {
        Ok(reader) => reader,
        Err(error) => return (read, Err(error)),
    };
    loop {
        match reader.next_entry() {
            Ok(Some(entry)) => read.push(entry),
            Ok(None) => return (read, Ok(reader.input.calls)),
            Err(error) => return (read, Err(error)),
        }
    }
}

#[test]
fn every_write_of_a_run_fails_in_turn() {
    check_writes(&entries());
    check_writes(&flat_records());
}

fn check_writes<T: Record + PartialEq>(entries: &[T]) {
    let entries = entries.to_vec();
    let expected = encode_all(&entries).unwrap();
    // Short writes: the same bytes. Count the operations.
    let (outcome, bytes, calls) = write_run(&entries, FaultyWriter::new(0, Fault::None, 1000));
    outcome.unwrap();
    assert_eq!(bytes, expected);
    assert!(calls > 20, "{calls} operations");
    for at in 0..calls {
        let (outcome, partial, _) = write_run(&entries, FaultyWriter::new(at, Fault::Fail, 1000));
        assert!(
            outcome.is_err(),
            "write {at} failed but the run was accepted"
        );
        // What reached the output before the failure never reads back as
        // a run (the header promises every entry).
        assert!(
            decode_all::<T>(&partial).is_err(),
            "write {at}: partial run decodes"
        );
        let (outcome, bytes, _) =
            write_run(&entries, FaultyWriter::new(at, Fault::Interrupt, 1000));
        outcome.unwrap_or_else(|e| panic!("write {at} interrupted: {e}"));
        assert_eq!(bytes, expected, "write {at} interrupted");
    }
}

#[test]
fn every_read_of_a_run_fails_in_turn() {
    check_reads(&entries());
    check_reads(&flat_records());
}

fn check_reads<T: Record + PartialEq>(entries: &[T]) {
    let entries = entries.to_vec();
    let bytes = encode_all(&entries).unwrap();
    let reader = |at, fault| FaultyReader {
        bytes: &bytes,
        calls: 0,
        at,
        fault,
        short: 4093,
    };
    let (read, outcome) = read_run::<T>(reader(usize::MAX, Fault::None));
    let calls = outcome.unwrap();
    assert_eq!(read, entries);
    assert!(calls > 20, "{calls} reads");
    for at in 0..calls {
        let (read, outcome) = read_run::<T>(reader(at, Fault::Fail));
        assert!(
            matches!(outcome, Err(RunError::Io(_))),
            "read {at}: {outcome:?}"
        );
        assert_eq!(read[..], entries[..read.len()], "read {at}: a wrong entry");
        let (read, outcome) = read_run::<T>(reader(at, Fault::Interrupt));
        outcome.unwrap_or_else(|e| panic!("read {at} interrupted: {e}"));
        assert_eq!(read, entries, "read {at} interrupted");
    }
}
