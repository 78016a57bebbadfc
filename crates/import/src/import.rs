//! An import from end to end: check and lock the database directory, read
//! the input into the external sort, merge, build the database from the
//! sorted stream, and clean up, whatever happened.

use std::io::Read;
use std::path::Path;
use std::time::Instant;

use alloy_primitives::{Address, B256};
use ubt_engine::{Db, FlatBuildReport};

use crate::collect::{Collector, Origins};
use crate::dump::{self, DumpOrigins};
use crate::entries::FlatRecord;
use crate::error::ImportError;
use crate::genesis;
use crate::items::{self, ItemOrigins, StateItem};
use crate::options::ImportOptions;
use crate::progress::{Phase, Progress, Status};
use crate::report::{ImportReport, PhaseTimings};
use crate::sort::record::Record;
use crate::sort::tmp::TempSpace;
use crate::sort::{ExternalSorter, SortError, SortStats, Sorted};
use crate::target::{self, Target};

/// Entries between two progress reports of the merge and build phases.
const REPORT_EVERY_ENTRIES: u64 = 1 << 16;

/// What reading an input gives: the state root the input names (a dump's
/// root line) or the error that stopped it, and what names the origins of
/// a duplicate (also when reading failed: a duplicate found while
/// spilling needs it).
type ReadOutcome = (Result<Option<B256>, SortError>, Box<dyn Origins>);

/// Imports a geth genesis file (the whole genesis object, or a bare alloc
/// map) from `input` into a new database in `db_dir`, with go-ethereum's
/// genesis semantics; see the [crate documentation](crate).
pub fn import_genesis<R: Read + Send>(
    input: R,
    db_dir: impl AsRef<Path>,
    options: &ImportOptions,
    progress: &dyn Progress,
) -> Result<ImportReport, ImportError> {
    let read = |collector: &mut Collector<'_, '_>, temp: &TempSpace| -> ReadOutcome {
        let (read, origins) = genesis::read(input, collector, temp);
        (read.map(|()| None), Box::new(origins))
    };
    run(read, db_dir.as_ref(), options, progress)
}

/// Imports the output of `geth dump --iterative` (JSON lines) from `input`
/// into a new database in `db_dir`, with the genesis semantics applied to
/// every account; see the [crate documentation](crate).
pub fn import_geth_dump<R: Read + Send>(
    input: R,
    db_dir: impl AsRef<Path>,
    options: &ImportOptions,
    progress: &dyn Progress,
) -> Result<ImportReport, ImportError> {
    let read = |collector: &mut Collector<'_, '_>, temp: &TempSpace| -> ReadOutcome {
        let read = dump::read(input, collector, temp, options);
        (read, Box::new(DumpOrigins))
    };
    run(read, db_dir.as_ref(), options, progress)
}

/// Imports accounts and storage slots from `items` into a new database in
/// `db_dir`, with the genesis semantics; see the [crate
/// documentation](crate) and [`StateItem`]. The items come in any order
/// (a slot before or after its account); an account or slot given twice
/// is refused ([`Problem::DuplicateTreeKey`](crate::Problem), naming the
/// items' positions, 1-based); an `Err` from the iterator stops the
/// import as [`ImportError::Read`]. The read phase's progress counts the
/// items' bytes (84 per slot, 60 per account plus its code).
pub fn import_items<I>(
    items: I,
    db_dir: impl AsRef<Path>,
    options: &ImportOptions,
    progress: &dyn Progress,
) -> Result<ImportReport, ImportError>
where
    I: IntoIterator<Item = std::io::Result<StateItem>>,
    I::IntoIter: Send,
{
    let read = |collector: &mut Collector<'_, '_>, _: &TempSpace| -> ReadOutcome {
        let read = items::read(items.into_iter(), collector);
        (read.map(|()| None), Box::new(ItemOrigins))
    };
    run(read, db_dir.as_ref(), options, progress)
}

fn run<F>(
    read: F,
    db_dir: &Path,
    options: &ImportOptions,
    progress: &dyn Progress,
) -> Result<ImportReport, ImportError>
where
    F: FnOnce(&mut Collector<'_, '_>, &TempSpace) -> ReadOutcome,
{
    let started = Instant::now();
    options.validate()?;
    let mut target = target::prepare(db_dir, options)?;
    match import_into(&mut target, read, options, progress, started) {
        Ok(report) => Ok(report),
        Err(error) => {
            target.discard();
            Err(error)
        }
    }
}

/// A [`SortError`] as the import's error, duplicates named by `origins`.
fn resolve(error: SortError, origins: &mut dyn Origins) -> ImportError {
    match error {
        SortError::Duplicate(duplicate) => origins.duplicate(&duplicate),
        SortError::Failed(error) => error,
    }
}

fn import_into<F>(
    target: &mut Target,
    read: F,
    options: &ImportOptions,
    progress: &dyn Progress,
    started: Instant,
) -> Result<ImportReport, ImportError>
where
    F: FnOnce(&mut Collector<'_, '_>, &TempSpace) -> ReadOutcome,
{
    let temp = TempSpace::new(options.tmp_dir.clone().unwrap_or_else(|| target.parent()));
    let sorter = ExternalSorter::new(options.buffer_entries(), options.fan_in(), &temp);
    let flat = options
        .flat_index
        .then(|| ExternalSorter::new(options.buffer_entries(), options.fan_in(), &temp));
    let mut collector = Collector::new(sorter, flat, progress);

    // Read: parse, derive keys, sort and spill.
    progress.phase_started(&collector.status());
    let read_started = Instant::now();
    let (read, mut origins) = read(&mut collector, &temp);
    let origins: &mut dyn Origins = origins.as_mut();
    let source_root: Option<B256> = read.map_err(|e| resolve(e, origins))?;
    let read_elapsed = read_started.elapsed();
    progress.phase_finished(&collector.status(), read_elapsed);
    let counts = collector.counts;
    let input_bytes = collector.input_bytes();
    // The flat index's sort waits for the tree's build, spilled if it
    // spilled: the build does not run beside its full buffer.
    let mut flat_sorter = collector.flat.take();
    if let Some(flat) = flat_sorter.as_mut() {
        flat.set_aside().map_err(|e| resolve(e, origins))?;
    }
    let read_stats = collector.sorter.stats();
    let flat_read_stats = flat_sorter.as_ref().map(ExternalSorter::stats);

    // Merge: only when the runs outnumber the fan-in.
    let sorted =
        finish_sort(collector.sorter, progress, counts).map_err(|e| resolve(e, origins))?;
    let stats = sorted.stats();

    // Build: the final merge streams into the database build.
    let build_started = Instant::now();
    target.release();
    let (mut db, build) =
        build_tree(target.path(), sorted, options, progress, counts).map_err(|e| match e {
            BuildError::Sort(e) => resolve(e, origins),
            BuildError::Import(e) => e,
        })?;
    let build_elapsed = build_started.elapsed();

    // The flat index: the account-ordered sort into its build.
    let flat_started = Instant::now();
    let (flat_index, flat_stats) = match flat_sorter {
        Some(sorter) => {
            let (report, stats) = build_flat_index(&mut db, sorter, progress, counts)
                .map_err(|e| resolve(e, origins))?;
            (Some(report), stats)
        }
        None => (None, SortStats::default()),
    };
    let flat_elapsed = flat_started.elapsed();
    let root = B256::from(db.root());
    db.close()?;

    let flat_read_stats = flat_read_stats.unwrap_or_default();
    let timings = PhaseTimings {
        parse: read_elapsed.saturating_sub(
            read_stats.sort_time
                + read_stats.spill_time
                + flat_read_stats.sort_time
                + flat_read_stats.spill_time,
        ),
        sort: stats.sort_time + flat_read_stats.sort_time,
        spill: stats.spill_time + flat_read_stats.spill_time,
        merge: stats.merge_time,
        build: build_elapsed,
        flat_index: flat_elapsed,
        total: started.elapsed(),
    };
    Ok(ImportReport {
        root,
        source_root,
        counts,
        input_bytes,
        spill_runs: stats.spill_runs + flat_stats.spill_runs,
        merge_passes: stats.merge_passes + flat_stats.merge_passes,
        timings,
        build,
        flat_index,
    })
}

/// Why a build stopped: the sorted stream failed, or the build did.
enum BuildError {
    Sort(SortError),
    Import(ImportError),
}

/// Streams the sorted entries into a new database at `path` (its lock
/// released), reported as the build phase.
fn build_tree(
    path: &std::path::Path,
    sorted: Sorted<'_, crate::entries::Entry>,
    options: &ImportOptions,
    progress: &dyn Progress,
    counts: crate::report::Counts,
) -> Result<(Db, ubt_engine::BuildReport), BuildError> {
    let started = Instant::now();
    let mut feed = Feed::new(sorted, progress, Phase::Build, counts);
    progress.phase_started(&feed.status);
    let built = Db::build(
        path,
        target::store_options(options),
        feed.by_ref()
            .map(|entry| (B256::from(entry.key), B256::from(entry.value))),
    );
    if let Some(error) = feed.error.take() {
        // The build saw the stream end early; what it built is discarded.
        drop(built);
        return Err(BuildError::Sort(error));
    }
    let built = built.map_err(|e| BuildError::Import(e.into()))?;
    progress.phase_finished(&feed.status, started.elapsed());
    Ok(built)
}

/// Finishes `sorter`: its intermediate merges, when the runs outnumber the
/// fan-in, reported as a merge phase (the tree sort's and the flat
/// records' alike).
fn finish_sort<'t, T: Record>(
    sorter: ExternalSorter<'t, T>,
    progress: &dyn Progress,
    counts: crate::report::Counts,
) -> Result<Sorted<'t, T>, SortError> {
    let mut merge_status = Status {
        phase: Phase::Merge,
        done: 0,
        total: None,
        accounts: counts.accounts,
        entries: counts.tree_entries,
    };
    let mut merge_started = false;
    let sorted = sorter.finish(&mut |merged| {
        if !merge_started {
            merge_started = true;
            progress.phase_started(&merge_status);
        }
        merge_status.done += merged;
        progress.advanced(&merge_status);
    })?;
    if merge_started {
        progress.phase_finished(&merge_status, sorted.stats().merge_time);
    }
    Ok(sorted)
}

/// Merges the flat records (sorted by account) into the flat index of
/// `db`, just built; returns what the build and the sort did.
fn build_flat_index(
    db: &mut Db,
    sorter: ExternalSorter<'_, FlatRecord>,
    progress: &dyn Progress,
    counts: crate::report::Counts,
) -> Result<(FlatBuildReport, SortStats), SortError> {
    let sorted = finish_sort(sorter, progress, counts)?;
    let stats = sorted.stats();
    let started = Instant::now();
    let mut feed = Feed::new(sorted, progress, Phase::Index, counts);
    progress.phase_started(&feed.status);
    let built = db.build_flat_index(feed.by_ref().map(|record| {
        Ok((
            Address::from(record.owner),
            B256::from(record.key),
            B256::from(record.value),
        ))
    }));
    if let Some(error) = feed.error.take() {
        // The index saw the stream end early; the import is discarded.
        return Err(error);
    }
    let report = built.map_err(|e| SortError::Failed(e.into()))?;
    progress.phase_finished(&feed.status, started.elapsed());
    Ok((report, stats))
}

/// The sorted stream as a build's input: an error ends the stream and is
/// kept for the import to report.
struct Feed<'s, 'p, T> {
    sorted: Sorted<'s, T>,
    error: Option<SortError>,
    progress: &'p dyn Progress,
    status: Status,
}

impl<'s, 'p, T: Record> Feed<'s, 'p, T> {
    /// The stream of `sorted`, reported as `phase`.
    fn new(
        sorted: Sorted<'s, T>,
        progress: &'p dyn Progress,
        phase: Phase,
        counts: crate::report::Counts,
    ) -> Feed<'s, 'p, T> {
        let total = sorted.total();
        Feed {
            sorted,
            error: None,
            progress,
            status: Status {
                phase,
                done: 0,
                total: Some(total),
                accounts: counts.accounts,
                entries: counts.tree_entries,
            },
        }
    }
}

impl<T: Record> Iterator for Feed<'_, '_, T> {
    type Item = T;

    fn next(&mut self) -> Option<T> {
        if self.error.is_some() {
            return None;
        }
        match self.sorted.next_entry() {
            Ok(Some(entry)) => {
                self.status.done += 1;
                if self.status.done.is_multiple_of(REPORT_EVERY_ENTRIES) {
                    self.progress.advanced(&self.status);
                }
                Some(entry)
            }
            Ok(None) => None,
            Err(error) => {
                self.error = Some(error);
                None
            }
        }
    }
}
