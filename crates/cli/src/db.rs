//! Opening an existing database, and printing hashes.

use ubt_engine::{Db, Options};

use crate::error::CliError;

/// Opens the database in `dir`, which must already hold one, for reading
/// only: a shared lock (read commands run beside each other, and on
/// read-only media), nothing written, not even by recovery. While a writer
/// (`ubt load`) has the database open, read commands report that it is
/// locked.
pub fn open_existing(dir: &str) -> Result<Db, CliError> {
    Ok(Db::open_read_only(dir, Options::default())?)
}

/// `0x` followed by the 64 hex digits of `bytes`.
pub fn hex32(bytes: &[u8; 32]) -> String {
    format!("0x{}", alloy_primitives::hex::encode(bytes))
}
