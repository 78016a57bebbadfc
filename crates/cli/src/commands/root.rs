//! `ubt root`: the state root of a JSON-lines key/value set, or of a database.

use std::fs::File;
use std::io::{self, BufReader};

use ubt_spec::FastTree;

use crate::cli::RootArgs;
use crate::db::{hex32, open_existing};
use crate::error::CliError;
use crate::input::read_entries;
use crate::output;

/// Runs `ubt root`.
pub fn run(args: &RootArgs) -> Result<(), CliError> {
    let root = match (&args.db, &args.input) {
        (Some(db), _) => open_existing(db)?.root(),
        (None, Some(input)) => root_of_input(input)?,
        (None, None) => return Err(CliError::Argument("choose one of --input and --db".into())),
    };
    output::line(hex32(&root))
}

/// The root of the JSON-lines file `input` (`-` = standard input).
fn root_of_input(input: &str) -> Result<[u8; 32], CliError> {
    let entries = if input == "-" {
        read_entries(io::stdin().lock(), "<stdin>")?
    } else {
        let file = File::open(input).map_err(|e| CliError::Read {
            source_name: input.to_string(),
            reason: e.to_string(),
        })?;
        read_entries(BufReader::new(file), input)?
    };
    Ok(FastTree::from_entries(entries).root_hash())
}
