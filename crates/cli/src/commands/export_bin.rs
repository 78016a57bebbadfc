//! `ubt export-bin`: JSON-lines key/value pairs to the binary format of
//! [`crate::binary`], in input order (duplicates kept).

use std::fs::File;
use std::io::BufWriter;

use crate::binary;
use crate::cli::{ExportBinArgs, InputFormat};
use crate::error::CliError;
use crate::source::read_any;

/// Runs `ubt export-bin`.
pub fn run(args: &ExportBinArgs) -> Result<(), CliError> {
    let entries = read_any(&args.input, Some(InputFormat::Jsonl))?;
    let write_error = |e: std::io::Error| CliError::Write {
        target: args.output.clone(),
        reason: e.to_string(),
    };
    let file = File::create(&args.output).map_err(write_error)?;
    binary::write(BufWriter::with_capacity(1 << 20, file), &entries).map_err(write_error)
}
