//! `ubt code`: an account's code at the tip, reassembled from its chunks.

use ubt_engine::{CodeReadError, Error as StoreError, Structure};

use crate::cli::AddressArgs;
use crate::commands::account::address_arg;
use crate::db::open_existing;
use crate::error::CliError;
use crate::output;

/// Runs `ubt code`: prints `0x` and the code's hex digits; `0x` alone for
/// empty code and for an absent account.
pub fn run(args: &AddressArgs) -> Result<(), CliError> {
    let address = address_arg(&args.address)?;
    let db = open_existing(&args.db)?;
    let code = match db.code(&address) {
        Ok(code) => code.unwrap_or_default(),
        Err(CodeReadError::Source(error)) => return Err(error.into()),
        // The account's header and its chunks disagree: the trie breaks
        // the account layout's rule, which geth's writes always keep.
        Err(CodeReadError::MissingChunk(missing)) => {
            return Err(StoreError::corrupted(
                Structure::Trie,
                format!("account {address}"),
                format!(
                    "its BasicData gives {} code bytes, but code chunk {} is absent",
                    missing.code_size, missing.chunk_id
                ),
            )
            .into())
        }
    };
    output::line(format_args!("0x{}", alloy_primitives::hex::encode(&code)))
}
