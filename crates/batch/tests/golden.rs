//! Golden vectors: every `tests/data/*.bin` (written by independent producers: kafka-python,
//! librdkafka, the Java client) decodes to exactly the records in its `.expected.jsonl`,
//! which the producing side wrote.

use std::path::{Path, PathBuf};

use krec_batch::{Batch, BatchWalk, ControlKind, DecodeConfig, Record, TimestampType, WalkEnd};
use serde_json::Value;

fn data_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/data")
}

fn hex(s: &str) -> Vec<u8> {
    assert!(s.len() % 2 == 0, "odd hex length: {s}");
    (0..s.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(&s[i..i + 2], 16).expect("hex digit"))
        .collect()
}

fn opt_hex(v: &Value) -> Option<Vec<u8>> {
    match v {
        Value::Null => None,
        Value::String(s) => Some(hex(s)),
        other => panic!("expected hex string or null, got {other}"),
    }
}

/// One record, as the producer described it or as krec decoded it.
#[derive(Debug, PartialEq)]
struct Expected {
    offset: i64,
    /// `None`: the producer did not report it, so it is not compared.
    timestamp: Option<i64>,
    timestamp_type: &'static str,
    key: Option<Vec<u8>>,
    value: Option<Vec<u8>>,
    headers: Vec<(Vec<u8>, Option<Vec<u8>>)>,
}

fn parse_expected(line: &str) -> Expected {
    let v: Value = serde_json::from_str(line).expect("valid JSON line");
    let timestamp_type = match v["timestamp_type"].as_str().expect("timestamp_type") {
        "create" => "create",
        "log_append" => "log_append",
        "none" => "none",
        other => panic!("unknown timestamp_type {other}"),
    };
    Expected {
        offset: v["offset"].as_i64().expect("offset"),
        timestamp: match &v["timestamp"] {
            Value::Null => None,
            t => Some(t.as_i64().expect("timestamp")),
        },
        timestamp_type,
        key: opt_hex(&v["key"]),
        value: opt_hex(&v["value"]),
        headers: v["headers"]
            .as_array()
            .expect("headers array")
            .iter()
            .map(|h| {
                let pair = h.as_array().expect("header pair");
                (
                    hex(pair[0].as_str().expect("header key is a string")),
                    opt_hex(&pair[1]),
                )
            })
            .collect(),
    }
}

type Decoded = (Vec<Expected>, Vec<(i64, &'static str)>);

/// Data records, and control records as (offset, "commit"/"abort"/"other"), through the
/// by-value iterators.
fn decode(bytes: &[u8]) -> Decoded {
    let config = DecodeConfig::default();
    let mut walk = BatchWalk::new(bytes, &config);
    let (mut out, mut controls) = (Vec::new(), Vec::new());
    for batch in walk.by_ref() {
        let batch = batch.expect("batch decodes");
        push_controls(&batch, &mut controls);
        for record in batch.records() {
            out.push(seen(&record.expect("record decodes")));
        }
    }
    assert_eq!(
        walk.end(),
        Some(WalkEnd::Complete),
        "fixture files hold whole batches"
    );
    (out, controls)
}

/// [`decode`] in place.
fn decode_in_place(bytes: &[u8]) -> Decoded {
    let config = DecodeConfig::default();
    let mut walk = BatchWalk::new(bytes, &config);
    let (mut out, mut controls) = (Vec::new(), Vec::new());
    while let Some(batch) = walk.next_ref() {
        let batch = batch.expect("batch decodes");
        push_controls(batch, &mut controls);
        let mut records = batch.records();
        while let Some(record) = records.next_ref() {
            out.push(seen(record.expect("record decodes")));
        }
    }
    assert_eq!(walk.end(), Some(WalkEnd::Complete));
    (out, controls)
}

fn push_controls(batch: &Batch<'_>, controls: &mut Vec<(i64, &'static str)>) {
    for control in batch.control_records() {
        let control = control.expect("control record decodes");
        let kind = match control.kind {
            ControlKind::Commit => "commit",
            ControlKind::Abort => "abort",
            _ => "other",
        };
        controls.push((control.offset, kind));
    }
}

/// A decoded record in the form of the expected ones.
fn seen(record: &Record<'_>) -> Expected {
    Expected {
        offset: record.offset(),
        timestamp: Some(record.timestamp()),
        timestamp_type: match record.timestamp_type() {
            TimestampType::CreateTime => "create",
            TimestampType::LogAppendTime => "log_append",
            TimestampType::NoTimestamp => "none",
        },
        key: record.key().map(<[u8]>::to_vec),
        value: record.value().map(<[u8]>::to_vec),
        headers: record
            .headers()
            .iter()
            .map(|h| (h.key.to_vec(), h.value.map(<[u8]>::to_vec)))
            .collect(),
    }
}

/// Compares, skipping timestamps the producer did not report.
fn record_matches(decoded: &Expected, expected: &Expected) -> bool {
    let timestamp_ok = expected.timestamp.is_none() || decoded.timestamp == expected.timestamp;
    timestamp_ok
        && decoded.offset == expected.offset
        && decoded.timestamp_type == expected.timestamp_type
        && decoded.key == expected.key
        && decoded.value == expected.value
        && decoded.headers == expected.headers
}

fn expected_controls(path: &Path) -> Vec<(i64, &'static str)> {
    let Ok(text) = std::fs::read_to_string(path) else {
        return Vec::new();
    };
    text.lines()
        .filter(|l| !l.trim().is_empty())
        .map(|l| {
            let v: Value = serde_json::from_str(l).expect("valid JSON line");
            let kind = match v["type"].as_str().expect("type") {
                "commit" => "commit",
                "abort" => "abort",
                other => panic!("unknown control type {other}"),
            };
            (v["offset"].as_i64().expect("offset"), kind)
        })
        .collect()
}

fn fixtures() -> Vec<PathBuf> {
    let mut fixtures: Vec<PathBuf> = std::fs::read_dir(data_dir())
        .expect("tests/data exists")
        .map(|e| e.expect("dir entry").path())
        .filter(|p| p.extension().is_some_and(|e| e == "bin"))
        .collect();
    fixtures.sort();
    fixtures
}

/// Every producer's batches, walked in place on one thread (each file's compressed batches
/// land in a pooled buffer the file before left), decode to what the by-value iterators give,
/// which the test below holds to the producers' records.
#[test]
fn every_fixture_decodes_the_same_in_place() {
    let mut compressed = 0;
    for bin in fixtures() {
        let bytes = std::fs::read(&bin).expect("read fixture");
        let by_iterator = decode(&bytes);
        assert_eq!(decode_in_place(&bytes), by_iterator, "{}", bin.display());
        compressed += usize::from(!bin.to_string_lossy().contains("-none"));
    }
    assert!(compressed > 10, "{compressed} compressed fixtures");
}

#[test]
fn every_fixture_decodes_to_the_producers_records() {
    let fixtures = fixtures();
    assert!(
        !fixtures.is_empty(),
        "no golden fixtures in {:?}",
        data_dir()
    );
    let mut failures = Vec::new();
    let (mut checked, mut records) = (0, 0);
    for bin in &fixtures {
        let expected_path = bin.with_extension("expected.jsonl");
        let expected_text = std::fs::read_to_string(&expected_path)
            .unwrap_or_else(|e| panic!("{expected_path:?}: {e}"));
        let expected: Vec<Expected> = expected_text
            .lines()
            .filter(|l| !l.trim().is_empty())
            .map(parse_expected)
            .collect();
        let bytes = std::fs::read(bin).expect("read fixture");
        let controls = expected_controls(&bin.with_extension("control.jsonl"));
        let decoded = std::panic::catch_unwind(|| decode(&bytes));
        match decoded {
            Ok((_, decoded_controls)) if decoded_controls != controls => failures.push(format!(
                "{}: control records {decoded_controls:?}, expected {controls:?}",
                bin.display()
            )),
            Ok((decoded, _))
                if decoded.len() == expected.len()
                    && decoded
                        .iter()
                        .zip(&expected)
                        .all(|(d, e)| record_matches(d, e)) =>
            {
                checked += 1;
                records += decoded.len();
            }
            Ok((decoded, _)) => {
                let first_diff = decoded
                    .iter()
                    .zip(&expected)
                    .position(|(a, b)| !record_matches(a, b))
                    .unwrap_or(decoded.len().min(expected.len()));
                failures.push(format!(
                    "{}: {} records decoded, {} expected; first difference at record {first_diff}: decoded {:?} expected {:?}",
                    bin.display(),
                    decoded.len(),
                    expected.len(),
                    decoded.get(first_diff),
                    expected.get(first_diff)
                ));
            }
            Err(_) => failures.push(format!(
                "{}: decoding failed (see panic above)",
                bin.display()
            )),
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
    assert_eq!(checked, fixtures.len());
    eprintln!("{checked} golden fixtures, {records} records matched");
}
