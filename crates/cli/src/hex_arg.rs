//! Strict hex parsing with messages that say what is wrong.
//!
//! Only `0x` followed by ASCII hex digits is accepted. Messages count
//! characters, not bytes (a full-width `１` is one character of three
//! bytes), and name the first character that is not a hex digit, with its
//! code point when it is not ASCII (look-alikes such as `０ｘ１２` then show
//! what they are). Control characters are printed escaped.

/// Decodes `0x`-prefixed hex of exactly `bytes` bytes; `what` names the field.
pub fn fixed_hex<const N: usize>(text: &str, what: &str) -> Result<[u8; N], String> {
    let digits = hex_digits(text, what)?;
    // `hex_digits` accepted ASCII digits only: bytes are characters here.
    if digits.len() != 2 * N {
        return Err(format!(
            "{what} must be {N} bytes ({} hex digits), got {} hex digit{}",
            2 * N,
            digits.len(),
            if digits.len() == 1 { "" } else { "s" }
        ));
    }
    let mut out = [0u8; N];
    for (byte, pair) in out.iter_mut().zip(digits.as_bytes().chunks_exact(2)) {
        *byte = hex_value(pair[0]) << 4 | hex_value(pair[1]);
    }
    Ok(out)
}

/// Decodes `0x`-prefixed hex of 1 to 64 digits as a 32-byte big-endian number.
pub fn number_hex(text: &str, what: &str) -> Result<[u8; 32], String> {
    let digits = hex_digits(text, what)?;
    if digits.is_empty() || digits.len() > 64 {
        return Err(format!(
            "{what} must have 1 to 64 hex digits, got {}",
            digits.len()
        ));
    }
    let padded = format!("{digits:0>64}");
    fixed_hex::<32>(&format!("0x{padded}"), what)
}

/// The digits after `0x`, checked to be ASCII hex digits (0-9, a-f, A-F):
/// else a message naming the first other character and its position.
fn hex_digits<'a>(text: &'a str, what: &str) -> Result<&'a str, String> {
    let Some(digits) = text.strip_prefix("0x") else {
        if text.is_empty() {
            return Err(format!("{what} must start with 0x, but it is empty"));
        }
        let start: String = text.chars().take(2).collect();
        let shown: Vec<String> = start.chars().map(describe_char).collect();
        return Err(format!(
            "{what} must start with 0x, not {}",
            shown.join(" then ")
        ));
    };
    // `char::is_ascii_hexdigit`: no sign, no full-width or other digits.
    if let Some((index, c)) = digits
        .chars()
        .enumerate()
        .find(|(_, c)| !c.is_ascii_hexdigit())
    {
        return Err(format!(
            "invalid hex in {what}: character {} after 0x is {}, not a hex digit (0-9, a-f, A-F)",
            index + 1,
            describe_char(c)
        ));
    }
    Ok(digits)
}

/// A character for a message: quoted and escaped as Rust writes it, with
/// its code point when it is not ASCII (`'１' (U+FF11)`).
fn describe_char(c: char) -> String {
    if c.is_ascii() {
        format!("{c:?}")
    } else {
        format!("{c:?} (U+{:04X})", u32::from(c))
    }
}

/// The value of an ASCII hex digit (checked before).
fn hex_value(byte: u8) -> u8 {
    match byte {
        b'0'..=b'9' => byte - b'0',
        b'a'..=b'f' => byte - b'a' + 10,
        b'A'..=b'F' => byte - b'A' + 10,
        _ => 0,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn look_alike_digits_are_named_and_counted_as_characters() {
        let full_width = format!("0x{}", "１".repeat(40));
        let err = fixed_hex::<20>(&full_width, "--address").unwrap_err();
        assert!(err.contains("'１' (U+FF11)"), "{err}");
        assert!(err.contains("character 1 after 0x"), "{err}");
        let err = fixed_hex::<32>("０ｘ12", "key").unwrap_err();
        assert!(
            err.contains("must start with 0x, not '０' (U+FF10) then 'ｘ' (U+FF58)"),
            "{err}"
        );
        let err = fixed_hex::<32>("0x12\n", "key").unwrap_err();
        assert!(err.contains("character 3 after 0x is '\\n'"), "{err}");
        let err = number_hex("0xé", "--slot").unwrap_err();
        assert!(err.contains("'é' (U+00E9)"), "{err}");
    }

    #[test]
    fn lengths_and_values() {
        assert_eq!(fixed_hex::<2>("0xAbcD", "x"), Ok([0xab, 0xcd]));
        let err = fixed_hex::<2>("0xabc", "x").unwrap_err();
        assert_eq!(err, "x must be 2 bytes (4 hex digits), got 3 hex digits");
        assert!(fixed_hex::<2>("", "x").unwrap_err().contains("empty"));
        assert_eq!(number_hex("0x1", "s").map(|b| b[31]), Ok(1));
        assert!(number_hex("0x", "s").unwrap_err().contains("got 0"));
    }
}
