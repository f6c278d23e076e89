//! Helpers of the `krec decode` tests.

use std::ops::Range;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use base64::Engine as _;
use krec_batch::encode::BatchBuilder;
use krec_batch::{Compression, ControlKind};
use serde_json::Value;

/// One record as the tests compare it: exact bytes, no encoding.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ExpectedRecord {
    pub offset: i64,
    pub timestamp: i64,
    pub timestamp_type: String,
    pub key: Option<Vec<u8>>,
    pub value: Option<Vec<u8>>,
    pub headers: Vec<(Vec<u8>, Option<Vec<u8>>)>,
}

/// Runs the `krec` binary built for these tests.
pub fn krec(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_krec"))
        .args(args)
        .output()
        .expect("krec runs")
}

pub fn data_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/data")
}

/// Every `NAME.bin` fixture with its `NAME.expected.jsonl`.
pub fn fixtures() -> Vec<(PathBuf, PathBuf)> {
    let mut pairs: Vec<(PathBuf, PathBuf)> = std::fs::read_dir(data_dir())
        .expect("tests/data exists")
        .map(|entry| entry.expect("readable dir entry").path())
        .filter(|path| path.extension().is_some_and(|e| e == "bin"))
        .filter_map(|bin| {
            let expected = bin.with_extension("expected.jsonl");
            expected.exists().then_some((bin, expected))
        })
        .collect();
    pairs.sort();
    pairs
}

pub fn hex_decode(text: &str) -> Vec<u8> {
    assert!(text.len().is_multiple_of(2), "odd hex length: {text}");
    (0..text.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(&text[i..i + 2], 16).expect("hex digits"))
        .collect()
}

fn hex_field(value: &Value) -> Option<Vec<u8>> {
    match value {
        Value::Null => None,
        Value::String(text) => Some(hex_decode(text)),
        other => panic!("expected hex string or null, got {other}"),
    }
}

/// The fixtures' own words for timestamp types, in krec's vocabulary.
fn fixture_timestamp_type(word: &str) -> String {
    match word {
        "create" => "create_time",
        "log_append" => "log_append_time",
        "none" => "none",
        other => panic!("unknown fixture timestamp type {other}"),
    }
    .to_owned()
}

/// Parses an `*.expected.jsonl` fixture (hex keys and values).
pub fn read_expected(path: &Path) -> Vec<ExpectedRecord> {
    std::fs::read_to_string(path)
        .expect("expected file readable")
        .lines()
        .map(|line| {
            let v: Value = serde_json::from_str(line).expect("expected line is JSON");
            ExpectedRecord {
                offset: v["offset"].as_i64().expect("offset"),
                timestamp: v["timestamp"].as_i64().expect("timestamp"),
                timestamp_type: fixture_timestamp_type(
                    v["timestamp_type"].as_str().expect("ts type"),
                ),
                key: hex_field(&v["key"]),
                value: hex_field(&v["value"]),
                headers: v["headers"]
                    .as_array()
                    .expect("headers array")
                    .iter()
                    .map(|pair| {
                        (
                            hex_field(&pair[0]).expect("header key is never null"),
                            hex_field(&pair[1]),
                        )
                    })
                    .collect(),
            }
        })
        .collect()
}

/// Decodes a field written under krec's documented lossless JSON scheme.
pub fn krec_bytes(value: &Value) -> Option<Vec<u8>> {
    match value {
        Value::Null => None,
        Value::String(text) => Some(text.clone().into_bytes()),
        Value::Object(map) => {
            assert_eq!(map.len(), 1, "binary object has one field: {value}");
            let encoded = map["base64"].as_str().expect("base64 is a string");
            Some(
                base64::engine::general_purpose::STANDARD
                    .decode(encoded)
                    .expect("valid base64"),
            )
        }
        other => panic!("unexpected JSON for bytes: {other}"),
    }
}

/// Parses `krec --format json` output into records (checking every line parses).
pub fn parse_krec_json(stdout: &[u8]) -> Vec<ExpectedRecord> {
    let text = std::str::from_utf8(stdout).expect("JSON output is UTF-8");
    text.lines()
        .map(|line| {
            let v: Value = serde_json::from_str(line).expect("each line is JSON");
            ExpectedRecord {
                offset: v["offset"].as_i64().expect("offset"),
                timestamp: v["timestamp"].as_i64().expect("timestamp"),
                timestamp_type: v["timestamp_type"].as_str().expect("ts type").to_owned(),
                key: krec_bytes(&v["key"]),
                value: krec_bytes(&v["value"]),
                headers: v["headers"]
                    .as_array()
                    .expect("headers array")
                    .iter()
                    .map(|pair| {
                        let pair = pair.as_array().expect("header pair");
                        assert_eq!(pair.len(), 2, "header is [key, value]");
                        (
                            krec_bytes(&pair[0]).expect("header key not null"),
                            krec_bytes(&pair[1]),
                        )
                    })
                    .collect(),
            }
        })
        .collect()
}

/// Byte ranges of the top-level batches (or legacy messages) of a segment image,
/// read from each entry's offset and length fields.
pub fn batch_spans(data: &[u8]) -> Vec<Range<usize>> {
    let mut spans = Vec::new();
    let mut at = 0;
    while at < data.len() {
        let entry = krec_batch::EntryHeader::peek(&data[at..]).expect("a whole entry header");
        let end = at + entry.size().expect("fixture lengths are positive");
        spans.push(at..end);
        at = end;
    }
    spans
}

/// Recomputes the CRC32C of a v2 batch after its bytes were patched, so that only the patched
/// field itself is wrong.
pub fn resign_v2(batch: &mut [u8]) {
    use krec_batch::layout::v2::{ATTRIBUTES_AT, CRC_AT};
    let crc = crc32c::crc32c(&batch[ATTRIBUTES_AT..]);
    batch[CRC_AT..CRC_AT + 4].copy_from_slice(&crc.to_be_bytes());
}

pub fn stderr_text(output: &Output) -> String {
    String::from_utf8_lossy(&output.stderr).into_owned()
}

/// A segment of `batches` batches of `records_per_batch` records each, the codecs in turn
/// (none, lz4, zstd, gzip, snappy), with a committed transaction marker of `producer` in place
/// of every `marker_every`-th batch. Keys, values (some null) and two headers (one with a null
/// value) vary with the record number.
pub fn mixed_segment(
    batches: usize,
    records_per_batch: usize,
    marker_every: usize,
    producer: i64,
) -> Vec<u8> {
    let codecs = [
        Compression::None,
        Compression::Lz4,
        Compression::Zstd,
        Compression::Gzip,
        Compression::Snappy,
    ];
    let mut data = Vec::new();
    let mut offset = 0i64;
    for batch in 0..batches {
        if batch % marker_every == marker_every - 1 {
            data.extend(
                BatchBuilder::new(offset)
                    .producer(producer, 0, -1)
                    .control_marker(ControlKind::Commit, 3)
                    .build(),
            );
            offset += 1;
            continue;
        }
        let mut builder = BatchBuilder::new(offset)
            .compression(codecs[batch % codecs.len()])
            .base_timestamp(1_764_460_800_000 + batch as i64);
        for i in 0..records_per_batch {
            let n = batch * records_per_batch + i;
            let key = format!("key-{n}");
            let value = format!("value {n} {}", "lorem ipsum dolor ".repeat(1 + n % 13));
            builder = builder.record(
                Some(key.as_bytes()),
                (!n.is_multiple_of(11)).then_some(value.as_bytes()),
                &[(b"trace", Some(format!("t{n}").as_bytes())), (b"src", None)],
            );
        }
        data.extend(builder.build());
        offset += records_per_batch as i64;
    }
    data
}
