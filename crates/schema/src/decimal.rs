//! Avro decimals: a big-endian two's-complement unscaled integer and a scale, written as the
//! exact decimal.

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

#[cfg(test)]
mod tests {
    use super::push_decimal;

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
}
