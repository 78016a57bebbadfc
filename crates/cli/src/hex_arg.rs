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
    let mut out = [0u8; N];
    for (i, byte) in out.iter_mut().enumerate() {
        *byte = u8::from_str_radix(&digits[2 * i..2 * i + 2], 16)
            .map_err(|_| format!("invalid hex in {what}"))?;
    }
    Ok(out)
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
