//! Opening an existing database, and printing hashes.

use ubt_engine::{Db, Options};

use crate::error::CliError;

/// Opens the database in `dir`, which must already hold one.
pub fn open_existing(dir: &str) -> Result<Db, CliError> {
    let options = Options {
        create_if_missing: false,
        ..Options::default()
    };
    Ok(Db::open(dir, options)?)
}

/// `0x` followed by the 64 hex digits of `bytes`.
pub fn hex32(bytes: &[u8; 32]) -> String {
    format!("0x{}", alloy_primitives::hex::encode(bytes))
}
