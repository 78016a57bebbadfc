//! `ubt load`: key/value pairs into a database. A directory that holds no
//! database gets one built from the sorted input ([`Db::build`]); an
//! existing database gets the input applied as one block, committed in
//! chunks of at most [`CHUNK_WRITES_MAX`] writes.

use alloy_primitives::B256;
use rayon::slice::ParallelSliceMut;
use ubt_engine::{Db, Error as StoreError, Options};

use crate::cli::LoadArgs;
use crate::db::hex32;
use crate::error::CliError;
use crate::output;
use crate::progress;
use crate::source::read_any;

/// Most writes applied and committed at once.
pub const CHUNK_WRITES_MAX: usize = 1_000_000;

/// Runs `ubt load`.
pub fn run(args: &LoadArgs) -> Result<(), CliError> {
    let options = Options {
        group_depth: args.group_depth,
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
        Ok(db) => Some(db),
        Err(StoreError::NotFound(_)) => None,
        Err(error) => return Err(error.into()),
    };
    let entries = read_any(&args.input, args.format)?;
    let root = match existing {
        Some(db) => apply(db, &entries, &args.db)?,
        None => build(options, entries, &args.db)?,
    };
    output::line(hex32(&root))
}

/// Builds a new database in `dir` from `entries` (sorted here, stably, so
/// the last of equal keys wins as it does in [`Db::build`]).
fn build(
    options: Options,
    mut entries: Vec<(B256, B256)>,
    dir: &str,
) -> Result<[u8; 32], CliError> {
    entries.par_sort_by_key(|(key, _)| *key);
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

/// Applies `entries` to the open `db` as one block, in commits of at most
/// [`CHUNK_WRITES_MAX`] writes, then checkpoints and closes it.
fn apply(mut db: Db, entries: &[(B256, B256)], dir: &str) -> Result<[u8; 32], CliError> {
    let bar = progress::entries(entries.len() as u64, "applying");
    let mut commits = 0u64;
    let mut rest = entries;
    while !rest.is_empty() {
        let (chunk, later) = rest.split_at(CHUNK_WRITES_MAX.min(rest.len()));
        db.apply_block(chunk)?;
        commits += 1;
        bar.inc(chunk.len() as u64);
        rest = later;
    }
    bar.finish_and_clear();
    let root = db.root();
    db.close()?;
    output::note(format_args!(
        "ubt: applied {} write{} to the existing database at {dir} as one block ({commits} commit{})",
        entries.len(),
        plural(entries.len() as u64),
        plural(commits)
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
