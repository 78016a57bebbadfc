//! Where the parsers' entries go: into the external sort (and their flat
//! records into the flat index's sort), with the counts and the read
//! phase's progress kept on the way.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::mpsc::Receiver;

use rayon::prelude::*;

use crate::entries::{derive, Derived, Entry, FlatRecord, RawBatch};
use crate::error::ImportError;
use crate::progress::{Phase, Progress, Status};
use crate::report::Counts;
use crate::sort::buffer::Duplicate;
use crate::sort::{ExternalSorter, SortError};

/// Input bytes between two progress reports.
const REPORT_EVERY_BYTES: u64 = 4 << 20;

/// Names the input positions behind a duplicate key: lines of a dump,
/// accounts of a genesis alloc.
pub(crate) trait Origins {
    /// The error for `duplicate`.
    fn duplicate(&mut self, duplicate: &Duplicate) -> ImportError;
}

/// The parsers' output: sorted on the way in, counted, reported.
pub(crate) struct Collector<'p, 't> {
    /// The sort the entries go into.
    pub sorter: ExternalSorter<'t, Entry>,
    /// The sort the flat records go into, when the import builds the flat
    /// index.
    pub flat: Option<ExternalSorter<'t, FlatRecord>>,
    /// What was read so far.
    pub counts: Counts,
    progress: &'p dyn Progress,
    input_bytes: u64,
    reported_bytes: u64,
}

impl<'p, 't> Collector<'p, 't> {
    /// Collects into `sorter` (and flat records into `flat`), reporting
    /// to `progress`.
    pub fn new(
        sorter: ExternalSorter<'t, Entry>,
        flat: Option<ExternalSorter<'t, FlatRecord>>,
        progress: &'p dyn Progress,
    ) -> Collector<'p, 't> {
        Collector {
            sorter,
            flat,
            counts: Counts::default(),
            progress,
            input_bytes: 0,
            reported_bytes: 0,
        }
    }

    /// Whether flat records are collected (derive them).
    pub fn wants_flat(&self) -> bool {
        self.flat.is_some()
    }

    /// Adds what a batch derived.
    pub fn add(&mut self, derived: &Derived) -> Result<(), SortError> {
        debug_assert!(self.flat.is_none() || derived.flat.len() == derived.entries.len());
        self.counts.add(&derived.counts);
        self.sorter.push(&derived.entries)?;
        match self.flat.as_mut() {
            Some(flat) => flat.push(&derived.flat),
            None => Ok(()),
        }
    }

    /// Adds counts without entries (skipped accounts).
    pub fn count(&mut self, counts: &Counts) {
        self.counts.add(counts);
    }

    /// The input has been read up to `input_bytes`.
    pub fn read_to(&mut self, input_bytes: u64) {
        self.input_bytes = self.input_bytes.max(input_bytes);
        if self.input_bytes >= self.reported_bytes + REPORT_EVERY_BYTES {
            self.reported_bytes = self.input_bytes;
            self.progress.advanced(&self.status());
        }
    }

    /// Bytes of input read.
    pub fn input_bytes(&self) -> u64 {
        self.input_bytes
    }

    /// The read phase's status.
    pub fn status(&self) -> Status {
        Status {
            phase: Phase::Read,
            done: self.input_bytes,
            total: None,
            accounts: self.counts.accounts,
            entries: self.sorter.pushed(),
        }
    }
}

/// Derives (in parallel) and collects a reader thread's batches until it
/// is done, reporting `bytes_read` as the read phase's progress;
/// returning early (on an error) drops `receiver`, which stops the
/// reader.
pub(crate) fn consume(
    receiver: Receiver<RawBatch>,
    collector: &mut Collector<'_, '_>,
    bytes_read: &AtomicU64,
) -> Result<(), SortError> {
    let parallel = rayon::current_num_threads().max(1) * 2;
    while let Ok(first) = receiver.recv() {
        let mut batches = vec![first];
        while batches.len() < parallel {
            match receiver.try_recv() {
                Ok(batch) => batches.push(batch),
                Err(_) => break,
            }
        }
        let flat = collector.wants_flat();
        let derived: Vec<_> = batches.par_iter().map(|b| derive(b, flat)).collect();
        drop(batches);
        for derived in &derived {
            collector.add(derived)?;
        }
        collector.read_to(bytes_read.load(Ordering::Relaxed));
    }
    Ok(())
}
