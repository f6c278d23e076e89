//! Writing JSON text straight into an output buffer: strings, floats, bytes.

use base64::Engine as _;

/// Bytes a JSON string cannot hold as they are: controls, DEL (escaped for terminals), `"`, `\`.
const NEEDS_ESCAPE: [bool; 256] = {
    let mut table = [false; 256];
    let mut byte = 0;
    while byte < 0x20 {
        table[byte] = true;
        byte += 1;
    }
    table[0x7f] = true;
    table[b'"' as usize] = true;
    table[b'\\' as usize] = true;
    table
};

/// Appends `text` as a JSON string, quotes included.
pub(crate) fn push_str(out: &mut Vec<u8>, text: &str) {
    let bytes = text.as_bytes();
    if is_plain_ascii(bytes) || !bytes.iter().any(|&byte| NEEDS_ESCAPE[usize::from(byte)]) {
        push_quoted(out, bytes);
    } else {
        push_escaped(out, bytes);
    }
}

/// Appends `bytes` as a JSON string if they are UTF-8; `false` (and nothing written) if not.
pub(crate) fn push_utf8(out: &mut Vec<u8>, bytes: &[u8]) -> bool {
    // Most strings are ASCII needing no escape: one word-wide scan proves both, one copy.
    if is_plain_ascii(bytes) {
        push_quoted(out, bytes);
        return true;
    }
    match std::str::from_utf8(bytes) {
        Ok(text) => {
            push_str(out, text);
            true
        }
        Err(_) => false,
    }
}

fn push_quoted(out: &mut Vec<u8>, bytes: &[u8]) {
    out.reserve(bytes.len() + 2);
    out.push(b'"');
    out.extend_from_slice(bytes);
    out.push(b'"');
}

/// Whether every byte is printable ASCII other than `"` and `\`, eight bytes at a time.
fn is_plain_ascii(bytes: &[u8]) -> bool {
    const ONES: u64 = u64::from_ne_bytes([0x01; 8]);
    const HIGHS: u64 = u64::from_ne_bytes([0x80; 8]);
    // A byte's high bit is set in `has_zero(x)` iff that byte of x is zero (exact when no
    // byte of x has its high bit set, which `word & HIGHS` rules out first).
    let has_zero = |x: u64| x.wrapping_sub(ONES) & !x & HIGHS;
    let plain_word = |word: u64| {
        let below_space = word.wrapping_sub(ONES * 0x20) & !word & HIGHS;
        (word & HIGHS) == 0
            && below_space == 0
            && has_zero(word ^ (ONES * u64::from(b'"'))) == 0
            && has_zero(word ^ (ONES * u64::from(b'\\'))) == 0
            && has_zero(word ^ (ONES * 0x7f)) == 0
    };
    let mut chunks = bytes.chunks_exact(8);
    let words_plain = chunks.all(|chunk| {
        let mut word = [0; 8];
        word.copy_from_slice(chunk);
        plain_word(u64::from_ne_bytes(word))
    });
    words_plain
        && chunks
            .remainder()
            .iter()
            .all(|&byte| (0x20..0x7f).contains(&byte) && byte != b'"' && byte != b'\\')
}

fn push_escaped(out: &mut Vec<u8>, bytes: &[u8]) {
    out.push(b'"');
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
    use super::{
        is_plain_ascii, push_base64, push_f32, push_f64, push_str, push_utf8, NEEDS_ESCAPE,
    };

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
    fn the_word_scan_agrees_with_the_byte_table_on_every_byte_in_every_lane() {
        for byte in 0..=255u8 {
            let plain = byte.is_ascii() && !NEEDS_ESCAPE[usize::from(byte)];
            for len in [1, 7, 8, 9, 16, 17] {
                for at in 0..len {
                    let mut bytes = vec![b'a'; len];
                    bytes[at] = byte;
                    assert_eq!(
                        is_plain_ascii(&bytes),
                        plain,
                        "byte {byte:#x} at {at} of {len}"
                    );
                }
            }
        }
        let mut out = Vec::new();
        assert!(!push_utf8(&mut out, b"ab\xffcd"));
        assert!(out.is_empty());
        assert!(push_utf8(&mut out, "é\"".as_bytes()));
        assert_eq!(out, "\"é\\\"\"".as_bytes());
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
