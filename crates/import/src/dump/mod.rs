//! `geth dump --iterative` output (JSON lines, [`line`]) into tree entries.
//!
//! A thread cuts the input into lines ([`lines`]); the importing thread
//! parses each batch of lines in parallel on rayon's threads (every task
//! parses its lines and derives their tree keys) and sorts the entries.
//! A line longer than the long-line limit is parsed as a stream on the
//! importing thread, its slots spooled ([`spool`]) until its address is
//! known, then derived in parallel. An entry's origin is its line number.

pub(crate) mod line;
pub(crate) mod lines;
pub(crate) mod spool;

use std::io::{BufReader, Read};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::mpsc::sync_channel;
use std::sync::Mutex;

use alloy_primitives::{Address, B256};
use rayon::prelude::*;

use crate::collect::{Collector, Origins};
use crate::entries::{derive, Derived, RawBatch, SlotItem};
use crate::error::{ImportError, Location, Problem};
use crate::options::ImportOptions;
use crate::report::Counts;
use crate::sort::buffer::Duplicate;
use crate::sort::tmp::TempSpace;
use crate::sort::SortError;
use line::{parse_line, Decision};
use lines::{split, ChunkReader, LineBatch, Piece};
use spool::Spool;

/// Batches of lines in flight between the splitter and the parsers.
const PIECES_IN_FLIGHT: usize = 2;
/// Slots derived per parallel task of a long line.
const LONG_LINE_TASK_SLOTS: usize = 4096;

/// Names the lines of a dump.
pub(crate) struct DumpOrigins;

impl Origins for DumpOrigins {
    fn duplicate(&mut self, duplicate: &Duplicate) -> ImportError {
        if duplicate.first_origin == duplicate.second_origin {
            ImportError::input(
                Location::line(duplicate.first_origin, "storage"),
                Problem::DuplicateStorageKey {
                    tree_key: duplicate.key.into(),
                },
            )
        } else {
            ImportError::input(
                Location {
                    line: Some(duplicate.first_origin),
                    other_line: Some(duplicate.second_origin),
                    path: String::new(),
                },
                Problem::DuplicateAccount { address: None },
            )
        }
    }
}

/// What a group of lines gave.
struct GroupOutput {
    derived: Derived,
    root: Option<B256>,
}

/// Reads the dump from `input` into `collector`; returns the root of its
/// first line, if it has one.
pub(crate) fn read<R: Read + Send>(
    input: R,
    collector: &mut Collector<'_, '_>,
    temp: &TempSpace,
    options: &ImportOptions,
) -> Result<Option<B256>, SortError> {
    let bytes_read = AtomicU64::new(0);
    let read_failure = Mutex::new(None);
    let (sender, receiver) = sync_channel::<Piece>(PIECES_IN_FLIGHT);
    let (batch_bytes, long_line_bytes) = (options.line_batch_bytes(), options.long_line_bytes());
    let (counter, failure) = (&bytes_read, &read_failure);
    let result = std::thread::scope(|scope| {
        let splitter = scope.spawn(move || {
            split(
                input,
                sender,
                batch_bytes,
                long_line_bytes,
                counter,
                failure,
            )
        });
        let mut source_root = None;
        let mut consumed = Ok(());
        for piece in receiver {
            let outcome = match piece {
                Piece::Lines(batch) => read_batch(&batch, collector, options),
                Piece::LongLine {
                    number,
                    prefix,
                    rest,
                } => read_long_line(
                    number,
                    ChunkReader::new(prefix, rest),
                    collector,
                    temp,
                    options,
                ),
            };
            collector.read_to(bytes_read.load(Ordering::Relaxed));
            match outcome {
                Ok(Some(root)) => source_root = Some(root),
                Ok(None) => {}
                Err(error) => {
                    consumed = Err(error);
                    break;
                }
            }
        }
        // Leaving the loop dropped the receiver: the splitter stops.
        let joined = splitter.join();
        collector.read_to(bytes_read.load(Ordering::Relaxed));
        if joined.is_err() {
            return Err(SortError::Failed(ImportError::Internal(
                "the line splitter thread panicked".into(),
            )));
        }
        consumed.map(|()| source_root)
    });
    // A read failure explains whatever went wrong after it.
    if let Some(error) = read_failure
        .lock()
        .unwrap_or_else(|p| p.into_inner())
        .take()
    {
        return Err(SortError::Failed(ImportError::Read(error)));
    }
    result
}

/// Parses a batch of lines in parallel and collects their entries.
fn read_batch(
    batch: &LineBatch,
    collector: &mut Collector<'_, '_>,
    options: &ImportOptions,
) -> Result<Option<B256>, SortError> {
    let tasks = rayon::current_num_threads().max(1) * 4;
    let lines_per_task = batch.lines.len().div_ceil(tasks).max(1);
    let skip = options.skip_missing_preimages;
    let flat = collector.wants_flat();
    let outputs: Vec<Result<GroupOutput, ImportError>> = batch
        .lines
        .par_chunks(lines_per_task)
        .map(|group| {
            let mut raw = RawBatch::default();
            let mut counts = Counts::default();
            let mut code = Vec::new();
            let mut slots = Vec::new();
            let mut root = None;
            for span in group {
                let bytes = batch.bytes.get(span.start..span.end).unwrap_or(&[]);
                if bytes.iter().all(u8::is_ascii_whitespace) {
                    continue;
                }
                slots.clear();
                let mut deserializer = serde_json::Deserializer::from_slice(bytes);
                let decision =
                    parse_line(&mut deserializer, span.number, skip, &mut code, &mut slots)?;
                match decision {
                    Decision::Root(r) => root = Some(r),
                    Decision::Skipped => counts.skipped_accounts += 1,
                    Decision::Account {
                        address,
                        nonce,
                        balance,
                        code_hash,
                    } => {
                        raw.push_account(
                            address,
                            span.number,
                            nonce,
                            balance,
                            Some(code_hash),
                            &code,
                        );
                        raw.slots.extend(slots.iter().map(|(slot, value)| SlotItem {
                            address,
                            origin: span.number,
                            slot: *slot,
                            value: *value,
                        }));
                    }
                }
            }
            let mut derived = derive(&raw, flat);
            derived.counts.add(&counts);
            Ok(GroupOutput { derived, root })
        })
        .collect();
    let mut root = None;
    for output in outputs {
        let output = output?;
        collector.add(&output.derived)?;
        root = root.or(output.root);
    }
    Ok(root)
}

/// Parses one long line as a stream and collects its entries.
fn read_long_line(
    number: u64,
    reader: ChunkReader,
    collector: &mut Collector<'_, '_>,
    temp: &TempSpace,
    options: &ImportOptions,
) -> Result<Option<B256>, SortError> {
    let mut spool = Spool::new(temp, options.long_line_bytes() / 64, number);
    let mut code = Vec::new();
    let mut deserializer =
        serde_json::Deserializer::from_reader(BufReader::with_capacity(64 << 10, reader));
    let decision = parse_line(
        &mut deserializer,
        number,
        options.skip_missing_preimages,
        &mut code,
        &mut spool,
    )?;
    let (address, nonce, balance, code_hash) = match decision {
        Decision::Root(root) => return Ok(Some(root)),
        Decision::Skipped => {
            collector.count(&Counts {
                skipped_accounts: 1,
                ..Counts::default()
            });
            return Ok(None);
        }
        Decision::Account {
            address,
            nonce,
            balance,
            code_hash,
        } => (address, nonce, balance, code_hash),
    };
    let mut raw = RawBatch::default();
    raw.push_account(address, number, nonce, balance, Some(code_hash), &code);
    let derived = derive(&raw, collector.wants_flat());
    collector.add(&derived)?;
    spool.drain(|slots| derive_slots(address, number, slots, collector))?;
    Ok(None)
}

/// Derives the entries of one account's `slots` in parallel and collects
/// them.
fn derive_slots(
    address: Address,
    origin: u64,
    slots: &[([u8; 32], [u8; 32])],
    collector: &mut Collector<'_, '_>,
) -> Result<(), SortError> {
    let flat = collector.wants_flat();
    let derived: Vec<Derived> = slots
        .par_chunks(LONG_LINE_TASK_SLOTS)
        .map(|chunk| {
            let raw = RawBatch {
                slots: chunk
                    .iter()
                    .map(|(slot, value)| SlotItem {
                        address,
                        origin,
                        slot: *slot,
                        value: *value,
                    })
                    .collect(),
                ..RawBatch::default()
            };
            derive(&raw, flat)
        })
        .collect();
    for derived in &derived {
        collector.add(derived)?;
    }
    Ok(())
}
