//! `ubt root`: the state root of a JSON-lines key/value set.

use std::fs::File;
use std::io::{self, BufReader};

use ubt_spec::FastTree;

use crate::cli::RootArgs;
use crate::error::CliError;
use crate::input::read_entries;

/// Runs `ubt root`.
pub fn run(args: &RootArgs) -> Result<(), CliError> {
    let entries = if args.input == "-" {
        read_entries(io::stdin().lock(), "<stdin>")?
    } else {
        let file = File::open(&args.input).map_err(|e| CliError::Read {
            source_name: args.input.clone(),
            reason: e.to_string(),
        })?;
        read_entries(BufReader::new(file), &args.input)?
    };
    let root = FastTree::from_entries(entries).root_hash();
    println!("0x{}", alloy_primitives::hex::encode(root));
    Ok(())
}
