//! Text forms of the values in genesis files and geth dumps, parsed with the
//! rules of the go-ethereum decoders that read them (`common/hexutil`,
//! `common/math`, `core/types` `storageJSON`), so that an import accepts
//! what geth accepts and means the same by it.

use alloy_primitives::{Address, U256};

use crate::error::{shorten, Problem};

/// Value of a hex digit, or `0xff` for any other byte.
// `i` < 10: the casts cannot truncate.
#[allow(clippy::cast_possible_truncation)]
const fn hex_table() -> [u8; 256] {
    let mut table = [0xffu8; 256];
    let mut i = 0;
    while i < 10 {
        table[b'0' as usize + i] = i as u8;
        i += 1;
    }
    let mut i = 0;
    while i < 6 {
        table[b'a' as usize + i] = 10 + i as u8;
        table[b'A' as usize + i] = 10 + i as u8;
        i += 1;
    }
    table
}

static HEX: [u8; 256] = hex_table();

/// Decodes `digits` (exactly `2 * out.len()` hex digits) into `out`;
/// `false` if one is not a hex digit.
pub(crate) fn decode_hex_into(digits: &[u8], out: &mut [u8]) -> bool {
    if digits.len() != 2 * out.len() {
        return false;
    }
    let mut bad = 0u8;
    for (pair, byte) in digits.chunks_exact(2).zip(out.iter_mut()) {
        let high = HEX[usize::from(pair[0])];
        let low = HEX[usize::from(pair[1])];
        bad |= (high | low) & 0xf0;
        *byte = (high << 4) | (low & 0x0f);
    }
    bad == 0
}

/// `text` without a leading `0x` or `0X`, and whether it had one.
fn strip_0x(text: &str) -> (&str, bool) {
    match text.as_bytes() {
        [b'0', b'x' | b'X', ..] => (&text[2..], true),
        _ => (text, false),
    }
}

fn invalid_hex(what: &'static str, text: &str) -> Problem {
    Problem::InvalidHex {
        what,
        text: shorten(text),
    }
}

/// An address as a genesis alloc key (`common.UnprefixedAddress`): `0x`
/// optional, exactly 40 hex digits.
pub(crate) fn address(text: &str, what: &'static str) -> Result<Address, Problem> {
    let (digits, _) = strip_0x(text);
    if !digits.len().is_multiple_of(2) {
        return Err(invalid_hex(what, text));
    }
    if digits.len() != 40 {
        return Err(Problem::WrongLength {
            what,
            expected: 40,
            actual: digits.len(),
        });
    }
    let mut out = [0u8; 20];
    if !decode_hex_into(digits.as_bytes(), &mut out) {
        return Err(invalid_hex(what, text));
    }
    Ok(Address::from(out))
}

/// Whether a genesis object key looks like an address rather than a field
/// name: a `0x` prefix, or 40 hex digits.
pub(crate) fn looks_like_address(text: &str) -> bool {
    let (digits, prefixed) = strip_0x(text);
    prefixed || (digits.len() == 40 && digits.bytes().all(|b| HEX[usize::from(b)] != 0xff))
}

/// Exactly 32 bytes as 64 hex digits, `0x` optional (dump hashes and
/// storage keys).
pub(crate) fn hash32(text: &str, what: &'static str) -> Result<[u8; 32], Problem> {
    let (digits, _) = strip_0x(text);
    if digits.len() != 64 {
        if !digits.len().is_multiple_of(2) {
            return Err(invalid_hex(what, text));
        }
        return Err(Problem::WrongLength {
            what,
            expected: 64,
            actual: digits.len(),
        });
    }
    let mut out = [0u8; 32];
    if !decode_hex_into(digits.as_bytes(), &mut out) {
        return Err(invalid_hex(what, text));
    }
    Ok(out)
}

/// Up to 32 bytes of hex, left-padded with zeros to 32 bytes: `strip`
/// decides which prefix is dropped first.
fn left_padded(digits: &str, text: &str, what: &'static str) -> Result<[u8; 32], Problem> {
    if digits.len() > 64 {
        return Err(Problem::WrongLength {
            what,
            expected: 64,
            actual: digits.len(),
        });
    }
    if !digits.len().is_multiple_of(2) {
        return Err(invalid_hex(what, text));
    }
    let mut out = [0u8; 32];
    let start = 32 - digits.len() / 2;
    if !decode_hex_into(digits.as_bytes(), &mut out[start..]) {
        return Err(invalid_hex(what, text));
    }
    Ok(out)
}

/// A genesis storage key or value (`storageJSON`): a lowercase `0x`
/// prefix optional, at most 64 hex digits (an even number), left-padded.
/// go-ethereum strips only `0x`, so `0X...` is not hex.
pub(crate) fn storage_word(text: &str, what: &'static str) -> Result<[u8; 32], Problem> {
    let digits = text.strip_prefix("0x").unwrap_or(text);
    left_padded(digits, text, what)
}

/// A dump storage value: hex of the value with leading zero bytes trimmed
/// (`0x` accepted), left-padded.
pub(crate) fn dump_storage_value(text: &str) -> Result<[u8; 32], Problem> {
    let (digits, _) = strip_0x(text);
    left_padded(digits, text, "storage value")
}

/// Arbitrary hex bytes with an optional `0x` (`prefix_required` makes it
/// required, as `hexutil.Bytes` does); an even number of digits.
pub(crate) fn hex_bytes(
    text: &str,
    prefix_required: bool,
    what: &'static str,
    out: &mut Vec<u8>,
) -> Result<(), Problem> {
    out.clear();
    if text.is_empty() {
        return Ok(());
    }
    let (digits, prefixed) = strip_0x(text);
    if (prefix_required && !prefixed) || !digits.len().is_multiple_of(2) {
        return Err(invalid_hex(what, text));
    }
    out.resize(digits.len() / 2, 0);
    if !decode_hex_into(digits.as_bytes(), out) {
        out.clear();
        return Err(invalid_hex(what, text));
    }
    Ok(())
}

/// A balance (`math.ParseBig256`): empty is zero; `0x`/`0X` then hex
/// digits, or decimal digits; an optional sign after the prefix, as Go's
/// `big.Int.SetString` takes. Negative values and values over 256 bits are
/// refused.
pub(crate) fn balance(text: &str) -> Result<U256, Problem> {
    let invalid = || Problem::InvalidNumber {
        what: "balance",
        text: shorten(text),
    };
    if text.is_empty() {
        return Ok(U256::ZERO);
    }
    let (body, hex) = strip_0x(text);
    let (digits, negative) = match body.as_bytes().first() {
        Some(b'+') => (&body[1..], false),
        Some(b'-') => (&body[1..], true),
        _ => (body, false),
    };
    if digits.is_empty() {
        return Err(invalid());
    }
    let radix: u64 = if hex { 16 } else { 10 };
    let mut value = U256::ZERO;
    let mut overflow = false;
    for byte in digits.bytes() {
        let digit = u64::from(HEX[usize::from(byte)]);
        if digit >= radix {
            return Err(invalid());
        }
        if !overflow {
            match value
                .checked_mul(U256::from(radix))
                .and_then(|v| v.checked_add(U256::from(digit)))
            {
                Some(next) => value = next,
                None => overflow = true,
            }
        }
    }
    if overflow {
        return Err(Problem::BalanceTooLarge);
    }
    if negative && !value.is_zero() {
        return Err(Problem::NegativeBalance);
    }
    Ok(value)
}

/// A nonce (`math.ParseUint64`): empty is zero; `0x`/`0X` then hex digits,
/// or decimal digits; no sign.
pub(crate) fn nonce(text: &str) -> Result<u64, Problem> {
    if text.is_empty() {
        return Ok(0);
    }
    let (digits, hex) = strip_0x(text);
    let radix: u64 = if hex { 16 } else { 10 };
    if digits.is_empty() {
        return Err(Problem::InvalidNumber {
            what: "nonce",
            text: shorten(text),
        });
    }
    let mut value = 0u64;
    let mut overflow = false;
    for byte in digits.bytes() {
        let digit = u64::from(HEX[usize::from(byte)]);
        if digit >= radix {
            return Err(Problem::InvalidNumber {
                what: "nonce",
                text: shorten(text),
            });
        }
        if !overflow {
            match value.checked_mul(radix).and_then(|v| v.checked_add(digit)) {
                Some(next) => value = next,
                None => overflow = true,
            }
        }
    }
    if overflow {
        return Err(Problem::NonceTooLarge);
    }
    Ok(value)
}

/// The text go-ethereum's `HexOrDecimal` `UnmarshalJSON` hands to its text
/// parser: the raw JSON value with its surrounding quotes cut off, escapes
/// left as they are.
pub(crate) fn unquote_raw(raw: &str) -> &str {
    let raw = raw.trim_matches([' ', '\t', '\n', '\r']);
    if raw.len() > 1 && raw.starts_with('"') && raw.ends_with('"') {
        &raw[1..raw.len() - 1]
    } else {
        raw
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn balances_follow_parse_big256() {
        assert_eq!(balance(""), Ok(U256::ZERO));
        assert_eq!(balance("0x10"), Ok(U256::from(16u8)));
        assert_eq!(balance("0X10"), Ok(U256::from(16u8)));
        assert_eq!(balance("0010"), Ok(U256::from(10u8)));
        assert_eq!(balance("+7"), Ok(U256::from(7u8)));
        assert_eq!(balance("-0"), Ok(U256::ZERO));
        assert_eq!(balance("-5"), Err(Problem::NegativeBalance));
        assert_eq!(balance("0x-5"), Err(Problem::NegativeBalance));
        assert!(matches!(balance("0x"), Err(Problem::InvalidNumber { .. })));
        assert!(matches!(
            balance("1e18"),
            Err(Problem::InvalidNumber { .. })
        ));
        assert!(matches!(
            balance("1_000"),
            Err(Problem::InvalidNumber { .. })
        ));
        assert!(matches!(
            balance("0xfg"),
            Err(Problem::InvalidNumber { .. })
        ));
        assert!(matches!(balance(" 1"), Err(Problem::InvalidNumber { .. })));
        let max = format!("0x{}", "f".repeat(64));
        assert_eq!(balance(&max), Ok(U256::MAX));
        let over = format!("0x1{}", "0".repeat(64));
        assert_eq!(balance(&over), Err(Problem::BalanceTooLarge));
        let leading_zeros = format!("0x{}1", "0".repeat(100));
        assert_eq!(balance(&leading_zeros), Ok(U256::from(1u8)));
        assert_eq!(
            balance(&U256::MAX.to_string()),
            Ok(U256::MAX),
            "decimal 2^256 - 1"
        );
    }

    #[test]
    fn nonces_follow_parse_uint64() {
        assert_eq!(nonce(""), Ok(0));
        assert_eq!(nonce("0x1f"), Ok(31));
        assert_eq!(nonce("18446744073709551615"), Ok(u64::MAX));
        assert_eq!(nonce("18446744073709551616"), Err(Problem::NonceTooLarge));
        assert_eq!(nonce("0x10000000000000000"), Err(Problem::NonceTooLarge));
        assert!(matches!(nonce("+1"), Err(Problem::InvalidNumber { .. })));
        assert!(matches!(nonce("0x"), Err(Problem::InvalidNumber { .. })));
        assert!(matches!(nonce("1.0"), Err(Problem::InvalidNumber { .. })));
    }

    #[test]
    fn storage_words_are_left_padded() {
        let one = storage_word("0x01", "storage key").unwrap_or_default();
        assert_eq!(one[31], 1);
        assert_eq!(one[..31], [0u8; 31]);
        assert_eq!(storage_word("", "storage key"), Ok([0u8; 32]));
        assert_eq!(storage_word("0x", "storage key"), Ok([0u8; 32]));
        assert_eq!(storage_word("01", "storage key").map(|w| w[31]), Ok(1));
        assert!(storage_word("0x1", "storage key").is_err(), "odd");
        assert!(
            storage_word("0X01", "storage key").is_err(),
            "0X is not stripped"
        );
        assert!(storage_word(&format!("0x{}", "1".repeat(66)), "storage key").is_err());
        assert!(storage_word("0xzz", "storage key").is_err());
    }

    #[test]
    fn addresses_take_an_optional_prefix() {
        let digits = "00112233445566778899aabbccddeeff00112233";
        let a = address(digits, "address");
        assert_eq!(a, address(&format!("0x{digits}"), "address"));
        assert_eq!(
            a,
            address(&format!("0X{}", digits.to_uppercase()), "address")
        );
        assert!(address(&digits[1..], "address").is_err());
        assert!(address(&format!("{digits}00"), "address").is_err());
        assert!(address("", "address").is_err());
        assert!(looks_like_address(digits));
        assert!(looks_like_address("0x12"));
        assert!(!looks_like_address("config"));
    }

    #[test]
    fn hex_bytes_and_raw_values() {
        let mut out = Vec::new();
        assert_eq!(hex_bytes("0x6001", true, "code", &mut out), Ok(()));
        assert_eq!(out, vec![0x60, 0x01]);
        assert!(hex_bytes("6001", true, "code", &mut out).is_err());
        assert!(hex_bytes("0x600", true, "code", &mut out).is_err());
        assert_eq!(hex_bytes("", true, "code", &mut out), Ok(()));
        assert!(out.is_empty());
        assert_eq!(unquote_raw("\"0x10\""), "0x10");
        assert_eq!(unquote_raw("16"), "16");
        assert_eq!(unquote_raw("\"\\u0030\""), "\\u0030");
    }
}
