//! `ubt load`: key/value pairs into a database. A directory that holds no
//! database gets one built from the sorted input ([`Db::build`]); an
//! existing database gets the input applied as one block, committed in
//! chunks of at most [`CHUNK_WRITES_MAX`] writes.
//!
//! Chunks also grow with the database: at most [`WRITES_PER_BUCKET`] writes
//! per bucket it holds (but never fewer than [`CHUNK_WRITES_MIN`]). The
//! engine adds a chunk's new stems to a bucket one at a time, each at a
//! cost proportional to the bucket's size, and splits the bucket only
//! afterwards, so a chunk far larger than the database costs time quadratic
//! in the chunk: 100,000 random writes into a database of 100 values take
//! about 12 s, 1,000,000 about 20 minutes. Growing chunks keep every
//! bucket's share small.

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
/// Fewest writes in a chunk (but for the last).
pub const CHUNK_WRITES_MIN: usize = 16_384;
/// Most writes in a chunk per bucket of the database.
pub const WRITES_PER_BUCKET: usize = 64;

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
        let (chunk, later) = rest.split_at(chunk_len(&db).min(rest.len()));
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

/// Writes in the next chunk applied to `db`.
fn chunk_len(db: &Db) -> usize {
    let buckets = usize::try_from(db.stats().bucket_count).unwrap_or(usize::MAX);
    buckets
        .saturating_mul(WRITES_PER_BUCKET)
        .clamp(CHUNK_WRITES_MIN, CHUNK_WRITES_MAX)
}

/// `"s"` unless `n` is 1.
fn plural(n: u64) -> &'static str {
    if n == 1 {
        ""
    } else {
        "s"
    }
}
