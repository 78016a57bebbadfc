//! `ubt verify`: every checksum and every hash of a database.

use crate::cli::DbArgs;
use crate::db::open_existing;
use crate::error::CliError;
use crate::output;

/// Runs `ubt verify`: a one-line summary when the database is sound;
/// otherwise every problem on its own `problem: ` line, then an error.
pub fn run(args: &DbArgs) -> Result<(), CliError> {
    let db = open_existing(&args.db)?;
    let report = db.verify()?;
    if !report.is_ok() {
        for problem in &report.problems {
            output::line(format_args!("problem: {}", problem.replace('\n', " ")))?;
        }
        return Err(CliError::VerifyFailed {
            db: args.db.clone(),
            count: report.problems.len(),
        });
    }
    let flat = if report.flat_leaves > 0 {
        format!(
            ", flat index: {} records in {} leaves under {} nodes, equal to the tree's values",
            report.flat_records, report.flat_leaves, report.flat_nodes
        )
    } else {
        String::new()
    };
    output::line(format_args!(
        "ok: {} buckets, {} stems, {} values, {} pages, {} upper-trie nodes{flat}, {} bytes read",
        report.buckets,
        report.stems,
        report.leaves,
        report.pages,
        report.upper_nodes,
        report.bytes_read
    ))
}
