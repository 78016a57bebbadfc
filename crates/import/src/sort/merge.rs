//! The k-way merge of sorted runs: a binary heap of each run's next entry,
//! ordered by key, then origin, then run, so that equal keys come out
//! next to each other in input order and are reported as duplicates.

use std::cmp::{Ordering, Reverse};
use std::collections::BinaryHeap;
use std::io::Read;
use std::path::PathBuf;

use super::buffer::{entry_order, Duplicate};
use super::run::RunReader;
use super::SortError;
use crate::entries::Entry;
use crate::error::ImportError;

/// A run's next entry.
#[derive(Debug, PartialEq, Eq)]
struct Head {
    entry: Entry,
    source: usize,
}

impl Ord for Head {
    fn cmp(&self, other: &Self) -> Ordering {
        entry_order(&self.entry, &other.entry).then(self.source.cmp(&other.source))
    }
}

impl PartialOrd for Head {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

/// One run being read: its path (for errors) and its reader.
pub(crate) struct Source<R: Read> {
    /// The run's file.
    pub path: PathBuf,
    /// Its reader.
    pub reader: RunReader<R>,
}

/// Merges sorted runs into one sorted stream, refusing duplicate keys.
pub(crate) struct Merger<R: Read> {
    sources: Vec<Source<R>>,
    heap: BinaryHeap<Reverse<Head>>,
    last: Option<Entry>,
}

impl<R: Read> Merger<R> {
    /// Starts merging `sources` (reads each one's first entry).
    pub fn new(sources: Vec<Source<R>>) -> Result<Merger<R>, SortError> {
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

    /// The next entry in key order; a duplicate key is an error.
    pub fn next_entry(&mut self) -> Result<Option<Entry>, SortError> {
        let Some(Reverse(head)) = self.heap.pop() else {
            return Ok(None);
        };
        self.refill(head.source)?;
        let entry = head.entry;
        if let Some(last) = self.last {
            if last.key == entry.key {
                return Err(SortError::Duplicate(Duplicate {
                    key: entry.key,
                    first_origin: last.origin,
                    second_origin: entry.origin,
                }));
            }
        }
        self.last = Some(entry);
        Ok(Some(entry))
    }
}
