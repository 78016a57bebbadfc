//! `ubt root`: the state root of a JSON-lines key/value set, or of a database.
//!
//! The root of an input is computed without building a tree: the entries
//! are collected with their input position, sorted by (key, position) in
//! place on rayon's threads, and folded into the root in one pass
//! ([`ubt_spec::sorted_root::root_of_sorted`]), the last of equal keys
//! winning. Memory is the entries (72 bytes each) and the trie's depth.

use std::io::BufReader;

use alloy_primitives::B256;
use rayon::slice::ParallelSliceMut;
use ubt_spec::sorted_root::root_of_sorted;

use crate::cli::RootArgs;
use crate::db::{hex32, open_existing};
use crate::error::CliError;
use crate::input::for_each_entry;
use crate::output;
use crate::progress;
use crate::source::Source;

/// Runs `ubt root`.
pub fn run(args: &RootArgs) -> Result<(), CliError> {
    let root = match (&args.db, &args.input) {
        (Some(db), _) => open_existing(db)?.root().0,
        (None, Some(input)) => root_of_input(input)?,
        (None, None) => return Err(CliError::Argument("choose one of --input and --db".into())),
    };
    output::line(hex32(&root))
}

/// The root of the JSON-lines file `input` (`-` = standard input).
fn root_of_input(input: &str) -> Result<[u8; 32], CliError> {
    let source = Source::open(input)?;
    let bar = progress::bytes(source.len, "reading");
    let reader = BufReader::with_capacity(1 << 20, bar.wrap_read(source.reader));
    // Each entry with its input position: an unstable (in-place, no
    // buffer) sort by (key, position) orders equal keys as written.
    let mut entries: Vec<(B256, B256, u64)> = Vec::new();
    for_each_entry(reader, &source.name, |key, value| {
        let position = entries.len() as u64;
        entries.push((key, value, position));
    })?;
    bar.finish_and_clear();
    entries.par_sort_unstable_by(|a, b| a.0.cmp(&b.0).then(a.2.cmp(&b.2)));
    root_of_sorted(&entries, |entry| (entry.0, entry.1))
        .map_err(|e| CliError::Internal(format!("sorted entries are not in order: {e}")))
}
