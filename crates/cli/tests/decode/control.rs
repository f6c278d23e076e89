//! `krec decode` on encoder-built segments: transaction markers hidden by
//! default and shown with `--print-control`, binary header keys, LogAppendTime.

use std::path::{Path, PathBuf};

use crate::support::decode::{krec, parse_krec_json, stderr_text};
use krec_batch::encode::{BatchBuilder, RecordSpec};
use krec_batch::{Compression, ControlKind};
use serde_json::{json, Value};

const PRODUCER: i64 = 4000;

/// Offsets 0-1 data, 2 commit, 3-4 data (zstd), 5 abort.
fn transactional_segment() -> Vec<u8> {
    let mut data = Vec::new();
    data.extend(
        BatchBuilder::new(0)
            .transactional(true)
            .producer(PRODUCER, 0, 0)
            .base_timestamp(1_000)
            .record(Some(b"k0"), Some(b"v0"), &[(b"h", Some(b"x"))])
            .record(None, Some(b"v1"), &[])
            .build(),
    );
    data.extend(
        BatchBuilder::new(2)
            .producer(PRODUCER, 0, -1)
            .base_timestamp(1_001)
            .control_marker(ControlKind::Commit, 7)
            .build(),
    );
    data.extend(
        BatchBuilder::new(3)
            .transactional(true)
            .compression(Compression::Zstd)
            .producer(PRODUCER, 0, 2)
            .base_timestamp(1_002)
            .record(Some(b"k3"), None, &[])
            .record(Some(b"k4"), Some(b"v4"), &[])
            .build(),
    );
    data.extend(
        BatchBuilder::new(5)
            .producer(PRODUCER, 0, -1)
            .base_timestamp(1_003)
            .control_marker(ControlKind::Abort, 8)
            .build(),
    );
    data
}

fn segment_file(dir: &tempfile::TempDir, data: &[u8]) -> PathBuf {
    let partition_dir = dir.path().join("payments-4");
    std::fs::create_dir_all(&partition_dir).expect("mkdir");
    let path = partition_dir.join("00000000000000000000.log");
    std::fs::write(&path, data).expect("write segment");
    path
}

fn path_str(path: &Path) -> &str {
    path.to_str().expect("UTF-8 path")
}

fn json_lines(stdout: &[u8]) -> Vec<Value> {
    std::str::from_utf8(stdout)
        .expect("UTF-8")
        .lines()
        .map(|line| serde_json::from_str(line).expect("JSON line"))
        .collect()
}

#[test]
fn control_records_are_hidden_by_default() {
    let dir = tempfile::tempdir().expect("temp dir");
    let file = segment_file(&dir, &transactional_segment());
    let output = krec(&["decode", path_str(&file)]);
    assert!(output.status.success(), "{}", stderr_text(&output));
    let offsets: Vec<i64> = parse_krec_json(&output.stdout)
        .iter()
        .map(|r| r.offset)
        .collect();
    assert_eq!(offsets, [0, 1, 3, 4]);
}

#[test]
fn print_control_shows_markers_in_offset_order() {
    let dir = tempfile::tempdir().expect("temp dir");
    let file = segment_file(&dir, &transactional_segment());
    let output = krec(&["decode", "--print-control", path_str(&file)]);
    assert!(output.status.success(), "{}", stderr_text(&output));
    let lines = json_lines(&output.stdout);
    let offsets: Vec<i64> = lines
        .iter()
        .map(|l| l["offset"].as_i64().expect("offset"))
        .collect();
    assert_eq!(offsets, [0, 1, 2, 3, 4, 5]);
    assert_eq!(
        lines[2],
        json!({"topic": "payments", "partition": 4, "offset": 2, "timestamp": 1_001,
               "control": "commit", "control_type": 1, "version": 0, "coordinator_epoch": 7})
    );
    assert_eq!(
        lines[5],
        json!({"topic": "payments", "partition": 4, "offset": 5, "timestamp": 1_003,
               "control": "abort", "control_type": 0, "version": 0, "coordinator_epoch": 8})
    );
    assert_eq!(lines[0]["headers"], json!([["h", "x"]]));
    assert_eq!(lines[3]["value"], Value::Null);
}

#[test]
fn templates_show_markers_with_percent_c() {
    let dir = tempfile::tempdir().expect("temp dir");
    let file = segment_file(&dir, &transactional_segment());
    let template = "%t:%p:%o:%c:%k\\n";
    let hidden = krec(&["decode", "-f", template, path_str(&file)]);
    assert!(hidden.status.success(), "{}", stderr_text(&hidden));
    assert_eq!(
        String::from_utf8(hidden.stdout).expect("UTF-8"),
        "payments:4:0::k0\npayments:4:1::\npayments:4:3::k3\npayments:4:4::k4\n"
    );
    let shown = krec(&["decode", "--print-control", "-f", template, path_str(&file)]);
    assert!(shown.status.success(), "{}", stderr_text(&shown));
    assert_eq!(
        String::from_utf8(shown.stdout).expect("UTF-8"),
        "payments:4:0::k0\npayments:4:1::\npayments:4:2:commit:\n\
         payments:4:3::k3\npayments:4:4::k4\npayments:4:5:abort:\n"
    );
}

#[test]
fn raw_output_refuses_print_control() {
    let dir = tempfile::tempdir().expect("temp dir");
    let file = segment_file(&dir, &transactional_segment());
    let output = krec(&["decode", "-f", "raw", "--print-control", path_str(&file)]);
    assert_eq!(output.status.code(), Some(2));
    assert!(stderr_text(&output).contains("--print-control"));
    assert!(output.stdout.is_empty());
}

#[test]
fn a_malformed_control_record_is_reported_even_when_markers_are_hidden() {
    let mut data = BatchBuilder::new(0)
        .record(Some(b"k0"), Some(b"v0"), &[])
        .build();
    let bad_at = data.len();
    data.extend(
        BatchBuilder::new(1)
            .control_marker(ControlKind::Commit, 1)
            .record_spec(RecordSpec {
                offset_delta: 1,
                timestamp_delta: 0,
                key: Some(vec![0]),
                value: Some(vec![0, 0, 0, 0, 0, 1]),
                headers: Vec::new(),
            })
            .build(),
    );
    let dir = tempfile::tempdir().expect("temp dir");
    let file = segment_file(&dir, &data);
    let output = krec(&["decode", path_str(&file)]);
    assert_eq!(output.status.code(), Some(1), "{}", stderr_text(&output));
    let offsets: Vec<i64> = parse_krec_json(&output.stdout)
        .iter()
        .map(|r| r.offset)
        .collect();
    assert_eq!(
        offsets,
        [0],
        "the data record before the bad marker is printed"
    );
    let stderr = stderr_text(&output);
    let prefix = format!("krec decode: {}: byte {bad_at}: offset 1: ", file.display());
    assert!(stderr.starts_with(&prefix), "{stderr:?} vs {prefix:?}");
}

#[test]
fn binary_header_keys_and_log_append_time() {
    let data = BatchBuilder::new(10)
        .log_append_time(true)
        .base_timestamp(5)
        .max_timestamp(77)
        .record(
            Some(b"\xff\xfe"),
            Some("café".as_bytes()),
            &[
                (b"\xc3", Some(b"bin")),
                (b"dup", Some(b"1")),
                (b"dup", None),
                (b"\xc3", Some(b"second")),
            ],
        )
        .build();
    let dir = tempfile::tempdir().expect("temp dir");
    let file = segment_file(&dir, &data);

    let output = krec(&["decode", path_str(&file)]);
    assert!(output.status.success(), "{}", stderr_text(&output));
    let lines = json_lines(&output.stdout);
    assert_eq!(
        lines,
        [json!({
            "topic": "payments", "partition": 4, "offset": 10, "timestamp": 77,
            "timestamp_type": "log_append_time", "key": {"base64": "//4="}, "value": "café",
            "headers": [[{"base64": "ww=="}, "bin"], ["dup", "1"], ["dup", null],
                        [{"base64": "ww=="}, "second"]],
        })]
    );

    let output = krec(&[
        "decode",
        "-Z",
        "-f",
        "%{h:\\xc3}|%{h:dup}|%h\\n",
        path_str(&file),
    ]);
    assert!(output.status.success(), "{}", stderr_text(&output));
    assert_eq!(
        output.stdout,
        b"bin|1|\xc3=bin,dup=1,dup=NULL,\xc3=second\n"
    );
}

#[test]
fn real_transaction_markers_from_librdkafka() {
    let dir = crate::support::decode::data_dir();
    let bin = dir.join("librdkafka-transactional.bin");
    let data_expected =
        crate::support::decode::read_expected(&dir.join("librdkafka-transactional.expected.jsonl"));
    let controls: Vec<(i64, String)> =
        std::fs::read_to_string(dir.join("librdkafka-transactional.control.jsonl"))
            .expect("control fixture")
            .lines()
            .map(|line| {
                let v: Value = serde_json::from_str(line).expect("JSON");
                (
                    v["offset"].as_i64().expect("offset"),
                    v["type"].as_str().expect("type").to_owned(),
                )
            })
            .collect();
    assert!(!controls.is_empty());

    let hidden = krec(&["decode", path_str(&bin)]);
    assert!(hidden.status.success(), "{}", stderr_text(&hidden));
    assert_eq!(parse_krec_json(&hidden.stdout), data_expected);

    let shown = krec(&["decode", "--print-control", path_str(&bin)]);
    assert!(shown.status.success(), "{}", stderr_text(&shown));
    let lines = json_lines(&shown.stdout);
    let got_controls: Vec<(i64, String)> = lines
        .iter()
        .filter(|l| l.get("control").is_some())
        .map(|l| {
            assert!(
                l["coordinator_epoch"].is_i64(),
                "markers carry an epoch: {l}"
            );
            (
                l["offset"].as_i64().expect("offset"),
                l["control"].as_str().expect("control").to_owned(),
            )
        })
        .collect();
    assert_eq!(got_controls, controls);
    let offsets: Vec<i64> = lines
        .iter()
        .map(|l| l["offset"].as_i64().expect("offset"))
        .collect();
    let mut sorted = offsets.clone();
    sorted.sort_unstable();
    assert_eq!(offsets, sorted, "markers interleave in offset order");
    assert_eq!(lines.len(), data_expected.len() + controls.len());
}
