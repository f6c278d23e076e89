//! Avro decimals: a big-endian two's-complement unscaled integer and a scale, written as the
//! exact decimal, and read back from it.

/// Most digits read in a decimal's text (far above any precision a schema uses; a bound on
/// the work per value).
const MAX_DIGITS: usize = 1 << 12;

/// Appends the decimal `unscaled × 10^-scale` with exactly `scale` fraction digits
/// (`-12.30`), no exponent, no quotes.
pub(crate) fn push_decimal(out: &mut Vec<u8>, unscaled: &[u8], scale: usize) {
    let negative = unscaled.first().is_some_and(|&byte| byte & 0x80 != 0);
    let digits = if unscaled.len() <= 16 {
        small_digits(unscaled, negative)
    } else {
        large_digits(unscaled, negative)
    };
    if negative {
        out.push(b'-');
    }
    if scale == 0 {
        out.extend_from_slice(digits.as_bytes());
        return;
    }
    if digits.len() <= scale {
        out.extend_from_slice(b"0.");
        out.extend(std::iter::repeat_n(b'0', scale - digits.len()));
        out.extend_from_slice(digits.as_bytes());
    } else {
        let (whole, fraction) = digits.split_at(digits.len() - scale);
        out.extend_from_slice(whole.as_bytes());
        out.push(b'.');
        out.extend_from_slice(fraction.as_bytes());
    }
}

/// The magnitude's decimal digits when it fits an `i128`.
fn small_digits(unscaled: &[u8], negative: bool) -> String {
    let mut value: i128 = if negative { -1 } else { 0 };
    for &byte in unscaled {
        value = (value << 8) | i128::from(byte);
    }
    value.unsigned_abs().to_string()
}

/// The magnitude's decimal digits by long division in base 10^9.
fn large_digits(unscaled: &[u8], negative: bool) -> String {
    let mut magnitude = unscaled.to_vec();
    if negative {
        // Two's complement: invert, add one.
        let mut carry = true;
        for byte in magnitude.iter_mut().rev() {
            *byte = !*byte;
            if carry {
                let (sum, overflow) = byte.overflowing_add(1);
                *byte = sum;
                carry = overflow;
            }
        }
    }
    let mut chunks = Vec::new();
    while magnitude.iter().any(|&byte| byte != 0) {
        let mut remainder: u64 = 0;
        for byte in magnitude.iter_mut() {
            let current = (remainder << 8) | u64::from(*byte);
            *byte = (current / 1_000_000_000) as u8;
            remainder = current % 1_000_000_000;
        }
        chunks.push(remainder);
    }
    let Some((last, rest)) = chunks.split_last() else {
        return "0".into();
    };
    let mut text = last.to_string();
    for chunk in rest.iter().rev() {
        text.push_str(&format!("{chunk:09}"));
    }
    text
}

/// The unscaled integer of the decimal `text` (`-12.3`, at most `scale` fraction digits) as
/// big-endian two's complement: the fewest bytes that hold it (as Java's
/// `BigInteger.toByteArray`), or sign-extended to `size` bytes for a `fixed`.
pub(crate) fn unscaled_bytes(
    text: &str,
    scale: usize,
    size: Option<usize>,
) -> Result<Vec<u8>, String> {
    let (negative, unsigned) = match text.strip_prefix('-') {
        Some(rest) => (true, rest),
        None => (false, text),
    };
    let (whole, fraction) = unsigned.split_once('.').unwrap_or((unsigned, ""));
    let digits_only = |part: &str| part.bytes().all(|b| b.is_ascii_digit());
    if whole.is_empty() || !digits_only(whole) || !digits_only(fraction) {
        return Err("expected a decimal such as \"-12.30\"".into());
    }
    if unsigned.ends_with('.') || fraction.len() > scale {
        return Err(format!("expected at most {scale} fraction digits"));
    }
    if whole.len() + scale > MAX_DIGITS {
        return Err(format!("more than {MAX_DIGITS} digits"));
    }
    // The magnitude in base 256, big-endian, digit by digit.
    let mut magnitude: Vec<u8> = Vec::new();
    let padding = std::iter::repeat_n(b'0', scale - fraction.len());
    for digit in whole.bytes().chain(fraction.bytes()).chain(padding) {
        let mut carry = u32::from(digit - b'0');
        for byte in magnitude.iter_mut().rev() {
            let product = u32::from(*byte) * 10 + carry;
            *byte = product as u8;
            carry = product >> 8;
        }
        if carry > 0 {
            magnitude.insert(0, carry as u8);
        }
    }
    let mut bytes = twos_complement(magnitude, negative);
    match size {
        None => Ok(bytes),
        Some(size) if bytes.len() <= size => {
            let fill = if bytes[0] & 0x80 != 0 { 0xff } else { 0 };
            bytes.splice(0..0, std::iter::repeat_n(fill, size - bytes.len()));
            Ok(bytes)
        }
        Some(size) => Err(format!("does not fit {size} bytes")),
    }
}

/// The fewest big-endian two's-complement bytes of the magnitude (big-endian, no leading
/// zeros), negated when `negative`; one byte for zero.
fn twos_complement(magnitude: Vec<u8>, negative: bool) -> Vec<u8> {
    let mut bytes = magnitude;
    bytes.insert(0, 0);
    if negative {
        let mut carry = true;
        for byte in bytes.iter_mut().rev() {
            *byte = !*byte;
            if carry {
                let (sum, overflow) = byte.overflowing_add(1);
                *byte = sum;
                carry = overflow;
            }
        }
    }
    // A leading byte is redundant when it only repeats the sign of the next one.
    let redundant = bytes
        .windows(2)
        .take_while(|pair| {
            (pair[0] == 0 && pair[1] & 0x80 == 0) || (pair[0] == 0xff && pair[1] & 0x80 != 0)
        })
        .count();
    bytes.drain(..redundant);
    bytes
}

#[cfg(test)]
mod tests {
    use super::{push_decimal, unscaled_bytes};

    fn text(unscaled: &[u8], scale: usize) -> String {
        let mut out = Vec::new();
        push_decimal(&mut out, unscaled, scale);
        String::from_utf8(out).unwrap()
    }

    #[test]
    fn small_and_large_unscaled_values() {
        assert_eq!(text(&[0x04, 0xd2], 2), "12.34");
        assert_eq!(text(&[0xfb, 0x2e], 2), "-12.34");
        assert_eq!(text(&[0x01], 4), "0.0001");
        assert_eq!(text(&[], 0), "0");
        assert_eq!(text(&[0x00, 0x00], 3), "0.000");
        let mut big = vec![0u8; 20];
        big[0] = 0x01; // 2^152
        let expected = "5708990770823839524233143877797980545530986496";
        assert_eq!(text(&big, 0), expected);
        let negative: Vec<u8> = big.iter().map(|b| !b).collect(); // -(2^152) - 1
        assert_eq!(
            text(&negative, 0),
            "-5708990770823839524233143877797980545530986497"
        );
        assert_eq!(text(&big, 46), format!("0.{expected}"));
    }

    #[test]
    fn decimals_read_back_to_the_fewest_bytes() {
        let bytes = |text: &str, scale| unscaled_bytes(text, scale, None).unwrap();
        assert_eq!(bytes("12.34", 2), [0x04, 0xd2]);
        assert_eq!(bytes("-12.34", 2), [0xfb, 0x2e]);
        assert_eq!(bytes("-12.3", 2), [0xfb, 0x32]);
        assert_eq!(bytes("0", 0), [0]);
        assert_eq!(bytes("-0.00", 2), [0]);
        assert_eq!(bytes("1.27", 2), [0x7f]);
        assert_eq!(bytes("1.28", 2), [0x00, 0x80]);
        assert_eq!(bytes("-1.28", 2), [0x80]);
        assert_eq!(bytes("-1.29", 2), [0xff, 0x7f]);
        assert_eq!(
            unscaled_bytes("-1", 0, Some(3)).unwrap(),
            [0xff, 0xff, 0xff]
        );
        assert_eq!(unscaled_bytes("1", 0, Some(2)).unwrap(), [0, 1]);
        assert!(unscaled_bytes("128", 0, Some(1)).is_err());
        for bad in ["", "-", "1.", ".5", "1.234", "1e3", "+1", "1,0", " 1"] {
            assert!(unscaled_bytes(bad, 2, None).is_err(), "{bad:?}");
        }
        // What push_decimal writes reads back to the same bytes, large ones too.
        let mut big = vec![0x01u8];
        big.extend([0u8; 19]);
        let negative: Vec<u8> = big.iter().map(|b| !b).collect();
        for (unscaled, scale) in [(&big[..], 46), (&negative[..], 3), (&[0xfb, 0x2e][..], 2)] {
            let mut text = Vec::new();
            push_decimal(&mut text, unscaled, scale);
            let text = String::from_utf8(text).unwrap();
            assert_eq!(unscaled_bytes(&text, scale, None).unwrap(), unscaled);
        }
    }
}
