//! The external sort: tree keys are hashes, so the entries of an input
//! come in no useful order, and `Db::build` wants them sorted; the flat
//! index wants the same writes sorted by account. One sort serves both,
//! generic over the [`Record`] it orders.
//!
//! Entries fill a buffer of a fixed number of entries ([`buffer`]); a full
//! buffer is sorted in parallel, checked for duplicate keys and written as
//! a sorted run to the temporary directory ([`run`], [`tmp`]). At the end,
//! an input that never filled the buffer is sorted in memory and handed
//! out in chunks freed as the build consumes them (no file is written);
//! otherwise the last buffer is spilled too and freed, so the build does
//! not run beside a full sort buffer, and the runs are merged
//! ([`merge`]): while there are more runs than the fan-in, the oldest
//! `fan_in` are merged into one new run; the final merge streams straight
//! into the build. Every merge refuses duplicate keys, naming both
//! entries' origins.

pub(crate) mod buffer;
pub(crate) mod merge;
pub(crate) mod record;
pub(crate) mod run;
pub(crate) mod tmp;

use std::fs::File;
use std::io::{BufReader, BufWriter};
use std::path::PathBuf;
use std::sync::mpsc::{sync_channel, Receiver};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use buffer::{first_duplicate, into_chunks, Duplicate, SortBuffer};
use merge::{Merger, Source};
use record::Record;
use run::{RunReader, RunWriter};
use tmp::TempSpace;

use crate::error::ImportError;

/// Bytes of buffered I/O per open run.
const RUN_IO_BYTES: usize = 128 << 10;
/// Bytes of buffered I/O of the run being written.
const WRITE_IO_BYTES: usize = 1 << 20;
/// Entries per chunk of an in-memory result (freed one by one).
const MEMORY_CHUNK_ENTRIES: usize = 1 << 18;
/// Entries per batch of the final merge's thread.
const MERGE_BATCH_ENTRIES: usize = 1 << 14;
/// Batches of the final merge in flight.
const MERGE_BATCHES_IN_FLIGHT: usize = 4;

/// Why sorting stopped.
#[derive(Debug)]
pub(crate) enum SortError {
    /// Two entries with the same key.
    Duplicate(Duplicate),
    /// An I/O failure or a damaged run.
    Failed(ImportError),
}

impl From<ImportError> for SortError {
    fn from(error: ImportError) -> Self {
        SortError::Failed(error)
    }
}

/// What the sort did.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct SortStats {
    /// Runs spilled from the buffer.
    pub spill_runs: u64,
    /// Intermediate merges.
    pub merge_passes: u64,
    /// Time sorting buffers.
    pub sort_time: Duration,
    /// Time writing spilled runs.
    pub spill_time: Duration,
    /// Time of intermediate merges.
    pub merge_time: Duration,
}

/// A spilled run on disk.
#[derive(Debug)]
struct Run {
    path: PathBuf,
    entries: u64,
}

/// Sorts any number of records in bounded memory.
pub(crate) struct ExternalSorter<'t, T> {
    buffer: SortBuffer<T>,
    temp: &'t TempSpace,
    runs: Vec<Run>,
    fan_in: usize,
    pushed: u64,
    stats: SortStats,
}

impl<'t, T: Record> ExternalSorter<'t, T> {
    /// A sorter holding `buffer_entries` records in memory, merging
    /// `fan_in` runs at once (at least 2), spilling into `temp`.
    pub fn new(buffer_entries: usize, fan_in: usize, temp: &'t TempSpace) -> ExternalSorter<'t, T> {
        ExternalSorter {
            buffer: SortBuffer::new(buffer_entries),
            temp,
            runs: Vec::new(),
            fan_in: fan_in.max(2),
            pushed: 0,
            stats: SortStats::default(),
        }
    }

    /// Entries pushed so far.
    pub fn pushed(&self) -> u64 {
        self.pushed
    }

    /// What the sort did so far.
    pub fn stats(&self) -> SortStats {
        self.stats
    }

    /// Adds `entries`, spilling whenever the buffer fills.
    pub fn push(&mut self, mut entries: &[T]) -> Result<(), SortError> {
        self.pushed += entries.len() as u64;
        while !entries.is_empty() {
            // Spill only when more is coming: an input that exactly fills
            // the buffer stays in memory.
            if self.buffer.is_full() {
                self.spill()?;
            }
            let taken = self.buffer.fill_from(entries);
            entries = &entries[taken..];
        }
        Ok(())
    }

    /// Sorts the buffer and writes it as a run.
    fn spill(&mut self) -> Result<(), SortError> {
        let started = Instant::now();
        let sorted = self.buffer.sorted();
        self.stats.sort_time += started.elapsed();
        if let Some(duplicate) = first_duplicate(sorted) {
            return Err(SortError::Duplicate(duplicate));
        }
        let started = Instant::now();
        let (path, file) = self.temp.create("run")?;
        write_run(
            &path,
            file,
            sorted.len() as u64,
            sorted.iter().copied().map(Ok),
        )?;
        self.runs.push(Run {
            path,
            entries: sorted.len() as u64,
        });
        self.buffer.clear();
        self.stats.spill_runs += 1;
        self.stats.spill_time += started.elapsed();
        Ok(())
    }

    /// Sets the sorter aside while other work runs: once runs were
    /// spilled, the buffer is spilled too and its memory freed; a sort
    /// that fits in memory keeps its buffer.
    pub fn set_aside(&mut self) -> Result<(), SortError> {
        if self.runs.is_empty() {
            return Ok(());
        }
        if !self.buffer.is_empty() {
            self.spill()?;
        }
        self.buffer = SortBuffer::new(1);
        Ok(())
    }

    /// Ends the input: everything sorted, ready to stream. `merged` hears
    /// of intermediate merge progress (records).
    pub fn finish(mut self, merged: &mut dyn FnMut(u64)) -> Result<Sorted<'t, T>, SortError> {
        if self.runs.is_empty() {
            let started = Instant::now();
            let entries = std::mem::replace(&mut self.buffer, SortBuffer::new(1)).into_sorted();
            self.stats.sort_time += started.elapsed();
            if let Some(duplicate) = first_duplicate(&entries) {
                return Err(SortError::Duplicate(duplicate));
            }
            let total = entries.len() as u64;
            let mut chunks = into_chunks(entries, MEMORY_CHUNK_ENTRIES);
            chunks.reverse();
            return Ok(Sorted {
                source: SortedSource::Memory {
                    chunks,
                    current: Vec::new().into_iter(),
                },
                total,
                stats: self.stats,
            });
        }
        if !self.buffer.is_empty() {
            self.spill()?;
        }
        // Freed before the merge and the build.
        self.buffer = SortBuffer::new(1);
        let started = Instant::now();
        while self.runs.len() > self.fan_in {
            let group: Vec<Run> = self.runs.drain(..self.fan_in).collect();
            let run = merge_runs::<T>(self.temp, group, merged)?;
            self.runs.push(run);
            self.stats.merge_passes += 1;
        }
        self.stats.merge_time += started.elapsed();
        let runs = std::mem::take(&mut self.runs);
        let total = runs.iter().map(|r| r.entries).sum();
        let merger = Merger::new(open_runs(&runs)?)?;
        let (batches, worker) = spawn_merge(merger)?;
        Ok(Sorted {
            source: SortedSource::Runs {
                batches: Some(batches),
                current: Vec::new().into_iter(),
                worker: Some(worker),
                paths: runs.into_iter().map(|r| r.path).collect(),
                temp: self.temp,
            },
            total,
            stats: self.stats,
        })
    }
}

/// Writes `entries` (sorted, `count` of them) as a run into `file`.
fn write_run<T: Record>(
    path: &PathBuf,
    file: File,
    count: u64,
    entries: impl Iterator<Item = Result<T, SortError>>,
) -> Result<(), SortError> {
    let failed = |e| SortError::Failed(ImportError::io(path, "writing a spill run")(e));
    let mut writer = RunWriter::<_, T>::new(BufWriter::with_capacity(WRITE_IO_BYTES, file), count)
        .map_err(failed)?;
    for entry in entries {
        writer.push(&entry?).map_err(failed)?;
    }
    writer.finish().map_err(failed)?;
    Ok(())
}

/// Readers of `runs`.
fn open_runs<T: Record>(runs: &[Run]) -> Result<Vec<Source<BufReader<File>, T>>, SortError> {
    runs.iter()
        .map(|run| {
            let file =
                File::open(&run.path).map_err(ImportError::io(&run.path, "opening a spill run"))?;
            let reader =
                RunReader::open(BufReader::with_capacity(RUN_IO_BYTES, file)).map_err(|error| {
                    ImportError::Run {
                        path: run.path.clone(),
                        error,
                    }
                })?;
            if reader.entries() != run.entries {
                return Err(SortError::Failed(ImportError::Run {
                    path: run.path.clone(),
                    error: run::RunError::WrongCount {
                        expected: run.entries,
                        found: reader.entries(),
                    },
                }));
            }
            Ok(Source {
                path: run.path.clone(),
                reader,
            })
        })
        .collect()
}

/// Merges `group` into one new run and removes the group's files.
fn merge_runs<T: Record>(
    temp: &TempSpace,
    group: Vec<Run>,
    merged: &mut dyn FnMut(u64),
) -> Result<Run, SortError> {
    let count = group.iter().map(|r| r.entries).sum();
    let mut merger = Merger::<_, T>::new(open_runs(&group)?)?;
    let (path, file) = temp.create("run")?;
    let mut done = 0u64;
    let entries = std::iter::from_fn(|| match merger.next_entry() {
        Ok(Some(entry)) => {
            done += 1;
            if done.is_multiple_of(1 << 16) {
                merged(1 << 16);
            }
            Some(Ok(entry))
        }
        Ok(None) => None,
        Err(error) => Some(Err(error)),
    });
    write_run(&path, file, count, entries)?;
    merged(done % (1 << 16));
    for run in group {
        temp.remove(&run.path);
    }
    Ok(Run {
        path,
        entries: count,
    })
}

/// Where the sorted records come from.
enum SortedSource<'t, T> {
    /// Everything fit in memory: chunks in reverse order (the next one
    /// last), and the chunk being read.
    Memory {
        chunks: Vec<Vec<T>>,
        current: std::vec::IntoIter<T>,
    },
    /// The final merge of the remaining runs, on a thread of its own
    /// (overlapping the build's work), handing over batches.
    Runs {
        batches: Option<Receiver<MergeMessage<T>>>,
        current: std::vec::IntoIter<T>,
        worker: Option<JoinHandle<()>>,
        paths: Vec<PathBuf>,
        temp: &'t TempSpace,
    },
}

/// What the merge thread sends.
enum MergeMessage<T> {
    /// The next records, in order.
    Batch(Vec<T>),
    /// The merge failed after the entries sent so far.
    Failed(SortError),
    /// Every entry was sent.
    Done,
}

/// Runs `merger` on a thread, sending batches to the returned receiver.
#[allow(clippy::type_complexity)] // a channel and its thread
fn spawn_merge<T: Record>(
    mut merger: Merger<BufReader<File>, T>,
) -> Result<(Receiver<MergeMessage<T>>, JoinHandle<()>), SortError> {
    let (sender, receiver) = sync_channel(MERGE_BATCHES_IN_FLIGHT);
    let worker = std::thread::Builder::new()
        .name("ubt-import-merge".into())
        .spawn(move || loop {
            let mut batch = Vec::with_capacity(MERGE_BATCH_ENTRIES);
            let mut failure = None;
            while batch.len() < MERGE_BATCH_ENTRIES {
                match merger.next_entry() {
                    Ok(Some(entry)) => batch.push(entry),
                    Ok(None) => break,
                    Err(error) => {
                        failure = Some(error);
                        break;
                    }
                }
            }
            let finished = batch.len() < MERGE_BATCH_ENTRIES;
            if !batch.is_empty() && sender.send(MergeMessage::Batch(batch)).is_err() {
                return;
            }
            if let Some(error) = failure {
                let _ = sender.send(MergeMessage::Failed(error));
                return;
            }
            if finished {
                let _ = sender.send(MergeMessage::Done);
                return;
            }
        })
        .map_err(|e| {
            SortError::Failed(ImportError::Internal(format!(
                "cannot start the merge thread: {e}"
            )))
        })?;
    Ok((receiver, worker))
}

/// The sorted records, ready to stream.
pub(crate) struct Sorted<'t, T> {
    source: SortedSource<'t, T>,
    total: u64,
    stats: SortStats,
}

impl<T: Record> Sorted<'_, T> {
    /// Entries to come in all.
    pub fn total(&self) -> u64 {
        self.total
    }

    /// What the sort did.
    pub fn stats(&self) -> SortStats {
        self.stats
    }

    /// Whether the entries come from spilled runs.
    #[cfg(test)]
    pub fn spilled(&self) -> bool {
        matches!(self.source, SortedSource::Runs { .. })
    }

    /// The next record in order.
    pub fn next_entry(&mut self) -> Result<Option<T>, SortError> {
        match &mut self.source {
            SortedSource::Memory { chunks, current } => loop {
                if let Some(entry) = current.next() {
                    return Ok(Some(entry));
                }
                match chunks.pop() {
                    // The finished chunk is freed here.
                    Some(next) => *current = next.into_iter(),
                    None => return Ok(None),
                }
            },
            SortedSource::Runs {
                batches, current, ..
            } => loop {
                if let Some(entry) = current.next() {
                    return Ok(Some(entry));
                }
                let Some(receiver) = batches.as_ref() else {
                    return Ok(None);
                };
                match receiver.recv() {
                    Ok(MergeMessage::Batch(batch)) => *current = batch.into_iter(),
                    Ok(MergeMessage::Done) => {
                        *batches = None;
                        return Ok(None);
                    }
                    Ok(MergeMessage::Failed(error)) => {
                        *batches = None;
                        return Err(error);
                    }
                    Err(_) => {
                        *batches = None;
                        return Err(SortError::Failed(ImportError::Internal(
                            "the merge thread stopped".into(),
                        )));
                    }
                }
            },
        }
    }
}

impl<T> Drop for Sorted<'_, T> {
    fn drop(&mut self) {
        if let SortedSource::Runs {
            batches,
            worker,
            paths,
            temp,
            ..
        } = &mut self.source
        {
            // Closing the channel stops the thread at its next batch.
            *batches = None;
            if let Some(worker) = worker.take() {
                let _ = worker.join();
            }
            for path in paths.iter() {
                temp.remove(path);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::entries::Entry;
    use proptest::prelude::*;

    fn temp_space(label: &str) -> (PathBuf, TempSpace) {
        let base = std::env::temp_dir().join(format!(
            "ubt-import-sort-{label}-{}-{}",
            std::process::id(),
            std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map(|d| d.as_nanos())
                .unwrap_or(0)
        ));
        let _ = std::fs::create_dir_all(&base);
        let temp = TempSpace::new(base.clone());
        (base, temp)
    }

    /// Sorts `entries` with a buffer of `buffer` entries and a fan-in of
    /// `fan_in`; returns the stream, whether it spilled, and the stats.
    fn sort_with(
        entries: &[Entry],
        buffer: usize,
        fan_in: usize,
        pieces: usize,
    ) -> (Result<Vec<Entry>, String>, bool, SortStats) {
        let (base, temp) = temp_space("prop");
        let mut sorter = ExternalSorter::new(buffer, fan_in, &temp);
        let mut result = Ok(());
        for piece in entries.chunks(pieces.max(1)) {
            if let Err(e) = sorter.push(piece) {
                result = Err(format!("{e:?}"));
                break;
            }
        }
        let out = result.and_then(|()| {
            let mut sorted = sorter.finish(&mut |_| {}).map_err(|e| format!("{e:?}"))?;
            let spilled = sorted.spilled();
            let stats = sorted.stats();
            let mut out = Vec::new();
            while let Some(entry) = sorted.next_entry().map_err(|e| format!("{e:?}"))? {
                out.push(entry);
            }
            Ok((out, spilled, stats))
        });
        let made = temp.made();
        drop(temp);
        if let Some(dir) = made {
            assert!(!dir.exists(), "temporary directory left behind");
        }
        let _ = std::fs::remove_dir_all(base);
        match out {
            Ok((out, spilled, stats)) => (Ok(out), spilled, stats),
            Err(e) => (Err(e), false, SortStats::default()),
        }
    }

    fn entries_strategy() -> impl Strategy<Value = Vec<Entry>> {
        prop::collection::vec((any::<[u8; 4]>(), any::<u8>(), any::<u64>()), 0..600).prop_map(
            |raw| {
                raw.into_iter()
                    .enumerate()
                    .map(|(i, (prefix, value, origin_bits))| {
                        let mut key = [0u8; 32];
                        key[..4].copy_from_slice(&prefix);
                        key[4..12].copy_from_slice(&(i as u64).to_be_bytes());
                        let mut v = [0u8; 32];
                        v[31] = value;
                        v[(value % 32) as usize] |= 1;
                        Entry {
                            key,
                            value: v,
                            origin: origin_bits >> (origin_bits % 64),
                        }
                    })
                    .collect()
            },
        )
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(48))]

        /// Any buffer size and fan-in gives the in-memory result: the
        /// entries in key order.
        #[test]
        fn spilling_gives_the_in_memory_order(
            entries in entries_strategy(),
            buffer in 1usize..40,
            fan_in in 2usize..5,
            pieces in 1usize..50,
        ) {
            let (memory, spilled, _) = sort_with(&entries, usize::MAX / 128, 2, pieces);
            prop_assert!(!spilled);
            let (external, _, stats) = sort_with(&entries, buffer, fan_in, pieces);
            let mut expected = entries.clone();
            expected.sort_by_key(|e| e.key);
            prop_assert_eq!(memory.as_ref(), Ok(&expected));
            prop_assert_eq!(external.as_ref(), Ok(&expected));
            prop_assert_eq!(stats.spill_runs, entries.len().div_ceil(buffer) as u64 * u64::from(entries.len() > buffer));
        }

        /// A repeated key is found wherever its copies land.
        #[test]
        fn duplicates_are_found_across_runs(
            entries in entries_strategy().prop_filter("two or more", |e| e.len() >= 2),
            pick in any::<(usize, usize)>(),
            buffer in 1usize..40,
        ) {
            let mut entries = entries;
            let (a, b) = (pick.0 % entries.len(), pick.1 % entries.len());
            prop_assume!(a != b);
            entries[b].key = entries[a].key;
            for (buffer, fan_in) in [(usize::MAX / 128, 2), (buffer, 2)] {
                let (result, _, _) = sort_with(&entries, buffer, fan_in, 7);
                let error = result.err().unwrap_or_default();
                prop_assert!(error.starts_with("Duplicate"), "{}", error);
            }
        }
    }

    #[test]
    fn many_runs_take_several_merge_passes() {
        let entries: Vec<Entry> = (0..5000u64)
            .map(|i| Entry {
                key: *alloy_primitives::keccak256(i.to_be_bytes()),
                value: [7; 32],
                origin: i,
            })
            .collect();
        let (out, spilled, stats) = sort_with(&entries, 50, 3, 333);
        assert!(spilled);
        assert_eq!(stats.spill_runs, 100);
        assert!(stats.merge_passes >= 40, "{stats:?}");
        let mut expected = entries;
        expected.sort_by_key(|e| e.key);
        assert_eq!(out, Ok(expected));
    }
}
