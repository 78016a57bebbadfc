//! The k-way merge of sorted runs: a binary heap of each run's next record,
//! in the record's order (for tree entries: key, then origin), then run,
//! so that equal keys come out next to each other in input order and are
//! reported as duplicates.

use std::cmp::{Ordering, Reverse};
use std::collections::BinaryHeap;
use std::io::Read;
use std::path::PathBuf;

use super::record::Record;
use super::run::RunReader;
use super::SortError;
use crate::error::ImportError;

/// A run's next record.
#[derive(Debug)]
struct Head<T> {
    entry: T,
    source: usize,
}

impl<T: Record> Ord for Head<T> {
    fn cmp(&self, other: &Self) -> Ordering {
        self.entry
            .order(&other.entry)
            .then(self.source.cmp(&other.source))
    }
}

impl<T: Record> PartialEq for Head<T> {
    fn eq(&self, other: &Self) -> bool {
        self.cmp(other).is_eq()
    }
}

impl<T: Record> Eq for Head<T> {}

impl<T: Record> PartialOrd for Head<T> {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

/// One run being read: its path (for errors) and its reader.
pub(crate) struct Source<R: Read, T> {
    /// The run's file.
    pub path: PathBuf,
    /// Its reader.
    pub reader: RunReader<R, T>,
}

/// Merges sorted runs into one sorted stream, refusing duplicates.
pub(crate) struct Merger<R: Read, T> {
    sources: Vec<Source<R, T>>,
    heap: BinaryHeap<Reverse<Head<T>>>,
    last: Option<T>,
}

impl<R: Read, T: Record> Merger<R, T> {
    /// Starts merging `sources` (reads each one's first record).
    pub fn new(sources: Vec<Source<R, T>>) -> Result<Merger<R, T>, SortError> {
        let mut merger = Merger {
            heap: BinaryHeap::with_capacity(sources.len()),
            sources,
            last: None,
        };
        for source in 0..merger.sources.len() {
            merger.refill(source)?;
        }
        Ok(merger)
    }

    fn refill(&mut self, source: usize) -> Result<(), SortError> {
        let Some(run) = self.sources.get_mut(source) else {
            return Ok(());
        };
        match run.reader.next_entry() {
            Ok(Some(entry)) => {
                self.heap.push(Reverse(Head { entry, source }));
                Ok(())
            }
            Ok(None) => Ok(()),
            Err(error) => Err(SortError::Failed(ImportError::Run {
                path: run.path.clone(),
                error,
            })),
        }
    }

    /// The next record in order; a duplicate is an error.
    pub fn next_entry(&mut self) -> Result<Option<T>, SortError> {
        let Some(Reverse(head)) = self.heap.pop() else {
            return Ok(None);
        };
        self.refill(head.source)?;
        let entry = head.entry;
        if let Some(duplicate) = self.last.and_then(|last| last.duplicate(&entry)) {
            return Err(SortError::Duplicate(duplicate));
        }
        self.last = Some(entry);
        Ok(Some(entry))
    }
}
