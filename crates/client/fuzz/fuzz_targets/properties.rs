//! Arbitrary bytes as a properties file. Never panics; every key is non-empty; every entry's
//! line is within the file and no earlier than the entry before it; and the entries, written
//! back with `Properties#store`'s escapes, parse to the same keys and values.
#![no_main]

use krec_client::fuzzing::properties;
use libfuzzer_sys::fuzz_target;

/// Natural lines: `\n`, `\r` and `\r\n` end one; a last line without an ending counts.
fn line_count(data: &[u8]) -> usize {
    let mut lines = 0;
    let mut i = 0;
    while i < data.len() {
        match data[i] {
            b'\r' if data.get(i + 1) == Some(&b'\n') => {
                lines += 1;
                i += 1;
            }
            b'\r' | b'\n' => lines += 1,
            _ => {}
        }
        i += 1;
    }
    let ends_open = !matches!(data.last(), None | Some(b'\n' | b'\r'));
    lines + usize::from(ends_open)
}

/// `text` escaped as `Properties#store(OutputStream)` writes a key (every space escaped) or a
/// value (only a leading one); outside printable ASCII, everything as `\uXXXX`.
fn escape(text: &str, key: bool, out: &mut String) {
    for (i, c) in text.chars().enumerate() {
        match c {
            ' ' if key || i == 0 => out.push_str("\\ "),
            '\t' => out.push_str("\\t"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\u{c}' => out.push_str("\\f"),
            '=' | ':' | '#' | '!' | '\\' => {
                out.push('\\');
                out.push(c);
            }
            ' '..='~' => out.push(c),
            c => {
                for unit in c.encode_utf16(&mut [0; 2]) {
                    out.push_str(&format!("\\u{unit:04X}"));
                }
            }
        }
    }
}

fuzz_target!(|data: &[u8]| {
    let Ok(entries) = properties(data) else {
        return;
    };
    let lines = line_count(data);
    let mut previous = 1;
    let mut stored = String::new();
    for (key, value, line) in &entries {
        assert!(!key.is_empty());
        assert!((previous..=lines).contains(line), "line {line} of {lines}");
        previous = *line;
        escape(key, true, &mut stored);
        stored.push('=');
        escape(value, false, &mut stored);
        stored.push('\n');
    }
    let again = properties(stored.as_bytes()).unwrap();
    assert_eq!(again.len(), entries.len(), "{stored:?}");
    for ((k1, v1, _), (k2, v2, _)) in entries.iter().zip(&again) {
        assert_eq!((k1, v1), (k2, v2), "{stored:?}");
    }
});
