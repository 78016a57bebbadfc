//! `ubt storage`: the value of one storage slot at the tip.

use alloy_primitives::U256;

use crate::cli::StorageArgs;
use crate::commands::account::address_arg;
use crate::db::{hex32, open_existing};
use crate::error::CliError;
use crate::hex_arg::number_hex;
use crate::output;

/// The slot argument: `0x` followed by 1 to 64 hex digits, or a decimal
/// number (ASCII digits only) up to 2^256 - 1.
pub fn slot_arg(text: &str) -> Result<U256, CliError> {
    if text.starts_with("0x") {
        let bytes = number_hex(text, "the slot").map_err(CliError::Argument)?;
        return Ok(U256::from_be_bytes(bytes));
    }
    if text.is_empty() {
        return Err(CliError::Argument(
            "the slot must be a decimal number or 0x followed by hex digits, but it is empty"
                .into(),
        ));
    }
    if let Some((index, c)) = text.chars().enumerate().find(|(_, c)| !c.is_ascii_digit()) {
        return Err(CliError::Argument(format!(
            "the slot must be a decimal number or 0x followed by hex digits: character {} is {c:?}, not a decimal digit",
            index + 1
        )));
    }
    U256::from_str_radix(text, 10).map_err(|_| {
        CliError::Argument(format!(
            "the slot {text} does not fit 256 bits (at most 2^256 - 1)"
        ))
    })
}

/// Runs `ubt storage`: prints the slot's value as `0x<64 hex>`, zero when
/// absent.
pub fn run(args: &StorageArgs) -> Result<(), CliError> {
    let address = address_arg(&args.address)?;
    let slot = slot_arg(&args.slot)?;
    let db = open_existing(&args.db)?;
    let value = db.storage(&address, &slot)?.unwrap_or_default();
    output::line(hex32(&value.0))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn slots_in_hex_and_decimal() {
        assert_eq!(slot_arg("0x0").ok(), Some(U256::ZERO));
        assert_eq!(slot_arg("0x40").ok(), Some(U256::from(64u8)));
        assert_eq!(slot_arg("64").ok(), Some(U256::from(64u8)));
        assert_eq!(slot_arg("007").ok(), Some(U256::from(7u8)));
        let max = U256::MAX.to_string();
        assert_eq!(slot_arg(&max).ok(), Some(U256::MAX));
        assert_eq!(
            slot_arg(&format!("0x{}", "f".repeat(64))).ok(),
            Some(U256::MAX)
        );
    }

    #[test]
    fn bad_slots_are_argument_errors() {
        // 2^256: one past the largest slot.
        let too_big =
            "115792089237316195423570985008687907853269984665640564039457584007913129639936";
        let too_long = format!("0x{}", "0".repeat(65));
        for text in [
            "", "-1", "+1", "1_000", "0X10", "12a", "\u{ff11}", too_big, &too_long,
        ] {
            let error = slot_arg(text).expect_err(text);
            assert_eq!(error.exit_code(), 2, "{text}: {error}");
        }
    }
}
