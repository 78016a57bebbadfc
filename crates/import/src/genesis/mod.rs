//! geth genesis files: the whole genesis object (only `alloc` is read;
//! the other fields are skipped unvalidated) or a bare alloc map, parsed
//! as a stream on a thread of its own while the importing thread derives
//! tree keys of the batches it hands over (in parallel) and sorts them.
//!
//! An entry's origin is its account's position in the alloc (0-based);
//! the positions' addresses are logged ([`addresses`]) so that a
//! duplicate found by the sort names its account.

pub(crate) mod addresses;
mod visit;

use std::io::{BufReader, Read};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::mpsc::sync_channel;

use serde::de::DeserializeSeed;

use crate::collect::{consume, Collector, Origins};
use crate::entries::RawBatch;
use crate::error::{ImportError, Location, Problem};
use crate::sort::buffer::Duplicate;
use crate::sort::tmp::TempSpace;
use crate::sort::SortError;
use addresses::AddressLog;
use visit::{Ctx, DocumentSeed, Failure};

/// Batches in flight between the parser and the importing thread.
const BATCHES_IN_FLIGHT: usize = 8;
/// Bytes of the parser's read buffer.
const READ_BUFFER_BYTES: usize = 1 << 20;

/// Counts the bytes read through it.
struct CountingReader<'c, R> {
    inner: R,
    count: &'c AtomicU64,
}

impl<R: Read> Read for CountingReader<'_, R> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        let n = self.inner.read(buf)?;
        self.count.fetch_add(n as u64, Ordering::Relaxed);
        Ok(n)
    }
}

/// Names the accounts of a genesis alloc.
pub(crate) struct GenesisOrigins {
    addresses: AddressLog,
    bare: bool,
}

impl Origins for GenesisOrigins {
    fn duplicate(&mut self, duplicate: &Duplicate) -> ImportError {
        let prefix = if self.bare { "" } else { "alloc." };
        let Some(address) = self.addresses.get(duplicate.second_origin) else {
            return ImportError::input(
                Location::path(format!(
                    "{prefix}(accounts {} and {})",
                    duplicate.first_origin + 1,
                    duplicate.second_origin + 1
                )),
                Problem::DuplicateAccount { address: None },
            );
        };
        if duplicate.first_origin == duplicate.second_origin {
            ImportError::input(
                Location::path(format!("{prefix}{address:#x}.storage")),
                Problem::DuplicateStorageKey {
                    tree_key: duplicate.key.into(),
                },
            )
        } else {
            ImportError::input(
                Location::path(format!("{prefix}{address:#x}")),
                Problem::DuplicateAccount {
                    address: Some(address),
                },
            )
        }
    }
}

/// Why the parser stopped early.
enum ParseStop {
    Failed(ImportError),
    Cancelled,
}

/// Reads the genesis document from `input` into `collector`. Returns what
/// names the origins (also when reading failed: a duplicate found while
/// spilling needs it).
pub(crate) fn read<R: Read + Send>(
    input: R,
    collector: &mut Collector<'_, '_>,
    temp: &TempSpace,
) -> (Result<(), SortError>, GenesisOrigins) {
    let bytes_read = AtomicU64::new(0);
    let (sender, receiver) = sync_channel::<RawBatch>(BATCHES_IN_FLIGHT);
    let counter = &bytes_read;
    std::thread::scope(|scope| {
        // The sender moves into the parser: its end closes the channel.
        let parser = scope.spawn(move || {
            let mut sink = |batch: RawBatch| sender.send(batch).is_ok();
            let reader = CountingReader {
                inner: input,
                count: counter,
            };
            parse(reader, &mut sink, temp)
        });
        let consumed = consume(receiver, collector, &bytes_read);
        let parsed = parser.join();
        collector.read_to(bytes_read.load(Ordering::Relaxed));
        let Ok((parsed, origins)) = parsed else {
            let origins = GenesisOrigins {
                addresses: AddressLog::new(),
                bare: false,
            };
            return (
                Err(SortError::Failed(ImportError::Internal(
                    "the genesis parser thread panicked".into(),
                ))),
                origins,
            );
        };
        let result = match (consumed, parsed) {
            (Err(error), _) => Err(error),
            (Ok(()), Ok(())) => Ok(()),
            (Ok(()), Err(ParseStop::Failed(error))) => Err(SortError::Failed(error)),
            (Ok(()), Err(ParseStop::Cancelled)) => Err(SortError::Failed(ImportError::Internal(
                "the genesis parser stopped without a reason".into(),
            ))),
        };
        (result, origins)
    })
}

/// Parses the document, handing batches to `sink`.
fn parse<R: Read>(
    input: R,
    sink: &mut dyn FnMut(RawBatch) -> bool,
    temp: &TempSpace,
) -> (Result<(), ParseStop>, GenesisOrigins) {
    let mut ctx = Ctx::new(sink, temp);
    let mut deserializer =
        serde_json::Deserializer::from_reader(BufReader::with_capacity(READ_BUFFER_BYTES, input));
    let result = DocumentSeed(&mut ctx)
        .deserialize(&mut deserializer)
        .and_then(|()| deserializer.end());
    let result = result.map_err(|error| match ctx.failure.take() {
        Some(Failure::Problem(problem)) => {
            ParseStop::Failed(ImportError::input(Location::path(ctx.path_text()), problem))
        }
        Some(Failure::Import(error)) => ParseStop::Failed(error),
        Some(Failure::Cancelled) => ParseStop::Cancelled,
        None if error.is_io() => ParseStop::Failed(ImportError::Read(error.into())),
        None => ParseStop::Failed(ImportError::input(
            Location::path(ctx.path_text()),
            Problem::Json(error.to_string()),
        )),
    });
    let origins = GenesisOrigins {
        addresses: std::mem::replace(&mut ctx.addresses, AddressLog::new()),
        bare: ctx.bare,
    };
    (result, origins)
}

/// Parses a whole document held in memory (fuzzing and tests): its
/// batches, not yet derived.
#[cfg(any(test, feature = "fuzzing"))]
pub(crate) fn parse_all(bytes: &[u8], temp: &TempSpace) -> Result<Vec<RawBatch>, ImportError> {
    let mut batches = Vec::new();
    let mut sink = |batch: RawBatch| {
        batches.push(batch);
        true
    };
    let (result, _) = parse(bytes, &mut sink, temp);
    result.map_err(|stop| match stop {
        ParseStop::Failed(error) => error,
        ParseStop::Cancelled => ImportError::Internal("cancelled".into()),
    })?;
    Ok(batches)
}
