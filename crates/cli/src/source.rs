//! Key/value input of any format: opening a file or standard input,
//! detecting the format, and reading every entry with a progress bar.

use std::fs::File;
use std::io::{self, BufReader, Cursor, Read};

use alloy_primitives::B256;

use crate::binary::{self, MAGIC};
use crate::cli::InputFormat;
use crate::error::CliError;
use crate::input::read_entries;
use crate::progress;

/// An opened input: its reader, its name for errors and its length if known.
pub struct Source {
    /// The bytes.
    pub reader: Box<dyn Read>,
    /// File name, or `<stdin>`.
    pub name: String,
    /// Length in bytes, for regular files.
    pub len: Option<u64>,
}

impl Source {
    /// Opens `path`, or standard input for `-`.
    pub fn open(path: &str) -> Result<Source, CliError> {
        if path == "-" {
            return Ok(Source {
                reader: Box::new(io::stdin().lock()),
                name: "<stdin>".to_string(),
                len: None,
            });
        }
        let read_error = |e: io::Error| binary::read_error(path, &e);
        let file = File::open(path).map_err(read_error)?;
        let metadata = file.metadata().map_err(read_error)?;
        Ok(Source {
            reader: Box::new(file),
            name: path.to_string(),
            len: metadata.is_file().then_some(metadata.len()),
        })
    }
}

/// Reads every entry of `path` (`-` = standard input) in `format`, or in
/// the format its first bytes announce when `format` is `None`.
pub fn read_any(path: &str, format: Option<InputFormat>) -> Result<Vec<(B256, B256)>, CliError> {
    let source = Source::open(path)?;
    let bar = progress::bytes(source.len, "reading");
    let mut reader = bar.wrap_read(source.reader);
    let mut head = [0u8; 8];
    let got = binary::read_full(&mut reader, &mut head)
        .map_err(|e| binary::read_error(&source.name, &e))?;
    let has_magic = got == MAGIC.len() && &head == MAGIC;
    let format = format.unwrap_or(if has_magic {
        InputFormat::Bin
    } else {
        InputFormat::Jsonl
    });
    let entries = match format {
        InputFormat::Bin => {
            if let Some(len) = source.len {
                binary::check_length(len, &source.name)?;
            }
            if got < MAGIC.len() {
                binary::check_length(got as u64, &source.name)?;
            }
            if !has_magic {
                return Err(CliError::Format {
                    source_name: source.name,
                    problem: "binary input does not start with the magic UBTKV001".into(),
                });
            }
            binary::read_records(BufReader::with_capacity(1 << 20, reader), &source.name)?
        }
        InputFormat::Jsonl => {
            let whole = Cursor::new(head[..got].to_vec()).chain(reader);
            read_entries(BufReader::with_capacity(1 << 20, whole), &source.name)?
        }
    };
    bar.finish_and_clear();
    Ok(entries)
}
