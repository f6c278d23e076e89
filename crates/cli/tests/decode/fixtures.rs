//! `krec decode` on golden segment images written by real producers
//! (`tests/data/*.bin`), checked against their `*.expected.jsonl`.

use std::io::Write;
use std::process::{Command, Stdio};

use crate::support::decode::{
    batch_spans, data_dir, fixtures, krec, parse_krec_json, read_expected, stderr_text,
    ExpectedRecord,
};

/// Guards against a test passing because no fixture was found.
const MIN_FIXTURES: usize = 10;

fn path_str(path: &std::path::Path) -> &str {
    path.to_str().expect("UTF-8 path")
}

#[test]
fn json_output_equals_the_expected_records_of_every_fixture() {
    let pairs = fixtures();
    assert!(
        pairs.len() >= MIN_FIXTURES,
        "found only {} fixtures",
        pairs.len()
    );
    for (bin, expected) in pairs {
        let output = krec(&["decode", "--format", "json", path_str(&bin)]);
        assert!(
            output.status.success(),
            "{}: {}",
            bin.display(),
            stderr_text(&output)
        );
        assert!(
            output.stderr.is_empty(),
            "{}: {}",
            bin.display(),
            stderr_text(&output)
        );
        let got = parse_krec_json(&output.stdout);
        let want = read_expected(&expected);
        assert!(!want.is_empty(), "{} has records", expected.display());
        assert_eq!(got, want, "{}", bin.display());
    }
}

#[test]
fn json_is_the_default_and_topic_partition_are_null_for_a_bare_file() {
    let (bin, _) = &fixtures()[0];
    let output = krec(&["decode", path_str(bin)]);
    assert!(output.status.success(), "{}", stderr_text(&output));
    let first: serde_json::Value =
        serde_json::from_slice(output.stdout.split(|&b| b == b'\n').next().expect("a line"))
            .expect("JSON");
    assert_eq!(first["topic"], serde_json::Value::Null);
    assert_eq!(first["partition"], serde_json::Value::Null);
    let mut keys: Vec<&str> = first
        .as_object()
        .expect("object")
        .keys()
        .map(String::as_str)
        .collect();
    keys.sort_unstable();
    let mut documented = vec![
        "topic",
        "partition",
        "offset",
        "timestamp",
        "timestamp_type",
        "key",
        "value",
        "headers",
    ];
    documented.sort_unstable();
    assert_eq!(keys, documented, "exactly the documented fields");
}

#[test]
fn several_files_are_decoded_in_the_order_given() {
    let pairs = fixtures();
    let mut args = vec!["decode", "-J"];
    args.extend(pairs.iter().rev().map(|(bin, _)| path_str(bin)));
    let output = krec(&args);
    assert!(output.status.success(), "{}", stderr_text(&output));
    let want: Vec<ExpectedRecord> = pairs
        .iter()
        .rev()
        .flat_map(|(_, expected)| read_expected(expected))
        .collect();
    assert_eq!(parse_krec_json(&output.stdout), want);
}

#[test]
fn templates_print_lengths_offsets_timestamps_and_headers() {
    for (bin, expected) in fixtures() {
        let output = krec(&["decode", "-f", "%o|%K|%S|%T|%h\\n", path_str(&bin)]);
        assert!(output.status.success(), "{}", stderr_text(&output));
        let mut want = Vec::new();
        for record in read_expected(&expected) {
            let length = |field: &Option<Vec<u8>>| field.as_ref().map_or(-1, |b| b.len() as i64);
            write!(
                want,
                "{}|{}|{}|{}|",
                record.offset,
                length(&record.key),
                length(&record.value),
                record.timestamp
            )
            .expect("vec write");
            for (i, (key, value)) in record.headers.iter().enumerate() {
                if i > 0 {
                    want.push(b',');
                }
                want.extend_from_slice(key);
                want.push(b'=');
                want.extend_from_slice(value.as_deref().unwrap_or(b""));
            }
            want.push(b'\n');
        }
        assert_eq!(output.stdout, want, "{}", bin.display());
    }
}

#[test]
fn header_by_key_prints_the_first_match_and_null_text_for_absent() {
    let bin = data_dir().join("kafka-python-v2-none.bin");
    let expected = read_expected(&data_dir().join("kafka-python-v2-none.expected.jsonl"));
    let output = krec(&["decode", "-Z", "-f", "%o=%{h:trace}\\n", path_str(&bin)]);
    assert!(output.status.success(), "{}", stderr_text(&output));
    let mut want = Vec::new();
    for record in &expected {
        let first = record
            .headers
            .iter()
            .find(|(key, _)| key == b"trace")
            .and_then(|(_, value)| value.clone());
        write!(want, "{}=", record.offset).expect("vec write");
        want.extend_from_slice(first.as_deref().unwrap_or(b"NULL"));
        want.push(b'\n');
    }
    assert!(
        expected
            .iter()
            .any(|r| r.headers.iter().filter(|(k, _)| k == b"trace").count() > 1),
        "the fixture has a record with a duplicated header, so first-match is exercised"
    );
    assert_eq!(output.stdout, want);
}

#[test]
fn raw_mode_writes_exact_key_and_value_bytes() {
    for (bin, expected) in fixtures() {
        let output = krec(&[
            "decode",
            "-f",
            "raw",
            "-K",
            "\\t",
            "-D",
            "\\x00\\n",
            path_str(&bin),
        ]);
        assert!(output.status.success(), "{}", stderr_text(&output));
        let mut want = Vec::new();
        for record in read_expected(&expected) {
            want.extend_from_slice(record.key.as_deref().unwrap_or(b""));
            want.push(b'\t');
            want.extend_from_slice(record.value.as_deref().unwrap_or(b""));
            want.extend_from_slice(b"\0\n");
        }
        assert_eq!(output.stdout, want, "{}", bin.display());
    }
}

#[test]
fn topic_and_partition_come_from_a_broker_directory_or_the_command_line() {
    let dir = tempfile::tempdir().expect("temp dir");
    let partition_dir = dir.path().join("orders.v2-7");
    std::fs::create_dir(&partition_dir).expect("mkdir");
    let segment = partition_dir.join("00000000000000000000.log");
    std::fs::copy(data_dir().join("kafka-python-v2-none.bin"), &segment).expect("copy");

    let output = krec(&["decode", "-f", "%t/%p/%o\\n", path_str(&segment)]);
    assert!(output.status.success(), "{}", stderr_text(&output));
    let text = String::from_utf8(output.stdout).expect("UTF-8");
    assert_eq!(text.lines().next(), Some("orders.v2/7/0"));

    let output = krec(&[
        "decode",
        "--topic",
        "t",
        "--partition",
        "2",
        path_str(&segment),
    ]);
    assert!(output.status.success(), "{}", stderr_text(&output));
    let first: serde_json::Value =
        serde_json::from_slice(output.stdout.split(|&b| b == b'\n').next().expect("line"))
            .expect("JSON");
    assert_eq!(first["topic"], "t");
    assert_eq!(first["partition"], 2);

    let (bin, _) = &fixtures()[0];
    let output = krec(&["decode", "-f", "[%t][%p]\\n", path_str(bin)]);
    let text = String::from_utf8(output.stdout).expect("UTF-8");
    assert_eq!(text.lines().next(), Some("[][-1]"), "unknown context");
}

#[test]
fn dash_reads_standard_input() {
    let bin = data_dir().join("kafka-python-v2-multi.bin");
    let expected = read_expected(&bin.with_extension("expected.jsonl"));
    let mut child = Command::new(env!("CARGO_BIN_EXE_krec"))
        .args(["decode", "-"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("krec runs");
    let data = std::fs::read(&bin).expect("fixture");
    assert!(batch_spans(&data).len() > 1, "several batches");
    child
        .stdin
        .take()
        .expect("stdin")
        .write_all(&data)
        .expect("write stdin");
    let output = child.wait_with_output().expect("krec exits");
    assert!(output.status.success(), "{}", stderr_text(&output));
    assert_eq!(parse_krec_json(&output.stdout), expected);
}

#[test]
fn a_reader_that_goes_away_ends_the_decode_quietly() {
    let one = std::fs::read(data_dir().join("kafka-python-v2-none.bin")).expect("fixture");
    let dir = tempfile::tempdir().expect("temp dir");
    let big = dir.path().join("big.log");
    // Far more output than a pipe buffers, so krec is still writing when the reader leaves.
    std::fs::write(&big, one.repeat(2000)).expect("write");
    let mut child = Command::new(env!("CARGO_BIN_EXE_krec"))
        .args(["decode", path_str(&big)])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("krec runs");
    let mut stdout = child.stdout.take().expect("stdout");
    let mut first = [0u8; 16];
    std::io::Read::read_exact(&mut stdout, &mut first).expect("some output");
    assert_eq!(&first[..10], b"{\"topic\":n");
    drop(stdout);
    let output = child.wait_with_output().expect("krec exits");
    assert!(output.status.success(), "{:?}", output.status);
    assert!(output.stderr.is_empty(), "{}", stderr_text(&output));
}

#[test]
fn an_offset_range_writes_only_its_records_of_every_fixture() {
    for (bin, expected) in fixtures() {
        let want = read_expected(&expected);
        // The middle third, so records are left out on both sides where there are enough.
        let from = want[want.len() / 3].offset;
        let to = want[2 * want.len() / 3].offset + 1;
        let range = format!("{from}:{to}");
        let output = krec(&["decode", "-o", &range, path_str(&bin)]);
        assert!(output.status.success(), "{}", stderr_text(&output));
        let kept: Vec<_> = want
            .into_iter()
            .filter(|r| (from..to).contains(&r.offset))
            .collect();
        assert_eq!(parse_krec_json(&output.stdout), kept, "{}", bin.display());
    }
    let (bin, _) = &fixtures()[0];
    for refused in ["e@1000", "s@-1h", "end", "5:2"] {
        let output = krec(&["decode", "-o", refused, path_str(bin)]);
        assert_eq!(output.status.code(), Some(2), "{refused}");
    }
}
