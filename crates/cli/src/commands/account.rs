//! `ubt account`: an account's header at the tip, as one JSON object.

use alloy_primitives::{Address, U256};
use serde::Serialize;

use crate::cli::AddressArgs;
use crate::db::{hex32, open_existing};
use crate::error::CliError;
use crate::hex_arg::fixed_hex;
use crate::output;

/// The account as `ubt account` prints it (fields in this order).
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct AccountJson {
    nonce: u64,
    balance: String,
    code_hash: String,
    code_size: u32,
}

/// The address argument: `0x` followed by 40 hex digits.
pub fn address_arg(text: &str) -> Result<Address, CliError> {
    let bytes = fixed_hex::<20>(text, "the address").map_err(CliError::Argument)?;
    Ok(Address::from(bytes))
}

/// `0x` and the minimal hex digits of `value` (`0x0` for zero).
pub fn minimal_hex(value: &U256) -> String {
    format!("{value:#x}")
}

/// Runs `ubt account`: prints
/// `{"nonce":N,"balance":"0x..","codeHash":"0x..","codeSize":N}` or
/// `absent`.
pub fn run(args: &AddressArgs) -> Result<(), CliError> {
    let address = address_arg(&args.address)?;
    let db = open_existing(&args.db)?;
    let Some(account) = db.account(&address)? else {
        return output::line("absent");
    };
    let json = AccountJson {
        nonce: account.nonce,
        balance: minimal_hex(&account.balance),
        code_hash: hex32(&account.code_hash.0),
        code_size: account.code_size,
    };
    let text = serde_json::to_string(&json).map_err(|e| CliError::Internal(e.to_string()))?;
    output::line(text)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn balances_print_as_minimal_hex() {
        assert_eq!(minimal_hex(&U256::ZERO), "0x0");
        assert_eq!(minimal_hex(&U256::from(0x0au8)), "0xa");
        assert_eq!(minimal_hex(&U256::from(0x100u16)), "0x100");
        assert_eq!(
            minimal_hex(&U256::from(u128::MAX)),
            format!("0x{}", "f".repeat(32))
        );
    }
}
