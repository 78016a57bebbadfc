//! An import from end to end: check and lock the database directory, read
//! the input into the external sort, merge, build the database from the
//! sorted stream, and clean up, whatever happened.

use std::io::Read;
use std::path::Path;
use std::time::Instant;

use alloy_primitives::B256;
use ubt_engine::Db;

use crate::collect::{Collector, Origins};
use crate::dump::{self, DumpOrigins};
use crate::error::ImportError;
use crate::genesis;
use crate::options::ImportOptions;
use crate::progress::{Phase, Progress, Status};
use crate::report::{ImportReport, PhaseTimings};
use crate::sort::tmp::TempSpace;
use crate::sort::{ExternalSorter, SortError, Sorted};
use crate::target::{self, Target};

/// Entries between two progress reports of the merge and build phases.
const REPORT_EVERY_ENTRIES: u64 = 1 << 16;

/// The input formats.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Format {
    Genesis,
    Dump,
}

/// Imports a geth genesis file (the whole genesis object, or a bare alloc
/// map) from `input` into a new database in `db_dir`, with go-ethereum's
/// genesis semantics; see the [crate documentation](crate).
pub fn import_genesis<R: Read + Send>(
    input: R,
    db_dir: impl AsRef<Path>,
    options: &ImportOptions,
    progress: &dyn Progress,
) -> Result<ImportReport, ImportError> {
    run(Format::Genesis, input, db_dir.as_ref(), options, progress)
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
    run(Format::Dump, input, db_dir.as_ref(), options, progress)
}

fn run<R: Read + Send>(
    format: Format,
    input: R,
    db_dir: &Path,
    options: &ImportOptions,
    progress: &dyn Progress,
) -> Result<ImportReport, ImportError> {
    let started = Instant::now();
    options.validate()?;
    let mut target = target::prepare(db_dir, options)?;
    match import_into(&mut target, format, input, options, progress, started) {
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

fn import_into<R: Read + Send>(
    target: &mut Target,
    format: Format,
    input: R,
    options: &ImportOptions,
    progress: &dyn Progress,
    started: Instant,
) -> Result<ImportReport, ImportError> {
    let temp = TempSpace::new(options.tmp_dir.clone().unwrap_or_else(|| target.parent()));
    let sorter = ExternalSorter::new(options.buffer_entries(), options.fan_in(), &temp);
    let mut collector = Collector::new(sorter, progress);

    // Read: parse, derive keys, sort and spill.
    progress.phase_started(&collector.status());
    let read_started = Instant::now();
    let mut dump_origins = DumpOrigins;
    let (read, mut genesis_origins) = match format {
        Format::Genesis => {
            let (read, origins) = genesis::read(input, &mut collector, &temp);
            (read.map(|()| None), Some(origins))
        }
        Format::Dump => (dump::read(input, &mut collector, &temp, options), None),
    };
    let origins: &mut dyn Origins = match genesis_origins.as_mut() {
        Some(origins) => origins,
        None => &mut dump_origins,
    };
    let source_root: Option<B256> = read.map_err(|e| resolve(e, origins))?;
    let read_elapsed = read_started.elapsed();
    progress.phase_finished(&collector.status(), read_elapsed);
    let read_stats = collector.sorter.stats();
    let counts = collector.counts;
    let input_bytes = collector.input_bytes();

    // Merge: only when the runs outnumber the fan-in.
    let mut merge_status = Status {
        phase: Phase::Merge,
        done: 0,
        total: None,
        accounts: counts.accounts,
        entries: counts.tree_entries,
    };
    let mut merge_started = false;
    let sorted = collector.sorter.finish(&mut |entries| {
        if !merge_started {
            merge_started = true;
            progress.phase_started(&merge_status);
        }
        merge_status.done += entries;
        progress.advanced(&merge_status);
    });
    let sorted = sorted.map_err(|e| resolve(e, origins))?;
    let stats = sorted.stats();
    if merge_started {
        progress.phase_finished(&merge_status, stats.merge_time);
    }

    // Build: the final merge streams into the database build.
    let build_started = Instant::now();
    let total = sorted.total();
    let mut feed = Feed {
        sorted,
        error: None,
        progress,
        status: Status {
            phase: Phase::Build,
            done: 0,
            total: Some(total),
            accounts: counts.accounts,
            entries: counts.tree_entries,
        },
    };
    progress.phase_started(&feed.status);
    target.release();
    let built = Db::build(target.path(), target::store_options(options), &mut feed);
    if let Some(error) = feed.error.take() {
        // The build saw the stream end early; what it built is discarded.
        drop(built);
        return Err(resolve(error, origins));
    }
    let (db, build) = built?;
    let root = B256::from(db.root());
    db.close()?;
    let build_elapsed = build_started.elapsed();
    progress.phase_finished(&feed.status, build_elapsed);
    drop(feed);

    let timings = PhaseTimings {
        parse: read_elapsed.saturating_sub(read_stats.sort_time + read_stats.spill_time),
        sort: stats.sort_time,
        spill: stats.spill_time,
        merge: stats.merge_time,
        build: build_elapsed,
        total: started.elapsed(),
    };
    Ok(ImportReport {
        root,
        source_root,
        counts,
        input_bytes,
        spill_runs: stats.spill_runs,
        merge_passes: stats.merge_passes,
        timings,
        build,
    })
}

/// The sorted stream as the build's input: an error ends the stream and
/// is kept for the import to report.
struct Feed<'s, 'p> {
    sorted: Sorted<'s>,
    error: Option<SortError>,
    progress: &'p dyn Progress,
    status: Status,
}

impl Iterator for Feed<'_, '_> {
    type Item = (B256, B256);

    fn next(&mut self) -> Option<(B256, B256)> {
        if self.error.is_some() {
            return None;
        }
        match self.sorted.next_entry() {
            Ok(Some(entry)) => {
                self.status.done += 1;
                if self.status.done.is_multiple_of(REPORT_EVERY_ENTRIES) {
                    self.progress.advanced(&self.status);
                }
                Some((B256::from(entry.key), B256::from(entry.value)))
            }
            Ok(None) => None,
            Err(error) => {
                self.error = Some(error);
                None
            }
        }
    }
}
