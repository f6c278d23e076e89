//! Writing JSON text straight into an output buffer: strings, floats, bytes.

use base64::Engine as _;

/// Appends `text` as a JSON string, quotes included.
pub(crate) fn push_str(out: &mut Vec<u8>, text: &str) {
    out.push(b'"');
    let bytes = text.as_bytes();
    let mut start = 0;
    for (i, &byte) in bytes.iter().enumerate() {
        let escape: &[u8] = match byte {
            b'"' => b"\\\"",
            b'\\' => b"\\\\",
            b'\n' => b"\\n",
            b'\r' => b"\\r",
            b'\t' => b"\\t",
            0..=0x1f | 0x7f => b"",
            _ => continue,
        };
        out.extend_from_slice(&bytes[start..i]);
        if escape.is_empty() {
            out.extend_from_slice(format!("\\u{byte:04x}").as_bytes());
        } else {
            out.extend_from_slice(escape);
        }
        start = i + 1;
    }
    out.extend_from_slice(&bytes[start..]);
    out.push(b'"');
}

/// Appends a double: the shortest text that reads back to it, or `"NaN"`, `"Infinity"`,
/// `"-Infinity"` (JSON has no such numbers; proto3 JSON writes them so).
pub(crate) fn push_f64(out: &mut Vec<u8>, value: f64) {
    if value.is_finite() {
        out.extend_from_slice(ryu::Buffer::new().format_finite(value).as_bytes());
    } else {
        push_non_finite(out, value.is_nan(), value > 0.0);
    }
}

/// Appends a float as the shortest text that reads back to the same 32-bit float.
pub(crate) fn push_f32(out: &mut Vec<u8>, value: f32) {
    if value.is_finite() {
        out.extend_from_slice(ryu::Buffer::new().format_finite(value).as_bytes());
    } else {
        push_non_finite(out, value.is_nan(), value > 0.0);
    }
}

fn push_non_finite(out: &mut Vec<u8>, nan: bool, positive: bool) {
    out.extend_from_slice(match (nan, positive) {
        (true, _) => b"\"NaN\"",
        (false, true) => b"\"Infinity\"",
        (false, false) => b"\"-Infinity\"",
    });
}

/// Appends bytes as a JSON string of their standard, padded base64.
pub(crate) fn push_base64(out: &mut Vec<u8>, bytes: &[u8]) {
    out.push(b'"');
    let start = out.len();
    out.resize(
        start + base64::encoded_len(bytes.len(), true).unwrap_or(0),
        0,
    );
    let written = base64::engine::general_purpose::STANDARD
        .encode_slice(bytes, &mut out[start..])
        .unwrap_or(0);
    out.truncate(start + written);
    out.push(b'"');
}

#[cfg(test)]
mod tests {
    use super::{push_base64, push_f32, push_f64, push_str};

    fn text(write: impl FnOnce(&mut Vec<u8>)) -> String {
        let mut out = Vec::new();
        write(&mut out);
        String::from_utf8(out).unwrap()
    }

    #[test]
    fn strings_escape_what_json_requires() {
        let written = text(|out| push_str(out, "a\"b\\c\nd\u{1}é"));
        assert_eq!(written, r#""a\"b\\c\nd\u0001é""#);
        assert_eq!(
            serde_json::from_str::<String>(&written).unwrap(),
            "a\"b\\c\nd\u{1}é"
        );
    }

    #[test]
    fn numbers_and_bytes() {
        assert_eq!(text(|out| push_f64(out, 0.1)), "0.1");
        assert_eq!(text(|out| push_f32(out, 0.1)), "0.1");
        assert_eq!(
            text(|out| push_f64(out, f64::NEG_INFINITY)),
            "\"-Infinity\""
        );
        assert_eq!(text(|out| push_f32(out, f32::NAN)), "\"NaN\"");
        assert_eq!(text(|out| push_base64(out, b"\xff\x00a")), "\"/wBh\"");
    }
}
