//! `ubt get`: the value stored at one key.

use alloy_primitives::B256;

use crate::cli::GetArgs;
use crate::db::{hex32, open_existing};
use crate::error::CliError;
use crate::hex_arg::fixed_hex;
use crate::output;

/// Runs `ubt get`: prints `0x<64 hex>` or `absent`.
pub fn run(args: &GetArgs) -> Result<(), CliError> {
    let key = B256::from(fixed_hex::<32>(&args.key, "the key").map_err(CliError::Argument)?);
    let db = open_existing(&args.db)?;
    match db.get(&key)? {
        Some(value) => output::line(hex32(&value.0)),
        None => output::line("absent"),
    }
}
