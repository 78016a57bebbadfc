//! `ubt key`: the tree key of an account field, storage slot or code chunk.

use alloy_primitives::{Address, U256};
use ubt_spec::key::{basic_data_key, code_chunk_key, code_hash_key, storage_slot_key};

use crate::cli::KeyArgs;
use crate::error::CliError;
use crate::hex_arg::{fixed_hex, number_hex};
use crate::output;

/// Runs `ubt key`.
pub fn run(args: &KeyArgs) -> Result<(), CliError> {
    let address =
        Address::from(fixed_hex::<20>(&args.address, "--address").map_err(CliError::Argument)?);
    let key = if args.basic_data {
        basic_data_key(&address)
    } else if args.code_hash {
        code_hash_key(&address)
    } else if let Some(slot) = &args.slot {
        let slot = number_hex(slot, "--slot").map_err(CliError::Argument)?;
        storage_slot_key(&address, &U256::from_be_bytes(slot))
    } else if let Some(chunk) = args.chunk {
        code_chunk_key(&address, chunk)
    } else {
        return Err(CliError::Argument(
            "choose one of --basic-data, --code-hash, --slot, --chunk".into(),
        ));
    };
    output::line(key)
}
