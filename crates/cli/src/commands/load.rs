//! `ubt load`: key/value pairs into a database, always as ONE atomic
//! block. A directory that holds no database, or an empty one (a build
//! that failed part-way leaves one), gets one built from the sorted input
//! ([`Db::build`]); an existing database gets the input as one bulk block
//! ([`Db::apply_bulk`]): changed buckets beyond the memory budget are
//! staged into free blocks and the block is committed by a single
//! checkpoint, so a crash or a full disk at any point leaves the database
//! at the state before the load or after it, never in between. The input
//! itself is held in memory (64 bytes per entry) to be sorted.

use alloy_primitives::B256;
use rayon::slice::ParallelSliceMut;
use ubt_engine::{Db, Error as StoreError, Options, Root};

use crate::cli::LoadArgs;
use crate::db::hex32;
use crate::error::CliError;
use crate::output;
use crate::progress;
use crate::source::read_any;

/// Runs `ubt load`.
pub fn run(args: &LoadArgs) -> Result<(), CliError> {
    let options = Options {
        group_depth: args.group_depth,
        bucket_bytes: args.bucket_kib.map(|kib| kib << 10),
        ..Options::default()
    };
    // Open first: a mismatched group depth or a locked database fails
    // before the input is read, and the lock is held while it is.
    let existing = match Db::open(
        &args.db,
        Options {
            create_if_missing: false,
            ..options.clone()
        },
    ) {
        Ok(db) if is_empty(&db) => {
            // Nothing was ever committed (a fresh or failed build): build
            // anew, which reuses the data file's space from its start.
            drop(db);
            None
        }
        Ok(db) => Some(db),
        Err(StoreError::NotFound(_)) => None,
        Err(error) => return Err(error.into()),
    };
    let mut entries = read_any(&args.input, args.format)?;
    entries.par_sort_by_key(|(key, _)| *key);
    let root = match existing {
        Some(db) => apply(db, entries, &args.db)?,
        None => build(options, entries, &args.db)?,
    };
    output::line(hex32(&root))
}

/// Whether `db` holds nothing and never committed anything.
fn is_empty(db: &Db) -> bool {
    let stats = db.stats();
    stats.generation == 0 && stats.commit_seq == 0 && stats.leaf_count == 0
}

/// Builds a new database in `dir` from `entries` (sorted, stably, so the
/// last of equal keys wins as it does in [`Db::build`]).
fn build(options: Options, entries: Vec<(B256, B256)>, dir: &str) -> Result<Root, CliError> {
    let bar = progress::entries(entries.len() as u64, "building");
    let (db, report) = Db::build(dir, options, bar.wrap_iter(entries.into_iter()))?;
    bar.finish_and_clear();
    let root = db.root();
    db.close()?;
    output::note(format_args!(
        "ubt: built a new database at {dir}: {} entries read, {} values, {} stems, {} buckets, {} pages",
        report.entries_read,
        report.leaf_count,
        report.stem_count,
        report.buckets_written,
        report.pages_written
    ));
    Ok(root)
}

/// Applies the sorted `entries` to the open `db` as one bulk block.
fn apply(mut db: Db, entries: Vec<(B256, B256)>, dir: &str) -> Result<Root, CliError> {
    let count = entries.len() as u64;
    let bar = progress::entries(count, "applying");
    let root = db.apply_bulk(bar.wrap_iter(entries.into_iter()))?;
    bar.finish_and_clear();
    output::note(format_args!(
        "ubt: applied {count} write{} to the existing database at {dir} as one block",
        plural(count)
    ));
    Ok(root)
}

/// `"s"` unless `n` is 1.
fn plural(n: u64) -> &'static str {
    if n == 1 {
        ""
    } else {
        "s"
    }
}
