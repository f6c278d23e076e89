//! JSON string escaping and the lossless encoding of byte strings.

use super::base64;

/// For each byte: 0 = copy as is, otherwise the character after the backslash
/// (`u` meaning `\u00XX`). JSON requires escaping `"`, `\` and bytes below 0x20;
/// everything else, including multi-byte UTF-8, is copied unchanged.
static ESCAPE: [u8; 256] = {
    let mut table = [0u8; 256];
    let mut i = 0;
    while i < 0x20 {
        table[i] = b'u';
        i += 1;
    }
    table[0x08] = b'b';
    table[0x09] = b't';
    table[0x0a] = b'n';
    table[0x0c] = b'f';
    table[0x0d] = b'r';
    table[b'"' as usize] = b'"';
    table[b'\\' as usize] = b'\\';
    table
};

const HEX_DIGITS: &[u8; 16] = b"0123456789abcdef";

/// Bytes each input byte adds to the output beyond itself: 0, 1 (`\n`, `\"`, ...) or 5
/// (`\u00XX`).
static EXTRA: [u8; 256] = {
    let mut table = [0u8; 256];
    let mut i = 0;
    while i < 256 {
        table[i] = match ESCAPE[i] {
            0 => 0,
            b'u' => 5,
            _ => 1,
        };
        i += 1;
    }
    table
};

/// Appends `text` as a quoted JSON string.
///
/// Text with nothing to escape is found eight bytes per step and copied in one
/// `extend_from_slice`. Text with escapes (JSON payloads are full of `"`) is
/// sized first, then written into the grown buffer: eight bytes per store where
/// a word needs no escape, byte by byte without branches where it does (see
/// [`put_escaped`]). Copying each run between escapes on its own took a
/// `memcpy` call and a branch per escape, and where the escapes fall differs
/// from record to record, so that branch was mispredicted: it was half of
/// `krec decode`'s JSON time on JSON values.
pub(crate) fn push_json_str(out: &mut Vec<u8>, text: &str) {
    let bytes = text.as_bytes();
    match find_escape(bytes).0 {
        None => push_quoted(out, bytes),
        Some(first) => {
            let (extra, _) = size_escapes(&bytes[first..]);
            push_escaped(out, bytes, first, extra);
        }
    }
}

/// `bytes`, which need no escape, in quotes.
#[inline(always)]
fn push_quoted(out: &mut Vec<u8>, bytes: &[u8]) {
    out.reserve(bytes.len() + 2);
    out.push(b'"');
    out.extend_from_slice(bytes);
    out.push(b'"');
}

/// Bytes the escapes in `rest` add (see [`EXTRA`]), and the OR of its bytes (the high bit
/// set means `rest` is not all ASCII).
#[inline(always)]
fn size_escapes(rest: &[u8]) -> (usize, u8) {
    rest.iter().fold((0, 0), |(extra, seen), &byte| {
        (extra + usize::from(EXTRA[byte as usize]), seen | byte)
    })
}

/// `bytes` in quotes, escaped; `first` is where the first escape is and `extra` what the
/// escapes add (from [`size_escapes`]).
#[inline(always)]
fn push_escaped(out: &mut Vec<u8>, bytes: &[u8], first: usize, extra: usize) {
    let (plain, rest) = bytes.split_at(first);
    let start = out.len();
    out.resize(start + bytes.len() + extra + 2, 0);
    let buf = &mut out[start..];
    buf[0] = b'"';
    buf[1..1 + first].copy_from_slice(plain);
    let mut at = 1 + first;
    let mut words = rest.chunks_exact(8);
    for word in &mut words {
        if needs_escape(u64::from_ne_bytes(word.try_into().expect("8-byte chunk"))) {
            for &byte in word {
                at = put_escaped(buf, at, byte);
            }
        } else {
            buf[at..at + 8].copy_from_slice(word);
            at += 8;
        }
    }
    for &byte in words.remainder() {
        at = put_escaped(buf, at, byte);
    }
    // The sizing pass and this one agree, so exactly the closing quote is left.
    buf[at] = b'"';
    debug_assert_eq!(at + 1, buf.len());
}

/// Writes `byte` at `at`, escaped if JSON requires it; returns the next position.
///
/// Without branches on the common path: where the escapes in JSON text fall is random, and a
/// mispredicted branch per `"` cost more than the copying. Both candidate bytes are written
/// and the position moves by one or two. The second byte may land on the next output byte's
/// place (overwritten by it) or on the closing quote's (written last), never past the buffer.
#[inline(always)]
fn put_escaped(buf: &mut [u8], at: usize, byte: u8) -> usize {
    let escape = ESCAPE[byte as usize];
    if escape == b'u' {
        buf[at..at + 6].copy_from_slice(&[
            b'\\',
            b'u',
            b'0',
            b'0',
            HEX_DIGITS[(byte >> 4) as usize],
            HEX_DIGITS[(byte & 0xf) as usize],
        ]);
        return at + 6;
    }
    buf[at] = FIRST_OUT[byte as usize];
    buf[at + 1] = escape;
    at + 1 + usize::from(escape != 0)
}

/// The first output byte for each input byte: a backslash where JSON requires an escape, the
/// byte itself otherwise.
static FIRST_OUT: [u8; 256] = {
    let mut table = [0u8; 256];
    let mut i = 0;
    while i < 256 {
        table[i] = if ESCAPE[i] == 0 { i as u8 } else { b'\\' };
        i += 1;
    }
    table
};

const ONES: u64 = u64::from_ne_bytes([0x01; 8]);
const HIGH_BITS: u64 = u64::from_ne_bytes([0x80; 8]);

/// True when some byte of `word` is zero (exact: borrows only propagate above
/// a zero byte, so a word without zero bytes never reports one).
#[inline(always)]
fn has_zero_byte(word: u64) -> bool {
    word.wrapping_sub(ONES) & !word & HIGH_BITS != 0
}

/// True when some byte of `word` needs a JSON escape: below 0x20, `"` or `\`.
#[inline(always)]
fn needs_escape(word: u64) -> bool {
    // Bytes below 0x20: the same borrow trick with 0x20 instead of 0x01; bytes
    // with the high bit set are excluded by `!word`.
    let control = word.wrapping_sub(ONES * 0x20) & !word & HIGH_BITS != 0;
    control
        || has_zero_byte(word ^ (ONES * u64::from(b'"')))
        || has_zero_byte(word ^ (ONES * u64::from(b'\\')))
}

/// Position of the first byte that needs an escape, and the OR of every byte before it (at
/// least; a few after it may be in too).
#[inline(always)]
fn find_escape(bytes: &[u8]) -> (Option<usize>, u64) {
    let mut at = 0;
    let mut seen = 0;
    #[cfg(target_arch = "x86_64")]
    {
        let mut seen_lanes = [0u8; 16];
        while let Some(chunk) = bytes.get(at..at + 16) {
            let chunk: &[u8; 16] = chunk.try_into().expect("16-byte chunk");
            by16::or_into(&mut seen_lanes, chunk);
            if by16::needs_escape(chunk) {
                // The eight-byte steps below find the byte; a byte-by-byte search of these 16
                // was slower end to end.
                break;
            }
            at += 16;
        }
        seen |= seen_lanes
            .iter()
            .fold(0, |seen, &lane| seen | u64::from(lane));
    }
    while let Some(chunk) = bytes.get(at..at + 8) {
        let word = u64::from_ne_bytes(chunk.try_into().expect("8-byte chunk"));
        seen |= word;
        if needs_escape(word) {
            // Within the flagged word, find the exact byte.
            let offset = chunk.iter().position(|&byte| ESCAPE[byte as usize] != 0);
            return (offset.map(|offset| at + offset), seen);
        }
        at += 8;
    }
    for (offset, &byte) in bytes[at..].iter().enumerate() {
        if ESCAPE[byte as usize] != 0 {
            return (Some(at + offset), seen);
        }
        seen |= u64::from(byte);
    }
    (None, seen)
}

/// Sixteen bytes per step, written so that the compiler makes SSE2 compares of it (no
/// `unsafe`, and portable). It needs fewer instructions per byte than the eight-byte word scan
/// in `find_escape`, which is kept for the tail and other targets (BENCHMARKS.md, JSON output).
#[cfg(target_arch = "x86_64")]
mod by16 {
    /// Whether some byte of `chunk` needs a JSON escape (below 0x20, `"` or `\\`).
    #[inline(always)]
    pub(super) fn needs_escape(chunk: &[u8; 16]) -> bool {
        chunk.iter().fold(false, |any, &byte| {
            any | (byte < 0x20) | (byte == b'"') | (byte == b'\\')
        })
    }

    /// `seen` with the bytes of `chunk` ORed in, lane by lane (one vector OR).
    #[inline(always)]
    pub(super) fn or_into(seen: &mut [u8; 16], chunk: &[u8; 16]) {
        for (lane, &byte) in seen.iter_mut().zip(chunk) {
            *lane |= byte;
        }
    }
}

/// Appends a key, value or header as JSON under krec's lossless scheme:
/// `null` for a null field, a JSON string when the bytes are valid UTF-8, and
/// otherwise an object `{"base64":"..."}` holding the exact bytes.
///
/// ASCII is valid UTF-8, so the escape scan notes whether any byte has its high bit set, and
/// only then are the bytes validated as UTF-8: for ASCII text (most keys and values) that
/// saves a separate validating pass (see BENCHMARKS.md, JSON output).
pub(crate) fn push_json_bytes(out: &mut Vec<u8>, bytes: Option<&[u8]>) {
    let Some(bytes) = bytes else {
        out.extend_from_slice(b"null");
        return;
    };
    let (first, seen) = find_escape(bytes);
    let (extra, seen) = match first {
        Some(first) => {
            let (extra, rest_seen) = size_escapes(&bytes[first..]);
            (extra, seen | u64::from(rest_seen))
        }
        None => (0, seen),
    };
    if seen & HIGH_BITS != 0 && std::str::from_utf8(bytes).is_err() {
        out.extend_from_slice(b"{\"base64\":\"");
        base64::encode_into(out, bytes);
        out.extend_from_slice(b"\"}");
        return;
    }
    match first {
        None => push_quoted(out, bytes),
        Some(first) => push_escaped(out, bytes, first, extra),
    }
}

#[cfg(test)]
mod tests {
    use super::{push_json_bytes, push_json_str};
    use base64::Engine as _;
    use proptest::strategy::Strategy as _;

    fn json_str(text: &str) -> String {
        let mut out = Vec::new();
        push_json_str(&mut out, text);
        String::from_utf8(out).expect("escaped JSON is UTF-8")
    }

    fn json_bytes(bytes: Option<&[u8]>) -> String {
        let mut out = Vec::new();
        push_json_bytes(&mut out, bytes);
        String::from_utf8(out).expect("JSON output is UTF-8")
    }

    #[test]
    fn escapes_exactly_what_json_requires() {
        let cases = [
            ("", r#""""#),
            ("plain ascii", r#""plain ascii""#),
            ("say \"hi\"", r#""say \"hi\"""#),
            ("back\\slash", r#""back\\slash""#),
            ("a\nb\rc\td", r#""a\nb\rc\td""#),
            ("\u{8}\u{c}", r#""\b\f""#),
            ("\u{0}\u{1}\u{1f}", r#""\u0000\u0001\u001f""#),
            ("\u{7f}", "\"\u{7f}\""),
            ("/ stays", r#""/ stays""#),
            ("héllo wörld ✓ 🦀", "\"héllo wörld ✓ 🦀\""),
            ("\"", r#""\"""#),
            ("end\\", r#""end\\""#),
        ];
        for (input, expected) in cases {
            assert_eq!(json_str(input), expected, "input {input:?}");
        }
    }

    #[test]
    fn every_single_char_round_trips_through_a_json_parser() {
        for code in (0u32..0x800).chain([0xfffd, 0x10ffff]) {
            let Some(c) = char::from_u32(code) else {
                continue;
            };
            let text = format!("a{c}b{c}");
            let parsed: String = serde_json::from_str(&json_str(&text)).expect("valid JSON");
            assert_eq!(parsed, text, "code point {code:#x}");
        }
    }

    #[test]
    fn an_escape_is_found_at_every_position_of_a_long_string() {
        for special in [b'"', b'\\', b'\n', 0x00, 0x1f] {
            for position in 0..40 {
                let mut bytes = vec![b'a'; 40];
                bytes[position] = special;
                // Non-ASCII and 0x7f neighbours must not be mistaken for escapes.
                let text = format!("\u{7f}é{}", String::from_utf8(bytes).expect("ASCII"));
                let escaped = json_str(&text);
                let parsed: String = serde_json::from_str(&escaped).expect("valid JSON");
                assert_eq!(parsed, text, "byte {special:#x} at {position}");
                let extra = if special < 0x20 && special != b'\n' {
                    5
                } else {
                    1
                };
                assert_eq!(
                    escaped.len(),
                    text.len() + 2 + extra,
                    "byte {special:#x} at {position}"
                );
            }
        }
    }

    proptest::proptest! {
        #[test]
        fn any_string_round_trips_through_a_json_parser(text in "(?s).{0,80}") {
            let parsed: String = serde_json::from_str(&json_str(&text)).expect("valid JSON");
            proptest::prop_assert_eq!(parsed, text);
        }

        #[test]
        fn ascii_with_escapes_round_trips(bytes in proptest::collection::vec(0u8..0x80, 0..300)) {
            let text = String::from_utf8(bytes).expect("ASCII");
            let escaped = json_str(&text);
            let parsed: String = serde_json::from_str(&escaped).expect("valid JSON");
            proptest::prop_assert_eq!(&parsed, &text);
            // Only what must be escaped is: printable ASCII other than `"` and `\` stays.
            let expected_len: usize = text.bytes().map(|b| match b {
                b'"' | b'\\' | b'\n' | b'\r' | b'\t' | 0x08 | 0x0c => 2,
                0..=0x1f => 6,
                _ => 1,
            }).sum::<usize>() + 2;
            proptest::prop_assert_eq!(escaped.len(), expected_len);
        }
    }

    /// `push_json_bytes` as it was before it folded UTF-8 validation into the escape scan.
    fn validate_then_escape(bytes: &[u8]) -> String {
        match std::str::from_utf8(bytes) {
            Ok(text) => json_str(text),
            Err(_) => {
                let mut out = br#"{"base64":""#.to_vec();
                super::base64::encode_into(&mut out, bytes);
                out.extend_from_slice(br#""}"#);
                String::from_utf8(out).expect("ASCII")
            }
        }
    }

    proptest::proptest! {
        /// Bytes drawn mostly from ASCII, escapes and the bytes UTF-8 is made of, so that
        /// valid and invalid sequences sit before, inside and after the words with escapes.
        #[test]
        fn bytes_are_judged_as_a_separate_validation_would(
            parts in proptest::collection::vec(
                proptest::prop_oneof![
                    proptest::collection::vec(0x20u8..0x7f, 0..20),
                    proptest::collection::vec(proptest::sample::select(
                        vec![b'"', b'\\', b'\n', 0x01, b'a']), 1..4),
                    proptest::string::string_regex("[\\u{80}-\\u{10ffff}]{1,3}")
                        .expect("regex").prop_map(String::into_bytes),
                    proptest::collection::vec(0x80u8..=0xff, 1..3),
                ],
                0..12,
            )
        ) {
            let bytes = parts.concat();
            proptest::prop_assert_eq!(json_bytes(Some(&bytes)), validate_then_escape(&bytes));
        }
    }

    #[test]
    fn one_stray_byte_anywhere_makes_base64() {
        for len in [1, 7, 8, 9, 15, 16, 17, 40] {
            for at in 0..len {
                for escape_at in [None, Some(0), Some(len / 2), Some(len - 1)] {
                    let mut bytes = vec![b'a'; len];
                    if let Some(e) = escape_at {
                        bytes[e] = b'"';
                    }
                    bytes[at] = 0xff;
                    assert_eq!(
                        json_bytes(Some(&bytes)),
                        validate_then_escape(&bytes),
                        "len {len}, 0xff at {at}, escape at {escape_at:?}"
                    );
                    assert!(json_bytes(Some(&bytes)).starts_with("{\"base64\""));
                }
            }
        }
    }

    #[test]
    fn bytes_use_string_for_utf8_and_base64_object_otherwise() {
        let cases: [(Option<&[u8]>, &str); 7] = [
            (None, "null"),
            (Some(b""), r#""""#),
            (Some(b"key-1"), r#""key-1""#),
            (Some("ünïcode".as_bytes()), "\"ünïcode\""),
            (Some(b"\xff"), r#"{"base64":"/w=="}"#),
            (Some(b"ok\xc3"), r#"{"base64":"b2vD"}"#),
            (Some(b"\x00\x01"), r#""\u0000\u0001""#),
        ];
        for (input, expected) in cases {
            assert_eq!(json_bytes(input), expected, "input {input:?}");
        }
    }

    #[test]
    fn arbitrary_bytes_decode_back_exactly() {
        let samples: [&[u8]; 5] = [
            b"\x80\x81\x82",
            b"text then \xfe",
            &[0xed, 0xa0, 0x80],
            b"\"\\\n",
            &[0xf0, 0x9f, 0xa6, 0x80, 0xf0],
        ];
        for sample in samples {
            let parsed: serde_json::Value =
                serde_json::from_str(&json_bytes(Some(sample))).expect("valid JSON");
            let decoded = match parsed {
                serde_json::Value::String(s) => s.into_bytes(),
                serde_json::Value::Object(map) => base64::engine::general_purpose::STANDARD
                    .decode(map["base64"].as_str().expect("base64 string"))
                    .expect("valid base64"),
                other => panic!("unexpected JSON {other}"),
            };
            assert_eq!(decoded, sample);
        }
    }
}
