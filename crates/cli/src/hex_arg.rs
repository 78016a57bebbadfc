//! Strict hex parsing with messages that say what is wrong.

/// Decodes `0x`-prefixed hex of exactly `bytes` bytes; `what` names the field.
pub fn fixed_hex<const N: usize>(text: &str, what: &str) -> Result<[u8; N], String> {
    let digits = text
        .strip_prefix("0x")
        .ok_or_else(|| format!("{what} must start with 0x"))?;
    if digits.len() != 2 * N {
        return Err(format!(
            "{what} must be {N} bytes ({} hex digits), got {} hex digits",
            2 * N,
            digits.len()
        ));
    }
    // Byte-wise: the text may hold multi-byte characters, and
    // `from_str_radix` would accept a sign.
    let mut out = [0u8; N];
    for (byte, pair) in out.iter_mut().zip(digits.as_bytes().chunks_exact(2)) {
        match (hex_digit(pair[0]), hex_digit(pair[1])) {
            (Some(high), Some(low)) => *byte = high << 4 | low,
            _ => return Err(format!("invalid hex in {what}")),
        }
    }
    Ok(out)
}

/// The value of one ASCII hex digit.
fn hex_digit(byte: u8) -> Option<u8> {
    char::from(byte).to_digit(16).map(|d| d as u8)
}

/// Decodes `0x`-prefixed hex of 1 to 64 digits as a 32-byte big-endian number.
pub fn number_hex(text: &str, what: &str) -> Result<[u8; 32], String> {
    let digits = text
        .strip_prefix("0x")
        .ok_or_else(|| format!("{what} must start with 0x"))?;
    if digits.is_empty() || digits.len() > 64 {
        return Err(format!(
            "{what} must have 1 to 64 hex digits, got {}",
            digits.len()
        ));
    }
    if !digits.bytes().all(|b| b.is_ascii_hexdigit()) {
        return Err(format!("invalid hex in {what}"));
    }
    let padded = format!("{digits:0>64}");
    fixed_hex::<32>(&format!("0x{padded}"), what)
}
