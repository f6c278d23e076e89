//! `krec decode -J` spells every string as serde_json spells it, byte for byte. The other
//! decode tests parse the output back, which accepts any valid spelling (`\u0009` for a tab):
//! here an independent writer is the judge of the exact bytes.

use krec_batch::encode::BatchBuilder;

use crate::support::decode::{krec, stderr_text};

/// Each ASCII byte between two letters, and text beyond ASCII.
fn values() -> Vec<Vec<u8>> {
    let mut values: Vec<Vec<u8>> = (0u8..0x80).map(|byte| vec![b'a', byte, b'z']).collect();
    values.push("é € 😀 \u{2028}".as_bytes().to_vec());
    values
}

/// The JSON string tokens of `line` as written, quotes and escapes included.
fn string_tokens(line: &str) -> Vec<&str> {
    let bytes = line.as_bytes();
    let mut tokens = Vec::new();
    let mut at = 0;
    while at < bytes.len() {
        if bytes[at] != b'"' {
            at += 1;
            continue;
        }
        let start = at;
        at += 1;
        while at < bytes.len() && bytes[at] != b'"' {
            at += if bytes[at] == b'\\' { 2 } else { 1 };
        }
        at += 1;
        tokens.push(&line[start..at.min(bytes.len())]);
    }
    tokens
}

#[test]
fn json_strings_are_spelled_as_serde_json_spells_them() {
    let values = values();
    let mut batch = BatchBuilder::new(0).base_timestamp(1_000);
    for value in &values {
        batch = batch.record(Some(value), Some(value), &[(value, Some(value))]);
    }
    let dir = tempfile::tempdir().expect("temp dir");
    let path = dir.path().join("00000000000000000000.log");
    std::fs::write(&path, batch.build()).expect("write segment");
    let output = krec(&["decode", "-J", path.to_str().expect("UTF-8 path")]);
    assert!(output.status.success(), "{}", stderr_text(&output));
    let stdout = String::from_utf8(output.stdout).expect("UTF-8 output");
    let lines: Vec<&str> = stdout.lines().collect();
    assert_eq!(lines.len(), values.len(), "{stdout}");
    for (line, value) in lines.iter().zip(&values) {
        let text = std::str::from_utf8(value).expect("UTF-8 value");
        let spelled = serde_json::to_string(text).expect("serde_json writes a string");
        let found = string_tokens(line).into_iter().filter(|t| *t == spelled);
        assert_eq!(
            found.count(),
            4,
            "key, value, header key and value as {spelled}: {line}"
        );
    }
}
